//! Between Python and [`crate::core`]: numpy arrays that take ownership of
//! the read buffers, attribute and statistic values, exceptions, the
//! catalogue as an Arrow C stream, and indexing keys read into [`KeyItem`]s.

use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{RecordBatch, RecordBatchIterator};
use numpy::{PyArray, PyArray1};
use pyo3::IntoPyObjectExt;
use pyo3::exceptions::PyOverflowError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyCapsule, PyDict, PyEllipsis, PySlice, PyString, PyTuple};

use crate::core::{ArrayData, Attr, CoreError, ErrorClass, Layout, Stats, attr_dtype};
use crate::region::KeyItem;
use atlas::Value;

/// The Python exception of a core failure, an instance of a class of `atlasds._errors`.
pub fn py_err(e: CoreError) -> PyErr {
    Python::attach(|py| match exception(py, &e) {
        Ok(err) => err,
        Err(import_failed) => import_failed,
    })
}

fn exception(py: Python<'_>, e: &CoreError) -> PyResult<PyErr> {
    let errors = py.import("atlasds._errors")?;
    let (class, retryable) = match e.class {
        ErrorClass::NotACollection => ("NotAnAtlasCollection", None),
        ErrorClass::Corrupt => ("CorruptCollection", None),
        ErrorClass::NotFound => ("NotFound", None),
        ErrorClass::Retryable => ("StorageError", Some(true)),
        ErrorClass::Storage => ("StorageError", Some(false)),
        _ => ("InvalidArgument", None),
    };
    let class = errors.getattr(class)?;
    let instance = match retryable {
        Some(r) => {
            let kwargs = PyDict::new(py);
            kwargs.set_item("retryable", r)?;
            class.call((e.message.as_str(),), Some(&kwargs))?
        }
        None => class.call1((e.message.as_str(),))?,
    };
    Ok(PyErr::from_value(instance))
}

/// A numpy array of the values; numeric arrays hand their buffer over without a copy.
pub fn values(py: Python<'_>, values: ArrayData) -> PyResult<Bound<'_, PyAny>> {
    Ok(match values {
        ArrayData::Int8(a) => PyArray::from_owned_array(py, a).into_any(),
        ArrayData::Int16(a) => PyArray::from_owned_array(py, a).into_any(),
        ArrayData::Int32(a) => PyArray::from_owned_array(py, a).into_any(),
        ArrayData::Int64(a) => PyArray::from_owned_array(py, a).into_any(),
        ArrayData::UInt8(a) => PyArray::from_owned_array(py, a).into_any(),
        ArrayData::UInt16(a) => PyArray::from_owned_array(py, a).into_any(),
        ArrayData::UInt32(a) => PyArray::from_owned_array(py, a).into_any(),
        ArrayData::UInt64(a) => PyArray::from_owned_array(py, a).into_any(),
        ArrayData::Float32(a) => PyArray::from_owned_array(py, a).into_any(),
        ArrayData::Float64(a) => PyArray::from_owned_array(py, a).into_any(),
        ArrayData::Timestamp(a) => PyArray::from_owned_array(py, a.mapv(|t| t.nanos()))
            .into_any()
            .call_method1("view", ("datetime64[ns]",))?,
        ArrayData::String(a) => {
            let objects = a.mapv(|s| PyString::new(py, &s).into_any().unbind());
            PyArray::from_owned_object_array(py, objects).into_any()
        }
        ArrayData::Binary(a) => {
            let objects = a.mapv(|b| PyBytes::new(py, &b).into_any().unbind());
            PyArray::from_owned_object_array(py, objects).into_any()
        }
        other => {
            return Err(pyo3::exceptions::PyNotImplementedError::new_err(format!(
                "arrays of {} are not supported by this version of atlasds",
                other.dtype()
            )));
        }
    })
}

/// A statistic or fill value: int, float, str, bytes, bool, or `numpy.datetime64` in ns.
pub fn scalar<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    match value {
        Value::Bool(v) => v.into_bound_py_any(py),
        Value::Int(v) => v.into_bound_py_any(py),
        Value::UInt(v) => v.into_bound_py_any(py),
        Value::Float(v) => v.into_bound_py_any(py),
        Value::String(v) => v.into_bound_py_any(py),
        Value::Bytes(v) => Ok(PyBytes::new(py, v).into_any()),
        Value::Timestamp(v) => py
            .import("numpy")?
            .getattr("datetime64")?
            .call1((v.nanos(), "ns")),
        // A kind of value this binding does not know yet: shown as unknown.
        _ => Ok(py.None().into_bound(py)),
    }
}

/// A statistic or fill value, or None.
pub fn optional_scalar<'py>(py: Python<'py>, value: Option<&Value>) -> PyResult<Bound<'py, PyAny>> {
    match value {
        Some(v) => scalar(py, v),
        None => Ok(py.None().into_bound(py)),
    }
}

/// Statistics as the tuple `(count, nulls, min, max)`.
pub fn stats<'py>(py: Python<'py>, s: &Stats) -> PyResult<Bound<'py, PyAny>> {
    (
        s.count,
        s.nulls,
        optional_scalar(py, s.min.as_ref())?,
        optional_scalar(py, s.max.as_ref())?,
    )
        .into_bound_py_any(py)
}

fn list<'py, T: numpy::Element + Clone>(py: Python<'py>, v: &[T]) -> Bound<'py, PyAny> {
    PyArray1::from_slice(py, v).into_any()
}

/// An attribute value: scalars as Python scalars, numeric lists as 1-D numpy
/// arrays of their own dtype, string and binary lists as Python lists.
pub fn attr<'py>(py: Python<'py>, value: &Attr) -> PyResult<Bound<'py, PyAny>> {
    match value {
        Attr::Bool(v) => v.into_bound_py_any(py),
        Attr::Int8(v) => v.into_bound_py_any(py),
        Attr::Int16(v) => v.into_bound_py_any(py),
        Attr::Int32(v) => v.into_bound_py_any(py),
        Attr::Int64(v) => v.into_bound_py_any(py),
        Attr::UInt8(v) => v.into_bound_py_any(py),
        Attr::UInt16(v) => v.into_bound_py_any(py),
        Attr::UInt32(v) => v.into_bound_py_any(py),
        Attr::UInt64(v) => v.into_bound_py_any(py),
        Attr::Float32(v) => v.into_bound_py_any(py),
        Attr::Float64(v) => v.into_bound_py_any(py),
        Attr::String(v) => v.into_bound_py_any(py),
        Attr::Binary(v) => Ok(PyBytes::new(py, v).into_any()),
        Attr::BoolList(v) => Ok(list(py, v)),
        Attr::Int8List(v) => Ok(list(py, v)),
        Attr::Int16List(v) => Ok(list(py, v)),
        Attr::Int32List(v) => Ok(list(py, v)),
        Attr::Int64List(v) => Ok(list(py, v)),
        Attr::UInt8List(v) => Ok(list(py, v)),
        Attr::UInt16List(v) => Ok(list(py, v)),
        Attr::UInt32List(v) => Ok(list(py, v)),
        Attr::UInt64List(v) => Ok(list(py, v)),
        Attr::Float32List(v) => Ok(list(py, v)),
        Attr::Float64List(v) => Ok(list(py, v)),
        Attr::StringList(v) => v.into_bound_py_any(py),
        Attr::BinaryList(v) => {
            let items: Vec<Bound<'py, PyBytes>> = v.iter().map(|b| PyBytes::new(py, b)).collect();
            items.into_bound_py_any(py)
        }
        other => Err(pyo3::exceptions::PyNotImplementedError::new_err(format!(
            "attributes of type {} are not supported by this version of atlasds",
            other.dtype()
        ))),
    }
}

/// Attributes as a list of `(key, dtype name, value)`.
pub fn attrs<'py>(py: Python<'py>, attrs: &[(String, Attr)]) -> PyResult<Bound<'py, PyAny>> {
    let mut out = Vec::with_capacity(attrs.len());
    for (key, value) in attrs {
        out.push((key.as_str(), attr_dtype(value), attr(py, value)?));
    }
    out.into_bound_py_any(py)
}

/// A layout as a dict: dtype, shape, chunk_shape, dims, fill.
pub fn layout(py: Python<'_>, layout: Layout) -> PyResult<Bound<'_, PyAny>> {
    let out = PyDict::new(py);
    out.set_item("dtype", layout.dtype)?;
    out.set_item("shape", layout.shape)?;
    out.set_item("chunk_shape", layout.chunk_shape)?;
    out.set_item("dims", layout.dims)?;
    match &layout.fill {
        Some(fill) => out.set_item("fill", scalar(py, fill)?)?,
        None => out.set_item("fill", py.None())?,
    }
    Ok(out.into_any())
}

/// The name the Arrow PyCapsule interface gives a capsule holding a C stream.
const STREAM_CAPSULE: &std::ffi::CStr = c"arrow_array_stream";

/// A PyCapsule holding an Arrow C stream of `batch` (one batch), what
/// `__arrow_c_stream__` returns. Whoever imports it takes the stream over;
/// a capsule nobody imported releases it when collected.
pub fn stream_capsule(py: Python<'_>, batch: RecordBatch) -> PyResult<Bound<'_, PyCapsule>> {
    let schema = batch.schema();
    let reader = RecordBatchIterator::new([Ok(batch)], schema);
    PyCapsule::new_with_value(
        py,
        FFI_ArrowArrayStream::new(Box::new(reader)),
        STREAM_CAPSULE,
    )
}

/// A PyCapsule holding an Arrow C stream of a long table: the batches read,
/// or batches pulled from the library's stream on the runtime as the
/// consumer asks (it calls from native code, without the GIL: pyarrow's
/// readers release it).
pub fn table_capsule(py: Python<'_>, table: crate::core::Table) -> PyResult<Bound<'_, PyCapsule>> {
    let reader: Box<dyn arrow_array::RecordBatchReader + Send> = match table {
        crate::core::Table::Read(schema, batches) => Box::new(RecordBatchIterator::new(
            batches.into_iter().map(Ok),
            schema,
        )),
        crate::core::Table::Lazy(stream) => Box::new(Pulled { stream }),
    };
    PyCapsule::new_with_value(py, FFI_ArrowArrayStream::new(reader), STREAM_CAPSULE)
}

/// The library's table stream as a blocking Arrow reader.
struct Pulled {
    stream: atlas::TableStream,
}

impl Iterator for Pulled {
    type Item = Result<RecordBatch, arrow_schema::ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        use futures::StreamExt;

        let external = |message: String| arrow_schema::ArrowError::ExternalError(message.into());
        match crate::core::block_on(self.stream.next()) {
            Ok(Some(Ok(batch))) => Some(Ok(batch)),
            Ok(Some(Err(e))) => Some(Err(external(e.to_string()))),
            Ok(None) => None,
            Err(e) => Some(Err(external(e.message))),
        }
    }
}

impl arrow_array::RecordBatchReader for Pulled {
    fn schema(&self) -> arrow_schema::SchemaRef {
        self.stream.schema()
    }
}

fn bad_key(what: String) -> PyErr {
    py_err(CoreError::invalid(format!(
        "{what} (regions take ints, slices and one '...', as numpy's basic indexing)"
    )))
}

/// An integer of a key: anything with `__index__` except a bool (numpy reads
/// a bool as a mask). Too large for i64: saturated, so it is out of bounds.
fn key_int(value: &Bound<'_, PyAny>) -> PyResult<i64> {
    let is_bool = value.is_instance_of::<PyBool>()
        || value
            .get_type()
            .name()
            .is_ok_and(|n| n == "bool" || n == "bool_");
    if is_bool {
        return Err(bad_key(
            "a boolean index is a mask, which is not supported".into(),
        ));
    }
    match value.extract::<i64>() {
        Ok(i) => Ok(i),
        Err(e) if e.is_instance_of::<PyOverflowError>(value.py()) => {
            Ok(if value.gt(0)? { i64::MAX } else { i64::MIN })
        }
        Err(_) => Err(bad_key(format!("unsupported index {}", repr(value)))),
    }
}

fn repr(value: &Bound<'_, PyAny>) -> String {
    value
        .repr()
        .map_or_else(|_| "?".to_owned(), |r| r.to_string())
}

fn slice_part(value: Bound<'_, PyAny>) -> PyResult<Option<i64>> {
    if value.is_none() {
        return Ok(None);
    }
    key_int(&value).map(Some)
}

fn key_item(value: &Bound<'_, PyAny>) -> PyResult<KeyItem> {
    if value.is_instance_of::<PyEllipsis>() {
        return Ok(KeyItem::Ellipsis);
    }
    if let Ok(slice) = value.cast::<PySlice>() {
        return Ok(KeyItem::Slice {
            start: slice_part(slice.getattr("start")?)?,
            stop: slice_part(slice.getattr("stop")?)?,
            step: slice_part(slice.getattr("step")?)?,
        });
    }
    if value.is_none() {
        return Err(bad_key("a new axis (None) is not supported".into()));
    }
    key_int(value).map(KeyItem::Index)
}

/// A numpy basic-indexing key (an int, a slice, `...` or a tuple of them) as
/// [`KeyItem`]s, without looking at any shape; `InvalidArgument` for anything
/// else (lists, arrays, bools, `None` axes).
pub fn key(value: &Bound<'_, PyAny>) -> PyResult<Vec<KeyItem>> {
    match value.cast::<PyTuple>() {
        Ok(items) => items.iter().map(|item| key_item(&item)).collect(),
        Err(_) => Ok(vec![key_item(value)?]),
    }
}
