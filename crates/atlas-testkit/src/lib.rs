//! Servers for Atlas's tests, all on 127.0.0.1 and all in the test process:
//!
//! - [`S3Server`]: a real S3 protocol server (`s3s` + `s3s-fs`) over a
//!   temporary directory, with conditional writes made atomic
//!   ([`S3Server::start`]) or left as `s3s-fs` ships them ([`S3Server::raw`]).
//! - [`FaultProxy`]: an HTTP proxy in front of a server that answers a share
//!   of requests with 500/503, resets or cuts short response bodies, and
//!   delays first bytes, by a seeded [`FaultPlan`] so a run can be repeated.
//! - [`azurite`] and [`fake_gcs`]: the Azure and GCS emulators, which run as
//!   their own processes, started through their scripts.
//!
//! Test-only (`publish = false`): panics on setup failures are the point.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test servers: a panic is a failed test setup, never lost data"
)]

mod emulator;
mod proxy;
mod s3;

pub use emulator::{azurite, fake_gcs};

pub use proxy::{FaultCounts, FaultPlan, FaultProxy};
pub use s3::{ACCESS_KEY, BUCKET, REGION, S3Server, SECRET_KEY};

/// A listening socket on a free port of 127.0.0.1, ready for tokio (bound
/// here so callers inside or outside a runtime can start a server).
pub(crate) fn bind_loopback() -> std::net::TcpListener {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port on 127.0.0.1");
    listener
        .set_nonblocking(true)
        .expect("a non-blocking listener");
    listener
}

/// A tokio runtime on its own thread that lives as long as its owner.
pub(crate) struct Background {
    handle: tokio::runtime::Handle,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Background {
    pub(crate) fn start(name: &str) -> Background {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name(name)
            .enable_all()
            .build()
            .expect("a tokio runtime for a test server");
        let handle = rt.handle().clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                let _ = rt.block_on(stopped);
                rt.shutdown_background();
            })
            .expect("a thread for a test server");
        Background {
            handle,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    pub(crate) fn handle(&self) -> &tokio::runtime::Handle {
        &self.handle
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
