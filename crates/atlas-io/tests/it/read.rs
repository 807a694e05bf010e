//! Claims about the range-read helpers.

#![cfg(test)]

use crate::common;

use atlas_io::{
    CasMemory, CountingLayer, IoErrorKind, ReadParallelism, read_optional, read_range, read_ranges,
    read_suffix, stat_len, supports_suffix_reads,
};
use bytes::Bytes;
use common::counted_memory;
use opendal::{BytesRange, Operator};

fn data(n: usize) -> Bytes {
    Bytes::from((0..n).map(|i| (i % 251) as u8).collect::<Vec<u8>>())
}

#[tokio::test]
async fn a_range_read_is_one_request_for_exactly_the_range() {
    let (op, layer) = counted_memory();
    op.write("obj", data(1000)).await.unwrap();
    layer.stats().reset();

    let got = read_range(&op, "obj", 100..164).await.unwrap();

    assert_eq!(got, data(1000).slice(100..164));
    let counts = layer.stats().snapshot();
    assert_eq!((counts.reads, counts.stats), (1, 0));
    assert_eq!(
        layer.stats().read_log()[0].range,
        BytesRange::new(100, Some(64))
    );
}

#[tokio::test]
async fn an_empty_range_costs_no_request() {
    let (op, layer) = counted_memory();
    op.write("obj", data(10)).await.unwrap();
    layer.stats().reset();
    assert!(read_range(&op, "obj", 5..5).await.unwrap().is_empty());
    assert_eq!(layer.stats().snapshot().requests(), 0);
}

#[tokio::test]
async fn a_short_read_is_an_error_not_less_data() {
    let (op, layer) = counted_memory();
    op.write("obj", data(1000)).await.unwrap();
    layer.faults().truncate_reads_by(3);

    let err = read_range(&op, "obj", 0..100).await.unwrap_err();

    let short = err.short_read().expect("a short read");
    assert_eq!((short.expected, short.actual), (100, 97));
    assert_eq!(err.kind(), IoErrorKind::Other);
}

#[tokio::test]
async fn a_range_past_the_end_of_the_object_is_an_error() {
    let (op, _layer) = counted_memory();
    op.write("obj", data(10)).await.unwrap();
    let err = read_range(&op, "obj", 5..20).await.unwrap_err();
    // The backend refuses the range itself (not a transient failure to retry).
    assert_eq!(err.kind(), IoErrorKind::Other, "{err}");
    let backend = std::error::Error::source(&err).map(ToString::to_string);
    assert!(
        backend.is_some_and(|b| b.contains("RangeNotSatisfied")),
        "{err}"
    );
}

#[tokio::test]
async fn a_missing_object_is_not_found() {
    let (op, _layer) = counted_memory();
    let err = read_range(&op, "nope", 0..4).await.unwrap_err();
    assert_eq!(err.kind(), IoErrorKind::NotFound);
    assert_eq!(err.path(), "nope");
    assert_eq!(
        stat_len(&op, "nope").await.unwrap_err().kind(),
        IoErrorKind::NotFound
    );
}

#[tokio::test]
async fn a_suffix_read_is_one_request_on_memory() {
    let (op, layer) = counted_memory();
    op.write("obj", data(1000)).await.unwrap();
    layer.stats().reset();
    assert!(supports_suffix_reads(&op));

    let tail = read_suffix(&op, "obj", 12).await.unwrap();

    assert_eq!(tail, data(1000).slice(988..));
    let counts = layer.stats().snapshot();
    assert_eq!((counts.reads, counts.stats), (1, 0));
    assert_eq!(layer.stats().read_log()[0].range, BytesRange::suffix(12));
}

#[tokio::test]
async fn suffix_reads_can_be_disabled_by_the_counting_layer() {
    let layer = CountingLayer::new().without_suffix_reads();
    let op = Operator::new(opendal::services::Memory::default())
        .unwrap()
        .layer(layer.clone());
    op.write("obj", data(1000)).await.unwrap();
    layer.stats().reset();

    assert!(!supports_suffix_reads(&op));
    assert!(!op.info().capability().read_with_suffix);
    let tail = read_suffix(&op, "obj", 12).await.unwrap();

    assert_eq!(tail, data(1000).slice(988..));
    let counts = layer.stats().snapshot();
    assert_eq!(
        (counts.stats, counts.reads),
        (1, 1),
        "stat + one ranged read"
    );
    assert_eq!(
        layer.stats().read_log()[0].range,
        BytesRange::new(988, Some(12))
    );
    // A caller that ignores the capability is refused, as a backend would.
    assert!(
        op.read_with("obj")
            .range(BytesRange::suffix(4))
            .await
            .is_err()
    );
}

#[tokio::test]
async fn a_suffix_longer_than_the_object_returns_the_whole_object() {
    let (op, _layer) = counted_memory();
    op.write("obj", data(5)).await.unwrap();
    assert_eq!(read_suffix(&op, "obj", 100).await.unwrap(), data(5));
}

#[tokio::test]
async fn big_reads_are_split_into_pieces_and_reassembled_in_order() {
    let (op, layer) = counted_memory();
    op.write("obj", data(10_000)).await.unwrap();
    layer.stats().reset();
    layer
        .faults()
        .set_latency(std::time::Duration::from_millis(2));

    let policy = ReadParallelism::default()
        .min_part_size(1000)
        .max_part_size(1000)
        .max_concurrency(4);
    let got = read_ranges(&op, "obj", &[0..2500, 3000..3001, 4000..4000], &policy)
        .await
        .unwrap();

    assert_eq!(got.len(), 3);
    assert_eq!(got[0], data(10_000).slice(0..2500));
    assert_eq!(got[1], data(10_000).slice(3000..3001));
    assert!(got[2].is_empty());
    assert_eq!(
        layer.stats().snapshot().reads,
        4,
        "3 pieces + 1, none for the empty range"
    );
}

#[tokio::test]
async fn a_failing_piece_fails_the_whole_read() {
    let (op, layer) = counted_memory();
    op.write("obj", data(10_000)).await.unwrap();
    layer.faults().fail_nth_read(2);
    let policy = ReadParallelism::default()
        .min_part_size(1000)
        .max_part_size(1000)
        .max_concurrency(2);
    let err = read_ranges(&op, "obj", std::slice::from_ref(&(0..5000)), &policy)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), IoErrorKind::Other);
}

#[tokio::test]
async fn an_absent_object_reads_as_none_in_one_request() {
    let (op, layer) = counted_memory();
    assert_eq!(read_optional(&op, "deleted.mask").await.unwrap(), None);
    assert_eq!(layer.stats().snapshot().reads, 1);
}

#[tokio::test]
async fn memory_reports_no_etag_but_cas_memory_does() {
    let (op, _layer) = counted_memory();
    op.write("m", data(3)).await.unwrap();
    let snap = read_optional(&op, "m").await.unwrap().unwrap();
    assert_eq!(snap.bytes, data(3));
    assert_eq!(snap.etag, None);

    let cas = CasMemory::new().operator();
    cas.write("m", data(3)).await.unwrap();
    let snap = read_optional(&cas, "m").await.unwrap().unwrap();
    assert_eq!(snap.bytes, data(3));
    assert!(snap.etag.is_some());
}

#[tokio::test]
async fn fs_reports_no_etag_and_simulates_suffix_reads() {
    let dir = tempfile::tempdir().unwrap();
    let op = atlas_io::fs_operator(dir.path()).unwrap();
    op.write("f", data(100)).await.unwrap();
    let snap = read_optional(&op, "f").await.unwrap().unwrap();
    assert_eq!(snap.etag, None);
    assert_eq!(snap.version, None);
    assert!(supports_suffix_reads(&op));
    assert_eq!(
        read_suffix(&op, "f", 10).await.unwrap(),
        data(100).slice(90..)
    );
    let cap = op.info().capability();
    assert!(!cap.write_with_if_match);
    assert!(cap.write_with_if_not_exists);
}

#[tokio::test]
async fn a_local_read_owns_a_buffer_of_its_own_size_after_a_large_one() {
    // OpenDAL's fs service as published pools its read buffers: a small
    // read after a large one came back as a view into the large buffer,
    // which the pool kept besides. Held for long (a tail, an index page),
    // a few bytes kept a megabyte alive.
    let dir = tempfile::tempdir().unwrap();
    let op = atlas_io::fs_operator(dir.path()).unwrap();
    let whole = data(2 << 20);
    op.write("f", whole.clone()).await.unwrap();
    let large = read_range(&op, "f", 0..1 << 20).await.unwrap();
    assert_eq!(large.len(), 1 << 20);
    drop(large);
    for _ in 0..3 {
        let small = read_range(&op, "f", 10..110).await.unwrap();
        assert_eq!(small, whole.slice(10..110));
        let owned = match small.try_into_mut() {
            Ok(owned) => owned,
            Err(_) => panic!("the bytes of a read share their buffer with something else"),
        };
        assert_eq!(owned.capacity(), 100, "a read holds more than it read");
    }
}
