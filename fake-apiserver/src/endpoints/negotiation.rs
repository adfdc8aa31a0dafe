//! Content negotiation: what a request body is (by Content-Type), what the client accepts, and
//! the shapes of answers (JSON, rendered tables, warnings).

use super::tables::Rendering;
use crate::error::{ApiError, ApiResult};
use axum::body::Body;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde_json::Value;

/// A JSON response from a value.
pub(super) fn json_response(code: StatusCode, v: &Value) -> Response {
    bytes_response(code, Bytes::from(serde_json::to_vec(v).unwrap_or_default()))
}

/// A JSON response from bytes that are already JSON.
pub(super) fn bytes_response(code: StatusCode, body: Bytes) -> Response {
    let mut r = (code, body).into_response();
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

/// A 200 answer rendered as a Table or PartialObjectMetadata, with that media type.
pub(super) fn rendered_response(rendering: &Rendering, v: &Value) -> Response {
    let mut r = json_response(StatusCode::OK, v);
    if let Ok(ct) = HeaderValue::from_str(&rendering.content_type()) {
        r.headers_mut().insert(header::CONTENT_TYPE, ct);
    }
    r
}

/// Adds `Warning: 299 - "..."` headers to a response.
pub(super) fn with_warnings(mut resp: Response, warnings: &[String]) -> Response {
    for w in warnings {
        let text = format!("299 - {}", apimachinery::go::quote(w));
        if let Ok(v) = HeaderValue::from_str(&text) {
            resp.headers_mut().append(header::WARNING, v);
        }
    }
    resp
}

/// Reads a request body of at most `limit` bytes (413 beyond it).
pub(super) async fn read_body(limit: usize, body: Body, headers: &HeaderMap) -> ApiResult<Bytes> {
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

/// What kind of body a write carries, from its Content-Type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BodyFormat {
    Json,
    Yaml,
    MergePatch,
    JsonPatch,
    StrategicMergePatch,
    ApplyPatch,
}

/// The media types of POST and PUT bodies.
pub(super) const WRITE_MEDIA_TYPES: &[&str] = &["application/json", "application/yaml"];
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
pub(super) fn raw_content_type(headers: &HeaderMap) -> String {
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
pub(super) fn object_format(headers: &HeaderMap) -> ApiResult<BodyFormat> {
    match body_format(headers) {
        Some(f @ (BodyFormat::Json | BodyFormat::Yaml)) => Ok(f),
        _ => Err(ApiError::unsupported_media_type(&raw_content_type(headers), WRITE_MEDIA_TYPES)),
    }
}

/// A PATCH body's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PatchKind {
    Merge,
    Json,
    Strategic,
    Apply,
}

/// The kind of a PATCH body, else 415 listing the patch media types the resource takes
/// (checked before the body is read, as the patch handler does).
pub(super) fn patch_kind(headers: &HeaderMap, custom: bool) -> ApiResult<PatchKind> {
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
pub(super) enum ScaleWrite<T> {
    Replace(T),
    Patch(PatchKind),
}

/// Checks the Accept header allows JSON (406 otherwise).
pub(super) fn accept_json(headers: &HeaderMap) -> ApiResult<()> {
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
