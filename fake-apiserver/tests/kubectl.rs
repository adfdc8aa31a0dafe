//! kubectl 1.33 against the `fake-apiserver` binary: apply a CRD and a custom resource, get,
//! get -o yaml, wait, delete. Skipped, with the reason printed, where kubectl 1.33 is absent.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// kubectl 1.33: `kubectl.1.33` beside the `kubectl` on PATH, or `kubectl` itself if it is 1.33.
fn kubectl_133() -> Result<PathBuf, String> {
    let which = Command::new("sh").args(["-c", "command -v kubectl"]).output().map_err(|e| e.to_string())?;
    let path = String::from_utf8_lossy(&which.stdout).trim().to_string();
    if path.is_empty() {
        return Err("kubectl is not on PATH".into());
    }
    let real = std::fs::canonicalize(&path).map_err(|e| e.to_string())?;
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
    child: Child,
    kubeconfig: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_server() -> Server {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let child = Command::new(env!("CARGO_BIN_EXE_fake-apiserver"))
        .args(["--port", "0", "--kubeconfig"])
        .arg(&kubeconfig)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !kubeconfig.exists() {
        assert!(start.elapsed() < Duration::from_secs(20), "server did not write its kubeconfig");
        std::thread::sleep(Duration::from_millis(20));
    }
    Server { child, kubeconfig, _dir: dir }
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

const CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wg]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, minimum: 1}
              color: {type: string, default: blue}
"#;

const WIDGET: &str = "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\nspec:\n  size: 3\n";

#[test]
fn kubectl_133_applies_gets_and_deletes_a_crd_and_a_custom_resource() {
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
    std::fs::write(work.path().join("crd.yaml"), CRD).unwrap();
    std::fs::write(work.path().join("w1.yaml"), WIDGET).unwrap();
    let file = |n: &str| work.path().join(n).to_string_lossy().into_owned();
    let k = |args: &[&str]| run(&kubectl, &server, &cache, args);

    let (ok, out) = k(&["apply", "--validate=false", "-f", &file("crd.yaml")]);
    assert!(ok && out.contains("customresourcedefinition.apiextensions.k8s.io/widgets.example.com created"), "{out}");
    let (ok, out) = k(&["wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=20s"]);
    assert!(ok && out.contains("condition met"), "{out}");
    let (ok, out) = k(&["apply", "--validate=false", "-f", &file("w1.yaml")]);
    assert!(ok && out.contains("widget.example.com/w1 created"), "{out}");
    let (ok, out) = k(&["get", "widgets"]);
    assert!(ok && out.contains("NAME") && out.contains("w1"), "{out}");
    let (ok, out) = k(&["get", "wg", "w1", "-o", "yaml"]);
    assert!(ok, "{out}");
    assert!(out.contains("kind: Widget") && out.contains("name: w1") && out.contains("size: 3"), "{out}");
    assert!(out.contains("color: blue"), "the schema default is applied: {out}");
    let (ok, out) = k(&["get", "widget", "w1", "-o", "jsonpath={.metadata.generation}"]);
    assert!(ok && out.trim() == "1", "{out}");
    // Apply again with a change: kubectl computes a merge patch for a custom resource.
    std::fs::write(work.path().join("w1.yaml"), WIDGET.replace("size: 3", "size: 5")).unwrap();
    let (ok, out) = k(&["apply", "--validate=false", "-f", &file("w1.yaml")]);
    assert!(ok && out.contains("widget.example.com/w1 configured"), "{out}");
    let (ok, out) = k(&["get", "widget", "w1", "-o", "jsonpath={.spec.size} {.metadata.generation}"]);
    assert!(ok && out.trim() == "5 2", "{out}");
    let (ok, out) = k(&["delete", "widget", "w1"]);
    assert!(ok && out.contains("widget.example.com \"w1\" deleted"), "{out}");
    let (ok, out) = k(&["get", "widgets"]);
    assert!(ok && out.contains("No resources found"), "{out}");
    let (ok, out) = k(&["delete", "-f", &file("crd.yaml")]);
    assert!(ok && out.contains("deleted"), "{out}");
    let (ok, out) = k(&["get", "namespaces"]);
    assert!(ok && out.contains("kube-system"), "{out}");
}
