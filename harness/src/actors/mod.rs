//! The reference controllers and simulated components, wrapped for the backends: each is an
//! [`ActorFactory`] that the in-process backend starts for the rows that name it
//! (`actor:NAME`), each with the row's own gates and settings, and `kproof serve` starts once.

pub mod autoscaler;
pub mod dra;
pub mod echo;
pub mod endpoints;
pub mod gateway;
pub mod kubelet;
pub mod kuberay;
pub mod kueue;
pub mod rayhead;
pub mod scheduler;
pub mod traffic;

pub use autoscaler::AutoscalerFactory;
pub use dra::{
    DeviceTaintEvictionFactory, DraBase, DraDriverFactory, PodGroupProtectionFactory, ResourceClaimControllerFactory,
};
pub use echo::EchoControllerFactory;
pub use endpoints::EndpointsFactory;
pub use gateway::GatewayFactory;
pub use kubelet::KubeletFactory;
pub use kuberay::KubeRayFactory;
pub use kueue::KueueFactory;
pub use rayhead::RayHeadFactory;
pub use scheduler::SchedulerFactory;
pub use traffic::TrafficFactory;

use crate::engine::runner::Knobs;
use crate::suite::{ActorName, Component, Needs, Version};
use controllers::sim::SimNetwork;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use parking_lot::Mutex;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A controller or simulated component running for one row (or for `kproof serve`). Dropping
/// it stops it.
pub trait Actor: Send {
    /// Turns a knob; `Err` names what is wrong (unknown knob, bad value).
    fn knob(&mut self, knob: &str, value: &Value) -> Result<(), String>;
}

/// Starts an actor for a row on the in-process backend (on the row's paused runtime), or for
/// `kproof serve` (in real time).
pub trait ActorFactory: Send + Sync {
    /// The actor's name, as rows and knob steps name it.
    fn name(&self) -> ActorName;
    /// Prepares the API server before any actor starts or any step runs (for example installs
    /// and waits for the CRDs the actor serves). `Err` says what went wrong.
    fn setup(&self, _client: kube::Client) -> futures::future::BoxFuture<'static, Result<(), String>> {
        Box::pin(async { Ok(()) })
    }
    /// Starts it against `client`, reading time from `clock`, configured with the row's gates
    /// and settings for this actor (typed, so they were checked when the suite loaded).
    /// `network` is the row's simulated cluster network: actors that serve HTTP (the Ray heads)
    /// register on it, actors that call pods and services (KubeRay, the autoscaler, the data
    /// plane) send through it.
    fn start(
        &self,
        client: kube::Client,
        clock: controllers::Clock,
        needs: &Needs,
        network: &SimNetwork,
    ) -> Result<Box<dyn Actor>, String>;
    /// The CRDs its [`ActorFactory::setup`] installs: offline checks (`kproof lint`) resolve
    /// the kinds a row running this actor names against them.
    fn crds(&self) -> Vec<&'static CustomResourceDefinition> {
        Vec::new()
    }
    /// The upstream component and version this actor models, if it models one.
    fn models(&self) -> Option<(Component, Version)> {
        None
    }
    /// The validating webhooks the component it models serves, to register with the fake API
    /// server before the row starts (real clusters run the component's own webhook server).
    fn webhooks(&self) -> Vec<Arc<dyn fake_apiserver::ValidatingWebhook>> {
        Vec::new()
    }
    /// The mutating (defaulting) webhooks the component it models serves, registered like
    /// [`ActorFactory::webhooks`].
    fn mutating_webhooks(&self) -> Vec<Arc<dyn fake_apiserver::MutatingWebhook>> {
        Vec::new()
    }
    /// The objects its real counterpart's installation ships (a DRA driver's DeviceClass, a
    /// gateway implementation's GatewayClass, Kueue's namespace), created after every setup
    /// unless they exist ([`install`]).
    fn installs(&self) -> Vec<Value> {
        Vec::new()
    }
    /// What a row configured with `needs` can bind without a step (see
    /// [`crate::suite::BACKEND_FACTS`]).
    fn facts(&self, needs: &Needs) -> BTreeMap<String, String> {
        let _ = needs;
        BTreeMap::new()
    }
}

/// The actors running for one row, by name; their knobs are what knob steps turn.
#[derive(Default)]
pub struct ActorSet(Mutex<BTreeMap<ActorName, Box<dyn Actor>>>, Vec<String>);

impl ActorSet {
    /// What the actors' installations put into the cluster (`Kind name`, see [`install`]),
    /// whether it was created now or found there.
    pub fn installed(&self) -> &[String] {
        &self.1
    }

    /// The names of the running actors, in start order.
    pub fn names(&self) -> Vec<ActorName> {
        self.0.lock().keys().copied().collect()
    }
}

impl Knobs for ActorSet {
    fn turn(&self, actor: ActorName, knob: &str, value: &Value) -> Result<(), String> {
        let mut actors = self.0.lock();
        let running: Vec<String> = actors.keys().map(ToString::to_string).collect();
        let a = actors.get_mut(&actor).ok_or_else(|| {
            format!(
                "actor {actor} does not run for this row (running: {}); list it in needs.capabilities",
                running.join(", ")
            )
        })?;
        a.knob(knob, value)
    }
}

/// Runs the setup of each factory, then starts them in order on `network` (the simulated
/// cluster network the row's actors share; serve it over TCP with
/// [`controllers::sim::serve_http_proxy`] for processes outside); `Err` is the first failure, named.
pub async fn start_actors(
    factories: &[Arc<dyn ActorFactory>],
    client_for: impl Fn(ActorName) -> kube::Client,
    clock: controllers::Clock,
    needs: &Needs,
    network: &SimNetwork,
) -> Result<ActorSet, String> {
    for f in factories {
        f.setup(client_for(f.name())).await.map_err(|e| format!("setting up {}: {e}", f.name()))?;
    }
    let mut installed = Vec::new();
    for f in factories {
        installed.extend(
            install(&client_for(f.name()), f.installs()).await.map_err(|e| format!("installing {}: {e}", f.name()))?,
        );
    }
    let mut actors = BTreeMap::new();
    for f in factories {
        let actor = f
            .start(client_for(f.name()), clock.clone(), needs, network)
            .map_err(|e| format!("starting {}: {e}", f.name()))?;
        actors.insert(f.name(), actor);
    }
    Ok(ActorSet(Mutex::new(actors), installed))
}

/// Creates each cluster-scoped object unless one of its kind and name exists (what is there is
/// kept as it is, as a second `helm install` of a chart would not touch it); returns them as
/// `Kind name`. `Err` names the object that could not be created.
pub async fn install(client: &kube::Client, objects: Vec<Value>) -> Result<Vec<String>, String> {
    use kube::api::{Api, ApiResource, DynamicObject, PostParams};
    let mut installed = Vec::new();
    for obj in objects {
        let s = |p: &str| obj.pointer(p).and_then(Value::as_str).unwrap_or_default().to_string();
        let (api_version, kind, name) = (s("/apiVersion"), s("/kind"), s("/metadata/name"));
        let (group, version) = api_version.split_once('/').unwrap_or(("", &api_version));
        let ar = ApiResource::from_gvk(&kube::core::GroupVersionKind::gvk(group, version, &kind));
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
        let what = format!("{kind} {name}");
        let dynamic: DynamicObject = serde_json::from_value(obj).map_err(|e| format!("{what}: {e}"))?;
        match api.create(&PostParams::default(), &dynamic).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => return Err(format!("{what}: {e}")),
        }
        installed.push(what);
    }
    Ok(installed)
}

/// Where `kproof serve` lists the actors it runs (`data.actors`, comma-separated), so the
/// kubeconfig backend can offer `actor:NAME` capabilities for them.
pub const ACTORS_CONFIGMAP_NAMESPACE: &str = "kube-public";
/// Name of the ConfigMap listing the actors (see [`ACTORS_CONFIGMAP_NAMESPACE`]).
pub const ACTORS_CONFIGMAP_NAME: &str = "kproof-actors";

/// Every reference actor, in start order.
pub fn reference_actors() -> Vec<Arc<dyn ActorFactory>> {
    vec![
        Arc::new(KubeRayFactory::default()),
        Arc::new(SchedulerFactory::default()),
        Arc::new(KubeletFactory::default()),
        Arc::new(EndpointsFactory),
        Arc::new(RayHeadFactory),
        Arc::new(AutoscalerFactory),
        Arc::new(GatewayFactory::default()),
        Arc::new(TrafficFactory),
        Arc::new(ResourceClaimControllerFactory::default()),
        Arc::new(PodGroupProtectionFactory::default()),
        Arc::new(DraDriverFactory),
        Arc::new(DeviceTaintEvictionFactory::default()),
        Arc::new(KueueFactory::default()),
    ]
}

/// The kinds rows can name offline (`kproof lint`): the API server's built-in kinds and, per
/// reference actor, the kinds of the CRDs it installs.
pub fn kind_catalog() -> crate::suite::kinds::KindCatalog {
    use crate::suite::kinds::{KindCatalog, ScopedKind};
    let kinds_of = |f: &Arc<dyn ActorFactory>| {
        let scoped = |c: &&CustomResourceDefinition| ScopedKind {
            kind: c.spec.names.kind.clone(),
            namespaced: c.spec.scope == "Namespaced",
        };
        f.crds().iter().map(scoped).collect()
    };
    KindCatalog::new(
        fake_apiserver::builtin_kinds().into_iter().map(|k| ScopedKind { kind: k.kind, namespaced: k.namespaced }),
        reference_actors().iter().map(|f| (f.name(), kinds_of(f))),
    )
}

/// Lists `names` in the `kube-public/kproof-actors` ConfigMap, where the kubeconfig backend
/// looks for the actors a cluster runs.
pub async fn announce(
    client: &kube::Client,
    names: &[ActorName],
    facts: &BTreeMap<String, String>,
) -> Result<(), kube::Error> {
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
    use kube::api::{Api, Patch, PatchParams};
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns =
        serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ACTORS_CONFIGMAP_NAMESPACE}});
    if namespaces.get_opt(ACTORS_CONFIGMAP_NAMESPACE).await?.is_none() {
        let ns: Namespace = serde_json::from_value(ns).unwrap_or_default();
        namespaces.create(&Default::default(), &ns).await?;
    }
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), ACTORS_CONFIGMAP_NAMESPACE);
    let listed: Vec<&str> = names.iter().map(|n| n.as_str()).collect();
    let cm = serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": ACTORS_CONFIGMAP_NAME},
        "data": {"actors": listed.join(",")},
    });
    let mut cm = cm;
    for (k, v) in facts {
        cm["data"][k.as_str()] = serde_json::Value::String(v.clone());
    }
    let patch = serde_json::json!({"data": cm["data"]});
    if api.get_opt(ACTORS_CONFIGMAP_NAME).await?.is_some() {
        api.patch(ACTORS_CONFIGMAP_NAME, &PatchParams::default(), &Patch::Merge(&patch)).await?;
    } else {
        let cm: ConfigMap = serde_json::from_value(cm).unwrap_or_default();
        api.create(&Default::default(), &cm).await?;
    }
    Ok(())
}

/// Aborts a spawned actor task when the row (or `kproof serve`) drops the actor.
pub(crate) struct Task(pub(crate) tokio::task::JoinHandle<()>);

/// An actor without knobs: its task runs until the row drops it, and a knob step gets an
/// error that says what to do instead (`instead`, when there is something).
pub(crate) struct KnoblessActor {
    name: ActorName,
    instead: &'static str,
    _task: Task,
}

impl KnoblessActor {
    /// The actor of `name` running `task`.
    pub(crate) fn boxed(name: ActorName, task: tokio::task::JoinHandle<()>, instead: &'static str) -> Box<dyn Actor> {
        Box::new(Self { name, instead, _task: Task(task) })
    }
}

impl Actor for KnoblessActor {
    fn knob(&mut self, knob: &str, _: &Value) -> Result<(), String> {
        let instead = if self.instead.is_empty() { String::new() } else { format!("; {}", self.instead) };
        Err(format!("{} has no knob {knob:?}{instead}", self.name))
    }
}

impl Drop for Task {
    fn drop(&mut self) {
        self.0.abort();
    }
}
