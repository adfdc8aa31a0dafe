//! The request side of the second corpus, varied systematically: every query parameter a
//! write, read or delete takes with its valid, odd and invalid values; bodies that are not the
//! object they claim (unknown and duplicate fields under each field validation, metadata a
//! client must not set, not JSON at all); resourceVersions on updates, patches and reads;
//! DeleteOptions and their preconditions; and patches of each type, from well formed to
//! broken. Each family is a dimension, each variant a value of it; the corpus draws a family,
//! then a value.
//!
//! The parameters are those of kube-apiserver's handlers (https://kubernetes.io/docs/reference/using-api/api-concepts/,
//! https://github.com/kubernetes/kubernetes/blob/v1.37.2/staging/src/k8s.io/apiserver/pkg/endpoints/handlers/rest.go).

use super::corpus::Rng;
use super::corpus::{APPLY, JSON_PATCH, MERGE, Rewrite, RunNames, SMP, Step, remove_pointer};
use super::templates::{Edit, KindTemplate};
use serde_json::{Value, json};

/// One drawn request: what it is, its family (the report's kind of request), setup, request.
pub(super) struct Drawn {
    pub(super) what: String,
    pub(super) family: &'static str,
    pub(super) setup: Vec<Step>,
    pub(super) request: Step,
}

const FAMILIES: &[&str] = &[
    "query: create",
    "body: create",
    "resourceVersion: update",
    "resourceVersion: patch",
    "patch: merge",
    "patch: json",
    "patch: strategic",
    "apply",
    "delete options",
    "preconditions",
    "query: get",
    "query: list",
    "query: delete collection",
];

/// Draws one request about `t`'s object `name`.
pub(super) fn draw(rng: &mut Rng, t: &KindTemplate, name: &str, names: &RunNames) -> Drawn {
    let mut family = *rng.pick(FAMILIES);
    if family == "patch: strategic" && t.custom {
        family = "patch: merge";
    }
    let coll = t.collection(names);
    let item = format!("{coll}/{name}");
    let valid = t.object(name, names);
    let create = Step::new("POST", coll.clone()).json(&valid);
    let get = Step::get(&item);
    let drawn = |what: &str, setup: Vec<Step>, request: Step| Drawn { what: what.to_string(), family, setup, request };
    match family {
        "query: create" => {
            let queries = [
                "dryRun=All",
                "dryRun=",
                "dryRun=all",
                "dryRun=All&dryRun=All",
                "dryRun=None",
                "fieldValidation=Strict",
                "fieldValidation=Warn",
                "fieldValidation=Ignore",
                "fieldValidation=strict",
                "fieldValidation=",
                "fieldValidation=Strict&fieldValidation=Ignore",
                "fieldManager=",
                "fieldManager=%01bad",
                "pretty=true",
                "pretty=maybe",
                "unknownParameter=1",
                "force=true",
                "gracePeriodSeconds=5",
            ];
            let mut q = (*rng.pick(&queries)).to_string();
            if rng.below(4) == 0 {
                let n = *rng.pick(&[128usize, 129]);
                q = format!("fieldManager={}", "m".repeat(n));
            }
            drawn(&format!("create ?{}", short(&q)), vec![], Step::new("POST", format!("{coll}?{q}")).json(&valid))
        }
        "body: create" => {
            let validation =
                *rng.pick(&["", "?fieldValidation=Strict", "?fieldValidation=Warn", "?fieldValidation=Ignore"]);
            let post = Step::new("POST", format!("{coll}{validation}"));
            let mut v = valid.clone();
            let what = match rng.below(16) {
                0 => {
                    v["bogusTop"] = json!(1);
                    "unknown field at the top"
                }
                1 => {
                    v["metadata"]["bogusMeta"] = json!(1);
                    "unknown field in metadata"
                }
                2 => {
                    let at = if v.get("spec").is_some_and(Value::is_object) { "spec" } else { "metadata" };
                    v[at]["Labels"] = json!({"a": "b"});
                    "field in the wrong case"
                }
                3 => {
                    let text = serde_json::to_string(&v).unwrap_or_default();
                    let dup = text.replacen("\"metadata\":{", &format!("\"metadata\":{{\"name\":\"{name}\","), 1);
                    return drawn(&format!("duplicate metadata.name {validation}"), vec![], post.raw(dup.as_bytes()));
                }
                4 => {
                    v["metadata"]["resourceVersion"] = json!(*rng.pick(&["1", "abc", "0"]));
                    "metadata.resourceVersion set"
                }
                5 => {
                    v["metadata"]["uid"] = json!("6f2d6b52-8bd4-4a8c-9a39-1f0e1f7e2a10");
                    "metadata.uid set"
                }
                6 => {
                    v["metadata"]["creationTimestamp"] = json!("2020-01-01T00:00:00Z");
                    v["metadata"]["generation"] = json!(7);
                    "creationTimestamp and generation set"
                }
                7 => {
                    v["metadata"]["deletionTimestamp"] = json!("2020-01-01T00:00:00Z");
                    "deletionTimestamp set"
                }
                8 => {
                    v["metadata"]["deletionGracePeriodSeconds"] = json!(30);
                    "deletionGracePeriodSeconds set"
                }
                9 => {
                    let owner = |n: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "name": n, "uid": format!("00000000-0000-0000-0000-00000000000{}", n.len()), "controller": true});
                    v["metadata"]["ownerReferences"] = json!([owner("a"), owner("bb")]);
                    "two controller owner references"
                }
                10 => {
                    remove_pointer(&mut v, "/apiVersion");
                    "no apiVersion"
                }
                11 => {
                    remove_pointer(&mut v, "/kind");
                    "no kind"
                }
                12 => return drawn("body null", vec![], post.raw(b"null")),
                13 => return drawn("body a list", vec![], post.raw(b"[]")),
                14 => return drawn("body empty", vec![], post.raw(b"")),
                _ => {
                    let yaml = serde_saphyr::to_string(&v).unwrap_or_default();
                    return drawn("body in YAML", vec![], post.raw(yaml.as_bytes()).typed("application/yaml"));
                }
            };
            drawn(&format!("{what} {validation}"), vec![], post.json(&v))
        }
        "resourceVersion: update" => {
            let (what, edits): (&str, Vec<Edit>) = match rng.below(9) {
                0 => ("current", vec![]),
                1 => ("absent", vec![Edit::Remove("/metadata/resourceVersion".into())]),
                2 => ("empty", vec![set("/metadata/resourceVersion", json!(""))]),
                3 => ("not a number", vec![set("/metadata/resourceVersion", json!("abc"))]),
                4 => ("0", vec![set("/metadata/resourceVersion", json!("0"))]),
                5 => ("stale", vec![set("/metadata/resourceVersion", json!("1"))]),
                6 => ("from the future", vec![set("/metadata/resourceVersion", json!("99999999999"))]),
                7 => ("uid changed", vec![set("/metadata/uid", json!("6f2d6b52-8bd4-4a8c-9a39-1f0e1f7e2a10"))]),
                _ => (
                    "creationTimestamp changed",
                    vec![set("/metadata/creationTimestamp", json!("2020-01-01T00:00:00Z"))],
                ),
            };
            let dry = if rng.below(4) == 0 { "?dryRun=All" } else { "" };
            drawn(
                &format!("update, resourceVersion {what}{dry}"),
                vec![create, get],
                Step::new("PUT", format!("{item}{dry}")).rewrite(Value::Null, &edits),
            )
        }
        "resourceVersion: patch" => {
            let rv = *rng.pick(&["abc", "1", "0", "", "99999999999"]);
            let patch = json!({"metadata": {"resourceVersion": rv, "labels": {"patched": "yes"}}});
            drawn(
                &format!("merge patch, resourceVersion {rv:?}"),
                vec![create],
                Step::new("PATCH", item).json(&patch).typed(MERGE),
            )
        }
        "patch: merge" => {
            let bodies: &[(&str, &[u8])] = &[
                ("null", b"null"),
                ("a list", b"[]"),
                ("a string", b"\"x\""),
                ("empty object", b"{}"),
                ("metadata null", b"{\"metadata\":null}"),
                ("labels null", b"{\"metadata\":{\"labels\":null}}"),
                ("uid changed", b"{\"metadata\":{\"uid\":\"6f2d6b52-8bd4-4a8c-9a39-1f0e1f7e2a10\"}}"),
                ("name null", b"{\"metadata\":{\"name\":null}}"),
                ("namespace changed", b"{\"metadata\":{\"namespace\":\"elsewhere\"}}"),
                ("apiVersion changed", b"{\"apiVersion\":\"example.com/v9\"}"),
                ("kind changed", b"{\"kind\":\"Other\"}"),
                ("generation set", b"{\"metadata\":{\"generation\":42}}"),
                ("creationTimestamp null", b"{\"metadata\":{\"creationTimestamp\":null}}"),
                ("spec null", b"{\"spec\":null}"),
                ("not JSON", b"{\"metadata\":"),
                ("deletionTimestamp set", b"{\"metadata\":{\"deletionTimestamp\":\"2020-01-01T00:00:00Z\"}}"),
            ];
            let (what, body) = *rng.pick(bodies);
            drawn(&format!("merge patch: {what}"), vec![create], Step::new("PATCH", item).raw(body).typed(MERGE))
        }
        "patch: json" => {
            let ops: &[(&str, &str)] = &[
                ("add a label", r#"[{"op":"add","path":"/metadata/labels/a","value":"b"}]"#),
                ("unknown op", r#"[{"op":"bogus","path":"/metadata/labels/a","value":"b"}]"#),
                ("no op", r#"[{"path":"/metadata/labels/a","value":"b"}]"#),
                ("no path", r#"[{"op":"add","value":"b"}]"#),
                ("path without a slash", r#"[{"op":"add","path":"metadata","value":{}}]"#),
                (
                    "escaped key",
                    r#"[{"op":"add","path":"/metadata/annotations","value":{}},{"op":"add","path":"/metadata/annotations/a~1b","value":"c"}]"#,
                ),
                ("bad escape", r#"[{"op":"add","path":"/metadata/labels/a~2","value":"b"}]"#),
                ("remove missing", r#"[{"op":"remove","path":"/metadata/annotations/none"}]"#),
                ("replace missing", r#"[{"op":"replace","path":"/metadata/annotations/none","value":"x"}]"#),
                (
                    "move from missing",
                    r#"[{"op":"move","from":"/metadata/annotations/none","path":"/metadata/annotations/x"}]"#,
                ),
                (
                    "copy the name to a label",
                    r#"[{"op":"add","path":"/metadata/labels","value":{}},{"op":"copy","from":"/metadata/name","path":"/metadata/labels/copied"}]"#,
                ),
                ("test fails", r#"[{"op":"test","path":"/kind","value":"Nope"}]"#),
                (
                    "test passes",
                    r#"[{"op":"test","path":"/metadata/labels","value":null},{"op":"add","path":"/metadata/labels","value":{"t":"1"}}]"#,
                ),
                (
                    "index past the end",
                    r#"[{"op":"add","path":"/metadata/finalizers","value":[]},{"op":"add","path":"/metadata/finalizers/5","value":"example.com/x"}]"#,
                ),
                (
                    "append with -",
                    r#"[{"op":"add","path":"/metadata/finalizers","value":[]},{"op":"add","path":"/metadata/finalizers/-","value":"example.com/x"}]"#,
                ),
                ("add without value", r#"[{"op":"add","path":"/metadata/labels/a"}]"#),
                ("not a list", r#"{"op":"add","path":"/metadata/labels/a","value":"b"}"#),
                ("empty list", r#"[]"#),
                ("replace the name", r#"[{"op":"replace","path":"/metadata/name","value":"renamed"}]"#),
                ("remove metadata", r#"[{"op":"remove","path":"/metadata"}]"#),
            ];
            let (what, body) = *rng.pick(ops);
            drawn(
                &format!("json patch: {what}"),
                vec![create],
                Step::new("PATCH", item).raw(body.as_bytes()).typed(JSON_PATCH),
            )
        }
        "patch: strategic" => {
            let bodies: &[(&str, &str)] = &[
                ("replace labels", r#"{"metadata":{"labels":{"$patch":"replace","a":"b"}}}"#),
                (
                    "delete from a primitive list",
                    r#"{"metadata":{"finalizers":["example.com/x"],"$deleteFromPrimitiveList/finalizers":["example.com/x"]}}"#,
                ),
                ("unknown directive", r#"{"$patch":"bogus"}"#),
                ("delete metadata", r#"{"metadata":{"$patch":"delete"}}"#),
                (
                    "set element order with an unknown item",
                    r#"{"metadata":{"$setElementOrder/finalizers":["example.com/y"]}}"#,
                ),
                ("retain keys", r#"{"metadata":{"$retainKeys":["labels"],"labels":{"a":"b"}}}"#),
                ("retain keys not a list", r#"{"metadata":{"$retainKeys":"labels"}}"#),
                ("labels a list", r#"{"metadata":{"labels":["a"]}}"#),
                ("plain labels", r#"{"metadata":{"labels":{"smp":"yes"}}}"#),
                ("not JSON", r#"{"metadata""#),
            ];
            let (what, body) = *rng.pick(bodies);
            drawn(
                &format!("strategic merge patch: {what}"),
                vec![create],
                Step::new("PATCH", item).raw(body.as_bytes()).typed(SMP),
            )
        }
        "apply" => {
            let manager = "fieldManager=kproof-differential";
            let mut v = valid.clone();
            let mut query = manager.to_string();
            let mut setup = vec![];
            let what = match rng.below(12) {
                0 => {
                    remove_pointer(&mut v, "/apiVersion");
                    "no apiVersion"
                }
                1 => {
                    remove_pointer(&mut v, "/kind");
                    "no kind"
                }
                2 => {
                    v["kind"] = json!("Other");
                    "another kind"
                }
                3 => {
                    v["metadata"]["name"] = json!(format!("{name}-other"));
                    "another name in the body"
                }
                4 => {
                    v["metadata"]["resourceVersion"] = json!(*rng.pick(&["1", "abc"]));
                    setup.push(create.clone());
                    "a resourceVersion"
                }
                5 => {
                    v["metadata"]["uid"] = json!("6f2d6b52-8bd4-4a8c-9a39-1f0e1f7e2a10");
                    setup.push(create.clone());
                    "another uid"
                }
                6 => {
                    query = format!("{manager}&force=maybe");
                    "force=maybe"
                }
                7 => {
                    query = format!("fieldManager={}", "m".repeat(129));
                    "a field manager of 129 bytes"
                }
                8 => {
                    return drawn(
                        "apply: not YAML",
                        vec![],
                        Step::new("PATCH", format!("{item}?{manager}")).raw(b"a: [b").typed(APPLY),
                    );
                }
                9 => {
                    return drawn(
                        "apply: empty object",
                        vec![],
                        Step::new("PATCH", format!("{item}?{manager}")).raw(b"{}").typed(APPLY),
                    );
                }
                10 => {
                    let yaml = serde_saphyr::to_string(&v).unwrap_or_default();
                    return drawn(
                        "apply: as YAML",
                        vec![],
                        Step::new("PATCH", format!("{item}?{manager}")).raw(yaml.as_bytes()).typed(APPLY),
                    );
                }
                _ => {
                    query = format!("{manager}&dryRun=All");
                    "dry run"
                }
            };
            drawn(&format!("apply: {what}"), setup, Step::new("PATCH", format!("{item}?{query}")).json(&v).typed(APPLY))
        }
        "delete options" => {
            let queries = [
                "propagationPolicy=Orphan",
                "propagationPolicy=Background",
                "propagationPolicy=Foreground",
                "propagationPolicy=Bogus",
                "propagationPolicy=",
                "gracePeriodSeconds=-1",
                "gracePeriodSeconds=0",
                "gracePeriodSeconds=1",
                "gracePeriodSeconds=x",
                "orphanDependents=true",
                "orphanDependents=false",
                "orphanDependents=x",
                "orphanDependents=true&propagationPolicy=Background",
                "dryRun=All",
                "dryRun=Bogus",
            ];
            let bodies: &[(&str, &str)] = &[
                ("kind Bogus", r#"{"kind":"Bogus","apiVersion":"v1"}"#),
                ("not JSON", r#"{"kind":"#),
                ("grace -5", r#"{"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":-5}"#),
                ("propagation Bogus", r#"{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Bogus"}"#),
                ("dryRun list", r#"{"kind":"DeleteOptions","apiVersion":"v1","dryRun":["All"]}"#),
                (
                    "meta.k8s.io/v1",
                    r#"{"kind":"DeleteOptions","apiVersion":"meta.k8s.io/v1","propagationPolicy":"Background"}"#,
                ),
            ];
            if rng.below(3) == 0 {
                let (what, body) = *rng.pick(bodies);
                drawn(&format!("delete, body {what}"), vec![create], Step::new("DELETE", item).raw(body.as_bytes()))
            } else {
                let q = *rng.pick(&queries);
                drawn(&format!("delete ?{q}"), vec![create], Step::new("DELETE", format!("{item}?{q}")))
            }
        }
        "preconditions" => {
            let options = json!({"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {}});
            let (what, copies, edits): (&str, Vec<(&str, &str)>, Vec<Edit>) = match rng.below(6) {
                0 => ("uid matches", vec![("/metadata/uid", "/preconditions/uid")], vec![]),
                1 => (
                    "resourceVersion matches",
                    vec![("/metadata/resourceVersion", "/preconditions/resourceVersion")],
                    vec![],
                ),
                2 => (
                    "both match",
                    vec![
                        ("/metadata/uid", "/preconditions/uid"),
                        ("/metadata/resourceVersion", "/preconditions/resourceVersion"),
                    ],
                    vec![],
                ),
                3 => ("uid empty", vec![], vec![set("/preconditions/uid", json!(""))]),
                4 => {
                    ("resourceVersion not a number", vec![], vec![set("/preconditions/resourceVersion", json!("abc"))])
                }
                _ => (
                    "uid matches, resourceVersion stale",
                    vec![("/metadata/uid", "/preconditions/uid")],
                    vec![set("/preconditions/resourceVersion", json!("1"))],
                ),
            };
            let rewrite = Rewrite {
                base: Some(options),
                copies: copies.into_iter().map(|(a, b)| (a.to_string(), b.to_string())).collect(),
                status: Value::Null,
                edits,
            };
            drawn(
                &format!("delete, precondition {what}"),
                vec![create, get],
                Step::new("DELETE", item).rewrite_with(rewrite),
            )
        }
        "query: get" => {
            let q = *rng.pick(&[
                "resourceVersion=0",
                "resourceVersion=abc",
                "resourceVersion=1",
                "resourceVersion=",
                // Not `resourceVersion=99999999999`: kube-apiserver's GET waits for the watch
                // cache to reach it and gave no answer within 30 s.
                "resourceVersionMatch=Exact",
                "resourceVersion=0&resourceVersionMatch=NotOlderThan",
                "fieldSelector=metadata.name%3Dx",
                "labelSelector=a%3Db",
                "watch=true&fieldSelector=bogus",
            ]);
            drawn(&format!("get ?{q}"), vec![create], Step::new("GET", format!("{item}?{q}")))
        }
        "query: list" => {
            let q = *rng.pick(&[
                "limit=-1",
                "limit=0",
                "limit=x",
                "limit=1",
                "limit=1&continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiJ4In0",
                "continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiJ4In0",
                "limit=1&continue=e30",
                "resourceVersion=0",
                "resourceVersion=abc",
                "resourceVersion=99999999999",
                "resourceVersion=1&resourceVersionMatch=Exact",
                "resourceVersionMatch=Exact",
                "resourceVersion=0&resourceVersionMatch=Exact",
                "resourceVersion=0&resourceVersionMatch=NotOlderThan",
                "resourceVersion=0&resourceVersionMatch=bogus",
                "labelSelector=a%3Db",
                "labelSelector=a%20in%20(b%2Cc)",
                "labelSelector=!a",
                "labelSelector=a%2C",
                "labelSelector=a%3Db%3Dc",
                "labelSelector=a!%3D",
                "labelSelector=a%20notin%20()",
                "fieldSelector=metadata.name%3Dx",
                "fieldSelector=metadata.name%3D%3Dx",
                "fieldSelector=metadata.name!%3Dx",
                "fieldSelector=metadata.namespace%3Dx",
                "fieldSelector=metadata.name%3Dx%2Cmetadata.name%3Dy",
                "fieldSelector=status.phase%3DRunning",
                "fieldSelector=spec.nodeName%3D",
                "fieldSelector=type%3DOpaque",
                "timeoutSeconds=x",
                "watch=maybe",
                "allowWatchBookmarks=maybe",
                "sendInitialEvents=true",
                "watch=true&resourceVersion=abc",
                "watch=true&sendInitialEvents=true",
                "watch=1&timeoutSeconds=-1",
            ]);
            drawn(&format!("list ?{q}"), vec![], Step::new("GET", format!("{coll}?{q}")))
        }
        _ => {
            // Selects nothing (no object carries the label), so other cases keep their objects.
            let none = format!("labelSelector=kproof-differential-none%3D{}", names.nonce);
            let q = rng
                .pick(&[
                    none.clone(),
                    format!("{none}&dryRun=All"),
                    format!("{none}&propagationPolicy=Bogus"),
                    "labelSelector=a%20b".to_string(),
                ])
                .clone();
            drawn(&format!("delete collection ?{}", short(&q)), vec![], Step::new("DELETE", format!("{coll}?{q}")))
        }
    }
}

fn set(pointer: &str, v: Value) -> Edit {
    Edit::Set(pointer.to_string(), v)
}

/// A query shortened for reports (long field managers).
fn short(q: &str) -> String {
    if q.len() > 60 { format!("{}...({} bytes)", &q[..40], q.len()) } else { q.to_string() }
}
