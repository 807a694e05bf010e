//! The one error type of the facade.

use atlas_format::FormatError;
use atlas_io::IoError;
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
    #[error("corrupt Atlas collection: {what}")]
    CorruptCollection {
        /// What is inconsistent.
        what: String,
        /// The byte layer's finding, when it was one.
        #[source]
        source: Option<FormatError>,
    },
    /// A segment (one variable's array-format file) is damaged: its footer
    /// cannot be used, one of its arrays is ([`SegmentError::Array`], the
    /// others still read), or array-format refused it. The source says which
    /// ([`FooterProblem`](crate::FooterProblem), [`ArrayProblem`](crate::ArrayProblem)).
    #[error("corrupt Atlas collection: {source}")]
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
        stored: String,
        /// The type the caller asked for.
        requested: String,
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
        dtype: String,
        /// The fill value given, as text.
        fill: String,
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
    #[error("writing the container failed: {source}")]
    ContainerWrite {
        /// What the writer reported.
        #[source]
        source: SinkError,
    },
    /// A collection set's manifest (`set.manifest`) cannot be used: not a
    /// manifest, a set version this library does not read, or damaged.
    #[error("set manifest {path}: {source}")]
    SetManifest {
        /// The manifest's path.
        path: String,
        /// What the decoder found.
        #[source]
        source: FormatError,
    },
    /// A member of a collection set failed to open or read; `source` says how
    /// (a missing member is an [`AtlasError::Io`] `NotFound` inside).
    #[error("set member {id:?} ({path}): {source}")]
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
        "commit to {path} lost to concurrent writers (last generation seen: {generation}): {what}; nothing was committed, retry"
    )]
    CommitConflict {
        /// The manifest's path.
        path: String,
        /// The last manifest generation read.
        generation: u64,
        /// Why the commit gave up.
        what: String,
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

    /// Whether the collection's bytes are damaged (the container or a
    /// segment), as opposed to a misuse or a storage failure.
    pub fn is_corruption(&self) -> bool {
        match self {
            Self::CorruptCollection { .. }
            | Self::CorruptSegment { .. }
            | Self::CorruptMask { .. } => true,
            Self::SetManifest { source, .. } => !matches!(
                source,
                FormatError::UnsupportedVersion { .. } | FormatError::NotASetManifest { .. }
            ),
            Self::Member { source, .. } => source.is_corruption(),
            _ => false,
        }
    }

    /// Whether retrying the same call can succeed: a transient storage failure
    /// or a commit that lost its race.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Io(io) => io.is_transient(),
            Self::CommitConflict { .. } => true,
            Self::Member { source, .. } => source.is_retryable(),
            _ => false,
        }
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
            other => Self::CorruptCollection {
                what: match &other {
                    FormatError::CorruptCollection { what, .. } => what.clone(),
                    other => other.to_string(),
                },
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
                stored: stored.display_name(),
                requested: requested.display_name(),
            },
            SegmentError::Unsupported { array, dtype } => Self::DTypeMismatch {
                array,
                stored: dtype.display_name(),
                requested: "an element type atlas can read".to_owned(),
            },
            source => Self::CorruptSegment { source },
        }
    }
}

/// Result alias of the facade.
pub type Result<T, E = AtlasError> = std::result::Result<T, E>;
