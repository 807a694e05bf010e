//! `atlas catalogue`, `ls --where` and `rm --where --dry-run` end to end;
//! the Parquet export read back by pyarrow.

#![cfg(test)]

use crate::common;

use std::path::Path;
use std::process::Command as Process;

use common::*;

#[test]
fn ls_where_lists_what_the_expression_selects() {
    let dir = fixture("small");
    let out = stdout_of(&[
        "ls",
        s(&dir),
        "--where",
        "temperature.nulls > 0 and month <= 2",
    ]);
    assert_eq!(out, "feb_2024\n");
    let out = stdout_of(&["ls", s(&dir), "--where", "not (qc_passed = true)"]);
    assert_eq!(out, "feb_2024\n");
}

#[test]
fn a_bad_expression_is_shown_with_a_caret_under_the_token() {
    let dir = fixture("small");
    let out = atlas()
        .args(["ls", s(&dir), "--where", "lat between -10 ten"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(
        lines,
        [
            "error: --where: expected a value (a number, a \"string\", a date, true or false)",
            "  lat between -10 ten",
            "                  ^",
        ]
    );
}

#[test]
fn an_unknown_name_in_where_is_an_error() {
    let dir = fixture("small");
    let err = fails_with_one_line(&["ls", s(&dir), "--where", "nope = 1"], 1);
    assert!(
        err.contains("no dataset attribute or array is called \"nope\""),
        "{err}"
    );
}

#[test]
fn rm_where_dry_run_lists_and_writes_nothing_then_rm_hides() {
    let dir = copy_fixture("deleted");
    let before = std::fs::read(dir.path().join("deleted.mask")).unwrap();
    let out = stdout_of(&["rm", s(dir.path()), "--where", "v >= 700", "--dry-run"]);
    let mut lines = out.lines();
    let names: Vec<&str> = lines
        .by_ref()
        .take_while(|l| !l.starts_with("dry run"))
        .collect();
    let selected = stdout_of(&["ls", s(dir.path()), "--where", "v >= 700"]);
    assert_eq!(names, selected.lines().collect::<Vec<_>>());
    assert!(!names.is_empty());
    assert!(
        out.contains(&format!("would hide {} dataset", names.len())),
        "{out}"
    );
    assert_eq!(
        std::fs::read(dir.path().join("deleted.mask")).unwrap(),
        before
    );
    stdout_of(&["rm", s(dir.path()), "--where", "v >= 700"]);
    assert_eq!(stdout_of(&["ls", s(dir.path()), "--where", "v >= 700"]), "");
}

#[test]
fn catalogue_formats_agree_on_rows() {
    let dir = fixture("small");
    let csv = stdout_of(&[
        "catalogue",
        s(&dir),
        "--attrs",
        "month,source",
        "--arrays",
        "lat",
        "--format",
        "csv",
    ]);
    assert_eq!(
        csv.lines().next().unwrap(),
        "name,ordinal,schema,month,source,lat.count,lat.nulls,lat.min,lat.max"
    );
    assert_eq!(
        csv.lines().nth(2).unwrap(),
        "feb_2024,1,0,2,buoy,4,0,-45.0,45.0"
    );
    let nd = stdout_of(&[
        "catalogue",
        s(&dir),
        "--attrs",
        "month",
        "--attrs",
        "source",
        "--arrays",
        "lat",
        "--format",
        "ndjson",
    ]);
    let rows: Vec<serde_json::Value> = nd
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[1]["month"], 2);
    assert_eq!(rows[1]["lat.min"], -45.0);
    let json = json_of(&[
        "catalogue",
        s(&dir),
        "--arrays",
        "lat",
        "--attrs",
        "month",
        "--where",
        "month = 3",
    ]);
    assert_eq!(json.as_array().unwrap().len(), 1);
    assert_eq!(json[0]["name"], "mar_2024");
}

/// The project's Python (scripts/pyenv.sh); panics, naming the script, when it cannot be had.
fn project_python() -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/pyenv.sh");
    let out = Process::new(&script).output().unwrap_or_else(|e| {
        panic!("scripts/pyenv.sh could not run ({e}); it provides the pyarrow this test needs")
    });
    assert!(
        out.status.success(),
        "scripts/pyenv.sh failed; it provides the pyarrow this test needs:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

#[test]
fn parquet_from_catalogue_reads_back_in_pyarrow_with_the_same_rows_and_types() {
    let dir = fixture("small");
    let out = tempfile::tempdir().unwrap();
    let parquet = out.path().join("small.parquet");
    let ndjson = out.path().join("small.ndjson");
    let types = out.path().join("types.json");
    for (format, path) in [("parquet", &parquet), ("ndjson", &ndjson)] {
        atlas()
            .args([
                "-q",
                "catalogue",
                s(&dir),
                "--format",
                format,
                "-o",
                s(path),
            ])
            .assert()
            .success();
    }
    let expected = serde_json::json!({
        "name": "string", "ordinal": "uint32", "schema": "uint32",
        "month": "int64", "source": "string", "qc_passed": "bool", "scale": "double",
        "platform": "uint16", "tags": "list<item: string>", "checksum": "binary",
        "levels": "list<item: int32>",
        "temperature.count": "uint64", "temperature.nulls": "uint64",
        "temperature.min": "float", "temperature.max": "float",
        "lat.min": "double", "station.max": "string", "flags.min": "uint8",
        "time.min": "timestamp[ns, tz=UTC]", "time.max": "timestamp[ns, tz=UTC]",
    });
    std::fs::write(&types, expected.to_string()).unwrap();
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/check_catalogue_parquet.py");
    let check = Process::new(project_python())
        .arg(&script)
        .args([&parquet, &ndjson, &types])
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "scripts/check_catalogue_parquet.py: {}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
    assert!(String::from_utf8_lossy(&check.stdout).starts_with("ok: 3 rows"));
}

#[test]
fn parquet_needs_an_output_file() {
    let dir = fixture("small");
    let err = fails_with_one_line(&["catalogue", s(&dir), "--format", "parquet"], 1);
    assert!(err.contains("needs -o"), "{err}");
}
