//! A structural pre-pass over MessagePack bytes, run before serde sees them.
//!
//! serde's sequence visitors reserve capacity from the length a container
//! declares. Walking the bytes first and refusing any array, map, string or
//! binary that claims more items than bytes remain bounds every such
//! reservation by what was actually read. The walk is iterative, so hostile
//! nesting cannot exhaust the stack.

use crate::error::{FormatError, Result};

/// Checks that `bytes` hold exactly one well-formed MessagePack value whose
/// declared lengths are all backed by bytes; a failure is a corrupt footer.
pub fn check(bytes: &[u8]) -> Result<()> {
    check_as(bytes, "footer", FormatError::corrupt)
}

/// [`check`] for any object: messages name `subject` (`"footer"`, `"set
/// manifest"`) and `error` turns them into the object's own error variant.
pub fn check_as(bytes: &[u8], subject: &str, error: fn(String) -> FormatError) -> Result<()> {
    walk(bytes, subject).map_err(error)
}

fn walk(bytes: &[u8], subject: &str) -> std::result::Result<(), String> {
    let truncated = |pos: usize| format!("{subject} MessagePack ends early at byte {pos}");
    // A declared length of `width` bytes at `pos`, advancing `pos`.
    let len = |pos: &mut usize, width: usize| {
        let at = *pos;
        read_len(bytes, pos, width).ok_or_else(|| truncated(at))
    };
    let mut pos: usize = 0;
    // Values still to read; starts at the one top-level value.
    let mut pending: u64 = 1;
    while pending > 0 {
        pending -= 1;
        let marker = *bytes.get(pos).ok_or_else(|| truncated(pos))?;
        pos = pos.checked_add(1).ok_or_else(|| truncated(pos))?;
        let (skip, items): (u64, u64) = match marker {
            0x00..=0x7f | 0xe0..=0xff | 0xc0 | 0xc2 | 0xc3 => (0, 0),
            0x80..=0x8f => (0, u64::from(marker & 0x0f) * 2),
            0x90..=0x9f => (0, u64::from(marker & 0x0f)),
            0xa0..=0xbf => (u64::from(marker & 0x1f), 0),
            0xc4 | 0xd9 => (len(&mut pos, 1)?, 0),
            0xc5 | 0xda => (len(&mut pos, 2)?, 0),
            0xc6 | 0xdb => (len(&mut pos, 4)?, 0),
            0xc7 => (len(&mut pos, 1)? + 1, 0),
            0xc8 => (len(&mut pos, 2)? + 1, 0),
            0xc9 => (len(&mut pos, 4)? + 1, 0),
            0xca | 0xce | 0xd2 => (4, 0),
            0xcb | 0xcf | 0xd3 => (8, 0),
            0xcc | 0xd0 => (1, 0),
            0xcd | 0xd1 => (2, 0),
            0xd4 => (2, 0),
            0xd5 => (3, 0),
            0xd6 => (5, 0),
            0xd7 => (9, 0),
            0xd8 => (17, 0),
            0xdc => (0, len(&mut pos, 2)?),
            0xdd => (0, len(&mut pos, 4)?),
            0xde => (0, len(&mut pos, 2)? * 2),
            0xdf => (0, len(&mut pos, 4)? * 2),
            0xc1 => {
                return Err(format!(
                    "{subject} MessagePack: reserved marker 0xc1 at byte {}",
                    pos - 1
                ));
            }
        };
        let remaining = (bytes.len() - pos) as u64;
        if skip > remaining || items > remaining {
            return Err(format!(
                "{subject} MessagePack: a value at byte {} claims more than the {remaining} bytes left",
                pos - 1
            ));
        }
        // Bounded by `remaining` just above, so both fit.
        pos += skip as usize;
        pending = pending.saturating_add(items);
    }
    if pos != bytes.len() {
        return Err(format!(
            "{subject} MessagePack: {} trailing bytes after the {subject}",
            bytes.len() - pos
        ));
    }
    Ok(())
}

/// A big-endian length of `width` bytes at `pos`, advancing `pos`; `None` if the bytes end first.
fn read_len(bytes: &[u8], pos: &mut usize, width: usize) -> Option<u64> {
    let end = pos.checked_add(width)?;
    let raw = bytes.get(*pos..end)?;
    *pos = end;
    Some(raw.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_declared_array_is_refused_before_allocation() {
        assert!(matches!(
            check(&[0xdd, 0xff, 0xff, 0xff, 0xff, 0x01]),
            Err(FormatError::CorruptCollection { .. })
        ));
    }

    #[test]
    fn well_formed_values_pass() {
        let v = rmp_serde::to_vec(&(1u8, "abc", vec![1u64 << 40, 2], Some(-3i64))).unwrap();
        check(&v).unwrap();
    }

    #[test]
    fn trailing_bytes_are_refused() {
        assert!(matches!(
            check(&[0x01, 0x02]),
            Err(FormatError::CorruptCollection { .. })
        ));
    }
}
