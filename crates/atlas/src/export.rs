//! The catalogue and values as text: CSV, NDJSON and Parquet writers of a
//! catalogue or a long table (one batch, or batch by batch), and the JSON form of values and attributes that
//! `atlas --json` and the NDJSON export share.

pub use crate::query::write_parquet;
pub use crate::query::{
    BatchWriter, ExportFormat, attr_value_json, bytes_json, cell_json, f32_json, float_json,
    write_csv, write_ndjson,
};
