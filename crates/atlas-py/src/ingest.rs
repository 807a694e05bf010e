//! The native side of `atlasds.ingest`: NetCDF files into set members, one
//! member per call, so that each call can be a task on a different worker;
//! then one commit of every member the tasks wrote.
//!
//! Member ids are fixed before any task runs ([`run_member_ids`]): a task that
//! dask runs again (its worker was lost) rewrites the same member from scratch
//! (`SetWriter::rewrite_member`), and the client commits each id once
//! (`SetWriter::adopt_member`), so every dataset is committed exactly once.
//! Every id of a run shares a prefix, by which the client removes what the
//! run left behind ([`remove_members`]). Like `core`, this file holds the
//! library calls; `#[pyfunction]`s only convert.

use std::path::PathBuf;

use atlas::{Address, SetWriter, StorageOptions, WriterConfig};
use atlas_netcdf::{
    Decode, IngestOptions, ReplaceKind, SourceRoot, SyncError, SyncOptions, SyncPlan,
};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::core::{self, CoreError, ErrorClass};

/// Low bits of a run's nonce left for the chunk index: up to 2^20 members a run.
const INDEX_BITS: u32 = 20;

/// Hex digits of a member id that hold the chunk index (`INDEX_BITS / 4`).
const INDEX_DIGITS: usize = 5;

fn storage_options(storage: &[(String, String)], anonymous: bool) -> StorageOptions {
    storage
        .iter()
        .fold(StorageOptions::new(), |o, (k, v)| o.set(k, v))
        .anonymous(anonymous)
}

/// What one member's ingest did.
struct MemberReport {
    written: Vec<(String, String)>,
    skipped: Vec<(String, String)>,
    undecoded: Vec<(String, String, String)>,
    notes: Vec<String>,
    datasets: usize,
    container_bytes: u64,
    input_bytes: u64,
}

/// Ingests `files` into member `id` of the set at `location`, replacing any
/// earlier attempt at that id; the member is left uncommitted.
async fn ingest_into_member(
    files: Vec<PathBuf>,
    location: &str,
    id: &str,
    options: IngestOptions,
    storage: StorageOptions,
) -> core::Result<MemberReport> {
    let config = WriterConfig::default().storage(storage);
    let mut set = SetWriter::create(location, &config).await?;
    let writer = set.rewrite_member(id).await?.into_writer();
    let report = atlas_netcdf::ingest(&files, writer, &options).await?;
    Ok(MemberReport {
        written: report
            .written
            .into_iter()
            .map(|w| (w.path.display().to_string(), w.dataset))
            .collect(),
        skipped: report
            .skipped_files
            .into_iter()
            .map(|s| {
                (
                    s.path.display().to_string(),
                    atlas::ErrorReport::new(&s.reason).to_string(),
                )
            })
            .collect(),
        undecoded: report
            .undecoded
            .into_iter()
            .map(|u| (u.dataset, u.variable, u.reason.to_string()))
            .collect(),
        notes: report.notes,
        datasets: report.summary.datasets,
        container_bytes: report.summary.container_bytes,
        input_bytes: report.input_bytes,
    })
}

/// Commits members `ids` (written by other processes) to the set at
/// `location` in one manifest update, in the order given.
async fn commit(location: &str, ids: &[String], storage: StorageOptions) -> core::Result<u64> {
    let config = WriterConfig::default().storage(storage);
    let mut set = SetWriter::create(location, &config).await?;
    for id in ids {
        if let Err(e) = set.adopt_member(id).await {
            // Nothing is committed; the caller removes the run's members.
            return Err(e.into());
        }
    }
    Ok(set.commit().await?.generation)
}

/// Removes the uncommitted members of the set at `location` whose id is in
/// `ids` or starts with `prefix`; returns their ids. Committed members are
/// never touched: the listing is compared with the manifest.
async fn remove(
    location: &str,
    ids: &[String],
    prefix: Option<&str>,
    storage: StorageOptions,
) -> core::Result<Vec<String>> {
    let resolved = Address::from(location)
        .resolve(&storage, atlas::Access::Write)
        .await?;
    let mut removed = Vec::new();
    for member in atlas::uncommitted_members(&resolved).await? {
        let id = member
            .path
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_owned();
        let wanted = ids.contains(&id) || prefix.is_some_and(|p| id.starts_with(p));
        if wanted {
            atlas::remove_uncommitted_member(&resolved, &member).await?;
            removed.push(id);
        }
    }
    Ok(removed)
}

/// The time (ms since the epoch) and a random number new member ids are made of.
fn id_seed() -> (i64, u64) {
    use std::hash::BuildHasher;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let ms = i64::try_from(now.as_millis()).unwrap_or(i64::MAX);
    let nonce = std::hash::RandomState::new().hash_one((std::process::id(), now.as_nanos()));
    (ms, nonce)
}

/// `(prefix, ids)`: `count` member ids for one ingest run, in chunk order,
/// all starting with `prefix` (the time now and a random nonce whose low 20
/// bits are the chunk index). At most 2^20 members a run.
#[pyfunction]
pub fn run_member_ids(count: usize) -> PyResult<(String, Vec<String>)> {
    use std::hash::BuildHasher;
    if count > 1 << INDEX_BITS {
        return Err(crate::convert::py_err(CoreError::invalid(format!(
            "{count} members in one run: at most {} (use more datasets per member)",
            1u64 << INDEX_BITS
        ))));
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let ms = i64::try_from(now.as_millis()).unwrap_or(i64::MAX);
    let nonce = std::hash::RandomState::new().hash_one((std::process::id(), now.as_nanos()))
        & !((1u64 << INDEX_BITS) - 1);
    let ids: Vec<String> = (0..count as u64)
        .map(|i| atlas::member_id(ms, nonce | i))
        .collect();
    let first = atlas::member_id(ms, nonce);
    let prefix = first
        .get(..first.len().saturating_sub(INDEX_DIGITS))
        .unwrap_or_default()
        .to_owned();
    Ok((prefix, ids))
}

/// The NetCDF files `sources` name (files, globs, directories scanned for
/// NetCDF suffixes), sorted, without repeats: what `atlas create` reads.
/// Sources at URLs (`s3://`, `gs://`, `az://`, `http(s)://`: a file, a folder
/// or a glob) are listed with `storage`.
#[pyfunction]
#[pyo3(signature = (sources, recursive=true, storage=Vec::new(), anonymous=false))]
pub fn discover(
    py: Python<'_>,
    sources: Vec<String>,
    recursive: bool,
    storage: Vec<(String, String)>,
    anonymous: bool,
) -> PyResult<Vec<String>> {
    let storage = storage_options(&storage, anonymous);
    let files = crate::run(py, || async {
        Ok::<_, CoreError>(atlas_netcdf::discover_sources(&sources, recursive, &storage).await?)
    })?;
    Ok(files.into_iter().map(|p| p.display().to_string()).collect())
}

/// `files` in the order of the sort keys `sort_by` (comma-separated, as
/// `atlas create --sort-by` takes them): one pass reads only the key
/// variables of every file, `jobs` at a time, mapped with `decode`. A key no
/// file holds, or one holding several values in a file, is an
/// `InvalidArgument` naming it.
#[pyfunction]
#[pyo3(signature = (
    files,
    sort_by,
    decode="cf".to_owned(),
    skip_errors=false,
    storage=Vec::new(),
    anonymous=false,
    jobs=1,
))]
#[allow(clippy::too_many_arguments)]
pub fn order_files(
    py: Python<'_>,
    files: Vec<String>,
    sort_by: &str,
    decode: String,
    skip_errors: bool,
    storage: Vec<(String, String)>,
    anonymous: bool,
    jobs: usize,
) -> PyResult<Vec<String>> {
    let keys = atlas::SortKey::parse_list(sort_by)
        .map_err(|e| crate::convert::py_err(CoreError::from(e)))?;
    let options = IngestOptions::default()
        .with_decode(parse_decode(&decode)?)
        .with_skip_errors(skip_errors)
        .with_jobs(jobs)
        .with_storage(storage_options(&storage, anonymous));
    let files: Vec<PathBuf> = files.into_iter().map(PathBuf::from).collect();
    let ordered = crate::run(py, || async {
        Ok::<_, CoreError>(atlas_netcdf::order_files(&files, &keys, &options).await?)
    })?;
    Ok(ordered
        .files
        .into_iter()
        .map(|p| p.display().to_string())
        .collect())
}

/// Ingests NetCDF `files` into member `member_id` of the set at `location`
/// (created by the first commit if absent), with the mapping `atlas create`
/// uses, the GIL released, `jobs` files decoding at once. An earlier attempt
/// at the same id is removed first; the member is left uncommitted
/// ([`commit_members`] commits it). Returns a dict: `written` (`[(file,
/// dataset)]`), `skipped` (`[(file, reason)]`, only with `skip_errors`),
/// `undecoded`, `notes`, `datasets`, `bytes` (the member's container) and
/// `input_bytes`.
#[pyfunction]
#[pyo3(signature = (
    files,
    location,
    member_id,
    decode="cf".to_owned(),
    skip_errors=false,
    storage=Vec::new(),
    anonymous=false,
    jobs=1,
))]
#[allow(clippy::too_many_arguments)]
pub fn ingest_member<'py>(
    py: Python<'py>,
    files: Vec<String>,
    location: &str,
    member_id: &str,
    decode: String,
    skip_errors: bool,
    storage: Vec<(String, String)>,
    anonymous: bool,
    jobs: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let decode = parse_decode(&decode)?;
    let storage = storage_options(&storage, anonymous);
    // Files at URLs are fetched by this task with the same storage options.
    let options = IngestOptions::default()
        .with_decode(decode)
        .with_skip_errors(skip_errors)
        .with_jobs(jobs)
        .with_storage(storage.clone());
    let files: Vec<PathBuf> = files.into_iter().map(PathBuf::from).collect();
    let report = crate::run(py, || {
        ingest_into_member(files, location, member_id, options, storage)
    })?;
    let d = PyDict::new(py);
    d.set_item("member", member_id)?;
    d.set_item("written", report.written)?;
    d.set_item("skipped", report.skipped)?;
    d.set_item("undecoded", report.undecoded)?;
    d.set_item("notes", report.notes)?;
    d.set_item("datasets", report.datasets)?;
    d.set_item("bytes", report.container_bytes)?;
    d.set_item("input_bytes", report.input_bytes)?;
    Ok(d)
}

/// Commits members `ids` (written by [`ingest_member`], anywhere) to the set
/// at `location` in one manifest update, in the order given; returns the
/// generation committed. All or nothing: on a failure nothing is committed.
#[pyfunction]
#[pyo3(signature = (location, ids, storage=Vec::new(), anonymous=false))]
pub fn commit_members(
    py: Python<'_>,
    location: &str,
    ids: Vec<String>,
    storage: Vec<(String, String)>,
    anonymous: bool,
) -> PyResult<u64> {
    if ids.is_empty() {
        return Err(crate::convert::py_err(CoreError::invalid(
            "no member to commit",
        )));
    }
    let storage = storage_options(&storage, anonymous);
    crate::run(py, || commit(location, &ids, storage))
}

/// Removes the uncommitted members of the set at `location` whose id is in
/// `ids` or starts with `prefix` (committed members are never removed);
/// returns the ids removed. One listing of `members/`, one manifest read.
#[pyfunction]
#[pyo3(signature = (location, ids=Vec::new(), prefix=None, storage=Vec::new(), anonymous=false))]
pub fn remove_members(
    py: Python<'_>,
    location: &str,
    ids: Vec<String>,
    prefix: Option<String>,
    storage: Vec<(String, String)>,
    anonymous: bool,
) -> PyResult<Vec<String>> {
    if prefix.as_deref().is_some_and(str::is_empty) {
        return Err(crate::convert::py_err(CoreError {
            class: ErrorClass::InvalidRequest,
            message: "an empty prefix would name every uncommitted member".into(),
        }));
    }
    let storage = storage_options(&storage, anonymous);
    crate::run(py, || remove(location, &ids, prefix.as_deref(), storage))
}

/// The options of one sync, as `atlasds.sync` passes them.
struct SyncArgs {
    set: String,
    index: String,
    root: Option<String>,
    dry_run: bool,
    options: IngestOptions,
    storage: StorageOptions,
    max_datasets: Option<usize>,
    /// The `k`-th new member's id.
    member_ids: Box<dyn Fn(usize) -> String + Send + Sync>,
}

/// Reads the index, plans, and (unless `dry_run`) applies the plan in one commit.
async fn sync_set(args: SyncArgs) -> core::Result<(SyncReportParts, Option<(Vec<String>, u64)>)> {
    let bytes = atlas_netcdf::read_index(&args.index, &args.storage).await?;
    let index = atlas_netcdf::parse_index(&bytes).map_err(|source| SyncError::Index {
        index: args.index.clone(),
        source,
    })?;
    let root = match &args.root {
        Some(root) => SourceRoot::parse(root),
        None => SourceRoot::beside_index(&args.index),
    };
    let set = Address::from(args.set.as_str())
        .resolve(&args.storage, atlas::Access::Write)
        .await?;
    let options = SyncOptions::default()
        .with_ingest(args.options)
        .with_writer(WriterConfig::default().storage(args.storage.clone()))
        .with_open(atlas::OpenOptions::default().storage(args.storage))
        .with_max_datasets(args.max_datasets);
    let plan = atlas_netcdf::plan_sync(&set, &index, &options.open).await?;
    if args.dry_run {
        return Ok((SyncReportParts::of(&plan), None));
    }
    let ids = args.member_ids;
    let report = atlas_netcdf::apply_sync(plan, &set, &root, &options, ids, |_, _| {}).await?;
    let committed = report
        .committed
        .as_ref()
        .map(|outcome| (report.members.clone(), outcome.generation));
    Ok((SyncReportParts::of(&report.applied), committed))
}

/// A replacement as Python gets it: `(old, name, file, date_update, old_date_update, kind)`.
type ReplacedTuple = (String, String, String, String, Option<String>, &'static str);

/// A plan as plain tuples for Python.
struct SyncReportParts {
    generation: u64,
    added: Vec<(String, String, String)>,
    replaced: Vec<ReplacedTuple>,
    removed: Vec<(String, String)>,
    skipped: Vec<(String, Option<String>, String)>,
    unchanged: usize,
}

impl SyncReportParts {
    fn of(plan: &SyncPlan) -> Self {
        SyncReportParts {
            generation: plan.generation,
            added: plan
                .added
                .iter()
                .map(|a| (a.name.clone(), a.file.clone(), a.date_update.clone()))
                .collect(),
            replaced: plan
                .replaced
                .iter()
                .map(|r| {
                    (
                        r.old.clone(),
                        r.new.name.clone(),
                        r.new.file.clone(),
                        r.new.date_update.clone(),
                        r.old_date_update.clone(),
                        match r.kind {
                            ReplaceKind::DelayedMode => "delayed_mode",
                            _ => "revised",
                        },
                    )
                })
                .collect(),
            removed: plan
                .removed
                .iter()
                .map(|r| (r.name.clone(), r.file.clone()))
                .collect(),
            skipped: plan
                .skipped
                .iter()
                .map(|s| {
                    (
                        s.name.clone(),
                        s.file.clone(),
                        atlas::ErrorReport::new(&s.reason).to_string(),
                    )
                })
                .collect(),
            unchanged: plan.unchanged,
        }
    }
}

/// Brings the set at `set` in step with the archive index `index` (Argo GDAC
/// format, plain or gzip; a path or URL), reading files from `root` (default:
/// `dac` beside the index): adds, replacements (revised, and real-time to
/// delayed-mode) and removals in one commit, as `atlas sync` does. With
/// `dry_run` only the plan. Returns a dict: `generation` (planned from),
/// `added` (`[(name, file, date_update)]`), `replaced` (`[(old, name, file,
/// date_update, old_date_update, kind)]`), `removed` (`[(name, file)]`),
/// `skipped` (`[(name, file, reason)]`), `unchanged`, and `member` /
/// `committed_generation` (None when nothing was committed).
#[pyfunction]
#[pyo3(signature = (
    set,
    index,
    root=None,
    dry_run=false,
    decode="cf".to_owned(),
    skip_errors=false,
    storage=Vec::new(),
    anonymous=false,
    jobs=1,
    max_datasets=None,
))]
#[allow(clippy::too_many_arguments)]
pub fn sync<'py>(
    py: Python<'py>,
    set: String,
    index: String,
    root: Option<String>,
    dry_run: bool,
    decode: String,
    skip_errors: bool,
    storage: Vec<(String, String)>,
    anonymous: bool,
    jobs: usize,
    max_datasets: Option<usize>,
) -> PyResult<Bound<'py, PyDict>> {
    let decode = parse_decode(&decode)?;
    // The member ids' time and nonce are taken here, at the binding's edge.
    let (ms, nonce) = id_seed();
    let args = SyncArgs {
        set,
        index,
        root,
        dry_run,
        options: IngestOptions::default()
            .with_decode(decode)
            .with_skip_errors(skip_errors)
            .with_jobs(jobs)
            .with_storage(storage_options(&storage, anonymous)),
        storage: storage_options(&storage, anonymous),
        max_datasets,
        member_ids: Box::new(move |k| atlas::member_id(ms, nonce.wrapping_add(k as u64))),
    };
    let (parts, committed) = crate::run(py, || sync_set(args))?;
    let d = PyDict::new(py);
    d.set_item("generation", parts.generation)?;
    d.set_item("added", parts.added)?;
    d.set_item("replaced", parts.replaced)?;
    d.set_item("removed", parts.removed)?;
    d.set_item("skipped", parts.skipped)?;
    d.set_item("unchanged", parts.unchanged)?;
    d.set_item(
        "members",
        committed.as_ref().map_or_else(Vec::new, |(m, _)| m.clone()),
    )?;
    d.set_item("committed_generation", committed.map(|(_, g)| g))?;
    Ok(d)
}

/// The `decode=` argument of `ingest` and `sync`: `"cf"` or `"raw"`.
fn parse_decode(decode: &str) -> PyResult<Decode> {
    match decode {
        "cf" => Ok(Decode::Cf),
        "raw" => Ok(Decode::Raw),
        other => Err(crate::convert::py_err(CoreError::invalid(format!(
            "decode must be 'cf' or 'raw', not {other:?}"
        )))),
    }
}
