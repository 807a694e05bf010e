//! Compaction: a run of small members rewritten into fewer big ones, which
//! replace the run in the manifest by one commit. The replaced members stay
//! on storage, each marked retired (a `retired` object in its folder, written
//! before the commit), so that a handle opened at an older generation keeps
//! reading them; `cleanup` removes them once the mark is older than the
//! retention ([`crate::DEFAULT_RETENTION`]). No commit removes a member.
//!
//! Which run: the longest run of consecutive members (commit order) each
//! holding fewer live datasets than the target, extended towards older
//! members while a name deleted in the run still has a copy in an older
//! member (dropping the deleted copy would otherwise bring the older one
//! back). The new members hold exactly the run's live datasets, as the whole
//! set resolves them, and take the run's place in the commit order.
//!
//! A sorted compaction ([`CompactOptions::sort_by`]) rewrites every member
//! instead, the set's live datasets written in the order of the keys
//! (`sort`), so that each new member holds a narrow range of them and the
//! manifest's member summaries let a query skip most members.

use std::collections::HashSet;

use atlas_format::MemberEntry;

use super::manifest_store::{CommitOutcome, update_manifest};
use super::reader::Atlas;
use super::sort::{SortKey, sorted_datasets};
use super::uncommitted::RETIRED_MARK;
use super::view::View;
use super::writer::{FailedCommit, SetWriter, member_id, member_path};
use crate::error::{AtlasError, Result};
use crate::location::Access;
use crate::read::{Dataset, Member, OpenOptions};
use crate::write::{WriterConfig, copy_datasets};

/// What [`Atlas::compact`] rewrites, and how.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CompactOptions {
    pub(crate) target_datasets: u64,
    pub(crate) writer: WriterConfig,
    pub(crate) unix_ms: i64,
    pub(crate) nonce: u64,
    pub(crate) sort_by: Vec<SortKey>,
}

impl Default for CompactOptions {
    fn default() -> Self {
        Self {
            target_datasets: 100_000,
            writer: WriterConfig::default(),
            unix_ms: 0,
            nonce: 0,
            sort_by: Vec::new(),
        }
    }
}

impl CompactOptions {
    /// Members with fewer live datasets than this are small; new members hold
    /// at most this many. Default 100 000.
    pub fn target_datasets(mut self, n: u64) -> Self {
        self.target_datasets = n.max(1);
        self
    }

    /// How the new members are written (codec, block sizes, storage).
    pub fn writer(mut self, config: WriterConfig) -> Self {
        self.writer = config;
        self
    }

    /// The time and random number new member ids are made of (see
    /// [`member_id`]): passed in so that a run is reproducible.
    pub fn ids(mut self, unix_ms: i64, nonce: u64) -> Self {
        self.unix_ms = unix_ms;
        self.nonce = nonce;
        self
    }

    /// Rewrites every member, the live datasets in the order of `keys`
    /// (lexicographic; name breaks ties, datasets without a key's value
    /// after those with one), members of at most `target_datasets` each.
    /// Empty (the default): only the longest run of small members.
    pub fn sort_by(mut self, keys: Vec<SortKey>) -> Self {
        self.sort_by = keys;
        self
    }
}

/// What a compaction did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CompactOutcome {
    /// Ids of the members replaced: marked retired and left on storage for
    /// readers of older generations until `cleanup` removes them after the retention.
    pub replaced: Vec<String>,
    /// Ids of the members written in their place.
    pub written: Vec<String>,
    /// Live datasets copied.
    pub datasets: u64,
    /// The commit.
    pub commit: CommitOutcome,
    /// Times the commit found deletes landed in the run meanwhile, hid the
    /// deleted names in the new members too and was tried again.
    pub rebases: u32,
}

impl Atlas {
    /// Rewrites the longest run of small members into members of at most
    /// `target_datasets` each, and commits them in the run's place. `None`
    /// when no run of two or more small members (or one with deleted
    /// datasets to reclaim) exists. Every live dataset keeps its name,
    /// values and attributes; what readers see does not change. With
    /// [`CompactOptions::sort_by`], every member is rewritten, the datasets
    /// in the keys' order (`None` only for a set without members).
    ///
    /// # Errors
    /// [`AtlasError::InvalidUse`] on a lone collection;
    /// [`AtlasError::ArrayNotFound`] for a sort key variable no dataset
    /// declares, [`AtlasError::SortKeyNotScalar`] for one holding more than
    /// one value in a dataset (nothing is written then);
    /// [`AtlasError::CommitConflict`] when another compaction replaced
    /// members of the run meanwhile: the new members are removed and
    /// nothing changes (a delete that lands in the run meanwhile is not a
    /// conflict: the deleted names are hidden in the new members too, and
    /// the commit is tried again); what reading the members or writing the
    /// new ones returns.
    pub async fn compact(&self, options: &CompactOptions) -> Result<Option<CompactOutcome>> {
        let Some(manifest) = self.manifest() else {
            return Err(AtlasError::invalid_use(
                "a lone collection has no members to compact (rewrite it instead)",
            ));
        };
        let views = self.views().await?;
        let (entries, datasets, copied_from) = if options.sort_by.is_empty() {
            let Some(run) = choose_run(&manifest.members, &views, options.target_datasets) else {
                return Ok(None);
            };
            let entries: Vec<MemberEntry> = manifest
                .members
                .get(run.clone())
                .unwrap_or_default()
                .to_vec();
            let run_views = views.get(run).unwrap_or_default();
            let datasets: Vec<Dataset> = run_views.iter().flat_map(View::datasets).collect();
            (entries, datasets, live_names(run_views))
        } else {
            if manifest.members.is_empty() {
                return Ok(None);
            }
            // The whole set: nothing older can come back, whatever is dropped.
            let datasets = sorted_datasets(&views, &options.sort_by).await?;
            (manifest.members.clone(), datasets, live_names(&views))
        };
        let copied = u64::try_from(datasets.len()).unwrap_or(u64::MAX);
        if datasets.is_empty() {
            // Every dataset of the run is deleted: the run leaves the set and
            // nothing takes its place.
            return self.drop_run(&entries).await.map(Some);
        }

        let mut writer = SetWriter::create(self.location().clone(), &options.writer).await?;
        let per_member = usize::try_from(options.target_datasets).unwrap_or(usize::MAX);
        let mut written = Vec::new();
        let mut nonce = options.nonce;
        let mut datasets = datasets.into_iter().peekable();
        while datasets.peek().is_some() {
            let chunk: Vec<Dataset> = datasets.by_ref().take(per_member).collect();
            let id = member_id(options.unix_ms, nonce);
            nonce = nonce.wrapping_add(1);
            let member = match writer.add_member(&id).await {
                Ok(m) => m,
                Err(e) => {
                    writer.abort().await?;
                    return Err(e);
                }
            };
            let copy = copy_datasets(chunk, member.into_writer(), |_, _| {}).await;
            if let Err(e) = copy {
                writer.abort().await?;
                return Err(e);
            }
            if let Err(e) = writer.record_member(&id).await {
                writer.abort().await?;
                return Err(e);
            }
            written.push(id);
        }
        let replaced: Vec<String> = entries.iter().map(|e| e.id.clone()).collect();
        // Marked before the commit: once the commit drops them from the
        // manifest, `cleanup` sees them retired, never as old leftovers.
        if let Err(e) = self.mark_retired(&replaced, true).await {
            writer.abort().await?;
            return Err(e);
        }
        let (commit, rebases) = match self
            .commit_rebasing(&mut writer, entries, &copied_from)
            .await
        {
            Ok(done) => done,
            Err(failed) => {
                let e = writer.give_up(failed).await;
                return Err(self.unmark(&replaced, e).await);
            }
        };
        Ok(Some(CompactOutcome {
            replaced,
            written,
            datasets: copied,
            commit,
            rebases,
        }))
    }
}

/// Rebases a compaction this many times at most over deletes in its run.
const MAX_REBASES: u32 = 16;

/// Per member, the names of the datasets a compaction copies from it.
fn live_names(views: &[View]) -> Vec<HashSet<String>> {
    views
        .iter()
        .map(|v| v.datasets().iter().map(|d| d.name().to_owned()).collect())
        .collect()
}

impl Atlas {
    /// Commits the compaction's new members in the place of `run`. A delete
    /// that lands in the run while the compaction copies it (the same
    /// members, in the same order, with fewer live datasets or another mask)
    /// does not make it give up: the names it deleted are hidden in the new
    /// members too, and the commit is tried again against the run as it is
    /// now, as an append is put after the members that won its race.
    async fn commit_rebasing(
        &self,
        writer: &mut SetWriter,
        mut run: Vec<MemberEntry>,
        copied_from: &[HashSet<String>],
    ) -> std::result::Result<(CommitOutcome, u32), FailedCommit> {
        let path = self.manifest_path();
        let mut rebases = 0u32;
        loop {
            let mut moved: Option<Vec<MemberEntry>> = None;
            let attempt = writer
                .try_commit_with(|current, new| {
                    let placed = replace_run(current, &run, new, path);
                    moved = placed
                        .is_err()
                        .then(|| deleted_from(current, &run))
                        .flatten();
                    placed
                })
                .await;
            let mut failed = match attempt {
                Ok(commit) => return Ok((commit, rebases)),
                Err(failed) => failed,
            };
            let Some(now) = moved.filter(|_| rebases < MAX_REBASES) else {
                return Err(failed);
            };
            rebases = rebases.saturating_add(1);
            match self.rebase(writer, &run, &now, copied_from).await {
                Ok(()) => run = now,
                Err(e) => {
                    failed.error = e;
                    return Err(failed);
                }
            }
        }
    }

    /// Hides in the new members what was deleted from `then` (the run as the
    /// compaction read it) to make `now`: per changed member, the copied
    /// names its mask on storage now hides.
    async fn rebase(
        &self,
        writer: &mut SetWriter,
        then: &[MemberEntry],
        now: &[MemberEntry],
        copied_from: &[HashSet<String>],
    ) -> Result<()> {
        let mut gone = HashSet::new();
        for ((before, after), copied) in then.iter().zip(now).zip(copied_from) {
            if before.datasets_live == after.datasets_live
                && before.checksums.mask == after.checksums.mask
            {
                continue;
            }
            let location = self
                .location()
                .child(&after.path, Access::Read)
                .map_err(|e| e.in_member(&after.id, &after.path))?;
            let member = Member::open_location(location, &OpenOptions::default())
                .await
                .map_err(|e| e.in_member(&after.id, &after.path))?;
            gone.extend(copied.iter().filter(|n| !member.contains(n)).cloned());
        }
        let hidden = writer.hide_in_finished(&gone).await?;
        tracing::debug!(hidden, "compaction rebased over deletes in its run");
        Ok(())
    }
}

/// The run as `manifest` holds it now, when only deletes changed it (the
/// same members in the same order); `None` when a member left or moved.
fn deleted_from(
    manifest: &atlas_format::SetManifest,
    run: &[MemberEntry],
) -> Option<Vec<MemberEntry>> {
    let first = run.first()?;
    let start = manifest.members.iter().position(|m| m.id == first.id)?;
    let now = manifest.members.get(start..start.checked_add(run.len())?)?;
    now.iter()
        .zip(run)
        .all(|(a, b)| a.id == b.id)
        .then(|| now.to_vec())
}

impl Atlas {
    /// Commits the set without `run`, whose datasets are all deleted. A
    /// delete that lands in the run meanwhile (its members' masks changed,
    /// nothing else) only deleted more of it: the run is dropped as it is now.
    async fn drop_run(&self, run: &[MemberEntry]) -> Result<CompactOutcome> {
        let replaced: Vec<String> = run.iter().map(|e| e.id.clone()).collect();
        self.mark_retired(&replaced, true).await?;
        let path = self.manifest_path();
        let commit = update_manifest(
            self.location().operator(),
            path,
            &self.options().limits,
            |manifest| {
                let now = deleted_from(manifest, run).unwrap_or_else(|| run.to_vec());
                replace_run(manifest, &now, &[], path)
            },
            |stored| {
                replaced
                    .iter()
                    .all(|id| stored.members.iter().all(|m| &m.id != id))
            },
        )
        .await;
        match commit {
            Ok((_, commit)) => Ok(CompactOutcome {
                replaced,
                written: Vec::new(),
                datasets: 0,
                commit,
                rebases: 0,
            }),
            Err(e) => Err(self.unmark(&replaced, e).await),
        }
    }

    /// Takes back the retired marks of `replaced` after a failed commit (they
    /// are still committed: a mark would only mislead a reader of the folder),
    /// and passes the commit's error on.
    async fn unmark(&self, replaced: &[String], error: AtlasError) -> AtlasError {
        if let Err(unmark) = self.mark_retired(replaced, false).await {
            tracing::warn!("retired marks of a failed compaction not removed: {unmark}");
        }
        error
    }

    /// Writes (`mark`) or removes the retired mark of each member in `ids`.
    async fn mark_retired(&self, ids: &[String], mark: bool) -> Result<()> {
        let op = self.location().operator();
        for id in ids {
            let path = self
                .location()
                .object(&format!("{}/{RETIRED_MARK}", member_path(id)));
            let done = if mark {
                op.write(&path, Vec::<u8>::new()).await.map(|_| ())
            } else {
                op.delete(&path).await
            };
            done.map_err(|e| {
                AtlasError::Io(atlas_io::IoError::from_opendal(
                    e,
                    if mark { "write" } else { "delete" },
                    &path,
                ))
            })?;
        }
        Ok(())
    }
}

/// Puts `new` in the place of `run` in `manifest`, provided the run is still
/// there unchanged (same members in the same order, same live counts and masks).
fn replace_run(
    manifest: &mut atlas_format::SetManifest,
    run: &[MemberEntry],
    new: &[MemberEntry],
    path: &str,
) -> Result<()> {
    let conflict = |what: &str| AtlasError::CommitConflict {
        path: path.to_owned(),
        generation: manifest.generation,
        what: what.to_owned(),
    };
    let first = run.first().ok_or_else(|| conflict("nothing to replace"))?;
    let start = manifest
        .members
        .iter()
        .position(|m| m.id == first.id)
        .ok_or_else(|| conflict("a member of the run left the set"))?;
    let end = start.saturating_add(run.len());
    let current = manifest
        .members
        .get(start..end)
        .ok_or_else(|| conflict("a member of the run left the set"))?;
    let unchanged = current.iter().zip(run).all(|(now, then)| {
        now.id == then.id
            && now.datasets_live == then.datasets_live
            && now.checksums.mask == then.checksums.mask
    });
    if !unchanged {
        return Err(conflict(
            "a member of the run changed while it was rewritten",
        ));
    }
    manifest.members.splice(start..end, new.iter().cloned());
    Ok(())
}

/// The run of members to rewrite (indexes into the commit order), if any.
fn choose_run(
    members: &[MemberEntry],
    views: &[View],
    target: u64,
) -> Option<std::ops::Range<usize>> {
    let small = |m: &MemberEntry| m.datasets_live < target;
    let mut best: Option<std::ops::Range<usize>> = None;
    let mut start = 0;
    for end in 0..=members.len() {
        let is_small = members.get(end).is_some_and(small);
        if is_small {
            continue;
        }
        let run = start..end;
        let worth = run.len() >= 2
            || members
                .get(start)
                .is_some_and(|m| run.len() == 1 && m.datasets_live < m.datasets_total);
        if worth && best.as_ref().is_none_or(|b| run.len() > b.len()) {
            best = Some(run);
        }
        start = end.saturating_add(1);
    }
    let mut run = best?;
    // Names a member after the run holds keep hiding older copies whatever
    // the run becomes.
    let later: HashSet<&str> = views
        .get(run.end..)
        .unwrap_or_default()
        .iter()
        .flat_map(|v| v.member().footer().datasets.keys().map(|n| n.as_str()))
        .collect();
    // Extend towards older members while a name hidden in the run (deleted,
    // or replaced within it) still has a copy older than the run.
    loop {
        let hidden: HashSet<&str> = views
            .get(run.clone())
            .unwrap_or_default()
            .iter()
            .flat_map(|v| {
                v.member()
                    .footer()
                    .datasets
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| u32::try_from(*i).is_ok_and(|o| !v.is_live(o)))
                    .map(|(_, (n, _))| n.as_str())
            })
            .filter(|n| !later.contains(n))
            .collect();
        let older = views.get(..run.start).unwrap_or_default();
        let reaches = older.iter().rposition(|v| {
            hidden
                .iter()
                .any(|n| v.member().footer().datasets.contains_key(*n))
        });
        match reaches {
            Some(i) if i < run.start => run = i..run.end,
            _ => return Some(run),
        }
    }
}
