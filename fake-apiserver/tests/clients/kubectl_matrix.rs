//! kubectl 1.27 … 1.33 against the `fake-apiserver` binary: one server per kubectl minor, the
//! same commands for each, a table version × command → pass / FAIL / skip (with the reason)
//! printed and written to `target/kproof/kubectl-matrix.md`. Minors whose binary is absent are
//! skipped with the reason; any unexpected failure fails the test.
//!
//! Every server runs over TLS with RBAC on (the kubeconfig is the administrator's, in `system:masters`)
//! and writes a second kubeconfig for the service account `default/ctl`, so `auth can-i --as`
//! and a least-privilege identity are rows like the others. kubectl 1.27 and 1.28 validate and
//! explain from protobuf `/openapi/v2`; 1.32+ create built-ins in protobuf.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use crate::process::{ServerProcess as Server, start_server_with, wait_until};

const MINORS: &[u32] = &[27, 28, 29, 30, 31, 32, 33];

/// The directory holding `kubectl.1.NN`: beside the real `kubectl` on PATH.
fn kubectl_dir() -> Result<PathBuf, String> {
    let real = crate::process::kubectl_on_path()?;
    real.parent().map(Path::to_path_buf).ok_or_else(|| "kubectl has no parent directory".into())
}

/// What one cell of the matrix says.
#[derive(Debug, Clone)]
enum Outcome {
    Pass,
    Fail(String),
    Skip(String),
    /// The server lacks the feature the command needs (reported, never counted as a pass).
    Missing(String),
}

type CaseResult = Result<(), String>;

/// One kubectl minor against its own server.
struct Ctx {
    minor: u32,
    kubectl: PathBuf,
    server: Server,
    dir: PathBuf,
}

impl Ctx {
    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(&self.kubectl);
        c.arg("--kubeconfig").arg(&self.server.kubeconfig).arg("--cache-dir").arg(self.dir.join("cache")).args(args);
        c
    }

    /// Runs kubectl; `Ok(output)` on exit 0, `Err(output)` otherwise (stdout and stderr together).
    fn run(&self, args: &[&str]) -> Result<String, String> {
        let out = self.command(args).output().map_err(|e| format!("cannot run kubectl: {e}"))?;
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        if out.status.success() {
            Ok(text)
        } else {
            Err(format!("`kubectl {}` failed: {}", args.join(" "), text.trim()))
        }
    }

    /// Runs kubectl and checks its output contains `want`.
    fn expect(&self, args: &[&str], want: &str) -> CaseResult {
        let out = self.run(args)?;
        if out.contains(want) { Ok(()) } else { Err(format!("`kubectl {}`: no {want:?} in {:?}", args.join(" "), out)) }
    }

    /// `-o jsonpath=…` of one object, trimmed.
    fn jsonpath(&self, what: &[&str], path: &str) -> Result<String, String> {
        let mut args: Vec<&str> = vec!["get"];
        args.extend_from_slice(what);
        let p = format!("jsonpath={path}");
        args.extend(["-o", &p]);
        Ok(self.run(&args)?.trim().to_string())
    }

    fn expect_jsonpath(&self, what: &[&str], path: &str, want: &str) -> CaseResult {
        let got = self.jsonpath(what, path)?;
        if got == want { Ok(()) } else { Err(format!("{} {path}: got {got:?}, want {want:?}", what.join(" "))) }
    }

    /// Writes a manifest into the work directory and returns its path.
    fn file(&self, name: &str, content: &str) -> String {
        let p = self.dir.join(name);
        std::fs::write(&p, content).expect("write manifest");
        p.to_string_lossy().into_owned()
    }

    fn apply(&self, name: &str, content: &str, extra: &[&str]) -> Result<String, String> {
        let f = self.file(name, content);
        let mut args = vec!["apply", "-f", f.as_str()];
        args.extend_from_slice(extra);
        self.run(&args)
    }

    /// Runs kubectl and returns its output whatever its exit status (`auth can-i` says "no"
    /// with exit 1).
    fn output(&self, args: &[&str]) -> Result<String, String> {
        let out = self.command(args).output().map_err(|e| format!("cannot run kubectl: {e}"))?;
        Ok(format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
    }

    /// Runs kubectl as the service account `default/ctl` (its own kubeconfig).
    fn run_as_ctl(&self, args: &[&str]) -> Result<String, String> {
        let mut c = Command::new(&self.kubectl);
        c.arg("--kubeconfig").arg(self.dir.join("ctl.kubeconfig")).arg("--cache-dir").arg(self.dir.join("cache-ctl"));
        let out = c.args(args).output().map_err(|e| format!("cannot run kubectl: {e}"))?;
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        if out.status.success() { Ok(text) } else { Err(text) }
    }

    fn gone(&self, what: &[&str]) -> bool {
        let mut args = vec!["get"];
        args.extend_from_slice(what);
        // kubectl prints the server's Status as `Error from server (NotFound): <message>`.
        matches!(self.run(&args), Err(e) if e.contains("Error from server (NotFound)"))
    }

    fn uid(&self, what: &[&str]) -> Result<String, String> {
        self.jsonpath(what, "{.metadata.uid}")
    }
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
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
    additionalPrinterColumns:
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    schema:
      openAPIV3Schema:
        type: object
        description: A widget for the kubectl matrix.
        properties:
          spec:
            type: object
            properties:
              replicas: {type: integer, description: How many widget replicas to run.}
              color: {type: string}
          status:
            type: object
            properties:
              replicas: {type: integer}
              conditions:
                type: array
                items:
                  type: object
                  properties:
                    type: {type: string}
                    status: {type: string}
"#;

const WIDGET: &str = "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\nspec:\n  replicas: 1\n";

fn deployment(replicas: u32) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  labels: {{app: web}}\nspec:\n  replicas: {replicas}\n  selector:\n    matchLabels: {{app: web}}\n  template:\n    metadata:\n      labels: {{app: web}}\n    spec:\n      containers:\n      - name: c\n        image: nginx:1\n"
    )
}

fn config_map(name: &str, value: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  key: {value}\n")
}

type Case = fn(&Ctx) -> Outcome;

/// Server answers that mean a feature is not implemented yet, with what to report.
const NOT_IMPLEMENTED: &[(&str, &str)] =
    &[("Server-side apply not available on the server", "server-side apply is not implemented yet (415)")];

fn outcome(r: CaseResult) -> Outcome {
    match r {
        Ok(()) => Outcome::Pass,
        Err(e) => match NOT_IMPLEMENTED.iter().find(|(sign, _)| e.contains(sign)) {
            Some((_, what)) => Outcome::Missing(what.to_string()),
            None => Outcome::Fail(e),
        },
    }
}

fn setup(c: &Ctx) -> CaseResult {
    c.apply("crd.yaml", CRD, &[])?;
    c.expect(&["wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=20s"], "condition met")?;
    c.apply("w1.yaml", WIDGET, &[])?;
    Ok(())
}

fn api_resources(c: &Ctx) -> Outcome {
    outcome((|| {
        let out = c.run(&["api-resources"])?;
        for want in ["deployments", "deploy", "apps/v1", "widgets", "wg", "example.com/v1", "Widget"] {
            if !out.contains(want) {
                return Err(format!("api-resources lacks {want:?}"));
            }
        }
        Ok(())
    })())
}

fn apply_create(c: &Ctx) -> Outcome {
    outcome((|| {
        let out = c.apply("web.yaml", &deployment(2), &[])?;
        if !out.contains("deployment.apps/web created") {
            return Err(format!("unexpected output {out:?}"));
        }
        c.expect_jsonpath(&["deploy", "web"], "{.spec.replicas}", "2")
    })())
}

fn apply_update(c: &Ctx) -> Outcome {
    outcome((|| {
        let out = c.apply("web.yaml", &deployment(3), &[])?;
        if !out.contains("deployment.apps/web configured") {
            return Err(format!("unexpected output {out:?}"));
        }
        c.expect_jsonpath(&["deploy", "web"], "{.spec.replicas}", "3")?;
        // A custom resource takes a merge patch.
        c.apply("w1.yaml", &WIDGET.replace("replicas: 1", "replicas: 2"), &[])?;
        c.expect_jsonpath(&["widget", "w1"], "{.spec.replicas}", "2")
    })())
}

fn apply_server_side(c: &Ctx) -> Outcome {
    outcome((|| {
        let out = c.apply("ssa.yaml", &config_map("ssa", "one"), &["--server-side"])?;
        if !out.contains("serverside-applied") {
            return Err(format!("unexpected output {out:?}"));
        }
        c.apply("ssa.yaml", &config_map("ssa", "two"), &["--server-side"])?;
        c.expect_jsonpath(&["cm", "ssa"], "{.data.key}", "two")?;
        let managers = c.jsonpath(&["cm", "ssa"], "{.metadata.managedFields[*].manager}")?;
        if !managers.contains("kubectl") {
            return Err(format!("managedFields names no kubectl manager: {managers:?}"));
        }
        Ok(())
    })())
}

fn apply_server_side_conflict(c: &Ctx) -> Outcome {
    outcome((|| {
        c.apply("ssac.yaml", &config_map("ssac", "mine"), &["--server-side"])?;
        match c.apply("ssac2.yaml", &config_map("ssac", "theirs"), &["--server-side", "--field-manager=intruder"]) {
            Ok(out) => Err(format!("a conflicting apply succeeded: {out:?}")),
            Err(e) if e.to_lowercase().contains("conflict") => {
                c.expect_jsonpath(&["cm", "ssac"], "{.data.key}", "mine")
            }
            Err(e) => Err(format!("no conflict reported: {e}")),
        }
    })())
}

fn apply_force_conflicts(c: &Ctx) -> Outcome {
    outcome((|| {
        c.apply("ssaf.yaml", &config_map("ssaf", "mine"), &["--server-side"])?;
        c.apply(
            "ssaf2.yaml",
            &config_map("ssaf", "theirs"),
            &["--server-side", "--field-manager=intruder", "--force-conflicts"],
        )?;
        c.expect_jsonpath(&["cm", "ssaf"], "{.data.key}", "theirs")
    })())
}

fn get_table(c: &Ctx) -> Outcome {
    outcome((|| {
        let out = c.run(&["get", "deployments"])?;
        for want in ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "web", "0/3"] {
            if !out.contains(want) {
                return Err(format!("`get deployments` lacks {want:?}: {out:?}"));
            }
        }
        let out = c.run(&["get", "widgets"])?;
        if !(out.contains("REPLICAS") && out.contains("w1")) {
            return Err(format!("`get widgets` lacks the printer column: {out:?}"));
        }
        Ok(())
    })())
}

fn get_yaml(c: &Ctx) -> Outcome {
    outcome(c.expect(&["get", "deploy", "web", "-o", "yaml"], "kind: Deployment"))
}

fn get_jsonpath(c: &Ctx) -> Outcome {
    outcome(c.expect_jsonpath(
        &["deploy", "web"],
        "{.metadata.name}/{.spec.template.spec.containers[0].image}",
        "web/nginx:1",
    ))
}

/// Lines kubectl prints, read on a thread so the test can wait for them with a deadline.
fn line_reader(child: &mut Child) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    if let Some(out) = child.stdout.take() {
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
    }
    rx
}

fn get_watch(c: &Ctx) -> Outcome {
    outcome((|| {
        c.apply("watched.yaml", &config_map("watched", "a"), &[])?;
        let mut child = c
            .command(&["get", "cm", "watched", "-w"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| e.to_string())?;
        let lines = line_reader(&mut child);
        let result = (|| {
            let deadline = Duration::from_secs(15);
            let mut seen = Vec::new();
            while !seen.iter().any(|l: &String| l.starts_with("watched")) {
                seen.push(lines.recv_timeout(deadline).map_err(|_| format!("no initial row: {seen:?}"))?);
            }
            c.run(&["label", "cm", "watched", "changed=yes"])?;
            let rows_before = seen.iter().filter(|l| l.starts_with("watched")).count();
            while seen.iter().filter(|l| l.starts_with("watched")).count() == rows_before {
                seen.push(lines.recv_timeout(deadline).map_err(|_| format!("no row for the change: {seen:?}"))?);
            }
            Ok(())
        })();
        let _ = child.kill();
        let _ = child.wait();
        result
    })())
}

fn patch_merge(c: &Ctx) -> Outcome {
    outcome((|| {
        c.expect(
            &["patch", "deploy", "web", "--type", "merge", "-p", r#"{"metadata":{"labels":{"merged":"yes"}}}"#],
            "patched",
        )?;
        c.expect_jsonpath(&["deploy", "web"], "{.metadata.labels.merged}", "yes")
    })())
}

fn patch_json(c: &Ctx) -> Outcome {
    outcome((|| {
        let p = r#"[{"op":"test","path":"/spec/replicas","value":3},{"op":"add","path":"/metadata/labels/jsonpatched","value":"yes"}]"#;
        c.expect(&["patch", "deploy", "web", "--type", "json", "-p", p], "patched")?;
        c.expect_jsonpath(&["deploy", "web"], "{.metadata.labels.jsonpatched}", "yes")
    })())
}

fn patch_strategic(c: &Ctx) -> Outcome {
    outcome((|| {
        // Containers merge by name: the patch adds one and keeps the other, the new one first
        // (strategicpatch's normalizeElementOrder).
        let p = r#"{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"busybox"}]}}}}"#;
        c.expect(&["patch", "deploy", "web", "--type", "strategic", "-p", p], "patched")?;
        c.expect_jsonpath(&["deploy", "web"], "{.spec.template.spec.containers[*].name}", "sidecar c")
    })())
}

fn label(c: &Ctx) -> Outcome {
    outcome((|| {
        c.expect(&["label", "deploy", "web", "tier=front"], "labeled")?;
        c.expect_jsonpath(&["deploy", "web"], "{.metadata.labels.tier}", "front")?;
        c.expect(&["label", "deploy", "web", "tier-"], "unlabeled")?;
        c.expect_jsonpath(&["deploy", "web"], "{.metadata.labels.tier}", "")
    })())
}

fn annotate(c: &Ctx) -> Outcome {
    outcome((|| {
        // kubectl 1.27 prints "annotate" where later minors print "annotated".
        c.expect(&["annotate", "deploy", "web", "note=hello"], "annotate")?;
        c.expect_jsonpath(&["deploy", "web"], "{.metadata.annotations.note}", "hello")
    })())
}

fn scale_deployment(c: &Ctx) -> Outcome {
    outcome((|| {
        c.expect(&["scale", "deploy", "web", "--replicas=5"], "scaled")?;
        c.expect_jsonpath(&["deploy", "web"], "{.spec.replicas}", "5")
    })())
}

fn scale_custom_resource(c: &Ctx) -> Outcome {
    outcome((|| {
        c.expect(&["scale", "widget", "w1", "--replicas=4"], "scaled")?;
        c.expect_jsonpath(&["widget", "w1"], "{.spec.replicas}", "4")
    })())
}

/// Starts `kubectl wait …`, runs `trigger`, and expects the wait to succeed within 30 s.
fn wait_with(c: &Ctx, args: &[&str], trigger: impl FnOnce() -> CaseResult) -> CaseResult {
    let mut child = c.command(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().map_err(|e| e.to_string())?;
    let triggered = trigger();
    let mut status = None;
    let _ = wait_until(Duration::from_secs(30), || {
        status = child.try_wait().ok().flatten();
        status.is_some()
    });
    if status.is_none() {
        let _ = child.kill();
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    triggered?;
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    match status {
        Some(s) if s.success() => Ok(()),
        Some(_) => Err(format!("`kubectl {}` failed: {}", args.join(" "), text.trim())),
        None => Err(format!("`kubectl {}` did not finish in 30 s: {}", args.join(" "), text.trim())),
    }
}

fn wait_condition(c: &Ctx) -> Outcome {
    outcome(wait_with(c, &["wait", "--for=condition=Ready", "widget/w1", "--timeout=25s"], || {
        let p = r#"{"status":{"conditions":[{"type":"Ready","status":"True"}]}}"#;
        c.run(&["patch", "widget", "w1", "--subresource=status", "--type=merge", "-p", p]).map(|_| ())
    }))
}

fn wait_jsonpath(c: &Ctx) -> Outcome {
    outcome(wait_with(c, &["wait", "--for=jsonpath={.spec.color}=blue", "widget/w1", "--timeout=25s"], || {
        c.run(&["patch", "widget", "w1", "--type=merge", "-p", r#"{"spec":{"color":"blue"}}"#]).map(|_| ())
    }))
}

fn wait_delete(c: &Ctx) -> Outcome {
    outcome((|| {
        // A finalizer keeps the object until the test removes it, so the wait must watch.
        let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: doomed\n  finalizers: [example.com/hold]\n";
        c.apply("doomed.yaml", cm, &[])?;
        c.run(&["delete", "cm", "doomed", "--wait=false"])?;
        wait_with(c, &["wait", "--for=delete", "cm/doomed", "--timeout=25s"], || {
            c.run(&["patch", "cm", "doomed", "--type=json", "-p", r#"[{"op":"remove","path":"/metadata/finalizers"}]"#])
                .map(|_| ())
        })
    })())
}

/// An owner ConfigMap and a dependent pointing at it (blocking owner deletion).
fn owner_and_dependent(c: &Ctx, suffix: &str) -> Result<(String, String), String> {
    let owner = format!("owner-{suffix}");
    let dep = format!("dependent-{suffix}");
    c.apply(&format!("{owner}.yaml"), &config_map(&owner, "o"), &[])?;
    let uid = c.uid(&["cm", &owner])?;
    let manifest = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {dep}\n  ownerReferences:\n  - apiVersion: v1\n    kind: ConfigMap\n    name: {owner}\n    uid: {uid}\n    blockOwnerDeletion: true\ndata:\n  key: d\n"
    );
    c.apply(&format!("{dep}.yaml"), &manifest, &[])?;
    Ok((owner, dep))
}

fn delete_cascade(c: &Ctx, policy: &str) -> CaseResult {
    let (owner, dep) = owner_and_dependent(c, policy)?;
    let flag = format!("--cascade={policy}");
    c.expect(&["delete", "cm", &owner, &flag, "--timeout=25s"], "deleted")?;
    if !c.gone(&["cm", &owner]) {
        return Err(format!("the owner is still there after delete {flag}"));
    }
    if policy == "orphan" {
        // The dependent stays, without the owner reference.
        c.expect_jsonpath(&["cm", &dep], "{.metadata.name}|{.metadata.ownerReferences}", &format!("{dep}|"))
    } else {
        wait_until(Duration::from_secs(15), || c.gone(&["cm", &dep]))
            .map_err(|_| format!("the dependent survived delete {flag}"))
    }
}

fn delete_background(c: &Ctx) -> Outcome {
    outcome(delete_cascade(c, "background"))
}

fn delete_foreground(c: &Ctx) -> Outcome {
    outcome(delete_cascade(c, "foreground"))
}

fn delete_orphan(c: &Ctx) -> Outcome {
    outcome(delete_cascade(c, "orphan"))
}

fn explain(c: &Ctx) -> Outcome {
    outcome((|| {
        c.expect(&["explain", "deployment.spec.replicas"], "Number of desired pods")?;
        c.expect(&["explain", "widget.spec.replicas"], "How many widget replicas to run.")
    })())
}

fn auth_can_i(c: &Ctx) -> Outcome {
    // The administrator (system:masters) may do everything.
    outcome((|| {
        c.expect(&["auth", "can-i", "create", "pods"], "yes")?;
        c.expect(&["auth", "can-i", "--list"], "*.*")
    })())
}

const CTL_ROLE: &str = "apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: ctl, namespace: default}
rules:
- {apiGroups: [\"\"], resources: [pods], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: ctl, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: ctl}
subjects:
- {kind: ServiceAccount, name: ctl, namespace: default}
";

fn auth_can_i_as(c: &Ctx) -> Outcome {
    outcome((|| {
        c.apply("ctl-role.yaml", CTL_ROLE, &[])?;
        let sa = "--as=system:serviceaccount:default:ctl";
        for (verb, resource, want) in [("list", "pods", "yes"), ("delete", "pods", "no"), ("list", "secrets", "no")] {
            let out = c.output(&["auth", "can-i", verb, resource, sa])?;
            if out.lines().next().map(str::trim) != Some(want) {
                return Err(format!("can-i {verb} {resource} {sa}: expected {want}, got {out:?}"));
            }
        }
        Ok(())
    })())
}

fn least_privilege_identity(c: &Ctx) -> Outcome {
    outcome((|| {
        c.apply("ctl-role.yaml", CTL_ROLE, &[])?;
        c.run_as_ctl(&["get", "pods"])?;
        match c.run_as_ctl(&["get", "secrets"]) {
            Ok(out) => Err(format!("listing secrets as ctl succeeded: {out}")),
            Err(e) if e.contains("secrets is forbidden: User \"system:serviceaccount:default:ctl\" cannot list resource \"secrets\" in API group \"\" in the namespace \"default\"") => Ok(()),
            Err(e) => Err(format!("unexpected refusal: {e}")),
        }
    })())
}

fn create_builtins(c: &Ctx) -> Outcome {
    outcome((|| {
        let ns = format!("made-by-{}", c.minor);
        c.expect(&["create", "namespace", &ns], "created")?;
        c.expect(&["-n", &ns, "create", "secret", "generic", "s", "--from-literal=a=b"], "secret/s created")?;
        c.expect(&["-n", &ns, "create", "configmap", "c", "--from-literal=a=b"], "configmap/c created")?;
        c.expect(&["-n", &ns, "create", "deployment", "d", "--image=nginx"], "deployment.apps/d created")?;
        c.expect(&["-n", &ns, "create", "job", "j", "--image=busybox"], "job.batch/j created")?;
        c.expect_jsonpath(&["-n", &ns, "secret", "s"], "{.data.a}", "Yg==")?;
        c.expect_jsonpath(&["-n", &ns, "deploy", "d"], "{.spec.template.spec.containers[0].image}", "nginx")
    })())
}

fn default_validation(c: &Ctx) -> Outcome {
    outcome(match c.apply("bogus.yaml", &format!("{}bogus: 1\n", config_map("bogus", "v")), &[]) {
        Ok(out) => Err(format!("an unknown field was accepted: {out}")),
        Err(e) if e.contains("unknown field \"bogus\"") => Ok(()),
        Err(e) => Err(format!("unexpected refusal: {e}")),
    })
}

fn get_events(c: &Ctx) -> Outcome {
    outcome((|| {
        let event = "apiVersion: v1\nkind: Event\nmetadata:\n  name: demo.matrix\ninvolvedObject:\n  apiVersion: v1\n  kind: ConfigMap\n  name: demo\n  namespace: default\nreason: MatrixDemo\nmessage: hello from the matrix\ntype: Normal\nsource:\n  component: kubectl-matrix\n";
        c.apply("event.yaml", event, &[])?;
        c.expect(&["get", "events", "--field-selector", "reason=MatrixDemo"], "hello from the matrix")?;
        c.expect(&["events", "--for", "configmap/demo"], "hello from the matrix")
    })())
}

/// The matrix rows: (command, how it is checked, the case).
fn cases() -> Vec<(&'static str, Case)> {
    vec![
        ("api-resources", api_resources as Case),
        ("apply (client-side create)", apply_create),
        ("apply (client-side update)", apply_update),
        ("apply --server-side", apply_server_side),
        ("apply --server-side (conflict)", apply_server_side_conflict),
        ("apply --server-side --force-conflicts", apply_force_conflicts),
        ("get (table)", get_table),
        ("get -o yaml", get_yaml),
        ("get -o jsonpath", get_jsonpath),
        ("get -w", get_watch),
        ("patch --type merge", patch_merge),
        ("patch --type json", patch_json),
        ("patch --type strategic", patch_strategic),
        ("label", label),
        ("annotate", annotate),
        ("scale (Deployment)", scale_deployment),
        ("scale (custom resource)", scale_custom_resource),
        ("wait --for=condition", wait_condition),
        ("wait --for=jsonpath", wait_jsonpath),
        ("wait --for=delete", wait_delete),
        ("delete --cascade=background", delete_background),
        ("delete --cascade=foreground", delete_foreground),
        ("delete --cascade=orphan", delete_orphan),
        ("explain", explain),
        ("auth can-i", auth_can_i),
        ("auth can-i --as (RBAC)", auth_can_i_as),
        ("least-privilege kubeconfig (RBAC)", least_privilege_identity),
        ("create namespace, secret, configmap, deployment, job", create_builtins),
        ("default validation (unknown field refused)", default_validation),
        ("get events / events --for", get_events),
    ]
}

fn run_minor(minor: u32, dir: Option<&Path>) -> Vec<Outcome> {
    let n = cases().len();
    let Some(dir) = dir else { return vec![Outcome::Skip("no kubectl on PATH".into()); n] };
    let kubectl = dir.join(format!("kubectl.1.{minor}"));
    if !kubectl.exists() {
        return vec![Outcome::Skip(format!("{} is absent", kubectl.display())); n];
    }
    let work = tempfile::tempdir().expect("tempdir");
    let ctl = format!("--identity=serviceaccount:default/ctl={}", work.path().join("ctl.kubeconfig").display());
    let server = match start_server_with(work.path(), &["--rbac", "--tls", &ctl]) {
        Ok(s) => s,
        Err(e) => return vec![Outcome::Fail(e); n],
    };
    let ctx = Ctx { minor, kubectl, server, dir: work.path().to_path_buf() };
    if let Err(e) = setup(&ctx) {
        return vec![Outcome::Fail(format!("setup: {e}")); n];
    }
    cases().into_iter().map(|(_, case)| case(&ctx)).collect()
}

fn cell(o: &Outcome) -> String {
    match o {
        Outcome::Pass => "pass".into(),
        Outcome::Fail(_) => "**FAIL**".into(),
        Outcome::Skip(_) => "skip".into(),
        Outcome::Missing(_) => "missing".into(),
    }
}

#[test]
fn kubectl_matrix() {
    let dir = match kubectl_dir() {
        Ok(d) => Some(d),
        Err(why) => {
            println!("SKIPPED: {why}");
            None
        }
    };
    // Two kubectl minors at a time: the machine has two cores.
    let queue = Arc::new(Mutex::new(MINORS.to_vec()));
    let results = Arc::new(Mutex::new(Vec::new()));
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let (queue, results, dir) = (queue.clone(), results.clone(), dir.clone());
            std::thread::spawn(move || {
                loop {
                    let Some(minor) = queue.lock().expect("queue").pop() else { break };
                    let outcomes = run_minor(minor, dir.as_deref());
                    results.lock().expect("results").push((minor, outcomes));
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("a matrix worker panicked");
    }
    let mut results = results.lock().expect("results").clone();
    results.sort_by_key(|(m, _)| *m);

    let names: Vec<&str> = cases().iter().map(|(n, _)| *n).collect();
    let mut md = String::from("| command |");
    for (m, _) in &results {
        md.push_str(&format!(" 1.{m} |"));
    }
    md.push_str("\n|---|");
    for _ in &results {
        md.push_str("---|");
    }
    md.push('\n');
    for (i, name) in names.iter().enumerate() {
        md.push_str(&format!("| `{name}` |"));
        for (_, outcomes) in &results {
            md.push_str(&format!(" {} |", cell(&outcomes[i])));
        }
        md.push('\n');
    }
    let mut notes = String::new();
    let mut failures = Vec::new();
    for (m, outcomes) in &results {
        for (i, o) in outcomes.iter().enumerate() {
            match o {
                Outcome::Skip(why) => notes.push_str(&format!("- 1.{m} `{}`: skipped: {why}\n", names[i])),
                Outcome::Fail(why) => {
                    notes.push_str(&format!("- 1.{m} `{}`: FAILED: {why}\n", names[i]));
                    failures.push(format!("1.{m} {}: {why}", names[i]));
                }
                Outcome::Missing(why) => {
                    notes.push_str(&format!("- 1.{m} `{}`: MISSING in the server: {why}\n", names[i]))
                }
                Outcome::Pass => {}
            }
        }
    }
    let setup = "Every kubectl runs with its default validation, against a server over TLS with RBAC on (`--tls --rbac`, the administrator's kubeconfig) and a second kubeconfig for the service account `default/ctl`.\n";
    let report = format!("{md}\n{setup}\n{notes}");
    println!("{report}");
    let out_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/kproof");
    if std::fs::create_dir_all(&out_dir).is_ok() {
        let _ = std::fs::write(out_dir.join("kubectl-matrix.md"), &report);
    }
    assert!(failures.is_empty(), "unexpected kubectl failures:\n{}", failures.join("\n"));
}
