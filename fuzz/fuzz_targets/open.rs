//! Opens arbitrary bytes as a container (see `atlas_fuzzing::open`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    atlas_fuzzing::open(data);
});
