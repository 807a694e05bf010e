//! Arbitrary bytes as the dataset index beside a container big enough that reads take their chunk places from it (see `atlas_fuzzing::index_places`).
#![no_main]

use libfuzzer_sys::fuzz_target;

/// As in `collection`: a quiet hook, so panics the library catches stay quiet.
static QUIET_PANICS: std::sync::Once = std::sync::Once::new();

fuzz_target!(|data: &[u8]| {
    QUIET_PANICS.call_once(|| std::panic::set_hook(Box::new(|_| {})));
    atlas_fuzzing::index_places(data);
});
