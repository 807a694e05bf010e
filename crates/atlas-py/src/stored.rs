//! The stored form of one dataset as `atlasds._write` hands it over (plain
//! tuples, lists and contiguous numpy arrays) turned into atlas-netcdf's
//! [`StoredFile`], under the GIL, before any I/O.
//!
//! The Python side has already chosen each value's kind (numpy dtype name,
//! `timestamp_ns`, `chars`, `strings`, `unsupported`); this module only
//! copies values out, so the mapping rules stay in atlas-netcdf.
//!
//! Shapes: `[(path, attrs, vars)]` per group, root first; an attribute is
//! `(name, kind, value)`; a variable is `(name, dims, shape, kind, data, attrs)`.

use atlas::{ArrayData, DType, Timestamp};
use atlas_netcdf::{
    StoredAttr, StoredAttrValue, StoredData, StoredFile, StoredGroup, StoredVar, TextEncoding,
    shaped,
};
use numpy::PyReadonlyArray1;
use pyo3::prelude::*;

use crate::convert::py_err;
use crate::core::CoreError;

type AttrTuple<'py> = (String, String, Bound<'py, PyAny>);
type VarTuple<'py> = (
    String,
    Vec<String>,
    Vec<u64>,
    String,
    Bound<'py, PyAny>,
    Vec<AttrTuple<'py>>,
);
type GroupTuple<'py> = (Vec<String>, Vec<AttrTuple<'py>>, Vec<VarTuple<'py>>);

fn invalid(message: String) -> PyErr {
    py_err(CoreError::invalid(message))
}

/// A 1-D numpy array of `T` as a vector (the Python side makes it contiguous).
fn numbers<T: numpy::Element + Copy>(data: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<T>> {
    let array: PyReadonlyArray1<'_, T> = data
        .extract()
        .map_err(|e| invalid(format!("{what}: not a 1-D numpy array of its kind ({e})")))?;
    Ok(match array.as_slice() {
        Ok(slice) => slice.to_vec(),
        Err(_) => array.as_array().iter().copied().collect(),
    })
}

/// Numbers of a numeric kind (a dtype name), in `shape`; `None` for other kinds.
fn values(
    kind: &str,
    data: &Bound<'_, PyAny>,
    shape: &[u64],
    what: &str,
) -> PyResult<Option<ArrayData>> {
    let Ok(dtype) = kind.parse::<DType>() else {
        return Ok(None);
    };
    Ok(Some(match dtype {
        DType::Int8 => ArrayData::Int8(shaped(numbers(data, what)?, shape)),
        DType::Int16 => ArrayData::Int16(shaped(numbers(data, what)?, shape)),
        DType::Int32 => ArrayData::Int32(shaped(numbers(data, what)?, shape)),
        DType::Int64 => ArrayData::Int64(shaped(numbers(data, what)?, shape)),
        DType::UInt8 => ArrayData::UInt8(shaped(numbers(data, what)?, shape)),
        DType::UInt16 => ArrayData::UInt16(shaped(numbers(data, what)?, shape)),
        DType::UInt32 => ArrayData::UInt32(shaped(numbers(data, what)?, shape)),
        DType::UInt64 => ArrayData::UInt64(shaped(numbers(data, what)?, shape)),
        DType::Float32 => ArrayData::Float32(shaped(numbers(data, what)?, shape)),
        DType::Float64 => ArrayData::Float64(shaped(numbers(data, what)?, shape)),
        DType::TimestampNs => {
            let nanos: Vec<i64> = numbers(data, what)?;
            ArrayData::Timestamp(shaped(nanos.into_iter().map(Timestamp).collect(), shape))
        }
        _ => return Ok(None),
    }))
}

fn attr(name: String, kind: &str, value: &Bound<'_, PyAny>, owner: &str) -> PyResult<StoredAttr> {
    let what = format!("attribute {name:?} of {owner}");
    let value = match kind {
        "chars" => StoredAttrValue::Chars(value.extract()?),
        "strings" => StoredAttrValue::Strings(value.extract()?),
        other => match other.parse::<DType>() {
            Ok(DType::Int8) => StoredAttrValue::Int8(numbers(value, &what)?),
            Ok(DType::Int16) => StoredAttrValue::Int16(numbers(value, &what)?),
            Ok(DType::Int32) => StoredAttrValue::Int32(numbers(value, &what)?),
            Ok(DType::Int64) => StoredAttrValue::Int64(numbers(value, &what)?),
            Ok(DType::UInt8) => StoredAttrValue::UInt8(numbers(value, &what)?),
            Ok(DType::UInt16) => StoredAttrValue::UInt16(numbers(value, &what)?),
            Ok(DType::UInt32) => StoredAttrValue::UInt32(numbers(value, &what)?),
            Ok(DType::UInt64) => StoredAttrValue::UInt64(numbers(value, &what)?),
            Ok(DType::Float32) => StoredAttrValue::Float32(numbers(value, &what)?),
            Ok(DType::Float64) => StoredAttrValue::Float64(numbers(value, &what)?),
            _ => return Err(invalid(format!("{what}: unknown kind {other:?}"))),
        },
    };
    Ok(StoredAttr::new(name, value))
}

fn attrs(items: Vec<AttrTuple<'_>>, owner: &str) -> PyResult<Vec<StoredAttr>> {
    items
        .into_iter()
        .map(|(name, kind, value)| attr(name, &kind, &value, owner))
        .collect()
}

fn var(item: VarTuple<'_>, group: &[String]) -> PyResult<StoredVar> {
    let (name, dims, shape, kind, data, var_attrs) = item;
    let mut path = group.to_vec();
    path.push(name.clone());
    let full = path.join("/");
    let what = format!("variable {full:?}");
    let mut encoding = TextEncoding::Utf8;
    let data = match kind.as_str() {
        "chars" => {
            let bytes: &[u8] = data.extract()?;
            let (data, chosen) = StoredData::chars_from_bytes(bytes, &shape, &full)
                .map_err(|e| invalid(e.to_string()))?;
            encoding = chosen;
            data
        }
        "strings" => StoredData::Strings(data.extract()?),
        "unsupported" => StoredData::Unsupported(data.extract()?),
        other => match values(other, &data, &shape, &what)? {
            Some(values) => StoredData::Num(values),
            None => return Err(invalid(format!("{what}: unknown kind {other:?}"))),
        },
    };
    let mut var = StoredVar {
        name,
        dims,
        shape,
        attrs: attrs(var_attrs, &what)?,
        data,
    };
    var.mark_encoding(encoding);
    Ok(var)
}

/// The dataset `atlasds._write` describes, as a [`StoredFile`].
pub fn file(groups: &Bound<'_, PyAny>) -> PyResult<StoredFile> {
    let groups: Vec<GroupTuple<'_>> = groups.extract()?;
    let mut out = StoredFile::default();
    for (path, group_attrs, vars) in groups {
        let owner = if path.is_empty() {
            "the dataset".to_owned()
        } else {
            format!("group {:?}", path.join("/"))
        };
        let attrs = attrs(group_attrs, &owner)?;
        let vars = vars
            .into_iter()
            .map(|v| var(v, &path))
            .collect::<PyResult<_>>()?;
        out.groups.push(StoredGroup { path, attrs, vars });
    }
    Ok(out)
}
