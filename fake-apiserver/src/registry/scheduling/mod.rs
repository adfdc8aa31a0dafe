//! `scheduling.k8s.io/v1beta1` Workloads and PodGroups (KEP-4671, KEP-5729,
//! `pkg/apis/scheduling/validation`): exactly one scheduling policy, a gang's `minCount` at
//! least 1, at most 4 `resourceClaims` each naming a claim or a template, an immutable spec.
//! Gates as in 1.37: without `DRAWorkloadResourceClaims` the `resourceClaims` are dropped on
//! create; every PodGroup gets the `scheduling.k8s.io/podgroup-protection` finalizer on
//! create (the `PodGroupProtection` admission plugin).

use crate::error::StatusCause;
use crate::registry::features::FeatureGate;
use crate::registry::field::{self, Bad, Path};
use crate::registry::meta::{add_finalizer, condition_causes};
use crate::registry::{ResourceType, Strategy};
use apimachinery::validation::{dns1123_label_errors, dns1123_subdomain_errors};
use serde_json::Value;
use std::collections::BTreeSet;

/// The finalizer that holds a PodGroup while pods use it.
pub(crate) const PODGROUP_PROTECTION_FINALIZER: &str = "scheduling.k8s.io/podgroup-protection";
/// `MaxPodGroupResourceClaims`.
pub(crate) const MAX_RESOURCE_CLAIMS: usize = 4;

fn list<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn policy(out: &mut Vec<StatusCause>, p: Option<&Value>, path: &Path) {
    let p = p.unwrap_or(&Value::Null);
    let basic = p.get("basic").is_some_and(Value::is_object);
    let gang = p.get("gang").filter(|g| g.is_object());
    match (basic, gang) {
        (false, None) => out.push(field::invalid(path, "", "must specify one of: `basic`, `gang`")),
        (true, Some(_)) => out.push(field::invalid(
            path,
            Bad::Raw("{`basic`, `gang`}".into()),
            "must specify exactly one of: `basic`, `gang`",
        )),
        (false, Some(g)) => {
            let n = g.get("minCount").and_then(Value::as_i64).unwrap_or(0);
            if n == 0 {
                out.push(field::required(&path.child("gang").child("minCount"), ""));
            } else if n < 0 {
                out.push(field::invalid(&path.child("gang").child("minCount"), n, "must be greater than zero"));
            }
        }
        (true, None) => {}
    }
}

fn claims(out: &mut Vec<StatusCause>, items: &[Value], path: &Path) {
    // `maxItems` short-circuits: the items of a list too long go unvalidated.
    if items.len() > MAX_RESOURCE_CLAIMS {
        out.push(field::too_many(path, items.len(), MAX_RESOURCE_CLAIMS));
        return;
    }
    let mut names = BTreeSet::new();
    for (i, c) in items.iter().enumerate() {
        let at = path.index(i);
        let name = text(c, "name");
        if name.is_empty() {
            out.push(field::required(&at.child("name"), ""));
        } else {
            for msg in dns1123_label_errors(name) {
                out.push(field::invalid(&at.child("name"), name, &msg));
            }
            if !names.insert(name.to_string()) {
                out.push(field::duplicate(&at, Bad::Raw(c.to_string())));
            }
        }
        let by_name = !text(c, "resourceClaimName").is_empty();
        let by_template = !text(c, "resourceClaimTemplateName").is_empty();
        if by_name == by_template {
            out.push(field::invalid(
                &at,
                Bad::Raw(c.to_string()),
                "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`",
            ));
        }
    }
}

fn drop_claims_unless_enabled(rt: &ResourceType, spec: Option<&mut Value>) {
    if !rt.gates.enabled(FeatureGate::DraWorkloadResourceClaims)
        && let Some(m) = spec.and_then(Value::as_object_mut)
    {
        m.remove("resourceClaims");
    }
}

/// PodGroups.
#[derive(Debug)]
pub(crate) struct PodGroupStrategy;

fn podgroup_spec(obj: &Value) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let path = Path::root("spec");
    policy(&mut out, spec.get("schedulingPolicy"), &path.child("schedulingPolicy"));
    claims(&mut out, list(spec, "resourceClaims"), &path.child("resourceClaims"));
    if let Some(r) = spec.get("workloadRef").filter(|v| v.is_object()) {
        let rpath = path.child("workloadRef");
        for k in ["workloadName", "templateName"] {
            let v = text(r, k);
            if v.is_empty() {
                out.push(field::required(&rpath.child(k), ""));
            }
            let errs = if k == "workloadName" { dns1123_subdomain_errors(v) } else { dns1123_label_errors(v) };
            for msg in errs.into_iter().filter(|_| !v.is_empty()) {
                out.push(field::invalid(&rpath.child(k), v, &msg));
            }
        }
    }
    out
}

impl Strategy for PodGroupStrategy {
    /// `disruptionMode` defaults to `{single: {}}` (its `+default` tag; v1.37.2
    /// pkg/apis/scheduling/v1beta1/zz_generated.defaults.go SetObjectDefaults_PodGroup).
    fn default(&self, _rt: &ResourceType, obj: &mut Value) {
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut)
            && spec.get("disruptionMode").is_none_or(Value::is_null)
        {
            spec.insert("disruptionMode".into(), serde_json::json!({"single": {}}));
        }
    }

    fn prepare_for_create(&self, rt: &ResourceType, obj: &mut Value, _now: &str) {
        drop_claims_unless_enabled(rt, obj.get_mut("spec"));
        add_finalizer(obj, PODGROUP_PROTECTION_FINALIZER);
    }

    fn validate(&self, _rt: &ResourceType, obj: &Value) -> Vec<StatusCause> {
        podgroup_spec(obj)
    }

    fn validate_update(&self, _rt: &ResourceType, obj: &Value, old: &Value) -> Vec<StatusCause> {
        let mut out = podgroup_spec(obj);
        immutable_short_circuit(&mut out, obj, old, "workloadRef");
        immutable_short_circuit(&mut out, obj, old, "resourceClaims");
        let path = Path::root("spec").child("schedulingPolicy");
        policy_members_update(&mut out, &obj["spec"]["schedulingPolicy"], &old["spec"]["schedulingPolicy"], &path);
        out
    }

    /// `ValidatePodGroupStatusUpdate` (pkg/apis/scheduling/validation/validation.go at
    /// v1.37.2): the conditions (`metav1validation.ValidateConditions`), and claim statuses
    /// that name claims of the spec.
    fn validate_status_update(&self, _rt: &ResourceType, obj: &Value, _old: &Value) -> Vec<StatusCause> {
        let status = obj.get("status").unwrap_or(&Value::Null);
        let path = Path::root("status");
        let mut out = condition_causes(list(status, "conditions"), &path.child("conditions"));
        let claims = list(&obj["spec"], "resourceClaims");
        for (i, s) in list(status, "resourceClaimStatuses").iter().enumerate() {
            let name = text(s, "name");
            if !claims.iter().any(|c| text(c, "name") == name) {
                out.push(field::invalid(
                    &path.child("resourceClaimStatuses").index(i).child("name"),
                    name,
                    "must match the name of an entry in `spec.resourceClaims`",
                ));
            }
        }
        out
    }
}

/// Workloads.
#[derive(Debug)]
pub(crate) struct WorkloadStrategy;

fn workload_spec(obj: &Value) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let path = Path::root("spec");
    let templates = list(spec, "podGroupTemplates");
    if templates.is_empty() && list(spec, "compositePodGroupTemplates").is_empty() {
        out.push(field::invalid(&path, "", "must specify one of: `podGroupTemplates`, `compositePodGroupTemplates`"));
    }
    let mut names = BTreeSet::new();
    for (i, t) in templates.iter().enumerate() {
        let at = path.child("podGroupTemplates").index(i);
        let name = text(t, "name");
        if name.is_empty() {
            out.push(field::required(&at.child("name"), ""));
        } else {
            for msg in dns1123_label_errors(name) {
                out.push(field::invalid(&at.child("name"), name, &msg));
            }
            if !names.insert(name.to_string()) {
                out.push(field::duplicate(&at, Bad::Raw(t.to_string())));
            }
        }
        policy(&mut out, t.get("schedulingPolicy"), &at.child("schedulingPolicy"));
        claims(&mut out, list(t, "resourceClaims"), &at.child("resourceClaims"));
    }
    if let Some(r) = spec.get("controllerRef").filter(|v| v.is_object()) {
        for k in ["kind", "name"] {
            if text(r, k).is_empty() {
                out.push(field::required(&path.child("controllerRef").child(k), ""));
            }
        }
    }
    out
}

impl Strategy for WorkloadStrategy {
    fn prepare_for_create(&self, rt: &ResourceType, obj: &mut Value, _now: &str) {
        if !rt.gates.enabled(FeatureGate::DraWorkloadResourceClaims) {
            for t in obj
                .get_mut("spec")
                .and_then(|s| s.get_mut("podGroupTemplates"))
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                drop_claims_unless_enabled(rt, Some(t));
            }
        }
    }

    fn validate(&self, _rt: &ResourceType, obj: &Value) -> Vec<StatusCause> {
        workload_spec(obj)
    }

    fn validate_update(&self, _rt: &ResourceType, obj: &Value, old: &Value) -> Vec<StatusCause> {
        let mut out = workload_spec(obj);
        immutable_short_circuit(&mut out, obj, old, "controllerRef");
        // podGroupTemplates is a list-map keyed by name whose entries may be neither added nor
        // removed; either short-circuits the list (its items go unvalidated). Otherwise an
        // entry's scheduling policy members follow the old entry of the same name.
        let path = Path::root("spec").child("podGroupTemplates");
        let (new_t, old_t) = (list(&obj["spec"], "podGroupTemplates"), list(&old["spec"], "podGroupTemplates"));
        let named = |items: &[Value], t: &Value| items.iter().any(|o| text(o, "name") == text(t, "name"));
        let added: Vec<usize> = (0..new_t.len()).filter(|&i| !named(old_t, &new_t[i])).collect();
        let removed = old_t.iter().filter(|o| !named(new_t, o)).count();
        if !added.is_empty() || removed > 0 {
            let under = path.to_string();
            out.retain(|c| {
                !(c.field == under
                    || c.field.starts_with(&format!("{under}["))
                    || c.field.starts_with(&format!("{under}.")))
            });
            for i in added {
                out.push(field::forbidden(&path.index(i), "item may not be added"));
            }
            for _ in 0..removed {
                out.push(field::forbidden(&path, "item may not be removed"));
            }
            return out;
        }
        for (i, n) in new_t.iter().enumerate() {
            if let Some(o) = old_t.iter().find(|o| text(o, "name") == text(n, "name")) {
                let at = path.index(i).child("schedulingPolicy");
                policy_members_update(&mut out, &n["schedulingPolicy"], &o["schedulingPolicy"], &at);
            }
        }
        out
    }
}

/// Declarative validation's `+k8s:immutable` on `spec.<key>`: a change is reported with the
/// value printed as null, and short-circuits the errors under the field; a list's `maxItems`,
/// a short-circuit check of its own, is still reported after it.
fn immutable_short_circuit(out: &mut Vec<StatusCause>, obj: &Value, old: &Value, key: &str) {
    let (n, o) = (obj["spec"].get(key).unwrap_or(&Value::Null), old["spec"].get(key).unwrap_or(&Value::Null));
    if n == o {
        return;
    }
    let field_name = format!("spec.{key}");
    let (under, kept): (Vec<StatusCause>, Vec<StatusCause>) = std::mem::take(out).into_iter().partition(|c| {
        c.field == field_name
            || c.field.starts_with(&format!("{field_name}."))
            || c.field.starts_with(&format!("{field_name}["))
    });
    *out = kept;
    out.push(field::invalid(&Path::root("spec").child(key), Bad::Null, field::FIELD_IMMUTABLE));
    out.extend(under.into_iter().filter(|c| c.field == field_name && c.reason == "FieldValueTooMany"));
}

/// The members of a scheduling policy (`basic`, `gang`) may not be set or cleared on update.
fn policy_members_update(out: &mut Vec<StatusCause>, new: &Value, old: &Value, path: &Path) {
    for k in ["basic", "gang"] {
        let (n, o) = (new.get(k).filter(|v| !v.is_null()), old.get(k).filter(|v| !v.is_null()));
        let detail = match (n, o) {
            (Some(_), None) => field::FIELD_IMMUTABLE,
            (None, Some(_)) => "field cannot be cleared once set",
            _ => continue,
        };
        out.push(field::invalid(&path.child(k), Bad::Null, detail));
    }
}
