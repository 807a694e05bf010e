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

/// Text that names no [`DType`]: what [`DType::from_str`] refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown dtype {text:?} (expected a name such as float32, uint8, timestamp_ns, list<string> or fixed_size_list<int16; 3>)"
)]
pub struct ParseDTypeError {
    /// The text as given.
    pub text: String,
}

/// The type `name` denotes: the inverse of [`DType::display_name`].
fn parse_name(name: &str) -> Option<DType> {
    Some(match name {
        "bool" => DType::Bool,
        "int8" => DType::Int8,
        "int16" => DType::Int16,
        "int32" => DType::Int32,
        "int64" => DType::Int64,
        "uint8" => DType::UInt8,
        "uint16" => DType::UInt16,
        "uint32" => DType::UInt32,
        "uint64" => DType::UInt64,
        "float32" => DType::Float32,
        "float64" => DType::Float64,
        "string" => DType::String,
        "binary" => DType::Binary,
        "timestamp_ns" => DType::TimestampNs,
        _ => {
            if let Some(inner) = name.strip_prefix("list<").and_then(|r| r.strip_suffix('>')) {
                return Some(DType::List {
                    child: Box::new(parse_name(inner)?),
                });
            }
            let inner = name
                .strip_prefix("fixed_size_list<")
                .and_then(|r| r.strip_suffix('>'))?;
            let (child, size) = inner.rsplit_once("; ")?;
            if !size.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            DType::FixedSizeList {
                child: Box::new(parse_name(child)?),
                size: size.parse().ok()?,
            }
        }
    })
}

impl std::str::FromStr for DType {
    type Err = ParseDTypeError;

    /// Reads the name users see ([`DType::display_name`]): `float32`,
    /// `timestamp_ns`, `list<string>`, `fixed_size_list<int16; 3>`.
    ///
    /// # Errors
    /// [`ParseDTypeError`] naming the text when it names no type.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        parse_name(text).ok_or_else(|| ParseDTypeError {
            text: text.to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_kind() -> Vec<DType> {
        let scalars = vec![
            DType::Bool,
            DType::Int8,
            DType::Int16,
            DType::Int32,
            DType::Int64,
            DType::UInt8,
            DType::UInt16,
            DType::UInt32,
            DType::UInt64,
            DType::Float32,
            DType::Float64,
            DType::String,
            DType::Binary,
            DType::TimestampNs,
        ];
        let mut all = scalars.clone();
        for s in scalars {
            all.push(DType::List {
                child: Box::new(s.clone()),
            });
            all.push(DType::FixedSizeList {
                child: Box::new(DType::List { child: Box::new(s) }),
                size: 3,
            });
        }
        all
    }

    #[test]
    fn every_dtype_name_parses_back_to_its_dtype() {
        for dtype in every_kind() {
            assert_eq!(
                dtype.to_string().parse::<DType>(),
                Ok(dtype.clone()),
                "{dtype}"
            );
        }
        assert_eq!(
            "fixed_size_list<float32; 4294967295>".parse::<DType>(),
            Ok(DType::FixedSizeList {
                child: Box::new(DType::Float32),
                size: u32::MAX
            })
        );
    }

    #[test]
    fn an_unknown_dtype_name_is_refused_naming_the_text() {
        for bad in [
            "",
            "float",
            "Float32",
            " int8",
            "u_int8",
            "timestamp_nanoseconds",
            "list<>",
            "list<int8",
            "list<chars>",
            "fixed_size_list<int8>",
            "fixed_size_list<int8; -1>",
            "fixed_size_list<int8; +1>",
            "fixed_size_list<int8; 4294967296>",
        ] {
            assert_eq!(
                bad.parse::<DType>(),
                Err(ParseDTypeError {
                    text: bad.to_owned()
                }),
                "{bad}"
            );
        }
    }
}
