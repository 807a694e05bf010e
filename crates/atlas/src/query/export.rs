//! Tables out of the process: CSV, NDJSON and (feature `parquet`) Parquet.
//!
//! One mechanism, [`BatchWriter`], writes a table batch by batch (a long
//! table from [`Atlas::table`](crate::Atlas::table) that never sits in memory
//! whole); the one-batch writers of the catalogue ([`write_csv`],
//! [`write_ndjson`], [`write_parquet`]) are it, given one batch.
//!
//! CSV and NDJSON share one cell rendering ([`cell_json`]): numbers as JSON
//! numbers (non-finite floats as `"NaN"`, `"inf"`, `"-inf"`), timestamps as
//! RFC 3339 UTC text, binary as a list of byte values, lists as JSON arrays.
//! In CSV a null is an empty field and text is written bare (quoted when needed).

use std::io::Write;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, TimestampNanosecondType,
    UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{Array, RecordBatch};
use arrow_schema::{DataType, SchemaRef};
use serde_json::Value;

use super::error::QueryError;
use super::json_value::{bytes_json, f32_json, float_json};
use crate::Timestamp;

/// The value at `row` of `array` as JSON (`null` for a null or a type no
/// catalogue column has).
pub fn cell_json(array: &dyn Array, row: usize) -> Value {
    if row >= array.len() || array.is_null(row) {
        return Value::Null;
    }
    macro_rules! prim {
        ($t:ty, $f:expr) => {
            array
                .as_primitive_opt::<$t>()
                .map_or(Value::Null, |a| $f(a.value(row)))
        };
    }
    match array.data_type() {
        DataType::Boolean => array
            .as_boolean_opt()
            .map_or(Value::Null, |a| Value::from(a.value(row))),
        DataType::Int8 => prim!(Int8Type, Value::from),
        DataType::Int16 => prim!(Int16Type, Value::from),
        DataType::Int32 => prim!(Int32Type, Value::from),
        DataType::Int64 => prim!(Int64Type, Value::from),
        DataType::UInt8 => prim!(UInt8Type, Value::from),
        DataType::UInt16 => prim!(UInt16Type, Value::from),
        DataType::UInt32 => prim!(UInt32Type, Value::from),
        DataType::UInt64 => prim!(UInt64Type, Value::from),
        DataType::Float32 => prim!(Float32Type, f32_json),
        DataType::Float64 => prim!(Float64Type, float_json),
        DataType::Timestamp(_, _) => {
            prim!(TimestampNanosecondType, |ns| Value::from(
                Timestamp(ns).to_string()
            ))
        }
        DataType::Utf8 => array
            .as_string_opt::<i32>()
            .map_or(Value::Null, |a| Value::from(a.value(row))),
        DataType::Binary => array
            .as_binary_opt::<i32>()
            .map_or(Value::Null, |a| bytes_json(a.value(row))),
        // Tables key their dictionaries by i32 (the `dataset` column).
        DataType::Dictionary(_, _) => array
            .as_dictionary_opt::<Int32Type>()
            .and_then(|a| usize::try_from(a.keys().value(row)).ok().map(|k| (a, k)))
            .map_or(Value::Null, |(a, k)| cell_json(a.values().as_ref(), k)),
        DataType::List(_) => array.as_list_opt::<i32>().map_or(Value::Null, |a| {
            let items = a.value(row);
            Value::Array((0..items.len()).map(|i| cell_json(&items, i)).collect())
        }),
        _ => Value::Null,
    }
}

/// One CSV field: text bare, everything else as its JSON; quoted when it holds
/// a comma, a quote or a line break.
fn csv_field(out: &mut String, text: &str) {
    if text.contains([',', '"', '\n', '\r']) {
        out.push('"');
        out.push_str(&text.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(text);
    }
}

/// A file format a table can be written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExportFormat {
    /// A header of column names, then one line per row (see the module docs).
    Csv,
    /// One JSON object per row, keys in column order.
    Ndjson,
    /// One Parquet file, zstd-compressed, a row group per batch written.
    Parquet,
}

/// Writes a table in an [`ExportFormat`], batch by batch: the CSV header once,
/// one Parquet file for every batch. Holds no row after [`write`](Self::write)
/// returns (Parquet closes a row group per batch).
pub struct BatchWriter<W: Write + Send> {
    inner: Inner<W>,
    rows: u64,
}

enum Inner<W: Write + Send> {
    Text {
        out: W,
        ndjson: bool,
        /// NDJSON keys, as JSON strings.
        keys: Vec<String>,
    },
    Parquet(Box<parquet::arrow::ArrowWriter<W>>),
}

impl<W: Write + Send> std::fmt::Debug for BatchWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchWriter")
            .field("rows", &self.rows)
            .finish_non_exhaustive()
    }
}

impl<W: Write + Send> BatchWriter<W> {
    /// Starts a table of `schema` in `format` on `out` (CSV: writes the header now).
    ///
    /// # Errors
    /// [`QueryError::Write`] when `out` fails, [`QueryError::Parquet`] when
    /// the Parquet writer refuses the schema.
    pub fn new(format: ExportFormat, schema: &SchemaRef, mut out: W) -> Result<Self, QueryError> {
        let inner = match format {
            ExportFormat::Csv => {
                let mut line = String::new();
                for (i, field) in schema.fields().iter().enumerate() {
                    if i > 0 {
                        line.push(',');
                    }
                    csv_field(&mut line, field.name());
                }
                line.push('\n');
                out.write_all(line.as_bytes())?;
                Inner::Text {
                    out,
                    ndjson: false,
                    keys: Vec::new(),
                }
            }
            ExportFormat::Ndjson => Inner::Text {
                out,
                ndjson: true,
                keys: schema
                    .fields()
                    .iter()
                    .map(|f| Value::from(f.name().as_str()).to_string())
                    .collect(),
            },
            ExportFormat::Parquet => {
                use parquet::arrow::ArrowWriter;
                use parquet::basic::{Compression, ZstdLevel};
                use parquet::file::properties::WriterProperties;

                let props = WriterProperties::builder()
                    .set_compression(Compression::ZSTD(ZstdLevel::default()))
                    .build();
                Inner::Parquet(Box::new(ArrowWriter::try_new(
                    out,
                    schema.clone(),
                    Some(props),
                )?))
            }
        };
        Ok(Self { inner, rows: 0 })
    }

    /// Appends the rows of `batch` (of the schema given to [`new`](Self::new)).
    ///
    /// # Errors
    /// [`QueryError::Write`] when `out` fails, [`QueryError::Parquet`] when
    /// the Parquet writer fails.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<(), QueryError> {
        match &mut self.inner {
            Inner::Text { out, ndjson, keys } => {
                let mut line = String::new();
                for row in 0..batch.num_rows() {
                    line.clear();
                    if *ndjson {
                        ndjson_line(&mut line, keys, batch, row);
                    } else {
                        csv_line(&mut line, batch, row);
                    }
                    out.write_all(line.as_bytes())?;
                }
            }
            Inner::Parquet(writer) => {
                writer.write(batch)?;
                writer.flush()?;
            }
        }
        self.rows = self.rows.saturating_add(batch.num_rows() as u64);
        Ok(())
    }

    /// Rows written so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Ends the table (Parquet: writes the footer) and flushes `out`.
    ///
    /// # Errors
    /// [`QueryError::Write`] when `out` fails, [`QueryError::Parquet`] when
    /// the Parquet writer fails.
    pub fn finish(self) -> Result<(), QueryError> {
        match self.inner {
            Inner::Text { mut out, .. } => out.flush().map_err(QueryError::Write),
            Inner::Parquet(writer) => {
                writer.close()?;
                Ok(())
            }
        }
    }
}

fn csv_line(line: &mut String, batch: &RecordBatch, row: usize) {
    for (i, column) in batch.columns().iter().enumerate() {
        if i > 0 {
            line.push(',');
        }
        match cell_json(column.as_ref(), row) {
            Value::Null => {}
            Value::String(s) => csv_field(line, &s),
            other => csv_field(line, &other.to_string()),
        }
    }
    line.push('\n');
}

fn ndjson_line(line: &mut String, keys: &[String], batch: &RecordBatch, row: usize) {
    line.push('{');
    for (i, (key, column)) in keys.iter().zip(batch.columns()).enumerate() {
        if i > 0 {
            line.push(',');
        }
        line.push_str(key);
        line.push(':');
        line.push_str(&cell_json(column.as_ref(), row).to_string());
    }
    line.push_str("}\n");
}

/// Writes `batch` in `format` as a whole table (a [`BatchWriter`] given one batch).
fn write_one(
    format: ExportFormat,
    batch: &RecordBatch,
    out: impl Write + Send,
) -> Result<(), QueryError> {
    let mut writer = BatchWriter::new(format, &batch.schema(), out)?;
    writer.write(batch)?;
    writer.finish()
}

/// Writes `batch` as CSV: a header of column names, then one line per row.
///
/// # Errors
/// [`QueryError::Write`] when `out` fails.
pub fn write_csv(batch: &RecordBatch, out: impl Write + Send) -> Result<(), QueryError> {
    write_one(ExportFormat::Csv, batch, out)
}

/// Writes `batch` as newline-delimited JSON: one object per row, keys in column order.
///
/// # Errors
/// [`QueryError::Write`] when `out` fails.
pub fn write_ndjson(batch: &RecordBatch, out: impl Write + Send) -> Result<(), QueryError> {
    write_one(ExportFormat::Ndjson, batch, out)
}

/// Writes `batch` as one Parquet file (zstd-compressed column chunks).
///
/// # Errors
/// [`QueryError::Parquet`] when the Parquet writer fails (`out` failing included).
pub fn write_parquet(batch: &RecordBatch, out: impl Write + Send) -> Result<(), QueryError> {
    write_one(ExportFormat::Parquet, batch, out)
}
