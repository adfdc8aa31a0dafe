//! JSON patch (RFC 6902) as kube-apiserver applies it (evanphx/json-patch v4), where it
//! differs from the `json_patch` crate: a `test` for `null` passes when the member is absent
//! but its parent exists. kube-runtime's finalizer helper relies on that: it adds the first
//! finalizer with `test /metadata/finalizers == null` then `add`.

use json_patch::{Patch, PatchError, PatchOperation};
use serde_json::Value;

/// Whether `op` is a `test` for null of a member that is absent from an existing parent.
fn absent_member_tested_for_null(doc: &Value, op: &PatchOperation) -> bool {
    let PatchOperation::Test(t) = op else { return false };
    if !t.value.is_null() {
        return false;
    }
    let path = t.path.to_string();
    if doc.pointer(&path).is_some() {
        return false;
    }
    let parent = path.rsplit_once('/').map_or("", |(p, _)| p);
    doc.pointer(parent).is_some_and(|p| p.is_object() || p.is_array())
}

/// Applies `patch` to `doc` in place. On error `doc` may be partly patched: callers patch a
/// scratch copy.
pub fn apply(doc: &mut Value, patch: &Patch) -> Result<(), PatchError> {
    if !patch.0.iter().any(|op| matches!(op, PatchOperation::Test(t) if t.value.is_null())) {
        return json_patch::patch_unsafe(doc, patch);
    }
    for op in &patch.0 {
        if absent_member_tested_for_null(doc, op) {
            continue;
        }
        json_patch::patch_unsafe(doc, std::slice::from_ref(op))?;
    }
    Ok(())
}
