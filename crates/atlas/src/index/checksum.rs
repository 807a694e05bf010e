//! The checksums an index carries of itself, so that damaged bytes are
//! found before they answer a question or say where an array's chunks lie:
//! a CRC32C of every column chunk (one key-value entry, written once the
//! row groups are flushed and before the footer), and a CRC32C of the
//! Parquet footer itself (another entry, written as zeros and filled in
//! once the file is complete; a reader zeroes it again to check).

use base64::Engine as _;

/// The key of the column chunks' CRC32C: little-endian `u32`s, row group by
/// row group and leaf column by leaf column, base64.
pub(crate) const CHUNKS_KEY: &str = "atlas.index.chunks_crc32c";
/// The key of the footer's CRC32C, as 8 hexadecimal digits, computed with
/// these 8 digits as [`UNSEALED`].
pub(crate) const FOOTER_KEY: &str = "atlas.index.footer_crc32c";
/// The footer checksum's value while the footer is written.
pub(crate) const UNSEALED: &str = "00000000";
/// The Parquet file's fixed end: metadata length (4) and magic (4).
pub(crate) const PARQUET_TAIL_LEN: usize = 8;
/// How far past its key's end the footer checksum's value may start (a
/// Parquet key-value entry puts a field header and a length between them).
const VALUE_SEARCH: usize = 8;

/// Why an index's checksums do not hold.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ChecksumError {
    #[error("it has no {0:?} entry")]
    Missing(&'static str),
    #[error("its {0:?} entry is malformed")]
    Malformed(&'static str),
    #[error("its footer does not match its checksum")]
    Footer,
    #[error("column chunk {column} of row group {group} does not match its checksum")]
    Chunk { group: usize, column: usize },
}

/// The CRC32C of each of `ranges` of `file`, as [`CHUNKS_KEY`] stores them.
pub(crate) fn encode_chunks(
    file: &[u8],
    ranges: impl IntoIterator<Item = std::ops::Range<usize>>,
) -> Option<String> {
    let mut out = Vec::new();
    for range in ranges {
        out.extend_from_slice(&atlas_format::crc32c(file.get(range)?).to_le_bytes());
    }
    Some(base64::engine::general_purpose::STANDARD.encode(out))
}

/// The column chunk checksums [`CHUNKS_KEY`] holds, which must be `count`.
pub(crate) fn decode_chunks(text: &str, count: usize) -> Result<Vec<u32>, ChecksumError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|_| ChecksumError::Malformed(CHUNKS_KEY))?;
    if Some(bytes.len()) != count.checked_mul(4) {
        return Err(ChecksumError::Malformed(CHUNKS_KEY));
    }
    Ok(bytes
        .chunks_exact(4)
        .filter_map(|c| c.try_into().ok().map(u32::from_le_bytes))
        .collect())
}

/// Whether `bytes`, a column chunk, is what `expected` says.
pub(crate) fn check_chunk(
    bytes: &[u8],
    expected: u32,
    group: usize,
    column: usize,
) -> Result<(), ChecksumError> {
    if atlas_format::crc32c(bytes) == expected {
        Ok(())
    } else {
        Err(ChecksumError::Chunk { group, column })
    }
}

/// Where the footer checksum's value lies in `footer` (Parquet metadata):
/// the first `value` after the last [`FOOTER_KEY`].
fn value_at(footer: &[u8], value: &[u8]) -> Option<usize> {
    let key = FOOTER_KEY.as_bytes();
    let key_end = footer
        .windows(key.len())
        .rposition(|w| w == key)?
        .checked_add(key.len())?;
    let window_end = key_end
        .saturating_add(VALUE_SEARCH)
        .saturating_add(value.len())
        .min(footer.len());
    let window = footer.get(key_end..window_end)?;
    let at = window.windows(value.len()).position(|w| w == value)?;
    key_end.checked_add(at)
}

/// Fills in the footer checksum of `file`, a complete index written with
/// [`FOOTER_KEY`] set to [`UNSEALED`]; `None` if the entry is not there.
pub(crate) fn seal(file: &mut [u8]) -> Option<()> {
    let tail_start = file.len().checked_sub(PARQUET_TAIL_LEN)?;
    let len_bytes: [u8; 4] = file.get(tail_start..tail_start + 4)?.try_into().ok()?;
    let footer_start = tail_start.checked_sub(u32::from_le_bytes(len_bytes) as usize)?;
    let footer = file.get_mut(footer_start..tail_start)?;
    let at = value_at(footer, UNSEALED.as_bytes())?;
    let crc = format!("{:08x}", atlas_format::crc32c(footer));
    footer
        .get_mut(at..at.checked_add(UNSEALED.len())?)?
        .copy_from_slice(crc.as_bytes());
    Some(())
}

/// Whether `footer` (an index's Parquet metadata, as read) matches the
/// checksum `stated` in its own [`FOOTER_KEY`] entry.
pub(crate) fn check_footer(footer: &[u8], stated: &str) -> Result<(), ChecksumError> {
    let malformed = || ChecksumError::Malformed(FOOTER_KEY);
    let expected = u32::from_str_radix(stated, 16).map_err(|_| malformed())?;
    if stated.len() != UNSEALED.len() {
        return Err(malformed());
    }
    let at = value_at(footer, stated.as_bytes()).ok_or_else(malformed)?;
    let mut unsealed = footer.to_vec();
    unsealed
        .get_mut(at..at.saturating_add(UNSEALED.len()))
        .ok_or_else(malformed)?
        .copy_from_slice(UNSEALED.as_bytes());
    if atlas_format::crc32c(&unsealed) == expected {
        Ok(())
    } else {
        Err(ChecksumError::Footer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in for a Parquet file: bytes, a "footer" holding the key and
    /// its value the way a key-value entry lays them out, length, magic.
    fn file_with(value: &str) -> Vec<u8> {
        let mut footer = b"schema and row groups ".to_vec();
        footer.extend_from_slice(FOOTER_KEY.as_bytes());
        footer.extend_from_slice(&[0x18, 8]);
        footer.extend_from_slice(value.as_bytes());
        footer.extend_from_slice(b" created by");
        let mut file = b"PAR1 column chunks ".to_vec();
        file.extend_from_slice(&footer);
        file.extend_from_slice(&(footer.len() as u32).to_le_bytes());
        file.extend_from_slice(b"PAR1");
        file
    }

    fn footer_of(file: &[u8]) -> (&[u8], String) {
        let tail = file.len() - PARQUET_TAIL_LEN;
        let len = u32::from_le_bytes(file[tail..tail + 4].try_into().unwrap()) as usize;
        let footer = &file[tail - len..tail];
        let key_end = footer
            .windows(FOOTER_KEY.len())
            .position(|w| w == FOOTER_KEY.as_bytes())
            .unwrap()
            + FOOTER_KEY.len()
            + 2;
        let stated = String::from_utf8(footer[key_end..key_end + 8].to_vec()).unwrap();
        (footer, stated)
    }

    #[test]
    fn a_sealed_footer_checks_and_any_flipped_byte_of_it_does_not() {
        let mut file = file_with(UNSEALED);
        seal(&mut file).unwrap();
        let (footer, stated) = footer_of(&file);
        assert_ne!(stated, UNSEALED);
        check_footer(footer, &stated).unwrap();
        for at in 0..footer.len() {
            let mut damaged = footer.to_vec();
            damaged[at] ^= 0x20;
            assert!(check_footer(&damaged, &stated).is_err(), "byte {at}");
        }
    }

    #[test]
    fn chunk_checksums_round_trip_and_a_wrong_count_is_malformed() {
        let file = b"0123456789";
        let text = encode_chunks(file, [0..4, 4..10]).unwrap();
        let crcs = decode_chunks(&text, 2).unwrap();
        check_chunk(&file[4..10], crcs[1], 0, 1).unwrap();
        assert!(matches!(
            check_chunk(&file[0..4], crcs[1], 0, 1),
            Err(ChecksumError::Chunk {
                group: 0,
                column: 1
            })
        ));
        assert!(matches!(
            decode_chunks(&text, 3),
            Err(ChecksumError::Malformed(CHUNKS_KEY))
        ));
        assert!(
            encode_chunks(file, std::iter::once(8..12)).is_none(),
            "a range past the file"
        );
    }
}
