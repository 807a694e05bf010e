//! Deleting from a set. Names that all lie in one member are hidden in that
//! member's mask (as for a lone collection), then the manifest is committed
//! with the member's new live count and mask checksum. Names that lie in
//! several members are hidden by one new member holding a deleted copy of
//! each (as [`SetWriter::hide`] does), committed by one manifest update: all
//! of the delete or none of it.

use std::collections::BTreeMap;

use atlas_format::{DeletionMask, crc32c};
use atlas_io::read_optional;

use super::manifest_store::update_manifest;
use super::reader::Atlas;
use super::writer::{SetWriter, member_id};
use crate::error::{AtlasError, Result};
use crate::read::{DeleteOutcome, Member};
use crate::write::WriterConfig;

/// How [`Atlas::delete_datasets_with`] writes the member that hides names
/// lying in several members of a set.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct DeleteOptions {
    pub(crate) writer: WriterConfig,
    pub(crate) ids: Option<(i64, u64)>,
}

impl DeleteOptions {
    /// How the hiding member is written (storage, codec).
    pub fn writer(mut self, config: WriterConfig) -> Self {
        self.writer = config;
        self
    }

    /// The time and random number the hiding member's id is made of (see
    /// [`member_id`]); without it, the clock and a per-process random number.
    pub fn ids(mut self, unix_ms: i64, nonce: u64) -> Self {
        self.ids = Some((unix_ms, nonce));
        self
    }
}

/// The clock and a per-process random number: the id of a hiding member
/// whose caller passed none.
fn default_ids() -> (i64, u64) {
    use std::hash::{BuildHasher, Hasher};
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(now.as_nanos());
    hasher.write_u32(std::process::id());
    (
        i64::try_from(now.as_millis()).unwrap_or(i64::MAX),
        hasher.finish(),
    )
}

/// Manifest commits redone when a concurrent delete changed a mask meanwhile.
const MAX_MASK_ROUNDS: usize = 8;

/// Deletes made again on a newer generation when a compaction replaced
/// their member between the mask write and the commit.
const MAX_REDOS: usize = 4;

/// What one delete on one generation came to.
enum Deleted {
    Done(DeleteOutcome),
    /// The masks are written, but a member they belong to left the set.
    MemberLeft(DeleteOutcome),
}

impl Atlas {
    /// Hides the named datasets, as [`delete_datasets_with`](Self::delete_datasets_with)
    /// does with default options.
    ///
    /// # Errors
    /// As [`delete_datasets_with`](Self::delete_datasets_with).
    pub async fn delete_datasets(&self, names: &[&str]) -> Result<DeleteOutcome> {
        self.delete_datasets_with(names, &DeleteOptions::default())
            .await
    }

    /// Hides the named datasets, so that an older copy in an older member
    /// does not come back either. All or nothing for unknown names: an
    /// unknown name is `DatasetNotFound` and nothing is written; a name
    /// already deleted is accepted and changes nothing. Afterwards the
    /// datasets appear in no list, lookup, statistic or attribute column of
    /// this handle; containers are never modified.
    ///
    /// Names that all lie in one member are hidden in its mask (one
    /// read-modify-write), then one manifest commit records the new live
    /// count (read, conditional write, read-back). Names that lie in several
    /// members of a set are hidden by one new member holding a deleted copy
    /// of each, committed by one manifest update: a reader sees all of the
    /// delete or none of it, and a writer killed before the commit leaves
    /// the set as it was (the uncommitted member is left for `atlas cleanup`).
    ///
    /// # Errors
    /// [`AtlasError::DatasetNotFound`]; [`AtlasError::CorruptMask`] when a
    /// member's mask on storage is not a mask; [`AtlasError::Io`] when
    /// storage fails or concurrent writers kept winning the mask's
    /// conditional write; [`AtlasError::CommitConflict`] when the manifest
    /// commit kept losing races (for names in one member the mask is written:
    /// the datasets are hidden, and only the manifest's counts lag until the
    /// next commit; for names in several members nothing is hidden), or
    /// when compactions kept replacing the member the names lie in (a
    /// compaction that replaces it between this delete's mask write and its
    /// commit may have copied the names still live, so the delete is made
    /// again on the newer generation, up to four times); what
    /// [`SetWriter::commit`] returns.
    pub async fn delete_datasets_with(
        &self,
        names: &[&str],
        options: &DeleteOptions,
    ) -> Result<DeleteOutcome> {
        let mut outcome = match self.delete_once(names, options, false).await? {
            Deleted::Done(outcome) => return Ok(outcome),
            Deleted::MemberLeft(outcome) => outcome,
        };
        // A compaction replaced a member between our mask write and our
        // commit, and may have copied the names before the mask hid them:
        // the delete is made again in the set as it is now (a name found
        // hidden there already is accepted, and so is one the compaction
        // left out because our mask already hid it when it read the run).
        for _ in 0..MAX_REDOS {
            let newer = Atlas::open(self.location().clone(), self.options()).await?;
            match Box::pin(newer.delete_once(names, options, true)).await? {
                Deleted::Done(_) => return Ok(outcome),
                Deleted::MemberLeft(again) => outcome.guarantee = again.guarantee,
            }
        }
        Err(AtlasError::CommitConflict {
            path: self.manifest_path().to_owned(),
            generation: self.generation().unwrap_or(0),
            what: "compactions kept replacing the members the names lie in".to_owned(),
        })
    }

    /// One delete on this handle's generation: done, or written into a
    /// member that a compaction has meanwhile replaced. `redo`: the delete
    /// is made again, and a name no member holds is gone already.
    async fn delete_once(
        &self,
        names: &[&str],
        options: &DeleteOptions,
        redo: bool,
    ) -> Result<Deleted> {
        let views = self.views().await?;
        let mut by_member: BTreeMap<usize, (Member, Vec<&str>)> = BTreeMap::new();
        for name in names {
            // The newest member holding the name decides, as for a read.
            let found = views
                .iter()
                .enumerate()
                .rev()
                .find(|(_, v)| v.member().footer().datasets.contains_key(*name));
            let (index, view) = match found {
                Some(found) => found,
                None if redo => continue,
                None => {
                    return Err(AtlasError::DatasetNotFound {
                        name: (*name).to_owned(),
                    });
                }
            };
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
        if self.is_set() && by_member.len() > 1 {
            return self
                .hide_in_one_commit(&by_member, options)
                .await
                .map(Deleted::Done);
        }
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
            let outcome = DeleteOutcome {
                deleted,
                guarantee: guarantee.unwrap_or(atlas_io::WriteGuarantee::Conditional),
            };
            if !self.commit_masks(&touched).await? {
                return Ok(Deleted::MemberLeft(outcome));
            }
            return Ok(Deleted::Done(outcome));
        }
        Ok(Deleted::Done(DeleteOutcome {
            deleted,
            guarantee: guarantee.unwrap_or(atlas_io::WriteGuarantee::Conditional),
        }))
    }

    /// Hides names of several members by one new member holding a deleted
    /// copy of each, committed in one manifest update; then hides them in
    /// this handle's members, so that its own delete shows at once.
    async fn hide_in_one_commit(
        &self,
        by_member: &BTreeMap<usize, (Member, Vec<&str>)>,
        options: &DeleteOptions,
    ) -> Result<DeleteOutcome> {
        let (unix_ms, nonce) = options.ids.unwrap_or_else(default_ids);
        let config = options.writer.clone().created_unix_ms(unix_ms);
        let mut writer = SetWriter::create(self.location().clone(), &config).await?;
        let member = writer.add_member(&member_id(unix_ms, nonce)).await?;
        // A name asked twice is hidden once (a second copy would be refused).
        let names: Vec<&str> = by_member
            .values()
            .flat_map(|(_, names)| names.iter().copied())
            .collect::<std::collections::BTreeSet<&str>>()
            .into_iter()
            .collect();
        let written = async {
            writer.hide(&member, &names).await?;
            writer.finish_member(member).await.map(|_| ())
        }
        .await;
        if let Err(e) = written {
            writer.abort().await?;
            return Err(e);
        }
        let outcome = writer.commit().await?;
        for (member, names) in by_member.values() {
            member.hide_in_memory(names);
        }
        Ok(DeleteOutcome {
            deleted: names.len(),
            guarantee: outcome.guarantee,
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
    /// `false` when a touched member left the set meanwhile (a compaction
    /// replaced it): nothing was recorded, and the delete must be made again.
    async fn commit_masks(&self, touched: &[(usize, Member)]) -> Result<bool> {
        let mut committed: Option<Vec<(String, u64, Option<u32>)>> = None;
        let mut left = false;
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
                return Ok(true);
            }
            let updated = update_manifest(
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
                                left = true;
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
            .await;
            let manifest = match updated {
                Ok((manifest, _)) => manifest,
                Err(_) if left => return Ok(false),
                Err(e) => return Err(e),
            };
            self.set_manifest(manifest);
            committed = Some(states);
        }
        tracing::warn!(
            manifest = self.manifest_path(),
            "masks kept changing while deleting; the manifest's live counts may lag"
        );
        Ok(true)
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
