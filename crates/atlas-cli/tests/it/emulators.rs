//! Eight `atlas rm` processes at once on the Azure and GCS emulators (Azurite
//! and fake-gcs-server, started by `scripts/azurite.sh` and
//! `scripts/fake-gcs.sh`), as `s3.rs` does on S3: separate processes, each
//! with its own handle, connections and retries.
//!
//! A missing emulator fails these tests with the script's name; it never skips.

#![cfg(test)]

use crate::common;

use common::{atlas_on_azurite, atlas_on_fake_gcs, eight_racing_rm};
use serde_json::json;

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
/// (`atlas/tests/it/gcs.rs: fake_gcs_server_ignores_generation_preconditions`),
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
