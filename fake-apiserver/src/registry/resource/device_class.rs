//! DeviceClasses (`ValidateDeviceClass`, `ValidateDeviceClassUpdate` and
//! `validateDeviceClassSpec` of pkg/apis/resource/validation/validation.go at
//! k8s.io/kubernetes v1.37.2): at most 32 CEL selectors and 32 opaque configurations (the
//! sizes covered by tags), an extended resource name (covered by
//! `format=k8s-extended-resource-name`). Selectors and configuration left as they were by an
//! update count as stored: their expressions and sizes are not checked again.

use super::causes::Causes;
use super::config::device_configuration;
use super::device_claim::{LIST_MAX, selectors};
use super::list;
use crate::error::StatusCause;
use crate::registry::field::{self, Path};
use crate::registry::{ResourceType, Strategy};
use apimachinery::json::semantically_equal;
use apimachinery::validation::label_key_errors;
use serde_json::Value;

/// DeviceClasses.
#[derive(Debug)]
pub(crate) struct DeviceClassStrategy;

impl Strategy for DeviceClassStrategy {
    // ValidateDeviceClass: `ValidateObjectMetaWithOpts` (pkg/apis/resource/validation/validation.go).
    fn validates_generate_name(&self) -> bool {
        false
    }

    fn validate(&self, _rt: &ResourceType, obj: &Value) -> Vec<StatusCause> {
        device_class_spec(&obj["spec"], None).into_vec()
    }

    fn validate_update(&self, _rt: &ResourceType, obj: &Value, old: &Value) -> Vec<StatusCause> {
        device_class_spec(&obj["spec"], Some(&old["spec"])).into_vec()
    }
}

/// `validateDeviceClassSpec`.
fn device_class_spec(spec: &Value, old: Option<&Value>) -> Causes {
    let mut out = Causes::default();
    let path = Path::root("spec");
    let unchanged = |k: &str| old.is_some_and(|o| semantically_equal(&spec[k], &o[k]));
    selectors(&mut out, list(spec, "selectors"), &path.child("selectors"), unchanged("selectors"));
    let configs = list(spec, "config");
    let cpath = path.child("config");
    if configs.len() > LIST_MAX {
        out.declared(field::too_many(&cpath, configs.len(), LIST_MAX));
    } else {
        let stored = unchanged("config");
        for (i, c) in configs.iter().enumerate() {
            device_configuration(&mut out, c, &cpath.index(i), stored);
        }
    }
    if let Some(name) = spec.get("extendedResourceName").and_then(Value::as_str) {
        extended_resource_name(&mut out, &path.child("extendedResourceName"), name);
    }
    out
}

/// `validate.ExtendedResourceName` (format=k8s-extended-resource-name): a domain-prefixed path,
/// not in `kubernetes.io`, without the `requests.` prefix, and a label key once prefixed with
/// `requests.` (as quota names it).
fn extended_resource_name(out: &mut Causes, path: &Path, v: &str) {
    if !v.contains('/') {
        out.declared(field::invalid(path, v, "a name must be a domain-prefixed path, such as 'example.com/my-prop'"));
    } else if v.contains("kubernetes.io/") {
        out.declared(field::invalid(path, v, "must not have \"kubernetes.io/\" domain"));
    }
    if v.starts_with("requests.") {
        out.declared(field::invalid(path, v, "must not have \"requests.\" prefix"));
    }
    for msg in label_key_errors(&format!("requests.{v}")) {
        out.declared(field::invalid(path, v, &msg));
    }
}
