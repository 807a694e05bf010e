//! [`SegmentWriter`]: one segment built in memory (blocks spill to a temp
//! file), then appended to the container through a [`ContainerSink`].

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use array_format::ArrayElement;
use atlas_format::{Codec, DEFAULT_ZSTD_LEVEL};
use atlas_io::{IoError, IoErrorKind};
use bytes::Bytes;
use ndarray::ArrayViewD;
use object_store::ObjectStore;

use crate::error::SegmentError;
use crate::footer::digest::SegmentDigest;
use crate::types::attr::Attr;
use crate::types::element::{Element, sealed::Sealed};
use crate::types::value::{Value, dtype_from_stored, fill_to_stored};
use crate::write::codec::block_codec;
use crate::write::pack::{Pack, PackError};
use crate::write::sink::{SinkStore, WrittenSegment};
use crate::write::spool::{SpoolStore, SpooledSegment};

/// Raw bytes packed into one block before it is compressed, by default (8 MiB).
pub const DEFAULT_BLOCK_TARGET_SIZE: usize = array_format::DEFAULT_BLOCK_TARGET_SIZE;

/// How a [`SegmentWriter`] compresses its blocks.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct WriteOptions {
    /// Block compression.
    pub codec: Codec,
    /// zstd level (ignored for other codecs).
    pub zstd_level: i32,
    /// Raw bytes packed into one block before it is compressed.
    pub block_target_size: usize,
    /// Compress large zstd blocks on several threads (same frames; default true).
    pub parallel_zstd: bool,
    /// Return the digest of every array when the segment is finished, what
    /// a dataset index is built from (default true); without, the digest
    /// returned holds the blocks and no array, and the commit does less.
    pub digests: bool,
}

impl Default for WriteOptions {
    /// zstd at [`DEFAULT_ZSTD_LEVEL`], 8 MiB blocks, multi-threaded for large blocks.
    fn default() -> Self {
        Self {
            codec: Codec::Zstd,
            zstd_level: DEFAULT_ZSTD_LEVEL,
            block_target_size: DEFAULT_BLOCK_TARGET_SIZE,
            parallel_zstd: true,
            digests: true,
        }
    }
}

impl WriteOptions {
    /// Sets whether the finished segment's digest holds its arrays.
    pub fn digests(mut self, keep: bool) -> Self {
        self.digests = keep;
        self
    }

    /// Sets the block codec.
    pub fn codec(mut self, codec: Codec) -> Self {
        self.codec = codec;
        self
    }

    /// Sets the zstd level.
    pub fn zstd_level(mut self, level: i32) -> Self {
        self.zstd_level = level;
        self
    }

    /// Sets the block target size in bytes.
    pub fn block_target_size(mut self, bytes: usize) -> Self {
        self.block_target_size = bytes;
        self
    }

    /// Whether large zstd blocks use several threads.
    pub fn parallel_zstd(mut self, on: bool) -> Self {
        self.parallel_zstd = on;
        self
    }
}

/// The streaming writer of one container, shown to segment writers as a
/// place to append segments; the caller writes its own bytes between them.
#[derive(Clone)]
pub struct ContainerSink {
    inner: SinkStore,
    next: Arc<AtomicU64>,
}

impl std::fmt::Debug for ContainerSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContainerSink")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl ContainerSink {
    /// A sink appending to `writer`, the writer of object `container`, at position 0.
    pub fn new(writer: opendal::Writer, container: impl Into<String>) -> Self {
        Self {
            inner: SinkStore::new(writer, container),
            next: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Appends bytes of the caller's own (header, footer, trailer); returns
    /// the offset they landed at. Refused while a segment is being written.
    pub async fn write_raw(&self, bytes: Bytes) -> Result<u64, SegmentError> {
        Ok(self.inner.write_raw(bytes).await?)
    }

    /// Bytes accepted so far.
    pub async fn position(&self) -> u64 {
        self.inner.position().await
    }

    /// Closes the container writer, making the object visible.
    pub async fn close(&self) -> Result<(), SegmentError> {
        self.inner.close().await?;
        Ok(())
    }

    /// Aborts the container upload: nothing becomes visible (where the backend allows).
    pub async fn abort(&self) -> Result<(), SegmentError> {
        Ok(self.inner.abort().await?)
    }

    /// The sink as the `ObjectStore` segments are uploaded through.
    pub(crate) fn store(&self) -> Arc<dyn ObjectStore> {
        Arc::new(self.inner.clone())
    }

    /// A path no segment of this sink has used yet.
    pub(crate) fn next_path(&self) -> object_store::path::Path {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        object_store::path::Path::from(format!("segment-{n}"))
    }

    /// Where the segment uploaded under `path` landed, once complete.
    pub(crate) fn segment(&self, path: &object_store::path::Path) -> Option<WrittenSegment> {
        self.inner.segment(path)
    }
}

/// One segment under construction: arrays defined, written and given
/// attributes, then appended to a container with [`SegmentWriter::finish`].
/// Each write is one whole chunk; blocks spill to a temporary file as they
/// fill. The bytes are array-format's, built without its writer (`pack`).
pub struct SegmentWriter {
    name: String,
    inner: Pack,
}

impl std::fmt::Debug for SegmentWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SegmentWriter")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl SegmentWriter {
    /// A writer for the segment called `name` (used in errors).
    pub fn new(name: &str, options: &WriteOptions) -> Result<Self, SegmentError> {
        Ok(Self {
            name: name.to_owned(),
            inner: Pack::new(
                block_codec(options),
                options.block_target_size,
                options.digests,
            ),
        })
    }

    /// The segment's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn refused(&self, array: &str, e: PackError) -> SegmentError {
        let array = array.to_owned();
        match e {
            PackError::Unknown => SegmentError::InvalidRegion {
                array,
                what: format!("not defined in segment {:?}", self.name),
            },
            PackError::Exists => SegmentError::InvalidRegion {
                array,
                what: format!("already defined in segment {:?}", self.name),
            },
            PackError::DType(stored, requested) => SegmentError::DTypeMismatch {
                array,
                stored: dtype_from_stored(&stored),
                requested: dtype_from_stored(&requested),
            },
            PackError::Region(what) => SegmentError::InvalidRegion { array, what },
            PackError::Io(kind, what) => SegmentError::Io(IoError::new(
                kind,
                "write",
                "segment",
                format!("segment {:?}, array {array:?}: {what}", self.name),
            )),
        }
    }

    /// Declares array `array` of element type `T`. `dimension_names`: one per
    /// axis or none; `chunk_shape`: `None` stores the array as one chunk.
    pub fn define_array<T: Element>(
        &mut self,
        array: &str,
        dimension_names: Vec<String>,
        shape: &[u64],
        chunk_shape: Option<&[u64]>,
        fill: Option<&Value>,
    ) -> Result<(), SegmentError> {
        let dtype = <<T as Sealed>::Stored as ArrayElement>::DTYPE;
        self.inner
            .define(
                array,
                dtype,
                dimension_names,
                shape,
                chunk_shape,
                fill.and_then(fill_to_stored),
            )
            .map_err(|e| self.refused(array, e))
    }

    /// Writes `data`, one whole chunk of `array` (clipped at the array's
    /// edge), with its first element at `origin`.
    pub fn write_array<T: Element>(
        &mut self,
        array: &str,
        origin: &[u64],
        data: ArrayViewD<'_, T>,
    ) -> Result<(), SegmentError> {
        self.inner
            .write(array, origin, data)
            .map_err(|e| self.refused(array, e))
    }

    /// Sets attribute `key` of `array`.
    pub fn set_attribute(
        &mut self,
        array: &str,
        key: &str,
        value: &Attr,
    ) -> Result<(), SegmentError> {
        self.inner
            .set_attribute(array, key, value.to_stored())
            .map_err(|e| self.refused(array, e))
    }

    /// Appends the finished segment to `sink`; returns where it landed and
    /// the digest of its arrays (what [`crate::ContainerSegments::digest`]
    /// would read off its footer). Nothing is read back.
    pub async fn finish(
        self,
        sink: &ContainerSink,
    ) -> Result<(WrittenSegment, SegmentDigest), SegmentError> {
        let path = sink.next_path();
        let name = self.name;
        let packed = match self.inner.finish(sink.store(), path.clone()).await {
            Ok(packed) => packed,
            Err(PackError::Io(kind, what)) => return Err(finish_io(&name, kind, what)),
            Err(other) => return Err(SegmentError::corrupt(&name, None, format!("{other:?}"))),
        };
        let written = sink.inner.segment(&path).ok_or_else(|| {
            SegmentError::corrupt(&name, None, "the sink did not record the segment")
        })?;
        Ok((written, digest_of_packed(&name, packed)))
    }

    /// Finishes the segment (its footer built and serialised, the CPU-heavy
    /// part of a commit) into temporary storage rather than a container:
    /// segments can then be finished at the same time and appended in order
    /// with [`SpooledSegment::append_to`], giving the same bytes as
    /// [`SegmentWriter::finish`]. See [`crate::write::spool`].
    pub async fn finish_spooled(self) -> Result<SpooledSegment, SegmentError> {
        let spool = SpoolStore::default();
        let store: Arc<dyn ObjectStore> = Arc::new(spool.clone());
        let name = self.name;
        let path = object_store::path::Path::from("segment");
        let packed = match self.inner.finish(store, path).await {
            Ok(packed) => packed,
            Err(PackError::Io(kind, what)) => return Err(spool_failed(&name, kind, what)),
            Err(other) => return Err(SegmentError::corrupt(&name, None, format!("{other:?}"))),
        };
        let digest = digest_of_packed(&name, packed);
        spool
            .take(&name, digest)
            .ok_or_else(|| SegmentError::corrupt(&name, None, "finishing wrote no segment"))
    }

    /// The finished segment's bytes, in memory (for tests and tools).
    pub async fn finish_to_bytes(self) -> Result<Bytes, SegmentError> {
        let op = opendal::Operator::new(opendal::services::Memory::default())
            .map_err(|e| IoError::from_opendal(e, "open", "memory"))?;
        let writer = op
            .writer("segment")
            .await
            .map_err(|e| IoError::from_opendal(e, "write", "segment"))?;
        let sink = ContainerSink::new(writer, "segment");
        self.finish(&sink).await?;
        sink.close().await?;
        let bytes = op
            .read("segment")
            .await
            .map_err(|e| IoError::from_opendal(e, "read", "segment"))?;
        Ok(bytes.to_bytes())
    }
}

fn spool_failed(name: &str, kind: IoErrorKind, msg: String) -> SegmentError {
    SegmentError::Io(IoError::new(
        kind,
        "write",
        "segment spool",
        format!("segment {name:?}: {msg}"),
    ))
}

pub(crate) fn finish_io(name: &str, kind: IoErrorKind, msg: String) -> SegmentError {
    SegmentError::Io(IoError::new(
        kind,
        "write",
        atlas_format::CONTAINER_FILE,
        format!("segment {name:?}: {msg}"),
    ))
}

/// The digest of a segment just packed: what its footer would read back as.
fn digest_of_packed(name: &str, packed: crate::write::pack::Packed) -> SegmentDigest {
    SegmentDigest::new(
        name,
        packed.arrays,
        HashMap::new(),
        packed.blocks,
        packed.data_end,
    )
}
