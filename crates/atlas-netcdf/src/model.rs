//! The in-memory dataset both mappings produce and the sink writes: arrays
//! with their dimensions, fill and values, and attributes.
//!
//! It knows nothing of NetCDF or of the Atlas writer, so other front ends (an
//! xarray dataset handed over from Python) can fill it and reuse the sink.
//! Values, fills and attributes are the facade's own types ([`ArrayData`],
//! [`Value`], [`Attr`]), so the sink hands them over without converting.

use atlas::{ArrayData, Attr, Value};

/// One array of a dataset.
#[derive(Debug, Clone, PartialEq)]
pub struct Array {
    /// Array name (valid for `atlas::validate_name`).
    pub name: String,
    /// One dimension name per axis of `values`.
    pub dims: Vec<String>,
    /// Stored chunk shape; `None` stores the whole array as one chunk.
    pub chunk_shape: Option<Vec<u64>>,
    /// Fill value, if any, in the variant the element type takes
    /// (`Int`/`UInt`/`Float` as the type is signed, unsigned or a float,
    /// `Timestamp`, `String`), and in its range.
    pub fill: Option<Value>,
    /// The elements in the dtype they will be stored as; their shape is the array's.
    pub values: ArrayData,
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
