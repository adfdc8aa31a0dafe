//! The authorizer chain of kube-apiserver with `--authorization-mode=RBAC`: the privileged
//! group `system:masters` first, then the RBAC authorizer over the stored Roles, ClusterRoles
//! and their bindings (`plugin/pkg/auth/authorizer/rbac`). With RBAC off the chain is
//! `AlwaysAllow`. Aggregated ClusterRoles get the rules of the ClusterRoles their selectors
//! match, as the aggregation controller would have written them.

use crate::error::ApiError;
use crate::registry::State;
use crate::registry::apps::workload::selector_matches;
use crate::storage::{MASTERS, StorageKey, UserInfo};
use serde_json::{Value, json};
use std::sync::LazyLock;

const GROUP: &str = "rbac.authorization.k8s.io";
static ROLES: LazyLock<StorageKey> = LazyLock::new(|| StorageKey::new(GROUP, "roles"));
static CLUSTER_ROLES: LazyLock<StorageKey> = LazyLock::new(|| StorageKey::new(GROUP, "clusterroles"));
static ROLE_BINDINGS: LazyLock<StorageKey> = LazyLock::new(|| StorageKey::new(GROUP, "rolebindings"));
static CLUSTER_ROLE_BINDINGS: LazyLock<StorageKey> = LazyLock::new(|| StorageKey::new(GROUP, "clusterrolebindings"));

/// What a resource request asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ResourceAttributes {
    pub group: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
}

/// What a request asks for (`authorizer.Attributes`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Attributes {
    /// `get`, `list`, `create`… for resources; the lowercase HTTP method for paths.
    pub verb: String,
    /// `Some` for a resource request, `None` for a non-resource path.
    pub resource: Option<ResourceAttributes>,
    /// The URL path (non-resource requests).
    pub path: String,
}

/// The authorizer's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Decision {
    pub allowed: bool,
    /// Why not (bindings naming roles that do not exist), as `RBAC: …`; empty otherwise.
    pub reason: String,
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// Whether a binding's subject is `user` (`appliesToUser`): a ServiceAccount subject without a
/// namespace is in the binding's namespace.
fn applies_to(subject: &Value, user: &UserInfo, binding_namespace: &str) -> bool {
    let name = text(subject, "name");
    match text(subject, "kind") {
        "User" => user.name == name,
        "Group" => user.in_group(name),
        "ServiceAccount" => {
            let ns = match text(subject, "namespace") {
                "" => binding_namespace,
                ns => ns,
            };
            user.service_account_parts() == Some((ns, name))
        }
        _ => false,
    }
}

/// The rules of the ClusterRole `name` (aggregated ones included), or why there are none.
fn cluster_role_rules(st: &State, name: &str) -> Result<Vec<Value>, String> {
    let Some(role) = st.store.get(&CLUSTER_ROLES, "", name) else {
        return Err(format!("clusterrole.rbac.authorization.k8s.io \"{name}\" not found"));
    };
    let role = role.value();
    let selectors = role["aggregationRule"]["clusterRoleSelectors"].as_array().cloned().unwrap_or_default();
    if selectors.is_empty() {
        return Ok(role["rules"].as_array().cloned().unwrap_or_default());
    }
    let mut rules = Vec::new();
    for other in st.store.collection(&CLUSTER_ROLES).into_iter().flat_map(|c| c.values()) {
        let other = other.value();
        if text(&other["metadata"], "name") == name {
            continue;
        }
        let labels = other["metadata"].get("labels");
        if selectors.iter().any(|s| selector_matches(s, labels)) {
            for r in other["rules"].as_array().into_iter().flatten() {
                if !rules.contains(r) {
                    rules.push(r.clone());
                }
            }
        }
    }
    Ok(rules)
}

/// `describeSubject`: `Kind "name"`, a service account as `name/namespace`.
fn describe_subject(subject: &Value, binding_namespace: &str) -> String {
    let (kind, name) = (text(subject, "kind"), text(subject, "name"));
    if kind == "ServiceAccount" {
        let ns = match text(subject, "namespace") {
            "" => binding_namespace,
            ns => ns,
        };
        return format!("{kind} {}", q(&format!("{name}/{ns}")));
    }
    format!("{kind} {}", q(name))
}

/// A rule and where it comes from (`ClusterRoleBinding "b" of ClusterRole "r" to User "u"`).
pub(crate) type SourcedRule = (String, Value);

/// The rules granted to `user` in `namespace` (cluster-wide ones with an empty namespace),
/// and the errors met on the way (bindings of missing roles).
pub(crate) fn rules_for(st: &State, user: &UserInfo, namespace: &str) -> (Vec<SourcedRule>, Vec<String>) {
    let (mut rules, mut errors) = (Vec::new(), Vec::new());
    let mut add = |source: String, r: Result<Vec<Value>, String>| match r {
        Ok(r) => rules.extend(r.into_iter().map(|rule| (source.clone(), rule))),
        Err(e) => errors.push(e),
    };
    for binding in st.store.collection(&CLUSTER_ROLE_BINDINGS).into_iter().flat_map(|c| c.values()) {
        let b = binding.value();
        if let Some(s) = b["subjects"].as_array().into_iter().flatten().find(|s| applies_to(s, user, "")) {
            let role = text(&b["roleRef"], "name");
            let source = format!(
                "ClusterRoleBinding {} of ClusterRole {} to {}",
                q(text(&b["metadata"], "name")),
                q(role),
                describe_subject(s, "")
            );
            add(source, cluster_role_rules(st, role));
        }
    }
    if !namespace.is_empty() {
        let bindings = st.store.collection(&ROLE_BINDINGS);
        for (_, binding) in bindings.into_iter().flat_map(|c| c.range((namespace.to_string(), String::new())..)) {
            let b = binding.value();
            if text(&b["metadata"], "namespace") != namespace {
                break;
            }
            let Some(s) = b["subjects"].as_array().into_iter().flatten().find(|s| applies_to(s, user, namespace))
            else {
                continue;
            };
            let (kind, role) = (text(&b["roleRef"], "kind"), text(&b["roleRef"], "name"));
            let source = format!(
                "RoleBinding {} of {kind} {} to {}",
                q(&format!("{}/{namespace}", text(&b["metadata"], "name"))),
                q(role),
                describe_subject(s, namespace)
            );
            if kind == "ClusterRole" {
                add(source, cluster_role_rules(st, role));
            } else {
                match st.store.get(&ROLES, namespace, role) {
                    Some(r) => add(source, Ok(r.value()["rules"].as_array().cloned().unwrap_or_default())),
                    None => add(source, Err(format!("role.rbac.authorization.k8s.io \"{role}\" not found"))),
                }
            }
        }
    }
    (rules, errors)
}

fn has(list: &[String], want: &str) -> bool {
    list.iter().any(|x| x == "*" || x == want)
}

/// Whether one PolicyRule allows the request (`RuleAllows`).
pub(crate) fn rule_allows(rule: &Value, attrs: &Attributes) -> bool {
    if !has(&strings(rule, "verbs"), &attrs.verb) {
        return false;
    }
    match &attrs.resource {
        Some(r) => {
            if !has(&strings(rule, "apiGroups"), &r.group) {
                return false;
            }
            let combined =
                if r.subresource.is_empty() { r.resource.clone() } else { format!("{}/{}", r.resource, r.subresource) };
            let resource_ok = strings(rule, "resources").iter().any(|x| {
                x == "*" || *x == combined || (!r.subresource.is_empty() && *x == format!("*/{}", r.subresource))
            });
            let names = strings(rule, "resourceNames");
            resource_ok && (names.is_empty() || names.contains(&r.name))
        }
        None => strings(rule, "nonResourceURLs").iter().any(|u| {
            u == "*" || *u == attrs.path || (u.ends_with('*') && attrs.path.starts_with(u.trim_end_matches('*')))
        }),
    }
}

/// The decision for `user` making the request `attrs`.
pub(crate) fn authorize(st: &State, user: &UserInfo, attrs: &Attributes) -> Decision {
    if !st.rbac || user.in_group(MASTERS) {
        return Decision { allowed: true, reason: String::new() };
    }
    let namespace = attrs.resource.as_ref().map(|r| r.namespace.as_str()).unwrap_or_default();
    let (rules, errors) = rules_for(st, user, namespace);
    if let Some((source, _)) = rules.iter().find(|(_, r)| rule_allows(r, attrs)) {
        return Decision { allowed: true, reason: format!("RBAC: allowed by {source}") };
    }
    let reason = if errors.is_empty() { String::new() } else { format!("RBAC: {}", aggregate(&errors)) };
    Decision { allowed: false, reason }
}

/// `utilerrors.NewAggregate(errs).Error()`: one error as is, several in brackets.
fn aggregate(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

fn q(s: &str) -> String {
    apimachinery::go::quote(s)
}

/// kube-apiserver's 403 for a denied request (`responsewriters.ForbiddenStatusError`).
pub(crate) fn forbidden(user: &UserInfo, attrs: &Attributes, reason: &str) -> ApiError {
    let message = match &attrs.resource {
        None => format!("User {} cannot {} path {}", q(&user.name), attrs.verb, q(&attrs.path)),
        Some(r) => {
            let resource =
                if r.subresource.is_empty() { r.resource.clone() } else { format!("{}/{}", r.resource, r.subresource) };
            if r.namespace.is_empty() {
                format!(
                    "User {} cannot {} resource {} in API group {} at the cluster scope",
                    q(&user.name),
                    attrs.verb,
                    q(&resource),
                    q(&r.group)
                )
            } else {
                format!(
                    "User {} cannot {} resource {} in API group {} in the namespace {}",
                    q(&user.name),
                    attrs.verb,
                    q(&resource),
                    q(&r.group),
                    q(&r.namespace)
                )
            }
        }
    };
    let message = message.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    let why = if reason.is_empty() { message } else { format!("{message}: {reason}") };
    match &attrs.resource {
        Some(r) => ApiError::forbidden(&r.group, &r.resource, &r.name, why),
        None => ApiError::forbidden("", "", "", why),
    }
}

/// The rules of a SelfSubjectRulesReview status: resource and non-resource rules in the shape
/// of `ResourceRule` and `NonResourceRule`, and whether the list is incomplete.
pub(crate) fn rules_review(st: &State, user: &UserInfo, namespace: &str) -> Value {
    if !st.rbac || user.in_group(MASTERS) {
        return json!({
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": false,
        });
    }
    let (rules, errors) = rules_for(st, user, namespace);
    let (mut resource_rules, mut non_resource_rules) = (Vec::new(), Vec::new());
    for (_, r) in rules {
        let urls = strings(&r, "nonResourceURLs");
        if urls.is_empty() {
            let mut rr = json!({"verbs": strings(&r, "verbs")});
            for k in ["apiGroups", "resources", "resourceNames"] {
                if !strings(&r, k).is_empty() {
                    rr[k] = json!(strings(&r, k));
                }
            }
            resource_rules.push(rr);
        } else {
            non_resource_rules.push(json!({"verbs": strings(&r, "verbs"), "nonResourceURLs": urls}));
        }
    }
    let mut status = json!({
        "resourceRules": resource_rules,
        "nonResourceRules": non_resource_rules,
        "incomplete": !errors.is_empty(),
    });
    if !errors.is_empty() {
        status["evaluationError"] = json!(aggregate(&errors));
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn res(verb: &str, group: &str, resource: &str, sub: &str, name: &str) -> Attributes {
        Attributes {
            verb: verb.into(),
            resource: Some(ResourceAttributes {
                group: group.into(),
                resource: resource.into(),
                subresource: sub.into(),
                namespace: "ns".into(),
                name: name.into(),
            }),
            path: String::new(),
        }
    }

    #[rstest]
    #[case(json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}), res("get", "", "pods", "", "p"), true)]
    #[case(json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}), res("list", "", "pods", "", ""), false)]
    #[case(json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}), res("patch", "apps", "deployments", "scale", ""), true)]
    #[case(json!({"verbs": ["update"], "apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims/status"]}), res("update", "resource.k8s.io", "resourceclaims", "binding", "c"), false)]
    #[case(json!({"verbs": ["update"], "apiGroups": ["resource.k8s.io"], "resources": ["*/binding"]}), res("update", "resource.k8s.io", "resourceclaims", "binding", "c"), true)]
    #[case(json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}), res("get", "", "pods", "status", "p"), false)]
    #[case(json!({"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["a"]}), res("get", "", "configmaps", "", "b"), false)]
    #[case(json!({"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["a"]}), res("get", "", "configmaps", "", "a"), true)]
    #[case(json!({"verbs": ["get"], "nonResourceURLs": ["/apis/*"]}), Attributes { verb: "get".into(), resource: None, path: "/apis/apps/v1".into() }, true)]
    #[case(json!({"verbs": ["get"], "nonResourceURLs": ["/version"]}), Attributes { verb: "get".into(), resource: None, path: "/version/".into() }, false)]
    fn rules_match_as_rbac_does(#[case] rule: Value, #[case] attrs: Attributes, #[case] allowed: bool) {
        assert_eq!(rule_allows(&rule, &attrs), allowed);
    }

    #[test]
    fn forbidden_messages_name_verb_resource_subresource_and_scope() {
        let user = UserInfo::service_account("team", "ctl");
        let e = forbidden(&user, &res("update", "resource.k8s.io", "resourceclaims", "binding", "c"), "");
        assert_eq!(
            e.message,
            "resourceclaims.resource.k8s.io \"c\" is forbidden: User \"system:serviceaccount:team:ctl\" cannot update resource \"resourceclaims/binding\" in API group \"resource.k8s.io\" in the namespace \"ns\""
        );
        let mut cluster = res("list", "", "nodes", "", "");
        cluster.resource.as_mut().unwrap().namespace.clear();
        let e = forbidden(&user, &cluster, "RBAC: clusterrole.rbac.authorization.k8s.io \"gone\" not found");
        assert_eq!(
            e.message,
            "nodes is forbidden: User \"system:serviceaccount:team:ctl\" cannot list resource \"nodes\" in API group \"\" at the cluster scope: RBAC: clusterrole.rbac.authorization.k8s.io \"gone\" not found"
        );
        let path = Attributes { verb: "get".into(), resource: None, path: "/metrics".into() };
        assert_eq!(
            forbidden(&user, &path, "").message,
            "forbidden: User \"system:serviceaccount:team:ctl\" cannot get path \"/metrics\""
        );
    }
}
