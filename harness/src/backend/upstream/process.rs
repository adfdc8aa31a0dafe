//! Child processes of a local control plane: each in its own process group, killed with the
//! parent if kproof dies (`PR_SET_PDEATHSIG`), logging to a file, and stopped in reverse start
//! order — SIGTERM, then SIGKILL after a grace period — so nothing is ever left behind. A
//! component can be stopped and started again as it was (its log appended), or restarted.

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
    /// No component of that name runs.
    #[error("no component {0} runs")]
    Unknown(String),
    /// Started again, it did not report ready within two minutes.
    #[error("{0} did not become ready within two minutes of starting again")]
    NotReady(String),
}

/// One running component.
#[derive(Debug)]
pub struct Component {
    /// Its name (`etcd`, `kube-apiserver`...).
    pub name: String,
    /// Where its standard output and error go.
    pub log: PathBuf,
    launch: Launch,
    child: Child,
    /// Stopped on purpose ([`Supervisor::stop_one`]): not an exit to report.
    stopped: bool,
}

/// How a component was started (to start it again).
#[derive(Debug, Clone)]
struct Launch {
    program: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
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
        let launch = Launch { program: program.to_path_buf(), args: args.to_vec(), env: env.to_vec() };
        let child = start(name, &launch, log, false)?;
        self.components.push(Component {
            name: name.to_string(),
            log: log.to_path_buf(),
            launch,
            child,
            stopped: false,
        });
        Ok(self.components.last().expect("just pushed"))
    }

    /// Stops `name` as [`Supervisor::stop_all`] would, keeping how to start it; `true` if it had
    /// to be killed.
    pub fn stop_one(&mut self, name: &str) -> Result<bool, ProcessError> {
        let c = self.find(name)?;
        c.stopped = true;
        Ok(terminate(&mut c.child))
    }

    /// Starts a component stopped with [`Supervisor::stop_one`] again (nothing if it runs).
    pub fn start_again(&mut self, name: &str) -> Result<(), ProcessError> {
        let c = self.find(name)?;
        if c.stopped {
            c.child = start(name, &c.launch, &c.log, true)?;
            c.stopped = false;
        }
        Ok(())
    }

    /// Stops `name` (as [`Supervisor::stop_all`] does) and starts it again with the same
    /// program, arguments and environment, appending to its log; `true` if it had to be killed.
    pub fn restart(&mut self, name: &str) -> Result<bool, ProcessError> {
        let c = self.find(name)?;
        let killed = terminate(&mut c.child);
        c.child = start(name, &c.launch, &c.log, true)?;
        c.stopped = false;
        Ok(killed)
    }

    /// Freezes `name` (SIGSTOP to its process group) or, with `frozen` false, lets it go on
    /// (SIGCONT): it keeps its caches and connections, and what happened meanwhile reaches it as
    /// each watch delivers its backlog.
    pub fn freeze(&mut self, name: &str, frozen: bool) -> Result<(), ProcessError> {
        let c = self.find(name)?;
        signal_group(c.child.id(), if frozen { libc::SIGSTOP } else { libc::SIGCONT });
        Ok(())
    }

    fn find(&mut self, name: &str) -> Result<&mut Component, ProcessError> {
        self.components.iter_mut().find(|c| c.name == name).ok_or_else(|| ProcessError::Unknown(name.to_string()))
    }

    /// The components started so far, in start order.
    pub fn components(&self) -> &[Component] {
        &self.components
    }

    /// `Err` naming the first component that has exited, with the end of its log.
    pub fn check(&mut self) -> Result<(), ProcessError> {
        for c in self.components.iter_mut().filter(|c| !c.stopped) {
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
            if terminate(&mut c.child) {
                killed.push(c.name.clone());
            }
        }
        killed
    }
}

/// Starts one component in its own process group, its output in `log` (appended to when
/// `append`), killed with kproof (`PR_SET_PDEATHSIG`).
fn start(name: &str, launch: &Launch, log: &Path, append: bool) -> Result<Child, ProcessError> {
    let log_error = |source| ProcessError::Log { name: name.to_string(), path: log.to_path_buf(), source };
    let out = File::options().create(true).write(true).append(append).truncate(!append).open(log).map_err(log_error)?;
    let err = out.try_clone().map_err(log_error)?;
    let mut command = Command::new(&launch.program);
    command
        .args(&launch.args)
        .envs(launch.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
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
    command.spawn().map_err(|source| ProcessError::Spawn {
        name: name.to_string(),
        program: launch.program.clone(),
        source,
    })
}

/// Stops a child: SIGTERM to its group (and SIGCONT, should it be paused), SIGKILL after the
/// grace period; `true` if it had to be killed.
fn terminate(child: &mut Child) -> bool {
    if matches!(child.try_wait(), Ok(Some(_))) {
        return false;
    }
    signal_group(child.id(), libc::SIGTERM);
    signal_group(child.id(), libc::SIGCONT);
    let deadline = Instant::now() + GRACE;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => return false,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            _ => {
                signal_group(child.id(), libc::SIGKILL);
                let _ = child.wait();
                return true;
            }
        }
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

    #[test]
    fn a_stopped_component_is_not_an_exit_and_starts_again_logging_on() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("t.log");
        let mut sup = Supervisor::default();
        let script = "echo start; exec sleep 600";
        let first =
            sup.spawn("sleeper", Path::new("/bin/sh"), &["-c".into(), script.into()], &[], &log).expect("spawn").pid();
        std::thread::sleep(Duration::from_millis(100));
        assert!(!sup.stop_one("sleeper").expect("stop"), "sleep exits on SIGTERM");
        assert!(sup.check().is_ok(), "a component stopped on purpose is not reported as exited");
        sup.start_again("sleeper").expect("start");
        let second = sup.components()[0].pid();
        assert_ne!(first, second, "a new process");
        std::thread::sleep(Duration::from_millis(200));
        assert!(!sup.restart("sleeper").expect("restart"));
        assert_ne!(sup.components()[0].pid(), second, "restart starts another");
        std::thread::sleep(Duration::from_millis(200));
        let text = std::fs::read_to_string(&log).expect("log");
        assert_eq!(text.matches("start").count(), 3, "the log goes on: {text}");
        assert!(matches!(sup.stop_one("nobody"), Err(ProcessError::Unknown(_))));
        assert!(sup.stop_all().is_empty());
    }

    #[test]
    fn a_frozen_component_is_silent_until_it_goes_on() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("t.log");
        let mut sup = Supervisor::default();
        // Prints a line every 20 ms: frozen, its log stops growing.
        let script = "while :; do echo tick; sleep 0.02; done";
        let pid =
            sup.spawn("ticker", Path::new("/bin/sh"), &["-c".into(), script.into()], &[], &log).expect("spawn").pid();
        std::thread::sleep(Duration::from_millis(200));
        sup.freeze("ticker", true).expect("freeze");
        std::thread::sleep(Duration::from_millis(100));
        let frozen_at = std::fs::read_to_string(&log).expect("log").len();
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(std::fs::read_to_string(&log).expect("log").len(), frozen_at, "no tick while frozen");
        sup.freeze("ticker", false).expect("thaw");
        std::thread::sleep(Duration::from_millis(200));
        assert!(std::fs::read_to_string(&log).expect("log").len() > frozen_at, "ticks again once thawed");
        assert_eq!(sup.components()[0].pid(), pid, "the same process throughout");
        assert!(sup.stop_all().is_empty());
    }
}
