//! Where a collection is: a COLLECTION string becomes an OpenDAL operator and
//! the prefix under which `data.atlas` (and `deleted.mask`) live.
//!
//! | COLLECTION              | backend                                   |
//! |-------------------------|-------------------------------------------|
//! | `path/to/dir` (default) | local filesystem                          |
//! | `file:///abs/dir`       | local filesystem                          |
//! | `s3://bucket/prefix`    | S3 or any S3-compatible server            |
//! | `gs://bucket/prefix`    | Google Cloud Storage                      |
//! | `az://container/prefix` | Azure Blob Storage                        |
//! | `http(s)://host/path`   | plain HTTP range reads (read-only)        |
//!
//! Credentials come from the usual environment variables of each cloud
//! (`AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`/`AWS_SESSION_TOKEN`/`AWS_PROFILE`,
//! `GOOGLE_APPLICATION_CREDENTIALS`, `AZURE_STORAGE_ACCOUNT`/`AZURE_STORAGE_KEY`/
//! `AZURE_STORAGE_SAS_TOKEN`/`AZURE_STORAGE_CONNECTION_STRING`); the endpoint
//! from `--endpoint` (or `AWS_ENDPOINT_URL` for S3), the region from `--region`,
//! `AWS_REGION` or `AWS_DEFAULT_REGION`.

use std::path::{Path, PathBuf};

use opendal::{Operator, services};

use crate::exit::{CliError, CliResult, Context};

/// Backend options shared by every location on the command line.
#[derive(Debug, Clone, Default)]
pub struct StoreOptions {
    /// Custom endpoint (S3-compatible server, GCS emulator, Azurite...).
    pub endpoint: Option<String>,
    /// S3 region.
    pub region: Option<String>,
    /// Send unsigned requests (public buckets).
    pub anonymous: bool,
}

/// What the command will do with the location.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Read an existing collection (a local directory must exist).
    Read,
    /// Write to it: `rm` writes the mask, `rewrite`/`demo` create a collection.
    Write,
}

/// The storage family of a location.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// Local filesystem.
    Local,
    /// S3 or S3-compatible.
    S3,
    /// Google Cloud Storage.
    Gcs,
    /// Azure Blob Storage.
    Azure,
    /// Plain HTTP(S), read-only.
    Http,
}

/// A resolved collection location.
#[derive(Debug, Clone)]
pub struct Location {
    /// The operator, rooted at the collection.
    pub op: Operator,
    /// The prefix to hand to the library (empty: the operator is rooted at the collection).
    pub prefix: String,
    /// The location as the user wrote it, for messages.
    pub display: String,
    /// The directory, for a local location.
    pub local_dir: Option<PathBuf>,
}

impl Location {
    /// Resolves `spec` for `access`.
    pub async fn resolve(spec: &str, opts: &StoreOptions, access: Access) -> CliResult<Self> {
        let display = spec.to_owned();
        let (scheme, rest) = split_scheme(spec)?;
        let (op, local_dir) = match scheme {
            Scheme::Local => {
                let dir = local_dir(rest, access, spec)?;
                let root = dir.to_string_lossy().into_owned();
                let op = Operator::new(services::Fs::default().root(&root)).at(spec)?;
                (op, Some(dir))
            }
            Scheme::S3 => (s3(rest, opts, spec).await?, None),
            Scheme::Gcs => (gcs(rest, opts, spec)?, None),
            Scheme::Azure => (azure(rest, opts, spec)?, None),
            Scheme::Http => {
                if access == Access::Write {
                    return Err(CliError::msg(format!(
                        "{spec}: an http(s) location is read-only"
                    )));
                }
                (http(spec)?, None)
            }
        };
        Ok(Location {
            op,
            prefix: String::new(),
            display,
            local_dir,
        })
    }

    /// The path of an object of the collection, relative to the operator.
    pub fn object(&self, name: &str) -> String {
        if self.prefix.is_empty() {
            name.to_owned()
        } else {
            format!("{}/{name}", self.prefix.trim_end_matches('/'))
        }
    }
}

fn split_scheme(spec: &str) -> CliResult<(Scheme, &str)> {
    let Some((scheme, rest)) = spec.split_once("://") else {
        return Ok((Scheme::Local, spec));
    };
    let scheme = match scheme.to_ascii_lowercase().as_str() {
        "file" => Scheme::Local,
        "s3" | "s3a" => Scheme::S3,
        "gs" | "gcs" => Scheme::Gcs,
        "az" | "azure" | "azblob" => Scheme::Azure,
        "http" | "https" => return Ok((Scheme::Http, spec)),
        other => {
            return Err(CliError::msg(format!(
                "{spec}: unknown scheme {other:?} (use a path, file://, s3://, gs://, az://, http:// or https://)"
            )));
        }
    };
    Ok((scheme, rest))
}

/// The directory of a local collection. A path naming `data.atlas` itself means its directory.
fn local_dir(path: &str, access: Access, spec: &str) -> CliResult<PathBuf> {
    if path.is_empty() {
        return Err(CliError::msg("empty collection path"));
    }
    let mut dir = PathBuf::from(path);
    if dir.file_name().is_some_and(|n| n == atlas::CONTAINER_FILE) && !dir.is_dir() {
        dir = dir
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    }
    match std::fs::metadata(&dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(CliError::msg(format!(
                "{spec}: not a collection directory (a collection is a directory holding data.atlas)"
            )));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if access == Access::Read {
                return Err(CliError::msg(format!(
                    "no Atlas collection at {spec}: no such directory"
                )));
            }
            std::fs::create_dir_all(&dir)
                .map_err(|e| CliError::msg(format!("{spec}: cannot create directory: {e}")))?;
        }
        Err(e) => return Err(CliError::msg(format!("{spec}: {e}"))),
    }
    // Canonical, so the operator's root never depends on the working directory.
    dir.canonicalize()
        .map_err(|e| CliError::msg(format!("{spec}: {e}")))
}

/// `bucket/prefix` → (`bucket`, `/prefix`).
fn bucket_and_root(rest: &str, spec: &str, what: &str) -> CliResult<(String, String)> {
    let rest = rest.trim_start_matches('/');
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    if bucket.is_empty() {
        return Err(CliError::msg(format!("{spec}: missing {what} name")));
    }
    let prefix = prefix.trim_matches('/');
    Ok((bucket.to_owned(), format!("/{prefix}")))
}

fn env(names: &[&str]) -> Option<String> {
    names
        .iter()
        .find_map(|n| std::env::var(n).ok().filter(|v| !v.is_empty()))
}

async fn s3(rest: &str, opts: &StoreOptions, spec: &str) -> CliResult<Operator> {
    let (bucket, root) = bucket_and_root(rest, spec, "bucket")?;
    let endpoint = opts
        .endpoint
        .clone()
        .or_else(|| env(&["AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"]));
    let mut region = opts
        .region
        .clone()
        .or_else(|| env(&["AWS_REGION", "AWS_DEFAULT_REGION"]));
    if region.is_none() {
        region = match &endpoint {
            // An S3-compatible server mostly ignores the region; sign for the default one.
            Some(_) => Some("us-east-1".to_owned()),
            None => services::S3::detect_region("https://s3.amazonaws.com", &bucket).await,
        };
    }
    let Some(region) = region else {
        return Err(CliError::msg(format!(
            "{spec}: cannot tell the bucket's region; set AWS_REGION or pass --region"
        )));
    };
    let mut builder = services::S3::default()
        .bucket(&bucket)
        .root(&root)
        .region(&region);
    if let Some(endpoint) = &endpoint {
        builder = builder.endpoint(endpoint);
    }
    if opts.anonymous {
        builder = builder.skip_signature().disable_ec2_metadata();
    } else if let (Some(key), Some(secret)) =
        (env(&["AWS_ACCESS_KEY_ID"]), env(&["AWS_SECRET_ACCESS_KEY"]))
    {
        builder = builder.access_key_id(&key).secret_access_key(&secret);
        if let Some(token) = env(&["AWS_SESSION_TOKEN"]) {
            builder = builder.session_token(&token);
        }
    }
    Operator::new(builder).at(spec)
}

fn gcs(rest: &str, opts: &StoreOptions, spec: &str) -> CliResult<Operator> {
    let (bucket, root) = bucket_and_root(rest, spec, "bucket")?;
    let mut builder = services::Gcs::default().bucket(&bucket).root(&root);
    if let Some(endpoint) = &opts.endpoint {
        builder = builder.endpoint(endpoint);
    }
    if opts.anonymous {
        builder = builder.skip_signature().disable_vm_metadata();
    } else if let Some(path) = env(&["GOOGLE_APPLICATION_CREDENTIALS"]) {
        builder = builder.credential_path(&path);
    }
    Operator::new(builder).at(spec)
}

fn azure(rest: &str, opts: &StoreOptions, spec: &str) -> CliResult<Operator> {
    let (container, root) = bucket_and_root(rest, spec, "container")?;
    let mut builder = match env(&["AZURE_STORAGE_CONNECTION_STRING"]) {
        Some(conn) => services::Azblob::from_connection_string(&conn).at(spec)?,
        None => {
            let account = env(&["AZURE_STORAGE_ACCOUNT_NAME", "AZURE_STORAGE_ACCOUNT"]);
            let endpoint = opts
                .endpoint
                .clone()
                .or_else(|| env(&["AZURE_STORAGE_ENDPOINT"]))
                .or_else(|| {
                    account
                        .as_ref()
                        .map(|a| format!("https://{a}.blob.core.windows.net"))
                });
            let Some(endpoint) = endpoint else {
                return Err(CliError::msg(format!(
                    "{spec}: no Azure account; set AZURE_STORAGE_ACCOUNT (or AZURE_STORAGE_CONNECTION_STRING) or pass --endpoint"
                )));
            };
            let mut b = services::Azblob::default().endpoint(&endpoint);
            if let Some(account) = &account {
                b = b.account_name(account);
            }
            if let Some(key) = env(&["AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_KEY"]) {
                b = b.account_key(&key);
            }
            if let Some(sas) = env(&["AZURE_STORAGE_SAS_TOKEN"]) {
                b = b.sas_token(&sas);
            }
            b
        }
    };
    builder = builder.container(&container).root(&root);
    if let Some(endpoint) = &opts.endpoint {
        builder = builder.endpoint(endpoint);
    }
    if opts.anonymous {
        builder = builder.skip_signature();
    }
    Operator::new(builder).at(spec)
}

fn http(spec: &str) -> CliResult<Operator> {
    let (scheme, rest) = spec.split_once("://").unwrap_or(("https", spec));
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    if host.is_empty() {
        return Err(CliError::msg(format!("{spec}: missing host")));
    }
    let endpoint = format!("{}://{host}", scheme.to_ascii_lowercase());
    let root = format!("/{}", path.trim_matches('/'));
    let builder = services::Http::default().endpoint(&endpoint).root(&root);
    Operator::new(builder).at(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_path_is_local_and_a_url_names_its_backend() {
        assert_eq!(split_scheme("some/dir").unwrap().0, Scheme::Local);
        assert_eq!(
            split_scheme("file:///tmp/x").unwrap(),
            (Scheme::Local, "/tmp/x")
        );
        assert_eq!(split_scheme("s3://b/p").unwrap(), (Scheme::S3, "b/p"));
        assert_eq!(split_scheme("gs://b/p").unwrap(), (Scheme::Gcs, "b/p"));
        assert_eq!(split_scheme("az://c/p").unwrap(), (Scheme::Azure, "c/p"));
        assert_eq!(split_scheme("https://h/p").unwrap().0, Scheme::Http);
        assert!(split_scheme("ftp://h/p").is_err());
    }

    #[test]
    fn a_bucket_url_splits_into_bucket_and_root() {
        assert_eq!(
            bucket_and_root("bucket/a/b/", "s3://bucket/a/b/", "bucket").unwrap(),
            ("bucket".to_owned(), "/a/b".to_owned())
        );
        assert_eq!(
            bucket_and_root("bucket", "s3://bucket", "bucket").unwrap(),
            ("bucket".to_owned(), "/".to_owned())
        );
        assert!(bucket_and_root("", "s3://", "bucket").is_err());
    }

    #[test]
    fn an_http_location_refuses_writes() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let err = rt
            .block_on(Location::resolve(
                "http://127.0.0.1:1/c",
                &StoreOptions::default(),
                Access::Write,
            ))
            .unwrap_err();
        assert!(err.line().contains("read-only"), "{}", err.line());
    }
}
