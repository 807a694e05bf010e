//! No input makes a decoder panic: arbitrary bytes and mutations of the
//! fixtures (bit flips, insertions, deletions, truncations), fed to the
//! trailer parser, the footer decoder, the open (whole and by suffix), the
//! mask decoder and the set manifest decoder, only ever produce values or errors.

#![cfg(test)]

use crate::common;

use std::sync::OnceLock;

use atlas_format::{
    CollectionFooter, DecodeLimits, DeletionMask, OpenDecoder, SetManifest, Trailer, open_bytes,
};
use proptest::prelude::*;

/// Everything worth mutating: containers, their compressed footers, their
/// footers' MessagePack, and masks.
struct Seeds {
    containers: Vec<Vec<u8>>,
    footers: Vec<Vec<u8>>,
    msgpacks: Vec<Vec<u8>>,
    masks: Vec<Vec<u8>>,
}

fn seeds() -> &'static Seeds {
    static SEEDS: OnceLock<Seeds> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let fixtures = common::fixtures();
        let containers: Vec<Vec<u8>> = fixtures.iter().map(|f| f.container.clone()).collect();
        let footers: Vec<Vec<u8>> = containers
            .iter()
            .map(|c| common::footer_slice(c).to_vec())
            .collect();
        let msgpacks = footers.iter().map(|f| common::unzstd(f)).collect();
        let mut masks: Vec<Vec<u8>> = fixtures.iter().filter_map(|f| f.mask.clone()).collect();
        masks.push(atlas_format::DeletionMask::from_ordinals([0, 3, 7, 1 << 20]).encode());
        Seeds {
            containers,
            footers,
            msgpacks,
            masks,
        }
    })
}

/// Runs every decoder over `bytes`, as whatever it could be.
fn exercise(bytes: &[u8]) {
    let limits = DecodeLimits::new(1 << 20, 4 << 20);
    let _ = Trailer::parse_tail(bytes);
    let _ = CollectionFooter::decode(bytes, &limits);
    if let Ok(f) = CollectionFooter::from_msgpack(bytes) {
        let _ = f.validate();
        let _ = f.segments_end();
    }
    if let Ok(opened) = open_bytes(bytes, limits) {
        // What opens is consistent with itself.
        assert_eq!(opened.container_len, bytes.len() as u64);
        opened.footer.validate().unwrap();
        opened
            .footer
            .validate_layout(opened.footer_offset())
            .unwrap();
    }
    let (by_suffix, _) = common::open_suffix(bytes, OpenDecoder::new(None).with_limits(limits));
    if let Ok(opened) = by_suffix {
        assert_eq!(opened.container_len, bytes.len() as u64);
    }
    // And with a probe small enough that a second read is always needed.
    let _ = common::open_suffix(bytes, OpenDecoder::new(None).with_probe_len(20));
    let _ = common::open_known(
        bytes,
        13,
        OpenDecoder::new(Some(bytes.len() as u64)).with_probe_len(20),
    );
    for count in [0, 1, 5, u32::MAX] {
        let _ = DeletionMask::decode(bytes, count);
    }
    let _ = SetManifest::decode(bytes, &limits);
    let _ = SetManifest::from_msgpack(bytes);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn arbitrary_bytes_never_panic_a_decoder(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        exercise(&bytes);
    }

    #[test]
    fn arbitrary_bytes_behind_a_valid_trailer_never_panic_a_decoder(
        body in prop::collection::vec(any::<u8>(), 0..512),
        size in prop_oneof![0u64..600, any::<u64>()],
    ) {
        let mut bytes = body;
        bytes.extend_from_slice(&Trailer { footer_size: size }.encode());
        exercise(&bytes);
    }

    #[test]
    fn mutated_containers_never_panic_a_decoder(
        which in any::<prop::sample::Index>(),
        mutations in prop::collection::vec(common::mutation(), 1..6),
    ) {
        let s = seeds();
        let original = &s.containers[which.index(s.containers.len())];
        exercise(&common::apply(original.clone(), &mutations));
    }

    #[test]
    fn mutated_footers_never_panic_a_decoder(
        which in any::<prop::sample::Index>(),
        mutations in prop::collection::vec(common::mutation(), 1..6),
        recompress in any::<bool>(),
    ) {
        // Mutating the MessagePack and compressing it again gets past zstd,
        // into serde and the validation; mutating the frame tests zstd.
        let s = seeds();
        let i = which.index(s.footers.len());
        let mutated = if recompress {
            common::apply(s.msgpacks[i].clone(), &mutations)
        } else {
            common::apply(s.footers[i].clone(), &mutations)
        };
        exercise(&mutated);
        if recompress {
            let frame = common::zstd(&mutated);
            exercise(&frame);
            // In a container, so the open reaches the footer too.
            exercise(&common::raw_container(&frame, &[0u8; 100]));
        }
    }

    #[test]
    fn mutated_masks_never_panic_a_decoder(
        which in any::<prop::sample::Index>(),
        mutations in prop::collection::vec(common::mutation(), 1..6),
    ) {
        let s = seeds();
        let mutated = common::apply(s.masks[which.index(s.masks.len())].clone(), &mutations);
        for count in [0, 3, 10, u32::MAX] {
            let _ = DeletionMask::decode(&mutated, count);
        }
    }
}

#[test]
fn hostile_messagepack_is_refused_without_a_panic_or_a_huge_allocation() {
    let hostile: Vec<Vec<u8>> = vec![
        // An 8-array whose string pool claims 2^32-1 entries.
        vec![
            0x98, 0x08, 0xa4, b'Z', b's', b't', b'd', 0x00, 0xdd, 0xff, 0xff, 0xff, 0xff,
        ],
        // A map claiming 2^32-1 pairs.
        vec![0xdf, 0xff, 0xff, 0xff, 0xff, 0x00],
        // A string claiming 4 GiB.
        vec![0xdb, 0xff, 0xff, 0xff, 0xff, b'a'],
        // 100 000 nested arrays.
        vec![0x91; 100_000],
        // Deep dtype nesting: {"list": [{"list": [ ... ]}]}.
        {
            let mut v = vec![0x98, 0x08, 0xa4, b'Z', b's', b't', b'd', 0x00, 0x90, 0x91];
            for _ in 0..10_000 {
                v.extend_from_slice(&[0x81, 0xa4, b'l', b'i', b's', b't', 0x91]);
            }
            v.extend_from_slice(&[0xa4, b'b', b'o', b'o', b'l', 0x90, 0x90, 0x90]);
            v
        },
        // The reserved marker.
        vec![0xc1],
        // Ext types where a footer is expected.
        vec![0xc7, 0x03, 0x01, 1, 2, 3],
    ];
    for bytes in &hostile {
        assert!(common::is_corrupt(&CollectionFooter::from_msgpack(bytes)));
        assert!(common::is_corrupt(&CollectionFooter::decode(
            &common::zstd(bytes),
            &DecodeLimits::default()
        )));
        exercise(bytes);
    }
}
