//! The server: configuration, the state its parts share, the axum router with its in-process
//! transport (a tower service for `kube::Client`), and TCP on loopback with a kubeconfig
//! (`tcp`).

mod config;
mod tcp;
mod tls;

pub use config::{Config, FeatureGate, FeatureGateError, FeatureGates, ServerDefect};
pub use tcp::{TcpServer, shutdown_signal};
pub use tls::HttpsServer;

use crate::endpoints::{self, Context, Settings};
use crate::error::ApiError;
use crate::registry::store::{self, Write};
use crate::registry::{Registry, State};
use crate::storage::{Store, TimelineEntry, UserInfo, Verb};
use apimachinery::Clock;
use axum::Router;
use axum::body::Body;
use axum::extract::DefaultBodyLimit;
use axum::response::{IntoResponse, Response};
use http::HeaderValue;
use jiff::Timestamp;
use serde_json::json;
use std::sync::Arc;

/// A fake Kubernetes API server. Cheap to clone: clones share one store.
#[derive(Clone)]
pub struct ApiServer {
    ctx: Arc<Context>,
    config: Arc<Config>,
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

/// The namespaces every cluster starts with.
const BOOTSTRAP_NAMESPACES: [&str; 4] = ["default", "kube-system", "kube-public", "kube-node-lease"];

impl ApiServer {
    /// A server with the built-in resources and the four standard namespaces.
    pub fn new(config: Config) -> Self {
        let clock = Clock::following_tokio(config.clock_start.unwrap_or_else(Timestamp::now));
        let state = State {
            store: Store::new(config.history, config.timeline_capacity),
            registry: Registry::builtin(config.feature_gates.clone(), config.active_defect()),
            rbac: config.rbac,
            controller_manager: !config.envtest,
            webhooks: Default::default(),
            warnings: Vec::new(),
            tokens: Default::default(),
        };
        let settings = Settings {
            max_request_body_bytes: config.max_request_body_bytes,
            bookmark_interval: config.bookmark_interval,
            default_watch_timeout: config.default_watch_timeout,
            kubernetes_version: config.kubernetes_version.clone(),
            max_requests_in_flight: config.max_requests_in_flight,
        };
        let server = Self { ctx: Arc::new(Context::new(state, clock, settings)), config: Arc::new(config) };
        for ns in BOOTSTRAP_NAMESPACES {
            server.bootstrap(
                "namespaces",
                "",
                "v1",
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
            );
        }
        for class in crate::registry::admission::system_priority_classes() {
            server.bootstrap("priorityclasses", "scheduling.k8s.io", "v1", class);
        }
        if server.config.rbac {
            let (roles, bindings) = crate::registry::rbac::bootstrap::policy();
            for role in roles {
                server.bootstrap("clusterroles", "rbac.authorization.k8s.io", "v1", role);
            }
            for binding in bindings {
                server.bootstrap("clusterrolebindings", "rbac.authorization.k8s.io", "v1", binding);
            }
        }
        server
    }

    /// Creates one of the objects every cluster starts with.
    fn bootstrap(&self, plural: &str, group: &str, version: &str, obj: serde_json::Value) {
        let now = self.ctx.clock.now();
        let ctx = store::system_ctx("kube-apiserver/bootstrap", Verb::Create, None);
        let created = self.ctx.write(false, |st| {
            let Some(rt) = st.registry.get(group, version, plural) else { return Ok(()) };
            let w = Write { ctx: &ctx, now, dry_run: false, fields: None };
            store::create(st, &rt, "", obj, &w).map(drop)
        });
        debug_assert!(created.is_ok(), "bootstrap {plural}: {created:?}");
    }

    /// The bearer token of the cluster administrator (`kproof-admin`, in `system:masters`):
    /// the token of [`ApiServer::client`] and of the TCP listener's kubeconfig.
    pub fn admin_token(&self) -> String {
        self.ctx.admin_token.clone()
    }

    /// A new bearer token that authenticates as `user` (see [`UserInfo::user`] and
    /// [`UserInfo::service_account`]).
    pub fn issue_token(&self, user: UserInfo) -> String {
        let token = endpoints::random_token();
        self.ctx.tokens.write().insert(token.clone(), Arc::new(user));
        token
    }

    /// A `kube::Client` talking in-process as the holder of `token`.
    pub fn client_with_token(&self, token: &str) -> kube::Client {
        let auth = HeaderValue::from_str(&format!("Bearer {token}")).unwrap_or_else(|_| HeaderValue::from_static(""));
        let svc = tower::ServiceBuilder::new()
            .map_request(move |mut req: http::Request<kube::client::Body>| {
                req.headers_mut().entry(http::header::USER_AGENT).or_insert(HeaderValue::from_static("kproof"));
                req.headers_mut().entry(http::header::AUTHORIZATION).or_insert(auth.clone());
                req
            })
            .service(self.router());
        kube::Client::new(svc, "default")
    }

    /// The axum router serving the Kubernetes API: bearer tokens, impersonation and (when
    /// configured) RBAC, like kube-apiserver with `--anonymous-auth=true`.
    pub fn router(&self) -> Router {
        endpoints::router(self.ctx.clone())
            .layer(DefaultBodyLimit::disable())
            .layer(tower_http::catch_panic::CatchPanicLayer::custom(panic_to_status))
    }

    /// A `kube::Client` that talks to this server in-process (no sockets), default namespace `default`.
    pub fn client(&self) -> kube::Client {
        self.client_as("kproof-in-process")
    }

    /// Like [`ApiServer::client`], with `user_agent` sent on every request (it appears in the timeline).
    pub fn client_as(&self, user_agent: &str) -> kube::Client {
        kube::Client::new(self.admin_service(user_agent), "default")
    }

    /// Like [`ApiServer::client_as`], for a controller running in-process: what it reads (objects,
    /// lists, watch events, the answers to its writes) comes without `metadata.managedFields`, as
    /// a controller-runtime cache with `TransformStripManagedFields` holds objects. Nothing the
    /// server does changes: a write without `managedFields` keeps the stored ones, as a write
    /// that sends them back unchanged does (and a status write ignores them either way). It
    /// spares each controller decoding, cloning and sending back the largest part of most
    /// objects, which no controller reads.
    pub fn controller_client(&self, user_agent: &str) -> kube::Client {
        let svc = tower::ServiceBuilder::new()
            .map_response(|resp: http::Response<Body>| {
                let json = resp
                    .headers()
                    .get(http::header::CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok())
                    .is_some_and(|t| t.starts_with("application/json") && !t.contains("as="));
                let (mut parts, body) = resp.into_parts();
                if json {
                    // The body shrinks: a length read before the cut would be wrong.
                    parts.headers.remove(http::header::CONTENT_LENGTH);
                }
                http::Response::from_parts(parts, WithoutManagedFields { inner: body, json })
            })
            .service(self.admin_service(user_agent));
        kube::Client::new(svc, "default")
    }

    /// The router, as the cluster administrator with `user_agent` unless a request says otherwise.
    fn admin_service(
        &self,
        user_agent: &str,
    ) -> impl tower::Service<
        http::Request<kube::client::Body>,
        Response = http::Response<Body>,
        Error = std::convert::Infallible,
        Future: Send,
    > + Clone
    + Send
    + 'static {
        let ua = HeaderValue::from_str(user_agent).unwrap_or_else(|_| HeaderValue::from_static("kproof"));
        let auth = HeaderValue::from_str(&format!("Bearer {}", self.ctx.admin_token))
            .unwrap_or_else(|_| HeaderValue::from_static(""));
        tower::ServiceBuilder::new()
            .map_request(move |mut req: http::Request<kube::client::Body>| {
                req.headers_mut().entry(http::header::USER_AGENT).or_insert(ua.clone());
                req.headers_mut().entry(http::header::AUTHORIZATION).or_insert(auth.clone());
                req
            })
            .service(self.router())
    }

    /// Registers a validating webhook: from now on every create and update of the resources it
    /// handles is checked by it, after the server's own validation (see [`ValidatingWebhook`]).
    ///
    /// [`ValidatingWebhook`]: crate::ValidatingWebhook
    pub fn add_validating_webhook(&self, webhook: std::sync::Arc<dyn crate::ValidatingWebhook>) {
        self.ctx.state.write().webhooks.validating.push(webhook);
    }

    /// Registers a mutating webhook: from now on every create of the resources it handles is
    /// defaulted by it before the server validates it (see [`MutatingWebhook`]).
    ///
    /// [`MutatingWebhook`]: crate::MutatingWebhook
    pub fn add_mutating_webhook(&self, webhook: std::sync::Arc<dyn crate::MutatingWebhook>) {
        self.ctx.state.write().webhooks.mutating.push(webhook);
    }

    /// Answers the next writes a [`ConflictFault`](crate::endpoints::ConflictFault) describes
    /// with 409 Conflict (after authentication and authorization, before the handler).
    pub fn inject_conflicts(&self, fault: crate::endpoints::ConflictFault) {
        self.ctx.conflicts.lock().push(fault);
    }

    /// Delays the watch events a [`WatchLag`](crate::endpoints::WatchLag) describes, from now on
    /// (watches already open included); a second lag for the same user and namespace replaces
    /// the first.
    pub fn inject_watch_lag(&self, lag: crate::endpoints::WatchLag) {
        let mut lags = self.ctx.watch_lags.lock();
        lags.retain(|l| l.user != lag.user || l.namespace != lag.namespace);
        lags.push(lag);
    }

    /// How many writes of the injected conflicts are still to be refused, in injection order.
    pub fn conflicts_left(&self) -> Vec<usize> {
        self.ctx.conflicts.lock().iter().map(|f| f.count).collect()
    }

    /// The requests served so far, by client (`User-Agent` up to its first `/`) and verb.
    pub fn request_counts(&self) -> crate::endpoints::RequestCounts {
        self.ctx.requests.lock().clone()
    }

    /// The current (latest) resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.ctx.state.read().store.resource_version
    }

    /// The resourceVersion of the last write that could change how objects of `kind` read: a
    /// write of that kind, or of a CustomResourceDefinition (its schema defaults and versions
    /// shape how custom resources are served).
    pub fn resource_version_of_kind(&self, kind: &str) -> u64 {
        let st = self.ctx.state.read();
        st.store.kind_version(kind).max(st.store.kind_version("CustomResourceDefinition"))
    }

    /// Every write recorded so far (bounded by [`Config::timeline_capacity`]), oldest first.
    pub fn timeline(&self) -> Vec<TimelineEntry> {
        let records: Vec<_> = self.ctx.state.read().store.timeline.iter().cloned().collect();
        records.iter().map(|r| r.entry()).collect()
    }

    /// Writes with a resourceVersion greater than `rv`.
    pub fn timeline_since(&self, rv: u64) -> Vec<TimelineEntry> {
        let st = self.ctx.state.read();
        let timeline = &st.store.timeline;
        let start = timeline.partition_point(|e| e.resource_version() <= rv);
        let records: Vec<_> = timeline.range(start..).cloned().collect();
        drop(st);
        records.iter().map(|r| r.entry()).collect()
    }

    /// Drops the watch history, as an etcd compaction would: every watch or continue token
    /// from an older resourceVersion gets 410 Expired.
    pub fn compact(&self) {
        self.ctx.state.write().store.compact();
    }

    /// What clients see of a kube-apiserver restarting with etcd keeping the data: every open
    /// watch ends, and the watch history is compacted, as the new process's watch cache starts
    /// at the current resourceVersion (a client resuming a watch from an older one gets 410
    /// Expired and lists again). Objects, resourceVersions and UIDs are kept.
    pub fn restart(&self) {
        self.compact();
        self.ctx.restarts.send_modify(|n| *n += 1);
    }

    /// The server's clock: every timestamp it writes comes from it.
    pub fn clock(&self) -> Clock {
        self.ctx.clock.clone()
    }

    /// The server's configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }
}

fn panic_to_status(_: Box<dyn std::any::Any + Send + 'static>) -> Response<Body> {
    ApiError::internal("the server panicked while handling the request").into_response()
}

/// A response body whose JSON documents lose `metadata.managedFields` (see
/// [`ApiServer::controller_client`]). The server writes whole documents into each frame (a
/// watch frame holds whole events), so each frame is cut on its own.
struct WithoutManagedFields {
    inner: Body,
    json: bool,
}

impl http_body::Body for WithoutManagedFields {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        let json = self.json;
        std::pin::Pin::new(&mut self.inner).poll_frame(cx).map_ok(|frame| {
            if !json {
                return frame;
            }
            frame.map_data(|data| match apimachinery::json::strip_managed_fields(&data) {
                Some(cut) => bytes::Bytes::from(cut),
                None => data,
            })
        })
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        if self.json { http_body::SizeHint::default() } else { self.inner.size_hint() }
    }
}
