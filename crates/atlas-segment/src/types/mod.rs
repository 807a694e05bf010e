//! The value types of the API: element types, attribute values, fill
//! values, timestamps, statistics and arrays whose element type is known
//! only at run time. They are this crate's own types; the conversions to and
//! from array-format's stay private here.

pub mod any_array;
pub mod attr;
pub mod element;
pub mod value;
