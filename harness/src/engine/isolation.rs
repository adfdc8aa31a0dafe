//! Rows side by side on one shared cluster (the kubeconfig and upstream backends). Each row has
//! a namespace of its own, but cluster-scoped objects (ClusterQueues, ResourceFlavors, Cohorts,
//! DeviceClasses, ...) exist once per cluster. A row that names such an object after itself
//! (`cluster-queue-${row}`, `taint1-${namespace}`) has it to itself. Two rows that write the same
//! object run at once only when both apply it with the same content (a ResourceFlavor `default`:
//! the first creates it, the second finds it as it wants it); any other pair of rows that write
//! the same object (or objects of a kind by selector) takes turns, the others run in parallel.

use crate::suite::kinds::KindCatalog;
use crate::suite::{LoadedSuite, Manifest, Row, Step, load_manifests};
use serde_json::Value;
use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Condvar, Mutex};

/// Bindings that make a name the row's own: every row has a different value.
const PER_ROW: [&str; 2] = ["${row}", "${namespace}"];

/// A cluster-scoped object a row writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Write {
    kind: String,
    /// `None` when the row cannot say before it runs: objects picked by a selector, or a name
    /// bound while the row runs.
    name: Option<String>,
    /// What an apply or a fixture writes (its JSON); `None` for a create, patch, delete or scale,
    /// which no other row may do at the same time.
    content: Option<String>,
}

impl Write {
    /// Whether two rows writing `self` and `other` must not run at once.
    fn collides(&self, other: &Write) -> bool {
        let same_object = match (&self.name, &other.name) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        };
        let same_content = self.content.is_some() && self.content == other.content;
        self.kind == other.kind && same_object && !same_content
    }
}

/// The name as written in the row, `None` when a binding other than a per-row one fills it in.
fn known_name(name: &str) -> Option<String> {
    let unbound = PER_ROW.iter().fold(name.to_string(), |n, b| n.replace(b, ""));
    (!unbound.contains("${")).then(|| name.to_string())
}

/// Whether the name is the row's own.
fn per_row(name: &str) -> bool {
    PER_ROW.iter().any(|b| name.contains(b))
}

/// The cluster-scoped objects `row` writes that another row could write too: objects of its
/// suite's fixtures, its own fixtures and its apply and create steps, and the targets of its
/// patch, delete and scale steps; objects named after the row are left out. A manifest that
/// does not load writes nothing here (the row fails on it anyway).
pub fn cluster_scoped_writes(suite: &LoadedSuite, row: &Row, fixtures_dir: &Path, kinds: &KindCatalog) -> Vec<Write> {
    let applied = suite.suite.fixtures.iter().chain(&row.fixtures).map(|m| (m, true));
    let mut manifests: Vec<(&Manifest, bool)> = applied.collect();
    let mut writes = Vec::new();
    for step in &row.steps {
        match step {
            Step::Apply(m) => manifests.push((&m.manifest, true)),
            Step::Create(m) => manifests.push((&m.manifest, false)),
            Step::Patch { target, .. } | Step::Delete { target, .. } | Step::Scale { target, .. } => {
                writes.push(Write { kind: target.kind.clone(), name: target.name.clone(), content: None })
            }
            Step::Advance(_) | Step::Wait(_) | Step::Knob { .. } | Step::Bind { .. } => {}
        }
    }
    for (m, merges) in manifests {
        for doc in load_manifests(fixtures_dir, m).into_iter().flatten() {
            let kind = doc.get("kind").and_then(Value::as_str).unwrap_or_default().to_string();
            let name = doc.pointer("/metadata/name").and_then(Value::as_str).map(str::to_string);
            // Content with a binding in it differs from row to row.
            let content = Some(doc.to_string()).filter(|c| merges && !c.contains("${"));
            writes.push(Write { kind, name, content });
        }
    }
    writes.retain(|w| kinds.is_cluster_scoped(&w.kind) && !w.name.as_deref().is_some_and(per_row));
    for w in &mut writes {
        w.name = w.name.as_deref().and_then(known_name);
    }
    // The node pool's devices (the DRA driver stand-in's ResourceSlices) are the cluster's:
    // rows that allocate them take turns, or one row's claims leave another's pods without a
    // device (seen on upstream at `--jobs 4`: a group pod unschedulable for 30 s while other
    // rows held the free devices).
    if row.needs.actors().contains(&crate::suite::ActorName::DraDriver) {
        writes.push(Write { kind: "ResourceSlice".into(), name: None, content: None });
    }
    writes
}

/// Hands out rows to worker threads, in order, except that a row waits while another row whose
/// writes collide with its own runs.
pub struct TurnTaker {
    state: Mutex<Turns>,
    changed: Condvar,
}

struct Turns {
    /// Rows not yet started, by index, with what each writes.
    pending: VecDeque<(usize, Vec<Write>)>,
    /// The rows running now, with what each writes.
    running: Vec<(usize, Vec<Write>)>,
}

impl Turns {
    fn free(&self, writes: &[Write]) -> bool {
        !self.running.iter().flat_map(|(_, w)| w).any(|busy| writes.iter().any(|w| w.collides(busy)))
    }
}

impl TurnTaker {
    /// Turns for rows whose cluster-scoped writes are `footprints`, in order.
    pub fn new(footprints: Vec<Vec<Write>>) -> Self {
        let pending = footprints.into_iter().enumerate().collect();
        Self { state: Mutex::new(Turns { pending, running: Vec::new() }), changed: Condvar::new() }
    }

    /// The next row this thread may run, waiting while every pending row collides with a
    /// running one; `None` when no row is left.
    pub fn next(&self) -> Option<usize> {
        let mut turns = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if turns.pending.is_empty() {
                return None;
            }
            let free = turns.pending.iter().position(|(_, writes)| turns.free(writes));
            if let Some(i) = free
                && let Some((row, writes)) = turns.pending.remove(i)
            {
                turns.running.push((row, writes));
                return Some(row);
            }
            turns = self.changed.wait(turns).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Row `row` finished: what it wrote is free again.
    pub fn done(&self, row: usize) {
        let mut turns = self.state.lock().unwrap_or_else(|e| e.into_inner());
        turns.running.retain(|(r, _)| *r != row);
        self.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(kind: &str, name: Option<&str>, content: Option<&str>) -> Write {
        Write { kind: kind.into(), name: name.map(str::to_string), content: content.map(str::to_string) }
    }

    #[test]
    fn colliding_rows_wait_and_others_go_ahead() {
        let cq = || vec![write("ClusterQueue", Some("cq"), None)];
        let turns = TurnTaker::new(vec![cq(), cq(), vec![], vec![write("DeviceClass", Some("gpu"), None)]]);
        assert_eq!(turns.next(), Some(0));
        // Row 1 collides with row 0: rows 2 and 3 go first.
        assert_eq!(turns.next(), Some(2));
        assert_eq!(turns.next(), Some(3));
        turns.done(0);
        assert_eq!(turns.next(), Some(1));
        assert_eq!(turns.next(), None);
    }

    #[test]
    fn a_waiting_thread_wakes_when_the_object_is_free() {
        let cohort = || vec![write("Cohort", Some("team"), None)];
        let turns = std::sync::Arc::new(TurnTaker::new(vec![cohort(), cohort()]));
        assert_eq!(turns.next(), Some(0));
        let waiter = {
            let turns = turns.clone();
            std::thread::spawn(move || turns.next())
        };
        turns.done(0);
        assert_eq!(waiter.join().expect("the waiter"), Some(1));
    }

    #[test]
    fn the_same_apply_is_shared_and_anything_else_on_the_object_collides() {
        let flavor = |c| write("ResourceFlavor", Some("default"), c);
        assert!(!flavor(Some("{}")).collides(&flavor(Some("{}"))));
        assert!(flavor(Some("{}")).collides(&flavor(Some("{\"spec\":1}"))));
        assert!(flavor(Some("{}")).collides(&flavor(None)));
        assert!(flavor(None).collides(&write("ResourceFlavor", None, None)));
        assert!(!flavor(None).collides(&write("ResourceFlavor", Some("spot"), None)));
        assert!(!flavor(None).collides(&write("ClusterQueue", Some("default"), None)));
    }

    #[test]
    fn rows_that_allocate_the_node_pools_devices_take_turns() {
        let text = "suite: s\ntitle: s\nrows:\n\
          - {id: a, title: a, kind: behaviour, source: https://example.com, needs: {capabilities: [\"actor:dra-driver\"]}, steps: [], expect: []}\n\
          - {id: b, title: b, kind: behaviour, source: https://example.com, needs: {capabilities: [\"actor:dra-driver\", \"actor:scheduler\"]}, steps: [], expect: []}\n\
          - {id: c, title: c, kind: behaviour, source: https://example.com, needs: {capabilities: [\"actor:scheduler\"]}, steps: [], expect: []}\n";
        let suite = crate::suite::load_suite_str(Path::new("s.yaml"), text).expect("the suite loads");
        let kinds = crate::actors::kind_catalog();
        let writes: Vec<Vec<Write>> =
            suite.suite.rows.iter().map(|r| cluster_scoped_writes(&suite, r, Path::new("."), &kinds)).collect();
        assert!(writes[0].iter().any(|w| writes[1].iter().any(|v| w.collides(v))), "{writes:?}");
        assert!(writes[2].is_empty(), "{writes:?}");
    }

    #[test]
    fn names_of_the_row_own_are_left_out_and_other_bindings_match_any_name() {
        assert!(per_row("cluster-queue-${row}") && per_row("taint1-${namespace}") && !per_row("default"));
        assert_eq!(known_name("default"), Some("default".into()));
        assert_eq!(known_name("${claim}"), None);
    }
}
