//! What the calls across datasets need of a segment, taken from its footer
//! without array-format's open: each array's name, type, shape and
//! statistics (one attribute of every array is read by `attributes`).
//!
//! array-format's open decodes its whole footer into memory (chunk tables,
//! attribute columns, an index by name), which for a segment of tens of
//! thousands of arrays costs more than reading the footer. A fold of
//! statistics needs three fields per array, so they are read off the archive
//! while validation validates and walks it anyway: one validation, no full
//! decode. The validated archive is kept for an attribute asked for next
//! (only its values decoded) and for an open that may follow, which then
//! neither reads nor validates the footer again.

use std::collections::HashMap;
use std::sync::Arc;

use smallvec::SmallVec;
use smol_str::SmolStr;

use crate::error::SegmentError;
use array_format::address::BlockId;
use array_format::block::{ArchivedCodecId, CodecId};

use crate::footer::schema::{ArchivedArrayMeta, ArchivedBlockMeta, BlockMeta};
use crate::footer::validate::ArrayProblem;
use crate::read::segment::Segment;
use crate::types::value::{
    ArrayStats, Value, dtype_from_archived, fill_from_stored, stats_from_archived,
};

/// One array of a segment as the statistics calls see it. Its lists are
/// inline for the usual few axes and one chunk: a segment's digest or a
/// view holds tens of thousands of these, and each costs no allocation.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ArrayDigest {
    /// The array's (its dataset's) name.
    pub name: SmolStr,
    /// Its element type.
    pub dtype: atlas_format::DType,
    /// The statistics its writer recorded, if any.
    pub stats: Option<ArrayStats>,
    /// The lowest id of the data blocks its written chunks lie in (None:
    /// nothing written). Writers fill blocks in array order, so arrays
    /// sharing this id share a block: one read serves them all.
    pub first_block: Option<u32>,
    /// Its shape, as the segment records it (what a collection-wide view
    /// needs to lay datasets end to end without opening the segment).
    pub shape: SmallVec<[u64; 4]>,
    /// Its chunk shape.
    pub chunk_shape: SmallVec<[u32; 4]>,
    /// The names of its axes (may be empty); shared between arrays that
    /// name them alike, as a segment's arrays mostly do.
    pub dimension_names: Arc<[String]>,
    /// Its fill value as stored (an integer for a timestamp array).
    pub fill: Option<Value>,
    /// Where each written chunk lies, in the segment's order.
    pub chunks: SmallVec<[ChunkPlace; 1]>,
}

/// Where one written chunk of an array lies: its coordinate in the array's
/// chunk grid and its bytes in a decoded block. With the segment's
/// [`BlockPlace`]s, enough to read the chunk without the segment footer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkPlace {
    /// The chunk's coordinate, one index per axis.
    pub coord: SmallVec<[u32; 4]>,
    /// The block holding it.
    pub block: u32,
    /// Its first byte in the decoded block.
    pub offset: u32,
    /// Its length in the decoded block.
    pub size: u32,
}

/// One data block of a segment as its footer records it (the block's id is
/// its position in the segment's table).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockPlace {
    /// Its first byte in the segment.
    pub offset: u64,
    /// Bytes stored.
    pub stored: u64,
    /// Bytes it decodes to.
    pub decoded: u64,
    /// Its codec's name (`None`: stored uncompressed).
    pub codec: Option<String>,
}

impl ArrayDigest {
    /// The digest of an array known from elsewhere than its footer (a
    /// dataset index), for [`ContainerSegments::open_placed`](crate::ContainerSegments::open_placed):
    /// no statistics.
    pub fn placed(
        name: SmolStr,
        dtype: atlas_format::DType,
        shape: SmallVec<[u64; 4]>,
        chunk_shape: SmallVec<[u32; 4]>,
        dimension_names: Arc<[String]>,
        fill: Option<Value>,
        chunks: SmallVec<[ChunkPlace; 1]>,
    ) -> Self {
        let first_block = chunks.iter().map(|c| c.block).min();
        ArrayDigest {
            name,
            dtype,
            stats: None,
            first_block,
            shape,
            chunk_shape,
            dimension_names,
            fill,
            chunks,
        }
    }
}

/// Every array of one segment, in segment order, with what validation found
/// wrong with single arrays.
#[derive(Debug, Clone)]
pub struct SegmentDigest {
    segment: String,
    arrays: Vec<ArrayDigest>,
    problems: HashMap<String, ArrayProblem>,
    blocks: Vec<BlockPlace>,
    data_end: u64,
}

impl SegmentDigest {
    /// The arrays, in segment order (damaged ones included: see [`SegmentDigest::check`]).
    pub fn arrays(&self) -> &[ArrayDigest] {
        &self.arrays
    }

    /// The segment's data blocks, by id.
    pub fn blocks(&self) -> &[BlockPlace] {
        &self.blocks
    }

    /// Where the segment's data region ends (its footer starts).
    pub fn data_end(&self) -> u64 {
        self.data_end
    }

    /// `Err` if validation found array `array` unusable, as [`Segment::check`].
    pub fn check(&self, array: &str) -> Result<(), SegmentError> {
        SegmentError::validated(&self.segment, array, &self.problems)
    }

    /// The digest of a segment already open.
    pub(crate) fn of_segment(segment: &Segment) -> Self {
        let first_blocks = segment.first_blocks().iter().copied();
        let mut dims = SharedDims::default();
        Self {
            segment: segment.name().to_owned(),
            arrays: segment
                .arrays()
                .zip(first_blocks.chain(std::iter::repeat(None)))
                .map(|(a, first_block)| a.digest(first_block, &mut dims))
                .collect(),
            problems: segment.problems().clone(),
            blocks: segment.block_places(),
            data_end: segment.data_end(),
        }
    }

    /// A digest from arrays read off the footer and validation's findings,
    /// with the segment's blocks and the end of its data region.
    pub(crate) fn new(
        segment: &str,
        arrays: Vec<ArrayDigest>,
        problems: HashMap<String, ArrayProblem>,
        blocks: Vec<BlockPlace>,
        data_end: u64,
    ) -> Self {
        Self {
            segment: segment.to_owned(),
            arrays,
            problems,
            blocks,
            data_end,
        }
    }
}

/// Axis names as the digests of one segment's arrays hold them: one
/// allocation shared by consecutive arrays that name their axes alike, as
/// a segment's arrays mostly do, instead of one per array.
#[derive(Debug, Default)]
pub(crate) struct SharedDims(Option<Arc<[String]>>);

impl SharedDims {
    /// `names`, as the previous array's when they are the same.
    pub(crate) fn of<'a, I>(&mut self, names: I) -> Arc<[String]>
    where
        I: IntoIterator<Item = &'a str>,
        I::IntoIter: Clone,
    {
        let names = names.into_iter();
        if let Some(last) = &self.0
            && last.iter().map(String::as_str).eq(names.clone())
        {
            return Arc::clone(last);
        }
        let dims: Arc<[String]> = names.map(str::to_owned).collect();
        self.0 = Some(Arc::clone(&dims));
        dims
    }
}

/// The digest of one archived array (already validated), whose written
/// chunks start in block `first_block`; its axis names from `dims`.
pub(crate) fn digest_of(
    array: &ArchivedArrayMeta,
    first_block: Option<u32>,
    dims: &mut SharedDims,
) -> ArrayDigest {
    ArrayDigest {
        name: SmolStr::new(array.name.as_str()),
        dtype: dtype_from_archived(&array.dtype),
        stats: array.stats.as_ref().map(stats_from_archived),
        first_block,
        shape: array
            .shape
            .iter()
            .map(|n| u64::from(n.to_native()))
            .collect(),
        chunk_shape: array.chunk_shape.iter().map(|n| n.to_native()).collect(),
        dimension_names: dims.of(array.dimension_names.iter().map(|n| n.as_str())),
        fill: rkyv::deserialize::<Option<array_format::FillValue>, rkyv::rancor::Error>(
            &array.fill_value,
        )
        .ok()
        .flatten()
        .as_ref()
        .map(fill_from_stored),
        chunks: array
            .chunks
            .iter()
            .map(|c| ChunkPlace {
                coord: c.coord.iter().map(|x| x.to_native()).collect(),
                block: c.address.block_id.0.to_native(),
                offset: c.address.offset.to_native(),
                size: c.address.size.to_native(),
            })
            .collect(),
    }
}

/// The places of an archived footer's blocks.
pub(crate) fn block_places(blocks: &[ArchivedBlockMeta]) -> Vec<BlockPlace> {
    blocks
        .iter()
        .map(|b| BlockPlace {
            offset: b.file_offset.to_native(),
            stored: b.compressed_size.to_native(),
            decoded: b.uncompressed_size.to_native(),
            codec: match &b.codec {
                ArchivedCodecId::None => None,
                ArchivedCodecId::Named(name) => Some(name.as_str().to_owned()),
            },
        })
        .collect()
}

/// A stored block table from its places (ids are positions).
pub(crate) fn block_metas(blocks: &[BlockPlace]) -> Result<Vec<BlockMeta>, SegmentError> {
    blocks
        .iter()
        .enumerate()
        .map(|(id, b)| {
            Ok(BlockMeta {
                id: BlockId(
                    u32::try_from(id)
                        .map_err(|_| SegmentError::corrupt("", None, "more than 2^32 blocks"))?,
                ),
                file_offset: b.offset,
                compressed_size: b.stored,
                uncompressed_size: b.decoded,
                codec: match &b.codec {
                    None => CodecId::None,
                    Some(name) => CodecId::Named(name.clone()),
                },
            })
        })
        .collect()
}
