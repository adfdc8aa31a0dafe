//! The JSON report: the run in a versioned schema, for tools.

use crate::report::result::RunReport;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// File name of the JSON report inside the report directory.
pub const JSON_REPORT_FILE: &str = "kproof-report.json";

/// Writes the run as pretty JSON to `dir/kproof-report.json`, creating `dir` if missing, and
/// returns the file's path.
///
/// The `schema` field comes first (it is the first field of [`RunReport`]), so a reader can
/// check the version before parsing the rest.
pub fn write_json(report: &RunReport, dir: &Path) -> io::Result<PathBuf> {
    fs::create_dir_all(dir)?;
    let mut json = serde_json::to_string_pretty(report)?;
    json.push('\n');
    let path = dir.join(JSON_REPORT_FILE);
    fs::write(&path, json)?;
    Ok(path)
}
