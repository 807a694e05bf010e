//! Plain HTTP(S) range reads: `http(s)://host/path`, read-only.

use opendal::Operator;

use super::{StorageOptions, finish, invalid, merged};
use crate::error::Result;

/// The operator of an HTTP location.
pub(super) fn operator(options: &StorageOptions, location: &str) -> Result<Operator> {
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
