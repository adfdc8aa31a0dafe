//! Discovery: `/api`, `/apis`, per-group and per-group-version documents, in the legacy shape
//! and the aggregated `apidiscovery.k8s.io` v2 and v2beta1 shapes, chosen by the Accept header.

use super::Context;
use super::negotiation::json_response;
use crate::error::{ApiError, ApiResult};
use crate::registry::ResourceType;
use crate::storage::Subresource;
use axum::extract::State as AxState;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde_json::{Value, json};
use std::sync::Arc;

/// The shape a discovery answer takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DiscoveryFormat {
    Legacy,
    AggregatedV2,
    AggregatedV2Beta1,
}

impl DiscoveryFormat {
    fn version(self) -> &'static str {
        match self {
            DiscoveryFormat::AggregatedV2Beta1 => "v2beta1",
            _ => "v2",
        }
    }
}

/// Picks the first media type in the client's Accept list that the server can produce.
fn negotiate(headers: &HeaderMap) -> ApiResult<DiscoveryFormat> {
    let Some(accept) = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).filter(|s| !s.trim().is_empty())
    else {
        return Ok(DiscoveryFormat::Legacy);
    };
    for range in accept.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or_default().to_ascii_lowercase();
        let (mut g, mut v, mut as_) = (None, None, None);
        for p in parts {
            match p.split_once('=') {
                Some(("g", x)) => g = Some(x),
                Some(("v", x)) => v = Some(x),
                Some(("as", x)) => as_ = Some(x),
                _ => {}
            }
        }
        match (media.as_str(), g, v, as_) {
            ("application/json", Some("apidiscovery.k8s.io"), Some("v2"), Some("APIGroupDiscoveryList")) => {
                return Ok(DiscoveryFormat::AggregatedV2);
            }
            ("application/json", Some("apidiscovery.k8s.io"), Some("v2beta1"), Some("APIGroupDiscoveryList")) => {
                return Ok(DiscoveryFormat::AggregatedV2Beta1);
            }
            ("application/json" | "*/*" | "application/*", None, None, None) => return Ok(DiscoveryFormat::Legacy),
            _ => {}
        }
    }
    Err(ApiError::not_acceptable(accept))
}

fn aggregated_response(format: DiscoveryFormat, items: Vec<Value>) -> Response {
    let v = format.version();
    let body = json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": format!("apidiscovery.k8s.io/{v}"),
        "metadata": {},
        "items": items,
    });
    let mut r = json_response(StatusCode::OK, &body);
    let ct = format!("application/json;g=apidiscovery.k8s.io;v={v};as=APIGroupDiscoveryList");
    if let Ok(h) = HeaderValue::from_str(&ct) {
        r.headers_mut().insert(header::CONTENT_TYPE, h);
    }
    r.headers_mut().insert(header::VARY, HeaderValue::from_static("Accept"));
    r
}

fn kind_ref(group: &str, version: &str, kind: &str) -> Value {
    json!({"group": group, "version": version, "kind": kind})
}

/// The subresources of a resource: name, response kind, verbs.
fn subresources(rt: &ResourceType) -> Vec<(&'static str, Value, Vec<&'static str>)> {
    let mut out = Vec::new();
    if rt.has_subresource(Subresource::Finalize) {
        out.push(("finalize", kind_ref("", "v1", "Namespace"), vec!["update"]));
    }
    if rt.has_subresource(Subresource::Binding) {
        out.push(("binding", kind_ref("", "v1", "Binding"), vec!["create"]));
    }
    if rt.scale.is_some() {
        out.push(("scale", kind_ref("autoscaling", "v1", "Scale"), vec!["get", "patch", "update"]));
    }
    if rt.status {
        out.push(("status", kind_ref(&rt.group, &rt.version, &rt.kind), vec!["get", "patch", "update"]));
    }
    out
}

fn aggregated_resource(rt: &ResourceType) -> Value {
    let mut r = json!({
        "resource": rt.plural,
        "responseKind": kind_ref(&rt.group, &rt.version, &rt.kind),
        "scope": if rt.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": rt.singular,
        "verbs": rt.verbs(),
    });
    if !rt.short_names.is_empty() {
        r["shortNames"] = json!(rt.short_names);
    }
    if !rt.categories.is_empty() {
        r["categories"] = json!(rt.categories);
    }
    let subs: Vec<Value> = subresources(rt)
        .into_iter()
        .map(|(name, kind, verbs)| json!({"subresource": name, "responseKind": kind, "verbs": verbs}))
        .collect();
    if !subs.is_empty() {
        r["subresources"] = Value::Array(subs);
    }
    r
}

fn aggregated_group(ctx: &Context, group: &str, versions: &[String]) -> Value {
    let st = ctx.state.read();
    let versions: Vec<Value> = versions
        .iter()
        .map(|v| {
            let resources: Vec<Value> =
                st.registry.resources(group, v).iter().map(|rt| aggregated_resource(rt)).collect();
            json!({"version": v, "resources": resources, "freshness": "Current"})
        })
        .collect();
    let meta = if group.is_empty() {
        json!({"creationTimestamp": null})
    } else {
        json!({"name": group, "creationTimestamp": null})
    };
    json!({"metadata": meta, "versions": versions})
}

fn groups_snapshot(ctx: &Context) -> Vec<(String, Vec<String>)> {
    ctx.state.read().registry.groups()
}

/// `GET /api`.
pub(super) fn core_versions(ctx: &Context, headers: &HeaderMap) -> ApiResult<Response> {
    match negotiate(headers)? {
        DiscoveryFormat::Legacy => Ok(json_response(
            StatusCode::OK,
            &json!({
                "kind": "APIVersions",
                "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:6443"}],
            }),
        )),
        f => Ok(aggregated_response(f, vec![aggregated_group(ctx, "", &["v1".to_string()])])),
    }
}

fn group_entry(group: &str, versions: &[String]) -> Value {
    let gv = |v: &str| json!({"groupVersion": format!("{group}/{v}"), "version": v});
    json!({
        "name": group,
        "versions": versions.iter().map(|v| gv(v)).collect::<Vec<_>>(),
        "preferredVersion": gv(versions.first().map(String::as_str).unwrap_or("v1")),
    })
}

/// `GET /apis`.
pub(super) fn groups(ctx: &Context, headers: &HeaderMap) -> ApiResult<Response> {
    let groups: Vec<(String, Vec<String>)> = groups_snapshot(ctx).into_iter().filter(|(g, _)| !g.is_empty()).collect();
    match negotiate(headers)? {
        DiscoveryFormat::Legacy => Ok(json_response(
            StatusCode::OK,
            &json!({
                "kind": "APIGroupList",
                "apiVersion": "v1",
                "groups": groups.iter().map(|(g, v)| group_entry(g, v)).collect::<Vec<_>>(),
            }),
        )),
        f => Ok(aggregated_response(f, groups.iter().map(|(g, v)| aggregated_group(ctx, g, v)).collect())),
    }
}

/// `GET /apis/{group}`.
pub(super) fn group(ctx: &Context, group: &str) -> ApiResult<Response> {
    let groups = groups_snapshot(ctx);
    let (_, versions) =
        groups.iter().find(|(g, _)| g == group && !g.is_empty()).ok_or_else(ApiError::path_not_found)?;
    let mut body = group_entry(group, versions);
    if let Some(o) = body.as_object_mut() {
        o.insert("kind".into(), json!("APIGroup"));
        o.insert("apiVersion".into(), json!("v1"));
    }
    Ok(json_response(StatusCode::OK, &body))
}

/// `GET /api/v1` and `GET /apis/{group}/{version}`: the legacy APIResourceList.
pub(super) fn resource_list(ctx: &Context, group: &str, version: &str) -> ApiResult<Response> {
    let resources = ctx.state.read().registry.resources(group, version);
    if resources.is_empty() {
        return Err(ApiError::path_not_found());
    }
    let mut list = Vec::new();
    for rt in &resources {
        let mut r = json!({
            "name": rt.plural,
            "singularName": rt.singular,
            "namespaced": rt.namespaced,
            "kind": rt.kind,
            "verbs": rt.verbs(),
        });
        if !rt.short_names.is_empty() {
            r["shortNames"] = json!(rt.short_names);
        }
        if !rt.categories.is_empty() {
            r["categories"] = json!(rt.categories);
        }
        list.push(r);
        for (name, kind, verbs) in subresources(rt) {
            let mut s = json!({
                "name": format!("{}/{name}", rt.plural),
                "singularName": "",
                "namespaced": rt.namespaced,
                "kind": kind["kind"],
                "verbs": verbs,
            });
            if kind["group"] != json!(rt.group) || kind["version"] != json!(rt.version) {
                s["group"] = kind["group"].clone();
                s["version"] = kind["version"].clone();
            }
            list.push(s);
        }
    }
    let gv = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
    Ok(json_response(
        StatusCode::OK,
        &json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": list}),
    ))
}

/// `GET /version`.
pub(super) async fn version(AxState(ctx): AxState<Arc<Context>>) -> Response {
    let v = &ctx.settings.kubernetes_version;
    let minor: String = v.split('.').nth(1).unwrap_or("0").to_string();
    json_response(
        StatusCode::OK,
        &json!({
            "major": "1",
            "minor": minor,
            "emulationMajor": "1",
            "emulationMinor": minor,
            "gitVersion": v,
            "gitCommit": "0000000000000000000000000000000000000000",
            "gitTreeState": "clean",
            "buildDate": "2026-01-01T00:00:00Z",
            "goVersion": "kproof",
            "compiler": "rustc",
            "platform": format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH),
        }),
    )
}

/// `GET /healthz`, `/livez`, `/readyz`.
pub(super) async fn healthy() -> Response {
    ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], "ok").into_response()
}
