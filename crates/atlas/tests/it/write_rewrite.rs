//! `atlas::rewrite` copies every live dataset: the dump of the copy equals the
//! dump of the source but for dense ordinals and the container's size.

#![cfg(test)]

use crate::write_support;

use atlas::{Atlas, AtlasWriter, Codec, WriterConfig};
use serde_json::Value;
use write_support::manifest::fixtures_dir;
use write_support::{Written, files_under};

/// The parts of a dump a rewrite may change: sizes, the total count (deleted
/// datasets are gone) and ordinals (renumbered densely), plus the codec when
/// the destination uses another one.
fn comparable(mut dump: Value) -> Value {
    let m = dump.as_object_mut().unwrap();
    m.remove("container_bytes");
    m.remove("dataset_count_total");
    m.remove("codec");
    for d in m.get_mut("datasets").unwrap().as_array_mut().unwrap() {
        d.as_object_mut().unwrap().remove("ordinal");
    }
    dump
}

async fn dump(dir: &std::path::Path) -> Value {
    let atlas = Atlas::open(dir, &atlas::OpenOptions::default())
        .await
        .unwrap();
    atlas_manifest::collection_json(&atlas.lone_member().unwrap(), true)
        .await
        .unwrap()
}

#[tokio::test]
async fn rewriting_each_fixture_keeps_every_live_dataset_and_drops_the_deleted_ones() {
    for name in ["small", "deleted", "mixed", "empty"] {
        for codec in [None, Some(Codec::Lz4)] {
            let src_dir = fixtures_dir().join(name);
            let src = Atlas::open(&src_dir, &atlas::OpenOptions::default())
                .await
                .unwrap();
            let dst_dir = tempfile::tempdir().unwrap();
            let config =
                WriterConfig::default().codec(codec.unwrap_or(src.lone_member().unwrap().codec()));
            let dst = AtlasWriter::create(dst_dir.path(), &config).await.unwrap();
            let mut calls = Vec::new();
            let summary = atlas::rewrite(&src, dst, |done, total| calls.push((done, total)))
                .await
                .unwrap();
            let live = src.dataset_count().await.unwrap();
            assert_eq!(summary.datasets, live, "{name}");
            assert_eq!(calls, (1..=live).map(|i| (i, live)).collect::<Vec<_>>());
            assert_eq!(
                files_under(dst_dir.path()),
                vec!["data.atlas", "data.atlas.index"],
                "no mask is written"
            );

            let before = dump(&src_dir).await;
            let after = dump(dst_dir.path()).await;
            assert_eq!(
                after["dataset_count_total"].as_u64().unwrap() as usize,
                live
            );
            let ordinals: Vec<u64> = after["datasets"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d["ordinal"].as_u64().unwrap())
                .collect();
            assert_eq!(
                ordinals,
                (0..live as u64).collect::<Vec<_>>(),
                "dense ordinals"
            );
            assert_eq!(comparable(after), comparable(before), "{name} {codec:?}");
            let written = Written::from_dir(dst_dir.path());
            assert_eq!(
                written.opened.footer.codec,
                codec.unwrap_or(src.lone_member().unwrap().codec())
            );
        }
    }
}

#[tokio::test]
async fn a_rewrite_that_fails_commits_nothing() {
    let src_dir = fixtures_dir().join("small");
    let src = Atlas::open(&src_dir, &atlas::OpenOptions::default())
        .await
        .unwrap();
    let dst_dir = tempfile::tempdir().unwrap();
    let dst = AtlasWriter::create(dst_dir.path(), &WriterConfig::default())
        .await
        .unwrap();
    // A name already handed out in the destination makes the copy fail half-way.
    let blocker = dst.add_dataset("feb_2024").unwrap();
    drop(blocker);
    let err = atlas::rewrite(&src, dst, |_, _| {}).await.unwrap_err();
    assert!(
        matches!(err, atlas::AtlasError::DatasetAlreadyExists { .. }),
        "{err}"
    );
    assert!(write_support::nothing_opens(dst_dir.path()));
}
