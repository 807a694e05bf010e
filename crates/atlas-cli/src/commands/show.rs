//! `atlas show`: one dataset in `ncdump -h` style.

use atlas::{ArrayLayout, ArrayStats, Attr, DType, Dataset, Value};
use futures::future::try_join_all;

use super::Ctx;
use crate::cli::ShowArgs;
use crate::exit::{CliResult, Context as _};
use crate::location::Access;
use crate::output;
use crate::render;

/// Runs `atlas show`.
pub async fn run(ctx: &Ctx, args: &ShowArgs) -> CliResult {
    let (loc, set) = ctx.open(&args.collection, Access::Read).await?;
    let view = set.dataset(&args.dataset).await.at(loc.display())?;
    if ctx.json {
        let value = atlas_manifest::dataset_json(&view, false)
            .await
            .at(loc.display())?;
        output::json(&value);
        return Ok(());
    }
    let text = describe(&view).await.at(loc.display())?;
    output::text(&text);
    Ok(())
}

/// What `show` needs of one array.
struct ArrayInfo {
    name: String,
    dtype: DType,
    layout: ArrayLayout,
    stats: Option<ArrayStats>,
    attributes: Vec<(String, Attr)>,
}

async fn array_info(view: &Dataset, name: &str, dtype: &DType) -> atlas::Result<ArrayInfo> {
    let layout = view.array_layout(name).await?;
    let stats = view.array_stats(name).await?;
    let attributes = view.array_attributes(name).await?;
    Ok(ArrayInfo {
        name: name.to_owned(),
        dtype: dtype.clone(),
        layout,
        stats,
        attributes,
    })
}

/// The dimension names of an array; unnamed ones are called `<array>_dim<i>`.
fn dims(a: &ArrayInfo) -> Vec<String> {
    (0..a.layout.shape.len())
        .map(|i| {
            a.layout
                .dimension_names
                .get(i)
                .filter(|n| !n.is_empty())
                .map_or_else(|| format!("{}_dim{i}", a.name), |n| n.to_string())
        })
        .collect()
}

/// A fill value as text, narrowed to the array's element type for floats.
fn fill_text(fill: &Value, dtype: &DType) -> String {
    match fill {
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::UInt(u) => u.to_string(),
        Value::Float(f) if *dtype == DType::Float32 => render::float(*f as f32),
        Value::Float(f) => render::float(*f),
        Value::String(s) => format!("{s:?}"),
        Value::Timestamp(t) => t.to_string(),
        other => format!("{other:?}"),
    }
}

fn attr_line(owner: &str, key: &str, value: &Attr) -> String {
    format!(
        "        {} {owner}:{key} = {} ;\n",
        render::attr_type(value),
        render::attr(value)
    )
}

async fn describe(view: &Dataset) -> atlas::Result<String> {
    let schema = view.schema();
    let declared: Vec<(String, DType)> = schema
        .arrays()
        .map(|a| (a.name().to_owned(), a.dtype().clone()))
        .collect();
    let arrays = try_join_all(
        declared
            .iter()
            .map(|(name, dtype)| array_info(view, name, dtype)),
    )
    .await?;
    let globals = view.attributes().await?;

    // Dimensions in order of first use; a name used with two lengths is listed with both.
    let mut dimensions: Vec<(String, Vec<u64>)> = Vec::new();
    for a in &arrays {
        for (name, &len) in dims(a).into_iter().zip(&a.layout.shape) {
            match dimensions.iter_mut().find(|(n, _)| *n == name) {
                Some((_, lens)) if !lens.contains(&len) => lens.push(len),
                Some(_) => {}
                None => dimensions.push((name, vec![len])),
            }
        }
    }

    let mut out = format!(
        "dataset {} {{  // ordinal {}, schema {}\n",
        view.name(),
        view.ordinal(),
        schema.index()
    );
    out.push_str("dimensions:\n");
    for (name, lens) in &dimensions {
        let lens: Vec<String> = lens.iter().map(u64::to_string).collect();
        match lens.as_slice() {
            [one] => out.push_str(&format!("    {name} = {one} ;\n")),
            many => out.push_str(&format!(
                "    {name} = {} ;  // differs between arrays\n",
                many.join(" | ")
            )),
        }
    }
    out.push_str("variables:\n");
    for a in &arrays {
        let dim_list = dims(a).join(", ");
        let stored = a.layout.dtype.display_name();
        out.push_str(&format!("    {stored} {}({dim_list}) ;\n", a.name));
        if a.layout.dtype != a.dtype {
            out.push_str(&format!(
                "        // the footer declares {}, the segment holds {stored}\n",
                a.dtype
            ));
        }
        if let Some(fill) = &a.layout.fill_value {
            out.push_str(&format!(
                "        {}:_FillValue = {} ;\n",
                a.name,
                fill_text(fill, &a.layout.dtype)
            ));
        }
        if !a.layout.chunk_shape.is_empty() {
            let chunks: Vec<String> = a.layout.chunk_shape.iter().map(u64::to_string).collect();
            out.push_str(&format!(
                "        {}:_ChunkSizes = {} ;\n",
                a.name,
                chunks.join(", ")
            ));
        }
        for (key, value) in &a.attributes {
            out.push_str(&attr_line(&a.name, key, value));
        }
        match &a.stats {
            Some(s) => out.push_str(&format!(
                "        // count {}, nulls {}, min {}, max {}\n",
                s.row_count,
                s.null_count,
                render::stat(s.min.as_ref(), Some(&a.layout.dtype)),
                render::stat(s.max.as_ref(), Some(&a.layout.dtype))
            )),
            None => out.push_str("        // no statistics\n"),
        }
    }
    if !globals.is_empty() {
        out.push_str("\n// global attributes:\n");
        for (key, value) in &globals {
            out.push_str(&attr_line("", key, value));
        }
    }
    out.push_str("}\n");
    Ok(out)
}
