//! Why the kind backend could not start. Every message is one line that names what is missing
//! (the CLI prints it and exits 2).

/// Why the kind cluster is not there.
#[derive(Debug, thiserror::Error)]
pub enum KindError {
    /// No Docker daemon answers.
    #[error(
        "no Docker daemon reachable at {host} ({message}): the kind backend runs its node in Docker; start dockerd or set DOCKER_HOST"
    )]
    NoDocker {
        /// Where it was looked for (`DOCKER_HOST`, or the default socket).
        host: String,
        /// What the connection said.
        message: String,
    },
    /// An image is neither in the daemon nor pullable.
    #[error("cannot get image {image}: {message}")]
    Image {
        /// The image reference.
        image: String,
        /// Why (the pull's error).
        message: String,
    },
    /// A file of the installation plan is not in the manifests directory.
    #[error(
        "{path} is missing: write the kind backend's release files with `kproof kind fetch-script | bash -s -- {dir}` where GitHub is reachable"
    )]
    Manifests {
        /// The missing file.
        path: String,
        /// The manifests directory.
        dir: String,
    },
    /// The node container did not start or its bootstrap failed.
    #[error("the kind node {node} failed at {step}: {message}")]
    Node {
        /// The node container's name.
        node: String,
        /// The bootstrap step.
        step: String,
        /// What failed (last lines of the command's output).
        message: String,
    },
    /// A step of the installation plan failed.
    #[error("installing {component} failed: {message}")]
    Install {
        /// The component.
        component: String,
        /// What failed.
        message: String,
    },
    /// A local resource (runtime, temporary directory) could not be made.
    #[error("{what}: {source}")]
    Io {
        /// What was being made.
        what: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

/// `text` on one line: line breaks become ` / `, runs of spaces one, at most `max` characters
/// (the last ones: errors put the cause at the end).
pub fn one_line(text: &str, max: usize) -> String {
    let joined: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let line = joined.join(" / ");
    let count = line.chars().count();
    if count <= max { line } else { format!("...{}", line.chars().skip(count - max).collect::<String>()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_one_line_and_keep_their_end() {
        assert_eq!(one_line("a\n\n  b  \nc", 100), "a / b / c");
        assert_eq!(one_line("0123456789", 4), "...6789");
        let e = KindError::NoDocker { host: "unix:///var/run/docker.sock".into(), message: one_line("x\ny", 100) };
        assert!(!e.to_string().contains('\n'));
    }
}
