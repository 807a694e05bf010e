//! `atlas stats`: one array's statistics over the collection, or per dataset.

use atlas::{AtlasError, DType};
use serde_json::json;

use super::Ctx;
use crate::cli::StatsArgs;
use crate::exit::{CliResult, Context as _};
use crate::location::Access;
use crate::output;
use crate::render::{self, Table};

/// Runs `atlas stats`.
pub async fn run(ctx: &Ctx, args: &StatsArgs) -> CliResult {
    let (loc, set) = ctx.open(&args.collection, Access::Read).await?;
    if !set
        .array_names()
        .await
        .at(loc.display())?
        .contains(&args.array)
    {
        return Err(AtlasError::ArrayNotFound {
            dataset: None,
            array: args.array.clone(),
        })
        .at(loc.display());
    }
    if args.by_dataset {
        let rows = set
            .array_stats_by_dataset(&args.array)
            .await
            .at(loc.display())?;
        if ctx.json {
            let list: Vec<_> = rows
                .iter()
                .map(|r| {
                    json!({
                        "dataset": r.dataset,
                        "min": r.stats.min.as_ref().map(atlas_manifest::stat_json),
                        "max": r.stats.max.as_ref().map(atlas_manifest::stat_json),
                        "null_count": r.stats.null_count,
                        "row_count": r.stats.row_count,
                    })
                })
                .collect();
            output::json(&json!(list));
        } else {
            let mut table = Table::new(&["dataset", ">count", ">nulls", "min", "max"]);
            for r in &rows {
                let dtype = set
                    .dataset(&r.dataset)
                    .await
                    .ok()
                    .and_then(|d| d.schema().array(&args.array).map(|m| m.dtype().clone()));
                table.row(vec![
                    r.dataset.to_string(),
                    r.stats.row_count.to_string(),
                    r.stats.null_count.to_string(),
                    render::stat(r.stats.min.as_ref(), dtype.as_ref()),
                    render::stat(r.stats.max.as_ref(), dtype.as_ref()),
                ]);
            }
            output::text(&table.render(0));
        }
        return Ok(());
    }

    let stats = set.array_stats(&args.array).await.at(loc.display())?;
    if ctx.json {
        output::json(&atlas_manifest::stats_json(stats.as_ref()));
        return Ok(());
    }
    let text = match &stats {
        None => format!("{}: no statistics\n", args.array),
        Some(s) => {
            // The fold covers the live datasets that declare the array with the
            // dtype of the first one that declares it.
            let declared: Vec<DType> = set
                .datasets()
                .await
                .at(loc.display())?
                .iter()
                .filter_map(|d| d.schema().array(&args.array).map(|m| m.dtype().clone()))
                .collect();
            let dtype = declared.first();
            let folded = declared.iter().filter(|d| Some(*d) == dtype).count();
            let mut datasets = folded.to_string();
            if folded < declared.len() {
                datasets.push_str(&format!(
                    " (another {} declare it with another dtype and are not folded in)",
                    declared.len() - folded
                ));
            }
            let mut t = Table::new(&["", ""]);
            t.row(vec!["array".into(), args.array.clone()]);
            t.row(vec![
                "dtype".into(),
                dtype.map_or_else(|| "-".to_owned(), DType::display_name),
            ]);
            t.row(vec!["datasets".into(), datasets]);
            t.row(vec!["count".into(), s.row_count.to_string()]);
            t.row(vec!["nulls".into(), s.null_count.to_string()]);
            t.row(vec!["min".into(), render::stat(s.min.as_ref(), dtype)]);
            t.row(vec!["max".into(), render::stat(s.max.as_ref(), dtype)]);
            let rendered = t.render(0);
            rendered
                .split_once('\n')
                .map_or(String::new(), |(_, rest)| rest.to_owned())
        }
    };
    output::text(&text);
    Ok(())
}
