//! The API server's integration tests, one module per area, in one test binary (each binary
//! links the whole server: on 2 cores, linking is most of a build).

mod common;

mod admission_policies;
mod admission_webhooks;
mod apply;
mod authz;
mod binding;
mod builtins;
mod conversion;
mod crd;
mod crud;
mod differential_dra;
mod differential_pod;
mod differential_service;
mod differential_upstream;
mod differential_workloads;
mod discovery;
mod dryrun;
mod envtest;
mod errors;
mod events;
mod field_validation;
mod finalizer_helper;
mod gc;
mod go_shape;
mod list;
mod mutating_admission_policies;
mod namespace;
mod openapi;
mod patch;
mod protobuf;
mod rbac;
mod semantics;
mod smoke;
mod table;
mod tcp;
mod watch;
mod webhooks;
mod wire;
