//! CustomResourceDefinitions: what a CRD must be to be served, the cleanup finalizer and the
//! Terminating condition, and the served resource types kept in step with every CRD write.
//! (Naming, establishing and instance cleanup are the CRD controllers', in `controllers`.)

use super::custom_resource::CustomResourceStrategy;
use crate::apiextensions::StructuralSchema;
use crate::error::StatusCause;
use crate::registry::meta::{add_finalizer, set_condition, str_field};
use crate::registry::{Derived, ResourceType, ScaleSpec, SchemaSource, State, Strategy};
use crate::storage::{ChangeKind, StorageKey, StoredObject};
use apimachinery::unstructured::{nested_field, set_nested_field};
use serde_json::{Value, json};
use std::sync::Arc;

/// Finalizer the apiserver puts on CRDs so their instances are deleted first.
pub(crate) const CRD_CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// apiextensions.k8s.io/v1 CustomResourceDefinition.
#[derive(Debug)]
pub(crate) struct CrdStrategy;

impl Strategy for CrdStrategy {
    fn prepare_for_create(&self, _rt: &ResourceType, obj: &mut Value, _now: &str) {
        add_finalizer(obj, CRD_CLEANUP_FINALIZER);
        if nested_field(obj, &["spec", "conversion"]).is_none_or(Value::is_null) {
            set_nested_field(obj, &["spec", "conversion"], json!({"strategy": "None"}));
        }
    }

    fn validate(&self, _rt: &ResourceType, obj: &Value) -> Vec<StatusCause> {
        crd_resource_types(obj).err().unwrap_or_default()
    }

    fn mark_deleting(&self, obj: &mut Value, now: &str) {
        set_condition(
            obj,
            "Terminating",
            "True",
            "InstanceDeletionInProgress",
            "CustomResource deletion is in progress",
            now,
        );
    }

    fn after_commit(&self, st: &mut State, obj: &StoredObject, kind: ChangeKind) {
        sync_served(st, obj, kind);
    }
}

/// Errors that make a CRD unservable (reported as 422 causes on its create or update).
pub(crate) fn crd_resource_types(crd: &Value) -> Result<Vec<ResourceType>, Vec<StatusCause>> {
    let mut causes = Vec::new();
    let spec = &crd["spec"];
    let group = spec["group"].as_str().unwrap_or_default().to_string();
    let names = &spec["names"];
    let plural = names["plural"].as_str().unwrap_or_default().to_string();
    let kind = names["kind"].as_str().unwrap_or_default().to_string();
    let name = crd["metadata"]["name"].as_str().unwrap_or_default();
    let required = |field: &str, v: &str, causes: &mut Vec<StatusCause>| {
        if v.is_empty() {
            causes.push(StatusCause::field("FieldValueRequired", field, "Required value"));
        }
    };
    required("spec.group", &group, &mut causes);
    required("spec.names.plural", &plural, &mut causes);
    required("spec.names.kind", &kind, &mut causes);
    if !group.is_empty() && !group.contains('.') {
        causes.push(StatusCause::field(
            "FieldValueInvalid",
            "spec.group",
            format!("Invalid value: \"{group}\": should be a domain with at least one dot"),
        ));
    }
    if !plural.is_empty() && !group.is_empty() && name != format!("{plural}.{group}") {
        causes.push(StatusCause::field(
            "FieldValueInvalid",
            "metadata.name",
            format!("Invalid value: \"{name}\": must be spec.names.plural+\".\"+spec.group"),
        ));
    }
    let scope = spec["scope"].as_str().unwrap_or_default();
    if scope != "Namespaced" && scope != "Cluster" {
        causes.push(StatusCause::field(
            "FieldValueNotSupported",
            "spec.scope",
            format!("Unsupported value: \"{scope}\": supported values: \"Cluster\", \"Namespaced\""),
        ));
    }
    let versions = spec["versions"].as_array().cloned().unwrap_or_default();
    if versions.is_empty() {
        causes.push(StatusCause::field(
            "FieldValueRequired",
            "spec.versions",
            "Required value: must have exactly one version marked as storage version",
        ));
    }
    let storage = versions.iter().filter(|v| v["storage"].as_bool() == Some(true)).count();
    if !versions.is_empty() && storage != 1 {
        causes.push(StatusCause::field(
            "FieldValueInvalid",
            "spec.versions",
            format!("Invalid value: {}: must have exactly one version marked as storage version", storage),
        ));
    }
    let singular = names["singular"].as_str().map(str::to_string).unwrap_or_else(|| kind.to_lowercase());
    let list_kind = names["listKind"].as_str().map(str::to_string).unwrap_or_else(|| format!("{kind}List"));
    let strings = |v: &Value| -> Vec<String> {
        v.as_array().map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_string)).collect()).unwrap_or_default()
    };
    let mut out = Vec::new();
    for (i, v) in versions.iter().enumerate() {
        let vname = v["name"].as_str().unwrap_or_default().to_string();
        if vname.is_empty() {
            causes.push(StatusCause::field("FieldValueRequired", format!("spec.versions[{i}].name"), "Required value"));
            continue;
        }
        let schema_json = &v["schema"]["openAPIV3Schema"];
        let schema = if schema_json.is_object() {
            match StructuralSchema::compile(schema_json) {
                Ok(s) => Some(Arc::new(s)),
                Err(e) => {
                    causes.push(StatusCause::field(
                        "FieldValueInvalid",
                        format!("spec.versions[{i}].schema.openAPIV3Schema"),
                        format!("Invalid value: {e}"),
                    ));
                    None
                }
            }
        } else {
            causes.push(StatusCause::field(
                "FieldValueRequired",
                format!("spec.versions[{i}].schema.openAPIV3Schema"),
                "Required value: schemas are required",
            ));
            None
        };
        if v["served"].as_bool() != Some(true) {
            continue;
        }
        let sub = &v["subresources"];
        let scale = sub["scale"].as_object().map(|s| {
            let path = |k: &str| s.get(k).and_then(Value::as_str).map(|p| p.trim_start_matches('.').to_string());
            ScaleSpec {
                spec_replicas_path: path("specReplicasPath").unwrap_or_else(|| "spec.replicas".into()),
                status_replicas_path: path("statusReplicasPath").unwrap_or_else(|| "status.replicas".into()),
                label_selector_path: path("labelSelectorPath"),
                selector_form: crate::registry::SelectorForm::String,
            }
        });
        let selectable_fields = v["selectableFields"]
            .as_array()
            .map(|a| {
                a.iter().filter_map(|f| f["jsonPath"].as_str().map(|p| p.trim_start_matches('.').to_string())).collect()
            })
            .unwrap_or_default();
        let derived = Derived::of(&group, &vname, &plural, &kind);
        out.push(ResourceType {
            group: group.clone(),
            version: vname,
            kind: kind.clone(),
            list_kind: list_kind.clone(),
            plural: plural.clone(),
            singular: singular.clone(),
            namespaced: scope == "Namespaced",
            short_names: strings(&names["shortNames"]),
            categories: strings(&names["categories"]),
            status: sub["status"].is_object(),
            scale,
            selectable_fields,
            tracks_generation: true,
            custom: true,
            schema,
            schema_epoch: 0,
            printer_columns: v["additionalPrinterColumns"].as_array().cloned().unwrap_or_default(),
            decode_check: None,
            openapi: schema_json.is_object().then(|| SchemaSource::Crd(Arc::new(schema_json.clone()))),
            strategy: &CustomResourceStrategy,
            gates: Default::default(),
            defect: Default::default(),
            conversion: None,
            derived,
        });
    }
    if causes.is_empty() { Ok(out) } else { Err(causes) }
}

/// Keeps the registry in step with a CRD that was just written.
pub(crate) fn sync_served(st: &mut State, crd: &StoredObject, kind: ChangeKind) {
    if kind == ChangeKind::Deleted {
        st.registry.unregister_crd(&crd.name);
        // Instances are gone by now (the cleanup finalizer waited for them).
        let v = crd.value();
        st.store.remove_collection(&StorageKey::new(str_field(&v, "spec.group"), str_field(&v, "spec.names.plural")));
        return;
    }
    let v = crd.value();
    let conflict = st.registry.names_conflict(
        &crd.name,
        str_field(&v, "spec.group"),
        str_field(&v, "spec.names.plural"),
        str_field(&v, "spec.names.kind"),
    );
    match crd_resource_types(&v) {
        // A CRD whose names clash with another is stored but not served (NamesAccepted=False).
        Ok(mut types) if conflict.is_none() => {
            let conversion = super::conversion::Conversion::of(&v, Some(st)).map(Arc::new);
            for rt in &mut types {
                rt.conversion = conversion.clone();
            }
            st.registry.register_crd(&crd.name, types)
        }
        _ => st.registry.unregister_crd(&crd.name),
    }
}
