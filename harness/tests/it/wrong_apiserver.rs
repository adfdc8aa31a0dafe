//! Proof that the `apiserver` table catches regressions of the API machinery: the suite runs
//! against the fake API server built with one deliberate defect at a time (cargo feature
//! `defects` of `fake-apiserver`, enabled through this crate's own `defects` feature, which its
//! tests turn on), and the rows that guard against that defect must fail while rows that do not
//! depend on it still pass. (The correct server passing every row is the `suites` test.)

use fake_apiserver::ServerDefect;
use kproof::backend::InProcessBackend;

use crate::common;

const FINALIZERS: &str = "finalizers-hold-deletion";
const GENERATION: &str = "generation-follows-spec-not-status";
const STATUS_SPLIT: &str = "status-subresource-ignores-other-fields";
const DEFAULTS: &str = "crd-defaults-and-pruning";
const GENERATED_NAMES: &str = "generated-names-can-be-bound";
const NAMESPACE_DELETION: &str = "namespace-deletion-waits-for-content";
const ALREADY_EXISTS: &str = "create-of-an-existing-name-is-already-exists";
const CONFLICT: &str = "stale-resource-version-is-a-conflict";
const SCHEMA_FIELD: &str = "crd-schema-violation-names-the-field";
const RATCHETING: &str = "crd-validation-ratchets-unchanged-fields";
const TERMINATING: &str = "terminating-namespace-refuses-new-content";
const RESERVED_FOR: &str = "reserved-for-holds-at-most-256-consumers";

/// Per defect: the rows that must catch it, and two rows that do not depend on it.
const CASES: [(ServerDefect, &[&str], &[&str]); 12] = [
    (
        ServerDefect::FinalizersIgnoredOnDelete,
        &[FINALIZERS, NAMESPACE_DELETION, TERMINATING],
        &[ALREADY_EXISTS, CONFLICT],
    ),
    (ServerDefect::StatusWriteBumpsGeneration, &[GENERATION], &[DEFAULTS, ALREADY_EXISTS]),
    (ServerDefect::MainWriteAppliesStatus, &[STATUS_SPLIT], &[GENERATION, DEFAULTS]),
    (ServerDefect::CrdSchemaNotCanonicalized, &[DEFAULTS], &[SCHEMA_FIELD, ALREADY_EXISTS]),
    (ServerDefect::GenerateNameWithoutSuffix, &[GENERATED_NAMES], &[ALREADY_EXISTS, CONFLICT]),
    (ServerDefect::NamespaceRemovedWithContentLeft, &[NAMESPACE_DELETION, TERMINATING], &[FINALIZERS, ALREADY_EXISTS]),
    (ServerDefect::CreateReplacesExisting, &[ALREADY_EXISTS], &[FINALIZERS, CONFLICT]),
    (ServerDefect::StaleResourceVersionAccepted, &[CONFLICT], &[FINALIZERS, ALREADY_EXISTS]),
    (ServerDefect::SchemaCausesWithoutField, &[SCHEMA_FIELD, RATCHETING], &[DEFAULTS, ALREADY_EXISTS]),
    (ServerDefect::NoValidationRatcheting, &[RATCHETING], &[SCHEMA_FIELD, DEFAULTS]),
    (ServerDefect::TerminatingNamespaceAcceptsContent, &[TERMINATING], &[NAMESPACE_DELETION, ALREADY_EXISTS]),
    (ServerDefect::ReservedForUncapped, &[RESERVED_FOR], &[ALREADY_EXISTS, CONFLICT]),
];

fn assert_caught(defect: ServerDefect) {
    let (_, guards, unaffected) =
        CASES.iter().find(|(d, _, _)| *d == defect).expect("every defect has its case in CASES");
    let backend = InProcessBackend::reference().with_server_defect(defect);
    common::assert_caught(&backend, "apiserver.yaml", &defect, guards, unaffected);
}

#[test]
fn finalizers_ignored_on_delete_are_caught() {
    assert_caught(ServerDefect::FinalizersIgnoredOnDelete);
}

#[test]
fn a_status_write_that_bumps_the_generation_is_caught() {
    assert_caught(ServerDefect::StatusWriteBumpsGeneration);
}

#[test]
fn a_main_resource_write_that_applies_the_status_is_caught() {
    assert_caught(ServerDefect::MainWriteAppliesStatus);
}

#[test]
fn custom_resources_neither_pruned_nor_defaulted_are_caught() {
    assert_caught(ServerDefect::CrdSchemaNotCanonicalized);
}

#[test]
fn generate_name_without_a_suffix_is_caught() {
    assert_caught(ServerDefect::GenerateNameWithoutSuffix);
}

#[test]
fn a_namespace_removed_before_its_content_is_caught() {
    assert_caught(ServerDefect::NamespaceRemovedWithContentLeft);
}

#[test]
fn a_create_that_replaces_an_existing_object_is_caught() {
    assert_caught(ServerDefect::CreateReplacesExisting);
}

#[test]
fn a_stale_resource_version_accepted_is_caught() {
    assert_caught(ServerDefect::StaleResourceVersionAccepted);
}

#[test]
fn schema_causes_without_the_field_path_are_caught() {
    assert_caught(ServerDefect::SchemaCausesWithoutField);
}

#[test]
fn validation_without_ratcheting_is_caught() {
    assert_caught(ServerDefect::NoValidationRatcheting);
}

#[test]
fn a_terminating_namespace_that_accepts_content_is_caught() {
    assert_caught(ServerDefect::TerminatingNamespaceAcceptsContent);
}

#[test]
fn an_uncapped_reserved_for_is_caught() {
    assert_caught(ServerDefect::ReservedForUncapped);
}

/// Every defect has its case, and every row of the table guards against at least one.
#[test]
fn every_apiserver_row_catches_some_defect() {
    for defect in ServerDefect::ALL {
        assert!(CASES.iter().any(|(d, _, _)| *d == defect), "{defect:?} has no case in CASES");
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let suite = kproof::suite::load_suite_file(&root.join("suites/apiserver.yaml")).expect("the suite loads");
    for row in &suite.suite.rows {
        assert!(
            CASES.iter().any(|(_, guards, _)| guards.contains(&row.id.as_str())),
            "row {} of suites/apiserver.yaml guards against no ServerDefect",
            row.id
        );
    }
}
