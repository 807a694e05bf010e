//! `--decode raw`: the file exactly as stored.
//!
//! Every variable keeps its type, dimension names and shape; char arrays
//! become strings along their last dimension; `_FillValue` becomes the fill
//! (the NetCDF default fill where none is declared, so a null count means
//! "missing"); every other attribute keeps its type. Global attributes become
//! dataset attributes. Nothing is unpacked, masked or decoded.

use atlas::{ArrayData, Attr, Timestamp, Value};
use netcdf_core_fills as fills;

use crate::attrs;
use crate::error::FileError;
use crate::mapping::{
    Mapped, Naming, SkippedArray, check_name, dropped_attribute, latin1_note, string_array,
};
use crate::model::{Array, Dataset};
use crate::stored::{
    ENCODING_ATTR, LATIN1, StoredAttr, StoredAttrValue, StoredData, StoredFile, StoredVar,
    leading_axes,
};

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
            dataset
                .arrays
                .push(map_var(var, &var.attrs, name, &mut notes)?);
        }
    }
    Ok(Mapped {
        dataset,
        skipped,
        undecoded: Vec::new(),
        notes,
    })
}

/// A sub-group attribute's dataset key: `group.sub.key` (root ones keep their key).
pub(crate) fn group_key(path: &[String], key: &str) -> String {
    let mut parts: Vec<&str> = path.iter().map(String::as_str).collect();
    parts.push(key);
    parts.join(".")
}

/// One variable as stored, with `attrs` as its attributes (`--decode cf`
/// passes the attributes xarray sees, e.g. time bounds with inherited units).
pub(crate) fn map_var(
    var: &StoredVar,
    attrs: &[StoredAttr],
    name: String,
    notes: &mut Vec<String>,
) -> Result<Array, FileError> {
    let fill_attr = attrs.iter().find(|a| a.name == "_FillValue");
    let declared = fill_attr.map(|a| &a.value);
    let (dims, values, fill) = match &var.data {
        StoredData::Num(values) => (
            var.dims.clone(),
            values.clone(),
            numeric_fill(values, declared),
        ),
        StoredData::Chars(strings) => {
            let latin1 = attrs
                .iter()
                .find(|a| a.name == ENCODING_ATTR)
                .and_then(|a| attrs::text(&a.value))
                .is_some_and(|t| t == LATIN1);
            if latin1 {
                notes.push(latin1_note(&name));
            }
            let fill = fill_attr
                .and_then(|a| attrs::text(&a.value))
                .map(|s| s.trim_end_matches('\0').to_owned())
                .unwrap_or_default();
            (
                leading_axes(&var.dims).to_vec(),
                string_array(strings.clone(), leading_axes(&var.shape), &name)?,
                Some(Value::String(fill)),
            )
        }
        StoredData::Strings(strings) => {
            let fill = fill_attr
                .and_then(|a| attrs::text(&a.value))
                .unwrap_or_default();
            (
                var.dims.clone(),
                string_array(strings.clone(), &var.shape, &name)?,
                Some(Value::String(fill)),
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
    for attr in attrs {
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
        chunk_shape: None,
        fill,
        values,
        attrs: out_attrs,
    })
}

/// The declared `_FillValue` (converted to the array's type) or NetCDF's
/// default. A declared integer beyond 64 bits falls back to the default; one
/// within 64 bits that the type cannot hold leaves the array without a fill.
fn numeric_fill(values: &ArrayData, declared: Option<&StoredAttrValue>) -> Option<Value> {
    let exact = declared.and_then(attrs::first_integer);
    let float = declared
        .and_then(attrs::numbers)
        .and_then(|v| v.first().copied());
    fn int<T: TryFrom<i64>>(exact: Option<i128>, default: i64) -> Option<Value> {
        let n = exact.and_then(|n| i64::try_from(n).ok()).unwrap_or(default);
        T::try_from(n).is_ok().then_some(Value::Int(n))
    }
    fn uint<T: TryFrom<u64>>(exact: Option<i128>, default: u64) -> Option<Value> {
        let n = exact.and_then(|n| u64::try_from(n).ok()).unwrap_or(default);
        T::try_from(n).is_ok().then_some(Value::UInt(n))
    }
    match values {
        ArrayData::Int8(_) => int::<i8>(exact, fills::BYTE),
        ArrayData::Int16(_) => int::<i16>(exact, fills::SHORT),
        ArrayData::Int32(_) => int::<i32>(exact, fills::INT),
        ArrayData::Int64(_) => int::<i64>(exact, fills::INT64),
        ArrayData::UInt8(_) => uint::<u8>(exact, fills::UBYTE),
        ArrayData::UInt16(_) => uint::<u16>(exact, fills::USHORT),
        ArrayData::UInt32(_) => uint::<u32>(exact, fills::UINT),
        ArrayData::UInt64(_) => uint::<u64>(exact, fills::UINT64),
        ArrayData::Float32(_) => Some(Value::Float(f64::from(
            float.map_or(fills::FLOAT, |f| f as f32),
        ))),
        ArrayData::Float64(_) => Some(Value::Float(float.unwrap_or(fills::DOUBLE))),
        ArrayData::Timestamp(_) => Some(Value::Timestamp(Timestamp(i64::MIN))),
        ArrayData::String(_) => Some(Value::String(String::new())),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use atlas::ndarray::ArrayD;

    use super::*;

    fn int8() -> ArrayData {
        ArrayData::Int8(ArrayD::from_elem(vec![2], 0))
    }

    #[test]
    fn a_declared_fill_is_kept_in_the_variant_of_the_type() {
        let declared = StoredAttrValue::Int16(vec![-5]);
        assert_eq!(numeric_fill(&int8(), Some(&declared)), Some(Value::Int(-5)));
        let u16s = ArrayData::UInt16(ArrayD::from_elem(vec![1], 0));
        assert_eq!(
            numeric_fill(&u16s, Some(&StoredAttrValue::Int32(vec![7]))),
            Some(Value::UInt(7))
        );
    }

    #[test]
    fn a_declared_fill_the_type_cannot_hold_leaves_no_fill() {
        let declared = StoredAttrValue::Int32(vec![300]);
        assert_eq!(numeric_fill(&int8(), Some(&declared)), None);
    }

    #[test]
    fn a_declared_fill_beyond_64_bits_falls_back_to_the_default() {
        let declared = StoredAttrValue::UInt64(vec![u64::MAX]);
        assert_eq!(
            numeric_fill(&int8(), Some(&declared)),
            Some(Value::Int(fills::BYTE))
        );
    }

    #[test]
    fn a_float32_fill_is_rounded_to_float32() {
        let f32s = ArrayData::Float32(ArrayD::from_elem(vec![1], 0.0));
        let declared = StoredAttrValue::Float64(vec![0.1]);
        assert_eq!(
            numeric_fill(&f32s, Some(&declared)),
            Some(Value::Float(f64::from(0.1f32)))
        );
    }
}
