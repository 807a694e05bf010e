//! array-format's panics caught: a panic inside one of its calls becomes an error here.
//!
//! array-format 0.15 can panic (slice indexing, overflow, `expect`) on corrupt
//! segment bytes and on some I/O failures. Every call into it runs through one
//! of these functions, which turn a panic into a description of it.

use std::future::Future;
use std::panic::AssertUnwindSafe;

use futures::FutureExt;

/// A caught panic, described.
#[derive(Debug, Clone)]
pub(crate) struct Panicked(pub String);

impl std::fmt::Display for Panicked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "array-format failed: {}", self.0)
    }
}

fn describe(payload: Box<dyn std::any::Any + Send>) -> Panicked {
    Panicked(if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_owned()
    })
}

/// Runs an array-format future; a panic inside it becomes `Err`.
pub(crate) async fn guarded<F: Future>(fut: F) -> Result<F::Output, Panicked> {
    AssertUnwindSafe(fut).catch_unwind().await.map_err(describe)
}
