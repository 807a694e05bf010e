//! The process-wide HTTP transport that OpenDAL's cloud services (S3, GCS,
//! Azure, HTTP) send their requests through: one reqwest client per tokio
//! runtime.
//!
//! OpenDAL 0.59 installs a transport before `main` only with its
//! `auto-register-services` feature (a process constructor), which this
//! workspace leaves off; without one every request of those services fails
//! with "default HTTP transport is not installed". The facade's entry points
//! (`Atlas::open`, `AtlasWriter::create`) call [`install_http_transport`]:
//! the transport is looked up per request, so installing it before the first
//! one suffices.
//!
//! OpenDAL's own default is a single reqwest client for the whole process. A
//! pooled connection of that client is driven by a task on the runtime that
//! opened it. Another runtime of the process (a thread with its own
//! current-thread runtime, a `#[tokio::test]`, one Python call) could pick
//! that connection from the pool: while its runtime is idle the request waits
//! forever, once it is dropped the request fails ("dispatch task is gone").
//! Keying clients by runtime keeps connection reuse within a runtime and never
//! hands one across.

use std::sync::{Arc, Mutex, Once};

use opendal::{Buffer, HttpBody, HttpTransport, HttpTransporter};
use opendal_http_transport_reqwest::ReqwestTransport;
use tokio::runtime::{Handle, Id};

/// Installs the per-runtime reqwest transport as OpenDAL's process-wide
/// default, once; a transport the application installed earlier wins.
pub fn install_http_transport() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| HttpTransporter::install_default(PerRuntime::default()));
}

/// How many runtimes keep a client. Runtimes that ended are never asked for
/// theirs again, so the least recently used are dropped past this bound.
const KEPT_RUNTIMES: usize = 16;

/// A runtime (none outside any) and the client used on it.
type RuntimeClient = (Option<Id>, Arc<ReqwestTransport>);

/// reqwest clients keyed by the runtime they are used on, most recent last.
#[derive(Default, Clone)]
pub(crate) struct PerRuntime {
    clients: Arc<Mutex<Vec<RuntimeClient>>>,
}

impl PerRuntime {
    /// The client of the runtime this is called on, made on first use.
    fn current(&self) -> Arc<ReqwestTransport> {
        let runtime = Handle::try_current().ok().map(|h| h.id());
        // A poisoned lock only means another thread panicked while holding
        // it; the list itself is always consistent.
        let mut clients = self
            .clients
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let entry = match clients.iter().position(|(id, _)| *id == runtime) {
            Some(i) => clients.remove(i),
            None => (
                runtime,
                Arc::new(ReqwestTransport::new(reqwest::Client::new())),
            ),
        };
        let transport = Arc::clone(&entry.1);
        clients.push(entry);
        if clients.len() > KEPT_RUNTIMES {
            clients.remove(0);
        }
        transport
    }
}

impl HttpTransport for PerRuntime {
    async fn fetch(&self, req: http::Request<Buffer>) -> opendal::Result<http::Response<HttpBody>> {
        let transport = self.current();
        transport.fetch(req).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a test runtime")
    }

    #[test]
    fn each_runtime_gets_its_own_client_and_keeps_it() {
        let transports = PerRuntime::default();
        let (a, b) = (runtime(), runtime());
        let first = a.block_on(async { transports.current() });
        let again = a.block_on(async { transports.current() });
        let other = b.block_on(async { transports.current() });
        assert!(Arc::ptr_eq(&first, &again));
        assert!(!Arc::ptr_eq(&first, &other));
        assert_eq!(transports.clients.lock().map(|c| c.len()).unwrap_or(0), 2);
    }

    #[test]
    fn clients_of_runtimes_past_the_bound_are_dropped() {
        let transports = PerRuntime::default();
        for _ in 0..KEPT_RUNTIMES + 5 {
            runtime().block_on(async { transports.current() });
        }
        assert_eq!(
            transports.clients.lock().map(|c| c.len()).unwrap_or(0),
            KEPT_RUNTIMES
        );
    }
}
