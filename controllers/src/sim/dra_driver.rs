//! A DRA driver stand-in: publishes one ResourceSlice per node and driver for the devices the
//! node fixture declares, as a driver's kubelet plugin does when it registers.
//!
//! A node declares devices with the annotation `dra.kproof.dev/devices`, a comma-separated list
//! of `<driver>=<count>` (`dev.kproof.dev=2`). The slice is named `<node>-<driver>`, in a pool
//! named after the node (generation 1, one slice), with `nodeName` set and devices
//! `<prefix>-0` … `<prefix>-<count-1>` (the prefix being the driver's first DNS label), each
//! with its position as the int attribute `index`.

use super::SimError;
use crate::dra::ResourceSlice;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Client;
use kube::api::{Api, PostParams};
use kube::runtime::watcher;
use serde_json::json;
use std::collections::BTreeSet;

/// The drivers of the default node pool's devices (`fixtures/nodes/default.yaml`): the CPU
/// nodes' and the GPU nodes'.
pub const DEFAULT_POOL_DRIVERS: [&str; 2] = ["dev.kproof.dev", "gpu.kproof.dev"];

/// The DeviceClass a driver's installation ships for its devices, named after the driver and
/// selecting every device it publishes (as the Helm chart of kubernetes-sigs/dra-example-driver
/// ships DeviceClass `gpu.example.com` with `device.driver == 'gpu.example.com'`:
/// deployments/helm/dra-example-driver/templates/deviceclass.yaml at commit 5e8f4f92fae9).
pub fn device_class(driver: &str) -> serde_json::Value {
    json!({
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": driver},
        "spec": {"selectors": [{"cel": {"expression": format!("device.driver == \"{driver}\"")}}]},
    })
}

/// The node annotation listing a node's devices.
pub const DEVICES_ANNOTATION: &str = "dra.kproof.dev/devices";

/// The devices a node declares: `(driver, count)`; malformed items are skipped with a warning.
pub fn node_devices(node: &Node) -> Vec<(String, u32)> {
    let Some(spec) = node.metadata.annotations.as_ref().and_then(|a| a.get(DEVICES_ANNOTATION)) else {
        return Vec::new();
    };
    spec.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .filter_map(|item| {
            let parsed = item.split_once('=').and_then(|(d, n)| n.trim().parse::<u32>().ok().map(|n| (d.trim().to_string(), n)));
            if parsed.is_none() {
                tracing::warn!(node = ?node.metadata.name, "ignoring {DEVICES_ANNOTATION} item {item:?}: not <driver>=<count>");
            }
            parsed
        })
        .collect()
}

/// The ResourceSlice a driver publishes for `node`'s `count` devices.
pub fn slice_for(node: &str, driver: &str, count: u32) -> ResourceSlice {
    let prefix = driver.split('.').next().unwrap_or(driver);
    // Each device carries its position as the attribute `index` (in the driver's domain), so
    // selectors have something to choose by.
    let devices: Vec<_> =
        (0..count).map(|i| json!({"name": format!("{prefix}-{i}"), "attributes": {"index": {"int": i}}})).collect();
    ResourceSlice::new(
        ObjectMeta { name: Some(format!("{node}-{driver}")), ..Default::default() },
        json!({"spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        }}),
    )
}

/// The driver stand-in; see the module docs.
pub struct DraDriver {
    client: Client,
}

impl DraDriver {
    /// A driver that publishes through `client`.
    pub fn new(client: Client) -> Self {
        Self { client }
    }

    /// Publishes the slices of every node (now and as nodes come) until the node watch ends.
    pub async fn run(self) -> Result<(), SimError> {
        let (nodes, mut events) = super::cache::<Node>(&self.client, watcher::Config::default());
        let api: Api<ResourceSlice> = Api::all(self.client.clone());
        let mut published: BTreeSet<String> = BTreeSet::new();
        while events.next().await.is_some() {
            if !super::scheduler::store_ready(&nodes) {
                continue;
            }
            for node in nodes.state() {
                let name = node.metadata.name.clone().unwrap_or_default();
                for (driver, count) in node_devices(&node) {
                    let slice = slice_for(&name, &driver, count);
                    if published.contains(slice.name()) {
                        continue;
                    }
                    loop {
                        let created = match api.create(&PostParams::default(), &slice).await {
                            Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
                            other => other
                                .map(|_| ())
                                .map_err(SimError::api(format!("publishing ResourceSlice {}", slice.name()))),
                        };
                        if super::tolerate("dra-driver", created)?.is_some() {
                            break;
                        }
                        tokio::time::sleep(super::RETRY_AFTER).await;
                    }
                    published.insert(slice.name().to_string());
                }
            }
        }
        Err(SimError::WatchEnded("node"))
    }
}
