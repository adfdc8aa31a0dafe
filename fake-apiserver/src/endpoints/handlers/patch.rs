//! PATCH: JSON merge patch, JSON patch, strategic merge patch (built-ins only) and
//! server-side apply, of an object, its status or its Scale.

use super::super::negotiation::{PatchKind, bytes_response, patch_kind, with_warnings};
use super::super::query::{Query, invalid_options};
use super::{Call, create_prepared, current, keep_resource_version, update_mode};
use crate::error::{ApiError, ApiResult, StatusCause};
use crate::fieldmanager::UpdateOwnership;
use crate::fieldmanager::apply::{ApplyRequest, apply};
use crate::fieldmanager::patch_meta::Shape;
use crate::fieldmanager::smp;
use crate::go_json_patch;
use crate::registry::decode::{check_patched, check_type_meta, parse_object};
use crate::registry::store::{self, UpdateMode, Write, try_render, try_served_value};
use crate::storage::Verb;
use apimachinery::clock::format_time;
use apimachinery::unstructured::set_nested_field;
use axum::response::Response;
use http::StatusCode;
use serde_json::{Value, json};

/// The most operations kube-apiserver applies from one JSON patch (`maxJSONPatchOperations`).
const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// The object (or its status) patched; server-side apply creates it when absent.
pub(super) async fn object(mut call: Call) -> ApiResult<Response> {
    let kind = patch_kind(&call.parts.headers, call.target.rt.custom)?;
    let body = call.body().await?;
    let dry_run = call.query.dry_run("PatchOptions")?;
    patch_options(&call.query, kind)?;
    // Unknown fields are looked for in the patch itself (a JSON patch has no object shape).
    let mut warnings = match kind {
        PatchKind::Json => Vec::new(),
        PatchKind::Apply => call.unknown_fields(&parse_object(&body, true)?)?,
        PatchKind::Merge | PatchKind::Strategic => match serde_json::from_slice::<Value>(&body) {
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
        check_patched(&patched, rt.api_version(), &rt.kind, rt.decode_check)?;
        keep_resource_version(&mut patched, &old);
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
/// A server-side apply: merge into the live object (or create it), conflicts, ownership.
fn server_side_apply(call: &Call, body: &[u8], mode: UpdateMode, dry_run: bool) -> ApiResult<Response> {
    let (target, name, query) = (&call.target, call.name(), &call.query);
    let ctx = &call.write_context(Verb::Patch);
    let rt = &target.rt;
    let mut applied = parse_object(body, true)?;
    check_type_meta(rt, &mut applied)?;
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
    let typed = |merged: &Value| -> ApiResult<()> {
        let Some(check) = rt.decode_check else { return Ok(()) };
        check(merged).map_err(|e| {
            // Bytes that are not base64 pass structured-merge-diff (its schema says string) and
            // fail only the conversion to the typed object: kube-apiserver answers 500.
            if is_base64_error(&e.to_string()) {
                let gv = if rt.group.is_empty() { format!("/{}", rt.version) } else { rt.api_version().to_string() };
                return ApiError::internal_plain(format!(
                    "failed to convert new object (/{name}; {gv}, Kind={kind}) to proper version: unable to convert \
                     unstructured object to {gv}, Kind={kind}: error decoding from json: {e}",
                    kind = rt.kind
                ));
            }
            let ns = if target.namespace.is_empty() { String::new() } else { format!("{}/", target.namespace) };
            ApiError::bad_request(format!(
                "failed to create typed patch object ({ns}{name}; {}, Kind={}): {e}",
                rt.api_version(),
                rt.kind
            ))
        })
    };
    let ((obj, created), raised) = call.ctx.write_admitted(dry_run, |st| {
        let w = Write { ctx, now, dry_run, fields: None };
        match st.store.get(rt.storage_key(), &target.namespace, name) {
            Some(old) => {
                let served = try_served_value(rt, &old)?;
                let mut merged = apply(rt, Some(&served), &applied, &req)?;
                typed(&merged)?;
                keep_resource_version(&mut merged, &old);
                let obj = store::update(st, rt, &target.namespace, name, merged, mode, &w)?;
                Ok((obj, false))
            }
            None if mode == UpdateMode::Status => Err(ApiError::not_found(&rt.group, &rt.plural, name)),
            None => {
                let mut obj = apply(rt, None, &applied, &req)?;
                match obj["metadata"]["name"].as_str() {
                    Some(n) if !n.is_empty() && n != name => {
                        return Err(ApiError::bad_request(format!(
                            "the name of the object ({n}) does not match the name on the URL ({name})"
                        )));
                    }
                    _ => set_nested_field(&mut obj, &["metadata", "name"], json!(name)),
                };
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
            doc = smp::apply(&doc, &patch, shape).map_err(|e| ApiError::bad_request(e.to_string()))?;
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
            go_json_patch::apply(&mut doc, &patch).map_err(|e| {
                ApiError::unprocessable(format!("the server rejected our request due to an error in our request: {e}"))
            })?;
        }
    }
    if !doc.is_object() {
        return Err(ApiError::unprocessable("the patch turned the object into something that is not an object"));
    }
    Ok(doc)
}

/// Whether a decode error is the base64 decoder's (a `[]byte` field that is not base64).
fn is_base64_error(message: &str) -> bool {
    ["Invalid symbol", "Invalid input length", "Invalid last symbol", "Invalid padding"]
        .iter()
        .any(|m| message.contains(m))
}
