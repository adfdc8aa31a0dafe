//! The JSON Schema committed beside the suites (for editors) is the one the types generate.

#[test]
fn committed_suite_schema_is_up_to_date() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../suites/suite.schema.json");
    let committed: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(
        committed,
        kproof::suite::lint::json_schema(),
        "regenerate with: cargo run -p kproof -- schema > suites/suite.schema.json"
    );
}

#[test]
fn the_catalogue_lints_clean() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let suites = kproof::suite::load_suite_dir(&root.join("suites")).unwrap();
    let issues = kproof::suite::lint::lint(&suites, &root.join("fixtures"), &kproof::actors::kind_catalog());
    assert!(issues.is_empty(), "{}", issues.iter().map(|i| i.to_string()).collect::<Vec<_>>().join("\n"));
}
