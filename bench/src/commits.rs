//! `atlas-bench commits`: commits per second on one set, from 1, 4 and 16
//! writers at once.
//!
//! ```text
//! atlas-bench commits [--writers 1,4,16] [--batch 1,4] [--seconds 5]
//!                     [--latency 20ms] [--work DIR]
//! ```
//!
//! Each writer is a task that, until the time is up, writes `batch` small
//! members (one dataset each) and commits them with one [`SetWriter`]. The
//! conditional manifest write serialises the commits; a lost race is retried
//! by the library, and a commit that lost every retry counts as a conflict.
//! Two stores: the in-memory store with conditional writes (`CasMemory`)
//! behind the bench's meter, which holds every read and stat back by
//! `--latency` (writes are not held back), and local disk.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use atlas::{AtlasError, Operator, SetWriter, WriterConfig, member_id};

use crate::error::{BenchError, Result};
use crate::meter::{Meter, MeterLayer, Simulation};
use crate::{parse_duration, runtime};

/// What `atlas-bench commits` was asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct CommitsOptions {
    /// Writer counts, one row each.
    pub writers: Vec<usize>,
    /// Members per commit, one row each.
    pub batch: Vec<usize>,
    /// How long each row runs.
    pub seconds: u64,
    /// Wait before each read and stat of the in-memory store.
    pub latency: Duration,
    /// Where the local-disk sets are written.
    pub work: PathBuf,
}

/// Parses the arguments after `commits`.
pub fn parse_options(args: &[String]) -> Result<CommitsOptions> {
    let mut o = CommitsOptions {
        writers: vec![1, 4, 16],
        batch: vec![1, 4],
        seconds: 5,
        latency: Duration::from_millis(20),
        work: std::env::temp_dir().join("atlas-bench-commits"),
    };
    let mut args = args.iter();
    while let Some(a) = args.next() {
        let mut value = || {
            args.next()
                .cloned()
                .ok_or_else(|| BenchError::Usage(format!("{a} needs a value")))
        };
        let numbers = |v: String| {
            v.split(',')
                .map(|n| n.parse::<usize>().ok().filter(|n| *n > 0))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| BenchError::Usage(format!("{a} needs positive numbers, not {v:?}")))
        };
        match a.as_str() {
            "--writers" => o.writers = numbers(value()?)?,
            "--batch" => o.batch = numbers(value()?)?,
            "--seconds" => {
                let v = value()?;
                o.seconds = v.parse().ok().filter(|s| *s > 0).ok_or_else(|| {
                    BenchError::Usage(format!("--seconds needs a positive number, not {v:?}"))
                })?;
            }
            "--latency" => o.latency = parse_duration(&value()?)?,
            "--work" => o.work = PathBuf::from(value()?),
            other => return Err(BenchError::Usage(format!("unknown argument {other:?}"))),
        }
    }
    Ok(o)
}

/// What one row counted.
#[derive(Debug, Default)]
struct Counts {
    commits: AtomicU64,
    members: AtomicU64,
    attempts: AtomicU64,
    conflicts: AtomicU64,
}

/// Runs every row on both stores and prints the table.
pub fn run(o: &CommitsOptions) -> Result {
    let rt = runtime()?;
    println!(
        "commits on one set, {} s per row; memory: CasMemory, reads and stats held back {} ms; disk: local files",
        o.seconds,
        o.latency.as_millis()
    );
    println!(
        "| store | writers | members per commit | commits/s | members/s | attempts per commit | conflicts |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for store in ["memory", "disk"] {
        for &batch in &o.batch {
            for &writers in &o.writers {
                let op = match store {
                    "memory" => {
                        let meter = Meter::new(Simulation {
                            latency: o.latency,
                            bandwidth: None,
                        });
                        atlas_io::CasMemory::new()
                            .operator()
                            .layer(MeterLayer::new(meter))
                    }
                    _ => {
                        let dir = o.work.join(format!("w{writers}-b{batch}"));
                        if dir.exists() {
                            std::fs::remove_dir_all(&dir)?;
                        }
                        std::fs::create_dir_all(&dir)?;
                        Operator::new(
                            opendal::services::Fs::default().root(&dir.to_string_lossy()),
                        )?
                    }
                };
                let counts = Arc::new(Counts::default());
                let elapsed = rt.block_on(row(op, writers, batch, o.seconds, counts.clone()))?;
                let secs = elapsed.as_secs_f64();
                let commits = counts.commits.load(Ordering::Relaxed);
                let attempts = counts.attempts.load(Ordering::Relaxed);
                #[allow(clippy::cast_precision_loss)]
                let (per_s, members_s, per_commit) = (
                    commits as f64 / secs,
                    counts.members.load(Ordering::Relaxed) as f64 / secs,
                    attempts as f64 / commits.max(1) as f64,
                );
                println!(
                    "| {store} | {writers} | {batch} | {per_s:.1} | {members_s:.1} | {per_commit:.2} | {} |",
                    counts.conflicts.load(Ordering::Relaxed)
                );
            }
        }
    }
    if o.work.exists() {
        std::fs::remove_dir_all(&o.work)?;
    }
    Ok(())
}

/// `writers` tasks committing `batch` members at a time for `seconds`.
async fn row(
    op: Operator,
    writers: usize,
    batch: usize,
    seconds: u64,
    counts: Arc<Counts>,
) -> Result<Duration> {
    let start = Instant::now();
    let until = start + Duration::from_secs(seconds);
    let tasks: Vec<_> = (0..writers)
        .map(|w| {
            let (op, counts) = (op.clone(), counts.clone());
            tokio::spawn(async move { writer(op, w, batch, until, &counts).await })
        })
        .collect();
    for task in tasks {
        task.await
            .map_err(|e| BenchError::Child(format!("a writer task failed: {e}")))??;
    }
    Ok(start.elapsed())
}

/// One writer: commits until `until`.
async fn writer(op: Operator, w: usize, batch: usize, until: Instant, counts: &Counts) -> Result {
    let mut n: u64 = 0;
    while Instant::now() < until {
        let ms = 1_700_000_000_000 + i64::try_from(n).unwrap_or(0);
        let config = WriterConfig::default().created_unix_ms(ms);
        let mut set = SetWriter::create((op.clone(), "set"), &config).await?;
        for _ in 0..batch {
            n += 1;
            let nonce = (u64::try_from(w).unwrap_or(0) << 40) | n;
            let member = set.add_member(&member_id(ms, nonce)).await?;
            member
                .writer()
                .add_dataset(&format!("w{w}-{n}"))?
                .finish()
                .await?;
            set.finish_member(member).await?;
        }
        match set.commit().await {
            Ok(outcome) => {
                counts.commits.fetch_add(1, Ordering::Relaxed);
                counts.members.fetch_add(batch as u64, Ordering::Relaxed);
                counts
                    .attempts
                    .fetch_add(u64::from(outcome.attempts), Ordering::Relaxed);
            }
            Err(AtlasError::CommitConflict { .. }) => {
                counts.conflicts.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}
