//! Literals a predicate holds ([`Value`]), what a collection stores reduced to
//! what a comparison needs (`Scalar`), and the one ordering between them.

use std::cmp::Ordering;

use crate::Stat;

use crate::Attr;

/// A literal in a predicate.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Value {
    /// An integer; compares with integer, float, boolean (0/1) and timestamp data.
    Int(i64),
    /// A number with a fraction or exponent; compares with integer and float data.
    Float(f64),
    /// Text; compares with strings and binary byte by byte.
    String(String),
    /// `true` / `false`; compares with booleans (and integers as 1 / 0).
    Bool(bool),
    /// An instant in nanoseconds since the Unix epoch; compares with timestamps
    /// and integers (as nanoseconds), never with floats.
    Timestamp(i64),
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Int(v) => write!(f, "{v}"),
            Value::Float(v) => write!(f, "{v}"),
            Value::String(v) => write!(f, "{v:?}"),
            Value::Bool(v) => write!(f, "{v}"),
            Value::Timestamp(v) => write!(f, "timestamp {v} ns"),
        }
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::Int(v)
    }
}

impl From<i32> for Value {
    fn from(v: i32) -> Self {
        Value::Int(i64::from(v))
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::Float(v)
    }
}

impl From<bool> for Value {
    fn from(v: bool) -> Self {
        Value::Bool(v)
    }
}

impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::String(v.to_owned())
    }
}

impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::String(v)
    }
}

/// A stored value as comparisons see it: every integer kind (booleans as 0/1,
/// timestamps as nanoseconds) widened to `i128`, floats as `f64`, text as bytes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Scalar {
    /// Integers, booleans, timestamps.
    Int(i128),
    /// Floats.
    Float(f64),
    /// Strings and binary.
    Bytes(Vec<u8>),
}

/// The one place a stored statistic becomes a [`Scalar`]: swapping the
/// statistics type of the segment layer means changing this function only.
///
/// `None` for a kind of [`Stat`] this version does not know (the enum is
/// non-exhaustive); callers treat that as "no statistics", never as a value.
pub(crate) fn stat_scalar(v: &Stat) -> Option<Scalar> {
    Some(match v {
        Stat::Int(i) => Scalar::Int(i128::from(*i)),
        Stat::UInt(u) => Scalar::Int(i128::from(*u)),
        Stat::Float(x) => Scalar::Float(*x),
        Stat::Bytes(b) => Scalar::Bytes(b.clone()),
        Stat::Timestamp(t) => Scalar::Int(i128::from(t.nanos())),
        _ => return None,
    })
}

/// A scalar attribute as a [`Scalar`]; `None` for lists (no single value).
pub(crate) fn attr_scalar(a: &Attr) -> Option<Scalar> {
    Some(match a {
        Attr::Bool(v) => Scalar::Int(i128::from(*v)),
        Attr::Int8(v) => Scalar::Int(i128::from(*v)),
        Attr::Int16(v) => Scalar::Int(i128::from(*v)),
        Attr::Int32(v) => Scalar::Int(i128::from(*v)),
        Attr::Int64(v) => Scalar::Int(i128::from(*v)),
        Attr::UInt8(v) => Scalar::Int(i128::from(*v)),
        Attr::UInt16(v) => Scalar::Int(i128::from(*v)),
        Attr::UInt32(v) => Scalar::Int(i128::from(*v)),
        Attr::UInt64(v) => Scalar::Int(i128::from(*v)),
        Attr::Float32(v) => Scalar::Float(f64::from(*v)),
        Attr::Float64(v) => Scalar::Float(*v),
        Attr::String(v) => Scalar::Bytes(v.as_bytes().to_vec()),
        Attr::Binary(v) => Scalar::Bytes(v.clone()),
        _ => return None,
    })
}

/// Where stored `data` lies relative to the literal `value`; `None` when the
/// two cannot be compared. Floats use IEEE total order, as the statistics do
/// (a NaN above every number), so a bound on min/max means the same as the
/// bound on every element.
pub(crate) fn order(data: &Scalar, value: &Value) -> Option<Ordering> {
    match (data, value) {
        (Scalar::Int(d), Value::Int(v) | Value::Timestamp(v)) => Some(d.cmp(&i128::from(*v))),
        (Scalar::Int(d), Value::Bool(v)) => Some(d.cmp(&i128::from(*v))),
        // i128 to f64 rounds only beyond 2^53, far outside any stored integer a float bound meets.
        #[allow(clippy::cast_precision_loss)]
        (Scalar::Int(d), Value::Float(v)) => Some((*d as f64).total_cmp(v)),
        #[allow(clippy::cast_precision_loss)]
        (Scalar::Float(d), Value::Int(v)) => Some(d.total_cmp(&(*v as f64))),
        (Scalar::Float(d), Value::Float(v)) => Some(d.total_cmp(v)),
        (Scalar::Bytes(d), Value::String(v)) => Some(d.as_slice().cmp(v.as_bytes())),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_compare_across_integer_and_float_kinds() {
        assert_eq!(
            order(&Scalar::Int(3), &Value::Float(2.5)),
            Some(Ordering::Greater)
        );
        assert_eq!(
            order(&Scalar::Float(-10.0), &Value::Int(-10)),
            Some(Ordering::Equal)
        );
        assert_eq!(
            order(
                &stat_scalar(&Stat::UInt(u64::MAX)).unwrap(),
                &Value::Int(i64::MAX)
            ),
            Some(Ordering::Greater)
        );
    }

    #[test]
    fn a_timestamp_never_compares_with_a_float_or_text() {
        assert_eq!(order(&Scalar::Float(1.0), &Value::Timestamp(1)), None);
        assert_eq!(order(&Scalar::Bytes(vec![]), &Value::Timestamp(1)), None);
        assert_eq!(order(&Scalar::Bytes(b"a".to_vec()), &Value::Int(1)), None);
    }

    #[test]
    fn a_nan_sorts_above_every_number_like_the_statistics() {
        assert_eq!(
            order(&Scalar::Float(f64::NAN), &Value::Float(f64::INFINITY)),
            Some(Ordering::Greater)
        );
    }
}
