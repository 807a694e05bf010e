//! The Parquet peer of the set benchmark's box query: what a user who keeps
//! a profiles table in one Parquet file would run instead. The same profiles
//! (name, position, time, two attributes) are written by arrow-rs in row
//! groups of the dataset index's size, with page statistics and the page
//! index, and queried through the `parquet` crate's async reader over the
//! same metered store: row groups pruned by their statistics, pages pruned
//! by the page index, and the predicate pushed down as a row filter, so that
//! only the names of the matching rows are decoded.

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, BooleanArray, Float64Array, Int32Array, RecordBatch, StringArray,
};
use arrow_schema::{DataType, Field, Schema};
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::{FutureExt, TryStreamExt};
use opendal::Operator;
use parquet::arrow::arrow_reader::statistics::StatisticsConverter;
use parquet::arrow::arrow_reader::{
    ArrowPredicateFn, ArrowReaderOptions, RowFilter, RowSelection, RowSelector,
};
use parquet::arrow::async_reader::{AsyncFileReader, MetadataSuffixFetch};
use parquet::arrow::{ArrowWriter, ParquetRecordBatchStreamBuilder, ProjectionMask};
use parquet::basic::{Compression, ZstdLevel};
use parquet::errors::ParquetError;
use parquet::file::metadata::{PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader};
use parquet::file::properties::{EnabledStatistics, WriterProperties};

use crate::error::{BenchError, Result};
use crate::sets::{BoxQuery, position};
use crate::workload;

/// The file's name in the set's folder.
pub const FILE: &str = "profiles.parquet";

/// Rows per row group: the dataset index's default.
pub const ROWS_PER_GROUP: usize = 4096;

/// Bytes of the file's end read first (the footer, and the page index when it fits).
const FOOTER_HINT: usize = 64 * 1024;

/// The columns the query filters on, in file order after `name`.
const FILTERED: [&str; 3] = ["JULD", "LATITUDE", "LONGITUDE"];

/// Writes profiles `0..total` to `path` as one Parquet file; returns its size.
pub fn write(path: &Path, total: usize) -> Result<u64> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("name", DataType::Utf8, false),
        Field::new("JULD", DataType::Float64, false),
        Field::new("LATITUDE", DataType::Float64, false),
        Field::new("LONGITUDE", DataType::Float64, false),
        Field::new("platform_number", DataType::Utf8, false),
        Field::new("cycle_number", DataType::Int32, false),
    ]));
    let level = ZstdLevel::try_new(atlas_format::DEFAULT_ZSTD_LEVEL).map_err(parquet_error)?;
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(level))
        .set_max_row_group_row_count(Some(ROWS_PER_GROUP))
        .set_statistics_enabled(EnabledStatistics::Page)
        .build();
    let file = std::fs::File::create(path)?;
    let mut writer =
        ArrowWriter::try_new(file, schema.clone(), Some(props)).map_err(parquet_error)?;
    let mut start = 0;
    while start < total {
        let end = (start + ROWS_PER_GROUP).min(total);
        let profiles: Vec<workload::Profile> = (start..end).map(workload::profile).collect();
        let positions: Vec<(f64, f64)> = (start..end).map(position).collect();
        let columns: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from_iter_values(
                profiles.iter().map(|p| p.name.as_str()),
            )),
            Arc::new(Float64Array::from_iter_values(
                profiles.iter().map(|p| p.juld),
            )),
            Arc::new(Float64Array::from_iter_values(
                positions.iter().map(|p| p.0),
            )),
            Arc::new(Float64Array::from_iter_values(
                positions.iter().map(|p| p.1),
            )),
            Arc::new(StringArray::from_iter_values(
                profiles.iter().map(|p| p.platform_number.as_str()),
            )),
            Arc::new(Int32Array::from_iter_values(
                profiles.iter().map(|p| p.cycle_number),
            )),
        ];
        let batch = RecordBatch::try_new(schema.clone(), columns).map_err(parquet_error)?;
        writer.write(&batch).map_err(parquet_error)?;
        start = end;
    }
    writer.close().map_err(parquet_error)?;
    Ok(std::fs::metadata(path)?.len())
}

/// The names of the profiles in `q`, read from the file at `path` of `op`.
pub async fn query(op: &Operator, path: &str, q: &BoxQuery) -> Result<Vec<String>> {
    let reader = OpendalReader {
        op: op.clone(),
        path: path.to_owned(),
    };
    let options = ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Required);
    let builder = ParquetRecordBatchStreamBuilder::new_with_options(reader, options)
        .await
        .map_err(parquet_error)?;
    let metadata = builder.metadata().clone();
    let bounds = [q.juld, q.lat, q.lon];

    // Row groups whose statistics overlap every bound.
    let groups = metadata.row_groups();
    let mut keep = vec![true; groups.len()];
    for (column, bound) in FILTERED.iter().zip(bounds) {
        let converter =
            StatisticsConverter::try_new(column, builder.schema(), builder.parquet_schema())
                .map_err(parquet_error)?;
        let mins = converter.row_group_mins(groups).map_err(parquet_error)?;
        let maxes = converter.row_group_maxes(groups).map_err(parquet_error)?;
        for (i, k) in keep.iter_mut().enumerate() {
            *k &= overlaps(&mins, &maxes, i, bound);
        }
    }
    let row_groups: Vec<usize> = (0..groups.len()).filter(|&i| keep[i]).collect();

    // Pages of those row groups whose statistics overlap every bound.
    let mut selection: Option<RowSelection> = None;
    for (column, bound) in FILTERED.iter().zip(bounds) {
        let pages = page_selection(&metadata, &builder, column, bound, &row_groups)?;
        selection = Some(match selection {
            None => pages,
            Some(s) => s.intersection(&pages),
        });
    }

    let filter_mask = ProjectionMask::columns(builder.parquet_schema(), FILTERED);
    let name_mask = ProjectionMask::columns(builder.parquet_schema(), ["name"]);
    let filter = ArrowPredicateFn::new(filter_mask, move |batch: RecordBatch| {
        let column = |i: usize| {
            batch
                .column(i)
                .as_any()
                .downcast_ref::<Float64Array>()
                .cloned()
                .ok_or_else(|| arrow_schema::ArrowError::CastError("not f64".into()))
        };
        let (juld, lat, lon) = (column(0)?, column(1)?, column(2)?);
        let inside = |a: &Float64Array, (lo, hi): (f64, f64), i: usize| {
            let v = a.value(i);
            lo <= v && v <= hi
        };
        Ok(BooleanArray::from_iter((0..batch.num_rows()).map(|i| {
            Some(
                inside(&juld, bounds[0], i)
                    && inside(&lat, bounds[1], i)
                    && inside(&lon, bounds[2], i),
            )
        })))
    });
    let mut builder = builder
        .with_projection(name_mask)
        .with_row_groups(row_groups)
        .with_row_filter(RowFilter::new(vec![Box::new(filter)]))
        .with_batch_size(ROWS_PER_GROUP);
    if let Some(selection) = selection {
        builder = builder.with_row_selection(selection);
    }
    let batches: Vec<RecordBatch> = builder
        .build()
        .map_err(parquet_error)?
        .try_collect()
        .await
        .map_err(parquet_error)?;
    let mut names = Vec::new();
    for batch in batches {
        let column = batch
            .column(0)
            .as_any()
            .downcast_ref::<StringArray>()
            .ok_or_else(|| BenchError::Mismatch("the name column is not text".into()))?;
        names.extend(column.iter().flatten().map(str::to_owned));
    }
    Ok(names)
}

/// Whether entry `i` of `mins`/`maxes` (f64 statistics) can hold a value in
/// `bound`; true where a statistic is missing.
fn overlaps(mins: &ArrayRef, maxes: &ArrayRef, i: usize, (lo, hi): (f64, f64)) -> bool {
    let get = |a: &ArrayRef| {
        a.as_any()
            .downcast_ref::<Float64Array>()
            .filter(|a| a.is_valid(i))
            .map(|a| a.value(i))
    };
    match (get(mins), get(maxes)) {
        (Some(min), Some(max)) => min <= hi && max >= lo,
        _ => true,
    }
}

/// The rows of `row_groups` (in order) on pages of `column` whose page
/// statistics overlap `bound`.
fn page_selection(
    metadata: &ParquetMetaData,
    builder: &ParquetRecordBatchStreamBuilder<OpendalReader>,
    column: &str,
    bound: (f64, f64),
    row_groups: &[usize],
) -> Result<RowSelection> {
    let converter =
        StatisticsConverter::try_new(column, builder.schema(), builder.parquet_schema())
            .map_err(parquet_error)?;
    let Some(page_index) = metadata.page_index() else {
        return Err(BenchError::Mismatch(
            "the peer file has no page index".into(),
        ));
    };
    let page_index = page_index.as_ref();
    let mins = converter
        .data_page_mins(page_index, row_groups)
        .map_err(parquet_error)?;
    let maxes = converter
        .data_page_maxes(page_index, row_groups)
        .map_err(parquet_error)?;
    let counts = converter
        .data_page_row_counts(page_index, metadata.row_groups(), row_groups)
        .map_err(parquet_error)?
        .ok_or_else(|| BenchError::Mismatch("no page row counts".into()))?;
    let mut selectors = Vec::new();
    for (i, rows) in counts.iter().enumerate() {
        let rows = rows.unwrap_or(0) as usize;
        selectors.push(if overlaps(&mins, &maxes, i, bound) {
            RowSelector::select(rows)
        } else {
            RowSelector::skip(rows)
        });
    }
    Ok(RowSelection::from(selectors))
}

fn parquet_error(e: impl std::fmt::Display) -> BenchError {
    BenchError::Mismatch(format!("parquet peer: {e}"))
}

/// A Parquet file on an OpenDAL operator, for the async reader: ranges read
/// at once, the footer by one suffix read.
struct OpendalReader {
    op: Operator,
    path: String,
}

fn external(e: opendal::Error) -> ParquetError {
    ParquetError::External(Box::new(e))
}

impl AsyncFileReader for OpendalReader {
    fn get_bytes(&mut self, range: Range<u64>) -> BoxFuture<'_, parquet::errors::Result<Bytes>> {
        async move {
            let buf = self
                .op
                .read_with(&self.path)
                .range(range)
                .await
                .map_err(external)?;
            Ok(buf.to_bytes())
        }
        .boxed()
    }

    fn get_byte_ranges(
        &mut self,
        ranges: Vec<Range<u64>>,
    ) -> BoxFuture<'_, parquet::errors::Result<Vec<Bytes>>> {
        let (op, path) = (self.op.clone(), self.path.clone());
        async move {
            let reads = ranges.into_iter().map(|range| {
                let (op, path) = (op.clone(), path.clone());
                async move {
                    let buf = op.read_with(&path).range(range).await.map_err(external)?;
                    Ok::<_, ParquetError>(buf.to_bytes())
                }
            });
            futures::future::try_join_all(reads).await
        }
        .boxed()
    }

    fn get_metadata<'a>(
        &'a mut self,
        options: Option<&'a ArrowReaderOptions>,
    ) -> BoxFuture<'a, parquet::errors::Result<Arc<ParquetMetaData>>> {
        async move {
            let policy = options.map_or(PageIndexPolicy::Skip, |o| o.column_index_policy());
            let metadata = ParquetMetaDataReader::new()
                .with_page_index_policy(policy)
                .with_prefetch_hint(Some(FOOTER_HINT))
                .load_via_suffix_and_finish(self)
                .await?;
            Ok(Arc::new(metadata))
        }
        .boxed()
    }
}

impl MetadataSuffixFetch for &mut OpendalReader {
    fn fetch_suffix(&mut self, suffix: usize) -> BoxFuture<'_, parquet::errors::Result<Bytes>> {
        async move {
            atlas_io::read_suffix(&self.op, &self.path, suffix as u64)
                .await
                .map_err(|e| ParquetError::External(Box::new(e)))
        }
        .boxed()
    }
}

/// Writes the peer file of `total` profiles into `work` and runs `q` on it
/// over a store simulated as `sim`; prints the table row and returns the
/// cost (the names must be the expected ones).
pub async fn measure_query(
    work: &Path,
    total: usize,
    sim: crate::meter::Simulation,
    q: &BoxQuery,
) -> Result<(crate::measure::Cost, u64)> {
    let file = work.join(FILE);
    let size = write(&file, total)?;
    let meter = crate::meter::Meter::new(sim);
    let op = Operator::new(opendal::services::Fs::default().root(&work.to_string_lossy()))?
        .layer(crate::meter::MeterLayer::new(meter.clone()));
    let (names, cost) = crate::measure::measure(&meter, query(&op, FILE, q)).await?;
    let expected: Vec<String> = q
        .expected
        .iter()
        .map(|i| workload::profile(*i).name)
        .collect();
    if names != expected {
        return Err(BenchError::Mismatch(format!(
            "the Parquet peer selected {} profiles, the generator says {}",
            names.len(),
            expected.len()
        )));
    }
    std::fs::remove_file(&file)?;
    Ok((cost, size))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_peer_selects_the_profiles_the_generator_puts_in_the_box_and_skips_row_groups() {
        let dir = tempfile::tempdir().unwrap();
        let total = 5 * ROWS_PER_GROUP;
        let q = BoxQuery::choose(total, ROWS_PER_GROUP);
        assert!(!q.expected.is_empty());
        let sim = crate::meter::Simulation::default();
        let (cost, size) = measure_query(dir.path(), total, sim, &q).await.unwrap();
        // The window spans two row groups of five: the other three are not read.
        assert!(
            cost.io.bytes_read < size * 2 / 3,
            "{} of {size} bytes read",
            cost.io.bytes_read
        );
    }
}
