//! What a run produces: typed run events ([`events`]) consumed by reporters — the human summary
//! ([`human`]), the JSON report ([`json`]), the JUnit XML ([`junit`]) — and, for each failing
//! row, a flight record ([`flight`]).

pub mod events;
pub mod flight;
pub mod human;
pub mod json;
pub mod junit;
pub mod result;

pub use events::{Reporter, RunEvent};
pub use human::summary_table;
pub use json::{JSON_REPORT_FILE, write_json};
pub use junit::{JUNIT_REPORT_FILE, junit_xml, write_junit};
pub use result::{FlightRecord, Mismatch, Outcome, REPORT_SCHEMA, RowResult, RunReport};

use crate::suite::RowKind;

/// The one-line reason of a failed row: its `reason`, else the first line of its failure text.
pub(crate) fn failure_reason(row: &RowResult) -> String {
    let text = row
        .reason
        .as_deref()
        .or_else(|| row.failure.as_deref().and_then(|f| f.lines().find(|l| !l.trim().is_empty())))
        .unwrap_or("failed");
    one_line(text)
}

/// The row kind as written in suites (`behaviour`, `upstream-bug`, ...).
pub(crate) fn kind_name(kind: RowKind) -> String {
    // Serde is the source of truth for the spelling, so reports match the suite files.
    match serde_json::to_value(kind) {
        Ok(serde_json::Value::String(name)) => name,
        _ => format!("{kind:?}"),
    }
}

/// Folds text onto one line: line breaks and other control characters become spaces, runs of
/// whitespace collapse, so a reason cannot break a table row or a one-line attribute.
pub(crate) fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split(|c: char| c.is_whitespace() || c.is_control()) {
        if word.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// Wall-clock durations: `12ms`, `1.23s`, `2m5s`.
pub(crate) fn wall_duration(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms}ms")
    } else if ms < 60_000 {
        format!("{:.2}s", ms as f64 / 1000.0)
    } else {
        coarse_duration(ms)
    }
}

/// Backend-clock durations, which in virtual time are often hours: `250ms`, `35s`, `4m10s`,
/// `1h0m`, `2d3h`. Below a minute whole seconds are enough; above, the two largest units.
pub(crate) fn backend_duration(ms: u64) -> String {
    if ms < 1000 { format!("{ms}ms") } else { coarse_duration(ms) }
}

fn coarse_duration(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, hours, mins, s) = (secs / 86_400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    if days > 0 {
        format!("{days}d{hours}h")
    } else if hours > 0 {
        format!("{hours}h{mins}m")
    } else if mins > 0 {
        format!("{mins}m{s}s")
    } else {
        format!("{s}s")
    }
}

#[cfg(test)]
mod tests {
    use super::human::REASON_WIDTH;
    use super::junit::{seconds, xml_escape_attr, xml_escape_text};
    use super::*;
    use std::fs;
    use std::path::PathBuf;

    fn row(id: &str, outcome: Outcome) -> RowResult {
        RowResult {
            suite: "rayservice-upgrade".to_string(),
            id: id.to_string(),
            title: format!("title of {id}"),
            kind: RowKind::Behaviour,
            source: "ray-project/kuberay#3166".to_string(),
            backend: "fake".to_string(),
            outcome,
            reason: None,
            failure: None,
            wall_ms: 12,
            backend_ms: 3_600_000,
            flight_record: None,
            location: None,
            requests: Default::default(),
            checks: Vec::new(),
        }
    }

    /// A pass, a fail with a flight record, and a skip, with fixed times.
    fn sample_report() -> RunReport {
        let pass = row("blue-green-switches-traffic", Outcome::Passed);
        let fail = RowResult {
            suite: "kueue-slicing".to_string(),
            kind: RowKind::Limitation,
            source: "kubernetes-sigs/kueue#11264".to_string(),
            reason: Some(
                "eventually: RayService/default/svc status.activeServiceStatus.rayClusterName \
                 eq \"svc-new\" not met within 60s"
                    .to_string(),
            ),
            failure: Some(
                "expectation 2 (eventually, timeout 60s) failed at 60000ms:\n\
                 \x20 RayService default/svc\n\
                 \x20   status.activeServiceStatus.rayClusterName: expected eq \"svc-new\", observed \"svc-old\" <&> \x1b[31mred\x1b[0m\n"
                    .to_string(),
            ),
            wall_ms: 47,
            backend_ms: 35_000,
            flight_record: Some(PathBuf::from(
                "target/kproof/flight-records/kueue-slicing/unsuspend-after-admission",
            )),
            ..row("unsuspend-after-admission", Outcome::Failed)
        };
        let skip = RowResult {
            suite: "dra-reservedfor".to_string(),
            kind: RowKind::UpstreamBug,
            source: "https://github.com/kubernetes/enhancements/issues/5194".to_string(),
            reason: Some("backend kubeconfig lacks capability virtual-time".to_string()),
            wall_ms: 0,
            backend_ms: 0,
            ..row("workload-reservation", Outcome::Skipped)
        };
        RunReport::new("fake", "2025-01-02T03:04:05Z".to_string(), 1234, vec![pass, fail, skip])
    }

    #[test]
    fn summary_table_snapshot() {
        insta::assert_snapshot!(summary_table(&sample_report()));
    }

    #[test]
    fn junit_snapshot() {
        insta::assert_snapshot!(junit_xml(&sample_report()));
    }

    #[test]
    fn totals_line_stands_alone() {
        let table = summary_table(&sample_report());
        assert!(table.lines().any(|l| l == "1 passed, 1 failed, 1 skipped"), "{table}");
        assert!(table.lines().any(|l| l == "wall time: 1.23s on backend fake"), "{table}");
    }

    #[test]
    fn summary_of_empty_run() {
        let report = RunReport::new("fake", String::new(), 0, Vec::new());
        let table = summary_table(&report);
        assert!(table.lines().any(|l| l == "0 passed, 0 failed, 0 skipped"), "{table}");
        assert!(table.starts_with("RESULT  ROW  WALL  BACKEND-TIME  REASON\n"), "{table}");
    }

    #[test]
    fn long_and_multiline_reasons_stay_on_one_table_line() {
        let mut skip = row("long", Outcome::Skipped);
        skip.reason = Some(format!("first line\nsecond {}", "x".repeat(200)));
        let table = summary_table(&RunReport::new("fake", String::new(), 0, vec![skip]));
        let line = table.lines().nth(1).unwrap_or_default();
        assert!(line.starts_with("SKIP"), "{table}");
        assert!(line.contains("first line second xxx"), "{line}");
        assert!(line.ends_with('…'), "{line}");
        assert!(!line.contains("x".repeat(REASON_WIDTH).as_str()), "{line}");
    }

    #[test]
    fn json_round_trips_with_schema_and_skip_reasons() {
        let dir = tempfile::tempdir().expect("tempdir");
        let nested = dir.path().join("a/b");
        let path = write_json(&sample_report(), &nested).expect("write json");
        assert_eq!(path, nested.join(JSON_REPORT_FILE));
        let text = fs::read_to_string(&path).expect("read json");
        assert!(text.contains("\"schema\": \"kproof.dev/report/v1\""), "{text}");
        // The schema field leads, so a reader sees the version first.
        let first_field = text.lines().nth(1).unwrap_or_default().trim();
        assert!(first_field.starts_with("\"schema\""), "{first_field}");

        let back: RunReport = serde_json::from_str(&text).expect("parse json");
        assert_eq!(back.schema, REPORT_SCHEMA);
        assert_eq!((back.passed, back.failed, back.skipped), (1, 1, 1));
        let skipped = back.rows.iter().find(|r| r.outcome == Outcome::Skipped).expect("skip row");
        assert_eq!(skipped.reason.as_deref(), Some("backend kubeconfig lacks capability virtual-time"));
        let failed = back.rows.iter().find(|r| r.outcome == Outcome::Failed).expect("fail row");
        assert_eq!(failed.kind, RowKind::Limitation);
        assert!(failed.flight_record.is_some());
    }

    #[test]
    fn junit_file_is_written() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = write_junit(&sample_report(), dir.path()).expect("write junit");
        assert_eq!(path, dir.path().join(JUNIT_REPORT_FILE));
        let text = fs::read_to_string(&path).expect("read junit");
        assert!(text.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites "));
        assert_eq!(text.matches("<testsuite ").count(), 3);
        assert_eq!(text.matches("<testcase ").count(), 3);
    }

    #[test]
    fn junit_groups_rows_of_a_suite() {
        let rows = vec![row("a", Outcome::Passed), row("b", Outcome::Skipped)];
        let xml = junit_xml(&RunReport::new("fake", String::new(), 0, rows));
        assert_eq!(xml.matches("<testsuite ").count(), 1);
        assert!(xml.contains(
            "<testsuite name=\"rayservice-upgrade\" tests=\"2\" failures=\"0\" errors=\"0\" skipped=\"1\" time=\"0.024\""
        ));
        assert!(xml.contains("<skipped message=\"skipped\"/>"), "{xml}");
    }

    #[test]
    fn xml_escape_handles_markup_and_forbidden_characters() {
        for escape in [xml_escape_attr, xml_escape_text] {
            assert_eq!(escape(r#"a<b>&"c"'d'"#), "a&lt;b&gt;&amp;&quot;c&quot;&apos;d&apos;");
            assert_eq!(escape("x\u{1b}[31my\u{0}\u{FFFE}"), "x\u{FFFD}[31my\u{FFFD}\u{FFFD}");
            assert_eq!(escape("ünï \u{10348} ok"), "ünï \u{10348} ok");
        }
        assert_eq!(xml_escape_attr("l1\nl2\r\tz"), "l1&#10;l2&#13;&#9;z");
        assert_eq!(xml_escape_text("l1\nl2\r\tz"), "l1\nl2&#13;\tz");
    }

    #[test]
    fn durations() {
        assert_eq!(wall_duration(12), "12ms");
        assert_eq!(wall_duration(1234), "1.23s");
        assert_eq!(wall_duration(125_000), "2m5s");
        assert_eq!(backend_duration(250), "250ms");
        assert_eq!(backend_duration(35_400), "35s");
        assert_eq!(backend_duration(250_000), "4m10s");
        assert_eq!(backend_duration(3_600_000), "1h0m");
        assert_eq!(backend_duration(97_200_000), "1d3h");
        assert_eq!(seconds(1234), "1.234");
        assert_eq!(seconds(5), "0.005");
    }
}
