//! `atlas verify`: the library's check of everything a reader relies on, rendered.
//!
//! 1. trailer and footer: `open` validates both (magic, version, footer checks);
//! 2. every segment opens (one statistics read per variable opens its footer);
//! 3. per live dataset, per declared array: the segment holds it, with the
//!    footer's dtype, and every block of it decompresses (the whole array is read);
//!    dataset and array attributes read back;
//! 4. the deletion mask parsed (its warnings are reported, not failures);
//! 5. with `--deep` and a checksum sidecar (`atlas checksum`), the CRC32C of
//!    every segment, the footer and the mask, each mismatch naming its part;
//! 6. what interrupted writes left (temp files, S3 multipart uploads): warnings,
//!    listed even when no collection opens.

use atlas::{Atlas, Finding, VerifyOptions, VerifyReport};
use serde_json::json;

use super::{Ctx, open_at};
use crate::cli::VerifyArgs;
use crate::exit::{CliError, CliResult};
use crate::location::Access;
use crate::{output, progress, render};

/// Runs `atlas verify`: the library's [`Atlas::verify`], rendered.
pub async fn run(ctx: &Ctx, args: &VerifyArgs) -> CliResult {
    let loc = ctx.locate(&args.collection, Access::Read).await?;
    let mut passed = Vec::new();
    let mut problems = Vec::new();
    let mut warnings = Vec::new();
    let mut report = VerifyReport::default();
    match open_at(&loc).await {
        Ok(atlas) => {
            report = check(ctx, &atlas, args.deep, loc.multipart_uploads().cloned()).await;
            passed = passed_lines(&atlas, &report, args.deep);
            problems = report.problems().map(ToString::to_string).collect();
            warnings = report.warnings().map(ToString::to_string).collect();
        }
        Err(e) => {
            problems.push(format!("open: {}", e.line()));
            // What an interrupted write left where no collection opens.
            let left =
                atlas::leftover_findings(loc.operator(), loc.prefix(), loc.multipart_uploads())
                    .await;
            warnings.extend(left.iter().map(Finding::to_string));
        }
    }

    if ctx.json {
        let c = &report.checked;
        output::json(&json!({
            "collection": loc.display(),
            "ok": problems.is_empty(),
            "problems": problems,
            "warnings": warnings,
            "checked": {
                "variables": c.variables,
                "datasets": c.datasets,
                "arrays": c.arrays,
                "elements": c.elements,
                "checksum_parts": c.checksum_parts,
            },
        }));
    } else {
        let mut out = String::new();
        for p in &passed {
            out.push_str(&format!("ok       {p}\n"));
        }
        for w in &warnings {
            out.push_str(&format!("warning  {w}\n"));
        }
        for p in &problems {
            out.push_str(&format!("PROBLEM  {p}\n"));
        }
        out.push_str(if args.deep && report.checked.checksum_parts.is_some() {
            "note     every byte but the header is covered by the checksum sidecar; \
             the header is checked by value\n"
        } else if args.deep {
            "note     v8 stores no checksums and this collection has no checksum sidecar \
             (`atlas checksum` writes one): damage that still decodes in attribute values, \
             dimension names, chunk shapes or fill values, or that leaves the statistics \
             true, cannot be seen\n"
        } else {
            "note     v8 stores no checksums: damage that still decodes reads back as other \
             values; --deep compares every array's statistics with its values\n"
        });
        if problems.is_empty() {
            out.push_str(&format!("{}: sound\n", loc.display()));
        }
        output::text(&out);
    }
    match problems.len() {
        0 => Ok(()),
        n => Err(CliError::msg(format!(
            "{}: verify found {n} problem{}",
            loc.display(),
            if n == 1 { "" } else { "s" }
        ))),
    }
}

async fn check(
    ctx: &Ctx,
    atlas: &Atlas,
    deep: bool,
    uploads: Option<atlas::MultipartUploads>,
) -> VerifyReport {
    let bar = progress::bar(atlas.dataset_count() as u64, "verify", ctx.quiet);
    let tick = bar.clone();
    let mut options = VerifyOptions::new()
        .deep(deep)
        .on_progress(move |n| tick.set_position(n));
    if let Some(uploads) = uploads {
        options = options.multipart_uploads(uploads);
    }
    let report = atlas.verify(&options).await;
    bar.finish_and_clear();
    report
}

/// One line per check that found nothing wrong.
fn passed_lines(atlas: &Atlas, report: &VerifyReport, deep: bool) -> Vec<String> {
    let c = &report.checked;
    let mut passed = vec![format!(
        "container: trailer and footer valid (format v{}, {}, {}, {})",
        atlas.format_version(),
        render::count(c.variables, "variable", "variables"),
        render::count(atlas.dataset_count_total(), "dataset", "datasets"),
        render::count(atlas.interned_schemas(), "schema", "schemas"),
    )];
    if c.segments_opened == c.data_segments {
        passed.push(format!(
            "segments: {} of {} open",
            c.segments_opened, c.data_segments
        ));
    }
    let array_problem = report.problems().any(|f| {
        !matches!(
            f,
            Finding::Segment { .. } | Finding::ChecksumMismatch { .. } | Finding::Checksums { .. }
        )
    });
    if !array_problem {
        passed.push(format!(
            "arrays: {} of {} present, dtypes agree with the footer, \
             every block decompresses ({})",
            render::count(c.arrays, "array", "arrays"),
            render::count(c.datasets, "live dataset", "live datasets"),
            render::count(c.elements as usize, "element", "elements"),
        ));
    }
    let stats_problem = report
        .problems()
        .any(|f| matches!(f, Finding::StatisticsDisagree { .. }));
    if deep && !stats_problem {
        passed.push(format!(
            "statistics: recomputed from the values of {}, all agree",
            render::count(c.arrays, "array", "arrays")
        ));
    }
    let checksum_problem = report.problems().any(|f| {
        matches!(
            f,
            Finding::ChecksumMismatch { .. } | Finding::Checksums { .. }
        )
    });
    if let Some(parts) = c.checksum_parts
        && !checksum_problem
    {
        passed.push(format!(
            "checksums: {} match {}",
            render::count(parts, "part", "parts"),
            atlas::CHECKSUM_SIDECAR_FILE
        ));
    }
    let mask_warning = report
        .warnings()
        .any(|f| matches!(f, Finding::MaskWarning { .. }));
    if !mask_warning {
        passed.push(if c.hidden == 0 {
            "deletion mask: none or empty".to_owned()
        } else {
            format!(
                "deletion mask: parses, hides {}",
                render::count(c.hidden, "dataset", "datasets")
            )
        });
    }
    passed
}
