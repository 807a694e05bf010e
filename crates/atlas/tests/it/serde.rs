//! With the `serde` feature, the public data types serialize as plain data.

#![cfg(test)]

use atlas::{Atlas, Attr, Region, Timestamp};
use serde_json::json;

fn fixture(name: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/v8")
        .join(name)
}

#[tokio::test]
async fn layouts_statistics_and_attributes_serialize_as_plain_data() {
    let atlas = Atlas::open(fixture("small"), &atlas::OpenOptions::default())
        .await
        .unwrap();
    let name = atlas.dataset_names().await.unwrap()[0].to_owned();
    let dataset = atlas.dataset(&name).await.unwrap();
    let array = dataset.schema().arrays().next().unwrap().name().to_owned();
    let layout = dataset.array_layout(&array).await.unwrap();
    let value = serde_json::to_value(&layout).unwrap();
    assert_eq!(value["shape"], json!(layout.shape));
    assert_eq!(value["dimension_names"], json!(layout.dimension_names));
    let stats = dataset.array_stats(&array).await.unwrap().unwrap();
    let value = serde_json::to_value(&stats).unwrap();
    assert_eq!(value["row_count"], json!(stats.row_count));
    assert_eq!(value["null_count"], json!(stats.null_count));
    assert!(dataset.read_any(&array, Region::all()).await.is_ok());

    assert_eq!(
        serde_json::to_value(Attr::Int32List(vec![1, 2])).unwrap(),
        json!({"Int32List": [1, 2]})
    );
    assert_eq!(
        serde_json::to_value(atlas::Value::Timestamp(Timestamp(7))).unwrap(),
        json!({"timestamp_ns": 7})
    );
    let member = atlas.lone_member().unwrap();
    let summary = serde_json::to_value(member.segments()).unwrap();
    assert_eq!(summary.as_array().unwrap().len(), member.segments().len());
}
