//! Places in a suite file, for errors and failures: a file, a line, a row, and the part of the
//! row (fixture, step, expectation) meant.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// A place in a suite file: the file, a 1-based line, and which part of a row is meant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Location {
    /// The suite file.
    pub file: PathBuf,
    /// 1-based line: that of the failing fixture, step or expectation when known, else the row's.
    pub line: usize,
    /// The row's id.
    pub row: String,
    /// The part of the row, when the failure is in one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub part: Option<RowPart>,
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{} (row {}", self.file.display(), self.line, self.row)?;
        if let Some(part) = &self.part {
            write!(f, ", {part}")?;
        }
        f.write_str(")")
    }
}

/// A part of a row, numbered from 1 in the order the suite file writes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind", content = "index")]
pub enum RowPart {
    /// A fixture of the suite (applied before every row's own).
    SuiteFixture(usize),
    /// One of the row's fixtures.
    Fixture(usize),
    /// One of the row's steps.
    Step(usize),
    /// One of the row's expectations.
    Expectation(usize),
}

impl std::fmt::Display for RowPart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RowPart::SuiteFixture(i) => write!(f, "suite fixture {i}"),
            RowPart::Fixture(i) => write!(f, "fixture {i}"),
            RowPart::Step(i) => write!(f, "step {i}"),
            RowPart::Expectation(i) => write!(f, "expect {i}"),
        }
    }
}
