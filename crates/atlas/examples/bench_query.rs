//! A box-and-window query over Argo-like profiles: `Atlas::select` (segment
//! footers only) against reading every dataset's LATITUDE, LONGITUDE and JULD
//! arrays to answer the same question.
//!
//! Writes the collection once under `target/bench-query/argo-N` (kept between
//! runs), then for each store (local disk; the same disk behind 20 ms of
//! injected latency per request) and each method, runs the query cold (a fresh
//! open; the open is timed apart) and warm (again on the same handle), and
//! prints time, requests and bytes read.
//!
//! `cargo run --release -p atlas --example bench_query [-- --profiles N] [--latency-ms MS]`

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use atlas::Value;
use atlas::{Atlas, AtlasWriter, Predicate, Region, Timestamp, WriterConfig};
use atlas_io::{CountingLayer, RequestStats};
use futures::StreamExt;
use opendal::Operator;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const QUERY: &str = "LATITUDE between -10 10 and LONGITUDE between -60 0 and JULD between 2021-01-01 2021-06-30T23:59:59";
const FILL: f64 = 99999.0;
const T0: i64 = 1_577_836_800_000_000_000;
const DAY: f64 = 86_400e9;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
}

async fn write_profiles(dir: &Path, n: usize) -> Result<(), BoxError> {
    let writer = AtlasWriter::create(dir, &WriterConfig::default()).await?;
    let mut rng = Rng(7);
    for i in 0..n {
        let mut ds =
            writer.add_dataset(&format!("R{:07}_{:03}.nc", 6_900_000 + i / 100, i % 100))?;
        for (name, lo, hi) in [("LATITUDE", -80.0, 80.0), ("LONGITUDE", -180.0, 180.0)] {
            let v = lo + (hi - lo) * rng.next();
            ds.define_array::<f64>(name, &["N_PROF"], &[1], None, Some(FILL))?;
            ds.write_array(name, &[0], ndarray::arr1(&[v]).into_dyn().view())?;
        }
        let t = T0 + (rng.next() * 5.0 * 365.0 * DAY) as i64;
        ds.define_array::<Timestamp>("JULD", &["N_PROF"], &[1], None, None)?;
        ds.write_array(
            "JULD",
            &[0],
            ndarray::arr1(&[Timestamp(t)]).into_dyn().view(),
        )?;
        let levels = 20 + (rng.next() * 100.0) as usize;
        let temps: Vec<f32> = (0..levels).map(|l| 25.0 - l as f32 * 0.2).collect();
        ds.define_array::<f32>(
            "TEMP",
            &["N_LEVELS"],
            &[levels as u64],
            None,
            Some(FILL as f32),
        )?;
        ds.write_array("TEMP", &[0], ndarray::Array1::from(temps).into_dyn().view())?;
        ds.set_attribute(
            "platform_number",
            format!("{}", 6_901_000 + i % 50).as_str(),
        )?;
        ds.finish().await?;
    }
    writer.finish().await?;
    Ok(())
}

/// The query answered by reading the three arrays of every live dataset.
async fn brute_force(atlas: &Atlas) -> Result<Vec<String>, BoxError> {
    let p = Predicate::parse(QUERY)?;
    let Predicate::And(parts) = p else {
        return Err("the query is a conjunction".into());
    };
    let bound = |i: usize| match parts.get(i) {
        Some(Predicate::Between { lo, hi, .. }) => Ok((lo.clone(), hi.clone())),
        _ => Err::<_, BoxError>("between".into()),
    };
    let (lat, lon, time) = (bound(0)?, bound(1)?, bound(2)?);
    let as_f64 = |v: &Value| match v {
        Value::Int(i) => *i as f64,
        Value::Float(x) => *x,
        _ => f64::NAN,
    };
    let as_ns = |v: &Value| match v {
        Value::Timestamp(t) => t.nanos(),
        _ => 0,
    };
    let names: Vec<atlas::SmolStr> = atlas.dataset_names().await?;
    let checks = futures::stream::iter(names.into_iter().map(|name| {
        let (lat, lon, time) = (&lat, &lon, &time);
        async move {
            let ds = atlas.dataset(&name).await?;
            let (la, lo, t) = futures::try_join!(
                ds.read_array::<f64>("LATITUDE", Region::all()),
                ds.read_array::<f64>("LONGITUDE", Region::all()),
                ds.read_array::<Timestamp>("JULD", Region::all()),
            )?;
            let inside = |v: &ndarray::ArrayD<f64>, b: &(Value, Value)| {
                let vals: Vec<f64> = v.iter().copied().filter(|x| *x != FILL).collect();
                !vals.is_empty()
                    && vals
                        .iter()
                        .all(|x| *x >= as_f64(&b.0) && *x <= as_f64(&b.1))
            };
            let keep = inside(&la, lat)
                && inside(&lo, lon)
                && t.iter()
                    .all(|x| x.0 >= as_ns(&time.0) && x.0 <= as_ns(&time.1));
            Ok::<_, BoxError>(keep.then_some(name))
        }
    }))
    .buffered(64)
    .collect::<Vec<_>>()
    .await;
    let mut out = Vec::new();
    for c in checks {
        if let Some(name) = c? {
            out.push(name.to_string());
        }
    }
    Ok(out)
}

fn line(store: &str, method: &str, phase: &str, took: Duration, stats: &RequestStats) {
    let c = stats.snapshot();
    println!(
        "{store:<12} {method:<22} {phase:<5} {:>10.1} ms {:>8} requests {:>12} bytes",
        took.as_secs_f64() * 1e3,
        c.requests(),
        c.bytes_read
    );
    stats.reset();
}

async fn run(dir: &Path, latency: Option<Duration>) -> Result<(), BoxError> {
    let store = match latency {
        None => "local disk".to_owned(),
        Some(l) => format!("{} ms store", l.as_millis()),
    };
    let mut answers = Vec::new();
    for method in ["select (footers)", "read every array"] {
        let layer = CountingLayer::new();
        let (stats, faults) = (layer.stats(), layer.faults());
        if let Some(l) = latency {
            faults.set_latency(l);
        }
        let fs = opendal::services::Fs::default().root(&dir.to_string_lossy());
        let op = Operator::new(fs)?.layer(layer);
        let started = Instant::now();
        let atlas = Atlas::open((op, ""), &atlas::OpenOptions::default()).await?;
        line(&store, method, "open", started.elapsed(), &stats);
        for phase in ["cold", "warm"] {
            let started = Instant::now();
            let selected = if method.starts_with("select") {
                atlas.select(&Predicate::parse(QUERY)?).await?
            } else {
                brute_force(&atlas).await?
            };
            line(&store, method, phase, started.elapsed(), &stats);
            answers.push(selected);
        }
        if method.starts_with("select") {
            // How much of a warm select is the facade's per-dataset statistics listing.
            let started = Instant::now();
            futures::try_join!(
                atlas.array_stats_by_dataset("LATITUDE"),
                atlas.array_stats_by_dataset("LONGITUDE"),
                atlas.array_stats_by_dataset("JULD"),
            )?;
            line(
                &store,
                "  of which stats lists",
                "warm",
                started.elapsed(),
                &stats,
            );
        }
    }
    let Some((first, others)) = answers.split_first() else {
        return Err("no method ran".into());
    };
    if others.iter().any(|a| a != first) {
        return Err("the methods disagree".into());
    }
    println!("{store:<12} both methods select {} profiles", first.len());
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse::<u64>().ok())
    };
    let profiles = flag("--profiles").unwrap_or(30_000) as usize;
    let latency = Duration::from_millis(flag("--latency-ms").unwrap_or(20));
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/bench-query")
        .join(format!("argo-{profiles}"));
    if !dir.join(atlas::CONTAINER_FILE).exists() {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        let started = Instant::now();
        write_profiles(&dir, profiles).await?;
        println!(
            "wrote {profiles} profiles in {:.1} s",
            started.elapsed().as_secs_f64()
        );
    }
    let bytes = std::fs::metadata(dir.join(atlas::CONTAINER_FILE))?.len();
    println!("collection: {profiles} profiles, {bytes} bytes; query: {QUERY}");
    run(&dir, None).await?;
    run(&dir, Some(latency)).await?;
    Ok(())
}
