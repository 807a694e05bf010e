//! [`SetWriter`]: new members written under `members/<id>/`, then committed
//! together by one manifest update.
//!
//! A member is an ordinary collection written by an [`AtlasWriter`]. Until
//! the commit it is invisible (readers only follow the manifest); a commit
//! that fails for good removes the members it wrote; a writer dropped
//! before committing leaves them for `atlas cleanup`.

use std::collections::{HashMap, HashSet};

use atlas_format::{
    CONTAINER_FILE, DecodeLimits, MemberEntry, SET_MANIFEST_FILE, SET_MEMBERS_DIR, SetManifest,
    validate_name,
};

use super::manifest_store::{CommitOutcome, read_manifest, update_manifest_traced};
use super::summary::member_entry;
use crate::error::{AtlasError, Result};
use crate::location::{Access, Address, Location};
use crate::read::{Member, OpenOptions};
use crate::write::{AtlasWriter, WriterConfig};

/// A member id from a time and a random number, both passed in so runs are
/// reproducible: `<unix ms, 13 digits>-<nonce, 16 hex digits>`. Ids sort by time.
pub fn member_id(unix_ms: i64, nonce: u64) -> String {
    format!("{:013}-{nonce:016x}", unix_ms.max(0))
}

/// The path of member `id` relative to its set (`members/<id>`).
pub fn member_path(id: &str) -> String {
    format!("{SET_MEMBERS_DIR}/{id}")
}

/// Adds members to a collection set (creating the set on first commit).
///
/// ```
/// # use atlas::{SetWriter, WriterConfig, member_id};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> atlas::Result<()> {
/// # let tmp = tempfile::tempdir().unwrap();
/// let mut set = SetWriter::create(tmp.path(), &WriterConfig::default()).await?;
/// let member = set.add_member(&member_id(1_700_000_000_000, 7)).await?;
/// let ds = member.writer().add_dataset("R6901234_001.nc")?;
/// ds.finish().await?;
/// set.finish_member(member).await?;
/// let outcome = set.commit().await?; // one manifest read, one conditional write, one read-back
/// assert_eq!(outcome.generation, 1);
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct SetWriter {
    location: Location,
    config: WriterConfig,
    limits: DecodeLimits,
    /// Ids begun by this writer (written or not).
    begun: Vec<String>,
    /// Members written and described, in the order they will be committed.
    finished: Vec<MemberEntry>,
    /// Per member id, the names it hides ([`SetWriter::hide`]).
    hidden: HashMap<String, Vec<String>>,
}

/// A commit that did not land, with what deciding whether to remove its
/// members needs (see [`SetWriter::give_up`]).
#[derive(Debug)]
pub(crate) struct FailedCommit {
    pub(crate) error: AtlasError,
    /// An id of ours is already in the set: the objects are the set's.
    taken: bool,
    /// A manifest naming our members was visible before being overwritten.
    was_visible: bool,
}

/// One new member being written: an [`AtlasWriter`] under `members/<id>/`.
#[derive(Debug)]
pub struct MemberWriter {
    id: String,
    writer: AtlasWriter,
}

impl MemberWriter {
    /// The member's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The collection writer of the member: add datasets through it.
    pub fn writer(&self) -> &AtlasWriter {
        &self.writer
    }

    /// The collection writer itself, for code that finishes it (an ingest);
    /// then [`SetWriter::record_member`] describes the member for the commit.
    pub fn into_writer(self) -> AtlasWriter {
        self.writer
    }
}

impl SetWriter {
    /// A writer for the set at `address` (created by the first commit if
    /// absent). One request: a check that no lone collection is there.
    ///
    /// # Errors
    /// [`AtlasError::InvalidUse`] when a lone collection is at `address`;
    /// [`AtlasError::InvalidLocation`] for an address no backend can write;
    /// [`AtlasError::Io`] when a local directory cannot be created.
    pub async fn create(address: impl Into<Address>, config: &WriterConfig) -> Result<SetWriter> {
        let location = address
            .into()
            .resolve(&config.storage, Access::Write)
            .await?;
        // A manifest committed beside a lone collection would hide it.
        let container = location.object(CONTAINER_FILE);
        if atlas_io::stat_len(location.operator(), &container)
            .await
            .is_ok()
        {
            return Err(AtlasError::invalid_use(format!(
                "{} holds a lone collection ({container}); a set cannot be created over it",
                location.display()
            )));
        }
        Ok(SetWriter {
            location,
            config: config.clone(),
            limits: DecodeLimits::default(),
            begun: Vec::new(),
            finished: Vec::new(),
            hidden: HashMap::new(),
        })
    }

    /// Starts member `id` (see [`member_id`]): a collection writer under
    /// `members/<id>/`. Nothing is visible until [`commit`](Self::commit).
    ///
    /// # Errors
    /// [`AtlasError::InvalidName`] for an id that is not a valid name;
    /// [`AtlasError::InvalidUse`] for an id this writer already used or whose
    /// folder already holds a collection; what [`AtlasWriter::create`] returns.
    pub async fn add_member(&mut self, id: &str) -> Result<MemberWriter> {
        validate_name(id)?;
        if self.begun.iter().any(|b| b == id) {
            return Err(AtlasError::invalid_use(format!(
                "member {id:?} was already added to this writer"
            )));
        }
        let location = self.location.child(&member_path(id), Access::Write)?;
        let writer = AtlasWriter::create(location, &self.config).await?;
        self.begun.push(id.to_owned());
        Ok(MemberWriter {
            id: id.to_owned(),
            writer,
        })
    }

    /// Hides `names` in the same commit as `member`'s datasets: a reader
    /// sees the new datasets and these names gone together, or neither. The
    /// member holds an empty copy of each name, which its own deletion mask
    /// hides before the commit; as the newest copy, a hidden one hides every
    /// older copy in the set (the rule by which a delete in a newer member
    /// wins). A name the set does not hold stays absent. Costs one small
    /// dataset per name and, when the member is recorded, one mask write.
    ///
    /// # Errors
    /// [`AtlasError::InvalidName`] for a name that is not valid;
    /// [`AtlasError::DatasetAlreadyExists`] for a name `member` already
    /// holds (a new copy replaces the old one without hiding it);
    /// [`AtlasError::InvalidUse`] for a member this writer did not begin.
    pub async fn hide(&mut self, member: &MemberWriter, names: &[&str]) -> Result<()> {
        if !self.begun.iter().any(|b| b == &member.id) {
            return Err(AtlasError::invalid_use(format!(
                "member {:?} was not begun by this writer",
                member.id
            )));
        }
        for &name in names {
            member.writer.add_dataset(name)?.finish().await?;
            self.hidden
                .entry(member.id.clone())
                .or_default()
                .push(name.to_owned());
        }
        Ok(())
    }

    /// Finishes the member's container, then describes it for the manifest
    /// (counts, per-variable and per-attribute summaries, checksums: one
    /// open of the member, its segment footers, one read of its bytes).
    ///
    /// # Errors
    /// What [`AtlasWriter::finish`] and [`Atlas::open`](crate::Atlas::open) return.
    pub async fn finish_member(&mut self, member: MemberWriter) -> Result<&MemberEntry> {
        let id = member.id.clone();
        member.writer.finish().await?;
        self.record_member(&id).await
    }

    /// Describes member `id`, whose writer (from [`add_member`](Self::add_member),
    /// through [`MemberWriter::into_writer`]) was finished elsewhere, for the
    /// commit. Costs what [`finish_member`](Self::finish_member) does after
    /// the container is written.
    ///
    /// # Errors
    /// [`AtlasError::InvalidUse`] for an id this writer did not begin or
    /// already recorded; what [`Atlas::open`](crate::Atlas::open) returns.
    pub async fn record_member(&mut self, id: &str) -> Result<&MemberEntry> {
        if !self.begun.iter().any(|b| b == id) || self.finished.iter().any(|e| e.id == id) {
            return Err(AtlasError::invalid_use(format!(
                "member {id:?} was not begun by this writer, or is already finished"
            )));
        }
        if let Some(hidden) = self.hidden.get(id) {
            // The member is not committed: its mask is nobody's but ours.
            let location = self.location.child(&member_path(id), Access::Write)?;
            let lone = Member::open_location(location, &OpenOptions::default()).await?;
            let names: Vec<&str> = hidden.iter().map(String::as_str).collect();
            lone.delete_datasets(&names).await?;
        }
        let location = self.location.child(&member_path(id), Access::Read)?;
        let atlas = Member::open_location(location, &OpenOptions::default()).await?;
        let entry = member_entry(&atlas, id, &member_path(id)).await?;
        self.finished.push(entry);
        self.finished
            .last()
            .ok_or_else(|| AtlasError::invalid_use("no member finished"))
    }

    /// Removes member `id`, begun by this writer and not recorded, and
    /// forgets it: for a member that turned out to hold nothing (every file
    /// of an ingest chunk skipped), which no commit should name.
    ///
    /// # Errors
    /// [`AtlasError::InvalidUse`] for an id this writer did not begin or
    /// already recorded; [`AtlasError::Io`] when its objects cannot be removed.
    pub async fn discard_member(&mut self, id: &str) -> Result<()> {
        if !self.begun.iter().any(|b| b == id) || self.finished.iter().any(|e| e.id == id) {
            return Err(AtlasError::invalid_use(format!(
                "member {id:?} was not begun by this writer, or is already recorded"
            )));
        }
        remove_member(&self.location, id).await?;
        self.begun.retain(|b| b != id);
        self.hidden.remove(id);
        Ok(())
    }

    /// Takes member `id`, written under `members/<id>/` by another writer
    /// (another process or machine: one task of a distributed ingest), into
    /// this writer: it is described for the commit as
    /// [`record_member`](Self::record_member) describes a member, and from
    /// then on is committed with the others, or removed by
    /// [`abort`](Self::abort) or a failed commit, as if this writer had begun
    /// it. Costs one open of the member, its segment footers and one read of
    /// its bytes.
    ///
    /// # Errors
    /// [`AtlasError::InvalidName`] for an id that is not a valid name;
    /// [`AtlasError::InvalidUse`] for an id this writer already began or
    /// adopted; [`AtlasError::Member`] naming the member around what
    /// [`Atlas::open`](crate::Atlas::open) returns ([`AtlasError::Io`] of kind `NotFound` when
    /// nothing was written under that id).
    pub async fn adopt_member(&mut self, id: &str) -> Result<&MemberEntry> {
        validate_name(id)?;
        if self.begun.iter().any(|b| b == id) {
            return Err(AtlasError::invalid_use(format!(
                "member {id:?} was already added to or adopted by this writer"
            )));
        }
        let path = member_path(id);
        let location = self
            .location
            .child(&path, Access::Read)
            .map_err(|e| e.in_member(id, &path))?;
        let atlas = Member::open_location(location, &OpenOptions::default())
            .await
            .map_err(|e| e.in_member(id, &path))?;
        let entry = member_entry(&atlas, id, &path)
            .await
            .map_err(|e| e.in_member(id, &path))?;
        self.begun.push(id.to_owned());
        self.finished.push(entry);
        self.finished
            .last()
            .ok_or_else(|| AtlasError::invalid_use("no member finished"))
    }

    /// Starts member `id` afresh: whatever an earlier attempt under the same
    /// id left in `members/<id>/` (part of a container, or a whole one) is
    /// removed, then the member is begun as [`add_member`](Self::add_member)
    /// begins it. For work that may run more than once with an id fixed in
    /// advance (a distributed ingest's task, retried after its worker was
    /// lost): the retry replaces the first attempt, so one copy is left.
    /// Costs one manifest read (an id the manifest names is refused: those
    /// objects are the set's) and one removal.
    ///
    /// # Errors
    /// [`AtlasError::InvalidName`] for an id that is not a valid name;
    /// [`AtlasError::InvalidUse`] for an id the set has committed or this
    /// writer already used; [`AtlasError::SetManifest`] for a damaged
    /// manifest; [`AtlasError::Io`] when the manifest cannot be read or the
    /// earlier attempt removed; what [`add_member`](Self::add_member) returns.
    pub async fn rewrite_member(&mut self, id: &str) -> Result<MemberWriter> {
        validate_name(id)?;
        if self.begun.iter().any(|b| b == id) {
            return Err(AtlasError::invalid_use(format!(
                "member {id:?} was already added to this writer"
            )));
        }
        let manifest_path = self.location.object(SET_MANIFEST_FILE);
        let manifest =
            read_manifest(self.location.operator(), &manifest_path, &self.limits).await?;
        if manifest.is_some_and(|m| m.members.iter().any(|e| e.id == id)) {
            return Err(AtlasError::invalid_use(format!(
                "member {id:?} is committed in the set: it cannot be rewritten"
            )));
        }
        remove_member(&self.location, id).await?;
        self.add_member(id).await
    }

    /// The members finished so far, in commit order.
    pub fn finished(&self) -> &[MemberEntry] {
        &self.finished
    }

    /// Commits every finished member in one manifest update: one manifest
    /// read, one conditional write, one read-back when no other writer got in
    /// between; on a lost race the manifest is read again and the members are
    /// put after the winner's. All or nothing.
    ///
    /// # Errors
    /// [`AtlasError::CommitConflict`] when every attempt lost its race (the
    /// members written are removed; retrying can succeed);
    /// [`AtlasError::InvalidUse`] when nothing was finished or a member id is
    /// already in the set (then nothing is removed: an adopted member may be
    /// one committed before); [`AtlasError::SetManifest`] for a damaged manifest;
    /// [`AtlasError::Io`] (the members are left in place: whether the
    /// manifest was written is unknown; `atlas cleanup` removes them if not).
    /// On a backend whose conditional writes proved not atomic (a write of
    /// ours accepted, then overwritten) the members are left in place too:
    /// another writer may have carried them into its manifest.
    pub async fn commit(self) -> Result<CommitOutcome> {
        self.commit_with(|manifest, new| {
            manifest.members.extend(new.iter().cloned());
            Ok(())
        })
        .await
    }

    /// Commits as [`commit`](Self::commit) does, only while the set is at
    /// `generation` (0 for a set not yet created): for a writer that decided
    /// what to write from that state (a sync with an archive), so that two
    /// of them planned from one state do not both apply. A lost answer to
    /// its own write is recognised as for `commit`.
    ///
    /// # Errors
    /// [`AtlasError::CommitConflict`] when the set has moved on (the members
    /// written are removed; plan again); otherwise as [`commit`](Self::commit).
    pub async fn commit_at_generation(self, generation: u64) -> Result<CommitOutcome> {
        let path = self.location.object(SET_MANIFEST_FILE);
        self.commit_with(|manifest, new| {
            if manifest.generation != generation {
                return Err(AtlasError::CommitConflict {
                    path: path.clone(),
                    generation: manifest.generation,
                    what: format!(
                        "the set is at generation {}, not {generation} as when the change was planned",
                        manifest.generation
                    ),
                });
            }
            manifest.members.extend(new.iter().cloned());
            Ok(())
        })
        .await
    }

    /// Commits the finished members by `place` (which puts them into the
    /// manifest as it is at each attempt, or refuses), checking first that
    /// no id is taken. On a refusal or a lost race the members are removed.
    pub(crate) async fn commit_with<F>(self, place: F) -> Result<CommitOutcome>
    where
        F: FnMut(&mut SetManifest, &[MemberEntry]) -> Result<()>,
    {
        match self.try_commit_with(place).await {
            Ok(outcome) => Ok(outcome),
            Err(failed) => Err(self.give_up(failed).await),
        }
    }

    /// One commit by `place`, as [`commit_with`](Self::commit_with) makes it,
    /// leaving the members in place whatever happens: a caller whose `place`
    /// refused can change the members and try again, or [`give_up`](Self::give_up).
    pub(crate) async fn try_commit_with<F>(
        &self,
        mut place: F,
    ) -> std::result::Result<CommitOutcome, FailedCommit>
    where
        F: FnMut(&mut SetManifest, &[MemberEntry]) -> Result<()>,
    {
        if self.finished.is_empty() {
            return Err(FailedCommit {
                error: AtlasError::invalid_use("no finished member to commit"),
                taken: false,
                was_visible: false,
            });
        }
        let manifest_path = self.location.object(SET_MANIFEST_FILE);
        let ids: HashSet<&str> = self.finished.iter().map(|e| e.id.as_str()).collect();
        let mut was_visible = false;
        let mut taken = false;
        let result = update_manifest_traced(
            self.location.operator(),
            &manifest_path,
            &self.limits,
            |manifest: &mut SetManifest| {
                if let Some(committed) = manifest
                    .members
                    .iter()
                    .find(|m| ids.contains(m.id.as_str()))
                {
                    taken = true;
                    return Err(AtlasError::invalid_use(format!(
                        "member {:?} is already in the set",
                        committed.id
                    )));
                }
                place(manifest, &self.finished)
            },
            // Our members, as we wrote them, are in the manifest: either the
            // write just made, or an earlier attempt whose answer was lost.
            |stored: &SetManifest| {
                self.finished
                    .iter()
                    .all(|ours| stored.members.iter().any(|m| same_member(m, ours)))
            },
            &mut was_visible,
        )
        .await;
        result
            .map(|(_, outcome)| outcome)
            .map_err(|error| FailedCommit {
                error,
                taken,
                was_visible,
            })
    }

    /// After a failed [`try_commit_with`](Self::try_commit_with): removes the
    /// members unless a manifest may name them, and returns the error.
    pub(crate) async fn give_up(self, failed: FailedCommit) -> AtlasError {
        let FailedCommit {
            error,
            taken,
            was_visible,
        } = failed;
        match error {
            // Whether a manifest naming the members was written is unknown.
            e @ AtlasError::Io(_) => e,
            // An id the set already names: those objects are the set's (an
            // adopted member committed before), so nothing is removed.
            e if taken => e,
            e if was_visible => {
                tracing::warn!(
                    "a manifest naming the new members was visible before being overwritten: \
                     they are left in place (`atlas cleanup` removes them if uncommitted)"
                );
                e
            }
            e => {
                self.remove_begun().await;
                e
            }
        }
    }

    /// Hides `names` in the finished (uncommitted) members that hold them
    /// live, and describes those members again: for a compaction whose
    /// source datasets were deleted while it copied them. The number hidden.
    pub(crate) async fn hide_in_finished(&mut self, names: &HashSet<String>) -> Result<usize> {
        let mut hidden = 0usize;
        for entry in &mut self.finished {
            let path = member_path(&entry.id);
            let location = self.location.child(&path, Access::Write)?;
            // Not committed: its mask is nobody's but ours.
            let member = Member::open_location(location, &OpenOptions::default()).await?;
            let held: Vec<&str> = member
                .dataset_names()
                .into_iter()
                .filter(|n| names.contains(*n))
                .collect();
            if held.is_empty() {
                continue;
            }
            hidden = hidden.saturating_add(member.delete_datasets(&held).await?.deleted);
            let location = self.location.child(&path, Access::Read)?;
            let member = Member::open_location(location, &OpenOptions::default()).await?;
            *entry = member_entry(&member, &entry.id, &path).await?;
        }
        Ok(hidden)
    }

    /// Removes every member this writer began, committing nothing.
    ///
    /// # Errors
    /// [`AtlasError::Io`] when a member's objects cannot be removed.
    pub async fn abort(self) -> Result<()> {
        for id in &self.begun {
            remove_member(&self.location, id).await?;
        }
        Ok(())
    }

    async fn remove_begun(&self) {
        for id in &self.begun {
            if let Err(e) = remove_member(&self.location, id).await {
                tracing::warn!(member = %id, "could not remove an uncommitted member: {e}");
            }
        }
    }
}

/// Whether two manifest entries describe the same member objects: what a
/// later commit never changes of an entry (a delete changes its live count
/// and mask checksum, nothing else).
fn same_member(a: &MemberEntry, b: &MemberEntry) -> bool {
    a.id == b.id
        && a.path == b.path
        && a.bytes == b.bytes
        && a.datasets_total == b.datasets_total
        && a.created_unix_ms == b.created_unix_ms
        && a.checksums.footer == b.checksums.footer
        && a.checksums.segments == b.checksums.segments
}

/// Removes the objects of member `id` of the set at `set`.
pub(crate) async fn remove_member(set: &Location, id: &str) -> Result<()> {
    super::uncommitted::remove_member_folder(set, &member_path(id)).await
}
