//! The HTTP API: request info (typed verb and subresource), content negotiation, one handler
//! file per verb, discovery, OpenAPI and server-side tables. Modelled on kube-apiserver's
//! `apiserver/pkg/endpoints`. The handlers share a [`Context`]: the state behind one lock, the
//! clock and the limits.

mod discovery;
mod filters;
pub(crate) use filters::{Peer, certificate_user};
mod handlers;

pub use handlers::INITIAL_EVENTS_END;
mod negotiation;
mod openapi;
mod openapi_v2;
mod protobuf;
mod query;
mod request;
mod tables;

use crate::controllers;
use crate::error::{ApiError, ApiResult};
use crate::registry::State;
use crate::registry::admission;
use crate::storage::StorageKey;
use crate::storage::UserInfo;
use apimachinery::Clock;
use axum::Router;
use axum::extract::{Request, State as AxState};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http::HeaderMap;
use parking_lot::RwLock;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::watch;

/// The limits and answers of the API that the server's configuration sets.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// Request bodies larger than this get 413.
    pub max_request_body_bytes: usize,
    /// How often a watch with `allowWatchBookmarks` gets a BOOKMARK.
    pub bookmark_interval: Duration,
    /// How long a watch without `timeoutSeconds` lasts.
    pub default_watch_timeout: Duration,
    /// The `gitVersion` that `/version` reports.
    pub kubernetes_version: String,
    /// Requests handled at once before new ones get 429 (0: no limit).
    pub max_requests_in_flight: usize,
}

/// What every handler shares.
pub(crate) struct Context {
    /// The objects and the served resource types, behind one lock.
    pub state: RwLock<State>,
    /// Per collection, the resourceVersion of its latest write: a watch wakes only on writes
    /// to its own collection (every write waking every watch cost more than the writes).
    changed: parking_lot::Mutex<HashMap<StorageKey, watch::Sender<u64>>>,
    pub clock: Clock,
    pub settings: Settings,
    /// Requests being handled now (see [`Settings::max_requests_in_flight`]).
    in_flight: AtomicUsize,
    /// OpenAPI v3 documents built so far.
    openapi: openapi::DocumentCache,
    /// Requests served so far, by client and verb (see [`RequestCounts`]).
    pub requests: parking_lot::Mutex<RequestCounts>,
    /// The bearer tokens the server issued, and whom they authenticate.
    pub tokens: crate::registry::Tokens,
    /// The administrator's token (`system:masters`).
    pub admin_token: String,
    /// Conflicts a test asked for (see [`ConflictFault`]).
    pub conflicts: parking_lot::Mutex<Vec<ConflictFault>>,
    /// Watch lags a test asked for (see [`WatchLag`]).
    pub watch_lags: parking_lot::Mutex<Vec<WatchLag>>,
    /// How many times the server was restarted ([`crate::ApiServer::restart`]): every watch
    /// open before a restart ends.
    pub restarts: watch::Sender<u64>,
}

/// A fault a test injects: the next `count` updates and patches by `user` of `resource` (and
/// `subresource`, `""` for the object itself) in `namespace` are answered 409 Conflict, as if
/// another writer had changed the object since the client read it. For certifying that a
/// controller re-reads and retries (obligation C16 of kproof's ReservedFor contract) without racing a real writer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConflictFault {
    /// The writer's user name (`system:serviceaccount:ns:name`).
    pub user: String,
    /// The object's namespace, `""` for cluster-scoped objects.
    pub namespace: String,
    /// API group, `""` for the core group.
    pub group: String,
    /// Lowercase plural (`resourceclaims`).
    pub resource: String,
    /// `""` for the object itself, `status` for its status.
    pub subresource: String,
    /// How many writes are still to be refused.
    pub count: usize,
}

/// A fault a test injects: every watch of `user` delivers the events about objects in
/// `namespace` `delay` after it would have, in their order (an event that follows a lagged one
/// in the same watch waits behind it). LIST and GET stay current, so the user's informer cache
/// runs behind the server: informer lag, for certifying that a controller does not trust a
/// stale cache (obligation C16 of kproof's ReservedFor contract: "inject 409s and informer lag").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchLag {
    /// The watcher's user name (`system:serviceaccount:ns:name`).
    pub user: String,
    /// The namespace of the objects whose events are late (`""`: cluster-scoped objects).
    pub namespace: String,
    /// How late, measured on the server's tokio clock (wall time unless the runtime is paused).
    pub delay: Duration,
}

/// A random bearer token (32 hex digits).
pub(crate) fn random_token() -> String {
    use rand::Rng;
    let mut rng = rand::rng();
    (0..32).map(|_| format!("{:x}", rng.random_range(0..16u8))).collect()
}

/// Requests served, by the client's `User-Agent` and then by verb: `GET`, `LIST` (a GET of a
/// collection), `WATCH`, `POST`, `PUT`, `PATCH`, `DELETE`. What a controller costs the server.
pub type RequestCounts = std::collections::BTreeMap<String, std::collections::BTreeMap<&'static str, u64>>;

/// The verb [`RequestCounts`] files `req` under.
fn counted_verb(req: &Request) -> &'static str {
    let watch = || {
        req.uri()
            .query()
            .is_some_and(|q| q.split('&').any(|kv| matches!(kv.split_once('='), Some(("watch", "true" | "1")))))
    };
    match *req.method() {
        http::Method::GET if watch() || req.uri().path().contains("/watch/") => "WATCH",
        http::Method::GET => {
            let collection = match request::ApiPath::parse(req.uri().path()) {
                Ok(request::ApiPath::Resource { rest, .. }) => match rest.as_slice() {
                    [_] => true,
                    [ns, _, sub] if ns == "namespaces" => sub != "status" && sub != "finalize",
                    _ => false,
                },
                _ => false,
            };
            if collection { "LIST" } else { "GET" }
        }
        http::Method::POST => "POST",
        http::Method::PUT => "PUT",
        http::Method::PATCH => "PATCH",
        http::Method::DELETE => "DELETE",
        _ => "OTHER",
    }
}

/// Put in request extensions by a TCP listener: flips to true when it shuts down, so its
/// open watches end and graceful shutdown can finish.
#[derive(Clone)]
pub(crate) struct ListenerStop(pub watch::Receiver<bool>);

impl Context {
    /// A context serving `state`.
    pub fn new(state: State, clock: Clock, settings: Settings) -> Self {
        let changed = Default::default();
        let admin_token = random_token();
        let admin = Arc::new(UserInfo::user("kproof-admin", &[crate::storage::MASTERS]));
        let tokens = state.tokens.clone();
        tokens.write().insert(admin_token.clone(), admin);
        Context {
            tokens,
            admin_token,
            state: RwLock::new(state),
            changed,
            clock,
            settings,
            in_flight: AtomicUsize::new(0),
            openapi: Default::default(),
            requests: Default::default(),
            conflicts: Default::default(),
            watch_lags: Default::default(),
            restarts: watch::channel(0).0,
        }
    }

    /// [`Context::write`], with the warnings the write raised (see [`State::warnings`]).
    pub fn write_warned<T>(
        &self,
        dry_run: bool,
        f: impl FnOnce(&mut State) -> ApiResult<T>,
    ) -> ApiResult<(T, Vec<String>)> {
        self.write(dry_run, |st| {
            let out = f(st)?;
            Ok((out, std::mem::take(&mut st.warnings)))
        })
    }

    /// [`Context::write_warned`] for a write that may call admission webhooks: each attempt
    /// runs under the lock until it meets webhooks it has no answer for, which are then called
    /// without the lock, and the write runs again (see `registry::admission`'s deferral).
    pub fn write_admitted<T>(
        &self,
        dry_run: bool,
        mut f: impl FnMut(&mut State) -> ApiResult<T>,
    ) -> ApiResult<(T, Vec<String>)> {
        /// Rounds before giving up on an object that changes on every call.
        const ROUNDS: usize = 8;
        struct Finish;
        impl Drop for Finish {
            fn drop(&mut self) {
                admission::finish();
            }
        }
        let _finish = Finish;
        for _ in 0..ROUNDS {
            match self.write_warned(dry_run, |st| admission::attempt(|| f(st))) {
                Err(e) if admission::is_deferred(&e) => admission::answer_pending(),
                other => return other,
            }
        }
        Err(ApiError::internal("admission webhooks did not settle: the object changed on every call"))
    }

    /// Runs a write under the lock, then (unless it is a dry run) the controllers it
    /// triggers, then wakes the watches.
    pub fn write<T>(&self, dry_run: bool, f: impl FnOnce(&mut State) -> ApiResult<T>) -> ApiResult<T> {
        let now = self.clock.now();
        let (out, rv, written) = {
            let mut st = self.state.write();
            st.warnings.clear();
            let out = f(&mut st);
            if out.is_ok() && !dry_run {
                controllers::reconcile(&mut st, now);
            }
            (out, st.store.resource_version, st.store.take_written())
        };
        if !written.is_empty() {
            let changed = self.changed.lock();
            for key in &written {
                if let Some(tx) = changed.get(key) {
                    tx.send_replace(rv);
                }
            }
        }
        out
    }

    /// Wakes on every write to the collection `key` (see [`Context::write`]).
    pub fn subscribe_writes(&self, key: &StorageKey) -> watch::Receiver<u64> {
        let mut changed = self.changed.lock();
        match changed.get(key) {
            Some(tx) => tx.subscribe(),
            None => {
                let (tx, rx) = watch::channel(0);
                changed.insert(key.clone(), tx);
                rx
            }
        }
    }
}

/// The router serving the Kubernetes API from `ctx`.
pub(crate) fn router(ctx: Arc<Context>) -> Router {
    Router::new()
        .route("/version", get(discovery::version))
        .route("/healthz", get(discovery::healthy))
        .route("/livez", get(discovery::healthy))
        .route("/readyz", get(discovery::healthy))
        .route(
            "/openapi/v3",
            get(
                |AxState(ctx): AxState<Arc<Context>>, headers: HeaderMap| async move { openapi::index(&ctx, &headers) },
            ),
        )
        .route("/openapi/v3/{*gv}", get(openapi_document))
        .route(
            "/openapi/v2",
            get(|AxState(ctx): AxState<Arc<Context>>, headers: HeaderMap| async move {
                openapi::v2(&ctx, &headers).unwrap_or_else(IntoResponse::into_response)
            }),
        )
        .fallback(dispatch)
        .layer(axum::middleware::from_fn_with_state(ctx.clone(), filters::authenticate_and_authorize))
        .with_state(ctx)
}

async fn openapi_document(AxState(ctx): AxState<Arc<Context>>, req: Request) -> Response {
    let (parts, _) = req.into_parts();
    let path = parts.uri.path().trim_start_matches("/openapi/v3/");
    openapi::document(&ctx, path, parts.uri.query(), &parts.headers).unwrap_or_else(|e| e.into_response())
}

/// One slot of [`Settings::max_requests_in_flight`], given back when dropped.
struct InFlightSlot<'a>(&'a AtomicUsize);

impl<'a> InFlightSlot<'a> {
    fn take(counter: &'a AtomicUsize, limit: usize) -> Option<Self> {
        let taken = counter.fetch_add(1, Ordering::AcqRel);
        let slot = Self(counter);
        (limit == 0 || taken < limit).then_some(slot)
    }
}

impl Drop for InFlightSlot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

async fn dispatch(AxState(ctx): AxState<Arc<Context>>, req: Request) -> Response {
    let Some(_slot) = InFlightSlot::take(&ctx.in_flight, ctx.settings.max_requests_in_flight) else {
        return ApiError::too_many_requests(1).into_response();
    };
    {
        let agent = req.headers().get(http::header::USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or("");
        let agent = agent.split('/').next().unwrap_or(agent);
        let mut counts = ctx.requests.lock();
        let per_verb = match counts.get_mut(agent) {
            Some(v) => v,
            None => counts.entry(agent.to_string()).or_default(),
        };
        *per_verb.entry(counted_verb(&req)).or_insert(0) += 1;
    }
    match handlers::handle(ctx.clone(), req).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::counted_verb;
    use axum::body::Body;
    use rstest::rstest;

    #[rstest]
    #[case::list_all("GET", "/api/v1/pods", "LIST")]
    #[case::list_namespaced("GET", "/api/v1/namespaces/ns/pods?labelSelector=a%3Db", "LIST")]
    #[case::list_group("GET", "/apis/ray.io/v1/namespaces/ns/rayclusters", "LIST")]
    #[case::list_namespaces("GET", "/api/v1/namespaces", "LIST")]
    #[case::get_object("GET", "/api/v1/namespaces/ns/pods/p", "GET")]
    #[case::get_namespace("GET", "/api/v1/namespaces/ns", "GET")]
    #[case::get_namespace_status("GET", "/api/v1/namespaces/ns/status", "GET")]
    #[case::get_subresource("GET", "/apis/ray.io/v1/namespaces/ns/rayservices/r/status", "GET")]
    #[case::get_cluster_scoped("GET", "/api/v1/nodes/n", "GET")]
    #[case::discovery("GET", "/apis/ray.io/v1", "GET")]
    #[case::watch_param("GET", "/api/v1/pods?watch=true&resourceVersion=1", "WATCH")]
    #[case::watch_path("GET", "/api/v1/watch/namespaces/ns/pods", "WATCH")]
    #[case::not_a_watch("GET", "/api/v1/pods?watch=false", "LIST")]
    #[case::create("POST", "/api/v1/namespaces/ns/pods", "POST")]
    #[case::status_write("PUT", "/api/v1/namespaces/ns/pods/p/status", "PUT")]
    #[case::delete("DELETE", "/api/v1/namespaces/ns/pods/p", "DELETE")]
    fn requests_are_counted_under_their_verb(#[case] method: &str, #[case] uri: &str, #[case] verb: &str) {
        let req = http::Request::builder().method(method).uri(uri).body(Body::empty()).unwrap();
        assert_eq!(counted_verb(&req), verb);
    }
}
