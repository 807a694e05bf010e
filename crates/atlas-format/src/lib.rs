//! # atlas-format
//!
//! The byte layer of the Atlas collection format, version 8, with no I/O:
//! it answers "which bytes do you need next?" ([`OpenDecoder`]) and "here is
//! what those bytes mean" ([`CollectionFooter`], [`DeletionMask`]), and builds
//! the same bytes for writers ([`FooterBuilder`], [`Trailer`], [`encode_header`]).
//! It also holds the codec of a set's manifest ([`SetManifest`]), the object
//! that lists a set's member collections, and of the checksum sidecar
//! ([`ChecksumSidecar`]) a lone collection may carry.
//!
//! It has no async runtime, no storage client and no array-format: segments
//! are opaque byte ranges here. Every decoder returns errors, never panics,
//! and allocates no more than the bytes it was given justify.

#![forbid(unsafe_code)]
pub mod checksum_sidecar;
pub mod constants;
pub mod dtype;
pub mod error;
pub mod footer;
pub mod frame;
pub mod mask;
mod msgpack_guard;
pub mod name;
pub mod open;
pub mod schema;
pub mod set_manifest;
pub mod time;
pub mod value;

pub use checksum_sidecar::ChecksumSidecar;
pub use constants::*;
pub use dtype::{DType, ParseDTypeError};
pub use error::{FormatError, Result};
pub use footer::{
    Codec, CollectionFooter, DecodeLimits, InternedSchema, VariableEntry, decompress_bounded,
};
pub use frame::{Trailer, check_header, encode_header, identify};
pub use mask::{DeletionMask, MaskWarning};
pub use name::validate_name;
pub use open::{DecodeResult, OpenDecoder, OpenedContainer, ReadRequest, assemble, open_bytes};
pub use schema::{ArrayDecl, ArrayMeta, DatasetSchema, FooterBuilder, SchemaView};
pub use set_manifest::{
    AttributeSummary, ChecksumAlgorithm, MemberChecksums, MemberEntry, NameRange, SegmentChecksum,
    SetManifest, VariableSummary, crc32c,
};
pub use time::{ParseTimestampError, Timestamp};
pub use value::Value;
