//! What is left behind when writing fails or is abandoned part of the way.

#![cfg(test)]

use crate::write_support;

use std::time::Duration;

use atlas::{AtlasError, AtlasWriter, WriterConfig};
use atlas_io::CountingLayer;
use ndarray::{Array, IxDyn};
use write_support::{Written, files_under, nothing_opens, writer_in};

fn values(n: usize, seed: f32) -> ndarray::ArrayD<f32> {
    Array::from_shape_vec(IxDyn(&[n]), (0..n).map(|i| seed + i as f32).collect()).unwrap()
}

async fn add(w: &AtlasWriter, name: &str, array: &str, n: usize) -> atlas::DatasetWriter {
    let mut d = w.add_dataset(name).unwrap();
    d.define_array::<f32>(array, &["n"], &[n as u64], Some(&[16]), None)
        .unwrap();
    d.write_array(array, &[0], values(n, n as f32).view())
        .unwrap();
    d.set_attribute("name", name).unwrap();
    d
}

#[tokio::test]
async fn a_dropped_or_aborted_dataset_writer_leaves_the_others_intact_and_later_ordinals_close_up()
{
    let dir = tempfile::tempdir().unwrap();
    let w = writer_in(dir.path(), WriterConfig::default()).await;
    let a = add(&w, "a", "x", 10).await;
    let b = add(&w, "b", "x", 20).await;
    let c = add(&w, "c", "only_c", 30).await;
    let d = add(&w, "d", "x", 40).await;
    let e = add(&w, "e", "x", 50).await;
    drop(b);
    c.abort();
    e.finish().await.unwrap();
    a.finish().await.unwrap();
    d.finish().await.unwrap();
    let summary = w.finish().await.unwrap();
    assert_eq!(summary.datasets, 3);
    let out = Written::from_dir(dir.path());
    assert_eq!(out.dataset_names(), vec!["a", "d", "e"]);
    assert_eq!(
        out.segment_names(),
        vec!["x", "_datasets"],
        "the abandoned dataset's own array name never became a segment"
    );
    let seg = out.segment("x").await;
    let names: Vec<&str> = seg.arrays().map(|a| a.name()).collect();
    assert_eq!(names.len(), 3);
    assert!(!names.contains(&"b") && !names.contains(&"c"));
    assert_eq!(out.read::<f32>("x", "d").await[[39]], 40.0 + 39.0);
}

#[tokio::test]
async fn a_dropped_atlas_writer_leaves_nothing_that_opens() {
    let dir = tempfile::tempdir().unwrap();
    let w = writer_in(dir.path(), WriterConfig::default()).await;
    add(&w, "a", "x", 100).await.finish().await.unwrap();
    let pending = add(&w, "b", "x", 100).await;
    drop(w);
    assert!(nothing_opens(dir.path()));
    assert!(
        files_under(dir.path()).is_empty(),
        "{:?}",
        files_under(dir.path())
    );
    // A dataset finished after its collection writer is gone is refused.
    let err = pending.finish().await.unwrap_err();
    assert!(matches!(err, AtlasError::InvalidUse { .. }), "{err}");
}

#[tokio::test]
async fn nothing_is_visible_before_finish() {
    let dir = tempfile::tempdir().unwrap();
    let w = writer_in(dir.path(), WriterConfig::default()).await;
    add(&w, "a", "x", 1000).await.finish().await.unwrap();
    assert!(nothing_opens(dir.path()));
    assert!(files_under(dir.path()).is_empty());
    w.finish().await.unwrap();
    assert!(!nothing_opens(dir.path()));
}

async fn faulty_fs(
    dir: &std::path::Path,
) -> (AtlasWriter, atlas_io::Faults, atlas_io::RequestStats) {
    let layer = CountingLayer::new();
    let (faults, stats) = (layer.faults(), layer.stats());
    let op = atlas_io::fs_operator(dir).unwrap().layer(layer);
    let w = AtlasWriter::create((op, ""), &WriterConfig::default().block_target_size(4096))
        .await
        .unwrap();
    (w, faults, stats)
}

#[tokio::test]
async fn a_write_failure_injected_mid_stream_surfaces_as_an_io_error_and_leaves_nothing_that_opens()
{
    // First learn how long the container is, then fail at points throughout it.
    let dir = tempfile::tempdir().unwrap();
    let (w, _, stats) = faulty_fs(dir.path()).await;
    for i in 0..4 {
        add(&w, &format!("d{i}"), "x", 3000)
            .await
            .finish()
            .await
            .unwrap();
    }
    let summary = w.finish().await.unwrap();
    let total = summary.container_bytes;
    let index = summary.index.map_or(0, |i| i.bytes);
    assert_eq!(stats.snapshot().bytes_written, total + index);

    for cut in [0, 4, 8, 9, total / 3, total / 2, total - 17, total - 1] {
        let dir = tempfile::tempdir().unwrap();
        let (w, faults, _) = faulty_fs(dir.path()).await;
        for i in 0..4 {
            add(&w, &format!("d{i}"), "x", 3000)
                .await
                .finish()
                .await
                .unwrap();
        }
        faults.fail_writes_after(cut);
        let err = w.finish().await.unwrap_err();
        assert!(matches!(err, AtlasError::Io(_)), "cut at {cut}: {err}");
        assert!(nothing_opens(dir.path()), "cut at {cut}");
        assert!(
            files_under(dir.path()).is_empty(),
            "cut at {cut}: the aborted upload left {:?}",
            files_under(dir.path())
        );
    }
}

#[tokio::test]
async fn a_write_failure_on_an_object_store_like_backend_leaves_no_object() {
    let layer = CountingLayer::new();
    let faults = layer.faults();
    let op = opendal::Operator::new(opendal::services::Memory::default())
        .unwrap()
        .layer(layer);
    let w = AtlasWriter::create((op.clone(), "coll"), &WriterConfig::default())
        .await
        .unwrap();
    add(&w, "a", "x", 5000).await.finish().await.unwrap();
    faults.fail_writes_after(100);
    assert!(matches!(w.finish().await, Err(AtlasError::Io(_))));
    assert!(!op.exists("coll/data.atlas").await.unwrap());
}

#[tokio::test]
async fn a_finish_cancelled_while_closing_leaves_nothing_that_opens_and_no_index() {
    let dir = tempfile::tempdir().unwrap();
    let (w, faults, _) = faulty_fs(dir.path()).await;
    add(&w, "a", "x", 100).await.finish().await.unwrap();
    faults.set_latency(Duration::from_millis(500));
    let cancelled = tokio::time::timeout(Duration::from_millis(50), w.finish()).await;
    assert!(cancelled.is_err(), "finish should still be closing");
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(nothing_opens(dir.path()));
    // The index, built while the container was closing, is not stored
    // for a container that was not.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!dir.path().join(atlas_format::INDEX_FILE).exists());
}

#[tokio::test]
async fn a_collection_is_written_once_into_an_empty_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let w = writer_in(dir.path(), WriterConfig::default()).await;
    w.finish().await.unwrap();
    let err = AtlasWriter::create(dir.path(), &WriterConfig::default())
        .await
        .unwrap_err();
    assert!(matches!(err, AtlasError::InvalidUse { .. }), "{err}");

    // A stale deletion mask would hide the new datasets: refused as well.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("deleted.mask"), b"ATLM\x01\0\0\0\0\0\0\0").unwrap();
    assert!(
        AtlasWriter::create(dir.path(), &WriterConfig::default())
            .await
            .is_err()
    );
}

#[tokio::test]
async fn finishing_with_a_dataset_writer_still_open_is_refused_and_commits_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let w = writer_in(dir.path(), WriterConfig::default()).await;
    add(&w, "a", "x", 10).await.finish().await.unwrap();
    let open = add(&w, "b", "x", 10).await;
    let err = w.finish().await.unwrap_err();
    assert!(
        matches!(&err, AtlasError::InvalidUse { what } if what.contains('b')),
        "{err}"
    );
    assert!(nothing_opens(dir.path()));
    let err = open.finish().await.unwrap_err();
    assert!(matches!(err, AtlasError::InvalidUse { .. }), "{err}");
}
