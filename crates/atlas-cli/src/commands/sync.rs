//! `atlas sync`: a set kept in step with an archive's index (see
//! `atlas_netcdf::sync`): the plan, printed (`--dry-run`) or applied in one
//! commit.

use std::time::Instant;

use atlas_netcdf::{
    Decode, IngestOptions, ReplaceKind, SourceRoot, SyncError, SyncOptions, SyncPlan, SyncReport,
};
use serde_json::{Value, json};

use super::Ctx;
use super::members::new_member_id;
use crate::cli::{DecodeArg, SyncArgs};
use crate::exit::{CliResult, Context as _};
use crate::location::Access;
use crate::{output, render};

/// Runs `atlas sync`.
pub async fn run(ctx: &Ctx, args: &SyncArgs) -> CliResult {
    let started = Instant::now();
    let set = ctx.locate(&args.set, Access::Write).await?;
    let bytes = atlas_netcdf::read_index(&args.index, &ctx.store.storage())
        .await
        .at(set.display())?;
    let index = atlas_netcdf::parse_index(&bytes)
        .map_err(|source| SyncError::Index {
            index: args.index.clone(),
            source,
        })
        .at(set.display())?;
    let root = match &args.root {
        Some(root) => SourceRoot::parse(root),
        None => SourceRoot::beside_index(&args.index),
    };
    let options = SyncOptions::default()
        .with_ingest(
            IngestOptions::default()
                .with_decode(match args.decode {
                    DecodeArg::Cf => Decode::Cf,
                    DecodeArg::Raw => Decode::Raw,
                })
                .with_skip_errors(args.skip_errors)
                .with_skip_unsupported(args.skip_unsupported)
                .with_jobs(usize::from(args.jobs))
                .with_storage(ctx.store.storage()),
        )
        .with_writer(atlas::WriterConfig::default().storage(ctx.store.storage()))
        .with_open(atlas::OpenOptions::default().storage(ctx.store.storage()))
        .with_max_datasets(
            args.max_datasets
                .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
        );
    let plan = atlas_netcdf::plan_sync(&set, &index, &options.open)
        .await
        .at(set.display())?;
    if args.dry_run {
        print(ctx, set.display(), &plan, None, started);
        return Ok(());
    }
    let bar = crate::progress::bar(
        (plan.added.len() + plan.replaced.len()) as u64,
        "syncing",
        ctx.quiet,
    );
    let report = atlas_netcdf::apply_sync(plan, &set, &root, &options, new_member_id, |done, _| {
        bar.set_position(done as u64)
    })
    .await;
    bar.finish_and_clear();
    let report = report.at(set.display())?;
    print(ctx, set.display(), &report.applied, Some(&report), started);
    Ok(())
}

fn kind(kind: ReplaceKind) -> &'static str {
    match kind {
        ReplaceKind::Revised => "revised",
        ReplaceKind::DelayedMode => "delayed_mode",
        _ => "other",
    }
}

fn print(ctx: &Ctx, set: &str, plan: &SyncPlan, report: Option<&SyncReport>, started: Instant) {
    let seconds = started.elapsed().as_secs_f64();
    let committed = report.and_then(|r| r.committed.as_ref().map(|c| (&r.members, c)));
    if ctx.json {
        output::json(&json!({
            "set": set,
            "dry_run": report.is_none(),
            "generation": plan.generation,
            "added": plan.added.iter().map(|a| json!({
                "name": a.name, "file": a.file, "date_update": a.date_update,
            })).collect::<Vec<Value>>(),
            "replaced": plan.replaced.iter().map(|r| json!({
                "old": r.old, "name": r.new.name, "file": r.new.file,
                "date_update": r.new.date_update, "old_date_update": r.old_date_update,
                "kind": kind(r.kind),
            })).collect::<Vec<Value>>(),
            "removed": plan.removed.iter().map(|r| json!({"name": r.name, "file": r.file})).collect::<Vec<Value>>(),
            "skipped": plan.skipped.iter().map(|s| json!({
                "name": s.name, "file": s.file,
                "reason": atlas::ErrorReport::new(&s.reason).to_string(),
            })).collect::<Vec<Value>>(),
            "unchanged": plan.unchanged,
            "committed": committed.map(|(members, outcome)| json!({
                "members": members, "generation": outcome.generation, "requests": outcome.requests,
            })),
            "input_bytes": report.map_or(0, |r| r.input_bytes),
            "seconds": seconds,
        }));
        return;
    }
    if ctx.quiet && report.is_some() {
        return;
    }
    let mut text = String::new();
    for a in &plan.added {
        text.push_str(&format!(
            "add      {}  ({}, {})\n",
            a.name, a.file, a.date_update
        ));
    }
    for r in &plan.replaced {
        match r.kind {
            ReplaceKind::DelayedMode => text.push_str(&format!(
                "replace  {} -> {}  (delayed mode, {})\n",
                r.old, r.new.name, r.new.date_update
            )),
            _ => text.push_str(&format!(
                "replace  {}  ({} -> {})\n",
                r.new.name,
                r.old_date_update.as_deref().unwrap_or("unrecorded"),
                r.new.date_update
            )),
        }
    }
    for r in &plan.removed {
        text.push_str(&format!(
            "remove   {}  ({} left the index)\n",
            r.name, r.file
        ));
    }
    for s in &plan.skipped {
        text.push_str(&format!(
            "skip     {}: {}\n",
            s.name,
            atlas::ErrorReport::new(&s.reason)
        ));
    }
    let counts = format!(
        "{} added, {} replaced, {} removed, {} skipped, {} unchanged",
        plan.added.len(),
        plan.replaced.len(),
        plan.removed.len(),
        plan.skipped.len(),
        plan.unchanged
    );
    let tail = match (report, committed) {
        (None, _) => format!(
            "dry run of {set} at generation {}: {counts}; nothing written",
            plan.generation
        ),
        (Some(_), None) => format!("{set}: {counts}; nothing to commit"),
        (Some(r), Some((members, outcome))) => format!(
            "{set}: {counts}; committed {} ({}) at generation {}, {} read in {seconds:.1} s",
            render::count(members.len(), "member", "members"),
            members.join(", "),
            outcome.generation,
            render::bytes(r.input_bytes),
        ),
    };
    text.push_str(&tail);
    text.push('\n');
    output::text(&text);
}
