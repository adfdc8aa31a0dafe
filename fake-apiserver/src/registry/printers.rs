//! What the kinds' table printers share: column definitions, ages as kubectl shows them
//! (Go's `duration.HumanDuration`), and the formatting of maps, selectors and containers.

use jiff::Timestamp;
use serde_json::{Value, json};

/// One column definition.
pub(crate) fn col(name: &str, typ: &str, format: &str, priority: i64, description: &str) -> Value {
    json!({"name": name, "type": typ, "format": format, "description": description, "priority": priority})
}

/// The description of a Name column.
pub(crate) const NAME_DESC: &str =
    "Name of the object, unique within its namespace (or the cluster for cluster-scoped kinds).";
/// The description of an Age column.
pub(crate) const AGE_DESC: &str = "Time since the object was created (metadata.creationTimestamp).";

/// The Name column.
pub(crate) fn name_col() -> Value {
    col("Name", "string", "name", 0, NAME_DESC)
}

/// The Age column.
pub(crate) fn age_col() -> Value {
    col("Age", "string", "", 0, AGE_DESC)
}

/// The wide columns of workloads: containers, images, selector.
pub(crate) fn workload_cols() -> [Value; 3] {
    [
        col("Containers", "string", "", 1, "Names of the containers in the pod template."),
        col("Images", "string", "", 1, "Images of the containers in the pod template."),
        col("Selector", "string", "", 1, "Label selector of the pods."),
    ]
}

/// Go's `duration.HumanDuration`: the age text kubectl shows.
pub(crate) fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 { format!("{minutes}m") } else { format!("{minutes}m{s}s") };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = minutes / 60;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 { format!("{hours}h") } else { format!("{hours}h{m}m") };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 { format!("{}d", hours / 24) } else { format!("{}d{h}h", hours / 24) };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let d = (hours / 24) % 365;
        return if d == 0 { format!("{}y", hours / 24 / 365) } else { format!("{}y{d}d", hours / 24 / 365) };
    }
    format!("{}y", hours / 24 / 365)
}

/// The age of a timestamp field, or `<unknown>` when absent.
pub(crate) fn since(v: &Value, now: Timestamp) -> String {
    match v.as_str().and_then(|s| s.parse::<Timestamp>().ok()) {
        Some(t) => human_duration(now.duration_since(t).as_secs()),
        None => "<unknown>".into(),
    }
}

/// The string, or `<none>` when absent or empty.
pub(crate) fn or_none(s: Option<&str>) -> String {
    s.filter(|s| !s.is_empty()).unwrap_or("<none>").to_string()
}

/// An integer cell, 0 when absent.
pub(crate) fn int(v: &Value) -> i64 {
    v.as_i64().unwrap_or(0)
}

/// `k=v,k2=v2` of a string map, sorted by key; `<none>` when empty.
pub(crate) fn format_map(m: &Value) -> String {
    let Some(m) = m.as_object().filter(|m| !m.is_empty()) else { return "<none>".into() };
    let mut pairs: Vec<String> = m.iter().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default())).collect();
    pairs.sort();
    pairs.join(",")
}

/// A metav1.LabelSelector as a selector string; `<none>` when it selects everything.
pub(crate) fn format_label_selector(sel: &Value) -> String {
    let mut parts = Vec::new();
    if let Some(m) = sel["matchLabels"].as_object() {
        let mut p: Vec<String> = m.iter().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default())).collect();
        p.sort();
        parts.extend(p);
    }
    for e in sel["matchExpressions"].as_array().into_iter().flatten() {
        let key = e["key"].as_str().unwrap_or_default();
        let values: Vec<&str> = e["values"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        parts.push(match e["operator"].as_str().unwrap_or_default() {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            op => format!("{key} {op} ({})", values.join(",")),
        });
    }
    if parts.is_empty() { "<none>".into() } else { parts.join(",") }
}

/// The container names and images of a pod template, comma-separated.
pub(crate) fn containers_and_images(template_spec: &Value) -> (String, String) {
    let cs = template_spec["containers"].as_array().cloned().unwrap_or_default();
    let names: Vec<&str> = cs.iter().filter_map(|c| c["name"].as_str()).collect();
    let images: Vec<&str> = cs.iter().filter_map(|c| c["image"].as_str()).collect();
    (names.join(","), images.join(","))
}

/// The cells of [`workload_cols`].
pub(crate) fn workload_tail(o: &Value) -> [Value; 3] {
    let (names, images) = containers_and_images(&o["spec"]["template"]["spec"]);
    [json!(names), json!(images), json!(format_label_selector(&o["spec"]["selector"]))]
}

/// The Name and Age columns every kind without a printer of its own gets.
pub(crate) fn default_columns() -> Vec<Value> {
    vec![name_col(), age_col()]
}

/// The Name and Age cells of an object.
pub(crate) fn default_cells(o: &Value, now: Timestamp) -> Vec<Value> {
    vec![json!(o["metadata"]["name"]), json!(since(&o["metadata"]["creationTimestamp"], now))]
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case(0, "0s")]
    #[case(119, "119s")]
    #[case(120, "2m")]
    #[case(125, "2m5s")]
    #[case(600, "10m")]
    #[case(3 * 3600, "3h")]
    #[case(3 * 3600 + 60 * 5, "3h5m")]
    #[case(47 * 3600, "47h")]
    #[case(49 * 3600, "2d1h")]
    #[case(10 * 86400, "10d")]
    #[case(3 * 365 * 86400, "3y")]
    #[case(-5, "<invalid>")]
    fn human_durations_match_go(#[case] seconds: i64, #[case] text: &str) {
        assert_eq!(human_duration(seconds), text);
    }
}
