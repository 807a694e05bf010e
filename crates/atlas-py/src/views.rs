//! Many datasets per call, for the collection-wide xarray views
//! (`atlasds.open_dataset(..., layout="ragged" | "padded")`).
//!
//! Two functions: `shapes` gives, for some arrays and many datasets, each
//! dataset's shape of each array plus the dtype, fill value and dimension
//! names (one segment open per array, no array bytes); `read_concat` reads one
//! array of many datasets through [`AtlasSet::read_many`] (each member's
//! segment prepared once, reads overlapped) into one flat buffer, so a dask
//! task covering a thousand datasets is one Python call, not a thousand.

use atlas::{AnyArray, ArrayData, AtlasSet, DType, Dataset, FillValue, Order, Region, Timestamp};
use futures::StreamExt;
use ndarray::Array1;
use numpy::PyArray1;
use pyo3::IntoPyObjectExt;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::core::{self, CoreError, Scalar};
use crate::{PyCollection, convert, run};

/// Reads in flight at once in `read_concat` (they share one segment and block cache).
const CONCURRENCY: usize = 32;

/// The live handles of `names`, in order (`DatasetNotFound` for a name that is not live).
async fn handles(set: &AtlasSet, names: &[String]) -> core::Result<Vec<Dataset>> {
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
    fill: Option<Scalar>,
    /// Its dimension names.
    dims: Vec<String>,
    /// Its stored chunk shape.
    chunk_shape: Vec<u64>,
    /// Each dataset's shape of the array; None where the dataset does not declare it.
    shapes: Vec<Option<Vec<u64>>>,
}

async fn array_shapes(datasets: &[Dataset], array: &str) -> core::Result<ArrayShapes> {
    let mut out = ArrayShapes {
        dtype: None,
        fill: None,
        dims: Vec::new(),
        chunk_shape: Vec::new(),
        shapes: Vec::with_capacity(datasets.len()),
    };
    // Opening the whole segment once (what an attribute read does) beats a
    // footer lookup per dataset; the attributes themselves are not needed.
    if let Some(first) = datasets.iter().find(|d| d.array_meta(array).is_some()) {
        first.array_attributes(array).await?;
    }
    for dataset in datasets {
        if dataset.array_meta(array).is_none() {
            out.shapes.push(None);
            continue;
        }
        let layout = dataset.array_layout(array).await?;
        let dtype = layout.dtype.display_name();
        if let Some(first) = out.dtype.as_ref().filter(|d| **d != dtype) {
            return Err(CoreError::invalid(format!(
                "{array:?} is {first} in one dataset and {dtype} in {:?}: one variable cannot hold both",
                dataset.name()
            )));
        }
        if out.dtype.is_none() {
            out.dtype = Some(dtype);
            out.fill = layout
                .fill_value
                .as_ref()
                .and_then(|f| core::scalar_of_fill(f, &layout.dtype));
            out.dims = layout.dimension_names.clone();
            out.chunk_shape = layout.chunk_shape.clone();
        }
        out.shapes.push(Some(layout.shape));
    }
    Ok(out)
}

/// `{array: {dtype, fill, dims, chunk_shape, shapes}}` for each of `arrays`
/// over the datasets `names` (in order): each dataset's shape of the array
/// (None where it does not declare it), and the dtype name, fill value, dimension names and chunk shape
/// of the first dataset declaring it (dtype None when none does). Reads
/// segment footers only: one segment open per array and member.
#[pyfunction]
pub fn shapes<'py>(
    py: Python<'py>,
    collection: &PyCollection,
    arrays: Vec<String>,
    names: Vec<String>,
) -> PyResult<Bound<'py, PyDict>> {
    let set = collection.inner.set();
    let found = run(py, || async {
        let datasets = handles(set, &names).await?;
        let mut out = Vec::with_capacity(arrays.len());
        for array in &arrays {
            out.push(array_shapes(&datasets, array).await?);
        }
        Ok(out)
    })?;
    let dict = PyDict::new(py);
    for (array, found) in arrays.iter().zip(found) {
        let entry = PyDict::new(py);
        entry.set_item("dtype", found.dtype)?;
        entry.set_item("fill", convert::optional_scalar(py, found.fill.as_ref())?)?;
        entry.set_item("dims", found.dims)?;
        entry.set_item("chunk_shape", found.chunk_shape)?;
        entry.set_item("shapes", found.shapes)?;
        dict.set_item(array, entry)?;
    }
    Ok(dict)
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
    fill: Option<FillValue>,
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

async fn concat(set: &AtlasSet, array: &str, names: &[String]) -> core::Result<Concat> {
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
/// `AtlasSet::read_many`) and flattened end to end into one 1-D numpy array
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
            let dtype = DType::Float64;
            let scalar = match f {
                FillValue::Timestamp(_) => None,
                other => core::scalar_of_fill(other, &dtype),
            };
            convert::optional_scalar(py, scalar.as_ref())?
        }
        None => py.None().into_bound(py),
    };
    (values, counts, joined.shapes, fill).into_bound_py_any(py)
}
