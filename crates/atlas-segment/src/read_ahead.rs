//! Read-ahead over one segment's data region, as a state machine that does no I/O.
//!
//! array-format reads a segment's blocks one ranged get at a time. When a
//! caller walks the blocks in order, one request per block costs a round
//! trip each; so when a read starts exactly where the previous one ended,
//! [`ReadAhead`] widens the fetch to a window ([`READ_AHEAD_START`] at
//! first, doubling on each sequential refill up to [`READ_AHEAD_MAX`]) and
//! keeps the surplus for the reads that follow. A read anywhere else fetches
//! exactly its range and the next sequential run ramps up anew. No fetch
//! reaches past the limit its caller gives (the start of the footer, or of
//! the tail already in memory).
//!
//! The segment store ([`crate::store`]) asks [`ReadAhead::plan`] what to
//! fetch for a read, fetches it, and hands the bytes to
//! [`ReadAhead::fetched`], which answers the read and keeps the rest.

use std::ops::Range;

use bytes::Bytes;

use atlas_io::read::concat;

/// First read-ahead window, fetched when a read continues the previous one.
pub const READ_AHEAD_START: u64 = 4 * 1024 * 1024;
/// Largest read-ahead window; each sequential refill doubles the last one.
pub const READ_AHEAD_MAX: u64 = 32 * 1024 * 1024;

/// What one segment remembers between reads of its data region.
#[derive(Debug, Default)]
pub(crate) struct ReadAhead {
    /// End of the last data range asked for.
    last_end: Option<u64>,
    /// The next window; 0 until a sequential read starts one.
    window: u64,
    /// Bytes fetched ahead: where they start in the segment, and them.
    buffer: Option<(u64, Bytes)>,
}

/// The answer of [`ReadAhead::plan`] for one read.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// The bytes asked for, all from the buffer: nothing to fetch.
    Served(Bytes),
    /// Fetch [`Fetch::range`], then pass the bytes to [`ReadAhead::fetched`].
    Fetch(Fetch),
}

/// A fetch [`ReadAhead::plan`] asks for, and what it needs to finish the read.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Fetch {
    /// The range the caller asked for (relative to the segment).
    wanted: Range<u64>,
    /// The front of it the buffer already holds.
    held: Bytes,
    /// What to fetch: from the end of `held` to the end of `wanted`, or
    /// further (to the window's end) when reading ahead.
    range: Range<u64>,
    /// The window this fetch used; 0 for a read out of order.
    window: u64,
}

impl Fetch {
    /// The byte range of the segment to fetch.
    pub(crate) fn range(&self) -> Range<u64> {
        self.range.clone()
    }
}

impl ReadAhead {
    /// What to do for a read of `wanted` (inside the data region, ending at
    /// or before `limit`): serve it from the buffer, or fetch a range that
    /// starts where the buffer's part of it ends and never ends past `limit`.
    pub(crate) fn plan(&mut self, wanted: Range<u64>, limit: u64) -> Step {
        let held = self.serve(&wanted);
        if held.len() as u64 == wanted.end.saturating_sub(wanted.start) {
            self.last_end = Some(wanted.end);
            return Step::Served(held);
        }
        let window = if self.last_end == Some(wanted.start) {
            self.window.max(READ_AHEAD_START)
        } else {
            0
        };
        let from = wanted.start.saturating_add(held.len() as u64);
        let end = from.saturating_add(window).min(limit).max(wanted.end);
        Step::Fetch(Fetch {
            wanted,
            held,
            range: from..end,
            window,
        })
    }

    /// Finishes the read `fetch` planned with the `bytes` fetched for it:
    /// returns the bytes asked for and keeps any fetched beyond them.
    pub(crate) fn fetched(&mut self, fetch: Fetch, bytes: Bytes) -> Bytes {
        let Fetch {
            wanted,
            held,
            range,
            window,
        } = fetch;
        self.last_end = Some(wanted.end);
        if range.end == wanted.end {
            if window == 0 {
                // A read out of order: the next run of reads ramps up anew.
                self.window = 0;
            }
            return concat(vec![held, bytes]);
        }
        self.window = window.saturating_mul(2).min(READ_AHEAD_MAX);
        let rest = usize::try_from(wanted.end.saturating_sub(range.start))
            .unwrap_or(usize::MAX)
            .min(bytes.len());
        let answer = bytes.slice(..rest);
        self.buffer = Some((range.start, bytes));
        concat(vec![held, answer])
    }

    /// Keeps `front`, the first bytes of the data region read in one go, as
    /// if a read of nothing at offset 0 had just happened: the reads that
    /// follow are served from it and then read ahead from its end.
    pub(crate) fn prefetched(&mut self, front: Bytes) {
        let len = front.len() as u64;
        self.buffer = Some((0, front));
        self.last_end = Some(0);
        self.window = len
            .saturating_mul(2)
            .clamp(READ_AHEAD_START, READ_AHEAD_MAX);
    }

    /// The front of `wanted` the buffer holds (all of it, some, or none).
    fn serve(&self, wanted: &Range<u64>) -> Bytes {
        let Some((start, bytes)) = self.buffer.as_ref() else {
            return Bytes::new();
        };
        let Some(a) = wanted
            .start
            .checked_sub(*start)
            .and_then(|a| usize::try_from(a).ok())
        else {
            return Bytes::new();
        };
        let want = usize::try_from(wanted.end.saturating_sub(wanted.start)).unwrap_or(usize::MAX);
        match a.checked_add(want) {
            Some(b) if a < bytes.len() => bytes.slice(a..b.min(bytes.len())),
            _ => Bytes::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1024 * 1024;
    /// A data region far larger than any window.
    const FAR: u64 = 1 << 40;

    /// Bytes standing for segment bytes `range`: byte `i` is `i % 251`
    /// (copied a period at a time: the windows are tens of MiB).
    fn bytes_of(range: Range<u64>) -> Bytes {
        let period: Vec<u8> = (0..251u8).collect();
        let len = (range.end - range.start) as usize;
        let mut out = Vec::with_capacity(len);
        let mut at = (range.start % 251) as usize;
        while out.len() < len {
            let take = (251 - at).min(len - out.len());
            out.extend_from_slice(&period[at..at + take]);
            at = 0;
        }
        out.into()
    }

    /// Plans a read of `wanted` and, if it needs a fetch, "fetches" it; returns
    /// the range fetched (if any) and checks the answer is the bytes asked for.
    fn read(ahead: &mut ReadAhead, wanted: Range<u64>, limit: u64) -> Option<Range<u64>> {
        let (answer, fetched) = match ahead.plan(wanted.clone(), limit) {
            Step::Served(bytes) => (bytes, None),
            Step::Fetch(fetch) => {
                let range = fetch.range();
                (ahead.fetched(fetch, bytes_of(range.clone())), Some(range))
            }
        };
        assert_eq!(answer, bytes_of(wanted), "the read gets its own bytes");
        fetched
    }

    #[test]
    fn a_first_read_fetches_exactly_its_range() {
        let mut ahead = ReadAhead::default();
        assert_eq!(read(&mut ahead, 1000..2000, FAR), Some(1000..2000));
    }

    #[test]
    fn a_read_that_continues_the_last_fetches_the_first_window() {
        let mut ahead = ReadAhead::default();
        read(&mut ahead, 0..1000, FAR);
        assert_eq!(
            read(&mut ahead, 1000..2000, FAR),
            Some(1000..1000 + READ_AHEAD_START)
        );
    }

    #[test]
    fn reads_inside_the_window_are_served_without_a_fetch() {
        let mut ahead = ReadAhead::default();
        read(&mut ahead, 0..1000, FAR);
        read(&mut ahead, 1000..2000, FAR);
        assert_eq!(read(&mut ahead, 2000..3000, FAR), None);
        assert_eq!(read(&mut ahead, 3000..MIB, FAR), None);
    }

    #[test]
    fn each_sequential_refill_doubles_the_window_up_to_the_maximum() {
        let mut ahead = ReadAhead::default();
        let block = MIB;
        let mut at = 0;
        let mut fetches = Vec::new();
        while at < 64 * MIB {
            if let Some(range) = read(&mut ahead, at..at + block, FAR) {
                fetches.push(range.end - range.start);
            }
            at += block;
        }
        assert_eq!(
            &fetches[..6],
            &[
                block,
                READ_AHEAD_START,
                2 * READ_AHEAD_START,
                4 * READ_AHEAD_START,
                READ_AHEAD_MAX,
                READ_AHEAD_MAX
            ]
        );
        assert!(fetches.iter().all(|&f| f <= READ_AHEAD_MAX));
    }

    #[test]
    fn no_fetch_reaches_past_the_limit() {
        let mut ahead = ReadAhead::default();
        let limit = 3 * MIB + 17;
        read(&mut ahead, 0..MIB, limit);
        assert_eq!(read(&mut ahead, MIB..2 * MIB, limit), Some(MIB..limit));
        // The last bytes before the limit come from the buffer.
        assert_eq!(read(&mut ahead, 2 * MIB..limit, limit), None);
    }

    #[test]
    fn a_read_out_of_order_fetches_exactly_its_range_and_the_next_run_starts_small() {
        let mut ahead = ReadAhead::default();
        read(&mut ahead, 0..MIB, FAR);
        read(&mut ahead, MIB..2 * MIB, FAR);
        read(&mut ahead, 5 * MIB..6 * MIB, FAR);
        // Out of order (and past the buffer): exactly its range.
        assert_eq!(
            read(&mut ahead, 100 * MIB..101 * MIB, FAR),
            Some(100 * MIB..101 * MIB)
        );
        // The run that follows starts again at the first window.
        assert_eq!(
            read(&mut ahead, 101 * MIB..102 * MIB, FAR),
            Some(101 * MIB..101 * MIB + READ_AHEAD_START)
        );
    }

    #[test]
    fn a_read_partly_in_the_buffer_fetches_only_what_it_lacks() {
        let mut ahead = ReadAhead::default();
        read(&mut ahead, 0..MIB, 2 * MIB);
        read(&mut ahead, MIB..MIB + 10, 2 * MIB);
        // Buffer: MIB..2 MiB. A sequential read from MIB+10 to 3 MiB takes
        // its front from the buffer and fetches from 2 MiB on.
        let step = ahead.plan(MIB + 10..3 * MIB, 3 * MIB);
        let Step::Fetch(fetch) = step else {
            panic!("expected a fetch, got {step:?}")
        };
        assert_eq!(fetch.range(), 2 * MIB..3 * MIB);
        let answer = ahead.fetched(fetch, bytes_of(2 * MIB..3 * MIB));
        assert_eq!(answer, bytes_of(MIB + 10..3 * MIB));
    }

    #[test]
    fn after_a_front_prefetch_reads_are_served_and_then_read_ahead_from_its_end() {
        let mut ahead = ReadAhead::default();
        ahead.prefetched(bytes_of(0..MIB));
        assert_eq!(read(&mut ahead, 0..MIB / 2, FAR), None);
        assert_eq!(read(&mut ahead, MIB / 2..MIB, FAR), None);
        // The front counted as a sequential run: the next fetch is a window
        // (twice the front, at least the first window).
        assert_eq!(
            read(&mut ahead, MIB..MIB + 10, FAR),
            Some(MIB..MIB + READ_AHEAD_START)
        );
    }
}
