//! Every call the binding makes into the `atlas` crate, and nothing Python.
//!
//! The facade is being redesigned (owned dataset handles, a region type, one
//! dtype-dispatching read); keeping all of it here means that swap touches this
//! file only. The rest of the binding sees plain Rust values: [`Values`],
//! [`Scalar`], [`Stats`], [`Layout`], [`Catalogue`] and [`CoreError`].
//!
//! It also owns the process's tokio runtime and the per-process cache of open
//! collections that lets a dask worker open a collection once, not once per task.

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use atlas::{
    Atlas, AtlasError, DType, FillValue, IoErrorKind, StatValue, TimestampNs, WriteGuarantee,
};
use ndarray::ArrayD;
use tokio::runtime::Runtime;

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

impl CoreError {
    /// An `InvalidArgument` with this message.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self {
            class: ErrorClass::InvalidArgument,
            message: message.into(),
        }
    }
}

impl From<AtlasError> for CoreError {
    fn from(e: AtlasError) -> Self {
        let class = match &e {
            AtlasError::NotAnAtlasCollection { .. } | AtlasError::UnsupportedVersion { .. } => {
                ErrorClass::NotAnAtlasCollection
            }
            AtlasError::CorruptCollection { .. } | AtlasError::CorruptMask { .. } => {
                ErrorClass::CorruptCollection
            }
            AtlasError::DatasetNotFound { .. } | AtlasError::ArrayNotFound { .. } => {
                ErrorClass::NotFound
            }
            AtlasError::Io(io) if io.kind() == IoErrorKind::NotFound => ErrorClass::NotFound,
            AtlasError::Io(io) => ErrorClass::Storage {
                retryable: io.is_transient(),
            },
            _ => ErrorClass::InvalidArgument,
        };
        Self {
            class,
            message: e.to_string(),
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

/// Open collections by location, and the process they were opened in.
type Cached = (u32, HashMap<String, Arc<Atlas>>);

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

/// The local directory a location names: a path, or a `file://` URL.
fn local_path(location: &str) -> Result<PathBuf> {
    if let Some(rest) = location.strip_prefix("file://") {
        // file:///abs/path and file://localhost/abs/path
        let path = rest.strip_prefix("localhost").unwrap_or(rest);
        if !path.starts_with('/') {
            return Err(CoreError::invalid(format!(
                "{location}: a file:// URL must hold an absolute path"
            )));
        }
        return Ok(PathBuf::from(path));
    }
    if location.contains("://") {
        return Err(CoreError::invalid(format!(
            "{location}: only local paths and file:// URLs can be opened so far"
        )));
    }
    Ok(PathBuf::from(location))
}

/// An open collection: the shared library handle and where it came from.
#[derive(Debug, Clone)]
pub struct Collection {
    atlas: Arc<Atlas>,
}

/// Opens the collection at `location` (a directory or a `file://` URL). With
/// `cached`, a collection this process already opened at the same location is
/// reused and a new one is remembered.
pub async fn open(location: &str, cached: bool) -> Result<Collection> {
    let key = location.to_owned();
    if cached {
        let guard = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((pid, map)) = guard.as_ref()
            && *pid == std::process::id()
            && let Some(atlas) = map.get(&key)
        {
            return Ok(Collection {
                atlas: Arc::clone(atlas),
            });
        }
    }
    let atlas = Arc::new(Atlas::open_path(local_path(location)?).await?);
    OPENS.fetch_add(1, Ordering::Relaxed);
    if cached {
        let mut guard = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        let pid = std::process::id();
        if guard.as_ref().is_none_or(|(owner, _)| *owner != pid) {
            *guard = Some((pid, HashMap::new()));
        }
        if let Some((_, map)) = guard.as_mut() {
            map.insert(key, Arc::clone(&atlas));
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

/// The values of one read, in the element type they are stored as. Timestamps
/// are nanoseconds with the fill value replaced by `i64::MIN` (numpy's NaT).
#[derive(Debug)]
#[allow(missing_docs)]
pub enum Values {
    I8(ArrayD<i8>),
    I16(ArrayD<i16>),
    I32(ArrayD<i32>),
    I64(ArrayD<i64>),
    U8(ArrayD<u8>),
    U16(ArrayD<u16>),
    U32(ArrayD<u32>),
    U64(ArrayD<u64>),
    F32(ArrayD<f32>),
    F64(ArrayD<f64>),
    Timestamp(ArrayD<i64>),
    Str(ArrayD<String>),
    Bytes(ArrayD<Vec<u8>>),
}

/// One row per live dataset: names, ordinals, every dataset attribute and the
/// statistics of every array (`None` where a dataset lacks it).
#[derive(Debug, Default)]
pub struct Catalogue {
    /// Live dataset names, in ordinal order.
    pub names: Vec<String>,
    /// Their ordinals.
    pub ordinals: Vec<u32>,
    /// Per dataset attribute key (first-seen order), the value of each row.
    pub attributes: Vec<(String, Vec<Option<Attr>>)>,
    /// Per array, the statistics of each row.
    pub stats: Vec<(String, Vec<Option<Stats>>)>,
}

/// What a delete did: how many datasets it hid, and the guarantee the mask write had.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deleted {
    /// Datasets named in the request (hidden now, whether or not they were before).
    pub count: usize,
    /// Whether a concurrent delete could have been lost.
    pub conditional: bool,
}

/// The dtype name of an attribute value (`float32`, `list<int32>`, ...), which
/// the Python layer uses to give numeric scalars their own numpy type.
pub fn attr_dtype(value: &Attr) -> String {
    value.dtype().display_name()
}

fn scalar_of_stat(value: &StatValue, dtype: &DType) -> Scalar {
    match value {
        StatValue::Int(v) => Scalar::Int(*v),
        StatValue::UInt(v) => Scalar::UInt(*v),
        StatValue::Float(v) => Scalar::Float(*v),
        StatValue::TimestampNs(v) => Scalar::Timestamp(*v),
        StatValue::Bytes(b) => match (dtype, std::str::from_utf8(b)) {
            (DType::String, Ok(s)) => Scalar::Str(s.to_owned()),
            _ => Scalar::Bytes(b.clone()),
        },
    }
}

fn scalar_of_fill(value: &FillValue, dtype: &DType) -> Scalar {
    match (value, dtype) {
        (FillValue::Int(v) | FillValue::TimestampNs(v), DType::TimestampNs) => {
            Scalar::Timestamp(*v)
        }
        (FillValue::Bool(v), _) => Scalar::Bool(*v),
        (FillValue::Int(v), _) => Scalar::Int(*v),
        (FillValue::UInt(v), _) => Scalar::UInt(*v),
        (FillValue::Float(v), _) => Scalar::Float(*v),
        (FillValue::String(v), _) => Scalar::Str(v.clone()),
        (FillValue::TimestampNs(v), _) => Scalar::Timestamp(*v),
    }
}

fn stats_of(s: &atlas::ArrayStats, dtype: &DType) -> Stats {
    Stats {
        count: s.row_count,
        nulls: s.null_count,
        min: s.min.as_ref().map(|v| scalar_of_stat(v, dtype)),
        max: s.max.as_ref().map(|v| scalar_of_stat(v, dtype)),
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
            .list_datasets()
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
        self.atlas.dataset_exists(name)
    }

    /// Distinct array names over the whole collection.
    pub fn array_names(&self) -> Vec<String> {
        self.atlas
            .list_arrays()
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
                .map(|f| scalar_of_fill(f, &layout.dtype)),
            shape: layout.shape,
            chunk_shape: layout.chunk_shape,
            dims: layout.dimension_names,
        })
    }

    /// Reads the region of `array` starting at `start` with extent `shape`
    /// (both empty: everything), in the stored element type.
    pub async fn read(
        &self,
        dataset: &str,
        array: &str,
        start: &[u64],
        shape: &[u64],
    ) -> Result<Values> {
        let view = self.atlas.dataset(dataset)?;
        let dtype = self.dtype(dataset, array)?;
        macro_rules! read {
            ($t:ty) => {
                view.read_array::<$t>(array, start, shape).await?
            };
        }
        // Temporary: the facade's `read_any` will replace this dispatch.
        Ok(match dtype {
            DType::Int8 => Values::I8(read!(i8)),
            DType::Int16 => Values::I16(read!(i16)),
            DType::Int32 => Values::I32(read!(i32)),
            DType::Int64 => Values::I64(read!(i64)),
            DType::UInt8 => Values::U8(read!(u8)),
            DType::UInt16 => Values::U16(read!(u16)),
            DType::UInt32 => Values::U32(read!(u32)),
            DType::UInt64 => Values::U64(read!(u64)),
            DType::Float32 => Values::F32(read!(f32)),
            DType::Float64 => Values::F64(read!(f64)),
            DType::String => Values::Str(read!(String)),
            DType::Binary => Values::Bytes(read!(Vec<u8>)),
            DType::TimestampNs => {
                let fill = match view.array_layout(array).await?.fill_value {
                    Some(FillValue::TimestampNs(v) | FillValue::Int(v)) => Some(v),
                    _ => None,
                };
                let raw: ArrayD<TimestampNs> = read!(TimestampNs);
                Values::Timestamp(raw.mapv(|t| if Some(t.0) == fill { i64::MIN } else { t.0 }))
            }
            other => {
                return Err(CoreError::invalid(format!(
                    "array {array:?} of dataset {dataset:?} holds {other}, which has no numpy mapping yet"
                )));
            }
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
            conditional: outcome.guarantee == WriteGuarantee::Conditional,
        })
    }

    /// The catalogue: one segment open per variable, whatever the number of datasets.
    pub async fn catalogue(&self) -> Result<Catalogue> {
        let mut out = Catalogue::default();
        let mut keys: Vec<String> = Vec::new();
        let mut seen_schemas = std::collections::HashSet::new();
        for view in self.atlas.datasets() {
            out.names.push(view.name().to_owned());
            out.ordinals.push(view.ordinal());
            if seen_schemas.insert(view.schema().index()) {
                for (key, _) in view.schema().attributes() {
                    if !keys.iter().any(|k| k == key) {
                        keys.push(key.to_owned());
                    }
                }
            }
        }
        let row: HashMap<&str, usize> = out
            .names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.as_str(), i))
            .collect();
        let rows = out.names.len();
        for key in keys {
            let mut column: Vec<Option<Attr>> = vec![None; rows];
            for (name, value) in self.atlas.attributes_by_dataset(None, &key).await? {
                if let Some(slot) = row.get(name.as_str()).and_then(|&i| column.get_mut(i)) {
                    *slot = Some(value);
                }
            }
            out.attributes.push((key, column));
        }
        for array in self.atlas.list_arrays() {
            let mut column: Vec<Option<Stats>> = vec![None; rows];
            for stat in self.atlas.array_stats_by_dataset(array).await? {
                let Some(&i) = row.get(stat.dataset.as_str()) else {
                    continue;
                };
                let dtype = self
                    .atlas
                    .dataset(&stat.dataset)
                    .ok()
                    .and_then(|v| v.array_meta(array).map(|m| m.dtype().clone()))
                    .unwrap_or(DType::Binary);
                if let Some(slot) = column.get_mut(i) {
                    *slot = Some(stats_of(&stat.stats, &dtype));
                }
            }
            out.stats.push((array.to_owned(), column));
        }
        Ok(out)
    }
}
