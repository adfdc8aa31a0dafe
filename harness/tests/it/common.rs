//! What the wrong-component tests share: run some rows of one suite on a backend whose
//! components carry a deliberate defect, and check that the rows guarding against it fail
//! while the rows that do not depend on it still pass.

use kproof::backend::{InProcessBackend, RunOptions};
use kproof::report::result::Outcome;
use std::collections::BTreeMap;
use std::path::Path;

/// The outcome of each named row of `suites/<suite_file>` on `backend`.
pub fn outcomes(
    backend: &InProcessBackend,
    suite_file: &str,
    defect: &dyn std::fmt::Debug,
    rows: &[&str],
) -> BTreeMap<String, Outcome> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let suite = kproof::suite::load_suite_file(&root.join("suites").join(suite_file)).expect("the suite loads");
    let opts = RunOptions { fixtures_dir: root.join("fixtures"), flight_dir: None, ..Default::default() };
    let selected: Vec<_> =
        suite.suite.rows.iter().filter(|r| rows.contains(&r.id.as_str())).map(|r| (&suite, r)).collect();
    assert_eq!(selected.len(), rows.len(), "every named row exists in suites/{suite_file}");
    kproof::backend::run_rows(backend, &selected, &opts, 2, &|_| {})
        .into_iter()
        .map(|r| {
            println!(
                "{defect:?}: {} {:?} {}",
                r.id,
                r.outcome,
                r.failure.clone().unwrap_or_default().lines().next().unwrap_or_default()
            );
            (r.id, r.outcome)
        })
        .collect()
}

/// Every row of `guards` fails and every row of `unaffected` passes.
pub fn assert_caught(
    backend: &InProcessBackend,
    suite_file: &str,
    defect: &dyn std::fmt::Debug,
    guards: &[&str],
    unaffected: &[&str],
) {
    let all: Vec<&str> = guards.iter().chain(unaffected).copied().collect();
    let got = outcomes(backend, suite_file, defect, &all);
    for row in guards {
        assert_eq!(got[*row], Outcome::Failed, "row {row} must catch {defect:?}");
    }
    for row in unaffected {
        assert_eq!(got[*row], Outcome::Passed, "row {row} does not depend on {defect:?} and must still pass");
    }
}
