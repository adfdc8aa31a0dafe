//! LIST: pages (`limit`/`continue`) over a consistent snapshot, `resourceVersion` and
//! `resourceVersionMatch`, label and field selectors.

use super::super::negotiation::{bytes_response, rendered_response};
use super::super::query::{Query, invalid_options, matches};
use super::super::tables::{self, Rendering};
use super::Call;
use crate::error::{ApiError, ApiResult, StatusCause};
use crate::registry::ResourceType;
use crate::registry::store::try_render_many;
use crate::storage::{StoredObject, read_rv};
use axum::response::Response;
use base64::Engine;
use bytes::{BufMut, Bytes, BytesMut};
use http::StatusCode;
use serde_json::json;
use std::sync::Arc;

/// A list page: `metadata.resourceVersion`, optional continue token and remaining count.
pub(super) fn list_body(
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
        // `InterpretListError` turns the storage's invalid resourceVersion into a 400 (a GET or
        // a watch leaves it a 500).
        Some(s) => {
            Some(read_rv(s).map_err(|e| ApiError::bad_request(format!("invalid resource version: {}", e.message)))?)
        }
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

/// A list: a consistent page of the collection at a snapshot, with selectors.
pub(super) fn handle(call: Call) -> ApiResult<Response> {
    let rendering = tables::negotiate(&call.parts.headers, call.parts.uri.query())?;
    let (target, query) = (&call.target, &call.query);
    let rt = &target.rt;
    let (labels, fields) = query.selectors(rt)?;
    // ValidateListOptions (apimachinery v0.37.2 pkg/apis/meta/internalversion/validation): a
    // list (not a watch) may not ask for initial events, whatever the value.
    if query.send_initial_events.is_some() {
        return Err(invalid_options(
            "ListOptions",
            vec![StatusCause::field(
                "FieldValueForbidden",
                "sendInitialEvents",
                "Forbidden: sendInitialEvents is forbidden for list",
            )],
        ));
    }
    let st = call.ctx.state.read();
    let token = query.continue_token.as_deref().map(decode_continue).transpose()?;
    if token.is_some() && query.resource_version.as_deref().is_some_and(|r| r != "0") {
        return Err(ApiError::bad_request("specifying resource version is not allowed when using continue"));
    }
    let (snapshot_rv, snapshot) = match &token {
        Some(t) => (
            t.rv,
            Some(st.store.snapshot_at(rt.storage_key(), t.rv).ok_or_else(|| ApiError::expired(CONTINUE_EXPIRED))?),
        ),
        None => match list_snapshot(query, st.store.resource_version)? {
            Some(rv) => (
                rv,
                Some(
                    st.store
                        .snapshot_at(rt.storage_key(), rv)
                        .ok_or_else(|| ApiError::too_old_resource_version(rv, st.store.compacted + 1))?,
                ),
            ),
            None => (st.store.resource_version, None),
        },
    };
    let empty = Default::default();
    let coll = snapshot.as_ref().unwrap_or_else(|| st.store.collections.get(rt.storage_key()).unwrap_or(&empty));
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
    let page: Vec<&StoredObject> = page.iter().map(|o| o.as_ref()).collect();
    let items: Vec<Bytes> = try_render_many(rt, &page)?;
    drop(st);
    if rendering != Rendering::Json {
        let v = tables::list_body(&rendering, rt, &items, snapshot_rv, cont, remaining, call.ctx.clock.now());
        return Ok(rendered_response(&rendering, &v));
    }
    Ok(bytes_response(StatusCode::OK, list_body(rt, items.into_iter(), snapshot_rv, cont, remaining)))
}
