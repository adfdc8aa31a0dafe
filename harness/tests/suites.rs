//! Every suite row is its own test under `cargo test` (filter by `suite::id`), run on the
//! in-process backend in virtual time. A missing or empty suites folder is an error.

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use kproof::backend::{Backend, RunOptions, skip_reason};
use kproof::report::result::Outcome;
use libtest_mimic::{Arguments, Failed, Trial};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

fn main() -> ExitCode {
    let args = Arguments::from_args();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let suites = match kproof::suite::load_suite_dir(&root.join("suites")) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let backend: Arc<dyn Backend> = Arc::new(kproof::backend::InProcessBackend::reference());
    let opts = Arc::new(RunOptions {
        fixtures_dir: root.join("fixtures"),
        flight_dir: Some(root.join("target").join("kproof").join("flight")),
        ..Default::default()
    });
    let mut trials = Vec::new();
    for suite in suites.into_iter().map(Arc::new) {
        for row in suite.suite.rows.clone() {
            let name = format!("{}::{}", suite.suite.suite, row.id);
            let skip = skip_reason(backend.as_ref(), &row);
            if let Some(why) = &skip {
                println!("{name}: skipped: {why}");
            }
            let (backend, opts, suite) = (backend.clone(), opts.clone(), suite.clone());
            let kind = format!("{:?}", row.kind).to_lowercase();
            trials.push(
                Trial::test(name, move || {
                    let r = backend.run_row(&suite, &row, &opts);
                    match r.outcome {
                        // Every row talks to the server, and the in-process backend counts it.
                        Outcome::Passed if r.requests.values().map(|v| v.values().sum::<u64>()).sum::<u64>() == 0 => {
                            Err(Failed::from("the row passed but no API request was counted"))
                        }
                        Outcome::Passed => Ok(()),
                        Outcome::Skipped => {
                            Err(Failed::from(format!("skipped at run time: {}", r.reason.unwrap_or_default())))
                        }
                        Outcome::Failed => {
                            let record = r
                                .flight_record
                                .map(|p| format!("\nflight record: {}", p.display()))
                                .unwrap_or_default();
                            Err(Failed::from(format!("{}{record}", r.failure.unwrap_or_default())))
                        }
                    }
                })
                .with_kind(kind)
                .with_ignored_flag(skip.is_some()),
            );
        }
    }
    libtest_mimic::run(&args, trials).exit_code()
}
