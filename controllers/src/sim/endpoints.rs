//! The EndpointSlice controller of kube-controller-manager, simplified: one IPv4 slice per
//! Service with a selector, listing the selected pods that have an IP.
//!
//! For every such pod the slice has an endpoint with the pod's IP, `nodeName`, a `targetRef` to
//! the pod (with its uid: KubeRay counts serve endpoints by it) and the conditions
//! `ready` (the pod is Ready and not terminating, or the Service publishes not-ready addresses),
//! `serving` (the pod is Ready) and `terminating`. Ports are the Service's, with each target
//! port resolved against the pod's named container ports. Slices are named
//! `<service>-<suffix>` (generateName), labelled `kubernetes.io/service-name` and
//! `endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io`, and owned by their
//! Service, so they go with it. Only changes are written.

use super::SimError;
use apimachinery::LabelSelector;
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, PostParams};
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The label naming a slice's Service.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";
/// The label naming who manages a slice.
pub const MANAGED_BY_LABEL: &str = "endpointslice.kubernetes.io/managed-by";
/// kube-controller-manager's value of [`MANAGED_BY_LABEL`].
pub const MANAGED_BY: &str = "endpointslice-controller.k8s.io";

/// The simulated EndpointSlice controller.
pub struct EndpointSliceController {
    client: kube::Client,
}

fn pod_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn resolve_port(pod: &Pod, target: Option<&IntOrString>, port: i32) -> Option<i32> {
    match target {
        None => Some(port),
        Some(IntOrString::Int(p)) => Some(*p),
        Some(IntOrString::String(name)) => pod
            .spec
            .as_ref()?
            .containers
            .iter()
            .flat_map(|c| c.ports.iter().flatten())
            .find(|p| p.name.as_deref() == Some(name.as_str()))
            .map(|p| p.container_port),
    }
}

/// The endpoints and ports a slice of `svc` should hold (`None` for a Service without selector).
pub(crate) fn desired(svc: &Service, pods: &[Arc<Pod>]) -> Option<(Vec<Value>, Vec<Value>)> {
    let spec = svc.spec.as_ref()?;
    let selector_map = spec.selector.as_ref().filter(|s| !s.is_empty())?;
    let selector_text: Vec<String> = selector_map.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let selector = LabelSelector::parse(&selector_text.join(",")).ok()?;
    let ns = svc.namespace().unwrap_or_default();
    let publish_not_ready = spec.publish_not_ready_addresses == Some(true);
    let mut selected: Vec<&Arc<Pod>> = pods
        .iter()
        .filter(|p| p.namespace().as_deref() == Some(ns.as_str()) && selector.matches(p.labels()))
        .filter(|p| p.status.as_ref().and_then(|s| s.pod_ip.as_ref()).is_some())
        .filter(|p| !matches!(p.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Succeeded" | "Failed")))
        .collect();
    selected.sort_by_key(|p| p.name_any());
    let endpoints: Vec<Value> = selected
        .iter()
        .map(|p| {
            let terminating = p.metadata.deletion_timestamp.is_some();
            let ready = pod_ready(p);
            let ip = p.status.as_ref().and_then(|s| s.pod_ip.clone()).unwrap_or_default();
            json!({
                "addresses": [ip],
                "conditions": {"ready": (ready && !terminating) || publish_not_ready, "serving": ready, "terminating": terminating},
                "nodeName": p.spec.as_ref().and_then(|s| s.node_name.clone()),
                "targetRef": {"kind": "Pod", "name": p.name_any(), "namespace": ns, "uid": p.metadata.uid.clone().unwrap_or_default()},
            })
        })
        .collect();
    let first = selected.first();
    let ports: Vec<Value> = spec
        .ports
        .iter()
        .flatten()
        .map(|p| {
            let number = first.and_then(|pod| resolve_port(pod, p.target_port.as_ref(), p.port)).unwrap_or(p.port);
            json!({"name": p.name.clone().unwrap_or_default(), "port": number, "protocol": p.protocol.clone().unwrap_or_else(|| "TCP".into())})
        })
        .collect();
    Some((endpoints, ports))
}

impl EndpointSliceController {
    /// A controller writing through `client`.
    pub fn new(client: kube::Client) -> Self {
        Self { client }
    }

    /// Watches services, pods and slices and keeps the slices current until a watch ends; drop
    /// the future to stop it.
    pub async fn run(self) -> Result<(), SimError> {
        let (pods, pod_writer) = reflector::store::<Pod>();
        let (services, svc_writer) = reflector::store::<Service>();
        let (slices, slice_writer) = reflector::store::<EndpointSlice>();
        let streams = [
            super::reflect_into(&self.client, watcher::Config::default(), pod_writer),
            super::reflect_into(&self.client, watcher::Config::default(), svc_writer),
            super::reflect_into(
                &self.client,
                watcher::Config::default().labels(&format!("{MANAGED_BY_LABEL}={MANAGED_BY}")),
                slice_writer,
            ),
        ];
        let mut events = futures::stream::select_all(streams);
        let mut retry: Option<tokio::time::Instant> = None;
        loop {
            tokio::select! {
                next = events.next() => {
                    if next.is_none() {
                        return Err(SimError::WatchEnded("pod, service or EndpointSlice"));
                    }
                    while let Some(Some(())) = events.next().now_or_never() {}
                }
                _ = tokio::time::sleep_until(retry.unwrap_or_else(tokio::time::Instant::now)), if retry.is_some() => {}
            }
            if !(super::scheduler::store_ready(&pods)
                && super::scheduler::store_ready(&services)
                && super::scheduler::store_ready(&slices))
            {
                continue;
            }
            retry = match super::tolerate("endpoints", self.pass(&pods, &services, &slices).await)? {
                Some(()) => None,
                None => Some(tokio::time::Instant::now() + super::RETRY_AFTER),
            };
        }
    }

    async fn pass(
        &self,
        pods: &Store<Pod>,
        services: &Store<Service>,
        slices: &Store<EndpointSlice>,
    ) -> Result<(), SimError> {
        let all_pods = pods.state();
        let mut by_service: BTreeMap<(String, String), Vec<Arc<EndpointSlice>>> = BTreeMap::new();
        for s in slices.state() {
            if let Some(name) = s.labels().get(SERVICE_NAME_LABEL) {
                by_service.entry((s.namespace().unwrap_or_default(), name.clone())).or_default().push(s);
            }
        }
        let mut services: Vec<Arc<Service>> = services.state();
        services.sort_by_key(|s| (s.namespace(), s.name_any()));
        for svc in services {
            let ns = svc.namespace().unwrap_or_default();
            let name = svc.name_any();
            let existing = by_service.remove(&(ns.clone(), name.clone())).unwrap_or_default();
            let Some((endpoints, ports)) = desired(&svc, &all_pods) else { continue };
            if svc.metadata.deletion_timestamp.is_some() {
                continue;
            }
            let api: Api<EndpointSlice> = Api::namespaced(self.client.clone(), &ns);
            let body = |resource_version: Option<String>, slice_name: Option<String>| {
                json!({
                    "apiVersion": "discovery.k8s.io/v1",
                    "kind": "EndpointSlice",
                    "metadata": {
                        "name": slice_name,
                        "generateName": format!("{name}-"),
                        "namespace": ns,
                        "resourceVersion": resource_version,
                        "labels": {SERVICE_NAME_LABEL: name, MANAGED_BY_LABEL: MANAGED_BY},
                        "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": name,
                            "uid": svc.metadata.uid.clone().unwrap_or_default(), "controller": true, "blockOwnerDeletion": true}],
                    },
                    "addressType": "IPv4",
                    "endpoints": endpoints,
                    "ports": ports,
                })
            };
            match existing.first() {
                None => {
                    let slice: EndpointSlice = serde_json::from_value(body(None, None))
                        .map_err(|e| SimError::Invalid(format!("EndpointSlice for {ns}/{name}: {e}")))?;
                    match api.create(&PostParams::default(), &slice).await {
                        Ok(_) => {}
                        Err(kube::Error::Api(s)) if s.code == 404 || s.code == 403 || s.code == 409 => {}
                        Err(e) => return Err(SimError::api(format!("creating the EndpointSlice of {ns}/{name}"))(e)),
                    }
                }
                Some(current) => {
                    let now = serde_json::to_value(current.as_ref()).unwrap_or(Value::Null);
                    let same = now.get("endpoints").cloned().unwrap_or(json!([])) == json!(endpoints)
                        && now.get("ports").cloned().unwrap_or(json!([])) == json!(ports);
                    if !same {
                        let slice: EndpointSlice =
                            serde_json::from_value(body(current.resource_version(), Some(current.name_any())))
                                .map_err(|e| SimError::Invalid(format!("EndpointSlice for {ns}/{name}: {e}")))?;
                        match api.replace(&current.name_any(), &PostParams::default(), &slice).await {
                            Ok(_) => {}
                            Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => {}
                            Err(e) => {
                                return Err(SimError::api(format!("updating the EndpointSlice of {ns}/{name}"))(e));
                            }
                        }
                    }
                    for extra in existing.iter().skip(1) {
                        let _ = api.delete(&extra.name_any(), &DeleteParams::default()).await;
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, labels: Value, ready: bool, ip: Option<&str>) -> Arc<Pod> {
        Arc::new(
            serde_json::from_value(json!({
                "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"), "labels": labels},
                "spec": {"nodeName": "n1", "containers": [{"name": "c", "ports": [{"name": "serve", "containerPort": 8000}]}]},
                "status": {"phase": "Running", "podIP": ip,
                           "conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"}}]},
            }))
            .unwrap(),
        )
    }

    #[test]
    fn slices_list_selected_pods_with_readiness_and_resolved_ports() {
        let svc: Service = serde_json::from_value(json!({
            "metadata": {"name": "s", "namespace": "default"},
            "spec": {"selector": {"app": "a"}, "ports": [{"name": "serve", "port": 80, "targetPort": "serve"}]},
        }))
        .unwrap();
        let pods = vec![
            pod("b", json!({"app": "a"}), false, Some("10.0.0.2")),
            pod("a", json!({"app": "a"}), true, Some("10.0.0.1")),
            pod("c", json!({"app": "other"}), true, Some("10.0.0.3")),
            pod("d", json!({"app": "a"}), true, None),
        ];
        let (endpoints, ports) = desired(&svc, &pods).unwrap();
        assert_eq!(endpoints.len(), 2);
        assert_eq!(endpoints[0]["addresses"], json!(["10.0.0.1"]));
        assert_eq!(endpoints[0]["conditions"]["ready"], true);
        assert_eq!(endpoints[1]["conditions"]["ready"], false);
        assert_eq!(endpoints[0]["targetRef"]["uid"], "uid-a");
        assert_eq!(ports, vec![json!({"name": "serve", "port": 8000, "protocol": "TCP"})]);
        let selectorless: Service = serde_json::from_value(json!({"metadata": {"name": "x"}, "spec": {}})).unwrap();
        assert!(desired(&selectorless, &pods).is_none());
    }
}
