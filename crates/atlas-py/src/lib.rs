//! `atlasds._native`: the extension module under the `atlasds` Python package.
//!
//! Two classes, `_Collection` over an open collection (a set or a lone one)
//! and `_Writer` over one being written, and four functions. The Python package (`python/atlasds`)
//! wraps them in the public, typed API: indexing, pickling, DataFrames, the
//! xarray backend, `atlasds.write`. Every call that does I/O releases the GIL
//! and runs on the module's tokio runtime (see [`core`]); what a write hands
//! over is converted to Rust values first, under the GIL (see [`stored`]).

use std::collections::BTreeMap;
use std::future::Future;

use pyo3::IntoPyObjectExt;
use pyo3::prelude::*;
use pyo3::types::PyDict;

mod convert;
mod core;
mod ingest;
mod region;
mod stored;
mod views;

/// Runs the future `make` builds on the module's runtime with the GIL released.
fn run<T, Fut>(py: Python<'_>, make: impl FnOnce() -> Fut + Send) -> PyResult<T>
where
    T: Send,
    Fut: Future<Output = core::Result<T>>,
{
    py.detach(|| core::block_on(make()).and_then(|r| r))
        .map_err(convert::py_err)
}

/// An open collection (the Python package's `Collection` wraps it).
#[pyclass(name = "_Collection", module = "atlasds._native", frozen)]
struct PyCollection {
    inner: core::Collection,
}

#[pymethods]
impl PyCollection {
    /// Live dataset names: a set's members oldest commit first, each in
    /// ordinal order. A set's members are opened on first use.
    fn names(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        let names = run(py, || self.inner.names())?;
        Ok(names.into_iter().map(String::from).collect())
    }

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        run(py, || self.inner.len())
    }

    /// Whether a live dataset has this name.
    fn contains(&self, py: Python<'_>, name: &str) -> PyResult<bool> {
        run(py, || self.inner.contains(name))
    }

    /// Array names over the whole collection.
    fn array_names(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        run(py, || self.inner.array_names())
    }

    /// Ordinal of a live dataset (within its member, in a set).
    fn ordinal(&self, py: Python<'_>, dataset: &str) -> PyResult<u32> {
        run(py, || self.inner.ordinal(dataset))
    }

    /// Arrays a dataset declares.
    fn arrays(&self, py: Python<'_>, dataset: &str) -> PyResult<Vec<String>> {
        run(py, || self.inner.arrays(dataset))
    }

    /// Whether a set manifest was found (false: a lone collection). No request.
    fn is_set(&self) -> bool {
        self.inner.is_set()
    }

    /// The set manifest's generation; None for a lone collection. No request.
    fn generation(&self) -> Option<u64> {
        self.inner.generation()
    }

    /// The committed members, oldest commit first, as dicts (id, path,
    /// datasets_live, datasets_total, bytes, created_unix_ms); empty for a
    /// lone collection. No request: the manifest says it.
    fn members<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        self.inner
            .members()
            .into_iter()
            .map(|m| {
                let d = PyDict::new(py);
                d.set_item("id", m.id)?;
                d.set_item("path", m.path)?;
                d.set_item("datasets_live", m.datasets_live)?;
                d.set_item("datasets_total", m.datasets_total)?;
                d.set_item("bytes", m.bytes)?;
                d.set_item("created_unix_ms", m.created_unix_ms)?;
                Ok(d)
            })
            .collect()
    }

    /// What a handle opened with `count_requests` asked storage for (None
    /// otherwise), as `Collection.request_stats` returns it: a dict of
    /// requests by kind, bytes read, and `read_log`, every read as `(path,
    /// offset, length)` (length None: to the end; offset None: the last
    /// `length` bytes). With `reset`, counting starts again from zero after
    /// this snapshot.
    #[pyo3(signature = (reset=false))]
    fn request_stats<'py>(&self, py: Python<'py>, reset: bool) -> PyResult<Bound<'py, PyAny>> {
        let Some(stats) = self.inner.requests() else {
            return Ok(py.None().into_bound(py));
        };
        let counts = stats.snapshot();
        let log = stats.read_log();
        if reset {
            stats.reset();
        }
        let d = PyDict::new(py);
        d.set_item("reads", counts.reads)?;
        d.set_item("stats", counts.stats)?;
        d.set_item("lists", counts.lists)?;
        d.set_item("writes", counts.writes)?;
        d.set_item("bytes_read", counts.bytes_read)?;
        d.set_item("requests", counts.requests())?;
        let reads: Vec<(String, Option<u64>, Option<u64>)> = log
            .into_iter()
            .map(|r| {
                let offset = (!r.range.is_suffix()).then(|| r.range.offset());
                (r.path, offset, r.range.size())
            })
            .collect();
        d.set_item("read_log", reads)?;
        d.into_bound_py_any(py)
    }

    /// Names of the live datasets an `atlas --where` expression accepts.
    fn select(&self, py: Python<'_>, predicate: &str) -> PyResult<Vec<String>> {
        run(py, || self.inner.select(predicate))
    }

    /// Dataset attributes as `[(key, dtype, value)]`.
    fn attrs<'py>(&self, py: Python<'py>, dataset: &str) -> PyResult<Bound<'py, PyAny>> {
        let attrs = run(py, || self.inner.attributes(dataset))?;
        convert::attrs(py, &attrs)
    }

    /// Attributes of one array as `[(key, dtype, value)]`.
    fn array_attrs<'py>(
        &self,
        py: Python<'py>,
        dataset: &str,
        array: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let attrs = run(py, || self.inner.array_attributes(dataset, array))?;
        convert::attrs(py, &attrs)
    }

    /// Layout of one array as a dict: dtype, shape, chunk_shape, dims, fill.
    fn layout<'py>(
        &self,
        py: Python<'py>,
        dataset: &str,
        array: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let layout = run(py, || self.inner.layout(dataset, array))?;
        convert::layout(py, layout)
    }

    /// `(attrs, [(array, layout, array_attrs)])` of one dataset in one call
    /// (attributes as `attrs` gives them, layouts as `layout` does).
    fn describe<'py>(&self, py: Python<'py>, dataset: &str) -> PyResult<Bound<'py, PyAny>> {
        let described = run(py, || self.inner.describe(dataset))?;
        described_py(py, described)
    }

    /// `describe` of each of `datasets`, in order, in one call (GIL
    /// released once): what a DataTree of many nodes needs.
    fn describe_many<'py>(
        &self,
        py: Python<'py>,
        datasets: Vec<String>,
    ) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let described = run(py, || async {
            let mut out = Vec::with_capacity(datasets.len());
            for dataset in &datasets {
                out.push(self.inner.describe(dataset).await?);
            }
            Ok(out)
        })?;
        described.into_iter().map(|d| described_py(py, d)).collect()
    }

    /// Reads what numpy basic indexing `key` names (ints, slices, one `...`,
    /// or a tuple of them; None: everything) as a numpy array. The key is
    /// checked against the array's shape here, in Rust, for every caller.
    #[pyo3(signature = (dataset, array, key=None))]
    fn read<'py>(
        &self,
        py: Python<'py>,
        dataset: &str,
        array: &str,
        key: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let key = key.map(convert::key).transpose()?;
        let values = run(py, || self.inner.read(dataset, array, key.as_deref()))?;
        convert::values(py, values)
    }

    /// Statistics `(count, nulls, min, max)` of one dataset's array, or folded
    /// over the collection when `dataset` is None; None where none are recorded.
    #[pyo3(signature = (array, dataset=None))]
    fn stats<'py>(
        &self,
        py: Python<'py>,
        array: &str,
        dataset: Option<&str>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let stats = match dataset {
            Some(d) => run(py, || self.inner.dataset_stats(d, array))?,
            None => run(py, || self.inner.stats(array))?,
        };
        match stats {
            Some(s) => convert::stats(py, &s),
            None => Ok(py.None().into_bound(py)),
        }
    }

    /// `[(name, ordinal, count, nulls, min, max)]` for every live dataset declaring `array`.
    fn stats_by_dataset<'py>(&self, py: Python<'py>, array: &str) -> PyResult<Bound<'py, PyAny>> {
        let rows = run(py, || self.inner.stats_by_dataset(array))?;
        let mut out = Vec::with_capacity(rows.len());
        for (name, ordinal, s) in &rows {
            out.push((
                name.as_str(),
                *ordinal,
                s.count,
                s.nulls,
                convert::optional_scalar(py, s.min.as_ref())?,
                convert::optional_scalar(py, s.max.as_ref())?,
            ));
        }
        out.into_bound_py_any(py)
    }

    /// `[(name, dtype, value)]` of attribute `key` for every live dataset declaring it.
    #[pyo3(signature = (key, array=None))]
    fn attrs_by_dataset<'py>(
        &self,
        py: Python<'py>,
        key: &str,
        array: Option<&str>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let rows = run(py, || self.inner.attributes_by_dataset(key, array))?;
        let mut out = Vec::with_capacity(rows.len());
        for (name, value) in &rows {
            out.push((
                name.as_str(),
                core::attr_dtype(value),
                convert::attr(py, value)?,
            ));
        }
        out.into_bound_py_any(py)
    }

    /// Hides datasets (one mask write per member holding a live copy, and in
    /// a set one manifest commit); returns `(count, guarantee)`, the
    /// guarantee being `conditional`, `locked` or `last_writer_wins`.
    fn delete(&self, py: Python<'_>, names: Vec<String>) -> PyResult<(usize, &'static str)> {
        let done = run(py, || self.inner.delete(&names))?;
        Ok((done.count, done.guarantee))
    }

    /// Writes the dataset index beside every container; returns
    /// `(containers, bytes)`.
    fn write_index(&self, py: Python<'_>) -> PyResult<(usize, u64)> {
        run(py, || self.inner.write_index())
    }

    /// Checks the collection; returns `(sound, problems, warnings, {checked: count})`.
    #[pyo3(signature = (deep=false))]
    fn verify<'py>(&self, py: Python<'py>, deep: bool) -> PyResult<Bound<'py, PyAny>> {
        let report = run(py, || async { Ok(self.inner.verify(deep).await) })?;
        let checked = PyDict::new(py);
        for (name, count) in &report.checked {
            checked.set_item(name, count)?;
        }
        (report.sound, report.problems, report.warnings, checked).into_bound_py_any(py)
    }

    /// The catalogue `atlas catalogue` prints (same columns, same types), as
    /// an object exporting it through the Arrow C stream interface.
    #[pyo3(signature = (attributes=None, arrays=None, predicate=None))]
    fn catalogue(
        &self,
        py: Python<'_>,
        attributes: Option<Vec<String>>,
        arrays: Option<Vec<String>>,
        predicate: Option<&str>,
    ) -> PyResult<ArrowStream> {
        let batch = run(py, || self.inner.catalogue(attributes, arrays, predicate))?;
        Ok(ArrowStream { batch })
    }

    /// The long table `atlas export` writes (one row per element of `arrays`,
    /// `attributes` as columns), as an object exporting it through the Arrow
    /// C stream interface. With `read_all`, every batch is read here (GIL
    /// released); else each is read as the consumer pulls it. `names` keeps
    /// only those datasets (one partition of the table).
    #[pyo3(signature = (arrays, attributes=Vec::new(), predicate=None, rows_per_batch=None, read_all=true, names=None))]
    #[allow(clippy::too_many_arguments)]
    fn table(
        &self,
        py: Python<'_>,
        arrays: Vec<String>,
        attributes: Vec<String>,
        predicate: Option<&str>,
        rows_per_batch: Option<usize>,
        read_all: bool,
        names: Option<Vec<String>>,
    ) -> PyResult<TableStreamPy> {
        let table = run(py, || {
            self.inner.table(
                arrays,
                attributes,
                predicate,
                rows_per_batch,
                read_all,
                names,
            )
        })?;
        Ok(TableStreamPy {
            table: std::sync::Mutex::new(Some(table)),
        })
    }
}

/// `(attrs, [(array, layout, array_attrs)])` of one described dataset.
fn described_py(py: Python<'_>, described: core::Described) -> PyResult<Bound<'_, PyAny>> {
    let mut arrays = Vec::with_capacity(described.arrays.len());
    for (name, layout, attrs) in described.arrays {
        arrays.push((
            name,
            convert::layout(py, layout)?,
            convert::attrs(py, &attrs)?,
        ));
    }
    (convert::attrs(py, &described.attrs)?, arrays).into_bound_py_any(py)
}

/// A long table handed to Python through the Arrow PyCapsule interface, once:
/// its C stream can be taken one time (a lazy one reads as it is consumed).
#[pyclass(name = "_TableStream", module = "atlasds._native", frozen)]
struct TableStreamPy {
    table: std::sync::Mutex<Option<core::Table>>,
}

#[pymethods]
impl TableStreamPy {
    /// The C stream of the table in a PyCapsule (a requested schema is ignored).
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, pyo3::types::PyCapsule>> {
        drop(requested_schema);
        let table = self
            .table
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
            .ok_or_else(|| {
                convert::py_err(core::CoreError::invalid(
                    "this table's stream was already taken",
                ))
            })?;
        convert::table_capsule(py, table)
    }
}

/// A table handed to Python through the Arrow PyCapsule interface
/// (`pyarrow.RecordBatchReader.from_stream` and any other consumer read it
/// without a copy of the values through Python objects).
#[pyclass(name = "_ArrowStream", module = "atlasds._native", frozen)]
struct ArrowStream {
    batch: arrow_array::RecordBatch,
}

#[pymethods]
impl ArrowStream {
    /// A fresh C stream of the table in a PyCapsule; a requested schema is
    /// ignored (the interface allows it), so consumers cast if they must.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, pyo3::types::PyCapsule>> {
        drop(requested_schema);
        convert::stream_capsule(py, self.batch.clone())
    }

    fn __len__(&self) -> usize {
        self.batch.num_rows()
    }
}

/// Opens the collection or collection set at a path or URL (`file://`,
/// `s3://`, `gs://`, `az://`, `http(s)://`). `storage` holds OpenDAL configuration keys of the backend;
/// `anonymous` sends unsigned requests; the byte counts override the reader's
/// defaults. With `cached`, reuses this process's open handle of the same
/// location and options. With `count_requests`, the handle counts the
/// requests it sends (`request_stats`). Without `dataset_index`, every
/// answer comes from the segment footers, as without an index.
#[pyfunction]
#[pyo3(signature = (
    location,
    cached=false,
    storage=Vec::new(),
    anonymous=false,
    block_cache_bytes=None,
    segment_prefetch_bytes=None,
    count_requests=false,
    dataset_index=true,
))]
#[allow(clippy::too_many_arguments)]
fn open(
    py: Python<'_>,
    location: &str,
    cached: bool,
    storage: Vec<(String, String)>,
    anonymous: bool,
    block_cache_bytes: Option<u64>,
    segment_prefetch_bytes: Option<u64>,
    count_requests: bool,
    dataset_index: bool,
) -> PyResult<PyCollection> {
    let request = core::OpenRequest {
        storage,
        anonymous,
        block_cache_bytes,
        segment_prefetch_bytes,
        count_requests,
        dataset_index,
    };
    let inner = run(py, || core::open(location, &request, cached))?;
    Ok(PyCollection { inner })
}

/// A collection being written (the Python package's `atlasds.write` drives it).
#[pyclass(name = "_Writer", module = "atlasds._native", frozen)]
struct PyWriter {
    inner: core::Writer,
}

#[pymethods]
impl PyWriter {
    /// Adds dataset `name` from its stored form (see the `stored` module):
    /// converted under the GIL, then mapped and written with the GIL released.
    fn add(&self, py: Python<'_>, name: &str, groups: &Bound<'_, PyAny>) -> PyResult<()> {
        let file = stored::file(groups)?;
        run(py, || self.inner.add(name, file))
    }

    /// Commits the collection (or the set member); returns `(datasets,
    /// container_bytes, skipped, notes, member, generation, undecoded)`,
    /// `member` and `generation` None unless appending to a set.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let written = run(py, || self.inner.finish())?;
        (
            written.datasets,
            written.container_bytes,
            written.skipped,
            written.notes,
            written.member,
            written.generation,
            written.undecoded,
        )
            .into_bound_py_any(py)
    }

    /// Drops everything added; nothing appears at the destination (an
    /// appended member's objects are removed).
    fn abort(&self, py: Python<'_>) -> PyResult<()> {
        run(py, || self.inner.abort())
    }
}

/// Starts a collection at a path or URL that holds none yet, or with `append`
/// a new member of the set there (created by the commit if absent). `decode`
/// is `cf` or `raw`, `codec` `zstd`, `lz4` or `none`; `chunks` maps array
/// names to stored chunk shapes; `jobs` datasets compress at once.
#[pyfunction]
#[pyo3(signature = (
    location,
    storage=Vec::new(),
    anonymous=false,
    decode="cf".to_owned(),
    codec="zstd".to_owned(),
    zstd_level=None,
    chunks=BTreeMap::new(),
    jobs=1,
    skip_unsupported=false,
    append=false,
))]
#[allow(clippy::too_many_arguments)]
fn create(
    py: Python<'_>,
    location: &str,
    storage: Vec<(String, String)>,
    anonymous: bool,
    decode: String,
    codec: String,
    zstd_level: Option<i32>,
    chunks: BTreeMap<String, Vec<u64>>,
    jobs: usize,
    skip_unsupported: bool,
    append: bool,
) -> PyResult<PyWriter> {
    let request = core::WriteRequest {
        storage,
        anonymous,
        decode,
        codec,
        zstd_level,
        chunks,
        jobs: jobs.max(1),
        skip_unsupported,
    };
    let inner = run(py, || core::create(location, &request, append))?;
    Ok(PyWriter { inner })
}

/// How many collections this process has opened (cache hits excluded).
#[pyfunction]
fn open_count() -> u64 {
    core::open_count()
}

/// Forgets this process's cached collections.
#[pyfunction]
fn clear_cache() {
    core::clear_cache();
}

/// The extension module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyCollection>()?;
    m.add_class::<PyWriter>()?;
    m.add_class::<ArrowStream>()?;
    m.add_class::<TableStreamPy>()?;
    m.add_function(wrap_pyfunction!(open, m)?)?;
    m.add_function(wrap_pyfunction!(create, m)?)?;
    m.add_function(wrap_pyfunction!(open_count, m)?)?;
    m.add_function(wrap_pyfunction!(clear_cache, m)?)?;
    m.add_function(wrap_pyfunction!(views::shapes, m)?)?;
    m.add_function(wrap_pyfunction!(views::read_concat, m)?)?;
    m.add_function(wrap_pyfunction!(views::read_many, m)?)?;
    m.add_function(wrap_pyfunction!(ingest::run_member_ids, m)?)?;
    m.add_function(wrap_pyfunction!(ingest::discover, m)?)?;
    m.add_function(wrap_pyfunction!(ingest::ingest_member, m)?)?;
    m.add_function(wrap_pyfunction!(ingest::order_files, m)?)?;
    m.add_function(wrap_pyfunction!(ingest::commit_members, m)?)?;
    m.add_function(wrap_pyfunction!(ingest::remove_members, m)?)?;
    m.add_function(wrap_pyfunction!(ingest::sync, m)?)?;
    m.add_function(wrap_pyfunction!(views::partitions, m)?)?;
    Ok(())
}
