//! `atlas cat`: the values of one array, whole or a region.

use atlas::AtlasError;
use serde_json::json;

use super::Ctx;
use crate::cli::CatArgs;
use crate::exit::{CliError, CliResult, Context as _};
use crate::location::Access;
use crate::output;
use crate::values::{self, layout_text};

/// Runs `atlas cat`.
pub async fn run(ctx: &Ctx, args: &CatArgs) -> CliResult {
    let (loc, set) = ctx.open(&args.collection, Access::Read).await?;
    let view = set.dataset(&args.dataset).await.at(loc.display())?;
    if view.schema().array(&args.array).is_none() {
        return Err(AtlasError::ArrayNotFound {
            dataset: Some(args.dataset.clone()),
            array: args.array.clone(),
        })
        .at(loc.display());
    }
    let layout = view.array_layout(&args.array).await.at(loc.display())?;
    let (start, shape) = region(
        &args.array,
        &layout.shape,
        args.start.as_deref(),
        args.shape.as_deref(),
    )?;
    let values = values::read(&view, &args.array, &start, &shape)
        .await
        .at(loc.display())?;
    if ctx.json {
        output::json_line(&json!({
            "dtype": layout.dtype.display_name(),
            "shape": values.shape(),
            "values": atlas_manifest::data_json(&values.0),
        }));
    } else {
        let cells = values.cells(layout.fill_value.as_ref());
        output::text(&layout_text(&cells, &values.shape()));
    }
    Ok(())
}

/// The region to read: `--start` defaults to the origin, `--shape` to the rest of the array.
fn region(
    array: &str,
    full: &[u64],
    start: Option<&[u64]>,
    shape: Option<&[u64]>,
) -> CliResult<(Vec<u64>, Vec<u64>)> {
    let rank = full.len();
    let check = |flag: &str, v: &[u64]| {
        if v.len() == rank {
            Ok(())
        } else {
            Err(CliError::msg(format!(
                "{flag} has {} value(s) but {array:?} has {rank} dimension(s) (shape {full:?})",
                v.len()
            )))
        }
    };
    let start = match start {
        Some(s) => {
            check("--start", s)?;
            s.to_vec()
        }
        None => vec![0; rank],
    };
    for (i, (&s, &n)) in start.iter().zip(full).enumerate() {
        if s > n {
            return Err(CliError::msg(format!(
                "--start {s} is past the end of dimension {i} of {array:?} (length {n})"
            )));
        }
    }
    let shape = match shape {
        Some(s) => {
            check("--shape", s)?;
            for (i, ((&st, &len), &n)) in start.iter().zip(s).zip(full).enumerate() {
                if st.checked_add(len).is_none_or(|end| end > n) {
                    return Err(CliError::msg(format!(
                        "region {st}..{} is past the end of dimension {i} of {array:?} (length {n})",
                        st.saturating_add(len)
                    )));
                }
            }
            s.to_vec()
        }
        None => full.iter().zip(&start).map(|(&n, &s)| n - s).collect(),
    };
    Ok((start, shape))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_region_defaults_to_the_rest_of_the_array() {
        assert_eq!(
            region("a", &[4, 8], None, None).unwrap(),
            (vec![0, 0], vec![4, 8])
        );
        assert_eq!(
            region("a", &[4, 8], Some(&[1, 2]), None).unwrap(),
            (vec![1, 2], vec![3, 6])
        );
        assert_eq!(
            region("a", &[4, 8], None, Some(&[2, 2])).unwrap(),
            (vec![0, 0], vec![2, 2])
        );
    }

    #[test]
    fn a_region_of_the_wrong_rank_or_past_the_end_is_refused() {
        let message =
            |start: &[u64], count: Option<&[u64]>| match region("a", &[4, 8], Some(start), count) {
                Err(CliError::Message(text)) => text,
                other => panic!("expected a usage message, got {other:?}"),
            };
        assert!(
            message(&[1], None).contains("dimension(s)"),
            "{}",
            message(&[1], None)
        );
        assert!(
            message(&[5, 0], None).contains("past"),
            "{}",
            message(&[5, 0], None)
        );
        let over = message(&[3, 0], Some(&[2, 1]));
        assert!(over.contains("past"), "{over}");
    }
}
