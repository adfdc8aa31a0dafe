//! The selector tests: parsing, canonical forms, matching and upstream's error texts.

use super::*;
use crate::validation::{is_valid_label_key, is_valid_label_value};
use std::collections::BTreeMap;

const NAME_RE_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const VALUE_RE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn sel(s: &str) -> LabelSelector {
    LabelSelector::parse(s).unwrap_or_else(|e| panic!("{s:?} should parse: {e}"))
}

fn label_err(s: &str) -> String {
    match LabelSelector::parse(s) {
        Ok(v) => panic!("{s:?} should fail, got {v}"),
        Err(e) => e.to_string(),
    }
}

fn field_err(s: &str) -> String {
    match FieldSelector::parse(s) {
        Ok(v) => panic!("{s:?} should fail, got {v}"),
        Err(e) => e.to_string(),
    }
}

// ----- label selector parsing and canonical form -----

#[test]
fn empty_label_selector_matches_everything() {
    for s in ["", "   ", "\t\n", "\0x=y"] {
        let ls = sel(s);
        assert!(ls.is_empty());
        assert_eq!(ls.to_string(), "");
        assert!(ls.matches(&labels(&[])));
        assert!(ls.matches(&labels(&[("a", "b")])));
    }
    assert!(LabelSelector::default().matches(&labels(&[("x", "y")])));
}

#[test]
fn canonical_string_form() {
    let cases = [
        ("x=a", "x=a"),
        ("x==a", "x==a"),
        ("x!=a", "x!=a"),
        ("x", "x"),
        ("!x", "!x"),
        ("x>1", "x>1"),
        ("x<10", "x<10"),
        ("x in (b,a)", "x in (a,b)"),
        ("x notin (b,a,b)", "x notin (a,b)"),
        ("x in (a)", "x in (a)"),
        ("tier in (a,b),app=x", "app=x,tier in (a,b)"),
        ("  x  in  ( a , b )  ,  y = c ", "x in (a,b),y=c"),
        ("z,!y,x=1", "x=1,!y,z"),
        ("x=", "x="),
        ("x=,y=b", "x=,y=b"),
        ("x in ()", "x in ()"),
        ("x in (,a)", "x in (,a)"),
        ("x in (a,)", "x in (,a)"),
        ("x in (a,,b)", "x in (,a,b)"),
        ("in in (in,notin)", "in in (in,notin)"),
        ("notin notin (in)", "notin notin (in)"),
        ("notin=notin", "notin=notin"),
        ("!in", "!in"),
        ("example.com/app=v", "example.com/app=v"),
        ("a=1,a=2", "a=1,a=2"),
        // A NUL byte reads as Go's end-of-input byte: it ends the token
        // list when met between tokens, and only splits an identifier.
        ("x=a\0", "x=a"),
        ("x=\0a", "x=a"),
        ("x=a,\0b", "b,x=a"),
    ];
    for (input, want) in cases {
        assert_eq!(sel(input).to_string(), want, "input {input:?}");
        // The canonical form re-parses to the same selector.
        assert_eq!(sel(want), sel(input), "round trip of {input:?}");
    }
}

#[test]
fn requirements_are_exposed() {
    let ls = sel("b in (y,x),a");
    let r = ls.requirements();
    assert_eq!(r.len(), 2);
    assert_eq!(r[0].key(), "a");
    assert_eq!(r[0].operator(), LabelOperator::Exists);
    assert!(r[0].values().is_empty());
    assert_eq!(r[1].key(), "b");
    assert_eq!(r[1].operator(), LabelOperator::In);
    assert_eq!(r[1].values(), ["x", "y"]);
    assert_eq!(LabelOperator::GreaterThan.as_str(), "gt");
    assert_eq!("a=b".parse::<LabelSelector>(), Ok(sel("a=b")));
}

// ----- label matching semantics -----

#[test]
fn label_operators_match() {
    let with = labels(&[("x", "a"), ("n", "5")]);
    let other = labels(&[("x", "b"), ("n", "abc")]);
    let without = labels(&[("y", "a")]);
    // (selector, with, other, without)
    let cases = [
        ("x=a", true, false, false),
        ("x==a", true, false, false),
        ("x!=a", false, true, true),
        ("x in (a,c)", true, false, false),
        ("x notin (a,c)", false, true, true),
        ("x", true, true, false),
        ("!x", false, false, true),
        ("n>4", true, false, false),
        ("n>5", false, false, false),
        ("n<6", true, false, false),
        ("n<5", false, false, false),
    ];
    for (s, a, b, c) in cases {
        let ls = sel(s);
        assert_eq!(ls.matches(&with), a, "{s} on {with:?}");
        assert_eq!(ls.matches(&other), b, "{s} on {other:?}");
        assert_eq!(ls.matches(&without), c, "{s} on {without:?}");
    }
}

#[test]
fn empty_values_and_missing_labels() {
    // x= selects objects whose label x exists and is empty.
    let ls = sel("x=");
    assert!(ls.matches(&labels(&[("x", "")])));
    assert!(!ls.matches(&labels(&[])));
    // x!= selects objects without x or with a non-empty x.
    let ls = sel("x!=");
    assert!(!ls.matches(&labels(&[("x", "")])));
    assert!(ls.matches(&labels(&[])));
    assert!(ls.matches(&labels(&[("x", "v")])));
    // in () is the set {""}.
    let ls = sel("x in ()");
    assert!(ls.matches(&labels(&[("x", "")])));
    assert!(!ls.matches(&labels(&[("x", "a")])));
    // notin matches a missing label.
    assert!(sel("x notin (a)").matches(&labels(&[])));
}

#[test]
fn gt_lt_compare_integers() {
    let ls = sel("n>10,m<20");
    assert!(ls.matches(&labels(&[("n", "11"), ("m", "19")])));
    assert!(ls.matches(&labels(&[("n", "+11"), ("m", "-19")])));
    assert!(!ls.matches(&labels(&[("n", "10"), ("m", "19")])));
    assert!(!ls.matches(&labels(&[("n", "11"), ("m", "20")])));
    assert!(!ls.matches(&labels(&[("n", "11")])));
    assert!(!ls.matches(&labels(&[("n", "1_1"), ("m", "1")])));
    assert!(!ls.matches(&labels(&[("n", "99999999999999999999"), ("m", "1")])));
    assert!(sel("n>5").matches(&labels(&[("n", "6")])));
    assert!(sel("n<0").matches(&labels(&[("n", "-6")])));
}

#[test]
fn multiple_requirements_are_anded() {
    let ls = sel("app=web,tier in (fe,be),!canary,env");
    assert!(ls.matches(&labels(&[("app", "web"), ("tier", "fe"), ("env", "p")])));
    assert!(!ls.matches(&labels(&[("app", "web"), ("tier", "fe")])));
    assert!(!ls.matches(&labels(&[("app", "web"), ("tier", "fe"), ("env", "p"), ("canary", "")])));
    assert!(!ls.matches(&labels(&[("app", "web"), ("tier", "db"), ("env", "p")])));
}

// ----- label parse errors -----

#[test]
fn label_syntax_errors() {
    let cases = [
        ("a=b=c", "found '=', expected: ',' or 'end of string'"),
        ("x=a,", "found '', expected: identifier after ','"),
        ("x=a,,y", "found ',', expected: identifier after ','"),
        (",x", "found ',', expected: !, identifier, or 'end of string'"),
        ("=x", "found '=', expected: !, identifier, or 'end of string'"),
        ("(x)", "found '(', expected: !, identifier, or 'end of string'"),
        ("!x=a", "found '=', expected: ',' or 'end of string'"),
        ("x in (a)b", "found 'b', expected: ',' or 'end of string'"),
        ("a!==b", "unable to parse requirement: found '=', expected: identifier"),
        ("x=(", "unable to parse requirement: found '(', expected: identifier"),
        ("x in a", "unable to parse requirement: found 'a' expected: '('"),
        ("x in", "unable to parse requirement: found '' expected: '('"),
        ("x in (", "unable to parse requirement: found '', expected: ',', ')' or identifier"),
        ("x in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier"),
        ("x in (a", "unable to parse requirement: found '', expected: ',' or ')'"),
        ("x in (a b)", "unable to parse requirement: found 'b', expected: ',' or ')'"),
        ("x in (a,=)", "unable to parse requirement: found '=', expected: ',', or identifier"),
        ("x y", "unable to parse requirement: found 'y', expected: in, notin, =, ==, !=, gt, lt"),
        ("x !y", "unable to parse requirement: found '!', expected: in, notin, =, ==, !=, gt, lt"),
        ("!", "unable to parse requirement: found '', expected: identifier"),
        ("!!x", "unable to parse requirement: found '!', expected: identifier"),
        ("!=x", "found '!=', expected: !, identifier, or 'end of string'"),
        ("x=a\0b", "found 'b', expected: ',' or 'end of string'"),
        ("x=a, \0b", "found '', expected: identifier after ','"),
    ];
    for (input, want) in cases {
        assert_eq!(label_err(input), want, "input {input:?}");
    }
    assert!(matches!(LabelSelector::parse("x in a"), Err(SelectorError::RequirementSyntax { .. })));
    assert!(matches!(LabelSelector::parse("x=a,"), Err(SelectorError::LabelSyntax { .. })));
}

#[test]
fn invalid_label_keys() {
    assert_eq!(
        label_err("-a"),
        format!("unable to parse requirement: <nil>: Invalid value: \"-a\": name part {NAME_RE_MSG}")
    );
    assert_eq!(
        LabelSelector::parse("-a=b"),
        Err(SelectorError::InvalidLabelKey { key: "-a".into(), detail: format!("name part {NAME_RE_MSG}") })
    );
    assert_eq!(
        label_err("/a"),
        "unable to parse requirement: <nil>: Invalid value: \"/a\": prefix part must be non-empty"
    );
    assert_eq!(
        label_err("a/"),
        format!(
            "unable to parse requirement: <nil>: Invalid value: \"a/\": name part must be non-empty; name part {NAME_RE_MSG}"
        )
    );
    assert_eq!(
        label_err("Ex.com/a"),
        "unable to parse requirement: <nil>: Invalid value: \"Ex.com/a\": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    );
    assert_eq!(
        label_err("a/b/c"),
        format!(
            "unable to parse requirement: <nil>: Invalid value: \"a/b/c\": a valid label key {NAME_RE_MSG} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        )
    );
    let long_name = "a".repeat(64);
    assert_eq!(
        label_err(&long_name),
        format!(
            "unable to parse requirement: <nil>: Invalid value: \"{long_name}\": name part must be no more than 63 bytes"
        )
    );
    let long_prefix = format!("{}/a", "b".repeat(254));
    assert!(label_err(&long_prefix).ends_with("prefix part must be no more than 253 bytes"));
    // Limits are inclusive.
    sel(&"a".repeat(63));
    sel(&format!("{}/{}", "b".repeat(253), "a".repeat(63)));
    sel("a.b-c/A_b.c-D9");
    // Non-ASCII and control characters are quoted like Go's %q.
    assert_eq!(
        label_err("é\u{1}"),
        format!("unable to parse requirement: <nil>: Invalid value: \"é\\x01\": name part {NAME_RE_MSG}")
    );
}

#[test]
fn invalid_label_values() {
    assert_eq!(
        label_err("x=-a"),
        format!("unable to parse requirement: values[0][x]: Invalid value: \"-a\": {VALUE_RE_MSG}")
    );
    assert_eq!(
        label_err("x in (ok,-b)"),
        format!("unable to parse requirement: values[0][x]: Invalid value: \"-b\": {VALUE_RE_MSG}")
    );
    let long = "v".repeat(64);
    assert_eq!(
        label_err(&format!("x={long}")),
        format!("unable to parse requirement: values[0][x]: Invalid value: \"{long}\": must be no more than 63 bytes")
    );
    sel(&format!("x={}", "v".repeat(63)));
    assert_eq!(
        label_err("x>a"),
        "unable to parse requirement: values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the value must be an integer"
    );
    assert_eq!(
        label_err("x<"),
        "unable to parse requirement: values[0]: Invalid value: \"\": for 'Gt', 'Lt' operators, the value must be an integer"
    );
    // A negative integer is an integer but not a valid label value.
    assert_eq!(
        label_err("x>-1"),
        format!("unable to parse requirement: values[0][x]: Invalid value: \"-1\": {VALUE_RE_MSG}")
    );
    // Both failures are aggregated.
    assert_eq!(
        label_err("x>-a"),
        format!(
            "unable to parse requirement: [values[0]: Invalid value: \"-a\": for 'Gt', 'Lt' operators, the value must be an integer, values[0][x]: Invalid value: \"-a\": {VALUE_RE_MSG}]"
        )
    );
    assert_eq!(
        label_err("x>99999999999999999999"),
        "unable to parse requirement: values[0]: Invalid value: \"99999999999999999999\": for 'Gt', 'Lt' operators, the value must be an integer"
    );
}

// ----- from_parts (metav1.LabelSelector) -----

fn expr(key: &str, op: &str, values: &[&str]) -> (String, String, Vec<String>) {
    (key.to_string(), op.to_string(), values.iter().map(|v| v.to_string()).collect())
}

#[test]
fn from_parts_builds_selector() {
    let ml = labels(&[("app", "x"), ("z", "1")]);
    let ls = LabelSelector::from_parts(
        &ml,
        &[
            expr("tier", "In", &["b", "a"]),
            expr("env", "NotIn", &["prod"]),
            expr("gpu", "Exists", &[]),
            expr("old", "DoesNotExist", &[]),
        ],
    )
    .unwrap();
    assert_eq!(ls.to_string(), "app=x,env notin (prod),gpu,!old,tier in (a,b),z=1");
    assert_eq!(sel(&ls.to_string()).to_string(), ls.to_string());
    let good = labels(&[("app", "x"), ("z", "1"), ("tier", "a"), ("gpu", "")]);
    assert!(ls.matches(&good));
    let mut bad = good.clone();
    bad.insert("old".into(), "y".into());
    assert!(!ls.matches(&bad));
    let mut bad = good.clone();
    bad.insert("env".into(), "prod".into());
    assert!(!ls.matches(&bad));
    let mut bad = good.clone();
    bad.remove("gpu");
    assert!(!ls.matches(&bad));

    let empty = LabelSelector::from_parts(&BTreeMap::new(), &[]).unwrap();
    assert!(empty.is_empty());
    assert!(empty.matches(&labels(&[("a", "b")])));
}

#[test]
fn from_parts_errors() {
    let none = BTreeMap::new();
    let err = |ml: &BTreeMap<String, String>, ex: &[(String, String, Vec<String>)]| {
        LabelSelector::from_parts(ml, ex).unwrap_err().to_string()
    };
    assert_eq!(err(&none, &[expr("a", "Foo", &[])]), "\"Foo\" is not a valid label selector operator");
    assert_eq!(err(&none, &[expr("a", "in", &["x"])]), "\"in\" is not a valid label selector operator");
    assert_eq!(
        err(&none, &[expr("a", "In", &[])]),
        "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"
    );
    assert_eq!(
        err(&none, &[expr("a", "Exists", &["x", "<y>"])]),
        format!(
            "[values: Invalid value: [\"x\",\"\\u003cy\\u003e\"]: values set must be empty for exists and does not exist, values[1][a]: Invalid value: \"<y>\": {VALUE_RE_MSG}]"
        )
    );
    assert_eq!(
        err(&none, &[expr("-a", "DoesNotExist", &[])]),
        format!("key: Invalid value: \"-a\": name part {NAME_RE_MSG}")
    );
    assert_eq!(err(&labels(&[("app", "a b")]), &[]), format!("values[0][app]: Invalid value: \"a b\": {VALUE_RE_MSG}"));
    assert_eq!(
        LabelSelector::from_parts(&none, &[expr("a", "NotIn", &[])]),
        Err(SelectorError::InvalidRequirement {
            from_parse: false,
            errors: vec![InvalidField {
                field: "values".into(),
                value: "null".into(),
                detail: "for 'in', 'notin' operators, values set can't be empty".into(),
            }],
        })
    );
}

#[test]
fn requirement_new_validates() {
    assert!(LabelRequirement::new("a", LabelOperator::Equals, vec![]).is_err());
    assert!(LabelRequirement::new("a", LabelOperator::GreaterThan, vec!["1".into(), "2".into()]).is_err());
    let r = LabelRequirement::new("a", LabelOperator::In, vec!["b".into(), "a".into()]).unwrap();
    assert_eq!(r.values(), ["b", "a"]);
    assert_eq!(r.to_string(), "a in (a,b)");
    assert!(is_valid_label_key("k8s.io/name"));
    assert!(!is_valid_label_key("K8s.io/name"));
    assert!(is_valid_label_value(""));
    assert!(!is_valid_label_value("a."));
}

// ----- field selectors -----

fn fsel(s: &str) -> FieldSelector {
    FieldSelector::parse(s).unwrap_or_else(|e| panic!("{s:?} should parse: {e}"))
}

fn freq(field: &str, op: FieldOp, value: &str) -> FieldRequirement {
    FieldRequirement { field: field.into(), op, value: value.into() }
}

#[test]
fn field_selector_parses_operators() {
    let fs = fsel("metadata.name=x,status.phase!=Running,spec.nodeName==n1");
    assert_eq!(
        fs.requirements,
        vec![
            freq("metadata.name", FieldOp::Equals, "x"),
            freq("spec.nodeName", FieldOp::Equals, "n1"),
            freq("status.phase", FieldOp::NotEquals, "Running"),
        ]
    );
    assert_eq!(fs.fields().collect::<Vec<_>>(), ["metadata.name", "spec.nodeName", "status.phase"]);
    assert_eq!(fs.to_string(), "metadata.name=x,spec.nodeName=n1,status.phase!=Running");
    assert_eq!(fsel("a=").requirements, vec![freq("a", FieldOp::Equals, "")]);
    assert_eq!(fsel("a!=").requirements, vec![freq("a", FieldOp::NotEquals, "")]);
    // The first operator wins; '!' alone belongs to the field name.
    assert_eq!(fsel("a!b=c").requirements, vec![freq("a!b", FieldOp::Equals, "c")]);
    assert_eq!("a=b".parse::<FieldSelector>(), Ok(fsel("a=b")));
}

#[test]
fn field_selector_empty_and_whitespace() {
    for s in ["", ",", ",,", "=", "==", "!=", "=,a=b"] {
        let fs = fsel(s);
        assert_eq!(fs.is_empty(), s != "=,a=b", "{s:?}");
    }
    assert!(fsel("").matches(|_| None));
    // Whitespace is data, as in apimachinery.
    assert_eq!(fsel(" metadata.name = x ").requirements, vec![freq(" metadata.name ", FieldOp::Equals, " x ")]);
}

#[test]
fn field_selector_escaping() {
    assert_eq!(fsel("a=x\\,y").requirements, vec![freq("a", FieldOp::Equals, "x,y")]);
    assert_eq!(fsel("a=x\\=y").requirements, vec![freq("a", FieldOp::Equals, "x=y")]);
    assert_eq!(fsel("a=x\\\\y").requirements, vec![freq("a", FieldOp::Equals, "x\\y")]);
    assert_eq!(
        fsel("a=x\\,y,b=z").requirements,
        vec![freq("a", FieldOp::Equals, "x,y"), freq("b", FieldOp::Equals, "z")]
    );
    let fs = fsel("a=\\\\\\,\\=");
    assert_eq!(fs.requirements[0].value, "\\,=");
    assert_eq!(fs.to_string(), "a=\\\\\\,\\=");
    assert_eq!(escape_field_value("a,b=c\\"), "a\\,b\\=c\\\\");
}

#[test]
fn field_selector_errors() {
    assert_eq!(field_err("a"), "invalid selector: 'a'; can't understand 'a'");
    assert_eq!(field_err("b=c,a"), "invalid selector: 'b=c,a'; can't understand 'a'");
    assert_eq!(field_err("a=b=c"), "invalid field selector: unescaped character in value: 61");
    assert_eq!(field_err("a==b=c"), "invalid field selector: unescaped character in value: 61");
    assert_eq!(field_err("a=b\\"), "invalid field selector: invalid escape sequence: \\");
    assert_eq!(field_err("a=b\\x"), "invalid field selector: invalid escape sequence: \\x");
    assert_eq!(field_err("a=\\é"), "invalid field selector: invalid escape sequence: \\é");
    assert_eq!(field_err("=x"), "field label not supported: ");
    assert_eq!(FieldSelector::parse("=x"), Err(SelectorError::EmptyFieldName { term: "=x".into() }));
    // Syntax errors in other terms are reported before the empty field.
    assert_eq!(field_err("=x,zz"), "invalid selector: '=x,zz'; can't understand 'zz'");
    assert_eq!(FieldSelector::parse("a=,b=c\\"), Err(SelectorError::InvalidFieldEscape { sequence: "\\".into() }));
    assert_eq!(
        FieldSelector::parse("a=b,c"),
        Err(SelectorError::InvalidFieldTerm { selector: "a=b,c".into(), term: "c".into() })
    );
}

#[test]
fn field_selector_matching() {
    let obj = |f: &str| match f {
        "metadata.name" => Some("web".to_string()),
        "status.phase" => Some("Running".to_string()),
        _ => None,
    };
    assert!(fsel("metadata.name=web").matches(obj));
    assert!(fsel("metadata.name==web").matches(obj));
    assert!(!fsel("metadata.name=db").matches(obj));
    assert!(fsel("metadata.name!=db").matches(obj));
    assert!(!fsel("metadata.name!=web").matches(obj));
    assert!(fsel("metadata.name=web,status.phase!=Pending").matches(obj));
    assert!(!fsel("metadata.name=web,status.phase=Pending").matches(obj));
    // A missing field reads as "".
    assert!(fsel("spec.nodeName=").matches(obj));
    assert!(!fsel("spec.nodeName!=").matches(obj));
    assert!(fsel("spec.nodeName!=n1").matches(obj));
    assert!(!fsel("spec.nodeName=n1").matches(obj));
}

// ----- fuzzing -----

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const PIECES: &[&str] = &[
    "a", "b", "x", "k8s.io/", "/", "in", "notin", "(", ")", ",", "=", "==", "!=", "!", ">", "<", " ", "\t", "1", "-1",
    "+2", "-", "_", ".", "\0", "\\", "\\,", "\\=", "é", "\u{2028}", "Z9",
];

fn random_input(rng: &mut XorShift) -> String {
    if rng.below(4) == 0 {
        // Raw random bytes.
        let len = rng.below(24);
        let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        return String::from_utf8_lossy(&bytes).into_owned();
    }
    let n = rng.below(12);
    (0..n).map(|_| PIECES[rng.below(PIECES.len())]).collect()
}

#[test]
fn fuzz_never_panics_and_round_trips() {
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    let probes =
        [labels(&[]), labels(&[("a", "1"), ("b", ""), ("x", "in")]), labels(&[("x", "-1"), ("k8s.io/a", "b")])];
    let (mut label_ok, mut field_ok) = (0, 0);
    for _ in 0..30_000 {
        let input = random_input(&mut rng);
        match LabelSelector::parse(&input) {
            Ok(ls) => {
                label_ok += 1;
                for p in &probes {
                    let _ = ls.matches(p);
                }
                let text = ls.to_string();
                let again = LabelSelector::parse(&text).unwrap_or_else(|e| panic!("{input:?} -> {text:?} fails: {e}"));
                assert_eq!(again, ls, "{input:?} -> {text:?}");
            }
            Err(e) => assert!(!e.to_string().is_empty()),
        }
        match FieldSelector::parse(&input) {
            Ok(fs) => {
                field_ok += 1;
                let _ = fs.matches(|f| (f.len() % 2 == 0).then(|| f.to_string()));
                let text = fs.to_string();
                let again = FieldSelector::parse(&text).unwrap_or_else(|e| panic!("{input:?} -> {text:?} fails: {e}"));
                let key = |r: &FieldRequirement| (r.field.clone(), r.op == FieldOp::Equals, r.value.clone());
                let mut a: Vec<_> = again.requirements.iter().map(key).collect();
                let mut b: Vec<_> = fs.requirements.iter().map(key).collect();
                a.sort();
                b.sort();
                assert_eq!(a, b, "{input:?} -> {text:?}");
            }
            Err(e) => assert!(!e.to_string().is_empty()),
        }
    }
    // The generator must exercise both success and failure paths.
    assert!(label_ok > 1_000, "only {label_ok} label selectors parsed");
    assert!(field_ok > 1_000, "only {field_ok} field selectors parsed");
}
