//! Decodes arbitrary bytes as a collection footer (see `atlas_fuzzing::footer`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    atlas_fuzzing::footer(data);
});
