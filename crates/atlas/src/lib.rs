//! # atlas
//!
//! Thousands of N-dimensional datasets in one write-once object, read back with a
//! handful of range requests. [`Atlas`] opens a collection, a set of many
//! containers or a lone one, in one round trip and answers catalogue
//! questions from memory; array data, attributes and statistics come from the
//! per-variable segments on demand. [`AtlasWriter`] builds a collection in
//! one streaming pass; [`SetWriter`] commits new members to a set.
//!
//! ```
//! use atlas::{Atlas, AtlasWriter, OpenOptions, Region, WriterConfig};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> atlas::Result<()> {
//! # let tmp = tempfile::tempdir().unwrap();
//! # let dir = tmp.path().join("argo");
//! // Write: one DatasetWriter per dataset, on as many tasks as you like.
//! let writer = AtlasWriter::create(&dir, &WriterConfig::default()).await?;
//! let mut ds = writer.add_dataset("R6901234_001.nc")?; // ordinal = order of add_dataset
//! ds.define_array::<f32>("TEMP", &["N_LEVELS"], &[3], None, Some(99999.0))?;
//! ds.write_array("TEMP", &[0], ndarray::arr1(&[11.2f32, 11.1, 10.9]).into_dyn().view())?;
//! ds.set_attribute("platform_number", "6901234")?;
//! ds.finish().await?;
//! writer.finish().await?; // the only commit point
//!
//! // Read: one request to open (a path, or an s3:// gs:// az:// http(s):// URL),
//! // none for the catalogue.
//! let atlas = Atlas::open(&dir, &OpenOptions::default()).await?;
//! assert!(atlas.contains("R6901234_001.nc").await?);
//! let temp = atlas
//!     .dataset("R6901234_001.nc")
//!     .await?
//!     .read_array::<f32>("TEMP", Region::all())
//!     .await?;
//! assert_eq!(temp.len(), 3);
//! let stats = atlas.array_stats("TEMP").await?; // one segment open for all datasets
//! assert!(stats.is_some());
//! atlas.delete_datasets(&["R6901234_001.nc"]).await?; // the mask: one read-modify-write
//! # Ok(())
//! # }
//! ```
//!
//! Layering: `atlas-format` (bytes) → `atlas-io` (transport) →
//! `atlas-segment` (the segment format, on array-format's types) → this
//! crate (meaning) → `atlas-cli` and the Python package (people).

#![warn(missing_docs, clippy::missing_errors_doc)]

/// The README's Rust examples, compiled and run as doctests.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

mod error;
pub mod export;
mod index;
mod location;
mod query;
mod read;
mod recompute;
mod set;
mod verify;
mod write;

/// Test doubles for code built on Atlas: count requests and bytes, inject
/// latency and faults, and a memory service with compare-and-swap writes.
#[cfg(feature = "testing")]
pub mod testing {
    pub use atlas_io::{CasMemory, CountingLayer, Counts, Faults, ReadRecord, RequestStats};

    /// The manifest entry a set commit records of `member` as member `id` at
    /// `path`: counts, size, per-variable and per-attribute bounds over the
    /// live datasets, checksums. Here so tests can check what a set's pruning
    /// will rely on.
    ///
    /// # Errors
    /// As the statistics and attribute calls it makes
    /// ([`crate::AtlasError::CorruptSegment`], [`crate::AtlasError::Io`], ...).
    pub async fn member_entry(
        member: &crate::Member,
        id: &str,
        path: &str,
    ) -> crate::Result<crate::MemberEntry> {
        crate::set::summary::member_entry(member, id, path).await
    }
}

// Formats and names of the container (atlas-format).
pub use atlas_format::{
    ArrayMeta, CONTAINER_FILE, Codec, DATASETS_SEGMENT, DType, DatasetSchema, DecodeLimits,
    FormatError, INDEX_FILE, MASK_FILE, ParseDTypeError, SchemaView, validate_name,
};
// Instants: nanoseconds since the epoch, printed and parsed as ISO 8601, and
// the calendar beneath them (atlas-format).
pub use atlas_format::time;
pub use atlas_format::{ParseTimestampError, Timestamp};
// The set manifest, what it records of a member, and the checksum sidecar's content (atlas-format).
pub use atlas_format::{
    AttributeSummary, CHECKSUM_SIDECAR_FILE, ChecksumAlgorithm, MemberChecksums, MemberEntry,
    NameRange, SET_MANIFEST_FILE, SET_MEMBERS_DIR, SegmentChecksum, SetManifest, VariableSummary,
};
// Storage: errors, retries, split reads, leftovers of interrupted writes (atlas-io).
pub use atlas_io::{
    IoError, IoErrorKind, Leftover, LeftoverKind, MultipartUploads, ReadParallelism, RetryPolicy,
    Upload, WriteGuarantee,
};
// One scalar of stored data: a fill value, a statistic's or summary's bound,
// a query literal (atlas-format).
pub use atlas_format::Value;
// Arrays, attributes and statistics, and what a damaged segment is (atlas-segment).
pub use atlas_segment::{
    AnyArray, ArrayData, ArrayProblem, ArrayStats, Attr, Element, FooterProblem,
    PLACED_ARRAYS_KEPT, SegmentError, SinkError, for_each_array_data,
};
/// The n-dimensional arrays reads return and writes take.
pub use ndarray;
/// The OpenDAL operator an [`Address`] can be built from (`(op, prefix)`).
pub use opendal::Operator;
/// A dataset name as the footer holds it: cloned without allocating when
/// short (up to 23 bytes), so listing names costs no allocation per name.
pub use smol_str::SmolStr;

pub use error::{AtlasError, ErrorClass, ErrorReport, Result};
pub use index::{DEFAULT_INDEX_CACHE_BYTES, IndexOptions, IndexReport};
pub use location::{Access, Address, Location, Scheme, StorageOptions};
pub use query::{
    ArrowError, CatalogueOptions, CmpOp, DEFAULT_ROWS_PER_BATCH, Field, ParseError, Predicate,
    QueryError, RecordBatch, Schema, SchemaRef, StatField, TableOptions, TableStream,
};
pub use read::{
    ArrayLayout, Dataset, DatasetBlock, DatasetShape, DatasetStats, DeleteOutcome, Member,
    OpenOptions, Order, Region, SegmentInfo, Selection,
};
pub use set::integrity::{ChecksumMismatch, ChecksumPart};
pub use set::{
    Atlas, CommitOutcome, CompactOptions, CompactOutcome, DEFAULT_RETENTION, DeleteOptions,
    MemberWriter, SetWriter, SortKey, UncommittedMember, member_id, member_path,
    remove_uncommitted_member, sort_order, uncommitted_members,
};
pub use verify::{Checked, Finding, ProgressFn, VerifyOptions, VerifyReport, leftover_findings};
pub use write::{
    AtlasWriter, DEFAULT_SMALL_BLOCK_TARGET_SIZE, DEFAULT_ZSTD_LEVEL, DatasetWriter,
    SMALL_CHUNK_BYTES, WriteSummary, WriterConfig, rewrite,
};
