//! Harness budgets (DESIGN.md): the whole fake-backend catalogue under 10 s wall on 2 cores,
//! one row in virtual time under 200 ms wall, and a row that advances an hour of virtual time
//! under 100 ms wall. Run: `cargo bench -p harness --bench catalogue`.

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
    let mut row_ms: Vec<(String, u64, u64)> = Vec::new();
    for _ in 0..rounds {
        let start = Instant::now();
        let results = kproof::backend::run_rows(&backend, &rows, &opts, 2, &|_| {});
        catalogue_ms.push(start.elapsed().as_secs_f64() * 1000.0);
        assert!(results.iter().all(|r| r.outcome != Outcome::Failed), "the catalogue passes");
        row_ms = results.iter().map(|r| (r.name(), r.wall_ms, r.backend_ms)).collect();
    }
    catalogue_ms.sort_by(f64::total_cmp);

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
    println!("| slowest row (wall) | {slowest} ms | < 200 ms | {} |", verdict(slowest < 200));
    println!(
        "| row advancing 1h virtual (median of {}, backend clock {} ms) | {} ms | < 100 ms | {} |",
        hour_ms.len(),
        hour_backend,
        hour_ms[hour_ms.len() / 2],
        verdict(hour_ms[hour_ms.len() / 2] < 100)
    );
    println!();
    println!("| row | wall ms | backend (virtual) ms |");
    println!("|---|---|---|");
    for (name, wall, virt) in &row_ms {
        println!("| {name} | {wall} | {virt} |");
    }
}
