//! Attribute values: what a user sets on a dataset or an array and reads back.

use array_format::{AttributeValue, EcoString};
use atlas_format::{DType, Value};

/// An attribute value. Every variant reads back as itself (a `UInt16` stays a
/// `UInt16`). There is no timestamp variant: array-format stores none, so store
/// nanoseconds as [`Attr::Int64`] and name the unit in a second attribute.
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub enum Attr {
    Bool(bool),
    Int8(i8),
    Int16(i16),
    Int32(i32),
    Int64(i64),
    UInt8(u8),
    UInt16(u16),
    UInt32(u32),
    UInt64(u64),
    Float32(f32),
    Float64(f64),
    String(String),
    Binary(Vec<u8>),
    BoolList(Vec<bool>),
    Int8List(Vec<i8>),
    Int16List(Vec<i16>),
    Int32List(Vec<i32>),
    Int64List(Vec<i64>),
    UInt8List(Vec<u8>),
    UInt16List(Vec<u16>),
    UInt32List(Vec<u32>),
    UInt64List(Vec<u64>),
    Float32List(Vec<f32>),
    Float64List(Vec<f64>),
    StringList(Vec<String>),
    BinaryList(Vec<Vec<u8>>),
}

macro_rules! attr_mapping {
    (scalars: $($s:ident),*; lists: $($l:ident => $child:ident),*) => {
        impl Attr {
            /// Rebuilds a value from what a segment stores; the stored tag alone decides the variant.
            #[cfg(test)]
            pub(crate) fn from_stored(value: &AttributeValue) -> Self {
                match value {
                    $(AttributeValue::$s(v) => Attr::$s(*v),)*
                    AttributeValue::String(v) => Attr::String(v.to_string()),
                    AttributeValue::Binary(v) => Attr::Binary(v.to_vec()),
                    $(AttributeValue::$l(v) => Attr::$l(v.to_vec()),)*
                    AttributeValue::StringList(v) => Attr::StringList(v.iter().map(|s| s.to_string()).collect()),
                    AttributeValue::BinaryList(v) => Attr::BinaryList(v.iter().map(|b| b.to_vec()).collect()),
                }
            }

            /// Rebuilds a value from a footer's value pool entry, `string`
            /// resolving string pool indices; `None` when one does not resolve.
            pub(crate) fn from_disk(
                value: crate::footer::schema::DiskValue,
                mut string: impl FnMut(u32) -> Option<String>,
            ) -> Option<Self> {
                use crate::footer::schema::DiskValue as D;
                Some(match value {
                    $(D::$s(v) => Attr::$s(v),)*
                    D::String(i) => Attr::String(string(i)?),
                    D::Binary(v) => Attr::Binary(v.into_vec()),
                    $(D::$l(v) => Attr::$l(v.into_vec()),)*
                    D::StringList(v) => Attr::StringList(v.iter().map(|&i| string(i)).collect::<Option<_>>()?),
                    D::BinaryList(v) => Attr::BinaryList(v.into_vec().into_iter().map(<[u8]>::into_vec).collect()),
                })
            }

            /// Bytes the value takes on the heap (for memory budgets).
            pub(crate) fn heap_bytes(&self) -> usize {
                match self {
                    $(Attr::$s(_) => 0,)*
                    Attr::String(v) => v.len(),
                    Attr::Binary(v) => v.len(),
                    $(Attr::$l(v) => std::mem::size_of_val(v.as_slice()),)*
                    Attr::StringList(v) => v.iter().map(|s| s.len().saturating_add(std::mem::size_of::<String>())).sum(),
                    Attr::BinaryList(v) => v.iter().map(|b| b.len().saturating_add(std::mem::size_of::<Vec<u8>>())).sum(),
                }
            }

            /// The value as a segment stores it.
            pub(crate) fn to_stored(&self) -> AttributeValue {
                match self {
                    $(Attr::$s(v) => AttributeValue::$s(*v),)*
                    Attr::String(v) => AttributeValue::String(EcoString::from(v.as_str())),
                    Attr::Binary(v) => AttributeValue::Binary(v.clone().into_boxed_slice()),
                    $(Attr::$l(v) => AttributeValue::$l(v.clone().into_boxed_slice()),)*
                    Attr::StringList(v) => AttributeValue::StringList(v.iter().map(|s| EcoString::from(s.as_str())).collect()),
                    Attr::BinaryList(v) => AttributeValue::BinaryList(v.iter().map(|b| b.clone().into_boxed_slice()).collect()),
                }
            }

            /// The type the footer's schema records for this value (`list<T>` for lists).
            pub fn dtype(&self) -> DType {
                match self {
                    $(Attr::$s(_) => DType::$s,)*
                    Attr::String(_) => DType::String,
                    Attr::Binary(_) => DType::Binary,
                    $(Attr::$l(_) => DType::List { child: Box::new(DType::$child) },)*
                    Attr::StringList(_) => DType::List { child: Box::new(DType::String) },
                    Attr::BinaryList(_) => DType::List { child: Box::new(DType::Binary) },
                }
            }
        }
    };
}

attr_mapping!(
    scalars: Bool, Int8, Int16, Int32, Int64, UInt8, UInt16, UInt32, UInt64, Float32, Float64;
    lists: BoolList => Bool, Int8List => Int8, Int16List => Int16, Int32List => Int32,
        Int64List => Int64, UInt8List => UInt8, UInt16List => UInt16, UInt32List => UInt32,
        UInt64List => UInt64, Float32List => Float32, Float64List => Float64
);

impl Attr {
    /// A single-valued attribute as a [`Value`] (integers widened to `i64` or
    /// `u64`, floats to `f64`, binary as bytes); `None` for a list.
    pub fn value(&self) -> Option<Value> {
        Some(match self {
            Attr::Bool(v) => Value::Bool(*v),
            Attr::Int8(v) => Value::Int(i64::from(*v)),
            Attr::Int16(v) => Value::Int(i64::from(*v)),
            Attr::Int32(v) => Value::Int(i64::from(*v)),
            Attr::Int64(v) => Value::Int(*v),
            Attr::UInt8(v) => Value::UInt(u64::from(*v)),
            Attr::UInt16(v) => Value::UInt(u64::from(*v)),
            Attr::UInt32(v) => Value::UInt(u64::from(*v)),
            Attr::UInt64(v) => Value::UInt(*v),
            Attr::Float32(v) => Value::Float(f64::from(*v)),
            Attr::Float64(v) => Value::Float(*v),
            Attr::String(v) => Value::String(v.clone()),
            Attr::Binary(v) => Value::Bytes(v.clone()),
            _ => return None,
        })
    }
}

impl From<&str> for Attr {
    fn from(v: &str) -> Self {
        Attr::String(v.to_owned())
    }
}

impl From<String> for Attr {
    fn from(v: String) -> Self {
        Attr::String(v)
    }
}

macro_rules! scalar_from {
    ($($ty:ty => $variant:ident),* $(,)?) => {
        $(
            impl From<$ty> for Attr {
                fn from(v: $ty) -> Self {
                    Attr::$variant(v)
                }
            }
        )*
    };
}

scalar_from!(
    bool => Bool, i8 => Int8, i16 => Int16, i32 => Int32, i64 => Int64,
    u8 => UInt8, u16 => UInt16, u32 => UInt32, u64 => UInt64, f32 => Float32, f64 => Float64,
);
