//! Client-visible failures as Kubernetes `Status` objects.
//!
//! Every non-2xx answer of the server goes through [`ApiError`], so the code, reason, message
//! and details match what kube-apiserver sends for the same failure.

use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use serde_json::{Value, json};

/// One `details.causes[]` entry of a `Status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusCause {
    /// Machine-readable reason, e.g. `FieldValueRequired`.
    pub reason: String,
    /// Human-readable message, e.g. `Required value`.
    pub message: String,
    /// Dotted path of the field, e.g. `spec.replicas`; empty when the cause is not a field.
    pub field: String,
}

impl StatusCause {
    /// A cause about one field.
    pub fn field(reason: impl Into<String>, field: impl Into<String>, message: impl Into<String>) -> Self {
        Self { reason: reason.into(), message: message.into(), field: field.into() }
    }
}

/// `details` of a `Status`: which object the failure is about.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatusDetails {
    pub name: String,
    pub group: String,
    pub kind: String,
    pub causes: Vec<StatusCause>,
    pub retry_after_seconds: Option<u32>,
}

/// A failure the server reports to a client as a `Status` object.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{code} {reason}: {message}")]
pub struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    pub details: Option<Box<StatusDetails>>,
}

/// How a resource is named in error messages: `pods` or `rayclusters.ray.io`.
pub(crate) fn qualified(group: &str, resource: &str) -> String {
    if group.is_empty() { resource.to_string() } else { format!("{resource}.{group}") }
}

fn details(group: &str, kind: &str, name: &str) -> Option<Box<StatusDetails>> {
    Some(Box::new(StatusDetails { name: name.into(), group: group.into(), kind: kind.into(), ..Default::default() }))
}

impl ApiError {
    fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Self { code, reason, message: message.into(), details: None }
    }

    /// 400 BadRequest.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 401 Unauthorized.
    pub fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized")
    }

    /// 403 Forbidden on an object or collection.
    pub fn forbidden(group: &str, resource: &str, name: &str, why: impl std::fmt::Display) -> Self {
        let target = qualified(group, resource);
        let message = if target.is_empty() {
            format!("forbidden: {why}")
        } else if name.is_empty() {
            format!("{target} is forbidden: {why}")
        } else {
            format!("{target} \"{name}\" is forbidden: {why}")
        };
        Self { details: details(group, resource, name), ..Self::new(403, "Forbidden", message) }
    }

    /// 403 from a validating webhook that denied the request (`webhookerrors.ToStatusErr`),
    /// with the webhook's own reason.
    pub fn webhook_denied(webhook: &str, message: &str) -> Self {
        Self::new(403, "Forbidden", format!("admission webhook \"{webhook}\" denied the request: {message}"))
    }

    /// 404 NotFound for an object.
    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        let message = format!("{} \"{name}\" not found", qualified(group, resource));
        Self { details: details(group, resource, name), ..Self::new(404, "NotFound", message) }
    }

    /// 404 NotFound for a URL that names no resource.
    pub fn path_not_found() -> Self {
        Self {
            details: Some(Box::default()),
            ..Self::new(404, "NotFound", "the server could not find the requested resource")
        }
    }

    /// 405 MethodNotAllowed.
    pub fn method_not_allowed() -> Self {
        Self::new(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
    }

    /// 406 NotAcceptable.
    pub fn not_acceptable(accept: &str) -> Self {
        Self::new(
            406,
            "NotAcceptable",
            format!(
                "only the following media types are accepted: application/json, application/json;as=Table (requested: {accept})"
            ),
        )
    }

    /// 409 AlreadyExists.
    pub fn already_exists(group: &str, resource: &str, name: &str) -> Self {
        let message = format!("{} \"{name}\" already exists", qualified(group, resource));
        Self { details: details(group, resource, name), ..Self::new(409, "AlreadyExists", message) }
    }

    /// 409 Conflict: optimistic concurrency failed.
    pub fn conflict(group: &str, resource: &str, name: &str) -> Self {
        Self::conflict_because(
            group,
            resource,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 409 Conflict with an explicit explanation (failed preconditions, for example).
    pub fn conflict_because(group: &str, resource: &str, name: &str, why: impl std::fmt::Display) -> Self {
        let message = format!("Operation cannot be fulfilled on {} \"{name}\": {why}", qualified(group, resource));
        Self { details: details(group, resource, name), ..Self::new(409, "Conflict", message) }
    }

    /// 409 Conflict of a server-side apply: one `FieldManagerConflict` cause per field, no
    /// object in the details (`NewApplyConflict`).
    pub fn apply_conflict(message: impl Into<String>, causes: Vec<StatusCause>) -> Self {
        let details = Some(Box::new(StatusDetails { causes, ..Default::default() }));
        Self { details, ..Self::new(409, "Conflict", message) }
    }

    /// 410 Expired: a resourceVersion or continue token fell out of the history window.
    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    /// 410 Expired for a watch or exact list from a compacted resourceVersion.
    pub fn too_old_resource_version(requested: u64, oldest: u64) -> Self {
        Self::expired(format!("too old resource version: {requested} ({oldest})"))
    }

    /// 413 RequestEntityTooLarge: the body is over the size limit.
    pub fn too_large(limit: usize) -> Self {
        Self::request_entity_too_large(format!("limit is {limit}"))
    }

    /// 413 RequestEntityTooLarge with an explanation (`errors.NewRequestEntityTooLargeError`),
    /// e.g. a JSON patch with more operations than the apiserver allows.
    pub fn request_entity_too_large(why: impl std::fmt::Display) -> Self {
        Self::new(413, "RequestEntityTooLarge", format!("Request entity too large: {why}"))
    }

    /// 415 UnsupportedMediaType. `content_type` is the Content-Type header as the client sent it,
    /// `accepted` the media types the verb takes.
    pub fn unsupported_media_type(content_type: &str, accepted: &[&str]) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format ({content_type}) - accepted media types include: {}",
                accepted.join(", ")
            ),
        )
    }

    /// 422 Invalid with field causes. `kind` is usually the Kind (`Pod`, `RayCluster`); the
    /// apiserver also uses options kinds (`ListOptions` in `meta.k8s.io`) and, in a few places,
    /// the resource plural.
    pub fn invalid(group: &str, kind: &str, name: &str, causes: Vec<StatusCause>) -> Self {
        let summary: Vec<String> = causes
            .iter()
            .map(|c| if c.field.is_empty() { c.message.clone() } else { format!("{}: {}", c.field, c.message) })
            .collect();
        let listed = match summary.as_slice() {
            [one] => one.clone(),
            many => format!("[{}]", many.join(", ")),
        };
        let message = format!("{} \"{name}\" is invalid: {listed}", qualified(group, kind));
        Self {
            details: Some(Box::new(StatusDetails {
                name: name.into(),
                group: group.into(),
                kind: kind.into(),
                causes,
                ..Default::default()
            })),
            ..Self::new(422, "Invalid", message)
        }
    }

    /// 422 for a request that cannot be applied, without field causes (failed JSON patch test).
    pub fn unprocessable(message: impl Into<String>) -> Self {
        Self::new(422, "Invalid", message)
    }

    /// 429 TooManyRequests.
    pub fn too_many_requests(retry_after_seconds: u32) -> Self {
        Self {
            details: Some(Box::new(StatusDetails {
                retry_after_seconds: Some(retry_after_seconds),
                ..Default::default()
            })),
            ..Self::new(429, "TooManyRequests", "Too many requests, please try again later.")
        }
    }

    /// 500 InternalError.
    pub fn internal(message: impl std::fmt::Display) -> Self {
        Self {
            details: Some(Box::new(StatusDetails {
                // `errors.NewInternalError`: one cause with the message and no reason.
                causes: vec![StatusCause::field("", "", message.to_string())],
                ..Default::default()
            })),
            ..Self::new(500, "InternalError", format!("Internal error occurred: {message}"))
        }
    }

    /// 500 with only a message, as a handler's unwrapped error reaches the client.
    pub fn internal_plain(message: impl Into<String>) -> Self {
        Self::new(500, "", message)
    }

    /// 504 Timeout: a resourceVersion from the future was requested (`errors.NewTimeoutError`,
    /// which prefixes the message with `Timeout: `).
    pub fn too_large_resource_version(requested: u64, current: u64) -> Self {
        Self {
            details: Some(Box::new(StatusDetails {
                causes: vec![StatusCause::field("ResourceVersionTooLarge", "", "Too large resource version")],
                retry_after_seconds: Some(1),
                ..Default::default()
            })),
            ..Self::new(504, "Timeout", format!("Timeout: Too large resource version: {requested}, current: {current}"))
        }
    }

    /// The `Status` object as JSON.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
        });
        if self.reason.is_empty()
            && let Some(o) = status.as_object_mut()
        {
            o.remove("reason");
        }
        if let Some(d) = &self.details {
            let mut det = serde_json::Map::new();
            if !d.name.is_empty() {
                det.insert("name".into(), json!(d.name));
            }
            if !d.group.is_empty() {
                det.insert("group".into(), json!(d.group));
            }
            if !d.kind.is_empty() {
                det.insert("kind".into(), json!(d.kind));
            }
            if !d.causes.is_empty() {
                let causes: Vec<Value> = d
                    .causes
                    .iter()
                    .map(|c| {
                        let mut m = serde_json::Map::new();
                        if !c.reason.is_empty() {
                            m.insert("reason".into(), json!(c.reason));
                        }
                        m.insert("message".into(), json!(c.message));
                        if !c.field.is_empty() {
                            m.insert("field".into(), json!(c.field));
                        }
                        Value::Object(m)
                    })
                    .collect();
                det.insert("causes".into(), Value::Array(causes));
            }
            if let Some(s) = d.retry_after_seconds {
                det.insert("retryAfterSeconds".into(), json!(s));
            }
            status["details"] = Value::Object(det);
        }
        status["code"] = json!(self.code);
        status
    }

    /// The HTTP status code.
    pub fn status_code(&self) -> StatusCode {
        StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::to_vec(&self.to_status()).unwrap_or_default();
        let mut resp = (self.status_code(), body).into_response();
        resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if let Some(v) = self
            .details
            .as_ref()
            .and_then(|d| d.retry_after_seconds)
            .and_then(|secs| HeaderValue::from_str(&secs.to_string()).ok())
        {
            resp.headers_mut().insert(header::RETRY_AFTER, v);
        }
        resp
    }
}

/// A `Status` reason as a `&'static str`: the well-known ones as they are, any other (a
/// webhook's own) interned once, so reasons from outside cannot grow memory without bound
/// beyond one copy each.
pub(crate) fn intern_reason(reason: &str) -> &'static str {
    const KNOWN: &[&str] = &[
        "",
        "BadRequest",
        "Unauthorized",
        "Forbidden",
        "NotFound",
        "AlreadyExists",
        "Conflict",
        "Gone",
        "Invalid",
        "ServerTimeout",
        "Timeout",
        "TooManyRequests",
        "MethodNotAllowed",
        "NotAcceptable",
        "RequestEntityTooLarge",
        "UnsupportedMediaType",
        "InternalError",
        "Expired",
        "ServiceUnavailable",
    ];
    if let Some(k) = KNOWN.iter().find(|k| **k == reason) {
        return k;
    }
    static OTHERS: std::sync::LazyLock<parking_lot::Mutex<std::collections::HashSet<&'static str>>> =
        std::sync::LazyLock::new(Default::default);
    let mut others = OTHERS.lock();
    if let Some(r) = others.get(reason) {
        return r;
    }
    let leaked: &'static str = Box::leak(reason.to_string().into_boxed_str());
    others.insert(leaked);
    leaked
}

/// Result type of the request pipeline.
pub type ApiResult<T> = Result<T, ApiError>;
