//! Admission policies: `ValidatingAdmissionPolicy` and `MutatingAdmissionPolicy` with their
//! bindings, as kube-apiserver's policy plugins find and evaluate them
//! (`apiserver/pkg/admission/plugin/policy/{generic,matching}` at
//! <https://github.com/kubernetes/kubernetes/tree/v1.37.2/staging/src/k8s.io/apiserver/pkg/admission/plugin/policy>).
//!
//! Both plugins share what is here: a policy applies when its `matchConstraints` match the
//! request (namespace and object selectors, `resourceRules` with `resourceNames`, minus
//! `excludeResourceRules`), a binding names it and its own `matchResources` match (or it has
//! none); the binding's `paramRef` gives the params (by name, or every object its selector
//! picks), and each `(policy, binding, param)` is one invocation, evaluated with `object`,
//! `oldObject`, `request`, `params`, `namespaceObject` and `variables`.
//! Not modelled: the `authorizer` variable, type checking, cost limits.

pub(crate) mod mutating;
pub(crate) mod validating;

use super::webhook::{self, Attributes, Rule};
use crate::registry::State;
use crate::registry::apps::workload::selector_matches;
use crate::storage::StorageKey;
use cel::objects::{Key, Map as CelMap};
use cel::{Context, Value as Cel};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// Where one plugin's policies and bindings are stored.
pub(super) struct Kinds {
    policies: StorageKey,
    bindings: StorageKey,
}

impl Kinds {
    fn new(policies: &str, bindings: &str) -> Kinds {
        Kinds {
            policies: StorageKey::new("admissionregistration.k8s.io", policies),
            bindings: StorageKey::new("admissionregistration.k8s.io", bindings),
        }
    }

    /// Whether any policy of this plugin is stored.
    fn any(&self, st: &State) -> bool {
        st.store.collection(&self.policies).is_some_and(|c| !c.is_empty())
    }
}

/// One `(policy, binding, param)` to evaluate.
pub(super) struct Invocation {
    pub policy: Arc<Value>,
    pub policy_name: String,
    pub binding_name: String,
    pub binding: Arc<Value>,
    pub param: Option<Value>,
}

/// A binding that could not be configured (its params), with its policy's failure policy.
pub(super) struct ConfigError {
    pub policy_name: String,
    pub binding_name: String,
    pub message: String,
    pub fail_closed: bool,
}

/// What a request's policies are evaluated against besides the object.
pub(super) struct Scope {
    /// The request as `request` sees it.
    pub request: Value,
    /// The request's namespace (none for cluster-scoped kinds and namespaces themselves).
    pub namespace: Option<Arc<Value>>,
}

impl Scope {
    pub(super) fn of(st: &State, a: &Attributes, object: Option<&Value>) -> Scope {
        let namespace = (!a.namespace.is_empty() && a.resource != "namespaces")
            .then(|| st.store.get(crate::registry::namespaces_key(), "", a.namespace))
            .flatten()
            .map(|n| n.shared_value());
        Scope { request: super::review::request("", a, object), namespace }
    }
}

/// Every invocation of `kinds`' policies that applies to the request, in policy then binding
/// order, and the bindings that could not be configured.
pub(super) fn invocations(
    st: &State,
    kinds: &Kinds,
    a: &Attributes,
    object: Option<&Value>,
    scope: &Scope,
) -> (Vec<Invocation>, Vec<ConfigError>) {
    let (mut out, mut errors) = (Vec::new(), Vec::new());
    let Some(policies) = st.store.collection(&kinds.policies).filter(|c| !c.is_empty()) else { return (out, errors) };
    let bindings: Vec<Arc<Value>> =
        st.store.collection(&kinds.bindings).into_iter().flat_map(|c| c.values()).map(|b| b.shared_value()).collect();
    if bindings.is_empty() {
        return (out, errors);
    }
    let ns_labels = scope.namespace.as_ref().map(|n| n["metadata"]["labels"].clone());
    for policy in policies.values() {
        let policy = policy.shared_value();
        let name = policy["metadata"]["name"].as_str().unwrap_or_default().to_string();
        let spec = &policy["spec"];
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
            match params(st, spec, bspec, a.namespace) {
                Ok(params) => out.extend(params.into_iter().map(|param| Invocation {
                    policy: policy.clone(),
                    policy_name: name.clone(),
                    binding_name: binding_name.clone(),
                    binding: binding.clone(),
                    param,
                })),
                Err(e) => errors.push(ConfigError {
                    policy_name: name.clone(),
                    binding_name,
                    message: format!("failed to configure binding: {e}"),
                    fail_closed: fails_closed(spec),
                }),
            }
        }
    }
    (out, errors)
}

/// Whether a policy's errors deny the request (`failurePolicy` other than `Ignore`).
pub(super) fn fails_closed(spec: &Value) -> bool {
    spec["failurePolicy"].as_str() != Some("Ignore")
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
pub(super) struct Env {
    env: Arc<cel::Env>,
    ctx: Context<'static, 'static>,
}

impl Env {
    /// The variables of `invocation` about `object`, in the CEL environment `env`; the
    /// policy's `variables` are evaluated in order, each seeing the ones before it (one that
    /// fails is left out, and fails the expressions that use it).
    pub(super) fn new(
        env: Arc<cel::Env>,
        object: Option<&Value>,
        old: Option<&Value>,
        scope: &Scope,
        invocation: &Invocation,
    ) -> Env {
        let mut ctx = Context::with_env(env.clone());
        let null = Value::Null;
        for (name, v) in [
            ("object", object.unwrap_or(&null)),
            ("oldObject", old.unwrap_or(&null)),
            ("request", &scope.request),
            ("params", invocation.param.as_ref().unwrap_or(&null)),
            ("namespaceObject", scope.namespace.as_deref().unwrap_or(&null)),
        ] {
            let _ = ctx.add_variable(name, v);
        }
        let mut env = Env { env, ctx };
        let mut vars: HashMap<Key, Cel> = HashMap::new();
        env.set_variables(&vars);
        for v in invocation.policy["spec"]["variables"].as_array().into_iter().flatten() {
            let (Some(name), Some(expr)) = (v["name"].as_str(), v["expression"].as_str()) else { continue };
            if let Ok(value) = env.eval(expr) {
                vars.insert(Key::String(Arc::new(name.to_string())), value);
                env.set_variables(&vars);
            }
        }
        env
    }

    fn set_variables(&mut self, vars: &HashMap<Key, Cel>) {
        self.ctx.add_variable_from_value("variables", Cel::Map(CelMap { map: Arc::new(vars.clone()) }));
    }

    pub(super) fn eval(&self, expression: &str) -> Result<Cel, String> {
        let program = self.env.compile(expression).map_err(|e| format!("compilation failed: {e}"))?;
        program.execute(&self.ctx).map_err(|e| e.to_string())
    }

    /// The policy's `matchConditions`: whether all hold, or the errors of those that failed.
    pub(super) fn conditions_hold(&self, spec: &Value) -> Result<bool, String> {
        let mut errors = Vec::new();
        for c in spec["matchConditions"].as_array().into_iter().flatten() {
            let name = c["name"].as_str().unwrap_or("");
            match self.eval(c["expression"].as_str().unwrap_or("")) {
                Ok(Cel::Bool(false)) => return Ok(false),
                Ok(Cel::Bool(true)) => {}
                Ok(other) => errors.push(format!("expression '{name}' resulted in error: no such overload: {other:?}")),
                Err(e) => errors.push(format!("expression '{name}' resulted in error: {e}")),
            }
        }
        if errors.is_empty() { Ok(true) } else { Err(errors.join(", ")) }
    }
}
