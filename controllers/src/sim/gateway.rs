//! A Gateway API controller (the status side; the data plane is [`super::traffic`]): it serves
//! every GatewayClass whose `controllerName` is [`CONTROLLER_NAME`], the Gateways of those
//! classes and the HTTPRoutes attached to them.
//!
//! - GatewayClass: `Accepted=True` (reason `Accepted`).
//! - Gateway: `Accepted=True`, then `Programmed=True` once the program delay has passed since
//!   the controller first saw it; an address from the service range (`10.96.x.y`, stable per
//!   Gateway); per listener `Accepted`, `Programmed`, `ResolvedRefs` True and `Conflicted` False,
//!   the route kinds it supports and how many routes are attached.
//! - HTTPRoute: for each parentRef to such a Gateway, a `status.parents` entry with
//!   `Accepted` (True when the Gateway is accepted) and `ResolvedRefs` (True iff every backend
//!   Service exists, else False/`BackendNotFound`). Entries of other controllers are kept.
//!
//! # Knobs
//!
//! Through [`GatewayHandle::turn`]; each takes `true` (every object), a label selector over the
//! object's labels, or `null`/`false` (off):
//! - `gateway-not-accepted`: Gateways stay `Accepted=False` (reason `Invalid`);
//! - `gateway-not-programmed`: Gateways stay `Programmed=False` (reason `AddressNotAssigned`);
//! - `route-not-accepted`: HTTPRoutes stay `Accepted=False` (reason `NotAllowedByListeners`);
//! - `program-delay`: a duration, or `null` for the configured one.
//!
//! And per object, as annotations (`"true"`): `sim.kproof.dev/gateway-not-accepted`,
//! `sim.kproof.dev/gateway-not-programmed` on a Gateway, `sim.kproof.dev/route-not-accepted` on
//! an HTTPRoute.

use super::SimError;
use crate::Clock;
use crate::crds::gateway::{Gateway, GatewayClass, HTTPRoute, ParentReference};
use apimachinery::LabelSelector;
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::Service;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher;
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;

/// The `controllerName` of the GatewayClasses this controller serves.
pub const CONTROLLER_NAME: &str = "kproof.dev/gateway-controller";
/// The GatewayClass `kproof serve` (and the `gateway` actor's setup) creates, named as the
/// implementation the simulated gateway stands for: Istio, whose installation ships GatewayClass
/// `istio`, the class KubeRay's incremental-upgrade sample names
/// (ray-operator/config/samples/ray-service.incremental-upgrade.yaml at v1.7.0).
pub const DEFAULT_CLASS: &str = "istio";
/// The knobs [`GatewayHandle::turn`] knows.
pub const KNOBS: &[&str] = &["gateway-not-accepted", "gateway-not-programmed", "route-not-accepted", "program-delay"];

/// How the simulated gateway controller behaves.
#[derive(Debug, Clone)]
pub struct GatewayConfig {
    /// From first seeing a Gateway to reporting it Programmed.
    pub program_delay: Duration,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        Self { program_delay: Duration::from_secs(1) }
    }
}

/// What a row sets in `needs.settings.gateway`. Unknown keys fail to load, with file and line.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GatewaySettings {
    /// From first seeing a Gateway to reporting it Programmed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program_delay: Option<apimachinery::DurationText>,
    /// `false`: the cluster has no Gateway API implementation at all, neither a controller nor
    /// the Gateway API CRDs (a cluster without Istio or another gateway). A backend that
    /// installs them for every row starts a cluster without them for such a row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installed: Option<bool>,
}

impl GatewayConfig {
    /// Applies a row's settings.
    pub fn apply(&mut self, settings: &GatewaySettings) {
        if let Some(d) = settings.program_delay {
            self.program_delay = d.0;
        }
    }
}

#[derive(Debug, Clone, Default)]
struct Knobs {
    gateway_not_accepted: Option<LabelSelector>,
    gateway_not_programmed: Option<LabelSelector>,
    route_not_accepted: Option<LabelSelector>,
    program_delay: Option<Duration>,
}

struct Shared {
    knobs: Mutex<Knobs>,
    changed: Notify,
    config: GatewayConfig,
}

/// Turns the gateway controller's knobs while it runs; cheap to clone.
#[derive(Clone)]
pub struct GatewayHandle(Arc<Shared>);

impl std::fmt::Debug for GatewayHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("GatewayHandle").field(&*self.0.knobs.lock()).finish()
    }
}

fn choice(knob: &str, value: &Value) -> Result<Option<LabelSelector>, String> {
    match value {
        Value::Null | Value::Bool(false) => Ok(None),
        Value::Bool(true) => Ok(Some(LabelSelector::default())),
        Value::String(s) => LabelSelector::parse(s).map(Some).map_err(|e| format!("knob {knob}: {e}")),
        other => Err(format!("knob {knob} takes true, false, null or a label selector string, not {other}")),
    }
}

impl GatewayHandle {
    /// Sets knob `knob` to `value` (see the module docs); an unknown knob or a bad value is an
    /// error that says what is accepted, and changes nothing.
    pub fn turn(&self, knob: &str, value: &Value) -> Result<(), String> {
        {
            let mut k = self.0.knobs.lock();
            match knob {
                "gateway-not-accepted" => k.gateway_not_accepted = choice(knob, value)?,
                "gateway-not-programmed" => k.gateway_not_programmed = choice(knob, value)?,
                "route-not-accepted" => k.route_not_accepted = choice(knob, value)?,
                "program-delay" => {
                    k.program_delay = match value {
                        Value::Null => None,
                        Value::String(s) => Some(
                            apimachinery::DurationText::parse(s)
                                .map(|d| d.0)
                                .map_err(|e| format!("knob {knob}: {e}"))?,
                        ),
                        other => {
                            return Err(format!(
                                "knob {knob} takes a duration string such as \"30s\" (or null), not {other}"
                            ));
                        }
                    }
                }
                other => return Err(format!("unknown gateway knob {other:?} (known: {})", KNOBS.join(", "))),
            }
        }
        self.0.changed.notify_one();
        Ok(())
    }
}

/// The simulated gateway controller; see the module docs.
pub struct GatewayController {
    client: kube::Client,
    clock: Clock,
    shared: Arc<Shared>,
}

fn knob_on(choice: &Option<LabelSelector>, obj: &impl ResourceExt, annotation: &str) -> bool {
    choice.as_ref().is_some_and(|s| s.matches(obj.labels()))
        || obj.annotations().get(&format!("sim.kproof.dev/{annotation}")).map(String::as_str) == Some("true")
}

/// A condition as JSON, keeping the previous transition time when the status did not change.
fn condition(
    previous: &[Value],
    type_: &str,
    ok: bool,
    reason: &str,
    message: &str,
    generation: Option<i64>,
    now: &str,
) -> Value {
    let status = if ok { "True" } else { "False" };
    let since = previous
        .iter()
        .find(|c| c["type"] == type_ && c["status"] == status)
        .and_then(|c| c["lastTransitionTime"].as_str())
        .filter(|t| *t != "1970-01-01T00:00:00Z")
        .unwrap_or(now)
        .to_string();
    json!({"type": type_, "status": status, "reason": reason, "message": message,
           "observedGeneration": generation, "lastTransitionTime": since})
}

fn conditions_of(status: Option<Value>) -> Vec<Value> {
    status.and_then(|s| s.get("conditions").and_then(Value::as_array).cloned()).unwrap_or_default()
}

/// Whether `parent` (of a route in `route_ns`) names Gateway `ns/name`.
pub(crate) fn refers_to(parent: &ParentReference, route_ns: &str, gateway_ns: &str, gateway: &str) -> bool {
    parent.group.as_deref().is_none_or(|g| g == crate::crds::gateway::GROUP)
        && parent.kind.as_deref().is_none_or(|k| k == "Gateway")
        && parent.name == gateway
        && parent.namespace.as_deref().unwrap_or(route_ns) == gateway_ns
}

/// A stable address in the service range for a Gateway.
fn address_for(ns: &str, name: &str) -> String {
    let h = apimachinery::names::fnv1a(&format!("{ns}/{name}"));
    format!("10.96.{}.{}", (h >> 8) % 250 + 1, h % 250 + 2)
}

impl GatewayController {
    /// A controller writing through `client`, stamping times from `clock`.
    pub fn new(client: kube::Client, clock: Clock, config: GatewayConfig) -> Self {
        let shared = Arc::new(Shared { knobs: Mutex::default(), changed: Notify::new(), config });
        Self { client, clock, shared }
    }

    /// The handle that turns this controller's knobs.
    pub fn handle(&self) -> GatewayHandle {
        GatewayHandle(self.shared.clone())
    }

    /// Watches classes, Gateways, routes and Services and writes their status until a watch
    /// ends; drop the future to stop it.
    pub async fn run(self) -> Result<(), SimError> {
        let (classes, class_writer) = reflector::store::<GatewayClass>();
        let (gateways, gw_writer) = reflector::store::<Gateway>();
        let (routes, route_writer) = reflector::store::<HTTPRoute>();
        let (services, svc_writer) = reflector::store::<Service>();
        let streams = [
            super::reflect_into(&self.client, watcher::Config::default(), class_writer),
            super::reflect_into(&self.client, watcher::Config::default(), gw_writer),
            super::reflect_into(&self.client, watcher::Config::default(), route_writer),
            super::reflect_into(&self.client, watcher::Config::default(), svc_writer),
        ];
        let mut events = futures::stream::select_all(streams);
        let mut first_seen: HashMap<String, Instant> = HashMap::new();
        let mut wake: Option<Instant> = None;
        loop {
            let sleep_until = wake.unwrap_or_else(|| Instant::now() + Duration::from_secs(3600));
            tokio::select! {
                next = events.next() => {
                    if next.is_none() {
                        return Err(SimError::WatchEnded("GatewayClass, Gateway, HTTPRoute or Service"));
                    }
                    while let Some(Some(())) = events.next().now_or_never() {}
                }
                _ = tokio::time::sleep_until(sleep_until) => {}
                _ = self.shared.changed.notified() => {}
            }
            let ready = super::scheduler::store_ready(&classes)
                && super::scheduler::store_ready(&gateways)
                && super::scheduler::store_ready(&routes)
                && super::scheduler::store_ready(&services);
            if !ready {
                continue;
            }
            let pass = self.pass(&classes, &gateways, &routes, &services, &mut first_seen).await;
            wake = match super::tolerate("gateway", pass)? {
                Some(next) => next,
                None => Some(Instant::now() + super::RETRY_AFTER),
            };
        }
    }

    async fn pass(
        &self,
        classes: &Store<GatewayClass>,
        gateways: &Store<Gateway>,
        routes: &Store<HTTPRoute>,
        services: &Store<Service>,
        first_seen: &mut HashMap<String, Instant>,
    ) -> Result<Option<Instant>, SimError> {
        let knobs = self.shared.knobs.lock().clone();
        let program_delay = knobs.program_delay.unwrap_or(self.shared.config.program_delay);
        let now = self.clock.now_rfc3339();
        let instant = Instant::now();
        let mut wake: Option<Instant> = None;
        let mine: Vec<String> = classes
            .state()
            .iter()
            .filter(|c| c.spec.controller_name == CONTROLLER_NAME)
            .map(|c| c.name_any())
            .collect();
        for class in classes.state().iter().filter(|c| c.spec.controller_name == CONTROLLER_NAME) {
            let previous = conditions_of(serde_json::to_value(&class.status).ok());
            let conditions = vec![condition(
                &previous,
                "Accepted",
                true,
                "Accepted",
                &format!("Handled by {CONTROLLER_NAME} (kproof's simulated gateway)"),
                class.metadata.generation,
                &now,
            )];
            if previous != conditions {
                let api: Api<GatewayClass> = Api::all(self.client.clone());
                self.write_status(&api, &class.name_any(), json!({"conditions": conditions})).await?;
            }
        }
        let all_routes = routes.state();
        let mut accepted_gateways: Vec<(String, String)> = Vec::new();
        for gw in gateways.state().iter().filter(|g| mine.contains(&g.spec.gateway_class_name)) {
            let ns = gw.namespace().unwrap_or_default();
            let name = gw.name_any();
            let seen = *first_seen.entry(gw.metadata.uid.clone().unwrap_or_default()).or_insert(instant);
            let accepted = !knob_on(&knobs.gateway_not_accepted, gw.as_ref(), "gateway-not-accepted");
            let delay_over = instant >= seen + program_delay;
            if !delay_over {
                let at = seen + program_delay;
                wake = Some(wake.map_or(at, |w| w.min(at)));
            }
            let programmed = accepted
                && delay_over
                && !knob_on(&knobs.gateway_not_programmed, gw.as_ref(), "gateway-not-programmed");
            if accepted {
                accepted_gateways.push((ns.clone(), name.clone()));
            }
            let previous = serde_json::to_value(&gw.status).unwrap_or(Value::Null);
            let prev_conditions = conditions_of(Some(previous.clone()));
            let generation = gw.metadata.generation;
            let (p_reason, p_message) = if !accepted {
                ("Invalid", "The Gateway is not accepted (kproof knob gateway-not-accepted)")
            } else if programmed {
                ("Programmed", "Programmed by kproof's simulated gateway")
            } else if !delay_over {
                ("Pending", "Waiting for the simulated data plane")
            } else {
                ("AddressNotAssigned", "No address could be assigned (kproof knob gateway-not-programmed)")
            };
            let conditions = vec![
                condition(
                    &prev_conditions,
                    "Accepted",
                    accepted,
                    if accepted { "Accepted" } else { "Invalid" },
                    if accepted {
                        "Accepted by kproof's simulated gateway"
                    } else {
                        "Not accepted (kproof knob gateway-not-accepted)"
                    },
                    generation,
                    &now,
                ),
                condition(&prev_conditions, "Programmed", programmed, p_reason, p_message, generation, &now),
            ];
            let listeners: Vec<Value> = gw
                .spec
                .listeners
                .iter()
                .map(|l| {
                    let prev_l: Vec<Value> = previous["listeners"]
                        .as_array()
                        .and_then(|ls| ls.iter().find(|x| x["name"] == l.name.as_str()))
                        .and_then(|x| x["conditions"].as_array().cloned())
                        .unwrap_or_default();
                    let attached = all_routes
                        .iter()
                        .filter(|r| {
                            let rns = r.namespace().unwrap_or_default();
                            rns == ns
                                && r.spec.parent_refs.iter().any(|p| {
                                    refers_to(p, &rns, &ns, &name) && p.section_name.as_deref().is_none_or(|s| s == l.name)
                                })
                        })
                        .count() as i32;
                    json!({
                        "name": l.name,
                        "attachedRoutes": attached,
                        "supportedKinds": [{"group": crate::crds::gateway::GROUP, "kind": "HTTPRoute"}],
                        "conditions": [
                            condition(&prev_l, "Accepted", accepted, if accepted {"Accepted"} else {"Invalid"}, "", generation, &now),
                            condition(&prev_l, "Programmed", programmed, p_reason, "", generation, &now),
                            condition(&prev_l, "ResolvedRefs", true, "ResolvedRefs", "", generation, &now),
                            condition(&prev_l, "Conflicted", false, "NoConflicts", "", generation, &now),
                        ],
                    })
                })
                .collect();
            let mut status = json!({"conditions": conditions, "listeners": listeners});
            if programmed {
                status["addresses"] = json!([{"type": "IPAddress", "value": address_for(&ns, &name)}]);
            }
            let observed = json!({
                "conditions": previous.get("conditions").cloned().unwrap_or(json!([])),
                "listeners": previous.get("listeners").cloned().unwrap_or(json!([])),
                "addresses": previous.get("addresses").cloned().unwrap_or(Value::Null),
            });
            let wanted = json!({
                "conditions": status["conditions"],
                "listeners": status["listeners"],
                "addresses": status.get("addresses").cloned().unwrap_or(Value::Null),
            });
            if observed != wanted {
                if !programmed {
                    // A merge patch removes the address a Gateway no longer has.
                    status["addresses"] = Value::Null;
                }
                let api: Api<Gateway> = Api::namespaced(self.client.clone(), &ns);
                self.write_status(&api, &name, status).await?;
            }
        }
        let all_gateways = gateways.state();
        for route in all_routes.iter() {
            let rns = route.namespace().unwrap_or_default();
            let previous = serde_json::to_value(&route.status).unwrap_or(Value::Null);
            let prev_parents: Vec<Value> = previous["parents"].as_array().cloned().unwrap_or_default();
            let mut parents: Vec<Value> =
                prev_parents.iter().filter(|p| p["controllerName"] != CONTROLLER_NAME).cloned().collect();
            let missing: Vec<String> = route
                .spec
                .rules
                .iter()
                .flat_map(|r| &r.backend_refs)
                .filter(|b| {
                    b.kind.as_deref().is_none_or(|k| k == "Service") && b.group.as_deref().is_none_or(str::is_empty)
                })
                .filter_map(|b| {
                    let bns = b.namespace.clone().unwrap_or_else(|| rns.clone());
                    services
                        .get(&reflector::ObjectRef::new(&b.name).within(&bns))
                        .is_none()
                        .then(|| format!("{bns}/{}", b.name))
                })
                .collect();
            for parent in &route.spec.parent_refs {
                let gw_ns = parent.namespace.clone().unwrap_or_else(|| rns.clone());
                let Some(gw) = all_gateways.iter().find(|g| {
                    refers_to(parent, &rns, &g.namespace().unwrap_or_default(), &g.name_any())
                        && g.namespace().as_deref() == Some(gw_ns.as_str())
                }) else {
                    continue;
                };
                if !mine.contains(&gw.spec.gateway_class_name) {
                    continue;
                }
                let prev_c: Vec<Value> = prev_parents
                    .iter()
                    .find(|p| p["controllerName"] == CONTROLLER_NAME && p["parentRef"]["name"] == parent.name.as_str())
                    .and_then(|p| p["conditions"].as_array().cloned())
                    .unwrap_or_default();
                let gateway_accepted = accepted_gateways.contains(&(gw_ns.clone(), parent.name.clone()));
                let accepted =
                    gateway_accepted && !knob_on(&knobs.route_not_accepted, route.as_ref(), "route-not-accepted");
                let generation = route.metadata.generation;
                let accepted_message = if accepted {
                    "Accepted by kproof's simulated gateway"
                } else if !gateway_accepted {
                    "The parent Gateway is not accepted"
                } else {
                    "Not accepted (kproof knob route-not-accepted)"
                };
                let resolved_message = if missing.is_empty() {
                    String::new()
                } else {
                    format!("Service(s) {} not found", missing.join(", "))
                };
                let mut parent_ref = serde_json::to_value(parent).unwrap_or(Value::Null);
                parent_ref["group"] = json!(parent.group.clone().unwrap_or_else(|| crate::crds::gateway::GROUP.into()));
                parent_ref["kind"] = json!(parent.kind.clone().unwrap_or_else(|| "Gateway".into()));
                parents.push(json!({
                    "parentRef": parent_ref,
                    "controllerName": CONTROLLER_NAME,
                    "conditions": [
                        condition(&prev_c, "Accepted", accepted,
                            if accepted {"Accepted"} else {"NotAllowedByListeners"}, accepted_message, generation, &now),
                        condition(&prev_c, "ResolvedRefs", missing.is_empty(),
                            if missing.is_empty() {"ResolvedRefs"} else {"BackendNotFound"}, &resolved_message, generation, &now),
                    ],
                }));
            }
            if parents != prev_parents {
                let api: Api<HTTPRoute> = Api::namespaced(self.client.clone(), &rns);
                self.write_status(&api, &route.name_any(), json!({"parents": parents})).await?;
            }
        }
        Ok(wake)
    }

    async fn write_status<K>(&self, api: &Api<K>, name: &str, status: Value) -> Result<(), SimError>
    where
        K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    {
        match api.patch_status(name, &PatchParams::default(), &Patch::Merge(json!({"status": status}))).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => Ok(()),
            Err(e) => Err(SimError::api(format!("writing the status of {name}"))(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parent_refs_default_to_gateways_in_the_route_namespace() {
        let p = ParentReference { name: "g".into(), ..Default::default() };
        assert!(refers_to(&p, "ns", "ns", "g"));
        assert!(!refers_to(&p, "ns", "other", "g"));
        let elsewhere = ParentReference { name: "g".into(), namespace: Some("other".into()), ..Default::default() };
        assert!(refers_to(&elsewhere, "ns", "other", "g"));
        let service = ParentReference { name: "g".into(), kind: Some("Service".into()), ..Default::default() };
        assert!(!refers_to(&service, "ns", "ns", "g"));
    }

    #[test]
    fn conditions_keep_their_transition_time_while_unchanged() {
        let before = vec![json!({"type": "Accepted", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"})];
        let c = condition(&before, "Accepted", true, "Accepted", "", Some(1), "2026-01-01T00:05:00Z");
        assert_eq!(c["lastTransitionTime"], "2026-01-01T00:00:00Z");
        let c = condition(&before, "Accepted", false, "Invalid", "", Some(1), "2026-01-01T00:05:00Z");
        assert_eq!(c["lastTransitionTime"], "2026-01-01T00:05:00Z");
        let pending = vec![json!({"type": "Accepted", "status": "True", "lastTransitionTime": "1970-01-01T00:00:00Z"})];
        let c = condition(&pending, "Accepted", true, "Accepted", "", Some(1), "2026-01-01T00:05:00Z");
        assert_eq!(c["lastTransitionTime"], "2026-01-01T00:05:00Z");
    }
}
