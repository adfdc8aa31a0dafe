//! Rust types for the custom resources the reference controllers use.
