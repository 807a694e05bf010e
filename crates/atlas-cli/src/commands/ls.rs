//! `atlas ls`: live dataset names in ordinal order.

use serde_json::json;

use super::Ctx;
use crate::cli::LsArgs;
use crate::exit::CliResult;
use crate::location::Access;
use crate::output;
use crate::render::Table;

/// Runs `atlas ls`.
pub async fn run(ctx: &Ctx, args: &LsArgs) -> CliResult {
    let (_, atlas) = ctx.open(&args.collection, Access::Read).await?;
    if ctx.json {
        let list: Vec<_> = atlas
            .datasets()
            .map(|d| {
                let mut obj = json!({ "name": d.name(), "ordinal": d.ordinal() });
                if args.long {
                    let schema = d.schema();
                    obj["arrays"] = json!(schema.array_count());
                    obj["schema"] = json!(schema.index());
                }
                obj
            })
            .collect();
        output::json(&json!(list));
        return Ok(());
    }
    if args.long {
        let mut table = Table::new(&[">ordinal", ">arrays", ">schema", "name"]);
        for d in atlas.datasets() {
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
        for d in atlas.datasets() {
            out.push_str(d.name());
            out.push('\n');
        }
        output::text(&out);
    }
    Ok(())
}
