//! `MutatingAdmissionPolicy`, applied as kube-apiserver's `MutatingAdmissionPolicy` plugin
//! applies it (it runs before the mutating webhooks, on creates and updates):
//! `apiserver/pkg/admission/plugin/policy/mutating/{dispatcher,reinvocationcontext}.go` and
//! `patch/{smd,json_patch}.go` at
//! <https://github.com/kubernetes/kubernetes/tree/v1.37.2/staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/mutating>.
//!
//! Each invocation whose `matchConditions` hold runs its `mutations` in order, each seeing the
//! object the one before left: an `ApplyConfiguration` expression builds an `Object{…}` that is
//! merged into the object as server-side apply merges (without owning anything; atomic maps and
//! lists may not be set), a `JSONPatch` expression builds `JSONPatch{…}` operations (a failed
//! `test` leaves the object as it was). Errors are collected and, unless the policy's
//! `failurePolicy` is `Ignore`, deny the request: 403 with reason `Invalid` and the first
//! error as the message, `policy '<p>' with binding '<b>' denied request: <error>`
//! (`generic/policy_dispatcher.go`). A policy with `reinvocationPolicy: IfNeeded` runs once more
//! when a later policy or a mutating webhook changed the object.

use super::{Env, Invocation, Kinds, Scope};
use crate::error::{ApiError, ApiResult, StatusCause};
use crate::registry::admission::webhook::{Attributes, Operation};
use crate::registry::smd;
use crate::registry::{ResourceType, State};
use cel::Value as Cel;
use serde_json::Value;
use std::sync::LazyLock;

static KINDS: LazyLock<Kinds> =
    LazyLock::new(|| Kinds::new("mutatingadmissionpolicies", "mutatingadmissionpolicybindings"));

/// Whether any policy is stored.
pub(crate) fn any(st: &State) -> bool {
    KINDS.any(st)
}

/// An invocation's identity: policy, binding and param (`key` of `dispatcher.go`).
type Key = (String, String, Option<(String, String)>);

/// What the first run left for a reinvocation (`policyReinvokeContext`).
#[derive(Default, Clone)]
pub(crate) struct Reinvocation {
    /// Invocations with `IfNeeded` that ran and no later change has called for yet.
    previously: Vec<Key>,
    /// Invocations a later change calls for.
    reinvoke: Vec<Key>,
    /// The object the policies left.
    last_output: Option<Value>,
}

impl Reinvocation {
    fn require_reinvoking(&mut self) {
        let previously = std::mem::take(&mut self.previously);
        self.reinvoke.extend(previously);
    }

    /// Whether a second run may do anything.
    pub(crate) fn pending(&self) -> bool {
        !self.previously.is_empty() || !self.reinvoke.is_empty()
    }
}

/// Runs the policies that apply to a create or update of `obj` (the first run when `again` is
/// `None`; else the reinvocation after the mutating webhooks). What a reinvocation needs comes
/// back.
pub(crate) fn admit(
    st: &State,
    rt: &ResourceType,
    a: &Attributes,
    obj: &mut Value,
    again: Option<Reinvocation>,
) -> ApiResult<Reinvocation> {
    let reinvoking = again.is_some();
    let mut ctx = again.unwrap_or_default();
    if a.operation == Operation::Delete || !any(st) {
        return Ok(ctx);
    }
    if reinvoking && ctx.last_output.as_ref() != Some(&*obj) {
        ctx.require_reinvoking();
    }
    let scope = Scope::of(st, a, Some(obj));
    let (invocations, config_errors) = super::invocations(st, &KINDS, a, Some(obj), &scope);
    let mut errors: Vec<(String, &'static str)> = config_errors
        .into_iter()
        .filter(|e| e.fail_closed)
        .map(|e| (denied(&e.policy_name, &e.binding_name, &e.message), "Forbidden"))
        .collect();
    for inv in &invocations {
        let key = key(inv);
        if reinvoking && !ctx.reinvoke.contains(&key) {
            continue;
        }
        let spec = &inv.policy["spec"];
        let fail_closed = super::fails_closed(spec);
        let mut fail = |e: String| {
            if fail_closed {
                errors.push((denied(&inv.policy_name, &inv.binding_name, &e), "Invalid"));
            }
        };
        let mutations = spec["mutations"].as_array().map(Vec::as_slice).unwrap_or_default();
        let expressions: Vec<&str> = mutations.iter().filter_map(|m| expression(m).map(|(_, e)| e)).collect();
        let cel_env = apimachinery::cel::mutation_env(&expressions);
        let env = Env::new(cel_env.clone(), Some(obj), a.old, &scope, inv);
        match env.conditions_hold(spec) {
            Ok(true) => {}
            Ok(false) => continue,
            Err(e) => {
                fail(e);
                continue;
            }
        }
        let before = obj.clone();
        let mut env = Some(env);
        for m in mutations {
            // Each mutation sees the object the one before it left.
            let current = env.take().unwrap_or_else(|| Env::new(cel_env.clone(), Some(obj), a.old, &scope, inv));
            match mutate(rt, &current, m, obj) {
                Ok(mutated) => *obj = mutated,
                Err(e) => fail(e),
            }
        }
        if *obj != before {
            ctx.require_reinvoking();
        }
        if spec["reinvocationPolicy"].as_str() == Some("IfNeeded") && !reinvoking {
            ctx.previously.push(key);
        }
    }
    ctx.last_output = Some(obj.clone());
    if let Some((message, reason)) = errors.first() {
        let mut err = ApiError::forbidden(a.group, a.resource, a.name, "admission request denied by policy");
        err.message = message.clone();
        err.reason = reason;
        if let Some(details) = err.details.as_mut() {
            details.causes.extend(errors.iter().map(|(m, _)| StatusCause::field("", "", m.clone())));
        }
        return Err(err);
    }
    Ok(ctx)
}

fn key(inv: &Invocation) -> Key {
    let param = inv.param.as_ref().map(|p| {
        let meta = &p["metadata"];
        (meta["namespace"].as_str().unwrap_or("").to_string(), meta["name"].as_str().unwrap_or("").to_string())
    });
    (inv.policy_name.clone(), inv.binding_name.clone(), param)
}

fn denied(policy: &str, binding: &str, message: &str) -> String {
    format!("policy '{policy}' with binding '{binding}' denied request: {message}")
}

/// A mutation's patch type and expression.
fn expression(m: &Value) -> Option<(&str, &str)> {
    let patch_type = m["patchType"].as_str()?;
    let field = match patch_type {
        "ApplyConfiguration" => "applyConfiguration",
        "JSONPatch" => "jsonPatch",
        _ => return None,
    };
    Some((patch_type, m[field]["expression"].as_str()?))
}

/// One mutation of `obj`: the object it leaves, or the error.
fn mutate(rt: &ResourceType, env: &Env, m: &Value, obj: &Value) -> Result<Value, String> {
    let Some((patch_type, expr)) = expression(m) else {
        return Err(format!("unsupported mutation: {}", m["patchType"]));
    };
    let result = env.eval(expr).map_err(|e| format!("expression '{expr}' resulted in error: {e}"))?;
    let mut mutated = match patch_type {
        "ApplyConfiguration" => apply_configuration(rt, &result, obj)?,
        _ => json_patch(rt, &result, obj)?,
    };
    // `dispatchOne` defaults what a mutation left; a custom resource's defaulter does nothing.
    if !rt.custom {
        rt.strategy.default(rt, &mut mutated);
    }
    Ok(mutated)
}

/// `applyConfigPatcher.Patch` and `ApplyStructuredMergeDiff` (`patch/smd.go`).
fn apply_configuration(rt: &ResourceType, result: &Cel, obj: &Value) -> Result<Value, String> {
    match result {
        Cel::Struct(s) if s.name() == "Object" => {}
        Cel::Struct(s) => return Err(format!("must evaluate to Object but got {}", s.name())),
        other => return Err(format!("must evaluate to Object but got {}", type_name(other))),
    }
    let mismatches = apimachinery::cel::struct_path_mismatches(result);
    if !mismatches.is_empty() {
        return Err(format!("type mismatch: {}", mismatches.join("\n")));
    }
    let mut patch = apimachinery::cel::to_json(result)?;
    if let Some(p) = patch.as_object_mut() {
        p.insert("apiVersion".into(), obj["apiVersion"].clone());
        p.insert("kind".into(), obj["kind"].clone());
    }
    if let Some(field) = smd::unknown_fields(rt, &patch).first() {
        return Err(format!(
            "error applying patch: failed to convert patch object to typed object: .{field}: field not declared in schema"
        ));
    }
    let shape = smd::shape_of(rt);
    let atomics = smd::atomics(&patch, shape);
    if !atomics.is_empty() {
        return Err(format!(
            "error applying patch: invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: {}",
            atomics.join(", ")
        ));
    }
    Ok(smd::merge_configuration(obj, &patch, shape))
}

/// `jsonPatcher.Patch` (`patch/json_patch.go`): the operations applied to the object, which is
/// then decoded strictly.
fn json_patch(rt: &ResourceType, result: &Cel, obj: &Value) -> Result<Value, String> {
    let Cel::List(items) = result else {
        return Err("type mismatch: JSONPatchType.expression should evaluate to array".into());
    };
    let mut ops = Vec::new();
    for item in items.iter() {
        let Cel::Struct(s) = item else {
            return Err(format!(
                "type mismatch: JSONPatchType.expression should evaluate to array of JSONPatch, got element of {}",
                type_name(item)
            ));
        };
        if s.name() != "JSONPatch" {
            return Err(format!(
                "type mismatch: JSONPatchType.expression should evaluate to array of JSONPatch, got element of {}",
                s.name()
            ));
        }
        if let Some(value) = s.field_value("value").and_then(|v| Cel::try_from(v).ok())
            && let Cel::Struct(_) = value
        {
            let mismatches = apimachinery::cel::struct_path_mismatches(&value);
            if !mismatches.is_empty() {
                return Err(format!("type mismatch: {}", mismatches.join("\n")));
            }
        }
        let op = apimachinery::cel::to_json(item)
            .map_err(|e| format!("JSONPath valueExpression evaluated to a type that could not marshal to JSON: {e}"))?;
        ops.push(op);
    }
    let patch: json_patch::Patch = serde_json::from_value(Value::Array(ops)).map_err(|e| format!("JSON Patch: {e}"))?;
    let mut patched = obj.clone();
    match crate::go_json_patch::apply(&mut patched, &patch) {
        Ok(()) => {}
        Err(e) if e.test_failed => return Ok(obj.clone()),
        Err(e) => return Err(format!("JSON Patch: {e}")),
    }
    if let Some(field) = smd::unknown_fields(rt, &patched).first() {
        return Err(format!("strict decoding error: unknown field \"{field}\""));
    }
    Ok(patched)
}

fn type_name(v: &Cel) -> &'static str {
    match v {
        Cel::Null => "null_type",
        Cel::Bool(_) => "bool",
        Cel::Int(_) => "int",
        Cel::UInt(_) => "uint",
        Cel::Float(_) => "double",
        Cel::String(_) => "string",
        Cel::Bytes(_) => "bytes",
        Cel::List(_) => "list",
        Cel::Map(_) => "map",
        _ => "dyn",
    }
}
