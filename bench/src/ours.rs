//! The workload through this repository's Atlas.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use atlas::{Atlas, AtlasWriter, Attr, Codec, Order, Region, WriterConfig};
use atlas_io::CountingLayer;
use futures::StreamExt;
use opendal::Operator;

use crate::digest::Digest;
use crate::error::{BenchError, Result};
use crate::measure::{Costs, Step, measure, probe_index};
use crate::meter::{Meter, MeterLayer, Reading};
use crate::workload::{
    self, FILL, GRID, GRID_ARRAY, GRID_CHUNK, JULD_UNITS, PROFILE_ARRAYS, Profile,
};
use crate::write::{Case, Compression, Job};

/// An fs operator on `dir`, metered by `meter` and counted by atlas-io's
/// `CountingLayer` (whose counts the bench checks against the meter's).
pub fn operator(dir: &Path, meter: &Meter) -> Result<(Operator, CountingLayer)> {
    let counting = CountingLayer::new();
    let op = Operator::new(opendal::services::Fs::default().root(&dir.to_string_lossy()))?
        .layer(counting.clone())
        .layer(MeterLayer::new(meter.clone()));
    Ok((op, counting))
}

/// Checks that atlas-io's `CountingLayer` saw what the meter saw.
pub fn check_counts(counting: &CountingLayer, io: &Reading) -> Result {
    let c = counting.stats().snapshot();
    if (c.reads, c.stats, c.bytes_read) != (io.reads, io.stats, io.bytes_read) {
        return Err(BenchError::Mismatch(format!(
            "CountingLayer saw {} reads, {} stats, {} bytes; the meter {} reads, {} stats, {} bytes",
            c.reads, c.stats, c.bytes_read, io.reads, io.stats, io.bytes_read
        )));
    }
    Ok(())
}

/// Adds profile `p` to `w` with every array and attribute (not yet finished).
pub(crate) fn write_profile(w: &AtlasWriter, p: Profile) -> Result<atlas::DatasetWriter> {
    let mut d = w.add_dataset(&p.name)?;
    let n = p.levels() as u64;
    for ((name, units), values) in PROFILE_ARRAYS.iter().zip(p.arrays) {
        d.define_array::<f32>(name, &["N_LEVELS"], &[n], None, Some(FILL))?;
        d.write_array(name, &[0], ndarray::Array1::from(values).into_dyn().view())?;
        d.set_array_attribute(name, "units", *units)?;
    }
    d.define_array::<f64>("JULD", &["N_PROF"], &[1], None, None)?;
    d.write_array("JULD", &[0], ndarray::arr1(&[p.juld]).into_dyn().view())?;
    d.set_array_attribute("JULD", "units", JULD_UNITS)?;
    d.set_attribute("platform_number", p.platform_number)?;
    d.set_attribute("cycle_number", Attr::Int32(p.cycle_number))?;
    Ok(d)
}

fn config(job: &Job) -> WriterConfig {
    WriterConfig::default()
        .codec(match job.codec {
            Compression::Zstd => Codec::Zstd,
            Compression::Lz4 => Codec::Lz4,
            Compression::Uncompressed => Codec::Uncompressed,
        })
        .dataset_index(job.index)
}

/// Adds dataset `i` of `case` to `w` and fills it (not yet finished).
fn add(w: &AtlasWriter, case: Case, i: usize) -> Result<atlas::DatasetWriter> {
    match case {
        Case::Argo => write_profile(w, workload::profile(i)),
        Case::Grid => {
            let mut d = w.add_dataset(&workload::grid_name(i))?;
            let (side, chunk) = (GRID as u64, GRID_CHUNK as u64);
            d.define_array::<f32>(
                GRID_ARRAY,
                &["lat", "lon"],
                &[side, side],
                Some(&[chunk, chunk]),
                Some(FILL),
            )?;
            let field = ndarray::Array2::from_shape_vec((GRID, GRID), workload::grid(i))?;
            d.write_array(GRID_ARRAY, &[0, 0], field.into_dyn().view())?;
            Ok(d)
        }
        Case::Tiny => {
            let mut d = w.add_dataset(&workload::tiny_name(i))?;
            d.define_array::<u8>("v", &["x"], &[1], None, None)?;
            d.write_array(
                "v",
                &[0],
                ndarray::arr1(&[workload::tiny_value(i)]).into_dyn().view(),
            )?;
            Ok(d)
        }
    }
}

/// Runs `job` into `dir`: [`Job::tasks`] tasks share one writer. Returns how
/// long the writer's `finish` (the commit) took.
pub async fn write(dir: &Path, job: &Job) -> Result<Duration> {
    let w = Arc::new(AtlasWriter::create(dir, &config(job)).await?);
    let mut handles = Vec::new();
    for t in 0..job.tasks {
        let (w, job) = (w.clone(), *job);
        handles.push(tokio::spawn(async move {
            for i in job.share(t) {
                add(&w, job.case, i)?.finish().await?;
            }
            Ok::<_, BenchError>(())
        }));
    }
    for h in handles {
        h.await.map_err(|e| BenchError::Child(e.to_string()))??;
    }
    let w = Arc::try_unwrap(w).map_err(|_| BenchError::Child("writer still shared".into()))?;
    let commit = Instant::now();
    w.finish().await?;
    Ok(commit.elapsed())
}

/// The number of datasets of the collection at `dir` (a written collection opens).
pub async fn count(dir: &Path) -> Result<usize> {
    Ok(Atlas::open(dir, &atlas::OpenOptions::default())
        .await?
        .dataset_count()
        .await?)
}

/// Opens `dir` through `op` with `options`; the tiny bench's unit of work.
pub async fn open(op: &Operator, options: &atlas::OpenOptions) -> Result<usize> {
    Ok(Atlas::open((op.clone(), ""), options)
        .await?
        .dataset_count()
        .await?)
}

async fn read_one(atlas: &Atlas, index: usize, array: &str) -> Result<usize> {
    let name = atlas
        .dataset_names()
        .await?
        .get(index)
        .cloned()
        .ok_or_else(|| BenchError::Mismatch(format!("no dataset {index}")))?;
    Ok(atlas
        .dataset(&name)
        .await?
        .read_array::<f32>(array, Region::all())
        .await?
        .len())
}

/// The read steps over `op` (metered by `meter`), opened with `options`.
pub async fn read_steps(
    op: &Operator,
    meter: &Meter,
    counting: &CountingLayer,
    options: &atlas::OpenOptions,
) -> Result<Costs> {
    let mut costs = Costs::new();
    let mut record = |step: Step, cost: crate::measure::Cost| {
        trace(meter, step, &cost);
        costs.push((step, cost));
    };
    counting.stats().reset();
    let (atlas, c) = measure(meter, async {
        Ok(Atlas::open((op.clone(), ""), options).await?)
    })
    .await?;
    check_counts(counting, &c.io)?;
    record(Step::Open, c);
    let datasets = atlas.dataset_count().await?;

    let (_, c) = measure(meter, async {
        let mut arrays = 0usize;
        for d in atlas.datasets().await? {
            let schema = d.schema();
            arrays += schema.arrays().count();
            arrays += schema.attributes().count();
            std::hint::black_box(d.name());
        }
        Ok(arrays)
    })
    .await?;
    record(Step::Catalogue, c);

    let (stats, c) = measure(meter, async { Ok(atlas.array_stats("TEMP").await?) }).await?;
    let stats = stats.ok_or_else(|| BenchError::Mismatch("no TEMP statistics".into()))?;
    if stats.null_count != datasets.div_ceil(10) as u64 {
        return Err(BenchError::Mismatch(format!(
            "TEMP null count {} for {datasets} datasets",
            stats.null_count
        )));
    }
    record(Step::Stats, c);

    let (rows, c) = measure(meter, async {
        Ok(atlas.array_stats_by_dataset("PSAL").await?.len())
    })
    .await?;
    expect_count("PSAL statistics", rows, datasets)?;
    record(Step::StatsByDataset, c);

    let (rows, c) = measure(meter, async {
        Ok(atlas
            .attributes_by_dataset(None, "platform_number")
            .await?
            .len())
    })
    .await?;
    expect_count("platform numbers", rows, datasets)?;
    record(Step::AttrsByDataset, c);

    let (rows, c) = measure(meter, async {
        Ok(atlas
            .attributes_by_dataset(Some("JULD"), "units")
            .await?
            .len())
    })
    .await?;
    expect_count("JULD units", rows, datasets)?;
    record(Step::ArrayAttrsByDataset, c);

    let (_, c) = measure(meter, async {
        let mut values = 0usize;
        for d in atlas.datasets().await? {
            values += d.read_array::<f32>("TEMP", Region::all()).await?.len();
        }
        Ok(values)
    })
    .await?;
    record(Step::Sweep, c);

    let probe = probe_index(datasets);
    let (_, c) = measure(meter, read_one(&atlas, probe, "PRES")).await?;
    record(Step::OneFirst, c);
    let (_, c) = measure(meter, read_one(&atlas, probe, "PRES")).await?;
    record(Step::OneWarm, c);

    counting.stats().reset();
    let (_, c) = measure(meter, async {
        let fresh = Atlas::open((op.clone(), ""), options).await?;
        read_one(&fresh, probe, "PSAL").await
    })
    .await?;
    check_counts(counting, &c.io)?;
    record(Step::OneCold, c);

    counting.stats().reset();
    let (read, c) = measure(meter, async {
        let fresh = Atlas::open((op.clone(), ""), options).await?;
        let mut stream = fresh.read_many(
            fresh.datasets().await?,
            "TEMP",
            Region::all(),
            Step::MANY_CONCURRENCY,
            Order::AsCompleted,
        );
        let mut read = 0usize;
        while let Some((_, array)) = stream.next().await {
            array?;
            read += 1;
        }
        Ok(read)
    })
    .await?;
    check_counts(counting, &c.io)?;
    expect_count("TEMP arrays", read, datasets)?;
    record(Step::Many, c);
    Ok(costs)
}

/// With `ATLAS_BENCH_TRACE` set, prints when each request of `step` ran.
fn trace(meter: &Meter, step: Step, cost: &crate::measure::Cost) {
    let timeline = meter.timeline();
    if !timeline.is_empty() {
        eprintln!(
            "trace {}: {:.1} ms; requests (ms) {timeline}",
            step.key(),
            cost.wall.as_secs_f64() * 1e3
        );
    }
}

fn expect_count(what: &str, got: usize, want: usize) -> Result {
    if got == want {
        Ok(())
    } else {
        Err(BenchError::Mismatch(format!(
            "{got} {what} for {want} datasets"
        )))
    }
}

/// Reads every profile of the collection at `dir` into a digest.
pub async fn digest(dir: &Path) -> Result<Digest> {
    let atlas = Atlas::open(dir, &atlas::OpenOptions::default()).await?;
    let mut digest = Digest::default();
    let platforms = atlas.attributes_by_dataset(None, "platform_number").await?;
    let cycles = atlas.attributes_by_dataset(None, "cycle_number").await?;
    for (i, d) in atlas.datasets().await?.into_iter().enumerate() {
        let mut arrays: [Vec<f32>; 3] = Default::default();
        for ((name, _), out) in PROFILE_ARRAYS.iter().zip(arrays.iter_mut()) {
            *out = d
                .read_array::<f32>(name, Region::all())
                .await?
                .into_raw_vec_and_offset()
                .0;
        }
        let juld = d.read_array::<f64>("JULD", Region::all()).await?;
        let platform = match platforms.get(i) {
            Some((name, Attr::String(s))) if name == d.name() => s.clone(),
            other => return Err(BenchError::Mismatch(format!("platform_number {other:?}"))),
        };
        let cycle = match cycles.get(i) {
            Some((name, Attr::Int32(c))) if name == d.name() => *c,
            other => return Err(BenchError::Mismatch(format!("cycle_number {other:?}"))),
        };
        digest.add_profile(
            d.name(),
            [&arrays[0], &arrays[1], &arrays[2]],
            juld.iter().copied().next().unwrap_or(f64::NAN),
            &platform,
            cycle,
        );
    }
    Ok(digest)
}
