//! Reading fixed-width arrays without array-format's read path: each block
//! decoded once, shared by every read of it.
//!
//! array-format's `read_array` looks the array up by name again, goes
//! through its block cache (a concurrent cache whose bookkeeping costs more
//! than the decode of a small block) and hands the decode to a blocking
//! task. A sweep over thousands of small arrays packed into a few blocks pays
//! all of that per array. This module reads those arrays itself, from what
//! validation already walked:
//!
//! - [`ChunkTable`]: for every array that passed validation, its chunk
//!   entries (coordinate, block, offset, size), and the block table
//!   ([`BlockLoc`]); built while validation, so it costs no second walk;
//! - [`BlockSlots`]: the last few decoded blocks of one segment, keyed by
//!   block id, each behind a [`tokio::sync::OnceCell`], so concurrent reads
//!   of one block wait for the first reader's decode instead of decoding it
//!   again (single flight); shared by the segment and by every one-array
//!   view of it found by lookup;
//! - [`BlockSource::read`]: the region of one array, assembled from those
//!   blocks, or `None` when the array is not one this path handles
//!   (variable-length or bool elements, an unknown codec, a region
//!   array-format interprets its own way), and the caller falls back to
//!   array-format.
//!
//! Every number used here was checked by validation (block inside the data
//! region, declared size within what the codec can expand to, chunk inside
//! its grid and its block, fixed-width chunk of exactly its elements' bytes),
//! and the decoded block must be exactly its declared size before anything
//! is sliced out of it; slicing uses checked `get`, so damaged bytes are an
//! error, never a panic.

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use array_format::{ArrayElement, CompressionCodec, Lz4Codec};
use bytes::Bytes;
use ndarray::{ArrayD, IxDyn, SliceInfo, SliceInfoElem};
use object_store::path::Path;
use tokio::sync::OnceCell;

use crate::error::SegmentError;
use crate::read::segment::ArrayRef;
use crate::read::segment_store::{SegmentStore, StoreError};
use crate::types::value::dtype_from_stored;

/// Decoded blocks kept per segment: enough for the reads a bounded
/// `read_many` has in flight, which walk the blocks in order.
pub const BLOCKS_KEPT_PER_SEGMENT: usize = 2;

/// Decoded blocks larger than this are decoded on a blocking thread rather
/// than on the async worker.
const INLINE_DECODE_MAX: u64 = 1024 * 1024;

/// How a block is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BlockCodec {
    /// Uncompressed.
    None,
    /// A zstd frame.
    Zstd,
    /// An LZ4 block with a 4-byte size prefix (held to the footer by the store).
    Lz4,
    /// A codec this path does not decode (array-format reports it).
    Other,
}

/// One block as the validated footer records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BlockLoc {
    /// First byte in the segment.
    pub offset: u64,
    /// Bytes stored.
    pub compressed: u64,
    /// Bytes it decodes to (checked against what the codec can expand to).
    pub decoded: u64,
    /// How it is stored.
    pub codec: BlockCodec,
}

/// One chunk entry: where its coordinate sits in [`ChunkTable::coords`], and
/// its bytes in a decoded block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ChunkLoc {
    coord_at: u32,
    block: u32,
    offset: u32,
    size: u32,
}

/// Every validated array's chunk entries, in footer order, and the block table.
#[derive(Debug, Default)]
pub(crate) struct ChunkTable {
    blocks: Vec<BlockLoc>,
    /// Per array (footer position): its range of `chunks`; `None` for an
    /// array validation flagged, or whose table did not fit `u32` indices.
    arrays: Vec<Option<(u32, u32)>>,
    chunks: Vec<ChunkLoc>,
    coords: Vec<u32>,
}

impl ChunkTable {
    /// A table over `blocks`, with no arrays yet.
    pub(crate) fn new(blocks: Vec<BlockLoc>, arrays: usize) -> Self {
        Self {
            blocks,
            arrays: Vec::with_capacity(arrays),
            chunks: Vec::new(),
            coords: Vec::new(),
        }
    }

    /// Starts the next array (in footer order).
    pub(crate) fn begin_array(&mut self) {
        let start = u32::try_from(self.chunks.len()).ok();
        self.arrays.push(start.map(|s| (s, s)));
    }

    /// Adds a chunk entry to the array begun last.
    pub(crate) fn push_chunk(
        &mut self,
        coord: impl IntoIterator<Item = u32>,
        block: u32,
        offset: u32,
        size: u32,
    ) {
        let (Some(Some(range)), Ok(coord_at), Ok(next)) = (
            self.arrays.last_mut(),
            u32::try_from(self.coords.len()),
            u32::try_from(self.chunks.len().saturating_add(1)),
        ) else {
            if let Some(last) = self.arrays.last_mut() {
                *last = None;
            }
            return;
        };
        range.1 = next;
        self.coords.extend(coord);
        self.chunks.push(ChunkLoc {
            coord_at,
            block,
            offset,
            size,
        });
    }

    /// Marks the array begun last as unusable here (validation flagged it);
    /// its entries are dropped.
    pub(crate) fn reject_array(&mut self) {
        if let Some(Some((start, _))) = self.arrays.last().copied() {
            let keep_chunks = usize::try_from(start).unwrap_or(usize::MAX);
            if let Some(first) = self.chunks.get(keep_chunks) {
                let keep_coords = usize::try_from(first.coord_at).unwrap_or(usize::MAX);
                self.coords.truncate(keep_coords);
            }
            self.chunks.truncate(keep_chunks);
        }
        if let Some(last) = self.arrays.last_mut() {
            *last = None;
        }
    }

    /// Where the block at the start of the data region ends, if one starts there.
    pub(crate) fn first_block_end(&self) -> Option<u64> {
        self.blocks
            .iter()
            .find(|b| b.offset == 0)
            .and_then(|b| b.offset.checked_add(b.compressed))
    }

    /// Blocks in the segment.
    #[cfg(test)]
    pub(crate) fn block_count(&self) -> usize {
        self.blocks.len()
    }

    fn chunks_of(&self, position: usize) -> Option<&[ChunkLoc]> {
        let (start, end) = (*self.arrays.get(position)?)?;
        self.chunks
            .get(usize::try_from(start).ok()?..usize::try_from(end).ok()?)
    }

    fn coord(&self, chunk: &ChunkLoc, rank: usize) -> Option<&[u32]> {
        let at = usize::try_from(chunk.coord_at).ok()?;
        self.coords.get(at..at.checked_add(rank)?)
    }
}

/// The last few decoded blocks of one segment, each decoded once.
#[derive(Debug, Default)]
pub(crate) struct BlockSlots {
    /// Most recently used first.
    slots: Mutex<VecDeque<(u32, Arc<OnceCell<Bytes>>)>>,
}

impl BlockSlots {
    /// The cell of block `id`, created (and the least recently used evicted)
    /// if it is not kept. A reader holding an evicted cell still gets its bytes.
    fn cell(&self, id: u32) -> Arc<OnceCell<Bytes>> {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(at) = slots.iter().position(|(b, _)| *b == id)
            && let Some(hit) = slots.remove(at)
        {
            let cell = hit.1.clone();
            slots.push_front(hit);
            return cell;
        }
        let cell = Arc::new(OnceCell::new());
        slots.push_front((id, cell.clone()));
        slots.truncate(BLOCKS_KEPT_PER_SEGMENT);
        cell
    }
}

/// What a [`crate::Segment`] reads its fixed-width arrays through.
#[derive(Debug)]
pub(crate) struct BlockSource {
    pub store: Arc<SegmentStore>,
    /// The segment's (or one-array view's) path in the store.
    pub path: Path,
    pub table: ChunkTable,
    /// Shared by every view of the same segment.
    pub slots: Arc<BlockSlots>,
    /// Blocks decoded by every segment of the set.
    pub decoded: Arc<AtomicU64>,
}

impl BlockSource {
    /// Reads the region `origin`/`extent` (both empty: the whole array) of
    /// `array`, or `None` when this path does not handle it (see the module
    /// docs).
    pub(crate) async fn read<S: ArrayElement>(
        &self,
        segment: &str,
        array: ArrayRef<'_>,
        origin: &[usize],
        extent: &[usize],
    ) -> Option<Result<ArrayD<S>, SegmentError>> {
        if S::DTYPE.element_size().is_none() || array.dtype() != dtype_from_stored(&S::DTYPE) {
            return None;
        }
        let chunks = self.table.chunks_of(array.position())?;
        let (full, chunk_shape) = array.grid();
        let rank = full.len();
        if chunk_shape.len() != rank {
            return None;
        }
        let wanted: Vec<Range<usize>> = if origin.is_empty() && extent.is_empty() {
            full.iter().map(|&s| 0..s).collect()
        } else if origin.len() == rank && extent.len() == rank {
            let mut out = Vec::with_capacity(rank);
            for ((&o, &e), &s) in origin.iter().zip(extent).zip(&full) {
                out.push(o.min(s)..o.checked_add(e)?.min(s));
            }
            out
        } else {
            return None;
        };
        for chunk in chunks {
            let codec = self.table.blocks.get(chunk.block as usize)?.codec;
            if codec == BlockCodec::Other {
                return None;
            }
        }
        Some(
            self.assemble(segment, array, chunks, &full, &chunk_shape, &wanted)
                .await,
        )
    }

    async fn assemble<S: ArrayElement>(
        &self,
        segment: &str,
        array: ArrayRef<'_>,
        chunks: &[ChunkLoc],
        full: &[usize],
        chunk_shape: &[usize],
        wanted: &[Range<usize>],
    ) -> Result<ArrayD<S>, SegmentError> {
        let name = array.name();
        let corrupt =
            |what: &str| SegmentError::corrupt(segment, Some(name), format!("reading: {what}"));
        let out_shape: Vec<usize> = wanted
            .iter()
            .map(|r| r.end.saturating_sub(r.start))
            .collect();
        let fill = S::fill_element(array.stored_fill().as_ref());
        let mut output: Option<ArrayD<S>> = None;
        for chunk in chunks {
            let coord = self
                .table
                .coord(chunk, full.len())
                .ok_or_else(|| corrupt("chunk coordinate missing"))?;
            let mut range = Vec::with_capacity(full.len());
            for ((&c, &cs), &len) in coord.iter().zip(chunk_shape).zip(full) {
                let start = (c as usize)
                    .checked_mul(cs)
                    .ok_or_else(|| corrupt("chunk coordinate overflows"))?;
                range.push(start.min(len)..start.saturating_add(cs).min(len));
            }
            let overlap: Vec<Range<usize>> = range
                .iter()
                .zip(wanted)
                .map(|(c, w)| c.start.max(w.start)..c.end.min(w.end))
                .collect();
            if overlap.iter().any(|r| r.start >= r.end) {
                continue;
            }
            let block = self.block(segment, chunk.block).await?;
            let start = chunk.offset as usize;
            let bytes = start
                .checked_add(chunk.size as usize)
                .and_then(|end| block.get(start..end))
                .ok_or_else(|| corrupt("chunk runs past its decoded block"))?;
            let chunk_dims: Vec<usize> = range
                .iter()
                .map(|r| r.end.saturating_sub(r.start))
                .collect();
            let values = ArrayD::from_shape_vec(IxDyn(&chunk_dims), S::decode_chunk(bytes))
                .map_err(|e| corrupt(&format!("chunk of another size than its shape: {e}")))?;
            // The common case: one chunk is the whole region.
            if output.is_none() && range.as_slice() == wanted && overlap.as_slice() == wanted {
                output = Some(values);
                continue;
            }
            let out =
                output.get_or_insert_with(|| ArrayD::from_elem(IxDyn(&out_shape), fill.clone()));
            let from = slice_info(
                overlap
                    .iter()
                    .zip(&range)
                    .map(|(o, c)| o.start.saturating_sub(c.start)..o.end.saturating_sub(c.start)),
            )
            .ok_or_else(|| corrupt("chunk slice"))?;
            let to = slice_info(
                overlap
                    .iter()
                    .zip(wanted)
                    .map(|(o, w)| o.start.saturating_sub(w.start)..o.end.saturating_sub(w.start)),
            )
            .ok_or_else(|| corrupt("output slice"))?;
            out.slice_mut(to).assign(&values.slice(from));
        }
        Ok(output.unwrap_or_else(|| ArrayD::from_elem(IxDyn(&out_shape), fill)))
    }

    /// Block `id` decoded: from the slots, or read and decoded once (other
    /// readers of it meanwhile wait for this one).
    async fn block(&self, segment: &str, id: u32) -> Result<Bytes, SegmentError> {
        let cell = self.slots.cell(id);
        cell.get_or_try_init(|| self.load(segment, id))
            .await
            .cloned()
    }

    async fn load(&self, segment: &str, id: u32) -> Result<Bytes, SegmentError> {
        let corrupt =
            |what: String| SegmentError::corrupt(segment, None, format!("reading: {what}"));
        let loc = *self
            .table
            .blocks
            .get(id as usize)
            .ok_or_else(|| corrupt(format!("block {id} does not exist")))?;
        let end = loc
            .offset
            .checked_add(loc.compressed)
            .ok_or_else(|| corrupt(format!("block {id} range overflows")))?;
        let raw = self
            .store
            .read_block(&self.path, loc.offset..end)
            .await
            .map_err(|e| match e {
                StoreError::Io(io) => SegmentError::Io(io),
                other => corrupt(format!("block {id}: {other}")),
            })?;
        let decoded = if loc.decoded > INLINE_DECODE_MAX {
            tokio::task::spawn_blocking(move || decode(&loc, &raw))
                .await
                .map_err(|e| corrupt(format!("block {id} decode task: {e}")))?
        } else {
            decode(&loc, &raw)
        }
        .map_err(|e| corrupt(format!("block {id}: {e}")))?;
        self.decoded.fetch_add(1, Ordering::Relaxed);
        Ok(decoded)
    }
}

/// `raw`, the stored bytes of block `loc`, decoded; exactly its declared size.
fn decode(loc: &BlockLoc, raw: &Bytes) -> Result<Bytes, String> {
    if raw.len() as u64 != loc.compressed {
        return Err(format!(
            "{} bytes read for a block of {}",
            raw.len(),
            loc.compressed
        ));
    }
    let size = usize::try_from(loc.decoded).map_err(|_| "size overflows".to_owned())?;
    let out = match loc.codec {
        BlockCodec::None => raw.clone(),
        BlockCodec::Zstd => {
            Bytes::from(zstd::bulk::decompress(raw, size).map_err(|e| e.to_string())?)
        }
        BlockCodec::Lz4 => Bytes::from(Lz4Codec.decompress(raw, size).map_err(|e| e.to_string())?),
        BlockCodec::Other => return Err("unknown codec".to_owned()),
    };
    if out.len() != size {
        return Err(format!("decodes to {} bytes, declared {size}", out.len()));
    }
    Ok(out)
}

/// A slice of every axis from `ranges`.
fn slice_info(
    ranges: impl Iterator<Item = Range<usize>>,
) -> Option<SliceInfo<Vec<SliceInfoElem>, IxDyn, IxDyn>> {
    let elems: Vec<SliceInfoElem> = ranges
        .map(|r| {
            Some(SliceInfoElem::Slice {
                start: isize::try_from(r.start).ok()?,
                end: Some(isize::try_from(r.end).ok()?),
                step: 1,
            })
        })
        .collect::<Option<_>>()?;
    SliceInfo::try_from(elems).ok()
}
