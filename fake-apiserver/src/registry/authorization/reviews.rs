//! `authorization.k8s.io/v1` access reviews, answered by the server's authorizer chain (RBAC
//! when on, `AlwaysAllow` otherwise): SelfSubjectAccessReview and SelfSubjectRulesReview for
//! the requester (`kubectl auth can-i`, with `--as` through impersonation),
//! SubjectAccessReview and LocalSubjectAccessReview for any user.

use crate::error::{ApiError, ApiResult, StatusCause};
use crate::registry::decode::decode_object;
use crate::registry::rbac::authorizer::{self, Attributes, ResourceAttributes};
use crate::registry::{ResourceType, State, Strategy};
use crate::storage::UserInfo;
use apimachinery::go::quote;
use serde_json::{Value, json};

/// SelfSubjectAccessReview and SelfSubjectRulesReview: answered, never stored.
#[derive(Debug)]
pub(crate) struct ReviewStrategy;

impl Strategy for ReviewStrategy {
    fn create_only(&self) -> bool {
        true
    }

    fn answer_create(
        &self,
        rt: &ResourceType,
        obj: Value,
        st: &State,
        user: &UserInfo,
        namespace: &str,
        _now: &str,
    ) -> ApiResult<Value> {
        review(rt, obj, st, user, namespace)
    }
}

/// The answer to a POST of a review: the object as sent (type meta filled in, `metadata` kept)
/// with `status` filled in. Nothing is stored, so a dry run answers the same.
fn review(rt: &ResourceType, mut obj: Value, st: &State, user: &UserInfo, namespace: &str) -> ApiResult<Value> {
    decode_object(rt, &mut obj)?;
    let spec = &obj["spec"];
    let status = match rt.plural.as_str() {
        "selfsubjectaccessreviews" | "subjectaccessreviews" | "localsubjectaccessreviews" => {
            let has = |f: &str| spec.get(f).is_some_and(|v| !v.is_null());
            let mut causes = Vec::new();
            if has("resourceAttributes") && has("nonResourceAttributes") {
                causes.push(StatusCause::field(
                    "FieldValueInvalid",
                    "spec.nonResourceAttributes",
                    format!(
                        "Invalid value: {}: cannot be specified in combination with resourceAttributes",
                        quote(&spec["nonResourceAttributes"].to_string())
                    ),
                ));
            }
            if !has("resourceAttributes") && !has("nonResourceAttributes") {
                causes.push(StatusCause::field(
                    "FieldValueInvalid",
                    "spec.resourceAttributes",
                    "Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified",
                ));
            }
            let subject = match rt.plural.as_str() {
                "selfsubjectaccessreviews" => user.clone(),
                _ => subject_of(spec, &mut causes),
            };
            if rt.plural == "localsubjectaccessreviews" {
                if has("nonResourceAttributes") {
                    causes.push(StatusCause::field(
                        "FieldValueInvalid",
                        "spec.nonResourceAttributes",
                        format!(
                            "Invalid value: {}: disallowed on this kind of request",
                            quote(&spec["nonResourceAttributes"].to_string())
                        ),
                    ));
                }
                let ns = spec["resourceAttributes"]["namespace"].as_str().unwrap_or_default();
                if has("resourceAttributes") && ns != namespace {
                    causes.push(StatusCause::field(
                        "FieldValueInvalid",
                        "spec.resourceAttributes.namespace",
                        format!("Invalid value: {}: must match metadata.namespace", quote(ns)),
                    ));
                }
            }
            if !causes.is_empty() {
                return Err(ApiError::invalid(&rt.group, &rt.kind, "", causes));
            }
            let d = authorizer::authorize(st, &subject, &attributes(spec));
            let mut status = json!({"allowed": d.allowed});
            if !d.reason.is_empty() {
                status["reason"] = json!(d.reason);
            }
            status
        }
        "selfsubjectrulesreviews" => {
            let ns = spec["namespace"].as_str().unwrap_or_default();
            authorizer::rules_review(st, user, ns)
        }
        _ => return Err(ApiError::path_not_found()),
    };
    answered(obj, status)
}

/// A review as answered: the object as sent with `status` filled in, and the null
/// `creationTimestamp` Go serializes for an object never stored.
pub(crate) fn answered(mut obj: Value, status: Value) -> ApiResult<Value> {
    let o =
        obj.as_object_mut().ok_or_else(|| ApiError::bad_request("the body of the request must be a JSON object"))?;
    let meta = o.entry("metadata").or_insert_with(|| json!({}));
    if let Some(m) = meta.as_object_mut() {
        m.entry("creationTimestamp").or_insert(Value::Null);
    }
    o.insert("status".into(), status);
    Ok(obj)
}

/// The subject of a SubjectAccessReview: its user, groups, uid and extra, as given (no
/// implied groups); a user or a group is required.
fn subject_of(spec: &Value, causes: &mut Vec<StatusCause>) -> UserInfo {
    let name = spec["user"].as_str().unwrap_or_default().to_string();
    let groups: Vec<String> =
        spec["groups"].as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect();
    if name.is_empty() && groups.is_empty() {
        causes.push(StatusCause::field(
            "FieldValueInvalid",
            "spec.user",
            "Invalid value: \"\": at least one of user or group must be specified",
        ));
    }
    let extra = spec["extra"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    let values = v.as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_string);
                    (k.clone(), values.collect())
                })
                .collect()
        })
        .unwrap_or_default();
    UserInfo { name, uid: spec["uid"].as_str().unwrap_or_default().to_string(), groups, extra }
}

/// The request a review's spec describes.
fn attributes(spec: &Value) -> Attributes {
    let s = |v: &Value, k: &str| v[k].as_str().unwrap_or_default().to_string();
    let r = &spec["resourceAttributes"];
    if r.is_object() {
        return Attributes {
            verb: s(r, "verb"),
            resource: Some(ResourceAttributes {
                group: s(r, "group"),
                resource: s(r, "resource"),
                subresource: s(r, "subresource"),
                namespace: s(r, "namespace"),
                name: s(r, "name"),
            }),
            path: String::new(),
        };
    }
    let n = &spec["nonResourceAttributes"];
    Attributes { verb: s(n, "verb"), resource: None, path: s(n, "path") }
}
