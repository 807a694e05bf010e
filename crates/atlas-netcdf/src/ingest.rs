//! The ingest: files mapped on worker threads, datasets added in sorted path
//! order (so ordinals are reproducible whatever the thread count), the
//! collection committed once at the end.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use atlas::{AtlasWriter, WriteSummary};
use futures::StreamExt;
use tokio::task::JoinSet;

use crate::error::{FileError, IngestError, TimeError};
use crate::mapping::Mapped;
use crate::remote::{Remotes, on_local_copy};
use crate::stored::StoredFile;
use crate::{cf, raw, reader, sink};

/// Which mapping turns a file into a dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Decode {
    /// xarray's default CF decoding, stored as atlas-python stores it (see [`crate::cf`]).
    #[default]
    Cf,
    /// The file as stored (see [`crate::raw`]).
    Raw,
}

/// How an ingest runs. Build with `IngestOptions::default()` and the setters.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct IngestOptions {
    /// The mapping (default CF).
    pub decode: Decode,
    /// Leave out a failing file (recorded in the report) instead of stopping.
    pub skip_errors: bool,
    /// Leave out a variable of an unsupported type (recorded) instead of failing its file.
    pub skip_unsupported: bool,
    /// Stored chunk shape per array name; others are stored whole.
    pub chunks: BTreeMap<String, Vec<u64>>,
    /// Files opened and decoded at once (at least 1; default 1); for files
    /// at URLs, also the window of files being fetched at once.
    pub jobs: usize,
    /// How files at URLs are reached (credentials, endpoint, retries); see [`crate::remote`].
    pub storage: atlas::StorageOptions,
}

impl Default for IngestOptions {
    fn default() -> Self {
        Self {
            decode: Decode::Cf,
            skip_errors: false,
            skip_unsupported: false,
            chunks: BTreeMap::new(),
            jobs: 1,
            storage: atlas::StorageOptions::default(),
        }
    }
}

impl IngestOptions {
    /// Sets the mapping.
    pub fn with_decode(mut self, decode: Decode) -> Self {
        self.decode = decode;
        self
    }
    /// Sets whether failing files are skipped.
    pub fn with_skip_errors(mut self, skip: bool) -> Self {
        self.skip_errors = skip;
        self
    }
    /// Sets whether unsupported variables are skipped.
    pub fn with_skip_unsupported(mut self, skip: bool) -> Self {
        self.skip_unsupported = skip;
        self
    }
    /// Sets the per-array chunk shapes.
    pub fn with_chunks(mut self, chunks: BTreeMap<String, Vec<u64>>) -> Self {
        self.chunks = chunks;
        self
    }
    /// Sets the number of decoding threads (0 counts as 1).
    pub fn with_jobs(mut self, jobs: usize) -> Self {
        self.jobs = jobs.max(1);
        self
    }
    /// Sets how files at URLs are reached.
    pub fn with_storage(mut self, storage: atlas::StorageOptions) -> Self {
        self.storage = storage;
        self
    }
}

/// Why a file was left out.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SkipReason {
    /// Another file has the same name (all files of that name are left out).
    #[error("dataset name {name:?} also comes from {}", others.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "))]
    DuplicateName {
        /// The shared name.
        name: String,
        /// The other files of that name.
        others: Vec<PathBuf>,
    },
    /// The file name is not a valid dataset name.
    #[error("{0} (the dataset name is the file name)")]
    InvalidName(String),
    /// Reading, mapping or writing the file failed.
    #[error(transparent)]
    Failed(#[from] FileError),
}

/// A file left out, and why.
#[derive(Debug)]
pub struct SkippedFile {
    /// The file.
    pub path: PathBuf,
    /// Why.
    pub reason: SkipReason,
}

/// A variable left out of a dataset (with `skip_unsupported`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedVariable {
    /// The dataset (file name).
    pub dataset: String,
    /// The variable's path in the file.
    pub variable: String,
    /// Its NetCDF type.
    pub dtype: String,
}

/// A time variable stored undecoded by `--decode cf` (its numbers, with
/// `units` and `calendar`, as `--decode raw` stores them), and why.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct UndecodedVariable {
    /// The dataset (file name).
    pub dataset: String,
    /// The variable's path in the file.
    pub variable: String,
    /// Why its times have no `timestamp_ns` form.
    pub reason: TimeError,
}

/// A file that became a dataset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenFile {
    /// The file.
    pub path: PathBuf,
    /// The dataset name.
    pub dataset: String,
}

/// What an ingest did. Every list is in sorted path order.
#[derive(Debug)]
pub struct IngestReport {
    /// Files written, in ordinal order.
    pub written: Vec<WrittenFile>,
    /// Files left out with their reasons (only with `skip_errors`).
    pub skipped_files: Vec<SkippedFile>,
    /// Variables left out (only with `skip_unsupported`).
    pub skipped_variables: Vec<SkippedVariable>,
    /// Time variables stored undecoded (`--decode cf` only).
    pub undecoded: Vec<UndecodedVariable>,
    /// Choices the mapping made that the user should know (`file: message`).
    pub notes: Vec<String>,
    /// Total bytes of the input files that were written.
    pub input_bytes: u64,
    /// The committed collection.
    pub summary: WriteSummary,
}

/// Reads `path` and maps it with `options` (no writer involved).
pub fn map_file(path: &Path, options: &IngestOptions) -> Result<Mapped, FileError> {
    map_stored(&read_stored(path)?, options)
}

/// Reads the NetCDF file at `path` into its stored form, undecoded.
pub fn read_stored(path: &Path) -> Result<StoredFile, FileError> {
    reader::read_file(path)
}

/// Maps a file's stored form with `options` (no writer involved): what
/// [`map_file`] does after reading, for front ends that hold the stored form
/// in memory (see [`crate::stored`]). Checks shapes first ([`StoredFile::check`]).
pub fn map_stored(stored: &StoredFile, options: &IngestOptions) -> Result<Mapped, FileError> {
    stored.check()?;
    let mut mapped = match options.decode {
        Decode::Cf => cf::map(stored, options.skip_unsupported)?,
        Decode::Raw => raw::map(stored, options.skip_unsupported)?,
    };
    for array in &mut mapped.dataset.arrays {
        if let Some(chunks) = options.chunks.get(&array.name) {
            array.chunk_shape = Some(chunks.clone());
        }
    }
    Ok(mapped)
}

/// Reads and maps the file at `path` (a local path, or a URL fetched
/// through `remotes`) on a blocking thread; returns the outcome and the
/// file's size. Errors only when the blocking task panicked.
pub(crate) async fn map_any(
    path: PathBuf,
    options: Arc<IngestOptions>,
    remotes: Arc<Remotes>,
) -> Result<(Result<Mapped, FileError>, u64), tokio::task::JoinError> {
    let (result, bytes) = on_local_copy(path, remotes, move |p| map_file(p, &options)).await?;
    Ok((result.and_then(|mapped| mapped), bytes))
}

/// One file to ingest, with its dataset name and position.
struct Job {
    index: usize,
    path: PathBuf,
    name: String,
}

/// Builds the collection from `files` (see [`crate::discover`]) and commits it.
///
/// How far an ingest is, as [`ingest_with_progress`] reports it after each file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Progress {
    /// Files done (written, skipped or failed).
    pub done: usize,
    /// Files in all.
    pub total: usize,
    /// Bytes of the files read so far (those being decoded included).
    pub bytes_read: u64,
}

/// Same as [`ingest_with_progress`] without a progress callback.
pub async fn ingest(
    files: &[PathBuf],
    writer: AtlasWriter,
    options: &IngestOptions,
) -> Result<IngestReport, IngestError> {
    ingest_with_progress(files, writer, options, |_| {}).await
}

/// Builds the collection from `files` and commits it with `writer.finish()`.
///
/// Files are read and mapped on `options.jobs` blocking threads, at most that
/// many at a time plus as many finishing (memory stays bounded); datasets are
/// added in sorted path order. On an error (without `skip_errors`) the writer
/// is dropped uncommitted: nothing appears at the destination.
/// `progress` is called after each file with the files done so far and the
/// bytes read.
pub async fn ingest_with_progress(
    files: &[PathBuf],
    writer: AtlasWriter,
    options: &IngestOptions,
    mut progress: impl FnMut(Progress),
) -> Result<IngestReport, IngestError> {
    let files = input_files(files)?;
    let total = files.len();
    let mut skipped: Vec<(usize, SkippedFile)> = Vec::new();

    // Names: duplicates and invalid ones are settled before anything is read.
    let mut by_name: HashMap<String, Vec<(usize, &PathBuf)>> = HashMap::new();
    for (i, path) in files.iter().enumerate() {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        by_name.entry(name).or_default().push((i, path));
    }
    let mut dup_names: Vec<(&String, &Vec<(usize, &PathBuf)>)> =
        by_name.iter().filter(|(_, v)| v.len() > 1).collect();
    dup_names.sort();
    let mut excluded = HashSet::new();
    for (name, entries) in dup_names {
        let paths: Vec<PathBuf> = entries.iter().map(|&(_, p)| p.clone()).collect();
        if !options.skip_errors {
            return Err(IngestError::DuplicateName {
                name: name.clone(),
                paths,
            });
        }
        for &(i, path) in entries {
            excluded.insert(i);
            let others = paths.iter().filter(|p| *p != path).cloned().collect();
            skipped.push((
                i,
                SkippedFile {
                    path: path.clone(),
                    reason: SkipReason::DuplicateName {
                        name: name.clone(),
                        others,
                    },
                },
            ));
        }
    }
    let mut jobs = Vec::new();
    for (i, path) in files.iter().enumerate() {
        if excluded.contains(&i) {
            continue;
        }
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if let Err(e) = atlas::validate_name(&name) {
            if !options.skip_errors {
                return Err(IngestError::InvalidDatasetName {
                    path: path.clone(),
                    reason: e.to_string(),
                });
            }
            skipped.push((
                i,
                SkippedFile {
                    path: path.clone(),
                    reason: SkipReason::InvalidName(e.to_string()),
                },
            ));
            continue;
        }
        jobs.push(Job {
            index: i,
            path: path.clone(),
            name,
        });
    }
    let mut done = skipped.len();
    let mut bytes_read = 0u64;
    let mut report = |done: usize, bytes_read: u64| {
        progress(Progress {
            done,
            total,
            bytes_read,
        })
    };
    if done > 0 {
        report(done, bytes_read);
    }

    let parallel = options.jobs.max(1);
    let shared = Arc::new(options.clone());
    let remotes = Arc::new(Remotes::new(options.storage.clone()));
    let mut mapped = futures::stream::iter(jobs.into_iter().map(|job| {
        let options = Arc::clone(&shared);
        let remotes = Arc::clone(&remotes);
        async move {
            let (result, bytes) = map_any(job.path.clone(), options, remotes).await?;
            Ok::<_, tokio::task::JoinError>((job, result, bytes))
        }
    }))
    .buffered(parallel);

    let mut written: Vec<(usize, WrittenFile, u64)> = Vec::new();
    let mut skipped_vars: Vec<(usize, SkippedVariable)> = Vec::new();
    let mut undecoded: Vec<(usize, UndecodedVariable)> = Vec::new();
    let mut notes: Vec<(usize, String)> = Vec::new();
    let mut finishing: JoinSet<(Job, u64, Result<(), atlas::AtlasError>)> = JoinSet::new();

    let fail = |job: &Job, error: FileError, skipped: &mut Vec<(usize, SkippedFile)>| {
        if options.skip_errors {
            tracing::warn!(path = %job.path.display(), %error, "skipping file");
            skipped.push((
                job.index,
                SkippedFile {
                    path: job.path.clone(),
                    reason: SkipReason::Failed(error),
                },
            ));
            Ok(())
        } else {
            Err(IngestError::File {
                path: job.path.clone(),
                source: error,
            })
        }
    };

    while let Some(joined) = mapped.next().await {
        let (job, result, bytes) = joined.map_err(|e| IngestError::Task {
            reason: e.to_string(),
        })?;
        bytes_read = bytes_read.saturating_add(bytes);
        let outcome = result.and_then(|m| {
            let mut dw = writer.add_dataset(&job.name)?;
            sink::fill_writer(&mut dw, &m.dataset)?;
            Ok((m, dw))
        });
        match outcome {
            Ok((m, dw)) => {
                for s in m.skipped {
                    skipped_vars.push((
                        job.index,
                        SkippedVariable {
                            dataset: job.name.clone(),
                            variable: s.array,
                            dtype: s.dtype,
                        },
                    ));
                }
                for u in m.undecoded {
                    undecoded.push((
                        job.index,
                        UndecodedVariable {
                            dataset: job.name.clone(),
                            variable: u.array,
                            reason: u.reason,
                        },
                    ));
                }
                for n in m.notes {
                    notes.push((job.index, format!("{}: {n}", job.name)));
                }
                finishing.spawn(async move {
                    let r = dw.finish().await;
                    (job, bytes, r)
                });
                while finishing.len() >= parallel {
                    if let Some(res) = finishing.join_next().await {
                        settle(res, &mut written, &mut skipped, &fail)?;
                        done += 1;
                        report(done, bytes_read);
                    }
                }
            }
            Err(e) => {
                fail(&job, e, &mut skipped)?;
                done += 1;
                report(done, bytes_read);
            }
        }
    }
    while let Some(res) = finishing.join_next().await {
        settle(res, &mut written, &mut skipped, &fail)?;
        done += 1;
        report(done, bytes_read);
    }

    let summary = writer.finish().await?;
    written.sort_by_key(|(i, _, _)| *i);
    skipped.sort_by_key(|(i, _)| *i);
    skipped_vars.sort_by_key(|(i, _)| *i);
    undecoded.sort_by_key(|(i, _)| *i);
    notes.sort_by_key(|(i, _)| *i);
    Ok(IngestReport {
        input_bytes: written.iter().map(|(_, _, b)| b).sum(),
        written: written.into_iter().map(|(_, w, _)| w).collect(),
        skipped_files: skipped.into_iter().map(|(_, s)| s).collect(),
        skipped_variables: skipped_vars.into_iter().map(|(_, s)| s).collect(),
        undecoded: undecoded.into_iter().map(|(_, u)| u).collect(),
        notes: notes.into_iter().map(|(_, n)| n).collect(),
        summary,
    })
}

type Finished = Result<(Job, u64, Result<(), atlas::AtlasError>), tokio::task::JoinError>;

fn settle(
    res: Finished,
    written: &mut Vec<(usize, WrittenFile, u64)>,
    skipped: &mut Vec<(usize, SkippedFile)>,
    fail: &impl Fn(&Job, FileError, &mut Vec<(usize, SkippedFile)>) -> Result<(), IngestError>,
) -> Result<(), IngestError> {
    let (job, bytes, result) = res.map_err(|e| IngestError::Task {
        reason: e.to_string(),
    })?;
    match result {
        Ok(()) => {
            written.push((
                job.index,
                WrittenFile {
                    path: job.path.clone(),
                    dataset: job.name.clone(),
                },
                bytes,
            ));
            Ok(())
        }
        Err(e) => fail(&job, FileError::Write(e), skipped),
    }
}

/// The files an ingest reads: sorted, each once; [`IngestError::NoInputs`]
/// when there are none.
pub(crate) fn input_files(files: &[PathBuf]) -> Result<Vec<PathBuf>, IngestError> {
    let mut files = files.to_vec();
    files.sort();
    files.dedup();
    if files.is_empty() {
        return Err(IngestError::NoInputs {
            sources: "the given sources".into(),
        });
    }
    Ok(files)
}
