//! `atlas verify`: checks everything a reader relies on and lists what is wrong.
//!
//! 1. trailer and footer: `open` validates both (magic, version, footer checks);
//! 2. every segment opens (one statistics read per variable opens its footer);
//! 3. per live dataset, per declared array: the segment holds it, with the
//!    footer's dtype, and every block of it decompresses (the whole array is read);
//!    dataset and array attributes read back;
//! 4. the deletion mask parsed (its warnings are reported, not failures).

use atlas::{Atlas, Dataset};
use futures::StreamExt;
use serde_json::json;

use super::{Ctx, open_at};
use crate::cli::CollectionArg;
use crate::exit::{CliError, CliResult};
use crate::location::Access;
use crate::{output, progress, render, values};
use atlas::DATASETS_SEGMENT;

/// Datasets checked at the same time.
const CONCURRENCY: usize = 8;

#[derive(Debug, Default)]
struct Report {
    /// One line per completed check.
    passed: Vec<String>,
    problems: Vec<String>,
    warnings: Vec<String>,
    variables: usize,
    datasets: usize,
    arrays: usize,
    elements: u64,
}

/// What checking one dataset found.
#[derive(Debug, Default)]
struct DatasetCheck {
    problems: Vec<String>,
    arrays: usize,
    elements: u64,
}

/// Runs `atlas verify`.
pub async fn run(ctx: &Ctx, args: &CollectionArg) -> CliResult {
    let loc = ctx.locate(&args.collection, Access::Read).await?;
    let mut report = Report::default();
    match open_at(&loc).await {
        Ok(atlas) => check(ctx, &atlas, &mut report).await,
        Err(e) => report.problems.push(format!("open: {}", e.line())),
    }

    if ctx.json {
        output::json(&json!({
            "collection": loc.display,
            "ok": report.problems.is_empty(),
            "problems": report.problems,
            "warnings": report.warnings,
            "checked": {
                "variables": report.variables,
                "datasets": report.datasets,
                "arrays": report.arrays,
                "elements": report.elements,
            },
        }));
    } else {
        let mut out = String::new();
        for p in &report.passed {
            out.push_str(&format!("ok       {p}\n"));
        }
        for w in &report.warnings {
            out.push_str(&format!("warning  {w}\n"));
        }
        for p in &report.problems {
            out.push_str(&format!("PROBLEM  {p}\n"));
        }
        if report.problems.is_empty() {
            out.push_str(&format!("{}: sound\n", loc.display));
        }
        output::text(&out);
    }
    match report.problems.len() {
        0 => Ok(()),
        n => Err(CliError::msg(format!(
            "{}: verify found {n} problem{}",
            loc.display,
            if n == 1 { "" } else { "s" }
        ))),
    }
}

async fn check(ctx: &Ctx, atlas: &Atlas, report: &mut Report) {
    let variables = atlas.variables();
    report.variables = variables.len();
    report.passed.push(format!(
        "container: trailer and footer valid (format v{}, {}, {}, {})",
        atlas.format_version(),
        render::count(variables.len(), "variable", "variables"),
        render::count(atlas.dataset_count_total(), "dataset", "datasets"),
        render::count(atlas.interned_schemas(), "schema", "schemas"),
    ));

    // Every segment opens: one statistics read per variable opens its footer.
    let mut opened = 0;
    for v in variables.iter().filter(|v| v.name != DATASETS_SEGMENT) {
        match atlas.array_stats_by_dataset(&v.name).await {
            Ok(_) => opened += 1,
            Err(e) => report.problems.push(format!(
                "segment {:?} ({} bytes at {}): {e}",
                v.name, v.len, v.offset
            )),
        }
    }
    let data_segments = variables
        .iter()
        .filter(|v| v.name != DATASETS_SEGMENT)
        .count();
    if opened == data_segments {
        report
            .passed
            .push(format!("segments: {opened} of {data_segments} open"));
    }

    // Every declared array of every live dataset: present, same dtype, every block decompresses.
    let bar = progress::bar(atlas.dataset_count() as u64, "verify", ctx.quiet);
    let mut checks = futures::stream::iter(atlas.datasets())
        .map(|view| async move { check_dataset(&view).await })
        .buffer_unordered(CONCURRENCY);
    let before = report.problems.len();
    while let Some(c) = checks.next().await {
        report.datasets += 1;
        report.arrays += c.arrays;
        report.elements += c.elements;
        report.problems.extend(c.problems);
        bar.inc(1);
    }
    bar.finish_and_clear();
    if report.problems.len() == before {
        report.passed.push(format!(
            "arrays: {} of {} present, dtypes agree with the footer, \
             every block decompresses ({})",
            render::count(report.arrays, "array", "arrays"),
            render::count(report.datasets, "live dataset", "live datasets"),
            render::count(report.elements as usize, "element", "elements"),
        ));
    }

    // The mask: open parsed it (a wrong magic fails the open); the rest are warnings.
    let warnings = atlas.mask_warnings();
    let hidden = atlas.dataset_count_total() - atlas.dataset_count();
    if warnings.is_empty() {
        report.passed.push(if hidden == 0 {
            "deletion mask: none or empty".to_owned()
        } else {
            format!(
                "deletion mask: parses, hides {}",
                render::count(hidden, "dataset", "datasets")
            )
        });
    }
    report
        .warnings
        .extend(warnings.into_iter().map(|w| format!("deletion mask: {w}")));
}

async fn check_dataset(view: &Dataset) -> DatasetCheck {
    let mut c = DatasetCheck::default();
    let name = view.name();
    let schema = view.schema();
    if schema.has_attributes()
        && let Err(e) = view.attributes().await
    {
        c.problems
            .push(format!("dataset {name:?}: attributes: {e}"));
    }
    for meta in schema.arrays() {
        let array = meta.name();
        c.arrays += 1;
        let problem = |what: String| format!("dataset {name:?} array {array:?}: {what}");
        let layout = match view.array_layout(array).await {
            Ok(l) => l,
            Err(e) => {
                c.problems.push(problem(e.to_string()));
                continue;
            }
        };
        if layout.dtype != *meta.dtype() {
            c.problems.push(problem(format!(
                "the footer declares {}, the segment holds {}",
                meta.dtype(),
                layout.dtype
            )));
            continue;
        }
        let origin = vec![0; layout.shape.len()];
        match values::read(view, array, &origin, &layout.shape).await {
            Ok(v) => c.elements += v.len() as u64,
            Err(e) => c.problems.push(problem(e.to_string())),
        }
        if meta.attributes().next().is_some()
            && let Err(e) = view.array_attributes(array).await
        {
            c.problems.push(problem(format!("attributes: {e}")));
        }
    }
    c
}
