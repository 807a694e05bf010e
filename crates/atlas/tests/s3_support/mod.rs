//! A local S3-compatible server for the S3 tests: moto on 127.0.0.1, which
//! `scripts/s3-server.sh` installs on first use, starts once and reuses.

use std::process::Command;
use std::sync::OnceLock;

use atlas_io::CountingLayer;
use opendal::Operator;
use opendal::services::S3;

/// The server's endpoint; the first call starts it.
pub fn endpoint() -> &'static str {
    static ENDPOINT: OnceLock<String> = OnceLock::new();
    ENDPOINT.get_or_init(|| {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/s3-server.sh");
        let out = Command::new("bash")
            .arg(script)
            .output()
            .expect("scripts/s3-server.sh runs");
        assert!(
            out.status.success(),
            "the local S3 server did not start: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    })
}

/// An operator on the test bucket under a prefix no other run uses, behind a counting layer.
pub fn s3(test: &str) -> (Operator, CountingLayer) {
    let unique = format!(
        "/{test}-{}-{}/",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    let builder = S3::default()
        .bucket("atlas-test")
        .endpoint(endpoint())
        .region("us-east-1")
        .access_key_id("test")
        .secret_access_key("test")
        .root(&unique)
        .disable_config_load()
        .disable_ec2_metadata();
    let counting = CountingLayer::new();
    let op = Operator::new(builder).unwrap().layer(counting.clone());
    (op, counting)
}
