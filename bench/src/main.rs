//! `atlas-bench`: the workload of issue 9 through this Atlas, atlas-rust
//! 0.17.2 (the other v8 implementation) and zarrs (Zarr v3, sharded), side by
//! side in one run, over one metered store. `cargo xtask bench` runs it in
//! release; `docs/performance.md` explains every number.
//!
//! ```text
//! atlas-bench [--quick] [--profiles N] [--tiny N] [--opens N] [--no-zarrs]
//!             [--latency 20ms] [--bandwidth 100MB/s] [--work DIR]
//! ```
//!
//! Writes run in child processes (`atlas-bench child ...`) so each peak RSS
//! is that write's alone. The run fails if any step errors or if any reader
//! reads back other values than the generator made (the cross-read check).

mod digest;
mod error;
mod measure;
mod meter;
mod ours;
mod peer;
mod report;
mod workload;
mod zarr;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use error::{BenchError, Result};
use measure::Costs;
use meter::{Meter, Simulation};
use report::{Floors, TinyRow, WriteRow};

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

    fn arg(self) -> &'static str {
        match self {
            Impl::Ours => "ours",
            Impl::Peer => "peer",
            Impl::Zarr => "zarr",
        }
    }

    fn parse(s: &str) -> Result<Self> {
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

fn parse_bandwidth(s: &str) -> Result<f64> {
    let bad = || BenchError::Usage(format!("bad bandwidth {s:?} (e.g. 100MB/s)"));
    let t = s.strip_suffix("/s").unwrap_or(s);
    let units = [
        ("GiB", 1024.0 * 1024.0 * 1024.0),
        ("MiB", 1024.0 * 1024.0),
        ("KiB", 1024.0),
        ("GB", 1e9),
        ("MB", 1e6),
        ("KB", 1e3),
        ("B", 1.0),
    ];
    let (num, scale) = units
        .iter()
        .find_map(|(u, f)| t.strip_suffix(u).map(|n| (n, *f)))
        .unwrap_or((t, 1e6));
    let v: f64 = num.trim().parse().map_err(|_| bad())?;
    if !(v.is_finite() && v > 0.0) {
        return Err(bad());
    }
    Ok(v * scale)
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
    };
    let mut explicit = (None, None);
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
            other => return Err(BenchError::Usage(format!("unknown argument {other:?}"))),
        }
    }
    if o.quick {
        o.profiles = 2_000;
        o.tiny = 10_000;
        o.opens = 5;
    }
    o.profiles = explicit.0.unwrap_or(o.profiles).max(1);
    o.tiny = explicit.1.unwrap_or(o.tiny).max(1);
    Ok(o)
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}

/// Peak resident set of this process, from `/proc/self/status` (`VmHWM`), in KiB.
fn vm_hwm_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// `child IMPL profiles|tiny DIR N TASKS`: one write, then `RESULT secs kib`.
fn child(args: &[String]) -> Result {
    let [imp, what, dir, n, tasks] = args else {
        return Err(BenchError::Usage(
            "child IMPL profiles|tiny DIR N TASKS".into(),
        ));
    };
    let imp = Impl::parse(imp)?;
    let dir = Path::new(dir);
    let n: usize = n
        .parse()
        .map_err(|_| BenchError::Usage("N must be a number".into()))?;
    let tasks: usize = tasks
        .parse()
        .map_err(|_| BenchError::Usage("TASKS must be a number".into()))?;
    let rt = runtime()?;
    let start = Instant::now();
    rt.block_on(async {
        match (imp, what.as_str()) {
            (Impl::Ours, "profiles") => ours::write_profiles(dir, n, tasks).await,
            (Impl::Ours, "tiny") => ours::write_tiny(dir, n).await,
            (Impl::Peer, "profiles") => peer::write_profiles(dir, n, tasks).await,
            (Impl::Peer, "tiny") => peer::write_tiny(dir, n).await,
            (Impl::Zarr, "profiles") => zarr::write_profiles(dir, n).await,
            _ => Err(BenchError::Usage(format!(
                "cannot write {what} with {imp:?}"
            ))),
        }
    })?;
    let secs = start.elapsed().as_secs_f64();
    println!("RESULT {secs} {}", vm_hwm_kib());
    Ok(())
}

/// Runs one write in a child process; returns seconds and peak RSS (KiB).
fn run_child(imp: Impl, what: &str, dir: &Path, n: usize, tasks: usize) -> Result<(f64, u64)> {
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    let out = Command::new(std::env::current_exe()?)
        .arg("child")
        .arg(imp.arg())
        .arg(what)
        .arg(dir)
        .arg(n.to_string())
        .arg(tasks.to_string())
        .output()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(BenchError::Child(format!(
            "{} {what} write failed ({}): {}",
            imp.label(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("RESULT "))
        .and_then(|r| {
            let mut p = r.split_whitespace();
            Some((p.next()?.parse().ok()?, p.next()?.parse().ok()?))
        })
        .ok_or_else(|| BenchError::Child(format!("no RESULT line from {}", imp.label())))
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

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
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
    println!(
        "# atlas-bench: {} profiles, {} tiny datasets, {} cores{}",
        o.profiles,
        o.tiny,
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        if o.quick { " (--quick)" } else { "" }
    );

    // Writes, each in its own process.
    let mut writes = Vec::new();
    for imp in &impls {
        let tasks: &[usize] = if *imp == Impl::Zarr { &[1] } else { &[1, 2] };
        for &t in tasks {
            let d = dir(&format!("{}-profiles-{t}", imp.arg()));
            eprintln!(
                "writing {} profiles with {} ({t} task(s))",
                o.profiles,
                imp.label()
            );
            let (secs, kib) = run_child(*imp, "profiles", &d, o.profiles, t)?;
            writes.push(WriteRow {
                imp: *imp,
                what: format!("write {} profiles, {t} task(s)", o.profiles),
                secs,
                rss_kib: kib,
                bytes: dir_bytes(&d),
            });
        }
    }
    let mut tiny_writes = Vec::new();
    for imp in [Impl::Ours, Impl::Peer] {
        eprintln!("writing {} tiny datasets with {}", o.tiny, imp.label());
        let d = dir(&format!("{}-tiny", imp.arg()));
        let (secs, kib) = run_child(imp, "tiny", &d, o.tiny, 1)?;
        tiny_writes.push(WriteRow {
            imp,
            what: format!("write {} one-element datasets", o.tiny),
            secs,
            rss_kib: kib,
            bytes: dir_bytes(&d),
        });
    }
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
    }
    if !failed.is_empty() {
        return Err(BenchError::Mismatch(format!(
            "cross-read values differ: {failed:?}"
        )));
    }

    let floors = rt.block_on(Floors::of(&ours_dir, o.profiles))?;
    report::print_writes(&writes, &tiny_writes);

    let mut stores = vec![("local disk", Simulation::default())];
    if o.sim.is_active() {
        stores.push(("simulated object store", o.sim));
    }
    for (store, sim) in stores {
        eprintln!("reading ({store})");
        let mut columns: Vec<(Impl, Costs)> = Vec::new();
        for imp in &impls {
            let meter = Meter::new(sim);
            let costs = rt.block_on(async {
                match imp {
                    Impl::Ours => {
                        let (op, counting) = ours::operator(&ours_dir, &meter)?;
                        ours::read_steps(&op, &meter, &counting).await
                    }
                    Impl::Peer => peer::read_steps(&peer::store(&peer_dir, &meter)?, &meter).await,
                    Impl::Zarr => zarr::read_steps(&zarr_dir, &meter).await,
                }
            })?;
            columns.push((*imp, costs));
        }
        report::print_reads(store, sim, &columns, &floors);

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
                            measure::measure(&meter, ours::open(&op)).await
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
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("child") => child(&args[1..]),
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

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn each_reader_reads_every_collection_back_as_generated() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let n = 40;
        let (o, p, z) = (
            tmp.path().join("ours"),
            tmp.path().join("peer"),
            tmp.path().join("zarr"),
        );
        ours::write_profiles(&o, n, 2).await.expect("ours writes");
        peer::write_profiles(&p, n, 1)
            .await
            .expect("atlas-rust writes");
        zarr::write_profiles(&z, n).await.expect("zarrs writes");
        let expected = digest::Digest::expected(n);
        // Two tasks add datasets in any order: compare by name order for ours.
        let mut by_order = digest::Digest::default();
        let atlas = atlas::Atlas::open(&o, &atlas::OpenOptions::default())
            .await
            .expect("open");
        for name in atlas.dataset_names() {
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
        ours::write_profiles(&o, n, 1).await.expect("ours writes");
        peer::write_profiles(&p, n, 1)
            .await
            .expect("atlas-rust writes");
        zarr::write_profiles(&z, n).await.expect("zarrs writes");
        let meter = Meter::default();
        let (op, counting) = ours::operator(&o, &meter).expect("operator");
        let costs = ours::read_steps(&op, &meter, &counting)
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
        assert_eq!(
            peer::read_steps(&store, &meter).await.expect("peer").len(),
            9
        );
        assert_eq!(zarr::read_steps(&z, &meter).await.expect("zarr").len(), 9);
        let floors = Floors::of(&o, n).await.expect("floors");
        assert!(
            floors
                .get(measure::Step::Stats)
                .is_some_and(|(r, b)| r == 1 && b > 0)
        );
    }
}
