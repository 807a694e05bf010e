//! # atlas-netcdf
//!
//! NetCDF files become Atlas datasets, natively in Rust: one dataset per
//! file, named after the file, in sorted path order. Files are read with the
//! pure-Rust `netcdf-reader` (NETCDF3 classic, 64-bit offset, CDF-5,
//! NETCDF4, NETCDF4_CLASSIC; no system library).
//!
//! Two mappings ([`Decode`]): [`Decode::Cf`] builds what atlas-python's
//! `atlas create` builds (xarray's default decoding; see [`cf`]), so users
//! can switch tools without their collections changing; [`Decode::Raw`]
//! keeps the file exactly as stored (see [`raw`]).
//!
//! Layers: a reader loads a file into its stored form ([`stored`]), a mapping
//! turns that into the tool-neutral [`model::Dataset`], and [`sink`] (the
//! only module that calls the Atlas writer) writes it. [`ingest()`] runs that
//! over many files; [`feed::Feed`] runs it over stored forms another front
//! end built in memory (the Python package's `atlasds.write`).
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! use atlas::{AtlasWriter, WriterConfig};
//! use atlas_netcdf::{IngestOptions, discover, ingest};
//!
//! let files = discover(&["/data/argo".into()], true)?;
//! let writer = AtlasWriter::create("/data/argo.atlas", &WriterConfig::default()).await?;
//! let report = ingest(&files, writer, &IngestOptions::default().with_jobs(4)).await?;
//! println!("{} datasets", report.written.len());
//! # Ok(())
//! # }
//! ```

mod attrs;
pub mod cf;
mod cftime;
pub mod discover;
pub mod error;
pub mod feed;
pub mod gdac;
pub mod ingest;
pub mod mapping;
pub mod model;
pub mod order;
mod pyjson;
pub mod raw;
mod reader;
pub mod remote;
pub mod sink;
pub mod stored;
pub mod sync;

pub use discover::{NETCDF_SUFFIXES, discover};
pub use error::{FileError, IngestError, TimeError};
pub use feed::{Feed, FeedReport};
pub use gdac::{GdacIndex, IndexEntry, IndexError, parse_index};
pub use ingest::{
    Decode, IngestOptions, IngestReport, Progress, SkipReason, SkippedFile, SkippedVariable,
    UndecodedVariable, WrittenFile, ingest, ingest_with_progress, map_file, map_stored,
    read_stored,
};
pub use mapping::{Mapped, SkippedArray, UndecodedArray};
pub use model::{Array, Dataset};
pub use order::{OrderedFiles, order_files};
pub use remote::{discover_sources, is_url};
pub use stored::{
    ENCODING_ATTR, LATIN1, StoredAttr, StoredAttrValue, StoredData, StoredFile, StoredGroup,
    StoredVar, TextEncoding, shaped,
};
pub use sync::{
    DATE_UPDATE_ATTR, PlannedFile, Removal, ReplaceKind, Replacement, SOURCE_ATTR, SkippedName,
    SourceRoot, SyncError, SyncOptions, SyncPlan, SyncReport, SyncSkip, apply_sync, plan_sync,
    read_index,
};
