//! Offline checks of loaded suites for `kproof lint`, and the JSON Schema of the suite format.
//!
//! Loading already rejects what the types cannot represent (unknown fields and steps, wrong
//! types, bad durations). Lint finds what parses but cannot work: duplicate ids, bindings used
//! before a step binds them, fixtures that do not exist, regexes that do not compile, matches
//! without exactly one operator, object references that name no object where one is needed.

use crate::suite::load::{LoadedSuite, load_manifests};
use crate::suite::{
    ActorName, EventMatch, Expectation, ExpectedError, FieldMatch, Manifest, ObjectMatch, ObjectRef, Row, Step, Suite,
    WriteExpectation,
};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};

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
}

impl fmt::Display for LintIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: ", self.file.display(), self.line)?;
        if let Some(row) = &self.row {
            write!(f, "row {row}: ")?;
        }
        f.write_str(&self.message)
    }
}

/// Checks `suites` offline; fixture files are looked up under `fixtures_dir`.
///
/// Returns the issues sorted by file and line (an empty list means the suites are clean).
pub fn lint(suites: &[LoadedSuite], fixtures_dir: &Path) -> Vec<LintIssue> {
    let mut linter = Linter { fixtures_dir, fixture_cache: HashMap::new(), issues: Vec::new() };
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
    /// Fixture files are shared by many rows: parse each once, report it at every use.
    fixture_cache: HashMap<String, Result<(), String>>,
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
        self.issues.push(LintIssue {
            file: at.file.to_path_buf(),
            line: at.line,
            row: at.row.map(str::to_string),
            message: message.into(),
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
        for (i, manifest) in suite.fixtures.iter().enumerate() {
            let label = format!("suite fixture {}", i + 1);
            self.manifest(top, &label, manifest);
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
            self.row(Place { file: &loaded.path, line, row: Some(&row.id) }, row);
        }
    }

    fn row(&mut self, at: Place<'_>, row: &Row) {
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
            self.report(at, "empty `source`: name the seed file, URL, PR or issue the row comes from");
        }
        if row.steps.is_empty() && row.expect.is_empty() {
            self.report(at, "row has no steps and no expectations");
        }
        self.dra(at, row);

        // Every place that can use a binding, at its position in the row: fixtures at 0, step i
        // at i + 1, expectations after every step. A binding made at position p is visible at
        // positions after p only (a bind step cannot use its own name).
        let mut sites: Vec<Site> = Vec::new();
        for (i, manifest) in row.fixtures.iter().enumerate() {
            let label = format!("fixture {}", i + 1);
            self.manifest(at, &label, manifest);
            let mut strings = Vec::new();
            manifest_strings(manifest, &mut strings);
            sites.push(Site { label, pos: 0, strings });
        }
        let mut binds: Vec<(String, usize, String)> = Vec::new();
        for (i, step) in row.steps.iter().enumerate() {
            let pos = i + 1;
            let label = format!("step {pos} ({})", step.name());
            let mut strings = Vec::new();
            self.step(at, &label, step, &mut strings);
            if let Step::Knob { actor, .. } = step
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

    fn manifest(&mut self, at: Place<'_>, label: &str, manifest: &Manifest) {
        let result = match manifest {
            Manifest::File(file) => {
                let fixtures_dir = self.fixtures_dir;
                self.fixture_cache
                    .entry(file.clone())
                    .or_insert_with(|| load_manifests(fixtures_dir, manifest).map(|_| ()).map_err(|e| e.to_string()))
                    .clone()
            }
            Manifest::Inline(_) => load_manifests(self.fixtures_dir, manifest).map(|_| ()).map_err(|e| e.to_string()),
        };
        if let Err(message) = result {
            self.report(at, format!("{label}: {message}"));
        }
    }

    fn step(&mut self, at: Place<'_>, label: &str, step: &Step, strings: &mut Vec<String>) {
        self.write_expectation(at, label, &step.write_expectation());
        match step {
            Step::Apply(m) | Step::Create(m) => {
                self.manifest(at, label, &m.manifest);
                manifest_strings(&m.manifest, strings);
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
mod tests {
    use super::*;
    use crate::suite::load::load_suite_str;

    /// A suite file holding `rows` (YAML text indented for the row list), loaded as `path`.
    fn suite(path: &str, name: &str, rows: &str) -> LoadedSuite {
        let text = format!("suite: {name}\ntitle: t\nrows:\n{rows}");
        load_suite_str(Path::new(path), &text).unwrap_or_else(|e| panic!("test suite must load: {e}"))
    }

    /// A row with the given id and body (steps/expect), indented for the row list.
    fn row(id: &str, body: &str) -> String {
        format!("  - id: {id}\n    title: x\n    kind: behaviour\n    source: s\n{body}")
    }

    const EXPECT_POD: &str =
        "    expect:\n      - eventually:\n          target: {apiVersion: v1, kind: Pod, name: p}\n";

    fn fixtures() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            dir.path().join("two.yaml"),
            "apiVersion: v1\nkind: ConfigMap\n---\napiVersion: v1\nkind: Secret\n",
        )
        .expect("write");
        std::fs::write(dir.path().join("broken.yaml"), "apiVersion: v1\nkind: [\n").expect("write");
        std::fs::write(dir.path().join("nokind.yaml"), "apiVersion: v1\n").expect("write");
        dir
    }

    fn lint_one(rows: &str) -> Vec<String> {
        let dir = fixtures();
        lint(&[suite("s.yaml", "s", rows)], dir.path()).iter().map(ToString::to_string).collect()
    }

    fn assert_clean(rows: &str) {
        let issues = lint_one(rows);
        assert!(issues.is_empty(), "expected no issues, got {issues:#?}");
    }

    fn assert_issue(rows: &str, needle: &str) -> Vec<String> {
        let issues = lint_one(rows);
        assert!(issues.iter().any(|i| i.contains(needle)), "expected an issue containing {needle:?}, got {issues:#?}");
        issues
    }

    #[test]
    fn row_ids_longer_than_a_label_value_are_reported() {
        let long = "r".repeat(64);
        assert_issue(&row(&long, EXPECT_POD), "is 64 bytes; at most 63");
        assert_clean(&row(&"r".repeat(63), EXPECT_POD));
    }

    #[test]
    fn dra_rows_must_name_their_profile() {
        let runs =
            row("d", &format!("    needs: {{capabilities: [\"actor:resourceclaim-controller\"]}}\n{EXPECT_POD}"));
        assert_issue(&runs, "needs.dra.profile is missing (it runs resourceclaim-controller)");
        let skew = row("d", &format!("    needs: {{dra: {{gatesOff: [kubelet]}}}}\n{EXPECT_POD}"));
        assert_issue(&skew, "needs.dra.profile is missing (it sets needs.dra)");
        let baseline_off =
            row("d", &format!("    needs: {{dra: {{profile: baseline, gatesOff: [kubelet]}}}}\n{EXPECT_POD}"));
        assert_issue(&baseline_off, "there is none to turn off");
        let fine = row(
            "d",
            &format!(
                "    needs: {{capabilities: [\"actor:dra-driver\"], dra: {{profile: podgroup, gatesOff: [kube-controller-manager]}}}}\n{EXPECT_POD}"
            ),
        );
        assert_clean(&fine);
    }

    #[test]
    fn an_unknown_dra_profile_does_not_load() {
        let text = format!(
            "suite: s\ntitle: t\nrows:\n{}",
            row("d", &format!("    needs: {{dra: {{profile: pods}}}}\n{EXPECT_POD}"))
        );
        let err = load_suite_str(Path::new("s.yaml"), &text).unwrap_err().to_string();
        assert!(err.contains("unknown variant `pods`"), "{err}");
    }

    #[test]
    fn a_full_clean_row_has_no_issues() {
        let body = r#"    needs: {capabilities: ["actor:kubelet"]}
    fixtures:
      - file: two.yaml
      - inline: {apiVersion: v1, kind: Namespace, metadata: {name: ns}}
    steps:
      - apply: {file: ./two.yaml}
      - bind: {name: cluster, from: {apiVersion: ray.io/v1, kind: RayCluster, name: rc}, path: metadata.name}
      - wait:
          eventually:
            target: {apiVersion: v1, kind: Pod, selector: "ray.io/cluster=${cluster}"}
            count: 2
      - patch:
          target: {apiVersion: ray.io/v1, kind: RayCluster, name: "${cluster}"}
          type: merge
          patch: {spec: {suspend: true}}
      - scale: {target: {apiVersion: apps/v1, kind: Deployment, name: d}, replicas: 3}
      - delete: {target: {apiVersion: v1, kind: Pod, selector: "a=b"}}
      - advance: 1h
      - knob: {actor: kubelet, knob: failPod, value: "p"}
    expect:
      - eventually:
          target: {apiVersion: v1, kind: Pod}
          match:
            - {path: status.phase, eq: Running}
            - {path: metadata.name, matches: "^${cluster}-[a-z0-9]+$"}
            - {path: spec.replicas, gt: 1}
            - {path: metadata.labels, exists: true}
      - consistently:
          target: {apiVersion: v1, kind: Pod, name: p}
          for: 30s
      - before:
          first: {verb: delete, kind: Pod}
          then: {verb: create, kind: Pod, name: "${cluster}-head"}
      - never: {verb: delete, kind: Service}
      - atMost: {n: 1, event: {verb: create}}
      - count: {n: 2, event: {verb: create, match: [{path: spec.x, absent: true}]}}
"#;
        assert_clean(&row("ray-1", body));
    }

    #[test]
    fn duplicate_row_ids_are_reported_in_both_places() {
        let dir = fixtures();
        let a = suite("suites/a.yaml", "a", &format!("{}{}", row("x-1", EXPECT_POD), row("dup", EXPECT_POD)));
        let b = suite("suites/b.yaml", "b", &row("dup", EXPECT_POD));
        let issues: Vec<String> = lint(&[a, b], dir.path()).iter().map(ToString::to_string).collect();
        assert_eq!(
            issues,
            vec![
                "suites/a.yaml:11: row dup: duplicate row id `dup` (also at suites/b.yaml:4)".to_string(),
                "suites/b.yaml:4: row dup: duplicate row id `dup` (also at suites/a.yaml:11)".to_string(),
            ]
        );
        // Distinct ids: nothing.
        let a = suite("suites/a.yaml", "a", &row("one", EXPECT_POD));
        let b = suite("suites/b.yaml", "b", &row("two", EXPECT_POD));
        assert!(lint(&[a, b], dir.path()).is_empty());
    }

    #[test]
    fn duplicate_suite_names_are_reported() {
        let dir = fixtures();
        let a = suite("suites/a.yaml", "same", &row("one", EXPECT_POD));
        let b = suite("suites/b.yaml", "same", &row("two", EXPECT_POD));
        let issues: Vec<String> = lint(&[a, b], dir.path()).iter().map(ToString::to_string).collect();
        assert_eq!(
            issues,
            vec![
                "suites/a.yaml:1: duplicate suite name `same` (also in suites/b.yaml)".to_string(),
                "suites/b.yaml:1: duplicate suite name `same` (also in suites/a.yaml)".to_string(),
            ]
        );
    }

    #[test]
    fn count_and_at_least_together_are_reported() {
        assert_issue(
            &row("a", "    expect:\n      - eventually: {target: {apiVersion: v1, kind: Pod}, count: 1, atLeast: 2}\n"),
            "`count`, `atLeast` and `gone` exclude each other",
        );
    }

    #[test]
    fn empty_source_is_reported() {
        let rows = "  - id: a\n    title: x\n    kind: behaviour\n    source: '  '\n".to_string() + EXPECT_POD;
        let issues = assert_issue(&rows, "s.yaml:4: row a: empty `source`");
        assert_eq!(issues.len(), 1);
        assert_clean(&row("a", EXPECT_POD));
    }

    #[test]
    fn rows_with_nothing_to_do_are_reported() {
        assert_issue(&row("a", ""), "s.yaml:4: row a: row has no steps and no expectations");
        assert_clean(&row("a", EXPECT_POD));
        assert_clean(&row("a", "    steps:\n      - apply: {file: two.yaml}\n"));
        let empty = lint(
            &[load_suite_str(Path::new("e.yaml"), "suite: e\ntitle: t\nrows: []\n").expect("loads")],
            Path::new("."),
        );
        assert_eq!(empty.iter().map(ToString::to_string).collect::<Vec<_>>(), vec!["e.yaml:1: suite has no rows"]);
    }

    #[rstest::rstest]
    #[case::upper("Upper")]
    #[case::underscore("under_score")]
    #[case::leading_dash("-lead")]
    #[case::dot("has.dot")]
    #[case::space("\"with space\"")]
    #[case::empty("\"\"")]
    fn row_ids_that_cannot_be_test_names_are_reported(#[case] id: &str) {
        let issues = assert_issue(&row(id, EXPECT_POD), "must match ^[a-z0-9][a-z0-9-]*$");
        assert_eq!(issues.len(), 1, "{issues:?}");
    }

    #[rstest::rstest]
    #[case("a")]
    #[case("rc-3")]
    #[case("0-start")]
    #[case("upgrade-42-x")]
    fn row_ids_that_are_test_names_are_clean(#[case] id: &str) {
        assert_clean(&row(id, EXPECT_POD));
    }

    #[test]
    fn suite_names_must_be_test_name_prefixes() {
        let dir = fixtures();
        let bad_name = suite("s.yaml", "Ray_Cluster", &row("a", EXPECT_POD));
        let issues = lint(&[bad_name], dir.path());
        assert!(issues[0].message.starts_with("suite name \"Ray_Cluster\" must match"), "{issues:?}");
    }

    #[test]
    fn bindings_must_be_bound_before_use() {
        let bind = "      - bind: {name: n, from: {apiVersion: v1, kind: Pod, name: p}, path: metadata.name}\n";
        let use_in_patch =
            "      - patch: {target: {apiVersion: v1, kind: Pod, name: \"${n}\"}, type: merge, patch: {a: 1}}\n";
        // Used in the step before the bind.
        let rows = row("a", &format!("    steps:\n{use_in_patch}{bind}"));
        assert_issue(&rows, "s.yaml:4: row a: step 1 (patch): `${n}` is used before step 2 (bind) binds it");
        // Used after: clean.
        assert_clean(&row("a", &format!("    steps:\n{bind}{use_in_patch}")));
        // Never bound anywhere.
        assert_issue(
            &row("a", &format!("    steps:\n{use_in_patch}")),
            "step 1 (patch): `${n}` is used but no step of this row binds it",
        );
        // A bind cannot use its own name.
        let own = "      - bind: {name: n, from: {apiVersion: v1, kind: Pod, name: \"${n}\"}, path: metadata.name}\n";
        assert_issue(
            &row("a", &format!("    steps:\n{own}{use_in_patch}")),
            "step 1 (bind): `${n}` is used before step 1 (bind) binds it",
        );
        // Row fixtures come before every step.
        let fixture = "    fixtures:\n      - inline: {apiVersion: v1, kind: Pod, metadata: {name: \"${n}\"}}\n";
        assert_issue(
            &row("a", &format!("{fixture}    steps:\n{bind}{use_in_patch}")),
            "fixture 1: `${n}` is used before step 1 (bind) binds it",
        );
    }

    #[test]
    fn bindings_are_seen_in_every_string_of_steps_and_expectations() {
        let cases = [
            "      - patch: {target: {apiVersion: v1, kind: Pod, name: p}, type: merge, patch: {metadata: {labels: {\"${n}\": x}}}}\n",
            "      - patch: {target: {apiVersion: v1, kind: Pod, name: p, namespace: \"${n}\"}, type: json, patch: [{op: add, path: /a, value: \"${n}\"}]}\n",
            "      - apply: {inline: {apiVersion: v1, kind: ConfigMap, data: {k: \"${n}\"}}}\n",
            "      - delete: {target: {apiVersion: v1, kind: Pod, selector: \"app=${n}\"}}\n",
            "      - knob: {actor: kubelet, knob: ready, value: {name: \"${n}\"}}\n",
            "      - wait: {eventually: {target: {apiVersion: v1, kind: Pod, name: p}, match: [{path: a, ne: \"${n}\"}]}}\n",
        ];
        for step in cases {
            assert_issue(&row("a", &format!("    steps:\n{step}")), "step 1 (");
        }
        let expectations = [
            "      - eventually: {target: {apiVersion: v1, kind: Pod, name: p}, match: [{path: a, eq: \"${n}\"}]}\n",
            "      - eventually: {target: {apiVersion: v1, kind: Pod, name: p}, match: [{path: a, contains: [\"${n}\"]}]}\n",
            "      - never: {kind: Pod, name: \"${n}\"}\n",
            "      - before: {first: {kind: Pod}, then: {kind: Pod, actor: \"${n}\"}}\n",
            "      - count: {n: 1, event: {kind: Pod, match: [{path: x, eq: \"${n}\"}]}}\n",
            "      - atMost: {n: 1, event: {namePrefix: \"${n}-\"}}\n",
        ];
        for expectation in expectations {
            assert_issue(&row("a", &format!("    expect:\n{expectation}")), "expect 1 (");
        }
    }

    #[test]
    fn waits_see_earlier_bindings_and_expectations_see_all() {
        let bind = "      - bind: {name: n, from: {apiVersion: v1, kind: Pod, name: p}, path: metadata.name}\n";
        let wait = "      - wait: {eventually: {target: {apiVersion: v1, kind: Pod, name: \"${n}\"}}}\n";
        assert_clean(&row("a", &format!("    steps:\n{bind}{wait}")));
        assert_issue(
            &row("a", &format!("    steps:\n{wait}{bind}")),
            "step 1 (wait): `${n}` is used before step 2 (bind) binds it",
        );
        let expect = "    expect:\n      - never: {name: \"${n}\"}\n";
        assert_clean(&row("a", &format!("{expect}    steps:\n      - advance: 1s\n{bind}")));
    }

    #[test]
    fn unused_bindings_are_reported() {
        let bind = "      - bind: {name: n, from: {apiVersion: v1, kind: Pod, name: p}, path: metadata.name}\n";
        let issues = assert_issue(
            &row("a", &format!("    steps:\n{bind}")),
            "row a: unused binding `${n}`: step 1 (bind) binds it",
        );
        assert!(issues.iter().all(|i| i.contains("unused binding")), "{issues:?}");
        let used = "    expect:\n      - never: {name: \"x-${n}\"}\n";
        assert_clean(&row("a", &format!("    steps:\n{bind}{used}")));
    }

    #[test]
    fn binding_syntax_problems_are_reported() {
        let bad_name = "      - bind: {name: \"a b\", from: {apiVersion: v1, kind: Pod, name: p}, path: x}\n      - delete: {target: {apiVersion: v1, kind: Pod, name: \"${a b}\"}}\n";
        assert_issue(&row("a", &format!("    steps:\n{bad_name}")), "binding name \"a b\" must be");
        let unterminated = "      - delete: {target: {apiVersion: v1, kind: Pod, name: \"${n\"}}\n";
        assert_issue(&row("a", &format!("    steps:\n{unterminated}")), "step 1 (delete): unterminated `${`");
    }

    #[rstest::rstest]
    #[case::missing("{file: missing.yaml}", "missing.yaml")]
    #[case::broken("{file: broken.yaml}", "broken.yaml:2")]
    #[case::no_kind("{file: nokind.yaml}", "document 1: missing `kind`")]
    #[case::parent("{file: ../two.yaml}", "`..` is not allowed")]
    #[case::absolute("{file: /etc/passwd}", "absolute paths are not allowed")]
    #[case::inline("{inline: {apiVersion: v1}}", "inline manifest: document 1: missing `kind`")]
    fn bad_fixtures_are_reported_where_they_are_used(#[case] manifest: &str, #[case] needle: &str) {
        let as_step = assert_issue(&row("a", &format!("    steps:\n      - apply: {manifest}\n")), needle);
        assert!(as_step.iter().any(|i| i.contains("step 1 (apply): ") && i.contains(needle)), "{as_step:?}");
        let as_fixture = assert_issue(&row("a", &format!("    fixtures:\n      - {manifest}\n{EXPECT_POD}")), needle);
        assert!(as_fixture.iter().any(|i| i.contains("fixture 1: ") && i.contains(needle)), "{as_fixture:?}");
    }

    #[test]
    fn fixtures_must_exist_and_parse() {
        let dir = fixtures();
        let text = format!("suite: s\ntitle: t\nfixtures:\n  - file: missing.yaml\nrows:\n{}", row("a", EXPECT_POD));
        let loaded = load_suite_str(Path::new("s.yaml"), &text).expect("loads");
        let issues = lint(&[loaded], dir.path());
        assert_eq!(issues.len(), 1, "{issues:?}");
        assert!(issues[0].to_string().starts_with("s.yaml:1: suite fixture 1: "), "{}", issues[0]);
        assert_clean(&row("a", "    steps:\n      - apply: {file: two.yaml}\n"));
    }

    #[test]
    fn regexes_must_compile() {
        let m = |re: &str| {
            row(
                "a",
                &format!(
                    "    expect:\n      - eventually: {{target: {{apiVersion: v1, kind: Pod, name: p}}, match: [{{path: a, matches: '{re}'}}]}}\n"
                ),
            )
        };
        assert_issue(&m("([a-z"), "expect 1 (eventually): `matches` on `a` is not a valid regex");
        assert_issue(&m("a{2,1}"), "not a valid regex");
        assert_clean(&m("^[a-z]+-\\d+$"));
    }

    #[test]
    fn field_matches_need_exactly_one_operator() {
        let m = |ops: &str| {
            row(
                "a",
                &format!(
                    "    expect:\n      - eventually: {{target: {{apiVersion: v1, kind: Pod, name: p}}, match: [{{path: a{ops}}}]}}\n"
                ),
            )
        };
        assert_issue(&m(""), "match on `a` has no operator");
        assert_issue(&m(", eq: null"), "`eq: null` reads as no operator");
        assert_issue(&m(", eq: 1, ne: 2"), "match on `a` has 2 operators (eq, ne); give exactly one");
        assert_issue(&m(", gt: 1, lt: 3, exists: true"), "3 operators (exists, gt, lt)");
        let event = row("a", "    expect:\n      - never: {kind: Pod, match: [{path: a}]}\n");
        assert_issue(&event, "expect 1 (never): match on `a` has no operator");
    }

    #[rstest::rstest]
    fn each_operator_alone_is_clean(
        #[values(
            ", eq: 1",
            ", ne: x",
            ", exists: true",
            ", absent: true",
            ", gt: 1",
            ", lt: 2.5",
            ", contains: x",
            ", matches: x"
        )]
        op: &str,
    ) {
        assert_clean(&row(
            "a",
            &format!(
                "    expect:\n      - eventually: {{target: {{apiVersion: v1, kind: Pod, name: p}}, match: [{{path: a{op}}}]}}\n"
            ),
        ));
    }

    #[test]
    fn object_refs_name_what_their_step_needs() {
        let step = |s: &str| row("a", &format!("    steps:\n      - {s}\n"));
        assert_issue(
            &step("delete: {target: {apiVersion: v1, kind: Pod, name: p, selector: a=b}}"),
            "step 1 (delete): target v1 Pod has both `name` and `selector`",
        );
        assert_issue(
            &step("patch: {target: {apiVersion: v1, kind: Pod}, type: merge, patch: {}}"),
            "step 1 (patch): target v1 Pod needs `name`",
        );
        assert_issue(
            &step("scale: {target: {apiVersion: apps/v1, kind: Deployment, selector: a=b}, replicas: 1}"),
            "needs `name` (a selector is not enough",
        );
        assert_issue(
            &step("bind: {name: x, from: {apiVersion: v1, kind: Pod}, path: a}"),
            "step 1 (bind): target v1 Pod needs `name`",
        );
        assert_issue(&step("delete: {target: {apiVersion: v1, kind: Pod}}"), "needs `name` or `selector`");
        assert_issue(
            &row(
                "a",
                "    expect:\n      - eventually: {target: {apiVersion: v1, kind: Pod, name: p, selector: a=b}}\n",
            ),
            "expect 1 (eventually): target v1 Pod has both",
        );
        assert_clean(&step("delete: {target: {apiVersion: v1, kind: Pod, name: p}}"));
        assert_clean(&step("scale: {target: {apiVersion: apps/v1, kind: Deployment, name: d}, replicas: 1}"));
        assert_clean(&row("a", "    expect:\n      - eventually: {target: {apiVersion: v1, kind: Pod}, gone: true}\n"));
    }

    #[test]
    fn issues_carry_the_row_line_and_display_as_file_line_row() {
        let rows = format!("{}{}", row("first", EXPECT_POD), row("second", ""));
        let issues = lint_one(&rows);
        assert_eq!(issues, vec!["s.yaml:11: row second: row has no steps and no expectations".to_string()]);
        let issue = LintIssue { file: "f.yaml".into(), line: 3, row: None, message: "m".into() };
        assert_eq!(issue.to_string(), "f.yaml:3: m");
    }

    #[test]
    fn schema_defines_the_format() {
        let schema = json_schema();
        assert_eq!(schema["$id"], "https://kproof.dev/schema/suite-v1.json");
        assert!(schema["title"].is_string());
        for def in ["Row", "Step", "Expectation", "ObjectRef", "FieldMatch", "EventMatch", "Manifest"] {
            assert!(schema["$defs"][def].is_object(), "missing definition {def}");
        }
        assert_eq!(schema["properties"]["rows"]["items"]["$ref"], "#/$defs/Row");
    }

    #[test]
    fn knobs_need_their_actor_in_the_capabilities() {
        let knob = "    steps:\n      - knob: {actor: kubelet, knob: failPod, value: p}\n";
        assert_issue(
            &row("a", knob),
            "step 1 (knob): turns a knob of kubelet, which the row does not run: add `actor:kubelet` to needs.capabilities",
        );
        assert_clean(&row("a", &format!("    needs: {{capabilities: [actor:kubelet]}}\n{knob}")));
    }

    #[test]
    fn binding_scanning() {
        let uses = binding_uses(&["${a}-${b}".into(), "x$y{z}".into(), "${".into()]);
        assert_eq!(uses, vec![("a".to_string(), false), ("b".to_string(), false), (String::new(), true)]);
        assert_eq!(replace_bindings("^${a}-[0-9]+${b}$", "w"), "^w-[0-9]+w$");
        assert_eq!(replace_bindings("${open", "w"), "${open");
    }
}
