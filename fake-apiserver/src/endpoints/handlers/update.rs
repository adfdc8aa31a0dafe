//! PUT: replace an object or its status, its Scale, or a namespace's finalizers.

use super::super::negotiation::{
    BodyFormat, ScaleWrite, bytes_response, json_response, object_format, patch_kind, with_warnings,
};
use super::{Call, current, update_mode};
use crate::error::{ApiError, ApiResult};
use crate::fieldmanager::UpdateOwnership;
use crate::fieldmanager::patch_meta::Shape;
use crate::registry::decode::{check_patched, decode_object, decode_scale, parse_object};
use crate::registry::scale::{apply_scale, scale_of};
use crate::registry::store::{self, UpdateMode, Write, try_render};
use crate::storage::{ChangeKind, Verb};
use apimachinery::unstructured::set_nested_field;
use axum::response::Response;
use http::StatusCode;

/// The object (or, through `/status`, its status) replaced.
pub(super) async fn object(mut call: Call) -> ApiResult<Response> {
    let format = object_format(&call.parts.headers)?;
    let body = call.body().await?;
    let dry_run = call.query.dry_run("UpdateOptions")?;
    let mut obj = parse_object(&body, format == BodyFormat::Yaml)?;
    let mut warnings = call.unknown_fields_decoding(&body, &mut obj)?;
    let rt = &call.target.rt;
    let mode = update_mode(rt, call.subresource)?;
    let ctx = call.write_context(Verb::Update);
    let create_ctx = call.write_context(Verb::Create);
    let now = call.ctx.clock.now();
    let (namespace, name) = (&call.target.namespace, call.name());
    // AllowCreateOnUpdate (events, RBAC, leases): a PUT without a resourceVersion of an object
    // that does not exist creates it (201), as the generic store does.
    let creates = mode == UpdateMode::Main
        && rt.strategy.allow_create_on_update()
        && obj["metadata"]["resourceVersion"].as_str().is_none_or(str::is_empty);
    let run = |st: &mut crate::registry::State, obj: serde_json::Value| {
        let stored_ns = if rt.namespaced { namespace.as_str() } else { "" };
        if creates && st.store.get(rt.storage_key(), stored_ns, name).is_none() {
            let mut obj = obj;
            if let Some(meta) = obj.get_mut("metadata").and_then(serde_json::Value::as_object_mut) {
                meta.entry("name").or_insert_with(|| name.into());
            }
            let w = Write { ctx: &create_ctx, now, dry_run, fields: Some(&UpdateOwnership) };
            return store::create(st, rt, namespace, obj, &w).map(|o| (StatusCode::CREATED, o));
        }
        let w = Write { ctx: &ctx, now, dry_run, fields: Some(&UpdateOwnership) };
        store::update(st, rt, namespace, name, obj, mode, &w).map(|o| (StatusCode::OK, o))
    };
    // A write that may meet webhooks can run more than once, each time on a copy of the body.
    let ((code, updated), raised) = if crate::registry::admission::may_call(&call.ctx.state.read()) {
        call.ctx.write_admitted(dry_run, |st| run(st, obj.clone()))?
    } else {
        call.ctx.write_warned(dry_run, |st| run(st, obj))?
    };
    warnings.extend(raised);
    Ok(with_warnings(bytes_response(code, try_render(rt, &updated)?), &warnings))
}

/// The Scale replaced.
pub(super) async fn scale(call: Call) -> ApiResult<Response> {
    write_scale(call, Verb::Update).await
}

/// A PUT or PATCH of `/scale`: PUT replaces the Scale, PATCH patches it; the replicas go back
/// into the object. The media type is checked before the body is read.
pub(super) async fn write_scale(mut call: Call, verb: Verb) -> ApiResult<Response> {
    let put = verb == Verb::Update;
    let how = if put {
        ScaleWrite::Replace(object_format(&call.parts.headers)?)
    } else {
        ScaleWrite::Patch(patch_kind(&call.parts.headers, call.target.rt.custom)?)
    };
    let body = call.body().await?;
    let dry_run = call.query.dry_run(if put { "UpdateOptions" } else { "PatchOptions" })?;
    let how = match how {
        ScaleWrite::Replace(format) => {
            let scale = parse_object(&body, format == BodyFormat::Yaml)?;
            decode_scale(&scale).map_err(|e| {
                ApiError::bad_request(format!("Scale in version \"v1\" cannot be handled as a Scale: {e}"))
            })?;
            ScaleWrite::Replace(scale)
        }
        ScaleWrite::Patch(kind) => ScaleWrite::<serde_json::Value>::Patch(kind),
    };
    let ctx = call.write_context(verb);
    let now = call.ctx.clock.now();
    let rt = &call.target.rt;
    let updated = call.ctx.write(dry_run, |st| {
        let old = current(st, &call.target, call.name())?;
        let mut obj = old.value();
        let new_scale = match how {
            ScaleWrite::Replace(scale) => scale,
            ScaleWrite::Patch(kind) => {
                let shape = Shape::builtin_root("autoscaling", "v1", "Scale");
                let patched = super::patch::apply_patch(kind, &scale_of(rt, &obj)?, &body, shape)?;
                check_patched(&patched, "autoscaling/v1", "Scale", Some(decode_scale))?;
                patched
            }
        };
        apply_scale(rt, &mut obj, &new_scale)?;
        let w = Write { ctx: &ctx, now, dry_run, fields: Some(&UpdateOwnership) };
        store::update(st, rt, &call.target.namespace, call.name(), obj, UpdateMode::Main, &w)
    })?;
    Ok(json_response(StatusCode::OK, &scale_of(rt, &updated.value())?))
}

/// `namespaces/{name}/finalize`: the namespace's `spec.finalizers` replaced.
pub(super) async fn finalize(mut call: Call) -> ApiResult<Response> {
    let body = call.body().await?;
    let dry_run = call.query.dry_run("UpdateOptions")?;
    let rt = &call.target.rt;
    let mut obj = parse_object(&body, false)?;
    decode_object(rt, &mut obj)?;
    let ctx = call.write_context(Verb::Update);
    let now = call.ctx.clock.now();
    let updated = call.ctx.write(dry_run, |st| {
        let old = current(st, &call.target, call.name())?;
        let mut v = old.value();
        set_nested_field(&mut v, &["spec", "finalizers"], obj["spec"]["finalizers"].clone());
        let w = Write { ctx: &ctx, now, dry_run, fields: None };
        w.persist(st, rt, ChangeKind::Modified, v)
    })?;
    Ok(bytes_response(StatusCode::OK, try_render(rt, &updated)?))
}
