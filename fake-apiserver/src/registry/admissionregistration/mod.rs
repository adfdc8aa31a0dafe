//! admissionregistration.k8s.io: the kinds with rules of their own.

pub(crate) mod policy;
pub(crate) mod webhook_configuration;
