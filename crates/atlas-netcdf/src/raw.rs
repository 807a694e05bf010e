//! `--decode raw`: the file exactly as stored.
//!
//! Every variable keeps its type, dimension names and shape; char arrays
//! become strings along their last dimension; `_FillValue` becomes the fill
//! (the NetCDF default fill where none is declared, so a null count means
//! "missing"); every other attribute keeps its type. Global attributes become
//! dataset attributes. Nothing is unpacked, masked or decoded.

use atlas::Attr;
use netcdf_core_fills as fills;

use crate::attrs;
use crate::error::FileError;
use crate::mapping::{Mapped, Naming, SkippedArray, check_name, dropped_attribute};
use crate::model::{Array, Dataset, Fill, Values};
use crate::stored::{StoredAttrValue, StoredData, StoredFile, StoredVar};

/// The NetCDF default fill values (netCDF-C's `NC_FILL_*`).
mod netcdf_core_fills {
    pub const BYTE: i64 = -127;
    pub const SHORT: i64 = -32767;
    pub const INT: i64 = -2147483647;
    pub const INT64: i64 = -9223372036854775806;
    pub const UBYTE: u64 = 255;
    pub const USHORT: u64 = 65535;
    pub const UINT: u64 = 4294967295;
    pub const UINT64: u64 = 18446744073709551614;
    pub const FLOAT: f32 = 9.969_21e36_f32;
    pub const DOUBLE: f64 = 9.969_209_968_386_869e36_f64;
}

/// Maps a file as stored.
pub(crate) fn map(file: &StoredFile, skip_unsupported: bool) -> Result<Mapped, FileError> {
    let mut dataset = Dataset::default();
    let mut skipped = Vec::new();
    let mut naming = Naming::default();
    let mut notes = Vec::new();
    for group in &file.groups {
        for attr in &group.attrs {
            let Some(value) = attrs::raw(&attr.value) else {
                notes.push(dropped_attribute("the file", &attr.name));
                continue;
            };
            dataset
                .attrs
                .push((group_key(&group.path, &attr.name), value));
        }
        for var in &group.vars {
            let full = naming.full_name(&group.path, &var.name);
            if let StoredData::Unsupported(dtype) = &var.data {
                if skip_unsupported {
                    skipped.push(SkippedArray {
                        array: full,
                        dtype: dtype.clone(),
                    });
                    continue;
                }
                return Err(FileError::Unsupported {
                    variable: full,
                    dtype: dtype.clone(),
                });
            }
            let name = naming.claim(&group.path, &var.name)?;
            check_name(&name, &full)?;
            dataset.arrays.push(map_var(var, name, &mut notes)?);
        }
    }
    Ok(Mapped {
        dataset,
        skipped,
        notes,
    })
}

/// A sub-group attribute's dataset key: `group.sub.key` (root ones keep their key).
pub(crate) fn group_key(path: &[String], key: &str) -> String {
    let mut parts: Vec<&str> = path.iter().map(String::as_str).collect();
    parts.push(key);
    parts.join(".")
}

fn map_var(var: &StoredVar, name: String, notes: &mut Vec<String>) -> Result<Array, FileError> {
    let declared = var.attr("_FillValue").map(|a| &a.value);
    let (dims, shape, values, fill) = match &var.data {
        StoredData::Num(values) => {
            let fill = numeric_fill(values, declared);
            (
                var.dims.clone(),
                var.shape.clone(),
                values.clone(),
                Some(fill),
            )
        }
        StoredData::Chars(strings) => {
            let n = var.dims.len().saturating_sub(1);
            let fill = var
                .attr("_FillValue")
                .and_then(|a| attrs::text(&a.value))
                .map(|s| s.trim_end_matches('\0').to_owned())
                .unwrap_or_default();
            (
                var.dims[..n].to_vec(),
                var.shape[..n].to_vec(),
                Values::String(strings.clone()),
                Some(Fill::String(fill)),
            )
        }
        StoredData::Strings(strings) => {
            let fill = var
                .attr("_FillValue")
                .and_then(|a| attrs::text(&a.value))
                .unwrap_or_default();
            (
                var.dims.clone(),
                var.shape.clone(),
                Values::String(strings.clone()),
                Some(Fill::String(fill)),
            )
        }
        StoredData::Unsupported(dtype) => {
            return Err(FileError::Unsupported {
                variable: name,
                dtype: dtype.clone(),
            });
        }
    };
    let mut out_attrs: Vec<(String, Attr)> = Vec::new();
    for attr in &var.attrs {
        if attr.name == "_FillValue" {
            continue;
        }
        match attrs::raw(&attr.value) {
            Some(value) => out_attrs.push((attr.name.clone(), value)),
            None => notes.push(dropped_attribute(&format!("variable {name:?}"), &attr.name)),
        }
    }
    Ok(Array {
        name,
        dims,
        shape,
        chunk_shape: None,
        fill,
        values,
        attrs: out_attrs,
    })
}

/// The declared `_FillValue` (converted to the array's type) or NetCDF's default.
fn numeric_fill(values: &Values, declared: Option<&StoredAttrValue>) -> Fill {
    let exact = declared.and_then(attrs::first_integer);
    let float = declared
        .and_then(attrs::numbers)
        .and_then(|v| v.first().copied());
    // A declared fill that does not fit the type falls back to the default.
    let int =
        |default: i64| Fill::Int(exact.and_then(|n| i64::try_from(n).ok()).unwrap_or(default));
    let uint =
        |default: u64| Fill::UInt(exact.and_then(|n| u64::try_from(n).ok()).unwrap_or(default));
    let declared = float;
    match values {
        Values::Int8(_) => int(fills::BYTE),
        Values::Int16(_) => int(fills::SHORT),
        Values::Int32(_) => int(fills::INT),
        Values::Int64(_) => int(fills::INT64),
        Values::UInt8(_) => uint(fills::UBYTE),
        Values::UInt16(_) => uint(fills::USHORT),
        Values::UInt32(_) => uint(fills::UINT),
        Values::UInt64(_) => uint(fills::UINT64),
        Values::Float32(_) => Fill::Float(f64::from(declared.map_or(fills::FLOAT, |f| f as f32))),
        Values::Float64(_) => Fill::Float(declared.unwrap_or(fills::DOUBLE)),
        Values::TimestampNs(_) => Fill::TimestampNs(i64::MIN),
        Values::String(_) => Fill::String(String::new()),
    }
}
