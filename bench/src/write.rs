//! `atlas-bench write`: write throughput and peak memory of this Atlas and
//! atlas-rust, case by case, each write in a child process of its own.
//!
//! ```text
//! atlas-bench write [--quick] [--cases argo,grid,tiny] [--writers 1,2,4]
//!                   [--impls ours,peer] [--profiles N] [--grids N] [--tiny N]
//!                   [--codec zstd|lz4|none] [--rounds N] [--work DIR]
//! ```
//!
//! Each write runs `--rounds` times (5 unless given), the configurations of
//! one case and writer count taking turns (in reverse every other round),
//! and the table shows each configuration's median run by wall time. The
//! index's share is the median over the rounds of the difference between
//! the write with the index and the one without, run back to back in the
//! same round: the difference of two writes, not one run's noise.
//!
//! The cases: `argo`, the bench's Argo-like profiles (`workload::profile`);
//! `grid`, datasets of one 512 × 512 `f32` field chunked 256 × 256
//! (compression-bound); `tiny`, datasets of one `u8` (bound by the per-dataset
//! cost). Each runs with every writer count: that many tasks add datasets to
//! one shared writer at once. atlas-rust, the other v8 writer, runs the same
//! cases; its writer serialises every define and write behind one lock.

use std::path::Path;
use std::time::Duration;

use crate::error::{BenchError, Result};
use crate::workload::{self, GRID};
use crate::{Impl, dir_bytes, run_child};

/// What one write writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Case {
    /// Argo-like profiles: three `f32` arrays of 20 to 119 levels, `JULD`,
    /// `units` and two dataset attributes.
    Argo,
    /// One 512 × 512 `f32` field per dataset, chunked 256 × 256.
    Grid,
    /// One `u8` per dataset.
    Tiny,
}

impl Case {
    /// The name on the command line and in the table.
    pub fn arg(self) -> &'static str {
        match self {
            Case::Argo => "argo",
            Case::Grid => "grid",
            Case::Tiny => "tiny",
        }
    }

    /// Parses [`arg`](Self::arg) (`profiles` is `argo` too).
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "argo" | "profiles" => Ok(Case::Argo),
            "grid" => Ok(Case::Grid),
            "tiny" => Ok(Case::Tiny),
            _ => Err(BenchError::Usage(format!(
                "unknown case {s:?} (argo, grid, tiny)"
            ))),
        }
    }

    /// Bytes of array values in `n` datasets of this case (what MB/s counts).
    pub fn raw_bytes(self, n: usize) -> u64 {
        let n64 = n as u64;
        match self {
            Case::Argo => (0..n).map(|i| workload::levels(i) as u64 * 3 * 4 + 8).sum(),
            Case::Grid => n64 * (GRID * GRID * 4) as u64,
            Case::Tiny => n64,
        }
    }
}

/// The block codec of a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    /// zstd (both writers' default).
    #[default]
    Zstd,
    /// LZ4.
    Lz4,
    /// No compression.
    Uncompressed,
}

impl Compression {
    /// The name on the command line.
    pub fn arg(self) -> &'static str {
        match self {
            Compression::Zstd => "zstd",
            Compression::Lz4 => "lz4",
            Compression::Uncompressed => "none",
        }
    }

    /// Parses [`arg`](Self::arg).
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "zstd" => Ok(Compression::Zstd),
            "lz4" => Ok(Compression::Lz4),
            "none" => Ok(Compression::Uncompressed),
            _ => Err(BenchError::Usage(format!(
                "unknown codec {s:?} (zstd, lz4, none)"
            ))),
        }
    }
}

/// One write: `n` datasets of `case` from `tasks` concurrent tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Job {
    /// What each dataset holds.
    pub case: Case,
    /// How many datasets.
    pub n: usize,
    /// How many tasks add datasets to the one writer at once.
    pub tasks: usize,
    /// The block codec.
    pub codec: Compression,
    /// Whether this Atlas writes its dataset index (its default); atlas-rust
    /// writes none.
    pub index: bool,
}

impl Job {
    /// `n` datasets of `case` from `tasks` tasks, with zstd and the index.
    pub fn new(case: Case, n: usize, tasks: usize) -> Self {
        Self {
            case,
            n,
            tasks: tasks.max(1),
            codec: Compression::Zstd,
            index: true,
        }
    }

    /// Indices task `t` of [`tasks`](Self::tasks) writes: every `tasks`-th from `t`.
    pub fn share(&self, t: usize) -> impl Iterator<Item = usize> + use<> {
        (t..self.n).step_by(self.tasks.max(1))
    }
}

/// What the write mode's command line asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct WriteOptions {
    cases: Vec<Case>,
    writers: Vec<usize>,
    impls: Vec<Impl>,
    profiles: usize,
    grids: usize,
    tiny: usize,
    codec: Compression,
    quick: bool,
    /// Runs of each write; the table shows the median one.
    rounds: usize,
    work: std::path::PathBuf,
}

fn list<T>(s: &str, parse: impl Fn(&str) -> Result<T>) -> Result<Vec<T>> {
    s.split(',').map(|x| parse(x.trim())).collect()
}

/// Parses the arguments after `write`.
pub fn parse_options(args: &[String]) -> Result<WriteOptions> {
    let mut o = WriteOptions {
        cases: vec![Case::Argo, Case::Grid, Case::Tiny],
        writers: vec![1, 2, 4],
        impls: vec![Impl::Ours, Impl::Peer],
        profiles: 30_000,
        grids: 200,
        tiny: 100_000,
        codec: Compression::Zstd,
        quick: false,
        rounds: 5,
        work: std::path::PathBuf::from("target/bench-work"),
    };
    let mut sizes = [None; 3];
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| BenchError::Usage(format!("{a} needs a value")))
        };
        let number = |v: &str| {
            v.parse::<usize>()
                .map_err(|_| BenchError::Usage(format!("{a} needs numbers, not {v:?}")))
        };
        match a.as_str() {
            "--quick" => o.quick = true,
            "--cases" => o.cases = list(&value()?, Case::parse)?,
            "--writers" => o.writers = list(&value()?, number)?,
            "--impls" => o.impls = list(&value()?, Impl::parse)?,
            "--profiles" => sizes[0] = Some(number(&value()?)?),
            "--grids" => sizes[1] = Some(number(&value()?)?),
            "--tiny" => sizes[2] = Some(number(&value()?)?),
            "--codec" => o.codec = Compression::parse(&value()?)?,
            "--rounds" => o.rounds = number(&value()?)?.max(1),
            "--work" => o.work = value()?.into(),
            other => return Err(BenchError::Usage(format!("unknown argument {other:?}"))),
        }
    }
    if o.quick {
        (o.profiles, o.grids, o.tiny) = (2_000, 20, 10_000);
    }
    let [profiles, grids, tiny] = sizes;
    o.profiles = profiles.unwrap_or(o.profiles).max(1);
    o.grids = grids.unwrap_or(o.grids).max(1);
    o.tiny = tiny.unwrap_or(o.tiny).max(1);
    if o.writers.contains(&0) {
        return Err(BenchError::Usage(
            "a writer count must be at least 1".into(),
        ));
    }
    if let Some(z) = o.impls.iter().find(|i| **i == Impl::Zarr) {
        return Err(BenchError::Usage(format!(
            "the write mode compares v8 writers; {} writes only in the main run",
            z.label()
        )));
    }
    Ok(o)
}

/// One measured write.
#[derive(Debug, Clone)]
struct Row {
    case: Case,
    imp: Impl,
    /// Whether the dataset index was written (this Atlas only).
    index: bool,
    writers: usize,
    datasets: usize,
    raw: u64,
    container: u64,
    run: crate::ChildRun,
    /// For this Atlas with its index: the median over the rounds of what
    /// the index added to the wall time, and to the commit, in seconds.
    index_cost: Option<(f64, f64)>,
}

/// Runs every case, writer count and implementation; prints one table.
pub fn run(o: &WriteOptions) -> Result {
    std::fs::create_dir_all(&o.work)?;
    let work = o.work.canonicalize()?.join("write");
    println!(
        "# atlas-bench write: {} profiles, {} grids of {GRID}×{GRID} f32, {} tiny datasets; codec {}; {} cores{}",
        o.profiles,
        o.grids,
        o.tiny,
        o.codec.arg(),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        if o.quick { " (--quick)" } else { "" }
    );
    let mut rows = Vec::new();
    for &case in &o.cases {
        let n = match case {
            Case::Argo => o.profiles,
            Case::Grid => o.grids,
            Case::Tiny => o.tiny,
        };
        for &writers in &o.writers {
            // This Atlas once more without its dataset index: what the index costs.
            let configs: Vec<(Impl, bool)> = o
                .impls
                .iter()
                .flat_map(|&imp| match imp {
                    Impl::Ours => vec![(imp, true), (imp, false)],
                    _ => vec![(imp, false)],
                })
                .collect();
            let mut runs: Vec<Vec<(crate::ChildRun, u64)>> = vec![Vec::new(); configs.len()];
            for round in 0..o.rounds {
                // Every other round runs the configurations in reverse, so
                // that none always follows the same one (a write after
                // atlas-rust's meets its dirty pages being written back).
                let mut order: Vec<(&(Impl, bool), &mut Vec<_>)> =
                    configs.iter().zip(&mut runs).collect();
                if round % 2 == 1 {
                    order.reverse();
                }
                for (&(imp, index), done) in order {
                    let dir = work.join(format!("{}-{}-{writers}", imp.arg(), case.arg()));
                    let job = Job {
                        codec: o.codec,
                        index,
                        ..Job::new(case, n, writers)
                    };
                    let run = run_child(imp, &job, &dir)?;
                    eprintln!(
                        "  {} {}{} ×{writers}: {:.2} s",
                        case.arg(),
                        imp.label(),
                        if imp == Impl::Ours && !index {
                            " (no index)"
                        } else {
                            ""
                        },
                        run.secs
                    );
                    done.push((run, dir_bytes(&dir)));
                    remove(&dir)?;
                }
            }
            let index_cost = index_cost(&configs, &runs);
            for (&(imp, index), mut done) in configs.iter().zip(runs) {
                done.sort_by(|a, b| a.0.secs.total_cmp(&b.0.secs));
                let Some((run, container)) = done.get(done.len() / 2).cloned() else {
                    continue;
                };
                rows.push(Row {
                    case,
                    imp,
                    index,
                    writers,
                    datasets: n,
                    raw: case.raw_bytes(n),
                    container,
                    run,
                    index_cost: index_cost.filter(|_| imp == Impl::Ours && index),
                });
            }
        }
    }
    print_table(&rows);
    Ok(())
}

/// The median over the rounds of what this Atlas's index added to the wall
/// time and to the commit: each round's write with the index against the
/// one without, run one after the other. `None` without both.
fn index_cost(
    configs: &[(Impl, bool)],
    runs: &[Vec<(crate::ChildRun, u64)>],
) -> Option<(f64, f64)> {
    let of = |index: bool| {
        configs
            .iter()
            .position(|&c| c == (Impl::Ours, index))
            .and_then(|i| runs.get(i))
    };
    let (with, without) = (of(true)?, of(false)?);
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied()
    };
    let pairs = || with.iter().zip(without);
    Some((
        median(pairs().map(|((w, _), (o, _))| w.secs - o.secs).collect())?,
        median(
            pairs()
                .map(|((w, _), (o, _))| secs(w.commit) - secs(o.commit))
                .collect(),
        )?,
    ))
}

fn remove(dir: &Path) -> Result {
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
        _ => Ok(()),
    }
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

fn print_table(rows: &[Row]) {
    println!(
        "\n## Writes (each in its own process; RSS = peak resident set, VmHWM)\n\n\
         | case | implementation | writers | wall | commit | CPU | MB/s | datasets/s | peak RSS | on disk | ours / atlas-rust (time, RSS) | index: share of the wall time |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|"
    );
    for r in rows {
        let peer = rows
            .iter()
            .find(|p| p.imp == Impl::Peer && p.case == r.case && p.writers == r.writers);
        let without = rows.iter().find(|p| {
            p.imp == Impl::Ours && !p.index && p.case == r.case && p.writers == r.writers
        });
        let share = match (r.index_cost, without) {
            (Some((wall, commit)), Some(w)) if r.run.secs > 0.0 => format!(
                "{:.1} % (+{:.2} s wall, +{:.2} s commit, +{:.1} MB on disk)",
                100.0 * wall / r.run.secs,
                wall,
                commit,
                (r.container as f64 - w.container as f64) / 1e6
            ),
            _ => String::new(),
        };
        let vs = match (r.imp, peer) {
            (Impl::Ours, Some(p)) if r.index && p.run.secs > 0.0 && p.run.rss_kib > 0 => format!(
                "{:.2}×, {:.2}×",
                r.run.secs / p.run.secs,
                r.run.rss_kib as f64 / p.run.rss_kib as f64
            ),
            _ => String::new(),
        };
        let per_sec = |x: f64| {
            if r.run.secs > 0.0 {
                x / r.run.secs
            } else {
                0.0
            }
        };
        println!(
            "| {} | {}{} | {} | {:.2} s | {:.2} s | {:.2} s | {:.1} | {:.0} | {:.0} MB | {:.1} MB | {vs} | {share} |",
            r.case.arg(),
            r.imp.label(),
            if r.imp == Impl::Ours && !r.index {
                ", no index"
            } else {
                ""
            },
            r.writers,
            r.run.secs,
            secs(r.run.commit),
            r.run.cpu_secs,
            per_sec(r.raw as f64 / 1e6),
            per_sec(r.datasets as f64),
            r.run.rss_kib as f64 / 1024.0,
            r.container as f64 / 1e6,
        );
    }
    println!(
        "\nwall: from creating the writer to the end of its finish, generating the data included \
         (the same for both); commit: the finish alone; CPU: user + system time of the child; \
         MB/s: array values (10^6 bytes) per second of wall time; index: how much longer \
         this Atlas's write took than the same write without its dataset index, the median \
         over the rounds of the two run back to back; every other figure is the median run of \
         each write."
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    fn runs(walls: &[f64]) -> Vec<(crate::ChildRun, u64)> {
        walls
            .iter()
            .map(|&secs| {
                let run = crate::ChildRun {
                    secs,
                    rss_kib: 0,
                    cpu_secs: secs,
                    commit: Duration::from_secs_f64(secs / 2.0),
                };
                (run, 0)
            })
            .collect()
    }

    #[test]
    fn the_index_cost_is_the_median_of_each_rounds_difference_not_of_two_medians() {
        let configs = [(Impl::Ours, true), (Impl::Ours, false), (Impl::Peer, false)];
        // A slow round (everything +0.5 s) and a fast one: paired, the index
        // adds 0.1 s in two rounds of three; medians taken apart say 0.6 s.
        let with = runs(&[1.1, 1.6, 1.6]);
        let without = runs(&[1.0, 1.5, 1.0]);
        let (wall, commit) =
            index_cost(&configs, &[with, without, runs(&[2.0, 2.0, 2.0])]).unwrap();
        assert!((wall - 0.1).abs() < 1e-9, "{wall}");
        assert!((commit - 0.05).abs() < 1e-9, "{commit}");
        assert_eq!(
            index_cost(&configs[1..], &[runs(&[1.0]), runs(&[2.0])]),
            None
        );
    }

    #[test]
    fn quick_shrinks_every_case_but_explicit_sizes_and_lists_win() {
        let o = parse_options(&args(&["--quick", "--grids", "3", "--writers", "1,4"]));
        let o = o.ok();
        assert_eq!(
            o.as_ref().map(|o| (o.profiles, o.grids, o.tiny)),
            Some((2_000, 3, 10_000))
        );
        assert_eq!(o.map(|o| o.writers), Some(vec![1, 4]));
        let o = parse_options(&args(&["--cases", "grid,profiles", "--codec", "lz4"])).ok();
        assert_eq!(
            o.map(|o| (o.cases, o.codec)),
            Some((vec![Case::Grid, Case::Argo], Compression::Lz4))
        );
    }

    #[test]
    fn unknown_cases_codecs_zero_writers_and_zarrs_are_usage_errors() {
        for bad in [
            &["--cases", "argo,ocean"][..],
            &["--codec", "brotli"],
            &["--writers", "0,2"],
            &["--writers", "two"],
            &["--impls", "ours,zarr"],
            &["--cases"],
        ] {
            assert!(
                matches!(parse_options(&args(bad)), Err(BenchError::Usage(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn every_task_share_together_covers_each_index_once() {
        let job = Job::new(Case::Tiny, 11, 4);
        let mut all: Vec<usize> = (0..4).flat_map(|t| job.share(t)).collect();
        all.sort_unstable();
        assert_eq!(all, (0..11).collect::<Vec<_>>());
    }

    #[test]
    fn raw_bytes_count_the_values_of_each_case() {
        assert_eq!(Case::Tiny.raw_bytes(7), 7);
        assert_eq!(Case::Grid.raw_bytes(2), 2 * 512 * 512 * 4);
        let one = workload::profile(0);
        assert_eq!(Case::Argo.raw_bytes(1), one.levels() as u64 * 12 + 8);
    }
}
