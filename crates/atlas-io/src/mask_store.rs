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
//! existing one is last-writer-wins, and [`update_conditionally`] reports
//! [`WriteGuarantee::LastWriterWins`] rather than claim a guarantee the
//! backend does not give. On fs the read-modify-write holds an exclusive lock
//! file beside the object ([`WriteGuarantee::Locked`]): processes on one
//! machine take turns, so none loses another's change.

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

/// Removes `<root>/.atlas-tmp` if it is empty, so a finished write leaves no
/// trace of its temp files. A directory still holding a file (another
/// writer's) stays; any failure is ignored, since the directory is harmless.
pub fn remove_empty_atomic_write_dir(root: impl AsRef<std::path::Path>) {
    let _ = std::fs::remove_dir(root.as_ref().join(ATOMIC_WRITE_DIR));
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
#[non_exhaustive]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub enum WriteGuarantee {
    /// The write only succeeded if the object was still what we read
    /// (if-match / if-version-match) or still absent (if-not-exists), and
    /// reading it back showed our change.
    Conditional,
    /// Local disk: an exclusive lock on a lock file beside the object was held
    /// from the read to the write, so writers on this machine take turns.
    Locked,
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
    /// A conditional write that the backend accepted did not hold: reading
    /// the object back showed a concurrent writer's content without ours, so
    /// the backend's conditional writes are not atomic (the change was merged
    /// and written again).
    pub lost_conditional_write: bool,
}

/// Why [`update_conditionally`] gave up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
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

/// The waits between rounds after a lost race: exponential from 5 ms up to
/// 500 ms, jittered so that contenders do not retry in step. The same backoff
/// (backon's) that OpenDAL's retry layer uses for temporary failures.
fn lost_race_backoff(max_retries: u32) -> impl Iterator<Item = std::time::Duration> {
    crate::RetryPolicy::default()
        .backoff(
            std::time::Duration::from_millis(5),
            std::time::Duration::from_millis(500),
        )
        .max_retries(usize::try_from(max_retries).unwrap_or(usize::MAX))
        .delays()
}

/// The lock file that serializes read-modify-writes of `path` on local disk.
pub const LOCK_SUFFIX: &str = ".lock";

/// An exclusive lock on `<fs root>/<path>.lock`, held until dropped: local
/// read-modify-writes from any process on this machine take turns.
struct LocalLock {
    _file: std::fs::File,
}

impl LocalLock {
    async fn acquire(op: &Operator, path: &str) -> Result<LocalLock, IoError> {
        let lock_path =
            std::path::Path::new(&op.info().root()).join(format!("{path}{LOCK_SUFFIX}"));
        let shown = lock_path.to_string_lossy().into_owned();
        let io = move |e: std::io::Error| {
            IoError::new(IoErrorKind::Other, "lock", &shown, e.to_string())
        };
        let file = tokio::task::spawn_blocking(move || {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&lock_path)?;
            file.lock()?;
            Ok::<_, std::io::Error>(file)
        })
        .await
        .map_err(|e| std::io::Error::other(e.to_string()))
        .and_then(|r| r)
        .map_err(io)?;
        Ok(LocalLock { _file: file })
    }
}

/// Read-modify-write of `path` that does not lose a concurrent change where the backend can prevent it.
///
/// [`update_checked`] without the read-back: it trusts the backend's
/// conditional writes. No race lost: 1 GET + 1 PUT.
pub async fn update_conditionally<E, F>(
    op: &Operator,
    path: &str,
    max_retries: u32,
    f: F,
) -> Result<UpdateOutcome, UpdateError<E>>
where
    F: FnMut(Option<&[u8]>) -> Result<Option<Bytes>, E>,
{
    update(op, path, max_retries, f, None).await
}

/// Read-modify-write of `path` that does not lose a concurrent change where the backend can prevent it.
///
/// Reads the object (or its absence), calls `f` with its bytes to compute the
/// new content (`None` = nothing to write), then writes with if-match on the
/// ETag read (if-version-match on GCS), or if-not-exists when it was absent.
/// On a lost race it re-reads and retries, up to `max_retries` more times,
/// after a jittered exponential backoff.
///
/// A conditional write the backend accepted is then read back once and shown
/// to `holds`: if our change is not in what is stored, the backend's
/// conditions are not atomic; the round counts as lost, the change is merged
/// into what is there and written again, and the outcome says so.
///
/// On local disk an exclusive lock file (`<path>.lock`) is held from the read
/// to the (atomic) write: [`WriteGuarantee::Locked`]. Where the backend has no
/// usable condition the write is unconditional (and atomic, via
/// [`put_atomic`]): [`WriteGuarantee::LastWriterWins`].
///
/// No race lost: 1 GET + 1 PUT, plus the read-back GET for a conditional write.
pub async fn update_checked<E, F, H>(
    op: &Operator,
    path: &str,
    max_retries: u32,
    f: F,
    mut holds: H,
) -> Result<UpdateOutcome, UpdateError<E>>
where
    F: FnMut(Option<&[u8]>) -> Result<Option<Bytes>, E>,
    H: FnMut(&[u8]) -> bool + Send,
{
    update(op, path, max_retries, f, Some(&mut holds)).await
}

/// What [`update_checked`] asks of the object read back after a conditional write.
type ReadBackCheck<'a> = dyn FnMut(&[u8]) -> bool + Send + 'a;

/// The read-modify-write loop of [`update_checked`]; `holds: None` skips the read-back.
async fn update<E, F>(
    op: &Operator,
    path: &str,
    max_retries: u32,
    mut f: F,
    mut holds: Option<&mut ReadBackCheck<'_>>,
) -> Result<UpdateOutcome, UpdateError<E>>
where
    F: FnMut(Option<&[u8]>) -> Result<Option<Bytes>, E>,
{
    let mut requests: u32 = 0;
    let mut attempts: u32 = 0;
    let mut lost_conditional_write = false;
    let mut last = None;
    let mut delays = lost_race_backoff(max_retries);
    for attempt in 1..=max_retries.saturating_add(1) {
        attempts = attempt;
        let _lock = if is_fs(op) {
            Some(
                LocalLock::acquire(op, path)
                    .await
                    .map_err(UpdateError::Io)?,
            )
        } else {
            None
        };
        let snapshot = read_optional(op, path).await.map_err(UpdateError::Io)?;
        requests = requests.saturating_add(1);
        let condition = choose_condition(op, snapshot.as_ref());
        let guarantee = match condition {
            Condition::None if _lock.is_some() => WriteGuarantee::Locked,
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
                lost_conditional_write,
            });
        };
        if let Condition::None = condition {
            tracing::debug!(
                path,
                scheme = op.info().scheme(),
                ?guarantee,
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
                lost_conditional_write,
            });
        }
        requests = requests.saturating_add(1);
        let lost = match write_whole(op, path, bytes, condition).await {
            Ok(()) => {
                let Some(holds) = holds.as_mut() else {
                    return Ok(UpdateOutcome {
                        guarantee,
                        attempts,
                        requests,
                        written: true,
                        lost_conditional_write,
                    });
                };
                let stored = read_optional(op, path).await.map_err(UpdateError::Io)?;
                requests = requests.saturating_add(1);
                if stored.as_ref().is_some_and(|s| holds(&s.bytes)) {
                    return Ok(UpdateOutcome {
                        guarantee,
                        attempts,
                        requests,
                        written: true,
                        lost_conditional_write,
                    });
                }
                lost_conditional_write = true;
                tracing::warn!(
                    path,
                    scheme = op.info().scheme(),
                    "the backend accepted a conditional write, then showed content without it: \
                     its conditional writes are not atomic; merging and writing again"
                );
                IoError::new(
                    IoErrorKind::ConditionNotMet,
                    "write",
                    path,
                    "a conditional write was overwritten by a concurrent one",
                )
            }
            Err(e) if e.kind() == IoErrorKind::ConditionNotMet => {
                tracing::debug!(
                    path,
                    attempts,
                    "conditional mask write lost a race; retrying"
                );
                e
            }
            Err(e) => return Err(UpdateError::Io(e)),
        };
        last = Some(lost);
        if let Some(delay) = delays.next() {
            tokio::time::sleep(delay).await;
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
