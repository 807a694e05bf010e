//! Eight `atlas rm` processes at once on the Azure and GCS emulators (Azurite
//! and fake-gcs-server, started by `scripts/azurite.sh` and
//! `scripts/fake-gcs.sh`), as `s3.rs` does on S3: separate processes, each
//! with its own handle, connections and retries.
//!
//! A missing emulator fails these tests with the script's name; it never skips.

#![cfg(test)]

mod common;

use std::process::Command;

use common::eight_racing_rm;
use serde_json::json;

/// `atlas` set up for Azurite through its connection string.
fn atlas_on_azurite() -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("atlas"));
    cmd.env_remove("RUST_LOG")
        .env_remove("AZURE_STORAGE_ACCOUNT")
        .env_remove("AZURE_STORAGE_ENDPOINT")
        .env("AZURE_STORAGE_CONNECTION_STRING", atlas_testkit::azurite());
    cmd
}

/// `atlas` set up for fake-gcs-server: its endpoint, unsigned requests.
fn atlas_on_fake_gcs() -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("atlas"));
    cmd.env_remove("RUST_LOG")
        .env_remove("GOOGLE_APPLICATION_CREDENTIALS")
        .args(["--endpoint", atlas_testkit::fake_gcs(), "--anonymous"]);
    cmd
}

fn unique(scheme: &str, test: &str) -> String {
    format!(
        "{scheme}://atlas-test/{test}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )
}

#[test]
fn eight_processes_deleting_at_once_on_azurite_lose_no_delete() {
    let (left, outputs) = eight_racing_rm(atlas_on_azurite, &unique("az", "rm8"));
    for out in &outputs {
        assert_eq!(out["deleted"], json!(5), "{out}");
        assert_eq!(out["guarantee"], json!("conditional"), "{out}");
    }
    assert_eq!(left, 0, "every one of the 40 deletes is kept");
}

/// fake-gcs-server accepts GCS's generation preconditions and ignores them
/// (`atlas/tests/gcs.rs: fake_gcs_server_ignores_generation_preconditions`),
/// so concurrent writers can overwrite each other there. What each process
/// promises is asserted: it exits 0 having applied its five deletes under
/// the guarantee real GCS gives; the count the emulator lost is printed.
#[test]
fn eight_processes_deleting_at_once_on_fake_gcs_each_report_their_deletes() {
    let (left, outputs) = eight_racing_rm(atlas_on_fake_gcs, &unique("gs", "rm8"));
    for out in &outputs {
        assert_eq!(out["deleted"], json!(5), "{out}");
        assert_eq!(out["guarantee"], json!("conditional"), "{out}");
    }
    eprintln!("fake-gcs-server, 8 `atlas rm` processes x 5 of 40: {left} deletes lost");
}
