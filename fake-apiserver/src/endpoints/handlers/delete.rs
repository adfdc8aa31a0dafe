//! DELETE of one object: preconditions, propagation policy, graceful deletion, and the
//! options (query and body) it takes.

use super::super::negotiation::{bytes_response, json_response};
use super::super::query::{Query, dry_run_causes, invalid_options};
use super::Call;
use crate::error::{ApiError, ApiResult, StatusCause};
use crate::registry::decode::go_json_type;
use crate::registry::store::{self, DeleteOptions, Deleted, Write, try_render};
use crate::storage::Verb;
use axum::response::Response;
use http::StatusCode;
use serde_json::{Value, json};

/// The object deleted, or marked for deletion while finalizers or a grace period hold it.
pub(super) async fn handle(mut call: Call) -> ApiResult<Response> {
    let body = call.body().await?;
    let opts = delete_options(&call.query, &body)?;
    let ctx = call.write_context(Verb::Delete);
    let now = call.ctx.clock.now();
    let rt = &call.target.rt;
    let (result, _) = call.ctx.write_admitted(opts.dry_run, |st| {
        let w = Write { ctx: &ctx, now, dry_run: opts.dry_run, fields: None };
        store::delete(st, rt, &call.target.namespace, call.name(), &opts, &w)
    })?;
    Ok(match result {
        // kube-apiserver answers 202 to a delete left pending only when the client asked for
        // the legacy `orphanDependents: false`.
        Deleted::Pending(obj) if opts.orphan_dependents == Some(false) => {
            bytes_response(StatusCode::ACCEPTED, try_render(rt, &obj)?)
        }
        Deleted::Pending(obj) => bytes_response(StatusCode::OK, try_render(rt, &obj)?),
        Deleted::Now(obj) if rt.returns_deleted_object() => bytes_response(StatusCode::OK, try_render(rt, &obj)?),
        Deleted::Now(obj) => json_response(
            StatusCode::OK,
            &json!({
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Success",
                "details": {"name": obj.name, "group": rt.group, "kind": rt.plural, "uid": obj.uid},
            }),
        ),
    })
}

/// Options of a DELETE from the query and, when there is one, the body (a `DeleteOptions`
/// object; JSON `null` counts as none). Decode errors are 400, `ValidateDeleteOptions`
/// failures 422 Invalid `DeleteOptions.meta.k8s.io`.
pub(super) fn delete_options(query: &Query, body: &[u8]) -> ApiResult<DeleteOptions> {
    // A body is the options: the query is then not read at all (apiserver v0.37.2
    // endpoints/handlers/delete.go, `DeleteResource`: `DecodeParameters` only without a body).
    let with_body = !body.iter().all(u8::is_ascii_whitespace);
    let mut o = if with_body {
        DeleteOptions::default()
    } else {
        DeleteOptions {
            grace_period_seconds: query.grace_period_seconds,
            propagation_policy: query.propagation_policy.clone(),
            orphan_dependents: query.orphan_dependents,
            ..Default::default()
        }
    };
    let mut dry_run = if with_body { Vec::new() } else { query.dry_run_values.clone() };
    if with_body {
        let decode_error = |e: String| ApiError::bad_request(format!("error decoding DeleteOptions: {e}"));
        let v: Value = serde_json::from_slice(body).map_err(|e| decode_error(e.to_string()))?;
        // The meta codecs decode the body as the kind it names, DeleteOptions by default.
        if let Some(kind) = v.get("kind").and_then(Value::as_str).filter(|k| !k.is_empty() && *k != "DeleteOptions") {
            let api_version = v.get("apiVersion").and_then(Value::as_str).unwrap_or("v1");
            return Err(ApiError::bad_request(format!(
                "no kind {kind:?} is registered for version {api_version:?} in scheme \"pkg/runtime/scheme.go:110\""
            )));
        }
        let fields = match &v {
            Value::Object(m) => m.clone(),
            Value::Null => serde_json::Map::new(),
            other => {
                return Err(decode_error(format!(
                    "json: cannot unmarshal {} into Go value of type v1.DeleteOptions",
                    go_json_type(other)
                )));
            }
        };
        let field = |name: &str| fields.get(name).filter(|x| !x.is_null());
        let wrong_type = |name: &str, want: &str, got: &Value| {
            decode_error(format!(
                "json: cannot unmarshal {} into Go struct field DeleteOptions.{name} of type {want}",
                go_json_type(got)
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
