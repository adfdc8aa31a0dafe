//! What a run produces: one result per row, and the material the flight recorder keeps for
//! a failing row.

use crate::suite::RowKind;
pub use crate::suite::location::{Location, RowPart};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::PathBuf;

/// How a row ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Every step ran and every expectation held.
    Passed,
    /// A step or an expectation failed; `reason` and `failure` say which and why.
    Failed,
    /// Not run: the backend lacks something the row needs. Never counted as passed.
    Skipped,
}

/// The result of one row on one backend.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RowResult {
    /// The suite's short name (`raycluster`).
    pub suite: String,
    /// The row's id, unique within the catalogue.
    pub id: String,
    /// The row's title.
    pub title: String,
    /// What the row documents: a behaviour, a limitation or an upstream bug.
    pub kind: RowKind,
    /// Where the behaviour is documented (file, URL, PR or issue).
    pub source: String,
    /// The backend the row ran on (`fake`, `kubeconfig`, `kind`, `upstream`).
    pub backend: String,
    /// How the row ended.
    pub outcome: Outcome,
    /// Why it was skipped, or what failed (one line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The full failure message: which expectation, expected against observed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// Wall-clock time the row took.
    pub wall_ms: u64,
    /// Time that passed on the backend's clock (virtual time in-process).
    pub backend_ms: u64,
    /// The flight-recorder directory of a failing row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flight_record: Option<PathBuf>,
    /// Where in the suite a failed row failed: file, line, and the fixture, step or
    /// expectation (or the row itself when it failed before its first step).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
    /// The API requests the row cost, by client (`kuberay`, `scheduler`, `kproof`, ...) and verb
    /// (`GET`, `LIST`, `WATCH`, `POST`, `PUT`, `PATCH`, `DELETE`); counted where the backend's
    /// server can count them (in-process).
    #[serde(default, skip_serializing_if = "RequestCounts::is_empty")]
    pub requests: RequestCounts,
    /// What each wait and expectation that ran saw: how many objects or writes it matched, so
    /// a reader can tell a check that held on evidence from one that held on nothing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<CheckEvidence>,
}

/// What one check of a row (a `wait` step or an expectation) matched when it was last judged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckEvidence {
    /// Where in the row: `step 3` (a wait) or `expect 2`.
    pub part: String,
    /// The check's keyword (`eventually`, `before`, `never`, ...).
    pub check: String,
    /// What `matched` counts.
    pub unit: MatchedUnit,
    /// Objects the last read selected, or writes on the timeline that matched the pattern
    /// (for `before`, its `first` pattern).
    pub matched: usize,
    /// Of the selected objects, how many met every condition (`eventually`, `consistently`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holding: Option<usize>,
    /// Writes matching `then` (`before`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub then_matched: Option<usize>,
    /// Whether the check held.
    pub passed: bool,
}

/// What a [`CheckEvidence`] counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MatchedUnit {
    /// Objects read from the API.
    Objects,
    /// Writes on the row's timeline.
    Writes,
}

/// Requests by client, then by verb.
pub type RequestCounts = std::collections::BTreeMap<String, std::collections::BTreeMap<String, u64>>;

impl RowResult {
    /// `suite::id`, the row's test name.
    pub fn name(&self) -> String {
        format!("{}::{}", self.suite, self.id)
    }
}

/// The last mismatch of a wait or expectation: what was expected, what was seen.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Mismatch {
    /// The expectation, as written in the suite (YAML).
    pub expectation: String,
    /// Expected against observed, one line per failing condition.
    pub diff: String,
    /// The objects observed at the last check.
    pub observed: Vec<Value>,
    /// When (backend clock, ms since the row started) the last check ran.
    pub at_ms: u64,
}

/// Everything kept about a failing row.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FlightRecord {
    /// Every write the backend saw during the row, oldest first (timeline entries as JSON).
    pub timeline: Vec<Value>,
    /// The last mismatch of every wait and expectation that failed.
    pub mismatches: Vec<Mismatch>,
    /// The objects in the row's namespace (and cluster-scoped ones it touched) at the end.
    pub objects: Vec<Value>,
    /// Kubernetes Events in the row's namespace.
    pub events: Vec<Value>,
    /// Log lines of the controllers and the harness during the row.
    pub logs: Vec<String>,
    /// The writes whose answers mattered (refused, or with an expected error or warning):
    /// method, URL, body sent, code, Warning headers, body received.
    #[serde(default)]
    pub exchanges: Vec<Value>,
}

/// A whole run.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunReport {
    /// The report format's version: `kproof.dev/report/v1`.
    pub schema: String,
    /// The backend the run used.
    pub backend: String,
    /// When the run started (RFC 3339).
    pub started_at: String,
    /// Wall-clock time the whole run took.
    pub wall_ms: u64,
    /// How many rows passed.
    pub passed: usize,
    /// How many rows failed.
    pub failed: usize,
    /// How many rows were skipped.
    pub skipped: usize,
    /// What the backend ran and at which version (API server, operators), by component.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub components: std::collections::BTreeMap<String, String>,
    /// Every row's result, in catalogue order.
    pub rows: Vec<RowResult>,
}

/// The report format's version string.
pub const REPORT_SCHEMA: &str = "kproof.dev/report/v1";

impl RunReport {
    /// Builds a report from row results, counting outcomes.
    pub fn new(backend: &str, started_at: String, wall_ms: u64, rows: Vec<RowResult>) -> Self {
        let count = |o: Outcome| rows.iter().filter(|r| r.outcome == o).count();
        Self {
            schema: REPORT_SCHEMA.to_string(),
            backend: backend.to_string(),
            started_at,
            wall_ms,
            passed: count(Outcome::Passed),
            failed: count(Outcome::Failed),
            skipped: count(Outcome::Skipped),
            components: Default::default(),
            rows,
        }
    }

    /// The same report, naming what the backend ran.
    pub fn with_components(mut self, components: std::collections::BTreeMap<String, String>) -> Self {
        self.components = components;
        self
    }
}
