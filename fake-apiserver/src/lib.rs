//! A fake Kubernetes API server for tests and conformance runs.
//!
//! One axum router serves the Kubernetes API from an in-memory store with one global
//! resourceVersion, a bounded watch history, discovery, built-in resources from k8s-openapi and
//! CustomResourceDefinitions registered at run time. It is handed to `kube::Client` in-process
//! ([`ApiServer::client`]) or served on loopback TCP with a kubeconfig ([`ApiServer::serve_tcp`]).
//! Every successful write is recorded on a timeline ([`ApiServer::timeline`]).
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

mod apply;
mod authz;
mod binding;
pub mod clock;
pub mod discovery;
pub mod error;
pub mod events;
mod field_validation;
pub mod gc;
mod go_json_patch;
mod handlers;
mod managed;
pub mod names;
mod namespaces;
mod objects;
pub mod openapi;
mod patch_meta;
mod protobuf;
pub mod registry;
pub mod schema;
pub mod selector;
mod server;
mod smp;
pub mod store;
mod table;
mod watch;

pub use clock::Clock;
pub use error::{ApiError, StatusCause};
pub use server::{ApiServer, Config, TcpServer, shutdown_signal};
pub use store::{ChangeKind, TimelineEntry};
pub use watch::INITIAL_EVENTS_END;
