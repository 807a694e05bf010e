//! `cargo xtask bench-read DIR ARRAY`: reads one float32 array of every live
//! dataset, one dataset after another, and prints the time. The Python
//! package's benchmark (`crates/atlas-py/bench/bench.py`) does the same reads
//! through the binding, so the two times give the binding's overhead.

use std::path::Path;
use std::time::Instant;

use atlas::{Atlas, Region};

type Result<T = (), E = String> = std::result::Result<T, E>;

/// Opens the collection at `dir` and reads `array` (float32) of every live dataset.
pub fn run(dir: &Path, array: &str) -> Result {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let started = Instant::now();
    let (datasets, elements) = runtime
        .block_on(async {
            let atlas = Atlas::open(dir, &atlas::OpenOptions::default()).await?;
            let mut datasets = 0usize;
            let mut elements = 0usize;
            for view in atlas.datasets() {
                if view.array_meta(array).is_none() {
                    continue;
                }
                elements += view.read_array::<f32>(array, Region::all()).await?.len();
                datasets += 1;
            }
            Ok::<_, atlas::AtlasError>((datasets, elements))
        })
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    let elapsed = started.elapsed();
    println!(
        "rust: open + read {array} of {datasets} datasets ({elements} values) in {:.3} s",
        elapsed.as_secs_f64()
    );
    Ok(())
}
