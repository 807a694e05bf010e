//! Keeping a set in step with an archive's index ([`crate::gdac`]): what the
//! set holds is compared with what the index lists ([`plan_sync`]), and the
//! differences are applied in one commit ([`apply_sync`]): one new member
//! holding the added and replaced files, with the removed names hidden in it
//! ([`atlas::SetWriter::hide`]), so a reader sees the set before or after,
//! never between.
//!
//! Each dataset a sync writes records where it came from in two dataset
//! attributes, [`SOURCE_ATTR`] (the file's path in the index) and
//! [`DATE_UPDATE_ATTR`] (the index's `date_update`); they are the set's
//! memory of the archive, kept by every later commit and compaction, so a
//! rerun with nothing changed finds nothing to do.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use atlas::{
    Access, Atlas, AtlasError, Attr, CommitOutcome, ErrorClass, IoError, IoErrorKind, Location,
    OpenOptions, SetWriter, SmolStr, StorageOptions, WriterConfig,
};
use futures::StreamExt;

use crate::error::FileError;
use crate::gdac::{GdacIndex, IndexEntry, IndexError};
use crate::ingest::{IngestOptions, map_any};
use crate::remote::{Remotes, is_url};
use crate::sink;
use tokio::task::JoinSet;

/// Dataset attribute holding the file's path relative to the archive root, as the index lists it.
pub const SOURCE_ATTR: &str = "_atlas_source";
/// Dataset attribute holding the index's `date_update` of the file when it was ingested.
pub const DATE_UPDATE_ATTR: &str = "_atlas_date_update";

/// Where the files an index lists are read from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SourceRoot {
    /// A local directory: file `a/b.nc` of the index is `<dir>/a/b.nc`.
    Local(PathBuf),
    /// A folder at a URL (`s3://`, `gs://`, `az://`, `http(s)://`, no
    /// trailing `/`): file `a/b.nc` is `<url>/a/b.nc`, fetched with
    /// [`IngestOptions::storage`](crate::IngestOptions::storage).
    Url(String),
}

impl SourceRoot {
    /// The root `root`: a local folder (a path, or a `file://` URL) or a folder at a URL.
    pub fn parse(root: &str) -> SourceRoot {
        if is_url(root) {
            return SourceRoot::Url(root.trim_end_matches('/').to_owned());
        }
        SourceRoot::Local(PathBuf::from(root.strip_prefix("file://").unwrap_or(root)))
    }

    /// The GDAC layout: the folder `dac` beside the index `index` (a path or URL).
    pub fn beside_index(index: &str) -> SourceRoot {
        if is_url(index) {
            let folder = index.rsplit_once('/').map_or(index, |(folder, _)| folder);
            return SourceRoot::Url(format!("{folder}/dac"));
        }
        let index = index.strip_prefix("file://").unwrap_or(index);
        SourceRoot::Local(
            Path::new(index)
                .parent()
                .map_or_else(|| PathBuf::from("dac"), |p| p.join("dac")),
        )
    }

    /// Where the file `file` (relative, as the index lists it) is read from:
    /// a path, or a URL held as a path (as [`crate::discover_sources`] lists them).
    pub fn file(&self, file: &str) -> PathBuf {
        match self {
            SourceRoot::Local(dir) => dir.join(file),
            SourceRoot::Url(url) => PathBuf::from(format!("{url}/{file}")),
        }
    }

    /// How the file at `file` is named in messages.
    pub fn display(&self, file: &str) -> String {
        self.file(file).display().to_string()
    }
}

/// How a sync writes. Build with `SyncOptions::default()` and the fields.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct SyncOptions {
    /// The mapping, chunk shapes, whether failing files are skipped, and how
    /// many files are read at once.
    pub ingest: IngestOptions,
    /// The new member's writer configuration (codec, block sizes, storage).
    pub writer: WriterConfig,
    /// How the set is opened to plan (storage options, limits).
    pub open: OpenOptions,
    /// At most this many new datasets a member (the files in name order,
    /// the removals in the last member), all committed together; `None`:
    /// one member. Bounds the writer's memory on a first sync of a whole archive.
    pub max_datasets: Option<usize>,
}

impl SyncOptions {
    /// Sets the ingest options.
    pub fn with_ingest(mut self, ingest: IngestOptions) -> Self {
        self.ingest = ingest;
        self
    }
    /// Sets the writer configuration.
    pub fn with_writer(mut self, writer: WriterConfig) -> Self {
        self.writer = writer;
        self
    }
    /// Sets how the set is opened.
    pub fn with_open(mut self, open: OpenOptions) -> Self {
        self.open = open;
        self
    }
    /// Sets the most new datasets a member holds (`None`: one member).
    pub fn with_max_datasets(mut self, max: Option<usize>) -> Self {
        self.max_datasets = max;
        self
    }
}

/// A file the sync writes: its dataset name, path in the index and `date_update`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PlannedFile {
    /// The dataset name (the file name).
    pub name: String,
    /// The path relative to the archive root.
    pub file: String,
    /// The index's `date_update`.
    pub date_update: String,
    /// The index line listing it.
    pub line: usize,
}

impl PlannedFile {
    fn of(entry: &IndexEntry) -> Self {
        PlannedFile {
            name: entry.name.clone(),
            file: entry.file.clone(),
            date_update: entry.date_update.clone(),
            line: entry.line,
        }
    }
}

/// Why a dataset is replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReplaceKind {
    /// The same file name, with a newer `date_update` (or another path).
    Revised,
    /// A real-time file (`R…`, `BR…`, `SR…`) left the index and its
    /// delayed-mode file (`D…`, `BD…`, `SD…`) of the same profile arrived.
    DelayedMode,
}

/// A dataset replaced by a file of the index.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Replacement {
    /// The name the set holds now (the same as `new.name` unless [`ReplaceKind::DelayedMode`]).
    pub old: String,
    /// The `date_update` the set recorded for it, if any.
    pub old_date_update: Option<String>,
    /// The file that replaces it.
    pub new: PlannedFile,
    /// Why.
    pub kind: ReplaceKind,
}

/// A dataset removed because its file left the index.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Removal {
    /// The dataset name.
    pub name: String,
    /// The path the set recorded for it.
    pub file: String,
}

/// Why a name was left as it is, or a file not written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SyncSkip {
    /// The index lists an older `date_update` than the set recorded: the set's copy is kept.
    #[error("the index's date_update {index} is older than the set's {set}")]
    OlderInIndex {
        /// The index's date.
        index: String,
        /// The set's date.
        set: String,
    },
    /// The set holds the name but no sync wrote it (no [`SOURCE_ATTR`]), and
    /// the index does not list it: a sync removes only what a sync added.
    #[error("not in the index, and not written by a sync: left in the set")]
    NotFromIndex,
    /// The file failed to read, map or write (with `skip_errors`); a rerun tries it again.
    #[error(transparent)]
    Failed(FileError),
}

/// A name left as it is, and why.
#[derive(Debug)]
#[non_exhaustive]
pub struct SkippedName {
    /// The dataset name.
    pub name: String,
    /// The path in the index, when the index lists it.
    pub file: Option<String>,
    /// Why.
    pub reason: SyncSkip,
}

/// What a sync will do (from [`plan_sync`]) or did (from [`apply_sync`]).
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct SyncPlan {
    /// The set's generation the plan was made from (0 for a set not yet created).
    pub generation: u64,
    /// Files the set does not hold, by name.
    pub added: Vec<PlannedFile>,
    /// Datasets replaced, by new name.
    pub replaced: Vec<Replacement>,
    /// Datasets whose file left the index, by name.
    pub removed: Vec<Removal>,
    /// Names left as they are, with reasons, by name.
    pub skipped: Vec<SkippedName>,
    /// Files the set already holds as the index lists them.
    pub unchanged: usize,
}

impl SyncPlan {
    /// Whether applying it would change the set.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.replaced.is_empty() && self.removed.is_empty()
    }
}

/// What [`apply_sync`] did: the plan as carried out (files that failed with
/// `skip_errors` moved to `skipped`), and the commit.
#[derive(Debug)]
#[non_exhaustive]
pub struct SyncReport {
    /// What was applied.
    pub applied: SyncPlan,
    /// The ids of the members committed, in commit order (empty when nothing changed).
    pub members: Vec<String>,
    /// The commit, or `None` when nothing changed.
    pub committed: Option<CommitOutcome>,
    /// Bytes of the files read.
    pub input_bytes: u64,
}

/// Why a sync failed. Nothing is committed when this is returned.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SyncError {
    /// The index is malformed.
    #[error("index {index}")]
    Index {
        /// The index as given.
        index: String,
        /// The problem, naming its line.
        source: IndexError,
    },
    /// The index could not be read.
    #[error("cannot read the index {index}")]
    IndexRead {
        /// The index as given.
        index: String,
        /// The storage error.
        source: AtlasError,
    },
    /// The set could not be read.
    #[error("reading the set failed")]
    Set(#[source] AtlasError),
    /// A file failed and `skip_errors` is off.
    #[error("{file}")]
    File {
        /// The file, as its root names it.
        file: String,
        /// What went wrong.
        source: FileError,
    },
    /// Writing or committing the new member failed. A
    /// [`AtlasError::CommitConflict`] inside means another writer committed
    /// since the plan was made: plan and apply again.
    #[error("writing the new member failed")]
    Writer(#[source] AtlasError),
    /// A reading task panicked or was cancelled (a bug; please report it).
    #[error("a sync task failed: {reason}")]
    Task {
        /// What the runtime reported.
        reason: String,
    },
}

impl SyncError {
    /// The class of the failure, read off the library's where there is one;
    /// an index or file the sync refuses is the request's.
    pub fn class(&self) -> ErrorClass {
        match self {
            SyncError::IndexRead { source: a, .. }
            | SyncError::Set(a)
            | SyncError::Writer(a)
            | SyncError::File {
                source: FileError::Write(a),
                ..
            } => a.class(),
            _ => ErrorClass::InvalidRequest,
        }
    }
}

/// The bytes of the index `spec`: a local path (or `file://` URL), or an
/// object at an `s3://`, `gs://`, `az://` or `http(s)://` URL, read with
/// `storage` as collections are. One read.
///
/// # Errors
/// [`SyncError::IndexRead`] when it cannot be read.
pub async fn read_index(spec: &str, storage: &StorageOptions) -> Result<Vec<u8>, SyncError> {
    let failed = |source: AtlasError| SyncError::IndexRead {
        index: spec.to_owned(),
        source,
    };
    if is_url(spec) {
        let (folder, name) = spec
            .rsplit_once('/')
            .filter(|(_, name)| !name.is_empty())
            .ok_or_else(|| failed(AtlasError::invalid_use("an index URL names an object")))?;
        let location = Location::resolve(folder, storage, Access::Read)
            .await
            .map_err(failed)?;
        let path = location.object(name);
        let buffer = location
            .operator()
            .read(&path)
            .await
            .map_err(|e| failed(AtlasError::Io(IoError::from_opendal(e, "read", &path))))?;
        return Ok(buffer.to_vec());
    }
    let path = spec.strip_prefix("file://").unwrap_or(spec);
    std::fs::read(path).map_err(|e| {
        let kind = match e.kind() {
            std::io::ErrorKind::NotFound => IoErrorKind::NotFound,
            std::io::ErrorKind::PermissionDenied => IoErrorKind::PermissionDenied,
            _ => IoErrorKind::Other,
        };
        failed(AtlasError::Io(IoError::new(
            kind,
            "read",
            path,
            e.to_string(),
        )))
    })
}

/// One dataset the set holds, with what a sync recorded for it.
#[derive(Debug, Clone)]
struct Holding {
    source: Option<String>,
    date_update: Option<String>,
}

/// Reads what the set at `set` holds (names and their recorded source and
/// date) and compares it with `index`. A set that does not exist yet holds
/// nothing (generation 0).
///
/// Cost: the set's open, then one read of each member's dataset-attribute
/// column for the two sync attributes and the names; no array data.
///
/// # Errors
/// [`SyncError::Set`] when the set cannot be read.
pub async fn plan_sync(
    set: &Location,
    index: &GdacIndex,
    options: &OpenOptions,
) -> Result<SyncPlan, SyncError> {
    let (generation, holdings) = read_holdings(set, options).await?;
    Ok(plan(generation, &holdings, index))
}

async fn read_holdings(
    set: &Location,
    options: &OpenOptions,
) -> Result<(u64, HashMap<String, Holding>), SyncError> {
    let atlas = match Atlas::open(set, options).await {
        Ok(atlas) => atlas,
        Err(e) if e.is_not_found() => return Ok((0, HashMap::new())),
        Err(e) => return Err(SyncError::Set(e)),
    };
    let generation = atlas.generation().unwrap_or(0);
    let names = atlas.dataset_names().await.map_err(SyncError::Set)?;
    let text = |rows: Vec<(SmolStr, Attr)>| -> HashMap<SmolStr, String> {
        rows.into_iter()
            .filter_map(|(name, attr)| match attr {
                Attr::String(s) => Some((name, s)),
                _ => None,
            })
            .collect()
    };
    let mut sources = text(
        atlas
            .attributes_by_dataset(None, SOURCE_ATTR)
            .await
            .map_err(SyncError::Set)?,
    );
    let mut dates = text(
        atlas
            .attributes_by_dataset(None, DATE_UPDATE_ATTR)
            .await
            .map_err(SyncError::Set)?,
    );
    let holdings = names
        .into_iter()
        .map(|name| {
            let holding = Holding {
                source: sources.remove(name.as_str()),
                date_update: dates.remove(name.as_str()),
            };
            (name.to_string(), holding)
        })
        .collect();
    Ok((generation, holdings))
}

/// The delayed-mode name of a real-time profile file (`R…` to `D…`, `BR…`
/// to `BD…`, `SR…` to `SD…`), or `None` for any other name.
pub fn delayed_mode_name(name: &str) -> Option<String> {
    for (real_time, delayed) in [("R", "D"), ("BR", "BD"), ("SR", "SD")] {
        if let Some(rest) = name.strip_prefix(real_time) {
            return Some(format!("{delayed}{rest}"));
        }
    }
    None
}

fn folder(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(dir, _)| dir)
}

fn plan(generation: u64, holdings: &HashMap<String, Holding>, index: &GdacIndex) -> SyncPlan {
    let listed: HashMap<&str, &IndexEntry> =
        index.entries.iter().map(|e| (e.name.as_str(), e)).collect();
    let mut out = SyncPlan {
        generation,
        ..SyncPlan::default()
    };
    // Delayed-mode files that take the place of a real-time one.
    let mut paired: HashSet<&str> = HashSet::new();
    let mut names: Vec<&String> = holdings.keys().collect();
    names.sort();
    for name in names {
        let Some(held) = holdings.get(name) else {
            continue;
        };
        if let Some(entry) = listed.get(name.as_str()) {
            let same = held.source.as_deref() == Some(entry.file.as_str())
                && held.date_update.as_deref() == Some(entry.date_update.as_str());
            match &held.date_update {
                _ if same => out.unchanged += 1,
                Some(set) if set.as_str() > entry.date_update.as_str() => {
                    out.skipped.push(SkippedName {
                        name: name.clone(),
                        file: Some(entry.file.clone()),
                        reason: SyncSkip::OlderInIndex {
                            index: entry.date_update.clone(),
                            set: set.clone(),
                        },
                    });
                }
                _ => out.replaced.push(Replacement {
                    old: name.clone(),
                    old_date_update: held.date_update.clone(),
                    new: PlannedFile::of(entry),
                    kind: ReplaceKind::Revised,
                }),
            }
            continue;
        }
        let Some(source) = &held.source else {
            out.skipped.push(SkippedName {
                name: name.clone(),
                file: None,
                reason: SyncSkip::NotFromIndex,
            });
            continue;
        };
        let delayed = delayed_mode_name(name)
            .and_then(|d| listed.get(d.as_str()).copied())
            .filter(|d| !holdings.contains_key(&d.name) && folder(&d.file) == folder(source));
        match delayed {
            Some(entry) => {
                paired.insert(entry.name.as_str());
                out.replaced.push(Replacement {
                    old: name.clone(),
                    old_date_update: held.date_update.clone(),
                    new: PlannedFile::of(entry),
                    kind: ReplaceKind::DelayedMode,
                });
            }
            None => out.removed.push(Removal {
                name: name.clone(),
                file: source.clone(),
            }),
        }
    }
    out.added = index
        .entries
        .iter()
        .filter(|e| !holdings.contains_key(&e.name) && !paired.contains(e.name.as_str()))
        .map(PlannedFile::of)
        .collect();
    out.added.sort_by(|a, b| a.name.cmp(&b.name));
    out.replaced.sort_by(|a, b| a.new.name.cmp(&b.new.name));
    out
}

/// One file to write, and the replacement it belongs to.
struct Job {
    file: PlannedFile,
    replaces: Option<Replacement>,
}

/// Applies `plan` to the set at `set` in one commit: new members (the
/// `k`-th is `member_id(k)`, see [`atlas::member_id`]; time and randomness
/// are the caller's) holding the added and replaced files read from `root`,
/// at most [`SyncOptions::max_datasets`] each, the removed names and the
/// real-time names of delayed-mode replacements hidden in the last. The commit
/// succeeds only while the set is still at `plan.generation`, so two syncs
/// planned from one state do not both apply. A plan that changes nothing
/// commits nothing.
///
/// Files are read and mapped on `options.ingest.jobs` blocking threads at a
/// time; datasets are added in name order. With `skip_errors` a failing file
/// is left out (reported, and tried again by the next sync; a delayed-mode
/// file that fails leaves its real-time file in place), otherwise nothing is
/// committed.
///
/// # Errors
/// [`SyncError::File`] for a failing file without `skip_errors`;
/// [`SyncError::Writer`] when writing or committing fails (an
/// [`AtlasError::CommitConflict`] when the set moved on since the plan);
/// [`SyncError::Task`] when a reading task panicked. Nothing is committed.
pub async fn apply_sync(
    plan: SyncPlan,
    set: &Location,
    root: &SourceRoot,
    options: &SyncOptions,
    member_id: impl Fn(usize) -> String,
    mut progress: impl FnMut(usize, usize),
) -> Result<SyncReport, SyncError> {
    let SyncPlan {
        generation,
        added,
        replaced,
        removed,
        mut skipped,
        unchanged,
    } = plan;
    let mut applied = SyncPlan {
        generation,
        unchanged,
        ..SyncPlan::default()
    };
    if added.is_empty() && replaced.is_empty() && removed.is_empty() {
        applied.skipped = skipped;
        return Ok(SyncReport {
            applied,
            members: Vec::new(),
            committed: None,
            input_bytes: 0,
        });
    }
    let mut jobs: Vec<Job> = added
        .into_iter()
        .map(|file| Job {
            file,
            replaces: None,
        })
        .chain(replaced.into_iter().map(|r| Job {
            file: r.new.clone(),
            replaces: Some(r),
        }))
        .collect();
    jobs.sort_by(|a, b| a.file.name.cmp(&b.file.name));
    let total = jobs.len();

    let mut writer = SetWriter::create(set, &options.writer)
        .await
        .map_err(SyncError::Writer)?;
    let per_member = options.max_datasets.unwrap_or(usize::MAX).max(1);
    let first = member_id(0);
    let mut member = match writer.add_member(&first).await {
        Ok(member) => member,
        Err(e) => {
            abort(writer).await;
            return Err(SyncError::Writer(e));
        }
    };
    let mut ids = vec![first];
    let mut in_member = 0;

    let shared = Arc::new(options.ingest.clone());
    let remotes = Arc::new(Remotes::new(options.ingest.storage.clone()));
    let mut mapped = futures::stream::iter(jobs.into_iter().map(|job| {
        let ingest = Arc::clone(&shared);
        let remotes = Arc::clone(&remotes);
        let path = root.file(&job.file.file);
        async move {
            let (result, bytes) = map_any(path, ingest, remotes).await?;
            Ok::<_, tokio::task::JoinError>((job, result, bytes))
        }
    }))
    .buffered(options.ingest.jobs.max(1));

    let mut finishing = Finishing {
        tasks: JoinSet::new(),
        parallel: options.ingest.jobs.max(1),
        done: 0,
        total,
        input_bytes: 0,
        progress: &mut progress,
    };
    let mut failure = None;
    while let Some(joined) = mapped.next().await {
        let (job, result, bytes) = match joined {
            Ok(j) => j,
            Err(e) => {
                failure = Some(SyncError::Task {
                    reason: e.to_string(),
                });
                break;
            }
        };
        let mapped_file = match result {
            Ok(m) => m,
            Err(e) => {
                finishing.count_one();
                if let Err(e) = skip_or_fail(options, root, &job, e, &mut skipped) {
                    failure = Some(e);
                    break;
                }
                continue;
            }
        };
        if in_member == per_member {
            // This member is full: its datasets settle, the next dataset
            // starts another.
            if let Err(e) = finishing
                .settle(0, options, root, &mut applied, &mut skipped)
                .await
            {
                failure = Some(e);
                break;
            }
            let next = member_id(ids.len());
            let rolled = async {
                writer.finish_member(member).await?;
                writer.add_member(&next).await
            }
            .await;
            match rolled {
                Ok(m) => member = m,
                Err(e) => {
                    drop(mapped);
                    abort(writer).await;
                    return Err(SyncError::Writer(e));
                }
            }
            ids.push(next);
            in_member = 0;
        }
        match start_one(member.writer(), &job.file, &mapped_file.dataset) {
            Ok(dataset) => {
                in_member += 1;
                finishing.tasks.spawn(async move {
                    let written = dataset.finish().await;
                    (job, bytes, written)
                });
            }
            Err(e) => {
                finishing.count_one();
                if let Err(e) = skip_or_fail(options, root, &job, e, &mut skipped) {
                    failure = Some(e);
                    break;
                }
            }
        }
        let keep = finishing.parallel.saturating_sub(1);
        if let Err(e) = finishing
            .settle(keep, options, root, &mut applied, &mut skipped)
            .await
        {
            failure = Some(e);
            break;
        }
    }
    if failure.is_none()
        && let Err(e) = finishing
            .settle(0, options, root, &mut applied, &mut skipped)
            .await
    {
        failure = Some(e);
    }
    finishing.tasks.abort_all();
    while finishing.tasks.join_next().await.is_some() {}
    let input_bytes = finishing.input_bytes;
    // Datasets settle in the order they finish; reports list them by name.
    applied.added.sort_by(|a, b| a.name.cmp(&b.name));
    applied.replaced.sort_by(|a, b| a.new.name.cmp(&b.new.name));
    drop(mapped);
    if let Some(e) = failure {
        drop(member);
        abort(writer).await;
        return Err(e);
    }

    let mut hidden: Vec<&str> = removed.iter().map(|r| r.name.as_str()).collect();
    hidden.extend(
        applied
            .replaced
            .iter()
            .filter(|r| r.kind == ReplaceKind::DelayedMode)
            .map(|r| r.old.as_str()),
    );
    hidden.sort_unstable();
    skipped.sort_by(|a, b| a.name.cmp(&b.name));
    if applied.added.is_empty() && applied.replaced.is_empty() && hidden.is_empty() {
        drop(member);
        abort(writer).await;
        applied.skipped = skipped;
        return Ok(SyncReport {
            applied,
            members: Vec::new(),
            committed: None,
            input_bytes,
        });
    }
    // The removals go into the last member; any member would do, since the
    // names hidden are not among those written.
    let last = async {
        writer.hide(&member, &hidden).await?;
        writer.finish_member(member).await?;
        Ok::<_, AtlasError>(())
    }
    .await;
    if let Err(e) = last {
        abort(writer).await;
        return Err(SyncError::Writer(e));
    }
    let committed = writer
        .commit_at_generation(generation)
        .await
        .map_err(SyncError::Writer)?;
    applied.removed = removed;
    applied.skipped = skipped;
    Ok(SyncReport {
        applied,
        members: ids,
        committed: Some(committed),
        input_bytes,
    })
}

/// With `skip_errors`, records `job`'s failure among the skipped names;
/// otherwise the error that stops the sync.
fn skip_or_fail(
    options: &SyncOptions,
    root: &SourceRoot,
    job: &Job,
    error: FileError,
    skipped: &mut Vec<SkippedName>,
) -> Result<(), SyncError> {
    if !options.ingest.skip_errors {
        return Err(SyncError::File {
            file: root.display(&job.file.file),
            source: error,
        });
    }
    tracing::warn!(file = %job.file.file, %error, "skipping file");
    skipped.push(SkippedName {
        name: job.file.name.clone(),
        file: Some(job.file.file.clone()),
        reason: SyncSkip::Failed(error),
    });
    Ok(())
}

/// What a finishing dataset task hands back: its job, the file's size and
/// the outcome of the dataset's `finish`.
type Finished = (Job, u64, Result<(), AtlasError>);

/// The datasets of a sync being finished (compressed and pushed) on tasks
/// of their own, at most `parallel` at once, and what the settled ones
/// counted.
struct Finishing<'p> {
    tasks: JoinSet<Finished>,
    parallel: usize,
    done: usize,
    total: usize,
    input_bytes: u64,
    progress: &'p mut dyn FnMut(usize, usize),
}

impl Finishing<'_> {
    /// One more file done (written, skipped or failed), reported.
    fn count_one(&mut self) {
        self.done += 1;
        (self.progress)(self.done, self.total);
    }

    /// Settles finished datasets until at most `keep` are still finishing:
    /// each is applied, or skipped (with `skip_errors`), or is the failure
    /// that ends the sync.
    async fn settle(
        &mut self,
        keep: usize,
        options: &SyncOptions,
        root: &SourceRoot,
        applied: &mut SyncPlan,
        skipped: &mut Vec<SkippedName>,
    ) -> Result<(), SyncError> {
        while self.tasks.len() > keep {
            let Some(joined) = self.tasks.join_next().await else {
                break;
            };
            self.count_one();
            let (job, bytes, written) = joined.map_err(|e| SyncError::Task {
                reason: e.to_string(),
            })?;
            match written {
                Ok(()) => {
                    self.input_bytes += bytes;
                    match job.replaces {
                        Some(r) => applied.replaced.push(r),
                        None => applied.added.push(job.file),
                    }
                }
                Err(e) => skip_or_fail(options, root, &job, FileError::Write(e), skipped)?,
            }
        }
        Ok(())
    }
}

/// Adds one mapped file as dataset `file.name` with the sync's two
/// attributes; the caller finishes it.
fn start_one(
    writer: &atlas::AtlasWriter,
    file: &PlannedFile,
    dataset: &crate::model::Dataset,
) -> Result<atlas::DatasetWriter, FileError> {
    let mut dw = writer.add_dataset(&file.name)?;
    sink::fill_writer(&mut dw, dataset)?;
    dw.set_attribute(SOURCE_ATTR, Attr::String(file.file.clone()))?;
    dw.set_attribute(DATE_UPDATE_ATTR, Attr::String(file.date_update.clone()))?;
    Ok(dw)
}

async fn abort(writer: SetWriter) {
    if let Err(e) = writer.abort().await {
        tracing::warn!("could not remove the uncommitted member: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gdac::parse_index;

    fn index(lines: &[&str]) -> GdacIndex {
        let text = format!("{}\n{}\n", crate::gdac::GDAC_HEADER, lines.join("\n"));
        parse_index(text.as_bytes()).unwrap()
    }

    fn held(source: &str, date: &str) -> Holding {
        Holding {
            source: Some(source.into()),
            date_update: Some(date.into()),
        }
    }

    #[test]
    fn a_real_time_file_followed_by_its_delayed_mode_file_is_one_replacement() {
        let holdings = HashMap::from([
            (
                "R1_001.nc".to_owned(),
                held("c/1/profiles/R1_001.nc", "20200101000000"),
            ),
            (
                "R1_002.nc".to_owned(),
                held("c/1/profiles/R1_002.nc", "20200101000000"),
            ),
            (
                "D1_003.nc".to_owned(),
                held("c/1/profiles/D1_003.nc", "20200101000000"),
            ),
            (
                "D1_004.nc".to_owned(),
                held("c/1/profiles/D1_004.nc", "20200101000000"),
            ),
            (
                "mine.nc".to_owned(),
                Holding {
                    source: None,
                    date_update: None,
                },
            ),
        ]);
        let idx = index(&[
            "c/1/profiles/R1_001.nc,,,,A,851,AO,20200101000000",
            "c/1/profiles/D1_002.nc,,,,A,851,AO,20200201000000",
            "c/1/profiles/D1_003.nc,,,,A,851,AO,20200301000000",
            "c/1/profiles/D1_004.nc,,,,A,851,AO,20190101000000",
            "c/1/profiles/R1_005.nc,,,,A,851,AO,20200101000000",
        ]);
        let p = plan(3, &holdings, &idx);
        assert_eq!(p.generation, 3);
        assert_eq!(p.unchanged, 1);
        let added: Vec<&str> = p.added.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(added, ["R1_005.nc"]);
        let replaced: Vec<(&str, &str, ReplaceKind)> = p
            .replaced
            .iter()
            .map(|r| (r.old.as_str(), r.new.name.as_str(), r.kind))
            .collect();
        assert_eq!(
            replaced,
            [
                ("R1_002.nc", "D1_002.nc", ReplaceKind::DelayedMode),
                ("D1_003.nc", "D1_003.nc", ReplaceKind::Revised),
            ]
        );
        assert!(p.removed.is_empty());
        let skipped: Vec<&str> = p.skipped.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(skipped, ["D1_004.nc", "mine.nc"]);
        assert!(matches!(p.skipped[0].reason, SyncSkip::OlderInIndex { .. }));
        assert!(matches!(p.skipped[1].reason, SyncSkip::NotFromIndex));
    }

    #[test]
    fn a_file_that_left_the_index_is_removed_and_a_matching_plan_is_empty() {
        let holdings = HashMap::from([(
            "R1_001.nc".to_owned(),
            held("c/1/profiles/R1_001.nc", "20200101000000"),
        )]);
        let p = plan(1, &holdings, &index(&[]));
        assert_eq!(p.removed.len(), 1);
        assert_eq!(p.removed[0].name, "R1_001.nc");
        let same = index(&["c/1/profiles/R1_001.nc,,,,A,851,AO,20200101000000"]);
        let p = plan(1, &holdings, &same);
        assert!(p.is_empty());
        assert_eq!(p.unchanged, 1);
    }

    #[test]
    fn delayed_mode_names_follow_the_argo_prefixes() {
        assert_eq!(
            delayed_mode_name("R1900022_065.nc").as_deref(),
            Some("D1900022_065.nc")
        );
        assert_eq!(
            delayed_mode_name("BR1900022_065.nc").as_deref(),
            Some("BD1900022_065.nc")
        );
        assert_eq!(
            delayed_mode_name("SR1900022_065.nc").as_deref(),
            Some("SD1900022_065.nc")
        );
        assert_eq!(delayed_mode_name("D1900022_065.nc"), None);
    }
}
