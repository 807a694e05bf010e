//! Split reads (`read_split` under a `ReadParallelism`), seen through the
//! counting layer: how many GETs, which ranges, how many at once, and what
//! a failing part does to the read.

#![cfg(test)]

use std::ops::Range;
use std::time::Duration;

use atlas_io::{
    CountingLayer, IoErrorKind, ReadParallelism, RetryPolicy, read_split, read_split_pieces,
};
use bytes::Bytes;
use opendal::{BytesRange, Operator};

const OBJECT: usize = 100_000;

fn data(n: usize) -> Bytes {
    Bytes::from((0..n).map(|i| (i % 251) as u8).collect::<Vec<u8>>())
}

/// A memory object `obj` of [`OBJECT`] bytes behind a counting layer, under
/// `retry` (the counting layer sees every attempt the retry layer makes).
async fn setup(retry: &RetryPolicy) -> (Operator, CountingLayer) {
    let counting = CountingLayer::new();
    let inner = Operator::new(opendal::services::Memory::default())
        .unwrap()
        .layer(counting.clone());
    inner.write("obj", data(OBJECT)).await.unwrap();
    counting.stats().reset();
    (retry.apply(inner), counting)
}

fn quick_retries() -> RetryPolicy {
    RetryPolicy::default()
        .max_retries(4)
        .backoff(Duration::from_millis(1), Duration::from_millis(4))
}

/// Equal parts of at most 1 000 bytes, as few as that allows (any read over
/// 1 000 bytes splits), 4 at once.
fn small_parts() -> ReadParallelism {
    ReadParallelism::default()
        .min_part_size(1000)
        .max_part_size(1000)
        .max_concurrency(4)
}

/// The ranges of the logged reads, sorted by start.
fn logged_ranges(counting: &CountingLayer) -> Vec<Range<u64>> {
    let mut ranges: Vec<Range<u64>> = counting
        .stats()
        .read_log()
        .into_iter()
        .map(|r| match r.range {
            BytesRange::Range {
                offset,
                size: Some(size),
            } => offset..offset + size,
            other => panic!("a split read asks for bounded ranges, not {other:?}"),
        })
        .collect();
    ranges.sort_by_key(|r| (r.start, r.end));
    ranges
}

#[tokio::test]
async fn a_split_read_is_ceil_len_over_part_gets_that_tile_the_range_exactly() {
    let (op, counting) = setup(&RetryPolicy::no_retries()).await;
    let range = 1234..8765; // 7 531 bytes: 8 parts of at most 1 000
    let got = read_split(&op, "obj", range.clone(), &small_parts())
        .await
        .unwrap();

    assert_eq!(got, data(OBJECT).slice(1234..8765));
    let counts = counting.stats().snapshot();
    assert_eq!(counts.reads, 7531u64.div_ceil(1000));
    assert_eq!(counts.reads, small_parts().requests(&range));
    assert_eq!(counts.bytes_read, 7531, "no byte twice, none outside");
    let ranges = logged_ranges(&counting);
    assert_eq!(ranges.first().map(|r| r.start), Some(range.start));
    assert_eq!(
        ranges.last().map(|r| r.end),
        Some(range.end),
        "nothing past the end"
    );
    for pair in ranges.windows(2) {
        assert_eq!(pair[0].end, pair[1].start, "no gap, no overlap: {pair:?}");
    }
    assert!(ranges.iter().all(|r| r.end - r.start <= 1000), "{ranges:?}");
}

#[tokio::test]
async fn a_split_read_in_pieces_costs_the_same_gets_and_its_pieces_join_to_the_range_in_order() {
    let (op, counting) = setup(&RetryPolicy::no_retries()).await;
    let range = 1234..8765;
    let pieces = read_split_pieces(&op, "obj", range.clone(), &small_parts())
        .await
        .unwrap();

    assert!(
        pieces.len() >= 8,
        "at least one piece per part: {}",
        pieces.len()
    );
    let joined: Vec<u8> = pieces.iter().flat_map(|p| p.iter().copied()).collect();
    assert_eq!(Bytes::from(joined), data(OBJECT).slice(1234..8765));
    let counts = counting.stats().snapshot();
    assert_eq!(counts.reads, small_parts().requests(&range));
    assert_eq!(counts.bytes_read, 7531);
    assert!(
        read_split_pieces(&op, "obj", 5..5, &small_parts())
            .await
            .unwrap()
            .is_empty(),
        "an empty range is no piece and no GET"
    );
    assert_eq!(counting.stats().snapshot().reads, counts.reads);
}

#[tokio::test]
async fn a_read_shorter_than_two_minimum_parts_is_one_get_of_exactly_its_range() {
    let (op, counting) = setup(&RetryPolicy::no_retries()).await;
    let roomy = small_parts().max_part_size(100_000);
    let got = read_split(&op, "obj", 500..2499, &roomy).await.unwrap();
    assert_eq!(got, data(OBJECT).slice(500..2499));
    assert_eq!(counting.stats().snapshot().reads, 1);
    assert_eq!(logged_ranges(&counting), vec![500..2499]);

    // And a policy that never splits reads the whole object in one GET.
    counting.stats().reset();
    let whole = 0..OBJECT as u64;
    let got = read_split(&op, "obj", whole.clone(), &ReadParallelism::single())
        .await
        .unwrap();
    assert_eq!(got.len(), OBJECT);
    assert_eq!(logged_ranges(&counting), vec![whole]);
}

#[tokio::test]
async fn a_read_is_spread_evenly_over_as_many_parts_as_fly_at_once() {
    let (op, counting) = setup(&RetryPolicy::no_retries()).await;
    counting.faults().set_latency(Duration::from_millis(20));
    // Parts of 1 000 bytes or more, 4 at once, none over 100 000 bytes.
    let policy = ReadParallelism::default()
        .min_part_size(1000)
        .max_part_size(100_000)
        .max_concurrency(4);
    let range = 1000..10_001; // 9 001 bytes: 4 parts of 2 250 or 2 251
    let got = read_split(&op, "obj", range.clone(), &policy)
        .await
        .unwrap();

    assert_eq!(got, data(OBJECT).slice(1000..10_001));
    assert_eq!(counting.stats().snapshot().reads, 4);
    assert_eq!(counting.stats().max_reads_in_flight(), 4, "all at once");
    let ranges = logged_ranges(&counting);
    assert_eq!(
        ranges,
        vec![1000..3251, 3251..5501, 5501..7751, 7751..10_001],
        "equal parts that tile the range"
    );

    // A read of 3 999 bytes has room for 3 parts of at least 1 000 bytes only.
    counting.stats().reset();
    read_split(&op, "obj", 0..3999, &policy).await.unwrap();
    let sizes: Vec<u64> = logged_ranges(&counting)
        .iter()
        .map(|r| r.end - r.start)
        .collect();
    assert_eq!(sizes, vec![1333, 1333, 1333]);
}

#[tokio::test]
async fn at_most_max_concurrency_parts_are_in_flight_at_once() {
    let (op, counting) = setup(&RetryPolicy::no_retries()).await;
    counting.faults().set_latency(Duration::from_millis(20));
    // 12 parts, 3 at a time.
    let policy = small_parts().max_concurrency(3);
    let got = read_split(&op, "obj", 0..12_000, &policy).await.unwrap();
    assert_eq!(got, data(OBJECT).slice(0..12_000));
    assert_eq!(counting.stats().snapshot().reads, 12);
    assert_eq!(counting.stats().max_reads_in_flight(), 3);

    // With room for all of them, all 12 go at once.
    counting.stats().reset();
    let policy = small_parts().max_concurrency(16);
    read_split(&op, "obj", 0..12_000, &policy).await.unwrap();
    assert_eq!(counting.stats().max_reads_in_flight(), 12);
}

#[tokio::test]
async fn a_part_that_fails_temporarily_once_is_retried_alone() {
    let (op, counting) = setup(&quick_retries()).await;
    counting.faults().fail_next_reads_transiently(1);
    let range = 0..5000; // 5 parts
    let got = read_split(&op, "obj", range.clone(), &small_parts())
        .await
        .unwrap();

    assert_eq!(got, data(OBJECT).slice(0..5000));
    let parts = small_parts().requests(&range);
    assert_eq!(parts, 5);
    assert_eq!(counting.stats().snapshot().reads, parts + 1);
    // The one range asked twice is a part, not the whole read again.
    let ranges = logged_ranges(&counting);
    let repeated: Vec<_> = ranges.windows(2).filter(|w| w[0] == w[1]).collect();
    assert_eq!(repeated.len(), 1, "{ranges:?}");
    assert_eq!(repeated[0][0].end - repeated[0][0].start, 1000);
}

#[tokio::test]
async fn a_part_that_fails_for_good_fails_the_read_with_its_cause() {
    let (op, counting) = setup(&quick_retries()).await;
    counting.faults().fail_nth_read(3);
    let err = read_split(&op, "obj", 0..5000, &small_parts())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), IoErrorKind::Other, "{err}");
    assert_eq!(err.path(), "obj");
    assert!(
        err.message().contains("injected failure of this read"),
        "the part's own error: {err}"
    );
    // A permanent failure is not retried: no range is asked twice.
    let ranges = logged_ranges(&counting);
    assert!(ranges.len() >= 3, "{ranges:?}");
    assert!(ranges.windows(2).all(|w| w[0] != w[1]), "{ranges:?}");
}

#[tokio::test]
async fn a_part_that_stays_unavailable_fails_the_read_as_transient() {
    let (op, counting) = setup(&quick_retries().max_retries(1)).await;
    counting.faults().fail_next_reads_transiently(100);
    let err = read_split(&op, "obj", 0..5000, &small_parts())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), IoErrorKind::Transient, "{err}");
}
