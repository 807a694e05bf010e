//! The same API without `async`: for scripts, tests, and bindings (Python)
//! that have no async runtime of their own.
//!
//! Every call runs on one multi-threaded tokio runtime that this module starts
//! on first use and keeps for the life of the process, so handles are cheap and
//! concurrent reads from many threads share its workers. Calling a blocking
//! method from inside an async task is refused with
//! [`AtlasError::InvalidUse`] (it would stall the caller's runtime): use the
//! async API there.
//!
//! ```
//! use atlas::blocking::{Atlas, AtlasWriter};
//! use atlas::{StorageOptions, WriterConfig};
//!
//! # fn main() -> atlas::Result<()> {
//! let dir = tempfile::tempdir().unwrap();
//! let location = dir.path().to_str().unwrap();
//! let writer = AtlasWriter::create_url(location, &StorageOptions::default(), WriterConfig::default())?;
//! let mut ds = writer.add_dataset("R6901234_001.nc")?;
//! ds.define_array::<f32>("TEMP", &["N_LEVELS"], &[3], None, Some(99999.0))?;
//! ds.write_array("TEMP", &[0], ndarray::arr1(&[11.2f32, 11.1, 10.9]).into_dyn().view())?;
//! ds.finish()?;
//! writer.finish()?;
//!
//! let atlas = Atlas::open_url(location, &StorageOptions::default())?;
//! let temp = atlas.dataset("R6901234_001.nc")?.read_array::<f32>("TEMP", atlas::Region::all())?;
//! assert_eq!(temp.len(), 3);
//! # Ok(())
//! # }
//! ```

use std::future::Future;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use atlas_format::DatasetSchema;
use ndarray::{ArrayD, ArrayViewD};
use opendal::Operator;

use crate::error::{AtlasError, Result};
use crate::{
    AnyArray, ArrayLayout, ArrayStats, Attr, DatasetStats, DeleteOutcome, Element, FillValue,
    OpenOptions, Region, StorageOptions, VariableInfo, VerifyOptions, VerifyReport, WriteSummary,
    WriterConfig,
};

/// The runtime every blocking call runs on, started on first use.
fn runtime() -> Result<&'static tokio::runtime::Runtime> {
    static RUNTIME: OnceLock<std::result::Result<tokio::runtime::Runtime, String>> =
        OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .thread_name("atlas-blocking")
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| AtlasError::invalid_use(format!("cannot start the blocking runtime: {e}")))
}

/// Runs `fut` to completion on the module's runtime.
fn block_on<F: Future>(fut: F) -> Result<F::Output> {
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(AtlasError::invalid_use(
            "a blocking atlas call inside an async runtime would stall it; use the async API there",
        ));
    }
    Ok(runtime()?.block_on(fut))
}

/// An opened collection (see [`crate::Atlas`]); clone it freely, share it across threads.
#[derive(Debug, Clone)]
pub struct Atlas {
    inner: Arc<crate::Atlas>,
}

impl Atlas {
    /// [`crate::Atlas::open_url`], blocking.
    pub fn open_url(location: &str, storage: &StorageOptions) -> Result<Atlas> {
        Self::wrap(block_on(crate::Atlas::open_url(location, storage))?)
    }

    /// [`crate::Atlas::open_url_with`], blocking.
    pub fn open_url_with(
        location: &str,
        storage: &StorageOptions,
        options: OpenOptions,
    ) -> Result<Atlas> {
        Self::wrap(block_on(crate::Atlas::open_url_with(
            location, storage, options,
        ))?)
    }

    /// [`crate::Atlas::open_path`], blocking.
    pub fn open_path(path: impl AsRef<Path>) -> Result<Atlas> {
        Self::wrap(block_on(crate::Atlas::open_path(path))?)
    }

    /// [`crate::Atlas::open_with`], blocking.
    pub fn open_with(op: Operator, prefix: &str, options: OpenOptions) -> Result<Atlas> {
        Self::wrap(block_on(crate::Atlas::open_with(op, prefix, options))?)
    }

    fn wrap(opened: Result<crate::Atlas>) -> Result<Atlas> {
        Ok(Atlas {
            inner: Arc::new(opened?),
        })
    }

    /// The async handle, for its catalogue calls (they never block) or async code.
    pub fn as_async(&self) -> &crate::Atlas {
        &self.inner
    }

    /// Names of the live datasets, in ordinal order (no request).
    pub fn list_datasets(&self) -> Vec<String> {
        self.inner
            .list_datasets()
            .into_iter()
            .map(str::to_owned)
            .collect()
    }

    /// Datasets not hidden by the deletion mask (no request).
    pub fn dataset_count(&self) -> usize {
        self.inner.dataset_count()
    }

    /// Distinct array names, without `_datasets` (no request).
    pub fn list_arrays(&self) -> Vec<String> {
        self.inner
            .list_arrays()
            .into_iter()
            .map(str::to_owned)
            .collect()
    }

    /// Every segment with its byte range (no request).
    pub fn variables(&self) -> Vec<VariableInfo> {
        self.inner.variables()
    }

    /// The live dataset called `name` (no request); `DatasetNotFound` otherwise.
    pub fn dataset(&self, name: &str) -> Result<Dataset> {
        let view = self.inner.dataset(name)?;
        Ok(Dataset {
            atlas: self.clone(),
            name: view.name().to_owned(),
            ordinal: view.ordinal(),
        })
    }

    /// Handles of the live datasets, in ordinal order (no request).
    pub fn datasets(&self) -> Vec<Dataset> {
        self.inner
            .datasets()
            .map(|view| Dataset {
                atlas: self.clone(),
                name: view.name().to_owned(),
                ordinal: view.ordinal(),
            })
            .collect()
    }

    /// [`crate::Atlas::array_stats`], blocking.
    pub fn array_stats(&self, array: &str) -> Result<Option<ArrayStats>> {
        block_on(self.inner.array_stats(array))?
    }

    /// [`crate::Atlas::array_stats_by_dataset`], blocking.
    pub fn array_stats_by_dataset(&self, array: &str) -> Result<Vec<DatasetStats>> {
        block_on(self.inner.array_stats_by_dataset(array))?
    }

    /// [`crate::Atlas::attributes_by_dataset`], blocking.
    pub fn attributes_by_dataset(
        &self,
        array: Option<&str>,
        key: &str,
    ) -> Result<Vec<(String, Attr)>> {
        block_on(self.inner.attributes_by_dataset(array, key))?
    }

    /// [`crate::Atlas::delete_datasets`], blocking.
    pub fn delete_datasets(&self, names: &[&str]) -> Result<DeleteOutcome> {
        block_on(self.inner.delete_datasets(names))?
    }

    /// [`crate::Atlas::verify`], blocking.
    pub fn verify(&self, options: &VerifyOptions) -> Result<VerifyReport> {
        block_on(self.inner.verify(options))
    }
}

/// One live dataset of a blocking [`Atlas`]: owned, `Send + Sync`, cheap to clone.
#[derive(Debug, Clone)]
pub struct Dataset {
    atlas: Atlas,
    name: String,
    ordinal: u32,
}

impl Dataset {
    /// The dataset's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The dataset's ordinal.
    pub fn ordinal(&self) -> u32 {
        self.ordinal
    }

    /// Its declaration: arrays with their dtypes, attribute keys (no request).
    pub fn schema(&self) -> Result<DatasetSchema> {
        Ok(self.atlas.inner.dataset(&self.name)?.to_owned_schema())
    }

    /// The async handle of this dataset; `DatasetNotFound` once it is deleted.
    fn view(&self) -> Result<crate::Dataset> {
        self.atlas.inner.dataset(&self.name)
    }

    /// [`crate::Dataset::array_layout`], blocking.
    pub fn array_layout(&self, array: &str) -> Result<ArrayLayout> {
        block_on(self.view()?.array_layout(array))?
    }

    /// [`crate::Dataset::array_stats`], blocking.
    pub fn array_stats(&self, array: &str) -> Result<Option<ArrayStats>> {
        block_on(self.view()?.array_stats(array))?
    }

    /// [`crate::Dataset::attributes`], blocking.
    pub fn attributes(&self) -> Result<Vec<(String, Attr)>> {
        block_on(self.view()?.attributes())?
    }

    /// [`crate::Dataset::array_attributes`], blocking.
    pub fn array_attributes(&self, array: &str) -> Result<Vec<(String, Attr)>> {
        block_on(self.view()?.array_attributes(array))?
    }

    /// [`crate::Dataset::read_array`], blocking.
    pub fn read_array<T: Element>(
        &self,
        array: &str,
        region: impl Into<Region>,
    ) -> Result<ArrayD<T>> {
        block_on(self.view()?.read_array::<T>(array, region))?
    }

    /// [`crate::Dataset::read_any`], blocking.
    pub fn read_any(&self, array: &str, region: impl Into<Region>) -> Result<AnyArray> {
        block_on(self.view()?.read_any(array, region))?
    }
}

/// Builds a collection (see [`crate::AtlasWriter`]); nothing opens at the
/// destination until [`AtlasWriter::finish`].
#[derive(Debug)]
pub struct AtlasWriter {
    inner: crate::AtlasWriter,
}

impl AtlasWriter {
    /// [`crate::AtlasWriter::create_url`], blocking.
    pub fn create_url(
        location: &str,
        storage: &StorageOptions,
        config: WriterConfig,
    ) -> Result<AtlasWriter> {
        let inner = block_on(crate::AtlasWriter::create_url(location, storage, config))??;
        Ok(AtlasWriter { inner })
    }

    /// [`crate::AtlasWriter::create`], blocking.
    pub fn create(op: Operator, prefix: &str, config: WriterConfig) -> Result<AtlasWriter> {
        let inner = block_on(crate::AtlasWriter::create(op, prefix, config))??;
        Ok(AtlasWriter { inner })
    }

    /// Adds a dataset; its ordinal is its position among the `add_dataset` calls.
    pub fn add_dataset(&self, name: &str) -> Result<DatasetWriter> {
        Ok(DatasetWriter {
            inner: self.inner.add_dataset(name)?,
        })
    }

    /// Commits the collection: the only point at which it becomes visible.
    pub fn finish(self) -> Result<WriteSummary> {
        block_on(self.inner.finish())?
    }
}

/// One dataset under construction (see [`crate::DatasetWriter`]).
#[derive(Debug)]
pub struct DatasetWriter {
    inner: crate::DatasetWriter,
}

impl DatasetWriter {
    /// The dataset's name.
    pub fn name(&self) -> &str {
        self.inner.name()
    }

    /// [`crate::DatasetWriter::define_array`].
    pub fn define_array<T: Element>(
        &mut self,
        name: &str,
        dimension_names: &[&str],
        shape: &[u64],
        chunk_shape: Option<&[u64]>,
        fill_value: Option<T>,
    ) -> Result<()> {
        self.inner
            .define_array(name, dimension_names, shape, chunk_shape, fill_value)
    }

    /// [`crate::DatasetWriter::define_array_with_fill`].
    pub fn define_array_with_fill<T: Element>(
        &mut self,
        name: &str,
        dimension_names: &[&str],
        shape: &[u64],
        chunk_shape: Option<&[u64]>,
        fill_value: Option<FillValue>,
    ) -> Result<()> {
        self.inner.define_array_with_fill::<T>(
            name,
            dimension_names,
            shape,
            chunk_shape,
            fill_value,
        )
    }

    /// [`crate::DatasetWriter::write_array`].
    pub fn write_array<T: Element>(
        &mut self,
        name: &str,
        start: &[u64],
        data: ArrayViewD<'_, T>,
    ) -> Result<()> {
        self.inner.write_array(name, start, data)
    }

    /// [`crate::DatasetWriter::set_attribute`].
    pub fn set_attribute(&mut self, key: &str, value: impl Into<Attr>) -> Result<()> {
        self.inner.set_attribute(key, value)
    }

    /// [`crate::DatasetWriter::set_array_attribute`].
    pub fn set_array_attribute(
        &mut self,
        array: &str,
        key: &str,
        value: impl Into<Attr>,
    ) -> Result<()> {
        self.inner.set_array_attribute(array, key, value)
    }

    /// [`crate::DatasetWriter::finish`], blocking.
    pub fn finish(self) -> Result<()> {
        block_on(self.inner.finish())?
    }

    /// [`crate::DatasetWriter::abort`]: leaves no trace.
    pub fn abort(self) {
        self.inner.abort();
    }
}
