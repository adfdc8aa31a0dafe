//! `resource.k8s.io/v1` (DRA): ResourceClaims, their templates, DeviceClasses and
//! ResourceSlices, validated as `pkg/apis/resource/validation` of k8s.io/kubernetes v1.37.2
//! does, with the errors of the declarative tags in their place (see [`causes`]).

mod binding;
mod capacity;
mod causes;
mod cel_limits;
mod claim_status;
mod config;
mod device_claim;
mod device_class;
mod disabled_fields;
mod names;
mod resource_claim;
mod slice;
mod taints;
mod template;

pub(crate) use device_class::DeviceClassStrategy;
pub(crate) use resource_claim::ResourceClaimStrategy;
pub(crate) use slice::ResourceSliceStrategy;
pub(crate) use template::ResourceClaimTemplateStrategy;

use serde_json::{Value, json};

fn list<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// `SetDefaults_ExactDeviceRequest`, `SetDefaults_DeviceSubRequest` and the toleration
/// operator's default (`Equal`) on the requests of a claim spec.
fn default_requests(spec: &mut Value) {
    let Some(requests) = spec.get_mut("devices").and_then(|d| d.get_mut("requests")).and_then(Value::as_array_mut)
    else {
        return;
    };
    for r in requests {
        let fill = |e: &mut Value| {
            if let Some(m) = e.as_object_mut() {
                m.entry("allocationMode").or_insert(json!("ExactCount"));
                if m.get("allocationMode").and_then(Value::as_str) == Some("ExactCount")
                    && m.get("count").and_then(Value::as_i64).unwrap_or(0) == 0
                {
                    m.insert("count".into(), json!(1));
                }
                for t in m.get_mut("tolerations").and_then(Value::as_array_mut).into_iter().flatten() {
                    if let Some(t) = t.as_object_mut() {
                        t.entry("operator").or_insert(json!("Equal"));
                    }
                }
            }
        };
        if let Some(e) = r.get_mut("exactly") {
            fill(e);
        }
        for sub in r.get_mut("firstAvailable").and_then(Value::as_array_mut).into_iter().flatten() {
            fill(sub);
        }
    }
}
