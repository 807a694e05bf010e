//! The HTTP transport across tokio runtimes. A pooled connection is driven by
//! a task of the runtime that opened it; a program with several runtimes
//! (threads with their own current-thread runtime, tests, Python calls) must
//! never be handed a connection whose runtime is idle or gone.

#![cfg(test)]

use std::time::Duration;

use atlas_testkit::{ACCESS_KEY, BUCKET, REGION, S3Server, SECRET_KEY};
use bytes::Bytes;
use opendal::Operator;
use opendal::services::S3;

fn operator(endpoint: &str) -> Operator {
    let builder = S3::default()
        .bucket(BUCKET)
        .endpoint(endpoint)
        .region(REGION)
        .access_key_id(ACCESS_KEY)
        .secret_access_key(SECRET_KEY)
        .root("/transport")
        .disable_config_load()
        .disable_ec2_metadata();
    atlas_io::install_http_transport();
    Operator::new(builder).unwrap()
}

#[test]
fn a_store_stays_usable_after_the_runtime_that_first_used_it_has_ended() {
    let server = S3Server::start();
    let shared = operator(server.endpoint());
    for round in 0u8..6 {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let fresh = operator(server.endpoint());
        for op in [&shared, &fresh] {
            let outcome = rt.block_on(async {
                op.write("object", Bytes::from(vec![round; 100])).await?;
                op.read("object").await
            });
            let bytes = outcome.unwrap_or_else(|e| panic!("round {round}: {e}"));
            assert_eq!(bytes.to_vec(), vec![round; 100]);
        }
        drop(rt);
    }
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// With one client per process (OpenDAL's default transport) the read waits
/// forever on a connection of runtime `a`, which nobody drives.
#[test]
fn a_request_never_waits_on_a_connection_of_another_idle_runtime() {
    let server = S3Server::start();
    let op = operator(server.endpoint());
    let a = current_thread();
    a.block_on(op.write("idle", Bytes::from_static(b"written on a")))
        .unwrap();
    let b = current_thread();
    let read =
        b.block_on(async { tokio::time::timeout(Duration::from_secs(10), op.read("idle")).await });
    let bytes = read
        .expect("the read on runtime b finishes while runtime a is idle")
        .unwrap();
    assert_eq!(bytes.to_vec(), b"written on a");
    drop(a);
}
