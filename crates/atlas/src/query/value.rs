//! How stored data meets a predicate's literal: a literal is a [`Value`],
//! the same type as a statistic's bound or a fill value; stored data is
//! reduced to what a comparison needs (`Scalar`), and [`order`] is the one
//! ordering between the two.

use std::cmp::Ordering;

pub use atlas_format::Value;

use crate::Attr;

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

impl Scalar {
    /// The one place a stored value (a statistic's or a summary's bound, an
    /// attribute) becomes a `Scalar`. `None` for a kind of [`Value`] this
    /// version does not know (the enum is non-exhaustive): callers treat that
    /// as "no statistics", never as a value.
    pub(crate) fn of(v: &Value) -> Option<Scalar> {
        Some(match v {
            Value::Bool(b) => Scalar::Int(i128::from(*b)),
            Value::Int(i) => Scalar::Int(i128::from(*i)),
            Value::UInt(u) => Scalar::Int(i128::from(*u)),
            Value::Float(x) => Scalar::Float(*x),
            Value::Timestamp(t) => Scalar::Int(i128::from(t.nanos())),
            Value::String(s) => Scalar::Bytes(s.as_bytes().to_vec()),
            Value::Bytes(b) => Scalar::Bytes(b.clone()),
            _ => return None,
        })
    }
}

/// A single-valued attribute as a [`Scalar`]; `None` for lists (no single value).
pub(crate) fn attr_scalar(a: &Attr) -> Option<Scalar> {
    a.value().as_ref().and_then(Scalar::of)
}

/// Where stored `data` lies relative to the literal `value`; `None` when the
/// two cannot be compared. Floats use IEEE total order, as the statistics do
/// (a NaN above every number), so a bound on min/max means the same as the
/// bound on every element.
pub(crate) fn order(data: &Scalar, value: &Value) -> Option<Ordering> {
    match (data, value) {
        (Scalar::Int(d), Value::Int(v)) => Some(d.cmp(&i128::from(*v))),
        (Scalar::Int(d), Value::UInt(v)) => Some(d.cmp(&i128::from(*v))),
        (Scalar::Int(d), Value::Timestamp(v)) => Some(d.cmp(&i128::from(v.nanos()))),
        (Scalar::Int(d), Value::Bool(v)) => Some(d.cmp(&i128::from(*v))),
        // i128 to f64 rounds only beyond 2^53, far outside any stored integer a float bound meets.
        #[allow(clippy::cast_precision_loss)]
        (Scalar::Int(d), Value::Float(v)) => Some((*d as f64).total_cmp(v)),
        #[allow(clippy::cast_precision_loss)]
        (Scalar::Float(d), Value::Int(v)) => Some(d.total_cmp(&(*v as f64))),
        #[allow(clippy::cast_precision_loss)]
        (Scalar::Float(d), Value::UInt(v)) => Some(d.total_cmp(&(*v as f64))),
        (Scalar::Float(d), Value::Float(v)) => Some(d.total_cmp(v)),
        (Scalar::Bytes(d), Value::String(_) | Value::Bytes(_)) => {
            Some(d.as_slice().cmp(value.as_bytes()?))
        }
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
                &Scalar::of(&Value::UInt(u64::MAX)).unwrap(),
                &Value::Int(i64::MAX)
            ),
            Some(Ordering::Greater)
        );
    }

    #[test]
    fn a_timestamp_never_compares_with_a_float_or_text() {
        assert_eq!(
            order(
                &Scalar::Float(1.0),
                &Value::Timestamp(atlas_format::Timestamp(1))
            ),
            None
        );
        assert_eq!(
            order(
                &Scalar::Bytes(vec![]),
                &Value::Timestamp(atlas_format::Timestamp(1))
            ),
            None
        );
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
