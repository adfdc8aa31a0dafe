//! Cached reads, as KubeRay's controllers read through controller-runtime's cache client.
//!
//! Every `r.Get`/`r.List` of a KubeRay controller is answered from an informer, not from the
//! API server; a pass costs writes only. [`Cached`] is one such informer for a kind: a
//! reflector store kept current by a watch the controller runs (its [`Cached::reflect`]
//! stream). Until the first list has arrived (or while the kind is not served at all, as the
//! Gateway API before its CRDs are installed) reads go to the API server instead, so the
//! errors are the server's. A `get` that misses the store is confirmed with a live GET: an
//! object this controller created a moment ago is found, and a missing one gets the server's
//! own NotFound message.

use apimachinery::selector::LabelSelector;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use k8s_openapi::NamespaceResourceScope;
use kube::ResourceExt;
use kube::api::{Api, ListParams};
use kube::runtime::reflector::{self, ObjectRef, Store, store::Writer};
use kube::runtime::{WatchStreamExt, watcher};
use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use std::fmt::Debug;
use std::sync::Arc;

/// One kind's informer: the store, and (until [`Cached::reflect`] takes it) its writer.
pub struct Cached<K: kube::Resource<DynamicType = ()> + Clone + 'static> {
    store: Store<K>,
    writer: Mutex<Option<Writer<K>>>,
    config: watcher::Config,
}

impl<K> Cached<K>
where
    K: kube::Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + Debug
        + Send
        + Sync
        + 'static,
{
    /// An informer over every `K` that `config` selects (a label selector narrows it, as
    /// KubeRay's `ByObject` cache options do for pods).
    pub fn new(config: watcher::Config) -> Self {
        let (store, writer) = reflector::store();
        Self { store, writer: Mutex::new(Some(writer)), config }
    }

    /// The watch that keeps the store current; it yields each object (deleted ones too) after
    /// the store took it, so a controller triggered by it reads what triggered it. `None` after
    /// the first call.
    pub fn reflect(&self, client: &kube::Client) -> Option<BoxStream<'static, Result<K, watcher::Error>>> {
        let writer = self.writer.lock().take()?;
        Some(
            watcher(Api::<K>::all(client.clone()), self.config.clone())
                .default_backoff()
                .reflect(writer)
                .touched_objects()
                .boxed(),
        )
    }

    /// The store, for a controller that triggers on this kind.
    pub fn store(&self) -> Store<K> {
        self.store.clone()
    }

    fn synced(&self) -> bool {
        self.store.wait_until_ready().now_or_never().is_some_and(|r| r.is_ok())
    }

    /// `r.Get`: the object `ns/name`, or `None` when there is none.
    pub async fn get(&self, client: &kube::Client, ns: &str, name: &str) -> Result<Option<Arc<K>>, kube::Error> {
        if self.synced()
            && let Some(hit) = self.store.get(&ObjectRef::new(name).within(ns))
        {
            return Ok(Some(hit));
        }
        Ok(Api::<K>::namespaced(client.clone(), ns).get_opt(name).await?.map(Arc::new))
    }

    /// `r.Get` answered by the informer alone once it has synced: an object created a moment
    /// ago is missing until the watch brings it. The scale expectations read this way, as
    /// KubeRay's `isPodScaled` reads through the manager's cache client, so a pass waits for
    /// the watch (a live read would satisfy them while `list` still shows the old pods).
    pub async fn get_from_informer(
        &self,
        client: &kube::Client,
        ns: &str,
        name: &str,
    ) -> Result<Option<Arc<K>>, kube::Error> {
        if self.synced() {
            return Ok(self.store.get(&ObjectRef::new(name).within(ns)));
        }
        Ok(Api::<K>::namespaced(client.clone(), ns).get_opt(name).await?.map(Arc::new))
    }

    /// `r.Get` where a missing object is the server's NotFound error, as controller-runtime
    /// returns it.
    pub async fn get_or_not_found(&self, client: &kube::Client, ns: &str, name: &str) -> Result<Arc<K>, kube::Error> {
        if self.synced()
            && let Some(hit) = self.store.get(&ObjectRef::new(name).within(ns))
        {
            return Ok(hit);
        }
        Ok(Arc::new(Api::<K>::namespaced(client.clone(), ns).get(name).await?))
    }

    /// `r.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels(...))`: the objects in
    /// `ns` that `selector` selects, in name order as the server lists them.
    pub async fn list(&self, client: &kube::Client, ns: &str, selector: &str) -> Result<Vec<K>, kube::Error> {
        if self.synced() {
            // A selector the cache cannot parse goes to the server, which answers it properly.
            if let Ok(parsed) = LabelSelector::parse(selector) {
                let mut hits: Vec<K> = self
                    .store
                    .state()
                    .iter()
                    .filter(|o| o.namespace().as_deref() == Some(ns) && parsed.matches(o.labels()))
                    .map(|o| K::clone(o))
                    .collect();
                hits.sort_by_key(|o| o.name_any());
                return Ok(hits);
            }
        }
        Ok(Api::<K>::namespaced(client.clone(), ns).list(&ListParams::default().labels(selector)).await?.items)
    }
}
