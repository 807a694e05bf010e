//! The state every writer of one collection shares: the datasets handed out
//! and their outcome, the distinct schemas, the phase of the commit, and the
//! per-variable segment writers. `AtlasWriter` (collection.rs) and
//! `DatasetWriter` (dataset.rs) both depend on this module, never on each other.

use std::collections::HashSet;
use std::sync::{Mutex, MutexGuard};

use atlas_format::{ArrayDecl, DType, DatasetSchema};
use indexmap::IndexSet;
use opendal::Operator;
use smol_str::SmolStr;

use super::config::WriterConfig;
use super::variables::Variables;
use crate::error::{AtlasError, Result};
use crate::index::{DatasetAttributes, WrittenAttributes};

/// Keys and value types of attributes, in set order.
pub(crate) type AttrKeys = Vec<(SmolStr, DType)>;

/// A dataset's declaration without shapes: what the footer's schema pool holds.
/// Hashable, so datasets of one declaration share one entry while writing.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct SchemaKey {
    /// `(array, dtype, array attribute keys and types)` in definition order.
    pub arrays: Vec<(SmolStr, DType, AttrKeys)>,
    /// Dataset-level attribute keys and types, in set order.
    pub attrs: AttrKeys,
}

impl SchemaKey {
    pub(crate) fn to_schema(&self) -> DatasetSchema {
        DatasetSchema {
            arrays: self
                .arrays
                .iter()
                .map(|(name, dtype, attributes)| ArrayDecl {
                    name: name.clone(),
                    dtype: dtype.clone(),
                    attributes: attributes.clone(),
                })
                .collect(),
            attributes: self.attrs.clone(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SlotStatus {
    /// A `DatasetWriter` holds it.
    Open,
    /// Its `finish` is pushing arrays into the variables.
    Finishing,
    /// Finished: in the collection with this (local) schema.
    Done(u32),
    /// Aborted, dropped or failed: not in the collection; later ordinals close up.
    Gone,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Open,
    Committing,
    Committed,
    Failed,
    Dropped,
}

pub(crate) struct State {
    pub(crate) phase: Phase,
    /// Set when a push failed half-way: some segment holds an array that must not exist.
    pub(crate) poisoned: Option<String>,
    /// Every name handed out, including abandoned ones.
    pub(crate) names: HashSet<SmolStr>,
    /// One per `add_dataset`, in call order.
    pub(crate) slots: Vec<(SmolStr, SlotStatus)>,
    /// Distinct declarations of finished datasets.
    pub(crate) schemas: IndexSet<SchemaKey>,
    /// The dataset attributes of every dataset added, kept for the dataset
    /// index when the writer writes one (it then reads no footer back).
    pub(crate) attributes: WrittenAttributes,
}

/// What every writer of one collection shares.
pub(crate) struct Shared {
    pub(crate) config: WriterConfig,
    /// Where the collection is written (also what `op` below comes from).
    pub(crate) location: crate::Location,
    pub(crate) op: Operator,
    /// The collection's directory when it is written to local disk, whose
    /// temp-file directory the commit removes once it is empty.
    pub(crate) local_dir: Option<std::path::PathBuf>,
    pub(crate) container_path: String,
    pub(crate) state: Mutex<State>,
    pub(crate) variables: Variables,
}

impl Shared {
    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Moves slot `slot` from `Open` to `Finishing`; refuses if the collection
    /// is no longer accepting datasets.
    pub(crate) fn begin_finish(&self, slot: usize) -> Result<()> {
        let mut st = self.state();
        st.check_accepting()?;
        match st.slots.get_mut(slot) {
            Some((_, status @ SlotStatus::Open)) => {
                *status = SlotStatus::Finishing;
                Ok(())
            }
            _ => Err(AtlasError::invalid_use(
                "this dataset writer is no longer open",
            )),
        }
    }

    /// Records the outcome of a dataset's finish.
    /// Ends slot `slot`'s push: its schema and, for the dataset index, its
    /// dataset attributes, or why it failed (which poisons the writer).
    pub(crate) fn end_finish(
        &self,
        slot: usize,
        outcome: std::result::Result<(SchemaKey, Option<DatasetAttributes>), String>,
    ) {
        let mut st = self.state();
        let status = match outcome {
            Ok((key, attributes)) => {
                if let Some(attributes) = attributes {
                    st.attributes.record(slot, attributes);
                }
                let (id, _) = st.schemas.insert_full(key);
                SlotStatus::Done(u32::try_from(id).unwrap_or(u32::MAX))
            }
            Err(reason) => {
                if st.poisoned.is_none() {
                    tracing::warn!(%reason, "collection writer poisoned");
                    st.poisoned = Some(reason);
                }
                SlotStatus::Gone
            }
        };
        if let Some((_, s)) = st.slots.get_mut(slot) {
            *s = status;
        }
    }

    /// Marks an open slot as abandoned (drop or abort of its writer).
    pub(crate) fn abandon(&self, slot: usize) {
        let mut st = self.state();
        if let Some((_, s @ SlotStatus::Open)) = st.slots.get_mut(slot) {
            *s = SlotStatus::Gone;
        }
    }
}

impl State {
    /// Refuses new work unless the writer is open and unpoisoned.
    pub(crate) fn check_accepting(&self) -> Result<()> {
        match self.phase {
            Phase::Open => {}
            Phase::Committing | Phase::Committed => {
                return Err(AtlasError::invalid_use(
                    "the collection writer has already been finished",
                ));
            }
            Phase::Failed => {
                return Err(AtlasError::invalid_use("the collection writer failed"));
            }
            Phase::Dropped => {
                return Err(AtlasError::invalid_use(
                    "the collection writer was dropped; nothing will be committed",
                ));
            }
        }
        if let Some(reason) = &self.poisoned {
            return Err(AtlasError::invalid_use(format!(
                "the collection writer is unusable after an earlier failure: {reason}"
            )));
        }
        Ok(())
    }
}
