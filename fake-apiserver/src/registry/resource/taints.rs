//! Device taints and tolerations (`validateDeviceTaint`, `validateDeviceToleration` of
//! pkg/apis/resource/validation/validation.go at k8s.io/kubernetes v1.37.2). The key of a
//! toleration and the enums are covered by the `+k8s:` tags of `DeviceToleration` and
//! `DeviceTaint`, so those errors come after the handwritten ones.

use super::causes::Causes;
use super::names::label_name;
use crate::registry::field::{self, Path};
use apimachinery::validation::label_value_errors;
use serde_json::Value;

/// `validDeviceTaintEffects`, sorted as `sets.List` returns them.
const EFFECTS: [&str; 3] = ["NoExecute", "NoSchedule", "None"];
/// `validDeviceTolerationOperators`, sorted as the enum tag lists them.
const OPERATORS: [&str; 2] = ["Equal", "Exists"];

/// `validateLabelValue`.
fn label_value(out: &mut Causes, path: &Path, v: &str) {
    out.extend(label_value_errors(v).iter().map(|m| field::invalid(path, v, m)));
}

/// `validateDeviceTaint`; the effect is checked when the taint is new or its effect changed.
pub(super) fn taint(out: &mut Causes, t: &Value, old: Option<&Value>, path: &Path) {
    out.extend(label_name(&path.child("key"), super::text(t, "key")));
    let value = super::text(t, "value");
    if !value.is_empty() {
        label_value(out, &path.child("value"), value);
    }
    let effect = super::text(t, "effect");
    if old.is_none_or(|o| super::text(o, "effect") != effect) {
        taint_effect_declared(out, effect, &path.child("effect"));
    }
}

/// The `required` and `enum` tags of `DeviceTaint.effect`.
pub(super) fn taint_effect_declared(out: &mut Causes, effect: &str, path: &Path) {
    if effect.is_empty() {
        out.declared(field::required(path, ""));
    } else if !EFFECTS.contains(&effect) {
        out.declared(field::not_supported(path, effect, &EFFECTS));
    }
}

/// `validateDeviceToleration`.
pub(super) fn toleration(out: &mut Causes, t: &Value, path: &Path) {
    let key = super::text(t, "key");
    if !key.is_empty() {
        label_name(&path.child("key"), key).into_iter().for_each(|c| out.declared(c));
    }
    let value = super::text(t, "value");
    match super::text(t, "operator") {
        "Exists" => {
            if !value.is_empty() {
                out.push(field::invalid(&path.child("value"), value, "must be empty for operator `Exists`"));
            }
        }
        "Equal" => label_value(out, &path.child("value"), value),
        "" => out.declared(field::required(&path.child("operator"), "")),
        other => out.declared(field::not_supported(&path.child("operator"), other, &OPERATORS)),
    }
    let effect = super::text(t, "effect");
    if !effect.is_empty() && !EFFECTS.contains(&effect) {
        out.declared(field::not_supported(&path.child("effect"), effect, &EFFECTS));
    }
}

/// Each toleration of a request, subrequest or allocation result (no size limit).
pub(super) fn tolerations(out: &mut Causes, ts: &[Value], path: &Path) {
    for (i, t) in ts.iter().enumerate() {
        toleration(out, t, &path.index(i));
    }
}
