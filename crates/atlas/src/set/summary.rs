//! What a set manifest records of a member: counts, size, per-variable and
//! per-attribute bounds over the live datasets, and checksums.
//!
//! Bounds exist to let a reader *skip* a member, so a bound that is too
//! narrow would silently drop data. Whenever one cannot be stated with
//! certainty (live datasets declare a variable with different types, some
//! live dataset recorded no statistics, a statistic has no summary kind) it
//! is left unknown (`None`), which a reader never prunes on. Float bounds are
//! ordered by `total_cmp`, as the segments' statistics are; a zero bound is
//! widened to the zero of the other sign (`-0.0` for a minimum, `+0.0` for a
//! maximum), so a reader comparing with IEEE semantics never prunes a zero.
//!
//! Cost: one footer read per segment (the [`Member`] keeps each opened) and a
//! pass over the `_datasets` attribute columns; no array data, except that
//! the checksums read every byte of the container once.

use std::cmp::Ordering;

use atlas_format::{AttributeSummary, DType, MemberEntry, NameRange, Value, VariableSummary};
use indexmap::IndexMap;

use super::integrity::member_checksums;
use crate::error::{AtlasError, Result};
use crate::read::fold_stats;
use crate::read::{Live, Member};
use crate::{ArrayStats, Attr};

/// What some datasets declare of one array name.
#[derive(Default)]
pub(crate) struct Declared {
    /// Distinct declared types, in order of first appearance.
    pub dtypes: Vec<DType>,
    /// Datasets declaring the name.
    pub datasets: usize,
}

impl Declared {
    /// Counts one more dataset declaring the name as `dtype`.
    pub(crate) fn add(&mut self, dtype: &DType, datasets: usize) {
        self.datasets = self.datasets.saturating_add(datasets);
        if !self.dtypes.contains(dtype) {
            self.dtypes.push(dtype.clone());
        }
    }
}

/// The manifest entry describing `atlas` as member `id` at `path` (relative
/// to the set's prefix): counts, bytes, creation time, summaries over the
/// live datasets and the checksums of its bytes.
pub(crate) async fn member_entry(atlas: &Member, id: &str, path: &str) -> Result<MemberEntry> {
    let live = atlas.live();
    let (arrays, attribute_keys) = declared_by_live(atlas, &live);
    let mut variables = Vec::with_capacity(arrays.len());
    for (name, declared) in &arrays {
        variables.push(variable_summary(atlas, &live, name, declared).await?);
    }
    let mut attributes = Vec::new();
    for key in &attribute_keys {
        let rows = atlas.attributes_by_dataset(&live, None, key).await?;
        if let Some((min, max)) = attribute_bounds(rows.iter().map(|(_, attr)| attr)) {
            attributes.push(AttributeSummary {
                key: key.clone(),
                min,
                max,
            });
        }
    }
    Ok(MemberEntry {
        id: id.to_owned(),
        path: path.to_owned(),
        datasets_total: atlas.dataset_count_total() as u64,
        datasets_live: live.count() as u64,
        bytes: atlas.container_bytes(),
        created_unix_ms: atlas.created_unix_ms(),
        variables,
        attributes,
        checksums: member_checksums(atlas).await?,
        names: name_range(atlas),
    })
}

/// The first and last dataset name of the container, deleted ones included
/// (a deleted name still hides older copies, so resolution must find it).
fn name_range(atlas: &Member) -> Option<NameRange> {
    let names = atlas.footer().datasets.keys();
    let first = names.clone().min()?;
    let last = names.max()?;
    Some(NameRange {
        first: first.to_string(),
        last: last.to_string(),
    })
}

/// The array names (with their declared types) and the dataset-level
/// attribute keys of the live datasets' schemas, in order of first appearance.
fn declared_by_live(atlas: &Member, live: &Live) -> (IndexMap<String, Declared>, Vec<String>) {
    let footer = atlas.footer();
    // Live datasets per schema: each schema is walked once, however many use it.
    let mut per_schema: IndexMap<u32, usize> = IndexMap::new();
    for (index, (_, &schema)) in footer.datasets.iter().enumerate() {
        if u32::try_from(index).is_ok_and(|o| live.contains(o)) {
            *per_schema.entry(schema).or_default() += 1;
        }
    }
    let mut arrays: IndexMap<String, Declared> = IndexMap::new();
    let mut keys: IndexMap<String, ()> = IndexMap::new();
    for (&schema, &datasets) in &per_schema {
        let Some(view) = footer.schema_view(schema) else {
            continue;
        };
        for meta in view.arrays() {
            arrays
                .entry(meta.name().to_owned())
                .or_default()
                .add(meta.dtype(), datasets);
        }
        for (key, _) in view.attributes() {
            keys.entry(key.to_owned()).or_default();
        }
    }
    (arrays, keys.into_keys().collect())
}

/// One variable's summary over `live`: see [`fold_variable`].
async fn variable_summary(
    atlas: &Member,
    live: &Live,
    name: &str,
    declared: &Declared,
) -> Result<VariableSummary> {
    let rows = atlas.array_stats_by_dataset(live, name).await?;
    fold_variable(name, declared, rows.iter().map(|r| &r.stats)).map(|(summary, _)| summary)
}

/// One variable's summary over some datasets, from the statistics they
/// recorded: counts summed, bounds folded when they are certain (see the
/// module docs). The set manifest's member summaries and the dataset index's
/// row-group bounds are both made here. Beside the summary, the exact fold
/// of the statistics it was made from (which the summary may widen).
pub(crate) fn fold_variable<'a>(
    name: &str,
    declared: &Declared,
    stats: impl IntoIterator<Item = &'a ArrayStats>,
) -> Result<(VariableSummary, Option<ArrayStats>)> {
    let mut recorded = 0usize;
    let folded = fold_stats(
        stats
            .into_iter()
            .inspect(|_| recorded = recorded.saturating_add(1)),
    );
    let (count, nulls) = folded
        .as_ref()
        .map_or((0, 0), |s| (s.row_count, s.null_count));
    if nulls > count {
        return Err(AtlasError::corrupt(format!(
            "variable {name:?}: the statistics count {nulls} nulls among {count} elements"
        )));
    }
    let dtype = declared.dtypes.first().cloned().ok_or_else(|| {
        AtlasError::corrupt(format!("variable {name:?} is declared by no schema"))
    })?;
    // One type and statistics from every declaring dataset, or no bounds.
    let certain = declared.dtypes.len() == 1 && recorded == declared.datasets;
    let (min, max) = match &folded {
        Some(stats) if certain => bounds(
            stats
                .min
                .as_ref()
                .and_then(|s| summary_of_stat(s, &dtype, Bound::Min)),
            stats
                .max
                .as_ref()
                .and_then(|s| summary_of_stat(s, &dtype, Bound::Max)),
        ),
        _ => (None, None),
    };
    let summary = VariableSummary {
        name: name.to_owned(),
        dtype,
        count,
        nulls,
        min,
        max,
    };
    Ok((summary, folded))
}

/// Which end of a range a bound is.
#[derive(Clone, Copy)]
enum Bound {
    Min,
    Max,
}

/// `min` and `max` if they are of one kind with `min <= max`; otherwise both
/// unknown, never a pair that would fail the manifest's validation.
fn bounds(min: Option<Value>, max: Option<Value>) -> (Option<Value>, Option<Value>) {
    match (&min, &max) {
        (Some(lo), Some(hi)) => match lo.compare(hi) {
            Some(Ordering::Less | Ordering::Equal) => (min, max),
            _ => (None, None),
        },
        _ => (min, max),
    }
}

/// A segment statistic as a summary bound of an array of type `dtype`;
/// `None` for a kind the manifest has no bound for (or a string statistic
/// that is not UTF-8).
fn summary_of_stat(stat: &Value, dtype: &DType, end: Bound) -> Option<Value> {
    match stat {
        Value::Int(_) | Value::UInt(_) | Value::Timestamp(_) => Some(stat.clone()),
        Value::Float(x) => Some(Value::Float(widen_zero(*x, end))),
        Value::Bytes(b) => match dtype {
            DType::String => String::from_utf8(b.clone()).ok().map(Value::String),
            DType::Binary => Some(stat.clone()),
            _ => None,
        },
        _ => None,
    }
}

/// A zero minimum becomes `-0.0` and a zero maximum `+0.0`: under
/// `total_cmp` the two zeros differ, under IEEE they are equal, and the wider
/// bound is right under both.
fn widen_zero(x: f64, end: Bound) -> f64 {
    if x == 0.0 {
        match end {
            Bound::Min => -0.0,
            Bound::Max => 0.0,
        }
    } else {
        x
    }
}

/// The summary bound of an attribute value, if it is a single number.
fn summary_of_attr(attr: &Attr) -> Option<Value> {
    attr.value()
        .filter(|v| matches!(v, Value::Int(_) | Value::UInt(_) | Value::Float(_)))
}

/// Min and max of attribute values that are all single numbers of one kind;
/// `None` for anything else (a string, a list, a mix of kinds, no value).
pub(crate) fn attribute_bounds<'a>(
    values: impl Iterator<Item = &'a Attr>,
) -> Option<(Value, Value)> {
    let mut range: Option<(Value, Value)> = None;
    for attr in values {
        let value = summary_of_attr(attr)?;
        range = Some(match range {
            None => (value.clone(), value),
            Some((lo, hi)) => {
                let lo = match value.compare(&lo)? {
                    Ordering::Less => value.clone(),
                    _ => lo,
                };
                let hi = match value.compare(&hi)? {
                    Ordering::Greater => value,
                    _ => hi,
                };
                (lo, hi)
            }
        });
    }
    let (lo, hi) = range?;
    let widen = |v: Value, end| match v {
        Value::Float(x) => Value::Float(widen_zero(x, end)),
        other => other,
    };
    Some((widen(lo, Bound::Min), widen(hi, Bound::Max)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mixed_attribute_kinds_have_no_bounds() {
        let values = [Attr::Int32(1), Attr::Float64(2.0)];
        assert_eq!(attribute_bounds(values.iter()), None);
    }

    #[test]
    fn zero_bounds_are_widened_to_both_zeros() {
        let values = [Attr::Float64(0.0), Attr::Float64(-0.0)];
        let (lo, hi) = attribute_bounds(values.iter()).unwrap();
        assert!(matches!(lo, Value::Float(x) if x == 0.0 && x.is_sign_negative()));
        assert!(matches!(hi, Value::Float(x) if x == 0.0 && x.is_sign_positive()));
    }

    #[test]
    fn an_inverted_pair_of_bounds_becomes_unknown() {
        assert_eq!(
            bounds(Some(Value::Int(3)), Some(Value::Int(2))),
            (None, None)
        );
        assert_eq!(
            bounds(Some(Value::Int(3)), Some(Value::UInt(4))),
            (None, None)
        );
    }
}
