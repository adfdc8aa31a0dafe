//! The human summary printed at the end of `kproof run`.

use crate::report::result::{Outcome, RunReport};
use crate::report::{backend_duration, failure_reason, one_line, wall_duration};
use std::fmt::Write as _;

/// Reasons longer than this (in characters) are cut in the summary table; the full text is in
/// the reports and the flight record, and a table that wraps is unreadable.
pub(crate) const REASON_WIDTH: usize = 80;

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
    if !report.components.is_empty() {
        let listed: Vec<String> = report.components.iter().map(|(c, v)| format!("{c} {v}")).collect();
        let _ = writeln!(out, "components: {}", one_line(&listed.join(", ")));
    }
    for row in report.rows.iter().filter(|r| r.outcome == Outcome::Failed) {
        if let Some(at) = &row.location {
            let _ = writeln!(out, "{} failed at {at}", row.name());
        }
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

/// Cuts `text` to at most `width` characters, marking the cut with `…`.
fn truncate(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let mut out: String = text.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Live progress on the terminal while rows run (a bar with running totals), then the summary
/// table on standard output when the run finishes.
pub struct HumanReporter {
    bar: Option<indicatif::ProgressBar>,
    counts: (usize, usize, usize),
}

impl HumanReporter {
    /// A reporter that draws progress only when standard error is a terminal.
    pub fn new() -> Self {
        Self { bar: None, counts: (0, 0, 0) }
    }
}

impl Default for HumanReporter {
    fn default() -> Self {
        Self::new()
    }
}

impl crate::report::Reporter for HumanReporter {
    fn event(&mut self, event: &crate::report::RunEvent<'_>) -> std::io::Result<()> {
        use crate::report::RunEvent;
        match event {
            RunEvent::Started { rows, .. } => {
                let bar = indicatif::ProgressBar::new(*rows as u64);
                bar.set_style(
                    indicatif::ProgressStyle::with_template("{elapsed:>4} [{bar:30}] {pos}/{len} rows  {msg}")
                        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
                        .progress_chars("=> "),
                );
                self.bar = Some(bar);
            }
            RunEvent::RowFinished(row) => {
                match row.outcome {
                    Outcome::Passed => self.counts.0 += 1,
                    Outcome::Failed => self.counts.1 += 1,
                    Outcome::Skipped => self.counts.2 += 1,
                }
                if let Some(bar) = &self.bar {
                    let (p, f, s) = self.counts;
                    bar.set_message(format!("{p} passed, {f} failed, {s} skipped"));
                    bar.inc(1);
                }
            }
            RunEvent::Finished(report) => {
                if let Some(bar) = self.bar.take() {
                    bar.finish_and_clear();
                }
                print!("{}", summary_table(report));
            }
        }
        Ok(())
    }
}
