//! The contract file: obligations (C1–C18, each with its upstream sources) and the scenarios that judge
//! them, as data. A scenario is a suite row whose steps may also use the workload steps
//! (`createWorkload`, `scaleWorkload`, `deleteWorkload`, `markPods`, `completePods`, `failPods`), expanded
//! here into ordinary suite steps for the integrator's workload.

use crate::suite::{Expectation, Row, RowKind, Step};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The contract this build certifies against, embedded so `kproof certify` works anywhere.
pub const RESERVEDFOR_CONTRACT: &str = include_str!("../../../suites/certify/reservedfor.yaml");

/// The profile a controller is certified in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CertProfile {
    /// PodGroups (KEP-5729, Kubernetes 1.36/1.37): the controller shares claims through a
    /// PodGroup, the scheduler and kube-controller-manager keep `status.reservedFor`.
    Pg,
    /// The controller writes its own non-pod entry into `status.reservedFor`.
    Raw,
    /// KEP-5194 as proposed (never merged): claim `spec.reservedFor`.
    W,
}

impl CertProfile {
    /// Every profile.
    pub const ALL: [CertProfile; 3] = [CertProfile::Pg, CertProfile::Raw, CertProfile::W];

    /// The name on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            CertProfile::Pg => "pg",
            CertProfile::Raw => "raw",
            CertProfile::W => "w",
        }
    }

    /// The DRA profile the reference components run.
    pub fn dra(self) -> controllers::dra::DraProfile {
        match self {
            CertProfile::Pg => controllers::dra::DraProfile::Podgroup,
            CertProfile::Raw => controllers::dra::DraProfile::Raw,
            CertProfile::W => controllers::dra::DraProfile::Workloads,
        }
    }

    /// What the profile models, for the certificate.
    pub fn semantics(self) -> &'static str {
        match self {
            CertProfile::Pg => {
                "Kubernetes 1.37: KEP-5729 PodGroup reservations (gates GenericWorkload and DRAWorkloadResourceClaims on), podgroupprotection, resourceclaim controller keeping unknown entries (kubernetes/kubernetes#136450)"
            }
            CertProfile::Raw => {
                "Kubernetes 1.37 baseline: pod entries per pod, non-pod entries written by the workload controller and kept by the resourceclaim controller (kubernetes/kubernetes#136450), resourceclaims/binding authorization (DRAResourceClaimGranularStatusAuthorization)"
            }
            CertProfile::W => {
                "KEP-5194 as proposed in kubernetes/enhancements#5379 (never merged): claim spec.reservedFor, status.allocation.reservedForAnyPod, gate DRAReservedForWorkloads"
            }
        }
    }
}

impl std::fmt::Display for CertProfile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for CertProfile {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        CertProfile::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| format!("unknown profile {s:?} (known: pg, raw, w)"))
    }
}

/// One obligation of the contract.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Obligation {
    /// `C1` … `C18`.
    pub id: String,
    /// What the controller must do.
    pub title: String,
    /// Where it comes from: the upstream sources it rests on (URLs a reader can open).
    pub source: String,
    /// Why it has no verdict in a profile that has no scenario for it.
    #[serde(default)]
    pub not_applicable: BTreeMap<CertProfile, String>,
}

/// One scenario: a suite row for the integrator's workload, judging the obligations it names.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Scenario {
    /// Unique within the contract.
    pub id: String,
    /// What the scenario shows, in one line.
    pub title: String,
    /// The obligations this scenario judges (`[C4]`).
    pub obligations: Vec<String>,
    /// The profiles it runs in.
    pub profiles: Vec<CertProfile>,
    /// The obligations it judges and the upstream source of the behaviour (URLs a reader can open).
    pub source: String,
    /// Run against an API server with the profile's feature gate off (version skew, C15).
    #[serde(default)]
    pub apiserver_gate_off: bool,
    /// Resources taken out of the integrator's Roles in this scenario (`resourceclaims/binding`):
    /// how a controller behaves when a permission it needs is missing (C14).
    #[serde(default)]
    pub drop_resources: Vec<String>,
    /// Writes of the controller the API server answers with 409 Conflict, as if another
    /// writer had just changed the object (C16: re-read and retry).
    #[serde(default)]
    pub inject_conflicts: Vec<InjectedConflict>,
    /// The controller's watches deliver the events about the scenario's namespace this late,
    /// while its reads stay current: its informer cache runs behind the server (C16).
    #[serde(default)]
    pub inject_watch_lag: Option<InjectedWatchLag>,
    /// Runs after the scenarios that run side by side, on its own: a heavy scenario (C13's
    /// 257 pods) would otherwise slow the shared reference components and eat into the other
    /// scenarios' time windows (T_release, `consistently`).
    #[serde(default)]
    pub run_alone: bool,
    /// Suite steps, plus the workload steps.
    #[serde(default)]
    pub steps: Vec<Value>,
    /// Suite expectations.
    #[serde(default)]
    pub expect: Vec<Value>,
}

/// The controller's next `count` updates and patches of one resource in the scenario's
/// namespace are answered 409 Conflict by the API server (a [`fake_apiserver::ConflictFault`]).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct InjectedConflict {
    /// API group, `""` for the core group; `${workload.group}` is the workload's.
    #[serde(default)]
    pub api_group: String,
    /// Lowercase plural (`resourceclaims`); `${workload.resource}` is the workload's.
    pub resource: String,
    /// `status`, or `""` (the default) for the object itself.
    #[serde(default)]
    pub subresource: String,
    /// How many writes are refused.
    pub count: usize,
}

impl InjectedConflict {
    /// The fault for `user` in `namespace`, with the workload's group and resource filled in.
    pub fn fault(&self, workload: &Workload, user: &str, namespace: &str) -> fake_apiserver::ConflictFault {
        let group = workload.api_version().split_once('/').map(|(g, _)| g).unwrap_or_default();
        let fill = |s: &str| s.replace("${workload.group}", group).replace("${workload.resource}", &workload.resource);
        fake_apiserver::ConflictFault {
            user: user.to_string(),
            namespace: namespace.to_string(),
            group: fill(&self.api_group),
            resource: fill(&self.resource),
            subresource: self.subresource.clone(),
            count: self.count,
        }
    }
}

/// Informer lag: the API server holds back the watch events it sends the controller about
/// objects in the scenario's namespace (a [`fake_apiserver::WatchLag`]).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct InjectedWatchLag {
    /// How late, as a Go duration (`2s`); wall time in a certification run.
    pub duration: String,
}

impl InjectedWatchLag {
    /// The lag for `user` in `namespace`.
    pub fn fault(&self, user: &str, namespace: &str) -> Result<fake_apiserver::WatchLag, String> {
        let delay = crate::suite::parse_duration(&self.duration)
            .map_err(|e| format!("injectWatchLag duration {:?}: {e}", self.duration))?;
        if delay.is_zero() {
            return Err(format!("injectWatchLag duration {:?}: give a lag above 0", self.duration));
        }
        Ok(fake_apiserver::WatchLag { user: user.to_string(), namespace: namespace.to_string(), delay })
    }
}

/// The contract file.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Contract {
    /// `reservedfor`.
    pub contract: String,
    /// What the contract is about, in one line.
    pub title: String,
    /// The obligations a certified controller meets.
    pub obligations: Vec<Obligation>,
    /// The scenarios that judge the obligations.
    pub scenarios: Vec<Scenario>,
}

/// A contract that cannot be used: where and why.
#[derive(Debug, thiserror::Error)]
pub enum ContractError {
    /// The file does not parse.
    #[error("{origin}: {message}")]
    Parse {
        /// Where the contract was read from (its path, as given).
        origin: String,
        /// What the parser reports.
        message: String,
    },
    /// The file parses but is inconsistent.
    #[error("{origin}: scenario {scenario}: {message}")]
    Invalid {
        /// Where the contract was read from (its path, as given).
        origin: String,
        /// The id of the scenario at fault.
        scenario: String,
        /// What is wrong with it.
        message: String,
    },
    /// A file named on the command line.
    #[error("{path}: {message}")]
    Input {
        /// The file: the contract, a CRD, RBAC or workload manifest.
        path: PathBuf,
        /// Why it cannot be used (unreadable, wrong kind, ...).
        message: String,
    },
}

impl Contract {
    /// Parses and checks a contract (`origin` names it in errors).
    pub fn parse(text: &str, origin: &str) -> Result<Contract, ContractError> {
        let contract: Contract = serde_saphyr::from_str(text)
            .map_err(|e| ContractError::Parse { origin: origin.to_string(), message: e.to_string() })?;
        let known: Vec<&str> = contract.obligations.iter().map(|o| o.id.as_str()).collect();
        let mut ids = std::collections::BTreeSet::new();
        for s in &contract.scenarios {
            let invalid = |message: String| ContractError::Invalid {
                origin: origin.to_string(),
                scenario: s.id.clone(),
                message,
            };
            if !ids.insert(s.id.clone()) {
                return Err(invalid("duplicate id".into()));
            }
            for o in &s.obligations {
                if !known.contains(&o.as_str()) {
                    return Err(invalid(format!("unknown obligation {o:?} (known: {})", known.join(", "))));
                }
            }
            if s.obligations.is_empty() || s.profiles.is_empty() {
                return Err(invalid("names no obligation or no profile".into()));
            }
            if let Some(c) = s.inject_conflicts.iter().find(|c| c.count == 0 || c.resource.is_empty()) {
                return Err(invalid(format!(
                    "injectConflicts {}/{}: give a resource and a count above 0",
                    c.resource, c.subresource
                )));
            }
            if let Some(lag) = &s.inject_watch_lag {
                lag.fault("u", "ns").map_err(invalid)?;
            }
            // Every scenario must expand for a sample workload: typos in workload steps and
            // suite steps surface when the contract loads, not in the middle of a run.
            let sample = Workload::sample();
            s.row(&sample, &Bindings::sample()).map_err(invalid)?;
        }
        for o in &contract.obligations {
            for p in CertProfile::ALL {
                let has_scenario =
                    contract.scenarios.iter().any(|s| s.profiles.contains(&p) && s.obligations.contains(&o.id));
                if !has_scenario && !o.not_applicable.contains_key(&p) {
                    return Err(ContractError::Invalid {
                        origin: origin.to_string(),
                        scenario: "-".into(),
                        message: format!(
                            "obligation {} has no scenario and no notApplicable reason for profile {p}",
                            o.id
                        ),
                    });
                }
            }
        }
        Ok(contract)
    }

    /// The embedded ReservedFor contract.
    pub fn reservedfor() -> Result<Contract, ContractError> {
        Contract::parse(RESERVEDFOR_CONTRACT, "suites/certify/reservedfor.yaml")
    }
}

/// The integrator's workload: its manifest and where its replica count lives.
#[derive(Debug, Clone)]
pub struct Workload {
    /// The manifest (one object).
    pub manifest: Value,
    /// Dotted path of the replica count in the manifest (`spec.replicas`).
    pub replicas_path: String,
    /// The CRD's plural resource name (`trainjobs`).
    pub resource: String,
}

impl Workload {
    /// Reads the workload manifest and finds its kind's plural among `crds`.
    pub fn load(manifest: &Path, replicas_path: &str, crds: &[Value]) -> Result<Workload, ContractError> {
        let input = |message: String| ContractError::Input { path: manifest.to_path_buf(), message };
        let docs = read_objects(manifest)?;
        let [doc] = docs.as_slice() else {
            return Err(input(format!("expected one workload object, found {}", docs.len())));
        };
        let api_version = doc["apiVersion"].as_str().unwrap_or_default();
        let kind = doc["kind"].as_str().unwrap_or_default();
        if doc["metadata"]["name"].as_str().is_none_or(str::is_empty) {
            return Err(input("the workload needs metadata.name".into()));
        }
        let group = api_version.split_once('/').map(|(g, _)| g).unwrap_or_default();
        let resource = crds
            .iter()
            .find(|c| c["spec"]["group"].as_str() == Some(group) && c["spec"]["names"]["kind"].as_str() == Some(kind))
            .and_then(|c| c["spec"]["names"]["plural"].as_str())
            .ok_or_else(|| input(format!("no --crd defines kind {kind} in group {group:?}")))?
            .to_string();
        let workload = Workload { manifest: doc.clone(), replicas_path: replicas_path.to_string(), resource };
        if workload.replicas().is_none() {
            return Err(input(format!("no integer at --replicas-path {replicas_path}")));
        }
        Ok(workload)
    }

    fn sample() -> Workload {
        Workload {
            manifest: json!({"apiVersion": "example.com/v1", "kind": "Job", "metadata": {"name": "w"}, "spec": {"replicas": 2}}),
            replicas_path: "spec.replicas".into(),
            resource: "jobs".into(),
        }
    }

    /// The replica count in the manifest.
    pub fn replicas(&self) -> Option<i64> {
        self.replicas_path.split('.').try_fold(&self.manifest, |v, k| v.get(k)).and_then(Value::as_i64)
    }

    /// `{a: {b: n}}` for the path `a.b`.
    fn replicas_patch(&self, n: &Value) -> Value {
        self.replicas_path.rsplit('.').fold(n.clone(), |inner, key| {
            let mut m = Map::new();
            m.insert(key.to_string(), inner);
            Value::Object(m)
        })
    }

    fn with_replicas(&self, n: &Value) -> Value {
        let mut m = self.manifest.clone();
        json_patch::merge(&mut m, &self.replicas_patch(n));
        m
    }

    fn name(&self) -> &str {
        self.manifest["metadata"]["name"].as_str().unwrap_or_default()
    }

    fn api_version(&self) -> &str {
        self.manifest["apiVersion"].as_str().unwrap_or_default()
    }

    fn reference(&self) -> Value {
        json!({"apiVersion": self.api_version(), "kind": self.manifest["kind"], "name": self.name()})
    }
}

/// Values a scenario's strings may use besides the runtime bindings (`${namespace}` and
/// those its `bind` steps set).
#[derive(Debug, Clone)]
pub struct Bindings {
    /// The controller's user name in the scenario's namespace.
    pub controller_user: String,
    /// T_release, as a Go duration.
    pub release: String,
    /// How long slowly terminating pods take, as a Go duration.
    pub grace: String,
}

impl Bindings {
    fn sample() -> Self {
        Self { controller_user: "system:serviceaccount:ns:c".into(), release: "10s".into(), grace: "8s".into() }
    }
}

/// The label selector of the workload's pods: every pod in the namespace except the ones a
/// scenario creates itself (labelled `kproof.dev/standing`).
pub const WORKLOAD_PODS: &str = "!kproof.dev/standing";

impl Scenario {
    /// The scenario as a suite row for `workload`.
    pub fn row(&self, workload: &Workload, b: &Bindings) -> Result<Row, String> {
        let group = workload.api_version().split_once('/').map(|(g, _)| g).unwrap_or_default().to_string();
        let mut vars: BTreeMap<String, String> = BTreeMap::new();
        vars.insert("workload.apiVersion".into(), workload.api_version().to_string());
        vars.insert("workload.kind".into(), workload.manifest["kind"].as_str().unwrap_or_default().to_string());
        vars.insert("workload.name".into(), workload.name().to_string());
        vars.insert("workload.group".into(), group);
        vars.insert("workload.resource".into(), workload.resource.clone());
        vars.insert("controller.user".into(), b.controller_user.clone());
        vars.insert("release".into(), b.release.clone());
        vars.insert("grace".into(), b.grace.clone());
        vars.insert("pods".into(), WORKLOAD_PODS.into());
        let mut steps = Vec::new();
        for (i, raw) in self.steps.iter().enumerate() {
            let expanded =
                expand_step(&substitute(raw, &vars), workload).map_err(|e| format!("step {}: {e}", i + 1))?;
            let step: Step = serde_json::from_value(expanded).map_err(|e| format!("step {}: {e}", i + 1))?;
            steps.push(step);
        }
        let mut expect = Vec::new();
        for (i, raw) in self.expect.iter().enumerate() {
            let e: Expectation =
                serde_json::from_value(substitute(raw, &vars)).map_err(|e| format!("expect {}: {e}", i + 1))?;
            expect.push(e);
        }
        Ok(Row {
            id: self.id.clone(),
            title: self.title.clone(),
            kind: RowKind::Behaviour,
            source: self.source.clone(),
            note: None,
            needs: Default::default(),
            fixtures: Vec::new(),
            steps,
            expect,
        })
    }
}

/// Replaces `${name}` of the contract's own variables; runtime bindings stay.
fn substitute(v: &Value, vars: &BTreeMap<String, String>) -> Value {
    match v {
        Value::String(s) => {
            let mut out = s.clone();
            for (k, val) in vars {
                out = out.replace(&format!("${{{k}}}"), val);
            }
            Value::String(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(|x| substitute(x, vars)).collect()),
        Value::Object(o) => Value::Object(o.iter().map(|(k, x)| (k.clone(), substitute(x, vars))).collect()),
        other => other.clone(),
    }
}

/// A workload step as the suite steps it stands for; any other step unchanged.
fn expand_step(step: &Value, w: &Workload) -> Result<Value, String> {
    let Some((key, arg)) = step.as_object().filter(|o| o.len() == 1).and_then(|o| o.iter().next()) else {
        return Ok(step.clone());
    };
    let pods = json!({"apiVersion": "v1", "kind": "Pod", "selector": WORKLOAD_PODS});
    let annotate = |annotations: Value| json!({"patch": {"target": pods, "type": "merge", "patch": {"metadata": {"annotations": annotations}}}});
    Ok(match key.as_str() {
        "createWorkload" => {
            let manifest = match arg.get("replicas") {
                Some(n) => w.with_replicas(n),
                None => w.manifest.clone(),
            };
            json!({"create": {"inline": manifest}})
        }
        "scaleWorkload" => {
            if !arg.is_i64() {
                return Err(format!("scaleWorkload takes a replica count, not {arg}"));
            }
            json!({"patch": {"target": w.reference(), "type": "merge", "patch": w.replicas_patch(arg)}})
        }
        "deleteWorkload" => {
            let mut d = json!({"target": w.reference()});
            if let Some(p) = arg.get("propagation") {
                d["propagation"] = p.clone();
            }
            json!({"delete": d})
        }
        "markPods" => annotate(arg.clone()),
        "completePods" => annotate(json!({"sim.kproof.dev/complete": "true"})),
        // The simulated kubelet's containers exit 1: with restartPolicy Never the pod ends Failed.
        "failPods" => annotate(json!({"sim.kproof.dev/fail": "true"})),
        _ => step.clone(),
    })
}

/// The objects of a YAML file (several documents allowed).
pub fn read_objects(path: &Path) -> Result<Vec<Value>, ContractError> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let file = path.file_name().map(|f| f.to_string_lossy().to_string()).unwrap_or_default();
    crate::suite::load_manifests(dir, &crate::suite::Manifest::File(file))
        .map_err(|e| ContractError::Input { path: path.to_path_buf(), message: e.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_contract_loads_and_covers_every_obligation_in_every_profile() {
        let c = Contract::reservedfor().unwrap();
        assert_eq!(c.obligations.len(), 18);
        for (i, o) in c.obligations.iter().enumerate() {
            assert_eq!(o.id, format!("C{}", i + 1));
            assert_eq!(crate::suite::sources::check_source(&o.source), Ok(()), "{}", o.id);
        }
        for s in &c.scenarios {
            assert_eq!(crate::suite::sources::check_source(&s.source), Ok(()), "{}", s.id);
        }
    }

    #[test]
    fn the_w_profile_judges_every_obligation_the_contract_assigns_to_w() {
        // W is judged in C1, C2, C4-C12 and C14-C17; C3 is PG only; C13 is not judged in w (KEP-5194 lifts the 256 limit); C18
        // is judged through the ReservationHeld condition this contract fixes.
        let c = Contract::reservedfor().unwrap();
        for o in &c.obligations {
            let judged =
                c.scenarios.iter().any(|s| s.profiles.contains(&CertProfile::W) && s.obligations.contains(&o.id));
            let expected = !["C3", "C13"].contains(&o.id.as_str());
            assert_eq!(judged, expected, "{} in profile w", o.id);
            assert_eq!(o.not_applicable.contains_key(&CertProfile::W), !expected, "{} reason for w", o.id);
        }
    }

    #[test]
    fn every_profile_injects_informer_lag_for_c16_and_judges_failed_pods_under_c6() {
        let c = Contract::reservedfor().unwrap();
        for p in CertProfile::ALL {
            let lagged = c.scenarios.iter().filter(|s| s.profiles.contains(&p) && s.inject_watch_lag.is_some());
            assert!(lagged.clone().count() >= 1, "profile {p} has an informer-lag scenario");
            assert!(lagged.into_iter().all(|s| s.obligations == ["C16"]), "profile {p}: lag judges C16");
            let failing = c.scenarios.iter().filter(|s| s.profiles.contains(&p)).any(|s| {
                s.obligations.contains(&"C6".to_string()) && s.steps.iter().any(|st| st.get("failPods").is_some())
            });
            assert!(failing, "profile {p} judges C6 with failed pods");
        }
    }

    #[test]
    fn workload_steps_expand_to_suite_steps() {
        let w = Workload::sample();
        let e = expand_step(&json!({"scaleWorkload": 0}), &w).unwrap();
        assert_eq!(e["patch"]["patch"], json!({"spec": {"replicas": 0}}));
        assert_eq!(e["patch"]["target"]["kind"], "Job");
        let c = expand_step(&json!({"createWorkload": {"replicas": 3}}), &w).unwrap();
        assert_eq!(c["create"]["inline"]["spec"]["replicas"], 3);
        assert!(expand_step(&json!({"scaleWorkload": "x"}), &w).unwrap_err().contains("replica count"));
        let d = expand_step(&json!({"deleteWorkload": {"propagation": "Orphan"}}), &w).unwrap();
        assert_eq!(d["delete"]["propagation"], "Orphan");
    }

    #[test]
    fn injected_conflicts_name_the_workload_resource_and_need_a_count() {
        let w = Workload::sample();
        let c = InjectedConflict {
            api_group: "${workload.group}".into(),
            resource: "${workload.resource}".into(),
            subresource: "status".into(),
            count: 2,
        };
        let f = c.fault(&w, "system:serviceaccount:ns:c", "ns");
        assert_eq!((f.group.as_str(), f.resource.as_str(), f.subresource.as_str()), ("example.com", "jobs", "status"));
        assert_eq!((f.user.as_str(), f.namespace.as_str(), f.count), ("system:serviceaccount:ns:c", "ns", 2));
        let text = "contract: x\ntitle: t\nobligations: [{id: C1, title: t, source: s, notApplicable: {raw: b, w: c}}]\nscenarios:\n  - {id: s1, title: t, obligations: [C1], profiles: [pg], source: s, injectConflicts: [{resource: pods, count: 0}]}\n";
        let e = Contract::parse(text, "f.yaml").unwrap_err().to_string();
        assert_eq!(e, "f.yaml: scenario s1: injectConflicts pods/: give a resource and a count above 0");
    }

    #[test]
    fn injected_watch_lag_needs_a_positive_go_duration() {
        let lag = InjectedWatchLag { duration: "1500ms".into() }.fault("system:serviceaccount:ns:c", "ns").unwrap();
        assert_eq!(lag.delay, std::time::Duration::from_millis(1500));
        assert_eq!((lag.user.as_str(), lag.namespace.as_str()), ("system:serviceaccount:ns:c", "ns"));
        let text = "contract: x\ntitle: t\nobligations: [{id: C1, title: t, source: s, notApplicable: {raw: b, w: c}}]\nscenarios:\n  - {id: s1, title: t, obligations: [C1], profiles: [pg], source: s, injectWatchLag: {duration: 0s}}\n";
        let e = Contract::parse(text, "f.yaml").unwrap_err().to_string();
        assert_eq!(e, "f.yaml: scenario s1: injectWatchLag duration \"0s\": give a lag above 0");
        let e = InjectedWatchLag { duration: "soon".into() }.fault("u", "ns").unwrap_err();
        assert!(e.starts_with("injectWatchLag duration \"soon\": "), "{e}");
    }

    #[test]
    fn fail_pods_marks_the_workload_pods_to_exit_non_zero() {
        let e = expand_step(&json!({"failPods": {}}), &Workload::sample()).unwrap();
        assert_eq!(e["patch"]["patch"]["metadata"]["annotations"]["sim.kproof.dev/fail"], "true");
        assert_eq!(e["patch"]["target"]["selector"], WORKLOAD_PODS);
    }

    #[test]
    fn a_scenario_naming_an_unknown_obligation_is_refused() {
        let text = "contract: x\ntitle: t\nobligations: [{id: C1, title: t, source: s, notApplicable: {pg: a, raw: b, w: c}}]\nscenarios:\n  - {id: s1, title: t, obligations: [C9], profiles: [pg], source: s}\n";
        let e = Contract::parse(text, "f.yaml").unwrap_err().to_string();
        assert_eq!(e, "f.yaml: scenario s1: unknown obligation \"C9\" (known: C1)");
    }
}
