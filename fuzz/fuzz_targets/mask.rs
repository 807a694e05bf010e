//! Decodes arbitrary bytes as a deletion mask. The first four bytes are the
//! container's dataset count; the rest is the mask file.
#![no_main]

use atlas_format::DeletionMask;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((count, mask)) = data.split_first_chunk::<4>() else {
        return;
    };
    let count = u32::from_le_bytes(*count);
    if let Ok((decoded, _warnings)) = DeletionMask::decode(mask, count) {
        assert!(
            decoded.iter().all(|o| o < count),
            "an ordinal past the count survived"
        );
        // What survives round-trips.
        let (again, warnings) =
            DeletionMask::decode(&decoded.encode(), count).expect("an encoded mask decodes");
        assert!(warnings.is_empty());
        assert_eq!(again, decoded);
    }
});
