//! # atlas
//!
//! Thousands of N-dimensional datasets in one write-once object, read back with a
//! handful of range requests. [`Atlas`] opens a collection (one read of the
//! container's tail) and answers catalogue questions from memory; array data,
//! attributes and statistics come from the per-variable segments on demand.
//! [`AtlasWriter`] builds a collection in one streaming pass.
//!
//! ```
//! use atlas::{Atlas, AtlasWriter, WriterConfig};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> atlas::Result<()> {
//! # let tmp = tempfile::tempdir().unwrap();
//! # let dir = tmp.path().join("argo");
//! // Write: one DatasetWriter per dataset, on as many tasks as you like.
//! let writer = AtlasWriter::create_path(&dir, WriterConfig::default()).await?;
//! let mut ds = writer.add_dataset("R6901234_001.nc")?; // ordinal = order of add_dataset
//! ds.define_array::<f32>("TEMP", &["N_LEVELS"], &[3], None, Some(99999.0))?;
//! ds.write_array("TEMP", &[0], ndarray::arr1(&[11.2f32, 11.1, 10.9]).into_dyn().view())?;
//! ds.set_attribute("platform_number", "6901234")?;
//! ds.finish().await?;
//! writer.finish().await?; // the only commit point
//!
//! // Read: one request to open, none for the catalogue.
//! let atlas = Atlas::open_path(&dir).await?;
//! assert!(atlas.list_datasets().contains(&"R6901234_001.nc"));
//! let temp = atlas
//!     .dataset("R6901234_001.nc")?
//!     .read_array::<f32>("TEMP", atlas::Region::all())
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
//! `atlas-segment` (array-format, behind one wall) → this crate (meaning) →
//! `atlas-cli` (people).

pub mod blocking;

/// The README's Rust examples, compiled and run as doctests.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

pub mod error;
pub mod location;
pub mod query;
pub mod read;
mod recompute;
pub mod verify;
pub mod write;

/// Test doubles for code built on Atlas: count requests and bytes, inject
/// latency and faults, and a memory service with compare-and-swap writes.
#[cfg(feature = "testing")]
pub mod testing {
    pub use atlas_io::{CasMemory, CountingLayer, Counts, Faults, ReadRecord, RequestStats};
}

pub use atlas_format::{
    CONTAINER_FILE, Codec, DATASETS_SEGMENT, DType, DatasetSchema, MASK_FILE, validate_name,
};
pub use atlas_io::{
    IoError, IoErrorKind, Leftover, LeftoverKind, MultipartUploads, RetryPolicy, Upload,
    install_http_transport,
};
pub use atlas_segment::{
    AnyArray, ArrayData, ArrayProblem, ArrayStats, Attr, Element, FillValue, FooterProblem,
    SegmentError, SinkError, Stat, Timestamp, for_each_array_data,
};
pub use error::{AtlasError, Result};
pub use location::{Access, Location, Scheme, StorageOptions};
pub use ndarray;
pub use opendal;
pub use query::{CatalogueOptions, Predicate, QueryError, StatField};
pub use read::*;
pub use verify::{Checked, Finding, ProgressFn, VerifyOptions, VerifyReport, leftover_findings};
pub use write::*;
