//! One meter for every store the bench drives: requests, bytes, critical-path
//! round trips, and (on the simulated store) injected latency and bandwidth.
//!
//! The OpenDAL side ([`MeterLayer`], under this Atlas and zarrs) and the
//! object_store side ([`MeteredStore`], under atlas-rust, which reads through
//! object_store 0.13) share [`Meter`], so the three columns are counted by
//! the same code.
//!
//! A *wave* is a stretch of time during which at least one read or stat is in
//! flight; requests that overlap share a wave, a request that waits for the
//! previous one starts a new one. The number of waves is the number of round
//! trips on the critical path: on an object store each costs at least the
//! first-byte latency.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::{self, BoxStream};
use object_store::path::Path as OsPath;
use object_store::{
    CopyOptions, GetOptions, GetResult, GetResultPayload, ListResult, MultipartUpload, ObjectMeta,
    ObjectStore, PutMultipartOptions, PutOptions, PutPayload, PutResult, UploadPart,
};
use opendal::raw::{
    OpCopy, OpCreateDir, OpList, OpPresign, OpRead, OpRename, OpStat, OpWrite, RpCreateDir,
    RpPresign, RpRead, RpRename, RpStat, Service, ServiceInfo, Servicer, oio,
};
use opendal::{Buffer, BytesRange, Capability, Metadata, OperationContext};

/// How the simulated object store behaves: a fixed wait before each read or
/// stat, then the bytes at a fixed rate. Zero for both is the plain store.
///
/// A request's bytes are due at deadlines counted from its start (its
/// first byte `latency` after it, each later byte at `bandwidth`), not
/// after one wait and then another: the timer rounds each wait up to its
/// tick (a millisecond in tokio), and a request should pay that once, not
/// once per wait. The local store is asked first, within the latency, so
/// its own time is not added to the simulated one.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Simulation {
    /// Wait before the first byte of every read and stat.
    pub latency: Duration,
    /// Bytes per second of each response (`None`: unlimited).
    pub bandwidth: Option<f64>,
}

impl Simulation {
    /// Whether this simulates anything.
    pub fn is_active(&self) -> bool {
        !self.latency.is_zero() || self.bandwidth.is_some()
    }

    /// How long `bytes` take to arrive at the simulated bandwidth.
    pub fn transfer(&self, bytes: u64) -> Duration {
        match self.bandwidth {
            Some(rate) if rate > 0.0 => Duration::from_secs_f64(bytes as f64 / rate),
            _ => Duration::ZERO,
        }
    }
}

/// What a meter counted since it was created or last reset.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reading {
    /// Ranged GETs (whole-object reads included).
    pub reads: u64,
    /// HEAD / stat requests.
    pub stats: u64,
    /// Objects written (one PUT or one multipart upload each).
    pub writes: u64,
    /// Lists, deletes, copies, renames.
    pub others: u64,
    /// Bytes returned by reads.
    pub bytes_read: u64,
    /// Bytes sent by writes.
    pub bytes_written: u64,
    /// Round trips on the critical path (see the module docs).
    pub waves: u64,
    /// Most requests in flight at once.
    pub max_in_flight: u64,
}

impl Reading {
    /// Reads and stats: the requests a reader pays for.
    pub fn read_requests(&self) -> u64 {
        self.reads + self.stats
    }
}

#[derive(Debug, Default)]
struct State {
    reading: Reading,
    in_flight: u64,
    /// With `ATLAS_BENCH_TRACE` set: when the counts were last reset, and
    /// each request's start, end (`None` while in flight) and bytes
    /// received since then.
    since: Option<Instant>,
    timeline: Vec<(Duration, Option<Duration>, u64)>,
}

impl State {
    /// The timeline entry of a request traced as `traced` (the reset it
    /// started after, its place), if the timeline is still that reset's.
    fn traced(
        &mut self,
        traced: Option<(Instant, usize)>,
    ) -> Option<&mut (Duration, Option<Duration>, u64)> {
        let (since, at) = traced?;
        if self.since != Some(since) {
            return None;
        }
        self.timeline.get_mut(at)
    }
}

/// Whether meters keep a timeline of their requests (`ATLAS_BENCH_TRACE`
/// set): for finding where a step's time goes, not for the tables.
fn tracing_requests() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("ATLAS_BENCH_TRACE").is_some())
}

/// The shared counters and the simulation; cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Meter {
    state: Arc<Mutex<State>>,
    sim: Simulation,
}

impl Meter {
    /// A meter that simulates `sim` on every read and stat.
    pub fn new(sim: Simulation) -> Self {
        Self {
            state: Arc::default(),
            sim,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The counts so far.
    pub fn reading(&self) -> Reading {
        self.lock().reading
    }

    /// Zeroes the counts (requests in flight stay in flight).
    pub fn reset(&self) {
        let mut s = self.lock();
        s.reading = Reading::default();
        s.timeline.clear();
        s.since = tracing_requests().then(Instant::now);
    }

    /// With `ATLAS_BENCH_TRACE` set, each request since the last reset as
    /// "start–end:kB" (ms from the reset, kB received), in start order;
    /// else empty.
    pub fn timeline(&self) -> String {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        self.lock()
            .timeline
            .iter()
            .map(|(a, b, bytes)| match b {
                Some(b) => format!("{:.1}–{:.1}:{}k", ms(*a), ms(*b), bytes / 1000),
                None => format!("{:.1}–:{}k", ms(*a), bytes / 1000),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Starts one read (`stat = false`) or stat; the request is in flight until
    /// the returned guard drops.
    fn begin(&self, stat: bool) -> InFlight {
        let mut s = self.lock();
        if stat {
            s.reading.stats += 1;
        } else {
            s.reading.reads += 1;
        }
        if s.in_flight == 0 {
            s.reading.waves += 1;
        }
        s.in_flight += 1;
        s.reading.max_in_flight = s.reading.max_in_flight.max(s.in_flight);
        let traced = s.since.map(|since| {
            s.timeline.push((since.elapsed(), None, 0));
            (since, s.timeline.len() - 1)
        });
        InFlight {
            meter: self.clone(),
            traced,
            started: tokio::time::Instant::now(),
            received: 0,
        }
    }

    /// Waits until `flight`'s first byte is due.
    async fn first_byte(&self, flight: &InFlight) {
        if !self.sim.latency.is_zero() {
            tokio::time::sleep_until(flight.started + self.sim.latency).await;
        }
    }

    /// Counts `bytes` more of a response and waits until they are due
    /// (`flight`: the request they belong to, `None` once it has ended).
    async fn received(&self, bytes: u64, flight: Option<&mut InFlight>) {
        {
            let mut s = self.lock();
            s.reading.bytes_read += bytes;
            if let Some(entry) = s.traced(flight.as_ref().and_then(|f| f.traced)) {
                entry.2 += bytes;
            }
        }
        if let Some(flight) = flight
            && self.sim.is_active()
        {
            flight.received = flight.received.saturating_add(bytes);
            let due = flight.started + self.sim.latency + self.sim.transfer(flight.received);
            tokio::time::sleep_until(due).await;
        }
    }

    /// `result`, once it is due: an error at the first byte, else when the
    /// last of its `bytes` has arrived.
    async fn answered<T, E>(
        &self,
        flight: &mut InFlight,
        result: Result<T, E>,
        bytes: impl FnOnce(&T) -> u64,
    ) -> Result<T, E> {
        match &result {
            Ok(answer) => self.received(bytes(answer), Some(flight)).await,
            Err(_) => self.first_byte(flight).await,
        }
        result
    }

    fn wrote(&self, bytes: u64) {
        self.lock().reading.bytes_written += bytes;
    }

    fn count(&self, f: impl FnOnce(&mut Reading)) {
        f(&mut self.lock().reading);
    }
}

/// One request in flight; dropping it ends the request.
struct InFlight {
    meter: Meter,
    /// The reset it started after and its place in the timeline, if traced.
    traced: Option<(Instant, usize)>,
    /// When it was sent: its bytes are due from then.
    started: tokio::time::Instant,
    /// Bytes of its response so far.
    received: u64,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut s = self.meter.lock();
        s.in_flight = s.in_flight.saturating_sub(1);
        if let Some(since) = self.traced.map(|(since, _)| since)
            && let Some(entry) = s.traced(self.traced)
        {
            entry.1 = Some(since.elapsed());
        }
    }
}

// ---------------------------------------------------------------------------
// OpenDAL

/// An OpenDAL layer that meters (and on the simulated store, slows) every read and stat.
#[derive(Debug, Clone)]
pub struct MeterLayer {
    meter: Meter,
}

impl MeterLayer {
    /// A layer reporting to `meter`.
    pub fn new(meter: Meter) -> Self {
        Self { meter }
    }
}

impl opendal::raw::Layer for MeterLayer {
    fn apply_service(&self, srv: Servicer) -> Servicer {
        Arc::new(MeterService {
            inner: srv,
            meter: self.meter.clone(),
        })
    }
}

/// The service [`MeterLayer`] puts around the inner one.
pub struct MeterService {
    inner: Servicer,
    meter: Meter,
}

impl fmt::Debug for MeterService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MeterService").finish_non_exhaustive()
    }
}

impl Service for MeterService {
    type Reader = MeterReader;
    type Writer = MeterWriter;
    type Lister = oio::Lister;
    type Deleter = oio::Deleter;
    type Copier = oio::Copier;
    type Composer = oio::Composer;

    fn info(&self) -> ServiceInfo {
        self.inner.info()
    }

    fn capability(&self) -> Capability {
        self.inner.capability()
    }

    async fn create_dir(
        &self,
        ctx: &OperationContext,
        path: &str,
        args: OpCreateDir,
    ) -> opendal::Result<RpCreateDir> {
        self.meter.count(|r| r.others += 1);
        self.inner.create_dir(ctx, path, args).await
    }

    async fn stat(
        &self,
        ctx: &OperationContext,
        path: &str,
        args: OpStat,
    ) -> opendal::Result<RpStat> {
        let flight = self.meter.begin(true);
        let stat = self.inner.stat(ctx, path, args).await;
        self.meter.first_byte(&flight).await;
        stat
    }

    fn read(
        &self,
        ctx: &OperationContext,
        path: &str,
        args: OpRead,
    ) -> opendal::Result<Self::Reader> {
        Ok(MeterReader {
            inner: self.inner.read(ctx, path, args)?,
            meter: self.meter.clone(),
        })
    }

    fn write(
        &self,
        ctx: &OperationContext,
        path: &str,
        args: OpWrite,
    ) -> opendal::Result<Self::Writer> {
        self.meter.count(|r| r.writes += 1);
        Ok(MeterWriter {
            inner: self.inner.write(ctx, path, args)?,
            meter: self.meter.clone(),
        })
    }

    fn delete(&self, ctx: &OperationContext) -> opendal::Result<Self::Deleter> {
        self.meter.count(|r| r.others += 1);
        self.inner.delete(ctx)
    }

    fn list(
        &self,
        ctx: &OperationContext,
        path: &str,
        args: OpList,
    ) -> opendal::Result<Self::Lister> {
        self.meter.count(|r| r.others += 1);
        self.inner.list(ctx, path, args)
    }

    fn copy(
        &self,
        ctx: &OperationContext,
        from: &str,
        to: &str,
        args: OpCopy,
    ) -> opendal::Result<Self::Copier> {
        self.meter.count(|r| r.others += 1);
        self.inner.copy(ctx, from, to, args)
    }

    async fn rename(
        &self,
        ctx: &OperationContext,
        from: &str,
        to: &str,
        args: OpRename,
    ) -> opendal::Result<RpRename> {
        self.meter.count(|r| r.others += 1);
        self.inner.rename(ctx, from, to, args).await
    }

    async fn presign(
        &self,
        ctx: &OperationContext,
        path: &str,
        args: OpPresign,
    ) -> opendal::Result<RpPresign> {
        self.inner.presign(ctx, path, args).await
    }
}

/// Reader of [`MeterService`]: one request per `open` or `read`.
pub struct MeterReader {
    inner: oio::Reader,
    meter: Meter,
}

impl oio::Read for MeterReader {
    async fn open(
        &self,
        range: BytesRange,
    ) -> opendal::Result<(RpRead, Box<dyn oio::ReadStreamDyn>)> {
        let flight = self.meter.begin(false);
        let opened = oio::Read::open(&self.inner, range).await;
        self.meter.first_byte(&flight).await;
        let (rp, stream) = opened?;
        let stream = MeterStream {
            inner: stream,
            meter: self.meter.clone(),
            flight: Some(flight),
        };
        Ok((rp, Box::new(stream) as Box<dyn oio::ReadStreamDyn>))
    }

    async fn read(&self, range: BytesRange) -> opendal::Result<(RpRead, Buffer)> {
        let mut flight = self.meter.begin(false);
        let read = oio::Read::read(&self.inner, range).await;
        self.meter
            .answered(&mut flight, read, |(_, buf)| buf.len() as u64)
            .await
    }
}

/// A streamed response: in flight until its last chunk (or until dropped).
struct MeterStream {
    inner: Box<dyn oio::ReadStreamDyn>,
    meter: Meter,
    flight: Option<InFlight>,
}

impl oio::ReadStream for MeterStream {
    async fn read(&mut self) -> opendal::Result<Buffer> {
        let buf = self.inner.read_dyn().await?;
        if buf.is_empty() {
            self.flight = None;
        } else {
            let bytes = buf.len() as u64;
            self.meter.received(bytes, self.flight.as_mut()).await;
        }
        Ok(buf)
    }
}

/// Writer of [`MeterService`]: counts the bytes written.
pub struct MeterWriter {
    inner: oio::Writer,
    meter: Meter,
}

impl oio::Write for MeterWriter {
    async fn write(&mut self, bs: Buffer) -> opendal::Result<()> {
        let n = bs.len() as u64;
        oio::Write::write(&mut self.inner, bs).await?;
        self.meter.wrote(n);
        Ok(())
    }

    async fn close(&mut self) -> opendal::Result<Metadata> {
        oio::Write::close(&mut self.inner).await
    }

    async fn abort(&mut self) -> opendal::Result<()> {
        oio::Write::abort(&mut self.inner).await
    }
}

// ---------------------------------------------------------------------------
// object_store

/// An object_store wrapper that meters (and slows) like [`MeterLayer`].
///
/// Range reads go through the trait's default `get_ranges`, which coalesces
/// nearby ranges and issues one GET per group, as on a real object store
/// (the local file system's own `get_ranges` would read the file directly).
#[derive(Debug)]
pub struct MeteredStore {
    inner: Arc<dyn ObjectStore>,
    meter: Meter,
}

impl MeteredStore {
    /// `inner`, reporting to `meter`.
    pub fn new(inner: Arc<dyn ObjectStore>, meter: Meter) -> Self {
        Self { inner, meter }
    }
}

impl fmt::Display for MeteredStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Metered({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for MeteredStore {
    async fn put_opts(
        &self,
        location: &OsPath,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        self.meter.count(|r| r.writes += 1);
        self.meter.wrote(payload.content_length() as u64);
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &OsPath,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.meter.count(|r| r.writes += 1);
        let inner = self.inner.put_multipart_opts(location, opts).await?;
        Ok(Box::new(MeteredUpload {
            inner,
            meter: self.meter.clone(),
        }))
    }

    async fn get_opts(
        &self,
        location: &OsPath,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        let head = options.head;
        let mut flight = self.meter.begin(head);
        let result = self.inner.get_opts(location, options).await;
        let result = match result {
            Ok(result) if !head => result,
            other => {
                self.meter.first_byte(&flight).await;
                return other;
            }
        };
        // Take the whole body here, so the request is in flight until its last byte.
        let (meta, range, attributes) = (
            result.meta.clone(),
            result.range.clone(),
            result.attributes.clone(),
        );
        let body = result.bytes().await;
        let body = self
            .meter
            .answered(&mut flight, body, |body| body.len() as u64)
            .await?;
        let body: object_store::Result<Bytes> = Ok(body);
        Ok(GetResult {
            payload: GetResultPayload::Stream(Box::pin(stream::once(async move { body }))),
            meta,
            range,
            attributes,
        })
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<OsPath>>,
    ) -> BoxStream<'static, object_store::Result<OsPath>> {
        self.meter.count(|r| r.others += 1);
        self.inner.delete_stream(locations)
    }

    fn list(
        &self,
        prefix: Option<&OsPath>,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.meter.count(|r| r.others += 1);
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(
        &self,
        prefix: Option<&OsPath>,
    ) -> object_store::Result<ListResult> {
        self.meter.count(|r| r.others += 1);
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        from: &OsPath,
        to: &OsPath,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        self.meter.count(|r| r.others += 1);
        self.inner.copy_opts(from, to, options).await
    }
}

/// A multipart upload through [`MeteredStore`]: counts the bytes of each part.
#[derive(Debug)]
struct MeteredUpload {
    inner: Box<dyn MultipartUpload>,
    meter: Meter,
}

#[async_trait]
impl MultipartUpload for MeteredUpload {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        self.meter.wrote(data.content_length() as u64);
        self.inner.put_part(data)
    }

    async fn complete(&mut self) -> object_store::Result<PutResult> {
        self.inner.complete().await
    }

    async fn abort(&mut self) -> object_store::Result<()> {
        self.inner.abort().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::ObjectStoreExt;
    use object_store::memory::InMemory;

    fn memory_operator(meter: &Meter) -> opendal::Operator {
        opendal::Operator::new(opendal::services::Memory::default())
            .map(|op| op.layer(MeterLayer::new(meter.clone())))
            .expect("memory operator")
    }

    #[tokio::test]
    async fn overlapping_reads_share_a_round_trip_and_dependent_ones_do_not() {
        let meter = Meter::default();
        let op = memory_operator(&meter);
        op.write("a", vec![1u8; 100]).await.expect("write a");
        op.write("b", vec![2u8; 50]).await.expect("write b");
        meter.reset();

        op.read_with("a").range(0..10).await.expect("read a");
        op.read_with("b").range(0..20).await.expect("read b");
        let sequential = meter.reading();
        assert_eq!((sequential.reads, sequential.waves), (2, 2));
        assert_eq!(sequential.bytes_read, 30);

        meter.reset();
        // Hold one request in flight while the other runs: one wave.
        let first = meter.begin(false);
        op.read("b").await.expect("read b");
        drop(first);
        let overlapped = meter.reading();
        assert_eq!((overlapped.reads, overlapped.waves), (2, 1));
        assert_eq!(overlapped.max_in_flight, 2);
        assert_eq!(overlapped.bytes_read, 50);
    }

    #[tokio::test]
    async fn the_object_store_wrapper_counts_gets_heads_and_written_bytes() {
        let meter = Meter::default();
        let store = MeteredStore::new(Arc::new(InMemory::new()), meter.clone());
        let path = OsPath::from("x");
        store
            .put(&path, PutPayload::from(vec![7u8; 1000]))
            .await
            .expect("put");
        let bytes = store.get_range(&path, 100..400).await.expect("get");
        assert_eq!(bytes.len(), 300);
        store.head(&path).await.expect("head");
        let r = meter.reading();
        assert_eq!((r.writes, r.bytes_written), (1, 1000));
        assert_eq!((r.reads, r.stats, r.bytes_read), (1, 1, 300));
        assert_eq!(r.waves, 2);
    }

    #[tokio::test(start_paused = true)]
    async fn a_response_in_pieces_is_due_at_its_latency_plus_its_bytes_time() {
        // 20 ms, then 1 000 bytes at 1 MB/s: four pieces of 250 bytes are
        // due at 20.25, 20.5, 20.75 and 21 ms from the request's start. A
        // wait per piece, each rounded up to the timer's millisecond, would
        // end at 24 ms.
        let meter = Meter::new(Simulation {
            latency: Duration::from_millis(20),
            bandwidth: Some(1e6),
        });
        let start = tokio::time::Instant::now();
        let mut flight = meter.begin(false);
        meter.first_byte(&flight).await;
        for _ in 0..4 {
            meter.received(250, Some(&mut flight)).await;
        }
        drop(flight);
        let took = start.elapsed();
        assert!(
            took >= Duration::from_millis(21) && took < Duration::from_millis(22),
            "{took:?}"
        );
        assert_eq!(meter.reading().bytes_read, 1000);
    }

    #[test]
    fn bandwidth_turns_bytes_into_transfer_time() {
        let sim = Simulation {
            latency: Duration::from_millis(20),
            bandwidth: Some(100e6),
        };
        assert!(sim.is_active());
        assert_eq!(sim.transfer(50_000_000), Duration::from_millis(500));
        assert_eq!(Simulation::default().transfer(1 << 30), Duration::ZERO);
        assert!(!Simulation::default().is_active());
    }
}
