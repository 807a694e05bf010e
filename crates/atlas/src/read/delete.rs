//! Deleting datasets: ordinals added to the `deleted.mask` sidecar in one
//! read-modify-write, and to the in-memory mask so the deletion shows at once.

use std::collections::BTreeSet;

use atlas_format::{DeletionMask, FormatError};
use atlas_io::{UpdateError, WriteGuarantee, update_checked};
use bytes::Bytes;

use super::member::Member;
use crate::error::{AtlasError, Result};

/// Conditional writes that lose a race are retried this many more times.
const MAX_RETRIES: u32 = 12;

/// What [`Atlas::delete_datasets`](crate::Atlas::delete_datasets) did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct DeleteOutcome {
    /// Datasets hidden by this call (names already deleted do not count).
    pub deleted: usize,
    /// Whether a concurrent delete on another handle could have been lost:
    /// `Conditional` where the backend checked the mask was unchanged since read.
    pub guarantee: WriteGuarantee,
}

impl Member {
    /// Hides `names` in this handle's mask only, nothing written: for names
    /// a newer member of the set now hides on storage. Unknown names are skipped.
    pub(crate) fn hide_in_memory(&self, names: &[&str]) {
        let footer = self.footer();
        let ordinals: Vec<u32> = names
            .iter()
            .filter_map(|n| footer.datasets.get_index_of(*n))
            .filter_map(|i| u32::try_from(i).ok())
            .collect();
        let mut state = self.mask_mut();
        for o in ordinals {
            state.mask.insert(o);
        }
    }

    /// Hides the named datasets: one GET and one PUT of `deleted.mask` whatever
    /// the count, merged with what the mask on storage holds.
    ///
    /// All or nothing: an unknown name is `DatasetNotFound` and nothing is
    /// written; a name already deleted is accepted. Afterwards the datasets
    /// appear in no list, lookup, statistic or attribute column of this handle.
    /// The container itself is never modified.
    ///
    /// # Errors
    /// [`AtlasError::DatasetNotFound`] for a name the container does not hold
    /// (nothing is written); [`AtlasError::CorruptMask`] when the mask on
    /// storage is not a mask; [`AtlasError::Io`] when storage fails, or when
    /// concurrent writers kept winning the conditional write through every
    /// retry (a transient error: try again).
    ///
    /// # Cancel safety
    /// The mask is replaced in one atomic write (a conditional PUT, or a temp
    /// file and a rename on local disk). Dropping the future before that write
    /// is sent changes nothing; after it, the new mask is on storage whole,
    /// though this handle may not list the datasets as deleted until reopened.
    pub(crate) async fn delete_datasets(&self, names: &[&str]) -> Result<DeleteOutcome> {
        let footer = self.footer();
        let mut ordinals = BTreeSet::new();
        for name in names {
            let ordinal = footer
                .datasets
                .get_index_of(*name)
                .and_then(|i| u32::try_from(i).ok())
                .ok_or_else(|| AtlasError::DatasetNotFound {
                    name: (*name).to_owned(),
                })?;
            ordinals.insert(ordinal);
        }
        if ordinals.is_empty() {
            // Nothing asked, nothing written: no concurrent change can be lost.
            return Ok(DeleteOutcome {
                deleted: 0,
                guarantee: WriteGuarantee::Conditional,
            });
        }
        let inner = self.inner();
        let _one_at_a_time = inner.delete_lock.lock().await;
        let total = u32::try_from(footer.datasets.len())
            .map_err(|_| AtlasError::corrupt("more than u32::MAX datasets"))?;
        let mut merged: Option<DeletionMask> = None;
        let mut warnings: Vec<String> = Vec::new();
        let update = |existing: Option<&[u8]>| -> std::result::Result<Option<Bytes>, FormatError> {
            let (mut mask, found) = match existing {
                None => (DeletionMask::new(), Vec::new()),
                Some(bytes) => DeletionMask::decode(bytes, total)?,
            };
            warnings = found.iter().map(ToString::to_string).collect();
            let before = mask.len();
            for &o in &ordinals {
                mask.insert(o);
            }
            let unchanged = existing.is_some() && mask.len() == before && warnings.is_empty();
            let bytes = (!unchanged).then(|| Bytes::from(mask.encode()));
            merged = Some(mask);
            Ok(bytes)
        };
        let op = &self.sidecar_operator()?;
        // Read back after a conditional write: every ordinal of this delete must be there.
        let holds = |stored: &[u8]| {
            DeletionMask::decode(stored, total)
                .is_ok_and(|(mask, _)| ordinals.iter().all(|&o| mask.contains(o)))
        };
        let outcome = update_checked(op, &inner.mask_path, MAX_RETRIES, update, holds)
            .await
            .map_err(|e| match e {
                UpdateError::Io(io) => AtlasError::Io(io),
                UpdateError::Compute(format) => AtlasError::from(format),
                UpdateError::Contended { last, .. } => AtlasError::Io(last),
                other => AtlasError::invalid_use(other.to_string()),
            })?;
        for w in &warnings {
            tracing::warn!(mask = %inner.mask_path, "{w}");
        }
        let mut state = self.mask_mut();
        let deleted = ordinals
            .iter()
            .filter(|&&o| !state.mask.contains(o))
            .count();
        if let Some(merged) = merged {
            state.mask.merge(&merged);
        }
        for &o in &ordinals {
            state.mask.insert(o);
        }
        if outcome.lost_conditional_write {
            tracing::warn!(
                mask = %inner.mask_path,
                "the backend's conditional writes are not atomic: a conditional mask write was lost and redone"
            );
        }
        tracing::debug!(deleted, attempts = outcome.attempts, "deleted datasets");
        Ok(DeleteOutcome {
            deleted,
            guarantee: outcome.guarantee,
        })
    }
}
