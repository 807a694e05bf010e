//! Where a collection lives: a path or URL becomes an OpenDAL operator rooted
//! at the collection's directory (the one holding `data.atlas`).
//!
//! | location                | backend                                   |
//! |-------------------------|-------------------------------------------|
//! | `path/to/dir`           | local filesystem                          |
//! | `file:///abs/dir`       | local filesystem                          |
//! | `s3://bucket/prefix`    | S3 or any S3-compatible server            |
//! | `gs://bucket/prefix`    | Google Cloud Storage                      |
//! | `az://container/prefix` | Azure Blob Storage                        |
//! | `http(s)://host/path`   | plain HTTP range reads (read-only)        |
//!
//! A path or URL that names the container itself (`…/data.atlas`) means its
//! directory, on every backend.
//!
//! Every operator built here carries a [`RetryPolicy`] (OpenDAL's timeout and
//! retry layers, on by default; see [`StorageOptions::retry`]).
//!
//! The backend is configured through OpenDAL's own configuration loading
//! ([`opendal::Operator::via_iter`]): the URL gives the bucket (or container)
//! and root, [`StorageOptions`] gives any other key of that backend's OpenDAL
//! configuration (`endpoint`, `region`, `access_key_id`, `credential_path`,
//! `account_name`, `sas_token`, ...). Unless turned off with
//! [`StorageOptions::from_env`], the usual environment variables fill what the
//! options leave unset:
//!
//! - S3: `AWS_ENDPOINT_URL_S3`/`AWS_ENDPOINT_URL`, `AWS_REGION`/`AWS_DEFAULT_REGION`,
//!   `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN` (and
//!   OpenDAL's own credential chain: profiles, web identity, instance metadata);
//!   without a region, an S3-compatible endpoint is signed for `us-east-1` and
//!   AWS is asked where the bucket lives;
//! - GCS: `GOOGLE_APPLICATION_CREDENTIALS`;
//! - Azure: `AZURE_STORAGE_CONNECTION_STRING`, or `AZURE_STORAGE_ACCOUNT(_NAME)`,
//!   `AZURE_STORAGE_ACCOUNT_KEY`/`AZURE_STORAGE_KEY`, `AZURE_STORAGE_SAS_TOKEN`,
//!   `AZURE_STORAGE_ENDPOINT`.

mod address;
mod azure;
mod gcs;
mod http;
mod local;
mod options;
mod s3;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use atlas_format::CONTAINER_FILE;
use atlas_io::MultipartUploads;
use opendal::Operator;

use crate::error::{AtlasError, Result};

pub use address::Address;
pub use options::StorageOptions;

/// What the caller will do at a location.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Access {
    /// Read an existing collection: a local directory must exist.
    Read,
    /// Write: delete datasets (the mask) or create a collection; a missing
    /// local directory is created, and a read-only backend is refused.
    Write,
}

/// The storage family a location names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Scheme {
    /// Local filesystem (a bare path or `file://`).
    Local,
    /// S3 or S3-compatible (`s3://`, `s3a://`).
    S3,
    /// Google Cloud Storage (`gs://`, `gcs://`).
    Gcs,
    /// Azure Blob Storage (`az://`, `azure://`, `azblob://`).
    Azure,
    /// Plain HTTP(S), read-only.
    Http,
    /// Another OpenDAL service, reached through an operator the caller built
    /// (an in-memory store, say).
    Other,
}

impl Scheme {
    /// The scheme of `location` and the part after `scheme://` (the whole
    /// string for a bare path; the whole URL for http).
    ///
    /// # Errors
    /// [`AtlasError::InvalidLocation`] for a scheme no backend serves.
    pub fn split(location: &str) -> Result<(Scheme, &str)> {
        let Some((scheme, rest)) = location.split_once("://") else {
            return Ok((Scheme::Local, location));
        };
        let scheme = match scheme.to_ascii_lowercase().as_str() {
            "file" => Scheme::Local,
            "s3" | "s3a" => Scheme::S3,
            "gs" | "gcs" => Scheme::Gcs,
            "az" | "azure" | "azblob" => Scheme::Azure,
            "http" | "https" => return Ok((Scheme::Http, location)),
            other => {
                return Err(invalid(
                    location,
                    format!(
                        "unknown scheme {other:?} (use a path, file://, s3://, gs://, az://, http:// or https://)"
                    ),
                ));
            }
        };
        Ok((scheme, rest))
    }

    /// The family of an operator's OpenDAL service.
    fn of_service(service: &str) -> Scheme {
        match service {
            "fs" => Scheme::Local,
            "s3" => Scheme::S3,
            "gcs" => Scheme::Gcs,
            "azblob" => Scheme::Azure,
            "http" => Scheme::Http,
            _ => Scheme::Other,
        }
    }
}

/// A resolved location: an operator, and the prefix of the collection in it.
///
/// Resolving a path or URL roots the operator at the collection (the prefix is
/// empty); an operator handed in by the caller keeps the prefix it came with.
#[derive(Debug, Clone)]
pub struct Location {
    op: Operator,
    prefix: String,
    scheme: Scheme,
    display: String,
    local_dir: Option<PathBuf>,
    uploads: Option<MultipartUploads>,
}

impl Location {
    /// Resolves `location` (a path or URL) for `access`. Builds the operator
    /// only; no request is sent (except AWS's region lookup for an S3 bucket
    /// with no region configured).
    ///
    /// # Errors
    /// [`AtlasError::InvalidLocation`] for a URL no backend accepts (unknown
    /// scheme, no bucket, a write to http, a configuration OpenDAL refuses);
    /// [`AtlasError::Io`] when a local directory cannot be read or created.
    pub async fn resolve(
        location: &str,
        options: &StorageOptions,
        access: Access,
    ) -> Result<Location> {
        atlas_io::install_http_transport();
        opendal::init_default_registry();
        let (scheme, rest) = Scheme::split(location)?;
        // A URL naming the container means its directory, as a local path does.
        let directory;
        let rest = match (scheme, rest.trim_end_matches('/').rsplit_once('/')) {
            (Scheme::Local, _) => rest,
            (_, Some((dir, CONTAINER_FILE))) if !dir.is_empty() && !dir.ends_with('/') => {
                directory = dir.to_owned();
                &directory
            }
            _ => rest,
        };
        let mut uploads = None;
        let op = match scheme {
            // Local reads and writes fail for good or not at all: no retry layer.
            Scheme::Local => return Location::local(Path::new(rest), location, access),
            Scheme::S3 => {
                let (op, s3_uploads) = s3::operator(rest, options, location).await?;
                uploads = s3_uploads.map(|u| u.retry(options.retry.clone()));
                op
            }
            Scheme::Gcs => gcs::operator(rest, options, location)?,
            Scheme::Azure => azure::operator(rest, options, location)?,
            Scheme::Http => {
                if access == Access::Write {
                    return Err(invalid(location, "an http(s) location is read-only"));
                }
                // For http `rest` is the whole URL (less a trailing `data.atlas`).
                http::operator(options, rest)?
            }
            Scheme::Other => return Err(invalid(location, "no backend serves this location")),
        };
        Ok(Location {
            op: options.retry.apply(op),
            prefix: String::new(),
            scheme,
            display: location.to_owned(),
            local_dir: None,
            uploads,
        })
    }

    /// The local directory `path` (shown as `display`).
    fn local(path: &Path, display: &str, access: Access) -> Result<Location> {
        let (op, dir) = local::operator(path, access, display)?;
        Ok(Location {
            op,
            prefix: String::new(),
            scheme: Scheme::Local,
            display: display.to_owned(),
            local_dir: Some(dir),
            uploads: None,
        })
    }

    /// Resolves the local directory `path` for `access`, as [`resolve`](Self::resolve)
    /// does a bare path, without reading the path as text.
    ///
    /// # Errors
    /// [`AtlasError::InvalidLocation`] for a path that is not a directory;
    /// [`AtlasError::Io`] when it cannot be read (or, for writing, created).
    pub fn resolve_path(path: &Path, access: Access) -> Result<Location> {
        Location::local(path, &path.to_string_lossy(), access)
    }

    /// The collection under `prefix` of an operator the caller built. Taken
    /// as it is: no retry layer is added, and no multipart uploads are known.
    pub fn from_operator(op: Operator, prefix: &str) -> Location {
        let prefix = prefix.trim_matches('/').to_owned();
        let info = op.info();
        let display = format!("{}://{}{}", info.scheme(), info.name(), info.root());
        Location {
            scheme: Scheme::of_service(info.scheme()),
            display: atlas_io::object_path(&display, &prefix),
            op,
            prefix,
            local_dir: None,
            uploads: None,
        }
    }

    /// The multipart uploads of an S3 location, reached with the operator's
    /// endpoint and credentials: what [`VerifyOptions::multipart_uploads`](crate::VerifyOptions::multipart_uploads)
    /// and [`atlas_io::remove_leftovers`] take. `None` on other backends (they
    /// keep no such uploads) and for S3 directory buckets (not supported).
    pub fn multipart_uploads(&self) -> Option<&MultipartUploads> {
        self.uploads.as_ref()
    }

    /// The operator.
    pub fn operator(&self) -> &Operator {
        &self.op
    }

    /// The collection's prefix in [`operator`](Self::operator) (empty when the
    /// operator is rooted at the collection).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The path of object `name` of the collection, relative to the operator.
    pub fn object(&self, name: &str) -> String {
        atlas_io::object_path(&self.prefix, name)
    }

    /// The storage family.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// The location as the caller wrote it.
    pub fn display(&self) -> &str {
        &self.display
    }

    /// The collection's directory, for a local location (canonical).
    pub fn local_dir(&self) -> Option<&Path> {
        self.local_dir.as_deref()
    }

    /// The location of `relative` (a plain relative path such as
    /// `members/<id>`) under this one: the same operator and credentials with
    /// the prefix extended, or, on local disk, the subdirectory with an
    /// operator of its own (created when writing).
    ///
    /// # Errors
    /// As [`resolve_path`](Self::resolve_path) on local disk; none elsewhere.
    pub(crate) fn child(&self, relative: &str, access: Access) -> Result<Location> {
        let display = atlas_io::object_path(&self.display, relative);
        if let Some(dir) = &self.local_dir {
            return Location::local(&dir.join(relative), &display, access);
        }
        Ok(Location {
            op: self.op.clone(),
            prefix: atlas_io::object_path(&self.prefix, relative),
            scheme: self.scheme,
            display,
            local_dir: None,
            uploads: self.uploads.clone(),
        })
    }

    /// The parts a reader or writer keeps.
    pub(crate) fn into_parts(
        self,
    ) -> (Operator, String, Option<PathBuf>, Option<MultipartUploads>) {
        (self.op, self.prefix, self.local_dir, self.uploads)
    }
}

pub(crate) fn invalid(location: &str, reason: impl Into<String>) -> AtlasError {
    AtlasError::InvalidLocation {
        location: location.to_owned(),
        reason: reason.into(),
    }
}

fn build<'a>(
    location: &str,
    scheme: &str,
    config: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<Operator> {
    let config: Vec<(String, String)> = config
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    Operator::via_iter(scheme, config).map_err(|e| configuration_error(location, e))
}

fn configuration_error(location: &str, e: opendal::Error) -> AtlasError {
    invalid(location, format!("backend configuration refused: {e}"))
}

/// `bucket/prefix` → (`bucket`, `prefix`), the prefix without outer slashes.
fn bucket_and_root<'a>(rest: &'a str, location: &str, what: &str) -> Result<(&'a str, &'a str)> {
    let rest = rest.trim_start_matches('/');
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    if bucket.is_empty() {
        return Err(invalid(location, format!("missing {what} name")));
    }
    Ok((bucket, prefix.trim_matches('/')))
}

/// The first non-empty environment variable of `names`, if the options allow the environment.
fn env(options: &StorageOptions, names: &[&str]) -> Option<String> {
    if !options.from_env {
        return None;
    }
    names
        .iter()
        .find_map(|n| std::env::var(n).ok().filter(|v| !v.is_empty()))
}

/// The configuration map: environment defaults under the explicit options.
fn merged(
    options: &StorageOptions,
    defaults: impl IntoIterator<Item = (&'static str, Option<String>)>,
) -> BTreeMap<String, String> {
    let mut map: BTreeMap<String, String> = defaults
        .into_iter()
        .filter_map(|(k, v)| Some((k.to_owned(), v?)))
        .collect();
    map.extend(options.config.clone());
    map
}

fn finish(location: &str, scheme: &str, map: BTreeMap<String, String>) -> Result<Operator> {
    build(
        location,
        scheme,
        map.iter().map(|(k, v)| (k.as_str(), v.as_str())),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use atlas_io::IoErrorKind;

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    fn resolve(location: &str, options: &StorageOptions, access: Access) -> Result<Location> {
        rt().block_on(Location::resolve(location, options, access))
    }

    #[test]
    fn a_bare_path_is_local_and_a_url_names_its_backend() {
        assert_eq!(Scheme::split("some/dir").unwrap().0, Scheme::Local);
        assert_eq!(
            Scheme::split("file:///tmp/x").unwrap(),
            (Scheme::Local, "/tmp/x")
        );
        assert_eq!(Scheme::split("s3://b/p").unwrap(), (Scheme::S3, "b/p"));
        assert_eq!(Scheme::split("gs://b/p").unwrap(), (Scheme::Gcs, "b/p"));
        assert_eq!(Scheme::split("az://c/p").unwrap(), (Scheme::Azure, "c/p"));
        assert_eq!(Scheme::split("https://h/p").unwrap().0, Scheme::Http);
    }

    #[test]
    fn an_unknown_scheme_is_an_invalid_location() {
        let err = Scheme::split("ftp://h/p").unwrap_err();
        assert!(
            matches!(&err, AtlasError::InvalidLocation { reason, .. } if reason.contains("unknown scheme")),
            "{err}"
        );
    }

    #[test]
    fn a_bucket_url_splits_into_bucket_and_root() {
        assert_eq!(
            bucket_and_root("bucket/a/b/", "s3://bucket/a/b/", "bucket").unwrap(),
            ("bucket", "a/b")
        );
        assert_eq!(
            bucket_and_root("bucket", "s3://bucket", "bucket").unwrap(),
            ("bucket", "")
        );
        assert!(matches!(
            bucket_and_root("", "s3://", "bucket"),
            Err(AtlasError::InvalidLocation { .. })
        ));
    }

    #[test]
    fn an_http_location_refuses_writes() {
        let err = resolve(
            "http://127.0.0.1:1/c",
            &StorageOptions::default(),
            Access::Write,
        )
        .unwrap_err();
        assert!(
            matches!(&err, AtlasError::InvalidLocation { reason, .. } if reason.contains("read-only")),
            "{err}"
        );
    }

    #[test]
    fn reading_a_missing_local_directory_is_not_found_and_creates_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let missing = tmp.path().join("nope");
        let err = resolve(
            missing.to_str().unwrap(),
            &StorageOptions::default(),
            Access::Read,
        )
        .unwrap_err();
        assert!(
            matches!(&err, AtlasError::Io(io) if io.kind() == IoErrorKind::NotFound),
            "{err}"
        );
        assert!(!missing.exists());
    }

    #[test]
    fn writing_to_a_missing_local_directory_creates_it() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a/b");
        let loc = resolve(
            &format!("file://{}", dir.display()),
            &StorageOptions::default(),
            Access::Write,
        )
        .unwrap();
        assert!(dir.is_dir());
        assert_eq!(loc.local_dir(), Some(dir.canonicalize().unwrap().as_path()));
        assert_eq!(loc.scheme(), Scheme::Local);
    }

    #[test]
    fn a_path_naming_the_container_means_its_directory() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join(CONTAINER_FILE), b"x").unwrap();
        let loc = resolve(
            tmp.path().join(CONTAINER_FILE).to_str().unwrap(),
            &StorageOptions::default(),
            Access::Read,
        )
        .unwrap();
        assert_eq!(
            loc.local_dir(),
            Some(tmp.path().canonicalize().unwrap().as_path())
        );
    }

    #[test]
    fn explicit_options_reach_the_s3_backend_configuration() {
        let options = StorageOptions::new()
            .from_env(false)
            .endpoint("http://127.0.0.1:9")
            .set("access_key_id", "k")
            .set("secret_access_key", "s");
        let loc = resolve("s3://bucket/some/prefix", &options, Access::Read).unwrap();
        let info = loc.operator().info();
        assert_eq!(info.name(), "bucket");
        assert_eq!(info.root(), "/some/prefix/");
    }

    #[test]
    fn a_url_naming_the_container_means_its_directory() {
        let options = StorageOptions::new()
            .from_env(false)
            .endpoint("http://127.0.0.1:9")
            .set("access_key_id", "k")
            .set("secret_access_key", "s");
        for url in [
            "s3://bucket/some/prefix/data.atlas",
            "s3://bucket/some/prefix/data.atlas/",
            "s3://bucket/some/prefix",
        ] {
            let loc = resolve(url, &options, Access::Read).unwrap();
            assert_eq!(loc.operator().info().root(), "/some/prefix/", "{url}");
        }
        // A bucket named like the container keeps its name.
        let loc = resolve("s3://data.atlas", &options, Access::Read).unwrap();
        assert_eq!(loc.operator().info().name(), "data.atlas");
        let http = resolve(
            "http://127.0.0.1:9/c/data.atlas",
            &StorageOptions::default(),
            Access::Read,
        )
        .unwrap();
        assert_eq!(http.operator().info().root(), "/c/");
    }

    #[test]
    fn a_backend_value_of_the_wrong_type_is_an_invalid_location() {
        // OpenDAL's configuration loading ignores unknown keys; a value of the
        // wrong type for a known key is refused.
        let options = StorageOptions::new()
            .from_env(false)
            .endpoint("http://127.0.0.1:9")
            .set("enable_versioning", "not-a-bool");
        let err = resolve("s3://bucket", &options, Access::Read).unwrap_err();
        assert!(matches!(err, AtlasError::InvalidLocation { .. }), "{err}");
    }
}
