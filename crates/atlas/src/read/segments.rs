//! The per-variable segments: opened on first use, once, and shared by every dataset.
//!
//! A segment is a complete array-format file inside the container. Opening one
//! costs one ranged read of its tail (the trailer, the footer, and for a small
//! segment its data too), sized to cover the footer in one go. Before
//! array-format sees those bytes the trailer is checked against the segment
//! length and the footer is screened (see [`super::segment_footer`]); then
//! array-format opens the segment through atlas-io's [`SegmentStore`], which
//! answers its trailer and footer reads from the bytes already in hand.
//!
//! Every array-format call runs under [`crate::guard`], and I/O failures that
//! array-format flattens into strings are caught on the way through
//! [`KindTrackingStore`], so an error still says not-found versus transient.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use array_format::{ArrayFile, ArrayInfo, BlockCache, ReadConfig};
use async_trait::async_trait;
use atlas_format::VariableEntry;
use atlas_io::{IoError, IoErrorKind, SegmentError, SegmentStore, segment_path};
use bytes::Bytes;
use futures::stream::BoxStream;
use object_store::path::Path;
use object_store::{
    GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult,
};
use opendal::Operator;
use tokio::sync::OnceCell;

use super::segment_footer;
use crate::error::{AtlasError, Result};
use crate::guard::guarded;

/// Pieces of one big segment read in flight at once.
const READ_CONCURRENCY: usize = 8;
/// Bytes of footer array-format spends per dataset in a segment (about 330 measured), rounded up.
const FOOTER_BYTES_PER_ARRAY: u64 = 512;

/// One opened segment: array-format's view of it and what screening found.
pub(crate) struct OpenSegment {
    /// The variable's name.
    pub name: String,
    /// array-format's reader.
    pub file: ArrayFile,
    /// Array (dataset) name to why that array cannot be used.
    pub problems: HashMap<String, String>,
    /// Bytes of the segment.
    pub len: u64,
}

impl OpenSegment {
    /// The array of dataset `dataset`, screened; `CorruptCollection` if it is
    /// missing or was found damaged.
    pub fn array(&self, dataset: &str) -> Result<&ArrayInfo> {
        if let Some(problem) = self.problems.get(dataset) {
            return Err(AtlasError::corrupt(format!(
                "segment {:?}, array {dataset:?}: {problem}",
                self.name
            )));
        }
        self.file.array(dataset).ok_or_else(|| {
            AtlasError::corrupt(format!(
                "segment {:?} holds no array for dataset {dataset:?}",
                self.name
            ))
        })
    }

    /// Whether screening flagged this array.
    pub fn problem(&self, dataset: &str) -> Option<&str> {
        self.problems.get(dataset).map(String::as_str)
    }
}

/// Every segment of one container, each opened at most once.
pub(crate) struct Segments {
    op: Operator,
    container: String,
    store: Arc<SegmentStore>,
    tracked: Arc<dyn ObjectStore>,
    cache: Option<Arc<BlockCache>>,
    prefetch: u64,
    /// Segment bytes the open's tail read already fetched; reads inside are served from here.
    probe: Bytes,
    probe_start: u64,
    cells: Vec<OnceCell<Arc<OpenSegment>>>,
}

impl Segments {
    /// The segments of `container`; `probe` holds the container's bytes that end at `probe_end`.
    pub fn new(
        op: Operator,
        container: String,
        variables: usize,
        block_cache_bytes: u64,
        prefetch: u64,
        probe: Bytes,
        probe_end: u64,
    ) -> Self {
        let store = Arc::new(SegmentStore::new(op.clone(), container.clone()));
        let tracked: Arc<dyn ObjectStore> = Arc::new(KindTrackingStore {
            inner: store.clone(),
        });
        let cache =
            (block_cache_bytes > 0).then(|| Arc::new(BlockCache::new(block_cache_bytes, 0)));
        let probe_start = probe_end.saturating_sub(probe.len() as u64);
        Self {
            op,
            container,
            store,
            tracked,
            cache,
            prefetch,
            probe,
            probe_start,
            cells: (0..variables).map(|_| OnceCell::new()).collect(),
        }
    }

    /// The opened segment `index` (position in the footer's variables), opening it on first use.
    ///
    /// `arrays_hint` is how many arrays it is expected to hold, to size the one tail read.
    pub async fn get(
        &self,
        index: usize,
        entry: VariableEntry,
        name: &str,
        arrays_hint: u64,
    ) -> Result<Arc<OpenSegment>> {
        let cell = self
            .cells
            .get(index)
            .ok_or_else(|| AtlasError::corrupt(format!("no segment at position {index}")))?;
        cell.get_or_try_init(|| self.open(index, entry, name, arrays_hint))
            .await
            .cloned()
    }

    /// The segments opened so far.
    pub fn opened(&self) -> usize {
        self.cells.iter().filter(|c| c.initialized()).count()
    }

    async fn open(
        &self,
        index: usize,
        entry: VariableEntry,
        name: &str,
        arrays_hint: u64,
    ) -> Result<Arc<OpenSegment>> {
        let len = entry.seg_len;
        let corrupt = |what: String| AtlasError::corrupt(format!("segment {name:?}: {what}"));
        let path = segment_path(index as u64);
        let want = arrays_hint
            .saturating_mul(FOOTER_BYTES_PER_ARRAY)
            .max(self.prefetch)
            .max(atlas_io::TRAILER_LEN)
            .min(len);
        let tail_start = len.saturating_sub(want);
        let mut tail = self.read(entry, tail_start..len).await?;
        let footer_total = atlas_io::validate_trailer(path.as_ref(), &tail, len)
            .map_err(|e| segment_error(name, e))?;
        if footer_total > want {
            let front = self
                .read(entry, len.saturating_sub(footer_total)..tail_start)
                .await?;
            tail = Bytes::from([&front[..], &tail[..]].concat());
        }
        let screened = segment_footer::screen(&tail, len).map_err(corrupt)?;
        // A tail no larger than the prefetch stays: a small segment's reads then cost nothing.
        let keep_tail = tail.len() as u64 <= self.prefetch;
        self.store.remove(&path);
        self.store
            .register_with_tail(&path, entry.seg_offset, len, tail)
            .map_err(|e| segment_error(name, e))?;
        let config = ReadConfig {
            cache_capacity: 0,
            io_cache_capacity: 0,
            cache: self.cache.clone(),
        };
        let opened = guarded(
            &format!("opening segment {name:?}"),
            ArrayFile::open(self.tracked.clone(), path.clone(), config),
        )
        .await;
        let file = match opened {
            Ok(Ok(file)) => file,
            Ok(Err(e)) => {
                self.store.remove(&path);
                return Err(corrupt(format!("array-format refused it: {e}")));
            }
            Err(e) => {
                self.store.remove(&path);
                return Err(e);
            }
        };
        if !keep_tail {
            self.store.release_tail(&path);
        }
        if file.arrays().len() != screened.array_count {
            return Err(corrupt(format!(
                "array-format sees {} arrays, the footer holds {}",
                file.arrays().len(),
                screened.array_count
            )));
        }
        tracing::debug!(segment = name, len, "opened segment");
        Ok(Arc::new(OpenSegment {
            name: name.to_owned(),
            file,
            problems: screened.problems,
            len,
        }))
    }

    /// Reads `rel` of segment `entry`: from the open's probe when it covers it, else
    /// one ranged read (split into concurrent 8 MiB pieces when larger).
    async fn read(&self, entry: VariableEntry, rel: std::ops::Range<u64>) -> Result<Bytes> {
        let start = entry.seg_offset.checked_add(rel.start);
        let end = entry.seg_offset.checked_add(rel.end);
        let (Some(start), Some(end)) = (start, end) else {
            return Err(AtlasError::corrupt("segment range overflows u64"));
        };
        if let Some(offset) = start.checked_sub(self.probe_start) {
            let from = usize::try_from(offset).ok();
            let to = usize::try_from(end.saturating_sub(self.probe_start)).ok();
            if let Some(bytes) = from
                .zip(to)
                .filter(|(f, t)| f <= t && *t <= self.probe.len())
                .map(|(f, t)| self.probe.slice(f..t))
            {
                return Ok(bytes);
            }
        }
        let mut parts = atlas_io::read_ranges_concurrently(
            &self.op,
            &self.container,
            std::slice::from_ref(&(start..end)),
            READ_CONCURRENCY,
        )
        .await?;
        Ok(parts.pop().unwrap_or_default())
    }
}

fn segment_error(name: &str, err: SegmentError) -> AtlasError {
    match err {
        SegmentError::Io(io) => AtlasError::Io(io),
        other => AtlasError::corrupt(format!("segment {name:?}: {other}")),
    }
}

/// What an array-format call hit on the way to storage, kept per task.
#[derive(Debug, Clone)]
pub(crate) struct IoFailure {
    kind: IoErrorKind,
    operation: &'static str,
    path: String,
    message: String,
}

impl IoFailure {
    /// The failure as the facade reports it.
    pub fn into_error(self) -> AtlasError {
        AtlasError::Io(IoError::new(
            self.kind,
            self.operation,
            self.path,
            self.message,
        ))
    }
}

tokio::task_local! {
    static IO_FAILURE: Arc<Mutex<Option<IoFailure>>>;
}

/// Runs `fut` (array-format work) and returns, beside its output, the first
/// storage failure its reads met, with the backend's kind intact.
pub(crate) async fn track_io<F: std::future::Future>(fut: F) -> (F::Output, Option<IoFailure>) {
    let slot = Arc::new(Mutex::new(None));
    let out = IO_FAILURE.scope(slot.clone(), fut).await;
    let failure = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
    (out, failure)
}

fn record(err: &object_store::Error) {
    let Some(failure) = io_failure_of(err) else {
        return;
    };
    let _ = IO_FAILURE.try_with(|slot| {
        let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            *slot = Some(failure);
        }
    });
}

fn io_failure_of(err: &object_store::Error) -> Option<IoFailure> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(err);
    while let Some(s) = source {
        let io = match s.downcast_ref::<SegmentError>() {
            Some(SegmentError::Io(io)) => Some(io),
            _ => s.downcast_ref::<IoError>(),
        };
        if let Some(io) = io {
            return Some(IoFailure {
                kind: io.kind(),
                operation: io.operation(),
                path: io.path().to_owned(),
                message: io.message().to_owned(),
            });
        }
        source = s.source();
    }
    None
}

/// The [`SegmentStore`] as array-format sees it, noting each storage failure
/// (with its kind) for [`track_io`] before array-format turns it into a string.
struct KindTrackingStore {
    inner: Arc<SegmentStore>,
}

impl fmt::Debug for KindTrackingStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KindTrackingStore")
            .field("inner", &self.inner)
            .finish()
    }
}

impl fmt::Display for KindTrackingStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KindTracking({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for KindTrackingStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        let result = self.inner.get_opts(location, options).await;
        if let Err(e) = &result {
            record(e);
        }
        result
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        from: &Path,
        to: &Path,
        options: object_store::CopyOptions,
    ) -> object_store::Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}
