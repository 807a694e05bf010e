//! The v8 fixtures, rebuilt from their manifests with our writer, hold what
//! the manifests say, and have the structure of the fixture containers.

#![cfg(test)]

use crate::write_support;

use write_support::manifest::{check, load, rebuild};
use write_support::{Written, files_under};

/// Everything but `created_unix_ms` and segment lengths must match the
/// fixture's footer: pools, schemas, dataset order, segment order.
fn same_footer_structure(ours: &Written, fixture: &Written) {
    let (a, b) = (&ours.opened.footer, &fixture.opened.footer);
    assert_eq!(a.version, b.version);
    assert_eq!(a.codec, b.codec);
    assert_eq!(a.string_pool, b.string_pool);
    assert_eq!(a.dtype_pool, b.dtype_pool);
    assert_eq!(a.schema_pool, b.schema_pool);
    assert_eq!(a.datasets, b.datasets);
    assert_eq!(ours.segment_names(), fixture.segment_names());
}

/// Segment lengths and footer length of a container, for comparison.
fn sizes(w: &Written) -> (Vec<u64>, u64) {
    (
        w.opened
            .footer
            .variables
            .iter()
            .map(|v| v.seg_len)
            .collect(),
        w.opened.footer_len,
    )
}

async fn rebuild_and_check(name: &str) -> (Written, Written, atlas::WriteSummary) {
    let manifest = load(name);
    let dir = tempfile::tempdir().unwrap();
    let summary = rebuild(&manifest, dir.path()).await;
    let ours = Written::from_dir(dir.path());
    check(&ours, &manifest).await;
    let fixture = Written::from_dir(&write_support::manifest::fixtures_dir().join(name));
    same_footer_structure(&ours, &fixture);
    assert_eq!(summary.container_bytes, ours.bytes.len() as u64);
    assert_eq!(
        summary.datasets,
        manifest["datasets"].as_array().unwrap().len()
    );
    let mask_expected = !manifest["deleted"].as_array().unwrap().is_empty();
    let files = files_under(dir.path());
    assert_eq!(
        files,
        if mask_expected {
            vec![
                "data.atlas".to_string(),
                "data.atlas.index".into(),
                "deleted.mask".into(),
            ]
        } else {
            vec!["data.atlas".to_string(), "data.atlas.index".into()]
        },
        "no temp files left behind"
    );
    (ours, fixture, summary)
}

/// Rebuilds fixture `name` and asserts every segment equals the fixture's, byte for byte.
async fn assert_segments_identical(name: &str) {
    let (ours, fixture, _) = rebuild_and_check(name).await;
    assert_eq!(sizes(&ours).0, sizes(&fixture).0, "segment lengths");
    for seg in fixture.segment_names() {
        assert_eq!(
            ours.segment_bytes(&seg),
            fixture.segment_bytes(&seg),
            "segment {seg}"
        );
    }
}

#[tokio::test]
async fn the_small_fixture_rebuilt_from_its_manifest_has_byte_identical_segments_and_equal_pools() {
    // Same array-format, same order of writes: the segments come out byte for byte.
    assert_segments_identical("small").await;
}

#[tokio::test]
async fn the_deleted_fixture_rebuilt_from_its_manifest_has_byte_identical_segments_and_equal_pools()
{
    assert_segments_identical("deleted").await;
}

#[tokio::test]
async fn the_mixed_fixture_rebuilt_from_its_manifest_has_byte_identical_segments_and_equal_pools() {
    assert_segments_identical("mixed").await;
}

#[tokio::test]
async fn the_empty_fixture_rebuilt_is_54_bytes_of_the_same_structure() {
    let (ours, fixture, summary) = rebuild_and_check("empty").await;
    assert_eq!(ours.bytes.len(), 54);
    assert_eq!(summary.container_bytes, 54);
    assert!(summary.segments.is_empty());
    // With the fixture's clock, our footer is the fixture's footer, message for message.
    let mut footer = ours.opened.footer.clone();
    footer.created_unix_ms = fixture.opened.footer.created_unix_ms;
    assert_eq!(footer, fixture.opened.footer);
    let fixture_msgpack = zstd::decode_all(&fixture.bytes[8..fixture.bytes.len() - 16]).unwrap();
    assert_eq!(footer.to_msgpack().unwrap(), fixture_msgpack);
}
