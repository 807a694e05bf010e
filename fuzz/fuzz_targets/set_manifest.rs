//! Decodes arbitrary bytes as a set manifest. Calls atlas-format directly
//! (not atlas-fuzzing): the manifest decoder needs none of the facade.
#![no_main]

use atlas_format::{DecodeLimits, SetManifest};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let limits = DecodeLimits::new(1 << 20, 16 << 20);
    if let Ok(manifest) = SetManifest::decode(data, &limits) {
        // What decodes is valid, so it encodes, and the encoding decodes.
        let again = manifest.encode().expect("a decoded manifest encodes");
        SetManifest::decode(&again, &limits).expect("an encoded manifest decodes");
    }
    // The body alone, so mutations reach serde and the validation past the checksum.
    if let Ok(manifest) = SetManifest::from_msgpack(data) {
        let _ = manifest.validate();
    }
});
