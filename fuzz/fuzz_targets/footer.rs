//! Decodes arbitrary bytes as a footer: as stored (zstd frame, then
//! MessagePack, then validation) and, since a fuzzer rarely writes a valid
//! zstd frame, as the MessagePack inside one.
#![no_main]

use atlas_format::{CollectionFooter, DecodeLimits};
use libfuzzer_sys::fuzz_target;

const LIMITS: DecodeLimits = DecodeLimits {
    max_footer_bytes: 1 << 20,
    max_decompressed_bytes: 16 << 20,
};

fuzz_target!(|data: &[u8]| {
    if let Ok(footer) = CollectionFooter::decode(data, &LIMITS) {
        // Whatever decodes re-encodes and decodes to itself.
        let again = CollectionFooter::decode(&footer.encode().expect("encode"), &LIMITS)
            .expect("a decoded footer decodes again");
        assert_eq!(again, footer);
    }
    if let Ok(footer) = CollectionFooter::from_msgpack(data) {
        if footer.validate().is_ok() {
            let _ = footer.segments_end();
            for i in 0..footer.schema_pool.len() {
                let view = footer.schema_view(i as u32).expect("schema in range");
                let _ = view.to_owned_schema();
            }
            let bytes = footer.to_msgpack().expect("encode");
            assert_eq!(
                CollectionFooter::from_msgpack(&bytes).expect("round trip"),
                footer
            );
        }
    }
});
