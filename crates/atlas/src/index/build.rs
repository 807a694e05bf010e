//! Building an index from a container's footers: one read of every segment
//! footer, one row per dataset, written as one Parquet object.

use std::sync::Arc;

use arrow_array::builder::{ListBuilder, UInt32Builder};
use arrow_array::types::{UInt32Type, UInt64Type};
use arrow_array::{
    ArrayRef, BinaryArray, Float64Array, Int64Array, ListArray, RecordBatch, StringArray,
    TimestampNanosecondArray, UInt32Array, UInt64Array,
};
use arrow_schema::{Field as ArrowField, Schema};
use atlas_format::{AttributeSummary, DType, VariableSummary};
use indexmap::IndexMap;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;
use smol_str::SmolStr;

use super::checksum;
use super::meta::{
    ContainerIdentity, INDEX_VERSION, IndexMeta, IndexedAttribute, IndexedVariable, META_KEY,
    NAME_COLUMN, ORDINAL_COLUMN, Places, ROWS_PER_GROUP, RowGroupBounds, StatKind, VERSION_KEY,
    block_column, bound_columns, chunk_shape_column, chunks_column, count_column, nulls_column,
    shape_column,
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

/// The dataset attributes a writer set, by dataset name: what the index
/// records of them, known without reading the container back.
pub(crate) type WrittenAttributes = std::collections::HashMap<SmolStr, IndexMap<SmolStr, Attr>>;

/// The index of `member` as Parquet bytes, and what it holds. Dataset
/// attributes come from `written` when the caller wrote them, else from
/// the footers.
pub(crate) async fn build(
    member: &Member,
    options: &IndexOptions,
    written: Option<&WrittenAttributes>,
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
        let rows = match written {
            Some(written) => member
                .footer()
                .datasets
                .keys()
                .map(|name| written.get(name)?.get(key.as_str()).cloned())
                .collect(),
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

/// The Parquet object: columns, row-group bounds and metadata.
fn encode(
    member: &Member,
    rows_per_group: usize,
    variables: &[VariableRows],
    attributes: &[AttributeRows],
) -> Result<(Vec<u8>, IndexReport)> {
    let total = member.dataset_count_total();
    let names: Vec<&str> = member
        .footer()
        .datasets
        .keys()
        .map(|n| n.as_str())
        .collect();
    let ordinals = (0..total).map(|o| u32::try_from(o).ok());
    let mut fields = vec![
        ArrowField::new(NAME_COLUMN, arrow_schema::DataType::Utf8, false),
        ArrowField::new(ORDINAL_COLUMN, arrow_schema::DataType::UInt32, false),
    ];
    let mut columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(names)),
        Arc::new(UInt32Array::from_iter(ordinals)),
    ];
    let mut taken: std::collections::HashSet<String> =
        [NAME_COLUMN.to_owned(), ORDINAL_COLUMN.to_owned()].into();
    let mut report = IndexReport {
        datasets: total as u64,
        row_groups: total.div_ceil(rows_per_group),
        bytes: 0,
        variables: Vec::new(),
        variables_left_out: Vec::new(),
        attributes: Vec::new(),
        attributes_left_out: Vec::new(),
    };
    let mut indexed_variables = Vec::new();
    for v in variables {
        let Some(indexed) = variable_layout(v) else {
            report.variables_left_out.push(v.name.clone());
            continue;
        };
        for (name, column) in variable_columns(v, &indexed) {
            fields.push(ArrowField::new(&name, column.data_type().clone(), true));
            taken.insert(name);
            columns.push(column);
        }
        report.variables.push(v.name.clone());
        indexed_variables.push(indexed);
    }
    let mut indexed_attributes = Vec::new();
    for a in attributes {
        let column = match a.dtypes.as_slice() {
            [dtype] if !matches!(dtype, DType::List { .. }) => {
                let values: Vec<Option<&Attr>> = a.rows.iter().map(Option::as_ref).collect();
                attr_column(dtype, &values).map(|c| (dtype.clone(), c))
            }
            _ => None,
        };
        let Some((dtype, column)) = column else {
            report.attributes_left_out.push(a.key.clone());
            continue;
        };
        let name = if taken.contains(&a.key) {
            format!("attrs.{}", a.key)
        } else {
            a.key.clone()
        };
        if !taken.insert(name.clone()) {
            report.attributes_left_out.push(a.key.clone());
            continue;
        }
        fields.push(ArrowField::new(&name, column.data_type().clone(), true));
        columns.push(column);
        report.attributes.push(a.key.clone());
        indexed_attributes.push(IndexedAttribute {
            key: a.key.clone(),
            column: name,
            dtype,
        });
    }
    let meta = IndexMeta {
        version: INDEX_VERSION,
        container: member.identity(),
        variables: indexed_variables,
        attributes: indexed_attributes,
        row_groups: row_group_bounds(total, rows_per_group, variables, attributes)?,
    };
    let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
        .map_err(|e| AtlasError::corrupt(format!("the index table cannot be built: {e}")))?;
    let bytes = write_parquet(&batch, &meta, rows_per_group)?;
    report.bytes = bytes.len() as u64;
    Ok((bytes, report))
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
    })
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
fn variable_columns(v: &VariableRows, layout: &IndexedVariable) -> Vec<(String, ArrayRef)> {
    let stats: Vec<Option<&ArrayStats>> = v
        .rows
        .iter()
        .map(|r| r.as_ref().and_then(|c| c.digest.stats.as_ref()))
        .collect();
    let count = UInt64Array::from_iter(stats.iter().map(|s| s.map(|s| s.row_count)));
    let nulls = UInt64Array::from_iter(stats.iter().map(|s| s.map(|s| s.null_count)));
    let mut out: Vec<(String, ArrayRef)> = vec![
        (count_column(&v.name), Arc::new(count)),
        (nulls_column(&v.name), Arc::new(nulls)),
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
    let shapes = ListArray::from_iter_primitive::<UInt64Type, _, _>(
        v.rows
            .iter()
            .map(|r| r.as_ref().map(|c| c.digest.shape.iter().map(|&d| Some(d)))),
    );
    out.push((shape_column(&v.name), Arc::new(shapes)));
    let blocks = UInt32Array::from_iter(
        v.rows
            .iter()
            .map(|r| r.as_ref().and_then(|c| c.digest.first_block)),
    );
    out.push((block_column(&v.name), Arc::new(blocks)));
    if layout.places.is_some() {
        let chunk_shapes =
            ListArray::from_iter_primitive::<UInt32Type, _, _>(v.rows.iter().map(|r| {
                r.as_ref()
                    .map(|c| c.digest.chunk_shape.iter().map(|&d| Some(d)))
            }));
        out.push((chunk_shape_column(&v.name), Arc::new(chunk_shapes)));
        let mut chunks = ListBuilder::new(UInt32Builder::new());
        for row in &v.rows {
            if let Some(c) = row {
                for p in &c.digest.chunks {
                    let values = chunks.values();
                    values.append_slice(&p.coord);
                    values.append_slice(&[p.block, p.offset, p.size]);
                }
            }
            chunks.append(row.is_some());
        }
        let chunks = chunks.finish();
        out.push((chunks_column(&v.name), Arc::new(chunks)));
    }
    out
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

/// The bounds of each row group, as a set manifest states a member's.
fn row_group_bounds(
    total: usize,
    rows_per_group: usize,
    variables: &[VariableRows],
    attributes: &[AttributeRows],
) -> Result<Vec<RowGroupBounds>> {
    let mut groups = Vec::new();
    let mut first = 0usize;
    while first < total {
        let end = first.saturating_add(rows_per_group).min(total);
        let mut summaries: Vec<VariableSummary> = Vec::new();
        for v in variables {
            let rows = v.rows.get(first..end).unwrap_or_default();
            let mut declared = Declared::default();
            for cell in rows.iter().flatten() {
                declared.add(&cell.dtype, 1);
            }
            if declared.datasets == 0 {
                continue;
            }
            let stats = rows
                .iter()
                .flatten()
                .filter_map(|c| c.digest.stats.as_ref());
            summaries.push(fold_variable(&v.name, &declared, stats)?);
        }
        let mut attribute_summaries: Vec<AttributeSummary> = Vec::new();
        for a in attributes {
            let rows = a.rows.get(first..end).unwrap_or_default();
            if let Some((min, max)) = attribute_bounds(rows.iter().flatten()) {
                attribute_summaries.push(AttributeSummary {
                    key: a.key.clone(),
                    min,
                    max,
                });
            }
        }
        groups.push(RowGroupBounds {
            first: first as u64,
            rows: end.saturating_sub(first) as u64,
            variables: summaries,
            attributes: attribute_summaries,
        });
        first = end;
    }
    Ok(groups)
}

/// `batch` as one Parquet object in row groups of `rows_per_group`, with
/// page statistics and the page index for other readers, zstd throughout,
/// and `meta` in the footer.
fn write_parquet(batch: &RecordBatch, meta: &IndexMeta, rows_per_group: usize) -> Result<Vec<u8>> {
    let fail = |e: &dyn std::fmt::Display| AtlasError::InvalidUse {
        what: format!("the index cannot be written: {e}"),
    };
    let level = ZstdLevel::try_new(atlas_format::DEFAULT_ZSTD_LEVEL).map_err(|e| fail(&e))?;
    let mut props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(level))
        .set_max_row_group_row_count(Some(rows_per_group))
        .set_statistics_enabled(EnabledStatistics::Page);
    // Floats (coordinates, bounds) rarely repeat: a dictionary only costs,
    // and their bytes split by significance compress about a third better.
    for field in batch.schema().fields() {
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
    let props = props
        .set_key_value_metadata(Some(vec![
            KeyValue::new(META_KEY.to_owned(), meta.encode().map_err(|e| fail(&e))?),
            KeyValue::new(VERSION_KEY.to_owned(), INDEX_VERSION.to_string()),
            KeyValue::new(
                checksum::FOOTER_KEY.to_owned(),
                checksum::UNSEALED.to_owned(),
            ),
        ]))
        .build();
    let mut out = Vec::new();
    let mut writer =
        ArrowWriter::try_new(&mut out, batch.schema(), Some(props)).map_err(|e| fail(&e))?;
    writer.write(batch).map_err(|e| fail(&e))?;
    // Every row group is in the file now, so the chunks' checksums can go
    // into the footer written at the close.
    writer.flush().map_err(|e| fail(&e))?;
    writer.sync().map_err(|e| fail(&e))?;
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
    writer.append_key_value_metadata(KeyValue::new(checksum::CHUNKS_KEY.to_owned(), chunks));
    writer.close().map_err(|e| fail(&e))?;
    checksum::seal(&mut out).ok_or_else(|| fail(&"its footer has no checksum entry"))?;
    Ok(out)
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
