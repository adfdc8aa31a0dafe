//! HTTP handlers: URL and query parsing, content negotiation and the verbs.

use crate::error::{ApiError, ApiResult, StatusCause};
use crate::field_validation;
use crate::objects::{self, DeleteOptions, Deleted, Ownership, UpdateMode, Write};
use crate::patch_meta::Shape;
use crate::registry::ResourceType;
use crate::selector::{FieldSelector, LabelSelector};
use crate::server::Inner;
use crate::store::{State, StoredObject, WriteContext, parse_rv};
use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State as AxState};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use base64::Engine;
use bytes::{BufMut, Bytes, BytesMut};
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use serde_json::{Value, json};
use std::borrow::Cow;
use std::sync::Arc;

pub(crate) fn router(inner: Arc<Inner>) -> Router {
    Router::new()
        .route("/version", get(version))
        .route("/healthz", get(healthy))
        .route("/livez", get(healthy))
        .route("/readyz", get(healthy))
        .route(
            "/openapi/v3",
            get(|AxState(inner): AxState<Arc<Inner>>, headers: HeaderMap| async move {
                crate::openapi::index(&inner, &headers)
            }),
        )
        .route("/openapi/v3/{*gv}", get(openapi_document))
        .fallback(dispatch)
        .with_state(inner)
}

async fn version(AxState(inner): AxState<Arc<Inner>>) -> Response {
    let v = &inner.config.kubernetes_version;
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

async fn openapi_document(AxState(inner): AxState<Arc<Inner>>, req: Request) -> Response {
    let (parts, _) = req.into_parts();
    let path = parts.uri.path().trim_start_matches("/openapi/v3/");
    crate::openapi::document(&inner, path, parts.uri.query(), &parts.headers).unwrap_or_else(|e| e.into_response())
}

async fn healthy() -> Response {
    ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], "ok").into_response()
}

/// A JSON response from a value.
pub(crate) fn json_response(code: StatusCode, v: &Value) -> Response {
    bytes_response(code, Bytes::from(serde_json::to_vec(v).unwrap_or_default()))
}

/// A JSON response from bytes that are already JSON.
pub(crate) fn bytes_response(code: StatusCode, body: Bytes) -> Response {
    let mut r = (code, body).into_response();
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

/// The query parameters the API understands.
#[derive(Debug, Default, Clone)]
pub(crate) struct Query {
    pub label_selector: String,
    pub field_selector: String,
    pub limit: Option<usize>,
    pub continue_token: Option<String>,
    pub resource_version: Option<String>,
    pub resource_version_match: Option<String>,
    pub watch: bool,
    pub allow_watch_bookmarks: bool,
    pub timeout_seconds: Option<u64>,
    pub send_initial_events: Option<bool>,
    pub field_manager: Option<String>,
    /// The `dryRun` values as given; each verb validates them against its options kind.
    pub dry_run_values: Vec<String>,
    pub propagation_policy: Option<String>,
    pub grace_period_seconds: Option<i64>,
    pub orphan_dependents: Option<bool>,
    /// `force` of a server-side apply (forbidden on other patches).
    pub force: Option<bool>,
    /// `fieldValidation`: Ignore, Warn or Strict.
    pub field_validation: Option<String>,
}

/// A boolean query parameter as kube-apiserver reads it (`runtime.Convert_Slice_string_To_bool`):
/// `0` and `false` (any case) are false, anything else, the empty string included, is true.
fn parse_bool(v: &str) -> bool {
    !(v == "0" || v.eq_ignore_ascii_case("false"))
}

/// The most operations kube-apiserver applies from one JSON patch (`maxJSONPatchOperations`).
const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// `ValidateDryRun`: every value must be `All`. The error is `field.NotSupported` on `dryRun`
/// with the whole list as the bad value (printed with Go's `%#v`).
fn dry_run_causes(values: &[String]) -> Vec<StatusCause> {
    if values.iter().all(|v| v == "All") {
        return Vec::new();
    }
    let listed: Vec<String> = values.iter().map(|v| serde_json::to_string(v).unwrap_or_default()).collect();
    vec![StatusCause::field(
        "FieldValueNotSupported",
        "dryRun",
        format!("Unsupported value: []string{{{}}}: supported values: \"All\"", listed.join(", ")),
    )]
}

/// 422 Invalid for failed options validation: `NewInvalid(GroupKind{Group: "meta.k8s.io",
/// Kind: options_kind}, "", causes)`.
pub(crate) fn invalid_options(options_kind: &str, causes: Vec<StatusCause>) -> ApiError {
    ApiError::invalid("meta.k8s.io", options_kind, "", causes)
}

fn parse_int<T: std::str::FromStr>(name: &str, v: &str) -> ApiResult<T> {
    v.parse().map_err(|_| ApiError::bad_request(format!("invalid value for {name}: {v:?} is not an integer")))
}

impl Query {
    pub fn parse(raw: Option<&str>) -> ApiResult<Self> {
        let mut q = Query::default();
        for (k, v) in url::form_urlencoded::parse(raw.unwrap_or_default().as_bytes()) {
            let v = v.into_owned();
            match k.as_ref() {
                "labelSelector" => q.label_selector = v,
                "fieldSelector" => q.field_selector = v,
                "limit" => {
                    let n: i64 = parse_int("limit", &v)?;
                    q.limit = (n > 0).then_some(n as usize);
                }
                "continue" => q.continue_token = Some(v).filter(|s| !s.is_empty()),
                "resourceVersion" => q.resource_version = Some(v).filter(|s| !s.is_empty()),
                "resourceVersionMatch" => q.resource_version_match = Some(v).filter(|s| !s.is_empty()),
                "watch" => q.watch = parse_bool(&v),
                "allowWatchBookmarks" => q.allow_watch_bookmarks = parse_bool(&v),
                "timeoutSeconds" => q.timeout_seconds = Some(parse_int("timeoutSeconds", &v)?),
                "sendInitialEvents" => q.send_initial_events = Some(parse_bool(&v)),
                "fieldManager" => q.field_manager = Some(v).filter(|s| !s.is_empty()),
                "dryRun" => q.dry_run_values.push(v),
                "propagationPolicy" => q.propagation_policy = Some(v),
                "gracePeriodSeconds" => q.grace_period_seconds = Some(parse_int("gracePeriodSeconds", &v)?),
                "orphanDependents" => q.orphan_dependents = Some(parse_bool(&v)),
                "force" => q.force = Some(parse_bool(&v)),
                "fieldValidation" => q.field_validation = Some(v),
                _ => {}
            }
        }
        Ok(q)
    }

    /// Whether the write is a dry run, after validating `dryRun` as the verb's options kind
    /// (`CreateOptions`, `UpdateOptions`, `PatchOptions`) does. Reads ignore `dryRun`.
    pub fn dry_run(&self, options_kind: &str) -> ApiResult<bool> {
        let causes = dry_run_causes(&self.dry_run_values);
        if !causes.is_empty() {
            return Err(invalid_options(options_kind, causes));
        }
        Ok(!self.dry_run_values.is_empty())
    }

    pub fn selectors(&self, rt: &ResourceType) -> ApiResult<(LabelSelector, FieldSelector)> {
        let labels = LabelSelector::parse(&self.label_selector)
            .map_err(|e| ApiError::bad_request(format!("unable to parse requirement: {e}")))?;
        let fields = FieldSelector::parse(&self.field_selector)
            .map_err(|e| ApiError::bad_request(format!("invalid field selector: {e}")))?;
        if let Some(f) = fields.fields().find(|f| !rt.supports_field(f)) {
            return Err(ApiError::bad_request(format!("field label not supported: {f}")));
        }
        Ok((labels, fields))
    }
}

/// Whether an object passes a label and a field selector.
pub(crate) fn matches(obj: &StoredObject, labels: &LabelSelector, fields: &FieldSelector) -> bool {
    labels.matches(&obj.labels) && fields.matches(|f| obj.field(f))
}

/// What kind of body a write carries, from its Content-Type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyFormat {
    Json,
    Yaml,
    MergePatch,
    JsonPatch,
    StrategicMergePatch,
    ApplyPatch,
}

const WRITE_MEDIA_TYPES: &[&str] = &["application/json", "application/yaml"];
/// The patch media types of built-in resources, in kube-apiserver's order.
const PATCH_MEDIA_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
];
/// Custom resources have no strategic merge patch (no patch strategies in a CRD schema).
const CUSTOM_PATCH_MEDIA_TYPES: &[&str] =
    &["application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml"];

/// The Content-Type header as sent, for messages.
fn raw_content_type(headers: &HeaderMap) -> String {
    headers.get(header::CONTENT_TYPE).map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()).unwrap_or_default()
}

fn body_format(headers: &HeaderMap) -> Option<BodyFormat> {
    let raw = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let media = raw.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    Some(match media.as_str() {
        // The Python client sends POST bodies with no Content-Type: read them as JSON.
        "" | "application/json" | "*/*" => BodyFormat::Json,
        "application/yaml" => BodyFormat::Yaml,
        "application/merge-patch+json" => BodyFormat::MergePatch,
        "application/json-patch+json" => BodyFormat::JsonPatch,
        "application/strategic-merge-patch+json" => BodyFormat::StrategicMergePatch,
        "application/apply-patch+yaml" => BodyFormat::ApplyPatch,
        _ => return None,
    })
}

/// The format of a POST or PUT body: an object as JSON or YAML, else 415 listing those.
fn object_format(headers: &HeaderMap) -> ApiResult<BodyFormat> {
    match body_format(headers) {
        Some(f @ (BodyFormat::Json | BodyFormat::Yaml)) => Ok(f),
        _ => Err(ApiError::unsupported_media_type(&raw_content_type(headers), WRITE_MEDIA_TYPES)),
    }
}

/// A PATCH body's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PatchKind {
    Merge,
    Json,
    Strategic,
    Apply,
}

/// The kind of a PATCH body, else 415 listing the patch media types the resource takes
/// (checked before the body is read, as the patch handler does).
fn patch_kind(headers: &HeaderMap, custom: bool) -> ApiResult<PatchKind> {
    let accepted = if custom { CUSTOM_PATCH_MEDIA_TYPES } else { PATCH_MEDIA_TYPES };
    match body_format(headers) {
        Some(BodyFormat::MergePatch) => Ok(PatchKind::Merge),
        Some(BodyFormat::JsonPatch) => Ok(PatchKind::Json),
        Some(BodyFormat::StrategicMergePatch) if !custom => Ok(PatchKind::Strategic),
        Some(BodyFormat::ApplyPatch) => Ok(PatchKind::Apply),
        _ => Err(ApiError::unsupported_media_type(&raw_content_type(headers), accepted)),
    }
}

/// What a write to `/scale` carries: a whole Scale (PUT; first its media type, then the
/// decoded body) or a patch of one (PATCH).
enum ScaleWrite<T> {
    Replace(T),
    Patch(PatchKind),
}

/// Checks the Accept header allows JSON (406 otherwise).
fn accept_json(headers: &HeaderMap) -> ApiResult<()> {
    let Some(accept) = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()) else { return Ok(()) };
    if accept.trim().is_empty() {
        return Ok(());
    }
    let ok = accept.split(',').any(|range| {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or_default().to_ascii_lowercase();
        let params: Vec<&str> = parts.collect();
        // A Table or PartialObjectMetadata rendering is a different answer, not plain JSON.
        let transformed = params.iter().any(|p| p.starts_with("as="));
        matches!(media.as_str(), "*/*" | "application/*" | "application/json") && !transformed
    });
    if ok { Ok(()) } else { Err(ApiError::not_acceptable(accept)) }
}

/// A request for a resource, resolved against the registry.
pub(crate) struct Target {
    pub rt: Arc<ResourceType>,
    /// The namespace from the URL (empty for cluster-scoped resources and all-namespace lists).
    pub namespace: String,
    pub name: Option<String>,
    pub subresource: Option<String>,
}

fn decode_segment(s: &str) -> Cow<'_, str> {
    percent_encoding::percent_decode_str(s).decode_utf8_lossy()
}

fn resolve(st: &State, group: &str, version: &str, rest: &[Cow<'_, str>]) -> ApiResult<Target> {
    let lookup = |plural: &str| st.registry.get(group, version, plural).ok_or_else(ApiError::path_not_found);
    let (namespace, rest) = match rest {
        [ns_word, ns, res, tail @ ..]
            if ns_word == "namespaces"
                && group.is_empty()
                && st.registry.get(group, version, res).is_none()
                && tail.is_empty() =>
        {
            // /api/v1/namespaces/{name}/{status|finalize}
            let rt = lookup("namespaces")?;
            return Ok(Target {
                rt,
                namespace: String::new(),
                name: Some(ns.to_string()),
                subresource: Some(res.to_string()),
            });
        }
        [ns_word, ns, tail @ ..] if ns_word == "namespaces" && !tail.is_empty() => (ns.to_string(), tail),
        _ => (String::new(), rest),
    };
    let (plural, name, sub) = match rest {
        [p] => (p, None, None),
        [p, n] => (p, Some(n.to_string()), None),
        [p, n, s] => (p, Some(n.to_string()), Some(s.to_string())),
        _ => return Err(ApiError::path_not_found()),
    };
    let rt = lookup(plural)?;
    if !namespace.is_empty() && !rt.namespaced {
        return Err(ApiError::path_not_found());
    }
    if rt.namespaced && namespace.is_empty() && name.is_some() {
        return Err(ApiError::path_not_found());
    }
    Ok(Target { rt, namespace, name, subresource: sub })
}

/// One slot of [`crate::Config::max_requests_in_flight`], given back when dropped.
struct InFlightSlot<'a>(&'a std::sync::atomic::AtomicUsize);

impl<'a> InFlightSlot<'a> {
    fn take(counter: &'a std::sync::atomic::AtomicUsize, limit: usize) -> Option<Self> {
        use std::sync::atomic::Ordering;
        let taken = counter.fetch_add(1, Ordering::AcqRel);
        let slot = Self(counter);
        (limit == 0 || taken < limit).then_some(slot)
    }
}

impl Drop for InFlightSlot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

async fn dispatch(AxState(inner): AxState<Arc<Inner>>, req: Request) -> Response {
    let Some(_slot) = InFlightSlot::take(&inner.in_flight, inner.config.max_requests_in_flight) else {
        return ApiError::too_many_requests(1).into_response();
    };
    match handle(inner.clone(), req).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

async fn read_body(inner: &Inner, body: Body, headers: &HeaderMap) -> ApiResult<Bytes> {
    let limit = inner.config.max_request_body_bytes;
    let declared =
        headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > limit) {
        return Err(ApiError::too_large(limit));
    }
    axum::body::to_bytes(body, limit).await.map_err(|e| {
        let too_large = std::error::Error::source(&e).is_some_and(|s| s.to_string().contains("length limit"))
            || e.to_string().contains("length limit");
        if too_large {
            ApiError::too_large(limit)
        } else {
            ApiError::bad_request(format!("unable to read the request body: {e}"))
        }
    })
}

async fn handle(inner: Arc<Inner>, req: Request) -> ApiResult<Response> {
    let (parts, body) = req.into_parts();
    let segs: Vec<Cow<'_, str>> = parts.uri.path().split('/').filter(|s| !s.is_empty()).map(decode_segment).collect();
    let query = Query::parse(parts.uri.query())?;
    let (group, version, rest): (&str, &str, &[Cow<'_, str>]) = match segs.as_slice() {
        [api] if api == "api" => return crate::discovery::core_versions(&inner, &parts.headers),
        [apis] if apis == "apis" => return crate::discovery::groups(&inner, &parts.headers),
        [apis, g] if apis == "apis" => return crate::discovery::group(&inner, g),
        [api, v, rest @ ..] if api == "api" => ("", v, rest),
        [apis, g, v, rest @ ..] if apis == "apis" => (g, v, rest),
        _ => return Err(ApiError::path_not_found()),
    };
    if rest.is_empty() {
        return crate::discovery::resource_list(&inner, group, version);
    }
    let target = {
        let st = inner.state.read();
        if !st.registry.has_group_version(group, version) {
            return Err(ApiError::path_not_found());
        }
        resolve(&st, group, version, rest)?
    };
    let user_agent =
        parts.headers.get(header::USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    let field_manager = query
        .field_manager
        .clone()
        .or_else(|| Some(user_agent.split('/').next().unwrap_or_default().to_string()).filter(|s| !s.is_empty()));
    let ctx = WriteContext { verb: String::new(), subresource: target.subresource.clone(), user_agent, field_manager };
    let method = parts.method.clone();
    if crate::authz::is_review(&target.rt) {
        if method != Method::POST || target.name.is_some() {
            return Err(ApiError::method_not_allowed());
        }
        // kubectl 1.32+ posts these reviews as protobuf; read them (and answer in JSON).
        let content_type = raw_content_type(&parts.headers);
        let protobuf = content_type.split(';').next().is_some_and(|m| m.trim() == crate::protobuf::MEDIA_TYPE);
        let format = if protobuf { BodyFormat::Json } else { object_format(&parts.headers)? };
        let body = read_body(&inner, body, &parts.headers).await?;
        query.dry_run("CreateOptions")?;
        let obj = if protobuf {
            crate::protobuf::to_json(&body, &content_type, WRITE_MEDIA_TYPES)?
        } else {
            objects::parse_object(&body, format == BodyFormat::Yaml)?
        };
        return Ok(json_response(StatusCode::CREATED, &crate::authz::review(&target.rt, obj)?));
    }
    let sub = target.subresource.as_deref();
    match (&method, target.name.as_deref(), sub) {
        (&Method::GET, None, None) if query.watch => {
            let rendering = crate::table::negotiate(&parts.headers, parts.uri.query())?;
            let stop = parts.extensions.get::<crate::server::ListenerStop>().cloned();
            crate::watch::watch(inner, target, query, stop, rendering)
        }
        (&Method::GET, None, None) => {
            let rendering = crate::table::negotiate(&parts.headers, parts.uri.query())?;
            list(&inner, &target, &query, &rendering)
        }
        (&Method::GET, Some(name), None | Some("status")) => {
            let rendering = crate::table::negotiate(&parts.headers, parts.uri.query())?;
            if sub == Some("status") {
                status_mode(&target.rt)?;
            }
            get_one(&inner, &target, name, &rendering)
        }
        (&Method::GET, Some(name), Some("scale")) if target.rt.scale.is_some() => {
            accept_json(&parts.headers)?;
            let obj = fetch(&inner, &target, name)?;
            Ok(json_response(StatusCode::OK, &objects::scale_of(&target.rt, &obj)?))
        }
        (&Method::POST, None, None) => {
            if target.rt.namespaced && target.namespace.is_empty() {
                return Err(ApiError::method_not_allowed());
            }
            let format = object_format(&parts.headers)?;
            let body = read_body(&inner, body, &parts.headers).await?;
            let dry_run = query.dry_run("CreateOptions")?;
            let obj = objects::parse_object(&body, format == BodyFormat::Yaml)?;
            let warnings = unknown_field_check(&query, &target.rt, &obj)?;
            let ctx = Arc::new(WriteContext { verb: "create".into(), ..ctx });
            let now = inner.clock.now();
            let w = Write { ctx: &ctx, now, dry_run };
            // Decoding, validation and serialization need no store: keep them out of the lock.
            let prepared = objects::prepare_create(&target.rt, &target.namespace, obj, &w)?;
            let created =
                write(&inner, dry_run, |st| objects::create_prepared(st, &target.rt, &target.namespace, prepared, &w))?;
            let resp = bytes_response(StatusCode::CREATED, objects::render(&target.rt, &created));
            Ok(field_validation::with_warnings(resp, &warnings))
        }
        (&Method::POST, Some(name), Some("binding")) if crate::binding::is_pods(&target.rt) => {
            let format = object_format(&parts.headers)?;
            let body = read_body(&inner, body, &parts.headers).await?;
            let dry_run = query.dry_run("CreateOptions")?;
            let binding = objects::parse_object(&body, format == BodyFormat::Yaml)?;
            let ctx = Arc::new(WriteContext { verb: "create".into(), ..ctx });
            let now = inner.clock.now();
            write(&inner, dry_run, |st| {
                crate::binding::bind(
                    st,
                    &target.rt,
                    &target.namespace,
                    name,
                    &binding,
                    &Write { ctx: &ctx, now, dry_run },
                )
            })?;
            let ok = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201});
            Ok(json_response(StatusCode::CREATED, &ok))
        }
        (_, Some(_), Some("binding")) if crate::binding::is_pods(&target.rt) => Err(ApiError::method_not_allowed()),
        (&Method::PUT, Some(name), None | Some("status")) => {
            let format = object_format(&parts.headers)?;
            let body = read_body(&inner, body, &parts.headers).await?;
            let dry_run = query.dry_run("UpdateOptions")?;
            let obj = objects::parse_object(&body, format == BodyFormat::Yaml)?;
            let warnings = unknown_field_check(&query, &target.rt, &obj)?;
            let mode = if sub == Some("status") { status_mode(&target.rt)? } else { UpdateMode::Main };
            let ctx = Arc::new(WriteContext { verb: "update".into(), ..ctx });
            let now = inner.clock.now();
            let updated = write(&inner, dry_run, |st| {
                objects::update(st, &target.rt, &target.namespace, name, obj, mode, &Write { ctx: &ctx, now, dry_run })
            })?;
            let resp = bytes_response(StatusCode::OK, objects::render(&target.rt, &updated));
            Ok(field_validation::with_warnings(resp, &warnings))
        }
        (&Method::PATCH, Some(name), None | Some("status")) => {
            let kind = patch_kind(&parts.headers, target.rt.custom)?;
            let body = read_body(&inner, body, &parts.headers).await?;
            let dry_run = query.dry_run("PatchOptions")?;
            patch_options(&query, kind)?;
            // Unknown fields are looked for in the patch itself (a JSON patch has no object shape).
            let warnings = match kind {
                PatchKind::Json => Vec::new(),
                PatchKind::Apply => unknown_field_check(&query, &target.rt, &objects::parse_object(&body, true)?)?,
                PatchKind::Merge | PatchKind::Strategic => match serde_json::from_slice::<Value>(&body) {
                    Ok(v) => unknown_field_check(&query, &target.rt, &v)?,
                    Err(_) => Vec::new(),
                },
            };
            let mode = if sub == Some("status") { status_mode(&target.rt)? } else { UpdateMode::Main };
            let ctx = Arc::new(WriteContext { verb: "patch".into(), ..ctx });
            if kind == PatchKind::Apply {
                let resp = server_side_apply(&inner, &target, name, &query, &body, mode, &ctx, dry_run)?;
                return Ok(field_validation::with_warnings(resp, &warnings));
            }
            let now = inner.clock.now();
            let rt = &target.rt;
            let updated = write(&inner, dry_run, |st| {
                let old = current(st, &target, name)?;
                // Patch the object as this version serves it (apiVersion, read-time defaults).
                let served: Value = serde_json::from_slice(&objects::render(rt, &old)).unwrap_or_else(|_| old.value());
                let shape = Shape::builtin_root(&rt.group, &rt.version, &rt.kind);
                let mut patched = apply_patch(kind, &served, &body, shape)?;
                objects::check_patched(&patched, rt.api_version(), &rt.kind, rt.decode_check)?;
                keep_resource_version(&mut patched, &old);
                objects::update(st, rt, &target.namespace, name, patched, mode, &Write { ctx: &ctx, now, dry_run })
            })?;
            let resp = bytes_response(StatusCode::OK, objects::render(&target.rt, &updated));
            Ok(field_validation::with_warnings(resp, &warnings))
        }
        (&Method::PUT | &Method::PATCH, Some(name), Some("scale")) if target.rt.scale.is_some() => {
            let put = method == Method::PUT;
            // PUT replaces the Scale, PATCH patches it; the media type is checked before the body is read.
            let how = if put {
                ScaleWrite::Replace(object_format(&parts.headers)?)
            } else {
                ScaleWrite::Patch(patch_kind(&parts.headers, target.rt.custom)?)
            };
            let body = read_body(&inner, body, &parts.headers).await?;
            let dry_run = query.dry_run(if put { "UpdateOptions" } else { "PatchOptions" })?;
            let how = match how {
                ScaleWrite::Replace(format) => {
                    let scale = objects::parse_object(&body, format == BodyFormat::Yaml)?;
                    objects::decode_scale(&scale).map_err(|e| {
                        ApiError::bad_request(format!("Scale in version \"v1\" cannot be handled as a Scale: {e}"))
                    })?;
                    ScaleWrite::Replace(scale)
                }
                ScaleWrite::Patch(kind) => ScaleWrite::Patch(kind),
            };
            let ctx = Arc::new(WriteContext { verb: if put { "update" } else { "patch" }.into(), ..ctx });
            let now = inner.clock.now();
            let rt = target.rt.clone();
            let updated = write(&inner, dry_run, |st| {
                let old = current(st, &target, name)?;
                let mut obj = old.value();
                let new_scale = match how {
                    ScaleWrite::Replace(scale) => scale,
                    ScaleWrite::Patch(kind) => {
                        let shape = Shape::builtin_root("autoscaling", "v1", "Scale");
                        let patched = apply_patch(kind, &objects::scale_of(&rt, &obj)?, &body, shape)?;
                        objects::check_patched(&patched, "autoscaling/v1", "Scale", Some(objects::decode_scale))?;
                        patched
                    }
                };
                objects::apply_scale(&rt, &mut obj, &new_scale)?;
                objects::update(
                    st,
                    &rt,
                    &target.namespace,
                    name,
                    obj,
                    UpdateMode::Main,
                    &Write { ctx: &ctx, now, dry_run },
                )
            })?;
            Ok(json_response(StatusCode::OK, &objects::scale_of(&rt, &updated.value())?))
        }
        (&Method::PUT, Some(name), Some("finalize"))
            if target.rt.group.is_empty() && target.rt.plural == "namespaces" =>
        {
            let body = read_body(&inner, body, &parts.headers).await?;
            let dry_run = query.dry_run("UpdateOptions")?;
            let mut obj = objects::parse_object(&body, false)?;
            objects::decode_object(&target.rt, &mut obj)?;
            let ctx = Arc::new(WriteContext { verb: "update".into(), ..ctx });
            let now = inner.clock.now();
            let updated = write(&inner, dry_run, |st| {
                let old = current(st, &target, name)?;
                let mut v = old.value();
                objects::put(&mut v, &["spec", "finalizers"], obj["spec"]["finalizers"].clone());
                let w = Write { ctx: &ctx, now, dry_run };
                Ok(st_commit_modified(st, &target.rt, v, old, &w))
            })?;
            Ok(bytes_response(StatusCode::OK, objects::render(&target.rt, &updated)))
        }
        (&Method::DELETE, Some(name), None) => {
            let body = read_body(&inner, body, &parts.headers).await?;
            let opts = delete_options(&query, &body)?;
            let ctx = Arc::new(WriteContext { verb: "delete".into(), ..ctx });
            let now = inner.clock.now();
            let result = write(&inner, opts.dry_run, |st| {
                objects::delete(
                    st,
                    &target.rt,
                    &target.namespace,
                    name,
                    &opts,
                    &Write { ctx: &ctx, now, dry_run: opts.dry_run },
                )
            })?;
            Ok(match result {
                // kube-apiserver answers 202 to a delete left pending only when the client
                // asked for the legacy `orphanDependents: false`.
                Deleted::Pending(obj) if opts.orphan_dependents == Some(false) => {
                    bytes_response(StatusCode::ACCEPTED, objects::render(&target.rt, &obj))
                }
                Deleted::Pending(obj) => bytes_response(StatusCode::OK, objects::render(&target.rt, &obj)),
                Deleted::Now(obj) => json_response(
                    StatusCode::OK,
                    &json!({
                        "kind": "Status",
                        "apiVersion": "v1",
                        "metadata": {},
                        "status": "Success",
                        "details": {"name": obj.name, "group": target.rt.group, "kind": target.rt.plural, "uid": obj.uid},
                    }),
                ),
            })
        }
        (&Method::DELETE, None, None) => {
            let body = read_body(&inner, body, &parts.headers).await?;
            let opts = delete_options(&query, &body)?;
            let (labels, fields) = query.selectors(&target.rt)?;
            let ctx = Arc::new(WriteContext { verb: "deletecollection".into(), ..ctx });
            let now = inner.clock.now();
            let rt = target.rt.clone();
            let deleted = write(&inner, opts.dry_run, |st| {
                let key = rt.storage_key();
                let items: Vec<Arc<StoredObject>> = st
                    .collections
                    .get(key)
                    .map(|c| {
                        c.values()
                            .filter(|o| target.namespace.is_empty() || o.namespace == target.namespace)
                            .filter(|o| matches(o, &labels, &fields))
                            .cloned()
                            .collect()
                    })
                    .unwrap_or_default();
                let w = Write { ctx: &ctx, now, dry_run: opts.dry_run };
                let mut out = Vec::new();
                for o in items {
                    match objects::delete(st, &rt, &o.namespace, &o.name, &opts, &w)? {
                        Deleted::Now(x) | Deleted::Pending(x) => out.push(objects::render(&rt, &x)),
                    }
                }
                Ok(out)
            })?;
            let rv = inner.state.read().resource_version;
            Ok(bytes_response(StatusCode::OK, list_body(&target.rt, deleted.into_iter(), rv, None, None)))
        }
        (_, _, Some(_)) if !matches!(sub, Some("status" | "scale" | "finalize")) || sub == Some("scale") => {
            Err(ApiError::path_not_found())
        }
        _ => Err(ApiError::method_not_allowed()),
    }
}

fn st_commit_modified(
    st: &mut State,
    rt: &ResourceType,
    v: Value,
    old: Arc<StoredObject>,
    w: &Write,
) -> Arc<StoredObject> {
    if w.dry_run {
        return Arc::new(crate::store::preview(rt, &v));
    }
    st.commit(rt, crate::store::ChangeKind::Modified, v, Some(old), w.ctx, w.now)
}

fn status_mode(rt: &ResourceType) -> ApiResult<UpdateMode> {
    if rt.status { Ok(UpdateMode::Status) } else { Err(ApiError::path_not_found()) }
}

/// Runs a write under the lock, then the system controllers it triggers (not for dry runs).
fn write<T>(inner: &Inner, dry_run: bool, f: impl FnOnce(&mut State) -> ApiResult<T>) -> ApiResult<T> {
    let now = inner.clock.now();
    inner.write(|st| {
        let out = f(st)?;
        if !dry_run {
            objects::reconcile_system(st, now);
        }
        Ok(out)
    })
}

fn current(st: &State, target: &Target, name: &str) -> ApiResult<Arc<StoredObject>> {
    let rt = &target.rt;
    st.get(rt.storage_key(), &target.namespace, name).ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, name))
}

fn fetch(inner: &Inner, target: &Target, name: &str) -> ApiResult<Value> {
    let st = inner.state.read();
    Ok(current(&st, target, name)?.value())
}

fn get_one(inner: &Inner, target: &Target, name: &str, rendering: &crate::table::Rendering) -> ApiResult<Response> {
    let obj = {
        let st = inner.state.read();
        current(&st, target, name)?
    };
    let body = objects::render(&target.rt, &obj);
    if *rendering != crate::table::Rendering::Json {
        let v = crate::table::object_body(rendering, &target.rt, &body, inner.clock.now());
        return Ok(rendered_response(rendering, &v));
    }
    Ok(bytes_response(StatusCode::OK, body))
}

/// A 200 answer rendered as a Table or PartialObjectMetadata, with that media type.
fn rendered_response(rendering: &crate::table::Rendering, v: &Value) -> Response {
    let mut r = json_response(StatusCode::OK, v);
    if let Ok(ct) = HeaderValue::from_str(&rendering.content_type()) {
        r.headers_mut().insert(header::CONTENT_TYPE, ct);
    }
    r
}

/// A patch that leaves out `metadata.resourceVersion` is unconditional: it applies to the
/// current version. One that names a different version fails the update with 409.
fn keep_resource_version(patched: &mut Value, old: &StoredObject) {
    let has = patched["metadata"]["resourceVersion"].as_str().is_some_and(|s| !s.is_empty());
    if !has && patched["metadata"].is_object() {
        patched["metadata"]["resourceVersion"] = json!(old.resource_version.to_string());
    }
}

/// `fieldValidation` on a request body: Strict refuses unknown fields, Warn returns them.
fn unknown_field_check(query: &Query, rt: &ResourceType, body: &Value) -> ApiResult<Vec<String>> {
    let how = field_validation::FieldValidation::parse(query.field_validation.as_deref())?;
    field_validation::check(rt, how, body)
}

/// `ValidatePatchOptions`: apply needs a field manager, only apply takes `force`.
fn patch_options(query: &Query, kind: PatchKind) -> ApiResult<()> {
    let mut causes = Vec::new();
    if kind == PatchKind::Apply {
        if query.field_manager.is_none() {
            causes.push(StatusCause::field(
                "FieldValueRequired",
                "fieldManager",
                "Required value: is required for apply patch",
            ));
        }
    } else if query.force.is_some() {
        causes.push(StatusCause::field(
            "FieldValueForbidden",
            "force",
            "Forbidden: may not be specified for non-apply patch",
        ));
    }
    if let Some(m) = &query.field_manager
        && m.chars().count() > 128
    {
        causes.push(StatusCause::field(
            "FieldValueTooLong",
            "fieldManager",
            "Too long: may not be more than 128 bytes",
        ));
    }
    if causes.is_empty() { Ok(()) } else { Err(invalid_options("PatchOptions", causes)) }
}

/// A server-side apply: merge into the live object (or create it), conflicts, ownership.
#[allow(clippy::too_many_arguments)]
fn server_side_apply(
    inner: &Inner,
    target: &Target,
    name: &str,
    query: &Query,
    body: &[u8],
    mode: UpdateMode,
    ctx: &Arc<WriteContext>,
    dry_run: bool,
) -> ApiResult<Response> {
    let rt = &target.rt;
    let mut applied = objects::parse_object(body, true)?;
    objects::check_type_meta(rt, &mut applied)?;
    if applied["metadata"].get("managedFields").is_some_and(|v| !v.is_null()) {
        return Err(ApiError::bad_request("metadata.managedFields must be nil"));
    }
    let manager = query.field_manager.clone().unwrap_or_default();
    let now = inner.clock.now();
    let req = crate::apply::ApplyRequest {
        manager: &manager,
        force: query.force.unwrap_or(false),
        subresource: target.subresource.as_deref(),
        time: crate::clock::format_time(now),
    };
    let typed = |merged: &Value| -> ApiResult<()> {
        let Some(check) = rt.decode_check else { return Ok(()) };
        check(merged).map_err(|e| {
            let ns = if target.namespace.is_empty() { String::new() } else { format!("{}/", target.namespace) };
            ApiError::bad_request(format!(
                "failed to create typed patch object ({ns}{name}; {}, Kind={}): {e}",
                rt.api_version(),
                rt.kind
            ))
        })
    };
    let (obj, created) = write(inner, dry_run, |st| {
        let w = Write { ctx, now, dry_run };
        match st.get(rt.storage_key(), &target.namespace, name) {
            Some(old) => {
                let served: Value = serde_json::from_slice(&objects::render(rt, &old)).unwrap_or_else(|_| old.value());
                let mut merged = crate::apply::apply(rt, Some(&served), &applied, &req)?;
                typed(&merged)?;
                keep_resource_version(&mut merged, &old);
                let obj = objects::update_owned(st, rt, &target.namespace, name, merged, mode, &w, Ownership::Given)?;
                Ok((obj, false))
            }
            None if mode == UpdateMode::Status => Err(ApiError::not_found(&rt.group, &rt.plural, name)),
            None => {
                let mut obj = crate::apply::apply(rt, None, &applied, &req)?;
                match obj["metadata"]["name"].as_str() {
                    Some(n) if !n.is_empty() && n != name => {
                        return Err(ApiError::bad_request(format!(
                            "the name of the object ({n}) does not match the name on the URL ({name})"
                        )));
                    }
                    _ => objects::put(&mut obj, &["metadata", "name"], json!(name)),
                };
                typed(&obj)?;
                let prepared = objects::prepare_create_owned(rt, &target.namespace, obj, &w, Ownership::Given)?;
                Ok((objects::create_prepared(st, rt, &target.namespace, prepared, &w)?, true))
            }
        }
    })?;
    let code = if created { StatusCode::CREATED } else { StatusCode::OK };
    Ok(bytes_response(code, objects::render(rt, &obj)))
}

fn apply_patch(kind: PatchKind, old: &Value, body: &[u8], shape: Shape<'_>) -> ApiResult<Value> {
    let mut doc = old.clone();
    match kind {
        PatchKind::Apply => return Err(ApiError::unsupported_media_type("application/apply-patch+yaml", &[])),
        PatchKind::Strategic => {
            let patch: Value = serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
            doc = crate::smp::apply(&doc, &patch, shape).map_err(|e| ApiError::bad_request(e.to_string()))?;
        }
        PatchKind::Merge => {
            let patch: Value = serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
            json_patch::merge(&mut doc, &patch);
        }
        PatchKind::Json => {
            let ops: Vec<Value> = serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
            if ops.len() > MAX_JSON_PATCH_OPERATIONS {
                return Err(ApiError::request_entity_too_large(format!(
                    "The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {}",
                    ops.len()
                )));
            }
            let patch: json_patch::Patch = serde_json::from_value(Value::Array(ops))
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
            // `doc` is a scratch copy thrown away on failure, so no undo is needed (and
            // `json_patch::patch`'s undo panics after ops that moved the document root).
            crate::go_json_patch::apply(&mut doc, &patch).map_err(|e| {
                ApiError::unprocessable(format!("the server rejected our request due to an error in our request: {e}"))
            })?;
        }
    }
    if !doc.is_object() {
        return Err(ApiError::unprocessable("the patch turned the object into something that is not an object"));
    }
    Ok(doc)
}

/// Options of a DELETE from the query and, when there is one, the body (a `DeleteOptions`
/// object; JSON `null` counts as none). Decode errors are 400, `ValidateDeleteOptions`
/// failures 422 Invalid `DeleteOptions.meta.k8s.io`.
fn delete_options(query: &Query, body: &[u8]) -> ApiResult<DeleteOptions> {
    let mut o = DeleteOptions {
        grace_period_seconds: query.grace_period_seconds,
        propagation_policy: query.propagation_policy.clone(),
        orphan_dependents: query.orphan_dependents,
        ..Default::default()
    };
    let mut dry_run = query.dry_run_values.clone();
    if !body.iter().all(u8::is_ascii_whitespace) {
        let decode_error = |e: String| ApiError::bad_request(format!("error decoding DeleteOptions: {e}"));
        let v: Value = serde_json::from_slice(body).map_err(|e| decode_error(e.to_string()))?;
        let fields = match &v {
            Value::Object(m) => m.clone(),
            Value::Null => serde_json::Map::new(),
            other => {
                return Err(decode_error(format!(
                    "json: cannot unmarshal {} into Go value of type v1.DeleteOptions",
                    objects::go_json_type(other)
                )));
            }
        };
        let field = |name: &str| fields.get(name).filter(|x| !x.is_null());
        let wrong_type = |name: &str, want: &str, got: &Value| {
            decode_error(format!(
                "json: cannot unmarshal {} into Go struct field DeleteOptions.{name} of type {want}",
                objects::go_json_type(got)
            ))
        };
        if let Some(g) = field("gracePeriodSeconds") {
            o.grace_period_seconds = Some(g.as_i64().ok_or_else(|| wrong_type("gracePeriodSeconds", "int64", g))?);
        }
        if let Some(p) = field("propagationPolicy") {
            let p = p.as_str().ok_or_else(|| wrong_type("propagationPolicy", "v1.DeletionPropagation", p))?;
            o.propagation_policy = Some(p.to_string());
        }
        if let Some(b) = field("orphanDependents") {
            o.orphan_dependents = Some(b.as_bool().ok_or_else(|| wrong_type("orphanDependents", "bool", b))?);
        }
        if let Some(pre) = field("preconditions") {
            let pre = pre.as_object().ok_or_else(|| wrong_type("preconditions", "v1.Preconditions", pre))?;
            let string = |name: &str| -> ApiResult<Option<String>> {
                match pre.get(name).filter(|x| !x.is_null()) {
                    None => Ok(None),
                    Some(Value::String(s)) => Ok(Some(s.clone())),
                    Some(other) => Err(wrong_type(&format!("preconditions.{name}"), "string", other)),
                }
            };
            o.precondition_uid = string("uid")?;
            o.precondition_resource_version = string("resourceVersion")?;
        }
        if let Some(d) = field("dryRun") {
            let list = d.as_array().ok_or_else(|| wrong_type("dryRun", "[]string", d))?;
            dry_run = list
                .iter()
                .map(|x| x.as_str().map(str::to_string).ok_or_else(|| wrong_type("dryRun", "string", x)))
                .collect::<ApiResult<_>>()?;
        }
    }
    // ValidateDeleteOptions, all failures in one Invalid.
    let mut causes = Vec::new();
    if let Some(p) = &o.propagation_policy {
        if o.orphan_dependents.is_some() {
            causes.push(StatusCause::field(
                "FieldValueInvalid",
                "propagationPolicy",
                format!("Invalid value: \"{p}\": orphanDependents and deletionPropagation cannot be both set"),
            ));
        }
        if !matches!(p.as_str(), "Foreground" | "Background" | "Orphan") {
            causes.push(StatusCause::field(
                "FieldValueNotSupported",
                "propagationPolicy",
                format!(
                    "Unsupported value: \"{p}\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
                ),
            ));
        }
    }
    causes.extend(dry_run_causes(&dry_run));
    if !causes.is_empty() {
        return Err(invalid_options("DeleteOptions", causes));
    }
    o.dry_run = !dry_run.is_empty();
    Ok(o)
}

/// A list page: `metadata.resourceVersion`, optional continue token and remaining count.
pub(crate) fn list_body(
    rt: &ResourceType,
    items: impl Iterator<Item = Bytes>,
    rv: u64,
    cont: Option<String>,
    remaining: Option<usize>,
) -> Bytes {
    let mut meta = serde_json::Map::new();
    meta.insert("resourceVersion".into(), json!(rv.to_string()));
    if let Some(c) = cont {
        meta.insert("continue".into(), json!(c));
    }
    if let Some(r) = remaining {
        meta.insert("remainingItemCount".into(), json!(r));
    }
    let head = json!({"kind": rt.list_kind, "apiVersion": rt.api_version(), "metadata": meta});
    let mut out = BytesMut::new();
    let head_bytes = serde_json::to_vec(&head).unwrap_or_default();
    // Splice the items array into the head object without re-serializing the items.
    out.put_slice(&head_bytes[..head_bytes.len().saturating_sub(1)]);
    out.put_slice(b",\"items\":[");
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.put_u8(b',');
        }
        out.put_slice(&item);
    }
    out.put_slice(b"]}");
    out.freeze()
}

/// Continue token: where the next page starts and which snapshot it reads.
#[derive(serde::Serialize, serde::Deserialize)]
struct ContinueToken {
    v: String,
    rv: u64,
    ns: String,
    name: String,
}

fn encode_continue(rv: u64, last: &(String, String)) -> String {
    let t = ContinueToken { v: "meta.k8s.io/v1".into(), rv, ns: last.0.clone(), name: last.1.clone() };
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(serde_json::to_vec(&t).unwrap_or_default())
}

fn decode_continue(s: &str) -> ApiResult<ContinueToken> {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(s)
        .map_err(|e| ApiError::bad_request(format!("continue key is not valid: {e}")))?;
    let t: ContinueToken =
        serde_json::from_slice(&bytes).map_err(|e| ApiError::bad_request(format!("continue key is not valid: {e}")))?;
    if t.v != "meta.k8s.io/v1" {
        return Err(ApiError::bad_request(
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        ));
    }
    Ok(t)
}

const CONTINUE_EXPIRED: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

/// Which snapshot a LIST reads, from resourceVersion and resourceVersionMatch.
fn list_snapshot(query: &Query, current: u64) -> ApiResult<Option<u64>> {
    let rv = query.resource_version.as_deref();
    let parsed = match rv {
        Some(s) => Some(parse_rv(s).ok_or_else(|| ApiError::bad_request(format!("invalid resource version: {s:?}")))?),
        None => None,
    };
    match (query.resource_version_match.as_deref(), parsed) {
        (None, None) | (None, Some(0)) | (Some("NotOlderThan"), Some(0)) => Ok(None),
        (Some(m), None) => Err(invalid_options(
            "ListOptions",
            vec![StatusCause::field(
                "FieldValueForbidden",
                "resourceVersionMatch",
                format!("Forbidden: resourceVersionMatch \"{m}\" is forbidden unless resourceVersion is provided"),
            )],
        )),
        (Some("Exact"), Some(0)) => Err(invalid_options(
            "ListOptions",
            vec![StatusCause::field(
                "FieldValueForbidden",
                "resourceVersionMatch",
                "Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
            )],
        )),
        (Some("Exact"), Some(n)) => {
            if n > current {
                return Err(ApiError::too_large_resource_version(n, current));
            }
            Ok(Some(n))
        }
        (None | Some("NotOlderThan"), Some(n)) => {
            if n > current {
                return Err(ApiError::too_large_resource_version(n, current));
            }
            Ok(None)
        }
        (Some(m), _) => Err(invalid_options(
            "ListOptions",
            vec![StatusCause::field(
                "FieldValueNotSupported",
                "resourceVersionMatch",
                format!("Unsupported value: \"{m}\": supported values: \"Exact\", \"NotOlderThan\""),
            )],
        )),
    }
}

fn list(inner: &Inner, target: &Target, query: &Query, rendering: &crate::table::Rendering) -> ApiResult<Response> {
    let rt = &target.rt;
    let (labels, fields) = query.selectors(rt)?;
    let st = inner.state.read();
    let token = query.continue_token.as_deref().map(decode_continue).transpose()?;
    if token.is_some() && query.resource_version.as_deref().is_some_and(|r| r != "0") {
        return Err(ApiError::bad_request("specifying resource version is not allowed when using continue"));
    }
    let (snapshot_rv, snapshot) = match &token {
        Some(t) => {
            (t.rv, Some(st.snapshot_at(rt.storage_key(), t.rv).ok_or_else(|| ApiError::expired(CONTINUE_EXPIRED))?))
        }
        None => match list_snapshot(query, st.resource_version)? {
            Some(rv) => (
                rv,
                Some(
                    st.snapshot_at(rt.storage_key(), rv)
                        .ok_or_else(|| ApiError::too_old_resource_version(rv, st.compacted + 1))?,
                ),
            ),
            None => (st.resource_version, None),
        },
    };
    let empty = Default::default();
    let coll = snapshot.as_ref().unwrap_or_else(|| st.collections.get(rt.storage_key()).unwrap_or(&empty));
    let start = match &token {
        Some(t) => std::ops::Bound::Excluded((t.ns.clone(), t.name.clone())),
        None if !target.namespace.is_empty() => std::ops::Bound::Included((target.namespace.clone(), String::new())),
        None => std::ops::Bound::Unbounded,
    };
    let in_scope = |o: &&Arc<StoredObject>| target.namespace.is_empty() || o.namespace == target.namespace;
    let mut iter = coll
        .range((start, std::ops::Bound::Unbounded))
        .map(|(_, o)| o)
        .take_while(|o| target.namespace.is_empty() || o.namespace == target.namespace)
        .filter(in_scope)
        .filter(|o| matches(o, &labels, &fields));
    let limit = query.limit.unwrap_or(usize::MAX);
    let page: Vec<&Arc<StoredObject>> = iter.by_ref().take(limit).collect();
    let mut cont = None;
    let mut remaining = None;
    if query.limit.is_some() {
        let rest = iter.count();
        if rest > 0 {
            if let Some(last) = page.last() {
                cont = Some(encode_continue(snapshot_rv, &(last.namespace.clone(), last.name.clone())));
            }
            // Like the apiserver, only an unfiltered list knows how many items remain.
            if labels.is_empty() && fields.is_empty() {
                remaining = Some(rest);
            }
        }
    }
    let items: Vec<Bytes> = page.iter().map(|o| objects::render(rt, o)).collect();
    drop(st);
    if *rendering != crate::table::Rendering::Json {
        let v = crate::table::list_body(rendering, rt, &items, snapshot_rv, cont, remaining, inner.clock.now());
        return Ok(rendered_response(rendering, &v));
    }
    Ok(bytes_response(StatusCode::OK, list_body(rt, items.into_iter(), snapshot_rv, cont, remaining)))
}
