//! Server-side apply (`application/apply-patch+yaml`): merges a manager's applied
//! configuration into the live object along the type's list and map types, detects conflicts
//! with other managers' fields, removes fields the manager stopped applying that nobody else
//! owns, and records the manager's `Apply` entry in `managedFields`.

use serde_json::{Map, Value};

use super::managed::{self, Entry, FieldSet};
use super::patch_meta::Shape;
use crate::error::{ApiError, StatusCause};
use crate::registry::ResourceType;
use crate::registry::smd::merge;
use crate::storage::Subresource;

/// One apply request.
pub(crate) struct ApplyRequest<'a> {
    pub manager: &'a str,
    pub force: bool,
    pub subresource: Option<Subresource>,
    pub time: String,
}

/// The live object (`None` when the apply creates it) with `applied` merged in and
/// `managedFields` updated; 409 Conflict when other managers own changed fields and the
/// apply is not forced.
pub(crate) fn apply(
    rt: &ResourceType,
    live: Option<&Value>,
    applied: &Value,
    req: &ApplyRequest<'_>,
) -> Result<Value, ApiError> {
    let shape = managed::shape_of(rt);
    let main = req.subresource.is_none();
    // The main resource does not take status (and the status subresource takes only status).
    let mut intent = managed::trackable(applied, main && rt.status);
    if req.subresource == Some(Subresource::Status) {
        intent = match applied.get("status") {
            Some(s) => serde_json::json!({"status": s}),
            None => Value::Object(Map::new()),
        };
    }
    let applied_set = managed::fields_of(&intent, shape);
    let empty = Value::Object(Map::new());
    let live_value = live.unwrap_or(&empty);
    let mut merged =
        merge(Some(live_value), applied, shape, true, main && rt.status, req.subresource == Some(Subresource::Status));

    let mut list = managed::entries(live_value);
    let subresource = req.subresource.map(Subresource::as_str);
    let mine = |e: &Entry| e.same_owner(req.manager, "Apply", subresource);
    // Conflicts: another manager owns a field this apply changes.
    let mut conflicts: Vec<(String, Vec<String>)> = Vec::new();
    for e in list.iter().filter(|e| !mine(e)) {
        for path in e.fields.paths() {
            if !applied_set.has(&path) || applied_set.node_has_children(&path) {
                continue;
            }
            if managed::value_at(live_value, &path) != managed::value_at(&merged, &path) {
                conflicts.push((describe(e), path));
            }
        }
    }
    if !conflicts.is_empty() && !req.force {
        return Err(conflict_error(&conflicts));
    }
    let mut taken = FieldSet::default();
    for (_, p) in &conflicts {
        taken.insert(p);
    }
    for e in list.iter_mut().filter(|e| !mine(e)) {
        e.fields.subtract(&taken);
    }
    // Fields this manager applied before and no longer does go, unless someone else owns them.
    if let Some(prev) = list.iter().find(|e| mine(e)) {
        let mut dropped = prev.fields.clone();
        dropped.subtract(&applied_set);
        let mut paths = dropped.paths();
        // Outermost first: a removed item takes its fields with it.
        paths.sort_by_key(Vec::len);
        let mut removed: Vec<Vec<String>> = Vec::new();
        for path in paths {
            if removed.iter().any(|r| path.starts_with(r)) || is_item_key(&path) {
                continue;
            }
            let owned_elsewhere = list.iter().filter(|e| !mine(e)).any(|e| e.fields.has_within(&path));
            if !owned_elsewhere && !applied_set.has_within(&path) {
                remove_path(&mut merged, &path);
                removed.push(path);
            }
        }
    }
    // structured-merge-diff also counts the struct fields above what an applier owned as its
    // own (`EnsureNamedFieldsAreMembers` in `prune` and `addBackOwnedItemsForVersion`,
    // https://github.com/kubernetes-sigs/structured-merge-diff/blob/v6.4.2/merge/update.go):
    // one within which no manager owns anything any more goes whole. An applier that stops applying the last of
    // `status.admission` removes `admission`, where removing only what it owned would leave
    // `{podSetAssignments: []}` behind (Kueue reads that as a quota reservation).
    if let Some(prev) = list.iter().find(|e| mine(e)) {
        let others: Vec<&FieldSet> = list.iter().filter(|e| !mine(e)).map(|e| &e.fields).collect();
        let owned = |p: &[String]| applied_set.has_within(p) || others.iter().any(|f| f.has_within(p));
        let mut gone: Vec<Vec<String>> = Vec::new();
        for path in prev.fields.paths() {
            for n in (1..path.len()).rev() {
                let ancestor = &path[..n];
                if gone.iter().any(|g| ancestor.starts_with(g)) {
                    break;
                }
                if !named_field(shape, ancestor) || owned(ancestor) {
                    continue;
                }
                // The outermost unowned named field goes, with everything in it.
                let outermost = (1..=n)
                    .map(|m| &path[..m])
                    .find(|a| named_field(shape, a) && !owned(a))
                    .unwrap_or(ancestor)
                    .to_vec();
                remove_path(&mut merged, &outermost);
                gone.push(outermost);
                break;
            }
        }
    }
    list.retain(|e| !mine(e));
    list.push(Entry {
        manager: req.manager.to_string(),
        operation: "Apply".into(),
        api_version: rt.api_version().to_string(),
        time: Some(req.time.clone()),
        subresource: req.subresource.map(|s| s.as_str().to_string()),
        fields: applied_set,
    });
    let present = managed::trackable(&merged, false);
    for e in &mut list {
        e.fields.retain_existing(&present);
    }
    // The applier keeps its entry even when it applied nothing but identity fields.
    if let Some(meta) = merged.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    managed::set_entries(&mut merged, &list);
    Ok(merged)
}

impl FieldSet {
    fn node_has_children(&self, path: &[String]) -> bool {
        let mut n = self;
        for e in path {
            match n.children.get(e) {
                Some(c) => n = c,
                None => return false,
            }
        }
        !n.children.is_empty()
    }
}

/// How a conflict names its manager: `"m"` for appliers, `"m" using apps/v1` for updaters.
fn describe(e: &Entry) -> String {
    let mut s = format!("{:?}", e.manager);
    if let Some(sub) = &e.subresource {
        s.push_str(&format!(" with subresource {sub:?}"));
    }
    if e.operation == "Update" {
        s.push_str(&format!(" using {}", e.api_version));
    }
    s
}

fn conflict_error(conflicts: &[(String, Vec<String>)]) -> ApiError {
    let causes: Vec<StatusCause> = conflicts
        .iter()
        .map(|(m, p)| {
            StatusCause::field("FieldManagerConflict", managed::display_path(p), format!("conflict with {m}"))
        })
        .collect();
    let message = if let [(m, p)] = conflicts {
        format!("Apply failed with 1 conflict: conflict with {m}: {}", managed::display_path(p))
    } else {
        let mut managers: Vec<&String> = conflicts.iter().map(|(m, _)| m).collect();
        managers.sort();
        managers.dedup();
        let mut lines = Vec::new();
        for m in managers {
            lines.push(format!("conflicts with {m}:"));
            for (_, p) in conflicts.iter().filter(|(x, _)| x == m) {
                lines.push(format!("- {}", managed::display_path(p)));
            }
        }
        format!("Apply failed with {} conflicts: {}", conflicts.len(), lines.join("\n"))
    };
    ApiError::apply_conflict(message, causes)
}

/// Whether the path is a key field of a list-map item (which goes only with its item).
/// Whether `path` ends at a field its parent's type declares (a struct field, not a map's key
/// or a list item). `metadata` is never one here: every apply names the object in it.
fn named_field(root: Shape<'_>, path: &[String]) -> bool {
    let Some((last, parents)) = path.split_last() else { return false };
    if parents.is_empty() && last == "f:metadata" {
        return false;
    }
    let mut shape = root;
    for e in parents {
        shape = match e.strip_prefix("f:") {
            Some(f) => shape.child(f),
            None => shape.item(),
        };
    }
    last.strip_prefix("f:").is_some_and(|f| shape.declares(f) == Some(true))
}

fn is_item_key(path: &[String]) -> bool {
    match path {
        [.., item, field] => match (item.strip_prefix("k:"), field.strip_prefix("f:")) {
            (Some(key), Some(f)) => serde_json::from_str::<Map<String, Value>>(key).is_ok_and(|k| k.contains_key(f)),
            _ => false,
        },
        _ => false,
    }
}

fn remove_path(v: &mut Value, path: &[String]) {
    let Some((last, parents)) = path.split_last() else { return };
    let mut cur = v;
    for e in parents {
        let next = match cur {
            Value::Object(m) => e.strip_prefix("f:").and_then(|f| m.get_mut(f)),
            Value::Array(items) => {
                let target = managed::resolve(&Value::Array(items.clone()), e).cloned();
                items.iter_mut().find(|x| Some(&**x) == target.as_ref())
            }
            _ => None,
        };
        match next {
            Some(n) => cur = n,
            None => return,
        }
    }
    match cur {
        Value::Object(m) => {
            if let Some(f) = last.strip_prefix("f:") {
                m.remove(f);
            }
        }
        Value::Array(items) => {
            let target = managed::resolve(&Value::Array(items.clone()), last).cloned();
            if let Some(t) = target {
                items.retain(|x| *x != t);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn remove_path_takes_out_fields_and_list_map_items() {
        let mut v = json!({"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b"}], "replicas": 2}});
        remove_path(&mut v, &["f:spec".into(), "f:containers".into(), "k:{\"name\":\"a\"}".into(), "f:image".into()]);
        remove_path(&mut v, &["f:spec".into(), "f:containers".into(), "k:{\"name\":\"b\"}".into()]);
        remove_path(&mut v, &["f:spec".into(), "f:replicas".into()]);
        assert_eq!(v, json!({"spec": {"containers": [{"name": "a"}]}}));
    }
}
