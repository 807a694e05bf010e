//! Checksums of a collection's bytes, for a set member's manifest entry and
//! for a lone collection's checksum sidecar: one CRC32C per segment, one of
//! the footer part (the compressed footer and the trailer), one of the whole
//! deletion mask; the 8-byte header is checked by value. A deep verify
//! recomputes them and names each part that differs, so a flipped byte is
//! attributed to its segment, the footer, the mask or the header.
//!
//! Memory stays bounded: a segment is read in pieces of at most 8 MiB, each
//! folded into its checksum and dropped.

use std::fmt;
use std::ops::Range;

use atlas_format::{
    CHECKSUM_SIDECAR_FILE, ChecksumAlgorithm, ChecksumSidecar, DecodeLimits, HEADER_LEN,
    MemberChecksums, SegmentChecksum, encode_header,
};
use atlas_io::{object_path, put_atomic, read_optional, read_range};
use bytes::Bytes;
use opendal::Operator;

use crate::error::{AtlasError, Result};
use crate::read::Member;

/// Largest read made while checksumming: bounds the memory a big segment costs.
const PIECE_BYTES: u64 = 8 * 1024 * 1024;

/// One part of a collection that a checksum covers (or, for the header, that
/// is checked by value).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub enum ChecksumPart {
    /// The container's first 8 bytes (`ATLS`, version 8).
    Header,
    /// The segment of this variable (`_datasets` included).
    Segment(String),
    /// The container from the end of its last segment to its end: the
    /// compressed footer and the trailer.
    Footer,
    /// The whole `deleted.mask` object.
    Mask,
}

impl fmt::Display for ChecksumPart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChecksumPart::Header => f.write_str("header"),
            ChecksumPart::Segment(name) => write!(f, "segment {name}"),
            ChecksumPart::Footer => f.write_str("footer"),
            ChecksumPart::Mask => f.write_str("mask"),
        }
    }
}

/// A part whose recomputed checksum is not the recorded one: its bytes
/// changed since the checksums were taken. `None` on one side means the part
/// is missing there (a segment not in the container any more, a mask that
/// appeared or disappeared).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct ChecksumMismatch {
    /// Which part.
    pub part: ChecksumPart,
    /// The recorded CRC32C, if the part was recorded.
    pub expected: Option<u32>,
    /// The CRC32C of the bytes found now, if the part exists.
    pub found: Option<u32>,
}

impl fmt::Display for ChecksumMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let part = &self.part;
        match (self.expected, self.found) {
            (Some(expected), Some(found)) => write!(
                f,
                "{part}: crc32c {expected:#010x} expected, {found:#010x} found"
            ),
            (Some(expected), None) => {
                write!(
                    f,
                    "{part}: crc32c {expected:#010x} expected, but it is missing"
                )
            }
            (None, Some(found)) => write!(
                f,
                "{part}: not in the recorded checksums, crc32c {found:#010x} found"
            ),
            (None, None) => write!(f, "{part}: neither recorded nor present"),
        }
    }
}

/// CRC32C of every part of `atlas`'s collection, read from storage now:
/// each segment's byte range, the footer part and the mask. No array is
/// decoded; a segment is read in pieces of at most 8 MiB.
pub(crate) async fn member_checksums(atlas: &Member) -> Result<MemberChecksums> {
    let inner = atlas.inner();
    let container_len = atlas.container_bytes();
    let mut segments = Vec::new();
    let mut end_of_segments = HEADER_LEN;
    for segment in atlas.segments() {
        let range = segment_range(&segment.name, segment.offset, segment.len)?;
        end_of_segments = end_of_segments.max(range.end);
        segments.push(SegmentChecksum {
            name: segment.name,
            checksum: crc_of_range(&inner.op, &inner.container_path, range).await?,
        });
    }
    if end_of_segments > container_len {
        return Err(AtlasError::corrupt(format!(
            "the segments end at byte {end_of_segments}, past the container's {container_len} bytes"
        )));
    }
    let footer = crc_of_range(
        &inner.op,
        &inner.container_path,
        end_of_segments..container_len,
    )
    .await?;
    let mask = read_optional(&inner.op, &inner.mask_path)
        .await?
        .map(|snapshot| atlas_format::crc32c(&snapshot.bytes));
    Ok(MemberChecksums {
        algorithm: ChecksumAlgorithm::Crc32c,
        footer,
        segments,
        mask,
    })
}

/// Recomputes `atlas`'s checksums and lists every part whose checksum is not
/// in `expected`, plus the header if it is not the v8 container header.
/// Empty when nothing changed.
pub(crate) async fn check_member(
    atlas: &Member,
    expected: &MemberChecksums,
) -> Result<Vec<ChecksumMismatch>> {
    let inner = atlas.inner();
    let mut mismatches = Vec::new();

    let want_header = encode_header();
    let header = read_range(&inner.op, &inner.container_path, 0..HEADER_LEN).await?;
    if header.as_ref() != want_header.as_slice() {
        mismatches.push(ChecksumMismatch {
            part: ChecksumPart::Header,
            expected: Some(atlas_format::crc32c(&want_header)),
            found: Some(atlas_format::crc32c(&header)),
        });
    }

    let found = member_checksums(atlas).await?;
    for segment in &expected.segments {
        let now = found
            .segments
            .iter()
            .find(|s| s.name == segment.name)
            .map(|s| s.checksum);
        if now != Some(segment.checksum) {
            mismatches.push(ChecksumMismatch {
                part: ChecksumPart::Segment(segment.name.clone()),
                expected: Some(segment.checksum),
                found: now,
            });
        }
    }
    for segment in &found.segments {
        if !expected.segments.iter().any(|s| s.name == segment.name) {
            mismatches.push(ChecksumMismatch {
                part: ChecksumPart::Segment(segment.name.clone()),
                expected: None,
                found: Some(segment.checksum),
            });
        }
    }
    if found.footer != expected.footer {
        mismatches.push(ChecksumMismatch {
            part: ChecksumPart::Footer,
            expected: Some(expected.footer),
            found: Some(found.footer),
        });
    }
    if found.mask != expected.mask {
        mismatches.push(ChecksumMismatch {
            part: ChecksumPart::Mask,
            expected: expected.mask,
            found: found.mask,
        });
    }
    Ok(mismatches)
}

/// The byte range of a segment as the footer records it, refusing one whose
/// end does not fit in a u64.
fn segment_range(name: &str, offset: u64, len: u64) -> Result<Range<u64>> {
    let end = offset.checked_add(len).ok_or_else(|| {
        AtlasError::corrupt(format!(
            "segment {name:?}: offset {offset} + length {len} overflows"
        ))
    })?;
    Ok(offset..end)
}

/// CRC32C of `range` of object `path`, read in pieces of at most [`PIECE_BYTES`].
async fn crc_of_range(op: &Operator, path: &str, range: Range<u64>) -> Result<u32> {
    let mut crc = 0u32;
    let mut at = range.start;
    while at < range.end {
        let to = at.saturating_add(PIECE_BYTES).min(range.end);
        let piece = read_range(op, path, at..to).await?;
        crc = crc32c::crc32c_append(crc, &piece);
        at = to;
    }
    Ok(crc)
}

impl Member {
    /// Computes the CRC32C of every part of this collection (each segment,
    /// the footer part, the deletion mask) and stores them in the checksum
    /// sidecar `data.atlas.crc32c` beside the container, replacing any
    /// previous one in one atomic write. v8 readers ignore the sidecar;
    /// `verify --deep` ([`VerifyOptions::deep`](crate::VerifyOptions::deep))
    /// checks it. Returns what it wrote.
    ///
    /// Cost: the whole container and the mask are read once, in pieces of at
    /// most 8 MiB; no array is decoded. A later delete changes the mask, so
    /// run it again after deleting.
    ///
    /// # Errors
    /// [`AtlasError::Io`] when storage fails; [`AtlasError::CorruptCollection`]
    /// when the footer's segment ranges do not fit in the container.
    pub async fn write_checksums(&self) -> Result<MemberChecksums> {
        let checksums = member_checksums(self).await?;
        let bytes = ChecksumSidecar::new(checksums.clone()).encode()?;
        let path = sidecar_path(self);
        let op = &self.sidecar_operator()?;
        put_atomic(op, &path, Bytes::from(bytes)).await?;
        Ok(checksums)
    }

    /// Recomputes this collection's checksums and compares them with its
    /// checksum sidecar: `None` when it has no sidecar, else every part that
    /// differs (empty when none does). Reads the whole container and mask.
    ///
    /// # Errors
    /// [`AtlasError::Io`] when storage fails; [`AtlasError::CorruptCollection`]
    /// (with a `CorruptChecksumSidecar` or `NotAChecksumSidecar` source) when
    /// the sidecar is not a readable sidecar.
    pub async fn verify_checksums(&self) -> Result<Option<Vec<ChecksumMismatch>>> {
        Ok(self
            .check_sidecar()
            .await?
            .map(|(_, mismatches)| mismatches))
    }

    /// [`Member::verify_checksums`], with the number of parts compared (the
    /// header, the footer, each segment recorded, and the mask if recorded or present).
    pub(crate) async fn check_sidecar(&self) -> Result<Option<(usize, Vec<ChecksumMismatch>)>> {
        let Some(expected) = self.read_checksums().await? else {
            return Ok(None);
        };
        let mismatches = check_member(self, &expected).await?;
        let mask_seen =
            expected.mask.is_some() || mismatches.iter().any(|m| m.part == ChecksumPart::Mask);
        let parts = expected
            .segments
            .len()
            .saturating_add(2)
            .saturating_add(usize::from(mask_seen));
        Ok(Some((parts, mismatches)))
    }

    /// The checksums stored in the sidecar, if there is one.
    async fn read_checksums(&self) -> Result<Option<MemberChecksums>> {
        let path = sidecar_path(self);
        let Some(snapshot) = read_optional(&self.inner().op, &path).await? else {
            return Ok(None);
        };
        let sidecar = ChecksumSidecar::decode(&snapshot.bytes, &DecodeLimits::default())?;
        Ok(Some(sidecar.checksums))
    }
}

/// Where the checksum sidecar of `atlas` is, in its operator.
fn sidecar_path(atlas: &Member) -> String {
    object_path(&atlas.inner().prefix, CHECKSUM_SIDECAR_FILE)
}

impl crate::Atlas {
    /// Recomputes the checksums of member `id` and lists every part (header,
    /// segment, footer, mask) that differs from what the manifest records:
    /// empty when the member is intact. Reads the member's container and
    /// mask in full, in pieces of at most 8 MiB.
    ///
    /// # Errors
    /// [`AtlasError::InvalidUse`](crate::AtlasError::InvalidUse) for an id the
    /// manifest does not name; [`AtlasError::Member`](crate::AtlasError::Member)
    /// when the member cannot be opened or read.
    pub async fn verify_member_checksums(&self, id: &str) -> Result<Vec<ChecksumMismatch>> {
        let entry = self
            .members()
            .into_iter()
            .find(|m| m.id == id)
            .ok_or_else(|| {
                crate::AtlasError::invalid_use(format!("the set has no member {id:?}"))
            })?;
        let atlas = self.member(id).await?;
        check_member(&atlas, &entry.checksums)
            .await
            .map_err(|e| e.in_member(id, &entry.path))
    }
}
