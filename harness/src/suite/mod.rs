//! The suite format: YAML tables of rows, one documented behaviour, limitation or upstream
//! bug per row, with its source, what it needs, its steps and its expectations.
//!
//! The Rust types here are the format's definition: `kproof schema` prints the JSON Schema
//! generated from them, so editors can validate suite files.

pub mod kinds;
pub mod lint;
pub mod load;
pub mod location;
pub mod needs;
pub mod sources;

pub use load::{
    LoadError, LoadedSuite, load_manifests, load_suite_dir, load_suite_file, load_suite_paths, load_suite_str,
};
pub use location::{Location, RowPart};
pub use needs::{
    ActorName, BACKEND_FACTS, Capability, Component, DraComponent, DraNeeds, FeatureGates, Needs, Settings, Version,
};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::Duration;

/// One suite file: a table of rows about one area.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Suite {
    /// Short name, used by `kproof run --suite NAME` (e.g. `raycluster`).
    pub suite: String,
    /// What the table covers.
    pub title: String,
    /// Fixtures applied before the steps of every row.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fixtures: Vec<Manifest>,
    /// The rows, each one test.
    pub rows: Vec<Row>,
}

/// What a row documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RowKind {
    /// Documented behaviour of the upstream system.
    Behaviour,
    /// A known limitation, asserted as it is today.
    Limitation,
    /// An upstream bug, asserted as it behaves (or as fixed, naming the fix).
    UpstreamBug,
}

/// One row: one test.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Row {
    /// Unique within the catalogue; the test name under `cargo test` (`suite::id`).
    pub id: String,
    /// One line saying what the row shows.
    pub title: String,
    /// Whether the row documents a behaviour, a limitation or an upstream bug.
    pub kind: RowKind,
    /// Where the behaviour is documented: seed file name, URL, PR or issue (`kubernetes/kubernetes#1234`).
    pub source: String,
    /// Where upstream docs and code disagree, what the row models and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// What the row needs from a backend (capabilities, feature gates, settings); a backend that
    /// cannot serve it skips the row.
    #[serde(default)]
    pub needs: Needs,
    /// Manifests applied before the steps (after the suite's fixtures).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fixtures: Vec<Manifest>,
    /// Steps run in order after the fixtures are applied.
    #[serde(default)]
    pub steps: Vec<Step>,
    /// Checked after the steps, in order.
    #[serde(default)]
    pub expect: Vec<Expectation>,
}

/// A manifest: a file (relative to the repository's `fixtures/`) or an inline object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "lowercase")]
pub enum Manifest {
    /// Path under `fixtures/`; may hold several YAML documents.
    File(String),
    /// One object, written inline.
    Inline(Value),
}

/// Which object a step or expectation is about.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ObjectRef {
    /// `v1`, `apps/v1`, `ray.io/v1`.
    pub api_version: String,
    /// The object's kind (`Pod`, `RayCluster`).
    pub kind: String,
    /// The object's name; may use bindings (`${cluster}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Defaults to the row's namespace for namespaced kinds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// A label selector, to refer to a set of objects instead of one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    /// A field selector (`reason=Created,involvedObject.name=x`), for lists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_selector: Option<String>,
}

/// The kinds of patch a step can send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PatchType {
    /// A JSON merge patch (`application/merge-patch+json`).
    Merge,
    /// A JSON patch: a list of operations (`application/json-patch+json`).
    Json,
    /// A server-side apply patch (`application/apply-patch+yaml`).
    Apply,
}

/// What a writing step expects the API to answer instead of success: a refusal, matched on
/// the Kubernetes `Status` the server sends. Every given field must match.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExpectedError {
    /// HTTP status code (`409`, `422`, `403`...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<u16>,
    /// The Status `reason` (`AlreadyExists`, `Conflict`, `Invalid`, `Forbidden`...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Causes that must each be among `details.causes` (any order; others may be there too).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<ExpectedCause>,
    /// A substring of the Status `message`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// A regular expression the Status `message` matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_matches: Option<String>,
}

/// One expected entry of a Status's `details.causes`: every given field must match.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExpectedCause {
    /// The cause's `field` (`spec.replicas`, `status.reservedFor`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// The cause's `reason`, which is its type (`FieldValueInvalid`, `FieldValueTooMany`,
    /// `FieldValueRequired`, `NamespaceTerminating`...).
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub cause_type: Option<String>,
    /// A substring of the cause's `message`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// What a writing step expects besides success or failure.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WriteExpectation {
    /// The request must be refused like this; the row fails if it succeeds or fails otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_error: Option<ExpectedError>,
    /// A substring of a `Warning` header the answer must carry (`fieldValidation=Warn`,
    /// deprecated APIs, admission warnings).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_warning: Option<String>,
}

impl WriteExpectation {
    /// Whether the step states anything beyond plain success.
    pub fn is_set(&self) -> bool {
        self.expect_error.is_some() || self.expect_warning.is_some()
    }
}

/// A manifest to write, with what the answer must be: `{file: ...}` or `{inline: ...}`, plus
/// `expectError` / `expectWarning`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(try_from = "RawManifestStep", into = "RawManifestStep")]
pub struct ManifestStep {
    /// The objects to write.
    pub manifest: Manifest,
    /// What the answer must be.
    pub expect: WriteExpectation,
}

/// The suite spelling of [`ManifestStep`]: exactly one of `file` and `inline`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawManifestStep {
    /// Path under `fixtures/`; may hold several YAML documents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// One object, written inline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inline: Option<Value>,
    /// The request must be refused like this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_error: Option<ExpectedError>,
    /// A substring of a `Warning` header the answer must carry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_warning: Option<String>,
}

impl TryFrom<RawManifestStep> for ManifestStep {
    type Error = String;
    fn try_from(raw: RawManifestStep) -> Result<Self, String> {
        let manifest = match (raw.file, raw.inline) {
            (Some(file), None) => Manifest::File(file),
            (None, Some(inline)) => Manifest::Inline(inline),
            (Some(_), Some(_)) => return Err("give one of `file` and `inline`, not both".into()),
            (None, None) => return Err("give `file` (a path under fixtures/) or `inline` (an object)".into()),
        };
        Ok(Self {
            manifest,
            expect: WriteExpectation { expect_error: raw.expect_error, expect_warning: raw.expect_warning },
        })
    }
}

impl From<ManifestStep> for RawManifestStep {
    fn from(step: ManifestStep) -> Self {
        let (file, inline) = match step.manifest {
            Manifest::File(f) => (Some(f), None),
            Manifest::Inline(v) => (None, Some(v)),
        };
        Self { file, inline, expect_error: step.expect.expect_error, expect_warning: step.expect.expect_warning }
    }
}

/// One step of a row.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub enum Step {
    /// Create or update objects: created when missing, else the manifest is merged into the
    /// existing object (a JSON merge patch).
    Apply(ManifestStep),
    /// Create objects (POST), never merging with an existing one: a second create of the same
    /// name is the API's 409 AlreadyExists.
    Create(ManifestStep),
    /// Patch one object, or each object a selector (with no name) picks.
    Patch {
        /// The object to patch; with a selector and no name, every selected object.
        target: ObjectRef,
        /// The patch format: `merge`, `json` or `apply`.
        #[serde(rename = "type")]
        patch_type: PatchType,
        /// The patch body; may use bindings (`${name}`).
        patch: Value,
        /// Patch the `/status` subresource.
        #[serde(default)]
        status: bool,
        /// The request must be refused like this.
        #[serde(default, rename = "expectError", skip_serializing_if = "Option::is_none")]
        expect_error: Option<ExpectedError>,
        /// A substring of a `Warning` header the answer must carry.
        #[serde(default, rename = "expectWarning", skip_serializing_if = "Option::is_none")]
        expect_warning: Option<String>,
    },
    /// Delete one object (or the set a selector names).
    Delete {
        /// The object to delete (by name, or a label selector).
        target: ObjectRef,
        /// The deletion's propagation policy: `Foreground`, `Background` or `Orphan`; unset leaves the
        /// server's default.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        propagation: Option<String>,
        /// The request must be refused like this.
        #[serde(default, rename = "expectError", skip_serializing_if = "Option::is_none")]
        expect_error: Option<ExpectedError>,
        /// A substring of a `Warning` header the answer must carry.
        #[serde(default, rename = "expectWarning", skip_serializing_if = "Option::is_none")]
        expect_warning: Option<String>,
    },
    /// Set replicas through the `/scale` subresource.
    Scale {
        /// The object whose `/scale` subresource is written.
        target: ObjectRef,
        /// The replica count to set.
        replicas: i64,
        /// The request must be refused like this.
        #[serde(default, rename = "expectError", skip_serializing_if = "Option::is_none")]
        expect_error: Option<ExpectedError>,
        /// A substring of a `Warning` header the answer must carry.
        #[serde(default, rename = "expectWarning", skip_serializing_if = "Option::is_none")]
        expect_warning: Option<String>,
    },
    /// Let time pass: virtual time on the in-process backend, real time elsewhere.
    Advance(DurationStr),
    /// Wait for an expectation before going on (`eventually` or `consistently`).
    Wait(Box<Expectation>),
    /// Turn a knob of a simulated actor (make a pod fail, keep a Gateway unready, pause a controller).
    Knob {
        /// The simulated actor whose knob is turned.
        actor: ActorName,
        /// The knob's name, as the actor defines it.
        knob: String,
        /// The value to set (null when omitted); may use bindings.
        #[serde(default)]
        value: Value,
    },
    /// Capture a value from an object for later steps: `${name}` in strings.
    Bind {
        /// The binding's name, used later as `${name}`.
        name: String,
        /// The object to read; the first one found is used.
        from: ObjectRef,
        /// Dotted path of the value to capture; the step waits until it is there.
        path: String,
    },
}

impl Step {
    /// The step's keyword in the suite format, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            Step::Apply(_) => "apply",
            Step::Create(_) => "create",
            Step::Patch { .. } => "patch",
            Step::Delete { .. } => "delete",
            Step::Scale { .. } => "scale",
            Step::Advance(_) => "advance",
            Step::Wait(_) => "wait",
            Step::Knob { .. } => "knob",
            Step::Bind { .. } => "bind",
        }
    }

    /// What a writing step expects of the answer (nothing, for the other steps).
    pub fn write_expectation(&self) -> WriteExpectation {
        let pair = |e: &Option<ExpectedError>, w: &Option<String>| WriteExpectation {
            expect_error: e.clone(),
            expect_warning: w.clone(),
        };
        match self {
            Step::Apply(m) | Step::Create(m) => m.expect.clone(),
            Step::Patch { expect_error, expect_warning, .. }
            | Step::Delete { expect_error, expect_warning, .. }
            | Step::Scale { expect_error, expect_warning, .. } => pair(expect_error, expect_warning),
            Step::Advance(_) | Step::Wait(_) | Step::Knob { .. } | Step::Bind { .. } => WriteExpectation::default(),
        }
    }
}

/// A duration in a suite: Go's syntax (`30s`, `1.5s`, `5m`, `1h30m`, `250ms`), never negative.
pub type DurationStr = apimachinery::DurationText;

/// Parses a duration the way suites write one (Go's syntax, not negative).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    apimachinery::DurationText::parse(s).map(|d| d.0)
}

/// Formats a duration for messages the way suites usually write it (`90s`, `5m`, `2h`, `250ms`).
pub fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms > 0 && ms.is_multiple_of(3_600_000) {
        format!("{}h", ms / 3_600_000)
    } else if ms > 0 && ms.is_multiple_of(60_000) {
        format!("{}m", ms / 60_000)
    } else if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

/// A condition on one field: `path` plus exactly one operator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FieldMatch {
    /// Dotted path; `[N]` indexes a list, `[key=value]` picks the list item with that field
    /// (`status.conditions[type=Ready].status`).
    pub path: String,
    /// The field equals this value (numbers compare by value: `3` equals `3.0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eq: Option<Value>,
    /// The field is absent or differs from this value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ne: Option<Value>,
    /// `true`: the field exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exists: Option<bool>,
    /// `true`: the field does not exist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub absent: Option<bool>,
    /// The field is a number, or a string holding one, greater than this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gt: Option<f64>,
    /// The field is a number, or a string holding one, less than this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lt: Option<f64>,
    /// A string contains this substring, or a list contains this value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contains: Option<Value>,
    /// A string matches this regular expression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matches: Option<String>,
}

/// A condition on objects: which ones, and what each must look like.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ObjectMatch {
    /// Which object or objects the conditions apply to.
    pub target: ObjectRef,
    /// Every condition must hold on the object (on every selected object).
    #[serde(default, rename = "match")]
    pub fields: Vec<FieldMatch>,
    /// With a selector: how many objects must be selected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<usize>,
    /// With a selector: at least this many of the selected objects satisfy every condition
    /// (the others are not looked at). For objects a controller makes more of than a row can
    /// pin down, such as the Events of an object whose resourceVersion keeps moving.
    #[serde(default, rename = "atLeast", skip_serializing_if = "Option::is_none")]
    pub at_least: Option<usize>,
    /// The object must not exist (or no object may be selected).
    #[serde(default)]
    pub gone: bool,
}

/// A pattern over timeline entries (writes).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EventMatch {
    /// `create`, `update`, `patch`, `delete`, or an internal actor's verb.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verb: Option<String>,
    /// `ADDED`, `MODIFIED` or `DELETED`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<String>,
    /// The written object's kind (`Pod`, `RayCluster`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The written object's name, exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The written object's name starts with this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_prefix: Option<String>,
    /// The write went to this subresource (`status`, `scale`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subresource: Option<String>,
    /// The writer's user agent contains this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
    /// The writer is this authenticated user (`system:serviceaccount:ns:name`); a backend
    /// whose timeline does not know users matches no write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// Conditions on the object as written.
    #[serde(default, rename = "match", skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<FieldMatch>,
}

/// What must hold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub enum Expectation {
    /// Becomes true within the duration (default 30s).
    Eventually {
        /// The objects and the conditions that must come to hold.
        #[serde(flatten)]
        object: ObjectMatch,
        /// How long to wait (default: the backend's default timeout, 30s unless configured).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        within: Option<DurationStr>,
    },
    /// Is true now and stays true for the duration.
    Consistently {
        /// The objects and the conditions that must keep holding.
        #[serde(flatten)]
        object: ObjectMatch,
        /// How long the conditions must hold.
        #[serde(rename = "for")]
        duration: DurationStr,
    },
    /// On the timeline, the first write matching `first` comes before the first matching `then`
    /// (with `all: true`, every `first` write comes before any `then` write). Both must happen:
    /// a `then` that never happens fails the check, unless `thenOptional: true` says the row
    /// means "A, and if B ever happens, after A".
    Before(Box<BeforeMatch>),
    /// No write on the timeline matches.
    Never(EventMatch),
    /// At most `n` writes match.
    AtMost {
        /// The most matching writes allowed.
        n: usize,
        /// Which writes count.
        event: EventMatch,
    },
    /// Exactly `n` writes match.
    Count {
        /// The number of matching writes required.
        n: usize,
        /// Which writes count.
        event: EventMatch,
    },
    /// At least `n` writes match.
    AtLeast {
        /// The fewest matching writes allowed.
        n: usize,
        /// Which writes count.
        event: EventMatch,
    },
    /// On the timeline, the values at `paths` of the writes matching `event` (one value per
    /// path, `null` when absent), with consecutive repeats folded into one, are exactly
    /// `values` in this order — or, with `subsequence: true`, `values` appear among them in
    /// this order; with `maySkip: true`, they are `values` in order with some skipped, never the
    /// first or the last. With one path each value is that path's; with several, a list in path order.
    Sequence(Box<SequenceMatch>),
}

/// What a [`Expectation::Before`] checks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BeforeMatch {
    /// The writes that must come first.
    pub first: EventMatch,
    /// The writes that must come after.
    pub then: EventMatch,
    /// Every `first` write must come before the `then` write.
    #[serde(default)]
    pub all: bool,
    /// Compare with the n-th `then` write (1 = the first, the default) instead of the first:
    /// "the entry is written before the second pod is created".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nth: Option<usize>,
    /// The `then` write may never happen: the check passes when `first` happened and no `then`
    /// write did. Say why in the row's `note`; by default a missing `then` fails, since an
    /// order between a write and nothing proves nothing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub then_optional: bool,
}

/// What a [`Expectation::Sequence`] checks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SequenceMatch {
    /// Which writes (usually a kind and a name).
    pub event: EventMatch,
    /// Dotted paths read from each matching write.
    pub paths: Vec<String>,
    /// The expected values, oldest first.
    pub values: Vec<Value>,
    /// `values` need only appear in order among the observed ones, not be all of them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub subsequence: bool,
    /// The other way round: the observed values are `values` in order with some skipped, but
    /// never the first or the last. For a controller that may take two steps in one pass and
    /// write them as one, depending on when the pass runs (real time decides).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub may_skip: bool,
    /// Every change (each observed value after the first) comes at least this long after the
    /// previous one, by the backend's clock (write times have whole seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub min_gap: Option<DurationStr>,
}

impl Expectation {
    /// The expectation's keyword in the suite format, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            Expectation::Eventually { .. } => "eventually",
            Expectation::Consistently { .. } => "consistently",
            Expectation::Before(_) => "before",
            Expectation::Never(_) => "never",
            Expectation::AtMost { .. } => "atMost",
            Expectation::Count { .. } => "count",
            Expectation::AtLeast { .. } => "atLeast",
            Expectation::Sequence(_) => "sequence",
        }
    }

    /// The timeline patterns it matches writes with.
    pub fn events(&self) -> Vec<&EventMatch> {
        match self {
            Expectation::Eventually { .. } | Expectation::Consistently { .. } => Vec::new(),
            Expectation::Before(b) => vec![&b.first, &b.then],
            Expectation::Never(e)
            | Expectation::AtMost { event: e, .. }
            | Expectation::Count { event: e, .. }
            | Expectation::AtLeast { event: e, .. } => vec![e],
            Expectation::Sequence(s) => vec![&s.event],
        }
    }
}

impl EventMatch {
    /// Whether it tells writes apart by what only a server's own write log knows: a verb a
    /// watch cannot see (`patch`, `update`, `apply`, an internal actor's), the writer's user
    /// agent or its user. A watch sees an object appear (`create`) or go (`delete`).
    pub fn needs_write_actors(&self) -> bool {
        let verb = self.verb.as_deref().is_some_and(|v| !matches!(v, "create" | "delete"));
        verb || self.actor.is_some() || self.user.is_some()
    }
}

impl Row {
    /// Whether a timeline pattern of its waits or expectations needs the writes' actors
    /// ([`EventMatch::needs_write_actors`]).
    pub fn matches_write_actors(&self) -> bool {
        let waits = self.steps.iter().filter_map(|s| match s {
            Step::Wait(e) => Some(&**e),
            _ => None,
        });
        waits.chain(&self.expect).flat_map(Expectation::events).any(EventMatch::needs_write_actors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_round_trip() {
        for (s, d) in
            [("250ms", 250), ("1.5s", 1500), ("30s", 30_000), ("5m", 300_000), ("1h", 3_600_000), ("1h30m", 5_400_000)]
        {
            assert_eq!(parse_duration(s).unwrap(), Duration::from_millis(d), "{s}");
        }
        assert_eq!(format_duration(Duration::from_secs(90)), "90s");
        assert_eq!(parse_duration("5x").unwrap_err(), "time: unknown unit \"x\" in duration \"5x\"");
        assert!(parse_duration("s").is_err());
        assert!(parse_duration("-1s").is_err());
    }
}
