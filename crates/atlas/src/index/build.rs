//! Building an index from a container's footers: one read of every segment
//! footer, one row per dataset, written as one Parquet object.

use std::sync::Arc;

use arrow_array::builder::{NullBufferBuilder, OffsetBufferBuilder};
use arrow_array::types::{UInt32Type, UInt64Type};
use arrow_array::{
    ArrayRef, ArrowPrimitiveType, BinaryArray, Float64Array, Int64Array, ListArray, PrimitiveArray,
    RecordBatch, StringArray, TimestampNanosecondArray, UInt32Array, UInt64Array,
};
use arrow_schema::{Field as ArrowField, Schema};
use atlas_format::{AttributeSummary, DType, VariableSummary};
use indexmap::IndexMap;
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_writer::{
    ArrowColumnChunk, ArrowRowGroupWriterFactory, ArrowWriterOptions, compute_leaves,
};
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::errors::ParquetError;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;
use smol_str::SmolStr;

use super::checksum;
use super::meta::{
    ContainerIdentity, INDEX_VERSION, IndexMeta, IndexedAttribute, IndexedVariable, META_KEY,
    NAME_COLUMN, ORDINAL_COLUMN, Places, ROWS_PER_GROUP, RowGroupBounds, StatKind, VERSION_KEY,
    VariableTotals, block_column, bound_columns, chunk_shape_column, chunks_column, count_column,
    nulls_column, shape_column,
};
use crate::error::{AtlasError, Result};
use crate::query::attr_column;
use crate::read::{Live, Member, Source};
use crate::set::summary::{Declared, attribute_bounds, fold_variable};
use crate::{ArrayStats, Attr, Value};
use atlas_segment::{ArrayDigest, SegmentDigest};

/// How [`Member::write_index`](crate::Member::write_index) lays out an index.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct IndexOptions {
    pub(crate) rows_per_group: usize,
}

impl Default for IndexOptions {
    /// Row groups of 4096 datasets.
    fn default() -> Self {
        IndexOptions {
            rows_per_group: ROWS_PER_GROUP,
        }
    }
}

impl IndexOptions {
    /// Datasets per row group (at least 1): smaller groups let a predicate
    /// skip more precisely, larger ones cost fewer requests when it cannot.
    pub fn rows_per_group(mut self, rows: usize) -> Self {
        self.rows_per_group = rows.max(1);
        self
    }
}

/// What [`Member::write_index`](crate::Member::write_index) wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct IndexReport {
    /// Rows: the container's datasets, deleted ones included.
    pub datasets: u64,
    /// Row groups.
    pub row_groups: usize,
    /// Size of the index object in bytes.
    pub bytes: u64,
    /// Variables whose statistics the index holds.
    pub variables: Vec<String>,
    /// Variables it does not hold (their datasets disagree on the kind of
    /// statistic, or the type has none), which questions read from footers.
    pub variables_left_out: Vec<String>,
    /// Dataset attributes it holds.
    pub attributes: Vec<String>,
    /// Attributes it does not hold (declared with different types, or of
    /// a list type).
    pub attributes_left_out: Vec<String>,
}

/// One variable as read from its segment: per ordinal, `None` when the
/// dataset does not declare it.
struct VariableRows<'a> {
    name: String,
    rows: Vec<Option<Cell<'a>>>,
    /// The variable's segment as a whole (its blocks, where its data ends).
    segment: Option<Arc<SegmentDigest>>,
}

/// What the index holds of one dataset's array.
#[derive(Clone)]
struct Cell<'a> {
    /// The declared type.
    dtype: DType,
    /// What the segment records of it: statistics, shape, chunks (in the
    /// segment's digest, not copied).
    digest: &'a ArrayDigest,
}

/// One dataset attribute: per ordinal, the value of a dataset declaring it.
struct AttributeRows {
    key: String,
    dtypes: Vec<DType>,
    rows: Vec<Option<Attr>>,
}

/// One dataset's attributes as its writer set them, in order.
pub(crate) type DatasetAttributes = Vec<(SmolStr, Attr)>;

/// The dataset attributes a writer set, gathered by key as its datasets
/// finish, so that the index reads no footer for them. Values are filed by
/// the dataset's writer slot until the commit numbers the datasets.
#[derive(Default)]
pub(crate) struct WrittenAttributes {
    by_key: IndexMap<SmolStr, Vec<(u32, Attr)>, foldhash::fast::FixedState>,
}

impl WrittenAttributes {
    /// Files the attributes of the dataset in writer slot `slot`.
    pub(crate) fn record(&mut self, slot: usize, attributes: DatasetAttributes) {
        let slot = u32::try_from(slot).unwrap_or(u32::MAX);
        for (key, value) in attributes {
            self.by_key.entry(key).or_default().push((slot, value));
        }
    }

    /// The same values filed by ordinal: `ordinal_of(slot)` is the ordinal
    /// the commit gave the dataset of that slot (`None`: not committed).
    pub(crate) fn by_ordinal(mut self, ordinal_of: impl Fn(u32) -> Option<u32>) -> Self {
        for cells in self.by_key.values_mut() {
            cells.retain_mut(|(at, _)| match ordinal_of(*at) {
                Some(ordinal) => {
                    *at = ordinal;
                    true
                }
                None => false,
            });
        }
        self
    }

    /// Key `key`'s values, one row per ordinal below `total` (taken out).
    fn take_rows(&mut self, key: &str, total: usize) -> Vec<Option<Attr>> {
        let mut rows = vec![None; total];
        for (ordinal, value) in self.by_key.swap_remove(key).unwrap_or_default() {
            if let Some(slot) = rows.get_mut(ordinal as usize) {
                *slot = Some(value);
            }
        }
        rows
    }
}

/// The index of `member` as Parquet bytes, and what it holds. Dataset
/// attributes come from `written` when the caller wrote them, else from
/// the footers.
pub(crate) async fn build(
    member: &Member,
    options: &IndexOptions,
    mut written: Option<WrittenAttributes>,
) -> Result<(Vec<u8>, IndexReport)> {
    let total = member.dataset_count_total();
    let all = Live::all(total);
    let (array_names, attribute_keys) = declared_names(member);
    let mut facts = Vec::with_capacity(array_names.len());
    for name in array_names {
        let (segment, rows) = member.footer_facts(&all, &name).await?;
        facts.push((name, segment, rows));
    }
    let variables: Vec<VariableRows<'_>> = facts
        .iter()
        .map(|(name, segment, facts)| {
            let mut rows: Vec<Option<Cell<'_>>> = vec![None; total];
            if let Some(digests) = segment.as_deref().map(SegmentDigest::arrays) {
                for (ordinal, dtype, at) in facts {
                    if let (Some(slot), Some(digest)) =
                        (rows.get_mut(*ordinal as usize), digests.get(*at))
                    {
                        *slot = Some(Cell {
                            dtype: dtype.clone(),
                            digest,
                        });
                    }
                }
            }
            VariableRows {
                name: name.clone(),
                rows,
                segment: segment.clone(),
            }
        })
        .collect();
    let mut attributes = Vec::with_capacity(attribute_keys.len());
    for (key, dtypes) in attribute_keys {
        let rows = match written.as_mut() {
            Some(written) => written.take_rows(&key, total),
            None => {
                let mut rows = vec![None; total];
                for (name, attr) in member
                    .attributes_by_dataset_from(&all, None, &key, Source::Footers)
                    .await?
                {
                    if let Some(slot) = member
                        .footer()
                        .datasets
                        .get_index_of(name.as_str())
                        .and_then(|o| rows.get_mut(o))
                    {
                        *slot = Some(attr);
                    }
                }
                rows
            }
        };
        attributes.push(AttributeRows { key, dtypes, rows });
    }
    encode(member, options.rows_per_group, &variables, &attributes)
}

/// The array names datasets declare, and per dataset attribute key its
/// distinct declared types; both in order of first appearance. Each
/// distinct schema is looked at once.
fn declared_names(member: &Member) -> (Vec<String>, Vec<(String, Vec<DType>)>) {
    let footer = member.footer();
    let mut seen = std::collections::HashSet::new();
    let mut arrays: indexmap::IndexSet<String> = indexmap::IndexSet::new();
    let mut keys: indexmap::IndexMap<String, Vec<DType>> = indexmap::IndexMap::new();
    for &schema in footer.datasets.values() {
        if !seen.insert(schema) {
            continue;
        }
        let Some(view) = footer.schema_view(schema) else {
            continue;
        };
        for meta in view.arrays() {
            if !arrays.contains(meta.name()) {
                arrays.insert(meta.name().to_owned());
            }
        }
        for (key, dtype) in view.attributes() {
            let dtypes = keys.entry(key.to_owned()).or_default();
            if !dtypes.contains(dtype) {
                dtypes.push(dtype.clone());
            }
        }
    }
    (arrays.into_iter().collect(), keys.into_iter().collect())
}

/// The Parquet object: columns, row-group bounds and metadata. The layout
/// is decided once over every row; then each row group's columns and
/// bounds are built from its own rows and encoded, row groups in parallel.
fn encode(
    member: &Member,
    rows_per_group: usize,
    variables: &[VariableRows],
    attributes: &[AttributeRows],
) -> Result<(Vec<u8>, IndexReport)> {
    let total = member.dataset_count_total();
    let rows_per_group = rows_per_group.max(1);
    let plan = Plan::new(member, variables, attributes)?;
    let mut report = IndexReport {
        datasets: total as u64,
        row_groups: total.div_ceil(rows_per_group),
        bytes: 0,
        variables: plan.variables.iter().map(|(v, _)| v.name.clone()).collect(),
        variables_left_out: plan.variables_left_out.clone(),
        attributes: plan
            .attributes
            .iter()
            .map(|a| a.indexed.key.clone())
            .collect(),
        attributes_left_out: plan.attributes_left_out.clone(),
    };
    let groups: Vec<std::ops::Range<usize>> = (0..total)
        .step_by(rows_per_group)
        .map(|first| first..first.saturating_add(rows_per_group).min(total))
        .collect();
    let meta = IndexMeta {
        version: INDEX_VERSION,
        container: member.identity(),
        variables: plan.variables.iter().map(|(_, v)| v.clone()).collect(),
        attributes: plan.attributes.iter().map(|a| a.indexed.clone()).collect(),
        row_groups: Vec::new(),
    };
    let bytes = write_parquet(&plan, meta, &groups, |rows| {
        let bounds = group_bounds(rows.clone(), variables, attributes, |name| {
            plan.keeps_totals(name)
        })?;
        Ok((plan.batch(rows.clone())?, bounds))
    })?;
    report.bytes = bytes.len() as u64;
    Ok((bytes, report))
}

/// What the index's columns are made of, decided over every row: the
/// variables and attributes it holds, each with its layout, and the schema
/// their columns make.
struct Plan<'a> {
    /// Dataset names, by ordinal.
    names: Vec<&'a str>,
    variables: Vec<(&'a VariableRows<'a>, IndexedVariable)>,
    variables_left_out: Vec<String>,
    attributes: Vec<PlannedAttribute<'a>>,
    attributes_left_out: Vec<String>,
    schema: Arc<Schema>,
}

/// An attribute the index holds: its rows, and its key, one type and column.
struct PlannedAttribute<'a> {
    rows: &'a [Option<Attr>],
    indexed: IndexedAttribute,
}

impl<'a> Plan<'a> {
    fn new(
        member: &'a Member,
        variables: &'a [VariableRows<'a>],
        attributes: &'a [AttributeRows],
    ) -> Result<Self> {
        let mut plan = Plan {
            names: member
                .footer()
                .datasets
                .keys()
                .map(|n| n.as_str())
                .collect(),
            variables: Vec::new(),
            variables_left_out: Vec::new(),
            attributes: Vec::new(),
            attributes_left_out: Vec::new(),
            schema: Arc::new(Schema::empty()),
        };
        let mut taken: std::collections::HashSet<String> =
            [NAME_COLUMN.to_owned(), ORDINAL_COLUMN.to_owned()].into();
        for v in variables {
            match variable_layout(v) {
                Some(layout) => {
                    // Its column names, from its columns over no rows.
                    for (name, _) in variable_columns(&v.name, &[], &layout)? {
                        taken.insert(name);
                    }
                    plan.variables.push((v, layout));
                }
                None => plan.variables_left_out.push(v.name.clone()),
            }
        }
        for a in attributes {
            let dtype = match a.dtypes.as_slice() {
                [dtype] if !matches!(dtype, DType::List { .. }) => Some(dtype),
                _ => None,
            };
            let Some(dtype) = dtype.filter(|d| attr_column(d, &[]).is_some()) else {
                plan.attributes_left_out.push(a.key.clone());
                continue;
            };
            let column = if taken.contains(&a.key) {
                format!("attrs.{}", a.key)
            } else {
                a.key.clone()
            };
            if !taken.insert(column.clone()) {
                plan.attributes_left_out.push(a.key.clone());
                continue;
            }
            plan.attributes.push(PlannedAttribute {
                rows: &a.rows,
                indexed: IndexedAttribute {
                    key: a.key.clone(),
                    column,
                    dtype: dtype.clone(),
                },
            });
        }
        let empty = plan.columns(0..0)?;
        plan.schema = Arc::new(Schema::new(
            empty
                .iter()
                .map(|(name, column)| {
                    let nullable = name != NAME_COLUMN && name != ORDINAL_COLUMN;
                    ArrowField::new(name, column.data_type().clone(), nullable)
                })
                .collect::<Vec<_>>(),
        ));
        Ok(plan)
    }

    /// The columns of rows `rows`, by name, in schema order.
    fn columns(&self, rows: std::ops::Range<usize>) -> Result<Vec<(String, ArrayRef)>> {
        let names = self.names.get(rows.clone()).unwrap_or_default();
        let ordinals = rows.clone().map(|o| u32::try_from(o).ok());
        let mut columns: Vec<(String, ArrayRef)> = vec![
            (
                NAME_COLUMN.to_owned(),
                Arc::new(StringArray::from_iter_values(names.iter())),
            ),
            (
                ORDINAL_COLUMN.to_owned(),
                Arc::new(UInt32Array::from_iter(ordinals)),
            ),
        ];
        for (v, layout) in &self.variables {
            let cells = v.rows.get(rows.clone()).unwrap_or_default();
            columns.extend(variable_columns(&v.name, cells, layout)?);
        }
        for a in &self.attributes {
            let values: Vec<Option<&Attr>> = a
                .rows
                .get(rows.clone())
                .unwrap_or_default()
                .iter()
                .map(Option::as_ref)
                .collect();
            let column = attr_column(&a.indexed.dtype, &values).ok_or_else(|| {
                AtlasError::corrupt(format!("attribute {:?} has no column type", a.indexed.key))
            })?;
            columns.push((a.indexed.column.clone(), column));
        }
        Ok(columns)
    }

    /// Whether the row groups carry variable `name`'s totals.
    fn keeps_totals(&self, name: &str) -> bool {
        self.variables
            .iter()
            .any(|(v, layout)| v.name == name && layout.totals)
    }

    /// Rows `rows` as one batch of the plan's schema.
    fn batch(&self, rows: std::ops::Range<usize>) -> Result<RecordBatch> {
        let columns = self.columns(rows)?.into_iter().map(|(_, c)| c).collect();
        RecordBatch::try_new(Arc::clone(&self.schema), columns)
            .map_err(|e| AtlasError::corrupt(format!("the index table cannot be built: {e}")))
    }
}

/// How a variable's statistics are stored, or `None` when they cannot be
/// stored in one typed column (kinds differ between datasets).
fn variable_layout(v: &VariableRows) -> Option<IndexedVariable> {
    let mut kind: Option<StatKind> = None;
    let mut single = true;
    let mut utf8 = true;
    for stats in v
        .rows
        .iter()
        .flatten()
        .filter_map(|c| c.digest.stats.as_ref())
    {
        match (&stats.min, &stats.max) {
            (Some(lo), Some(hi)) => {
                single &= lo.compare(hi) == Some(std::cmp::Ordering::Equal);
            }
            (None, None) => {}
            _ => single = false,
        }
        for value in [&stats.min, &stats.max].into_iter().flatten() {
            let this = match value {
                Value::Int(_) => StatKind::Int,
                Value::UInt(_) => StatKind::UInt,
                Value::Float(_) => StatKind::Float,
                Value::Timestamp(_) => StatKind::Timestamp,
                Value::Bytes(b) => {
                    utf8 &= std::str::from_utf8(b).is_ok();
                    StatKind::Bytes
                }
                _ => return None,
            };
            if kind.is_some_and(|k| k != this) {
                return None;
            }
            kind = Some(this);
        }
    }
    let kind = match kind.unwrap_or(StatKind::Int) {
        StatKind::Bytes if utf8 => StatKind::Text,
        other => other,
    };
    Some(IndexedVariable {
        name: v.name.clone(),
        kind,
        single,
        places: places(v),
        totals: one_declared_type(v),
    })
}

/// Whether every dataset declaring the variable declares one type: then a
/// collection-wide question folds every dataset's statistics, and row
/// groups can carry them folded.
fn one_declared_type(v: &VariableRows) -> bool {
    let mut cells = v.rows.iter().flatten();
    let first = cells.next().map(|c| &c.dtype);
    cells.all(|c| Some(&c.dtype) == first)
}

/// What every array of the variable shares that a read needs, or `None`
/// when its datasets differ in type, axis names or fill (their reads then
/// use the footer).
fn places(v: &VariableRows) -> Option<Places> {
    let segment = v.segment.as_ref()?;
    let mut cells = v.rows.iter().flatten();
    let first = &cells.next()?.digest;
    let same_fill = |a: &Option<Value>, b: &Option<Value>| match (a, b) {
        (Some(Value::Float(x)), Some(Value::Float(y))) => x.to_bits() == y.to_bits(),
        _ => a == b,
    };
    for cell in cells {
        let d = &cell.digest;
        if d.dtype != first.dtype
            || d.dimension_names != first.dimension_names
            || !same_fill(&d.fill, &first.fill)
        {
            return None;
        }
    }
    Some(Places {
        dtype: first.dtype.clone(),
        dimension_names: first.dimension_names.to_vec(),
        fill: first.fill.clone(),
        data_end: segment.data_end(),
        blocks: segment
            .blocks()
            .iter()
            .map(|b| (b.offset, b.stored, b.decoded, b.codec.clone()))
            .collect(),
    })
}

/// The count, nulls, bound, shape and block columns of one variable, by name.
fn variable_columns(
    name: &str,
    rows: &[Option<Cell>],
    layout: &IndexedVariable,
) -> Result<Vec<(String, ArrayRef)>> {
    let stats: Vec<Option<&ArrayStats>> = rows
        .iter()
        .map(|r| r.as_ref().and_then(|c| c.digest.stats.as_ref()))
        .collect();
    let count = UInt64Array::from_iter(stats.iter().map(|s| s.map(|s| s.row_count)));
    let nulls = UInt64Array::from_iter(stats.iter().map(|s| s.map(|s| s.null_count)));
    let mut out: Vec<(String, ArrayRef)> = vec![
        (count_column(name), Arc::new(count)),
        (nulls_column(name), Arc::new(nulls)),
    ];
    let mins: Vec<Option<&Value>> = stats
        .iter()
        .map(|s| s.and_then(|s| s.min.as_ref()))
        .collect();
    let maxs: Vec<Option<&Value>> = stats
        .iter()
        .map(|s| s.and_then(|s| s.max.as_ref()))
        .collect();
    let names = bound_columns(layout);
    let bounds = if layout.single {
        vec![mins]
    } else {
        vec![mins, maxs]
    };
    for (name, values) in names.into_iter().zip(bounds) {
        out.push((name, value_column(layout.kind, &values)));
    }
    // Where the chunks are, when every array of the variable can be read
    // from its places (see [`places`]).
    let placed = layout.places.is_some();
    let mut shapes = Lists::<UInt64Type>::with_rows(rows.len());
    let placed_rows = if placed { rows.len() } else { 0 };
    let mut chunk_shapes = Lists::<UInt32Type>::with_rows(placed_rows);
    let mut chunks = Lists::<UInt32Type>::with_rows(placed_rows);
    for row in rows {
        let digest = row.as_ref().map(|c| c.digest);
        shapes.push(digest.map(|d| d.shape.iter().copied()));
        if !placed {
            continue;
        }
        chunk_shapes.push(digest.map(|d| d.chunk_shape.iter().copied()));
        chunks.push(digest.map(|d| {
            d.chunks
                .iter()
                .flat_map(|p| p.coord.iter().copied().chain([p.block, p.offset, p.size]))
        }));
    }
    out.push((shape_column(name), shapes.finish()?));
    let blocks = UInt32Array::from_iter(
        rows.iter()
            .map(|r| r.as_ref().and_then(|c| c.digest.first_block)),
    );
    out.push((block_column(name), Arc::new(blocks)));
    if placed {
        out.push((chunk_shape_column(name), chunk_shapes.finish()?));
        out.push((chunks_column(name), chunks.finish()?));
    }
    Ok(out)
}

/// A list column built a row at a time into three plain buffers: values,
/// offsets and validity (arrow's list builder appends, and checks, value by
/// value).
struct Lists<T: ArrowPrimitiveType> {
    values: Vec<T::Native>,
    offsets: OffsetBufferBuilder<i32>,
    valid: NullBufferBuilder,
    /// Set once the values outgrow 32-bit offsets.
    overflow: bool,
}

impl<T: ArrowPrimitiveType> Lists<T> {
    fn with_rows(rows: usize) -> Self {
        Lists {
            values: Vec::with_capacity(rows),
            offsets: OffsetBufferBuilder::new(rows),
            valid: NullBufferBuilder::new(rows),
            overflow: false,
        }
    }

    /// Appends one row: the list of `values`, or null.
    fn push(&mut self, values: Option<impl IntoIterator<Item = T::Native>>) {
        let before = self.values.len();
        self.valid.append(values.is_some());
        if let Some(values) = values {
            self.values.extend(values);
        }
        self.overflow |= self
            .offsets
            .try_push_length(self.values.len().saturating_sub(before))
            .is_err();
    }

    fn finish(mut self) -> Result<ArrayRef> {
        let fail = |e: &dyn std::fmt::Display| AtlasError::InvalidUse {
            what: format!("an index column cannot be built: {e}"),
        };
        if self.overflow {
            return Err(fail(&"its lists hold more than 2^31 values"));
        }
        let offsets = self.offsets.try_finish().map_err(|e| fail(&e))?;
        let values = Arc::new(PrimitiveArray::<T>::new(self.values.into(), None));
        let field = Arc::new(ArrowField::new_list_field(T::DATA_TYPE, true));
        let lists = ListArray::try_new(field, offsets, values, self.valid.finish())
            .map_err(|e| fail(&e))?;
        Ok(Arc::new(lists))
    }
}

/// A column of statistics of one kind (values of another kind, which
/// [`variable_layout`] rules out, would be null).
pub(crate) fn value_column(kind: StatKind, values: &[Option<&Value>]) -> ArrayRef {
    match kind {
        StatKind::Int => Arc::new(Int64Array::from_iter(values.iter().map(|v| match v {
            Some(Value::Int(i)) => Some(*i),
            _ => None,
        }))),
        StatKind::UInt => Arc::new(UInt64Array::from_iter(values.iter().map(|v| match v {
            Some(Value::UInt(u)) => Some(*u),
            _ => None,
        }))),
        StatKind::Float => Arc::new(Float64Array::from_iter(values.iter().map(|v| match v {
            Some(Value::Float(x)) => Some(*x),
            _ => None,
        }))),
        StatKind::Timestamp => Arc::new(
            TimestampNanosecondArray::from_iter(values.iter().map(|v| match v {
                Some(Value::Timestamp(t)) => Some(t.nanos()),
                _ => None,
            }))
            .with_timezone("UTC"),
        ),
        StatKind::Text => Arc::new(StringArray::from_iter(values.iter().map(|v| match v {
            Some(Value::Bytes(b)) => std::str::from_utf8(b).ok(),
            _ => None,
        }))),
        StatKind::Bytes => Arc::new(BinaryArray::from_iter(values.iter().map(|v| match v {
            Some(Value::Bytes(b)) => Some(b.as_slice()),
            _ => None,
        }))),
    }
}

/// The bounds of row group `rows`, as a set manifest states a member's, and
/// the totals of the variables `keeps_totals` names, from the same fold.
fn group_bounds(
    rows: std::ops::Range<usize>,
    variables: &[VariableRows],
    attributes: &[AttributeRows],
    keeps_totals: impl Fn(&str) -> bool,
) -> Result<RowGroupBounds> {
    let mut summaries: Vec<VariableSummary> = Vec::new();
    let mut totals: Vec<VariableTotals> = Vec::new();
    for v in variables {
        let cells = v.rows.get(rows.clone()).unwrap_or_default();
        let mut declared = Declared::default();
        for cell in cells.iter().flatten() {
            declared.add(&cell.dtype, 1);
        }
        if declared.datasets == 0 {
            continue;
        }
        let stats = cells
            .iter()
            .flatten()
            .filter_map(|c| c.digest.stats.as_ref());
        let (summary, folded) = fold_variable(&v.name, &declared, stats)?;
        summaries.push(summary);
        if let Some(folded) = folded.filter(|_| keeps_totals(&v.name)) {
            totals.push(VariableTotals::of(&v.name, folded));
        }
    }
    let mut attribute_summaries: Vec<AttributeSummary> = Vec::new();
    for a in attributes {
        let cells = a.rows.get(rows.clone()).unwrap_or_default();
        if let Some((min, max)) = attribute_bounds(cells.iter().flatten()) {
            attribute_summaries.push(AttributeSummary {
                key: a.key.clone(),
                min,
                max,
            });
        }
    }
    Ok(RowGroupBounds {
        first: rows.start as u64,
        rows: rows.len() as u64,
        variables: summaries,
        attributes: attribute_summaries,
        totals,
    })
}

/// One Parquet object of the plan's schema, with page statistics and the
/// page index for other readers, zstd throughout, and `meta` in the footer
/// with the bounds of each row group. `group` makes a row group's batch
/// and bounds from its rows.
fn write_parquet(
    plan: &Plan,
    mut meta: IndexMeta,
    groups: &[std::ops::Range<usize>],
    group: impl Fn(&std::ops::Range<usize>) -> Result<(RecordBatch, RowGroupBounds)> + Sync,
) -> Result<Vec<u8>> {
    let fail = |e: &dyn std::fmt::Display| AtlasError::InvalidUse {
        what: format!("the index cannot be written: {e}"),
    };
    let level = ZstdLevel::try_new(atlas_format::DEFAULT_ZSTD_LEVEL).map_err(|e| fail(&e))?;
    let mut props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(level))
        .set_statistics_enabled(EnabledStatistics::Page);
    // Floats (coordinates, bounds) rarely repeat: a dictionary only costs,
    // and their bytes split by significance compress about a third better.
    for field in plan.schema.fields() {
        if matches!(
            field.data_type(),
            arrow_schema::DataType::Float32 | arrow_schema::DataType::Float64
        ) {
            let path = ColumnPath::from(field.name().as_str());
            props = props
                .set_column_dictionary_enabled(path.clone(), false)
                .set_column_encoding(path, Encoding::BYTE_STREAM_SPLIT);
        }
    }
    // Names never repeat, nor do the chunks' places within their blocks: a
    // dictionary for them is built only to be dropped. Ordinals count up by
    // one, which delta encoding stores in a few bytes a page.
    props = props
        .set_column_dictionary_enabled(ColumnPath::from(NAME_COLUMN), false)
        .set_column_dictionary_enabled(ColumnPath::from(ORDINAL_COLUMN), false)
        .set_column_encoding(
            ColumnPath::from(ORDINAL_COLUMN),
            Encoding::DELTA_BINARY_PACKED,
        );
    for v in meta.variables.iter().filter(|v| v.places.is_some()) {
        let path = ColumnPath::new(vec![
            chunks_column(&v.name),
            "list".to_owned(),
            "item".to_owned(),
        ]);
        props = props.set_column_dictionary_enabled(path, false);
    }
    let props = props
        .set_key_value_metadata(Some(vec![
            KeyValue::new(VERSION_KEY.to_owned(), INDEX_VERSION.to_string()),
            KeyValue::new(
                checksum::FOOTER_KEY.to_owned(),
                checksum::UNSEALED.to_owned(),
            ),
        ]))
        .build();
    let mut out = Vec::new();
    // Readers take the columns' types from the Parquet schema, which says
    // all of them; arrow-rs would add the Arrow schema besides (a third of
    // the footer for the 490 columns of real Argo profiles), read by nobody.
    let options = ArrowWriterOptions::new()
        .with_properties(props)
        .with_skip_arrow_metadata(true);
    let writer = ArrowWriter::try_new_with_options(&mut out, Arc::clone(&plan.schema), options)
        .map_err(|e| fail(&e))?;
    let (mut writer, factory) = writer.into_serialized_writer().map_err(|e| fail(&e))?;
    for (chunks, bounds) in encode_groups(&factory, groups, &group)? {
        let mut row_group = writer.next_row_group().map_err(|e| fail(&e))?;
        for chunk in chunks {
            chunk
                .append_to_row_group(&mut row_group)
                .map_err(|e| fail(&e))?;
        }
        row_group.close().map_err(|e| fail(&e))?;
        meta.row_groups.push(bounds);
    }
    // Every row group is in the file now, so the chunks' checksums can go
    // into the footer written at the close, beside the bounds.
    writer.flush().map_err(|e| fail(&e))?;
    let chunks = writer
        .flushed_row_groups()
        .iter()
        .flat_map(|g| g.columns().iter().map(|c| c.byte_range()))
        .map(|(start, len)| {
            let start = usize::try_from(start).unwrap_or(usize::MAX);
            start..start.saturating_add(usize::try_from(len).unwrap_or(usize::MAX))
        });
    let chunks = checksum::encode_chunks(writer.inner(), chunks)
        .ok_or_else(|| fail(&"a column chunk lies past the bytes written"))?;
    writer.append_key_value_metadata(KeyValue::new(
        META_KEY.to_owned(),
        meta.encode().map_err(|e| fail(&e))?,
    ));
    writer.append_key_value_metadata(KeyValue::new(checksum::CHUNKS_KEY.to_owned(), chunks));
    writer.close().map_err(|e| fail(&e))?;
    checksum::seal(&mut out).ok_or_else(|| fail(&"its footer has no checksum entry"))?;
    Ok(out)
}

/// The most threads an index's row groups are built and encoded on.
const ENCODE_THREADS: usize = 4;

/// Each row group, made by `group` and its columns encoded and compressed,
/// beside its bounds; on as many threads as the machine has cores (at
/// most [`ENCODE_THREADS`]), each taking a run of whole row groups; in file
/// order, so the bytes do not depend on the thread count.
fn encode_groups(
    factory: &ArrowRowGroupWriterFactory,
    groups: &[std::ops::Range<usize>],
    group: &(impl Fn(&std::ops::Range<usize>) -> Result<(RecordBatch, RowGroupBounds)> + Sync),
) -> Result<Vec<(Vec<ArrowColumnChunk>, RowGroupBounds)>> {
    let fail = |e: ParquetError| AtlasError::InvalidUse {
        what: format!("the index cannot be written: {e}"),
    };
    let encode_group = |index: usize, rows: &std::ops::Range<usize>| {
        let (batch, bounds) = group(rows)?;
        let mut writers = factory
            .create_column_writers(index)
            .map_err(fail)?
            .into_iter();
        let mut chunks = Vec::with_capacity(writers.len());
        for (field, column) in batch.schema().fields().iter().zip(batch.columns()) {
            for leaf in compute_leaves(field, column).map_err(fail)? {
                let mut writer = writers.next().ok_or_else(|| {
                    fail(ParquetError::General(
                        "a row group has more leaves than columns".into(),
                    ))
                })?;
                writer.write(&leaf).map_err(fail)?;
                chunks.push(writer.close().map_err(fail)?);
            }
        }
        Ok((chunks, bounds))
    };
    let threads = super::cores().clamp(1, ENCODE_THREADS);
    let per_thread = groups.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        let mut shares = groups.chunks(per_thread).enumerate().map(|(i, share)| {
            let first = i.saturating_mul(per_thread);
            move || {
                share
                    .iter()
                    .enumerate()
                    .map(|(j, rows)| encode_group(first.saturating_add(j), rows))
                    .collect::<Result<Vec<_>>>()
            }
        });
        let here = shares.next();
        // A share whose thread does not start is encoded here afterwards.
        let others: Vec<_> = shares
            .map(|share| {
                let thread = std::thread::Builder::new()
                    .name("atlas-index-encode".into())
                    .spawn_scoped(scope, share);
                (share, thread)
            })
            .collect();
        let mut encoded = here.map_or(Ok(Vec::new()), |share| share())?;
        for (share, thread) in others {
            let more = match thread {
                Ok(thread) => thread.join().map_err(|_| {
                    AtlasError::corrupt("an index encoding thread panicked".to_owned())
                })??,
                Err(_) => share()?,
            };
            encoded.extend(more);
        }
        Ok(encoded)
    })
}

impl Member {
    /// What an index records of this container to recognise it.
    pub(crate) fn identity(&self) -> ContainerIdentity {
        ContainerIdentity {
            bytes: self.container_bytes(),
            footer_crc32c: self.footer_crc32c(),
            created_unix_ms: self.created_unix_ms(),
            datasets: self.dataset_count_total() as u64,
        }
    }
}
