//! JSON patch (RFC 6902) as kube-apiserver applies it (evanphx/json-patch v4,
//! <https://github.com/evanphx/json-patch/blob/v4.13.0/patch.go>), where it differs from the
//! `json_patch` crate: a `test` for `null` passes when the member is absent but its parent
//! exists, a `test` of any other value on an absent member is a failed test (not a bad path),
//! and errors read as Go's. kube-runtime's finalizer helper relies on the first: it adds the
//! first finalizer with `test /metadata/finalizers == null` then `add`.

use json_patch::{Patch, PatchOperation};
use serde_json::Value;

/// Why a patch did not apply, worded as evanphx/json-patch words it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchError {
    pub message: String,
    /// A `test` operation found another value (`ErrTestFailed`); a mutating admission policy
    /// then leaves the object as it was.
    pub test_failed: bool,
}

impl std::fmt::Display for PatchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for PatchError {}

/// The parent of a JSON pointer and the last token (unescaped).
fn split(path: &str) -> (&str, String) {
    let (parent, last) = path.rsplit_once('/').unwrap_or(("", path));
    (parent, last.replace("~1", "/").replace("~0", "~"))
}

/// Whether the container a pointer's last token is looked up in exists.
fn has_parent(doc: &Value, path: &str) -> bool {
    let (parent, _) = split(path);
    doc.pointer(parent).is_some_and(|p| p.is_object() || p.is_array())
}

/// Applies `patch` to `doc` in place, one operation after another. On error `doc` may be partly
/// patched: callers patch a scratch copy.
pub fn apply(doc: &mut Value, patch: &Patch) -> Result<(), PatchError> {
    for op in &patch.0 {
        apply_one(doc, op)?;
    }
    Ok(())
}

fn apply_one(doc: &mut Value, op: &PatchOperation) -> Result<(), PatchError> {
    let fail = |message: String| PatchError { message, test_failed: false };
    if let PatchOperation::Test(t) = op {
        let path = t.path.to_string();
        if !path.is_empty() && !has_parent(doc, &path) {
            return Err(fail(format!("test operation does not apply: is missing path: {path}: missing value")));
        }
        let found = if path.is_empty() { Some(&*doc) } else { doc.pointer(&path) };
        return match found {
            // evanphx: an absent member equals a `null` value.
            None if t.value.is_null() => Ok(()),
            Some(v) if *v == t.value => Ok(()),
            _ => Err(PatchError { message: format!("testing value {path} failed: test failed"), test_failed: true }),
        };
    }
    let before = describe(doc, op);
    json_patch::patch_unsafe(doc, std::slice::from_ref(op)).map_err(|e| fail(before.unwrap_or_else(|| e.to_string())))
}

/// What evanphx says of `op` failing on `doc`, where it can be told before applying it.
fn describe(doc: &Value, op: &PatchOperation) -> Option<String> {
    let index_error = |verb: &str, path: &str| {
        let (_, last) = split(path);
        Some(match last.parse::<i64>() {
            Ok(i) => format!(
                "error in {verb} for path: '{path}': Unable to access invalid index: {i}: invalid index referenced"
            ),
            Err(e) => format!("error in {verb} for path: '{path}': value was not a proper array index: '{last}': {e}"),
        })
    };
    match op {
        PatchOperation::Add(o) => {
            let path = o.path.to_string();
            if !path.is_empty() && !has_parent(doc, &path) {
                return Some(format!("add operation does not apply: doc is missing path: \"{path}\": missing value"));
            }
            index_error("add", &path)
        }
        PatchOperation::Remove(o) => {
            let path = o.path.to_string();
            if !has_parent(doc, &path) {
                return Some(format!(
                    "remove operation does not apply: doc is missing path: \"{path}\": missing value"
                ));
            }
            let (parent, last) = split(&path);
            if doc.pointer(parent).is_some_and(Value::is_object) {
                return Some(format!(
                    "error in remove for path: '{path}': Unable to remove nonexistent key: {last}: missing value"
                ));
            }
            index_error("remove", &path)
        }
        PatchOperation::Replace(o) => {
            let path = o.path.to_string();
            if !has_parent(doc, &path) {
                return Some(format!("replace operation does not apply: doc is missing path: {path}: missing value"));
            }
            Some(format!("replace operation does not apply: doc is missing key: {path}: missing value"))
        }
        PatchOperation::Move(o) => moved("move", doc, &o.from.to_string(), &o.path.to_string()),
        PatchOperation::Copy(o) => moved("copy", doc, &o.from.to_string(), &o.path.to_string()),
        _ => None,
    }
}

fn moved(verb: &str, doc: &Value, from: &str, path: &str) -> Option<String> {
    if doc.pointer(from).is_none() {
        return Some(format!("{verb} operation does not apply: doc is missing from path: {from}: missing value"));
    }
    if !path.is_empty() && !has_parent(doc, path) {
        return Some(format!(
            "{verb} operation does not apply: doc is missing destination path: {path}: missing value"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(doc: Value, ops: Value) -> Result<Value, PatchError> {
        let patch: Patch = serde_json::from_value(ops).unwrap();
        let mut doc = doc;
        apply(&mut doc, &patch).map(|()| doc)
    }

    #[test]
    fn a_null_test_of_an_absent_member_passes_and_other_tests_fail_as_tests() {
        let doc = json!({"metadata": {"name": "a"}});
        let ok = run(
            doc.clone(),
            json!([{"op": "test", "path": "/metadata/finalizers", "value": null},
                                         {"op": "add", "path": "/metadata/finalizers", "value": ["f"]}]),
        );
        assert_eq!(ok.unwrap()["metadata"]["finalizers"], json!(["f"]));
        let e = run(doc.clone(), json!([{"op": "test", "path": "/metadata/uid", "value": "x"}])).unwrap_err();
        assert!(e.test_failed, "{e}");
        assert_eq!(e.message, "testing value /metadata/uid failed: test failed");
        let e = run(doc, json!([{"op": "test", "path": "/spec/x", "value": 1}])).unwrap_err();
        assert_eq!(
            (e.test_failed, e.message.as_str()),
            (false, "test operation does not apply: is missing path: /spec/x: missing value")
        );
    }

    #[test]
    fn errors_read_as_evanphx_words_them() {
        let doc = json!({"spec": {"list": [1]}});
        let msg = |ops: Value| run(doc.clone(), ops).unwrap_err().message;
        assert_eq!(
            msg(json!([{"op": "replace", "path": "/nope/x", "value": 1}])),
            "replace operation does not apply: doc is missing path: /nope/x: missing value"
        );
        assert_eq!(
            msg(json!([{"op": "replace", "path": "/spec/x", "value": 1}])),
            "replace operation does not apply: doc is missing key: /spec/x: missing value"
        );
        assert_eq!(
            msg(json!([{"op": "add", "path": "/a/b", "value": 1}])),
            "add operation does not apply: doc is missing path: \"/a/b\": missing value"
        );
        assert_eq!(
            msg(json!([{"op": "remove", "path": "/spec/x"}])),
            "error in remove for path: '/spec/x': Unable to remove nonexistent key: x: missing value"
        );
        assert_eq!(
            msg(json!([{"op": "add", "path": "/spec/list/5", "value": 1}])),
            "error in add for path: '/spec/list/5': Unable to access invalid index: 5: invalid index referenced"
        );
        assert_eq!(
            msg(json!([{"op": "move", "from": "/spec/y", "path": "/spec/z"}])),
            "move operation does not apply: doc is missing from path: /spec/y: missing value"
        );
    }
}
