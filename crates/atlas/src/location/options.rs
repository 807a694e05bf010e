//! [`StorageOptions`]: a backend's configuration beyond what its URL says.

use std::collections::BTreeMap;

use atlas_io::RetryPolicy;

/// How a location's backend is configured, beyond what its URL says.
///
/// Keys are OpenDAL configuration keys of the backend the URL names; the
/// setters cover the common ones. Explicit options win over the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StorageOptions {
    pub(super) config: BTreeMap<String, String>,
    pub(super) anonymous: bool,
    pub(super) from_env: bool,
    pub(super) retry: RetryPolicy,
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

    pub(super) fn get(&self, key: &str) -> Option<&str> {
        self.config.get(key).map(String::as_str)
    }
}
