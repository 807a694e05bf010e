//! The push decoder's reads, counted: one read when the footer fits in the
//! 64 KiB tail probe, exactly two when it does not, suffix requests when the
//! length is unknown, and refusals that cost no further read.

#![cfg(test)]

use crate::common;

use atlas_format::{
    CollectionFooter, DecodeLimits, DecodeResult, FormatError, OpenDecoder, ReadRequest,
    TAIL_PROBE_LEN, TRAILER_LEN, Trailer, open_bytes,
};
use common::{built, container, fixtures, is_corrupt, limits, open_known, open_suffix};

const PROBE: u64 = TAIL_PROBE_LEN;

/// A container larger than the probe whose footer is small.
fn small_footer_big_container() -> (CollectionFooter, Vec<u8>) {
    let (footer, segments) = built(50, &[40_000, 70_001, 5], 1);
    let bytes = container(&footer, &segments);
    assert!(bytes.len() as u64 > PROBE);
    (footer, bytes)
}

/// A container whose footer alone is larger than the probe: 20 000 datasets
/// with random-ish names.
fn big_footer_container() -> (CollectionFooter, Vec<u8>) {
    let (footer, segments) = built(20_000, &[1000, 3, 70_001], 2);
    let bytes = container(&footer, &segments);
    (footer, bytes)
}

fn footer_len(bytes: &[u8]) -> u64 {
    common::footer_slice(bytes).len() as u64
}

#[test]
fn a_small_footer_opens_with_one_read_of_the_last_64_kib() {
    let (footer, bytes) = small_footer_big_container();
    let len = bytes.len() as u64;
    for piece in [usize::MAX, 7] {
        let (opened, reads) = open_known(&bytes, piece, OpenDecoder::new(Some(len)));
        let opened = opened.unwrap();
        assert_eq!(reads, vec![len - PROBE..len], "piece {piece}");
        assert_eq!(opened.footer, footer);
        assert_eq!(opened.container_len, len);
        assert_eq!(opened.footer_len, footer_len(&bytes));
        assert_eq!(
            opened.footer_offset(),
            len - TRAILER_LEN - opened.footer_len
        );
        assert!(!opened.header_checked, "the probe did not cover the header");
    }
}

#[test]
fn a_footer_larger_than_the_probe_opens_with_exactly_two_reads() {
    let (footer, bytes) = big_footer_container();
    let len = bytes.len() as u64;
    let flen = footer_len(&bytes);
    assert!(
        flen + TRAILER_LEN > PROBE,
        "the footer ({flen} bytes) must not fit the probe"
    );
    let footer_start = len - TRAILER_LEN - flen;
    for piece in [usize::MAX, 7] {
        let (opened, reads) = open_known(&bytes, piece, OpenDecoder::new(Some(len)));
        let opened = opened.unwrap();
        assert_eq!(
            reads,
            vec![len - PROBE..len, footer_start..len - PROBE],
            "piece {piece}: the second read is exactly the footer's missing front"
        );
        assert_eq!(opened.footer, footer);
        assert_eq!(opened.footer.datasets.len(), 20_000);
        assert_eq!(opened.container_len, len);
        assert_eq!(opened.footer_len, flen);
        assert_eq!(opened.footer_offset(), footer_start);
        assert!(!opened.header_checked);
    }
}

#[test]
fn a_partial_answer_is_asked_again_for_only_the_missing_bytes() {
    let (footer, bytes) = big_footer_container();
    let len = bytes.len() as u64;
    let mut decoder = OpenDecoder::new(Some(len));
    let mut requests = Vec::new();
    let opened = loop {
        match decoder.try_decode().unwrap() {
            DecodeResult::Opened(c) => break c,
            DecodeResult::NeedsData(ReadRequest::Range(r)) => {
                requests.push(r.clone());
                // Answer only the first 1000 bytes (or all, if fewer) each time.
                let end = (r.start + 1000).min(r.end);
                decoder
                    .push(&bytes[r.start as usize..end as usize])
                    .unwrap();
            }
            DecodeResult::NeedsData(other) => panic!("{other:?}"),
        }
    };
    assert_eq!(opened.footer, footer);
    // Every request picks up where the bytes so far ended, and never overlaps.
    for pair in requests.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        assert!(
            b.start == a.start + 1000 || b.end <= a.start,
            "{a:?} then {b:?}"
        );
    }
    let covered: u64 = requests.iter().map(|r| (r.end - r.start).min(1000)).sum();
    assert_eq!(covered, footer_len(&bytes) + TRAILER_LEN);
}

#[test]
fn with_an_unknown_length_a_small_footer_costs_one_suffix_read() {
    let (footer, bytes) = small_footer_big_container();
    let (opened, reads) = open_suffix(&bytes, OpenDecoder::new(None));
    let opened = opened.unwrap();
    assert_eq!(reads, vec![PROBE]);
    assert_eq!(opened.footer, footer);
    assert_eq!(
        opened.container_len,
        bytes.len() as u64,
        "length learned from the footer"
    );
    assert!(!opened.header_checked);
}

#[test]
fn with_an_unknown_length_a_big_footer_costs_two_suffix_reads() {
    let (footer, bytes) = big_footer_container();
    let flen = footer_len(&bytes);
    let (opened, reads) = open_suffix(&bytes, OpenDecoder::new(None));
    let opened = opened.unwrap();
    assert_eq!(reads, vec![PROBE, flen + TRAILER_LEN]);
    assert_eq!(opened.footer, footer);
    assert_eq!(opened.container_len, bytes.len() as u64);
    assert_eq!(opened.footer_len, flen);
    assert!(!opened.header_checked);
}

#[test]
fn a_container_shorter_than_the_probe_is_read_whole_and_its_header_checked() {
    let (footer, segments) = built(10, &[100, 200], 3);
    let bytes = container(&footer, &segments);
    let len = bytes.len() as u64;
    assert!(len < PROBE);

    let (opened, reads) = open_known(&bytes, 7, OpenDecoder::new(Some(len)));
    let opened = opened.unwrap();
    assert_eq!(reads, vec![0..len]);
    assert!(opened.header_checked);
    assert_eq!(opened.footer, footer);

    let (opened, reads) = open_suffix(&bytes, OpenDecoder::new(None));
    let opened = opened.unwrap();
    assert_eq!(reads, vec![PROBE]);
    assert!(opened.header_checked);
    assert_eq!(opened.container_len, len);

    // Since the header is in hand, it is checked: a bad leading magic or version is refused.
    let mut bad_magic = bytes.clone();
    bad_magic[0] = b'X';
    let mut bad_version = bytes.clone();
    bad_version[4] = 9;
    for (what, b) in [("magic", &bad_magic), ("version", &bad_version)] {
        let (known, reads) = open_known(b, usize::MAX, OpenDecoder::new(Some(len)));
        assert_eq!(reads.len(), 1);
        let (suffix, _) = open_suffix(b, OpenDecoder::new(None));
        for r in [known, suffix] {
            match what {
                "magic" => assert!(is_corrupt(&r), "{r:?}"),
                _ => assert!(
                    matches!(r, Err(FormatError::UnsupportedVersion { found: 9, .. })),
                    "{r:?}"
                ),
            }
        }
    }
}

#[test]
fn the_leading_magic_is_not_fetched_when_the_probe_missed_it() {
    let (footer, mut bytes) = small_footer_big_container();
    bytes[..4].copy_from_slice(b"XXXX");
    let (opened, reads) = open_known(
        &bytes,
        usize::MAX,
        OpenDecoder::new(Some(bytes.len() as u64)),
    );
    assert_eq!(reads.len(), 1, "no read spent on the header");
    let opened = opened.unwrap();
    assert!(!opened.header_checked);
    assert_eq!(opened.footer, footer);
}

/// Rewrites the trailer's footer_size.
fn with_footer_size(bytes: &[u8], size: u64) -> Vec<u8> {
    let mut out = bytes.to_vec();
    let n = out.len();
    out[n - 16..].copy_from_slice(&Trailer { footer_size: size }.encode());
    out
}

#[test]
fn a_footer_size_beyond_the_container_is_corrupt_after_one_read() {
    for (footer, segs) in [built(3, &[10], 4), built(3, &[70_000], 4)] {
        let bytes = container(&footer, &segs);
        let len = bytes.len() as u64;
        // Just too big (it would eat into the header), as big as the container, and far beyond.
        for size in [len - TRAILER_LEN - 7, len, len * 3, u64::MAX] {
            let b = with_footer_size(&bytes, size);
            let (r, reads) = open_known(&b, usize::MAX, OpenDecoder::new(Some(len)));
            assert!(is_corrupt(&r), "size {size} of {len}: {r:?}");
            assert_eq!(reads.len(), 1, "size {size} of {len}");
            let (r, reads) = open_suffix(&b, OpenDecoder::new(None));
            assert!(is_corrupt(&r), "suffix, size {size} of {len}: {r:?}");
            assert!(reads.len() <= 2);
        }
        // The largest size that fits is decoded (and found wrong) instead of refused up front.
        let b = with_footer_size(&bytes, len - TRAILER_LEN - 8);
        let r = open_bytes(&b, limits());
        assert!(is_corrupt(&r), "{r:?}");
    }
}

#[test]
fn a_footer_size_above_the_limit_is_refused_without_a_second_read() {
    let (_, bytes) = big_footer_container();
    let len = bytes.len() as u64;
    let flen = footer_len(&bytes);
    let tight = DecodeLimits::new(flen - 1, DecodeLimits::default().max_decompressed_bytes);
    let (r, reads) = open_known(
        &bytes,
        usize::MAX,
        OpenDecoder::new(Some(len)).with_limits(tight),
    );
    assert!(is_corrupt(&r), "{r:?}");
    assert_eq!(reads, vec![len - PROBE..len]);
    let (r, reads) = open_suffix(&bytes, OpenDecoder::new(None).with_limits(tight));
    assert!(is_corrupt(&r), "{r:?}");
    assert_eq!(reads, vec![PROBE]);
    // At exactly the limit it opens.
    let exact = DecodeLimits::new(flen, DecodeLimits::default().max_decompressed_bytes);
    let (r, reads) = open_known(
        &bytes,
        usize::MAX,
        OpenDecoder::new(Some(len)).with_limits(exact),
    );
    r.unwrap();
    assert_eq!(reads.len(), 2);
}

/// A zstd frame header (magic, descriptor with an 8-byte content size, no
/// checksum, single segment) declaring `size` decompressed bytes, and no block.
fn frame_header_declaring(size: u64) -> Vec<u8> {
    let mut f = vec![0x28, 0xb5, 0x2f, 0xfd, 0b1110_0000];
    f.extend_from_slice(&size.to_le_bytes());
    f
}

#[test]
fn a_zstd_frame_declaring_more_than_the_limit_is_refused_before_decompressing() {
    let limit = 1u64 << 20;
    let lim = DecodeLimits::new(DecodeLimits::default().max_footer_bytes, limit);
    // A frame that is only a header: the refusal cannot have come from
    // decoding a block, there is none. The message names the declared size.
    for declared in [limit + 1, 1 << 40, u64::MAX - 2] {
        let frame = frame_header_declaring(declared);
        assert_eq!(
            zstd::zstd_safe::get_frame_content_size(&frame).unwrap(),
            Some(declared)
        );
        match atlas_format::decompress_bounded(&frame, limit) {
            Err(FormatError::CorruptCollection { what, .. }) => assert!(
                what.contains(&declared.to_string()),
                "refused for the declared size: {what}"
            ),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            CollectionFooter::decode(&frame, &lim),
            Err(FormatError::CorruptCollection { .. })
        ));
    }
    // A real frame declaring 2 MiB (of zeros) is refused the same way ...
    let zeros =
        zstd::bulk::compress(&vec![0u8; 2 << 20], atlas_format::DEFAULT_ZSTD_LEVEL).unwrap();
    let declared = zstd::zstd_safe::get_frame_content_size(&zeros)
        .unwrap()
        .unwrap();
    assert_eq!(declared, 2 << 20);
    assert!(matches!(
        atlas_format::decompress_bounded(&zeros, limit),
        Err(FormatError::CorruptCollection { what, .. }) if what.contains(&declared.to_string())
    ));
    // ... while a frame that declares nothing is cut off once it streams past the limit.
    let mut undeclared = Vec::new();
    {
        let mut enc =
            zstd::stream::write::Encoder::new(&mut undeclared, atlas_format::DEFAULT_ZSTD_LEVEL)
                .unwrap();
        enc.include_contentsize(false).unwrap();
        std::io::Write::write_all(&mut enc, &vec![0u8; 2 << 20]).unwrap();
        enc.finish().unwrap();
    }
    assert_eq!(
        zstd::zstd_safe::get_frame_content_size(&undeclared).unwrap(),
        None
    );
    assert!(matches!(
        atlas_format::decompress_bounded(&undeclared, limit),
        Err(FormatError::CorruptCollection { what, .. }) if what.contains("past the limit")
    ));
    // Both come out whole under a limit that admits them.
    assert_eq!(
        atlas_format::decompress_bounded(&zeros, 2 << 20)
            .unwrap()
            .len(),
        2 << 20
    );
    assert_eq!(
        atlas_format::decompress_bounded(&undeclared, 2 << 20)
            .unwrap()
            .len(),
        2 << 20
    );

    // Through the open: a container whose footer frame declares too much.
    let frame = frame_header_declaring(1 << 40);
    let bytes = common::raw_container(&frame, &[]);
    let (r, reads) = open_known(
        &bytes,
        usize::MAX,
        OpenDecoder::new(Some(bytes.len() as u64)),
    );
    assert!(is_corrupt(&r), "{r:?}");
    assert_eq!(reads.len(), 1);
}

#[test]
fn every_fixture_opens_the_same_in_every_mode_and_probe_size() {
    for fx in fixtures() {
        let bytes = &fx.container;
        let len = bytes.len() as u64;
        let flen = footer_len(bytes);
        let reference = open_bytes(bytes, limits()).unwrap();
        assert!(
            reference.header_checked,
            "{}: small fixtures are read whole",
            fx.name
        );

        // A probe smaller than the footer forces the second read.
        let probe = 40u64.min(flen + TRAILER_LEN - 1).max(TRAILER_LEN);
        let (r, reads) = open_known(bytes, 7, OpenDecoder::new(Some(len)).with_probe_len(probe));
        let r = r.unwrap_or_else(|e| panic!("{}: {e}", fx.name));
        assert_eq!(r.footer, reference.footer, "{}", fx.name);
        assert_eq!(
            reads,
            vec![len - probe..len, len - TRAILER_LEN - flen..len - probe],
            "{}",
            fx.name
        );
        let (r, reads) = open_suffix(bytes, OpenDecoder::new(None).with_probe_len(probe));
        let r = r.unwrap_or_else(|e| panic!("{}: {e}", fx.name));
        assert_eq!(r.footer, reference.footer);
        assert_eq!(r.container_len, len);
        assert_eq!(reads, vec![probe, flen + TRAILER_LEN]);
        assert!(!r.header_checked);

        // A probe that covers exactly the footer and trailer: one read, header unchecked
        // unless the container is just header + footer + trailer.
        let exact = flen + TRAILER_LEN;
        let (r, reads) = open_known(bytes, 7, OpenDecoder::new(Some(len)).with_probe_len(exact));
        assert_eq!(reads, vec![len - exact..len], "{}", fx.name);
        assert_eq!(r.unwrap().footer, reference.footer);
    }
}

#[test]
fn a_suffix_that_holds_more_than_the_container_is_corrupt() {
    // A valid small container behind 70 000 bytes of something else: read by
    // length it is refused, so read by suffix it must be too; otherwise the
    // reader would take segment offsets relative to the wrong start.
    let (footer, segments) = built(5, &[100], 5);
    let inner = container(&footer, &segments);
    let mut bytes = vec![0xabu8; 70_000];
    bytes.extend_from_slice(&inner);
    let (r, _) = open_known(
        &bytes,
        usize::MAX,
        OpenDecoder::new(Some(bytes.len() as u64)),
    );
    assert!(is_corrupt(&r), "{r:?}");
    let (r, _) = open_suffix(&bytes, OpenDecoder::new(None));
    assert!(is_corrupt(&r), "{r:?}");
    // The same container alone opens both ways.
    open_suffix(&inner, OpenDecoder::new(None)).0.unwrap();
}

#[test]
fn answering_out_of_protocol_is_misuse() {
    let (_, bytes) = small_footer_big_container();
    let len = bytes.len() as u64;

    // More than asked.
    let mut d = OpenDecoder::new(Some(len));
    let DecodeResult::NeedsData(ReadRequest::Range(r)) = d.try_decode().unwrap() else {
        panic!()
    };
    let too_much = &bytes[(r.start - 1) as usize..r.end as usize];
    assert!(matches!(d.push(too_much), Err(FormatError::Misuse { .. })));
    // push_suffix for a range request, push for a suffix request.
    assert!(matches!(
        d.push_suffix(b"x"),
        Err(FormatError::Misuse { .. })
    ));
    let mut s = OpenDecoder::new(None);
    let DecodeResult::NeedsData(ReadRequest::Suffix { len: want }) = s.try_decode().unwrap() else {
        panic!()
    };
    assert!(matches!(s.push(b"x"), Err(FormatError::Misuse { .. })));
    // A suffix longer than asked, and a second answer.
    let long = vec![0u8; want as usize + 1];
    assert!(matches!(
        s.push_suffix(&long),
        Err(FormatError::Misuse { .. })
    ));
    s.push_suffix(&bytes[bytes.len() - want as usize..])
        .unwrap();
    assert!(matches!(
        s.push_suffix(b""),
        Err(FormatError::Misuse { .. })
    ));
    // Asking again after the answer.
    let mut done = OpenDecoder::new(Some(len));
    done.try_decode().unwrap();
    done.push(&bytes[(len - PROBE) as usize..]).unwrap();
    assert!(matches!(
        done.try_decode().unwrap(),
        DecodeResult::Opened(_)
    ));
    assert!(matches!(done.try_decode(), Err(FormatError::Misuse { .. })));
    assert!(matches!(done.push(b"x"), Err(FormatError::Misuse { .. })));
}

#[test]
fn foreign_and_empty_objects_are_not_atlas_collections() {
    for bytes in [
        &b""[..],
        b"PAR1 xxxxxxxxxxxxxxxxxxxxxxxxxxxx PAR1",
        b"\x89HDF\r\n\x1a\n\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0",
        b"ATLS\x08\0\0\0 truncated",
    ] {
        let (r, reads) = open_known(
            bytes,
            usize::MAX,
            OpenDecoder::new(Some(bytes.len() as u64)),
        );
        assert!(
            matches!(r, Err(FormatError::NotAnAtlasCollection { .. })),
            "{r:?}"
        );
        assert!(reads.len() <= 1);
        let (r, _) = open_suffix(bytes, OpenDecoder::new(None));
        assert!(
            matches!(r, Err(FormatError::NotAnAtlasCollection { .. })),
            "{r:?}"
        );
    }
}
