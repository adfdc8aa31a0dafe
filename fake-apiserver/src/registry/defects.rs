//! Deliberate defects the server can be built with (cargo feature `defects`), so the harness
//! can prove that the `apiserver` conformance table catches regressions of the API machinery:
//! each is one plausible bug at the place the real behaviour lives. Without the feature no
//! server carries one and every check is a constant `false`.

/// A deliberate deviation from kube-apiserver, one per row of `suites/apiserver.yaml`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServerDefect {
    /// A DELETE ignores `metadata.finalizers`: the object is removed at once instead of being
    /// marked with a `deletionTimestamp` until its finalizers are removed.
    FinalizersIgnoredOnDelete,
    /// A write to `/status` bumps `metadata.generation` (status counts as a spec change).
    StatusWriteBumpsGeneration,
    /// A write to the main resource applies the `.status` it carries instead of keeping the
    /// stored status (the status subresource's split is lost).
    MainWriteAppliesStatus,
    /// Custom resources are neither pruned nor defaulted by their CRD's structural schema.
    CrdSchemaNotCanonicalized,
    /// `generateName` is used as the name as given, without the random suffix.
    GenerateNameWithoutSuffix,
    /// The namespace controller removes a deleted namespace once it has asked for its content
    /// to be deleted, without waiting for that content (held by finalizers) to be gone.
    NamespaceRemovedWithContentLeft,
    /// A create of a name that exists replaces the stored object instead of answering
    /// 409 AlreadyExists.
    CreateReplacesExisting,
    /// An update naming an older `resourceVersion` is applied instead of answering
    /// 409 Conflict (no optimistic concurrency).
    StaleResourceVersionAccepted,
    /// Schema violations of custom resources are reported without their field path.
    SchemaCausesWithoutField,
    /// CRD validation ratcheting is off: an update of a custom resource is validated as a
    /// create, so unchanged fields that a tightened schema now forbids refuse the write.
    NoValidationRatcheting,
    /// A namespace being deleted still accepts new objects (NamespaceLifecycle admission
    /// only checks that the namespace exists).
    TerminatingNamespaceAcceptsContent,
    /// A ResourceClaim's `status.reservedFor` is not capped at 256 entries.
    ReservedForUncapped,
}

impl ServerDefect {
    /// Every defect, for the report of which rows catch which (harness test `defects`).
    pub const ALL: [ServerDefect; 12] = [
        ServerDefect::FinalizersIgnoredOnDelete,
        ServerDefect::StatusWriteBumpsGeneration,
        ServerDefect::MainWriteAppliesStatus,
        ServerDefect::CrdSchemaNotCanonicalized,
        ServerDefect::GenerateNameWithoutSuffix,
        ServerDefect::NamespaceRemovedWithContentLeft,
        ServerDefect::CreateReplacesExisting,
        ServerDefect::StaleResourceVersionAccepted,
        ServerDefect::SchemaCausesWithoutField,
        ServerDefect::NoValidationRatcheting,
        ServerDefect::TerminatingNamespaceAcceptsContent,
        ServerDefect::ReservedForUncapped,
    ];
}

/// The defect a server instance carries, handed to every resource type like the feature
/// gates (so strategies and the work done before the lock see it too). Empty, and never
/// [`ActiveDefect::is`] anything, without the `defects` feature.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ActiveDefect {
    #[cfg(feature = "defects")]
    defect: Option<ServerDefect>,
}

impl ActiveDefect {
    /// A server carrying `defect` (or none).
    #[cfg(feature = "defects")]
    pub fn new(defect: Option<ServerDefect>) -> Self {
        Self { defect }
    }

    /// Whether this is `defect` (never, without the `defects` feature).
    #[inline]
    pub fn is(self, defect: ServerDefect) -> bool {
        #[cfg(feature = "defects")]
        {
            self.defect == Some(defect)
        }
        #[cfg(not(feature = "defects"))]
        {
            let _ = defect;
            false
        }
    }
}
