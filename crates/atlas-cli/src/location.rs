//! Where a collection is: a COLLECTION string becomes an OpenDAL operator
//! through the library's [`atlas::Location`]; this module adds the command
//! line's flags (`--endpoint`, `--region`, `--anonymous`).
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

pub use atlas::{Access, Location};
use atlas::{AtlasError, RetryPolicy, StorageOptions};

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
    /// Retries and timeouts.
    pub retry: RetryPolicy,
}

impl StoreOptions {
    /// The library's storage options for these flags.
    pub fn storage(&self) -> StorageOptions {
        let mut options = StorageOptions::new()
            .anonymous(self.anonymous)
            .retry(self.retry.clone());
        if let Some(endpoint) = &self.endpoint {
            options = options.endpoint(endpoint);
        }
        if let Some(region) = &self.region {
            options = options.region(region);
        }
        options
    }
}

/// Resolves `spec` for `access` through the library's [`atlas::Location`],
/// with the command line's backend flags.
pub async fn resolve(spec: &str, opts: &StoreOptions, access: Access) -> CliResult<Location> {
    match Location::resolve(spec, &opts.storage(), access).await {
        Ok(resolved) => Ok(resolved),
        Err(e @ AtlasError::InvalidLocation { .. }) => Err(CliError::msg(e.to_string())),
        Err(e) => Err(e).at(spec),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_http_location_refuses_writes() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let err = rt
            .block_on(resolve(
                "http://127.0.0.1:1/c",
                &StoreOptions::default(),
                Access::Write,
            ))
            .unwrap_err();
        assert!(err.line().contains("read-only"), "{}", err.line());
    }
}
