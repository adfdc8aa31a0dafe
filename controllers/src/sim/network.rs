//! The simulated cluster network: in-process HTTP endpoints (the Ray dashboards, the Serve
//! proxies) reachable by host and port without sockets, and the same dispatch served over TCP as
//! an HTTP forward proxy for processes outside (the real KubeRay operator, with `HTTP_PROXY`).
//!
//! An endpoint registers an axum [`Router`] together with a predicate saying which `host:port`
//! authorities it answers (for the Ray head: `<svc>.<ns>.svc.cluster.local:8265` and
//! `<pod IP>:8000`). [`SimNetwork::send`] routes a request by its URI's authority (absolute
//! form, as a client talking to a proxy sends it) or its `Host` header. Nothing claims an
//! authority: the request fails like a refused connection.

use axum::Router;
use axum::body::Body;
use bytes::Bytes;
use futures::future::BoxFuture;
use parking_lot::RwLock;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tower::ServiceExt;

/// A request on the simulated network (absolute URI, e.g. `http://10.244.0.5:8000/-/healthz`).
pub type HttpRequest = http::Request<Bytes>;
/// A response on the simulated network.
pub type HttpResponse = http::Response<Bytes>;

/// The most a simulated endpoint's response body may hold.
const MAX_BODY: usize = 16 * 1024 * 1024;

/// Why a request got no HTTP answer.
#[derive(Debug, thiserror::Error)]
pub enum NetworkError {
    /// Nothing listens at the address (no endpoint claims it, or the pod is not running).
    #[error("dial tcp {0}: connect: connection refused")]
    Refused(String),
    /// The request names no host.
    #[error("the request {0} names no host")]
    NoHost(String),
    /// The endpoint's response body could not be read.
    #[error("reading the response from {authority}: {message}")]
    Body {
        /// Where the request went.
        authority: String,
        /// What went wrong.
        message: String,
    },
}

/// Something that sends HTTP requests into the cluster network: what controllers that talk to
/// pods and services (the RayService controller calling dashboards and Serve proxies) are given
/// instead of a socket-level client.
pub trait ClusterHttp: Send + Sync {
    /// Sends `request` and returns the answer, or why there was none.
    fn send(&self, request: HttpRequest) -> BoxFuture<'static, Result<HttpResponse, NetworkError>>;
}

/// Decides whether an endpoint answers `host` on `port`.
pub type Claims = Arc<dyn Fn(&str, u16) -> bool + Send + Sync>;

struct Registered {
    id: u64,
    name: String,
    claims: Claims,
    router: Router,
}

/// The in-process network of simulated HTTP endpoints; cheap to clone (one shared registry).
#[derive(Clone, Default)]
pub struct SimNetwork {
    endpoints: Arc<RwLock<Vec<Registered>>>,
    next_id: Arc<AtomicU64>,
}

impl std::fmt::Debug for SimNetwork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = self.endpoints.read().iter().map(|e| e.name.clone()).collect();
        f.debug_struct("SimNetwork").field("endpoints", &names).finish()
    }
}

/// Keeps an endpoint on the network; dropping it takes the endpoint off.
pub struct Registration {
    network: SimNetwork,
    id: u64,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.network.endpoints.write().retain(|e| e.id != self.id);
    }
}

/// Splits `host[:port]` (port 80 when absent).
fn split_authority(authority: &str) -> (String, u16) {
    match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => match p.parse() {
            Ok(port) => (h.trim_matches(['[', ']']).to_string(), port),
            Err(_) => (authority.to_string(), 80),
        },
        _ => (authority.to_string(), 80),
    }
}

/// The authority a request is for: the URI's (absolute form), else the `Host` header.
fn authority_of<B>(request: &http::Request<B>) -> Option<String> {
    request
        .uri()
        .authority()
        .map(|a| a.to_string())
        .or_else(|| request.headers().get(http::header::HOST).and_then(|h| h.to_str().ok()).map(str::to_string))
}

impl SimNetwork {
    /// An empty network.
    pub fn new() -> Self {
        Self::default()
    }

    /// Puts `router` on the network for the authorities `claims` accepts, until the returned
    /// registration is dropped. Endpoints registered earlier win when several claim one address.
    pub fn register(&self, name: impl Into<String>, claims: Claims, router: Router) -> Registration {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        self.endpoints.write().push(Registered { id, name: name.into(), claims, router });
        Registration { network: self.clone(), id }
    }

    /// The names of the registered endpoints (for logs and tests).
    pub fn endpoint_names(&self) -> Vec<String> {
        self.endpoints.read().iter().map(|e| e.name.clone()).collect()
    }

    fn route(&self, authority: &str) -> Option<Router> {
        let (host, port) = split_authority(authority);
        self.endpoints.read().iter().find(|e| (e.claims)(&host, port)).map(|e| e.router.clone())
    }

    /// Delivers a request to the endpoint that claims its authority.
    pub async fn send_body(&self, request: http::Request<Body>) -> Result<http::Response<Body>, NetworkError> {
        let authority = authority_of(&request).ok_or_else(|| NetworkError::NoHost(request.uri().to_string()))?;
        let router = self.route(&authority).ok_or_else(|| NetworkError::Refused(authority.clone()))?;
        // A Router's error type is Infallible.
        Ok(router.oneshot(request).await.unwrap_or_else(|never| match never {}))
    }

    /// [`Self::send_body`] with the bodies collected.
    pub async fn send(&self, request: HttpRequest) -> Result<HttpResponse, NetworkError> {
        let authority = authority_of(&request).unwrap_or_default();
        let response = self.send_body(request.map(Body::from)).await?;
        let (parts, body) = response.into_parts();
        let bytes = axum::body::to_bytes(body, MAX_BODY)
            .await
            .map_err(|e| NetworkError::Body { authority, message: e.to_string() })?;
        Ok(http::Response::from_parts(parts, bytes))
    }

    /// A router that forwards every request it gets into this network: what
    /// [`serve_http_proxy`] serves. A refused request is answered `502 Bad Gateway` with the
    /// reason, as an HTTP proxy does.
    pub fn proxy_router(&self) -> Router {
        let network = self.clone();
        Router::new().fallback(move |request: http::Request<Body>| {
            let network = network.clone();
            async move {
                match network.send_body(request).await {
                    Ok(response) => response,
                    Err(e) => http::Response::builder()
                        .status(http::StatusCode::BAD_GATEWAY)
                        .body(Body::from(e.to_string()))
                        .unwrap_or_default(),
                }
            }
        })
    }
}

impl ClusterHttp for SimNetwork {
    fn send(&self, request: HttpRequest) -> BoxFuture<'static, Result<HttpResponse, NetworkError>> {
        let network = self.clone();
        Box::pin(async move { SimNetwork::send(&network, request).await })
    }
}

/// Serves `network` on `listener` as an HTTP forward proxy: clients send absolute-form requests
/// (`GET http://10.244.0.5:8000/-/healthz HTTP/1.1`), as Go's `net/http` does with `HTTP_PROXY`
/// set, and get the simulated endpoint's answer. Runs until the listener fails.
pub async fn serve_http_proxy(listener: tokio::net::TcpListener, network: SimNetwork) -> std::io::Result<()> {
    axum::serve(listener, network.proxy_router()).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::get;

    fn healthz_network() -> (SimNetwork, Registration) {
        let net = SimNetwork::new();
        let reg = net.register(
            "proxy",
            Arc::new(|host: &str, port: u16| host == "10.0.0.1" && port == 8000),
            Router::new().route("/-/healthz", get(|| async { "success" })),
        );
        (net, reg)
    }

    #[tokio::test]
    async fn requests_reach_the_endpoint_that_claims_their_authority() {
        let (net, _reg) = healthz_network();
        let request = http::Request::get("http://10.0.0.1:8000/-/healthz").body(Bytes::new()).unwrap();
        let response = net.send(request).await.unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(response.body().as_ref(), b"success");
        let elsewhere = http::Request::get("http://10.0.0.2:8000/-/healthz").body(Bytes::new()).unwrap();
        let err = net.send(elsewhere).await.unwrap_err();
        assert_eq!(err.to_string(), "dial tcp 10.0.0.2:8000: connect: connection refused");
    }

    #[tokio::test]
    async fn dropping_the_registration_takes_the_endpoint_off() {
        let (net, reg) = healthz_network();
        drop(reg);
        let request = http::Request::get("http://10.0.0.1:8000/-/healthz").body(Bytes::new()).unwrap();
        assert!(matches!(net.send(request).await, Err(NetworkError::Refused(_))));
    }

    #[tokio::test]
    async fn the_forward_proxy_serves_absolute_form_requests_over_tcp() {
        let (net, _reg) = healthz_network();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(serve_http_proxy(listener, net));
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        for (target, status) in [("http://10.0.0.1:8000/-/healthz", "200"), ("http://10.0.0.9:8000/-/healthz", "502")] {
            let req = format!("GET {target} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n", &target[7..20]);
            let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
            s.write_all(req.as_bytes()).await.unwrap();
            let mut out = String::new();
            s.read_to_string(&mut out).await.unwrap();
            assert!(out.starts_with(&format!("HTTP/1.1 {status}")), "{target}: {out}");
        }
        stream.shutdown().await.unwrap();
    }

    #[test]
    fn authorities_split_into_host_and_port() {
        assert_eq!(split_authority("a.b.svc.cluster.local:8265"), ("a.b.svc.cluster.local".into(), 8265));
        assert_eq!(split_authority("10.0.0.1"), ("10.0.0.1".into(), 80));
        assert_eq!(split_authority("[::1]:8000"), ("::1".into(), 8000));
    }
}
