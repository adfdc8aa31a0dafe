//! Offline checks of loaded suites for `kproof lint`, and the JSON Schema of the suite format.
//!
//! Loading already rejects what the types cannot represent (unknown fields and steps, wrong
//! types, bad durations). Lint finds what parses but cannot work: duplicate ids, bindings used
//! before a step binds them, fixtures that do not exist, regexes that do not compile, matches
//! without exactly one operator, object references that name no object where one is needed,
//! kinds the server cannot serve for the row, and (as warnings) names nothing in the row makes.

mod reach;

pub use crate::suite::kinds::KindCatalog;

use crate::suite::load::{LoadedSuite, load_manifests};
use crate::suite::{
    ActorName, EventMatch, Expectation, ExpectedError, FieldMatch, Manifest, ObjectMatch, ObjectRef, Row, Step, Suite,
    WriteExpectation,
};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One problem found by [`lint`], located by file, line and row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LintIssue {
    /// The suite file.
    pub file: PathBuf,
    /// 1-based line: the row's `- id:` line for row problems, 1 for suite-level ones.
    pub line: usize,
    /// The row id, for problems inside a row.
    pub row: Option<String>,
    /// What is wrong, and where in the row (`step 2 (patch): ...`). Issues that do not stop a
    /// row from running start with `unused binding`.
    pub message: String,
    /// A likely mistake rather than a certain one (a name nothing in the row mentions): shown,
    /// but `kproof lint` still exits 0 for it.
    pub warning: bool,
}

impl fmt::Display for LintIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: ", self.file.display(), self.line)?;
        if self.warning {
            f.write_str("warning: ")?;
        }
        if let Some(row) = &self.row {
            write!(f, "row {row}: ")?;
        }
        f.write_str(&self.message)
    }
}

/// Checks `suites` offline; fixture files are looked up under `fixtures_dir`, kinds resolved
/// against `kinds` plus the CRDs each row installs.
///
/// Returns the issues sorted by file and line (an empty list means the suites are clean).
pub fn lint(suites: &[LoadedSuite], fixtures_dir: &Path, kinds: &KindCatalog) -> Vec<LintIssue> {
    let mut linter = Linter { fixtures_dir, kinds, fixture_cache: HashMap::new(), issues: Vec::new() };
    for loaded in suites {
        linter.suite(loaded);
    }
    linter.duplicates(suites);
    let mut issues = linter.issues;
    issues.sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
    issues
}

/// The JSON Schema of the suite format, generated from the Rust types in [`crate::suite`], for
/// editors to validate suite files (`kproof schema`).
pub fn json_schema() -> Value {
    let schema = schemars::schema_for!(Suite);
    let mut value = serde_json::to_value(&schema).unwrap_or_else(|_| Value::Object(Default::default()));
    if let Some(obj) = value.as_object_mut() {
        obj.insert("$id".into(), Value::String("https://kproof.dev/schema/suite-v1.json".into()));
        obj.insert("title".into(), Value::String("kproof suite".into()));
    }
    value
}

/// Row ids become test names and directory names.
fn valid_id(id: &str) -> bool {
    let mut chars = id.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

fn valid_binding_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

struct Linter<'a> {
    fixtures_dir: &'a Path,
    kinds: &'a KindCatalog,
    /// Fixture files are shared by many rows: parse each once, report it at every use.
    fixture_cache: HashMap<String, Result<Arc<Vec<Value>>, String>>,
    issues: Vec<LintIssue>,
}

/// Where in a suite a check runs, for the issue's file, line and row.
#[derive(Clone, Copy)]
struct Place<'a> {
    file: &'a Path,
    line: usize,
    row: Option<&'a str>,
}

impl Linter<'_> {
    fn report(&mut self, at: Place<'_>, message: impl Into<String>) {
        self.push(at, message.into(), false);
    }

    fn warn(&mut self, at: Place<'_>, message: impl Into<String>) {
        self.push(at, message.into(), true);
    }

    fn push(&mut self, at: Place<'_>, message: String, warning: bool) {
        self.issues.push(LintIssue {
            file: at.file.to_path_buf(),
            line: at.line,
            row: at.row.map(str::to_string),
            message,
            warning,
        });
    }

    fn suite(&mut self, loaded: &LoadedSuite) {
        let suite = &loaded.suite;
        let top = Place { file: &loaded.path, line: 1, row: None };
        if !valid_id(&suite.suite) {
            self.report(
                top,
                format!("suite name {:?} must match ^[a-z0-9][a-z0-9-]*$ (it prefixes test names)", suite.suite),
            );
        }
        if suite.rows.is_empty() {
            self.report(top, "suite has no rows");
        }
        let mut suite_documents = Vec::new();
        for (i, manifest) in suite.fixtures.iter().enumerate() {
            let label = format!("suite fixture {}", i + 1);
            suite_documents.extend(self.manifest(top, &label, manifest).iter().cloned());
            let mut strings = Vec::new();
            manifest_strings(manifest, &mut strings);
            for (name, _) in binding_uses(&strings) {
                self.report(
                    top,
                    format!("{label}: `${{{name}}}` is used, but suite fixtures are applied before any step binds it"),
                );
            }
        }
        for (i, row) in suite.rows.iter().enumerate() {
            let line = loaded.row_lines.get(i).copied().unwrap_or(1);
            self.row(Place { file: &loaded.path, line, row: Some(&row.id) }, row, &suite_documents);
        }
    }

    fn row(&mut self, at: Place<'_>, row: &Row, suite_documents: &[Value]) {
        if !valid_id(&row.id) {
            self.report(
                at,
                format!(
                    "row id {:?} must match ^[a-z0-9][a-z0-9-]*$ (it becomes a test name and a directory name)",
                    row.id
                ),
            );
        }
        if row.id.len() > 63 {
            // A label value (kubeconfig.rs) can be no longer.
            self.report(
                at,
                format!(
                    "row id {:?} is {} bytes; at most 63 (on a real cluster it is the value of the namespace label kproof.dev/row)",
                    row.id,
                    row.id.len()
                ),
            );
        }
        if row.source.trim().is_empty() {
            self.report(
                at,
                "empty `source`: name the upstream file, PR, issue or documentation page the row comes from",
            );
        } else if let Err(why) = crate::suite::sources::check_source(&row.source) {
            self.report(at, why);
        }
        if row.steps.is_empty() && row.expect.is_empty() {
            self.report(at, "row has no steps and no expectations");
        }
        self.dra(at, row);
        let gateway = crate::suite::Capability::Actor(ActorName::Gateway);
        if row.needs.settings.gateway.installed == Some(false) && row.needs.capabilities.contains(&gateway) {
            self.report(at, "needs.settings.gateway.installed is false, yet the row runs actor:gateway");
        }
        if row.matches_write_actors() && !row.needs.capabilities.contains(&crate::suite::Capability::WriteActors) {
            self.report(
                at,
                "a timeline pattern names a verb other than create or delete, an actor or a user: only a server's \
                 write log knows those (a watch sees objects appear and go), so the row needs `write-actors`",
            );
        }

        // Every place that can use a binding, at its position in the row: fixtures at 0, step i
        // at i + 1, expectations after every step. A binding made at position p is visible at
        // positions after p only (a bind step cannot use its own name).
        let mut sites: Vec<Site> = Vec::new();
        let mut documents = suite_documents.to_vec();
        for (i, manifest) in row.fixtures.iter().enumerate() {
            let label = format!("fixture {}", i + 1);
            documents.extend(self.manifest(at, &label, manifest).iter().cloned());
            let mut strings = Vec::new();
            manifest_strings(manifest, &mut strings);
            sites.push(Site { label, pos: 0, strings });
        }
        let mut binds: Vec<(String, usize, String)> = Vec::new();
        for (i, step) in row.steps.iter().enumerate() {
            let pos = i + 1;
            let label = format!("step {pos} ({})", step.name());
            let mut strings = Vec::new();
            documents.extend(self.step(at, &label, step, &mut strings).iter().cloned());
            // The API server runs for every row; no actor starts for it.
            if let Step::Knob { actor, .. } = step
                && *actor != crate::suite::ActorName::KubeApiserver
                && !row.needs.capabilities.contains(&crate::suite::Capability::Actor(*actor))
            {
                self.report(
                    at,
                    format!("{label}: turns a knob of {actor}, which the row does not run: add `actor:{actor}` to needs.capabilities"),
                );
            }
            sites.push(Site { label: label.clone(), pos, strings });
            if let Step::Bind { name, .. } = step {
                if !valid_binding_name(name) {
                    self.report(
                        at,
                        format!("{label}: binding name {name:?} must be non-empty letters, digits, `_`, `-` or `.`"),
                    );
                }
                binds.push((name.clone(), pos, label));
            }
        }
        let after_steps = row.steps.len() + 1;
        for (i, expectation) in row.expect.iter().enumerate() {
            let label = format!("expect {} ({})", i + 1, expectation.name());
            let mut strings = Vec::new();
            self.expectation(at, &label, expectation, &mut strings);
            sites.push(Site { label, pos: after_steps, strings });
        }
        self.bindings(at, &sites, &binds);
        let patch_strings: Vec<String> = row
            .steps
            .iter()
            .filter_map(|s| match s {
                Step::Patch { patch, .. } => Some(patch),
                _ => None,
            })
            .flat_map(|p| {
                let mut out = Vec::new();
                value_strings(p, &mut out);
                out
            })
            .collect();
        for finding in reach::check_row(row, &documents, &patch_strings, self.kinds) {
            match finding {
                reach::Finding::UnknownKind(message) => self.report(at, message),
                reach::Finding::UnreachableName(message) => self.warn(at, message),
            }
        }
    }

    fn bindings(&mut self, at: Place<'_>, sites: &[Site], binds: &[(String, usize, String)]) {
        let mut uses: Vec<(String, usize)> = Vec::new();
        for site in sites {
            for (name, unterminated) in binding_uses(&site.strings) {
                if unterminated {
                    self.report(at, format!("{}: unterminated `${{` (write `${{name}}`)", site.label));
                    continue;
                }
                let first_bind = binds.iter().filter(|(n, _, _)| *n == name).min_by_key(|(_, p, _)| *p);
                if first_bind.is_none() && crate::suite::BACKEND_FACTS.contains(&name.as_str()) {
                    continue;
                }
                match first_bind {
                    None => self
                        .report(at, format!("{}: `${{{name}}}` is used but no step of this row binds it", site.label)),
                    Some((_, bind_pos, bind_label)) if *bind_pos >= site.pos => {
                        self.report(at, format!("{}: `${{{name}}}` is used before {bind_label} binds it", site.label));
                    }
                    Some(_) => {}
                }
                uses.push((name, site.pos));
            }
        }
        for (name, pos, label) in binds {
            if !uses.iter().any(|(n, p)| n == name && p > pos) {
                self.report(at, format!("unused binding `${{{name}}}`: {label} binds it but nothing after it uses it"));
            }
        }
    }

    /// DRA rows name their profile: the reference components behave differently in each, so a
    /// row that runs one without saying which would test whatever the default is.
    fn dra(&mut self, at: Place<'_>, row: &Row) {
        use controllers::dra::DraProfile;
        let dra_actors = [
            ActorName::ResourceClaimController,
            ActorName::PodGroupProtection,
            ActorName::DraDriver,
            ActorName::DeviceTaintEviction,
        ];
        let named: Vec<String> =
            row.needs.actors().into_iter().filter(|a| dra_actors.contains(a)).map(|a| a.to_string()).collect();
        let dra = &row.needs.dra;
        if dra.profile.is_none() && (!named.is_empty() || !dra.is_empty()) {
            let why = if named.is_empty() {
                "it sets needs.dra".to_string()
            } else {
                format!("it runs {}", named.join(", "))
            };
            self.report(
                at,
                format!("needs.dra.profile is missing ({why}): name one of baseline, podgroup, workloads, raw"),
            );
        }
        if matches!(dra.profile, Some(DraProfile::Baseline | DraProfile::Raw)) && !dra.gates_off.is_empty() {
            self.report(
                at,
                "needs.dra.gatesOff: the baseline and raw profiles turn no DRA gate on, so there is none to turn off",
            );
        }
        let mut seen = std::collections::BTreeSet::new();
        for c in &dra.gates_off {
            if !seen.insert(*c) {
                self.report(at, format!("needs.dra.gatesOff names {} twice", c.as_str()));
            }
        }
    }

    /// Checks that a manifest loads; its documents (none when it does not).
    fn manifest(&mut self, at: Place<'_>, label: &str, manifest: &Manifest) -> Arc<Vec<Value>> {
        let load = |dir: &Path| load_manifests(dir, manifest).map(Arc::new).map_err(|e| e.to_string());
        let result = match manifest {
            Manifest::File(file) => {
                let fixtures_dir = self.fixtures_dir;
                self.fixture_cache.entry(file.clone()).or_insert_with(|| load(fixtures_dir)).clone()
            }
            Manifest::Inline(_) => load(self.fixtures_dir),
        };
        result.unwrap_or_else(|message| {
            self.report(at, format!("{label}: {message}"));
            Arc::default()
        })
    }

    /// Checks a step; the documents it writes, if it writes manifests.
    fn step(&mut self, at: Place<'_>, label: &str, step: &Step, strings: &mut Vec<String>) -> Arc<Vec<Value>> {
        self.write_expectation(at, label, &step.write_expectation());
        match step {
            Step::Apply(m) | Step::Create(m) => {
                let documents = self.manifest(at, label, &m.manifest);
                manifest_strings(&m.manifest, strings);
                return documents;
            }
            Step::Patch { target, patch, .. } => {
                self.object_ref(at, label, target, Need::Name);
                ref_strings(target, strings);
                value_strings(patch, strings);
            }
            Step::Delete { target, propagation, .. } => {
                self.object_ref(at, label, target, Need::NameOrSelector);
                ref_strings(target, strings);
                strings.extend(propagation.iter().cloned());
            }
            Step::Scale { target, .. } => {
                self.object_ref(at, label, target, Need::Name);
                ref_strings(target, strings);
            }
            Step::Advance(_) => {}
            Step::Wait(expectation) => self.expectation(at, label, expectation, strings),
            Step::Knob { actor: _, knob, value } => {
                strings.push(knob.clone());
                value_strings(value, strings);
            }
            Step::Bind { from, path, .. } => {
                // A selector binds from the oldest matching object: how generated names are captured.
                self.object_ref(at, label, from, Need::NameOrSelector);
                ref_strings(from, strings);
                strings.push(path.clone());
            }
        }
        Arc::default()
    }

    /// An `expectError` must say something checkable, with a valid regex and a plausible code.
    fn write_expectation(&mut self, at: Place<'_>, label: &str, expect: &WriteExpectation) {
        if let Some(e) = &expect.expect_error {
            let ExpectedError { code, reason, causes, message, message_matches } = e;
            if code.is_none() && reason.is_none() && causes.is_empty() && message.is_none() && message_matches.is_none()
            {
                self.report(
                    at,
                    format!("{label}: `expectError` is empty: give code, reason, causes, message or messageMatches"),
                );
            }
            if let Some(c) = code
                && !(400..=599).contains(c)
            {
                self.report(at, format!("{label}: `expectError.code` {c} is not an error code (400-599)"));
            }
            for (i, cause) in causes.iter().enumerate() {
                if cause.field.is_none() && cause.cause_type.is_none() && cause.message.is_none() {
                    self.report(
                        at,
                        format!("{label}: `expectError.causes[{i}]` is empty: give field, type or message"),
                    );
                }
            }
            if let Some(re) = message_matches
                && let Err(err) = regex::Regex::new(re)
            {
                let detail = err.to_string().replace('\n', " ");
                self.report(at, format!("{label}: `expectError.messageMatches` is not a valid regex: {detail}"));
            }
        }
        if expect.expect_warning.as_deref().is_some_and(|w| w.trim().is_empty()) {
            self.report(at, format!("{label}: `expectWarning` is empty"));
        }
    }

    fn expectation(&mut self, at: Place<'_>, label: &str, expectation: &Expectation, strings: &mut Vec<String>) {
        match expectation {
            Expectation::Eventually { object, .. } | Expectation::Consistently { object, .. } => {
                self.object_match(at, label, object, strings);
            }
            Expectation::Before(b) => {
                let (first, then) = (&b.first, &b.then);
                self.event(at, &format!("{label} first"), first, strings);
                self.event(at, &format!("{label} then"), then, strings);
            }
            Expectation::Never(event)
            | Expectation::AtMost { event, .. }
            | Expectation::Count { event, .. }
            | Expectation::AtLeast { event, .. } => {
                self.event(at, label, event, strings);
            }
            Expectation::Sequence(seq) => {
                self.event(at, label, &seq.event, strings);
                strings.extend(seq.paths.iter().cloned());
                if seq.paths.is_empty() {
                    self.report(
                        at,
                        format!("{label}: `paths` is empty: name the fields whose values form the sequence"),
                    );
                }
                if seq.values.is_empty() {
                    self.report(at, format!("{label}: `values` is empty"));
                }
                if seq.subsequence && seq.may_skip {
                    self.report(at, format!("{label}: `subsequence` and `maySkip` exclude each other; use one"));
                }
                if seq.paths.len() > 1 {
                    for (i, v) in seq.values.iter().enumerate() {
                        if v.as_array().is_none_or(|a| a.len() != seq.paths.len()) {
                            self.report(
                                at,
                                format!(
                                    "{label}: `values[{i}]` must be a list of {} values, one per path",
                                    seq.paths.len()
                                ),
                            );
                        }
                    }
                }
            }
        }
    }

    fn object_match(&mut self, at: Place<'_>, label: &str, object: &ObjectMatch, strings: &mut Vec<String>) {
        self.object_ref(at, label, &object.target, Need::Any);
        ref_strings(&object.target, strings);
        self.fields(at, label, &object.fields, strings);
        let counts = [object.count.is_some(), object.at_least.is_some(), object.gone];
        if counts.iter().filter(|c| **c).count() > 1 {
            self.report(at, format!("{label}: `count`, `atLeast` and `gone` exclude each other; use one"));
        }
    }

    fn event(&mut self, at: Place<'_>, label: &str, event: &EventMatch, strings: &mut Vec<String>) {
        let EventMatch { verb, change, kind, name, name_prefix, subresource, actor, user, fields } = event;
        for s in [verb, change, kind, name, name_prefix, subresource, actor, user].into_iter().flatten() {
            strings.push(s.clone());
        }
        self.fields(at, label, fields, strings);
    }

    fn fields(&mut self, at: Place<'_>, label: &str, fields: &[FieldMatch], strings: &mut Vec<String>) {
        for field in fields {
            let FieldMatch { path, eq, ne, exists, absent, gt, lt, contains, matches } = field;
            let operators: Vec<&str> = [
                ("eq", eq.is_some()),
                ("ne", ne.is_some()),
                ("exists", exists.is_some()),
                ("absent", absent.is_some()),
                ("gt", gt.is_some()),
                ("lt", lt.is_some()),
                ("contains", contains.is_some()),
                ("matches", matches.is_some()),
            ]
            .into_iter()
            .filter_map(|(op, set)| set.then_some(op))
            .collect();
            match operators.len() {
                1 => {}
                0 => self.report(
                    at,
                    format!(
                        "{label}: match on `{path}` has no operator: give one of eq, ne, exists, absent, gt, lt, contains, matches \
                         (`eq: null` reads as no operator; use `absent: true`)"
                    ),
                ),
                _ => self.report(at, format!("{label}: match on `{path}` has {} operators ({}); give exactly one", operators.len(), operators.join(", "))),
            }
            if let Some(pattern) = matches {
                // Bindings are substituted before the regex is compiled; stand a plain word in.
                let pattern = replace_bindings(pattern, "binding");
                if let Err(e) = regex::Regex::new(&pattern) {
                    let detail = e.to_string().replace('\n', " ");
                    self.report(at, format!("{label}: `matches` on `{path}` is not a valid regex: {detail}"));
                }
            }
            strings.push(path.clone());
            for value in [eq, ne, contains].into_iter().flatten() {
                value_strings(value, strings);
            }
            strings.extend(matches.iter().cloned());
        }
    }

    fn object_ref(&mut self, at: Place<'_>, label: &str, target: &ObjectRef, need: Need) {
        let has_name = target.name.is_some();
        let has_selector = target.selector.is_some();
        let what = format!("{} {}", target.api_version, target.kind);
        if has_name && has_selector {
            self.report(at, format!("{label}: target {what} has both `name` and `selector`; give one"));
            return;
        }
        match need {
            Need::Name if !has_name => {
                let how = if has_selector { " (a selector is not enough: it acts on one object)" } else { "" };
                self.report(at, format!("{label}: target {what} needs `name`{how}"));
            }
            Need::NameOrSelector if !has_name && !has_selector => {
                self.report(at, format!("{label}: target {what} needs `name` or `selector`"));
            }
            _ => {}
        }
    }

    fn duplicates(&mut self, suites: &[LoadedSuite]) {
        let mut rows: BTreeMap<&str, Vec<(&Path, usize)>> = BTreeMap::new();
        let mut names: BTreeMap<&str, Vec<&Path>> = BTreeMap::new();
        for loaded in suites {
            names.entry(&loaded.suite.suite).or_default().push(&loaded.path);
            for (i, row) in loaded.suite.rows.iter().enumerate() {
                rows.entry(&row.id).or_default().push((&loaded.path, loaded.row_lines.get(i).copied().unwrap_or(1)));
            }
        }
        for (id, places) in rows.iter().filter(|(_, p)| p.len() > 1) {
            for (k, (file, line)) in places.iter().enumerate() {
                let others: Vec<String> = places
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| *j != k)
                    .map(|(_, (f, l))| format!("{}:{l}", f.display()))
                    .collect();
                self.report(
                    Place { file, line: *line, row: Some(id) },
                    format!("duplicate row id `{id}` (also at {})", others.join(", ")),
                );
            }
        }
        for (name, files) in names.iter().filter(|(_, f)| f.len() > 1) {
            for (k, file) in files.iter().enumerate() {
                let others: Vec<String> =
                    files.iter().enumerate().filter(|(j, _)| *j != k).map(|(_, f)| f.display().to_string()).collect();
                self.report(
                    Place { file, line: 1, row: None },
                    format!("duplicate suite name `{name}` (also in {})", others.join(", ")),
                );
            }
        }
    }
}

/// What an object reference must name.
#[derive(Clone, Copy)]
enum Need {
    /// Exactly one object: patch, scale, bind.
    Name,
    /// One object or a selected set: delete.
    NameOrSelector,
    /// Anything, including every object of the kind: matches.
    Any,
}

/// The strings of one step, fixture or expectation, at its position in the row.
struct Site {
    label: String,
    pos: usize,
    strings: Vec<String>,
}

fn manifest_strings(manifest: &Manifest, out: &mut Vec<String>) {
    // A file's contents are the fixture author's; only what the suite itself writes is checked.
    if let Manifest::Inline(value) = manifest {
        value_strings(value, out);
    }
}

fn ref_strings(target: &ObjectRef, out: &mut Vec<String>) {
    let ObjectRef { api_version, kind, name, namespace, selector, field_selector } = target;
    out.push(api_version.clone());
    out.push(kind.clone());
    out.extend([name, namespace, selector, field_selector].into_iter().flatten().cloned());
}

/// Every string in a value, object keys included (the runner substitutes in both).
fn value_strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|v| value_strings(v, out)),
        Value::Object(map) => {
            for (k, v) in map {
                out.push(k.clone());
                value_strings(v, out);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// The `${name}` uses in `strings`; `(text, true)` marks a `${` with no closing `}`.
fn binding_uses(strings: &[String]) -> Vec<(String, bool)> {
    let mut uses = Vec::new();
    for s in strings {
        let mut rest = s.as_str();
        while let Some(start) = rest.find("${") {
            let after = &rest[start + 2..];
            match after.find('}') {
                Some(end) => {
                    uses.push((after[..end].to_string(), false));
                    rest = &after[end + 1..];
                }
                None => {
                    uses.push((after.to_string(), true));
                    break;
                }
            }
        }
    }
    uses
}

fn replace_bindings(s: &str, with: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else { break };
        out.push_str(&rest[..start]);
        out.push_str(with);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests;
