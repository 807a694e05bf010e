//! What interrupted writes leave behind: temp files of atomic writes on local
//! disk (`.atlas-tmp/` under the collection), listed and removed.
//!
//! A writer killed before its rename leaves its temp file; the collection is
//! unaffected (the container or mask was never replaced), but the space stays
//! used until someone removes it. Nothing else ever reads these files.

use std::time::{Duration, SystemTime};

use futures::TryStreamExt;
use opendal::Operator;

use crate::error::IoError;
use crate::mask_store::ATOMIC_WRITE_DIR;

/// One file an interrupted write left behind.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Leftover {
    /// Its path, relative to the operator's root.
    pub path: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// When it was last written, where the backend says.
    pub modified: Option<SystemTime>,
}

/// The temp files under `prefix`'s atomic-write directory (none where there is none).
pub async fn list_leftovers(op: &Operator, prefix: &str) -> Result<Vec<Leftover>, IoError> {
    let dir = join(prefix, &format!("{ATOMIC_WRITE_DIR}/"));
    let mut lister = match op.lister_with(&dir).recursive(true).await {
        Ok(l) => l,
        Err(e) if e.kind() == opendal::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(IoError::from_opendal(e, "list", &dir)),
    };
    let mut found = Vec::new();
    while let Some(entry) = lister
        .try_next()
        .await
        .map_err(|e| IoError::from_opendal(e, "list", &dir))?
    {
        if entry.metadata().is_dir() {
            continue;
        }
        let meta = match op.stat(entry.path()).await {
            Ok(m) => m,
            // Renamed away by a writer that finished meanwhile.
            Err(e) if e.kind() == opendal::ErrorKind::NotFound => continue,
            Err(e) => return Err(IoError::from_opendal(e, "stat", entry.path())),
        };
        found.push(Leftover {
            path: entry.path().to_owned(),
            bytes: meta.content_length(),
            modified: meta.last_modified().map(SystemTime::from),
        });
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(found)
}

/// Removes the leftovers last written at least `older_than` before `now`
/// (younger ones may belong to a write in progress); returns those removed.
pub async fn remove_leftovers(
    op: &Operator,
    prefix: &str,
    older_than: Duration,
    now: SystemTime,
) -> Result<Vec<Leftover>, IoError> {
    let mut removed = Vec::new();
    for leftover in list_leftovers(op, prefix).await? {
        let old_enough = leftover
            .modified
            .is_some_and(|m| now.duration_since(m).is_ok_and(|age| age >= older_than));
        if !old_enough {
            continue;
        }
        op.delete(&leftover.path)
            .await
            .map_err(|e| IoError::from_opendal(e, "delete", &leftover.path))?;
        removed.push(leftover);
    }
    Ok(removed)
}

fn join(prefix: &str, name: &str) -> String {
    let prefix = prefix.trim_matches('/');
    if prefix.is_empty() {
        name.to_owned()
    } else {
        format!("{prefix}/{name}")
    }
}
