//! `atlas create`: a collection from NetCDF files, one dataset per file (see
//! the `atlas-netcdf` crate for the mappings).

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Instant;

use atlas::{AtlasWriter, Codec, WriterConfig};
use atlas_netcdf::{Decode, IngestError, IngestOptions, IngestReport};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::json;

use super::Ctx;
use super::rewrite::refuse_existing;
use crate::cli::{CodecArg, CreateArgs, DecodeArg};
use crate::exit::{CliError, CliResult, Context as _};
use crate::location::Access;
use crate::{output, render};

/// Runs `atlas create`.
pub async fn run(ctx: &Ctx, args: &CreateArgs) -> CliResult {
    let sources: Vec<PathBuf> = args.sources.iter().map(PathBuf::from).collect();
    let files = atlas_netcdf::discover(&sources, !args.no_recursive).map_err(ingest_error)?;
    let options = IngestOptions::default()
        .with_decode(match args.decode {
            DecodeArg::Cf => Decode::Cf,
            DecodeArg::Raw => Decode::Raw,
        })
        .with_skip_errors(args.skip_errors)
        .with_skip_unsupported(args.skip_unsupported)
        .with_chunks(parse_chunks(args.chunks.as_deref())?)
        .with_jobs(usize::from(args.jobs));
    let mut config = WriterConfig::default().codec(match args.codec {
        CodecArg::Zstd => Codec::Zstd,
        CodecArg::Lz4 => Codec::Lz4,
        CodecArg::None => Codec::Uncompressed,
    });
    if let Some(size) = &args.block_size {
        // An explicit block size holds for every variable, small arrays too.
        config = config
            .block_target_size(parse_size(size)?)
            .small_block_target_size(0);
    }

    let dst = ctx.locate(&args.destination, Access::Write).await?;
    refuse_existing(&dst).await?;
    let writer = AtlasWriter::create(&dst, &config).await.at(dst.display())?;

    let total = files.len();
    let started = Instant::now();
    let mut reporter = Reporter::new(total, ctx.quiet);
    let report = atlas_netcdf::ingest_with_progress(&files, writer, &options, |done, total| {
        reporter.update(done, total, started);
    })
    .await
    .map_err(|e| match e {
        IngestError::Writer(error) => CliError::Atlas {
            context: dst.display().to_owned(),
            error,
        },
        other => ingest_error(other),
    })?;
    reporter.finish();
    let seconds = started.elapsed().as_secs_f64();
    print_report(ctx, dst.display(), &report, seconds);
    Ok(())
}

fn ingest_error(e: IngestError) -> CliError {
    CliError::msg(format!("nothing written: {e}"))
}

/// `{"VAR": [..], ...}` into chunk shapes.
fn parse_chunks(text: Option<&str>) -> CliResult<BTreeMap<String, Vec<u64>>> {
    let Some(text) = text else {
        return Ok(BTreeMap::new());
    };
    serde_json::from_str(text).map_err(|e| {
        CliError::msg(format!(
            "--chunks wants a JSON object of variable name to chunk shape, e.g. '{{\"TEMP\": [100]}}': {e}"
        ))
    })
}

/// `8388608`, `8M`, `8MiB`, `512k`... into bytes.
fn parse_size(text: &str) -> CliResult<usize> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: usize = num
        .parse()
        .map_err(|_| CliError::msg(format!("--block-size {text:?}: expected a number of bytes")))?;
    let mult: usize = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => {
            return Err(CliError::msg(format!(
                "--block-size {text:?}: unknown unit"
            )));
        }
    };
    n.checked_mul(mult)
        .filter(|&b| b > 0)
        .ok_or_else(|| CliError::msg(format!("--block-size {text:?}: out of range")))
}

/// Progress: a bar on a terminal, a line every twentieth of the way otherwise.
struct Reporter {
    bar: Option<ProgressBar>,
    plain: bool,
    step: usize,
    next: usize,
}

impl Reporter {
    fn new(total: usize, quiet: bool) -> Self {
        let tty = std::io::stderr().is_terminal();
        let bar = (!quiet && tty).then(|| {
            let bar = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
            let style = ProgressStyle::with_template(
                "    create [{elapsed_precise}] {wide_bar} {pos}/{len} files ({per_sec}, ETA {eta})",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style);
            bar
        });
        let step = (total / 20).max(1);
        Self {
            bar,
            plain: !quiet && !tty,
            step,
            next: step,
        }
    }

    fn update(&mut self, done: usize, total: usize, started: Instant) {
        if let Some(bar) = &self.bar {
            bar.set_position(done as u64);
        } else if self.plain && (done >= self.next || done == total) {
            self.next = done + self.step;
            let secs = started.elapsed().as_secs_f64().max(1e-9);
            eprintln!(
                "create: {done}/{total} files ({:.0} files/s)",
                done as f64 / secs
            );
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

fn print_report(ctx: &Ctx, destination: &str, report: &IngestReport, seconds: f64) {
    if ctx.json {
        output::json(&json!({
            "destination": destination,
            "datasets": report.summary.datasets,
            "container_bytes": report.summary.container_bytes,
            "input_bytes": report.input_bytes,
            "seconds": seconds,
            "written": report.written.iter().map(|w| json!({
                "file": w.path.display().to_string(),
                "dataset": w.dataset,
            })).collect::<Vec<_>>(),
            "skipped": report.skipped_files.iter().map(|s| json!({
                "file": s.path.display().to_string(),
                "reason": s.reason.to_string(),
            })).collect::<Vec<_>>(),
            "skipped_arrays": report.skipped_variables.iter().map(|s| json!({
                "dataset": s.dataset,
                "array": s.variable,
                "dtype": s.dtype,
            })).collect::<Vec<_>>(),
            "notes": report.notes,
        }));
        return;
    }
    if ctx.quiet {
        return;
    }
    let mut text = format!(
        "wrote {} datasets to {destination}: {} from {} of NetCDF in {:.1} s ({:.0} files/s)\n",
        report.summary.datasets,
        render::bytes(report.summary.container_bytes),
        render::bytes(report.input_bytes),
        seconds,
        report.written.len() as f64 / seconds.max(1e-9),
    );
    for s in &report.skipped_files {
        text.push_str(&format!(
            "  skipped file {}: {}\n",
            s.path.display(),
            s.reason
        ));
    }
    for s in &report.skipped_variables {
        text.push_str(&format!(
            "  skipped array {}/{} ({})\n",
            s.dataset, s.variable, s.dtype
        ));
    }
    for n in &report.notes {
        text.push_str(&format!("  note: {n}\n"));
    }
    output::text(&text);
}
