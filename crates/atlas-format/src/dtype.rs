//! Element and attribute types as the footer stores them.

use serde::{Deserialize, Serialize};

/// The type of an array's elements or of an attribute's value.
///
/// On the wire an externally tagged enum: a kind without fields is a bare
/// snake_case string (`"u_int8"`, `"timestamp_nanoseconds"`), a kind with
/// fields a one-key map to the array of its fields.
/// Exhaustive on purpose: the v8 format text fixes this set, so a new variant
/// would be a new format version, not a minor release.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DType {
    /// `true` / `false`.
    Bool,
    /// Signed 8-bit integer.
    Int8,
    /// Signed 16-bit integer.
    Int16,
    /// Signed 32-bit integer.
    Int32,
    /// Signed 64-bit integer.
    Int64,
    /// Unsigned 8-bit integer.
    UInt8,
    /// Unsigned 16-bit integer.
    UInt16,
    /// Unsigned 32-bit integer.
    UInt32,
    /// Unsigned 64-bit integer.
    UInt64,
    /// IEEE 754 single precision.
    Float32,
    /// IEEE 754 double precision.
    Float64,
    /// UTF-8 text of any length.
    String,
    /// Bytes of any length.
    Binary,
    /// Nanoseconds since the Unix epoch, as i64.
    #[serde(rename = "timestamp_nanoseconds")]
    TimestampNs,
    /// A list of exactly `size` values of `child`.
    FixedSizeList {
        /// Element type.
        child: Box<DType>,
        /// Number of elements.
        size: u32,
    },
    /// A list of any length of `child` (list attributes use this).
    List {
        /// Element type.
        child: Box<DType>,
    },
}

impl DType {
    /// The name users see (`float32`, `uint8`, `timestamp_ns`, `list<string>`).
    pub fn display_name(&self) -> String {
        match self {
            DType::Bool => "bool".into(),
            DType::Int8 => "int8".into(),
            DType::Int16 => "int16".into(),
            DType::Int32 => "int32".into(),
            DType::Int64 => "int64".into(),
            DType::UInt8 => "uint8".into(),
            DType::UInt16 => "uint16".into(),
            DType::UInt32 => "uint32".into(),
            DType::UInt64 => "uint64".into(),
            DType::Float32 => "float32".into(),
            DType::Float64 => "float64".into(),
            DType::String => "string".into(),
            DType::Binary => "binary".into(),
            DType::TimestampNs => "timestamp_ns".into(),
            DType::FixedSizeList { child, size } => {
                format!("fixed_size_list<{}; {size}>", child.display_name())
            }
            DType::List { child } => format!("list<{}>", child.display_name()),
        }
    }

    /// How deeply lists nest inside this type (0 for a scalar).
    pub fn depth(&self) -> usize {
        match self {
            DType::FixedSizeList { child, .. } | DType::List { child } => {
                child.depth().saturating_add(1)
            }
            _ => 0,
        }
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.display_name())
    }
}
