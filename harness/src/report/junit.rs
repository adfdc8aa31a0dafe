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

/// One `<testsuite>` of a JUnit file.
#[derive(Debug, Clone, Default)]
pub struct JunitSuite {
    /// The suite's name.
    pub name: String,
    /// Its wall time.
    pub time_ms: u64,
    /// When it started (RFC 3339), if known.
    pub timestamp: Option<String>,
    /// `<property>`s of the suite.
    pub properties: Vec<(String, String)>,
    /// Its test cases.
    pub cases: Vec<JunitCase>,
}

/// One `<testcase>`.
#[derive(Debug, Clone)]
pub struct JunitCase {
    /// `classname`.
    pub classname: String,
    /// `name`.
    pub name: String,
    /// Its wall time.
    pub time_ms: u64,
    /// `<property>`s of the case.
    pub properties: Vec<(String, String)>,
    /// How it ended.
    pub outcome: JunitOutcome,
    /// `<system-out>`, if any.
    pub system_out: Option<String>,
}

/// How a test case ended.
#[derive(Debug, Clone)]
pub enum JunitOutcome {
    /// Passed.
    Passed,
    /// Skipped, with why.
    Skipped(String),
    /// Failed: a one-line message, the failure's type (if any) and the full text.
    Failed {
        /// One line: the `<failure>` element's `message` attribute.
        message: String,
        /// The `<failure>` element's `type` attribute, if any.
        kind: Option<String>,
        /// The full failure text, the element's content.
        body: String,
    },
}

impl JunitCase {
    fn failed(&self) -> bool {
        matches!(self.outcome, JunitOutcome::Failed { .. })
    }

    fn skipped(&self) -> bool {
        matches!(self.outcome, JunitOutcome::Skipped(_))
    }
}

/// Renders suites as a JUnit XML document under one `<testsuites name=...>`. Every kproof
/// JUnit file (the run report, certification) is written by this one function.
pub fn render_junit(name: &str, time_ms: u64, suites: &[JunitSuite]) -> String {
    let mut out = String::new();
    out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let cases = || suites.iter().flat_map(|s| &s.cases);
    // `write!` into a String cannot fail; the results are ignored on purpose.
    let _ = writeln!(
        out,
        "<testsuites name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\" time=\"{}\">",
        xml_escape_attr(name),
        cases().count(),
        cases().filter(|c| c.failed()).count(),
        cases().filter(|c| c.skipped()).count(),
        seconds(time_ms),
    );
    for suite in suites {
        let _ = write!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\" time=\"{}\"",
            xml_escape_attr(&suite.name),
            suite.cases.len(),
            suite.cases.iter().filter(|c| c.failed()).count(),
            suite.cases.iter().filter(|c| c.skipped()).count(),
            seconds(suite.time_ms),
        );
        if let Some(at) = &suite.timestamp {
            let _ = write!(out, " timestamp=\"{}\"", xml_escape_attr(at));
        }
        out.push_str(">\n");
        properties(&mut out, "    ", &suite.properties);
        for case in &suite.cases {
            testcase(&mut out, case);
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

/// Renders the run as JUnit XML: one `<testsuite>` per suite (in order of first appearance),
/// one `<testcase>` per row.
pub fn junit_xml(report: &RunReport) -> String {
    let mut common =
        vec![("backend".to_string(), report.backend.clone()), ("schema".to_string(), report.schema.clone())];
    for (component, version) in &report.components {
        common.push((format!("component.{component}"), version.clone()));
    }
    let suites: Vec<JunitSuite> = group_by_suite(&report.rows)
        .into_iter()
        .map(|(suite, rows)| JunitSuite {
            name: suite.to_string(),
            time_ms: rows.iter().map(|r| r.wall_ms).sum(),
            timestamp: Some(report.started_at.clone()),
            properties: common.clone(),
            cases: rows.into_iter().map(row_case).collect(),
        })
        .collect();
    render_junit("kproof", report.wall_ms, &suites)
}

fn row_case(row: &RowResult) -> JunitCase {
    let mut properties = vec![
        ("source".to_string(), row.source.clone()),
        ("kind".to_string(), kind_name(row.kind)),
        ("title".to_string(), row.title.clone()),
        ("backend_ms".to_string(), row.backend_ms.to_string()),
    ];
    if let Some(at) = &row.location {
        properties.push(("location".to_string(), at.to_string()));
    }
    let (outcome, system_out) = match row.outcome {
        Outcome::Passed => (JunitOutcome::Passed, None),
        Outcome::Skipped => (JunitOutcome::Skipped(row.reason.clone().unwrap_or_else(|| "skipped".into())), None),
        Outcome::Failed => {
            let message = failure_reason(row);
            let body = row.failure.clone().unwrap_or_else(|| message.clone());
            let recorded = match &row.flight_record {
                Some(path) => format!("flight record: {}", path.display()),
                None => "flight record: none was written".to_string(),
            };
            (
                JunitOutcome::Failed { message, kind: Some(format!("kproof.{}", kind_name(row.kind))), body },
                Some(recorded),
            )
        }
    };
    JunitCase {
        classname: format!("kproof.{}", row.suite),
        name: row.id.clone(),
        time_ms: row.wall_ms,
        properties,
        outcome,
        system_out,
    }
}

/// One `<testcase>`. Child order follows the JUnit schema: properties, then skipped or
/// failure, then system-out.
fn testcase(out: &mut String, case: &JunitCase) {
    let _ = writeln!(
        out,
        "    <testcase classname=\"{}\" name=\"{}\" time=\"{}\">",
        xml_escape_attr(&case.classname),
        xml_escape_attr(&case.name),
        seconds(case.time_ms),
    );
    properties(out, "      ", &case.properties);
    match &case.outcome {
        JunitOutcome::Passed => {}
        JunitOutcome::Skipped(why) => {
            let _ = writeln!(out, "      <skipped message=\"{}\"/>", xml_escape_attr(&one_line(why)));
        }
        JunitOutcome::Failed { message, kind, body } => {
            let kind = kind.as_ref().map(|k| format!(" type=\"{}\"", xml_escape_attr(k))).unwrap_or_default();
            let _ = writeln!(
                out,
                "      <failure message=\"{}\"{kind}>{}</failure>",
                xml_escape_attr(&one_line(message)),
                xml_escape_text(body),
            );
        }
    }
    if let Some(text) = &case.system_out {
        let _ = writeln!(out, "      <system-out>{}</system-out>", xml_escape_text(text));
    }
    out.push_str("    </testcase>\n");
}

fn properties(out: &mut String, indent: &str, props: &[(String, String)]) {
    if props.is_empty() {
        return;
    }
    let _ = writeln!(out, "{indent}<properties>");
    for (name, value) in props {
        let _ = writeln!(
            out,
            "{indent}  <property name=\"{}\" value=\"{}\"/>",
            xml_escape_attr(name),
            xml_escape_attr(value)
        );
    }
    let _ = writeln!(out, "{indent}</properties>");
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
