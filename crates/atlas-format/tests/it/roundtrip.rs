//! Property tests: whatever a writer builds through `FooterBuilder` decodes to
//! the same footer, and whatever ordinals a mask holds come back, including
//! from truncated bodies and masks that name ordinals past the end.

#![cfg(test)]

use crate::common;

use std::collections::BTreeSet;

use atlas_format::{
    ArrayDecl, Codec, CollectionFooter, DType, DatasetSchema, DeletionMask, FooterBuilder,
    FormatError, MASK_MAGIC, MaskWarning, open_bytes,
};
use indexmap::IndexMap;
use proptest::prelude::*;
use smol_str::SmolStr;

fn dtype() -> impl Strategy<Value = DType> {
    let leaf = prop_oneof![
        Just(DType::Bool),
        Just(DType::Int8),
        Just(DType::Int16),
        Just(DType::Int32),
        Just(DType::Int64),
        Just(DType::UInt8),
        Just(DType::UInt16),
        Just(DType::UInt32),
        Just(DType::UInt64),
        Just(DType::Float32),
        Just(DType::Float64),
        Just(DType::String),
        Just(DType::Binary),
        Just(DType::TimestampNs),
    ];
    leaf.prop_recursive(4, 16, 1, |inner| {
        prop_oneof![
            (inner.clone(), any::<u32>()).prop_map(|(c, size)| DType::FixedSizeList {
                child: Box::new(c),
                size
            }),
            inner.prop_map(|c| DType::List { child: Box::new(c) }),
        ]
    })
}

/// Names: short (inline SmolStr) and long (heap), ASCII and not.
fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z][a-z0-9_.]{0,8}",
        "[A-Z][A-Za-z0-9_.-]{20,40}",
        "[a-zé漢🙂]{1,12}",
    ]
}

/// Pairs with unique keys, in generated order.
fn keyed<T: std::fmt::Debug + Clone>(
    value: impl Strategy<Value = T>,
    max: usize,
) -> impl Strategy<Value = Vec<(SmolStr, T)>> {
    prop::collection::vec((name(), value), 0..max).prop_map(|pairs| {
        let mut seen = IndexMap::new();
        for (k, v) in pairs {
            seen.entry(SmolStr::new(k)).or_insert(v);
        }
        seen.into_iter().collect()
    })
}

fn schema() -> impl Strategy<Value = DatasetSchema> {
    (keyed((dtype(), keyed(dtype(), 4)), 6), keyed(dtype(), 5)).prop_map(|(arrays, attributes)| {
        DatasetSchema {
            arrays: arrays
                .into_iter()
                .map(|(name, (dtype, attributes))| ArrayDecl {
                    name,
                    dtype,
                    attributes,
                })
                .collect(),
            attributes,
        }
    })
}

#[derive(Debug, Clone)]
struct Plan {
    codec: Codec,
    created: i64,
    schemas: Vec<DatasetSchema>,
    /// (name, which schema) — the choice is taken modulo the schema count.
    datasets: Vec<(SmolStr, usize)>,
    variables: Vec<(SmolStr, u64)>,
}

fn plan(max_seg: u64) -> impl Strategy<Value = Plan> {
    (
        prop_oneof![
            Just(Codec::Zstd),
            Just(Codec::Lz4),
            Just(Codec::Uncompressed)
        ],
        any::<i64>(),
        prop::collection::vec(schema(), 0..5),
        keyed(any::<usize>(), 60),
        keyed(1..=max_seg, 8),
    )
        .prop_map(|(codec, created, schemas, datasets, variables)| Plan {
            codec,
            created,
            datasets: if schemas.is_empty() { vec![] } else { datasets },
            schemas,
            variables,
        })
}

fn build(plan: &Plan) -> (CollectionFooter, u64) {
    let mut b = FooterBuilder::new(plan.codec, plan.created);
    let indices: Vec<u32> = plan.schemas.iter().map(|s| b.intern_schema(s)).collect();
    for (name, choice) in &plan.datasets {
        let ordinal = b
            .push_dataset(name, indices[choice % indices.len()])
            .unwrap();
        assert_eq!(ordinal as usize, b_len(&plan.datasets, name));
    }
    for (name, len) in &plan.variables {
        b.push_variable(name, *len).unwrap();
    }
    let end = b.next_offset();
    (b.finish(), end)
}

fn b_len(datasets: &[(SmolStr, usize)], name: &SmolStr) -> usize {
    datasets.iter().position(|(n, _)| n == name).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn a_built_footer_decodes_to_itself(plan in plan(1 << 40)) {
        let (footer, end) = build(&plan);
        footer.validate().unwrap();
        footer.validate_layout(end).unwrap();
        let decoded = CollectionFooter::decode(&footer.encode().unwrap(), &Default::default()).unwrap();
        prop_assert_eq!(&decoded, &footer);
        // And the views resolve what was declared, in order.
        for (name, choice) in &plan.datasets {
            let schema = &plan.schemas[choice % plan.schemas.len()];
            let index = decoded.datasets[name.as_str()];
            let view = decoded.schema_view(index).unwrap();
            prop_assert_eq!(&view.to_owned_schema(), schema);
            prop_assert_eq!(&decoded.schema_view_or_empty(index).to_owned_schema(), schema);
        }
        // An index past the pool is no schema, or an empty one: never a panic.
        let past = u32::try_from(decoded.schema_pool.len()).unwrap();
        prop_assert!(decoded.schema_view(past).is_none());
        let empty = decoded.schema_view_or_empty(past).to_owned_schema();
        prop_assert!(empty.arrays.is_empty() && empty.attributes.is_empty());
        prop_assert_eq!(
            decoded.datasets.keys().cloned().collect::<Vec<_>>(),
            plan.datasets.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_built_container_opens_to_its_footer(plan in plan(300), seed in any::<u64>()) {
        let (footer, _) = build(&plan);
        let mut rng = common::Rng(seed);
        let segments: Vec<Vec<u8>> = plan
            .variables
            .iter()
            .map(|(_, len)| (0..*len).map(|_| rng.next() as u8).collect())
            .collect();
        let bytes = common::container(&footer, &segments);
        let opened = open_bytes(&bytes, Default::default()).unwrap();
        prop_assert_eq!(&opened.footer, &footer);
        prop_assert_eq!(opened.container_len, bytes.len() as u64);
        for (var, seg) in opened.footer.variables.iter().zip(&segments) {
            let r = var.range().unwrap();
            prop_assert_eq!(&bytes[r.start as usize..r.end as usize], seg.as_slice());
        }
    }

    #[test]
    fn a_mask_round_trips(ordinals in prop::collection::btree_set(0..u32::MAX, 0..300)) {
        let mask = DeletionMask::from_ordinals(ordinals.iter().copied());
        let bytes = mask.encode();
        prop_assert_eq!(bytes.len(), 12 + 4 * ordinals.len());
        prop_assert_eq!(&bytes[..4], &MASK_MAGIC[..]);
        prop_assert_eq!(&bytes[4..8], &1u32.to_le_bytes()[..]);
        prop_assert_eq!(&bytes[8..12], &(ordinals.len() as u32).to_le_bytes()[..]);
        for (chunk, o) in bytes[12..].chunks(4).zip(&ordinals) {
            prop_assert_eq!(chunk, &o.to_le_bytes()[..]);
        }
        let (decoded, warnings) = DeletionMask::decode(&bytes, u32::MAX).unwrap();
        prop_assert!(warnings.is_empty(), "{:?}", warnings);
        prop_assert_eq!(decoded.iter().collect::<BTreeSet<_>>(), ordinals);
        prop_assert_eq!(decoded, mask);
    }

    #[test]
    fn a_truncated_mask_keeps_every_whole_ordinal(
        ordinals in prop::collection::btree_set(0..1000u32, 1..100),
        cut in any::<prop::sample::Index>(),
    ) {
        let bytes = DeletionMask::from_ordinals(ordinals.iter().copied()).encode();
        let cut = 12 + cut.index(bytes.len() - 12);
        prop_assert!(cut < bytes.len());
        let (decoded, warnings) = DeletionMask::decode(&bytes[..cut], 1000).unwrap();
        let present = (cut - 12) / 4;
        let expected: Vec<u32> = ordinals.iter().copied().take(present).collect();
        prop_assert_eq!(decoded.iter().collect::<Vec<_>>(), expected);
        prop_assert_eq!(
            warnings,
            vec![MaskWarning::Truncated { declared: ordinals.len() as u32, present: present as u32 }]
        );
    }

    #[test]
    fn ordinals_past_the_dataset_count_are_dropped_with_a_warning(
        ordinals in prop::collection::btree_set(0..2000u32, 0..100),
        count in 0..2000u32,
    ) {
        let bytes = DeletionMask::from_ordinals(ordinals.iter().copied()).encode();
        let (decoded, warnings) = DeletionMask::decode(&bytes, count).unwrap();
        let kept: Vec<u32> = ordinals.iter().copied().filter(|&o| o < count).collect();
        let dropped: Vec<MaskWarning> = ordinals
            .iter()
            .copied()
            .filter(|&o| o >= count)
            .map(|ordinal| MaskWarning::OrdinalOutOfRange { ordinal, dataset_count: count })
            .collect();
        prop_assert_eq!(decoded.iter().collect::<Vec<_>>(), kept);
        prop_assert_eq!(warnings, dropped);
    }

    #[test]
    fn a_mask_with_a_wrong_magic_is_corrupt(
        magic in any::<[u8; 4]>().prop_filter("not ATLM", |m| *m != MASK_MAGIC),
        ordinals in prop::collection::btree_set(any::<u32>(), 0..20),
    ) {
        let mut bytes = DeletionMask::from_ordinals(ordinals).encode();
        bytes[..4].copy_from_slice(&magic);
        let decoded = DeletionMask::decode(&bytes, u32::MAX);
        prop_assert!(matches!(decoded, Err(FormatError::CorruptMask { .. })), "{:?}", decoded);
    }
}

#[test]
fn a_mask_of_another_version_is_corrupt_and_trailing_bytes_are_only_a_warning() {
    let mut bytes = DeletionMask::from_ordinals([1, 5]).encode();
    let good = bytes.clone();
    bytes[4] = 2;
    assert!(matches!(
        DeletionMask::decode(&bytes, 10),
        Err(FormatError::CorruptMask { .. })
    ));
    let mut trailing = good.clone();
    trailing.extend_from_slice(&[0, 0, 0, 0, 9]);
    let (mask, warnings) = DeletionMask::decode(&trailing, 10).unwrap();
    assert_eq!(mask.iter().collect::<Vec<_>>(), [1, 5]);
    assert_eq!(warnings, vec![MaskWarning::TrailingBytes { count: 5 }]);
    // Out of order and repeated ordinals are merged, with a warning.
    let mut unordered = good[..8].to_vec();
    unordered.extend_from_slice(&3u32.to_le_bytes());
    for o in [5u32, 1, 5] {
        unordered.extend_from_slice(&o.to_le_bytes());
    }
    let (mask, warnings) = DeletionMask::decode(&unordered, 10).unwrap();
    assert_eq!(mask.iter().collect::<Vec<_>>(), [1, 5]);
    assert_eq!(warnings, vec![MaskWarning::NotStrictlyIncreasing]);
    // A container file where the mask belongs is named as such.
    let err = DeletionMask::decode(b"ATLS\x08\0\0\0\0\0\0\0\0\0\0\0", 10).unwrap_err();
    assert!(err.to_string().contains("ATLM"), "{err}");
}
