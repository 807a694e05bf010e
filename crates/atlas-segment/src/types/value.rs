//! Statistics and fill values as the segment API gives them: in
//! atlas-format's [`Value`] (with [`Timestamp`]), not in array-format's
//! types, so that a change of array-format does not change what callers see.

use std::cmp::Ordering;

pub use atlas_format::{Timestamp, Value};

/// Minimum, maximum, nulls and rows of one array (or of one array name folded
/// over many). `min`/`max` are `None` for a type with no order or when every
/// element is a null (equal to the fill value).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ArrayStats {
    /// Smallest non-null element (strings and binary as raw bytes).
    pub min: Option<Value>,
    /// Largest non-null element.
    pub max: Option<Value>,
    /// Elements equal to the fill value, unwritten ones included.
    pub null_count: u64,
    /// Elements in total (the shape's product).
    pub row_count: u64,
}

impl ArrayStats {
    /// Adds `other` into `self`: counts add, min of mins, max of maxes.
    pub fn merge(&mut self, other: &ArrayStats) {
        self.null_count = self.null_count.saturating_add(other.null_count);
        self.row_count = self.row_count.saturating_add(other.row_count);
        self.min = pick(self.min.take(), other.min.clone(), Ordering::Less);
        self.max = pick(self.max.take(), other.max.clone(), Ordering::Greater);
    }
}

/// The one of `a`, `b` that compares `want` against the other; a value beats
/// `None`, and two values of different kinds (which a fold never mixes) keep `a`.
fn pick(a: Option<Value>, b: Option<Value>, want: Ordering) -> Option<Value> {
    match (a, b) {
        (None, x) | (x, None) => x,
        (Some(a), Some(b)) => match b.compare(&a) {
            Some(o) if o == want => Some(b),
            _ => Some(a),
        },
    }
}

pub(crate) fn fill_from_stored(fill: &array_format::FillValue) -> Value {
    use array_format::FillValue as F;
    match fill {
        F::Bool(b) => Value::Bool(*b),
        F::Int(n) => Value::Int(*n),
        F::UInt(n) => Value::UInt(*n),
        F::Float(x) => Value::Float(*x),
        F::String(s) => Value::String(s.clone()),
        F::TimestampNs(n) => Value::Timestamp(Timestamp(*n)),
    }
}

/// A fill as array-format stores it; `None` for bytes, which it cannot store
/// as a fill (no element type accepts them: [`crate::Element::accepts_fill`]).
pub(crate) fn fill_to_stored(fill: &Value) -> Option<array_format::FillValue> {
    use array_format::FillValue as F;
    Some(match fill {
        Value::Bool(b) => F::Bool(*b),
        Value::Int(n) => F::Int(*n),
        Value::UInt(n) => F::UInt(*n),
        Value::Float(x) => F::Float(*x),
        Value::String(s) => F::String(s.clone()),
        Value::Timestamp(t) => F::TimestampNs(t.0),
        // Bytes, and any kind a later atlas-format adds: no stored fill.
        _ => return None,
    })
}

/// One archived statistic as ours, read in place without deserialising.
fn stat_from_archived(v: &array_format::stats::ArchivedStatValue) -> Value {
    use array_format::stats::ArchivedStatValue as S;
    match v {
        S::Int(n) => Value::Int(n.to_native()),
        S::UInt(n) => Value::UInt(n.to_native()),
        S::Float(x) => Value::Float(x.to_native()),
        S::TimestampNs(n) => Value::Timestamp(Timestamp(n.to_native())),
        S::Bytes(b) => Value::Bytes(b.as_slice().to_vec()),
    }
}

/// One statistic as array-format holds it in memory, as ours.
fn stat_from_stored(v: &array_format::StatValue) -> Value {
    use array_format::StatValue as S;
    match v {
        S::Int(n) => Value::Int(*n),
        S::UInt(n) => Value::UInt(*n),
        S::Float(x) => Value::Float(*x),
        S::TimestampNs(n) => Value::Timestamp(Timestamp(*n)),
        S::Bytes(b) => Value::Bytes(b.clone()),
    }
}

/// An array's statistics as array-format holds them in memory (a footer
/// being written), as ours: what [`stats_from_archived`] reads back.
pub(crate) fn stats_from_stored(s: &array_format::ArrayStats) -> ArrayStats {
    ArrayStats {
        min: s.min.as_ref().map(stat_from_stored),
        max: s.max.as_ref().map(stat_from_stored),
        null_count: s.null_count,
        row_count: s.row_count,
    }
}

/// An array's archived statistics as ours, read in place: no copy of the
/// array name that array-format repeats inside its statistics.
pub(crate) fn stats_from_archived(s: &array_format::stats::ArchivedArrayStats) -> ArrayStats {
    ArrayStats {
        min: s.min.as_ref().map(stat_from_archived),
        max: s.max.as_ref().map(stat_from_archived),
        null_count: s.null_count.to_native(),
        row_count: s.row_count.to_native(),
    }
}

/// Defines a conversion into the footer dtype from one of array-format's
/// element type enums (its own, or the archived one read in place), whose
/// variants match by name; `$size` reads a fixed-size list's length.
macro_rules! dtype_conversion {
    ($(#[$doc:meta])* $name:ident($from:ty), $size:expr) => {
        $(#[$doc])*
        pub(crate) fn $name(dtype: &$from) -> atlas_format::DType {
            use atlas_format::DType;
            type A = $from;
            match dtype {
                A::Bool => DType::Bool,
                A::Int8 => DType::Int8,
                A::Int16 => DType::Int16,
                A::Int32 => DType::Int32,
                A::Int64 => DType::Int64,
                A::UInt8 => DType::UInt8,
                A::UInt16 => DType::UInt16,
                A::UInt32 => DType::UInt32,
                A::UInt64 => DType::UInt64,
                A::Float32 => DType::Float32,
                A::Float64 => DType::Float64,
                A::String => DType::String,
                A::Binary => DType::Binary,
                A::TimestampNs => DType::TimestampNs,
                A::FixedSizeList { child, size } => DType::FixedSizeList {
                    child: Box::new($name(child)),
                    size: ($size)(size),
                },
                A::List { child } => DType::List {
                    child: Box::new($name(child)),
                },
            }
        }
    };
}

dtype_conversion!(
    /// The footer dtype of an archived array-format element type (read in place).
    dtype_from_archived(array_format::dtype::ArchivedDType),
    |size: &rkyv::rend::u32_le| size.to_native()
);

dtype_conversion!(
    /// The footer dtype of an array-format element type.
    dtype_from_stored(array_format::DType),
    |size: &u32| *size
);

/// array-format's element type for a footer dtype; `None` for a type added
/// to atlas-format that array-format has no name for.
pub(crate) fn dtype_to_stored(dtype: &atlas_format::DType) -> Option<array_format::DType> {
    use array_format::DType as A;
    use atlas_format::DType;
    Some(match dtype {
        DType::Bool => A::Bool,
        DType::Int8 => A::Int8,
        DType::Int16 => A::Int16,
        DType::Int32 => A::Int32,
        DType::Int64 => A::Int64,
        DType::UInt8 => A::UInt8,
        DType::UInt16 => A::UInt16,
        DType::UInt32 => A::UInt32,
        DType::UInt64 => A::UInt64,
        DType::Float32 => A::Float32,
        DType::Float64 => A::Float64,
        DType::String => A::String,
        DType::Binary => A::Binary,
        DType::TimestampNs => A::TimestampNs,
        DType::FixedSizeList { child, size } => A::FixedSizeList {
            child: Box::new(dtype_to_stored(child)?),
            size: *size,
        },
        DType::List { child } => A::List {
            child: Box::new(dtype_to_stored(child)?),
        },
        #[allow(unreachable_patterns)]
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timestamp_array_reads_an_integer_fill_as_nanoseconds() {
        assert_eq!(
            Value::Timestamp(Timestamp(5)).timestamp(),
            Some(Timestamp(5))
        );
        assert_eq!(Value::Int(-7).timestamp(), Some(Timestamp(-7)));
        assert_eq!(Value::UInt(5).timestamp(), None);
        assert_eq!(Value::Float(5.0).timestamp(), None);
        assert_eq!(Value::String("5".into()).timestamp(), None);
    }

    fn s(min: Option<Value>, max: Option<Value>, nulls: u64, rows: u64) -> ArrayStats {
        ArrayStats {
            min,
            max,
            null_count: nulls,
            row_count: rows,
        }
    }

    #[test]
    fn archived_and_stored_element_types_convert_to_the_same_footer_dtype() {
        use array_format::DType as A;
        let scalars = [
            A::Bool,
            A::Int8,
            A::Int16,
            A::Int32,
            A::Int64,
            A::UInt8,
            A::UInt16,
            A::UInt32,
            A::UInt64,
            A::Float32,
            A::Float64,
            A::String,
            A::Binary,
            A::TimestampNs,
        ];
        let nested = [
            A::FixedSizeList {
                child: Box::new(A::Float32),
                size: 3,
            },
            nested_list(),
        ];
        for dtype in scalars.into_iter().chain(nested) {
            let bytes = rkyv::to_bytes::<rkyv::rancor::Error>(&dtype).unwrap();
            let archived =
                rkyv::access::<array_format::dtype::ArchivedDType, rkyv::rancor::Error>(&bytes)
                    .unwrap();
            assert_eq!(
                dtype_from_archived(archived),
                dtype_from_stored(&dtype),
                "{dtype:?}"
            );
        }
        assert_eq!(
            dtype_from_stored(&nested_list()),
            atlas_format::DType::List {
                child: Box::new(atlas_format::DType::FixedSizeList {
                    child: Box::new(atlas_format::DType::UInt16),
                    size: 70_000,
                }),
            }
        );
    }

    fn nested_list() -> array_format::DType {
        array_format::DType::List {
            child: Box::new(array_format::DType::FixedSizeList {
                child: Box::new(array_format::DType::UInt16),
                size: 70_000,
            }),
        }
    }

    #[test]
    fn merging_adds_counts_and_keeps_the_extremes() {
        let mut a = s(Some(Value::Int(3)), Some(Value::Int(9)), 1, 10);
        a.merge(&s(Some(Value::Int(-2)), Some(Value::Int(5)), 2, 4));
        assert_eq!(a, s(Some(Value::Int(-2)), Some(Value::Int(9)), 3, 14));
        a.merge(&s(None, None, 4, 4));
        assert_eq!(a, s(Some(Value::Int(-2)), Some(Value::Int(9)), 7, 18));
    }

    #[test]
    fn an_all_null_start_takes_the_first_values_seen() {
        let mut a = s(None, None, 5, 5);
        a.merge(&s(
            Some(Value::Bytes(b"b".to_vec())),
            Some(Value::Bytes(b"c".to_vec())),
            0,
            2,
        ));
        a.merge(&s(
            Some(Value::Bytes(b"a".to_vec())),
            Some(Value::Bytes(b"bb".to_vec())),
            0,
            2,
        ));
        assert_eq!(a.min, Some(Value::Bytes(b"a".to_vec())));
        assert_eq!(a.max, Some(Value::Bytes(b"c".to_vec())));
    }

    #[test]
    fn floats_order_like_array_format() {
        let mut a = s(Some(Value::Float(1.0)), Some(Value::Float(2.0)), 0, 2);
        a.merge(&s(
            Some(Value::Float(-0.5)),
            Some(Value::Float(f64::NAN)),
            0,
            2,
        ));
        assert_eq!(a.min, Some(Value::Float(-0.5)));
        assert!(matches!(a.max, Some(Value::Float(x)) if x.is_nan()));
    }

    #[test]
    fn fill_values_survive_the_trip_through_storage() {
        for f in [
            Value::Bool(true),
            Value::Int(-3),
            Value::UInt(7),
            Value::Float(0.5),
            Value::String("x".into()),
            Value::Timestamp(Timestamp(9)),
        ] {
            assert_eq!(fill_to_stored(&f).map(|s| fill_from_stored(&s)), Some(f));
        }
        assert_eq!(fill_to_stored(&Value::Bytes(vec![1])), None);
    }
}
