//! `atlas attrs`: one attribute across every live dataset.

use serde_json::json;

use super::Ctx;
use crate::cli::AttrsArgs;
use crate::exit::{CliError, CliResult, Context as _};
use crate::location::Access;
use crate::output;
use crate::render::{self, Table};

/// Runs `atlas attrs`.
pub async fn run(ctx: &Ctx, args: &AttrsArgs) -> CliResult {
    let (loc, set) = ctx.open(&args.collection, Access::Read).await?;
    let rows = set
        .attributes_by_dataset(args.array.as_deref(), &args.key)
        .await
        .at(loc.display())?;
    if rows.is_empty() {
        let on = args
            .array
            .as_ref()
            .map_or_else(String::new, |a| format!(" on array {a:?}"));
        return Err(CliError::msg(format!(
            "{}: no live dataset has attribute {:?}{on}",
            loc.display(),
            args.key
        )));
    }
    if ctx.json {
        let list: Vec<_> = rows
            .iter()
            .map(|(dataset, value)| {
                let mut obj = atlas_manifest::attr_json(value);
                if let Some(fields) = obj.as_object_mut() {
                    fields.insert("dataset".into(), json!(dataset));
                }
                obj
            })
            .collect();
        output::json(&json!(list));
        return Ok(());
    }
    let mut table = Table::new(&["dataset", "type", &args.key]);
    for (dataset, value) in &rows {
        table.row(vec![
            dataset.to_string(),
            render::attr_type(value),
            render::attr(value),
        ]);
    }
    output::text(&table.render(0));
    Ok(())
}
