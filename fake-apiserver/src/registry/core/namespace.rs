//! Namespaces: the `kubernetes` finalizer and phase, the name rule, the `finalize`
//! subresource, and the NamespaceLifecycle admission check that refuses new content in a
//! namespace being deleted. (Removing the content is the namespace controller's job.)

use crate::error::{ApiError, StatusCause};
use crate::registry::printers::{age_col, col, name_col, since};
use crate::registry::store::UpdateMode;
use crate::registry::{NameRule, ResourceType, Strategy, string_list};
use crate::storage::Subresource;
use apimachinery::unstructured::{nested_field, set_nested_field};
use jiff::Timestamp;
use serde_json::{Value, json};

/// Finalizer on `spec.finalizers` of namespaces, cleared once their content is gone.
pub(crate) const NAMESPACE_FINALIZER: &str = "kubernetes";

/// core/v1 Namespace.
#[derive(Debug)]
pub(crate) struct NamespaceStrategy;

impl Strategy for NamespaceStrategy {
    fn deletes_collections(&self) -> bool {
        false
    }

    fn name_rule(&self) -> NameRule {
        NameRule::Label
    }

    /// The name label is a default when the name is known (SetDefaults_Namespace), so the
    /// creator owns it; a generated name gets it later, in PrepareForCreate here (Canonicalize
    /// upstream), owned by nobody.
    fn default(&self, _rt: &ResourceType, obj: &mut Value) {
        if let Some(name) = obj["metadata"]["name"].as_str().filter(|n| !n.is_empty()).map(str::to_string) {
            set_nested_field(obj, &["metadata", "labels", "kubernetes.io/metadata.name"], Value::String(name));
        }
    }

    fn prepare_for_create(&self, _rt: &ResourceType, obj: &mut Value, _now: &str) {
        let name = obj["metadata"]["name"].as_str().unwrap_or_default().to_string();
        set_nested_field(obj, &["metadata", "labels", "kubernetes.io/metadata.name"], Value::String(name));
        // The `kubernetes` finalizer is required on create, after any the client gave.
        let mut fins = string_list(nested_field(obj, &["spec", "finalizers"]));
        if !fins.iter().any(|f| f == NAMESPACE_FINALIZER) {
            fins.push(NAMESPACE_FINALIZER.into());
        }
        set_nested_field(obj, &["spec", "finalizers"], json!(fins));
        set_nested_field(obj, &["status"], json!({"phase": "Active"}));
    }

    /// `spec` (the finalizers) changes only through `/finalize`.
    fn prepare_for_update(&self, _rt: &ResourceType, new: &mut Value, old: &Value, mode: UpdateMode) {
        if mode == UpdateMode::Main {
            set_nested_field(new, &["spec"], old["spec"].clone());
        }
    }

    /// `spec.finalizers` are qualified names (or standard ones).
    fn validate(&self, _rt: &ResourceType, obj: &Value) -> Vec<StatusCause> {
        let mut out = Vec::new();
        let path = crate::registry::field::Path::root("spec").child("finalizers");
        for f in string_list(obj["spec"].get("finalizers")) {
            for msg in apimachinery::validation::label_key_errors(&f) {
                out.push(crate::registry::field::invalid(&path, f.as_str(), &msg));
            }
            // validateKubeFinalizerName: a name without a `/` must be a standard one.
            if !f.contains('/') && !["kubernetes", "orphan", "foregroundDeletion"].contains(&f.as_str()) {
                out.push(crate::registry::field::invalid(
                    &path,
                    f.as_str(),
                    "name is neither a standard finalizer name nor is it fully qualified",
                ));
            }
        }
        out
    }

    /// Only a namespace being deleted leaves the `Active` phase.
    fn validate_status_update(&self, _rt: &ResourceType, obj: &Value, _old: &Value) -> Vec<StatusCause> {
        let deleting = obj["metadata"].get("deletionTimestamp").is_some_and(|v| !v.is_null());
        let phase = obj["status"]["phase"].as_str().unwrap_or_default();
        if !deleting && phase != "Active" {
            let path = crate::registry::field::Path::root("status").child("Phase");
            return vec![crate::registry::field::invalid(
                &path,
                phase,
                "may only be 'Active' if `deletionTimestamp` is empty",
            )];
        }
        Vec::new()
    }

    fn finalizers_pending(&self, obj: &Value) -> bool {
        !string_list(obj["spec"].get("finalizers")).is_empty()
    }

    fn mark_deleting(&self, obj: &mut Value, _now: &str) {
        set_nested_field(obj, &["status", "phase"], json!("Terminating"));
    }

    fn subresources(&self) -> &'static [Subresource] {
        &[Subresource::Finalize]
    }

    fn table_columns(&self, _rt: &ResourceType) -> Vec<Value> {
        vec![name_col(), col("Status", "string", "", 0, "The status of the namespace"), age_col()]
    }

    fn table_cells(&self, _rt: &ResourceType, obj: &Value, now: Timestamp) -> Vec<Value> {
        let age = json!(since(&obj["metadata"]["creationTimestamp"], now));
        vec![json!(obj["metadata"]["name"]), json!(obj["status"]["phase"].as_str().unwrap_or_default()), age]
    }
}

/// 403 Forbidden for a create in a namespace being deleted, with the `NamespaceTerminating`
/// cause the NamespaceLifecycle admission plugin adds.
pub(crate) fn terminating_forbidden(rt: &ResourceType, namespace: &str, name: &str) -> ApiError {
    let mut e = ApiError::forbidden(
        &rt.group,
        &rt.plural,
        name,
        format!("unable to create new content in namespace {namespace} because it is being terminated"),
    );
    if let Some(d) = e.details.as_mut() {
        d.causes.push(StatusCause::field(
            "NamespaceTerminating",
            "metadata.namespace",
            format!("namespace {namespace} is being terminated"),
        ));
    }
    e
}
