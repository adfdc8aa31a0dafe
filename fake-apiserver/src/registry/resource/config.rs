//! Opaque device configuration (`validateDeviceConfiguration`, `validateOpaqueConfiguration`,
//! `validateRawExtension` of pkg/apis/resource/validation/validation.go at k8s.io/kubernetes
//! v1.37.2): an `opaque` member whose driver is a driver name (covered by the tags of
//! `OpaqueDeviceConfiguration.driver`) and whose parameters are a JSON object of at most
//! 10 KiB (not checked again for configuration that was stored before).

use super::causes::Causes;
use super::names::driver_name_declared;
use crate::registry::field::{self, Path};
use serde_json::Value;

/// `OpaqueParametersMaxLength`.
const PARAMETERS_MAX: usize = 10 * 1024;

/// `validateDeviceConfiguration` of the configuration at `path` (its `opaque` member).
pub(super) fn device_configuration(out: &mut Causes, config: &Value, path: &Path, stored: bool) {
    let at = path.child("opaque");
    match config.get("opaque").filter(|o| !o.is_null()) {
        None => out.push(field::required(&at, "")),
        Some(o) => {
            driver_name_declared(out, &at.child("driver"), super::text(o, "driver"));
            out.extend(raw_extension(o.get("parameters"), &at.child("parameters"), stored, PARAMETERS_MAX));
        }
    }
}

/// `validateRawExtension`: present (JSON `null` decodes to no bytes), at most `max` bytes on
/// create, a JSON object.
pub(super) fn raw_extension(
    v: Option<&Value>,
    path: &Path,
    stored: bool,
    max: usize,
) -> Vec<crate::error::StatusCause> {
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return vec![field::required(path, "")];
    };
    if !stored && v.to_string().len() > max {
        return vec![field::too_long(path, max)];
    }
    if !v.is_object() {
        return vec![field::invalid(path, "<value omitted>", "must be a valid JSON object")];
    }
    Vec::new()
}
