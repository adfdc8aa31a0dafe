//! Unit tests of `kproof lint`.

use super::*;
use crate::suite::load::load_suite_str;

/// A suite file holding `rows` (YAML text indented for the row list), loaded as `path`.
fn suite(path: &str, name: &str, rows: &str) -> LoadedSuite {
    let text = format!("suite: {name}\ntitle: t\nrows:\n{rows}");
    load_suite_str(Path::new(path), &text).unwrap_or_else(|e| panic!("test suite must load: {e}"))
}

/// A row with the given id and body (steps/expect), indented for the row list.
fn row(id: &str, body: &str) -> String {
    format!("  - id: {id}\n    title: x\n    kind: behaviour\n    source: https://kubernetes.io/docs/\n{body}")
}

const EXPECT_POD: &str = "    expect:\n      - eventually:\n          target: {apiVersion: v1, kind: Pod, name: p}\n";

fn fixtures() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("two.yaml"), "apiVersion: v1\nkind: ConfigMap\n---\napiVersion: v1\nkind: Secret\n")
        .expect("write");
    std::fs::write(dir.path().join("broken.yaml"), "apiVersion: v1\nkind: [\n").expect("write");
    std::fs::write(dir.path().join("nokind.yaml"), "apiVersion: v1\n").expect("write");
    dir
}

/// The built-in kinds, and one actor's CRD kind, for the kind checks.
fn catalog() -> KindCatalog {
    use crate::suite::kinds::ScopedKind;
    KindCatalog::new(
        fake_apiserver::builtin_kinds().into_iter().map(|k| ScopedKind { kind: k.kind, namespaced: k.namespaced }),
        [(ActorName::Kuberay, vec![ScopedKind { kind: "RayCluster".into(), namespaced: true }])],
    )
}

/// Every issue of `rows`, warnings included.
fn lint_all(rows: &str) -> Vec<LintIssue> {
    let dir = fixtures();
    lint(&[suite("s.yaml", "s", rows)], dir.path(), &catalog())
}

/// The errors among `issues` (the tests of other rules name objects loosely; warnings have
/// their own tests).
fn errors(issues: Vec<LintIssue>) -> Vec<LintIssue> {
    issues.into_iter().filter(|i| !i.warning).collect()
}

fn lint_one(rows: &str) -> Vec<String> {
    errors(lint_all(rows)).iter().map(ToString::to_string).collect()
}

fn assert_clean(rows: &str) {
    let issues = lint_one(rows);
    assert!(issues.is_empty(), "expected no issues, got {issues:#?}");
}

fn assert_issue(rows: &str, needle: &str) -> Vec<String> {
    let issues = lint_one(rows);
    assert!(issues.iter().any(|i| i.contains(needle)), "expected an issue containing {needle:?}, got {issues:#?}");
    issues
}

#[test]
fn row_ids_longer_than_a_label_value_are_reported() {
    let long = "r".repeat(64);
    assert_issue(&row(&long, EXPECT_POD), "is 64 bytes; at most 63");
    assert_clean(&row(&"r".repeat(63), EXPECT_POD));
}

#[test]
fn dra_rows_must_name_their_profile() {
    let runs = row("d", &format!("    needs: {{capabilities: [\"actor:resourceclaim-controller\"]}}\n{EXPECT_POD}"));
    assert_issue(&runs, "needs.dra.profile is missing (it runs resourceclaim-controller)");
    let skew = row("d", &format!("    needs: {{dra: {{gatesOff: [kubelet]}}}}\n{EXPECT_POD}"));
    assert_issue(&skew, "needs.dra.profile is missing (it sets needs.dra)");
    let baseline_off =
        row("d", &format!("    needs: {{dra: {{profile: baseline, gatesOff: [kubelet]}}}}\n{EXPECT_POD}"));
    assert_issue(&baseline_off, "there is none to turn off");
    let fine = row(
        "d",
        &format!(
            "    needs: {{capabilities: [\"actor:dra-driver\"], dra: {{profile: podgroup, gatesOff: [kube-controller-manager]}}}}\n{EXPECT_POD}"
        ),
    );
    assert_clean(&fine);
}

#[test]
fn an_unknown_dra_profile_does_not_load() {
    let text = format!(
        "suite: s\ntitle: t\nrows:\n{}",
        row("d", &format!("    needs: {{dra: {{profile: pods}}}}\n{EXPECT_POD}"))
    );
    let err = load_suite_str(Path::new("s.yaml"), &text).unwrap_err().to_string();
    assert!(err.contains("unknown variant `pods`"), "{err}");
}

#[test]
fn a_full_clean_row_has_no_issues() {
    let body = r#"    needs: {capabilities: ["actor:kubelet", "actor:kuberay"]}
    fixtures:
      - file: two.yaml
      - inline: {apiVersion: v1, kind: Namespace, metadata: {name: ns}}
    steps:
      - apply: {file: ./two.yaml}
      - bind: {name: cluster, from: {apiVersion: ray.io/v1, kind: RayCluster, name: rc}, path: metadata.name}
      - wait:
          eventually:
            target: {apiVersion: v1, kind: Pod, selector: "ray.io/cluster=${cluster}"}
            count: 2
      - patch:
          target: {apiVersion: ray.io/v1, kind: RayCluster, name: "${cluster}"}
          type: merge
          patch: {spec: {suspend: true}}
      - scale: {target: {apiVersion: apps/v1, kind: Deployment, name: d}, replicas: 3}
      - delete: {target: {apiVersion: v1, kind: Pod, selector: "a=b"}}
      - advance: 1h
      - knob: {actor: kubelet, knob: failPod, value: "p"}
    expect:
      - eventually:
          target: {apiVersion: v1, kind: Pod}
          match:
            - {path: status.phase, eq: Running}
            - {path: metadata.name, matches: "^${cluster}-[a-z0-9]+$"}
            - {path: spec.replicas, gt: 1}
            - {path: metadata.labels, exists: true}
      - consistently:
          target: {apiVersion: v1, kind: Pod, name: p}
          for: 30s
      - before:
          first: {verb: delete, kind: Pod}
          then: {verb: create, kind: Pod, name: "${cluster}-head"}
      - never: {verb: delete, kind: Service}
      - atMost: {n: 1, event: {verb: create}}
      - count: {n: 2, event: {verb: create, match: [{path: spec.x, absent: true}]}}
"#;
    assert_clean(&row("ray-1", body));
}

#[test]
fn duplicate_row_ids_are_reported_in_both_places() {
    let dir = fixtures();
    let a = suite("suites/a.yaml", "a", &format!("{}{}", row("x-1", EXPECT_POD), row("dup", EXPECT_POD)));
    let b = suite("suites/b.yaml", "b", &row("dup", EXPECT_POD));
    let issues: Vec<String> = errors(lint(&[a, b], dir.path(), &catalog())).iter().map(ToString::to_string).collect();
    assert_eq!(
        issues,
        vec![
            "suites/a.yaml:11: row dup: duplicate row id `dup` (also at suites/b.yaml:4)".to_string(),
            "suites/b.yaml:4: row dup: duplicate row id `dup` (also at suites/a.yaml:11)".to_string(),
        ]
    );
    // Distinct ids: nothing.
    let a = suite("suites/a.yaml", "a", &row("one", EXPECT_POD));
    let b = suite("suites/b.yaml", "b", &row("two", EXPECT_POD));
    assert!(errors(lint(&[a, b], dir.path(), &catalog())).is_empty());
}

#[test]
fn duplicate_suite_names_are_reported() {
    let dir = fixtures();
    let a = suite("suites/a.yaml", "same", &row("one", EXPECT_POD));
    let b = suite("suites/b.yaml", "same", &row("two", EXPECT_POD));
    let issues: Vec<String> = errors(lint(&[a, b], dir.path(), &catalog())).iter().map(ToString::to_string).collect();
    assert_eq!(
        issues,
        vec![
            "suites/a.yaml:1: duplicate suite name `same` (also in suites/b.yaml)".to_string(),
            "suites/b.yaml:1: duplicate suite name `same` (also in suites/a.yaml)".to_string(),
        ]
    );
}

#[test]
fn count_and_at_least_together_are_reported() {
    assert_issue(
        &row("a", "    expect:\n      - eventually: {target: {apiVersion: v1, kind: Pod}, count: 1, atLeast: 2}\n"),
        "`count`, `atLeast` and `gone` exclude each other",
    );
}

#[test]
fn empty_source_is_reported() {
    let rows = "  - id: a\n    title: x\n    kind: behaviour\n    source: '  '\n".to_string() + EXPECT_POD;
    let issues = assert_issue(&rows, "s.yaml:4: row a: empty `source`");
    assert_eq!(issues.len(), 1);
    assert_clean(&row("a", EXPECT_POD));
    let unopenable =
        "  - id: a\n    title: x\n    kind: behaviour\n    source: kuberay.md §6\n".to_string() + EXPECT_POD;
    assert_issue(&unopenable, "s.yaml:4: row a: `source` has no https:// URL");
    let branch = "  - id: a\n    title: x\n    kind: behaviour\n    source: https://github.com/ray-project/kuberay/blob/master/x.go\n"
        .to_string()
        + EXPECT_POD;
    assert_issue(&branch, "which moves: pin the link to a tag or a commit");
}

#[test]
fn rows_with_nothing_to_do_are_reported() {
    assert_issue(&row("a", ""), "s.yaml:4: row a: row has no steps and no expectations");
    assert_clean(&row("a", EXPECT_POD));
    assert_clean(&row("a", "    steps:\n      - apply: {file: two.yaml}\n"));
    let empty = lint(
        &[load_suite_str(Path::new("e.yaml"), "suite: e\ntitle: t\nrows: []\n").expect("loads")],
        Path::new("."),
        &catalog(),
    );
    assert_eq!(empty.iter().map(ToString::to_string).collect::<Vec<_>>(), vec!["e.yaml:1: suite has no rows"]);
}

#[rstest::rstest]
#[case::upper("Upper")]
#[case::underscore("under_score")]
#[case::leading_dash("-lead")]
#[case::dot("has.dot")]
#[case::space("\"with space\"")]
#[case::empty("\"\"")]
fn row_ids_that_cannot_be_test_names_are_reported(#[case] id: &str) {
    let issues = assert_issue(&row(id, EXPECT_POD), "must match ^[a-z0-9][a-z0-9-]*$");
    assert_eq!(issues.len(), 1, "{issues:?}");
}

#[rstest::rstest]
#[case("a")]
#[case("rc-3")]
#[case("0-start")]
#[case("upgrade-42-x")]
fn row_ids_that_are_test_names_are_clean(#[case] id: &str) {
    assert_clean(&row(id, EXPECT_POD));
}

#[test]
fn suite_names_must_be_test_name_prefixes() {
    let dir = fixtures();
    let bad_name = suite("s.yaml", "Ray_Cluster", &row("a", EXPECT_POD));
    let issues = errors(lint(&[bad_name], dir.path(), &catalog()));
    assert!(issues[0].message.starts_with("suite name \"Ray_Cluster\" must match"), "{issues:?}");
}

#[test]
fn bindings_must_be_bound_before_use() {
    let bind = "      - bind: {name: n, from: {apiVersion: v1, kind: Pod, name: p}, path: metadata.name}\n";
    let use_in_patch =
        "      - patch: {target: {apiVersion: v1, kind: Pod, name: \"${n}\"}, type: merge, patch: {a: 1}}\n";
    // Used in the step before the bind.
    let rows = row("a", &format!("    steps:\n{use_in_patch}{bind}"));
    assert_issue(&rows, "s.yaml:4: row a: step 1 (patch): `${n}` is used before step 2 (bind) binds it");
    // Used after: clean.
    assert_clean(&row("a", &format!("    steps:\n{bind}{use_in_patch}")));
    // Never bound anywhere.
    assert_issue(
        &row("a", &format!("    steps:\n{use_in_patch}")),
        "step 1 (patch): `${n}` is used but no step of this row binds it",
    );
    // A bind cannot use its own name.
    let own = "      - bind: {name: n, from: {apiVersion: v1, kind: Pod, name: \"${n}\"}, path: metadata.name}\n";
    assert_issue(
        &row("a", &format!("    steps:\n{own}{use_in_patch}")),
        "step 1 (bind): `${n}` is used before step 1 (bind) binds it",
    );
    // Row fixtures come before every step.
    let fixture = "    fixtures:\n      - inline: {apiVersion: v1, kind: Pod, metadata: {name: \"${n}\"}}\n";
    assert_issue(
        &row("a", &format!("{fixture}    steps:\n{bind}{use_in_patch}")),
        "fixture 1: `${n}` is used before step 1 (bind) binds it",
    );
}

#[test]
fn bindings_are_seen_in_every_string_of_steps_and_expectations() {
    let cases = [
        "      - patch: {target: {apiVersion: v1, kind: Pod, name: p}, type: merge, patch: {metadata: {labels: {\"${n}\": x}}}}\n",
        "      - patch: {target: {apiVersion: v1, kind: Pod, name: p, namespace: \"${n}\"}, type: json, patch: [{op: add, path: /a, value: \"${n}\"}]}\n",
        "      - apply: {inline: {apiVersion: v1, kind: ConfigMap, data: {k: \"${n}\"}}}\n",
        "      - delete: {target: {apiVersion: v1, kind: Pod, selector: \"app=${n}\"}}\n",
        "      - knob: {actor: kubelet, knob: ready, value: {name: \"${n}\"}}\n",
        "      - wait: {eventually: {target: {apiVersion: v1, kind: Pod, name: p}, match: [{path: a, ne: \"${n}\"}]}}\n",
    ];
    for step in cases {
        assert_issue(&row("a", &format!("    steps:\n{step}")), "step 1 (");
    }
    let expectations = [
        "      - eventually: {target: {apiVersion: v1, kind: Pod, name: p}, match: [{path: a, eq: \"${n}\"}]}\n",
        "      - eventually: {target: {apiVersion: v1, kind: Pod, name: p}, match: [{path: a, contains: [\"${n}\"]}]}\n",
        "      - never: {kind: Pod, name: \"${n}\"}\n",
        "      - before: {first: {kind: Pod}, then: {kind: Pod, actor: \"${n}\"}}\n",
        "      - count: {n: 1, event: {kind: Pod, match: [{path: x, eq: \"${n}\"}]}}\n",
        "      - atMost: {n: 1, event: {namePrefix: \"${n}-\"}}\n",
    ];
    for expectation in expectations {
        assert_issue(&row("a", &format!("    expect:\n{expectation}")), "expect 1 (");
    }
}

#[test]
fn waits_see_earlier_bindings_and_expectations_see_all() {
    let bind = "      - bind: {name: n, from: {apiVersion: v1, kind: Pod, name: p}, path: metadata.name}\n";
    let wait = "      - wait: {eventually: {target: {apiVersion: v1, kind: Pod, name: \"${n}\"}}}\n";
    assert_clean(&row("a", &format!("    steps:\n{bind}{wait}")));
    assert_issue(
        &row("a", &format!("    steps:\n{wait}{bind}")),
        "step 1 (wait): `${n}` is used before step 2 (bind) binds it",
    );
    let expect = "    expect:\n      - never: {name: \"${n}\"}\n";
    assert_clean(&row("a", &format!("{expect}    steps:\n      - advance: 1s\n{bind}")));
}

#[test]
fn unused_bindings_are_reported() {
    let bind = "      - bind: {name: n, from: {apiVersion: v1, kind: Pod, name: p}, path: metadata.name}\n";
    let issues =
        assert_issue(&row("a", &format!("    steps:\n{bind}")), "row a: unused binding `${n}`: step 1 (bind) binds it");
    assert!(issues.iter().all(|i| i.contains("unused binding")), "{issues:?}");
    let used = "    expect:\n      - never: {name: \"x-${n}\"}\n";
    assert_clean(&row("a", &format!("    steps:\n{bind}{used}")));
}

#[test]
fn binding_syntax_problems_are_reported() {
    let bad_name = "      - bind: {name: \"a b\", from: {apiVersion: v1, kind: Pod, name: p}, path: x}\n      - delete: {target: {apiVersion: v1, kind: Pod, name: \"${a b}\"}}\n";
    assert_issue(&row("a", &format!("    steps:\n{bad_name}")), "binding name \"a b\" must be");
    let unterminated = "      - delete: {target: {apiVersion: v1, kind: Pod, name: \"${n\"}}\n";
    assert_issue(&row("a", &format!("    steps:\n{unterminated}")), "step 1 (delete): unterminated `${`");
}

#[rstest::rstest]
#[case::missing("{file: missing.yaml}", "missing.yaml")]
#[case::broken("{file: broken.yaml}", "broken.yaml:2")]
#[case::no_kind("{file: nokind.yaml}", "document 1: missing `kind`")]
#[case::parent("{file: ../two.yaml}", "`..` is not allowed")]
#[case::absolute("{file: /etc/passwd}", "absolute paths are not allowed")]
#[case::inline("{inline: {apiVersion: v1}}", "inline manifest: document 1: missing `kind`")]
fn bad_fixtures_are_reported_where_they_are_used(#[case] manifest: &str, #[case] needle: &str) {
    let as_step = assert_issue(&row("a", &format!("    steps:\n      - apply: {manifest}\n")), needle);
    assert!(as_step.iter().any(|i| i.contains("step 1 (apply): ") && i.contains(needle)), "{as_step:?}");
    let as_fixture = assert_issue(&row("a", &format!("    fixtures:\n      - {manifest}\n{EXPECT_POD}")), needle);
    assert!(as_fixture.iter().any(|i| i.contains("fixture 1: ") && i.contains(needle)), "{as_fixture:?}");
}

#[test]
fn fixtures_must_exist_and_parse() {
    let dir = fixtures();
    let text = format!("suite: s\ntitle: t\nfixtures:\n  - file: missing.yaml\nrows:\n{}", row("a", EXPECT_POD));
    let loaded = load_suite_str(Path::new("s.yaml"), &text).expect("loads");
    let issues = errors(lint(&[loaded], dir.path(), &catalog()));
    assert_eq!(issues.len(), 1, "{issues:?}");
    assert!(issues[0].to_string().starts_with("s.yaml:1: suite fixture 1: "), "{}", issues[0]);
    assert_clean(&row("a", "    steps:\n      - apply: {file: two.yaml}\n"));
}

#[test]
fn regexes_must_compile() {
    let m = |re: &str| {
        row(
            "a",
            &format!(
                "    expect:\n      - eventually: {{target: {{apiVersion: v1, kind: Pod, name: p}}, match: [{{path: a, matches: '{re}'}}]}}\n"
            ),
        )
    };
    assert_issue(&m("([a-z"), "expect 1 (eventually): `matches` on `a` is not a valid regex");
    assert_issue(&m("a{2,1}"), "not a valid regex");
    assert_clean(&m("^[a-z]+-\\d+$"));
}

#[test]
fn field_matches_need_exactly_one_operator() {
    let m = |ops: &str| {
        row(
            "a",
            &format!(
                "    expect:\n      - eventually: {{target: {{apiVersion: v1, kind: Pod, name: p}}, match: [{{path: a{ops}}}]}}\n"
            ),
        )
    };
    assert_issue(&m(""), "match on `a` has no operator");
    assert_issue(&m(", eq: null"), "`eq: null` reads as no operator");
    assert_issue(&m(", eq: 1, ne: 2"), "match on `a` has 2 operators (eq, ne); give exactly one");
    assert_issue(&m(", gt: 1, lt: 3, exists: true"), "3 operators (exists, gt, lt)");
    let event = row("a", "    expect:\n      - never: {kind: Pod, match: [{path: a}]}\n");
    assert_issue(&event, "expect 1 (never): match on `a` has no operator");
}

#[rstest::rstest]
fn each_operator_alone_is_clean(
    #[values(
        ", eq: 1",
        ", ne: x",
        ", exists: true",
        ", absent: true",
        ", gt: 1",
        ", lt: 2.5",
        ", contains: x",
        ", matches: x"
    )]
    op: &str,
) {
    assert_clean(&row(
        "a",
        &format!(
            "    expect:\n      - eventually: {{target: {{apiVersion: v1, kind: Pod, name: p}}, match: [{{path: a{op}}}]}}\n"
        ),
    ));
}

#[test]
fn object_refs_name_what_their_step_needs() {
    let step = |s: &str| row("a", &format!("    steps:\n      - {s}\n"));
    assert_issue(
        &step("delete: {target: {apiVersion: v1, kind: Pod, name: p, selector: a=b}}"),
        "step 1 (delete): target v1 Pod has both `name` and `selector`",
    );
    assert_issue(
        &step("patch: {target: {apiVersion: v1, kind: Pod}, type: merge, patch: {}}"),
        "step 1 (patch): target v1 Pod needs `name`",
    );
    assert_issue(
        &step("scale: {target: {apiVersion: apps/v1, kind: Deployment, selector: a=b}, replicas: 1}"),
        "needs `name` (a selector is not enough",
    );
    assert_issue(
        &step("bind: {name: x, from: {apiVersion: v1, kind: Pod}, path: a}"),
        "step 1 (bind): target v1 Pod needs `name`",
    );
    assert_issue(&step("delete: {target: {apiVersion: v1, kind: Pod}}"), "needs `name` or `selector`");
    assert_issue(
        &row("a", "    expect:\n      - eventually: {target: {apiVersion: v1, kind: Pod, name: p, selector: a=b}}\n"),
        "expect 1 (eventually): target v1 Pod has both",
    );
    assert_clean(&step("delete: {target: {apiVersion: v1, kind: Pod, name: p}}"));
    assert_clean(&step("scale: {target: {apiVersion: apps/v1, kind: Deployment, name: d}, replicas: 1}"));
    assert_clean(&row("a", "    expect:\n      - eventually: {target: {apiVersion: v1, kind: Pod}, gone: true}\n"));
}

#[test]
fn issues_carry_the_row_line_and_display_as_file_line_row() {
    let rows = format!("{}{}", row("first", EXPECT_POD), row("second", ""));
    let issues = lint_one(&rows);
    assert_eq!(issues, vec!["s.yaml:11: row second: row has no steps and no expectations".to_string()]);
    let issue = LintIssue { file: "f.yaml".into(), line: 3, row: None, message: "m".into(), warning: false };
    assert_eq!(issue.to_string(), "f.yaml:3: m");
}

#[test]
fn schema_defines_the_format() {
    let schema = json_schema();
    assert_eq!(schema["$id"], "https://kproof.dev/schema/suite-v1.json");
    assert!(schema["title"].is_string());
    for def in ["Row", "Step", "Expectation", "ObjectRef", "FieldMatch", "EventMatch", "Manifest"] {
        assert!(schema["$defs"][def].is_object(), "missing definition {def}");
    }
    assert_eq!(schema["properties"]["rows"]["items"]["$ref"], "#/$defs/Row");
}

#[test]
fn knobs_need_their_actor_in_the_capabilities() {
    let knob = "    steps:\n      - knob: {actor: kubelet, knob: failPod, value: p}\n";
    assert_issue(
        &row("a", knob),
        "step 1 (knob): turns a knob of kubelet, which the row does not run: add `actor:kubelet` to needs.capabilities",
    );
    assert_clean(&row("a", &format!("    needs: {{capabilities: [actor:kubelet]}}\n{knob}")));
}

#[test]
fn binding_scanning() {
    let uses = binding_uses(&["${a}-${b}".into(), "x$y{z}".into(), "${".into()]);
    assert_eq!(uses, vec![("a".to_string(), false), ("b".to_string(), false), (String::new(), true)]);
    assert_eq!(replace_bindings("^${a}-[0-9]+${b}$", "w"), "^w-[0-9]+w$");
    assert_eq!(replace_bindings("${open", "w"), "${open");
}

#[test]
fn timeline_patterns_and_targets_over_unknown_kinds_are_errors() {
    let never = "    expect:\n      - never: {kind: ConfgMap}\n";
    assert_issue(&row("a", never), "expect 1 (never): kind \"ConfgMap\" is neither built in nor installed");
    let at_most = "    expect:\n      - atMost: {n: 0, event: {kind: ConfgMap}}\n";
    assert_issue(&row("a", at_most), "expect 1 (atMost): kind \"ConfgMap\"");
    let target = "    expect:\n      - eventually:\n          target: {apiVersion: v1, kind: Podd, name: p}\n";
    assert_issue(&row("a", target), "kind \"Podd\"");
    let before = "    expect:\n      - before:\n          first: {kind: Pod}\n          then: {kind: Nod}\n";
    assert_issue(&row("a", before), "expect 1 (before) then: kind \"Nod\"");
}

#[test]
fn a_crd_kind_resolves_through_the_actor_or_the_fixture_that_installs_it() {
    let without = "    expect:\n      - never: {kind: RayCluster}\n";
    assert_issue(&row("a", without), "its CRD comes with `actor:kuberay`");
    let with_actor = "    needs: {capabilities: [actor:kuberay]}\n    expect:\n      - never: {kind: RayCluster}\n";
    assert_clean(&row("a", with_actor));
    let crd = "    steps:\n      - apply:\n          inline: {apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, \
                   metadata: {name: widgets.example.com}, spec: {names: {kind: Widget}}}\n    expect:\n      - never: {kind: Widget}\n";
    assert_clean(&row("a", crd));
}

#[test]
fn names_nothing_in_the_row_mentions_are_warnings() {
    let rows = row(
        "a",
        "    steps:\n      - apply:\n          inline: {apiVersion: v1, kind: ConfigMap, metadata: {name: held}}\n    \
             expect:\n      - before:\n          first: {kind: ConfigMap, name: held}\n          then: {kind: ConfigMap, name: hled}\n",
    );
    let issues = lint_all(&rows);
    let warnings: Vec<String> = issues.iter().filter(|i| i.warning).map(ToString::to_string).collect();
    assert_eq!(
        warnings,
        vec![
            "s.yaml:4: warning: row a: expect 1 (before) then: no fixture, step or binding of the row mentions ConfigMap \"hled\": a misspelt name matches nothing"
        ]
    );
    assert!(issues.iter().all(|i| i.warning), "{issues:#?}");
    // Derived names (`held-abc12`) and bound names are not warned about.
    let derived = row(
        "b",
        "    steps:\n      - apply:\n          inline: {apiVersion: v1, kind: ConfigMap, metadata: {name: held}}\n    \
             expect:\n      - never: {kind: Pod, namePrefix: held-}\n      - never: {kind: Pod, name: \"${namespace}\"}\n",
    );
    assert!(lint_all(&derived).is_empty(), "{:#?}", lint_all(&derived));
}
