//! `atlas create`: NetCDF files in, a collection out, all or nothing.

#![cfg(test)]

use crate::common;

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
    // A finished write leaves the container and its index, nothing else (no
    // empty temp directory).
    let mut left: Vec<String> = std::fs::read_dir(&dest)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["data.atlas", "data.atlas.index"]);
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

/// A directory holding a good file, a corrupt one, one with a compound
/// variable and one whose time has no `timestamp_ns` form.
fn mixed_inputs(dir: &std::path::Path) -> PathBuf {
    let inputs = dir.join("in");
    std::fs::create_dir(&inputs).unwrap();
    for f in [
        "good/classic.nc",
        "bad/corrupt.nc",
        "bad/compound.nc",
        "conventions/undecodable_time.nc",
    ] {
        let from = netcdf(f);
        std::fs::copy(&from, inputs.join(from.file_name().unwrap())).unwrap();
    }
    inputs
}

fn read_json(path: &std::path::Path) -> Json {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn report_lists_each_skipped_file_skipped_array_and_undecoded_time_with_its_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = mixed_inputs(tmp.path());
    let report_path = tmp.path().join("report.json");
    let out = atlas()
        .args(["--json", "create"])
        .arg(&inputs)
        .arg(tmp.path().join("out"))
        .args(["--skip-errors", "--skip-unsupported", "--report"])
        .arg(&report_path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = read_json(&report_path);
    let keys: Vec<&String> = report.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["skipped", "skipped_arrays", "undecoded", "notes"]);

    let skipped = report["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 1, "{report:#}");
    assert_eq!(
        skipped[0]["file"],
        inputs.join("corrupt.nc").display().to_string()
    );
    let reason = skipped[0]["reason"].as_str().unwrap();
    assert!(reason.starts_with("cannot read it as NetCDF"), "{reason}");

    assert_eq!(
        report["skipped_arrays"],
        serde_json::json!([{"dataset": "compound.nc", "array": "pairs", "dtype": "compound"}])
    );
    assert_eq!(
        report["undecoded"],
        serde_json::json!([
            {
                "dataset": "undecodable_time.nc",
                "array": "time",
                "reason": "a date outside what timestamp_ns holds (1677-09-21 to 2262-04-11)",
            },
            {
                "dataset": "undecodable_time.nc",
                "array": "t360",
                "reason": "calendar \"360_day\" has no exact timestamp_ns (only standard, gregorian and proleptic_gregorian do)",
            },
        ])
    );
    assert_eq!(report["notes"], serde_json::json!([]));

    // --json carries the same parts.
    let json: Json = serde_json::from_slice(&out.stdout).unwrap();
    for key in keys {
        assert_eq!(json[key], report[key], "{key}");
    }
    assert_eq!(json["datasets"], 3);
}

#[test]
fn report_is_written_with_empty_lists_when_nothing_is_left_out() {
    let tmp = tempfile::tempdir().unwrap();
    let report_path = tmp.path().join("report.json");
    atlas()
        .args(["create", "-q"])
        .arg(netcdf("good/classic.nc"))
        .arg(tmp.path().join("out"))
        .arg("--report")
        .arg(&report_path)
        .assert()
        .success();
    assert_eq!(
        read_json(&report_path),
        serde_json::json!({"skipped": [], "skipped_arrays": [], "undecoded": [], "notes": []})
    );
}

#[test]
fn report_names_the_file_that_stopped_the_ingest() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = mixed_inputs(tmp.path());
    let report_path = tmp.path().join("report.json");
    let out = atlas()
        .arg("create")
        .arg(&inputs)
        .arg(tmp.path().join("out"))
        .arg("--report")
        .arg(&report_path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let report = read_json(&report_path);
    // compound.nc sorts first and fails without --skip-unsupported.
    assert_eq!(
        report["error"]["file"],
        inputs.join("compound.nc").display().to_string()
    );
    let reason = report["error"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("pairs") && reason.contains("compound"),
        "{reason}"
    );
    for key in ["skipped", "skipped_arrays", "undecoded", "notes"] {
        assert_eq!(report[key], serde_json::json!([]), "{key}");
    }
}

#[test]
fn the_summary_names_each_time_variable_stored_undecoded() {
    let tmp = tempfile::tempdir().unwrap();
    let out = atlas()
        .arg("create")
        .arg(netcdf("conventions/undecodable_time.nc"))
        .arg(tmp.path().join("out"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("undecoded undecodable_time.nc/time: stored as its numbers with units and calendar (a date outside"),
        "{text}"
    );
    assert!(
        text.contains("undecoded undecodable_time.nc/t360:"),
        "{text}"
    );
}

#[test]
fn progress_off_a_terminal_counts_files_and_the_bytes_read_with_their_rates() {
    for members in [None, Some("2")] {
        let tmp = tempfile::tempdir().unwrap();
        let mut cmd = atlas();
        cmd.arg("create")
            .arg(netcdf("good"))
            .arg(tmp.path().join("out"));
        if let Some(n) = members {
            cmd.args(["--max-datasets", n]);
        }
        let out = cmd.output().unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert!(out.status.success(), "{stderr}");
        // The summary's size of the NetCDF read, as the CLI prints sizes.
        let input = stdout
            .split(" from ")
            .nth(1)
            .and_then(|rest| rest.split(" of NetCDF").next())
            .unwrap_or_else(|| panic!("no summary: {stdout}"));
        let last = stderr
            .lines()
            .rfind(|l| l.starts_with("create: "))
            .unwrap_or_else(|| panic!("no progress line: {stderr}"));
        // Every file read by the last line, and a rate of files and of bytes.
        let shown = format!("create: 5/5 files, {input} read (");
        assert!(last.starts_with(&shown), "{last:?} (expected {shown:?})");
        assert!(
            last.contains(" files/s, ") && last.ends_with("/s)"),
            "{last:?}"
        );
    }
}
