//! How a collection is written: block codec, zstd level, block size.

use atlas_format::Codec;
use atlas_segment::WriteOptions;

use crate::error::{AtlasError, Result};

/// Options for an [`AtlasWriter`](crate::AtlasWriter).
///
/// The footer records `codec` for information; each block names its own codec,
/// so readers need none of this.
///
/// Build it from [`WriterConfig::default`] and the setters
/// (`WriterConfig::default().codec(Codec::Lz4)`), so new options can be added
/// without breaking callers.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct WriterConfig {
    /// Block compression: [`Codec::Zstd`] (default), [`Codec::Lz4`] or [`Codec::Uncompressed`].
    pub codec: Codec,
    /// zstd level (ignored for other codecs); default 3.
    pub zstd_level: i32,
    /// Raw bytes packed into one block before it is compressed; default 8 MiB.
    pub block_target_size: usize,
    /// The creation time the footer records, in milliseconds since the Unix
    /// epoch; `None` (default) takes the clock at commit. Fix it to write a
    /// collection byte for byte reproducibly.
    pub created_unix_ms: Option<i64>,
}

/// Default zstd level of [`WriterConfig`].
pub const DEFAULT_ZSTD_LEVEL: i32 = 3;

impl Default for WriterConfig {
    fn default() -> Self {
        Self {
            codec: Codec::Zstd,
            zstd_level: DEFAULT_ZSTD_LEVEL,
            block_target_size: atlas_segment::DEFAULT_BLOCK_TARGET_SIZE,
            created_unix_ms: None,
        }
    }
}

impl WriterConfig {
    /// Sets the block codec.
    pub fn codec(mut self, codec: Codec) -> Self {
        self.codec = codec;
        self
    }

    /// Sets the zstd level (checked when the writer is created).
    pub fn zstd_level(mut self, level: i32) -> Self {
        self.zstd_level = level;
        self
    }

    /// Sets the raw bytes packed into one block (at least 1).
    pub fn block_target_size(mut self, bytes: usize) -> Self {
        self.block_target_size = bytes;
        self
    }

    /// Records `unix_ms` as the creation time instead of the clock at commit.
    pub fn with_created_unix_ms(mut self, unix_ms: i64) -> Self {
        self.created_unix_ms = Some(unix_ms);
        self
    }

    /// How the segment writers compress their blocks.
    pub(crate) fn segment_options(&self) -> WriteOptions {
        WriteOptions::default()
            .codec(self.codec)
            .zstd_level(self.zstd_level)
            .block_target_size(self.block_target_size)
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
