//! The read steps over real HTTP (`--http`): atlas-testkit's in-process S3
//! server behind its fault proxy, which holds every GET back by a fixed
//! delay before its first byte (20 ms by default), so the figures include a
//! real HTTP stack (connection reuse, SigV4 signing, no TLS) on top of the
//! latency the simulated store only sleeps.
//!
//! The three collections are uploaded through the S3 API (not copied into
//! the server's directory: the server then keeps each object's ETag, where
//! it would otherwise hash the whole object on every GET). Each
//! implementation reads through an OpenDAL S3 operator pointed at the
//! proxy, metered by the same [`MeterLayer`] as elsewhere: ours directly,
//! zarrs through `zarrs_opendal`, atlas-rust through [`OpendalStore`], an
//! `object_store::ObjectStore` over that operator (atlas-rust reads through
//! object_store, whose S3 client is not built into this bench; its ranged
//! GETs and HEADs go over the same HTTP stack, one request each).

use std::collections::HashMap;
use std::fmt;
use std::ops::Range;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use object_store::path::Path as OsPath;
use object_store::{
    Attributes, CopyOptions, GetOptions, GetRange, GetResult, GetResultPayload, ListResult,
    MultipartUpload, ObjectMeta, ObjectStore, PutMultipartOptions, PutOptions, PutPayload,
    PutResult,
};
use opendal::{BytesRange, Operator};

use crate::error::{BenchError, Result};
use crate::meter::{Meter, MeterLayer};

/// The in-process S3 server and the proxy in front of it, with the bench's
/// collections uploaded under one prefix each.
pub struct HttpStore {
    // The proxy first: it forwards to the server, so it stops first.
    proxy: atlas_testkit::FaultProxy,
    _server: atlas_testkit::S3Server,
}

impl HttpStore {
    /// Starts the server and the proxy (every GET held back by `delay`) and
    /// uploads each `(prefix, directory)` of `collections` (every file under
    /// the directory, as `prefix/relative path`) straight to the server.
    pub async fn start(delay: Duration, collections: &[(&str, &Path)]) -> Result<Self> {
        let server = atlas_testkit::S3Server::start();
        let proxy = atlas_testkit::FaultProxy::start(
            server.endpoint(),
            atlas_testkit::FaultPlan::none().with_slow(1000, delay),
        );
        let upload = s3_operator(server.endpoint(), "/")?;
        for (prefix, dir) in collections {
            upload_dir(&upload, dir, dir, prefix).await?;
        }
        Ok(Self {
            proxy,
            _server: server,
        })
    }

    /// An operator on `prefix` through the proxy, not metered.
    pub fn raw_operator(&self, prefix: &str) -> Result<Operator> {
        s3_operator(self.proxy.endpoint(), &format!("/{prefix}/"))
    }

    /// An operator on `prefix` through the proxy, metered by `meter`.
    pub fn operator(&self, prefix: &str, meter: &Meter) -> Result<Operator> {
        Ok(self
            .raw_operator(prefix)?
            .layer(MeterLayer::new(meter.clone())))
    }

    /// An object store on `prefix` through the proxy, metered by `meter` on
    /// the operator under it (so every HTTP request it makes is counted).
    pub fn object_store(&self, prefix: &str, meter: &Meter) -> Result<Arc<dyn ObjectStore>> {
        Ok(Arc::new(OpendalStore::new(self.operator(prefix, meter)?)))
    }
}

/// An S3 operator on the in-process server's bucket at `endpoint`, under `root`.
pub(crate) fn s3_operator(endpoint: &str, root: &str) -> Result<Operator> {
    // Our facade installs OpenDAL's HTTP transport on open; the peers and
    // the upload do not go through it.
    atlas_io::install_http_transport();
    let builder = opendal::services::S3::default()
        .bucket(atlas_testkit::BUCKET)
        .endpoint(endpoint)
        .region(atlas_testkit::REGION)
        .access_key_id(atlas_testkit::ACCESS_KEY)
        .secret_access_key(atlas_testkit::SECRET_KEY)
        .root(root)
        .disable_config_load()
        .disable_ec2_metadata();
    Ok(Operator::new(builder)?)
}

/// Uploads every file under `dir` (walking from `base`) as `prefix/<path from base>`.
async fn upload_dir(op: &Operator, base: &Path, dir: &Path, prefix: &str) -> Result {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            Box::pin(upload_dir(op, base, &path, prefix)).await?;
            continue;
        }
        let rel = path
            .strip_prefix(base)
            .map_err(|e| BenchError::Usage(format!("{}: {e}", path.display())))?;
        let key = format!("{prefix}/{}", rel.to_string_lossy());
        op.write(&key, std::fs::read(&path)?).await?;
    }
    Ok(())
}

/// An `object_store::ObjectStore` that reads through an OpenDAL operator:
/// `head` is a stat, a ranged get one ranged read (a suffix or open-ended
/// one needs the length: from the last `head` of that path, else a stat
/// first); nothing else is supported. For atlas-rust, which reads through
/// object_store.
pub struct OpendalStore {
    op: Operator,
    sizes: Mutex<HashMap<String, u64>>,
}

impl OpendalStore {
    /// A store over `op`.
    pub fn new(op: Operator) -> Self {
        Self {
            op,
            sizes: Mutex::new(HashMap::new()),
        }
    }

    async fn size(&self, path: &str) -> object_store::Result<u64> {
        if let Some(&size) = self
            .sizes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(path)
        {
            return Ok(size);
        }
        let meta = self.op.stat(path).await.map_err(|e| os_error(path, e))?;
        let size = meta.content_length();
        self.sizes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(path.to_owned(), size);
        Ok(size)
    }
}

impl fmt::Debug for OpendalStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "OpendalStore({:?})", self.op.info().scheme())
    }
}

impl fmt::Display for OpendalStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "OpendalStore({})", self.op.info().scheme())
    }
}

fn os_error(path: &str, e: opendal::Error) -> object_store::Error {
    match e.kind() {
        opendal::ErrorKind::NotFound => object_store::Error::NotFound {
            path: path.to_owned(),
            source: Box::new(e),
        },
        _ => object_store::Error::Generic {
            store: "OpendalStore",
            source: Box::new(e),
        },
    }
}

fn not_supported(what: &str) -> object_store::Error {
    object_store::Error::NotSupported {
        source: format!("OpendalStore only reads: {what} is not supported").into(),
    }
}

#[async_trait]
impl ObjectStore for OpendalStore {
    async fn put_opts(
        &self,
        _location: &OsPath,
        _payload: PutPayload,
        _opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        Err(not_supported("put"))
    }

    async fn put_multipart_opts(
        &self,
        _location: &OsPath,
        _opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        Err(not_supported("put_multipart"))
    }

    async fn get_opts(
        &self,
        location: &OsPath,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        let path = location.as_ref();
        let meta = |size: u64| ObjectMeta {
            location: location.clone(),
            last_modified: Default::default(),
            size,
            e_tag: None,
            version: None,
        };
        if options.head {
            // A HEAD is always a request, as on object_store's S3 client.
            self.sizes
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(path);
            let size = self.size(path).await?;
            return Ok(one_shot(meta(size), 0..0, Bytes::new()));
        }
        let (range, size): (Range<u64>, u64) = match options.range {
            Some(GetRange::Bounded(r)) => {
                let size = self
                    .sizes
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get(path)
                    .copied()
                    .unwrap_or(r.end);
                (r, size)
            }
            Some(other) => {
                let size = self.size(path).await?;
                let r = other
                    .as_range(size)
                    .map_err(|e| object_store::Error::Generic {
                        store: "OpendalStore",
                        source: Box::new(e),
                    })?;
                (r, size)
            }
            None => {
                let bytes = self.op.read(path).await.map_err(|e| os_error(path, e))?;
                let size = bytes.len() as u64;
                return Ok(one_shot(meta(size), 0..size, bytes.to_bytes()));
            }
        };
        let bytes = self
            .op
            .read_with(path)
            .range(BytesRange::from(range.clone()))
            .await
            .map_err(|e| os_error(path, e))?
            .to_bytes();
        Ok(one_shot(meta(size), range, bytes))
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<OsPath>>,
    ) -> BoxStream<'static, object_store::Result<OsPath>> {
        locations.map(|_| Err(not_supported("delete"))).boxed()
    }

    fn list(
        &self,
        _prefix: Option<&OsPath>,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        futures::stream::once(async { Err(not_supported("list")) }).boxed()
    }

    async fn list_with_delimiter(
        &self,
        _prefix: Option<&OsPath>,
    ) -> object_store::Result<ListResult> {
        Err(not_supported("list"))
    }

    async fn copy_opts(
        &self,
        _from: &OsPath,
        _to: &OsPath,
        _options: CopyOptions,
    ) -> object_store::Result<()> {
        Err(not_supported("copy"))
    }
}

fn one_shot(meta: ObjectMeta, range: Range<u64>, bytes: Bytes) -> GetResult {
    GetResult {
        payload: GetResultPayload::Stream(futures::stream::once(async move { Ok(bytes) }).boxed()),
        meta,
        range,
        attributes: Attributes::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::ObjectStoreExt;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_object_store_over_s3_reads_ranges_suffixes_and_heads_through_the_slow_proxy() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let body: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::create_dir_all(tmp.path().join("sub")).expect("dir");
        std::fs::write(tmp.path().join("sub/x"), &body).expect("file");
        let http = HttpStore::start(Duration::from_millis(20), &[("c", tmp.path())])
            .await
            .expect("server");
        let meter = Meter::default();
        let store = http.object_store("c", &meter).expect("store");
        let path = OsPath::from("sub/x");
        let started = std::time::Instant::now();
        let got = store.get_range(&path, 100..400).await.expect("range");
        assert!(
            started.elapsed() >= Duration::from_millis(20),
            "the proxy holds GETs back"
        );
        assert_eq!(&got[..], &body[100..400]);
        assert_eq!(store.head(&path).await.expect("head").size, 10_000);
        let tail = store
            .get_opts(
                &path,
                GetOptions {
                    range: Some(GetRange::Suffix(16)),
                    ..Default::default()
                },
            )
            .await
            .expect("suffix");
        assert_eq!(tail.range, 9_984..10_000);
        assert_eq!(&tail.bytes().await.expect("body")[..], &body[9_984..]);
        let r = meter.reading();
        assert_eq!((r.reads, r.stats), (2, 1), "{r:?}");
        // Every head is a request of its own.
        store.head(&path).await.expect("head");
        assert_eq!(meter.reading().stats, 2);
        // The operator reads the same object.
        let op = http.operator("c", &meter).expect("operator");
        assert_eq!(op.read("sub/x").await.expect("read").to_vec(), body);
    }
}
