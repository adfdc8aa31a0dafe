//! The upstream backend's smoke test: a real control plane (etcd, kube-apiserver,
//! kube-controller-manager, kube-scheduler v1.37.2, Kueue, the KubeRay operator) built from the
//! Go modules pinned in `upstream/`, the apiserver table and a few RayCluster, RayService and DRA
//! rows against it, and a clean stop. Prints SKIPPED with the reason when the components are not built (a
//! machine without Go or before `kproof upstream build`); `.ci/run` builds them first.

use kproof::backend::upstream::{self, PlaneOptions, UpstreamBackend};
use kproof::backend::{Backend, RunOptions};
use kproof::report::result::Outcome;
use std::path::Path;
use std::time::Duration;

/// RayCluster rows whose behaviour is the same in KubeRay v1.6.2 (the build's fallback while
/// the module proxy refuses v1.7.0) and v1.7.0, and that need neither settings nor knobs.
const RAYCLUSTER_SMOKE: &[&str] = &["rc-replicas-clamped-to-max", "rc-suspend-and-resume", "rc-1", "rc-3"];

/// RayService rows that pass on v1.6.2 and v1.7.0: `rs-1` goes all the way to Serve RUNNING,
/// the real operator reaching the simulated Ray dashboard and Serve proxies through the
/// simulated network's HTTP proxy; the other two are validation by the controller and the CRD.
const RAYSERVICE_SMOKE: &[&str] = &["rs-1", "rs-validation-unknown-upgrade-type", "rs-crd-requires-rayclusterconfig"];

/// DRA rows that real kube-controller-manager and kube-scheduler 1.37 play (the kubelet check
/// stays simulated): the baseline pod reservation and pruning, and a PodGroup reservation.
const DRA_SMOKE: &[&str] = &[
    "dra-b-shared-claim-lists-each-pod",
    "dra-b-pod-entries-pruned-then-deallocated",
    "dra-pg-claim-holds-pod-and-podgroup-entries",
];

#[test]
fn the_apiserver_table_raycluster_rayservice_and_dra_rows_pass_on_real_kubernetes() {
    let build = match upstream::build::locate(&upstream::default_upstream_dir()) {
        Ok(b) if b.require(upstream::build::REQUIRED).is_ok() => b,
        Ok(b) => {
            println!("SKIPPED: the upstream components are not all built in {}", b.dir.display());
            return;
        }
        Err(e) => {
            println!("SKIPPED: {e}");
            return;
        }
    };
    let backend = UpstreamBackend::start(PlaneOptions::new(build)).expect("the control plane starts");
    println!("control plane ready in {:.1}s: {:?}", backend.started_in().as_secs_f64(), backend.components());
    assert!(
        backend.components().get("kube-apiserver").is_some_and(|v| v.starts_with("v1.37.")),
        "the report names the real apiserver's version: {:?}",
        backend.components()
    );
    let run_dir = backend.run_dir().to_path_buf();

    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let suites = kproof::suite::load_suite_dir(&root.join("suites")).expect("suites load");
    let opts = RunOptions {
        fixtures_dir: root.join("fixtures"),
        default_timeout: Duration::from_secs(60),
        ..Default::default()
    };
    let selections = [
        kproof::engine::selection::Selection { suites: vec!["apiserver".into()], rows: vec![] },
        kproof::engine::selection::Selection {
            suites: vec!["raycluster".into()],
            rows: RAYCLUSTER_SMOKE.iter().map(|s| s.to_string()).collect(),
        },
        kproof::engine::selection::Selection {
            suites: vec!["rayservice".into()],
            rows: RAYSERVICE_SMOKE.iter().map(|s| s.to_string()).collect(),
        },
        kproof::engine::selection::Selection {
            suites: vec!["dra".into()],
            rows: DRA_SMOKE.iter().map(|s| s.to_string()).collect(),
        },
    ];
    let mut results = Vec::new();
    for sel in &selections {
        let rows = kproof::engine::selection::selected(&suites, sel);
        results.extend(kproof::backend::run_rows(&backend, &rows, &opts, 4, &|_| {}));
    }
    let killed = backend.stop();
    for r in &results {
        println!("{:?} {} {}", r.outcome, r.name(), r.failure.clone().or(r.reason.clone()).unwrap_or_default());
    }
    assert!(killed.is_empty(), "every component stopped on SIGTERM: {killed:?}");
    assert!(!run_dir.exists(), "the run directory {} was removed", run_dir.display());
    let ran = |suite: &str| results.iter().filter(|r| r.suite == suite && r.outcome == Outcome::Passed).count();
    assert!(ran("apiserver") >= 8, "the apiserver rows run on upstream");
    assert_eq!(ran("raycluster"), RAYCLUSTER_SMOKE.len(), "the RayCluster smoke rows pass on the real operator");
    assert_eq!(ran("rayservice"), RAYSERVICE_SMOKE.len(), "the RayService smoke rows pass on the real operator");
    assert_eq!(ran("dra"), DRA_SMOKE.len(), "the DRA smoke rows pass against real kcm and scheduler");
    for r in &results {
        match r.outcome {
            Outcome::Passed => {}
            Outcome::Skipped => {
                assert!(r.reason.as_deref().is_some_and(|w| w.starts_with("backend upstream lacks")), "{r:?}")
            }
            Outcome::Failed => panic!("{} failed on upstream: {}", r.name(), r.failure.clone().unwrap_or_default()),
        }
    }
}
