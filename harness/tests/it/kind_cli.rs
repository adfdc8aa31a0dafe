//! `kproof run --backend kind` where it cannot run: exit code 2 and one line that says what is
//! missing — the `kind` feature in a default build, the Docker daemon in a `kind` build.

use assert_cmd::Command;

const PASSING: &str = "suite: demo\ntitle: t\nrows:\n  - id: ok\n    title: t\n    kind: behaviour\n    source: https://kubernetes.io/docs/\n    steps:\n      - apply: {inline: {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}}\n    expect:\n      - eventually: {target: {apiVersion: v1, kind: ConfigMap, name: c}}\n";

/// Runs `kproof run --backend kind` on a one-row suite with `DOCKER_HOST` pointing nowhere;
/// returns (exit code, stderr).
fn run_kind_without_docker() -> (Option<i32>, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("suites")).expect("suites");
    std::fs::create_dir_all(dir.path().join("fixtures")).expect("fixtures");
    std::fs::write(dir.path().join("suites/demo.yaml"), PASSING).expect("suite");
    let nowhere = format!("unix://{}/no-docker.sock", dir.path().display());
    let out = Command::cargo_bin("kproof")
        .expect("the kproof binary")
        .current_dir(dir.path())
        .env("DOCKER_HOST", &nowhere)
        .args(["run", "--suites", "suites", "--backend", "kind", "--report-dir", "out"])
        .output()
        .expect("kproof runs");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The tests build kproof with `kind` (the dev-dependency on itself), so a default build's
/// answer is checked through its message: one line, naming the feature to rebuild with.
#[test]
fn a_default_build_would_say_to_rebuild_with_the_kind_feature() {
    let text = kproof::backend::kind::NOT_BUILT;
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.contains("cargo build -p kproof --features kind"), "{text}");
}

#[cfg(feature = "kind")]
#[test]
fn without_docker_it_exits_2_naming_the_daemon_it_looked_for() {
    let (code, stderr) = run_kind_without_docker();
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("kproof: no Docker daemon reachable at unix://"), "{stderr}");
    assert!(stderr.contains("no-docker.sock"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[cfg(feature = "kind")]
#[test]
fn the_plan_and_the_fetch_script_print_without_docker() {
    let plan = Command::cargo_bin("kproof")
        .expect("the kproof binary")
        .args(["kind", "plan", "--ray-operator-image", "kuberay/operator:dev"])
        .output()
        .expect("kproof runs");
    assert!(plan.status.success());
    let text = String::from_utf8_lossy(&plan.stdout);
    for name in
        ["gateway-api", "istio", "metallb", "kuberay-operator", "kueue", "kindest/node:v1.37", "kuberay/operator:dev"]
    {
        assert!(text.contains(name), "{name} missing from:\n{text}");
    }
    let script = Command::cargo_bin("kproof")
        .expect("the kproof binary")
        .args(["kind", "fetch-script"])
        .output()
        .expect("kproof runs");
    assert!(script.status.success());
    let script = String::from_utf8_lossy(&script.stdout);
    assert!(script.starts_with("#!/usr/bin/env bash"), "{script}");
    let check = std::process::Command::new("bash").arg("-n").arg("-c").arg(script.as_ref()).status();
    if let Ok(status) = check {
        assert!(status.success(), "the fetch script is not valid bash:\n{script}");
    }
}
