//! The walk-throughs of docs/walkthroughs.md, run as a user runs them: kubectl against a fresh
//! `kproof serve`, applying the upstream samples unchanged (beyond the values the docs tell a
//! user to change) with nothing applied by hand first. Each test prints SKIPPED with the reason
//! when kubectl is not on PATH.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `kproof serve`, killed when dropped.
struct Serve {
    child: Child,
    kubeconfig: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn kubectl_on_path() -> Result<PathBuf, String> {
    let which = Command::new("sh").args(["-c", "command -v kubectl"]).output().map_err(|e| e.to_string())?;
    let path = String::from_utf8_lossy(&which.stdout).trim().to_string();
    if path.is_empty() { Err("kubectl is not on PATH".into()) } else { Ok(PathBuf::from(path)) }
}

fn serve() -> Serve {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let child = Command::new(env!("CARGO_BIN_EXE_kproof"))
        .args(["serve", "--port", "0", "--kubeconfig"])
        .arg(&kubeconfig)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !kubeconfig.exists() {
        assert!(start.elapsed() < Duration::from_secs(30), "kproof serve wrote no kubeconfig");
        std::thread::sleep(Duration::from_millis(20));
    }
    Serve { child, kubeconfig, _dir: dir }
}

/// kubectl and a fresh `kproof serve`; `None` (after printing SKIPPED and why) without kubectl.
fn kubectl_and_serve() -> Option<(PathBuf, Serve)> {
    match kubectl_on_path() {
        Ok(bin) => Some((bin, serve())),
        Err(why) => {
            println!("SKIPPED: {why}");
            None
        }
    }
}

fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures").join(path)
}

/// kubectl as a user runs it against `serve`; `Ok(stdout)` on exit 0, `Err(stdout + stderr)`.
fn kubectl(kubectl: &Path, serve: &Serve, args: &[&str], stdin: Option<&str>) -> Result<String, String> {
    let mut child = Command::new(kubectl)
        .args(args)
        .env("KUBECONFIG", &serve.kubeconfig)
        .env("KUBECACHEDIR", serve.kubeconfig.with_extension("cache"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    if let Some(input) = stdin
        && let Some(mut pipe) = child.stdin.take()
    {
        pipe.write_all(input.as_bytes()).map_err(|e| e.to_string())?;
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.success() { Ok(stdout) } else { Err(format!("{stdout}{}", String::from_utf8_lossy(&out.stderr))) }
}

/// Runs `kubectl get … -o jsonpath=…` until its output satisfies `done`, for up to `within`;
/// panics with the last output otherwise.
fn wait_for(
    k: &dyn Fn(&[&str]) -> Result<String, String>,
    args: &[&str],
    within: Duration,
    done: &dyn Fn(&str) -> bool,
) -> String {
    let start = Instant::now();
    loop {
        let out = k(args).unwrap_or_else(|e| e);
        if done(&out) {
            return out;
        }
        assert!(
            start.elapsed() < within,
            "kubectl {} never satisfied the wait within {within:?}; last: {out}",
            args.join(" ")
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[test]
fn kueue_pr_11264_sample_rayservice_is_gated_by_quota_on_kproof_serve() {
    let Some((bin, serve)) = kubectl_and_serve() else { return };
    let k = |args: &[&str]| kubectl(&bin, &serve, args, None);
    let queues = fixture("walkthroughs/kueue-poc-queues.yaml");
    let sample = fixture("walkthroughs/kueue-ray-service-sample.yaml");
    k(&["apply", "-f", queues.to_str().unwrap()]).unwrap();
    k(&["apply", "-f", sample.to_str().unwrap()]).unwrap();
    // Kueue's defaulting webhook suspended it at both levels and gated its head template.
    let gate = k(&[
        "get", "rayservice", "test-rayservice", "-o",
        "jsonpath={.spec.rayClusterConfig.suspend} {.spec.rayClusterConfig.headGroupSpec.template.spec.schedulingGates[*].name}",
    ])
    .unwrap();
    assert_eq!(gate, "true kueue.x-k8s.io/elastic-job");
    let active = wait_for(
        &k,
        &["get", "rayservice", "test-rayservice", "-o", "jsonpath={.status.activeServiceStatus.rayClusterName}"],
        Duration::from_secs(120),
        &|out| !out.is_empty(),
    );
    let admitted = k(&[
        "get",
        "workloads.kueue.x-k8s.io",
        "-o",
        "jsonpath={.items[*].status.conditions[?(@.type==\"Admitted\")].status}",
    ])
    .unwrap();
    assert_eq!(admitted, "True", "one Workload, admitted");
    // The guide's upgrade: bump rayVersion; the pending cluster is born suspended and stays so
    // while the ClusterQueue (1 CPU) cannot hold both clusters.
    k(&[
        "patch",
        "rayservice",
        "test-rayservice",
        "--type=merge",
        "-p",
        r#"{"spec":{"rayClusterConfig":{"rayVersion":"2.46.0"}}}"#,
    ])
    .unwrap();
    let clusters = wait_for(
        &k,
        &["get", "rayclusters", "-o", "jsonpath={range .items[*]}{.metadata.name}={.spec.suspend} {end}"],
        Duration::from_secs(60),
        &|out| out.split_whitespace().count() == 2,
    );
    let suspended: Vec<&str> = clusters.split_whitespace().filter(|c| c.ends_with("=true")).collect();
    assert_eq!(suspended.len(), 1, "the pending cluster alone is suspended: {clusters}");
    assert!(!suspended[0].starts_with(&format!("{active}=")), "the active cluster {active} keeps running: {clusters}");
    let pending = wait_for(
        &k,
        &[
            "get",
            "workloads.kueue.x-k8s.io",
            "-o",
            "jsonpath={.items[*].status.conditions[?(@.type==\"QuotaReserved\")].status}",
        ],
        Duration::from_secs(30),
        &|out| out.split_whitespace().count() == 2,
    );
    assert_eq!(
        pending.split_whitespace().filter(|s| *s == "False").count(),
        1,
        "the upgrade's slice waits for quota: {pending}"
    );
}

#[test]
fn kuberay_incremental_upgrade_sample_runs_through_the_installed_gateway_class() {
    let Some((bin, serve)) = kubectl_and_serve() else { return };
    let k = |args: &[&str]| kubectl(&bin, &serve, args, None);
    // Installed with the gateway, as installing Istio ships it.
    let class = k(&["get", "gatewayclass", "istio", "-o", "jsonpath={.metadata.name}"]).unwrap();
    assert_eq!(class, "istio");
    let sample = fixture("rayservice/incremental-upgrade.yaml");
    k(&["apply", "-f", sample.to_str().unwrap()]).unwrap();
    wait_for(
        &k,
        &[
            "get",
            "rayservice",
            "rayservice-incremental-upgrade",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"Ready\")].status} {.status.activeServiceStatus.trafficRoutedPercent}",
        ],
        Duration::from_secs(180),
        &|out| out == "True 100",
    );
    let gateway = k(&[
        "get",
        "gateway",
        "rayservice-incremental-upgrade-gateway",
        "-o",
        "jsonpath={.spec.gatewayClassName} {.status.conditions[?(@.type==\"Programmed\")].status}",
    ])
    .unwrap();
    assert_eq!(gateway, "istio True");
    let route = k(&[
        "get",
        "httproute",
        "rayservice-incremental-upgrade-httproute",
        "-o",
        "jsonpath={.status.parents[0].conditions[?(@.type==\"Accepted\")].status}",
    ])
    .unwrap();
    assert_eq!(route, "True");
}

#[test]
fn a_dra_claim_naming_the_installed_device_class_is_allocated_and_shared() {
    let Some((bin, serve)) = kubectl_and_serve() else { return };
    let k = |args: &[&str]| kubectl(&bin, &serve, args, None);
    let classes = k(&["get", "deviceclasses", "-o", "jsonpath={.items[*].metadata.name}"]).unwrap();
    assert!(
        classes.split_whitespace().any(|c| c == "dev.kproof.dev"),
        "the driver's DeviceClass is installed: {classes}"
    );
    // The one change the walk-through tells a user to make: the driver's class name.
    let example = std::fs::read_to_string(fixture("walkthroughs/dra-basic-shared-claim-across-pods.yaml")).unwrap();
    let manifest = example.replace("deviceClassName: gpu.example.com", "deviceClassName: dev.kproof.dev");
    assert_ne!(manifest, example);
    kubectl(&bin, &serve, &["apply", "-f", "-"], Some(&manifest)).unwrap();
    let ns = "basic-shared-claim-across-pods";
    let phases = wait_for(
        &k,
        &["get", "pods", "-n", ns, "-o", "jsonpath={.items[*].status.phase}"],
        Duration::from_secs(60),
        &|out| out == "Running Running",
    );
    assert_eq!(phases, "Running Running");
    let claim = k(&[
        "get",
        "resourceclaim",
        "single-gpu",
        "-n",
        ns,
        "-o",
        "jsonpath={.status.allocation.devices.results[0].driver} {.status.reservedFor[*].name}",
    ])
    .unwrap();
    let mut words: Vec<&str> = claim.split_whitespace().collect();
    words[1..].sort_unstable();
    assert_eq!(
        words,
        ["dev.kproof.dev", "pod0", "pod1"],
        "allocated from the driver's devices, reserved for both pods: {claim}"
    );
}
