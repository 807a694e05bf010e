//! `atlas-bench ingest`: NetCDF files into a collection from three places
//! in one run: local disk, atlas-testkit's in-process S3 server behind its
//! proxy holding every request back by `--latency` (a 20 ms store over a
//! real HTTP stack), and the same with faults (a share of requests answered
//! 503, connections reset, bodies cut short), each file retried on its own.
//!
//! ```text
//! atlas-bench ingest [--files N] [--jobs J] [--latency 20ms] [--faults PER_MILLE] [--work DIR]
//! ```
//!
//! The files are the Argo-like profiles and the real GDAC profiles of
//! atlas-netcdf's test data, copied round-robin under GDAC-like names
//! (`dac/<dac>/<float>/profiles/R<float>_<cycle>.nc`). Each row ingests all
//! of them (`atlas_netcdf::ingest`, `--jobs` files in flight) into a new
//! collection on local disk, so the rows differ only by where the files
//! are read from. Peak memory is this process's resident peak during the
//! row (the peak is reset before each row through `/proc/self/clear_refs`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use atlas::{AtlasWriter, StorageOptions, WriterConfig};
use atlas_netcdf::IngestOptions;

use crate::error::{BenchError, Result};
use crate::{parse_duration, runtime, vm_hwm_kib};

/// What `atlas-bench ingest` was asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct IngestBenchOptions {
    /// Files ingested in each row.
    pub files: usize,
    /// Files in flight at once.
    pub jobs: usize,
    /// Delay of every request through the proxy.
    pub latency: Duration,
    /// Requests spoiled by the faulty row, per mille of each kind (503,
    /// connection reset, body cut short).
    pub faults: u32,
    /// Where the files and collections are written.
    pub work: PathBuf,
}

/// Parses the arguments after `ingest`.
pub fn parse_options(args: &[String]) -> Result<IngestBenchOptions> {
    let mut o = IngestBenchOptions {
        files: 2000,
        jobs: 8,
        latency: Duration::from_millis(20),
        faults: 50,
        work: std::env::temp_dir().join("atlas-bench-ingest"),
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
            "--files" => o.files = positive(value()?)?,
            "--jobs" | "-j" => o.jobs = positive(value()?)?,
            "--latency" => o.latency = parse_duration(&value()?)?,
            "--faults" => {
                let v = value()?;
                o.faults = v.parse().ok().filter(|n| *n <= 1000).ok_or_else(|| {
                    BenchError::Usage(format!("--faults needs a per-mille, not {v:?}"))
                })?;
            }
            "--work" => o.work = PathBuf::from(value()?),
            other => return Err(BenchError::Usage(format!("unknown argument {other:?}"))),
        }
    }
    Ok(o)
}

/// The profile files the benches copy: atlas-netcdf's generated Argo-like
/// profiles and its real GDAC profiles, as (file name, bytes).
pub fn profile_sources() -> Result<Vec<(String, Vec<u8>)>> {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/atlas-netcdf/tests/data");
    let mut out = Vec::new();
    for folder in ["argo", "argo-gdac"] {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(data.join(folder))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "nc"))
            .collect();
        paths.sort();
        for p in paths {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            out.push((name, std::fs::read(&p)?));
        }
    }
    if out.is_empty() {
        return Err(BenchError::Usage(format!(
            "no profiles under {}",
            data.display()
        )));
    }
    Ok(out)
}

/// The GDAC-like path of profile `i`: 100 cycles a float, floats spread
/// over a few data centres.
pub fn gdac_path(i: usize, mode: char) -> String {
    const DACS: [&str; 4] = ["aoml", "coriolis", "csiro", "jma"];
    let float = 5_900_000 + i / 100;
    let dac = DACS[(i / 100) % DACS.len()];
    format!("{dac}/{float}/profiles/{mode}{float}_{:03}.nc", i % 100 + 1)
}

/// Writes `count` profiles under `root` (round-robin copies of `sources`).
fn lay_out(root: &Path, count: usize, sources: &[(String, Vec<u8>)]) -> Result<u64> {
    let mut bytes = 0u64;
    for i in 0..count {
        let path = root.join(gdac_path(i, 'R'));
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let (_, data) = &sources[i % sources.len()];
        std::fs::write(&path, data)?;
        bytes += data.len() as u64;
    }
    Ok(bytes)
}

/// One row: where the files were read from, and what the ingest took.
struct Row {
    source: String,
    files: usize,
    seconds: f64,
    input_bytes: u64,
    peak_mib: f64,
    requests: Option<u64>,
    spoiled: Option<u64>,
}

/// Ingests `files` (paths or URLs) into a new collection at `dst`.
async fn ingest_row(
    source: &str,
    files: &[PathBuf],
    dst: &Path,
    options: &IngestOptions,
) -> Result<Row> {
    if dst.exists() {
        std::fs::remove_dir_all(dst)?;
    }
    crate::reset_peak();
    let started = Instant::now();
    let writer = AtlasWriter::create(dst, &WriterConfig::default()).await?;
    let report = atlas_netcdf::ingest(files, writer, options).await?;
    let seconds = started.elapsed().as_secs_f64();
    Ok(Row {
        source: source.to_owned(),
        files: report.written.len(),
        seconds,
        input_bytes: report.input_bytes,
        peak_mib: vm_hwm_kib() as f64 / 1024.0,
        requests: None,
        spoiled: None,
    })
}

/// Runs `atlas-bench ingest`.
pub fn run(o: &IngestBenchOptions) -> Result {
    let sources = profile_sources()?;
    if o.work.exists() {
        std::fs::remove_dir_all(&o.work)?;
    }
    let tree = o.work.join("tree");
    let dac = tree.join("dac");
    let bytes = lay_out(&dac, o.files, &sources)?;
    let relative: Vec<String> = (0..o.files).map(|i| gdac_path(i, 'R')).collect();
    println!(
        "ingest of {} profiles ({:.1} MB, {} distinct files, {} real GDAC), {} in flight; debug build: {}",
        o.files,
        bytes as f64 / 1e6,
        sources.len(),
        sources
            .iter()
            .filter(|(n, _)| !n.starts_with("R6900000"))
            .count(),
        o.jobs,
        cfg!(debug_assertions),
    );
    let rt = runtime()?;
    let rows = rt.block_on(async {
        let base = IngestOptions::default().with_jobs(o.jobs);
        let mut rows = Vec::new();
        let local: Vec<PathBuf> = relative.iter().map(|r| dac.join(r)).collect();
        rows.push(ingest_row("local disk", &local, &o.work.join("local"), &base).await?);

        let server = atlas_testkit::S3Server::start();
        let prefix = "ingest-src";
        copy_tree(
            &tree,
            &server.dir().join(atlas_testkit::BUCKET).join(prefix),
        )?;
        let urls: Vec<PathBuf> = relative
            .iter()
            .map(|r| PathBuf::from(format!("s3://{}/{prefix}/dac/{r}", atlas_testkit::BUCKET)))
            .collect();
        let slow = atlas_testkit::FaultPlan::none().with_slow(1000, o.latency);
        let faulty =
            atlas_testkit::FaultPlan::every_kind(7, o.faults, o.latency).with_slow(1000, o.latency);
        for (name, plan) in [
            (
                format!("S3 server, {} ms a request", o.latency.as_millis()),
                slow,
            ),
            (
                format!(
                    "S3 server, {} ms, faults ({:.1} % each: 503, reset, cut short)",
                    o.latency.as_millis(),
                    f64::from(o.faults) / 10.0
                ),
                faulty,
            ),
        ] {
            let proxy = atlas_testkit::FaultProxy::start(server.endpoint(), plan);
            let storage = StorageOptions::new()
                .set("endpoint", proxy.endpoint())
                .set("region", atlas_testkit::REGION)
                .set("access_key_id", atlas_testkit::ACCESS_KEY)
                .set("secret_access_key", atlas_testkit::SECRET_KEY);
            let options = base.clone().with_storage(storage);
            let mut row = ingest_row(&name, &urls, &o.work.join("remote"), &options).await?;
            let counts = proxy.counts();
            row.requests = Some(counts.requests);
            row.spoiled = Some(counts.errors + counts.resets + counts.short_bodies);
            rows.push(row);
        }
        Ok::<_, BenchError>(rows)
    })?;
    print_rows(&rows);
    Ok(())
}

fn print_rows(rows: &[Row]) {
    let local = rows
        .first()
        .map_or(0.0, |r| r.files as f64 / r.seconds.max(1e-9));
    println!(
        "| source | files | seconds | files/s | vs local disk | MB/s | requests (spoiled) | peak RSS |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for r in rows {
        let rate = r.files as f64 / r.seconds.max(1e-9);
        let requests = match (r.requests, r.spoiled) {
            (Some(n), Some(s)) => format!("{n} ({s})"),
            _ => "-".into(),
        };
        println!(
            "| {} | {} | {:.2} | {:.0} | {:.2}x | {:.2} | {} | {:.0} MiB |",
            r.source,
            r.files,
            r.seconds,
            rate,
            rate / local.max(1e-9),
            r.input_bytes as f64 / 1e6 / r.seconds.max(1e-9),
            requests,
            r.peak_mib,
        );
    }
}

/// Copies every file under `from` to the same place under `to`.
fn copy_tree(from: &Path, to: &Path) -> Result {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let path = entry?.path();
        let dest = to.join(path.file_name().unwrap_or_default());
        if path.is_dir() {
            copy_tree(&path, &dest)?;
        } else {
            std::fs::copy(&path, &dest)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gdac_paths_are_distinct_and_name_their_float() {
        let paths: std::collections::BTreeSet<String> =
            (0..1000).map(|i| gdac_path(i, 'R')).collect();
        assert_eq!(paths.len(), 1000);
        assert_eq!(gdac_path(0, 'D'), "aoml/5900000/profiles/D5900000_001.nc");
        assert_eq!(
            gdac_path(101, 'R'),
            "coriolis/5900001/profiles/R5900001_002.nc"
        );
    }
}
