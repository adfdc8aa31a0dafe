//! The server: configuration, shared state, the axum router and its two transports
//! (an in-process tower service for `kube::Client`, and TCP on loopback with a kubeconfig).

use crate::clock::Clock;
use crate::error::ApiError;
use crate::registry::Registry;
use crate::store::{State, TimelineEntry};
use axum::Router;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Request};
use axum::response::{IntoResponse, Response};
use http::HeaderValue;
use jiff::Timestamp;
use parking_lot::RwLock;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// Knobs of a server instance.
#[derive(Debug, Clone)]
pub struct Config {
    /// How many changes the watch history window keeps; older resourceVersions get 410 Expired.
    pub history: usize,
    /// How many writes the timeline keeps (0 turns it off).
    pub timeline_capacity: usize,
    /// Request bodies larger than this get 413 (kube-apiserver: 3 MiB).
    pub max_request_body_bytes: usize,
    /// How often a watch with `allowWatchBookmarks` gets a BOOKMARK.
    pub bookmark_interval: Duration,
    /// How long a watch without `timeoutSeconds` lasts.
    pub default_watch_timeout: Duration,
    /// Where the clock starts; `None` for the current wall-clock time.
    pub clock_start: Option<Timestamp>,
    /// The `gitVersion` that `/version` reports.
    pub kubernetes_version: String,
    /// Requests handled at once before new ones get 429 TooManyRequests, like kube-apiserver's
    /// `--max-requests-inflight` (0: no limit). A watch holds a slot only until its stream starts.
    pub max_requests_in_flight: usize,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            history: 10_000,
            timeline_capacity: 1_000_000,
            max_request_body_bytes: 3 * 1024 * 1024,
            bookmark_interval: Duration::from_secs(60),
            default_watch_timeout: Duration::from_secs(1800),
            clock_start: None,
            kubernetes_version: "v1.37.0".into(),
            max_requests_in_flight: 400,
        }
    }
}

/// Shared by every request handler.
pub(crate) struct Inner {
    pub state: RwLock<State>,
    /// Carries the latest resourceVersion; watches wake on it.
    pub changed: watch::Sender<u64>,
    pub clock: Clock,
    pub config: Config,
    /// Requests being handled now (see [`Config::max_requests_in_flight`]).
    pub in_flight: std::sync::atomic::AtomicUsize,
    /// OpenAPI v3 documents built so far.
    pub openapi: crate::openapi::DocumentCache,
}

/// Put in request extensions by a TCP listener: flips to true when it shuts down, so its
/// open watches end and graceful shutdown can finish.
#[derive(Clone)]
pub(crate) struct ListenerStop(pub watch::Receiver<bool>);

impl Inner {
    /// Runs a write under the lock, then wakes the watches.
    pub fn write<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        let (out, rv) = {
            let mut st = self.state.write();
            let out = f(&mut st);
            (out, st.resource_version)
        };
        self.changed.send_if_modified(|cur| {
            let moved = *cur != rv;
            *cur = rv;
            moved
        });
        out
    }
}

/// A fake Kubernetes API server. Cheap to clone: clones share one store.
#[derive(Clone)]
pub struct ApiServer {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for ApiServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiServer").field("resource_version", &self.resource_version()).finish()
    }
}

impl Default for ApiServer {
    fn default() -> Self {
        Self::new(Config::default())
    }
}

impl ApiServer {
    /// A server with the built-in resources and the four standard namespaces.
    pub fn new(config: Config) -> Self {
        let clock = config.clock_start.map(Clock::starting_at).unwrap_or_else(Clock::system);
        let state = State::new(Registry::builtin(), config.history, config.timeline_capacity);
        let (changed, _) = watch::channel(0);
        let server = Self {
            inner: Arc::new(Inner {
                state: RwLock::new(state),
                changed,
                clock,
                config,
                in_flight: Default::default(),
                openapi: Default::default(),
            }),
        };
        for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
            crate::objects::bootstrap_namespace(&server.inner, ns);
        }
        server
    }

    /// The axum router serving the Kubernetes API, without authentication.
    pub fn router(&self) -> Router {
        crate::handlers::router(self.inner.clone())
            .layer(DefaultBodyLimit::disable())
            .layer(tower_http::catch_panic::CatchPanicLayer::custom(panic_to_status))
    }

    /// A `kube::Client` that talks to this server in-process (no sockets), default namespace `default`.
    pub fn client(&self) -> kube::Client {
        self.client_as("kproof-in-process")
    }

    /// Like [`ApiServer::client`], with `user_agent` sent on every request (it appears in the timeline).
    pub fn client_as(&self, user_agent: &str) -> kube::Client {
        let ua = HeaderValue::from_str(user_agent).unwrap_or_else(|_| HeaderValue::from_static("kproof"));
        let svc = tower::ServiceBuilder::new()
            .map_request(move |mut req: http::Request<kube::client::Body>| {
                req.headers_mut().entry(http::header::USER_AGENT).or_insert(ua.clone());
                req
            })
            .service(self.router());
        kube::Client::new(svc, "default")
    }

    /// Serves the API on `addr` (use port 0 for any free port).
    ///
    /// Authentication is that of kube-apiserver with `--anonymous-auth=true`: a request with
    /// the kubeconfig's bearer token or with no credentials at all is served (there is no RBAC
    /// yet, so anonymous is allowed everything); a request with a wrong token gets 401.
    /// kubectl sends no token over plain HTTP, which is why anonymous requests must work.
    pub async fn serve_tcp(&self, addr: SocketAddr) -> std::io::Result<TcpServer> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let token = random_token();
        let expected = format!("Bearer {token}");
        let app = self.router().layer(axum::middleware::from_fn(move |req: Request, next: axum::middleware::Next| {
            let expected = expected.clone();
            async move {
                match req.headers().get(http::header::AUTHORIZATION) {
                    Some(v) if v.as_bytes() != expected.as_bytes() => ApiError::unauthorized().into_response(),
                    _ => next.run(req).await,
                }
            }
        }));
        let (stop_tx, mut stop) = watch::channel(false);
        let app = app.layer(axum::Extension(ListenerStop(stop.clone())));
        let task = tokio::spawn(async move {
            let shutdown = async move {
                let _ = stop.wait_for(|s| *s).await;
            };
            axum::serve(listener, app).with_graceful_shutdown(shutdown).await
        });
        Ok(TcpServer { addr, token, stop: stop_tx, task })
    }

    /// The current (latest) resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.inner.state.read().resource_version
    }

    /// Every write recorded so far (bounded by [`Config::timeline_capacity`]), oldest first.
    pub fn timeline(&self) -> Vec<TimelineEntry> {
        let records: Vec<_> = self.inner.state.read().timeline.iter().cloned().collect();
        records.iter().map(|r| r.entry()).collect()
    }

    /// Writes with a resourceVersion greater than `rv`.
    pub fn timeline_since(&self, rv: u64) -> Vec<TimelineEntry> {
        let st = self.inner.state.read();
        let start = st.timeline.partition_point(|e| e.resource_version() <= rv);
        let records: Vec<_> = st.timeline.range(start..).cloned().collect();
        drop(st);
        records.iter().map(|r| r.entry()).collect()
    }

    /// Drops the watch history, as an etcd compaction would: every watch or continue token
    /// from an older resourceVersion gets 410 Expired.
    pub fn compact(&self) {
        self.inner.write(|st| st.compact());
    }

    /// The server's clock.
    pub fn clock(&self) -> Clock {
        self.inner.clock
    }

    /// The server's configuration.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }
}

fn panic_to_status(_: Box<dyn std::any::Any + Send + 'static>) -> Response<Body> {
    ApiError::internal("the server panicked while handling the request").into_response()
}

fn random_token() -> String {
    use rand::Rng;
    let mut rng = rand::rng();
    (0..32).map(|_| format!("{:x}", rng.random_range(0..16u8))).collect()
}

/// A running TCP listener of an [`ApiServer`].
pub struct TcpServer {
    addr: SocketAddr,
    token: String,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl TcpServer {
    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The bearer token clients must send.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// A kubeconfig (context `kproof`, namespace `default`) pointing at this listener.
    pub fn kubeconfig(&self) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: kproof\n  cluster:\n    server: {url}\ncontexts:\n- name: kproof\n  context:\n    cluster: kproof\n    user: kproof\n    namespace: default\ncurrent-context: kproof\npreferences: {{}}\nusers:\n- name: kproof\n  user:\n    token: {token}\n",
            url = self.url(),
            token = self.token
        )
    }

    /// Writes [`TcpServer::kubeconfig`] to `path`, atomically (a reader polling for the file
    /// never sees it half-written).
    pub fn write_kubeconfig(&self, path: &Path) -> std::io::Result<()> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".tmp");
        std::fs::write(&tmp, self.kubeconfig())?;
        std::fs::rename(&tmp, path)
    }

    /// Stops accepting connections, ends open watches and waits for in-flight requests.
    pub async fn shutdown(self) -> std::io::Result<()> {
        self.stop.send_replace(true);
        match self.task.await {
            Ok(r) => r,
            Err(e) => Err(std::io::Error::other(e)),
        }
    }
}

/// Waits for Ctrl-C or SIGTERM: how the binaries know to shut down cleanly.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
}
