//! The ResourceClaim kind (pkg/registry/resource/resourceclaim/strategy.go and
//! `ValidateResourceClaim`, `ValidateResourceClaimUpdate` of
//! pkg/apis/resource/validation/validation.go at k8s.io/kubernetes v1.37.2): a claim spec
//! that never changes, a status written through `/status`. With the `DRAReservedForWorkloads`
//! gate (KEP-5194 as proposed) claims also keep `spec.reservedFor` (a consumer reference with
//! resource, name and uid) and `status.allocation.reservedForAnyPod`; without it the decoder
//! drops both, as a server without the feature does.

use super::claim_status::claim_status;
use super::default_requests;
use super::device_claim::claim_spec;
use super::disabled_fields::{drop_claim_spec_fields, drop_claim_status_fields};
use crate::error::StatusCause;
use crate::registry::features::FeatureGate;
use crate::registry::field::{self, Bad, Path};
use crate::registry::store::UpdateMode;
use crate::registry::{ResourceType, Strategy};
use serde_json::Value;

/// ResourceClaims.
#[derive(Debug)]
pub(crate) struct ResourceClaimStrategy;

/// The KEP-5194 fields (as proposed, gate `DRAReservedForWorkloads`).
const RESERVED_FOR_WORKLOADS_FIELDS: [&[&str]; 2] =
    [&["spec", "reservedFor"], &["status", "allocation", "reservedForAnyPod"]];

impl Strategy for ResourceClaimStrategy {
    fn gated_fields(&self, rt: &ResourceType, obj: &Value) -> Vec<(Vec<&'static str>, Value)> {
        if !rt.gates.enabled(FeatureGate::DraReservedForWorkloads) {
            return Vec::new();
        }
        RESERVED_FOR_WORKLOADS_FIELDS
            .iter()
            .filter_map(|path| {
                let v = path.iter().try_fold(obj, |at, k| at.get(*k))?;
                (!v.is_null()).then(|| (path.to_vec(), v.clone()))
            })
            .collect()
    }

    /// Go's decoder turns an empty `status.reservedFor` or `status.devices` (both `omitempty`)
    /// into an empty slice that is never encoded: a strategic-merge patch that deletes the last
    /// entry (the scheduler's Unreserve) leaves the field absent, not `[]`.
    fn canonicalize(&self, _rt: &ResourceType, obj: &mut Value) {
        if let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut) {
            for key in ["reservedFor", "devices"] {
                if status.get(key).and_then(Value::as_array).is_some_and(Vec::is_empty) {
                    status.remove(key);
                }
            }
        }
    }

    fn prepare_for_create(&self, _rt: &ResourceType, obj: &mut Value, _now: &str) {
        if let Some(spec) = obj.get_mut("spec") {
            drop_claim_spec_fields(spec, None);
        }
    }

    fn prepare_for_update(&self, _rt: &ResourceType, new: &mut Value, old: &Value, mode: UpdateMode) {
        match mode {
            UpdateMode::Main => {
                if let Some(spec) = new.get_mut("spec") {
                    drop_claim_spec_fields(spec, old.get("spec"));
                }
            }
            UpdateMode::Status => {
                if let Some(status) = new.get_mut("status") {
                    drop_claim_status_fields(status, old.get("status").unwrap_or(&Value::Null));
                }
            }
        }
    }

    fn default(&self, _rt: &ResourceType, obj: &mut Value) {
        if let Some(spec) = obj.get_mut("spec") {
            default_requests(spec);
        }
    }

    fn validate(&self, _rt: &ResourceType, obj: &Value) -> Vec<StatusCause> {
        let spec = obj.get("spec").unwrap_or(&Value::Null);
        let mut out = claim_spec(spec, &Path::root("spec")).into_vec();
        // KEP-5194 as proposed: the designated consumer is a ResourceClaimConsumerReference.
        if let Some(r) = spec.get("reservedFor").filter(|v| !v.is_null()) {
            let at = Path::root("spec").child("reservedFor");
            for k in ["resource", "name", "uid"] {
                if super::text(r, k).is_empty() {
                    out.push(field::required(&at.child(k), ""));
                }
            }
        }
        out
    }

    /// The spec is immutable, and only that is checked: the `immutable` tag reports it (with
    /// no value) in place of the covered handwritten check.
    fn validate_update(&self, _rt: &ResourceType, obj: &Value, old: &Value) -> Vec<StatusCause> {
        let (new, was) = (obj.get("spec").unwrap_or(&Value::Null), old.get("spec").unwrap_or(&Value::Null));
        if apimachinery::json::semantically_equal(new, was) {
            return Vec::new();
        }
        vec![field::invalid(&Path::root("spec"), Bad::Null, field::FIELD_IMMUTABLE)]
    }

    fn validate_status_update(&self, rt: &ResourceType, obj: &Value, old: &Value) -> Vec<StatusCause> {
        claim_status(rt, obj, old)
    }

    /// `DRAResourceClaimGranularStatusAuthorization`: a status write that changes
    /// `status.allocation` or `status.reservedFor` also needs the verb on the synthetic
    /// `resourceclaims/binding`.
    fn synthetic_status_subresource(&self, rt: &ResourceType, obj: &Value, old: &Value) -> Option<&'static str> {
        if !rt.gates.enabled(FeatureGate::DraResourceClaimGranularStatusAuthorization) {
            return None;
        }
        let part = |v: &Value, k: &str| v["status"].get(k).filter(|x| !x.is_null()).cloned();
        let changed = |k: &str| part(obj, k) != part(old, k);
        (changed("allocation") || changed("reservedFor")).then_some("binding")
    }
}
