//! Running rows: [`runner`] executes one row's fixtures, steps and expectations against a
//! backend's client; [`matching`] checks fields and timeline entries, on objects [`lazy`]
//! decodes only as far as they are read; [`selection`] picks rows and runs them in parallel;
//! [`cleanup`] removes what a row made on a real-time cluster.

pub mod cleanup;
pub mod lazy;
pub mod matching;
pub mod request;
pub mod runner;
pub mod selection;
