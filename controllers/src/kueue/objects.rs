//! The objects the Kueue reference controller reads and writes, as JSON: the `kueue.x-k8s.io`
//! v1beta2 kinds (from Kueue v0.19.2's CRDs, installed by [`install_crds`]) and the Ray jobs it
//! manages. A pass works on a [`World`]: a copy of every cached object that the pass's own
//! writes update, so later decisions in the same pass see them.

use futures::StreamExt;
use futures::stream::BoxStream;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Kueue v0.19.2's CRDs (v1beta2 only; pod templates preserved unknown), one manifest each.
pub const KUEUE_CRD_YAMLS: [&str; 6] = [
    include_str!("../crds/kueue.x-k8s.io_resourceflavors.yaml"),
    include_str!("../crds/kueue.x-k8s.io_clusterqueues.yaml"),
    include_str!("../crds/kueue.x-k8s.io_localqueues.yaml"),
    include_str!("../crds/kueue.x-k8s.io_workloadpriorityclasses.yaml"),
    include_str!("../crds/kueue.x-k8s.io_workloads.yaml"),
    include_str!("../crds/kueue.x-k8s.io_cohorts.yaml"),
];

/// The Kueue CRDs, parsed from [`KUEUE_CRD_YAMLS`] (constant manifests a unit test parses, so
/// none is dropped at run time).
pub fn kueue_crds() -> &'static [CustomResourceDefinition] {
    static PARSED: std::sync::LazyLock<Vec<CustomResourceDefinition>> =
        std::sync::LazyLock::new(|| KUEUE_CRD_YAMLS.iter().filter_map(|y| serde_saphyr::from_str(y).ok()).collect());
    &PARSED
}

/// Installs the Kueue CRDs and waits until they are Established.
pub async fn install_crds(client: &kube::Client) -> Result<(), crate::crds::CrdInstallError> {
    crate::crds::install(client, kueue_crds()).await
}

/// The kinds a pass reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// `kueue.x-k8s.io/v1beta2` ResourceFlavor (cluster-scoped).
    ResourceFlavor,
    /// `kueue.x-k8s.io/v1beta2` ClusterQueue (cluster-scoped).
    ClusterQueue,
    /// `kueue.x-k8s.io/v1beta2` Cohort (cluster-scoped).
    Cohort,
    /// `kueue.x-k8s.io/v1beta2` LocalQueue.
    LocalQueue,
    /// `kueue.x-k8s.io/v1beta2` WorkloadPriorityClass (cluster-scoped).
    WorkloadPriorityClass,
    /// `kueue.x-k8s.io/v1beta2` Workload.
    Workload,
    /// `ray.io/v1` RayCluster.
    RayCluster,
    /// `ray.io/v1` RayService.
    RayService,
    /// `ray.io/v1` RayJob.
    RayJob,
    /// `v1` Pod, only those with the `kueue.x-k8s.io/podset` label (the elastic ungater's).
    Pod,
}

impl Kind {
    /// Every kind, in the order a pass lists them.
    pub const ALL: [Kind; 10] = [
        Kind::ResourceFlavor,
        Kind::ClusterQueue,
        Kind::Cohort,
        Kind::LocalQueue,
        Kind::WorkloadPriorityClass,
        Kind::Workload,
        Kind::RayCluster,
        Kind::RayService,
        Kind::RayJob,
        Kind::Pod,
    ];

    /// The API resource of the kind.
    pub fn resource(self) -> ApiResource {
        let (group, version, kind, plural) = match self {
            Kind::ResourceFlavor => ("kueue.x-k8s.io", "v1beta2", "ResourceFlavor", "resourceflavors"),
            Kind::ClusterQueue => ("kueue.x-k8s.io", "v1beta2", "ClusterQueue", "clusterqueues"),
            Kind::Cohort => ("kueue.x-k8s.io", "v1beta2", "Cohort", "cohorts"),
            Kind::LocalQueue => ("kueue.x-k8s.io", "v1beta2", "LocalQueue", "localqueues"),
            Kind::WorkloadPriorityClass => {
                ("kueue.x-k8s.io", "v1beta2", "WorkloadPriorityClass", "workloadpriorityclasses")
            }
            Kind::Workload => ("kueue.x-k8s.io", "v1beta2", "Workload", "workloads"),
            Kind::RayCluster => ("ray.io", "v1", "RayCluster", "rayclusters"),
            Kind::RayService => ("ray.io", "v1", "RayService", "rayservices"),
            Kind::RayJob => ("ray.io", "v1", "RayJob", "rayjobs"),
            Kind::Pod => ("", "v1", "Pod", "pods"),
        };
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
    }

    /// Whether objects of the kind live in a namespace.
    pub fn namespaced(self) -> bool {
        !matches!(self, Kind::ResourceFlavor | Kind::ClusterQueue | Kind::Cohort | Kind::WorkloadPriorityClass)
    }

    /// The API of the kind in `ns` (all namespaces for `None` or a cluster-scoped kind).
    pub fn api(self, client: &kube::Client, ns: Option<&str>) -> Api<DynamicObject> {
        let ar = self.resource();
        match ns {
            Some(ns) if self.namespaced() => Api::namespaced_with(client.clone(), ns, &ar),
            _ => Api::all_with(client.clone(), &ar),
        }
    }
}

/// A cache of every object of `kind`, and the stream that keeps it current.
pub(crate) fn cache(client: &kube::Client, kind: Kind) -> (Store<DynamicObject>, BoxStream<'static, ()>) {
    let ar = kind.resource();
    let writer = reflector::store::Writer::new(ar.clone());
    let store = writer.as_reader();
    let api = Api::<DynamicObject>::all_with(client.clone(), &ar);
    // The ungater only looks at pods Kueue stamped at admission (`startJob` sets the PodSet
    // label with the slice annotations); a pod without the label has no PodSet to be granted.
    let config = match kind {
        Kind::Pod => watcher::Config::default().labels(super::PODSET_LABEL),
        _ => watcher::Config::default(),
    };
    let stream = watcher(api, config).default_backoff().reflect(writer).map(|_| ()).boxed();
    (store, stream)
}

/// `(namespace, name)`; the namespace is empty for cluster-scoped objects.
pub type Key = (String, String);

/// The objects one pass works on, as JSON, by kind and key (sorted: namespace, then name, which
/// is the order a real API server lists them in).
#[derive(Debug, Default, Clone)]
pub struct World {
    objects: BTreeMap<Kind, BTreeMap<Key, Value>>,
}

impl World {
    /// A world from the caches' contents.
    pub fn from_stores(stores: &[(Kind, Store<DynamicObject>)]) -> Self {
        let mut w = World::default();
        for (kind, store) in stores {
            for obj in store.state() {
                if let Ok(v) = serde_json::to_value(&*obj) {
                    w.put(*kind, v);
                }
            }
        }
        w
    }

    /// Stores (or replaces) `obj`.
    pub fn put(&mut self, kind: Kind, obj: Value) {
        let key = key_of(&obj);
        self.objects.entry(kind).or_default().insert(key, obj);
    }

    /// Forgets the object at `key`.
    pub fn remove(&mut self, kind: Kind, key: &Key) {
        if let Some(m) = self.objects.get_mut(&kind) {
            m.remove(key);
        }
    }

    /// Every object of `kind`, in list order.
    pub fn all(&self, kind: Kind) -> Vec<&Value> {
        self.objects.get(&kind).map(|m| m.values().collect()).unwrap_or_default()
    }

    /// The object of `kind` at `key`.
    pub fn get(&self, kind: Kind, key: &Key) -> Option<&Value> {
        self.objects.get(&kind).and_then(|m| m.get(key))
    }
}

/// The key of an object.
pub fn key_of(obj: &Value) -> Key {
    (str_at(obj, "/metadata/namespace").to_string(), str_at(obj, "/metadata/name").to_string())
}

/// The string at a JSON pointer, `""` when absent.
pub fn str_at<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// The label `key` of an object.
pub fn label<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.pointer("/metadata/labels").and_then(|l| l.get(key)).and_then(Value::as_str)
}

/// The annotation `key` of an object.
pub fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.pointer("/metadata/annotations").and_then(|l| l.get(key)).and_then(Value::as_str)
}

/// The object's controller owner reference, if any.
pub fn controller_owner(obj: &Value) -> Option<&Value> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .and_then(|refs| refs.iter().find(|r| r.get("controller").and_then(Value::as_bool) == Some(true)))
}

/// Whether the object carries a deletion timestamp.
pub fn deleting(obj: &Value) -> bool {
    obj.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null())
}

/// The condition `type_` of an object's `status.conditions`.
pub fn condition<'a>(obj: &'a Value, type_: &str) -> Option<&'a Value> {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c.get("type").and_then(Value::as_str) == Some(type_)))
}

/// Whether the condition `type_` is True.
pub fn is_true(obj: &Value, type_: &str) -> bool {
    condition(obj, type_).and_then(|c| c.get("status")).and_then(Value::as_str) == Some("True")
}

/// `apimeta.SetStatusCondition`: sets `cond` in `conditions`, keeping the old
/// `lastTransitionTime` when the status did not change. Returns whether anything changed.
pub fn set_condition(conditions: &mut Vec<Value>, cond: Value) -> bool {
    let type_ = cond.get("type").cloned();
    match conditions.iter_mut().find(|c| c.get("type") == type_.as_ref()) {
        None => {
            conditions.push(cond);
            true
        }
        Some(existing) => {
            let mut next = cond;
            if existing.get("status") == next.get("status") {
                next["lastTransitionTime"] = existing.get("lastTransitionTime").cloned().unwrap_or(Value::Null);
            }
            if *existing == next {
                false
            } else {
                *existing = next;
                true
            }
        }
    }
}

/// A condition as Kueue writes it.
pub fn new_condition(type_: &str, status: bool, reason: &str, message: &str, generation: i64, now: &str) -> Value {
    json!({
        "type": type_,
        "status": if status { "True" } else { "False" },
        "observedGeneration": generation,
        "lastTransitionTime": now,
        "reason": reason,
        "message": message,
    })
}

/// `resetActiveCondition`: a True condition `type_` becomes False with `reason` and the message
/// "Previously: <old message>".
pub fn reset_active_condition(conditions: &mut Vec<Value>, type_: &str, reason: &str, generation: i64, now: &str) {
    let prev = conditions.iter().find(|c| c.get("type").and_then(Value::as_str) == Some(type_)).cloned();
    if let Some(prev) = prev
        && prev.get("status").and_then(Value::as_str) == Some("True")
    {
        let message = format!("Previously: {}", str_at(&prev, "/message"));
        set_condition(conditions, new_condition(type_, false, reason, &message, generation, now));
    }
}

/// The object's `metadata.generation` (0 when absent).
pub fn generation(obj: &Value) -> i64 {
    obj.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kueue_crds_parse_and_serve_v1beta2() {
        let crds = kueue_crds();
        assert_eq!(crds.len(), 6);
        for crd in crds {
            assert_eq!(crd.spec.group, "kueue.x-k8s.io");
            assert_eq!(crd.spec.versions.len(), 1);
            assert_eq!(crd.spec.versions[0].name, "v1beta2");
        }
    }

    #[test]
    fn a_condition_keeps_its_transition_time_while_its_status_stays() {
        let mut cs = vec![new_condition("QuotaReserved", false, "Pending", "a", 1, "t0")];
        assert!(set_condition(&mut cs, new_condition("QuotaReserved", false, "Pending", "b", 1, "t1")));
        assert_eq!(cs[0]["lastTransitionTime"], "t0");
        assert!(!set_condition(&mut cs, new_condition("QuotaReserved", false, "Pending", "b", 1, "t2")));
        assert!(set_condition(&mut cs, new_condition("QuotaReserved", true, "QuotaReserved", "c", 1, "t3")));
        assert_eq!(cs[0]["lastTransitionTime"], "t3");
    }
}
