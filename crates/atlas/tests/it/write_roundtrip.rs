//! Round trips of what the writer stores, read back through the format layer
//! and array-format directly (independently of the facade's reader).

#![cfg(test)]

use crate::write_support;

use atlas::{AtlasError, AtlasWriter, Attr, Codec, DType, Timestamp, Value, WriterConfig};
use ndarray::{Array, ArrayD, IxDyn, arr0};
use write_support::{Written, writer_in};

fn dyn_array<T: Clone>(shape: &[usize], values: Vec<T>) -> ArrayD<T> {
    Array::from_shape_vec(IxDyn(shape), values).expect("shape matches")
}

async fn finish_into(dir: &std::path::Path, w: AtlasWriter) -> Written {
    w.finish().await.expect("finish");
    Written::from_dir(dir)
}

#[tokio::test]
async fn every_array_format_dtype_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let w = writer_in(dir.path(), WriterConfig::default()).await;
    let mut d = w.add_dataset("all").unwrap();
    macro_rules! put {
        ($name:literal, $t:ty, $values:expr) => {{
            let values: Vec<$t> = $values;
            let n = values.len() as u64;
            d.define_array::<$t>($name, &["n"], &[n], Some(&[2]), None)
                .unwrap();
            d.write_array($name, &[0], dyn_array(&[n as usize], values).view())
                .unwrap();
        }};
    }
    put!("i8", i8, vec![i8::MIN, -1, 0, i8::MAX]);
    put!("i16", i16, vec![i16::MIN, 0, i16::MAX]);
    put!("i32", i32, vec![i32::MIN, 7, i32::MAX]);
    put!("i64", i64, vec![i64::MIN, 9_000_000_000, i64::MAX]);
    put!("u8", u8, vec![0, 128, u8::MAX]);
    put!("u16", u16, vec![0, 6901, u16::MAX]);
    put!("u32", u32, vec![0, 1 << 31, u32::MAX]);
    put!("u64", u64, vec![0, 1 << 63, u64::MAX]);
    put!("f32", f32, vec![f32::MIN, -0.5, 1.25, f32::MAX]);
    put!("f64", f64, vec![f64::MIN_POSITIVE, -2.5, 1e300]);
    put!(
        "ts",
        Timestamp,
        vec![
            Timestamp(-1),
            Timestamp(0),
            Timestamp(1_704_067_200_000_000_001)
        ]
    );
    put!(
        "s",
        String,
        vec!["".into(), "plain".into(), "ünïcødé ✓ 🌊".into()]
    );
    put!(
        "b",
        Vec<u8>,
        vec![vec![], vec![0, 255, 1], vec![222, 173, 190, 239]]
    );
    d.finish().await.unwrap();
    let out = finish_into(dir.path(), w).await;

    macro_rules! check {
        ($name:literal, $t:ty, $dtype:expr) => {{
            let got = out.read::<$t>($name, "all").await;
            let seg = out.segment($name).await;
            let info = seg.array("all").expect("array named after the dataset");
            assert_eq!(info.shape().len(), 1);
            got.iter().cloned().collect::<Vec<$t>>()
        }};
    }
    assert_eq!(check!("i8", i8, DType::Int8), vec![i8::MIN, -1, 0, i8::MAX]);
    assert_eq!(
        check!("i16", i16, DType::Int16),
        vec![i16::MIN, 0, i16::MAX]
    );
    assert_eq!(
        check!("i32", i32, DType::Int32),
        vec![i32::MIN, 7, i32::MAX]
    );
    assert_eq!(
        check!("i64", i64, DType::Int64),
        vec![i64::MIN, 9_000_000_000, i64::MAX]
    );
    assert_eq!(check!("u8", u8, DType::UInt8), vec![0, 128, u8::MAX]);
    assert_eq!(check!("u16", u16, DType::UInt16), vec![0, 6901, u16::MAX]);
    assert_eq!(
        check!("u32", u32, DType::UInt32),
        vec![0, 1 << 31, u32::MAX]
    );
    assert_eq!(
        check!("u64", u64, DType::UInt64),
        vec![0, 1 << 63, u64::MAX]
    );
    assert_eq!(
        check!("f32", f32, DType::Float32),
        vec![f32::MIN, -0.5, 1.25, f32::MAX]
    );
    assert_eq!(
        check!("f64", f64, DType::Float64),
        vec![f64::MIN_POSITIVE, -2.5, 1e300]
    );
    assert_eq!(
        check!("ts", Timestamp, DType::TimestampNs),
        vec![
            Timestamp(-1),
            Timestamp(0),
            Timestamp(1_704_067_200_000_000_001)
        ]
    );
    assert_eq!(
        check!("s", String, DType::String),
        vec!["".to_string(), "plain".into(), "ünïcødé ✓ 🌊".into()]
    );
    assert_eq!(
        check!("b", Vec<u8>, DType::Binary),
        vec![vec![], vec![0, 255, 1], vec![222, 173, 190, 239]]
    );

    // The footer's schema lists the arrays in definition order with their dtypes.
    let schema = out.schema("all");
    let declared: Vec<(String, DType)> = schema
        .arrays
        .iter()
        .map(|a| (a.name.to_string(), a.dtype.clone()))
        .collect();
    assert_eq!(
        declared,
        vec![
            ("i8".into(), DType::Int8),
            ("i16".into(), DType::Int16),
            ("i32".into(), DType::Int32),
            ("i64".into(), DType::Int64),
            ("u8".into(), DType::UInt8),
            ("u16".into(), DType::UInt16),
            ("u32".into(), DType::UInt32),
            ("u64".into(), DType::UInt64),
            ("f32".into(), DType::Float32),
            ("f64".into(), DType::Float64),
            ("ts".into(), DType::TimestampNs),
            ("s".into(), DType::String),
            ("b".into(), DType::Binary),
        ]
    );
    assert_eq!(
        out.segment_names(),
        declared.iter().map(|d| d.0.clone()).collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn partial_and_unaligned_writes_keep_fill_elsewhere_and_untouched_chunks_unwritten() {
    let dir = tempfile::tempdir().unwrap();
    let w = writer_in(dir.path(), WriterConfig::default()).await;
    let mut d = w.add_dataset("grid").unwrap();
    d.define_array::<f32>("t", &["y", "x"], &[5, 7], Some(&[2, 3]), Some(-999.0))
        .unwrap();
    // A 2x3 block straddling four chunks, then a later overlapping write that wins.
    d.write_array(
        "t",
        &[1, 2],
        dyn_array(&[2, 3], vec![1f32, 2., 3., 4., 5., 6.]).view(),
    )
    .unwrap();
    d.write_array("t", &[2, 4], dyn_array(&[1, 1], vec![50f32]).view())
        .unwrap();
    // An edge write into the clipped last row/column chunk.
    d.write_array("t", &[4, 6], dyn_array(&[1, 1], vec![9f32]).view())
        .unwrap();
    d.finish().await.unwrap();
    let out = finish_into(dir.path(), w).await;

    let got = out.read::<f32>("t", "grid").await;
    let mut expected = vec![-999.0f32; 35];
    for (r, c, v) in [
        (1, 2, 1.),
        (1, 3, 2.),
        (1, 4, 3.),
        (2, 2, 4.),
        (2, 3, 5.),
        (2, 4, 50.),
        (4, 6, 9.),
    ] {
        expected[r * 7 + c] = v;
    }
    assert_eq!(got.iter().copied().collect::<Vec<_>>(), expected);

    let seg = out.segment("t").await;
    let info = seg.array("grid").unwrap();
    assert_eq!(info.shape(), [5, 7]);
    assert_eq!(info.chunk_shape(), [2, 3]);
    assert_eq!(info.dimension_names(), ["y", "x"]);
    assert_eq!(info.fill(), Some(Value::Float(-999.0)));
    // Touched chunks: rows 0-1 and 2-3 x cols 0-2 and 3-5, plus the corner (2,2).
    let written: Vec<Vec<u32>> = info.written_chunks().map(|c| c.to_vec()).collect();
    assert_eq!(
        written,
        vec![vec![0, 0], vec![0, 1], vec![1, 0], vec![1, 1], vec![2, 2]]
    );
    let stats = info.stats().unwrap();
    assert_eq!(stats.row_count, 35);
    assert_eq!(stats.null_count, 35 - 7);
    assert_eq!(stats.min, Some(Value::Float(1.0)));
    assert_eq!(stats.max, Some(Value::Float(50.0)));
}

#[tokio::test]
async fn a_never_written_array_reads_as_its_fill_value() {
    let dir = tempfile::tempdir().unwrap();
    let w = writer_in(dir.path(), WriterConfig::default()).await;
    let mut d = w.add_dataset("d").unwrap();
    d.define_array::<i32>("never", &["n"], &[6], Some(&[4]), Some(-7))
        .unwrap();
    d.define_array::<f64>("no_fill", &["n"], &[3], None, None)
        .unwrap();
    d.finish().await.unwrap();
    let out = finish_into(dir.path(), w).await;

    assert_eq!(
        out.read::<i32>("never", "d")
            .await
            .iter()
            .copied()
            .collect::<Vec<_>>(),
        vec![-7; 6]
    );
    assert_eq!(
        out.read::<f64>("no_fill", "d")
            .await
            .iter()
            .copied()
            .collect::<Vec<_>>(),
        vec![0.0; 3]
    );
    let seg = out.segment("never").await;
    let info = seg.array("d").unwrap();
    assert_eq!(
        info.written_chunks().count(),
        0,
        "nothing written, nothing stored"
    );
    let stats = info.stats().unwrap();
    assert_eq!((stats.row_count, stats.null_count), (6, 6));
}

#[tokio::test]
async fn zero_length_axes_are_stored_with_their_shape() {
    let dir = tempfile::tempdir().unwrap();
    let w = writer_in(dir.path(), WriterConfig::default()).await;
    let mut d = w.add_dataset("empty_axes").unwrap();
    d.define_array::<f32>("h", &["n", "x"], &[0, 3], Some(&[0, 3]), None)
        .unwrap();
    d.define_array::<String>("s", &["n"], &[0], None, None)
        .unwrap();
    // Writing nothing into an empty axis is allowed, writing past it is not.
    d.write_array("h", &[0, 0], dyn_array::<f32>(&[0, 3], vec![]).view())
        .unwrap();
    let err = d
        .write_array("h", &[0, 0], dyn_array(&[1, 3], vec![1f32, 2., 3.]).view())
        .unwrap_err();
    assert!(matches!(err, AtlasError::InvalidRegion { .. }), "{err}");
    d.finish().await.unwrap();
    let out = finish_into(dir.path(), w).await;

    let seg = out.segment("h").await;
    let info = seg.array("empty_axes").unwrap();
    assert_eq!(info.shape(), [0, 3]);
    assert_eq!(
        info.chunk_shape(),
        [1, 3],
        "array-format stores a zero extent as 1"
    );
    assert_eq!(out.read::<f32>("h", "empty_axes").await.shape(), &[0, 3]);
    assert_eq!(out.read::<String>("s", "empty_axes").await.len(), 0);
}

#[tokio::test]
async fn rank_zero_arrays_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let w = writer_in(dir.path(), WriterConfig::default()).await;
    let mut d = w.add_dataset("scalars").unwrap();
    d.define_array::<f64>("pi", &[], &[], None, None).unwrap();
    d.write_array("pi", &[], arr0(std::f64::consts::PI).into_dyn().view())
        .unwrap();
    d.define_array::<String>("label", &[], &[], None, None)
        .unwrap();
    d.write_array("label", &[], arr0("scalar ✓".to_string()).into_dyn().view())
        .unwrap();
    d.define_array::<i16>("unset", &[], &[], None, Some(-1))
        .unwrap();
    d.finish().await.unwrap();
    let out = finish_into(dir.path(), w).await;

    let pi = out.read::<f64>("pi", "scalars").await;
    assert_eq!(pi.ndim(), 0);
    assert_eq!(
        pi.iter().copied().collect::<Vec<_>>(),
        vec![std::f64::consts::PI]
    );
    let label = out.read::<String>("label", "scalars").await;
    assert_eq!(
        label.iter().cloned().collect::<Vec<_>>(),
        vec!["scalar ✓".to_string()]
    );
    let unset = out.read::<i16>("unset", "scalars").await;
    assert_eq!(unset.iter().copied().collect::<Vec<_>>(), vec![-1]);
}

#[tokio::test]
async fn non_ascii_strings_and_names_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let w = writer_in(dir.path(), WriterConfig::default()).await;
    let mut d = w.add_dataset("station é 0").unwrap();
    let values = vec![
        "Ærøskøbing".to_string(),
        "東京".into(),
        "".into(),
        "emoji 🌊🐟".into(),
        "combining e\u{301}".into(),
    ];
    d.define_array::<String>("名前", &["n"], &[5], Some(&[2]), None)
        .unwrap();
    d.write_array("名前", &[0], dyn_array(&[5], values.clone()).view())
        .unwrap();
    d.set_attribute("τίτλος", "ωκεανός").unwrap();
    d.finish().await.unwrap();
    let out = finish_into(dir.path(), w).await;

    assert_eq!(out.dataset_names(), vec!["station é 0"]);
    let got = out.read::<String>("名前", "station é 0").await;
    assert_eq!(got.iter().cloned().collect::<Vec<_>>(), values);
    assert_eq!(
        out.attributes("_datasets", "station é 0").await,
        vec![("τίτλος".to_string(), Attr::String("ωκεανός".into()))]
    );
}

fn every_attr() -> Vec<(&'static str, Attr)> {
    vec![
        ("bool", Attr::Bool(true)),
        ("i8", Attr::Int8(-8)),
        ("i16", Attr::Int16(-16)),
        ("i32", Attr::Int32(-32)),
        ("i64", Attr::Int64(-64)),
        ("u8", Attr::UInt8(8)),
        ("u16", Attr::UInt16(6901)),
        ("u32", Attr::UInt32(32)),
        ("u64", Attr::UInt64(u64::MAX)),
        ("f32", Attr::Float32(1.5)),
        ("f64", Attr::Float64(-0.25)),
        ("string", Attr::String("celsius ✓".into())),
        ("binary", Attr::Binary(vec![222, 173, 0])),
        ("bool_list", Attr::BoolList(vec![true, false])),
        ("i8_list", Attr::Int8List(vec![-1, 2])),
        ("i16_list", Attr::Int16List(vec![-3, 4])),
        ("i32_list", Attr::Int32List(vec![1, 2, 3])),
        ("i64_list", Attr::Int64List(vec![i64::MIN, i64::MAX])),
        ("u8_list", Attr::UInt8List(vec![0, 255])),
        ("u16_list", Attr::UInt16List(vec![1, 65535])),
        ("u32_list", Attr::UInt32List(vec![7])),
        ("u64_list", Attr::UInt64List(vec![])),
        ("f32_list", Attr::Float32List(vec![0.5, -0.5])),
        ("f64_list", Attr::Float64List(vec![-5.0, 40.0])),
        (
            "string_list",
            Attr::StringList(vec!["argo".into(), "".into(), "ü".into()]),
        ),
        ("binary_list", Attr::BinaryList(vec![vec![1], vec![]])),
    ]
}

#[tokio::test]
async fn every_attribute_variant_reads_back_as_itself_on_datasets_and_arrays() {
    let dir = tempfile::tempdir().unwrap();
    let w = writer_in(dir.path(), WriterConfig::default()).await;
    let mut d = w.add_dataset("attrs").unwrap();
    d.define_array::<u8>("v", &["n"], &[1], None, None).unwrap();
    for (key, value) in every_attr() {
        d.set_attribute(key, value.clone()).unwrap();
        d.set_array_attribute("v", key, value).unwrap();
    }
    d.finish().await.unwrap();
    let out = finish_into(dir.path(), w).await;

    let mut expected: Vec<(String, Attr)> = every_attr()
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    expected.sort_by(|a, b| a.0.cmp(&b.0));
    for (segment, what) in [("_datasets", "dataset"), ("v", "array")] {
        let got: Vec<(String, Attr)> = out.attributes(segment, "attrs").await.into_iter().collect();
        assert_eq!(got, expected, "{what} attributes");
    }
    // The schema names every key in set order with the value's dtype.
    let schema = out.schema("attrs");
    let keys: Vec<(String, DType)> = schema
        .attributes
        .iter()
        .map(|(k, d)| (k.to_string(), d.clone()))
        .collect();
    let set_order: Vec<(String, DType)> = every_attr()
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.dtype()))
        .collect();
    assert_eq!(keys, set_order);
    let array_keys: Vec<(String, DType)> = schema.arrays[0]
        .attributes
        .iter()
        .map(|(k, d)| (k.to_string(), d.clone()))
        .collect();
    assert_eq!(array_keys, set_order);
}

#[tokio::test]
async fn dataset_attributes_live_on_a_rank_zero_u8_array_in_the_last_segment() {
    let dir = tempfile::tempdir().unwrap();
    let w = writer_in(dir.path(), WriterConfig::default()).await;
    for (name, with_attr) in [("a", true), ("b", false), ("c", true)] {
        let mut d = w.add_dataset(name).unwrap();
        d.define_array::<f32>("temperature", &["n"], &[2], None, None)
            .unwrap();
        d.set_array_attribute("temperature", "units", "celsius")
            .unwrap();
        if with_attr {
            d.set_attribute("source", format!("buoy {name}")).unwrap();
        }
        d.finish().await.unwrap();
    }
    let out = finish_into(dir.path(), w).await;

    assert_eq!(out.segment_names(), vec!["temperature", "_datasets"]);
    let seg = out.segment("_datasets").await;
    let names: Vec<&str> = seg.arrays().map(|a| a.name()).collect();
    assert_eq!(names, vec!["a", "c"], "only datasets with attributes");
    for info in seg.arrays() {
        assert_eq!(info.dtype(), DType::UInt8);
        assert!(info.shape().is_empty());
        assert!(info.fill().is_none());
        assert_eq!(info.written_chunks().count(), 0, "never written");
    }
    assert_eq!(
        out.attributes("_datasets", "c").await,
        vec![("source".to_string(), Attr::String("buoy c".into()))]
    );
    assert_eq!(
        out.attributes("temperature", "b").await,
        vec![("units".to_string(), Attr::String("celsius".into()))]
    );
    // a and c share a schema; b's lacks the dataset attribute.
    let f = &out.opened.footer;
    assert_eq!(f.schema_pool.len(), 2);
    assert_eq!(f.datasets.get("a"), f.datasets.get("c"));
    assert_ne!(f.datasets.get("a"), f.datasets.get("b"));
}

#[tokio::test]
async fn a_collection_without_dataset_attributes_has_no_datasets_segment() {
    let dir = tempfile::tempdir().unwrap();
    let w = writer_in(dir.path(), WriterConfig::default()).await;
    let mut d = w.add_dataset("plain").unwrap();
    d.define_array::<u8>("x", &["n"], &[1], None, None).unwrap();
    d.set_array_attribute("x", "k", 1i64).unwrap();
    d.finish().await.unwrap();
    let out = finish_into(dir.path(), w).await;
    assert_eq!(out.segment_names(), vec!["x"]);
    assert!(
        !out.opened
            .footer
            .string_pool
            .iter()
            .any(|s| s == "_datasets")
    );
}

#[tokio::test]
async fn one_array_name_may_hold_different_dtypes_in_different_datasets() {
    let dir = tempfile::tempdir().unwrap();
    let config = WriterConfig::default().codec(Codec::Uncompressed);
    let w = writer_in(dir.path(), config).await;
    let mut a = w.add_dataset("a").unwrap();
    a.define_array::<f32>("value", &["x"], &[3], None, None)
        .unwrap();
    a.write_array(
        "value",
        &[0],
        dyn_array(&[3], vec![1.5f32, 2.5, 3.5]).view(),
    )
    .unwrap();
    let mut b = w.add_dataset("b").unwrap();
    b.define_array::<i64>("value", &["x"], &[2], None, None)
        .unwrap();
    b.write_array(
        "value",
        &[0],
        dyn_array(&[2], vec![-7i64, 9_000_000_000]).view(),
    )
    .unwrap();
    let mut c = w.add_dataset("c").unwrap();
    c.define_array::<String>("value", &["x"], &[2], None, None)
        .unwrap();
    c.write_array(
        "value",
        &[0],
        dyn_array(&[2], vec!["x".to_string(), "yz".into()]).view(),
    )
    .unwrap();
    // Finish out of order: ordinals still follow add_dataset.
    c.finish().await.unwrap();
    a.finish().await.unwrap();
    b.finish().await.unwrap();
    let out = finish_into(dir.path(), w).await;

    assert_eq!(out.dataset_names(), vec!["a", "b", "c"]);
    assert_eq!(out.segment_names(), vec!["value"]);
    assert_eq!(out.opened.footer.schema_pool.len(), 3);
    assert_eq!(out.opened.footer.codec, Codec::Uncompressed);
    assert_eq!(
        out.read::<f32>("value", "a")
            .await
            .iter()
            .copied()
            .collect::<Vec<_>>(),
        vec![1.5, 2.5, 3.5]
    );
    assert_eq!(
        out.read::<i64>("value", "b")
            .await
            .iter()
            .copied()
            .collect::<Vec<_>>(),
        vec![-7, 9_000_000_000]
    );
    assert_eq!(
        out.read::<String>("value", "c")
            .await
            .iter()
            .cloned()
            .collect::<Vec<_>>(),
        vec!["x".to_string(), "yz".into()]
    );
}

#[tokio::test]
async fn datasets_of_unequal_length_share_one_schema() {
    let dir = tempfile::tempdir().unwrap();
    let w = writer_in(dir.path(), WriterConfig::default()).await;
    for (i, n) in [3usize, 17, 120].into_iter().enumerate() {
        let mut d = w.add_dataset(&format!("profile_{i}")).unwrap();
        d.define_array::<f32>("PRES", &["N_LEVELS"], &[n as u64], None, Some(99999.0))
            .unwrap();
        d.write_array("PRES", &[0], dyn_array(&[n], vec![1.0f32; n]).view())
            .unwrap();
        d.set_attribute("platform", 6901u16 as i64).unwrap();
        d.finish().await.unwrap();
    }
    let out = finish_into(dir.path(), w).await;
    assert_eq!(out.opened.footer.schema_pool.len(), 1);
    assert_eq!(out.read::<f32>("PRES", "profile_2").await.len(), 120);
}

#[tokio::test]
async fn each_codec_is_recorded_in_the_footer_and_on_every_block() {
    for codec in [Codec::Zstd, Codec::Lz4, Codec::Uncompressed] {
        let dir = tempfile::tempdir().unwrap();
        let config = WriterConfig::default().codec(codec).block_target_size(4096);
        let w = writer_in(dir.path(), config).await;
        let mut d = w.add_dataset("d").unwrap();
        let n = 10_000usize;
        d.define_array::<f64>("x", &["n"], &[n as u64], Some(&[1000]), None)
            .unwrap();
        let values: Vec<f64> = (0..n).map(|i| (i as f64).sqrt()).collect();
        d.write_array("x", &[0], dyn_array(&[n], values.clone()).view())
            .unwrap();
        d.finish().await.unwrap();
        let out = finish_into(dir.path(), w).await;
        assert_eq!(out.opened.footer.codec, codec);
        let got = out.read::<f64>("x", "d").await;
        assert_eq!(got.iter().copied().collect::<Vec<_>>(), values, "{codec}");
    }
}

#[tokio::test]
async fn large_zstd_blocks_compressed_by_several_threads_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let w = writer_in(dir.path(), WriterConfig::default()).await;
    // Two 512x512 f32 grids per dataset: 2 MiB, one multi-threaded block.
    let n = 512usize;
    for name in ["g0", "g1", "g2"] {
        let mut d = w.add_dataset(name).unwrap();
        d.define_array::<f32>(
            "sst",
            &["y", "x"],
            &[n as u64, n as u64],
            None,
            Some(f32::NAN),
        )
        .unwrap();
        let values: Vec<f32> = (0..n * n).map(|i| ((i % 977) as f32) * 0.01).collect();
        d.write_array("sst", &[0, 0], dyn_array(&[n, n], values).view())
            .unwrap();
        d.finish().await.unwrap();
    }
    let out = finish_into(dir.path(), w).await;
    for name in ["g0", "g1", "g2"] {
        let got = out.read::<f32>("sst", name).await;
        assert_eq!(got[[n - 1, n - 1]], (((n * n - 1) % 977) as f32) * 0.01);
    }
}

#[tokio::test]
async fn a_string_fill_value_is_stored_and_partly_written_chunks_use_array_formats_fill() {
    let dir = tempfile::tempdir().unwrap();
    let w = writer_in(dir.path(), WriterConfig::default()).await;
    let mut d = w.add_dataset("d").unwrap();
    d.define_array::<String>("s", &["n"], &[3], Some(&[2]), Some("n/a".to_string()))
        .unwrap();
    d.write_array("s", &[0], dyn_array(&[1], vec!["x".to_string()]).view())
        .unwrap();
    d.finish().await.unwrap();
    let out = finish_into(dir.path(), w).await;
    let seg = out.segment("s").await;
    assert_eq!(
        seg.array("d").unwrap().fill(),
        Some(Value::String("n/a".into()))
    );
    // array-format materialises unwritten string elements as "" whatever the fill.
    let got = out.read::<String>("s", "d").await;
    assert_eq!(
        got.iter().cloned().collect::<Vec<_>>(),
        vec!["x".to_string(), "".into(), "".into()]
    );
}
