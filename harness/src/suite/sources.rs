//! The rule for a row's `source:`: it must name something a reader can open.
//!
//! A source is free text, but it must hold at least one `https://` URL (an upstream file, a pull
//! request or issue, a documentation page). A GitHub file or folder link (`/blob/REF/…`,
//! `/tree/REF/…`) must be pinned to a tag or a commit, because a link to a branch shows a
//! different file tomorrow. A source must not point at notes that live outside the repository
//! (the research notes and seed files the catalogue was first written from).

/// Names of files outside the repository that a source must not cite instead of upstream.
const OUTSIDE_FILES: [&str; 6] = ["kuberay.md", "kueue.md", "dra.md", "apiserver.md", "../shared", "seeds/"];

/// Checks one `source:` value; the error says what is missing or wrong, for lint to report.
pub fn check_source(source: &str) -> Result<(), String> {
    let urls = urls(source);
    if urls.is_empty() {
        return Err("`source` has no https:// URL: cite an upstream file pinned to a tag or commit, a PR or issue URL, or a documentation URL".into());
    }
    for url in &urls {
        if let Some(reference) = github_file_ref(url)
            && !is_pinned(reference)
        {
            return Err(format!(
                "`source` links {url} at `{reference}`, which moves: pin the link to a tag or a commit"
            ));
        }
    }
    if let Some(name) = OUTSIDE_FILES.iter().find(|name| source.contains(*name)) {
        return Err(format!(
            "`source` cites `{name}`, which is not in the repository: cite the upstream source instead"
        ));
    }
    Ok(())
}

/// The `https://` URLs in `text`, without the punctuation that ends a sentence or a parenthesis.
fn urls(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("https://") {
        let tail = &rest[start..];
        let end = tail.find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>')).unwrap_or(tail.len());
        let url = tail[..end].trim_end_matches(['.', ',', ';', ':', ')']);
        if url.len() > "https://".len() {
            out.push(url);
        }
        rest = &tail[end..];
    }
    out
}

/// The ref of a GitHub `blob` or `tree` link (`v1.7.0` in
/// `https://github.com/o/r/blob/v1.7.0/path`), or `None` for any other URL.
fn github_file_ref(url: &str) -> Option<&str> {
    let path = url.strip_prefix("https://github.com/")?;
    let mut parts = path.split('/');
    let (_owner, _repo, kind) = (parts.next()?, parts.next()?, parts.next()?);
    if kind != "blob" && kind != "tree" {
        return None;
    }
    let reference = parts.next().unwrap_or("");
    Some(reference.split(['#', '?']).next().unwrap_or(""))
}

/// Whether a git ref names one fixed tree: a commit (7 to 40 hex digits) or a release tag
/// (`v1.7.0`, `1.2.3`, `kubernetes-1.37.2`). Branch names (`main`, `master`, `release-1.37`) and
/// `HEAD` are not.
fn is_pinned(reference: &str) -> bool {
    let is_commit = (7..=40).contains(&reference.len()) && reference.chars().all(|c| c.is_ascii_hexdigit());
    let version = reference.strip_prefix("kubernetes-").or_else(|| reference.strip_prefix('v')).unwrap_or(reference);
    let is_tag = version.starts_with(|c: char| c.is_ascii_digit())
        && version.contains('.')
        && version.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+'));
    is_commit || is_tag
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::certify::contract::Contract;
    use rstest::rstest;
    use std::path::{Path, PathBuf};

    #[rstest]
    #[case::pinned_tag(
        "https://github.com/ray-project/kuberay/blob/v1.7.0/ray-operator/controllers/ray/raycluster_controller.go#L931 reconcilePods"
    )]
    #[case::pinned_commit(
        "https://github.com/kubernetes-sigs/kueue/blob/1828096a4b221716e89ca01dde39cf08df20587f/pkg/controller/jobs/rayservice/rayservice_controller.go PodSets"
    )]
    #[case::short_commit(
        "https://github.com/ray-project/enhancements/blob/4fc6e3c/reps/2024-12-4-ray-service-incr-upgrade.md"
    )]
    #[case::tree_at_tag("https://github.com/kubernetes/kubernetes/tree/v1.37.2/pkg/controller/resourceclaim")]
    #[case::kubernetes_tag("https://github.com/kubernetes/api/blob/kubernetes-1.36.0/resource/v1/types.go")]
    #[case::pull_request("KubeRay https://github.com/ray-project/kuberay/pull/4185 (upgradeStrategy)")]
    #[case::issue(
        "https://github.com/kubernetes/kubernetes/issues/136406, fixed by https://github.com/kubernetes/kubernetes/pull/136450"
    )]
    #[case::docs("https://kubernetes.io/docs/concepts/overview/working-with-objects/finalizers/")]
    #[case::url_in_parentheses("KEP-5729 (https://github.com/kubernetes/enhancements/issues/5729); obligation C6")]
    #[case::several(
        "https://docs.ray.io/en/latest/cluster/kubernetes/user-guides/rayservice.html; https://github.com/ray-project/kuberay/blob/v1.7.0/ray-operator/controllers/ray/utils/validation.go#L717-L740"
    )]
    fn openable_sources_pass(#[case] source: &str) {
        assert_eq!(check_source(source), Ok(()));
    }

    #[rstest]
    #[case::empty("", "no https:// URL")]
    #[case::path_only("rc-ctrl reconcilePods; KubeRay unit test TestShouldDeletePod", "no https:// URL")]
    #[case::plain_http("http://example.com/docs", "no https:// URL")]
    #[case::scheme_only("see https:// later", "no https:// URL")]
    #[case::main_branch("https://github.com/ray-project/kuberay/blob/main/ray-operator/go.mod", "at `main`")]
    #[case::master_branch("https://github.com/kubernetes/enhancements/tree/master/keps/sig-scheduling", "at `master`")]
    #[case::head("https://github.com/kubernetes/kubernetes/blob/HEAD/go.mod", "at `HEAD`")]
    #[case::release_branch("https://github.com/kubernetes/kubernetes/blob/release-1.37/go.mod", "at `release-1.37`")]
    #[case::missing_ref("https://github.com/kubernetes/kubernetes/blob/", "at ``")]
    #[case::second_link_unpinned(
        "https://github.com/kubernetes/kubernetes/pull/1; https://github.com/o/r/blob/master/x.go",
        "at `master`"
    )]
    #[case::research_note("https://kubernetes.io/docs/; kuberay.md §3.2", "cites `kuberay.md`")]
    #[case::kueue_note("https://github.com/kubernetes-sigs/kueue/pull/11264; kueue.md §6.1", "cites `kueue.md`")]
    #[case::dra_note("research dra.md §6 C1; https://github.com/kubernetes/enhancements/issues/5194", "cites `dra.md`")]
    #[case::apiserver_note("apiserver.md §2; https://kubernetes.io/docs/", "cites `apiserver.md`")]
    #[case::shared_folder("https://kubernetes.io/docs/ and ../shared/DESIGN.md", "cites `../shared`")]
    #[case::seed_file("https://kubernetes.io/docs/; seeds/001_745e518b82b9a57a.txt", "cites `seeds/`")]
    fn unopenable_sources_fail(#[case] source: &str, #[case] expected: &str) {
        let error = check_source(source).expect_err("the source must be refused");
        assert!(error.contains(expected), "{error:?} does not contain {expected:?}");
    }

    #[rstest]
    #[case("https://a.example/x.", vec!["https://a.example/x"])]
    #[case("(https://a.example/x), https://b.example/y;", vec!["https://a.example/x", "https://b.example/y"])]
    #[case("'https://a.example/x' https://b.example/#L1-L2", vec!["https://a.example/x", "https://b.example/#L1-L2"])]
    fn urls_lose_trailing_punctuation(#[case] text: &str, #[case] expected: Vec<&str>) {
        assert_eq!(urls(text), expected);
    }

    fn suites_dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("suites")
    }

    #[test]
    fn every_catalogue_row_cites_an_openable_source() {
        let mut failures = Vec::new();
        let suites = crate::suite::load_suite_dir(&suites_dir()).expect("the catalogue loads");
        for loaded in &suites {
            for (index, row) in loaded.suite.rows.iter().enumerate() {
                if let Err(e) = check_source(&row.source) {
                    failures.push(format!("{}: row {}: {e}", loaded.location(index, None), row.id));
                }
            }
        }
        assert!(suites.iter().map(|s| s.suite.rows.len()).sum::<usize>() > 100, "the whole catalogue was read");
        assert!(failures.is_empty(), "{} rows cite nothing openable:\n{}", failures.len(), failures.join("\n"));
    }

    #[test]
    fn every_certification_obligation_and_scenario_cites_an_openable_source() {
        let dir = suites_dir().join("certify");
        let mut failures = Vec::new();
        let mut files = 0;
        for entry in std::fs::read_dir(&dir).expect("suites/certify exists") {
            let path = entry.expect("a directory entry").path();
            if path.extension().and_then(|e| e.to_str()) != Some("yaml") {
                continue;
            }
            files += 1;
            let text = std::fs::read_to_string(&path).expect("the contract reads");
            let contract = Contract::parse(&text, &path.display().to_string()).expect("the contract parses");
            let obligations = contract.obligations.iter().map(|o| (format!("obligation {}", o.id), &o.source));
            let scenarios = contract.scenarios.iter().map(|s| (format!("scenario {}", s.id), &s.source));
            for (what, source) in obligations.chain(scenarios) {
                if let Err(e) = check_source(source) {
                    failures.push(format!("{}: {what}: {e}", path.display()));
                }
            }
        }
        assert!(files > 0, "no contract under {}", dir.display());
        assert!(failures.is_empty(), "{} entries cite nothing openable:\n{}", failures.len(), failures.join("\n"));
    }
}
