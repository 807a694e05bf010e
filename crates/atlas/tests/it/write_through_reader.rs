//! What the writer stores reads back through the facade's reader (`Atlas`,
//! `Dataset`, `atlas_manifest`), and rebuilt fixtures dump as their manifests.

#![cfg(test)]

use crate::write_support;

use atlas::{Atlas, AtlasWriter, Attr, DType, Timestamp, WriterConfig};
use ndarray::{Array, ArrayD, IxDyn, arr0};
use serde_json::Value;
use write_support::manifest::{load, rebuild};

fn dyn_array<T: Clone>(shape: &[usize], values: Vec<T>) -> ArrayD<T> {
    Array::from_shape_vec(IxDyn(shape), values).unwrap()
}

#[tokio::test]
async fn every_dtype_layout_and_attribute_reads_back_through_the_reader() {
    let dir = tempfile::tempdir().unwrap();
    let w = AtlasWriter::create(dir.path(), &WriterConfig::default())
        .await
        .unwrap();
    let mut d = w.add_dataset("obs").unwrap();
    d.define_array::<i8>("i8", &["n"], &[3], None, Some(-1))
        .unwrap();
    d.write_array("i8", &[1], dyn_array(&[2], vec![5i8, 6]).view())
        .unwrap();
    d.define_array::<u64>("u64", &["n"], &[2], None, None)
        .unwrap();
    d.write_array("u64", &[0], dyn_array(&[2], vec![u64::MAX, 1]).view())
        .unwrap();
    d.define_array::<f32>("grid", &["y", "x"], &[3, 4], Some(&[2, 2]), Some(f32::NAN))
        .unwrap();
    d.write_array(
        "grid",
        &[1, 1],
        dyn_array(&[2, 2], vec![1f32, 2., 3., 4.]).view(),
    )
    .unwrap();
    d.define_array::<Timestamp>("time", &["t"], &[1], None, None)
        .unwrap();
    d.write_array("time", &[0], dyn_array(&[1], vec![Timestamp(42)]).view())
        .unwrap();
    d.define_array::<String>("name", &[], &[], None, None)
        .unwrap();
    d.write_array("name", &[], arr0("Ærø".to_string()).into_dyn().view())
        .unwrap();
    d.define_array::<Vec<u8>>("blob", &["n"], &[2], None, None)
        .unwrap();
    d.write_array(
        "blob",
        &[0],
        dyn_array(&[2], vec![vec![1u8, 2], vec![]]).view(),
    )
    .unwrap();
    d.define_array::<f64>("empty", &["n"], &[0], None, None)
        .unwrap();
    d.set_array_attribute("grid", "units", "K").unwrap();
    d.set_array_attribute("grid", "scale", Attr::Float32(0.5))
        .unwrap();
    d.set_attribute("platform", Attr::UInt16(6901)).unwrap();
    d.set_attribute("tags", Attr::StringList(vec!["a".into(), "b".into()]))
        .unwrap();
    d.set_attribute("raw", Attr::BinaryList(vec![vec![0], vec![255, 1]]))
        .unwrap();
    d.finish().await.unwrap();
    w.finish().await.unwrap();

    let atlas = Atlas::open(dir.path(), &atlas::OpenOptions::default())
        .await
        .unwrap();
    let v = atlas.dataset("obs").await.unwrap();
    assert_eq!(v.ordinal(), 0);
    let i8s = v
        .read_array::<i8>("i8", atlas::Region::all())
        .await
        .unwrap();
    assert_eq!(i8s.iter().copied().collect::<Vec<_>>(), vec![-1, 5, 6]);
    let u64s = v
        .read_array::<u64>("u64", atlas::Region::all())
        .await
        .unwrap();
    assert_eq!(u64s.iter().copied().collect::<Vec<_>>(), vec![u64::MAX, 1]);
    let grid = v
        .read_array::<f32>("grid", atlas::Region::all())
        .await
        .unwrap();
    assert_eq!(grid.shape(), &[3, 4]);
    assert!(grid[[0, 0]].is_nan());
    assert_eq!(grid[[2, 2]], 4.0);
    let part = v
        .read_array::<f32>("grid", atlas::Region::block(&[1, 1], &[1, 2]))
        .await
        .unwrap();
    assert_eq!(part.iter().copied().collect::<Vec<_>>(), vec![1.0, 2.0]);
    let layout = v.array_layout("grid").await.unwrap();
    assert_eq!(layout.dtype, DType::Float32);
    assert_eq!(layout.shape, vec![3, 4]);
    assert_eq!(layout.chunk_shape, vec![2, 2]);
    assert_eq!(layout.dimension_names, vec!["y", "x"]);
    assert!(matches!(layout.fill_value, Some(atlas::Value::Float(f)) if f.is_nan()));
    assert_eq!(
        v.read_array::<Timestamp>("time", atlas::Region::all())
            .await
            .unwrap()[[0]],
        Timestamp(42)
    );
    assert_eq!(
        v.read_array::<String>("name", atlas::Region::all())
            .await
            .unwrap()
            .iter()
            .next()
            .unwrap(),
        "Ærø"
    );
    assert_eq!(
        v.read_array::<Vec<u8>>("blob", atlas::Region::all())
            .await
            .unwrap()[[0]],
        vec![1u8, 2]
    );
    assert_eq!(
        v.read_array::<f64>("empty", atlas::Region::all())
            .await
            .unwrap()
            .len(),
        0
    );
    assert_eq!(
        v.array_attributes("grid").await.unwrap(),
        vec![
            ("units".to_string(), Attr::String("K".into())),
            ("scale".to_string(), Attr::Float32(0.5))
        ]
    );
    assert_eq!(
        v.attributes().await.unwrap(),
        vec![
            ("platform".to_string(), Attr::UInt16(6901)),
            (
                "tags".to_string(),
                Attr::StringList(vec!["a".into(), "b".into()])
            ),
            (
                "raw".to_string(),
                Attr::BinaryList(vec![vec![0], vec![255, 1]])
            ),
        ]
    );
    let stats = v.array_stats("i8").await.unwrap().unwrap();
    assert_eq!((stats.null_count, stats.row_count), (1, 3));
}

/// The manifest as `dump` prints it: live datasets only, no fixture bookkeeping.
pub fn manifest_as_dump(manifest: &Value) -> Value {
    let mut m = manifest.as_object().unwrap().clone();
    m.remove("fixture");
    m.remove("deleted");
    let datasets: Vec<Value> = m["datasets"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["deleted"] != Value::Bool(true))
        .map(|d| {
            let mut d = d.as_object().unwrap().clone();
            d.remove("deleted");
            Value::Object(d)
        })
        .collect();
    m.insert("datasets".into(), Value::Array(datasets));
    Value::Object(m)
}

#[tokio::test]
async fn every_fixture_rebuilt_from_its_manifest_dumps_as_its_manifest() {
    for name in ["small", "deleted", "mixed", "empty"] {
        let manifest = load(name);
        let dir = tempfile::tempdir().unwrap();
        rebuild(&manifest, dir.path()).await;
        let atlas = Atlas::open(dir.path(), &atlas::OpenOptions::default())
            .await
            .unwrap();
        let mut dumped = atlas_manifest::collection_json(&atlas.lone_member().unwrap(), true)
            .await
            .unwrap();
        let mut expected = manifest_as_dump(&manifest);
        // Segments are byte-identical (write_fixtures.rs); the footer differs
        // in its clock, so its compressed size may differ by a few bytes.
        let ours = write_support::Written::from_dir(dir.path());
        let theirs =
            write_support::Written::from_dir(&write_support::manifest::fixtures_dir().join(name));
        assert_eq!(
            dumped["container_bytes"].as_u64().unwrap() - ours.opened.footer_len,
            expected["container_bytes"].as_u64().unwrap() - theirs.opened.footer_len,
            "{name}: everything but the footer has the same size"
        );
        dumped.as_object_mut().unwrap().remove("container_bytes");
        expected.as_object_mut().unwrap().remove("container_bytes");
        assert_eq!(dumped, expected, "{name}");
    }
}

/// A dataset's place in a segment is where its `finish` came, not its
/// ordinal; the reader's guess by ordinal must never hand back a neighbour.
#[tokio::test]
async fn reads_find_each_dataset_when_segment_order_is_not_ordinal_order() {
    let dir = tempfile::tempdir().unwrap();
    let w = AtlasWriter::create(dir.path(), &WriterConfig::default())
        .await
        .unwrap();
    let mut pending = Vec::new();
    for i in 0..6u32 {
        let mut d = w.add_dataset(&format!("d{i}")).unwrap();
        // d1 and d4 lack `v`, so positions in its segment fall behind ordinals.
        if i % 3 != 1 {
            let n = u64::from(i) + 1;
            d.define_array::<i32>("v", &["n"], &[n], None, None)
                .unwrap();
            let values: Vec<i32> = (0..n as i32).map(|k| 100 * i as i32 + k).collect();
            d.write_array("v", &[0], dyn_array(&[n as usize], values).view())
                .unwrap();
        }
        d.define_array::<u8>("flag", &["one"], &[1], None, None)
            .unwrap();
        d.write_array("flag", &[0], dyn_array(&[1], vec![i as u8]).view())
            .unwrap();
        pending.push(d);
    }
    // Finished last to first: segment positions run against the ordinals.
    while let Some(d) = pending.pop() {
        d.finish().await.unwrap();
    }
    w.finish().await.unwrap();

    let atlas = Atlas::open(dir.path(), &Default::default()).await.unwrap();
    for d in atlas.datasets().await.unwrap() {
        let i = d.ordinal();
        assert_eq!(d.name(), format!("d{i}"));
        let flag = d
            .read_array::<u8>("flag", atlas::Region::all())
            .await
            .unwrap();
        assert_eq!(
            flag.into_raw_vec_and_offset().0,
            vec![i as u8],
            "{}",
            d.name()
        );
        if i % 3 != 1 {
            let v = d
                .read_array::<i32>("v", atlas::Region::all())
                .await
                .unwrap();
            let want: Vec<i32> = (0..=i as i32).map(|k| 100 * i as i32 + k).collect();
            assert_eq!(v.into_raw_vec_and_offset().0, want, "{}", d.name());
            let any = d.read_any("v", atlas::Region::all()).await.unwrap();
            assert_eq!(any.shape(), &[i as usize + 1], "{}", d.name());
        } else {
            assert!(matches!(
                d.read_array::<i32>("v", atlas::Region::all()).await,
                Err(atlas::AtlasError::ArrayNotFound { .. })
            ));
        }
    }
}
