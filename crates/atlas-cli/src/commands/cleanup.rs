//! `atlas cleanup`: removes what interrupted writes left behind (temp files of
//! atomic writes, S3 multipart uploads never completed), which `atlas verify`
//! lists as warnings, and a set's uncommitted members (folders under
//! `members/` that the manifest does not name). Only what is older than
//! `--older-than`: a younger one may belong to a write in progress; and a
//! member a compaction retired only once its mark is older than `--retention`.

use std::time::{SystemTime, UNIX_EPOCH};

use atlas::{Leftover, LeftoverKind, UncommittedMember};
use serde_json::json;

use super::Ctx;
use crate::cli::CleanupArgs;
use crate::exit::{CliResult, Context as _};
use crate::location::Access;
use crate::{output, render};

/// Runs `atlas cleanup`.
pub async fn run(ctx: &Ctx, args: &CleanupArgs) -> CliResult {
    let loc = ctx.locate(&args.collection, Access::Read).await?;
    let older_than = args.older_than;
    let now = SystemTime::now();
    let uploads = loc.multipart_uploads();
    let found = if args.dry_run {
        let all = atlas_io::list_leftovers(loc.operator(), loc.prefix(), uploads)
            .await
            .map_err(atlas::AtlasError::Io)
            .at(loc.display())?;
        all.into_iter()
            .filter(|l| l.is_older_than(older_than, now))
            .collect()
    } else {
        atlas_io::remove_leftovers(loc.operator(), loc.prefix(), uploads, older_than, now)
            .await
            .map_err(atlas::AtlasError::Io)
            .at(loc.display())?
    };
    let bytes: u64 = found.iter().filter_map(Leftover::bytes).sum();
    let (old, young) = uncommitted_members(&loc, older_than, args.retention, now).await?;
    if !args.dry_run {
        for member in &old {
            atlas::remove_uncommitted_member(&loc, member)
                .await
                .at(loc.display())?;
        }
    }
    if ctx.json {
        let mut value = json!({
            "dry_run": args.dry_run,
            "removed": found.iter().map(leftover_json).collect::<Vec<_>>(),
            "bytes": bytes,
        });
        if (!old.is_empty() || young > 0)
            && let Some(fields) = value.as_object_mut()
        {
            fields.insert(
                "members_removed".into(),
                old.iter().map(member_json).collect(),
            );
            fields.insert("members_kept_young".into(), json!(young));
        }
        output::json(&value);
    } else if !ctx.quiet {
        let verb = if args.dry_run {
            "would remove"
        } else {
            "removed"
        };
        let mut out = String::new();
        for l in &found {
            out.push_str(&format!("{verb} {l}\n"));
        }
        out.push_str(&format!(
            "{}: {verb} {} ({bytes} bytes of temp files)\n",
            loc.display(),
            render::count(found.len(), "leftover", "leftovers")
        ));
        for m in &old {
            out.push_str(&format!("{verb} uncommitted member {m}\n"));
        }
        if !old.is_empty() {
            out.push_str(&format!(
                "{}: {verb} {} ({} bytes)\n",
                loc.display(),
                render::count(old.len(), "uncommitted member", "uncommitted members"),
                old.iter().map(|m| m.bytes).sum::<u64>()
            ));
        }
        if young > 0 {
            out.push_str(&format!(
                "{}: left {} alone: younger than --older-than (a write may be in progress) or retired within --retention\n",
                loc.display(),
                render::count(young, "uncommitted member", "uncommitted members")
            ));
        }
        output::text(&out);
    }
    Ok(())
}

/// `{"path", "kind", "bytes"}` for a temp file, `{"path", "kind", "upload_id"}` for an upload.
fn leftover_json(l: &Leftover) -> serde_json::Value {
    match &l.kind {
        LeftoverKind::TempFile { bytes } => {
            json!({"path": l.path, "kind": "temp_file", "bytes": bytes})
        }
        LeftoverKind::Upload { upload_id } => {
            json!({"path": l.path, "kind": "multipart_upload", "upload_id": upload_id})
        }
        _ => json!({"path": l.path, "kind": "other"}),
    }
}

/// The uncommitted members at `loc` that may go (older than `older_than`,
/// or retired longer ago than `retention`), and how many are left alone.
async fn uncommitted_members(
    loc: &crate::location::Location,
    older_than: std::time::Duration,
    retention: std::time::Duration,
    now: SystemTime,
) -> CliResult<(Vec<UncommittedMember>, usize)> {
    let all = atlas::uncommitted_members(loc).await.at(loc.display())?;
    let (old, young): (Vec<_>, Vec<_>) = all
        .into_iter()
        .partition(|m| m.is_removable(older_than, retention, now));
    Ok((old, young.len()))
}

/// `{"path", "objects", "bytes", "newest_unix_ms", "retired_unix_ms"}`.
fn member_json(m: &UncommittedMember) -> serde_json::Value {
    let ms = |t: Option<SystemTime>| {
        t.and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map(|d| d.as_millis())
    };
    json!({
        "path": m.path,
        "objects": m.objects,
        "bytes": m.bytes,
        "newest_unix_ms": ms(m.newest),
        "retired_unix_ms": ms(m.retired),
    })
}
