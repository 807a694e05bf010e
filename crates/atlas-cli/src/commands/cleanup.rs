//! `atlas cleanup`: removes what interrupted writes left behind (temp files of
//! atomic writes, S3 multipart uploads never completed), which `atlas verify`
//! lists as warnings. Only what is older than `--older-than`: a younger one may
//! belong to a write in progress.

use std::time::{Duration, SystemTime};

use atlas::{Leftover, LeftoverKind};
use serde_json::json;

use super::Ctx;
use crate::cli::CleanupArgs;
use crate::exit::{CliResult, Context as _};
use crate::location::Access;
use crate::{output, render};

/// Runs `atlas cleanup`.
pub async fn run(ctx: &Ctx, args: &CleanupArgs) -> CliResult {
    let loc = ctx.locate(&args.collection, Access::Read).await?;
    let older_than = Duration::from_secs(args.older_than.saturating_mul(60));
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
    if ctx.json {
        output::json(&json!({
            "dry_run": args.dry_run,
            "removed": found.iter().map(leftover_json).collect::<Vec<_>>(),
            "bytes": bytes,
        }));
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
