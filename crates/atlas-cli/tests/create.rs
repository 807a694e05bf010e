//! `atlas create`: NetCDF files in, a collection out, all or nothing.

#![cfg(test)]

mod common;

use std::path::PathBuf;

use common::atlas;
use serde_json::Value as Json;

fn netcdf(sub: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../atlas-netcdf/tests/data")
        .join(sub)
}

#[test]
fn create_writes_one_dataset_per_file_and_reports_them_as_json() {
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("out");
    let out = atlas()
        .args(["--json", "create"])
        .arg(netcdf("good"))
        .arg(&dest)
        .args(["-j", "2"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Json = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["datasets"], 5);
    let names: Vec<&str> = report["written"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["dataset"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "cf_extras.nc",
            "classic.nc",
            "nc4.nc4",
            "nc4classic.nc",
            "offset64.nc"
        ]
    );
    atlas().arg("verify").arg(&dest).assert().success();
    // A finished write leaves the container and nothing else (no empty temp directory).
    let left: Vec<String> = std::fs::read_dir(&dest)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["data.atlas"]);
}

#[test]
fn a_failing_file_leaves_nothing_at_the_destination_and_names_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("out");
    let out = atlas()
        .arg("create")
        .arg(netcdf("good/classic.nc"))
        .arg(netcdf("bad/corrupt.nc"))
        .arg(&dest)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("corrupt.nc"), "{stderr}");
    assert!(!dest.join("data.atlas").exists());
}

#[test]
fn skip_errors_lists_each_skipped_file_with_its_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("out");
    let out = atlas()
        .args(["--json", "create"])
        .arg(netcdf("good/classic.nc"))
        .arg(netcdf("bad/corrupt.nc"))
        .arg(netcdf("bad/compound.nc"))
        .arg(&dest)
        .arg("--skip-errors")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Json = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["datasets"], 1);
    let skipped = report["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 2);
    assert!(
        skipped[0]["file"]
            .as_str()
            .unwrap()
            .ends_with("compound.nc")
    );
    assert!(skipped[0]["reason"].as_str().unwrap().contains("compound"));
    assert!(skipped[1]["file"].as_str().unwrap().ends_with("corrupt.nc"));
}

#[test]
fn a_glob_selects_files_and_an_empty_match_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let out = atlas()
        .args(["--json", "create"])
        .arg(netcdf("good/n*.nc"))
        .arg(tmp.path().join("a"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Json = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["datasets"], 1); // nc4classic.nc (nc4.nc4 has another suffix)

    let out = atlas()
        .arg("create")
        .arg(netcdf("good/none*.nc"))
        .arg(tmp.path().join("b"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no NetCDF files"));
}
