//! `SinkStore`: segment writes appended, in order, to one streaming container writer.
//!
//! The container is written front to back in one pass through an
//! [`opendal::Writer`] (a multipart upload on object stores). Each segment is
//! an array-format file written by `SegmentWriter::finish` (`pack`), which
//! goes through `object_store::buffered::BufWriter`: a single `put` for small
//! files, or `put_multipart` + `put_part`s + `complete` for large ones. This
//! store appends those bytes to the shared writer and records, per path, the
//! offset and length the segment landed at.
//!
//! Rules:
//! - one upload at a time: a second `put`/`put_multipart` while one is active
//!   is an error (segments are written one after another);
//! - parts land in the order `put_part` was called, even though `BufWriter`
//!   polls up to 8 part futures concurrently: each part future waits for the
//!   previous one, then awaits the OpenDAL write. That await is the
//!   back-pressure: a part future completes only once the writer accepted its
//!   bytes, and `BufWriter` keeps at most 8 parts (of 8 MiB) in flight;
//! - a failed, aborted or cancelled upload that wrote bytes poisons the sink:
//!   the container holds a partial segment and must be abandoned;
//! - `head` of a completed path returns its length; everything else
//!   (reads, lists, deletes, copies) is `NotSupported`.

// Some helpers serve only the tests (which drive array-format through this store).
#![cfg_attr(not(test), allow(dead_code))]

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use object_store::path::Path;
use object_store::{
    Attributes, GetOptions, GetResult, GetResultPayload, MultipartUpload, ObjectMeta, ObjectStore,
    PutMode, PutMultipartOptions, PutOptions, PutPayload, PutResult, UploadPart,
};
use tokio::sync::oneshot;

use atlas_io::{IoError, IoErrorKind};

const STORE_NAME: &str = "SinkStore";

/// Where one segment landed in the container.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WrittenSegment {
    /// Byte offset of the segment's first byte in the container.
    pub offset: u64,
    /// The segment's length in bytes.
    pub len: u64,
}

/// Why the sink refused or failed an operation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SinkError {
    /// An upload is in progress; segments are written one at a time.
    #[error("upload of {requested:?} refused: upload of {active:?} is still active")]
    UploadActive {
        /// The path being uploaded.
        active: String,
        /// The path that was refused.
        requested: String,
    },
    /// This path was already written to the container.
    #[error("segment {path:?} was already written")]
    AlreadyWritten {
        /// The path.
        path: String,
    },
    /// An earlier failure left a partial segment in the container.
    #[error("the container writer is unusable: {reason}")]
    Poisoned {
        /// What went wrong first.
        reason: String,
    },
    /// The container writer was already closed or aborted.
    #[error("the container writer is closed")]
    Closed,
    /// A previous part of this upload failed or was cancelled.
    #[error("part {part} of {path:?} not written: an earlier part failed")]
    EarlierPartFailed {
        /// The path.
        path: String,
        /// Zero-based index of the part.
        part: u64,
    },
    /// Bytes arrived for an upload that was already completed, aborted or dropped.
    #[error("{what} arrived after its upload ended")]
    UploadEnded {
        /// What was being written.
        what: String,
    },
    /// Conditional puts (`PutMode::Update`) cannot append to a stream.
    #[error("conditional update of {path:?} is not supported by the sink")]
    UpdateNotSupported {
        /// The path.
        path: String,
    },
    /// The container writer failed.
    #[error(transparent)]
    Io(#[from] IoError),
}

#[derive(Debug)]
struct Active {
    path: String,
    id: u64,
    start: u64,
}

#[derive(Debug, Default)]
struct State {
    active: Option<Active>,
    next_id: u64,
    completed: HashMap<String, WrittenSegment>,
    order: Vec<String>,
    poisoned: Option<String>,
}

struct WriterSlot {
    writer: Option<opendal::Writer>,
    position: u64,
}

struct Shared {
    container: String,
    writer: tokio::sync::Mutex<WriterSlot>,
    state: Mutex<State>,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn poison(&self, reason: String) {
        let mut st = self.state();
        if st.poisoned.is_none() {
            tracing::warn!(container = %self.container, %reason, "container sink poisoned");
            st.poisoned = Some(reason);
        }
    }

    fn check_usable(&self) -> Result<(), SinkError> {
        match &self.state().poisoned {
            Some(reason) => Err(SinkError::Poisoned {
                reason: reason.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Appends `chunks` to the container; returns the new position.
    ///
    /// `upload` is the upload these bytes belong to (`None` for raw bytes); it
    /// must be the active one, checked under the writer lock so nothing slips
    /// between segments. Cancellation mid-write poisons the sink.
    async fn append(
        &self,
        chunks: Vec<Bytes>,
        upload: Option<u64>,
        what: &str,
    ) -> Result<u64, SinkError> {
        let mut slot = self.writer.lock().await;
        {
            let st = self.state();
            if let Some(reason) = &st.poisoned {
                return Err(SinkError::Poisoned {
                    reason: reason.clone(),
                });
            }
            match (&st.active, upload) {
                (None, None) => {}
                (Some(a), Some(id)) if a.id == id => {}
                (Some(a), _) => {
                    return Err(SinkError::UploadActive {
                        active: a.path.clone(),
                        requested: what.to_string(),
                    });
                }
                (None, Some(_)) => {
                    return Err(SinkError::UploadEnded {
                        what: what.to_string(),
                    });
                }
            }
        }
        let slot = &mut *slot;
        let writer = slot.writer.as_mut().ok_or(SinkError::Closed)?;
        let mut guard = PoisonOnDrop {
            shared: self,
            reason: Some(format!("write of {what} was cancelled mid-way")),
        };
        for chunk in chunks {
            let n = chunk.len() as u64;
            if let Err(e) = writer.write(chunk).await {
                let err = IoError::from_opendal(e, "write", &self.container);
                guard.reason = Some(format!("write of {what} failed: {err}"));
                return Err(err.into());
            }
            slot.position = slot.position.saturating_add(n);
        }
        guard.reason = None;
        Ok(slot.position)
    }
}

struct PoisonOnDrop<'a> {
    shared: &'a Shared,
    reason: Option<String>,
}

impl Drop for PoisonOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(reason) = self.reason.take() {
            self.shared.poison(reason);
        }
    }
}

/// An `ObjectStore` that appends every upload to one container writer; see the module docs.
#[derive(Clone)]
pub struct SinkStore {
    shared: Arc<Shared>,
}

impl fmt::Debug for SinkStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SinkStore")
            .field("container", &self.shared.container)
            .finish_non_exhaustive()
    }
}

impl fmt::Display for SinkStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SinkStore({})", self.shared.container)
    }
}

impl SinkStore {
    /// A sink appending to `writer`, the writer of object `container`, at position 0.
    pub fn new(writer: opendal::Writer, container: impl Into<String>) -> Self {
        Self::starting_at(writer, container, 0)
    }

    /// A sink whose writer already holds `position` bytes (e.g. a header written before).
    pub fn starting_at(
        writer: opendal::Writer,
        container: impl Into<String>,
        position: u64,
    ) -> Self {
        Self {
            shared: Arc::new(Shared {
                container: container.into(),
                writer: tokio::sync::Mutex::new(WriterSlot {
                    writer: Some(writer),
                    position,
                }),
                state: Mutex::new(State::default()),
            }),
        }
    }

    /// Bytes accepted by the container writer so far (waits for an in-flight write).
    pub async fn position(&self) -> u64 {
        self.shared.writer.lock().await.position
    }

    /// Appends bytes of the caller's own (headers, indexes) between segments.
    ///
    /// Returns the offset they landed at. Refused while an upload is active.
    pub async fn write_raw(&self, bytes: Bytes) -> Result<u64, SinkError> {
        let len = bytes.len() as u64;
        let end = self.shared.append(vec![bytes], None, "<raw bytes>").await?;
        Ok(end.saturating_sub(len))
    }

    /// Where the segment written under `path` landed, once its upload completed.
    pub fn segment(&self, path: &Path) -> Option<WrittenSegment> {
        self.shared.state().completed.get(path.as_ref()).copied()
    }

    /// Every completed segment, in the order they were written.
    pub fn segments(&self) -> Vec<(String, WrittenSegment)> {
        let st = self.shared.state();
        st.order
            .iter()
            .filter_map(|p| st.completed.get(p).map(|s| (p.clone(), *s)))
            .collect()
    }

    /// Closes the container writer, making the object visible; returns its metadata.
    ///
    /// Refused while an upload is active or after a failure poisoned the sink
    /// (then call [`SinkStore::abort`]).
    pub async fn close(&self) -> Result<opendal::Metadata, SinkError> {
        let mut slot = self.shared.writer.lock().await;
        self.shared.check_usable()?;
        if let Some(a) = &self.shared.state().active {
            return Err(SinkError::UploadActive {
                active: a.path.clone(),
                requested: "<close>".to_string(),
            });
        }
        let mut writer = slot.writer.take().ok_or(SinkError::Closed)?;
        writer
            .close()
            .await
            .map_err(|e| IoError::from_opendal(e, "close", &self.shared.container).into())
    }

    /// Aborts the container upload: nothing becomes visible (where the backend allows).
    pub async fn abort(&self) -> Result<(), SinkError> {
        let mut slot = self.shared.writer.lock().await;
        self.shared.poison("container aborted".to_string());
        let mut writer = slot.writer.take().ok_or(SinkError::Closed)?;
        writer
            .abort()
            .await
            .map_err(|e| IoError::from_opendal(e, "abort", &self.shared.container).into())
    }

    /// Starts an upload of `path`: checks the one-at-a-time rule, notes the start offset.
    async fn begin(&self, path: &str) -> Result<(u64, u64), SinkError> {
        // The writer lock orders us after any in-flight raw write, so the
        // position read here is where this segment's first byte will land.
        let slot = self.shared.writer.lock().await;
        let mut st = self.shared.state();
        if let Some(reason) = &st.poisoned {
            return Err(SinkError::Poisoned {
                reason: reason.clone(),
            });
        }
        if slot.writer.is_none() {
            return Err(SinkError::Closed);
        }
        if let Some(a) = &st.active {
            return Err(SinkError::UploadActive {
                active: a.path.clone(),
                requested: path.to_string(),
            });
        }
        if st.completed.contains_key(path) {
            return Err(SinkError::AlreadyWritten {
                path: path.to_string(),
            });
        }
        let id = st.next_id;
        st.next_id = st.next_id.wrapping_add(1);
        st.active = Some(Active {
            path: path.to_string(),
            id,
            start: slot.position,
        });
        Ok((id, slot.position))
    }

    /// Ends upload `id`: on success records the segment, on failure poisons if bytes landed.
    async fn finish(&self, id: u64, ok: bool) -> Result<WrittenSegment, SinkError> {
        let position = self.shared.writer.lock().await.position;
        let mut st = self.shared.state();
        let active = match st.active.take() {
            Some(a) if a.id == id => a,
            other => {
                st.active = other;
                return Err(SinkError::Closed);
            }
        };
        let len = position.saturating_sub(active.start);
        if !ok {
            if len > 0 {
                drop(st);
                self.shared.poison(format!(
                    "upload of {:?} failed after {len} bytes",
                    active.path
                ));
            }
            return Err(SinkError::Poisoned {
                reason: format!("upload of {:?} failed", active.path),
            });
        }
        let seg = WrittenSegment {
            offset: active.start,
            len,
        };
        st.order.push(active.path.clone());
        st.completed.insert(active.path, seg);
        Ok(seg)
    }
}

fn to_object_store_error(err: SinkError) -> object_store::Error {
    match err {
        SinkError::AlreadyWritten { ref path } => object_store::Error::AlreadyExists {
            path: path.clone(),
            source: Box::new(err),
        },
        SinkError::UpdateNotSupported { .. } => object_store::Error::NotSupported {
            source: Box::new(err),
        },
        other => object_store::Error::Generic {
            store: STORE_NAME,
            source: Box::new(other),
        },
    }
}

fn not_supported(what: &str) -> object_store::Error {
    object_store::Error::NotSupported {
        source: format!("{STORE_NAME} only appends uploads: {what} is not supported").into(),
    }
}

#[async_trait]
impl ObjectStore for SinkStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        let path = location.as_ref();
        if let PutMode::Update(_) = opts.mode {
            return Err(to_object_store_error(SinkError::UpdateNotSupported {
                path: path.to_string(),
            }));
        }
        let (id, _) = self.begin(path).await.map_err(to_object_store_error)?;
        let chunks: Vec<Bytes> = payload.into_iter().collect();
        let result = self.shared.append(chunks, Some(id), path).await;
        let ok = result.is_ok();
        let finished = self.finish(id, ok).await;
        result.map_err(to_object_store_error)?;
        finished.map_err(to_object_store_error)?;
        Ok(PutResult {
            e_tag: None,
            version: None,
        })
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        _opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        let path = location.as_ref().to_string();
        let (id, _) = self.begin(&path).await.map_err(to_object_store_error)?;
        Ok(Box::new(SinkUpload {
            sink: self.clone(),
            path,
            id,
            parts: 0,
            prev: None,
            done: false,
        }))
    }

    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        if !options.head {
            return Err(not_supported("reading"));
        }
        let seg = self
            .segment(location)
            .ok_or_else(|| object_store::Error::NotFound {
                path: location.to_string(),
                source: "no completed upload at this path".into(),
            })?;
        Ok(GetResult {
            payload: GetResultPayload::Stream(futures::stream::empty().boxed()),
            meta: ObjectMeta {
                location: location.clone(),
                last_modified: Default::default(),
                size: seg.len,
                e_tag: None,
                version: None,
            },
            range: 0..0,
            attributes: Attributes::new(),
        })
    }

    refuse_delete_list_copy!();
}

/// One multipart upload into the sink; parts are appended in `put_part` order.
struct SinkUpload {
    sink: SinkStore,
    path: String,
    id: u64,
    parts: u64,
    /// Resolves when the previous part is written (`true`) or failed (`false`).
    prev: Option<oneshot::Receiver<bool>>,
    done: bool,
}

impl fmt::Debug for SinkUpload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SinkUpload")
            .field("path", &self.path)
            .field("parts", &self.parts)
            .finish_non_exhaustive()
    }
}

impl SinkUpload {
    async fn previous_parts_ok(prev: Option<oneshot::Receiver<bool>>) -> bool {
        match prev {
            None => true,
            Some(rx) => rx.await.unwrap_or(false),
        }
    }
}

#[async_trait]
impl MultipartUpload for SinkUpload {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        // Chain: this part waits for the previous one, so parts land in call
        // order however the returned futures are polled.
        let prev = self.prev.take();
        let (tx, rx) = oneshot::channel();
        self.prev = Some(rx);
        let part = self.parts;
        self.parts = self.parts.saturating_add(1);
        let shared = self.sink.shared.clone();
        let path = self.path.clone();
        let id = self.id;
        Box::pin(async move {
            if !SinkUpload::previous_parts_ok(prev).await {
                let _ = tx.send(false);
                return Err(to_object_store_error(SinkError::EarlierPartFailed {
                    path,
                    part,
                }));
            }
            let chunks: Vec<Bytes> = data.into_iter().collect();
            let result = shared
                .append(chunks, Some(id), &format!("part {part} of {path:?}"))
                .await;
            let _ = tx.send(result.is_ok());
            result.map(|_| ()).map_err(to_object_store_error)
        })
    }

    async fn complete(&mut self) -> object_store::Result<PutResult> {
        if self.done {
            return Err(to_object_store_error(SinkError::Closed));
        }
        self.done = true;
        let ok = SinkUpload::previous_parts_ok(self.prev.take()).await;
        self.sink
            .finish(self.id, ok)
            .await
            .map_err(to_object_store_error)?;
        Ok(PutResult {
            e_tag: None,
            version: None,
        })
    }

    async fn abort(&mut self) -> object_store::Result<()> {
        if self.done {
            return Ok(());
        }
        self.done = true;
        // Let parts already started settle so the recorded length is final.
        let _ = SinkUpload::previous_parts_ok(self.prev.take()).await;
        match self.sink.finish(self.id, false).await {
            Err(SinkError::Poisoned { .. }) | Ok(_) => Ok(()),
            Err(e) => Err(to_object_store_error(e)),
        }
    }
}

impl Drop for SinkUpload {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        // Dropped without complete or abort: the segment is unfinished. If
        // any bytes landed the container is corrupt; otherwise just free the slot.
        let mut st = self.sink.shared.state();
        if let Some(a) = &st.active
            && a.id == self.id
        {
            let path = a.path.clone();
            st.active = None;
            drop(st);
            if self.parts > 0 {
                self.sink
                    .shared
                    .poison(format!("upload of {path:?} was dropped before completing"));
            }
        }
    }
}

/// The kind of the first storage error behind `e` (`Other` when there is
/// none), so that a busy store met inside array-format's writes stays a
/// transient failure for the caller.
pub(crate) fn kind_behind(e: &(dyn std::error::Error + 'static)) -> IoErrorKind {
    let mut next = Some(e);
    while let Some(e) = next {
        if let Some(io) = e.downcast_ref::<IoError>() {
            return io.kind();
        }
        if let Some(SinkError::Io(io)) = e.downcast_ref::<SinkError>() {
            return io.kind();
        }
        // `std::io::Error` forwards `source` to its payload's source, past the payload.
        next = match e
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            Some(payload) => Some(payload),
            None => e.source(),
        };
    }
    IoErrorKind::Other
}
