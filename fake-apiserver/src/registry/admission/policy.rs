//! ValidatingAdmissionPolicy and its bindings, enforced as kube-apiserver's
//! `ValidatingAdmissionPolicy` plugin enforces them (it runs before the validating webhooks):
//! `apiserver/pkg/admission/plugin/policy/validating/{dispatcher,validator}.go` and
//! `policy/matching/matching.go` at
//! <https://github.com/kubernetes/kubernetes/tree/v1.37.2/staging/src/k8s.io/apiserver/pkg/admission/plugin/policy>.
//!
//! A policy applies when its `matchConstraints` match the request (namespace and object
//! selectors, `resourceRules` with `resourceNames`, minus `excludeResourceRules`), a binding
//! names it and its own `matchResources` match (or it has none), and every `matchCondition`
//! holds. Each `validation` is then evaluated with `object`, `oldObject`, `request`,
//! `params` (the binding's `paramRef`: by name, or every object its selector picks),
//! `namespaceObject` and `variables`; a false one is denied with its `messageExpression`,
//! `message` or `failed expression: …`, and the binding's `validationActions` decide: `Deny`
//! answers the request with the reason's code (`Invalid` 422 by default), `Warn` adds a
//! `Warning`, `Audit` has no audit log here to go to. An evaluation error follows the
//! policy's `failurePolicy`. Not modelled: the `authorizer` variable, type checking,
//! `auditAnnotations`, cost limits.

use super::webhook::{self, Attributes, Rule};
use crate::error::{ApiError, StatusCause};
use crate::registry::State;
use crate::registry::apps::workload::selector_matches;
use crate::storage::StorageKey;
use cel::objects::{Key, Map as CelMap};
use cel::{Context, Value as Cel};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

static POLICIES: LazyLock<StorageKey> =
    LazyLock::new(|| StorageKey::new("admissionregistration.k8s.io", "validatingadmissionpolicies"));
static BINDINGS: LazyLock<StorageKey> =
    LazyLock::new(|| StorageKey::new("admissionregistration.k8s.io", "validatingadmissionpolicybindings"));

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
    binding: Option<String>,
}

/// Whether any policy is stored (so a request may need evaluating).
pub(crate) fn any(st: &State) -> bool {
    st.store.collection(&POLICIES).is_some_and(|c| !c.is_empty())
}

/// Enforces every policy that applies to the request described by `a` for `object`.
pub(crate) fn enforce(st: &State, a: &Attributes, object: Option<&Value>) -> Outcome {
    let mut out = Outcome::default();
    let Some(policies) = st.store.collection(&POLICIES).filter(|c| !c.is_empty()) else { return out };
    let bindings: Vec<Arc<Value>> =
        st.store.collection(&BINDINGS).into_iter().flat_map(|c| c.values()).map(|b| b.shared_value()).collect();
    if bindings.is_empty() {
        return out;
    }
    let request = super::review::request("", a, object);
    let request = &request;
    let namespace = (!a.namespace.is_empty() && a.resource != "namespaces")
        .then(|| st.store.get(crate::registry::namespaces_key(), "", a.namespace))
        .flatten()
        .map(|n| n.shared_value());
    let ns_labels = namespace.as_ref().map(|n| n["metadata"]["labels"].clone());
    let mut denials: Vec<Denial> = Vec::new();
    for policy in policies.values() {
        let policy = policy.shared_value();
        let name = policy["metadata"]["name"].as_str().unwrap_or_default().to_string();
        let spec = &policy["spec"];
        let fail_closed = spec["failurePolicy"].as_str() != Some("Ignore");
        if !resources_match(&spec["matchConstraints"], a, object, ns_labels.as_ref(), false) {
            continue;
        }
        for binding in bindings.iter().filter(|b| b["spec"]["policyName"].as_str() == Some(name.as_str())) {
            let bspec = &binding["spec"];
            if bspec.get("matchResources").is_some_and(|m| m.is_object())
                && !resources_match(&bspec["matchResources"], a, object, ns_labels.as_ref(), true)
            {
                continue;
            }
            let binding_name = binding["metadata"]["name"].as_str().unwrap_or_default().to_string();
            let deny = |message: String, reason: &str| Denial {
                message,
                reason: reason.to_string(),
                policy: name.clone(),
                binding: Some(binding_name.clone()),
            };
            let params = match params(st, spec, bspec, a.namespace) {
                Ok(p) => p,
                Err(e) if fail_closed => {
                    denials.push(deny(format!("failed to configure binding: {e}"), ""));
                    continue;
                }
                Err(_) => continue,
            };
            let actions: Vec<&str> =
                bspec["validationActions"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
            for p in &params {
                let mut env = Env::new(object, a.old, request, p.as_ref(), namespace.as_deref());
                for (message, reason) in evaluate(spec, &mut env, fail_closed) {
                    if actions.contains(&"Deny") {
                        denials.push(deny(message.clone(), &reason));
                    }
                    if actions.contains(&"Warn") {
                        out.warnings.push(format!(
                            "Validation failed for ValidatingAdmissionPolicy '{name}' with binding '{binding_name}': {message}"
                        ));
                    }
                }
            }
        }
    }
    if let Some(d) = denials.into_iter().next() {
        let message = match &d.binding {
            Some(b) => {
                format!("ValidatingAdmissionPolicy '{}' with binding '{b}' denied request: {}", d.policy, d.message)
            }
            None => format!("ValidatingAdmissionPolicy '{}' denied request: {}", d.policy, d.message),
        };
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

/// `matching.Matcher`: selectors, then the rules (and their resource names) minus the
/// excluded ones. A binding's `matchResources` without rules matches every resource.
fn resources_match(m: &Value, a: &Attributes, object: Option<&Value>, labels: Option<&Value>, binding: bool) -> bool {
    if !m.is_object() {
        return false;
    }
    let labels = webhook::namespace_labels_for(a, object, labels);
    if !webhook::namespace_selector_matches(&m["namespaceSelector"], a, labels)
        || !webhook::object_selector_matches(&m["objectSelector"], object, a.old)
    {
        return false;
    }
    let applies = |rule: &Value| {
        let names = rule["resourceNames"].as_array().map(Vec::as_slice).unwrap_or_default();
        (names.is_empty() || names.iter().any(|n| n.as_str() == Some(a.name))) && Rule::parse(rule).matches(a)
    };
    let rules = m["resourceRules"].as_array().map(Vec::as_slice).unwrap_or_default();
    let included = (binding && rules.is_empty()) || rules.iter().any(applies);
    let excluded = m["excludeResourceRules"].as_array().into_iter().flatten().any(applies);
    included && !excluded
}

/// The params a binding evaluates its policy with: `[None]` without a `paramKind`, else the
/// objects its `paramRef` names (its namespace, or the request's for a namespaced kind).
fn params(st: &State, spec: &Value, bspec: &Value, request_ns: &str) -> Result<Vec<Option<Value>>, String> {
    let Some(kind) = spec.get("paramKind").filter(|k| k.is_object()) else { return Ok(vec![None]) };
    let api_version = kind["apiVersion"].as_str().unwrap_or_default();
    let kind_name = kind["kind"].as_str().unwrap_or_default();
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let rt = st
        .registry
        .by_kind(group, version, kind_name)
        .ok_or_else(|| format!("failed to find resource referenced by paramKind: '{api_version}, Kind={kind_name}'"))?;
    let pref = &bspec["paramRef"];
    if !pref.is_object() {
        return Err("paramKind kind is set but paramRef is not".into());
    }
    let ns = match pref["namespace"].as_str().filter(|n| !n.is_empty()) {
        Some(n) => n.to_string(),
        None if rt.namespaced => request_ns.to_string(),
        None => String::new(),
    };
    let found: Vec<Option<Value>> = match pref["name"].as_str().filter(|n| !n.is_empty()) {
        Some(name) => st
            .store
            .get(rt.storage_key(), &ns, name)
            .map(|o| crate::registry::store::served_value(&rt, &o))
            .into_iter()
            .map(Some)
            .collect(),
        None => st
            .store
            .collection(rt.storage_key())
            .into_iter()
            .flat_map(|c| c.values())
            .filter(|o| !rt.namespaced || o.shared_value()["metadata"]["namespace"].as_str() == Some(ns.as_str()))
            .map(|o| crate::registry::store::served_value(&rt, o))
            .filter(|o| selector_matches(&pref["selector"], o["metadata"].get("labels")))
            .map(Some)
            .collect(),
    };
    if found.is_empty() && pref["parameterNotFoundAction"].as_str() == Some("Deny") {
        return Err("no params found for policy binding with `Deny` parameterNotFoundAction".into());
    }
    Ok(found)
}

/// The CEL variables of one evaluation.
struct Env {
    ctx: Context<'static, 'static>,
}

impl Env {
    fn new(
        object: Option<&Value>,
        old: Option<&Value>,
        request: &Value,
        params: Option<&Value>,
        ns: Option<&Value>,
    ) -> Env {
        let mut ctx = Context::with_env(apimachinery::cel::ENV.clone());
        let null = Value::Null;
        for (name, v) in [
            ("object", object.unwrap_or(&null)),
            ("oldObject", old.unwrap_or(&null)),
            ("request", request),
            ("params", params.unwrap_or(&null)),
            ("namespaceObject", ns.unwrap_or(&null)),
        ] {
            let _ = ctx.add_variable(name, v);
        }
        ctx.add_variable_from_value("variables", Cel::Map(CelMap { map: Arc::new(HashMap::new()) }));
        Env { ctx }
    }

    fn eval(&self, expression: &str) -> Result<Cel, String> {
        let program = apimachinery::cel::ENV.compile(expression).map_err(|e| format!("compilation failed: {e}"))?;
        program.execute(&self.ctx).map_err(|e| e.to_string())
    }
}

/// The match conditions, then the validations, of a policy: the denials as
/// `(message, reason)`.
fn evaluate(spec: &Value, env: &mut Env, fail_closed: bool) -> Vec<(String, String)> {
    // Variables are evaluated in order, each seeing the ones before it.
    let mut vars: HashMap<Key, Cel> = HashMap::new();
    for v in spec["variables"].as_array().into_iter().flatten() {
        let (Some(name), Some(expr)) = (v["name"].as_str(), v["expression"].as_str()) else { continue };
        if let Ok(value) = env.eval(expr) {
            vars.insert(Key::String(Arc::new(name.to_string())), value);
            env.ctx.add_variable_from_value("variables", Cel::Map(CelMap { map: Arc::new(vars.clone()) }));
        }
    }
    let mut errors = Vec::new();
    for c in spec["matchConditions"].as_array().into_iter().flatten() {
        match env.eval(c["expression"].as_str().unwrap_or("")) {
            Ok(Cel::Bool(false)) => return Vec::new(),
            Ok(Cel::Bool(true)) => {}
            Ok(other) => errors.push(format!(
                "expression '{}' resulted in error: no such overload: {other:?}",
                c["name"].as_str().unwrap_or("")
            )),
            Err(e) => errors.push(format!("expression '{}' resulted in error: {e}", c["name"].as_str().unwrap_or(""))),
        }
    }
    if !errors.is_empty() {
        return if fail_closed { vec![(errors.join(", "), String::new())] } else { Vec::new() };
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
