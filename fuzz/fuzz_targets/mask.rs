//! Decodes arbitrary bytes as a deletion mask (see `atlas_fuzzing::mask`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    atlas_fuzzing::mask(data);
});
