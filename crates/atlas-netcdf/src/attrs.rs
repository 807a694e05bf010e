//! NetCDF attribute values as each mapping stores them.
//!
//! NetCDF attributes are always vectors. `raw`: one value becomes a scalar of
//! its type, several a list of that type, text a string. `python`: what
//! atlas-python stores after netCDF4 and xarray hand it the value: one number
//! becomes a Python `int` or `float` (so `Int64` or `Float64`), text a string,
//! and anything else the `json:`-prefixed text of `json.dumps`.
//! Text with no element (a string attribute of length zero, as HDF5 can hold
//! an empty attribute) is the empty string in both, as netCDF4 and xarray give it.

use atlas::Attr;

use crate::stored::StoredAttrValue;

use crate::pyjson::{float_json, list_json, string_json};

fn one_or_list<T: Copy>(v: &[T], one: impl Fn(T) -> Attr, list: impl Fn(Vec<T>) -> Attr) -> Attr {
    match v {
        [x] => one(*x),
        _ => list(v.to_vec()),
    }
}

/// The attribute as stored, keeping its type; `None` for types Atlas cannot store.
pub(crate) fn raw(value: &StoredAttrValue) -> Option<Attr> {
    Some(match value {
        StoredAttrValue::Int8(v) => one_or_list(v, Attr::Int8, Attr::Int8List),
        StoredAttrValue::UInt8(v) => one_or_list(v, Attr::UInt8, Attr::UInt8List),
        StoredAttrValue::Int16(v) => one_or_list(v, Attr::Int16, Attr::Int16List),
        StoredAttrValue::UInt16(v) => one_or_list(v, Attr::UInt16, Attr::UInt16List),
        StoredAttrValue::Int32(v) => one_or_list(v, Attr::Int32, Attr::Int32List),
        StoredAttrValue::UInt32(v) => one_or_list(v, Attr::UInt32, Attr::UInt32List),
        StoredAttrValue::Int64(v) => one_or_list(v, Attr::Int64, Attr::Int64List),
        StoredAttrValue::UInt64(v) => one_or_list(v, Attr::UInt64, Attr::UInt64List),
        StoredAttrValue::Float32(v) => one_or_list(v, Attr::Float32, Attr::Float32List),
        StoredAttrValue::Float64(v) => one_or_list(v, Attr::Float64, Attr::Float64List),
        StoredAttrValue::Chars(s) => Attr::String(s.clone()),
        StoredAttrValue::Strings(v) => match v.as_slice() {
            [s] => Attr::String(s.clone()),
            [] => Attr::String(String::new()),
            _ => Attr::StringList(v.clone()),
        },
        StoredAttrValue::Unsupported(_) => return None,
    })
}

fn ints<T: Copy + Into<i128>>(v: &[T]) -> Attr {
    match v {
        [x] => {
            let wide: i128 = (*x).into();
            match i64::try_from(wide) {
                Ok(n) => Attr::Int64(n),
                Err(_) => Attr::UInt64(u64::try_from(wide).unwrap_or(u64::MAX)),
            }
        }
        _ => Attr::String(format!(
            "json:{}",
            list_json(v, |x| {
                let wide: i128 = (*x).into();
                wide.to_string()
            })
        )),
    }
}

fn floats<T: Copy + Into<f64>>(v: &[T]) -> Attr {
    match v {
        [x] => Attr::Float64((*x).into()),
        _ => Attr::String(format!(
            "json:{}",
            list_json(v, |x| float_json((*x).into()))
        )),
    }
}

/// The attribute as atlas-python stores it; `None` for types Atlas cannot store.
pub(crate) fn python(value: &StoredAttrValue) -> Option<Attr> {
    Some(match value {
        StoredAttrValue::Int8(v) => ints(v),
        StoredAttrValue::UInt8(v) => ints(v),
        StoredAttrValue::Int16(v) => ints(v),
        StoredAttrValue::UInt16(v) => ints(v),
        StoredAttrValue::Int32(v) => ints(v),
        StoredAttrValue::UInt32(v) => ints(v),
        StoredAttrValue::Int64(v) => ints(v),
        StoredAttrValue::UInt64(v) => ints(v),
        StoredAttrValue::Float32(v) => floats(v),
        StoredAttrValue::Float64(v) => floats(v),
        StoredAttrValue::Chars(s) => Attr::String(s.clone()),
        StoredAttrValue::Strings(v) => match v.as_slice() {
            [s] => Attr::String(s.clone()),
            [] => Attr::String(String::new()),
            _ => Attr::String(format!("json:{}", list_json(v, |s| string_json(s)))),
        },
        StoredAttrValue::Unsupported(_) => return None,
    })
}

/// The attribute's numbers as `f64` (the first one for scalars), for fills,
/// scale factors and offsets; `None` for text.
pub(crate) fn numbers(value: &StoredAttrValue) -> Option<Vec<f64>> {
    value.as_f64s()
}

/// The attribute as text, if it is text.
pub(crate) fn text(value: &StoredAttrValue) -> Option<String> {
    match value {
        StoredAttrValue::Chars(s) => Some(s.clone()),
        StoredAttrValue::Strings(v) if v.len() == 1 => v.first().cloned(),
        StoredAttrValue::Strings(v) if v.is_empty() => Some(String::new()),
        _ => None,
    }
}

/// The attribute's first value as an exact integer, if it is an integer attribute.
pub(crate) fn first_integer(value: &StoredAttrValue) -> Option<i128> {
    match value {
        StoredAttrValue::Int8(v) => v.first().map(|&x| i128::from(x)),
        StoredAttrValue::UInt8(v) => v.first().map(|&x| i128::from(x)),
        StoredAttrValue::Int16(v) => v.first().map(|&x| i128::from(x)),
        StoredAttrValue::UInt16(v) => v.first().map(|&x| i128::from(x)),
        StoredAttrValue::Int32(v) => v.first().map(|&x| i128::from(x)),
        StoredAttrValue::UInt32(v) => v.first().map(|&x| i128::from(x)),
        StoredAttrValue::Int64(v) => v.first().map(|&x| i128::from(x)),
        StoredAttrValue::UInt64(v) => v.first().map(|&x| i128::from(x)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zero_length_text_attribute_is_the_empty_string() {
        let empty = StoredAttrValue::Strings(Vec::new());
        assert_eq!(python(&empty), Some(Attr::String(String::new())));
        assert_eq!(raw(&empty), Some(Attr::String(String::new())));
        assert_eq!(text(&empty), Some(String::new()));
    }

    #[test]
    fn several_text_values_stay_a_list() {
        let two = StoredAttrValue::Strings(vec!["a".into(), "b".into()]);
        assert_eq!(
            python(&two),
            Some(Attr::String("json:[\"a\", \"b\"]".into()))
        );
        assert_eq!(
            raw(&two),
            Some(Attr::StringList(vec!["a".into(), "b".into()]))
        );
    }
}
