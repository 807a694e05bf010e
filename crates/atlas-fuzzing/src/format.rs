//! The atlas-format targets: the container open protocol, the footer, the
//! deletion mask and the set manifest.

use atlas_format::{
    CollectionFooter, DecodeLimits, DecodeResult, DeletionMask, OpenDecoder, ReadRequest,
    SetManifest, Trailer, open_bytes,
};

/// Small enough that a hostile footer cannot make a run slow.
const LIMITS: DecodeLimits = DecodeLimits::new(1 << 20, 16 << 20);

/// Opens arbitrary bytes as a container: whole (`open_bytes`, known length)
/// and through the push decoder in suffix mode (unknown length), with the
/// default 64 KiB probe and with a small probe that forces a second read.
pub fn open(data: &[u8]) {
    let _ = Trailer::parse_tail(data);
    if let Ok(opened) = open_bytes(data, LIMITS) {
        assert_eq!(opened.container_len, data.len() as u64);
        opened.footer.validate().expect("an opened footer is valid");
        opened
            .footer
            .validate_layout(opened.footer_offset())
            .expect("an opened footer's segments reach the footer");
    }
    by_suffix(data, atlas_format::TAIL_PROBE_LEN);
    by_suffix(data, 24);
    by_range(data, 24);
}

/// Decodes arbitrary bytes as a footer: as stored (zstd frame, then
/// MessagePack, then validation) and, since a fuzzer rarely writes a valid
/// zstd frame, as the MessagePack inside one.
pub fn footer(data: &[u8]) {
    if let Ok(footer) = CollectionFooter::decode(data, &LIMITS) {
        // Whatever decodes re-encodes and decodes to itself.
        let again = CollectionFooter::decode(&footer.encode().expect("encode"), &LIMITS)
            .expect("a decoded footer decodes again");
        assert_eq!(again, footer);
    }
    if let Ok(footer) = CollectionFooter::from_msgpack(data)
        && footer.validate().is_ok()
    {
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

/// Decodes arbitrary bytes as a deletion mask. The first four bytes are the
/// container's dataset count; the rest is the mask file.
pub fn mask(data: &[u8]) {
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
}

fn by_suffix(data: &[u8], probe: u64) {
    let mut decoder = OpenDecoder::new(None)
        .with_limits(LIMITS)
        .with_probe_len(probe);
    for _ in 0..4 {
        match decoder.try_decode() {
            Err(_) => return,
            Ok(DecodeResult::Opened(opened)) => {
                if (data.len() as u64) < probe {
                    // The first answer was the whole object: its length is known and exact.
                    assert_eq!(opened.container_len, data.len() as u64);
                    assert!(opened.header_checked);
                }
                opened.footer.validate().expect("an opened footer is valid");
                return;
            }
            Ok(DecodeResult::NeedsData(ReadRequest::Suffix { len })) => {
                let start = data
                    .len()
                    .saturating_sub(usize::try_from(len).unwrap_or(usize::MAX));
                // `start <= data.len()`, so this is the last `len` bytes (or all of them).
                let tail = data.get(start..).unwrap_or_default();
                if decoder.push_suffix(tail).is_err() {
                    return;
                }
            }
            Ok(DecodeResult::NeedsData(other)) => panic!("suffix mode asked for {other:?}"),
        }
    }
    panic!("the decoder asked for more than two reads");
}

/// The known-length path with a small probe, so that a second range read is
/// the rule rather than the exception; answers arrive in 7-byte pieces.
fn by_range(data: &[u8], probe: u64) {
    let len = data.len() as u64;
    let mut decoder = OpenDecoder::new(Some(len))
        .with_limits(LIMITS)
        .with_probe_len(probe);
    for _ in 0..4 {
        match decoder.try_decode() {
            Err(_) => return,
            Ok(DecodeResult::Opened(opened)) => {
                assert_eq!(opened.container_len, len);
                assert_eq!(
                    opened.header_checked,
                    len <= probe.max(opened.footer_len + 16)
                );
                return;
            }
            Ok(DecodeResult::NeedsData(ReadRequest::Range(range))) => {
                let asked = usize::try_from(range.start)
                    .ok()
                    .zip(usize::try_from(range.end).ok())
                    .filter(|(start, end)| start < end)
                    .and_then(|(start, end)| data.get(start..end));
                let Some(bytes) = asked else {
                    panic!("range mode asked for {range:?} of {len}");
                };
                for piece in bytes.chunks(7) {
                    decoder
                        .push(piece)
                        .expect("the bytes asked for are accepted");
                }
            }
            Ok(DecodeResult::NeedsData(other)) => panic!("range mode asked for {other:?}"),
        }
    }
    panic!("the decoder asked for more than two reads");
}

/// Decodes `data` as a set manifest, and as a manifest body alone (so mutations
/// reach the validation past the checksum). What decodes is valid, so it
/// encodes, and the encoding decodes to the same manifest.
pub fn set_manifest(data: &[u8]) {
    if let Ok(manifest) = SetManifest::decode(data, &LIMITS) {
        let again = manifest.encode().expect("a decoded manifest encodes");
        let decoded = SetManifest::decode(&again, &LIMITS).expect("an encoded manifest decodes");
        assert_eq!(decoded, manifest);
    }
    if let Ok(manifest) = SetManifest::from_msgpack(data) {
        let _ = manifest.validate();
    }
}
