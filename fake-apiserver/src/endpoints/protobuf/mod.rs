//! The wire formats besides JSON: kube's protobuf (`application/vnd.kubernetes.protobuf`) for
//! every built-in type — request bodies, objects, lists, `Status` errors and watch streams —
//! and YAML answers (`Accept: application/yaml`).
//!
//! The handlers speak JSON only. A request is negotiated here before it reaches them: a
//! protobuf body is decoded into the JSON object it encodes and the request is relabelled
//! JSON; the answer they give is re-encoded in the negotiated format. Custom resources have no
//! protobuf form: their protobuf bodies stay 415 and a protobuf-only Accept is 406, as
//! kube-apiserver answers.

mod codec;

pub(crate) use codec::codec;

use super::negotiation::WRITE_MEDIA_TYPES;
use crate::error::{ApiError, ApiResult};
use crate::registry::ResourceType;
use axum::body::Body;
use axum::response::{IntoResponse, Response};
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use http::{HeaderMap, HeaderValue, header};
use serde_json::Value;

/// The Content-Type of kube's protobuf encoding.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";
const YAML: &str = "application/yaml";

/// What an answer is written as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Output {
    Json,
    Yaml,
    Protobuf,
}

fn media(range: &str) -> (String, bool) {
    let mut parts = range.split(';').map(str::trim);
    let media = parts.next().unwrap_or_default().to_ascii_lowercase();
    let transformed = parts.any(|p| p.starts_with("as="));
    (media, transformed)
}

/// Whether the resource type has a protobuf form (every built-in; no custom resource).
pub(super) fn has_protobuf(rt: &ResourceType) -> bool {
    codec().is_some_and(|c| c.message(&rt.group, &rt.version, &rt.kind).is_some())
}

/// Picks the answer's format from the Accept header (first acceptable entry wins: JSON —
/// including Table and metadata renderings —, YAML, or protobuf when the resource has one) and
/// rewrites the header for the handlers, which then see only the JSON entries. 406 when
/// nothing is acceptable; a watch cannot be YAML (no stream form), as in kube-apiserver.
pub(super) fn negotiate(headers: &mut HeaderMap, protobuf: bool, watch: bool) -> ApiResult<Output> {
    let Some(accept) = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).map(str::to_string) else {
        return Ok(Output::Json);
    };
    if accept.trim().is_empty() {
        return Ok(Output::Json);
    }
    let mut chosen = None;
    let mut json_entries = Vec::new();
    for range in accept.split(',') {
        let (m, transformed) = media(range);
        let output = match m.as_str() {
            "application/json" | "*/*" | "application/*" => Some(Output::Json),
            YAML if !transformed && !watch => Some(Output::Yaml),
            MEDIA_TYPE if !transformed && protobuf => Some(Output::Protobuf),
            _ => None,
        };
        if output == Some(Output::Json) {
            json_entries.push(range.trim().to_string());
        }
        if chosen.is_none() {
            chosen = output;
        }
    }
    let Some(chosen) = chosen else { return Err(ApiError::not_acceptable(&accept)) };
    if chosen != Output::Json {
        headers.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
    } else if let Ok(v) = HeaderValue::from_str(&json_entries.join(",")) {
        headers.insert(header::ACCEPT, v);
    }
    Ok(chosen)
}

/// Whether the request names protobuf at all, in its Accept header or as its body's type. Only
/// then is the codec consulted: loading its descriptors is the dearest step of a first request.
pub(super) fn mentions_protobuf(headers: &HeaderMap) -> bool {
    is_protobuf_body(headers)
        || headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|a| a.to_ascii_lowercase().contains(MEDIA_TYPE))
}

/// Whether the request body is protobuf.
pub(super) fn is_protobuf_body(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.split(';').next().is_some_and(|m| m.trim().eq_ignore_ascii_case(MEDIA_TYPE)))
}

/// The JSON of a protobuf request body for `rt` (its kind when the envelope names none).
/// Anything but a built-in's body is 415, as before; a body that does not decode is 400.
pub(super) fn decode_body(body: &[u8], rt: &ResourceType, content_type: &str) -> ApiResult<Bytes> {
    let Some(codec) = codec() else { return Err(ApiError::unsupported_media_type(content_type, WRITE_MEDIA_TYPES)) };
    if !has_protobuf(rt) {
        return Err(ApiError::unsupported_media_type(content_type, WRITE_MEDIA_TYPES));
    }
    let bad = |e: codec::CodecError| ApiError::bad_request(format!("the protobuf body could not be decoded: {e}"));
    let (mut api_version, mut kind, raw) = codec.split_envelope(body).map_err(bad)?;
    if kind.is_empty() {
        kind = rt.kind.clone();
    }
    if api_version.is_empty() {
        api_version = if rt.group.is_empty() { rt.version.clone() } else { format!("{}/{}", rt.group, rt.version) };
    }
    let Some(desc) = codec.message_for_api_version(&api_version, &kind) else {
        return Err(ApiError::bad_request(format!("no kind \"{kind}\" is registered for version \"{api_version}\"")));
    };
    let v = codec.decode_message(&desc, &raw, &api_version, &kind).map_err(bad)?;
    Ok(Bytes::from(serde_json::to_vec(&v).unwrap_or_default()))
}

fn content_type(resp: &Response) -> &str {
    resp.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default()
}

/// Re-encodes a handler's JSON answer as `output`. Renderings that are not plain JSON (Tables,
/// discovery documents) and kinds without a protobuf form stay JSON.
pub(super) async fn encode(output: Output, watch: bool, resp: Response) -> Response {
    if output == Output::Json || content_type(&resp) != "application/json" {
        return resp;
    }
    if watch && resp.status().is_success() {
        return encode_watch(resp);
    }
    let (mut parts, body) = resp.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        return ApiError::internal("the answer could not be read").into_response();
    };
    let Ok(value) = serde_json::from_slice::<Value>(&bytes) else {
        return Response::from_parts(parts, Body::from(bytes));
    };
    let (body, ct) = match output {
        Output::Yaml => match serde_saphyr::to_string(&value) {
            Ok(y) => (Bytes::from(y), YAML),
            Err(e) => {
                return ApiError::internal(format!("the answer could not be written as YAML: {e}")).into_response();
            }
        },
        _ => match codec().map(|c| c.encode_object(&value)) {
            Some(Ok(Some(pb))) => (Bytes::from(pb), MEDIA_TYPE),
            Some(Ok(None)) | None => return Response::from_parts(parts, Body::from(bytes)),
            Some(Err(e)) => {
                return ApiError::internal(format!("the answer could not be encoded as protobuf: {e}")).into_response();
            }
        },
    };
    parts.headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(body))
}

/// A watch stream of JSON lines as length-prefixed `WatchEvent` frames.
fn encode_watch(resp: Response) -> Response {
    let (mut parts, body) = resp.into_parts();
    let mut pending = BytesMut::new();
    let stream = body.into_data_stream().map(move |chunk| {
        let chunk = chunk?;
        pending.extend_from_slice(&chunk);
        let mut out = BytesMut::new();
        while let Some(end) = pending.iter().position(|b| *b == b'\n') {
            let line = pending.split_to(end + 1);
            let Ok(event) = serde_json::from_slice::<Value>(&line[..end]) else { continue };
            if let Some(Ok(Some(frame))) = codec().map(|c| c.encode_watch_event(&event)) {
                out.extend_from_slice(&u32::try_from(frame.len()).unwrap_or(u32::MAX).to_be_bytes());
                out.extend_from_slice(&frame);
            }
        }
        Ok::<_, axum::Error>(out.freeze())
    });
    parts
        .headers
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/vnd.kubernetes.protobuf;stream=watch"));
    Response::from_parts(parts, Body::from_stream(stream))
}
