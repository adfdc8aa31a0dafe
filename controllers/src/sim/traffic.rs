//! The gateway data plane and its clients: every second of cluster time, each
//! [`TrafficProbe`] sends its requests, through a Gateway's HTTPRoutes (or straight to a
//! Service), to the endpoints of the backend Services, over the [simulated
//! network](super::network) — where the [simulated Ray heads](super::rayhead) answer as Serve
//! proxies.
//!
//! Routing, as a Gateway API data plane does it:
//! - A Gateway that is missing or not `Programmed` serves nothing: every request fails.
//! - Only HTTPRoutes attached to the Gateway whose parent status (from
//!   [`super::gateway::CONTROLLER_NAME`]) says `Accepted=True` route; the rule whose path match
//!   is longest wins (`PathPrefix` on whole segments, or `Exact`); no rule: 404.
//! - Requests are split over the rule's backendRefs by weight, deterministically (smooth
//!   weighted round robin, so 95/5 sends exactly 5 of every 100 requests to the second backend);
//!   all weights 0: 500.
//! - A backend Service that does not exist, or has no ready endpoint in its EndpointSlices
//!   (written by the [endpoint-slice controller](super::endpoints)): 503.
//! - Otherwise the request goes to a ready endpoint (round robin) at the resolved port, and the
//!   answer decides: 2xx is served, anything else or no connection is failed.
//!
//! The status is written once per window (`spec.windowSeconds`): totals, per backend, the last
//! 60 windows, and the last failure with its reason. Probes created later start counting when
//! they are first seen.

use super::SimError;
use super::endpoints::SERVICE_NAME_LABEL;
use super::gateway::{CONTROLLER_NAME, refers_to};
use super::network::SimNetwork;
use crate::Clock;
use crate::crds::gateway::{Gateway, HTTPRoute, HTTPRouteRule};
use crate::crds::trafficprobe::{BackendCount, ProbeFailure, TrafficProbe, TrafficProbeStatus, WindowCount};
use bytes::Bytes;
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher;
use serde_json::json;
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;
use tokio::time::Instant;

/// How many windows a probe's status keeps.
pub const MAX_WINDOWS: usize = 60;

/// One backend a rule sends to.
#[derive(Debug, Clone, PartialEq)]
struct Backend {
    namespace: String,
    name: String,
    port: Option<i32>,
    weight: i64,
}

/// Where this tick's requests of a probe go: backends with their share, or why they all fail.
#[derive(Debug, Clone, PartialEq)]
enum Plan {
    Backends(Vec<Backend>),
    Fail(String),
}

/// A probe's counters while it runs.
#[derive(Debug, Default)]
struct ProbeState {
    status: TrafficProbeStatus,
    /// Smooth weighted round robin: the running weight per backend key.
    current: BTreeMap<String, i64>,
    /// Round robin over endpoints, per backend key.
    next_endpoint: BTreeMap<String, usize>,
    window: WindowCount,
    window_started: Option<Instant>,
    backend_index: BTreeMap<String, usize>,
}

/// The simulated data plane and its clients; see the module docs.
pub struct TrafficSimulator {
    client: kube::Client,
    clock: Clock,
    network: SimNetwork,
}

fn path_match(rule: &HTTPRouteRule, path: &str) -> Option<usize> {
    if rule.matches.is_empty() {
        return Some(1);
    }
    rule.matches
        .iter()
        .filter_map(|m| {
            let pm = m.path.as_ref();
            let kind = pm.and_then(|p| p.type_.as_deref()).unwrap_or("PathPrefix");
            let value = pm.and_then(|p| p.value.as_deref()).unwrap_or("/");
            match kind {
                "Exact" => (path == value).then_some(value.len() + 1),
                _ => {
                    let prefix = value.trim_end_matches('/');
                    (prefix.is_empty() || path == prefix || path.starts_with(&format!("{prefix}/")))
                        .then_some(value.len() + 1)
                }
            }
        })
        .max()
}

/// Whether our controller accepted `route` for Gateway `ns/name`.
fn accepted_for(route: &HTTPRoute, ns: &str, name: &str) -> bool {
    route.status.as_ref().is_some_and(|s| {
        s.parents.iter().any(|p| {
            p.controller_name == CONTROLLER_NAME
                && p.parent_ref.name == name
                && p.parent_ref.namespace.as_deref().unwrap_or(&route.namespace().unwrap_or_default()) == ns
                && p.conditions.iter().any(|c| c.type_ == "Accepted" && c.status == "True")
        })
    })
}

/// Where a probe's requests go now.
fn plan(probe: &TrafficProbe, gateways: &Store<Gateway>, routes: &Store<HTTPRoute>) -> Plan {
    let ns = probe.namespace().unwrap_or_default();
    let path = probe.spec.path.clone().unwrap_or_else(|| "/".into());
    match probe.spec.target.kind.as_str() {
        "Service" => {
            Plan::Backends(vec![Backend { namespace: ns, name: probe.spec.target.name.clone(), port: None, weight: 1 }])
        }
        "Gateway" => {
            let name = &probe.spec.target.name;
            let Some(gw) = gateways.get(&reflector::ObjectRef::new(name).within(&ns)) else {
                return Plan::Fail(format!("Gateway {ns}/{name} not found"));
            };
            let programmed = gw
                .status
                .as_ref()
                .is_some_and(|s| s.conditions.iter().any(|c| c.type_ == "Programmed" && c.status == "True"));
            if !programmed {
                return Plan::Fail(format!("Gateway {ns}/{name} is not programmed"));
            }
            let mut best: Option<(usize, Vec<Backend>)> = None;
            let mut candidates: Vec<_> = routes.state();
            candidates
                .sort_by_key(|r| (r.metadata.creation_timestamp.as_ref().map(|t| t.0), r.namespace(), r.name_any()));
            for route in candidates {
                let rns = route.namespace().unwrap_or_default();
                if !route.spec.parent_refs.iter().any(|p| refers_to(p, &rns, &ns, name))
                    || !accepted_for(&route, &ns, name)
                {
                    continue;
                }
                for rule in &route.spec.rules {
                    let Some(score) = path_match(rule, &path) else { continue };
                    if best.as_ref().is_none_or(|(s, _)| score > *s) {
                        let backends = rule
                            .backend_refs
                            .iter()
                            .map(|b| Backend {
                                namespace: b.namespace.clone().unwrap_or_else(|| rns.clone()),
                                name: b.name.clone(),
                                port: b.port,
                                weight: i64::from(b.weight.unwrap_or(1).max(0)),
                            })
                            .collect();
                        best = Some((score, backends));
                    }
                }
            }
            match best {
                None => Plan::Fail(format!("no accepted HTTPRoute of Gateway {ns}/{name} matches {path} (404)")),
                Some((_, backends)) if backends.iter().all(|b| b.weight == 0) => {
                    Plan::Fail("every backend has weight 0 (500)".into())
                }
                Some((_, backends)) => Plan::Backends(backends),
            }
        }
        other => Plan::Fail(format!("target kind {other} is neither Gateway nor Service")),
    }
}

/// Splits `n` requests over weighted backends with smooth weighted round robin.
fn split(n: i64, backends: &[Backend], current: &mut BTreeMap<String, i64>) -> Vec<i64> {
    let total: i64 = backends.iter().map(|b| b.weight).sum();
    let mut counts = vec![0i64; backends.len()];
    if total <= 0 {
        return counts;
    }
    // The running weight of each backend key (two refs to one Service share one), looked up
    // once here and kept in `current` between ticks.
    let mut keys: Vec<String> = Vec::new();
    let slot: Vec<usize> = backends
        .iter()
        .map(|b| {
            let key = format!("{}/{}", b.namespace, b.name);
            keys.iter().position(|k| *k == key).unwrap_or_else(|| {
                keys.push(key);
                keys.len() - 1
            })
        })
        .collect();
    let mut running: Vec<i64> = keys.iter().map(|k| current.get(k).copied().unwrap_or(0)).collect();
    for _ in 0..n {
        let mut pick = 0;
        let mut pick_value = i64::MIN;
        for (i, b) in backends.iter().enumerate() {
            let v = &mut running[slot[i]];
            *v += b.weight;
            if *v > pick_value {
                pick_value = *v;
                pick = i;
            }
        }
        running[slot[pick]] -= total;
        counts[pick] += 1;
    }
    for (k, v) in keys.into_iter().zip(running) {
        current.insert(k, v);
    }
    counts
}

impl TrafficSimulator {
    /// A data plane that reads the cluster through `client` and sends requests into `network`.
    pub fn new(client: kube::Client, clock: Clock, network: SimNetwork) -> Self {
        Self { client, clock, network }
    }

    /// Sends every probe's requests each second until a watch ends; drop the future to stop.
    pub async fn run(self) -> Result<(), SimError> {
        let (probes, probe_writer) = reflector::store::<TrafficProbe>();
        let (gateways, gw_writer) = reflector::store::<Gateway>();
        let (routes, route_writer) = reflector::store::<HTTPRoute>();
        let (services, svc_writer) = reflector::store::<Service>();
        let (slices, slice_writer) = reflector::store::<EndpointSlice>();
        let streams = [
            super::reflect_into(&self.client, watcher::Config::default(), probe_writer),
            super::reflect_into(&self.client, watcher::Config::default(), gw_writer),
            super::reflect_into(&self.client, watcher::Config::default(), route_writer),
            super::reflect_into(&self.client, watcher::Config::default(), svc_writer),
            super::reflect_into(&self.client, watcher::Config::default(), slice_writer),
        ];
        let mut events = futures::stream::select_all(streams);
        let mut states: HashMap<String, ProbeState> = HashMap::new();
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                next = events.next() => {
                    if next.is_none() {
                        return Err(SimError::WatchEnded("TrafficProbe, Gateway, HTTPRoute, Service or EndpointSlice"));
                    }
                    while let Some(Some(())) = events.next().now_or_never() {}
                    continue;
                }
                _ = tick.tick() => {}
            }
            if !super::scheduler::store_ready(&probes) {
                continue;
            }
            let mut all = probes.state();
            all.sort_by_key(|p| (p.namespace(), p.name_any()));
            states.retain(|uid, _| all.iter().any(|p| p.metadata.uid.as_deref() == Some(uid)));
            for probe in all {
                let uid = probe.metadata.uid.clone().unwrap_or_default();
                let state = states.entry(uid).or_default();
                // A probe whose status could not be written for a moment goes on at the next tick.
                let ticked = self.tick_probe(&probe, state, &gateways, &routes, &services, &slices).await;
                if super::tolerate("traffic", ticked)?.is_none() {
                    break;
                }
            }
        }
    }

    async fn tick_probe(
        &self,
        probe: &TrafficProbe,
        state: &mut ProbeState,
        gateways: &Store<Gateway>,
        routes: &Store<HTTPRoute>,
        services: &Store<Service>,
        slices: &Store<EndpointSlice>,
    ) -> Result<(), SimError> {
        let now = Instant::now();
        let stamp = self.clock.now_rfc3339();
        if state.window_started.is_none() {
            state.window_started = Some(now);
            state.window.start = stamp.clone();
            state.status.start_time = Some(stamp.clone());
        }
        let rate = i64::from(probe.spec.requests_per_second.unwrap_or(10).max(1));
        let path = probe.spec.path.clone().unwrap_or_else(|| "/".into());
        let mut outcomes: Vec<(String, i64, Result<(), String>)> = Vec::new();
        match plan(probe, gateways, routes) {
            Plan::Fail(reason) => outcomes.push((String::new(), rate, Err(reason))),
            Plan::Backends(backends) => {
                let counts = split(rate, &backends, &mut state.current);
                for (b, n) in backends.iter().zip(counts) {
                    if n == 0 {
                        continue;
                    }
                    for (share, result) in self.send(b, n, &path, state, services, slices).await {
                        outcomes.push((b.name.clone(), share, result));
                    }
                }
            }
        }
        for (backend, n, result) in outcomes {
            state.status.sent += n;
            state.window.sent += n;
            let ok = result.is_ok();
            if ok {
                state.status.served += n;
                state.window.served += n;
            } else {
                state.status.failed += n;
                state.window.failed += n;
            }
            if !backend.is_empty() {
                let index = match state.backend_index.get(&backend) {
                    Some(i) => *i,
                    None => {
                        state.status.backends.push(BackendCount { name: backend.clone(), served: 0, failed: 0 });
                        let i = state.status.backends.len() - 1;
                        state.backend_index.insert(backend.clone(), i);
                        i
                    }
                };
                let counter = &mut state.status.backends[index];
                if ok {
                    counter.served += n;
                } else {
                    counter.failed += n;
                }
            }
            if let Err(reason) = result {
                state.status.last_failure = Some(ProbeFailure { time: stamp.clone(), backend, reason });
            }
        }
        let window = Duration::from_secs(u64::try_from(probe.spec.window_seconds.unwrap_or(10).max(1)).unwrap_or(10));
        if state.window_started.is_some_and(|s| now + Duration::from_secs(1) >= s + window) {
            let finished = std::mem::take(&mut state.window);
            state.status.windows.push(finished);
            if state.status.windows.len() > MAX_WINDOWS {
                let extra = state.status.windows.len() - MAX_WINDOWS;
                state.status.windows.drain(..extra);
            }
            state.window_started = Some(now + Duration::from_secs(1));
            state.window.start = jiff::Timestamp::from_second(self.clock.now().as_second() + 1)
                .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
                .unwrap_or_default();
            let api: Api<TrafficProbe> = Api::namespaced(self.client.clone(), &probe.namespace().unwrap_or_default());
            let status = serde_json::to_value(&state.status).unwrap_or_default();
            match api
                .patch_status(&probe.name_any(), &PatchParams::default(), &Patch::Merge(json!({"status": status})))
                .await
            {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => {}
                Err(e) => {
                    return Err(SimError::api(format!("writing the status of TrafficProbe {}", probe.name_any()))(e));
                }
            }
        }
        Ok(())
    }

    /// Sends `n` requests to a backend's endpoints; returns (requests, outcome) per endpoint used.
    async fn send(
        &self,
        backend: &Backend,
        n: i64,
        path: &str,
        state: &mut ProbeState,
        services: &Store<Service>,
        slices: &Store<EndpointSlice>,
    ) -> Vec<(i64, Result<(), String>)> {
        let Some(svc) = services.get(&reflector::ObjectRef::new(&backend.name).within(&backend.namespace)) else {
            return vec![(n, Err(format!("backend Service {}/{} not found (503)", backend.namespace, backend.name)))];
        };
        let svc_port = svc
            .spec
            .as_ref()
            .and_then(|s| s.ports.as_ref())
            .and_then(|ps| ps.iter().find(|p| backend.port.is_none_or(|want| p.port == want)).or_else(|| ps.first()))
            .cloned();
        let mut endpoints: Vec<(String, i32)> = Vec::new();
        let mut own: Vec<_> = slices
            .state()
            .into_iter()
            .filter(|s| {
                s.namespace().as_deref() == Some(backend.namespace.as_str())
                    && s.labels().get(SERVICE_NAME_LABEL) == Some(&backend.name)
            })
            .collect();
        own.sort_by_key(|s| s.name_any());
        for slice in own {
            let port = slice
                .ports
                .as_ref()
                .and_then(|ps| {
                    ps.iter().find(|p| {
                        svc_port.as_ref().is_none_or(|sp| p.name.as_deref() == sp.name.as_deref().or(Some("")))
                    })
                })
                .and_then(|p| p.port)
                .or_else(|| svc_port.as_ref().map(|p| p.port))
                .unwrap_or(80);
            for e in slice.endpoints.iter().flatten() {
                if e.conditions.as_ref().and_then(|c| c.ready) == Some(true)
                    && let Some(ip) = e.addresses.first()
                {
                    endpoints.push((ip.clone(), port));
                }
            }
        }
        if endpoints.is_empty() {
            return vec![(
                n,
                Err(format!(
                    "no healthy upstream: Service {}/{} has no ready endpoint (503)",
                    backend.namespace, backend.name
                )),
            )];
        }
        let key = format!("{}/{}", backend.namespace, backend.name);
        let start = *state.next_endpoint.get(&key).unwrap_or(&0);
        let mut shares: BTreeMap<usize, i64> = BTreeMap::new();
        for i in 0..n {
            *shares.entry((start + i as usize) % endpoints.len()).or_default() += 1;
        }
        state.next_endpoint.insert(key, (start + n as usize) % endpoints.len());
        let mut out = Vec::new();
        for (index, share) in shares {
            let (ip, port) = &endpoints[index];
            let request = http::Request::get(format!("http://{ip}:{port}{path}")).body(Bytes::new());
            let result = match request {
                Err(e) => Err(format!("cannot build a request to {ip}:{port}{path}: {e}")),
                Ok(request) => match self.network.send(request).await {
                    Ok(r) if r.status().is_success() => Ok(()),
                    Ok(r) => {
                        Err(format!("{} from {ip}:{port}: {}", r.status().as_u16(), String::from_utf8_lossy(r.body())))
                    }
                    Err(e) => Err(e.to_string()),
                },
            };
            out.push((share, result));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backend(name: &str, weight: i64) -> Backend {
        Backend { namespace: "default".into(), name: name.into(), port: None, weight }
    }

    #[test]
    fn weights_split_requests_exactly_and_smoothly() {
        let mut current = BTreeMap::new();
        let backends = [backend("a", 95), backend("b", 5)];
        let counts = split(100, &backends, &mut current);
        assert_eq!(counts, vec![95, 5]);
        let mut current = BTreeMap::new();
        let mut total = vec![0, 0];
        for _ in 0..10 {
            let c = split(10, &[backend("a", 90), backend("b", 10)], &mut current);
            total[0] += c[0];
            total[1] += c[1];
        }
        assert_eq!(total, vec![90, 10]);
        assert_eq!(split(5, &[backend("a", 0)], &mut BTreeMap::new()), vec![0]);
    }

    #[test]
    fn the_longest_path_match_wins() {
        let rule = |t: &str, v: &str| HTTPRouteRule {
            matches: vec![crate::crds::gateway::HTTPRouteMatch {
                path: Some(crate::crds::gateway::HTTPPathMatch { type_: Some(t.into()), value: Some(v.into()) }),
                ..Default::default()
            }],
            ..Default::default()
        };
        assert_eq!(path_match(&rule("PathPrefix", "/"), "/fruit"), Some(2));
        assert_eq!(path_match(&rule("PathPrefix", "/fruit"), "/fruit/x"), Some(7));
        assert_eq!(path_match(&rule("PathPrefix", "/fruit"), "/fruity"), None);
        assert_eq!(path_match(&rule("Exact", "/fruit"), "/fruit"), Some(7));
        assert_eq!(path_match(&HTTPRouteRule::default(), "/x"), Some(1));
    }
}
