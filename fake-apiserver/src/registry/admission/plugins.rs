//! kube-apiserver's own mutating admission plugins of its default set that this server models,
//! in their order (`pkg/kubeapiserver/options/plugins.go`), before the admission policies and
//! webhooks: `Priority` (`plugin/pkg/admission/priority`) and `DefaultTolerationSeconds`
//! (`plugin/pkg/admission/defaulttolerationseconds`), on pods, at
//! <https://github.com/kubernetes/kubernetes/tree/v1.37.2/plugin/pkg/admission>. envtest keeps
//! them too (it turns off only `ServiceAccount`), so a Pod reads back with its `priority`,
//! `preemptionPolicy` and the two `NoExecute` tolerations, and operators that hash a pod's
//! shape (Kueue's pod groups) see what they see upstream.

use super::webhook::Operation;
use crate::error::{ApiError, ApiResult};
use crate::registry::{ResourceType, State};
use crate::storage::StorageKey;
use serde_json::{Value, json};
use std::sync::LazyLock;

static PRIORITY_CLASSES: LazyLock<StorageKey> =
    LazyLock::new(|| StorageKey::new("scheduling.k8s.io", "priorityclasses"));

/// Runs the plugins on a create or update of the main resource.
pub(crate) fn admit(
    st: &State,
    rt: &ResourceType,
    operation: Operation,
    obj: &mut Value,
    old: Option<&Value>,
) -> ApiResult<()> {
    if rt.group == "scheduling.k8s.io" && rt.plural == "podgroups" && operation == Operation::Create {
        return pod_group_priority(st, obj);
    }
    if !(rt.group.is_empty() && rt.plural == "pods") || operation == Operation::Delete {
        return Ok(());
    }
    priority(st, operation, obj, old)?;
    default_toleration_seconds(obj);
    Ok(())
}

/// The class a create names (or the global default one) as (name, value, preemption policy);
/// none named and no default: 0 and `PreemptLowerPriority` (`establishPriority`). A name no
/// class has is Forbidden on `resource`.
fn established_priority(st: &State, resource: &str, name: &str, class_name: &str) -> ApiResult<(String, i64, Value)> {
    let classes: Vec<std::sync::Arc<Value>> =
        st.store.collection(&PRIORITY_CLASSES).into_iter().flat_map(|c| c.values()).map(|o| o.shared_value()).collect();
    if class_name.is_empty() {
        // The global default with the lowest value, if several.
        return Ok(
            match classes.iter().filter(|c| c["globalDefault"] == json!(true)).min_by_key(|c| c["value"].as_i64()) {
                Some(c) => (
                    c["metadata"]["name"].as_str().unwrap_or("").to_string(),
                    c["value"].as_i64().unwrap_or(0),
                    c["preemptionPolicy"].clone(),
                ),
                None => (String::new(), 0, json!("PreemptLowerPriority")),
            },
        );
    }
    let c = classes.iter().find(|c| c["metadata"]["name"].as_str() == Some(class_name)).ok_or_else(|| {
        ApiError::forbidden("", resource, name, format!("no PriorityClass with name {class_name} was found"))
    })?;
    Ok((class_name.to_string(), c["value"].as_i64().unwrap_or(0), c["preemptionPolicy"].clone()))
}

/// `Priority`'s `admitPodGroup` (a create only): the pod group's priority is its class's, and
/// one it sets itself must be that. PodGroupPreemptionPolicy is off in v1.37, so the preemption
/// policy is left as it is.
fn pod_group_priority(st: &State, obj: &mut Value) -> ApiResult<()> {
    let name = obj["metadata"]["name"].as_str().unwrap_or("").to_string();
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else { return Ok(()) };
    let class_name = spec.get("priorityClassName").and_then(Value::as_str).unwrap_or("").to_string();
    let (class_name, value, _) = established_priority(st, "podgroups.scheduling.k8s.io", &name, &class_name)?;
    if let Some(given) = spec.get("priority").and_then(Value::as_i64)
        && given != value
    {
        return Err(ApiError::forbidden(
            "scheduling.k8s.io",
            "podgroups",
            &name,
            format!(
                "priority set in the pod group ({given}) must match the priority computed ({value}) based on the priority class set in the spec"
            ),
        ));
    }
    spec.insert("priority".into(), json!(value));
    if !class_name.is_empty() {
        spec.insert("priorityClassName".into(), json!(class_name));
    }
    Ok(())
}

/// `Priority`'s `admitPod`: a create takes its priority and preemption policy from its
/// PriorityClass (the global default one without a name, else 0 and `PreemptLowerPriority`); an
/// update keeps the old ones the new object lacks.
fn priority(st: &State, operation: Operation, obj: &mut Value, old: Option<&Value>) -> ApiResult<()> {
    let name = obj["metadata"]["name"].as_str().unwrap_or("").to_string();
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else { return Ok(()) };
    if operation == Operation::Update {
        for k in ["priority", "preemptionPolicy"] {
            if spec.get(k).is_none_or(Value::is_null)
                && let Some(v) = old.map(|o| &o["spec"][k]).filter(|v| !v.is_null())
            {
                spec.insert(k.into(), v.clone());
            }
        }
        return Ok(());
    }
    let forbidden = |why: String| ApiError::forbidden("", "pods", &name, why);
    let class_name = spec.get("priorityClassName").and_then(Value::as_str).unwrap_or("").to_string();
    let (class_name, value, policy) = established_priority(st, "pods", &name, &class_name)?;
    if !class_name.is_empty() {
        spec.insert("priorityClassName".into(), json!(class_name));
    }
    if let Some(given) = spec.get("priority").and_then(Value::as_i64)
        && given != value
    {
        return Err(forbidden(format!(
            "the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {value} from the given PriorityClass name"
        )));
    }
    spec.insert("priority".into(), json!(value));
    if let Some(policy) = policy.as_str() {
        if let Some(given) = spec.get("preemptionPolicy").and_then(Value::as_str)
            && given != policy
        {
            return Err(forbidden(format!(
                "the string value of PreemptionPolicy ({given}) must not be provided in pod spec; priority admission controller computed {policy} from the given PriorityClass name"
            )));
        }
        spec.insert("preemptionPolicy".into(), json!(policy));
    }
    Ok(())
}

/// `DefaultTolerationSeconds`: a pod that does not tolerate `node.kubernetes.io/not-ready` or
/// `node.kubernetes.io/unreachable` `NoExecute` taints tolerates them for 300 s.
fn default_toleration_seconds(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else { return };
    let tolerations = spec.entry("tolerations").or_insert_with(|| json!([]));
    if tolerations.is_null() {
        *tolerations = json!([]);
    }
    let Some(list) = tolerations.as_array_mut() else { return };
    let tolerates = |key: &str| {
        list.iter().any(|t| {
            let k = t["key"].as_str().unwrap_or("");
            let effect = t["effect"].as_str().unwrap_or("");
            (k == key || k.is_empty()) && (effect == "NoExecute" || effect.is_empty())
        })
    };
    let missing: Vec<&str> = ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"]
        .into_iter()
        .filter(|k| !tolerates(k))
        .collect();
    for key in missing {
        list.push(json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}));
    }
}

/// The PriorityClasses kube-apiserver creates at start (`scheduling/bootstrap-system-priority-classes`,
/// `SystemPriorityClasses` of `pkg/apis/scheduling/v1/helpers.go`).
pub(crate) fn system_priority_classes() -> [Value; 2] {
    let class = |name: &str, value: i64, description: &str| {
        json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
               "value": value, "description": description})
    };
    [
        class(
            "system-node-critical",
            2_000_001_000,
            "Used for system critical pods that must not be moved from their current node.",
        ),
        class(
            "system-cluster-critical",
            2_000_000_000,
            "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
        ),
    ]
}
