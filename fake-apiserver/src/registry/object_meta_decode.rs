//! A custom resource's `metadata` read into `metav1.ObjectMeta` as `encoding/json` reads it
//! (apiextensions-apiserver decodes the unstructured object's metadata into the Go type), with
//! Go's first error: `json: cannot unmarshal <what> into Go struct field ObjectMeta.<field> of
//! type <type>`, or what `metav1.Time`'s own decoder says of a time that is not RFC 3339.
//! Built-in kinds get theirs from their typed decoder.

use serde_json::Value;

/// The Go types of ObjectMeta's fields (k8s.io/apimachinery v0.37.2 pkg/apis/meta/v1/types.go).
fn go_type(field: &str) -> Option<&'static str> {
    Some(match field {
        "name" | "generateName" | "namespace" | "selfLink" | "uid" | "resourceVersion" => "string",
        "generation" | "deletionGracePeriodSeconds" => "int64",
        "creationTimestamp" | "deletionTimestamp" => "time",
        "labels" | "annotations" => "map[string]string",
        "ownerReferences" => "[]v1.OwnerReference",
        "finalizers" => "[]string",
        "managedFields" => "[]v1.ManagedFieldsEntry",
        _ => return None,
    })
}

/// Go's error for the first field of `meta` that does not decode into ObjectMeta, if any.
pub(crate) fn object_meta_error(meta: &Value) -> Option<String> {
    let Value::Object(m) = meta else { return None };
    for (field, v) in m {
        let Some(ty) = go_type(field) else { continue };
        if v.is_null() {
            continue;
        }
        let wrong = |what: &str| {
            Some(format!("json: cannot unmarshal {what} into Go struct field ObjectMeta.{field} of type {ty}"))
        };
        let what = super::decode::go_json_type(v);
        match (ty, v) {
            ("string", Value::String(_)) => {}
            ("int64", Value::Number(n)) => {
                if n.as_i64().is_none() {
                    return Some(format!(
                        "json: cannot unmarshal number {n} into Go struct field ObjectMeta.{field} of type int64"
                    ));
                }
            }
            ("time", Value::String(s)) => {
                if let Some(e) = time_error(s) {
                    return Some(e);
                }
            }
            // Time's UnmarshalJSON reads a string by itself: no struct in the error.
            ("time", _) => return Some(format!("json: cannot unmarshal {what} into Go value of type string")),
            ("map[string]string", Value::Object(_)) => {}
            ("[]string" | "[]v1.OwnerReference" | "[]v1.ManagedFieldsEntry", Value::Array(_)) => {}
            _ => return wrong(what),
        }
    }
    None
}

/// `time.Parse(time.RFC3339, s)`'s error for text that does not even start with a year (what
/// kube-apiserver answered for "yesterday"); other malformed times are not judged here.
fn time_error(s: &str) -> Option<String> {
    if s.parse::<jiff::Timestamp>().is_ok() {
        return None;
    }
    let year_digits = s.bytes().take(4).filter(u8::is_ascii_digit).count();
    (year_digits < 4 || s.len() < 4)
        .then(|| format!(r#"parsing time {s:?} as "2006-01-02T15:04:05Z07:00": cannot parse {s:?} as "2006""#))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn wrong_types_are_named_as_encoding_json_names_them() {
        let e = |m: Value| object_meta_error(&m).unwrap_or_default();
        assert_eq!(
            e(json!({"name": "a", "selfLink": 1})),
            "json: cannot unmarshal number into Go struct field ObjectMeta.selfLink of type string"
        );
        assert_eq!(
            e(json!({"deletionGracePeriodSeconds": 1.5})),
            "json: cannot unmarshal number 1.5 into Go struct field ObjectMeta.deletionGracePeriodSeconds of type int64"
        );
        assert_eq!(
            e(json!({"ownerReferences": {}})),
            "json: cannot unmarshal object into Go struct field ObjectMeta.ownerReferences of type []v1.OwnerReference"
        );
        assert_eq!(
            e(json!({"deletionTimestamp": "yesterday"})),
            r#"parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006""#
        );
        assert_eq!(object_meta_error(&json!({"name": "a", "labels": {"a": "b"}, "generation": 2})), None);
    }
}
