//! The `kproof` command line: exit codes, messages that name file, line and row, reports.

use assert_cmd::Command;
use std::path::Path;

fn kproof() -> Command {
    Command::cargo_bin("kproof").expect("the kproof binary")
}

fn write_suite(dir: &Path, name: &str, text: &str) {
    std::fs::create_dir_all(dir.join("suites")).unwrap();
    std::fs::create_dir_all(dir.join("fixtures")).unwrap();
    std::fs::write(dir.join("suites").join(name), text).unwrap();
}

const PASSING: &str = "suite: demo\ntitle: t\nrows:\n  - id: ok\n    title: t\n    kind: behaviour\n    source: https://kubernetes.io/docs/\n    steps:\n      - apply: {inline: {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}}\n    expect:\n      - eventually: {target: {apiVersion: v1, kind: ConfigMap, name: c}}\n";

#[test]
fn run_passes_writes_reports_and_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    write_suite(dir.path(), "demo.yaml", PASSING);
    let out =
        kproof().current_dir(dir.path()).args(["run", "--suites", "suites", "--report-dir", "out"]).assert().success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(stdout.contains("PASS    demo::ok"), "{stdout}");
    assert!(stdout.lines().any(|l| l == "1 passed, 0 failed, 0 skipped"), "{stdout}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/kproof-report.json")).unwrap()).unwrap();
    assert_eq!(report["schema"], "kproof.dev/report/v1");
    assert_eq!(report["rows"][0]["outcome"], "passed");
    // What the check saw is in the report: one object selected, and it held.
    assert_eq!(
        report["rows"][0]["checks"],
        serde_json::json!([{"part": "expect 1", "check": "eventually", "unit": "objects", "matched": 1, "holding": 1, "passed": true}])
    );
    assert!(std::fs::read_to_string(dir.path().join("out/kproof-junit.xml")).unwrap().contains("testcase"));
}

#[test]
fn a_failing_row_exits_1_and_points_at_its_flight_record() {
    let dir = tempfile::tempdir().unwrap();
    write_suite(
        dir.path(),
        "demo.yaml",
        &PASSING.replace(
            "eventually: {target: {apiVersion: v1, kind: ConfigMap, name: c}}",
            "eventually: {target: {apiVersion: v1, kind: ConfigMap, name: missing}, within: 10s}",
        ),
    );
    let out =
        kproof().current_dir(dir.path()).args(["run", "--suites", "suites", "--report-dir", "out"]).assert().code(1);
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(stdout.contains("FAIL    demo::ok"), "{stdout}");
    assert!(stdout.contains("flight record of demo::ok: out/flight/demo/ok"), "{stdout}");
    assert!(dir.path().join("out/flight/demo/ok/mismatches.md").exists());
}

#[test]
fn lint_names_file_line_and_row_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let bad = PASSING.replace("      - apply:", "      - patch: {target: {apiVersion: v1, kind: ConfigMap, name: \"${nope}\"}, type: merge, patch: {}}\n      - apply:");
    write_suite(dir.path(), "demo.yaml", &bad);
    let out = kproof().current_dir(dir.path()).args(["lint", "--suites", "suites"]).assert().code(1);
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(
        stdout
            .contains("suites/demo.yaml:4: row ok: step 1 (patch): `${nope}` is used but no step of this row binds it"),
        "{stdout}"
    );
}

#[test]
fn a_typo_is_reported_with_file_line_and_row_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    write_suite(dir.path(), "demo.yaml", &PASSING.replace("    expect:", "    expct:"));
    let out = kproof().current_dir(dir.path()).args(["run", "--suites", "suites"]).assert().code(2);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(
        stderr.contains("suites/demo.yaml:10") && stderr.contains("row ok") && stderr.contains("expct"),
        "{stderr}"
    );
}

#[test]
fn an_empty_suite_folder_is_an_error_not_a_pass() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("suites")).unwrap();
    let out = kproof().current_dir(dir.path()).args(["run", "--suites", "suites"]).assert().code(2);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(stderr.contains("suites"), "{stderr}");
}

#[test]
fn an_unknown_row_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    write_suite(dir.path(), "demo.yaml", PASSING);
    let out = kproof().current_dir(dir.path()).args(["run", "--suites", "suites", "--row", "nope"]).assert().code(2);
    assert!(String::from_utf8_lossy(&out.get_output().stderr).contains("no row matches"));
}

#[test]
fn schema_prints_the_suite_json_schema() {
    let out = kproof().arg("schema").assert().success();
    let v: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(v["$id"], "https://kproof.dev/schema/suite-v1.json");
}

/// `kproof certify reservedfor` refuses bad input with exit 2 and a message naming the file,
/// before any server or controller starts.
#[test]
fn certify_refuses_bad_input_with_exit_2_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let deploy = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/reservedfor-controller/deploy");
    let other_crd = dir.path().join("crd.yaml");
    std::fs::write(
        &other_crd,
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: others.x.dev}\nspec: {group: x.dev, scope: Namespaced, names: {plural: others, kind: Other}, versions: []}\n",
    )
    .unwrap();
    let workload = deploy.join("trainjob.yaml");
    let run = |crd: &Path, rbac: &Path, extra: &[&str]| {
        let mut args: Vec<String> = ["certify", "reservedfor", "--profile", "raw", "--crd"].map(String::from).to_vec();
        args.push(crd.display().to_string());
        args.extend(["--workload".to_string(), workload.display().to_string(), "--rbac".into()]);
        args.push(rbac.display().to_string());
        args.extend(extra.iter().map(|s| s.to_string()));
        args.extend([
            "--report-dir".to_string(),
            dir.path().join("out").display().to_string(),
            "--".into(),
            "true".into(),
        ]);
        kproof().args(&args).assert().code(2)
    };
    let out = run(&other_crd, &deploy.join("role-raw.yaml"), &[]);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(
        stderr.contains("trainjob.yaml: no --crd defines kind TrainJob in group \"example.kproof.dev\""),
        "{stderr}"
    );

    let binding = dir.path().join("binding.yaml");
    std::fs::write(&binding, "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: b}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: r}\n").unwrap();
    let out = run(&deploy.join("crd.yaml"), &binding, &[]);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(stderr.contains("binding.yaml: RoleBinding given: --rbac takes Roles and ClusterRoles"), "{stderr}");

    let out = run(&deploy.join("crd.yaml"), &deploy.join("role-raw.yaml"), &["--obligation", "C99"]);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(stderr.contains("--obligation C99: no such obligation"), "{stderr}");
}

/// One typo per row: a `before` whose `then` names an object that never exists, and a `never`
/// and an `atMost: 0` over a misspelt kind. None may pass.
const TYPOS: &str = "suite: demo\ntitle: t\nrows:
  - id: held
    title: t
    kind: behaviour
    source: https://kubernetes.io/docs/
    steps:
      - apply: {inline: {apiVersion: v1, kind: ConfigMap, metadata: {name: held}}}
      - apply: {inline: {apiVersion: v1, kind: ConfigMap, metadata: {name: other}}}
    expect:
      - before: {first: {kind: ConfigMap, name: held}, then: {kind: ConfigMap, name: hled}}
  - id: never
    title: t
    kind: behaviour
    source: https://kubernetes.io/docs/
    steps:
      - apply: {inline: {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}}
    expect:
      - never: {kind: ConfgMap}
  - id: at-most
    title: t
    kind: behaviour
    source: https://kubernetes.io/docs/
    steps:
      - apply: {inline: {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}}
    expect:
      - atMost: {n: 0, event: {kind: ConfgMap}}
";

#[test]
fn typos_in_patterns_fail_lint_or_run_with_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    write_suite(dir.path(), "demo.yaml", TYPOS);
    let out = kproof().current_dir(dir.path()).args(["lint", "--suites", "suites"]).assert().code(1);
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    for line in [
        "suites/demo.yaml:4: warning: row held: expect 1 (before) then: no fixture, step or binding of the row mentions ConfigMap \"hled\"",
        "suites/demo.yaml:13: row never: expect 1 (never): kind \"ConfgMap\" is neither built in nor installed",
        "suites/demo.yaml:21: row at-most: expect 1 (atMost): kind \"ConfgMap\" is neither built in nor installed",
    ] {
        assert!(stdout.contains(line), "missing {line:?} in:\n{stdout}");
    }
    assert!(stdout.contains("1 suites, 3 rows, 2 issues, 1 warnings"), "{stdout}");

    let out =
        kproof().current_dir(dir.path()).args(["run", "--suites", "suites", "--report-dir", "out"]).assert().code(1);
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(stdout.lines().any(|l| l == "0 passed, 3 failed, 0 skipped"), "{stdout}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/kproof-report.json")).unwrap()).unwrap();
    let reason = |i: usize| report["rows"][i]["reason"].as_str().unwrap_or_default().to_string();
    assert!(reason(0).contains("no write matched `then`"), "{}", reason(0));
    assert_eq!(report["rows"][0]["checks"][0]["matched"], 1, "`first` matched the write of held");
    assert_eq!(report["rows"][0]["checks"][0]["thenMatched"], 0);
    assert_eq!(report["rows"][0]["location"]["line"], 12, "the failing expectation's line");
    for i in [1, 2] {
        assert!(reason(i).contains("kind \"ConfgMap\", which the server does not serve"), "{}", reason(i));
    }
}
