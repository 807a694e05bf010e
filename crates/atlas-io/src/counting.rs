//! An OpenDAL layer that counts requests and injects faults, for tests and benches.
//!
//! `op.layer(CountingLayer::new())` wraps the operator's service; the layer's
//! [`RequestStats`] handle reads the counts and [`Faults`] changes the faults
//! while the operator is in use (both are cheap clones sharing one state).
//!
//! # What counts as a request
//!
//! - **read**: one per ranged GET, i.e. one per `open` or `read` call OpenDAL's
//!   `Reader` makes on the service. `op.read_with(p).range(r)` is exactly one;
//!   `op.reader(p)` itself is none (creating a reader sends nothing); a
//!   `Reader` with `chunk` / `concurrent` options makes one per chunk. The
//!   requested [`BytesRange`] is logged as the caller asked for it.
//! - **stat**: one per stat (HEAD).
//! - **write**: one per object written (one writer: a PUT, or one multipart
//!   upload whose parts the service sends below this layer); its bytes count
//!   in `bytes_written`.
//! - **delete**: one per path deleted. **list**: one per listing started.
//! - **other**: copy, rename, create-dir, presign, restore, compose.
//!
//! The layer sits above OpenDAL's internal layers. Where OpenDAL *simulates* a
//! capability below it (suffix reads on fs and azblob become stat + range), the
//! extra stat is not seen here; the memory and s3 services read suffixes natively.
//!
//! # Faults
//!
//! Latency (a tokio sleep before each read, stat, delete and write close),
//! failing the Nth read or every read of a path containing a substring,
//! truncating read responses, failing a writer after N bytes, and reporting
//! `read_with_suffix = false` so callers must fall back to stat + range.
//!
//! # Concurrency
//!
//! [`RequestStats::max_reads_in_flight`] is the most reads that were in
//! flight at once: with injected latency, how many a caller keeps going.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use opendal::raw::{
    OpCompose, OpCopy, OpCreateDir, OpDelete, OpList, OpPresign, OpRead, OpRename, OpRestore,
    OpStat, OpWrite, RpCreateDir, RpPresign, RpRead, RpRename, RpRestore, RpStat, Service,
    ServiceInfo, Servicer, oio,
};
use opendal::{Buffer, BytesRange, Capability, Error, ErrorKind, Metadata, OperationContext};

/// A snapshot of the counts since creation or the last [`RequestStats::reset`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Ranged GETs (see the module docs).
    pub reads: u64,
    /// Stats (HEADs).
    pub stats: u64,
    /// Objects written (PUTs or multipart uploads).
    pub writes: u64,
    /// Paths deleted.
    pub deletes: u64,
    /// Listings started.
    pub lists: u64,
    /// Copies, renames, create-dirs, presigns, restores, composes.
    pub others: u64,
    /// Bytes returned by reads (after any injected truncation).
    pub bytes_read: u64,
    /// Bytes handed to writers (up to any injected failure).
    pub bytes_written: u64,
}

impl Counts {
    /// Every request of any kind.
    pub fn requests(&self) -> u64 {
        self.reads
            .saturating_add(self.stats)
            .saturating_add(self.writes)
            .saturating_add(self.deletes)
            .saturating_add(self.lists)
            .saturating_add(self.others)
    }
}

/// One read request as the caller asked for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadRecord {
    /// The path read (as OpenDAL normalised it, without a leading `/`).
    pub path: String,
    /// The range requested: `BytesRange::Range` or `BytesRange::Suffix`.
    pub range: BytesRange,
}

#[derive(Debug, Default)]
struct StatsInner {
    counts: Counts,
    reads: Vec<ReadRecord>,
    /// Reads begun and not yet finished (response read, failed or dropped).
    in_flight: u64,
    /// The most reads in flight at once since the last reset.
    max_in_flight: u64,
}

/// A shared handle on the layer's counts and read log.
#[derive(Debug, Clone, Default)]
pub struct RequestStats {
    inner: Arc<Mutex<StatsInner>>,
}

impl RequestStats {
    fn lock(&self) -> MutexGuard<'_, StatsInner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The counts so far.
    pub fn snapshot(&self) -> Counts {
        self.lock().counts
    }

    /// Every read request so far, in the order they were made.
    pub fn read_log(&self) -> Vec<ReadRecord> {
        self.lock().reads.clone()
    }

    /// The most read requests that were in flight at once since creation or
    /// the last reset. A read is in flight from the moment it reaches the
    /// layer (before any injected latency) until its response has been read,
    /// it failed, or it was dropped: with [`Faults::set_latency`], the reads
    /// a caller keeps going at once.
    pub fn max_reads_in_flight(&self) -> u64 {
        self.lock().max_in_flight
    }

    /// Zeroes the counts and clears the read log; the high-water mark of
    /// reads in flight restarts from those in flight now.
    pub fn reset(&self) {
        let mut g = self.lock();
        g.counts = Counts::default();
        g.reads.clear();
        g.max_in_flight = g.in_flight;
    }

    /// Marks one read in flight until the guard is dropped.
    fn begin_read(&self) -> InFlight {
        self.update(|s| {
            s.in_flight = s.in_flight.saturating_add(1);
            s.max_in_flight = s.max_in_flight.max(s.in_flight);
        });
        InFlight {
            stats: self.clone(),
        }
    }

    fn update(&self, f: impl FnOnce(&mut StatsInner)) {
        f(&mut self.lock());
    }
}

/// One read in flight, for [`RequestStats::max_reads_in_flight`]; ends on drop.
#[derive(Debug)]
struct InFlight {
    stats: RequestStats,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.stats
            .update(|s| s.in_flight = s.in_flight.saturating_sub(1));
    }
}

#[derive(Debug, Default, Clone)]
struct FaultConfig {
    latency: Option<Duration>,
    fail_nth_read: Option<u64>,
    transient_read_failures: u64,
    fail_reads_matching: Vec<String>,
    truncate_reads_by: u64,
    fail_writes_after: Option<u64>,
}

/// A shared handle that sets or clears the layer's injected faults at any time.
#[derive(Debug, Clone, Default)]
pub struct Faults {
    inner: Arc<Mutex<FaultConfig>>,
}

impl Faults {
    fn lock(&self) -> MutexGuard<'_, FaultConfig> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sleeps this long before each read, stat, delete and write close.
    pub fn set_latency(&self, latency: Duration) {
        self.lock().latency = Some(latency);
    }

    /// Fails the next `n` read requests with a temporary error (a 503, a
    /// reset connection): what a retry layer should absorb.
    pub fn fail_next_reads_transiently(&self, n: u64) {
        self.lock().transient_read_failures = n;
    }

    /// Fails the `n`th read request from now (1 = the next one), once, with a
    /// permanent error.
    pub fn fail_nth_read(&self, n: u64) {
        self.lock().fail_nth_read = Some(n.max(1));
    }

    /// Fails every read of a path that contains `needle`, until cleared.
    pub fn fail_reads_matching(&self, needle: impl Into<String>) {
        self.lock().fail_reads_matching.push(needle.into());
    }

    /// Returns `bytes` fewer bytes than each read asked for (a short read).
    pub fn truncate_reads_by(&self, bytes: u64) {
        self.lock().truncate_reads_by = bytes;
    }

    /// Each writer created from now on passes its first `bytes` bytes through,
    /// then fails (a write dying mid-stream).
    pub fn fail_writes_after(&self, bytes: u64) {
        self.lock().fail_writes_after = Some(bytes);
    }

    /// Removes every fault.
    pub fn clear(&self) {
        *self.lock() = FaultConfig::default();
    }

    fn latency(&self) -> Option<Duration> {
        self.lock().latency
    }

    /// Decides whether this read fails, and whether temporarily; advances the countdowns.
    fn read_fault(&self, path: &str) -> Option<(String, bool)> {
        let mut g = self.lock();
        if g.transient_read_failures > 0 {
            g.transient_read_failures -= 1;
            return Some(("injected temporary failure of this read".to_string(), true));
        }
        if let Some(n) = g.fail_nth_read {
            if n <= 1 {
                g.fail_nth_read = None;
                return Some(("injected failure of this read".to_string(), false));
            }
            g.fail_nth_read = Some(n - 1);
        }
        g.fail_reads_matching
            .iter()
            .find(|needle| path.contains(needle.as_str()))
            .map(|needle| {
                (
                    format!("injected failure of reads matching {needle:?}"),
                    false,
                )
            })
    }
}

/// Counts requests and injects faults; see the module docs.
#[derive(Debug, Clone)]
pub struct CountingLayer {
    stats: RequestStats,
    faults: Faults,
    suffix_reads: bool,
}

impl Default for CountingLayer {
    fn default() -> Self {
        Self::new()
    }
}

impl CountingLayer {
    /// A layer with fresh counts, no faults and the service's own capabilities.
    pub fn new() -> Self {
        Self {
            stats: RequestStats::default(),
            faults: Faults::default(),
            suffix_reads: true,
        }
    }

    /// Reports `read_with_suffix = false` and rejects suffix ranges, so callers
    /// must fall back to stat + range as on a backend without suffix reads.
    pub fn without_suffix_reads(mut self) -> Self {
        self.suffix_reads = false;
        self
    }

    /// The handle on this layer's counts.
    pub fn stats(&self) -> RequestStats {
        self.stats.clone()
    }

    /// The handle on this layer's faults.
    pub fn faults(&self) -> Faults {
        self.faults.clone()
    }
}

impl opendal::raw::Layer for CountingLayer {
    fn apply_service(&self, srv: Servicer) -> Servicer {
        Arc::new(CountingService {
            inner: srv,
            shared: Arc::new(Shared {
                stats: self.stats.clone(),
                faults: self.faults.clone(),
                suffix_reads: self.suffix_reads,
            }),
        })
    }
}

#[derive(Debug)]
struct Shared {
    stats: RequestStats,
    faults: Faults,
    suffix_reads: bool,
}

impl Shared {
    async fn delay(&self) {
        if let Some(d) = self.faults.latency() {
            tokio::time::sleep(d).await;
        }
    }
}

/// The service [`CountingLayer`] wraps around the inner one.
pub struct CountingService {
    inner: Servicer,
    shared: Arc<Shared>,
}

impl fmt::Debug for CountingService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CountingService")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

fn injected(kind: ErrorKind, message: String) -> Error {
    Error::new(kind, message).with_operation("CountingLayer")
}

impl Service for CountingService {
    type Reader = CountingReader;
    type Writer = CountingWriter;
    type Lister = oio::Lister;
    type Deleter = CountingDeleter;
    type Copier = oio::Copier;
    type Composer = oio::Composer;

    fn info(&self) -> ServiceInfo {
        self.inner.info()
    }

    fn capability(&self) -> Capability {
        let mut cap = self.inner.capability();
        if !self.shared.suffix_reads {
            cap.read_with_suffix = false;
        }
        cap
    }

    async fn create_dir(
        &self,
        ctx: &OperationContext,
        path: &str,
        args: OpCreateDir,
    ) -> opendal::Result<RpCreateDir> {
        self.shared.stats.update(|s| s.counts.others += 1);
        self.inner.create_dir(ctx, path, args).await
    }

    async fn stat(
        &self,
        ctx: &OperationContext,
        path: &str,
        args: OpStat,
    ) -> opendal::Result<RpStat> {
        self.shared.delay().await;
        self.shared.stats.update(|s| s.counts.stats += 1);
        self.inner.stat(ctx, path, args).await
    }

    fn read(
        &self,
        ctx: &OperationContext,
        path: &str,
        args: OpRead,
    ) -> opendal::Result<Self::Reader> {
        let inner = self.inner.read(ctx, path, args)?;
        Ok(CountingReader {
            inner,
            path: path.to_string(),
            shared: self.shared.clone(),
        })
    }

    fn write(
        &self,
        ctx: &OperationContext,
        path: &str,
        args: OpWrite,
    ) -> opendal::Result<Self::Writer> {
        let inner = self.inner.write(ctx, path, args)?;
        self.shared.stats.update(|s| s.counts.writes += 1);
        Ok(CountingWriter {
            inner,
            written: 0,
            fail_after: self.shared.faults.lock().fail_writes_after,
            shared: self.shared.clone(),
        })
    }

    fn delete(&self, ctx: &OperationContext) -> opendal::Result<Self::Deleter> {
        Ok(CountingDeleter {
            inner: self.inner.delete(ctx)?,
            shared: self.shared.clone(),
        })
    }

    fn list(
        &self,
        ctx: &OperationContext,
        path: &str,
        args: OpList,
    ) -> opendal::Result<Self::Lister> {
        self.shared.stats.update(|s| s.counts.lists += 1);
        self.inner.list(ctx, path, args)
    }

    fn copy(
        &self,
        ctx: &OperationContext,
        from: &str,
        to: &str,
        args: OpCopy,
    ) -> opendal::Result<Self::Copier> {
        self.shared.stats.update(|s| s.counts.others += 1);
        self.inner.copy(ctx, from, to, args)
    }

    fn compose(
        &self,
        ctx: &OperationContext,
        to: &str,
        args: OpCompose,
    ) -> opendal::Result<Self::Composer> {
        self.shared.stats.update(|s| s.counts.others += 1);
        self.inner.compose(ctx, to, args)
    }

    async fn rename(
        &self,
        ctx: &OperationContext,
        from: &str,
        to: &str,
        args: OpRename,
    ) -> opendal::Result<RpRename> {
        self.shared.stats.update(|s| s.counts.others += 1);
        self.inner.rename(ctx, from, to, args).await
    }

    async fn restore(
        &self,
        ctx: &OperationContext,
        path: &str,
        args: OpRestore,
    ) -> opendal::Result<RpRestore> {
        self.shared.stats.update(|s| s.counts.others += 1);
        self.inner.restore(ctx, path, args).await
    }

    async fn presign(
        &self,
        ctx: &OperationContext,
        path: &str,
        args: OpPresign,
    ) -> opendal::Result<RpPresign> {
        self.shared.stats.update(|s| s.counts.others += 1);
        self.inner.presign(ctx, path, args).await
    }
}

/// Reader of [`CountingService`]: counts, logs and perturbs each ranged GET.
pub struct CountingReader {
    inner: oio::Reader,
    path: String,
    shared: Arc<Shared>,
}

impl CountingReader {
    /// Runs the pre-request steps of one read; returns how many bytes it may
    /// return (`None` = unlimited) or the injected error.
    async fn begin(&self, range: BytesRange) -> opendal::Result<Option<u64>> {
        if range.is_suffix() && !self.shared.suffix_reads {
            return Err(injected(
                ErrorKind::Unsupported,
                "suffix reads are disabled by CountingLayer".to_string(),
            ));
        }
        self.shared.delay().await;
        self.shared.stats.update(|s| {
            s.counts.reads += 1;
            s.reads.push(ReadRecord {
                path: self.path.clone(),
                range,
            });
        });
        if let Some((msg, temporary)) = self.shared.faults.read_fault(&self.path) {
            let err = injected(ErrorKind::Unexpected, msg);
            return Err(if temporary { err.set_temporary() } else { err });
        }
        let cut = self.shared.faults.lock().truncate_reads_by;
        if cut == 0 {
            return Ok(None);
        }
        let asked = match range {
            BytesRange::Suffix { size } => Some(size),
            BytesRange::Range { size, .. } => size,
        };
        Ok(asked.map(|n| n.saturating_sub(cut)))
    }
}

impl oio::Read for CountingReader {
    async fn open(
        &self,
        range: BytesRange,
    ) -> opendal::Result<(RpRead, Box<dyn oio::ReadStreamDyn>)> {
        let in_flight = self.shared.stats.begin_read();
        let limit = self.begin(range).await?;
        let (rp, stream) = oio::Read::open(&self.inner, range).await?;
        let stream = CountingStream {
            inner: stream,
            remaining: limit,
            shared: self.shared.clone(),
            _in_flight: in_flight,
        };
        Ok((rp, Box::new(stream) as Box<dyn oio::ReadStreamDyn>))
    }

    async fn read(&self, range: BytesRange) -> opendal::Result<(RpRead, Buffer)> {
        let _in_flight = self.shared.stats.begin_read();
        let limit = self.begin(range).await?;
        let (rp, mut buf) = oio::Read::read(&self.inner, range).await?;
        if let Some(limit) = limit {
            buf.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
        }
        let n = buf.len() as u64;
        self.shared
            .stats
            .update(|s| s.counts.bytes_read = s.counts.bytes_read.saturating_add(n));
        Ok((rp, buf))
    }
}

struct CountingStream {
    inner: Box<dyn oio::ReadStreamDyn>,
    remaining: Option<u64>,
    shared: Arc<Shared>,
    /// The read stays in flight until its body is dropped.
    _in_flight: InFlight,
}

impl oio::ReadStream for CountingStream {
    async fn read(&mut self) -> opendal::Result<Buffer> {
        if self.remaining == Some(0) {
            return Ok(Buffer::new());
        }
        let mut buf = self.inner.read_dyn().await?;
        if let Some(rem) = self.remaining.as_mut() {
            buf.truncate(usize::try_from(*rem).unwrap_or(usize::MAX));
            *rem = rem.saturating_sub(buf.len() as u64);
        }
        let n = buf.len() as u64;
        self.shared
            .stats
            .update(|s| s.counts.bytes_read = s.counts.bytes_read.saturating_add(n));
        Ok(buf)
    }
}

/// Writer of [`CountingService`]: counts bytes and can fail after N of them.
pub struct CountingWriter {
    inner: oio::Writer,
    written: u64,
    fail_after: Option<u64>,
    shared: Arc<Shared>,
}

impl oio::Write for CountingWriter {
    async fn write(&mut self, bs: Buffer) -> opendal::Result<()> {
        let len = bs.len() as u64;
        if let Some(limit) = self.fail_after {
            let room = limit.saturating_sub(self.written);
            if len > room {
                let keep = usize::try_from(room).unwrap_or(usize::MAX);
                let part = bs.slice(..keep);
                if !part.is_empty() {
                    oio::Write::write(&mut self.inner, part).await?;
                    self.note_written(room);
                }
                return Err(injected(
                    ErrorKind::Unexpected,
                    format!("injected write failure after {limit} bytes"),
                ));
            }
        }
        oio::Write::write(&mut self.inner, bs).await?;
        self.note_written(len);
        Ok(())
    }

    async fn close(&mut self) -> opendal::Result<Metadata> {
        self.shared.delay().await;
        oio::Write::close(&mut self.inner).await
    }

    async fn abort(&mut self) -> opendal::Result<()> {
        oio::Write::abort(&mut self.inner).await
    }
}

impl CountingWriter {
    fn note_written(&mut self, n: u64) {
        self.written = self.written.saturating_add(n);
        self.shared
            .stats
            .update(|s| s.counts.bytes_written = s.counts.bytes_written.saturating_add(n));
    }
}

/// Deleter of [`CountingService`]: counts one request per path.
pub struct CountingDeleter {
    inner: oio::Deleter,
    shared: Arc<Shared>,
}

impl oio::Delete for CountingDeleter {
    async fn delete(&mut self, path: &str, args: OpDelete) -> opendal::Result<()> {
        self.shared.delay().await;
        self.shared.stats.update(|s| s.counts.deletes += 1);
        oio::Delete::delete(&mut self.inner, path, args).await
    }

    async fn close(&mut self) -> opendal::Result<()> {
        oio::Delete::close(&mut self.inner).await
    }
}
