//! Skipping members, and row groups of a dataset index: whether a predicate
//! can accept any dataset of a member (or row group), decided from its
//! summaries alone (no request).
//!
//! The answer is conservative: `false` only when the summaries prove that no
//! dataset of the member matches; anything the summaries do not cover (a
//! string attribute, a negation, a statistic without bounds) keeps the member.

use std::cmp::Ordering;

use atlas_format::{AttributeSummary, MemberEntry, VariableSummary};

use crate::query::{CmpOp, Field, Predicate, StatField, Value};
use crate::query::{Scalar, order};

/// The bounds of a field over a member: every dataset's value (or, for an
/// array, every element) lies in `lo ..= hi`.
enum Bounds {
    /// No dataset of the member has the field: every comparison on it is false.
    Absent,
    /// Values lie within these.
    Within(Scalar, Scalar),
    /// The summaries say nothing useful.
    Unknown,
}

/// What a pruning decision reads: the bounds of every variable some dataset
/// of a group holds (none listed: no dataset has it) and of the numeric
/// attributes. A set manifest keeps them per member; a dataset index per
/// row group.
#[derive(Clone, Copy)]
pub(crate) struct Summaries<'a> {
    pub variables: &'a [VariableSummary],
    pub attributes: &'a [AttributeSummary],
}

impl<'a> From<&'a MemberEntry> for Summaries<'a> {
    fn from(entry: &'a MemberEntry) -> Self {
        Summaries {
            variables: &entry.variables,
            attributes: &entry.attributes,
        }
    }
}

/// Whether some dataset of the group `entry` summarises may satisfy `p`.
pub(crate) fn may_match(entry: Summaries<'_>, p: &Predicate) -> bool {
    match p {
        Predicate::Compare { field, op, value } => match bounds(entry, field) {
            // A dataset without the field fails every comparison but `!=`.
            Bounds::Absent => *op == CmpOp::Ne,
            Bounds::Unknown => true,
            Bounds::Within(lo, hi) => compare_may_hold(&lo, &hi, *op, value),
        },
        Predicate::Between { field, lo, hi } | Predicate::Overlaps { field, lo, hi } => {
            match bounds(entry, field) {
                Bounds::Absent => false,
                Bounds::Unknown => true,
                // Both need the field's values to meet `lo ..= hi`.
                Bounds::Within(min, max) => match (order(&max, lo), order(&min, hi)) {
                    (Some(max_vs_lo), Some(min_vs_hi)) => {
                        max_vs_lo != Ordering::Less && min_vs_hi != Ordering::Greater
                    }
                    // Incomparable: the member's own query reports the mismatch.
                    _ => true,
                },
            }
        }
        Predicate::Exists(field) => !matches!(bounds(entry, field), Bounds::Absent),
        Predicate::And(parts) => parts.iter().all(|part| may_match(entry, part)),
        Predicate::Or(parts) => parts.iter().any(|part| may_match(entry, part)),
        // A negation holds exactly where its part fails, which bounds cannot rule out.
        Predicate::Not(_) => true,
    }
}

/// Whether `x op value` can hold for some `x` with `lo <= x <= hi` (for an
/// array: some dataset whose elements all lie there).
fn compare_may_hold(lo: &Scalar, hi: &Scalar, op: CmpOp, value: &Value) -> bool {
    // Incomparable kinds: the member's own query reports the mismatch.
    let (Some(lo), Some(hi)) = (order(lo, value), order(hi, value)) else {
        return true;
    };
    match op {
        CmpOp::Eq => hi != Ordering::Less && lo != Ordering::Greater,
        CmpOp::Lt => lo == Ordering::Less,
        CmpOp::Le => lo != Ordering::Greater,
        CmpOp::Gt => hi == Ordering::Greater,
        CmpOp::Ge => hi != Ordering::Less,
        // `!=` (and any operator added later) holds wherever values differ.
        _ => true,
    }
}

fn bounds(entry: Summaries<'_>, field: &Field) -> Bounds {
    let variable = |name: &str| entry.variables.iter().find(|v| v.name == name);
    let attribute = |key: &str| entry.attributes.iter().find(|a| a.key == key);
    let within = |min: &Option<Value>, max: &Option<Value>| match (
        min.as_ref().and_then(Scalar::of),
        max.as_ref().and_then(Scalar::of),
    ) {
        (Some(lo), Some(hi)) => Bounds::Within(lo, hi),
        _ => Bounds::Unknown,
    };
    match field {
        // Every variable with a live dataset has a summary: none means no dataset has it.
        Field::Array(a) | Field::Stat(a, StatField::Min | StatField::Max) => match variable(a) {
            None => Bounds::Absent,
            Some(v) => within(&v.min, &v.max),
        },
        Field::Stat(a, _) => match variable(a) {
            None => Bounds::Absent,
            Some(_) => Bounds::Unknown,
        },
        // Only numeric and time attributes are summarized: no summary proves nothing.
        Field::Attribute(k) => match attribute(k) {
            Some(s) => within(&Some(s.min.clone()), &Some(s.max.clone())),
            None => Bounds::Unknown,
        },
        Field::Name(n) => match (variable(n), attribute(n)) {
            (Some(v), None) => within(&v.min, &v.max),
            (None, Some(s)) => within(&Some(s.min.clone()), &Some(s.max.clone())),
            _ => Bounds::Unknown,
        },
    }
}
