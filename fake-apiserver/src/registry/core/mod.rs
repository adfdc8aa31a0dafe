//! The core (`""`) group: the kinds with rules of their own.

pub(crate) mod binding;
pub(crate) mod componentstatus;
pub(crate) mod configmap;
pub(crate) mod event;
pub(crate) mod limitrange;
pub(crate) mod namespace;
pub(crate) mod node;
pub(crate) mod pod;
pub(crate) mod pod_spec;
pub(crate) mod replicationcontroller;
pub(crate) mod resource_names;
pub(crate) mod resourcequota;
pub(crate) mod secret;
pub(crate) mod service;
