//! The value types of the segment API: fill values and statistics (and
//! [`Timestamp`], defined with the calendar in atlas-format).
//!
//! They hold what a segment stores, in types of our own, so that a change
//! of array-format does not change what callers see.

use std::cmp::Ordering;

pub use atlas_format::Timestamp;

/// What unwritten elements of an array read as. Integers are widened to
/// `i64`/`u64` and floats to `f64`; the element type decides how the value
/// is narrowed when it is applied.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub enum FillValue {
    /// A boolean (applies to unsigned integers as 0 or 1).
    Bool(bool),
    /// A signed integer.
    Int(i64),
    /// An unsigned integer.
    UInt(u64),
    /// A float.
    Float(f64),
    /// A string.
    String(String),
    /// A timestamp.
    Timestamp(Timestamp),
}

impl FillValue {
    /// The fill as an instant of a timestamp array: a timestamp, or an integer
    /// read as nanoseconds since the epoch (both apply to timestamp arrays);
    /// `None` for any other kind.
    pub fn timestamp(&self) -> Option<Timestamp> {
        match self {
            FillValue::Timestamp(t) => Some(*t),
            FillValue::Int(n) => Some(Timestamp(*n)),
            _ => None,
        }
    }
}

/// One bound of an array's statistics.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub enum Stat {
    /// Of a signed integer array.
    Int(i64),
    /// Of an unsigned integer array.
    UInt(u64),
    /// Of a float array.
    Float(f64),
    /// Of a timestamp array.
    Timestamp(Timestamp),
    /// Of a string or binary array, as raw bytes.
    Bytes(Vec<u8>),
}

impl Stat {
    /// Orders two bounds of one kind as the segment's statistics do: floats
    /// by `total_cmp` (a NaN sorts above every number), bytes
    /// lexicographically; `None` for two different kinds.
    pub fn compare(&self, other: &Stat) -> Option<Ordering> {
        match (self, other) {
            (Stat::Int(a), Stat::Int(b)) => Some(a.cmp(b)),
            (Stat::UInt(a), Stat::UInt(b)) => Some(a.cmp(b)),
            (Stat::Float(a), Stat::Float(b)) => Some(a.total_cmp(b)),
            (Stat::Bytes(a), Stat::Bytes(b)) => Some(a.cmp(b)),
            (Stat::Timestamp(a), Stat::Timestamp(b)) => Some(a.cmp(b)),
            _ => None,
        }
    }
}

/// Minimum, maximum, nulls and rows of one array (or of one array name folded
/// over many). `min`/`max` are `None` for a type with no order or when every
/// element is a null (equal to the fill value).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ArrayStats {
    /// Smallest non-null element (strings and binary as raw bytes).
    pub min: Option<Stat>,
    /// Largest non-null element.
    pub max: Option<Stat>,
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
fn pick(a: Option<Stat>, b: Option<Stat>, want: Ordering) -> Option<Stat> {
    match (a, b) {
        (None, x) | (x, None) => x,
        (Some(a), Some(b)) => match b.compare(&a) {
            Some(o) if o == want => Some(b),
            _ => Some(a),
        },
    }
}

pub(crate) fn fill_from_stored(fill: &array_format::FillValue) -> FillValue {
    use array_format::FillValue as F;
    match fill {
        F::Bool(b) => FillValue::Bool(*b),
        F::Int(n) => FillValue::Int(*n),
        F::UInt(n) => FillValue::UInt(*n),
        F::Float(x) => FillValue::Float(*x),
        F::String(s) => FillValue::String(s.clone()),
        F::TimestampNs(n) => FillValue::Timestamp(Timestamp(*n)),
    }
}

pub(crate) fn fill_to_stored(fill: &FillValue) -> array_format::FillValue {
    use array_format::FillValue as F;
    match fill {
        FillValue::Bool(b) => F::Bool(*b),
        FillValue::Int(n) => F::Int(*n),
        FillValue::UInt(n) => F::UInt(*n),
        FillValue::Float(x) => F::Float(*x),
        FillValue::String(s) => F::String(s.clone()),
        FillValue::Timestamp(t) => F::TimestampNs(t.0),
    }
}

/// One archived statistic as ours, read in place without deserialising.
fn stat_from_archived(v: &array_format::stats::ArchivedStatValue) -> Stat {
    use array_format::stats::ArchivedStatValue as S;
    match v {
        S::Int(n) => Stat::Int(n.to_native()),
        S::UInt(n) => Stat::UInt(n.to_native()),
        S::Float(x) => Stat::Float(x.to_native()),
        S::TimestampNs(n) => Stat::Timestamp(Timestamp(n.to_native())),
        S::Bytes(b) => Stat::Bytes(b.as_slice().to_vec()),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timestamp_array_reads_an_integer_fill_as_nanoseconds() {
        assert_eq!(
            FillValue::Timestamp(Timestamp(5)).timestamp(),
            Some(Timestamp(5))
        );
        assert_eq!(FillValue::Int(-7).timestamp(), Some(Timestamp(-7)));
        assert_eq!(FillValue::UInt(5).timestamp(), None);
        assert_eq!(FillValue::Float(5.0).timestamp(), None);
        assert_eq!(FillValue::String("5".into()).timestamp(), None);
    }

    fn s(min: Option<Stat>, max: Option<Stat>, nulls: u64, rows: u64) -> ArrayStats {
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
        let mut a = s(Some(Stat::Int(3)), Some(Stat::Int(9)), 1, 10);
        a.merge(&s(Some(Stat::Int(-2)), Some(Stat::Int(5)), 2, 4));
        assert_eq!(a, s(Some(Stat::Int(-2)), Some(Stat::Int(9)), 3, 14));
        a.merge(&s(None, None, 4, 4));
        assert_eq!(a, s(Some(Stat::Int(-2)), Some(Stat::Int(9)), 7, 18));
    }

    #[test]
    fn an_all_null_start_takes_the_first_values_seen() {
        let mut a = s(None, None, 5, 5);
        a.merge(&s(
            Some(Stat::Bytes(b"b".to_vec())),
            Some(Stat::Bytes(b"c".to_vec())),
            0,
            2,
        ));
        a.merge(&s(
            Some(Stat::Bytes(b"a".to_vec())),
            Some(Stat::Bytes(b"bb".to_vec())),
            0,
            2,
        ));
        assert_eq!(a.min, Some(Stat::Bytes(b"a".to_vec())));
        assert_eq!(a.max, Some(Stat::Bytes(b"c".to_vec())));
    }

    #[test]
    fn floats_order_like_array_format() {
        let mut a = s(Some(Stat::Float(1.0)), Some(Stat::Float(2.0)), 0, 2);
        a.merge(&s(
            Some(Stat::Float(-0.5)),
            Some(Stat::Float(f64::NAN)),
            0,
            2,
        ));
        assert_eq!(a.min, Some(Stat::Float(-0.5)));
        assert!(matches!(a.max, Some(Stat::Float(x)) if x.is_nan()));
    }

    #[test]
    fn fill_values_survive_the_trip_through_storage() {
        for f in [
            FillValue::Bool(true),
            FillValue::Int(-3),
            FillValue::UInt(7),
            FillValue::Float(0.5),
            FillValue::String("x".into()),
            FillValue::Timestamp(Timestamp(9)),
        ] {
            assert_eq!(fill_from_stored(&fill_to_stored(&f)), f);
        }
    }
}
