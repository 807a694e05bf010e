//! [`SegmentError`]: everything that can go wrong with a segment.

use atlas_format::DType;
use atlas_io::IoError;

use crate::footer::validate::{ArrayProblem, FooterProblem};
use crate::write::sink::SinkError;

/// Why a segment could not be opened, read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SegmentError {
    /// The storage backend failed; the kind says whether retrying can help.
    #[error(transparent)]
    Io(#[from] IoError),
    /// The segment's trailer or footer cannot be handed to array-format.
    #[error("segment {segment:?} has an unusable footer")]
    Footer {
        /// The segment (variable) name.
        segment: String,
        /// What validation found.
        #[source]
        problem: FooterProblem,
    },
    /// One array of the segment is damaged; the others can still be used.
    #[error("segment {segment:?}, array {array:?} is damaged")]
    Array {
        /// The segment (variable) name.
        segment: String,
        /// The array (dataset) name.
        array: String,
        /// What validation found.
        #[source]
        problem: ArrayProblem,
    },
    /// The segment is damaged in a way array-format reported (or panicked on).
    #[error("segment {segment:?}{}: {what}", array.as_ref().map(|a| format!(", array {a:?}")).unwrap_or_default())]
    Corrupt {
        /// The segment (variable) name.
        segment: String,
        /// The array (dataset) concerned, if one.
        array: Option<String>,
        /// What is wrong.
        what: String,
    },
    /// A region, shape or definition the array cannot take.
    #[error("invalid request for array {array:?}: {what}")]
    InvalidRegion {
        /// The array.
        array: String,
        /// What is wrong with the request.
        what: String,
    },
    /// The element type asked for is not the array's.
    #[error("array {array:?} holds {stored}, not {requested}")]
    DTypeMismatch {
        /// The array.
        array: String,
        /// Its stored element type.
        stored: DType,
        /// The type asked for.
        requested: DType,
    },
    /// An element type this crate cannot read or write (bool, lists).
    #[error("array {array:?} holds {dtype}, which cannot be read or written")]
    Unsupported {
        /// The array.
        array: String,
        /// Its element type.
        dtype: DType,
    },
    /// The container writer refused or failed.
    #[error(transparent)]
    Sink(#[from] SinkError),
}

impl SegmentError {
    /// `Err(Array)` if validation recorded a problem with `array` among
    /// `problems` (array name to problem) of segment `segment`.
    pub(crate) fn validated(
        segment: &str,
        array: &str,
        problems: &std::collections::HashMap<String, ArrayProblem>,
    ) -> Result<(), Self> {
        match problems.get(array) {
            None => Ok(()),
            Some(problem) => Err(Self::Array {
                segment: segment.to_owned(),
                array: array.to_owned(),
                problem: problem.clone(),
            }),
        }
    }

    pub(crate) fn corrupt(segment: &str, array: Option<&str>, what: impl Into<String>) -> Self {
        Self::Corrupt {
            segment: segment.to_owned(),
            array: array.map(str::to_owned),
            what: what.into(),
        }
    }
}
