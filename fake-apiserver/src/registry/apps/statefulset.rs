//! StatefulSets: defaults, validation (`ValidateStatefulSet`, update and status) and
//! kubectl's columns.

use super::int_or_percent::{int_or_percent_value, not_more_than_100_percent, validate_positive_int_or_percent};
use super::volume_claim_templates::validate_volume_claim_templates;
use super::workload::{TemplateRules, materialize_spec_and_template, nonnegative, selector_and_template};
use super::workload_status::statefulset_status_update;
use crate::error::StatusCause;
use crate::registry::core::pod_spec::default_template;
use crate::registry::field::{self, Bad, Path};
use crate::registry::printers::{age_col, col, int, name_col, since, workload_cols, workload_tail};
use crate::registry::{NameRule, ResourceType, Strategy};
use apimachinery::validation::dns1123_label_errors;
use jiff::Timestamp;
use serde_json::{Value, json};

/// apps/v1 StatefulSet.
#[derive(Debug)]
pub(crate) struct StatefulSetStrategy;

/// The `StatefulSetValidationOptions` that differ between a create and an update
/// (`pkg/registry/apps/statefulset/strategy.go`; StatefulSetRecreateStrategy is alpha, off).
#[derive(Debug, Clone, Copy, Default)]
struct SetOptions {
    /// `AllowInvalidServiceName`: the name is immutable, so an update tolerates an old one.
    allow_invalid_service_name: bool,
    /// `SkipValidateVolumeClaimTemplates`: immutable too.
    skip_volume_claim_templates: bool,
    /// `SkipValidatePodTemplateSpec`: the old spec was already invalid.
    skip_template: bool,
}

/// The internal `RollingUpdateStatefulSetStrategy` as `json.Marshal` prints it in a cause.
fn go_rolling_update(ru: &Value) -> Value {
    if ru.is_null() {
        return Value::Null;
    }
    json!({"Partition": ru.get("partition").cloned().unwrap_or(json!(0)),
           "MaxUnavailable": ru.get("maxUnavailable").cloned().unwrap_or(Value::Null)})
}

/// `validateRollingUpdateStatefulSet`.
fn validate_rolling_update(out: &mut Vec<StatusCause>, ru: &Value, path: &Path) {
    nonnegative(out, ru, "partition", path);
    if let Some(max) = ru.get("maxUnavailable").filter(|v| !v.is_null()) {
        let at = path.child("maxUnavailable");
        validate_positive_int_or_percent(out, max, &at);
        if int_or_percent_value(max) == 0 {
            out.push(field::invalid(&at, Bad::of(max), "cannot be 0"));
        }
        not_more_than_100_percent(out, max, &at);
    }
}

/// `ValidateStatefulSetSpec` (pkg/apis/apps/validation/validation.go at v1.37.2).
fn validate_spec(obj: &Value, opts: SetOptions) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let path = Path::root("spec");
    match spec.get("podManagementPolicy").and_then(Value::as_str).unwrap_or_default() {
        "" => out.push(field::required(&path.child("podManagementPolicy"), "")),
        "OrderedReady" | "Parallel" => {}
        other => {
            out.push(field::invalid(&path.child("podManagementPolicy"), other, "must be 'OrderedReady' or 'Parallel'"))
        }
    }
    let us = spec.get("updateStrategy").unwrap_or(&Value::Null);
    let ru = us.get("rollingUpdate").unwrap_or(&Value::Null);
    let us_path = path.child("updateStrategy");
    match us.get("type").and_then(Value::as_str).unwrap_or_default() {
        "" => out.push(field::required(&us_path, "")),
        "OnDelete" => {
            if !ru.is_null() {
                out.push(field::invalid(
                    &us_path.child("rollingUpdate"),
                    Bad::Raw(go_rolling_update(ru).to_string()),
                    "only allowed for updateStrategy 'RollingUpdate'",
                ));
            }
        }
        "RollingUpdate" => {
            if !ru.is_null() {
                validate_rolling_update(&mut out, ru, &us_path.child("rollingUpdate"));
            }
        }
        other => {
            let go = json!({"Type": other, "RollingUpdate": go_rolling_update(ru)});
            out.push(field::invalid(&us_path, Bad::Raw(go.to_string()), "must be 'RollingUpdate' or 'OnDelete'"))
        }
    }
    if let Some(policy) = spec.get("persistentVolumeClaimRetentionPolicy").filter(|v| v.is_object()) {
        let ppath = path.child("persistentVolumeClaimRetentionPolicy");
        for k in ["whenDeleted", "whenScaled"] {
            let v = policy.get(k).and_then(Value::as_str).unwrap_or_default();
            if !["Retain", "Delete"].contains(&v) {
                out.push(field::not_supported(&ppath.child(k), v, &["Retain", "Delete"]));
            }
        }
    }
    if !opts.skip_volume_claim_templates
        && let Some(templates) = spec.get("volumeClaimTemplates")
    {
        out.extend(validate_volume_claim_templates(templates, &path.child("volumeClaimTemplates")));
    }
    nonnegative(&mut out, spec, "replicas", &path);
    nonnegative(&mut out, spec, "minReadySeconds", &path);
    if let Some(start) = spec.get("ordinals").and_then(|o| o.get("start")).and_then(Value::as_i64).filter(|n| *n < 0) {
        out.push(field::invalid(&path.child("ordinals.start"), start, "must be greater than or equal to 0"));
    }
    let service_name = spec.get("serviceName").and_then(Value::as_str).unwrap_or_default();
    if !opts.allow_invalid_service_name && !service_name.is_empty() {
        for msg in dns1123_label_errors(service_name) {
            out.push(field::invalid(&path.child("serviceName"), service_name, &msg));
        }
    }
    // `ValidateStatefulSetSpec` validates the template as the controller will fill it in: the
    // subdomain and hostname are overwritten (initIdentity), so not validated, and each volume
    // claim template is a volume of the pods (`volumesToAddForTemplates`).
    let claim_volumes: Vec<Value> = spec
        .get("volumeClaimTemplates")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| t.pointer("/metadata/name").and_then(Value::as_str))
        .map(|name| serde_json::json!({"name": name, "persistentVolumeClaim": {"claimName": name}}))
        .collect();
    let mut spec = spec.clone();
    if let Some(t) = spec.pointer_mut("/template/spec").and_then(Value::as_object_mut) {
        t.remove("subdomain");
        t.remove("hostname");
        if !claim_volumes.is_empty() {
            let own: Vec<Value> = t.get("volumes").and_then(Value::as_array).cloned().unwrap_or_default();
            let mut volumes = claim_volumes.clone();
            volumes.extend(own.into_iter().filter(|v| !claim_volumes.iter().any(|c| c["name"] == v["name"])));
            t.insert("volumes".into(), Value::Array(volumes));
        }
    }
    let rules = TemplateRules {
        empty_selector_kind: "statefulset",
        unconvertible_detail: "",
        deadline_kind: "StatefulSet",
        statefulset: true,
        skip_template: opts.skip_template,
    };
    selector_and_template(&mut out, &spec, rules);
    out
}

/// The spec fields an update may not change, in `ValidateStatefulSetUpdate`'s order.
const IMMUTABLE_SPEC: &[&str] = &["selector", "volumeClaimTemplates", "serviceName", "podManagementPolicy"];

impl Strategy for StatefulSetStrategy {
    /// `ValidateStatefulSetName`: a DNS label, as the pods' hostnames derive from it.
    fn name_rule(&self) -> NameRule {
        NameRule::Label
    }

    fn default(&self, _rt: &ResourceType, obj: &mut Value) {
        materialize_spec_and_template(obj);
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
            spec.entry("replicas").or_insert(json!(1));
            spec.entry("podManagementPolicy").or_insert(json!("OrderedReady"));
            spec.entry("revisionHistoryLimit").or_insert(json!(10));
            let us = spec.entry("updateStrategy").or_insert(json!({}));
            if let Some(us) = us.as_object_mut() {
                // Only a defaulted type brings a rolling update; an explicit one may go without.
                if us.get("type").and_then(Value::as_str).is_none_or(str::is_empty) {
                    us.insert("type".into(), json!("RollingUpdate"));
                    us.entry("rollingUpdate").or_insert(json!({}));
                }
                if us.get("type").and_then(Value::as_str) == Some("RollingUpdate")
                    && let Some(ru) = us.get_mut("rollingUpdate").and_then(Value::as_object_mut)
                {
                    ru.entry("partition").or_insert(json!(0));
                    // MaxUnavailableStatefulSet is on by default in 1.37.
                    ru.entry("maxUnavailable").or_insert(json!(1));
                }
            }
            let policy = spec.entry("persistentVolumeClaimRetentionPolicy").or_insert(json!({}));
            if let Some(p) = policy.as_object_mut() {
                p.entry("whenDeleted").or_insert(json!("Retain"));
                p.entry("whenScaled").or_insert(json!("Retain"));
            }
        }
        default_template(obj);
    }

    /// `ValidateStatefulSet`: new StatefulSets must have a valid service name.
    fn validate(&self, _rt: &ResourceType, obj: &Value) -> Vec<StatusCause> {
        validate_spec(obj, SetOptions::default())
    }

    /// `ValidateStatefulSetUpdate`: the template of a StatefulSet that was already invalid is
    /// not validated again, then the immutable fields, each on its own.
    fn validate_update(&self, _rt: &ResourceType, obj: &Value, old: &Value) -> Vec<StatusCause> {
        let mut opts =
            SetOptions { allow_invalid_service_name: true, skip_volume_claim_templates: true, skip_template: false };
        opts.skip_template = !validate_spec(old, opts).is_empty();
        let mut out = validate_spec(obj, opts);
        for k in IMMUTABLE_SPEC {
            if let Some(c) = field::immutable(&Path::root("spec").child(k), &obj["spec"][*k], &old["spec"][*k]) {
                out.push(c);
            }
        }
        out
    }

    /// `ValidateStatefulSetStatusUpdate`.
    fn validate_status_update(&self, _rt: &ResourceType, obj: &Value, old: &Value) -> Vec<StatusCause> {
        statefulset_status_update(obj, old)
    }

    fn table_columns(&self, _rt: &ResourceType) -> Vec<Value> {
        let mut c =
            vec![name_col(), col("Ready", "string", "", 0, "Ready replicas out of desired replicas."), age_col()];
        c.extend(workload_cols().into_iter().take(2));
        c
    }

    fn table_cells(&self, _rt: &ResourceType, obj: &Value, now: Timestamp) -> Vec<Value> {
        let desired = obj["spec"]["replicas"].as_i64().unwrap_or(1);
        let [names, images, _] = workload_tail(obj);
        let ready = json!(format!("{}/{desired}", int(&obj["status"]["readyReplicas"])));
        vec![
            json!(obj["metadata"]["name"]),
            ready,
            json!(since(&obj["metadata"]["creationTimestamp"], now)),
            names,
            images,
        ]
    }
}
