//! Whole-object writes of small sidecars (the deletion mask): atomic, and conditional where possible.
//!
//! Transport only: the bytes are produced and parsed elsewhere.
//!
//! # Atomicity, per service (OpenDAL 0.59.5)
//!
//! - `s3`, `gcs`, `azblob`: one PUT (or a completed multipart upload) is
//!   atomic; readers see the old or the new object, never a mix.
//! - `memory`: the writer buffers until close, then swaps the value: atomic.
//! - `fs`: a plain fs writer truncates the target and writes in place, so a
//!   reader (or a crash) can see it half-written. With `atomic_write_dir` set
//!   ([`fs_operator`] sets `<root>/.atlas-tmp`) OpenDAL writes a temp file there
//!   and renames it over the target on close. [`put_atomic`] does not rely on
//!   that: on fs it always writes `<root>/.atlas-tmp/put-…` itself and renames
//!   it over the target, so collections opened with a plain fs operator get the
//!   same guarantee (at the cost of one rename call). A crash can leave a temp
//!   file in `.atlas-tmp`, never a torn target.
//!
//! # Conditional writes, per service (capabilities as OpenDAL 0.59.5 reports them)
//!
//! | service | if-match (ETag) | if-version-match | if-not-exists | ETag on read |
//! |---------|-----------------|------------------|---------------|--------------|
//! | s3      | yes             | no               | yes           | yes          |
//! | azblob  | yes             | no               | yes           | yes          |
//! | gcs     | no              | yes (generation) | yes           | generation as version |
//! | memory  | no              | no               | yes (atomic)  | no           |
//! | fs      | no              | no               | claimed, not atomic with `atomic_write_dir` (exists-check then rename) | no |
//!
//! So on memory only the *creation* of the mask is conditional; updating an
//! existing one is last-writer-wins. On fs every write is last-writer-wins:
//! [`update_conditionally`] reports [`WriteGuarantee::LastWriterWins`] rather
//! than claim a guarantee the backend does not give.

use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use opendal::Operator;

use crate::error::{IoError, IoErrorKind};
use crate::read::{Snapshot, read_optional};

/// Directory, relative to an fs root, for temp files of atomic writes.
pub const ATOMIC_WRITE_DIR: &str = ".atlas-tmp";

/// An fs operator rooted at `root` whose writes go through `<root>/.atlas-tmp`
/// and a rename, so no write through it is ever visible half-done.
///
/// Both directories are created if missing.
pub fn fs_operator(root: impl AsRef<std::path::Path>) -> Result<Operator, IoError> {
    let root = root.as_ref();
    let root_s = root.to_string_lossy();
    let tmp = root.join(ATOMIC_WRITE_DIR);
    let builder = opendal::services::Fs::default()
        .root(&root_s)
        .atomic_write_dir(&tmp.to_string_lossy());
    Operator::new(builder).map_err(|e| IoError::from_opendal(e, "open", &root_s))
}

fn is_fs(op: &Operator) -> bool {
    op.info().scheme() == "fs"
}

/// Writes `bytes` as the whole object at `path`, never visible half-written.
///
/// One PUT on object stores and memory; on fs a temp file plus a rename (see
/// the module docs). On failure the previous object, if any, is untouched.
pub async fn put_atomic(op: &Operator, path: &str, bytes: Bytes) -> Result<(), IoError> {
    put_atomic_counted(op, path, bytes).await.map(|_| ())
}

/// [`put_atomic`], returning the number of requests it made.
async fn put_atomic_counted(op: &Operator, path: &str, bytes: Bytes) -> Result<u32, IoError> {
    if !is_fs(op) {
        write_whole(op, path, bytes, Condition::None).await?;
        return Ok(1);
    }
    let tmp = temp_path();
    if let Err(e) = write_whole(op, &tmp, bytes, Condition::None).await {
        let _ = op.delete(&tmp).await;
        return Err(e);
    }
    if let Err(e) = op.rename(&tmp, path).await {
        let _ = op.delete(&tmp).await;
        return Err(IoError::from_opendal(e, "rename", path));
    }
    Ok(2)
}

fn temp_path() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!("{ATOMIC_WRITE_DIR}/put-{}-{nanos}-{n}", std::process::id())
}

#[derive(Debug, Clone)]
enum Condition {
    None,
    IfMatch(String),
    IfVersionMatch(String),
    IfNotExists,
}

/// One writer: write all, close; abort on failure so nothing partial is committed.
async fn write_whole(
    op: &Operator,
    path: &str,
    bytes: Bytes,
    condition: Condition,
) -> Result<(), IoError> {
    let w = op.writer_with(path);
    let w = match &condition {
        Condition::None => w,
        Condition::IfMatch(etag) => w.if_match(etag),
        Condition::IfVersionMatch(v) => w.if_version_match(v),
        Condition::IfNotExists => w.if_not_exists(true),
    };
    let mut writer = w
        .await
        .map_err(|e| IoError::from_opendal(e, "write", path))?;
    if let Err(e) = writer.write(bytes).await {
        let _ = writer.abort().await;
        return Err(IoError::from_opendal(e, "write", path));
    }
    if let Err(e) = writer.close().await {
        let _ = writer.abort().await;
        return Err(IoError::from_opendal(e, "write", path));
    }
    Ok(())
}

/// Which guarantee protected a write against concurrent writers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteGuarantee {
    /// The write only succeeded if the object was still what we read
    /// (if-match / if-version-match) or still absent (if-not-exists).
    Conditional,
    /// The backend offers no usable condition: a concurrent writer's change
    /// made between our read and our write is overwritten.
    LastWriterWins,
}

/// The result of [`update_conditionally`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpdateOutcome {
    /// The guarantee that applied to the final write (or would have, if nothing was written).
    pub guarantee: WriteGuarantee,
    /// Read-compute-write rounds, 1 if no race was lost.
    pub attempts: u32,
    /// Requests made: one GET per attempt plus one PUT per write (two calls on fs: write + rename).
    pub requests: u32,
    /// False if the update function returned `None` (nothing to write).
    pub written: bool,
}

/// Why [`update_conditionally`] gave up.
#[derive(Debug, thiserror::Error)]
pub enum UpdateError<E> {
    /// A read or write failed for a reason other than a lost race.
    #[error(transparent)]
    Io(IoError),
    /// The update function refused the current content.
    #[error("update function failed")]
    Compute(E),
    /// Every attempt lost its race to a concurrent writer.
    #[error("gave up after {attempts} attempts: every conditional write lost a race")]
    Contended {
        /// Attempts made.
        attempts: u32,
        /// The last lost-race error.
        last: IoError,
    },
}

fn choose_condition(op: &Operator, snapshot: Option<&Snapshot>) -> Condition {
    if is_fs(op) {
        return Condition::None;
    }
    let cap = op.info().capability();
    match snapshot {
        Some(s) => {
            if cap.write_with_if_match
                && let Some(etag) = &s.etag
            {
                Condition::IfMatch(etag.clone())
            } else if cap.write_with_if_version_match
                && let Some(v) = &s.version
            {
                Condition::IfVersionMatch(v.clone())
            } else {
                Condition::None
            }
        }
        None if cap.write_with_if_not_exists => Condition::IfNotExists,
        None => Condition::None,
    }
}

/// How long to wait before retry `attempt` after a lost race: exponential from
/// 5 ms, capped at 500 ms, with jitter so that contenders do not retry in step.
fn backoff(attempt: u32) -> std::time::Duration {
    let base_ms = 5u64.saturating_mul(1u64 << attempt.min(7)).min(500);
    // Jitter from the clock's nanoseconds: no need for a random number generator.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::from(d.subsec_nanos()));
    let jitter_ms = nanos % base_ms.max(1);
    std::time::Duration::from_millis(base_ms / 2 + jitter_ms)
}

/// Read-modify-write of `path` that does not lose a concurrent change where the backend can prevent it.
///
/// Reads the object (or its absence), calls `f` with its bytes to compute the
/// new content (`None` = nothing to write), then writes with if-match on the
/// ETag read (if-version-match on GCS), or if-not-exists when it was absent.
/// On a lost race it re-reads and retries, up to `max_retries` more times.
/// Where the backend has no usable condition the write is unconditional (and
/// atomic, via [`put_atomic`]); the outcome reports which guarantee applied.
/// No race lost: 1 GET + 1 PUT.
pub async fn update_conditionally<E, F>(
    op: &Operator,
    path: &str,
    max_retries: u32,
    mut f: F,
) -> Result<UpdateOutcome, UpdateError<E>>
where
    F: FnMut(Option<&[u8]>) -> Result<Option<Bytes>, E>,
{
    let mut requests: u32 = 0;
    let mut attempts: u32 = 0;
    let mut last = None;
    for attempt in 1..=max_retries.saturating_add(1) {
        attempts = attempt;
        let snapshot = read_optional(op, path).await.map_err(UpdateError::Io)?;
        requests = requests.saturating_add(1);
        let condition = choose_condition(op, snapshot.as_ref());
        let guarantee = match condition {
            Condition::None => WriteGuarantee::LastWriterWins,
            _ => WriteGuarantee::Conditional,
        };
        let next = f(snapshot.as_ref().map(|s| &s.bytes[..])).map_err(UpdateError::Compute)?;
        let Some(bytes) = next else {
            return Ok(UpdateOutcome {
                guarantee,
                attempts,
                requests,
                written: false,
            });
        };
        if let Condition::None = condition {
            tracing::debug!(
                path,
                scheme = op.info().scheme(),
                "unconditional mask write"
            );
            let n = put_atomic_counted(op, path, bytes)
                .await
                .map_err(UpdateError::Io)?;
            return Ok(UpdateOutcome {
                guarantee,
                attempts,
                requests: requests.saturating_add(n),
                written: true,
            });
        }
        requests = requests.saturating_add(1);
        match write_whole(op, path, bytes, condition).await {
            Ok(()) => {
                return Ok(UpdateOutcome {
                    guarantee,
                    attempts,
                    requests,
                    written: true,
                });
            }
            Err(e) if e.kind() == IoErrorKind::ConditionNotMet => {
                tracing::debug!(
                    path,
                    attempts,
                    "conditional mask write lost a race; retrying"
                );
                last = Some(e);
                if attempt <= max_retries {
                    tokio::time::sleep(backoff(attempt)).await;
                }
            }
            Err(e) => return Err(UpdateError::Io(e)),
        }
    }
    Err(UpdateError::Contended {
        attempts,
        last: last.unwrap_or_else(|| {
            IoError::new(
                IoErrorKind::ConditionNotMet,
                "write",
                path,
                "no attempt was made",
            )
        }),
    })
}
