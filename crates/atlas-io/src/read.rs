//! Range reads over an [`opendal::Operator`] that never accept fewer bytes than asked.
//!
//! Each helper issues a known number of requests, stated in its doc, so the
//! facade can promise "open = one tail read" and tests can hold it to that.
//!
//! ETags and versions, as OpenDAL 0.59.5 reports them on a read response:
//! - `memory`: none (neither on read nor on stat).
//! - `fs`: none (only length and mtime).
//! - `s3`, `azblob`: the `ETag` header of the GET.
//! - `gcs`: the object generation as the version (used with if-version-match).

use std::ops::Range;

use bytes::{Bytes, BytesMut};
use futures::{StreamExt, TryStreamExt};
use opendal::{BytesRange, Operator};

use crate::error::{IoError, IoErrorKind};

/// Reads bigger than this are split into pieces of this size (8 MiB).
pub const DEFAULT_PIECE_SIZE: u64 = 8 * 1024 * 1024;

/// Reads `range` of `path` with one ranged GET; an empty range costs nothing.
///
/// Errors if the backend returns fewer bytes than the range holds (a short read),
/// including when the range runs past the end of the object.
pub async fn read_range(op: &Operator, path: &str, range: Range<u64>) -> Result<Bytes, IoError> {
    if range.start > range.end {
        return Err(IoError::new(
            IoErrorKind::Other,
            "read",
            path,
            format!("inverted range {}..{}", range.start, range.end),
        ));
    }
    let expected = range.end - range.start;
    if expected == 0 {
        return Ok(Bytes::new());
    }
    let buf = op
        .read_with(path)
        .range(range.clone())
        .await
        .map_err(|e| IoError::from_opendal(e, "read", path))?;
    let actual = buf.len() as u64;
    if actual != expected {
        return Err(IoError::new_short_read("read", path, range, actual));
    }
    Ok(buf.to_bytes())
}

/// True if the operator accepts suffix ranges (`bytes=-n`), natively or simulated.
///
/// OpenDAL's built-in simulate layer turns a suffix read into stat + range for
/// services that lack it (fs, azblob), so this is true for every service that
/// can read; a layer such as
/// `CountingLayer::without_suffix_reads` (feature `testing`)
/// can turn it off.
pub fn supports_suffix_reads(op: &Operator) -> bool {
    op.info().capability().read_with_suffix
}

/// Reads the last `n` bytes of `path`: one suffix GET, or stat + one GET where
/// suffix reads are not supported.
///
/// An object shorter than `n` yields the whole object. On the suffix path the
/// object length is not known, so a truncated response cannot be told from a
/// short object; callers validate what they read (magic bytes, lengths).
pub async fn read_suffix(op: &Operator, path: &str, n: u64) -> Result<Bytes, IoError> {
    if n == 0 {
        return Ok(Bytes::new());
    }
    if supports_suffix_reads(op) {
        return read_suffix_once(op, path, n).await;
    }
    let len = stat_len(op, path).await?;
    read_range(op, path, len.saturating_sub(n)..len).await
}

/// The length of `path` in bytes: one stat (HEAD).
pub async fn stat_len(op: &Operator, path: &str) -> Result<u64, IoError> {
    let meta = op
        .stat(path)
        .await
        .map_err(|e| IoError::from_opendal(e, "stat", path))?;
    Ok(meta.content_length())
}

/// A whole object as read, with what a conditional write needs to target this exact state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The object's bytes.
    pub bytes: Bytes,
    /// The ETag the read response carried, if the backend reports one.
    pub etag: Option<String>,
    /// The version the read response carried (GCS generation, S3 version id), if any.
    pub version: Option<String>,
}

/// Reads a whole object with one GET; `None` if it does not exist.
///
/// The ETag / version come from the same response, so they describe exactly
/// these bytes (see the module docs for which services report them).
pub async fn read_optional(op: &Operator, path: &str) -> Result<Option<Snapshot>, IoError> {
    let reader = match op.reader(path).await {
        Ok(r) => r,
        Err(e) if e.kind() == opendal::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(IoError::from_opendal(e, "read", path)),
    };
    let buf = match reader.read(..).await {
        Ok(b) => b,
        Err(e) if e.kind() == opendal::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(IoError::from_opendal(e, "read", path)),
    };
    let (etag, version) = match reader.metadata() {
        Some(m) => (m.etag().map(str::to_owned), m.version().map(str::to_owned)),
        None => (None, None),
    };
    Ok(Some(Snapshot {
        bytes: buf.to_bytes(),
        etag,
        version,
    }))
}

/// Splits `range` into consecutive pieces of at most `piece_size` bytes (at least one
/// byte each; an empty range gives no pieces; a zero `piece_size` is taken as 1).
pub fn split_into_pieces(range: Range<u64>, piece_size: u64) -> Vec<Range<u64>> {
    let piece_size = piece_size.max(1);
    let mut out = Vec::new();
    let mut start = range.start;
    while start < range.end {
        let end = start.saturating_add(piece_size).min(range.end);
        out.push(start..end);
        start = end;
    }
    out
}

/// How many pieces [`split_into_pieces`] cuts `range` into, without building them:
/// the requests [`read_ranges_in_pieces`] sends for it.
pub fn piece_count(range: &Range<u64>, piece_size: u64) -> u64 {
    range
        .end
        .saturating_sub(range.start)
        .div_ceil(piece_size.max(1))
}

/// Reads each of `ranges` of `path`, splitting ranges over 8 MiB into 8 MiB pieces
/// read concurrently (at most `max_concurrency` in flight), reassembled in order.
///
/// One request per piece; every piece is checked for short reads. Returns one
/// buffer per input range, in input order.
pub async fn read_ranges_concurrently(
    op: &Operator,
    path: &str,
    ranges: &[Range<u64>],
    max_concurrency: usize,
) -> Result<Vec<Bytes>, IoError> {
    read_ranges_in_pieces(op, path, ranges, DEFAULT_PIECE_SIZE, max_concurrency).await
}

/// [`read_ranges_concurrently`] with an explicit piece size (tests use small ones).
pub async fn read_ranges_in_pieces(
    op: &Operator,
    path: &str,
    ranges: &[Range<u64>],
    piece_size: u64,
    max_concurrency: usize,
) -> Result<Vec<Bytes>, IoError> {
    let mut pieces: Vec<(usize, Range<u64>)> = Vec::new();
    for (i, r) in ranges.iter().enumerate() {
        if r.start > r.end {
            return Err(IoError::new(
                IoErrorKind::Other,
                "read",
                path,
                format!("inverted range {}..{}", r.start, r.end),
            ));
        }
        pieces.extend(
            split_into_pieces(r.clone(), piece_size)
                .into_iter()
                .map(|p| (i, p)),
        );
    }
    let fetched: Vec<(usize, Bytes)> = futures::stream::iter(pieces)
        .map(|(i, p)| async move { read_range(op, path, p).await.map(|b| (i, b)) })
        .buffered(max_concurrency.max(1))
        .try_collect()
        .await?;

    let mut out: Vec<Vec<Bytes>> = vec![Vec::new(); ranges.len()];
    for (i, b) in fetched {
        if let Some(slot) = out.get_mut(i) {
            slot.push(b);
        }
    }
    Ok(out.into_iter().map(concat).collect())
}

/// Joins buffers; a single buffer is returned without copying.
pub fn concat(mut parts: Vec<Bytes>) -> Bytes {
    match parts.len() {
        0 => Bytes::new(),
        1 => parts.pop().unwrap_or_default(),
        _ => {
            let total = parts.iter().map(Bytes::len).sum();
            let mut buf = BytesMut::with_capacity(total);
            for p in &parts {
                buf.extend_from_slice(p);
            }
            buf.freeze()
        }
    }
}

/// One `bytes=-n` GET (the backend must read suffixes); a response longer than asked is refused.
pub async fn read_suffix_once(op: &Operator, path: &str, n: u64) -> Result<Bytes, IoError> {
    let buf = op
        .read_with(path)
        .range(BytesRange::suffix(n))
        .await
        .map_err(|e| IoError::from_opendal(e, "read", path))?;
    let got = buf.len() as u64;
    if got > n {
        return Err(IoError::new(
            IoErrorKind::Other,
            "read",
            path,
            format!("suffix read of {n} bytes returned {got}"),
        ));
    }
    Ok(buf.to_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cover_the_range_in_order() {
        assert_eq!(split_into_pieces(0..10, 4), vec![0..4, 4..8, 8..10]);
        assert_eq!(split_into_pieces(5..5, 4), Vec::<Range<u64>>::new());
        assert_eq!(split_into_pieces(0..3, 0), vec![0..1, 1..2, 2..3]);
        assert_eq!(
            split_into_pieces(u64::MAX - 3..u64::MAX, 2),
            vec![u64::MAX - 3..u64::MAX - 1, u64::MAX - 1..u64::MAX]
        );
    }

    #[test]
    fn concat_keeps_order() {
        let joined = concat(vec![Bytes::from_static(b"ab"), Bytes::from_static(b"cd")]);
        assert_eq!(&joined[..], b"abcd");
    }
}
