//! Arrays whose element type is known only at run time.

use atlas_format::DType;
use ndarray::ArrayD;

use crate::types::value::{Timestamp, Value};

/// The elements of an array of any readable type: one variant per element
/// type, named as the type's [`DType`]. Exhaustive on purpose, so callers can
/// dispatch on it ([`for_each_array_data!`](crate::for_each_array_data)); a new
/// element type is a breaking change either way.
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)]
#[non_exhaustive]
pub enum ArrayData {
    Int8(ArrayD<i8>),
    Int16(ArrayD<i16>),
    Int32(ArrayD<i32>),
    Int64(ArrayD<i64>),
    UInt8(ArrayD<u8>),
    UInt16(ArrayD<u16>),
    UInt32(ArrayD<u32>),
    UInt64(ArrayD<u64>),
    Float32(ArrayD<f32>),
    Float64(ArrayD<f64>),
    Timestamp(ArrayD<Timestamp>),
    String(ArrayD<String>),
    Binary(ArrayD<Vec<u8>>),
}

/// Runs `$body` with `$a` bound to the array inside any [`ArrayData`] variant.
///
/// [`ArrayData`] is `#[non_exhaustive]`, so outside this crate give the arm
/// for variants a later release adds: `for_each_array_data!(d, a => a.len(), _ => 0)`.
#[macro_export]
macro_rules! for_each_array_data {
    // One arm per variant, then `$rest`: the variant list written once.
    (@arms $data:expr, $a:ident => $body:expr, { $($rest:tt)* }) => {
        match $data {
            $crate::ArrayData::Int8($a) => $body,
            $crate::ArrayData::Int16($a) => $body,
            $crate::ArrayData::Int32($a) => $body,
            $crate::ArrayData::Int64($a) => $body,
            $crate::ArrayData::UInt8($a) => $body,
            $crate::ArrayData::UInt16($a) => $body,
            $crate::ArrayData::UInt32($a) => $body,
            $crate::ArrayData::UInt64($a) => $body,
            $crate::ArrayData::Float32($a) => $body,
            $crate::ArrayData::Float64($a) => $body,
            $crate::ArrayData::Timestamp($a) => $body,
            $crate::ArrayData::String($a) => $body,
            $crate::ArrayData::Binary($a) => $body,
            $($rest)*
        }
    };
    ($data:expr, $a:ident => $body:expr, _ => $other:expr) => {
        $crate::for_each_array_data!(@arms $data, $a => $body, {
            #[allow(unreachable_patterns)]
            _ => $other,
        })
    };
    ($data:expr, $a:ident => $body:expr) => {
        $crate::for_each_array_data!(@arms $data, $a => $body, {})
    };
}

impl ArrayData {
    /// The element type.
    pub fn dtype(&self) -> DType {
        match self {
            ArrayData::Int8(_) => DType::Int8,
            ArrayData::Int16(_) => DType::Int16,
            ArrayData::Int32(_) => DType::Int32,
            ArrayData::Int64(_) => DType::Int64,
            ArrayData::UInt8(_) => DType::UInt8,
            ArrayData::UInt16(_) => DType::UInt16,
            ArrayData::UInt32(_) => DType::UInt32,
            ArrayData::UInt64(_) => DType::UInt64,
            ArrayData::Float32(_) => DType::Float32,
            ArrayData::Float64(_) => DType::Float64,
            ArrayData::Timestamp(_) => DType::TimestampNs,
            ArrayData::String(_) => DType::String,
            ArrayData::Binary(_) => DType::Binary,
        }
    }

    /// Length of each axis.
    pub fn shape(&self) -> &[usize] {
        for_each_array_data!(self, a => a.shape())
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        for_each_array_data!(self, a => a.len())
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The same data with its shape changed to `shape` (row-major); `None`
    /// if `shape` holds another number of elements.
    pub fn into_shape(self, shape: &[usize]) -> Option<ArrayData> {
        macro_rules! reshape {
            ($($v:ident),*) => {
                match self {
                    $(ArrayData::$v(a) => a.into_shape_with_order(ndarray::IxDyn(shape)).ok().map(ArrayData::$v),)*
                }
            };
        }
        reshape!(
            Int8, Int16, Int32, Int64, UInt8, UInt16, UInt32, UInt64, Float32, Float64, Timestamp,
            String, Binary
        )
    }
}

/// An array read without naming its element type: the data, plus what a
/// caller needs to show it (fill value and dimension names).
#[derive(Debug, Clone, PartialEq)]
pub struct AnyArray {
    data: ArrayData,
    fill: Option<Value>,
    dimension_names: Vec<String>,
}

impl AnyArray {
    /// Bundles `data` with its array's fill value and the names of its axes.
    pub fn new(data: ArrayData, fill: Option<Value>, dimension_names: Vec<String>) -> Self {
        Self {
            data,
            fill,
            dimension_names,
        }
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.data.dtype()
    }

    /// Length of each axis of the data.
    pub fn shape(&self) -> &[usize] {
        self.data.shape()
    }

    /// What unwritten elements read as; `None` means zero (or empty).
    pub fn fill(&self) -> Option<&Value> {
        self.fill.as_ref()
    }

    /// The name of each axis of the data.
    pub fn dimension_names(&self) -> &[String] {
        &self.dimension_names
    }

    /// The elements.
    pub fn data(&self) -> &ArrayData {
        &self.data
    }

    /// The elements, owned.
    pub fn into_data(self) -> ArrayData {
        self.data
    }
}
