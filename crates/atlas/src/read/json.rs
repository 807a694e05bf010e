//! JSON renderings of a collection in the shape of the conformance manifests
//! (`testdata/v8/*/manifest.json`), shared by the `dump` example and the CLI's
//! `--json` output.
//!
//! Encodings: attributes as `[[key, {"type", "value"}], ...]` in set order;
//! statistics as `{"min", "max", "null_count", "row_count"}` with each bound
//! `{"float": x}`, `{"int": n}`, `{"uint": n}`, `{"timestamp_ns": n}` or
//! `{"bytes": [...]}`; timestamps as integer nanoseconds; binary as a list of
//! byte values; non-finite floats as the strings `"NaN"`, `"inf"`, `"-inf"`.

use array_format::{FillValue, StatValue, TimestampNs};
use atlas_format::DType;
use serde_json::{Map, Value, json};

use super::collection::Atlas;
use super::dataset::DatasetView;
use super::stats::ArrayStats;
use crate::attr::Attr;
use crate::element::Element;
use crate::error::Result;

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

fn bytes_json(b: &[u8]) -> Value {
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
    }
}

/// An attribute as `{"type": "list<string>", "value": [...]}`.
pub fn attr_json(attr: &Attr) -> Value {
    json!({ "type": attr.dtype().display_name(), "value": attr_value_json(attr) })
}

/// Attributes as `[[key, {"type", "value"}], ...]`, in the order given.
pub fn attrs_json(attrs: &[(String, Attr)]) -> Value {
    Value::Array(
        attrs
            .iter()
            .map(|(k, a)| Value::Array(vec![Value::from(k.as_str()), attr_json(a)]))
            .collect(),
    )
}

/// A statistic bound as `{"float": x}`, `{"int": n}`, `{"uint": n}`, `{"timestamp_ns": n}` or `{"bytes": [...]}`.
pub fn stat_json(v: &StatValue) -> Value {
    match v {
        StatValue::Int(n) => json!({ "int": n }),
        StatValue::UInt(n) => json!({ "uint": n }),
        StatValue::Float(x) => json!({ "float": float_json(*x) }),
        StatValue::TimestampNs(n) => json!({ "timestamp_ns": n }),
        StatValue::Bytes(b) => json!({ "bytes": bytes_json(b) }),
    }
}

/// Statistics as `{"min", "max", "null_count", "row_count"}`; `null` for none.
pub fn stats_json(stats: Option<&ArrayStats>) -> Value {
    match stats {
        None => Value::Null,
        Some(s) => json!({
            "min": s.min.as_ref().map_or(Value::Null, stat_json),
            "max": s.max.as_ref().map_or(Value::Null, stat_json),
            "null_count": s.null_count,
            "row_count": s.row_count,
        }),
    }
}

/// A fill value as a number, string or bool; `null` when none was given.
pub fn fill_json(fill: Option<&FillValue>) -> Value {
    match fill {
        None => Value::Null,
        Some(FillValue::Bool(b)) => Value::from(*b),
        Some(FillValue::Int(n)) => Value::from(*n),
        Some(FillValue::UInt(n)) => Value::from(*n),
        Some(FillValue::Float(x)) => float_json(*x),
        Some(FillValue::String(s)) => Value::from(s.as_str()),
        Some(FillValue::TimestampNs(n)) => Value::from(*n),
    }
}

async fn read_flat<T: Element>(
    view: &DatasetView<'_>,
    array: &str,
    f: impl Fn(&T) -> Value,
) -> Result<Value> {
    let data = view.read_array::<T>(array, &[], &[]).await?;
    Ok(Value::Array(data.iter().map(f).collect()))
}

/// Every element of `array`, row-major; `null` for element types the facade
/// cannot read (bool, lists).
pub async fn values_json(view: &DatasetView<'_>, array: &str, dtype: &DType) -> Result<Value> {
    match dtype {
        DType::Int8 => read_flat::<i8>(view, array, |x| Value::from(*x)).await,
        DType::Int16 => read_flat::<i16>(view, array, |x| Value::from(*x)).await,
        DType::Int32 => read_flat::<i32>(view, array, |x| Value::from(*x)).await,
        DType::Int64 => read_flat::<i64>(view, array, |x| Value::from(*x)).await,
        DType::UInt8 => read_flat::<u8>(view, array, |x| Value::from(*x)).await,
        DType::UInt16 => read_flat::<u16>(view, array, |x| Value::from(*x)).await,
        DType::UInt32 => read_flat::<u32>(view, array, |x| Value::from(*x)).await,
        DType::UInt64 => read_flat::<u64>(view, array, |x| Value::from(*x)).await,
        DType::Float32 => read_flat::<f32>(view, array, |x| f32_json(*x)).await,
        DType::Float64 => read_flat::<f64>(view, array, |x| float_json(*x)).await,
        DType::String => read_flat::<String>(view, array, |x| Value::from(x.as_str())).await,
        DType::Binary => read_flat::<Vec<u8>>(view, array, |x| bytes_json(x)).await,
        DType::TimestampNs => {
            read_flat::<TimestampNs>(view, array, |x| Value::from(x.nanos())).await
        }
        DType::Bool | DType::FixedSizeList { .. } | DType::List { .. } => Ok(Value::Null),
    }
}

/// One array of a dataset: name, dtype, dims, shape, chunk_shape, fill, stats,
/// attributes, and (with `with_values`) values.
pub async fn array_json(view: &DatasetView<'_>, array: &str, with_values: bool) -> Result<Value> {
    let layout = view.array_layout(array).await?;
    let stats = view.array_stats(array).await?;
    let attributes = view.array_attributes(array).await?;
    let mut out = Map::new();
    out.insert("name".into(), Value::from(array));
    out.insert("dtype".into(), Value::from(layout.dtype.display_name()));
    out.insert(
        "dims".into(),
        Value::Array(
            layout
                .dimension_names
                .iter()
                .map(|d| Value::from(d.as_str()))
                .collect(),
        ),
    );
    out.insert("shape".into(), json!(layout.shape));
    out.insert("chunk_shape".into(), json!(layout.chunk_shape));
    out.insert("fill".into(), fill_json(layout.fill_value.as_ref()));
    out.insert("stats".into(), stats_json(stats.as_ref()));
    out.insert("attributes".into(), attrs_json(&attributes));
    if with_values {
        out.insert(
            "values".into(),
            values_json(view, array, &layout.dtype).await?,
        );
    }
    Ok(Value::Object(out))
}

/// One dataset: name, ordinal, attributes and arrays (in definition order).
pub async fn dataset_json(view: &DatasetView<'_>, with_values: bool) -> Result<Value> {
    let attributes = view.attributes().await?;
    let names: Vec<String> = view
        .schema()
        .arrays()
        .map(|a| a.name().to_owned())
        .collect();
    let mut arrays = Vec::with_capacity(names.len());
    for name in &names {
        arrays.push(array_json(view, name, with_values).await?);
    }
    Ok(json!({
        "name": view.name(),
        "ordinal": view.ordinal(),
        "attributes": attrs_json(&attributes),
        "arrays": arrays,
    }))
}

/// The collection's header fields (no request).
pub fn summary_json(atlas: &Atlas) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("format_version".into(), Value::from(atlas.format_version()));
    out.insert("codec".into(), Value::from(atlas.codec().to_string()));
    out.insert(
        "dataset_count_total".into(),
        Value::from(atlas.dataset_count_total()),
    );
    out.insert(
        "interned_schemas".into(),
        Value::from(atlas.interned_schemas()),
    );
    out.insert(
        "container_bytes".into(),
        Value::from(atlas.container_bytes()),
    );
    out
}

/// The whole collection as a manifest: header fields and every live dataset in ordinal order.
pub async fn collection_json(atlas: &Atlas, with_values: bool) -> Result<Value> {
    let mut out = summary_json(atlas);
    let mut datasets = Vec::with_capacity(atlas.dataset_count());
    for view in atlas.datasets() {
        datasets.push(dataset_json(&view, with_values).await?);
    }
    out.insert("datasets".into(), Value::Array(datasets));
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn stats_and_attributes_use_the_manifest_encoding() {
        assert_eq!(stat_json(&StatValue::UInt(2)), json!({"uint": 2}));
        assert_eq!(
            stat_json(&StatValue::Bytes(vec![1, 2])),
            json!({"bytes": [1, 2]})
        );
        assert_eq!(
            attr_json(&Attr::StringList(vec!["a".into()])),
            json!({"type": "list<string>", "value": ["a"]})
        );
        assert_eq!(
            attr_json(&Attr::Binary(vec![222, 173])),
            json!({"type": "binary", "value": [222, 173]})
        );
        assert_eq!(fill_json(Some(&FillValue::Float(f64::NAN))), json!("NaN"));
        assert_eq!(fill_json(None), Value::Null);
    }
}
