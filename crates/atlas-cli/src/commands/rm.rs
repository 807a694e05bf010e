//! `atlas rm`: hide datasets (named, listed in a file, or selected by
//! `--where`) with one write of the deletion mask (on a set: in the member
//! holding each live copy, then a manifest commit); `--dry-run` only lists them.

use std::io::Read as _;

use atlas::WriteGuarantee;
use serde_json::json;

use super::Ctx;
use super::catalogue::select_where;
use crate::cli::RmArgs;
use crate::exit::{CliError, CliResult, Context as _};
use crate::location::Access;
use crate::{output, render};

/// Runs `atlas rm`.
pub async fn run(ctx: &Ctx, args: &RmArgs) -> CliResult {
    let mut names = args.datasets.clone();
    if let Some(path) = &args.from_file {
        names.extend(read_names(path)?);
    }
    let access = if args.dry_run {
        Access::Read
    } else {
        Access::Write
    };
    let (loc, set) = ctx.open(&args.collection, access).await?;
    if let Some(text) = &args.where_ {
        names.extend(select_where(&set, text, loc.display()).await?);
    }
    let mut seen = std::collections::HashSet::new();
    names.retain(|n| seen.insert(n.clone()));
    if names.is_empty() {
        if args.where_.is_some() {
            if !ctx.quiet && !ctx.json {
                output::text("--where selects no dataset; nothing to hide\n");
            } else if ctx.json {
                output::json(&json!({ "deleted": 0, "would_delete": [] }));
            }
            return Ok(());
        }
        return Err(CliError::msg("no dataset names given"));
    }
    if args.dry_run {
        if ctx.json {
            output::json(&json!({ "would_delete": names }));
        } else {
            let mut out = String::new();
            for n in &names {
                out.push_str(n);
                out.push('\n');
            }
            if !ctx.quiet {
                out.push_str(&format!(
                    "dry run: would hide {} in {}; nothing written\n",
                    render::count(names.len(), "dataset", "datasets"),
                    loc.display()
                ));
            }
            output::text(&out);
        }
        return Ok(());
    }
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let outcome = set.delete_datasets(&refs).await.at(loc.display())?;
    let (guarantee, meaning) = match outcome.guarantee {
        WriteGuarantee::Conditional => (
            "conditional",
            "conditional write: a concurrent delete is merged in, never lost",
        ),
        WriteGuarantee::Locked => (
            "locked",
            "locked write: concurrent deletes on this machine take turns, none is lost",
        ),
        _ => (
            "last_writer_wins",
            "last writer wins: a delete racing this one may have been lost",
        ),
    };
    if ctx.json {
        output::json(&json!({
            "deleted": outcome.deleted,
            "guarantee": guarantee,
        }));
    } else if !ctx.quiet {
        let how = if set.is_set() {
            "with a mask write in each member holding one, then one manifest commit"
        } else {
            "with one mask write"
        };
        output::text(&format!(
            "hid {} in {} {how} ({meaning})\n",
            render::count(outcome.deleted, "dataset", "datasets"),
            loc.display()
        ));
    }
    Ok(())
}

/// Names one per line; blank lines and `#` comments skipped; `-` reads stdin.
fn read_names(path: &std::path::Path) -> CliResult<Vec<String>> {
    let text = if path.as_os_str() == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| CliError::msg(format!("cannot read names from stdin: {e}")))?;
        s
    } else {
        std::fs::read_to_string(path)
            .map_err(|e| CliError::msg(format!("cannot read {}: {e}", path.display())))?
    };
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect())
}
