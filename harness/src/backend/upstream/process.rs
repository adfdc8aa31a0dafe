//! Child processes of a local control plane: each in its own process group, killed with the
//! parent if kproof dies (`PR_SET_PDEATHSIG`), logging to a file, and stopped in reverse start
//! order — SIGTERM, then SIGKILL after a grace period — so nothing is ever left behind.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Why a component could not be started, or stopped running.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    /// The program could not be started.
    #[error("starting {name} ({}): {source}", program.display())]
    Spawn {
        /// The component.
        name: String,
        /// The program.
        program: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Its log file could not be created.
    #[error("creating the log of {name} ({}): {source}", path.display())]
    Log {
        /// The component.
        name: String,
        /// The log file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// It exited while it should be running.
    #[error("{name} exited ({status}); the end of its log ({}):\n{tail}", log.display())]
    Exited {
        /// The component.
        name: String,
        /// How it ended.
        status: ExitStatus,
        /// Its log file.
        log: PathBuf,
        /// The last lines of the log.
        tail: String,
    },
}

/// One running component.
#[derive(Debug)]
pub struct Component {
    /// Its name (`etcd`, `kube-apiserver`...).
    pub name: String,
    /// Where its standard output and error go.
    pub log: PathBuf,
    child: Child,
}

impl Component {
    /// The process id (also its process group id).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

/// Every component started so far, stopped together.
#[derive(Debug, Default)]
pub struct Supervisor {
    components: Vec<Component>,
}

/// How long a component may take to exit after SIGTERM before it gets SIGKILL.
const GRACE: Duration = Duration::from_secs(10);

impl Supervisor {
    /// Starts `program` with `args` and `env`, in its own process group, its output in `log`.
    pub fn spawn(
        &mut self,
        name: &str,
        program: &Path,
        args: &[String],
        env: &[(String, String)],
        log: &Path,
    ) -> Result<&Component, ProcessError> {
        let out = File::create(log).map_err(|source| ProcessError::Log {
            name: name.to_string(),
            path: log.to_path_buf(),
            source,
        })?;
        let err = out.try_clone().map_err(|source| ProcessError::Log {
            name: name.to_string(),
            path: log.to_path_buf(),
            source,
        })?;
        let mut command = Command::new(program);
        command.args(args).envs(env.iter().map(|(k, v)| (k, v))).stdin(Stdio::null()).stdout(out).stderr(err);
        command.process_group(0);
        // SAFETY: prctl is async-signal-safe and touches nothing of the parent's state; it asks
        // the kernel to kill the child when the thread that forked it (kproof) dies.
        unsafe {
            command.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn().map_err(|source| ProcessError::Spawn {
            name: name.to_string(),
            program: program.to_path_buf(),
            source,
        })?;
        self.components.push(Component { name: name.to_string(), log: log.to_path_buf(), child });
        Ok(self.components.last().expect("just pushed"))
    }

    /// The components started so far, in start order.
    pub fn components(&self) -> &[Component] {
        &self.components
    }

    /// `Err` naming the first component that has exited, with the end of its log.
    pub fn check(&mut self) -> Result<(), ProcessError> {
        for c in &mut self.components {
            if let Ok(Some(status)) = c.child.try_wait() {
                return Err(ProcessError::Exited {
                    name: c.name.clone(),
                    status,
                    log: c.log.clone(),
                    tail: log_tail(&c.log, 30),
                });
            }
        }
        Ok(())
    }

    /// Stops every component, newest first: SIGTERM to its process group, SIGKILL after the
    /// grace period. Returns the components that had to be killed.
    pub fn stop_all(&mut self) -> Vec<String> {
        let mut killed = Vec::new();
        while let Some(mut c) = self.components.pop() {
            if matches!(c.child.try_wait(), Ok(Some(_))) {
                continue;
            }
            signal_group(c.child.id(), libc::SIGTERM);
            let deadline = Instant::now() + GRACE;
            loop {
                match c.child.try_wait() {
                    Ok(Some(_)) => break,
                    Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
                    _ => {
                        signal_group(c.child.id(), libc::SIGKILL);
                        let _ = c.child.wait();
                        killed.push(c.name.clone());
                        break;
                    }
                }
            }
        }
        killed
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        self.stop_all();
    }
}

/// Sends `signal` to the process group `pid` leads (every component is its own group leader).
fn signal_group(pid: u32, signal: libc::c_int) {
    if let Ok(pid) = libc::pid_t::try_from(pid) {
        // SAFETY: kill has no memory effects; a stale group id at worst fails with ESRCH.
        unsafe {
            libc::kill(-pid, signal);
        }
    }
}

/// The last `lines` lines of a log file (reads at most its last 64 KiB).
pub fn log_tail(path: &Path, lines: usize) -> String {
    let Ok(mut f) = File::open(path) else { return String::from("(no log)") };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(64 * 1024)));
    let mut text = String::new();
    let _ = f.read_to_string(&mut text);
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn children_are_stopped_and_a_dead_one_is_reported_with_its_log() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut sup = Supervisor::default();
        let sh = Path::new("/bin/sh");
        let sleeper = sup
            .spawn("sleeper", sh, &["-c".into(), "echo started; exec sleep 600".into()], &[], &dir.path().join("s.log"))
            .expect("spawn")
            .pid();
        sup.spawn("quitter", sh, &["-c".into(), "echo bye; exit 3".into()], &[], &dir.path().join("q.log"))
            .expect("spawn");
        let deadline = Instant::now() + Duration::from_secs(10);
        let err = loop {
            match sup.check() {
                Err(e) => break e,
                Ok(()) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
                Ok(()) => panic!("the quitter never exited"),
            }
        };
        let shown = err.to_string();
        assert!(shown.starts_with("quitter exited (exit status: 3)"), "{shown}");
        assert!(shown.ends_with("bye"), "{shown}");
        assert!(sup.stop_all().is_empty(), "sleep exits on SIGTERM");
        // SAFETY: probing with signal 0 only checks that the process exists.
        let alive = unsafe { libc::kill(sleeper as libc::pid_t, 0) } == 0;
        assert!(!alive, "the sleeper is gone");
    }
}
