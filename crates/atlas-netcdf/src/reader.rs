//! Reading a NetCDF file (with `netcdf-reader`) into the stored form of
//! [`crate::stored`]: groups, variables with their dimensions, type,
//! attributes and values, exactly as the file holds them.

use std::collections::HashMap;
use std::path::Path;

use atlas::ArrayData;
use atlas::ndarray::ArrayD;
use netcdf_reader::classic::data;
use netcdf_reader::{
    NcAttrValue, NcAttribute, NcFile, NcGroup, NcMetadataMode, NcOpenOptions, NcReadable, NcType,
    NcVariable,
};

use crate::error::FileError;
use crate::stored::{
    StoredAttr, StoredAttrValue, StoredData, StoredFile, StoredGroup, StoredVar, TextEncoding,
    leading_axes, shaped,
};

/// Opens `path` and reads every variable.
pub(crate) fn read_file(path: &Path) -> Result<StoredFile, FileError> {
    read_variables(path, None)
}

/// Opens `path` and reads only the variables named in `only` (by the name
/// the file shows, in any group; all of them when `None`): the groups and
/// attributes are all there, the other variables are left out unread.
pub(crate) fn read_variables(path: &Path, only: Option<&[&str]>) -> Result<StoredFile, FileError> {
    let (file, latin1) = open(path)?;
    let root = file.root_group()?;
    let mut groups = Vec::new();
    let source = Source {
        file: &file,
        path,
        latin1,
        only,
    };
    walk(&source, root, Vec::new(), &mut groups)?;
    Ok(StoredFile { groups })
}

/// An open file and its path (a classic file's char bytes are re-read from
/// it), with the text attributes the NetCDF reader could not decode.
struct Source<'a> {
    file: &'a NcFile,
    path: &'a Path,
    latin1: Latin1Attrs,
    /// The only variables to read (all when `None`).
    only: Option<&'a [&'a str]>,
}

/// NETCDF4 text attributes whose bytes are not UTF-8, read as Latin-1, by
/// owner: `group:PATH` for a group (`group:` for the root), `var:PATH` for a
/// variable (its storage path).
type Latin1Attrs = HashMap<String, Vec<StoredAttr>>;

/// Opens `path`. A NETCDF4 file that netcdf-reader refuses only because a
/// text attribute is not UTF-8 opens with those attributes read from HDF5
/// as Latin-1; any other refusal stands.
fn open(path: &Path) -> Result<(NcFile, Latin1Attrs), FileError> {
    // A NETCDF4 file's metadata is decoded when its root group is first asked for.
    let refused = match NcFile::open(path) {
        Ok(file) => match file.root_group() {
            Ok(_) => return Ok((file, HashMap::new())),
            Err(e) => e,
        },
        Err(e) => e,
    };
    let latin1 = match non_utf8_attributes(path) {
        Ok(found) if !found.is_empty() => found,
        _ => return Err(refused.into()),
    };
    let options = NcOpenOptions {
        metadata_mode: NcMetadataMode::Lossy,
        ..NcOpenOptions::default()
    };
    let file = NcFile::open_with_options(path, options)?;
    file.root_group()?;
    Ok((file, latin1))
}

fn non_utf8_attributes(path: &Path) -> Result<Latin1Attrs, hdf5_reader::error::Error> {
    fn collect(attrs: Vec<hdf5_reader::Attribute>, owner: String, out: &mut Latin1Attrs) {
        for attr in attrs {
            let hdf5_reader::Datatype::String {
                size: hdf5_reader::StringSize::Fixed(len),
                ..
            } = attr.datatype
            else {
                continue;
            };
            let len = usize::try_from(len).unwrap_or(usize::MAX);
            let bytes = attr.raw_data.get(..len).unwrap_or(&attr.raw_data);
            let end = bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
            let text = bytes.get(..end).unwrap_or_default();
            if std::str::from_utf8(text).is_err() {
                out.entry(owner.clone()).or_default().push(StoredAttr::new(
                    attr.name.clone(),
                    StoredAttrValue::chars_from_bytes(bytes),
                ));
            }
        }
    }
    fn walk(
        group: &hdf5_reader::group::Group,
        path: &str,
        out: &mut Latin1Attrs,
    ) -> Result<(), hdf5_reader::error::Error> {
        let join = |name: &str| {
            if path.is_empty() {
                name.to_owned()
            } else {
                format!("{path}/{name}")
            }
        };
        collect(group.attributes()?, format!("group:{path}"), out);
        for dataset in group.datasets()? {
            collect(
                dataset.attributes(),
                format!("var:{}", join(dataset.name())),
                out,
            );
        }
        for sub in group.groups()? {
            walk(&sub, &join(sub.name()), out)?;
        }
        Ok(())
    }
    let file = hdf5_reader::Hdf5File::open(path)?;
    let mut out = HashMap::new();
    walk(&file.root_group()?, "", &mut out)?;
    Ok(out)
}

/// `attrs` with the recovered ones of `owner` added where the reader left them out.
fn with_latin1(mut attrs: Vec<StoredAttr>, latin1: &Latin1Attrs, owner: &str) -> Vec<StoredAttr> {
    for attr in latin1.get(owner).into_iter().flatten() {
        if !attrs.iter().any(|a| a.name == attr.name) {
            attrs.push(attr.clone());
        }
    }
    attrs
}

fn walk(
    file: &Source<'_>,
    group: &NcGroup,
    path: Vec<String>,
    out: &mut Vec<StoredGroup>,
) -> Result<(), FileError> {
    let mut vars = Vec::with_capacity(group.variables.len());
    for var in &group.variables {
        if let Some(only) = file.only
            && !only.contains(&exposed_name(&var.name))
        {
            continue;
        }
        let mut full = path.join("/");
        if !full.is_empty() {
            full.push('/');
        }
        full.push_str(&var.name);
        vars.push(read_var(file, var, &full)?);
    }
    out.push(StoredGroup {
        path: path.clone(),
        attrs: with_latin1(
            attributes(&group.attributes),
            &file.latin1,
            &format!("group:{}", path.join("/")),
        ),
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

fn read_var(source: &Source<'_>, var: &NcVariable, full: &str) -> Result<StoredVar, FileError> {
    let file = source.file;
    let mut encoding = TextEncoding::Utf8;
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
                let strings = file.read_variable_as_strings(full)?;
                // The reader decodes lossily: where it replaced something, the
                // bytes decide (UTF-8, or Latin-1 for the whole variable).
                if strings
                    .iter()
                    .any(|s| s.contains(char::REPLACEMENT_CHARACTER))
                {
                    let bytes = char_bytes(source, var, full, &mut shape)?;
                    let (data, chosen) = StoredData::chars_from_bytes(&bytes, &shape, full)?;
                    encoding = chosen;
                    data
                } else {
                    StoredData::Chars(strings)
                }
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
    let mut stored = StoredVar {
        name: exposed_name(&var.name).to_owned(),
        dims,
        shape,
        attrs: with_latin1(
            attributes(&var.attributes),
            &source.latin1,
            &format!("var:{full}"),
        ),
        data,
    };
    stored.mark_encoding(encoding);
    Ok(stored)
}

/// A char variable's bytes as stored, row-major.
/// A classic record variable's shape becomes the data's (its record count).
fn char_bytes(
    source: &Source<'_>,
    var: &NcVariable,
    full: &str,
    shape: &mut Vec<u64>,
) -> Result<Vec<u8>, FileError> {
    let Some(classic) = source.file.as_classic() else {
        return Ok(source.file.read_variable_raw_bytes(full)?);
    };
    // A classic char is one byte, as u8: the reader's typed reads of the file's bytes.
    let data = std::fs::read(source.path).map_err(netcdf_reader::Error::from)?;
    let values = if var.is_record_var {
        let stride = data::compute_record_stride(&classic.root_group().variables)?;
        data::read_record_variable::<u8>(&data, var, classic.numrecs(), stride)?
    } else {
        data::read_non_record_variable::<u8>(&data, var)?
    };
    if values.ndim() == shape.len() {
        *shape = values.shape().iter().map(|&l| l as u64).collect();
    }
    Ok(values.into_iter().collect())
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
