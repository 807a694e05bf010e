//! Feeds arbitrary bytes to atlas-segment as one segment: the trailer check
//! and footer screen at open, then every read the facade makes (layouts,
//! statistics, attributes and attribute columns, every array read whole,
//! typed and untyped). Nothing may panic or abort; errors are fine.
#![no_main]

use atlas_segment::{ArrayData, Timestamp, open_bytes};
use libfuzzer_sys::fuzz_target;

/// Reads larger than this many elements are skipped (the facade refuses
/// reads beyond its own budget; this keeps the fuzzer's memory small).
const MAX_ELEMENTS: u64 = 1 << 20;

/// libfuzzer-sys's panic hook aborts on every panic, even one atlas-segment's
/// guard catches (array-format panics on some damaged chunks by design of
/// 0.15). A quiet hook lets the guard work; a panic that escapes still
/// aborts, because it cannot unwind out of libFuzzer's `extern "C"` callback.
static QUIET_PANICS: std::sync::Once = std::sync::Once::new();

fuzz_target!(|data: &[u8]| {
    QUIET_PANICS.call_once(|| std::panic::set_hook(Box::new(|_| {})));
    let Ok(rt) = tokio::runtime::Builder::new_current_thread().build() else {
        return;
    };
    rt.block_on(exercise(data));
});

async fn exercise(data: &[u8]) {
    let Ok(segment) = open_bytes("fuzz", bytes::Bytes::copy_from_slice(data)).await else {
        return;
    };
    let names: Vec<String> = segment.arrays().map(|a| a.name().to_owned()).collect();
    let mut keys = Vec::new();
    for name in &names {
        for (key, _) in segment.attributes(name) {
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
        let elements = info
            .shape()
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(u64::from(d)));
        if elements.is_none_or(|n| n > MAX_ELEMENTS) {
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
        if let Some(column) = segment.attribute_column(key) {
            for position in 0..column.len() {
                let _ = column.get(position);
            }
        }
    }
}
