//! [`Value`]: one scalar of stored data. It is what a fill value, a bound of
//! an array's statistics, a bound of a set member's summary and a literal of a
//! query each hold, so all of them share one type and one ordering.

use std::cmp::Ordering;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::dtype::DType;
use crate::time::Timestamp;

/// One scalar value of stored data: a fill value, a statistic's bound, a
/// summary's bound or a query literal. Integers are widened to `i64`/`u64`
/// and floats to `f64`; the array's element type says what it narrows to.
///
/// Strings and binary values order by their bytes; the statistics of a
/// segment record both as [`Value::Bytes`], a set manifest's summaries keep
/// text as [`Value::String`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Value {
    /// A boolean (a fill of an unsigned integer array as 0 or 1).
    Bool(bool),
    /// A signed integer.
    Int(i64),
    /// An unsigned integer.
    #[serde(rename = "uint")]
    UInt(u64),
    /// A float; ordered by `total_cmp`, so a NaN sorts above every number.
    Float(f64),
    /// An instant, nanoseconds since the Unix epoch.
    #[serde(rename = "timestamp_ns")]
    Timestamp(Timestamp),
    /// UTF-8 text.
    String(String),
    /// Bytes that need not be text.
    Bytes(Vec<u8>),
}

impl Value {
    /// Orders two values of one kind: integers and timestamps numerically,
    /// floats by `total_cmp`, `false` before `true`, strings and bytes
    /// lexicographically by byte; `None` for two different kinds.
    pub fn compare(&self, other: &Value) -> Option<Ordering> {
        match (self, other) {
            (Value::Bool(a), Value::Bool(b)) => Some(a.cmp(b)),
            (Value::Int(a), Value::Int(b)) => Some(a.cmp(b)),
            (Value::UInt(a), Value::UInt(b)) => Some(a.cmp(b)),
            (Value::Float(a), Value::Float(b)) => Some(a.total_cmp(b)),
            (Value::Timestamp(a), Value::Timestamp(b)) => Some(a.cmp(b)),
            (Value::String(a), Value::String(b)) => Some(a.as_bytes().cmp(b.as_bytes())),
            (Value::Bytes(a), Value::Bytes(b)) => Some(a.cmp(b)),
            _ => None,
        }
    }

    /// The value as an instant of a timestamp array: a timestamp, or an
    /// integer read as nanoseconds since the epoch (a fill of either kind
    /// applies to timestamp arrays); `None` for any other kind.
    pub fn timestamp(&self) -> Option<Timestamp> {
        match self {
            Value::Timestamp(t) => Some(*t),
            Value::Int(n) => Some(Timestamp(*n)),
            _ => None,
        }
    }

    /// The value as an element of a `dtype` array reads: the bytes of a
    /// string array's statistic as text (when they are UTF-8) and an integer
    /// fill of a timestamp array as an instant; any other value as it is.
    pub fn for_dtype(self, dtype: &DType) -> Value {
        match (self, dtype) {
            (Value::Bytes(b), DType::String) => match String::from_utf8(b) {
                Ok(text) => Value::String(text),
                Err(e) => Value::Bytes(e.into_bytes()),
            },
            (Value::Int(n), DType::TimestampNs) => Value::Timestamp(Timestamp(n)),
            (value, _) => value,
        }
    }

    /// Text or bytes as a byte slice; `None` for other kinds.
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Value::String(s) => Some(s.as_bytes()),
            Value::Bytes(b) => Some(b),
            _ => None,
        }
    }
}

impl fmt::Display for Value {
    /// Numbers and booleans as Rust prints them, text quoted, bytes as
    /// lower-case hex after `0x`, timestamps as `YYYY-MM-DDTHH:MM:SSZ`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Bool(v) => write!(f, "{v}"),
            Value::Int(v) => write!(f, "{v}"),
            Value::UInt(v) => write!(f, "{v}"),
            Value::Float(v) => write!(f, "{v}"),
            Value::Timestamp(v) => write!(f, "{v}"),
            Value::String(v) => write!(f, "{v:?}"),
            Value::Bytes(v) => {
                f.write_str("0x")?;
                v.iter().try_for_each(|b| write!(f, "{b:02x}"))
            }
        }
    }
}

macro_rules! value_from {
    ($($from:ty => $variant:ident via $conv:expr),* $(,)?) => {
        $(impl From<$from> for Value {
            fn from(v: $from) -> Self {
                Value::$variant(($conv)(v))
            }
        })*
    };
}

value_from!(
    bool => Bool via std::convert::identity,
    i32 => Int via i64::from,
    i64 => Int via std::convert::identity,
    u64 => UInt via std::convert::identity,
    f64 => Float via std::convert::identity,
    Timestamp => Timestamp via std::convert::identity,
    String => String via std::convert::identity,
    &str => String via str::to_owned,
    Vec<u8> => Bytes via std::convert::identity,
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_of_two_kinds_do_not_compare() {
        assert_eq!(Value::Int(1).compare(&Value::UInt(1)), None);
        assert_eq!(
            Value::String("a".into()).compare(&Value::Bytes(b"a".to_vec())),
            None
        );
    }

    #[test]
    fn a_nan_sorts_above_every_float() {
        assert_eq!(
            Value::Float(f64::NAN).compare(&Value::Float(f64::INFINITY)),
            Some(Ordering::Greater)
        );
    }

    #[test]
    fn text_orders_by_bytes_not_by_characters() {
        // 'é' (0xC3 0xA9) sorts after 'z' (0x7A) by bytes.
        assert_eq!(
            Value::String("é".into()).compare(&Value::String("z".into())),
            Some(Ordering::Greater)
        );
    }

    #[test]
    fn a_value_reads_as_its_arrays_dtype() {
        let text = Value::Bytes(b"abc".to_vec()).for_dtype(&DType::String);
        assert_eq!(text, Value::String("abc".into()));
        let not_utf8 = Value::Bytes(vec![0xff]).for_dtype(&DType::String);
        assert_eq!(not_utf8, Value::Bytes(vec![0xff]));
        let binary = Value::Bytes(b"abc".to_vec()).for_dtype(&DType::Binary);
        assert_eq!(binary, Value::Bytes(b"abc".to_vec()));
        let instant = Value::Int(5).for_dtype(&DType::TimestampNs);
        assert_eq!(instant, Value::Timestamp(Timestamp(5)));
        assert_eq!(Value::Int(5).for_dtype(&DType::Int64), Value::Int(5));
    }

    #[test]
    fn a_value_prints_for_people() {
        assert_eq!(Value::Bytes(vec![0, 255]).to_string(), "0x00ff");
        assert_eq!(Value::String("a b".into()).to_string(), "\"a b\"");
        assert_eq!(
            Value::Timestamp(Timestamp(0)).to_string(),
            "1970-01-01T00:00:00Z"
        );
    }
}
