//! Running rows: [`runner`] executes one row's fixtures, steps and expectations against a
//! backend's client; [`matching`] checks fields and timeline entries, on objects [`lazy`]
//! decodes only as far as they are read; [`selection`] picks rows and runs them in parallel;
//! [`isolation`] keeps rows that write the same cluster-scoped kinds apart on a shared cluster;
//! [`cleanup`] removes what a row made on a real-time cluster.

pub mod cleanup;
pub mod isolation;
pub mod lazy;
pub mod matching;
pub mod request;
pub mod runner;
pub mod selection;
