//! Soak: mixed load against `fake-apiserver` over loopback TCP for half an hour (`--bench`;
//! `--secs N` for another length; without `--bench`, as `cargo test` runs it, 20 seconds).
//!
//! The server runs in a child process of its own, so the memory measured is the server's. It
//! streams its history (every write, from its timeline) to this process. Writers create,
//! update, patch (merge, strategic merge, JSON patch, apply) and delete ConfigMaps, each in a
//! namespace of its own, and list them in pages; watchers list in pages, watch, resume from the
//! last resourceVersion when a watch times out, and list again after 410 Gone (some pause long
//! enough to fall out of the history window). At the end every watcher's events and every list
//! are checked against the server's history: nothing lost, duplicated, reordered or invented.
//! Stalled watchers, which open a watch and read nothing, come and go in alternate phases, so
//! the write and delivery latencies of the two kinds of phase say whether they stall anyone.
//!
//! Exit status 1 when a check fails (or checked nothing); the figures go to stdout.

use fake_apiserver::{ApiServer, Config};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;
use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The shape of one soak run.
#[derive(Debug, Clone, Copy)]
struct Opts {
    secs: u64,
    /// Writers, each with a namespace of its own.
    writers: usize,
    /// Objects per writer.
    objects: usize,
    /// Writes per second over all writers.
    rate: u64,
    /// Watchers of one namespace.
    ns_watchers: usize,
    /// Watchers of every namespace.
    all_watchers: usize,
    /// Watchers that open a watch and read nothing, during stalled phases.
    stallers: usize,
    /// Length of a phase (stalled and free phases alternate).
    phase: Duration,
    /// The server's watch history window.
    history: usize,
    /// Longest `timeoutSeconds` of a watch (the shortest is a quarter of it).
    watch_timeout: u64,
    /// Until when memory is warming up (a fraction of the run).
    warm_up: f64,
}

impl Opts {
    fn full() -> Self {
        Self {
            secs: 1800,
            writers: 8,
            objects: 200,
            rate: 300,
            ns_watchers: 100,
            all_watchers: 10,
            stallers: 10,
            phase: Duration::from_secs(60),
            history: 5000,
            watch_timeout: 30,
            warm_up: 0.2,
        }
    }

    fn smoke() -> Self {
        Self {
            secs: 20,
            rate: 150,
            history: 600,
            phase: Duration::from_secs(4),
            watch_timeout: 6,
            warm_up: 0.3,
            ..Self::full()
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| -> Option<u64> {
        args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok())
    };
    if args.iter().any(|a| a == "--server-child") {
        server_child(value("--history").unwrap_or(5000) as usize);
        return;
    }
    // `cargo bench` passes `--bench`; a filter that does not name this benchmark skips it.
    let filters: Vec<&String> = args.iter().filter(|a| !a.starts_with('-') && a.parse::<u64>().is_err()).collect();
    if !filters.is_empty() && !filters.iter().any(|f| "soak".contains(f.as_str())) {
        return;
    }
    let mut opts = if args.iter().any(|a| a == "--bench") { Opts::full() } else { Opts::smoke() };
    if let Some(secs) = value("--secs") {
        opts.secs = secs;
    }
    let ok = run(opts);
    std::process::exit(if ok { 0 } else { 1 });
}

// ---------------------------------------------------------------------------------------------
// The server process

/// Serves on loopback, prints its URL, then every write of its timeline as
/// `rv change kind namespace name` lines; exits when its stdin closes (the parent is gone).
fn server_child(history: usize) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    rt.block_on(async move {
        let config = Config { history, timeline_capacity: 50_000, ..Config::default() };
        let server = ApiServer::new(config);
        let tcp = server.serve_tcp(([127, 0, 0, 1], 0).into()).await.expect("serve_tcp");
        println!("soak-server {}", tcp.url());
        std::thread::spawn(|| {
            let mut sink = String::new();
            while std::io::stdin().read_line(&mut sink).map(|n| n > 0).unwrap_or(false) {}
            std::process::exit(0);
        });
        let mut last = 0;
        let mut out = std::io::stdout().lock();
        loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
            for e in server.timeline_since(last) {
                let ns = if e.namespace.is_empty() { "-" } else { &e.namespace };
                let _ = writeln!(out, "{} {} {} {} {}", e.resource_version, e.change.as_str(), e.kind, ns, e.name);
                last = e.resource_version;
            }
            let _ = out.flush();
        }
    });
}

/// The server's history as this process has received it.
#[derive(Default)]
struct History {
    /// ConfigMap writes, in resourceVersion order.
    writes: Vec<Ev>,
    /// The last resourceVersion received (any kind).
    last: u64,
    /// Times a resourceVersion did not follow the one before by exactly one.
    gaps: u64,
}

fn start_server(history: usize) -> (Child, String, Arc<Mutex<History>>) {
    let mut child = Command::new(std::env::current_exe().expect("current exe"))
        .args(["--server-child", "--history", &history.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the server process");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let first = lines.next().and_then(Result::ok).unwrap_or_default();
    let url = first.strip_prefix("soak-server ").unwrap_or_else(|| panic!("server said {first:?}")).to_string();
    let history = Arc::new(Mutex::new(History::default()));
    let sink = history.clone();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            let f: Vec<&str> = line.split(' ').collect();
            let (Some(rv), Some(change), Some(kind), Some(ns), Some(name)) = (
                f.first().and_then(|v| v.parse::<u64>().ok()),
                f.get(1).and_then(|c| change_code(c)),
                f.get(2),
                f.get(3),
                f.get(4),
            ) else {
                continue;
            };
            let mut h = sink.lock();
            if h.last != 0 && rv != h.last + 1 {
                h.gaps += 1;
            }
            h.last = rv;
            if *kind == "ConfigMap" {
                h.writes.push(Ev { rv, change, ns: ns_code(ns), obj: obj_code(name) });
            }
        }
    });
    (child, url, history)
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

// ---------------------------------------------------------------------------------------------
// Events, compactly: 16 bytes each, so half an hour of them fits.

/// One change of one ConfigMap, as the history or a watcher saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Ev {
    rv: u64,
    change: u8,
    /// The writer's index for `soak-N`, `u16::MAX` for any other namespace.
    ns: u16,
    /// N for `cm-N`, `u32::MAX` for any other name.
    obj: u32,
}

fn change_code(change: &str) -> Option<u8> {
    match change {
        "ADDED" => Some(0),
        "MODIFIED" => Some(1),
        "DELETED" => Some(2),
        _ => None,
    }
}

fn ns_code(ns: &str) -> u16 {
    ns.strip_prefix("soak-").and_then(|n| n.parse().ok()).unwrap_or(u16::MAX)
}

fn obj_code(name: &str) -> u32 {
    name.strip_prefix("cm-").and_then(|n| n.parse().ok()).unwrap_or(u32::MAX)
}

fn ev_of(change: u8, cm: &ConfigMap) -> Ev {
    Ev {
        rv: rv_of(cm),
        change,
        ns: ns_code(cm.metadata.namespace.as_deref().unwrap_or_default()),
        obj: obj_code(cm.metadata.name.as_deref().unwrap_or_default()),
    }
}

fn rv_of(cm: &ConfigMap) -> u64 {
    cm.metadata.resource_version.as_deref().and_then(|v| v.parse().ok()).unwrap_or(0)
}

fn now_nanos() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
}

// ---------------------------------------------------------------------------------------------
// The load

/// What every task shares.
struct Shared {
    opts: Opts,
    started: Instant,
    stop: AtomicBool,
    too_many_requests: AtomicU64,
    /// Writes acknowledged so far, over all writers.
    acknowledged: AtomicU64,
    errors: Mutex<BTreeMap<String, u64>>,
}

impl Shared {
    /// Whether the run is in a phase where the stalled watchers hold their watches.
    fn stalled(&self) -> bool {
        (self.started.elapsed().as_millis() / self.opts.phase.as_millis().max(1)) % 2 == 1
    }

    fn error(&self, what: String) {
        *self.errors.lock().entry(what).or_default() += 1;
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// Latency samples in microseconds, by name and by phase (free, stalled).
#[derive(Default)]
struct Latencies(BTreeMap<&'static str, [Vec<u32>; 2]>);

impl Latencies {
    fn add(&mut self, what: &'static str, stalled: bool, took: Duration) {
        self.0.entry(what).or_default()[stalled as usize].push(took.as_micros().min(u32::MAX as u128) as u32);
    }

    fn merge(&mut self, other: Latencies) {
        for (k, [free, stalled]) in other.0 {
            let e = self.0.entry(k).or_default();
            e[0].extend(free);
            e[1].extend(stalled);
        }
    }
}

/// A request that met 429 is sent again after a second (kube-apiserver's `Retry-After: 1`).
async fn retrying<T, F, Fut>(shared: &Shared, mut call: F) -> Result<T, kube::Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, kube::Error>>,
{
    loop {
        match call().await {
            Err(kube::Error::Api(s)) if s.code == 429 => {
                shared.too_many_requests.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            other => return other,
        }
    }
}

fn payload(rng: &mut StdRng) -> serde_json::Value {
    let filler: String = (0..200).map(|_| char::from(b'a' + rng.random_range(0..26u8))).collect();
    json!({"t": now_nanos().to_string(), "v": filler})
}

/// What a write answered: the change it made and the object, `None` for a delete (its answer is
/// a `Status`) or an update refused as expected.
type Written = Result<Option<(u8, ConfigMap)>, kube::Error>;

#[derive(Default)]
struct WriterReport {
    latencies: Latencies,
    writes: u64,
    conflicts: u64,
    lists: u64,
    /// Every write's response: the server must have it in its history with the same change.
    acknowledged: Vec<Ev>,
}

/// One writer: the only one to write in `soak-{index}`, so it knows what a list must show.
async fn writer(client: kube::Client, index: usize, shared: Arc<Shared>) -> WriterReport {
    let opts = shared.opts;
    let ns = format!("soak-{index}");
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let mut rng = StdRng::seed_from_u64(index as u64);
    let mut present: Vec<Option<ConfigMap>> = vec![None; opts.objects];
    let mut report = WriterReport::default();
    let period = Duration::from_secs_f64(opts.writers as f64 / opts.rate as f64);
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while !shared.stopped() {
        tick.tick().await;
        let stalled = shared.stalled();
        if rng.random_ratio(1, 20) {
            let t = Instant::now();
            match paged_list(&api, 50, &shared).await {
                Ok((_, items)) => {
                    report.latencies.add("list (pages of 50)", stalled, t.elapsed());
                    report.lists += 1;
                    let mut listed: Vec<(u32, u64)> = items.iter().map(|e| (e.obj, e.rv)).collect();
                    listed.sort_unstable();
                    let expected: Vec<(u32, u64)> = present
                        .iter()
                        .enumerate()
                        .filter_map(|(k, cm)| cm.as_ref().map(|cm| (k as u32, rv_of(cm))))
                        .collect();
                    if listed != expected {
                        shared.error(format!("a list of {ns} does not show what its only writer wrote"));
                    }
                }
                Err(e) => shared.error(format!("list: {e}")),
            }
            continue;
        }
        let k = rng.random_range(0..opts.objects);
        let name = format!("cm-{k}");
        let data = payload(&mut rng);
        let t = Instant::now();
        let (api, client, ns, name) = (&api, &client, ns.as_str(), name.as_str());
        let (verb, result): (&'static str, Written) = match present[k].clone() {
            None if rng.random_ratio(1, 4) => {
                let body = &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data});
                let pp = &PatchParams::apply("soak");
                (
                    "apply (create)",
                    retrying(&shared, move || async move { api.patch(name, pp, &Patch::Apply(body)).await })
                        .await
                        .map(|o| Some((0, o))),
                )
            }
            None => {
                let cm: &ConfigMap =
                    &serde_json::from_value(json!({"metadata": {"name": name}, "data": data})).expect("configmap");
                (
                    "create",
                    retrying(&shared, move || async move { api.create(&PostParams::default(), cm).await })
                        .await
                        .map(|o| Some((0, o))),
                )
            }
            Some(mut current) => match rng.random_range(0..100) {
                0..30 => {
                    current.data = serde_json::from_value(data).ok();
                    let current = &current;
                    (
                        "update",
                        retrying(
                            &shared,
                            move || async move { api.replace(name, &PostParams::default(), current).await },
                        )
                        .await
                        .map(|o| Some((1, o))),
                    )
                }
                30..33 => {
                    // A stale resourceVersion must get 409 Conflict and change nothing.
                    current.metadata.resource_version = Some("1".into());
                    match api.replace(name, &PostParams::default(), &current).await {
                        Err(kube::Error::Api(s)) if s.code == 409 => {
                            report.conflicts += 1;
                            ("update (stale: 409)", Ok(None))
                        }
                        Err(e) => ("update (stale: 409)", Err(e)),
                        Ok(_) => {
                            shared.error("an update with a stale resourceVersion was accepted".into());
                            continue;
                        }
                    }
                }
                33..48 => {
                    let patch = &json!({"data": data});
                    (
                        "patch (merge)",
                        retrying(&shared, move || async move {
                            api.patch(name, &PatchParams::default(), &Patch::Merge(patch)).await
                        })
                        .await
                        .map(|o| Some((1, o))),
                    )
                }
                48..63 => {
                    let patch = &json!({"data": data});
                    (
                        "patch (strategic)",
                        retrying(&shared, move || async move {
                            api.patch(name, &PatchParams::default(), &Patch::Strategic(patch)).await
                        })
                        .await
                        .map(|o| Some((1, o))),
                    )
                }
                63..73 => {
                    let patch = &json!([
                        {"op": "test", "path": "/metadata/resourceVersion", "value": current.metadata.resource_version},
                        {"op": "replace", "path": "/data", "value": data}
                    ]);
                    (
                        "patch (json)",
                        retrying(&shared, move || async move { json_patch(client, ns, name, patch).await })
                            .await
                            .map(|o| Some((1, o))),
                    )
                }
                73..80 => {
                    let body =
                        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data});
                    let pp = &PatchParams::apply("soak");
                    (
                        "apply",
                        retrying(&shared, move || async move { api.patch(name, pp, &Patch::Apply(body)).await })
                            .await
                            .map(|o| Some((1, o))),
                    )
                }
                _ => (
                    "delete",
                    retrying(&shared, move || async move { api.delete(name, &DeleteParams::default()).await })
                        .await
                        .map(|_| None),
                ),
            },
        };
        match result {
            Ok(done) => {
                shared.acknowledged.fetch_add(1, Ordering::Relaxed);
                report.latencies.add(verb, stalled, t.elapsed());
                if verb == "delete" {
                    present[k] = None;
                    report.writes += 1;
                } else if let Some((change, cm)) = done {
                    report.acknowledged.push(ev_of(change, &cm));
                    present[k] = Some(cm);
                    report.writes += 1;
                }
            }
            Err(e) => shared.error(format!("{verb}: {e}")),
        }
    }
    report
}

/// A JSON patch (RFC 6902), sent as it is: kube's typed `Patch::Json` needs a feature the
/// workspace does not build.
async fn json_patch(
    client: &kube::Client,
    ns: &str,
    name: &str,
    patch: &serde_json::Value,
) -> Result<ConfigMap, kube::Error> {
    let request = http::Request::patch(format!("/api/v1/namespaces/{ns}/configmaps/{name}"))
        .header(http::header::CONTENT_TYPE, "application/json-patch+json")
        .body(serde_json::to_vec(patch).expect("patch"))
        .expect("request");
    client.request(request).await
}

/// A list in pages of `limit`, as reflectors list: the resourceVersion of the list and its
/// objects (the pages must agree on the resourceVersion and never repeat a name). A continue
/// token that expired (410) starts the list again.
async fn paged_list(api: &Api<ConfigMap>, limit: u32, shared: &Shared) -> Result<(u64, Vec<Ev>), kube::Error> {
    'again: loop {
        let mut items: Vec<Ev> = Vec::new();
        let mut names: Vec<String> = Vec::new();
        let mut list_rv: Option<u64> = None;
        let mut token: Option<String> = None;
        loop {
            let mut lp = ListParams::default().limit(limit);
            if let Some(t) = &token {
                lp = lp.continue_token(t);
            }
            let page = match retrying(shared, || async { api.list(&lp).await }).await {
                Err(kube::Error::Api(s)) if s.code == 410 && token.is_some() => continue 'again,
                other => other?,
            };
            let rv: u64 = page.metadata.resource_version.as_deref().and_then(|v| v.parse().ok()).unwrap_or(0);
            if *list_rv.get_or_insert(rv) != rv {
                shared.error("the pages of one list have different resourceVersions".into());
            }
            for cm in &page.items {
                names.push(format!(
                    "{}/{}",
                    cm.metadata.namespace.as_deref().unwrap_or_default(),
                    cm.metadata.name.as_deref().unwrap_or_default()
                ));
                items.push(ev_of(0, cm));
            }
            token = page.metadata.continue_.filter(|t| !t.is_empty());
            if token.is_none() {
                break;
            }
        }
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        if sorted.len() != names.len() {
            shared.error("a paginated list repeated an object".into());
        }
        return Ok((list_rv.unwrap_or(0), items));
    }
}

/// Events a watcher received from one list up to the next relist, with the list's version.
struct Chain {
    scope: Option<u16>,
    start: u64,
    /// The last resourceVersion the watcher saw (event or bookmark).
    end: u64,
    events: Vec<Ev>,
}

/// What one list showed: (namespace, name) → resourceVersion, at `rv`.
struct Snapshot {
    scope: Option<u16>,
    rv: u64,
    items: Vec<Ev>,
}

#[derive(Default)]
struct WatcherReport {
    chains: Vec<Chain>,
    snapshots: Vec<Snapshot>,
    latencies: Latencies,
    gone: u64,
    watches: u64,
    reordered: u64,
}

/// A reflector: list in pages, watch from the list's version, resume from the last version seen
/// when a watch ends, list again after 410 Gone.
async fn watcher(client: kube::Client, index: usize, scope: Option<u16>, shared: Arc<Shared>) -> WatcherReport {
    let opts = shared.opts;
    let api: Api<ConfigMap> = match scope {
        Some(ns) => Api::namespaced(client, &format!("soak-{ns}")),
        None => Api::all(client),
    };
    let mut rng = StdRng::seed_from_u64(1000 + index as u64);
    let mut report = WatcherReport::default();
    'relist: while !shared.stopped() {
        let (rv, items) = match paged_list(&api, 100, &shared).await {
            Ok(list) => list,
            Err(e) => {
                shared.error(format!("watcher list: {e}"));
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        report.snapshots.push(Snapshot { scope, rv, items });
        let mut chain = Chain { scope, start: rv, end: rv, events: Vec::new() };
        loop {
            if shared.stopped() {
                report.chains.push(chain);
                break 'relist;
            }
            // Now and then a reflector is busy for longer than the history window lasts: until
            // more writes than the window holds were made, however fast the writers go.
            if rng.random_ratio(1, 12) {
                let past_the_window = shared.acknowledged.load(Ordering::Relaxed) + opts.history as u64 + 50;
                while shared.acknowledged.load(Ordering::Relaxed) < past_the_window && !shared.stopped() {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
            let timeout = rng.random_range(opts.watch_timeout / 4..=opts.watch_timeout) as u32;
            let wp = WatchParams::default().timeout(timeout);
            report.watches += 1;
            // Delivery latency counts only writes made while this watch was open: older ones
            // come from the history, as late as the watcher asked for them.
            let opened = now_nanos();
            let stream = match api.watch(&wp, &chain.end.to_string()).await {
                Ok(s) => s,
                Err(kube::Error::Api(s)) if s.code == 410 => {
                    report.gone += 1;
                    report.chains.push(chain);
                    continue 'relist;
                }
                Err(e) => {
                    shared.error(format!("watch: {e}"));
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            };
            let mut stream = std::pin::pin!(stream);
            while let Some(event) = stream.next().await {
                let (change, cm) = match event {
                    Ok(WatchEvent::Added(cm)) => (0, cm),
                    Ok(WatchEvent::Modified(cm)) => (1, cm),
                    Ok(WatchEvent::Deleted(cm)) => (2, cm),
                    Ok(WatchEvent::Bookmark(b)) => {
                        if let Ok(rv) = b.metadata.resource_version.parse() {
                            chain.end = chain.end.max(rv);
                        }
                        continue;
                    }
                    Ok(WatchEvent::Error(s)) if s.code == 410 => {
                        report.gone += 1;
                        report.chains.push(chain);
                        continue 'relist;
                    }
                    Ok(WatchEvent::Error(s)) => {
                        shared.error(format!("watch error event {} {}", s.code, s.reason));
                        break;
                    }
                    Err(e) => {
                        shared.error(format!("watch stream: {e}"));
                        break;
                    }
                };
                let ev = ev_of(change, &cm);
                if ev.rv <= chain.end {
                    report.reordered += 1;
                }
                chain.end = chain.end.max(ev.rv);
                chain.events.push(ev);
                if change != 2
                    && let Some(sent) = cm.data.as_ref().and_then(|d| d.get("t")).and_then(|t| t.parse::<u64>().ok())
                    && sent >= opened
                {
                    let lag = Duration::from_nanos(now_nanos().saturating_sub(sent));
                    report.latencies.add("watch delivery", shared.stalled(), lag);
                }
                if shared.stopped() {
                    break;
                }
            }
        }
    }
    report
}

/// A watcher that opens a watch of every namespace in each stalled phase and reads nothing
/// until the phase ends (its socket fills up), then hangs up.
async fn staller(client: kube::Client, shared: Arc<Shared>) -> u64 {
    let api: Api<ConfigMap> = Api::all(client);
    let mut opened = 0;
    while !shared.stopped() {
        if !shared.stalled() {
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        }
        let wp = WatchParams::default().timeout(3600);
        if let Ok(stream) = api.watch(&wp, "0").await {
            opened += 1;
            while shared.stalled() && !shared.stopped() {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            drop(stream);
        }
    }
    opened
}

// ---------------------------------------------------------------------------------------------
// The run and its checks

fn run(opts: Opts) -> bool {
    let (mut child, url, history) = start_server(opts.history);
    let pid = child.id();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let load_before = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let shared = Arc::new(Shared {
        opts,
        started: Instant::now(),
        stop: AtomicBool::new(false),
        too_many_requests: AtomicU64::new(0),
        acknowledged: AtomicU64::new(0),
        errors: Mutex::new(BTreeMap::new()),
    });
    let (writers, watchers, stallers, memory) = rt.block_on(async {
        let config = kube::Config::new(url.parse().expect("server url"));
        let client = kube::Client::try_from(config).expect("client");
        let namespaces: Api<Namespace> = Api::all(client.clone());
        for i in 0..opts.writers {
            let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": format!("soak-{i}")}})).expect("ns");
            namespaces.create(&PostParams::default(), &ns).await.expect("create namespace");
        }
        let writers: Vec<_> =
            (0..opts.writers).map(|i| tokio::spawn(writer(client.clone(), i, shared.clone()))).collect();
        let mut watchers = Vec::new();
        for i in 0..opts.ns_watchers + opts.all_watchers {
            let scope = (i < opts.ns_watchers).then_some((i % opts.writers) as u16);
            watchers.push(tokio::spawn(watcher(client.clone(), i, scope, shared.clone())));
        }
        let stallers: Vec<_> =
            (0..opts.stallers).map(|_| tokio::spawn(staller(client.clone(), shared.clone()))).collect();
        let mut memory = Vec::new();
        let deadline = Duration::from_secs(opts.secs);
        while shared.started.elapsed() < deadline {
            memory.push((shared.started.elapsed().as_secs_f64(), rss_kib(pid)));
            tokio::time::sleep(Duration::from_secs(5).min(deadline.saturating_sub(shared.started.elapsed()))).await;
        }
        memory.push((shared.started.elapsed().as_secs_f64(), rss_kib(pid)));
        shared.stop.store(true, Ordering::SeqCst);
        let mut w = Vec::new();
        for h in writers {
            w.push(h.await.expect("writer"));
        }
        // Watchers finish their current watch (at most one timeout) and report.
        let mut r = Vec::new();
        for h in watchers {
            r.push(h.await.expect("watcher"));
        }
        let mut opened = 0;
        for h in stallers {
            opened += h.await.expect("staller");
        }
        (w, r, opened, memory)
    });
    let elapsed = shared.started.elapsed();
    // Wait until the server's history has caught up with everything anyone saw.
    let newest = watchers.iter().flat_map(|w| w.chains.iter().map(|c| c.end)).max().unwrap_or(0);
    let caught_up = Instant::now();
    while history.lock().last < newest && caught_up.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(child.stdin.take());
    let _ = child.kill();
    let _ = child.wait();
    let history = std::mem::take(&mut *history.lock());
    report(opts, elapsed, &history, writers, watchers, stallers, &memory, &shared, &load_before)
}

/// What the checks found.
#[derive(Default, Debug)]
struct Verdicts {
    events_checked: u64,
    lost: u64,
    duplicated: u64,
    invented: u64,
    reordered: u64,
    lists_checked: u64,
    lists_wrong: u64,
    acknowledged_checked: u64,
    acknowledged_missing: u64,
}

fn in_scope(scope: Option<u16>, ev: &Ev) -> bool {
    scope.is_none_or(|ns| ev.ns == ns)
}

/// Every chain against the history: exactly the history's changes in its scope after the list
/// it started from up to the last version it saw, in order, once each.
fn check_chains(history: &[Ev], watchers: &[WatcherReport], v: &mut Verdicts) {
    for w in watchers {
        v.reordered += w.reordered;
        for chain in &w.chains {
            let from = history.partition_point(|e| e.rv <= chain.start);
            let to = history.partition_point(|e| e.rv <= chain.end);
            let expected: Vec<&Ev> = history[from..to].iter().filter(|e| in_scope(chain.scope, e)).collect();
            let mut seen: HashMap<u64, u32> = HashMap::with_capacity(chain.events.len());
            for e in &chain.events {
                *seen.entry(e.rv).or_default() += 1;
            }
            v.duplicated += seen.values().filter(|&&n| n > 1).map(|&n| u64::from(n - 1)).sum::<u64>();
            let by_rv: HashMap<u64, &Ev> = expected.iter().map(|e| (e.rv, *e)).collect();
            for e in &chain.events {
                v.events_checked += 1;
                if by_rv.get(&e.rv).is_none_or(|h| *h != e) {
                    v.invented += 1;
                }
            }
            v.lost += expected.iter().filter(|e| !seen.contains_key(&e.rv)).count() as u64;
        }
    }
}

/// Every list against the history replayed up to the list's version.
fn check_lists(history: &[Ev], writers: &[WriterReport], watchers: &[WatcherReport], v: &mut Verdicts) {
    let mut snapshots: Vec<&Snapshot> = watchers.iter().flat_map(|w| w.snapshots.iter()).collect();
    snapshots.sort_by_key(|s| s.rv);
    let mut state: BTreeMap<(u16, u32), u64> = BTreeMap::new();
    let mut next = 0;
    for s in snapshots {
        while next < history.len() && history[next].rv <= s.rv {
            let e = history[next];
            if e.change == 2 {
                state.remove(&(e.ns, e.obj));
            } else {
                state.insert((e.ns, e.obj), e.rv);
            }
            next += 1;
        }
        let mut want: Vec<(u16, u32, u64)> = state
            .iter()
            .filter(|((ns, _), _)| s.scope.is_none_or(|x| x == *ns))
            .map(|((ns, o), rv)| (*ns, *o, *rv))
            .collect();
        let mut got: Vec<(u16, u32, u64)> = s.items.iter().map(|e| (e.ns, e.obj, e.rv)).collect();
        want.sort();
        got.sort();
        v.lists_checked += 1;
        if want != got {
            v.lists_wrong += 1;
        }
    }
    let by_rv: HashMap<u64, &Ev> = history.iter().map(|e| (e.rv, e)).collect();
    for w in writers {
        for a in &w.acknowledged {
            v.acknowledged_checked += 1;
            if by_rv.get(&a.rv).is_none_or(|h| *h != a) {
                v.acknowledged_missing += 1;
            }
        }
    }
}

fn percentile(samples: &mut [u32], p: f64) -> f64 {
    if samples.is_empty() {
        return f64::NAN;
    }
    samples.sort_unstable();
    let i = ((samples.len() as f64 - 1.0) * p).round() as usize;
    f64::from(samples[i]) / 1000.0
}

#[allow(clippy::too_many_arguments)]
fn report(
    opts: Opts,
    elapsed: Duration,
    history: &History,
    writers: Vec<WriterReport>,
    watchers: Vec<WatcherReport>,
    stalls: u64,
    memory: &[(f64, u64)],
    shared: &Shared,
    load_before: &str,
) -> bool {
    let mut v = Verdicts::default();
    check_chains(&history.writes, &watchers, &mut v);
    check_lists(&history.writes, &writers, &watchers, &mut v);
    let mut latencies = Latencies::default();
    let writes: u64 = writers.iter().map(|w| w.writes).sum();
    let lists: u64 = writers.iter().map(|w| w.lists).sum();
    let conflicts: u64 = writers.iter().map(|w| w.conflicts).sum();
    let gone: u64 = watchers.iter().map(|w| w.gone).sum();
    let watches: u64 = watchers.iter().map(|w| w.watches).sum();
    let chains: usize = watchers.iter().map(|w| w.chains.len()).sum();
    for w in writers {
        latencies.merge(w.latencies);
    }
    for w in watchers {
        latencies.merge(w.latencies);
    }
    println!(
        "soak: {:.0} s against fake-apiserver over loopback TCP (its own process, history window {})",
        elapsed.as_secs_f64(),
        opts.history
    );
    println!(
        "  load: {} writers at {} writes/s in all, {} objects each; {} watchers of one namespace, {} of all; {} stalled watchers in alternate {} s phases",
        opts.writers,
        opts.rate,
        opts.objects,
        opts.ns_watchers,
        opts.all_watchers,
        opts.stallers,
        opts.phase.as_secs()
    );
    println!(
        "  writes acknowledged: {writes}; paginated lists by writers: {lists}; stale updates refused with 409: {conflicts}; 429s retried: {}",
        shared.too_many_requests.load(Ordering::Relaxed)
    );
    println!(
        "  watches opened: {watches}; 410 Gone then relisted: {gone}; chains (list + watches until the next list): {chains}; stalled watches held: {stalls}"
    );
    println!(
        "  server history: {} ConfigMap writes, newest resourceVersion {}, gaps {}",
        history.writes.len(),
        history.last,
        history.gaps
    );
    println!(
        "\n  {:<26} {:>9} {:>10} {:>10} {:>12} {:>12}",
        "latency (ms)", "samples", "p50", "p99", "p99 free", "p99 stalled"
    );
    for (what, [free, stalled]) in &mut latencies.0 {
        let mut all: Vec<u32> = free.iter().chain(stalled.iter()).copied().collect();
        println!(
            "  {:<26} {:>9} {:>10.2} {:>10.2} {:>12.2} {:>12.2}",
            what,
            all.len(),
            percentile(&mut all, 0.5),
            percentile(&mut all, 0.99),
            percentile(free, 0.99),
            percentile(stalled, 0.99)
        );
    }
    let warm_at = opts.secs as f64 * opts.warm_up;
    let warm = memory.iter().find(|(t, _)| *t >= warm_at).map(|m| m.1).unwrap_or(0);
    let end = memory.last().map(|m| m.1).unwrap_or(0);
    let start = memory.first().map(|m| m.1).unwrap_or(0);
    let max = memory.iter().map(|m| m.1).max().unwrap_or(0);
    let growth = if warm > 0 { (end as f64 - warm as f64) / warm as f64 } else { f64::NAN };
    println!(
        "\n  server RSS: start {:.1} MiB, after warm-up ({:.0} s) {:.1} MiB, end {:.1} MiB, max {:.1} MiB; growth after warm-up {:+.1} %",
        start as f64 / 1024.0,
        warm_at,
        warm as f64 / 1024.0,
        end as f64 / 1024.0,
        max as f64 / 1024.0,
        growth * 100.0
    );
    println!(
        "  checked against the server's history: {} watch events in {} chains, {} lists, {} acknowledged writes",
        v.events_checked, chains, v.lists_checked, v.acknowledged_checked
    );
    println!(
        "  lost {}, duplicated {}, invented or altered {}, out of order {}; lists that differ {}; acknowledged writes missing {}",
        v.lost, v.duplicated, v.invented, v.reordered, v.lists_wrong, v.acknowledged_missing
    );
    let errors = shared.errors.lock();
    for (what, n) in errors.iter() {
        println!("  error x{n}: {what}");
    }
    println!(
        "  load average before: {}  after: {}",
        load_before.trim(),
        std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim()
    );
    let mut failures = Vec::new();
    if v.events_checked == 0 || v.lists_checked == 0 || v.acknowledged_checked == 0 {
        failures.push("nothing was checked".to_string());
    }
    if v.lost + v.duplicated + v.invented + v.reordered + v.lists_wrong + v.acknowledged_missing > 0 {
        failures.push("a watcher or a list disagrees with the server's history".into());
    }
    if !errors.is_empty() {
        failures.push("requests failed".into());
    }
    if gone == 0 {
        failures.push("no watcher met 410 Gone: the relist path was not exercised".into());
    }
    // Memory is judged on a run long enough to warm up (a short run's figure is printed only).
    if opts.secs >= 600 && growth > 0.15 {
        failures.push(format!("server memory grew {:.1} % after warm-up", growth * 100.0));
    }
    if failures.is_empty() {
        println!("soak: PASS");
        true
    } else {
        println!("soak: FAIL: {}", failures.join("; "));
        false
    }
}
