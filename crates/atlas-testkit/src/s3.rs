//! The in-process S3 server: `s3s` speaking the protocol, `s3s-fs` storing
//! objects as files under a temporary directory.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder as ConnBuilder;
use s3s::dto::*;
use s3s::service::S3ServiceBuilder;
use s3s::{S3, S3Request, S3Response, S3Result};
use s3s_fs::FileSystem;

use crate::Background;

/// The bucket every server starts with.
pub const BUCKET: &str = "atlas-test";
/// The access key the server accepts (SigV4 is checked).
pub const ACCESS_KEY: &str = "test";
/// The secret key the server accepts.
pub const SECRET_KEY: &str = "test";
/// The region clients should sign for.
pub const REGION: &str = "us-east-1";

/// A running S3 server on 127.0.0.1; stops when dropped.
pub struct S3Server {
    endpoint: String,
    dir: tempfile::TempDir,
    // Dropped last: stops the runtime that serves the socket.
    _runtime: Background,
}

impl S3Server {
    /// A server whose conditional writes are atomic: a per-key lock is held
    /// across `s3s-fs`'s precondition check and its write, as on real S3.
    pub fn start() -> S3Server {
        Self::serve(true)
    }

    /// `s3s-fs` unmodified: it checks If-Match / If-None-Match, then writes
    /// with nothing held in between, so concurrent conditional PUTs can both
    /// succeed and one change is lost. For showing what our client does there.
    pub fn raw() -> S3Server {
        Self::serve(false)
    }

    fn serve(atomic: bool) -> S3Server {
        let dir = server_dir();
        std::fs::create_dir(dir.path().join(BUCKET)).expect("the test bucket");
        let fs = FileSystem::new(dir.path()).expect("s3s-fs over the directory");
        let mut builder = S3ServiceBuilder::new(Served::new(fs, dir.path(), atomic));
        builder.set_auth(s3s::auth::SimpleAuth::from_single(ACCESS_KEY, SECRET_KEY));
        let service = builder.build();

        let runtime = Background::start("atlas-testkit-s3");
        let listener = crate::bind_loopback();
        let addr = listener.local_addr().expect("the S3 server's address");
        runtime.handle().spawn(async move {
            let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                return;
            };
            // Connections stay open between requests, as a real S3 keeps
            // them: clients reuse them, across the runtimes of a process too.
            let http = ConnBuilder::new(TokioExecutor::new());
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    continue;
                };
                // Small writes go out at once: with Nagle's algorithm a
                // response's body waits for the ACK of its head, which the
                // client delays by up to 40 ms.
                let _ = socket.set_nodelay(true);
                let conn = http
                    .serve_connection(TokioIo::new(socket), service.clone())
                    .into_owned();
                tokio::spawn(async move {
                    let _ = conn.await;
                });
            }
        });
        S3Server {
            endpoint: format!("http://{addr}"),
            dir,
            _runtime: runtime,
        }
    }

    /// `http://127.0.0.1:PORT`, for `--endpoint` or an OpenDAL S3 builder.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The directory objects are stored under (`<dir>/<bucket>/<key>`).
    pub fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }
}

/// A fresh directory under `<tmp>/atlas-testkit-s3/`, named after this
/// process. A server kept in a `static` is never dropped, so its directory
/// outlives the test process: those of processes that have ended are removed
/// here, by the next server started on the machine.
fn server_dir() -> tempfile::TempDir {
    let base = std::env::temp_dir().join("atlas-testkit-s3");
    std::fs::create_dir_all(&base).expect("a directory for the S3 servers");
    // Only where /proc tells which processes live (Linux); elsewhere nothing is swept.
    let proc_known = std::path::Path::new("/proc/self").exists();
    if let Ok(entries) = std::fs::read_dir(&base).map(|e| e.filter(|_| proc_known)) {
        for entry in entries.flatten() {
            let name = entry.file_name();
            let pid = name.to_string_lossy().split('-').next().map(str::to_owned);
            let ended = pid.is_some_and(|pid| {
                pid.parse::<u32>().is_ok() && !std::path::Path::new("/proc").join(&pid).exists()
            });
            if ended {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
    tempfile::Builder::new()
        .prefix(&format!("{}-", std::process::id()))
        .tempdir_in(&base)
        .expect("a directory for the S3 server")
}

/// `s3s-fs` behind three repairs: a suffix range longer than the object gets
/// the whole object as on S3 (`s3s-fs` 0.14 answers 500); uploads started
/// and not yet completed or aborted are remembered, so ListMultipartUploads
/// answers and aborting one already gone is NoSuchUpload as on S3 (`s3s-fs`
/// 0.14 does not implement the listing and answers AccessDenied); and, when `atomic`, a
/// per-object lock is held across each request that reads or replaces an
/// object, so a conditional write's check and its write are one step and a
/// read sees an object's content and ETag from the same write.
struct Served {
    inner: FileSystem,
    root: std::path::PathBuf,
    locks: Option<Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>>,
    /// Open uploads: (bucket, key, upload id) -> when it was created.
    uploads: Mutex<BTreeMap<UploadKey, SystemTime>>,
}

/// An open upload's bucket, key and id, in the order ListMultipartUploads lists them.
type UploadKey = (String, String, String);

/// The most uploads one ListMultipartUploads page holds, as on S3.
const MAX_UPLOADS_PER_PAGE: usize = 1000;

impl Served {
    fn new(inner: FileSystem, root: &std::path::Path, atomic: bool) -> Self {
        Served {
            inner,
            root: root.to_owned(),
            locks: atomic.then(|| Mutex::new(HashMap::new())),
            uploads: Mutex::new(BTreeMap::new()),
        }
    }

    fn open_uploads(&self) -> std::sync::MutexGuard<'_, BTreeMap<UploadKey, SystemTime>> {
        self.uploads.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One page of the open uploads of `input.bucket` under `input.prefix`,
    /// after the markers, ordered by key then upload id.
    fn list_uploads(&self, input: &ListMultipartUploadsInput) -> ListMultipartUploadsOutput {
        let prefix = input.prefix.clone().unwrap_or_default();
        let key_marker = input.key_marker.clone().unwrap_or_default();
        let id_marker = input.upload_id_marker.clone().unwrap_or_default();
        let max = input
            .max_uploads
            .and_then(|m| usize::try_from(m).ok())
            .filter(|&m| m > 0)
            .map_or(MAX_UPLOADS_PER_PAGE, |m| m.min(MAX_UPLOADS_PER_PAGE));
        let uploads = self.open_uploads();
        let mut after_markers = uploads.iter().filter(|((bucket, key, id), _)| {
            *bucket == input.bucket
                && key.starts_with(&prefix)
                && (key_marker.is_empty()
                    || key.as_str() > key_marker.as_str()
                    || (*key == key_marker
                        && !id_marker.is_empty()
                        && id.as_str() > id_marker.as_str()))
        });
        let page: Vec<MultipartUpload> = after_markers
            .by_ref()
            .take(max)
            .map(|((_, key, id), started)| MultipartUpload {
                key: Some(key.clone()),
                upload_id: Some(id.clone()),
                initiated: Some(Timestamp::from(*started)),
                ..Default::default()
            })
            .collect();
        let truncated = after_markers.next().is_some();
        let last = page.last();
        ListMultipartUploadsOutput {
            bucket: Some(input.bucket.clone()),
            prefix: input.prefix.clone(),
            key_marker: input.key_marker.clone(),
            upload_id_marker: input.upload_id_marker.clone(),
            max_uploads: i32::try_from(max).ok(),
            is_truncated: Some(truncated),
            next_key_marker: last.filter(|_| truncated).and_then(|u| u.key.clone()),
            next_upload_id_marker: last.filter(|_| truncated).and_then(|u| u.upload_id.clone()),
            uploads: Some(page),
            ..Default::default()
        }
    }

    async fn lock(&self, bucket: &str, key: &str) -> Option<tokio::sync::OwnedMutexGuard<()>> {
        let locks = self.locks.as_ref()?;
        let lock = {
            let mut locks = locks.lock().unwrap_or_else(|e| e.into_inner());
            locks.entry(format!("{bucket}/{key}")).or_default().clone()
        };
        Some(lock.lock_owned().await)
    }

    /// A suffix range at least as long as the object becomes "from byte 0".
    fn clamp_suffix(&self, input: &mut GetObjectInput) {
        if let Some(Range::Suffix { length }) = input.range {
            let path = self.root.join(&input.bucket).join(&input.key);
            if std::fs::metadata(path).is_ok_and(|m| length >= m.len()) {
                input.range = Some(Range::Int {
                    first: 0,
                    last: None,
                });
            }
        }
    }
}

/// Delegates one `S3` method to `s3s-fs`, under the object's lock when `$key` is given.
macro_rules! delegate {
    ($($name:ident($input:ty) -> $output:ty;)*) => {$(
        fn $name<'life0, 'async_trait>(
            &'life0 self,
            req: S3Request<$input>,
        ) -> Pin<Box<dyn Future<Output = S3Result<S3Response<$output>>> + Send + 'async_trait>>
        where
            'life0: 'async_trait,
            Self: 'async_trait,
        {
            self.inner.$name(req)
        }
    )*};
}

/// Delegates under the lock of the request's `bucket` and `key` (when atomic).
macro_rules! delegate_locked {
    ($($name:ident($input:ty) -> $output:ty;)*) => {$(
        fn $name<'life0, 'async_trait>(
            &'life0 self,
            req: S3Request<$input>,
        ) -> Pin<Box<dyn Future<Output = S3Result<S3Response<$output>>> + Send + 'async_trait>>
        where
            'life0: 'async_trait,
            Self: 'async_trait,
        {
            Box::pin(async move {
                let _held = self.lock(&req.input.bucket, &req.input.key).await;
                self.inner.$name(req).await
            })
        }
    )*};
}

// The trait is declared with `async_trait`, whose attribute cannot see into
// macro-made methods: they are written in its expanded (boxed-future) form.
impl S3 for Served {
    fn get_object<'life0, 'async_trait>(
        &'life0 self,
        mut req: S3Request<GetObjectInput>,
    ) -> Pin<Box<dyn Future<Output = S3Result<S3Response<GetObjectOutput>>> + Send + 'async_trait>>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(async move {
            let _held = self.lock(&req.input.bucket, &req.input.key).await;
            self.clamp_suffix(&mut req.input);
            self.inner.get_object(req).await
        })
    }
    fn create_multipart_upload<'life0, 'async_trait>(
        &'life0 self,
        req: S3Request<CreateMultipartUploadInput>,
    ) -> Pin<
        Box<
            dyn Future<Output = S3Result<S3Response<CreateMultipartUploadOutput>>>
                + Send
                + 'async_trait,
        >,
    >
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(async move {
            let (bucket, key) = (req.input.bucket.clone(), req.input.key.clone());
            let out = self.inner.create_multipart_upload(req).await?;
            if let Some(id) = &out.output.upload_id {
                self.open_uploads()
                    .insert((bucket, key, id.clone()), SystemTime::now());
            }
            Ok(out)
        })
    }
    fn complete_multipart_upload<'life0, 'async_trait>(
        &'life0 self,
        req: S3Request<CompleteMultipartUploadInput>,
    ) -> Pin<
        Box<
            dyn Future<Output = S3Result<S3Response<CompleteMultipartUploadOutput>>>
                + Send
                + 'async_trait,
        >,
    >
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(async move {
            let _held = self.lock(&req.input.bucket, &req.input.key).await;
            let upload = (
                req.input.bucket.clone(),
                req.input.key.clone(),
                req.input.upload_id.clone(),
            );
            let out = self.inner.complete_multipart_upload(req).await?;
            self.open_uploads().remove(&upload);
            Ok(out)
        })
    }
    fn abort_multipart_upload<'life0, 'async_trait>(
        &'life0 self,
        req: S3Request<AbortMultipartUploadInput>,
    ) -> Pin<
        Box<
            dyn Future<Output = S3Result<S3Response<AbortMultipartUploadOutput>>>
                + Send
                + 'async_trait,
        >,
    >
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(async move {
            let upload = (
                req.input.bucket.clone(),
                req.input.key.clone(),
                req.input.upload_id.clone(),
            );
            // S3 answers 404 NoSuchUpload for an upload that is gone;
            // `s3s-fs` 0.14 answers 403 AccessDenied.
            if !self.open_uploads().contains_key(&upload) {
                return Err(s3s::s3_error!(NoSuchUpload));
            }
            let out = self.inner.abort_multipart_upload(req).await?;
            self.open_uploads().remove(&upload);
            Ok(out)
        })
    }
    fn list_multipart_uploads<'life0, 'async_trait>(
        &'life0 self,
        req: S3Request<ListMultipartUploadsInput>,
    ) -> Pin<
        Box<
            dyn Future<Output = S3Result<S3Response<ListMultipartUploadsOutput>>>
                + Send
                + 'async_trait,
        >,
    >
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(async move { Ok(S3Response::new(self.list_uploads(&req.input))) })
    }
    delegate_locked! {
        put_object(PutObjectInput) -> PutObjectOutput;
        head_object(HeadObjectInput) -> HeadObjectOutput;
        delete_object(DeleteObjectInput) -> DeleteObjectOutput;
        copy_object(CopyObjectInput) -> CopyObjectOutput;
    }
    delegate! {
        create_bucket(CreateBucketInput) -> CreateBucketOutput;
        delete_bucket(DeleteBucketInput) -> DeleteBucketOutput;
        delete_objects(DeleteObjectsInput) -> DeleteObjectsOutput;
        get_bucket_location(GetBucketLocationInput) -> GetBucketLocationOutput;
        head_bucket(HeadBucketInput) -> HeadBucketOutput;
        list_buckets(ListBucketsInput) -> ListBucketsOutput;
        list_objects(ListObjectsInput) -> ListObjectsOutput;
        list_objects_v2(ListObjectsV2Input) -> ListObjectsV2Output;
        upload_part(UploadPartInput) -> UploadPartOutput;
        upload_part_copy(UploadPartCopyInput) -> UploadPartCopyOutput;
        list_parts(ListPartsInput) -> ListPartsOutput;
    }
}
