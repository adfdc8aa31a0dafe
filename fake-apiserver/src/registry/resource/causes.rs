//! The order kube-apiserver reports a DRA object's causes in. The handwritten validation runs
//! first; then declarative validation (the `+k8s:` tags of `k8s.io/api/resource/v1`), whose
//! enforced errors (beta and standard tags in 1.37) replace the handwritten errors marked
//! `MarkCoveredByDeclarative` and are appended after all handwritten ones
//! (`ValidateDeclarativelyWithMigrationChecks`, k8s.io/apiserver v0.37.2
//! pkg/registry/rest/validate.go). A covered error whose declarative twin is alpha (not
//! enforced) stays where the handwritten validation put it, so it is pushed as handwritten.

use crate::error::StatusCause;

/// Causes in two queues: handwritten, then declarative.
#[derive(Debug, Default)]
pub(super) struct Causes {
    handwritten: Vec<StatusCause>,
    declarative: Vec<StatusCause>,
}

impl Causes {
    /// A handwritten error that no enforced declarative rule covers.
    pub fn push(&mut self, c: StatusCause) {
        self.handwritten.push(c);
    }

    /// Handwritten errors that no enforced declarative rule covers.
    pub fn extend(&mut self, cs: impl IntoIterator<Item = StatusCause>) {
        self.handwritten.extend(cs);
    }

    /// An error of an enforced declarative rule (the stand-in of a covered handwritten error,
    /// or one only declarative validation reports).
    pub fn declared(&mut self, c: StatusCause) {
        self.declarative.push(c);
    }

    /// Both queues of `other` after this one's.
    pub fn append(&mut self, other: Causes) {
        self.handwritten.extend(other.handwritten);
        self.declarative.extend(other.declarative);
    }

    /// The handwritten queues of `parts` in the given order, then their declarative queues in
    /// the order of `declared_order` (indexes into `parts`): for objects whose declarative
    /// walk visits fields in another order than the handwritten one.
    pub fn merged(parts: Vec<Causes>, declared_order: &[usize]) -> Causes {
        let mut out = Causes::default();
        let mut declarative: Vec<Vec<StatusCause>> = Vec::new();
        for p in parts {
            out.handwritten.extend(p.handwritten);
            declarative.push(p.declarative);
        }
        for &i in declared_order {
            out.declarative.append(&mut declarative[i]);
        }
        out
    }

    /// Only the declarative queue: what the tags report of a part the handwritten validation
    /// skipped.
    pub fn declared_only(self) -> Causes {
        Causes { handwritten: Vec::new(), declarative: self.declarative }
    }

    /// The causes as reported: handwritten first.
    pub fn into_vec(self) -> Vec<StatusCause> {
        let mut out = self.handwritten;
        out.extend(self.declarative);
        out
    }
}
