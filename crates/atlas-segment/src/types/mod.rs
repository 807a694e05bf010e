//! The value types of the API, free of array-format: element types,
//! attribute values, fill values, timestamps, statistics and arrays whose
//! element type is known only at run time.

pub mod any_array;
pub mod attr;
pub mod element;
pub mod value;
