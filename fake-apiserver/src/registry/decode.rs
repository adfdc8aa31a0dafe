//! Decoding request bodies as kube-apiserver's decoder does: JSON or YAML, type meta that must
//! match the URL, the shapes of ObjectMeta fields, then the built-in type (400 BadRequest on
//! failure; a patched object that no longer decodes is 422).

use super::patch_meta::Shape;
use super::{DecodeCheck, ResourceType};
use crate::error::{ApiError, ApiResult, StatusCause};
use apimachinery::go::quote;
use serde_json::Value;

/// Parses a request body (JSON or YAML) into an object.
pub(crate) fn parse_object(body: &[u8], yaml: bool) -> ApiResult<Value> {
    let v: Value = if yaml {
        let text = std::str::from_utf8(body).map_err(|e| ApiError::bad_request(format!("body is not UTF-8: {e}")))?;
        serde_saphyr::from_str(text)
            .map_err(|e| ApiError::bad_request(format!("error converting YAML to JSON: {e}")))?
    } else {
        serde_json::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("couldn't get version/kind; json parse error: {e}")))?
    };
    match v {
        // Go decodes a JSON `null` into the empty object of the URL's type.
        Value::Null if !yaml => Ok(Value::Object(serde_json::Map::new())),
        Value::Object(_) => Ok(v),
        _ => Err(ApiError::bad_request("the body of the request must be a JSON object")),
    }
}

/// Go's name for the JSON type of a value, as `encoding/json` words its unmarshal errors.
pub(crate) fn go_json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The decoder reads `apiVersion` and `kind` as strings before anything else: any other JSON
/// type (null aside) fails with "couldn't get version/kind; json parse error: ...".
fn check_type_meta_types(obj: &Value) -> Result<(), String> {
    if !obj.is_object() && !obj.is_null() {
        return Err(format!(
            "couldn't get version/kind; json parse error: json: cannot unmarshal {} into Go value of type struct {{ APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }}",
            go_json_type(obj)
        ));
    }
    for field in ["apiVersion", "kind"] {
        match obj.get(field) {
            None | Some(Value::Null) | Some(Value::String(_)) => {}
            Some(other) => {
                return Err(format!(
                    "couldn't get version/kind; json parse error: json: cannot unmarshal {} into Go struct field .{field} of type string",
                    go_json_type(other)
                ));
            }
        }
    }
    Ok(())
}

/// Checks that apiVersion and kind, when given, are strings that match the URL, and fills them
/// in when not.
pub(crate) fn check_type_meta(rt: &ResourceType, obj: &mut Value) -> ApiResult<()> {
    check_type_meta_types(obj).map_err(ApiError::bad_request)?;
    let o =
        obj.as_object_mut().ok_or_else(|| ApiError::bad_request("the body of the request must be a JSON object"))?;
    let api_version = rt.api_version();
    if let Some(message) = other_builtin_kind(rt, o) {
        return Err(ApiError::bad_request(message));
    }
    match o.get("apiVersion").and_then(Value::as_str) {
        Some(v) if !v.is_empty() && v != api_version => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({v}) does not match the expected API version ({api_version})"
            )));
        }
        _ => {
            o.insert("apiVersion".into(), Value::String(api_version.to_string()));
        }
    }
    // The unstructured decoder of a custom resource needs the kind in the data (a built-in's
    // takes the URL's).
    if rt.custom && o.get("kind").and_then(Value::as_str).is_none_or(str::is_empty) {
        return Err(ApiError::bad_request(format!(
            "{kind} in version \"{}\" cannot be handled as a {kind}: Object 'Kind' is missing in '{}'",
            rt.version,
            serde_json::to_string(&*o).unwrap_or_default(),
            kind = rt.kind
        )));
    }
    match o.get("kind").and_then(Value::as_str) {
        // A custom resource is decoded whatever its kind: its validation refuses another one
        // (`customResourceValidator.ValidateTypeMeta`).
        Some(k) if !k.is_empty() && k != rt.kind && rt.custom => {}
        Some(k) if !k.is_empty() && k != rt.kind => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({k}) does not match the expected kind ({})",
                rt.kind
            )));
        }
        _ => {
            o.insert("kind".into(), Value::String(rt.kind.clone()));
        }
    }
    Ok(())
}

/// An apply configuration must name the URL's group, version and kind exactly: the field
/// manager's `versionCheckManager` refuses anything else, an absent apiVersion or kind
/// included, with `invalid object type: <group>/<version>, Kind=<kind>` (apimachinery v0.37.2
/// pkg/util/managedfields/internal/versioncheck.go).
pub(crate) fn check_apply_type_meta(rt: &ResourceType, obj: &Value) -> ApiResult<()> {
    check_type_meta_types(obj).map_err(ApiError::bad_request)?;
    let text = |k: &str| obj.get(k).and_then(Value::as_str).unwrap_or_default();
    let (api_version, kind) = (text("apiVersion"), text("kind"));
    if api_version == rt.api_version() && kind == rt.kind {
        return Ok(());
    }
    // Go's `ParseGroupVersion`: "v1" is the core group, "a/b" group a version b, more slashes
    // parse to nothing.
    let (group, version) = match api_version.split('/').collect::<Vec<_>>()[..] {
        [""] => ("", ""),
        [v] => ("", v),
        [g, v] => (g, v),
        _ => ("", ""),
    };
    Err(ApiError::bad_request(format!("invalid object type: {group}/{version}, Kind={kind}")))
}

/// kube-apiserver decodes a body that names another built-in kind as that kind, then fails to
/// convert it to the URL's kind; `transformDecodeError` in
/// https://github.com/kubernetes/kubernetes/blob/v1.37.2/staging/src/k8s.io/apiserver/pkg/endpoints/handlers/create.go
/// words that as `<Kind> in version "<v>" cannot be handled as a <URL kind>: converting
/// (<v>.<Kind>) to (<internal package>.<URL kind>): unknown conversion`.
fn other_builtin_kind(rt: &ResourceType, o: &serde_json::Map<String, Value>) -> Option<String> {
    let kind = o.get("kind").and_then(Value::as_str).filter(|k| !k.is_empty() && *k != rt.kind)?;
    let api_version = o.get("apiVersion").and_then(Value::as_str).filter(|v| !v.is_empty()).unwrap_or(rt.api_version());
    let known = super::builtin_kinds().into_iter().any(|b| b.kind == kind && b.api_version == api_version);
    if !known {
        return None;
    }
    let version = api_version.rsplit('/').next().unwrap_or(api_version);
    // The internal types live in pkg/apis/<group's first label>; events.k8s.io's Event is core's.
    let internal = match rt.group.as_str() {
        "" | "events.k8s.io" => "core",
        group => group.split('.').next().unwrap_or(group),
    };
    Some(format!(
        "{kind} in version \"{version}\" cannot be handled as a {}: converting ({version}.{kind}) to ({internal}.{}): unknown conversion",
        rt.kind, rt.kind
    ))
}

/// Runs the built-in decoder on a body whose type meta [`check_type_meta`] has checked and
/// filled in: a type error (`replicas: "three"`) is 400 BadRequest, before any storage check,
/// as kube-apiserver decodes the body first.
fn decode_body(rt: &ResourceType, obj: &Value) -> ApiResult<()> {
    let quantity =
        if rt.custom { None } else { bad_quantity(obj, Shape::builtin_root(&rt.group, &rt.version, &rt.kind), 0) };
    if let Some(why) = quantity {
        return Err(ApiError::bad_request(format!(
            "{} in version \"{}\" cannot be handled as a {}: {why}",
            rt.kind, rt.version, rt.kind
        )));
    }
    match rt.decode_check {
        Some(check) => check(obj).map_err(|e| {
            ApiError::bad_request(format!(
                "{} in version \"{}\" cannot be handled as a {}: {e}",
                rt.kind, rt.version, rt.kind
            ))
        }),
        None => Ok(()),
    }
}

/// Decodes a request body for `rt` the way the create and update handlers do: type meta, the
/// shapes of ObjectMeta fields, then the built-in decoder (400 BadRequest on failure). What
/// the decoder leaves is what kube-apiserver's leaves: a built-in loses the fields its type
/// does not declare and gets its defaults, a custom resource is pruned and defaulted by its
/// schema, so managedFields and validation see the object as it will be stored.
pub(crate) fn decode_object(rt: &ResourceType, obj: &mut Value) -> ApiResult<()> {
    decode(rt, obj, false)
}

/// [`decode_object`] of the body of a status write: the kind may canonicalize only what the
/// write keeps ([`Strategy::canonicalize_status_write`](super::Strategy::canonicalize_status_write)).
pub(crate) fn decode_status_write(rt: &ResourceType, obj: &mut Value) -> ApiResult<()> {
    decode(rt, obj, true)
}

fn decode(rt: &ResourceType, obj: &mut Value, status_write: bool) -> ApiResult<()> {
    check_type_meta(rt, obj)?;
    go_nulls_of(rt, obj);
    check_meta_shape(rt, obj)?;
    decode_body(rt, obj)?;
    if !rt.custom {
        // Fields of gated features our types do not declare (KEP-5194 as proposed) survive the
        // decoder while their gate is on, as they would in a build that has them.
        let kept = rt.strategy.gated_fields(rt, obj);
        drop_unknown_fields(obj, Shape::builtin_root(&rt.group, &rt.version, &rt.kind), 0);
        for (path, value) in kept {
            restore(obj, &path, value);
        }
    }
    if status_write {
        rt.strategy.canonicalize_status_write(rt, obj);
    } else {
        rt.strategy.canonicalize(rt, obj);
    }
    rt.strategy.default(rt, obj);
    // Decoded into its Go type and written back (a no-op for custom resources).
    super::go_types::go_shape(rt, obj);
    Ok(())
}

/// The first quantity of a built-in object Go's `Quantity.UnmarshalJSON` refuses (a string,
/// trimmed, or a number's text, through `ParseQuantity`), with Go's error.
fn bad_quantity(v: &Value, shape: Shape<'_>, depth: usize) -> Option<&'static str> {
    const QUANTITY: &str = "apimachinery.pkg.api.resource.Quantity";
    if depth > crate::apiextensions::MAX_DEPTH {
        return None;
    }
    let check = |x: &Value| match x {
        Value::String(s) => apimachinery::quantity::go_parse_error(s.trim()),
        Value::Number(n) => apimachinery::quantity::go_parse_error(&n.to_string()),
        _ => None,
    };
    if shape.field_type() == Some(QUANTITY) {
        return check(v);
    }
    match v {
        Value::Object(m) => {
            if shape.element_type() == Ok(Some(QUANTITY)) {
                return m.values().find_map(check);
            }
            m.iter().find_map(|(k, x)| bad_quantity(x, shape.child(k), depth + 1))
        }
        Value::Array(items) => items.iter().find_map(|x| bad_quantity(x, shape.item(), depth + 1)),
        _ => None,
    }
}

/// [`go_nulls`] of a built-in object (custom resources keep theirs for their schema).
pub(crate) fn go_nulls_of(rt: &ResourceType, obj: &mut Value) {
    if !rt.custom {
        go_nulls(obj, Shape::builtin_root(&rt.group, &rt.version, &rt.kind), 0);
    }
}

/// What Go's `encoding/json` makes of the JSON nulls in a built-in object: a struct field's
/// null leaves the field unset (absent once encoded again), a map entry's or a list item's null
/// is the zero value of the element type (an empty string, an empty struct, the zero
/// Quantity `0`). So `labels: {app: null}` is stored as `app: ""`, as kube-apiserver stores it.
fn go_nulls(v: &mut Value, shape: Shape<'_>, depth: usize) {
    if depth > crate::apiextensions::MAX_DEPTH {
        return;
    }
    let zero = |element: Option<&str>, shape: Shape<'_>| match element {
        Some(t) if t.ends_with("resource.Quantity") => Value::String("0".into()),
        _ if shape.holds_struct() => Value::Object(Default::default()),
        _ => Value::String(String::new()),
    };
    match v {
        Value::Object(m) => {
            match shape.element_type() {
                Ok(element) => {
                    for (k, x) in m.iter_mut().filter(|(_, x)| x.is_null()) {
                        *x = zero(element, shape.child(k));
                    }
                }
                Err(()) => m.retain(|_, x| !x.is_null()),
            }
            for (k, x) in m.iter_mut() {
                go_nulls(x, shape.child(k), depth + 1);
            }
        }
        Value::Array(items) => {
            let element = shape.element_type().ok().flatten();
            for x in items.iter_mut() {
                if x.is_null() {
                    *x = zero(element, shape.item());
                }
                go_nulls(x, shape.item(), depth + 1);
            }
        }
        _ => {}
    }
}

/// Puts `value` back at `path` (whose parents the decoder kept, or are created).
fn restore(obj: &mut Value, path: &[&str], value: Value) {
    let Some((last, parents)) = path.split_last() else { return };
    let mut at = obj;
    for p in parents {
        let Some(map) = at.as_object_mut() else { return };
        let child = map.entry(p.to_string()).or_insert_with(|| Value::Object(Default::default()));
        if !child.is_object() {
            *child = Value::Object(Default::default());
        }
        at = child;
    }
    if let Some(map) = at.as_object_mut() {
        map.insert(last.to_string(), value);
    }
}

/// Removes the fields the built-in type does not declare, and `null`s (which the Go types
/// decode as absent), as decoding into the typed object and encoding it again does.
fn drop_unknown_fields(v: &mut Value, shape: Shape<'_>, depth: usize) {
    if depth > crate::apiextensions::MAX_DEPTH {
        return;
    }
    match v {
        Value::Object(m) => {
            m.retain(|k, x| !x.is_null() && shape.declares(k) != Some(false));
            for (k, x) in m.iter_mut() {
                drop_unknown_fields(x, shape.child(k), depth + 1);
            }
        }
        Value::Array(items) => {
            for x in items {
                drop_unknown_fields(x, shape.item(), depth + 1);
            }
        }
        _ => {}
    }
}

/// Checks that a patched object still decodes into its type. The patch handler answers a
/// failure with 422 Invalid: `NewInvalid(GroupKind{}, "", [field.Invalid("patch",
/// string(patchedJS), err)])`. `api_version` and `kind` fill in type meta the patch left
/// empty (the decoder defaults them from the target type).
pub(crate) fn check_patched(
    patched: &Value,
    api_version: &str,
    kind: &str,
    check: Option<DecodeCheck>,
) -> ApiResult<()> {
    let result = check_type_meta_types(patched).and_then(|()| {
        // A custom resource's metadata is still read into ObjectMeta.
        let Some(check) = check else {
            return super::object_meta_decode::object_meta_error(&patched["metadata"]).map_or(Ok(()), Err);
        };
        // Absent type meta decodes fine; null or empty is the target type's.
        let unset = |field: &str| patched.get(field).is_some_and(|v| v.is_null() || v == "");
        if !unset("apiVersion") && !unset("kind") {
            return check(patched);
        }
        let mut typed = patched.clone();
        if let Some(o) = typed.as_object_mut() {
            o.insert("apiVersion".into(), Value::String(api_version.into()));
            o.insert("kind".into(), Value::String(kind.into()));
        }
        check(&typed)
    });
    result.map_err(|e| {
        let json = serde_json::to_string(patched).unwrap_or_default();
        ApiError::invalid(
            "",
            "",
            "",
            vec![StatusCause::field("FieldValueInvalid", "patch", format!("Invalid value: {}: {e}", quote(&json)))],
        )
    })
}

/// The decoder of the `autoscaling/v1` Scale the `/scale` subresource reads and writes.
pub(crate) fn decode_scale(v: &Value) -> Result<(), String> {
    use serde::Deserialize;
    k8s_openapi::api::autoscaling::v1::Scale::deserialize(v).map(|_| ()).map_err(|e| e.to_string())
}

/// Checks the shapes of ObjectMeta fields the store relies on (a decode error in the apiserver).
fn check_meta_shape(rt: &ResourceType, obj: &Value) -> ApiResult<()> {
    let meta = &obj["metadata"];
    if rt.custom
        && let Some(e) = super::object_meta_decode::object_meta_error(meta)
    {
        return Err(ApiError::bad_request(format!(
            "{} in version \"{}\" cannot be handled as a {}: {e}",
            rt.kind, rt.version, rt.kind
        )));
    }
    let bad = |field: &str, want: &str| {
        Err(ApiError::bad_request(format!(
            "{} in version \"{}\" cannot be handled as a {}: metadata.{field} must be {want}",
            rt.kind, rt.version, rt.kind
        )))
    };
    for field in ["labels", "annotations"] {
        match meta.get(field) {
            None | Some(Value::Null) => {}
            Some(Value::Object(m)) if m.values().all(Value::is_string) => {}
            Some(_) => return bad(field, "a map of strings"),
        }
    }
    for field in ["finalizers"] {
        match meta.get(field) {
            None | Some(Value::Null) => {}
            Some(Value::Array(a)) if a.iter().all(Value::is_string) => {}
            Some(_) => return bad(field, "a list of strings"),
        }
    }
    for field in ["name", "generateName", "namespace", "resourceVersion", "uid"] {
        match meta.get(field) {
            None | Some(Value::Null) | Some(Value::String(_)) => {}
            Some(_) => return bad(field, "a string"),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn restored_gated_fields_land_at_their_path_and_never_panic() {
        let mut obj = json!({"spec": {"devices": {}}});
        restore(&mut obj, &["spec", "reservedFor"], json!({"resource": "jobs"}));
        restore(&mut obj, &["status", "allocation", "reservedForAnyPod"], json!(true));
        assert_eq!(obj["spec"]["reservedFor"]["resource"], "jobs");
        assert_eq!(obj["status"]["allocation"]["reservedForAnyPod"], true);
        // A parent of another type is replaced, a root that is not an object is left alone.
        let mut odd = json!({"status": "x"});
        restore(&mut odd, &["status", "allocation"], json!({}));
        assert_eq!(odd["status"]["allocation"], json!({}));
        let mut list = json!([1]);
        restore(&mut list, &["spec", "reservedFor"], json!({}));
        assert_eq!(list, json!([1]));
    }
}
