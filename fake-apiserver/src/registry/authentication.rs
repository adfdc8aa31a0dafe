//! `authentication.k8s.io/v1` reviews, answered and never stored: a TokenReview authenticates
//! its token with the server's own token authenticator
//! (`pkg/registry/authentication/tokenreview/storage.go` `REST.Create`, v1.37.2), a
//! SelfSubjectReview names the requester
//! (`pkg/registry/authentication/selfsubjectreview/rest.go` `REST.Create`).

use crate::error::{ApiError, ApiResult};
use crate::registry::authorization::reviews::answered;
use crate::registry::decode::decode_object;
use crate::registry::{ResourceType, State, Strategy};
use crate::storage::UserInfo;
use serde_json::{Map, Value, json};

/// TokenReview and SelfSubjectReview.
#[derive(Debug)]
pub(crate) struct AuthenticationReviewStrategy;

impl Strategy for AuthenticationReviewStrategy {
    fn create_only(&self) -> bool {
        true
    }

    fn answer_create(
        &self,
        rt: &ResourceType,
        mut obj: Value,
        st: &State,
        user: &UserInfo,
        namespace: &str,
        now: &str,
    ) -> ApiResult<Value> {
        decode_object(rt, &mut obj)?;
        match rt.plural.as_str() {
            "tokenreviews" => token_review(obj, st, namespace),
            "selfsubjectreviews" => Ok(json!({
                "kind": rt.kind,
                "apiVersion": rt.api_version(),
                "metadata": {"creationTimestamp": now},
                "status": {"userInfo": user_info(user)},
            })),
            _ => Err(ApiError::path_not_found()),
        }
    }
}

/// The review with its status: who the token is, or `authenticated` left out (Go's
/// `omitempty`) and an empty `user` when no one.
fn token_review(obj: Value, st: &State, namespace: &str) -> ApiResult<Value> {
    if !namespace.is_empty() {
        return Err(ApiError::bad_request(format!("namespace is not allowed on this type: {namespace}")));
    }
    let token = obj.pointer("/spec/token").and_then(Value::as_str).unwrap_or_default().to_string();
    if token.is_empty() {
        return Err(ApiError::bad_request("token is required for TokenReview in authentication"));
    }
    let mut status = json!({"user": {}});
    if let Some(user) = st.tokens.read().get(&token) {
        status = json!({"authenticated": true, "user": user_info(user)});
        if let Some(auds) = obj.pointer("/spec/audiences").filter(|a| a.as_array().is_some_and(|a| !a.is_empty())) {
            status["audiences"] = auds.clone();
        }
    }
    answered(obj, status)
}

/// `authentication/v1.UserInfo` of `user`, its empty fields left out as Go's `omitempty` does.
fn user_info(user: &UserInfo) -> Value {
    let mut out = Map::new();
    if !user.name.is_empty() {
        out.insert("username".into(), json!(user.name));
    }
    if !user.uid.is_empty() {
        out.insert("uid".into(), json!(user.uid));
    }
    if !user.groups.is_empty() {
        out.insert("groups".into(), json!(user.groups));
    }
    if !user.extra.is_empty() {
        out.insert("extra".into(), json!(user.extra));
    }
    Value::Object(out)
}
