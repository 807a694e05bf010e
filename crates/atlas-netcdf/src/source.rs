//! Reading a NetCDF file into memory as stored: groups, variables with their
//! dimensions, type, attributes and values. Both mappings start from this.

use std::path::Path;

use netcdf_reader::{NcAttribute, NcFile, NcGroup, NcReadable, NcType, NcVariable};

use crate::error::FileError;
use crate::model::Values;

/// A variable's values as the file stores them.
#[derive(Debug, Clone)]
pub(crate) enum Stored {
    /// Numbers, in the stored type.
    Num(Values),
    /// A char array read as text along its last dimension (one string per
    /// position of the leading dimensions; trailing NULs removed).
    Chars(Vec<String>),
    /// An NC_STRING array.
    Strings(Vec<String>),
    /// A type Atlas cannot store; the NetCDF type's description.
    Unsupported(String),
}

/// One variable of one group.
#[derive(Debug, Clone)]
pub(crate) struct StoredVar {
    /// Name inside its group.
    pub name: String,
    /// Dimension names.
    pub dims: Vec<String>,
    /// Dimension lengths (current length for unlimited ones).
    pub shape: Vec<u64>,
    /// Attributes in file order.
    pub attrs: Vec<NcAttribute>,
    /// The values.
    pub data: Stored,
}

impl StoredVar {
    pub fn attr(&self, key: &str) -> Option<&NcAttribute> {
        self.attrs.iter().find(|a| a.name == key)
    }
}

/// One group: its path from the root (empty for the root), attributes and variables.
#[derive(Debug, Clone)]
pub(crate) struct StoredGroup {
    pub path: Vec<String>,
    pub attrs: Vec<NcAttribute>,
    pub vars: Vec<StoredVar>,
}

/// A whole file: the root group first, then sub-groups depth first in file order.
#[derive(Debug, Clone)]
pub(crate) struct StoredFile {
    pub groups: Vec<StoredGroup>,
}

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
        attrs: group.attributes.clone(),
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
) -> Result<Vec<T>, FileError> {
    let arr = file.read_variable::<T>(full)?;
    // The data's own shape wins (a record variable's length is the record count).
    if arr.ndim() == shape.len() {
        *shape = arr.shape().iter().map(|&l| l as u64).collect();
    }
    Ok(arr.iter().cloned().collect())
}

fn read_var(file: &NcFile, var: &NcVariable, full: &str) -> Result<StoredVar, FileError> {
    let dims: Vec<String> = var.dimensions.iter().map(|d| d.name.clone()).collect();
    let mut shape: Vec<u64> = var.dimensions.iter().map(|d| d.size).collect();
    let data = match &var.dtype {
        NcType::Byte => Stored::Num(Values::Int8(read_num(file, full, &mut shape)?)),
        NcType::UByte => Stored::Num(Values::UInt8(read_num(file, full, &mut shape)?)),
        NcType::Short => Stored::Num(Values::Int16(read_num(file, full, &mut shape)?)),
        NcType::UShort => Stored::Num(Values::UInt16(read_num(file, full, &mut shape)?)),
        NcType::Int => Stored::Num(Values::Int32(read_num(file, full, &mut shape)?)),
        NcType::UInt => Stored::Num(Values::UInt32(read_num(file, full, &mut shape)?)),
        NcType::Int64 => Stored::Num(Values::Int64(read_num(file, full, &mut shape)?)),
        NcType::UInt64 => Stored::Num(Values::UInt64(read_num(file, full, &mut shape)?)),
        NcType::Float => Stored::Num(Values::Float32(read_num(file, full, &mut shape)?)),
        NcType::Double => Stored::Num(Values::Float64(read_num(file, full, &mut shape)?)),
        NcType::Char => {
            let count = strings_expected(&shape[..shape.len().saturating_sub(1)]);
            if count == Some(0) {
                Stored::Chars(Vec::new())
            } else {
                Stored::Chars(file.read_variable_as_strings(full)?)
            }
        }
        NcType::String => {
            if strings_expected(&shape) == Some(0) {
                Stored::Strings(Vec::new())
            } else {
                Stored::Strings(file.read_variable_as_strings(full)?)
            }
        }
        other => Stored::Unsupported(describe_type(other)),
    };
    Ok(StoredVar {
        name: var.name.clone(),
        dims,
        shape,
        attrs: var.attributes.clone(),
        data,
    })
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
