//! ValidatingAdmissionPolicy, MutatingAdmissionPolicy and their bindings: the v1 defaults
//! (`SetDefaults_ValidatingAdmissionPolicySpec`, `SetDefaults_MutatingAdmissionPolicySpec`,
//! `SetDefaults_MatchResources`, `SetDefaults_Rule` of
//! `pkg/apis/admissionregistration/v1/defaults.go`) and the validation of
//! `pkg/apis/admissionregistration/validation/validation.go` (`validateValidatingAdmissionPolicySpec`,
//! `validateMutatingAdmissionPolicySpec`, `validateMutation`, `validateMatchResources`,
//! `validateParamKind`, `validateParamRef`, `validateValidationActions`, the binding specs), at
//! <https://github.com/kubernetes/kubernetes/tree/v1.37.2/pkg/apis/admissionregistration>.
//!
//! Expressions are compiled with the server's CEL environment; upstream's type checking
//! (that an `ApplyConfiguration` builds an `Object`, that `object` has a field) is not
//! modelled, nor the status that kube-apiserver's policy controller writes after it.

use super::webhook_configuration::{match_conditions, rule_with_operations, strings};
use crate::error::StatusCause;
use crate::registry::field::{self, Path};
use crate::registry::meta::label_selector_causes;
use crate::registry::{ResourceType, Strategy};
use apimachinery::validation::{dns1035_label_errors, dns1123_subdomain_errors};
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// One of the four policy kinds.
#[derive(Debug)]
pub(crate) struct PolicyStrategy {
    pub mutating: bool,
    pub binding: bool,
}

impl Strategy for PolicyStrategy {
    fn default(&self, _rt: &ResourceType, obj: &mut Value) {
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else { return };
        if !self.binding && spec.get("failurePolicy").is_none_or(Value::is_null) {
            spec.insert("failurePolicy".into(), json!("Fail"));
        }
        let field = if self.binding { "matchResources" } else { "matchConstraints" };
        if let Some(m) = spec.get_mut(field).and_then(Value::as_object_mut) {
            for (k, v) in
                [("matchPolicy", json!("Equivalent")), ("namespaceSelector", json!({})), ("objectSelector", json!({}))]
            {
                if m.get(k).is_none_or(Value::is_null) {
                    m.insert(k.into(), v);
                }
            }
            for rules in ["resourceRules", "excludeResourceRules"] {
                for rule in m.get_mut(rules).and_then(Value::as_array_mut).into_iter().flatten() {
                    if let Some(r) = rule.as_object_mut()
                        && r.get("scope").is_none_or(Value::is_null)
                    {
                        r.insert("scope".into(), json!("*"));
                    }
                }
            }
        }
    }

    fn validate(&self, _rt: &ResourceType, obj: &Value) -> Vec<StatusCause> {
        let mut out = Vec::new();
        let spec = &obj["spec"];
        let at = Path::root("spec");
        match (self.binding, self.mutating) {
            (false, false) => validating_policy(&mut out, spec, &obj["metadata"], &at),
            (false, true) => mutating_policy(&mut out, spec, &at),
            (true, mutating) => binding(&mut out, spec, mutating, &at),
        }
        out
    }

    fn validate_status_update(&self, _rt: &ResourceType, _obj: &Value, _old: &Value) -> Vec<StatusCause> {
        Vec::new()
    }
}

const FAILURE_POLICIES: &[&str] = &["Fail", "Ignore"];
const MUTATING_OPERATIONS: &[&str] = &["*", "CONNECT", "CREATE", "UPDATE"];

/// What both policy kinds check first: failure policy, paramKind, match constraints (with at
/// least one rule), match conditions, variables.
fn policy_common(out: &mut Vec<StatusCause>, spec: &Value, at: &Path) {
    match spec.get("failurePolicy").and_then(Value::as_str) {
        None => out.push(field::required(&at.child("failurePolicy"), "")),
        Some(p) if !FAILURE_POLICIES.contains(&p) => {
            out.push(field::not_supported(&at.child("failurePolicy"), p, FAILURE_POLICIES))
        }
        Some(_) => {}
    }
    if let Some(kind) = spec.get("paramKind").filter(|k| k.is_object()) {
        param_kind(out, kind, &at.child("paramKind"));
    }
    match spec.get("matchConstraints").filter(|m| m.is_object()) {
        None => out.push(field::required(&at.child("matchConstraints"), "")),
        Some(m) => {
            match_resources(out, m, &at.child("matchConstraints"));
            if m["resourceRules"].as_array().is_none_or(Vec::is_empty) {
                out.push(field::required(&at.child("matchConstraints").child("resourceRules"), ""));
            }
        }
    }
}

fn validating_policy(out: &mut Vec<StatusCause>, spec: &Value, meta: &Value, at: &Path) {
    policy_common(out, spec, at);
    match_conditions(out, &spec["matchConditions"], &at.child("matchConditions"));
    variables(out, spec, at);
    let validations = spec["validations"].as_array().map(Vec::as_slice).unwrap_or_default();
    let audits = spec["auditAnnotations"].as_array().map(Vec::as_slice).unwrap_or_default();
    if validations.is_empty() && audits.is_empty() {
        let why = "validations or auditAnnotations must contain at least one item";
        out.push(field::required(&at.child("validations"), why));
        out.push(field::required(&at.child("auditAnnotations"), why));
        return;
    }
    for (i, v) in validations.iter().enumerate() {
        validation(out, v, &at.child("validations").index(i));
    }
    if audits.len() > 20 {
        out.push(field::invalid(
            &at.child("auditAnnotations"),
            field::Bad::of(&spec["auditAnnotations"]),
            "must not have more than 20 auditAnnotations",
        ));
    }
    let name = meta["name"].as_str().unwrap_or("");
    let mut keys = BTreeSet::new();
    for (i, a) in audits.iter().enumerate() {
        let here = at.child("auditAnnotations").index(i);
        let key = a["key"].as_str().unwrap_or("");
        if name.is_empty() {
            out.push(field::invalid(&here.child("key"), key, "requires metadata.name be non-empty"));
        } else {
            let qualified = format!("{name}/{key}");
            for msg in apimachinery::validation::label_key_errors(&qualified) {
                out.push(field::invalid(&here.child("key"), qualified.as_str(), &msg));
            }
        }
        let value = a["valueExpression"].as_str().unwrap_or("").trim();
        if value.is_empty() {
            out.push(field::required(&here.child("valueExpression"), "valueExpression is not specified"));
        } else if value.len() > 5 * 1024 {
            out.push(field::required(&here.child("valueExpression"), "must not exceed 5120 bytes in length"));
        } else {
            compiles(out, a["valueExpression"].as_str().unwrap_or(""), &here.child("valueExpression"));
        }
        if !keys.insert(key) {
            out.push(field::duplicate(&here.child("key"), key));
        }
    }
}

/// `validateValidation`.
fn validation(out: &mut Vec<StatusCause>, v: &Value, at: &Path) {
    let expression = v["expression"].as_str().unwrap_or("");
    if expression.trim().is_empty() {
        out.push(field::required(&at.child("expression"), "expression is not specified"));
    } else {
        compiles(out, expression, &at.child("expression"));
    }
    let message_expression = v["messageExpression"].as_str().unwrap_or("");
    if !message_expression.is_empty() && message_expression.trim().is_empty() {
        out.push(field::invalid(&at.child("messageExpression"), message_expression, "must be non-empty if specified"));
    } else if !message_expression.trim().is_empty() {
        compiles(out, message_expression, &at.child("messageExpression"));
    }
    let message = v["message"].as_str().unwrap_or("");
    if !message.is_empty() && message.trim().is_empty() {
        out.push(field::invalid(&at.child("message"), message, "must be non-empty if specified"));
    } else if message.trim().contains(['\n', '\r']) {
        out.push(field::invalid(&at.child("message"), message, "must not contain line breaks"));
    }
    const REASONS: &[&str] = &["Forbidden", "Invalid", "RequestEntityTooLarge"];
    if let Some(reason) = v.get("reason").and_then(Value::as_str)
        && !REASONS.contains(&reason)
    {
        out.push(field::not_supported(&at.child("reason"), reason, REASONS));
    }
}

fn mutating_policy(out: &mut Vec<StatusCause>, spec: &Value, at: &Path) {
    policy_common(out, spec, at);
    for rule in spec["matchConstraints"]["resourceRules"].as_array().into_iter().flatten() {
        mutating_operations(out, rule, &at.child("matchConstraints").child("resourceRules").child("operations"));
    }
    match_conditions(out, &spec["matchConditions"], &at.child("matchConditions"));
    variables(out, spec, at);
    let mutations = spec["mutations"].as_array().map(Vec::as_slice).unwrap_or_default();
    if mutations.is_empty() {
        out.push(field::required(&at.child("mutations"), "mutations must contain at least one item"));
    }
    for (i, m) in mutations.iter().enumerate() {
        mutation(out, m, &at.child("mutations").index(i));
    }
    const REINVOCATION: &[&str] = &["IfNeeded", "Never"];
    match spec.get("reinvocationPolicy").and_then(Value::as_str).filter(|p| !p.is_empty()) {
        None => out.push(field::required(&at.child("reinvocationPolicy"), "")),
        Some(p) if !REINVOCATION.contains(&p) => {
            out.push(field::not_supported(&at.child("reinvocationPolicy"), p, REINVOCATION))
        }
        Some(_) => {}
    }
}

/// A mutating policy may only be for creates, updates and connects.
fn mutating_operations(out: &mut Vec<StatusCause>, rule: &Value, at: &Path) {
    for op in strings(&rule["operations"]) {
        if !MUTATING_OPERATIONS.contains(&op.as_str()) {
            out.push(field::not_supported(at, op.as_str(), MUTATING_OPERATIONS));
        }
    }
}

/// `validateMutation`.
fn mutation(out: &mut Vec<StatusCause>, m: &Value, at: &Path) {
    let present = |f: &str| m.get(f).is_some_and(|v| !v.is_null());
    let mut expression = |f: &str| {
        let e = m[f]["expression"].as_str().unwrap_or("");
        if e.trim().is_empty() {
            out.push(field::required(&at.child(f).child("expression"), ""));
        } else if let Err(err) = apimachinery::cel::mutation_env(&[e]).compile(e.trim()) {
            out.push(field::invalid(&at.child(f).child("expression"), e.trim(), &format!("compilation failed: {err}")));
        }
    };
    match m.get("patchType").and_then(Value::as_str).unwrap_or("") {
        "" => out.push(field::required(&at.child("patchType"), "")),
        "JSONPatch" => {
            if present("jsonPatch") {
                expression("jsonPatch");
            } else {
                out.push(field::required(&at.child("jsonPatch"), "must be specified when patchType is JSONPatch"));
            }
            if present("applyConfiguration") {
                out.push(field::invalid(
                    &at.child("applyConfiguration"),
                    field::Bad::Raw("{applyConfiguration}".into()),
                    "must not be specified when patchType is JSONPatch",
                ));
            }
        }
        "ApplyConfiguration" => {
            if present("applyConfiguration") {
                expression("applyConfiguration");
            } else {
                out.push(field::required(
                    &at.child("applyConfiguration"),
                    "must be specified when patchType is ApplyConfiguration",
                ));
            }
            if present("jsonPatch") {
                out.push(field::invalid(
                    &at.child("jsonPatch"),
                    field::Bad::Raw("{jsonPatch}".into()),
                    "must not be specified when patchType is ApplyConfiguration",
                ));
            }
        }
        other => out.push(field::not_supported(&at.child("patchType"), other, &["ApplyConfiguration", "JSONPatch"])),
    }
}

/// `validateVariable` of each of `spec.variables`.
fn variables(out: &mut Vec<StatusCause>, spec: &Value, at: &Path) {
    for (i, v) in spec["variables"].as_array().into_iter().flatten().enumerate() {
        let here = at.child("variables").index(i);
        let name = v["name"].as_str().unwrap_or("");
        if name.trim().is_empty() {
            out.push(field::required(&here.child("name"), "name is not specified"));
        } else if !apimachinery::cel::is_identifier(name) {
            out.push(field::invalid(&here.child("name"), name, "must be a valid CEL identifier"));
        }
        let expression = v["expression"].as_str().unwrap_or("");
        if expression.trim().is_empty() {
            out.push(field::required(&here.child("expression"), "expression is not specified"));
        } else {
            compiles(out, expression, &here.child("expression"));
        }
    }
}

fn compiles(out: &mut Vec<StatusCause>, expression: &str, at: &Path) {
    if let Err(e) = apimachinery::cel::ENV.compile(expression) {
        out.push(field::invalid(at, expression, &format!("compilation failed: {e}")));
    }
}

/// `validateParamKind`.
fn param_kind(out: &mut Vec<StatusCause>, kind: &Value, at: &Path) {
    let api_version = kind["apiVersion"].as_str().unwrap_or("");
    let here = at.child("apiVersion");
    if api_version.is_empty() {
        out.push(field::required(&here, ""));
    } else if api_version.matches('/').count() > 1 {
        out.push(field::invalid(&here, api_version, &format!("unexpected GroupVersion string: {api_version}")));
    } else if api_version != "/" {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        if !group.is_empty() {
            let errors = dns1123_subdomain_errors(group);
            if !errors.is_empty() {
                out.push(field::invalid(&here, group, &errors.join(",")));
            }
        }
        if version.is_empty() {
            out.push(field::invalid(&here, api_version, "version must be specified"));
        } else {
            let errors = dns1035_label_errors(version);
            if !errors.is_empty() {
                out.push(field::invalid(&here, version, &errors.join(",")));
            }
        }
    } else {
        out.push(field::invalid(&here, api_version, "version must be specified"));
    }
    let kind_name = kind["kind"].as_str().unwrap_or("");
    if kind_name.is_empty() {
        out.push(field::required(&at.child("kind"), ""));
    } else {
        let errors = dns1035_label_errors(&kind_name.to_lowercase());
        if !errors.is_empty() {
            out.push(field::invalid(
                &at.child("kind"),
                kind_name,
                &format!("may have mixed case, but should otherwise match: {}", errors.join(",")),
            ));
        }
    }
}

/// `validateMatchResources`.
fn match_resources(out: &mut Vec<StatusCause>, m: &Value, at: &Path) {
    const MATCH_POLICIES: &[&str] = &["Equivalent", "Exact"];
    match m.get("matchPolicy").and_then(Value::as_str) {
        None => out.push(field::required(&at.child("matchPolicy"), "")),
        Some(p) if !MATCH_POLICIES.contains(&p) => {
            out.push(field::not_supported(&at.child("matchPolicy"), p, MATCH_POLICIES))
        }
        Some(_) => {}
    }
    for selector in ["namespaceSelector", "objectSelector"] {
        match m.get(selector).filter(|s| s.is_object()) {
            None => out.push(field::required(&at.child(selector), "")),
            Some(s) => out.extend(label_selector_causes(s, &at.child(selector))),
        }
    }
    for rules in ["resourceRules", "excludeResourceRules"] {
        for (i, rule) in m[rules].as_array().into_iter().flatten().enumerate() {
            let here = at.child(rules).index(i);
            let mut seen = BTreeSet::new();
            for (j, name) in strings(&rule["resourceNames"]).iter().enumerate() {
                for msg in path_segment_name_errors(name) {
                    out.push(field::invalid(&here.child("resourceNames").index(j), name.as_str(), &msg));
                }
                if !seen.insert(name.clone()) {
                    out.push(field::duplicate(&here.child("resourceNames").index(j), name.as_str()));
                }
            }
            rule_with_operations(out, rule, &here);
        }
    }
}

/// `content.IsPathSegmentName`.
fn path_segment_name_errors(name: &str) -> Vec<String> {
    if name == "." || name == ".." {
        return vec![format!("may not be '{name}'")];
    }
    ["/", "%"].iter().filter(|c| name.contains(**c)).map(|c| format!("may not contain '{c}'")).collect()
}

/// The spec of either binding kind.
fn binding(out: &mut Vec<StatusCause>, spec: &Value, mutating: bool, at: &Path) {
    let policy = spec["policyName"].as_str().unwrap_or("");
    if policy.is_empty() {
        out.push(field::required(&at.child("policyName"), ""));
    } else {
        for msg in dns1123_subdomain_errors(policy) {
            out.push(field::invalid(&at.child("policyName"), policy, &msg));
        }
    }
    if let Some(pr) = spec.get("paramRef").filter(|p| p.is_object()) {
        param_ref(out, pr, &at.child("paramRef"));
    }
    if let Some(m) = spec.get("matchResources").filter(|m| m.is_object()) {
        match_resources(out, m, &at.child("matchResources"));
        if mutating {
            for rule in m["resourceRules"].as_array().into_iter().flatten() {
                mutating_operations(out, rule, &at.child("matchResources").child("resourceRules").child("operations"));
            }
        }
    }
    if !mutating {
        validation_actions(out, &spec["validationActions"], &at.child("validationActions"));
    }
}

/// `validateParamRef`.
fn param_ref(out: &mut Vec<StatusCause>, pr: &Value, at: &Path) {
    let name = pr["name"].as_str().unwrap_or("");
    let selector = pr.get("selector").filter(|s| s.is_object());
    if !name.is_empty() {
        for msg in path_segment_name_errors(name) {
            out.push(field::invalid(&at.child("name"), name, &msg));
        }
        if selector.is_some() {
            out.push(field::forbidden(&at.child("name"), "name and selector are mutually exclusive"));
        }
    }
    if let Some(s) = selector {
        out.extend(label_selector_causes(s, &at.child("selector")));
        if !name.is_empty() {
            out.push(field::forbidden(&at.child("selector"), "name and selector are mutually exclusive"));
        }
    }
    if name.is_empty() && selector.is_none() {
        out.push(field::required(at, "one of name or selector must be specified"));
    }
    match pr.get("parameterNotFoundAction").and_then(Value::as_str).filter(|a| !a.is_empty()) {
        None => out.push(field::required(&at.child("parameterNotFoundAction"), "")),
        Some(a) if a != "Deny" && a != "Allow" => {
            out.push(field::not_supported(&at.child("parameterNotFoundAction"), a, &["Deny", "Allow"]))
        }
        Some(_) => {}
    }
}

/// `validateValidationActions`.
fn validation_actions(out: &mut Vec<StatusCause>, actions: &Value, at: &Path) {
    const ACTIONS: &[&str] = &["Audit", "Deny", "Warn"];
    let list = strings(actions);
    let mut seen = BTreeSet::new();
    for (i, a) in list.iter().enumerate() {
        if !ACTIONS.contains(&a.as_str()) {
            out.push(field::not_supported(&at.index(i), a.as_str(), ACTIONS));
        }
        if !seen.insert(a.as_str()) {
            out.push(field::duplicate(&at.index(i), a.as_str()));
        }
    }
    if seen.contains("Deny") && seen.contains("Warn") {
        out.push(field::invalid(
            at,
            field::Bad::of(actions),
            "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        ));
    }
    if seen.is_empty() {
        out.push(field::required(at, "at least one validation action is required"));
    }
}
