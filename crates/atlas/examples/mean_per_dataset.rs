//! The Rust sweep the Python cluster numbers are compared with: the mean of a
//! float32 array per dataset (fill values left out) over every live dataset
//! of a collection or set, through `Atlas::read_many` in one process.
//!
//! `cargo run --release -p atlas --example mean_per_dataset -- DIR [ARRAY]`
//! (ARRAY defaults to TEMP). Prints the open and sweep times, the datasets and
//! values read, and a checksum of the means.

use std::time::Instant;

use atlas::{ArrayData, Atlas, OpenOptions, Order, Region, Value};
use futures::StreamExt;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let mut args = std::env::args().skip(1);
    let dir = args.next().ok_or("usage: mean_per_dataset DIR [ARRAY]")?;
    let array = args.next().unwrap_or_else(|| "TEMP".to_owned());
    let started = Instant::now();
    let set = Atlas::open(dir.as_str(), &OpenOptions::default()).await?;
    let datasets: Vec<_> = set
        .datasets()
        .await?
        .into_iter()
        .filter(|d| d.array_meta(&array).is_some())
        .collect();
    let opened = started.elapsed();
    let mut reads = set.read_many(datasets, &array, Region::all(), 32, Order::AsGiven);
    let (mut count, mut values, mut checksum) = (0usize, 0usize, 0f64);
    while let Some((_, read)) = reads.next().await {
        let read = read?;
        let fill = match read.fill() {
            Some(Value::Float(f)) => Some(*f as f32),
            _ => None,
        };
        let ArrayData::Float32(data) = read.into_data() else {
            return Err(format!("{array} is not float32").into());
        };
        let (mut sum, mut n) = (0f64, 0usize);
        for &v in &data {
            if Some(v) != fill && !v.is_nan() {
                sum += f64::from(v);
                n += 1;
            }
        }
        if n > 0 {
            checksum += sum / n as f64;
        }
        values += data.len();
        count += 1;
    }
    let total = started.elapsed();
    println!(
        "rust read_many: mean {array} of {count} datasets ({values} values): open {:.3} s, total {:.3} s (checksum {checksum:.6})",
        opened.as_secs_f64(),
        total.as_secs_f64()
    );
    Ok(())
}
