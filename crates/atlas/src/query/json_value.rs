//! Single values as JSON, the one encoding the catalogue export (NDJSON, and
//! list attributes in CSV) and the manifest renderings share: finite floats
//! as numbers, non-finite ones as `"NaN"`, `"inf"`, `"-inf"`; binary as a list
//! of byte values; list attributes as lists.

use serde_json::Value;

use crate::Attr;

/// A float as JSON: a number, or `"NaN"` / `"inf"` / `"-inf"`.
pub fn float_json(x: f64) -> Value {
    if x.is_nan() {
        Value::from("NaN")
    } else if x.is_infinite() {
        Value::from(if x > 0.0 { "inf" } else { "-inf" })
    } else {
        Value::from(x)
    }
}

/// An `f32` as JSON, written with its shortest decimal form (0.1, not 0.10000000149).
pub fn f32_json(x: f32) -> Value {
    if !x.is_finite() {
        return float_json(f64::from(x));
    }
    x.to_string()
        .parse::<f64>()
        .map_or_else(|_| float_json(f64::from(x)), float_json)
}

/// Bytes as a list of byte values.
pub fn bytes_json(b: &[u8]) -> Value {
    Value::Array(b.iter().map(|&x| Value::from(x)).collect())
}

fn list<T>(items: &[T], f: impl Fn(&T) -> Value) -> Value {
    Value::Array(items.iter().map(f).collect())
}

/// The value of an attribute alone, as the manifests write it.
pub fn attr_value_json(attr: &Attr) -> Value {
    match attr {
        Attr::Bool(v) => Value::from(*v),
        Attr::Int8(v) => Value::from(*v),
        Attr::Int16(v) => Value::from(*v),
        Attr::Int32(v) => Value::from(*v),
        Attr::Int64(v) => Value::from(*v),
        Attr::UInt8(v) => Value::from(*v),
        Attr::UInt16(v) => Value::from(*v),
        Attr::UInt32(v) => Value::from(*v),
        Attr::UInt64(v) => Value::from(*v),
        Attr::Float32(v) => f32_json(*v),
        Attr::Float64(v) => float_json(*v),
        Attr::String(v) => Value::from(v.as_str()),
        Attr::Binary(v) => bytes_json(v),
        Attr::BoolList(v) => list(v, |x| Value::from(*x)),
        Attr::Int8List(v) => list(v, |x| Value::from(*x)),
        Attr::Int16List(v) => list(v, |x| Value::from(*x)),
        Attr::Int32List(v) => list(v, |x| Value::from(*x)),
        Attr::Int64List(v) => list(v, |x| Value::from(*x)),
        Attr::UInt8List(v) => list(v, |x| Value::from(*x)),
        Attr::UInt16List(v) => list(v, |x| Value::from(*x)),
        Attr::UInt32List(v) => list(v, |x| Value::from(*x)),
        Attr::UInt64List(v) => list(v, |x| Value::from(*x)),
        Attr::Float32List(v) => list(v, |x| f32_json(*x)),
        Attr::Float64List(v) => list(v, |x| float_json(*x)),
        Attr::StringList(v) => list(v, |x| Value::from(x.as_str())),
        Attr::BinaryList(v) => list(v, |x| bytes_json(x)),
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn non_finite_floats_are_strings() {
        assert_eq!(float_json(f64::NAN), json!("NaN"));
        assert_eq!(float_json(f64::INFINITY), json!("inf"));
        assert_eq!(float_json(f64::NEG_INFINITY), json!("-inf"));
        assert_eq!(f32_json(f32::NAN), json!("NaN"));
        assert_eq!(float_json(0.5), json!(0.5));
    }

    #[test]
    fn f32_keeps_its_short_form() {
        assert_eq!(f32_json(0.1), json!(0.1));
        assert_eq!(f32_json(-999.0), json!(-999.0));
    }
}
