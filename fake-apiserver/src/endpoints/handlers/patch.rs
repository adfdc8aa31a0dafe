//! PATCH: JSON merge patch, JSON patch, strategic merge patch (built-ins only) and
//! server-side apply, of an object, its status or its Scale.

use super::super::negotiation::{PatchKind, bytes_response, patch_kind, with_warnings};
use super::super::query::Query;
use super::{Call, create_prepared, current, keep_resource_version, update_mode};
use crate::error::{ApiError, ApiResult, StatusCause};
use crate::fieldmanager::UpdateOwnership;
use crate::fieldmanager::apply::{ApplyRequest, apply};
use crate::fieldmanager::field_validation::FieldValidation;
use crate::fieldmanager::patch_meta::Shape;
use crate::fieldmanager::smp;
use crate::go_json_patch;
use crate::registry::decode::{check_apply_type_meta, check_patched, go_nulls_of, parse_object};
use crate::registry::store::{self, UpdateMode, Write, try_render, try_served_value};
use crate::storage::Verb;
use apimachinery::clock::format_time;
use axum::response::Response;
use http::StatusCode;
use serde_json::Value;

/// The most operations kube-apiserver applies from one JSON patch (`maxJSONPatchOperations`).
const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// The object (or its status) patched; server-side apply creates it when absent.
pub(super) async fn object(mut call: Call) -> ApiResult<Response> {
    let kind = patch_kind(&call.parts.headers, call.target.rt.custom)?;
    let body = call.body().await?;
    let dry_run = call.query.write_options("PatchOptions", patch_causes(&call.query, kind))?;
    // Unknown fields are looked for in the patch itself (a JSON patch has no object shape).
    let mut warnings = match kind {
        PatchKind::Json => Vec::new(),
        PatchKind::Apply => call.unknown_fields(&parse_object(&body, true)?)?,
        PatchKind::Merge | PatchKind::Strategic => match serde_json::from_slice::<Value>(&body) {
            // Checking a merge patch's fields decodes it into a map first (jsonPatcher
            // applyJSPatch, under Strict or Warn): anything but an object or null is a 400.
            Ok(v)
                if kind == PatchKind::Merge
                    && !v.is_object()
                    && !v.is_null()
                    && call.field_validation()? != FieldValidation::Ignore =>
            {
                return Err(ApiError::bad_request(format!(
                    "error decoding patch: json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                    crate::registry::decode::go_json_type(&v)
                )));
            }
            Ok(v) => call.unknown_fields(&v)?,
            Err(_) => Vec::new(),
        },
    };
    let mode = update_mode(&call.target.rt, call.subresource)?;
    if kind == PatchKind::Apply {
        let resp = server_side_apply(&call, &body, mode, dry_run)?;
        return Ok(with_warnings(resp, &warnings));
    }
    let ctx = call.write_context(Verb::Patch);
    let now = call.ctx.clock.now();
    let rt = &call.target.rt;
    let (updated, raised) = call.ctx.write_admitted(dry_run, |st| {
        let old = current(st, &call.target, call.name())?;
        // Patch the object as this version serves it (apiVersion, read-time defaults).
        let served = try_served_value(rt, &old)?;
        let shape = Shape::builtin_root(&rt.group, &rt.version, &rt.kind);
        let mut patched = apply_patch(kind, &served, &body, shape)?;
        // The patched JSON is decoded as Go decodes it: nulls left by the patch are zero values.
        go_nulls_of(rt, &mut patched);
        check_patched(&patched, rt.api_version(), &rt.kind, rt.decode_check)?;
        keep_resource_version(rt, &mut patched, &old);
        let w = Write { ctx: &ctx, now, dry_run, fields: Some(&UpdateOwnership) };
        store::update(st, rt, &call.target.namespace, call.name(), patched, mode, &w)
    })?;
    warnings.extend(raised);
    Ok(with_warnings(bytes_response(StatusCode::OK, try_render(rt, &updated)?), &warnings))
}

/// The Scale patched.
pub(super) async fn scale(call: Call) -> ApiResult<Response> {
    super::update::write_scale(call, Verb::Patch).await
}

/// `ValidatePatchOptions`' own rules: apply needs a field manager, only apply takes `force`.
fn patch_causes(query: &Query, kind: PatchKind) -> Vec<StatusCause> {
    if kind == PatchKind::Apply {
        if query.field_manager.is_none() {
            return vec![StatusCause::field(
                "FieldValueRequired",
                "fieldManager",
                "Required value: is required for apply patch",
            )];
        }
    } else if query.force.is_some() {
        return vec![StatusCause::field(
            "FieldValueForbidden",
            "force",
            "Forbidden: may not be specified for non-apply patch",
        )];
    }
    Vec::new()
}

/// A server-side apply: merge into the live object (or create it), conflicts, ownership.
/// A server-side apply: merge into the live object (or create it), conflicts, ownership.
fn server_side_apply(call: &Call, body: &[u8], mode: UpdateMode, dry_run: bool) -> ApiResult<Response> {
    let (target, name, query) = (&call.target, call.name(), &call.query);
    let ctx = &call.write_context(Verb::Patch);
    let rt = &target.rt;
    let applied = parse_object(body, true)?;
    check_apply_type_meta(rt, &applied)?;
    if applied["metadata"].get("managedFields").is_some_and(|v| !v.is_null()) {
        return Err(ApiError::bad_request("metadata.managedFields must be nil"));
    }
    // structured-merge-diff cannot type a patch with fields the schema does not declare:
    // kube-apiserver answers 500 whatever fieldValidation says.
    if let Some(first) = crate::fieldmanager::field_validation::unknown_fields(rt, &applied).first() {
        let ns = if target.namespace.is_empty() { String::new() } else { format!("{}/", target.namespace) };
        let gv = if rt.group.is_empty() { format!("/{}", rt.version) } else { rt.api_version().to_string() };
        return Err(ApiError::internal_plain(format!(
            "failed to create typed patch object ({ns}{name}; {gv}, Kind={}): .{first}: field not declared in schema",
            rt.kind
        )));
    }
    // Nor one whose list-map has two items of the same key.
    // structured-merge-diff's typed conversion of the applied object fails before anything
    // validates it: kube-apiserver answers 500 `failed to create typed patch object (<the body's
    // namespace>/<name>; <gvk>): …` (`fieldmanager` `Apply`).
    let untyped = |why: String| {
        let ns = applied["metadata"]["namespace"].as_str().unwrap_or("");
        let gv = if rt.group.is_empty() { format!("/{}", rt.version) } else { rt.api_version().to_string() };
        ApiError::internal_plain(format!(
            "failed to create typed patch object ({ns}/{name}; {gv}, Kind={}): {why}",
            rt.kind
        ))
    };
    if let Some((at, key)) =
        crate::fieldmanager::managed::duplicate_key(&applied, crate::fieldmanager::managed::shape_of(rt))
    {
        return Err(untyped(format!("{at}: duplicate entries for key {key}")));
    }
    if let Some(why) = rt.schema.as_ref().and_then(|s| s.cursor().type_error(&applied)) {
        return Err(untyped(why));
    }
    let manager = query.field_manager.clone().unwrap_or_default();
    let now = call.ctx.clock.now();
    let req = ApplyRequest {
        manager: &manager,
        force: query.force.unwrap_or(false),
        subresource: call.subresource,
        time: format_time(now),
    };
    // What the merged object cannot be decoded as is a plain 500 as well (structuredmerge.go
    // `Apply`, apiserver v0.37.2 pkg/endpoints/handlers/fieldmanager): a scalar of the wrong JSON
    // type fails structured-merge-diff's typing ("failed to create typed patch object"), any other
    // decoding error (quantities, int32 bounds, bytes that are not base64, times that are not
    // strings: scalars its schema leaves untyped) the conversion to the typed object.
    let typed = |merged: &Value| -> ApiResult<()> {
        let Some(check) = rt.decode_check else { return Ok(()) };
        check(merged).map_err(|e| {
            let gv = if rt.group.is_empty() { format!("/{}", rt.version) } else { rt.api_version().to_string() };
            let kind = &rt.kind;
            let e = e.to_string();
            if e.contains("invalid type:") && !e.contains("timestamp") {
                untyped(e)
            } else {
                let e = if is_base64_error(&e) { format!("error decoding from json: {e}") } else { e };
                ApiError::internal_plain(format!(
                    "failed to convert new object (/{name}; {gv}, Kind={kind}) to proper version: unable to convert \
                     unstructured object to {gv}, Kind={kind}: {e}"
                ))
            }
        })
    };
    let ((obj, created), raised) = call.ctx.write_admitted(dry_run, |st| {
        let w = Write { ctx, now, dry_run, fields: None };
        match st.store.get(rt.storage_key(), &target.namespace, name) {
            Some(old) => {
                let served = try_served_value(rt, &old)?;
                let mut merged = apply(rt, Some(&served), &applied, &req)?;
                // Converted to its Go type: nulls of structs in lists are zero structs there.
                crate::registry::go_types::go_shape(rt, &mut merged);
                typed(&merged)?;
                keep_resource_version(rt, &mut merged, &old);
                let obj = store::update(st, rt, &target.namespace, name, merged, mode, &w)?;
                Ok((obj, false))
            }
            None if mode == UpdateMode::Status => Err(ApiError::not_found(&rt.group, &rt.plural, name)),
            None => {
                let mut obj = apply(rt, None, &applied, &req)?;
                crate::registry::go_types::go_shape(rt, &mut obj);
                // The patcher's checkName: the applied object must name itself, as the URL does.
                match obj["metadata"]["name"].as_str().unwrap_or_default() {
                    "" => {
                        return Err(ApiError::bad_request(format!(
                            "the name of the object ({name} based on URL) was undeterminable: name must be provided"
                        )));
                    }
                    n if n != name => {
                        return Err(ApiError::bad_request(format!(
                            "the name of the object ({n}) does not match the name on the URL ({name})"
                        )));
                    }
                    _ => {}
                };
                // Creating through the update path (Store.Update with `creating`): the
                // resourceVersion is parsed first, then a uid can match no existing object.
                if let Some(rv) = obj["metadata"]["resourceVersion"].as_str().filter(|s| !s.is_empty())
                    && let Err(e) = crate::storage::parse_rv_go(rv)
                {
                    return Err(ApiError::internal_plain(e));
                }
                if let Some(uid) = obj["metadata"]["uid"].as_str().filter(|s| !s.is_empty()) {
                    return Err(ApiError::conflict_because(
                        &rt.group,
                        &rt.plural,
                        name,
                        format!(
                            "uid mismatch: the provided object specified uid {uid}, and no existing object was found"
                        ),
                    ));
                }
                typed(&obj)?;
                let prepared = store::prepare_create(rt, &target.namespace, obj, &w, &*st)?;
                Ok((create_prepared(st, rt, &target.namespace, prepared, &w)?, true))
            }
        }
    })?;
    let code = if created { StatusCode::CREATED } else { StatusCode::OK };
    Ok(with_warnings(bytes_response(code, try_render(rt, &obj)?), &raised))
}

/// Applies a merge, JSON or strategic merge patch to a copy of `old`.
pub(super) fn apply_patch(kind: PatchKind, old: &Value, body: &[u8], shape: Shape<'_>) -> ApiResult<Value> {
    let mut doc = old.clone();
    match kind {
        PatchKind::Apply => return Err(ApiError::unsupported_media_type("application/apply-patch+yaml", &[])),
        PatchKind::Strategic => {
            let patch: Value = serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
            doc = smp::apply(&doc, &patch, shape).map_err(smp::SmpError::into_api)?;
        }
        PatchKind::Merge => {
            let patch: Value = serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
            // evanphx/json-patch v4 `MergePatch`: a patch that is neither an object nor a list is
            // `ErrBadJSONPatch` (400); a list replaces the document, its nulls pruned.
            match patch {
                Value::Object(_) => json_patch::merge(&mut doc, &patch),
                Value::Array(items) => doc = Value::Array(items.into_iter().filter(|v| !v.is_null()).collect()),
                _ => return Err(ApiError::bad_request("Invalid JSON Patch")),
            }
        }
        PatchKind::Json => {
            let mut ops: Vec<Value> = serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
            if ops.len() > MAX_JSON_PATCH_OPERATIONS {
                return Err(ApiError::request_entity_too_large(format!(
                    "The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {}",
                    ops.len()
                )));
            }
            // evanphx/json-patch v4 decodes any list of objects (`DecodePatch`) and finds a
            // missing or unknown op, or a missing path or from, only when it applies the patch:
            // a 422 like every other failure to apply.
            for op in &ops {
                let kind = op.get("op").and_then(Value::as_str).unwrap_or("unknown");
                let why = if !matches!(kind, "add" | "remove" | "replace" | "move" | "copy" | "test") {
                    Some(format!("Unexpected kind: {kind}"))
                } else if !op.get("path").is_some_and(Value::is_string) {
                    Some(format!("{kind} operation failed to decode path: operation missing path field: missing value"))
                } else if matches!(kind, "move" | "copy") && !op.get("from").is_some_and(Value::is_string) {
                    Some(format!("{kind} operation failed to decode from: operation missing from field: missing value"))
                } else {
                    // v4 splits a pointer without its leading slash as if its first token were
                    // the empty root one: what it names is not in the document.
                    ["path", "from"]
                        .iter()
                        .filter_map(|k| op.get(*k).and_then(Value::as_str))
                        .find(|p| !p.is_empty() && !p.starts_with('/'))
                        .map(|p| format!("{kind} operation does not apply: doc is missing path: {p:?}: missing value"))
                };
                if let Some(why) = why {
                    return Err(ApiError::unprocessable(format!(
                        "the server rejected our request due to an error in our request: {why}"
                    )));
                }
            }
            // evanphx/json-patch v4 reads a missing `value` of add or replace as null.
            for op in &mut ops {
                if let Some(o) = op.as_object_mut()
                    && matches!(o.get("op").and_then(Value::as_str), Some("add" | "replace"))
                {
                    o.entry("value").or_insert(Value::Null);
                }
            }
            let patch: json_patch::Patch = serde_json::from_value(Value::Array(ops))
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
            // `doc` is a scratch copy thrown away on failure, so no undo is needed (and
            // `json_patch::patch`'s undo panics after ops that moved the document root).
            go_json_patch::apply(&mut doc, &patch).map_err(|e| {
                ApiError::unprocessable(format!("the server rejected our request due to an error in our request: {e}"))
            })?;
        }
    }
    // A result that is not an object fails to decode (`check_patched`: 422 on `patch`).
    Ok(doc)
}

/// Whether a decode error is the base64 decoder's (a `[]byte` field that is not base64).
fn is_base64_error(message: &str) -> bool {
    ["Invalid symbol", "Invalid input length", "Invalid last symbol", "Invalid padding"]
        .iter()
        .any(|m| message.contains(m))
}
