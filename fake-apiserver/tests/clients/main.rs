//! Real clients against the `fake-apiserver` binary over TCP: kubectl (every minor found beside
//! the one on PATH) and the Python `kubernetes` client. Each skips with a printed reason when its
//! client is absent.

mod process;

mod kubectl_apply;
mod kubectl_matrix;
mod python_client;
