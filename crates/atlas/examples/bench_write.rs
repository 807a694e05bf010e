//! Write throughput of `AtlasWriter`, against a baseline of the reference design.
//!
//! Two workloads:
//! - `argo`: 20 000 Argo-like profiles, each 3 `f32` arrays of 20–120 levels
//!   (`PRES`, `TEMP`, `PSAL`), one `f64` (`JULD`) and 2 dataset attributes;
//! - `grid`: 200 datasets of one 512×512 `f32` grid (chunked 256×256).
//!
//! Each runs with 1, 2 and 4 concurrent dataset writers, in two modes:
//! - `atlas`: this crate's writer (datasets buffered locally, pushed under
//!   one lock per variable, multi-threaded zstd for large blocks);
//! - `baseline`: the reference's design, rebuilt here from the same pieces:
//!   every define and write goes straight into the variables' array-format
//!   writers behind one global lock, with array-format's stock zstd codec.
//!
//! Each case runs in a child process so its peak RSS (`VmHWM`) is its own.
//! Both modes write the same container format (checked after each run).
//!
//! `cargo run --release -p atlas --example bench_write [-- --quick] [--cases argo,grid]
//!  [--writers 1,2,4] [--modes atlas,baseline] [--profiles N] [--grids N] [--codec zstd|lz4|none]`

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use atlas::{AtlasWriter, Attr, Codec, DatasetWriter, FillValue, WriterConfig};
use atlas_format::{
    ArrayDecl, DATASETS_SEGMENT, DType, DatasetSchema, FooterBuilder, Trailer, encode_header,
};
use atlas_segment::{ContainerSink, SegmentWriter, WriteOptions};
use bytes::Bytes;
use ndarray::{Array, IxDyn};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

// ── Workloads ────────────────────────────────────────────────────────

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Case {
    Argo,
    Grid,
}

impl Case {
    fn name(self) -> &'static str {
        match self {
            Case::Argo => "argo",
            Case::Grid => "grid",
        }
    }

    fn parse(s: &str) -> Option<Case> {
        match s {
            "argo" => Some(Case::Argo),
            "grid" => Some(Case::Grid),
            _ => None,
        }
    }
}

const GRID: usize = 512;
const GRID_CHUNK: u64 = 256;

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

    /// Uniform in [0, 1), quantised to 1/1024.
    fn unit(&mut self) -> f32 {
        (self.next() % 1024) as f32 / 1024.0
    }
}

/// One `f32` array: name, first dimension name, shape, chunk shape, values.
type F32Array = (
    &'static str,
    &'static str,
    Vec<usize>,
    Option<Vec<u64>>,
    Vec<f32>,
);
/// One `f64` array: name, dimension name, values.
type F64Array = (&'static str, &'static str, Vec<f64>);

/// One dataset's arrays and attributes, generated from its index.
struct Dataset {
    name: String,
    f32s: Vec<F32Array>,
    f64s: Vec<F64Array>,
    attrs: Vec<(&'static str, Attr)>,
}

impl Dataset {
    fn raw_bytes(&self) -> u64 {
        let f: usize = self.f32s.iter().map(|a| a.4.len() * 4).sum();
        let d: usize = self.f64s.iter().map(|a| a.2.len() * 8).sum();
        (f + d) as u64
    }
}

fn generate(case: Case, i: usize) -> Dataset {
    let mut rng = Lcg(i as u64 * 7919 + 17);
    match case {
        Case::Argo => {
            let levels = 20 + (rng.next() % 101) as usize;
            let mut pres = Vec::with_capacity(levels);
            let mut temp = Vec::with_capacity(levels);
            let mut psal = Vec::with_capacity(levels);
            for k in 0..levels {
                let p = (k as f32) * 2000.0 / levels as f32 + rng.unit();
                pres.push((p * 10.0).round() / 10.0);
                temp.push(
                    ((28.0 - p / 80.0).max(2.0) + rng.unit() * 0.1 * 1000.0).round() / 1000.0,
                );
                psal.push(((34.5 + p / 4000.0 + rng.unit() * 0.01) * 1000.0).round() / 1000.0);
            }
            Dataset {
                name: format!("R{:07}_{:03}", 5_900_000 + i / 150, i % 150),
                f32s: vec![
                    ("PRES", "N_LEVELS", vec![levels], None, pres),
                    ("TEMP", "N_LEVELS", vec![levels], None, temp),
                    ("PSAL", "N_LEVELS", vec![levels], None, psal),
                ],
                f64s: vec![("JULD", "N_PROF", vec![25_000.0 + i as f64 * 0.37])],
                attrs: vec![
                    (
                        "platform_number",
                        Attr::String(format!("{}", 5_900_000 + i / 150)),
                    ),
                    ("cycle_number", Attr::Int32((i % 150) as i32)),
                ],
            }
        }
        Case::Grid => {
            // A smooth field plus quantised noise; the trigonometry is per row
            // and column so generating the data costs little next to writing it.
            let phase = i as f32 * 0.05;
            let rows: Vec<f32> = (0..GRID)
                .map(|y| 15.0 + 10.0 * ((y as f32) / 80.0 + phase).sin())
                .collect();
            let cols: Vec<f32> = (0..GRID).map(|x| 3.0 * ((x as f32) / 45.0).cos()).collect();
            let mut sst = Vec::with_capacity(GRID * GRID);
            for row in &rows {
                for col in &cols {
                    let v = row + col + rng.unit() * 0.05;
                    sst.push((v * 100.0).round() / 100.0);
                }
            }
            Dataset {
                name: format!("sst_{i:05}"),
                f32s: vec![(
                    "sst",
                    "lat",
                    vec![GRID, GRID],
                    Some(vec![GRID_CHUNK, GRID_CHUNK]),
                    sst,
                )],
                f64s: vec![],
                attrs: vec![],
            }
        }
    }
}

// ── The atlas writer ─────────────────────────────────────────────────

fn fill_dataset(d: &mut DatasetWriter, ds: Dataset) -> Result<(), BoxError> {
    for (name, dim, shape, chunk, values) in ds.f32s {
        let shape_u: Vec<u64> = shape.iter().map(|&s| s as u64).collect();
        let dims: Vec<&str> = if shape.len() == 2 {
            vec![dim, "lon"]
        } else {
            vec![dim]
        };
        d.define_array::<f32>(name, &dims, &shape_u, chunk.as_deref(), Some(99999.0))?;
        let zeros = vec![0u64; shape.len()];
        d.write_array(
            name,
            &zeros,
            Array::from_shape_vec(IxDyn(&shape), values)?.view(),
        )?;
    }
    for (name, dim, values) in ds.f64s {
        let n = values.len();
        d.define_array::<f64>(name, &[dim], &[n as u64], None, Some(999999.0))?;
        d.write_array(
            name,
            &[0],
            Array::from_shape_vec(IxDyn(&[n]), values)?.view(),
        )?;
    }
    for (key, value) in ds.attrs {
        d.set_attribute(key, value)?;
    }
    Ok(())
}

async fn run_atlas(
    case: Case,
    count: usize,
    writers: usize,
    dir: &Path,
    config: WriterConfig,
) -> Result<(u64, f64), BoxError> {
    let w = Arc::new(AtlasWriter::create(dir, &config).await?);
    // Ordinals follow add order: take the next index and add it under one short lock.
    let next = Arc::new(Mutex::new(0usize));
    let raw = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..writers {
        let (w, next, raw) = (w.clone(), next.clone(), raw.clone());
        tasks.push(tokio::spawn(async move {
            loop {
                let (i, mut d) = {
                    let mut n = next.lock().map_err(|_| "poisoned")?;
                    if *n >= count {
                        return Ok::<(), BoxError>(());
                    }
                    let i = *n;
                    *n += 1;
                    let ds_name = generate_name(case, i);
                    (i, w.add_dataset(&ds_name)?)
                };
                let ds = generate(case, i);
                raw.fetch_add(ds.raw_bytes() as usize, Ordering::Relaxed);
                fill_dataset(&mut d, ds)?;
                d.finish().await?;
            }
        }));
    }
    for t in tasks {
        t.await??;
    }
    let w = Arc::into_inner(w).ok_or("writer still shared")?;
    let commit = Instant::now();
    w.finish().await?;
    Ok((
        raw.load(Ordering::Relaxed) as u64,
        commit.elapsed().as_secs_f64(),
    ))
}

fn generate_name(case: Case, i: usize) -> String {
    match case {
        Case::Argo => format!("R{:07}_{:03}", 5_900_000 + i / 150, i % 150),
        Case::Grid => format!("sst_{i:05}"),
    }
}

// ── The baseline: the reference's one-global-lock design ─────────────

struct Baseline {
    codec: Codec,
    variables: indexmap::IndexMap<String, SegmentWriter>,
    /// (name, schema) per ordinal; `None` while the dataset is being written.
    datasets: Vec<(String, Option<DatasetSchema>)>,
}

impl Baseline {
    fn writer(&mut self, variable: &str) -> Result<&mut SegmentWriter, BoxError> {
        let codec = self.codec;
        Ok(match self.variables.entry(variable.to_owned()) {
            indexmap::map::Entry::Occupied(e) => e.into_mut(),
            indexmap::map::Entry::Vacant(e) => e.insert(new_stock_writer(variable, codec)?),
        })
    }
}

/// A segment writer with the stock single-threaded zstd codec.
/// The writer's default zstd level and block size.
fn new_stock_writer(name: &str, codec: Codec) -> Result<SegmentWriter, BoxError> {
    let options = WriteOptions::default()
        .codec(codec)
        .zstd_level(atlas::DEFAULT_ZSTD_LEVEL)
        .block_target_size(atlas_segment::DEFAULT_BLOCK_TARGET_SIZE)
        .parallel_zstd(false);
    Ok(SegmentWriter::new(name, &options)?)
}

fn baseline_dataset(global: &Mutex<Baseline>, ordinal: usize, ds: Dataset) -> Result<(), BoxError> {
    let lock = || global.lock().map_err(|_| "poisoned");
    let mut schema = DatasetSchema::default();
    let name = ds.name.clone();
    for (array, dim, shape, chunk, values) in ds.f32s {
        let dims: Vec<String> = if shape.len() == 2 {
            vec![dim.to_owned(), "lon".into()]
        } else {
            vec![dim.to_owned()]
        };
        let shape_u64: Vec<u64> = shape.iter().map(|&x| x as u64).collect();
        let chunk: Option<Vec<u64>> = chunk.map(|c| c.to_vec());
        lock()?.writer(array)?.define_array::<f32>(
            name.as_str(),
            dims,
            &shape_u64,
            chunk.as_deref(),
            Some(&FillValue::Float(99999.0)),
        )?;
        let data = Array::from_shape_vec(IxDyn(&shape), values)?;
        lock()?
            .writer(array)?
            .write_array(&name, &vec![0; shape.len()], data.view())?;
        schema.arrays.push(ArrayDecl {
            name: array.into(),
            dtype: DType::Float32,
            attributes: vec![],
        });
    }
    for (array, dim, values) in ds.f64s {
        let n = values.len();
        lock()?.writer(array)?.define_array::<f64>(
            name.as_str(),
            vec![dim.to_owned()],
            &[n as u64],
            None,
            Some(&FillValue::Float(999999.0)),
        )?;
        let data = Array::from_shape_vec(IxDyn(&[n]), values)?;
        lock()?
            .writer(array)?
            .write_array(&name, &[0], data.view())?;
        schema.arrays.push(ArrayDecl {
            name: array.into(),
            dtype: DType::Float64,
            attributes: vec![],
        });
    }
    if !ds.attrs.is_empty() {
        let mut g = lock()?;
        let w = g.writer(DATASETS_SEGMENT)?;
        w.define_array::<u8>(name.as_str(), vec![], &[], None, None)?;
        for (key, value) in &ds.attrs {
            w.set_attribute(&name, key, value)?;
            schema.attributes.push(((*key).into(), value.dtype()));
        }
    }
    lock()?.datasets[ordinal].1 = Some(schema);
    Ok(())
}

async fn run_baseline(
    case: Case,
    count: usize,
    writers: usize,
    dir: &Path,
    config: WriterConfig,
    codec: Codec,
) -> Result<(u64, f64), BoxError> {
    drop(config);
    let global = Arc::new(Mutex::new(Baseline {
        codec,
        variables: indexmap::IndexMap::new(),
        datasets: Vec::new(),
    }));
    let raw = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..writers {
        let (global, raw) = (global.clone(), raw.clone());
        tasks.push(tokio::task::spawn_blocking(
            move || -> Result<(), BoxError> {
                loop {
                    let ordinal = {
                        let mut g = global.lock().map_err(|_| "poisoned")?;
                        let i = g.datasets.len();
                        if i >= count {
                            return Ok(());
                        }
                        g.datasets.push((generate_name(case, i), None));
                        i
                    };
                    let ds = generate(case, ordinal);
                    raw.fetch_add(ds.raw_bytes() as usize, Ordering::Relaxed);
                    baseline_dataset(&global, ordinal, ds)?;
                }
            },
        ));
    }
    for t in tasks {
        t.await??;
    }
    let state = Arc::into_inner(global)
        .ok_or("still shared")?
        .into_inner()
        .map_err(|_| "poisoned")?;
    let commit = Instant::now();
    baseline_commit(state, dir).await?;
    Ok((
        raw.load(Ordering::Relaxed) as u64,
        commit.elapsed().as_secs_f64(),
    ))
}

async fn baseline_commit(state: Baseline, dir: &Path) -> Result<(), BoxError> {
    let Baseline {
        codec,
        mut variables,
        datasets,
    } = state;
    let created = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_millis() as i64;
    let mut builder = FooterBuilder::new(codec, created);
    for (name, schema) in &datasets {
        let schema = schema.as_ref().ok_or("a dataset was not finished")?;
        let index = builder.intern_schema(schema);
        builder.push_dataset(name, index)?;
    }
    // `_datasets` last, like the reference.
    if let Some(w) = variables.shift_remove(DATASETS_SEGMENT) {
        variables.insert(DATASETS_SEGMENT.to_owned(), w);
    }
    let op = atlas_io::fs_operator(dir)?;
    let writer = op.writer("data.atlas").await?;
    let sink = ContainerSink::new(writer, "data.atlas");
    sink.write_raw(Bytes::copy_from_slice(&encode_header()))
        .await?;
    for (name, w) in variables {
        let seg = w.finish(&sink).await?;
        builder.push_variable(&name, seg.len)?;
    }
    let footer = builder.finish().encode()?;
    let len = footer.len() as u64;
    sink.write_raw(Bytes::from(footer)).await?;
    sink.write_raw(Bytes::copy_from_slice(
        &Trailer { footer_size: len }.encode(),
    ))
    .await?;
    sink.close().await?;
    Ok(())
}

// ── Child: one case, one mode, one writer count ──────────────────────

fn vm_hwm_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// User + system CPU seconds of this process (all threads), from `/proc/self/stat`.
fn cpu_secs() -> f64 {
    // USER_HZ is 100 on Linux.
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            // Fields after the command name (which may hold spaces) start at ") ".
            let rest = s.rsplit_once(") ")?.1;
            let f: Vec<&str> = rest.split_whitespace().collect();
            let utime: f64 = f.get(11)?.parse().ok()?;
            let stime: f64 = f.get(12)?.parse().ok()?;
            Some((utime + stime) / 100.0)
        })
        .unwrap_or(0.0)
}

fn child(args: &HashMap<String, String>) -> Result<(), BoxError> {
    let case = Case::parse(&args["case"]).ok_or("case")?;
    let mode = args["mode"].clone();
    let writers: usize = args["writers"].parse()?;
    let count: usize = args["count"].parse()?;
    let dir = PathBuf::from(&args["dir"]);
    let codec = parse_codec(&args["codec"])?;
    let config = WriterConfig::default().codec(codec);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let started = Instant::now();
    let (raw, commit) = rt.block_on(async {
        match mode.as_str() {
            "atlas" => run_atlas(case, count, writers, &dir, config).await,
            _ => run_baseline(case, count, writers, &dir, config, codec).await,
        }
    })?;
    let secs = started.elapsed().as_secs_f64();
    let container = std::fs::metadata(dir.join("data.atlas"))?.len();
    // Both modes must produce a container that opens with every dataset in it.
    let bytes = std::fs::read(dir.join("data.atlas"))?;
    let opened = atlas_format::open_bytes(&bytes, atlas_format::DecodeLimits::default())?;
    if opened.footer.datasets.len() != count {
        return Err(format!(
            "{} datasets in the container, expected {count}",
            opened.footer.datasets.len()
        )
        .into());
    }
    println!(
        "RESULT {secs} {raw} {count} {container} {} {commit} {}",
        vm_hwm_kib(),
        cpu_secs()
    );
    Ok(())
}

fn parse_codec(s: &str) -> Result<Codec, BoxError> {
    Ok(match s {
        "zstd" => Codec::Zstd,
        "lz4" => Codec::Lz4,
        "none" => Codec::Uncompressed,
        other => return Err(format!("unknown codec {other}").into()),
    })
}

// ── Parent: run every case in a child, print the table ──────────────

struct Row {
    case: Case,
    mode: String,
    writers: usize,
    secs: f64,
    raw: u64,
    datasets: u64,
    container: u64,
    hwm_kib: u64,
    commit: f64,
    cpu: f64,
}

fn run_child(
    case: Case,
    mode: &str,
    writers: usize,
    count: usize,
    codec: &str,
) -> Result<Row, BoxError> {
    let dir = std::env::temp_dir().join(format!(
        "atlas-bench-{}-{}-{mode}-{writers}",
        std::process::id(),
        case.name()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let out = Command::new(std::env::current_exe()?)
        .args([
            "--child",
            "--case",
            case.name(),
            "--mode",
            mode,
            "--writers",
            &writers.to_string(),
            "--count",
            &count.to_string(),
            "--dir",
            &dir.to_string_lossy(),
            "--codec",
            codec,
        ])
        .output()?;
    let _ = std::fs::remove_dir_all(&dir);
    if !out.status.success() {
        return Err(format!(
            "child {} {mode} {writers} failed: {}",
            case.name(),
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find(|l| l.starts_with("RESULT "))
        .ok_or("child printed no result")?;
    let f: Vec<&str> = line.split_whitespace().skip(1).collect();
    if f.len() != 7 {
        return Err(format!("bad result line {line:?}").into());
    }
    Ok(Row {
        case,
        mode: mode.to_owned(),
        writers,
        secs: f[0].parse()?,
        raw: f[1].parse()?,
        datasets: f[2].parse()?,
        container: f[3].parse()?,
        hwm_kib: f[4].parse()?,
        commit: f[5].parse()?,
        cpu: f[6].parse()?,
    })
}

fn list<T: std::str::FromStr>(s: &str) -> Vec<T> {
    s.split(',').filter_map(|x| x.trim().parse().ok()).collect()
}

fn main() -> Result<(), BoxError> {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut flags: HashMap<String, String> = HashMap::new();
    let mut i = 0;
    while i < argv.len() {
        let key = argv[i].trim_start_matches("--").to_owned();
        let takes_value = !matches!(key.as_str(), "quick" | "child" | "help" | "h");
        if takes_value {
            let value = argv
                .get(i + 1)
                .cloned()
                .ok_or(format!("--{key} needs a value"))?;
            flags.insert(key, value);
            i += 2;
        } else {
            flags.insert(key, String::new());
            i += 1;
        }
    }
    if flags.contains_key("help") || flags.contains_key("h") {
        println!(
            "{}",
            include_str!("bench_write.rs")
                .lines()
                .take(20)
                .collect::<Vec<_>>()
                .join("\n")
        );
        return Ok(());
    }
    if flags.contains_key("child") {
        return child(&flags);
    }
    let quick = flags.contains_key("quick");
    let profiles: usize = flags
        .get("profiles")
        .and_then(|v| v.parse().ok())
        .unwrap_or(if quick { 2_000 } else { 20_000 });
    let grids: usize = flags
        .get("grids")
        .and_then(|v| v.parse().ok())
        .unwrap_or(if quick { 40 } else { 200 });
    let cases: Vec<Case> = flags.get("cases").map_or_else(
        || vec![Case::Argo, Case::Grid],
        |s| s.split(',').filter_map(Case::parse).collect(),
    );
    let writer_counts: Vec<usize> = flags
        .get("writers")
        .map_or_else(|| vec![1, 2, 4], |s| list(s));
    let modes: Vec<String> = flags
        .get("modes")
        .map_or_else(|| vec!["atlas".into(), "baseline".into()], |s| list(s));
    let codec = flags.get("codec").cloned().unwrap_or_else(|| "zstd".into());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "bench_write: {profiles} argo profiles, {grids} grids of {GRID}x{GRID} f32, codec {codec}, {cores} cores{}",
        if quick { " (--quick)" } else { "" }
    );

    let mut rows = Vec::new();
    for &case in &cases {
        let count = if case == Case::Argo { profiles } else { grids };
        for &writers in &writer_counts {
            for mode in &modes {
                let row = run_child(case, mode, writers, count, &codec)?;
                eprintln!("  {} {mode} x{writers}: {:.2} s", case.name(), row.secs);
                rows.push(row);
            }
        }
    }

    println!();
    println!(
        "{:<5} {:<8} {:>7} {:>8} {:>8} {:>8} {:>9} {:>11} {:>10} {:>12} {:>8}",
        "case",
        "mode",
        "writers",
        "secs",
        "commit",
        "cpu s",
        "MB/s",
        "datasets/s",
        "peak RSS",
        "container",
        "vs base"
    );
    for r in &rows {
        let mbps = r.raw as f64 / 1e6 / r.secs;
        let base = rows
            .iter()
            .find(|b| b.case == r.case && b.writers == r.writers && b.mode == "baseline");
        let ratio = base.map_or(String::from("-"), |b| format!("{:.2}x", b.secs / r.secs));
        println!(
            "{:<5} {:<8} {:>7} {:>8.2} {:>8.2} {:>8.2} {:>9.1} {:>11.0} {:>6} MiB {:>8.1} MiB {:>8}",
            r.case.name(),
            r.mode,
            r.writers,
            r.secs,
            r.commit,
            r.cpu,
            mbps,
            r.datasets as f64 / r.secs,
            r.hwm_kib / 1024,
            r.container as f64 / (1024.0 * 1024.0),
            ratio
        );
    }
    println!();
    println!(
        "secs: create to finish (commit: the finish alone); cpu s: user+system CPU of the run; \
         MB/s: raw array bytes (10^6) per second;"
    );
    println!("vs base: baseline secs / this row's secs (same case and writer count).");
    println!(
        "CPU-bound: on a machine shared with other work the writer counts cannot scale past the idle cores."
    );
    Ok(())
}
