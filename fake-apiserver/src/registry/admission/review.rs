//! `AdmissionReview` v1 both ways: the request kube-apiserver sends
//! (`webhook/request/admissionreview.go`, `CreateV1AdmissionReview`) and the checks it makes on
//! the answer (`VerifyAdmissionResponse`), and the `Status` a denial becomes
//! (`webhook/errors/statuserror.go`, `ToStatusErr`), at
//! <https://github.com/kubernetes/kubernetes/tree/v1.37.2/staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook>.

use super::webhook::{Attributes, Operation};
use crate::error::{ApiError, StatusCause, StatusDetails};
use serde_json::{Value, json};

/// What a webhook answered.
#[derive(Debug, Default)]
pub(crate) struct Answer {
    pub allowed: bool,
    /// `response.status`, when given.
    pub result: Value,
    /// The JSON patch operations of a mutating webhook.
    pub patch: Vec<Value>,
    pub warnings: Vec<String>,
}

/// The `request` of an `AdmissionReview` for `object` (the object after earlier mutations).
pub(crate) fn request(uid: &str, a: &Attributes, object: Option<&Value>) -> Value {
    let kind = json!({"group": a.group, "version": a.version, "kind": a.kind});
    let resource = json!({"group": a.group, "version": a.version, "resource": a.resource});
    let options_kind = match a.operation {
        Operation::Create => "CreateOptions",
        Operation::Update => "UpdateOptions",
        Operation::Delete => "DeleteOptions",
    };
    let mut options = json!({"kind": options_kind, "apiVersion": "meta.k8s.io/v1"});
    if a.dry_run {
        options["dryRun"] = json!(["All"]);
    }
    if let Some(m) = a.field_manager.filter(|_| a.operation != Operation::Delete) {
        options["fieldManager"] = json!(m);
    }
    let user = match a.user {
        Some(u) => {
            let mut info = json!({"username": u.name});
            if !u.uid.is_empty() {
                info["uid"] = json!(u.uid);
            }
            if !u.groups.is_empty() {
                info["groups"] = json!(u.groups);
            }
            if !u.extra.is_empty() {
                info["extra"] = json!(u.extra);
            }
            info
        }
        // The server's own controllers write as the loopback client.
        None => json!({"username": "system:apiserver", "groups": ["system:authenticated", "system:masters"]}),
    };
    let mut req = json!({
        "uid": uid,
        "kind": kind,
        "resource": resource,
        "requestKind": kind,
        "requestResource": resource,
        "operation": a.operation.as_str(),
        "userInfo": user,
        "object": object.cloned().unwrap_or(Value::Null),
        "oldObject": a.old.cloned().unwrap_or(Value::Null),
        "dryRun": a.dry_run,
        "options": options,
    });
    if !a.subresource.is_empty() {
        req["subResource"] = json!(a.subresource);
        req["requestSubResource"] = json!(a.subresource);
    }
    if !a.name.is_empty() {
        req["name"] = json!(a.name);
    }
    // A namespace's own requests carry its name as the namespace only in the attributes.
    if !a.namespace.is_empty() && a.resource != "namespaces" {
        req["namespace"] = json!(a.namespace);
    }
    req
}

/// `VerifyAdmissionResponse` for an `admission.k8s.io/v1` review; `Err` is the reason the
/// answer is invalid.
pub(crate) fn verify(uid: &str, mutating: bool, body: &[u8]) -> Result<Answer, String> {
    let review: Value = serde_json::from_slice(body).map_err(|e| format!("unable to decode the response: {e}"))?;
    let response = review.get("response").filter(|r| r.is_object()).ok_or("webhook response was absent")?;
    let got_uid = response["uid"].as_str().unwrap_or_default();
    if got_uid != uid {
        return Err(format!("expected response.uid={uid:?}, got {got_uid:?}"));
    }
    let (api_version, kind) = (review["apiVersion"].as_str().unwrap_or(""), review["kind"].as_str().unwrap_or(""));
    if api_version != "admission.k8s.io/v1" || kind != "AdmissionReview" {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        return Err(format!(
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {group}/{version}, Kind={kind}"
        ));
    }
    let patch = response["patch"].as_str().unwrap_or("");
    let patch_type = response.get("patchType").and_then(Value::as_str);
    let mut ops = Vec::new();
    if mutating {
        match (patch.is_empty(), patch_type) {
            (false, None) => return Err("webhook returned response.patch but not response.patchType".into()),
            (true, Some(_)) => return Err("webhook returned response.patchType but not response.patch".into()),
            (_, Some("")) => return Err("webhook returned invalid response.patchType of \"\"".into()),
            (false, Some(t)) if t != "JSONPatch" => return Err(format!("unsupported patch type {t:?}")),
            _ => {}
        }
        if !patch.is_empty() {
            let bytes = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, patch)
                .map_err(|e| format!("unable to decode the response: {e}"))?;
            let decoded: Value = serde_json::from_slice(&bytes)
                .map_err(|e| format!("received undecodable patch in webhook response: {e}"))?;
            ops = decoded.as_array().cloned().ok_or("received undecodable patch in webhook response: not a list")?;
        }
    } else if !patch.is_empty() {
        return Err("validating webhook may not return response.patch".into());
    } else if patch_type.is_some() {
        return Err("validating webhook may not return response.patchType".into());
    }
    Ok(Answer {
        allowed: response["allowed"].as_bool().unwrap_or(false),
        result: response["status"].clone(),
        patch: ops,
        warnings: response["warnings"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
    })
}

/// `ToStatusErr`: the denial as the client sees it. The code is at least 400, the message
/// starts with `admission webhook "<name>" denied the request`, reason and details are kept.
pub(crate) fn denial(webhook: &str, result: &Value) -> ApiError {
    let denied_by = format!("admission webhook \"{webhook}\" denied the request");
    let message = result["message"].as_str().unwrap_or("");
    let reason = result["reason"].as_str().unwrap_or("");
    let message = match (message.is_empty(), reason.is_empty()) {
        (false, _) => format!("{denied_by}: {message}"),
        (true, false) => format!("{denied_by}: {reason}"),
        (true, true) => format!("{denied_by} without explanation"),
    };
    let code = result["code"].as_u64().and_then(|c| u16::try_from(c).ok()).filter(|c| *c >= 400).unwrap_or(400);
    let d = &result["details"];
    let details = d.is_object().then(|| {
        let s = |k: &str| d[k].as_str().unwrap_or_default().to_string();
        Box::new(StatusDetails {
            name: s("name"),
            group: s("group"),
            kind: s("kind"),
            causes: d["causes"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| {
                    let s = |k: &str| c[k].as_str().unwrap_or_default().to_string();
                    StatusCause::field(s("reason"), s("field"), s("message"))
                })
                .collect(),
            retry_after_seconds: d["retryAfterSeconds"].as_u64().and_then(|s| u32::try_from(s).ok()),
        })
    });
    ApiError { code, reason: crate::error::intern_reason(reason), message, details }
}

/// A failure to call a webhook, failing closed: kube-apiserver's `NewInternalError` of
/// `failed calling webhook "<name>": <why>`.
pub(crate) fn call_failed(webhook: &str, why: &str) -> ApiError {
    let err = format!("failed calling webhook \"{webhook}\": {why}");
    ApiError {
        code: 500,
        reason: "InternalError",
        message: format!("Internal error occurred: {err}"),
        details: Some(Box::new(StatusDetails { causes: vec![StatusCause::field("", "", err)], ..Default::default() })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(s: &str) -> String {
        base64::Engine::encode(&base64::engine::general_purpose::STANDARD, s)
    }

    #[test]
    fn answers_are_checked_as_kube_apiserver_checks_them() {
        let ok = |r: Value| json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": r});
        let body = |v: Value| serde_json::to_vec(&v).unwrap();
        let a = verify("u1", true, &body(ok(json!({"uid": "u1", "allowed": true})))).unwrap();
        assert!(a.allowed && a.patch.is_empty());
        let err = verify("u1", true, &body(ok(json!({"uid": "u2", "allowed": true})))).unwrap_err();
        assert_eq!(err, "expected response.uid=\"u1\", got \"u2\"");
        let patch = b64(r#"[{"op":"add","path":"/spec/suspend","value":true}]"#);
        let err = verify("u", true, &body(ok(json!({"uid": "u", "allowed": true, "patch": patch})))).unwrap_err();
        assert_eq!(err, "webhook returned response.patch but not response.patchType");
        let a = verify(
            "u",
            true,
            &body(ok(json!({"uid": "u", "allowed": true, "patch": patch, "patchType": "JSONPatch"}))),
        )
        .unwrap();
        assert_eq!(a.patch.len(), 1);
        let err = verify("u", false, &body(ok(json!({"uid": "u", "allowed": true, "patch": patch})))).unwrap_err();
        assert_eq!(err, "validating webhook may not return response.patch");
        let v1beta1 =
            json!({"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "response": {"uid": "u"}});
        assert!(verify("u", false, &body(v1beta1)).unwrap_err().starts_with("expected webhook response of"));
    }

    #[test]
    fn denials_keep_code_and_reason_and_prefix_the_message() {
        let e = denial("v.kb.io", &json!({"code": 403, "reason": "Forbidden", "message": "no queue"}));
        assert_eq!(
            (e.code, e.reason, e.message.as_str()),
            (403, "Forbidden", "admission webhook \"v.kb.io\" denied the request: no queue")
        );
        let e = denial("v.kb.io", &json!({"code": 200}));
        assert_eq!(
            (e.code, e.message.as_str()),
            (400, "admission webhook \"v.kb.io\" denied the request without explanation")
        );
        let e = denial("v.kb.io", &Value::Null);
        assert_eq!((e.code, e.reason), (400, ""));
    }
}
