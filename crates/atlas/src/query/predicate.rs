//! The predicate type: what [`Atlas::select`](crate::Atlas::select) answers.

use super::error::ParseError;
use super::value::Value;

/// One statistic of an array, as every segment records it per dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StatField {
    /// The smallest non-null element.
    Min,
    /// The largest non-null element.
    Max,
    /// Elements equal to the fill value.
    Nulls,
    /// Elements in total (the shape's product).
    Count,
}

impl StatField {
    /// The suffix the expression language and the catalogue's columns use (`min`, `nulls`, ...).
    pub fn suffix(self) -> &'static str {
        match self {
            StatField::Min => "min",
            StatField::Max => "max",
            StatField::Nulls => "nulls",
            StatField::Count => "count",
        }
    }

    /// The statistic a suffix names.
    pub fn from_suffix(s: &str) -> Option<StatField> {
        Some(match s {
            "min" => StatField::Min,
            "max" => StatField::Max,
            "nulls" => StatField::Nulls,
            "count" => StatField::Count,
            _ => return None,
        })
    }
}

/// What a comparison looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Field {
    /// A dataset attribute if any schema declares that key, else an array's
    /// values; a name that is both is [`QueryError::AmbiguousName`](super::QueryError::AmbiguousName).
    Name(String),
    /// A dataset attribute.
    Attribute(String),
    /// An array's non-null elements, judged by its statistics.
    Array(String),
    /// One statistic of an array.
    Stat(String, StatField),
}

impl Field {
    /// [`Field::Name`]: resolved against the collection when the predicate runs.
    pub fn name(name: impl Into<String>) -> Self {
        Field::Name(name.into())
    }

    /// [`Field::Attribute`].
    pub fn attr(key: impl Into<String>) -> Self {
        Field::Attribute(key.into())
    }

    /// [`Field::Array`].
    pub fn array(name: impl Into<String>) -> Self {
        Field::Array(name.into())
    }

    /// [`Field::Stat`].
    pub fn stat(array: impl Into<String>, stat: StatField) -> Self {
        Field::Stat(array.into(), stat)
    }

    fn cmp(self, op: CmpOp, value: impl Into<Value>) -> Predicate {
        Predicate::Compare {
            field: self,
            op,
            value: value.into(),
        }
    }

    /// `self = value`.
    pub fn equals(self, value: impl Into<Value>) -> Predicate {
        self.cmp(CmpOp::Eq, value)
    }

    /// `self != value`, i.e. `not (self = value)`.
    pub fn not_equals(self, value: impl Into<Value>) -> Predicate {
        self.cmp(CmpOp::Ne, value)
    }

    /// `self < value`.
    pub fn less_than(self, value: impl Into<Value>) -> Predicate {
        self.cmp(CmpOp::Lt, value)
    }

    /// `self <= value`.
    pub fn at_most(self, value: impl Into<Value>) -> Predicate {
        self.cmp(CmpOp::Le, value)
    }

    /// `self > value`.
    pub fn greater_than(self, value: impl Into<Value>) -> Predicate {
        self.cmp(CmpOp::Gt, value)
    }

    /// `self >= value`.
    pub fn at_least(self, value: impl Into<Value>) -> Predicate {
        self.cmp(CmpOp::Ge, value)
    }

    /// `self between lo hi` (inclusive).
    pub fn between(self, lo: impl Into<Value>, hi: impl Into<Value>) -> Predicate {
        Predicate::Between {
            field: self,
            lo: lo.into(),
            hi: hi.into(),
        }
    }

    /// `self overlaps lo hi` (inclusive).
    pub fn overlaps(self, lo: impl Into<Value>, hi: impl Into<Value>) -> Predicate {
        Predicate::Overlaps {
            field: self,
            lo: lo.into(),
            hi: hi.into(),
        }
    }

    /// `exists self`.
    pub fn exists(self) -> Predicate {
        Predicate::Exists(self)
    }
}

impl std::fmt::Display for Field {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Field::Name(n) | Field::Array(n) => f.write_str(n),
            Field::Attribute(k) => write!(f, "@{k}"),
            Field::Stat(n, s) => write!(f, "{n}.{}", s.suffix()),
        }
    }
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CmpOp {
    /// `=`
    Eq,
    /// `!=`: the negation of `=`.
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

/// Which datasets to keep.
///
/// # Meaning of each form
///
/// Every form is true or false for each live dataset (two-valued logic).
///
/// - On a **dataset attribute**: the dataset's value compared with the
///   literal; a dataset without the attribute matches no comparison.
///   `between lo hi` means `lo <= v <= hi`, and `overlaps` means the same for
///   a single value. List attributes only answer `exists`.
/// - On an **array** ([`Field::Array`]), statistics over the dataset's
///   non-null elements decide, and a dataset with no non-null element (or
///   without the array) matches no comparison:
///   - `<`, `<=`, `>`, `>=`, `=` and `between lo hi` mean **every** non-null
///     element satisfies it ("all within"): `>= v` is `min >= v`, `<= v` is
///     `max <= v`, `= v` is `min = max = v`, `between` is `lo <= min and max <= hi`.
///     These are exact: statistics decide them with no false positive.
///   - `overlaps lo hi` means the element range `[min, max]` meets `[lo, hi]`
///     ("may contain"): every dataset holding an element in the window is
///     selected, and some whose elements straddle it without touching it are too.
/// - On a **statistic** ([`Field::Stat`]): the recorded value compared with
///   the literal (min/max absent for an all-null array match nothing).
/// - `!=` is always `not (=)`, so it also selects datasets lacking the field.
/// - [`Predicate::Exists`]: the dataset's schema declares the attribute or
///   array (for `.min`/`.max`: it also has a non-null element).
///
/// Floats order as the statistics do (IEEE total order: a NaN above every
/// number). A predicate on an array whose type has no order, or that a
/// dataset declares without recorded statistics, is
/// [`QueryError::NoStatistics`](super::QueryError::NoStatistics), never an empty result.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Predicate {
    /// `field op value`.
    Compare {
        /// What is compared.
        field: Field,
        /// How.
        op: CmpOp,
        /// With what.
        value: Value,
    },
    /// `field between lo hi`, inclusive ("all within" on arrays).
    Between {
        /// What is compared.
        field: Field,
        /// Lower bound.
        lo: Value,
        /// Upper bound.
        hi: Value,
    },
    /// `field overlaps lo hi`, inclusive ("may contain" on arrays).
    Overlaps {
        /// What is compared.
        field: Field,
        /// Lower bound.
        lo: Value,
        /// Upper bound.
        hi: Value,
    },
    /// The dataset declares the field.
    Exists(Field),
    /// Every part holds (true when empty).
    And(Vec<Predicate>),
    /// Some part holds (false when empty).
    Or(Vec<Predicate>),
    /// The part does not hold.
    Not(Box<Predicate>),
}

impl std::str::FromStr for Predicate {
    type Err = ParseError;

    fn from_str(text: &str) -> Result<Predicate, ParseError> {
        Predicate::parse(text)
    }
}

impl Predicate {
    /// Parses the text of `atlas ls --where` (`@platform_number == "6901234"
    /// and TEMP.max > 20`) into a predicate.
    ///
    /// # Errors
    /// [`ParseError`], whose display shows the text with a caret under the
    /// offending token.
    pub fn parse(text: &str) -> Result<Predicate, ParseError> {
        super::parse::parse(text)
    }

    /// `self and other`.
    pub fn and(self, other: Predicate) -> Predicate {
        match self {
            Predicate::And(mut parts) => {
                parts.push(other);
                Predicate::And(parts)
            }
            p => Predicate::And(vec![p, other]),
        }
    }

    /// `self or other`.
    pub fn or(self, other: Predicate) -> Predicate {
        match self {
            Predicate::Or(mut parts) => {
                parts.push(other);
                Predicate::Or(parts)
            }
            p => Predicate::Or(vec![p, other]),
        }
    }

    /// `not self`.
    pub fn negated(self) -> Predicate {
        Predicate::Not(Box::new(self))
    }

    /// Every field the predicate looks at, in order of appearance.
    pub fn fields(&self) -> Vec<&Field> {
        let mut out = Vec::new();
        self.collect_fields(&mut out);
        out
    }

    fn collect_fields<'a>(&'a self, out: &mut Vec<&'a Field>) {
        match self {
            Predicate::Compare { field, .. }
            | Predicate::Between { field, .. }
            | Predicate::Overlaps { field, .. }
            | Predicate::Exists(field) => out.push(field),
            Predicate::And(parts) | Predicate::Or(parts) => {
                for p in parts {
                    p.collect_fields(out);
                }
            }
            Predicate::Not(p) => p.collect_fields(out),
        }
    }

    /// The same predicate with each field replaced by `f`'s answer.
    pub(crate) fn try_map_fields<E>(
        &self,
        f: &mut impl FnMut(&Field) -> Result<Field, E>,
    ) -> Result<Predicate, E> {
        Ok(match self {
            Predicate::Compare { field, op, value } => Predicate::Compare {
                field: f(field)?,
                op: *op,
                value: value.clone(),
            },
            Predicate::Between { field, lo, hi } => Predicate::Between {
                field: f(field)?,
                lo: lo.clone(),
                hi: hi.clone(),
            },
            Predicate::Overlaps { field, lo, hi } => Predicate::Overlaps {
                field: f(field)?,
                lo: lo.clone(),
                hi: hi.clone(),
            },
            Predicate::Exists(field) => Predicate::Exists(f(field)?),
            Predicate::And(parts) => Predicate::And(
                parts
                    .iter()
                    .map(|p| p.try_map_fields(f))
                    .collect::<Result<_, E>>()?,
            ),
            Predicate::Or(parts) => Predicate::Or(
                parts
                    .iter()
                    .map(|p| p.try_map_fields(f))
                    .collect::<Result<_, E>>()?,
            ),
            Predicate::Not(p) => Predicate::Not(Box::new(p.try_map_fields(f)?)),
        })
    }
}
