//! Storage error kinds recovered: array-format flattens storage failures into strings,
//! so the store it reads through notes each failure (with its kind) in a
//! task-local slot on the way, and the caller takes it back out.

use std::fmt;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use atlas_io::{IoError, IoErrorKind};
use futures::stream::BoxStream;
use object_store::path::Path;
use object_store::{
    GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult,
};

use crate::read::segment_store::{SegmentStore, StoreError};

/// What an array-format call hit on the way to storage.
#[derive(Debug, Clone)]
pub(crate) struct IoFailure {
    kind: IoErrorKind,
    operation: &'static str,
    path: String,
    message: String,
}

impl IoFailure {
    /// The failure as a typed I/O error.
    pub fn into_error(self) -> IoError {
        IoError::new(self.kind, self.operation, self.path, self.message)
    }
}

tokio::task_local! {
    static IO_FAILURE: Arc<Mutex<Option<IoFailure>>>;
}

/// Runs `fut` (array-format work) and returns, beside its output, the first
/// storage failure its reads met, with the backend's kind intact.
pub(crate) async fn track_io<F: std::future::Future>(fut: F) -> (F::Output, Option<IoFailure>) {
    let slot = Arc::new(Mutex::new(None));
    let out = IO_FAILURE.scope(slot.clone(), fut).await;
    let failure = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
    (out, failure)
}

fn record(err: &object_store::Error) {
    let Some(failure) = io_failure_of(err) else {
        return;
    };
    let _ = IO_FAILURE.try_with(|slot| {
        let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            *slot = Some(failure);
        }
    });
}

fn io_failure_of(err: &object_store::Error) -> Option<IoFailure> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(err);
    while let Some(s) = source {
        let io = match s.downcast_ref::<StoreError>() {
            Some(StoreError::Io(io)) => Some(io),
            _ => s.downcast_ref::<IoError>(),
        };
        if let Some(io) = io {
            return Some(IoFailure {
                kind: io.kind(),
                operation: io.operation(),
                path: io.path().to_owned(),
                message: io.message().to_owned(),
            });
        }
        source = s.source();
    }
    None
}

/// The [`SegmentStore`] as array-format sees it, noting each storage failure
/// (with its kind) for [`track_io`] before array-format turns it into a string.
pub(crate) struct KindTrackingStore {
    pub inner: Arc<SegmentStore>,
}

impl fmt::Debug for KindTrackingStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KindTrackingStore")
            .field("inner", &self.inner)
            .finish()
    }
}

impl fmt::Display for KindTrackingStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KindTracking({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for KindTrackingStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        let result = self.inner.get_opts(location, options).await;
        if let Err(e) = &result {
            record(e);
        }
        result
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        from: &Path,
        to: &Path,
        options: object_store::CopyOptions,
    ) -> object_store::Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}
