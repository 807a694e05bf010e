//! Decodes arbitrary bytes as a set manifest (see `atlas_fuzzing::set_manifest`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    atlas_fuzzing::set_manifest(data);
});
