//! Rows side by side on one shared cluster (the kubeconfig and upstream backends). Each row has
//! a namespace of its own, but cluster-scoped objects (ClusterQueues, ResourceFlavors, Cohorts,
//! DeviceClasses, ...) exist once per cluster, and a Kueue row's quota arithmetic sees every
//! ClusterQueue in its cohort. So the runner never runs two rows at once that write the same
//! cluster-scoped kind: such rows take turns, the others run in parallel.

use crate::suite::kinds::KindCatalog;
use crate::suite::{LoadedSuite, Manifest, Row, Step, load_manifests};
use serde_json::Value;
use std::collections::{BTreeSet, VecDeque};
use std::path::Path;
use std::sync::{Condvar, Mutex};

/// The cluster-scoped kinds `row` writes: objects of its suite's fixtures, its own fixtures and
/// its apply and create steps, and the targets of its patch, delete and scale steps. A manifest
/// that does not load writes nothing here (the row fails on it anyway).
pub fn cluster_scoped_writes(
    suite: &LoadedSuite,
    row: &Row,
    fixtures_dir: &Path,
    kinds: &KindCatalog,
) -> BTreeSet<String> {
    let mut manifests: Vec<&Manifest> = suite.suite.fixtures.iter().chain(&row.fixtures).collect();
    let mut targets: Vec<&str> = Vec::new();
    for step in &row.steps {
        match step {
            Step::Apply(m) | Step::Create(m) => manifests.push(&m.manifest),
            Step::Patch { target, .. } | Step::Delete { target, .. } | Step::Scale { target, .. } => {
                targets.push(&target.kind)
            }
            Step::Advance(_) | Step::Wait(_) | Step::Knob { .. } | Step::Bind { .. } => {}
        }
    }
    let documents: Vec<Value> =
        manifests.into_iter().filter_map(|m| load_manifests(fixtures_dir, m).ok()).flatten().collect();
    let written = documents.iter().filter_map(|d| d.get("kind").and_then(Value::as_str));
    written.chain(targets).filter(|k| kinds.is_cluster_scoped(k)).map(str::to_string).collect()
}

/// Hands out rows to worker threads, in order, except that a row waits while another row that
/// writes one of its cluster-scoped kinds runs.
pub struct TurnTaker {
    state: Mutex<Turns>,
    changed: Condvar,
}

struct Turns {
    /// Rows not yet started, by index, with the kinds each writes.
    pending: VecDeque<(usize, BTreeSet<String>)>,
    /// Kinds written by the rows running now.
    busy: BTreeSet<String>,
}

impl TurnTaker {
    /// Turns for rows whose cluster-scoped writes are `footprints`, in order.
    pub fn new(footprints: Vec<BTreeSet<String>>) -> Self {
        let pending = footprints.into_iter().enumerate().collect();
        Self { state: Mutex::new(Turns { pending, busy: BTreeSet::new() }), changed: Condvar::new() }
    }

    /// The next row this thread may run, waiting while every pending row collides with a
    /// running one; `None` when no row is left.
    pub fn next(&self) -> Option<(usize, BTreeSet<String>)> {
        let mut turns = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if turns.pending.is_empty() {
                return None;
            }
            let free = turns.pending.iter().position(|(_, kinds)| kinds.is_disjoint(&turns.busy));
            if let Some(i) = free
                && let Some((row, kinds)) = turns.pending.remove(i)
            {
                turns.busy.extend(kinds.iter().cloned());
                return Some((row, kinds));
            }
            turns = self.changed.wait(turns).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// The row holding `kinds` finished: its kinds are free again.
    pub fn done(&self, kinds: &BTreeSet<String>) {
        let mut turns = self.state.lock().unwrap_or_else(|e| e.into_inner());
        for k in kinds {
            turns.busy.remove(k);
        }
        self.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(kinds: &[&str]) -> BTreeSet<String> {
        kinds.iter().map(|k| k.to_string()).collect()
    }

    #[test]
    fn colliding_rows_wait_and_others_go_ahead() {
        let turns =
            TurnTaker::new(vec![set(&["ClusterQueue"]), set(&["ClusterQueue"]), set(&[]), set(&["DeviceClass"])]);
        let (a, held) = turns.next().expect("row 0");
        assert_eq!(a, 0);
        // Row 1 collides with row 0: rows 2 and 3 go first.
        assert_eq!(turns.next().map(|(i, _)| i), Some(2));
        assert_eq!(turns.next().map(|(i, _)| i), Some(3));
        turns.done(&held);
        assert_eq!(turns.next().map(|(i, _)| i), Some(1));
        assert_eq!(turns.next().map(|(i, _)| i), None);
    }

    #[test]
    fn a_waiting_thread_wakes_when_the_kind_is_free() {
        let turns = std::sync::Arc::new(TurnTaker::new(vec![set(&["Cohort"]), set(&["Cohort"])]));
        let (_, held) = turns.next().expect("row 0");
        let waiter = {
            let turns = turns.clone();
            std::thread::spawn(move || turns.next().map(|(i, _)| i))
        };
        turns.done(&held);
        assert_eq!(waiter.join().expect("the waiter"), Some(1));
    }
}
