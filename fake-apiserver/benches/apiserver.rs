//! Benchmarks of the fake API server against the budgets in DESIGN.md ("Budgets").
//!
//! `cargo bench -p fake-apiserver --bench apiserver` runs every benchmark once, in one process
//! (plus one child process for the memory measurement), and prints a table with the budget next
//! to each number. Without `--bench` (or `--full`) in its arguments, for example when
//! `cargo test --benches` runs it, the binary does a quick smoke run with tiny sizes and does not
//! judge the budgets.
//!
//! Everything async runs on one multi-thread tokio runtime with 2 workers (the target machine
//! has 2 cores); the main thread only waits.

use axum::body::Body;
use bytes::{Bytes, BytesMut};
use fake_apiserver::{ApiServer, Config};
use futures::StreamExt;
use http::{Method, Request, StatusCode, header};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ObjectMeta, PostParams};
use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tower::ServiceExt;

const CM_PATH: &str = "/api/v1/namespaces/default/configmaps";

/// How big each benchmark is.
#[derive(Debug, Clone, Copy)]
struct Sizes {
    full: bool,
    start_runs: usize,
    get_conns: usize,
    get_warmup: Duration,
    get_round: Duration,
    get_rounds: u32,
    creates: usize,
    kube_creates: usize,
    create_tasks: usize,
    watchers: usize,
    events: usize,
    pace: Duration,
    mem_objects: usize,
}

impl Sizes {
    fn full() -> Self {
        Self {
            full: true,
            start_runs: 200,
            get_conns: 4,
            get_warmup: Duration::from_millis(500),
            get_round: Duration::from_secs(1),
            get_rounds: 2,
            creates: 50_000,
            kube_creates: 20_000,
            create_tasks: 8,
            watchers: 1_000,
            events: 1_000,
            pace: Duration::from_millis(1),
            mem_objects: 100_000,
        }
    }

    fn smoke() -> Self {
        Self {
            full: false,
            start_runs: 5,
            get_conns: 2,
            get_warmup: Duration::from_millis(20),
            get_round: Duration::from_millis(50),
            get_rounds: 1,
            creates: 200,
            kube_creates: 50,
            create_tasks: 4,
            watchers: 10,
            events: 10,
            pace: Duration::from_millis(1),
            mem_objects: 200,
        }
    }
}

/// One line of the result table.
struct Row {
    name: String,
    value: String,
    budget: String,
    /// `None` for informational rows.
    pass: Option<bool>,
}

impl Row {
    fn new(name: impl Into<String>, value: impl Into<String>, budget: impl Into<String>, pass: Option<bool>) -> Self {
        Self { name: name.into(), value: value.into(), budget: budget.into(), pass }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(i) = args.iter().position(|a| a == "--memory-child") {
        let n = args.get(i + 1).and_then(|s| s.parse().ok()).unwrap_or(100_000);
        memory_child(n);
        return;
    }
    let sizes = if args.iter().any(|a| a == "--bench" || a == "--full") { Sizes::full() } else { Sizes::smoke() };
    // Like libtest: positional arguments select benchmarks by substring (start, get, create, watch, memory).
    let filters: Vec<&str> = args.iter().filter(|a| !a.starts_with('-')).map(String::as_str).collect();
    let selected = |name: &str| filters.is_empty() || filters.iter().any(|f| name.contains(f));
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("tokio runtime");
    let started = Instant::now();
    let load_before = loadavg();
    let mut rows = Vec::new();
    if selected("start") {
        rows.push(start_time(sizes));
    }
    if selected("get") {
        rows.extend(on_runtime(&rt, get_over_tcp(sizes)));
    }
    if selected("create") {
        rows.extend(on_runtime(&rt, creates(sizes)));
        rows.push(one_worker_creates(sizes));
    }
    if selected("watch") {
        rows.extend(on_runtime(&rt, watch_fanout(sizes)));
    }
    drop(rt);
    if selected("memory") {
        rows.extend(memory(sizes));
    }
    print_table(&rows, sizes, started.elapsed());
    // The numbers are only as good as the machine was quiet: say how busy it was.
    println!("load average (1/5/15 min) before: {load_before}, after: {}", loadavg());
}

fn loadavg() -> String {
    let raw = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    raw.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

/// Runs `fut` as a task on the runtime's workers (not on the main thread).
fn on_runtime<T: Send + 'static>(rt: &tokio::runtime::Runtime, fut: impl Future<Output = T> + Send + 'static) -> T {
    rt.block_on(async { tokio::spawn(fut).await.expect("benchmark task panicked") })
}

fn print_table(rows: &[Row], sizes: Sizes, total: Duration) {
    let w0 = rows.iter().map(|r| r.name.len()).max().unwrap_or(0).max(9);
    let w1 = rows.iter().map(|r| r.value.len()).max().unwrap_or(0).max(8);
    let w2 = rows.iter().map(|r| r.budget.len()).max().unwrap_or(0).max(6);
    println!();
    if !sizes.full {
        println!(
            "smoke run (tiny sizes, budgets not judged); run `cargo bench -p fake-apiserver --bench apiserver` for the real numbers"
        );
    }
    println!("| {:w0$} | {:w1$} | {:w2$} | result |", "benchmark", "measured", "budget");
    println!("|-{}-|-{}-|-{}-|--------|", "-".repeat(w0), "-".repeat(w1), "-".repeat(w2));
    for r in rows {
        let verdict = match (r.pass, sizes.full) {
            (None, _) => "info",
            (Some(_), false) => "smoke",
            (Some(true), true) => "PASS",
            (Some(false), true) => "MISS",
        };
        println!("| {:w0$} | {:w1$} | {:w2$} | {:6} |", r.name, r.value, r.budget, verdict);
    }
    println!("\ntotal bench wall time: {:.1} s", total.as_secs_f64());
}

// ---------------------------------------------------------------------------------------------
// Helpers

/// One request through the router in-process; returns the status and the whole body.
async fn call(router: &axum::Router, method: Method, uri: &str, body: Option<String>) -> (StatusCode, Bytes) {
    let mut req = Request::builder().method(method).uri(uri);
    if body.is_some() {
        req = req.header(header::CONTENT_TYPE, "application/json");
    }
    let req = req.body(body.map(Body::from).unwrap_or_else(Body::empty)).expect("request");
    let resp = router.clone().oneshot(req).await.expect("infallible");
    let status = resp.status();
    let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX).await.expect("response body");
    (status, bytes)
}

fn configmap_json(name: &str, key: &str, value: &str) -> String {
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name},
        "data": {key: value},
    })
    .to_string()
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let idx = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[idx]
}

fn fmt_ms(nanos: u64) -> String {
    format!("{:.3} ms", nanos as f64 / 1e6)
}

fn thousands(n: f64) -> String {
    let s = format!("{:.0}", n);
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

// ---------------------------------------------------------------------------------------------
// 5. In-process server start

fn start_time(sizes: Sizes) -> Row {
    drop(ApiServer::new(Config::default()));
    let mut times: Vec<u64> = (0..sizes.start_runs)
        .map(|_| {
            let t = Instant::now();
            let server = ApiServer::new(Config::default());
            let elapsed = t.elapsed();
            drop(server);
            elapsed.as_nanos() as u64
        })
        .collect();
    times.sort_unstable();
    let median = percentile(&times, 0.5);
    Row::new(
        format!("in-process server start (median of {})", sizes.start_runs),
        fmt_ms(median),
        "< 5 ms",
        Some(median < 5_000_000),
    )
}

// ---------------------------------------------------------------------------------------------
// 1. GET over loopback TCP vs a bare axum handler

/// A minimal HTTP/1.1 keep-alive client that sends one fixed GET over and over.
struct Conn {
    stream: tokio::net::TcpStream,
    buf: BytesMut,
    request: Arc<[u8]>,
}

impl Conn {
    async fn connect(addr: SocketAddr, request: Arc<[u8]>) -> std::io::Result<Self> {
        let stream = tokio::net::TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(Self { stream, buf: BytesMut::with_capacity(16 * 1024), request })
    }

    async fn fill(&mut self) -> std::io::Result<()> {
        if self.stream.read_buf(&mut self.buf).await? == 0 {
            return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "connection closed"));
        }
        Ok(())
    }

    /// Sends the request and reads one response; returns the body length.
    async fn get(&mut self) -> std::io::Result<usize> {
        self.stream.write_all(&self.request).await?;
        let head_end = loop {
            if let Some(p) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break p;
            }
            self.fill().await?;
        };
        let head = std::str::from_utf8(&self.buf[..head_end]).map_err(std::io::Error::other)?;
        if !head.starts_with("HTTP/1.1 200") {
            return Err(std::io::Error::other(format!(
                "unexpected response: {}",
                head.lines().next().unwrap_or_default()
            )));
        }
        let len = head
            .lines()
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
            .and_then(|(_, v)| v.trim().parse::<usize>().ok())
            .ok_or_else(|| std::io::Error::other("response without Content-Length"))?;
        let total = head_end + 4 + len;
        while self.buf.len() < total {
            self.fill().await?;
        }
        let _ = self.buf.split_to(total);
        Ok(len)
    }
}

/// Drives `conns` keep-alive connections for `dur`; returns the number of completed requests.
async fn drive(addr: SocketAddr, request: Arc<[u8]>, conns: usize, dur: Duration, expected_len: usize) -> u64 {
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for _ in 0..conns {
        let mut conn = Conn::connect(addr, request.clone()).await.expect("connect");
        let stop = stop.clone();
        tasks.push(tokio::spawn(async move {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let len = conn.get().await.expect("GET over TCP");
                assert_eq!(len, expected_len, "unexpected body length");
                n += 1;
            }
            n
        }));
    }
    tokio::time::sleep(dur).await;
    stop.store(true, Ordering::Relaxed);
    let mut total = 0;
    for t in tasks {
        total += t.await.expect("client task");
    }
    total
}

/// The GET ratio in both wire formats kube clients use.
async fn get_over_tcp(sizes: Sizes) -> Vec<Row> {
    let mut rows = get_over_tcp_as(sizes, "application/json").await;
    rows.extend(get_over_tcp_as(sizes, "application/vnd.kubernetes.protobuf").await);
    rows
}

async fn get_over_tcp_as(sizes: Sizes, accept: &'static str) -> Vec<Row> {
    let format = if accept.contains("protobuf") { "protobuf" } else { "JSON" };
    let server = ApiServer::default();
    let router = server.router();
    let name = "bench-get";
    let (status, _) =
        call(&router, Method::POST, CM_PATH, Some(configmap_json(name, "payload", &"x".repeat(900)))).await;
    assert_eq!(status, StatusCode::CREATED);
    let path = format!("{CM_PATH}/{name}");
    let req = Request::get(&path).header(header::ACCEPT, accept).body(Body::empty()).expect("request");
    let resp = router.clone().oneshot(req).await.expect("infallible");
    assert_eq!(resp.status(), StatusCode::OK);
    let expected = axum::body::to_bytes(resp.into_body(), usize::MAX).await.expect("response body");
    let expected_len = expected.len();

    let fake = server.serve_tcp(SocketAddr::from(([127, 0, 0, 1], 0))).await.expect("serve_tcp");
    let request: Arc<[u8]> =
        format!("GET {path} HTTP/1.1\r\nHost: x\r\nAccept: {accept}\r\nAuthorization: Bearer {}\r\n\r\n", fake.token())
            .into_bytes()
            .into();

    let bare_body = expected.clone();
    let bare_app = axum::Router::new().route(
        &path,
        axum::routing::get(move || {
            let body = bare_body.clone();
            async move { ([(header::CONTENT_TYPE, accept)], body) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let bare_addr = listener.local_addr().expect("local addr");
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let bare = tokio::spawn(async move {
        axum::serve(listener, bare_app)
            .with_graceful_shutdown(async {
                let _ = stop_rx.await;
            })
            .await
    });

    let c = sizes.get_conns;
    drive(fake.addr(), request.clone(), c, sizes.get_warmup, expected_len).await;
    drive(bare_addr, request.clone(), c, sizes.get_warmup, expected_len).await;
    let (mut n_fake, mut n_bare) = (0, 0);
    // Alternate the two so that drift in machine load hits both alike.
    for _ in 0..sizes.get_rounds {
        n_fake += drive(fake.addr(), request.clone(), c, sizes.get_round, expected_len).await;
        n_bare += drive(bare_addr, request.clone(), c, sizes.get_round, expected_len).await;
    }
    let secs = (sizes.get_round * sizes.get_rounds).as_secs_f64();
    let (fake_rps, bare_rps) = (n_fake as f64 / secs, n_bare as f64 / secs);
    let ratio = fake_rps / bare_rps;

    fake.shutdown().await.expect("shutdown");
    let _ = stop_tx.send(());
    bare.await.expect("bare server task").expect("bare server");

    let what = format!("{format}, {expected_len} B body, {c} keep-alive conns, {secs:.1} s each");
    vec![
        Row::new(format!("GET over TCP: fake server ({what})"), format!("{} req/s", thousands(fake_rps)), "", None),
        Row::new(
            format!("GET over TCP: bare axum handler ({what})"),
            format!("{} req/s", thousands(bare_rps)),
            "",
            None,
        ),
        Row::new(format!("GET over TCP ({format}): fake / bare"), format!("{ratio:.2}"), ">= 0.50", Some(ratio >= 0.5)),
    ]
}

// ---------------------------------------------------------------------------------------------
// 2. In-process creates

/// Creates `n` small ConfigMaps through the router from `tasks` concurrent tasks; returns objects/s.
async fn router_creates(n: usize, tasks: usize) -> f64 {
    let server = ApiServer::default();
    let router = server.router();
    let t = Instant::now();
    let handles: Vec<_> = (0..tasks)
        .map(|w| {
            let router = router.clone();
            tokio::spawn(async move {
                for i in (w..n).step_by(tasks) {
                    let body = configmap_json(&format!("cm-{i}"), "key", &format!("value-{i}"));
                    let (status, _) = call(&router, Method::POST, CM_PATH, Some(body)).await;
                    assert_eq!(status, StatusCode::CREATED);
                }
            })
        })
        .collect();
    for h in handles {
        h.await.expect("create task");
    }
    n as f64 / t.elapsed().as_secs_f64()
}

async fn creates(sizes: Sizes) -> Vec<Row> {
    let tasks = sizes.create_tasks;
    let router_rate = router_creates(sizes.creates, tasks).await;

    let server = ApiServer::default();
    let api: kube::Api<ConfigMap> = kube::Api::namespaced(server.client(), "default");
    let n = sizes.kube_creates;
    let t = Instant::now();
    let handles: Vec<_> = (0..tasks)
        .map(|w| {
            let api = api.clone();
            tokio::spawn(async move {
                for i in (w..n).step_by(tasks) {
                    let cm = ConfigMap {
                        metadata: ObjectMeta { name: Some(format!("cm-{i}")), ..Default::default() },
                        data: Some(BTreeMap::from([("key".to_string(), format!("value-{i}"))])),
                        ..Default::default()
                    };
                    api.create(&PostParams::default(), &cm).await.expect("kube create");
                }
            })
        })
        .collect();
    for h in handles {
        h.await.expect("create task");
    }
    let kube_rate = n as f64 / t.elapsed().as_secs_f64();

    vec![
        Row::new(
            format!(
                "in-process create via router ({} ConfigMaps, {tasks} tasks, 2 workers)",
                thousands(sizes.creates as f64)
            ),
            format!("{} obj/s", thousands(router_rate)),
            ">= 50,000 obj/s",
            Some(router_rate >= 50_000.0),
        ),
        Row::new(
            format!(
                "in-process create via kube::Client ({} ConfigMaps, {tasks} tasks, 2 workers)",
                thousands(n as f64)
            ),
            format!("{} obj/s", thousands(kube_rate)),
            "",
            None,
        ),
    ]
}

/// The router path on a single-threaded runtime: no second worker to contend for the store's
/// lock. Informational: shows how much the 2-worker number loses to contention.
fn one_worker_creates(sizes: Sizes) -> Row {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime");
    let rate = rt.block_on(router_creates(sizes.creates, sizes.create_tasks));
    Row::new(
        format!(
            "in-process create via router ({} ConfigMaps, {} tasks, 1 worker)",
            thousands(sizes.creates as f64),
            sizes.create_tasks
        ),
        format!("{} obj/s", thousands(rate)),
        "",
        None,
    )
}

// ---------------------------------------------------------------------------------------------
// 3. Watch fan-out

/// Extracts `"sent":"<nanos>"` from a watch event line (searching from the end: `data` is last).
fn sent_nanos(line: &[u8]) -> Option<u64> {
    const KEY: &[u8] = b"\"sent\":\"";
    let at = line.windows(KEY.len()).rposition(|w| w == KEY)? + KEY.len();
    let digits = &line[at..];
    let end = digits.iter().position(|b| !b.is_ascii_digit())?;
    std::str::from_utf8(&digits[..end]).ok()?.parse().ok()
}

/// Position of the first `needle` in `hay`, eight bytes at a time (a byte-wise loop over the
/// 250 MB of a full fan-out run costs more CPU than the server's side of the delivery).
fn find_byte(hay: &[u8], needle: u8) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let pattern = u64::from_ne_bytes([needle; 8]);
    let mut words = hay.chunks_exact(8);
    for (i, word) in words.by_ref().enumerate() {
        let x = u64::from_le_bytes(word.try_into().expect("8 bytes")) ^ pattern;
        let found = x.wrapping_sub(LO) & !x & HI;
        if found != 0 {
            return Some(i * 8 + (found.trailing_zeros() / 8) as usize);
        }
    }
    let tail = hay.len() - words.remainder().len();
    words.remainder().iter().position(|&b| b == needle).map(|p| tail + p)
}

/// Counts the complete lines of `buf`, recording the latency of each; returns the bytes consumed.
fn parse_lines(buf: &[u8], now: u64, latencies: &mut Vec<u64>, seen: &mut usize, bad: &mut usize) -> usize {
    let mut start = 0;
    while let Some(nl) = find_byte(&buf[start..], b'\n') {
        let line = &buf[start..start + nl];
        start += nl + 1;
        match sent_nanos(line) {
            Some(sent) if line.starts_with(b"{\"type\":\"ADDED\"") => {
                *seen += 1;
                latencies.push(now.saturating_sub(sent));
            }
            _ => *bad += 1,
        }
    }
    start
}

/// Reads one watch until it has seen `events` events; returns (events seen, latencies in ns, bad lines).
async fn watcher(body: Body, events: usize, epoch: Instant) -> (usize, Vec<u64>, usize) {
    let mut stream = body.into_data_stream();
    let mut latencies = Vec::with_capacity(events);
    let mut carry: Vec<u8> = Vec::new();
    let (mut seen, mut bad) = (0, 0);
    // One timer for the whole watch, not one per chunk.
    let give_up = tokio::time::sleep(Duration::from_secs(60));
    tokio::pin!(give_up);
    while seen < events {
        let chunk = tokio::select! {
            next = stream.next() => match next {
                Some(Ok(chunk)) => chunk,
                _ => break,
            },
            _ = &mut give_up => break,
        };
        let now = epoch.elapsed().as_nanos() as u64;
        if carry.is_empty() {
            let used = parse_lines(&chunk, now, &mut latencies, &mut seen, &mut bad);
            carry.extend_from_slice(&chunk[used..]);
        } else {
            carry.extend_from_slice(&chunk);
            let used = parse_lines(&carry, now, &mut latencies, &mut seen, &mut bad);
            carry.drain(..used);
        }
    }
    (seen, latencies, bad)
}

async fn watch_fanout(sizes: Sizes) -> Vec<Row> {
    let server = ApiServer::default();
    let router = server.router();
    let (n_watchers, n_events) = (sizes.watchers, sizes.events);
    let rv = server.resource_version();
    let epoch = Instant::now();
    let uri = format!("{CM_PATH}?watch=true&resourceVersion={rv}");
    let mut handles = Vec::with_capacity(n_watchers);
    for _ in 0..n_watchers {
        let req = Request::get(&uri).body(Body::empty()).expect("request");
        let resp = router.clone().oneshot(req).await.expect("infallible");
        assert_eq!(resp.status(), StatusCode::OK);
        handles.push(tokio::spawn(watcher(resp.into_body(), n_events, epoch)));
    }
    // Let every watcher task reach its first poll before the first write.
    tokio::time::sleep(Duration::from_millis(50)).await;

    let writer = {
        let router = router.clone();
        let pace = sizes.pace;
        tokio::spawn(async move {
            let start = tokio::time::Instant::now();
            for i in 0..n_events {
                tokio::time::sleep_until(start + pace * i as u32).await;
                let sent = epoch.elapsed().as_nanos() as u64;
                let body = configmap_json(&format!("ev-{i}"), "sent", &sent.to_string());
                let (status, _) = call(&router, Method::POST, CM_PATH, Some(body)).await;
                assert_eq!(status, StatusCode::CREATED);
            }
            start.elapsed()
        })
    };
    let write_time = writer.await.expect("writer");

    let mut all = Vec::with_capacity(n_watchers * n_events);
    let (mut complete, mut delivered, mut bad) = (0, 0, 0);
    for h in handles {
        let (seen, lat, b) = h.await.expect("watcher");
        complete += usize::from(seen == n_events);
        delivered += seen;
        bad += b;
        all.extend(lat);
    }
    all.sort_unstable();
    let (p50, p99, max) = (percentile(&all, 0.50), percentile(&all, 0.99), all.last().copied().unwrap_or(0));
    let all_delivered = complete == n_watchers && bad == 0;
    let per_event_us = write_time.as_secs_f64() * 1e6 / n_events as f64;
    vec![
        Row::new(
            format!("watch fan-out: watchers that got all {n_events} events"),
            format!("{complete}/{n_watchers} ({delivered} deliveries, {bad} bad lines)"),
            format!("{n_watchers}/{n_watchers}"),
            Some(all_delivered),
        ),
        Row::new(
            format!("watch fan-out: write pace (target {} us/event)", sizes.pace.as_micros()),
            format!("{per_event_us:.0} us/event"),
            "",
            None,
        ),
        Row::new("watch fan-out: delivery latency p50", fmt_ms(p50), "", None),
        Row::new(
            "watch fan-out: delivery latency p99",
            fmt_ms(p99),
            "< 10 ms",
            Some(all_delivered && p99 < 10_000_000),
        ),
        Row::new("watch fan-out: delivery latency max", fmt_ms(max), "", None),
    ]
}

// ---------------------------------------------------------------------------------------------
// 4. Memory (in a fresh child process)

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn memory_child(n: usize) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime");
    rt.block_on(async {
        let server = ApiServer::new(Config { history: 1000, timeline_capacity: 0, ..Default::default() });
        let router = server.router();
        let payload: String = (0..1024).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
        // Warm up lazily initialized state (the collection's map, allocator arenas).
        let (status, _) =
            call(&router, Method::POST, CM_PATH, Some(configmap_json("warm-up", "payload", &payload))).await;
        assert_eq!(status, StatusCode::CREATED);
        let before = rss_kib();
        let mut json_bytes = 0usize;
        for i in 0..n {
            let (status, stored) =
                call(&router, Method::POST, CM_PATH, Some(configmap_json(&format!("cm-{i:06}"), "payload", &payload)))
                    .await;
            assert_eq!(status, StatusCode::CREATED);
            json_bytes += stored.len();
        }
        let after = rss_kib();
        println!("memory-child objects={n} rss_before_kib={before} rss_after_kib={after} json_bytes={json_bytes}");
        drop(server);
    });
}

fn memory(sizes: Sizes) -> Vec<Row> {
    let exe = std::env::current_exe().expect("current exe");
    let out = std::process::Command::new(exe)
        .arg("--memory-child")
        .arg(sizes.mem_objects.to_string())
        .output()
        .expect("run the memory child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().find(|l| l.starts_with("memory-child ")).unwrap_or_else(|| {
        panic!("memory child printed no result (status {}): {}", out.status, String::from_utf8_lossy(&out.stderr))
    });
    let field = |k: &str| -> f64 {
        line.split_whitespace()
            .filter_map(|kv| kv.split_once('='))
            .find(|(key, _)| *key == k)
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0.0)
    };
    let growth = (field("rss_after_kib") - field("rss_before_kib")) * 1024.0;
    let json = field("json_bytes");
    let ratio = growth / json;
    let mib = |b: f64| b / (1024.0 * 1024.0);
    vec![
        Row::new(
            format!("memory: {} ConfigMaps, stored JSON total", thousands(field("objects"))),
            format!("{:.1} MiB ({:.0} B/object)", mib(json), json / field("objects")),
            "",
            None,
        ),
        Row::new("memory: RSS growth", format!("{:.1} MiB", mib(growth)), "", None),
        Row::new("memory: RSS growth / JSON size", format!("{ratio:.2}x"), "< 2.5x", Some(ratio < 2.5)),
    ]
}
