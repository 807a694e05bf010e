//! The fixed-size ends of a container: the 8-byte header and the 16-byte trailer.
//!
//! ```text
//! 0        4          8                                  len-16      len-8   len-4  len
//! | ATLS   | version  | segments ... | footer (zstd)     | footer_size | version | ATLS |
//! ```

use crate::constants::{
    CONTAINER_MAGIC, FORMAT_VERSION, HEADER_LEN, MASK_MAGIC, SET_MANIFEST_MAGIC, TRAILER_LEN,
};
use crate::error::{FormatError, Result};

/// The 8 bytes every container starts with.
pub fn encode_header() -> [u8; HEADER_LEN as usize] {
    let mut out = [0u8; HEADER_LEN as usize];
    let (magic, version) = out.split_at_mut(4);
    magic.copy_from_slice(&CONTAINER_MAGIC);
    version.copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    out
}

/// Checks the leading 8 bytes of a container: magic first, then version.
pub fn check_header(bytes: &[u8]) -> Result<()> {
    let (magic, version) = split_magic_version(bytes, 0).ok_or_else(|| not_atlas(bytes))?;
    if magic != CONTAINER_MAGIC {
        return Err(FormatError::corrupt(format!(
            "the trailer is valid but the leading magic is {}",
            describe_magic(&magic)
        )));
    }
    check_version(version)
}

/// The last 16 bytes of a container: where the footer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trailer {
    /// Length in bytes of the compressed footer that ends where the trailer starts.
    pub footer_size: u64,
}

impl Trailer {
    /// Parses the last 16 bytes of `tail` (which may hold more before them).
    ///
    /// The magic is checked before the version, so a foreign file is reported
    /// as such rather than as a version problem.
    pub fn parse_tail(tail: &[u8]) -> Result<Self> {
        let start = tail
            .len()
            .checked_sub(TRAILER_LEN as usize)
            .ok_or_else(|| not_atlas(tail))?;
        let trailer = tail.get(start..).ok_or_else(|| not_atlas(tail))?;
        let (size, rest) = trailer.split_at(8);
        let (version, magic) = rest.split_at(4);
        if magic != CONTAINER_MAGIC {
            return Err(not_atlas(tail));
        }
        let version = u32::from_le_bytes(version.try_into().map_err(|_| not_atlas(tail))?);
        check_version(version)?;
        let footer_size = u64::from_le_bytes(size.try_into().map_err(|_| not_atlas(tail))?);
        Ok(Self { footer_size })
    }

    /// The 16 trailer bytes for a footer of `footer_size` bytes.
    pub fn encode(&self) -> [u8; TRAILER_LEN as usize] {
        let mut out = [0u8; TRAILER_LEN as usize];
        let (size, rest) = out.split_at_mut(8);
        let (version, magic) = rest.split_at_mut(4);
        size.copy_from_slice(&self.footer_size.to_le_bytes());
        version.copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        magic.copy_from_slice(&CONTAINER_MAGIC);
        out
    }
}

fn check_version(found: u32) -> Result<()> {
    if found == FORMAT_VERSION {
        Ok(())
    } else {
        Err(FormatError::UnsupportedVersion {
            found,
            expected: FORMAT_VERSION,
        })
    }
}

fn split_magic_version(bytes: &[u8], at: usize) -> Option<([u8; 4], u32)> {
    let magic: [u8; 4] = bytes.get(at..at.checked_add(4)?)?.try_into().ok()?;
    let version: [u8; 4] = bytes
        .get(at.checked_add(4)?..at.checked_add(8)?)?
        .try_into()
        .ok()?;
    Some((magic, u32::from_le_bytes(version)))
}

/// Builds the `NotAnAtlasCollection` error for bytes whose end is not a trailer,
/// saying what they look like instead.
pub fn not_atlas(bytes: &[u8]) -> FormatError {
    FormatError::NotAnAtlasCollection {
        found: identify(bytes),
    }
}

/// Names what a byte string looks like, from its first and last bytes: an empty
/// object, a well-known foreign format, or a hex sample of unknown bytes.
pub fn identify(bytes: &[u8]) -> String {
    if bytes.is_empty() {
        return "an empty object".into();
    }
    let starts = |m: &[u8]| bytes.starts_with(m);
    let ends = |m: &[u8]| bytes.ends_with(m);
    let known = if starts(b"PAR1") || ends(b"PAR1") {
        Some("a Parquet file")
    } else if starts(b"\x89HDF\r\n\x1a\n") {
        Some("an HDF5 file (NetCDF-4?)")
    } else if starts(b"CDF\x01") || starts(b"CDF\x02") || starts(b"CDF\x05") {
        Some("a classic NetCDF file")
    } else if ends(b"ARRF") {
        Some("a bare array-format file, not an Atlas container")
    } else if starts(&MASK_MAGIC) {
        Some("an Atlas deletion mask, not a container")
    } else if starts(&SET_MANIFEST_MAGIC) {
        Some("an Atlas set manifest, not a container")
    } else if starts(&CONTAINER_MAGIC) {
        Some("an Atlas header but no valid trailer (truncated container?)")
    } else if starts(b"PK\x03\x04") {
        Some("a zip archive")
    } else if starts(b"\x1f\x8b") {
        Some("a gzip stream")
    } else if starts(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Some("a zstd stream")
    } else {
        None
    };
    match known {
        Some(name) => format!("{name} ({} bytes)", bytes.len()),
        None => {
            let tail_start = bytes.len().saturating_sub(4);
            let tail = bytes.get(tail_start..).unwrap_or_default();
            format!(
                "{} bytes of unknown content ending in {}",
                bytes.len(),
                describe_magic(tail)
            )
        }
    }
}

fn describe_magic(bytes: &[u8]) -> String {
    let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("[{}]", hex.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trailer_round_trips() {
        let t = Trailer { footer_size: 1234 };
        assert_eq!(Trailer::parse_tail(&t.encode()).unwrap(), t);
    }

    #[test]
    fn a_future_version_is_unsupported_not_foreign() {
        let mut bytes = Trailer { footer_size: 1 }.encode();
        bytes[8] = 9;
        assert_eq!(
            Trailer::parse_tail(&bytes).unwrap_err(),
            FormatError::UnsupportedVersion {
                found: 9,
                expected: 8
            }
        );
    }

    #[test]
    fn foreign_files_are_named() {
        let err = |b: &[u8]| Trailer::parse_tail(b).unwrap_err().to_string();
        assert!(err(b"").contains("empty object"));
        assert!(err(b"PAR1 some parquet bytes PAR1").contains("Parquet"));
        assert!(err(b"\x89HDF\r\n\x1a\n and lots more bytes").contains("HDF5"));
        assert!(err(&[7u8; 40]).contains("unknown content"));
    }

    #[test]
    fn a_header_checks_magic_then_version() {
        assert!(check_header(&encode_header()).is_ok());
        let mut h = encode_header();
        h[4] = 7;
        assert!(matches!(
            check_header(&h),
            Err(FormatError::UnsupportedVersion { found: 7, .. })
        ));
        assert!(matches!(
            check_header(b"XXXX\x08\0\0\0"),
            Err(FormatError::CorruptCollection { .. })
        ));
    }
}
