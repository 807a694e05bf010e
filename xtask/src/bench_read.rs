//! `cargo xtask bench-read DIR ARRAYS`: reads float32 arrays (`TEMP` or
//! `TEMP,PSAL,PRES`) of every live dataset, one dataset after another, and
//! prints the time. The Python package's benchmarks
//! (`crates/atlas-py/bench/bench.py`, the collection-wide views) do the same
//! reads through the binding, so the times give the binding's overhead. Run
//! it in release (`cargo run --release -p xtask -- bench-read ...`): the
//! `cargo xtask` alias builds in the dev profile.

use std::path::Path;
use std::time::Instant;

use atlas::{Atlas, Order, Region};
use futures::StreamExt;

type Result<T = (), E = String> = std::result::Result<T, E>;

/// Reads in flight in the `read_many` pass (what the Python package's `read_many` uses).
const CONCURRENCY: usize = 32;

/// Opens the collection at `dir` and reads each of `arrays` (float32,
/// comma-separated) of every live dataset, one array after the other: once
/// one dataset at a time, once through `read_many` (each on a fresh handle).
pub fn run(dir: &Path, arrays: &str) -> Result {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    for many in [false, true] {
        let started = Instant::now();
        let (datasets, elements) = runtime
            .block_on(sweep(dir, arrays, many))
            .map_err(|e| format!("{}: {e}", dir.display()))?;
        println!(
            "rust{}: open + read {arrays} of {datasets} datasets ({elements} values) in {:.3} s",
            if many { " read_many" } else { "" },
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// `(datasets, values)` read: one `read_array` after another, or `read_many`.
async fn sweep(dir: &Path, arrays: &str, many: bool) -> atlas::Result<(usize, usize)> {
    let atlas = Atlas::open(dir, &atlas::OpenOptions::default()).await?;
    let mut datasets = 0usize;
    let mut elements = 0usize;
    for array in arrays.split(',') {
        let declaring: Vec<_> = atlas
            .datasets()
            .await?
            .into_iter()
            .filter(|v| v.array_meta(array).is_some())
            .collect();
        if many {
            let mut reads =
                atlas.read_many(declaring, array, Region::all(), CONCURRENCY, Order::AsGiven);
            while let Some((_, read)) = reads.next().await {
                elements += read?.data().len();
                datasets += 1;
            }
        } else {
            for view in declaring {
                elements += view.read_array::<f32>(array, Region::all()).await?.len();
                datasets += 1;
            }
        }
    }
    Ok((datasets, elements))
}
