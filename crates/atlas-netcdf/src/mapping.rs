//! What both mappings share: their output, array naming for groups, and name checks.

use std::collections::HashMap;

use atlas::ArrayData;
use atlas::ndarray::{ArrayD, IxDyn};

use crate::error::{FileError, TimeError};
use crate::model::Dataset;

/// A variable a mapping left out (with `skip_unsupported`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedArray {
    /// The variable's array name (group path included).
    pub array: String,
    /// Its NetCDF type.
    pub dtype: String,
}

/// A time variable `--decode cf` stored undecoded, as `--decode raw` stores
/// it (its numbers, with `units` and `calendar` kept as attributes), because
/// its times have no `timestamp_ns` form.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct UndecodedArray {
    /// The variable's array name (group path included).
    pub array: String,
    /// Why it could not be decoded.
    pub reason: TimeError,
}

/// A file mapped to a dataset, with what was left out and what was chosen.
#[derive(Debug, Clone, PartialEq)]
pub struct Mapped {
    /// The dataset.
    pub dataset: Dataset,
    /// Variables left out.
    pub skipped: Vec<SkippedArray>,
    /// Time variables stored undecoded (`--decode cf` only).
    pub undecoded: Vec<UndecodedArray>,
    /// Choices worth telling the user (e.g. a flag variable stored as `uint8`).
    pub notes: Vec<String>,
}

/// Array names of variables, including those in sub-groups.
///
/// Rule: a root-group variable keeps its name; a variable in a sub-group is
/// named by its group path and its name joined with `.`
/// (`profile/qc/pres_qc` becomes `profile.qc.pres_qc`). Atlas refuses `/` in
/// names, and NetCDF names never contain `/`, so the path survives with a
/// different separator. Two variables that end up with one name are an error.
#[derive(Debug, Default)]
pub(crate) struct Naming {
    taken: HashMap<String, String>,
}

impl Naming {
    /// The variable's path as NetCDF writes it (`group/sub/name`).
    pub fn full_name(&self, group: &[String], name: &str) -> String {
        let mut parts: Vec<&str> = group.iter().map(String::as_str).collect();
        parts.push(name);
        parts.join("/")
    }

    /// The array name of `name` in `group`; refuses a second claim of one name.
    pub fn claim(&mut self, group: &[String], name: &str) -> Result<String, FileError> {
        let full = self.full_name(group, name);
        let mut parts: Vec<&str> = group.iter().map(String::as_str).collect();
        parts.push(name);
        let array = parts.join(".");
        if let Some(first) = self.taken.get(&array) {
            return Err(FileError::NameCollision {
                name: array,
                first: first.clone(),
                second: full,
            });
        }
        self.taken.insert(array.clone(), full);
        Ok(array)
    }
}

/// Refuses an array name Atlas cannot hold (reported, never renamed).
pub(crate) fn check_name(name: &str, variable: &str) -> Result<(), FileError> {
    atlas::validate_name(name).map_err(|e| FileError::InvalidArrayName {
        variable: variable.to_owned(),
        reason: e.to_string(),
    })
}

/// The note for an attribute of a type Atlas cannot store, which is left out.
pub(crate) fn dropped_attribute(owner: &str, key: &str) -> String {
    format!("attribute {key:?} of {owner} has a type Atlas cannot store and was left out")
}

/// The note for a char variable read as Latin-1 ([`crate::stored::TextEncoding`]),
/// where atlas-python stores U+FFFD.
pub(crate) fn latin1_note(variable: &str) -> String {
    format!(
        "{variable}: bytes that are not UTF-8 are stored as Latin-1 text (_Encoding = \"latin-1\"; \
         atlas-python stores U+FFFD for them)"
    )
}

/// Row-major strings as a string array of `shape` ([`FileError::Shape`] when
/// they do not fill it). `variable` names it in the error.
pub(crate) fn string_array(
    values: Vec<String>,
    shape: &[u64],
    variable: &str,
) -> Result<ArrayData, FileError> {
    let shape_error = |reason: String| FileError::Shape {
        variable: variable.to_owned(),
        reason,
    };
    let dims = shape
        .iter()
        .map(|&l| usize::try_from(l))
        .collect::<Result<Vec<usize>, _>>()
        .map_err(|_| shape_error("an axis does not fit this platform".into()))?;
    let count = values.len();
    ArrayD::from_shape_vec(IxDyn(&dims), values)
        .map(ArrayData::String)
        .map_err(|e| shape_error(format!("{count} strings for shape {shape:?}: {e}")))
}
