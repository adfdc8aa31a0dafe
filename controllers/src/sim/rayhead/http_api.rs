//! What the simulated Ray head answers over HTTP: the dashboard's Serve REST API (read and
//! submit applications, the resource demand the autoscaler reads) and the Serve proxies
//! (health, and requests routed by `route_prefix`), by the authority a request was sent to.

use super::{Shared, Target, annotation_on};
use axum::Router;
use axum::body::Body;
use serde_json::{Value, json};
use std::sync::Arc;

fn authority_target(shared: &Shared, request: &http::Request<Body>) -> Option<Target> {
    let authority = request
        .uri()
        .authority()
        .map(|a| a.to_string())
        .or_else(|| request.headers().get(http::header::HOST).and_then(|h| h.to_str().ok()).map(str::to_string))?;
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) => (h.to_string(), p.parse().ok()?),
        None => (authority.clone(), 80),
    };
    shared.resolve(&host, port)
}

fn reply(status: u16, body: impl Into<Body>, json: bool) -> http::Response<Body> {
    let mut b = http::Response::builder().status(status);
    if json {
        b = b.header(http::header::CONTENT_TYPE, "application/json");
    }
    b.body(body.into()).unwrap_or_default()
}

/// The router every simulated head and proxy answers with.
pub(super) fn router(shared: Arc<Shared>) -> Router {
    Router::new().fallback(move |request: http::Request<Body>| {
        let shared = shared.clone();
        async move { handle(&shared, request).await }
    })
}

async fn handle(shared: &Shared, request: http::Request<Body>) -> http::Response<Body> {
    let Some(target) = authority_target(shared, &request) else {
        return reply(502, "no such endpoint in the simulated cluster", false);
    };
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    match target {
        Target::Dashboard(ns, cluster) => match (method.as_str(), path.as_str()) {
            ("GET", "/api/serve/applications/" | "/api/serve/applications") => {
                let state = shared.observe(&ns, &cluster);
                let views = state.as_ref().map(|s| shared.views(&ns, &cluster, s)).unwrap_or_default();
                let applications: serde_json::Map<String, Value> = views
                    .iter()
                    .map(|(name, v)| {
                        let deployments: serde_json::Map<String, Value> = v
                            .deployments
                            .iter()
                            .map(|(d, status, message)| {
                                (
                                    d.clone(),
                                    json!({"name": d, "status": status, "message": message, "route_prefix": null}),
                                )
                            })
                            .collect();
                        (
                            name.clone(),
                            json!({"name": name, "status": v.status, "message": v.message,
                                   "route_prefix": v.route_prefix, "docs_path": null, "deployments": deployments}),
                        )
                    })
                    .collect();
                let capacity = state.and_then(|s| s.target_capacity);
                let body = json!({
                    "controller_info": {"node_id": cluster},
                    "proxy_location": "EveryNode",
                    "deploy_mode": "MULTI_APP",
                    "target_capacity": capacity,
                    "applications": applications,
                });
                reply(200, body.to_string(), true)
            }
            ("PUT", "/api/serve/applications/" | "/api/serve/applications") => {
                let rc = shared.cluster(&ns, &cluster);
                let fails = shared.knobs.lock().submit_fails.applies(rc.as_deref())
                    || annotation_on(rc.as_deref(), "serve-submit-fails").as_deref() == Some("true");
                if fails {
                    return reply(500, "simulated Serve submission failure (kproof knob submit-fails)", false);
                }
                let bytes = match axum::body::to_bytes(request.into_body(), 16 * 1024 * 1024).await {
                    Ok(b) => b,
                    Err(e) => return reply(400, format!("cannot read the body: {e}"), false),
                };
                let body: Value = match serde_json::from_slice(&bytes) {
                    Ok(v) => v,
                    Err(e) => return reply(400, format!("the body is not JSON: {e}"), false),
                };
                match shared.submit(&ns, &cluster, &body) {
                    Ok(()) => reply(200, "", false),
                    Err(e) => reply(400, e, false),
                }
            }
            ("GET", "/api/kproof/resource-demand") => {
                let (cpu, zero) = shared.demand(&ns, &cluster);
                reply(200, json!({"cpuMillis": cpu, "zeroCpuReplicas": zero}).to_string(), true)
            }
            _ => reply(404, format!("{method} {path} is not served by the simulated Ray dashboard"), false),
        },
        Target::Proxy(ns, cluster, _pod) => {
            let rc = shared.cluster(&ns, &cluster);
            let proxy_down = shared.knobs.lock().proxy_unhealthy.applies(rc.as_deref())
                || annotation_on(rc.as_deref(), "serve-proxy-unhealthy").as_deref() == Some("true");
            if path == "/-/healthz" {
                return if proxy_down { reply(503, "unhealthy", false) } else { reply(200, "success", false) };
            }
            if proxy_down {
                return reply(503, "the Serve proxy is unhealthy", false);
            }
            let Some(state) = shared.observe(&ns, &cluster) else {
                return reply(404, "Path not found (no Serve application is deployed)", false);
            };
            let views = shared.views(&ns, &cluster, &state);
            let app = views
                .iter()
                .filter(|(_, v)| path_matches(&v.route_prefix, &path))
                .max_by_key(|(_, v)| v.route_prefix.len());
            match app {
                None => reply(404, format!("Path '{path}' not found"), false),
                Some((name, v)) if v.servable => reply(200, format!("served by {name} on {cluster}"), false),
                Some((name, _)) => reply(503, format!("no running replica of application {name} on {cluster}"), false),
            }
        }
    }
}

pub(super) fn path_matches(prefix: &str, path: &str) -> bool {
    let prefix = prefix.trim_end_matches('/');
    prefix.is_empty() || path == prefix || path.starts_with(&format!("{prefix}/"))
}
