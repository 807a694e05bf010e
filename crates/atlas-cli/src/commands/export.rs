//! `atlas export`: the values of chosen arrays over many datasets as one long
//! table (a row per element), written batch by batch as CSV, NDJSON or Parquet.

use std::io::{BufWriter, Write};

use atlas::export::{BatchWriter, ExportFormat};
use atlas::{ArrowError, QueryError, TableOptions};
use futures::StreamExt;

use super::Ctx;
use super::catalogue::parse_where;
use crate::cli::{ExportArgs, ExportFormatArg};
use crate::exit::{CliError, CliResult, Context as _};
use crate::location::Access;

/// Runs `atlas export`.
pub async fn run(ctx: &Ctx, args: &ExportArgs) -> CliResult {
    if args.format == ExportFormatArg::Parquet && args.output.is_none() {
        return Err(CliError::msg("--format parquet needs -o FILE"));
    }
    let arrays: Vec<&String> = args.arrays.iter().filter(|a| !a.is_empty()).collect();
    let mut options = TableOptions::new(arrays);
    if let Some(attrs) = &args.attrs {
        options = options.attributes(attrs.iter().filter(|a| !a.is_empty()));
    }
    if let Some(rows) = args.rows_per_batch {
        options = options.rows_per_batch(rows);
    }
    if let Some(text) = &args.where_ {
        options = options.predicate(parse_where(text)?);
    }
    let (loc, set) = ctx.open(&args.collection, Access::Read).await?;
    let mut table = set.table(&options).await.at(loc.display())?;
    let format = match args.format {
        ExportFormatArg::Csv => ExportFormat::Csv,
        ExportFormatArg::Ndjson => ExportFormat::Ndjson,
        ExportFormatArg::Parquet => ExportFormat::Parquet,
    };
    let out: Box<dyn Write + Send> = match &args.output {
        Some(path) => Box::new(
            std::fs::File::create(path)
                .map_err(|e| CliError::msg(format!("cannot write {}: {e}", path.display())))?,
        ),
        None => Box::new(std::io::stdout()),
    };
    let to_stdout = args.output.is_none();
    let target = args
        .output
        .as_ref()
        .map_or_else(|| "stdout".to_owned(), |p| p.display().to_string());
    let mut writer =
        BatchWriter::new(format, &table.schema(), BufWriter::new(out)).at(loc.display())?;
    while let Some(batch) = table.next().await {
        let batch = batch.at(loc.display())?;
        match writer.write(&batch) {
            Err(e) if to_stdout && reader_went_away(&e) => return Ok(()),
            written => written.at(&target)?,
        }
    }
    let rows = writer.rows();
    match writer.finish() {
        Err(e) if to_stdout && reader_went_away(&e) => return Ok(()),
        finished => finished.at(&target)?,
    }
    if let Some(path) = &args.output
        && !ctx.quiet
    {
        eprintln!(
            "wrote {rows} rows from {} datasets to {}",
            table.datasets(),
            path.display()
        );
    }
    Ok(())
}

/// A write to stdout that failed because the reader closed the pipe
/// (`atlas export ... | head`): the output ends quietly, as `atlas ls` does.
fn reader_went_away(e: &QueryError) -> bool {
    let io = match e {
        QueryError::Write(io) | QueryError::Arrow(ArrowError::IoError(_, io)) => io,
        _ => return false,
    };
    io.kind() == std::io::ErrorKind::BrokenPipe
}
