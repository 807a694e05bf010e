//! Every call the binding makes into the `atlas` crate (and into
//! `atlas-netcdf`'s [`Feed`] for writing), and nothing Python.
//!
//! Keeping every library call here means an API change touches this file only.
//! The rest of the binding sees plain Rust values: [`ArrayData`] (reads),
//! [`Value`], [`Stats`], [`Layout`], [`Described`], the catalogue's Arrow
//! [`RecordBatch`], [`Verified`], [`Written`] and [`CoreError`].
//!
//! Every collection is opened as an [`Atlas`]: a collection set, or a lone
//! collection seen as a set of one, so the binding has one code path for both.
//!
//! It also owns the process's tokio runtime and the per-process cache of open
//! collections that lets a dask worker open a collection once, not once per task.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use atlas::testing::{CountingLayer, RequestStats};
use atlas::{
    Access, Address, Location, Predicate, RecordBatch, SmolStr, TableOptions, TableStream,
};
use atlas::{
    Atlas, AtlasError, AtlasWriter, CatalogueOptions, Codec, DType, Dataset, OpenOptions,
    QueryError, Region, SetWriter, StorageOptions, Timestamp, Value, VerifyOptions, WriteGuarantee,
    WriterConfig,
};
use atlas_netcdf::{Decode, Feed, IngestError, IngestOptions, StoredFile};
use tokio::runtime::Runtime;

use crate::region::{self, KeyItem};

/// The values of one read, in the element type they are stored as (converted
/// to numpy in `convert`). Timestamps read as nanoseconds with the fill value
/// replaced by `i64::MIN` (numpy's NaT).
pub use atlas::ArrayData;
/// Attribute values as the library returns them (converted to Python in `convert`).
pub use atlas::Attr;

/// Which Python exception a failure becomes: the library's classification,
/// mapped to `atlasds._errors` in `convert`.
pub use atlas::ErrorClass;

/// A failure: its class and the library's message.
#[derive(Debug, Clone)]
pub struct CoreError {
    /// What kind of failure it is.
    pub class: ErrorClass,
    /// The library's message with its causes, each once, shown to the user as is.
    pub message: String,
}

impl CoreError {
    /// The failure `e` (with its chain of causes) as the library classes it.
    fn classed(class: ErrorClass, e: &(dyn std::error::Error + 'static)) -> Self {
        Self {
            class,
            message: atlas::ErrorReport::new(e).to_string(),
        }
    }
}

impl From<AtlasError> for CoreError {
    fn from(e: AtlasError) -> Self {
        Self::classed(e.class(), &e)
    }
}

impl From<QueryError> for CoreError {
    fn from(e: QueryError) -> Self {
        Self::classed(e.class(), &e)
    }
}

impl From<IngestError> for CoreError {
    fn from(e: IngestError) -> Self {
        Self::classed(e.class(), &e)
    }
}

impl From<atlas_netcdf::SyncError> for CoreError {
    fn from(e: atlas_netcdf::SyncError) -> Self {
        Self::classed(e.class(), &e)
    }
}

impl From<region::InvalidKey> for CoreError {
    fn from(e: region::InvalidKey) -> Self {
        Self::invalid(e.to_string())
    }
}

impl CoreError {
    /// A request the API cannot serve.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self {
            class: ErrorClass::InvalidRequest,
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
            class: ErrorClass::Storage,
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
type Cached = (u32, HashMap<String, Collection>);

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
    /// Count this handle's requests (`Collection::requests`): for tests and
    /// measurements of what a call reads.
    pub count_requests: bool,
    /// Whether questions may read the containers' dataset indexes.
    pub dataset_index: bool,
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
        options.dataset_index(self.dataset_index)
    }

    /// The cache key: the location and everything that changes what is opened.
    fn key(&self, location: &str) -> String {
        format!("{location}\u{0}{self:?}")
    }
}

/// An open collection, a set or a lone one: the shared library handle.
#[derive(Debug, Clone)]
pub struct Collection {
    set: Atlas,
    /// The request counts of a handle opened with `count_requests`.
    requests: Option<RequestStats>,
}

/// One committed member of a set, as its manifest describes it (no request).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberInfo {
    /// The member's id, unique in the set.
    pub id: String,
    /// Its prefix relative to the set's (`members/<id>`).
    pub path: String,
    /// Datasets its mask does not hide (copies a newer member replaces included).
    pub datasets_live: u64,
    /// Datasets in its container, deleted or not.
    pub datasets_total: u64,
    /// Bytes of its `data.atlas`.
    pub bytes: u64,
    /// When its container was written, milliseconds since the Unix epoch.
    pub created_unix_ms: i64,
}

/// Opens the collection or set at `location` (a path or a `file://`, `s3://`,
/// `gs://`, `az://` or `http(s)://` URL): one read of the set manifest, then,
/// where there is none, the lone collection's tail. With `cached`, a handle
/// this process already opened at the same location with the same request is
/// reused and a new one is remembered.
pub async fn open(location: &str, request: &OpenRequest, cached: bool) -> Result<Collection> {
    let key = request.key(location);
    if cached {
        let guard = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((pid, map)) = guard.as_ref()
            && *pid == std::process::id()
            && let Some(collection) = map.get(&key)
        {
            return Ok(collection.clone());
        }
    }
    let options = request.open_options();
    let collection = if request.count_requests {
        // The resolved operator (retries included) under a counting layer:
        // what the handle reads is what storage is asked for.
        let resolved = Address::from(location)
            .resolve(&request.storage_options(), Access::Read)
            .await?;
        let counting = CountingLayer::new();
        let requests = counting.stats();
        let op = resolved.operator().clone().layer(counting);
        let address = Location::from_operator(op, resolved.prefix());
        Collection {
            set: Atlas::open(address, &options).await?,
            requests: Some(requests),
        }
    } else {
        Collection {
            set: Atlas::open(location, &options).await?,
            requests: None,
        }
    };
    OPENS.fetch_add(1, Ordering::Relaxed);
    if cached {
        let mut guard = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        let pid = std::process::id();
        if guard.as_ref().is_none_or(|(owner, _)| *owner != pid) {
            *guard = Some((pid, HashMap::new()));
        }
        if let Some((_, map)) = guard.as_mut() {
            map.insert(key, collection.clone());
        }
    }
    Ok(collection)
}

/// Statistics of one array or a fold of many, as the segments record them.
#[derive(Debug, Clone, PartialEq)]
pub struct Stats {
    /// Elements, nulls included.
    pub count: u64,
    /// Elements equal to the fill value (or NaN).
    pub nulls: u64,
    /// Smallest non-null element.
    pub min: Option<Value>,
    /// Largest non-null element.
    pub max: Option<Value>,
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
    pub fill: Option<Value>,
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

/// The nanoseconds of a timestamp array's fill value, if it has one.
pub(crate) fn timestamp_fill(fill: Option<&Value>) -> Option<i64> {
    fill?.timestamp().map(Timestamp::nanos)
}

fn stats_of(s: &atlas::ArrayStats, dtype: &DType) -> Stats {
    Stats {
        count: s.row_count,
        nulls: s.null_count,
        min: s.min.clone().map(|v| v.for_dtype(dtype)),
        max: s.max.clone().map(|v| v.for_dtype(dtype)),
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
    /// The library handle, for the bulk reads of the `views` module.
    pub(crate) fn set(&self) -> &Atlas {
        &self.set
    }

    /// The request counts of a handle opened with `count_requests` (None otherwise).
    pub fn requests(&self) -> Option<&RequestStats> {
        self.requests.as_ref()
    }

    /// Whether a set manifest was found (false: a lone collection).
    pub fn is_set(&self) -> bool {
        self.set.is_set()
    }

    /// The manifest's generation as opened (updated by this handle's
    /// deletes); `None` for a lone collection.
    pub fn generation(&self) -> Option<u64> {
        self.set.manifest().map(|m| m.generation)
    }

    /// The committed members, oldest commit first; empty for a lone collection.
    pub fn members(&self) -> Vec<MemberInfo> {
        self.set
            .members()
            .into_iter()
            .map(|m| MemberInfo {
                id: m.id,
                path: m.path,
                datasets_live: m.datasets_live,
                datasets_total: m.datasets_total,
                bytes: m.bytes,
                created_unix_ms: m.created_unix_ms,
            })
            .collect()
    }

    /// Live dataset names: members oldest commit first, each in ordinal order
    /// (opens every member of a set on first use).
    pub async fn names(&self) -> Result<Vec<atlas::SmolStr>> {
        Ok(self.set.dataset_names().await?)
    }

    /// Number of live datasets.
    pub async fn len(&self) -> Result<usize> {
        Ok(self.set.dataset_count().await?)
    }

    /// Whether a live dataset has this name.
    pub async fn contains(&self, name: &str) -> Result<bool> {
        Ok(self.set.contains(name).await?)
    }

    /// Distinct array names over the whole collection.
    pub async fn array_names(&self) -> Result<Vec<String>> {
        Ok(self.set.array_names().await?)
    }

    /// The live copy of dataset `name` (in a set, the newest member's).
    async fn dataset(&self, name: &str) -> Result<Dataset> {
        Ok(self.set.dataset(name).await?)
    }

    /// The ordinal of live dataset `dataset` (within its member, in a set).
    pub async fn ordinal(&self, dataset: &str) -> Result<u32> {
        Ok(self.dataset(dataset).await?.ordinal())
    }

    /// The arrays dataset `dataset` declares, in declaration order.
    pub async fn arrays(&self, dataset: &str) -> Result<Vec<String>> {
        let view = self.dataset(dataset).await?;
        Ok(view
            .schema()
            .arrays()
            .map(|a| a.name().to_owned())
            .collect())
    }

    fn dtype_of(view: &Dataset, array: &str) -> Result<DType> {
        let meta = view
            .array_meta(array)
            .ok_or_else(|| array_not_found(view.name(), array))?;
        Ok(meta.dtype().clone())
    }

    /// The dtype of `array` in the first live dataset declaring it (stops there).
    async fn collection_dtype(&self, array: &str) -> Result<Option<DType>> {
        Ok(self
            .set
            .datasets()
            .await?
            .iter()
            .find_map(|v| v.array_meta(array).map(|m| m.dtype().clone())))
    }

    /// Dataset attributes of `dataset`, in the order they were set.
    pub async fn attributes(&self, dataset: &str) -> Result<Vec<(String, Attr)>> {
        Ok(self.dataset(dataset).await?.attributes().await?)
    }

    /// Attributes of `array` of `dataset`, in the order they were set.
    pub async fn array_attributes(
        &self,
        dataset: &str,
        array: &str,
    ) -> Result<Vec<(String, Attr)>> {
        Ok(self.dataset(dataset).await?.array_attributes(array).await?)
    }

    async fn layout_of(view: &Dataset, array: &str) -> Result<Layout> {
        let layout = view.array_layout(array).await?;
        Ok(Layout {
            dtype: layout.dtype.display_name(),
            fill: layout
                .fill_value
                .as_ref()
                .map(|f| f.clone().for_dtype(&layout.dtype)),
            shape: layout.shape,
            chunk_shape: layout.chunk_shape,
            dims: layout.dimension_names,
        })
    }

    /// Layout of `array` of `dataset`.
    pub async fn layout(&self, dataset: &str, array: &str) -> Result<Layout> {
        Self::layout_of(&self.dataset(dataset).await?, array).await
    }

    /// Dataset attributes, then per array (declaration order) its name, layout
    /// and attributes: what an xarray node needs, in one call.
    pub async fn describe(&self, dataset: &str) -> Result<Described> {
        let view = self.dataset(dataset).await?;
        let attrs = view.attributes().await?;
        let names: Vec<String> = view
            .schema()
            .arrays()
            .map(|a| a.name().to_owned())
            .collect();
        let mut arrays = Vec::with_capacity(names.len());
        for name in names {
            let layout = Self::layout_of(&view, &name).await?;
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
        let view = self.dataset(dataset).await?;
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
        let view = self.dataset(dataset).await?;
        let dtype = Self::dtype_of(&view, array)?;
        let stats = view.array_stats(array).await?;
        Ok(stats.as_ref().map(|s| stats_of(s, &dtype)))
    }

    /// Statistics of `array` folded over every live dataset (of the first declaring dataset's dtype).
    pub async fn stats(&self, array: &str) -> Result<Option<Stats>> {
        let stats = self.set.array_stats(array).await?;
        let dtype = self.collection_dtype(array).await?;
        Ok(match (stats, dtype) {
            (Some(s), Some(d)) => Some(stats_of(&s, &d)),
            _ => None,
        })
    }

    /// Statistics of `array` per live dataset declaring it: name, ordinal
    /// (within its member, in a set), stats.
    pub async fn stats_by_dataset(&self, array: &str) -> Result<Vec<(SmolStr, u32, Stats)>> {
        let rows = self.set.array_stats_by_dataset(array).await?;
        // Each live dataset's dtype of `array`, in one pass (rows name live datasets).
        let dtypes: HashMap<String, DType> = self
            .set
            .datasets()
            .await?
            .iter()
            .filter_map(|v| Some((v.name().to_owned(), Self::dtype_of(v, array).ok()?)))
            .collect();
        Ok(rows
            .into_iter()
            .map(|row| {
                let dtype = dtypes.get(row.dataset.as_str()).unwrap_or(&DType::Binary);
                let stats = stats_of(&row.stats, dtype);
                (row.dataset, row.ordinal, stats)
            })
            .collect())
    }

    /// Attribute `key` of every live dataset declaring it (of `array`, when given).
    pub async fn attributes_by_dataset(
        &self,
        key: &str,
        array: Option<&str>,
    ) -> Result<Vec<(SmolStr, Attr)>> {
        Ok(self.set.attributes_by_dataset(array, key).await?)
    }

    /// Names of the live datasets the `atlas --where` expression `predicate`
    /// accepts, in [`names`](Self::names) order. A set first skips the members
    /// its manifest's summaries rule out.
    pub async fn select(&self, predicate: &str) -> Result<Vec<String>> {
        let predicate = Predicate::parse(predicate).map_err(QueryError::from)?;
        Ok(self.set.select(&predicate).await?)
    }

    /// Hides the named datasets: one mask write per member holding a live
    /// copy (and, in a set, one manifest commit); an older copy in an older
    /// member stays hidden.
    pub async fn delete(&self, names: &[String]) -> Result<Deleted> {
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let outcome = self.set.delete_datasets(&names).await?;
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

    /// Writes the dataset index beside every container (the lone one, or
    /// each member of a set); returns (containers, index bytes in total).
    pub async fn write_index(&self) -> Result<(usize, u64)> {
        let reports = self
            .set
            .write_index(&atlas::IndexOptions::default())
            .await?;
        Ok((reports.len(), reports.iter().map(|r| r.bytes).sum()))
    }

    /// Checks the collection (`deep`: also recomputes every array's
    /// statistics); in a set, every member as a collection of its own, each
    /// finding prefixed with the member's id.
    pub async fn verify(&self, deep: bool) -> Verified {
        let options = VerifyOptions::new().deep(deep);
        let mut out = Verified {
            sound: true,
            ..Verified::default()
        };
        let mut totals = [0u64; 7];
        let mut add = |report: &atlas::VerifyReport, out: &mut Verified, prefix: &str| {
            let c = &report.checked;
            let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
            let counts = [
                count(c.variables),
                count(c.data_segments),
                count(c.segments_opened),
                count(c.datasets),
                count(c.arrays),
                c.elements,
                count(c.hidden),
            ];
            for (total, n) in totals.iter_mut().zip(counts) {
                *total = total.saturating_add(n);
            }
            out.sound &= report.is_sound();
            out.problems
                .extend(report.problems().map(|f| format!("{prefix}{f}")));
            out.warnings
                .extend(report.warnings().map(|f| format!("{prefix}{f}")));
        };
        if self.set.is_set() {
            for member in self.set.members() {
                let prefix = format!("member {}: ", member.id);
                match self.set.member(&member.id).await {
                    Ok(atlas) => add(&atlas.verify(&options).await, &mut out, &prefix),
                    Err(e) => {
                        out.sound = false;
                        out.problems
                            .push(format!("{prefix}{}", atlas::ErrorReport::new(&e)));
                    }
                }
            }
        } else {
            if let Some(member) = self.set.lone_member() {
                add(&member.verify(&options).await, &mut out, "");
            }
        }
        let names = [
            "variables",
            "data_segments",
            "segments_opened",
            "datasets",
            "arrays",
            "elements",
            "hidden",
        ];
        out.checked = names.into_iter().zip(totals).collect();
        out
    }

    /// The catalogue `atlas catalogue` prints, as the facade builds it: one
    /// row per live dataset (those `predicate` selects, when given), columns
    /// for the `attributes` keys and `arrays` statistics asked for (`None`:
    /// all). Reads segment footers only. A set's has a `member` column (the
    /// member id) after `name`; a lone collection's is exactly the
    /// collection's, without it.
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
        Ok(self.set.catalogue(&options).await?)
    }
}

/// A long table on its way to Python: the library's stream, or (for a whole
/// `pyarrow.Table`) every batch already read, with the GIL released.
pub enum Table {
    /// Batches read as the consumer asks (an Arrow C stream's `get_next`).
    Lazy(TableStream),
    /// Every batch, and the schema.
    Read(atlas::SchemaRef, Vec<RecordBatch>),
}

impl Collection {
    /// The long table of `arrays` over the live datasets (those `predicate`
    /// selects), with `attributes` as columns, cut into batches of
    /// `rows_per_batch` rows; with `read_all`, every batch is read before
    /// this returns (so a failure is raised here, typed).
    pub async fn table(
        &self,
        arrays: Vec<String>,
        attributes: Vec<String>,
        predicate: Option<&str>,
        rows_per_batch: Option<usize>,
        read_all: bool,
        names: Option<Vec<String>>,
    ) -> Result<Table> {
        use futures::TryStreamExt;

        let mut options = TableOptions::new(arrays).attributes(attributes);
        if let Some(names) = names {
            options = options.datasets(names);
        }
        if let Some(text) = predicate {
            options = options.predicate(Predicate::parse(text).map_err(QueryError::from)?);
        }
        if let Some(rows) = rows_per_batch {
            options = options.rows_per_batch(rows);
        }
        let stream = self.set.table(&options).await?;
        if !read_all {
            return Ok(Table::Lazy(stream));
        }
        let schema = stream.schema();
        let batches: Vec<RecordBatch> = stream.try_collect().await?;
        Ok(Table::Read(schema, batches))
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
/// size, variables left out (`dataset/variable: type`), the mapping's notes
/// and the time variables it stored undecoded;
/// for an append to a set, the new member's id and the generation committed.
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
    /// `(dataset, variable, reason)` of each time variable stored undecoded.
    pub undecoded: Vec<(String, String, String)>,
    /// The member written, when appending to a set.
    pub member: Option<String>,
    /// The set's generation after the commit, when appending to a set.
    pub generation: Option<u64>,
}

/// A collection being written through atlas-netcdf's [`Feed`]: the mapping
/// and sink `atlas create` uses. Nothing is visible before [`Writer::finish`].
/// When appending, the collection is a new member of a set, committed by
/// `finish` after its container is written.
#[derive(Debug)]
pub struct Writer {
    feed: Mutex<Option<Feed>>,
    /// The set writer and the member's id, when appending to a set.
    set: Mutex<Option<(SetWriter, String)>>,
}

/// A member id no other writer picks: the time, and a nonce from the
/// process id, a counter and std's per-process random hash keys.
fn new_member_id() -> String {
    use std::hash::BuildHasher;
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let ms = i64::try_from(now.as_millis()).unwrap_or(i64::MAX);
    let nonce = std::hash::RandomState::new().hash_one((
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed),
        now.as_nanos(),
    ));
    atlas::member_id(ms, nonce)
}

/// Starts writing a collection at `location` (which must not hold one yet),
/// or, with `append`, a new member of the set at `location` (the set is
/// created by the commit if absent; a lone collection there is refused,
/// since a set manifest written over it would hide it).
pub async fn create(location: &str, request: &WriteRequest, append: bool) -> Result<Writer> {
    let options = request.ingest_options()?;
    let config = request.writer_config()?;
    let storage = request
        .storage
        .iter()
        .fold(StorageOptions::new(), |o, (k, v)| o.set(k, v))
        .anonymous(request.anonymous);
    let config = config.storage(storage.clone());
    if !append {
        let writer = AtlasWriter::create(location, &config).await?;
        return Ok(Writer {
            feed: Mutex::new(Some(Feed::new(writer, options))),
            set: Mutex::new(None),
        });
    }
    refuse_lone_collection(location, &storage).await?;
    let mut set = SetWriter::create(location, &config).await?;
    let member = set.add_member(&new_member_id()).await?;
    let id = member.id().to_owned();
    Ok(Writer {
        feed: Mutex::new(Some(Feed::new(member.into_writer(), options))),
        set: Mutex::new(Some((set, id))),
    })
}

/// `InvalidArgument` when `location` holds a lone collection's container.
async fn refuse_lone_collection(location: &str, storage: &StorageOptions) -> Result<()> {
    let resolved = atlas::Address::from(location)
        .resolve(storage, atlas::Access::Write)
        .await?;
    let container = resolved.object(atlas::CONTAINER_FILE);
    let exists = resolved.operator().exists(&container).await.map_err(|e| {
        CoreError::from(AtlasError::Io(atlas::IoError::from_opendal(
            e, "stat", &container,
        )))
    })?;
    if exists {
        return Err(CoreError::invalid(format!(
            "{} holds a lone collection, not a set: appending would hide it",
            resolved.display()
        )));
    }
    Ok(())
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

    /// Commits the collection (when appending: writes the member's
    /// container, then commits it to the set; a failure removes the member).
    pub async fn finish(&self) -> Result<Written> {
        let feed = self.take()?;
        let set = self.set.lock().unwrap_or_else(|e| e.into_inner()).take();
        let report = match feed.finish().await {
            Ok(report) => report,
            Err(e) => {
                if let Some((set, _)) = set {
                    drop(set.abort().await);
                }
                return Err(e.into());
            }
        };
        let mut written = Written {
            datasets: report.written,
            container_bytes: report.summary.container_bytes,
            skipped: report
                .skipped_variables
                .into_iter()
                .map(|s| (s.dataset, s.variable, s.dtype))
                .collect(),
            notes: report.notes,
            undecoded: report
                .undecoded
                .into_iter()
                .map(|u| (u.dataset, u.variable, u.reason.to_string()))
                .collect(),
            member: None,
            generation: None,
        };
        if let Some((mut set, id)) = set {
            if written.datasets.is_empty() {
                // Every file was skipped: no empty member is committed.
                set.discard_member(&id).await?;
                written.container_bytes = 0;
                return Ok(written);
            }
            if let Err(e) = set.record_member(&id).await {
                drop(set.abort().await);
                return Err(e.into());
            }
            // A failed commit removes the member itself (except when whether
            // the manifest was written is unknown; `atlas cleanup` then does).
            let outcome = set.commit().await?;
            written.member = Some(id);
            written.generation = Some(outcome.generation);
        }
        Ok(written)
    }

    /// Drops everything added: nothing is written at the destination (an
    /// appended member's objects are removed).
    pub async fn abort(&self) -> Result<()> {
        drop(self.feed.lock().unwrap_or_else(|e| e.into_inner()).take());
        let set = self.set.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some((set, _)) = set {
            set.abort().await?;
        }
        Ok(())
    }
}
