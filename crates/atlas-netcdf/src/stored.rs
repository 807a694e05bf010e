//! The source form both mappings start from: a file's groups, variables and
//! attributes as the file holds them, before any decoding.
//!
//! The NetCDF reader fills it from a file; other front ends (the Python
//! package, from an `xarray.Dataset` opened without decoding) fill it from
//! memory. Either way [`crate::map_stored`] applies the same mapping, so the
//! CF rules live in one place. [`StoredFile::check`] refuses data that does
//! not match its declared shape before any mapping sees it.

use atlas::ArrayData;
use atlas::ndarray::{Array1, ArrayD, IxDyn};

use crate::error::FileError;

/// A variable's values as the file stores them.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum StoredData {
    /// Numbers in the stored type (timestamps for a front end that has
    /// them already), shaped as the variable ([`StoredVar::shape`]).
    Num(ArrayData),
    /// A char array read as text along its last dimension: one string per
    /// position of the leading dimensions, trailing NULs removed (see
    /// [`StoredData::chars_from_bytes`]).
    Chars(Vec<String>),
    /// A variable-length string array (NC_STRING), row-major.
    Strings(Vec<String>),
    /// A type Atlas cannot store; the type's description for messages.
    Unsupported(String),
}

impl StoredData {
    /// A char array's bytes (row-major, `shape` including the character axis)
    /// as the strings the NetCDF reader gives: each row of the last axis
    /// decoded as UTF-8 (invalid bytes replaced) with trailing NULs removed.
    /// A rank 0 or 1 array is one string. `variable` names it in errors.
    pub fn chars_from_bytes(
        bytes: &[u8],
        shape: &[u64],
        variable: &str,
    ) -> Result<StoredData, FileError> {
        let decode = |row: &[u8]| {
            String::from_utf8_lossy(row)
                .trim_end_matches('\0')
                .to_owned()
        };
        let (width, leading) = match shape.split_last() {
            Some((&width, leading)) if !leading.is_empty() => (width, leading),
            _ => return Ok(StoredData::Chars(vec![decode(bytes)])),
        };
        let shape_error = |reason: String| FileError::Shape {
            variable: variable.to_owned(),
            reason,
        };
        let width = usize::try_from(width)
            .map_err(|_| shape_error("the character axis does not fit this platform".into()))?;
        let rows = element_count(leading)
            .ok_or_else(|| shape_error("the shape's element count overflows".into()))?;
        let expected = rows
            .checked_mul(width)
            .ok_or_else(|| shape_error("the shape's element count overflows".into()))?;
        if bytes.len() != expected {
            return Err(shape_error(format!(
                "{} bytes of characters for shape {shape:?} ({expected} expected)",
                bytes.len()
            )));
        }
        if width == 0 {
            return Ok(StoredData::Chars(vec![String::new(); rows]));
        }
        Ok(StoredData::Chars(
            bytes.chunks_exact(width).map(decode).collect(),
        ))
    }
}

/// An attribute value as stored: attributes are vectors of one type, or text.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
#[allow(missing_docs)]
pub enum StoredAttrValue {
    Int8(Vec<i8>),
    Int16(Vec<i16>),
    Int32(Vec<i32>),
    Int64(Vec<i64>),
    UInt8(Vec<u8>),
    UInt16(Vec<u16>),
    UInt32(Vec<u32>),
    UInt64(Vec<u64>),
    Float32(Vec<f32>),
    Float64(Vec<f64>),
    /// Text (NC_CHAR).
    Chars(String),
    /// Variable-length strings (NC_STRING).
    Strings(Vec<String>),
    /// A type Atlas cannot store (compound, opaque, ...); its description.
    Unsupported(String),
}

impl StoredAttrValue {
    /// The numbers as `f64`; `None` for text and unsupported types.
    pub fn as_f64s(&self) -> Option<Vec<f64>> {
        fn wide<T: Copy + Into<f64>>(v: &[T]) -> Option<Vec<f64>> {
            Some(v.iter().map(|&x| x.into()).collect())
        }
        match self {
            StoredAttrValue::Int8(v) => wide(v),
            StoredAttrValue::Int16(v) => wide(v),
            StoredAttrValue::Int32(v) => wide(v),
            StoredAttrValue::Int64(v) => Some(v.iter().map(|&x| x as f64).collect()),
            StoredAttrValue::UInt8(v) => wide(v),
            StoredAttrValue::UInt16(v) => wide(v),
            StoredAttrValue::UInt32(v) => wide(v),
            StoredAttrValue::UInt64(v) => Some(v.iter().map(|&x| x as f64).collect()),
            StoredAttrValue::Float32(v) => wide(v),
            StoredAttrValue::Float64(v) => Some(v.clone()),
            StoredAttrValue::Chars(_)
            | StoredAttrValue::Strings(_)
            | StoredAttrValue::Unsupported(_) => None,
        }
    }
}

/// One attribute: name and value.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredAttr {
    /// The attribute's name.
    pub name: String,
    /// Its value.
    pub value: StoredAttrValue,
}

impl StoredAttr {
    /// An attribute named `name`.
    pub fn new(name: impl Into<String>, value: StoredAttrValue) -> Self {
        Self {
            name: name.into(),
            value,
        }
    }
}

/// One variable of one group.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredVar {
    /// Name inside its group.
    pub name: String,
    /// Dimension names, one per axis.
    pub dims: Vec<String>,
    /// Axis lengths (current length for unlimited ones; empty for a scalar).
    pub shape: Vec<u64>,
    /// Attributes in order.
    pub attrs: Vec<StoredAttr>,
    /// The values.
    pub data: StoredData,
}

impl StoredVar {
    /// The attribute named `key`, if any.
    pub fn attr(&self, key: &str) -> Option<&StoredAttr> {
        self.attrs.iter().find(|a| a.name == key)
    }

    /// Refuses values that do not fill the declared shape.
    fn check(&self, group: &[String]) -> Result<(), FileError> {
        let mut path: Vec<&str> = group.iter().map(String::as_str).collect();
        path.push(&self.name);
        let shape_error = |reason: String| FileError::Shape {
            variable: path.join("/"),
            reason,
        };
        if self.dims.len() != self.shape.len() {
            return Err(shape_error(format!(
                "{} dimension names for {} axes",
                self.dims.len(),
                self.shape.len()
            )));
        }
        let (expected, got) = match &self.data {
            StoredData::Num(values) => {
                let same = values.shape().len() == self.shape.len()
                    && values
                        .shape()
                        .iter()
                        .zip(&self.shape)
                        .all(|(&a, &b)| u64::try_from(a).is_ok_and(|a| a == b));
                if same {
                    return Ok(());
                }
                (element_count(&self.shape), values.len())
            }
            StoredData::Strings(values) => (element_count(&self.shape), values.len()),
            StoredData::Chars(values) => (element_count(leading_axes(&self.shape)), values.len()),
            StoredData::Unsupported(_) => return Ok(()),
        };
        match expected {
            Some(n) if n == got => match &self.data {
                StoredData::Num(values) => Err(shape_error(format!(
                    "values shaped {:?} for shape {:?}",
                    values.shape(),
                    self.shape
                ))),
                _ => Ok(()),
            },
            Some(n) => Err(shape_error(format!(
                "{got} values for shape {:?} ({n} expected)",
                self.shape
            ))),
            None => Err(shape_error(format!(
                "shape {:?} holds more elements than this platform can address",
                self.shape
            ))),
        }
    }
}

/// Every axis but the last (a char variable's character axis); empty for a
/// scalar or a rank-1 array.
pub(crate) fn leading_axes<T>(axes: &[T]) -> &[T] {
    axes.split_last().map_or(&[], |(_, leading)| leading)
}

/// One group: its path from the root (empty for the root), attributes and variables.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StoredGroup {
    /// Group names from the root down; empty for the root group.
    pub path: Vec<String>,
    /// Group attributes in order (the root's are the file's global attributes).
    pub attrs: Vec<StoredAttr>,
    /// Variables in order.
    pub vars: Vec<StoredVar>,
}

/// A whole file: the root group first, then sub-groups depth first.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StoredFile {
    /// The groups, root first.
    pub groups: Vec<StoredGroup>,
}

impl StoredFile {
    /// Refuses a variable whose values do not fill its shape, or whose
    /// dimension names and axes differ in number ([`FileError::Shape`]).
    pub fn check(&self) -> Result<(), FileError> {
        for group in &self.groups {
            for var in &group.vars {
                var.check(&group.path)?;
            }
        }
        Ok(())
    }
}

/// Row-major `values` as an array of `shape`, for [`StoredData::Num`]; as
/// one axis when they do not fill `shape`, so that [`StoredFile::check`]
/// reports the mismatch rather than each caller.
pub fn shaped<T>(values: Vec<T>, shape: &[u64]) -> ArrayD<T> {
    let dims: Option<Vec<usize>> = shape.iter().map(|&l| usize::try_from(l).ok()).collect();
    match dims {
        Some(dims) if element_count(shape) == Some(values.len()) => {
            // Cannot fail: the element count was just checked. Were it to,
            // the empty array would fail the check like any mismatch.
            ArrayD::from_shape_vec(IxDyn(&dims), values)
                .unwrap_or_else(|_| Array1::from_vec(Vec::new()).into_dyn())
        }
        _ => Array1::from_vec(values).into_dyn(),
    }
}

/// Elements a shape holds, `None` when that overflows `usize`.
fn element_count(shape: &[u64]) -> Option<usize> {
    shape.iter().try_fold(1usize, |acc, &l| {
        usize::try_from(l).ok().and_then(|l| acc.checked_mul(l))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn char_rows_lose_trailing_nuls_and_keep_inner_spaces() {
        let got = StoredData::chars_from_bytes(b"ab\0\0c d\0", &[2, 4], "c").unwrap();
        assert_eq!(got, StoredData::Chars(vec!["ab".into(), "c d".into()]));
    }

    #[test]
    fn a_rank_one_char_array_is_one_string() {
        let got = StoredData::chars_from_bytes(b"hello\0", &[6], "c").unwrap();
        assert_eq!(got, StoredData::Chars(vec!["hello".into()]));
    }

    #[test]
    fn char_bytes_that_do_not_fill_the_shape_are_refused() {
        let err = StoredData::chars_from_bytes(b"abc", &[2, 2], "c").unwrap_err();
        assert!(matches!(err, FileError::Shape { .. }), "{err:?}");
    }

    #[test]
    fn values_that_do_not_fill_the_shape_are_refused() {
        let file = StoredFile {
            groups: vec![StoredGroup {
                vars: vec![StoredVar {
                    name: "t".into(),
                    dims: vec!["n".into()],
                    shape: vec![3],
                    attrs: Vec::new(),
                    data: StoredData::Num(ArrayData::Float32(shaped(vec![1.0, 2.0], &[3]))),
                }],
                ..StoredGroup::default()
            }],
        };
        match file.check() {
            Err(FileError::Shape { variable, .. }) => assert_eq!(variable, "t"),
            other => panic!("expected a shape error, got {other:?}"),
        }
    }

    #[test]
    fn dimension_names_must_match_the_rank() {
        let file = StoredFile {
            groups: vec![StoredGroup {
                path: vec!["g".into()],
                vars: vec![StoredVar {
                    name: "t".into(),
                    dims: vec![],
                    shape: vec![1],
                    attrs: Vec::new(),
                    data: StoredData::Num(ArrayData::Int8(shaped(vec![1], &[1]))),
                }],
                ..StoredGroup::default()
            }],
        };
        match file.check() {
            Err(FileError::Shape { variable, .. }) => assert_eq!(variable, "g/t"),
            other => panic!("expected a shape error, got {other:?}"),
        }
    }

    #[test]
    fn values_that_fill_the_shape_take_it() {
        let got = shaped(vec![1, 2, 3, 4, 5, 6], &[2, 3]);
        assert_eq!(got.shape(), &[2, 3]);
        assert_eq!(got[[1, 0]], 4);
        assert_eq!(shaped(vec![7], &[]).shape(), &[] as &[usize]);
        assert_eq!(shaped(vec![1, 2], &[3]).shape(), &[2]);
    }

    #[test]
    fn numbers_shaped_otherwise_than_the_variable_are_refused() {
        let var = StoredVar {
            name: "t".into(),
            dims: vec!["n".into()],
            shape: vec![2],
            attrs: Vec::new(),
            data: StoredData::Num(ArrayData::Int8(shaped(vec![1, 2], &[2, 1]))),
        };
        let file = StoredFile {
            groups: vec![StoredGroup {
                vars: vec![var],
                ..StoredGroup::default()
            }],
        };
        match file.check() {
            Err(FileError::Shape { variable, reason }) => {
                assert_eq!(variable, "t");
                assert!(reason.contains("[2, 1]"), "{reason}");
            }
            other => panic!("expected a shape error, got {other:?}"),
        }
    }
}
