//! Runs a selection of rows on a backend, in parallel, with live progress.

use crate::backend::{Backend, RunOptions};
use crate::report::result::{Outcome, RowResult};
use crate::suite::{LoadedSuite, Row};
use std::sync::Mutex;

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

/// Runs rows on `jobs` threads; `on_done` is called as each row finishes (for progress).
/// Results come back in catalogue order.
pub fn run_rows(
    backend: &dyn Backend,
    rows: &[(&LoadedSuite, &Row)],
    opts: &RunOptions,
    jobs: usize,
    on_done: &(dyn Fn(&RowResult) + Sync),
) -> Vec<RowResult> {
    let next = Mutex::new(0usize);
    let results: Mutex<Vec<Option<RowResult>>> = Mutex::new(vec![None; rows.len()]);
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1).min(rows.len().max(1)) {
            scope.spawn(|| {
                loop {
                    let i = {
                        let mut n = next.lock().unwrap_or_else(|e| e.into_inner());
                        let i = *n;
                        *n += 1;
                        i
                    };
                    let Some((suite, row)) = rows.get(i) else { return };
                    let r = backend.run_row(suite, row, opts);
                    on_done(&r);
                    results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
                }
            });
        }
    });
    results.into_inner().unwrap_or_else(|e| e.into_inner()).into_iter().flatten().collect()
}

/// Whether a run passed: no row failed (skips do not fail a run, and are never passes).
pub fn passed(results: &[RowResult]) -> bool {
    results.iter().all(|r| r.outcome != Outcome::Failed)
}
