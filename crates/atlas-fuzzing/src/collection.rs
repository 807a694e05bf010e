//! The end-to-end target: arbitrary bytes as `data.atlas` (and optionally
//! `deleted.mask`) on OpenDAL's memory backend, then everything the reader
//! offers: the catalogue, every dataset's schema, layouts, statistics and
//! attributes, collection-wide statistics and attribute columns, the
//! catalogue table, every array read whole, and a deep verify.

use atlas::CatalogueOptions;
use atlas::{Atlas, OpenOptions, Region, VerifyOptions};
use atlas_format::DecodeLimits;
use opendal::Operator;
use opendal::services::Memory;

use crate::{block_on, small};

/// Bytes of the length prefix in front of the mask.
const MASK_LEN_BYTES: usize = 4;

/// Splits a fuzz input into `(mask, container)`: a little-endian `u32` mask
/// length, that many mask bytes, then the container. An input too short for
/// its own prefix is all container, with no mask file.
pub fn split_input(data: &[u8]) -> (Option<&[u8]>, &[u8]) {
    let Some((len, rest)) = data.split_first_chunk::<MASK_LEN_BYTES>() else {
        return (None, data);
    };
    let len = usize::try_from(u32::from_le_bytes(*len)).unwrap_or(usize::MAX);
    match (len, rest.split_at_checked(len)) {
        (0, _) => (None, rest),
        (_, Some((mask, container))) => (Some(mask), container),
        (_, None) => (None, data),
    }
}

/// The input [`collection`] reads as `container` with `mask` (a seed's shape).
pub fn collection_input(container: &[u8], mask: Option<&[u8]>) -> Vec<u8> {
    let mask = mask.unwrap_or_default();
    let mut out = u32::try_from(mask.len())
        .unwrap_or(u32::MAX)
        .to_le_bytes()
        .to_vec();
    out.extend_from_slice(mask);
    out.extend_from_slice(container);
    out
}

/// Opens arbitrary bytes as a collection and reads everything it offers.
pub fn collection(data: &[u8]) {
    let (mask, container) = split_input(data);
    block_on(exercise(mask, container));
}

async fn exercise(mask: Option<&[u8]>, container: &[u8]) {
    let Ok(op) = Operator::new(Memory::default()) else {
        return;
    };
    if op.write("c/data.atlas", container.to_vec()).await.is_err() {
        return;
    }
    if let Some(mask) = mask
        && op.write("c/deleted.mask", mask.to_vec()).await.is_err()
    {
        return;
    }
    let options = OpenOptions::default()
        .block_cache_bytes(16 << 20)
        .limits(DecodeLimits::new(1 << 20, 16 << 20));
    let Ok(atlas) = Atlas::open((op, "c/"), &options).await else {
        return;
    };
    // The catalogue: all from memory (a lone collection's one member is open).
    let Some(member) = atlas.lone_member() else {
        return;
    };
    let (Ok(names), Ok(count), Ok(arrays), Ok(datasets)) = (
        atlas.dataset_names().await,
        atlas.dataset_count().await,
        atlas.array_names().await,
        atlas.datasets().await,
    ) else {
        panic!("a lone collection's catalogue questions made a request and failed");
    };
    assert_eq!(names.len(), count);
    let _ = (
        member.segments(),
        member.deleted_datasets(),
        member.mask_warnings(),
    );

    // Collection-wide: statistics, statistics per dataset, attribute columns.
    let mut keys = Vec::new();
    for dataset in &datasets {
        for (key, _) in dataset.schema().attributes() {
            if !keys.iter().any(|k: &String| k == key) {
                keys.push(key.to_owned());
            }
        }
    }
    for array in &arrays {
        let _ = atlas.array_stats(array).await;
        let _ = atlas.array_stats_by_dataset(array).await;
        for key in &keys {
            let _ = atlas.attributes_by_dataset(Some(array), key).await;
        }
    }
    for key in &keys {
        let _ = atlas.attributes_by_dataset(None, key).await;
    }
    let _ = atlas.catalogue(&CatalogueOptions::default()).await;

    // Every dataset, every array.
    for dataset in &datasets {
        assert!(names.iter().any(|n| n == dataset.name()));
        let _ = dataset.attributes().await;
        let declared: Vec<String> = dataset
            .schema()
            .arrays()
            .map(|a| a.name().to_owned())
            .collect();
        for array in &declared {
            let _ = dataset.array_stats(array).await;
            let _ = dataset.array_attributes(array).await;
            let Ok(layout) = dataset.array_layout(array).await else {
                continue;
            };
            if !small(layout.shape.iter().copied()) {
                continue;
            }
            if let Ok(values) = dataset.read_any(array, Region::all()).await {
                // What reads back has the shape the layout promised.
                let shape: Vec<u64> = values.shape().iter().map(|&d| d as u64).collect();
                assert_eq!(shape, layout.shape, "{array} of {}", dataset.name());
            }
        }
    }
    let _ = member.verify(&VerifyOptions::new().deep(true)).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_input_splits_into_its_mask_and_container_and_back() {
        let input = collection_input(b"container", Some(b"mask"));
        assert_eq!(split_input(&input), (Some(&b"mask"[..]), &b"container"[..]));
        let input = collection_input(b"container", None);
        assert_eq!(split_input(&input), (None, &b"container"[..]));
        // A prefix longer than the input: the whole input is the container.
        let odd = [200, 0, 0, 0, 1, 2];
        assert_eq!(split_input(&odd), (None, &odd[..]));
        assert_eq!(split_input(b"ab"), (None, &b"ab"[..]));
    }
}
