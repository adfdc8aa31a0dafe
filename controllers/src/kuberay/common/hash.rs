//! The spec hash behind `upgradeStrategy: Recreate`
//! (`utils.GenerateHashWithoutReplicasAndWorkersToDelete`).

use crate::crds::RayClusterSpec;
use serde_json::Value;
use sha1::{Digest, Sha1};

/// The hash of `spec` with the fields that must not trigger a recreation masked out: each
/// worker group's replicas, min/max replicas and `workersToDelete`, the tolerations and
/// scheduling gates of every pod template, and `upgradeStrategy` itself.
///
/// Like KubeRay: SHA-1 of the JSON, in base32 with the "hex" alphabet (32 characters of
/// `0-9A-V`). Object keys are sorted first, so the value does not depend on the order a client
/// sent fields in; the value is opaque and not bit-identical to Go's (whose field order is the
/// struct's).
pub fn spec_hash(spec: &RayClusterSpec) -> String {
    spec_hash_with(spec, &crate::kuberay::KubeRayConfig::default())
}

/// [`spec_hash`], or, for a configuration built with a deliberate [`Defect`](crate::kuberay::Defect), the defective hash.
pub fn spec_hash_with(spec: &RayClusterSpec, config: &crate::kuberay::KubeRayConfig) -> String {
    let keep_replicas = config.defective(crate::kuberay::Defect::HashIncludesReplicas);
    let mut masked = spec.clone();
    masked.upgrade_strategy = None;
    mask_template(&mut masked.head_group_spec.template);
    for group in &mut masked.worker_group_specs {
        if !keep_replicas {
            group.replicas = None;
        }
        group.min_replicas = None;
        group.max_replicas = None;
        // Go's ScaleStrategy is a struct, present whether or not the user wrote it: with its
        // one field masked, written and unwritten must hash alike.
        group.scale_strategy = None;
        mask_template(&mut group.template);
    }
    let value = serde_json::to_value(&masked).unwrap_or(Value::Null);
    let mut canonical = String::new();
    write_canonical(&value, &mut canonical);
    base32_hex(&Sha1::digest(canonical.as_bytes()))
}

fn mask_template(t: &mut k8s_openapi::api::core::v1::PodTemplateSpec) {
    if let Some(spec) = t.spec.as_mut() {
        spec.tolerations = None;
        spec.scheduling_gates = None;
    }
}

fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write_canonical(&m[k], out);
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(x, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// RFC 4648 base32 with the extended hex alphabet, as Go's `base32.HexEncoding` (padded).
fn base32_hex(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHIJKLMNOPQRSTUV";
    let mut out = String::with_capacity(bytes.len().div_ceil(5) * 8);
    for chunk in bytes.chunks(5) {
        let mut buf = [0u8; 5];
        buf[..chunk.len()].copy_from_slice(chunk);
        let n = buf.iter().fold(0u64, |acc, b| (acc << 8) | u64::from(*b));
        let chars = (chunk.len() * 8).div_ceil(5);
        for i in 0..8 {
            if i < chars {
                out.push(ALPHABET[((n >> (35 - i * 5)) & 31) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crds::WorkerGroupSpec;
    use crate::crds::raycluster::ScaleStrategy as ScaleStrategyRef;
    use serde_json::json;

    fn spec() -> RayClusterSpec {
        serde_json::from_value(json!({
            "rayVersion": "2.52.0",
            "headGroupSpec": {"template": {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.52.0"}]}}},
            "workerGroupSpecs": [{"groupName": "workers", "replicas": 1, "minReplicas": 1, "maxReplicas": 5,
                "template": {"spec": {"containers": [{"name": "ray-worker", "image": "rayproject/ray:2.52.0"}]}}}]
        }))
        .unwrap()
    }

    #[test]
    fn go_base32_hex_vectors() {
        // RFC 4648 section 10 test vectors, hex alphabet.
        assert_eq!(base32_hex(b"f"), "CO======");
        assert_eq!(base32_hex(b"fooba"), "CPNMUOJ1");
        assert_eq!(base32_hex(b"foobar"), "CPNMUOJ1E8======");
        assert_eq!(spec_hash(&spec()).len(), 32);
    }

    #[test]
    fn masked_fields_do_not_change_the_hash_and_others_do() {
        let base = spec_hash(&spec());
        let mut s = spec();
        let g: &mut WorkerGroupSpec = &mut s.worker_group_specs[0];
        g.replicas = Some(3);
        g.min_replicas = Some(0);
        g.max_replicas = Some(9);
        g.scale_strategy = Some(ScaleStrategyRef { workers_to_delete: vec!["p".into()] });
        s.upgrade_strategy = Some(crate::crds::raycluster::UpgradeStrategy { type_: Some("Recreate".into()) });
        s.head_group_spec.template.spec.as_mut().unwrap().tolerations = Some(vec![Default::default()]);
        assert_eq!(spec_hash(&s), base, "replicas, workersToDelete, tolerations, upgradeStrategy are masked");

        let mut s = spec();
        s.ray_version = Some("2.53.0".into());
        assert_ne!(spec_hash(&s), base, "rayVersion is hashed");

        let mut s = spec();
        s.suspend = Some(false);
        assert_ne!(spec_hash(&s), base, "an explicit suspend: false changes the hash (kuberay.md §1.7)");
    }
}
