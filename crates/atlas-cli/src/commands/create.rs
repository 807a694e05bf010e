//! `atlas create`: a collection from NetCDF files, one dataset per file (see
//! the `atlas-netcdf` crate for the mappings); with `--append` or
//! `--max-datasets`, new members of a set, committed together.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use atlas::{AtlasWriter, Codec, CommitOutcome, SetWriter, WriteGuarantee, WriterConfig};
use atlas_netcdf::{Decode, IngestError, IngestOptions, IngestReport};
use futures::StreamExt;
use futures::stream::FuturesOrdered;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::{Value, json};

use super::Ctx;
use super::members::new_member_id;
use super::rewrite::refuse_existing;
use crate::cli::{CodecArg, CreateArgs, DecodeArg};
use crate::exit::{CliError, CliResult, Context as _};
use crate::location::{Access, Location};
use crate::{output, render};

/// Runs `atlas create`.
pub async fn run(ctx: &Ctx, args: &CreateArgs) -> CliResult {
    // Local paths, globs and folders, and URLs of files, folders and globs
    // on object stores and HTTP servers (read with the same storage options
    // as the destination).
    let files =
        atlas_netcdf::discover_sources(&args.sources, !args.no_recursive, &ctx.store.storage())
            .await
            .map_err(ingest_error)?;
    let options = IngestOptions::default()
        .with_decode(match args.decode {
            DecodeArg::Cf => Decode::Cf,
            DecodeArg::Raw => Decode::Raw,
        })
        .with_skip_errors(args.skip_errors)
        .with_skip_unsupported(args.skip_unsupported)
        .with_chunks(parse_chunks(args.chunks.as_deref())?)
        .with_jobs(usize::from(args.jobs))
        .with_storage(ctx.store.storage());
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

    // --sort-by (with --max-datasets): one pass over every file's key
    // variables puts the files in key order, before anything is written.
    let files = match &args.sort_by {
        Some(keys) => {
            let started = Instant::now();
            let ordered = atlas_netcdf::order_files(&files, keys, &options)
                .await
                .map_err(ingest_error)?;
            if !ctx.quiet {
                eprintln!(
                    "create: sort keys of {} files read in {:.1} s ({}){}",
                    ordered.files.len(),
                    started.elapsed().as_secs_f64(),
                    render::bytes(ordered.bytes_read),
                    match ordered.unread {
                        0 => String::new(),
                        n => format!("; {n} unreadable, placed last"),
                    }
                );
            }
            ordered.files
        }
        None => files,
    };

    let dst = ctx.locate(&args.destination, Access::Write).await?;
    if args.append || args.max_datasets.is_some() {
        return create_members(ctx, args, &dst, &files, &options, &config).await;
    }
    refuse_existing(&dst).await?;
    let writer = AtlasWriter::create(&dst, &config).await.at(dst.display())?;

    let total = files.len();
    let started = Instant::now();
    let mut reporter = Reporter::new(total, ctx.quiet);
    let result = atlas_netcdf::ingest_with_progress(&files, writer, &options, |p| {
        reporter.update(p.done, p.bytes_read, started);
    })
    .await;
    reporter.finish();
    let report = match result {
        Ok(report) => report,
        Err(e) => {
            write_failed_report(
                args,
                ingest_failed_file(&e),
                &atlas::ErrorReport::new(&e).to_string(),
            );
            return Err(ingest_failure(&dst, e));
        }
    };
    write_report(args, std::slice::from_ref(&report))?;
    let seconds = started.elapsed().as_secs_f64();
    print_report(
        ctx,
        dst.display(),
        std::slice::from_ref(&report),
        None,
        seconds,
    );
    Ok(())
}

fn ingest_failure(dst: &Location, e: IngestError) -> CliError {
    match e {
        IngestError::Writer(error) => CliError::Atlas {
            context: dst.display().to_owned(),
            error,
        },
        other => ingest_error(other),
    }
}

/// One member written: its id, datasets and bytes.
struct WrittenMember {
    id: String,
    datasets: u64,
    bytes: u64,
}

/// `--append` / `--max-datasets`: the files (sorted by path, or with
/// `--sort-by` by the keys) in chunks of at most `--max-datasets`, each
/// written as one new member (up to `-j` members at
/// once), then one commit of all of them in chunk order. Any failure aborts:
/// the members written are removed and nothing is committed.
async fn create_members(
    ctx: &Ctx,
    args: &CreateArgs,
    dst: &Location,
    files: &[PathBuf],
    options: &IngestOptions,
    config: &WriterConfig,
) -> CliResult {
    if args.append {
        refuse_lone_collection(dst).await?;
    } else {
        refuse_existing(dst).await?;
    }
    let per_member = args
        .max_datasets
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(usize::MAX)
        .max(1);
    let chunks: Vec<&[PathBuf]> = files.chunks(per_member).collect();
    refuse_names_across_members(&chunks)?;

    let mut set = SetWriter::create(dst, config).await.at(dst.display())?;
    let total = files.len();
    let started = Instant::now();
    let progress = SharedProgress {
        reporter: Mutex::new(Reporter::new(total, ctx.quiet)),
        done: AtomicUsize::new(0),
        bytes_read: AtomicU64::new(0),
        started,
    };
    // With -j J and several members, J members are written at once, each
    // decoding one file at a time (so J files decode at once either way);
    // with one member, its ingest decodes J files at once.
    let parallel = usize::from(args.jobs).min(chunks.len()).max(1);
    let member_options = if parallel > 1 {
        options.clone().with_jobs(1)
    } else {
        options.clone()
    };
    let mut reports = Vec::with_capacity(chunks.len());
    let mut written = Vec::with_capacity(chunks.len());
    let mut pending = chunks.iter().enumerate();
    // In chunk order whatever finishes first: members are recorded, and so
    // committed, in the files' order.
    let mut running = FuturesOrdered::new();
    let mut failure: Option<IngestError> = None;
    'members: loop {
        while running.len() < parallel {
            let Some((index, chunk)) = pending.next() else {
                break;
            };
            let id = new_member_id(index);
            match set.add_member(&id).await {
                Ok(member) => running.push_back(ingest_member(
                    id,
                    member.into_writer(),
                    chunk,
                    &member_options,
                    &progress,
                )),
                Err(e) => {
                    failure = Some(e.into());
                    break 'members;
                }
            }
        }
        let Some(result) = running.next().await else {
            break;
        };
        let recorded = match result {
            // Every file of the chunk was skipped: no member for it.
            Ok((id, mut report)) if report.written.is_empty() => {
                match set.discard_member(&id).await {
                    Ok(()) => {
                        report.summary.container_bytes = 0;
                        Ok((report, None))
                    }
                    Err(e) => Err(IngestError::from(e)),
                }
            }
            Ok((id, report)) => match set.record_member(&id).await {
                Ok(entry) => Ok((
                    report,
                    Some(WrittenMember {
                        id,
                        datasets: entry.datasets_total,
                        bytes: entry.bytes,
                    }),
                )),
                Err(e) => Err(IngestError::from(e)),
            },
            Err(e) => Err(e),
        };
        match recorded {
            Ok((report, member)) => {
                reports.push(report);
                written.extend(member);
            }
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    // Members still being written stop here (their writers are dropped).
    drop(running);
    let reporter = progress
        .reporter
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(e) = failure {
        reporter.finish();
        if let Err(abort) = set.abort().await {
            tracing::warn!("could not remove the members written: {abort}");
        }
        write_failed_report(
            args,
            ingest_failed_file(&e),
            &atlas::ErrorReport::new(&e).to_string(),
        );
        return Err(ingest_failure(dst, e));
    }
    reporter.finish();
    if written.is_empty() {
        // Every file was skipped: nothing to commit, and the set is left as it was.
        set.abort().await.at(dst.display())?;
        write_report(args, &reports)?;
        print_report(
            ctx,
            dst.display(),
            &reports,
            None,
            started.elapsed().as_secs_f64(),
        );
        return Ok(());
    }
    let outcome = match set.commit().await {
        Ok(outcome) => outcome,
        Err(e) => {
            write_failed_report(
                args,
                None,
                &format!("{}: {}", dst.display(), atlas::ErrorReport::new(&e)),
            );
            return Err(e).at(dst.display()).map(|_: CommitOutcome| ());
        }
    };
    write_report(args, &reports)?;
    let seconds = started.elapsed().as_secs_f64();
    print_report(
        ctx,
        dst.display(),
        &reports,
        Some((&written, &outcome)),
        seconds,
    );
    Ok(())
}

/// Progress over members written at once: files done in all of them.
struct SharedProgress {
    reporter: Mutex<Reporter>,
    done: AtomicUsize,
    bytes_read: AtomicU64,
    started: Instant,
}

/// Ingests `files` into the new member `id` whose container `writer` writes.
async fn ingest_member(
    id: String,
    writer: AtlasWriter,
    files: &[PathBuf],
    options: &IngestOptions,
    progress: &SharedProgress,
) -> Result<(String, IngestReport), IngestError> {
    let (mut last, mut last_bytes) = (0usize, 0u64);
    let report = atlas_netcdf::ingest_with_progress(files, writer, options, |p| {
        let step = p.done.saturating_sub(last);
        let bytes_step = p.bytes_read.saturating_sub(last_bytes);
        (last, last_bytes) = (p.done, p.bytes_read);
        let all = progress
            .done
            .fetch_add(step, Ordering::Relaxed)
            .saturating_add(step);
        let bytes = progress
            .bytes_read
            .fetch_add(bytes_step, Ordering::Relaxed)
            .saturating_add(bytes_step);
        progress
            .reporter
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .update(all, bytes, progress.started);
    })
    .await?;
    Ok((id, report))
}

/// `--append` adds to a set; a lone collection is write-once.
async fn refuse_lone_collection(dst: &Location) -> CliResult {
    let lone = dst
        .operator()
        .exists(&dst.object(atlas::CONTAINER_FILE))
        .await
        .at(dst.display())?;
    if lone {
        return Err(CliError::msg(format!(
            "{}: holds a lone collection (data.atlas), not a set; --append adds members to a set: choose a new location",
            dst.display()
        )));
    }
    Ok(())
}

/// Two files of one name in different members would not be refused as
/// duplicates by the ingest: the later would silently replace the earlier.
fn refuse_names_across_members(chunks: &[&[PathBuf]]) -> CliResult {
    let mut seen: std::collections::HashMap<String, (usize, &PathBuf)> =
        std::collections::HashMap::new();
    for (member, chunk) in chunks.iter().enumerate() {
        for path in *chunk {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            match seen.get(&name) {
                Some((other, first)) if *other != member => {
                    return Err(CliError::msg(format!(
                        "nothing written: {} and {} both give dataset name {name:?} and would go to different members",
                        first.display(),
                        path.display()
                    )));
                }
                Some(_) => {}
                None => {
                    seen.insert(name, (member, path));
                }
            }
        }
    }
    Ok(())
}

/// What the ingest left out or changed, and why: skipped files and arrays,
/// time variables stored undecoded, and the mapping's notes. The one builder
/// of these parts of `--json` and of the whole `--report` document.
fn left_out(reports: &[IngestReport]) -> serde_json::Map<String, Value> {
    let mut fields = serde_json::Map::new();
    fields.insert(
        "skipped".into(),
        reports
            .iter()
            .flat_map(|r| &r.skipped_files)
            .map(|s| json!({"file": s.path.display().to_string(), "reason": atlas::ErrorReport::new(&s.reason).to_string()}))
            .collect(),
    );
    fields.insert(
        "skipped_arrays".into(),
        reports
            .iter()
            .flat_map(|r| &r.skipped_variables)
            .map(|s| json!({"dataset": s.dataset, "array": s.variable, "dtype": s.dtype}))
            .collect(),
    );
    fields.insert(
        "undecoded".into(),
        reports
            .iter()
            .flat_map(|r| &r.undecoded)
            .map(|u| json!({"dataset": u.dataset, "array": u.variable, "reason": u.reason.to_string()}))
            .collect(),
    );
    fields.insert(
        "notes".into(),
        reports
            .iter()
            .flat_map(|r| &r.notes)
            .map(|n| json!(n))
            .collect(),
    );
    fields
}

/// `--report FILE`: what the ingest left out or changed ([`left_out`]).
fn write_report(args: &CreateArgs, reports: &[IngestReport]) -> CliResult {
    let Some(path) = &args.report else {
        return Ok(());
    };
    save_report(path, &Value::Object(left_out(reports))).map_err(|e| {
        CliError::msg(format!(
            "the collection is written, but the report could not be: {}: {e}",
            path.display()
        ))
    })
}

/// `--report FILE` of an ingest that wrote nothing: empty lists and the
/// failure (`error.file` when one file caused it). A report that cannot be
/// written is logged; the ingest's own error is what the user gets.
fn write_failed_report(args: &CreateArgs, file: Option<&Path>, reason: &str) {
    let Some(path) = &args.report else {
        return;
    };
    let mut doc = left_out(&[]);
    doc.insert(
        "error".into(),
        json!({"file": file.map(|f| f.display().to_string()), "reason": reason}),
    );
    if let Err(e) = save_report(path, &Value::Object(doc)) {
        tracing::warn!("cannot write the report {}: {e}", path.display());
    }
}

/// The file an ingest error is about, if one file caused it.
fn ingest_failed_file(e: &IngestError) -> Option<&Path> {
    match e {
        IngestError::File { path, .. } | IngestError::InvalidDatasetName { path, .. } => Some(path),
        _ => None,
    }
}

fn save_report(path: &Path, doc: &Value) -> std::io::Result<()> {
    let mut text = serde_json::to_string_pretty(doc).map_err(std::io::Error::other)?;
    text.push('\n');
    std::fs::write(path, text)
}

fn ingest_error(error: IngestError) -> CliError {
    CliError::Ingest {
        context: String::new(),
        error: Box::new(error),
    }
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

/// Progress: a bar on a terminal, a line every twentieth of the way
/// otherwise; both with files and bytes per second.
struct Reporter {
    bar: Option<ProgressBar>,
    plain: bool,
    total: usize,
    step: usize,
    next: usize,
}

impl Reporter {
    fn new(total: usize, quiet: bool) -> Self {
        let tty = std::io::stderr().is_terminal();
        let bar = (!quiet && tty).then(|| {
            let bar = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
            let style = ProgressStyle::with_template(
                "    create [{elapsed_precise}] {wide_bar} {pos}/{len} files ({per_sec}, {msg}, ETA {eta})",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style);
            bar
        });
        let step = (total / 20).max(1);
        Self {
            bar,
            plain: !quiet && !tty,
            total,
            step,
            next: step,
        }
    }

    /// `done` files and `bytes_read` bytes read since `started`.
    fn update(&mut self, done: usize, bytes_read: u64, started: Instant) {
        let secs = started.elapsed().as_secs_f64().max(1e-9);
        let rate = format!("{}/s", render::bytes((bytes_read as f64 / secs) as u64));
        if let Some(bar) = &self.bar {
            bar.set_position(done as u64);
            bar.set_message(rate);
        } else if self.plain && (done >= self.next || done == self.total) {
            self.next = done + self.step;
            eprintln!(
                "create: {done}/{} files, {} read ({:.0} files/s, {rate})",
                self.total,
                render::bytes(bytes_read),
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

/// The set side of a report: the members written and the commit.
type SetReport<'a> = Option<(&'a [WrittenMember], &'a CommitOutcome)>;

fn guarantee_name(g: WriteGuarantee) -> &'static str {
    match g {
        WriteGuarantee::Conditional => "conditional",
        WriteGuarantee::Locked => "locked",
        _ => "last_writer_wins",
    }
}

fn print_report(
    ctx: &Ctx,
    destination: &str,
    reports: &[IngestReport],
    set: SetReport<'_>,
    seconds: f64,
) {
    let datasets: usize = reports.iter().map(|r| r.summary.datasets).sum();
    let container_bytes: u64 = reports.iter().map(|r| r.summary.container_bytes).sum();
    let input_bytes: u64 = reports.iter().map(|r| r.input_bytes).sum();
    let files_written: usize = reports.iter().map(|r| r.written.len()).sum();
    if ctx.json {
        let mut value = json!({
            "destination": destination,
            "datasets": datasets,
            "container_bytes": container_bytes,
            "input_bytes": input_bytes,
            "seconds": seconds,
            "written": reports.iter().flat_map(|r| &r.written).map(|w| json!({
                "file": w.path.display().to_string(),
                "dataset": w.dataset,
            })).collect::<Vec<_>>(),
        });
        if let Some(fields) = value.as_object_mut() {
            fields.extend(left_out(reports));
        }
        if let (Some((members, outcome)), Some(fields)) = (set, value.as_object_mut()) {
            fields.insert(
                "members".into(),
                members
                    .iter()
                    .map(|m| json!({"id": m.id, "datasets": m.datasets, "bytes": m.bytes}))
                    .collect(),
            );
            fields.insert(
                "commit".into(),
                json!({
                    "generation": outcome.generation,
                    "attempts": outcome.attempts,
                    "requests": outcome.requests,
                    "guarantee": guarantee_name(outcome.guarantee),
                    "lost_conditional_write": outcome.lost_conditional_write,
                }),
            );
        }
        output::json(&value);
        return;
    }
    if ctx.quiet {
        return;
    }
    let mut text = format!(
        "wrote {datasets} datasets to {destination}: {} from {} of NetCDF in {:.1} s ({:.0} files/s)\n",
        render::bytes(container_bytes),
        render::bytes(input_bytes),
        seconds,
        files_written as f64 / seconds.max(1e-9),
    );
    if let Some((members, outcome)) = set {
        text.push_str(&format!(
            "  as {}, committed as generation {} ({} write, {}, {})\n",
            render::count(members.len(), "new member", "new members"),
            outcome.generation,
            guarantee_name(outcome.guarantee).replace('_', " "),
            render::count(outcome.attempts as usize, "attempt", "attempts"),
            render::count(outcome.requests as usize, "request", "requests"),
        ));
        for m in members {
            text.push_str(&format!(
                "  member {}: {} datasets, {}\n",
                m.id,
                m.datasets,
                render::bytes(m.bytes)
            ));
        }
        if outcome.lost_conditional_write {
            text.push_str("  note: the storage accepted a conditional write that another writer then overwrote (its conditions are not atomic); the commit was redone\n");
        }
    }
    let skipped_files = reports.iter().flat_map(|r| &r.skipped_files);
    let skipped_variables = reports.iter().flat_map(|r| &r.skipped_variables);
    let notes = reports.iter().flat_map(|r| &r.notes);
    for s in skipped_files {
        text.push_str(&format!(
            "  skipped file {}: {}\n",
            s.path.display(),
            s.reason
        ));
    }
    for s in skipped_variables {
        text.push_str(&format!(
            "  skipped array {}/{} ({})\n",
            s.dataset, s.variable, s.dtype
        ));
    }
    for u in reports.iter().flat_map(|r| &r.undecoded) {
        text.push_str(&format!(
            "  undecoded {}/{}: stored as its numbers with units and calendar ({})\n",
            u.dataset, u.variable, u.reason
        ));
    }
    for n in notes {
        text.push_str(&format!("  note: {n}\n"));
    }
    output::text(&text);
}
