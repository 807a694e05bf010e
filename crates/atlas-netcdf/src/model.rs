//! The in-memory dataset both mappings produce and the sink writes: arrays
//! with their dtype, dimensions, shape, fill and values, and attributes.
//!
//! It knows nothing of NetCDF or of the Atlas writer, so other front ends (an
//! xarray dataset handed over from Python) can fill it and reuse the sink.
//! Attributes are the facade's own [`Attr`], so the sink passes them through.

use atlas::Attr;

/// Element values of one array, row-major, in the dtype they will be stored as.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
#[allow(missing_docs)]
pub enum Values {
    Int8(Vec<i8>),
    Int16(Vec<i16>),
    Int32(Vec<i32>),
    Int64(Vec<i64>),
    UInt8(Vec<u8>),
    UInt16(Vec<u16>),
    UInt32(Vec<u32>),
    UInt64(Vec<u64>),
    Float32(Vec<f32>),
    Float64(Vec<f64>),
    /// Nanoseconds since 1970-01-01T00:00:00 UTC; `i64::MIN` is NaT.
    TimestampNs(Vec<i64>),
    /// UTF-8 text.
    String(Vec<String>),
}

impl Values {
    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            Values::Int8(v) => v.len(),
            Values::Int16(v) => v.len(),
            Values::Int32(v) => v.len(),
            Values::Int64(v) => v.len(),
            Values::UInt8(v) => v.len(),
            Values::UInt16(v) => v.len(),
            Values::UInt32(v) => v.len(),
            Values::UInt64(v) => v.len(),
            Values::Float32(v) => v.len(),
            Values::Float64(v) => v.len(),
            Values::TimestampNs(v) => v.len(),
            Values::String(v) => v.len(),
        }
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The dtype name users see (`int8`, `float32`, `timestamp_ns`, `string`).
    pub fn dtype_name(&self) -> &'static str {
        match self {
            Values::Int8(_) => "int8",
            Values::Int16(_) => "int16",
            Values::Int32(_) => "int32",
            Values::Int64(_) => "int64",
            Values::UInt8(_) => "uint8",
            Values::UInt16(_) => "uint16",
            Values::UInt32(_) => "uint32",
            Values::UInt64(_) => "uint64",
            Values::Float32(_) => "float32",
            Values::Float64(_) => "float64",
            Values::TimestampNs(_) => "timestamp_ns",
            Values::String(_) => "string",
        }
    }
}

/// What unwritten or missing elements of an array read as.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Fill {
    /// A signed integer fill (for integer arrays).
    Int(i64),
    /// An unsigned integer fill (for unsigned arrays).
    UInt(u64),
    /// A float fill (NaN allowed).
    Float(f64),
    /// A timestamp fill in nanoseconds (`i64::MIN` is NaT).
    TimestampNs(i64),
    /// A string fill.
    String(String),
}

/// One array of a dataset.
#[derive(Debug, Clone, PartialEq)]
pub struct Array {
    /// Array name (valid for `atlas::validate_name`).
    pub name: String,
    /// One dimension name per axis.
    pub dims: Vec<String>,
    /// Length of each axis (empty for a scalar).
    pub shape: Vec<u64>,
    /// Stored chunk shape; `None` stores the whole array as one chunk.
    pub chunk_shape: Option<Vec<u64>>,
    /// Fill value, if any.
    pub fill: Option<Fill>,
    /// The elements, row-major; as many as the shape holds.
    pub values: Values,
    /// Attributes in order.
    pub attrs: Vec<(String, Attr)>,
}

/// One dataset: arrays and dataset-level attributes, in order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Dataset {
    /// Arrays in definition order.
    pub arrays: Vec<Array>,
    /// Dataset attributes in order.
    pub attrs: Vec<(String, Attr)>,
}
