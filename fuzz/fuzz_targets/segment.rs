//! Arbitrary bytes as one segment, through every read the facade makes (see `atlas_fuzzing::segment`).
#![no_main]

use libfuzzer_sys::fuzz_target;

/// libfuzzer-sys's panic hook aborts on every panic, even one atlas-segment's
/// guard catches (array-format panics on some damaged chunks). A quiet hook
/// lets the guard work; a panic that escapes still aborts, because it cannot
/// unwind out of libFuzzer's `extern "C"` callback.
static QUIET_PANICS: std::sync::Once = std::sync::Once::new();

fuzz_target!(|data: &[u8]| {
    QUIET_PANICS.call_once(|| std::panic::set_hook(Box::new(|_| {})));
    atlas_fuzzing::segment(data);
});
