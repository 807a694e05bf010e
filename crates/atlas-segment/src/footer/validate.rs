//! Footer validation: a segment's footer archive checked, and walked once,
//! before anything reads it in place or array-format parses it.
//!
//! array-format 0.15 trusts its own footer: a block's `uncompressed_size`
//! becomes an allocation (a flipped high byte aborts the process), a chunk
//! coordinate past the grid underflows, a shape that lies sizes the output of
//! a read. This module lets rkyv validate the footer against the footer
//! schema (`schema`, array-format's private types declared again) and walks the
//! validated archive in place, the way array-format will. Nothing is copied
//! out but what the checks need, and the validated archive is what the open
//! segment then reads (`archive`).
//!
//! Checks that make the whole segment unusable: the footer version, the block
//! table (dense ids, every block inside the data region, a zstd block's
//! declared size within what zstd can expand to), two arrays of one name, and
//! the memory array-format would spend on attribute columns. Checks that make one array unusable
//! (recorded, reported when that array is used): rank agreement between shape,
//! chunk shape and dimension names, chunk extents of zero, the recorded row
//! count against the shape, and every chunk entry (rank, inside the grid,
//! strictly sorted, in an existing block, inside the block, and for
//! fixed-width types exactly the bytes its elements take).

use std::collections::HashMap;
use std::ops::Range;

use array_format::block::ArchivedCodecId;
use array_format::dtype::ArchivedDType;
use bytes::Bytes;
use rkyv::Archived;
use smallvec::SmallVec;

use crate::footer::archive::{FooterArchive, NameIndex};
use crate::footer::digest::{ArrayDigest, BlockPlace};
use crate::footer::schema::{ArchivedArrayMeta, ArchivedFooter};
use crate::footer::tail::ARRF_TRAILER_LEN;
use crate::read::blocks::{BlockCodec, BlockLoc, ChunkTable};
use crate::types::value::dtype_to_stored;

/// [`ARRF_TRAILER_LEN`] as a slice length.
const TRAILER_BYTES: usize = ARRF_TRAILER_LEN as usize;

/// The most a zstd frame can expand: one 128 KiB RLE block costs 4 bytes.
const ZSTD_MAX_EXPANSION: u64 = 32 * 1024;
/// Slack on top of that for frame headers of tiny blocks.
const ZSTD_SLACK: u64 = 64 * 1024;
/// The most an LZ4 block can expand: a match length is coded in bytes of 255.
const LZ4_MAX_EXPANSION: u64 = 255;
/// Slack on top of that for the 4-byte size prefix and the last literals.
const LZ4_SLACK: u64 = 64;

/// Bytes one attribute cell costs array-format (`Option<AttributeValue>`).
const ATTRIBUTE_CELL_BYTES: u64 = 24;
/// Attribute columns may take this many bytes whatever the footer's size...
const ATTRIBUTE_FLOOR_BYTES: u64 = 1 << 30;
/// ...or this many times the footer's size, whichever is larger.
const ATTRIBUTE_EXPANSION: u64 = 64;

/// Why a segment's footer cannot be handed to array-format at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FooterProblem {
    /// Fewer bytes than the 12-byte trailer.
    #[error("segment tail shorter than the array-format trailer")]
    TailTooShort,
    /// The trailer's footer size does not fit in a `usize`.
    #[error("array-format footer size {size} overflows")]
    SizeOverflows {
        /// The size the trailer claims.
        size: u64,
    },
    /// The footer the trailer claims is longer than the bytes in hand.
    #[error("array-format footer of {size} bytes is larger than the {available} bytes read")]
    BeyondTail {
        /// The size the trailer claims.
        size: u64,
        /// Bytes in front of the trailer.
        available: u64,
    },
    /// rkyv's validation of the archive failed.
    #[error("array-format footer does not validate: {message}")]
    DoesNotValidate {
        /// rkyv's explanation.
        message: String,
    },
    /// A footer version this crate does not know.
    #[error("array-format footer version {found}, expected {expected}")]
    Version {
        /// The version in the footer.
        found: u32,
        /// The version understood here.
        expected: u32,
    },
    /// Block ids must be their positions.
    #[error("block {index} carries id {id}")]
    BlockId {
        /// Position in the block table.
        index: usize,
        /// The id it carries.
        id: u32,
    },
    /// `offset + compressed size` of a block overflows.
    #[error("block {index} range overflows")]
    BlockOverflows {
        /// Position in the block table.
        index: usize,
    },
    /// A block ends past the data region (in the footer or beyond the segment).
    #[error("block {index} ends at byte {end}, past the data region of {data_end} bytes")]
    BlockPastData {
        /// Position in the block table.
        index: usize,
        /// Where it ends.
        end: u64,
        /// Where the data region ends.
        data_end: u64,
    },
    /// A compressed block claims more bytes than its compressed bytes can expand to.
    #[error(
        "block {index} claims {uncompressed} bytes from {compressed} compressed ({codec} cannot expand that far)"
    )]
    BlockExpansion {
        /// Position in the block table.
        index: usize,
        /// The block's codec.
        codec: &'static str,
        /// The size it claims.
        uncompressed: u64,
        /// Its compressed size.
        compressed: u64,
    },
    /// array-format would allocate this much for attribute columns.
    #[error("{keys} attribute keys over {arrays} arrays would take {bytes} bytes in memory")]
    AttributeMemory {
        /// Distinct attribute keys.
        keys: usize,
        /// Arrays in the segment.
        arrays: usize,
        /// Bytes the columns would take.
        bytes: u64,
    },
    /// An attribute of an array names an entry its footer's pools lack.
    #[error("array {array:?}: attribute {pool} {index} is outside the footer's pool of {len}")]
    AttributePool {
        /// The array.
        array: String,
        /// Which pool: `key`, `value` or `string`.
        pool: &'static str,
        /// The index named.
        index: u32,
        /// Entries in that pool.
        len: usize,
    },
    /// One attribute's values over every array would take more memory than
    /// a footer of this size may cost (values are pooled and shared).
    #[error("attribute {key:?} over every array would take over {budget} bytes in memory")]
    AttributeValues {
        /// The attribute.
        key: String,
        /// The bytes allowed.
        budget: u64,
    },
    /// Two arrays of one name (array-format refuses such a footer whole).
    #[error("array {name:?} is defined twice")]
    DuplicateArray {
        /// The name.
        name: String,
    },
}

/// Why one array of a segment cannot be used (the others still can).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ArrayProblem {
    /// Chunk shape and shape disagree on the rank.
    #[error("chunk shape has {chunk_axes} axes, shape has {rank}")]
    ChunkRank {
        /// Axes of the chunk shape.
        chunk_axes: usize,
        /// Axes of the shape.
        rank: usize,
    },
    /// Dimension names and shape disagree on the rank.
    #[error("{names} dimension names for {rank} axes")]
    DimensionNames {
        /// Names given.
        names: usize,
        /// Axes of the shape.
        rank: usize,
    },
    /// A chunk extent of zero.
    #[error("chunk extent 0 on axis {axis}")]
    ZeroChunk {
        /// The axis.
        axis: usize,
    },
    /// The shape's element count overflows u64.
    #[error("element count overflows u64")]
    ElementCountOverflows,
    /// The statistics count other rows than the shape holds.
    #[error("shape {shape:?} holds {elements} elements, but the statistics count {rows}")]
    RowCount {
        /// The shape.
        shape: Vec<u64>,
        /// Its element count.
        elements: u64,
        /// The statistics' row count.
        rows: u64,
    },
    /// More nulls than rows.
    #[error("{nulls} nulls in {rows} rows")]
    NullCount {
        /// Nulls recorded.
        nulls: u64,
        /// Rows recorded.
        rows: u64,
    },
    /// A chunk coordinate of the wrong rank.
    #[error("chunk coordinate of {axes} axes in an array of {rank}")]
    CoordRank {
        /// Axes of the coordinate.
        axes: usize,
        /// Axes of the array.
        rank: usize,
    },
    /// A chunk outside the chunk grid.
    #[error("chunk at {coord:?} lies outside shape {shape:?}")]
    ChunkOutside {
        /// The chunk's coordinate.
        coord: Vec<u32>,
        /// The array's shape.
        shape: Vec<u64>,
    },
    /// The chunk table is not strictly sorted.
    #[error("chunk table is not strictly sorted")]
    Unsorted,
    /// A chunk in a block that does not exist.
    #[error("chunk names block {block}, which does not exist")]
    MissingBlock {
        /// The block id.
        block: u32,
    },
    /// A chunk's bytes run past its block's decoded bytes.
    #[error("chunk bytes {start}..{end} run past block {block} of {block_len} bytes")]
    ChunkPastBlock {
        /// Start in the block.
        start: u64,
        /// End in the block.
        end: u64,
        /// The block id.
        block: u32,
        /// The block's decoded length.
        block_len: u64,
    },
    /// A fixed-width chunk of the wrong byte size.
    #[error("chunk of {elements} elements holds {size} bytes, expected {expected}")]
    ChunkSize {
        /// Elements in the chunk.
        elements: u64,
        /// Bytes it holds.
        size: u64,
        /// Bytes its elements take.
        expected: u64,
    },
}

/// A footer that passed validation, and what its checks found.
#[derive(Debug)]
pub(crate) struct ValidatedFooter {
    /// The footer, validated, read in place from here on.
    pub archive: FooterArchive,
    /// What the checks of its blocks and arrays found.
    pub checked: Checked,
}

/// What the checks of a segment's blocks and arrays found acceptable, and
/// what they found wrong with single arrays: from a footer, or from chunk
/// places known without one (a view made from a dataset index).
#[derive(Debug)]
pub(crate) struct Checked {
    /// The arrays by name.
    pub names: NameIndex,
    /// Array name to why it cannot be used.
    pub problems: HashMap<String, ArrayProblem>,
    /// `(offset, declared size)` of every LZ4 block: the size prefix inside
    /// the block must agree before array-format decodes it (see `SegmentStore`).
    pub lz4_blocks: Vec<(u64, u64)>,
    /// The block table and every unflagged array's chunk entries, for
    /// reading fixed-width arrays without array-format (see `blocks`).
    pub chunks: ChunkTable,
    /// Per array, in order: the lowest data block id any of its written
    /// chunks names (None: nothing written). What groups datasets into the
    /// blocks they share without reading a block.
    pub first_blocks: Vec<Option<u32>>,
}

/// Validates the footer at the end of `tail` (the last bytes of a segment of
/// `segment_len` bytes, trailer included, already checked by the segment store).
///
/// `Err` means the segment as a whole cannot be used (nor handed to array-format).
pub(crate) fn validate_footer(
    tail: &Bytes,
    segment_len: u64,
) -> Result<ValidatedFooter, FooterProblem> {
    validate_footer_collecting(tail, segment_len, |_, _| ()).map(|(validated, _)| validated)
}

/// [`validate_footer`], also making one `T` of each archived array, validated, and
/// the first data block its chunks name, in footer order: for what a caller
/// reads from the footer without array-format's open.
pub(crate) fn validate_footer_collecting<T>(
    tail: &Bytes,
    segment_len: u64,
    mut collect: impl FnMut(&ArchivedArrayMeta, Option<u32>) -> T,
) -> Result<(ValidatedFooter, Vec<T>), FooterProblem> {
    let (footer_range, footer_total) = footer_slice(tail)?;
    let data_end = segment_len
        .checked_sub(footer_total)
        .ok_or(FooterProblem::BeyondTail {
            size: footer_total,
            available: segment_len,
        })?;
    let archive = FooterArchive::new(tail.slice(footer_range))?;
    validate_archive(archive, data_end, &mut collect)
}

/// Validation of a validated footer in front of a data region ending at
/// `data_end`.
fn validate_archive<T>(
    archive: FooterArchive,
    data_end: u64,
    collect: &mut impl FnMut(&ArchivedArrayMeta, Option<u32>) -> T,
) -> Result<(ValidatedFooter, Vec<T>), FooterProblem> {
    let footer = archive.footer();
    let blocks = validate_blocks(footer, data_end)?;
    validate_attribute_memory(footer, archive.len())?;
    let names = NameIndex::new(footer.arrays.as_slice())?;
    let lz4_blocks = blocks
        .iter()
        .filter_map(|b| b.lz4_at.map(|at| (at, b.decoded_len)))
        .collect();
    let mut problems = HashMap::new();
    let mut chunks = ChunkTable::new(blocks.iter().map(|b| b.loc).collect(), footer.arrays.len());
    let mut first_blocks = Vec::with_capacity(footer.arrays.len());
    let mut collected = Vec::with_capacity(footer.arrays.len());
    for array in footer.arrays.iter() {
        let first = first_block(array);
        collected.push(collect(array, first));
        first_blocks.push(first);
        chunks.begin_array();
        if let Err(problem) = validate_array(array, &blocks, &mut chunks) {
            chunks.reject_array();
            problems.insert(array.name.as_str().to_owned(), problem);
        }
    }
    Ok((
        ValidatedFooter {
            archive,
            checked: Checked {
                names,
                problems,
                lz4_blocks,
                chunks,
                first_blocks,
            },
        },
        collected,
    ))
}

/// Checks `arrays` (each with its shape as a footer records it, in
/// `shapes`) and the block table `blocks` against a data region ending at
/// `data_end`, with the checks a footer gets: a block that fails refuses
/// them all, an array that fails is flagged.
pub(crate) fn validate_places(
    blocks: &[BlockPlace],
    arrays: &[ArrayDigest],
    shapes: &[SmallVec<[u32; 4]>],
    data_end: u64,
) -> Result<Checked, FooterProblem> {
    let blocks = blocks
        .iter()
        .enumerate()
        .map(|(index, b)| {
            check_block(
                index,
                b.offset,
                b.stored,
                b.decoded,
                b.codec.as_deref(),
                data_end,
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    let names = NameIndex::of_names(arrays.len(), |p| arrays.get(p).map(|a| a.name.as_str()))?;
    let lz4_blocks = blocks
        .iter()
        .filter_map(|b| b.lz4_at.map(|at| (at, b.decoded_len)))
        .collect();
    let mut problems = HashMap::new();
    let mut chunks = ChunkTable::new(blocks.iter().map(|b| b.loc).collect(), arrays.len());
    let mut first_blocks = Vec::with_capacity(arrays.len());
    for (array, shape) in arrays.iter().zip(shapes) {
        first_blocks.push(array.first_block);
        chunks.begin_array();
        let facts = ArrayFacts {
            shape: shape.as_slice(),
            chunk_shape: array.chunk_shape.as_slice(),
            dimension_names: array.dimension_names.len(),
            element_size: dtype_to_stored(&array.dtype)
                .and_then(|d| d.element_size())
                .map(|n| n as u64),
            stats: array.stats.as_ref().map(|s| (s.row_count, s.null_count)),
        };
        let places = array
            .chunks
            .iter()
            .map(|c| (c.coord.as_slice(), c.block, c.offset, c.size));
        if let Err(problem) = check_array(facts, places, |v: u32| v, &blocks, &mut chunks) {
            chunks.reject_array();
            problems.insert(array.name.to_string(), problem);
        }
    }
    Ok(Checked {
        names,
        problems,
        lz4_blocks,
        chunks,
        first_blocks,
    })
}

/// The lowest block id the written chunks of `array` name.
fn first_block(array: &ArchivedArrayMeta) -> Option<u32> {
    array
        .chunks
        .iter()
        .map(|entry| entry.address.block_id.0.to_native())
        .min()
}

/// Where in `tail` the footer in front of the trailer lies, and footer +
/// trailer length.
fn footer_slice(tail: &[u8]) -> Result<(Range<usize>, u64), FooterProblem> {
    let trailer_start = tail
        .len()
        .checked_sub(TRAILER_BYTES)
        .ok_or(FooterProblem::TailTooShort)?;
    let size_bytes: [u8; 8] = tail
        .get(trailer_start..trailer_start.saturating_add(8))
        .and_then(|b| b.try_into().ok())
        .ok_or(FooterProblem::TailTooShort)?;
    let size = u64::from_le_bytes(size_bytes);
    let footer_size = usize::try_from(size).map_err(|_| FooterProblem::SizeOverflows { size })?;
    let footer_start = trailer_start
        .checked_sub(footer_size)
        .ok_or(FooterProblem::BeyondTail {
            size,
            available: trailer_start as u64,
        })?;
    let total = size.saturating_add(ARRF_TRAILER_LEN);
    Ok((footer_start..trailer_start, total))
}

/// What a chunk check needs to know about a block: the bytes it decodes to.
struct BlockBound {
    decoded_len: u64,
    /// The block as the reads of `blocks` need it.
    loc: BlockLoc,
    /// Where the block starts, if it is LZ4 (whose size prefix needs a check).
    lz4_at: Option<u64>,
}

fn validate_blocks(
    footer: &ArchivedFooter,
    data_end: u64,
) -> Result<Vec<BlockBound>, FooterProblem> {
    let mut out = Vec::with_capacity(footer.blocks.len());
    for (index, block) in footer.blocks.iter().enumerate() {
        let id = block.id.0.to_native();
        if usize::try_from(id).ok() != Some(index) {
            return Err(FooterProblem::BlockId { index, id });
        }
        let codec = match &block.codec {
            ArchivedCodecId::None => None,
            ArchivedCodecId::Named(name) => Some(name.as_str()),
        };
        out.push(check_block(
            index,
            block.file_offset.to_native(),
            block.compressed_size.to_native(),
            block.uncompressed_size.to_native(),
            codec,
            data_end,
        )?);
    }
    Ok(out)
}

/// Checks block `index` (at `offset`, `compressed` bytes stored, said to
/// decode to `uncompressed` with `codec`, `None` for none) against a data
/// region ending at `data_end`.
fn check_block(
    index: usize,
    offset: u64,
    compressed: u64,
    uncompressed: u64,
    codec: Option<&str>,
    data_end: u64,
) -> Result<BlockBound, FooterProblem> {
    let end = offset
        .checked_add(compressed)
        .ok_or(FooterProblem::BlockOverflows { index })?;
    if end > data_end {
        return Err(FooterProblem::BlockPastData {
            index,
            end,
            data_end,
        });
    }
    let expansion = |codec, ceiling: u64| {
        if uncompressed > ceiling {
            Err(FooterProblem::BlockExpansion {
                index,
                codec,
                uncompressed,
                compressed,
            })
        } else {
            Ok(uncompressed)
        }
    };
    // Both codecs allocate the decoded size up front (zstd from the
    // footer, LZ4 from the block's own prefix, which the segment store
    // holds to the footer's figure): bound it by what the compressed
    // bytes can possibly expand to.
    let (codec, decoded_len, lz4_at) = match codec {
        None => (BlockCodec::None, compressed, None),
        Some("zstd") => (
            BlockCodec::Zstd,
            expansion(
                "zstd",
                compressed
                    .saturating_mul(ZSTD_MAX_EXPANSION)
                    .saturating_add(ZSTD_SLACK),
            )?,
            None,
        ),
        Some("lz4") => (
            BlockCodec::Lz4,
            expansion(
                "lz4",
                compressed
                    .saturating_mul(LZ4_MAX_EXPANSION)
                    .saturating_add(LZ4_SLACK)
                    .min(u64::from(u32::MAX)),
            )?,
            Some(offset),
        ),
        // Unknown codecs fail at read time, before any allocation.
        Some(_) => (BlockCodec::Other, uncompressed, None),
    };
    Ok(BlockBound {
        decoded_len,
        loc: BlockLoc {
            offset,
            compressed,
            decoded: decoded_len,
            codec,
        },
        lz4_at,
    })
}

/// The most attribute values read off a footer of `footer_len` bytes may
/// take in memory: values are pooled, so a footer can name one large value
/// for every array.
pub(crate) fn attribute_budget(footer_len: u64) -> u64 {
    footer_len
        .saturating_mul(ATTRIBUTE_EXPANSION)
        .max(ATTRIBUTE_FLOOR_BYTES)
}

/// array-format allocates one cell per array per distinct attribute key.
fn validate_attribute_memory(
    footer: &ArchivedFooter,
    footer_len: u64,
) -> Result<(), FooterProblem> {
    // A segment's arrays mostly share a handful of keys: a fast fixed-seed hash.
    let mut keys = hashbrown::HashSet::with_hasher(foldhash::fast::FixedState::default());
    for array in footer.arrays.iter() {
        for pair in array.attributes.iter() {
            keys.insert(pair.0.to_native());
        }
    }
    let cells = (keys.len() as u64).saturating_mul(footer.arrays.len() as u64);
    let bytes = cells.saturating_mul(ATTRIBUTE_CELL_BYTES);
    if bytes > attribute_budget(footer_len) {
        return Err(FooterProblem::AttributeMemory {
            keys: keys.len(),
            arrays: footer.arrays.len(),
            bytes,
        });
    }
    Ok(())
}

/// A list of `u32`s (read by `get`), widened.
fn widened<N: Copy>(values: &[N], get: impl Fn(N) -> u32) -> Vec<u64> {
    values.iter().map(|&v| u64::from(get(v))).collect()
}

/// A list of `u32`s (read by `get`), as native integers.
fn native<N: Copy>(values: &[N], get: impl Fn(N) -> u32) -> Vec<u32> {
    values.iter().map(|&v| get(v)).collect()
}

/// An archived `u32`, native.
fn archived(v: Archived<u32>) -> u32 {
    v.to_native()
}

/// The bytes one element of an archived type takes, if fixed (array-format's
/// `DType::element_size`, read off the archive without arithmetic that can overflow).
fn element_size(dtype: &ArchivedDType) -> Option<u64> {
    match dtype {
        ArchivedDType::Bool | ArchivedDType::Int8 | ArchivedDType::UInt8 => Some(1),
        ArchivedDType::Int16 | ArchivedDType::UInt16 => Some(2),
        ArchivedDType::Int32 | ArchivedDType::UInt32 | ArchivedDType::Float32 => Some(4),
        ArchivedDType::Int64
        | ArchivedDType::UInt64
        | ArchivedDType::Float64
        | ArchivedDType::TimestampNs => Some(8),
        ArchivedDType::FixedSizeList { child, size } => {
            element_size(child).map(|c| c.saturating_mul(u64::from(size.to_native())))
        }
        ArchivedDType::String | ArchivedDType::Binary | ArchivedDType::List { .. } => None,
    }
}

/// What the checks of one array read, wherever it is recorded (an archived
/// footer, or chunk places from elsewhere).
struct ArrayFacts<'a, N> {
    shape: &'a [N],
    chunk_shape: &'a [N],
    dimension_names: usize,
    /// Bytes of one element, if fixed.
    element_size: Option<u64>,
    /// `(rows, nulls)` of the recorded statistics.
    stats: Option<(u64, u64)>,
}

/// One chunk entry as the checks read it: coordinate, block, offset and size.
type ChunkFacts<'a, N> = (&'a [N], u32, u32, u32);

/// Checks one archived array's shape, statistics and chunk entries in
/// place (no copy of what is fine: a segment holds tens of thousands of
/// arrays), and adds its chunks to `table`.
fn validate_array(
    array: &ArchivedArrayMeta,
    blocks: &[BlockBound],
    table: &mut ChunkTable,
) -> Result<(), ArrayProblem> {
    let facts = ArrayFacts {
        shape: array.shape.as_slice(),
        chunk_shape: array.chunk_shape.as_slice(),
        dimension_names: array.dimension_names.len(),
        element_size: element_size(&array.dtype),
        stats: array
            .stats
            .as_ref()
            .map(|s| (s.row_count.to_native(), s.null_count.to_native())),
    };
    let chunks = array.chunks.iter().map(|entry| {
        let address = &entry.address;
        (
            entry.coord.as_slice(),
            address.block_id.0.to_native(),
            address.offset.to_native(),
            address.size.to_native(),
        )
    });
    check_array(facts, chunks, archived, blocks, table)
}

/// The checks of one array (see the module docs), adding its chunks to
/// `table`; its `u32`s are read by `get` (archived or native).
fn check_array<'a, N: Copy + 'a>(
    facts: ArrayFacts<'a, N>,
    chunks: impl Iterator<Item = ChunkFacts<'a, N>>,
    get: impl Fn(N) -> u32 + Copy,
    blocks: &[BlockBound],
    table: &mut ChunkTable,
) -> Result<(), ArrayProblem> {
    let (shape, chunk) = (facts.shape, facts.chunk_shape);
    let rank = shape.len();
    if chunk.len() != rank {
        return Err(ArrayProblem::ChunkRank {
            chunk_axes: chunk.len(),
            rank,
        });
    }
    let names = facts.dimension_names;
    if names != 0 && names != rank {
        return Err(ArrayProblem::DimensionNames { names, rank });
    }
    if let Some(axis) = chunk.iter().position(|c| get(*c) == 0) {
        return Err(ArrayProblem::ZeroChunk { axis });
    }
    let elements = shape
        .iter()
        .try_fold(1u64, |acc, d| acc.checked_mul(u64::from(get(*d))))
        .ok_or(ArrayProblem::ElementCountOverflows)?;
    if let Some((rows, nulls)) = facts.stats {
        if rows != elements {
            return Err(ArrayProblem::RowCount {
                shape: widened(shape, get),
                elements,
                rows,
            });
        }
        if nulls > rows {
            return Err(ArrayProblem::NullCount { nulls, rows });
        }
    }
    let mut previous: Option<&[N]> = None;
    for (coord, block_id, offset, size) in chunks {
        if coord.len() != rank {
            return Err(ArrayProblem::CoordRank {
                axes: coord.len(),
                rank,
            });
        }
        let mut chunk_elements: u64 = 1;
        for ((c, extent), len) in coord.iter().zip(chunk).zip(shape) {
            let (extent, len) = (u64::from(get(*extent)), u64::from(get(*len)));
            let start = u64::from(get(*c)).saturating_mul(extent);
            if start >= len {
                return Err(ArrayProblem::ChunkOutside {
                    coord: native(coord, get),
                    shape: widened(shape, get),
                });
            }
            chunk_elements = chunk_elements.saturating_mul(extent.min(len.saturating_sub(start)));
        }
        let ascending =
            previous.is_none_or(|p| p.iter().map(|&c| get(c)).lt(coord.iter().map(|&c| get(c))));
        if !ascending {
            return Err(ArrayProblem::Unsorted);
        }
        previous = Some(coord);
        let block = usize::try_from(block_id)
            .ok()
            .and_then(|b| blocks.get(b))
            .ok_or(ArrayProblem::MissingBlock { block: block_id })?;
        let (start, len) = (u64::from(offset), u64::from(size));
        if start.saturating_add(len) > block.decoded_len {
            return Err(ArrayProblem::ChunkPastBlock {
                start,
                end: start.saturating_add(len),
                block: block_id,
                block_len: block.decoded_len,
            });
        }
        if let Some(element_size) = facts.element_size {
            let expected = chunk_elements.saturating_mul(element_size);
            if len != expected {
                return Err(ArrayProblem::ChunkSize {
                    elements: chunk_elements,
                    size: len,
                    expected,
                });
            }
        }
        table.push_chunk(coord.iter().map(|&c| get(c)), block_id, offset, size);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use array_format::address::{BlockId, ChunkAddress};
    use array_format::block::CodecId;
    use array_format::layout::ChunkEntry;
    use array_format::{ArrayStats, DType};

    use super::*;
    use crate::Attr;
    use crate::footer::attributes;
    use crate::footer::schema::{ArrayMeta, BlockMeta, DiskValue, FOOTER_VERSION, Footer};

    /// [`super::validate_footer`] of bytes in hand.
    fn validate_footer(tail: &[u8], segment_len: u64) -> Result<ValidatedFooter, FooterProblem> {
        super::validate_footer(&Bytes::copy_from_slice(tail), segment_len)
    }

    /// Attribute `key` of every array of the segment `bytes`, off its archive.
    fn cells(bytes: &[u8], key: &str) -> Result<Option<Vec<Option<Attr>>>, FooterProblem> {
        let validated = validate_footer(bytes, bytes.len() as u64)?;
        attributes::attribute_cells(&validated.archive, key)
    }

    /// `data`, then the archived `footer`, then the ARRF trailer.
    fn segment(footer: &Footer, data: &[u8]) -> Vec<u8> {
        let body = rkyv::to_bytes::<rkyv::rancor::Error>(footer).unwrap();
        let mut out = data.to_vec();
        out.extend_from_slice(&body);
        out.extend_from_slice(&(body.len() as u64).to_le_bytes());
        out.extend_from_slice(b"ARRF");
        out
    }

    fn block(uncompressed: u64, compressed: u64, codec: &str) -> BlockMeta {
        BlockMeta {
            id: BlockId(0),
            file_offset: 0,
            compressed_size: compressed,
            uncompressed_size: uncompressed,
            codec: if codec.is_empty() {
                CodecId::None
            } else {
                CodecId::Named(codec.into())
            },
        }
    }

    fn array(name: &str, shape: Vec<u32>, chunk: Vec<u32>, coords: Vec<Vec<u32>>) -> ArrayMeta {
        let rows = shape.iter().map(|&d| u64::from(d)).product();
        ArrayMeta {
            name: name.into(),
            dtype: DType::Float32,
            dimension_names: (0..shape.len()).map(|i| format!("d{i}")).collect(),
            chunks: coords
                .into_iter()
                .map(|coord| ChunkEntry {
                    coord,
                    address: ChunkAddress {
                        block_id: BlockId(0),
                        offset: 0,
                        size: 16,
                    },
                })
                .collect(),
            shape,
            chunk_shape: chunk,
            fill_value: None,
            attributes: vec![],
            stats: Some(ArrayStats {
                name: name.into(),
                min: None,
                max: None,
                null_count: 0,
                row_count: rows,
            }),
        }
    }

    fn footer(blocks: Vec<BlockMeta>, arrays: Vec<ArrayMeta>) -> Footer {
        Footer {
            version: FOOTER_VERSION,
            blocks,
            strings: vec![],
            values: vec![],
            arrays,
        }
    }

    #[test]
    fn a_block_claiming_more_than_its_codec_can_expand_is_refused() {
        let data = [0u8; 40];
        let claim = 1u64 << 56;
        for codec in ["zstd", "lz4"] {
            let f = footer(
                vec![block(claim, 40, codec)],
                vec![array("a", vec![4], vec![4], vec![vec![0]])],
            );
            let bytes = segment(&f, &data);
            let err = validate_footer(&bytes, bytes.len() as u64).unwrap_err();
            assert!(
                matches!(err, FooterProblem::BlockExpansion { index: 0, codec: c, .. } if c == codec),
                "{err}"
            );
        }
        // A stored block decodes to its own bytes whatever it claims.
        let f = footer(vec![block(claim, 40, "")], vec![]);
        let bytes = segment(&f, &data);
        assert!(validate_footer(&bytes, bytes.len() as u64).is_ok());
    }

    #[test]
    fn validation_lists_where_each_lz4_block_starts_and_what_it_declares() {
        let data = [0u8; 40];
        let mut second = block(300, 20, "lz4");
        second.id = BlockId(1);
        second.file_offset = 20;
        let f = footer(vec![block(64, 20, "zstd"), second], vec![]);
        let bytes = segment(&f, &data);
        let validated = validate_footer(&bytes, bytes.len() as u64).unwrap();
        assert_eq!(validated.checked.lz4_blocks, vec![(20, 300)]);
    }

    /// End to end: without validation, this read would ask zstd for a 2^56-byte
    /// buffer and the allocator would abort the process.
    #[tokio::test]
    async fn an_absurd_block_size_is_an_error_through_the_reader_not_an_abort() {
        let data = zstd::bulk::compress(&[0u8; 16], atlas_format::DEFAULT_ZSTD_LEVEL).unwrap();
        let f = footer(
            vec![block(1 << 56, data.len() as u64, "zstd")],
            vec![array("d0", vec![4], vec![4], vec![vec![0]])],
        );
        let seg = segment(&f, &data);
        let err = crate::open_bytes("v", seg.into()).await.unwrap_err();
        assert!(
            matches!(
                &err,
                crate::SegmentError::Footer {
                    problem: FooterProblem::BlockExpansion { .. },
                    ..
                }
            ),
            "{err}"
        );
    }

    /// LZ4 sizes its output from the block's own 4-byte prefix; a prefix
    /// that disagrees with the footer is refused before it becomes an
    /// allocation (the segment fuzz target found a 4 GiB one).
    #[tokio::test]
    async fn an_lz4_block_whose_prefix_lies_is_an_error_not_a_4_gib_allocation() {
        let values: Vec<u8> = (0..16u8).collect();
        let honest = lz4_flex::compress_prepend_size(&values);
        let read = |data: Vec<u8>| async move {
            let f = footer(
                vec![block(16, data.len() as u64, "lz4")],
                vec![array("d0", vec![4], vec![4], vec![vec![0]])],
            );
            let seg = crate::open_bytes("v", segment(&f, &data).into()).await?;
            seg.read::<f32>("d0", &[], &[]).await
        };
        let ok = read(honest.clone()).await.unwrap();
        assert_eq!(ok.len(), 4);
        let mut lying = honest;
        lying[..4].copy_from_slice(&0xFFFF_FFF0u32.to_le_bytes());
        let err = read(lying).await.unwrap_err();
        assert!(matches!(&err, crate::SegmentError::Corrupt { .. }), "{err}");
        assert!(err.to_string().contains("LZ4 block"), "{err}");
    }

    #[test]
    fn blocks_must_lie_in_the_data_region_and_be_numbered_densely() {
        let data = [0u8; 40];
        let f = footer(vec![block(16, 41, "")], vec![]);
        let bytes = segment(&f, &data);
        assert!(matches!(
            validate_footer(&bytes, bytes.len() as u64),
            Err(FooterProblem::BlockPastData { index: 0, .. })
        ));
        let mut b = block(16, 16, "");
        b.id = BlockId(3);
        let bytes = segment(&footer(vec![b], vec![]), &data);
        assert!(matches!(
            validate_footer(&bytes, bytes.len() as u64),
            Err(FooterProblem::BlockId { index: 0, id: 3 })
        ));
    }

    #[test]
    fn damaged_arrays_are_flagged_one_by_one() {
        let data = [0u8; 64];
        let mut wrong_rows = array("rows", vec![4], vec![4], vec![vec![0]]);
        if let Some(s) = wrong_rows.stats.as_mut() {
            s.row_count = 5;
        }
        let mut zero_chunk = array("zero", vec![4], vec![4], vec![]);
        zero_chunk.chunk_shape = vec![0];
        let mut wrong_size = array("size", vec![4], vec![4], vec![vec![0]]);
        wrong_size.chunks[0].address.size = 12;
        let f = footer(
            vec![block(64, 64, "")],
            vec![
                array("good", vec![2, 4], vec![1, 4], vec![vec![0, 0], vec![1, 0]]),
                array("outside", vec![4], vec![4], vec![vec![1]]),
                array("rank", vec![4], vec![4, 1], vec![]),
                array("unsorted", vec![8], vec![4], vec![vec![1], vec![0]]),
                wrong_rows,
                zero_chunk,
                wrong_size,
            ],
        );
        let bytes = segment(&f, &data);
        let validated = validate_footer(&bytes, bytes.len() as u64).unwrap();
        let problem = |name: &str| validated.checked.problems.get(name).cloned();
        assert_eq!(problem("good"), None);
        assert!(matches!(
            problem("outside"),
            Some(ArrayProblem::ChunkOutside { .. })
        ));
        assert!(matches!(
            problem("rank"),
            Some(ArrayProblem::ChunkRank { .. })
        ));
        assert!(matches!(
            problem("rows"),
            Some(ArrayProblem::RowCount { rows: 5, .. })
        ));
        assert!(matches!(
            problem("size"),
            Some(ArrayProblem::ChunkSize { size: 12, .. })
        ));
        assert_eq!(problem("unsorted"), Some(ArrayProblem::Unsorted));
        assert_eq!(problem("zero"), Some(ArrayProblem::ZeroChunk { axis: 0 }));
        assert_eq!(validated.checked.problems.len(), 6);
        assert_eq!(validated.archive.footer().arrays.len(), 7);
    }

    #[test]
    fn attribute_columns_that_would_exhaust_memory_are_refused() {
        // 7 000 arrays with one distinct key each: array-format would allocate
        // 49 million cells (1.2 GB) while the footer is about a megabyte.
        let n = 7_000u32;
        let mut f = footer(vec![], vec![]);
        for i in 0..n {
            let mut a = array(&format!("a{i}"), vec![1], vec![1], vec![]);
            a.attributes = vec![(i, 0)];
            f.arrays.push(a);
            f.strings.push(format!("k{i}"));
        }
        f.values.push(DiskValue::Bool(true));
        let bytes = segment(&f, &[]);
        let err = validate_footer(&bytes, bytes.len() as u64).unwrap_err();
        assert!(
            matches!(err, FooterProblem::AttributeMemory { keys: 7_000, .. }),
            "{err}"
        );
    }

    /// A footer of arrays `a0`.. whose attribute `units` names value `value`
    /// (string 0 is the key), with `values` in its value pool.
    fn footer_naming_value(arrays: u32, value: u32, values: Vec<DiskValue>) -> Vec<u8> {
        let mut f = footer(vec![], vec![]);
        f.strings = vec!["units".into(), "K".into()];
        f.values = values;
        for i in 0..arrays {
            let mut a = array(&format!("a{i}"), vec![1], vec![1], vec![]);
            a.attributes = vec![(0, value)];
            f.arrays.push(a);
        }
        segment(&f, &[])
    }

    #[test]
    fn attributes_naming_entries_outside_the_pools_are_refused() {
        let bytes = footer_naming_value(2, 5, vec![DiskValue::String(1)]);
        let err = cells(&bytes, "units").unwrap_err();
        assert_eq!(
            err,
            FooterProblem::AttributePool {
                array: "a0".into(),
                pool: "value",
                index: 5,
                len: 1
            }
        );
        let bytes = footer_naming_value(2, 0, vec![DiskValue::StringList(Box::new([1, 9]))]);
        let err = cells(&bytes, "units").unwrap_err();
        assert!(
            matches!(
                err,
                FooterProblem::AttributePool {
                    pool: "string",
                    index: 9,
                    len: 2,
                    ..
                }
            ),
            "{err}"
        );
        // The good footer reads.
        let bytes = footer_naming_value(2, 0, vec![DiskValue::String(1)]);
        let good = cells(&bytes, "units").unwrap();
        assert_eq!(good, Some(vec![Some(Attr::String("K".into())); 2]));
    }

    #[test]
    fn one_arrays_attributes_naming_entries_outside_the_pools_are_refused() {
        let bytes = footer_naming_value(2, 5, vec![DiskValue::String(1)]);
        let validated = validate_footer(&bytes, bytes.len() as u64).unwrap();
        for err in [
            attributes::attribute_of(&validated.archive, 1, "units").unwrap_err(),
            attributes::attributes_of(&validated.archive, 1).unwrap_err(),
        ] {
            assert_eq!(
                err,
                FooterProblem::AttributePool {
                    array: "a1".into(),
                    pool: "value",
                    index: 5,
                    len: 1
                }
            );
        }
        let bytes = footer_naming_value(2, 0, vec![DiskValue::String(1)]);
        let validated = validate_footer(&bytes, bytes.len() as u64).unwrap();
        assert_eq!(
            attributes::attribute_of(&validated.archive, 1, "units").unwrap(),
            Some(Attr::String("K".into()))
        );
        assert_eq!(
            attributes::attribute_of(&validated.archive, 1, "other").unwrap(),
            None
        );
        assert_eq!(
            attributes::attributes_of(&validated.archive, 0).unwrap(),
            vec![("units".to_owned(), Attr::String("K".into()))]
        );
    }

    #[test]
    fn two_arrays_of_one_name_are_refused() {
        let mut f = footer(vec![], vec![]);
        for _ in 0..2 {
            f.arrays.push(array("twice", vec![1], vec![1], vec![]));
        }
        f.arrays
            .insert(1, array("between", vec![1], vec![1], vec![]));
        let bytes = segment(&f, &[]);
        assert_eq!(
            validate_footer(&bytes, bytes.len() as u64).unwrap_err(),
            FooterProblem::DuplicateArray {
                name: "twice".into()
            }
        );
    }

    #[test]
    fn one_large_value_named_by_every_array_is_refused_before_it_exhausts_memory() {
        // 2 000 arrays naming one 1 MB value: 2 GB decoded from a footer of about 1 MB.
        let large = DiskValue::Binary(vec![7u8; 1 << 20].into_boxed_slice());
        let bytes = footer_naming_value(2_000, 0, vec![large]);
        let err = cells(&bytes, "units").unwrap_err();
        assert!(
            matches!(&err, FooterProblem::AttributeValues { key, .. } if key == "units"),
            "{err}"
        );
    }

    #[test]
    fn a_tail_shorter_than_the_trailer_is_refused() {
        assert!(matches!(
            validate_footer(b"ARRF", 4),
            Err(FooterProblem::TailTooShort)
        ));
        let mut t = 100u64.to_le_bytes().to_vec();
        t.extend_from_slice(b"ARRF");
        assert!(
            matches!(
                validate_footer(&t, 12),
                Err(FooterProblem::BeyondTail { size: 100, .. })
            ),
            "footer larger than the bytes read"
        );
    }
}
