//! The Python `kubernetes` client from PyPI against the `fake-apiserver` binary: create without
//! a Content-Type, watch resumed from a resourceVersion, strategic merge patch on a Deployment,
//! merge patch on a custom object (cases in `tests/python/client_cases.py`). Skipped, with the
//! reason printed, where `python3` or `import kubernetes` is unavailable (`.ci/run` installs it).

use std::path::Path;
use std::process::Command;

fn python_with_kubernetes() -> Result<(), String> {
    let out = Command::new("python3")
        .args(["-c", "import kubernetes; print(kubernetes.__version__)"])
        .output()
        .map_err(|e| format!("python3 cannot run: {e}"))?;
    if out.status.success() {
        println!("python kubernetes client {}", String::from_utf8_lossy(&out.stdout).trim());
        Ok(())
    } else {
        Err(format!("`import kubernetes` fails: {}", String::from_utf8_lossy(&out.stderr).trim()))
    }
}

#[test]
fn python_client_cases() {
    if let Err(why) = python_with_kubernetes() {
        println!("SKIPPED: {why}");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let server = crate::process::start_server(dir.path()).expect("the server starts");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/client_cases.py");
    let out = Command::new("python3")
        .arg(&script)
        .env("KUBECONFIG", &server.kubeconfig)
        .output()
        .expect("run the python cases");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    for case in [
        "create_without_content_type",
        "watch_resumes_from_a_resource_version",
        "strategic_merge_patch_on_a_deployment",
        "merge_patch_on_a_custom_object",
    ] {
        assert!(
            stdout.lines().any(|l| l.starts_with(&format!("PASS {case}")) || l.starts_with(&format!("MISSING {case}"))),
            "python case {case} did not pass:\n{stdout}"
        );
    }
    assert!(out.status.success(), "python cases failed:\n{stdout}");
}
