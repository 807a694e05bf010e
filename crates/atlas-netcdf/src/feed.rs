//! Datasets handed over in memory, one at a time, into one collection: the
//! mapping and sink of [`crate::ingest()`] for front ends that hold the stored
//! form themselves (the Python package's `atlasds.write`, which builds it from
//! `xarray.Dataset`s) instead of NetCDF files.
//!
//! Each [`Feed::add`] maps its dataset and hands it to the writer on the
//! caller's task; the compression of finished datasets runs on spawned tasks,
//! at most `jobs` at a time, so memory stays bounded. Ordinals follow the
//! order of the `add` calls. Nothing is visible at the destination before
//! [`Feed::finish`]; an error, or dropping the feed, leaves it empty.

use atlas::{AtlasError, AtlasWriter, WriteSummary};
use tokio::task::JoinSet;

use crate::error::{FileError, IngestError};
use crate::ingest::{IngestOptions, SkippedVariable, UndecodedVariable, map_stored};
use crate::sink;
use crate::stored::StoredFile;

/// What a feed wrote.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct FeedReport {
    /// Dataset names in ordinal order.
    pub written: Vec<String>,
    /// Variables left out (only with `skip_unsupported`).
    pub skipped_variables: Vec<SkippedVariable>,
    /// Time variables stored undecoded (`--decode cf` only).
    pub undecoded: Vec<UndecodedVariable>,
    /// Choices the mapping made that the user should know (`dataset: message`).
    pub notes: Vec<String>,
    /// The committed collection.
    pub summary: WriteSummary,
}

/// A collection being built from stored forms held in memory.
pub struct Feed {
    writer: AtlasWriter,
    options: IngestOptions,
    finishing: JoinSet<(usize, String, Result<(), AtlasError>)>,
    added: usize,
    written: Vec<(usize, String)>,
    skipped_variables: Vec<SkippedVariable>,
    undecoded: Vec<UndecodedVariable>,
    notes: Vec<String>,
}

impl std::fmt::Debug for Feed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Feed")
            .field("options", &self.options)
            .field("added", &self.added)
            .field("finishing", &self.finishing.len())
            .finish_non_exhaustive()
    }
}

impl Feed {
    /// A feed into `writer`, mapping with `options` (`skip_errors` does not
    /// apply: the caller sees each dataset's error and decides).
    pub fn new(writer: AtlasWriter, options: IngestOptions) -> Self {
        Self {
            writer,
            options,
            finishing: JoinSet::new(),
            added: 0,
            written: Vec::new(),
            skipped_variables: Vec::new(),
            undecoded: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Maps `stored` and adds it as dataset `name` (the next ordinal).
    ///
    /// Errors: [`IngestError::Dataset`] when the data does not fit its shape,
    /// the mapping refuses it, or the writer refuses the name or an array (the
    /// dataset is then left out; the feed stays usable). Waits for the oldest
    /// finishing dataset when `jobs` are already compressing.
    pub async fn add(&mut self, name: &str, stored: &StoredFile) -> Result<(), IngestError> {
        let fail = |source: FileError| IngestError::Dataset {
            name: name.to_owned(),
            source,
        };
        let mapped = map_stored(stored, &self.options).map_err(fail)?;
        let mut dataset = self
            .writer
            .add_dataset(name)
            .map_err(|e| fail(FileError::Write(e)))?;
        sink::fill_writer(&mut dataset, &mapped.dataset).map_err(fail)?;
        self.skipped_variables
            .extend(mapped.skipped.into_iter().map(|s| SkippedVariable {
                dataset: name.to_owned(),
                variable: s.array,
                dtype: s.dtype,
            }));
        self.undecoded
            .extend(mapped.undecoded.into_iter().map(|u| UndecodedVariable {
                dataset: name.to_owned(),
                variable: u.array,
                reason: u.reason,
            }));
        self.notes
            .extend(mapped.notes.into_iter().map(|n| format!("{name}: {n}")));
        let index = self.added;
        self.added += 1;
        let owned = name.to_owned();
        self.finishing.spawn(async move {
            let result = dataset.finish().await;
            (index, owned, result)
        });
        while self.finishing.len() >= self.options.jobs.max(1) {
            self.settle_one().await?;
        }
        Ok(())
    }

    async fn settle_one(&mut self) -> Result<(), IngestError> {
        let Some(joined) = self.finishing.join_next().await else {
            return Ok(());
        };
        let (index, name, result) = joined.map_err(|e| IngestError::Task {
            reason: e.to_string(),
        })?;
        match result {
            Ok(()) => {
                self.written.push((index, name));
                Ok(())
            }
            Err(e) => Err(IngestError::Dataset {
                name,
                source: FileError::Write(e),
            }),
        }
    }

    /// Waits for every dataset and commits the collection.
    ///
    /// Errors: [`IngestError::Dataset`] for a dataset that failed to finish,
    /// [`IngestError::Writer`] when committing fails; nothing is visible then.
    pub async fn finish(mut self) -> Result<FeedReport, IngestError> {
        while !self.finishing.is_empty() {
            self.settle_one().await?;
        }
        let summary = self.writer.finish().await?;
        self.written.sort_by_key(|(i, _)| *i);
        Ok(FeedReport {
            written: self.written.into_iter().map(|(_, n)| n).collect(),
            skipped_variables: self.skipped_variables,
            undecoded: self.undecoded,
            notes: self.notes,
            summary,
        })
    }
}
