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

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use atlas_format::CONTAINER_FILE;
use atlas_io::{IoError, IoErrorKind, MultipartUploads, RetryPolicy};
use opendal::{Configurator as _, Operator, services};

use crate::error::{AtlasError, Result};
use crate::{Atlas, AtlasWriter, OpenOptions, WriterConfig};

/// How a location's backend is configured, beyond what its URL says.
///
/// Keys are OpenDAL configuration keys of the backend the URL names; the
/// setters cover the common ones. Explicit options win over the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StorageOptions {
    config: BTreeMap<String, String>,
    anonymous: bool,
    from_env: bool,
    retry: RetryPolicy,
}

impl Default for StorageOptions {
    /// No explicit configuration; credentials and endpoints from the
    /// environment; [`RetryPolicy::default`] retries and timeouts.
    fn default() -> Self {
        Self {
            config: BTreeMap::new(),
            anonymous: false,
            from_env: true,
            retry: RetryPolicy::default(),
        }
    }
}

impl StorageOptions {
    /// The defaults: nothing explicit, the environment consulted.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets OpenDAL configuration key `key` of the backend (lower case, e.g.
    /// `endpoint`, `region`, `access_key_id`).
    pub fn set(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.config
            .insert(key.into().to_ascii_lowercase(), value.into());
        self
    }

    /// The service endpoint: an S3-compatible server, a GCS emulator, Azurite...
    pub fn endpoint(self, url: impl Into<String>) -> Self {
        self.set("endpoint", url)
    }

    /// The S3 region.
    pub fn region(self, region: impl Into<String>) -> Self {
        self.set("region", region)
    }

    /// Sends unsigned requests (a public bucket) and loads no credentials.
    pub fn anonymous(mut self, yes: bool) -> Self {
        self.anonymous = yes;
        self
    }

    /// Whether environment variables fill what the options leave unset (default: yes).
    pub fn from_env(mut self, yes: bool) -> Self {
        self.from_env = yes;
        self
    }

    /// How the operator retries temporary failures and bounds slow operations.
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = policy;
        self
    }

    /// The retry policy in force.
    pub fn retry_policy(&self) -> &RetryPolicy {
        &self.retry
    }

    /// The explicit configuration keys and values.
    pub fn config(&self) -> impl Iterator<Item = (&str, &str)> {
        self.config.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    fn get(&self, key: &str) -> Option<&str> {
        self.config.get(key).map(String::as_str)
    }
}

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
}

impl Scheme {
    /// The scheme of `location` and the part after `scheme://` (the whole
    /// string for a bare path; the whole URL for http).
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
}

/// A resolved collection location: an operator rooted at the collection.
#[derive(Debug, Clone)]
pub struct Location {
    op: Operator,
    scheme: Scheme,
    display: String,
    local_dir: Option<PathBuf>,
    uploads: Option<MultipartUploads>,
}

impl Location {
    /// Resolves `location` (a path or URL) for `access`. Builds the operator
    /// only; no request is sent (except AWS's region lookup for an S3 bucket
    /// with no region configured).
    pub async fn resolve(
        location: &str,
        options: &StorageOptions,
        access: Access,
    ) -> Result<Location> {
        atlas_io::install_http_transport();
        opendal::init_default_registry();
        let (scheme, rest) = Scheme::split(location)?;
        let mut local_dir = None;
        let mut uploads = None;
        let op = match scheme {
            Scheme::Local => {
                let dir = local_dir_of(rest, access, location)?;
                let op = match access {
                    // Opening creates nothing on disk.
                    Access::Read => {
                        build(location, "fs", [("root", dir.to_string_lossy().as_ref())])?
                    }
                    // Every write goes through a temp file and a rename: a writer
                    // killed half-way leaves no container that opens.
                    Access::Write => atlas_io::fs_operator(&dir)?,
                };
                local_dir = Some(dir);
                op
            }
            Scheme::S3 => {
                let (op, s3_uploads) = s3(rest, options, location).await?;
                uploads = s3_uploads.map(|u| u.retry(options.retry.clone()));
                op
            }
            Scheme::Gcs => gcs(rest, options, location)?,
            Scheme::Azure => azure(rest, options, location)?,
            Scheme::Http => {
                if access == Access::Write {
                    return Err(invalid(location, "an http(s) location is read-only"));
                }
                http(options, location)?
            }
        };
        Ok(Location {
            op: options.retry.apply(op),
            scheme,
            display: location.to_owned(),
            local_dir,
            uploads,
        })
    }

    /// The multipart uploads of an S3 location, reached with the operator's
    /// endpoint and credentials: what [`VerifyOptions::multipart_uploads`](crate::VerifyOptions::multipart_uploads)
    /// and [`atlas_io::remove_leftovers`] take. `None` on other backends (they
    /// keep no such uploads) and for S3 directory buckets (not supported).
    pub fn multipart_uploads(&self) -> Option<&MultipartUploads> {
        self.uploads.as_ref()
    }

    /// The operator, rooted at the collection's directory.
    pub fn operator(&self) -> &Operator {
        &self.op
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
}

fn invalid(location: &str, reason: impl Into<String>) -> AtlasError {
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

/// The directory of a local collection. A path naming `data.atlas` itself means its directory.
fn local_dir_of(path: &str, access: Access, location: &str) -> Result<PathBuf> {
    if path.is_empty() {
        return Err(invalid(location, "empty collection path"));
    }
    let mut dir = PathBuf::from(path);
    if dir.file_name().is_some_and(|n| n == CONTAINER_FILE) && !dir.is_dir() {
        dir = dir
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    }
    let io = |e: std::io::Error, operation: &'static str| {
        let kind = match e.kind() {
            std::io::ErrorKind::NotFound => IoErrorKind::NotFound,
            std::io::ErrorKind::PermissionDenied => IoErrorKind::PermissionDenied,
            _ => IoErrorKind::Other,
        };
        AtlasError::Io(IoError::new(kind, operation, location, e.to_string()))
    };
    match std::fs::metadata(&dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(invalid(
                location,
                "not a collection directory (a collection is a directory holding data.atlas)",
            ));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && access == Access::Write => {
            std::fs::create_dir_all(&dir).map_err(|e| io(e, "create_dir"))?;
        }
        Err(e) => return Err(io(e, "open")),
    }
    // Canonical, so the operator's root never depends on the working directory.
    dir.canonicalize().map_err(|e| io(e, "open"))
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

/// The operator, and the multipart uploads reached with the same configuration.
async fn s3(
    rest: &str,
    options: &StorageOptions,
    location: &str,
) -> Result<(Operator, Option<MultipartUploads>)> {
    let (bucket, root) = bucket_and_root(rest, location, "bucket")?;
    let mut map = merged(
        options,
        [
            (
                "endpoint",
                env(options, &["AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"]),
            ),
            (
                "region",
                env(options, &["AWS_REGION", "AWS_DEFAULT_REGION"]),
            ),
            ("access_key_id", env(options, &["AWS_ACCESS_KEY_ID"])),
            (
                "secret_access_key",
                env(options, &["AWS_SECRET_ACCESS_KEY"]),
            ),
            ("session_token", env(options, &["AWS_SESSION_TOKEN"])),
        ],
    );
    map.insert("bucket".into(), bucket.into());
    map.insert("root".into(), format!("/{root}"));
    if !map.contains_key("region") {
        let region = match map.get("endpoint") {
            // An S3-compatible server mostly ignores the region; sign for the default one.
            Some(_) => Some("us-east-1".to_owned()),
            None => services::S3::detect_region("https://s3.amazonaws.com", bucket).await,
        };
        let Some(region) = region else {
            return Err(invalid(
                location,
                "cannot tell the bucket's region; set AWS_REGION or the `region` option",
            ));
        };
        map.insert("region".into(), region);
    }
    if options.anonymous {
        for key in [
            "skip_signature",
            "disable_ec2_metadata",
            "disable_config_load",
        ] {
            map.insert(key.into(), "true".into());
        }
    }
    let config =
        services::S3Config::from_iter(map.clone()).map_err(|e| configuration_error(location, e))?;
    let uploads = match MultipartUploads::for_s3(&config) {
        Ok(uploads) => Some(uploads),
        Err(e) => {
            tracing::debug!(location, "multipart uploads not listed: {e}");
            None
        }
    };
    Ok((finish(location, "s3", map)?, uploads))
}

fn gcs(rest: &str, options: &StorageOptions, location: &str) -> Result<Operator> {
    let (bucket, root) = bucket_and_root(rest, location, "bucket")?;
    let mut map = merged(
        options,
        [(
            "credential_path",
            env(options, &["GOOGLE_APPLICATION_CREDENTIALS"]),
        )],
    );
    map.insert("bucket".into(), bucket.into());
    map.insert("root".into(), format!("/{root}"));
    if options.anonymous {
        map.remove("credential_path");
        for key in [
            "skip_signature",
            "disable_vm_metadata",
            "disable_config_load",
        ] {
            map.insert(key.into(), "true".into());
        }
    }
    finish(location, "gcs", map)
}

fn azure(rest: &str, options: &StorageOptions, location: &str) -> Result<Operator> {
    let (container, root) = bucket_and_root(rest, location, "container")?;
    let root = format!("/{root}");
    // A connection string configures endpoint, account and credentials at once;
    // OpenDAL parses it only through its builder.
    if let Some(conn) = env(options, &["AZURE_STORAGE_CONNECTION_STRING"])
        .filter(|_| options.get("endpoint").is_none() && options.get("account_name").is_none())
    {
        let mut builder = services::Azblob::from_connection_string(&conn)
            .map_err(|e| configuration_error(location, e))?
            .container(container)
            .root(&root);
        if options.anonymous {
            builder = builder.skip_signature();
        }
        return Operator::new(builder).map_err(|e| configuration_error(location, e));
    }
    let account = options.get("account_name").map(str::to_owned).or_else(|| {
        env(
            options,
            &["AZURE_STORAGE_ACCOUNT_NAME", "AZURE_STORAGE_ACCOUNT"],
        )
    });
    let endpoint = env(options, &["AZURE_STORAGE_ENDPOINT"]).or_else(|| {
        account
            .as_ref()
            .map(|a| format!("https://{a}.blob.core.windows.net"))
    });
    let mut map = merged(
        options,
        [
            ("endpoint", endpoint),
            ("account_name", account),
            (
                "account_key",
                env(options, &["AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_KEY"]),
            ),
            ("sas_token", env(options, &["AZURE_STORAGE_SAS_TOKEN"])),
        ],
    );
    if !map.contains_key("endpoint") {
        return Err(invalid(
            location,
            "no Azure account; set AZURE_STORAGE_ACCOUNT (or AZURE_STORAGE_CONNECTION_STRING) or the `endpoint` option",
        ));
    }
    map.insert("container".into(), container.into());
    map.insert("root".into(), root);
    if options.anonymous {
        map.insert("skip_signature".into(), "true".into());
    }
    finish(location, "azblob", map)
}

fn http(options: &StorageOptions, location: &str) -> Result<Operator> {
    let (scheme, rest) = location.split_once("://").unwrap_or(("https", location));
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    if host.is_empty() {
        return Err(invalid(location, "missing host"));
    }
    let mut map = merged(options, []);
    map.insert(
        "endpoint".into(),
        format!("{}://{host}", scheme.to_ascii_lowercase()),
    );
    map.insert("root".into(), format!("/{}", path.trim_matches('/')));
    finish(location, "http", map)
}

impl Atlas {
    /// Opens the collection at `location` (a path, `file://`, `s3://`, `gs://`,
    /// `az://` or `http(s)://` URL) with default [`OpenOptions`]. Costs what
    /// [`Atlas::open`] costs; a local directory opens as [`Atlas::open_path`].
    pub async fn open_url(location: &str, storage: &StorageOptions) -> Result<Atlas> {
        Self::open_url_with(location, storage, OpenOptions::default()).await
    }

    /// Opens the collection at `location` with `options`.
    pub async fn open_url_with(
        location: &str,
        storage: &StorageOptions,
        options: OpenOptions,
    ) -> Result<Atlas> {
        let loc = Location::resolve(location, storage, Access::Read).await?;
        match loc.local_dir() {
            Some(dir) => Atlas::open_path_with(dir, options).await,
            None => Atlas::open_with_uploads(loc.op, options, loc.uploads).await,
        }
    }
}

impl AtlasWriter {
    /// Starts a collection at `location` (a path, `file://`, `s3://`, `gs://` or
    /// `az://` URL; a missing local directory is created). Nothing there opens
    /// as a collection until [`AtlasWriter::finish`].
    pub async fn create_url(
        location: &str,
        storage: &StorageOptions,
        config: WriterConfig,
    ) -> Result<AtlasWriter> {
        let loc = Location::resolve(location, storage, Access::Write).await?;
        match loc.local_dir() {
            Some(dir) => AtlasWriter::create_path(dir, config).await,
            None => AtlasWriter::create(loc.op, "", config).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
