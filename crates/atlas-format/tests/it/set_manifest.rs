//! The set manifest codec: a realistic manifest round-trips, its bytes are
//! the documented layout (`docs/sets.md`), every kind of damage is refused
//! with its own error, invalid content is refused on decode and on encode,
//! and no input makes the decoder panic.

#![cfg(test)]

use crate::common;

use atlas_format::{
    AttributeSummary, ChecksumAlgorithm, DType, DecodeLimits, DeletionMask, FormatError,
    MemberChecksums, MemberEntry, NameRange, SET_MANIFEST_MAGIC, SET_MANIFEST_VERSION,
    SegmentChecksum, SetManifest, Timestamp, Value, VariableSummary, crc32c,
};
use proptest::prelude::*;

// ---------------------------------------------------------------------------
// builders

fn member(id: &str, created_unix_ms: i64) -> MemberEntry {
    MemberEntry {
        id: id.into(),
        path: format!("members/{id}"),
        datasets_total: 120,
        datasets_live: 117,
        bytes: 4_813_220,
        created_unix_ms,
        variables: vec![
            VariableSummary {
                name: "TEMP".into(),
                dtype: DType::Float32,
                count: 96_000,
                nulls: 1_204,
                min: Some(Value::Float(-1.9)),
                max: Some(Value::Float(31.2)),
            },
            VariableSummary {
                name: "PRES".into(),
                dtype: DType::Float64,
                count: 96_000,
                nulls: 0,
                min: Some(Value::Float(0.0)),
                max: Some(Value::Float(f64::NAN)),
            },
            VariableSummary {
                name: "JULD".into(),
                dtype: DType::TimestampNs,
                count: 117,
                nulls: 0,
                min: Some(Value::Timestamp(Timestamp(1_600_000_000_000_000_000))),
                max: Some(Value::Timestamp(Timestamp(1_700_000_000_000_000_000))),
            },
            VariableSummary {
                name: "CYCLE_NUMBER".into(),
                dtype: DType::Int32,
                count: 117,
                nulls: 0,
                min: Some(Value::Int(-1)),
                max: Some(Value::Int(312)),
            },
            VariableSummary {
                name: "PLATFORM".into(),
                dtype: DType::String,
                count: 117,
                nulls: 2,
                min: Some(Value::String("1900001".into())),
                max: Some(Value::String("6903999".into())),
            },
            VariableSummary {
                name: "QC".into(),
                dtype: DType::FixedSizeList {
                    child: Box::new(DType::UInt8),
                    size: 4,
                },
                count: 468,
                nulls: 0,
                min: None,
                max: None,
            },
        ],
        attributes: vec![
            AttributeSummary {
                key: "platform_number".into(),
                min: Value::UInt(1_900_001),
                max: Value::UInt(6_903_999),
            },
            AttributeSummary {
                key: "_date_update".into(),
                min: Value::Timestamp(Timestamp(-5)),
                max: Value::Timestamp(Timestamp(5)),
            },
        ],
        checksums: MemberChecksums {
            algorithm: ChecksumAlgorithm::Crc32c,
            footer: crc32c(id.as_bytes()),
            segments: vec![
                SegmentChecksum {
                    name: "TEMP".into(),
                    checksum: 0xdead_beef,
                },
                SegmentChecksum {
                    name: "_datasets".into(),
                    checksum: 0,
                },
            ],
            mask: Some(crc32c(&DeletionMask::from_ordinals([1, 5, 9]).encode())),
        },
        names: Some(NameRange {
            first: format!("{id}/R1900001_001"),
            last: format!("{id}/R6903999_150"),
        }),
    }
}

fn realistic() -> SetManifest {
    let mut manifest = SetManifest::new();
    manifest.generation = 7;
    manifest.members = vec![
        member("2024-01", 1_704_067_200_000),
        member("2024-02", 1_706_745_600_000),
        MemberEntry {
            variables: Vec::new(),
            attributes: Vec::new(),
            checksums: MemberChecksums {
                algorithm: ChecksumAlgorithm::Crc32c,
                footer: 1,
                segments: Vec::new(),
                mask: None,
            },
            datasets_total: 0,
            datasets_live: 0,
            bytes: 54,
            names: None,
            ..member("empty", 1_706_745_600_001)
        },
    ];
    manifest
}

fn limits() -> DecodeLimits {
    DecodeLimits::default()
}

/// Frames a body as a manifest object with a correct checksum: the header
/// fields are honest, only the body's content is the test's.
fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = SET_MANIFEST_MAGIC.to_vec();
    out.extend_from_slice(&SET_MANIFEST_VERSION.to_le_bytes());
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(body);
    let crc = crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// An object for `manifest` without the encoder's validation, so invalid
/// content reaches the decoder.
fn frame_unchecked(manifest: &SetManifest) -> Vec<u8> {
    frame(&common::zstd(&rmp_serde::to_vec(manifest).unwrap()))
}

/// Asserts that `manifest` is refused both by the encoder and, written
/// anyway, by the decoder, with a message mentioning `needle`.
fn assert_refused(manifest: &SetManifest, needle: &str) {
    for err in [
        manifest.encode().unwrap_err(),
        SetManifest::decode(&frame_unchecked(manifest), &limits()).unwrap_err(),
    ] {
        match &err {
            FormatError::CorruptSetManifest { what } => {
                assert!(what.contains(needle), "{what:?} lacks {needle:?}")
            }
            other => panic!("expected CorruptSetManifest, got {other:?}"),
        }
    }
}

fn corrupt_what(result: Result<SetManifest, FormatError>) -> String {
    match result {
        Err(FormatError::CorruptSetManifest { what }) => what,
        other => panic!("expected CorruptSetManifest, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------
// round trip and layout

#[test]
fn a_realistic_manifest_round_trips() {
    let manifest = realistic();
    let bytes = manifest.encode().unwrap();
    let decoded = SetManifest::decode(&bytes, &limits()).unwrap();
    // NaN != NaN, so compare the re-encoded bytes as well as the fields that hold no NaN.
    assert_eq!(decoded.encode().unwrap(), bytes);
    assert_eq!(decoded.generation, 7);
    assert_eq!(decoded.members.len(), 3);
    assert_eq!(decoded.members[2], manifest.members[2]);
    assert_eq!(
        decoded.members[0].variables[0],
        manifest.members[0].variables[0]
    );
    assert!(matches!(decoded.members[0].variables[1].max, Some(Value::Float(x)) if x.is_nan()));
    assert_eq!(decoded.members[1].checksums, manifest.members[1].checksums);
    assert_eq!(
        decoded.members[1].attributes,
        manifest.members[1].attributes
    );
}

#[test]
fn an_empty_set_round_trips_at_generation_zero() {
    let bytes = SetManifest::new().encode().unwrap();
    let decoded = SetManifest::decode(&bytes, &limits()).unwrap();
    assert_eq!(decoded, SetManifest::new());
    assert_eq!(decoded.generation, 0);
}

#[test]
fn the_bytes_are_magic_version_length_body_and_a_crc32c_of_all_before_it() {
    let bytes = realistic().encode().unwrap();
    let n = bytes.len();
    assert_eq!(&bytes[..8], b"ATLASSET");
    assert_eq!(u32::from_le_bytes(bytes[8..12].try_into().unwrap()), 1);
    let body_len = u64::from_le_bytes(bytes[12..20].try_into().unwrap());
    assert_eq!(body_len, (n - 24) as u64);
    let body = &bytes[20..n - 4];
    assert_eq!(
        &body[..4],
        &[0x28, 0xb5, 0x2f, 0xfd],
        "the body is one zstd frame"
    );
    let stored = u32::from_le_bytes(bytes[n - 4..].try_into().unwrap());
    assert_eq!(stored, crc32c(&bytes[..n - 4]));
    // Inside: positional MessagePack, [generation, members].
    let msgpack = atlas_format::decompress_bounded(body, 1 << 20).unwrap();
    assert_eq!(msgpack[0], 0x92, "an array of 2");
    assert_eq!(msgpack[1], 7, "generation first");
    assert_eq!(msgpack[2], 0x93, "then the 3 members");
}

#[test]
fn summary_values_have_their_wire_names() {
    let cases = [
        (Value::Int(-1), "int"),
        (Value::UInt(1), "uint"),
        (Value::Float(1.5), "float"),
        (Value::Timestamp(Timestamp(3)), "timestamp_ns"),
        (Value::String("a".into()), "string"),
        (Value::Bytes(vec![1]), "bytes"),
    ];
    for (value, name) in cases {
        let bytes = rmp_serde::to_vec(&value).unwrap();
        assert_eq!(bytes[0], 0x81, "{value:?} is a map of one key");
        assert_eq!(bytes[1], 0xa0 | name.len() as u8);
        assert_eq!(&bytes[2..2 + name.len()], name.as_bytes());
    }
    let algorithm = rmp_serde::to_vec(&ChecksumAlgorithm::Crc32c).unwrap();
    assert_eq!(algorithm, b"\xa6crc32c");
}

#[test]
fn the_crc32c_helper_matches_the_standard_check_value() {
    assert_eq!(crc32c(b"123456789"), 0xE306_9283);
    assert_eq!(crc32c(b""), 0);
}

#[test]
fn members_newest_first_lists_the_latest_commit_first() {
    let manifest = realistic();
    let ids: Vec<&str> = manifest
        .members_newest_first()
        .map(|m| m.id.as_str())
        .collect();
    assert_eq!(ids, ["empty", "2024-02", "2024-01"]);
    assert_eq!(
        manifest.member("2024-02").unwrap().created_unix_ms,
        1_706_745_600_000
    );
    assert!(manifest.member("2023-12").is_none());
}

// ---------------------------------------------------------------------------
// damaged bytes

#[test]
fn a_manifest_with_a_flipped_body_byte_fails_its_checksum() {
    let bytes = realistic().encode().unwrap();
    for at in 20..bytes.len() {
        let mut damaged = bytes.clone();
        damaged[at] ^= 0x10;
        let what = corrupt_what(SetManifest::decode(&damaged, &limits()));
        assert!(what.contains("CRC32C"), "byte {at}: {what}");
    }
}

#[test]
fn every_single_bit_flip_is_detected() {
    let bytes = realistic().encode().unwrap();
    for at in 0..bytes.len() {
        for bit in 0..8 {
            let mut damaged = bytes.clone();
            damaged[at] ^= 1 << bit;
            let err = SetManifest::decode(&damaged, &limits()).unwrap_err();
            let expected = match at {
                0..8 => matches!(err, FormatError::NotASetManifest { .. }),
                8..12 => matches!(err, FormatError::UnsupportedVersion { .. }),
                _ => matches!(err, FormatError::CorruptSetManifest { .. }),
            };
            assert!(expected, "byte {at} bit {bit}: {err:?}");
        }
    }
}

#[test]
fn a_truncated_manifest_is_rejected() {
    let bytes = realistic().encode().unwrap();
    for len in 1..bytes.len() {
        let what = corrupt_what(SetManifest::decode(&bytes[..len], &limits()));
        assert!(what.contains("truncated"), "{len} bytes: {what}");
    }
}

#[test]
fn trailing_bytes_after_the_checksum_are_rejected() {
    let mut bytes = realistic().encode().unwrap();
    bytes.extend_from_slice(b"xyz");
    let what = corrupt_what(SetManifest::decode(&bytes, &limits()));
    assert!(what.contains("3 trailing bytes"), "{what}");
}

#[test]
fn a_manifest_of_version_2_is_unsupported() {
    let mut bytes = realistic().encode().unwrap();
    bytes[8] = 2;
    assert_eq!(
        SetManifest::decode(&bytes, &limits()).unwrap_err(),
        FormatError::UnsupportedVersion {
            found: 2,
            expected: 1
        }
    );
}

#[test]
fn a_container_is_not_a_set_manifest() {
    let fixture = &common::fixtures()[0];
    match SetManifest::decode(&fixture.container, &limits()) {
        Err(FormatError::NotASetManifest { found }) => {
            assert!(found.contains("container"), "{found}")
        }
        other => panic!("expected NotASetManifest, got {other:?}"),
    }
}

#[test]
fn an_empty_object_or_a_mask_is_not_a_set_manifest() {
    for (bytes, needle) in [
        (Vec::new(), "empty"),
        (DeletionMask::from_ordinals([1]).encode(), "mask"),
        (b"{\"members\": []}".to_vec(), "unknown content"),
    ] {
        match SetManifest::decode(&bytes, &limits()) {
            Err(FormatError::NotASetManifest { found }) => {
                assert!(found.contains(needle), "{found}")
            }
            other => panic!("expected NotASetManifest, got {other:?}"),
        }
    }
}

#[test]
fn a_body_over_the_limit_is_refused_before_it_is_read() {
    let bytes = realistic().encode().unwrap();
    let what = corrupt_what(SetManifest::decode(&bytes, &DecodeLimits::new(16, 1 << 20)));
    assert!(what.contains("over the limit of 16"), "{what}");
    // A header claiming 2^64 - 1 body bytes on a tiny object: refused, no allocation.
    let mut huge = bytes[..20].to_vec();
    huge[12..20].copy_from_slice(&u64::MAX.to_le_bytes());
    huge.extend_from_slice(&[0; 4]);
    let what = corrupt_what(SetManifest::decode(&huge, &limits()));
    assert!(what.contains("over the limit"), "{what}");
}

#[test]
fn a_body_that_decompresses_past_the_limit_is_refused() {
    let bytes = realistic().encode().unwrap();
    let what = corrupt_what(SetManifest::decode(&bytes, &DecodeLimits::new(1 << 20, 64)));
    assert!(what.contains("limit of 64"), "{what}");
}

#[test]
fn a_body_that_is_not_zstd_is_corrupt() {
    let what = corrupt_what(SetManifest::decode(&frame(b"not zstd"), &limits()));
    assert!(what.contains("not a zstd frame"), "{what}");
}

#[test]
fn hostile_messagepack_in_a_valid_frame_is_refused_without_allocating() {
    let hostile: [&[u8]; 5] = [
        // [generation, members] with members claiming 2^32 - 1 entries.
        &[0x92, 0x00, 0xdd, 0xff, 0xff, 0xff, 0xff],
        // A string claiming 4 GiB.
        &[0xdb, 0xff, 0xff, 0xff, 0xff, b'a'],
        // Trailing bytes after a valid value.
        &[0x92, 0x00, 0x90, 0x00],
        // The reserved marker.
        &[0xc1],
        // A map where the positional array belongs.
        &[0x81, 0xa1, b'g', 0x00],
    ];
    for body in hostile {
        let what = corrupt_what(SetManifest::decode(&frame(&common::zstd(body)), &limits()));
        assert!(what.contains("MessagePack"), "{what}");
    }
}

#[test]
fn an_unknown_checksum_algorithm_is_corrupt() {
    let manifest = realistic();
    let msgpack = rmp_serde::to_vec(&manifest).unwrap();
    // Same length as "crc32c", so the rest of the body stays aligned.
    let at = msgpack.windows(7).position(|w| w == b"\xa6crc32c").unwrap();
    let mut altered = msgpack.clone();
    altered[at + 1..at + 7].copy_from_slice(b"xxh3_6");
    let what = corrupt_what(SetManifest::decode(
        &frame(&common::zstd(&altered)),
        &limits(),
    ));
    assert!(what.contains("xxh3_6"), "{what}");
}

// ---------------------------------------------------------------------------
// invalid content

#[test]
fn duplicate_member_ids_are_rejected() {
    let mut manifest = realistic();
    let mut twin = member("2024-01", 0);
    twin.path = "members/elsewhere".into();
    manifest.members.push(twin);
    assert_refused(&manifest, "the id appears twice");
}

#[test]
fn duplicate_member_paths_are_rejected() {
    let mut manifest = realistic();
    manifest.members[1].path = manifest.members[0].path.clone();
    assert_refused(&manifest, "appears twice");
}

#[test]
fn an_invalid_member_id_is_rejected() {
    for id in ["", "_hidden", "a/b", ".."] {
        let mut manifest = realistic();
        manifest.members[0].id = id.into();
        assert_refused(&manifest, "invalid name");
    }
}

#[test]
fn a_path_that_is_absolute_or_leaves_the_set_is_rejected() {
    for path in [
        "",
        "/members/x",
        "../x",
        "members/../../x",
        "members//x",
        "./x",
        "a\\b",
    ] {
        let mut manifest = realistic();
        manifest.members[0].path = path.into();
        assert_refused(&manifest, "path");
    }
}

#[test]
fn more_live_than_total_datasets_is_rejected() {
    let mut manifest = realistic();
    manifest.members[1].datasets_live = 121;
    assert_refused(&manifest, "121 live datasets of 120");
}

#[test]
fn more_nulls_than_elements_is_rejected() {
    let mut manifest = realistic();
    manifest.members[0].variables[0].nulls = 96_001;
    assert_refused(&manifest, "96001 nulls among 96000");
}

#[test]
fn a_min_above_its_max_is_rejected() {
    let mut manifest = realistic();
    manifest.members[0].variables[3].min = Some(Value::Int(313));
    assert_refused(&manifest, "is above max");
    let mut manifest = realistic();
    manifest.members[0].attributes[0].max = Value::UInt(7);
    assert_refused(&manifest, "is above max");
    let mut manifest = realistic();
    manifest.members[0].variables[0].min = Some(Value::Float(f64::NAN));
    assert_refused(&manifest, "is above max");
}

#[test]
fn bounds_of_different_kinds_are_rejected() {
    let mut manifest = realistic();
    manifest.members[0].variables[3].max = Some(Value::UInt(312));
    assert_refused(&manifest, "different kinds");
}

#[test]
fn a_boolean_bound_is_not_part_of_manifest_version_1() {
    let mut manifest = realistic();
    manifest.members[0].attributes[0].min = Value::Bool(false);
    manifest.members[0].attributes[0].max = Value::Bool(true);
    assert_refused(&manifest, "is a boolean");
}

#[test]
fn one_bound_alone_is_accepted() {
    let mut manifest = realistic();
    manifest.members[0].variables[0].max = None;
    let bytes = manifest.encode().unwrap();
    let decoded = SetManifest::decode(&bytes, &limits()).unwrap();
    assert_eq!(decoded.members[0].variables[0].max, None);
    assert_eq!(
        decoded.members[0].variables[0].min,
        Some(Value::Float(-1.9))
    );
}

#[test]
fn repeated_names_inside_a_member_are_rejected() {
    let mut manifest = realistic();
    let copy = manifest.members[0].variables[0].clone();
    manifest.members[0].variables.push(copy);
    assert_refused(&manifest, "variable \"TEMP\" appears twice");
    let mut manifest = realistic();
    let copy = manifest.members[0].attributes[0].clone();
    manifest.members[0].attributes.push(copy);
    assert_refused(&manifest, "attribute \"platform_number\" appears twice");
    let mut manifest = realistic();
    let copy = manifest.members[0].checksums.segments[0].clone();
    manifest.members[0].checksums.segments.push(copy);
    assert_refused(&manifest, "segment \"TEMP\" has two checksums");
}

#[test]
fn a_reserved_variable_name_is_rejected() {
    let mut manifest = realistic();
    manifest.members[0].variables[0].name = "_datasets".into();
    assert_refused(&manifest, "reserved");
}

// ---------------------------------------------------------------------------
// no panic, whatever the bytes

/// Decodes `bytes`; whatever decodes must encode again to bytes that decode.
fn exercise(bytes: &[u8]) {
    let limits = DecodeLimits::new(1 << 20, 4 << 20);
    if let Ok(manifest) = SetManifest::decode(bytes, &limits) {
        let again = manifest.encode().unwrap();
        SetManifest::decode(&again, &limits).unwrap();
    }
    if let Ok(manifest) = SetManifest::from_msgpack(bytes) {
        let _ = manifest.validate();
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn arbitrary_bytes_never_panic_the_decoder(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        exercise(&bytes);
        // And behind a valid header and checksum, so they reach zstd.
        exercise(&frame(&bytes));
    }

    #[test]
    fn mutated_manifests_never_panic_the_decoder(
        mutations in prop::collection::vec(common::mutation(), 1..6),
    ) {
        exercise(&common::apply(realistic().encode().unwrap(), &mutations));
    }

    #[test]
    fn mutated_bodies_in_a_valid_frame_never_panic_the_decoder(
        mutations in prop::collection::vec(common::mutation(), 1..6),
    ) {
        // The checksum is recomputed, so the damage reaches serde and validation.
        let msgpack = rmp_serde::to_vec(&realistic()).unwrap();
        let mutated = common::apply(msgpack, &mutations);
        exercise(&mutated);
        exercise(&frame(&common::zstd(&mutated)));
    }
}

#[test]
fn a_name_range_whose_first_name_is_above_its_last_is_refused() {
    let mut manifest = realistic();
    manifest.members[0].names = Some(NameRange {
        first: "z".into(),
        last: "a".into(),
    });
    let err = manifest.encode().unwrap_err();
    assert!(
        matches!(&err, FormatError::CorruptSetManifest { what } if what.contains("first above last")),
        "{err}"
    );
}
