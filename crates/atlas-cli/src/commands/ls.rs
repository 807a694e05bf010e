//! `atlas ls`: live dataset names in ordinal order (those `--where` selects);
//! on a set, members oldest commit first, and `--members` lists the members.

use std::collections::HashSet;

use atlas::Atlas;
use serde_json::json;

use super::Ctx;
use super::catalogue::select_where;
use crate::cli::LsArgs;
use crate::exit::{CliError, CliResult, Context as _};
use crate::location::{Access, Location};
use crate::output;
use crate::render::{self, Table};

/// Runs `atlas ls`.
pub async fn run(ctx: &Ctx, args: &LsArgs) -> CliResult {
    let (loc, set) = ctx.open(&args.collection, Access::Read).await?;
    if args.members {
        return members(ctx, &loc, &set);
    }
    let selected: Option<HashSet<String>> = match &args.where_ {
        Some(text) => Some(
            select_where(&set, text, loc.display())
                .await?
                .into_iter()
                .collect(),
        ),
        None => None,
    };
    // Each live dataset with the id of the member holding it (None: a lone collection).
    let groups = set.datasets_by_member().await.at(loc.display())?;
    let is_set = set.is_set();
    let datasets = || {
        groups
            .iter()
            .flat_map(|(id, datasets)| {
                let id = is_set.then_some(id.as_str());
                datasets.iter().map(move |d| (id, d))
            })
            .filter(|(_, d)| selected.as_ref().is_none_or(|s| s.contains(d.name())))
    };
    if ctx.json {
        let list: Vec<_> = datasets()
            .map(|(member, d)| {
                let mut obj = serde_json::Map::new();
                obj.insert("name".into(), json!(d.name()));
                if let Some(member) = member {
                    obj.insert("member".into(), json!(member));
                }
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
        let mut headers = vec![">ordinal", ">arrays", ">schema", "name"];
        if set.is_set() {
            headers.insert(0, "member");
        }
        let mut table = Table::new(&headers);
        for (member, d) in datasets() {
            let schema = d.schema();
            let mut row = vec![
                d.ordinal().to_string(),
                schema.array_count().to_string(),
                schema.index().to_string(),
                d.name().to_owned(),
            ];
            if let Some(member) = member {
                row.insert(0, member.to_owned());
            }
            table.row(row);
        }
        output::text(&table.render(0));
    } else {
        let mut out = String::new();
        for (_, d) in datasets() {
            out.push_str(d.name());
            out.push('\n');
        }
        output::text(&out);
    }
    Ok(())
}

/// `ls --members`: the committed members, oldest commit first.
fn members(ctx: &Ctx, loc: &Location, set: &Atlas) -> CliResult {
    if !set.is_set() {
        return Err(CliError::msg(format!(
            "{}: a lone collection, not a set: it has no members (--members lists a set's)",
            loc.display()
        )));
    }
    let members = set.members();
    if ctx.json {
        let list: Vec<_> = members.iter().map(crate::json::member).collect();
        output::json(&json!(list));
        return Ok(());
    }
    let mut table = Table::new(&["id", ">live", ">total", ">size", "created"]);
    for m in &members {
        table.row(vec![
            m.id.clone(),
            m.datasets_live.to_string(),
            m.datasets_total.to_string(),
            render::bytes(m.bytes),
            render::unix_ms(m.created_unix_ms),
        ]);
    }
    output::text(&table.render(0));
    Ok(())
}
