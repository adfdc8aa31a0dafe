//! Harness budgets (DESIGN.md): the whole fake-backend catalogue under 10 s wall on 2 cores,
//! one row in virtual time under 200 ms wall, a row that advances an hour of virtual time
//! under 100 ms wall, and — when the upstream components are built — the fake backend's
//! speed-up over the upstream backend on the same rows in the same run (at least 100×), with the
//! upstream control plane's start time. Run: `cargo bench -p kproof --bench catalogue`.

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use kproof::backend::{Backend, RunOptions};
use kproof::report::result::Outcome;
use kproof::suite::{load_suite_dir, load_suite_str};
use std::path::Path;
use std::time::Instant;

fn main() {
    // `cargo test --benches` runs this without `--bench`: a smoke run only.
    let full = std::env::args().any(|a| a == "--bench");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let suites = load_suite_dir(&root.join("suites")).expect("the catalogue loads");
    let opts = RunOptions { fixtures_dir: root.join("fixtures"), ..Default::default() };
    let backend = kproof::backend::InProcessBackend::reference();
    let rows = kproof::engine::selection::selected(&suites, &Default::default());
    let rounds = if full { 5 } else { 1 };

    let mut catalogue_ms = Vec::new();
    // Each row's wall time in every round; a row's figure is its median over the rounds, so one
    // round in which a row shared the cores with a heavy neighbour does not decide it.
    let mut row_rounds: Vec<(String, Vec<u64>, u64)> = Vec::new();
    for _ in 0..rounds {
        let start = Instant::now();
        let results = kproof::backend::run_rows(&backend, &rows, &opts, 2, &|_| {});
        catalogue_ms.push(start.elapsed().as_secs_f64() * 1000.0);
        assert!(results.iter().all(|r| r.outcome != Outcome::Failed), "the catalogue passes");
        for r in &results {
            match row_rounds.iter_mut().find(|(name, _, _)| *name == r.name()) {
                Some((_, walls, _)) => walls.push(r.wall_ms),
                None => row_rounds.push((r.name(), vec![r.wall_ms], r.backend_ms)),
            }
        }
    }
    catalogue_ms.sort_by(f64::total_cmp);
    let row_ms: Vec<(String, u64, u64)> = row_rounds
        .into_iter()
        .map(|(name, mut walls, virt)| {
            walls.sort_unstable();
            (name, walls[walls.len() / 2], virt)
        })
        .collect();

    let hour = "suite: bench\ntitle: one hour\nrows:\n  - id: hour\n    title: an hour passes\n    kind: behaviour\n    source: harness/benches/catalogue.rs\n    steps:\n      - apply: {inline: {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}}\n      - advance: 1h\n    expect:\n      - eventually: {target: {apiVersion: v1, kind: ConfigMap, name: c}}\n";
    let hour_suite = load_suite_str(Path::new("bench.yaml"), hour).expect("inline suite");
    let mut hour_ms = Vec::new();
    let mut hour_backend = 0;
    for _ in 0..(if full { 20 } else { 1 }) {
        let r = backend.run_row(&hour_suite, &hour_suite.suite.rows[0], &opts);
        assert_eq!(r.outcome, Outcome::Passed);
        hour_ms.push(r.wall_ms);
        hour_backend = r.backend_ms;
    }
    hour_ms.sort();

    let median = catalogue_ms[catalogue_ms.len() / 2];
    let slowest = row_ms.iter().map(|r| r.1).max().unwrap_or(0);
    let verdict = |ok: bool| {
        if !full {
            "smoke"
        } else if ok {
            "PASS"
        } else {
            "MISS"
        }
    };
    println!("| measurement | value | budget | result |");
    println!("|---|---|---|---|");
    println!(
        "| whole catalogue, {} rows, 2 jobs (median of {rounds}) | {median:.1} ms | < 10,000 ms | {} |",
        rows.len(),
        verdict(median < 10_000.0)
    );
    println!(
        "| slowest row (wall, median of {rounds} per row) | {slowest} ms | < 200 ms | {} |",
        verdict(slowest < 200)
    );
    println!(
        "| row advancing 1h virtual (median of {}, backend clock {} ms) | {} ms | < 100 ms | {} |",
        hour_ms.len(),
        hour_backend,
        hour_ms[hour_ms.len() / 2],
        verdict(hour_ms[hour_ms.len() / 2] < 100)
    );
    if full {
        upstream_comparison(&suites, &opts, &backend);
    }
    println!();
    println!("| row | wall ms (median of {rounds}) | backend (virtual) ms |");
    println!("|---|---|---|");
    for (name, wall, virt) in &row_ms {
        println!("| {name} | {wall} | {virt} |");
    }
}

/// The RayCluster table on the upstream backend and on the fake one, same rows, same run: the
/// rows that pass on both count; the speed-up is the ratio of their summed wall times.
fn upstream_comparison(
    suites: &[kproof::suite::LoadedSuite],
    opts: &RunOptions,
    fake: &kproof::backend::InProcessBackend,
) {
    use kproof::backend::upstream::{self, PlaneOptions, UpstreamBackend};
    let build = match upstream::build::locate(&upstream::default_upstream_dir()) {
        Ok(b) if b.require(upstream::build::REQUIRED).is_ok() => b,
        Ok(b) => return println!("| upstream comparison | skipped: not built in {} | | |", b.dir.display()),
        Err(e) => return println!("| upstream comparison | skipped: {e} | | |"),
    };
    let mut starts = Vec::new();
    for _ in 0..2 {
        let started = Instant::now();
        match UpstreamBackend::start(PlaneOptions::new(build.clone())) {
            Ok(b) => {
                starts.push(started.elapsed().as_secs_f64());
                drop(b.stop());
            }
            Err(e) => return println!("| upstream comparison | skipped: the control plane did not start: {e} | | |"),
        }
    }
    let backend = match UpstreamBackend::start(PlaneOptions::new(build)) {
        Ok(b) => b,
        Err(e) => return println!("| upstream comparison | skipped: the control plane did not start: {e} | | |"),
    };
    let sel = kproof::engine::selection::Selection { suites: vec!["raycluster".into()], rows: vec![] };
    let rows = kproof::engine::selection::selected(suites, &sel);
    let up_opts = RunOptions { default_timeout: std::time::Duration::from_secs(60), ..opts.clone() };
    let started = Instant::now();
    let on_upstream = kproof::backend::run_rows(&backend, &rows, &up_opts, 4, &|_| {});
    let upstream_wall = started.elapsed().as_secs_f64();
    let versions = backend.components();
    drop(backend.stop());
    let passed_upstream: Vec<&str> =
        on_upstream.iter().filter(|r| r.outcome == Outcome::Passed).map(|r| r.id.as_str()).collect();
    let same: Vec<_> = rows.iter().filter(|(_, r)| passed_upstream.contains(&r.id.as_str())).cloned().collect();
    let started = Instant::now();
    let on_fake = kproof::backend::run_rows(fake, &same, opts, 4, &|_| {});
    let fake_wall = started.elapsed().as_secs_f64();
    assert!(on_fake.iter().all(|r| r.outcome == Outcome::Passed), "the same rows pass on the fake backend");
    let up_rows: u64 = on_upstream.iter().filter(|r| r.outcome == Outcome::Passed).map(|r| r.wall_ms).sum();
    let fake_rows: u64 = on_fake.iter().map(|r| r.wall_ms).sum();
    let speedup = up_rows as f64 / fake_rows.max(1) as f64;
    println!(
        "| upstream control plane start (first, second in this process) | {:.1} s, {:.1} s | report | - |",
        starts[0], starts[1]
    );
    println!(
        "| raycluster table, {} of {} rows passing on upstream ({}) | upstream {upstream_wall:.1} s wall (rows {up_rows} ms), fake {fake_wall:.2} s wall (rows {fake_rows} ms) | speed-up >= 100x | {speedup:.0}x {} |",
        same.len(),
        rows.len(),
        versions.iter().map(|(c, v)| format!("{c} {v}")).collect::<Vec<_>>().join(", "),
        if speedup >= 100.0 { "PASS" } else { "MISS" }
    );
}
