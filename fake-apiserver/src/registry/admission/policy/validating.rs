//! `ValidatingAdmissionPolicy`, enforced as kube-apiserver's `ValidatingAdmissionPolicy`
//! plugin enforces it (it runs before the validating webhooks):
//! `apiserver/pkg/admission/plugin/policy/validating/{dispatcher,validator}.go` at
//! <https://github.com/kubernetes/kubernetes/tree/v1.37.2/staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/validating>.
//!
//! Each invocation whose `matchConditions` hold evaluates every `validation`; a false one is
//! denied with its `messageExpression`, `message` or `failed expression: …`, and the binding's
//! `validationActions` decide: `Deny` answers the request with the reason's code (`Invalid`
//! 422 by default), `Warn` adds a `Warning`, `Audit` has no audit log here to go to. An
//! evaluation error follows the policy's `failurePolicy`. Not modelled: `auditAnnotations`.

use super::{Env, Kinds, Scope};
use crate::error::{ApiError, StatusCause};
use crate::registry::State;
use crate::registry::admission::webhook::Attributes;
use cel::Value as Cel;
use serde_json::Value;
use std::sync::LazyLock;

static KINDS: LazyLock<Kinds> =
    LazyLock::new(|| Kinds::new("validatingadmissionpolicies", "validatingadmissionpolicybindings"));

/// What the policies decided about a request: the first denial, and the warnings.
#[derive(Default)]
pub(crate) struct Outcome {
    pub denied: Option<ApiError>,
    pub warnings: Vec<String>,
}

/// A decision of one binding.
struct Denial {
    message: String,
    reason: String,
    policy: String,
    binding: String,
}

/// Whether any policy is stored (so a request may need evaluating).
pub(crate) fn any(st: &State) -> bool {
    KINDS.any(st)
}

/// Enforces every policy that applies to the request described by `a` for `object`.
pub(crate) fn enforce(st: &State, a: &Attributes, object: Option<&Value>) -> Outcome {
    let mut out = Outcome::default();
    let scope = Scope::of(st, a, object);
    let (invocations, errors) = super::invocations(st, &KINDS, a, object, &scope);
    let mut denials: Vec<Denial> = errors
        .into_iter()
        .filter(|e| e.fail_closed)
        .map(|e| Denial { message: e.message, reason: String::new(), policy: e.policy_name, binding: e.binding_name })
        .collect();
    for inv in &invocations {
        let spec = &inv.policy["spec"];
        let actions: Vec<&str> = inv.binding["spec"]["validationActions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let env = Env::new(apimachinery::cel::ENV.clone(), object, a.old, &scope, inv);
        for (message, reason) in evaluate(spec, &env, super::fails_closed(spec)) {
            if actions.contains(&"Deny") {
                denials.push(Denial {
                    message: message.clone(),
                    reason,
                    policy: inv.policy_name.clone(),
                    binding: inv.binding_name.clone(),
                });
            }
            if actions.contains(&"Warn") {
                out.warnings.push(format!(
                    "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{}': {message}",
                    inv.policy_name, inv.binding_name
                ));
            }
        }
    }
    if let Some(d) = denials.into_iter().next() {
        let message = format!(
            "ValidatingAdmissionPolicy '{}' with binding '{}' denied request: {}",
            d.policy, d.binding, d.message
        );
        let mut err = ApiError::forbidden(a.group, a.resource, a.name, &message);
        let reason = if d.reason.is_empty() { "Invalid" } else { d.reason.as_str() };
        err.reason = crate::error::intern_reason(reason);
        err.code = match reason {
            "Forbidden" => 403,
            "Unauthorized" => 401,
            "RequestEntityTooLarge" => 413,
            "Invalid" => 422,
            _ => 500,
        };
        if let Some(details) = err.details.as_mut() {
            details.causes.push(StatusCause::field("", "", message));
        }
        out.denied = Some(err);
    }
    out
}

/// The match conditions, then the validations, of a policy: the denials as
/// `(message, reason)`.
fn evaluate(spec: &Value, env: &Env, fail_closed: bool) -> Vec<(String, String)> {
    match env.conditions_hold(spec) {
        Ok(true) => {}
        Ok(false) => return Vec::new(),
        Err(e) => return if fail_closed { vec![(e, String::new())] } else { Vec::new() },
    }
    let mut out = Vec::new();
    for v in spec["validations"].as_array().into_iter().flatten() {
        let expression = v["expression"].as_str().unwrap_or("").trim();
        match env.eval(expression) {
            Ok(Cel::Bool(true)) => {}
            Ok(Cel::Bool(false)) => {
                let from_expression = v["messageExpression"].as_str().and_then(|e| match env.eval(e) {
                    Ok(Cel::String(s)) if !s.trim().is_empty() && !s.contains('\n') => Some(s.trim().to_string()),
                    _ => None,
                });
                let message = from_expression
                    .or_else(|| v["message"].as_str().map(str::trim).filter(|m| !m.is_empty()).map(str::to_string))
                    .unwrap_or_else(|| format!("failed expression: {expression}"));
                out.push((message, v["reason"].as_str().unwrap_or("Invalid").to_string()));
            }
            Ok(other) if fail_closed => out.push((
                format!("expression '{expression}' resulted in error: no such overload: {other:?}"),
                String::new(),
            )),
            Err(e) if fail_closed => {
                out.push((format!("expression '{expression}' resulted in error: {e}"), String::new()))
            }
            _ => {}
        }
    }
    out
}
