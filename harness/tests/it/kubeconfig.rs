//! The kubeconfig backend against the fake server over TCP (`kproof serve`), in real time:
//! the catalogue's rows pass there or are skipped with a reason, never passed unrun.

use kproof::backend::{Backend, KubeconfigBackend, RunOptions};
use kproof::report::result::Outcome;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Serve(Child);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `kproof serve` writing `kubeconfig` and waits until it has.
fn serve(kubeconfig: &Path) -> Serve {
    let serve = Serve(
        Command::new(env!("CARGO_BIN_EXE_kproof"))
            .args(["serve", "--port", "0", "--kubeconfig"])
            .arg(kubeconfig)
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let start = Instant::now();
    while !kubeconfig.exists() {
        assert!(start.elapsed() < Duration::from_secs(20), "kproof serve wrote no kubeconfig");
        std::thread::sleep(Duration::from_millis(20));
    }
    serve
}

/// A `kproof serve` with the catalogue, a kubeconfig backend reaching it, and run options.
struct Served {
    _dir: tempfile::TempDir,
    _serve: Serve,
    kubeconfig: std::path::PathBuf,
    suites: Vec<kproof::suite::LoadedSuite>,
    backend: KubeconfigBackend,
    opts: RunOptions,
}

fn served() -> Served {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let serve = serve(&kubeconfig);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let suites = kproof::suite::load_suite_dir(&root.join("suites")).unwrap();
    let backend = KubeconfigBackend::new(Some(kubeconfig.clone())).unwrap();
    let opts = RunOptions {
        fixtures_dir: root.join("fixtures"),
        default_timeout: Duration::from_secs(20),
        ..Default::default()
    };
    Served { _dir: dir, _serve: serve, kubeconfig, suites, backend, opts }
}

#[test]
fn the_catalogue_runs_on_the_kubeconfig_backend_against_kproof_serve() {
    let Served { suites, backend, opts, _serve, _dir, .. } = served();
    // RayCluster rows wait on real time (kubelet delays, `consistently` windows), so they run
    // four at once, each in its own namespace (four rows' pods fit the default node pool). The
    // API rows share a cluster-scoped CRD fixture, so they run one at a time.
    let mut results = Vec::new();
    for (suite, jobs) in [("apiserver", 1), ("raycluster", 4)] {
        let sel = kproof::engine::selection::Selection { suites: vec![suite.into()], rows: vec![] };
        let rows = kproof::engine::selection::selected(&suites, &sel);
        results.extend(kproof::backend::run_rows(&backend, &rows, &opts, jobs, &|_| {}));
    }
    let mut passed: std::collections::BTreeMap<String, usize> = Default::default();
    for r in results {
        println!("{:?} {} {}", r.outcome, r.name(), r.reason.clone().unwrap_or_default());
        match r.outcome {
            Outcome::Passed => *passed.entry(r.suite.clone()).or_default() += 1,
            Outcome::Skipped => {
                assert!(r.reason.as_deref().is_some_and(|w| w.starts_with("backend kubeconfig lacks")), "{r:?}")
            }
            Outcome::Failed => {
                panic!("{} failed on the kubeconfig backend:\n{}", r.name(), r.failure.unwrap_or_default())
            }
        }
    }
    assert!(passed.get("apiserver").copied().unwrap_or(0) >= 5, "API rows run in real time too: {passed:?}");
    // kproof serve runs KubeRay, the scheduler and the kubelet, so the RayCluster table runs there
    // except the rows that need in-process-only capabilities (verbs of writes, settings).
    assert!(
        passed.get("raycluster").copied().unwrap_or(0) >= 20,
        "RayCluster rows pass against kproof serve: {passed:?}"
    );
}

#[test]
fn an_unreachable_cluster_fails_rows_with_a_clear_reason() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    // Port 9 (discard) on loopback: nothing listens there.
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: 'http://127.0.0.1:9'}\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\nusers:\n- name: u\n  user: {}\n",
    )
    .unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let suites = kproof::suite::load_suite_dir(&root.join("suites")).unwrap();
    let backend = KubeconfigBackend::new(Some(kubeconfig)).unwrap();
    let row = &suites[0].suite.rows[0];
    let r = backend.run_row(&suites[0], row, &RunOptions::default());
    assert_eq!(r.outcome, Outcome::Failed);
    assert!(r.reason.as_deref().is_some_and(|w| w.contains("cannot create namespace")), "{r:?}");
}

/// Every object the cluster serves (`resource.group namespace/name`), Events left out: they
/// record what happened and expire by TTL (kube-apiserver's `--event-ttl`, one hour).
async fn objects(client: &kube::Client) -> std::collections::BTreeSet<String> {
    use kube::api::{Api, DynamicObject};
    let discovery = kube::Discovery::new(client.clone()).run_aggregated().await.unwrap();
    let mut all = std::collections::BTreeSet::new();
    for group in discovery.groups() {
        for (ar, caps) in group.recommended_resources() {
            if ar.kind == "Event" || !caps.supports_operation(kube::discovery::verbs::LIST) {
                continue;
            }
            let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
            for o in api.list(&Default::default()).await.unwrap() {
                let ns = o.metadata.namespace.unwrap_or_default();
                all.insert(format!("{}.{} {ns}/{}", ar.plural, ar.group, o.metadata.name.unwrap_or_default()));
            }
        }
    }
    all
}

#[test]
fn after_api_and_kueue_rows_against_kproof_serve_only_what_it_started_with_is_left() {
    let Served { suites, backend, opts, kubeconfig, _serve, _dir } = served();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let client = runtime.block_on(async {
        let config = kube::Config::from_custom_kubeconfig(
            kube::config::Kubeconfig::read_from(&kubeconfig).unwrap(),
            &Default::default(),
        )
        .await
        .unwrap();
        kube::Client::try_from(config).unwrap()
    });
    let before = runtime.block_on(objects(&client));
    // Rows that make cluster-scoped objects: the API table's CRD, Kueue's ResourceFlavor (the
    // same `default` for every row: shared, deleted by the last row that touched it) and each
    // row's own ClusterQueue (`cluster-queue-${row}`).
    let kueue_rows = [
        "kq-raycluster-runs-when-admitted",
        "kq-raycluster-waits-for-quota-best-effort-fifo",
        "kq-rayjob-runs-when-admitted",
        "kq-webhook-queue-name-is-immutable-while-the-job-runs",
        "kq-webhook-create-refuses-a-queue-name-not-a-dns-subdomain",
    ];
    let mut results = Vec::new();
    for (suite, row_ids) in [("apiserver", vec![]), ("kueue", kueue_rows.map(String::from).to_vec())] {
        let sel = kproof::engine::selection::Selection { suites: vec![suite.into()], rows: row_ids };
        let rows = kproof::engine::selection::selected(&suites, &sel);
        results.extend(kproof::backend::run_rows(&backend, &rows, &opts, 1, &|_| {}));
    }
    for r in results.iter().filter(|r| r.outcome == Outcome::Failed) {
        println!("failed: {} {}", r.name(), r.failure.clone().unwrap_or_default().lines().next().unwrap_or_default());
    }
    let ran = results.iter().filter(|r| r.outcome != Outcome::Skipped).count();
    let passed = results.iter().filter(|r| r.outcome == Outcome::Passed).count();
    // Deletions finish (finalizers, namespace cleanup) shortly after the last row.
    let settle = Instant::now();
    let mut after = runtime.block_on(objects(&client));
    while after != before && settle.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(200));
        after = runtime.block_on(objects(&client));
    }
    println!(
        "{} rows, {ran} ran ({passed} passed); objects before: {}, after: {}",
        results.len(),
        before.len(),
        after.len()
    );
    assert!(ran >= 10, "the API rows and the Kueue rows run against kproof serve: {ran} ran");
    let left: Vec<&String> = after.difference(&before).collect();
    let gone: Vec<&String> = before.difference(&after).collect();
    assert!(left.is_empty() && gone.is_empty(), "left behind: {left:#?}\ngone: {gone:#?}");
}

/// A row that fails while it holds an object with a finalizer of its own (`kproof.dev/hold`)
/// must not leave its namespace terminating: the cleanup lets go of the hold first.
#[test]
fn a_row_that_fails_holding_a_finalizer_leaves_nothing_behind() {
    let Served { backend, opts, kubeconfig, _serve, _dir, .. } = served();
    let suite = kproof::suite::load_suite_str(
        Path::new("held.yaml"),
        r#"suite: held
title: a row that fails while it holds a ConfigMap
rows:
  - id: fails-holding
    title: holds a ConfigMap with a finalizer, then fails
    kind: behaviour
    source: https://kubernetes.io/docs/concepts/overview/working-with-objects/finalizers/
    steps:
      - apply:
          inline: {apiVersion: v1, kind: ConfigMap, metadata: {name: held, finalizers: [kproof.dev/hold]}}
    expect:
      - eventually:
          target: {apiVersion: v1, kind: ConfigMap, name: held}
          within: 1s
          match: [{path: data.never, exists: true}]
"#,
    )
    .unwrap();
    let result = backend.run_row(&suite, &suite.suite.rows[0], &opts);
    assert_eq!(result.outcome, Outcome::Failed, "{result:?}");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let client = kproof::backend::upstream::client_from(&kubeconfig).await.unwrap();
        let namespaces: kube::Api<k8s_openapi::api::core::v1::Namespace> = kube::Api::all(client);
        let start = Instant::now();
        loop {
            let left: Vec<String> = namespaces
                .list(&Default::default())
                .await
                .unwrap()
                .items
                .into_iter()
                .filter_map(|n| n.metadata.name)
                .filter(|n| n.starts_with("kproof-fails-holding"))
                .collect();
            if left.is_empty() {
                break;
            }
            assert!(start.elapsed() < Duration::from_secs(30), "the row's namespace is still there: {left:?}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
}
