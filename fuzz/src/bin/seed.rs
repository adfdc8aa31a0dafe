//! Writes the starting corpus of every target under `corpus/<target>/`, from what the project's
//! tests and tables already use: the fixtures (as JSON, YAML and, for built-in kinds, protobuf
//! as the fake server writes it), the suite files, and the selectors, quantities, durations,
//! patches and queries the unit tests exercise. Run from `fuzz/`, built as the targets are:
//! `cargo +nightly fuzz build -O -a --sanitizer none seed`, then
//! `target/x86_64-unknown-linux-gnu/release/seed`.

// Built with the targets' coverage instrumentation, it needs libFuzzer's hooks linked in (its
// own `main` stays: libFuzzer's is only taken when nothing else defines one).
extern crate libfuzzer_sys;

use kproof_fuzz::{COLLECTIONS, OBJECTS, Target, widget_schema};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn write(target: &str, name: &str, bytes: &[u8]) {
    let dir = Path::new("corpus").join(target);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
}

/// Every YAML file under `dir`, recursively.
fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            yaml_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "yaml") {
            out.push(path);
        }
    }
}

/// The collection a document of `kind` is created in, as the body targets' selector byte.
fn collection_of(kind: &str) -> u8 {
    let plural = format!("/{}s", kind.to_lowercase());
    let i = COLLECTIONS.iter().position(|c| c.ends_with(&plural)).unwrap_or(0);
    u8::try_from(i).unwrap_or(0)
}

fn main() {
    let root = Path::new("..");
    let mut fixtures = Vec::new();
    yaml_files(&root.join("fixtures"), &mut fixtures);
    let mut n = 0;
    for file in &fixtures {
        let Ok(text) = std::fs::read_to_string(file) else { continue };
        let Ok(docs) = serde_saphyr::from_multiple::<Value>(&text) else { continue };
        for doc in docs.into_iter().filter(Value::is_object) {
            let which = collection_of(doc["kind"].as_str().unwrap_or_default());
            let json = [vec![which], doc.to_string().into_bytes()].concat();
            let yaml = [vec![which], serde_saphyr::to_string(&doc).unwrap_or_default().into_bytes()].concat();
            write("body_json", &format!("fixture-{n}"), &json);
            write("body_yaml", &format!("fixture-{n}"), &yaml);
            n += 1;
        }
    }
    // Protobuf bodies as the server writes them for the seeded built-in objects.
    let target = Target::get();
    for (i, url) in OBJECTS.iter().enumerate().filter(|(_, u)| !u.contains("fuzz.kproof.dev")) {
        let body = target.get_as(url, "application/vnd.kubernetes.protobuf");
        let kind = url.rsplit('/').nth(1).unwrap_or_default().trim_end_matches('s');
        write("body_protobuf", &format!("seeded-{i}"), &[vec![collection_of(kind)], body].concat());
    }
    let patches: [(u8, &str); 9] = [
        (0, r#"[{"op":"add","path":"/data/b","value":"2"}]"#),
        (1, r#"[{"op":"replace","path":"/spec/containers/0/image","value":"nginx"},{"op":"test","path":"/metadata/name","value":"seed"}]"#),
        (3, r#"[{"op":"remove","path":"/spec/tags/0"},{"op":"move","from":"/spec/max","path":"/spec/replicas"}]"#),
        (4, r#"{"data":{"a":null,"c":"3"},"metadata":{"labels":{"x":"y"}}}"#),
        (6, r#"{"spec":{"replicas":3,"template":{"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}"#),
        (7, r#"{"spec":{"replicas":20}}"#),
        (9, r#"{"spec":{"containers":[{"name":"c","env":[{"name":"B","value":"2"}]}],"$setElementOrder/containers":[{"name":"c"}]}}"#),
        (10, r#"{"spec":{"template":{"spec":{"containers":[{"$patch":"delete","name":"c"}]}}}}"#),
        (11, r#"{"spec":{"tags":[{"name":"y","value":"z"}]}}"#),
    ];
    for (i, (which, body)) in patches.iter().enumerate() {
        write("patch", &format!("seed-{i}"), &[&[*which][..], body.as_bytes()].concat());
    }
    let applies: [(u8, &str); 4] = [
        (0, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: seed\ndata:\n  a: \"2\"\n"),
        (4, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: seed\ndata:\n  z: \"1\"\n"),
        (2, "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: seed\nspec:\n  replicas: 2\n"),
        (3, r#"{"apiVersion":"fuzz.kproof.dev/v1","kind":"Widget","metadata":{"name":"seed"},"spec":{"tags":[{"name":"x","value":"v"}]}}"#),
    ];
    for (i, (which, body)) in applies.iter().enumerate() {
        write("apply", &format!("seed-{i}"), &[&[*which][..], body.as_bytes()].concat());
    }
    let queries = [
        "labelSelector=app%3Dseed",
        "labelSelector=app+in+(seed,web),!tier",
        "fieldSelector=metadata.name%3Dseed",
        "fieldSelector=metadata.namespace!%3Ddefault",
        "limit=1",
        "limit=1&continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiJ4In0",
        "resourceVersion=0",
        "resourceVersion=1&resourceVersionMatch=Exact",
        "resourceVersion=999999&resourceVersionMatch=NotOlderThan",
        "watch=true&resourceVersion=1",
        "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
        "includeObject=Object",
    ];
    for (i, q) in queries.iter().enumerate() {
        write("query", &format!("seed-{i}"), &[&[u8::try_from(i * 2).unwrap_or(0)][..], q.as_bytes()].concat());
    }
    let object = json!({"apiVersion": "fuzz.kproof.dev/v1", "kind": "Widget", "metadata": {"name": "w"},
                        "spec": {"replicas": 2, "max": 3, "size": "1Gi", "mode": "a", "tags": [{"name": "a"}, {"name": "b"}]}});
    write("crd_schema", "widget", format!("{}\n{}", widget_schema(), object).as_bytes());
    let quantities = ["1", "100m", "1.5Gi", "2e3", "0.001", "1E", "9223372036854775807", "-1k", "1.23456789n", "500Mi", ".5", "+1Ki"];
    let durations = ["0", "1s", "1m30s", "1.5h", "-2h45m", "300ms", "1µs", "1us", "9223372036854775807ns", "2562047h47m16.854775807s", ".5s"];
    let selectors = [
        "app=web",
        "app!=web,tier",
        "app in (a,b),!tier",
        "kubernetes.io/name notin (x)",
        "tier>1",
        "metadata.name=web",
        "metadata.name!=a\\,b",
        "status.phase==Running,spec.nodeName=",
    ];
    for (target, list) in [("quantity", &quantities[..]), ("go_duration", &durations[..]), ("selectors", &selectors[..])] {
        for (i, s) in list.iter().enumerate() {
            write(target, &format!("seed-{i}"), s.as_bytes());
        }
    }
    let mut suites = Vec::new();
    yaml_files(&root.join("suites"), &mut suites);
    for (i, file) in suites.iter().enumerate() {
        if let Ok(bytes) = std::fs::read(file) {
            write("suite_lint", &format!("suite-{i}"), &bytes);
        }
    }
    println!("wrote the corpora under corpus/ ({n} fixture documents, {} suite files)", suites.len());
}
