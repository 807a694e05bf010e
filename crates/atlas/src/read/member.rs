//! [`Member`]: one opened container (`data.atlas` and its deletion mask), a
//! member of a set or the one container of a lone collection. Opening reads
//! the container's tail and the mask; every catalogue question afterwards is
//! answered from memory.

use std::collections::HashMap;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::{Arc, RwLockReadGuard, RwLockWriteGuard};

use atlas_format::{
    CONTAINER_FILE, Codec, CollectionFooter, DATASETS_SEGMENT, DecodeLimits, DeletionMask,
    MASK_FILE,
};
use atlas_io::open::{OpenError, open_collection_with};
use atlas_io::{MultipartUploads, ReadParallelism, object_path};
use opendal::Operator;

use atlas_segment::{
    ArrayDigest, Attr, ContainerSegments, Segment, SegmentDigest, SegmentOptions, SegmentRange,
};

use super::dataset::Dataset;
use super::directory::{Directory, MaskState};
use crate::error::{AtlasError, Result};
use crate::location::{Location, StorageOptions};
use smol_str::SmolStr;

/// How [`Atlas::open`](crate::Atlas::open) reads a collection: `OpenOptions::default()` and the setters.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OpenOptions {
    pub(crate) block_cache_bytes: u64,
    pub(crate) segment_prefetch_bytes: u64,
    pub(crate) limits: DecodeLimits,
    pub(crate) storage: StorageOptions,
    pub(crate) read_parallelism: Option<ReadParallelism>,
    pub(crate) dataset_index: bool,
    pub(crate) index_cache_bytes: usize,
}

impl Default for OpenOptions {
    /// 256 MiB of block cache, 256 KiB segment prefetch, default decode limits,
    /// default storage options (credentials and endpoints from the environment),
    /// big reads split as suits the backend ([`ReadParallelism::for_operator`]:
    /// whole on local disk, in concurrent parts on object stores).
    fn default() -> Self {
        Self {
            block_cache_bytes: atlas_segment::DEFAULT_BLOCK_CACHE_BYTES,
            segment_prefetch_bytes: atlas_segment::DEFAULT_PREFETCH,
            limits: DecodeLimits::default(),
            storage: StorageOptions::default(),
            read_parallelism: None,
            dataset_index: true,
            index_cache_bytes: crate::DEFAULT_INDEX_CACHE_BYTES,
        }
    }
}

impl OpenOptions {
    /// Sets the bytes of decompressed blocks kept in memory for arrays of
    /// variable-length elements: one bounded cache shared by every segment
    /// (0 disables it). Fixed-width arrays keep the last few decoded blocks
    /// of each segment instead (see `docs/read-path.md`).
    pub fn block_cache_bytes(mut self, bytes: u64) -> Self {
        self.block_cache_bytes = bytes;
        self
    }

    /// Sets the least bytes read from the end of a segment on its first use;
    /// a footer larger than that costs one more read of exactly the bytes missing.
    pub fn segment_prefetch_bytes(mut self, bytes: u64) -> Self {
        self.segment_prefetch_bytes = bytes;
        self
    }

    /// Sets the limits on the container footer a hostile file could otherwise inflate.
    pub fn limits(mut self, limits: DecodeLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Sets how big reads are split into ranged GETs fetched concurrently:
    /// a container footer past the open's probe, a segment footer, a
    /// read-ahead window, the front of a data region. Overrides the choice by
    /// backend (whole reads on local disk, [`ReadParallelism::default`]
    /// elsewhere), e.g. for an operator whose service is not the store it
    /// stands for.
    pub fn read_parallelism(mut self, parallelism: ReadParallelism) -> Self {
        self.read_parallelism = Some(parallelism);
        self
    }

    /// Whether collection-wide questions may read a container's dataset
    /// index (`data.atlas.index`, see `docs/index.md`) instead of its segment
    /// footers (default `true`). Off, every answer comes from the footers,
    /// as from a container without an index; the answers are the same.
    pub fn dataset_index(mut self, use_it: bool) -> Self {
        self.dataset_index = use_it;
        self
    }

    /// Sets the bytes of decoded dataset-index columns a container's handle
    /// keeps between questions (default
    /// [`DEFAULT_INDEX_CACHE_BYTES`](crate::DEFAULT_INDEX_CACHE_BYTES)),
    /// those asked for longest ago let go first. The columns one question
    /// needs are held while it runs, and each column's row group asked for
    /// last stays (a loop over the datasets asks for it again), whatever
    /// this says; the bytes fetched stay, so a column let go is decoded
    /// again without a request.
    pub fn index_cache_bytes(mut self, bytes: usize) -> Self {
        self.index_cache_bytes = bytes;
        self
    }

    /// Sets how a path or URL's backend is configured (endpoint, credentials,
    /// retries); unused for an [`Address`](crate::Address) that is already a
    /// [`Location`](crate::Location).
    pub fn storage(mut self, storage: StorageOptions) -> Self {
        self.storage = storage;
        self
    }
}

/// Keys of the views of one array (dataset ordinal added); a view of a
/// stretch of datasets has the stretch's first ordinal as its key.
const SINGLE_VIEW: u64 = 1 << 40;

/// The key of a view of no array, made from the block table alone to send
/// for the front of a segment's data region before any chunk column is in.
const FRONT_VIEW: u64 = u64::MAX;

/// Datasets one view made from chunk places covers at most: a loop over the
/// datasets makes a view per stretch of this many as it reaches it, and the
/// views kept are bounded ([`atlas_segment::PLACED_ARRAYS_KEPT`]), so what a
/// loop holds does not grow with the collection.
const VIEW_ROWS: u32 = 512;

/// What a caller wants of one dataset's array; it decides how the array's
/// segment is found ([`Member::segment_holding`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Need {
    /// Its statistics (kept by the segment footer only).
    Stats,
    /// Its type, shape, chunking, axis names and fill.
    Layout,
    /// Its values.
    Data,
}

/// Where one segment lies in the container.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct SegmentInfo {
    /// The variable (array name), or `_datasets` for dataset-level attributes.
    pub name: String,
    /// Offset of the segment's first byte in `data.atlas`.
    pub offset: u64,
    /// Length of the segment in bytes.
    pub len: u64,
}

/// One opened container of a collection: a member of a set, or the one
/// container of a lone collection (reached through [`Atlas`](crate::Atlas)).
/// It answers for itself alone: its own deletion mask hides datasets, copies
/// that newer members of a set replace do not (the set answers for those).
///
/// Cheap to clone (one `Arc`), `Send + Sync + 'static`; clones share the
/// catalogue, the opened segments and the block cache. Catalogue calls
/// (counts, names, schemas) cost no request.
#[derive(Clone)]
pub struct Member {
    inner: Arc<Inner>,
}

/// Which datasets of a member a question covers: a snapshot of the live
/// ordinals, taken once per question (the mask's complement, less what the
/// caller hides, such as the copies a newer set member replaces).
#[derive(Debug, Clone)]
pub(crate) struct Live {
    live: Vec<bool>,
    count: usize,
}

impl Live {
    /// Whether `ordinal` is covered.
    pub(crate) fn contains(&self, ordinal: u32) -> bool {
        self.live.get(ordinal as usize).copied().unwrap_or(false)
    }

    /// The covered ordinals, ascending.
    pub(crate) fn ordinals(&self) -> impl Iterator<Item = u32> + '_ {
        self.live
            .iter()
            .enumerate()
            .filter(|(_, live)| **live)
            .filter_map(|(i, _)| u32::try_from(i).ok())
    }

    /// How many ordinals are covered.
    pub(crate) fn count(&self) -> usize {
        self.count
    }

    /// Every one of `total` ordinals, deleted or not.
    pub(crate) fn all(total: usize) -> Live {
        Live {
            live: vec![true; total],
            count: total,
        }
    }

    /// Leaves `ordinals` out as well.
    pub(crate) fn hide(&mut self, ordinals: impl IntoIterator<Item = u32>) {
        for o in ordinals {
            if let Some(slot) = self.live.get_mut(o as usize)
                && std::mem::replace(slot, false)
            {
                self.count = self.count.saturating_sub(1);
            }
        }
    }
}

/// A container's footer in hand, with what was read beside it: what a
/// [`Member`] is assembled from.
struct Opened {
    container: atlas_format::OpenedContainer,
    mask: MaskState,
    /// CRC32C of the footer and trailer.
    footer_crc32c: u32,
    /// Container bytes read in front of the footer (segment bytes).
    probe: bytes::Bytes,
    index_probe: Option<crate::index::IndexProbe>,
}

/// What every clone of one [`Member`] shares.
pub(crate) struct Inner {
    pub(crate) op: Operator,
    /// The collection's prefix in `op` (empty: `op` is rooted at it).
    pub(crate) prefix: String,
    /// The multipart uploads of an S3 collection opened from its URL.
    pub(crate) uploads: Option<MultipartUploads>,
    /// Set when opened from a local directory: deletes write through an fs
    /// operator with an atomic write directory built at that time.
    pub(crate) fs_root: Option<PathBuf>,
    pub(crate) container_path: String,
    pub(crate) mask_path: String,
    pub(crate) directory: Directory,
    /// Deletes through one handle run one at a time, so they never race each other.
    pub(crate) delete_lock: tokio::sync::Mutex<()>,
    pub(crate) segments: ContainerSegments,
    /// CRC32C of the footer and trailer as opened: what ties an index to this container.
    pub(crate) footer_crc32c: u32,
    /// Whether questions may use the dataset index ([`OpenOptions::dataset_index`]).
    pub(crate) use_index: bool,
    /// Decoded index columns kept between questions ([`OpenOptions::index_cache_bytes`]).
    pub(crate) index_cache_bytes: usize,
    /// The dataset index, once looked for (`None`: none usable).
    pub(crate) index: tokio::sync::OnceCell<Option<Arc<crate::index::LoadedIndex>>>,
    /// The index's tail as read beside the open, until its first use takes it.
    pub(crate) index_probe: std::sync::Mutex<Option<crate::index::IndexProbe>>,
    /// Views from chunk places being made for a reader, by segment and view
    /// key: whoever asks for one meanwhile waits for it instead of making
    /// it again ([`Member::open_placed`]).
    pub(crate) views_in_making: std::sync::Mutex<HashMap<(usize, u64), ViewInMaking>>,
    /// Per segment, the view of a loop's next stretch made ahead of it, by
    /// view key; it joins the kept views when the loop gets there
    /// ([`Member::make_next_view_ahead`]).
    pub(crate) views_ahead: std::sync::Mutex<HashMap<usize, ViewAhead>>,
}

/// A view of a loop's next stretch being made (or made) ahead of it.
pub(crate) struct ViewAhead {
    /// Its key among the segment's views.
    key: u64,
    /// Resolves when it is made.
    making: ViewInMaking,
    /// The view once made, for counting what is held before anyone waits.
    made: Arc<std::sync::OnceLock<Arc<Segment>>>,
}

/// A view being made: the view, or `None` when it could not be made.
pub(crate) type ViewInMaking =
    futures::future::Shared<futures::future::BoxFuture<'static, Option<Arc<Segment>>>>;

impl std::fmt::Debug for Member {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Member")
            .field("container", &self.inner.container_path)
            .field("datasets", &self.dataset_count_total())
            .field("live", &self.dataset_count())
            .field("variables", &self.footer().variables.len())
            .finish_non_exhaustive()
    }
}

impl Member {
    /// Opens the container at a resolved location: one read of
    /// `data.atlas`'s tail (two when its footer exceeds 64 KiB; a stat first
    /// where the service has no suffix reads), one of `deleted.mask` and,
    /// unless indexes are turned off, one of the last 64 KiB of
    /// `data.atlas.index`, all at once. Opening a local directory creates
    /// nothing on disk.
    ///
    /// # Errors
    /// [`AtlasError::Io`] when storage fails (`NotFound` when nothing is
    /// there); [`AtlasError::NotAnAtlasCollection`],
    /// [`AtlasError::UnsupportedVersion`], [`AtlasError::CorruptCollection`]
    /// or [`AtlasError::CorruptMask`] for bytes that are not a readable v8
    /// collection.
    pub(crate) async fn open_location(location: Location, options: &OpenOptions) -> Result<Member> {
        let prefix = location.prefix();
        atlas_io::install_http_transport();
        let container_path = object_path(prefix, CONTAINER_FILE);
        let mask_path = object_path(prefix, MASK_FILE);
        let op = location.operator();
        let parallelism = options
            .read_parallelism
            .unwrap_or_else(|| ReadParallelism::for_operator(op));
        let (opened, index_probe) = futures::join!(
            open_collection_with(
                op,
                &container_path,
                &mask_path,
                options.limits,
                &parallelism
            ),
            async {
                if options.dataset_index {
                    Some(crate::index::IndexProbe::read(op, prefix).await)
                } else {
                    None
                }
            }
        );
        let opened = match opened {
            Ok(opened) => opened,
            Err(OpenError::Io(io)) => return Err(AtlasError::Io(io)),
            Err(e) => return Err(e.into()),
        };
        let container = opened.tail.container;
        let footer_and_trailer = usize::try_from(
            container
                .footer_len
                .saturating_add(atlas_format::TRAILER_LEN),
        )
        .unwrap_or(usize::MAX);
        let footer_crc32c = atlas_format::crc32c(
            opened
                .tail
                .tail
                .get(opened.tail.tail.len().saturating_sub(footer_and_trailer)..)
                .unwrap_or_default(),
        );
        let total = u32::try_from(container.footer.datasets.len())
            .map_err(|_| AtlasError::corrupt("more than u32::MAX datasets"))?;
        let mask = match opened.mask {
            None => MaskState::default(),
            Some(bytes) => {
                let (mask, warnings) = DeletionMask::decode(&bytes, total)?;
                let warnings: Vec<String> = warnings.iter().map(ToString::to_string).collect();
                for w in &warnings {
                    tracing::warn!(mask = %mask_path, "{w}");
                }
                MaskState { mask, warnings }
            }
        };
        // Keep only the probe's bytes in front of the footer: segment bytes.
        let segment_bytes_end = container.footer_offset();
        let probe_start = container
            .container_len
            .saturating_sub(opened.tail.tail.len() as u64);
        let keep = usize::try_from(segment_bytes_end.saturating_sub(probe_start)).unwrap_or(0);
        let probe = opened.tail.tail.slice(..keep.min(opened.tail.tail.len()));
        Member::assemble(
            location,
            Opened {
                container,
                mask,
                footer_crc32c,
                probe,
                index_probe,
            },
            options,
        )
    }

    /// The container a writer has just committed at `location`, from the
    /// footer it wrote (no read, and no mask: nothing of it is deleted yet);
    /// `footer_crc32c` covers the footer and trailer as written.
    ///
    /// # Errors
    /// [`AtlasError::CorruptCollection`] when a dataset names a schema the
    /// footer's pool does not hold.
    pub(crate) fn from_commit(
        location: Location,
        container: atlas_format::OpenedContainer,
        footer_crc32c: u32,
        options: &OpenOptions,
    ) -> Result<Member> {
        Member::assemble(
            location,
            Opened {
                container,
                mask: MaskState::default(),
                footer_crc32c,
                probe: bytes::Bytes::new(),
                index_probe: None,
            },
            options,
        )
    }

    /// The handle over a container whose footer is in hand.
    fn assemble(location: Location, opened: Opened, options: &OpenOptions) -> Result<Member> {
        let (op, prefix, fs_root, uploads) = location.into_parts();
        let container_path = object_path(&prefix, CONTAINER_FILE);
        let mask_path = object_path(&prefix, MASK_FILE);
        let parallelism = options
            .read_parallelism
            .unwrap_or_else(|| ReadParallelism::for_operator(&op));
        let container = opened.container;
        let segments = ContainerSegments::new(
            op.clone(),
            container_path.clone(),
            container.footer.variables.len(),
            SegmentOptions::default()
                .block_cache_bytes(options.block_cache_bytes)
                .prefetch_bytes(options.segment_prefetch_bytes)
                .read_parallelism(parallelism),
            opened.probe,
            container.footer_offset(),
        );
        tracing::debug!(
            container = %container_path,
            bytes = container.container_len,
            datasets = container.footer.datasets.len(),
            "opened collection"
        );
        Ok(Member {
            inner: Arc::new(Inner {
                op,
                prefix: prefix.trim_matches('/').to_owned(),
                uploads,
                fs_root,
                container_path,
                mask_path,
                directory: Directory::new(container, opened.mask)?,
                delete_lock: tokio::sync::Mutex::new(()),
                segments,
                footer_crc32c: opened.footer_crc32c,
                use_index: options.dataset_index,
                index_cache_bytes: options.index_cache_bytes,
                index: tokio::sync::OnceCell::new(),
                index_probe: std::sync::Mutex::new(opened.index_probe),
                views_in_making: std::sync::Mutex::default(),
                views_ahead: std::sync::Mutex::default(),
            }),
        })
    }

    pub(crate) fn inner(&self) -> &Inner {
        &self.inner
    }

    /// CRC32C of the container's footer and trailer.
    pub(crate) fn footer_crc32c(&self) -> u32 {
        self.inner.footer_crc32c
    }

    pub(crate) fn directory(&self) -> &Directory {
        &self.inner.directory
    }

    pub(crate) fn footer(&self) -> &CollectionFooter {
        self.directory().footer()
    }

    pub(crate) fn mask(&self) -> RwLockReadGuard<'_, MaskState> {
        self.directory().mask()
    }

    pub(crate) fn mask_mut(&self) -> RwLockWriteGuard<'_, MaskState> {
        self.directory().mask_mut()
    }

    /// Whether `ordinal` is not deleted (a snapshot of the mask).
    pub(crate) fn is_live(&self, ordinal: u32) -> bool {
        self.directory().is_live(ordinal)
    }

    /// The operator sidecar writes (mask, checksums) go through: on local disk
    /// an fs operator whose writes are atomic (temp file and rename), else the
    /// collection's own.
    ///
    /// # Errors
    /// [`AtlasError::Io`] when the local directory cannot be prepared.
    pub(crate) fn sidecar_operator(&self) -> Result<Operator> {
        match &self.inner.fs_root {
            Some(root) => Ok(atlas_io::fs_operator(root)?),
            None => Ok(self.inner.op.clone()),
        }
    }

    /// What tells this opened container from every other one alive: equal
    /// exactly for clones of one handle; for grouping many datasets by their
    /// member in one pass.
    pub(crate) fn key(&self) -> usize {
        Arc::as_ptr(&self.inner).addr()
    }

    /// The live datasets, as one snapshot of the mask.
    pub(crate) fn live(&self) -> Live {
        let total = self.dataset_count_total();
        let mut live = Live {
            live: vec![true; total],
            count: total,
        };
        live.hide(self.mask().mask.iter());
        live
    }

    /// The format version of the container (8).
    pub fn format_version(&self) -> u32 {
        self.footer().version
    }

    /// The codec the writer chose (informational: every block names its own).
    pub fn codec(&self) -> Codec {
        self.footer().codec
    }

    /// When the writer created the container, in milliseconds since the Unix epoch.
    pub fn created_unix_ms(&self) -> i64 {
        self.footer().created_unix_ms
    }

    /// Size of `data.atlas` in bytes.
    pub fn container_bytes(&self) -> u64 {
        self.directory().opened().container_len
    }

    /// Size of the compressed container footer in bytes.
    pub fn footer_bytes(&self) -> u64 {
        self.directory().opened().footer_len
    }

    /// Datasets not hidden by the deletion mask.
    pub fn dataset_count(&self) -> usize {
        self.dataset_count_total()
            .saturating_sub(self.mask().mask.len())
    }

    /// Datasets in the container, hidden ones included.
    pub fn dataset_count_total(&self) -> usize {
        self.footer().datasets.len()
    }

    /// Names of the hidden datasets, in ordinal order.
    pub fn deleted_datasets(&self) -> Vec<String> {
        let footer = self.footer();
        self.mask()
            .mask
            .iter()
            .filter_map(|o| footer.datasets.get_index(o as usize))
            .map(|(name, _)| name.to_string())
            .collect()
    }

    /// Distinct dataset schemas in the container.
    pub fn interned_schemas(&self) -> usize {
        self.footer().schema_pool.len()
    }

    /// Names of the live datasets, in ordinal order (no request).
    pub fn dataset_names(&self) -> Vec<&str> {
        let datasets = &self.footer().datasets;
        self.live()
            .ordinals()
            .filter_map(|o| datasets.get_index(o as usize))
            .map(|(name, _)| name.as_str())
            .collect()
    }

    /// Handles of the live datasets, in ordinal order (a snapshot of the mask at the call).
    pub fn datasets(&self) -> Vec<Dataset> {
        self.datasets_in(&self.live())
    }

    /// Handles of the datasets `live` covers, in ordinal order.
    pub(crate) fn datasets_in(&self, live: &Live) -> Vec<Dataset> {
        let mut out = Vec::new();
        self.push_datasets(live, &mut out);
        out
    }

    /// Appends handles of the datasets `live` covers, in ordinal order, to
    /// `out`, reserving their room first: a list of 30 000 grown by doubling
    /// costs several times the copying itself.
    pub(crate) fn push_datasets(&self, live: &Live, out: &mut Vec<Dataset>) {
        out.reserve(live.count());
        out.extend(live.ordinals().filter_map(|o| self.handle_at(o as usize)));
    }

    /// Appends the names of the datasets `live` covers, in ordinal order, to
    /// `out`, reserving their room first (as [`Member::push_datasets`]).
    pub(crate) fn push_names(&self, live: &Live, out: &mut Vec<SmolStr>) {
        let datasets = &self.footer().datasets;
        out.reserve(live.count());
        out.extend(
            live.ordinals()
                .filter_map(|o| datasets.get_index(o as usize))
                .map(|(name, _)| name.clone()),
        );
    }

    fn handle_at(&self, index: usize) -> Option<Dataset> {
        let (_, &schema) = self.footer().datasets.get_index(index)?;
        let ordinal = u32::try_from(index).ok()?;
        Some(Dataset::new(self.clone(), ordinal, schema))
    }

    /// Whether a live dataset has this name (no request).
    pub fn contains(&self, name: &str) -> bool {
        self.footer()
            .datasets
            .get_index_of(name)
            .and_then(|i| u32::try_from(i).ok())
            .is_some_and(|o| self.is_live(o))
    }

    /// The live dataset called `name` (no request).
    ///
    /// # Errors
    /// [`AtlasError::DatasetNotFound`] if there is none or it is deleted.
    pub fn dataset(&self, name: &str) -> Result<Dataset> {
        let not_found = || AtlasError::DatasetNotFound {
            name: name.to_owned(),
        };
        let index = self
            .footer()
            .datasets
            .get_index_of(name)
            .ok_or_else(not_found)?;
        let ordinal = u32::try_from(index).map_err(|_| not_found())?;
        if !self.is_live(ordinal) {
            return Err(not_found());
        }
        self.handle_at(index)
            .ok_or_else(|| AtlasError::corrupt(format!("dataset {name:?} has no schema")))
    }

    /// Distinct array names, in segment order, without the reserved `_datasets` (no request).
    pub fn array_names(&self) -> Vec<&str> {
        let footer = self.footer();
        footer
            .variables
            .iter()
            .filter_map(|v| footer.string(v.name))
            .filter(|name| *name != DATASETS_SEGMENT)
            .collect()
    }

    /// Every segment with its byte range, `_datasets` included, in container order.
    pub fn segments(&self) -> Vec<SegmentInfo> {
        let footer = self.footer();
        footer
            .variables
            .iter()
            .map(|v| SegmentInfo {
                name: footer.string(v.name).unwrap_or_default().to_owned(),
                offset: v.seg_offset,
                len: v.seg_len,
            })
            .collect()
    }

    /// What was wrong with the deletion mask (ordinals out of range, a truncated
    /// body): tolerated, logged, and listed here.
    pub fn mask_warnings(&self) -> Vec<String> {
        self.mask().warnings.clone()
    }

    /// Arrow memory of the decoded dataset-index columns this handle keeps
    /// between questions: at most [`OpenOptions::index_cache_bytes`] and
    /// the row group each column was last asked for, however many datasets
    /// its questions and loops went over (0 before the index is first used).
    pub fn index_bytes_kept(&self) -> usize {
        match self.inner.index.get() {
            Some(Some(index)) => index.decoded_bytes(),
            _ => 0,
        }
    }

    /// Segments opened so far: each is opened once, on first use, and kept.
    pub fn segments_opened(&self) -> usize {
        self.inner.segments.opened()
    }

    /// Blocks this handle has decoded so far for reads of fixed-width
    /// arrays: each block once while it is among the last few read from its
    /// segment, however many arrays it holds and however many reads share
    /// it at once (a sweep over every dataset decodes each block once).
    pub fn blocks_decoded(&self) -> u64 {
        self.inner.segments.blocks_decoded()
    }

    /// Arrays held in the views this handle keeps of segments, made from
    /// the dataset index's chunk places: bounded by
    /// [`PLACED_ARRAYS_KEPT`](crate::PLACED_ARRAYS_KEPT) (and the newest
    /// view), however many datasets a loop has read, plus the one view per
    /// segment made ahead of a loop.
    pub fn arrays_in_views(&self) -> usize {
        let ahead: usize = self
            .views_ahead()
            .values()
            .filter_map(|ahead| ahead.made.get())
            .map(|view| view.array_count())
            .sum();
        self.inner.segments.arrays_in_views().saturating_add(ahead)
    }

    /// The segment of variable `name`, opened on first use; `None` if the container has none.
    pub(crate) async fn segment(&self, name: &str) -> Result<Option<Arc<Segment>>> {
        let Some((index, range)) = self.directory().segment_range(name) else {
            return Ok(None);
        };
        Ok(Some(self.inner.segments.get(index, &range).await?))
    }

    /// Opens the segment of variable `name` and, when `readers` datasets
    /// will read at least half of its arrays, sends for the front of its
    /// data region at once (see `ContainerSegments::prefetch_data`), so a sweep
    /// costs one round trip instead of one per read-ahead window.
    pub(crate) async fn prepare_sweep(&self, name: &str, readers: usize) -> Result<()> {
        let Some((index, range)) = self.directory().segment_range(name) else {
            return Ok(());
        };
        let most = |arrays: usize| readers > 1 && readers.saturating_mul(2) >= arrays;
        let expected = usize::try_from(range.arrays_hint).unwrap_or(usize::MAX);
        if range.arrays_hint > 0
            && most(expected)
            && self.inner.segments.footer_needed(index, &range)
            && let live = self.live()
            && let Some(first) = live.ordinals().next()
            && self
                .prepare_placed_sweep(name, index, &range, &live, first)
                .await
        {
            return Ok(());
        }
        if range.arrays_hint > 0 && most(expected) {
            // The data front goes out with the footer's rest.
            self.inner.segments.prepare_sweep(index, &range).await?;
            return Ok(());
        }
        let segment = self.inner.segments.get(index, &range).await?;
        if most(segment.array_count()) {
            self.inner.segments.prefetch_data(index, &range).await?;
        }
        Ok(())
    }

    /// Takes `digest` as segment `name`'s without reading its footer (the
    /// writer that just wrote it returned it); a name the container has no
    /// segment for is ignored.
    pub(crate) fn prime_digest(&self, name: &str, digest: SegmentDigest) -> Result<()> {
        if let Some((index, range)) = self.directory().segment_range(name) {
            self.inner.segments.prime_digest(index, &range, digest)?;
        }
        Ok(())
    }

    /// The names, types and statistics of the arrays in variable `name`'s
    /// segment, read off its footer if the segment is not open; `None` if the
    /// container has no segment for it.
    pub(crate) async fn digest(&self, name: &str) -> Result<Option<Arc<SegmentDigest>>> {
        let Some((index, range)) = self.directory().segment_range(name) else {
            return Ok(None);
        };
        Ok(Some(self.inner.segments.digest(index, &range).await?))
    }

    /// Attribute `key` of every array of segment `name`, in segment order,
    /// beside the segment's digest (see `ContainerSegments::attribute_cells`); `None`
    /// if the container has no such segment.
    pub(crate) async fn attribute_cells(
        &self,
        name: &str,
        key: &str,
    ) -> Result<Option<(Arc<SegmentDigest>, Option<Vec<Option<Attr>>>)>> {
        let Some((index, range)) = self.directory().segment_range(name) else {
            return Ok(None);
        };
        Ok(Some(
            self.inner
                .segments
                .attribute_cells(index, &range, key)
                .await?,
        ))
    }

    /// A segment holding array `name` of `dataset` (ordinal `ordinal`), for
    /// `need`: the whole segment when it is open or its footer small; else,
    /// for data or a layout, a view made from the dataset index's chunk
    /// places when it has them ([`Member::placed_segment`]); else one found
    /// for that array alone by a lookup in the segment footer (which keeps
    /// its statistics). `None` if the container has no segment for `name`.
    pub(crate) async fn segment_holding(
        &self,
        name: &str,
        dataset: &str,
        ordinal: u32,
        need: Need,
    ) -> Result<Option<Arc<Segment>>> {
        let directory = self.directory();
        let Some((index, range)) = directory.segment_range(name) else {
            return Ok(None);
        };
        let position = || directory.position_in_segment(name, ordinal);
        let segments = &self.inner.segments;
        let reading = need == Need::Data;
        if need != Need::Stats
            && segments.footer_needed(index, &range)
            && let Some(segment) = self.placed_segment(name, ordinal, index, &range).await
        {
            return Ok(Some(segment));
        }
        Ok(Some(if reading {
            segments
                .get_array_to_read(index, &range, dataset, position)
                .await?
        } else {
            segments.get_array(index, &range, dataset, position).await?
        }))
    }

    /// A view of segment `index` (variable `name`) holding dataset
    /// `ordinal`'s array, alone or with its stretch of [`VIEW_ROWS`]
    /// datasets, made from the chunk places the dataset index records:
    /// reading through it needs no segment footer. `None` (and the caller
    /// reads the footer) when there is no usable index or it records no
    /// places for `name`; see [`Member::open_placed`].
    async fn placed_segment(
        &self,
        name: &str,
        ordinal: u32,
        index: usize,
        range: &SegmentRange,
    ) -> Option<Arc<Segment>> {
        let loaded = self.index().await?;
        let (_, stretch) = loaded.meta.stretch_of(ordinal, VIEW_ROWS)?;
        let segments = &self.inner.segments;
        let key = u64::from(stretch.start);
        if let Some(segment) = segments.placed(index, key) {
            if ordinal == stretch.start {
                self.make_next_view_ahead(&loaded, name, index, range, &stretch);
            }
            return Some(segment);
        }
        let single = SINGLE_VIEW.saturating_add(u64::from(ordinal));
        if let Some(segment) = segments.placed(index, single) {
            return Some(segment);
        }
        // A read gets a view of its one array (cheap to make). A read of
        // the dataset after one read that way is taken for a loop over the
        // datasets: the chunk columns of every row group are fetched at
        // once and the front of the data region sent for beside them, as a
        // sweep does; a loop that goes on makes each stretch's view when it
        // gets there.
        let previous = ordinal.checked_sub(1);
        let after_single = previous.is_some_and(|p| {
            segments
                .placed(index, SINGLE_VIEW.saturating_add(u64::from(p)))
                .is_some()
        });
        if after_single {
            let view = self
                .prepare_placed_sweep(name, index, range, &self.live(), ordinal)
                .await
                .then(|| segments.placed(index, key))
                .flatten()?;
            self.make_next_view_ahead(&loaded, name, index, range, &stretch);
            return Some(view);
        }
        let after_stretch = previous.is_some_and(|p| {
            loaded
                .meta
                .stretch_of(p, VIEW_ROWS)
                .is_some_and(|(_, s)| segments.placed(index, u64::from(s.start)).is_some())
        });
        // A read in a stretch whose view is on its way (ahead of the loop,
        // or for another of many concurrent readers) waits for it.
        if after_stretch || self.is_view_in_making(index, key) {
            let view = self
                .open_placed(name, index, range, stretch.clone(), key)
                .await?;
            self.make_next_view_ahead(&loaded, name, index, range, &stretch);
            return Some(view);
        }
        let ordinals = ordinal..ordinal.saturating_add(1);
        self.open_placed(name, index, range, ordinals, single).await
    }

    /// The views made ahead of loops, per segment.
    fn views_ahead(&self) -> std::sync::MutexGuard<'_, HashMap<usize, ViewAhead>> {
        self.inner
            .views_ahead
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The views being made for readers, by segment and key.
    fn views_in_making(&self) -> std::sync::MutexGuard<'_, HashMap<(usize, u64), ViewInMaking>> {
        self.inner
            .views_in_making
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether the view under `key` of segment `index` is being made, or
    /// was made ahead of a loop and waits for it.
    fn is_view_in_making(&self, index: usize, key: u64) -> bool {
        let ahead = self.views_ahead().get(&index).is_some_and(|a| a.key == key);
        ahead || self.views_in_making().contains_key(&(index, key))
    }

    /// Starts making, on a blocking thread, the view of the stretch after
    /// `stretch` (variable `name`, segment `index`) when its chunk columns
    /// are in hand: a loop over the datasets then finds it made when it
    /// gets there, the work done beside its reads instead of between them.
    /// It is held apart from the kept views (one per segment, the newest)
    /// until the loop gets there, so it never pushes out a view in use.
    /// Nothing happens outside a tokio runtime or when the view is made or
    /// being made; when the columns are not fetched yet, the loop makes the
    /// view itself.
    fn make_next_view_ahead(
        &self,
        loaded: &Arc<crate::index::LoadedIndex>,
        name: &str,
        index: usize,
        range: &SegmentRange,
        stretch: &Range<u32>,
    ) {
        use futures::FutureExt;
        let Some((_, next)) = loaded.meta.stretch_of(stretch.end, VIEW_ROWS) else {
            return;
        };
        let key = u64::from(next.start);
        if self.inner.segments.placed(index, key).is_some() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let mut ahead = self.views_ahead();
        if ahead.get(&index).is_some_and(|a| a.key == key) {
            return;
        }
        let (member, loaded, name, range) = (
            self.clone(),
            Arc::clone(loaded),
            name.to_owned(),
            range.clone(),
        );
        let made = Arc::new(std::sync::OnceLock::new());
        let slot = Arc::clone(&made);
        let task = runtime.spawn_blocking(move || {
            let view = member.make_placed(&loaded, &name, index, &range, next)?;
            Some(Arc::clone(slot.get_or_init(|| view)))
        });
        let making = task.map(Result::ok).map(Option::flatten).boxed().shared();
        ahead.insert(index, ViewAhead { key, making, made });
    }

    /// Opens, from the dataset index's chunk places, a view of segment
    /// `index` (variable `name`) holding the arrays of the datasets
    /// `ordinals` (one row group's) that declare it, kept under `key`, and
    /// returns it. A view made ahead of a loop, or being made for another
    /// reader, is waited for, not made twice. `None` when there is no
    /// usable index, it records no places for `name`, or they do not
    /// validate (a failure is logged, not returned: the caller reads the
    /// footer instead).
    async fn open_placed(
        &self,
        name: &str,
        index: usize,
        range: &SegmentRange,
        ordinals: Range<u32>,
        key: u64,
    ) -> Option<Arc<Segment>> {
        use futures::FutureExt;
        let segments = &self.inner.segments;
        if let Some(view) = segments.placed(index, key) {
            return Some(view);
        }
        let ahead = {
            let views_ahead = self.views_ahead();
            views_ahead
                .get(&index)
                .filter(|a| a.key == key)
                .map(|a| a.making.clone())
        };
        let made_ahead = match ahead {
            Some(view) => view.await,
            None => None,
        };
        let view = match made_ahead {
            Some(view) => view,
            None => {
                let making = {
                    let mut in_making = self.views_in_making();
                    in_making
                        .entry((index, key))
                        .or_insert_with(|| {
                            let (member, name, range) =
                                (self.clone(), name.to_owned(), range.clone());
                            async move {
                                let view = member
                                    .fetch_and_make_placed(&name, index, &range, ordinals)
                                    .await;
                                member.views_in_making().remove(&(index, key));
                                view
                            }
                            .boxed()
                            .shared()
                        })
                        .clone()
                };
                making.await?
            }
        };
        let view = segments.keep_placed(index, key, view);
        let mut views_ahead = self.views_ahead();
        if views_ahead.get(&index).is_some_and(|a| a.key == key) {
            views_ahead.remove(&index);
        }
        Some(view)
    }

    /// Fetches the chunk columns of the row group of `ordinals` if need be,
    /// then [`Member::make_placed`].
    async fn fetch_and_make_placed(
        &self,
        name: &str,
        index: usize,
        range: &SegmentRange,
        ordinals: Range<u32>,
    ) -> Option<Arc<Segment>> {
        let loaded = self.index().await?;
        let variable = loaded.meta.variable(name)?;
        variable.places.as_ref()?;
        let group = loaded.meta.group_of(ordinals.start)?;
        if let Err(e) = loaded.fetch_places(self, variable, &[group]).await {
            tracing::warn!(container = %self.inner.prefix, variable = name, "dataset index chunk places not used, reading the footer: {e}");
            return None;
        }
        self.make_placed(&loaded, name, index, range, ordinals)
    }

    /// Dataset `ordinal`'s array `name` as the dataset index's chunk places
    /// record it (shape, chunking, axis names, fill), read from the index's
    /// columns without making a view. `None` when the segment's footer is
    /// in hand already or the index cannot say.
    pub(crate) async fn placed_digest(&self, name: &str, ordinal: u32) -> Option<ArrayDigest> {
        let (index, range) = self.directory().segment_range(name)?;
        if !self.inner.segments.footer_needed(index, &range) {
            return None;
        }
        let loaded = self.index().await?;
        let variable = loaded.meta.variable(name)?;
        let group = loaded.meta.group_of(ordinal)?;
        let arrays = loaded
            .placed_arrays(
                self,
                variable,
                &[group],
                Some(ordinal..ordinal.saturating_add(1)),
            )
            .await
            .ok()??;
        arrays.into_iter().next()?.into_iter().next()
    }

    /// A view of the arrays of `ordinals` from chunk columns in hand, not
    /// kept yet, without I/O: `None` when the columns are not in hand, the
    /// index records no places for `name`, or they do not validate (logged).
    fn make_placed(
        &self,
        loaded: &crate::index::LoadedIndex,
        name: &str,
        index: usize,
        range: &SegmentRange,
        ordinals: Range<u32>,
    ) -> Option<Arc<Segment>> {
        let variable = loaded.meta.variable(name)?;
        let places = variable.places.as_ref()?;
        let group = loaded.meta.group_of(ordinals.start)?;
        let arrays = match loaded.placed_kept(self, variable, group, ordinals) {
            Ok(arrays) => arrays?,
            Err(e) => {
                tracing::warn!(container = %self.inner.prefix, variable = name, "dataset index chunk places not used, reading the footer: {e}");
                return None;
            }
        };
        if arrays.is_empty() {
            return None;
        }
        let blocks = places.block_places();
        match self
            .inner
            .segments
            .make_placed(index, range, places.data_end, &blocks, arrays)
        {
            Ok(view) => Some(view),
            Err(e) => {
                tracing::warn!(container = %self.inner.prefix, variable = name, "dataset index chunk places do not validate, reading the footer: {e}");
                None
            }
        }
    }

    /// [`Member::prepare_sweep`] through the dataset index, from dataset
    /// `from` on: the front of the data region sent for (through a view of
    /// no array: the block table is all it needs), the chunk columns of
    /// every row group holding a dataset of `live` fetched in one batch
    /// beside it, and the view of `from`'s stretch made. `false` when the
    /// index cannot serve (the caller opens the footer instead).
    async fn prepare_placed_sweep(
        &self,
        name: &str,
        index: usize,
        range: &SegmentRange,
        live: &Live,
        from: u32,
    ) -> bool {
        let Some(loaded) = self.index().await else {
            return false;
        };
        let Some(variable) = loaded.meta.variable(name) else {
            return false;
        };
        let Some(places) = variable.places.as_ref() else {
            return false;
        };
        let Some((_, stretch)) = loaded.meta.stretch_of(from, VIEW_ROWS) else {
            return false;
        };
        let segments = &self.inner.segments;
        let blocks = places.block_places();
        let sent = match segments.open_placed(
            index,
            range,
            FRONT_VIEW,
            places.data_end,
            &blocks,
            Vec::new(),
        ) {
            Ok(_) => segments
                .prefetch_placed(index, FRONT_VIEW, range)
                .await
                .map(drop),
            Err(e) => Err(e),
        };
        if let Err(e) = sent {
            tracing::debug!(variable = name, %e, "the data front failed");
        }
        if let Err(e) = loaded
            .fetch_places(self, variable, &loaded.groups_of(live))
            .await
        {
            // Each stretch asks for its own group's columns again.
            tracing::debug!(variable = name, %e, "the chunk columns of the sweep failed");
        }
        let key = u64::from(stretch.start);
        self.open_placed(name, index, range, stretch, key)
            .await
            .is_some()
    }

    /// Whether the container has a segment for `name`.
    pub(crate) fn has_variable(&self, name: &str) -> bool {
        self.directory().has_variable(name)
    }
}
