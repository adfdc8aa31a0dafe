//! A fake Kubernetes API server for tests and conformance runs.
//!
//! One axum router serves the Kubernetes API from an in-memory store with one global
//! resourceVersion, a bounded watch history, discovery, built-in resources from k8s-openapi and
//! CustomResourceDefinitions registered at run time. It is handed to `kube::Client` in-process
//! ([`ApiServer::client`]) or served on loopback TCP with a kubeconfig ([`ApiServer::serve_tcp`]).
//! Every successful write is recorded on a timeline ([`ApiServer::timeline`]).
//!
//! The code is in layers, each using only those below it (kube-apiserver's own split):
//!
//! | layer | holds |
//! |---|---|
//! | `server` | [`ApiServer`], [`Config`] and its feature gates, TCP, kubeconfig |
//! | `endpoints` | request info, content negotiation, one handler per verb, discovery, OpenAPI, tables |
//! | `controllers` | garbage collector, namespace lifecycle, CRD establishing and cleanup |
//! | `fieldmanager` | managedFields, server-side apply, strategic merge patch, field validation |
//! | `registry` | resource types, one `Strategy` per kind, the generic store |
//! | `storage` | objects, the resourceVersion, the event log, the timeline |
//! | `apiextensions` | structural schemas of CRDs: compile, prune, default, validate |
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! use fake_apiserver::ApiServer;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! let server = ApiServer::default();
//! let cms: kube::Api<ConfigMap> = kube::Api::default_namespaced(server.client());
//! let list = cms.list(&Default::default()).await?;
//! assert!(list.items.is_empty());
//! # Ok(()) }
//! ```
#![warn(missing_docs)]

mod apiextensions;
mod controllers;
mod endpoints;
mod error;
mod fieldmanager;
mod go_json_patch;
mod registry;
mod server;
mod storage;

pub use endpoints::{ConflictFault, INITIAL_EVENTS_END, WatchLag};
pub use registry::admission::{ClusterReader, MutatingWebhook, ValidatingWebhook};
pub use registry::{BuiltinKind, builtin_kinds};
pub use server::{
    ApiServer, Config, FeatureGate, FeatureGateError, FeatureGates, HttpsServer, ServerDefect, TcpServer,
    shutdown_signal,
};
pub use storage::{ChangeKind, Subresource, TimelineEntry, UserInfo, Verb};

/// The garbage collector's identity on the timeline.
pub mod gc {
    pub use crate::controllers::gc::GC_USER_AGENT;
}
