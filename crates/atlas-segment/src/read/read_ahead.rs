//! Read-ahead over one segment's data region, as a state machine that does no I/O.
//!
//! array-format (and [`crate::read::blocks`]) read a segment's blocks one ranged
//! get at a time. When a caller walks the blocks in order, one request per
//! block costs a round trip each; so when a read starts exactly where the
//! previous one ended, [`ReadAhead`] fetches a window ahead of it
//! ([`READ_AHEAD_START`] at first, doubling on each window up to the read
//! policy's [`max_read_ahead`](ReadParallelism::max_read_ahead)) and keeps the bytes for the reads that follow. A read
//! anywhere else fetches exactly its range and the next sequential run ramps
//! up anew. No fetch reaches past the limit its caller gives (the start of
//! the footer, or of the tail already in memory).
//!
//! A window is fetched as pieces, each its own request, all sent at once:
//! on a backend whose reads are split ([`ReadParallelism`]) the bytes the
//! read asked for are a piece of their own (so that read waits for its bytes
//! alone, not the window), and the rest of the window is cut into parts as
//! the policy cuts any read; a read waits only for the pieces it covers, so
//! the first blocks are decoded while later pieces are still arriving. When
//! the walk reaches the second half of the last window, the next window is
//! sent before it is needed. On a backend whose reads are not split, a
//! window is one piece.
//!
//! Where a walk from the start of the data region is the likely use (a
//! segment opened whole, whose footer was read in full: see
//! [`ReadAhead::ramp_from_start`]), a read at the region's first byte
//! counts as sequential and fetches [`READ_AHEAD_FROM_START`] at once.
//!
//! The segment store ([`crate::read::segment_store`]) asks [`ReadAhead::plan`] what to do
//! for a read, giving it a way to send a piece (which returns a handle on
//! its bytes), then waits for the pieces the plan lists and fetches the
//! plan's direct range itself.

use std::collections::VecDeque;
use std::ops::Range;

use atlas_io::read::ReadParallelism;

/// First read-ahead window, fetched when a read continues the previous one
/// (at most the policy's [`max_read_ahead`](ReadParallelism::max_read_ahead),
/// which bounds every window; each window doubles the last one).
pub const READ_AHEAD_START: u64 = 4 * 1024 * 1024;
/// The window a read at the first byte of the data region fetches when the
/// segment reads ahead from its start ([`ReadAhead::ramp_from_start`]).
pub const READ_AHEAD_FROM_START: u64 = 2 * READ_AHEAD_START;

/// The windows a policy allows: `(first, largest)`.
fn windows(policy: &ReadParallelism) -> (u64, u64) {
    let max = policy.max_read_ahead.max(1);
    (READ_AHEAD_START.min(max), max)
}

/// The window after one of `last` bytes: twice as long, within the policy's.
fn next_window(last: u64, policy: &ReadParallelism) -> u64 {
    let (first, max) = windows(policy);
    last.saturating_mul(2).clamp(first, max)
}

/// The window a walk from the start of the data region begins with.
fn from_start(policy: &ReadParallelism) -> u64 {
    READ_AHEAD_FROM_START.min(windows(policy).1)
}

/// What one segment remembers between reads of its data region; `H` is a
/// handle on a piece's bytes (landed or still arriving).
#[derive(Debug)]
pub(crate) struct ReadAhead<H> {
    /// End of the last data range asked for.
    last_end: Option<u64>,
    /// The next window; 0 until a sequential read starts one.
    window: u64,
    /// Pieces fetched ahead, in order, not overlapping.
    pieces: VecDeque<(Range<u64>, H)>,
    /// The last window sent: reading into its second half sends the next.
    last_window: Range<u64>,
    /// Whether a read at offset 0, first of all, counts as sequential.
    from_start: bool,
}

impl<H> Default for ReadAhead<H> {
    fn default() -> Self {
        Self {
            last_end: None,
            window: 0,
            pieces: VecDeque::new(),
            last_window: 0..0,
            from_start: false,
        }
    }
}

/// What a read does, as [`ReadAhead::plan`] decided.
#[derive(Debug)]
pub(crate) struct Plan<H> {
    /// Pieces holding the front of the read, in order: wait for each and
    /// take the part of it inside the read.
    pub pieces: Vec<(Range<u64>, H)>,
    /// The rest of the read, for the caller to fetch exactly (none when the
    /// pieces hold it all).
    pub direct: Option<Range<u64>>,
}

impl<H: Clone> ReadAhead<H> {
    /// Makes a first read at the start of the data region count as
    /// sequential: for a segment whose reader will probably walk it (one
    /// opened whole), not for a one-array view of it.
    pub(crate) fn ramp_from_start(&mut self) {
        self.from_start = true;
    }

    /// What to do for a read of `wanted` (inside the data region, ending at
    /// or before `limit`): which pieces already sent hold its front, what to
    /// fetch directly, and which new pieces to send, through `send` (given a
    /// range, it starts the fetch and returns a handle). Pieces are cut as
    /// `policy` splits reads; none reaches past `limit`.
    pub(crate) fn plan(
        &mut self,
        wanted: Range<u64>,
        limit: u64,
        policy: &ReadParallelism,
        mut send: impl FnMut(Range<u64>) -> H,
    ) -> Plan<H> {
        let (first, _) = windows(policy);
        // Pieces that end before the read are dropped: the walk is past
        // them. A read that comes late for an earlier block finds it among
        // the decoded blocks a segment keeps (ours, or array-format's cache),
        // and if not, fetches its range directly.
        while self
            .pieces
            .front()
            .is_some_and(|(r, _)| r.end <= wanted.start)
        {
            self.pieces.pop_front();
        }
        let mut pieces = Vec::new();
        let mut at = self.covering(wanted.clone(), wanted.start, &mut pieces);
        let sequential = self.last_end == Some(wanted.start)
            || at > wanted.start
            || (self.from_start && self.last_end.is_none() && wanted.start == 0);
        let mut direct = None;
        if at < wanted.end {
            if sequential {
                let window = if self.last_end.is_none() && wanted.start == 0 && self.from_start {
                    from_start(policy)
                } else {
                    self.window.max(first)
                };
                let end = at.saturating_add(window).min(limit).max(wanted.end);
                self.send_window(at..end, wanted.end, policy, &mut send);
                at = self.covering(wanted.clone(), at, &mut pieces);
            } else {
                self.window = 0;
                self.last_window = 0..0;
            }
            if at < wanted.end {
                direct = Some(at..wanted.end);
            }
        }
        // A walk into the second half of the last window sends the next one.
        let half = self
            .last_window
            .start
            .saturating_add(self.last_window.end.saturating_sub(self.last_window.start) / 2);
        let ahead_end = self.last_window.end;
        if direct.is_none() && self.window > 0 && wanted.end > half && ahead_end < limit {
            let end = ahead_end.saturating_add(self.window).min(limit);
            self.send_window(ahead_end..end, ahead_end, policy, &mut send);
        }
        self.last_end = Some(wanted.end);
        Plan { pieces, direct }
    }

    /// Adds to `pieces` the kept pieces that hold `wanted` on from `at`,
    /// one after another without a gap; returns where they stop.
    fn covering(&self, wanted: Range<u64>, mut at: u64, pieces: &mut Vec<(Range<u64>, H)>) -> u64 {
        for (r, h) in &self.pieces {
            if at >= wanted.end {
                break;
            }
            if r.start <= at && at < r.end {
                pieces.push((r.clone(), h.clone()));
                at = r.end;
            }
        }
        at
    }

    /// Sends `range` as pieces (its front up to `first_end` as pieces of its
    /// own when reads are split), keeps them and returns them in order.
    fn send_window(
        &mut self,
        range: Range<u64>,
        first_end: u64,
        policy: &ReadParallelism,
        send: &mut impl FnMut(Range<u64>) -> H,
    ) -> Vec<(Range<u64>, H)> {
        // The window leaves out what kept pieces already hold (it starts
        // past any piece holding its start and stops where the next one
        // begins), so the pieces stay in order and apart: no read is
        // served a byte twice.
        let mut start = range.start;
        for (r, _) in &self.pieces {
            if r.start <= start && start < r.end {
                start = r.end;
            }
        }
        let end = self
            .pieces
            .iter()
            .map(|(r, _)| r.start)
            .find(|&s| s >= start)
            .map_or(range.end, |s| s.min(range.end))
            .max(start);
        self.window = next_window(range.end.saturating_sub(range.start), policy);
        self.last_window = range;
        let range = start..end;
        if range.is_empty() {
            return Vec::new();
        }
        let cuts: Vec<Range<u64>> = if policy.requests(&range) > 1 {
            let split = first_end.clamp(range.start, range.end);
            let mut cuts = policy.parts(range.start..split);
            cuts.extend(policy.parts(split..range.end));
            cuts
        } else {
            policy.parts(range.clone())
        };
        let sent: Vec<(Range<u64>, H)> = cuts.into_iter().map(|r| (r.clone(), send(r))).collect();
        let at = self
            .pieces
            .iter()
            .position(|(r, _)| r.start >= range.end)
            .unwrap_or(self.pieces.len());
        for (i, piece) in sent.iter().cloned().enumerate() {
            self.pieces.insert(at.saturating_add(i), piece);
        }
        sent
    }

    /// Sends the front of the data region, `0..end`, as pieces, as if a
    /// read of nothing at offset 0 had just happened: the reads that follow
    /// wait for the pieces they cover, and a walk into the second half
    /// sends the next window. Bytes that pieces already hold are not sent
    /// again; returns the bytes sent.
    pub(crate) fn prefetch(
        &mut self,
        end: u64,
        policy: &ReadParallelism,
        mut send: impl FnMut(Range<u64>) -> H,
    ) -> u64 {
        let sent = self.send_window(0..end, 0, policy, &mut send);
        self.last_end = Some(0);
        sent.iter()
            .map(|(r, _)| r.end.saturating_sub(r.start))
            .sum()
    }

    /// Starts a walk from the start of the data region before any read
    /// asks: sends the window a first read at offset 0 would send
    /// ([`READ_AHEAD_FROM_START`], at most to `limit`), its front up to
    /// `first_end` (the first block) as pieces of their own. Nothing
    /// happens once reads or pieces have begun.
    pub(crate) fn start_walk(
        &mut self,
        first_end: u64,
        limit: u64,
        policy: &ReadParallelism,
        mut send: impl FnMut(Range<u64>) -> H,
    ) {
        let end = from_start(policy).min(limit);
        if self.last_end.is_some() || !self.pieces.is_empty() || end == 0 {
            return;
        }
        self.send_window(0..end, first_end.min(end), policy, &mut send);
        self.last_end = Some(0);
    }

    /// Keeps `handle`, the front of the data region `0..end` already read,
    /// as [`prefetch`](Self::prefetch) would have sent it: one piece.
    pub(crate) fn prefetched(&mut self, end: u64, handle: H, policy: &ReadParallelism) {
        self.pieces.clear();
        self.pieces.push_back((0..end, handle));
        self.window = next_window(end, policy);
        self.last_window = 0..end;
        self.last_end = Some(0);
    }

    /// Forgets every piece (after one failed: the next reads fetch anew).
    pub(crate) fn reset(&mut self) {
        let from_start = self.from_start;
        *self = Self {
            from_start,
            ..Self::default()
        };
    }
}

#[cfg(test)]
#[allow(clippy::single_range_in_vec_init)]
mod tests {
    use super::*;

    const MIB: u64 = 1024 * 1024;
    /// The largest window of the default policy.
    const MAX: u64 = atlas_io::read::DEFAULT_MAX_READ_AHEAD;
    /// A data region far larger than any window.
    const FAR: u64 = 1 << 40;

    /// Plans a read of `wanted`; returns the ranges sent and the plan's
    /// pieces and direct range, and checks that they cover the read exactly.
    fn read(
        ahead: &mut ReadAhead<Range<u64>>,
        wanted: Range<u64>,
        limit: u64,
        policy: &ReadParallelism,
    ) -> (Vec<Range<u64>>, Option<Range<u64>>) {
        let mut sent = Vec::new();
        let plan = ahead.plan(wanted.clone(), limit, policy, |r| {
            sent.push(r.clone());
            r
        });
        let mut at = wanted.start;
        for (r, h) in &plan.pieces {
            assert_eq!(r, h);
            assert!(r.start <= at && at < r.end, "{r:?} holds byte {at}");
            assert!(
                r.start == at || at == wanted.start,
                "{r:?} overlaps the piece before it"
            );
            at = r.end;
        }
        match &plan.direct {
            Some(d) => {
                assert_eq!(d.start, at, "the direct read follows the pieces");
                assert_eq!(d.end, wanted.end);
            }
            None => assert!(at >= wanted.end, "pieces hold {wanted:?}"),
        }
        for r in &sent {
            assert!(r.end <= limit, "{r:?} past the limit {limit}");
        }
        (sent, plan.direct)
    }

    fn whole() -> ReadParallelism {
        ReadParallelism::single()
    }

    #[test]
    fn a_first_read_fetches_exactly_its_range() {
        let mut ahead = ReadAhead::default();
        let (sent, direct) = read(&mut ahead, 1000..2000, FAR, &ReadParallelism::default());
        assert!(sent.is_empty());
        assert_eq!(direct, Some(1000..2000));
    }

    #[test]
    fn a_first_read_at_offset_0_is_exact_unless_the_segment_ramps_from_its_start() {
        let policy = ReadParallelism::default();
        let mut plain = ReadAhead::default();
        assert_eq!(read(&mut plain, 0..1000, FAR, &policy).1, Some(0..1000));
        let mut ramped = ReadAhead::default();
        ramped.ramp_from_start();
        let (sent, direct) = read(&mut ramped, 0..1000, FAR, &policy);
        assert_eq!(direct, None);
        // The read's own bytes, then the rest of the window spread over
        // parts of at least 1 MiB (7 of them), all at once.
        assert_eq!(sent.first(), Some(&(0..1000)));
        assert_eq!(sent[1..], policy.parts(1000..READ_AHEAD_FROM_START)[..]);
        assert_eq!(sent.len(), 8);
        assert!(sent[1..].iter().all(|r| r.end - r.start >= MIB), "{sent:?}");
    }

    #[test]
    fn a_walk_started_before_any_read_sends_what_a_first_read_at_0_would() {
        let policy = ReadParallelism::default();
        let mut started = ReadAhead::default();
        let mut sent = Vec::new();
        started.start_walk(1000, FAR, &policy, |r| {
            sent.push(r.clone());
            r
        });
        let mut ramped = ReadAhead::default();
        ramped.ramp_from_start();
        let (by_read, _) = read(&mut ramped, 0..1000, FAR, &policy);
        assert_eq!(sent, by_read);
        // The first read then waits for the first piece, and sends nothing.
        assert_eq!(read(&mut started, 0..1000, FAR, &policy), (vec![], None));
        // A second start does nothing.
        started.start_walk(1000, FAR, &policy, |_| panic!("sent again"));
    }

    #[test]
    fn a_read_that_continues_the_last_fetches_the_first_window() {
        let mut ahead = ReadAhead::default();
        read(&mut ahead, 0..1000, FAR, &whole());
        let (sent, direct) = read(&mut ahead, 1000..2000, FAR, &whole());
        assert_eq!(direct, None);
        assert_eq!(sent, vec![1000..1000 + READ_AHEAD_START]);
    }

    #[test]
    fn reads_inside_the_window_are_served_without_a_fetch() {
        let mut ahead = ReadAhead::default();
        read(&mut ahead, 0..1000, FAR, &whole());
        read(&mut ahead, 1000..2000, FAR, &whole());
        assert_eq!(read(&mut ahead, 2000..3000, FAR, &whole()), (vec![], None));
        assert_eq!(read(&mut ahead, 3000..MIB, FAR, &whole()), (vec![], None));
    }

    #[test]
    fn the_next_window_is_sent_once_the_walk_reaches_the_second_half_of_the_last() {
        let mut ahead = ReadAhead::default();
        read(&mut ahead, 0..MIB, FAR, &whole());
        // Window 1..5 MiB.
        assert_eq!(
            read(&mut ahead, MIB..2 * MIB, FAR, &whole()).0,
            vec![MIB..5 * MIB]
        );
        assert_eq!(read(&mut ahead, 2 * MIB..3 * MIB, FAR, &whole()).0, vec![]);
        // 3..4 MiB ends past the middle (3 MiB): the next window, twice as big.
        assert_eq!(
            read(&mut ahead, 3 * MIB..4 * MIB, FAR, &whole()).0,
            vec![5 * MIB..13 * MIB]
        );
        assert_eq!(read(&mut ahead, 4 * MIB..5 * MIB, FAR, &whole()).0, vec![]);
    }

    #[test]
    fn windows_double_up_to_the_maximum() {
        let mut ahead = ReadAhead::default();
        let mut at = 0;
        let mut sizes = Vec::new();
        while at < 200 * MIB {
            let (sent, _) = read(&mut ahead, at..at + MIB, FAR, &whole());
            sizes.extend(sent.iter().map(|r| r.end - r.start));
            at += MIB;
        }
        assert_eq!(
            &sizes[..6],
            &[
                READ_AHEAD_START,
                2 * READ_AHEAD_START,
                4 * READ_AHEAD_START,
                MAX,
                MAX,
                MAX
            ]
        );
        assert!(sizes.iter().all(|&s| s <= MAX));
    }

    #[test]
    fn no_window_exceeds_the_policys_read_ahead_not_even_the_first() {
        let policy = whole().max_read_ahead(MIB);
        let mut ahead = ReadAhead::default();
        ahead.ramp_from_start();
        let mut at = 0;
        let mut sizes = Vec::new();
        while at < 20 * MIB {
            let (sent, _) = read(&mut ahead, at..at + 100_000, FAR, &policy);
            sizes.extend(sent.iter().map(|r| r.end - r.start));
            at += 100_000;
        }
        assert!(sizes.len() > 15, "{sizes:?}");
        assert!(sizes.iter().all(|&s| s <= MIB), "{sizes:?}");
        let held: u64 = ahead.pieces.iter().map(|(r, _)| r.end - r.start).sum();
        assert!(held <= 3 * MIB, "{held} bytes held");
    }

    #[test]
    fn split_windows_send_the_read_first_then_the_rest_cut_as_the_policy_cuts_a_read() {
        let policy = ReadParallelism::default();
        let mut ahead = ReadAhead::default();
        read(&mut ahead, 0..MIB, FAR, &policy);
        let (sent, _) = read(&mut ahead, MIB..MIB + 100, FAR, &policy);
        // 4 MiB - 100 bytes after the read: 3 parts of at least 1 MiB, equal.
        let third = (4 * MIB - 100) / 3;
        let rest = MIB + 100;
        assert_eq!(
            sent,
            vec![
                MIB..rest,
                rest..rest + third,
                rest + third..rest + 2 * third,
                rest + 2 * third..5 * MIB
            ]
        );
        assert_eq!(rest + 3 * third, 5 * MIB);
    }

    #[test]
    fn no_fetch_reaches_past_the_limit_and_the_walk_stops_there() {
        let mut ahead = ReadAhead::default();
        let limit = 3 * MIB + 17;
        read(&mut ahead, 0..MIB, limit, &whole());
        assert_eq!(
            read(&mut ahead, MIB..2 * MIB, limit, &whole()).0,
            vec![MIB..limit]
        );
        // The last bytes before the limit come from the window; nothing more is sent.
        assert_eq!(
            read(&mut ahead, 2 * MIB..limit, limit, &whole()),
            (vec![], None)
        );
    }

    #[test]
    fn a_read_out_of_order_fetches_exactly_its_range_and_the_next_run_starts_small() {
        let mut ahead = ReadAhead::default();
        read(&mut ahead, 0..MIB, FAR, &whole());
        read(&mut ahead, MIB..2 * MIB, FAR, &whole());
        // Out of order and past the pieces: exactly its range.
        assert_eq!(
            read(&mut ahead, 100 * MIB..101 * MIB, FAR, &whole()),
            (vec![], Some(100 * MIB..101 * MIB))
        );
        // The run that follows starts again at the first window.
        assert_eq!(
            read(&mut ahead, 101 * MIB..102 * MIB, FAR, &whole()).0,
            vec![101 * MIB..101 * MIB + READ_AHEAD_START]
        );
    }

    #[test]
    fn a_read_partly_in_the_pieces_sends_a_window_from_their_end() {
        let mut ahead = ReadAhead::default();
        read(&mut ahead, 0..MIB, 2 * MIB, &whole());
        read(&mut ahead, MIB..MIB + 10, 2 * MIB, &whole());
        // Pieces hold MIB..2 MiB; a read from MIB + 10 to 3 MiB takes its front
        // from them and fetches from 2 MiB on.
        let (sent, direct) = read(&mut ahead, MIB + 10..3 * MIB, 3 * MIB, &whole());
        assert_eq!((sent, direct), (vec![2 * MIB..3 * MIB], None));
    }

    #[test]
    fn after_a_front_prefetch_reads_wait_for_its_pieces_and_the_walk_sends_the_next_window() {
        let policy = ReadParallelism::default();
        let mut ahead = ReadAhead::default();
        let mut sent = Vec::new();
        ahead.prefetch(8 * MIB, &policy, |r| {
            sent.push(r.clone());
            r
        });
        let mibs = |from: u64, to: u64| {
            (from..to)
                .map(|m| m * MIB..(m + 1) * MIB)
                .collect::<Vec<_>>()
        };
        assert_eq!(sent, mibs(0, 8), "8 MiB in 8 parts of 1 MiB");
        assert_eq!(read(&mut ahead, 0..MIB, FAR, &policy), (vec![], None));
        assert_eq!(read(&mut ahead, MIB..3 * MIB, FAR, &policy), (vec![], None));
        // Past the middle (4 MiB): the next window, 16 MiB in 16 parts of 1 MiB.
        let (next, _) = read(&mut ahead, 4 * MIB..5 * MIB, FAR, &policy);
        assert_eq!(next, mibs(8, 24));
    }

    #[test]
    fn a_second_front_prefetch_sends_only_what_the_first_did_not() {
        let policy = ReadParallelism::default();
        let mut ahead = ReadAhead::default();
        let mut sent = Vec::new();
        let mut send = |r: Range<u64>| {
            sent.push(r.clone());
            r
        };
        assert_eq!(ahead.prefetch(4 * MIB, &policy, &mut send), 4 * MIB);
        // Asked again, the same front costs nothing; a longer one only its tail.
        assert_eq!(ahead.prefetch(4 * MIB, &policy, &mut send), 0);
        assert_eq!(ahead.prefetch(6 * MIB, &policy, &mut send), 2 * MIB);
        let mut covered: Vec<Range<u64>> = ahead.pieces.iter().map(|(r, _)| r.clone()).collect();
        covered.dedup();
        assert_eq!(covered.len(), ahead.pieces.len());
        assert!(covered.windows(2).all(|w| w[0].end == w[1].start));
        assert_eq!(covered.last().map(|r| r.end), Some(6 * MIB));
        assert_eq!(sent.iter().map(|r| r.end - r.start).sum::<u64>(), 6 * MIB);
        // Reads of the front are served by the pieces, nothing fetched.
        assert_eq!(read(&mut ahead, 0..6 * MIB, FAR, &whole()).1, None);
    }

    #[test]
    fn pieces_behind_the_walk_are_dropped_and_the_ones_it_reads_are_kept() {
        let mut ahead = ReadAhead::default();
        read(&mut ahead, 0..MIB, FAR, &whole());
        read(&mut ahead, MIB..2 * MIB, FAR, &whole());
        let mut at = 2 * MIB;
        while at < 60 * MIB {
            read(&mut ahead, at..at + MIB, FAR, &whole());
            at += MIB;
        }
        let last = at - MIB..at;
        let held: u64 = ahead.pieces.iter().map(|(r, _)| r.end - r.start).sum();
        assert!(held <= 2 * MAX, "{held} bytes held");
        assert!(ahead.pieces.iter().all(|(r, _)| r.end > last.start));
        // The range just read is read again (another array of the same
        // block) from the pieces, without a fetch.
        assert_eq!(
            read(&mut ahead, last.clone(), FAR, &whole()),
            (vec![], None)
        );
    }

    /// Whether the pieces kept are in order and do not overlap.
    fn pieces_in_order(ahead: &ReadAhead<Range<u64>>) -> bool {
        ahead
            .pieces
            .iter()
            .zip(ahead.pieces.iter().skip(1))
            .all(|((a, _), (b, _))| a.end <= b.start)
    }

    #[test]
    fn reads_out_of_order_never_leave_overlapping_pieces() {
        // read_many's reads arrive a little out of order, some skip ahead,
        // some start anew; whatever they do, the pieces kept stay in order
        // and apart, so no read is served a byte twice.
        for policy in [ReadParallelism::default(), whole()] {
            let mut state: u64 = 0x2545_f491_4f6c_dd1d;
            let mut next = |n: u64| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                (state >> 33) % n.max(1)
            };
            let mut ahead = ReadAhead::default();
            let mut at = 0u64;
            for step in 0..5000 {
                let len = 1 + next(300_000);
                let start = match next(10) {
                    0..=5 => at,
                    6 => at.saturating_sub(next(2 * MIB)),
                    7 => at + next(6 * MIB),
                    8 => next(200 * MIB),
                    _ => at.saturating_sub(next(50_000)),
                };
                read(&mut ahead, start..start + len, 300 * MIB, &policy);
                assert!(
                    pieces_in_order(&ahead),
                    "step {step}: {:?}",
                    ahead
                        .pieces
                        .iter()
                        .map(|(r, _)| r.clone())
                        .collect::<Vec<_>>()
                );
                at = start + len;
            }
        }
    }
}
