//! kproof: conformance tables for the controllers that upgrade and gate ML clusters.
//!
//! A suite is a YAML table of rows ([`suite`]); a backend ([`backend`]) runs a row against the
//! in-process fake API server in virtual time or against a real cluster through a kubeconfig;
//! the runner ([`runner`]) executes steps and checks expectations, including ordering over the
//! timeline of writes; failing rows leave a flight record ([`recorder`]); runs produce JSON and
//! JUnit reports ([`report`]).

pub mod actors;
pub mod backend;
pub mod lint;
pub mod load;
pub mod matching;
pub mod recorder;
pub mod report;
pub mod result;
pub mod run;
pub mod runner;
pub mod suite;
pub mod testing;
