//! [`Address`]: anything that names where a collection lives.

use std::path::{Path, PathBuf};

use opendal::Operator;

use super::{Access, Location, StorageOptions};
use crate::error::Result;

/// Where a collection is (or will be): what [`Atlas::open`](crate::Atlas::open)
/// and [`AtlasWriter::create`](crate::AtlasWriter::create) take.
///
/// Build it with `From`: a path (`&Path`, `PathBuf`), a path or URL string
/// (`"./argo"`, `"s3://bucket/argo"`, `gs://`, `az://`, `http(s)://`,
/// `file://`), a resolved [`Location`], or an OpenDAL [`Operator`] with the
/// collection's prefix in it (`(op, "argo")`; a bare operator means its root).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Address {
    /// A local directory.
    Path(PathBuf),
    /// A path or URL, resolved with the caller's [`StorageOptions`].
    Url(String),
    /// A location already resolved.
    Location(Box<Location>),
}

impl Address {
    /// The location this address names, resolved for `access`: a string is
    /// parsed and its backend configured from `storage`; a path is local (and
    /// needs no storage options); a location is taken as it is.
    ///
    /// # Errors
    /// What [`Location::resolve`] returns.
    pub async fn resolve(self, storage: &StorageOptions, access: Access) -> Result<Location> {
        // An operator handed in may be an HTTP service (S3, GCS, ...): its
        // first request may be the one sent next, before any other entry
        // point installed the transport.
        atlas_io::install_http_transport();
        match self {
            Address::Path(path) => Location::resolve_path(&path, access),
            Address::Url(url) => Location::resolve(&url, storage, access).await,
            Address::Location(location) => Ok(*location),
        }
    }
}

impl From<&str> for Address {
    fn from(s: &str) -> Self {
        Address::Url(s.to_owned())
    }
}

impl From<String> for Address {
    fn from(s: String) -> Self {
        Address::Url(s)
    }
}

impl From<&String> for Address {
    fn from(s: &String) -> Self {
        Address::Url(s.clone())
    }
}

impl From<&Path> for Address {
    fn from(p: &Path) -> Self {
        Address::Path(p.to_path_buf())
    }
}

impl From<PathBuf> for Address {
    fn from(p: PathBuf) -> Self {
        Address::Path(p)
    }
}

impl From<&PathBuf> for Address {
    fn from(p: &PathBuf) -> Self {
        Address::Path(p.clone())
    }
}

impl From<Location> for Address {
    fn from(l: Location) -> Self {
        Address::Location(Box::new(l))
    }
}

impl From<&Location> for Address {
    fn from(l: &Location) -> Self {
        Address::Location(Box::new(l.clone()))
    }
}

impl From<(Operator, &str)> for Address {
    fn from((op, prefix): (Operator, &str)) -> Self {
        Address::Location(Box::new(Location::from_operator(op, prefix)))
    }
}

impl From<(Operator, String)> for Address {
    fn from((op, prefix): (Operator, String)) -> Self {
        Address::Location(Box::new(Location::from_operator(op, &prefix)))
    }
}

impl From<Operator> for Address {
    fn from(op: Operator) -> Self {
        Address::Location(Box::new(Location::from_operator(op, "")))
    }
}
