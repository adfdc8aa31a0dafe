//! The JUnit XML report, for CI dashboards: one `<testsuite>` per suite, one `<testcase>` per
//! row, skipped rows as `<skipped>` with their reason.

use crate::report::result::{Outcome, RowResult, RunReport};
use crate::report::{failure_reason, kind_name, one_line};
use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// File name of the JUnit XML report inside the report directory.
pub const JUNIT_REPORT_FILE: &str = "kproof-junit.xml";

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
        for (component, version) in &report.components {
            property(&mut out, "      ", &format!("component.{component}"), version);
        }
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
    if let Some(at) = &row.location {
        property(out, "        ", "location", &at.to_string());
    }
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

/// JUnit times are seconds with a decimal point.
pub(crate) fn seconds(ms: u64) -> String {
    format!("{}.{:03}", ms / 1000, ms % 1000)
}
