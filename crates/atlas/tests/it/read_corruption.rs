//! Damaged and foreign input: every case is an error (or a warning) and never a
//! panic; storage failures keep the backend's kind.

#![cfg(test)]

use crate::read_support;

use std::error::Error as _;

use atlas::{Atlas, AtlasError, FooterProblem, SegmentError};
use atlas_io::IoErrorKind;
use read_support::{
    counted_memory, fixture_dir, load_fixture, memory, uniform_collection, uniform_name,
};

/// What footer validation found, behind `err`: read off its `source()` chain.
fn footer_problem(err: &AtlasError) -> Option<&FooterProblem> {
    let mut cause = err.source();
    while let Some(c) = cause {
        if let Some(problem) = c.downcast_ref::<FooterProblem>() {
            return Some(problem);
        }
        cause = c.source();
    }
    None
}

fn small_bytes() -> Vec<u8> {
    std::fs::read(fixture_dir("small").join("data.atlas")).unwrap()
}

async fn open_bytes(container: Vec<u8>, mask: Option<Vec<u8>>) -> Result<Atlas, AtlasError> {
    let op = memory();
    op.write("data.atlas", container).await.unwrap();
    if let Some(mask) = mask {
        op.write("deleted.mask", mask).await.unwrap();
    }
    Atlas::open((op, ""), &atlas::OpenOptions::default()).await
}

#[tokio::test]
async fn a_missing_container_is_a_not_found_io_error() {
    let err = Atlas::open((memory(), "nowhere"), &atlas::OpenOptions::default())
        .await
        .unwrap_err();
    match err {
        AtlasError::Io(io) => {
            assert_eq!(io.kind(), IoErrorKind::NotFound);
            assert!(io.path().contains("nowhere/data.atlas"), "{io}");
        }
        other => panic!("expected a not-found IoError, got {other}"),
    }
    let err = Atlas::open("/definitely/not/here", &atlas::OpenOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, AtlasError::Io(io) if io.kind() == IoErrorKind::NotFound),
        "{err}"
    );
    assert!(
        !std::path::Path::new("/definitely").exists(),
        "nothing was created"
    );
}

#[tokio::test]
async fn a_truncated_container_is_refused() {
    let bytes = small_bytes();
    for keep in [
        0,
        1,
        7,
        8,
        15,
        16,
        100,
        bytes.len() / 2,
        bytes.len() - 17,
        bytes.len() - 1,
    ] {
        let err = open_bytes(bytes[..keep].to_vec(), None).await.unwrap_err();
        assert!(
            matches!(
                err,
                AtlasError::NotAnAtlasCollection { .. } | AtlasError::CorruptCollection { .. }
            ),
            "{keep} bytes: {err}"
        );
    }
    // Cut from the front: the trailer is intact but the layout no longer adds up.
    let err = open_bytes(bytes[100..].to_vec(), None).await.unwrap_err();
    assert!(matches!(err, AtlasError::CorruptCollection { .. }), "{err}");
}

#[tokio::test]
async fn a_future_version_is_unsupported() {
    let mut bytes = small_bytes();
    let n = bytes.len();
    bytes[n - 8..n - 4].copy_from_slice(&9u32.to_le_bytes());
    let err = open_bytes(bytes, None).await.unwrap_err();
    assert!(
        matches!(
            err,
            AtlasError::UnsupportedVersion {
                found: 9,
                expected: 8
            }
        ),
        "{err}"
    );
}

#[tokio::test]
async fn a_wrong_magic_is_not_an_atlas_collection() {
    let mut bytes = small_bytes();
    let n = bytes.len();
    bytes[n - 4..].copy_from_slice(b"PAR1");
    let err = open_bytes(bytes, None).await.unwrap_err();
    assert!(
        matches!(err, AtlasError::NotAnAtlasCollection { .. }),
        "{err}"
    );
    let err = open_bytes(
        b"PAR1 not atlas at all, just some parquet-ish bytes PAR1".to_vec(),
        None,
    )
    .await
    .unwrap_err();
    assert!(
        matches!(err, AtlasError::NotAnAtlasCollection { .. }),
        "{err}"
    );
}

#[tokio::test]
async fn a_foreign_file_at_the_mask_path_is_an_error() {
    let err = open_bytes(small_bytes(), Some(b"PAR1....not a mask".to_vec()))
        .await
        .unwrap_err();
    assert!(matches!(err, AtlasError::CorruptMask { .. }), "{err}");
    let err = open_bytes(small_bytes(), Some(b"ATL".to_vec()))
        .await
        .unwrap_err();
    assert!(matches!(err, AtlasError::CorruptMask { .. }), "{err}");
}

#[tokio::test]
async fn mask_ordinals_past_the_count_are_warnings_and_ignored() {
    let mask = atlas_format::DeletionMask::from_ordinals([1, 50, 99]).encode();
    let atlas = open_bytes(small_bytes(), Some(mask)).await.unwrap();
    let member = atlas.lone_member().unwrap();
    assert_eq!(member.deleted_datasets(), vec!["feb_2024".to_owned()]);
    assert_eq!(atlas.dataset_count().await.unwrap(), 2);
    let warnings = member.mask_warnings();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[0].contains("50"), "{warnings:?}");
    // A truncated body keeps what survived, with a warning.
    let mut cut = atlas_format::DeletionMask::from_ordinals([0, 2]).encode();
    cut.truncate(cut.len() - 2);
    let member = open_bytes(small_bytes(), Some(cut))
        .await
        .unwrap()
        .lone_member()
        .unwrap();
    assert_eq!(member.deleted_datasets(), vec!["jan_2024".to_owned()]);
    assert_eq!(member.mask_warnings().len(), 1);
}

/// Zeroes `len` bytes ending `back` bytes before the end of segment `name`.
fn damage_segment(atlas_bytes: &mut [u8], offset: u64, seg_len: u64, back: u64, len: u64) {
    let end = (offset + seg_len - back) as usize;
    for b in &mut atlas_bytes[end - len as usize..end] {
        *b = 0xA5;
    }
}

#[tokio::test]
async fn a_corrupt_segment_is_an_error_and_the_rest_still_reads() {
    let bytes = small_bytes();
    let atlas = open_bytes(bytes.clone(), None).await.unwrap();
    let temperature = atlas
        .lone_member()
        .unwrap()
        .segments()
        .into_iter()
        .find(|v| v.name == "temperature")
        .unwrap();
    drop(atlas);
    let mut damaged = bytes.clone();
    // Inside the segment's footer, just before its 12-byte ARRF trailer.
    damage_segment(&mut damaged, temperature.offset, temperature.len, 12, 48);
    let atlas = open_bytes(damaged, None).await.unwrap();
    let jan = atlas.dataset("jan_2024").await.unwrap();
    let err = jan
        .read_array::<f32>("temperature", atlas::Region::all())
        .await
        .unwrap_err();
    // The cause is kept: a damaged segment, and behind it what footer validation found.
    assert!(
        matches!(&err, AtlasError::CorruptSegment { source: SegmentError::Footer { segment, .. } } if segment == "temperature"),
        "{err:?}"
    );
    assert!(footer_problem(&err).is_some(), "{err:?}");
    assert!(err.is_corruption());
    let err = atlas.array_stats("temperature").await.unwrap_err();
    assert!(matches!(err, AtlasError::CorruptSegment { .. }), "{err}");
    // Other segments are untouched.
    let lat = jan
        .read_array::<f64>("lat", atlas::Region::all())
        .await
        .unwrap();
    assert_eq!(lat.len(), 4);
    assert_eq!(jan.attributes().await.unwrap().len(), 8);

    // A trailer claiming a footer larger than the segment is refused before array-format parses it.
    let mut damaged = bytes.clone();
    let end = (temperature.offset + temperature.len) as usize;
    damaged[end - 12..end - 4].copy_from_slice(&u64::MAX.to_le_bytes());
    let atlas = open_bytes(damaged, None).await.unwrap();
    let err = atlas
        .dataset("jan_2024")
        .await
        .unwrap()
        .array_layout("temperature")
        .await
        .unwrap_err();
    assert!(matches!(err, AtlasError::CorruptSegment { .. }), "{err}");
}

#[tokio::test]
async fn a_failed_segment_read_keeps_the_backend_kind() {
    let (op, _stats, faults) = counted_memory();
    op.write("data.atlas", uniform_collection(2_000).await)
        .await
        .unwrap();
    let atlas = Atlas::open((op, ""), &atlas::OpenOptions::default())
        .await
        .unwrap();
    let view = atlas.dataset(&uniform_name(5)).await.unwrap();

    // The segment open itself fails: an Io error, and a later call retries it.
    faults.fail_reads_matching("data.atlas");
    let err = view.array_layout("v").await.unwrap_err();
    assert!(
        matches!(&err, AtlasError::Io(io) if io.kind() == IoErrorKind::Other),
        "{err}"
    );
    faults.clear();
    view.array_layout("v").await.unwrap();

    // A block read inside array-format fails: still an Io error, not "corrupt".
    faults.fail_reads_matching("data.atlas");
    let err = view
        .read_array::<f32>("v", atlas::Region::all())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, AtlasError::Io(io) if io.kind() == IoErrorKind::Other),
        "{err}"
    );
    faults.clear();
    let data = view
        .read_array::<f32>("v", atlas::Region::all())
        .await
        .unwrap();
    assert_eq!(data.len(), 4);
}

#[tokio::test]
async fn a_short_read_is_an_error_not_a_misparse() {
    // Ranged reads check their length: a short response is an Io error.
    let (op, _stats, faults) = read_support::counted_memory_without_suffix();
    load_fixture(&op, "small", "").await;
    faults.truncate_reads_by(5);
    let err = Atlas::open((op, ""), &atlas::OpenOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, AtlasError::Io(io) if io.short_read().is_some()),
        "{err}"
    );
    // A suffix response cannot be told from a short object; the trailer check catches it.
    let (op, _stats, faults) = counted_memory();
    op.write("data.atlas", uniform_collection(2_000).await)
        .await
        .unwrap();
    faults.truncate_reads_by(5);
    let err = Atlas::open((op, ""), &atlas::OpenOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            AtlasError::NotAnAtlasCollection { .. } | AtlasError::CorruptCollection { .. }
        ),
        "{err}"
    );
}
