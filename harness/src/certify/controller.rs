//! The integrator's controller as a child process: its own process group (so its children go
//! with it), its output in a log file, killed when the scenario ends, when kproof is
//! interrupted (SIGINT, SIGTERM), when kproof panics, and (through `PR_SET_PDEATHSIG`) when
//! kproof dies without a chance to clean up.

use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

/// Process groups of the controllers running now, killed on interruption or panic.
static RUNNING: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// Kills every controller process group still running (signal-safe enough for a panic hook:
/// a lock and `kill(2)`).
pub fn kill_all() {
    let groups = RUNNING.lock().clone();
    for pgid in groups {
        // SAFETY: kill(2) with a negative pid signals a process group; no memory is touched.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
}

/// Installs the panic hook and the SIGINT/SIGTERM handler that kill every running controller
/// before kproof goes (idempotent; the handler runs on `runtime`).
pub fn install_cleanup(runtime: &tokio::runtime::Handle) {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            kill_all();
            previous(info);
        }));
    });
    runtime.spawn(async {
        fake_apiserver::shutdown_signal().await;
        kill_all();
        eprintln!("kproof certify: interrupted; controllers stopped");
        std::process::exit(130);
    });
}

/// How a controller process ended.
#[derive(Debug, Clone)]
pub enum Exit {
    /// Still running when the scenario ended (the normal case); kproof stopped it.
    Stopped,
    /// It exited on its own, with this status, while the scenario ran.
    Exited(String),
}

/// One running controller.
pub struct ControllerProcess {
    child: tokio::process::Child,
    pgid: i32,
    log: PathBuf,
}

impl ControllerProcess {
    /// Starts `command` with `env` added, output to `log`.
    pub fn start(command: &[String], env: &[(String, String)], log: &Path) -> Result<Self, String> {
        let (program, args) = command.split_first().ok_or("no controller command after `--`")?;
        let out = std::fs::File::create(log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
        let err = out.try_clone().map_err(|e| format!("cannot open {}: {e}", log.display()))?;
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(args).envs(env.iter().cloned()).stdin(Stdio::null()).stdout(out).stderr(err).process_group(0);
        cmd.kill_on_drop(true);
        // SAFETY: prctl(2) in the forked child before exec; async-signal-safe.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let child = cmd.spawn().map_err(|e| format!("cannot start {program}: {e}"))?;
        let pgid = child.id().map(|p| p as i32).ok_or("the controller exited at once")?;
        RUNNING.lock().push(pgid);
        Ok(Self { child, pgid, log: log.to_path_buf() })
    }

    /// Waits until the process exits on its own; the status as text.
    pub async fn exited(&mut self) -> String {
        match self.child.wait().await {
            Ok(s) => s.to_string(),
            Err(e) => format!("unknown ({e})"),
        }
    }

    /// Stops the process group: SIGTERM, then SIGKILL after `grace`.
    pub async fn stop(mut self, grace: Duration) -> Exit {
        let exit = match self.child.try_wait() {
            Ok(Some(status)) => Exit::Exited(status.to_string()),
            _ => {
                // SAFETY: signals the controller's own process group.
                unsafe {
                    libc::kill(-self.pgid, libc::SIGTERM);
                }
                if tokio::time::timeout(grace, self.child.wait()).await.is_err() {
                    // SAFETY: as above.
                    unsafe {
                        libc::kill(-self.pgid, libc::SIGKILL);
                    }
                    let _ = self.child.wait().await;
                }
                Exit::Stopped
            }
        };
        // Whatever the leader did, nothing of the group may stay behind.
        // SAFETY: as above; ESRCH when the group is already gone is fine.
        unsafe {
            libc::kill(-self.pgid, libc::SIGKILL);
        }
        RUNNING.lock().retain(|p| *p != self.pgid);
        exit
    }

    /// The log file.
    pub fn log(&self) -> &Path {
        &self.log
    }
}

/// The last `n` lines of a log file.
pub fn tail(log: &Path, n: usize) -> Vec<String> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].iter().map(|s| s.to_string()).collect()
}
