//! What an index says about itself, kept in its Parquet footer under one
//! key: which container it describes, which columns answer for which
//! variable or attribute, and the bounds of every row group.

use std::ops::Range;

use atlas_format::{AttributeSummary, DType, Value, VariableSummary};
use serde::{Deserialize, Serialize};

/// The index layout this crate writes; it reads this one and the ones before.
pub(crate) const INDEX_VERSION: u32 = 2;
/// The first layout whose footer carries the checksums of `index::checksum`:
/// required from it on, absent before.
pub(crate) const CHECKSUMS_SINCE: u32 = 2;

/// The Parquet key-value metadata key holding the [`IndexMeta`] (msgpack,
/// base64), and the key of its version as plain text for other tools.
pub(crate) const META_KEY: &str = "atlas.index";
pub(crate) const VERSION_KEY: &str = "atlas.index.version";

/// Datasets per row group: small enough that a row group's bounds prune,
/// large enough that a column chunk is worth a request.
pub(crate) const ROWS_PER_GROUP: usize = 4096;

/// What the index describes and how to read it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct IndexMeta {
    pub version: u32,
    pub container: ContainerIdentity,
    /// The variables whose statistics the index holds.
    pub variables: Vec<IndexedVariable>,
    /// The dataset attributes the index holds.
    pub attributes: Vec<IndexedAttribute>,
    /// In file order: contiguous, starting at ordinal 0.
    pub row_groups: Vec<RowGroupBounds>,
}

/// The container an index was built from: an index whose identity differs
/// from the opened container's is stale or foreign and is not used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ContainerIdentity {
    /// Length of `data.atlas` in bytes.
    pub bytes: u64,
    /// CRC32C of its compressed footer and trailer.
    pub footer_crc32c: u32,
    /// Its creation time, milliseconds since the Unix epoch.
    pub created_unix_ms: i64,
    /// Datasets in it, deleted ones included: the index's row count.
    pub datasets: u64,
}

/// How one variable's statistics are stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct IndexedVariable {
    pub name: String,
    /// The kind of its minimum and maximum.
    pub kind: StatKind,
    /// `true`: one column named after the variable holds the single value
    /// of each dataset's elements (minimum equal to maximum in every row);
    /// `false`: `NAME.min` and `NAME.max`.
    pub single: bool,
    /// What reading the variable's arrays needs besides each row's chunk
    /// columns, when every dataset declaring it agrees on it (`None`:
    /// reads use the segment footer). Absent from indexes written before
    /// chunk places were recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub places: Option<Places>,
    /// `true`: every row group's [`RowGroupBounds::totals`] holds this
    /// variable's statistics folded over its datasets (every dataset
    /// declaring it declares one type). Absent from earlier indexes.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub totals: bool,
}

/// The segment-wide facts that, with a row's `NAME.chunk_shape` and
/// `NAME.chunks`, let a reader read the row's array without its segment's
/// footer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Places {
    /// The element type of every array.
    pub dtype: DType,
    /// The axis names of every array.
    pub dimension_names: Vec<String>,
    /// The fill value of every array, as the segment stores it.
    pub fill: Option<Value>,
    /// Where the segment's data region ends.
    pub data_end: u64,
    /// The segment's blocks by id: offset, bytes stored, bytes decoded, codec.
    pub blocks: Vec<(u64, u64, u64, Option<String>)>,
}

impl Places {
    /// The segment's block table, as a view made from places takes it.
    pub(crate) fn block_places(&self) -> Vec<atlas_segment::BlockPlace> {
        self.blocks
            .iter()
            .map(
                |(offset, stored, decoded, codec)| atlas_segment::BlockPlace {
                    offset: *offset,
                    stored: *stored,
                    decoded: *decoded,
                    codec: codec.clone(),
                },
            )
            .collect()
    }
}

/// The kind of a statistic's value, which fixes its column type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum StatKind {
    Int,
    UInt,
    Float,
    Timestamp,
    /// Bytes that are all UTF-8: a string column.
    Text,
    /// Bytes: a binary column.
    Bytes,
}

/// A dataset attribute's column.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct IndexedAttribute {
    pub key: String,
    /// The Parquet column (the key, or `attrs.KEY` where the key is taken).
    pub column: String,
    /// The type every declaring dataset declares.
    pub dtype: DType,
}

/// Where a row group starts and the bounds of what its datasets hold, in
/// the form a set manifest gives a member's (deleted datasets included).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RowGroupBounds {
    pub first: u64,
    pub rows: u64,
    pub variables: Vec<VariableSummary>,
    pub attributes: Vec<AttributeSummary>,
    /// The statistics of the variables marked [`IndexedVariable::totals`],
    /// folded over the row group's datasets exactly as a collection-wide
    /// question folds them, so that one asked of whole row groups is
    /// answered from this footer alone. A variable none of whose datasets
    /// recorded statistics here has no entry.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub totals: Vec<VariableTotals>,
}

/// One variable's statistics folded over a row group: counts summed, the
/// least minimum and the greatest maximum.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct VariableTotals {
    pub name: String,
    pub row_count: u64,
    pub null_count: u64,
    pub min: Option<Value>,
    pub max: Option<Value>,
}

impl VariableTotals {
    pub(crate) fn of(name: &str, stats: crate::ArrayStats) -> Self {
        VariableTotals {
            name: name.to_owned(),
            row_count: stats.row_count,
            null_count: stats.null_count,
            min: stats.min,
            max: stats.max,
        }
    }

    pub(crate) fn stats(&self) -> crate::ArrayStats {
        crate::ArrayStats {
            min: self.min.clone(),
            max: self.max.clone(),
            null_count: self.null_count,
            row_count: self.row_count,
        }
    }
}

/// The column of a variable's row count.
pub(crate) fn count_column(variable: &str) -> String {
    format!("{variable}.count")
}

/// The column of a variable's null count.
pub(crate) fn nulls_column(variable: &str) -> String {
    format!("{variable}.nulls")
}

/// The columns of a variable's minimum and maximum (one when `single`).
pub(crate) fn bound_columns(v: &IndexedVariable) -> Vec<String> {
    if v.single {
        vec![v.name.clone()]
    } else {
        vec![format!("{}.min", v.name), format!("{}.max", v.name)]
    }
}

/// The column of a variable's shape in each dataset (a list).
pub(crate) fn shape_column(variable: &str) -> String {
    format!("{variable}.shape")
}

/// The column of the first data block a variable's chunks lie in.
pub(crate) fn block_column(variable: &str) -> String {
    format!("{variable}.block")
}

/// The column of a variable's chunk shape in each dataset (a list).
pub(crate) fn chunk_shape_column(variable: &str) -> String {
    format!("{variable}.chunk_shape")
}

/// The column of where a variable's chunks lie in each dataset: a flat
/// list, per written chunk its coordinate (one number per axis), then its
/// block, offset and size in the decoded block.
pub(crate) fn chunks_column(variable: &str) -> String {
    format!("{variable}.chunks")
}

/// The names of the fixed columns.
pub(crate) const NAME_COLUMN: &str = "dataset";
pub(crate) const ORDINAL_COLUMN: &str = "ordinal";

/// Why a stored [`IndexMeta`] cannot be used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum MetaError {
    #[error("the index has no {META_KEY:?} metadata")]
    Missing,
    #[error("the index metadata is not readable: {0}")]
    Unreadable(String),
    #[error("index layout version {0} (this build reads 1 to {INDEX_VERSION})")]
    Version(u32),
}

impl IndexMeta {
    /// The text stored under [`META_KEY`].
    pub(crate) fn encode(&self) -> Result<String, MetaError> {
        use base64::Engine as _;
        let bytes =
            rmp_serde::to_vec_named(self).map_err(|e| MetaError::Unreadable(e.to_string()))?;
        Ok(base64::engine::general_purpose::STANDARD.encode(bytes))
    }

    /// Reads what [`encode`](Self::encode) stored, of this layout or an earlier one.
    pub(crate) fn decode(text: &str) -> Result<IndexMeta, MetaError> {
        use base64::Engine as _;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|e| MetaError::Unreadable(e.to_string()))?;
        let meta: IndexMeta =
            rmp_serde::from_slice(&bytes).map_err(|e| MetaError::Unreadable(e.to_string()))?;
        if !(1..=INDEX_VERSION).contains(&meta.version) {
            return Err(MetaError::Version(meta.version));
        }
        Ok(meta)
    }

    /// The row group holding dataset `ordinal` (a binary search: the
    /// groups of a loaded index run contiguously from ordinal 0).
    pub(crate) fn group_of(&self, ordinal: u32) -> Option<usize> {
        let o = u64::from(ordinal);
        let group = self
            .row_groups
            .partition_point(|g| g.first.saturating_add(g.rows) <= o);
        self.row_groups
            .get(group)
            .is_some_and(|g| g.first <= o)
            .then_some(group)
    }

    /// The row group holding dataset `ordinal`, and the stretch of at most
    /// `rows` datasets around it (ordinals, aligned to the group's first)
    /// that one view made from chunk places covers.
    pub(crate) fn stretch_of(&self, ordinal: u32, rows: u32) -> Option<(usize, Range<u32>)> {
        let group = self.group_of(ordinal)?;
        let bounds = self.row_groups.get(group)?;
        let first = u32::try_from(bounds.first).ok()?;
        let end = u32::try_from(bounds.first.saturating_add(bounds.rows)).unwrap_or(u32::MAX);
        let rows = rows.max(1);
        let start = first.saturating_add(ordinal.checked_sub(first)? / rows * rows);
        Some((group, start..start.saturating_add(rows).min(end)))
    }

    /// The row groups holding any of `ordinals` (ascending), in file order.
    pub(crate) fn groups_holding(&self, ordinals: impl Iterator<Item = u32>) -> Vec<usize> {
        let mut out: Vec<usize> = Vec::new();
        let mut group = 0usize;
        for ordinal in ordinals {
            let o = u64::from(ordinal);
            while let Some(g) = self.row_groups.get(group) {
                if o < g.first.saturating_add(g.rows) {
                    break;
                }
                group = group.saturating_add(1);
            }
            match self.row_groups.get(group) {
                Some(g) if o >= g.first && out.last() != Some(&group) => out.push(group),
                _ => {}
            }
        }
        out
    }

    pub(crate) fn variable(&self, name: &str) -> Option<&IndexedVariable> {
        self.variables.iter().find(|v| v.name == name)
    }

    pub(crate) fn attribute(&self, key: &str) -> Option<&IndexedAttribute> {
        self.attributes.iter().find(|a| a.key == key)
    }
}
