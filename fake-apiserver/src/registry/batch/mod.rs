//! `batch`.

pub(crate) mod job;
