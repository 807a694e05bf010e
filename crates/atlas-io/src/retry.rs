//! Retries and timeouts for every operator the library builds.
//!
//! A [`RetryPolicy`] puts OpenDAL's `TimeoutLayer` under its `RetryLayer`, so
//! an operation that times out is retried like any other temporary failure
//! (a 503, a reset connection), with jittered exponential backoff. A failure
//! that outlives its retries still reports [`crate::IoErrorKind::Transient`],
//! which callers treat as "try again later", not as damage; a layer between
//! the two keeps that fact visible, because the retry layer marks every error
//! it passes on, permanent or not, the same way.

use std::sync::Arc;
use std::time::Duration;

use opendal::layers::{RetryLayer, TimeoutLayer};
use opendal::raw::*;
use opendal::{
    Buffer, BytesRange, Capability, Error, Metadata, OperationContext, Operator, Result,
};

/// How an operator retries temporary failures and bounds slow operations.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// Retries after the first attempt (0: no retry).
    pub max_retries: usize,
    /// The first backoff delay; each further one doubles, with jitter.
    pub min_delay: Duration,
    /// The longest backoff delay.
    pub max_delay: Duration,
    /// The longest a non-streaming operation (stat, delete, a conditional
    /// write's round trip) may take before it counts as failed.
    pub timeout: Duration,
    /// The longest one chunk of a streaming read or write may take.
    pub io_timeout: Duration,
}

impl Default for RetryPolicy {
    /// 4 retries from 200 ms up to 8 s; 60 s per operation and per I/O chunk.
    fn default() -> Self {
        Self {
            max_retries: 4,
            min_delay: Duration::from_millis(200),
            max_delay: Duration::from_secs(8),
            timeout: Duration::from_secs(60),
            io_timeout: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// No retry: the first temporary failure is reported. Timeouts stay.
    pub fn no_retries() -> Self {
        Self::default().max_retries(0)
    }

    /// Sets [`RetryPolicy::max_retries`].
    pub fn max_retries(mut self, n: usize) -> Self {
        self.max_retries = n;
        self
    }

    /// Sets the backoff bounds.
    pub fn backoff(mut self, min_delay: Duration, max_delay: Duration) -> Self {
        self.min_delay = min_delay;
        self.max_delay = max_delay.max(min_delay);
        self
    }

    /// Sets both timeouts.
    pub fn timeouts(mut self, operation: Duration, io: Duration) -> Self {
        self.timeout = operation;
        self.io_timeout = io;
        self
    }

    /// The waits between attempts under this policy: exponential from
    /// `min_delay` to `max_delay`, jittered, at most `max_retries` of them;
    /// backon's backoff, as OpenDAL's retry layer uses, for requests sent
    /// outside OpenDAL.
    pub fn delays(&self) -> impl Iterator<Item = Duration> + use<> {
        use backon::BackoffBuilder;
        backon::ExponentialBuilder::default()
            .with_min_delay(self.min_delay)
            .with_max_delay(self.max_delay)
            .with_jitter()
            .with_max_times(self.max_retries)
            .build()
    }

    /// `op` with this policy's timeout and retry layers on top.
    pub fn apply(&self, op: Operator) -> Operator {
        let op = op
            .layer(
                TimeoutLayer::new()
                    .with_timeout(self.timeout)
                    .with_io_timeout(self.io_timeout),
            )
            .layer(MarkTemporary {
                tries: u32::try_from(self.max_retries.saturating_add(1)).unwrap_or(u32::MAX),
            });
        if self.max_retries == 0 {
            return op;
        }
        op.layer(
            RetryLayer::new()
                .with_jitter()
                .with_min_delay(self.min_delay)
                .with_max_delay(self.max_delay)
                .with_max_times(self.max_retries)
                .with_notify(|event: opendal::layers::RetryEvent<'_>| {
                    tracing::warn!(
                        operation = ?event.op,
                        attempt = event.attempt,
                        after_ms = event.retry_after.as_millis() as u64,
                        "retrying after a temporary failure: {}",
                        event.err
                    );
                }),
        )
    }
}

/// Keeps "this failure was temporary" visible after the retry layer gives up.
///
/// OpenDAL's retry layer marks every error it passes on as persistent, a
/// permanent one (a missing credential, a bad request) as much as a 503 that
/// outlived its retries. Under it, this layer wraps each temporary error in one
/// whose source is the original, still marked temporary, so the transport's
/// error mapping can tell the two apart ([`crate::IoErrorKind::Transient`]).
/// It also records how many tries the policy allows (the first and every
/// retry), which is how many a temporary error that reaches a caller had.
#[derive(Debug, Clone, Copy)]
struct MarkTemporary {
    tries: u32,
}

fn mark(err: Error, tries: u32) -> Error {
    if err.is_temporary() {
        Error::new(err.kind(), "temporary failure")
            .set_source(Temporary { tries, error: err })
            .set_temporary()
    } else {
        err
    }
}

/// The temporary error a marked one wraps, with the tries the policy allowed.
#[derive(Debug)]
pub(crate) struct Temporary {
    tries: u32,
    error: Error,
}

impl std::fmt::Display for Temporary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "failed on each of {} tries", self.tries)
    }
}

impl std::error::Error for Temporary {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// What this crate's tests need to build a marked error without a server.
#[cfg(test)]
pub(crate) mod tests_support {
    /// `err` as the retry policy passes it on after `tries` tries.
    pub(crate) fn marked(err: super::Error, tries: u32) -> super::Error {
        super::mark(err, tries)
    }
}

impl Temporary {
    /// The error the service reported on the last try.
    pub(crate) fn error(&self) -> &Error {
        &self.error
    }
}

/// The service's own error behind `err`: the wrapped one if `err` is marked.
pub(crate) fn innermost(err: &Error) -> &Error {
    temporary(err).map_or(err, Temporary::error)
}

/// The marked part of `err`, if it failed temporarily under a [`RetryPolicy`].
fn temporary(err: &Error) -> Option<&Temporary> {
    std::error::Error::source(err).and_then(|s| s.downcast_ref::<Temporary>())
}

/// Whether `err`, or the error it wraps, failed temporarily.
pub(crate) fn was_temporary(err: &Error) -> bool {
    err.is_temporary() || temporary(err).is_some_and(|t| t.error.is_temporary())
}

/// How many tries a temporary `err` had: the policy's budget when it was
/// marked, else one (an operator without a policy does not retry).
pub(crate) fn tries_of(err: &Error) -> u32 {
    temporary(err).map_or(1, |t| t.tries)
}

impl Layer for MarkTemporary {
    fn apply_service(&self, inner: Servicer) -> Servicer {
        Arc::new(Marked {
            inner,
            tries: self.tries,
        })
    }
}

#[derive(Debug)]
struct Marked<R> {
    inner: R,
    tries: u32,
}

impl Service for Marked<Servicer> {
    type Reader = Marked<oio::Reader>;
    type Writer = Marked<oio::Writer>;
    type Lister = Marked<oio::Lister>;
    type Deleter = Marked<oio::Deleter>;
    type Copier = Marked<oio::Copier>;
    type Composer = Marked<oio::Composer>;

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
    ) -> Result<RpCreateDir> {
        self.inner
            .create_dir(ctx, path, args)
            .await
            .map_err(|e| mark(e, self.tries))
    }

    fn read(&self, ctx: &OperationContext, path: &str, args: OpRead) -> Result<Self::Reader> {
        self.inner
            .read(ctx, path, args)
            .map(|inner| Marked {
                inner,
                tries: self.tries,
            })
            .map_err(|e| mark(e, self.tries))
    }

    fn write(&self, ctx: &OperationContext, path: &str, args: OpWrite) -> Result<Self::Writer> {
        self.inner
            .write(ctx, path, args)
            .map(|inner| Marked {
                inner,
                tries: self.tries,
            })
            .map_err(|e| mark(e, self.tries))
    }

    fn copy(
        &self,
        ctx: &OperationContext,
        from: &str,
        to: &str,
        args: OpCopy,
    ) -> Result<Self::Copier> {
        self.inner
            .copy(ctx, from, to, args)
            .map(|inner| Marked {
                inner,
                tries: self.tries,
            })
            .map_err(|e| mark(e, self.tries))
    }

    fn compose(&self, ctx: &OperationContext, to: &str, args: OpCompose) -> Result<Self::Composer> {
        self.inner
            .compose(ctx, to, args)
            .map(|inner| Marked {
                inner,
                tries: self.tries,
            })
            .map_err(|e| mark(e, self.tries))
    }

    async fn rename(
        &self,
        ctx: &OperationContext,
        from: &str,
        to: &str,
        args: OpRename,
    ) -> Result<RpRename> {
        self.inner
            .rename(ctx, from, to, args)
            .await
            .map_err(|e| mark(e, self.tries))
    }

    async fn restore(
        &self,
        ctx: &OperationContext,
        path: &str,
        args: OpRestore,
    ) -> Result<RpRestore> {
        self.inner
            .restore(ctx, path, args)
            .await
            .map_err(|e| mark(e, self.tries))
    }

    async fn stat(&self, ctx: &OperationContext, path: &str, args: OpStat) -> Result<RpStat> {
        self.inner
            .stat(ctx, path, args)
            .await
            .map_err(|e| mark(e, self.tries))
    }

    fn delete(&self, ctx: &OperationContext) -> Result<Self::Deleter> {
        self.inner
            .delete(ctx)
            .map(|inner| Marked {
                inner,
                tries: self.tries,
            })
            .map_err(|e| mark(e, self.tries))
    }

    fn list(&self, ctx: &OperationContext, path: &str, args: OpList) -> Result<Self::Lister> {
        self.inner
            .list(ctx, path, args)
            .map(|inner| Marked {
                inner,
                tries: self.tries,
            })
            .map_err(|e| mark(e, self.tries))
    }

    async fn presign(
        &self,
        ctx: &OperationContext,
        path: &str,
        args: OpPresign,
    ) -> Result<RpPresign> {
        self.inner
            .presign(ctx, path, args)
            .await
            .map_err(|e| mark(e, self.tries))
    }
}

impl<R: oio::ReadStream> oio::ReadStream for Marked<R> {
    async fn read(&mut self) -> Result<Buffer> {
        self.inner.read().await.map_err(|e| mark(e, self.tries))
    }
}

impl<R: oio::Read> oio::Read for Marked<R> {
    async fn open(&self, range: BytesRange) -> Result<(RpRead, Box<dyn oio::ReadStreamDyn>)> {
        let (rp, stream) = self
            .inner
            .open(range)
            .await
            .map_err(|e| mark(e, self.tries))?;
        Ok((
            rp,
            Box::new(Marked {
                inner: stream,
                tries: self.tries,
            }) as Box<dyn oio::ReadStreamDyn>,
        ))
    }

    async fn read(&self, range: BytesRange) -> Result<(RpRead, Buffer)> {
        self.inner
            .read(range)
            .await
            .map_err(|e| mark(e, self.tries))
    }
}

impl<R: oio::Write> oio::Write for Marked<R> {
    async fn write(&mut self, bs: Buffer) -> Result<()> {
        self.inner.write(bs).await.map_err(|e| mark(e, self.tries))
    }

    async fn copy_from(&mut self, path: &str, args: OpRead, range: BytesRange) -> Result<()> {
        self.inner
            .copy_from(path, args, range)
            .await
            .map_err(|e| mark(e, self.tries))
    }

    async fn close(&mut self) -> Result<Metadata> {
        self.inner.close().await.map_err(|e| mark(e, self.tries))
    }

    async fn abort(&mut self) -> Result<()> {
        self.inner.abort().await.map_err(|e| mark(e, self.tries))
    }
}

impl<R: oio::List> oio::List for Marked<R> {
    async fn next(&mut self) -> Result<Option<oio::Entry>> {
        self.inner.next().await.map_err(|e| mark(e, self.tries))
    }
}

impl<R: oio::Delete> oio::Delete for Marked<R> {
    async fn delete(&mut self, path: &str, args: OpDelete) -> Result<()> {
        self.inner
            .delete(path, args)
            .await
            .map_err(|e| mark(e, self.tries))
    }

    async fn close(&mut self) -> Result<()> {
        self.inner.close().await.map_err(|e| mark(e, self.tries))
    }
}

impl<C: oio::Copy> oio::Copy for Marked<C> {
    async fn next(&mut self) -> Result<Option<usize>> {
        self.inner.next().await.map_err(|e| mark(e, self.tries))
    }

    async fn close(&mut self) -> Result<Metadata> {
        self.inner.close().await.map_err(|e| mark(e, self.tries))
    }

    async fn abort(&mut self) -> Result<()> {
        self.inner.abort().await.map_err(|e| mark(e, self.tries))
    }
}

impl<C: oio::Compose> oio::Compose for Marked<C> {
    async fn compose(&mut self, path: &str, args: OpRead) -> Result<()> {
        self.inner
            .compose(path, args)
            .await
            .map_err(|e| mark(e, self.tries))
    }

    async fn close(&mut self) -> Result<Metadata> {
        self.inner.close().await.map_err(|e| mark(e, self.tries))
    }
}
