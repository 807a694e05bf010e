//! `atlas cleanup`: removes what interrupted writes left behind (temp files of
//! atomic writes), which `atlas verify` lists as warnings.

use std::time::{Duration, SystemTime};

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
    let files = if args.dry_run {
        let all = atlas_io::list_leftovers(&loc.op, &loc.prefix)
            .await
            .map_err(atlas::AtlasError::Io)
            .at(&loc.display)?;
        all.into_iter()
            .filter(|l| {
                l.modified
                    .is_some_and(|m| now.duration_since(m).is_ok_and(|age| age >= older_than))
            })
            .collect()
    } else {
        atlas_io::remove_leftovers(&loc.op, &loc.prefix, older_than, now)
            .await
            .map_err(atlas::AtlasError::Io)
            .at(&loc.display)?
    };
    let bytes: u64 = files.iter().map(|l| l.bytes).sum();
    if ctx.json {
        output::json(&json!({
            "dry_run": args.dry_run,
            "removed": files.iter().map(|l| json!({"path": l.path, "bytes": l.bytes})).collect::<Vec<_>>(),
            "bytes": bytes,
        }));
    } else if !ctx.quiet {
        let verb = if args.dry_run {
            "would remove"
        } else {
            "removed"
        };
        let mut out = String::new();
        for l in &files {
            out.push_str(&format!("{verb} {} ({} bytes)\n", l.path, l.bytes));
        }
        out.push_str(&format!(
            "{}: {verb} {} ({bytes} bytes)\n",
            loc.display,
            render::count(files.len(), "leftover file", "leftover files")
        ));
        output::text(&out);
    }
    Ok(())
}
