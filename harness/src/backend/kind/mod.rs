//! The kind backend (cargo feature `kind`): the same rows against a real kind cluster in
//! Docker — kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, containerd,
//! kindnet and kube-proxy of kind's node image, with Gateway API, Istio (GatewayClass
//! `istio`), MetalLB, the KubeRay operator and Kueue installed, and real Ray pods.
//!
//! # How the cluster is made, and why this way
//!
//! kind's node image is run **as a testcontainers container** ([`node`]) and bootstrapped
//! the way kind's own create actions do it for one control-plane node (kubeadm init with
//! kind's kubeadm configuration, kindnet and local-path storage from the image's
//! `/kind/manifests`), following kind v0.33.0's source. The `kind` CLI is not used: it creates
//! its containers with its own `docker run`, so testcontainers could not own them — a run
//! that panicked or was interrupted would leave a cluster behind, and kproof would need a
//! second tool on the machine. Run through testcontainers, the one container is started,
//! waited for, read (logs, files, exec) and removed by the same library on every exit path:
//! when the backend is dropped, while a panic unwinds, and on SIGINT/SIGTERM through
//! testcontainers' `watchdog` (its anonymous `/var` volume goes with it). The cost is that
//! kproof carries kind's bootstrap for one node (a kubeadm configuration and five commands),
//! pinned to the kind release whose node image it runs.
//!
//! # What is needed where it runs
//!
//! A Docker daemon (`DOCKER_HOST`, else the local socket) that may run privileged containers
//! (Debian's Docker 20.10 and a current one both serve testcontainers 0.28); the node image
//! (pulled from Docker Hub when absent); and the release files of the plan in a local
//! directory (`kproof kind fetch-script` prints the commands). Each missing piece ends the
//! run with exit code 2 and one line naming it ([`KindError`]).
//!
//! Modules, one concern each: [`options`] (flags; compiled in every build), [`plan`] (what is
//! installed, as data), [`docker`] (the daemon), [`container`] (one container's lifecycle),
//! [`node`] (the kind node and its bootstrap), [`install`] (the plan carried out),
//! [`backend`] (the [`crate::backend::Backend`]).

pub mod options;

#[cfg(feature = "kind")]
pub mod backend;
#[cfg(feature = "kind")]
pub mod container;
#[cfg(feature = "kind")]
pub mod docker;
#[cfg(feature = "kind")]
pub mod error;
#[cfg(feature = "kind")]
pub mod install;
#[cfg(feature = "kind")]
pub mod node;
#[cfg(feature = "kind")]
pub mod plan;

#[cfg(feature = "kind")]
pub use backend::KindBackend;
#[cfg(feature = "kind")]
pub use error::KindError;
pub use options::{KindOptions, NOT_BUILT};
#[cfg(feature = "kind")]
pub use plan::InstallPlan;
