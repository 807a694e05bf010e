//! The element types an array can hold.

use array_format::{ArrayElement, FillValue as StoredFill, StatValue, TimestampNs};
use atlas_format::DType;
use ndarray::ArrayD;
#[cfg(test)]
use ndarray::ArrayViewD;

use crate::types::value::{Timestamp, Value, fill_to_stored};
use crate::write::pack::{ChunkStats, PackError, chunk_stats, pack_variable};

/// A Rust type that can be an array element: the integers, `f32`, `f64`,
/// [`Timestamp`], `String` and `Vec<u8>` (binary). Sealed: these are the types
/// a segment stores.
pub trait Element:
    sealed::Sealed + Clone + PartialEq + std::fmt::Debug + Send + Sync + 'static
{
    /// The footer dtype of this element type.
    const ATLAS_DTYPE: DType;

    /// The fill value stored for `value`: `Int` for the signed integers,
    /// `UInt` for the unsigned ones, `Float` for `f32`/`f64`, `Timestamp`,
    /// `String`, `Bytes` for binary (which no array accepts as a fill:
    /// [`Element::accepts_fill`]).
    fn to_fill_value(value: Self) -> Value;

    /// Whether `fill` is a fill value that applies to this type.
    fn accepts_fill(fill: &Value) -> bool;

    /// The element unwritten positions read as under `fill` (zero or empty without one).
    fn fill_element(fill: Option<&Value>) -> Self;

    /// Bytes of payload this element adds to a variable-length chunk (0 for
    /// fixed-size types). Segments address that payload with `u32` offsets,
    /// so a writer must keep one chunk's total below `u32::MAX`.
    fn payload_len(&self) -> usize {
        0
    }
}

pub(crate) mod sealed {
    use super::*;

    /// How an element type meets array-format: the type it stores as, and the
    /// conversions (identities except for [`Timestamp`]).
    pub trait Sealed: Sized {
        /// array-format's element type.
        type Stored: ArrayElement;
        /// An array read back, as this type.
        fn from_stored(a: ArrayD<Self::Stored>) -> ArrayD<Self>;
        /// Calls `f` with `view` as array-format's type (the tests write the
        /// same arrays through array-format's own writer).
        #[cfg(test)]
        fn with_stored<R>(
            view: ArrayViewD<'_, Self>,
            f: impl FnOnce(ArrayViewD<'_, Self::Stored>) -> R,
        ) -> R;
        /// Appends `values`, one chunk, to `out` encoded as array-format
        /// encodes them, and returns their statistics as it computes them
        /// (nulls counted against `fill` converted to this type).
        fn pack(
            values: &[Self],
            fill: Option<&StoredFill>,
            out: &mut Vec<u8>,
        ) -> Result<ChunkStats, PackError>;
    }
}

/// A fixed-width chunk: the values' bytes in native order (what
/// array-format copies), and their statistics.
macro_rules! pack_fixed {
    ($values:ident, $out:ident, $is_fill:expr, $lt:expr, $stat:expr) => {{
        $out.reserve(std::mem::size_of_val($values));
        for v in $values {
            $out.extend_from_slice(&v.to_ne_bytes());
        }
        Ok(chunk_stats($values, $is_fill, $lt, $stat))
    }};
}

macro_rules! same_stored {
    ($($ty:ty => $pack:ident),* $(,)?) => {$(
        impl sealed::Sealed for $ty {
            type Stored = $ty;
            fn from_stored(a: ArrayD<Self>) -> ArrayD<Self> {
                a
            }
            #[cfg(test)]
            fn with_stored<R>(view: ArrayViewD<'_, Self>, f: impl FnOnce(ArrayViewD<'_, Self>) -> R) -> R {
                f(view)
            }
            fn pack(
                values: &[Self],
                fill: Option<&StoredFill>,
                out: &mut Vec<u8>,
            ) -> Result<ChunkStats, PackError> {
                same_stored!(@$pack $ty, values, fill, out)
            }
        }
    )*};
    (@signed $ty:ty, $values:ident, $fill:ident, $out:ident) => {
        same_stored!(@int $ty, Int, i64, $values, $fill, $out)
    };
    (@unsigned $ty:ty, $values:ident, $fill:ident, $out:ident) => {
        same_stored!(@int $ty, UInt, u64, $values, $fill, $out)
    };
    // Integers: a fill given as `Int` or `UInt`, converted with `as`.
    (@int $ty:ty, $stat:ident, $wide:ty, $values:ident, $fill:ident, $out:ident) => {{
        let fill = match $fill {
            Some(StoredFill::Int(v)) => Some(*v as $ty),
            Some(StoredFill::UInt(v)) => Some(*v as $ty),
            _ => None,
        };
        pack_fixed!(
            $values,
            $out,
            |v: $ty| fill == Some(v),
            |a: $ty, b: $ty| a < b,
            |v: $ty| StatValue::$stat(<$wide>::from(v))
        )
    }};
    // Floats: only a `Float` fill; a NaN fill matches every NaN.
    (@float $ty:ty, $values:ident, $fill:ident, $out:ident) => {{
        let fill: Option<$ty> = match $fill {
            Some(StoredFill::Float(v)) => Some(*v as $ty),
            _ => None,
        };
        pack_fixed!(
            $values,
            $out,
            |v: $ty| fill.is_some_and(|f| if f.is_nan() { v.is_nan() } else { v == f }),
            |a: $ty, b: $ty| a.total_cmp(&b).is_lt(),
            |v: $ty| StatValue::Float(f64::from(v))
        )
    }};
    (@variable $ty:ty, $values:ident, $fill:ident, $out:ident) => {{
        let fill = match $fill {
            Some(StoredFill::String(s)) => Some(s.as_bytes()),
            _ => None,
        };
        pack_variable($values.iter().map(|v| AsRef::<[u8]>::as_ref(v)), fill, $out)
    }};
}

same_stored!(
    i8 => signed,
    i16 => signed,
    i32 => signed,
    i64 => signed,
    u8 => unsigned,
    u16 => unsigned,
    u32 => unsigned,
    u64 => unsigned,
    f32 => float,
    f64 => float,
    String => variable,
    Vec<u8> => variable,
);

macro_rules! elements {
    ($($ty:ty => $dtype:ident, $fill:ident as $wide:ty, [$($ok:ident),*]);* $(;)?) => {
        $(
            impl Element for $ty {
                const ATLAS_DTYPE: DType = DType::$dtype;

                fn to_fill_value(value: Self) -> Value {
                    Value::$fill(<$wide>::from(value))
                }

                fn accepts_fill(fill: &Value) -> bool {
                    matches!(fill, $(Value::$ok(_))|*)
                }

                fn fill_element(fill: Option<&Value>) -> Self {
                    <$ty as ArrayElement>::fill_element(fill.and_then(fill_to_stored).as_ref())
                }
            }
        )*
    };
}

elements!(
    i8 => Int8, Int as i64, [Int, UInt, Float];
    i16 => Int16, Int as i64, [Int, UInt, Float];
    i32 => Int32, Int as i64, [Int, UInt, Float];
    i64 => Int64, Int as i64, [Int, UInt, Float];
    u8 => UInt8, UInt as u64, [UInt, Int, Float, Bool];
    u16 => UInt16, UInt as u64, [UInt, Int, Float, Bool];
    u32 => UInt32, UInt as u64, [UInt, Int, Float, Bool];
    u64 => UInt64, UInt as u64, [UInt, Int, Float, Bool];
    f32 => Float32, Float as f64, [Float, Int, UInt];
    f64 => Float64, Float as f64, [Float, Int, UInt];
);

impl sealed::Sealed for Timestamp {
    type Stored = TimestampNs;
    fn from_stored(a: ArrayD<TimestampNs>) -> ArrayD<Self> {
        a.mapv(|t| Timestamp(t.0))
    }
    #[cfg(test)]
    fn with_stored<R>(
        view: ArrayViewD<'_, Self>,
        f: impl FnOnce(ArrayViewD<'_, TimestampNs>) -> R,
    ) -> R {
        let stored = view.mapv(|t| TimestampNs(t.0));
        f(stored.view())
    }
    fn pack(
        values: &[Self],
        fill: Option<&StoredFill>,
        out: &mut Vec<u8>,
    ) -> Result<ChunkStats, PackError> {
        out.reserve(std::mem::size_of_val(values));
        for v in values {
            out.extend_from_slice(&v.0.to_ne_bytes());
        }
        let fill = match fill {
            Some(StoredFill::TimestampNs(v) | StoredFill::Int(v)) => Some(*v),
            _ => None,
        };
        Ok(chunk_stats(
            values,
            |v| fill == Some(v.0),
            |a, b| a.0 < b.0,
            |v| StatValue::TimestampNs(v.0),
        ))
    }
}

impl Element for Timestamp {
    const ATLAS_DTYPE: DType = DType::TimestampNs;

    fn to_fill_value(value: Self) -> Value {
        Value::Timestamp(value)
    }

    fn accepts_fill(fill: &Value) -> bool {
        fill.timestamp().is_some()
    }

    fn fill_element(fill: Option<&Value>) -> Self {
        Timestamp(TimestampNs::fill_element(fill.and_then(fill_to_stored).as_ref()).0)
    }
}

impl Element for String {
    const ATLAS_DTYPE: DType = DType::String;

    fn to_fill_value(value: Self) -> Value {
        Value::String(value)
    }

    fn accepts_fill(fill: &Value) -> bool {
        matches!(fill, Value::String(_))
    }

    fn fill_element(fill: Option<&Value>) -> Self {
        <String as ArrayElement>::fill_element(fill.and_then(fill_to_stored).as_ref())
    }

    fn payload_len(&self) -> usize {
        self.len()
    }
}

impl Element for Vec<u8> {
    const ATLAS_DTYPE: DType = DType::Binary;

    fn to_fill_value(value: Self) -> Value {
        Value::Bytes(value)
    }

    fn accepts_fill(_fill: &Value) -> bool {
        false
    }

    fn fill_element(fill: Option<&Value>) -> Self {
        <Vec<u8> as ArrayElement>::fill_element(fill.and_then(fill_to_stored).as_ref())
    }

    fn payload_len(&self) -> usize {
        self.len()
    }
}

#[cfg(test)]
mod tests {
    use super::{Element, Timestamp, Value};

    #[test]
    fn fill_elements_follow_the_fill_value() {
        assert_eq!(i16::fill_element(Some(&Value::Int(-9))), -9);
        assert_eq!(f32::fill_element(Some(&Value::Float(0.5))), 0.5);
        assert_eq!(
            Timestamp::fill_element(Some(&Value::Timestamp(Timestamp(4)))),
            Timestamp(4)
        );
        assert_eq!(u8::fill_element(None), 0);
        assert_eq!(String::fill_element(None), "");
    }
}
