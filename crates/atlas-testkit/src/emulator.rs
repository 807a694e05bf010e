//! The object-store emulators that run outside the test process: Azurite
//! (Azure Blob Storage) and fake-gcs-server (Google Cloud Storage), each
//! installed, started or reused by its script under `scripts/`.
//!
//! A missing emulator fails the test that asks for it, naming the script and
//! what the script needs; it never skips.

use std::process::Command;
use std::sync::OnceLock;

/// Azurite's connection string (container `atlas-test` exists); the first
/// call in a process runs `scripts/azurite.sh`.
pub fn azurite() -> &'static str {
    static CONN: OnceLock<String> = OnceLock::new();
    CONN.get_or_init(|| start("azurite.sh", "Azurite", "node and npm required"))
}

/// fake-gcs-server's endpoint (bucket `atlas-test` exists); the first call
/// in a process runs `scripts/fake-gcs.sh`.
pub fn fake_gcs() -> &'static str {
    static ENDPOINT: OnceLock<String> = OnceLock::new();
    ENDPOINT.get_or_init(|| {
        start(
            "fake-gcs.sh",
            "fake-gcs-server",
            "python3 and PyPI required",
        )
    })
}

/// Runs `scripts/<script>` and returns what it prints, trimmed.
fn start(script: &str, emulator: &str, needs: &str) -> String {
    let path = format!("{}/../../scripts/{script}", env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("bash")
        .arg(&path)
        .output()
        .unwrap_or_else(|e| panic!("{emulator} is needed: scripts/{script} could not run ({e})"));
    assert!(
        out.status.success(),
        "{emulator} is needed and scripts/{script} did not start it ({needs}): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}
