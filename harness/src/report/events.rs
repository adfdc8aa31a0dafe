//! Typed events of a run, and the reporters that consume them.
//!
//! The runner emits a [`RunEvent`] when the run starts, after each row and at the end; each
//! [`Reporter`] turns them into its own output (progress and a summary on the terminal, the
//! JSON report, the JUnit XML). A new output is a new reporter, never a change to the runner.

use crate::report::result::{RowResult, RunReport};
use std::io;
use std::path::{Path, PathBuf};

/// Something that happened during a run.
#[derive(Debug, Clone, Copy)]
pub enum RunEvent<'a> {
    /// The run begins: which backend, how many rows were selected.
    Started {
        /// The backend's name (`fake`, `kubeconfig`, `upstream`).
        backend: &'a str,
        /// Rows selected for the run.
        rows: usize,
    },
    /// One row finished (passed, failed or was skipped); rows finish in any order.
    RowFinished(&'a RowResult),
    /// Every row finished; the report holds them in catalogue order.
    Finished(&'a RunReport),
}

/// Consumes the events of a run.
pub trait Reporter: Send {
    /// Handles one event. An `Err` is reported by the caller; the run goes on.
    fn event(&mut self, event: &RunEvent<'_>) -> io::Result<()>;

    /// Files this reporter wrote, for the closing line of `kproof run`.
    fn outputs(&self) -> Vec<PathBuf> {
        Vec::new()
    }
}

/// Writes `kproof-report.json` into a directory when the run finishes.
pub struct JsonReporter {
    dir: PathBuf,
    written: Option<PathBuf>,
}

impl JsonReporter {
    /// A reporter writing into `dir` (created if missing).
    pub fn new(dir: &Path) -> Self {
        Self { dir: dir.to_path_buf(), written: None }
    }
}

impl Reporter for JsonReporter {
    fn event(&mut self, event: &RunEvent<'_>) -> io::Result<()> {
        if let RunEvent::Finished(report) = event {
            self.written = Some(crate::report::json::write_json(report, &self.dir)?);
        }
        Ok(())
    }

    fn outputs(&self) -> Vec<PathBuf> {
        self.written.iter().cloned().collect()
    }
}

/// Writes `kproof-junit.xml` into a directory when the run finishes.
pub struct JunitReporter {
    dir: PathBuf,
    written: Option<PathBuf>,
}

impl JunitReporter {
    /// A reporter writing into `dir` (created if missing).
    pub fn new(dir: &Path) -> Self {
        Self { dir: dir.to_path_buf(), written: None }
    }
}

impl Reporter for JunitReporter {
    fn event(&mut self, event: &RunEvent<'_>) -> io::Result<()> {
        if let RunEvent::Finished(report) = event {
            self.written = Some(crate::report::junit::write_junit(report, &self.dir)?);
        }
        Ok(())
    }

    fn outputs(&self) -> Vec<PathBuf> {
        self.written.iter().cloned().collect()
    }
}
