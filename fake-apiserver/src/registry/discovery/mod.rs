//! `discovery.k8s.io` EndpointSlices: defaults (`SetDefaults_EndpointPort`), the strategy of
//! kubernetes v1.37.2 pkg/registry/discovery/endpointslice/strategy.go (`dropTopologyOnV1`),
//! and validation (`validation`).

mod validation;

use crate::error::StatusCause;
use crate::registry::store::UpdateMode;
use crate::registry::{ResourceType, Strategy};
use apimachinery::json::semantically_equal;
use apimachinery::validation::dns1123_subdomain_errors;
use serde_json::{Value, json};
use validation::validate_slice;

/// discovery/v1 EndpointSlice.
#[derive(Debug)]
pub(crate) struct EndpointSliceStrategy;

const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

/// strategy.go `dropTopologyOnV1`: a v1 write carries no `deprecatedTopology` (it is kept only
/// when the endpoints did not change); an endpoint without a node name takes the hostname
/// label's value when the old slice used that name and it is a valid node name.
fn drop_topology_on_v1(new: &mut Value, old: Option<&Value>) {
    if let Some(old) = old
        && semantically_equal(&old["endpoints"], &new["endpoints"])
    {
        return;
    }
    let previous: Vec<String> = old
        .and_then(|o| o["endpoints"].as_array())
        .into_iter()
        .flatten()
        .filter_map(|e| e["deprecatedTopology"][HOSTNAME_LABEL].as_str())
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .collect();
    for e in new.get_mut("endpoints").and_then(Value::as_array_mut).into_iter().flatten() {
        let Some(e) = e.as_object_mut() else { continue };
        let host = e.get("deprecatedTopology").and_then(|t| t[HOSTNAME_LABEL].as_str()).map(str::to_string);
        if let Some(host) = host
            && e.get("nodeName").is_none_or(Value::is_null)
            && previous.contains(&host)
            && dns1123_subdomain_errors(&host).is_empty()
        {
            e.insert("nodeName".into(), json!(host));
        }
        e.remove("deprecatedTopology");
    }
}

impl Strategy for EndpointSliceStrategy {
    fn default(&self, _rt: &ResourceType, obj: &mut Value) {
        for p in obj.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten() {
            // SetDefaults_EndpointPort: a nil name is "", a nil protocol TCP.
            if let Some(p) = p.as_object_mut() {
                for (key, default) in [("protocol", "TCP"), ("name", "")] {
                    if p.get(key).is_none_or(Value::is_null) {
                        p.insert(key.into(), json!(default));
                    }
                }
            }
        }
    }

    fn prepare_for_create(&self, _rt: &ResourceType, obj: &mut Value, _now: &str) {
        drop_topology_on_v1(obj, None);
    }

    fn prepare_for_update(&self, _rt: &ResourceType, new: &mut Value, old: &Value, _mode: UpdateMode) {
        // strategy.go PrepareForUpdate: a change of the labels moves the generation too (the
        // store moves it for the rest).
        if !semantically_equal(&new["metadata"]["labels"], &old["metadata"]["labels"])
            && let Some(g) = old["metadata"]["generation"].as_i64()
        {
            new["metadata"]["generation"] = json!(g + 1);
        }
        drop_topology_on_v1(new, Some(old));
    }

    fn validate(&self, _rt: &ResourceType, obj: &Value) -> Vec<StatusCause> {
        validate_slice(obj, None)
    }

    fn validate_update(&self, _rt: &ResourceType, obj: &Value, old: &Value) -> Vec<StatusCause> {
        validate_slice(obj, Some(old))
    }
}
