//! The testcontainers lifecycle the kind backend's node goes through, against the local Docker
//! daemon, with an image made here: a busybox root filesystem imported as an image (what
//! `docker import` does), so no registry is needed. The container is started, commands run in
//! it (output, exit status), a file is read out of it, its log is read, and it is removed when
//! dropped — also when the thread holding it panics. A missing image is named in the error.
//! Prints SKIPPED with the reason when there is no usable Docker daemon or no busybox. Built
//! with the `kind` feature only.

use kproof::backend::kind::KindError;
use kproof::backend::kind::container::{ManagedContainer, RUN_LABEL, request};
use kproof::backend::kind::docker;
use std::path::{Path, PathBuf};
use std::time::Duration;
use testcontainers::ImageExt;
use testcontainers::bollard::{self, Docker};

const IMAGE: &str = "kproof-lifecycle-busybox:test";

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime")
}

fn busybox() -> Option<PathBuf> {
    ["/bin/busybox", "/usr/bin/busybox", "/usr/local/bin/busybox"].iter().map(PathBuf::from).find(|p| p.is_file())
}

/// A root filesystem of one statically linked busybox, as a tar archive.
fn rootfs_tar(busybox: &Path, dir: &Path) -> Vec<u8> {
    let root = dir.join("rootfs");
    std::fs::create_dir_all(root.join("bin")).expect("bin");
    std::fs::create_dir_all(root.join("etc")).expect("etc");
    std::fs::copy(busybox, root.join("bin/busybox")).expect("copy busybox");
    for applet in ["sh", "sleep", "echo", "cat"] {
        std::os::unix::fs::symlink("busybox", root.join("bin").join(applet)).expect("applet link");
    }
    let tar = dir.join("rootfs.tar");
    let status = std::process::Command::new("tar")
        .arg("-C")
        .arg(&root)
        .arg("-cf")
        .arg(&tar)
        .arg(".")
        .status()
        .expect("tar runs");
    assert!(status.success(), "tar failed");
    std::fs::read(&tar).expect("read tar")
}

async fn import(docker: &Docker, tar: Vec<u8>) {
    use futures::StreamExt;
    let (repo, tag) = IMAGE.split_once(':').expect("tagged");
    let options = bollard::query_parameters::CreateImageOptionsBuilder::new().from_src("-").repo(repo).tag(tag).build();
    let mut stream = docker.create_image(Some(options), Some(bollard::body_full(tar.into())), None);
    while let Some(progress) = stream.next().await {
        progress.expect("import the busybox root filesystem");
    }
}

async fn exists(docker: &Docker, name: &str) -> bool {
    docker.inspect_container(name, None::<bollard::query_parameters::InspectContainerOptions>).await.is_ok()
}

#[test]
fn a_container_is_started_used_and_removed_by_testcontainers() {
    let Some(busybox) = busybox() else {
        println!("SKIPPED kind lifecycle: no busybox binary (Debian: apt-get install busybox-static)");
        return;
    };
    let rt = runtime();
    let docker = match rt.block_on(docker::connect()) {
        Ok((docker, version)) => {
            println!("Docker {version}");
            docker
        }
        Err(e) => {
            println!("SKIPPED kind lifecycle: {e}");
            return;
        }
    };
    let dir = tempfile::tempdir().expect("tempdir");
    rt.block_on(import(&docker, rootfs_tar(&busybox, dir.path())));
    let name = format!("kproof-lifecycle-{}", std::process::id());

    rt.block_on(async {
        let req = request(IMAGE, &name).with_cmd(["sh", "-c", "echo started; exec sleep 3600"]);
        let container = ManagedContainer::start(req, &name).await.expect("the container starts");
        assert!(exists(&docker, &name).await);
        let inspected = docker
            .inspect_container(&name, None::<bollard::query_parameters::InspectContainerOptions>)
            .await
            .expect("inspect");
        let labels = inspected.config.and_then(|c| c.labels).unwrap_or_default();
        assert_eq!(labels.get(RUN_LABEL), Some(&std::process::id().to_string()));

        let out = container.sh("echo out; echo err >&2").await.expect("a command runs");
        assert_eq!((out.stdout.as_str(), out.stderr.as_str()), ("out\n", "err\n"));
        let failed = container.sh("echo why; exit 3").await.expect_err("exit 3 is a failure");
        assert!(failed.starts_with("exit 3:") && failed.contains("why"), "{failed}");

        container.sh("echo kept > /etc/kproof").await.expect("write a file");
        assert_eq!(container.read_file("/etc/kproof").await.expect("read it back"), b"kept\n");

        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while !container.logs(10).await.contains("started") {
            assert!(tokio::time::Instant::now() < deadline, "the log never showed the start");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        drop(container);
        assert!(!exists(&docker, &name).await, "dropping the container removes it");
    });

    // A panic while the container is held: unwinding drops it, and it is removed.
    let panicking = format!("{name}-panic");
    let handle = {
        let panicking = panicking.clone();
        std::thread::spawn(move || {
            let rt = runtime();
            rt.block_on(async {
                let held = ManagedContainer::start(request(IMAGE, &panicking).with_cmd(["sleep", "3600"]), &panicking)
                    .await
                    .expect("the container starts");
                held.sh("true").await.expect("it runs");
                panic!("deliberate panic while {} is held", held.name());
            })
        })
    };
    assert!(handle.join().is_err(), "the thread panicked");
    rt.block_on(async {
        assert!(!exists(&docker, &panicking).await, "the panic's unwinding removed the container");

        // An image the daemon lacks and cannot pull is named.
        match docker::ensure_image(&docker, "kproof-no-such-image:never").await {
            Err(KindError::Image { image, message }) => {
                assert_eq!(image, "kproof-no-such-image:never");
                assert!(!message.contains('\n'), "{message}");
            }
            other => panic!("expected an image error, got {other:?}"),
        }
        let _ = docker.remove_image(IMAGE, None::<bollard::query_parameters::RemoveImageOptions>, None).await;
    });
}
