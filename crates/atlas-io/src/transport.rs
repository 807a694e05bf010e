//! The process-wide HTTP transport that OpenDAL's cloud services (S3, GCS,
//! Azure, HTTP) send their requests through.
//!
//! OpenDAL 0.59 installs it before `main` only with its `auto-register-services`
//! feature (a process constructor), which this workspace leaves off; without
//! it every request of those services fails with "default HTTP transport is not
//! installed". The facade's entry points (`Atlas::open_with`,
//! `AtlasWriter::create`) call [`install_http_transport`] instead: the transport
//! is looked up per request, so installing it before the first one suffices.

use std::sync::Once;

/// Installs OpenDAL's default (reqwest, rustls) HTTP transport once per process;
/// later calls, and a transport installed earlier by the application, win nothing.
pub fn install_http_transport() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(opendal::install_default);
}
