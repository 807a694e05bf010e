//! `atlas ls`: live dataset names in ordinal order (those `--where` selects).

use std::collections::HashSet;

use serde_json::json;

use super::Ctx;
use super::catalogue::select_where;
use crate::cli::LsArgs;
use crate::exit::CliResult;
use crate::location::Access;
use crate::output;
use crate::render::Table;

/// Runs `atlas ls`.
pub async fn run(ctx: &Ctx, args: &LsArgs) -> CliResult {
    let (loc, atlas) = ctx.open(&args.collection, Access::Read).await?;
    let selected: Option<HashSet<String>> = match &args.where_ {
        Some(text) => Some(
            select_where(&atlas, text, loc.display())
                .await?
                .into_iter()
                .collect(),
        ),
        None => None,
    };
    let datasets = || {
        atlas
            .datasets()
            .filter(|d| selected.as_ref().is_none_or(|s| s.contains(d.name())))
    };
    if ctx.json {
        let list: Vec<_> = datasets()
            .map(|d| {
                let mut obj = serde_json::Map::new();
                obj.insert("name".into(), json!(d.name()));
                obj.insert("ordinal".into(), json!(d.ordinal()));
                if args.long {
                    let schema = d.schema();
                    obj.insert("arrays".into(), json!(schema.array_count()));
                    obj.insert("schema".into(), json!(schema.index()));
                }
                serde_json::Value::Object(obj)
            })
            .collect();
        output::json(&json!(list));
        return Ok(());
    }
    if args.long {
        let mut table = Table::new(&[">ordinal", ">arrays", ">schema", "name"]);
        for d in datasets() {
            let schema = d.schema();
            table.row(vec![
                d.ordinal().to_string(),
                schema.array_count().to_string(),
                schema.index().to_string(),
                d.name().to_owned(),
            ]);
        }
        output::text(&table.render(0));
    } else {
        let mut out = String::new();
        for d in datasets() {
            out.push_str(d.name());
            out.push('\n');
        }
        output::text(&out);
    }
    Ok(())
}
