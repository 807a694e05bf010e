//! Keeps array-format's panics inside the facade.
//!
//! array-format 0.15 can panic (slice indexing, overflow, `expect`) on corrupt
//! segment bytes and on some I/O failures. Every call into it runs through one
//! of these guards, which turn a panic into [`AtlasError::CorruptCollection`].

use std::future::Future;
use std::panic::AssertUnwindSafe;

use futures::FutureExt;

use crate::error::{AtlasError, Result};

fn describe(payload: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_owned()
    }
}

/// Runs an array-format future; a panic inside it becomes `CorruptCollection`.
pub(crate) async fn guarded<F: Future>(what: &str, fut: F) -> Result<F::Output> {
    AssertUnwindSafe(fut)
        .catch_unwind()
        .await
        .map_err(|p| AtlasError::corrupt(format!("{what}: array-format failed: {}", describe(p))))
}

/// Runs a synchronous array-format call; a panic inside it becomes `CorruptCollection`.
pub(crate) fn guarded_sync<T>(what: &str, f: impl FnOnce() -> T) -> Result<T> {
    std::panic::catch_unwind(AssertUnwindSafe(f))
        .map_err(|p| AtlasError::corrupt(format!("{what}: array-format failed: {}", describe(p))))
}
