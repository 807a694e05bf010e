//! NetCDF files on object stores and HTTP servers (`s3://`, `gs://`, `az://`,
//! `http(s)://`), read through the same transport, storage options and
//! retries as collections ([`atlas::Location`]).
//!
//! A source URL names one file (it ends in a NetCDF suffix), a folder
//! (listed for NetCDF files, recursively or not), or a glob in its last
//! component (`s3://bucket/dac/aoml/1900022/profiles/D*.nc`). Plain HTTP
//! cannot list: give it file URLs. Files are identified by their URL, held
//! in the ingest's file list as a path (`PathBuf::from(url)`), so reports
//! name the URL.
//!
//! A file is fetched whole (one read, retried by the storage layer; a read
//! that still fails transiently is tried again as a whole, up to
//! [`FILE_ATTEMPTS`] times), written to a temporary file the NetCDF reader
//! opens, and mapped; the ingest keeps a bounded window of files in flight,
//! so memory is bounded by that window, not by the number of files.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use atlas::{Access, AtlasError, ErrorClass, IoError, IoErrorKind, Location, StorageOptions};
use futures::TryStreamExt;

use crate::discover::{is_netcdf, matches};
use crate::error::{FileError, IngestError};

/// Attempts at fetching one file whose reads keep failing transiently
/// (each read is already retried by the storage layer's policy).
pub const FILE_ATTEMPTS: u32 = 3;

/// Whether `spec` is a URL of a remote backend (any scheme but `file`).
pub fn is_url(spec: &str) -> bool {
    spec.split_once("://")
        .is_some_and(|(scheme, _)| scheme != "file" && !scheme.is_empty() && !scheme.contains('/'))
}

/// The URL of a file the ingest's list holds as a path, if it is one.
pub(crate) fn url_of(path: &Path) -> Option<&str> {
    path.to_str().filter(|s| is_url(s))
}

/// `scheme://bucket` (or `scheme://host`) and the object path under it.
fn split_root(url: &str) -> Option<(String, &str)> {
    let (scheme, rest) = url.split_once("://")?;
    let (host, object) = rest.split_once('/').unwrap_or((rest, ""));
    Some((format!("{scheme}://{host}"), object.trim_start_matches('/')))
}

/// Resolved backends, one per `scheme://bucket` (or host), shared by every
/// file under it.
#[derive(Debug)]
pub(crate) struct Remotes {
    storage: StorageOptions,
    roots: tokio::sync::Mutex<HashMap<String, Location>>,
}

impl Remotes {
    pub(crate) fn new(storage: StorageOptions) -> Self {
        Remotes {
            storage,
            roots: tokio::sync::Mutex::new(HashMap::new()),
        }
    }

    async fn root(&self, root: &str) -> Result<Location, AtlasError> {
        let mut roots = self.roots.lock().await;
        if let Some(location) = roots.get(root) {
            return Ok(location.clone());
        }
        let location = Location::resolve(root, &self.storage, Access::Read).await?;
        roots.insert(root.to_owned(), location.clone());
        Ok(location)
    }

    /// The bytes of the file at `url`, fetched whole.
    pub(crate) async fn fetch(&self, url: &str) -> Result<Vec<u8>, AtlasError> {
        let (root, object) = split_root(url)
            .ok_or_else(|| AtlasError::invalid_use(format!("{url}: not a URL of a file")))?;
        let location = self.root(&root).await?;
        let path = location.object(object);
        let mut attempt = 1;
        loop {
            match location.operator().read(&path).await {
                Ok(buffer) => return Ok(buffer.to_vec()),
                Err(e) => {
                    let error = AtlasError::Io(IoError::from_opendal(e, "read", url));
                    if error.class() != ErrorClass::Retryable || attempt >= FILE_ATTEMPTS {
                        return Err(error);
                    }
                    tracing::debug!(%url, attempt, "fetch failed transiently: {error}");
                    attempt += 1;
                }
            }
        }
    }
}

/// Runs `work` on a blocking thread over the file at `path`: a local path as
/// it is, a URL fetched whole through `remotes` and staged in a temporary
/// file first. Returns what `work` gave (or why the file could not be had)
/// and the file's size.
///
/// Fetch and work run on a task of their own, so the files of an ingest's
/// window go on arriving and being decoded while the caller is busy with
/// earlier ones; a future polled only by the caller's stream would stall
/// whenever the caller waits for something else. Errors only when the task
/// panicked.
pub(crate) async fn on_local_copy<T: Send + 'static>(
    path: PathBuf,
    remotes: Arc<Remotes>,
    work: impl FnOnce(&Path) -> T + Send + 'static,
) -> Result<(Result<T, FileError>, u64), tokio::task::JoinError> {
    tokio::spawn(async move {
        let Some(url) = url_of(&path) else {
            return tokio::task::spawn_blocking(move || {
                let bytes = std::fs::metadata(&path).map_or(0, |m| m.len());
                (Ok(work(&path)), bytes)
            })
            .await;
        };
        let fetched = match remotes.fetch(url).await {
            Ok(bytes) => bytes,
            Err(e) => return Ok((Err(FileError::Fetch(Box::new(e))), 0)),
        };
        tokio::task::spawn_blocking(move || {
            let bytes = fetched.len() as u64;
            let staged = tempfile::NamedTempFile::new()
                .and_then(|mut f| std::io::Write::write_all(&mut f, &fetched).map(|()| f));
            match staged {
                Ok(file) => (Ok(work(file.path())), bytes),
                Err(e) => (Err(FileError::Stage(e)), bytes),
            }
        })
        .await
    })
    .await?
}

/// The files `sources` name: local ones as [`crate::discover`] finds them,
/// URLs as listed (folders and globs) or taken as given (file URLs), all
/// sorted, without repeats. One listing per folder or glob source; none for
/// file URLs.
///
/// # Errors
/// [`IngestError::Remote`] when a URL cannot be resolved or listed;
/// [`IngestError::NoInputs`] when nothing matches; what
/// [`crate::discover`] returns for local sources.
pub async fn discover_sources(
    sources: &[String],
    recursive: bool,
    storage: &StorageOptions,
) -> Result<Vec<PathBuf>, IngestError> {
    let (urls, local): (Vec<&String>, Vec<&String>) = sources.iter().partition(|s| is_url(s));
    let mut files = if local.is_empty() {
        Vec::new()
    } else {
        let local: Vec<PathBuf> = local.iter().map(PathBuf::from).collect();
        crate::discover(&local, recursive)?
    };
    for url in urls {
        files.extend(list_url(url, recursive, storage).await?);
    }
    files.sort();
    files.dedup();
    if files.is_empty() {
        return Err(IngestError::NoInputs {
            sources: sources.join(", "),
        });
    }
    Ok(files)
}

async fn list_url(
    url: &str,
    recursive: bool,
    storage: &StorageOptions,
) -> Result<Vec<PathBuf>, IngestError> {
    let failed = |source: AtlasError| IngestError::Remote {
        url: url.to_owned(),
        source,
    };
    let (folder, last) = url
        .trim_end_matches('/')
        .rsplit_once('/')
        .unwrap_or((url, ""));
    let pattern: Option<Vec<char>> = last.contains(['*', '?']).then(|| last.chars().collect());
    if pattern.is_none() && !url.ends_with('/') && is_netcdf(Path::new(last)) {
        return Ok(vec![PathBuf::from(url)]);
    }
    let (base, recursive) = match &pattern {
        Some(_) => (folder, false),
        None => (url.trim_end_matches('/'), recursive),
    };
    if base.starts_with("http://") || base.starts_with("https://") {
        return Err(failed(AtlasError::invalid_use(
            "an http(s) server cannot be listed: give the URLs of the files",
        )));
    }
    let location = Location::resolve(base, storage, Access::Read)
        .await
        .map_err(failed)?;
    let dir = location.object("");
    let dir = if dir.is_empty() || dir.ends_with('/') {
        dir
    } else {
        format!("{dir}/")
    };
    let lister = location
        .operator()
        .lister_with(&dir)
        .recursive(recursive)
        .await;
    let mut lister = match lister {
        Ok(l) => l,
        Err(e) => {
            let error = IoError::from_opendal(e, "list", base);
            if error.kind() == IoErrorKind::NotFound {
                return Ok(Vec::new());
            }
            return Err(failed(AtlasError::Io(error)));
        }
    };
    let mut found = Vec::new();
    while let Some(entry) = lister
        .try_next()
        .await
        .map_err(|e| failed(AtlasError::Io(IoError::from_opendal(e, "list", base))))?
    {
        if entry.metadata().is_dir() {
            continue;
        }
        let Some(relative) = entry.path().strip_prefix(dir.as_str()) else {
            continue;
        };
        let name = relative.rsplit('/').next().unwrap_or(relative);
        let wanted = match &pattern {
            Some(p) => !relative.contains('/') && matches(p, &name.chars().collect::<Vec<_>>()),
            None => is_netcdf(Path::new(name)),
        };
        if wanted {
            found.push(PathBuf::from(format!("{base}/{relative}")));
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_splits_into_its_bucket_and_the_object() {
        let split = |url| split_root(url).map(|(root, object)| (root, object.to_owned()));
        assert_eq!(
            split("s3://bucket/dac/a.nc"),
            Some(("s3://bucket".to_owned(), "dac/a.nc".to_owned()))
        );
        assert_eq!(
            split("https://host:8080/x/y.nc"),
            Some(("https://host:8080".to_owned(), "x/y.nc".to_owned()))
        );
        assert_eq!(
            split("s3://bucket"),
            Some(("s3://bucket".to_owned(), String::new()))
        );
        assert!(is_url("gs://b/x") && !is_url("file:///x") && !is_url("/a/b"));
    }
}
