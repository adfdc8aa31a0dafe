//! The tables measured against wrong controllers: every row of the catalogue runs against the
//! reference components built with each deliberate defect (cargo feature `defects` of
//! `controllers`, enabled through this target's dev-dependency) whose component the row runs,
//! and the report says, per row, which defects it catches. Two kinds of defect:
//!
//! - the plausible regressions each component can be built with (`ServerDefect` of the fake
//!   API server, `Defect` of KubeRay, `KueueDefect`, `DraDefect`), run on the table of that
//!   component;
//! - an absent controller: the component under test installs its CRDs but never reconciles
//!   (a controller that crashed at start or was never deployed). A row that passes without the
//!   controller it is about checks nothing of it.
//!
//! A row that no defect fails checks nothing a plausible regression of the reference could
//! break: it must be listed, with the reason, in `defects-uncaught.yaml` beside this file, and a
//! listed row that now catches a defect must leave the list. Every defect must be caught by at
//! least one row. The report is written to `target/kproof/defects.md`.

use controllers::dra::DraDefect;
use controllers::kuberay::{Defect, KubeRayConfig};
use controllers::kueue::{KueueConfig, KueueDefect};
use fake_apiserver::ServerDefect;
use kproof::actors::{Actor, ActorFactory};
use kproof::actors::{
    DraBase, KubeRayFactory, KubeletFactory, KueueFactory, PodGroupProtectionFactory, ResourceClaimControllerFactory,
    SchedulerFactory,
};
use kproof::backend::{InProcessBackend, RunOptions};
use kproof::report::result::Outcome;
use kproof::suite::{ActorName, LoadedSuite, Row};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

/// Which rows a defect runs on, from the row's table and the row.
type Applies = Box<dyn Fn(&str, &Row) -> bool>;

/// One deliberate defect: its name, the backend whose components carry it, and which rows it
/// is run on.
struct Defective {
    name: String,
    backend: InProcessBackend,
    applies_to: Applies,
}

/// Rows of table `suite` (any table, for `""`) that run `actor`.
fn in_table(suite: &'static str, actor: ActorName) -> Applies {
    Box::new(move |s, r| (suite.is_empty() || s == suite) && r.needs.actors().contains(&actor))
}

/// The table a KubeRay defect belongs to: the RayService controller's or the RayCluster one's.
fn kuberay_table(d: Defect) -> &'static str {
    match d {
        Defect::TrafficBeforePendingReady
        | Defect::TargetCapacityPastMaxSurge
        | Defect::RollbackWaitsForUnhealthyPending
        | Defect::NoDeletionDelay => "rayservice",
        Defect::HashIncludesReplicas
        | Defect::CreateDuringRecreate
        | Defect::NoVersionSkip
        | Defect::NonAtomicSuspend
        | Defect::TerminalPodKeptWithRestartAlways
        | Defect::ExtraHeadPodsDeleted => "raycluster",
    }
}

/// The controllers the tables are about: each is made absent in turn.
const UNDER_TEST: [ActorName; 5] = [
    ActorName::Kuberay,
    ActorName::Kueue,
    ActorName::ResourceClaimController,
    ActorName::PodGroupProtection,
    ActorName::DeviceTaintEviction,
];

fn defects() -> Vec<Defective> {
    let mut all = Vec::new();
    for actor in UNDER_TEST {
        all.push(Defective {
            name: format!("absent::{actor}"),
            backend: InProcessBackend::reference().with_actor(Arc::new(AbsentController(reference(actor)))),
            applies_to: in_table("", actor),
        });
    }
    // The DRA table is as much about kube-scheduler's DRA plugin (allocation, reservation,
    // PostFilter) as about the controllers: its stand-in is made absent there.
    all.push(Defective {
        name: "absent::scheduler".into(),
        backend: InProcessBackend::reference().with_actor(Arc::new(AbsentController(reference(ActorName::Scheduler)))),
        applies_to: in_table("dra", ActorName::Scheduler),
    });
    // A component's defects run on its own table (the Kueue table runs KubeRay too, but a
    // regression of the RayCluster controller is the RayCluster table's to catch). Running each
    // on every row that runs the component would take five times as long.
    for d in ServerDefect::ALL {
        all.push(Defective {
            name: format!("kube-apiserver::{d:?}"),
            backend: InProcessBackend::reference().with_server_defect(d),
            applies_to: Box::new(|s, _| s == "apiserver"),
        });
    }
    for d in Defect::ALL {
        let base = KubeRayConfig { defect: Some(d), ..KubeRayConfig::default() };
        all.push(Defective {
            name: format!("kuberay::{d:?}"),
            backend: InProcessBackend::reference().with_actor(Arc::new(KubeRayFactory::with_base(base))),
            applies_to: in_table(kuberay_table(d), ActorName::Kuberay),
        });
    }
    for d in KueueDefect::ALL {
        let base = KueueConfig { defect: Some(d), ..KueueConfig::default() };
        all.push(Defective {
            name: format!("kueue::{d:?}"),
            backend: InProcessBackend::reference().with_actor(Arc::new(KueueFactory { base })),
            applies_to: in_table("kueue", ActorName::Kueue),
        });
    }
    for d in DraDefect::ALL {
        // Each DRA defect lives in one of these components; all of them carry it.
        let base = DraBase::with_tweak(move |c| c.defect = Some(d));
        all.push(Defective {
            name: format!("dra::{d:?}"),
            backend: InProcessBackend::reference()
                .with_actor(Arc::new(ResourceClaimControllerFactory(base.clone())))
                .with_actor(Arc::new(PodGroupProtectionFactory(base.clone())))
                .with_actor(Arc::new(SchedulerFactory(base.clone())))
                .with_actor(Arc::new(KubeletFactory::default().with_dra(base))),
            applies_to: Box::new(|s, r| s == "dra" && r.needs.dra.profile.is_some()),
        });
    }
    all
}

/// The reference factory of `actor`.
fn reference(actor: ActorName) -> Arc<dyn ActorFactory> {
    kproof::actors::reference_actors()
        .into_iter()
        .find(|f| f.name() == actor)
        .unwrap_or_else(|| panic!("{actor} is not a reference actor"))
}

/// A controller that is installed (its CRDs are there) but never reconciles and serves no
/// webhooks: what a cluster has when the operator crashed at start.
struct AbsentController(Arc<dyn ActorFactory>);

/// What an absent controller runs: nothing. Knobs are accepted and do nothing.
struct Idle;

impl Actor for Idle {
    fn knob(&mut self, _knob: &str, _value: &serde_json::Value) -> Result<(), String> {
        Ok(())
    }
}

impl ActorFactory for AbsentController {
    fn name(&self) -> ActorName {
        self.0.name()
    }
    fn setup(&self, client: kube::Client) -> futures::future::BoxFuture<'static, Result<(), String>> {
        self.0.setup(client)
    }
    /// What the component's installation ships stays when its controller crashed.
    fn installs(&self) -> Vec<serde_json::Value> {
        self.0.installs()
    }
    fn start(
        &self,
        _client: kube::Client,
        _clock: controllers::Clock,
        _needs: &kproof::suite::Needs,
        _network: &controllers::sim::SimNetwork,
    ) -> Result<Box<dyn Actor>, String> {
        Ok(Box::new(Idle))
    }
    fn models(&self) -> Option<(kproof::suite::Component, kproof::suite::Version)> {
        self.0.models()
    }
    fn facts(&self, needs: &kproof::suite::Needs) -> BTreeMap<String, String> {
        self.0.facts(needs)
    }
}

#[test]
fn every_row_catches_a_defect_or_says_why_not() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let suites = kproof::suite::load_suite_dir(&root.join("suites")).expect("the catalogue loads");
    let opts = RunOptions { fixtures_dir: root.join("fixtures"), flight_dir: None, ..Default::default() };
    let rows: Vec<(&LoadedSuite, &Row)> =
        suites.iter().flat_map(|s| s.suite.rows.iter().map(move |r| (s, r))).collect();
    let jobs = std::thread::available_parallelism().map(usize::from).unwrap_or(2);

    // Row name -> the defects it caught.
    let mut caught: BTreeMap<String, Vec<String>> =
        rows.iter().map(|(s, r)| (format!("{}::{}", s.suite.suite, r.id), Vec::new())).collect();
    let mut uncaught_defects = Vec::new();
    for defect in defects() {
        let affected: Vec<(&LoadedSuite, &Row)> =
            rows.iter().copied().filter(|(s, r)| (defect.applies_to)(&s.suite.suite, r)).collect();
        assert!(!affected.is_empty(), "{}: no row runs the defective component", defect.name);
        let results = kproof::backend::run_rows(&defect.backend, &affected, &opts, jobs, &|_| {});
        let mut failed = 0;
        for r in results {
            assert_ne!(r.outcome, Outcome::Skipped, "{}: {} skipped: {:?}", defect.name, r.name(), r.reason);
            if r.outcome == Outcome::Failed {
                failed += 1;
                if let Some(list) = caught.get_mut(&r.name()) {
                    list.push(defect.name.clone());
                }
            }
        }
        println!("{}: {failed} of {} rows fail", defect.name, affected.len());
        if failed == 0 {
            uncaught_defects.push(defect.name);
        }
    }

    let reasons: BTreeMap<String, String> = serde_saphyr::from_str(
        &std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/defects-uncaught.yaml"))
            .expect("defects-uncaught.yaml is readable"),
    )
    .expect("defects-uncaught.yaml maps row names to reasons");
    let catching = caught.values().filter(|d| !d.is_empty()).count();
    let report = render(&caught, &reasons, catching);
    let out = root.join("target").join("kproof");
    std::fs::create_dir_all(&out).expect("target/kproof");
    std::fs::write(out.join("defects.md"), &report).expect("write the report");
    println!("{report}");

    assert!(uncaught_defects.is_empty(), "defects no row catches: {uncaught_defects:?}");
    let uncaught: Vec<&String> = caught.iter().filter(|(_, d)| d.is_empty()).map(|(r, _)| r).collect();
    let unexplained: Vec<&&String> = uncaught.iter().filter(|r| !reasons.contains_key(r.as_str())).collect();
    assert!(
        unexplained.is_empty(),
        "rows no defect fails, without a reason in defects-uncaught.yaml (add a defect they catch, or the reason): {unexplained:#?}"
    );
    let stale: Vec<&String> = reasons.keys().filter(|r| caught.get(*r).is_none_or(|d| !d.is_empty())).collect();
    assert!(stale.is_empty(), "listed in defects-uncaught.yaml but caught now, or no such row: {stale:#?}");
    assert!(reasons.values().all(|why| !why.trim().is_empty()), "every listed row gives its reason");
}

/// The report: the figure, then each row with the defects it catches or the reason none does.
fn render(caught: &BTreeMap<String, Vec<String>>, reasons: &BTreeMap<String, String>, catching: usize) -> String {
    let mut out = format!(
        "# Rows against deliberate defects\n\n{catching} of {} rows catch at least one defect.\n\n| row | defects caught |\n|---|---|\n",
        caught.len()
    );
    for (row, defects) in caught {
        let cell = if defects.is_empty() {
            format!("none: {}", reasons.get(row).map(String::as_str).unwrap_or("(no reason given)"))
        } else {
            defects.join(", ")
        };
        let _ = writeln!(out, "| {row} | {cell} |");
    }
    out
}
