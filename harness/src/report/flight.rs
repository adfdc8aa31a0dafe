//! The flight recorder: for each failing row, a directory with everything needed to diagnose
//! the failure without rerunning it: the timeline of writes, the last mismatch of every
//! failed wait, the objects at the end, the Events and the logs.
//!
//! Layout of `base/<suite>/<id>/`:
//!
//! ```text
//! README.md          what failed and an index of the files
//! timeline.jsonl     every write, one JSON object per line
//! timeline.txt       the same, one human-readable line per write
//! mismatches.md      expected against observed for each failed wait or expectation
//! objects/           one YAML file per object at the end of the row
//! events.yaml        Kubernetes Events in the row's namespace
//! logs.txt           controller and harness logs during the row
//! requests.yaml      the writes whose answers mattered: sent, code, Warning headers, answer
//! ```

use crate::report::result::{FlightRecord, Mismatch, RowResult};
use crate::report::{backend_duration, kind_name, one_line};
use serde_json::Value;
use std::collections::HashSet;
use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Longest sanitized path component we write. File systems cap names at 255 bytes, and object
/// names alone may be 253 characters, so leave room for the kind, namespace and extension.
const MAX_COMPONENT: usize = 200;

/// Writes the flight record of `row` under `base/<suite>/<id>/` (both sanitized) and returns
/// that directory.
///
/// A previous record of the same row is overwritten; its `objects/` directory is emptied
/// first so that objects of an older run cannot pass for this one's.
pub fn write_flight_record(base: &Path, row: &RowResult, record: &FlightRecord) -> io::Result<PathBuf> {
    let dir = base.join(sanitize_component(&row.suite)).join(sanitize_component(&row.id));
    fs::create_dir_all(&dir)?;

    let objects_dir = dir.join("objects");
    if objects_dir.exists() {
        fs::remove_dir_all(&objects_dir)?;
    }
    fs::create_dir_all(&objects_dir)?;
    let object_files = write_objects(&objects_dir, &record.objects)?;

    fs::write(dir.join("timeline.jsonl"), timeline_jsonl(&record.timeline)?)?;
    fs::write(dir.join("timeline.txt"), timeline_text(&record.timeline))?;
    fs::write(dir.join("mismatches.md"), mismatches_markdown(&record.mismatches))?;
    fs::write(dir.join("events.yaml"), to_yaml(&record.events))?;
    let mut logs = record.logs.join("\n");
    if !logs.is_empty() {
        logs.push('\n');
    }
    fs::write(dir.join("logs.txt"), logs)?;
    fs::write(dir.join("requests.yaml"), to_yaml(&record.exchanges))?;
    // Last, so a README only exists next to a complete set of files.
    fs::write(dir.join("README.md"), readme(row, record, &object_files))?;
    Ok(dir)
}

/// Makes `name` safe as one path component: characters other than `[A-Za-z0-9._-]` become
/// `_`, names made only of dots (`.`, `..`) are defused, an empty name becomes `_`, and long
/// names are cut.
pub fn sanitize_component(name: &str) -> String {
    let mut out: String = name
        .chars()
        .take(MAX_COMPONENT)
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '_' })
        .collect();
    // `.` and `..` pass the character filter but would point at this or the parent directory.
    if out.chars().all(|c| c == '.') {
        out = out.replace('.', "_");
    }
    if out.is_empty() {
        out.push('_');
    }
    out
}

/// Writes one YAML file per object, named `<kind>-<namespace>-<name>.yaml` (cluster-scoped
/// objects use `_cluster` as namespace, which no real namespace can be named). Returns the
/// file names in order.
fn write_objects(dir: &Path, objects: &[Value]) -> io::Result<Vec<String>> {
    let mut used = HashSet::new();
    let mut names = Vec::with_capacity(objects.len());
    for object in objects {
        let kind = str_at(object, &["kind"]).unwrap_or("Unknown");
        let namespace = str_at(object, &["metadata", "namespace"]).unwrap_or("_cluster");
        let name = str_at(object, &["metadata", "name"])
            .or_else(|| str_at(object, &["metadata", "generateName"]))
            .unwrap_or("unnamed");
        let stem = sanitize_component(&format!("{kind}-{namespace}-{name}"));
        // Two objects can share a stem (same kind in two API groups, or names that differ only
        // in sanitized characters); number the later ones rather than overwrite.
        let mut file = format!("{stem}.yaml");
        let mut n = 2;
        while !used.insert(file.clone()) {
            file = format!("{stem}-{n}.yaml");
            n += 1;
        }
        fs::write(dir.join(&file), to_yaml(object))?;
        names.push(file);
    }
    Ok(names)
}

fn timeline_jsonl(timeline: &[Value]) -> io::Result<String> {
    let mut out = String::new();
    for entry in timeline {
        // Compact JSON never contains a raw newline, so each entry stays on its line.
        out.push_str(&serde_json::to_string(entry)?);
        out.push('\n');
    }
    Ok(out)
}

/// Renders the timeline one line per write, with aligned columns:
/// `rv  time  verb  change  kind namespace/name  [subresource]  by USER_AGENT (field manager)`.
pub fn timeline_text(timeline: &[Value]) -> String {
    // Aligned columns, then the rare subresource and the writer, which need no alignment.
    let rows: Vec<([String; 5], String)> = timeline
        .iter()
        .map(|entry| {
            let field = |key: &str| entry.get(key).map(scalar).filter(|s| !s.is_empty());
            let or_unknown = |key: &str| field(key).unwrap_or_else(|| "?".to_string());
            let object = match (field("namespace"), field("name")) {
                (Some(ns), Some(name)) => format!("{ns}/{name}"),
                (None, Some(name)) => name,
                (Some(ns), None) => format!("{ns}/?"),
                (None, None) => "?".to_string(),
            };
            let mut tail = String::new();
            if let Some(subresource) = field("subresource") {
                let _ = write!(tail, "[{subresource}]  ");
            }
            let _ = write!(tail, "by {}", or_unknown("userAgent"));
            if let Some(manager) = field("fieldManager") {
                let _ = write!(tail, " ({manager})");
            }
            let columns = [
                or_unknown("resourceVersion"),
                or_unknown("time"),
                or_unknown("verb"),
                or_unknown("change"),
                format!("{} {object}", or_unknown("kind")),
            ];
            (columns, tail)
        })
        .collect();

    let mut widths = [0usize; 5];
    for (columns, _) in &rows {
        for (width, cell) in widths.iter_mut().zip(columns) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for (columns, tail) in &rows {
        for (cell, width) in columns.iter().zip(widths) {
            out.push_str(cell);
            out.extend(std::iter::repeat_n(' ', width.saturating_sub(cell.chars().count())));
            out.push_str("  ");
        }
        out.push_str(tail);
        out.push('\n');
    }
    out
}

/// A JSON scalar as plain text on one line (strings unquoted, other values as JSON).
fn scalar(value: &Value) -> String {
    match value {
        Value::String(s) => one_line(s),
        Value::Null => String::new(),
        other => one_line(&other.to_string()),
    }
}

fn mismatches_markdown(mismatches: &[Mismatch]) -> String {
    let mut out = String::from("# Mismatches\n\n");
    if mismatches.is_empty() {
        out.push_str("No wait or expectation recorded a mismatch.\n");
        return out;
    }
    out.push_str("The last check of every wait and expectation that failed: expected against observed.\n");
    for (i, mismatch) in mismatches.iter().enumerate() {
        let _ = write!(
            out,
            "\n## {}. at {} ms on the backend clock ({})\n\n",
            i + 1,
            mismatch.at_ms,
            backend_duration(mismatch.at_ms)
        );
        out.push_str("Expectation:\n\n");
        out.push_str(&fenced("yaml", &mismatch.expectation));
        out.push_str("\nDiff (expected against observed):\n\n");
        out.push_str(&fenced("text", &mismatch.diff));
        let _ = write!(out, "\nObserved ({} objects):\n\n", mismatch.observed.len());
        if mismatch.observed.is_empty() {
            out.push_str("Nothing matched the expectation's selector.\n");
        } else {
            let docs: Vec<String> = mismatch.observed.iter().map(to_yaml).collect();
            out.push_str(&fenced("yaml", &docs.join("---\n")));
        }
    }
    out
}

fn readme(row: &RowResult, record: &FlightRecord, object_files: &[String]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Flight record of `{}`\n", one_line(&row.name()));
    let _ = writeln!(out, "- id: `{}`", one_line(&row.id));
    let _ = writeln!(out, "- suite: `{}`", one_line(&row.suite));
    let _ = writeln!(out, "- title: {}", one_line(&row.title));
    let _ = writeln!(out, "- kind: {}", kind_name(row.kind));
    let _ = writeln!(out, "- source: {}", one_line(&row.source));
    let _ = writeln!(out, "- backend: {}", one_line(&row.backend));
    let _ = writeln!(out, "- took: {} ms wall, {} on the backend clock", row.wall_ms, backend_duration(row.backend_ms));
    if !row.requests.is_empty() {
        let per_client: Vec<String> = row
            .requests
            .iter()
            .map(|(client, verbs)| {
                let by_verb: Vec<String> = verbs.iter().map(|(v, n)| format!("{n} {v}")).collect();
                format!("{client} {}", by_verb.join(", "))
            })
            .collect();
        let _ = writeln!(out, "- API requests: {}", per_client.join("; "));
    }

    out.push_str("\n## Failure\n\n");
    match (&row.failure, &row.reason) {
        (Some(failure), _) => out.push_str(&fenced("text", failure)),
        (None, Some(reason)) => out.push_str(&fenced("text", reason)),
        (None, None) => out.push_str("No failure text was recorded.\n"),
    }

    out.push_str("\n## Files\n\n");
    let _ = writeln!(
        out,
        "- `timeline.jsonl`: every write during the row, one JSON object per line ({})",
        plural(record.timeline.len(), "write")
    );
    out.push_str(
        "- `timeline.txt`: the same writes, one line each: rv, time, verb, change, object, \
         subresource, writer (field manager)\n",
    );
    let _ = writeln!(
        out,
        "- `mismatches.md`: expected against observed at the last check of each failed wait or \
         expectation ({})",
        record.mismatches.len()
    );
    let _ =
        writeln!(out, "- `objects/`: the objects at the end of the row, one YAML file each ({})", object_files.len());
    let _ = writeln!(out, "- `events.yaml`: Kubernetes Events in the row's namespace ({})", record.events.len());
    let _ = writeln!(
        out,
        "- `logs.txt`: controller and harness logs during the row ({})",
        plural(record.logs.len(), "line")
    );
    let _ = writeln!(
        out,
        "- `requests.yaml`: the writes whose answers mattered, with what was sent and answered ({})",
        plural(record.exchanges.len(), "request")
    );
    out
}

/// YAML of a value. A value the YAML serializer rejects is written as pretty JSON (which YAML
/// readers accept too): a partial dump is worth more than a missing flight record.
fn to_yaml<T: serde::Serialize>(value: &T) -> String {
    match serde_saphyr::to_string(value) {
        Ok(yaml) => yaml,
        Err(_) => {
            let mut json = serde_json::to_string_pretty(value).unwrap_or_else(|e| format!("# unserializable: {e}"));
            json.push('\n');
            json
        }
    }
}

/// A Markdown code block whose fence is longer than any backtick run in `content`, so the
/// content cannot close it early.
fn fenced(lang: &str, content: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in content.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest.max(2) + 1);
    let mut out = format!("{fence}{lang}\n{content}");
    if !content.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&fence);
    out.push('\n');
    out
}

fn plural(n: usize, noun: &str) -> String {
    if n == 1 { format!("1 {noun}") } else { format!("{n} {noun}s") }
}

fn str_at<'a>(value: &'a Value, path: &[&str]) -> Option<&'a str> {
    path.iter().try_fold(value, |v, key| v.get(key))?.as_str()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::result::Outcome;
    use crate::suite::RowKind;
    use serde_json::json;

    fn failed_row(suite: &str, id: &str) -> RowResult {
        RowResult {
            suite: suite.to_string(),
            id: id.to_string(),
            title: "RayService switches traffic after the new cluster is ready".to_string(),
            kind: RowKind::UpstreamBug,
            source: "ray-project/kuberay#3166".to_string(),
            backend: "fake".to_string(),
            outcome: Outcome::Failed,
            reason: Some("eventually not met within 60s".to_string()),
            failure: Some(
                "expectation 1 (eventually, timeout 60s): rayClusterName expected eq \"new\", observed \"old\""
                    .to_string(),
            ),
            wall_ms: 40,
            backend_ms: 60_000,
            flight_record: None,
            location: None,
            requests: Default::default(),
            checks: Vec::new(),
        }
    }

    fn full_record() -> FlightRecord {
        FlightRecord {
            timeline: vec![
                json!({
                    "resourceVersion": "12", "time": "2025-01-02T03:04:05Z", "verb": "create",
                    "change": "added", "apiVersion": "ray.io/v1", "kind": "RayService",
                    "resource": "rayservices", "namespace": "default", "name": "svc",
                    "uid": "u1", "userAgent": "kubectl/v1.33", "fieldManager": "kubectl-client-side-apply",
                    "object": {"kind": "RayService", "metadata": {"name": "svc"}}
                }),
                json!({
                    "resourceVersion": "13", "time": "2025-01-02T03:04:06Z", "verb": "update",
                    "change": "modified", "apiVersion": "ray.io/v1", "kind": "RayService",
                    "resource": "rayservices", "subresource": "status", "namespace": "default",
                    "name": "svc", "uid": "u1", "userAgent": "kuberay-operator"
                }),
                json!({
                    "resourceVersion": "14", "time": "2025-01-02T03:04:07Z", "verb": "create",
                    "change": "added", "apiVersion": "v1", "kind": "Namespace",
                    "resource": "namespaces", "name": "team-a", "uid": "u2",
                    "userAgent": "kproof\nharness"
                }),
            ],
            mismatches: vec![Mismatch {
                expectation: "eventually:\n  timeout: 60s\n  match:\n    kind: RayService\n".to_string(),
                diff: "status.activeServiceStatus.rayClusterName: expected eq \"new\", observed \"old\"".to_string(),
                observed: vec![
                    json!({"kind": "RayService", "metadata": {"name": "svc", "namespace": "default"}, "status": {"activeServiceStatus": {"rayClusterName": "old"}}}),
                ],
                at_ms: 60_000,
            }],
            objects: vec![
                json!({"apiVersion": "ray.io/v1", "kind": "RayService", "metadata": {"name": "svc", "namespace": "default"}, "spec": {"upgradeStrategy": {"type": "NewCluster"}}}),
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}),
                json!({"apiVersion": "other.io/v1", "kind": "RayService", "metadata": {"name": "svc", "namespace": "default"}}),
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "../../x", "namespace": "default"}}),
            ],
            events: vec![json!({"kind": "Event", "reason": "ServiceNotReady", "message": "waiting for serve"})],
            logs: vec![
                "INFO kuberay: reconciling default/svc".to_string(),
                "WARN kuberay: serve not ready".to_string(),
            ],
            exchanges: vec![json!({"method": "POST", "url": "/api/v1/namespaces/default/configmaps", "code": 409})],
        }
    }

    fn read(path: &Path) -> String {
        fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
    }

    #[test]
    fn writes_all_files_with_their_key_lines() {
        let base = tempfile::tempdir().expect("tempdir");
        let row = failed_row("rayservice-upgrade", "blue-green");
        let dir = write_flight_record(base.path(), &row, &full_record()).expect("write record");
        assert_eq!(dir, base.path().join("rayservice-upgrade").join("blue-green"));

        let readme = read(&dir.join("README.md"));
        for line in [
            "# Flight record of `rayservice-upgrade::blue-green`",
            "- id: `blue-green`",
            "- title: RayService switches traffic after the new cluster is ready",
            "- kind: upstream-bug",
            "- source: ray-project/kuberay#3166",
            "- backend: fake",
            "expectation 1 (eventually, timeout 60s): rayClusterName expected eq \"new\", observed \"old\"",
        ] {
            assert!(readme.lines().any(|l| l == line), "missing {line:?} in\n{readme}");
        }
        for file in
            ["timeline.jsonl", "timeline.txt", "mismatches.md", "objects/", "events.yaml", "logs.txt", "requests.yaml"]
        {
            assert!(readme.contains(&format!("- `{file}`:")), "index lacks {file}:\n{readme}");
        }

        let jsonl = read(&dir.join("timeline.jsonl"));
        assert_eq!(jsonl.lines().count(), 3);
        for line in jsonl.lines() {
            let entry: Value = serde_json::from_str(line).expect("each line is JSON");
            assert!(entry.get("resourceVersion").is_some());
        }

        let text = read(&dir.join("timeline.txt"));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert_eq!(
            lines[0],
            "12  2025-01-02T03:04:05Z  create  added     RayService default/svc  by kubectl/v1.33 (kubectl-client-side-apply)"
        );
        assert_eq!(
            lines[1],
            "13  2025-01-02T03:04:06Z  update  modified  RayService default/svc  [status]  by kuberay-operator"
        );
        // Cluster-scoped: no namespace; a newline in a user agent cannot split the line.
        assert_eq!(lines[2], "14  2025-01-02T03:04:07Z  create  added     Namespace team-a        by kproof harness");

        let mismatches = read(&dir.join("mismatches.md"));
        assert!(mismatches.contains("## 1. at 60000 ms on the backend clock (1m0s)"), "{mismatches}");
        assert!(mismatches.contains("```yaml\neventually:\n  timeout: 60s\n"), "{mismatches}");
        assert!(mismatches.contains("expected eq \"new\", observed \"old\""), "{mismatches}");
        assert!(mismatches.contains("rayClusterName: old"), "{mismatches}");

        let mut objects: Vec<String> = fs::read_dir(dir.join("objects"))
            .expect("objects dir")
            .map(|e| e.expect("dir entry").file_name().to_string_lossy().into_owned())
            .collect();
        objects.sort();
        assert_eq!(
            objects,
            [
                "ConfigMap-default-.._.._x.yaml",
                "Namespace-_cluster-team-a.yaml",
                "RayService-default-svc-2.yaml",
                "RayService-default-svc.yaml",
            ]
        );
        let svc = read(&dir.join("objects/RayService-default-svc.yaml"));
        assert!(svc.contains("type: NewCluster"), "{svc}");
        assert!(svc.contains("apiVersion: ray.io/v1"), "{svc}");

        let events = read(&dir.join("events.yaml"));
        assert!(events.contains("reason: ServiceNotReady"), "{events}");
        let logs = read(&dir.join("logs.txt"));
        assert_eq!(logs, "INFO kuberay: reconciling default/svc\nWARN kuberay: serve not ready\n");
    }

    #[test]
    fn hostile_ids_stay_inside_base() {
        let base = tempfile::tempdir().expect("tempdir");
        let root = base.path().join("records");
        for (suite, id) in [("../../etc", "../../etc"), ("..", "."), ("a/b", "/abs\\x y"), ("", "")] {
            let row = failed_row(suite, id);
            let dir = write_flight_record(&root, &row, &FlightRecord::default()).expect("write record");
            let relative = dir.strip_prefix(&root).expect("inside base");
            assert_eq!(relative.components().count(), 2, "{}", dir.display());
            for part in relative.components() {
                assert!(matches!(part, std::path::Component::Normal(_)), "{}", dir.display());
            }
            assert!(dir.join("README.md").is_file());
        }
        assert!(root.join(".._.._etc").join(".._.._etc").is_dir());
        assert!(root.join("__").join("_").is_dir());
        assert!(root.join("a_b").join("_abs_x_y").is_dir());
        assert!(root.join("_").join("_").is_dir());
        // Nothing escaped to the temp dir's level.
        let mut top: Vec<_> = fs::read_dir(base.path()).expect("read").map(|e| e.expect("entry").file_name()).collect();
        top.sort();
        assert_eq!(top, ["records"]);
    }

    #[test]
    fn sanitize_rules() {
        assert_eq!(sanitize_component("ok-Name_1.2"), "ok-Name_1.2");
        assert_eq!(sanitize_component("../../etc"), ".._.._etc");
        assert_eq!(sanitize_component(".."), "__");
        assert_eq!(sanitize_component("."), "_");
        assert_eq!(sanitize_component(""), "_");
        assert_eq!(sanitize_component("ünï code"), "_n__code");
        assert_eq!(sanitize_component(&"a".repeat(300)).len(), MAX_COMPONENT);
    }

    #[test]
    fn empty_record_works() {
        let base = tempfile::tempdir().expect("tempdir");
        let mut row = failed_row("s", "r");
        row.failure = None;
        row.reason = None;
        let dir = write_flight_record(base.path(), &row, &FlightRecord::default()).expect("write record");
        for file in ["README.md", "timeline.jsonl", "timeline.txt", "mismatches.md", "events.yaml", "logs.txt"] {
            assert!(dir.join(file).is_file(), "{file}");
        }
        assert!(dir.join("objects").is_dir());
        assert_eq!(read(&dir.join("timeline.jsonl")), "");
        assert_eq!(read(&dir.join("timeline.txt")), "");
        assert_eq!(read(&dir.join("logs.txt")), "");
        assert!(read(&dir.join("mismatches.md")).contains("No wait or expectation recorded a mismatch."));
        assert!(read(&dir.join("README.md")).contains("No failure text was recorded."));
        assert_eq!(fs::read_dir(dir.join("objects")).expect("objects").count(), 0);
    }

    #[test]
    fn rewriting_a_record_drops_stale_objects() {
        let base = tempfile::tempdir().expect("tempdir");
        let row = failed_row("s", "r");
        write_flight_record(base.path(), &row, &full_record()).expect("first");
        let dir = write_flight_record(base.path(), &row, &FlightRecord::default()).expect("second");
        assert_eq!(fs::read_dir(dir.join("objects")).expect("objects").count(), 0);
    }

    #[test]
    fn fences_outgrow_backticks_in_content() {
        assert_eq!(fenced("text", "a"), "```text\na\n```\n");
        assert_eq!(fenced("text", "x ```` y\n"), "`````text\nx ```` y\n`````\n");
    }
}
