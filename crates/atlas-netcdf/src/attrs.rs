//! NetCDF attribute values as each mapping stores them.
//!
//! NetCDF attributes are always vectors. `raw`: one value becomes a scalar of
//! its type, several a list of that type, text a string. `python`: what
//! atlas-python stores after netCDF4 and xarray hand it the value: one number
//! becomes a Python `int` or `float` (so `Int64` or `Float64`), text a string,
//! and anything else the `json:`-prefixed text of `json.dumps`.

use netcdf_reader::NcAttrValue;

use crate::model::AttrValue;
use crate::pyjson::{float_json, list_json, string_json};

fn one_or_list<T: Copy>(
    v: &[T],
    one: impl Fn(T) -> AttrValue,
    list: impl Fn(Vec<T>) -> AttrValue,
) -> AttrValue {
    match v {
        [x] => one(*x),
        _ => list(v.to_vec()),
    }
}

/// The attribute as stored, keeping its type; `None` for user-defined types.
pub(crate) fn raw(value: &NcAttrValue) -> Option<AttrValue> {
    Some(match value {
        NcAttrValue::Bytes(v) => one_or_list(v, AttrValue::Int8, AttrValue::Int8List),
        NcAttrValue::UBytes(v) => one_or_list(v, AttrValue::UInt8, AttrValue::UInt8List),
        NcAttrValue::Shorts(v) => one_or_list(v, AttrValue::Int16, AttrValue::Int16List),
        NcAttrValue::UShorts(v) => one_or_list(v, AttrValue::UInt16, AttrValue::UInt16List),
        NcAttrValue::Ints(v) => one_or_list(v, AttrValue::Int32, AttrValue::Int32List),
        NcAttrValue::UInts(v) => one_or_list(v, AttrValue::UInt32, AttrValue::UInt32List),
        NcAttrValue::Int64s(v) => one_or_list(v, AttrValue::Int64, AttrValue::Int64List),
        NcAttrValue::UInt64s(v) => one_or_list(v, AttrValue::UInt64, AttrValue::UInt64List),
        NcAttrValue::Floats(v) => one_or_list(v, AttrValue::Float32, AttrValue::Float32List),
        NcAttrValue::Doubles(v) => one_or_list(v, AttrValue::Float64, AttrValue::Float64List),
        NcAttrValue::Chars(s) => AttrValue::String(s.clone()),
        NcAttrValue::Strings(v) => match v.as_slice() {
            [s] => AttrValue::String(s.clone()),
            _ => AttrValue::StringList(v.clone()),
        },
        NcAttrValue::UserDefined { .. } => return None,
    })
}

fn ints<T: Copy + Into<i128>>(v: &[T]) -> AttrValue {
    match v {
        [x] => {
            let wide: i128 = (*x).into();
            match i64::try_from(wide) {
                Ok(n) => AttrValue::Int64(n),
                Err(_) => AttrValue::UInt64(u64::try_from(wide).unwrap_or(u64::MAX)),
            }
        }
        _ => AttrValue::String(format!(
            "json:{}",
            list_json(v, |x| {
                let wide: i128 = (*x).into();
                wide.to_string()
            })
        )),
    }
}

fn floats<T: Copy + Into<f64>>(v: &[T]) -> AttrValue {
    match v {
        [x] => AttrValue::Float64((*x).into()),
        _ => AttrValue::String(format!(
            "json:{}",
            list_json(v, |x| float_json((*x).into()))
        )),
    }
}

/// The attribute as atlas-python stores it; `None` for user-defined types.
pub(crate) fn python(value: &NcAttrValue) -> Option<AttrValue> {
    Some(match value {
        NcAttrValue::Bytes(v) => ints(v),
        NcAttrValue::UBytes(v) => ints(v),
        NcAttrValue::Shorts(v) => ints(v),
        NcAttrValue::UShorts(v) => ints(v),
        NcAttrValue::Ints(v) => ints(v),
        NcAttrValue::UInts(v) => ints(v),
        NcAttrValue::Int64s(v) => ints(v),
        NcAttrValue::UInt64s(v) => ints(v),
        NcAttrValue::Floats(v) => floats(v),
        NcAttrValue::Doubles(v) => floats(v),
        NcAttrValue::Chars(s) => AttrValue::String(s.clone()),
        NcAttrValue::Strings(v) => match v.as_slice() {
            [s] => AttrValue::String(s.clone()),
            _ => AttrValue::String(format!("json:{}", list_json(v, |s| string_json(s)))),
        },
        NcAttrValue::UserDefined { .. } => return None,
    })
}

/// The attribute's numbers as `f64` (the first one for scalars), for fills,
/// scale factors and offsets; `None` for text.
pub(crate) fn numbers(value: &NcAttrValue) -> Option<Vec<f64>> {
    value.as_f64_vec()
}

/// The attribute as text, if it is text.
pub(crate) fn text(value: &NcAttrValue) -> Option<String> {
    match value {
        NcAttrValue::Chars(s) => Some(s.clone()),
        NcAttrValue::Strings(v) if v.len() == 1 => v.first().cloned(),
        _ => None,
    }
}

/// The attribute's first value as an exact integer, if it is an integer attribute.
pub(crate) fn first_integer(value: &NcAttrValue) -> Option<i128> {
    match value {
        NcAttrValue::Bytes(v) => v.first().map(|&x| i128::from(x)),
        NcAttrValue::UBytes(v) => v.first().map(|&x| i128::from(x)),
        NcAttrValue::Shorts(v) => v.first().map(|&x| i128::from(x)),
        NcAttrValue::UShorts(v) => v.first().map(|&x| i128::from(x)),
        NcAttrValue::Ints(v) => v.first().map(|&x| i128::from(x)),
        NcAttrValue::UInts(v) => v.first().map(|&x| i128::from(x)),
        NcAttrValue::Int64s(v) => v.first().map(|&x| i128::from(x)),
        NcAttrValue::UInt64s(v) => v.first().map(|&x| i128::from(x)),
        _ => None,
    }
}
