//! `rbac.authorization.k8s.io`: Roles, ClusterRoles and their bindings
//! (`pkg/apis/rbac/validation`): rules need verbs, resource rules need API groups and
//! resources, namespaced roles have no non-resource URLs; bindings name a Role or ClusterRole
//! of the RBAC group, subjects are Users, Groups or ServiceAccounts, and `roleRef` is immutable.

pub(crate) mod authorizer;
pub(crate) mod bootstrap;

use crate::error::StatusCause;
use crate::registry::field::{self, Path};
use crate::registry::meta::label_selector_causes;
use crate::registry::{NameRule, ResourceType, Strategy};
use apimachinery::validation::{dns1123_subdomain_errors, label_key_errors};
use serde_json::Value;

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

fn list<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
}

/// Roles (`namespaced`) and ClusterRoles.
#[derive(Debug)]
pub(crate) struct RoleStrategy {
    /// A Role (no non-resource URLs) rather than a ClusterRole.
    pub namespaced: bool,
}

impl Strategy for RoleStrategy {
    /// RBAC names are path segments only (ValidateRBACName).
    fn name_rule(&self) -> NameRule {
        NameRule::PathSegment
    }

    fn allow_create_on_update(&self) -> bool {
        true
    }

    fn validate(&self, _rt: &ResourceType, obj: &Value) -> Vec<StatusCause> {
        let mut out = Vec::new();
        for (i, rule) in list(obj, "rules").iter().enumerate() {
            let at = Path::root("rules").index(i);
            if list(rule, "verbs").is_empty() {
                out.push(field::required(&at.child("verbs"), "verbs must contain at least one value"));
            }
            let urls = list(rule, "nonResourceURLs");
            if !urls.is_empty() {
                if self.namespaced {
                    out.push(field::invalid(
                        &at.child("nonResourceURLs"),
                        crate::registry::field::Bad::Raw(format!(
                            "{:?}",
                            urls.iter().filter_map(Value::as_str).collect::<Vec<_>>()
                        )),
                        "namespaced rules cannot apply to non-resource URLs",
                    ));
                }
                if !list(rule, "apiGroups").is_empty() || !list(rule, "resources").is_empty() {
                    out.push(field::invalid(
                        &at.child("nonResourceURLs"),
                        crate::registry::field::Bad::Raw(format!(
                            "{:?}",
                            urls.iter().filter_map(Value::as_str).collect::<Vec<_>>()
                        )),
                        "rules cannot apply to both regular resources and non-resource URLs",
                    ));
                }
                continue;
            }
            if list(rule, "apiGroups").is_empty() {
                out.push(field::required(&at.child("apiGroups"), "resource rules must supply at least one api group"));
            }
            if list(rule, "resources").is_empty() {
                out.push(field::required(&at.child("resources"), "resource rules must supply at least one resource"));
            }
        }
        if let Some(agg) = obj.get("aggregationRule").filter(|v| v.is_object()) {
            if list(agg, "clusterRoleSelectors").is_empty() {
                out.push(field::required(
                    &Path::root("aggregationRule").child("clusterRoleSelectors"),
                    "at least one clusterRoleSelector required if aggregationRule is non-nil",
                ));
            }
            for (i, sel) in list(agg, "clusterRoleSelectors").iter().enumerate() {
                out.extend(label_selector_causes(
                    sel,
                    &Path::root("aggregationRule").child("clusterRoleSelectors").index(i),
                ));
            }
        }
        out
    }
}

/// RoleBindings (`namespaced`) and ClusterRoleBindings.
#[derive(Debug)]
pub(crate) struct BindingStrategy {
    /// A RoleBinding (may name a Role) rather than a ClusterRoleBinding.
    pub namespaced: bool,
}

impl Strategy for BindingStrategy {
    /// RBAC names are path segments only (ValidateRBACName).
    fn name_rule(&self) -> NameRule {
        NameRule::PathSegment
    }

    fn allow_create_on_update(&self) -> bool {
        true
    }

    fn validate(&self, _rt: &ResourceType, obj: &Value) -> Vec<StatusCause> {
        let mut out = Vec::new();
        let role_ref = obj.get("roleRef").unwrap_or(&Value::Null);
        let rpath = Path::root("roleRef");
        let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
        if text(role_ref, "apiGroup") != RBAC_GROUP {
            out.push(field::not_supported(&rpath.child("apiGroup"), text(role_ref, "apiGroup"), &[RBAC_GROUP]));
        }
        let kinds: &[&str] = if self.namespaced { &["Role", "ClusterRole"] } else { &["ClusterRole"] };
        let kind = text(role_ref, "kind");
        if !kinds.contains(&kind.as_str()) {
            out.push(field::not_supported(&rpath.child("kind"), kind, kinds));
        }
        let name = text(role_ref, "name");
        if name.is_empty() {
            out.push(field::required(&rpath.child("name"), ""));
        } else {
            for msg in dns1123_subdomain_errors(&name).into_iter().filter(|_| name.contains('/') || name.contains('%'))
            {
                out.push(field::invalid(&rpath.child("name"), name.as_str(), &msg));
            }
        }
        for (i, s) in list(obj, "subjects").iter().enumerate() {
            let at = Path::root("subjects").index(i);
            let name = text(s, "name");
            if name.is_empty() {
                out.push(field::required(&at.child("name"), ""));
            }
            match text(s, "kind").as_str() {
                "ServiceAccount" => {
                    if !name.is_empty() {
                        for msg in dns1123_subdomain_errors(&name) {
                            out.push(field::invalid(&at.child("name"), name.as_str(), &msg));
                        }
                    }
                    let group = text(s, "apiGroup");
                    if !group.is_empty() {
                        out.push(field::not_supported(&at.child("apiGroup"), group, &[""]));
                    }
                    if !self.namespaced && text(s, "namespace").is_empty() {
                        out.push(field::required(&at.child("namespace"), ""));
                    }
                }
                "User" | "Group" => {
                    let group = text(s, "apiGroup");
                    if group != RBAC_GROUP {
                        out.push(field::not_supported(&at.child("apiGroup"), group, &[RBAC_GROUP]));
                    }
                }
                other => out.push(field::not_supported(&at.child("kind"), other, &["ServiceAccount", "User", "Group"])),
            }
            let _ = label_key_errors;
        }
        out
    }

    fn validate_update(&self, rt: &ResourceType, obj: &Value, old: &Value) -> Vec<StatusCause> {
        let mut out = self.validate(rt, obj);
        if obj.get("roleRef") != old.get("roleRef") {
            out.push(field::invalid(
                &Path::root("roleRef"),
                crate::registry::field::Bad::Raw(obj["roleRef"].to_string()),
                "cannot change roleRef",
            ));
        }
        out
    }
}
