//! The walk-throughs of docs/walkthroughs.md, run as a user runs them: kubectl against a fresh
//! `kproof serve`, applying the upstream samples unchanged (beyond the values the docs tell a
//! user to change) with nothing applied by hand first; and the same walk-throughs against the
//! upstream backend's real control plane where its components exist. Each test prints SKIPPED
//! with the reason when kubectl (or, for upstream, a component) is missing.

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

/// kubectl as a user runs it against the cluster of `kubeconfig`; `Ok(stdout)` on exit 0, `Err(stdout + stderr)`.
fn kubectl(kubectl: &Path, kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> Result<String, String> {
    let mut child = Command::new(kubectl)
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env("KUBECACHEDIR", kubeconfig.with_extension("cache"))
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
    let k = |args: &[&str]| kubectl(&bin, &serve.kubeconfig, args, None);
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
    incremental_upgrade_walkthrough(&bin, &serve.kubeconfig);
}

#[test]
fn a_dra_claim_naming_the_installed_device_class_is_allocated_and_shared() {
    let Some((bin, serve)) = kubectl_and_serve() else { return };
    dra_walkthrough(&bin, &serve.kubeconfig);
}

/// The incremental-upgrade and DRA walk-throughs against the upstream backend's control plane
/// (real kube-apiserver, kcm, scheduler and KubeRay operator; the gateway, the DRA driver, the
/// kubelet and the Ray heads simulated, installed as on `kproof serve`). The Kueue walk-through
/// does not run there: PR 11264's RayService support is in no Kueue release.
#[test]
fn the_incremental_upgrade_and_dra_walkthroughs_pass_on_the_upstream_backend() {
    use kproof::backend::upstream::{self, PlaneOptions, UpstreamBackend};
    let bin = match kubectl_on_path() {
        Ok(bin) => bin,
        Err(why) => return println!("SKIPPED: {why}"),
    };
    let build = match upstream::build::locate(&upstream::default_upstream_dir()) {
        Ok(b) if b.require(upstream::build::REQUIRED).is_ok() => b,
        Ok(b) => return println!("SKIPPED: the upstream components are not all built in {}", b.dir.display()),
        Err(e) => return println!("SKIPPED: {e}"),
    };
    // KubeRay v1.6.2 (the build's fallback) ships the incremental upgrade behind its Alpha gate;
    // a user of that release turns it on (v1.7.0 has it on by default, where this changes nothing).
    let opts = PlaneOptions {
        kueue: false,
        kuberay_feature_gates: Some("RayServiceIncrementalUpgrade=true".into()),
        ..PlaneOptions::new(build)
    };
    let backend = UpstreamBackend::start(opts).expect("the control plane starts");
    let kubeconfig = backend.kubeconfig().to_path_buf();
    let outcome = std::panic::catch_unwind(|| {
        dra_walkthrough(&bin, &kubeconfig);
        incremental_upgrade_walkthrough(&bin, &kubeconfig);
    });
    let killed = backend.stop();
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
    assert!(killed.is_empty(), "every component stopped on SIGTERM: {killed:?}");
}

/// KubeRay's incremental-upgrade sample, applied unchanged: the RayService becomes Ready with all
/// traffic on its cluster, through a Gateway of the installed class `istio`.
fn incremental_upgrade_walkthrough(bin: &Path, kubeconfig: &Path) {
    let k = |args: &[&str]| kubectl(bin, kubeconfig, args, None);
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

/// dra-example-driver's shared-claim example with the driver's class name: both pods run on one
/// allocated claim reserved for both.
fn dra_walkthrough(bin: &Path, kubeconfig: &Path) {
    let k = |args: &[&str]| kubectl(bin, kubeconfig, args, None);
    let classes = k(&["get", "deviceclasses", "-o", "jsonpath={.items[*].metadata.name}"]).unwrap();
    assert!(
        classes.split_whitespace().any(|c| c == "dev.kproof.dev"),
        "the driver's DeviceClass is installed: {classes}"
    );
    // The one change the walk-through tells a user to make: the driver's class name.
    let example = std::fs::read_to_string(fixture("walkthroughs/dra-basic-shared-claim-across-pods.yaml")).unwrap();
    let manifest = example.replace("deviceClassName: gpu.example.com", "deviceClassName: dev.kproof.dev");
    assert_ne!(manifest, example);
    kubectl(bin, kubeconfig, &["apply", "-f", "-"], Some(&manifest)).unwrap();
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
