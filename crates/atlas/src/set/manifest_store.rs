//! The manifest on storage: read it, and replace it by a checked conditional
//! write (the commit). The bytes are `atlas_format::SetManifest`'s.

use atlas_format::{DecodeLimits, SetManifest};
use atlas_io::{UpdateError, WriteGuarantee, read_optional, update_checked};
use bytes::Bytes;
use opendal::Operator;

use crate::error::{AtlasError, Result};

/// Commits that lose a race are retried this many more times (with backoff).
const MAX_RETRIES: u32 = 12;

/// What a commit to a set did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct CommitOutcome {
    /// The generation of the manifest this commit wrote.
    pub generation: u64,
    /// Read-change-write rounds; 1 when no other writer got in between.
    pub attempts: u32,
    /// Requests the commit made (manifest reads, writes and read-backs).
    pub requests: u32,
    /// What protected the commit against concurrent writers.
    pub guarantee: WriteGuarantee,
    /// The backend accepted a conditional write that another writer then
    /// overwrote: its conditions are not atomic. The commit was redone.
    pub lost_conditional_write: bool,
}

/// The manifest at `path`, or `None` if there is none.
pub(crate) async fn read_manifest(
    op: &Operator,
    path: &str,
    limits: &DecodeLimits,
) -> Result<Option<SetManifest>> {
    match read_optional(op, path).await? {
        None => Ok(None),
        Some(snapshot) => decode(&snapshot.bytes, path, limits).map(Some),
    }
}

fn decode(bytes: &[u8], path: &str, limits: &DecodeLimits) -> Result<SetManifest> {
    SetManifest::decode(bytes, limits).map_err(|source| AtlasError::SetManifest {
        path: path.to_owned(),
        source,
    })
}

/// Replaces the manifest at `path` with `change` applied to the current one
/// (an empty set when there is none), generation + 1, by a conditional
/// write that is read back and shown to `holds`.
///
/// `change` runs once per attempt on the manifest as it is then, so a commit
/// that lost a race is merged with the winner's. It may refuse (its error is
/// returned, nothing written). A manifest that already `holds` the change is
/// not written again and is the outcome: an earlier attempt of this commit
/// landed and its answer was lost (a retried conditional write then fails
/// against its own write), so the commit is done, not in conflict.
///
/// # Errors
/// [`AtlasError::CommitConflict`] when every attempt lost its race;
/// [`AtlasError::SetManifest`] for a manifest on storage that is not one;
/// what `change` returns; [`AtlasError::Io`].
pub(crate) async fn update_manifest<F, H>(
    op: &Operator,
    path: &str,
    limits: &DecodeLimits,
    mut change: F,
    holds: H,
) -> Result<(SetManifest, CommitOutcome)>
where
    F: FnMut(&mut SetManifest) -> Result<()>,
    H: Fn(&SetManifest) -> bool + Send + Sync,
{
    update_manifest_traced(op, path, limits, &mut change, holds, &mut false).await
}

/// [`update_manifest`], setting `was_visible` when a write of ours was
/// accepted and then found overwritten (a backend whose conditions are not
/// atomic): another writer may have merged our change into theirs, so what
/// the change refers to must not be removed even if the commit then fails.
pub(crate) async fn update_manifest_traced<F, H>(
    op: &Operator,
    path: &str,
    limits: &DecodeLimits,
    mut change: F,
    holds: H,
    was_visible: &mut bool,
) -> Result<(SetManifest, CommitOutcome)>
where
    F: FnMut(&mut SetManifest) -> Result<()>,
    H: Fn(&SetManifest) -> bool + Send + Sync,
{
    let mut written: Option<SetManifest> = None;
    let mut last_generation = 0;
    let compute = |existing: Option<&[u8]>| -> Result<Option<Bytes>> {
        let mut manifest = match existing {
            None => SetManifest::new(),
            Some(bytes) => decode(bytes, path, limits)?,
        };
        last_generation = manifest.generation;
        if holds(&manifest) {
            // Already there: an earlier attempt of this commit landed and its
            // answer was lost (or there is nothing to change). Writing again
            // would commit twice or, refused, report a false conflict.
            written = Some(manifest);
            return Ok(None);
        }
        change(&mut manifest)?;
        manifest.generation = manifest.generation.saturating_add(1);
        let bytes = manifest
            .encode()
            .map_err(|source| AtlasError::SetManifest {
                path: path.to_owned(),
                source,
            })?;
        written = Some(manifest);
        Ok(Some(Bytes::from(bytes)))
    };
    let seen = std::sync::atomic::AtomicBool::new(false);
    let check = |stored: &[u8]| {
        let ok = decode(stored, path, limits).is_ok_and(|m| holds(&m));
        if !ok {
            seen.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        ok
    };
    let result = update_checked(op, path, MAX_RETRIES, compute, check).await;
    *was_visible = seen.load(std::sync::atomic::Ordering::Relaxed);
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(UpdateError::Io(io)) => return Err(AtlasError::Io(io)),
        Err(UpdateError::Compute(e)) => return Err(e),
        Err(UpdateError::Contended { attempts, .. }) => {
            return Err(AtlasError::CommitConflict {
                path: path.to_owned(),
                generation: last_generation,
                what: format!("{attempts} attempts, each overtaken by another writer"),
            });
        }
        Err(other) => return Err(AtlasError::invalid_use(other.to_string())),
    };
    let manifest = written.ok_or_else(|| AtlasError::invalid_use("the commit wrote nothing"))?;
    if outcome.lost_conditional_write {
        tracing::warn!(
            manifest = path,
            "the backend's conditional writes are not atomic: a commit was overwritten and redone"
        );
    }
    Ok((
        manifest.clone(),
        CommitOutcome {
            generation: manifest.generation,
            attempts: outcome.attempts,
            requests: outcome.requests,
            guarantee: outcome.guarantee,
            lost_conditional_write: outcome.lost_conditional_write,
        },
    ))
}
