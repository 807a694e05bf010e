//! How a collection is written: block codec, zstd level, block size.

use atlas_format::Codec;
use atlas_segment::WriteOptions;

use crate::error::{AtlasError, Result};
use crate::location::StorageOptions;

/// Options for an [`AtlasWriter`](crate::AtlasWriter).
///
/// The footer records `codec` for information; each block names its own codec,
/// so readers need none of this.
///
/// Build it from [`WriterConfig::default`] and the setters
/// (`WriterConfig::default().codec(Codec::Lz4)`), so new options can be added
/// without breaking callers.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct WriterConfig {
    pub(crate) codec: Codec,
    pub(crate) zstd_level: i32,
    pub(crate) block_target_size: usize,
    pub(crate) small_block_target_size: usize,
    pub(crate) created_unix_ms: Option<i64>,
    pub(crate) storage: StorageOptions,
    pub(crate) commit_parallelism: Option<usize>,
    pub(crate) dataset_index: bool,
}

/// Chunks under this many bytes make a variable one of small arrays (see
/// [`WriterConfig::small_block_target_size`]).
pub const SMALL_CHUNK_BYTES: u64 = 64 * 1024;
/// Default [`WriterConfig::small_block_target_size`]: 512 KiB.
pub const DEFAULT_SMALL_BLOCK_TARGET_SIZE: usize = 512 * 1024;

pub use atlas_format::DEFAULT_ZSTD_LEVEL;

impl Default for WriterConfig {
    fn default() -> Self {
        Self {
            codec: Codec::Zstd,
            zstd_level: DEFAULT_ZSTD_LEVEL,
            block_target_size: atlas_segment::DEFAULT_BLOCK_TARGET_SIZE,
            small_block_target_size: DEFAULT_SMALL_BLOCK_TARGET_SIZE,
            created_unix_ms: None,
            storage: StorageOptions::default(),
            commit_parallelism: None,
            dataset_index: true,
        }
    }
}

impl WriterConfig {
    /// Sets the block compression: [`Codec::Zstd`] (default), [`Codec::Lz4`]
    /// or [`Codec::Uncompressed`]. The footer records it for information; each
    /// block names its own codec, so readers need none of this.
    pub fn codec(mut self, codec: Codec) -> Self {
        self.codec = codec;
        self
    }

    /// Sets the zstd level (default [`DEFAULT_ZSTD_LEVEL`]; ignored for other codecs; checked when
    /// the writer is created).
    pub fn zstd_level(mut self, level: i32) -> Self {
        self.zstd_level = level;
        self
    }

    /// Sets the raw bytes packed into one block before it is compressed
    /// (at least 1; default 8 MiB).
    pub fn block_target_size(mut self, bytes: usize) -> Self {
        self.block_target_size = bytes;
        self
    }

    /// Sets the block size for a variable of small arrays (every chunk of the
    /// first dataset pushed into it under [`SMALL_CHUNK_BYTES`]), when smaller
    /// than the block target size; default 512 KiB, 0 turns it off. Small
    /// blocks let a reader fetch one small array without fetching megabytes.
    pub fn small_block_target_size(mut self, bytes: usize) -> Self {
        self.small_block_target_size = bytes;
        self
    }

    /// Records `unix_ms` (milliseconds since the Unix epoch) as the creation
    /// time instead of the clock at commit: a collection written twice with
    /// the same time and the same datasets is the same bytes.
    pub fn created_unix_ms(mut self, unix_ms: i64) -> Self {
        self.created_unix_ms = Some(unix_ms);
        self
    }

    /// Sets how a path or URL's backend is configured (endpoint, credentials,
    /// retries); unused for an [`Address`](crate::Address) that is already a
    /// [`Location`](crate::Location).
    pub fn storage(mut self, storage: StorageOptions) -> Self {
        self.storage = storage;
        self
    }

    /// Sets how many segments [`AtlasWriter::finish`](crate::AtlasWriter::finish)
    /// finishes at once (each builds and serialises its segment's footer,
    /// most of a commit's CPU time, into temporary storage; they are then
    /// appended in order). Default 1: segments are finished one after
    /// another straight into the container, because in the one measured run
    /// (2 cores) finishing them at once was no faster and held several
    /// footers in memory at once (peak RSS +32 %). The container's bytes are
    /// the same whatever the value (values under 1 count as 1).
    pub fn commit_parallelism(mut self, segments: usize) -> Self {
        self.commit_parallelism = Some(segments.max(1));
        self
    }

    /// The segments a commit finishes at once: the setting, else 1.
    /// Whether [`AtlasWriter::finish`](crate::AtlasWriter::finish) writes
    /// the dataset index (`data.atlas.index`, see `docs/index.md`) beside the
    /// container once it is committed (default `true`). Building it reads the
    /// segment footers just written back; the collection is complete
    /// without it.
    pub fn dataset_index(mut self, write_it: bool) -> Self {
        self.dataset_index = write_it;
        self
    }

    pub(crate) fn commit_parallelism_or_default(&self) -> usize {
        self.commit_parallelism.unwrap_or(1)
    }

    /// The block size of a variable whose first push allocates `chunks` (bytes each).
    pub(crate) fn block_target_for(&self, chunks: &[u64]) -> usize {
        let small = chunks.iter().all(|&c| c < SMALL_CHUNK_BYTES);
        if small && self.small_block_target_size > 0 {
            self.small_block_target_size.min(self.block_target_size)
        } else {
            self.block_target_size
        }
    }

    /// How a segment writer with blocks of `block_target_size` compresses
    /// them; it keeps its arrays' digests only for the dataset index.
    pub(crate) fn segment_options(&self, block_target_size: usize) -> WriteOptions {
        WriteOptions::default()
            .digests(self.dataset_index)
            .codec(self.codec)
            .zstd_level(self.zstd_level)
            .block_target_size(block_target_size)
    }

    /// Checks the options before anything is written.
    pub(crate) fn validate(&self) -> Result<()> {
        if self.block_target_size == 0 {
            return Err(AtlasError::invalid_use(
                "block_target_size must be at least 1 byte",
            ));
        }
        if self.codec == Codec::Zstd {
            let range = zstd::compression_level_range();
            if !range.contains(&self.zstd_level) {
                return Err(AtlasError::invalid_use(format!(
                    "zstd level {} is outside {}..={}",
                    self.zstd_level,
                    range.start(),
                    range.end()
                )));
            }
        }
        Ok(())
    }
}
