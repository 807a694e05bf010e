//! The one error type of the byte layer: every failure names what is wrong.

/// Why bytes could not be read as (part of) an Atlas collection.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    /// The bytes are not an Atlas container at all; `found` says what they look like.
    #[error("not an Atlas collection: found {found}")]
    NotAnAtlasCollection {
        /// A description of what was found instead (empty object, Parquet, HDF5, ...).
        found: String,
    },
    /// An Atlas container, but of a version this crate does not read.
    #[error("unsupported Atlas format version {found} (this reader supports {expected})")]
    UnsupportedVersion {
        /// The version in the file.
        found: u32,
        /// The version this crate implements.
        expected: u32,
    },
    /// An Atlas container whose structure is damaged or inconsistent.
    #[error("corrupt Atlas collection: {what}")]
    CorruptCollection {
        /// What exactly is inconsistent.
        what: String,
    },
    /// The deletion mask exists but is not a mask (wrong magic or version).
    #[error("corrupt deletion mask: {what}")]
    CorruptMask {
        /// What exactly is wrong.
        what: String,
    },
    /// The bytes are not a set manifest at all; `found` says what they look like.
    #[error("not an Atlas set manifest: found {found}")]
    NotASetManifest {
        /// A description of what was found instead (empty object, a container, ...).
        found: String,
    },
    /// A set manifest whose bytes are damaged (truncated, failed checksum,
    /// undecodable body) or whose content is inconsistent.
    #[error("corrupt set manifest: {what}")]
    CorruptSetManifest {
        /// What exactly is wrong.
        what: String,
    },
    /// The bytes are not a checksum sidecar at all; `found` says what they look like.
    #[error("not an Atlas checksum sidecar: found {found}")]
    NotAChecksumSidecar {
        /// A description of what was found instead.
        found: String,
    },
    /// A checksum sidecar whose bytes are damaged (truncated, failed
    /// checksum, undecodable body) or whose content is inconsistent.
    #[error("corrupt checksum sidecar: {what}")]
    CorruptChecksumSidecar {
        /// What exactly is wrong.
        what: String,
    },
    /// A dataset or array name that the format cannot hold.
    #[error("invalid name {name:?}: {reason}")]
    InvalidName {
        /// The refused name.
        name: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// The caller broke the decoder's protocol (e.g. pushed bytes nobody asked for).
    #[error("decoder misuse: {what}")]
    Misuse {
        /// What the caller did wrong.
        what: &'static str,
    },
}

impl FormatError {
    /// Shorthand for [`FormatError::CorruptCollection`].
    pub fn corrupt(what: impl Into<String>) -> Self {
        Self::CorruptCollection { what: what.into() }
    }
}

/// Result alias of this crate.
pub type Result<T, E = FormatError> = std::result::Result<T, E>;
