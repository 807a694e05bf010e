//! The one error type of the facade.

use atlas_format::{DType, FormatError, Value};
use atlas_io::IoError;
use atlas_io::error::IoErrorKind;
use atlas_io::open::OpenError;
use atlas_segment::{SegmentError, SinkError};

/// Everything that can go wrong reading or writing a collection.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AtlasError {
    /// The object at the path is not an Atlas container; `found` says what it is.
    #[error("not an Atlas collection: found {found}")]
    NotAnAtlasCollection {
        /// What was found instead.
        found: String,
    },
    /// An Atlas container of a version this library does not read.
    #[error("unsupported Atlas format version {found} (this library reads {expected})")]
    UnsupportedVersion {
        /// Version in the file.
        found: u32,
        /// Version this library implements.
        expected: u32,
    },
    /// The container's structure (header, footer, trailer, the directory
    /// they describe) is damaged or inconsistent.
    #[error("corrupt Atlas collection{}", if what.is_empty() { String::new() } else { format!(": {what}") })]
    CorruptCollection {
        /// What is inconsistent (empty when `source` says it).
        what: String,
        /// The byte layer's finding, when it was one.
        #[source]
        source: Option<FormatError>,
    },
    /// A segment (one variable's array-format file) is damaged: its footer
    /// cannot be used, one of its arrays is ([`SegmentError::Array`], the
    /// others still read), or array-format refused it. The source says which
    /// ([`FooterProblem`](crate::FooterProblem), [`ArrayProblem`](crate::ArrayProblem)).
    #[error("corrupt Atlas collection")]
    CorruptSegment {
        /// What the segment layer found.
        #[source]
        source: SegmentError,
    },
    /// The deletion mask exists but is not a mask.
    #[error("corrupt deletion mask: {what}")]
    CorruptMask {
        /// What is wrong.
        what: String,
    },
    /// No live dataset has this name.
    #[error("dataset {name:?} not found")]
    DatasetNotFound {
        /// The name asked for.
        name: String,
    },
    /// The dataset (or collection) declares no array of this name.
    #[error("array {array:?} not found{}", dataset.as_ref().map(|d| format!(" in dataset {d:?}")).unwrap_or_default())]
    ArrayNotFound {
        /// The dataset asked about, if any.
        dataset: Option<String>,
        /// The array asked for.
        array: String,
    },
    /// The element type asked for is not the array's.
    #[error("array {array:?} holds {stored}, not {requested}")]
    DTypeMismatch {
        /// The array.
        array: String,
        /// Its declared element type.
        stored: DType,
        /// The type the caller asked for.
        requested: DType,
    },
    /// The array holds elements this library cannot read or write (bool, lists).
    #[error("array {array:?} holds {dtype}, which this library cannot read or write")]
    UnsupportedDType {
        /// The array.
        array: String,
        /// Its declared element type.
        dtype: DType,
    },
    /// A dataset or array name the format cannot hold.
    #[error("invalid name {name:?}: {reason}")]
    InvalidName {
        /// The refused name.
        name: String,
        /// Why.
        reason: String,
    },
    /// A dataset of this name was already added to the writer.
    #[error("dataset {name:?} already exists")]
    DatasetAlreadyExists {
        /// The repeated name.
        name: String,
    },
    /// An array of this name was already defined in the dataset.
    #[error("array {array:?} already exists in dataset {dataset:?}")]
    ArrayAlreadyExists {
        /// The dataset.
        dataset: String,
        /// The repeated array name.
        array: String,
    },
    /// A fill value that the array's element type cannot hold (a fill for a
    /// string array, a float fill for an integer array, ...).
    #[error("array {array:?}: a fill value {fill} does not apply to a {dtype} array")]
    FillTypeMismatch {
        /// The array.
        array: String,
        /// The array's element type.
        dtype: DType,
        /// The fill value given.
        fill: Value,
    },
    /// A region, shape or argument the array cannot take.
    #[error("invalid request for array {array:?}: {what}")]
    InvalidRegion {
        /// The array.
        array: String,
        /// What is wrong with the request.
        what: String,
    },
    /// The API was used out of order (e.g. a write after `finish`).
    #[error("invalid use: {what}")]
    InvalidUse {
        /// What was done wrong.
        what: String,
    },
    /// A path or URL that names no usable collection location (unknown scheme,
    /// missing bucket, a write to a read-only backend, a backend configuration
    /// OpenDAL refuses).
    #[error("{location}: {reason}")]
    InvalidLocation {
        /// The location as given.
        location: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The container writer refused a write or was left unusable by an earlier
    /// failure; nothing was committed.
    #[error("writing the container failed")]
    ContainerWrite {
        /// What the writer reported.
        #[source]
        source: SinkError,
    },
    /// A collection set's manifest (`set.manifest`) cannot be used: not a
    /// manifest, a set version this library does not read, or damaged.
    #[error("set manifest {path} cannot be used")]
    SetManifest {
        /// The manifest's path.
        path: String,
        /// What the decoder found.
        #[source]
        source: FormatError,
    },
    /// A member of a collection set failed to open or read; `source` says how
    /// (a missing member is an [`AtlasError::Io`] `NotFound` inside).
    #[error("set member {id:?}")]
    Member {
        /// The member's id in the manifest.
        id: String,
        /// The member's prefix.
        path: String,
        /// What went wrong in it.
        #[source]
        source: Box<AtlasError>,
    },
    /// Every attempt to commit to a set lost its race to another writer, or
    /// the set changed in a way this commit cannot merge with. Nothing was
    /// committed; retrying the operation can succeed.
    #[error(
        "commit to {path} lost to concurrent writers (last generation seen: {generation}): {what}; nothing was committed"
    )]
    CommitConflict {
        /// The manifest's path.
        path: String,
        /// The last manifest generation read.
        generation: u64,
        /// Why the commit gave up.
        what: String,
    },
    /// A variable a sorted compaction orders by holds more than one value in
    /// a dataset, so it gives that dataset no single place in the order.
    #[error("sort key {key:?} holds {values} values in dataset {dataset:?}, not one")]
    SortKeyNotScalar {
        /// The key variable.
        key: String,
        /// The first dataset found holding more than one value of it.
        dataset: String,
        /// How many values it holds there.
        values: u64,
    },
    /// The storage backend failed; the kind says whether retrying can help.
    #[error(transparent)]
    Io(#[from] IoError),
}

impl AtlasError {
    /// Shorthand for [`AtlasError::CorruptCollection`].
    pub fn corrupt(what: impl Into<String>) -> Self {
        Self::CorruptCollection {
            what: what.into(),
            source: None,
        }
    }

    /// What kind of failure this is; the one classification the CLI's exit
    /// codes and Python's exception classes are derived from. A failure
    /// inside a set member is classed as its cause.
    pub fn class(&self) -> ErrorClass {
        match self {
            Self::Member { source, .. } => source.class(),
            Self::Io(io) => match io.kind() {
                IoErrorKind::NotFound => ErrorClass::NotFound,
                IoErrorKind::Transient => ErrorClass::Retryable,
                _ => ErrorClass::Storage,
            },
            Self::CommitConflict { .. } => ErrorClass::Retryable,
            Self::NotAnAtlasCollection { .. } | Self::UnsupportedVersion { .. } => {
                ErrorClass::NotACollection
            }
            Self::SetManifest { source, .. } => match source {
                FormatError::UnsupportedVersion { .. } | FormatError::NotASetManifest { .. } => {
                    ErrorClass::NotACollection
                }
                _ => ErrorClass::Corrupt,
            },
            Self::CorruptCollection { .. }
            | Self::CorruptSegment { .. }
            | Self::CorruptMask { .. } => ErrorClass::Corrupt,
            Self::DatasetNotFound { .. } | Self::ArrayNotFound { .. } => ErrorClass::NotFound,
            Self::ContainerWrite { .. } => ErrorClass::Storage,
            Self::DTypeMismatch { .. }
            | Self::UnsupportedDType { .. }
            | Self::InvalidName { .. }
            | Self::DatasetAlreadyExists { .. }
            | Self::ArrayAlreadyExists { .. }
            | Self::FillTypeMismatch { .. }
            | Self::InvalidRegion { .. }
            | Self::InvalidUse { .. }
            | Self::InvalidLocation { .. }
            | Self::SortKeyNotScalar { .. } => ErrorClass::InvalidRequest,
        }
    }

    /// Whether the collection's bytes are damaged (the container, a segment,
    /// the mask or a set manifest), as opposed to a misuse or a storage failure.
    pub fn is_corruption(&self) -> bool {
        self.class() == ErrorClass::Corrupt
    }

    /// Whether retrying the same call later can succeed: storage that stayed
    /// unreachable or busy through every retry, or a commit that lost its race.
    pub fn is_retryable(&self) -> bool {
        self.class() == ErrorClass::Retryable
    }

    /// Whether what was asked for does not exist: the collection (or set
    /// member) at the location, a dataset or an array.
    pub fn is_not_found(&self) -> bool {
        self.class() == ErrorClass::NotFound
    }

    /// The error with the set member it happened in named.
    pub(crate) fn in_member(self, id: &str, path: &str) -> Self {
        Self::Member {
            id: id.to_owned(),
            path: path.to_owned(),
            source: Box::new(self),
        }
    }

    /// Shorthand for [`AtlasError::InvalidUse`].
    pub fn invalid_use(what: impl Into<String>) -> Self {
        Self::InvalidUse { what: what.into() }
    }
}

impl From<FormatError> for AtlasError {
    fn from(e: FormatError) -> Self {
        match e {
            FormatError::NotAnAtlasCollection { found } => Self::NotAnAtlasCollection { found },
            FormatError::UnsupportedVersion { found, expected } => {
                Self::UnsupportedVersion { found, expected }
            }
            FormatError::CorruptMask { what } => Self::CorruptMask { what },
            FormatError::InvalidName { name, reason } => Self::InvalidName {
                name,
                reason: reason.to_owned(),
            },
            FormatError::Misuse { what } => Self::InvalidUse {
                what: what.to_owned(),
            },
            // The byte layer's own words for a damaged container; any other
            // finding (a damaged set manifest or sidecar) stays its source.
            FormatError::CorruptCollection { what } => {
                Self::CorruptCollection { what, source: None }
            }
            other => Self::CorruptCollection {
                what: String::new(),
                source: Some(other),
            },
        }
    }
}

impl From<OpenError> for AtlasError {
    fn from(e: OpenError) -> Self {
        match e {
            OpenError::Io(io) => Self::Io(io),
            OpenError::Format(f) => Self::from(f),
            other => Self::corrupt(other.to_string()),
        }
    }
}

impl From<SegmentError> for AtlasError {
    fn from(e: SegmentError) -> Self {
        match e {
            SegmentError::Io(io) | SegmentError::Sink(SinkError::Io(io)) => Self::Io(io),
            SegmentError::Sink(source) => Self::ContainerWrite { source },
            SegmentError::InvalidRegion { array, what } => Self::InvalidRegion { array, what },
            SegmentError::DTypeMismatch {
                array,
                stored,
                requested,
            } => Self::DTypeMismatch {
                array,
                stored,
                requested,
            },
            SegmentError::Unsupported { array, dtype } => Self::UnsupportedDType { array, dtype },
            source => Self::CorruptSegment { source },
        }
    }
}

/// What kind of failure an error is, reduced to what callers act on: give
/// up, fix the request, repair the data, or try again later.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorClass {
    /// What was asked for does not exist: the collection or set at the
    /// location, a set member, a dataset or an array.
    NotFound,
    /// The location holds something other than an Atlas collection or set
    /// (or a version of one this library does not read).
    NotACollection,
    /// The stored bytes are damaged: the container, a segment, the mask or
    /// a set manifest.
    Corrupt,
    /// Trying again later can succeed: storage stayed unreachable or busy
    /// through every retry, or a set commit lost every race. Nothing is damaged.
    Retryable,
    /// Storage refused in a way retrying does not fix (permission denied, an
    /// operation the backend lacks, a failed container write).
    Storage,
    /// The request or the use of the API is wrong (bad name, region, type,
    /// location, or a call out of order).
    InvalidRequest,
}

/// An error with its causes, each once: `{}` is one line joining each
/// layer's text with `: `, down to (not into) the storage backend's own
/// error; `{:#}` is every cause on a line of its own, the backend's included.
///
/// Each error type of this library describes its own layer only and leaves
/// its cause to [`source`](std::error::Error::source), so this is how to show
/// the whole story.
#[derive(Debug, Clone, Copy)]
pub struct ErrorReport<'a>(&'a (dyn std::error::Error + 'static));

impl<'a> ErrorReport<'a> {
    /// The report of `error` and its chain of sources.
    pub fn new(error: &'a (dyn std::error::Error + 'static)) -> Self {
        Self(error)
    }

    /// The errors of the chain, outermost first.
    pub fn chain(&self) -> impl Iterator<Item = &'a (dyn std::error::Error + 'static)> + use<'a> {
        std::iter::successors(Some(self.0), |e| e.source())
    }
}

impl std::fmt::Display for ErrorReport<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let full = f.alternate();
        let mut shown: Vec<String> = Vec::new();
        for e in self.chain() {
            // OpenDAL's display includes its own causes and request context:
            // detail, not part of the one line.
            let backend = e.is::<opendal::Error>();
            if backend && !full {
                break;
            }
            let text = e.to_string();
            // A wrapper that shows its cause's words adds nothing.
            if text.is_empty() || shown.last().is_some_and(|last| *last == text) {
                continue;
            }
            if !shown.is_empty() {
                f.write_str(if full { "\n  caused by: " } else { ": " })?;
            }
            f.write_str(&text)?;
            shown.push(text);
            if backend {
                break;
            }
        }
        Ok(())
    }
}

/// Result alias of the facade.
pub type Result<T, E = AtlasError> = std::result::Result<T, E>;
