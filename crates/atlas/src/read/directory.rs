//! [`Directory`]: everything an opened collection knows without a request.
//!
//! The container footer (datasets, schemas, segment table), the deletion
//! mask, and the indexes built from them at open (variable name to segment
//! position, arrays expected per segment). `Member` and every `Dataset`
//! handle reach them through this one value.

use std::collections::HashMap;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use atlas_format::{CollectionFooter, DATASETS_SEGMENT, DeletionMask, OpenedContainer, SchemaView};
use atlas_segment::SegmentRange;

use crate::error::{AtlasError, Result};

/// The deletion state: which ordinals are hidden, and what the mask file had wrong.
#[derive(Debug, Default)]
pub(crate) struct MaskState {
    pub mask: DeletionMask,
    pub warnings: Vec<String>,
}

/// The footer, the mask and the indexes over them.
#[derive(Debug)]
pub(crate) struct Directory {
    opened: OpenedContainer,
    mask: RwLock<MaskState>,
    /// Variable name to its position in the footer's variables.
    variable_index: VariableIndex,
    /// Per variable, how many arrays its segment should hold (sizes the first read).
    expected_arrays: Vec<u64>,
}

impl Directory {
    /// Indexes `opened` under `mask`; `CorruptCollection` if a dataset names
    /// a schema the pool does not hold.
    pub fn new(opened: OpenedContainer, mask: MaskState) -> Result<Self> {
        let footer = &opened.footer;
        for (name, &schema) in &footer.datasets {
            if footer.schema_view(schema).is_none() {
                return Err(AtlasError::corrupt(format!(
                    "dataset {name:?} names schema {schema}, which the pool does not hold"
                )));
            }
        }
        let variable_index: VariableIndex = footer
            .variables
            .iter()
            .enumerate()
            .filter_map(|(i, v)| Some((footer.string(v.name)?.to_owned(), i)))
            .collect();
        let expected_arrays = expected_arrays(footer, &variable_index);
        Ok(Self {
            opened,
            mask: RwLock::new(mask),
            variable_index,
            expected_arrays,
        })
    }

    /// The decoded container footer.
    pub fn footer(&self) -> &CollectionFooter {
        &self.opened.footer
    }

    /// What the open found about the container (lengths).
    pub fn opened(&self) -> &OpenedContainer {
        &self.opened
    }

    /// The deletion state, for reading.
    pub fn mask(&self) -> RwLockReadGuard<'_, MaskState> {
        self.mask.read().unwrap_or_else(|e| e.into_inner())
    }

    /// The deletion state, for a delete.
    pub fn mask_mut(&self) -> RwLockWriteGuard<'_, MaskState> {
        self.mask.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether `ordinal` is not hidden by the mask.
    pub fn is_live(&self, ordinal: u32) -> bool {
        !self.mask().mask.contains(ordinal)
    }

    /// The schema at pool index `schema`, which must be a dataset's: every
    /// dataset's index was checked by [`Directory::new`] and the footer never
    /// changes afterwards, so the empty fallback of the lookup never shows.
    pub fn schema(&self, schema: u32) -> SchemaView<'_> {
        self.footer().schema_view_or_empty(schema)
    }

    /// Whether the container has a segment for `name`.
    pub fn has_variable(&self, name: &str) -> bool {
        self.variable_index.contains_key(name)
    }

    /// The position and byte range of the segment of variable `name`, if any.
    pub fn segment_range(&self, name: &str) -> Option<(usize, SegmentRange)> {
        let &index = self.variable_index.get(name)?;
        let entry = self.footer().variables.get(index)?;
        Some((
            index,
            SegmentRange {
                name: name.to_owned(),
                offset: entry.seg_offset,
                len: entry.seg_len,
                arrays_hint: self.expected_arrays.get(index).copied().unwrap_or(0),
            },
        ))
    }
}

impl Directory {
    /// Where our writer puts the array `variable` of the dataset at `ordinal`
    /// in that variable's segment: after the arrays of every earlier dataset
    /// declaring it (deleted ones included: the segment still holds them).
    /// A hint only; a segment written in another order is found by name.
    pub fn position_in_segment(&self, variable: &str, ordinal: u32) -> u64 {
        let footer = self.footer();
        let declares: Vec<bool> = (0..footer.schema_pool.len())
            .map(|s| {
                u32::try_from(s)
                    .ok()
                    .and_then(|s| footer.schema_view(s))
                    .is_some_and(|view| view.array(variable).is_some())
            })
            .collect();
        footer
            .datasets
            .values()
            .take(ordinal as usize)
            .filter(|&&schema| declares.get(schema as usize).copied().unwrap_or(false))
            .count() as u64
    }
}

/// Variable name to position in the footer: a fast fixed-seed hash, as it
/// is asked on every read.
type VariableIndex = HashMap<String, usize, foldhash::fast::FixedState>;

/// For each variable, the number of datasets whose schema puts an array in its
/// segment (for `_datasets`: those declaring a dataset-level attribute).
fn expected_arrays(footer: &CollectionFooter, index: &VariableIndex) -> Vec<u64> {
    let mut per_schema = vec![0u64; footer.schema_pool.len()];
    for &schema in footer.datasets.values() {
        if let Some(n) = per_schema.get_mut(schema as usize) {
            *n = n.saturating_add(1);
        }
    }
    let mut out = vec![0u64; footer.variables.len()];
    let mut add = |name: &str, n: u64| {
        if let Some(slot) = index.get(name).and_then(|&i| out.get_mut(i)) {
            *slot = slot.saturating_add(n);
        }
    };
    for (schema, &n) in per_schema.iter().enumerate() {
        let Some(view) = u32::try_from(schema)
            .ok()
            .and_then(|s| footer.schema_view(s))
        else {
            continue;
        };
        for array in view.arrays() {
            add(array.name(), n);
        }
        if view.has_attributes() {
            add(DATASETS_SEGMENT, n);
        }
    }
    out
}
