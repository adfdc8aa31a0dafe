//! The harness's integration tests, in one binary (one link instead of one per file): the
//! command line, expectations and reports, the kubeconfig, upstream and kind backends (the kind
//! lifecycle with the `kind` feature), the differential smoke test, the suite schema, the docs'
//! walk-throughs with kubectl, and the tables against deliberately wrong controllers and a
//! deliberately wrong API server. The catalogue itself is the `suites` target, one test per row.

mod cli;
mod common;
mod defects;
mod differential;
mod expectations;
mod kind_cli;
#[cfg(feature = "kind")]
mod kind_lifecycle;
mod kubeconfig;
mod schema;
mod upstream;
mod walkthroughs;
mod wrong_apiserver;
mod wrong_dra;
mod wrong_kueue;
mod wrong_reconciler;
