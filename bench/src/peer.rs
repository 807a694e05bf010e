//! The workload through atlas-rust 0.17.2, the other v8 implementation.
//!
//! It reads and writes through object_store 0.13, so the bench hands it a
//! [`MeteredStore`] over object_store's local file system: the same meter as
//! the OpenDAL side, counting at the same level (one GET per range request).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use atlas_peer::{Atlas, AtlasWriter, Attr, Codec, DatasetWriter, FillValue, WriterConfig};
use futures::{StreamExt, TryStreamExt};
use object_store::ObjectStore;
use object_store::local::LocalFileSystem;
use object_store::path::Path as OsPath;

use crate::digest::Digest;
use crate::error::{BenchError, Result};
use crate::measure::{Costs, Step, measure, probe_index};
use crate::meter::{Meter, MeteredStore};
use crate::workload::{
    self, FILL, GRID, GRID_ARRAY, GRID_CHUNK, JULD_UNITS, PROFILE_ARRAYS, Profile,
};
use crate::write::{Case, Compression, Job};

/// A metered object store on `dir` (created if absent).
pub fn store(dir: &Path, meter: &Meter) -> Result<Arc<dyn ObjectStore>> {
    std::fs::create_dir_all(dir)?;
    let fs = LocalFileSystem::new_with_prefix(dir)
        .map_err(|e| BenchError::Peer(atlas_peer::Error::ObjectStore(e)))?;
    Ok(Arc::new(MeteredStore::new(Arc::new(fs), meter.clone())))
}

async fn write_profile(w: &AtlasWriter, p: Profile) -> Result<DatasetWriter> {
    let mut d = w.add_dataset(&p.name).await?;
    let n = p.levels();
    for ((name, units), values) in PROFILE_ARRAYS.iter().zip(p.arrays) {
        d.define_array::<f32>(
            name,
            vec!["N_LEVELS".into()],
            vec![n],
            None,
            Some(FillValue::Float(f64::from(FILL))),
        )
        .await?;
        d.write_array(
            name,
            vec![0],
            ndarray::Array1::from(values).into_dyn().view(),
        )
        .await?;
        d.set_array_attribute(name, "units", Attr::String((*units).into()))?;
    }
    d.define_array::<f64>("JULD", vec!["N_PROF".into()], vec![1], None, None)
        .await?;
    d.write_array("JULD", vec![0], ndarray::arr1(&[p.juld]).into_dyn().view())
        .await?;
    d.set_array_attribute("JULD", "units", Attr::String(JULD_UNITS.into()))?;
    d.set_attribute("platform_number", Attr::String(p.platform_number));
    d.set_attribute("cycle_number", Attr::Int32(p.cycle_number));
    Ok(d)
}

fn config(job: &Job) -> WriterConfig {
    WriterConfig {
        codec: match job.codec {
            Compression::Zstd => Codec::Zstd,
            Compression::Lz4 => Codec::Lz4,
            Compression::Uncompressed => Codec::Uncompressed,
        },
        ..WriterConfig::default()
    }
}

/// Adds dataset `i` of `case` to `w` and fills it (not yet finished).
async fn add(w: &AtlasWriter, case: Case, i: usize) -> Result<DatasetWriter> {
    match case {
        Case::Argo => write_profile(w, workload::profile(i)).await,
        Case::Grid => {
            let mut d = w.add_dataset(&workload::grid_name(i)).await?;
            d.define_array::<f32>(
                GRID_ARRAY,
                vec!["lat".into(), "lon".into()],
                vec![GRID, GRID],
                Some(vec![GRID_CHUNK, GRID_CHUNK]),
                Some(FillValue::Float(f64::from(FILL))),
            )
            .await?;
            let field = ndarray::Array2::from_shape_vec((GRID, GRID), workload::grid(i))?;
            d.write_array(GRID_ARRAY, vec![0, 0], field.into_dyn().view())
                .await?;
            Ok(d)
        }
        Case::Tiny => {
            let mut d = w.add_dataset(&workload::tiny_name(i)).await?;
            d.define_array::<u8>("v", vec!["x".into()], vec![1], None, None)
                .await?;
            d.write_array(
                "v",
                vec![0],
                ndarray::arr1(&[workload::tiny_value(i)]).into_dyn().view(),
            )
            .await?;
            Ok(d)
        }
    }
}

/// Runs `job` into `dir`: [`Job::tasks`] tasks share one writer. Returns how
/// long the writer's `finish` (the commit) took.
pub async fn write(dir: &Path, job: &Job) -> Result<Duration> {
    let store = store(dir, &Meter::default())?;
    let w = Arc::new(AtlasWriter::create(store, OsPath::default(), config(job)).await?);
    let mut handles = Vec::new();
    for t in 0..job.tasks {
        let (w, job) = (w.clone(), *job);
        handles.push(tokio::spawn(async move {
            for i in job.share(t) {
                add(&w, job.case, i).await?.finish().await?;
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
    Ok(Atlas::open_path(dir).await?.dataset_count())
}

/// Opens the collection in `store`; the tiny bench's unit of work.
pub async fn open(store: &Arc<dyn ObjectStore>) -> Result<usize> {
    Ok(Atlas::open(store.clone(), OsPath::default())
        .await?
        .dataset_count())
}

async fn read_one(atlas: &Atlas, index: usize, array: &str) -> Result<usize> {
    let name = atlas
        .list_datasets()
        .into_iter()
        .nth(index)
        .ok_or_else(|| BenchError::Mismatch(format!("no dataset {index}")))?;
    Ok(atlas
        .dataset(&name)?
        .read_array::<f32>(array, vec![], vec![])
        .await?
        .len())
}

/// The read steps over `store` (metered by `meter`).
pub async fn read_steps(store: &Arc<dyn ObjectStore>, meter: &Meter) -> Result<Costs> {
    let mut costs = Costs::new();
    let (atlas, c) = measure(meter, async {
        Ok(Atlas::open(store.clone(), OsPath::default()).await?)
    })
    .await?;
    costs.push((Step::Open, c));
    let datasets = atlas.dataset_count();

    let (_, c) = measure(meter, async {
        let mut arrays = 0usize;
        for name in atlas.list_datasets() {
            let d = atlas.dataset(&name)?;
            let schema = d.schema();
            arrays += schema.names().count();
            arrays += schema.attribute_names().count();
        }
        Ok(arrays)
    })
    .await?;
    costs.push((Step::Catalogue, c));

    let (stats, c) = measure(meter, async { Ok(atlas.array_stats("TEMP").await?) }).await?;
    let stats = stats.ok_or_else(|| BenchError::Mismatch("no TEMP statistics".into()))?;
    if stats.null_count != datasets.div_ceil(10) as u64 {
        return Err(BenchError::Mismatch(format!(
            "atlas-rust: TEMP null count {} for {datasets} datasets",
            stats.null_count
        )));
    }
    costs.push((Step::Stats, c));

    let (_, c) = measure(meter, async {
        Ok(atlas.array_stats_by_dataset("PSAL").await?.len())
    })
    .await?;
    costs.push((Step::StatsByDataset, c));

    let (_, c) = measure(meter, async {
        Ok(atlas
            .attributes_by_dataset(None, "platform_number")
            .await?
            .len())
    })
    .await?;
    costs.push((Step::AttrsByDataset, c));

    let (_, c) = measure(meter, async {
        Ok(atlas
            .attributes_by_dataset(Some("JULD"), "units")
            .await?
            .len())
    })
    .await?;
    costs.push((Step::ArrayAttrsByDataset, c));

    let (_, c) = measure(meter, async {
        let mut values = 0usize;
        for name in atlas.list_datasets() {
            values += atlas
                .dataset(&name)?
                .read_array::<f32>("TEMP", vec![], vec![])
                .await?
                .len();
        }
        Ok(values)
    })
    .await?;
    costs.push((Step::Sweep, c));

    let probe = probe_index(datasets);
    let (_, c) = measure(meter, read_one(&atlas, probe, "PRES")).await?;
    costs.push((Step::OneFirst, c));
    let (_, c) = measure(meter, read_one(&atlas, probe, "PRES")).await?;
    costs.push((Step::OneWarm, c));

    let (_, c) = measure(meter, async {
        let fresh = Atlas::open(store.clone(), OsPath::default()).await?;
        read_one(&fresh, probe, "PSAL").await
    })
    .await?;
    costs.push((Step::OneCold, c));

    // atlas-rust has no `read_many`: the same concurrency, by hand.
    let (_, c) = measure(meter, async {
        let fresh = Atlas::open(store.clone(), OsPath::default()).await?;
        let reads = fresh.list_datasets().into_iter().map(|name| {
            let fresh = &fresh;
            async move {
                let values = fresh
                    .dataset(&name)?
                    .read_array::<f32>("TEMP", vec![], vec![])
                    .await?;
                Ok::<_, BenchError>(values.len())
            }
        });
        let lens: Vec<usize> = futures::stream::iter(reads)
            .buffer_unordered(Step::MANY_CONCURRENCY)
            .try_collect()
            .await?;
        Ok(lens.len())
    })
    .await?;
    costs.push((Step::Many, c));
    Ok(costs)
}

/// Reads every profile of the collection at `dir` into a digest.
pub async fn digest(dir: &Path) -> Result<Digest> {
    let atlas = Atlas::open_path(dir).await?;
    let mut digest = Digest::default();
    let platforms = atlas.attributes_by_dataset(None, "platform_number").await?;
    let cycles = atlas.attributes_by_dataset(None, "cycle_number").await?;
    for name in atlas.list_datasets() {
        let d = atlas.dataset(&name)?;
        let mut arrays: [Vec<f32>; 3] = Default::default();
        for ((array, _), out) in PROFILE_ARRAYS.iter().zip(arrays.iter_mut()) {
            *out = d
                .read_array::<f32>(array, vec![], vec![])
                .await?
                .iter()
                .copied()
                .collect();
        }
        let juld = d.read_array::<f64>("JULD", vec![], vec![]).await?;
        let platform = match platforms.get(&name) {
            Some(Attr::String(s)) => s.clone(),
            other => return Err(BenchError::Mismatch(format!("platform_number {other:?}"))),
        };
        let cycle = match cycles.get(&name) {
            Some(Attr::Int32(c)) => *c,
            other => return Err(BenchError::Mismatch(format!("cycle_number {other:?}"))),
        };
        digest.add_profile(
            &name,
            [&arrays[0], &arrays[1], &arrays[2]],
            juld.iter().copied().next().unwrap_or(f64::NAN),
            &platform,
            cycle,
        );
    }
    Ok(digest)
}
