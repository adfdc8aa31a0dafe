//! MutatingWebhookConfiguration and ValidatingWebhookConfiguration: the v1 defaults
//! (`pkg/apis/admissionregistration/v1/defaults.go`) and the validation of
//! `pkg/apis/admissionregistration/validation/validation.go` (`validateMutatingWebhook`,
//! `validateValidatingWebhook`, `validateRuleWithOperations`, `validateResources`,
//! `validateAdmissionReviewVersions`, `validateMatchConditions`) and
//! `apiserver/pkg/util/webhook/validation.go` (URLs and service references), at
//! <https://github.com/kubernetes/kubernetes/tree/v1.37.2/pkg/apis/admissionregistration>.
//!
//! An update is held to the create rules only where the old object was (upstream relaxes
//! side effects, review versions, unique names and selector label values for configurations
//! stored before those rules). Match conditions are compiled with the server's CEL
//! environment; upstream's type checking of `object`, `request` and `authorizer` is not
//! modelled.

use crate::error::StatusCause;
use crate::registry::field::{self, Bad, Path};
use crate::registry::meta::label_selector_causes;
use crate::registry::{ResourceType, Strategy};
use apimachinery::validation::{dns1035_label_errors, dns1123_subdomain_errors, label_key_errors};
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// Either kind of webhook configuration.
#[derive(Debug)]
pub(crate) struct WebhookConfigurationStrategy {
    pub mutating: bool,
}

/// The rules a validation applies (upstream's `validationOptions`).
struct Options {
    require_no_side_effects: bool,
    require_recognized_review_version: bool,
    require_unique_names: bool,
}

impl Strategy for WebhookConfigurationStrategy {
    fn default(&self, _rt: &ResourceType, obj: &mut Value) {
        set_defaults(self.mutating, obj);
    }

    fn validate(&self, _rt: &ResourceType, obj: &Value) -> Vec<StatusCause> {
        let opts = Options {
            require_no_side_effects: true,
            require_recognized_review_version: true,
            require_unique_names: true,
        };
        self.validate_with(obj, &opts)
    }

    fn validate_update(&self, _rt: &ResourceType, obj: &Value, old: &Value) -> Vec<StatusCause> {
        let old_hooks = hooks(old);
        let opts = Options {
            require_no_side_effects: old_hooks.iter().all(|h| matches!(side_effects(h), Some("None" | "NoneOnDryRun"))),
            require_recognized_review_version: old_hooks
                .iter()
                .all(|h| strings(&h["admissionReviewVersions"]).iter().any(|v| REVIEW_VERSIONS.contains(&v.as_str()))),
            require_unique_names: {
                let mut seen = BTreeSet::new();
                old_hooks.iter().all(|h| seen.insert(h["name"].as_str().unwrap_or("")))
            },
        };
        self.validate_with(obj, &opts)
    }
}

/// `SetDefaults_MutatingWebhook`, `SetDefaults_ValidatingWebhook`, `SetDefaults_Rule` and
/// `SetDefaults_ServiceReference`.
fn set_defaults(mutating: bool, obj: &mut Value) {
    let Some(hooks) = obj.get_mut("webhooks").and_then(Value::as_array_mut) else { return };
    for hook in hooks.iter_mut().filter_map(Value::as_object_mut) {
        let mut set = |k: &str, v: Value| {
            if hook.get(k).is_none_or(Value::is_null) {
                hook.insert(k.into(), v);
            }
        };
        set("failurePolicy", json!("Fail"));
        set("matchPolicy", json!("Equivalent"));
        set("namespaceSelector", json!({}));
        set("objectSelector", json!({}));
        set("timeoutSeconds", json!(10));
        if mutating {
            set("reinvocationPolicy", json!("Never"));
        }
        if let Some(rules) = hook.get_mut("rules").and_then(Value::as_array_mut) {
            for rule in rules.iter_mut().filter_map(Value::as_object_mut) {
                if rule.get("scope").is_none_or(Value::is_null) {
                    rule.insert("scope".into(), json!("*"));
                }
            }
        }
        if let Some(service) =
            hook.get_mut("clientConfig").and_then(|c| c.get_mut("service")).and_then(Value::as_object_mut)
            && service.get("port").is_none_or(Value::is_null)
        {
            service.insert("port".into(), json!(443));
        }
    }
}

const REVIEW_VERSIONS: &[&str] = &["v1", "v1beta1"];

fn hooks(obj: &Value) -> Vec<&Value> {
    obj["webhooks"].as_array().map(|a| a.iter().collect()).unwrap_or_default()
}

fn side_effects(hook: &Value) -> Option<&str> {
    hook.get("sideEffects").and_then(Value::as_str)
}

pub(super) fn strings(v: &Value) -> Vec<String> {
    v.as_array().into_iter().flatten().map(|s| s.as_str().unwrap_or_default().to_string()).collect()
}

/// Go's `%#v` of a string slice, as `field.Invalid` prints one.
fn go_strings(type_name: &str, items: &[String]) -> Bad {
    let quoted: Vec<String> = items.iter().map(|s| apimachinery::go::quote(s)).collect();
    Bad::Raw(format!("[]{type_name}{{{}}}", quoted.join(", ")))
}

impl WebhookConfigurationStrategy {
    fn validate_with(&self, obj: &Value, opts: &Options) -> Vec<StatusCause> {
        let mut out = Vec::new();
        let mut names = BTreeSet::new();
        for (i, hook) in hooks(obj).into_iter().enumerate() {
            let at = Path::root("webhooks").index(i);
            self.webhook(&mut out, hook, opts, &at);
            review_versions(
                &mut out,
                &strings(&hook["admissionReviewVersions"]),
                opts.require_recognized_review_version,
                &at.child("admissionReviewVersions"),
            );
            let name = hook["name"].as_str().unwrap_or("");
            if opts.require_unique_names && !name.is_empty() && !names.insert(name) {
                out.push(field::duplicate(&at.child("name"), name));
            }
        }
        out
    }

    /// `validateMutatingWebhook` / `validateValidatingWebhook`.
    fn webhook(&self, out: &mut Vec<StatusCause>, hook: &Value, opts: &Options, at: &Path) {
        let name = hook["name"].as_str().unwrap_or("");
        fully_qualified_name(out, name, &at.child("name"));
        for (i, rule) in hook["rules"].as_array().into_iter().flatten().enumerate() {
            rule_with_operations(out, rule, &at.child("rules").index(i));
        }
        let one_of = |out: &mut Vec<StatusCause>, key: &str, valid: &[&str]| {
            if let Some(v) = hook.get(key).and_then(Value::as_str)
                && !valid.contains(&v)
            {
                out.push(field::not_supported(&at.child(key), v, valid));
            }
        };
        one_of(out, "failurePolicy", &["Fail", "Ignore"]);
        one_of(out, "matchPolicy", &["Equivalent", "Exact"]);
        let allowed: &[&str] = if opts.require_no_side_effects {
            &["None", "NoneOnDryRun"]
        } else {
            &["None", "NoneOnDryRun", "Some", "Unknown"]
        };
        match side_effects(hook) {
            None => out.push(field::required(
                &at.child("sideEffects"),
                &format!("must specify one of {}", allowed.join(", ")),
            )),
            Some(s) if !allowed.contains(&s) => out.push(field::not_supported(&at.child("sideEffects"), s, allowed)),
            Some(_) => {}
        }
        if let Some(t) = hook.get("timeoutSeconds").and_then(Value::as_i64)
            && !(1..=30).contains(&t)
        {
            out.push(field::invalid(
                &at.child("timeoutSeconds"),
                t,
                "the timeout value must be between 1 and 30 seconds",
            ));
        }
        // `metav1validation.ValidateLabelSelector` alone: no `invalid label selector` for the
        // whole selector, which only `LabelSelectorAsSelector` adds.
        for key in ["namespaceSelector", "objectSelector"] {
            if let Some(sel) = hook.get(key).filter(|s| s.is_object()) {
                let here = at.child(key);
                out.extend(label_selector_causes(sel, &here).into_iter().filter(|c| c.field != here.as_str()));
            }
        }
        if self.mutating {
            one_of(out, "reinvocationPolicy", &["IfNeeded", "Never"]);
        }
        client_config(out, &hook["clientConfig"], &at.child("clientConfig"));
        match_conditions(out, &hook["matchConditions"], &at.child("matchConditions"));
    }
}

/// `utilvalidation.IsFullyQualifiedName`.
fn fully_qualified_name(out: &mut Vec<StatusCause>, name: &str, at: &Path) {
    if name.is_empty() {
        out.push(field::required(at, ""));
        return;
    }
    let errors = dns1123_subdomain_errors(name);
    if !errors.is_empty() {
        out.push(field::invalid(at, name, &errors.join(",")));
    } else if name.split('.').count() < 3 {
        out.push(field::invalid(at, name, "should be a domain with at least three segments separated by dots"));
    }
}

/// `validateRuleWithOperations` and `validateRule` (subresources allowed).
pub(super) fn rule_with_operations(out: &mut Vec<StatusCause>, rule: &Value, at: &Path) {
    let ops = strings(&rule["operations"]);
    if ops.is_empty() {
        out.push(field::required(&at.child("operations"), ""));
    }
    star_alone(out, &ops, &at.child("operations"), "admissionregistration.OperationType", "operations");
    const OPERATIONS: &[&str] = &["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
    for (i, op) in ops.iter().enumerate() {
        if !OPERATIONS.contains(&op.as_str()) {
            out.push(field::not_supported(&at.child("operations").index(i), op, OPERATIONS));
        }
    }
    let groups = strings(&rule["apiGroups"]);
    if groups.is_empty() {
        out.push(field::required(&at.child("apiGroups"), ""));
    }
    star_alone(out, &groups, &at.child("apiGroups"), "string", "API groups");
    let versions = strings(&rule["apiVersions"]);
    if versions.is_empty() {
        out.push(field::required(&at.child("apiVersions"), ""));
    }
    star_alone(out, &versions, &at.child("apiVersions"), "string", "API versions");
    for (i, v) in versions.iter().enumerate() {
        if v.is_empty() {
            out.push(field::required(&at.child("apiVersions").index(i), ""));
        }
    }
    resources(out, &strings(&rule["resources"]), &at.child("resources"));
    if let Some(scope) = rule.get("scope").and_then(Value::as_str)
        && !["*", "Cluster", "Namespaced"].contains(&scope)
    {
        out.push(field::not_supported(&at.child("scope"), scope, &["*", "Cluster", "Namespaced"]));
    }
}

/// A list with `*` must hold nothing else (`hasWildcard`); `go_type` names the list's element
/// type as `%#v` prints it.
fn star_alone(out: &mut Vec<StatusCause>, list: &[String], at: &Path, go_type: &str, what: &str) {
    if list.len() > 1 && list.iter().any(|x| x == "*") {
        out.push(field::invalid(
            at,
            go_strings(go_type, list),
            &format!("if '*' is present, must not specify other {what}"),
        ));
    }
}

/// `validateResources`: `res/sub` forms and their wildcards.
fn resources(out: &mut Vec<StatusCause>, resources: &[String], at: &Path) {
    if resources.is_empty() {
        out.push(field::required(at, ""));
    }
    let (mut wildcard_sub, mut wildcard_res) = (BTreeSet::new(), BTreeSet::new());
    let (mut double, mut single, mut plain) = (false, false, false);
    for (i, res_sub) in resources.iter().enumerate() {
        if res_sub.is_empty() {
            out.push(field::required(&at.index(i), ""));
            continue;
        }
        double |= res_sub == "*/*";
        single |= res_sub == "*";
        let Some((res, sub)) = res_sub.split_once('/') else {
            // Upstream keeps only the last such entry's answer.
            plain = res_sub != "*";
            continue;
        };
        if wildcard_sub.contains(res) {
            out.push(field::invalid(
                &at.index(i),
                res_sub,
                &format!("if '{res}/*' is present, must not specify {res_sub}"),
            ));
        }
        if wildcard_res.contains(sub) {
            out.push(field::invalid(
                &at.index(i),
                res_sub,
                &format!("if '*/{sub}' is present, must not specify {res_sub}"),
            ));
        }
        if sub == "*" {
            wildcard_sub.insert(res.to_string());
        }
        if res == "*" {
            wildcard_res.insert(sub.to_string());
        }
    }
    if resources.len() > 1 && double {
        out.push(field::invalid(
            at,
            go_strings("string", resources),
            "if '*/*' is present, must not specify other resources",
        ));
    }
    if single && plain {
        out.push(field::invalid(
            at,
            go_strings("string", resources),
            "if '*' is present, must not specify other resources without subresources",
        ));
    }
}

/// `validateAdmissionReviewVersions`.
fn review_versions(out: &mut Vec<StatusCause>, versions: &[String], require_recognized: bool, at: &Path) {
    if versions.is_empty() {
        out.push(field::required(at, &format!("must specify one of {}", REVIEW_VERSIONS.join(", "))));
        return;
    }
    let mut seen = BTreeSet::new();
    let mut accepted = false;
    for (i, v) in versions.iter().enumerate() {
        if !seen.insert(v) {
            out.push(field::invalid(&at.index(i), v, "duplicate version"));
            continue;
        }
        for e in dns1035_label_errors(v) {
            out.push(field::invalid(&at.index(i), v, &e));
        }
        accepted |= REVIEW_VERSIONS.contains(&v.as_str());
    }
    if require_recognized && !accepted {
        out.push(field::invalid(
            at,
            go_strings("string", versions),
            &format!("must include at least one of {}", REVIEW_VERSIONS.join(", ")),
        ));
    }
}

/// Exactly one of `url` and `service`; `ValidateWebhookURL` (https, a host, no user, query or
/// fragment) and `ValidateWebhookService` (name, namespace, port, DNS-1123 path segments).
fn client_config(out: &mut Vec<StatusCause>, cc: &Value, at: &Path) {
    let url = cc.get("url").and_then(Value::as_str);
    let service = cc.get("service").filter(|s| s.is_object());
    match (url, service) {
        (Some(u), None) => webhook_url(out, u, &at.child("url")),
        (None, Some(s)) => webhook_service(out, s, &at.child("service")),
        _ => out.push(field::required(at, "exactly one of url or service is required")),
    }
}

fn webhook_url(out: &mut Vec<StatusCause>, raw: &str, at: &Path) {
    const FORM: &str = "; desired format: https://host[/path]";
    match url::Url::parse(raw) {
        Err(e) => out.push(field::required(at, &format!("url must be a valid URL: {e}{FORM}"))),
        Ok(u) => {
            if u.scheme() != "https" {
                out.push(field::invalid(at, u.scheme(), &format!("'https' is the only allowed URL scheme{FORM}")));
            }
            // Go's `url.Parse` reads the host up to the path: `https:///x` has none (the url
            // crate would take `x`).
            let authority = raw.split_once("://").map_or("", |(_, rest)| rest);
            let authority = authority.split(['/', '?', '#']).next().unwrap_or("");
            let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
            if host.is_empty() {
                out.push(field::invalid(at, host, &format!("host must be specified{FORM}")));
            }
            if !u.username().is_empty() || u.password().is_some() {
                let user = match u.password() {
                    Some(p) => format!("{}:{p}", u.username()),
                    None => u.username().to_string(),
                };
                out.push(field::invalid(at, user, "user information is not permitted in the URL"));
            }
            if let Some(f) = u.fragment().filter(|f| !f.is_empty()) {
                out.push(field::invalid(at, f, "fragments are not permitted in the URL"));
            }
            if let Some(q) = u.query().filter(|q| !q.is_empty()) {
                out.push(field::invalid(at, q, "query parameters are not permitted in the URL"));
            }
        }
    }
}

/// `ValidateWebhookService(fldPath, namespace, name, ...)` is called with the service's name
/// and namespace the other way round (`validateValidatingWebhook`), so a missing name is
/// reported at `service.namespace` and a missing namespace at `service.name`: kube-apiserver
/// v1.37.2 answers so, and so does this.
fn webhook_service(out: &mut Vec<StatusCause>, svc: &Value, at: &Path) {
    if svc["namespace"].as_str().unwrap_or("").is_empty() {
        out.push(field::required(&at.child("name"), ""));
    }
    if svc["name"].as_str().unwrap_or("").is_empty() {
        out.push(field::required(&at.child("namespace"), ""));
    }
    let port = svc["port"].as_i64().unwrap_or(443);
    if !(1..=65535).contains(&port) {
        out.push(field::invalid(&at.child("port"), port, "port is not valid: must be between 1 and 65535, inclusive"));
    }
    let Some(path) = svc.get("path").and_then(Value::as_str) else { return };
    if path.is_empty() || path == "/" {
        return;
    }
    if path == "//" {
        out.push(field::invalid(&at.child("path"), path, "segment[0] may not be empty"));
        return;
    }
    if !path.starts_with('/') {
        out.push(field::invalid(&at.child("path"), path, "must start with a '/'"));
    }
    let rest = path.get(1..).unwrap_or("");
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    for (i, step) in rest.split('/').enumerate() {
        if step.is_empty() {
            out.push(field::invalid(&at.child("path"), path, &format!("segment[{i}] may not be empty")));
            continue;
        }
        for e in dns1123_subdomain_errors(step) {
            out.push(field::invalid(&at.child("path"), path, &format!("segment[{i}]: {e}")));
        }
    }
}

/// `validateMatchConditions`: at most 64, each named (a qualified name, once) with an
/// expression that compiles.
pub(super) fn match_conditions(out: &mut Vec<StatusCause>, conditions: &Value, at: &Path) {
    let list = conditions.as_array().map(Vec::as_slice).unwrap_or_default();
    if list.len() > 64 {
        out.push(field::too_many(at, list.len(), 64));
    }
    let mut names = BTreeSet::new();
    for (i, c) in list.iter().enumerate() {
        let here = at.index(i);
        let expression = c["expression"].as_str().unwrap_or("").trim();
        if expression.is_empty() {
            out.push(field::required(&here.child("expression"), ""));
        } else if let Err(e) = apimachinery::cel::ENV.compile(expression) {
            out.push(field::invalid(&here.child("expression"), expression, &format!("compilation failed: {e}")));
        }
        let name = c["name"].as_str().unwrap_or("");
        if name.is_empty() {
            out.push(field::required(&here.child("name"), ""));
        } else {
            out.extend(label_key_errors(name).iter().map(|e| field::invalid(&here.child("name"), name, e)));
        }
        if !name.is_empty() && !names.insert(name) {
            out.push(field::duplicate(&here.child("name"), name));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn causes(mutating: bool, obj: &Value) -> Vec<(String, String)> {
        let s = WebhookConfigurationStrategy { mutating };
        let opts = Options {
            require_no_side_effects: true,
            require_recognized_review_version: true,
            require_unique_names: true,
        };
        s.validate_with(obj, &opts).into_iter().map(|c| (c.field, c.reason)).collect()
    }

    fn hook(extra: Value) -> Value {
        let mut h = json!({
            "name": "a.example.com",
            "clientConfig": {"url": "https://127.0.0.1:9443/x"},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        });
        for (k, v) in extra.as_object().unwrap() {
            h[k] = v.clone();
        }
        h
    }

    #[test]
    fn a_valid_configuration_has_no_causes_and_gets_the_v1_defaults() {
        let mut obj =
            json!({"webhooks": [hook(json!({"clientConfig": {"service": {"namespace": "ns", "name": "svc"}}}))]});
        assert!(causes(true, &obj).is_empty(), "{:?}", causes(true, &obj));
        set_defaults(true, &mut obj);
        let h = &obj["webhooks"][0];
        assert_eq!(
            (&h["failurePolicy"], &h["matchPolicy"], &h["timeoutSeconds"], &h["reinvocationPolicy"]),
            (&json!("Fail"), &json!("Equivalent"), &json!(10), &json!("Never"))
        );
        assert_eq!((&h["rules"][0]["scope"], &h["clientConfig"]["service"]["port"]), (&json!("*"), &json!(443)));
        assert_eq!(h["namespaceSelector"], json!({}));
    }

    #[test]
    fn each_rule_of_a_webhook_is_checked() {
        let bad = json!({"webhooks": [
            hook(json!({"name": "short.name", "sideEffects": "Some", "timeoutSeconds": 31, "failurePolicy": "Maybe",
                        "admissionReviewVersions": ["v2"], "clientConfig": {"url": "http://h/x?q=1"},
                        "rules": [{"operations": ["*", "CREATE"], "apiGroups": [], "apiVersions": ["v1"], "resources": ["*", "pods"]}],
                        "matchConditions": [{"name": "c", "expression": "object.(("}]})),
            hook(json!({"name": "short.name", "clientConfig": {}}))
        ]});
        let got = causes(false, &bad);
        let want: Vec<(String, String)> = [
            ("webhooks[0].name", "FieldValueInvalid"),
            ("webhooks[0].rules[0].operations", "FieldValueInvalid"),
            ("webhooks[0].rules[0].apiGroups", "FieldValueRequired"),
            ("webhooks[0].rules[0].resources", "FieldValueInvalid"),
            ("webhooks[0].failurePolicy", "FieldValueNotSupported"),
            ("webhooks[0].sideEffects", "FieldValueNotSupported"),
            ("webhooks[0].timeoutSeconds", "FieldValueInvalid"),
            ("webhooks[0].clientConfig.url", "FieldValueInvalid"),
            ("webhooks[0].clientConfig.url", "FieldValueInvalid"),
            ("webhooks[0].matchConditions[0].expression", "FieldValueInvalid"),
            ("webhooks[0].admissionReviewVersions", "FieldValueInvalid"),
            ("webhooks[1].name", "FieldValueInvalid"),
            ("webhooks[1].clientConfig", "FieldValueRequired"),
            ("webhooks[1].name", "FieldValueDuplicate"),
        ]
        .iter()
        .map(|(f, r)| (f.to_string(), r.to_string()))
        .collect();
        assert_eq!(got, want);
    }
}
