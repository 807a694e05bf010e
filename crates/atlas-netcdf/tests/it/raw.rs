//! `--decode raw` stores each file as `netCDF4` reads it with auto-masking and
//! scaling off. The expectations (`tests/data/raw/NAME.json`) were written by
//! `scripts/make-netcdf-inputs.py` from the same files, so this test needs no Python.

#![cfg(test)]

use crate::common;

use atlas::{ArrayData, Atlas, Attr, DType, Region};
use atlas_netcdf::{Decode, IngestOptions};
use common::{data, good_files, ingest_into};
use serde_json::{Value, json};

fn float(x: f64) -> Value {
    if x.is_nan() {
        json!("NaN")
    } else if x.is_infinite() {
        json!(if x > 0.0 { "inf" } else { "-inf" })
    } else {
        json!(x)
    }
}

/// An attribute as the expectation writes it: `{"type", "value"}`, floats widened to f64.
fn attr(a: &Attr) -> Value {
    let value = match a {
        Attr::Int8(v) => json!(v),
        Attr::Int16(v) => json!(v),
        Attr::Int32(v) => json!(v),
        Attr::Int64(v) => json!(v),
        Attr::UInt8(v) => json!(v),
        Attr::UInt16(v) => json!(v),
        Attr::UInt32(v) => json!(v),
        Attr::UInt64(v) => json!(v),
        Attr::Float32(v) => float(f64::from(*v)),
        Attr::Float64(v) => float(*v),
        Attr::String(v) => json!(v),
        Attr::Int8List(v) => json!(v),
        Attr::Int16List(v) => json!(v),
        Attr::Int32List(v) => json!(v),
        Attr::Int64List(v) => json!(v),
        Attr::UInt8List(v) => json!(v),
        Attr::UInt16List(v) => json!(v),
        Attr::UInt32List(v) => json!(v),
        Attr::UInt64List(v) => json!(v),
        Attr::Float32List(v) => Value::Array(v.iter().map(|x| float(f64::from(*x))).collect()),
        Attr::Float64List(v) => Value::Array(v.iter().map(|x| float(*x)).collect()),
        Attr::StringList(v) => json!(v),
        other => panic!("unexpected attribute {other:?}"),
    };
    json!({"type": a.dtype().display_name(), "value": value})
}

/// Every value of `name`, row-major, as the expectation writes it: floats
/// widened to f64 (as `numpy.tolist()` does), timestamps as nanoseconds.
async fn values(view: &atlas::Dataset, name: &str, dtype: &DType) -> Value {
    fn list<T>(a: &ndarray::ArrayD<T>, f: impl Fn(&T) -> Value) -> Value {
        Value::Array(a.iter().map(f).collect())
    }
    let any = view.read_any(name, Region::all()).await.unwrap();
    assert_eq!(any.dtype(), *dtype, "{name}: read_any dtype");
    match any.data() {
        ArrayData::Float32(a) => list(a, |x| float(f64::from(*x))),
        ArrayData::Float64(a) => list(a, |x| float(*x)),
        ArrayData::Timestamp(a) => list(a, |x| json!(x.nanos())),
        ArrayData::Binary(_) => panic!("unexpected dtype {dtype}"),
        other => atlas_manifest::data_json(other),
    }
}

#[tokio::test]
async fn raw_mode_stores_every_file_as_netcdf4_reads_it_unmasked() {
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("raw");
    let options = IngestOptions::default().with_decode(Decode::Raw);
    ingest_into(&[data().join("good")], &dest, &options)
        .await
        .unwrap();
    let atlas = Atlas::open(&dest, &atlas::OpenOptions::default())
        .await
        .unwrap();
    let files = good_files();
    assert_eq!(atlas.dataset_count().await.unwrap(), files.len());
    for file in files {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let text =
            std::fs::read_to_string(data().join("raw").join(format!("{name}.json"))).unwrap();
        let expected: Value = serde_json::from_str(&text).unwrap();
        let view = atlas.dataset(&name).await.unwrap();

        // Global attributes, every one with its type.
        let got: serde_json::Map<String, Value> = view
            .attributes()
            .await
            .unwrap()
            .iter()
            .filter(|(k, _)| !k.contains('.'))
            .map(|(k, a)| (k.clone(), attr(a)))
            .collect();
        assert_eq!(
            Value::Object(got),
            expected["attributes"],
            "{name}: attributes"
        );

        let vars = expected["variables"].as_object().unwrap();
        let arrays: Vec<String> = view
            .schema()
            .arrays()
            .map(|a| a.name().to_owned())
            .collect();
        assert_eq!(arrays.len(), vars.len(), "{name}: {arrays:?}");
        for (var, want) in vars {
            let array = var.replace('/', ".");
            let layout = view.array_layout(&array).await.unwrap();
            let ctx = format!("{name}: {var}");
            assert_eq!(layout.dtype.display_name(), want["dtype"], "{ctx}: dtype");
            let dims: Vec<&str> = layout.dimension_names.iter().map(|d| d.as_str()).collect();
            assert_eq!(json!(dims), want["dims"], "{ctx}: dims");
            assert_eq!(json!(layout.shape), want["shape"], "{ctx}: shape");
            assert_eq!(
                values(&view, &array, &layout.dtype).await,
                want["values"],
                "{ctx}: values"
            );

            let mut want_attrs = want["attributes"].as_object().unwrap().clone();
            let declared_fill = want_attrs.remove("_FillValue");
            let got: serde_json::Map<String, Value> = view
                .array_attributes(&array)
                .await
                .unwrap()
                .iter()
                .map(|(k, a)| (k.clone(), attr(a)))
                .collect();
            assert_eq!(
                Value::Object(got),
                Value::Object(want_attrs),
                "{ctx}: attributes"
            );

            // The fill is the declared _FillValue, or NetCDF's default.
            let fill = atlas_manifest::fill_json(layout.fill_value.as_ref());
            match declared_fill {
                Some(f) if want["dtype"] != "string" => {
                    let f = &f["value"];
                    assert_eq!(fill.as_f64(), f.as_f64(), "{ctx}: fill");
                }
                Some(_) => {}
                None => assert!(!fill.is_null(), "{ctx}: a default fill"),
            }
        }
    }
}

#[tokio::test]
async fn an_undeclared_fill_is_netcdfs_default_so_nulls_mean_missing() {
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("raw");
    let options = IngestOptions::default().with_decode(Decode::Raw);
    ingest_into(&[data().join("good/nc4.nc4")], &dest, &options)
        .await
        .unwrap();
    let atlas = Atlas::open(&dest, &atlas::OpenOptions::default())
        .await
        .unwrap();
    let view = atlas.dataset("nc4.nc4").await.unwrap();
    let view = &view;
    let fill = |a: &'static str| async move {
        atlas_manifest::fill_json(view.array_layout(a).await.unwrap().fill_value.as_ref())
    };
    assert_eq!(fill("plain_i1").await, json!(-127));
    assert_eq!(fill("plain_u2").await, json!(65535));
    assert_eq!(fill("plain_i4").await, json!(-2147483647));
    assert_eq!(fill("plain_u8").await, json!(18446744073709551614u64));
    assert_eq!(fill("plain_f8").await, json!(9.969209968386869e36));
    assert_eq!(fill("filled_i4").await, json!(7));
}
