//! `atlas catalogue`: one row per live dataset from segment footers; and the
//! `--where` expression `ls` and `rm` share.

use std::io::Write;

use atlas::RecordBatch;
use atlas::export::{cell_json, write_csv, write_ndjson, write_parquet};
use atlas::{Atlas, CatalogueOptions, Predicate};
use serde_json::Value;

use super::Ctx;
use crate::cli::{CatalogueArgs, CatalogueFormat};
use crate::exit::{CliError, CliResult, Context as _};
use crate::location::Access;
use crate::output;
use crate::render::Table;

/// Parses a `--where` expression; an error shows it with a caret.
pub fn parse_where(text: &str) -> CliResult<Predicate> {
    Predicate::parse(text)
        .map_err(atlas::QueryError::from)
        .at("--where")
}

/// Names of the live datasets `--where` selects, in ordinal order (members
/// oldest commit first; members whose summaries rule it out are skipped).
pub async fn select_where(set: &Atlas, text: &str, context: &str) -> CliResult<Vec<String>> {
    let predicate = parse_where(text)?;
    set.select(&predicate).await.at(context)
}

/// Runs `atlas catalogue`.
pub async fn run(ctx: &Ctx, args: &CatalogueArgs) -> CliResult {
    if args.format == CatalogueFormat::Parquet && args.output.is_none() {
        return Err(CliError::msg("--format parquet needs -o FILE"));
    }
    let mut options = CatalogueOptions::default();
    if let Some(attrs) = &args.attrs {
        options = options.attributes(attrs.iter().filter(|a| !a.is_empty()));
    }
    if let Some(arrays) = &args.arrays {
        options = options.arrays(arrays.iter().filter(|a| !a.is_empty()));
    }
    if let Some(text) = &args.where_ {
        options = options.predicate(parse_where(text)?);
    }
    let (loc, set) = ctx.open(&args.collection, Access::Read).await?;
    let batch = set.catalogue(&options).await.at(loc.display())?;
    let mut bytes = Vec::new();
    let written = match args.format {
        CatalogueFormat::Table if ctx.json => {
            output::json(&rows_json(&batch));
            return Ok(());
        }
        CatalogueFormat::Table => {
            bytes.extend_from_slice(table(&batch).as_bytes());
            Ok(())
        }
        CatalogueFormat::Csv => write_csv(&batch, &mut bytes),
        CatalogueFormat::Ndjson => write_ndjson(&batch, &mut bytes),
        CatalogueFormat::Parquet => write_parquet(&batch, &mut bytes),
    };
    written.at(loc.display())?;
    match &args.output {
        Some(path) => {
            std::fs::write(path, &bytes)
                .map_err(|e| CliError::msg(format!("cannot write {}: {e}", path.display())))?;
            if !ctx.quiet {
                eprintln!(
                    "wrote {} rows, {} columns to {}",
                    batch.num_rows(),
                    batch.num_columns(),
                    path.display()
                );
            }
        }
        None => {
            let mut stdout = std::io::stdout().lock();
            stdout
                .write_all(&bytes)
                .and_then(|()| stdout.flush())
                .map_err(|e| CliError::msg(format!("cannot write to stdout: {e}")))?;
        }
    }
    Ok(())
}

/// A cell as a person reads it: text bare, null blank, the rest as JSON.
fn cell_text(batch: &RecordBatch, column: usize, row: usize) -> String {
    match batch
        .columns()
        .get(column)
        .map(|c| cell_json(c.as_ref(), row))
    {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s,
        Some(other) => other.to_string(),
    }
}

fn table(batch: &RecordBatch) -> String {
    let schema = batch.schema();
    let headers: Vec<String> = schema
        .fields()
        .iter()
        .map(|f| {
            if f.data_type().is_numeric() {
                format!(">{}", f.name())
            } else {
                f.name().clone()
            }
        })
        .collect();
    let refs: Vec<&str> = headers.iter().map(String::as_str).collect();
    let mut t = Table::new(&refs);
    for row in 0..batch.num_rows() {
        t.row(
            (0..batch.num_columns())
                .map(|c| cell_text(batch, c, row))
                .collect(),
        );
    }
    t.render(0)
}

fn rows_json(batch: &RecordBatch) -> Value {
    let schema = batch.schema();
    Value::Array(
        (0..batch.num_rows())
            .map(|row| {
                Value::Object(
                    schema
                        .fields()
                        .iter()
                        .zip(batch.columns())
                        .map(|(f, c)| (f.name().clone(), cell_json(c.as_ref(), row)))
                        .collect(),
                )
            })
            .collect(),
    )
}
