//! The footer schema: array-format's footer structs, declared again field for
//! field, so a footer can be validated and read without array-format.
//!
//! array-format 0.15 keeps its footer types private and trusts the footer it
//! reads, so a corrupt one can abort the process inside its open. To look at
//! a footer before array-format does, this crate needs types with exactly the
//! same archived layout: these. rkyv (same version, same features as
//! array-format's) validates a footer's bytes against them; then validation
//! ([`crate::footer::validate`]), the one-array lookup
//! ([`crate::footer::lookup`]) and the digest ([`crate::footer::digest`])
//! read the validated archive in place, and the writer
//! ([`crate::write::pack`]) archives its footers through them. A test writes
//! a segment with array-format and reads its footer back through this
//! schema, so a layout that drifts fails here first.
//!
//! Upgrading array-format means re-checking these against its private types.

// The schema types exist for their archived layout; most fields are only read archived.
#![allow(missing_docs, dead_code)]

use array_format::address::BlockId;
use array_format::block::CodecId;
use array_format::layout::ChunkEntry;
use array_format::{ArrayStats, DType, FillValue};
use rkyv::{Archive, Deserialize, Serialize};

/// Alignment an archive's bytes must have to be read in place (rkyv's
/// `AlignedVec`, which array-format archives into and reads from).
pub(crate) const ARCHIVE_ALIGN: usize = 16;

/// array-format's footer version this schema matches (validation refuses any other).
pub(crate) const FOOTER_VERSION: u32 = 6;

/// array-format's `Footer`, field for field.
#[derive(Archive, Serialize, Deserialize)]
pub(crate) struct Footer {
    pub version: u32,
    pub blocks: Vec<BlockMeta>,
    pub strings: Vec<String>,
    pub values: Vec<DiskValue>,
    pub arrays: Vec<ArrayMeta>,
}

/// array-format's `BlockMeta`, field for field.
#[derive(Debug, Clone, PartialEq, Archive, Serialize, Deserialize)]
pub(crate) struct BlockMeta {
    pub id: BlockId,
    pub file_offset: u64,
    pub compressed_size: u64,
    pub uncompressed_size: u64,
    pub codec: CodecId,
}

/// array-format's `ArrayMeta`, field for field.
#[derive(Debug, Clone, PartialEq, Archive, Serialize, Deserialize)]
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
#[derive(Archive, Serialize, Deserialize)]
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use array_format::{ArrayWriter, AttributeValue, WriterConfig, ZstdCodec};
    use object_store::ObjectStoreExt;
    use rkyv::util::AlignedVec;

    use super::*;
    use crate::footer::tail::ARRF_TRAILER_LEN;

    #[tokio::test]
    async fn the_schema_reads_array_formats_own_footers() {
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

        let validated =
            crate::footer::validate::validate_footer(&bytes, bytes.len() as u64).unwrap();
        assert_eq!(validated.archive.footer().arrays.len(), 2);
        assert!(
            validated.checked.problems.is_empty(),
            "{:?}",
            validated.checked.problems
        );

        let size_at = bytes.len() - ARRF_TRAILER_LEN as usize;
        let size = u64::from_le_bytes(bytes[size_at..size_at + 8].try_into().unwrap());
        let footer_bytes = &bytes[size_at - size as usize..size_at];
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
}
