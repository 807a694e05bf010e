//! `Atlas::select` and `Atlas::catalogue` on the conformance fixtures, checked
//! against a brute-force evaluation over every element the manifests list.

#![cfg(test)]

use crate::query_support;
use crate::read_support;

use std::sync::Arc;

use arrow_array::Array;
use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, TimestampNanosecondType, UInt8Type, UInt64Type};
use arrow_schema::{DataType, TimeUnit};
use atlas::{Atlas, CatalogueOptions, DType, Predicate};
use atlas::{Field, QueryError, StatField};
use query_support::{Row, V, brute};
use read_support::{fixture_dir, manifest};
use serde_json::Value as J;

fn scalar(dtype: &str, v: &J) -> Option<V> {
    Some(match dtype {
        "float32" | "float64" => V::F(match v {
            J::String(s) if s == "NaN" => f64::NAN,
            J::String(s) if s == "inf" => f64::INFINITY,
            J::String(s) if s == "-inf" => f64::NEG_INFINITY,
            other => other.as_f64()?,
        }),
        "bool" => V::I(i128::from(v.as_bool()?)),
        "string" => V::S(v.as_str()?.as_bytes().to_vec()),
        "binary" => V::S(
            v.as_array()?
                .iter()
                .map(|b| b.as_u64().unwrap() as u8)
                .collect(),
        ),
        _ if v.is_i64() => V::I(i128::from(v.as_i64()?)),
        _ => V::I(i128::from(v.as_u64()?)),
    })
}

fn is_fill(v: &V, fill: &Option<V>) -> bool {
    match (v, fill) {
        (V::F(a), Some(V::F(f))) if f.is_nan() => a.is_nan(),
        (_, Some(f)) => v == f,
        (_, None) => false,
    }
}

/// The live datasets of a fixture as the model: attributes and non-null elements.
fn rows(fixture: &str) -> Vec<Row> {
    let m = manifest(fixture);
    let mut out = Vec::new();
    for d in m["datasets"].as_array().unwrap() {
        if d["deleted"].as_bool().unwrap() {
            continue;
        }
        let mut row = Row {
            name: d["name"].as_str().unwrap().to_owned(),
            ..Row::default()
        };
        for pair in d["attributes"].as_array().unwrap() {
            let (key, attr) = (pair[0].as_str().unwrap(), &pair[1]);
            if let Some(v) = scalar(attr["type"].as_str().unwrap(), &attr["value"]) {
                row.attrs.insert(key.to_owned(), v);
            }
        }
        for a in d["arrays"].as_array().unwrap() {
            let dtype = a["dtype"].as_str().unwrap();
            let fill = if a["fill"].is_null() {
                None
            } else {
                scalar(dtype, &a["fill"])
            };
            let all: Vec<V> = a["values"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| scalar(dtype, v).unwrap())
                .collect();
            let count = all.len() as u64;
            let kept = all.into_iter().filter(|v| !is_fill(v, &fill)).collect();
            row.arrays
                .insert(a["name"].as_str().unwrap().to_owned(), (kept, count));
        }
        out.push(row);
    }
    out
}

async fn check(fixture: &str, cases: &[(&str, Predicate)]) {
    let atlas = Atlas::open(fixture_dir(fixture), &atlas::OpenOptions::default())
        .await
        .unwrap();
    let rows = rows(fixture);
    for (text, resolved) in cases {
        let selected = atlas
            .select(&Predicate::parse(text).unwrap())
            .await
            .unwrap();
        let expected: Vec<String> = rows
            .iter()
            .filter(|r| brute(resolved, r))
            .map(|r| r.name.clone())
            .collect();
        assert_eq!(selected, expected, "{fixture}: {text}");
    }
}

#[tokio::test]
async fn selections_on_the_small_fixture_equal_the_brute_force() {
    let a = Field::array;
    let at = Field::attr;
    check(
        "small",
        &[
            ("lat between -45 45", a("lat").between(-45, 45)),
            ("lat between -44.9 45", a("lat").between(-44.9, 45)),
            ("temperature >= 10", a("temperature").at_least(10)),
            (
                "temperature overlaps 20 24",
                a("temperature").overlaps(20, 24),
            ),
            (
                "temperature.nulls = 0",
                Field::stat("temperature", StatField::Nulls).equals(0),
            ),
            (
                "not temperature.min exists",
                Field::stat("temperature", StatField::Min)
                    .exists()
                    .negated(),
            ),
            ("temperature != 0", a("temperature").equals(0).negated()),
            (
                "time >= 2024-01-01T00:00:00.000000002",
                a("time").at_least(atlas::Value::Timestamp(atlas::Timestamp(
                    1_704_067_200_000_000_002,
                ))),
            ),
            (
                "time overlaps 2024-02-01 2024-02-28",
                a("time").overlaps(
                    atlas::Value::Timestamp(atlas::Timestamp(1_706_745_600_000_000_000)),
                    atlas::Value::Timestamp(atlas::Timestamp(1_709_078_400_000_000_000)),
                ),
            ),
            (
                "station.max = 'station é 1'",
                Field::stat("station", StatField::Max).equals("station é 1"),
            ),
            ("station >= ''", a("station").at_least("")),
            (
                "flags <= 2 and flags.nulls = 2",
                a("flags")
                    .at_most(2)
                    .and(Field::stat("flags", StatField::Nulls).equals(2)),
            ),
            (
                "month >= 2 and source = \"buoy\"",
                at("month").at_least(2).and(at("source").equals("buoy")),
            ),
            (
                "qc_passed = true or scale > 2",
                at("qc_passed").equals(true).or(at("scale").greater_than(2)),
            ),
            (
                "platform between 6902 6903",
                at("platform").between(6902, 6903),
            ),
            (
                "checksum overlaps 'a' 'z'",
                at("checksum").overlaps("a", "z"),
            ),
        ],
    )
    .await;
}

#[tokio::test]
async fn deleted_datasets_are_never_selected_and_fill_values_are_nulls() {
    let a = Field::array;
    check(
        "deleted",
        &[
            ("v exists", a("v").exists()),
            ("v < 300", a("v").less_than(300)),
            ("v.nulls = 1", Field::stat("v", StatField::Nulls).equals(1)),
            ("v.min = 1", Field::stat("v", StatField::Min).equals(1)),
            (
                "idx >= 3 and not v overlaps 500 599",
                Field::attr("idx")
                    .at_least(3)
                    .and(a("v").overlaps(500, 599).negated()),
            ),
        ],
    )
    .await;
}

#[tokio::test]
async fn comparing_a_literal_with_an_incompatible_stored_type_is_an_error() {
    let atlas = Atlas::open(fixture_dir("mixed"), &atlas::OpenOptions::default())
        .await
        .unwrap();
    // `value` is f32, i64 and string in three datasets: a number cannot meet the string.
    let e = atlas
        .select(&Predicate::parse("value > 1").unwrap())
        .await
        .unwrap_err();
    assert!(
        matches!(
            &e,
            QueryError::TypeMismatch {
                stored: Some(DType::String),
                ..
            }
        ),
        "{e:?}"
    );
    // A date never compares with a float.
    let small = Atlas::open(fixture_dir("small"), &atlas::OpenOptions::default())
        .await
        .unwrap();
    let e = small
        .select(&Predicate::parse("lat < 2020-01-01").unwrap())
        .await
        .unwrap_err();
    assert!(matches!(e, QueryError::TypeMismatch { .. }), "{e:?}");
    // A list attribute answers exists only.
    let e = small
        .select(&Predicate::parse("tags = 'argo'").unwrap())
        .await
        .unwrap_err();
    assert!(
        matches!(
            &e,
            QueryError::ListAttribute {
                stored: DType::List { .. },
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(
        small
            .select(&Predicate::parse("exists tags").unwrap())
            .await
            .unwrap()
            .len(),
        3
    );
}

#[tokio::test]
async fn unknown_names_are_errors_not_empty_results() {
    let atlas = Atlas::open(fixture_dir("small"), &atlas::OpenOptions::default())
        .await
        .unwrap();
    for text in ["nothing = 1", "@lat = 1", "month.min = 1", "exists nothing"] {
        let e = atlas
            .select(&Predicate::parse(text).unwrap())
            .await
            .unwrap_err();
        assert!(matches!(e, QueryError::UnknownName { .. }), "{text}: {e:?}");
    }
    let e = atlas
        .catalogue(&CatalogueOptions::default().arrays(["nothing"]))
        .await
        .unwrap_err();
    assert!(matches!(e, QueryError::UnknownName { .. }), "{e:?}");
}

#[tokio::test]
async fn the_small_catalogue_holds_typed_attributes_and_statistics() {
    let atlas = Atlas::open(fixture_dir("small"), &atlas::OpenOptions::default())
        .await
        .unwrap();
    let batch = atlas.catalogue(&CatalogueOptions::default()).await.unwrap();
    let schema = batch.schema();
    assert_eq!(batch.num_rows(), 3);
    let ty = |name: &str| schema.field_with_name(name).unwrap().data_type().clone();
    assert_eq!(ty("name"), DataType::Utf8);
    assert_eq!(ty("month"), DataType::Int64);
    assert_eq!(ty("qc_passed"), DataType::Boolean);
    assert_eq!(ty("platform"), DataType::UInt16);
    assert_eq!(ty("checksum"), DataType::Binary);
    assert!(matches!(ty("tags"), DataType::List(f) if *f.data_type() == DataType::Utf8));
    assert!(matches!(ty("levels"), DataType::List(f) if *f.data_type() == DataType::Int32));
    assert_eq!(ty("temperature.min"), DataType::Float32);
    assert_eq!(ty("flags.max"), DataType::UInt8);
    assert_eq!(
        ty("time.min"),
        DataType::Timestamp(TimeUnit::Nanosecond, Some(Arc::from("UTC")))
    );
    assert_eq!(ty("station.max"), DataType::Utf8);
    let col = |name: &str| batch.column_by_name(name).unwrap().clone();
    let tmin = col("temperature.min");
    let tmin = tmin.as_primitive::<Float32Type>();
    assert_eq!(tmin.value(1), 10.0);
    assert!(tmin.is_null(2), "mar_2024's temperature is all fill");
    assert_eq!(
        col("temperature.nulls")
            .as_primitive::<UInt64Type>()
            .values(),
        &[0, 16, 32]
    );
    assert_eq!(col("flags.max").as_primitive::<UInt8Type>().value(0), 2);
    assert_eq!(
        col("time.max")
            .as_primitive::<TimestampNanosecondType>()
            .value(2),
        1_709_424_000_000_000_000
    );
    let tags = col("tags");
    let tags = tags.as_list::<i32>();
    assert_eq!(tags.value(1).as_string::<i32>().value(1), "m1");
}

#[tokio::test]
async fn a_catalogue_takes_chosen_columns_and_rows() {
    let atlas = Atlas::open(fixture_dir("deleted"), &atlas::OpenOptions::default())
        .await
        .unwrap();
    let options = CatalogueOptions::default()
        .attributes(Vec::<String>::new())
        .arrays(["v"])
        .predicate(Predicate::parse("v >= 300").unwrap());
    let batch = atlas.catalogue(&options).await.unwrap();
    let schema = batch.schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(
        names,
        [
            "name", "ordinal", "schema", "v.count", "v.nulls", "v.min", "v.max"
        ]
    );
    let selected = atlas
        .select(&Predicate::parse("v >= 300").unwrap())
        .await
        .unwrap();
    let rows: Vec<&str> = batch
        .column(0)
        .as_string::<i32>()
        .iter()
        .flatten()
        .collect();
    assert_eq!(rows, selected);
}

#[tokio::test]
async fn a_mixed_type_array_gets_text_min_max_columns() {
    let atlas = Atlas::open(fixture_dir("mixed"), &atlas::OpenOptions::default())
        .await
        .unwrap();
    let batch = atlas.catalogue(&CatalogueOptions::default()).await.unwrap();
    let min = batch.column_by_name("value.min").unwrap();
    let min = min.as_string::<i32>();
    assert_eq!(
        min.iter().collect::<Vec<_>>(),
        [Some("1.5"), Some("-7"), Some("x")]
    );
}

#[tokio::test]
async fn an_empty_collection_has_an_empty_catalogue_and_selection() {
    let atlas = Atlas::open(fixture_dir("empty"), &atlas::OpenOptions::default())
        .await
        .unwrap();
    let batch = atlas.catalogue(&CatalogueOptions::default()).await.unwrap();
    assert_eq!((batch.num_rows(), batch.num_columns()), (0, 3));
    let e = atlas
        .select(&Predicate::parse("x = 1").unwrap())
        .await
        .unwrap_err();
    assert!(matches!(e, QueryError::UnknownName { .. }));
}
