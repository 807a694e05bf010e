//! The checksum sidecar codec: it round-trips, its frame is the manifest's
//! with its own magic, and every kind of damage is refused with its own error.

#![cfg(test)]

use atlas_format::{
    CHECKSUM_SIDECAR_MAGIC, ChecksumAlgorithm, ChecksumSidecar, DecodeLimits, FormatError,
    MemberChecksums, SET_MANIFEST_MAGIC, SegmentChecksum, SetManifest, crc32c,
};

fn sidecar() -> ChecksumSidecar {
    ChecksumSidecar::new(MemberChecksums {
        algorithm: ChecksumAlgorithm::Crc32c,
        footer: 0xdead_beef,
        segments: vec![
            SegmentChecksum {
                name: "TEMP".into(),
                checksum: 0x0102_0304,
            },
            SegmentChecksum {
                name: "_datasets".into(),
                checksum: 7,
            },
        ],
        mask: Some(42),
    })
}

fn limits() -> DecodeLimits {
    DecodeLimits::default()
}

#[test]
fn a_sidecar_round_trips() {
    let original = sidecar();
    let bytes = original.encode().unwrap();
    assert_eq!(
        ChecksumSidecar::decode(&bytes, &limits()).unwrap(),
        original
    );
    let no_mask = ChecksumSidecar::new(MemberChecksums {
        mask: None,
        segments: Vec::new(),
        ..original.checksums
    });
    let bytes = no_mask.encode().unwrap();
    assert_eq!(ChecksumSidecar::decode(&bytes, &limits()).unwrap(), no_mask);
}

#[test]
fn the_frame_is_the_manifests_with_its_own_magic() {
    let bytes = sidecar().encode().unwrap();
    assert_eq!(&bytes[..8], &CHECKSUM_SIDECAR_MAGIC);
    assert_eq!(&bytes[..8], b"ATLASCRC");
    assert_eq!(u32::from_le_bytes(bytes[8..12].try_into().unwrap()), 1);
    let body_len = u64::from_le_bytes(bytes[12..20].try_into().unwrap());
    assert_eq!(bytes.len() as u64, 20 + body_len + 4);
    let (covered, stored) = bytes.split_at(bytes.len() - 4);
    assert_eq!(
        u32::from_le_bytes(stored.try_into().unwrap()),
        crc32c(covered)
    );
}

#[test]
fn a_set_manifest_is_not_a_sidecar_and_a_sidecar_is_not_a_manifest() {
    let manifest = SetManifest::new().encode().unwrap();
    assert!(manifest.starts_with(&SET_MANIFEST_MAGIC));
    assert!(matches!(
        ChecksumSidecar::decode(&manifest, &limits()),
        Err(FormatError::NotAChecksumSidecar { .. })
    ));
    let bytes = sidecar().encode().unwrap();
    assert!(matches!(
        SetManifest::decode(&bytes, &limits()),
        Err(FormatError::NotASetManifest { .. })
    ));
    assert!(matches!(
        ChecksumSidecar::decode(b"", &limits()),
        Err(FormatError::NotAChecksumSidecar { .. })
    ));
}

#[test]
fn every_single_bit_flip_is_refused() {
    let bytes = sidecar().encode().unwrap();
    for at in 0..bytes.len() {
        for bit in 0..8 {
            let mut damaged = bytes.clone();
            damaged[at] ^= 1 << bit;
            let err = ChecksumSidecar::decode(&damaged, &limits()).unwrap_err();
            let expected = match at {
                0..8 => matches!(err, FormatError::NotAChecksumSidecar { .. }),
                8..12 => matches!(err, FormatError::UnsupportedVersion { .. }),
                _ => matches!(err, FormatError::CorruptChecksumSidecar { .. }),
            };
            assert!(expected, "byte {at} bit {bit}: {err:?}");
        }
    }
}

#[test]
fn every_truncation_is_refused() {
    let bytes = sidecar().encode().unwrap();
    for len in 1..bytes.len() {
        match ChecksumSidecar::decode(&bytes[..len], &limits()) {
            Err(FormatError::CorruptChecksumSidecar { what }) => {
                assert!(what.contains("truncated"), "{len} bytes: {what}")
            }
            other => panic!("{len} bytes: {other:?}"),
        }
    }
}

#[test]
fn a_segment_with_two_checksums_is_refused_on_encode() {
    let mut twice = sidecar();
    twice.checksums.segments.push(SegmentChecksum {
        name: "TEMP".into(),
        checksum: 1,
    });
    match twice.encode() {
        Err(FormatError::CorruptChecksumSidecar { what }) => {
            assert!(what.contains("two checksums"), "{what}")
        }
        other => panic!("{other:?}"),
    }
}
