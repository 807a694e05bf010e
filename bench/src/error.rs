//! The bench's one error type.

/// Why a bench run failed.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// This Atlas failed.
    #[error("atlas: {0}")]
    Ours(#[from] atlas::AtlasError),
    /// A query of this Atlas failed.
    #[error("query: {0}")]
    Query(#[from] atlas::QueryError),
    /// atlas-rust failed.
    #[error("atlas-rust: {0}")]
    Peer(#[from] atlas_peer::Error),
    /// zarrs failed.
    #[error("zarrs: {0}")]
    Zarr(Box<dyn std::error::Error + Send + Sync>),
    /// The local file system or a child process failed.
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    /// The JSON report could not be serialised.
    #[error("json: {0}")]
    Json(#[from] serde_json::Error),
    /// Building an OpenDAL operator failed.
    #[error("opendal: {0}")]
    Opendal(#[from] opendal::Error),
    /// Generated values did not fit the shape they were written as.
    #[error("shape: {0}")]
    Shape(#[from] ndarray::ShapeError),
    /// A read returned something other than what was written.
    #[error("mismatch: {0}")]
    Mismatch(String),
    /// A child process misbehaved.
    #[error("child: {0}")]
    Child(String),
    /// A NetCDF ingest failed (boxed: it is large).
    #[error("ingest: {0}")]
    Ingest(Box<atlas_netcdf::IngestError>),
    /// A sync failed (boxed: it is large).
    #[error("sync: {0}")]
    Sync(Box<atlas_netcdf::SyncError>),
    /// The command line made no sense.
    #[error("usage: {0}")]
    Usage(String),
}

impl BenchError {
    /// Wraps any zarrs error.
    pub fn zarr(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        BenchError::Zarr(Box::new(e))
    }
}

/// The bench's result type.
pub type Result<T = (), E = BenchError> = std::result::Result<T, E>;

impl From<atlas_netcdf::IngestError> for BenchError {
    fn from(e: atlas_netcdf::IngestError) -> Self {
        BenchError::Ingest(Box::new(e))
    }
}

impl From<atlas_netcdf::SyncError> for BenchError {
    fn from(e: atlas_netcdf::SyncError) -> Self {
        BenchError::Sync(Box::new(e))
    }
}
