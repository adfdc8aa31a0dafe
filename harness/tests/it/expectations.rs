//! The harness's own tests: a small controller proves that eventually, consistently, before,
//! never and atMost pass when they should and fail, with a clear message, when they should not.

use kproof::actors::echo::EchoControllerFactory;
use kproof::backend::{Backend, InProcessBackend, RunOptions};
use kproof::report::result::{Outcome, RowResult};
use kproof::suite::load_suite_str;
use std::path::Path;
use std::sync::Arc;

fn run(yaml: &str) -> RowResult {
    let suite = load_suite_str(Path::new("inline.yaml"), yaml).unwrap_or_else(|e| panic!("{e}"));
    let backend = InProcessBackend::new().with_actor(Arc::new(EchoControllerFactory));
    let row = suite.suite.rows[0].clone();
    backend.run_row(&suite, &row, &RunOptions::default())
}

fn row(steps: &str, expect: &str) -> String {
    format!(
        "suite: self\ntitle: harness self-test\nrows:\n  - id: r\n    title: t\n    kind: behaviour\n    source: harness/tests/expectations.rs\n    needs: {{capabilities: [actor:echo]}}\n    steps:\n{steps}\n    expect:\n{expect}\n"
    )
}

const SOURCE: &str = "      - apply: {inline: {apiVersion: v1, kind: ConfigMap, metadata: {name: src, labels: {kproof.dev/echo: \"true\"}}, data: {delay: \"60\", v: \"1\"}}}";
const ECHO: &str = "{apiVersion: v1, kind: ConfigMap, name: src-echo}";

fn failed(r: &RowResult) -> String {
    assert_eq!(r.outcome, Outcome::Failed, "expected a failure, got {r:?}");
    r.failure.clone().unwrap_or_default()
}

#[test]
fn eventually_passes_when_the_controller_acts_in_time() {
    let r = run(&row(
        SOURCE,
        &format!("      - eventually: {{target: {ECHO}, match: [{{path: data.v, eq: \"1\"}}], within: 2m}}"),
    ));
    assert_eq!(r.outcome, Outcome::Passed, "{r:?}");
    assert!(r.backend_ms >= 60_000, "the echo waited 60 virtual seconds: {}", r.backend_ms);
}

#[test]
fn eventually_fails_with_expected_and_observed_when_the_controller_is_paused() {
    let steps = format!("{SOURCE}\n      - knob: {{actor: echo, knob: paused, value: true}}");
    let r = run(&row(&steps, &format!("      - eventually: {{target: {ECHO}, within: 5m}}")));
    let msg = failed(&r);
    assert!(msg.contains("not true within 5m"), "{msg}");
    assert!(msg.contains("ConfigMap src-echo: expected to exist, observed none"), "{msg}");
    assert_eq!(r.reason.as_deref(), Some("expect 1 (eventually): not true within 5m"));
}

#[test]
fn consistently_passes_while_nothing_changes_and_fails_when_it_does() {
    let hold = format!("      - consistently: {{target: {ECHO}, gone: true, for: 30s}}");
    assert_eq!(run(&row(SOURCE, &hold)).outcome, Outcome::Passed);
    let too_long = format!("      - consistently: {{target: {ECHO}, gone: true, for: 2m}}");
    let msg = failed(&run(&row(SOURCE, &too_long)));
    assert!(msg.contains("stopped holding after"), "{msg}");
    assert!(msg.contains("expected gone, observed 1 object(s)"), "{msg}");
}

#[test]
fn before_checks_the_order_of_writes() {
    let steps = format!("{SOURCE}\n      - wait: {{eventually: {{target: {ECHO}, within: 2m}}}}");
    let good = "      - before: {first: {kind: ConfigMap, name: src, change: ADDED}, then: {kind: ConfigMap, name: src-echo, change: ADDED}}";
    assert_eq!(run(&row(&steps, good)).outcome, Outcome::Passed);
    let bad = "      - before: {first: {kind: ConfigMap, name: src-echo, change: ADDED}, then: {kind: ConfigMap, name: src, change: ADDED}}";
    let msg = failed(&run(&row(&steps, bad)));
    assert!(msg.contains("the order was wrong"), "{msg}");
    assert!(msg.contains("ADDED ConfigMap default/src-echo by echo"), "the writer is named: {msg}");
}

#[test]
fn never_and_at_most_count_writes() {
    let steps = format!("{SOURCE}\n      - wait: {{eventually: {{target: {ECHO}, within: 2m}}}}");
    assert_eq!(run(&row(&steps, "      - never: {kind: ConfigMap, change: DELETED}")).outcome, Outcome::Passed);
    let msg = failed(&run(&row(&steps, "      - never: {kind: ConfigMap, name: src-echo, actor: echo}")));
    assert!(msg.contains("expected no write matching, observed 1"), "{msg}");
    let update = format!(
        "{steps}\n      - patch: {{target: {{apiVersion: v1, kind: ConfigMap, name: src}}, type: merge, patch: {{data: {{v: \"2\"}}}}}}\n      - wait: {{eventually: {{target: {ECHO}, match: [{{path: data.v, eq: \"2\"}}], within: 2m}}}}"
    );
    assert_eq!(
        run(&row(&update, "      - atMost: {n: 2, event: {name: src-echo, actor: echo}}")).outcome,
        Outcome::Passed
    );
    let msg = failed(&run(&row(&update, "      - atMost: {n: 1, event: {name: src-echo, actor: echo}}")));
    assert!(msg.contains("expected at most 1 write(s) matching, observed 2"), "{msg}");
}

#[test]
fn an_hour_of_virtual_time_passes_on_the_backend_clock() {
    let steps = "      - advance: 1h";
    let r = run(&row(steps, "      - count: {n: 0, event: {kind: Pod}}"));
    assert_eq!(r.outcome, Outcome::Passed, "{r:?}");
    assert!(r.backend_ms >= 3_600_000, "{}", r.backend_ms);
    println!("1h of virtual time took {} ms of wall time", r.wall_ms);
}

#[test]
fn a_row_needing_a_missing_capability_is_skipped_with_the_reason() {
    let yaml = row(SOURCE, "      - never: {kind: Pod}")
        .replace("capabilities: [actor:echo]", "capabilities: [actor:kubelet]");
    let r = run(&yaml);
    assert_eq!(r.outcome, Outcome::Skipped);
    assert_eq!(r.reason.as_deref(), Some("backend fake lacks actor:kubelet"));
}

#[test]
fn a_knob_of_an_unknown_actor_fails_the_row_clearly() {
    let steps = format!("{SOURCE}\n      - knob: {{actor: kubelet, knob: fail, value: true}}");
    let msg = failed(&run(&row(&steps, "      - never: {kind: Pod}")));
    assert!(
        msg.contains("actor kubelet does not run for this row (running: echo); list it in needs.capabilities"),
        "{msg}"
    );
}

#[test]
fn failing_rows_leave_a_flight_record() {
    let dir = tempfile::tempdir().unwrap();
    let steps = format!("{SOURCE}\n      - knob: {{actor: echo, knob: paused, value: true}}");
    let suite = load_suite_str(
        Path::new("inline.yaml"),
        &row(&steps, &format!("      - eventually: {{target: {ECHO}, within: 10s}}")),
    )
    .unwrap();
    let backend = InProcessBackend::new().with_actor(Arc::new(EchoControllerFactory));
    let opts = RunOptions { flight_dir: Some(dir.path().to_path_buf()), ..Default::default() };
    let r = backend.run_row(&suite, &suite.suite.rows[0], &opts);
    let rec = r.flight_record.expect("a flight record");
    let timeline = std::fs::read_to_string(rec.join("timeline.txt")).unwrap();
    assert!(timeline.contains("src"), "{timeline}");
    let mismatches = std::fs::read_to_string(rec.join("mismatches.md")).unwrap();
    assert!(mismatches.contains("expected to exist, observed none"), "{mismatches}");
    assert!(rec.join("README.md").exists());
}

#[test]
fn failure_message_snapshot() {
    let steps = format!("{SOURCE}\n      - knob: {{actor: echo, knob: paused, value: true}}");
    let r = run(&row(
        &steps,
        &format!("      - eventually: {{target: {ECHO}, match: [{{path: data.v, eq: \"1\"}}], within: 90s}}"),
    ));
    insta::assert_snapshot!(failed(&r));
}

#[test]
fn human_summary_snapshot() {
    let ok = run(&row(SOURCE, &format!("      - eventually: {{target: {ECHO}, within: 2m}}")));
    let steps = format!("{SOURCE}\n      - knob: {{actor: echo, knob: paused, value: true}}");
    let bad = run(&row(&steps, &format!("      - eventually: {{target: {ECHO}, within: 1m}}")));
    let skipped = run(&row(SOURCE, "      - never: {kind: Pod}")
        .replace("capabilities: [actor:echo]", "capabilities: [virtual-time, actor:kubelet]"));
    let report =
        kproof::report::result::RunReport::new("fake", "2026-01-01T00:00:00Z".into(), 0, vec![ok, bad, skipped]);
    let summary = kproof::report::summary_table(&report);
    insta::with_settings!({filters => vec![(r"\b\d[\d.]*(ms|s|m|h|d)(\d+(ms|s|m|h))*\b", "[time]"), (r" {2,}", "  ")]}, {
        insta::assert_snapshot!(summary);
    });
}

/// A suite whose one row writes with `expectError`/`expectWarning` (no actors needed).
fn refusal_row(steps: &str) -> String {
    format!(
        "suite: self\ntitle: harness self-test\nrows:\n  - id: r\n    title: t\n    kind: behaviour\n    source: harness/tests/expectations.rs\n    steps:\n{steps}\n"
    )
}

const CREATE_ONCE: &str = "      - create: {inline: {apiVersion: v1, kind: ConfigMap, metadata: {name: once}}}";

#[test]
fn expect_error_passes_when_the_api_refuses_as_stated() {
    let steps = format!(
        "{CREATE_ONCE}\n      - create:\n          inline: {{apiVersion: v1, kind: ConfigMap, metadata: {{name: once}}}}\n          expectError: {{code: 409, reason: AlreadyExists, message: 'configmaps \"once\" already exists'}}"
    );
    let r = run(&refusal_row(&steps));
    assert_eq!(r.outcome, Outcome::Passed, "{r:?}");
}

#[test]
fn expect_error_fails_the_row_when_the_api_accepts_the_write() {
    let steps = "      - create:\n          inline: {apiVersion: v1, kind: ConfigMap, metadata: {name: once}}\n          expectError: {code: 409, reason: AlreadyExists}";
    let r = run(&refusal_row(steps));
    let msg = failed(&r);
    assert_eq!(msg, "create ConfigMap once: expected the API to refuse it (409 AlreadyExists), but it succeeded (201)");
    let at = r.location.expect("a location");
    assert_eq!((at.line, at.part), (9, Some(kproof::report::result::RowPart::Step(1))));
}

#[test]
fn expect_error_fails_the_row_when_the_api_refuses_differently() {
    let steps = format!(
        "{CREATE_ONCE}\n      - create:\n          inline: {{apiVersion: v1, kind: ConfigMap, metadata: {{name: once}}}}\n          expectError: {{code: 422, reason: Invalid, causes: [{{field: metadata.name, type: FieldValueInvalid}}]}}"
    );
    let msg = failed(&run(&refusal_row(&steps)));
    assert!(msg.starts_with("create ConfigMap once: refused, but not as expected:\n  code: expected 422, observed 409\n  reason: expected \"Invalid\", observed \"AlreadyExists\"\n  causes: expected cause FieldValueInvalid at metadata.name, observed []"), "{msg}");
    assert!(msg.ends_with("observed: 409 AlreadyExists: configmaps \"once\" already exists"), "{msg}");
}

#[test]
fn an_unexpected_refusal_names_the_status() {
    let steps = format!("{CREATE_ONCE}\n{CREATE_ONCE}");
    let msg = failed(&run(&refusal_row(&steps)));
    assert_eq!(msg, "create ConfigMap once: 409 AlreadyExists: configmaps \"once\" already exists");
}

#[test]
fn expect_warning_matches_a_warning_header() {
    let with_unknown = "      - create:\n          inline: {apiVersion: v1, kind: ConfigMap, metadata: {name: w}, bogus: 1}\n          expectWarning: 'unknown field \"bogus\"'";
    let r = run(&refusal_row(with_unknown));
    assert_eq!(r.outcome, Outcome::Passed, "{r:?}");
    let clean = "      - create:\n          inline: {apiVersion: v1, kind: ConfigMap, metadata: {name: w}}\n          expectWarning: 'unknown field'";
    let msg = failed(&run(&refusal_row(clean)));
    assert_eq!(msg, "create ConfigMap w: expected a Warning containing \"unknown field\", observed none");
}

/// The catalogue's `apiserver::reserved-for-holds-at-most-256-consumers`, as written in
/// `suites/apiserver.yaml`.
fn reserved_for_row() -> (kproof::suite::LoadedSuite, kproof::suite::Row) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../suites/apiserver.yaml");
    let suite = kproof::suite::load_suite_file(&path).unwrap_or_else(|e| panic!("{e}"));
    let row = suite.suite.rows.iter().find(|r| r.id == "reserved-for-holds-at-most-256-consumers").cloned();
    (suite, row.expect("the row is in suites/apiserver.yaml"))
}

#[test]
fn a_257th_reserved_for_entry_is_refused_as_the_row_states() {
    let (suite, row) = reserved_for_row();
    let r = InProcessBackend::new().run_row(&suite, &row, &RunOptions::default());
    assert_eq!(r.outcome, Outcome::Passed, "{r:?}");
}

#[test]
fn the_reserved_for_row_fails_when_the_server_accepts_the_extra_entry() {
    // Start from 255 consumers: the "257th" is then the 256th, which the API accepts, and the
    // row must say so instead of passing.
    let (suite, mut row) = reserved_for_row();
    let kproof::suite::Step::Patch { patch, .. } = &mut row.steps[1] else { panic!("step 2 is the status patch") };
    let consumers = patch.pointer_mut("/status/reservedFor").and_then(|v| v.as_array_mut()).expect("reservedFor");
    assert_eq!(consumers.len(), 256);
    consumers.pop();
    let r = InProcessBackend::new().run_row(&suite, &row, &RunOptions::default());
    let msg = failed(&r);
    assert_eq!(
        msg,
        "patch ResourceClaim shared-gpu: expected the API to refuse it (422 Invalid, cause FieldValueTooMany at \
         status.reservedFor saying \"must have at most 256 items\"), but it succeeded (200)"
    );
}

#[test]
fn a_row_past_its_wall_limit_is_ended_with_a_reason() {
    // A livelock keeps virtual time from moving, so only wall time can end such a row; a zero
    // limit exercises that path on a row that would otherwise pass.
    let suite = load_suite_str(
        Path::new("inline.yaml"),
        &row(SOURCE, &format!("      - eventually: {{target: {ECHO}, within: 2m}}")),
    )
    .unwrap();
    let backend = InProcessBackend::new().with_actor(Arc::new(EchoControllerFactory));
    let opts = RunOptions { wall_limit: std::time::Duration::ZERO, ..Default::default() };
    let r = backend.run_row(&suite, &suite.suite.rows[0], &opts);
    let message = failed(&r);
    assert!(message.contains("of wall time") && message.contains("never went idle"), "{message}");
    let passing = backend.run_row(&suite, &suite.suite.rows[0], &RunOptions::default());
    assert_eq!(passing.outcome, Outcome::Passed, "{:?}", passing.failure);
}
