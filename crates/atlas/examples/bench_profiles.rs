//! The issue-9 workload: 30 000 Argo-like profiles written once, then read
//! through a request-counting local-disk operator.
//!
//! `PRES`/`TEMP`/`PSAL` are `f32` of 20..119 levels with fill 99999.0 and a
//! `units` attribute, `JULD` is `f64` `[1]`, and each dataset has the
//! attributes `platform_number` (string) and `cycle_number` (i32).
//!
//! `cargo run --release -p atlas --example bench_profiles -- <mode> [options]`
//!
//! - `write [--tasks N] [--count N] [--dir D]`: writes the collection (time, peak RSS);
//! - `tiny [--tasks N] [--count N]`: writes N one-element datasets (time, peak RSS);
//! - `read [--dir D]`: the read scenarios, each on a fresh handle, with the
//!   requests and bytes `CountingLayer` saw after the open, and times
//!   (best of `--repeat`, default 3).
//!
//! The collection lives in `target/bench-data/profiles` unless `--dir` says otherwise;
//! `read` writes it first when it is missing.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use atlas::{Atlas, AtlasWriter, Attr, Order, Region, WriterConfig};
use atlas_io::{CountingLayer, RequestStats};
use futures::StreamExt;
use ndarray::{Array1, ArrayD};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Deterministic noise: a 64-bit LCG.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    fn unit(&mut self) -> f32 {
        (self.next() % 1024) as f32 / 1024.0
    }
}

fn profile_name(i: usize) -> String {
    format!("R{:07}_{:03}", 5_900_000 + i / 150, i % 150)
}

/// Writes profile `i` into its dataset writer.
fn fill_profile(d: &mut atlas::DatasetWriter, i: usize) -> Result<(), BoxError> {
    let mut rng = Lcg(i as u64 * 7919 + 17);
    let levels = 20 + (rng.next() % 100) as usize;
    let (mut pres, mut temp, mut psal) = (
        Vec::with_capacity(levels),
        Vec::with_capacity(levels),
        Vec::with_capacity(levels),
    );
    for k in 0..levels {
        let p = (k as f32) * 2000.0 / levels as f32 + rng.unit();
        pres.push((p * 10.0).round() / 10.0);
        temp.push(((28.0 - p / 80.0).max(2.0) + rng.unit() * 0.1 * 1000.0).round() / 1000.0);
        psal.push(((34.5 + p / 4000.0 + rng.unit() * 0.01) * 1000.0).round() / 1000.0);
    }
    for (name, values, units) in [
        ("PRES", pres, "decibar"),
        ("TEMP", temp, "degree_Celsius"),
        ("PSAL", psal, "psu"),
    ] {
        d.define_array::<f32>(name, &["N_LEVELS"], &[levels as u64], None, Some(99999.0))?;
        d.write_array(name, &[0], Array1::from(values).into_dyn().view())?;
        d.set_array_attribute(name, "units", Attr::String(units.into()))?;
    }
    d.define_array::<f64>("JULD", &["N_PROF"], &[1], None, Some(999999.0))?;
    d.write_array(
        "JULD",
        &[0],
        Array1::from(vec![25_000.0 + i as f64 * 0.37])
            .into_dyn()
            .view(),
    )?;
    d.set_attribute(
        "platform_number",
        Attr::String(format!("{}", 5_900_000 + i / 150)),
    )?;
    d.set_attribute("cycle_number", Attr::Int32((i % 150) as i32))?;
    Ok(())
}

/// One `f32` element.
fn fill_tiny(d: &mut atlas::DatasetWriter, i: usize) -> Result<(), BoxError> {
    d.define_array::<f32>("v", &["x"], &[1], None, None)?;
    d.write_array("v", &[0], Array1::from(vec![i as f32]).into_dyn().view())?;
    Ok(())
}

type Filler = fn(&mut atlas::DatasetWriter, usize) -> Result<(), BoxError>;

async fn write(
    dir: &Path,
    count: usize,
    tasks: usize,
    fill: Filler,
    name: fn(usize) -> String,
) -> Result<(), BoxError> {
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    std::fs::create_dir_all(dir)?;
    let start = Instant::now();
    let w = Arc::new(AtlasWriter::create(dir, &WriterConfig::default()).await?);
    let next = Arc::new(std::sync::Mutex::new(0usize));
    let done = Arc::new(AtomicUsize::new(0));
    let mut handles = Vec::new();
    for _ in 0..tasks {
        let (w, next, done) = (w.clone(), next.clone(), done.clone());
        handles.push(tokio::spawn(async move {
            loop {
                let (i, mut d) = {
                    let mut n = next.lock().map_err(|_| "poisoned")?;
                    if *n >= count {
                        return Ok::<(), BoxError>(());
                    }
                    let i = *n;
                    *n += 1;
                    (i, w.add_dataset(&name(i))?)
                };
                fill(&mut d, i)?;
                d.finish().await?;
                done.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    for h in handles {
        h.await??;
    }
    let buffered = start.elapsed().as_secs_f64();
    let w = Arc::into_inner(w).ok_or("writer still shared")?;
    let summary = w.finish().await?;
    let secs = start.elapsed().as_secs_f64();
    println!(
        "write: {count} datasets, {tasks} task(s): {secs:.3} s (datasets {buffered:.3} s, commit {:.3} s), {:.1} MB, peak RSS {} MiB",
        secs - buffered,
        summary.container_bytes as f64 / 1e6,
        vm_hwm_kib() / 1024
    );
    Ok(())
}

fn vm_hwm_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

async fn counted_open(dir: &Path) -> Result<(Atlas, RequestStats), BoxError> {
    let layer = CountingLayer::new();
    let stats = layer.stats();
    let op =
        opendal::Operator::new(opendal::services::Fs::default().root(dir.to_str().ok_or("path")?))?
            .layer(layer);
    let atlas = Atlas::open((op, ""), &atlas::OpenOptions::default()).await?;
    Ok((atlas, stats))
}

/// Runs `scenario` `repeat` times on fresh handles; prints the best time and
/// the requests/bytes of the first run (after the open).
async fn scenario<F, Fut>(dir: &Path, label: &str, repeat: usize, f: F) -> Result<(), BoxError>
where
    F: Fn(Atlas) -> Fut,
    Fut: std::future::Future<Output = Result<(), BoxError>>,
{
    let mut best = f64::MAX;
    let mut counted = None;
    for _ in 0..repeat {
        let (atlas, stats) = counted_open(dir).await?;
        stats.reset();
        let t = Instant::now();
        f(atlas).await?;
        best = best.min(t.elapsed().as_secs_f64());
        if counted.is_none() {
            counted = Some(stats.snapshot());
        }
    }
    let c = counted.unwrap_or_default();
    println!(
        "{label:<34} {:>3} GETs {:>10} bytes {:>8.2} ms",
        c.reads,
        c.bytes_read,
        best * 1e3
    );
    Ok(())
}

async fn read(dir: &Path, repeat: usize) -> Result<(), BoxError> {
    let (atlas, stats) = counted_open(dir).await?;
    let open = stats.snapshot();
    let segment = atlas
        .segments()
        .into_iter()
        .find(|v| v.name == "TEMP")
        .ok_or("no TEMP")?;
    println!(
        "open: {} GETs {} bytes; {} datasets, container footer {} bytes, TEMP segment {} bytes",
        open.reads,
        open.bytes_read,
        atlas.dataset_count(),
        atlas.footer_bytes(),
        segment.len
    );
    let target = profile_name(atlas.dataset_count() / 2);
    let expected: ArrayD<f32> = atlas
        .dataset(&target)?
        .read_array("TEMP", Region::all())
        .await?;

    scenario(dir, "array_stats(TEMP)", repeat, |a| async move {
        a.array_stats("TEMP").await?.ok_or("no stats")?;
        Ok(())
    })
    .await?;
    scenario(
        dir,
        "array_stats_by_dataset(TEMP)",
        repeat,
        |a| async move {
            a.array_stats_by_dataset("TEMP").await?;
            Ok(())
        },
    )
    .await?;
    scenario(
        dir,
        "attributes_by_dataset(TEMP, units)",
        repeat,
        |a| async move {
            a.attributes_by_dataset(Some("TEMP"), "units").await?;
            Ok(())
        },
    )
    .await?;
    scenario(
        dir,
        "attributes_by_dataset(platform)",
        repeat,
        |a| async move {
            a.attributes_by_dataset(None, "platform_number").await?;
            Ok(())
        },
    )
    .await?;
    let (t, e) = (target.clone(), expected.clone());
    scenario(dir, "cold read TEMP of one dataset", repeat, move |a| {
        let (t, e) = (t.clone(), e.clone());
        async move {
            let got: ArrayD<f32> = a.dataset(&t)?.read_array("TEMP", Region::all()).await?;
            if got != e {
                return Err("cold read differs".into());
            }
            Ok(())
        }
    })
    .await?;
    // Warm: the same read on a handle that has already done it.
    {
        let (a, stats) = counted_open(dir).await?;
        let d = a.dataset(&target)?;
        let _: ArrayD<f32> = d.read_array("TEMP", Region::all()).await?;
        stats.reset();
        let mut best = f64::MAX;
        for _ in 0..repeat.max(20) {
            let t = Instant::now();
            let got: ArrayD<f32> = d.read_array("TEMP", Region::all()).await?;
            best = best.min(t.elapsed().as_secs_f64());
            if got != expected {
                return Err("warm read differs".into());
            }
        }
        let c = stats.snapshot();
        println!(
            "{:<34} {:>3} GETs {:>10} bytes {:>8.3} ms",
            "warm read TEMP of one dataset",
            c.reads,
            c.bytes_read,
            best * 1e3
        );
    }
    scenario(
        dir,
        "TEMP of every dataset (read_many)",
        repeat,
        |a| async move {
            let datasets: Vec<_> = a.datasets().collect();
            let n = datasets.len();
            let mut stream = a.read_many(datasets, "TEMP", Region::all(), 8, Order::AsCompleted);
            let mut got = 0usize;
            while let Some((_, r)) = stream.next().await {
                r?;
                got += 1;
            }
            if got != n {
                return Err("missing results".into());
            }
            Ok(())
        },
    )
    .await?;
    Ok(())
}

fn args() -> (String, HashMap<String, String>) {
    let mut it = std::env::args().skip(1);
    let mode = it.next().unwrap_or_else(|| "read".into());
    let mut map = HashMap::new();
    while let Some(k) = it.next() {
        if let Some(k) = k.strip_prefix("--") {
            map.insert(k.to_owned(), it.next().unwrap_or_default());
        }
    }
    (mode, map)
}

fn main() -> Result<(), BoxError> {
    let (mode, opts) = args();
    let get = |k: &str, d: usize| opts.get(k).and_then(|v| v.parse().ok()).unwrap_or(d);
    let tasks = get("tasks", 1);
    let repeat = get("repeat", 3);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-data");
    let dir = opts
        .get("dir")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join(if mode == "tiny" { "tiny" } else { "profiles" }));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async {
        match mode.as_str() {
            "write" => {
                write(
                    &dir,
                    get("count", 30_000),
                    tasks,
                    fill_profile,
                    profile_name,
                )
                .await
            }
            "tiny" => {
                write(&dir, get("count", 100_000), tasks, fill_tiny, |i| {
                    format!("d{i:06}")
                })
                .await
            }
            "read" => {
                if !dir.join("data.atlas").exists() {
                    write(&dir, get("count", 30_000), 1, fill_profile, profile_name).await?;
                }
                read(&dir, repeat).await
            }
            other => Err(format!("unknown mode {other}").into()),
        }
    })
}
