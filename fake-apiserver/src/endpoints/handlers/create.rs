//! POST: create an object, bind a pod, or answer a create-only resource (the access reviews).

use super::super::negotiation::{BodyFormat, bytes_response, json_response, object_format, with_warnings};
use super::{Call, create_prepared};
use crate::error::{ApiError, ApiResult};
use crate::fieldmanager::UpdateOwnership;
use crate::registry::core::binding::bind;
use crate::registry::decode::parse_object;
use crate::registry::store::{self, Write, try_render};
use crate::storage::Verb;
use axum::response::Response;
use http::StatusCode;
use serde_json::json;

/// A create-only resource: the object as sent, answered (never stored).
pub(super) async fn create_only(mut call: Call) -> ApiResult<Response> {
    let format = object_format(&call.parts.headers)?;
    let body = call.body().await?;
    call.query.dry_run("CreateOptions")?;
    let obj = parse_object(&body, format == BodyFormat::Yaml)?;
    let rt = &call.target.rt;
    let user = call.user();
    let answer = rt.strategy.answer_create(
        rt,
        obj,
        &call.ctx.state.read(),
        &user,
        &call.target.namespace,
        &call.ctx.clock.now_rfc3339(),
    )?;
    Ok(json_response(StatusCode::CREATED, &answer))
}

/// A new object in the target's collection.
pub(super) async fn object(mut call: Call) -> ApiResult<Response> {
    let rt = call.target.rt.clone();
    let namespace = call.target.namespace.clone();
    if rt.namespaced && namespace.is_empty() {
        return Err(ApiError::method_not_allowed());
    }
    let format = object_format(&call.parts.headers)?;
    let body = call.body().await?;
    let dry_run = call.query.dry_run("CreateOptions")?;
    let mut obj = parse_object(&body, format == BodyFormat::Yaml)?;
    let warnings = call.unknown_fields_decoding(&body, &mut obj)?;
    let ctx = call.write_context(Verb::Create);
    let now = call.ctx.clock.now();
    let w = Write { ctx: &ctx, now, dry_run, fields: Some(&UpdateOwnership) };
    // Decoding, validation and serialization need no store: keep them out of the lock.
    let prepared = store::prepare_create(&rt, &namespace, obj, &w, &call.ctx.state)?;
    // A create that may meet validating webhooks can run more than once, each time on a copy.
    let (created, raised) = if crate::registry::admission::may_call(&call.ctx.state.read()) {
        call.ctx.write_admitted(dry_run, |st| create_prepared(st, &rt, &namespace, prepared.clone(), &w))?
    } else {
        call.ctx.write_warned(dry_run, |st| create_prepared(st, &rt, &namespace, prepared, &w))?
    };
    let warnings: Vec<String> = warnings.into_iter().chain(raised).collect();
    Ok(with_warnings(bytes_response(StatusCode::CREATED, try_render(&rt, &created)?), &warnings))
}

/// `pods/{name}/binding`: a scheduler assigns the pod to a node.
pub(super) async fn binding(call: Call) -> ApiResult<Response> {
    bind_pod(call, false).await
}

/// `POST /api/v1/namespaces/{ns}/bindings`: the older form of a pod's binding, the pod named
/// by the Binding's own name (kube-apiserver serves it as the `bindings` resource, create only).
pub(super) async fn binding_of_named_pod(call: Call) -> ApiResult<Response> {
    bind_pod(call, true).await
}

async fn bind_pod(mut call: Call, named_in_body: bool) -> ApiResult<Response> {
    let format = object_format(&call.parts.headers)?;
    let body = call.body().await?;
    let dry_run = call.query.dry_run("CreateOptions")?;
    let binding = parse_object(&body, format == BodyFormat::Yaml)?;
    let ctx = call.write_context(Verb::Create);
    let now = call.ctx.clock.now();
    let (rt, name) = if named_in_body {
        let pods = call.ctx.state.read().registry.get("", "v1", "pods").ok_or_else(ApiError::path_not_found)?;
        (pods, binding["metadata"]["name"].as_str().unwrap_or_default().to_string())
    } else {
        (call.target.rt.clone(), call.name().to_string())
    };
    let namespace = &call.target.namespace;
    call.ctx.write(dry_run, |st| {
        bind(st, &rt, namespace, &name, &binding, &Write { ctx: &ctx, now, dry_run, fields: None })
    })?;
    let ok = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201});
    Ok(json_response(StatusCode::CREATED, &ok))
}
