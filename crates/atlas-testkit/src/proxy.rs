//! A fault-injecting HTTP/1.1 proxy: clients talk to it as if it were the
//! server; it forwards each request and, by a seeded plan, spoils some.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, StreamBody, combinators::BoxBody};
use hyper::body::{Frame, Incoming};
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};

use crate::Background;

type Body = BoxBody<Bytes, std::io::Error>;

/// Which requests the proxy spoils and how; shares are per mille of requests.
///
/// The choice for the n-th request depends only on the seed and n, so a
/// sequential client sees the same faults on every run.
/// Error answers (500/503) are given instead of forwarding, so the server
/// never sees those requests; the other faults apply to GET responses only,
/// after the server answered (a write is never applied with its answer lost).
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct FaultPlan {
    /// Seed of the per-request choice.
    pub seed: u64,
    /// Share answered 500 or 503 (alternately) without forwarding.
    pub errors: u32,
    /// Share of GETs whose connection is dropped after the response head.
    pub resets: u32,
    /// Share of GETs whose body stops halfway and the connection closes.
    pub short_bodies: u32,
    /// Share of GETs whose response is held back by `slow_delay`.
    pub slow: u32,
    /// How long a slow response waits before its first byte.
    pub slow_delay: Duration,
    /// Only requests whose path contains this text are spoiled (every
    /// request when `None`), e.g. `"/members/"` to fail a set's members only.
    pub path_contains: Option<String>,
    /// The status of every error answer; 500 and 503 alternately when `None`.
    pub error_status: Option<u16>,
}

impl FaultPlan {
    /// No faults: the proxy forwards everything.
    pub fn none() -> Self {
        FaultPlan::default()
    }

    /// Every kind of fault at `per_mille` each, slow ones delayed by `slow_delay`.
    pub fn every_kind(seed: u64, per_mille: u32, slow_delay: Duration) -> Self {
        FaultPlan {
            seed,
            errors: per_mille,
            resets: per_mille,
            short_bodies: per_mille,
            slow: per_mille,
            slow_delay,
            path_contains: None,
            error_status: None,
        }
    }

    /// Answers every spoiled request with `status` (e.g. 503) instead of
    /// 500 and 503 alternately.
    pub fn with_error_status(mut self, status: u16) -> Self {
        self.error_status = Some(status);
        self
    }

    /// Spoils only requests whose path contains `text`; the rest are forwarded.
    pub fn only_paths_containing(mut self, text: &str) -> Self {
        self.path_contains = Some(text.to_owned());
        self
    }

    /// Sets the share of 500/503 answers.
    pub fn with_errors(mut self, per_mille: u32) -> Self {
        self.errors = per_mille;
        self
    }

    /// Sets the share of GETs whose connection drops after the response head.
    pub fn with_resets(mut self, per_mille: u32) -> Self {
        self.resets = per_mille;
        self
    }

    /// Sets the share of GET bodies cut off halfway.
    pub fn with_short_bodies(mut self, per_mille: u32) -> Self {
        self.short_bodies = per_mille;
        self
    }

    /// Sets the share of GETs held back, and for how long.
    pub fn with_slow(mut self, per_mille: u32, delay: Duration) -> Self {
        self.slow = per_mille;
        self.slow_delay = delay;
        self
    }

    /// The fault for request number `n` with `method`.
    fn choose(&self, n: u64, is_get: bool) -> Fault {
        let roll =
            u32::try_from(splitmix64(self.seed ^ n.wrapping_mul(0x9E37_79B9)) % 1000).unwrap_or(0);
        let mut edge = self.errors;
        if roll < edge {
            if let Some(status) = self.error_status.and_then(|s| StatusCode::from_u16(s).ok()) {
                return Fault::Status(status);
            }
            return if n.is_multiple_of(2) {
                Fault::Status(StatusCode::SERVICE_UNAVAILABLE)
            } else {
                Fault::Status(StatusCode::INTERNAL_SERVER_ERROR)
            };
        }
        if !is_get {
            return Fault::None;
        }
        for (share, fault) in [
            (self.resets, Fault::Reset),
            (self.short_bodies, Fault::Short),
            (self.slow, Fault::Slow),
        ] {
            edge = edge.saturating_add(share);
            if roll < edge {
                return fault;
            }
        }
        Fault::None
    }
}

/// A well-mixed 64-bit hash (SplitMix64's finalizer).
fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    None,
    Status(StatusCode),
    Reset,
    Short,
    Slow,
}

/// How many requests the proxy saw and how many of each fault it injected.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FaultCounts {
    /// Requests received.
    pub requests: u64,
    /// Answered 500/503.
    pub errors: u64,
    /// Connections dropped after the response head.
    pub resets: u64,
    /// Bodies cut short.
    pub short_bodies: u64,
    /// Responses delayed.
    pub slow: u64,
}

#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    errors: AtomicU64,
    resets: AtomicU64,
    short_bodies: AtomicU64,
    slow: AtomicU64,
}

struct Shared {
    upstream: String,
    plan: std::sync::Mutex<FaultPlan>,
    enabled: AtomicBool,
    counters: Counters,
    client: Client<HttpConnector, Incoming>,
}

/// A running fault proxy on 127.0.0.1; stops when dropped.
pub struct FaultProxy {
    endpoint: String,
    shared: Arc<Shared>,
    _runtime: Background,
}

impl FaultProxy {
    /// A proxy in front of `upstream` (`http://host:port`), spoiling requests by `plan`.
    pub fn start(upstream: &str, plan: FaultPlan) -> FaultProxy {
        let runtime = Background::start("atlas-testkit-proxy");
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new()).build(connector);
        let shared = Arc::new(Shared {
            upstream: upstream.trim_end_matches('/').to_owned(),
            plan: std::sync::Mutex::new(plan),
            enabled: AtomicBool::new(true),
            counters: Counters::default(),
            client,
        });
        let listener = crate::bind_loopback();
        let addr = listener.local_addr().expect("the proxy's address");
        let serving = shared.clone();
        runtime.handle().spawn(async move {
            let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                return;
            };
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    continue;
                };
                // Small writes go out at once: with Nagle's algorithm a
                // response's body waits for the ACK of its head, which the
                // client delays by up to 40 ms.
                let _ = socket.set_nodelay(true);
                let shared = serving.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |req| forward(shared.clone(), req));
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(socket), service)
                        .await;
                });
            }
        });
        FaultProxy {
            endpoint: format!("http://{addr}"),
            shared,
            _runtime: runtime,
        }
    }

    /// Where clients should connect instead of the server.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Turns fault injection on or off (off: a plain proxy), e.g. around setup.
    pub fn set_enabled(&self, on: bool) {
        self.shared.enabled.store(on, Ordering::SeqCst);
    }

    /// Replaces the plan for the requests that follow.
    pub fn set_plan(&self, plan: FaultPlan) {
        *self.shared.plan.lock().unwrap_or_else(|e| e.into_inner()) = plan;
    }

    /// What the proxy has seen and done so far.
    pub fn counts(&self) -> FaultCounts {
        let c = &self.shared.counters;
        FaultCounts {
            requests: c.requests.load(Ordering::SeqCst),
            errors: c.errors.load(Ordering::SeqCst),
            resets: c.resets.load(Ordering::SeqCst),
            short_bodies: c.short_bodies.load(Ordering::SeqCst),
            slow: c.slow.load(Ordering::SeqCst),
        }
    }
}

fn io_error(e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(e.to_string())
}

async fn forward(
    shared: Arc<Shared>,
    req: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let n = shared.counters.requests.fetch_add(1, Ordering::SeqCst);
    let fault = if shared.enabled.load(Ordering::SeqCst) {
        let plan = shared
            .plan
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let spoiled = plan
            .path_contains
            .as_deref()
            .is_none_or(|text| req.uri().path().contains(text));
        if spoiled {
            (
                plan.choose(n, req.method() == hyper::Method::GET),
                plan.slow_delay,
            )
        } else {
            (Fault::None, Duration::ZERO)
        }
    } else {
        (Fault::None, Duration::ZERO)
    };
    let c = &shared.counters;
    if let (Fault::Status(status), _) = fault {
        c.errors.fetch_add(1, Ordering::SeqCst);
        let body = format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>{}</Code>\
             <Message>injected by the fault proxy</Message></Error>",
            if status == StatusCode::SERVICE_UNAVAILABLE {
                "SlowDown"
            } else {
                "InternalError"
            }
        );
        return Ok(plain(status, body));
    }

    let (mut parts, body) = req.into_parts();
    let path = parts
        .uri
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    parts.uri = match format!("{}{path}", shared.upstream).parse() {
        Ok(uri) => uri,
        Err(e) => return Ok(plain(StatusCode::BAD_GATEWAY, e.to_string())),
    };
    let response = match shared
        .client
        .request(Request::from_parts(parts, body))
        .await
    {
        Ok(r) => r,
        Err(e) => return Ok(plain(StatusCode::BAD_GATEWAY, e.to_string())),
    };
    let (head, body) = response.into_parts();
    let body: Body = match fault {
        (Fault::Reset, _) => {
            c.resets.fetch_add(1, Ordering::SeqCst);
            failing(Vec::new())
        }
        (Fault::Short, _) => {
            c.short_bodies.fetch_add(1, Ordering::SeqCst);
            let all = match body.collect().await {
                Ok(b) => b.to_bytes(),
                Err(e) => return Ok(plain(StatusCode::BAD_GATEWAY, e.to_string())),
            };
            let half = all.slice(..all.len() / 2);
            failing(vec![half])
        }
        (Fault::Slow, delay) => {
            c.slow.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(delay).await;
            body.map_err(io_error).boxed()
        }
        _ => body.map_err(io_error).boxed(),
    };
    Ok(Response::from_parts(head, body))
}

/// A body that yields `chunks` and then fails, so the server drops the
/// connection before the announced length was sent.
fn failing(chunks: Vec<Bytes>) -> Body {
    let items = chunks
        .into_iter()
        .map(|b| Ok(Frame::data(b)))
        .chain(std::iter::once(Err(io_error(
            "injected: connection dropped",
        ))));
    StreamBody::new(futures::stream::iter(items)).boxed()
}

fn plain(status: StatusCode, body: String) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(body)).map_err(io_error).boxed());
    *response.status_mut() = status;
    response
}
