//! The versions of the upstream products kproof runs, read from the one place they are pinned:
//! the Go modules under `upstream/` (the upstream backend builds from them; the kind backend
//! installs the release manifests and images of the same versions).

/// `upstream/kuberay/go.mod`: the KubeRay release the upstream backend wants.
const KUBERAY_GO_MOD: &str = include_str!("../../../upstream/kuberay/go.mod");
/// `upstream/kueue/go.mod`.
const KUEUE_GO_MOD: &str = include_str!("../../../upstream/kueue/go.mod");
/// `upstream/gateway-api/go.mod`.
const GATEWAY_API_GO_MOD: &str = include_str!("../../../upstream/gateway-api/go.mod");
/// `upstream/kubernetes/go.mod`.
const KUBERNETES_GO_MOD: &str = include_str!("../../../upstream/kubernetes/go.mod");

/// The version `go_mod` requires of `module` (`v1.7.0`), direct or `// indirect`.
pub fn required_version(go_mod: &str, module: &str) -> Option<String> {
    go_mod.lines().find_map(|line| {
        let line = line.trim().trim_start_matches("require").trim();
        let mut words = line.split_whitespace();
        (words.next() == Some(module)).then(|| words.next().map(str::to_string)).flatten()
    })
}

fn pinned(go_mod: &str, module: &str) -> String {
    // The go.mod files are compiled in: a missing pin is a broken checkout, caught by the tests.
    required_version(go_mod, module).unwrap_or_else(|| format!("(no {module} in upstream/)"))
}

/// The KubeRay release (`v1.7.0`).
pub fn kuberay() -> String {
    pinned(KUBERAY_GO_MOD, "github.com/ray-project/kuberay/ray-operator")
}

/// The Kueue release (`v0.19.2`).
pub fn kueue() -> String {
    pinned(KUEUE_GO_MOD, "sigs.k8s.io/kueue")
}

/// The Gateway API release (`v1.6.1`).
pub fn gateway_api() -> String {
    pinned(GATEWAY_API_GO_MOD, "sigs.k8s.io/gateway-api")
}

/// The Kubernetes release (`v1.37.2`).
pub fn kubernetes() -> String {
    pinned(KUBERNETES_GO_MOD, "k8s.io/kubernetes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_require_line_block_entry_and_indirect_entry_are_read() {
        let go_mod = "module x\n\nrequire sigs.k8s.io/gateway-api v1.6.1\n\nrequire (\n\tgithub.com/a/b v0.1.0 // indirect\n\tsigs.k8s.io/kueue v0.19.2 // indirect\n)\n";
        assert_eq!(required_version(go_mod, "sigs.k8s.io/gateway-api").as_deref(), Some("v1.6.1"));
        assert_eq!(required_version(go_mod, "sigs.k8s.io/kueue").as_deref(), Some("v0.19.2"));
        assert_eq!(required_version(go_mod, "sigs.k8s.io/kueue/sub"), None);
        assert_eq!(required_version(go_mod, "github.com/a"), None);
    }

    #[test]
    fn every_pin_is_found_in_upstream() {
        for (name, version) in
            [("kuberay", kuberay()), ("kueue", kueue()), ("gateway-api", gateway_api()), ("kubernetes", kubernetes())]
        {
            assert!(
                version.starts_with('v') && version[1..].split('.').count() == 3,
                "{name}: {version} is not a release version"
            );
        }
    }
}
