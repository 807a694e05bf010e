//! `atlas index`: writes the dataset index (`data.atlas.index`) beside a
//! collection's container, or beside every member of a set, so that
//! collection-wide questions read a few Parquet columns instead of the
//! segment footers. Works on any v8 collection, whoever wrote it.

use std::time::Instant;

use atlas::{INDEX_FILE, IndexOptions, IndexReport};
use serde_json::json;

use super::Ctx;
use crate::cli::CollectionArg;
use crate::exit::{CliResult, Context as _};
use crate::location::Access;
use crate::{output, render};

/// Runs `atlas index`.
pub async fn run(ctx: &Ctx, args: &CollectionArg) -> CliResult {
    let (loc, atlas) = ctx.open(&args.collection, Access::Write).await?;
    let started = Instant::now();
    let reports = atlas
        .write_index(&IndexOptions::default())
        .await
        .at(loc.display())?;
    let elapsed = started.elapsed();
    let bytes: u64 = reports.iter().map(|r| r.bytes).sum();
    let datasets: u64 = reports.iter().map(|r| r.datasets).sum();
    let container_bytes: u64 = atlas.members().iter().map(|m| m.bytes).sum::<u64>().max(
        atlas
            .lone_member()
            .map(|m| m.container_bytes())
            .unwrap_or_default(),
    );
    if ctx.json {
        output::json(&json!({
            "collection": loc.display(),
            "index": INDEX_FILE,
            "containers": reports.len(),
            "datasets": datasets,
            "bytes": bytes,
            "container_bytes": container_bytes,
            "seconds": elapsed.as_secs_f64(),
            "reports": reports.iter().map(report_json).collect::<Vec<_>>(),
        }));
    } else if !ctx.quiet {
        let mut out = format!(
            "{}: wrote {INDEX_FILE} beside {}: {} of {} in {}, {} ({:.1}% of the data)\n",
            loc.display(),
            render::count(reports.len(), "container", "containers"),
            render::count(datasets as usize, "dataset", "datasets"),
            render::count(
                reports.iter().map(|r| r.variables.len()).max().unwrap_or(0),
                "variable",
                "variables"
            ),
            render::count(
                reports.iter().map(|r| r.row_groups).sum(),
                "row group",
                "row groups"
            ),
            render::bytes(bytes),
            100.0 * bytes as f64 / container_bytes.max(1) as f64,
        );
        let left_out: std::collections::BTreeSet<&str> = reports
            .iter()
            .flat_map(|r| r.variables_left_out.iter().chain(&r.attributes_left_out))
            .map(String::as_str)
            .collect();
        if !left_out.is_empty() {
            out.push_str(&format!(
                "left out (answered from the footers): {}\n",
                left_out.into_iter().collect::<Vec<_>>().join(", ")
            ));
        }
        output::text(&out);
    }
    Ok(())
}

fn report_json(r: &IndexReport) -> serde_json::Value {
    json!({
        "datasets": r.datasets,
        "row_groups": r.row_groups,
        "bytes": r.bytes,
        "variables": r.variables,
        "variables_left_out": r.variables_left_out,
        "attributes": r.attributes,
        "attributes_left_out": r.attributes_left_out,
    })
}
