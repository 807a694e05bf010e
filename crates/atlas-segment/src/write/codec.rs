//! The block codecs a segment writer compresses with.
//!
//! [`Codec::Lz4`] and [`Codec::Uncompressed`] are array-format's own
//! `Lz4Codec` and `NoCompression`. [`Codec::Zstd`] is [`ParallelZstd`]: the
//! same codec id (`"zstd"`) and a standard zstd frame per block, so every
//! reader decodes it with array-format's `decompress_by_id` (which calls
//! `zstd::bulk::decompress`), but a block of [`MT_MIN_BLOCK`] bytes or more is
//! compressed by several zstd worker threads (zstdmt). A block is compressed
//! while its variable's lock is held (the segment writer compresses a block
//! as the chunk that fills it is written), so this is what lets a collection
//! with one big variable use more than one core.

use std::sync::{Arc, Mutex};

use array_format::block::CodecId;
use array_format::{CompressionCodec, Error as AfError, Lz4Codec, NoCompression, ZstdCodec};
use atlas_format::Codec;

use crate::write::writer::WriteOptions;

/// Size of one zstdmt job.
pub(crate) const MT_JOB_SIZE: u32 = 1 << 20;
/// Blocks at least this large are compressed by several threads.
pub(crate) const MT_MIN_BLOCK: usize = 2 * MT_JOB_SIZE as usize;
/// Most zstd worker threads one block uses.
const MAX_WORKERS: usize = 8;
/// Most idle multi-threaded contexts kept for reuse.
const MAX_POOLED: usize = 4;

/// Multi-threaded compressors, reused across blocks and variables: a zstdmt
/// context owns a thread pool and job buffers, so one per concurrent
/// compression is enough (never one per variable).
static MT_CONTEXTS: Mutex<Vec<zstd::bulk::Compressor<'static>>> = Mutex::new(Vec::new());

/// zstd with the stock codec id, multi-threaded for large blocks.
#[derive(Debug, Clone)]
pub(crate) struct ParallelZstd {
    level: i32,
    workers: u32,
}

impl ParallelZstd {
    /// A codec at `level`; large blocks use `workers` threads (1 = never multi-threaded).
    pub fn new(level: i32, workers: usize) -> Self {
        Self {
            level,
            workers: u32::try_from(workers.clamp(1, MAX_WORKERS)).unwrap_or(1),
        }
    }

    /// A codec using up to as many threads as the machine has cores (at most 8).
    pub fn with_available_parallelism(level: i32) -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Self::new(level, cores)
    }

    fn compress_mt(&self, data: &[u8]) -> std::io::Result<Vec<u8>> {
        use zstd::zstd_safe::CParameter;
        let pooled = MT_CONTEXTS.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let mut cctx = match pooled {
            Some(c) => c,
            None => zstd::bulk::Compressor::new(self.level)?,
        };
        cctx.set_parameter(CParameter::CompressionLevel(self.level))?;
        cctx.set_parameter(CParameter::NbWorkers(self.workers))?;
        cctx.set_parameter(CParameter::JobSize(MT_JOB_SIZE))?;
        // Each job loads a full window of the data before it: the ratio then
        // stays within ~0.5% of single-threaded zstd (the default overlap loses ~2.5%).
        cctx.set_parameter(CParameter::OverlapSizeLog(9))?;
        let out = cctx.compress(data);
        if out.is_ok() {
            // A context that failed is dropped rather than reused.
            let mut pool = MT_CONTEXTS.lock().unwrap_or_else(|e| e.into_inner());
            if pool.len() < MAX_POOLED {
                pool.push(cctx);
            }
        }
        out
    }
}

impl CompressionCodec for ParallelZstd {
    fn id(&self) -> CodecId {
        // Exactly the stock codec's id, so `decompress_by_id` picks zstd.
        ZstdCodec::default().id()
    }

    fn compress(&self, data: &[u8]) -> array_format::Result<Vec<u8>> {
        let out = if self.workers > 1 && data.len() >= MT_MIN_BLOCK {
            self.compress_mt(data)
        } else {
            zstd::bulk::compress(data, self.level)
        };
        out.map_err(|e| AfError::Codec(e.to_string()))
    }

    fn decompress(&self, data: &[u8], uncompressed_size: usize) -> array_format::Result<Vec<u8>> {
        zstd::bulk::decompress(data, uncompressed_size).map_err(|e| AfError::Codec(e.to_string()))
    }
}

/// The block codec a segment writer compresses with, from its options.
pub(crate) fn block_codec(config: &WriteOptions) -> Arc<dyn CompressionCodec> {
    match config.codec {
        Codec::Zstd if config.parallel_zstd => {
            Arc::new(ParallelZstd::with_available_parallelism(config.zstd_level))
        }
        Codec::Zstd => Arc::new(ZstdCodec {
            level: config.zstd_level,
        }),
        Codec::Lz4 => Arc::new(Lz4Codec),
        Codec::Uncompressed => Arc::new(NoCompression),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use atlas_format::DEFAULT_ZSTD_LEVEL;

    fn sample(len: usize) -> Vec<u8> {
        // Compressible but not trivial: a slow ramp of f32 values.
        (0..len / 4)
            .flat_map(|i| ((i as f32) * 0.01).sin().to_le_bytes())
            .collect()
    }

    #[test]
    fn multi_threaded_blocks_decode_with_the_stock_decoder() {
        let data = sample(5 * MT_JOB_SIZE as usize + 123);
        let codec = ParallelZstd::new(DEFAULT_ZSTD_LEVEL, 4);
        let packed = codec.compress(&data).unwrap();
        assert_eq!(codec.id(), ZstdCodec::default().id());
        let back = array_format::codec::decompress_by_id(&codec.id(), &packed, data.len()).unwrap();
        assert_eq!(back, data);
    }

    #[test]
    fn multi_threaded_output_does_not_depend_on_the_thread_count() {
        let data = sample(4 * MT_JOB_SIZE as usize);
        let two = ParallelZstd::new(DEFAULT_ZSTD_LEVEL, 2)
            .compress(&data)
            .unwrap();
        let eight = ParallelZstd::new(DEFAULT_ZSTD_LEVEL, 8)
            .compress(&data)
            .unwrap();
        assert_eq!(two, eight);
    }

    #[test]
    fn small_blocks_are_plain_zstd() {
        let data = sample(4096);
        let packed = ParallelZstd::new(DEFAULT_ZSTD_LEVEL, 4)
            .compress(&data)
            .unwrap();
        assert_eq!(
            packed,
            ZstdCodec {
                level: DEFAULT_ZSTD_LEVEL
            }
            .compress(&data)
            .unwrap()
        );
    }
}
