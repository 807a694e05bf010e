//! A decoded footer is checked before use: each inconsistency is one clear
//! error. Every case starts from a footer that decodes, changes one thing,
//! and expects the decode (or the open) to refuse it.

#![cfg(test)]

use crate::common;

use atlas_format::{
    Codec, CollectionFooter, DType, DatasetSchema, FooterBuilder, FormatError, HEADER_LEN,
    open_bytes,
};
use common::{decl, limits, raw_container};
use smol_str::SmolStr;

/// Two schemas, attributes at every level, three datasets, three segments.
fn valid() -> CollectionFooter {
    let mut b = FooterBuilder::new(Codec::Zstd, 42);
    let s0 = b.intern_schema(&DatasetSchema {
        arrays: vec![
            decl("temperature", DType::Float32, &[("units", DType::String)]),
            decl("time", DType::TimestampNs, &[]),
            decl("flag", DType::UInt8, &[("meaning", DType::String)]),
        ],
        attributes: vec![(SmolStr::new("platform"), DType::UInt32)],
    });
    let s1 = b.intern_schema(&DatasetSchema {
        arrays: vec![decl("temperature", DType::Float64, &[])],
        attributes: vec![],
    });
    b.push_dataset("a", s0).unwrap();
    b.push_dataset("b", s1).unwrap();
    b.push_dataset("c", s0).unwrap();
    b.push_variable("temperature", 10).unwrap();
    b.push_variable("time", 20).unwrap();
    b.push_variable("flag", 30).unwrap();
    b.finish()
}

fn decode(footer: &CollectionFooter) -> Result<CollectionFooter, FormatError> {
    CollectionFooter::decode(&footer.encode().unwrap(), &limits())
}

/// Asserts that the unchanged footer decodes and the changed one is corrupt
/// with a message mentioning `needle`.
fn refused(change: impl FnOnce(&mut CollectionFooter), needle: &str) {
    let original = valid();
    assert_eq!(decode(&original).unwrap(), original);
    let mut broken = original;
    change(&mut broken);
    match decode(&broken) {
        Err(FormatError::CorruptCollection { what, .. }) => {
            assert!(what.contains(needle), "{what:?} should mention {needle:?}")
        }
        other => panic!("expected CorruptCollection mentioning {needle:?}, got {other:?}"),
    }
}

#[test]
fn a_dataset_naming_a_schema_past_the_pool_is_corrupt() {
    refused(|f| *f.datasets.get_mut("b").unwrap() = 2, "schema 2");
    refused(|f| *f.datasets.get_mut("c").unwrap() = u32::MAX, "schema");
}

#[test]
fn a_string_index_past_the_pool_is_corrupt() {
    refused(|f| f.schema_pool[0].arrays[1].0 = 99, "99");
    refused(|f| f.schema_pool[0].attrs[0].0 = 99, "99");
    refused(|f| f.schema_pool[0].array_attrs[0].1[0].0 = 99, "99");
    refused(|f| f.variables[2].name = 99, "99");
    // The pool shrunk under the indices that pointed at its end.
    refused(
        |f| {
            f.string_pool.pop();
        },
        "string pool",
    );
}

#[test]
fn a_dtype_index_past_the_pool_is_corrupt() {
    refused(|f| f.schema_pool[1].arrays[0].1 = 77, "77");
    refused(|f| f.schema_pool[0].attrs[0].1 = 77, "77");
}

#[test]
fn array_attributes_for_a_position_the_schema_lacks_are_corrupt() {
    // Schema 0 declares 3 arrays: positions 0..=2.
    refused(|f| f.schema_pool[0].array_attrs[1].0 = 3, "position 3");
    refused(
        |f| f.schema_pool[1].array_attrs.push((1, Default::default())),
        "position 1",
    );
}

#[test]
fn array_attributes_out_of_position_order_are_corrupt() {
    refused(|f| f.schema_pool[0].array_attrs.swap(0, 1), "sorted");
}

#[test]
fn an_array_or_key_declared_twice_in_a_schema_is_corrupt() {
    refused(
        |f| {
            let first = f.schema_pool[0].arrays[0];
            f.schema_pool[0].arrays[1] = first;
        },
        "twice",
    );
}

#[test]
fn a_name_declared_twice_through_two_pool_entries_is_corrupt() {
    // The string pool holds "time" twice; schema 0's second array points at
    // the copy. Distinct indices, same name: still declared twice.
    refused(
        |f| {
            let time = f.schema_pool[0].arrays[1].0;
            let copy = f.string_pool[time as usize].clone();
            f.string_pool.push(copy);
            f.schema_pool[0].arrays[2].0 = (f.string_pool.len() - 1) as u32;
        },
        "twice",
    );
}

#[test]
fn an_empty_segment_is_corrupt() {
    refused(|f| f.variables[1].seg_len = 0, "empty");
}

#[test]
fn a_repeated_segment_name_is_corrupt() {
    refused(|f| f.variables[2].name = f.variables[0].name, "twice");
}

#[test]
fn a_repeated_dataset_name_is_corrupt() {
    // Build the repeat where the IndexMap cannot: in the MessagePack itself.
    let footer = valid();
    let msgpack = footer.to_msgpack().unwrap();
    let tampered = replace_once(&msgpack, b"\xa1b", b"\xa1a");
    assert!(matches!(
        CollectionFooter::from_msgpack(&tampered),
        Err(FormatError::CorruptCollection { .. })
    ));
    assert!(CollectionFooter::from_msgpack(&msgpack).is_ok());
}

fn replace_once(haystack: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let at = haystack
        .windows(from.len())
        .position(|w| w == from)
        .unwrap();
    assert_eq!(
        haystack.windows(from.len()).filter(|w| *w == from).count(),
        1
    );
    let mut out = haystack.to_vec();
    out[at..at + from.len()].copy_from_slice(to);
    out
}

#[test]
fn segments_that_are_not_back_to_back_are_corrupt() {
    let footer = valid();
    let end = HEADER_LEN + 60;
    footer.validate_layout(end).unwrap();

    let with = |change: &dyn Fn(&mut CollectionFooter)| {
        let mut f = valid();
        change(&mut f);
        f
    };
    // A gap, an overlap, a first segment that does not start after the header.
    let gap = with(&|f| f.variables[1].seg_offset += 1);
    let overlap = with(&|f| f.variables[2].seg_offset -= 1);
    let late_start = with(&|f| {
        for v in &mut f.variables {
            v.seg_offset += 4;
        }
    });
    for (what, f) in [
        ("gap", &gap),
        ("overlap", &overlap),
        ("late start", &late_start),
    ] {
        // validate() alone does not know where the footer sits; the layout check does.
        assert!(
            matches!(
                f.validate_layout(f.variables[2].range().unwrap().end),
                Err(FormatError::CorruptCollection { .. })
            ),
            "{what}"
        );
        // And the open refuses the container.
        let container = raw_container(&f.encode().unwrap(), &[7u8; 64]);
        let opened = open_bytes(&container, limits());
        assert!(
            matches!(opened, Err(FormatError::CorruptCollection { .. })),
            "{what}: {opened:?}"
        );
    }
    // Segments that end short of the footer, or run into it.
    for segment_bytes in [59usize, 61] {
        let container = raw_container(&footer.encode().unwrap(), &vec![7u8; segment_bytes]);
        assert!(
            matches!(
                open_bytes(&container, limits()),
                Err(FormatError::CorruptCollection { .. })
            ),
            "{segment_bytes} segment bytes"
        );
    }
    // The control: exactly 60 bytes of segments open.
    let container = raw_container(&footer.encode().unwrap(), &[7u8; 60]);
    assert_eq!(open_bytes(&container, limits()).unwrap().footer, footer);
}

#[test]
fn a_segment_range_that_overflows_is_corrupt() {
    let mut f = valid();
    f.variables[2].seg_len = u64::MAX - 10;
    assert!(matches!(
        f.segments_end(),
        Err(FormatError::CorruptCollection { .. })
    ));
    let container = raw_container(&f.encode().unwrap(), &[7u8; 60]);
    assert!(matches!(
        open_bytes(&container, limits()),
        Err(FormatError::CorruptCollection { .. })
    ));
}

#[test]
fn a_footer_whose_own_version_is_not_8_is_unsupported() {
    for version in [0u32, 7, 9, u32::MAX] {
        let mut f = valid();
        f.version = version;
        assert_eq!(
            decode(&f).unwrap_err(),
            FormatError::UnsupportedVersion {
                found: version,
                expected: 8
            }
        );
        // Even when the trailer around it says 8.
        let container = raw_container(&f.encode().unwrap(), &[7u8; 60]);
        assert_eq!(
            open_bytes(&container, limits()).unwrap_err(),
            FormatError::UnsupportedVersion {
                found: version,
                expected: 8
            }
        );
    }
}

#[test]
fn a_dtype_nested_past_the_limit_is_corrupt() {
    let mut deep = DType::Bool;
    for _ in 0..17 {
        deep = DType::List {
            child: Box::new(deep),
        };
    }
    let mut f = valid();
    f.dtype_pool.push(deep);
    assert!(matches!(
        decode(&f),
        Err(FormatError::CorruptCollection { .. })
    ));
    // Sixteen levels are fine.
    let mut ok = DType::Bool;
    for _ in 0..16 {
        ok = DType::List {
            child: Box::new(ok),
        };
    }
    let mut f = valid();
    f.dtype_pool.push(ok);
    assert_eq!(decode(&f).unwrap(), f);
}

#[test]
fn footer_bytes_that_are_not_zstd_or_not_a_footer_are_corrupt() {
    let f = valid();
    // Raw MessagePack where zstd belongs.
    assert!(matches!(
        CollectionFooter::decode(&f.to_msgpack().unwrap(), &limits()),
        Err(FormatError::CorruptCollection { .. })
    ));
    // zstd of something else.
    assert!(matches!(
        CollectionFooter::decode(&common::zstd(b"hello"), &limits()),
        Err(FormatError::CorruptCollection { .. })
    ));
    // Bytes after the footer's MessagePack value.
    let mut trailing = f.to_msgpack().unwrap();
    trailing.push(0xc0);
    assert!(matches!(
        CollectionFooter::decode(&common::zstd(&trailing), &limits()),
        Err(FormatError::CorruptCollection { .. })
    ));
    // A truncated compressed footer.
    let enc = f.encode().unwrap();
    assert!(matches!(
        CollectionFooter::decode(&enc[..enc.len() - 3], &limits()),
        Err(FormatError::CorruptCollection { .. })
    ));
}
