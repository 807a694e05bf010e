//! The checksum sidecar: a lone collection's [`MemberChecksums`] in an
//! object of its own (`data.atlas.crc32c`) beside `data.atlas`, so that
//! `verify --deep` can name the segment a damaged byte is in without the
//! collection being part of a set. v8 readers never open it.
//!
//! ```text
//! | "ATLASCRC" | version u32 LE = 1 | body_len u64 LE = n | body: n bytes, zstd(MessagePack) | crc32c u32 LE |
//! ```
//!
//! The frame is the set manifest's; only the magic and the errors differ.
//! The body is one `MemberChecksums` in the manifest's wire form.

use serde::Deserialize;

use crate::constants::{CHECKSUM_SIDECAR_MAGIC, CHECKSUM_SIDECAR_VERSION};
use crate::error::{FormatError, Result};
use crate::footer::DecodeLimits;
use crate::set_manifest::{Frame, MemberChecksums};

/// Nesting of a `MemberChecksums` body, with room to spare.
const MAX_DEPTH: usize = 8;

const SIDECAR_FRAME: Frame = Frame {
    magic: CHECKSUM_SIDECAR_MAGIC,
    version: CHECKSUM_SIDECAR_VERSION,
    not_this: |found| FormatError::NotAChecksumSidecar { found },
    corrupt,
};

fn corrupt(what: String) -> FormatError {
    FormatError::CorruptChecksumSidecar { what }
}

/// The checksum sidecar's content: the checksums of one collection's
/// container parts and mask, as a set manifest records them for a member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChecksumSidecar {
    /// The checksums.
    pub checksums: MemberChecksums,
}

impl ChecksumSidecar {
    /// Wraps `checksums`.
    pub fn new(checksums: MemberChecksums) -> Self {
        Self { checksums }
    }

    /// The sidecar object's bytes, after the manifest's checks of the
    /// checksums (segment names present and unique).
    ///
    /// # Errors
    ///
    /// `CorruptChecksumSidecar` if the checksums are invalid or cannot be encoded.
    pub fn encode(&self) -> Result<Vec<u8>> {
        self.checksums.validate().map_err(corrupt)?;
        let msgpack = rmp_serde::to_vec(&self.checksums)
            .map_err(|e| corrupt(format!("the checksums cannot be encoded: {e}")))?;
        SIDECAR_FRAME.encode(&msgpack)
    }

    /// Decodes a sidecar object, bounded by `limits` as a footer is.
    ///
    /// # Errors
    ///
    /// `NotAChecksumSidecar` if the bytes do not start with `ATLASCRC` (and are
    /// not a truncated copy of it), `UnsupportedVersion` for a version other
    /// than 1, `CorruptChecksumSidecar` for truncation, trailing bytes, a
    /// checksum mismatch, an undecodable body or invalid content.
    pub fn decode(bytes: &[u8], limits: &DecodeLimits) -> Result<Self> {
        let msgpack = SIDECAR_FRAME.decode(bytes, limits)?;
        crate::msgpack_guard::check_as(&msgpack, "checksum sidecar", corrupt)?;
        let mut de = rmp_serde::Deserializer::from_read_ref(&msgpack);
        de.set_max_depth(MAX_DEPTH);
        let checksums = MemberChecksums::deserialize(&mut de)
            .map_err(|e| corrupt(format!("checksum sidecar MessagePack: {e}")))?;
        checksums.validate().map_err(corrupt)?;
        Ok(Self { checksums })
    }
}
