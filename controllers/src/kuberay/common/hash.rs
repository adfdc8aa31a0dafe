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
    // Masked on the JSON rather than on a copy of the spec: every field masked here is left
    // out of the JSON when unset, so removing it gives the JSON of the masked spec.
    let mut value = serde_json::to_value(spec).unwrap_or(Value::Null);
    if let Some(m) = value.as_object_mut() {
        m.remove("upgradeStrategy");
    }
    if let Some(t) = value.get_mut("headGroupSpec").and_then(|h| h.get_mut("template")) {
        mask_template(t);
    }
    if let Some(groups) = value.get_mut("workerGroupSpecs").and_then(Value::as_array_mut) {
        for group in groups {
            let Some(g) = group.as_object_mut() else { continue };
            if let Some(t) = g.get_mut("template") {
                mask_template(t);
            }
            if !keep_replicas {
                g.remove("replicas");
            }
            // Go's ScaleStrategy is a struct, present whether or not the user wrote it: with its
            // one field masked, written and unwritten must hash alike.
            for masked in ["minReplicas", "maxReplicas", "scaleStrategy"] {
                g.remove(masked);
            }
        }
    }
    sort_keys(&mut value);
    base32_hex(&Sha1::digest(serde_json::to_vec(&value).unwrap_or_default()))
}

fn mask_template(t: &mut Value) {
    if let Some(spec) = t.get_mut("spec").and_then(Value::as_object_mut) {
        spec.remove("tolerations");
        spec.remove("schedulingGates");
    }
}

/// Sorts every object's keys, so the JSON does not depend on the order fields were written in.
fn sort_keys(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.sort_keys();
            m.values_mut().for_each(sort_keys);
        }
        Value::Array(a) => a.iter_mut().for_each(sort_keys),
        _ => {}
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
        assert_ne!(spec_hash(&s), base, "an explicit suspend: false changes the hash (a RayCluster quirk row)");
    }
}
