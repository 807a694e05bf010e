//! Many datasets per call, for the collection-wide xarray views
//! (`atlasds.open_dataset(..., layout="ragged" | "padded")`).
//!
//! Two functions: `shapes` gives, for some arrays and many datasets, each
//! dataset's shape of each array plus the dtype, fill value and dimension
//! names (one footer digest per array and member, no array bytes); `read_concat` reads one
//! array of many datasets through [`Atlas::read_many`] (each member's
//! segment prepared once, reads overlapped) into one flat buffer, so a dask
//! task covering a thousand datasets is one Python call, not a thousand.
//! `read_many` gives the same reads as one numpy array per dataset (the
//! bulk form of `Dataset.read`).
//! `partitions` says which datasets those tasks should cover: runs that
//! share a member and a data block of every array asked about, read off the
//! segment footers alone.

use std::collections::HashMap;

use atlas::{
    AnyArray, ArrayData, Atlas, AtlasError, DType, Dataset, Order, Region, SmolStr, Timestamp,
    Value,
};
use futures::StreamExt;
use ndarray::{Array1, Array2};
use numpy::{PyArray1, PyArray2};
use pyo3::IntoPyObjectExt;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::core::{self, CoreError};
use crate::{PyCollection, convert, run};

/// Reads in flight at once in `read_concat` (they share one segment and block cache).
const CONCURRENCY: usize = 32;

/// The live handles of `names`, in order (`DatasetNotFound` for a name that is not live).
async fn handles(set: &Atlas, names: &[String]) -> core::Result<Vec<Dataset>> {
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        out.push(set.dataset(name).await?);
    }
    Ok(out)
}

/// One array over many datasets, as `shapes` reports it.
struct ArrayShapes {
    /// The dtype name of the first dataset declaring the array (None: no dataset does).
    dtype: Option<String>,
    /// Its fill value.
    fill: Option<Value>,
    /// Its dimension names.
    dims: Vec<String>,
    /// Its stored chunk shape.
    chunk_shape: Vec<u64>,
    /// Each dataset's shape of the array; None where the dataset does not declare it.
    shapes: Vec<Option<Vec<u64>>>,
}

/// Each of `names`' shape of `array` (None where the dataset does not
/// declare it), and the layout of the first declaring one: one footer digest
/// per member (what `array_stats_by_dataset` reads), no array-format open,
/// then one footer lookup for the first dataset's fill value and dimensions.
async fn array_shapes(set: &Atlas, array: &str, names: &[String]) -> core::Result<ArrayShapes> {
    let rows = match set.array_shapes_by_dataset(array).await {
        Ok(rows) => rows,
        // No dataset holds the array: each name then fails or is None below.
        Err(AtlasError::ArrayNotFound { .. }) => Vec::new(),
        Err(e) => return Err(e.into()),
    };
    let found: HashMap<SmolStr, (DType, Vec<u64>)> = rows
        .into_iter()
        .map(|r| (r.dataset, (r.dtype, r.shape)))
        .collect();
    let mut out = ArrayShapes {
        dtype: None,
        fill: None,
        dims: Vec::new(),
        chunk_shape: Vec::new(),
        shapes: Vec::with_capacity(names.len()),
    };
    let mut first: Option<(&str, &DType)> = None;
    for name in names {
        let Some((dtype, shape)) = found.get(name.as_str()) else {
            // Not declared here, or not live: a name that is not live fails as a read would.
            set.dataset(name).await?;
            out.shapes.push(None);
            continue;
        };
        match first {
            None => first = Some((name, dtype)),
            Some((_, first_dtype)) if first_dtype != dtype => {
                return Err(CoreError::invalid(format!(
                    "{array:?} is {} in one dataset and {} in {name:?}: one variable cannot hold both",
                    first_dtype.display_name(),
                    dtype.display_name()
                )));
            }
            Some(_) => {}
        }
        out.shapes.push(Some(shape.clone()));
    }
    if let Some((name, dtype)) = first {
        let layout = set.dataset(name).await?.array_layout(array).await?;
        out.dtype = Some(dtype.display_name());
        out.fill = layout
            .fill_value
            .as_ref()
            .map(|f| f.clone().for_dtype(&layout.dtype));
        out.dims = layout.dimension_names;
        out.chunk_shape = layout.chunk_shape;
    }
    Ok(out)
}

/// `{array: {dtype, fill, dims, chunk_shape, ranks, shape}}` for each of
/// `arrays` over the datasets `names` (in order): `ranks` (int64, one per
/// dataset, -1 where it does not declare the array) and `shape` (int64,
/// one row per dataset, as many columns as the largest rank, each row its
/// dataset's shape padded with 1), and the dtype name, fill value, dimension
/// names and chunk shape of the first dataset declaring it (dtype None when
/// none does). Reads segment footers only: one footer per array and member,
/// no array-format open. Numpy arrays, not lists, so 30 000 datasets cross
/// into Python as two buffers.
#[pyfunction]
pub fn shapes<'py>(
    py: Python<'py>,
    collection: &PyCollection,
    arrays: Vec<String>,
    names: Vec<String>,
) -> PyResult<Bound<'py, PyDict>> {
    let set = collection.inner.set();
    // The arrays at once: their index columns (or footers) are read in the
    // same round trips rather than one array after another.
    let found = run(py, || async {
        futures::future::try_join_all(arrays.iter().map(|a| array_shapes(set, a, &names))).await
    })?;
    let dict = PyDict::new(py);
    for (array, found) in arrays.iter().zip(found) {
        let (ranks, matrix) = shape_matrix(&found.shapes);
        let entry = PyDict::new(py);
        entry.set_item("dtype", found.dtype)?;
        entry.set_item("fill", convert::optional_scalar(py, found.fill.as_ref())?)?;
        entry.set_item("dims", found.dims)?;
        entry.set_item("chunk_shape", found.chunk_shape)?;
        entry.set_item("ranks", PyArray1::from_vec(py, ranks))?;
        entry.set_item("shape", PyArray2::from_owned_array(py, matrix))?;
        dict.set_item(array, entry)?;
    }
    Ok(dict)
}

/// Per dataset its rank (-1: not declared), and its shape as one row of a
/// matrix as wide as the largest rank, padded with 1 (so a row's product is
/// the dataset's element count).
fn shape_matrix(shapes: &[Option<Vec<u64>>]) -> (Vec<i64>, Array2<i64>) {
    let width = shapes.iter().flatten().map(Vec::len).max().unwrap_or(0);
    let mut matrix = Array2::<i64>::ones((shapes.len(), width));
    let mut ranks = Vec::with_capacity(shapes.len());
    for (mut row, shape) in matrix.rows_mut().into_iter().zip(shapes) {
        match shape {
            None => ranks.push(-1),
            Some(shape) => {
                ranks.push(i64::try_from(shape.len()).unwrap_or(i64::MAX));
                for (cell, &n) in row.iter_mut().zip(shape) {
                    *cell = i64::try_from(n).unwrap_or(i64::MAX);
                }
            }
        }
    }
    (ranks, matrix)
}

/// The arrays of one `read_concat`, end to end.
struct Concat {
    /// Every read array flattened (row-major) and joined in the order given.
    values: Option<ArrayData>,
    /// Elements each dataset contributed (0 where it does not declare the array).
    counts: Vec<i64>,
    /// Each dataset's shape (None where it does not declare the array).
    shapes: Vec<Option<Vec<usize>>>,
    /// The first read's fill value (timestamps already have NaT in its place).
    fill: Option<Value>,
}

/// A timestamp array with its fill value replaced by `i64::MIN` (NaT), as `read` gives it.
fn with_nat(read: AnyArray) -> ArrayData {
    let fill = core::timestamp_fill(read.fill());
    match (read.into_data(), fill) {
        (ArrayData::Timestamp(a), Some(f)) => ArrayData::Timestamp(a.mapv(|t| {
            if t.nanos() == f {
                Timestamp(i64::MIN)
            } else {
                t
            }
        })),
        (other, _) => other,
    }
}

fn mismatch(array: &str, first: &DType, other: &ArrayData) -> CoreError {
    CoreError::invalid(format!(
        "{array:?} is {} in one dataset and {} in another: they cannot be joined",
        first.display_name(),
        other.dtype().display_name()
    ))
}

/// `parts` flattened and joined, all of the first part's element type.
fn join(array: &str, parts: Vec<ArrayData>, total: usize) -> core::Result<Option<ArrayData>> {
    let mut parts = parts.into_iter();
    let Some(first) = parts.next() else {
        return Ok(None);
    };
    let first_dtype = first.dtype();
    macro_rules! join_as {
        ($variant:ident, $first:expr) => {{
            let mut out = Vec::with_capacity(total);
            out.extend($first.into_iter());
            for part in parts {
                match part {
                    ArrayData::$variant(a) => out.extend(a.into_iter()),
                    other => return Err(mismatch(array, &first_dtype, &other)),
                }
            }
            ArrayData::$variant(Array1::from(out).into_dyn())
        }};
    }
    Ok(Some(match first {
        ArrayData::Int8(a) => join_as!(Int8, a),
        ArrayData::Int16(a) => join_as!(Int16, a),
        ArrayData::Int32(a) => join_as!(Int32, a),
        ArrayData::Int64(a) => join_as!(Int64, a),
        ArrayData::UInt8(a) => join_as!(UInt8, a),
        ArrayData::UInt16(a) => join_as!(UInt16, a),
        ArrayData::UInt32(a) => join_as!(UInt32, a),
        ArrayData::UInt64(a) => join_as!(UInt64, a),
        ArrayData::Float32(a) => join_as!(Float32, a),
        ArrayData::Float64(a) => join_as!(Float64, a),
        ArrayData::Timestamp(a) => join_as!(Timestamp, a),
        ArrayData::String(a) => join_as!(String, a),
        ArrayData::Binary(a) => join_as!(Binary, a),
        other => {
            return Err(CoreError::invalid(format!(
                "{array:?}: arrays of {} cannot be joined by this version of atlasds",
                other.dtype().display_name()
            )));
        }
    }))
}

async fn concat(set: &Atlas, array: &str, names: &[String]) -> core::Result<Concat> {
    let datasets = handles(set, names).await?;
    let declaring: Vec<Dataset> = datasets
        .iter()
        .filter(|d| d.array_meta(array).is_some())
        .cloned()
        .collect();
    let mut reads = set.read_many(declaring, array, Region::all(), CONCURRENCY, Order::AsGiven);
    let mut counts = Vec::with_capacity(datasets.len());
    let mut shapes = Vec::with_capacity(datasets.len());
    let mut parts = Vec::with_capacity(datasets.len());
    let mut fill = None;
    let mut total = 0usize;
    for dataset in &datasets {
        if dataset.array_meta(array).is_none() {
            counts.push(0);
            shapes.push(None);
            continue;
        }
        let Some((_, read)) = reads.next().await else {
            return Err(CoreError::invalid(format!(
                "reading {array:?} of {:?} gave no result",
                dataset.name()
            )));
        };
        let read = read?;
        if fill.is_none() {
            fill = read.fill().cloned();
        }
        shapes.push(Some(read.shape().to_vec()));
        let data = with_nat(read);
        let n = data.len();
        total = total.saturating_add(n);
        counts.push(i64::try_from(n).unwrap_or(i64::MAX));
        parts.push(data);
    }
    Ok(Concat {
        values: join(array, parts, total)?,
        counts,
        shapes,
        fill,
    })
}

/// `(values, counts, shapes, fill)`: `array` of every dataset in `names`
/// read in one call (GIL released, reads overlapped through
/// `Atlas::read_many`) and flattened end to end into one 1-D numpy array
/// of the stored dtype (timestamps with NaT where unwritten, as `read` gives);
/// `counts` (int64) says how many elements each dataset gave (0 where it does
/// not declare the array), `shapes` each dataset's shape (None there), and
/// `fill` the fill value the values hold where unwritten. `values` is None
/// when no dataset declares the array.
#[pyfunction]
pub fn read_concat<'py>(
    py: Python<'py>,
    collection: &PyCollection,
    array: &str,
    names: Vec<String>,
) -> PyResult<Bound<'py, PyAny>> {
    let set = collection.inner.set();
    let joined = run(py, || concat(set, array, &names))?;
    let values = match joined.values {
        Some(v) => convert::values(py, v)?,
        None => py.None().into_bound(py),
    };
    let counts = PyArray1::from_vec(py, joined.counts);
    let fill = match &joined.fill {
        Some(f) => {
            let scalar = match f {
                Value::Timestamp(_) => None,
                other => Some(other),
            };
            convert::optional_scalar(py, scalar)?
        }
        None => py.None().into_bound(py),
    };
    (values, counts, joined.shapes, fill).into_bound_py_any(py)
}

/// `array` of each of `names` (in order) as numpy arrays, as `read` gives
/// each one, read in one call with the GIL released through
/// [`Atlas::read_many`] (each member's segment prepared once, each block
/// decoded once, reads overlapped): the Python loop over thousands of
/// datasets pays one crossing per batch, not per dataset.
#[pyfunction]
pub fn read_many<'py>(
    py: Python<'py>,
    collection: &PyCollection,
    array: &str,
    names: Vec<String>,
) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let set = collection.inner.set();
    let reads = run(py, || async {
        let datasets = handles(set, &names).await?;
        let mut reads = set.read_many(datasets, array, Region::all(), CONCURRENCY, Order::AsGiven);
        let mut out = Vec::with_capacity(names.len());
        while let Some((_, read)) = reads.next().await {
            out.push(with_nat(read?));
        }
        Ok(out)
    })?;
    reads
        .into_iter()
        .map(|values| convert::values(py, values))
        .collect()
}

/// Where one dataset's arrays lie: its member (index into the set's views)
/// and, per array asked about, its first data block (None: no block).
type Place = (usize, Vec<Option<u32>>);

/// Each live dataset's place, for `arrays`: one footer read per array and
/// member (the digest `array_stats_by_dataset` reads), no data block.
async fn places(set: &Atlas, arrays: &[String]) -> core::Result<HashMap<String, Place>> {
    let mut out: HashMap<String, Place> = HashMap::new();
    for (member, (_, datasets)) in set.datasets_by_member().await?.into_iter().enumerate() {
        for ds in datasets {
            out.insert(ds.name().to_owned(), (member, vec![None; arrays.len()]));
        }
    }
    for (i, array) in arrays.iter().enumerate() {
        let rows = match set.array_blocks_by_dataset(array).await {
            Ok(rows) => rows,
            // No dataset holds the array: nothing to read.
            Err(AtlasError::ArrayNotFound { .. }) => continue,
            Err(e) => return Err(e.into()),
        };
        for row in rows {
            if let Some(slot) = out
                .get_mut(row.dataset.as_str())
                .and_then(|(_, blocks)| blocks.get_mut(i))
            {
                *slot = row.first_block;
            }
        }
    }
    Ok(out)
}

/// Whether a dataset at `next` can join a run whose newest blocks are
/// `run`: the same member, and per array no block newer than the run's
/// newest (or no block on either side). Writers fill blocks in dataset
/// order but may put a small array into the block before when it still has
/// room, so near a boundary the blocks go 0, 1, 0, 1: a straggler of an
/// older block stays in the run, only a new block starts one.
fn joins(run: &Place, next: &Place) -> bool {
    run.0 == next.0
        && run
            .1
            .iter()
            .zip(&next.1)
            .all(|(newest, b)| match (newest, b) {
                (Some(newest), Some(b)) => b <= newest,
                _ => true,
            })
}

/// A run this many times shorter than the run before it in the same member
/// is a sliver between two arrays' block boundaries, and joins that run.
const SLIVER: usize = 8;

/// `names` (in order) cut into `(start, stop)` ranges: a new range starts
/// where any array enters a new block (slivers between the boundaries of
/// different arrays join the range before); with `target`, ranges of one
/// member are merged while they hold at most `target` datasets, and a run
/// longer than that is cut into pieces of `target`.
fn cut(order: &[Place], target: Option<usize>) -> Vec<(usize, usize)> {
    let mut runs: Vec<(usize, usize, usize)> = Vec::new(); // (start, stop, member)
    let mut current: Option<Place> = None;
    for (i, place) in order.iter().enumerate() {
        match current.as_mut() {
            Some(run) if joins(run, place) => {
                for (newest, b) in run.1.iter_mut().zip(&place.1) {
                    *newest = (*newest).max(*b);
                }
                if let Some(last) = runs.last_mut() {
                    last.1 = i.saturating_add(1);
                }
            }
            _ => {
                current = Some(place.clone());
                runs.push((i, i.saturating_add(1), place.0));
            }
        }
    }
    let mut merged: Vec<(usize, usize, usize)> = Vec::with_capacity(runs.len());
    for (start, stop, member) in runs {
        match merged.last_mut() {
            Some(last)
                if last.2 == member
                    && stop.saturating_sub(start).saturating_mul(SLIVER)
                        <= last.1.saturating_sub(last.0) =>
            {
                last.1 = stop;
            }
            _ => merged.push((start, stop, member)),
        }
    }
    let runs = merged;
    let Some(target) = target.filter(|t| *t > 0) else {
        return runs.into_iter().map(|(a, b, _)| (a, b)).collect();
    };
    let mut out: Vec<(usize, usize, usize)> = Vec::new();
    for (start, stop, member) in runs {
        let mut start = start;
        while start < stop {
            let room = match out.last() {
                Some(&(a, b, m)) if m == member && b == start => {
                    target.saturating_sub(b.saturating_sub(a))
                }
                _ => 0,
            };
            if room > 0 {
                let end = stop.min(start.saturating_add(room));
                if let Some(last) = out.last_mut() {
                    last.1 = end;
                }
                start = end;
            } else {
                let end = stop.min(start.saturating_add(target));
                out.push((start, end, member));
                start = end;
            }
        }
    }
    out.into_iter().map(|(a, b, _)| (a, b)).collect()
}

/// `names` (in order) as `(start, stop)` index ranges that follow storage:
/// a range never spans two members of a set, and a new range starts where
/// any of `arrays` enters a new data block, so a task reading one range
/// reads its blocks and at most a neighbour's edge. With `target_datasets`, neighbouring ranges of
/// a member merge while they hold at most that many datasets, and a longer
/// one is cut into pieces of that size. Reads segment footers only (one per
/// array and member, none once read): no array data.
#[pyfunction]
#[pyo3(signature = (collection, arrays, names, target_datasets=None))]
pub fn partitions(
    py: Python<'_>,
    collection: &PyCollection,
    arrays: Vec<String>,
    names: Vec<String>,
    target_datasets: Option<usize>,
) -> PyResult<Vec<(usize, usize)>> {
    let set = collection.inner.set();
    let order = run(py, || async {
        let places = places(set, &arrays).await?;
        let mut order = Vec::with_capacity(names.len());
        for name in &names {
            match places.get(name) {
                Some(place) => order.push(place.clone()),
                None => {
                    // Not live: the error a read of it gives.
                    set.dataset(name).await?;
                    return Err(CoreError::invalid(format!(
                        "dataset {name:?} is live but in no member's view"
                    )));
                }
            }
        }
        Ok(order)
    })?;
    Ok(cut(&order, target_datasets))
}
