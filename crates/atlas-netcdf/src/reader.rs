//! Reading a NetCDF file (with `netcdf-reader`) into the stored form of
//! [`crate::stored`]: groups, variables with their dimensions, type,
//! attributes and values, exactly as the file holds them.

use std::path::Path;

use atlas::ArrayData;
use atlas::ndarray::ArrayD;
use netcdf_reader::{NcAttrValue, NcAttribute, NcFile, NcGroup, NcReadable, NcType, NcVariable};

use crate::error::FileError;
use crate::stored::{
    StoredAttr, StoredAttrValue, StoredData, StoredFile, StoredGroup, StoredVar, leading_axes,
    shaped,
};

/// Opens `path` and reads every variable.
pub(crate) fn read_file(path: &Path) -> Result<StoredFile, FileError> {
    let file = NcFile::open(path)?;
    let root = file.root_group()?;
    let mut groups = Vec::new();
    walk(&file, root, Vec::new(), &mut groups)?;
    Ok(StoredFile { groups })
}

fn walk(
    file: &NcFile,
    group: &NcGroup,
    path: Vec<String>,
    out: &mut Vec<StoredGroup>,
) -> Result<(), FileError> {
    let mut vars = Vec::with_capacity(group.variables.len());
    for var in &group.variables {
        let mut full = path.join("/");
        if !full.is_empty() {
            full.push('/');
        }
        full.push_str(&var.name);
        vars.push(read_var(file, var, &full)?);
    }
    out.push(StoredGroup {
        path: path.clone(),
        attrs: attributes(&group.attributes),
        vars,
    });
    for sub in &group.groups {
        let mut sub_path = path.clone();
        sub_path.push(sub.name.clone());
        walk(file, sub, sub_path, out)?;
    }
    Ok(())
}

fn read_num<T: NcReadable + Clone>(
    file: &NcFile,
    full: &str,
    shape: &mut Vec<u64>,
) -> Result<ArrayD<T>, FileError> {
    let arr = file.read_variable::<T>(full)?;
    // The data's own shape wins (a record variable's length is the record count).
    if arr.ndim() == shape.len() {
        *shape = arr.shape().iter().map(|&l| l as u64).collect();
        return Ok(arr);
    }
    Ok(shaped(arr.iter().cloned().collect(), shape))
}

fn read_var(file: &NcFile, var: &NcVariable, full: &str) -> Result<StoredVar, FileError> {
    let dims: Vec<String> = var.dimensions.iter().map(|d| d.name.clone()).collect();
    let mut shape: Vec<u64> = var.dimensions.iter().map(|d| d.size).collect();
    let data = match &var.dtype {
        NcType::Byte => StoredData::Num(ArrayData::Int8(read_num(file, full, &mut shape)?)),
        NcType::UByte => StoredData::Num(ArrayData::UInt8(read_num(file, full, &mut shape)?)),
        NcType::Short => StoredData::Num(ArrayData::Int16(read_num(file, full, &mut shape)?)),
        NcType::UShort => StoredData::Num(ArrayData::UInt16(read_num(file, full, &mut shape)?)),
        NcType::Int => StoredData::Num(ArrayData::Int32(read_num(file, full, &mut shape)?)),
        NcType::UInt => StoredData::Num(ArrayData::UInt32(read_num(file, full, &mut shape)?)),
        NcType::Int64 => StoredData::Num(ArrayData::Int64(read_num(file, full, &mut shape)?)),
        NcType::UInt64 => StoredData::Num(ArrayData::UInt64(read_num(file, full, &mut shape)?)),
        NcType::Float => StoredData::Num(ArrayData::Float32(read_num(file, full, &mut shape)?)),
        NcType::Double => StoredData::Num(ArrayData::Float64(read_num(file, full, &mut shape)?)),
        NcType::Char => {
            let count = strings_expected(leading_axes(&shape));
            if count == Some(0) {
                StoredData::Chars(Vec::new())
            } else {
                StoredData::Chars(file.read_variable_as_strings(full)?)
            }
        }
        NcType::String => {
            if strings_expected(&shape) == Some(0) {
                StoredData::Strings(Vec::new())
            } else {
                StoredData::Strings(file.read_variable_as_strings(full)?)
            }
        }
        other => StoredData::Unsupported(describe_type(other)),
    };
    Ok(StoredVar {
        name: exposed_name(&var.name).to_owned(),
        dims,
        shape,
        attrs: attributes(&var.attributes),
        data,
    })
}

/// The prefix netCDF-4 puts before the storage name of a variable that shares
/// its name with a dimension it is not the coordinate of (HDF5 would
/// otherwise need two objects of one name).
const NON_COORD_PREFIX: &str = "_nc4_non_coord_";

/// A variable's name as the netCDF library (and so netCDF4-python and xarray)
/// shows it: the storage name without netCDF-4's `_nc4_non_coord_` prefix.
/// Reading still goes through the storage name.
fn exposed_name(stored: &str) -> &str {
    stored
        .strip_prefix(NON_COORD_PREFIX)
        .filter(|name| !name.is_empty())
        .unwrap_or(stored)
}

fn strings_expected(shape: &[u64]) -> Option<u64> {
    shape.iter().try_fold(1u64, |acc, &l| acc.checked_mul(l))
}

/// A short name of a NetCDF type for messages.
pub(crate) fn describe_type(t: &NcType) -> String {
    match t {
        NcType::Enum { .. } => "enum".into(),
        NcType::Compound { .. } => "compound".into(),
        NcType::Opaque { .. } => "opaque".into(),
        NcType::Array { .. } => "array".into(),
        NcType::VLen { .. } => "vlen".into(),
        other => format!("{other:?}").to_lowercase(),
    }
}

fn attributes(attrs: &[NcAttribute]) -> Vec<StoredAttr> {
    attrs
        .iter()
        .map(|a| StoredAttr::new(a.name.clone(), attribute(&a.value)))
        .collect()
}

fn attribute(value: &NcAttrValue) -> StoredAttrValue {
    match value {
        NcAttrValue::Bytes(v) => StoredAttrValue::Int8(v.clone()),
        NcAttrValue::UBytes(v) => StoredAttrValue::UInt8(v.clone()),
        NcAttrValue::Shorts(v) => StoredAttrValue::Int16(v.clone()),
        NcAttrValue::UShorts(v) => StoredAttrValue::UInt16(v.clone()),
        NcAttrValue::Ints(v) => StoredAttrValue::Int32(v.clone()),
        NcAttrValue::UInts(v) => StoredAttrValue::UInt32(v.clone()),
        NcAttrValue::Int64s(v) => StoredAttrValue::Int64(v.clone()),
        NcAttrValue::UInt64s(v) => StoredAttrValue::UInt64(v.clone()),
        NcAttrValue::Floats(v) => StoredAttrValue::Float32(v.clone()),
        NcAttrValue::Doubles(v) => StoredAttrValue::Float64(v.clone()),
        NcAttrValue::Chars(s) => StoredAttrValue::Chars(s.clone()),
        NcAttrValue::Strings(v) => StoredAttrValue::Strings(v.clone()),
        NcAttrValue::UserDefined { dtype, .. } => {
            StoredAttrValue::Unsupported(describe_type(dtype))
        }
    }
}
