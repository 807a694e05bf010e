//! Every misuse of the write API is an error, never a panic or a silent truncation.

#![cfg(test)]

use crate::write_support;

use atlas::{AtlasError, Codec, Value, WriterConfig};
use ndarray::{Array, IxDyn};
use write_support::{Written, writer_in};

fn ones(shape: &[usize]) -> ndarray::ArrayD<f32> {
    Array::from_elem(IxDyn(shape), 1.0f32)
}

#[tokio::test]
async fn invalid_and_reserved_names_are_refused_for_datasets_and_arrays() {
    let dir = tempfile::tempdir().unwrap();
    let w = writer_in(dir.path(), WriterConfig::default()).await;
    for bad in ["", "_datasets", "_x", "a/b", ".", ".."] {
        assert!(
            matches!(w.add_dataset(bad), Err(AtlasError::InvalidName { .. })),
            "dataset {bad:?}"
        );
    }
    let mut d = w.add_dataset("ok").unwrap();
    for bad in ["", "_datasets", "a/b", ".."] {
        assert!(
            matches!(
                d.define_array::<f32>(bad, &[], &[1], None, None),
                Err(AtlasError::InvalidName { .. })
            ),
            "array {bad:?}"
        );
    }
    assert!(matches!(
        d.set_attribute("", 1i64),
        Err(AtlasError::InvalidName { .. })
    ));
}

#[tokio::test]
async fn a_repeated_dataset_name_is_refused_even_after_the_first_was_aborted() {
    let dir = tempfile::tempdir().unwrap();
    let w = writer_in(dir.path(), WriterConfig::default()).await;
    let first = w.add_dataset("same").unwrap();
    assert!(matches!(
        w.add_dataset("same"),
        Err(AtlasError::DatasetAlreadyExists { .. })
    ));
    first.abort();
    assert!(matches!(
        w.add_dataset("same"),
        Err(AtlasError::DatasetAlreadyExists { .. })
    ));
}

#[tokio::test]
async fn a_repeated_array_name_in_one_dataset_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let w = writer_in(dir.path(), WriterConfig::default()).await;
    let mut d = w.add_dataset("d").unwrap();
    d.define_array::<f32>("x", &[], &[1], None, None).unwrap();
    assert!(matches!(
        d.define_array::<i32>("x", &[], &[1], None, None),
        Err(AtlasError::ArrayAlreadyExists { .. })
    ));
}

#[tokio::test]
async fn writing_the_wrong_element_type_is_a_dtype_mismatch() {
    let dir = tempfile::tempdir().unwrap();
    let w = writer_in(dir.path(), WriterConfig::default()).await;
    let mut d = w.add_dataset("d").unwrap();
    d.define_array::<f32>("x", &["n"], &[2], None, None)
        .unwrap();
    let f64s = Array::from_elem(IxDyn(&[2]), 1.0f64);
    let err = d.write_array("x", &[0], f64s.view()).unwrap_err();
    assert!(
        matches!(
            &err,
            AtlasError::DTypeMismatch {
                stored: atlas::DType::Float32,
                requested: atlas::DType::Float64,
                ..
            }
        ),
        "{err}"
    );
}

#[tokio::test]
async fn out_of_bounds_and_rank_mismatched_writes_are_refused_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let w = writer_in(dir.path(), WriterConfig::default()).await;
    let mut d = w.add_dataset("d").unwrap();
    d.define_array::<f32>("x", &["y", "x"], &[4, 4], Some(&[2, 2]), Some(-1.0))
        .unwrap();
    let cases: Vec<(Vec<u64>, Vec<usize>)> = vec![
        (vec![3, 0], vec![2, 2]),        // past the end of axis 0
        (vec![0, 4], vec![1, 1]),        // starts past the end
        (vec![u64::MAX, 0], vec![1, 1]), // overflow
        (vec![0], vec![2, 2]),           // start of the wrong rank
        (vec![0, 0], vec![4]),           // data of the wrong rank
        (vec![0, 0, 0], vec![1, 1, 1]),
    ];
    for (start, shape) in cases {
        let err = d.write_array("x", &start, ones(&shape).view()).unwrap_err();
        assert!(
            matches!(err, AtlasError::InvalidRegion { .. }),
            "{start:?} {shape:?}: {err}"
        );
    }
    assert!(matches!(
        d.write_array("missing", &[0], ones(&[1]).view()),
        Err(AtlasError::ArrayNotFound { .. })
    ));
    assert!(matches!(
        d.set_array_attribute("missing", "k", 1i64),
        Err(AtlasError::ArrayNotFound { .. })
    ));
    d.finish().await.unwrap();
    w.finish().await.unwrap();
    let out = Written::from_dir(dir.path());
    let got = out.read::<f32>("x", "d").await;
    assert!(
        got.iter().all(|&v| v == -1.0),
        "refused writes left no trace"
    );
}

#[tokio::test]
async fn shapes_array_format_would_truncate_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let w = writer_in(dir.path(), WriterConfig::default()).await;
    let mut d = w.add_dataset("d").unwrap();
    let big = u64::from(u32::MAX) + 1;
    let refused = |r: atlas::Result<()>| matches!(r, Err(AtlasError::InvalidRegion { .. }));
    assert!(refused(d.define_array::<u8>(
        "a",
        &[],
        &[big],
        Some(&[1024]),
        None
    )));
    assert!(refused(d.define_array::<u8>(
        "b",
        &[],
        &[10, big],
        Some(&[1, 1]),
        None
    )));
    assert!(refused(d.define_array::<u8>(
        "c",
        &[],
        &[10],
        Some(&[big]),
        None
    )));
    // Fits u32 per axis, but one chunk would not fit in memory.
    assert!(refused(d.define_array::<u8>(
        "d",
        &[],
        &[u64::from(u32::MAX); 3],
        None,
        None
    )));
    // An element count past u64.
    assert!(refused(d.define_array::<u8>(
        "e",
        &[],
        &[u64::from(u32::MAX); 4],
        Some(&[1, 1, 1, 1]),
        None
    )));
    // The largest axis array-format stores is fine (nothing is allocated until written).
    d.define_array::<u8>("ok", &[], &[u64::from(u32::MAX)], Some(&[1 << 20]), None)
        .unwrap();
}

#[tokio::test]
async fn malformed_definitions_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let w = writer_in(dir.path(), WriterConfig::default()).await;
    let mut d = w.add_dataset("d").unwrap();
    let refused = |r: atlas::Result<()>| matches!(r, Err(AtlasError::InvalidRegion { .. }));
    assert!(
        refused(d.define_array::<f32>("a", &["y"], &[2, 2], None, None)),
        "dims count"
    );
    assert!(
        refused(d.define_array::<f32>("b", &[], &[2, 2], Some(&[2]), None)),
        "chunk rank"
    );
    assert!(
        refused(d.define_array::<f32>("c", &[], &[2], Some(&[0]), None)),
        "zero extent"
    );
    // A fill value of the wrong type is its own error, naming the array and both types.
    let wrong_fill = |r: atlas::Result<()>, array: &str| matches!(r, Err(AtlasError::FillTypeMismatch { array: a, .. }) if a == array);
    assert!(
        wrong_fill(
            d.define_array::<Vec<u8>>("e", &[], &[2], None, Some(vec![1])),
            "e"
        ),
        "binary fill"
    );
    assert!(wrong_fill(
        d.define_array_with_fill::<f32>("f", &[], &[2], None, Some(Value::String("x".into()))),
        "f"
    ));
    assert!(wrong_fill(
        d.define_array_with_fill::<String>("g", &[], &[2], None, Some(Value::Int(0))),
        "g"
    ));
    // None of the refused definitions exists.
    assert!(matches!(
        d.write_array("a", &[0, 0], ones(&[1, 1]).view()),
        Err(AtlasError::ArrayNotFound { .. })
    ));
}

#[tokio::test]
async fn invalid_configurations_are_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    for config in [
        WriterConfig::default().zstd_level(99),
        WriterConfig::default().block_target_size(0),
    ] {
        let err = atlas::AtlasWriter::create(dir.path(), &config)
            .await
            .unwrap_err();
        assert!(matches!(err, AtlasError::InvalidUse { .. }), "{err}");
    }
    // The level is only checked for zstd.
    atlas::AtlasWriter::create(
        dir.path(),
        &WriterConfig::default().codec(Codec::Lz4).zstd_level(99),
    )
    .await
    .unwrap();
}
