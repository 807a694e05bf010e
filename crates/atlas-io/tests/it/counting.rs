//! Claims about the counting and fault-injection layer.

#![cfg(test)]

use crate::common;

use std::time::{Duration, Instant};

use atlas_io::{Counts, IoErrorKind, read_range};
use common::counted_memory;

#[tokio::test]
async fn each_kind_of_request_is_counted_once() {
    let (op, layer) = counted_memory();
    op.write("a", vec![1u8; 100]).await.unwrap();
    op.stat("a").await.unwrap();
    op.read_with("a").range(0..10).await.unwrap();
    op.list("").await.unwrap();
    op.delete("a").await.unwrap();

    let c = layer.stats().snapshot();
    assert_eq!(
        c,
        Counts {
            reads: 1,
            stats: 1,
            writes: 1,
            deletes: 1,
            lists: 1,
            others: 0,
            bytes_read: 10,
            bytes_written: 100,
        }
    );
    assert_eq!(c.requests(), 5);
    layer.stats().reset();
    assert_eq!(layer.stats().snapshot(), Counts::default());
    assert!(layer.stats().read_log().is_empty());
}

#[tokio::test]
async fn creating_a_reader_sends_nothing_each_read_is_one_request() {
    let (op, layer) = counted_memory();
    op.write("a", vec![1u8; 100]).await.unwrap();
    layer.stats().reset();
    let r = op.reader("a").await.unwrap();
    assert_eq!(layer.stats().snapshot().requests(), 0);
    r.read(0..5).await.unwrap();
    r.read(50..60).await.unwrap();
    assert_eq!(layer.stats().snapshot().reads, 2);
}

#[tokio::test]
async fn the_nth_read_fails_once() {
    let (op, layer) = counted_memory();
    op.write("a", vec![1u8; 100]).await.unwrap();
    layer.faults().fail_nth_read(2);
    assert!(read_range(&op, "a", 0..1).await.is_ok());
    let err = read_range(&op, "a", 0..1).await.unwrap_err();
    assert_eq!(err.kind(), IoErrorKind::Other, "{err}");
    assert!(read_range(&op, "a", 0..1).await.is_ok());
    assert_eq!(
        layer.stats().snapshot().reads,
        3,
        "a failed request still counts"
    );
}

#[tokio::test]
async fn reads_of_matching_paths_fail_until_cleared() {
    let (op, layer) = counted_memory();
    op.write("coll/data.atlas", vec![1u8; 10]).await.unwrap();
    op.write("coll/deleted.mask", vec![1u8; 10]).await.unwrap();
    layer.faults().fail_reads_matching("mask");
    let err = read_range(&op, "coll/deleted.mask", 0..1)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), IoErrorKind::Other, "{err}");
    assert!(read_range(&op, "coll/data.atlas", 0..1).await.is_ok());
    layer.faults().clear();
    assert!(read_range(&op, "coll/deleted.mask", 0..1).await.is_ok());
}

#[tokio::test]
async fn latency_is_added_to_each_request() {
    let (op, layer) = counted_memory();
    op.write("a", vec![1u8; 10]).await.unwrap();
    layer.faults().set_latency(Duration::from_millis(20));
    let t = Instant::now();
    read_range(&op, "a", 0..1).await.unwrap();
    op.stat("a").await.unwrap();
    assert!(t.elapsed() >= Duration::from_millis(40));
}

#[tokio::test]
async fn a_writer_fails_after_the_configured_bytes() {
    let (op, layer) = counted_memory();
    layer.faults().fail_writes_after(5);
    let err = op.write("a", vec![1u8; 10]).await.unwrap_err();
    assert!(err.to_string().contains("injected write failure"), "{err}");
    assert_eq!(layer.stats().snapshot().bytes_written, 5);
    assert!(
        !op.exists("a").await.unwrap(),
        "memory commits only on close"
    );
}
