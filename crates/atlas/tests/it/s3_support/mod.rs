//! The S3 server of the S3 tests: `atlas_testkit::S3Server`, a real S3
//! protocol server running in this test process on 127.0.0.1 (no Python,
//! no network), started by the first test that asks and shared after.
#![allow(dead_code)]

use std::sync::OnceLock;

use atlas_io::CountingLayer;
use atlas_testkit::{ACCESS_KEY, BUCKET, REGION, S3Server, SECRET_KEY};
use opendal::Operator;
use opendal::services::S3;

/// The shared server; the first call starts it.
pub fn server() -> &'static S3Server {
    static SERVER: OnceLock<S3Server> = OnceLock::new();
    SERVER.get_or_init(S3Server::start)
}

/// The shared server's endpoint.
pub fn endpoint() -> &'static str {
    server().endpoint()
}

/// A prefix no other test or run uses.
pub fn unique(test: &str) -> String {
    format!(
        "{test}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )
}

/// An operator on the test bucket at `endpoint` under `root`, behind a counting layer.
pub fn s3_at(endpoint: &str, root: &str) -> (Operator, CountingLayer) {
    let builder = S3::default()
        .bucket(BUCKET)
        .endpoint(endpoint)
        .region(REGION)
        .access_key_id(ACCESS_KEY)
        .secret_access_key(SECRET_KEY)
        .root(root)
        .disable_config_load()
        .disable_ec2_metadata();
    let counting = CountingLayer::new();
    let op = Operator::new(builder).unwrap().layer(counting.clone());
    (op, counting)
}

/// An operator on the shared server's bucket under a fresh prefix, behind a counting layer.
pub fn s3(test: &str) -> (Operator, CountingLayer) {
    s3_at(endpoint(), &format!("/{}/", unique(test)))
}
