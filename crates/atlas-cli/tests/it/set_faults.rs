//! Real processes on one set on local disk: `atlas create --append`
//! processes, some SIGKILLed at seeded points, a concurrent `atlas compact`,
//! and a reader process (`atlas ls`, `atlas cat`) reading all along.
//! Afterwards the set opens, every acknowledged append is there with its
//! values, nothing is listed twice, and the reader never met an error other
//! than a retryable one (exit 75).

#![cfg(test)]

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use atlas::{Atlas, OpenOptions, Region};
use common::{s, write_nc};
use serde_json::Value as Json;

/// Input files; the first is appended alone, the rest `AT_ONCE` at a time.
const FILES: usize = 40;
const AT_ONCE: usize = 3;

/// A small deterministic random number generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n.max(1)
    }
}

fn atlas_cmd() -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("atlas"));
    cmd.env_remove("RUST_LOG");
    cmd
}

fn spawn_append(file: &Path, set: &Path) -> Child {
    atlas_cmd()
        .args(["-q", "create", s(file), s(set), "--append"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// What the reader process saw.
#[derive(Debug, Default)]
struct Seen {
    rounds: u64,
    retryable: u64,
    /// Anything a reader must never see.
    anomalies: Vec<String>,
}

/// `atlas ls` then `atlas cat` of one listed name, again and again until
/// `done`: a listing must hold every name acknowledged before it began, and
/// no name twice; an error must exit 75.
fn reader(set: PathBuf, acked: Arc<Mutex<BTreeSet<String>>>, done: Arc<AtomicBool>) -> Seen {
    let mut seen = Seen::default();
    while !done.load(Ordering::SeqCst) {
        seen.rounds += 1;
        let must = acked.lock().unwrap().clone();
        let out = atlas_cmd()
            .args(["--json", "ls", s(&set)])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        match out.status.code() {
            Some(0) => {}
            Some(75) => {
                seen.retryable += 1;
                continue;
            }
            code => {
                seen.anomalies.push(format!("ls exited {code:?}: {stderr}"));
                continue;
            }
        }
        let listed: Json = serde_json::from_slice(&out.stdout).unwrap();
        let names: Vec<String> = listed
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["name"].as_str().unwrap().to_owned())
            .collect();
        let unique: BTreeSet<&String> = names.iter().collect();
        if unique.len() != names.len() {
            seen.anomalies
                .push(format!("a name listed twice: {names:?}"));
        }
        for name in must.iter().filter(|n| !unique.contains(n)) {
            seen.anomalies
                .push(format!("{name} acknowledged, then not listed"));
        }
        let Some(pick) = names.get(seen.rounds as usize % names.len().max(1)) else {
            continue;
        };
        let out = atlas_cmd()
            .args(["--json", "cat", s(&set), pick, "TEMP"])
            .output()
            .unwrap();
        match out.status.code() {
            Some(0) => {}
            Some(75) => seen.retryable += 1,
            code => seen.anomalies.push(format!(
                "cat {pick} exited {code:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            )),
        }
    }
    seen
}

/// Waits for a writer process: whether it exited 0. A failure other than a
/// retryable one (exit 75) is an anomaly, unless the process was `killed`.
fn finished(mut child: Child, what: &str, killed: bool, anomalies: &mut Vec<String>) -> bool {
    let status = child.wait().unwrap();
    if status.success() {
        return true;
    }
    if killed {
        return false;
    }
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        use std::io::Read;
        let _ = pipe.read_to_string(&mut stderr);
    }
    if status.code() != Some(75) {
        anomalies.push(format!("{what} exited {status:?}: {stderr}"));
    }
    false
}

#[test]
fn appenders_killed_at_seeded_points_lose_no_acknowledged_dataset_and_a_reader_sees_only_retryable_errors()
 {
    let seed = std::env::var("ATLAS_FAULT_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(37u64);
    let mut rng = Rng(seed | 1);
    let tmp = tempfile::tempdir().unwrap();
    let set = tmp.path().join("set");
    let files: Vec<PathBuf> = (0..FILES)
        .map(|i| {
            let p = tmp.path().join(format!("in/f{i}.nc"));
            write_nc(&p, &[i as f32; 4], i as i32);
            p
        })
        .collect();
    let name = |i: usize| format!("f{i}.nc");

    // The first append, timed: kill points are drawn over its length.
    let started = Instant::now();
    let mut anomalies = Vec::new();
    assert!(finished(
        spawn_append(&files[0], &set),
        "the first append",
        false,
        &mut anomalies
    ));
    let span_ms = u64::try_from(started.elapsed().as_millis()).unwrap().max(1);

    let acked = Arc::new(Mutex::new(BTreeSet::from([name(0)])));
    let done = Arc::new(AtomicBool::new(false));
    let reading = {
        let (set, acked, done) = (set.clone(), acked.clone(), done.clone());
        std::thread::spawn(move || reader(set, acked, done))
    };

    let (mut killed, mut killed_landed, mut failed) = (0, 0, 0);
    let mut compaction = None;
    let batches: Vec<Vec<usize>> = (1..FILES)
        .collect::<Vec<_>>()
        .chunks(AT_ONCE)
        .map(<[usize]>::to_vec)
        .collect();
    let middle = batches.len() / 2;
    for (b, batch) in batches.iter().enumerate() {
        if b == middle {
            compaction = Some(
                atlas_cmd()
                    .args(["-q", "compact", s(&set)])
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap(),
            );
        }
        let spawned = Instant::now();
        let mut children: Vec<(usize, Child, Option<Duration>)> = batch
            .iter()
            .map(|&i| {
                // A third of the appenders are killed, somewhere in their run.
                let kill = (rng.below(3) == 0).then(|| Duration::from_millis(rng.below(span_ms)));
                (i, spawn_append(&files[i], &set), kill)
            })
            .collect();
        children.sort_by_key(|(_, _, kill)| *kill);
        for (i, mut child, kill) in children {
            if let Some(at) = kill {
                std::thread::sleep(at.saturating_sub(spawned.elapsed()));
                let _ = child.kill();
                killed += 1;
            }
            // A child that exited 0 before its kill is acknowledged like any.
            let what = format!("append of {}", name(i));
            if finished(child, &what, kill.is_some(), &mut anomalies) {
                killed_landed += usize::from(kill.is_some());
                acked.lock().unwrap().insert(name(i));
            } else if kill.is_none() {
                failed += 1;
            }
        }
    }
    if let Some(child) = compaction {
        finished(child, "the compaction", false, &mut anomalies);
    }
    done.store(true, Ordering::SeqCst);
    let seen = reading.join().unwrap();

    // The end: the set opens, holds every acknowledged name once, with its values.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let acked = acked.lock().unwrap().clone();
    rt.block_on(async {
        let atlas = Atlas::open(&set, &OpenOptions::default()).await.unwrap();
        let names: Vec<String> = atlas
            .dataset_names()
            .await
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect();
        let unique: BTreeSet<&String> = names.iter().collect();
        assert_eq!(unique.len(), names.len(), "a name listed twice: {names:?}");
        for (i, n) in (0..FILES).map(|i| (i, name(i))) {
            if !acked.contains(&n) {
                continue;
            }
            assert!(unique.contains(&n), "{n} was acknowledged and is lost");
            let values = atlas
                .dataset(&n)
                .await
                .unwrap()
                .read_array::<f32>("TEMP", Region::all())
                .await
                .unwrap();
            assert!(values.iter().all(|v| *v == i as f32), "{n}: {values:?}");
        }
    });
    // Killed appenders leave uncommitted members: warnings, not damage.
    let verify = atlas_cmd().args(["verify", s(&set)]).output().unwrap();
    assert!(
        verify.status.success(),
        "verify: {}{}",
        String::from_utf8_lossy(&verify.stdout),
        String::from_utf8_lossy(&verify.stderr)
    );
    eprintln!(
        "seed {seed}: {} appends acknowledged of {FILES}, {killed} killed ({killed_landed} had landed), \
         {failed} failed retryably; reader: {} rounds, {} retryable errors",
        acked.len(),
        seen.rounds,
        seen.retryable
    );
    assert!(anomalies.is_empty(), "writers: {anomalies:#?}");
    assert!(seen.anomalies.is_empty(), "reader: {:#?}", seen.anomalies);
    assert!(killed > 0, "seed {seed} killed no appender");
    assert!(seen.rounds > 1, "the reader read while the writers wrote");
}
