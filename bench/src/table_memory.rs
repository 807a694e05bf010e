//! `atlas-bench table-memory DIR [ARRAY,ARRAY...] [--no-index] [--index-cache BYTES]`:
//! the long table of arrays (default `PRES,TEMP,PSAL`) over every dataset of the collection at
//! DIR, built as `to_arrow` builds it (`Atlas::table`, every batch kept), and
//! what that cost in memory: the growth of this process's resident peak
//! (`VmHWM`, reset just before) against the Arrow memory of the table it
//! returns. The ratio is what reading costs beyond the result itself
//! (decoded blocks in flight, the catalogue, index columns). The resident
//! peak also counts the pages of this program's code that the read runs
//! for the first time (read in from disk, shared and reclaimable: about
//! 20 MB of a 40 MB table), so the line gives the anonymous memory's peak
//! too (`RssAnon`, sampled every millisecond), and, built with feature
//! `heap-peak`, the live heap's peak (every allocation counted, so exact;
//! the count slows allocation, so it is off for the other steps): what the
//! read holds at its worst, without what the allocator keeps of buffers
//! already freed, which the anonymous peak includes.
//! Run it on a collection `atlas-bench` wrote (e.g. `WORK/ours-profiles-1`).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use atlas::{Atlas, OpenOptions, TableOptions};
use futures::TryStreamExt;

use crate::error::{BenchError, Result};

/// Runs the measurement on `args` (`DIR [ARRAYS] [--no-index]
/// [--index-cache BYTES]`) and prints one line.
pub fn run(args: &[String]) -> Result {
    let usage = || BenchError::Usage(USAGE.into());
    let mut options = OpenOptions::default();
    let mut positional = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--no-index" => options = options.dataset_index(false),
            "--index-cache" => {
                let bytes = args.next().and_then(|b| b.parse().ok()).ok_or_else(usage)?;
                options = options.index_cache_bytes(bytes);
            }
            _ => positional.push(arg.as_str()),
        }
    }
    let mut positional = positional.into_iter();
    let dir = positional.next().ok_or_else(usage)?;
    let arrays: Vec<String> = positional
        .next()
        .unwrap_or("PRES,TEMP,PSAL")
        .split(',')
        .map(str::to_owned)
        .collect();
    crate::runtime()?.block_on(measure(Path::new(dir), &arrays, &options))
}

const USAGE: &str = "table-memory DIR [ARRAY,ARRAY...] [--no-index] [--index-cache BYTES]";

async fn measure(dir: &Path, arrays: &[String], options: &OpenOptions) -> Result {
    let atlas = Atlas::open(dir, options).await?;
    // The catalogue is in memory once opened; the peak is measured from here.
    let before_kib = crate::vm_rss_kib();
    let anon_before_kib = crate::rss_anon_kib();
    crate::reset_peak();
    let anon = AnonPeak::start();
    crate::reset_heap_peak();
    let started = Instant::now();
    let stream = atlas
        .table(&TableOptions::new(arrays.iter().cloned()))
        .await?;
    let batches: Vec<atlas::RecordBatch> = stream.try_collect().await?;
    let wall = started.elapsed();
    let heap_growth = crate::heap_peak_since();
    let peak_kib = crate::vm_hwm_kib();
    let anon_peak_kib = anon.finish();
    let rows: usize = batches.iter().map(atlas::RecordBatch::num_rows).sum();
    let table: usize = batches
        .iter()
        .map(atlas::RecordBatch::get_array_memory_size)
        .sum();
    let growth = peak_kib.saturating_sub(before_kib).saturating_mul(1024);
    let anon_growth = anon_peak_kib
        .saturating_sub(anon_before_kib)
        .saturating_mul(1024);
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    let ratio = |b: u64| b as f64 / table.max(1) as f64;
    let heap = heap_growth.map_or_else(
        || "live heap not counted (feature heap-peak)".to_owned(),
        |b| format!("live heap {:.1} MiB ({:.2}x)", mib(b), ratio(b)),
    );
    println!(
        "table of {} over {} datasets: {rows} rows, {:.1} MiB of Arrow; resident peak grew {:.1} MiB \
         ({:.2}x the table), anonymous memory {:.1} MiB ({:.2}x), {heap} in {:.0} ms",
        arrays.join(","),
        atlas.dataset_count().await?,
        mib(table as u64),
        mib(growth),
        ratio(growth),
        mib(anon_growth),
        ratio(anon_growth),
        wall.as_secs_f64() * 1e3
    );
    drop(batches);
    Ok(())
}

/// The largest anonymous resident set seen while it runs, sampled every
/// millisecond on a thread of its own (Linux keeps no peak of it).
struct AnonPeak {
    stop: Arc<AtomicBool>,
    sampler: std::thread::JoinHandle<u64>,
}

impl AnonPeak {
    fn start() -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let sampler = std::thread::spawn(move || {
            let mut peak = crate::rss_anon_kib();
            while !stopped.load(Ordering::Relaxed) {
                peak = peak.max(crate::rss_anon_kib());
                std::thread::sleep(Duration::from_millis(1));
            }
            peak.max(crate::rss_anon_kib())
        });
        Self { stop, sampler }
    }

    /// The peak in KiB.
    fn finish(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.sampler.join().unwrap_or(0)
    }
}
