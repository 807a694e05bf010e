//! `atlas verify`: the library's check of everything a reader relies on, rendered.
//!
//! 1. trailer and footer: `open` validates both (magic, version, footer checks);
//! 2. every segment opens (one statistics read per variable opens its footer);
//! 3. per live dataset, per declared array: the segment holds it, with the
//!    footer's dtype, and every block of it decompresses (the whole array is read);
//!    dataset and array attributes read back;
//! 4. the deletion mask parsed (its warnings are reported, not failures);
//! 5. with `--deep`, the CRC32C of every segment, the footer and the mask,
//!    each mismatch naming its part: against the checksum sidecar of a lone
//!    collection (`atlas checksum`), against the manifest for a set's members;
//! 6. what interrupted writes left (temp files, S3 multipart uploads,
//!    uncommitted set members): warnings, listed even when no collection opens.
//!
//! On a set, each member is checked so (findings name the member), and its
//! dataset count and size are compared with what the manifest records.

use std::collections::HashSet;

use atlas::{Atlas, Checked, Finding, Member, VerifyOptions, VerifyReport};
use serde_json::json;

use super::{Ctx, open_at};
use crate::cli::VerifyArgs;
use crate::exit::{CliError, CliResult};
use crate::location::Access;
use crate::{output, progress, render};

/// Runs `atlas verify`: the library's [`Member::verify`] of each container, rendered.
pub async fn run(ctx: &Ctx, args: &VerifyArgs) -> CliResult {
    let loc = ctx.locate(&args.collection, Access::Read).await?;
    let mut passed = Vec::new();
    let mut problems = Vec::new();
    let mut warnings = Vec::new();
    let mut report = VerifyReport::default();
    let mut set_json = None;
    let opened = match open_at(&loc).await {
        Ok(set) => Ok({
            let lone = set.lone_member();
            (set, lone)
        }),
        Err(e) => Err(e),
    };
    match opened {
        Ok((_, Some(atlas))) => {
            report = check(ctx, &atlas, args.deep, loc.multipart_uploads().cloned()).await;
            passed = passed_lines(&atlas, &report, args.deep);
            problems = report.problems().map(ToString::to_string).collect();
            warnings = report.warnings().map(ToString::to_string).collect();
            // A first `create --append` that never committed leaves members and no manifest.
            warnings.extend(uncommitted_warnings(&loc).await);
        }
        Ok((set, None)) => {
            let outcome = check_set(ctx, &loc, &set, args.deep).await;
            report.checked = outcome.checked;
            passed = outcome.passed;
            problems = outcome.problems;
            warnings = outcome.warnings;
            set_json = Some(json!({
                "generation": set.manifest().map_or(0, |m| m.generation),
                "members": set.members().len(),
            }));
        }
        Err(e) => {
            problems.push(format!("open: {}", e.line()));
            // What an interrupted write left where no collection opens.
            let left =
                atlas::leftover_findings(loc.operator(), loc.prefix(), loc.multipart_uploads())
                    .await;
            warnings.extend(left.iter().map(Finding::to_string));
            warnings.extend(uncommitted_warnings(&loc).await);
        }
    }

    if ctx.json {
        let c = &report.checked;
        let mut value = json!({
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
                "index": c.index,
            },
        });
        if let (Some(set), Some(fields)) = (set_json, value.as_object_mut()) {
            fields.insert("set".into(), set);
        }
        output::json(&value);
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
    atlas: &Member,
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

/// What checking a set found, as lines.
struct SetOutcome {
    passed: Vec<String>,
    problems: Vec<String>,
    warnings: Vec<String>,
    checked: Checked,
}

/// Checks each member as a lone collection is checked (findings name the
/// member), compares its count and size with the manifest's, and lists the
/// leftovers at the set's root and the member folders no commit names.
async fn check_set(
    ctx: &Ctx,
    loc: &crate::location::Location,
    set: &Atlas,
    deep: bool,
) -> SetOutcome {
    let mut out = SetOutcome {
        passed: Vec::new(),
        problems: Vec::new(),
        warnings: Vec::new(),
        checked: Checked::default(),
    };
    let entries = set.members();
    out.passed.push(format!(
        "set: manifest valid (generation {}, {})",
        set.manifest().map_or(0, |m| m.generation),
        render::count(entries.len(), "member", "members")
    ));
    for entry in &entries {
        let id = &entry.id;
        let atlas = match set.member(id).await {
            Ok(atlas) => atlas,
            Err(e) => {
                out.problems.push(format!(
                    "member {id}: open: {}",
                    atlas::ErrorReport::new(&e)
                ));
                continue;
            }
        };
        let report = check(ctx, &atlas, deep, None).await;
        let mut member_problems: Vec<String> = report
            .problems()
            .map(|f| format!("member {id}: {f}"))
            .collect();
        let total = u64::try_from(atlas.dataset_count_total()).unwrap_or(u64::MAX);
        if total != entry.datasets_total {
            member_problems.push(format!(
                "member {id}: the manifest records {} datasets, the container holds {total}",
                entry.datasets_total
            ));
        }
        if atlas.container_bytes() != entry.bytes {
            member_problems.push(format!(
                "member {id}: the manifest records {} bytes, data.atlas is {} bytes",
                entry.bytes,
                atlas.container_bytes()
            ));
        }
        if deep {
            match set.verify_member_checksums(id).await {
                Ok(mismatches) if mismatches.is_empty() => {
                    out.checked.checksum_parts = Some(
                        out.checked
                            .checksum_parts
                            .unwrap_or(0)
                            .saturating_add(entry.checksums.segments.len().saturating_add(3)),
                    );
                }
                Ok(mismatches) => member_problems.extend(
                    mismatches
                        .iter()
                        .map(|m| format!("member {id}: checksum: {m}")),
                ),
                Err(e) => member_problems.push(format!(
                    "member {id}: checksums: {}",
                    atlas::ErrorReport::new(&e)
                )),
            }
        }
        let live = u64::try_from(atlas.dataset_count()).unwrap_or(u64::MAX);
        if live != entry.datasets_live {
            out.warnings.push(format!(
                "member {id}: the manifest records {} live datasets, the mask leaves {live} \
                 (a delete whose manifest commit did not finish)",
                entry.datasets_live
            ));
        }
        out.warnings
            .extend(report.warnings().map(|f| format!("member {id}: {f}")));
        if member_problems.is_empty() {
            let c = &report.checked;
            out.passed.push(format!(
                "member {id}: sound ({}, {}, {}; counts and size agree with the manifest)",
                render::count(atlas.dataset_count_total(), "dataset", "datasets"),
                render::count(c.arrays, "array", "arrays"),
                render::count(c.elements as usize, "element", "elements"),
            ));
        }
        out.problems.extend(member_problems);
        let c = &report.checked;
        out.checked.variables = out.checked.variables.saturating_add(c.variables);
        out.checked.data_segments = out.checked.data_segments.saturating_add(c.data_segments);
        out.checked.segments_opened = out
            .checked
            .segments_opened
            .saturating_add(c.segments_opened);
        out.checked.datasets = out.checked.datasets.saturating_add(c.datasets);
        out.checked.arrays = out.checked.arrays.saturating_add(c.arrays);
        out.checked.elements = out.checked.elements.saturating_add(c.elements);
        out.checked.hidden = out.checked.hidden.saturating_add(c.hidden);
    }
    let left =
        atlas::leftover_findings(loc.operator(), loc.prefix(), loc.multipart_uploads()).await;
    out.warnings.extend(left.iter().map(Finding::to_string));
    out.warnings.extend(uncommitted_warnings(loc).await);
    // A member's upload is listed by the member and by the set's root.
    let mut seen = HashSet::new();
    out.warnings.retain(|w| seen.insert(w.clone()));
    out
}

/// One warning per member folder under `members/` that no commit names.
async fn uncommitted_warnings(loc: &crate::location::Location) -> Vec<String> {
    match atlas::uncommitted_members(loc).await {
        Ok(found) => found.iter().map(uncommitted_line).collect(),
        Err(e) => vec![format!(
            "uncommitted members not listed: {}",
            atlas::ErrorReport::new(&e)
        )],
    }
}

fn uncommitted_line(m: &atlas::UncommittedMember) -> String {
    if m.retired.is_some() {
        return format!(
            "retired member {m}: a compaction replaced it; kept for readers of older \
             generations, `atlas cleanup` removes it once older than --retention"
        );
    }
    format!(
        "uncommitted member {m}: no commit names it (a writer crashed, lost its commit, \
         or is still writing); `atlas cleanup` removes it once older than --older-than"
    )
}

/// One line per check that found nothing wrong.
fn passed_lines(atlas: &Member, report: &VerifyReport, deep: bool) -> Vec<String> {
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
    let index_problem = report
        .findings
        .iter()
        .any(|f| matches!(f, Finding::IndexDisagrees { .. }));
    if c.index && !index_problem {
        passed.push(format!(
            "dataset index: matches the footers ({})",
            atlas::INDEX_FILE
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
