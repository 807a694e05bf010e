//! The conformance fixtures, read through the public API only: every manifest
//! value is reproduced, deleted datasets appear nowhere, and each element type
//! reads back through `read_array`.

#![cfg(test)]

use crate::read_support;

use atlas::{Atlas, AtlasError, Attr, DType, Timestamp};
use atlas_manifest::collection_json;
use read_support::{FIXTURES, fixture_dir, load_fixture, manifest, memory};
use serde_json::Value;

/// The manifest as the dump prints it: without `fixture`, `deleted`, the deleted
/// datasets' entries and the per-dataset `deleted` flag.
fn expected(name: &str) -> Value {
    let mut m = manifest(name);
    let obj = m.as_object_mut().unwrap();
    obj.remove("fixture");
    obj.remove("deleted");
    let datasets = obj.get_mut("datasets").unwrap().as_array_mut().unwrap();
    datasets.retain(|d| d["deleted"] != Value::Bool(true));
    for d in datasets.iter_mut() {
        d.as_object_mut().unwrap().remove("deleted");
    }
    m
}

/// JSON equality where numbers compare by value (an integer and a float never
/// compare equal unless both are integers of the same value or equal floats).
fn same(a: &Value, b: &Value, at: &str) -> Result<(), String> {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let equal = match (x.as_i64(), y.as_i64(), x.as_u64(), y.as_u64()) {
                (Some(p), Some(q), _, _) => p == q,
                (_, _, Some(p), Some(q)) => p == q,
                _ => x.as_f64() == y.as_f64() && x.is_f64() == y.is_f64(),
            };
            equal
                .then_some(())
                .ok_or_else(|| format!("{at}: {x} != {y}"))
        }
        (Value::Array(x), Value::Array(y)) => {
            if x.len() != y.len() {
                return Err(format!("{at}: {} items != {}", x.len(), y.len()));
            }
            x.iter()
                .zip(y)
                .enumerate()
                .try_for_each(|(i, (p, q))| same(p, q, &format!("{at}[{i}]")))
        }
        (Value::Object(x), Value::Object(y)) => {
            let mut kx: Vec<_> = x.keys().collect();
            let mut ky: Vec<_> = y.keys().collect();
            kx.sort();
            ky.sort();
            if kx != ky {
                return Err(format!("{at}: keys {kx:?} != {ky:?}"));
            }
            x.iter()
                .try_for_each(|(k, v)| same(v, &y[k], &format!("{at}.{k}")))
        }
        _ => (a == b)
            .then_some(())
            .ok_or_else(|| format!("{at}: {a} != {b}")),
    }
}

#[tokio::test]
async fn every_fixture_reproduces_every_manifest_value_from_an_object_store() {
    for name in FIXTURES {
        let op = memory();
        load_fixture(&op, name, "collections/x").await;
        let atlas = Atlas::open((op, "collections/x"), &atlas::OpenOptions::default())
            .await
            .unwrap();
        let dumped = collection_json(&atlas.lone_member().unwrap(), true)
            .await
            .unwrap();
        same(&expected(name), &dumped, name).unwrap_or_else(|e| panic!("{e}"));
    }
}

#[tokio::test]
async fn every_fixture_reproduces_every_manifest_value_from_a_local_directory() {
    for name in FIXTURES {
        let dir = tempfile::tempdir().unwrap();
        for entry in std::fs::read_dir(fixture_dir(name)).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), dir.path().join(entry.file_name())).unwrap();
        }
        let atlas = Atlas::open(dir.path(), &atlas::OpenOptions::default())
            .await
            .unwrap();
        let dumped = collection_json(&atlas.lone_member().unwrap(), true)
            .await
            .unwrap();
        same(&expected(name), &dumped, name).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            !dir.path().join(".atlas-tmp").exists(),
            "opening for reading creates nothing"
        );
    }
}

#[tokio::test]
async fn the_catalogue_matches_the_manifests() {
    for name in FIXTURES {
        let m = manifest(name);
        let op = memory();
        load_fixture(&op, name, "").await;
        let atlas = Atlas::open((op, ""), &atlas::OpenOptions::default())
            .await
            .unwrap();
        let member = atlas.lone_member().unwrap();
        assert_eq!(member.format_version(), 8);
        assert_eq!(member.codec().to_string(), m["codec"]);
        assert_eq!(member.container_bytes(), m["container_bytes"]);
        assert_eq!(
            member.dataset_count_total() as u64,
            m["dataset_count_total"]
        );
        assert_eq!(member.interned_schemas() as u64, m["interned_schemas"]);
        let deleted: Vec<String> = serde_json::from_value(m["deleted"].clone()).unwrap();
        assert_eq!(member.deleted_datasets(), deleted);
        let live: Vec<&str> = m["datasets"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["deleted"] == false)
            .map(|d| d["name"].as_str().unwrap())
            .collect();
        assert_eq!(atlas.dataset_names().await.unwrap(), live);
        assert_eq!(atlas.dataset_count().await.unwrap(), live.len());
        assert_eq!(
            atlas
                .datasets()
                .await
                .unwrap()
                .iter()
                .map(|d| d.name().to_owned())
                .collect::<Vec<_>>(),
            live
        );
        for gone in &deleted {
            assert!(!atlas.contains(gone).await.unwrap());
            assert!(matches!(
                atlas.dataset(gone).await,
                Err(AtlasError::DatasetNotFound { .. })
            ));
        }
        for d in m["datasets"].as_array().unwrap() {
            let view = atlas.dataset(d["name"].as_str().unwrap()).await;
            if d["deleted"] == true {
                continue;
            }
            let view = view.unwrap();
            assert_eq!(u64::from(view.ordinal()), d["ordinal"]);
            let arrays: Vec<&str> = view.schema().arrays().map(|a| a.name()).collect();
            let expected: Vec<&str> = d["arrays"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a["name"].as_str().unwrap())
                .collect();
            assert_eq!(arrays, expected);
            let keys: Vec<&str> = view.schema().attributes().map(|(k, _)| k).collect();
            let expected: Vec<&str> = d["attributes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a[0].as_str().unwrap())
                .collect();
            assert_eq!(keys, expected, "schema keys in set order");
            assert_eq!(view.to_owned_schema().arrays.len(), arrays.len());
        }
        assert!(member.mask_warnings().is_empty());
        assert!(
            !atlas
                .array_names()
                .await
                .unwrap()
                .contains(&"_datasets".to_owned())
        );
        assert_eq!(
            member.segments().iter().map(|v| v.len).sum::<u64>() + 8 + member.footer_bytes() + 16,
            member.container_bytes()
        );
    }
}

async fn open_small() -> Atlas {
    let op = memory();
    load_fixture(&op, "small", "").await;
    Atlas::open((op, ""), &atlas::OpenOptions::default())
        .await
        .unwrap()
}

#[tokio::test]
async fn the_fixtures_element_types_read_back() {
    let atlas = open_small().await;
    let jan = atlas.dataset("jan_2024").await.unwrap();
    let t = jan
        .read_array::<f32>("temperature", atlas::Region::all())
        .await
        .unwrap();
    assert_eq!(t.shape(), &[4, 8]);
    assert_eq!(t[[1, 2]], 25.5);
    let lat = jan
        .read_array::<f64>("lat", atlas::Region::all())
        .await
        .unwrap();
    assert_eq!(
        lat.iter().copied().collect::<Vec<_>>(),
        vec![-45.0, -15.0, 15.0, 45.0]
    );
    let station = jan
        .read_array::<String>("station", atlas::Region::all())
        .await
        .unwrap();
    assert_eq!(
        station.iter().cloned().collect::<Vec<_>>(),
        vec!["st-0-a".to_owned(), String::new(), "station é 0".to_owned()]
    );
    let time = jan
        .read_array::<Timestamp>("time", atlas::Region::all())
        .await
        .unwrap();
    assert_eq!(time[[1]], Timestamp(1_704_067_200_000_000_001));
    let flags = jan
        .read_array::<u8>("flags", atlas::Region::all())
        .await
        .unwrap();
    assert_eq!(
        flags.iter().copied().collect::<Vec<_>>(),
        vec![0, 1, 2, 255, 255]
    );

    let op = memory();
    load_fixture(&op, "deleted", "").await;
    let deleted = Atlas::open((op, ""), &atlas::OpenOptions::default())
        .await
        .unwrap();
    let v = deleted
        .dataset("d01")
        .await
        .unwrap()
        .read_array::<i32>("v", atlas::Region::all())
        .await
        .unwrap();
    assert_eq!(
        v.iter().copied().collect::<Vec<_>>(),
        vec![100, 101, 102, 103, 104, 105]
    );

    let op = memory();
    load_fixture(&op, "mixed", "").await;
    let mixed = Atlas::open((op, ""), &atlas::OpenOptions::default())
        .await
        .unwrap();
    let b = mixed
        .dataset("b")
        .await
        .unwrap()
        .read_array::<i64>("value", atlas::Region::all())
        .await
        .unwrap();
    assert_eq!(
        b.iter().copied().collect::<Vec<_>>(),
        vec![-7, 9_000_000_000]
    );
    let c = mixed
        .dataset("c")
        .await
        .unwrap()
        .read_array::<String>("value", atlas::Region::all())
        .await
        .unwrap();
    assert_eq!(
        c.iter().cloned().collect::<Vec<_>>(),
        vec!["x".to_owned(), "yz".to_owned()]
    );
}

#[tokio::test]
#[allow(clippy::reversed_empty_ranges)] // a reversed range is one of the refused regions
async fn an_index_drops_its_axis_and_ranges_select_like_numpy() {
    let atlas = open_small().await;
    let jan = atlas.dataset("jan_2024").await.unwrap();
    let whole = jan
        .read_array::<f32>("temperature", atlas::Region::all())
        .await
        .unwrap();
    // temperature[1, 2:] : one row, its columns from 2 on.
    let row = jan
        .read_array::<f32>("temperature", atlas::Region::new().index(1).range(2..))
        .await
        .unwrap();
    assert_eq!(row.shape(), &[6]);
    let expected: Vec<f32> = (2..8).map(|c| whole[[1, c]]).collect();
    assert_eq!(row.iter().copied().collect::<Vec<_>>(), expected);
    // temperature[0:2, 3] through the tuple form and the untyped read.
    let column = jan.read_any("temperature", (0..2u64, 3u64)).await.unwrap();
    assert_eq!(column.shape(), &[2]);
    assert_eq!(
        column.dimension_names(),
        ["lat"],
        "the indexed axis's name goes too"
    );
    let atlas::ArrayData::Float32(values) = column.data() else {
        panic!("float32 data expected, got {:?}", column.dtype());
    };
    assert_eq!(
        values.iter().copied().collect::<Vec<_>>(),
        vec![whole[[0, 3]], whole[[1, 3]]]
    );
    // A rank-0 result from indexing every axis.
    let one = jan
        .read_array::<f32>("temperature", (2u64, 5u64))
        .await
        .unwrap();
    assert_eq!(one.shape(), &[] as &[usize]);
    assert_eq!(one[[]], whole[[2, 5]]);
    for bad in [
        atlas::Region::new().index(4).full(),
        atlas::Region::new().full(),
        atlas::Region::new().range(3..1).full(),
    ] {
        let err = jan
            .read_array::<f32>("temperature", bad.clone())
            .await
            .unwrap_err();
        assert!(
            matches!(err, AtlasError::InvalidRegion { .. }),
            "{bad:?}: {err}"
        );
    }
}

#[tokio::test]
async fn a_region_reads_exactly_those_elements() {
    let atlas = open_small().await;
    let jan = atlas.dataset("jan_2024").await.unwrap();
    // Rows 1..3, columns 3..7: crosses chunk boundaries on both axes.
    let part = jan
        .read_array::<f32>("temperature", atlas::Region::block(&[1, 3], &[2, 4]))
        .await
        .unwrap();
    assert_eq!(part.shape(), &[2, 4]);
    assert_eq!(
        part.iter().copied().collect::<Vec<_>>(),
        vec![25.75, 26.0, 26.25, 26.5, 50.75, 51.0, 51.25, 51.5]
    );
    let empty = jan
        .read_array::<f32>("temperature", atlas::Region::block(&[4, 0], &[0, 8]))
        .await
        .unwrap();
    assert_eq!(empty.shape(), &[0, 8]);
    // The partial u8 write: the unwritten tail is the fill value.
    let tail = jan
        .read_array::<u8>("flags", atlas::Region::block(&[3], &[2]))
        .await
        .unwrap();
    assert_eq!(tail.iter().copied().collect::<Vec<_>>(), vec![255, 255]);
}

#[tokio::test]
async fn a_wrong_rank_or_an_out_of_bounds_region_is_an_error() {
    let atlas = open_small().await;
    let jan = atlas.dataset("jan_2024").await.unwrap();
    for (start, shape) in [
        (&[0u64][..], &[4u64][..]),
        (&[0, 0, 0][..], &[1, 1, 1][..]),
        (&[][..], &[4, 8][..]),
        (&[0, 0][..], &[5, 8][..]),
        (&[3, 7][..], &[1, 2][..]),
        (&[u64::MAX, 0][..], &[2, 1][..]),
    ] {
        let err = jan
            .read_array::<f32>("temperature", atlas::Region::block(start, shape))
            .await
            .unwrap_err();
        assert!(
            matches!(err, AtlasError::InvalidRegion { .. }),
            "{start:?} {shape:?}: {err}"
        );
    }
}

#[tokio::test]
async fn the_wrong_element_type_is_a_dtype_mismatch_not_a_reinterpretation() {
    let atlas = open_small().await;
    let jan = atlas.dataset("jan_2024").await.unwrap();
    let err = jan
        .read_array::<i32>("temperature", atlas::Region::all())
        .await
        .unwrap_err();
    assert!(
        matches!(
            &err,
            AtlasError::DTypeMismatch {
                stored: DType::Float32,
                requested: DType::Int32,
                ..
            }
        ),
        "{err}"
    );
    let err = jan
        .read_array::<i64>("time", atlas::Region::all())
        .await
        .unwrap_err();
    assert!(matches!(err, AtlasError::DTypeMismatch { .. }), "{err}");
    let err = jan
        .read_array::<f32>("nope", atlas::Region::all())
        .await
        .unwrap_err();
    assert!(matches!(err, AtlasError::ArrayNotFound { .. }), "{err}");
}

#[tokio::test]
async fn attributes_come_back_in_set_order_with_their_types() {
    let atlas = open_small().await;
    let feb = atlas.dataset("feb_2024").await.unwrap();
    let attrs = feb.attributes().await.unwrap();
    let keys: Vec<&str> = attrs.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        keys,
        [
            "month",
            "source",
            "qc_passed",
            "scale",
            "platform",
            "tags",
            "checksum",
            "levels"
        ]
    );
    assert_eq!(
        feb.attribute("platform").await.unwrap(),
        Some(Attr::UInt16(6902))
    );
    assert_eq!(feb.attribute("absent").await.unwrap(), None);
    let t = feb.array_attributes("temperature").await.unwrap();
    assert_eq!(t[0], ("units".to_owned(), Attr::String("celsius".into())));
    assert_eq!(
        feb.array_attribute("temperature", "valid_range")
            .await
            .unwrap(),
        Some(Attr::Float64List(vec![-5.0, 40.0]))
    );
    assert_eq!(feb.array_attribute("station", "units").await.unwrap(), None);
    assert!(feb.array_attributes("station").await.unwrap().is_empty());
    assert!(matches!(
        feb.array_attribute("nope", "units").await,
        Err(AtlasError::ArrayNotFound { .. })
    ));

    let by_dataset = atlas.attributes_by_dataset(None, "month").await.unwrap();
    assert_eq!(
        by_dataset,
        vec![
            ("jan_2024".into(), Attr::Int64(1)),
            ("feb_2024".into(), Attr::Int64(2)),
            ("mar_2024".into(), Attr::Int64(3)),
        ]
    );
    let units = atlas
        .attributes_by_dataset(Some("lat"), "units")
        .await
        .unwrap();
    assert_eq!(units.len(), 3);
    assert!(
        atlas
            .attributes_by_dataset(None, "absent")
            .await
            .unwrap()
            .is_empty()
    );
    assert!(matches!(
        atlas.attributes_by_dataset(Some("nope"), "units").await,
        Err(AtlasError::ArrayNotFound { .. })
    ));
}

#[tokio::test]
async fn layouts_and_statistics_come_from_the_segments() {
    let atlas = open_small().await;
    let feb = atlas.dataset("feb_2024").await.unwrap();
    let layout = feb.array_layout("temperature").await.unwrap();
    assert_eq!(layout.shape, vec![4, 8]);
    assert_eq!(layout.chunk_shape, vec![2, 4]);
    assert_eq!(layout.dimension_names, vec!["lat", "lon"]);
    assert_eq!(layout.element_count, 32);
    assert_eq!(layout.fill_value, Some(atlas::Value::Float(-999.0)));
    let stats = feb.array_stats("temperature").await.unwrap().unwrap();
    assert_eq!(stats.null_count, 16);

    // Folded over the three datasets: mar never wrote temperature (all nulls).
    let all = atlas.array_stats("temperature").await.unwrap().unwrap();
    assert_eq!(all.row_count, 96);
    assert_eq!(all.null_count, 48);
    assert_eq!(all.min, Some(atlas::Value::Float(0.0)));
    assert_eq!(all.max, Some(atlas::Value::Float(76.75)));
    let rows = atlas.array_stats_by_dataset("temperature").await.unwrap();
    assert_eq!(
        rows.iter()
            .map(|r| (r.dataset.as_str(), r.ordinal))
            .collect::<Vec<_>>(),
        vec![("jan_2024", 0), ("feb_2024", 1), ("mar_2024", 2)]
    );
    assert!(matches!(
        atlas.array_stats("nope").await,
        Err(AtlasError::ArrayNotFound { .. })
    ));
    assert!(matches!(
        atlas.array_stats("_datasets").await,
        Err(AtlasError::ArrayNotFound { .. })
    ));
}

#[tokio::test]
async fn a_fold_leaves_out_datasets_of_another_dtype_but_lists_them() {
    let op = memory();
    load_fixture(&op, "mixed", "").await;
    let atlas = Atlas::open((op, ""), &atlas::OpenOptions::default())
        .await
        .unwrap();
    // a: f32 [1.5, 3.5], b: i64, c: string. Only a is comparable with a (the first).
    let folded = atlas.array_stats("value").await.unwrap().unwrap();
    assert_eq!(folded.row_count, 3);
    assert_eq!(folded.min, Some(atlas::Value::Float(1.5)));
    assert_eq!(folded.max, Some(atlas::Value::Float(3.5)));
    let rows = atlas.array_stats_by_dataset("value").await.unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[1].stats.max, Some(atlas::Value::Int(9_000_000_000)));
}

#[tokio::test]
async fn hidden_datasets_count_toward_no_statistic_and_no_attribute_column() {
    let op = memory();
    load_fixture(&op, "deleted", "").await;
    let atlas = Atlas::open((op, ""), &atlas::OpenOptions::default())
        .await
        .unwrap();
    let rows = atlas.array_stats_by_dataset("v").await.unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r.dataset.as_str()).collect();
    assert_eq!(names, ["d00", "d01", "d03", "d04", "d06", "d07", "d08"]);
    let folded = atlas.array_stats("v").await.unwrap().unwrap();
    assert_eq!(folded.row_count, 42);
    assert_eq!(folded.max, Some(atlas::Value::Int(805)));
    let idx = atlas.attributes_by_dataset(None, "idx").await.unwrap();
    assert_eq!(
        idx.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
        names
    );
}

#[tokio::test]
async fn atlas_and_views_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Atlas>();
    check::<atlas::Dataset>();
    let atlas = std::sync::Arc::new(open_small().await);
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let atlas = atlas.clone();
            tokio::spawn(async move {
                let name = ["jan_2024", "feb_2024", "mar_2024"][i % 3];
                let view = atlas.dataset(name).await.unwrap();
                view.read_array::<f32>("temperature", atlas::Region::all())
                    .await
                    .unwrap()
                    .len()
            })
        })
        .collect();
    for t in tasks {
        assert_eq!(t.await.unwrap(), 32);
    }
    assert_eq!(atlas.segments_opened(), 1, "one open shared by every task");
}

#[tokio::test]
async fn owned_dataset_handles_move_into_spawned_tasks_and_share_the_collection() {
    fn owned<T: Clone + Send + Sync + 'static>() {}
    owned::<Atlas>();
    owned::<atlas::Dataset>();
    let atlas = open_small().await;
    let copy = atlas.clone();
    let handles: Vec<atlas::Dataset> = atlas.datasets().await.unwrap();
    drop(atlas);
    let tasks: Vec<_> = handles
        .into_iter()
        .map(|d| {
            tokio::spawn(async move {
                let data = d
                    .read_any("temperature", atlas::Region::all())
                    .await
                    .unwrap();
                (d.name().to_owned(), data.shape().to_vec(), data.dtype())
            })
        })
        .collect();
    let mut seen = Vec::new();
    for t in tasks {
        let (name, shape, dtype) = t.await.unwrap();
        assert_eq!(dtype, atlas::DType::Float32, "{name}");
        assert_eq!(shape.iter().product::<usize>(), 32, "{name}");
        seen.push(name);
    }
    assert_eq!(seen, ["jan_2024", "feb_2024", "mar_2024"]);
    assert_eq!(
        copy.segments_opened(),
        1,
        "the handles outlived the Atlas they came from and shared its one segment open"
    );
}

/// Compile-time: every future of the read API can move between threads.
#[tokio::test]
async fn every_read_future_is_send() {
    fn send<T: Send>(_: &T) {}
    let atlas = open_small().await;
    let view = atlas.dataset("jan_2024").await.unwrap();
    send(&Atlas::open((memory(), ""), &atlas::OpenOptions::default()));
    send(&Atlas::open(".", &atlas::OpenOptions::default()));
    send(&atlas.array_stats("temperature"));
    send(&atlas.array_stats_by_dataset("temperature"));
    send(&atlas.attributes_by_dataset(None, "month"));
    send(&atlas.delete_datasets(&[]));
    send(&view.array_layout("lat"));
    send(&view.array_stats("lat"));
    send(&view.attributes());
    send(&view.attribute("month"));
    send(&view.array_attributes("lat"));
    send(&view.array_attribute("lat", "units"));
    send(&view.read_array::<f64>("lat", atlas::Region::all()));
    send(&atlas_manifest::collection_json(
        &atlas.lone_member().unwrap(),
        true,
    ));
    send(&atlas.dataset("jan_2024"));
    send(&atlas.dataset_names());
    send(&atlas.datasets());
    send(&atlas.array_names());
}

/// A one-dataset collection with one array per element type, built with
/// array-format directly; `declared` overrides the footer's dtype of an array.
async fn all_types_collection(declared: &[(&str, atlas::DType)]) -> Vec<u8> {
    use atlas::DType;
    use atlas_format::{ArrayDecl, DatasetSchema, FooterBuilder, assemble};
    use atlas_segment::SegmentWriter;

    type Fill = fn(&mut SegmentWriter);
    let arrays: Vec<(&str, DType, Fill)> = vec![
        ("i8", DType::Int8, |w| put(w, vec![-1i8, 2, 3])),
        ("i16", DType::Int16, |w| put(w, vec![-1i16, 2, 300])),
        ("i32", DType::Int32, |w| put(w, vec![-1i32, 2, 70_000])),
        ("i64", DType::Int64, |w| put(w, vec![-1i64, 2, 1 << 40])),
        ("u8", DType::UInt8, |w| put(w, vec![1u8, 2, 255])),
        ("u16", DType::UInt16, |w| put(w, vec![1u16, 2, 65_535])),
        ("u32", DType::UInt32, |w| put(w, vec![1u32, 2, u32::MAX])),
        ("u64", DType::UInt64, |w| put(w, vec![1u64, 2, u64::MAX])),
        ("f32", DType::Float32, |w| {
            put(w, vec![0.5f32, f32::NAN, -2.0])
        }),
        ("f64", DType::Float64, |w| {
            put(w, vec![0.5f64, f64::INFINITY, -2.0])
        }),
        ("string", DType::String, |w| {
            put(w, vec!["a".to_owned(), String::new(), "ü".to_owned()])
        }),
        ("binary", DType::Binary, |w| {
            put(w, vec![vec![0u8, 255], vec![], vec![7]])
        }),
        ("time", DType::TimestampNs, |w| {
            put(w, vec![Timestamp(-1), Timestamp(0), Timestamp(i64::MAX)])
        }),
    ];
    fn put<T: atlas::Element>(w: &mut SegmentWriter, values: Vec<T>) {
        w.define_array::<T>("d", vec!["x".into()], &[3], None, None)
            .unwrap();
        let data = ndarray::Array::from_vec(values).into_dyn();
        w.write_array("d", &[0], data.view()).unwrap();
    }
    let mut footer = FooterBuilder::new(atlas::Codec::Zstd, 0);
    let schema = footer.intern_schema(&DatasetSchema {
        arrays: arrays
            .iter()
            .map(|(name, dtype, _)| ArrayDecl {
                name: (*name).into(),
                dtype: declared
                    .iter()
                    .find(|(n, _)| n == name)
                    .map_or(dtype.clone(), |(_, d)| d.clone()),
                attributes: vec![],
            })
            .collect(),
        attributes: vec![],
    });
    footer.push_dataset("d", schema).unwrap();
    let mut segments = Vec::new();
    for (name, _, fill) in &arrays {
        let mut w = read_support::segment_writer();
        fill(&mut w);
        let bytes = read_support::finish_segment(w).await;
        footer.push_variable(name, bytes.len() as u64).unwrap();
        segments.push(bytes);
    }
    let refs: Vec<&[u8]> = segments.iter().map(Vec::as_slice).collect();
    assemble(&footer.finish(), &refs).unwrap()
}

#[tokio::test]
async fn every_element_type_reads_back_as_written() {
    let op = memory();
    op.write("data.atlas", all_types_collection(&[]).await)
        .await
        .unwrap();
    let atlas = Atlas::open((op, ""), &atlas::OpenOptions::default())
        .await
        .unwrap();
    let d = atlas.dataset("d").await.unwrap();
    macro_rules! check {
        ($array:literal, $t:ty, $expected:expr) => {{
            let got: Vec<$t> = d
                .read_array::<$t>($array, atlas::Region::all())
                .await
                .unwrap()
                .into_iter()
                .collect();
            assert_eq!(got, $expected, $array);
        }};
    }
    check!("i8", i8, vec![-1, 2, 3]);
    check!("i16", i16, vec![-1, 2, 300]);
    check!("i32", i32, vec![-1, 2, 70_000]);
    check!("i64", i64, vec![-1, 2, 1 << 40]);
    check!("u8", u8, vec![1, 2, 255]);
    check!("u16", u16, vec![1, 2, 65_535]);
    check!("u32", u32, vec![1, 2, u32::MAX]);
    check!("u64", u64, vec![1, 2, u64::MAX]);
    check!("f64", f64, vec![0.5, f64::INFINITY, -2.0]);
    check!(
        "string",
        String,
        vec!["a".to_owned(), String::new(), "ü".to_owned()]
    );
    check!("binary", Vec<u8>, vec![vec![0, 255], vec![], vec![7]]);
    check!(
        "time",
        Timestamp,
        vec![Timestamp(-1), Timestamp(0), Timestamp(i64::MAX)]
    );
    let f: Vec<f32> = d
        .read_array::<f32>("f32", atlas::Region::all())
        .await
        .unwrap()
        .into_iter()
        .collect();
    assert_eq!(f[0], 0.5);
    assert!(f[1].is_nan());
    let doc = atlas_manifest::dataset_json(&d, true).await.unwrap();
    let f32_values = &doc["arrays"][8]["values"];
    assert_eq!(f32_values, &serde_json::json!([0.5, "NaN", -2.0]));
    assert_eq!(
        doc["arrays"][9]["values"],
        serde_json::json!([0.5, "inf", -2.0])
    );
    assert_eq!(
        doc["arrays"][11]["values"],
        serde_json::json!([[0, 255], [], [7]])
    );
    assert_eq!(doc["arrays"][12]["dtype"], "timestamp_ns");
}

#[tokio::test]
async fn a_segment_dtype_other_than_the_footers_is_corrupt() {
    // The footer says i32 holds Float32; its segment holds Int32.
    let op = memory();
    let container = all_types_collection(&[("i32", atlas::DType::Float32)]).await;
    op.write("data.atlas", container).await.unwrap();
    let atlas = Atlas::open((op, ""), &atlas::OpenOptions::default())
        .await
        .unwrap();
    let d = atlas.dataset("d").await.unwrap();
    let err = d
        .read_array::<f32>("i32", atlas::Region::all())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, AtlasError::CorruptCollection { what, .. } if what.contains("float32") && what.contains("int32")),
        "{err}"
    );
    assert!(matches!(
        d.array_layout("i32").await,
        Err(AtlasError::CorruptCollection { .. })
    ));
    // The footer's dtype is what read_array checks T against: i32 is a mismatch, not a read.
    assert!(matches!(
        d.read_array::<i32>("i32", atlas::Region::all()).await,
        Err(AtlasError::DTypeMismatch { .. })
    ));
}
