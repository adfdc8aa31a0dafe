//! `authorization.k8s.io/v1` self-reviews, so `kubectl auth can-i` and clients that check
//! their permissions work. There is no RBAC: every request is allowed, and the answers are
//! those of kube-apiserver with the `AlwaysAllow` authorizer.

use crate::error::{ApiError, ApiResult, StatusCause};
use crate::registry::decode::decode_object;
use crate::registry::{ResourceType, Strategy};
use apimachinery::go::quote;
use serde_json::{Value, json};

/// SelfSubjectAccessReview and SelfSubjectRulesReview: answered, never stored.
#[derive(Debug)]
pub(crate) struct ReviewStrategy;

impl Strategy for ReviewStrategy {
    fn create_only(&self) -> bool {
        true
    }

    fn answer_create(&self, rt: &ResourceType, obj: Value) -> ApiResult<Value> {
        review(rt, obj)
    }
}

/// The answer to a POST of a review: the object as sent (type meta filled in, `metadata` kept)
/// with `status` filled in. Nothing is stored, so a dry run answers the same.
fn review(rt: &ResourceType, mut obj: Value) -> ApiResult<Value> {
    decode_object(rt, &mut obj)?;
    let spec = &obj["spec"];
    let status = match rt.plural.as_str() {
        "selfsubjectaccessreviews" => {
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
            if !causes.is_empty() {
                return Err(ApiError::invalid(&rt.group, &rt.kind, "", causes));
            }
            // The AlwaysAllow authorizer gives no reason.
            json!({"allowed": true})
        }
        "selfsubjectrulesreviews" => json!({
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": false,
        }),
        _ => return Err(ApiError::path_not_found()),
    };
    let o =
        obj.as_object_mut().ok_or_else(|| ApiError::bad_request("the body of the request must be a JSON object"))?;
    let meta = o.entry("metadata").or_insert_with(|| json!({}));
    if let Some(m) = meta.as_object_mut() {
        // Go serializes the zero time of an object never stored as null.
        m.entry("creationTimestamp").or_insert(Value::Null);
    }
    o.insert("status".into(), status);
    Ok(obj)
}
