//! Simulated nodes from core/v1 Node manifests: parsing fixtures and registering them the way a
//! kubelet does (create the Node, then write its status).

use super::SimError;
use crate::Clock;
use k8s_openapi::api::core::v1::Node;
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

/// The default pool: three CPU nodes (8 CPU, 32Gi) and two GPU nodes (16 CPU, 64Gi, 4
/// `nvidia.com/gpu`, tainted `nvidia.com/gpu=present:NoSchedule`).
pub const DEFAULT_POOL: &str = include_str!("../../../fixtures/nodes/default.yaml");
/// A tiny pool for unschedulable cases: one node with 1 CPU, 2Gi and room for 4 pods.
pub const TINY_POOL: &str = include_str!("../../../fixtures/nodes/tiny.yaml");

/// The node fixtures compiled into the binary, by name (`default`, `tiny`).
pub fn builtin_pool(name: &str) -> Option<&'static str> {
    match name {
        "default" => Some(DEFAULT_POOL),
        "tiny" => Some(TINY_POOL),
        _ => None,
    }
}

/// Why a node fixture could not be read.
#[derive(Debug, thiserror::Error)]
pub enum NodeFixtureError {
    /// The text is not YAML.
    #[error("node fixture is not valid YAML: {0}")]
    Yaml(String),
    /// One document is not a usable Node (`document` counts from 1, empty documents included).
    #[error("node fixture document {document}: {problem}")]
    Document {
        /// The document's position in the fixture, from 1.
        document: usize,
        /// What is wrong with it.
        problem: String,
    },
}

/// Parses core/v1 Node manifests from a YAML string (one or more documents; empty documents
/// are skipped). Each must be `apiVersion: v1`, `kind: Node`, have a name and decode as a Node.
pub fn parse_nodes(yaml: &str) -> Result<Vec<Node>, NodeFixtureError> {
    let docs: Vec<Value> = serde_saphyr::from_multiple(yaml).map_err(|e| NodeFixtureError::Yaml(e.to_string()))?;
    let mut nodes = Vec::new();
    for (i, doc) in docs.into_iter().enumerate() {
        let bad = |problem: String| NodeFixtureError::Document { document: i + 1, problem };
        if doc.is_null() {
            continue;
        }
        if !doc.is_object() {
            return Err(bad(format!("expected a mapping (a Node manifest), found {}", kind_of(&doc))));
        }
        match (doc["apiVersion"].as_str(), doc["kind"].as_str()) {
            (Some("v1"), Some("Node")) => {}
            (api_version, kind) => {
                return Err(bad(format!(
                    "expected apiVersion v1 and kind Node, found apiVersion {} and kind {}",
                    api_version.map_or("<missing>".into(), |s| format!("{s:?}")),
                    kind.map_or("<missing>".into(), |s| format!("{s:?}"))
                )));
            }
        }
        if doc["metadata"]["name"].as_str().is_none_or(str::is_empty) {
            return Err(bad("metadata.name is missing".into()));
        }
        let name = doc["metadata"]["name"].as_str().unwrap_or_default().to_string();
        let node: Node = serde_json::from_value(doc).map_err(|e| bad(format!("node {name:?} does not decode: {e}")))?;
        for (field, list) in
            [("capacity", node_status_map(&node, true)), ("allocatable", node_status_map(&node, false))]
        {
            for (resource, q) in list {
                apimachinery::quantity::parse_milli(&q)
                    .map_err(|e| bad(format!("node {name:?} status.{field}.{resource}: {e}")))?;
            }
        }
        nodes.push(node);
    }
    Ok(nodes)
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

fn node_status_map(node: &Node, capacity: bool) -> Vec<(String, String)> {
    let status = node.status.as_ref();
    let map =
        if capacity { status.and_then(|s| s.capacity.as_ref()) } else { status.and_then(|s| s.allocatable.as_ref()) };
    map.map(|m| m.iter().map(|(k, v)| (k.clone(), v.0.clone())).collect()).unwrap_or_default()
}

/// The status a registering kubelet writes for the `index`-th node of a pool: Ready, an
/// InternalIP and Hostname address, capacity and allocatable (allocatable defaults to capacity,
/// `pods` to 110) and nodeInfo.
fn registered_status(node: &Node, index: usize, now: &str) -> Value {
    let name = node.metadata.name.clone().unwrap_or_default();
    let mut status = serde_json::to_value(node.status.clone().unwrap_or_default()).unwrap_or_else(|_| json!({}));
    if !status["capacity"].is_object() {
        status["capacity"] = json!({});
    }
    if status["capacity"].get("pods").is_none() {
        status["capacity"]["pods"] = json!("110");
    }
    if !status["allocatable"].is_object() {
        status["allocatable"] = status["capacity"].clone();
    }
    if status["allocatable"].get("pods").is_none() {
        status["allocatable"]["pods"] = status["capacity"]["pods"].clone();
    }
    let condition = |type_: &str, status: &str, reason: &str, message: &str| {
        json!({"type": type_, "status": status, "lastHeartbeatTime": now, "lastTransitionTime": now,
               "reason": reason, "message": message})
    };
    status["conditions"] = json!([
        condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
    ]);
    status["addresses"] = json!([
        {"type": "InternalIP", "address": format!("172.18.0.{}", index + 2)},
        {"type": "Hostname", "address": name},
    ]);
    let machine_id = format!("{:032x}", apimachinery::names::fnv1a(&name) as u128 * 0x1_0000_0001);
    status["nodeInfo"] = json!({
        "architecture": "amd64",
        "bootID": machine_id,
        "containerRuntimeVersion": "containerd://2.1.0",
        "kernelVersion": "6.8.0-kproof",
        "kubeProxyVersion": "",
        "kubeletVersion": "v1.34.0",
        "machineID": machine_id,
        "operatingSystem": "linux",
        "osImage": "kproof simulated node",
        "systemUUID": machine_id,
    });
    status["daemonEndpoints"] = json!({"kubeletEndpoint": {"Port": 10250}});
    status
}

/// Registers `nodes` as a kubelet would: creates each Node (an existing one is kept) with
/// `spec.podCIDR` `10.244.<index>.0/24` unless set, then writes its status. Returns the nodes
/// as stored.
pub async fn register_nodes(client: &Client, clock: &Clock, nodes: &[Node]) -> Result<Vec<Node>, SimError> {
    let api: Api<Node> = Api::all(client.clone());
    let now = clock.now_rfc3339();
    let mut out = Vec::with_capacity(nodes.len());
    for (index, node) in nodes.iter().enumerate() {
        let name = node.metadata.name.clone().unwrap_or_default();
        let mut to_create = node.clone();
        let spec = to_create.spec.get_or_insert_with(Default::default);
        if spec.pod_cidr.is_none() {
            spec.pod_cidr = Some(format!("10.244.{index}.0/24"));
            spec.pod_cidrs = Some(vec![format!("10.244.{index}.0/24")]);
        }
        match api.create(&PostParams::default(), &to_create).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => return Err(SimError::api(format!("creating node {name}"))(e)),
        }
        let status = registered_status(node, index, &now);
        let stored = api
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(json!({"status": status})))
            .await
            .map_err(SimError::api(format!("writing the status of node {name}")))?;
        out.push(stored);
    }
    Ok(out)
}

/// How often a kubelet renews its node's Lease (0.25 of the 40 s lease duration, as kubelet).
pub const NODE_LEASE_RENEW_INTERVAL: std::time::Duration = std::time::Duration::from_secs(10);

/// Renews the Lease `kube-node-lease/<node>` of every node every 10 s, creating it if missing
/// (holder = the node, 40 s duration, owned by the Node), as kubelet does; node lifecycle
/// controllers treat a node whose Lease stops moving as unhealthy. A renewal the API server
/// could not take for a moment (it restarts) is tried again a second later; any other error
/// ends it.
pub async fn renew_node_leases(client: &Client, clock: &Clock, nodes: &[String]) -> Result<(), SimError> {
    loop {
        match renew_once(client, clock, nodes).await {
            Ok(()) => tokio::time::sleep(NODE_LEASE_RENEW_INTERVAL).await,
            Err(e) if e.is_transient() => {
                tracing::debug!(error = %e, "renewing the node leases failed; trying again");
                tokio::time::sleep(super::RETRY_AFTER).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Renews (or creates) the Lease of every node once.
async fn renew_once(client: &Client, clock: &Clock, nodes: &[String]) -> Result<(), SimError> {
    use k8s_openapi::api::coordination::v1::Lease;
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-node-lease");
    let node_api: Api<Node> = Api::all(client.clone());
    for name in nodes {
        let renew = clock.now().strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string();
        let patch = json!({"spec": {"holderIdentity": name, "leaseDurationSeconds": 40, "renewTime": renew}});
        match leases.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {
                let uid = node_api
                    .get(name)
                    .await
                    .map_err(SimError::api(format!("reading node {name}")))?
                    .metadata
                    .uid
                    .unwrap_or_default();
                let lease: Lease = serde_json::from_value(json!({
                    "metadata": {
                        "name": name,
                        "namespace": "kube-node-lease",
                        "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": name, "uid": uid}],
                    },
                    "spec": patch["spec"],
                }))
                .unwrap_or_default();
                leases
                    .create(&PostParams::default(), &lease)
                    .await
                    .map_err(SimError::api(format!("creating the lease of node {name}")))?;
            }
            Err(e) => return Err(SimError::api(format!("renewing the lease of node {name}"))(e)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_pools_parse() {
        let default = parse_nodes(DEFAULT_POOL).unwrap();
        assert_eq!(default.len(), 5);
        let gpu = default.iter().filter(|n| n.spec.as_ref().and_then(|s| s.taints.as_ref()).is_some()).count();
        assert_eq!(gpu, 2);
        assert_eq!(parse_nodes(TINY_POOL).unwrap().len(), 1);
    }

    #[test]
    fn fixture_errors_name_the_document_and_the_problem() {
        let two =
            "apiVersion: v1\nkind: Node\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: b}\n";
        let e = parse_nodes(two).unwrap_err().to_string();
        assert_eq!(
            e,
            "node fixture document 2: expected apiVersion v1 and kind Node, found apiVersion \"v1\" and kind \"Pod\""
        );
        let e = parse_nodes("apiVersion: v1\nkind: Node\nmetadata: {}\n").unwrap_err().to_string();
        assert_eq!(e, "node fixture document 1: metadata.name is missing");
        let e = parse_nodes("apiVersion: v1\nkind: Node\nmetadata: {name: a}\nstatus: {capacity: {cpu: lots}}\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("status.capacity.cpu: invalid quantity \"lots\""), "{e}");
        let e = parse_nodes("- 1\n").unwrap_err().to_string();
        assert!(e.contains("document 1: expected a mapping"), "{e}");
        assert!(matches!(parse_nodes("a: [").unwrap_err(), NodeFixtureError::Yaml(_)));
    }
}
