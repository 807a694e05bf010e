//! Rebuilding a fixture from its `manifest.json` with our writer, and checking
//! a container against a manifest with array-format directly.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use atlas::{AtlasWriter, Attr, Codec, DatasetWriter, Element, Timestamp, WriterConfig};
use atlas_format::DeletionMask;
use ndarray::{ArrayD, IxDyn, Slice};
use serde_json::Value;

use super::Written;

pub fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/v8")
}

pub fn load(name: &str) -> Value {
    let path = fixtures_dir().join(name).join("manifest.json");
    serde_json::from_slice(&std::fs::read(path).expect("manifest")).expect("manifest json")
}

pub fn codec_of(manifest: &Value) -> Codec {
    match manifest["codec"].as_str() {
        Some("Zstd") => Codec::Zstd,
        Some("Lz4") => Codec::Lz4,
        Some("Uncompressed") => Codec::Uncompressed,
        other => panic!("unknown codec {other:?}"),
    }
}

/// A typed value from a manifest's JSON.
pub trait FromJson: Element + PartialEq + std::fmt::Debug {
    fn from_json(v: &Value) -> Self;
}

macro_rules! from_json_int {
    ($($t:ty),*) => {$(
        impl FromJson for $t {
            fn from_json(v: &Value) -> Self {
                if let Some(i) = v.as_i64() {
                    <$t>::try_from(i).expect("fits")
                } else {
                    <$t>::try_from(v.as_u64().expect("integer")).expect("fits")
                }
            }
        }
    )*};
}
from_json_int!(i8, i16, i32, i64, u8, u16, u32, u64);

impl FromJson for f32 {
    fn from_json(v: &Value) -> Self {
        v.as_f64().expect("number") as f32
    }
}

impl FromJson for f64 {
    fn from_json(v: &Value) -> Self {
        v.as_f64().expect("number")
    }
}

impl FromJson for String {
    fn from_json(v: &Value) -> Self {
        v.as_str().expect("string").to_owned()
    }
}

impl FromJson for Vec<u8> {
    fn from_json(v: &Value) -> Self {
        v.as_array()
            .expect("byte list")
            .iter()
            .map(|b| u8::try_from(b.as_u64().expect("byte")).expect("byte"))
            .collect()
    }
}

impl FromJson for Timestamp {
    fn from_json(v: &Value) -> Self {
        Timestamp(v.as_i64().expect("nanoseconds"))
    }
}

fn u64s(v: &Value) -> Vec<u64> {
    v.as_array()
        .expect("list")
        .iter()
        .map(|x| x.as_u64().expect("u64"))
        .collect()
}

fn usizes(v: &Value) -> Vec<usize> {
    u64s(v).into_iter().map(|x| x as usize).collect()
}

fn list<T>(v: &Value, f: impl Fn(&Value) -> T) -> Vec<T> {
    v.as_array().expect("list").iter().map(f).collect()
}

/// A manifest attribute value (`{type, value}`) as an [`Attr`].
pub fn attr_from_json(v: &Value) -> Attr {
    let ty = v["type"].as_str().expect("type");
    let value = &v["value"];
    let int = |x: &Value| x.as_i64().expect("int");
    let uint = |x: &Value| x.as_u64().expect("uint");
    let float = |x: &Value| x.as_f64().expect("float");
    match ty {
        "bool" => Attr::Bool(value.as_bool().expect("bool")),
        "int8" => Attr::Int8(int(value) as i8),
        "int16" => Attr::Int16(int(value) as i16),
        "int32" => Attr::Int32(int(value) as i32),
        "int64" => Attr::Int64(int(value)),
        "uint8" => Attr::UInt8(uint(value) as u8),
        "uint16" => Attr::UInt16(uint(value) as u16),
        "uint32" => Attr::UInt32(uint(value) as u32),
        "uint64" => Attr::UInt64(uint(value)),
        "float32" => Attr::Float32(float(value) as f32),
        "float64" => Attr::Float64(float(value)),
        "string" => Attr::String(value.as_str().expect("string").to_owned()),
        "binary" => Attr::Binary(Vec::<u8>::from_json(value)),
        "list<bool>" => Attr::BoolList(list(value, |x| x.as_bool().expect("bool"))),
        "list<int8>" => Attr::Int8List(list(value, |x| int(x) as i8)),
        "list<int16>" => Attr::Int16List(list(value, |x| int(x) as i16)),
        "list<int32>" => Attr::Int32List(list(value, |x| int(x) as i32)),
        "list<int64>" => Attr::Int64List(list(value, int)),
        "list<uint8>" => Attr::UInt8List(list(value, |x| uint(x) as u8)),
        "list<uint16>" => Attr::UInt16List(list(value, |x| uint(x) as u16)),
        "list<uint32>" => Attr::UInt32List(list(value, |x| uint(x) as u32)),
        "list<uint64>" => Attr::UInt64List(list(value, uint)),
        "list<float32>" => Attr::Float32List(list(value, |x| float(x) as f32)),
        "list<float64>" => Attr::Float64List(list(value, float)),
        "list<string>" => Attr::StringList(list(value, |x| x.as_str().expect("string").to_owned())),
        "list<binary>" => Attr::BinaryList(list(value, Vec::<u8>::from_json)),
        other => panic!("unknown attribute type {other}"),
    }
}

/// Row-major coordinates of every chunk of a grid.
fn chunk_grid(shape: &[usize], chunks: &[usize]) -> Vec<Vec<usize>> {
    let counts: Vec<usize> = shape
        .iter()
        .zip(chunks)
        .map(|(&s, &c)| s.div_ceil(c.max(1)))
        .collect();
    let total: usize = counts.iter().product();
    (0..total)
        .map(|mut i| {
            let mut coord = vec![0; counts.len()];
            for axis in (0..counts.len()).rev() {
                coord[axis] = i % counts[axis];
                i /= counts[axis];
            }
            coord
        })
        .collect()
}

/// Defines and writes one manifest array. A chunk is written only if it
/// holds a value other than the fill (an array whose statistics say every
/// element is a hole is not written at all), which reproduces the manifest's
/// statistics exactly.
fn build_array<T: FromJson>(d: &mut DatasetWriter, a: &Value) {
    let name = a["name"].as_str().expect("name");
    let dims: Vec<String> = list(&a["dims"], |x| x.as_str().expect("dim").to_owned());
    let dims: Vec<&str> = dims.iter().map(String::as_str).collect();
    let shape = u64s(&a["shape"]);
    let chunk_shape = u64s(&a["chunk_shape"]);
    let fill: Option<T> = (!a["fill"].is_null()).then(|| T::from_json(&a["fill"]));
    d.define_array::<T>(name, &dims, &shape, Some(&chunk_shape), fill.clone())
        .expect("define");
    let all_holes = a["stats"]["null_count"] == a["stats"]["row_count"];
    if all_holes && fill.is_none() {
        return;
    }
    let shape_us = usizes(&a["shape"]);
    let values: Vec<T> = list(&a["values"], T::from_json);
    let values = ArrayD::from_shape_vec(IxDyn(&shape_us), values).expect("values fit the shape");
    let chunks_us = usizes(&a["chunk_shape"]);
    for coord in chunk_grid(&shape_us, &chunks_us) {
        let start: Vec<usize> = coord.iter().zip(&chunks_us).map(|(c, s)| c * s).collect();
        let view = values.slice_each_axis(|ax| {
            let i = ax.axis.index();
            Slice::from(start[i]..(start[i] + chunks_us[i]).min(shape_us[i]))
        });
        let any_value = match &fill {
            Some(f) => view.iter().any(|v| v != f),
            None => true,
        };
        if any_value {
            let start: Vec<u64> = start.iter().map(|&s| s as u64).collect();
            d.write_array(name, &start, view).expect("write");
        }
    }
}

/// Dispatches on the manifest's dtype name.
fn build_any(d: &mut DatasetWriter, a: &Value) {
    match a["dtype"].as_str().expect("dtype") {
        "int8" => build_array::<i8>(d, a),
        "int16" => build_array::<i16>(d, a),
        "int32" => build_array::<i32>(d, a),
        "int64" => build_array::<i64>(d, a),
        "uint8" => build_array::<u8>(d, a),
        "uint16" => build_array::<u16>(d, a),
        "uint32" => build_array::<u32>(d, a),
        "uint64" => build_array::<u64>(d, a),
        "float32" => build_array::<f32>(d, a),
        "float64" => build_array::<f64>(d, a),
        "string" => build_array::<String>(d, a),
        "binary" => build_array::<Vec<u8>>(d, a),
        "timestamp_ns" => build_array::<Timestamp>(d, a),
        other => panic!("unknown dtype {other}"),
    }
}

/// Writes every dataset of `manifest` (deleted ones too) into `dir`, then the
/// deletion mask the manifest describes. Returns the writer's summary.
pub async fn rebuild(manifest: &Value, dir: &Path) -> atlas::WriteSummary {
    let config = WriterConfig::default().codec(codec_of(manifest));
    let w = AtlasWriter::create(dir, &config).await.expect("create");
    let mut deleted = Vec::new();
    for ds in manifest["datasets"].as_array().expect("datasets") {
        let name = ds["name"].as_str().expect("name");
        let mut d = w.add_dataset(name).expect("add");
        for a in ds["arrays"].as_array().expect("arrays") {
            build_any(&mut d, a);
            let array = a["name"].as_str().expect("name");
            for kv in a["attributes"].as_array().expect("attributes") {
                let key = kv[0].as_str().expect("key");
                d.set_array_attribute(array, key, attr_from_json(&kv[1]))
                    .expect("array attribute");
            }
        }
        for kv in ds["attributes"].as_array().expect("attributes") {
            d.set_attribute(kv[0].as_str().expect("key"), attr_from_json(&kv[1]))
                .expect("attribute");
        }
        d.finish().await.expect("dataset finish");
        if ds["deleted"].as_bool() == Some(true) {
            deleted.push(ds["ordinal"].as_u64().expect("ordinal") as u32);
        }
    }
    let summary = w.finish().await.expect("collection finish");
    if !deleted.is_empty() {
        let mask = DeletionMask::from_ordinals(deleted);
        std::fs::write(dir.join("deleted.mask"), mask.encode()).expect("mask");
    }
    summary
}

fn fill_matches(stored: &Option<atlas::Value>, json: &Value, dtype: &str) -> bool {
    match (stored, json) {
        (None, Value::Null) => true,
        (Some(atlas::Value::Float(f)), j) => j.as_f64() == Some(*f),
        (Some(atlas::Value::Int(i)), j) => j.as_i64() == Some(*i),
        (Some(atlas::Value::UInt(u)), j) => j.as_u64() == Some(*u),
        (Some(atlas::Value::Timestamp(t)), j) => j.as_i64() == Some(t.nanos()),
        (Some(atlas::Value::String(s)), j) => j.as_str() == Some(s.as_str()),
        (Some(atlas::Value::Bool(b)), j) => j.as_bool() == Some(*b) || dtype == "bool",
        _ => false,
    }
}

fn stat_json(v: &Option<atlas::Value>) -> Value {
    match v {
        None => Value::Null,
        Some(atlas::Value::Float(f)) => serde_json::json!({ "float": f }),
        Some(atlas::Value::Int(i)) => serde_json::json!({ "int": i }),
        Some(atlas::Value::UInt(u)) => serde_json::json!({ "uint": u }),
        Some(atlas::Value::Timestamp(t)) => serde_json::json!({ "timestamp_ns": t.nanos() }),
        Some(atlas::Value::Bytes(b)) => serde_json::json!({ "bytes": b }),
        Some(other) => panic!("unknown statistic {other:?}"),
    }
}

async fn check_values<T: FromJson + Element>(out: &Written, dataset: &str, a: &Value) {
    let name = a["name"].as_str().unwrap();
    let got: Vec<T> = out.read::<T>(name, dataset).await.iter().cloned().collect();
    let want: Vec<T> = list(&a["values"], T::from_json);
    assert_eq!(got, want, "values of {dataset}/{name}");
}

/// Checks `out` against `manifest`: names, ordinals, schema count, codec,
/// and per array the layout, fill, values, statistics and attributes, read
/// with array-format from the segments (the deletion mask is not applied:
/// statistics of deleted datasets are `null` in the manifest and skipped).
pub async fn check(out: &Written, manifest: &Value) {
    let f = &out.opened.footer;
    assert_eq!(f.codec, codec_of(manifest));
    assert_eq!(
        f.schema_pool.len() as u64,
        manifest["interned_schemas"].as_u64().unwrap()
    );
    let datasets = manifest["datasets"].as_array().unwrap();
    assert_eq!(f.datasets.len(), datasets.len());
    for ds in datasets {
        let name = ds["name"].as_str().unwrap();
        let ordinal = f.datasets.get_index_of(name).expect("dataset in footer");
        assert_eq!(ordinal as u64, ds["ordinal"].as_u64().unwrap(), "{name}");
        let schema = out.schema(name);
        let want_attrs: Vec<(String, Attr)> = ds["attributes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|kv| (kv[0].as_str().unwrap().to_owned(), attr_from_json(&kv[1])))
            .collect();
        let keys: Vec<(String, atlas::DType)> = schema
            .attributes
            .iter()
            .map(|(k, d)| (k.to_string(), d.clone()))
            .collect();
        let want_keys: Vec<(String, atlas::DType)> = want_attrs
            .iter()
            .map(|(k, v)| (k.clone(), v.dtype()))
            .collect();
        assert_eq!(keys, want_keys, "dataset attribute keys of {name}");
        if !want_attrs.is_empty() {
            let mut got: Vec<(String, Attr)> = out
                .attributes("_datasets", name)
                .await
                .into_iter()
                .collect();
            got.sort_by(|a, b| a.0.cmp(&b.0));
            let mut want = want_attrs.clone();
            want.sort_by(|a, b| a.0.cmp(&b.0));
            assert_eq!(got, want, "dataset attributes of {name}");
        }
        let arrays = ds["arrays"].as_array().unwrap();
        let names: Vec<&str> = schema.arrays.iter().map(|a| a.name.as_str()).collect();
        let want_names: Vec<&str> = arrays.iter().map(|a| a["name"].as_str().unwrap()).collect();
        assert_eq!(names, want_names, "arrays of {name}");
        for (decl, a) in schema.arrays.iter().zip(arrays) {
            let array = a["name"].as_str().unwrap();
            assert_eq!(decl.dtype.display_name(), a["dtype"].as_str().unwrap());
            let seg = out.segment(array).await;
            let info = seg.array(name).expect("dataset's copy in the segment");
            assert_eq!(
                info.shape(),
                u64s(&a["shape"])
                    .iter()
                    .map(|&x| x as u32)
                    .collect::<Vec<_>>()
            );
            assert_eq!(
                info.chunk_shape(),
                u64s(&a["chunk_shape"])
                    .iter()
                    .map(|&x| x as u32)
                    .collect::<Vec<_>>()
            );
            let dims: Vec<String> = list(&a["dims"], |x| x.as_str().unwrap().to_owned());
            assert_eq!(info.dimension_names(), dims);
            assert!(
                fill_matches(&info.fill(), &a["fill"], a["dtype"].as_str().unwrap()),
                "fill of {name}/{array}: {:?} vs {}",
                info.fill(),
                a["fill"]
            );
            if !a["stats"].is_null() {
                let stats = info.stats().expect("stats");
                assert_eq!(
                    stat_json(&stats.min),
                    a["stats"]["min"],
                    "min of {name}/{array}"
                );
                assert_eq!(
                    stat_json(&stats.max),
                    a["stats"]["max"],
                    "max of {name}/{array}"
                );
                assert_eq!(stats.null_count, a["stats"]["null_count"].as_u64().unwrap());
                assert_eq!(stats.row_count, a["stats"]["row_count"].as_u64().unwrap());
            }
            let want_attrs: Vec<(String, Attr)> = a["attributes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|kv| (kv[0].as_str().unwrap().to_owned(), attr_from_json(&kv[1])))
                .collect();
            let decl_keys: Vec<(String, atlas::DType)> = decl
                .attributes
                .iter()
                .map(|(k, d)| (k.to_string(), d.clone()))
                .collect();
            assert_eq!(
                decl_keys,
                want_attrs
                    .iter()
                    .map(|(k, v)| (k.clone(), v.dtype()))
                    .collect::<Vec<_>>()
            );
            let mut got: Vec<(String, Attr)> =
                out.attributes(array, name).await.into_iter().collect();
            got.sort_by(|a, b| a.0.cmp(&b.0));
            let mut want = want_attrs;
            want.sort_by(|a, b| a.0.cmp(&b.0));
            assert_eq!(got, want, "attributes of {name}/{array}");
            match a["dtype"].as_str().unwrap() {
                "int8" => check_values::<i8>(out, name, a).await,
                "int16" => check_values::<i16>(out, name, a).await,
                "int32" => check_values::<i32>(out, name, a).await,
                "int64" => check_values::<i64>(out, name, a).await,
                "uint8" => check_values::<u8>(out, name, a).await,
                "uint16" => check_values::<u16>(out, name, a).await,
                "uint32" => check_values::<u32>(out, name, a).await,
                "uint64" => check_values::<u64>(out, name, a).await,
                "float32" => check_values::<f32>(out, name, a).await,
                "float64" => check_values::<f64>(out, name, a).await,
                "string" => check_values::<String>(out, name, a).await,
                "binary" => check_values::<Vec<u8>>(out, name, a).await,
                "timestamp_ns" => check_values::<Timestamp>(out, name, a).await,
                other => panic!("unknown dtype {other}"),
            }
        }
    }
}
