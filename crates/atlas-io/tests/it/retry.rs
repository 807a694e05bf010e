//! `RetryPolicy`: temporary failures are retried with backoff; permanent ones
//! and exhausted retries surface as typed errors.

#![cfg(test)]

use std::time::Duration;

use atlas_io::{CountingLayer, IoErrorKind, RetryPolicy, read_range};
use opendal::Operator;

/// A memory object `obj` of 1000 bytes behind a counting layer, under `policy`.
async fn setup(policy: &RetryPolicy) -> (Operator, CountingLayer) {
    let counting = CountingLayer::new();
    let inner = Operator::new(opendal::services::Memory::default())
        .unwrap()
        .layer(counting.clone());
    inner.write("obj", vec![7u8; 1000]).await.unwrap();
    counting.stats().reset();
    (policy.apply(inner), counting)
}

fn quick() -> RetryPolicy {
    RetryPolicy::default()
        .max_retries(4)
        .backoff(Duration::from_millis(1), Duration::from_millis(4))
}

#[tokio::test]
async fn temporary_read_failures_within_the_budget_are_absorbed() {
    let (op, counting) = setup(&quick()).await;
    counting.faults().fail_next_reads_transiently(3);
    let bytes = read_range(&op, "obj", 10..20).await.unwrap();
    assert_eq!(bytes.len(), 10);
    assert_eq!(
        counting.stats().snapshot().reads,
        4,
        "three failed attempts and the one that worked"
    );
}

#[tokio::test]
async fn a_failure_that_outlives_its_retries_is_transient() {
    let (op, counting) = setup(&quick()).await;
    counting.faults().fail_next_reads_transiently(10);
    let err = read_range(&op, "obj", 10..20).await.unwrap_err();
    assert_eq!(err.kind(), IoErrorKind::Transient, "{err}");
    assert_eq!(
        counting.stats().snapshot().reads,
        5,
        "one try and four retries"
    );
}

#[tokio::test]
async fn without_retries_the_first_temporary_failure_is_reported() {
    let (op, counting) = setup(&RetryPolicy::no_retries()).await;
    counting.faults().fail_next_reads_transiently(1);
    let err = read_range(&op, "obj", 0..5).await.unwrap_err();
    assert_eq!(err.kind(), IoErrorKind::Transient, "{err}");
    assert_eq!(counting.stats().snapshot().reads, 1);
}

#[tokio::test]
async fn a_missing_object_is_not_found_at_once_not_retried() {
    let (op, counting) = setup(&quick()).await;
    let err = read_range(&op, "missing", 0..5).await.unwrap_err();
    assert_eq!(err.kind(), IoErrorKind::NotFound, "{err}");
    assert_eq!(counting.stats().snapshot().reads, 1);
}

#[tokio::test]
async fn a_slow_operation_times_out_and_is_retried_as_temporary() {
    let policy = RetryPolicy::default()
        .max_retries(1)
        .backoff(Duration::from_millis(1), Duration::from_millis(1))
        .timeouts(Duration::from_millis(50), Duration::from_millis(50));
    let (op, counting) = setup(&policy).await;
    counting.faults().set_latency(Duration::from_millis(300));
    let err = read_range(&op, "obj", 0..5).await.unwrap_err();
    assert_eq!(err.kind(), IoErrorKind::Transient, "{err}");
    assert!(err.message().contains("timeout"), "{err}");
}

#[tokio::test]
async fn a_permanent_failure_is_not_retried_and_not_called_transient() {
    let (op, counting) = setup(&quick()).await;
    counting.faults().fail_nth_read(1);
    let err = read_range(&op, "obj", 0..5).await.unwrap_err();
    assert_eq!(err.kind(), IoErrorKind::Other, "{err}");
    assert_eq!(counting.stats().snapshot().reads, 1);
}
