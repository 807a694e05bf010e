//! The element types an array can hold, and the mapping between the footer's
//! dtypes and array-format's.

use array_format::{ArrayElement, FillValue, TimestampNs};
use atlas_format::DType;

/// A Rust type that can be an array element: the integers, `f32`, `f64`,
/// [`TimestampNs`], `String` and `Vec<u8>` (binary). Sealed: these are the types
/// array-format 0.15 stores.
pub trait Element: ArrayElement + sealed::Sealed {
    /// The footer dtype of this element type.
    const ATLAS_DTYPE: DType;

    /// The fill value array-format stores for `value`: `Int` for the signed
    /// integers, `UInt` for the unsigned ones, `Float` for `f32`/`f64`,
    /// `TimestampNs`, `String`. `None` for binary, which array-format cannot
    /// give a fill value.
    fn to_fill_value(value: Self) -> Option<FillValue>;

    /// Whether `fill` is a fill value array-format applies to this type
    /// (the variants its `fill_element` and statistics understand).
    fn accepts_fill(fill: &FillValue) -> bool;

    /// Bytes of payload this element adds to a variable-length chunk (0 for
    /// fixed-size types). array-format addresses that payload with `u32`
    /// offsets, so a writer must keep one chunk's total below `u32::MAX`.
    fn payload_len(&self) -> usize {
        0
    }
}

mod sealed {
    pub trait Sealed {}
}

macro_rules! elements {
    ($($ty:ty => $dtype:ident, $fill:ident as $wide:ty, [$($ok:ident),*]);* $(;)?) => {
        $(
            impl sealed::Sealed for $ty {}
            impl Element for $ty {
                const ATLAS_DTYPE: DType = DType::$dtype;

                fn to_fill_value(value: Self) -> Option<FillValue> {
                    Some(FillValue::$fill(<$wide>::from(value)))
                }

                fn accepts_fill(fill: &FillValue) -> bool {
                    matches!(fill, $(FillValue::$ok(_))|*)
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

impl sealed::Sealed for TimestampNs {}
impl Element for TimestampNs {
    const ATLAS_DTYPE: DType = DType::TimestampNs;

    fn to_fill_value(value: Self) -> Option<FillValue> {
        Some(FillValue::TimestampNs(value.0))
    }

    fn accepts_fill(fill: &FillValue) -> bool {
        matches!(fill, FillValue::TimestampNs(_) | FillValue::Int(_))
    }
}

impl sealed::Sealed for String {}
impl Element for String {
    const ATLAS_DTYPE: DType = DType::String;

    fn to_fill_value(value: Self) -> Option<FillValue> {
        Some(FillValue::String(value))
    }

    fn accepts_fill(fill: &FillValue) -> bool {
        matches!(fill, FillValue::String(_))
    }

    fn payload_len(&self) -> usize {
        self.len()
    }
}

impl sealed::Sealed for Vec<u8> {}
impl Element for Vec<u8> {
    const ATLAS_DTYPE: DType = DType::Binary;

    fn to_fill_value(_value: Self) -> Option<FillValue> {
        None
    }

    fn accepts_fill(_fill: &FillValue) -> bool {
        false
    }

    fn payload_len(&self) -> usize {
        self.len()
    }
}

/// The footer dtype of an array-format element type.
pub fn from_array_dtype(dtype: &array_format::DType) -> DType {
    use array_format::DType as A;
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
            child: Box::new(from_array_dtype(child)),
            size: *size,
        },
        A::List { child } => DType::List {
            child: Box::new(from_array_dtype(child)),
        },
    }
}
