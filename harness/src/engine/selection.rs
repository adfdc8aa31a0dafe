//! Which rows a run takes: by suite name and row id, in catalogue order.

use crate::suite::{LoadedSuite, Row};

/// Which rows to run.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Suite names (empty: all).
    pub suites: Vec<String>,
    /// Row ids (empty: all).
    pub rows: Vec<String>,
}

impl Selection {
    /// Whether a row is selected.
    pub fn includes(&self, suite: &str, row: &Row) -> bool {
        (self.suites.is_empty() || self.suites.iter().any(|s| s == suite))
            && (self.rows.is_empty() || self.rows.iter().any(|r| r == &row.id))
    }
}

/// The rows selected, in catalogue order.
pub fn selected<'a>(suites: &'a [LoadedSuite], sel: &Selection) -> Vec<(&'a LoadedSuite, &'a Row)> {
    suites
        .iter()
        .flat_map(|s| s.suite.rows.iter().map(move |r| (s, r)))
        .filter(|(s, r)| sel.includes(&s.suite.suite, r))
        .collect()
}
