//! The `fake-apiserver` binary as a child process, and the kubectl binaries beside the one on
//! PATH: shared by the tests that drive real clients (kubectl, Python) over TCP.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `fake-apiserver --port 0`, killed on drop.
pub struct ServerProcess {
    child: Child,
    /// The kubeconfig it wrote.
    pub kubeconfig: PathBuf,
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the server writing its kubeconfig into `dir`, and waits (up to 30 s) until it has:
/// the server is another process, so its kubeconfig file is the only signal.
pub fn start_server(dir: &Path) -> Result<ServerProcess, String> {
    start_server_with(dir, &[])
}

/// [`start_server`] with more command-line arguments (e.g. `--rbac`).
pub fn start_server_with(dir: &Path, extra: &[&str]) -> Result<ServerProcess, String> {
    let kubeconfig = dir.join("kubeconfig");
    let child = Command::new(env!("CARGO_BIN_EXE_fake-apiserver"))
        .args(["--port", "0"])
        .args(extra)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start the server: {e}"))?;
    let server = ServerProcess { child, kubeconfig };
    wait_until(Duration::from_secs(30), || server.kubeconfig.exists())
        .map_err(|_| "the server did not write its kubeconfig".to_string())?;
    Ok(server)
}

/// Polls `f` until it holds or `limit` passes (the clients run in other processes: there is
/// no event to wait on).
pub fn wait_until(limit: Duration, mut f: impl FnMut() -> bool) -> Result<(), ()> {
    let start = Instant::now();
    loop {
        if f() {
            return Ok(());
        }
        if start.elapsed() > limit {
            return Err(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The real `kubectl` on PATH (links resolved); `kubectl.1.NN` live beside it.
pub fn kubectl_on_path() -> Result<PathBuf, String> {
    let which = Command::new("sh").args(["-c", "command -v kubectl"]).output().map_err(|e| e.to_string())?;
    let path = String::from_utf8_lossy(&which.stdout).trim().to_string();
    if path.is_empty() {
        return Err("kubectl is not on PATH".into());
    }
    std::fs::canonicalize(&path).map_err(|e| e.to_string())
}
