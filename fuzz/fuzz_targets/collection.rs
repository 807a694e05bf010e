//! Arbitrary bytes as a whole collection (and its mask) on the memory backend, through everything the reader offers (see `atlas_fuzzing::collection`).
#![no_main]

use libfuzzer_sys::fuzz_target;

/// libfuzzer-sys's panic hook aborts on every panic, even one atlas-segment's
/// guard catches (array-format panics on some damaged chunks). A quiet hook
/// lets the guard work; a panic that escapes still aborts, because it cannot
/// unwind out of libFuzzer's `extern "C"` callback.
static QUIET_PANICS: std::sync::Once = std::sync::Once::new();

fuzz_target!(|data: &[u8]| {
    QUIET_PANICS.call_once(|| std::panic::set_hook(Box::new(|_| {})));
    atlas_fuzzing::collection(data);
});
