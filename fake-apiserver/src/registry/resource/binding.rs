//! `validateDeviceBindingParameters` (pkg/apis/resource/validation/validation.go at
//! k8s.io/kubernetes v1.37.2): a device's or allocation result's binding conditions and
//! binding failure conditions, at most 4 each (the limit is covered by `maxItems=4`), label
//! names, unique, disjoint, and never one list without the other.

use super::causes::Causes;
use super::names::label_name;
use crate::registry::field::{self, Bad, Path};
use serde_json::Value;
use std::collections::BTreeSet;

/// `BindingConditionsMaxSize`, `BindingFailureConditionsMaxSize`.
const CONDITIONS_MAX: usize = 4;

fn strings(v: &Value, key: &str) -> Vec<String> {
    super::list(v, key).iter().map(|s| s.as_str().unwrap_or_default().to_string()).collect()
}

/// The list as Go prints a `[]string`: `null` when absent, else JSON.
fn printed(v: &Value, key: &str) -> Bad {
    match v.get(key).filter(|x| !x.is_null()) {
        None => Bad::Null,
        Some(x) => Bad::Raw(x.to_string()),
    }
}

/// The binding parameters of `parent` (a device or an allocation result) at `path`.
pub(super) fn binding_parameters(out: &mut Causes, parent: &Value, path: &Path) {
    let conditions = strings(parent, "bindingConditions");
    let failures = strings(parent, "bindingFailureConditions");
    for (key, items) in [("bindingConditions", &conditions), ("bindingFailureConditions", &failures)] {
        let at = path.child(key);
        if items.len() > CONDITIONS_MAX {
            out.declared(field::too_many(&at, items.len(), CONDITIONS_MAX));
            continue;
        }
        for (i, c) in items.iter().enumerate() {
            out.extend(label_name(&at.index(i), c));
        }
    }
    let mut seen = BTreeSet::new();
    for (i, c) in conditions.iter().enumerate() {
        if !seen.insert(c.as_str()) {
            out.push(field::duplicate(&path.child("bindingConditions").index(i), c.as_str()));
        }
    }
    let mut seen_failures = BTreeSet::new();
    for (i, c) in failures.iter().enumerate() {
        let at = path.child("bindingFailureConditions").index(i);
        if !seen_failures.insert(c.as_str()) {
            out.push(field::duplicate(&at, c.as_str()));
        }
        if conditions.contains(c) {
            out.push(field::invalid(
                &at,
                c.as_str(),
                "bindingFailureConditions must not overlap with bindingConditions",
            ));
        }
    }
    if conditions.is_empty() && !failures.is_empty() {
        out.push(field::invalid(
            &path.child("bindingConditions"),
            printed(parent, "bindingConditions"),
            "bindingConditions are required to use bindingFailureConditions",
        ));
    }
    if failures.is_empty() && !conditions.is_empty() {
        out.push(field::invalid(
            &path.child("bindingFailureConditions"),
            printed(parent, "bindingFailureConditions"),
            "bindingFailureConditions are required to use bindingConditions",
        ));
    }
}
