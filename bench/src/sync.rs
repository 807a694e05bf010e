//! `atlas-bench sync`: a set kept in step with a GDAC-like archive. Day 1
//! syncs N profiles into an empty set; on day 2, 1 % of the index changed
//! (a quarter each of new files, real-time files replaced by their
//! delayed-mode files, revisions, removals); then a rerun with nothing
//! changed.
//!
//! ```text
//! atlas-bench sync [--profiles N] [--jobs J] [--max-datasets M] [--latency 20ms] [--on-disk] [--work DIR]
//! ```
//!
//! The set is on the in-memory store with conditional writes, counted
//! request by request (with `--on-disk`, in `WORK/set` on local disk through
//! the same counting layer: a million profiles' set does not fit in memory). Day 1 runs with the store answering at once (it only
//! builds the set); day 2 and the rerun run with every request held back by
//! `--latency`. The archive's files are on local disk (hard links to
//! atlas-netcdf's generated and real GDAC profiles), so the figures are the
//! set's side of a sync: requests, bytes, seconds, members written.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use atlas::testing::{CasMemory, CountingLayer, RequestStats};
use atlas::{Location, member_id};
use atlas_netcdf::{GdacIndex, IngestOptions, SourceRoot, SyncOptions, parse_index};

use crate::error::{BenchError, Result};
use crate::ingest::{gdac_path, profile_sources};
use crate::{parse_duration, runtime};

/// What `atlas-bench sync` was asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct SyncBenchOptions {
    /// Profiles in the archive on day 1.
    pub profiles: usize,
    /// Files read at once.
    pub jobs: usize,
    /// Datasets per member a sync writes at most.
    pub max_datasets: usize,
    /// Delay of every request to the set's store on day 2 and the rerun.
    pub latency: Duration,
    /// Where the archive's two days are laid out.
    pub work: PathBuf,
    /// The set on local disk under `work` instead of in memory.
    pub on_disk: bool,
}

/// Parses the arguments after `sync`.
pub fn parse_options(args: &[String]) -> Result<SyncBenchOptions> {
    let mut o = SyncBenchOptions {
        profiles: 10_000,
        jobs: 4,
        max_datasets: 100_000,
        latency: Duration::from_millis(20),
        work: std::env::temp_dir().join("atlas-bench-sync"),
        on_disk: false,
    };
    let mut args = args.iter();
    while let Some(a) = args.next() {
        let mut value = || {
            args.next()
                .cloned()
                .ok_or_else(|| BenchError::Usage(format!("{a} needs a value")))
        };
        let positive = |v: String| {
            v.parse::<usize>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| BenchError::Usage(format!("{a} needs a positive number, not {v:?}")))
        };
        match a.as_str() {
            "--profiles" => o.profiles = positive(value()?)?,
            "--jobs" | "-j" => o.jobs = positive(value()?)?,
            "--max-datasets" => o.max_datasets = positive(value()?)?,
            "--latency" => o.latency = parse_duration(&value()?)?,
            "--work" => o.work = PathBuf::from(value()?),
            "--on-disk" => o.on_disk = true,
            other => return Err(BenchError::Usage(format!("unknown argument {other:?}"))),
        }
    }
    Ok(o)
}

/// One index entry: the file's path under `dac`, which source file it
/// holds, and its `date_update`.
type Entry = (String, usize, &'static str);

/// Day 2 from day 1: 1 % changed, a quarter each of R -> D, revisions,
/// removals and additions (at least one of each).
fn day_two(day1: &[Entry], n: usize) -> Vec<Entry> {
    let q = (n / 400).max(1);
    let mut day2 = Vec::with_capacity(day1.len() + q);
    for (i, (path, which, date)) in day1.iter().enumerate() {
        match i {
            _ if i < q => day2.push((gdac_path(i, 'D'), which + 1, "20240102000000")),
            _ if i < 2 * q => day2.push((path.clone(), which + 1, "20240102000000")),
            _ if i < 3 * q => {}
            _ => day2.push((path.clone(), *which, date)),
        }
    }
    for i in n..n + q {
        day2.push((gdac_path(i, 'R'), i, "20240102000000"));
    }
    day2
}

/// Hard links made to one pool file at most: file systems cap an inode's
/// links (ext4 at 65 000), so each source file is kept in several copies.
const LINKS_PER_COPY: usize = 20_000;

/// Lays out `entries` under `root/dac` as hard links to `pool` (each source
/// file's copies) and returns their index.
fn lay_out(root: &Path, entries: &[Entry], pool: &[Vec<PathBuf>]) -> Result<GdacIndex> {
    let mut text = String::from(atlas_netcdf::gdac::GDAC_HEADER);
    text.push('\n');
    for (i, (path, which, date)) in entries.iter().enumerate() {
        let file = root.join("dac").join(path);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent)?;
        }
        if !file.exists() {
            let copies = &pool[which % pool.len()];
            std::fs::hard_link(&copies[(i / LINKS_PER_COPY) % copies.len()], &file)?;
        }
        // A position and time per profile, as the index carries them.
        let (lat, lon) = (-60.0 + (i % 120) as f64, -180.0 + (i % 360) as f64);
        text.push_str(&format!(
            "{path},20230101000000,{lat:.3},{lon:.3},A,846,AO,{date}\n"
        ));
    }
    parse_index(text.as_bytes()).map_err(|e| BenchError::Mismatch(e.to_string()))
}

/// What one sync did and cost.
struct Row {
    what: &'static str,
    added: usize,
    replaced: usize,
    removed: usize,
    unchanged: usize,
    members: usize,
    requests: u64,
    reads: u64,
    writes: u64,
    lists: u64,
    bytes_read: u64,
    bytes_written: u64,
    seconds: f64,
}

async fn sync_row(
    what: &'static str,
    set: &Location,
    index: &GdacIndex,
    root: &SourceRoot,
    stats: &RequestStats,
    options: &SyncOptions,
    run: u64,
) -> Result<Row> {
    stats.reset();
    let started = Instant::now();
    let plan = atlas_netcdf::plan_sync(set, index, &options.open).await?;
    let (added, replaced, removed) = (plan.added.len(), plan.replaced.len(), plan.removed.len());
    let report = atlas_netcdf::apply_sync(
        plan,
        set,
        root,
        options,
        |k| member_id(1_700_000_000_000 + run as i64, run << 20 | k as u64),
        |_, _| {},
    )
    .await?;
    let seconds = started.elapsed().as_secs_f64();
    let s = stats.snapshot();
    Ok(Row {
        what,
        added,
        replaced,
        removed,
        unchanged: report.applied.unchanged,
        members: report.members.len(),
        requests: s.requests(),
        reads: s.reads,
        writes: s.writes,
        lists: s.lists,
        bytes_read: s.bytes_read,
        bytes_written: s.bytes_written,
        seconds,
    })
}

/// Runs `atlas-bench sync`.
pub fn run(o: &SyncBenchOptions) -> Result {
    if o.work.exists() {
        std::fs::remove_dir_all(&o.work)?;
    }
    let pool_dir = o.work.join("pool");
    std::fs::create_dir_all(&pool_dir)?;
    let n = o.profiles;
    let mut pool = Vec::new();
    let copies = n / LINKS_PER_COPY + 1;
    for (name, bytes) in profile_sources()? {
        let mut paths = Vec::with_capacity(copies);
        for c in 0..copies {
            let path = pool_dir.join(format!("{c}-{name}"));
            std::fs::write(&path, &bytes)?;
            paths.push(path);
        }
        pool.push(paths);
    }
    let day1: Vec<Entry> = (0..n)
        .map(|i| (gdac_path(i, 'R'), i, "20240101000000"))
        .collect();
    let day2 = day_two(&day1, n);
    let (root1, root2) = (o.work.join("day1"), o.work.join("day2"));
    let index1 = lay_out(&root1, &day1, &pool)?;
    let index2 = lay_out(&root2, &day2, &pool)?;
    println!(
        "sync of {n} profiles, then 1 % changed ({} of each change), then nothing; \
         {} in flight, members of at most {}; debug build: {}",
        (n / 400).max(1),
        o.jobs,
        o.max_datasets,
        cfg!(debug_assertions),
    );
    let rt = runtime()?;
    let rows = rt.block_on(async {
        let layer = CountingLayer::new();
        let (stats, faults) = (layer.stats(), layer.faults());
        let store = if o.on_disk {
            atlas_io::fs_operator(o.work.join("store")).map_err(atlas::AtlasError::Io)?
        } else {
            CasMemory::new().operator()
        };
        let set = Location::from_operator(store.layer(layer), "set");
        let options = SyncOptions::default()
            .with_ingest(IngestOptions::default().with_jobs(o.jobs))
            .with_max_datasets(Some(o.max_datasets));
        let (r1, r2) = (
            SourceRoot::Local(root1.join("dac")),
            SourceRoot::Local(root2.join("dac")),
        );
        let mut rows = Vec::new();
        rows.push(
            sync_row(
                "day 1 (store at once)",
                &set,
                &index1,
                &r1,
                &stats,
                &options,
                1,
            )
            .await?,
        );
        faults.set_latency(o.latency);
        rows.push(
            sync_row(
                "day 2, 1 % changed",
                &set,
                &index2,
                &r2,
                &stats,
                &options,
                2,
            )
            .await?,
        );
        rows.push(
            sync_row(
                "rerun, nothing changed",
                &set,
                &index2,
                &r2,
                &stats,
                &options,
                3,
            )
            .await?,
        );
        Ok::<_, BenchError>(rows)
    })?;
    println!(
        "| sync | added | replaced | removed | unchanged | members written | requests (reads/writes/lists) | bytes read | bytes written | seconds |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for r in &rows {
        println!(
            "| {} | {} | {} | {} | {} | {} | {} ({}/{}/{}) | {:.2} MB | {:.2} MB | {:.2} |",
            r.what,
            r.added,
            r.replaced,
            r.removed,
            r.unchanged,
            r.members,
            r.requests,
            r.reads,
            r.writes,
            r.lists,
            r.bytes_read as f64 / 1e6,
            r.bytes_written as f64 / 1e6,
            r.seconds,
        );
    }
    println!(
        "(day 2 and the rerun: every request to the set's store waits {} ms)",
        o.latency.as_millis()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn day_two_changes_one_percent_a_quarter_of_each_kind() {
        let day1: Vec<Entry> = (0..800)
            .map(|i| (gdac_path(i, 'R'), i, "20240101000000"))
            .collect();
        let day2 = day_two(&day1, 800);
        let names: std::collections::BTreeSet<&str> = day2.iter().map(|e| e.0.as_str()).collect();
        assert_eq!(names.len(), day2.len());
        // 2 R -> D, 2 revised, 2 removed, 2 added.
        assert_eq!(day2.len(), 800);
        assert_eq!(day2.iter().filter(|e| e.0.contains("/D")).count(), 2);
        assert_eq!(
            day2.iter()
                .filter(|e| e.2 == "20240102000000" && e.0.contains("/R"))
                .count(),
            4
        );
        assert!(!names.contains(gdac_path(4, 'R').as_str()));
    }
}
