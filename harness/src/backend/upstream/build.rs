//! Where the upstream components are: `upstream/build.sh` builds them from the Go modules
//! pinned in `upstream/` into a cache directory keyed by the pins, and records what it built in
//! `versions.json`. The harness only reads that directory.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Why the built components cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// No `upstream/build.sh` where it was looked for.
    #[error("no upstream/build.sh under {}: run kproof from the repository, or pass --upstream-dir", .0.display())]
    NoRecipe(PathBuf),
    /// The script could not be run (no bash, no Go).
    #[error("running {}: {source}", script.display())]
    Run {
        /// The script.
        script: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The script failed.
    #[error("{} {mode} failed ({status}){}", script.display(), if stderr.is_empty() { String::new() } else { format!(": {stderr}") })]
    Failed {
        /// The script.
        script: PathBuf,
        /// `build`, `dir` or `check`.
        mode: String,
        /// Its exit status.
        status: std::process::ExitStatus,
        /// What it printed on stderr (last lines).
        stderr: String,
    },
    /// Nothing is built for the current pins yet.
    #[error("the upstream components are not built for the current pins ({}): run `kproof upstream build` (about 15-25 minutes on 2 cores the first time)", .0.display())]
    NotBuilt(PathBuf),
    /// `versions.json` is missing or not what the script writes.
    #[error("{}: {message}", path.display())]
    Versions {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A component the control plane needs was not built.
    #[error("{component} was not built ({status}{}); see {}", if note.is_empty() { String::new() } else { format!(": {note}") }, log.display())]
    Missing {
        /// The component.
        component: String,
        /// Its status in `versions.json`.
        status: String,
        /// The build's note.
        note: String,
        /// Its build log.
        log: PathBuf,
    },
}

/// One component as `versions.json` records it.
#[derive(Debug, Clone, Deserialize)]
pub struct ComponentBuild {
    /// `built` or `failed`.
    pub status: String,
    /// The version actually built.
    #[serde(default)]
    pub version: String,
    /// The version the pins ask for.
    #[serde(default)]
    pub wanted: String,
    /// Whether an older version was built because the wanted one cannot be fetched.
    #[serde(default)]
    pub fallback: bool,
    /// Why (for a fallback or a failure).
    #[serde(default)]
    pub note: String,
}

#[derive(Debug, Deserialize)]
struct VersionsFile {
    components: BTreeMap<String, ComponentBuild>,
}

/// A built set of upstream components.
#[derive(Debug, Clone)]
pub struct Build {
    /// The cache directory for the current pins.
    pub dir: PathBuf,
    /// What was built, by component (`etcd`, `kube-apiserver`, `kueue`, `ray-operator`, ...).
    pub components: BTreeMap<String, ComponentBuild>,
}

/// The components the control plane cannot run without.
pub const REQUIRED: &[&str] = &["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"];

impl Build {
    /// The path of a built binary.
    pub fn bin(&self, name: &str) -> PathBuf {
        self.dir.join("bin").join(name)
    }

    /// The manifests directory (`kuberay/crd`, `kueue/default.yaml`, `gateway-api/standard`).
    pub fn manifests(&self) -> PathBuf {
        self.dir.join("manifests")
    }

    /// Whether `component` was built (its binary or manifests exist).
    pub fn has(&self, component: &str) -> bool {
        self.components.get(component).is_some_and(|c| c.status == "built")
    }

    /// The version built of `component`, if any.
    pub fn version(&self, component: &str) -> Option<&str> {
        self.components.get(component).filter(|c| c.status == "built").map(|c| c.version.as_str())
    }

    /// Errs naming the first required component that is missing.
    pub fn require(&self, components: &[&str]) -> Result<(), BuildError> {
        for c in components {
            if !self.has(c) || !self.bin(c).is_file() {
                let entry = self.components.get(*c);
                return Err(BuildError::Missing {
                    component: c.to_string(),
                    status: entry.map(|e| e.status.clone()).unwrap_or_else(|| "not attempted".into()),
                    note: entry.map(|e| e.note.clone()).unwrap_or_default(),
                    log: self.dir.join("logs").join(format!("{c}.log")),
                });
            }
        }
        Ok(())
    }
}

/// The recipe: `<upstream_dir>/build.sh`.
fn script(upstream_dir: &Path) -> Result<PathBuf, BuildError> {
    let script = upstream_dir.join("build.sh");
    if script.is_file() { Ok(script) } else { Err(BuildError::NoRecipe(upstream_dir.to_path_buf())) }
}

fn run(script: &Path, mode: &str) -> Result<std::process::Output, BuildError> {
    Command::new("bash")
        .arg(script)
        .arg(mode)
        .output()
        .map_err(|source| BuildError::Run { script: script.to_path_buf(), source })
}

/// Builds what is missing for the current pins, with the script's progress on this terminal.
/// Returns the script's exit code (0: all built; 2: the control plane built, an operator not).
pub fn build(upstream_dir: &Path) -> Result<i32, BuildError> {
    let script = script(upstream_dir)?;
    let status = Command::new("bash")
        .arg(&script)
        .arg("build")
        .status()
        .map_err(|source| BuildError::Run { script: script.clone(), source })?;
    Ok(status.code().unwrap_or(1))
}

/// The built components for the current pins, without building anything.
pub fn locate(upstream_dir: &Path) -> Result<Build, BuildError> {
    let script = script(upstream_dir)?;
    let out = run(&script, "dir")?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(3).collect();
        return Err(BuildError::Failed {
            script,
            mode: "dir".into(),
            status: out.status,
            stderr: tail.into_iter().rev().collect::<Vec<_>>().join(" / "),
        });
    }
    let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let versions = dir.join("versions.json");
    if !versions.is_file() {
        return Err(BuildError::NotBuilt(dir));
    }
    let text = std::fs::read_to_string(&versions)
        .map_err(|e| BuildError::Versions { path: versions.clone(), message: e.to_string() })?;
    let parsed: VersionsFile = serde_json::from_str(&text)
        .map_err(|e| BuildError::Versions { path: versions.clone(), message: e.to_string() })?;
    Ok(Build { dir, components: parsed.components })
}
