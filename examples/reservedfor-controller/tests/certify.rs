//! The example controller certified by `kproof certify reservedfor` in profiles pg, raw and w:
//! the compliant builds pass
//! every applicable obligation of their profile, and each deliberate defect fails exactly the
//! obligations it breaks. A short Python controller (the official `kubernetes` client) is
//! certified the same way when Python and the client are installed.

use kproof::certify::{CertProfile, CertifyOptions, Verdict, certify};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn deploy(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy").join(file)
}

fn options(profile: CertProfile, rbac: &[&str], command: Vec<String>, name: &str) -> CertifyOptions {
    CertifyOptions {
        profile,
        crds: vec![deploy("crd.yaml")],
        workload: deploy("trainjob.yaml"),
        replicas_path: "spec.replicas".into(),
        rbac: rbac.iter().map(|r| deploy(r)).collect(),
        obligations: Vec::new(),
        report_dir: std::env::temp_dir().join(format!("kproof-certify-test-{}-{name}", std::process::id())),
        command,
        release: Duration::from_secs(15),
        grace: Duration::from_secs(8),
        scenario_timeout: Duration::from_secs(90),
        wait_timeout: Duration::from_secs(30),
        contract: None,
    }
}

fn rust_controller(profile: &str, defect: Option<&str>) -> Vec<String> {
    let mut c = vec![env!("CARGO_BIN_EXE_trainjob-controller").to_string(), "--profile".into(), profile.into()];
    if let Some(d) = defect {
        c.extend(["--defect".to_string(), d.to_string()]);
    }
    c
}

/// Runs a certification and returns each obligation's verdict; the failing scenarios' reports
/// are printed so a failing assertion shows why.
fn verdicts(opts: CertifyOptions) -> BTreeMap<String, Verdict> {
    let cert = certify(opts).expect("the certification runs");
    println!("{}", cert.table());
    cert.obligations.iter().map(|o| (o.id.clone(), o.verdict)).collect()
}

fn with(ids: &[&str], v: Verdict, mut table: BTreeMap<String, Verdict>) -> BTreeMap<String, Verdict> {
    for id in ids {
        table.insert(id.to_string(), v);
    }
    table
}

/// Every obligation passes except those in `na`, which are not applicable.
fn compliant(na: &[&str]) -> BTreeMap<String, Verdict> {
    (1..=18)
        .map(|i| format!("C{i}"))
        .map(|id| {
            let v = if na.contains(&id.as_str()) { Verdict::NotApplicable } else { Verdict::Pass };
            (id, v)
        })
        .collect()
}

/// raw: C1, C2, C4-C14, C16-C18 judged; C3 and C15 not applicable.
fn raw_compliant() -> BTreeMap<String, Verdict> {
    let na = ["C3", "C15"];
    compliant(&na)
}

/// pg: C2-C6, C11, C12, C14-C18 judged; the claim-writing obligations not applicable.
fn pg_compliant() -> BTreeMap<String, Verdict> {
    let na = ["C1", "C7", "C8", "C9", "C10", "C13"];
    compliant(&na)
}

#[test]
fn raw_compliant_controller_passes_every_applicable_obligation() {
    let got = verdicts(options(CertProfile::Raw, &["role-raw.yaml"], rust_controller("raw", None), "raw"));
    assert_eq!(got, raw_compliant());
}

#[test]
fn pg_compliant_controller_passes_every_applicable_obligation() {
    let got = verdicts(options(CertProfile::Pg, &["role-pg.yaml"], rust_controller("pg", None), "pg"));
    assert_eq!(got, pg_compliant());
}

#[test]
fn raw_release_on_terminating_fails_c4_and_c5_only() {
    let cmd = rust_controller("raw", Some("release-on-terminating"));
    let got = verdicts(options(CertProfile::Raw, &["role-raw.yaml"], cmd, "raw-terminating"));
    assert_eq!(got, with(&["C4", "C5"], Verdict::Fail, raw_compliant()));
}

#[test]
fn raw_no_finalizer_fails_c11_only() {
    let cmd = rust_controller("raw", Some("no-finalizer"));
    let got = verdicts(options(CertProfile::Raw, &["role-raw.yaml"], cmd, "raw-no-finalizer"));
    assert_eq!(got, with(&["C11"], Verdict::Fail, raw_compliant()));
}

#[test]
fn pg_strip_protection_fails_c4_only() {
    let cmd = rust_controller("pg", Some("strip-protection"));
    let rbac = ["role-pg.yaml", "role-pg-strip-finalizers.yaml"];
    let got = verdicts(options(CertProfile::Pg, &rbac, cmd, "pg-strip"));
    assert_eq!(got, with(&["C4"], Verdict::Fail, pg_compliant()));
}

#[test]
fn a_controller_that_exits_gets_a_clear_verdict_not_a_hung_run() {
    let mut opts = options(CertProfile::Raw, &["role-raw.yaml"], vec!["false".into()], "exits");
    opts.obligations = vec!["C6".into()];
    let cert = certify(opts).expect("the certification runs");
    assert!(!cert.certified);
    let s = cert.scenarios.iter().find(|s| s.id == "raw-release-after-completion").expect("the C6 scenario ran");
    let failure = s.failure.as_deref().unwrap_or_default();
    assert!(failure.starts_with("the controller exited (exit status: 1) while the scenario ran"), "{failure}");
    assert_eq!(cert.obligations.len(), 1, "--obligation C6 judges C6 only");
}

/// The Python controller's command, or `None` (with the reason printed) when python3 or the
/// `kubernetes` client is missing.
fn python_controller(profile: &str) -> Option<Vec<String>> {
    let python = std::process::Command::new("python3").args(["-c", "import kubernetes"]).status();
    if !python.is_ok_and(|s| s.success()) {
        println!("SKIPPED: python3 with the `kubernetes` client is not installed (pip install kubernetes)");
        return None;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../reservedfor-python/trainjob_controller.py");
    Some(vec!["python3".to_string(), "-u".into(), script.display().to_string(), "--profile".into(), profile.into()])
}

#[test]
fn the_python_controller_is_certified_the_same_way() {
    let Some(cmd) = python_controller("pg") else { return };
    let got = verdicts(options(CertProfile::Pg, &["role-pg.yaml"], cmd, "python"));
    assert_eq!(got, pg_compliant());
}

#[test]
fn the_python_controller_is_certified_in_w() {
    let Some(cmd) = python_controller("w") else { return };
    let got = verdicts(options(CertProfile::W, &["role-w.yaml"], cmd, "python-w"));
    assert_eq!(got, w_compliant());
}

#[test]
fn the_python_controller_is_certified_in_raw() {
    let Some(cmd) = python_controller("raw") else { return };
    let got = verdicts(options(CertProfile::Raw, &["role-raw.yaml"], cmd, "python-raw"));
    assert_eq!(got, raw_compliant());
}

#[test]
fn a_controller_that_never_acts_fails_with_a_hint_and_is_stopped() {
    let mut opts = options(CertProfile::Raw, &["role-raw.yaml"], vec!["sleep".into(), "600".into()], "idle");
    opts.obligations = vec!["C6".into()];
    opts.wait_timeout = Duration::from_secs(3);
    let cert = certify(opts).expect("the certification runs");
    assert!(!cert.certified);
    let s = cert.scenarios.iter().find(|s| s.id == "raw-release-after-completion").expect("the C6 scenario ran");
    let failure = s.failure.as_deref().unwrap_or_default();
    assert!(failure.contains("the controller made no write in this scenario"), "{failure}");
    // The idle controller was stopped with its scenario: no `sleep 600` of this run is left.
    let left = std::process::Command::new("pgrep").args(["-f", "^sleep 600$"]).output();
    if let Ok(out) = left {
        assert!(out.stdout.is_empty(), "left behind: {}", String::from_utf8_lossy(&out.stdout));
    }
}

/// w: C1, C2, C4-C12, C14-C18 judged; C3 (PodGroups only) and C13 not applicable.
fn w_compliant() -> BTreeMap<String, Verdict> {
    let na = ["C3", "C13"];
    compliant(&na)
}

#[test]
fn w_compliant_controller_passes_every_applicable_obligation() {
    let got = verdicts(options(CertProfile::W, &["role-w.yaml"], rust_controller("w", None), "w"));
    assert_eq!(got, w_compliant());
}

#[test]
fn w_release_on_terminating_fails_c4_and_c5_only() {
    let cmd = rust_controller("w", Some("release-on-terminating"));
    let got = verdicts(options(CertProfile::W, &["role-w.yaml"], cmd, "w-terminating"));
    assert_eq!(got, with(&["C4", "C5"], Verdict::Fail, w_compliant()));
}

#[test]
fn w_no_finalizer_fails_c11_only() {
    let cmd = rust_controller("w", Some("no-finalizer"));
    let got = verdicts(options(CertProfile::W, &["role-w.yaml"], cmd, "w-no-finalizer"));
    assert_eq!(got, with(&["C11"], Verdict::Fail, w_compliant()));
}

#[test]
fn w_give_up_on_conflict_fails_c16_only() {
    // Only the injected 409s conflict with this controller's claim status writes in w (the
    // scheduler adds no pod entries there), so giving up on a conflict breaks C16 alone.
    let cmd = rust_controller("w", Some("give-up-on-conflict"));
    let got = verdicts(options(CertProfile::W, &["role-w.yaml"], cmd, "w-give-up"));
    assert_eq!(got, with(&["C16"], Verdict::Fail, w_compliant()));
}

#[test]
fn raw_stale_cache_fails_c16_only() {
    // Reading through watch-fed caches and writing without a resourceVersion goes unnoticed
    // while the caches are current; the injected informer lag makes it create duplicate pods.
    let cmd = rust_controller("raw", Some("stale-cache"));
    let got = verdicts(options(CertProfile::Raw, &["role-raw.yaml"], cmd, "raw-stale"));
    assert_eq!(got, with(&["C16"], Verdict::Fail, raw_compliant()));
}

#[test]
fn pg_stale_cache_fails_c16_only() {
    let cmd = rust_controller("pg", Some("stale-cache"));
    let got = verdicts(options(CertProfile::Pg, &["role-pg.yaml"], cmd, "pg-stale"));
    assert_eq!(got, with(&["C16"], Verdict::Fail, pg_compliant()));
}

#[test]
fn w_stale_cache_fails_c16_only() {
    let cmd = rust_controller("w", Some("stale-cache"));
    let got = verdicts(options(CertProfile::W, &["role-w.yaml"], cmd, "w-stale"));
    assert_eq!(got, with(&["C16"], Verdict::Fail, w_compliant()));
}

#[test]
fn no_condition_fails_c18_only_in_every_profile() {
    // Only the ReservationHeld condition is missing: the reservation itself is handled right.
    for (profile, role, compliant) in [
        (CertProfile::Pg, "role-pg.yaml", pg_compliant()),
        (CertProfile::Raw, "role-raw.yaml", raw_compliant()),
        (CertProfile::W, "role-w.yaml", w_compliant()),
    ] {
        let mut opts =
            options(profile, &[role], rust_controller(profile.as_str(), Some("no-condition")), "no-condition");
        opts.report_dir = opts.report_dir.join(profile.as_str());
        let got = verdicts(opts);
        assert_eq!(got, with(&["C18"], Verdict::Fail, compliant), "profile {profile}");
    }
}
