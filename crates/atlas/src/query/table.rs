//! Long tables: the values of chosen arrays over many datasets, one Arrow row
//! per element, streamed batch by batch.
//!
//! The shape of an analyst's question ("TEMP and PSAL of every profile in this
//! box") is a table with one row per measurement, not one array per dataset.
//! [`Atlas::table`](crate::Atlas::table) builds it:
//! the datasets are picked as [`Atlas::select`](crate::Atlas::select) picks them, every segment
//! involved is made ready for a sweep and every layout is looked at up front
//! (so the schema, the row count and any dimension mismatch are known before
//! a value is read), then each dataset's arrays are read together, a bounded
//! number of datasets ahead and in table order, through the segments'
//! shared block cache, and cut into batches as they arrive. At most one
//! batch is held besides the reads in flight.

use std::collections::{HashMap, HashSet};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use arrow_array::builder::{BinaryBuilder, PrimitiveBuilder, StringBuilder};
use arrow_array::types::{
    Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, TimestampNanosecondType,
    UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{ArrayRef, DictionaryArray, RecordBatch, StringArray};
use arrow_schema::{DataType, Field as ArrowField, Schema, SchemaRef, TimeUnit};
use atlas_format::{DType, MemberEntry};
use futures::stream::{self, BoxStream, Stream, StreamExt};
use indexmap::IndexSet;
use ndarray::ArrayD;
use smallvec::SmallVec;

use super::catalogue::{attribute_column, distinct, requested, selected};
use super::error::QueryError;
use super::eval::Declared;
use super::predicate::Predicate;
use crate::error::AtlasError;
use crate::read::{Dataset, Member, Region};
use crate::set::View;
use crate::{AnyArray, ArrayData, Attr, Value};

/// Rows per batch unless [`TableOptions::rows_per_batch`] says otherwise.
pub const DEFAULT_ROWS_PER_BATCH: usize = 65_536;

/// Reads in flight per array unless [`TableOptions::concurrency`] says otherwise.
const DEFAULT_CONCURRENCY: usize = 16;

/// What [`Atlas::table`](crate::Atlas::table) puts in the long table, and how it cuts it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TableOptions {
    /// The arrays, one column each (at least one).
    pub(crate) arrays: Vec<String>,
    /// Dataset attribute keys, one column each.
    pub(crate) attributes: Vec<String>,
    /// Only the datasets this accepts.
    pub(crate) predicate: Option<Predicate>,
    /// Only the datasets of these names (with the predicate: both).
    pub(crate) names: Option<HashSet<String>>,
    /// Most rows in one batch.
    pub(crate) rows_per_batch: usize,
    /// Reads in flight per array.
    pub(crate) concurrency: usize,
}

impl Default for TableOptions {
    fn default() -> Self {
        Self {
            arrays: Vec::new(),
            attributes: Vec::new(),
            predicate: None,
            names: None,
            rows_per_batch: DEFAULT_ROWS_PER_BATCH,
            concurrency: DEFAULT_CONCURRENCY,
        }
    }
}

impl TableOptions {
    /// A table of these arrays (one column each, in this order), with the defaults otherwise.
    pub fn new<S: Into<String>>(arrays: impl IntoIterator<Item = S>) -> Self {
        Self::default().arrays(arrays)
    }

    /// One column per array, in this order; they must share their dimensions
    /// within each dataset. At least one is required.
    pub fn arrays<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.arrays = names.into_iter().map(Into::into).collect();
        self
    }

    /// One column per dataset attribute key, in this order, after the arrays:
    /// the dataset's value on each of its rows, null where it lacks the key.
    pub fn attributes<S: Into<String>>(mut self, keys: impl IntoIterator<Item = S>) -> Self {
        self.attributes = keys.into_iter().map(Into::into).collect();
        self
    }

    /// Rows of the datasets `predicate` accepts only; the others are not read.
    pub fn predicate(mut self, predicate: Predicate) -> Self {
        self.predicate = Some(predicate);
        self
    }

    /// Rows of the live datasets of these names only (the others are not
    /// read; names no live dataset has are ignored), still in collection
    /// order: one partition of a table that many workers build in parts.
    pub fn datasets<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.names = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// Cut the table into batches of at most `rows` rows (at least 1; default
    /// [`DEFAULT_ROWS_PER_BATCH`]). Every batch but the last is full; a
    /// dataset's rows may span two batches.
    pub fn rows_per_batch(mut self, rows: usize) -> Self {
        self.rows_per_batch = rows.max(1);
        self
    }

    /// Read at most `reads` datasets ahead per array (at least 1; default 16),
    /// as [`Atlas::read_many`](crate::Atlas::read_many) does.
    pub fn concurrency(mut self, reads: usize) -> Self {
        self.concurrency = reads.max(1);
        self
    }

    /// The predicate, if any (the set uses it to skip members).
    pub(crate) fn predicate_ref(&self) -> Option<&Predicate> {
        self.predicate.as_ref()
    }
}

/// A long table on its way: the schema and row count, known before any value
/// is read, and the batches as a [`Stream`] that reads as it is polled.
///
/// The stream ends after the first error it yields.
pub struct TableStream {
    schema: SchemaRef,
    rows: u64,
    datasets: usize,
    batches: BoxStream<'static, Result<RecordBatch, QueryError>>,
}

impl std::fmt::Debug for TableStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableStream")
            .field("columns", &self.schema.fields().len())
            .field("rows", &self.rows)
            .field("datasets", &self.datasets)
            .finish_non_exhaustive()
    }
}

impl TableStream {
    /// The schema every batch has.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// Rows the whole stream yields (from the segment footers).
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Datasets that contribute rows (declare at least one of the arrays).
    pub fn datasets(&self) -> usize {
        self.datasets
    }
}

impl Stream for TableStream {
    type Item = Result<RecordBatch, QueryError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.batches.poll_next_unpin(cx)
    }
}

/// Parts held in one run of [`Filler::parts`].
const PARTS_PER_RUN: usize = 1024;

/// What one dataset contributes. Nothing of it is on the heap for
/// datasets of rank two or less in a table without attribute columns: a
/// table over a million datasets holds one of these for each until the
/// filler is past it.
struct Part {
    dataset: Dataset,
    /// Which of the table's [`Kind`]s it is.
    kind: usize,
    /// Length of each of its axes.
    shape: SmallVec<[u64; 2]>,
    /// Its rows: the product of `shape`.
    rows: u64,
    /// Its value of each attribute column (one shared empty list when
    /// the table has none).
    attrs: Arc<[Option<Attr>]>,
}

/// What the datasets of one layout share: which of the arrays they
/// declare and the names of their axes. A collection of one convention has
/// a handful, however many datasets it holds.
#[derive(PartialEq, Eq, Hash)]
struct Kind {
    /// Whether it declares each array.
    has: Vec<bool>,
    /// Its axes' names, in order.
    names: Vec<String>,
}

/// A [`Kind`] placed among the table's columns.
struct PlacedKind {
    has: Vec<bool>,
    /// For each index column, which of its axes it is (`None`: it has no such axis).
    axes: Vec<Option<usize>>,
}

/// The long table of the live datasets of `views` (in order) that the
/// predicate accepts: a collection is the one-view case, a set passes its
/// members with replaced copies hidden.
pub(crate) async fn table_with(
    views: Vec<View>,
    options: &TableOptions,
) -> Result<TableStream, QueryError> {
    if options.arrays.is_empty() {
        return Err(QueryError::NoArrays);
    }
    let declared = Declared::of(&views);
    let arrays = requested(Some(&options.arrays), &declared.arrays)?;
    let attributes = requested(Some(&options.attributes), &declared.attributes)?;
    let (mut rows, mut facts) = selected(
        &views,
        &declared,
        &attributes,
        &[],
        options.predicate.as_ref(),
    )
    .await?;
    if let Some(names) = &options.names {
        rows.retain(|ds| names.contains(ds.name()));
    }

    // One element type per array, and a column type for it.
    let mut dtypes: Vec<DType> = Vec::with_capacity(arrays.len());
    for array in &arrays {
        let mut found: Vec<DType> = distinct(
            rows.iter()
                .map(|d| d.schema().array(array).map(|m| m.dtype())),
        )
        .into_iter()
        .cloned()
        .collect();
        if found.is_empty() {
            // No chosen dataset declares it: type the (all-null) column as the others do.
            let all: Vec<Dataset> = views.iter().flat_map(View::datasets).collect();
            found = distinct(
                all.iter()
                    .map(|d| d.schema().array(array).map(|m| m.dtype())),
            )
            .into_iter()
            .cloned()
            .collect();
        }
        let dtype = match found.as_slice() {
            [one] => one.clone(),
            [] => {
                return Err(QueryError::UnknownName {
                    name: array.clone(),
                });
            }
            many => {
                return Err(QueryError::MixedArrayTypes {
                    array: array.clone(),
                    types: many.to_vec(),
                });
            }
        };
        if column_type(&dtype).is_none() {
            return Err(QueryError::UnsupportedArrayType {
                array: array.clone(),
                dtype: dtype.clone(),
            });
        }
        dtypes.push(dtype);
    }

    // Every segment involved made ready for a sweep, concurrently, before
    // any layout is asked: the index's chunk places where it has them (the
    // layouts then come from there), the segment footer otherwise.
    let mut sweeps: HashMap<(usize, &str), (Member, usize)> = HashMap::new();
    for ds in &rows {
        for array in &arrays {
            if ds.schema().array(array).is_some() {
                let (_, n) = sweeps
                    .entry((ds.member().key(), array.as_str()))
                    .or_insert_with(|| (ds.member().clone(), 0));
                *n = n.saturating_add(1);
            }
        }
    }
    futures::future::try_join_all(
        sweeps
            .iter()
            .map(|((_, array), (member, n))| member.prepare_sweep(array, *n)),
    )
    .await?;

    // Each dataset's layout (shared dimensions, its row count) and kind.
    // In runs, each let go once the filler is past it: what is still to
    // add is held, not a slot for every dataset until the table is done.
    let mut kinds: IndexSet<Kind> = IndexSet::new();
    let mut parts: Vec<Vec<Part>> = Vec::new();
    let mut total_rows: u64 = 0;
    let mut wide = false;
    let no_attrs: Arc<[Option<Attr>]> = Arc::from(Vec::new());
    for ds in rows {
        let has: Vec<bool> = arrays
            .iter()
            .map(|a| ds.schema().array(a).is_some())
            .collect();
        let mut first: Option<(Vec<String>, SmallVec<[u64; 2]>)> = None;
        for (array, _) in arrays.iter().zip(&has).filter(|(_, h)| **h) {
            let layout = ds.array_layout(array).await?;
            let names = axis_names(&layout.dimension_names, layout.shape.len());
            match &first {
                None => first = Some((names, SmallVec::from_slice(&layout.shape))),
                Some((n, s)) if *n == names && s.as_slice() == layout.shape.as_slice() => {}
                Some(_) => return Err(dimensions_differ(&ds, &arrays, &has).await),
            }
        }
        let Some((names, shape)) = first else {
            continue; // none of the arrays: no rows
        };
        wide |= shape.iter().any(|&l| l > u64::from(u32::MAX));
        let rows = shape
            .iter()
            .try_fold(1u64, |acc, &l| acc.checked_mul(l))
            .ok_or_else(|| {
                AtlasError::corrupt(format!(
                    "dataset {:?}: element count of {shape:?} overflows",
                    ds.name()
                ))
            })?;
        total_rows = total_rows.saturating_add(rows);
        let attrs: Arc<[Option<Attr>]> = if attributes.is_empty() {
            no_attrs.clone()
        } else {
            attributes
                .iter()
                .map(|key| {
                    facts
                        .attrs
                        .get_mut(key)
                        .and_then(|by_name| by_name.remove(ds.name()))
                })
                .collect()
        };
        let (kind, _) = kinds.insert_full(Kind { has, names });
        if parts.last().is_none_or(|run| run.len() >= PARTS_PER_RUN) {
            parts.push(Vec::with_capacity(PARTS_PER_RUN));
        }
        if let Some(run) = parts.last_mut() {
            run.push(Part {
                dataset: ds,
                kind,
                shape,
                rows,
                attrs,
            });
        }
    }

    // The index columns: every axis name, in the order datasets bring them.
    let mut index_names: Vec<String> = Vec::new();
    for kind in kinds.iter() {
        for name in &kind.names {
            if !index_names.contains(name) {
                index_names.push(name.clone());
            }
        }
    }
    let everyone_has: Vec<bool> = index_names
        .iter()
        .map(|n| kinds.iter().all(|k| k.names.contains(n)))
        .collect();
    let kinds: Vec<PlacedKind> = kinds
        .into_iter()
        .map(|Kind { has, names }| PlacedKind {
            has,
            axes: index_names
                .iter()
                .map(|n| names.iter().position(|m| m == n))
                .collect(),
        })
        .collect();

    // The schema, and the attribute columns' declared types.
    let taken: HashSet<&str> = arrays
        .iter()
        .map(String::as_str)
        .chain(attributes.iter().map(String::as_str))
        .chain(["dataset"])
        .collect();
    let index_type = if wide {
        DataType::UInt64
    } else {
        DataType::UInt32
    };
    let mut fields = vec![ArrowField::new("dataset", dataset_type(), false)];
    for (name, all) in index_names.iter().zip(&everyone_has) {
        let column = if taken.contains(name.as_str()) {
            format!("{name}_index")
        } else {
            name.clone()
        };
        fields.push(ArrowField::new(column, index_type.clone(), !*all));
    }
    for (array, dtype) in arrays.iter().zip(&dtypes) {
        let data_type = column_type(dtype).unwrap_or(DataType::Null);
        fields.push(ArrowField::new(array, data_type, true));
    }
    let attr_dtypes: Vec<Vec<DType>> = attributes
        .iter()
        .map(|key| {
            distinct(
                parts
                    .iter()
                    .flatten()
                    .map(|p| p.dataset.schema().attribute_dtype(key)),
            )
            .into_iter()
            .cloned()
            .collect()
        })
        .collect();
    for (key, dtypes) in attributes.iter().zip(&attr_dtypes) {
        let refs: Vec<&DType> = dtypes.iter().collect();
        let data_type = attribute_column(&refs, &[]).data_type().clone();
        let column = if arrays.contains(key) || key == "dataset" {
            format!("@{key}")
        } else {
            key.clone()
        };
        fields.push(ArrowField::new(column, data_type, true));
    }
    let schema = Arc::new(Schema::new(fields));

    let datasets = parts.iter().map(Vec::len).sum();
    // One pipeline: each dataset's arrays read together, a bounded number
    // of datasets ahead, in table order; a dataset's slot is let go as the
    // filler takes its values.
    let kinds: Arc<[PlacedKind]> = kinds.into();
    let read_kinds = Arc::clone(&kinds);
    let read_arrays: Arc<[String]> = arrays.clone().into();
    let reads = stream::iter(parts.into_iter().flatten())
        .map(move |part| {
            let kinds = Arc::clone(&read_kinds);
            let arrays = Arc::clone(&read_arrays);
            async move {
                let has = kinds.get(part.kind).map_or(&[][..], |k| &k.has[..]);
                let reads = arrays.iter().zip(has).map(|(array, has)| {
                    let dataset = &part.dataset;
                    async move {
                        match has {
                            true => Some(dataset.read_any(array, Region::all()).await),
                            false => None,
                        }
                    }
                });
                let values = futures::future::join_all(reads).await;
                (part, values)
            }
        })
        .buffered(options.concurrency)
        .boxed();
    let builder = BatchBuilder::new(
        schema.clone(),
        options.rows_per_batch,
        total_rows,
        wide,
        index_names.len(),
        &dtypes,
        attr_dtypes,
    )?;
    let filler = Filler {
        kinds,
        reads,
        builder,
        done: false,
    };
    let batches = stream::unfold(filler, Filler::next_batches)
        .flat_map(stream::iter)
        .boxed();
    Ok(TableStream {
        schema,
        rows: total_rows,
        datasets,
        batches,
    })
}

/// The empty table of a set whose member summaries rule out every member:
/// `dataset`, the arrays typed as the manifest summarises them, the attribute
/// columns typed null (no index column: no segment was read to name one).
///
/// # Errors
/// [`QueryError::NoArrays`].
pub(crate) fn ruled_out(
    options: &TableOptions,
    members: &[MemberEntry],
) -> Result<TableStream, QueryError> {
    if options.arrays.is_empty() {
        return Err(QueryError::NoArrays);
    }
    let mut fields = vec![ArrowField::new("dataset", dataset_type(), false)];
    for array in &options.arrays {
        let data_type = members
            .iter()
            .flat_map(|m| &m.variables)
            .find(|v| &v.name == array)
            .and_then(|v| column_type(&v.dtype))
            .unwrap_or(DataType::Null);
        fields.push(ArrowField::new(array, data_type, true));
    }
    for key in &options.attributes {
        fields.push(ArrowField::new(key, DataType::Null, true));
    }
    Ok(TableStream {
        schema: Arc::new(Schema::new(fields)),
        rows: 0,
        datasets: 0,
        batches: stream::empty().boxed(),
    })
}

/// The `dataset` column's type: each batch's names once, and a key per row.
fn dataset_type() -> DataType {
    DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
}

/// The Arrow type of an array column of `dtype`; `None` for element types a
/// table does not take.
fn column_type(dtype: &DType) -> Option<DataType> {
    Some(match dtype {
        DType::Int8 => DataType::Int8,
        DType::Int16 => DataType::Int16,
        DType::Int32 => DataType::Int32,
        DType::Int64 => DataType::Int64,
        DType::UInt8 => DataType::UInt8,
        DType::UInt16 => DataType::UInt16,
        DType::UInt32 => DataType::UInt32,
        DType::UInt64 => DataType::UInt64,
        DType::Float32 => DataType::Float32,
        DType::Float64 => DataType::Float64,
        DType::TimestampNs => DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
        DType::String => DataType::Utf8,
        DType::Binary => DataType::Binary,
        _ => return None,
    })
}

/// The error for dataset `ds`, whose arrays (those of `arrays` it declares,
/// as `has` says) differ in their axes: each with its axes, as read again.
async fn dimensions_differ(ds: &Dataset, arrays: &[String], has: &[bool]) -> QueryError {
    let declared: Vec<String> = arrays
        .iter()
        .zip(has)
        .filter(|(_, h)| **h)
        .map(|(a, _)| a.clone())
        .collect();
    let mut shapes: Vec<String> = Vec::new();
    for array in &declared {
        let layout = match ds.array_layout(array).await {
            Ok(layout) => layout,
            Err(e) => return e.into(),
        };
        let names = axis_names(&layout.dimension_names, layout.shape.len());
        let axes: Vec<String> = names
            .iter()
            .zip(&layout.shape)
            .map(|(n, l)| format!("{n}={l}"))
            .collect();
        shapes.push(format!("{array}({})", axes.join(", ")));
    }
    QueryError::DimensionsDiffer {
        dataset: ds.name().to_owned(),
        arrays: declared,
        shapes: shapes.join(", "),
    }
}

/// The names of `rank` axes: as recorded, or `dim_0`, `dim_1`, ... when the
/// segment records none (or not one per axis).
fn axis_names(recorded: &[String], rank: usize) -> Vec<String> {
    if recorded.len() == rank && recorded.iter().all(|n| !n.is_empty()) {
        recorded.to_vec()
    } else {
        (0..rank).map(|i| format!("dim_{i}")).collect()
    }
}

/// A dataset still to add, with what reading each array of the table gave
/// (`None` where it declares no such array).
type PartRead = (Part, Vec<Option<crate::Result<AnyArray>>>);

/// The datasets still to add with their values, and the batch being filled.
struct Filler {
    /// What the parts' kinds say of the table's columns.
    kinds: Arc<[PlacedKind]>,
    /// The parts in table order, each with its values.
    reads: BoxStream<'static, PartRead>,
    builder: BatchBuilder,
    done: bool,
}

impl Filler {
    /// Adds datasets until at least one batch is full (or the parts run out),
    /// and returns the batches made; `None` once everything was returned.
    async fn next_batches(mut self) -> Option<(Vec<Result<RecordBatch, QueryError>>, Filler)> {
        if self.done {
            return None;
        }
        loop {
            let Some((part, read)) = self.reads.next().await else {
                self.done = true;
                return self.builder.finish_rest().map(|last| (vec![last], self));
            };
            let made = match (self.kinds.get(part.kind), values_of(&part, read)) {
                (Some(kind), Ok(values)) => self.builder.add(&part, &kind.axes, &values),
                (None, _) => Err(AtlasError::corrupt("a dataset of no kind").into()),
                (_, Err(e)) => Err(e),
            };
            match made {
                Ok(batches) if batches.is_empty() => {}
                Ok(batches) => return Some((batches.into_iter().map(Ok).collect(), self)),
                Err(e) => {
                    self.done = true;
                    return Some((vec![Err(e)], self));
                }
            }
        }
    }
}

/// The values of `part`'s arrays as `read` gave them, checked against its
/// layout.
fn values_of(
    part: &Part,
    read: Vec<Option<crate::Result<AnyArray>>>,
) -> Result<Vec<Option<Values>>, QueryError> {
    let mut values = Vec::with_capacity(read.len());
    for result in read {
        let Some(result) = result else {
            values.push(None);
            continue;
        };
        let read = result?;
        let fill = read.fill().and_then(Value::timestamp).map(|t| t.nanos());
        let data = read.into_data();
        if u64::try_from(data.len()).ok() != Some(part.rows) {
            return Err(AtlasError::corrupt(format!(
                "dataset {:?}: read {} elements where the layout says {}",
                part.dataset.name(),
                data.len(),
                part.rows
            ))
            .into());
        }
        values.push(Some(Values { data, fill }));
    }
    Ok(values)
}

/// One array of one dataset, as read.
struct Values {
    data: ArrayData,
    /// The fill value of a timestamp array: such elements become nulls (NaT).
    fill: Option<i64>,
}

/// One batch being filled.
struct BatchBuilder {
    schema: SchemaRef,
    capacity: usize,
    len: usize,
    /// Dataset names of this batch (the dictionary) and each row's key.
    names: Vec<String>,
    keys: PrimitiveBuilder<Int32Type>,
    index: Vec<IndexBuilder>,
    columns: Vec<ColumnBuilder>,
    /// Attribute values of the datasets in this batch, and their row counts.
    attr_runs: Vec<(Arc<[Option<Attr>]>, usize)>,
    attr_dtypes: Vec<Vec<DType>>,
    /// What the builders are made from for each batch.
    wide: bool,
    dtypes: Vec<DType>,
    /// Rows of the table not yet in a finished batch.
    remaining: u64,
}

impl BatchBuilder {
    /// A builder of batches of `capacity` rows for a table of `rows` rows.
    fn new(
        schema: SchemaRef,
        capacity: usize,
        rows: u64,
        wide: bool,
        index_columns: usize,
        dtypes: &[DType],
        attr_dtypes: Vec<Vec<DType>>,
    ) -> Result<Self, QueryError> {
        let mut builder = Self {
            schema,
            capacity,
            len: 0,
            names: Vec::new(),
            keys: PrimitiveBuilder::new(),
            index: (0..index_columns)
                .map(|_| IndexBuilder::with_capacity(wide, 0))
                .collect(),
            columns: Vec::new(),
            attr_runs: Vec::new(),
            attr_dtypes,
            wide,
            dtypes: dtypes.to_vec(),
            remaining: rows,
        };
        builder.size_next_batch()?;
        Ok(builder)
    }

    /// Fresh builders with room for exactly the rows the next batch will
    /// hold (a whole batch, or what is left of the table): no column grows
    /// by copying itself, and none keeps room for rows that never come.
    fn size_next_batch(&mut self) -> Result<(), QueryError> {
        let rows = usize::try_from(self.remaining)
            .unwrap_or(usize::MAX)
            .min(self.capacity);
        self.keys = PrimitiveBuilder::with_capacity(rows);
        for column in &mut self.index {
            *column = IndexBuilder::with_capacity(self.wide, rows);
        }
        self.columns = self
            .dtypes
            .iter()
            .map(|d| {
                ColumnBuilder::with_capacity(d, rows).ok_or_else(|| {
                    QueryError::UnsupportedArrayType {
                        array: String::new(),
                        dtype: d.clone(),
                    }
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(())
    }

    /// Appends `part`'s rows (`values`: per array, `None` where it lacks it)
    /// and returns the batches that filled up on the way.
    fn add(
        &mut self,
        part: &Part,
        axes: &[Option<usize>],
        values: &[Option<Values>],
    ) -> Result<Vec<RecordBatch>, QueryError> {
        let total = usize::try_from(part.rows).map_err(|_| {
            AtlasError::corrupt(format!(
                "dataset {:?} has more rows than memory holds",
                part.dataset.name()
            ))
        })?;
        let mut done = Vec::new();
        let mut offset = 0usize;
        while offset < total {
            let room = self.capacity.saturating_sub(self.len).max(1);
            let n = room.min(total.saturating_sub(offset));
            let end = offset.saturating_add(n);
            if self.names.last().map(String::as_str) != Some(part.dataset.name()) {
                self.names.push(part.dataset.name().to_owned());
            }
            let key = i32::try_from(self.names.len().saturating_sub(1))
                .map_err(|_| AtlasError::invalid_use("more datasets in one batch than i32 keys"))?;
            self.keys.append_value_n(key, n);
            for (column, axis) in self.index.iter_mut().zip(axes) {
                match axis {
                    None => column.append_nulls(n),
                    Some(axis) => column.append_positions(&part.shape, *axis, offset, end),
                }
            }
            for (column, data) in self.columns.iter_mut().zip(values) {
                match data {
                    None => column.append_nulls(n),
                    Some(v) => column.append(v, offset, end, part.dataset.name())?,
                }
            }
            self.attr_runs.push((part.attrs.clone(), n));
            self.len = self.len.saturating_add(n);
            self.remaining = self.remaining.saturating_sub(n as u64);
            offset = end;
            if self.len >= self.capacity {
                done.push(self.finish()?);
            }
        }
        Ok(done)
    }

    /// The last, partly filled batch; `None` when it holds no row.
    fn finish_rest(&mut self) -> Option<Result<RecordBatch, QueryError>> {
        (self.len > 0).then(|| self.finish())
    }

    /// The batch so far, and an empty one to fill next.
    fn finish(&mut self) -> Result<RecordBatch, QueryError> {
        let keys = self.keys.finish();
        let names = StringArray::from(std::mem::take(&mut self.names));
        let dataset = DictionaryArray::<Int32Type>::try_new(keys, Arc::new(names))?;
        let mut columns: Vec<ArrayRef> = vec![Arc::new(dataset)];
        columns.extend(self.index.iter_mut().map(IndexBuilder::finish));
        columns.extend(self.columns.iter_mut().map(ColumnBuilder::finish));
        let runs = std::mem::take(&mut self.attr_runs);
        for (i, dtypes) in self.attr_dtypes.iter().enumerate() {
            let values: Vec<Option<&Attr>> = runs
                .iter()
                .flat_map(|(attrs, n)| {
                    std::iter::repeat_n(attrs.get(i).and_then(Option::as_ref), *n)
                })
                .collect();
            let refs: Vec<&DType> = dtypes.iter().collect();
            columns.push(attribute_column(&refs, &values));
        }
        self.len = 0;
        self.size_next_batch()?;
        Ok(RecordBatch::try_new(self.schema.clone(), columns)?)
    }
}

/// An index column: uint32, or uint64 when some axis is longer.
enum IndexBuilder {
    Narrow(PrimitiveBuilder<UInt32Type>),
    Wide(PrimitiveBuilder<UInt64Type>),
}

impl IndexBuilder {
    fn with_capacity(wide: bool, rows: usize) -> Self {
        if wide {
            IndexBuilder::Wide(PrimitiveBuilder::with_capacity(rows))
        } else {
            IndexBuilder::Narrow(PrimitiveBuilder::with_capacity(rows))
        }
    }

    fn append_nulls(&mut self, n: usize) {
        match self {
            IndexBuilder::Narrow(b) => b.append_nulls(n),
            IndexBuilder::Wide(b) => b.append_nulls(n),
        }
    }

    /// The position along `axis` of the elements `start..end` (row-major) of
    /// an array of `shape`.
    fn append_positions(&mut self, shape: &[u64], axis: usize, start: usize, end: usize) {
        let stride: u64 = shape
            .get(axis.saturating_add(1)..)
            .unwrap_or_default()
            .iter()
            .product();
        let len = shape.get(axis).copied().unwrap_or(1);
        let position = |i: usize| {
            (i as u64)
                .checked_div(stride)
                .and_then(|q| q.checked_rem(len))
                .unwrap_or(0)
        };
        match self {
            IndexBuilder::Narrow(b) => {
                // Narrow only when every axis fits in u32 (checked up front).
                b.extend(
                    (start..end).map(|i| Some(u32::try_from(position(i)).unwrap_or(u32::MAX))),
                );
            }
            IndexBuilder::Wide(b) => b.extend((start..end).map(|i| Some(position(i)))),
        }
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            IndexBuilder::Narrow(b) => Arc::new(b.finish()),
            IndexBuilder::Wide(b) => Arc::new(b.finish()),
        }
    }
}

/// An array column being filled, one variant per element type a table takes.
enum ColumnBuilder {
    Int8(PrimitiveBuilder<Int8Type>),
    Int16(PrimitiveBuilder<Int16Type>),
    Int32(PrimitiveBuilder<Int32Type>),
    Int64(PrimitiveBuilder<Int64Type>),
    UInt8(PrimitiveBuilder<UInt8Type>),
    UInt16(PrimitiveBuilder<UInt16Type>),
    UInt32(PrimitiveBuilder<UInt32Type>),
    UInt64(PrimitiveBuilder<UInt64Type>),
    Float32(PrimitiveBuilder<Float32Type>),
    Float64(PrimitiveBuilder<Float64Type>),
    Timestamp(PrimitiveBuilder<TimestampNanosecondType>),
    String(StringBuilder),
    Binary(BinaryBuilder),
}

/// Elements `start..end` of `a` in row-major order; `None` outside it (or for
/// an array not in standard layout, which reads never return).
fn window<T>(a: &ArrayD<T>, start: usize, end: usize) -> Option<&[T]> {
    a.as_slice()?.get(start..end)
}

impl ColumnBuilder {
    /// A builder of `dtype` elements with room for `rows` of them; `None`
    /// for a type a table does not take.
    fn with_capacity(dtype: &DType, rows: usize) -> Option<Self> {
        Some(match dtype {
            DType::Int8 => Self::Int8(PrimitiveBuilder::with_capacity(rows)),
            DType::Int16 => Self::Int16(PrimitiveBuilder::with_capacity(rows)),
            DType::Int32 => Self::Int32(PrimitiveBuilder::with_capacity(rows)),
            DType::Int64 => Self::Int64(PrimitiveBuilder::with_capacity(rows)),
            DType::UInt8 => Self::UInt8(PrimitiveBuilder::with_capacity(rows)),
            DType::UInt16 => Self::UInt16(PrimitiveBuilder::with_capacity(rows)),
            DType::UInt32 => Self::UInt32(PrimitiveBuilder::with_capacity(rows)),
            DType::UInt64 => Self::UInt64(PrimitiveBuilder::with_capacity(rows)),
            DType::Float32 => Self::Float32(PrimitiveBuilder::with_capacity(rows)),
            DType::Float64 => Self::Float64(PrimitiveBuilder::with_capacity(rows)),
            DType::TimestampNs => Self::Timestamp(
                PrimitiveBuilder::with_capacity(rows).with_data_type(column_type(dtype)?),
            ),
            DType::String => Self::String(StringBuilder::with_capacity(rows, 0)),
            DType::Binary => Self::Binary(BinaryBuilder::with_capacity(rows, 0)),
            _ => return None,
        })
    }

    fn append_nulls(&mut self, n: usize) {
        match self {
            Self::Int8(b) => b.append_nulls(n),
            Self::Int16(b) => b.append_nulls(n),
            Self::Int32(b) => b.append_nulls(n),
            Self::Int64(b) => b.append_nulls(n),
            Self::UInt8(b) => b.append_nulls(n),
            Self::UInt16(b) => b.append_nulls(n),
            Self::UInt32(b) => b.append_nulls(n),
            Self::UInt64(b) => b.append_nulls(n),
            Self::Float32(b) => b.append_nulls(n),
            Self::Float64(b) => b.append_nulls(n),
            Self::Timestamp(b) => b.append_nulls(n),
            Self::String(b) => (0..n).for_each(|_| b.append_null()),
            Self::Binary(b) => (0..n).for_each(|_| b.append_null()),
        }
    }

    /// Appends elements `start..end` of `values`, which must be of this
    /// column's type (timestamps equal to the fill value as nulls).
    fn append(
        &mut self,
        values: &Values,
        start: usize,
        end: usize,
        dataset: &str,
    ) -> Result<(), QueryError> {
        let outside = || {
            QueryError::Atlas(AtlasError::corrupt(format!(
                "dataset {dataset:?}: elements {start}..{end} are not in the array read"
            )))
        };
        let fill = values.fill;
        macro_rules! slices {
            ($($v:ident),*) => {
                match (self, &values.data) {
                    $((Self::$v(b), ArrayData::$v(a)) => {
                        b.append_slice(window(a, start, end).ok_or_else(outside)?);
                    })*
                    (Self::Timestamp(b), ArrayData::Timestamp(a)) => {
                        let values = window(a, start, end).ok_or_else(outside)?;
                        b.extend(
                            values
                                .iter()
                                .map(|t| (Some(t.nanos()) != fill).then_some(t.nanos())),
                        );
                    }
                    (Self::String(b), ArrayData::String(a)) => {
                        for v in window(a, start, end).ok_or_else(outside)? {
                            b.append_value(v);
                        }
                    }
                    (Self::Binary(b), ArrayData::Binary(a)) => {
                        for v in window(a, start, end).ok_or_else(outside)? {
                            b.append_value(v);
                        }
                    }
                    (_, data) => {
                        return Err(QueryError::Atlas(AtlasError::corrupt(format!(
                            "dataset {dataset:?}: read {} elements for a column of another type",
                            data.dtype().display_name()
                        ))));
                    }
                }
            };
        }
        slices!(
            Int8, Int16, Int32, Int64, UInt8, UInt16, UInt32, UInt64, Float32, Float64
        );
        Ok(())
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Self::Int8(b) => Arc::new(b.finish()),
            Self::Int16(b) => Arc::new(b.finish()),
            Self::Int32(b) => Arc::new(b.finish()),
            Self::Int64(b) => Arc::new(b.finish()),
            Self::UInt8(b) => Arc::new(b.finish()),
            Self::UInt16(b) => Arc::new(b.finish()),
            Self::UInt32(b) => Arc::new(b.finish()),
            Self::UInt64(b) => Arc::new(b.finish()),
            Self::Float32(b) => Arc::new(b.finish()),
            Self::Float64(b) => Arc::new(b.finish()),
            Self::Timestamp(b) => Arc::new(b.finish()),
            Self::String(b) => Arc::new(b.finish()),
            Self::Binary(b) => Arc::new(b.finish()),
        }
    }
}
