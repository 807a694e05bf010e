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

/// Smallest part of a split read under [`ReadParallelism::default`]: 1 MiB.
pub const DEFAULT_MIN_PART_SIZE: u64 = 1024 * 1024;
/// Largest part of a split read under [`ReadParallelism::default`]: 16 MiB.
pub const DEFAULT_MAX_PART_SIZE: u64 = 16 * 1024 * 1024;
/// Parts in flight at once under [`ReadParallelism::default`].
pub const DEFAULT_MAX_CONCURRENCY: usize = 16;
/// Largest read-ahead window under [`ReadParallelism::default`]: 32 MiB.
pub const DEFAULT_MAX_READ_AHEAD: u64 = 32 * 1024 * 1024;
/// Largest read-ahead window on local disk ([`ReadParallelism::for_scheme`]
/// of `fs`): 512 KiB. A local read costs no round trip, so a window ahead
/// saves little and holds memory for each segment a walk reads at once.
pub const LOCAL_MAX_READ_AHEAD: u64 = 512 * 1024;

/// How a big read is split into ranged GETs fetched concurrently.
///
/// Object stores (S3, GCS, Azure) stream one ranged GET at roughly one
/// connection's bandwidth, and serve parallel GETs of the same object about
/// that fast each, so a read of several MiB arrives sooner as parts fetched
/// at once than as one GET: it takes one request's latency plus the
/// transfer of its largest part. A read is therefore spread evenly over as
/// many parts as may be in flight ([`max_concurrency`](Self::max_concurrency)),
/// as long as no part is smaller than [`min_part_size`](Self::min_part_size)
/// (so requests stay at most one per `min_part_size` bytes: GETs cost money),
/// and over more parts when that is needed to keep every part within
/// [`max_part_size`](Self::max_part_size) (so a retried part is bounded).
/// Parts are consecutive and differ in length by at most one byte; they are
/// reassembled in order. A read shorter than twice `min_part_size` stays one
/// GET, unless it exceeds `max_part_size` (the maximum wins over the
/// minimum). Each part is a request of its own through the operator's
/// layers, so it is retried and timed out alone.
///
/// The default (parts of 1 to 16 MiB, 16 at once) suits object stores: a
/// 9.6 MB segment footer costs 9 GETs sent together, a 100 MB region 16, a
/// 1 GB one 64 parts of at most 16 MiB, 16 in flight.
/// [`ReadParallelism::single`] never splits, the better choice on local disk
/// ([`ReadParallelism::for_operator`] picks it there).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct ReadParallelism {
    /// No part of a split read is shorter (a zero is taken as 1;
    /// `u64::MAX` with `max_part_size` `u64::MAX`: no read is split).
    pub min_part_size: u64,
    /// No part of a split read is longer (a zero is taken as 1).
    pub max_part_size: u64,
    /// Parts of one read spread over and in flight at once (a zero is taken as 1).
    pub max_concurrency: usize,
    /// Most bytes a walk over a segment's data region fetches ahead of
    /// itself in one window, and a sweep before its first read (a zero is
    /// taken as 1). Ahead bytes are held until the walk passes them: a
    /// large window saves round trips to an object store; on local disk,
    /// where a read costs no round trip, it only holds memory.
    pub max_read_ahead: u64,
}

impl Default for ReadParallelism {
    /// For object stores: parts of 1 to 16 MiB, 16 in flight.
    fn default() -> Self {
        Self {
            min_part_size: DEFAULT_MIN_PART_SIZE,
            max_part_size: DEFAULT_MAX_PART_SIZE,
            max_concurrency: DEFAULT_MAX_CONCURRENCY,
            max_read_ahead: DEFAULT_MAX_READ_AHEAD,
        }
    }
}

impl ReadParallelism {
    /// Never split: every read is one GET, whatever its size.
    pub fn single() -> Self {
        Self::default()
            .min_part_size(u64::MAX)
            .max_part_size(u64::MAX)
    }

    /// The policy for a backend: for the local file system (`fs`),
    /// [`single`](Self::single), where one read of a big range is as fast
    /// as parts of it (see `docs/performance.md`), reading ahead at most
    /// [`LOCAL_MAX_READ_AHEAD`]; the [`Default`] for everything else.
    pub fn for_scheme(scheme: &str) -> Self {
        match scheme {
            "fs" => Self::single().max_read_ahead(LOCAL_MAX_READ_AHEAD),
            _ => Self::default(),
        }
    }

    /// [`for_scheme`](Self::for_scheme) of the service under `op`.
    pub fn for_operator(op: &Operator) -> Self {
        Self::for_scheme(op.info().scheme())
    }

    /// Sets [`min_part_size`](Self::min_part_size).
    pub fn min_part_size(mut self, bytes: u64) -> Self {
        self.min_part_size = bytes;
        self
    }

    /// Sets [`max_part_size`](Self::max_part_size).
    pub fn max_part_size(mut self, bytes: u64) -> Self {
        self.max_part_size = bytes;
        self
    }

    /// Sets [`max_concurrency`](Self::max_concurrency).
    pub fn max_concurrency(mut self, parts: usize) -> Self {
        self.max_concurrency = parts;
        self
    }

    /// Sets [`max_read_ahead`](Self::max_read_ahead).
    pub fn max_read_ahead(mut self, bytes: u64) -> Self {
        self.max_read_ahead = bytes;
        self
    }

    /// How many parts a read of `len` bytes becomes: spread over
    /// `max_concurrency` parts of at least `min_part_size`, or more where a
    /// part would exceed `max_part_size`; at least one, at most `len`.
    fn part_count(&self, len: u64) -> u64 {
        if len == 0 {
            return 0;
        }
        let concurrency = u64::try_from(self.max_concurrency.max(1)).unwrap_or(u64::MAX);
        let spread = concurrency.min(len / self.min_part_size.max(1));
        let bounded = len.div_ceil(self.max_part_size.max(1));
        spread.max(bounded).clamp(1, len)
    }

    /// The GETs a read of `range` becomes, in order: no part for an empty
    /// range, else consecutive parts that tile it (one where it is not split).
    pub fn parts(&self, range: Range<u64>) -> Vec<Range<u64>> {
        let len = range.end.saturating_sub(range.start);
        even_parts(range, self.part_count(len))
    }

    /// How many GETs a read of `range` costs: `parts(range).len()`, without building them.
    pub fn requests(&self, range: &Range<u64>) -> u64 {
        self.part_count(range.end.saturating_sub(range.start))
    }
}

/// Cuts `range` into `n` consecutive parts whose lengths differ by at most
/// one byte (the longer ones first); fewer when the range holds fewer than
/// `n` bytes, none when it is empty.
fn even_parts(range: Range<u64>, n: u64) -> Vec<Range<u64>> {
    let len = range.end.saturating_sub(range.start);
    let n = n.min(len);
    if n == 0 {
        return Vec::new();
    }
    let (base, longer) = (len / n, len % n);
    let mut out = Vec::with_capacity(usize::try_from(n).unwrap_or(0));
    let mut start = range.start;
    for i in 0..n {
        let end = start + base + u64::from(i < longer);
        out.push(start..end);
        start = end;
    }
    out
}

/// Reads `range` of `path` with one ranged GET; an empty range costs nothing.
///
/// Errors if the backend returns fewer bytes than the range holds (a short read),
/// including when the range runs past the end of the object.
pub async fn read_range(op: &Operator, path: &str, range: Range<u64>) -> Result<Bytes, IoError> {
    read_range_pieces(op, path, range).await.map(concat)
}

/// Buffers at least this large on average are kept as the backend returned
/// them by [`read_range_buffers`].
const KEPT_BUFFER_MIN: usize = 1 << 20;

/// [`read_range`], answered as consecutive buffers that together hold the
/// range: the backend's own when they are few and large (local disk returns
/// a long range in buffers of megabytes; joining them would hold the range
/// twice while it copies), else joined into one (a network response comes
/// in many small frames, each of which would keep a larger buffer alive).
pub async fn read_range_buffers(
    op: &Operator,
    path: &str,
    range: Range<u64>,
) -> Result<Vec<Bytes>, IoError> {
    let parts = read_range_pieces(op, path, range).await?;
    let total: usize = parts.iter().map(Bytes::len).sum();
    if parts.len() <= 1 || total / parts.len() >= KEPT_BUFFER_MIN {
        Ok(parts)
    } else {
        Ok(vec![concat(parts)])
    }
}

/// [`read_range`], answered with the buffers the backend returned, in order
/// and not joined: for a caller that copies them somewhere anyway.
async fn read_range_pieces(
    op: &Operator,
    path: &str,
    range: Range<u64>,
) -> Result<Vec<Bytes>, IoError> {
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
        return Ok(Vec::new());
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
    Ok(Iterator::collect(buf))
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

/// Reads `range` of `path` as `policy` says: one GET below its split
/// threshold, else its parts fetched concurrently and joined in order.
///
/// Costs [`ReadParallelism::requests`] requests (plus any retries of a part,
/// which the operator's retry layer makes for that part alone). Every part is
/// checked for short reads; the first part that fails for good fails the
/// read with its error, and the parts still in flight are dropped.
pub async fn read_split(
    op: &Operator,
    path: &str,
    range: Range<u64>,
    policy: &ReadParallelism,
) -> Result<Bytes, IoError> {
    read_split_pieces(op, path, range, policy).await.map(concat)
}

/// [`read_split`], answered with the buffers the parts arrived in, in order
/// and not joined (no copy): for a caller that copies them into a buffer of
/// its own anyway, such as a segment footer that must end up aligned.
pub async fn read_split_pieces(
    op: &Operator,
    path: &str,
    range: Range<u64>,
    policy: &ReadParallelism,
) -> Result<Vec<Bytes>, IoError> {
    let mut out = fetch_ranges(op, path, std::slice::from_ref(&range), policy).await?;
    Ok(out.pop().unwrap_or_default())
}

/// [`read_split`] of each of `ranges`, all parts sharing one bound of
/// `policy.max_concurrency`; one buffer per input range, in input order.
pub async fn read_ranges(
    op: &Operator,
    path: &str,
    ranges: &[Range<u64>],
    policy: &ReadParallelism,
) -> Result<Vec<Bytes>, IoError> {
    let fetched = fetch_ranges(op, path, ranges, policy).await?;
    Ok(fetched.into_iter().map(concat).collect())
}

/// The GETs of [`read_ranges`]; the buffers of each input range, in order.
async fn fetch_ranges(
    op: &Operator,
    path: &str,
    ranges: &[Range<u64>],
    policy: &ReadParallelism,
) -> Result<Vec<Vec<Bytes>>, IoError> {
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
        pieces.extend(policy.parts(r.clone()).into_iter().map(|p| (i, p)));
    }
    let fetched: Vec<(usize, Vec<Bytes>)> = futures::stream::iter(pieces)
        .map(|(i, p)| async move { read_range_pieces(op, path, p).await.map(|b| (i, b)) })
        .buffered(policy.max_concurrency.max(1))
        .try_collect()
        .await?;
    let mut out: Vec<Vec<Bytes>> = vec![Vec::new(); ranges.len()];
    for (i, bufs) in fetched {
        if let Some(slot) = out.get_mut(i) {
            slot.extend(bufs);
        }
    }
    Ok(out)
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
    fn even_parts_tile_the_range_in_order_and_differ_by_at_most_a_byte() {
        assert_eq!(even_parts(0..10, 3), vec![0..4, 4..7, 7..10]);
        assert_eq!(even_parts(5..5, 4), Vec::<Range<u64>>::new());
        assert_eq!(even_parts(0..3, 8), vec![0..1, 1..2, 2..3]);
        assert_eq!(even_parts(0..3, 0), Vec::<Range<u64>>::new());
        assert_eq!(
            even_parts(u64::MAX - 3..u64::MAX, 2),
            vec![u64::MAX - 3..u64::MAX - 1, u64::MAX - 1..u64::MAX]
        );
    }

    #[test]
    fn a_read_is_spread_over_the_concurrency_in_parts_no_smaller_than_the_minimum() {
        let p = ReadParallelism::default()
            .min_part_size(4)
            .max_part_size(100)
            .max_concurrency(3);
        assert_eq!(
            p.parts(0..7),
            vec![0..7],
            "under two minimum parts: one GET"
        );
        assert_eq!(p.parts(0..8), vec![0..4, 4..8]);
        assert_eq!(
            p.parts(10..20),
            vec![10..15, 15..20],
            "no part under 4 bytes"
        );
        assert_eq!(p.parts(10..22), vec![10..14, 14..18, 18..22], "3 at once");
        assert_eq!(
            p.parts(0..30).len(),
            3,
            "parts grow rather than exceed the concurrency"
        );
        assert_eq!(p.parts(3..3), Vec::<Range<u64>>::new());
        for r in [0..7, 10..20, 3..3, 0..8, 0..9, 0..30, 0..1000] {
            assert_eq!(p.requests(&r), p.parts(r.clone()).len() as u64, "{r:?}");
        }
    }

    #[test]
    fn no_part_exceeds_the_maximum_however_long_the_read() {
        let p = ReadParallelism::default()
            .min_part_size(4)
            .max_part_size(10)
            .max_concurrency(3);
        let parts = p.parts(0..95);
        assert_eq!(parts.len(), 10, "ceil(95 / 10), beyond the 3 in flight");
        assert!(parts.iter().all(|r| r.end - r.start <= 10), "{parts:?}");
        assert_eq!(parts.last().map(|r| r.end), Some(95));
        assert_eq!(
            ReadParallelism::single().parts(0..u64::MAX),
            vec![0..u64::MAX]
        );
    }

    #[test]
    fn the_default_sends_a_footer_as_one_get_per_mib_and_a_big_region_as_sixteen() {
        let p = ReadParallelism::default();
        const MIB: u64 = 1024 * 1024;
        assert_eq!(p.requests(&(0..MIB)), 1);
        assert_eq!(p.requests(&(0..2 * MIB - 1)), 1);
        assert_eq!(p.requests(&(0..9_580_000)), 9);
        assert_eq!(p.requests(&(0..100_000_000)), 16);
        assert_eq!(p.requests(&(0..1 << 30)), 64, "16 MiB parts at most");
    }

    #[test]
    fn local_disk_reads_whole_and_ahead_little_and_every_other_service_splits() {
        let local = ReadParallelism::for_scheme("fs");
        assert_eq!(local.requests(&(0..1 << 30)), 1);
        assert_eq!(local.max_read_ahead, LOCAL_MAX_READ_AHEAD);
        assert!(LOCAL_MAX_READ_AHEAD < ReadParallelism::default().max_read_ahead);
        for scheme in ["s3", "gcs", "azblob", "http", "memory"] {
            assert_eq!(
                ReadParallelism::for_scheme(scheme),
                ReadParallelism::default(),
                "{scheme}"
            );
        }
    }

    #[test]
    fn concat_keeps_order() {
        let joined = concat(vec![Bytes::from_static(b"ab"), Bytes::from_static(b"cd")]);
        assert_eq!(&joined[..], b"abcd");
    }
}
