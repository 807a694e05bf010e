//! The set manifest: the one small object at the root of a set that names
//! its member collections in commit order, with per-member statistics (for
//! skipping a member without opening it) and checksums (for `verify --deep`).
//!
//! ```text
//! | "ATLASSET" | version u32 LE = 1 | body_len u64 LE = n | body: n bytes, zstd(MessagePack) | crc32c u32 LE |
//! ```
//!
//! The CRC32C covers every byte before it (header and body). This module is
//! the codec and its validation only; reading, committing and verifying a set
//! need storage and live elsewhere. See `docs/sets.md`.

use std::cmp::Ordering;
use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use crate::constants::{
    CONTAINER_MAGIC, SET_MANIFEST_CHECKSUM_LEN, SET_MANIFEST_HEADER_LEN, SET_MANIFEST_MAGIC,
    SET_MANIFEST_VERSION,
};
use crate::dtype::DType;
use crate::error::{FormatError, Result};
use crate::footer::{DecodeLimits, decompress_limited};
use crate::value::Value;

/// Deepest list nesting accepted in a variable's dtype (the footer's limit).
const MAX_DTYPE_DEPTH: usize = 16;
/// Deserialization depth: a dtype's nesting plus the manifest's own levels.
const MAX_DEPTH: usize = MAX_DTYPE_DEPTH * 2 + 12;

/// The CRC32C (Castagnoli) of `bytes`: the checksum of the manifest itself
/// and of every member segment, footer and mask it records.
pub fn crc32c(bytes: &[u8]) -> u32 {
    crc32c::crc32c(bytes)
}

/// The decoded set manifest: which member collections the set holds, oldest
/// commit first.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SetManifest {
    /// Increments by one on every commit; the empty set starts at 0.
    pub generation: u64,
    /// Committed members in commit order: the last one is the newest.
    pub members: Vec<MemberEntry>,
}

/// One committed member: where it is, what it holds, and how to check it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemberEntry {
    /// The member's id, unique in the set; a valid name ([`crate::validate_name`]).
    pub id: String,
    /// The member's prefix relative to the set's prefix (`members/<id>`): no
    /// leading `/`, no empty, `.` or `..` component.
    pub path: String,
    /// Datasets in the member's container, deleted or not.
    pub datasets_total: u64,
    /// Datasets not hidden by the member's deletion mask (at most `datasets_total`).
    pub datasets_live: u64,
    /// Size in bytes of the member's container (`data.atlas`).
    pub bytes: u64,
    /// When the member's container was written, milliseconds since the Unix epoch.
    pub created_unix_ms: i64,
    /// One summary per variable (array name) over the member's live datasets.
    pub variables: Vec<VariableSummary>,
    /// One summary per numeric or time dataset attribute over the live datasets.
    pub attributes: Vec<AttributeSummary>,
    /// Checksums of the member's objects, for a deep verify.
    pub checksums: MemberChecksums,
    /// The first and last dataset name of the container in UTF-8 byte order,
    /// deleted ones included (`None` when it holds none): a reader resolving
    /// names skips a member whose range cannot hold the name it looks for.
    pub names: Option<NameRange>,
}

/// The smallest and largest dataset name of a member, by UTF-8 bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NameRange {
    /// The smallest name.
    pub first: String,
    /// The largest name (not below `first`).
    pub last: String,
}

impl NameRange {
    /// Whether `name` lies in the range.
    pub fn contains(&self, name: &str) -> bool {
        self.first.as_str() <= name && name <= self.last.as_str()
    }

    /// Whether the two ranges share a possible name.
    pub fn overlaps(&self, other: &NameRange) -> bool {
        self.first <= other.last && other.first <= self.last
    }
}

/// What a query needs to know about one variable of a member without opening it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VariableSummary {
    /// The variable (array) name.
    pub name: String,
    /// Its element type.
    pub dtype: DType,
    /// Elements over the live datasets that hold the variable.
    pub count: u64,
    /// Of those, how many are null (fill value or NaN); at most `count`.
    pub nulls: u64,
    /// Smallest non-null element, if known.
    pub min: Option<Value>,
    /// Largest non-null element, if known.
    pub max: Option<Value>,
}

/// The range of one dataset-level attribute over a member's live datasets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttributeSummary {
    /// The attribute key.
    pub key: String,
    /// Smallest value.
    pub min: Value,
    /// Largest value, of the same kind as `min`.
    pub max: Value,
}

/// Which checksum a member's checksums are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ChecksumAlgorithm {
    /// CRC32C (Castagnoli), as [`crc32c()`] computes it.
    #[default]
    Crc32c,
}

/// The checksum of one segment of a member's container.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SegmentChecksum {
    /// The segment's name, as in the container footer (`_datasets` included).
    pub name: String,
    /// Checksum of the segment's bytes.
    pub checksum: u32,
}

/// Checksums of a member's objects: every byte of the container and of the
/// mask is covered by one of them, except the 8 fixed header bytes, which a
/// verify checks by value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberChecksums {
    /// How the checksums below were computed.
    pub algorithm: ChecksumAlgorithm,
    /// Of the container's compressed footer and its trailer (from the end of
    /// the last segment to the end of the object).
    pub footer: u32,
    /// Of each segment, in container order.
    pub segments: Vec<SegmentChecksum>,
    /// Of the whole `deleted.mask` object; `None` when the member has none.
    pub mask: Option<u32>,
}

impl SetManifest {
    /// The manifest of an empty set, before its first commit.
    pub fn new() -> Self {
        Self::default()
    }

    /// Members in name-resolution order: the newest commit first, so the first
    /// member holding a dataset name holds its live copy.
    pub fn members_newest_first(&self) -> impl Iterator<Item = &MemberEntry> {
        self.members.iter().rev()
    }

    /// The member with id `id`, if committed.
    pub fn member(&self, id: &str) -> Option<&MemberEntry> {
        self.members.iter().find(|m| m.id == id)
    }

    /// The manifest object's bytes, after checking it with [`SetManifest::validate`]
    /// so that a writer never stores what a reader would refuse.
    ///
    /// # Errors
    ///
    /// `CorruptSetManifest` if the manifest is invalid or cannot be encoded.
    pub fn encode(&self) -> Result<Vec<u8>> {
        self.validate()?;
        let msgpack = rmp_serde::to_vec(self)
            .map_err(|e| corrupt(format!("the manifest cannot be encoded: {e}")))?;
        MANIFEST_FRAME.encode(&msgpack)
    }

    /// Decodes a manifest object and validates it.
    ///
    /// The compressed body is bounded by `limits.max_footer_bytes` and the
    /// decompressed one by `limits.max_decompressed_bytes`, as a footer is.
    ///
    /// # Errors
    ///
    /// `NotASetManifest` if the bytes do not start with the manifest magic (and
    /// are not a truncated copy of it), `UnsupportedVersion` for a version other
    /// than 1, `CorruptSetManifest` for everything else: truncation, trailing
    /// bytes, a checksum mismatch, an undecodable body, invalid content.
    pub fn decode(bytes: &[u8], limits: &DecodeLimits) -> Result<Self> {
        let msgpack = MANIFEST_FRAME.decode(bytes, limits)?;
        let manifest = Self::from_msgpack(&msgpack)?;
        manifest.validate()?;
        Ok(manifest)
    }

    /// Decodes the body's MessagePack (no validation): the structural guard
    /// first, so no declared length allocates more than the bytes present.
    ///
    /// # Errors
    ///
    /// `CorruptSetManifest` if the bytes are not a manifest body.
    pub fn from_msgpack(bytes: &[u8]) -> Result<Self> {
        crate::msgpack_guard::check_as(bytes, "set manifest", corrupt)?;
        let mut de = rmp_serde::Deserializer::from_read_ref(bytes);
        de.set_max_depth(MAX_DEPTH);
        Self::deserialize(&mut de).map_err(|e| corrupt(format!("set manifest MessagePack: {e}")))
    }

    /// Checks the content: member ids valid and unique, paths relative and
    /// unique, `datasets_live <= datasets_total`, per member unique variable
    /// names, attribute keys and segment names, `nulls <= count`, and every
    /// `min <= max` of one kind.
    ///
    /// # Errors
    ///
    /// `CorruptSetManifest` naming the member and what is wrong.
    pub fn validate(&self) -> Result<()> {
        let mut ids = HashSet::with_capacity(self.members.len());
        let mut paths = HashSet::with_capacity(self.members.len());
        for (index, member) in self.members.iter().enumerate() {
            let bad = |what: String| corrupt(format!("member {index} ({:?}): {what}", member.id));
            crate::name::validate_name(&member.id).map_err(|e| bad(e.to_string()))?;
            if !ids.insert(member.id.as_str()) {
                return Err(bad("the id appears twice".into()));
            }
            check_path(&member.path)
                .map_err(|why| bad(format!("path {:?}: {why}", member.path)))?;
            if !paths.insert(member.path.as_str()) {
                return Err(bad(format!("path {:?} appears twice", member.path)));
            }
            if member.datasets_live > member.datasets_total {
                return Err(bad(format!(
                    "{} live datasets of {} in total",
                    member.datasets_live, member.datasets_total
                )));
            }
            member.validate_contents().map_err(bad)?;
        }
        Ok(())
    }
}

impl MemberEntry {
    /// The per-variable, per-attribute and per-segment checks of [`SetManifest::validate`].
    fn validate_contents(&self) -> std::result::Result<(), String> {
        let mut names = HashSet::with_capacity(self.variables.len());
        for var in &self.variables {
            crate::name::validate_name(&var.name).map_err(|e| format!("variable: {e}"))?;
            if !names.insert(var.name.as_str()) {
                return Err(format!("variable {:?} appears twice", var.name));
            }
            if var.dtype.depth() > MAX_DTYPE_DEPTH {
                return Err(format!(
                    "variable {:?}: its dtype nests too deeply",
                    var.name
                ));
            }
            if var.nulls > var.count {
                return Err(format!(
                    "variable {:?}: {} nulls among {} elements",
                    var.name, var.nulls, var.count
                ));
            }
            if let (Some(min), Some(max)) = (&var.min, &var.max) {
                check_bounds(min, max).map_err(|why| format!("variable {:?}: {why}", var.name))?;
            }
        }
        let mut keys = HashSet::with_capacity(self.attributes.len());
        for attr in &self.attributes {
            if attr.key.is_empty() {
                return Err("an attribute key is empty".into());
            }
            if !keys.insert(attr.key.as_str()) {
                return Err(format!("attribute {:?} appears twice", attr.key));
            }
            check_bounds(&attr.min, &attr.max)
                .map_err(|why| format!("attribute {:?}: {why}", attr.key))?;
        }
        if let Some(range) = &self.names {
            if range.first > range.last {
                return Err(format!(
                    "name range {:?} .. {:?}: first above last",
                    range.first, range.last
                ));
            }
            if self.datasets_total == 0 {
                return Err("a name range, but no dataset".into());
            }
        }
        self.checksums.validate()
    }
}

impl MemberChecksums {
    /// Segment names non-empty, without `/`, each with one checksum.
    pub(crate) fn validate(&self) -> std::result::Result<(), String> {
        let mut segments = HashSet::with_capacity(self.segments.len());
        for segment in &self.segments {
            if segment.name.is_empty() || segment.name.contains('/') {
                return Err(format!(
                    "segment checksum for {:?}: not a segment name",
                    segment.name
                ));
            }
            if !segments.insert(segment.name.as_str()) {
                return Err(format!("segment {:?} has two checksums", segment.name));
            }
        }
        Ok(())
    }
}

/// `min <= max`, both of one kind.
fn check_bounds(min: &Value, max: &Value) -> std::result::Result<(), String> {
    if matches!(min, Value::Bool(_)) {
        // Version 1 of the manifest summarises no boolean data.
        return Err(format!("min {min:?} is a boolean"));
    }
    match min.compare(max) {
        None => Err(format!(
            "min {min:?} and max {max:?} are of different kinds"
        )),
        Some(Ordering::Greater) => Err(format!("min {min:?} is above max {max:?}")),
        Some(_) => Ok(()),
    }
}

/// A member path is relative and plain: components separated by single `/`,
/// none empty, `.` or `..`.
fn check_path(path: &str) -> std::result::Result<(), &'static str> {
    if path.is_empty() {
        return Err("a path cannot be empty");
    }
    if path.starts_with('/') || path.contains('\\') {
        return Err("a path must be relative, with '/' separators");
    }
    for component in path.split('/') {
        match component {
            "" => return Err("a path cannot have an empty component"),
            "." | ".." => return Err("a path cannot have '.' or '..' components"),
            _ => {}
        }
    }
    Ok(())
}

/// The framing shared by the set manifest and the checksum sidecar: an
/// 8-byte magic, a u32 version, a u64 body length, a zstd frame of
/// MessagePack, and a CRC32C of everything before it. Each object kind has its
/// own magic, version and error variants.
pub(crate) struct Frame {
    /// First 8 bytes of the object.
    pub(crate) magic: [u8; 8],
    /// The only version written and read.
    pub(crate) version: u32,
    /// The error for bytes that do not start with `magic` (given what they look like).
    pub(crate) not_this: fn(String) -> FormatError,
    /// The error for damaged bytes of this kind (given what is wrong).
    pub(crate) corrupt: fn(String) -> FormatError,
}

/// The set manifest's frame.
const MANIFEST_FRAME: Frame = Frame {
    magic: SET_MANIFEST_MAGIC,
    version: SET_MANIFEST_VERSION,
    not_this: |found| FormatError::NotASetManifest { found },
    corrupt,
};

impl Frame {
    /// The object's bytes around `msgpack`: header, compressed body, checksum.
    pub(crate) fn encode(&self, msgpack: &[u8]) -> Result<Vec<u8>> {
        let body = zstd::bulk::compress(msgpack, crate::DEFAULT_ZSTD_LEVEL)
            .map_err(|e| (self.corrupt)(format!("the body cannot be compressed: {e}")))?;
        let mut out = Vec::with_capacity(
            SET_MANIFEST_HEADER_LEN
                .saturating_add(body.len())
                .saturating_add(SET_MANIFEST_CHECKSUM_LEN),
        );
        out.extend_from_slice(&self.magic);
        out.extend_from_slice(&self.version.to_le_bytes());
        out.extend_from_slice(&(body.len() as u64).to_le_bytes());
        out.extend_from_slice(&body);
        let checksum = crc32c(&out);
        out.extend_from_slice(&checksum.to_le_bytes());
        Ok(out)
    }

    /// The decompressed MessagePack body of an object, after checking its
    /// magic, version, length and checksum, bounded by `limits` as a footer is.
    pub(crate) fn decode(&self, bytes: &[u8], limits: &DecodeLimits) -> Result<Vec<u8>> {
        let magic = bytes.get(..self.magic.len());
        if magic != Some(self.magic.as_slice()) {
            if !bytes.is_empty() && self.magic.starts_with(bytes) {
                return Err(self.truncated(bytes.len()));
            }
            return Err((self.not_this)(describe(bytes)));
        }
        let version = read_u32(bytes, 8).ok_or_else(|| self.truncated(bytes.len()))?;
        if version != self.version {
            return Err(FormatError::UnsupportedVersion {
                found: version,
                expected: self.version,
            });
        }
        let body_len = read_u64(bytes, 12).ok_or_else(|| self.truncated(bytes.len()))?;
        if body_len > limits.max_footer_bytes {
            return Err((self.corrupt)(format!(
                "the body declares {body_len} bytes, over the limit of {}",
                limits.max_footer_bytes
            )));
        }
        // In u128 nothing overflows; a length that matches fits in usize.
        let expected = u128::from(body_len)
            .saturating_add((SET_MANIFEST_HEADER_LEN + SET_MANIFEST_CHECKSUM_LEN) as u128);
        let present = bytes.len() as u128;
        if present < expected {
            return Err((self.corrupt)(format!(
                "truncated: the header announces {expected} bytes, the object has {present}"
            )));
        }
        if present > expected {
            return Err((self.corrupt)(format!(
                "{} trailing bytes after the {expected} the header announces",
                present.saturating_sub(expected)
            )));
        }
        let checksum_at = bytes.len().saturating_sub(SET_MANIFEST_CHECKSUM_LEN);
        let (covered, stored) = bytes.split_at(checksum_at);
        let stored = read_u32(stored, 0).ok_or_else(|| self.truncated(bytes.len()))?;
        let computed = crc32c(covered);
        if stored != computed {
            return Err((self.corrupt)(format!(
                "the CRC32C checksum does not match: stored {stored:#010x}, computed {computed:#010x}"
            )));
        }
        let body = covered.get(SET_MANIFEST_HEADER_LEN..).unwrap_or_default();
        decompress_limited(body, limits.max_decompressed_bytes, "the body").map_err(self.corrupt)
    }

    fn truncated(&self, len: usize) -> FormatError {
        (self.corrupt)(format!(
            "truncated: {len} bytes, shorter than the {}-byte header and checksum",
            SET_MANIFEST_HEADER_LEN + SET_MANIFEST_CHECKSUM_LEN
        ))
    }
}

/// What bytes that are not a manifest (or sidecar) look like; a container is
/// named as such even when whole (`identify` speaks from a container reader's view).
fn describe(bytes: &[u8]) -> String {
    if bytes.starts_with(&CONTAINER_MAGIC) {
        format!("an Atlas collection container ({} bytes)", bytes.len())
    } else {
        crate::frame::identify(bytes)
    }
}

fn corrupt(what: String) -> FormatError {
    FormatError::CorruptSetManifest { what }
}

fn read_u32(bytes: &[u8], at: usize) -> Option<u32> {
    let raw: [u8; 4] = bytes.get(at..at.checked_add(4)?)?.try_into().ok()?;
    Some(u32::from_le_bytes(raw))
}

fn read_u64(bytes: &[u8], at: usize) -> Option<u64> {
    let raw: [u8; 8] = bytes.get(at..at.checked_add(8)?)?.try_into().ok()?;
    Some(u64::from_le_bytes(raw))
}
