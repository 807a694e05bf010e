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
    /// position of the leading dimensions, trailing NULs removed, UTF-8 or,
    /// when the variable says `_Encoding = "latin-1"`, one code point per
    /// byte (see [`StoredData::chars_from_bytes`]).
    Chars(Vec<String>),
    /// A variable-length string array (NC_STRING), row-major.
    Strings(Vec<String>),
    /// A type Atlas cannot store; the type's description for messages.
    Unsupported(String),
}

/// The attribute that says how a char variable's bytes became text, with
/// the value xarray's own encoders use for Latin-1 (`_Encoding`).
pub const ENCODING_ATTR: &str = "_Encoding";

/// `_Encoding` of a char variable whose bytes are not UTF-8.
pub const LATIN1: &str = "latin-1";

/// How the bytes of a char variable or text attribute became text.
///
/// Bytes that are valid UTF-8 are read as UTF-8. Any other bytes are read as
/// Latin-1: each byte is the code point of the same number (U+0000 to
/// U+00FF), so no byte is lost and encoding the text as Latin-1 gives the
/// file's bytes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TextEncoding {
    /// The bytes were valid UTF-8.
    Utf8,
    /// The bytes were not valid UTF-8 and each became one code point.
    Latin1,
}

impl TextEncoding {
    /// UTF-8 when every row is valid UTF-8, else Latin-1 for all of them: one
    /// choice per variable, so the whole variable encodes back one way.
    pub fn of_rows<'a>(mut rows: impl Iterator<Item = &'a [u8]>) -> TextEncoding {
        if rows.all(|row| std::str::from_utf8(row).is_ok()) {
            TextEncoding::Utf8
        } else {
            TextEncoding::Latin1
        }
    }

    /// `bytes` as text in this encoding (invalid UTF-8 replaced by U+FFFD,
    /// which [`TextEncoding::of_rows`] never lets happen).
    pub fn decode(self, bytes: &[u8]) -> String {
        match self {
            TextEncoding::Utf8 => String::from_utf8_lossy(bytes).into_owned(),
            TextEncoding::Latin1 => bytes.iter().map(|&b| char::from(b)).collect(),
        }
    }
}

impl StoredData {
    /// A char array's bytes (row-major, `shape` including the character axis)
    /// as text along its last axis, trailing NULs removed, with the encoding
    /// chosen for the whole variable ([`TextEncoding::of_rows`]). A rank 0 or
    /// 1 array is one string. `variable` names it in errors. Front ends store
    /// a Latin-1 choice with [`StoredVar::mark_encoding`].
    pub fn chars_from_bytes(
        bytes: &[u8],
        shape: &[u64],
        variable: &str,
    ) -> Result<(StoredData, TextEncoding), FileError> {
        let text = |encoding: TextEncoding, row: &[u8]| {
            let end = row.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
            encoding.decode(row.get(..end).unwrap_or_default())
        };
        let (width, leading) = match shape.split_last() {
            Some((&width, leading)) if !leading.is_empty() => (width, leading),
            _ => {
                let encoding = TextEncoding::of_rows(std::iter::once(bytes));
                return Ok((StoredData::Chars(vec![text(encoding, bytes)]), encoding));
            }
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
            return Ok((
                StoredData::Chars(vec![String::new(); rows]),
                TextEncoding::Utf8,
            ));
        }
        let encoding = TextEncoding::of_rows(bytes.chunks_exact(width));
        let strings = bytes
            .chunks_exact(width)
            .map(|row| text(encoding, row))
            .collect();
        Ok((StoredData::Chars(strings), encoding))
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
    /// A text attribute's bytes (NC_CHAR) as text, trailing NULs removed:
    /// UTF-8 when they are valid UTF-8, else Latin-1 ([`TextEncoding`]).
    /// An attribute cannot carry an attribute, so nothing records the
    /// choice; the text holds only U+0000..U+00FF when it was Latin-1.
    pub fn chars_from_bytes(bytes: &[u8]) -> StoredAttrValue {
        let end = bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
        let bytes = bytes.get(..end).unwrap_or_default();
        StoredAttrValue::Chars(TextEncoding::of_rows(std::iter::once(bytes)).decode(bytes))
    }

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

    /// Records how the char data was decoded: Latin-1 sets `_Encoding =
    /// "latin-1"` (replacing any `_Encoding` the file declared, which its
    /// bytes did not follow); UTF-8 leaves the attributes as they are.
    pub fn mark_encoding(&mut self, encoding: TextEncoding) {
        if encoding != TextEncoding::Latin1 {
            return;
        }
        let value = StoredAttrValue::Chars(LATIN1.to_owned());
        match self.attrs.iter_mut().find(|a| a.name == ENCODING_ATTR) {
            Some(attr) => attr.value = value,
            None => self.attrs.push(StoredAttr::new(ENCODING_ATTR, value)),
        }
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
        let (got, encoding) = StoredData::chars_from_bytes(b"ab\0\0c d\0", &[2, 4], "c").unwrap();
        assert_eq!(got, StoredData::Chars(vec!["ab".into(), "c d".into()]));
        assert_eq!(encoding, TextEncoding::Utf8);
    }

    #[test]
    fn a_rank_one_char_array_is_one_string() {
        let (got, _) = StoredData::chars_from_bytes(b"hello\0", &[6], "c").unwrap();
        assert_eq!(got, StoredData::Chars(vec!["hello".into()]));
    }

    #[test]
    fn one_row_that_is_not_utf8_makes_the_whole_variable_latin1() {
        // "±" is 0xB1 in Latin-1; "é" in the other row is valid UTF-8 (0xC3 0xA9).
        let bytes = b"\xb10.1\0\xc3\xa9\0\0\0";
        let (got, encoding) = StoredData::chars_from_bytes(bytes, &[2, 5], "c").unwrap();
        assert_eq!(encoding, TextEncoding::Latin1);
        let StoredData::Chars(rows) = got else {
            panic!("not chars: {got:?}")
        };
        assert_eq!(
            rows,
            vec!["\u{b1}0.1".to_owned(), "\u{c3}\u{a9}".to_owned()]
        );
        let back: Vec<u8> = rows
            .iter()
            .flat_map(|r| r.chars().map(|c| u8::try_from(u32::from(c)).unwrap()))
            .collect();
        assert_eq!(back, b"\xb10.1\xc3\xa9");
    }

    #[test]
    fn valid_utf8_stays_utf8() {
        let (got, encoding) = StoredData::chars_from_bytes("é±".as_bytes(), &[4], "c").unwrap();
        assert_eq!(encoding, TextEncoding::Utf8);
        assert_eq!(got, StoredData::Chars(vec!["é±".into()]));
    }

    #[test]
    fn a_text_attribute_that_is_not_utf8_reads_as_latin1() {
        assert_eq!(
            StoredAttrValue::chars_from_bytes(b"ok \xb1 bytes\0"),
            StoredAttrValue::Chars("ok \u{b1} bytes".into())
        );
        assert_eq!(
            StoredAttrValue::chars_from_bytes("ok ± bytes".as_bytes()),
            StoredAttrValue::Chars("ok ± bytes".into())
        );
    }

    #[test]
    fn latin1_replaces_a_declared_encoding_and_utf8_adds_nothing() {
        let mut var = StoredVar {
            name: "c".into(),
            dims: vec!["n".into()],
            shape: vec![1],
            attrs: vec![StoredAttr::new(
                "_Encoding",
                StoredAttrValue::Chars("utf-8".into()),
            )],
            data: StoredData::Chars(vec!["x".into()]),
        };
        var.mark_encoding(TextEncoding::Utf8);
        assert_eq!(
            var.attr(ENCODING_ATTR).unwrap().value,
            StoredAttrValue::Chars("utf-8".into())
        );
        var.mark_encoding(TextEncoding::Latin1);
        assert_eq!(var.attrs.len(), 1);
        assert_eq!(
            var.attr(ENCODING_ATTR).unwrap().value,
            StoredAttrValue::Chars("latin-1".into())
        );
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
