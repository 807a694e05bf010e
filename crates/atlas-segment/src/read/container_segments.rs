//! [`ContainerSegments`]: the segments of one container, each opened at most
//! once on first use, with what is kept between calls (open segments, footers
//! read for a digest, arrays found by lookup). One opened segment is
//! [`crate::read::segment`].
//!
//! A segment is a complete array-format file inside the container. Opening one
//! costs one ranged read of its tail (the trailer, the footer, and for a small
//! segment its data too), sized to cover the footer in one go. The trailer is
//! checked against the segment length and the footer archive validated (see
//! [`crate::footer::validate`]); the segment then reads that archive in place
//! and array-format does not open it. The tail stays registered in the
//! crate's `SegmentStore`, so when a read does need array-format's own path,
//! its open is answered from the bytes already in hand.
//!
//! Every array-format call runs with its panics caught
//! (`compat::panics`), and I/O failures that array-format flattens
//! into strings are recovered (`compat::error_kinds`), so an error
//! still says not-found versus transient.

use std::collections::{HashMap, VecDeque};
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use array_format::BlockCache;
use atlas_io::ReadParallelism;
use bytes::Bytes;
use object_store::ObjectStore;
use object_store::path::Path;
use opendal::Operator;
use smallvec::SmallVec;
use tokio::sync::OnceCell;

use crate::compat::error_kinds::KindTrackingStore;
use crate::error::SegmentError;
use crate::footer::attributes;
use crate::footer::digest::{
    ArrayDigest, BlockPlace, SegmentDigest, SharedDims, block_metas, block_places, digest_of,
};
use crate::footer::lookup::{self, Miss};
use crate::footer::tail::{
    ARRF_TRAILER_LEN, DEFAULT_PREFETCH, Tail, TailDecoder, TailError, TailStep,
};
use crate::footer::validate;
use crate::read::blocks::{BlockSlots, BlockSource, ChunkTable};
use crate::read::segment::{FileOpener, Placed, Segment};
use crate::read::segment_store::{SegmentStore, StoreError, segment_path};
use crate::types::attr::Attr;
use crate::types::value::{dtype_to_stored, fill_to_stored};

/// Bytes of footer array-format spends per array in a segment (about 330 measured), rounded up.
const FOOTER_BYTES_PER_ARRAY: u64 = 512;
/// First read of a segment opened for one array: enough for the footer's root
/// and, for a small footer, all of it.
const LOOKUP_TAIL: u64 = 64 * 1024;
/// A footer up to this size is read whole even for one array: two reads of
/// it cost the same round trips as a lookup, in fewer requests.
const LOOKUP_MIN_FOOTER: u64 = 1024 * 1024;
/// Arrays found by lookup kept per set; past that a segment is opened whole.
const LOOKUP_LIMIT: usize = 256;
/// Arrays of one segment found by lookup before it is opened whole: a
/// handful of reads gain from a lookup each, a loop over the datasets gains
/// from one read of the whole footer.
const LOOKUPS_PER_SEGMENT: usize = 8;
/// Block cache of [`SegmentOptions::default`]: 256 MiB.
pub const DEFAULT_BLOCK_CACHE_BYTES: u64 = array_format::DEFAULT_CACHE_CAPACITY as u64;

/// How a [`ContainerSegments`] reads its segments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SegmentOptions {
    /// Bytes of decompressed blocks kept in memory for the arrays
    /// array-format reads (variable-length ones), one cache shared by every
    /// segment of the set (0 disables it); fixed-width arrays keep the last
    /// [`BLOCKS_KEPT_PER_SEGMENT`](crate::BLOCKS_KEPT_PER_SEGMENT) decoded
    /// blocks of each segment instead.
    pub block_cache_bytes: u64,
    /// Bytes read from the end of a segment when it is first opened; a footer
    /// larger than that costs one more read of exactly the bytes missing.
    pub prefetch_bytes: u64,
    /// How big reads (a footer past the prefetch, a read-ahead window, the
    /// front of a data region) are split; `None`:
    /// [`ReadParallelism::for_operator`] of the set's operator.
    pub read_parallelism: Option<ReadParallelism>,
}

impl Default for SegmentOptions {
    /// 256 MiB of block cache, 256 KiB prefetch, big reads split as suits the backend.
    fn default() -> Self {
        Self {
            block_cache_bytes: DEFAULT_BLOCK_CACHE_BYTES,
            prefetch_bytes: DEFAULT_PREFETCH,
            read_parallelism: None,
        }
    }
}

impl SegmentOptions {
    /// Sets the block cache size in bytes.
    pub fn block_cache_bytes(mut self, bytes: u64) -> Self {
        self.block_cache_bytes = bytes;
        self
    }

    /// Sets the bytes first read from a segment's end when it is opened.
    pub fn prefetch_bytes(mut self, bytes: u64) -> Self {
        self.prefetch_bytes = bytes;
        self
    }

    /// Sets how big reads are split.
    pub fn read_parallelism(mut self, parallelism: ReadParallelism) -> Self {
        self.read_parallelism = Some(parallelism);
        self
    }
}

/// Where a segment lies in the container, and what to call it in errors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentRange {
    /// The variable name.
    pub name: String,
    /// Offset of the segment's first byte in the container.
    pub offset: u64,
    /// Length of the segment in bytes.
    pub len: u64,
    /// How many arrays it is expected to hold (0: unknown): decides whether
    /// [`ContainerSegments::get_array`] looks one array up rather than reading the
    /// whole footer.
    pub arrays_hint: u64,
}

/// Every segment of one container object, each opened at most once, on first use.
pub struct ContainerSegments {
    op: Operator,
    container: String,
    store: Arc<SegmentStore>,
    tracked: Arc<dyn ObjectStore>,
    cache: Option<Arc<BlockCache>>,
    prefetch: u64,
    /// How big reads are split (the store's reads too).
    parallelism: ReadParallelism,
    /// Container bytes already in hand (e.g. from the open); reads inside are served from here.
    probe: Bytes,
    probe_start: u64,
    cells: Vec<OnceCell<Arc<Segment>>>,
    /// Per segment, its arrays' names, types and statistics, once asked for.
    digests: Vec<OnceCell<Arc<SegmentDigest>>>,
    /// Footers read and validated for a digest and not yet opened: segment
    /// index to the segment's tail (footer and trailer) and what validation
    /// found, for the open to use as they are.
    pending: std::sync::Mutex<HashMap<usize, (Bytes, validate::ValidatedFooter)>>,
    /// Segments of one array each, found by lookup: (segment index, array) to it.
    singles: std::sync::Mutex<HashMap<(usize, String), Arc<Segment>>>,
    /// Views of a segment made from places known without its footer
    /// ([`ContainerSegments::open_placed`]), the newest kept.
    placed: std::sync::Mutex<PlacedViews>,
    /// One lookup at a time (each registers a virtual file of its own).
    lookups: tokio::sync::Mutex<()>,
    /// Per segment, its last decoded blocks (shared with its one-array views).
    slots: Vec<Arc<BlockSlots>>,
    /// Blocks decoded so far by the reads that bypass array-format.
    decoded: Arc<AtomicU64>,
}

impl std::fmt::Debug for ContainerSegments {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContainerSegments")
            .field("container", &self.container)
            .field("segments", &self.cells.len())
            .field("opened", &self.opened())
            .finish_non_exhaustive()
    }
}

impl ContainerSegments {
    /// The `count` segments of object `container` in `op`; `probe` holds the
    /// container's bytes that end at `probe_end` (may be empty).
    pub fn new(
        op: Operator,
        container: impl Into<String>,
        count: usize,
        options: SegmentOptions,
        probe: Bytes,
        probe_end: u64,
    ) -> Self {
        let container = container.into();
        let parallelism = options
            .read_parallelism
            .unwrap_or_else(|| ReadParallelism::for_operator(&op));
        let store = Arc::new(
            SegmentStore::new(op.clone(), container.clone()).with_read_parallelism(parallelism),
        );
        let tracked: Arc<dyn ObjectStore> = Arc::new(KindTrackingStore {
            inner: store.clone(),
        });
        let cache = (options.block_cache_bytes > 0)
            .then(|| Arc::new(BlockCache::new(options.block_cache_bytes, 0)));
        let probe_start = probe_end.saturating_sub(probe.len() as u64);
        Self {
            op,
            container,
            store,
            tracked,
            cache,
            prefetch: options.prefetch_bytes,
            parallelism,
            probe,
            probe_start,
            cells: (0..count).map(|_| OnceCell::new()).collect(),
            digests: (0..count).map(|_| OnceCell::new()).collect(),
            pending: std::sync::Mutex::new(HashMap::new()),
            singles: std::sync::Mutex::new(HashMap::new()),
            placed: std::sync::Mutex::new(PlacedViews::default()),
            lookups: tokio::sync::Mutex::new(()),
            slots: (0..count).map(|_| Arc::default()).collect(),
            decoded: Arc::default(),
        }
    }

    /// Blocks decoded so far by the reads of fixed-width arrays (each block
    /// of a segment is decoded once while it stays among the last
    /// [`BLOCKS_KEPT_PER_SEGMENT`](crate::BLOCKS_KEPT_PER_SEGMENT) used,
    /// however many arrays and concurrent reads share it). For tests and
    /// statistics.
    pub fn blocks_decoded(&self) -> u64 {
        self.decoded.load(Ordering::Relaxed)
    }

    /// Arrays held in the views made from places that are kept (at most
    /// [`PLACED_ARRAYS_KEPT`] beyond the newest view). For tests and
    /// statistics.
    pub fn arrays_in_views(&self) -> usize {
        self.placed_map().arrays
    }

    /// What a segment at `path` (segment `index` or a view of it) reads its
    /// blocks through.
    fn source(&self, index: usize, path: &Path, table: ChunkTable) -> BlockSource {
        BlockSource {
            store: self.store.clone(),
            path: path.clone(),
            table,
            slots: self.slots.get(index).cloned().unwrap_or_default(),
            decoded: self.decoded.clone(),
        }
    }

    /// The segment at position `index`, lying at `range`, opened on first use
    /// (one read of its tail); later calls cost nothing.
    pub async fn get(
        &self,
        index: usize,
        range: &SegmentRange,
    ) -> Result<Arc<Segment>, SegmentError> {
        let cell = segment_entry(&self.cells, range, index)?;
        cell.get_or_try_init(|| self.open(index, range))
            .await
            .cloned()
    }

    /// The names, types and statistics of segment `index`'s arrays: from the
    /// segment if it is open, else from its footer alone (read as an open
    /// reads it, validated once, not decoded by array-format), whose bytes are
    /// then kept for the segment's open. Later calls cost nothing.
    pub async fn digest(
        &self,
        index: usize,
        range: &SegmentRange,
    ) -> Result<Arc<SegmentDigest>, SegmentError> {
        let cell = segment_entry(&self.digests, range, index)?;
        cell.get_or_try_init(|| async {
            if let Some(segment) = self.cells.get(index).and_then(OnceCell::get) {
                return Ok(Arc::new(SegmentDigest::of_segment(segment)));
            }
            let tail = self.read_footer(range).await?;
            let mut dims = SharedDims::default();
            let (validated, arrays) =
                validate::validate_footer_collecting(&tail, range.len, |array, first_block| {
                    digest_of(array, first_block, &mut dims)
                })
                .map_err(|problem| SegmentError::Footer {
                    segment: range.name.clone(),
                    problem,
                })?;
            let blocks = block_places(validated.archive.footer().blocks.as_slice());
            let data_end = range
                .len
                .saturating_sub(validated.archive.len())
                .saturating_sub(ARRF_TRAILER_LEN);
            let digest = SegmentDigest::new(
                &range.name,
                arrays,
                validated.checked.problems.clone(),
                blocks,
                data_end,
            );
            if self.cells.get(index).and_then(OnceCell::get).is_none() {
                self.pending().insert(index, (tail, validated));
            }
            Ok(Arc::new(digest))
        })
        .await
        .cloned()
    }

    /// Takes `digest` as segment `index`'s, known without reading (its
    /// writer returned it), so that [`ContainerSegments::digest`] costs no
    /// request. A digest already in hand is kept.
    pub fn prime_digest(
        &self,
        index: usize,
        range: &SegmentRange,
        digest: SegmentDigest,
    ) -> Result<(), SegmentError> {
        let _ = segment_entry(&self.digests, range, index)?.set(Arc::new(digest));
        Ok(())
    }

    /// Attribute `key` of every array of segment `index`, in segment order
    /// (`None` for an array without it; `None` for the whole when no array
    /// stores it), beside the segment's digest, whose arrays are in the same
    /// order.
    ///
    /// From the segment if it is open; else read off its footer as
    /// [`ContainerSegments::digest`] does (the footer once, none if it is in hand),
    /// without array-format's open, decoding only the values asked for.
    pub async fn attribute_cells(
        &self,
        index: usize,
        range: &SegmentRange,
        key: &str,
    ) -> Result<(Arc<SegmentDigest>, Option<Vec<Option<Attr>>>), SegmentError> {
        let digest = self.digest(index, range).await?;
        let in_hand = self
            .pending()
            .get(&index)
            .map(|(_, validated)| attributes::attribute_cells(&validated.archive, key));
        let cells = match in_hand {
            Some(cells) => cells.map_err(|problem| SegmentError::Footer {
                segment: range.name.clone(),
                problem,
            })?,
            // Open, or being opened (which takes the footer in hand).
            None => self.get(index, range).await?.attribute_cells(key)?,
        };
        Ok((digest, cells))
    }

    fn pending(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<usize, (Bytes, validate::ValidatedFooter)>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A segment that holds array `array` of segment `index` at `range`,
    /// its `position`-th array: the whole segment if it is open (or small),
    /// else one holding just that array (without its attributes), found by
    /// reading a few small ranges of the footer instead of all of it.
    ///
    /// `position` is asked for only when a lookup happens. When the footer
    /// is not laid out as expected (another array at that position, parts
    /// outside the window read, anything that does not validate) the whole
    /// footer is read and the segment opened as by [`ContainerSegments::get`].
    pub async fn get_array(
        &self,
        index: usize,
        range: &SegmentRange,
        array: &str,
        position: impl FnOnce() -> u64,
    ) -> Result<Arc<Segment>, SegmentError> {
        self.get_array_for(index, range, array, position, false)
            .await
    }

    /// [`ContainerSegments::get_array`] for a caller about to read the array's
    /// data: when that opens the whole segment for the array at position 0,
    /// the walk from the start of the data region that such a read begins
    /// is sent at once.
    pub async fn get_array_to_read(
        &self,
        index: usize,
        range: &SegmentRange,
        array: &str,
        position: impl FnOnce() -> u64,
    ) -> Result<Arc<Segment>, SegmentError> {
        self.get_array_for(index, range, array, position, true)
            .await
    }

    async fn get_array_for(
        &self,
        index: usize,
        range: &SegmentRange,
        array: &str,
        position: impl FnOnce() -> u64,
        reading: bool,
    ) -> Result<Arc<Segment>, SegmentError> {
        let cell = segment_entry(&self.cells, range, index)?;
        if let Some(segment) = cell.get() {
            return Ok(segment.clone());
        }
        let key = (index, array.to_owned());
        if let Some(segment) = self.singles().get(&key) {
            return Ok(segment.clone());
        }
        // The rest (a lookup or an open) is boxed so this future stays small
        // for the common case above.
        Box::pin(self.get_array_cold(cell, key, range, array, position, reading)).await
    }

    /// [`ContainerSegments::get_array`] when neither the segment (whose `cell` it
    /// is) nor the array (`key`: segment index and array) is in hand.
    async fn get_array_cold(
        &self,
        cell: &OnceCell<Arc<Segment>>,
        key: (usize, String),
        range: &SegmentRange,
        array: &str,
        position: impl FnOnce() -> u64,
        reading: bool,
    ) -> Result<Arc<Segment>, SegmentError> {
        let index = key.0;
        let expected_footer = range.arrays_hint.saturating_mul(FOOTER_BYTES_PER_ARRAY);
        let small = LOOKUP_MIN_FOOTER.max(self.prefetch);
        let footer_in_hand = self.pending().contains_key(&index);
        let lookups_here = self.singles().keys().filter(|(i, _)| *i == index).count();
        if expected_footer <= small
            || footer_in_hand
            || lookups_here >= LOOKUPS_PER_SEGMENT
            || self.singles().len() >= LOOKUP_LIMIT
        {
            if reading && position() == 0 {
                return cell
                    .get_or_try_init(|| self.open_for(index, range, true))
                    .await
                    .cloned();
            }
            return self.get(index, range).await;
        }
        let _one_at_a_time = self.lookups.lock().await;
        if let Some(segment) = self.singles().get(&key) {
            return Ok(segment.clone());
        }
        let first = LOOKUP_TAIL.max(ARRF_TRAILER_LEN + lookup::ROOT_BYTES);
        let mut decoder = TailDecoder::new(range.len, first);
        self.step_tail(range, &mut decoder).await?;
        let position = position();
        if let Some((tail, footer_total)) = decoder.in_hand()
            && footer_total > small
        {
            match self
                .lookup(index, range, tail, footer_total, array, position)
                .await?
            {
                Ok(segment) => {
                    self.singles().insert(key, segment.clone());
                    return Ok(segment);
                }
                Err(miss) => {
                    tracing::debug!(segment = %range.name, array, %miss, "lookup missed; reading the whole footer");
                }
            }
        }
        cell.get_or_try_init(|| async move {
            let tail = self.finish_tail(range, decoder).await?;
            self.open_footer(index, range, tail)
        })
        .await
        .cloned()
    }

    /// Whether reading one array of segment `index` would first read some
    /// of its footer: the segment is not open, its footer is not in hand,
    /// and it is too large to be read whole for one array.
    pub fn footer_needed(&self, index: usize, range: &SegmentRange) -> bool {
        let open = self.cells.get(index).is_some_and(OnceCell::initialized);
        let expected_footer = range.arrays_hint.saturating_mul(FOOTER_BYTES_PER_ARRAY);
        !open
            && !self.pending().contains_key(&index)
            && expected_footer > LOOKUP_MIN_FOOTER.max(self.prefetch)
    }

    /// The view [`ContainerSegments::open_placed`] made for `key` of segment
    /// `index`, if it made one.
    pub fn placed(&self, index: usize, key: u64) -> Option<Arc<Segment>> {
        self.placed_map().views.get(&(index, key)).cloned()
    }

    /// A view of segment `index` holding `arrays`, made from where their
    /// chunks and the segment's `blocks` lie (known without its footer, e.g.
    /// from a dataset index; the data region ends at `data_end`), and kept
    /// under `key`: [`ContainerSegments::make_placed`], then
    /// [`ContainerSegments::keep_placed`].
    pub fn open_placed(
        &self,
        index: usize,
        range: &SegmentRange,
        key: u64,
        data_end: u64,
        blocks: &[BlockPlace],
        arrays: Vec<ArrayDigest>,
    ) -> Result<Arc<Segment>, SegmentError> {
        if let Some(segment) = self.placed(index, key) {
            return Ok(segment);
        }
        let segment = self.make_placed(index, range, data_end, blocks, arrays)?;
        Ok(self.keep_placed(index, key, segment))
    }

    /// A view of segment `index` holding `arrays`, made from where their
    /// chunks and the segment's `blocks` lie, not kept yet: reads through
    /// it cost the blocks they need and no footer read. The places are not
    /// trusted: they get every check a footer gets (and where array-format
    /// must read the arrays, they are archived as a footer of their own),
    /// so a wrong place is an error, never a read outside the segment's
    /// data. Made without holding the kept views, so reads through them go
    /// on meanwhile (from another thread, say, ahead of a loop).
    pub fn make_placed(
        &self,
        index: usize,
        range: &SegmentRange,
        data_end: u64,
        blocks: &[BlockPlace],
        arrays: Vec<ArrayDigest>,
    ) -> Result<Arc<Segment>, SegmentError> {
        segment_entry(&self.cells, range, index)?;
        let name = range.name.as_str();
        if data_end > range.len.saturating_sub(ARRF_TRAILER_LEN) {
            return Err(SegmentError::corrupt(
                name,
                None,
                format!(
                    "a data region said to end at byte {data_end} of a {}-byte segment",
                    range.len
                ),
            ));
        }
        let held = arrays.len();
        // A path of its own for every view made: an evicted view still in
        // use keeps its file until its last reader is done.
        let path = {
            let mut placed = self.placed_map();
            let path = placed_path(index, placed.made);
            placed.made = placed.made.wrapping_add(1);
            path
        };
        let segment = if reads_only_blocks(blocks, &arrays) {
            self.view_of_places(index, range, path, data_end, blocks, arrays)?
        } else {
            self.view_with_footer(index, range, path, data_end, blocks, arrays)?
        };
        tracing::debug!(segment = name, arrays = held, "made a view from places");
        Ok(Arc::new(segment))
    }

    /// Keeps `view` (of segment `index`, from
    /// [`ContainerSegments::make_placed`]) under `key`, the oldest views
    /// let go beyond [`PLACED_ARRAYS_KEPT`] arrays; returns the view kept
    /// there, an earlier one if another was kept first.
    pub fn keep_placed(&self, index: usize, key: u64, view: Arc<Segment>) -> Arc<Segment> {
        let mut placed = self.placed_map();
        if let Some(kept) = placed.views.get(&(index, key)) {
            return Arc::clone(kept);
        }
        let held = view.array_count();
        placed.keep((index, key), Arc::clone(&view), held);
        view
    }

    /// A view of `arrays` (all fixed-width, in blocks of codecs read here)
    /// that reads blocks straight from their places: no footer is made,
    /// the places get a footer's checks.
    fn view_of_places(
        &self,
        index: usize,
        range: &SegmentRange,
        path: Path,
        data_end: u64,
        blocks: &[BlockPlace],
        arrays: Vec<ArrayDigest>,
    ) -> Result<Segment, SegmentError> {
        let name = range.name.as_str();
        let refuse = |what: String| SegmentError::corrupt(name, None, what);
        let mut shapes = Vec::with_capacity(arrays.len());
        for a in &arrays {
            let shape = a
                .shape
                .iter()
                .map(|&n| u32::try_from(n))
                .collect::<Result<SmallVec<[u32; 4]>, _>>()
                .map_err(|_| refuse(format!("{:?} has an axis longer than 2^32", a.name)))?;
            if a.fill.as_ref().is_some_and(|f| fill_to_stored(f).is_none()) {
                return Err(refuse(format!("{:?} has a fill no segment holds", a.name)));
            }
            shapes.push(shape);
        }
        let checked = validate::validate_places(blocks, &arrays, &shapes, data_end)
            .map_err(|problem| footer_error(name, problem))?;
        self.store
            .register_data_view(&path, &segment_path(index as u64), range.offset, data_end)
            .map_err(|e| store_error(name, e))?;
        self.store
            .expect_lz4_prefixes(&path, checked.lz4_blocks.iter().copied());
        let placed = Placed {
            arrays,
            shapes,
            blocks: blocks.to_vec(),
            data_end,
        };
        Ok(Segment::placed(name, placed, checked, range.len, |table| {
            self.source(index, &path, table)
        })
        .registered(Arc::clone(&self.store), path))
    }

    /// A view of `arrays` through a footer made from their places (for
    /// arrays array-format must read): archived and validated as any footer.
    fn view_with_footer(
        &self,
        index: usize,
        range: &SegmentRange,
        path: Path,
        data_end: u64,
        blocks: &[BlockPlace],
        arrays: Vec<ArrayDigest>,
    ) -> Result<Segment, SegmentError> {
        let name = range.name.as_str();
        let footer = placed_footer(name, blocks, arrays)?;
        let virtual_len = data_end.saturating_add(footer.len() as u64);
        let validated = validate::validate_footer(&footer, virtual_len)
            .map_err(|problem| footer_error(name, problem))?;
        self.store
            .register_view(
                &path,
                &segment_path(index as u64),
                range.offset,
                virtual_len,
                footer,
            )
            .map_err(|e| store_error(name, e))?;
        self.store
            .expect_lz4_prefixes(&path, validated.checked.lz4_blocks.iter().copied());
        Ok(Segment::new(
            name,
            validated,
            range.len,
            |table| self.source(index, &path, table),
            self.opener(&path),
        )
        .registered(Arc::clone(&self.store), path))
    }

    /// Sends for the front of segment `index`'s data region (up to the read
    /// policy's [`max_read_ahead`](ReadParallelism::max_read_ahead)) through the view
    /// made for `key` by [`ContainerSegments::open_placed`], without waiting:
    /// for a caller about to read most of the segment's arrays through its
    /// views, which share the segment's read-ahead. Returns the bytes sent
    /// for (0 without such a view).
    pub async fn prefetch_placed(
        &self,
        index: usize,
        key: u64,
        range: &SegmentRange,
    ) -> Result<u64, SegmentError> {
        let Some(view) = self.placed(index, key) else {
            return Ok(0);
        };
        let Some(path) = view.view_path() else {
            return Ok(0);
        };
        self.store
            .prefetch_data(path)
            .await
            .map_err(|e| store_error(&range.name, e))
    }

    fn placed_map(&self) -> std::sync::MutexGuard<'_, PlacedViews> {
        self.placed.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn singles(&self) -> std::sync::MutexGuard<'_, HashMap<(usize, String), Arc<Segment>>> {
        self.singles.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Finds the entry of `array` at `position` from the footer's root (in
    /// `tail`), reading the lookup plan's ranges at once, and opens a
    /// segment of that one array. `Ok(Err(miss))` when the lookup gave up.
    async fn lookup(
        &self,
        index: usize,
        range: &SegmentRange,
        tail: &Bytes,
        footer_total: u64,
        array: &str,
        position: u64,
    ) -> Result<Result<Arc<Segment>, Miss>, SegmentError> {
        let name = range.name.as_str();
        let len = range.len;
        let archive_len = footer_total.saturating_sub(ARRF_TRAILER_LEN);
        let footer_start = len.saturating_sub(footer_total);
        let tail_start = len.saturating_sub(tail.len() as u64);
        // Archive byte x is segment byte footer_start + x.
        let in_tail = |from: u64, to: u64| -> Option<Bytes> {
            let a =
                usize::try_from(footer_start.checked_add(from)?.checked_sub(tail_start)?).ok()?;
            let b = usize::try_from(footer_start.checked_add(to)?.checked_sub(tail_start)?).ok()?;
            (a <= b && b <= tail.len()).then(|| tail.slice(a..b))
        };
        let Some(root) = in_tail(archive_len.saturating_sub(lookup::ROOT_BYTES), archive_len)
        else {
            return Ok(Err(Miss::Root("root bytes missing")));
        };
        let plan = match lookup::parse_root(&root, archive_len)
            .and_then(|root| lookup::plan(&root, position))
        {
            Ok(plan) => plan,
            Err(miss) => return Ok(Err(miss)),
        };
        let ranges = plan.ranges();
        let reads = ranges.iter().map(|r| async {
            match in_tail(r.start, r.end) {
                Some(bytes) => Ok(bytes),
                None => {
                    self.read(
                        range,
                        footer_start.saturating_add(r.start)..footer_start.saturating_add(r.end),
                    )
                    .await
                }
            }
        });
        let fetched = futures::future::try_join_all(reads).await?;
        let pieces: Vec<(Range<u64>, &[u8])> = ranges
            .iter()
            .cloned()
            .zip(fetched.iter().map(|b| b.as_ref()))
            .collect();
        let mini = match lookup::assemble(&plan, &pieces, array) {
            Ok(mini) => Bytes::from(mini),
            Err(miss) => return Ok(Err(miss)),
        };
        // The one-array footer replaces the real one after the same data region.
        let virtual_len = footer_start.saturating_add(mini.len() as u64);
        let validated = validate::validate_footer(&mini, virtual_len).map_err(|problem| {
            SegmentError::Footer {
                segment: name.to_owned(),
                problem,
            }
        })?;
        let path = Path::from(format!("seg/{index}/{position}"));
        self.register(name, &path, range.offset, virtual_len, mini, &validated)?;
        tracing::debug!(
            segment = name,
            array,
            position,
            "opened one array by lookup"
        );
        Ok(Ok(Arc::new(Segment::new(
            name,
            validated,
            len,
            |table| self.source(index, &path, table),
            self.opener(&path),
        ))))
    }

    /// Sends for the front of segment `index`'s data region (up to the read
    /// policy's [`max_read_ahead`](ReadParallelism::max_read_ahead)) as concurrent
    /// pieces, without waiting for them, for a caller about to read most of
    /// its arrays; the segment must be open ([`ContainerSegments::get`]), else
    /// nothing is read. Returns the bytes sent for.
    pub async fn prefetch_data(
        &self,
        index: usize,
        range: &SegmentRange,
    ) -> Result<u64, SegmentError> {
        self.store
            .prefetch_data(&segment_path(index as u64))
            .await
            .map_err(|e| store_error(&range.name, e))
    }

    /// Opens segment `index` for a caller about to read most of its arrays
    /// and gets the front of its data region (up to the read policy's
    /// [`max_read_ahead`](ReadParallelism::max_read_ahead)) under way. When the
    /// footer must still be read, the data front is read together with the
    /// footer's rest as soon as the first tail read tells where the data
    /// ends: one round trip less than opening, then prefetching. Returns
    /// the data bytes read or sent for; a failed data read is left to the
    /// reads that follow (they fetch what they need).
    pub async fn prepare_sweep(
        &self,
        index: usize,
        range: &SegmentRange,
    ) -> Result<u64, SegmentError> {
        let cell = segment_entry(&self.cells, range, index)?;
        let footer_in_hand = self.pending().contains_key(&index);
        if cell.initialized() || footer_in_hand {
            self.get(index, range).await?;
            return self.prefetch_data(index, range).await;
        }
        let front = std::sync::Mutex::new(None);
        let segment = cell
            .get_or_try_init(|| async {
                let mut decoder = TailDecoder::new(range.len, self.prefetch);
                let first = self.step_tail(range, &mut decoder).await?;
                // Data below the first tail read and the footer, at most a window.
                let data_end = decoder.in_hand().map_or(0, |(tail, footer)| {
                    range
                        .len
                        .saturating_sub(footer)
                        .min(range.len.saturating_sub(tail.len() as u64))
                        .min(self.parallelism.max_read_ahead.max(1))
                });
                let footer = async {
                    match first {
                        Some(tail) => Ok(tail.bytes),
                        None => self.finish_tail(range, decoder).await,
                    }
                };
                let data = async {
                    if data_end == 0 {
                        return None;
                    }
                    match self.read(range, 0..data_end).await {
                        Ok(bytes) => Some(bytes),
                        Err(e) => {
                            tracing::debug!(segment = %range.name, %e, "the data front failed");
                            None
                        }
                    }
                };
                let (tail, data) = futures::join!(footer, data);
                let segment = self.open_footer(index, range, tail?)?;
                *front.lock().unwrap_or_else(|e| e.into_inner()) = data;
                Ok::<_, SegmentError>(segment)
            })
            .await?
            .clone();
        drop(segment);
        let front = front.into_inner().unwrap_or_else(|e| e.into_inner());
        match front {
            Some(bytes) => {
                let n = bytes.len() as u64;
                self.store
                    .prefetched_front(&segment_path(index as u64), bytes);
                Ok(n)
            }
            // Opened meanwhile by another caller, or nothing read.
            None => self.prefetch_data(index, range).await,
        }
    }

    /// The segments opened so far.
    pub fn opened(&self) -> usize {
        self.cells.iter().filter(|c| c.initialized()).count()
    }

    async fn open(&self, index: usize, range: &SegmentRange) -> Result<Arc<Segment>, SegmentError> {
        self.open_for(index, range, false).await
    }

    /// Opens segment `index`; `walk`: a walk from the start of its data
    /// region is about to begin (see [`ContainerSegments::get_array_to_read`]).
    async fn open_for(
        &self,
        index: usize,
        range: &SegmentRange,
        walk: bool,
    ) -> Result<Arc<Segment>, SegmentError> {
        let pending = self.pending().remove(&index);
        let opened = match pending {
            Some((tail, validated)) => self.open_validated(index, range, tail, validated, walk),
            None => {
                let tail = self.read_footer(range).await?;
                let validated = validate::validate_footer(&tail, range.len).map_err(|problem| {
                    SegmentError::Footer {
                        segment: range.name.clone(),
                        problem,
                    }
                })?;
                self.open_validated(index, range, tail, validated, walk)
            }
        };
        // A digest that read the footer meanwhile has nothing left to give.
        self.pending().remove(&index);
        opened
    }

    /// The segment's footer and trailer: its last `prefetch` bytes, then
    /// exactly what of the footer they lack, if anything (see [`TailDecoder`]).
    async fn read_footer(&self, range: &SegmentRange) -> Result<Bytes, SegmentError> {
        self.finish_tail(range, TailDecoder::new(range.len, self.prefetch))
            .await
    }

    /// Does the reads of segment `range` that `decoder` asks for until the
    /// footer is whole; returns the segment's last bytes, footer included.
    async fn finish_tail(
        &self,
        range: &SegmentRange,
        mut decoder: TailDecoder,
    ) -> Result<Bytes, SegmentError> {
        loop {
            if let Some(tail) = self.step_tail(range, &mut decoder).await? {
                return Ok(tail.bytes);
            }
        }
    }

    /// One step of `decoder` over segment `range`: the tail if it is whole,
    /// else `None` once the read it asks for is done and pushed.
    async fn step_tail(
        &self,
        range: &SegmentRange,
        decoder: &mut TailDecoder,
    ) -> Result<Option<Tail>, SegmentError> {
        let tail_error = |e: TailError| SegmentError::corrupt(&range.name, None, e.to_string());
        match decoder.try_decode().map_err(tail_error)? {
            TailStep::Done(tail) => Ok(Some(tail)),
            TailStep::NeedsData(rel) => {
                let pieces = self.read_pieces(range, rel.clone()).await?;
                decoder.push_pieces(rel, pieces).map_err(tail_error)?;
                Ok(None)
            }
        }
    }

    /// Validates the footer at the end of `tail` and opens the segment from it.
    fn open_footer(
        &self,
        index: usize,
        range: &SegmentRange,
        tail: Bytes,
    ) -> Result<Arc<Segment>, SegmentError> {
        let validated = validate::validate_footer(&tail, range.len).map_err(|problem| {
            SegmentError::Footer {
                segment: range.name.clone(),
                problem,
            }
        })?;
        self.open_validated(index, range, tail, validated, false)
    }

    /// Opens the segment whose footer, at the end of `tail`, validation
    /// passed with the findings `validated`; `walk`: send the first window of
    /// a walk from the start of the data region at once.
    fn open_validated(
        &self,
        index: usize,
        range: &SegmentRange,
        tail: Bytes,
        validated: validate::ValidatedFooter,
        walk: bool,
    ) -> Result<Arc<Segment>, SegmentError> {
        let name = range.name.as_str();
        let len = range.len;
        let path = segment_path(index as u64);
        // The tail stays registered: the footer in it is the archive the
        // segment reads in place, and what array-format opens from if a read
        // needs it.
        self.register(name, &path, range.offset, len, tail, &validated)?;
        // Opened whole: a read of its first block is probably a walk's first.
        self.store.ramp_from_start(&path);
        if walk && let Some(first_end) = validated.checked.chunks.first_block_end() {
            self.store.start_walk(&path, first_end);
        }
        tracing::debug!(segment = name, len, "opened segment");
        Ok(Arc::new(Segment::new(
            name,
            validated,
            len,
            |table| self.source(index, &path, table),
            self.opener(&path),
        )))
    }

    /// Registers a validated segment (or one-array view of one) at `path` in
    /// the store, with its LZ4 blocks held to their declared sizes.
    fn register(
        &self,
        name: &str,
        path: &Path,
        offset: u64,
        len: u64,
        tail: Bytes,
        validated: &validate::ValidatedFooter,
    ) -> Result<(), SegmentError> {
        self.store.remove(path);
        self.store
            .register_with_tail(path, offset, len, tail)
            .map_err(|e| store_error(name, e))?;
        self.store
            .expect_lz4_prefixes(path, validated.checked.lz4_blocks.iter().copied());
        Ok(())
    }

    /// How a segment registered at `path` is opened by array-format when a
    /// read needs it.
    fn opener(&self, path: &Path) -> FileOpener {
        FileOpener {
            store: self.tracked.clone(),
            path: path.clone(),
            cache: self.cache.clone(),
        }
    }

    /// Reads `rel` of segment `range`: from the probe when it covers it, else
    /// one ranged read, split into concurrent parts when it is big enough
    /// (see [`ReadParallelism`]).
    async fn read(&self, range: &SegmentRange, rel: Range<u64>) -> Result<Bytes, SegmentError> {
        self.read_pieces(range, rel)
            .await
            .map(atlas_io::read::concat)
    }

    /// [`ContainerSegments::read`], answered with the buffers as they arrived, not
    /// joined (one piece when the open's probe holds the range).
    async fn read_pieces(
        &self,
        range: &SegmentRange,
        rel: Range<u64>,
    ) -> Result<Vec<Bytes>, SegmentError> {
        let start = range.offset.checked_add(rel.start);
        let end = range.offset.checked_add(rel.end);
        let (Some(start), Some(end)) = (start, end) else {
            return Err(SegmentError::corrupt(
                &range.name,
                None,
                "segment range overflows u64",
            ));
        };
        if let Some(offset) = start.checked_sub(self.probe_start) {
            let from = usize::try_from(offset).ok();
            let to = usize::try_from(end.saturating_sub(self.probe_start)).ok();
            if let Some(bytes) = from
                .zip(to)
                .filter(|(f, t)| f <= t && *t <= self.probe.len())
                .map(|(f, t)| self.probe.slice(f..t))
            {
                return Ok(vec![bytes]);
            }
        }
        Ok(
            atlas_io::read_split_pieces(&self.op, &self.container, start..end, &self.parallelism)
                .await?,
        )
    }
}

/// Entry `index` of a per-segment table, or the error for a segment index
/// the container does not have.
fn segment_entry<'a, T>(
    table: &'a [T],
    range: &SegmentRange,
    index: usize,
) -> Result<&'a T, SegmentError> {
    table.get(index).ok_or_else(|| {
        SegmentError::corrupt(&range.name, None, format!("no segment at position {index}"))
    })
}

fn store_error(name: &str, err: StoreError) -> SegmentError {
    match err {
        StoreError::Io(io) => SegmentError::Io(io),
        other => SegmentError::corrupt(name, None, other.to_string()),
    }
}

/// Opens `bytes` as a whole segment called `name` (for tests, tools and fuzzing):
/// the same validation, and the same panics caught, as a segment inside a container.
pub async fn open_bytes(name: &str, bytes: Bytes) -> Result<Arc<Segment>, SegmentError> {
    let op = Operator::new(opendal::services::Memory::default())
        .map_err(|e| atlas_io::IoError::from_opendal(e, "open", "memory"))?;
    let len = bytes.len() as u64;
    op.write("segment", bytes)
        .await
        .map_err(|e| atlas_io::IoError::from_opendal(e, "write", "segment"))?;
    let segments =
        ContainerSegments::new(op, "segment", 1, SegmentOptions::default(), Bytes::new(), 0);
    segments
        .get(
            0,
            &SegmentRange {
                name: name.to_owned(),
                offset: 0,
                len,
                arrays_hint: 0,
            },
        )
        .await
}

/// The error of a footer (or chunk places) of segment `segment` that
/// validation refused as a whole.
fn footer_error(segment: &str, problem: validate::FooterProblem) -> SegmentError {
    SegmentError::Footer {
        segment: segment.to_owned(),
        problem,
    }
}

/// Whether every one of `arrays` can be read from `blocks` without
/// array-format: fixed-width elements, in blocks of codecs decoded here.
fn reads_only_blocks(blocks: &[BlockPlace], arrays: &[ArrayDigest]) -> bool {
    let known = |b: &BlockPlace| matches!(b.codec.as_deref(), None | Some("zstd" | "lz4"));
    let fixed =
        |a: &ArrayDigest| dtype_to_stored(&a.dtype).is_some_and(|d| d.element_size().is_some());
    blocks.iter().all(known) && arrays.iter().all(fixed)
}

/// A footer (trailer included) holding `arrays` without attributes or
/// statistics, over the block table `blocks`. The digests are taken apart,
/// not copied: a view is made for every stretch a sweep reaches.
fn placed_footer(
    segment: &str,
    blocks: &[BlockPlace],
    arrays: Vec<ArrayDigest>,
) -> Result<Bytes, SegmentError> {
    use crate::footer::schema::{ARCHIVE_ALIGN, ArrayMeta, FOOTER_VERSION, Footer};
    use array_format::address::{BlockId, ChunkAddress};
    use array_format::layout::ChunkEntry;
    let refuse = |what: String| SegmentError::corrupt(segment, None, what);
    let mut metas = Vec::with_capacity(arrays.len());
    for a in arrays {
        let dtype = dtype_to_stored(&a.dtype)
            .ok_or_else(|| refuse(format!("{:?} has a type a segment cannot hold", a.name)))?;
        let shape = a
            .shape
            .iter()
            .map(|&n| u32::try_from(n))
            .collect::<Result<Vec<u32>, _>>()
            .map_err(|_| refuse(format!("{:?} has an axis longer than 2^32", a.name)))?;
        let fill_value = match &a.fill {
            None => None,
            Some(fill) => Some(
                fill_to_stored(fill)
                    .ok_or_else(|| refuse(format!("{:?} has a fill no segment holds", a.name)))?,
            ),
        };
        let chunks = a
            .chunks
            .into_iter()
            .map(|c| ChunkEntry {
                coord: c.coord.into_vec(),
                address: ChunkAddress {
                    block_id: BlockId(c.block),
                    offset: c.offset,
                    size: c.size,
                },
            })
            .collect();
        metas.push(ArrayMeta {
            name: a.name.to_string(),
            dtype,
            shape,
            dimension_names: a.dimension_names.to_vec(),
            chunk_shape: a.chunk_shape.to_vec(),
            chunks,
            fill_value,
            attributes: Vec::new(),
            stats: None,
        });
    }
    let footer = Footer {
        version: FOOTER_VERSION,
        blocks: block_metas(blocks)?,
        strings: Vec::new(),
        values: Vec::new(),
        arrays: metas,
    };
    // Archived into memory sized for it up front (growing it would copy
    // the archive again and again), the trailer appended in place, and
    // handed over aligned, so validation reads it where it lies.
    let mut out = rkyv::util::AlignedVec::<ARCHIVE_ALIGN>::with_capacity(placed_footer_size(
        blocks.len(),
        &footer.arrays,
    ));
    out = rkyv::api::high::to_bytes_in::<_, rkyv::rancor::Error>(&footer, out)
        .map_err(|e| refuse(format!("the places do not archive: {e}")))?;
    let archive_len = out.len() as u64;
    out.extend_from_slice(&archive_len.to_le_bytes());
    out.extend_from_slice(&crate::footer::tail::ARRF_MAGIC);
    Ok(Bytes::from_owner(out))
}

/// A generous guess at the archived size of a footer of `blocks` blocks and
/// `arrays`, trailer included: what every field takes, plus padding (at
/// most 64 MiB, so that no count can make it an absurd allocation).
fn placed_footer_size(blocks: usize, arrays: &[crate::footer::schema::ArrayMeta]) -> usize {
    const PER_BLOCK: usize = 48;
    const PER_ARRAY: usize = 160;
    const PER_CHUNK: usize = 40;
    let array = |a: &crate::footer::schema::ArrayMeta| {
        let rank = a.shape.len();
        let names = a
            .dimension_names
            .iter()
            .fold(0usize, |n, d| n.saturating_add(d.len()).saturating_add(16));
        let per_chunk = PER_CHUNK.saturating_add(rank.saturating_mul(4));
        PER_ARRAY
            .saturating_add(a.name.len())
            .saturating_add(names)
            .saturating_add(rank.saturating_mul(12))
            .saturating_add(a.chunks.len().saturating_mul(per_chunk))
    };
    arrays
        .iter()
        .fold(blocks.saturating_mul(PER_BLOCK), |n, a| {
            n.saturating_add(array(a))
        })
        .saturating_add(64 + ARRF_TRAILER_LEN as usize)
        // Only a guess: past this the buffer grows as it fills.
        .min(64 << 20)
}

/// The virtual path of the `made`-th view [`ContainerSegments::open_placed`]
/// makes, of segment `index`.
fn placed_path(index: usize, made: u64) -> Path {
    Path::from(format!("seg/{index}/placed/{made}"))
}

/// Views made from places kept at most, counted in the arrays they hold:
/// a sweep or a run of lone reads holds a few views' worth of metadata
/// (about a kilobyte an array), not a whole segment's. An evicted view is
/// made again when asked for.
pub const PLACED_ARRAYS_KEPT: usize = 2048;

/// The views [`ContainerSegments::open_placed`] made and keeps: (segment
/// index, caller's key) to the view, oldest evicted first.
#[derive(Default)]
pub(crate) struct PlacedViews {
    views: HashMap<(usize, u64), Arc<Segment>>,
    /// Keys in the order they were made, with the arrays each view holds.
    order: VecDeque<((usize, u64), usize)>,
    arrays: usize,
    /// Views made so far, naming each one's virtual file.
    made: u64,
}

impl PlacedViews {
    /// Keeps `view` under `key`, then lets the oldest views go until at
    /// most [`PLACED_ARRAYS_KEPT`] arrays are held (the newest always stays).
    fn keep(&mut self, key: (usize, u64), view: Arc<Segment>, arrays: usize) {
        self.views.insert(key, view);
        self.order.push_back((key, arrays));
        self.arrays = self.arrays.saturating_add(arrays);
        while self.arrays > PLACED_ARRAYS_KEPT && self.order.len() > 1 {
            let Some((old, n)) = self.order.pop_front() else {
                break;
            };
            self.views.remove(&old);
            self.arrays = self.arrays.saturating_sub(n);
        }
    }
}
