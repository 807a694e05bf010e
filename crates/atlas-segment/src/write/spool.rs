//! Segments finished into temporary storage, so that a commit can finish
//! several at once and still append them to the container in order.
//!
//! Finishing a segment compresses its last block and builds and archives its
//! footer (most of a commit's CPU time), then writes the segment through an
//! `object_store::ObjectStore`. The container sink accepts one segment at
//! a time, so finishing straight into it serialises the footers one after
//! another. [`SegmentWriter::finish_spooled`](crate::SegmentWriter::finish_spooled)
//! finishes into a `SpoolStore` instead: a single `put` (what the segment
//! writer's buffered upload does for a segment under its 8 MiB buffer) stays in memory
//! as the bytes it already is, a multipart upload goes to an anonymous
//! temporary file, so memory does not grow by the segments' data. The
//! resulting [`SpooledSegment`] is then appended to the container with
//! [`SpooledSegment::append_to`]; the bytes are exactly those the direct
//! path writes.

use std::fmt;
use std::io::{Read, Seek, SeekFrom, Write};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use object_store::path::Path;
use object_store::{
    GetOptions, GetResult, MultipartUpload, ObjectStore, ObjectStoreExt, PutMultipartOptions,
    PutOptions, PutPayload, PutResult, UploadPart,
};

use crate::error::SegmentError;
use crate::footer::digest::SegmentDigest;
use crate::write::sink::{WrittenSegment, kind_behind};
use crate::write::writer::ContainerSink;

const STORE_NAME: &str = "SpoolStore";
/// Bytes read from a spool file per write to the container.
const COPY_CHUNK: usize = 8 * 1024 * 1024;

/// A finished segment waiting in temporary storage for its turn.
pub struct SpooledSegment {
    name: String,
    body: Spool,
    digest: SegmentDigest,
}

impl fmt::Debug for SpooledSegment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpooledSegment")
            .field("name", &self.name)
            .field("len", &self.len())
            .finish()
    }
}

enum Spool {
    Memory(Bytes),
    File { file: std::fs::File, len: u64 },
}

impl SpooledSegment {
    /// The segment's bytes, trailer included.
    pub fn len(&self) -> u64 {
        match &self.body {
            Spool::Memory(bytes) => bytes.len() as u64,
            Spool::File { len, .. } => *len,
        }
    }

    /// Whether the segment has no bytes (never true of a finished one).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends the segment to `sink` (one upload, so the sink records where
    /// it landed, as for a segment finished into it directly); returns what
    /// [`SegmentWriter::finish`](crate::SegmentWriter::finish) returns.
    pub async fn append_to(
        self,
        sink: &ContainerSink,
    ) -> Result<(WrittenSegment, SegmentDigest), SegmentError> {
        let name = self.name;
        let store = sink.store();
        let path = sink.next_path();
        let io = |e: &(dyn std::error::Error + 'static)| {
            crate::write::writer::finish_io(&name, kind_behind(e), e.to_string())
        };
        match self.body {
            Spool::Memory(bytes) => {
                store
                    .put(&path, PutPayload::from(bytes))
                    .await
                    .map_err(|e| io(&e))?;
            }
            Spool::File { mut file, len } => {
                let mut upload = store.put_multipart(&path).await.map_err(|e| io(&e))?;
                let copied = copy_parts(&mut file, len, upload.as_mut()).await;
                match copied {
                    Ok(()) => {
                        upload.complete().await.map_err(|e| io(&e))?;
                    }
                    Err(e) => {
                        let _ = upload.abort().await;
                        return Err(io(&*e));
                    }
                }
            }
        }
        let written = sink.segment(&path).ok_or_else(|| {
            SegmentError::corrupt(&name, None, "the sink did not record the segment")
        })?;
        Ok((written, self.digest))
    }
}

/// Writes the first `len` bytes of `file` as parts of `upload`, in order.
async fn copy_parts(
    file: &mut std::fs::File,
    len: u64,
    upload: &mut dyn MultipartUpload,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    file.seek(SeekFrom::Start(0))?;
    let mut left = len;
    while left > 0 {
        let n = usize::try_from(left).unwrap_or(usize::MAX).min(COPY_CHUNK);
        let mut buf = vec![0u8; n];
        file.read_exact(&mut buf)?;
        upload.put_part(PutPayload::from(buf)).await?;
        left = left.saturating_sub(n as u64);
    }
    Ok(())
}

/// What array-format's finish wrote into a `SpoolStore`.
#[derive(Default)]
struct Written(Option<Spool>);

/// An `ObjectStore` that keeps the one file written to it: see the module docs.
#[derive(Clone, Default)]
pub(crate) struct SpoolStore {
    written: Arc<Mutex<Written>>,
}

impl fmt::Debug for SpoolStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SpoolStore")
    }
}

impl fmt::Display for SpoolStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(STORE_NAME)
    }
}

impl SpoolStore {
    fn keep(&self, spool: Spool) {
        self.written.lock().unwrap_or_else(|e| e.into_inner()).0 = Some(spool);
    }

    /// The segment written, named `name`; `None` if nothing completed.
    pub(crate) fn take(&self, name: &str, digest: SegmentDigest) -> Option<SpooledSegment> {
        let body = self
            .written
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .0
            .take()?;
        Some(SpooledSegment {
            name: name.to_owned(),
            body,
            digest,
        })
    }
}

fn not_supported(what: &str) -> object_store::Error {
    object_store::Error::NotSupported {
        source: format!("{STORE_NAME} only keeps one upload: {what} is not supported").into(),
    }
}

fn generic(e: std::io::Error) -> object_store::Error {
    object_store::Error::Generic {
        store: STORE_NAME,
        source: Box::new(e),
    }
}

#[async_trait]
impl ObjectStore for SpoolStore {
    async fn put_opts(
        &self,
        _location: &Path,
        payload: PutPayload,
        _opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        self.keep(Spool::Memory(Bytes::from(payload)));
        Ok(PutResult {
            e_tag: None,
            version: None,
        })
    }

    async fn put_multipart_opts(
        &self,
        _location: &Path,
        _opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        let file = tempfile::tempfile().map_err(generic)?;
        Ok(Box::new(SpoolUpload {
            store: self.clone(),
            file: Some(file),
            len: 0,
            failed: None,
        }))
    }

    async fn get_opts(
        &self,
        _location: &Path,
        _options: GetOptions,
    ) -> object_store::Result<GetResult> {
        Err(not_supported("reading"))
    }

    refuse_delete_list_copy!();
}

/// A multipart upload into a temporary file; parts are written when
/// `put_part` is called, so in call order.
struct SpoolUpload {
    store: SpoolStore,
    file: Option<std::fs::File>,
    len: u64,
    /// The first write that failed.
    failed: Option<String>,
}

impl fmt::Debug for SpoolUpload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpoolUpload")
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl MultipartUpload for SpoolUpload {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        let result = match (&mut self.file, &self.failed) {
            (Some(file), None) => data
                .iter()
                .try_for_each(|chunk| file.write_all(chunk))
                .map_err(|e| e.to_string()),
            (_, Some(earlier)) => Err(earlier.clone()),
            (None, None) => Err("upload already ended".to_owned()),
        };
        match result {
            Ok(()) => {
                self.len = self.len.saturating_add(data.content_length() as u64);
                Box::pin(async { Ok(()) })
            }
            Err(e) => {
                self.failed.get_or_insert_with(|| e.clone());
                Box::pin(async move {
                    Err(object_store::Error::Generic {
                        store: STORE_NAME,
                        source: e.into(),
                    })
                })
            }
        }
    }

    async fn complete(&mut self) -> object_store::Result<PutResult> {
        if let Some(e) = &self.failed {
            return Err(object_store::Error::Generic {
                store: STORE_NAME,
                source: e.clone().into(),
            });
        }
        let file = self
            .file
            .take()
            .ok_or_else(|| not_supported("a second complete"))?;
        self.store.keep(Spool::File {
            file,
            len: self.len,
        });
        Ok(PutResult {
            e_tag: None,
            version: None,
        })
    }

    async fn abort(&mut self) -> object_store::Result<()> {
        self.file = None;
        Ok(())
    }
}
