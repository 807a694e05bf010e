//! The atlas-segment target: one segment's bytes through the trailer check
//! and footer validation, then every read the facade makes (layouts,
//! statistics, attributes and attribute columns off the archive, every array
//! read whole, typed and untyped, with right and wrong element types, some
//! through array-format's open, its panics caught).

use atlas_segment::{ArrayData, Timestamp, open_bytes};

use crate::{block_on, small};

/// Feeds arbitrary bytes to atlas-segment as one segment.
pub fn segment(data: &[u8]) {
    block_on(exercise(data));
}

async fn exercise(data: &[u8]) {
    let Ok(segment) = open_bytes("fuzz", bytes::Bytes::copy_from_slice(data)).await else {
        return;
    };
    let names: Vec<String> = segment.arrays().map(|a| a.name().to_owned()).collect();
    let mut keys = Vec::new();
    for name in &names {
        for (key, _) in segment.attributes(name).unwrap_or_default() {
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        let Ok(info) = segment.array(name) else {
            continue;
        };
        let _ = (
            info.dtype(),
            info.fill(),
            info.stats(),
            info.dimension_names(),
        );
        let _ = info.chunk_shape();
        let _ = info.written_chunks().count();
        if !small(info.shape().iter().map(|&d| u64::from(d))) {
            continue;
        }
        if let Ok(any) = segment.read_any(name, &[], &[]).await {
            // The typed read of the same type gives the same elements.
            match any {
                ArrayData::Float64(a) => {
                    let b = segment.read::<f64>(name, &[], &[]).await;
                    assert!(b.is_ok_and(|b| b.len() == a.len()));
                }
                ArrayData::Timestamp(a) => {
                    let b = segment.read::<Timestamp>(name, &[], &[]).await;
                    assert!(b.is_ok_and(|b| b == a));
                }
                _ => {}
            }
        }
        // A wrong element type is an error, never a reinterpretation.
        let _ = segment.read::<u8>(name, &[], &[]).await;
        let _ = segment.read::<String>(name, &[], &[]).await;
    }
    for key in &keys {
        if let Ok(Some(cells)) = segment.attribute_cells(key) {
            assert_eq!(cells.len(), names.len());
        }
        for name in &names {
            let _ = segment.attribute(name, key);
        }
    }
}
