//! The catalogue out of the process: CSV, NDJSON and (feature `parquet`) Parquet.
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
use arrow_schema::DataType;
use serde_json::Value;

use super::error::QueryError;
use super::json_value::{f32_json, float_json};
use super::time::format_instant;

fn bytes_json(b: &[u8]) -> Value {
    Value::Array(b.iter().map(|&x| Value::from(x)).collect())
}

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
            prim!(TimestampNanosecondType, |ns| Value::from(format_instant(
                ns
            )))
        }
        DataType::Utf8 => array
            .as_string_opt::<i32>()
            .map_or(Value::Null, |a| Value::from(a.value(row))),
        DataType::Binary => array
            .as_binary_opt::<i32>()
            .map_or(Value::Null, |a| bytes_json(a.value(row))),
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

/// Writes `batch` as CSV: a header of column names, then one line per row.
///
/// # Errors
/// [`QueryError::Write`] when `out` fails.
pub fn write_csv(batch: &RecordBatch, mut out: impl Write) -> Result<(), QueryError> {
    let mut line = String::new();
    for (i, field) in batch.schema().fields().iter().enumerate() {
        if i > 0 {
            line.push(',');
        }
        csv_field(&mut line, field.name());
    }
    line.push('\n');
    out.write_all(line.as_bytes())?;
    for row in 0..batch.num_rows() {
        line.clear();
        for (i, column) in batch.columns().iter().enumerate() {
            if i > 0 {
                line.push(',');
            }
            match cell_json(column.as_ref(), row) {
                Value::Null => {}
                Value::String(s) => csv_field(&mut line, &s),
                other => csv_field(&mut line, &other.to_string()),
            }
        }
        line.push('\n');
        out.write_all(line.as_bytes())?;
    }
    out.flush().map_err(QueryError::Write)
}

/// Writes `batch` as newline-delimited JSON: one object per row, keys in column order.
///
/// # Errors
/// [`QueryError::Write`] when `out` fails.
pub fn write_ndjson(batch: &RecordBatch, mut out: impl Write) -> Result<(), QueryError> {
    let schema = batch.schema();
    let keys: Vec<String> = schema
        .fields()
        .iter()
        .map(|f| Value::from(f.name().as_str()).to_string())
        .collect();
    let mut line = String::new();
    for row in 0..batch.num_rows() {
        line.clear();
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
        out.write_all(line.as_bytes())?;
    }
    out.flush().map_err(QueryError::Write)
}

/// Writes `batch` as one Parquet file (zstd-compressed column chunks).
///
/// # Errors
/// [`QueryError::Parquet`] when the Parquet writer fails (`out` failing included).
#[cfg(feature = "parquet")]
pub fn write_parquet(batch: &RecordBatch, out: impl Write + Send) -> Result<(), QueryError> {
    use parquet::arrow::ArrowWriter;
    use parquet::basic::{Compression, ZstdLevel};
    use parquet::file::properties::WriterProperties;

    let table = QueryError::Parquet;
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .build();
    let mut writer = ArrowWriter::try_new(out, batch.schema(), Some(props)).map_err(table)?;
    writer.write(batch).map_err(table)?;
    writer.close().map_err(table)?;
    Ok(())
}
