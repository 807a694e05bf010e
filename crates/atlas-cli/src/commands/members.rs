//! The members of a set as storage holds them, beside what the manifest says:
//! folders under `members/` that no commit names (a writer that crashed, or
//! lost its commit) are found here for `verify` and removed by `cleanup`.
//! Also the member ids `create` gives, and `--older-than`'s durations.

use std::collections::HashSet;
use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use atlas::{AtlasError, AtlasSet, IoError, IoErrorKind, Location};
use futures::TryStreamExt;

use crate::exit::{CliError, CliResult, Context as _};

/// A folder under `members/` that the manifest does not name.
#[derive(Debug, Clone)]
pub struct Uncommitted {
    /// Its path relative to the set (`members/<id>`).
    pub path: String,
    /// Objects in it.
    pub objects: usize,
    /// Their total size.
    pub bytes: u64,
    /// When its newest object was last written, where the backend says.
    pub newest: Option<SystemTime>,
}

impl Uncommitted {
    /// Whether its newest object is at least `older_than` old at `now` (one
    /// without a time, or with nothing in it, counts as old: nothing is being
    /// written to it).
    pub fn is_older_than(&self, older_than: Duration, now: SystemTime) -> bool {
        self.newest
            .is_none_or(|t| now.duration_since(t).is_ok_and(|age| age >= older_than))
    }
}

impl std::fmt::Display for Uncommitted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({} objects, {} bytes)",
            self.path, self.objects, self.bytes
        )
    }
}

/// The committed member paths at `loc` (none where there is no manifest),
/// or an error when the manifest exists but cannot be read: then nothing
/// under `members/` may be taken for uncommitted.
pub async fn committed_paths(loc: &Location) -> CliResult<HashSet<String>> {
    match AtlasSet::open(loc, &atlas::OpenOptions::default()).await {
        Ok(set) => Ok(set.members().into_iter().map(|m| m.path).collect()),
        // No manifest (an absent one is not an error), and no collection
        // either: nothing is committed.
        Err(AtlasError::Io(io)) if io.kind() == IoErrorKind::NotFound => Ok(HashSet::new()),
        // Storage failed (on the manifest or on a collection: unknown which),
        // or the manifest is damaged: nothing is known.
        Err(e @ (AtlasError::Io(_) | AtlasError::SetManifest { .. })) => Err(e).at(&format!(
            "{}: cannot tell which members are committed",
            loc.display()
        )),
        // Anything else comes from opening a lone collection, after the
        // manifest was found absent: nothing is committed.
        Err(e) if !e.is_retryable() => Ok(HashSet::new()),
        Err(e) => Err(e).at(&format!(
            "{}: cannot tell which members are committed",
            loc.display()
        )),
    }
}

/// The folders under `members/` at `loc` whose path is not in `committed`,
/// by path. Cost: one recursive listing of `members/`, and a stat per object
/// whose listing gave no size or time.
pub async fn uncommitted(
    loc: &Location,
    committed: &HashSet<String>,
) -> CliResult<Vec<Uncommitted>> {
    list_uncommitted(loc, committed)
        .await
        .map_err(AtlasError::Io)
        .at(loc.display())
}

async fn list_uncommitted(
    loc: &Location,
    committed: &HashSet<String>,
) -> Result<Vec<Uncommitted>, IoError> {
    let members_dir = atlas::member_path("");
    let dir = loc.object(&members_dir);
    let op = loc.operator();
    let mut lister = match op.lister_with(&dir).recursive(true).await {
        Ok(l) => l,
        Err(e)
            if matches!(
                e.kind(),
                opendal::ErrorKind::NotFound | opendal::ErrorKind::Unsupported
            ) =>
        {
            return Ok(Vec::new());
        }
        Err(e) => return Err(IoError::from_opendal(e, "list", &dir)),
    };
    let mut found: Vec<Uncommitted> = Vec::new();
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
        if committed.contains(&path) {
            continue;
        }
        let index = match found.iter().position(|u| u.path == path) {
            Some(i) => i,
            None => {
                found.push(Uncommitted {
                    path,
                    objects: 0,
                    bytes: 0,
                    newest: None,
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

/// Removes an uncommitted member's folder and everything in it.
pub async fn remove(loc: &Location, member: &Uncommitted) -> CliResult {
    if let Some(dir) = loc.local_dir() {
        let dir = dir.join(&member.path);
        return match std::fs::remove_dir_all(&dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(CliError::msg(format!(
                "{}: cannot remove {}: {e}",
                loc.display(),
                dir.display()
            ))),
            _ => Ok(()),
        };
    }
    let prefix = format!("{}/", loc.object(&member.path));
    loc.operator()
        .delete_with(&prefix)
        .recursive(true)
        .await
        .at(loc.display())
}

/// A new member id: the time now and a random nonce (`atlas::member_id`).
/// Time and randomness are taken here, at the command line's edge.
pub fn new_member_id(index: usize) -> String {
    let (unix_ms, nonce) = id_seed(index);
    atlas::member_id(unix_ms, nonce)
}

/// The time (ms since the epoch) and a random number member ids are made of:
/// the one place the CLI takes them (the library is handed both).
pub fn id_seed(index: usize) -> (i64, u64) {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(now.as_nanos());
    hasher.write_u32(std::process::id());
    hasher.write_usize(index);
    let unix_ms = i64::try_from(now.as_millis()).unwrap_or(i64::MAX);
    (unix_ms, hasher.finish())
}

/// `--older-than`: a number of minutes (`60`), or a number with a unit:
/// `s`, `m`, `h`, `d` (`0s`, `90s`, `2h`).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{text:?}: expected minutes, or a number with s, m, h or d"))?;
    let seconds_per: u64 = match unit.trim() {
        "" | "m" | "min" => 60,
        "s" => 1,
        "h" => 3600,
        "d" => 86_400,
        other => return Err(format!("{text:?}: unknown unit {other:?} (s, m, h or d)")),
    };
    n.checked_mul(seconds_per)
        .map(Duration::from_secs)
        .ok_or_else(|| format!("{text:?}: out of range"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_number_of_minutes_and_units_are_durations() {
        assert_eq!(parse_duration("60"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(parse_duration("1d"), Ok(Duration::from_secs(86_400)));
        assert!(parse_duration("5w").unwrap_err().contains("unknown unit"));
        assert!(parse_duration("soon").unwrap_err().contains("expected"));
    }

    #[test]
    fn two_member_ids_taken_at_once_differ() {
        assert_ne!(new_member_id(0), new_member_id(0));
    }

    #[test]
    fn a_member_still_being_written_is_not_old() {
        let now = SystemTime::now();
        let fresh = Uncommitted {
            path: "members/x".into(),
            objects: 1,
            bytes: 1,
            newest: Some(now),
        };
        assert!(!fresh.is_older_than(Duration::from_secs(60), now));
        assert!(fresh.is_older_than(Duration::ZERO, now));
    }
}
