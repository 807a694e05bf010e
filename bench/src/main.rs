//! `atlas-bench`: the profile workload through this Atlas, atlas-rust
//! 0.17.2 (the other v8 implementation) and zarrs (Zarr v3, sharded), side by
//! side in one run, over one metered store. `cargo xtask bench` runs it in
//! release; `docs/performance.md` explains every number.
//!
//! ```text
//! atlas-bench [--quick] [--profiles N] [--tiny N] [--opens N] [--no-zarrs]
//!             [--latency 20ms] [--bandwidth 100MB/s] [--work DIR]
//!             [--split auto|on|off] [--min-part-size BYTES] [--http] [--rounds N] [--json FILE]
//! atlas-bench write [--quick] [--cases argo,grid,tiny] [--writers 1,2,4] ...
//! atlas-bench sets [--quick] [--profiles N] [--member-size N] [--steps A,B,C] ...
//! atlas-bench soak [--minutes 10] [--readers 16] [--writers 4] [--seed 1] [--compact-every 60] [--store s3|azurite]
//! atlas-bench commits [--writers 1,4,16] [--batch 1,4] [--seconds 5] [--latency 20ms]
//! atlas-bench ingest [--files 2000] [--jobs 8] [--latency 20ms] [--faults 50]
//! atlas-bench sync [--profiles 10000] [--jobs 4] [--max-datasets N] [--latency 20ms]
//! atlas-bench table-memory DIR [ARRAY,ARRAY...] [--no-index] [--index-cache BYTES]
//! atlas-bench reads DIR [--latency 20ms] [--bandwidth 100MB/s] [--rounds N]
//! ```
//!
//! The first is the side-by-side run. `write` is the write benchmark: this
//! Atlas and atlas-rust writing profiles, grids and tiny datasets from 1, 2
//! and 4 tasks (`write.rs` lists its options). Writes run in child processes
//! (`atlas-bench child ...`) so each peak RSS is that write's alone, and each
//! child checks that its collection opens with every dataset. `sets` writes
//! a collection set at scale in a child per step and reads it on the
//! simulated store (`sets.rs` lists its options). The run fails
//! if any step errors or if any reader reads back other values than the
//! generator made (the cross-read check).
//!
//! `--split` says how our Atlas splits big reads: `auto` (the default) as
//! an object store on the simulated store (`ReadParallelism::default()`) and
//! as its backend says on local disk (whole reads), `on` and `off` force
//! split or whole reads on both; `--min-part-size` sets the smallest part a
//! split read is cut into (1 MiB by default, `ReadParallelism::default()`;
//! e.g. `2MiB`), to weigh fewer round-trip-bound bytes per part against
//! more GETs. `--json FILE` also writes every figure of
//! the tables to FILE (`report::Report`). `--http` adds a third read table:
//! the same steps against atlas-testkit's in-process S3 server behind its
//! fault proxy, every GET held back by the `--latency` (20 ms if none), see
//! `http.rs`; `--quick` runs do not include it unless asked. `--rounds N`
//! (5; 1 with `--quick`) runs every write and every implementation's read
//! steps N times, taking turns, and reports each one's median round.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "a benchmark tool: a panic is a failed run, never lost data"
)]

mod commits;
mod digest;
mod error;
mod http;
mod ingest;
mod measure;
mod meter;
mod ours;
mod parquet_peer;
mod peer;
mod reads;
mod report;
mod sets;
mod soak;
mod sorted;
mod sync;
mod table_memory;
mod workload;
mod write;
mod zarr;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use error::{BenchError, Result};
use measure::Costs;
use meter::{Meter, Simulation};
use report::{Floors, Report, StoreReport, TinyRow, WriteRow};

/// One implementation under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Impl {
    /// This repository's Atlas.
    Ours,
    /// atlas-rust 0.17.2.
    Peer,
    /// zarrs, Zarr v3 with sharding.
    Zarr,
}

impl Impl {
    /// Column heading.
    pub fn label(self) -> &'static str {
        match self {
            Impl::Ours => "ours",
            Impl::Peer => "atlas-rust 0.17.2",
            Impl::Zarr => "zarrs 0.23",
        }
    }

    /// The name on the command line.
    pub fn arg(self) -> &'static str {
        match self {
            Impl::Ours => "ours",
            Impl::Peer => "peer",
            Impl::Zarr => "zarr",
        }
    }

    /// Parses [`arg`](Self::arg).
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "ours" => Ok(Impl::Ours),
            "peer" => Ok(Impl::Peer),
            "zarr" => Ok(Impl::Zarr),
            _ => Err(BenchError::Usage(format!("unknown implementation {s:?}"))),
        }
    }
}

/// What the command line asked for.
#[derive(Debug, Clone)]
struct Options {
    profiles: usize,
    tiny: usize,
    opens: usize,
    zarrs: bool,
    sim: Simulation,
    work: PathBuf,
    quick: bool,
    split: Split,
    /// The smallest part of a split read, in bytes (`--min-part-size`).
    min_part_size: u64,
    json: Option<PathBuf>,
    http: bool,
    rounds: usize,
}

/// How our Atlas splits big reads (`--split`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Split {
    /// Split on the simulated object store, as the backend says on local disk.
    Auto,
    /// Always split (`ReadParallelism::default()`).
    On,
    /// Never split (`ReadParallelism::single()`).
    Off,
}

impl Split {
    fn parse(s: &str) -> Result<Self> {
        match s {
            "auto" => Ok(Split::Auto),
            "on" => Ok(Split::On),
            "off" => Ok(Split::Off),
            _ => Err(BenchError::Usage(format!(
                "--split takes auto, on or off, not {s:?}"
            ))),
        }
    }

    /// The open options of our Atlas on a store simulated by `sim`, split
    /// reads in parts of at least `min_part_size` bytes.
    fn options(self, sim: Simulation, min_part_size: u64) -> atlas::OpenOptions {
        let o = atlas::OpenOptions::default();
        let split = atlas::ReadParallelism::default().min_part_size(min_part_size);
        match self {
            Split::Auto if sim.is_active() => o.read_parallelism(split),
            Split::Auto => o,
            Split::On => o.read_parallelism(split),
            Split::Off => o.read_parallelism(atlas::ReadParallelism::single()),
        }
    }

    fn arg(self) -> &'static str {
        match self {
            Split::Auto => "auto",
            Split::On => "on",
            Split::Off => "off",
        }
    }
}

fn parse_duration(s: &str) -> Result<Duration> {
    let bad = || BenchError::Usage(format!("bad duration {s:?} (e.g. 20ms, 0.1s)"));
    let (num, scale) = if let Some(v) = s.strip_suffix("ms") {
        (v, 1e-3)
    } else if let Some(v) = s.strip_suffix("us") {
        (v, 1e-6)
    } else if let Some(v) = s.strip_suffix('s') {
        (v, 1.0)
    } else {
        (s, 1e-3)
    };
    let v: f64 = num.trim().parse().map_err(|_| bad())?;
    if !(v.is_finite() && v >= 0.0) {
        return Err(bad());
    }
    Ok(Duration::from_secs_f64(v * scale))
}

/// Byte units the size options take, longest suffix first.
const BYTE_UNITS: [(&str, u64); 7] = [
    ("GiB", 1 << 30),
    ("MiB", 1 << 20),
    ("KiB", 1 << 10),
    ("GB", 1_000_000_000),
    ("MB", 1_000_000),
    ("KB", 1_000),
    ("B", 1),
];

/// `s` without its byte unit, and the unit's bytes (`default` without one).
fn split_byte_unit(s: &str, default: u64) -> (&str, u64) {
    BYTE_UNITS
        .iter()
        .find_map(|(u, f)| s.strip_suffix(u).map(|n| (n.trim(), *f)))
        .unwrap_or((s.trim(), default))
}

/// Bytes per second: a number with an optional byte unit and `/s` (MB if none).
fn parse_bandwidth(s: &str) -> Result<f64> {
    let bad = || BenchError::Usage(format!("bad bandwidth {s:?} (e.g. 100MB/s)"));
    let (num, scale) = split_byte_unit(s.strip_suffix("/s").unwrap_or(s), 1_000_000);
    let v: f64 = num.parse().map_err(|_| bad())?;
    if !(v.is_finite() && v > 0.0) {
        return Err(bad());
    }
    Ok(v * scale as f64)
}

/// A size in bytes: a whole number with an optional byte unit (bytes if none).
fn parse_bytes(s: &str) -> Result<u64> {
    let bad = || BenchError::Usage(format!("bad size {s:?} (e.g. 1MiB)"));
    let (num, scale) = split_byte_unit(s, 1);
    let v: u64 = num.parse().map_err(|_| bad())?;
    match v.checked_mul(scale) {
        Some(bytes) if bytes > 0 => Ok(bytes),
        _ => Err(bad()),
    }
}

fn parse_options(args: &[String]) -> Result<Options> {
    let mut o = Options {
        profiles: 30_000,
        tiny: 100_000,
        opens: 15,
        zarrs: true,
        sim: Simulation::default(),
        work: PathBuf::from("target/bench-work"),
        quick: false,
        split: Split::Auto,
        min_part_size: atlas::ReadParallelism::default().min_part_size,
        json: None,
        http: false,
        rounds: 5,
    };
    let mut explicit = (None, None, None);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| BenchError::Usage(format!("{name} needs a value")))
        };
        let number = |v: String| {
            v.parse::<usize>()
                .map_err(|_| BenchError::Usage(format!("{a} needs a number, not {v:?}")))
        };
        match a.as_str() {
            "--quick" => o.quick = true,
            "--no-zarrs" => o.zarrs = false,
            "--profiles" => explicit.0 = Some(number(value(a)?)?),
            "--tiny" => explicit.1 = Some(number(value(a)?)?),
            "--opens" => o.opens = number(value(a)?)?.max(1),
            "--latency" => o.sim.latency = parse_duration(&value(a)?)?,
            "--bandwidth" => o.sim.bandwidth = Some(parse_bandwidth(&value(a)?)?),
            "--work" => o.work = PathBuf::from(value(a)?),
            "--split" => o.split = Split::parse(&value(a)?)?,
            "--min-part-size" => o.min_part_size = parse_bytes(&value(a)?)?,
            "--json" => o.json = Some(PathBuf::from(value(a)?)),
            "--http" => o.http = true,
            "--rounds" => explicit.2 = Some(number(value(a)?)?.max(1)),
            other => return Err(BenchError::Usage(format!("unknown argument {other:?}"))),
        }
    }
    if o.quick {
        o.profiles = 2_000;
        o.tiny = 10_000;
        o.opens = 5;
        o.rounds = 1;
    }
    o.rounds = explicit.2.unwrap_or(o.rounds);
    o.profiles = explicit.0.unwrap_or(o.profiles).max(1);
    o.tiny = explicit.1.unwrap_or(o.tiny).max(1);
    Ok(o)
}

/// With feature `heap-peak`, every allocation of this program counted on
/// its way to the system allocator, so a step can read the peak of its live
/// heap ([`heap_peak_since`]).
#[cfg(feature = "heap-peak")]
#[global_allocator]
static HEAP: &peakmem_alloc::PeakMemAlloc<std::alloc::System> = &peakmem_alloc::INSTRUMENTED_SYSTEM;

/// Starts a heap-peak measurement: from here, live bytes count from zero.
fn reset_heap_peak() {
    #[cfg(feature = "heap-peak")]
    {
        use peakmem_alloc::PeakMemAllocTrait;
        HEAP.reset_peak_memory();
    }
}

/// The most bytes live at once since [`reset_heap_peak`], beyond what was
/// live then (the allocator's own count: no freed buffer it keeps, no
/// code); `None` without feature `heap-peak`.
fn heap_peak_since() -> Option<u64> {
    #[cfg(feature = "heap-peak")]
    {
        use peakmem_alloc::PeakMemAllocTrait;
        Some(HEAP.get_peak_memory() as u64)
    }
    #[cfg(not(feature = "heap-peak"))]
    None
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}

/// Peak resident set of this process, from `/proc/self/status` (`VmHWM`), in KiB.
fn vm_hwm_kib() -> u64 {
    proc_status_kib("VmHWM:")
}

/// Resident set of this process now, from `/proc/self/status` (`VmRSS`), in KiB.
fn vm_rss_kib() -> u64 {
    proc_status_kib("VmRSS:")
}

/// Anonymous resident memory of this process now (`RssAnon`: heap and
/// stacks, not the pages of its code and libraries read in from disk), in KiB.
fn rss_anon_kib() -> u64 {
    proc_status_kib("RssAnon:")
}

/// A `kB` figure of `/proc/self/status` (0 where the file is missing).
fn proc_status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(field))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Resets this process's resident peak (`VmHWM`) to its resident set now,
/// where Linux allows it.
fn reset_peak() {
    if let Err(e) = std::fs::write("/proc/self/clear_refs", "5") {
        eprintln!("atlas-bench: cannot reset the memory peak ({e}); peaks are since the start");
    }
}

/// User + system CPU time of this process (every thread), from
/// `/proc/self/stat`, in seconds (0 where that file is missing).
fn cpu_secs() -> f64 {
    // Fields 14 and 15 (utime, stime) count clock ticks; USER_HZ is 100 on Linux.
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            // The command name may hold spaces: the fields start after its ") ".
            let mut f = s.rsplit_once(") ")?.1.split_whitespace().skip(11);
            let utime: f64 = f.next()?.parse().ok()?;
            let stime: f64 = f.next()?.parse().ok()?;
            Some((utime + stime) / 100.0)
        })
        .unwrap_or(0.0)
}

/// What one write in a child process cost.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChildRun {
    /// Wall time of the write, from creating the writer to the end of its finish.
    pub secs: f64,
    /// Peak resident set of the child, in KiB.
    pub rss_kib: u64,
    /// User + system CPU time of the child, in seconds.
    pub cpu_secs: f64,
    /// Of the wall time, the writer's finish.
    pub commit: Duration,
}

impl ChildRun {
    /// The child's `RESULT` line (without the prefix).
    fn line(&self) -> String {
        format!(
            "{} {} {} {}",
            self.secs,
            self.rss_kib,
            self.cpu_secs,
            self.commit.as_secs_f64()
        )
    }

    /// Parses [`line`](Self::line).
    fn parse(line: &str) -> Option<Self> {
        let mut p = line.split_whitespace();
        let run = Self {
            secs: p.next()?.parse().ok()?,
            rss_kib: p.next()?.parse().ok()?,
            cpu_secs: p.next()?.parse().ok()?,
            commit: Duration::try_from_secs_f64(p.next()?.parse().ok()?).ok()?,
        };
        p.next().is_none().then_some(run)
    }
}

/// `child IMPL CASE DIR N TASKS CODEC`: one write, a check that the
/// collection opens with every dataset, then `RESULT` and [`ChildRun::line`].
fn child(args: &[String]) -> Result {
    let [imp, case, dir, n, tasks, codec, index] = args else {
        return Err(BenchError::Usage(
            "child IMPL argo|grid|tiny DIR N TASKS zstd|lz4|none index|no-index".into(),
        ));
    };
    let number = |v: &str, what: &str| {
        v.parse::<usize>()
            .map_err(|_| BenchError::Usage(format!("{what} must be a number")))
    };
    let imp = Impl::parse(imp)?;
    let dir = Path::new(dir);
    let job = write::Job {
        codec: write::Compression::parse(codec)?,
        index: index == "index",
        ..write::Job::new(
            write::Case::parse(case)?,
            number(n, "N")?,
            number(tasks, "TASKS")?,
        )
    };
    let rt = runtime()?;
    let start = Instant::now();
    let commit = rt.block_on(async {
        match (imp, job.case) {
            (Impl::Ours, _) => ours::write(dir, &job).await,
            (Impl::Peer, _) => peer::write(dir, &job).await,
            // zarrs writes each shard as it goes: no commit to time apart.
            (Impl::Zarr, write::Case::Argo) if job.tasks == 1 => zarr::write_profiles(dir, job.n)
                .await
                .map(|()| Duration::ZERO),
            _ => Err(BenchError::Usage(format!(
                "{} writes only profiles, from one task",
                imp.label()
            ))),
        }
    })?;
    let run = ChildRun {
        secs: start.elapsed().as_secs_f64(),
        rss_kib: vm_hwm_kib(),
        cpu_secs: cpu_secs(),
        commit,
    };
    // After the peak was read: the open below must not count in it.
    let datasets = rt.block_on(async {
        match imp {
            Impl::Ours => ours::count(dir).await.map(Some),
            Impl::Peer => peer::count(dir).await.map(Some),
            Impl::Zarr => Ok(None),
        }
    })?;
    if let Some(got) = datasets.filter(|got| *got != job.n) {
        return Err(BenchError::Mismatch(format!(
            "{} wrote {got} datasets, not {}",
            imp.label(),
            job.n
        )));
    }
    println!("RESULT {}", run.line());
    Ok(())
}

/// Runs `job` with `imp` into `dir` (emptied first) in a child process.
fn run_child(imp: Impl, job: &write::Job, dir: &Path) -> Result<ChildRun> {
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    let args = [
        "child".to_owned(),
        imp.arg().to_owned(),
        job.case.arg().to_owned(),
        dir.to_string_lossy().into_owned(),
        job.n.to_string(),
        job.tasks.to_string(),
        job.codec.arg().to_owned(),
        if job.index { "index" } else { "no-index" }.to_owned(),
    ];
    let what = format!("{} {}", imp.label(), job.case.arg());
    spawn_child(&args, &what).map(|(run, _)| run)
}

/// Runs this executable with `args` (a `child` mode) and waits; returns the
/// child's `RESULT` line and its whole stdout. `what` names it in errors.
fn spawn_child(args: &[String], what: &str) -> Result<(ChildRun, String)> {
    let out = Command::new(std::env::current_exe()?).args(args).output()?;
    if !out.status.success() {
        return Err(BenchError::Child(format!(
            "{what} write failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let run = stdout
        .lines()
        .find_map(|l| l.strip_prefix("RESULT "))
        .and_then(ChildRun::parse)
        .ok_or_else(|| BenchError::Child(format!("no RESULT line from {what}")))?;
    Ok((run, stdout))
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| match e.metadata() {
                    Ok(m) if m.is_dir() => dir_bytes(&e.path()),
                    Ok(m) => m.len(),
                    Err(_) => 0,
                })
                .sum()
        })
        .unwrap_or(0)
}

/// The middle value of `v` (the upper one of an even count), or the default when empty.
fn median<T: Ord + Copy + Default>(mut v: Vec<T>) -> T {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

fn run(o: &Options) -> Result {
    std::fs::create_dir_all(&o.work)?;
    let work = o.work.canonicalize()?;
    let dir = |name: &str| work.join(name);
    let mut impls = vec![Impl::Ours, Impl::Peer];
    if o.zarrs {
        impls.push(Impl::Zarr);
    }
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!(
        "# atlas-bench: {} profiles, {} tiny datasets, {cores} cores{}",
        o.profiles,
        o.tiny,
        if o.quick { " (--quick)" } else { "" }
    );
    let mut report = Report {
        profiles: o.profiles,
        tiny: o.tiny,
        cores,
        quick: o.quick,
        rounds: o.rounds,
        ..Report::default()
    };

    // Writes, each in its own process, `rounds` times over (the writes
    // taking turns); each row is the median of its rounds' times and of
    // their peak RSS.
    let mut jobs: Vec<(Impl, String, PathBuf, write::Job)> = Vec::new();
    for imp in &impls {
        let tasks: &[usize] = if *imp == Impl::Zarr { &[1] } else { &[1, 2] };
        for &t in tasks {
            jobs.push((
                *imp,
                format!("write {} profiles, {t} task(s)", o.profiles),
                dir(&format!("{}-profiles-{t}", imp.arg())),
                write::Job::new(write::Case::Argo, o.profiles, t),
            ));
        }
    }
    let profile_jobs = jobs.len();
    for imp in [Impl::Ours, Impl::Peer] {
        jobs.push((
            imp,
            format!("write {} one-element datasets", o.tiny),
            dir(&format!("{}-tiny", imp.arg())),
            write::Job::new(write::Case::Tiny, o.tiny, 1),
        ));
    }
    let mut runs: Vec<Vec<ChildRun>> = jobs.iter().map(|_| Vec::new()).collect();
    for round in 1..=o.rounds {
        for ((imp, what, d, job), seen) in jobs.iter().zip(&mut runs) {
            eprintln!(
                "{what} with {} (round {round} of {})",
                imp.label(),
                o.rounds
            );
            seen.push(run_child(*imp, job, d)?);
        }
    }
    let mut rows: Vec<WriteRow> = jobs
        .iter()
        .zip(runs)
        .map(|((imp, what, d, _), seen)| {
            let secs = median(
                seen.iter()
                    .map(|r| Duration::from_secs_f64(r.secs))
                    .collect(),
            );
            WriteRow {
                imp: *imp,
                what: what.clone(),
                secs: secs.as_secs_f64(),
                rss_kib: median(seen.iter().map(|r| r.rss_kib).collect()),
                bytes: dir_bytes(d),
            }
        })
        .collect();
    let tiny_writes = rows.split_off(profile_jobs);
    let writes = rows;
    // The two-task collections only measured the write.
    for imp in [Impl::Ours, Impl::Peer] {
        let _ = std::fs::remove_dir_all(dir(&format!("{}-profiles-2", imp.arg())));
    }

    let rt = runtime()?;
    let ours_dir = dir("ours-profiles-1");
    let peer_dir = dir("peer-profiles-1");
    let zarr_dir = dir("zarr-profiles-1");

    // Conformance: every reader reads every v8 collection back as generated.
    eprintln!("cross-reading");
    let expected = digest::Digest::expected(o.profiles);
    let mut checks = vec![
        ("ours reads ours", rt.block_on(ours::digest(&ours_dir))?),
        (
            "ours reads atlas-rust's",
            rt.block_on(ours::digest(&peer_dir))?,
        ),
        (
            "atlas-rust reads ours",
            rt.block_on(peer::digest(&ours_dir))?,
        ),
        (
            "atlas-rust reads atlas-rust's",
            rt.block_on(peer::digest(&peer_dir))?,
        ),
    ];
    if o.zarrs {
        checks.push(("zarrs reads zarrs'", rt.block_on(zarr::digest(&zarr_dir))?));
    }
    println!("\n## Cross-read (every value, against the generator)\n");
    let mut failed = Vec::new();
    for (what, got) in &checks {
        let ok = *got == expected;
        println!(
            "- {what}: {} datasets, {}",
            got.datasets,
            if ok { "values equal" } else { "VALUES DIFFER" }
        );
        if !ok {
            failed.push(*what);
        }
        report.cross_read.push((what.to_string(), got.datasets, ok));
    }
    if !failed.is_empty() {
        return Err(BenchError::Mismatch(format!(
            "cross-read values differ: {failed:?}"
        )));
    }

    let floors = rt.block_on(Floors::of(&ours_dir, o.profiles))?;
    report::print_writes(&writes, &tiny_writes);
    report.writes = writes.iter().chain(&tiny_writes).cloned().collect();

    let mut stores = vec![("local disk", Simulation::default())];
    if o.sim.is_active() {
        stores.push(("simulated object store", o.sim));
    }
    for (store, sim) in stores {
        eprintln!("reading ({store})");
        let options = o.split.options(sim, o.min_part_size);
        let (ours_dir, peer_dir, zarr_dir, options) = (&ours_dir, &peer_dir, &zarr_dir, &options);
        let columns = rt.block_on(in_rounds(o.rounds, &impls, |imp| async move {
            let meter = Meter::new(sim);
            match imp {
                Impl::Ours => {
                    let (op, counting) = ours::operator(ours_dir, &meter)?;
                    ours::read_steps(&op, &meter, &counting, options).await
                }
                Impl::Peer => peer::read_steps(&peer::store(peer_dir, &meter)?, &meter).await,
                Impl::Zarr => zarr::read_steps(zarr_dir, &meter).await,
            }
        }))?;
        let rows = report::read_rows(sim, &columns, &floors);
        report::print_reads(store, sim, &rows);

        // Opening the collection of tiny datasets.
        let mut tiny = Vec::new();
        for imp in [Impl::Ours, Impl::Peer] {
            let d = dir(&format!("{}-tiny", imp.arg()));
            let meter = Meter::new(sim);
            let mut times = Vec::new();
            let mut last = meter::Reading::default();
            for _ in 0..o.opens {
                let (_, cost) = rt.block_on(async {
                    match imp {
                        Impl::Ours => {
                            let (op, _) = ours::operator(&d, &meter)?;
                            measure::measure(&meter, ours::open(&op, options)).await
                        }
                        _ => {
                            let store = peer::store(&d, &meter)?;
                            measure::measure(&meter, peer::open(&store)).await
                        }
                    }
                })?;
                times.push(cost.wall);
                last = cost.io;
            }
            tiny.push(TinyRow {
                imp,
                median: median(times),
                io: last,
            });
        }
        report::print_tiny(store, o.tiny, o.opens, &tiny, &tiny_writes);
        report.stores.push(StoreReport {
            store: store.to_owned(),
            sim,
            split: o.split.arg().to_owned(),
            min_part_size: o.min_part_size,
            reads: rows,
            tiny,
        });
    }
    if o.http {
        report.stores.push(rt.block_on(http_reads(
            o,
            &impls,
            [&ours_dir, &peer_dir, &zarr_dir],
            &floors,
        ))?);
    }
    if let Some(path) = &o.json {
        report.write_json(path)?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

/// The read steps of `impls` over S3 on HTTP (see `http.rs`): the
/// collections in `dirs` (ours, atlas-rust's, zarrs') uploaded to the
/// in-process server, each read through the slow proxy; prints the table.
async fn http_reads(
    o: &Options,
    impls: &[Impl],
    dirs: [&Path; 3],
    floors: &Floors,
) -> Result<StoreReport> {
    let delay = if o.sim.latency.is_zero() {
        Duration::from_millis(20)
    } else {
        o.sim.latency
    };
    let [ours_dir, peer_dir, zarr_dir] = dirs;
    let mut collections = vec![("ours", ours_dir), ("peer", peer_dir)];
    if impls.contains(&Impl::Zarr) {
        collections.push(("zarr", zarr_dir));
    }
    eprintln!("uploading to the in-process S3 server");
    let http = http::HttpStore::start(delay, &collections).await?;
    eprintln!("reading (S3 over HTTP)");
    // The latency is real here; the bandwidth is whatever loopback gives.
    let sim = Simulation {
        latency: delay,
        bandwidth: None,
    };
    let options = o.split.options(Simulation::default(), o.min_part_size);
    let (http, options) = (&http, &options);
    let columns = in_rounds(o.rounds, impls, |imp| async move {
        let meter = Meter::default();
        match imp {
            Impl::Ours => {
                let counting = atlas_io::CountingLayer::new();
                let op = http
                    .raw_operator("ours")?
                    .layer(counting.clone())
                    .layer(meter::MeterLayer::new(meter.clone()));
                ours::read_steps(&op, &meter, &counting, options).await
            }
            Impl::Peer => peer::read_steps(&http.object_store("peer", &meter)?, &meter).await,
            Impl::Zarr => {
                let store = zarr::store_on(http.operator("zarr", &meter)?);
                zarr::read_steps_on(&store, &meter).await
            }
        }
    })
    .await?;
    let store = format!(
        "S3 over HTTP (in-process s3s server behind a proxy holding each GET {} ms)",
        delay.as_millis()
    );
    let rows = report::read_rows(sim, &columns, floors);
    report::print_reads(&store, sim, &rows);
    Ok(StoreReport {
        store,
        sim,
        split: o.split.arg().to_owned(),
        min_part_size: o.min_part_size,
        reads: rows,
        tiny: Vec::new(),
    })
}

/// Every implementation's read `steps`, `rounds` times over, the
/// implementations taking turns so that a slow moment of the machine falls
/// on all of them; each step reports its median round.
async fn in_rounds<F, Fut>(
    rounds: usize,
    impls: &[Impl],
    mut steps: F,
) -> Result<Vec<(Impl, Costs)>>
where
    F: FnMut(Impl) -> Fut,
    Fut: std::future::Future<Output = Result<Costs>>,
{
    let mut runs: Vec<Vec<Costs>> = vec![Vec::new(); impls.len()];
    for _ in 0..rounds {
        for (imp, of_imp) in impls.iter().zip(&mut runs) {
            of_imp.push(steps(*imp).await?);
        }
    }
    Ok(impls
        .iter()
        .zip(&runs)
        .map(|(imp, of_imp)| (*imp, measure::median_costs(of_imp)))
        .collect())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("child") => child(&args[1..]),
        Some("child-set") => sets::child(&args[1..]),
        Some("write") => write::parse_options(&args[1..]).and_then(|o| write::run(&o)),
        Some("sets") => sets::parse_options(&args[1..]).and_then(|o| sets::run(&o)),
        Some("soak") => soak::parse_options(&args[1..]).and_then(|o| soak::run(&o)),
        Some("commits") => commits::parse_options(&args[1..]).and_then(|o| commits::run(&o)),
        Some("ingest") => ingest::parse_options(&args[1..]).and_then(|o| ingest::run(&o)),
        Some("sync") => sync::parse_options(&args[1..]).and_then(|o| sync::run(&o)),
        Some("table-memory") => table_memory::run(&args[1..]),
        Some("reads") => reads::run(&args[1..]),
        _ => parse_options(&args).and_then(|o| run(&o)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("atlas-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_and_bandwidth_parse_with_their_units() {
        assert_eq!(parse_duration("20ms").ok(), Some(Duration::from_millis(20)));
        assert_eq!(
            parse_duration("0.5s").ok(),
            Some(Duration::from_millis(500))
        );
        assert_eq!(parse_bandwidth("100MB/s").ok(), Some(100e6));
        assert_eq!(parse_bandwidth("1MiB/s").ok(), Some(1_048_576.0));
        assert!(matches!(parse_duration("fast"), Err(BenchError::Usage(_))));
        assert!(matches!(
            parse_bandwidth("0MB/s"),
            Err(BenchError::Usage(_))
        ));
    }

    #[test]
    fn part_sizes_take_binary_and_decimal_units_and_refuse_zero_or_junk() {
        assert_eq!(parse_bytes("1MiB").ok(), Some(1 << 20));
        assert_eq!(parse_bytes("512KiB").ok(), Some(512 << 10));
        assert_eq!(parse_bytes("2MB").ok(), Some(2_000_000));
        assert_eq!(parse_bytes("4096").ok(), Some(4096));
        for bad in ["0MiB", "big", "-1MiB", "99999999999999999999MiB"] {
            assert!(
                matches!(parse_bytes(bad), Err(BenchError::Usage(_))),
                "{bad}"
            );
        }
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let default = parse_options(&args(&[])).ok().map(|o| o.min_part_size);
        assert_eq!(
            default,
            Some(atlas::ReadParallelism::default().min_part_size)
        );
        let set = parse_options(&args(&["--min-part-size", "2MiB"])).ok();
        assert_eq!(set.map(|o| o.min_part_size), Some(2 << 20));
    }

    #[test]
    fn quick_shrinks_the_workload_but_explicit_sizes_win() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let o = parse_options(&args(&["--quick"])).ok();
        assert_eq!(o.map(|o| (o.profiles, o.tiny)), Some((2_000, 10_000)));
        let o = parse_options(&args(&["--quick", "--profiles", "50"])).ok();
        assert_eq!(o.map(|o| o.profiles), Some(50));
        assert!(matches!(
            parse_options(&args(&["--frobnicate"])),
            Err(BenchError::Usage(_))
        ));
    }

    #[test]
    fn a_child_result_line_parses_back_and_a_short_or_long_one_does_not() {
        let run = ChildRun {
            secs: 1.5,
            rss_kib: 2048,
            cpu_secs: 2.25,
            commit: Duration::from_millis(250),
        };
        assert_eq!(ChildRun::parse(&run.line()), Some(run));
        assert_eq!(ChildRun::parse("1.5 2048 2.25"), None);
        assert_eq!(ChildRun::parse("1.5 2048 2.25 0.25 9"), None);
        assert_eq!(ChildRun::parse("1.5 -3 2.25 0.25"), None);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn grids_and_tiny_datasets_from_either_writer_read_back_as_generated() {
        use write::{Case, Compression, Job};
        let tmp = tempfile::tempdir().expect("tempdir");
        let grids = Job {
            codec: Compression::Lz4,
            ..Job::new(Case::Grid, 3, 2)
        };
        let tiny = Job::new(Case::Tiny, 7, 3);
        for (who, dir) in [
            ("ours", tmp.path().join("ours")),
            ("peer", tmp.path().join("peer")),
        ] {
            let (g, t) = (dir.join("grid"), dir.join("tiny"));
            if who == "ours" {
                ours::write(&g, &grids).await.expect("ours writes grids");
                ours::write(&t, &tiny).await.expect("ours writes tiny");
            } else {
                peer::write(&g, &grids)
                    .await
                    .expect("atlas-rust writes grids");
                peer::write(&t, &tiny)
                    .await
                    .expect("atlas-rust writes tiny");
            }
            let atlas = atlas::Atlas::open(&g, &atlas::OpenOptions::default())
                .await
                .expect("open grids");
            assert_eq!(atlas.dataset_count().await.ok(), Some(3), "{who}");
            for i in 0..3 {
                let got = atlas
                    .dataset(&workload::grid_name(i))
                    .await
                    .expect("grid dataset")
                    .read_array::<f32>(workload::GRID_ARRAY, atlas::Region::all())
                    .await
                    .expect("read grid");
                assert_eq!(got.shape(), [workload::GRID, workload::GRID], "{who}");
                assert!(got.iter().eq(workload::grid(i).iter()), "{who} grid {i}");
            }
            let atlas = atlas::Atlas::open(&t, &atlas::OpenOptions::default())
                .await
                .expect("open tiny");
            assert_eq!(ours::count(&t).await.ok(), Some(7), "{who}");
            assert_eq!(peer::count(&t).await.ok(), Some(7), "{who}");
            for i in 0..7 {
                let got = atlas
                    .dataset(&workload::tiny_name(i))
                    .await
                    .expect("tiny dataset")
                    .read_array::<u8>("v", atlas::Region::all())
                    .await
                    .expect("read tiny");
                assert_eq!(
                    got.iter().copied().collect::<Vec<_>>(),
                    [workload::tiny_value(i)]
                );
            }
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn each_reader_reads_every_collection_back_as_generated() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let n = 40;
        let (o, p, z) = (
            tmp.path().join("ours"),
            tmp.path().join("peer"),
            tmp.path().join("zarr"),
        );
        ours::write(&o, &write::Job::new(write::Case::Argo, n, 2))
            .await
            .expect("ours writes");
        peer::write(&p, &write::Job::new(write::Case::Argo, n, 1))
            .await
            .expect("atlas-rust writes");
        zarr::write_profiles(&z, n).await.expect("zarrs writes");
        let expected = digest::Digest::expected(n);
        // Two tasks add datasets in any order: compare by name order for ours.
        let mut by_order = digest::Digest::default();
        let atlas = atlas::Atlas::open(&o, &atlas::OpenOptions::default())
            .await
            .expect("open");
        for name in atlas.dataset_names().await.expect("names") {
            let i = (0..n)
                .find(|i| workload::profile(*i).name == name)
                .expect("a generated name");
            by_order.add(&workload::profile(i));
        }
        assert_eq!(ours::digest(&o).await.ok(), Some(by_order));
        assert_eq!(peer::digest(&o).await.ok(), Some(by_order));
        assert_eq!(ours::digest(&p).await.ok(), Some(expected));
        assert_eq!(zarr::digest(&z).await.ok(), Some(expected));
        // A changed value is caught.
        let mut other = digest::Digest::default();
        let mut first = workload::profile(0);
        first.arrays[1][0] += 1.0;
        other.add(&first);
        for i in 1..n {
            other.add(&workload::profile(i));
        }
        assert_ne!(other, expected);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_read_step_runs_and_ours_agrees_with_the_counting_layer() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let n = 30;
        let (o, p, z) = (
            tmp.path().join("ours"),
            tmp.path().join("peer"),
            tmp.path().join("zarr"),
        );
        ours::write(&o, &write::Job::new(write::Case::Argo, n, 1))
            .await
            .expect("ours writes");
        peer::write(&p, &write::Job::new(write::Case::Argo, n, 1))
            .await
            .expect("atlas-rust writes");
        zarr::write_profiles(&z, n).await.expect("zarrs writes");
        let meter = Meter::default();
        let (op, counting) = ours::operator(&o, &meter).expect("operator");
        let costs = ours::read_steps(&op, &meter, &counting, &atlas::OpenOptions::default())
            .await
            .expect("ours");
        let steps: Vec<_> = costs.iter().map(|(s, _)| *s).collect();
        assert_eq!(steps, measure::Step::ALL);
        let cost = |costs: &Costs, step| costs.iter().find(|(s, _)| *s == step).map(|(_, c)| c.io);
        // The catalogue and a warm read cost no request.
        assert_eq!(
            cost(&costs, measure::Step::Catalogue).map(|r| r.read_requests()),
            Some(0)
        );
        assert_eq!(
            cost(&costs, measure::Step::OneWarm).map(|r| r.read_requests()),
            Some(0)
        );
        let store = peer::store(&p, &meter).expect("store");
        // atlas-rust runs every step; zarrs all but `read_many`'s.
        let peer_steps: Vec<_> = peer::read_steps(&store, &meter)
            .await
            .expect("peer")
            .iter()
            .map(|(s, _)| *s)
            .collect();
        assert_eq!(peer_steps, measure::Step::ALL);
        let zarr_steps: Vec<_> = zarr::read_steps(&z, &meter)
            .await
            .expect("zarr")
            .iter()
            .map(|(s, _)| *s)
            .collect();
        let mut all_but_many = measure::Step::ALL.to_vec();
        all_but_many.retain(|s| *s != measure::Step::Many);
        assert_eq!(zarr_steps, all_but_many);
        let floors = Floors::of(&o, n).await.expect("floors");
        assert!(
            floors
                .get(measure::Step::Stats)
                .is_some_and(|(r, b)| r == 1 && b > 0)
        );
        // The units of JULD need that segment's footer; read_many on a fresh
        // handle, the open and the whole TEMP segment.
        let floor = |step| floors.get(step).unwrap_or_default();
        let (juld, temp) = (
            floor(measure::Step::ArrayAttrsByDataset),
            floor(measure::Step::Stats),
        );
        assert!(juld.0 == 1 && juld.1 > 0, "{juld:?}");
        let (many, sweep) = (floor(measure::Step::Many), floor(measure::Step::Sweep));
        assert!(many.0 == 2 && many.1 > sweep.1 + temp.1, "{many:?}");
    }
}
