//! Finding datasets by what they hold, from segment footers alone.
//!
//! Every segment records, per dataset, the count, nulls, minimum and maximum of
//! each array, and the `_datasets` segment holds dataset attributes. This module
//! turns those into:
//!
//! - [`Atlas::catalogue`](crate::Atlas::catalogue): one Arrow row per live
//!   dataset with its attributes and array statistics;
//! - [`Atlas::select`](crate::Atlas::select): the names of the live datasets a
//!   [`Predicate`] accepts;
//! - [`parse`]: the text form of a predicate (`LATITUDE between -10 10 and
//!   JULD >= 2020-01-01`), kept here so every front end shares one language;
//! - [`Atlas::table`](crate::Atlas::table): the values of chosen arrays over
//!   many datasets as one long Arrow table (a row per element), streamed;
//! - `export`: a table as CSV, NDJSON or (feature `parquet`) Parquet, from one
//!   batch or a stream of them.
//!
//! Cost: one segment-footer read per variable involved (all attributes share
//! `_datasets`), issued concurrently; never an array block. The exact meaning
//! of each operator, and which ones statistics decide exactly, is on
//! [`Predicate`].

mod catalogue;
mod error;
mod eval;
mod export;
mod facts;
mod json_value;
mod parse;
mod predicate;
mod table;
mod value;

pub use catalogue::CatalogueOptions;
pub use error::{ParseError, QueryError};
pub use export::write_parquet;
pub use export::{BatchWriter, ExportFormat, cell_json, write_csv, write_ndjson};
pub use json_value::{attr_value_json, bytes_json, f32_json, float_json};
pub use predicate::{CmpOp, Field, Predicate, StatField};
pub use table::{DEFAULT_ROWS_PER_BATCH, TableOptions, TableStream};
pub use value::Value;

/// The Arrow types a catalogue is made of, re-exported so callers need no
/// direct dependency on arrow-rs to hold one.
pub use arrow_array::RecordBatch;
/// The schema of a [`TableStream`], known before its first batch.
pub use arrow_schema::{ArrowError, Schema, SchemaRef};
pub(crate) use catalogue::{attr_column, catalogue_with};
pub(crate) use eval::Declared;
pub(crate) use eval::{Plan, select_with};
pub(crate) use table::{ruled_out, table_with};
pub(crate) use value::{Scalar, order};
