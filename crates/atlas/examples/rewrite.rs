//! Copies every live dataset of a collection into a new one, through the
//! public API (`Atlas` reader + `AtlasWriter`): deleted datasets are dropped,
//! ordinals become dense, everything else is kept.
//!
//! `cargo run --release -p atlas --example rewrite -- <src-dir> <dst-dir> [--codec zstd|lz4|none] [--zstd-level N]`

use atlas::{Atlas, AtlasWriter, Codec, WriterConfig};

fn usage() -> String {
    "usage: rewrite <src-dir> <dst-dir> [--codec zstd|lz4|none] [--zstd-level N]".to_owned()
}

fn parse_args() -> Result<(String, String, WriterConfig), String> {
    let mut positional = Vec::new();
    let mut config = WriterConfig::default();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--codec" => {
                config = config.codec(match args.next().as_deref() {
                    Some("zstd") => Codec::Zstd,
                    Some("lz4") => Codec::Lz4,
                    Some("none") | Some("uncompressed") => Codec::Uncompressed,
                    other => return Err(format!("unknown codec {other:?}\n{}", usage())),
                })
            }
            "--zstd-level" => {
                let level = args.next().and_then(|v| v.parse().ok()).ok_or_else(usage)?;
                config = config.zstd_level(level);
            }
            "-h" | "--help" => return Err(usage()),
            _ if arg.starts_with("--") => return Err(format!("unknown option {arg}\n{}", usage())),
            _ => positional.push(arg),
        }
    }
    match <[String; 2]>::try_from(positional) {
        Ok([src, dst]) => Ok((src, dst, config)),
        Err(_) => Err(usage()),
    }
}

#[tokio::main]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("rewrite: {e}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let (src, dst, config) = parse_args()?;
    let started = std::time::Instant::now();
    let source = Atlas::open(&src, &atlas::OpenOptions::default()).await?;
    let members = source.open_members().await?;
    for warning in members.iter().flat_map(|m| m.mask_warnings()) {
        eprintln!("warning: {warning}");
    }
    let writer = AtlasWriter::create(&dst, &config).await?;
    let total = source.dataset_count().await?;
    let step = (total / 20).max(1);
    let summary = atlas::rewrite(&source, writer, |done, total| {
        if done % step == 0 || done == total {
            eprintln!("{done}/{total} datasets");
        }
    })
    .await?;
    println!(
        "{src} -> {dst}: {} datasets ({} deleted left behind), {} -> {} bytes, {} segments, {:.2} s",
        summary.datasets,
        members
            .iter()
            .map(|m| m.dataset_count_total())
            .sum::<usize>()
            - total,
        members.iter().map(|m| m.container_bytes()).sum::<u64>(),
        summary.container_bytes,
        summary.segments.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
