//! [`DatasetWriter`]: one dataset, buffered locally until it finishes.

use std::sync::Arc;

use atlas_format::{DATASETS_SEGMENT, validate_name};
use atlas_segment::{Attr, Element, SegmentWriter, Value};
use indexmap::IndexMap;
use ndarray::ArrayViewD;
use smol_str::SmolStr;

use super::buffer::{ArrayBuffer, Geometry, TypedBuffer};
use super::state::{SchemaKey, Shared};
use super::variables::{PushJob, Variable, push_blocking, push_ready};
use crate::error::{AtlasError, Result};
use crate::index::DatasetAttributes;

/// One dataset under construction. Owned and `Send`: build many at once on
/// different tasks. Nothing reaches the collection until [`finish`](Self::finish);
/// dropping it or calling [`abort`](Self::abort) leaves no trace (its ordinal
/// slot closes up).
pub struct DatasetWriter {
    name: SmolStr,
    inner: Option<Inner>,
}

struct Inner {
    slot: usize,
    shared: Arc<Shared>,
    arrays: IndexMap<SmolStr, ArrayEntry>,
    attrs: IndexMap<SmolStr, Attr>,
}

struct ArrayEntry {
    buffer: Box<dyn ArrayBuffer>,
    attrs: IndexMap<SmolStr, Attr>,
}

impl std::fmt::Debug for DatasetWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("DatasetWriter");
        d.field("name", &self.name);
        if let Some(inner) = &self.inner {
            d.field("arrays", &inner.arrays.keys().collect::<Vec<_>>());
        }
        d.finish_non_exhaustive()
    }
}

fn closed() -> AtlasError {
    AtlasError::invalid_use("this dataset writer is finished")
}

impl DatasetWriter {
    pub(crate) fn new(name: SmolStr, slot: usize, shared: Arc<Shared>) -> Self {
        Self {
            name,
            inner: Some(Inner {
                slot,
                shared,
                arrays: IndexMap::new(),
                attrs: IndexMap::new(),
            }),
        }
    }

    /// The dataset's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn inner(&mut self) -> Result<&mut Inner> {
        self.inner.as_mut().ok_or_else(closed)
    }

    fn entry(&mut self, array: &str) -> Result<&mut ArrayEntry> {
        let dataset = self.name.to_string();
        self.inner()?
            .arrays
            .get_mut(array)
            .ok_or_else(|| AtlasError::ArrayNotFound {
                dataset: Some(dataset),
                array: array.to_owned(),
            })
    }

    /// Declares array `name` of element type `T`.
    ///
    /// `dimension_names`: one per axis, or none (array-format then names them
    /// `dim0`, `dim1`, …). `chunk_shape`: `None` stores the array as one chunk.
    /// `fill_value`: what unwritten elements read as (binary arrays take none).
    /// Every axis must fit `u32` (array-format's limit) and a chunk extent may
    /// be 0 only on an empty axis.
    ///
    /// # Errors
    /// [`AtlasError::InvalidName`], [`AtlasError::ArrayAlreadyExists`],
    /// [`AtlasError::FillTypeMismatch`] for a fill the element type cannot hold,
    /// [`AtlasError::InvalidRegion`] for a shape, chunk shape or dimension list that does not fit,
    /// [`AtlasError::InvalidUse`] after the writer finished.
    pub fn define_array<T: Element>(
        &mut self,
        name: &str,
        dimension_names: &[&str],
        shape: &[u64],
        chunk_shape: Option<&[u64]>,
        fill_value: Option<T>,
    ) -> Result<()> {
        let fill = fill_value.map(T::to_fill_value);
        self.define_array_with_fill::<T>(name, dimension_names, shape, chunk_shape, fill)
    }

    /// [`define_array`](Self::define_array) with a [`Value`], as a reader
    /// reports it (e.g. to copy an array exactly). The variant must be one that
    /// applies to `T` (`Int`/`UInt`/`Float` for numbers, `Timestamp`/`Int` for
    /// timestamps, `String` for strings).
    ///
    /// # Errors
    /// As [`define_array`](Self::define_array).
    pub fn define_array_with_fill<T: Element>(
        &mut self,
        name: &str,
        dimension_names: &[&str],
        shape: &[u64],
        chunk_shape: Option<&[u64]>,
        fill_value: Option<Value>,
    ) -> Result<()> {
        validate_name(name)?;
        let dataset = self.name.to_string();
        let inner = self.inner()?;
        if inner.arrays.contains_key(name) {
            return Err(AtlasError::ArrayAlreadyExists {
                dataset,
                array: name.to_owned(),
            });
        }
        if let Some(fill) = &fill_value
            && !T::accepts_fill(fill)
        {
            return Err(AtlasError::FillTypeMismatch {
                array: name.to_owned(),
                dtype: T::ATLAS_DTYPE,
                fill: fill.clone(),
            });
        }
        let geometry = Geometry::new(name, dimension_names, shape, chunk_shape)?;
        inner.arrays.insert(
            SmolStr::new(name),
            ArrayEntry {
                buffer: Box::new(TypedBuffer::<T>::new(geometry, fill_value)),
                attrs: IndexMap::new(),
            },
        );
        Ok(())
    }

    /// Writes `data` into array `name` with its first element at `start`.
    ///
    /// Any region inside the array, aligned to chunks or not; a later write
    /// wins where regions overlap. Errors: [`AtlasError::ArrayNotFound`],
    /// [`AtlasError::DTypeMismatch`] for the wrong `T`,
    /// [`AtlasError::InvalidRegion`] for a rank mismatch or a region past the end.
    ///
    /// # Errors
    /// [`AtlasError::ArrayNotFound`], [`AtlasError::DTypeMismatch`] for `T` other than the defined
    /// type, [`AtlasError::InvalidRegion`] for a region outside the array;
    /// [`AtlasError::InvalidUse`] after the writer finished.
    pub fn write_array<T: Element>(
        &mut self,
        name: &str,
        start: &[u64],
        data: ArrayViewD<'_, T>,
    ) -> Result<()> {
        let entry = self.entry(name)?;
        let stored = entry.buffer.dtype();
        if stored != T::ATLAS_DTYPE {
            return Err(AtlasError::DTypeMismatch {
                array: name.to_owned(),
                stored: stored.clone(),
                requested: T::ATLAS_DTYPE,
            });
        }
        let buffer = entry
            .buffer
            .as_any_mut()
            .downcast_mut::<TypedBuffer<T>>()
            .ok_or_else(|| AtlasError::DTypeMismatch {
                array: name.to_owned(),
                stored: stored.clone(),
                requested: T::ATLAS_DTYPE,
            })?;
        buffer.write(name, start, data)
    }

    /// Sets dataset-level attribute `key` (a repeated key keeps its first
    /// position and takes the new value).
    ///
    /// # Errors
    /// [`AtlasError::InvalidUse`] after the writer finished.
    pub fn set_attribute(&mut self, key: &str, value: impl Into<Attr>) -> Result<()> {
        check_key(key)?;
        self.inner()?.attrs.insert(SmolStr::new(key), value.into());
        Ok(())
    }

    /// Sets attribute `key` on array `array` of this dataset.
    ///
    /// # Errors
    /// [`AtlasError::ArrayNotFound`] for an array not defined in this dataset;
    /// [`AtlasError::InvalidUse`] after the writer finished.
    pub fn set_array_attribute(
        &mut self,
        array: &str,
        key: &str,
        value: impl Into<Attr>,
    ) -> Result<()> {
        check_key(key)?;
        self.entry(array)?
            .attrs
            .insert(SmolStr::new(key), value.into());
        Ok(())
    }

    /// Bytes of element data this writer holds in memory until it finishes.
    pub fn buffered_bytes(&self) -> u64 {
        self.inner.as_ref().map_or(0, |inner| {
            inner
                .arrays
                .values()
                .map(|e| e.buffer.buffered_bytes())
                .sum()
        })
    }

    /// Adds the dataset to the collection: each array goes into its variable's
    /// segment writer under that variable's lock only. On error the dataset is
    /// not in the collection (the others are unaffected, unless the error says
    /// the collection writer is unusable).
    ///
    /// Pushes that are cheap run on the calling task; a push that would
    /// compress a block, or wait for a variable another dataset holds, runs on
    /// a blocking thread.
    ///
    /// # Errors
    /// [`AtlasError::InvalidRegion`] for an array with elements never written
    /// and no fill value, [`AtlasError::InvalidUse`] once the collection writer
    /// is finishing or finished, [`AtlasError::ContainerWrite`] or
    /// [`AtlasError::Io`] when a block could not be written.
    ///
    /// # Cancel safety
    /// A dataset is pushed whole or not at all. Dropping the future before the
    /// push starts abandons the dataset (as [`abort`](Self::abort) does); once
    /// the push has moved to a blocking thread it runs to the end and records
    /// its own outcome, so the dataset is in the collection even though the
    /// caller never saw `Ok`.
    pub async fn finish(mut self) -> Result<()> {
        let inner = self.inner.take().ok_or_else(closed)?;
        let name = self.name.clone();
        if let Err(e) = prepare(&inner) {
            inner.shared.abandon(inner.slot);
            return Err(e);
        }
        if let Err(e) = inner.shared.begin_finish(inner.slot) {
            inner.shared.abandon(inner.slot);
            return Err(e);
        }
        let mut push = Push::new(name, inner);
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            // No runtime to hand blocking work to: do it all here.
            let result = push.run_blocking();
            return push.complete(result);
        };
        if let Err(e) = push.run_ready() {
            return push.complete(Err(e));
        }
        if push.jobs.is_empty() {
            return push.complete(Ok(()));
        }
        // The rest is CPU work or lock waits: off the async workers. The task
        // records its own outcome, so a cancelled `finish` cannot leave the
        // slot half-done.
        let task = move || {
            let result = push.run_blocking();
            push.complete(result)
        };
        handle
            .spawn_blocking(task)
            .await
            .map_err(|e| AtlasError::corrupt(format!("dataset push task failed: {e}")))?
    }

    /// Abandons the dataset: it will not appear, and later ordinals close up.
    /// Same as dropping the writer.
    pub fn abort(self) {}
}

impl Drop for DatasetWriter {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take() {
            inner.shared.abandon(inner.slot);
        }
    }
}

fn check_key(key: &str) -> Result<()> {
    if key.is_empty() {
        return Err(AtlasError::InvalidName {
            name: String::new(),
            reason: "an attribute key cannot be empty".into(),
        });
    }
    Ok(())
}

/// Refuses, before anything is pushed, what array-format cannot store.
fn prepare(inner: &Inner) -> Result<()> {
    for (name, entry) in &inner.arrays {
        entry.buffer.check_encodable(name)?;
    }
    Ok(())
}

enum Job {
    Array(SmolStr, ArrayEntry),
    Attributes(IndexMap<SmolStr, Attr>),
}

/// One job of one dataset: what to push, and into which dataset's name.
struct DatasetJob {
    dataset: SmolStr,
    job: Job,
}

impl PushJob for DatasetJob {
    fn chunk_bytes(&self) -> Vec<u64> {
        match &self.job {
            Job::Array(_, entry) => entry.buffer.chunk_bytes(),
            Job::Attributes(_) => Vec::new(),
        }
    }

    fn run(&self, writer: &mut SegmentWriter) -> Result<()> {
        run(writer, &self.dataset, &self.job)
    }
}

/// A dataset's push in progress: the jobs left, and the schema to record.
/// Dropped before [`Push::complete`] (a panic, a runtime shutting down) it
/// records a failure, which poisons the collection: part of it may be pushed.
struct Push {
    shared: Arc<Shared>,
    slot: usize,
    key: Option<SchemaKey>,
    /// The dataset attributes, kept for the dataset index if one is written.
    attributes: Option<DatasetAttributes>,
    jobs: Vec<(Arc<Variable>, DatasetJob)>,
}

impl Push {
    fn new(dataset: SmolStr, inner: Inner) -> Self {
        let Inner {
            slot,
            shared,
            arrays,
            attrs,
        } = inner;
        let key = SchemaKey {
            arrays: arrays
                .iter()
                .map(|(name, e)| {
                    (
                        name.clone(),
                        e.buffer.dtype(),
                        e.attrs
                            .iter()
                            .map(|(k, v)| (k.clone(), v.dtype()))
                            .collect(),
                    )
                })
                .collect(),
            attrs: attrs.iter().map(|(k, v)| (k.clone(), v.dtype())).collect(),
        };
        let attributes = (shared.config.dataset_index && !attrs.is_empty())
            .then(|| attrs.iter().map(|(k, v)| (k.clone(), v.clone())).collect());
        let mut jobs: Vec<DatasetJob> = arrays
            .into_iter()
            .map(|(name, entry)| DatasetJob {
                dataset: dataset.clone(),
                job: Job::Array(name, entry),
            })
            .collect();
        if !attrs.is_empty() {
            jobs.push(DatasetJob {
                dataset,
                job: Job::Attributes(attrs),
            });
        }
        let variables = shared
            .variables
            .get_or_create(jobs.iter().map(|j| match &j.job {
                Job::Array(name, _) => name.as_str(),
                Job::Attributes(_) => DATASETS_SEGMENT,
            }));
        Self {
            slot,
            key: Some(key),
            attributes,
            jobs: variables.into_iter().zip(jobs).collect(),
            shared,
        }
    }

    fn run_ready(&mut self) -> Result<()> {
        let jobs = std::mem::take(&mut self.jobs);
        self.jobs = push_ready(&self.shared.config, jobs)?;
        Ok(())
    }

    fn run_blocking(&mut self) -> Result<()> {
        let jobs = std::mem::take(&mut self.jobs);
        push_blocking(&self.shared.config, jobs)
    }

    fn complete(mut self, result: Result<()>) -> Result<()> {
        let key = self.key.take();
        match (result, key) {
            (Ok(()), Some(key)) => {
                let attributes = self.attributes.take();
                self.shared.end_finish(self.slot, Ok((key, attributes)));
                Ok(())
            }
            (Err(e), _) => {
                self.shared.end_finish(
                    self.slot,
                    Err(format!("a dataset failed half-way through its push: {e}")),
                );
                Err(e)
            }
            (Ok(()), None) => Err(AtlasError::corrupt("a dataset push completed twice")),
        }
    }
}

impl Drop for Push {
    fn drop(&mut self) {
        if self.key.take().is_some() {
            self.shared
                .end_finish(self.slot, Err("a dataset push was interrupted".to_owned()));
        }
    }
}

fn run(writer: &mut SegmentWriter, dataset: &str, job: &Job) -> Result<()> {
    let attrs = match job {
        Job::Array(_, entry) => {
            entry.buffer.push(writer, dataset)?;
            &entry.attrs
        }
        Job::Attributes(attrs) => {
            // A rank-0 UInt8 array, never written, that only carries attributes.
            writer.define_array::<u8>(dataset, Vec::new(), &[], None, None)?;
            attrs
        }
    };
    for (key, value) in attrs {
        writer.set_attribute(dataset, key, value)?;
    }
    Ok(())
}
