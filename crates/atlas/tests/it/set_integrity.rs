//! Checksums of a collection's parts (set members, the checksum sidecar): they
//! cover every byte but the header, which is checked by value, and every
//! changed byte is reported against the part that holds it.

#![cfg(test)]

use std::path::{Path, PathBuf};

use atlas::{
    Atlas, AtlasError, AtlasWriter, CHECKSUM_SIDECAR_FILE, ChecksumMismatch, ChecksumPart, Finding,
    FormatError, Member, OpenOptions, VerifyOptions, WriterConfig,
};

/// A small collection: three datasets with a float and an int array and a
/// dataset attribute, so it has three segments (`TEMP`, `PSAL`, `_datasets`).
async fn write_small(dir: &Path) {
    let writer = AtlasWriter::create(dir, &WriterConfig::default())
        .await
        .unwrap();
    for i in 0..3u8 {
        let mut ds = writer.add_dataset(&format!("profile_{i}")).unwrap();
        let n = 40 + u64::from(i) * 8;
        ds.define_array::<f32>("TEMP", &["N_LEVELS"], &[n], None, Some(99999.0))
            .unwrap();
        let temp: Vec<f32> = (0..n)
            .map(|k| 10.0 + k as f32 * 0.25 + f32::from(i))
            .collect();
        ds.write_array("TEMP", &[0], ndarray::arr1(&temp).into_dyn().view())
            .unwrap();
        ds.define_array::<i32>("PSAL", &["N_LEVELS"], &[n], None, Some(-1))
            .unwrap();
        let psal: Vec<i32> = (0..n).map(|k| k as i32 * 3 - i32::from(i)).collect();
        ds.write_array("PSAL", &[0], ndarray::arr1(&psal).into_dyn().view())
            .unwrap();
        ds.set_attribute("cycle", i64::from(i) + 100).unwrap();
        ds.finish().await.unwrap();
    }
    writer.finish().await.unwrap();
}

/// The container of the lone collection in `dir`: checksums and verify are its own.
async fn open(dir: &Path) -> Member {
    Atlas::open(dir, &OpenOptions::default())
        .await
        .unwrap()
        .lone_member()
        .unwrap()
}

/// A copy of every file of `from` (container, mask, sidecar) in a new tempdir.
fn copy_of(from: &Path) -> tempfile::TempDir {
    let to = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), to.path().join(entry.file_name())).unwrap();
        }
    }
    to
}

fn flip(path: &Path, at: usize) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[at] ^= 0x01;
    std::fs::write(path, bytes).unwrap();
}

/// An original with a checksum sidecar (and a mask when `delete`), plus a
/// copy of it opened before any damage is done to the copy.
async fn checksummed(delete: bool) -> (tempfile::TempDir, tempfile::TempDir, Member) {
    let original = tempfile::tempdir().unwrap();
    write_small(original.path()).await;
    let atlas = Atlas::open(original.path(), &OpenOptions::default())
        .await
        .unwrap();
    if delete {
        atlas.delete_datasets(&["profile_1"]).await.unwrap();
    }
    atlas
        .lone_member()
        .unwrap()
        .write_checksums()
        .await
        .unwrap();
    let copy = copy_of(original.path());
    let opened = open(copy.path()).await;
    (original, copy, opened)
}

fn container(dir: &Path) -> PathBuf {
    dir.join("data.atlas")
}

/// The part of the container that holds byte `at`, by the footer's layout.
fn part_of(atlas: &Member, at: u64) -> ChecksumPart {
    if at < 8 {
        return ChecksumPart::Header;
    }
    atlas
        .segments()
        .into_iter()
        .find(|s| (s.offset..s.offset + s.len).contains(&at))
        .map_or(ChecksumPart::Footer, |s| ChecksumPart::Segment(s.name))
}

async fn mismatches(atlas: &Member) -> Vec<ChecksumMismatch> {
    atlas
        .verify_checksums()
        .await
        .unwrap()
        .expect("the copy has a sidecar")
}

fn parts(found: &[ChecksumMismatch]) -> Vec<ChecksumPart> {
    found.iter().map(|m| m.part.clone()).collect()
}

#[tokio::test]
async fn the_checksums_cover_every_byte_after_the_header_once() {
    let dir = tempfile::tempdir().unwrap();
    write_small(dir.path()).await;
    let atlas = open(dir.path()).await;
    let written = atlas.write_checksums().await.unwrap();
    let bytes = std::fs::read(container(dir.path())).unwrap();

    let mut segments = atlas.segments();
    segments.sort_by_key(|s| s.offset);
    let mut at = 8u64;
    for s in &segments {
        assert_eq!(s.offset, at, "segment {} follows the previous part", s.name);
        at = s.offset + s.len;
        let recorded = written
            .segments
            .iter()
            .find(|c| c.name == s.name)
            .expect("every segment has a checksum");
        let range = s.offset as usize..(s.offset + s.len) as usize;
        assert_eq!(
            recorded.checksum,
            atlas_format::crc32c(&bytes[range]),
            "{}",
            s.name
        );
    }
    assert_eq!(written.segments.len(), segments.len());
    assert_eq!(written.footer, atlas_format::crc32c(&bytes[at as usize..]));
    assert_eq!(written.mask, None, "no mask, no mask checksum");
    assert!(dir.path().join(CHECKSUM_SIDECAR_FILE).is_file());
}

#[tokio::test]
async fn an_untouched_copy_reports_nothing_and_no_sidecar_is_none() {
    let (_original, _copy, atlas) = checksummed(true).await;
    assert_eq!(mismatches(&atlas).await, Vec::new());
    let report = atlas.verify(&VerifyOptions::new().deep(true)).await;
    assert!(report.is_sound(), "{:?}", report.findings);
    let segments = atlas.segments().len();
    assert_eq!(report.checked.checksum_parts, Some(segments + 3));

    let bare = tempfile::tempdir().unwrap();
    write_small(bare.path()).await;
    let atlas = open(bare.path()).await;
    assert_eq!(atlas.verify_checksums().await.unwrap(), None);
    let report = atlas.verify(&VerifyOptions::new().deep(true)).await;
    assert_eq!(report.checked.checksum_parts, None);
}

#[tokio::test]
async fn a_flipped_byte_in_a_data_block_names_its_segment() {
    let (_original, copy, atlas) = checksummed(false).await;
    let temp = atlas
        .segments()
        .into_iter()
        .find(|s| s.name == "TEMP")
        .unwrap();
    // The segment's data blocks come first; its own footer is at its end.
    flip(&container(copy.path()), (temp.offset + 12) as usize);
    let found = mismatches(&atlas).await;
    assert_eq!(parts(&found), [ChecksumPart::Segment("TEMP".into())]);
    let m = &found[0];
    assert!(m.expected.is_some() && m.found.is_some() && m.expected != m.found);
    let line = m.to_string();
    assert!(
        line.starts_with("segment TEMP: crc32c 0x")
            && line.contains(" expected, 0x")
            && line.ends_with(" found"),
        "{line}"
    );

    // verify --deep reports it as a finding naming the segment.
    let report = atlas.verify(&VerifyOptions::new().deep(true)).await;
    let named: Vec<_> = report
        .problems()
        .filter_map(|f| match f {
            Finding::ChecksumMismatch { mismatch } => Some(mismatch.part.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(named, [ChecksumPart::Segment("TEMP".into())]);
}

#[tokio::test]
async fn a_flipped_byte_in_the_footer_names_the_footer() {
    let (_original, copy, atlas) = checksummed(false).await;
    let len = atlas.container_bytes();
    // Inside the compressed footer, before the 16-byte trailer.
    flip(&container(copy.path()), (len - 20) as usize);
    assert_eq!(parts(&mismatches(&atlas).await), [ChecksumPart::Footer]);
}

#[tokio::test]
async fn a_flipped_byte_in_the_mask_names_the_mask() {
    let (_original, copy, atlas) = checksummed(true).await;
    let mask = copy.path().join("deleted.mask");
    let len = std::fs::metadata(&mask).unwrap().len();
    flip(&mask, (len - 1) as usize);
    let found = mismatches(&atlas).await;
    assert_eq!(parts(&found), [ChecksumPart::Mask]);
    assert!(
        found[0].to_string().starts_with("mask: crc32c 0x"),
        "{}",
        found[0]
    );

    // A mask that disappears is missing, not merely different.
    std::fs::remove_file(&mask).unwrap();
    let found = mismatches(&atlas).await;
    assert_eq!(parts(&found), [ChecksumPart::Mask]);
    assert_eq!(found[0].found, None);
    assert!(
        found[0]
            .to_string()
            .ends_with("expected, but it is missing"),
        "{}",
        found[0]
    );
}

#[tokio::test]
async fn a_flipped_byte_in_the_header_names_the_header() {
    let (_original, copy, atlas) = checksummed(false).await;
    flip(&container(copy.path()), 5);
    let found = mismatches(&atlas).await;
    assert_eq!(parts(&found), [ChecksumPart::Header]);
    assert!(
        found[0].to_string().starts_with("header: crc32c 0x"),
        "{}",
        found[0]
    );
}

#[tokio::test]
async fn every_97th_flipped_byte_is_detected_and_attributed_to_its_part() {
    let (_original, copy, atlas) = checksummed(true).await;
    let path = container(copy.path());
    let pristine = std::fs::read(&path).unwrap();
    let mut seen = std::collections::BTreeSet::new();
    for at in (0..pristine.len()).step_by(97) {
        let mut damaged = pristine.clone();
        damaged[at] ^= 0x80;
        std::fs::write(&path, &damaged).unwrap();
        let expected = part_of(&atlas, at as u64);
        seen.insert(expected.to_string());
        assert_eq!(parts(&mismatches(&atlas).await), [expected], "byte {at}");
    }
    std::fs::write(&path, &pristine).unwrap();
    let mask = copy.path().join("deleted.mask");
    let mask_bytes = std::fs::read(&mask).unwrap();
    for at in 0..mask_bytes.len() {
        let mut damaged = mask_bytes.clone();
        damaged[at] ^= 0x80;
        std::fs::write(&mask, &damaged).unwrap();
        assert_eq!(
            parts(&mismatches(&atlas).await),
            [ChecksumPart::Mask],
            "mask byte {at}"
        );
    }
    std::fs::write(&mask, &mask_bytes).unwrap();
    assert_eq!(mismatches(&atlas).await, Vec::new(), "restored");
    // The sweep reached every kind of part.
    for part in [
        "header",
        "segment TEMP",
        "segment PSAL",
        "segment _datasets",
        "footer",
    ] {
        assert!(seen.contains(part), "{part} not hit: {seen:?}");
    }
}

#[tokio::test]
async fn a_segment_larger_than_one_read_piece_has_the_checksum_of_its_whole_range() {
    let dir = tempfile::tempdir().unwrap();
    let writer = AtlasWriter::create(dir.path(), &WriterConfig::default())
        .await
        .unwrap();
    let mut ds = writer.add_dataset("big").unwrap();
    // 10 MiB of poorly compressible values: the segment exceeds one 8 MiB piece.
    let n = 10 * 1024 * 1024 / 8;
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let values: Vec<u64> = (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        })
        .collect();
    ds.define_array::<u64>("NOISE", &["N"], &[n as u64], None, None)
        .unwrap();
    ds.write_array("NOISE", &[0], ndarray::arr1(&values).into_dyn().view())
        .unwrap();
    ds.finish().await.unwrap();
    writer.finish().await.unwrap();

    let atlas = open(dir.path()).await;
    let noise = atlas
        .segments()
        .into_iter()
        .find(|s| s.name == "NOISE")
        .unwrap();
    assert!(noise.len > 8 * 1024 * 1024, "{} bytes", noise.len);
    let written = atlas.write_checksums().await.unwrap();
    let bytes = std::fs::read(container(dir.path())).unwrap();
    let whole = &bytes[noise.offset as usize..(noise.offset + noise.len) as usize];
    let recorded = written.segments.iter().find(|c| c.name == "NOISE").unwrap();
    assert_eq!(recorded.checksum, atlas_format::crc32c(whole));
}

#[tokio::test]
async fn a_damaged_sidecar_is_a_typed_error_and_a_verify_finding() {
    let (_original, copy, atlas) = checksummed(false).await;
    flip(&copy.path().join(CHECKSUM_SIDECAR_FILE), 25);
    let err = atlas.verify_checksums().await.unwrap_err();
    assert!(
        matches!(
            &err,
            AtlasError::CorruptCollection {
                source: Some(FormatError::CorruptChecksumSidecar { .. }),
                ..
            }
        ),
        "{err:?}"
    );
    let report = atlas.verify(&VerifyOptions::new().deep(true)).await;
    assert!(
        report
            .problems()
            .any(|f| matches!(f, Finding::Checksums { .. })),
        "{:?}",
        report.findings
    );
}
