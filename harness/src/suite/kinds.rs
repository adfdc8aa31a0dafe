//! The kinds a server serves, known offline: built-in kinds and the CRDs of the reference
//! actors, with their scope. `kproof lint` resolves a row's kinds against them; the runner
//! keeps rows that write the same cluster-scoped kinds apart on a shared cluster.

use crate::suite::ActorName;
use std::collections::{BTreeMap, BTreeSet};

/// A kind and its scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopedKind {
    /// `Pod`, `RayCluster`.
    pub kind: String,
    /// Whether its objects live in namespaces.
    pub namespaced: bool,
}

/// The kinds rows may name, offline: the API server's built-in kinds and, per actor, the
/// kinds of the CRDs its setup installs. Built by `kproof::actors::kind_catalog` from the
/// reference server and actors.
#[derive(Debug, Clone, Default)]
pub struct KindCatalog {
    builtin: BTreeSet<String>,
    by_actor: BTreeMap<ActorName, BTreeSet<String>>,
    cluster_scoped: BTreeSet<String>,
}

impl KindCatalog {
    /// A catalog of `builtin` kinds plus the kinds each actor's CRDs serve.
    pub fn new(
        builtin: impl IntoIterator<Item = ScopedKind>,
        by_actor: impl IntoIterator<Item = (ActorName, Vec<ScopedKind>)>,
    ) -> Self {
        let mut catalog = Self::default();
        for k in builtin {
            catalog.note_scope(&k);
            catalog.builtin.insert(k.kind);
        }
        for (actor, kinds) in by_actor {
            for k in kinds {
                catalog.note_scope(&k);
                catalog.by_actor.entry(actor).or_default().insert(k.kind);
            }
        }
        catalog
    }

    fn note_scope(&mut self, k: &ScopedKind) {
        if !k.namespaced {
            self.cluster_scoped.insert(k.kind.clone());
        }
    }

    /// The kinds a row running `actors` can name (before the CRDs it installs itself).
    pub fn kinds_for<'a>(&'a self, actors: &'a [ActorName]) -> impl Iterator<Item = &'a str> + 'a {
        let of_actors = actors.iter().flat_map(|a| self.by_actor.get(a).into_iter().flatten());
        self.builtin.iter().chain(of_actors).map(String::as_str)
    }

    /// The actors whose CRDs serve `kind`, for a hint when a row names it without them.
    pub fn actors_serving(&self, kind: &str) -> Vec<ActorName> {
        self.by_actor.iter().filter(|(_, kinds)| kinds.contains(kind)).map(|(a, _)| *a).collect()
    }

    /// Whether `kind` is known and cluster-scoped.
    pub fn is_cluster_scoped(&self, kind: &str) -> bool {
        self.cluster_scoped.contains(kind)
    }
}
