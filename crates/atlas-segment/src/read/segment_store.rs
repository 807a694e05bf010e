//! `SegmentStore`: byte ranges of one OpenDAL object, served as whole segment
//! files to array-format and to this crate's own block reads (`blocks`).
//!
//! An Atlas container holds many array-format files ("segments") back to back.
//! array-format 0.15 reads only through an `object_store::ObjectStore`, asking
//! for `head` (the size), the 12-byte trailer, the footer, then data blocks.
//! This store answers those requests for each registered segment under its own
//! virtual path (array-format's block cache keys on the path string, so two
//! segments must never share one; [`segment_path`] gives `seg/<index>`):
//!
//! - `head` is answered from the registered length, with no request;
//! - ranged gets become ranged reads of the container at `offset + start`;
//!   an end past the segment is clamped, a start at or past it is an error;
//! - reads that fall inside a prefetched tail are served from memory, so a
//!   trailer + footer lookup costs nothing after [`SegmentStore::prefetch_tail`];
//! - a read of the data region that starts where the previous one ended is
//!   read ahead: a window
//!   ([`READ_AHEAD_START`](crate::READ_AHEAD_START), doubling up to the
//!   policy's `max_read_ahead`, never past the footer) is
//!   sent as concurrent pieces, each read waits for the pieces it covers,
//!   and the next window is sent while the walk is in the second half of
//!   the last, so walking a segment's blocks in order costs a few requests,
//!   not one per block, and decoding overlaps the arrival of later pieces;
//!   any other read fetches exactly its range (the decisions are
//!   [`crate::read::read_ahead`]'s; this store only fetches what it is told). A
//!   piece that fails is not fatal: the read that needed it fetches its own
//!   range directly, which reports the error if it persists;
//! - any other path is `NotFound`; writes, deletes, copies and lists are `NotSupported`;
//! - an LZ4 block whose 4-byte size prefix disagrees with the size its footer
//!   declares (see [`SegmentStore::expect_lz4_prefixes`]) is refused before
//!   array-format sees it: LZ4 allocates whatever the prefix says.
//!
//! array-format panics (arithmetic underflow) on a trailer whose footer size
//! exceeds the file, so the trailer is validated before array-format sees it:
//! at prefetch time (typed [`StoreError`]) and on any read that returns the
//! last 12 bytes of a segment without a validated tail.

// Some helpers serve only the tests (which drive array-format through this store).
#![cfg_attr(not(test), allow(dead_code))]

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use async_trait::async_trait;
use bytes::Bytes;
use futures::future::{BoxFuture, Shared};
use futures::{FutureExt, StreamExt};
use object_store::path::Path;
use object_store::{
    Attributes, GetOptions, GetResult, GetResultPayload, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult,
};
use opendal::Operator;

use atlas_io::read::{ReadParallelism, concat, read_range_buffers, read_split};
use atlas_io::{IoError, IoErrorKind};

use crate::footer::tail::{ARRF_TRAILER_LEN, TailDecoder, TailError, TailStep, check_trailer};
use crate::read::read_ahead::ReadAhead;

const STORE_NAME: &str = "SegmentStore";

/// The virtual path of segment `index`: `seg/<index>`.
pub fn segment_path(index: u64) -> Path {
    Path::from(format!("seg/{index}"))
}

/// Why a segment cannot be registered, prefetched or read.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No segment is registered under this path.
    #[error("no segment is registered at {path:?}")]
    Unknown {
        /// The virtual path asked for.
        path: String,
    },
    /// A segment is already registered under this path.
    #[error("a segment is already registered at {path:?}")]
    AlreadyRegistered {
        /// The virtual path.
        path: String,
    },
    /// `offset + len` does not fit in a u64.
    #[error("segment {path:?} at offset {offset} with length {len} overflows u64")]
    OutOfRange {
        /// The virtual path.
        path: String,
        /// Registered offset in the container.
        offset: u64,
        /// Registered length.
        len: u64,
    },
    /// The segment's array-format trailer is missing or does not fit it
    /// (checked on the tail read, on a tail supplied, or on a read that
    /// returns the trailer).
    // Shows its source: this error reaches users through array-format's and
    // object_store's errors, which do not pass `source()` on.
    #[error("segment {path:?}: {source}")]
    Trailer {
        /// The virtual path.
        path: String,
        /// What is wrong with the trailer, or with the reads of the tail.
        #[source]
        source: TailError,
    },
    /// A supplied tail is longer than the segment.
    #[error("tail of {tail_len} bytes supplied for segment {path:?} of {segment_len} bytes")]
    TailTooLong {
        /// The virtual path.
        path: String,
        /// Tail length supplied.
        tail_len: u64,
        /// The segment's length.
        segment_len: u64,
    },
    /// A read starts at or past the end of the segment.
    #[error("read starting at {start} is past the end of segment {path:?} ({len} bytes)")]
    StartPastEnd {
        /// The virtual path.
        path: String,
        /// Requested start, relative to the segment.
        start: u64,
        /// The segment's length.
        len: u64,
    },
    /// The range itself is malformed (for example end before start).
    #[error("invalid range for segment {path:?}: {message}")]
    InvalidRange {
        /// The virtual path.
        path: String,
        /// What was wrong.
        message: String,
    },
    /// An LZ4 block's size prefix disagrees with the size the footer declares.
    #[error(
        "LZ4 block at byte {offset} of segment {path:?} says it decodes to {prefix} bytes; its footer says {declared}"
    )]
    Lz4Prefix {
        /// The virtual path.
        path: String,
        /// Where the block starts, relative to the segment.
        offset: u64,
        /// The size in the block's prefix.
        prefix: u32,
        /// The size the (validated) footer declares.
        declared: u64,
    },
    /// The container read failed.
    #[error(transparent)]
    Io(#[from] IoError),
}

/// [`check_trailer`] for the segment at `path`.
fn validate_trailer(path: &str, tail: &[u8], segment_len: u64) -> Result<u64, StoreError> {
    check_trailer(tail, segment_len).map_err(|source| trailer_error(path, source))
}

fn trailer_error(path: &str, source: TailError) -> StoreError {
    StoreError::Trailer {
        path: path.to_string(),
        source,
    }
}

#[derive(Debug, Clone)]
struct Segment {
    offset: u64,
    len: u64,
    /// The last `tail.len()` bytes of the segment, trailer validated; empty if none.
    tail: Bytes,
    /// Start of each LZ4 block to the size its footer declares.
    lz4: Arc<BTreeMap<u64, u64>>,
    /// Where the data region ends (the footer starts), once the trailer is
    /// known; until then nothing is read ahead.
    data_end: Option<u64>,
    /// Sequential-read state, shared by the clones `lookup` hands out.
    ahead: Arc<Mutex<ReadAhead<Piece>>>,
}

/// A piece of the data region fetched ahead: its bytes once they land (as
/// the transport's buffers, in order: see `read_range_buffers`), `None` if
/// the fetch failed (the read that needs it then fetches directly).
type Piece = Shared<BoxFuture<'static, Option<Arc<[Bytes]>>>>;

impl Segment {
    fn tail_start(&self) -> u64 {
        self.len.saturating_sub(self.tail.len() as u64)
    }

    /// How far reads may be fetched ahead: to the footer, or to the tail
    /// held in memory if that starts earlier; `None` before the footer is known.
    fn ahead_limit(&self) -> Option<u64> {
        self.data_end.map(|end| match self.tail.is_empty() {
            true => end,
            false => end.min(self.tail_start()),
        })
    }
}

/// An `ObjectStore` over byte ranges of one OpenDAL object; see the module docs.
pub struct SegmentStore {
    op: Operator,
    container: String,
    segments: RwLock<HashMap<String, Segment>>,
    /// Read-ahead state by the path it belongs to: a view registered as
    /// sharing a segment's (see [`SegmentStore::register_view`]) walks the
    /// same data region with it.
    aheads: Mutex<HashMap<String, Arc<Mutex<ReadAhead<Piece>>>>>,
    requests: AtomicU64,
    /// How a big read (a footer, a read-ahead window) is split.
    parallelism: ReadParallelism,
}

impl fmt::Debug for SegmentStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SegmentStore")
            .field("container", &self.container)
            .field("segments", &self.segment_count())
            .field("requests", &self.requests())
            .finish_non_exhaustive()
    }
}

impl fmt::Display for SegmentStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SegmentStore({})", self.container)
    }
}

impl SegmentStore {
    /// A store over the object `container` of `op`, with no segments yet;
    /// big reads are split as [`ReadParallelism::for_operator`] says.
    pub fn new(op: Operator, container: impl Into<String>) -> Self {
        let parallelism = ReadParallelism::for_operator(&op);
        Self {
            op,
            container: container.into(),
            segments: RwLock::new(HashMap::new()),
            aheads: Mutex::new(HashMap::new()),
            requests: AtomicU64::new(0),
            parallelism,
        }
    }

    /// Splits big reads as `parallelism` says.
    pub fn with_read_parallelism(mut self, parallelism: ReadParallelism) -> Self {
        self.parallelism = parallelism;
        self
    }

    /// Requests this store has sent to the backend so far (one per ranged
    /// read, one per part of a split one).
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Number of registered segments.
    pub fn segment_count(&self) -> usize {
        self.read_map().len()
    }

    fn read_map(&self) -> std::sync::RwLockReadGuard<'_, HashMap<String, Segment>> {
        self.segments.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write_map(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<String, Segment>> {
        self.segments.write().unwrap_or_else(|e| e.into_inner())
    }

    fn lookup(&self, path: &str) -> Result<Segment, StoreError> {
        self.read_map()
            .get(path)
            .cloned()
            .ok_or_else(|| StoreError::Unknown {
                path: path.to_string(),
            })
    }

    /// Registers `[offset, offset + len)` of the container under `path`; no request.
    ///
    /// The trailer is then validated on the read that fetches it.
    pub fn register(&self, path: &Path, offset: u64, len: u64) -> Result<(), StoreError> {
        self.insert(path.as_ref(), offset, len, Bytes::new(), None, None)
    }

    /// Registers a segment with its last `tail.len()` bytes already in hand; no request.
    ///
    /// The trailer in `tail` is validated now. Reads inside the tail are served
    /// from it; a footer larger than the tail is read from the backend.
    pub fn register_with_tail(
        &self,
        path: &Path,
        offset: u64,
        len: u64,
        tail: Bytes,
    ) -> Result<(), StoreError> {
        self.insert_with_tail(path.as_ref(), offset, len, tail, None)
    }

    /// [`SegmentStore::register_with_tail`] for a view of the segment at
    /// `segment` (a footer of its own over the same data region): the view
    /// and the segment share their read-ahead, so reads through either
    /// continue one walk and use the pieces either sent for.
    pub fn register_view(
        &self,
        path: &Path,
        segment: &Path,
        offset: u64,
        len: u64,
        tail: Bytes,
    ) -> Result<(), StoreError> {
        self.insert_with_tail(path.as_ref(), offset, len, tail, Some(segment.as_ref()))
    }

    /// Registers `path` as the data region of the segment at `segment`
    /// (`data_end` bytes from container offset `offset`), without any footer:
    /// a view whose arrays are known from elsewhere reads only blocks, and
    /// walks the data region with the segment (one read-ahead for both).
    pub fn register_data_view(
        &self,
        path: &Path,
        segment: &Path,
        offset: u64,
        data_end: u64,
    ) -> Result<(), StoreError> {
        self.insert(
            path.as_ref(),
            offset,
            data_end,
            Bytes::new(),
            Some(data_end),
            Some(segment.as_ref()),
        )
    }

    /// [`SegmentStore::insert`] of a segment whose `tail` is in hand, its
    /// trailer validated first.
    fn insert_with_tail(
        &self,
        path: &str,
        offset: u64,
        len: u64,
        tail: Bytes,
        share: Option<&str>,
    ) -> Result<(), StoreError> {
        if tail.len() as u64 > len {
            return Err(StoreError::TailTooLong {
                path: path.to_string(),
                tail_len: tail.len() as u64,
                segment_len: len,
            });
        }
        let data_end = if tail.is_empty() {
            None
        } else {
            Some(len.saturating_sub(validate_trailer(path, &tail, len)?))
        };
        self.insert(path, offset, len, tail, data_end, share)
    }

    /// Registers a segment and prefetches its tail: see [`SegmentStore::prefetch_tail`].
    pub async fn register_prefetched(
        &self,
        path: &Path,
        offset: u64,
        len: u64,
        prefetch: u64,
    ) -> Result<(), StoreError> {
        self.register(path, offset, len)?;
        if let Err(e) = self.prefetch_tail(path, prefetch).await {
            self.remove(path);
            return Err(e);
        }
        Ok(())
    }

    /// Registers `path` (its trailer, if `tail` holds it, already
    /// validated; its data region ending at `data_end` when known); its
    /// read-ahead is that of `share` (a path, whether registered yet or
    /// not) when given, else its own.
    fn insert(
        &self,
        path: &str,
        offset: u64,
        len: u64,
        tail: Bytes,
        data_end: Option<u64>,
        share: Option<&str>,
    ) -> Result<(), StoreError> {
        if offset.checked_add(len).is_none() {
            return Err(StoreError::OutOfRange {
                path: path.to_string(),
                offset,
                len,
            });
        }
        let mut map = self.write_map();
        if map.contains_key(path) {
            return Err(StoreError::AlreadyRegistered {
                path: path.to_string(),
            });
        }
        map.insert(
            path.to_string(),
            Segment {
                offset,
                len,
                tail,
                lz4: Arc::default(),
                data_end,
                ahead: self.ahead_of(share.unwrap_or(path)),
            },
        );
        Ok(())
    }

    /// The read-ahead state of `key`, made on first use.
    fn ahead_of(&self, key: &str) -> Arc<Mutex<ReadAhead<Piece>>> {
        let mut aheads = self.aheads.lock().unwrap_or_else(|e| e.into_inner());
        Arc::clone(aheads.entry(key.to_owned()).or_default())
    }

    /// Holds every LZ4 block of `path` to its declared size: `blocks` are
    /// `(offset in the segment, declared decoded size)`, as validation found
    /// them. A read that returns a block's first 4 bytes then checks them.
    pub fn expect_lz4_prefixes(&self, path: &Path, blocks: impl IntoIterator<Item = (u64, u64)>) {
        if let Some(seg) = self.write_map().get_mut(path.as_ref()) {
            seg.lz4 = Arc::new(blocks.into_iter().collect());
        }
    }

    /// Forgets the segment at `path`; true if there was one.
    pub fn remove(&self, path: &Path) -> bool {
        self.write_map().remove(path.as_ref()).is_some()
    }

    /// Reads the last `min(len, n)` bytes of the segment (at least the trailer) in
    /// one read, validates the trailer, and if the footer is longer than that,
    /// reads the missing front part with exactly one more (possibly split) read.
    ///
    /// Afterwards array-format's trailer and footer requests cost no request.
    pub async fn prefetch_tail(&self, path: &Path, n: u64) -> Result<(), StoreError> {
        let p = path.as_ref();
        let seg = self.lookup(p)?;
        let mut decoder = TailDecoder::new(seg.len, n);
        let tail = loop {
            match decoder.try_decode().map_err(|e| trailer_error(p, e))? {
                TailStep::NeedsData(rel) => {
                    let bytes = self.fetch(p, &seg, rel.clone()).await?;
                    decoder.push(rel, bytes).map_err(|e| trailer_error(p, e))?;
                }
                TailStep::Done(tail) => break tail,
            }
        };
        if let Some(s) = self.write_map().get_mut(p) {
            s.data_end = Some(tail.footer_offset());
            s.tail = tail.bytes;
        }
        Ok(())
    }

    /// Sends the front of `path`'s data region, up to the policy's
    /// [`max_read_ahead`](ReadParallelism::max_read_ahead), as
    /// concurrent pieces (split as the store's policy says) and returns at
    /// once; the reads that follow wait for the pieces they cover, and a walk
    /// into the second half sends the next window. For a caller about to
    /// read most of a segment's arrays; nothing happens before the footer is
    /// known. What pieces already sent hold is not sent again (two callers
    /// preparing one sweep fetch the front once). Returns the bytes sent for.
    pub async fn prefetch_data(&self, path: &Path) -> Result<u64, StoreError> {
        let p = path.as_ref();
        let seg = self.lookup(p)?;
        let Some(limit) = seg.ahead_limit() else {
            return Ok(0);
        };
        let end = limit.min(self.parallelism.max_read_ahead.max(1));
        if end == 0 {
            return Ok(0);
        }
        let mut send = self.sender(p, &seg)?;
        Ok(seg
            .ahead
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .prefetch(end, &self.parallelism, &mut send))
    }

    /// Sends the window a walk from the start of `path`'s data region
    /// begins with, before the first read asks (see
    /// [`ReadAhead::start_walk`]); `first_end` is where its first block ends.
    pub(crate) fn start_walk(&self, path: &Path, first_end: u64) {
        let p = path.as_ref();
        let Ok(seg) = self.lookup(p) else {
            return;
        };
        let (Some(limit), Ok(mut send)) = (seg.ahead_limit(), self.sender(p, &seg)) else {
            return;
        };
        seg.ahead
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .start_walk(first_end, limit, &self.parallelism, &mut send);
    }

    /// Keeps `front`, the first bytes of `path`'s data region read by the
    /// caller, for the reads that follow (which then read ahead from its end).
    pub(crate) fn prefetched_front(&self, path: &Path, front: Bytes) {
        if let Some(seg) = self.read_map().get(path.as_ref()) {
            let end = front.len() as u64;
            let piece: Piece = futures::future::ready(Some(Arc::from([front])))
                .boxed()
                .shared();
            seg.ahead
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .prefetched(end, piece, &self.parallelism);
        }
    }

    /// Makes a read at the first byte of `path`'s data region fetch a
    /// window ahead at once (see [`crate::read::read_ahead`]): for a segment opened
    /// whole, whose reader will probably walk it.
    pub(crate) fn ramp_from_start(&self, path: &Path) {
        if let Some(seg) = self.read_map().get(path.as_ref()) {
            seg.ahead
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .ramp_from_start();
        }
    }

    /// What sends a piece of `seg`'s data region: the read is started at
    /// once (on the runtime when there is one) and its bytes are shared.
    fn sender(
        &self,
        path: &str,
        seg: &Segment,
    ) -> Result<impl FnMut(Range<u64>) -> Piece + '_, StoreError> {
        let (op, container, offset) = (self.op.clone(), self.container.clone(), seg.offset);
        // The caller checked offset + len; the pieces lie inside the segment.
        if offset.checked_add(seg.len).is_none() {
            return Err(StoreError::OutOfRange {
                path: path.to_string(),
                offset,
                len: seg.len,
            });
        }
        let requests = &self.requests;
        Ok(move |rel: Range<u64>| -> Piece {
            requests.fetch_add(1, Ordering::Relaxed);
            let abs = offset.saturating_add(rel.start)..offset.saturating_add(rel.end);
            let (op, container) = (op.clone(), container.clone());
            let read = async move {
                read_range_buffers(&op, &container, abs)
                    .await
                    .map(Arc::from)
                    .map_err(|e| tracing::debug!(%e, "a read-ahead piece failed"))
                    .ok()
            };
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => {
                    let task = runtime.spawn(read);
                    async move { task.await.ok().flatten() }.boxed().shared()
                }
                Err(_) => read.boxed().shared(),
            }
        })
    }

    /// Reads `rel` (relative to the segment, within it) from the container.
    async fn fetch(&self, path: &str, seg: &Segment, rel: Range<u64>) -> Result<Bytes, StoreError> {
        if rel.start >= rel.end {
            return Ok(Bytes::new());
        }
        let abs = match (
            seg.offset.checked_add(rel.start),
            seg.offset.checked_add(rel.end),
        ) {
            (Some(s), Some(e)) => s..e,
            _ => {
                return Err(StoreError::OutOfRange {
                    path: path.to_string(),
                    offset: seg.offset,
                    len: seg.len,
                });
            }
        };
        let parts = self.parallelism.requests(&abs);
        self.requests.fetch_add(parts, Ordering::Relaxed);
        Ok(read_split(&self.op, &self.container, abs, &self.parallelism).await?)
    }

    /// Reads `rel` of the segment, from the tail where it covers it.
    async fn read_segment(
        &self,
        path: &str,
        seg: &Segment,
        rel: Range<u64>,
    ) -> Result<Bytes, StoreError> {
        let tail_start = seg.tail_start();
        let tail_part = |from: u64, to: u64| -> Bytes {
            let a = usize::try_from(from.saturating_sub(tail_start)).unwrap_or(usize::MAX);
            let b = usize::try_from(to.saturating_sub(tail_start)).unwrap_or(usize::MAX);
            if a <= b && b <= seg.tail.len() {
                seg.tail.slice(a..b)
            } else {
                Bytes::new()
            }
        };
        // Data the tail does not hold is read ahead, up to the tail or footer.
        if let Some(end) = seg.ahead_limit().filter(|&end| rel.end <= end) {
            return self.read_data(path, seg, rel, end).await;
        }
        if seg.tail.is_empty() || rel.end <= tail_start {
            let bytes = self.fetch(path, seg, rel.clone()).await?;
            if seg.tail.is_empty() && rel.end == seg.len && bytes.len() as u64 >= ARRF_TRAILER_LEN {
                validate_trailer(path, &bytes, seg.len)?;
            }
            return Ok(bytes);
        }
        if rel.start >= tail_start {
            return Ok(tail_part(rel.start, rel.end));
        }
        let front = self.fetch(path, seg, rel.start..tail_start).await?;
        Ok(concat(vec![front, tail_part(tail_start, rel.end)]))
    }

    /// Reads `rel` of the data region, ahead (never past `limit`) when it
    /// continues the last read: from the pieces sent ahead, then directly.
    async fn read_data(
        &self,
        path: &str,
        seg: &Segment,
        rel: Range<u64>,
        limit: u64,
    ) -> Result<Bytes, StoreError> {
        let mut send = self.sender(path, seg)?;
        let plan = seg.ahead.lock().unwrap_or_else(|e| e.into_inner()).plan(
            rel.clone(),
            limit,
            &self.parallelism,
            &mut send,
        );
        let mut parts = Vec::with_capacity(plan.pieces.len().saturating_add(1));
        // Each piece gives the bytes from where the last one stopped, so
        // the read is exactly `rel` even if pieces overlapped or left a gap
        // (then the rest is fetched directly).
        let mut at = rel.start;
        for (range, piece) in plan.pieces {
            let Some(buffers) = piece.await else {
                // A piece failed: forget them all and read this range alone.
                seg.ahead.lock().unwrap_or_else(|e| e.into_inner()).reset();
                return self.fetch(path, seg, rel).await;
            };
            if range.start > at || range.end <= at {
                break;
            }
            let from = at.saturating_sub(range.start);
            let to = rel.end.min(range.end).saturating_sub(range.start);
            let taken = usize::try_from(from)
                .ok()
                .zip(usize::try_from(to).ok())
                .and_then(|(a, b)| slice_buffers(&buffers, a..b, &mut parts));
            match taken {
                Some(n) => at = at.saturating_add(n as u64),
                None => return self.fetch(path, seg, rel).await,
            }
        }
        if at < rel.end {
            // The plan's direct range when the pieces stopped where it
            // expected, else whatever the pieces left.
            let rest = match plan.direct {
                Some(direct) if direct.start == at && direct.end == rel.end => direct,
                _ => at..rel.end,
            };
            parts.push(self.fetch(path, seg, rest).await?);
        }
        Ok(concat(parts))
    }

    /// Reads `rel` of the segment at `path` as array-format's block reads
    /// do (read-ahead, tail, LZ4 prefix check): for the reads of
    /// [`crate::read::blocks`], which bypass array-format.
    pub(crate) async fn read_block(
        &self,
        path: &Path,
        rel: Range<u64>,
    ) -> Result<Bytes, StoreError> {
        let p = path.as_ref();
        let seg = self.lookup(p)?;
        if rel.start > rel.end || rel.end > seg.len {
            return Err(StoreError::InvalidRange {
                path: p.to_string(),
                message: format!("{rel:?} is not inside a segment of {} bytes", seg.len),
            });
        }
        let bytes = self.read_segment(p, &seg, rel.clone()).await?;
        check_lz4_prefixes(p, &seg, rel.start, &bytes)?;
        Ok(bytes)
    }

    async fn get_segment(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> Result<GetResult, StoreError> {
        let p = location.as_ref();
        let seg = self.lookup(p)?;
        let meta = object_meta(location, seg.len);
        if options.head {
            return Ok(one_shot(meta, 0..0, Bytes::new()));
        }
        let rel = match &options.range {
            None => 0..seg.len,
            Some(r) => {
                r.is_valid().map_err(|e| StoreError::InvalidRange {
                    path: p.to_string(),
                    message: e.to_string(),
                })?;
                r.as_range(seg.len).map_err(|_| {
                    let start = match r {
                        object_store::GetRange::Bounded(b) => b.start,
                        object_store::GetRange::Offset(o) => *o,
                        object_store::GetRange::Suffix(_) => 0,
                    };
                    StoreError::StartPastEnd {
                        path: p.to_string(),
                        start,
                        len: seg.len,
                    }
                })?
            }
        };
        let bytes = self.read_segment(p, &seg, rel.clone()).await?;
        check_lz4_prefixes(p, &seg, rel.start, &bytes)?;
        Ok(one_shot(meta, rel, bytes))
    }
}

/// Checks the size prefix of every LZ4 block that starts inside `bytes`
/// (which begin at `start` of the segment) against its declared size.
fn check_lz4_prefixes(
    path: &str,
    seg: &Segment,
    start: u64,
    bytes: &Bytes,
) -> Result<(), StoreError> {
    let end = start.saturating_add(bytes.len() as u64);
    for (&offset, &declared) in seg.lz4.range(start..end) {
        let at = usize::try_from(offset.saturating_sub(start)).unwrap_or(usize::MAX);
        let Some(prefix) = at
            .checked_add(4)
            .and_then(|to| bytes.get(at..to))
            .and_then(|b| <[u8; 4]>::try_from(b).ok())
        else {
            // The read ends inside the prefix: no block is decoded from it.
            continue;
        };
        let prefix = u32::from_le_bytes(prefix);
        if u64::from(prefix) != declared {
            return Err(StoreError::Lz4Prefix {
                path: path.to_string(),
                offset,
                prefix,
                declared,
            });
        }
    }
    Ok(())
}

/// What `head` says about a segment: its length, no time, no ETag, no version.
fn object_meta(location: &Path, size: u64) -> ObjectMeta {
    ObjectMeta {
        location: location.clone(),
        last_modified: Default::default(),
        size,
        e_tag: None,
        version: None,
    }
}

fn one_shot(meta: ObjectMeta, range: Range<u64>, bytes: Bytes) -> GetResult {
    GetResult {
        payload: GetResultPayload::Stream(futures::stream::once(async move { Ok(bytes) }).boxed()),
        meta,
        range,
        attributes: Attributes::new(),
    }
}

fn not_supported(what: &str) -> object_store::Error {
    object_store::Error::NotSupported {
        source: format!("{STORE_NAME} is read-only and has no listing: {what} is not supported")
            .into(),
    }
}

fn to_object_store_error(err: StoreError) -> object_store::Error {
    match err {
        StoreError::Unknown { ref path } => object_store::Error::NotFound {
            path: path.clone(),
            source: Box::new(err),
        },
        StoreError::Io(ref io) if io.kind() == IoErrorKind::NotFound => {
            object_store::Error::NotFound {
                path: io.path().to_string(),
                source: Box::new(err),
            }
        }
        StoreError::Io(ref io) if io.kind() == IoErrorKind::PermissionDenied => {
            object_store::Error::PermissionDenied {
                path: io.path().to_string(),
                source: Box::new(err),
            }
        }
        other => object_store::Error::Generic {
            store: STORE_NAME,
            source: Box::new(other),
        },
    }
}

#[async_trait]
impl ObjectStore for SegmentStore {
    async fn put_opts(
        &self,
        _location: &Path,
        _payload: PutPayload,
        _opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        Err(not_supported("put"))
    }

    async fn put_multipart_opts(
        &self,
        _location: &Path,
        _opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        Err(not_supported("put_multipart"))
    }

    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        if options.version.is_some() {
            return Err(not_supported("get with a version"));
        }
        if options.if_match.is_some()
            || options.if_none_match.is_some()
            || options.if_modified_since.is_some()
            || options.if_unmodified_since.is_some()
        {
            let seg = self
                .lookup(location.as_ref())
                .map_err(to_object_store_error)?;
            options.check_preconditions(&object_meta(location, seg.len))?;
        }
        self.get_segment(location, options)
            .await
            .map_err(to_object_store_error)
    }

    refuse_delete_list_copy!();
}

/// Appends bytes `range` of the consecutive `buffers` to `out`, as slices
/// of them (no copy); the bytes taken, or `None` when the range is not
/// inside the buffers.
pub(crate) fn slice_buffers(
    buffers: &[Bytes],
    range: Range<usize>,
    out: &mut Vec<Bytes>,
) -> Option<usize> {
    if range.start > range.end {
        return None;
    }
    let mut start = 0usize;
    for b in buffers {
        let end = start.checked_add(b.len())?;
        let (from, to) = (range.start.max(start), range.end.min(end));
        if from < to {
            out.push(b.slice(from.saturating_sub(start)..to.saturating_sub(start)));
        }
        start = end;
    }
    (range.end <= start).then(|| range.end.saturating_sub(range.start))
}
