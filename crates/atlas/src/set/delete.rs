//! Deleting from a set: each name is hidden in the member that holds its
//! live copy (that member's mask, as for a lone collection), then the
//! manifest is committed with the members' new live counts and mask checksums.

use std::collections::BTreeMap;

use atlas_format::{DeletionMask, crc32c};
use atlas_io::read_optional;

use super::manifest_store::update_manifest;
use super::reader::Atlas;
use crate::error::{AtlasError, Result};
use crate::read::{DeleteOutcome, Member};

/// Manifest commits redone when a concurrent delete changed a mask meanwhile.
const MAX_MASK_ROUNDS: usize = 8;

impl Atlas {
    /// Hides the named datasets: each in the member holding its live copy, so
    /// an older copy in an older member does not come back. All or nothing
    /// for unknown names: an unknown name is `DatasetNotFound` and nothing is
    /// written; a name already deleted is accepted and changes nothing.
    /// Afterwards the datasets appear in no list, lookup, statistic or
    /// attribute column of this handle; containers are never modified. Cost per member touched: the mask's read-modify-write; then
    /// one manifest commit (read, conditional write, read-back).
    ///
    /// # Errors
    /// [`AtlasError::DatasetNotFound`]; [`AtlasError::CorruptMask`] when a
    /// member's mask on storage is not a mask, [`AtlasError::Io`] when storage
    /// fails or concurrent writers kept winning the mask's conditional write; [`AtlasError::CommitConflict`] when the manifest
    /// commit kept losing races (the masks are written: the datasets are
    /// hidden, and only the manifest's counts lag until the next commit).
    pub async fn delete_datasets(&self, names: &[&str]) -> Result<DeleteOutcome> {
        let views = self.views().await?;
        let mut by_member: BTreeMap<usize, (Member, Vec<&str>)> = BTreeMap::new();
        for name in names {
            // The newest member holding the name decides, as for a read.
            let (index, view) = views
                .iter()
                .enumerate()
                .rev()
                .find(|(_, v)| v.member().footer().datasets.contains_key(*name))
                .ok_or_else(|| AtlasError::DatasetNotFound {
                    name: (*name).to_owned(),
                })?;
            if !view.contains(name) {
                // Deleted there already: accepted, nothing to write.
                continue;
            }
            by_member
                .entry(index)
                .or_insert_with(|| (view.member().clone(), Vec::new()))
                .1
                .push(name);
        }
        let _one_at_a_time = self.write_lock().lock().await;
        let mut deleted = 0usize;
        let mut guarantee = None;
        for (index, (view, names)) in &by_member {
            let outcome = view
                .delete_datasets(names)
                .await
                .map_err(|e| self.in_member(*index, e))?;
            deleted = deleted.saturating_add(outcome.deleted);
            guarantee.get_or_insert(outcome.guarantee);
        }
        if self.is_set() && !by_member.is_empty() {
            let touched: Vec<(usize, Member)> = by_member
                .iter()
                .map(|(i, (v, _))| (*i, v.clone()))
                .collect();
            self.commit_masks(&touched).await?;
        }
        Ok(DeleteOutcome {
            deleted,
            guarantee: guarantee.unwrap_or(atlas_io::WriteGuarantee::Conditional),
        })
    }

    fn in_member(&self, index: usize, e: AtlasError) -> AtlasError {
        match self.member_ids(index) {
            Some((id, path)) if self.is_set() => e.in_member(id, path),
            _ => e,
        }
    }

    /// Records the masks of `touched` members in the manifest, until what it
    /// records is what storage holds (a concurrent delete may change a mask
    /// between our read of it and our commit; the later committer fixes it).
    async fn commit_masks(&self, touched: &[(usize, Member)]) -> Result<()> {
        let mut committed: Option<Vec<(String, u64, Option<u32>)>> = None;
        for _ in 0..MAX_MASK_ROUNDS {
            let mut states = Vec::with_capacity(touched.len());
            for (index, atlas) in touched {
                let (id, _) = self
                    .member_ids(*index)
                    .ok_or_else(|| AtlasError::invalid_use("member index out of range"))?;
                let (live, crc) = mask_state(atlas)
                    .await
                    .map_err(|e| self.in_member(*index, e))?;
                states.push((id.to_owned(), live, crc));
            }
            if committed.as_ref() == Some(&states) {
                return Ok(());
            }
            let (manifest, _) = update_manifest(
                self.location().operator(),
                self.manifest_path(),
                &self.options().limits,
                |manifest| {
                    for (id, live, crc) in &states {
                        let entry = manifest
                            .members
                            .iter_mut()
                            .find(|m| &m.id == id)
                            .ok_or_else(|| {
                                AtlasError::invalid_use(format!(
                                    "member {id:?} left the set while deleting from it (compacted?)"
                                ))
                            })?;
                        entry.datasets_live = *live;
                        entry.checksums.mask = *crc;
                    }
                    Ok(())
                },
                |stored| {
                    states.iter().all(|(id, live, crc)| {
                        stored.members.iter().any(|m| {
                            &m.id == id && m.datasets_live == *live && m.checksums.mask == *crc
                        })
                    })
                },
            )
            .await?;
            self.set_manifest(manifest);
            committed = Some(states);
        }
        tracing::warn!(
            manifest = self.manifest_path(),
            "masks kept changing while deleting; the manifest's live counts may lag"
        );
        Ok(())
    }
}

/// The member's live dataset count and mask checksum, as storage holds them now.
async fn mask_state(atlas: &Member) -> Result<(u64, Option<u32>)> {
    let inner = atlas.inner();
    let total = u32::try_from(atlas.dataset_count_total())
        .map_err(|_| AtlasError::corrupt("more than u32::MAX datasets"))?;
    Ok(match read_optional(&inner.op, &inner.mask_path).await? {
        None => (u64::from(total), None),
        Some(snapshot) => {
            let (mask, _) = DeletionMask::decode(&snapshot.bytes, total)?;
            let hidden = u32::try_from(mask.len()).unwrap_or(u32::MAX);
            (
                u64::from(total.saturating_sub(hidden)),
                Some(crc32c(&snapshot.bytes)),
            )
        }
    })
}
