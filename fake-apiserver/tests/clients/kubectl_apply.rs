//! kubectl 1.33 against the `fake-apiserver` binary: `apply --server-side` (with a conflict
//! between field managers, then `--force-conflicts`), client-side `apply` of a Deployment
//! (a strategic merge patch) and `patch --type strategic`. Skipped, with the reason printed,
//! where kubectl 1.33 is absent.

use std::path::{Path, PathBuf};
use std::process::Command;

/// kubectl 1.33: `kubectl.1.33` beside the `kubectl` on PATH, or `kubectl` itself if it is 1.33.
fn kubectl_133() -> Result<PathBuf, String> {
    let real = crate::process::kubectl_on_path()?;
    let beside = real.parent().map(|d| d.join("kubectl.1.33"));
    if let Some(b) = beside.filter(|b| b.exists()) {
        return Ok(b);
    }
    let v = Command::new(&real).args(["version", "--client", "-o", "json"]).output().map_err(|e| e.to_string())?;
    if String::from_utf8_lossy(&v.stdout).contains("\"minor\": \"33\"") {
        Ok(real)
    } else {
        Err(format!("no kubectl 1.33 found (kubectl on PATH is {})", real.display()))
    }
}

struct Server {
    process: crate::process::ServerProcess,
    _dir: tempfile::TempDir,
}

impl std::ops::Deref for Server {
    type Target = crate::process::ServerProcess;
    fn deref(&self) -> &Self::Target {
        &self.process
    }
}

fn start_server() -> Server {
    let dir = tempfile::tempdir().unwrap();
    Server { process: crate::process::start_server(dir.path()).expect("the server starts"), _dir: dir }
}

fn run(kubectl: &Path, server: &Server, cache: &Path, args: &[&str]) -> (bool, String) {
    let out = Command::new(kubectl)
        .arg("--kubeconfig")
        .arg(&server.kubeconfig)
        .arg("--cache-dir")
        .arg(cache)
        .args(args)
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

fn deployment(replicas: u32, image: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  labels: {{app: web}}\nspec:\n  replicas: {replicas}\n  selector:\n    matchLabels: {{app: web}}\n  template:\n    metadata:\n      labels: {{app: web}}\n    spec:\n      containers:\n      - name: main\n        image: {image}\n"
    )
}

#[test]
fn kubectl_133_server_side_apply_conflicts_force_and_strategic_patch() {
    let kubectl = match kubectl_133() {
        Ok(k) => k,
        Err(why) => {
            println!("SKIPPED: {why}");
            return;
        }
    };
    let server = start_server();
    let work = tempfile::tempdir().unwrap();
    let cache = work.path().join("cache");
    let file = work.path().join("web.yaml").to_string_lossy().into_owned();
    let k = |args: &[&str]| run(&kubectl, &server, &cache, args);

    std::fs::write(&file, deployment(1, "nginx:1")).unwrap();
    let (ok, out) = k(&["apply", "--server-side", "-f", &file]);
    assert!(ok && out.contains("deployment.apps/web serverside-applied"), "{out}");
    let (ok, out) = k(&["get", "deploy", "web", "-o", "jsonpath={.metadata.managedFields[*].manager}"]);
    assert!(ok && out.trim() == "kubectl", "{out}");

    // Another manager wants other values: a conflict, listed by field.
    std::fs::write(&file, deployment(3, "nginx:2")).unwrap();
    let (ok, out) = k(&["apply", "--server-side", "--field-manager=ops", "-f", &file]);
    assert!(!ok, "{out}");
    assert!(out.contains("Apply failed with 2 conflicts: conflicts with \"kubectl\":"), "{out}");
    assert!(out.contains("- .spec.replicas"), "{out}");
    assert!(out.contains(".spec.template.spec.containers[name=\"main\"].image"), "{out}");
    let (ok, out) = k(&["get", "deploy", "web", "-o", "jsonpath={.spec.replicas}"]);
    assert!(ok && out.trim() == "1", "nothing changed: {out}");

    // Forced: ops takes the fields.
    let (ok, out) = k(&["apply", "--server-side", "--field-manager=ops", "--force-conflicts", "-f", &file]);
    assert!(ok && out.contains("serverside-applied"), "{out}");
    let (ok, out) =
        k(&["get", "deploy", "web", "-o", "jsonpath={.spec.replicas} {.spec.template.spec.containers[0].image}"]);
    assert!(ok && out.trim() == "3 nginx:2", "{out}");
    let (ok, out) =
        k(&["get", "deploy", "web", "-o", "jsonpath={.metadata.managedFields[?(@.manager==\"ops\")].fieldsV1}"]);
    assert!(ok && out.contains("f:replicas"), "{out}");

    // Strategic merge patch: a container is added by name, the existing one stays; the new one
    // comes first (mergeSlice's normalizeElementOrder puts patch items before server-only items
    // it cannot order against them, apimachinery v0.37.2 strategicpatch/patch.go).
    let (ok, out) = k(&[
        "patch",
        "deploy",
        "web",
        "--type",
        "strategic",
        "-p",
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"side","image":"busybox"}]}}}}"#,
    ]);
    assert!(ok && out.contains("deployment.apps/web patched"), "{out}");
    let (ok, out) = k(&["get", "deploy", "web", "-o", "jsonpath={.spec.template.spec.containers[*].name}"]);
    assert!(ok && out.trim() == "side main", "{out}");
    let (ok, out) = k(&["get", "deploy", "web", "-o", "jsonpath={.metadata.managedFields[*].manager}"]);
    assert!(ok && out.contains("kubectl-patch"), "{out}");

    // Client-side apply of a built-in sends a strategic merge patch on update.
    let cs = work.path().join("cs.yaml").to_string_lossy().into_owned();
    std::fs::write(&cs, deployment(2, "nginx:1").replace("name: web\n", "name: cs\n")).unwrap();
    let (ok, out) = k(&["apply", "-f", &cs]);
    assert!(ok && out.contains("deployment.apps/cs created"), "{out}");
    std::fs::write(&cs, deployment(4, "nginx:1").replace("name: web\n", "name: cs\n")).unwrap();
    let (ok, out) = k(&["apply", "-f", &cs]);
    assert!(ok && out.contains("deployment.apps/cs configured"), "{out}");
    let (ok, out) = k(&["get", "deploy", "cs", "-o", "jsonpath={.spec.replicas}"]);
    assert!(ok && out.trim() == "4", "{out}");
}
