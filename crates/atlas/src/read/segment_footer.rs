//! A look at a segment's array-format footer before array-format parses it.
//!
//! array-format 0.15 trusts its own footer: a block's `uncompressed_size`
//! becomes an allocation (a flipped high byte aborts the process), a chunk
//! coordinate past the grid underflows, a shape that lies sizes the output of
//! a read. Its footer types are private, so this module declares the same
//! structs field for field and lets rkyv validate and walk the archive the
//! same way array-format will (same crate, same features, same layout; a test
//! opens the fixtures through both). Nothing is copied out but what the checks
//! need.
//!
//! Checks that make the whole segment unusable: the footer version, the block
//! table (dense ids, every block inside the data region, a zstd block's
//! declared size within what zstd can expand to), and the memory array-format
//! would spend on attribute columns. Checks that make one array unusable
//! (recorded, reported when that array is used): rank agreement between shape,
//! chunk shape and dimension names, chunk extents of zero, the recorded row
//! count against the shape, and every chunk entry (rank, inside the grid,
//! strictly sorted, in an existing block, inside the block, and for
//! fixed-width types exactly the bytes its elements take).

// The mirror types exist for their archived layout; most fields are only read archived.
#![allow(missing_docs, dead_code)]

use std::collections::HashMap;

use array_format::address::BlockId;
use array_format::block::{ArchivedCodecId, CodecId};
use array_format::layout::ChunkEntry;
use array_format::{ArrayStats, DType, FillValue};
use rkyv::util::AlignedVec;
use rkyv::{Archive, Serialize};

/// array-format's footer version this reader understands.
pub(crate) const FOOTER_VERSION: u32 = 6;

/// Bytes of array-format's trailer: `footer_size: u64 LE` then `ARRF`.
const ARRF_TRAILER_LEN: usize = atlas_io::TRAILER_LEN as usize;

/// The most a zstd frame can expand: one 128 KiB RLE block costs 4 bytes.
const ZSTD_MAX_EXPANSION: u64 = 32 * 1024;
/// Slack on top of that for frame headers of tiny blocks.
const ZSTD_SLACK: u64 = 64 * 1024;

/// Bytes one attribute cell costs array-format (`Option<AttributeValue>`).
const ATTRIBUTE_CELL_BYTES: u64 = 24;
/// Attribute columns may take this many bytes whatever the footer's size...
const ATTRIBUTE_FLOOR_BYTES: u64 = 1 << 30;
/// ...or this many times the footer's size, whichever is larger.
const ATTRIBUTE_EXPANSION: u64 = 64;

/// array-format's `Footer`, field for field.
#[derive(Archive, Serialize)]
pub(crate) struct Footer {
    pub version: u32,
    pub blocks: Vec<BlockMeta>,
    pub strings: Vec<String>,
    pub values: Vec<DiskValue>,
    pub arrays: Vec<ArrayMeta>,
}

/// array-format's `BlockMeta`, field for field.
#[derive(Archive, Serialize)]
pub(crate) struct BlockMeta {
    pub id: BlockId,
    pub file_offset: u64,
    pub compressed_size: u64,
    pub uncompressed_size: u64,
    pub codec: CodecId,
}

/// array-format's `ArrayMeta`, field for field.
#[derive(Archive, Serialize)]
pub(crate) struct ArrayMeta {
    pub name: String,
    pub dtype: DType,
    pub shape: Vec<u32>,
    pub dimension_names: Vec<String>,
    pub chunk_shape: Vec<u32>,
    pub chunks: Vec<ChunkEntry>,
    pub fill_value: Option<FillValue>,
    pub attributes: Vec<(u32, u32)>,
    pub stats: Option<ArrayStats>,
}

/// array-format's `DiskValue`, variant for variant.
#[derive(Archive, Serialize)]
pub(crate) enum DiskValue {
    Bool(bool),
    Int8(i8),
    Int16(i16),
    Int32(i32),
    Int64(i64),
    UInt8(u8),
    UInt16(u16),
    UInt32(u32),
    UInt64(u64),
    Float32(f32),
    Float64(f64),
    String(u32),
    Binary(Box<[u8]>),
    BoolList(Box<[bool]>),
    Int8List(Box<[i8]>),
    Int16List(Box<[i16]>),
    Int32List(Box<[i32]>),
    Int64List(Box<[i64]>),
    UInt8List(Box<[u8]>),
    UInt16List(Box<[u16]>),
    UInt32List(Box<[u32]>),
    UInt64List(Box<[u64]>),
    Float32List(Box<[f32]>),
    Float64List(Box<[f64]>),
    StringList(Box<[u32]>),
    BinaryList(Box<[Box<[u8]>]>),
}

/// What screening found acceptable, and what it found wrong with single arrays.
#[derive(Debug, Default)]
pub(crate) struct Screened {
    /// Arrays in the segment.
    pub array_count: usize,
    /// Array name to why it cannot be used.
    pub problems: HashMap<String, String>,
}

/// Screens the footer at the end of `tail` (the last bytes of a segment of
/// `segment_len` bytes, trailer included, already checked by the segment store).
///
/// `Err` means the segment as a whole cannot be handed to array-format.
pub(crate) fn screen(tail: &[u8], segment_len: u64) -> Result<Screened, String> {
    let (footer_bytes, footer_total) = footer_slice(tail)?;
    let data_end = segment_len
        .checked_sub(footer_total)
        .ok_or_else(|| format!("footer of {footer_total} bytes exceeds the segment"))?;
    let mut aligned: AlignedVec = AlignedVec::with_capacity(footer_bytes.len());
    aligned.extend_from_slice(footer_bytes);
    let footer = rkyv::access::<ArchivedFooter, rkyv::rancor::Error>(&aligned)
        .map_err(|e| format!("array-format footer does not validate: {e}"))?;
    let version = footer.version.to_native();
    if version != FOOTER_VERSION {
        return Err(format!(
            "array-format footer version {version}, expected {FOOTER_VERSION}"
        ));
    }
    let blocks = screen_blocks(footer, data_end)?;
    screen_attribute_memory(footer, footer_bytes.len() as u64)?;
    let mut screened = Screened {
        array_count: footer.arrays.len(),
        problems: HashMap::new(),
    };
    for array in footer.arrays.iter() {
        if let Err(problem) = screen_array(array, &blocks) {
            screened
                .problems
                .insert(array.name.as_str().to_owned(), problem);
        }
    }
    Ok(screened)
}

/// The footer bytes in front of the trailer, and footer + trailer length.
fn footer_slice(tail: &[u8]) -> Result<(&[u8], u64), String> {
    let trailer_start = tail
        .len()
        .checked_sub(ARRF_TRAILER_LEN)
        .ok_or("segment tail shorter than the array-format trailer")?;
    let size_bytes: [u8; 8] = tail
        .get(trailer_start..trailer_start.saturating_add(8))
        .and_then(|b| b.try_into().ok())
        .ok_or("segment tail shorter than the array-format trailer")?;
    let footer_size = usize::try_from(u64::from_le_bytes(size_bytes))
        .map_err(|_| "array-format footer size overflows".to_owned())?;
    let footer_start = trailer_start
        .checked_sub(footer_size)
        .ok_or("array-format footer larger than the bytes read")?;
    let footer = tail
        .get(footer_start..trailer_start)
        .ok_or("array-format footer larger than the bytes read")?;
    let total = (footer_size as u64).saturating_add(ARRF_TRAILER_LEN as u64);
    Ok((footer, total))
}

/// What a chunk check needs to know about a block: the bytes it decodes to.
struct BlockBound {
    decoded_len: u64,
}

fn screen_blocks(footer: &ArchivedFooter, data_end: u64) -> Result<Vec<BlockBound>, String> {
    let mut out = Vec::with_capacity(footer.blocks.len());
    for (i, block) in footer.blocks.iter().enumerate() {
        let id = block.id.0.to_native();
        if usize::try_from(id).ok() != Some(i) {
            return Err(format!("block {i} carries id {id}"));
        }
        let offset = block.file_offset.to_native();
        let compressed = block.compressed_size.to_native();
        let uncompressed = block.uncompressed_size.to_native();
        let end = offset
            .checked_add(compressed)
            .ok_or_else(|| format!("block {i} range overflows"))?;
        if end > data_end {
            return Err(format!(
                "block {i} ends at byte {end}, past the data region of {data_end} bytes"
            ));
        }
        let decoded_len = match &block.codec {
            ArchivedCodecId::None => compressed,
            ArchivedCodecId::Named(name) if name.as_str() == "zstd" => {
                // zstd allocates the declared size up front: bound it by what
                // the compressed bytes can possibly expand to.
                let ceiling = compressed
                    .saturating_mul(ZSTD_MAX_EXPANSION)
                    .saturating_add(ZSTD_SLACK);
                if uncompressed > ceiling {
                    return Err(format!(
                        "block {i} claims {uncompressed} bytes from {compressed} compressed (zstd expands at most {ZSTD_MAX_EXPANSION}x)"
                    ));
                }
                uncompressed
            }
            // LZ4 sizes its output from the block's own prefix (at most 4 GiB);
            // unknown codecs fail at read time. Neither allocates the declared size.
            ArchivedCodecId::Named(_) => uncompressed,
        };
        out.push(BlockBound { decoded_len });
    }
    Ok(out)
}

/// array-format allocates one cell per array per distinct attribute key.
fn screen_attribute_memory(footer: &ArchivedFooter, footer_len: u64) -> Result<(), String> {
    let mut keys = std::collections::HashSet::new();
    for array in footer.arrays.iter() {
        for pair in array.attributes.iter() {
            keys.insert(pair.0.to_native());
        }
    }
    let cells = (keys.len() as u64).saturating_mul(footer.arrays.len() as u64);
    let bytes = cells.saturating_mul(ATTRIBUTE_CELL_BYTES);
    let budget = footer_len
        .saturating_mul(ATTRIBUTE_EXPANSION)
        .max(ATTRIBUTE_FLOOR_BYTES);
    if bytes > budget {
        return Err(format!(
            "{} attribute keys over {} arrays would take {bytes} bytes in memory",
            keys.len(),
            footer.arrays.len()
        ));
    }
    Ok(())
}

fn screen_array(array: &ArchivedArrayMeta, blocks: &[BlockBound]) -> Result<(), String> {
    let shape: Vec<u64> = array
        .shape
        .iter()
        .map(|d| u64::from(d.to_native()))
        .collect();
    let chunk: Vec<u64> = array
        .chunk_shape
        .iter()
        .map(|d| u64::from(d.to_native()))
        .collect();
    let rank = shape.len();
    if chunk.len() != rank {
        return Err(format!(
            "chunk shape has {} axes, shape has {rank}",
            chunk.len()
        ));
    }
    let names = array.dimension_names.len();
    if names != 0 && names != rank {
        return Err(format!("{names} dimension names for {rank} axes"));
    }
    if let Some(axis) = chunk.iter().position(|&c| c == 0) {
        return Err(format!("chunk extent 0 on axis {axis}"));
    }
    let elements = shape
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d))
        .ok_or("element count overflows u64")?;
    if let Some(stats) = array.stats.as_ref() {
        let rows = stats.row_count.to_native();
        let nulls = stats.null_count.to_native();
        if rows != elements {
            return Err(format!(
                "shape {shape:?} holds {elements} elements, but the statistics count {rows}"
            ));
        }
        if nulls > rows {
            return Err(format!("{nulls} nulls in {rows} rows"));
        }
    }
    let element_size = rkyv::deserialize::<DType, rkyv::rancor::Error>(&array.dtype)
        .map_err(|e| format!("dtype does not decode: {e}"))?
        .element_size()
        .map(|s| s as u64);
    let mut previous: Option<Vec<u32>> = None;
    for entry in array.chunks.iter() {
        let coord: Vec<u32> = entry.coord.iter().map(|c| c.to_native()).collect();
        if coord.len() != rank {
            return Err(format!(
                "chunk coordinate of {} axes in an array of {rank}",
                coord.len()
            ));
        }
        let mut chunk_elements: u64 = 1;
        for ((&c, &extent), &len) in coord.iter().zip(&chunk).zip(&shape) {
            let start = u64::from(c).saturating_mul(extent);
            if start >= len {
                return Err(format!("chunk at {coord:?} lies outside shape {shape:?}"));
            }
            chunk_elements = chunk_elements.saturating_mul(extent.min(len.saturating_sub(start)));
        }
        if previous.as_ref().is_some_and(|p| *p >= coord) {
            return Err("chunk table is not strictly sorted".to_owned());
        }
        previous = Some(coord);
        let address = &entry.address;
        let block_id = address.block_id.0.to_native();
        let block = usize::try_from(block_id)
            .ok()
            .and_then(|b| blocks.get(b))
            .ok_or_else(|| format!("chunk names block {block_id}, which does not exist"))?;
        let offset = u64::from(address.offset.to_native());
        let size = u64::from(address.size.to_native());
        if offset.saturating_add(size) > block.decoded_len {
            return Err(format!(
                "chunk bytes {offset}..{} run past block {block_id} of {} bytes",
                offset.saturating_add(size),
                block.decoded_len
            ));
        }
        if let Some(element_size) = element_size {
            let expected = chunk_elements.saturating_mul(element_size);
            if size != expected {
                return Err(format!(
                    "chunk of {chunk_elements} elements holds {size} bytes, expected {expected}"
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use array_format::address::ChunkAddress;
    use array_format::{ArrayWriter, AttributeValue, WriterConfig, ZstdCodec};
    use object_store::ObjectStoreExt;

    use super::*;

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

    #[tokio::test]
    async fn the_mirror_reads_array_formats_own_footers() {
        let mut w = ArrayWriter::new(WriterConfig::new(ZstdCodec::default()));
        w.define_array::<f32>(
            "a",
            vec!["x".into()],
            vec![5],
            Some(vec![2]),
            Some(FillValue::Float(-1.0)),
        )
        .unwrap();
        let data = ndarray::Array::from_vec(vec![1.0f32, 2.0, 3.0]).into_dyn();
        w.write_array("a", vec![1], data.view()).unwrap();
        w.set_attribute("a", "units", AttributeValue::String("K".into()))
            .unwrap();
        w.define_array::<String>("s", vec![], vec![2], None, None)
            .unwrap();
        let strings = ndarray::Array::from_vec(vec!["x".to_owned(), "yz".to_owned()]).into_dyn();
        w.write_array("s", vec![0], strings.view()).unwrap();
        let store = Arc::new(object_store::memory::InMemory::new());
        let path = object_store::path::Path::from("seg");
        let file = w.finish(store.clone(), path.clone()).await.unwrap();
        let bytes = store.get(&path).await.unwrap().bytes().await.unwrap();

        let screened = screen(&bytes, bytes.len() as u64).unwrap();
        assert_eq!(screened.array_count, 2);
        assert!(screened.problems.is_empty(), "{:?}", screened.problems);

        let (footer_bytes, _) = footer_slice(&bytes).unwrap();
        let mut aligned: AlignedVec = AlignedVec::new();
        aligned.extend_from_slice(footer_bytes);
        let mirror = rkyv::access::<ArchivedFooter, rkyv::rancor::Error>(&aligned).unwrap();
        for (ours, theirs) in mirror.arrays.iter().zip(file.arrays()) {
            assert_eq!(ours.name.as_str(), theirs.name.as_str());
            let shape: Vec<u32> = ours.shape.iter().map(|d| d.to_native()).collect();
            assert_eq!(shape, theirs.shape);
            let coords: Vec<Vec<u32>> = ours
                .chunks
                .iter()
                .map(|c| c.coord.iter().map(|x| x.to_native()).collect())
                .collect();
            let expected: Vec<Vec<u32>> = theirs.written_chunks().map(<[u32]>::to_vec).collect();
            assert_eq!(coords, expected);
        }
        assert_eq!(mirror.strings.len(), 2, "key and value strings");
        assert!(!mirror.blocks.is_empty());
    }

    #[test]
    fn a_zstd_block_claiming_more_than_zstd_can_expand_is_refused() {
        let data = [0u8; 40];
        let claim = 1u64 << 56;
        let f = footer(
            vec![block(claim, 40, "zstd")],
            vec![array("a", vec![4], vec![4], vec![vec![0]])],
        );
        let bytes = segment(&f, &data);
        let err = screen(&bytes, bytes.len() as u64).unwrap_err();
        assert!(err.contains("claims"), "{err}");
        // LZ4 and stored blocks do not allocate the declared size.
        let f = footer(vec![block(claim, 40, "lz4")], vec![]);
        let bytes = segment(&f, &data);
        assert!(screen(&bytes, bytes.len() as u64).is_ok());
    }

    /// End to end: without the screen, this read would ask zstd for a 2^56-byte
    /// buffer and the allocator would abort the process.
    #[tokio::test]
    async fn an_absurd_block_size_is_an_error_through_the_facade_not_an_abort() {
        let data = zstd::bulk::compress(&[0u8; 16], 3).unwrap();
        let f = footer(
            vec![block(1 << 56, data.len() as u64, "zstd")],
            vec![array("d0", vec![4], vec![4], vec![vec![0]])],
        );
        let seg = segment(&f, &data);
        let mut builder = atlas_format::FooterBuilder::new(atlas_format::Codec::Zstd, 0);
        let schema = builder.intern_schema(&atlas_format::DatasetSchema {
            arrays: vec![atlas_format::ArrayDecl {
                name: "v".into(),
                dtype: atlas_format::DType::Float32,
                attributes: vec![],
            }],
            attributes: vec![],
        });
        builder.push_dataset("d0", schema).unwrap();
        builder.push_variable("v", seg.len() as u64).unwrap();
        let container = atlas_format::assemble(&builder.finish(), &[&seg]).unwrap();
        let op = opendal::Operator::new(opendal::services::Memory::default()).unwrap();
        op.write("data.atlas", container).await.unwrap();
        let atlas = crate::Atlas::open(op, "").await.unwrap();
        let err = atlas
            .dataset("d0")
            .unwrap()
            .read_array::<f32>("v", &[], &[])
            .await
            .unwrap_err();
        assert!(
            matches!(&err, crate::AtlasError::CorruptCollection { what } if what.contains("claims")),
            "{err}"
        );
    }

    #[test]
    fn blocks_must_lie_in_the_data_region_and_be_numbered_densely() {
        let data = [0u8; 40];
        let f = footer(vec![block(16, 41, "")], vec![]);
        let bytes = segment(&f, &data);
        assert!(
            screen(&bytes, bytes.len() as u64)
                .unwrap_err()
                .contains("past the data region")
        );
        let mut b = block(16, 16, "");
        b.id = BlockId(3);
        let bytes = segment(&footer(vec![b], vec![]), &data);
        assert!(
            screen(&bytes, bytes.len() as u64)
                .unwrap_err()
                .contains("carries id")
        );
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
        let screened = screen(&bytes, bytes.len() as u64).unwrap();
        let mut flagged: Vec<&str> = screened.problems.keys().map(String::as_str).collect();
        flagged.sort_unstable();
        assert_eq!(
            flagged,
            ["outside", "rank", "rows", "size", "unsorted", "zero"]
        );
        assert_eq!(screened.array_count, 7);
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
        let err = screen(&bytes, bytes.len() as u64).unwrap_err();
        assert!(err.contains("attribute keys"), "{err}");
    }

    #[test]
    fn a_tail_shorter_than_the_trailer_is_refused() {
        assert!(screen(b"ARRF", 4).is_err());
        let mut t = 100u64.to_le_bytes().to_vec();
        t.extend_from_slice(b"ARRF");
        assert!(screen(&t, 12).is_err(), "footer larger than the bytes read");
    }
}
