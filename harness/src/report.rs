//! Reports of a run: the JSON report (versioned schema, for tools), the JUnit XML (for CI
//! dashboards) and the human summary table printed at the end of `kproof run`.

use crate::result::{Outcome, RowResult, RunReport};
use crate::suite::RowKind;
use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// File name of the JSON report inside the report directory.
pub const JSON_REPORT_FILE: &str = "kproof-report.json";

/// File name of the JUnit XML report inside the report directory.
pub const JUNIT_REPORT_FILE: &str = "kproof-junit.xml";

/// Reasons longer than this (in characters) are cut in the summary table; the full text is in
/// the reports and the flight record, and a table that wraps is unreadable.
const REASON_WIDTH: usize = 80;

/// Writes the run as pretty JSON to `dir/kproof-report.json`, creating `dir` if missing, and
/// returns the file's path.
///
/// The `schema` field comes first (it is the first field of [`RunReport`]), so a reader can
/// check the version before parsing the rest.
pub fn write_json(report: &RunReport, dir: &Path) -> io::Result<PathBuf> {
    fs::create_dir_all(dir)?;
    let mut json = serde_json::to_string_pretty(report)?;
    json.push('\n');
    let path = dir.join(JSON_REPORT_FILE);
    fs::write(&path, json)?;
    Ok(path)
}

/// Writes the run as JUnit XML to `dir/kproof-junit.xml`, creating `dir` if missing, and
/// returns the file's path.
pub fn write_junit(report: &RunReport, dir: &Path) -> io::Result<PathBuf> {
    fs::create_dir_all(dir)?;
    let path = dir.join(JUNIT_REPORT_FILE);
    fs::write(&path, junit_xml(report))?;
    Ok(path)
}

/// Renders the run as JUnit XML: one `<testsuite>` per suite (in order of first appearance),
/// one `<testcase>` per row.
pub fn junit_xml(report: &RunReport) -> String {
    let mut out = String::new();
    out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    // `write!` into a String cannot fail; the results are ignored on purpose.
    let _ = writeln!(
        out,
        "<testsuites name=\"kproof\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\" time=\"{}\">",
        report.rows.len(),
        report.failed,
        report.skipped,
        seconds(report.wall_ms),
    );
    for (suite, rows) in group_by_suite(&report.rows) {
        let failures = rows.iter().filter(|r| r.outcome == Outcome::Failed).count();
        let skipped = rows.iter().filter(|r| r.outcome == Outcome::Skipped).count();
        let time: u64 = rows.iter().map(|r| r.wall_ms).sum();
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\" time=\"{}\" timestamp=\"{}\">",
            xml_escape_attr(suite),
            rows.len(),
            failures,
            skipped,
            seconds(time),
            xml_escape_attr(&report.started_at),
        );
        out.push_str("    <properties>\n");
        property(&mut out, "      ", "backend", &report.backend);
        property(&mut out, "      ", "schema", &report.schema);
        out.push_str("    </properties>\n");
        for row in rows {
            testcase(&mut out, row);
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

/// One `<testcase>`. Child order follows the JUnit schema: properties, then skipped or
/// failure, then system-out.
fn testcase(out: &mut String, row: &RowResult) {
    let _ = writeln!(
        out,
        "    <testcase classname=\"kproof.{}\" name=\"{}\" time=\"{}\">",
        xml_escape_attr(&row.suite),
        xml_escape_attr(&row.id),
        seconds(row.wall_ms),
    );
    out.push_str("      <properties>\n");
    property(out, "        ", "source", &row.source);
    property(out, "        ", "kind", &kind_name(row.kind));
    property(out, "        ", "title", &row.title);
    property(out, "        ", "backend_ms", &row.backend_ms.to_string());
    out.push_str("      </properties>\n");
    match row.outcome {
        Outcome::Passed => {}
        Outcome::Skipped => {
            let _ = writeln!(
                out,
                "      <skipped message=\"{}\"/>",
                xml_escape_attr(&one_line(row.reason.as_deref().unwrap_or("skipped")))
            );
        }
        Outcome::Failed => {
            let message = failure_reason(row);
            let body = row.failure.as_deref().unwrap_or(&message);
            let _ = writeln!(
                out,
                "      <failure message=\"{}\" type=\"kproof.{}\">{}</failure>",
                xml_escape_attr(&message),
                xml_escape_attr(&kind_name(row.kind)),
                xml_escape_text(body),
            );
            let recorded = match &row.flight_record {
                Some(path) => format!("flight record: {}", path.display()),
                None => "flight record: none was written".to_string(),
            };
            let _ = writeln!(out, "      <system-out>{}</system-out>", xml_escape_text(&recorded));
        }
    }
    out.push_str("    </testcase>\n");
}

fn property(out: &mut String, indent: &str, name: &str, value: &str) {
    let _ =
        writeln!(out, "{indent}<property name=\"{}\" value=\"{}\"/>", xml_escape_attr(name), xml_escape_attr(value));
}

/// Groups rows by suite, keeping the order in which suites first appear, so the XML follows
/// the run's order.
fn group_by_suite(rows: &[RowResult]) -> Vec<(&str, Vec<&RowResult>)> {
    let mut groups: Vec<(&str, Vec<&RowResult>)> = Vec::new();
    for row in rows {
        match groups.iter_mut().find(|(suite, _)| *suite == row.suite) {
            Some((_, members)) => members.push(row),
            None => groups.push((&row.suite, vec![row])),
        }
    }
    groups
}

/// Escapes text for an XML 1.0 attribute value.
///
/// Tab, LF and CR become character references: a parser would turn them into spaces.
pub fn xml_escape_attr(text: &str) -> String {
    xml_escape(text, true)
}

/// Escapes text for XML 1.0 element content. Line breaks stay literal so the file reads well,
/// except CR, which a parser would fold.
pub fn xml_escape_text(text: &str) -> String {
    xml_escape(text, false)
}

/// Characters XML 1.0 forbids (most C0 controls, U+FFFE, U+FFFF) cannot be written even as
/// character references, so they become U+FFFD.
fn xml_escape(text: &str, attribute: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\r' => out.push_str("&#13;"),
            '\t' if attribute => out.push_str("&#9;"),
            '\n' if attribute => out.push_str("&#10;"),
            '\t' | '\n' => out.push(c),
            c if is_xml_char(c) => out.push(c),
            _ => out.push('\u{FFFD}'),
        }
    }
    out
}

/// The XML 1.0 `Char` production (surrogates cannot occur in a Rust `char`).
fn is_xml_char(c: char) -> bool {
    matches!(c, '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
}

/// The human summary printed at the end of `kproof run`.
///
/// A table (RESULT, ROW, WALL, BACKEND-TIME, and REASON for skipped and failed rows) in the
/// given row order, then the totals line `N passed, N failed, N skipped` alone on its line
/// (CI tooling reads it), the wall time and backend, and one line per failed row naming its
/// flight record. No colours, so it can be snapshotted and piped.
pub fn summary_table(report: &RunReport) -> String {
    let header = ["RESULT", "ROW", "WALL", "BACKEND-TIME", "REASON"];
    let lines: Vec<[String; 5]> = report
        .rows
        .iter()
        .map(|row| {
            let reason = match row.outcome {
                Outcome::Passed => String::new(),
                Outcome::Skipped => truncate(&one_line(row.reason.as_deref().unwrap_or("")), REASON_WIDTH),
                Outcome::Failed => truncate(&failure_reason(row), REASON_WIDTH),
            };
            [
                outcome_label(row.outcome).to_string(),
                row.name(),
                wall_duration(row.wall_ms),
                backend_duration(row.backend_ms),
                reason,
            ]
        })
        .collect();

    let mut widths = header.map(|h| h.chars().count());
    for line in &lines {
        for (width, cell) in widths.iter_mut().zip(line) {
            *width = (*width).max(cell.chars().count());
        }
    }

    let mut out = String::new();
    let mut push_line = |cells: &[&str]| {
        let mut line = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            line.push_str(cell);
            let pad = widths[i].saturating_sub(cell.chars().count());
            line.extend(std::iter::repeat_n(' ', pad));
        }
        // Padding of the last columns would leave trailing blanks, which snapshots and
        // diff tools handle badly.
        out.push_str(line.trim_end());
        out.push('\n');
    };
    push_line(&header);
    for line in &lines {
        push_line(&line.each_ref().map(String::as_str));
    }

    out.push('\n');
    let _ = writeln!(out, "{} passed, {} failed, {} skipped", report.passed, report.failed, report.skipped);
    let _ = writeln!(out, "wall time: {:.2}s on backend {}", report.wall_ms as f64 / 1000.0, one_line(&report.backend));
    for row in report.rows.iter().filter(|r| r.outcome == Outcome::Failed) {
        match &row.flight_record {
            Some(path) => {
                let _ = writeln!(out, "flight record of {}: {}", row.name(), path.display());
            }
            None => {
                let _ = writeln!(out, "flight record of {}: none was written", row.name());
            }
        }
    }
    out
}

fn outcome_label(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Passed => "PASS",
        Outcome::Failed => "FAIL",
        Outcome::Skipped => "SKIP",
    }
}

/// The one-line reason of a failed row: its `reason`, else the first line of its failure text.
fn failure_reason(row: &RowResult) -> String {
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

/// Cuts `text` to at most `width` characters, marking the cut with `…`.
fn truncate(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let mut out: String = text.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// JUnit times are seconds with a decimal point.
fn seconds(ms: u64) -> String {
    format!("{}.{:03}", ms / 1000, ms % 1000)
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
    use super::*;
    use crate::result::REPORT_SCHEMA;

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
