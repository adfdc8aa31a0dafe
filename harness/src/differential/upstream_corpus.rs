//! The second corpus, independent of the first's hand-written mutations: a quarter of its
//! cases are upstream's own validation tests written as data (`upstream-cases.yaml`), a
//! quarter vary the request rather than the object ([`request_grid`]), and half break one
//! field of a valid object the way its OpenAPI schema, read from the real kube-apiserver of the
//! run, says it can be broken ([`schema_mutations`]), or set one the object leaves out. Only
//! the valid objects are shared with the first corpus: they are where every case starts.
//!
//! [`request_grid`]: super::request_grid
//! [`schema_mutations`]: super::schema_mutations

use super::corpus::{Case, Rng, RunNames, Step, written};
use super::openapi::{Field, Schemas};
use super::request_grid;
use super::schema_mutations::variants;
use super::templates::{Applies, Mutation, kinds, upstream_cases};

/// Kinds whose objects change what the server does with every other request.
const WEBHOOK_KINDS: [&str; 2] = ["ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"];

/// Keeps this corpus's draws apart from the first corpus's for the same seed.
const SALT: u64 = 0x5EC0_4D00_C0FF_EE00;

/// The corpus of `count` cases for `seed`, with the schemas of the run's real server.
pub fn generate(seed: u64, count: usize, names: &RunNames, schemas: &Schemas) -> Vec<Case> {
    let templates = kinds();
    let fields: Vec<(Vec<Field>, Vec<Field>)> = templates
        .iter()
        .map(|t| {
            let api_version = t.valid["apiVersion"].as_str().unwrap_or_default();
            let kind = t.valid["kind"].as_str().unwrap_or_default();
            let all =
                schemas.root(api_version, kind).map(|root| schemas.fields(root, &t.valid, 10)).unwrap_or_default();
            all.into_iter().partition(|f| f.present)
        })
        .collect();
    let cases = upstream_cases();
    let mut rng = Rng::new(seed ^ SALT);
    let mut out = Vec::with_capacity(count);
    for index in 0..count {
        let name = format!("u{index}-{}", names.nonce);
        let roll = rng.below(4);
        let mut case = if roll == 0 && !cases.is_empty() {
            let c = rng.pick(cases);
            let Some(t) = templates.iter().find(|t| t.label == c.kind) else { continue };
            let (form, setup, request) = written(&mut rng, t, &c.mutation, &name, names);
            Case {
                index,
                kind: t.label.clone(),
                what: format!("{form:?} {}", c.mutation.name),
                class: format!("upstream test: {}", form.describe()),
                setup,
                request,
                teardown: Vec::new(),
            }
        } else {
            let ti = rng.below(templates.len());
            let t = &templates[ti];
            let (present, absent) = &fields[ti];
            if roll == 1 || present.is_empty() {
                let d = request_grid::draw(&mut rng, t, &name, names);
                Case {
                    index,
                    kind: t.label.clone(),
                    what: d.what,
                    class: d.family.to_string(),
                    setup: d.setup,
                    request: d.request,
                    teardown: Vec::new(),
                }
            } else {
                // Fields the object has and fields it leaves out, half and half.
                let pool = if absent.is_empty() || rng.below(2) == 0 { present } else { absent };
                let field = rng.pick(pool);
                let vs = variants(field, t.valid.pointer(&field.pointer), schemas);
                let (variant, edits) = rng.pick(&vs).clone();
                let mu = Mutation { name: format!("{} {variant}", field.pointer), edits, applies: Applies::Always };
                let (form, setup, request) = written(&mut rng, t, &mu, &name, names);
                let family = variant.split(':').next().unwrap_or_default();
                Case {
                    index,
                    kind: t.label.clone(),
                    what: format!("{form:?} {}", mu.name),
                    class: format!("schema: {family}"),
                    setup,
                    request,
                    teardown: Vec::new(),
                }
            }
        };
        // A webhook configuration whose selectors or rules a case changed would intercept every
        // later case's writes: it goes once its case is done.
        if WEBHOOK_KINDS.contains(&case.kind.as_str()) {
            let t = templates.iter().find(|t| t.label == case.kind).expect("the case's kind");
            case.teardown.push(Step::delete(&format!("{}/u{index}-{}", t.collection(names), names.nonce)));
        }
        out.push(case);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A schema document for two of the kinds, as kube-apiserver publishes them.
    fn schemas() -> Schemas {
        let mut s = Schemas::default();
        s.add_document(&json!({"components": {"schemas": {
            "io.k8s.api.core.v1.ConfigMap": {
                "type": "object",
                "x-kubernetes-group-version-kind": [{"group": "", "version": "v1", "kind": "ConfigMap"}],
                "properties": {
                    "metadata": {"type": "object", "properties": {"labels": {"type": "object", "additionalProperties": {"type": "string"}}}},
                    "data": {"type": "object", "additionalProperties": {"type": "string"}},
                    "immutable": {"type": "boolean"}
                }
            }
        }}}));
        s
    }

    #[test]
    fn the_same_seed_gives_the_same_corpus_and_every_part_is_drawn() {
        let names = RunNames { namespace: "ns".into(), nonce: "n".into() };
        let describe =
            |c: &[Case]| c.iter().map(|c| format!("{} {}", c.what, c.request.describe())).collect::<Vec<_>>();
        let a = generate(3, 600, &names, &schemas());
        assert_eq!(describe(&a), describe(&generate(3, 600, &names, &schemas())));
        assert_ne!(describe(&a), describe(&generate(4, 600, &names, &schemas())));
        for class in ["upstream test", "schema", "query: list", "patch: json"] {
            assert!(a.iter().any(|c| c.class.starts_with(class)), "no {class} case in 600");
        }
        // Schema cases only for the kinds whose objects are ConfigMaps, the schema given.
        let configmap = |label: &str| kinds().iter().any(|t| t.label == label && t.valid["kind"] == "ConfigMap");
        let schema_kinds: Vec<&str> =
            a.iter().filter(|c| c.class.starts_with("schema")).map(|c| c.kind.as_str()).collect();
        assert!(!schema_kinds.is_empty() && schema_kinds.iter().all(|k| configmap(k)), "{schema_kinds:?}");
        // Every webhook configuration a case writes is removed after it.
        let hooks: Vec<&Case> = a.iter().filter(|c| WEBHOOK_KINDS.contains(&c.kind.as_str())).collect();
        assert!(!hooks.is_empty());
        assert!(hooks.iter().all(|c| c.teardown.len() == 1 && c.teardown[0].method == "DELETE"));
        assert!(a.iter().filter(|c| !WEBHOOK_KINDS.contains(&c.kind.as_str())).all(|c| c.teardown.is_empty()));
    }
}
