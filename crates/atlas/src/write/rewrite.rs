//! [`rewrite`]: copy every live dataset of a collection (a set or a lone
//! collection) into a new lone collection.
//!
//! Everything goes through the public API: the [`Atlas`] reader on one side,
//! an [`AtlasWriter`] on the other. Deleted datasets are left behind (that is
//! how a rewrite reclaims their bytes) and the survivors get dense ordinals in
//! their old order. Arrays keep their element type, shape, chunk shape,
//! dimension names, fill value, values and attributes; datasets keep their
//! attributes. The destination's codec and block size are its own.

use std::ops::Range;

use futures::StreamExt;
use ndarray::{ArrayD, Slice, SliceInfoElem};

use atlas_segment::{ArrayStats, Element, for_each_array_data};

use super::buffer::grid_coords;
use super::collection::{AtlasWriter, WriteSummary};
use super::dataset::DatasetWriter;
use crate::Atlas;
use crate::error::{AtlasError, Result};
use crate::read::{ArrayLayout, Dataset};

/// Datasets copied at once (reads of one overlap compression of another).
const DATASETS_IN_FLIGHT: usize = 4;
/// Arrays up to this many bytes are read in one request, larger ones chunk by chunk.
const WHOLE_ARRAY_READ: u64 = 64 << 20;

/// Copies every live dataset of `src` into `dst`, in ordinal order, and
/// finishes `dst`. `progress(done, total)` is called after each dataset.
///
/// Which chunks were written is not visible through the reader, so a chunk is
/// written to `dst` when it holds a value other than the fill value (for an
/// array without one: every chunk, unless the statistics say nothing was
/// written). Values, fill values and statistics therefore come out equal.
/// On error nothing is committed: `dst` is dropped, leaving nothing that opens.
///
/// # Errors
/// What reading `src` or writing `dst` returns ([`AtlasError::CorruptSegment`], [`AtlasError::Io`],
/// ...); `dst` is then dropped and nothing is committed.
pub async fn rewrite(
    src: &Atlas,
    dst: AtlasWriter,
    progress: impl FnMut(usize, usize),
) -> Result<WriteSummary> {
    copy_datasets(src.datasets().await?, dst, progress).await
}

/// Copies `datasets` (of any collections) into `dst` in the order given, and
/// finishes `dst`: [`rewrite`] of a chosen list (a set's compaction).
pub(crate) async fn copy_datasets(
    datasets: Vec<Dataset>,
    dst: AtlasWriter,
    mut progress: impl FnMut(usize, usize),
) -> Result<WriteSummary> {
    let total = datasets.len();
    let dst_ref = &dst;
    // `add_dataset` runs in order as the stream is polled, so ordinals follow
    // the source's order whichever copy finishes first.
    let mut copies = futures::stream::iter(datasets)
        .map(|view| {
            let added = dst_ref.add_dataset(view.name());
            async move {
                let mut writer = added?;
                copy_dataset(&view, &mut writer).await?;
                writer.finish().await
            }
        })
        .buffered(DATASETS_IN_FLIGHT);
    let mut done = 0;
    while let Some(result) = copies.next().await {
        result?;
        done += 1;
        progress(done, total);
    }
    drop(copies);
    dst.finish().await
}

async fn copy_dataset(view: &Dataset, dst: &mut DatasetWriter) -> Result<()> {
    let arrays: Vec<String> = view
        .schema()
        .arrays()
        .map(|a| a.name().to_owned())
        .collect();
    for array in &arrays {
        let layout = view.array_layout(array).await?;
        let stats = view.array_stats(array).await?;
        copy_array_any(view, dst, array, &layout, stats.as_ref()).await?;
        for (key, value) in view.array_attributes(array).await? {
            dst.set_array_attribute(array, &key, value)?;
        }
    }
    for (key, value) in view.attributes().await? {
        dst.set_attribute(&key, value)?;
    }
    Ok(())
}

/// Copies one array whatever its element type: an empty read through
/// `read_any` says which type, then the typed copy runs with it.
async fn copy_array_any(
    view: &Dataset,
    dst: &mut DatasetWriter,
    array: &str,
    layout: &ArrayLayout,
    stats: Option<&ArrayStats>,
) -> Result<()> {
    let nothing = vec![0u64; layout.shape.len()];
    let probe = match Box::pin(view.read_any(array, crate::Region::block(&nothing, &nothing))).await
    {
        Ok(probe) => probe.into_data(),
        Err(AtlasError::DTypeMismatch { stored, .. }) => {
            return Err(AtlasError::invalid_use(format!(
                "array {array:?} of dataset {:?} holds {stored}, which this library cannot copy",
                view.name()
            )));
        }
        Err(e) => return Err(e),
    };
    // Boxed: thirteen typed copies inline would make this future large
    // enough to overflow a thread's stack in debug builds.
    for_each_array_data!(probe, typed => {
        Box::pin(copy_array(view, dst, array, layout, stats, &typed)).await
    }, _ => Err(AtlasError::invalid_use(format!(
        "array {array:?} of dataset {:?} holds an element type this library cannot copy",
        view.name()
    ))))
}

async fn copy_array<T: Element>(
    view: &Dataset,
    dst: &mut DatasetWriter,
    array: &str,
    layout: &ArrayLayout,
    stats: Option<&ArrayStats>,
    _element_type: &ArrayD<T>,
) -> Result<()> {
    let dims: Vec<&str> = layout.dimension_names.iter().map(String::as_str).collect();
    dst.define_array_with_fill::<T>(
        array,
        &dims,
        &layout.shape,
        Some(&layout.chunk_shape),
        layout.fill_value.clone(),
    )?;
    if layout.element_count == 0 {
        return Ok(());
    }
    let fill = T::fill_element(layout.fill_value.as_ref());
    // Without a fill value only unwritten chunks count as nulls.
    let no_fill = layout.fill_value.is_none();
    if no_fill && stats.is_some_and(|s| s.null_count == s.row_count) {
        return Ok(());
    }
    let skip_fill_chunks = !no_fill || stats.is_some_and(|s| s.null_count > 0);
    let whole = layout
        .element_count
        .saturating_mul(std::mem::size_of::<T>() as u64)
        <= WHOLE_ARRAY_READ;
    let all: Option<ArrayD<T>> = if whole {
        let a = view.read_array::<T>(array, crate::Region::all()).await?;
        let shape: Vec<u64> = a.shape().iter().map(|&n| n as u64).collect();
        if shape != layout.shape {
            return Err(AtlasError::corrupt(format!(
                "array {array:?} of dataset {:?} read back with shape {shape:?}, its layout says {:?}",
                view.name(),
                layout.shape
            )));
        }
        Some(a)
    } else {
        None
    };
    let grid: Vec<Range<u64>> = layout
        .shape
        .iter()
        .zip(&layout.chunk_shape)
        .map(|(&s, &c)| 0..s.div_ceil(c.max(1)))
        .collect();
    for coord in grid_coords(&grid) {
        let start: Vec<u64> = coord
            .iter()
            .zip(&layout.chunk_shape)
            .map(|(c, s)| c * s)
            .collect();
        let extent: Vec<u64> = start
            .iter()
            .zip(layout.chunk_shape.iter().zip(&layout.shape))
            .map(|(&s, (&c, &len))| c.min(len - s))
            .collect();
        let chunk: ArrayD<T> = match &all {
            Some(a) => {
                let block: Vec<SliceInfoElem> = start
                    .iter()
                    .zip(&extent)
                    .map(|(&s, &n)| Slice::from(s as usize..(s + n) as usize).into())
                    .collect();
                a.slice(block.as_slice()).to_owned()
            }
            None => {
                view.read_array::<T>(array, crate::Region::block(&start, &extent))
                    .await?
            }
        };
        if skip_fill_chunks && chunk.iter().all(|v| *v == fill) {
            continue;
        }
        dst.write_array(array, &start, chunk.view())?;
    }
    Ok(())
}
