//! # atlas-manifest
//!
//! JSON renderings of a collection in the shape of the conformance manifests
//! (`testdata/v8/*/manifest.json`): what the `atlas` command's `--json`
//! output and the `dump` example print, and what the conformance tests
//! compare with the manifests. Presentation, so it lives beside the library,
//! not in it; single values use the library's own encoding
//! ([`atlas::export::float_json`] and its siblings), which the catalogue
//! export shares.
//!
//! Encodings: attributes as `[[key, {"type", "value"}], ...]` in set order;
//! statistics as `{"min", "max", "null_count", "row_count"}` with each bound
//! `{"float": x}`, `{"int": n}`, `{"uint": n}`, `{"timestamp_ns": n}` or
//! `{"bytes": [...]}`; timestamps as integer nanoseconds; binary as a list of
//! byte values; non-finite floats as the strings `"NaN"`, `"inf"`, `"-inf"`.

use atlas::export::{attr_value_json, bytes_json, f32_json, float_json};
use atlas::{
    ArrayData, ArrayStats, AtlasError, Attr, Dataset, Member, Region, Result, Timestamp,
    for_each_array_data,
};
use serde_json::{Map, Value, json};

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

/// A statistic bound as `{"float": x}`, `{"int": n}`, `{"uint": n}`,
/// `{"timestamp_ns": n}` or `{"bytes": [...]}` (and `{"string": s}`, `{"bool": b}`,
/// which a segment's statistics never hold).
pub fn stat_json(v: &atlas::Value) -> Value {
    use atlas::Value as V;
    match v {
        V::Int(n) => json!({ "int": n }),
        V::UInt(n) => json!({ "uint": n }),
        V::Float(x) => json!({ "float": float_json(*x) }),
        V::Timestamp(t) => json!({ "timestamp_ns": t.nanos() }),
        V::Bytes(b) => json!({ "bytes": bytes_json(b) }),
        V::String(s) => json!({ "string": s }),
        V::Bool(b) => json!({ "bool": b }),
        _ => Value::Null,
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
pub fn fill_json(fill: Option<&atlas::Value>) -> Value {
    use atlas::Value as V;
    match fill {
        None => Value::Null,
        Some(V::Bool(b)) => Value::from(*b),
        Some(V::Int(n)) => Value::from(*n),
        Some(V::UInt(n)) => Value::from(*n),
        Some(V::Float(x)) => float_json(*x),
        Some(V::String(s)) => Value::from(s.as_str()),
        Some(V::Timestamp(t)) => Value::from(t.nanos()),
        Some(V::Bytes(b)) => bytes_json(b),
        Some(_) => Value::Null,
    }
}

/// One element as JSON.
trait ElementJson {
    fn json(&self) -> Value;
}

macro_rules! plain_json {
    ($($t:ty),*) => {$(
        impl ElementJson for $t {
            fn json(&self) -> Value {
                Value::from(*self)
            }
        }
    )*};
}
plain_json!(i8, i16, i32, i64, u8, u16, u32, u64);

impl ElementJson for f32 {
    fn json(&self) -> Value {
        f32_json(*self)
    }
}

impl ElementJson for f64 {
    fn json(&self) -> Value {
        float_json(*self)
    }
}

impl ElementJson for String {
    fn json(&self) -> Value {
        Value::from(self.as_str())
    }
}

impl ElementJson for Vec<u8> {
    fn json(&self) -> Value {
        bytes_json(self)
    }
}

impl ElementJson for Timestamp {
    fn json(&self) -> Value {
        Value::from(self.nanos())
    }
}

/// Every element of `data`, row-major, as a JSON list.
pub fn data_json(data: &ArrayData) -> Value {
    for_each_array_data!(
        data,
        a => Value::Array(a.iter().map(ElementJson::json).collect()),
        _ => Value::Null
    )
}

/// Every element of `array`, row-major; `null` for element types the facade
/// cannot read (bool, lists).
pub async fn values_json(view: &Dataset, array: &str) -> Result<Value> {
    match view.read_any(array, Region::all()).await {
        Ok(any) => Ok(data_json(any.data())),
        Err(AtlasError::DTypeMismatch { .. }) => Ok(Value::Null),
        Err(e) => Err(e),
    }
}

/// One array of a dataset: name, dtype, dims, shape, chunk_shape, fill, stats,
/// attributes, and (with `with_values`) values.
pub async fn array_json(view: &Dataset, array: &str, with_values: bool) -> Result<Value> {
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
        out.insert("values".into(), values_json(view, array).await?);
    }
    Ok(Value::Object(out))
}

/// One dataset: name, ordinal, attributes and arrays (in definition order).
pub async fn dataset_json(view: &Dataset, with_values: bool) -> Result<Value> {
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

/// The container's header fields (no request).
pub fn summary_json(atlas: &Member) -> Map<String, Value> {
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

/// One container as a manifest: header fields and every live dataset in ordinal order.
pub async fn collection_json(atlas: &Member, with_values: bool) -> Result<Value> {
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
    fn stats_and_attributes_use_the_manifest_encoding() {
        assert_eq!(stat_json(&atlas::Value::UInt(2)), json!({"uint": 2}));
        assert_eq!(
            stat_json(&atlas::Value::Bytes(vec![1, 2])),
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
        assert_eq!(
            fill_json(Some(&atlas::Value::Float(f64::NAN))),
            json!("NaN")
        );
        assert_eq!(fill_json(None), Value::Null);
    }
}
