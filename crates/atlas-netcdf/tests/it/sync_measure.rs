//! Measurements of a sync (not a timed test; `--ignored --nocapture` prints
//! them): a set of N profiles on a counted in-memory store with conditional
//! writes, synced from an index on day 1, then a day 2 where 1 % of the
//! index changed (adds, real-time to delayed-mode, revisions, removals),
//! then again with nothing changed; requests, bytes and seconds of each, on
//! a store answering at once and on one that takes 20 ms a request.

#![cfg(test)]

use std::path::Path;
use std::time::{Duration, Instant};

use atlas::testing::{CasMemory, CountingLayer, RequestStats};
use atlas::{Location, Operator};
use atlas_netcdf::{GdacIndex, SourceRoot, SyncOptions, parse_index};

const FLOAT_DIR: &str = "meas/6900000/profiles";

fn profile_bytes() -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/argo");
    (1..=4)
        .map(|i| std::fs::read(dir.join(format!("R6900000_{i:03}.nc"))).unwrap())
        .collect()
}

/// Writes the files of `entries` (name, which profile's bytes, date) under
/// `root/FLOAT_DIR` and returns their index.
fn day(root: &Path, entries: &[(String, usize, &str)], bytes: &[Vec<u8>]) -> GdacIndex {
    let folder = root.join(FLOAT_DIR);
    std::fs::create_dir_all(&folder).unwrap();
    let mut text = String::from(atlas_netcdf::gdac::GDAC_HEADER);
    text.push('\n');
    for (name, which, date) in entries {
        let path = folder.join(name);
        if !path.exists() {
            std::fs::write(&path, &bytes[*which % bytes.len()]).unwrap();
        }
        text.push_str(&format!("{FLOAT_DIR}/{name},,,,A,846,IF,{date}\n"));
    }
    parse_index(text.as_bytes()).unwrap()
}

fn store() -> (Operator, RequestStats, atlas::testing::Faults) {
    let layer = CountingLayer::new();
    let stats = layer.stats();
    let faults = layer.faults();
    (CasMemory::new().operator().layer(layer), stats, faults)
}

async fn run(
    location: &Location,
    index: &GdacIndex,
    root: &SourceRoot,
    stats: &RequestStats,
    id: &str,
    what: &str,
) {
    stats.reset();
    let options =
        SyncOptions::default().with_ingest(atlas_netcdf::IngestOptions::default().with_jobs(2));
    let started = Instant::now();
    let plan = atlas_netcdf::plan_sync(location, index, &options.open)
        .await
        .unwrap();
    let planned = stats.snapshot();
    let plan_seconds = started.elapsed().as_secs_f64();
    let (added, replaced, removed) = (plan.added.len(), plan.replaced.len(), plan.removed.len());
    let report = atlas_netcdf::apply_sync(
        plan,
        location,
        root,
        &options,
        |k| format!("{id}{k}"),
        |_, _| {},
    )
    .await
    .unwrap();
    let all = stats.snapshot();
    println!(
        "{what}: +{added} ~{replaced} -{removed} unchanged {}; plan {} requests {} bytes {:.2} s; \
         total {} requests ({} reads, {} writes, {} lists) {} bytes read {} written, {:.2} s; committed {}",
        report.applied.unchanged,
        planned.requests(),
        planned.bytes_read,
        plan_seconds,
        all.requests(),
        all.reads,
        all.writes,
        all.lists,
        all.bytes_read,
        all.bytes_written,
        started.elapsed().as_secs_f64(),
        report.committed.is_some(),
    );
}

#[test]
#[ignore = "a measurement: cargo test -p atlas-netcdf --test sync_measure -- --ignored --nocapture"]
fn sync_of_n_profiles_then_one_percent_changed_then_nothing() {
    let n: usize = std::env::var("SYNC_PROFILES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let bytes = profile_bytes();
    let tmp = tempfile::tempdir().unwrap();
    let day1: Vec<(String, usize, &str)> = (0..n)
        .map(|i| (format!("R6900000_{i:06}.nc"), i, "20240101000000"))
        .collect();
    // 1 %: a quarter each of additions, R -> D, revisions and removals.
    let q = (n / 100 / 4).max(1);
    let mut day2: Vec<(String, usize, &str)> = Vec::new();
    for (i, (name, which, date)) in day1.iter().enumerate() {
        match i {
            _ if i < q => day2.push((name.replacen('R', "D", 1), which + 1, "20240102000000")),
            _ if i < 2 * q => day2.push((name.clone(), which + 1, "20240102000000")),
            _ if i < 3 * q => {}
            _ => day2.push((name.clone(), *which, date)),
        }
    }
    for i in 0..q {
        day2.push((format!("R6900001_{i:06}.nc"), i, "20240102000000"));
    }
    let root1 = tmp.path().join("day1");
    let root2 = tmp.path().join("day2");
    let index1 = day(&root1, &day1, &bytes);
    // Day 2's tree: day 1's unchanged files plus the new ones (revisions rewritten).
    let index2 = day(&root2, &day2, &bytes);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (op, stats, faults) = store();
        let location = Location::from_operator(op, "set");
        let r1 = SourceRoot::Local(root1.clone());
        let r2 = SourceRoot::Local(root2.clone());
        println!("{n} profiles, {q} of each change on day 2; set on an in-memory store");
        run(&location, &index1, &r1, &stats, "0000000000001-01", "day 1").await;
        run(&location, &index2, &r2, &stats, "0000000000002-02", "day 2").await;
        run(&location, &index2, &r2, &stats, "0000000000003-03", "rerun").await;
        faults.set_latency(Duration::from_millis(20));
        println!("the same store answering in 20 ms:");
        run(&location, &index2, &r2, &stats, "0000000000004-04", "rerun").await;
    });
}
