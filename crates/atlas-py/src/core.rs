//! Every call the binding makes into the `atlas` crate (and into
//! `atlas-netcdf`'s [`Feed`] for writing), and nothing Python.
//!
//! Keeping every library call here means an API change touches this file only.
//! The rest of the binding sees plain Rust values: [`ArrayData`] (reads),
//! [`Scalar`], [`Stats`], [`Layout`], [`Described`], the catalogue's Arrow
//! [`RecordBatch`], [`Verified`], [`Written`] and [`CoreError`].
//!
//! It also owns the process's tokio runtime and the per-process cache of open
//! collections that lets a dask worker open a collection once, not once per task.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use atlas::{
    Atlas, AtlasError, AtlasWriter, CatalogueOptions, Codec, DType, FillValue, IoErrorKind,
    OpenOptions, QueryError, Region, Stat, StorageOptions, Timestamp, VerifyOptions,
    WriteGuarantee, WriterConfig,
};
use atlas::{Predicate, RecordBatch};
use atlas_netcdf::{Decode, Feed, FileError, IngestError, IngestOptions, StoredFile};
use tokio::runtime::Runtime;

use crate::region::{self, KeyItem};

/// The values of one read, in the element type they are stored as (converted
/// to numpy in `convert`). Timestamps read as nanoseconds with the fill value
/// replaced by `i64::MIN` (numpy's NaT).
pub use atlas::ArrayData;
/// Attribute values as the library returns them (converted to Python in `convert`).
pub use atlas::Attr;

/// Which Python exception a failure becomes; the binding's whole error vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// The location holds something that is not a readable Atlas container.
    NotAnAtlasCollection,
    /// The container, a segment or the mask is damaged.
    CorruptCollection,
    /// No such dataset, array or path.
    NotFound,
    /// The storage backend failed; `retryable` when trying again can help.
    Storage {
        /// Whether the backend marked the failure temporary.
        retryable: bool,
    },
    /// The caller asked for something the collection or the API cannot give.
    InvalidArgument,
}

/// A failure: its class and the library's message.
#[derive(Debug, Clone)]
pub struct CoreError {
    /// What kind of failure it is.
    pub class: ErrorClass,
    /// The library's message, shown to the user as is.
    pub message: String,
}

/// The class of a library error.
fn class_of(e: &AtlasError) -> ErrorClass {
    match e {
        AtlasError::NotAnAtlasCollection { .. } | AtlasError::UnsupportedVersion { .. } => {
            ErrorClass::NotAnAtlasCollection
        }
        e if e.is_corruption() => ErrorClass::CorruptCollection,
        AtlasError::DatasetNotFound { .. } | AtlasError::ArrayNotFound { .. } => {
            ErrorClass::NotFound
        }
        AtlasError::Io(io) if io.kind() == IoErrorKind::NotFound => ErrorClass::NotFound,
        AtlasError::Io(io) => ErrorClass::Storage {
            retryable: io.is_transient(),
        },
        AtlasError::ContainerWrite { .. } => ErrorClass::Storage { retryable: false },
        AtlasError::InvalidLocation { .. } => ErrorClass::InvalidArgument,
        _ => ErrorClass::InvalidArgument,
    }
}

impl From<AtlasError> for CoreError {
    fn from(e: AtlasError) -> Self {
        Self {
            class: class_of(&e),
            message: e.to_string(),
        }
    }
}

impl From<QueryError> for CoreError {
    fn from(e: QueryError) -> Self {
        match e {
            QueryError::Atlas(a) => a.into(),
            // A bad expression or name, or a table Arrow refused: the request.
            other => Self::invalid(other.to_string()),
        }
    }
}

impl From<IngestError> for CoreError {
    fn from(e: IngestError) -> Self {
        let class = match &e {
            IngestError::Writer(a)
            | IngestError::Dataset {
                source: FileError::Write(a),
                ..
            } => class_of(a),
            // Data the mapping or the writer refuses: the caller's input.
            _ => ErrorClass::InvalidArgument,
        };
        Self {
            class,
            message: e.to_string(),
        }
    }
}

impl CoreError {
    /// A request the API cannot serve.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self {
            class: ErrorClass::InvalidArgument,
            message: message.into(),
        }
    }
}

/// Result alias of this module.
pub type Result<T, E = CoreError> = std::result::Result<T, E>;

/// The runtime and the process it was built in: a forked child builds its own,
/// because the parent's worker threads do not exist there.
static RUNTIME: Mutex<Option<(u32, Arc<Runtime>)>> = Mutex::new(None);

fn runtime() -> Result<Arc<Runtime>> {
    let pid = std::process::id();
    let mut slot = RUNTIME.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((owner, rt)) = slot.as_ref()
        && *owner == pid
    {
        return Ok(Arc::clone(rt));
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("atlasds-io")
        .build()
        .map_err(|e| CoreError {
            class: ErrorClass::Storage { retryable: false },
            message: format!("cannot start the I/O runtime: {e}"),
        })?;
    let rt = Arc::new(rt);
    if let Some(inherited) = slot.replace((pid, Arc::clone(&rt))) {
        // Inherited across fork: dropping it would wait for threads that are gone.
        std::mem::forget(inherited);
    }
    Ok(rt)
}

/// Runs `fut` to completion on the module's runtime (the caller has released the GIL).
pub fn block_on<F: Future>(fut: F) -> Result<F::Output> {
    Ok(runtime()?.block_on(fut))
}

/// Collections opened by this process (cached or not): what the dask test counts.
static OPENS: AtomicU64 = AtomicU64::new(0);

/// Open collections by location and options, and the process they were opened in.
type Cached = (u32, HashMap<String, Atlas>);

/// Open collections shared by every handle of this process that asks for the cache.
static CACHE: Mutex<Option<Cached>> = Mutex::new(None);

/// How many collections this process has opened.
pub fn open_count() -> u64 {
    OPENS.load(Ordering::Relaxed)
}

/// Forgets every cached collection (handles already given out stay usable).
pub fn clear_cache() {
    *CACHE.lock().unwrap_or_else(|e| e.into_inner()) = None;
}

/// How to reach and read a collection: the backend's configuration and the
/// reader's options, as the Python layer passes them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpenRequest {
    /// OpenDAL configuration keys of the backend and their values.
    pub storage: Vec<(String, String)>,
    /// Unsigned requests, no credentials loaded (a public bucket).
    pub anonymous: bool,
    /// Bytes of decompressed blocks kept in memory (None: the library's default).
    pub block_cache_bytes: Option<u64>,
    /// Least bytes read from a segment's end on first use (None: the default).
    pub segment_prefetch_bytes: Option<u64>,
}

impl OpenRequest {
    fn storage_options(&self) -> StorageOptions {
        self.storage
            .iter()
            .fold(StorageOptions::new(), |o, (k, v)| o.set(k, v))
            .anonymous(self.anonymous)
    }

    fn open_options(&self) -> OpenOptions {
        let mut options = OpenOptions::default().storage(self.storage_options());
        if let Some(bytes) = self.block_cache_bytes {
            options = options.block_cache_bytes(bytes);
        }
        if let Some(bytes) = self.segment_prefetch_bytes {
            options = options.segment_prefetch_bytes(bytes);
        }
        options
    }

    /// The cache key: the location and everything that changes what is opened.
    fn key(&self, location: &str) -> String {
        format!("{location}\u{0}{self:?}")
    }
}

/// An open collection: the shared library handle.
#[derive(Debug, Clone)]
pub struct Collection {
    atlas: Atlas,
}

/// Opens the collection at `location` (a path or a `file://`, `s3://`,
/// `gs://`, `az://` or `http(s)://` URL). With `cached`, a collection this
/// process already opened at the same location with the same request is
/// reused and a new one is remembered.
pub async fn open(location: &str, request: &OpenRequest, cached: bool) -> Result<Collection> {
    let key = request.key(location);
    if cached {
        let guard = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((pid, map)) = guard.as_ref()
            && *pid == std::process::id()
            && let Some(atlas) = map.get(&key)
        {
            return Ok(Collection {
                atlas: atlas.clone(),
            });
        }
    }
    let atlas = Atlas::open(
        location,
        &request.open_options().storage(request.storage_options()),
    )
    .await?;
    OPENS.fetch_add(1, Ordering::Relaxed);
    if cached {
        let mut guard = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        let pid = std::process::id();
        if guard.as_ref().is_none_or(|(owner, _)| *owner != pid) {
            *guard = Some((pid, HashMap::new()));
        }
        if let Some((_, map)) = guard.as_mut() {
            map.insert(key, atlas.clone());
        }
    }
    Ok(Collection { atlas })
}

/// A single value: a statistic, a fill value. Timestamps are nanoseconds since the epoch.
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    /// A boolean.
    Bool(bool),
    /// A signed integer.
    Int(i64),
    /// An unsigned integer.
    UInt(u64),
    /// A float.
    Float(f64),
    /// Text.
    Str(String),
    /// Bytes that are not text.
    Bytes(Vec<u8>),
    /// Nanoseconds since the Unix epoch.
    Timestamp(i64),
}

/// Statistics of one array or a fold of many, as the segments record them.
#[derive(Debug, Clone, PartialEq)]
pub struct Stats {
    /// Elements, nulls included.
    pub count: u64,
    /// Elements equal to the fill value (or NaN).
    pub nulls: u64,
    /// Smallest non-null element.
    pub min: Option<Scalar>,
    /// Largest non-null element.
    pub max: Option<Scalar>,
}

/// An array's layout: dtype name (`float32`, `timestamp_ns`, ...), shape,
/// chunking, dimension names and fill value.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    /// The dtype's user-facing name.
    pub dtype: String,
    /// Length of each axis.
    pub shape: Vec<u64>,
    /// Extent of one stored chunk along each axis.
    pub chunk_shape: Vec<u64>,
    /// Name of each axis.
    pub dims: Vec<String>,
    /// Value of unwritten elements, if the writer gave one.
    pub fill: Option<Scalar>,
}

/// Attributes in the order they were set.
pub type Attrs = Vec<(String, Attr)>;

/// One dataset's attributes and, per array, its name, layout and attributes.
#[derive(Debug, Clone, Default)]
pub struct Described {
    /// Dataset attributes in the order they were set.
    pub attrs: Attrs,
    /// Per array in declaration order: name, layout, attributes.
    pub arrays: Vec<(String, Layout, Attrs)>,
}

/// What a delete did: how many datasets it hid, and the guarantee the mask write had.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deleted {
    /// Datasets named in the request (hidden now, whether or not they were before).
    pub count: usize,
    /// The guarantee's Python name: `conditional`, `locked` (local disk) or
    /// `last_writer_wins` (a concurrent delete could have been lost).
    pub guarantee: &'static str,
}

/// What `verify` found: soundness, each finding as text, and what it checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verified {
    /// No problem found (warnings allowed).
    pub sound: bool,
    /// Damage found, one message each.
    pub problems: Vec<String>,
    /// Tolerated oddities (e.g. unknown names in the deletion mask).
    pub warnings: Vec<String>,
    /// What was checked, as `(name, count)`: variables, data_segments,
    /// segments_opened, datasets, arrays, elements, hidden.
    pub checked: Vec<(&'static str, u64)>,
}

/// The dtype name of an attribute value (`float32`, `list<int32>`, ...), which
/// the Python layer uses to give numeric scalars their own numpy type.
pub fn attr_dtype(value: &Attr) -> String {
    value.dtype().display_name()
}

fn scalar_of_stat(value: &Stat, dtype: &DType) -> Option<Scalar> {
    Some(match value {
        Stat::Int(v) => Scalar::Int(*v),
        Stat::UInt(v) => Scalar::UInt(*v),
        Stat::Float(v) => Scalar::Float(*v),
        Stat::Timestamp(v) => Scalar::Timestamp(v.nanos()),
        Stat::Bytes(b) => match (dtype, std::str::from_utf8(b)) {
            (DType::String, Ok(s)) => Scalar::Str(s.to_owned()),
            _ => Scalar::Bytes(b.clone()),
        },
        // A kind of bound this binding does not know yet: shown as unknown.
        _ => return None,
    })
}

fn scalar_of_fill(value: &FillValue, dtype: &DType) -> Option<Scalar> {
    Some(match (value, dtype) {
        (FillValue::Int(v), DType::TimestampNs) => Scalar::Timestamp(*v),
        (FillValue::Bool(v), _) => Scalar::Bool(*v),
        (FillValue::Int(v), _) => Scalar::Int(*v),
        (FillValue::UInt(v), _) => Scalar::UInt(*v),
        (FillValue::Float(v), _) => Scalar::Float(*v),
        (FillValue::String(v), _) => Scalar::Str(v.clone()),
        (FillValue::Timestamp(v), _) => Scalar::Timestamp(v.nanos()),
        _ => return None,
    })
}

/// The nanoseconds of a timestamp array's fill value, if it has one.
fn timestamp_fill(fill: Option<&FillValue>) -> Option<i64> {
    match fill? {
        FillValue::Timestamp(t) => Some(t.nanos()),
        FillValue::Int(v) => Some(*v),
        _ => None,
    }
}

fn stats_of(s: &atlas::ArrayStats, dtype: &DType) -> Stats {
    Stats {
        count: s.row_count,
        nulls: s.null_count,
        min: s.min.as_ref().and_then(|v| scalar_of_stat(v, dtype)),
        max: s.max.as_ref().and_then(|v| scalar_of_stat(v, dtype)),
    }
}

fn array_not_found(dataset: &str, array: &str) -> CoreError {
    AtlasError::ArrayNotFound {
        dataset: Some(dataset.to_owned()),
        array: array.to_owned(),
    }
    .into()
}

impl Collection {
    /// Live dataset names, in ordinal order.
    pub fn names(&self) -> Vec<String> {
        self.atlas
            .dataset_names()
            .into_iter()
            .map(str::to_owned)
            .collect()
    }

    /// Number of live datasets.
    pub fn len(&self) -> usize {
        self.atlas.dataset_count()
    }

    /// Whether a live dataset has this name.
    pub fn contains(&self, name: &str) -> bool {
        self.atlas.contains(name)
    }

    /// Distinct array names over the whole collection.
    pub fn array_names(&self) -> Vec<String> {
        self.atlas
            .array_names()
            .into_iter()
            .map(str::to_owned)
            .collect()
    }

    /// The ordinal of live dataset `dataset`.
    pub fn ordinal(&self, dataset: &str) -> Result<u32> {
        Ok(self.atlas.dataset(dataset)?.ordinal())
    }

    /// The arrays dataset `dataset` declares, in declaration order.
    pub fn arrays(&self, dataset: &str) -> Result<Vec<String>> {
        let view = self.atlas.dataset(dataset)?;
        Ok(view
            .schema()
            .arrays()
            .map(|a| a.name().to_owned())
            .collect())
    }

    fn dtype(&self, dataset: &str, array: &str) -> Result<DType> {
        let view = self.atlas.dataset(dataset)?;
        let meta = view
            .array_meta(array)
            .ok_or_else(|| array_not_found(dataset, array))?;
        Ok(meta.dtype().clone())
    }

    /// The dtype of `array` in the first live dataset declaring it.
    fn collection_dtype(&self, array: &str) -> Option<DType> {
        self.atlas
            .datasets()
            .find_map(|v| v.array_meta(array).map(|m| m.dtype().clone()))
    }

    /// Dataset attributes of `dataset`, in the order they were set.
    pub async fn attributes(&self, dataset: &str) -> Result<Vec<(String, Attr)>> {
        Ok(self.atlas.dataset(dataset)?.attributes().await?)
    }

    /// Attributes of `array` of `dataset`, in the order they were set.
    pub async fn array_attributes(
        &self,
        dataset: &str,
        array: &str,
    ) -> Result<Vec<(String, Attr)>> {
        Ok(self.atlas.dataset(dataset)?.array_attributes(array).await?)
    }

    /// Layout of `array` of `dataset`.
    pub async fn layout(&self, dataset: &str, array: &str) -> Result<Layout> {
        let layout = self.atlas.dataset(dataset)?.array_layout(array).await?;
        Ok(Layout {
            dtype: layout.dtype.display_name(),
            fill: layout
                .fill_value
                .as_ref()
                .and_then(|f| scalar_of_fill(f, &layout.dtype)),
            shape: layout.shape,
            chunk_shape: layout.chunk_shape,
            dims: layout.dimension_names,
        })
    }

    /// Dataset attributes, then per array (declaration order) its name, layout
    /// and attributes: what an xarray node needs, in one call.
    pub async fn describe(&self, dataset: &str) -> Result<Described> {
        let view = self.atlas.dataset(dataset)?;
        let attrs = view.attributes().await?;
        let names: Vec<String> = view
            .schema()
            .arrays()
            .map(|a| a.name().to_owned())
            .collect();
        let mut arrays = Vec::with_capacity(names.len());
        for name in names {
            let layout = self.layout(dataset, &name).await?;
            let array_attrs = view.array_attributes(&name).await?;
            arrays.push((name, layout, array_attrs));
        }
        Ok(Described { attrs, arrays })
    }

    /// Reads the part of `array` numpy basic indexing `key` names (`None`:
    /// everything; see [`region`]), in the stored element type; timestamps
    /// equal to the fill value read as `i64::MIN` (NaT).
    pub async fn read(
        &self,
        dataset: &str,
        array: &str,
        key: Option<&[KeyItem]>,
    ) -> Result<ArrayData> {
        let view = self.atlas.dataset(dataset)?;
        let (region, steps) = match key {
            None => (Region::all(), Vec::new()),
            Some(key) => {
                let shape = view.array_layout(array).await?.shape;
                let plan = region::plan(array, key, &shape)?;
                (plan.region, plan.steps)
            }
        };
        let read = view.read_any(array, region).await?;
        let fill = timestamp_fill(read.fill());
        let data = match read.into_data() {
            ArrayData::Timestamp(a) => ArrayData::Timestamp(match fill {
                Some(f) => a.mapv(|t| {
                    if t.nanos() == f {
                        Timestamp(i64::MIN)
                    } else {
                        t
                    }
                }),
                None => a,
            }),
            other => other,
        };
        Ok(if steps.iter().any(|&s| s != 1) {
            region::stepped(data, &steps)
        } else {
            data
        })
    }

    /// Statistics of `array` of `dataset`; `None` where the segment records none.
    pub async fn dataset_stats(&self, dataset: &str, array: &str) -> Result<Option<Stats>> {
        let dtype = self.dtype(dataset, array)?;
        let stats = self.atlas.dataset(dataset)?.array_stats(array).await?;
        Ok(stats.as_ref().map(|s| stats_of(s, &dtype)))
    }

    /// Statistics of `array` folded over every live dataset (of the first declaring dataset's dtype).
    pub async fn stats(&self, array: &str) -> Result<Option<Stats>> {
        let stats = self.atlas.array_stats(array).await?;
        let dtype = self.collection_dtype(array);
        Ok(match (stats, dtype) {
            (Some(s), Some(d)) => Some(stats_of(&s, &d)),
            _ => None,
        })
    }

    /// Statistics of `array` per live dataset declaring it: name, ordinal, stats.
    pub async fn stats_by_dataset(&self, array: &str) -> Result<Vec<(String, u32, Stats)>> {
        let rows = self.atlas.array_stats_by_dataset(array).await?;
        Ok(rows
            .into_iter()
            .map(|row| {
                let dtype = self.dtype(&row.dataset, array).unwrap_or(DType::Binary);
                let stats = stats_of(&row.stats, &dtype);
                (row.dataset, row.ordinal, stats)
            })
            .collect())
    }

    /// Attribute `key` of every live dataset declaring it (of `array`, when given).
    pub async fn attributes_by_dataset(
        &self,
        key: &str,
        array: Option<&str>,
    ) -> Result<Vec<(String, Attr)>> {
        Ok(self.atlas.attributes_by_dataset(array, key).await?)
    }

    /// Hides the named datasets with one mask write.
    pub async fn delete(&self, names: &[String]) -> Result<Deleted> {
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let outcome = self.atlas.delete_datasets(&names).await?;
        Ok(Deleted {
            count: outcome.deleted,
            guarantee: match outcome.guarantee {
                WriteGuarantee::Conditional => "conditional",
                WriteGuarantee::Locked => "locked",
                // LastWriterWins, and anything newer: promise nothing.
                _ => "last_writer_wins",
            },
        })
    }

    /// Checks the collection (`deep`: also recomputes every array's statistics).
    pub async fn verify(&self, deep: bool) -> Verified {
        let report = self.atlas.verify(&VerifyOptions::new().deep(deep)).await;
        let c = &report.checked;
        let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        Verified {
            sound: report.is_sound(),
            problems: report.problems().map(ToString::to_string).collect(),
            warnings: report.warnings().map(ToString::to_string).collect(),
            checked: vec![
                ("variables", count(c.variables)),
                ("data_segments", count(c.data_segments)),
                ("segments_opened", count(c.segments_opened)),
                ("datasets", count(c.datasets)),
                ("arrays", count(c.arrays)),
                ("elements", c.elements),
                ("hidden", count(c.hidden)),
            ],
        }
    }

    /// The catalogue `atlas catalogue` prints, as the facade builds it: one
    /// row per live dataset (those `predicate` selects, when given), columns
    /// for the `attributes` keys and `arrays` statistics asked for (`None`:
    /// all). Reads segment footers only.
    pub async fn catalogue(
        &self,
        attributes: Option<Vec<String>>,
        arrays: Option<Vec<String>>,
        predicate: Option<&str>,
    ) -> Result<RecordBatch> {
        let mut options = CatalogueOptions::default();
        if let Some(keys) = attributes {
            options = options.attributes(keys);
        }
        if let Some(names) = arrays {
            options = options.arrays(names);
        }
        if let Some(text) = predicate {
            options = options.predicate(Predicate::parse(text).map_err(QueryError::from)?);
        }
        Ok(self.atlas.catalogue(&options).await?)
    }
}

/// How to write a collection: where (the backend's configuration), how
/// datasets are mapped, and how blocks are compressed.
#[derive(Debug, Clone, Default)]
pub struct WriteRequest {
    /// OpenDAL configuration keys of the backend and their values.
    pub storage: Vec<(String, String)>,
    /// Unsigned requests, no credentials loaded.
    pub anonymous: bool,
    /// `cf` (what `atlas create` builds) or `raw` (as stored).
    pub decode: String,
    /// `zstd`, `lz4` or `none`.
    pub codec: String,
    /// zstd level (None: the library's default).
    pub zstd_level: Option<i32>,
    /// Stored chunk shape per array name; others are stored whole.
    pub chunks: BTreeMap<String, Vec<u64>>,
    /// Datasets compressing at once (at least 1).
    pub jobs: usize,
    /// Leave out variables of types Atlas cannot store instead of failing.
    pub skip_unsupported: bool,
}

impl WriteRequest {
    fn ingest_options(&self) -> Result<IngestOptions> {
        let decode = match self.decode.as_str() {
            "cf" => Decode::Cf,
            "raw" => Decode::Raw,
            other => {
                return Err(CoreError::invalid(format!(
                    "decode must be 'cf' or 'raw', not {other:?}"
                )));
            }
        };
        Ok(IngestOptions::default()
            .with_decode(decode)
            .with_chunks(self.chunks.clone())
            .with_jobs(self.jobs)
            .with_skip_unsupported(self.skip_unsupported))
    }

    fn writer_config(&self) -> Result<WriterConfig> {
        let codec = match self.codec.as_str() {
            "zstd" => Codec::Zstd,
            "lz4" => Codec::Lz4,
            "none" => Codec::Uncompressed,
            other => {
                return Err(CoreError::invalid(format!(
                    "codec must be 'zstd', 'lz4' or 'none', not {other:?}"
                )));
            }
        };
        let mut config = WriterConfig::default().codec(codec);
        if let Some(level) = self.zstd_level {
            config = config.zstd_level(level);
        }
        Ok(config)
    }
}

/// What a finished write made: dataset names in ordinal order, container
/// size, variables left out (`dataset/variable: type`) and the mapping's notes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Written {
    /// Dataset names in ordinal order.
    pub datasets: Vec<String>,
    /// Bytes of `data.atlas`.
    pub container_bytes: u64,
    /// `(dataset, variable, type)` of each variable left out.
    pub skipped: Vec<(String, String, String)>,
    /// Choices the mapping made (`dataset: message`).
    pub notes: Vec<String>,
}

/// A collection being written through atlas-netcdf's [`Feed`]: the mapping
/// and sink `atlas create` uses. Nothing is visible before [`Writer::finish`].
#[derive(Debug)]
pub struct Writer {
    feed: Mutex<Option<Feed>>,
}

/// Starts writing a collection at `location` (which must not hold one yet).
pub async fn create(location: &str, request: &WriteRequest) -> Result<Writer> {
    let options = request.ingest_options()?;
    let config = request.writer_config()?;
    let storage = request
        .storage
        .iter()
        .fold(StorageOptions::new(), |o, (k, v)| o.set(k, v))
        .anonymous(request.anonymous);
    let writer = AtlasWriter::create(location, &config.clone().storage(storage.clone())).await?;
    Ok(Writer {
        feed: Mutex::new(Some(Feed::new(writer, options))),
    })
}

impl Writer {
    fn take(&self) -> Result<Feed> {
        self.feed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .ok_or_else(|| {
                CoreError::invalid("this writer is finished, aborted or busy in another thread")
            })
    }

    /// Maps `stored` (converted from Python beforehand) and adds it as dataset `name`.
    pub async fn add(&self, name: &str, stored: StoredFile) -> Result<()> {
        let mut feed = self.take()?;
        let result = feed.add(name, &stored).await;
        *self.feed.lock().unwrap_or_else(|e| e.into_inner()) = Some(feed);
        Ok(result?)
    }

    /// Commits the collection.
    pub async fn finish(&self) -> Result<Written> {
        let report = self.take()?.finish().await?;
        Ok(Written {
            datasets: report.written,
            container_bytes: report.summary.container_bytes,
            skipped: report
                .skipped_variables
                .into_iter()
                .map(|s| (s.dataset, s.variable, s.dtype))
                .collect(),
            notes: report.notes,
        })
    }

    /// Drops everything added: nothing is written at the destination.
    pub fn abort(&self) {
        drop(self.feed.lock().unwrap_or_else(|e| e.into_inner()).take());
    }
}
