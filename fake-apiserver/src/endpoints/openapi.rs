//! OpenAPI v3 as kube-apiserver serves it: the `/openapi/v3` index and one document per
//! group/version, for built-ins (schemas from k8s-openapi's `schemars` impls, descriptions
//! included) and CRDs (their structural schemas).
//!
//! Why it matters: kubectl 1.29+ switches to server-side validation (`fieldValidation=Strict`)
//! only when the group/version document has a PATCH operation tagged with the kind's
//! `x-kubernetes-group-version-kind` and a `fieldValidation` parameter, and `kubectl explain`
//! reads descriptions from these documents.
//!
//! Documents are built on first request and cached; nothing is computed at server start. The
//! `hash` in the index (also the ETag) is derived from what the document is built from (the
//! served resources and their schema epochs), not from its bytes, so the index costs nothing to
//! build and still changes whenever a CRD changes.
//!
//! PATCH operations of built-ins do not advertise `application/strategic-merge-patch+json`:
//! kubectl 1.30+ would then compute apply patches from these schemas, which carry no
//! `x-kubernetes-patch-merge-key`; without it kubectl falls back to its compiled-in patch
//! metadata, which is exact. `/openapi/v2` (module `openapi_v2`) gathers the same schemas for
//! kubectl 1.27/1.28.

use super::Context;
use super::openapi_v2;
use crate::error::{ApiError, ApiResult};
use crate::registry::{ResourceType, SchemaSource};
use axum::body::Body;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use parking_lot::Mutex;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::Arc;

/// Built group/version documents, by index path (`apis/apps/v1`), with the hash they were built for.
#[derive(Default)]
pub(super) struct DocumentCache {
    docs: Mutex<HashMap<String, Arc<Document>>>,
}

struct Document {
    hash: String,
    body: Bytes,
}

const SCHEMA_PREFIX: &str = "#/components/schemas/";

/// `api/v1` or `apis/apps/v1`: how the index names a group/version.
fn index_path(group: &str, version: &str) -> String {
    if group.is_empty() { format!("api/{version}") } else { format!("apis/{group}/{version}") }
}

/// A stable 128-bit FNV-1a hash, uppercase hex (kube-apiserver uses SHA-512 of the document;
/// clients treat the value as opaque).
fn fnv_hex(text: &str) -> String {
    let mut h: u128 = 0x6c62272e07bb014262b821756295c58d;
    for b in text.bytes() {
        h ^= u128::from(b);
        h = h.wrapping_mul(0x0000000001000000000000000000013B);
    }
    format!("{h:032X}")
}

/// Everything a group/version document is built from, hashed.
fn fingerprint(rts: &[Arc<ResourceType>]) -> String {
    let mut text = String::new();
    for rt in rts {
        text.push_str(&format!(
            "{}|{}|{}|{}|{}|{}|{}|{};",
            rt.plural,
            rt.kind,
            rt.namespaced,
            rt.status,
            rt.scale.is_some(),
            rt.custom,
            rt.schema_epoch,
            env!("CARGO_PKG_VERSION"),
        ));
    }
    fnv_hex(&text)
}

/// The served group/versions with their resources and hashes, in discovery order.
fn group_versions(ctx: &Context) -> Vec<(String, String, Vec<Arc<ResourceType>>)> {
    let st = ctx.state.read();
    let mut out = Vec::new();
    for (group, versions) in st.registry.groups() {
        for version in versions {
            let rts = st.registry.resources(&group, &version);
            out.push((group.clone(), version, rts));
        }
    }
    out
}

fn etag_value(hash: &str) -> HeaderValue {
    HeaderValue::from_str(&format!("\"{hash}\"")).unwrap_or_else(|_| HeaderValue::from_static("\"\""))
}

fn if_none_match(headers: &HeaderMap, hash: &str) -> bool {
    let Some(v) = headers.get(header::IF_NONE_MATCH).and_then(|v| v.to_str().ok()) else { return false };
    v.split(',').map(str::trim).any(|t| t == "*" || t.trim_start_matches("W/") == format!("\"{hash}\""))
}

fn not_modified(etag: HeaderValue) -> Response {
    let mut r = StatusCode::NOT_MODIFIED.into_response();
    r.headers_mut().insert(header::ETAG, etag);
    r
}

/// `GET /openapi/v3`: the index of group/version documents.
pub(super) fn index(ctx: &Context, headers: &HeaderMap) -> Response {
    let mut paths = Map::new();
    for (group, version, rts) in group_versions(ctx) {
        let path = index_path(&group, &version);
        let url = format!("/openapi/v3/{path}?hash={}", fingerprint(&rts));
        paths.insert(path, json!({ "serverRelativeURL": url }));
    }
    let body = serde_json::to_vec(&json!({ "paths": paths })).unwrap_or_default();
    let hash = fnv_hex(&String::from_utf8_lossy(&body));
    let etag = etag_value(&hash);
    if if_none_match(headers, &hash) {
        return not_modified(etag);
    }
    let mut r = (StatusCode::OK, body).into_response();
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r.headers_mut().insert(header::ETAG, etag);
    r
}

/// Whether an Accept header allows a JSON document (`application/json`, `application/*`, `*/*`;
/// the protobuf encoding is not served).
fn accepts_json(headers: &HeaderMap) -> bool {
    let Some(accept) = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()) else { return true };
    if accept.trim().is_empty() {
        return true;
    }
    accept.split(',').any(|range| {
        let media = range.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
        matches!(media.as_str(), "*/*" | "application/*" | "application/json")
    })
}

/// `GET /openapi/v3/<path>`: one group/version document, with kube-apiserver's caching rules: a
/// `hash` that is not the current one redirects (301) to the current URL; the current one makes
/// the answer immutable for a year.
pub(super) fn document(ctx: &Context, path: &str, query: Option<&str>, headers: &HeaderMap) -> ApiResult<Response> {
    let path = path.trim_matches('/');
    let found = group_versions(ctx).into_iter().find(|(g, v, _)| index_path(g, v) == path);
    let Some((group, version, rts)) = found else { return Err(ApiError::path_not_found()) };
    if !accepts_json(headers) {
        let mut r = StatusCode::NOT_ACCEPTABLE.into_response();
        r.headers_mut().insert(header::VARY, HeaderValue::from_static("Accept"));
        return Ok(r);
    }
    let hash = fingerprint(&rts);
    let requested_hash = url::form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .find(|(k, _)| k == "hash")
        .map(|(_, v)| v.into_owned())
        .filter(|h| !h.is_empty());
    let etag = etag_value(&hash);
    if let Some(h) = &requested_hash
        && *h != hash
    {
        let location = format!("/openapi/v3/{path}?hash={hash}");
        let mut r = StatusCode::MOVED_PERMANENTLY.into_response();
        r.headers_mut().insert(header::LOCATION, HeaderValue::from_str(&location).map_err(ApiError::internal)?);
        r.headers_mut().insert(header::VARY, HeaderValue::from_static("Accept"));
        return Ok(r);
    }
    if if_none_match(headers, &hash) {
        return Ok(not_modified(etag));
    }
    let doc = {
        let cached = ctx.openapi.docs.lock().get(path).filter(|d| d.hash == hash).cloned();
        match cached {
            Some(d) => d,
            None => {
                let body =
                    serde_json::to_vec(&build_document(&group, &version, &rts, &ctx.settings.kubernetes_version))
                        .map_err(ApiError::internal)?;
                let d = Arc::new(Document { hash: hash.clone(), body: Bytes::from(body) });
                ctx.openapi.docs.lock().insert(path.to_string(), d.clone());
                d
            }
        }
    };
    let mut r = Response::new(Body::from(doc.body.clone()));
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    h.insert(header::VARY, HeaderValue::from_static("Accept"));
    h.insert(header::ETAG, etag);
    if requested_hash.is_some() {
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, immutable"));
        let expires = ctx.clock.now() + jiff::SignedDuration::from_hours(24 * 365);
        let text = jiff::fmt::rfc2822::DateTimePrinter::new().timestamp_to_rfc9110_string(&expires).unwrap_or_default();
        if let Ok(v) = HeaderValue::from_str(&text) {
            h.insert(header::EXPIRES, v);
        }
    }
    Ok(r)
}

/// `GET /openapi/v2`: every group/version's schemas in one Swagger 2.0 document, as JSON or
/// gnostic protobuf (see `openapi_v2`), cached until a served resource changes.
pub(super) fn v2(ctx: &Context, headers: &HeaderMap) -> ApiResult<Response> {
    let gvs = group_versions(ctx);
    let hash = fnv_hex(&gvs.iter().map(|(g, v, rts)| format!("{g}/{v}:{};", fingerprint(rts))).collect::<String>());
    let protobuf = openapi_v2::wants_protobuf(headers);
    let key = if protobuf { "openapi/v2.pb" } else { "openapi/v2" };
    let etag = etag_value(&hash);
    if if_none_match(headers, &hash) {
        return Ok(not_modified(etag));
    }
    let cached = ctx.openapi.docs.lock().get(key).filter(|d| d.hash == hash).cloned();
    let doc = match cached {
        Some(d) => d,
        None => {
            let docs: Vec<Value> =
                gvs.iter().map(|(g, v, rts)| build_document(g, v, rts, &ctx.settings.kubernetes_version)).collect();
            let swagger = openapi_v2::swagger(&docs, &ctx.settings.kubernetes_version);
            let body = if protobuf {
                openapi_v2::encode(&swagger)?
            } else {
                serde_json::to_vec(&swagger).map_err(ApiError::internal)?
            };
            let d = Arc::new(Document { hash: hash.clone(), body: Bytes::from(body) });
            ctx.openapi.docs.lock().insert(key.to_string(), d.clone());
            d
        }
    };
    let mut r = Response::new(Body::from(doc.body.clone()));
    let h = r.headers_mut();
    let content_type = if protobuf { openapi_v2::PROTOBUF } else { "application/json" };
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::VARY, HeaderValue::from_static("Accept"));
    h.insert(header::ETAG, etag);
    Ok(r)
}

/// The reverse-DNS name kube-apiserver gives a CRD version's schema: `com.example.v1.Widget`.
fn crd_schema_name(rt: &ResourceType) -> String {
    let mut parts: Vec<&str> = rt.group.split('.').collect();
    parts.reverse();
    format!("{}.{}.{}", parts.join("."), rt.version, rt.kind)
}

fn gvk(rt: &ResourceType) -> Value {
    json!({ "group": rt.group, "kind": rt.kind, "version": rt.version })
}

fn schema_ref(name: &str) -> Value {
    json!({ "$ref": format!("{SCHEMA_PREFIX}{name}") })
}

/// A CRD version's schema as served: the structural schema with `apiVersion`, `kind` and
/// `metadata` filled in, as the apiserver adds them.
fn crd_schema(raw: &Value) -> Value {
    let mut s = raw.clone();
    if !s.is_object() {
        s = json!({ "type": "object" });
    }
    let props = s.as_object_mut().and_then(|o| {
        o.entry("properties").or_insert_with(|| json!({}));
        o.get_mut("properties").and_then(Value::as_object_mut)
    });
    if let Some(props) = props {
        props.insert(
            "apiVersion".into(),
            json!({"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"}),
        );
        props.insert(
            "kind".into(),
            json!({"type": "string", "description": "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"}),
        );
        props.insert(
            "metadata".into(),
            json!({
                "allOf": [schema_ref("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")],
                "description": "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
            }),
        );
    }
    s
}

fn query_param(name: &str, description: &str, schema: Value) -> Value {
    json!({ "name": name, "in": "query", "description": description, "schema": schema })
}

fn write_params(patch: bool) -> Vec<Value> {
    let mut p = vec![
        query_param(
            "dryRun",
            "When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values are: - All: all dry run stages will be processed",
            json!({"type": "string", "uniqueItems": true}),
        ),
        query_param(
            "fieldManager",
            "fieldManager is a name associated with the actor or entity that is making these changes.",
            json!({"type": "string", "uniqueItems": true}),
        ),
        query_param(
            "fieldValidation",
            "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore - Warn (the default) - Strict",
            json!({"type": "string", "uniqueItems": true}),
        ),
    ];
    if patch {
        p.push(query_param(
            "force",
            "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people. Force flag must be unset for non-apply patch requests.",
            json!({"type": "boolean", "uniqueItems": true}),
        ));
    }
    p
}

fn json_content(schema: Value) -> Value {
    json!({ "application/json": { "schema": schema } })
}

fn operation(id: String, action: &str, kind: &Value, description: String, extra: Map<String, Value>) -> Value {
    let mut op = Map::new();
    op.insert("tags".into(), json!([kind["group"].as_str().unwrap_or_default()]));
    op.insert("description".into(), json!(description));
    op.insert("operationId".into(), json!(id));
    op.extend(extra);
    op.insert("x-kubernetes-action".into(), json!(action));
    op.insert("x-kubernetes-group-version-kind".into(), kind.clone());
    Value::Object(op)
}

fn ok_response(schema: Value, created: bool) -> Value {
    let mut r = json!({ "200": { "description": "OK", "content": json_content(schema.clone()) } });
    if created {
        r["201"] = json!({ "description": "Created", "content": json_content(schema) });
    }
    r
}

/// Paths of one resource: collection, item, `/status`, `/scale`.
fn resource_paths(rt: &ResourceType, schema_name: &str, paths: &mut Map<String, Value>) {
    let base =
        if rt.group.is_empty() { format!("/api/{}", rt.version) } else { format!("/apis/{}/{}", rt.group, rt.version) };
    let prefix = if rt.namespaced { format!("{base}/namespaces/{{namespace}}") } else { base.clone() };
    let id_base = {
        let g: String = rt
            .group
            .split('.')
            .next()
            .unwrap_or_default()
            .chars()
            .enumerate()
            .map(|(i, c)| if i == 0 { c.to_ascii_uppercase() } else { c })
            .collect();
        let mut v = rt.version.clone();
        if let Some(f) = v.get_mut(0..1) {
            f.make_ascii_uppercase();
        }
        if rt.group.is_empty() { format!("Core{v}") } else { format!("{g}{v}") }
    };
    let scope = if rt.namespaced { "Namespaced" } else { "" };
    let kind = gvk(rt);
    let obj = schema_ref(schema_name);
    let path_params = |name: bool| -> Value {
        let mut p = Vec::new();
        if name {
            p.push(json!({"name": "name", "in": "path", "description": format!("name of the {}", rt.kind), "required": true, "schema": {"type": "string", "uniqueItems": true}}));
        }
        if rt.namespaced {
            p.push(json!({"name": "namespace", "in": "path", "description": "object name and auth scope, such as for teams and projects", "required": true, "schema": {"type": "string", "uniqueItems": true}}));
        }
        p.push(json!({"name": "pretty", "in": "query", "description": "If 'true', then the output is pretty printed.", "schema": {"type": "string", "uniqueItems": true}}));
        Value::Array(p)
    };
    let body = |schema: &Value| json!({ "content": { "*/*": { "schema": schema } }, "required": true });
    let patch_body = json!({
        "content": {
            "application/apply-patch+yaml": {"schema": schema_ref("io.k8s.apimachinery.pkg.apis.meta.v1.Patch")},
            "application/json-patch+json": {"schema": schema_ref("io.k8s.apimachinery.pkg.apis.meta.v1.Patch")},
            "application/merge-patch+json": {"schema": schema_ref("io.k8s.apimachinery.pkg.apis.meta.v1.Patch")},
        },
        "required": true,
    });
    let extra = |pairs: Vec<(&str, Value)>| -> Map<String, Value> {
        pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
    };
    let params = |patch: bool| Value::Array(write_params(patch));

    // Collection.
    let list_schema = json!({"type": "object", "description": format!("{} is a list of {}", rt.list_kind, rt.kind)});
    let mut coll = Map::new();
    coll.insert(
        "get".into(),
        operation(
            format!("list{id_base}{scope}{}", rt.kind),
            "list",
            &kind,
            format!("list or watch objects of kind {}", rt.kind),
            extra(vec![("responses", ok_response(list_schema, false))]),
        ),
    );
    coll.insert(
        "post".into(),
        operation(
            format!("create{id_base}{scope}{}", rt.kind),
            "post",
            &kind,
            format!("create a {}", rt.kind),
            extra(vec![
                ("parameters", params(false)),
                ("requestBody", body(&obj)),
                ("responses", ok_response(obj.clone(), true)),
            ]),
        ),
    );
    coll.insert(
        "delete".into(),
        operation(
            format!("deletecollection{id_base}{scope}{}", rt.kind),
            "deletecollection",
            &kind,
            format!("delete collection of {}", rt.kind),
            extra(vec![("responses", ok_response(schema_ref("io.k8s.apimachinery.pkg.apis.meta.v1.Status"), false))]),
        ),
    );
    coll.insert("parameters".into(), path_params(false));
    paths.insert(format!("{prefix}/{}", rt.plural), Value::Object(coll));

    // Item and subresources.
    let mut item_paths = vec![(format!("{prefix}/{}/{{name}}", rt.plural), String::new(), obj.clone(), kind.clone())];
    if rt.status {
        item_paths.push((
            format!("{prefix}/{}/{{name}}/status", rt.plural),
            "Status".into(),
            obj.clone(),
            kind.clone(),
        ));
    }
    if rt.scale.is_some() {
        item_paths.push((
            format!("{prefix}/{}/{{name}}/scale", rt.plural),
            "Scale".into(),
            schema_ref("io.k8s.api.autoscaling.v1.Scale"),
            json!({"group": "autoscaling", "kind": "Scale", "version": "v1"}),
        ));
    }
    for (path, suffix, schema, kind) in item_paths {
        let mut item = Map::new();
        let what = if suffix.is_empty() {
            "the specified".to_string()
        } else {
            format!("{} of the specified", suffix.to_lowercase())
        };
        item.insert(
            "get".into(),
            operation(
                format!("read{id_base}{scope}{}{suffix}", rt.kind),
                "get",
                &kind,
                format!("read {what} {}", rt.kind),
                extra(vec![("responses", ok_response(schema.clone(), false))]),
            ),
        );
        item.insert(
            "put".into(),
            operation(
                format!("replace{id_base}{scope}{}{suffix}", rt.kind),
                "put",
                &kind,
                format!("replace {what} {}", rt.kind),
                extra(vec![
                    ("parameters", params(false)),
                    ("requestBody", body(&schema)),
                    ("responses", ok_response(schema.clone(), true)),
                ]),
            ),
        );
        item.insert(
            "patch".into(),
            operation(
                format!("patch{id_base}{scope}{}{suffix}", rt.kind),
                "patch",
                &kind,
                format!("partially update {what} {}", rt.kind),
                extra(vec![
                    ("parameters", params(true)),
                    ("requestBody", patch_body.clone()),
                    ("responses", ok_response(schema.clone(), true)),
                ]),
            ),
        );
        if suffix.is_empty() {
            item.insert(
                "delete".into(),
                operation(
                    format!("delete{id_base}{scope}{}", rt.kind),
                    "delete",
                    &kind,
                    format!("delete a {}", rt.kind),
                    extra(vec![(
                        "responses",
                        ok_response(schema_ref("io.k8s.apimachinery.pkg.apis.meta.v1.Status"), false),
                    )]),
                ),
            );
        }
        item.insert("parameters".into(), path_params(true));
        paths.insert(path, Value::Object(item));
    }
}

/// The OpenAPI 3.0 document of one group/version.
fn build_document(group: &str, version: &str, rts: &[Arc<ResourceType>], kubernetes_version: &str) -> Value {
    let mut generator = schemars::generate::SchemaSettings::openapi3().into_generator();
    // Shared by every document: metadata, Status for delete answers, Scale for `/scale`.
    generator.subschema_for::<k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>();
    generator.subschema_for::<k8s_openapi::apimachinery::pkg::apis::meta::v1::Status>();
    if rts.iter().any(|rt| rt.scale.is_some()) {
        generator.subschema_for::<k8s_openapi::api::autoscaling::v1::Scale>();
    }
    let mut roots: Vec<(Arc<ResourceType>, String)> = Vec::new();
    let mut crd_schemas = Vec::new();
    for rt in rts {
        let name = match &rt.openapi {
            Some(SchemaSource::Builtin(f)) => {
                let r = f(&mut generator);
                r.get("$ref").and_then(Value::as_str).and_then(|s| s.strip_prefix(SCHEMA_PREFIX)).map(str::to_string)
            }
            Some(SchemaSource::Crd(raw)) => {
                let name = crd_schema_name(rt);
                crd_schemas.push((name.clone(), crd_schema(raw)));
                Some(name)
            }
            None => None,
        };
        let name = name.unwrap_or_else(|| {
            let name = crd_schema_name(rt);
            crd_schemas.push((name.clone(), crd_schema(&json!({"type": "object"}))));
            name
        });
        roots.push((rt.clone(), name));
    }
    let mut schemas = generator.take_definitions(true);
    for (name, s) in crd_schemas {
        schemas.insert(name, s);
    }
    schemas.insert(
        "io.k8s.apimachinery.pkg.apis.meta.v1.Patch".into(),
        json!({"type": "object", "description": "Patch is provided to give a concrete name and type to the Kubernetes PATCH request body."}),
    );
    let mut paths = Map::new();
    for (rt, name) in &roots {
        if let Some(Value::Object(s)) = schemas.get_mut(name) {
            s.insert("x-kubernetes-group-version-kind".into(), json!([gvk(rt)]));
        }
        resource_paths(rt, name, &mut paths);
    }
    if let Some(Value::Object(s)) = schemas.get_mut("io.k8s.api.autoscaling.v1.Scale") {
        s.insert(
            "x-kubernetes-group-version-kind".into(),
            json!([{"group": "autoscaling", "kind": "Scale", "version": "v1"}]),
        );
    }
    let title = if group.is_empty() { "Kubernetes".to_string() } else { format!("Kubernetes {group}/{version}") };
    json!({
        "openapi": "3.0.0",
        "info": { "title": title, "version": kubernetes_version },
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": { "BearerToken": { "type": "apiKey", "description": "Bearer Token authentication", "name": "authorization", "in": "header" } },
        },
        "security": [{ "BearerToken": [] }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crd_schema_names_reverse_the_group() {
        let r = crate::registry::Registry::builtin(Default::default(), Default::default());
        let rt = r.get("apps", "v1", "deployments").expect("deployments");
        assert_eq!(crd_schema_name(&rt), "apps.v1.Deployment");
        let rt = r.get("resource.k8s.io", "v1", "resourceclaims").expect("resourceclaims");
        assert_eq!(crd_schema_name(&rt), "io.k8s.resource.v1.ResourceClaim");
    }

    #[test]
    fn hashes_are_stable_and_differ() {
        assert_eq!(fnv_hex("a"), fnv_hex("a"));
        assert_ne!(fnv_hex("a"), fnv_hex("b"));
        assert_eq!(fnv_hex("").len(), 32);
    }
}
