//! Reading a segment's tail (footer and trailer) without doing I/O: a push
//! decoder that says which bytes of the segment it needs next, takes them, and
//! answers with the bytes that end the segment, footer included.
//!
//! ```text
//! let mut decoder = TailDecoder::new(segment_len, prefetch);
//! let tail = loop {
//!     match decoder.try_decode()? {
//!         TailStep::NeedsData(range) => { /* read it */ decoder.push(range, bytes)?; }
//!         TailStep::Done(tail) => break tail,
//!     }
//! };
//! ```
//!
//! An array-format file ends with a 12-byte trailer: the footer's size
//! (`u64`, little-endian), then `b"ARRF"`. The first request is the last
//! `min(segment_len, prefetch)` bytes (at least the trailer). The trailer in
//! them is checked against the segment's length before anything else looks
//! at those bytes (array-format itself underflows on a footer size larger
//! than the file). When the footer is longer than the first read, exactly one
//! more request follows, for exactly the bytes missing in front of it.
//!
//! The decoder allocates nothing but the bytes pushed into it, answers every
//! input with a value or a typed [`TailError`], and is driven with real reads
//! by [`crate::ContainerSegments`] (opening a segment) and the segment store
//! (`SegmentStore::prefetch_tail`). It knows array-format's trailer, and
//! nothing of storage; the footer itself is validation's business.

use std::ops::Range;

use atlas_io::read::concat;
use bytes::Bytes;
use rkyv::util::AlignedVec;

use crate::footer::schema::ARCHIVE_ALIGN;

/// Size of array-format's trailer: `footer_size: u64 LE` then `b"ARRF"`.
pub const ARRF_TRAILER_LEN: u64 = 12;
/// The magic bytes that end every array-format file.
pub const ARRF_MAGIC: [u8; 4] = *b"ARRF";
/// Default tail prefetch: 256 KiB, enough for the trailer and a typical footer.
pub const DEFAULT_PREFETCH: u64 = 256 * 1024;

/// Why a segment's tail cannot be read, or was answered wrongly.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TailError {
    /// The segment (or the tail in hand) is shorter than the trailer.
    #[error("{len} bytes, fewer than the 12-byte array-format trailer")]
    TooShort {
        /// Bytes available.
        len: u64,
    },
    /// The last four bytes are not `b"ARRF"`.
    #[error("not an array-format file: it ends with {found:?}, not b\"ARRF\"")]
    NotAnArrayFile {
        /// The last four bytes found.
        found: [u8; 4],
    },
    /// The trailer's footer size plus the trailer does not fit in the segment.
    #[error(
        "footer of {footer_size} bytes plus the 12-byte trailer does not fit in {segment_len} bytes"
    )]
    FooterOutOfBounds {
        /// Footer size the trailer claims.
        footer_size: u64,
        /// The segment's length.
        segment_len: u64,
    },
    /// The bytes pushed for a request are fewer or more than it asked for.
    #[error("the read of bytes {wanted:?} of the segment returned {got} bytes")]
    WrongLength {
        /// The range asked for.
        wanted: Range<u64>,
        /// Bytes pushed.
        got: u64,
    },
    /// Bytes pushed for a range the decoder did not ask for (or when it asked
    /// for nothing).
    #[error("bytes {got:?} of the segment pushed, but the decoder asked for {wanted:?}")]
    UnexpectedRange {
        /// The outstanding request, if any.
        wanted: Option<Range<u64>>,
        /// The range pushed.
        got: Range<u64>,
    },
}

/// Checks an array-format trailer at the end of `tail` (the last bytes of a
/// segment of `segment_len` bytes).
///
/// Returns the footer's length with the trailer (`footer_size + 12`), which
/// is then at most `segment_len`.
pub fn check_trailer(tail: &[u8], segment_len: u64) -> Result<u64, TailError> {
    let trailer =
        tail.last_chunk::<{ ARRF_TRAILER_LEN as usize }>()
            .ok_or(TailError::TooShort {
                len: tail.len() as u64,
            })?;
    let [size_bytes @ .., m0, m1, m2, m3] = *trailer;
    let found = [m0, m1, m2, m3];
    if found != ARRF_MAGIC {
        return Err(TailError::NotAnArrayFile { found });
    }
    let footer_size = u64::from_le_bytes(size_bytes);
    match footer_size.checked_add(ARRF_TRAILER_LEN) {
        Some(total) if total <= segment_len => Ok(total),
        _ => Err(TailError::FooterOutOfBounds {
            footer_size,
            segment_len,
        }),
    }
}

/// What [`TailDecoder::try_decode`] answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TailStep {
    /// Read this byte range of the segment and [`push`](TailDecoder::push) it.
    NeedsData(Range<u64>),
    /// The tail is in hand, footer and trailer whole.
    Done(Tail),
}

/// The last bytes of a segment, holding at least its whole footer and trailer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tail {
    /// The bytes; they end where the segment ends.
    pub bytes: Bytes,
    /// Length of the footer with its trailer (at most the segment's length
    /// and at most `bytes.len()`).
    pub footer_total: u64,
    /// The segment's length.
    pub segment_len: u64,
}

impl Tail {
    /// Where the footer starts in the segment (where the data region ends).
    pub fn footer_offset(&self) -> u64 {
        self.segment_len.saturating_sub(self.footer_total)
    }
}

/// The sans-IO read of one segment's tail; see the module docs.
#[derive(Debug)]
pub struct TailDecoder {
    segment_len: u64,
    /// Bytes of the first request (at least the trailer, at most the segment).
    first: u64,
    state: State,
}

#[derive(Debug)]
enum State {
    /// Nothing read yet.
    Start,
    /// The last bytes of the segment, trailer checked, and the footer's
    /// length with the trailer; whole once `footer_total <= tail.len()`.
    Tail { tail: Bytes, footer_total: u64 },
    /// The trailer did not pass; every later call says why.
    Failed(TailError),
}

impl TailDecoder {
    /// A decoder for a segment of `segment_len` bytes whose first read takes
    /// its last `prefetch` bytes (at least the trailer, at most the segment).
    pub fn new(segment_len: u64, prefetch: u64) -> Self {
        Self {
            segment_len,
            first: prefetch.max(ARRF_TRAILER_LEN).min(segment_len),
            state: State::Start,
        }
    }

    /// The next read needed, or the tail once it is whole.
    pub fn try_decode(&self) -> Result<TailStep, TailError> {
        match &self.state {
            State::Failed(e) => Err(e.clone()),
            State::Start if self.segment_len < ARRF_TRAILER_LEN => Err(TailError::TooShort {
                len: self.segment_len,
            }),
            State::Start => Ok(TailStep::NeedsData(
                self.segment_len.saturating_sub(self.first)..self.segment_len,
            )),
            State::Tail { tail, footer_total } => {
                let have = tail.len() as u64;
                if *footer_total <= have {
                    Ok(TailStep::Done(Tail {
                        bytes: tail.clone(),
                        footer_total: *footer_total,
                        segment_len: self.segment_len,
                    }))
                } else {
                    Ok(TailStep::NeedsData(
                        self.segment_len.saturating_sub(*footer_total)
                            ..self.segment_len.saturating_sub(have),
                    ))
                }
            }
        }
    }

    /// Answers the outstanding request for `range` with its `bytes`, all of
    /// them at once. The first answer's trailer is checked here; an error
    /// about the trailer is final, one about the push itself leaves the
    /// request outstanding.
    pub fn push(&mut self, range: Range<u64>, bytes: Bytes) -> Result<(), TailError> {
        self.push_pieces(range, vec![bytes])
    }

    /// [`push`](Self::push) of the answer in `pieces`, consecutive buffers
    /// as a read delivered them. They are copied once, into the tail, when
    /// the answer completes the footer; a first answer in one piece is kept
    /// as it is.
    pub fn push_pieces(&mut self, range: Range<u64>, pieces: Vec<Bytes>) -> Result<(), TailError> {
        let wanted = match self.try_decode() {
            Ok(TailStep::NeedsData(wanted)) => wanted,
            Ok(TailStep::Done(_)) | Err(_) => {
                return Err(TailError::UnexpectedRange {
                    wanted: None,
                    got: range,
                });
            }
        };
        if range != wanted {
            return Err(TailError::UnexpectedRange {
                wanted: Some(wanted),
                got: range,
            });
        }
        let got = pieces.iter().map(|p| p.len() as u64).sum::<u64>();
        if got != wanted.end.saturating_sub(wanted.start) {
            return Err(TailError::WrongLength { wanted, got });
        }
        self.state = match std::mem::replace(&mut self.state, State::Start) {
            State::Start => {
                let bytes = concat(pieces);
                match check_trailer(&bytes, self.segment_len) {
                    Ok(footer_total) => State::Tail {
                        tail: bytes,
                        footer_total,
                    },
                    Err(e) => State::Failed(e),
                }
            }
            State::Tail { tail, footer_total } => State::Tail {
                tail: join_aligned(&pieces, &tail),
                footer_total,
            },
            failed @ State::Failed(_) => failed,
        };
        match &self.state {
            State::Failed(e) => Err(e.clone()),
            State::Start | State::Tail { .. } => Ok(()),
        }
    }

    /// The bytes in hand once the trailer has passed (the end of the segment,
    /// the footer possibly not whole yet), and the footer's length with the
    /// trailer: for a caller that needs only part of the footer.
    pub fn in_hand(&self) -> Option<(&Bytes, u64)> {
        match &self.state {
            State::Tail { tail, footer_total } => Some((tail, *footer_total)),
            State::Start | State::Failed(_) => None,
        }
    }
}

/// `front`'s pieces then `back`, in one buffer whose first byte is aligned
/// as rkyv lays out archives. After a second read the tail starts exactly
/// where the footer starts, so validation validates the footer where it lies
/// instead of copying it into aligned memory once more.
fn join_aligned(front: &[Bytes], back: &[u8]) -> Bytes {
    let len = front.iter().map(Bytes::len).sum::<usize>() + back.len();
    let mut joined = AlignedVec::<{ ARCHIVE_ALIGN }>::with_capacity(len);
    for piece in front {
        joined.extend_from_slice(piece);
    }
    joined.extend_from_slice(back);
    Bytes::from_owner(joined)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// `data` bytes of data region, a footer of `footer` bytes and the trailer.
    fn segment(data: usize, footer: usize) -> Vec<u8> {
        let mut seg: Vec<u8> = (0..data + footer).map(|i| (i % 253) as u8).collect();
        seg.extend_from_slice(&(footer as u64).to_le_bytes());
        seg.extend_from_slice(b"ARRF");
        seg
    }

    /// Drives `decoder` over `seg`, recording the ranges it reads.
    fn drive(decoder: &mut TailDecoder, seg: &[u8]) -> (Result<Tail, TailError>, Vec<Range<u64>>) {
        let mut reads = Vec::new();
        loop {
            match decoder.try_decode() {
                Err(e) => return (Err(e), reads),
                Ok(TailStep::Done(tail)) => return (Ok(tail), reads),
                Ok(TailStep::NeedsData(range)) => {
                    reads.push(range.clone());
                    let bytes =
                        Bytes::copy_from_slice(&seg[range.start as usize..range.end as usize]);
                    if let Err(e) = decoder.push(range, bytes) {
                        return (Err(e), reads);
                    }
                }
            }
        }
    }

    #[test]
    fn a_tail_that_holds_the_whole_footer_needs_one_read() {
        let seg = segment(5000, 300);
        let len = seg.len() as u64;
        let mut decoder = TailDecoder::new(len, 1024);
        let (tail, reads) = drive(&mut decoder, &seg);
        let tail = tail.unwrap();
        assert_eq!(reads, vec![len - 1024..len]);
        assert_eq!(tail.footer_total, 312);
        assert_eq!(tail.footer_offset(), 5000);
        assert_eq!(&tail.bytes[..], &seg[seg.len() - 1024..]);
    }

    #[test]
    fn a_prefetch_larger_than_the_segment_reads_the_segment_once() {
        let seg = segment(10, 20);
        let len = seg.len() as u64;
        let (tail, reads) = drive(&mut TailDecoder::new(len, 1 << 20), &seg);
        assert_eq!(reads, vec![0..len]);
        assert_eq!(&tail.unwrap().bytes[..], &seg[..]);
    }

    #[test]
    fn a_larger_footer_needs_exactly_one_more_read_of_the_missing_bytes() {
        let seg = segment(5000, 3000);
        let len = seg.len() as u64;
        let mut decoder = TailDecoder::new(len, 1024);
        let (tail, reads) = drive(&mut decoder, &seg);
        let tail = tail.unwrap();
        let footer_start = len - 3012;
        assert_eq!(
            reads,
            vec![len - 1024..len, footer_start..len - 1024],
            "the prefetch, then exactly the footer bytes in front of it"
        );
        assert_eq!(tail.footer_offset(), 5000);
        assert_eq!(&tail.bytes[..], &seg[footer_start as usize..]);
        assert_eq!(
            tail.bytes.as_ptr().align_offset(ARCHIVE_ALIGN),
            0,
            "a footer read in two pieces starts aligned, ready to validate in place"
        );
    }

    #[test]
    fn an_answer_in_pieces_is_joined_in_order_and_checked_as_a_whole() {
        let seg = segment(5000, 3000);
        let len = seg.len() as u64;
        let mut decoder = TailDecoder::new(len, 1024);
        let first = len - 1024..len;
        let piece = |r: Range<u64>| Bytes::copy_from_slice(&seg[r.start as usize..r.end as usize]);
        decoder
            .push_pieces(
                first.clone(),
                vec![piece(first.start..len - 100), piece(len - 100..len)],
            )
            .unwrap();
        let footer_start = len - 3012;
        let TailStep::NeedsData(second) = decoder.try_decode().unwrap() else {
            panic!("the footer is longer than the first read")
        };
        let short = vec![piece(footer_start..footer_start + 10)];
        assert_eq!(
            decoder.push_pieces(second.clone(), short),
            Err(TailError::WrongLength {
                wanted: second.clone(),
                got: 10
            })
        );
        let split = footer_start + 700;
        decoder
            .push_pieces(
                second.clone(),
                vec![
                    piece(footer_start..split),
                    Bytes::new(),
                    piece(split..second.end),
                ],
            )
            .unwrap();
        let TailStep::Done(tail) = decoder.try_decode().unwrap() else {
            panic!("the footer is whole")
        };
        assert_eq!(&tail.bytes[..], &seg[footer_start as usize..]);
        assert_eq!(tail.bytes.as_ptr().align_offset(ARCHIVE_ALIGN), 0);
    }

    #[test]
    fn after_the_first_read_the_bytes_in_hand_and_the_footer_length_are_known() {
        let seg = segment(5000, 3000);
        let len = seg.len() as u64;
        let mut decoder = TailDecoder::new(len, 1024);
        assert_eq!(decoder.in_hand(), None);
        let Ok(TailStep::NeedsData(first)) = decoder.try_decode() else {
            panic!("the first step is a read")
        };
        let bytes = Bytes::copy_from_slice(&seg[first.start as usize..]);
        decoder.push(first, bytes.clone()).unwrap();
        assert_eq!(decoder.in_hand(), Some((&bytes, 3012)));
    }

    #[test]
    fn a_bad_magic_is_rejected() {
        let mut seg = segment(100, 20);
        let n = seg.len();
        seg[n - 1] = b'X';
        let (result, reads) = drive(&mut TailDecoder::new(n as u64, 64), &seg);
        assert_eq!(result, Err(TailError::NotAnArrayFile { found: *b"ARRX" }));
        assert_eq!(reads.len(), 1);
    }

    #[test]
    fn a_footer_larger_than_the_segment_is_rejected() {
        for footer_size in [200u64, u64::MAX - 4, u64::MAX] {
            let mut seg = segment(100, 20);
            let n = seg.len();
            seg[n - 12..n - 4].copy_from_slice(&footer_size.to_le_bytes());
            let mut decoder = TailDecoder::new(n as u64, 64);
            let (result, _) = drive(&mut decoder, &seg);
            let expected = TailError::FooterOutOfBounds {
                footer_size,
                segment_len: n as u64,
            };
            assert_eq!(result, Err(expected.clone()));
            assert_eq!(decoder.try_decode(), Err(expected), "the error is final");
        }
    }

    #[test]
    fn a_segment_shorter_than_the_trailer_is_rejected_without_a_read() {
        let decoder = TailDecoder::new(4, 1024);
        assert_eq!(decoder.try_decode(), Err(TailError::TooShort { len: 4 }));
    }

    #[test]
    fn a_truncated_read_is_rejected_and_the_request_stays_outstanding() {
        let seg = segment(100, 20);
        let len = seg.len() as u64;
        let mut decoder = TailDecoder::new(len, 64);
        let wanted = len - 64..len;
        let short = Bytes::copy_from_slice(&seg[seg.len() - 10..]);
        assert_eq!(
            decoder.push(wanted.clone(), short),
            Err(TailError::WrongLength {
                wanted: wanted.clone(),
                got: 10
            })
        );
        assert_eq!(decoder.try_decode(), Ok(TailStep::NeedsData(wanted)));
    }

    #[test]
    fn bytes_for_a_range_not_asked_for_are_rejected() {
        let seg = segment(100, 20);
        let len = seg.len() as u64;
        let mut decoder = TailDecoder::new(len, 64);
        assert_eq!(
            decoder.push(0..64, Bytes::copy_from_slice(&seg[..64])),
            Err(TailError::UnexpectedRange {
                wanted: Some(len - 64..len),
                got: 0..64
            })
        );
        drive(&mut decoder, &seg).0.unwrap();
        assert_eq!(
            decoder.push(0..1, Bytes::from_static(b"x")),
            Err(TailError::UnexpectedRange {
                wanted: None,
                got: 0..1
            }),
            "nothing is outstanding once the tail is whole"
        );
    }

    #[test]
    fn trailers_are_checked_against_the_segment_length() {
        let trailer = |size: u64| {
            let mut t = size.to_le_bytes().to_vec();
            t.extend_from_slice(b"ARRF");
            t
        };
        assert_eq!(check_trailer(&trailer(100), 112), Ok(112));
        assert_eq!(
            check_trailer(&trailer(101), 112),
            Err(TailError::FooterOutOfBounds {
                footer_size: 101,
                segment_len: 112
            })
        );
        assert_eq!(
            check_trailer(b"ARRF", 12),
            Err(TailError::TooShort { len: 4 })
        );
    }

    proptest! {
        /// Whatever the segment's bytes (a trailer of any size, any magic),
        /// its length and the prefetch, the decoder answers without panicking,
        /// reads only inside the segment, at most twice, and a tail it
        /// returns ends the segment and holds the footer it declares.
        #[test]
        fn arbitrary_segments_never_panic_and_reads_stay_inside(
            body in proptest::collection::vec(any::<u8>(), 0..400),
            footer_size in prop_oneof![0u64..500, any::<u64>()],
            magic in prop_oneof![Just(*b"ARRF"), any::<[u8; 4]>()],
            with_trailer in any::<bool>(),
            prefetch in 0u64..600,
        ) {
            let mut seg = body;
            if with_trailer {
                seg.extend_from_slice(&footer_size.to_le_bytes());
                seg.extend_from_slice(&magic);
            }
            let len = seg.len() as u64;
            let mut decoder = TailDecoder::new(len, prefetch);
            let (result, reads) = drive(&mut decoder, &seg);
            prop_assert!(reads.len() <= 2);
            prop_assert!(reads.iter().all(|r| r.start < r.end && r.end <= len));
            if let Ok(tail) = result {
                prop_assert!(tail.footer_total <= tail.bytes.len() as u64);
                prop_assert!(tail.footer_total <= len);
                prop_assert_eq!(&tail.bytes[..], &seg[seg.len() - tail.bytes.len()..]);
            }
        }

        /// Pushes of any range and any bytes, in any order, never panic:
        /// each push answers the outstanding request with arbitrary bytes of
        /// the right length (when that is small), or pushes a range at random.
        #[test]
        fn arbitrary_pushes_never_panic(
            len in prop_oneof![0u64..100, any::<u64>()],
            prefetch in prop_oneof![0u64..100, any::<u64>()],
            pushes in proptest::collection::vec(
                (any::<bool>(), any::<u64>(), any::<u64>(), proptest::collection::vec(any::<u8>(), 1..40)),
                0..6,
            ),
        ) {
            let mut decoder = TailDecoder::new(len, prefetch);
            for (follow, a, b, bytes) in pushes {
                let range = match decoder.try_decode() {
                    Ok(TailStep::NeedsData(r)) if follow && r.end - r.start <= 1024 => r,
                    _ => a..b,
                };
                let n = usize::try_from(range.end.saturating_sub(range.start)).unwrap_or(0).min(1024);
                let answer: Vec<u8> = bytes.iter().copied().cycle().take(n).collect();
                let _ = decoder.push(range, Bytes::from(answer));
                let _ = decoder.try_decode();
                let _ = decoder.in_hand();
            }
        }
    }
}
