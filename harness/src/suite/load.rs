//! Loading suite files and fixture manifests from disk.
//!
//! Suites come from users, so every failure is an error value that names the file, the line
//! (and column when the YAML parser knows it) and, inside a row, the row id; nothing here panics
//! on any input.
//!
//! Row lines and row attribution do not rely on the typed parse: the text is also parsed into a
//! span-aware generic shape that records where each row starts and what its id is, and, when
//! even that fails (a YAML syntax error), the row list is located by scanning the text for its
//! `- ` items at the list's indentation. An error's line is then mapped to the row containing it.

use crate::suite::location::{Location, RowPart};
use crate::suite::{Manifest, Suite};
use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;
use serde_saphyr::{MessageFormatter, Spanned};
use std::fmt;
use std::path::{Component, Path, PathBuf};

/// One suite file, parsed, with where its rows start so later checks can point at them.
#[derive(Debug, Clone)]
pub struct LoadedSuite {
    /// The file the suite came from (as given to the loader).
    pub path: PathBuf,
    /// The parsed suite.
    pub suite: Suite,
    /// 1-based line of each row (the line of its `- id:`), in the order of `suite.rows`.
    pub row_lines: Vec<usize>,
    /// Lines of each row's fixtures, steps and expectations, in the order of `suite.rows`
    /// (empty lists when the file's layout could not be read).
    pub part_lines: Vec<PartLines>,
    /// 1-based lines of the suite's own fixtures.
    pub fixture_lines: Vec<usize>,
}

/// Where the parts of one row start (1-based lines), so a failure can point at its step.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PartLines {
    /// The row's fixtures.
    pub fixtures: Vec<usize>,
    /// The row's steps.
    pub steps: Vec<usize>,
    /// The row's expectations.
    pub expect: Vec<usize>,
}

impl LoadedSuite {
    /// Where part `part` of row `index` is: its own line when known, else the row's.
    pub fn location(&self, index: usize, part: Option<RowPart>) -> Location {
        let row_line = self.row_lines.get(index).copied().unwrap_or(1);
        let parts = self.part_lines.get(index);
        let nth = |lines: Option<&Vec<usize>>, i: usize| lines.and_then(|l| l.get(i.wrapping_sub(1))).copied();
        let line = match part {
            Some(RowPart::SuiteFixture(i)) => self.fixture_lines.get(i.wrapping_sub(1)).copied(),
            Some(RowPart::Fixture(i)) => nth(parts.map(|p| &p.fixtures), i),
            Some(RowPart::Step(i)) => nth(parts.map(|p| &p.steps), i),
            Some(RowPart::Expectation(i)) => nth(parts.map(|p| &p.expect), i),
            None => None,
        };
        Location {
            file: self.path.clone(),
            line: line.unwrap_or(row_line),
            row: self.suite.rows.get(index).map(|r| r.id.clone()).unwrap_or_default(),
            part,
        }
    }

    /// The index of the row with id `id`.
    pub fn row_index(&self, id: &str) -> Option<usize> {
        self.suite.rows.iter().position(|r| r.id == id)
    }
}

/// Why a suite file, a suite directory or a fixture could not be loaded.
///
/// Every variant carries the file it is about; parse errors also carry the line, the column
/// and the row id when they are known. `Display` gives `file:line:col: row ID: message`.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// A file or directory could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A file is not valid YAML, or does not fit the suite format (unknown or missing field,
    /// wrong type, bad duration...).
    #[error("{}", format_located(path, *line, *column, row.as_deref(), message))]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line, when known.
        line: Option<usize>,
        /// 1-based column, when known.
        column: Option<usize>,
        /// Id of the row the error is in (or `#N` when the row has no readable id).
        row: Option<String>,
        /// What is wrong, as the YAML deserializer words it.
        message: String,
    },
    /// A suite directory is missing or holds no `*.yaml`/`*.yml` file: an empty run must never
    /// pass.
    #[error("{}: no suite files (*.yaml, *.yml): the directory is missing or empty", dir.display())]
    NoSuites {
        /// The directory that was searched.
        dir: PathBuf,
    },
    /// A fixture path is absolute, empty or climbs out of the fixtures directory.
    #[error("fixture {file:?}: {reason}")]
    FixturePath {
        /// The path as written in the suite.
        file: String,
        /// Why it is rejected.
        reason: String,
    },
    /// A manifest document is not a Kubernetes object (not a mapping, or no `apiVersion` or
    /// `kind`).
    #[error("{}", format_manifest_error(origin, *line, *document, message))]
    InvalidManifest {
        /// The fixture file's path, or `inline manifest`.
        origin: String,
        /// 1-based index of the document in the file (non-empty documents count).
        document: usize,
        /// 1-based line where the document starts, when known.
        line: Option<usize>,
        /// What is wrong.
        message: String,
    },
}

fn format_located(path: &Path, line: Option<usize>, column: Option<usize>, row: Option<&str>, message: &str) -> String {
    let mut out = path.display().to_string();
    if let Some(line) = line {
        out.push_str(&format!(":{line}"));
        if let Some(column) = column {
            out.push_str(&format!(":{column}"));
        }
    }
    out.push_str(": ");
    if let Some(row) = row {
        out.push_str(&format!("row {row}: "));
    }
    out.push_str(message);
    out
}

fn format_manifest_error(origin: &str, line: Option<usize>, document: usize, message: &str) -> String {
    match line {
        Some(line) => format!("{origin}:{line}: document {document}: {message}"),
        None => format!("{origin}: document {document}: {message}"),
    }
}

/// Reads and parses one suite file.
pub fn load_suite_file(path: &Path) -> Result<LoadedSuite, LoadError> {
    let text = std::fs::read_to_string(path).map_err(|source| LoadError::Io { path: path.to_path_buf(), source })?;
    load_suite_str(path, &text)
}

/// Parses a suite from `text`; `path_for_messages` is the file name errors and the result carry.
pub fn load_suite_str(path_for_messages: &Path, text: &str) -> Result<LoadedSuite, LoadError> {
    match serde_saphyr::from_str::<Suite>(text) {
        Ok(suite) => {
            let layout = RowLayout::of(text);
            // The layout comes from a second parse of the same text, so it lists the same rows;
            // the fallback keeps `row_lines` aligned with `rows` whatever happens.
            let row_lines = (0..suite.rows.len()).map(|i| layout.rows.get(i).map(|r| r.line).unwrap_or(1)).collect();
            let part_lines = (0..suite.rows.len())
                .map(|i| layout.rows.get(i).map(|r| r.parts.clone()).unwrap_or_default())
                .collect();
            Ok(LoadedSuite {
                path: path_for_messages.to_path_buf(),
                suite,
                row_lines,
                part_lines,
                fixture_lines: layout.fixtures,
            })
        }
        Err(err) => {
            let (line, column) = location_of(&err);
            let row = line.and_then(|line| RowLayout::of(text).row_at(line));
            Err(LoadError::Parse {
                path: path_for_messages.to_path_buf(),
                line,
                column,
                row,
                message: message_of(&err),
            })
        }
    }
}

/// Loads every `*.yaml` and `*.yml` file directly in `dir`, sorted by file name.
///
/// A missing directory, or one without suite files, is [`LoadError::NoSuites`]: a run over no
/// rows must fail, not pass.
pub fn load_suite_dir(dir: &Path) -> Result<Vec<LoadedSuite>, LoadError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory) => {
            return Err(LoadError::NoSuites { dir: dir.to_path_buf() });
        }
        Err(source) => return Err(LoadError::Io { path: dir.to_path_buf(), source }),
    };
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| LoadError::Io { path: dir.to_path_buf(), source })?;
        let path = entry.path();
        let is_yaml = path.extension().and_then(|e| e.to_str()).is_some_and(|e| e == "yaml" || e == "yml");
        // `metadata` follows symlinks, so a linked suite file counts and a linked directory does not.
        if is_yaml && std::fs::metadata(&path).is_ok_and(|m| m.is_file()) {
            files.push(path);
        }
    }
    if files.is_empty() {
        return Err(LoadError::NoSuites { dir: dir.to_path_buf() });
    }
    files.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    files.iter().map(|p| load_suite_file(p)).collect()
}

/// Loads suites from files and folders, as given on a command line: a folder contributes its
/// `*.yaml`/`*.yml` files (sorted), a file itself. Duplicate paths are loaded once.
pub fn load_suite_paths(paths: &[PathBuf]) -> Result<Vec<LoadedSuite>, LoadError> {
    let mut out: Vec<LoadedSuite> = Vec::new();
    for path in paths {
        let loaded = if path.is_dir() { load_suite_dir(path)? } else { vec![load_suite_file(path)?] };
        for suite in loaded {
            if !out.iter().any(|s| s.path == suite.path) {
                out.push(suite);
            }
        }
    }
    Ok(out)
}

/// The objects a manifest stands for.
///
/// A [`Manifest::File`] is read from `fixtures_dir/<file>` and may hold several YAML documents
/// (empty and null documents are skipped); a [`Manifest::Inline`] is one object. Every document
/// must be a mapping with non-empty string `apiVersion` and `kind`.
pub fn load_manifests(fixtures_dir: &Path, manifest: &Manifest) -> Result<Vec<Value>, LoadError> {
    match manifest {
        Manifest::Inline(value) => {
            check_object(value).map_err(|message| LoadError::InvalidManifest {
                origin: "inline manifest".into(),
                document: 1,
                line: None,
                message,
            })?;
            Ok(vec![value.clone()])
        }
        Manifest::File(file) => {
            let path = fixture_path(fixtures_dir, file)?;
            let text = std::fs::read_to_string(&path).map_err(|source| LoadError::Io { path: path.clone(), source })?;
            let docs: Vec<Spanned<Value>> = serde_saphyr::from_multiple(&text).map_err(|err| {
                let (line, column) = location_of(&err);
                LoadError::Parse { path: path.clone(), line, column, row: None, message: message_of(&err) }
            })?;
            let mut out = Vec::with_capacity(docs.len());
            for (i, doc) in docs.into_iter().enumerate() {
                // The parser skips empty and null documents; a tagged null can still get here.
                if doc.value.is_null() {
                    continue;
                }
                check_object(&doc.value).map_err(|message| LoadError::InvalidManifest {
                    origin: path.display().to_string(),
                    document: i + 1,
                    line: usize::try_from(doc.referenced.line()).ok().filter(|l| *l > 0),
                    message,
                })?;
                out.push(doc.value);
            }
            Ok(out)
        }
    }
}

/// Joins a fixture path onto the fixtures directory, refusing paths that could leave it.
fn fixture_path(fixtures_dir: &Path, file: &str) -> Result<PathBuf, LoadError> {
    let reject = |reason: &str| LoadError::FixturePath { file: file.to_string(), reason: reason.to_string() };
    if file.trim().is_empty() {
        return Err(reject("empty path"));
    }
    let rel = Path::new(file);
    for component in rel.components() {
        match component {
            Component::Normal(_) | Component::CurDir => {}
            Component::ParentDir => {
                return Err(reject("`..` is not allowed: fixture paths stay under the fixtures directory"));
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(reject(
                    "absolute paths are not allowed: fixture paths are relative to the fixtures directory",
                ));
            }
        }
    }
    Ok(fixtures_dir.join(rel))
}

fn check_object(value: &Value) -> Result<(), String> {
    let Some(obj) = value.as_object() else {
        return Err(format!("expected a Kubernetes object (a mapping), found {}", json_type(value)));
    };
    for field in ["apiVersion", "kind"] {
        match obj.get(field) {
            Some(Value::String(s)) if !s.trim().is_empty() => {}
            Some(Value::String(_)) => return Err(format!("`{field}` is empty")),
            Some(other) => return Err(format!("`{field}` must be a string, found {}", json_type(other))),
            None => return Err(format!("missing `{field}`")),
        }
    }
    Ok(())
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// Line and column of a YAML error, when the parser knows them (it reports 0 when it does not).
fn location_of(err: &serde_saphyr::Error) -> (Option<usize>, Option<usize>) {
    match err.location() {
        Some(loc) if loc.line() > 0 => {
            let line = usize::try_from(loc.line()).ok();
            let column = usize::try_from(loc.column()).ok().filter(|c| *c > 0);
            (line, column)
        }
        _ => (None, None),
    }
}

/// The error's own message, without the location suffix or source snippet the crate's
/// `Display` adds: the location goes in front, in `file:line:col` form.
fn message_of(err: &serde_saphyr::Error) -> String {
    let mut inner = err;
    while let serde_saphyr::Error::AliasError { error, .. } | serde_saphyr::Error::WithSnippet { error, .. } = inner {
        inner = error;
    }
    let text = serde_saphyr::UserMessageFormatter.format_message(inner);
    // Messages can quote user input; keep one error on one line.
    let text: String = text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    with_spelling_hint(text)
}

/// Adds "write `featureGates`" to an unknown-field error when the field is a snake_case or
/// kebab-case spelling of a key the format expects: every key of the format is camelCase.
fn with_spelling_hint(message: String) -> String {
    let Some(rest) = message.strip_prefix("unknown field `") else { return message };
    let Some((field, expected)) = rest.split_once('`') else { return message };
    if !field.contains(['_', '-']) {
        return message;
    }
    let mut camel = String::with_capacity(field.len());
    let mut upper = false;
    for c in field.chars() {
        if c == '_' || c == '-' {
            upper = true;
        } else if upper {
            camel.extend(c.to_uppercase());
            upper = false;
        } else {
            camel.push(c);
        }
    }
    let listed = expected.split([',', ' ']).any(|w| w.trim_matches('`') == camel);
    if listed { format!("{message} (write `{camel}`: keys of the suite format are camelCase)") } else { message }
}

/// Where each row of a suite file starts, what its id is, and where the row list ends.
#[derive(Debug, Default)]
struct RowLayout {
    /// 1-based line after which the row list begins (the `rows:` key), when known.
    start: Option<usize>,
    /// 1-based line of the first thing after the row list (the next top-level key), if any.
    end: Option<usize>,
    rows: Vec<RowStart>,
    /// Lines of the suite's own fixtures.
    fixtures: Vec<usize>,
}

#[derive(Debug, Clone, PartialEq)]
struct RowStart {
    line: usize,
    id: Option<String>,
    parts: PartLines,
}

/// The span-aware view of one row: its id, and where its fixtures, steps and expectations
/// start; every other field is skipped.
#[derive(Deserialize)]
struct ShadowRow {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    fixtures: Vec<Spanned<IgnoredAny>>,
    #[serde(default)]
    steps: Vec<Spanned<IgnoredAny>>,
    #[serde(default)]
    expect: Vec<Spanned<IgnoredAny>>,
}

fn lines_of(items: &[Spanned<IgnoredAny>]) -> Vec<usize> {
    items.iter().map(|i| usize::try_from(i.referenced.line()).unwrap_or(0)).collect()
}

impl RowLayout {
    /// The layout from a span-aware parse, or from scanning the text if the YAML does not parse.
    fn of(text: &str) -> RowLayout {
        match serde_saphyr::from_str::<ShadowSuite>(text) {
            Ok(shadow) if !shadow.0.rows.is_empty() => shadow.0,
            _ => scan_rows(text),
        }
    }

    /// The row (its id, or `#N` when it has none) that contains `line`.
    fn row_at(&self, line: usize) -> Option<String> {
        if self.start.is_some_and(|s| line < s) || self.end.is_some_and(|e| line >= e) {
            return None;
        }
        let index = self.rows.iter().rposition(|r| r.line <= line)?;
        let row = &self.rows[index];
        Some(row.id.clone().unwrap_or_else(|| format!("#{}", index + 1)))
    }
}

/// A permissive parse of a suite file: only where the top-level keys and the rows are, and the
/// rows' ids; everything else is skipped, so it succeeds on files the typed parse rejects.
struct ShadowSuite(RowLayout);

impl<'de> Deserialize<'de> for ShadowSuite {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ShadowVisitor;
        impl<'de> Visitor<'de> for ShadowVisitor {
            type Value = ShadowSuite;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a suite mapping")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ShadowSuite, A::Error> {
                let mut layout = RowLayout::default();
                let mut rows_seen = false;
                while let Some(key) = map.next_key::<Spanned<String>>()? {
                    let line = usize::try_from(key.referenced.line()).unwrap_or(0);
                    if rows_seen && layout.end.is_none() && line > 0 {
                        layout.end = Some(line);
                    }
                    if key.value == "rows" && !rows_seen {
                        rows_seen = true;
                        layout.start = Some(line);
                        let rows: Vec<Spanned<ShadowRow>> = map.next_value()?;
                        layout.rows = rows
                            .into_iter()
                            .map(|r| RowStart {
                                line: usize::try_from(r.referenced.line()).unwrap_or(0),
                                id: r.value.id.as_ref().map(id_text),
                                parts: PartLines {
                                    fixtures: lines_of(&r.value.fixtures),
                                    steps: lines_of(&r.value.steps),
                                    expect: lines_of(&r.value.expect),
                                },
                            })
                            .collect();
                    } else if key.value == "fixtures" {
                        let fixtures: Vec<Spanned<IgnoredAny>> = map.next_value()?;
                        layout.fixtures = lines_of(&fixtures);
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                if layout.rows.iter().any(|r| r.line == 0) {
                    return Err(de::Error::custom("row locations unknown"));
                }
                Ok(ShadowSuite(layout))
            }
        }
        deserializer.deserialize_map(ShadowVisitor)
    }
}

fn id_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Finds the rows of a block-style `rows:` list by indentation, for text that is not valid YAML.
fn scan_rows(text: &str) -> RowLayout {
    let mut layout = RowLayout::default();
    let lines: Vec<&str> = text.lines().collect();
    let Some(rows_key) = lines.iter().position(|l| {
        l.strip_prefix("rows:").is_some_and(|rest| rest.trim().is_empty() || rest.trim_start().starts_with('#'))
    }) else {
        return layout;
    };
    layout.start = Some(rows_key + 1);
    let mut item_indent: Option<usize> = None;
    // Column of the current row's keys; `None` right after a bare `-` (keys start on the next line).
    let mut key_indent: Option<usize> = None;
    for (i, line) in lines.iter().enumerate().skip(rows_key + 1) {
        let trimmed = line.trim_start_matches(' ');
        if trimmed.trim().is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let indent = line.len() - trimmed.len();
        let is_item = trimmed == "-" || trimmed.starts_with("- ");
        let is_doc_marker = indent == 0 && (trimmed.starts_with("---") || trimmed.starts_with("..."));
        let n = match item_indent {
            None if is_item && !is_doc_marker => {
                item_indent = Some(indent);
                indent
            }
            None => return layout,
            Some(n) => n,
        };
        if is_doc_marker || indent < n || (indent == n && !is_item) {
            layout.end = Some(i + 1);
            break;
        }
        if indent == n {
            let after_dash = &trimmed[1..];
            let content = after_dash.trim_start_matches(' ');
            key_indent = (!content.is_empty()).then(|| indent + 1 + (after_dash.len() - content.len()));
            layout.rows.push(RowStart {
                line: i + 1,
                id: scalar_after_key(content, "id"),
                parts: PartLines::default(),
            });
        } else if let Some(last) = layout.rows.last_mut() {
            let keys_at = *key_indent.get_or_insert(indent);
            if indent == keys_at && last.id.is_none() {
                last.id = scalar_after_key(trimmed, "id");
            }
        }
    }
    layout
}

/// The plain or quoted scalar of `key: value` on one line, without a trailing comment.
fn scalar_after_key(text: &str, key: &str) -> Option<String> {
    let rest = text.strip_prefix(key)?.trim_start_matches(' ').strip_prefix(':')?;
    let rest = rest.trim();
    let value = if let Some(q) = rest.strip_prefix('"') {
        q.split('"').next()?
    } else if let Some(q) = rest.strip_prefix('\'') {
        q.split('\'').next()?
    } else {
        rest.split(" #").next()?.trim()
    };
    (!value.is_empty()).then(|| value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "suite: s\ntitle: t\nrows:\n";

    fn row(id: &str) -> String {
        format!("  - id: {id}\n    title: x\n    kind: behaviour\n    source: s\n")
    }

    fn parse_err(text: &str) -> (LoadError, String) {
        let err = load_suite_str(Path::new("suites/x.yaml"), text).expect_err("should fail");
        let shown = err.to_string();
        (err, shown)
    }

    #[test]
    fn loads_a_suite_with_row_lines() {
        let text = format!("{HEAD}{}{}\n# a comment\n{}", row("a"), row("b"), row("c"));
        let loaded = load_suite_str(Path::new("s.yaml"), &text).expect("loads");
        assert_eq!(loaded.suite.rows.len(), 3);
        assert_eq!(loaded.row_lines, vec![4, 8, 14]);
    }

    #[test]
    fn typo_in_third_row_names_file_line_and_row() {
        let text = format!("{HEAD}{}{}{}    expct: []\n", row("rc-1"), row("rc-2"), row("rc-3"));
        let (err, shown) = parse_err(&text);
        let LoadError::Parse { line, row, .. } = &err else { panic!("{err:?}") };
        assert_eq!(*line, Some(16));
        assert_eq!(row.as_deref(), Some("rc-3"));
        assert!(
            shown.starts_with("suites/x.yaml:16:5: row rc-3: unknown field `expct`, expected one of id, title,"),
            "{shown}"
        );
    }

    #[test]
    fn rows_in_flow_style_or_without_leading_id_get_their_lines() {
        let text = "suite: s\ntitle: t\nrows:\n- {id: a, title: x, kind: behaviour, source: s}\n-\n  title: x\n  id: \"b\"\n  kind: limitation\n  source: s\n";
        let loaded = load_suite_str(Path::new("s.yaml"), text).expect("loads");
        assert_eq!(loaded.row_lines, vec![4, 6]);
    }

    #[test]
    fn error_in_row_without_id_names_its_position() {
        let text = format!("{HEAD}{}  - title: x\n    kind: behaviour\n    source: s\n    bogus: 1\n", row("a"));
        let (_, shown) = parse_err(&text);
        assert!(shown.starts_with("suites/x.yaml:11:5: row #2: unknown field `bogus`"), "{shown}");
    }

    #[test]
    fn errors_outside_rows_name_no_row() {
        // Missing top-level field: the error is about the suite, not its last row.
        let (err, shown) = parse_err(&format!("suite: s\nrows:\n{}", row("a")));
        assert!(matches!(&err, LoadError::Parse { row: None, .. }), "{shown}");
        assert!(shown.contains("missing field `title`"), "{shown}");
        // A top-level key after the rows.
        let (err, shown) = parse_err(&format!("{HEAD}{}{}fixtures: 3\n", row("a"), row("b")));
        assert!(matches!(&err, LoadError::Parse { row: None, line: Some(12), .. }), "{shown}");
        // Before the rows.
        let (err, shown) = parse_err(&format!("suite: s\ntitle: t\nextra: 1\nrows:\n{}", row("a")));
        assert!(matches!(&err, LoadError::Parse { row: None, line: Some(3), .. }), "{shown}");
        assert!(shown.starts_with("suites/x.yaml:3:1: unknown field `extra`"), "{shown}");
    }

    #[test]
    fn errors_deep_inside_rows_name_the_row() {
        let steps = "    steps:\n      - patch:\n          target: {apiVersion: v1, kind: Pod, name: p}\n          type: merge\n          patch: {a: 1}\n      - wat: 1\n";
        let (_, shown) = parse_err(&format!("{HEAD}{}{}{steps}{}", row("a"), row("b"), row("c")));
        assert!(shown.starts_with("suites/x.yaml:17:9: row b: unknown variant `wat`"), "{shown}");

        let expect = "    expect:\n      - eventually:\n          target: {apiVersion: v1, kind: Pod, name: p}\n          within: 5x\n";
        let (_, shown) = parse_err(&format!("{HEAD}{}{}{expect}", row("a"), row("b")));
        assert!(
            shown.starts_with("suites/x.yaml:15:19: row b: time: unknown unit \"x\" in duration \"5x\""),
            "{shown}"
        );

        let wait = "    steps:\n      - wait:\n          consistently:\n            target: {apiVersion: v1, kind: Pod, name: p}\n            for: 5s\n            match:\n              - {path: a, eq: 1, zz: 2}\n";
        let (_, shown) = parse_err(&format!("{HEAD}{}{wait}{}", row("a"), row("b")));
        assert!(shown.contains("row a: unknown field `zz`"), "{shown}");
    }

    #[test]
    fn yaml_syntax_errors_still_name_the_row() {
        let text = format!("{HEAD}{}{}    note: [unclosed\n{}", row("a"), row("b"), row("c"));
        let (err, shown) = parse_err(&text);
        let LoadError::Parse { line: Some(line), row: row_id, .. } = &err else { panic!("{shown}") };
        assert!(*line >= 12, "{shown}");
        // The parser may notice the missing `]` only at the next row; either way a row is named.
        assert!(matches!(row_id.as_deref(), Some("b") | Some("c")), "{shown}");
        assert!(shown.starts_with(&format!("suites/x.yaml:{line}:")), "{shown}");
        // A tab in indentation is a syntax error: the span-aware parse fails too, and the rows
        // are found by scanning the text.
        let text = format!("{HEAD}{}  - id: b\n    title: x\n\tsource: s\n{}", row("a"), row("c"));
        let (err, shown) = parse_err(&text);
        assert!(matches!(&err, LoadError::Parse { line: Some(9..=10), .. }), "{shown}");
        assert!(shown.contains(": row b: "), "{shown}");
    }

    #[test]
    fn snake_case_keys_get_the_camel_case_spelling() {
        let text = format!("{HEAD}{}    needs: {{feature_gates: {{kuberay: {{RayCronJob: true}}}}}}\n", row("a"));
        let (_, shown) = parse_err(&text);
        assert!(
            shown.contains("row a: unknown field `feature_gates`, expected one of capabilities, featureGates, settings, dra, minVersions (write `featureGates`: keys of the suite format are camelCase)"),
            "{shown}"
        );
        assert_eq!(with_spelling_hint("unknown field `zz`, expected `a`".into()), "unknown field `zz`, expected `a`");
        assert_eq!(
            with_spelling_hint("unknown field `no_such`, expected `a`".into()),
            "unknown field `no_such`, expected `a`"
        );
    }

    #[test]
    fn scanning_finds_rows_by_indentation() {
        let text = "suite: s\nrows:   # the table\n  # first\n  - id: 'a-1'  \n    title: x\n\n  - title: y\n    id: b # trailing\n    steps:\n      - id: not-a-row\n  -\n    id: \"c\"\ntitle: after\n";
        let layout = scan_rows(text);
        assert_eq!(layout.start, Some(2));
        assert_eq!(layout.end, Some(13));
        let rows: Vec<(usize, Option<&str>)> = layout.rows.iter().map(|r| (r.line, r.id.as_deref())).collect();
        assert_eq!(rows, vec![(4, Some("a-1")), (7, Some("b")), (11, Some("c"))]);
        assert_eq!(layout.row_at(10).as_deref(), Some("b"));
        assert_eq!(layout.row_at(13), None);
        assert_eq!(layout.row_at(1), None);
        // Rows at column 0 end at the next top-level key.
        let layout = scan_rows("rows:\n- id: a\n  title: t\n- id: b\nsuite: x\n");
        assert_eq!(layout.rows.len(), 2);
        assert_eq!(layout.end, Some(5));
        // No block list: nothing found, nothing invented.
        assert!(scan_rows("rows: []\n").rows.is_empty());
        assert!(scan_rows("suite: s\n").rows.is_empty());
    }

    #[test]
    fn garbage_input_is_an_error_not_a_panic() {
        let deep = "[".repeat(100_000);
        let deep_inline = format!("{HEAD}{}    steps:\n      - apply: {{inline: {}}}\n", row("a"), "[".repeat(5_000));
        let bomb = "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\ng: [*f, *f, *f, *f, *f, *f, *f, *f, *f]\n";
        for text in [
            "",
            "~",
            "rows: 5",
            "- a\n- b",
            "\u{0}\u{1}",
            "rows:\n  - 1\n  - [x]\n",
            "{{{",
            ":",
            "rows:\n\t- id: a\n",
            deep.as_str(),
            deep_inline.as_str(),
            bomb,
        ] {
            let result = load_suite_str(Path::new("g.yaml"), text);
            let err = result.expect_err("garbage must not load");
            assert!(err.to_string().starts_with("g.yaml"), "{err}");
        }
    }

    #[test]
    fn suite_dir_loads_yaml_and_yml_sorted_by_name() {
        let dir = tempfile::tempdir().expect("tempdir");
        let suite = |name: &str| format!("suite: {name}\ntitle: t\nrows:\n{}", row(name));
        std::fs::write(dir.path().join("b.yml"), suite("b")).expect("write");
        std::fs::write(dir.path().join("a.yaml"), suite("a")).expect("write");
        std::fs::write(dir.path().join("notes.txt"), "not a suite").expect("write");
        std::fs::create_dir(dir.path().join("c.yaml")).expect("mkdir");
        let loaded = load_suite_dir(dir.path()).expect("loads");
        let names: Vec<&str> = loaded.iter().map(|l| l.suite.suite.as_str()).collect();
        assert_eq!(names, vec!["a", "b"]);
        assert_eq!(loaded[0].path, dir.path().join("a.yaml"));

        std::fs::write(dir.path().join("c.yml"), "suite: c\ntitle: t\nrows:\n  - id: x\n    titel: t\n")
            .expect("write");
        let err = load_suite_dir(dir.path()).expect_err("bad file");
        let shown = err.to_string();
        assert!(
            shown.starts_with(&format!("{}:5:5: row x: unknown field `titel`", dir.path().join("c.yml").display())),
            "{shown}"
        );
    }

    #[test]
    fn empty_or_missing_suite_dir_is_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let err = load_suite_dir(dir.path()).expect_err("empty dir");
        assert!(matches!(&err, LoadError::NoSuites { dir: d } if d == dir.path()), "{err}");
        std::fs::write(dir.path().join("README.md"), "# suites").expect("write");
        assert!(matches!(load_suite_dir(dir.path()), Err(LoadError::NoSuites { .. })));
        let missing = dir.path().join("nope");
        let err = load_suite_dir(&missing).expect_err("missing dir");
        assert!(matches!(&err, LoadError::NoSuites { .. }), "{err}");
        assert!(err.to_string().contains("nope"), "{err}");
        let file = dir.path().join("README.md");
        assert!(matches!(load_suite_dir(&file), Err(LoadError::NoSuites { .. })));
    }

    #[test]
    fn missing_suite_file_names_the_file() {
        let err = load_suite_file(Path::new("/nonexistent/kproof/x.yaml")).expect_err("missing");
        assert!(matches!(&err, LoadError::Io { .. }));
        assert!(err.to_string().starts_with("/nonexistent/kproof/x.yaml: "), "{err}");
    }

    #[test]
    fn multi_document_fixtures_skip_empty_documents() {
        let dir = tempfile::tempdir().expect("tempdir");
        let text = "---\n# only a comment\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n~\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: b}\n...\n";
        std::fs::create_dir(dir.path().join("sub")).expect("mkdir");
        std::fs::write(dir.path().join("sub/two.yaml"), text).expect("write");
        let docs = load_manifests(dir.path(), &Manifest::File("./sub/two.yaml".into())).expect("loads");
        let kinds: Vec<&str> = docs.iter().filter_map(|d| d["kind"].as_str()).collect();
        assert_eq!(kinds, vec!["ConfigMap", "Secret"]);
    }

    #[test]
    fn fixture_documents_must_be_objects_with_api_version_and_kind() {
        let dir = tempfile::tempdir().expect("tempdir");
        let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).expect("write");
        write("nokind.yaml", "apiVersion: v1\nkind: ConfigMap\n---\napiVersion: v1\nmetadata: {name: x}\n");
        let err = load_manifests(dir.path(), &Manifest::File("nokind.yaml".into())).expect_err("no kind");
        let shown = err.to_string();
        assert!(matches!(&err, LoadError::InvalidManifest { document: 2, .. }), "{shown}");
        assert!(
            shown.starts_with(&format!("{}:4: document 2: missing `kind`", dir.path().join("nokind.yaml").display())),
            "{shown}"
        );

        write("list.yaml", "- a\n- b\n");
        let err = load_manifests(dir.path(), &Manifest::File("list.yaml".into())).expect_err("a list");
        assert!(
            err.to_string().contains("document 1: expected a Kubernetes object (a mapping), found a list"),
            "{err}"
        );

        write("badkind.yaml", "apiVersion: v1\nkind: 3\n");
        let err = load_manifests(dir.path(), &Manifest::File("badkind.yaml".into())).expect_err("kind 3");
        assert!(err.to_string().contains("`kind` must be a string"), "{err}");

        write("broken.yaml", "apiVersion: v1\nkind: [\n");
        let err = load_manifests(dir.path(), &Manifest::File("broken.yaml".into())).expect_err("syntax");
        assert!(matches!(&err, LoadError::Parse { line: Some(_), row: None, .. }), "{err}");
        assert!(err.to_string().starts_with(&dir.path().join("broken.yaml").display().to_string()), "{err}");

        let err = load_manifests(dir.path(), &Manifest::File("missing.yaml".into())).expect_err("missing");
        assert!(matches!(&err, LoadError::Io { .. }), "{err}");
        assert!(err.to_string().contains("missing.yaml"), "{err}");
    }

    #[test]
    fn inline_manifests_give_one_object() {
        let ok = serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}});
        assert_eq!(load_manifests(Path::new("fixtures"), &Manifest::Inline(ok.clone())).expect("ok"), vec![ok]);
        let err = load_manifests(Path::new("fixtures"), &Manifest::Inline(serde_json::json!({"kind": "Pod"})))
            .expect_err("bad");
        assert_eq!(err.to_string(), "inline manifest: document 1: missing `apiVersion`");
        let err = load_manifests(
            Path::new("fixtures"),
            &Manifest::Inline(serde_json::json!({"apiVersion": " ", "kind": "Pod"})),
        )
        .expect_err("bad");
        assert!(err.to_string().contains("`apiVersion` is empty"), "{err}");
    }

    const PARENT: &str = "`..` is not allowed: fixture paths stay under the fixtures directory";

    #[rstest::rstest]
    #[case::parent("../secret.yaml", PARENT)]
    #[case::nested_parent("a/../../b.yaml", PARENT)]
    #[case::trailing_parent("a/..", PARENT)]
    #[case::absolute(
        "/etc/passwd",
        "absolute paths are not allowed: fixture paths are relative to the fixtures directory"
    )]
    #[case::empty("", "empty path")]
    #[case::blank("  ", "empty path")]
    fn fixture_paths_cannot_leave_the_fixtures_dir(#[case] path: &str, #[case] why: &str) {
        let dir = tempfile::tempdir().expect("tempdir");
        let err = load_manifests(dir.path(), &Manifest::File(path.into())).expect_err(path);
        assert!(matches!(&err, LoadError::FixturePath { .. }), "{path}: {err}");
        assert_eq!(err.to_string(), format!("fixture {path:?}: {why}"));
    }
}
