//! `atlas info`: what a collection is and holds, from the footer plus one
//! statistics read per variable; for a set, also its generation and members
//! (from the manifest), with the statistics combined over the members.

use atlas::{ArrayStats, Atlas, AtlasError, DType, Dataset, Member};
use futures::future::join_all;
use serde_json::json;

use super::Ctx;
use crate::cli::CollectionArg;
use crate::exit::{CliError, CliResult, Context as _};
use crate::location::{Access, Location};
use crate::output;
use crate::render::{self, Table};
use atlas::DATASETS_SEGMENT;

/// Runs `atlas info`.
pub async fn run(ctx: &Ctx, args: &CollectionArg) -> CliResult {
    let (loc, atlas) = ctx.open(&args.collection, Access::Read).await?;
    match atlas.lone_member() {
        Some(member) => print(ctx, &loc, &atlas, &member).await,
        None => print_set(ctx, &loc, &atlas).await,
    }
}

/// One variable: its segment, and its statistics folded over the live datasets.
struct Variable {
    name: String,
    /// Element types the live datasets declare for it, in first-seen order.
    dtypes: Vec<String>,
    /// The element type of the first live dataset that declares it.
    first: Option<DType>,
    offset: u64,
    len: u64,
    stats: Result<Option<ArrayStats>, AtlasError>,
}

async fn variables(atlas: &Atlas, member: &Member) -> Vec<Variable> {
    let entries = member.segments();
    let stats = join_all(entries.iter().map(|v| async move {
        if v.name == DATASETS_SEGMENT {
            return Ok(None);
        }
        atlas.array_stats(&v.name).await
    }))
    .await;
    let declared = declared_types(member.datasets());
    entries
        .into_iter()
        .zip(stats)
        .map(|(v, stats)| {
            let declared = declared.iter().find(|(n, _, _)| *n == v.name);
            Variable {
                dtypes: declared.map(|(_, _, t)| t.clone()).unwrap_or_default(),
                first: declared.map(|(_, d, _)| d.clone()),
                name: v.name.to_string(),
                offset: v.offset,
                len: v.len,
                stats,
            }
        })
        .collect()
}

/// Per array name the datasets declare: the first declared dtype, then every
/// distinct one by display name, in first-seen order.
fn declared_types(datasets: Vec<Dataset>) -> Vec<(String, DType, Vec<String>)> {
    let mut declared: Vec<(String, DType, Vec<String>)> = Vec::new();
    for view in datasets {
        for meta in view.schema().arrays() {
            let dtype = meta.dtype().display_name();
            match declared.iter_mut().find(|(n, _, _)| n == meta.name()) {
                Some((_, _, types)) if !types.contains(&dtype) => types.push(dtype),
                Some(_) => {}
                None => declared.push((meta.name().to_owned(), meta.dtype().clone(), vec![dtype])),
            }
        }
    }
    declared
}

/// Prints what `info` prints for a lone collection, `member` its container
/// (also the end of `demo`).
pub async fn print(ctx: &Ctx, loc: &Location, atlas: &Atlas, member: &Member) -> CliResult {
    let vars = variables(atlas, member).await;
    let deleted = member.deleted_datasets();
    if ctx.json {
        let variables: Vec<_> = vars
            .iter()
            .map(|v| {
                json!({
                    "name": v.name,
                    "offset": v.offset,
                    "len": v.len,
                    "stats": atlas_manifest::stats_json(v.stats.as_ref().ok().and_then(Option::as_ref)),
                })
            })
            .collect();
        output::json(&json!({
            "format_version": member.format_version(),
            "codec": member.codec().to_string(),
            "created_unix_ms": member.created_unix_ms(),
            "container_bytes": member.container_bytes(),
            "footer_bytes": member.footer_bytes(),
            "datasets_total": member.dataset_count_total(),
            "datasets_live": member.dataset_count(),
            "deleted": deleted,
            "interned_schemas": member.interned_schemas(),
            "variables": variables,
        }));
        return stats_failure(loc, vars);
    }

    let mut out = String::new();
    let mut head = Table::new(&["", ""]);
    let mut field = |k: &str, v: String| head.row(vec![k.to_owned(), v]);
    field("collection", loc.display().to_owned());
    field("format", format!("Atlas v{}", member.format_version()));
    field("created", render::unix_ms(member.created_unix_ms()));
    field("codec", member.codec().to_string());
    field(
        "size",
        format!(
            "{} ({} bytes; footer {} bytes)",
            render::bytes(member.container_bytes()),
            member.container_bytes(),
            member.footer_bytes()
        ),
    );
    field(
        "datasets",
        format!(
            "{} live / {} total / {} deleted",
            member.dataset_count(),
            member.dataset_count_total(),
            deleted.len()
        ),
    );
    field("schemas", format!("{} interned", member.interned_schemas()));
    if !deleted.is_empty() {
        field("deleted", abbreviate(&deleted, 8));
    }
    // The header row of this two-column table is blank; skip it.
    let rendered = head.render(0);
    out.push_str(rendered.split_once('\n').map_or("", |(_, rest)| rest));

    out.push_str(&format!("\nvariables ({}):\n", vars.len()));
    let mut table = Table::new(&[
        "name", "dtype", ">segment", ">count", ">nulls", "min", "max",
    ]);
    let mut mixed = false;
    for v in &vars {
        let dtype = match v.dtypes.as_slice() {
            [] => "-".to_owned(),
            [one] => one.clone(),
            many => {
                mixed = true;
                format!("{}*", many.join("|"))
            }
        };
        let mut row = vec![v.name.clone(), dtype, render::bytes(v.len)];
        let first = v.first.as_ref();
        match &v.stats {
            Ok(Some(s)) => row.extend([
                s.row_count.to_string(),
                s.null_count.to_string(),
                render::stat(s.min.as_ref(), first),
                render::stat(s.max.as_ref(), first),
            ]),
            Ok(None) if v.name == DATASETS_SEGMENT => {
                row.extend(["-".into(), "-".into(), "(dataset attributes)".into()]);
            }
            Ok(None) => row.extend(["-".into(), "-".into(), "(no statistics)".into()]),
            Err(e) => row.extend([
                "-".into(),
                "-".into(),
                format!("(unavailable: {})", atlas::ErrorReport::new(e)),
            ]),
        }
        table.row(row);
    }
    out.push_str(&table.render(2));
    if mixed {
        out.push_str(
            "  * declared with several dtypes: the statistics cover the datasets of the first\n",
        );
    }
    for w in member.mask_warnings() {
        out.push_str(&format!("warning: deletion mask: {w}\n"));
    }
    output::text(&out);
    stats_failure(loc, vars)
}

/// `a, b, c and 7 more`.
fn abbreviate(names: &[String], max: usize) -> String {
    let shown = names
        .iter()
        .take(max)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > max {
        format!("{shown} and {} more", names.len() - max)
    } else {
        shown
    }
}

/// One variable of a set: its statistics combined over the members' live datasets.
struct SetVariable {
    name: String,
    dtypes: Vec<String>,
    first: Option<DType>,
    stats: Result<Option<ArrayStats>, AtlasError>,
}

async fn set_variables(set: &Atlas, loc: &Location) -> CliResult<Vec<SetVariable>> {
    let names = set.array_names().await.at(loc.display())?;
    let stats = join_all(
        names
            .iter()
            .map(|name| async move { set.array_stats(name).await }),
    )
    .await;
    let declared = declared_types(set.datasets().await.at(loc.display())?);
    Ok(names
        .into_iter()
        .zip(stats)
        .map(|(name, stats)| {
            let declared = declared.iter().find(|(n, _, _)| *n == name);
            SetVariable {
                dtypes: declared.map(|(_, _, t)| t.clone()).unwrap_or_default(),
                first: declared.map(|(_, d, _)| d.clone()),
                name,
                stats,
            }
        })
        .collect())
}

/// What `info` prints for a set: totals, members, then variables combined.
async fn print_set(ctx: &Ctx, loc: &Location, set: &Atlas) -> CliResult {
    let manifest = set
        .manifest()
        .ok_or_else(|| CliError::msg(format!("{}: not a set", loc.display())))?;
    let members = &manifest.members;
    let live = set.dataset_count().await.at(loc.display())?;
    let stored: u64 = members.iter().map(|m| m.datasets_total).sum();
    let member_live: u64 = members.iter().map(|m| m.datasets_live).sum();
    let deleted = stored.saturating_sub(member_live);
    let replaced = member_live.saturating_sub(live as u64);
    let bytes: u64 = members.iter().map(|m| m.bytes).sum();
    let vars = set_variables(set, loc).await?;
    if ctx.json {
        let member_list: Vec<_> = members.iter().map(crate::json::member).collect();
        let variables: Vec<_> = vars
            .iter()
            .map(|v| {
                json!({
                    "name": v.name,
                    "stats": atlas_manifest::stats_json(v.stats.as_ref().ok().and_then(Option::as_ref)),
                })
            })
            .collect();
        output::json(&json!({
            "set": {
                "generation": manifest.generation,
                "members": member_list,
            },
            "container_bytes": bytes,
            "datasets_total": stored,
            "datasets_live": live,
            "datasets_replaced": replaced,
            "datasets_deleted": deleted,
            "variables": variables,
        }));
        return stats_failure(loc, vars);
    }

    let mut out = String::new();
    let mut head = Table::new(&["", ""]);
    let mut field = |k: &str, v: String| head.row(vec![k.to_owned(), v]);
    field("set", loc.display().to_owned());
    field(
        "format",
        format!(
            "Atlas set, generation {}, {} (each an Atlas collection)",
            manifest.generation,
            render::count(members.len(), "member", "members")
        ),
    );
    field(
        "size",
        format!("{} ({bytes} bytes in the members)", render::bytes(bytes)),
    );
    field(
        "datasets",
        format!(
            "{live} live / {stored} stored / {replaced} replaced by a newer member / {deleted} deleted"
        ),
    );
    let rendered = head.render(0);
    out.push_str(rendered.split_once('\n').map_or("", |(_, rest)| rest));

    out.push_str(&format!(
        "\nmembers ({}), oldest commit first:\n",
        members.len()
    ));
    let mut table = Table::new(&["id", ">live", ">total", ">size", "created"]);
    for m in members {
        table.row(vec![
            m.id.clone(),
            m.datasets_live.to_string(),
            m.datasets_total.to_string(),
            render::bytes(m.bytes),
            render::unix_ms(m.created_unix_ms),
        ]);
    }
    out.push_str(&table.render(2));

    out.push_str(&format!("\nvariables ({}):\n", vars.len()));
    let mut table = Table::new(&["name", "dtype", ">count", ">nulls", "min", "max"]);
    let mut mixed = false;
    for v in &vars {
        let dtype = match v.dtypes.as_slice() {
            [] => "-".to_owned(),
            [one] => one.clone(),
            many => {
                mixed = true;
                format!("{}*", many.join("|"))
            }
        };
        let mut row = vec![v.name.clone(), dtype];
        let first = v.first.as_ref();
        match &v.stats {
            Ok(Some(s)) => row.extend([
                s.row_count.to_string(),
                s.null_count.to_string(),
                render::stat(s.min.as_ref(), first),
                render::stat(s.max.as_ref(), first),
            ]),
            Ok(None) => row.extend(["-".into(), "-".into(), "(no statistics)".into()]),
            Err(e) => row.extend([
                "-".into(),
                "-".into(),
                format!("(unavailable: {})", atlas::ErrorReport::new(e)),
            ]),
        }
        table.row(row);
    }
    out.push_str(&table.render(2));
    if mixed {
        out.push_str(
            "  * declared with several dtypes: the statistics cover the datasets of the first\n",
        );
    }
    output::text(&out);
    stats_failure(loc, vars)
}

/// Everything readable is printed first; a variable whose statistics cannot
/// be read then fails the command, naming the first such variable, with the
/// library's class of the failure (a busy member exits 75).
fn stats_failure<V: HasStats>(loc: &Location, vars: Vec<V>) -> CliResult {
    match vars.into_iter().find_map(HasStats::into_failure) {
        None => Ok(()),
        Some((name, error)) => Err(CliError::Atlas {
            context: format!("{}: statistics of variable {name:?}", loc.display()),
            error,
        }),
    }
}

/// A variable row whose statistics may have failed to read.
trait HasStats {
    /// The variable's name and the error, if its statistics failed.
    fn into_failure(self) -> Option<(String, AtlasError)>;
}

impl HasStats for Variable {
    fn into_failure(self) -> Option<(String, AtlasError)> {
        self.stats.err().map(|e| (self.name, e))
    }
}

impl HasStats for SetVariable {
    fn into_failure(self) -> Option<(String, AtlasError)> {
        self.stats.err().map(|e| (self.name, e))
    }
}
