//! `atlas export`: the long table of a collection written as CSV, NDJSON and
//! Parquet, read back and compared with the library's `Atlas::table`.

#![cfg(test)]

use crate::common;

use std::path::Path;

use atlas::export::cell_json;
use atlas::{Atlas, OpenOptions, Predicate, RecordBatch, TableOptions};
use common::*;
use futures::TryStreamExt;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::Value;

/// A demo collection of `count` profiles in a fresh directory.
fn demo(count: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    atlas()
        .args(["-q", "demo", s(&dir.path().join("argo")), "--count"])
        .arg(count.to_string())
        .assert()
        .success();
    dir
}

/// The library's table of `dir` with `options`.
fn facade(dir: &Path, options: &TableOptions) -> Vec<RecordBatch> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let set = Atlas::open(dir, &OpenOptions::default()).await.unwrap();
            set.table(options)
                .await
                .unwrap()
                .try_collect()
                .await
                .unwrap()
        })
}

/// Each NDJSON line's values, in the order of `names`.
fn ndjson_rows(text: &str, names: &[String]) -> Vec<Vec<Value>> {
    text.lines()
        .map(|l| {
            let v: serde_json::Map<String, Value> = serde_json::from_str(l).unwrap();
            assert_eq!(v.len(), names.len(), "{l}");
            names.iter().map(|n| v[n].clone()).collect()
        })
        .collect()
}

/// Column names and every row's cells as JSON (dictionaries resolved).
fn cells(batches: &[RecordBatch]) -> (Vec<String>, Vec<Vec<Value>>) {
    let names = batches[0]
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    let mut rows = Vec::new();
    for b in batches {
        for row in 0..b.num_rows() {
            rows.push(
                b.columns()
                    .iter()
                    .map(|c| cell_json(c.as_ref(), row))
                    .collect(),
            );
        }
    }
    (names, rows)
}

const ARGS: [&str; 6] = [
    "--arrays",
    "TEMP,PSAL,PRES",
    "--attrs",
    "platform_number",
    "--rows-per-batch",
    "1000",
];

fn export(dir: &Path, format: &str, out: &Path, extra: &[&str]) {
    atlas()
        .args(["-q", "export", s(dir), "--format", format, "-o", s(out)])
        .args(ARGS)
        .args(extra)
        .assert()
        .success();
}

fn options() -> TableOptions {
    TableOptions::new(["TEMP", "PSAL", "PRES"])
        .attributes(["platform_number"])
        .rows_per_batch(1000)
}

#[test]
fn export_in_every_format_reads_back_as_the_library_table() {
    let tmp = demo(40);
    let dir = tmp.path().join("argo");
    let expected = facade(&dir, &options());
    let (names, rows) = cells(&expected);
    assert!(rows.len() > 1000, "several batches: {}", rows.len());
    assert_eq!(
        names,
        [
            "dataset",
            "N_LEVELS",
            "TEMP",
            "PSAL",
            "PRES",
            "platform_number"
        ]
    );

    // Parquet: the same schema and cells, one row group per batch.
    let parquet = tmp.path().join("t.parquet");
    export(&dir, "parquet", &parquet, &[]);
    let reader =
        ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&parquet).unwrap()).unwrap();
    let groups = reader.metadata().num_row_groups();
    assert_eq!(groups, rows.len().div_ceil(1000));
    let back: Vec<RecordBatch> = reader.build().unwrap().map(Result::unwrap).collect();
    assert_eq!(back[0].schema().fields(), expected[0].schema().fields());
    assert_eq!(cells(&back), (names.clone(), rows.clone()));

    // NDJSON: one object per row, keys in column order.
    let ndjson = tmp.path().join("t.ndjson");
    export(&dir, "ndjson", &ndjson, &[]);
    let text = std::fs::read_to_string(&ndjson).unwrap();
    assert_eq!(ndjson_rows(&text, &names), rows);
    let first = text.lines().next().unwrap();
    let at: Vec<usize> = names
        .iter()
        .map(|n| first.find(&format!("\"{n}\":")).unwrap())
        .collect();
    assert!(
        at.windows(2).all(|w| w[0] < w[1]),
        "keys in column order: {first}"
    );

    // CSV: one header, then every row (text bare, null empty).
    let csv = tmp.path().join("t.csv");
    export(&dir, "csv", &csv, &[]);
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next().unwrap(), names.join(","));
    let want: Vec<String> = rows
        .iter()
        .map(|r| {
            r.iter()
                .map(|c| match c {
                    Value::Null => String::new(),
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect();
    assert_eq!(lines.map(str::to_owned).collect::<Vec<_>>(), want);
    assert_eq!(text.matches("dataset,").count(), 1, "one header");
}

#[test]
fn export_where_writes_only_the_selected_datasets() {
    let tmp = demo(40);
    let dir = tmp.path().join("argo");
    let expr = "LONGITUDE > 38";
    let expected = facade(&dir, &options().predicate(Predicate::parse(expr).unwrap()));
    let (names, rows) = cells(&expected);
    let ndjson = tmp.path().join("t.ndjson");
    export(&dir, "ndjson", &ndjson, &["--where", expr]);
    let text = std::fs::read_to_string(&ndjson).unwrap();
    assert_eq!(ndjson_rows(&text, &names), rows);
    let mut datasets: Vec<String> = rows
        .iter()
        .map(|r| r[0].as_str().unwrap().to_owned())
        .collect();
    datasets.dedup();
    let listed = stdout_of(&["ls", s(&dir), "--where", expr]);
    let listed: Vec<&str> = listed.lines().collect();
    assert!(!datasets.is_empty() && datasets.len() < 40, "{datasets:?}");
    assert_eq!(datasets, listed);
}

#[test]
fn export_without_arrays_is_a_usage_error_and_parquet_needs_a_file() {
    let tmp = demo(3);
    let dir = tmp.path().join("argo");
    atlas()
        .args(["export", s(&dir), "--format", "csv"])
        .assert()
        .code(2);
    let err = fails_with_one_line(
        &["export", s(&dir), "--arrays", "TEMP", "--format", "parquet"],
        1,
    );
    assert!(err.contains("needs -o"), "{err}");
    let err = fails_with_one_line(
        &["export", s(&dir), "--arrays", "NOPE", "--format", "csv"],
        1,
    );
    assert!(err.contains("NOPE"), "{err}");
}

#[test]
fn export_to_a_pipe_the_reader_closes_ends_quietly() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let tmp = demo(200);
    let dir = tmp.path().join("argo");
    // Far more rows than a pipe buffers, so the writer meets the closed pipe.
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("atlas"))
        .args([
            "export",
            s(&dir),
            "--arrays",
            "TEMP,PSAL,PRES",
            "--format",
            "csv",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    // The reader (`head -1`) has gone: stdout is closed here.
    let out = child.wait_with_output().unwrap();
    assert!(first.starts_with("dataset"), "{first}");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "",
        "a closed pipe is not an error"
    );
    assert!(out.status.success(), "{:?}", out.status);
}
