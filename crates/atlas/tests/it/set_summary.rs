//! What a set manifest records of a member (`atlas::testing::member_entry`):
//! counts and bounds over the live datasets only, unknown bounds wherever
//! they cannot be stated with certainty, and always a valid manifest entry.

#![cfg(test)]

use std::path::Path;

use atlas::testing::member_entry;
use atlas::{
    Atlas, AtlasWriter, DType, MemberEntry, OpenOptions, Value, VariableSummary, WriterConfig,
};
use atlas_format::{DecodeLimits, SetManifest};

const CREATED: i64 = 1_700_000_000_000;

fn arr<T: Clone>(values: &[T]) -> ndarray::ArrayD<T> {
    ndarray::arr1(values).into_dyn()
}

/// Four datasets; `d` holds extreme values and is deleted afterwards.
async fn write_member(dir: &Path) {
    let config = WriterConfig::default().created_unix_ms(CREATED);
    let writer = AtlasWriter::create(dir, &config).await.unwrap();

    let mut a = writer.add_dataset("a").unwrap();
    a.define_array::<f32>("TEMP", &["N"], &[3], None, Some(99999.0))
        .unwrap();
    a.write_array("TEMP", &[0], arr(&[1.5f32, 99999.0, 3.0]).view())
        .unwrap();
    a.define_array::<i32>("PSAL", &["N"], &[4], None, Some(-1))
        .unwrap();
    a.write_array("PSAL", &[0], arr(&[5i32, -1, 7, 9]).view())
        .unwrap();
    a.define_array::<f32>("X", &["N"], &[1], None, None)
        .unwrap();
    a.write_array("X", &[0], arr(&[1.0f32]).view()).unwrap();
    a.set_attribute("cycle", 10i64).unwrap();
    a.set_attribute("platform", "A").unwrap();
    a.set_attribute("mixed", 1i32).unwrap();
    a.finish().await.unwrap();

    let mut b = writer.add_dataset("b").unwrap();
    // Only the first two of four elements are written: the rest are fill.
    b.define_array::<f32>("TEMP", &["N"], &[4], None, Some(99999.0))
        .unwrap();
    b.write_array("TEMP", &[0], arr(&[-2.5f32, 4.0]).view())
        .unwrap();
    b.define_array::<i32>("PSAL", &["N"], &[2], None, Some(-1))
        .unwrap();
    b.write_array("PSAL", &[0], arr(&[-3i32, 2]).view())
        .unwrap();
    // The same name with another type than in `a`.
    b.define_array::<i32>("X", &["N"], &[1], None, None)
        .unwrap();
    b.write_array("X", &[0], arr(&[5i32]).view()).unwrap();
    b.set_attribute("cycle", 12i64).unwrap();
    b.set_attribute("platform", "B").unwrap();
    b.set_attribute("mixed", 2.5f64).unwrap();
    b.finish().await.unwrap();

    let mut c = writer.add_dataset("c").unwrap();
    c.define_array::<f32>("TEMP", &["N"], &[2], None, Some(99999.0))
        .unwrap();
    c.write_array("TEMP", &[0], arr(&[0.0f32, 2.0]).view())
        .unwrap();
    c.define_array::<i32>("PSAL", &["N"], &[1], None, Some(-1))
        .unwrap();
    c.write_array("PSAL", &[0], arr(&[100i32]).view()).unwrap();
    c.set_attribute("cycle", 11i64).unwrap();
    c.set_attribute("platform", "C").unwrap();
    c.finish().await.unwrap();

    let mut d = writer.add_dataset("d").unwrap();
    d.define_array::<f32>("TEMP", &["N"], &[1], None, Some(99999.0))
        .unwrap();
    d.write_array("TEMP", &[0], arr(&[1000.0f32]).view())
        .unwrap();
    d.define_array::<i32>("PSAL", &["N"], &[1], None, Some(-1))
        .unwrap();
    d.write_array("PSAL", &[0], arr(&[-500i32]).view()).unwrap();
    d.set_attribute("cycle", 9999i64).unwrap();
    d.set_attribute("platform", "D").unwrap();
    d.set_attribute("mixed", 3i32).unwrap();
    d.finish().await.unwrap();

    writer.finish().await.unwrap();
}

async fn described() -> (tempfile::TempDir, Atlas, MemberEntry) {
    let dir = tempfile::tempdir().unwrap();
    write_member(dir.path()).await;
    let atlas = Atlas::open(dir.path(), &OpenOptions::default())
        .await
        .unwrap();
    atlas.delete_datasets(&["d"]).await.unwrap();
    let entry = member_entry(&atlas.lone_member().unwrap(), "m-0001", "members/m-0001")
        .await
        .unwrap();
    (dir, atlas, entry)
}

fn variable<'e>(entry: &'e MemberEntry, name: &str) -> &'e VariableSummary {
    entry
        .variables
        .iter()
        .find(|v| v.name == name)
        .unwrap_or_else(|| panic!("no summary of {name}: {:?}", entry.variables))
}

#[tokio::test]
async fn counts_and_size_describe_the_member() {
    let (dir, _atlas, entry) = described().await;
    assert_eq!(entry.id, "m-0001");
    assert_eq!(entry.path, "members/m-0001");
    assert_eq!(entry.datasets_total, 4);
    assert_eq!(entry.datasets_live, 3);
    let size = std::fs::metadata(dir.path().join("data.atlas"))
        .unwrap()
        .len();
    assert_eq!(entry.bytes, size);
    assert_eq!(entry.created_unix_ms, CREATED);
    assert!(entry.checksums.mask.is_some(), "the delete wrote a mask");
}

#[tokio::test]
async fn a_float_variable_counts_fill_values_as_nulls_and_bounds_the_rest() {
    let (_dir, _atlas, entry) = described().await;
    let temp = variable(&entry, "TEMP");
    assert_eq!(temp.dtype, DType::Float32);
    assert_eq!(temp.count, 3 + 4 + 2, "d is deleted");
    assert_eq!(
        temp.nulls,
        1 + 2,
        "a's fill value and b's two unwritten elements"
    );
    assert_eq!(temp.min, Some(Value::Float(-2.5)));
    assert_eq!(temp.max, Some(Value::Float(4.0)), "d's 1000.0 is deleted");
}

#[tokio::test]
async fn an_int_variable_is_bounded_over_the_live_datasets_only() {
    let (_dir, _atlas, entry) = described().await;
    let psal = variable(&entry, "PSAL");
    assert_eq!(psal.dtype, DType::Int32);
    assert_eq!(psal.count, 4 + 2 + 1);
    assert_eq!(psal.nulls, 1);
    assert_eq!(psal.min, Some(Value::Int(-3)), "d's -500 is deleted");
    assert_eq!(psal.max, Some(Value::Int(100)));
}

#[tokio::test]
async fn a_variable_declared_with_two_types_has_unknown_bounds() {
    let (_dir, _atlas, entry) = described().await;
    let x = variable(&entry, "X");
    assert_eq!(x.count, 2);
    assert_eq!(x.min, None);
    assert_eq!(x.max, None);
}

#[tokio::test]
async fn an_int_attribute_is_bounded_and_string_or_mixed_ones_are_not() {
    let (_dir, _atlas, entry) = described().await;
    let keys: Vec<&str> = entry.attributes.iter().map(|a| a.key.as_str()).collect();
    assert_eq!(keys, ["cycle"], "platform is a string, mixed mixes kinds");
    let cycle = &entry.attributes[0];
    assert_eq!(cycle.min, Value::Int(10));
    assert_eq!(cycle.max, Value::Int(12), "d's 9999 is deleted");
}

#[tokio::test]
async fn the_entry_passes_the_manifests_validation_and_round_trips() {
    let (_dir, _atlas, entry) = described().await;
    let manifest = SetManifest {
        generation: 1,
        members: vec![entry],
    };
    let bytes = manifest.encode().unwrap();
    assert_eq!(
        SetManifest::decode(&bytes, &DecodeLimits::default()).unwrap(),
        manifest
    );
}

#[tokio::test]
async fn its_checksums_are_those_of_the_sidecar() {
    let (_dir, atlas, entry) = described().await;
    assert_eq!(
        atlas
            .lone_member()
            .unwrap()
            .write_checksums()
            .await
            .unwrap(),
        entry.checksums
    );
}

#[tokio::test]
async fn a_nan_and_zeros_keep_the_bounds_valid_and_wide() {
    let dir = tempfile::tempdir().unwrap();
    let writer = AtlasWriter::create(dir.path(), &WriterConfig::default())
        .await
        .unwrap();
    let mut ds = writer.add_dataset("nan").unwrap();
    ds.define_array::<f64>("V", &["N"], &[3], None, None)
        .unwrap();
    ds.write_array("V", &[0], arr(&[0.0f64, f64::NAN, 0.0]).view())
        .unwrap();
    ds.define_array::<f64>("Z", &["N"], &[2], None, None)
        .unwrap();
    ds.write_array("Z", &[0], arr(&[-0.0f64, -0.0]).view())
        .unwrap();
    ds.finish().await.unwrap();
    writer.finish().await.unwrap();
    let atlas = Atlas::open(dir.path(), &OpenOptions::default())
        .await
        .unwrap();
    let entry = member_entry(&atlas.lone_member().unwrap(), "n", "members/n")
        .await
        .unwrap();

    let v = variable(&entry, "V");
    assert!(
        matches!(v.min, Some(Value::Float(x)) if x == 0.0 && x.is_sign_negative()),
        "a zero minimum is widened to -0.0: {:?}",
        v.min
    );
    assert!(
        matches!(v.max, Some(Value::Float(x)) if x.is_nan()),
        "a NaN sorts above every number: {:?}",
        v.max
    );
    let z = variable(&entry, "Z");
    assert!(
        matches!(z.max, Some(Value::Float(x)) if x == 0.0 && x.is_sign_positive()),
        "a -0.0 maximum is widened to +0.0: {:?}",
        z.max
    );
    SetManifest {
        generation: 1,
        members: vec![entry],
    }
    .encode()
    .unwrap();
}
