//! Members that storage holds but no commit names: folders under `members/`
//! left by a writer that crashed, was dropped, or lost its commit, and
//! members a compaction replaced (marked retired), which handles opened at
//! an older generation may still read. New readers never see either; this
//! finds them (for `verify`) and removes them (for `cleanup`, and for a
//! distributed ingest that gives up).

use std::collections::HashSet;
use std::time::{Duration, SystemTime};

use futures::TryStreamExt;

use super::reader::Atlas;
use super::writer::member_path;
use crate::error::{AtlasError, Result};
use crate::location::Location;
use crate::{IoError, IoErrorKind, OpenOptions};

/// The object a compaction writes into each member it replaces, before its
/// commit: the member is retired, kept for older readers until the retention ends.
pub(crate) const RETIRED_MARK: &str = "retired";

/// How long `cleanup` keeps a retired member by default: a handle opened
/// before the compaction that replaced it reads it until then (7 days).
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);

/// A folder under a set's `members/` that its manifest does not name.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct UncommittedMember {
    /// Its path relative to the set (`members/<id>`).
    pub path: String,
    /// Objects in it.
    pub objects: usize,
    /// Their total size.
    pub bytes: u64,
    /// When its newest object was last written, where the backend says.
    pub newest: Option<SystemTime>,
    /// When a compaction marked it retired (it was committed until that
    /// compaction's commit); `None` for the leftover of a failed write.
    pub retired: Option<SystemTime>,
}

impl UncommittedMember {
    /// Whether its newest object is at least `older_than` old at `now`. One
    /// without a time, or with nothing in it, counts as old: nothing is
    /// being written to it. A younger one may belong to a write in progress.
    pub fn is_older_than(&self, older_than: Duration, now: SystemTime) -> bool {
        self.newest
            .is_none_or(|t| now.duration_since(t).is_ok_and(|age| age >= older_than))
    }
}

impl UncommittedMember {
    /// Whether `cleanup` may remove it at `now`: a retired member once its
    /// mark is at least `retention` old, any other once it [`is_older_than`](Self::is_older_than)
    /// `older_than` (it is no write in progress).
    pub fn is_removable(&self, older_than: Duration, retention: Duration, now: SystemTime) -> bool {
        match self.retired {
            Some(marked) => now.duration_since(marked).is_ok_and(|age| age >= retention),
            None => self.is_older_than(older_than, now),
        }
    }
}

impl std::fmt::Display for UncommittedMember {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({} objects, {} bytes)",
            self.path, self.objects, self.bytes
        )
    }
}

/// The member folders at `location` that no commit names, by path.
///
/// The folders are listed before the manifest is read, so a member committed
/// in between counts as committed, never the other way round. Cost: one
/// recursive listing of `members/` (a stat per object whose listing gave no
/// size or time), then, only if a folder was found, one manifest read.
///
/// # Errors
/// Storage failures of the listing or of the manifest read, and a manifest
/// that exists but cannot be decoded: then nothing may be taken for
/// uncommitted.
pub async fn uncommitted_members(location: &Location) -> Result<Vec<UncommittedMember>> {
    let all = list_member_folders(location).await?;
    if all.is_empty() {
        return Ok(all);
    }
    let committed = committed_paths(location).await?;
    Ok(all
        .into_iter()
        .filter(|m| !committed.contains(&m.path))
        .collect())
}

/// Removes an uncommitted member's folder and everything in it (nothing
/// if it is already gone).
///
/// The caller decides it is uncommitted and old enough
/// ([`uncommitted_members`], [`UncommittedMember::is_older_than`]).
///
/// # Errors
/// Storage failures of the removal.
pub async fn remove_uncommitted_member(
    location: &Location,
    member: &UncommittedMember,
) -> Result<()> {
    remove_member_folder(location, &member.path).await
}

/// Removes the folder `path` (`members/<id>`) of the set at `location` and
/// everything in it; nothing if it is already gone.
pub(crate) async fn remove_member_folder(location: &Location, path: &str) -> Result<()> {
    if let Some(dir) = location.local_dir() {
        let dir = dir.join(path);
        return match std::fs::remove_dir_all(&dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(AtlasError::Io(IoError::new(
                    IoErrorKind::Other,
                    "delete",
                    dir.display().to_string(),
                    e.to_string(),
                )))
            }
            _ => Ok(()),
        };
    }
    let prefix = format!("{}/", location.object(path));
    location
        .operator()
        .delete_with(&prefix)
        .recursive(true)
        .await
        .map_err(|e| AtlasError::Io(IoError::from_opendal(e, "delete", &prefix)))
}

/// The committed member paths at `location` (none where there is no
/// manifest).
async fn committed_paths(location: &Location) -> Result<HashSet<String>> {
    match Atlas::open(location, &OpenOptions::default()).await {
        Ok(set) => Ok(set.members().into_iter().map(|m| m.path).collect()),
        // No manifest and no collection: nothing is committed.
        Err(AtlasError::Io(io)) if io.kind() == IoErrorKind::NotFound => Ok(HashSet::new()),
        // Storage failed (on the manifest or on a collection: unknown which),
        // or the manifest is damaged: nothing is known.
        Err(e @ (AtlasError::Io(_) | AtlasError::SetManifest { .. })) => Err(e),
        // Anything else comes from opening a lone collection, after the
        // manifest was found absent: nothing is committed.
        Err(e) if !e.is_retryable() => Ok(HashSet::new()),
        Err(e) => Err(e),
    }
}

/// Every folder under `members/`, committed or not, with its objects counted.
async fn list_member_folders(location: &Location) -> Result<Vec<UncommittedMember>> {
    list(location).await.map_err(AtlasError::Io)
}

async fn list(location: &Location) -> std::result::Result<Vec<UncommittedMember>, IoError> {
    let members_dir = member_path("");
    let dir = location.object(&members_dir);
    let op = location.operator();
    let Some(mut lister) = atlas_io::list_recursive(op, &dir).await? else {
        return Ok(Vec::new());
    };
    let mut found: Vec<UncommittedMember> = Vec::new();
    while let Some(entry) = lister
        .try_next()
        .await
        .map_err(|e| IoError::from_opendal(e, "list", &dir))?
    {
        let Some(rest) = entry.path().strip_prefix(&dir) else {
            continue;
        };
        let Some(id) = rest.split('/').next().filter(|id| !id.is_empty()) else {
            continue;
        };
        let path = format!("{members_dir}{id}");
        let index = match found.iter().position(|u| u.path == path) {
            Some(i) => i,
            None => {
                found.push(UncommittedMember {
                    path,
                    objects: 0,
                    bytes: 0,
                    newest: None,
                    retired: None,
                });
                found.len().saturating_sub(1)
            }
        };
        if entry.metadata().is_dir() {
            continue;
        }
        let listed = entry.metadata();
        let (bytes, modified) = match listed.last_modified() {
            Some(t) => (listed.content_length(), Some(SystemTime::from(t))),
            None => match op.stat(entry.path()).await {
                Ok(m) => (m.content_length(), m.last_modified().map(SystemTime::from)),
                // Renamed or removed by a writer meanwhile.
                Err(e) if e.kind() == opendal::ErrorKind::NotFound => continue,
                Err(e) => return Err(IoError::from_opendal(e, "stat", entry.path())),
            },
        };
        if let Some(u) = found.get_mut(index) {
            if rest.strip_prefix(id).and_then(|r| r.strip_prefix('/')) == Some(RETIRED_MARK) {
                // A mark whose time the backend does not give counts as old.
                u.retired = Some(modified.unwrap_or(SystemTime::UNIX_EPOCH));
            }
            u.objects = u.objects.saturating_add(1);
            u.bytes = u.bytes.saturating_add(bytes);
            u.newest = match (u.newest, modified) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            };
        }
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_still_being_written_is_not_old() {
        let now = SystemTime::now();
        let fresh = UncommittedMember {
            path: "members/x".into(),
            objects: 1,
            bytes: 1,
            newest: Some(now),
            retired: None,
        };
        assert!(!fresh.is_older_than(Duration::from_secs(60), now));
        assert!(fresh.is_older_than(Duration::ZERO, now));
    }

    #[test]
    fn a_retired_member_is_kept_for_the_retention_not_for_older_than() {
        let now = SystemTime::now();
        let hour = Duration::from_secs(3600);
        let retired = UncommittedMember {
            path: "members/x".into(),
            objects: 3,
            bytes: 10,
            // Written long ago, replaced an hour ago.
            newest: now.checked_sub(hour),
            retired: now.checked_sub(hour),
        };
        assert!(retired.is_older_than(Duration::ZERO, now));
        assert!(!retired.is_removable(Duration::ZERO, DEFAULT_RETENTION, now));
        assert!(retired.is_removable(Duration::ZERO, hour, now));
        let leftover = UncommittedMember {
            retired: None,
            ..retired
        };
        assert!(leftover.is_removable(hour, DEFAULT_RETENTION, now));
        assert!(!leftover.is_removable(hour * 2, DEFAULT_RETENTION, now));
    }
}
