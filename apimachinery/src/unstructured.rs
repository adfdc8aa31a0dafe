//! Fields of objects held as JSON (`unstructured.NestedField` and `SetNestedField`), addressed
//! by a list of field names or a dotted path (`spec.template.spec`). Field names may contain
//! dots (`metadata.labels.kubernetes.io/name` cannot be written dotted): use the list form.

use serde_json::{Map, Value};

/// The value at `fields` inside `object`, if every step is an object that has the field.
pub fn nested_field<'a>(object: &'a Value, fields: &[&str]) -> Option<&'a Value> {
    fields.iter().try_fold(object, |v, f| v.get(*f))
}

/// The value at a dotted path (`spec.nodeName`); empty segments are skipped.
pub fn nested_field_at<'a>(object: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').filter(|s| !s.is_empty()).try_fold(object, |v, f| v.get(f))
}

/// Sets the value at `fields`, creating objects on the way. A missing field or a `null` on the
/// way becomes an object (JSON `null` means "absent" to the apiserver's decoder); when a value
/// on the way is anything else, nothing is set and the answer is false. With no fields, nothing
/// is set either.
pub fn set_nested_field(object: &mut Value, fields: &[&str], value: Value) -> bool {
    let Some((last, parents)) = fields.split_last() else { return false };
    let mut cur = object;
    for f in parents {
        if cur.is_null() {
            *cur = Value::Object(Map::new());
        }
        let Some(o) = cur.as_object_mut() else { return false };
        cur = o.entry(f.to_string()).or_insert(Value::Null);
    }
    if cur.is_null() {
        *cur = Value::Object(Map::new());
    }
    match cur.as_object_mut() {
        Some(o) => {
            o.insert(last.to_string(), value);
            true
        }
        None => false,
    }
}

/// [`set_nested_field`] at a dotted path (`spec.replicas`); empty segments are skipped.
pub fn set_nested_field_at(object: &mut Value, path: &str, value: Value) -> bool {
    let fields: Vec<&str> = path.split('.').filter(|s| !s.is_empty()).collect();
    set_nested_field(object, &fields, value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    #[rstest]
    #[case::present("spec.nodeName", Some(json!("n1")))]
    #[case::leading_dot(".spec.nodeName", Some(json!("n1")))]
    #[case::absent("spec.missing", None)]
    #[case::through_a_scalar("spec.nodeName.x", None)]
    fn reads_dotted_paths(#[case] path: &str, #[case] want: Option<Value>) {
        let pod = json!({"spec": {"nodeName": "n1"}});
        assert_eq!(nested_field_at(&pod, path).cloned(), want);
    }

    #[rstest]
    #[case::creates_objects(json!({}), json!({"spec": {"replicas": 3}}), true)]
    #[case::null_counts_as_absent(json!({"spec": null}), json!({"spec": {"replicas": 3}}), true)]
    #[case::replaces(json!({"spec": {"replicas": 1, "x": 1}}), json!({"spec": {"replicas": 3, "x": 1}}), true)]
    #[case::blocked_by_a_scalar(json!({"spec": "no"}), json!({"spec": "no"}), false)]
    #[case::blocked_by_a_list(json!({"spec": []}), json!({"spec": []}), false)]
    fn sets_dotted_paths(#[case] mut object: Value, #[case] want: Value, #[case] set: bool) {
        assert_eq!(set_nested_field_at(&mut object, "spec.replicas", json!(3)), set);
        assert_eq!(object, want);
    }

    #[test]
    fn field_lists_take_dotted_names() {
        let mut ns = json!({"metadata": {}});
        assert!(set_nested_field(&mut ns, &["metadata", "labels", "kubernetes.io/metadata.name"], json!("a")));
        assert_eq!(nested_field(&ns, &["metadata", "labels", "kubernetes.io/metadata.name"]), Some(&json!("a")));
        assert!(!set_nested_field(&mut ns, &[], json!(1)));
    }
}
