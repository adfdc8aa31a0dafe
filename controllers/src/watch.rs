//! The watch-and-reflect every simulated actor and reference controller runs on: a cache of
//! the objects of one kind, kept current by a watch that retries with back-off.

use futures::StreamExt;
use futures::future::FutureExt;
use futures::stream::BoxStream;
use kube::api::Api;
use kube::runtime::reflector::{self, Store, store::Writer};
use kube::runtime::{WatchStreamExt, watcher};
use serde::de::DeserializeOwned;

/// Keeps `writer`'s store current with every `K` that `config` selects (the watch retries with
/// back-off); the stream yields after each change. What every simulated actor runs on.
pub(crate) fn reflect_into<K>(
    client: &kube::Client,
    config: watcher::Config,
    writer: Writer<K>,
) -> BoxStream<'static, ()>
where
    K: kube::Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
{
    watcher(Api::<K>::all(client.clone()), config).default_backoff().reflect(writer).map(|_| ()).boxed()
}

/// A cache of every `K` that `config` selects, and the stream that keeps it current.
pub(crate) fn cache<K>(client: &kube::Client, config: watcher::Config) -> (Store<K>, BoxStream<'static, ()>)
where
    K: kube::Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
{
    let (store, writer) = reflector::store::<K>();
    (store, reflect_into(client, config, writer))
}

/// Whether the store has seen its first full list.
pub(crate) fn store_ready<K>(store: &Store<K>) -> bool
where
    K: kube::Resource + Clone + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    store.wait_until_ready().now_or_never().is_some_and(|r| r.is_ok())
}
