//! The footer's bytes, walked with `rmp` and written by hand: the dataset map
//! is a sequence, dtypes carry the wire names the other v8 writer uses, and
//! an integer field accepts any MessagePack width.

#![cfg(test)]

use crate::common;

use atlas_format::{
    Codec, CollectionFooter, DType, DatasetSchema, FooterBuilder, FormatError, InternedSchema,
    VariableEntry,
};
use common::{Mp, array_elements, decl, footer_fields, footer_prefix, limits, unzstd, zstd};
use indexmap::IndexMap;
use smallvec::smallvec;
use smol_str::SmolStr;

fn small_footer(datasets: usize) -> CollectionFooter {
    let mut b = FooterBuilder::new(Codec::Lz4, 1_700_000_000_123);
    let s0 = b.intern_schema(&DatasetSchema {
        arrays: vec![decl("t", DType::Float32, &[])],
        attributes: vec![],
    });
    let s1 = b.intern_schema(&DatasetSchema {
        arrays: vec![decl("t", DType::Int64, &[])],
        attributes: vec![],
    });
    for i in 0..datasets {
        b.push_dataset(&format!("ds{i}"), if i % 3 == 1 { s1 } else { s0 })
            .unwrap();
    }
    b.push_variable("t", 1234).unwrap();
    b.finish()
}

#[test]
fn the_wire_form_of_the_dataset_map_is_a_sequence() {
    // 20 datasets: past the 15 a fixarray/fixmap can hold, so the marker is 16-bit.
    for count in [3usize, 20] {
        let footer = small_footer(count);
        let msgpack = unzstd(&footer.encode().unwrap());
        let fields = footer_fields(&msgpack);
        assert_eq!(fields.len(), 8, "the footer is an 8-element array");

        let mut rd = fields[7];
        let mut peek = rd;
        let marker = rmp::decode::read_marker(&mut peek).unwrap();
        assert!(
            matches!(
                marker,
                rmp::Marker::FixArray(_) | rmp::Marker::Array16 | rmp::Marker::Array32
            ),
            "field 7 must be an array, found {marker:?}"
        );
        let n = rmp::decode::read_array_len(&mut rd).unwrap();
        assert_eq!(n as usize, count);
        for (i, (name, &schema)) in footer.datasets.iter().enumerate() {
            assert_eq!(
                rmp::decode::read_array_len(&mut rd).unwrap(),
                2,
                "entry {i} is a (name, schema) pair"
            );
            let mut buf = vec![0u8; 64];
            let got = rmp::decode::read_str(&mut rd, &mut buf).unwrap();
            assert_eq!(got, name.as_str());
            let index: u32 = rmp::decode::read_int(&mut rd).unwrap();
            assert_eq!(index, schema);
            assert_eq!(name, &format!("ds{i}"), "position is the ordinal");
        }
        assert!(rd.is_empty());
    }
}

#[test]
fn a_repeated_dataset_name_is_rejected() {
    let with = |second: &str| {
        let mut mp = footer_prefix();
        mp.arr(3)
            .arr(2)
            .str("a")
            .uint(0)
            .arr(2)
            .str(second)
            .uint(0)
            .arr(2)
            .str("c")
            .uint(0);
        CollectionFooter::decode(&zstd(&mp.0), &limits())
    };
    // The same bytes with distinct names decode: only the repeat is at fault.
    let fine = with("b").unwrap();
    assert_eq!(
        fine.datasets.keys().collect::<Vec<_>>(),
        ["a", "b", "c"].map(SmolStr::new).iter().collect::<Vec<_>>()
    );
    let err = with("a").unwrap_err();
    assert!(
        matches!(&err, FormatError::CorruptCollection { what, .. } if what.contains("\"a\"")),
        "{err:?}"
    );
}

#[test]
fn a_map_where_the_sequence_belongs_is_rejected() {
    let mut seq = footer_prefix();
    seq.arr(2).arr(2).str("a").uint(0).arr(2).str("b").uint(0);
    assert_eq!(
        CollectionFooter::decode(&zstd(&seq.0), &limits())
            .unwrap()
            .datasets
            .len(),
        2
    );

    let mut map = footer_prefix();
    map.map(2).str("a").uint(0).str("b").uint(0);
    let err = CollectionFooter::decode(&zstd(&map.0), &limits()).unwrap_err();
    assert!(
        matches!(err, FormatError::CorruptCollection { .. }),
        "{err:?}"
    );
    // A map with a repeated key is refused as well (it is a map first of all).
    let mut dup = footer_prefix();
    dup.map(2).str("a").uint(0).str("a").uint(0);
    assert!(matches!(
        CollectionFooter::decode(&zstd(&dup.0), &limits()),
        Err(FormatError::CorruptCollection { .. })
    ));
}

/// Every DType kind with the MessagePack that wire-notes.md gives for it.
fn all_kinds() -> Vec<(DType, Vec<u8>)> {
    let bare = |s: &str| Mp::default().str(s).0.clone();
    let mut kinds = vec![
        (DType::Bool, bare("bool")),
        (DType::Int8, bare("int8")),
        (DType::Int16, bare("int16")),
        (DType::Int32, bare("int32")),
        (DType::Int64, bare("int64")),
        (DType::UInt8, bare("u_int8")),
        (DType::UInt16, bare("u_int16")),
        (DType::UInt32, bare("u_int32")),
        (DType::UInt64, bare("u_int64")),
        (DType::Float32, bare("float32")),
        (DType::Float64, bare("float64")),
        (DType::String, bare("string")),
        (DType::Binary, bare("binary")),
        (DType::TimestampNs, bare("timestamp_nanoseconds")),
    ];
    kinds.push((
        DType::FixedSizeList {
            child: Box::new(DType::Float32),
            size: 3,
        },
        Mp::default()
            .map(1)
            .str("fixed_size_list")
            .arr(2)
            .str("float32")
            .uint(3)
            .0
            .clone(),
    ));
    kinds.push((
        DType::List {
            child: Box::new(DType::String),
        },
        Mp::default()
            .map(1)
            .str("list")
            .arr(1)
            .str("string")
            .0
            .clone(),
    ));
    kinds
}

#[test]
fn every_dtype_kind_has_the_wire_name_of_the_other_writer_and_decodes_back() {
    let mut kinds = all_kinds();
    assert_eq!(kinds.len(), 16);
    // A nested one as well: a list of fixed-size lists of u16, size 70000 (a u32 on the wire).
    kinds.push((
        DType::List {
            child: Box::new(DType::FixedSizeList {
                child: Box::new(DType::UInt16),
                size: 70_000,
            }),
        },
        Mp::default()
            .map(1)
            .str("list")
            .arr(1)
            .map(1)
            .str("fixed_size_list")
            .arr(2)
            .str("u_int16")
            .uint(70_000)
            .0
            .clone(),
    ));

    // Encode: through the footer, element by element of field 4.
    let mut footer = CollectionFooter::new(Codec::Zstd, 0);
    footer.dtype_pool = kinds.iter().map(|(d, _)| d.clone()).collect();
    let msgpack = footer.to_msgpack().unwrap();
    let fields = footer_fields(&msgpack);
    let pool = array_elements(fields[4]);
    assert_eq!(pool.len(), kinds.len());
    for ((dtype, expected), got) in kinds.iter().zip(&pool) {
        assert_eq!(got, expected, "{dtype:?} encodes as {got:x?}");
    }

    // Decode: hand-written bytes of the whole footer.
    let mut mp = Mp::default();
    mp.arr(8).uint(8).str("Zstd").sint(0).arr(0);
    mp.arr(kinds.len() as u32);
    for (_, bytes) in &kinds {
        mp.raw(bytes);
    }
    mp.arr(0).arr(0).arr(0);
    let decoded = CollectionFooter::decode(&zstd(&mp.0), &limits()).unwrap();
    assert_eq!(decoded, footer);
    assert_eq!(mp.0, msgpack, "the whole footer is byte-identical");
}

#[test]
fn an_unknown_dtype_name_is_corrupt() {
    for bad in ["uint8", "Float32", "timestamp_ns", "float16"] {
        let mut mp = Mp::default();
        mp.arr(8)
            .uint(8)
            .str("Zstd")
            .sint(0)
            .arr(0)
            .arr(1)
            .str(bad)
            .arr(0)
            .arr(0)
            .arr(0);
        assert!(
            matches!(
                CollectionFooter::decode(&zstd(&mp.0), &limits()),
                Err(FormatError::CorruptCollection { .. })
            ),
            "{bad:?} should be refused"
        );
    }
}

/// How to write an unsigned integer field.
#[derive(Clone, Copy, Debug)]
enum Width {
    Smallest,
    U8,
    U16,
    U32,
    U64,
    I8,
    I16,
    I32,
    I64,
}

fn write_uint(mp: &mut Mp, w: Width, v: u64) {
    let out = &mut mp.0;
    match w {
        Width::Smallest => {
            rmp::encode::write_uint(out, v).unwrap();
        }
        Width::U8 => rmp::encode::write_u8(out, v as u8).unwrap(),
        Width::U16 => rmp::encode::write_u16(out, v as u16).unwrap(),
        Width::U32 => rmp::encode::write_u32(out, v as u32).unwrap(),
        Width::U64 => rmp::encode::write_u64(out, v).unwrap(),
        Width::I8 => rmp::encode::write_i8(out, v as i8).unwrap(),
        Width::I16 => rmp::encode::write_i16(out, v as i16).unwrap(),
        Width::I32 => rmp::encode::write_i32(out, v as i32).unwrap(),
        Width::I64 => rmp::encode::write_i64(out, v as i64).unwrap(),
    }
}

/// A footer with every kind of integer field, each written with `w`.
fn footer_with_ints(w: Width, created: i64) -> Vec<u8> {
    let mut mp = Mp::default();
    mp.arr(8);
    write_uint(&mut mp, w, 8); // version
    mp.str("Uncompressed");
    match w {
        // The signed field in a signed width of the same size.
        Width::Smallest => {
            mp.sint(created);
        }
        _ => write_uint(&mut mp, w, created as u64),
    }
    mp.arr(2).str("t").str("units"); // string_pool
    mp.arr(2)
        .str("float32")
        .map(1)
        .str("list")
        .arr(1)
        .str("string");
    // schema_pool: [[[ [0,0] ], [ [1,1] ], [ [0, [[1,1]]] ]]]
    mp.arr(1).arr(3);
    mp.arr(1).arr(2);
    write_uint(&mut mp, w, 0);
    write_uint(&mut mp, w, 0);
    mp.arr(1).arr(2);
    write_uint(&mut mp, w, 1);
    write_uint(&mut mp, w, 1);
    mp.arr(1).arr(2);
    write_uint(&mut mp, w, 0);
    mp.arr(1).arr(2);
    write_uint(&mut mp, w, 1);
    write_uint(&mut mp, w, 1);
    // variables: [[0, 8, 100]]
    mp.arr(1).arr(3);
    write_uint(&mut mp, w, 0);
    write_uint(&mut mp, w, 8);
    write_uint(&mut mp, w, 100);
    // datasets: [["a", 0]]
    mp.arr(1).arr(2).str("a");
    write_uint(&mut mp, w, 0);
    mp.0
}

fn expected_footer(created: i64) -> CollectionFooter {
    let mut datasets = IndexMap::new();
    datasets.insert(SmolStr::new("a"), 0);
    CollectionFooter {
        version: 8,
        codec: Codec::Uncompressed,
        created_unix_ms: created,
        string_pool: vec!["t".into(), "units".into()],
        dtype_pool: vec![
            DType::Float32,
            DType::List {
                child: Box::new(DType::String),
            },
        ],
        schema_pool: vec![InternedSchema {
            arrays: smallvec![(0, 0)],
            attrs: smallvec![(1, 1)],
            array_attrs: smallvec![(0, smallvec![(1, 1)])],
        }],
        variables: vec![VariableEntry {
            name: 0,
            seg_offset: 8,
            seg_len: 100,
        }],
        datasets,
    }
}

#[test]
fn integers_decode_from_any_messagepack_width() {
    use Width::*;
    for w in [Smallest, U8, U16, U32, U64, I8, I16, I32, I64] {
        let bytes = footer_with_ints(w, 100);
        let footer = CollectionFooter::decode(&zstd(&bytes), &limits())
            .unwrap_or_else(|e| panic!("{w:?}: {e}"));
        assert_eq!(footer, expected_footer(100), "{w:?}");
    }
    // The version alone as a uint64 (0xcf), the rest as a writer would.
    let mut mp = Mp::default();
    mp.arr(8)
        .raw(&[0xcf, 0, 0, 0, 0, 0, 0, 0, 8])
        .str("Zstd")
        .sint(0);
    mp.arr(0).arr(0).arr(0).arr(0).arr(0);
    let footer = CollectionFooter::decode(&zstd(&mp.0), &limits()).unwrap();
    assert_eq!(footer.version, 8);
    // Negative timestamps in every signed width.
    for (w, created) in [
        (I8, -5i64),
        (I16, -300),
        (I32, -70_000),
        (I64, -1_700_000_000_000),
    ] {
        let footer = CollectionFooter::decode(&zstd(&footer_with_ints(w, created)), &limits())
            .unwrap_or_else(|e| panic!("{w:?}: {e}"));
        assert_eq!(footer, expected_footer(created), "{w:?}");
    }
}

#[test]
fn the_writer_picks_the_smallest_integer_encoding() {
    assert_eq!(
        expected_footer(1_700_000_000_000).to_msgpack().unwrap(),
        footer_with_ints(Width::Smallest, 1_700_000_000_000)
    );
    assert_eq!(
        expected_footer(-5).to_msgpack().unwrap(),
        footer_with_ints(Width::Smallest, -5)
    );
}

#[test]
fn an_integer_too_wide_for_its_field_is_corrupt() {
    // A schema index of 2^32 does not fit the u32 it decodes into.
    let mut mp = footer_prefix();
    mp.arr(1).arr(2).str("a").uint(1 << 32);
    assert!(matches!(
        CollectionFooter::decode(&zstd(&mp.0), &limits()),
        Err(FormatError::CorruptCollection { .. })
    ));
}
