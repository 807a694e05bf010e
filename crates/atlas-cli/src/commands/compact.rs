//! `atlas compact`: a set's run of small members rewritten into fewer big
//! ones, committed in the run's place (`Atlas::compact`); with `--sort-by`,
//! the whole set rewritten in the order of keys.

use atlas::{CompactOptions, WriterConfig};
use serde_json::json;

use super::Ctx;
use super::members::id_seed;
use crate::cli::CompactArgs;
use crate::exit::{CliResult, Context as _};
use crate::location::Access;
use crate::{output, render};

/// Runs `atlas compact`.
pub async fn run(ctx: &Ctx, args: &CompactArgs) -> CliResult {
    let (loc, set) = ctx.open(&args.collection, Access::Write).await?;
    let (ms, nonce) = id_seed(0);
    let options = CompactOptions::default()
        .target_datasets(args.target_datasets)
        .writer(WriterConfig::default())
        .ids(ms, nonce)
        .sort_by(args.sort_by.clone().unwrap_or_default());
    let outcome = set.compact(&options).await.at(loc.display())?;
    if ctx.json {
        output::json(&match &outcome {
            None => json!({ "set": loc.display(), "compacted": false }),
            Some(o) => json!({
                "set": loc.display(),
                "compacted": true,
                "replaced": o.replaced,
                "written": o.written,
                "datasets": o.datasets,
                "generation": o.commit.generation,
                "attempts": o.commit.attempts,
            }),
        });
        return Ok(());
    }
    if ctx.quiet {
        return Ok(());
    }
    match outcome {
        None => println!(
            "{}: nothing to compact (no run of two or more members under {} live datasets)",
            loc.display(),
            args.target_datasets
        ),
        Some(o) => println!(
            "{}: {} replaced by {} ({} copied), generation {}",
            loc.display(),
            render::count(o.replaced.len(), "member", "members"),
            render::count(o.written.len(), "member", "members"),
            render::count(
                usize::try_from(o.datasets).unwrap_or(usize::MAX),
                "dataset",
                "datasets"
            ),
            o.commit.generation
        ),
    }
    Ok(())
}
