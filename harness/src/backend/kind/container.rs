//! One container whose whole life testcontainers owns: started from a request, commands run in
//! it with their exit status checked, its logs read, and removed (with its anonymous volumes)
//! when it is dropped — at the end of a run, while a panic unwinds, or, through testcontainers'
//! `watchdog`, on SIGINT/SIGTERM/SIGQUIT. The kind node is one; the lifecycle test runs a
//! busybox image through the same code.

use crate::backend::kind::docker::split_image;
use crate::backend::kind::error::one_line;
use std::time::Duration;
use testcontainers::core::{CmdWaitFor, ExecCommand};
use testcontainers::runners::AsyncRunner;
use testcontainers::{ContainerAsync, ContainerRequest, GenericImage, ImageExt};

/// The label every container kproof starts carries, with the process id as its value (to find
/// what a killed run left behind: `docker ps -a --filter label=kproof.dev/run`).
pub const RUN_LABEL: &str = "kproof.dev/run";

/// A request for `image` (a full reference; a digest is kept) named `name`, labelled as this
/// run's.
pub fn request(image: &str, name: &str) -> ContainerRequest<GenericImage> {
    let (repository, tag) = split_image(image);
    labelled(GenericImage::new(repository, tag), name)
}

/// `image` as a request named `name`, labelled as this run's.
pub fn labelled(image: GenericImage, name: &str) -> ContainerRequest<GenericImage> {
    image.with_container_name(name).with_label(RUN_LABEL, std::process::id().to_string())
}

/// The output of a command run in the container.
#[derive(Debug, Clone, Default)]
pub struct Output {
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
}

/// A running container; dropping it removes it (unless [`ManagedContainer::keep`] was called).
/// Drop needs the tokio runtime that started it to still exist (testcontainers removes the
/// container with an async call, blocking in place on a multi-thread runtime).
pub struct ManagedContainer {
    inner: Option<ContainerAsync<GenericImage>>,
    name: String,
    handle: tokio::runtime::Handle,
}

impl ManagedContainer {
    /// Starts `request` (its image must already be in the daemon: see
    /// [`super::docker::ensure_image`]); `name` is its container name, for messages.
    pub async fn start(request: ContainerRequest<GenericImage>, name: &str) -> Result<Self, String> {
        let inner = request.start().await.map_err(|e| one_line(&e.to_string(), 300))?;
        Ok(Self { inner: Some(inner), name: name.to_string(), handle: tokio::runtime::Handle::current() })
    }

    /// The container's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The container's id.
    pub fn id(&self) -> &str {
        self.inner.as_ref().map(|c| c.id()).unwrap_or_default()
    }

    fn container(&self) -> Result<&ContainerAsync<GenericImage>, String> {
        self.inner.as_ref().ok_or_else(|| format!("container {} was removed", self.name))
    }

    /// Runs `script` with `sh -c` and waits for it to end; `Err` when it exits non-zero, with
    /// the exit code and the last lines of its output.
    pub async fn sh(&self, script: &str) -> Result<Output, String> {
        let container = self.container()?;
        let command = ExecCommand::new(["sh", "-c", script]).with_cmd_ready_condition(CmdWaitFor::exit());
        let mut result = container.exec(command).await.map_err(|e| one_line(&e.to_string(), 300))?;
        let stdout = String::from_utf8_lossy(&result.stdout_to_vec().await.map_err(|e| e.to_string())?).into_owned();
        let stderr = String::from_utf8_lossy(&result.stderr_to_vec().await.map_err(|e| e.to_string())?).into_owned();
        match result.exit_code().await.map_err(|e| e.to_string())? {
            Some(0) => Ok(Output { stdout, stderr }),
            code => {
                let code = code.map(|c| c.to_string()).unwrap_or_else(|| "unknown".into());
                Err(format!("exit {code}: {}", one_line(&format!("{stdout}\n{stderr}"), 400)))
            }
        }
    }

    /// Runs `script` until it succeeds, every `every`, for at most `timeout`; `Err` with the
    /// last failure.
    pub async fn sh_until(&self, script: &str, timeout: Duration, every: Duration) -> Result<Output, String> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            match self.sh(script).await {
                Ok(out) => return Ok(out),
                Err(e) if tokio::time::Instant::now() >= deadline => {
                    return Err(format!("not done within {}s: {e}", timeout.as_secs()));
                }
                Err(_) => tokio::time::sleep(every).await,
            }
        }
    }

    /// Reads a file out of the container.
    pub async fn read_file(&self, path: &str) -> Result<Vec<u8>, String> {
        self.container()?.copy_file_from(path, Vec::new()).await.map_err(|e| format!("reading {path}: {e}"))
    }

    /// The host port Docker published for `port`/tcp.
    pub async fn host_port(&self, port: u16) -> Result<u16, String> {
        use testcontainers::core::IntoContainerPort;
        self.container()?.get_host_port_ipv4(port.tcp()).await.map_err(|e| e.to_string())
    }

    /// The last `lines` lines of the container's output (stdout and stderr).
    pub async fn logs(&self, lines: usize) -> String {
        let Ok(container) = self.container() else { return String::new() };
        let out = container.stdout_to_vec().await.unwrap_or_default();
        let err = container.stderr_to_vec().await.unwrap_or_default();
        let text = format!("{}{}", String::from_utf8_lossy(&out), String::from_utf8_lossy(&err));
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// Removes the container and its anonymous volumes now.
    pub async fn remove(mut self) -> Result<(), String> {
        match self.inner.take() {
            Some(c) => c.rm().await.map_err(|e| e.to_string()),
            None => Ok(()),
        }
    }

    /// Leaves the container running after this process ends (`--keep-cluster`).
    pub fn keep(mut self) -> String {
        let id = self.id().to_string();
        // Forgetting the handle is the one way testcontainers offers to skip its removal.
        std::mem::forget(self.inner.take());
        id
    }
}

impl Drop for ManagedContainer {
    fn drop(&mut self) {
        if let Some(container) = self.inner.take() {
            // testcontainers' own Drop needs a runtime context; give it the one that started it.
            let _guard = self.handle.enter();
            drop(container);
        }
    }
}
