//! `CasMemory`: an in-memory OpenDAL service with ETags and compare-and-swap writes, for tests.
//!
//! OpenDAL's own `memory` service has no ETags and no if-match, and `fs` has
//! neither, so neither can show that a conditional read-modify-write never
//! loses a concurrent change. This service behaves like an object store in the
//! ways that matter for that: every write gets a fresh ETag, returned on stat
//! and on every read response, and a write's `if_match` / `if_not_exists`
//! condition is checked and applied under one lock at close (the commit point),
//! failing with `ConditionNotMatch` when it does not hold.
//!
//! It supports stat, read (ranges and suffixes), write and delete; listing,
//! copying and renaming are unsupported.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use opendal::raw::{
    OpCopy, OpCreateDir, OpDelete, OpList, OpPresign, OpRead, OpRename, OpStat, OpWrite,
    RpCreateDir, RpPresign, RpRead, RpRename, RpStat, Service, ServiceInfo, Servicer, oio,
};
use opendal::{
    Buffer, BytesRange, Capability, Error, ErrorKind, Metadata, MetadataBuilder, OperationContext,
    Operator,
};
use tokio::sync::oneshot;

#[derive(Debug, Clone)]
struct Entry {
    content: Bytes,
    etag: String,
}

#[derive(Debug, Default)]
struct Store {
    objects: Mutex<BTreeMap<String, Entry>>,
    next_etag: AtomicU64,
    /// Armed write faults: a path ending and what happens to the next write
    /// to a path with that ending.
    faults: Mutex<Vec<(String, WriteFault)>>,
    /// Changes (writes and deletes) still allowed before the writing process
    /// is killed; `None`: no kill armed.
    changes_left: Mutex<Option<u32>>,
    /// Killed: every request fails, for good, until [`CasMemory::revive`].
    killed: std::sync::atomic::AtomicBool,
    /// Held writes: a path ending, the signal that a write reached it, and
    /// the release it waits for ([`CasMemory::hold_next_write`]).
    holds: Mutex<Vec<Hold>>,
    /// Reordering ([`CasMemory::reorder`]): the generator's state and the
    /// most scheduler turns a request waits; `None`: requests run at once.
    reorder: Mutex<Option<(u64, u32)>>,
    /// Requests that waited at least one turn before or after taking effect.
    delayed: AtomicU64,
}

/// A held write's path ending, the signal that a write reached it, and the
/// release it waits for.
type Hold = (String, oneshot::Sender<()>, oneshot::Receiver<()>);

/// What an armed fault does to a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WriteFault {
    /// Refused with a temporary error before it takes effect.
    FailBefore,
    /// Takes effect, then is answered with a temporary error.
    LoseAnswer,
}

fn temporary(what: &'static str) -> Error {
    Error::new(ErrorKind::Unexpected, what).set_temporary()
}

impl Store {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Entry>> {
        self.objects.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Disarms and returns the first fault armed for `path` of kind `kind`.
    fn take_fault(&self, path: &str, kind: WriteFault) -> bool {
        let mut armed = self.faults.lock().unwrap_or_else(|e| e.into_inner());
        match armed
            .iter()
            .position(|(end, k)| *k == kind && path.ends_with(end.as_str()))
        {
            Some(i) => {
                armed.remove(i);
                true
            }
            None => false,
        }
    }

    /// `Err` once the process is killed: a request it can no longer make.
    fn alive(&self) -> opendal::Result<()> {
        if self.killed.load(Ordering::SeqCst) {
            return Err(Error::new(
                ErrorKind::Unexpected,
                "the process was killed (simulated)",
            ));
        }
        Ok(())
    }

    /// Counts one change that took effect; the last one allowed kills the process.
    fn changed(&self) {
        let mut left = self.changes_left.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = left.as_mut() {
            *n = n.saturating_sub(1);
            if *n == 0 {
                *left = None;
                self.killed.store(true, Ordering::SeqCst);
            }
        }
    }

    fn arm(&self, path_end: &str, fault: WriteFault) {
        self.faults
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((path_end.to_owned(), fault));
    }

    /// Waits the next seeded number of scheduler turns (none unless
    /// reordering is on), so that requests of concurrent tasks take effect
    /// and are answered in another order than they were made.
    async fn turns(&self) {
        let n = {
            let mut reorder = self.reorder.lock().unwrap_or_else(|e| e.into_inner());
            match reorder.as_mut() {
                None => 0,
                Some((state, max)) => {
                    // xorshift64*
                    *state ^= *state >> 12;
                    *state ^= *state << 25;
                    *state ^= *state >> 27;
                    let draw = state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32;
                    u32::try_from(draw % (u64::from(*max) + 1)).unwrap_or(0)
                }
            }
        };
        if n > 0 {
            self.delayed.fetch_add(1, Ordering::Relaxed);
        }
        for _ in 0..n {
            YieldOnce(false).await;
        }
    }

    /// Waits, if the next write to `path` is held, until the hold is released.
    async fn wait_if_held(&self, path: &str) {
        let held = {
            let mut holds = self.holds.lock().unwrap_or_else(|e| e.into_inner());
            holds
                .iter()
                .position(|(end, _, _)| path.ends_with(end.as_str()))
                .map(|i| holds.remove(i))
        };
        if let Some((_, reached, release)) = held {
            // Nobody waiting for either signal is a release too.
            let _ = reached.send(());
            let _ = release.await;
        }
    }

    fn new_etag(&self) -> String {
        format!("\"{}\"", self.next_etag.fetch_add(1, Ordering::Relaxed))
    }
}

/// A future that is pending once (waking itself at once), then ready: one
/// turn of whatever runtime polls it, for the other tasks to move on.
struct YieldOnce(bool);

impl std::future::Future for YieldOnce {
    type Output = ();

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        if self.0 {
            return std::task::Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}

fn metadata_of(e: &Entry) -> Metadata {
    let mut m = MetadataBuilder::file(e.content.len() as u64);
    m.etag(e.etag.clone());
    m.build()
}

fn not_found(path: &str) -> Error {
    Error::new(ErrorKind::NotFound, "cas-memory has no object here").with_context("path", path)
}

fn unsupported() -> Error {
    Error::new(
        ErrorKind::Unsupported,
        "operation is not supported by cas-memory",
    )
}

/// The service; build an operator over it with [`CasMemory::operator`].
#[derive(Clone, Default)]
pub struct CasMemory {
    store: Arc<Store>,
}

impl fmt::Debug for CasMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CasMemory").finish_non_exhaustive()
    }
}

impl CasMemory {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Arms a fault: the next write to a path ending with `path_end` takes
    /// effect and is then answered with a temporary error (the answer is
    /// lost), so a retry meets its own write.
    pub fn lose_next_answer(&self, path_end: &str) {
        self.store.arm(path_end, WriteFault::LoseAnswer);
    }

    /// Arms a fault: the next write to a path ending with `path_end` is
    /// refused with a temporary error and does not take effect.
    pub fn fail_next_write(&self, path_end: &str) {
        self.store.arm(path_end, WriteFault::FailBefore);
    }

    /// Arms a kill: after `changes` more writes or deletes take effect, the
    /// process is killed between two requests: every later request fails
    /// with a permanent error until [`revive`](Self::revive). `0` kills now.
    pub fn kill_after_changes(&self, changes: u32) {
        if changes == 0 {
            self.store.killed.store(true, Ordering::SeqCst);
            return;
        }
        *self
            .store
            .changes_left
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(changes);
    }

    /// Ends a kill (and disarms one not yet reached): requests work again,
    /// as for the next process.
    pub fn revive(&self) {
        *self
            .store
            .changes_left
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = None;
        self.store.killed.store(false, Ordering::SeqCst);
    }

    /// Holds the next write to a path ending with `path_end` before it takes
    /// effect, until the returned [`HeldWrite`] is released (or dropped):
    /// a test puts another client's requests between a writer's steps.
    pub fn hold_next_write(&self, path_end: &str) -> HeldWrite {
        let (reached_tx, reached_rx) = oneshot::channel();
        let (release_tx, release_rx) = oneshot::channel();
        self.store
            .holds
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((path_end.to_owned(), reached_tx, release_rx));
        HeldWrite {
            reached: reached_rx,
            release: release_tx,
        }
    }

    /// Reorders requests: each one (stat, read, write, delete) waits a
    /// number of scheduler turns drawn from `seed` (0 to `max_turns`) before
    /// it takes effect, and a write waits again after it took effect before
    /// it is answered. Requests of concurrent tasks then complete in orders
    /// the store otherwise never produces: a write lands after a read made
    /// later has been answered, two writers' requests interleave. The same
    /// seed and the same tasks give the same order on a single-threaded
    /// runtime (while no timer fires).
    pub fn reorder(&self, seed: u64, max_turns: u32) {
        *self.store.reorder.lock().unwrap_or_else(|e| e.into_inner()) = Some((seed | 1, max_turns));
    }

    /// Requests that [`reorder`](Self::reorder) delayed by at least one turn.
    pub fn delayed_requests(&self) -> u64 {
        self.store.delayed.load(Ordering::Relaxed)
    }

    /// An operator over this store (clones share the same objects).
    pub fn operator(&self) -> Operator {
        Operator::from_parts(
            OperationContext::default(),
            Arc::new(self.clone()) as Servicer,
        )
    }
}

/// A write [`CasMemory::hold_next_write`] holds: wait until a write reaches
/// it, then release it.
#[derive(Debug)]
pub struct HeldWrite {
    reached: oneshot::Receiver<()>,
    release: oneshot::Sender<()>,
}

impl HeldWrite {
    /// Waits until a write reaches the hold (it then waits, not yet in
    /// effect); `false` if the store was dropped first.
    pub async fn reached(&mut self) -> bool {
        (&mut self.reached).await.is_ok()
    }

    /// Lets the held write go on.
    pub fn release(self) {
        let _ = self.release.send(());
    }
}

impl Service for CasMemory {
    type Reader = CasReader;
    type Writer = CasWriter;
    type Lister = ();
    type Deleter = CasDeleter;
    type Copier = ();
    type Composer = ();

    fn info(&self) -> ServiceInfo {
        ServiceInfo::new("cas-memory", "/", "cas-memory")
    }

    fn capability(&self) -> Capability {
        Capability {
            stat: true,
            read: true,
            read_with_suffix: true,
            write: true,
            write_can_empty: true,
            write_with_if_match: true,
            write_with_if_not_exists: true,
            delete: true,
            ..Default::default()
        }
    }

    async fn create_dir(
        &self,
        _: &OperationContext,
        _: &str,
        _: OpCreateDir,
    ) -> opendal::Result<RpCreateDir> {
        Err(unsupported())
    }

    async fn stat(&self, _: &OperationContext, path: &str, _: OpStat) -> opendal::Result<RpStat> {
        self.store.turns().await;
        self.store.alive()?;
        match self.store.lock().get(path) {
            Some(e) => Ok(RpStat::new(metadata_of(e))),
            None => Err(not_found(path)),
        }
    }

    fn read(&self, _: &OperationContext, path: &str, _: OpRead) -> opendal::Result<CasReader> {
        Ok(CasReader {
            store: self.store.clone(),
            path: path.to_string(),
        })
    }

    fn write(&self, _: &OperationContext, path: &str, args: OpWrite) -> opendal::Result<CasWriter> {
        Ok(CasWriter {
            store: self.store.clone(),
            path: path.to_string(),
            args,
            parts: Vec::new(),
        })
    }

    fn delete(&self, _: &OperationContext) -> opendal::Result<CasDeleter> {
        Ok(CasDeleter {
            store: self.store.clone(),
        })
    }

    fn list(&self, _: &OperationContext, _: &str, _: OpList) -> opendal::Result<()> {
        Err(unsupported())
    }

    fn copy(&self, _: &OperationContext, _: &str, _: &str, _: OpCopy) -> opendal::Result<()> {
        Err(unsupported())
    }

    async fn rename(
        &self,
        _: &OperationContext,
        _: &str,
        _: &str,
        _: OpRename,
    ) -> opendal::Result<RpRename> {
        Err(unsupported())
    }

    async fn presign(
        &self,
        _: &OperationContext,
        _: &str,
        _: OpPresign,
    ) -> opendal::Result<RpPresign> {
        Err(unsupported())
    }
}

/// Reader of [`CasMemory`]: each read returns the object's ETag with the bytes.
pub struct CasReader {
    store: Arc<Store>,
    path: String,
}

impl CasReader {
    fn get(&self, range: BytesRange) -> opendal::Result<(RpRead, Buffer)> {
        let entry = self
            .store
            .lock()
            .get(&self.path)
            .cloned()
            .ok_or_else(|| not_found(&self.path))?;
        let r = range.to_content_range(entry.content.len())?;
        let bytes = entry
            .content
            .get(r)
            .map(Bytes::copy_from_slice)
            .ok_or_else(|| {
                Error::new(ErrorKind::RangeNotSatisfied, "range exceeds content length")
            })?;
        Ok((RpRead::new(metadata_of(&entry)), Buffer::from(bytes)))
    }
}

impl oio::Read for CasReader {
    async fn open(
        &self,
        range: BytesRange,
    ) -> opendal::Result<(RpRead, Box<dyn oio::ReadStreamDyn>)> {
        self.store.turns().await;
        self.store.alive()?;
        let (rp, buf) = self.get(range)?;
        Ok((rp, Box::new(buf) as Box<dyn oio::ReadStreamDyn>))
    }

    async fn read(&self, range: BytesRange) -> opendal::Result<(RpRead, Buffer)> {
        self.store.turns().await;
        self.store.alive()?;
        self.get(range)
    }
}

/// Writer of [`CasMemory`]: buffers, then checks the condition and commits at close.
pub struct CasWriter {
    store: Arc<Store>,
    path: String,
    args: OpWrite,
    parts: Vec<Buffer>,
}

impl CasWriter {
    /// Checks the write's condition and applies it, under the store's lock.
    fn apply(&self, content: Bytes) -> opendal::Result<Metadata> {
        let mut objects = self.store.lock();
        let current = objects.get(&self.path);
        if self.args.if_not_exists() && current.is_some() {
            return Err(Error::new(
                ErrorKind::ConditionNotMatch,
                "object exists (if_not_exists)",
            ));
        }
        if let Some(want) = self.args.if_match()
            && current.map(|e| e.etag.as_str()) != Some(want)
        {
            return Err(Error::new(
                ErrorKind::ConditionNotMatch,
                "etag does not match (if_match)",
            ));
        }
        let entry = Entry {
            content,
            etag: self.store.new_etag(),
        };
        let meta = metadata_of(&entry);
        objects.insert(self.path.clone(), entry);
        Ok(meta)
    }
}

impl oio::Write for CasWriter {
    async fn write(&mut self, bs: Buffer) -> opendal::Result<()> {
        self.parts.push(bs);
        Ok(())
    }

    async fn close(&mut self) -> opendal::Result<Metadata> {
        // Kept until the write succeeds: a retried close writes them again.
        let content: Bytes = self
            .parts
            .iter()
            .cloned()
            .flatten()
            .fold(bytes::BytesMut::new(), |mut acc, b| {
                acc.extend_from_slice(&b);
                acc
            })
            .freeze();
        self.store.wait_if_held(&self.path).await;
        self.store.turns().await;
        self.store.alive()?;
        if self.store.take_fault(&self.path, WriteFault::FailBefore) {
            return Err(temporary("the write was refused before it took effect"));
        }
        let meta = self.apply(content)?;
        self.store.changed();
        if self.store.take_fault(&self.path, WriteFault::LoseAnswer) {
            return Err(temporary("the write took effect; its answer was lost"));
        }
        // In effect, not yet answered: others may see it before its writer does.
        self.store.turns().await;
        Ok(meta)
    }

    async fn abort(&mut self) -> opendal::Result<()> {
        self.parts.clear();
        Ok(())
    }
}

/// Deleter of [`CasMemory`].
pub struct CasDeleter {
    store: Arc<Store>,
}

impl oio::Delete for CasDeleter {
    async fn delete(&mut self, path: &str, _: OpDelete) -> opendal::Result<()> {
        self.store.turns().await;
        self.store.alive()?;
        self.store.lock().remove(path);
        self.store.changed();
        Ok(())
    }

    async fn close(&mut self) -> opendal::Result<()> {
        Ok(())
    }
}
