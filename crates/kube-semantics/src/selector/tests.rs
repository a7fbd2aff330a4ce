use super::*;
use proptest::prelude::*;
use serde_json::json;

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn err(s: &str) -> String {
    parse_label_selector(s).unwrap_err().to_string()
}

#[test]
fn equality_and_set_based_requirements_match() {
    let l = labels(&[("app", "web"), ("tier", "front"), ("n", "7")]);
    let cases = [
        ("", true),
        ("app=web", true),
        ("app==web", true),
        ("app!=web", false),
        ("app!=db", true),
        ("missing!=x", true),
        ("app in (web,db)", true),
        ("app in (db)", false),
        ("app notin (db)", true),
        ("missing notin (db)", true),
        ("app notin (web)", false),
        ("app", true),
        ("missing", false),
        ("!missing", true),
        ("!app", false),
        ("app=web,tier=front", true),
        ("app=web,tier=back", false),
        ("  app = web , tier in ( front , back )  ", true),
        ("n>5", true),
        ("n<5", false),
        ("app>5", false),
        ("missing=", false),
    ];
    for (sel, want) in cases {
        let s = parse_label_selector(sel).unwrap();
        assert_eq!(s.matches(&l), want, "{sel:?}");
    }
}

#[test]
fn empty_values() {
    let s = parse_label_selector("a=").unwrap();
    assert!(s.matches(&labels(&[("a", "")])));
    assert!(!s.matches(&labels(&[("a", "x")])));
    let s = parse_label_selector("x in (foo,,baz),y,z notin ()").unwrap();
    assert_eq!(s.requirements()[0].values(), ["", "baz", "foo"]);
    assert_eq!(s.requirements()[2].values(), [""]);
}

#[test]
fn in_and_notin_are_values_inside_parentheses() {
    let s = parse_label_selector("k in (in,notin)").unwrap();
    assert!(s.matches(&labels(&[("k", "notin")])));
}

#[test]
fn json_labels_match_without_copying() {
    let s = parse_label_selector("app=web,!gone").unwrap();
    assert!(s.matches_json(Some(&json!({"app": "web"}))));
    assert!(!s.matches_json(Some(&json!({"app": "web", "gone": "1"}))));
    assert!(!s.matches_json(None));
    assert!(!s.matches_json(Some(&json!({"app": 1}))));
    assert!(s.matches_object(&json!({"metadata": {"labels": {"app": "web"}}})));
    assert!(
        parse_label_selector("!x")
            .unwrap()
            .matches_object(&json!("garbage"))
    );
}

#[test]
fn display_is_canonical() {
    let s = parse_label_selector("z in (b,a), a!=1 ,!m,k").unwrap();
    assert_eq!(s.to_string(), "a!=1,k,!m,z in (a,b)");
}

#[test]
fn syntax_errors_use_apimachinery_wording() {
    assert_eq!(err("a=b c"), "found 'c', expected: ',' or 'end of string'");
    assert_eq!(
        err("component not in (x)"),
        "unable to parse requirement: found 'not', expected: in, notin, =, ==, !=, gt, lt"
    );
    assert_eq!(err("a,"), "found '', expected: identifier after ','");
    assert_eq!(
        err(",a"),
        "found ',', expected: !, identifier, or 'end of string'"
    );
    assert_eq!(
        err("a in x"),
        "unable to parse requirement: found 'x' expected: '('"
    );
    assert_eq!(
        err("a in (x y)"),
        "unable to parse requirement: found 'y', expected: ',' or ')'"
    );
    assert_eq!(
        err("a in (="),
        "unable to parse requirement: found '=', expected: ',', ')' or identifier"
    );
    assert_eq!(
        err("!"),
        "unable to parse requirement: found '', expected: identifier"
    );
    assert_eq!(
        err("a=(b"),
        "unable to parse requirement: found '(', expected: identifier"
    );
    assert_eq!(err("!a=b"), "found '=', expected: ',' or 'end of string'");
}

#[test]
fn invalid_keys_and_values_use_field_error_wording() {
    assert_eq!(
        err("app:monolith"),
        "unable to parse requirement: <nil>: Invalid value: \"app:monolith\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
    );
    assert_eq!(err("a=b!c"), "found '!', expected: ',' or 'end of string'");
    let e = err("a=-x");
    assert!(
        e.starts_with("unable to parse requirement: values[0][a]: Invalid value: \"-x\": a valid label must be an empty string"),
        "{e}"
    );
    let e = err("a in (-x,_y)");
    assert!(
        e.starts_with("unable to parse requirement: [values[0][a]: Invalid value: \"-x\""),
        "{e}"
    );
    let e = err("a>b");
    assert!(e.contains("values[0]: Invalid value: \"b\": for 'Gt', 'Lt' operators, the value must be an integer"), "{e}");
}

#[test]
fn field_selectors_parse_and_match() {
    let obj = json!({
        "metadata": {"name": "web", "namespace": "prod"},
        "spec": {"nodeName": "n1", "replicas": 3, "paused": false},
        "status": {"phase": "Running"},
        "type": "Opaque"
    });
    let cases = [
        ("", true),
        ("metadata.name=web", true),
        ("metadata.name==web", true),
        ("metadata.name!=web", false),
        ("metadata.namespace=prod,status.phase=Running", true),
        ("metadata.namespace=prod,status.phase=Pending", false),
        ("spec.nodeName=", false),
        ("spec.missing=", true),
        ("spec.missing!=", false),
        ("spec.replicas=3", true),
        ("spec.paused=false", true),
        ("type=Opaque", true),
        ("metadata.name=!x", false),
    ];
    for (sel, want) in cases {
        let s = parse_field_selector(sel).unwrap();
        assert_eq!(s.matches(&obj), want, "{sel:?}");
    }
    let s = parse_field_selector("metadata.name=a\\,b\\=c\\\\").unwrap();
    assert_eq!(s.requirements()[0].value, "a,b=c\\");
    assert!(s.matches(&json!({"metadata": {"name": "a,b=c\\"}})));
    assert_eq!(s.to_string(), "metadata.name=a\\,b\\=c\\\\");
    assert_eq!(s.exact_match("metadata.name"), Some("a,b=c\\"));
}

#[test]
fn field_selector_errors() {
    let e = |s: &str| parse_field_selector(s).unwrap_err().to_string();
    assert_eq!(
        e("status.state"),
        "invalid selector: 'status.state'; can't understand 'status.state'"
    );
    assert_eq!(
        e("a=b,c"),
        "invalid selector: 'a=b,c'; can't understand 'c'"
    );
    assert_eq!(
        e("a=b=c"),
        "invalid field selector: unescaped character in value: 61"
    );
    assert_eq!(
        e("a=b\\x"),
        "invalid field selector: invalid escape sequence: \\x"
    );
    assert_eq!(
        e("a=b\\"),
        "invalid field selector: invalid escape sequence: \\"
    );
}

#[test]
fn unsupported_fields_are_reported_in_both_wordings() {
    let s = parse_field_selector("foo.bar=baz").unwrap();
    assert_eq!(
        s.check_fields(&["metadata.name", "metadata.namespace"], false)
            .unwrap_err()
            .to_string(),
        "\"foo.bar\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
    );
    assert_eq!(
        s.check_fields(&["metadata.name"], true)
            .unwrap_err()
            .to_string(),
        "field label not supported: foo.bar"
    );
    assert!(
        parse_field_selector("metadata.name=x")
            .unwrap()
            .check_fields(&["metadata.name"], true)
            .is_ok()
    );
}

fn arb_labels() -> impl Strategy<Value = BTreeMap<String, String>> {
    proptest::collection::btree_map("[a-c]", "[x-z]{0,2}", 0..4)
}

proptest! {
    #[test]
    fn label_parser_never_panics(s in any::<String>()) {
        let _ = parse_label_selector(&s);
    }

    #[test]
    fn label_parser_never_panics_on_selector_like_text(s in "[a-c!=(), inotx<>\\-\u{0}]{0,30}") {
        if let Ok(sel) = parse_label_selector(&s) {
            // A parsed selector prints to text that parses to the same selector.
            let again = parse_label_selector(&sel.to_string()).unwrap();
            prop_assert_eq!(again, sel);
        }
    }

    #[test]
    fn field_parser_never_panics(s in any::<String>(), obj in proptest::arbitrary::any::<u8>()) {
        if let Ok(sel) = parse_field_selector(&s) {
            let _ = sel.matches(&json!({"a": obj}));
            let _ = sel.to_string();
        }
    }

    #[test]
    fn equality_selector_from_a_set_matches_exactly_its_supersets(
        want in arb_labels(), have in arb_labels()
    ) {
        let text: Vec<String> = want.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let sel = parse_label_selector(&text.join(",")).unwrap();
        let expected = want.iter().all(|(k, v)| have.get(k) == Some(v));
        prop_assert_eq!(sel.matches(&have), expected);
        let as_json = serde_json::to_value(&have).unwrap();
        prop_assert_eq!(sel.matches_json(Some(&as_json)), expected);
    }

    #[test]
    fn notin_is_the_negation_of_in(key in "[a-c]", vals in proptest::collection::vec("[x-z]", 1..3), have in arb_labels()) {
        let inn = parse_label_selector(&format!("{key} in ({})", vals.join(","))).unwrap();
        let notin = parse_label_selector(&format!("{key} notin ({})", vals.join(","))).unwrap();
        // `in` needs the key; `notin` holds when it is absent.
        prop_assert_eq!(inn.matches(&have), !notin.matches(&have));
    }

    #[test]
    fn field_value_escaping_round_trips(v in any::<String>()) {
        let sel = parse_field_selector(&format!("metadata.name={}", escape_field_value(&v))).unwrap();
        let obj = json!({"metadata": {"name": v}});
        prop_assert!(sel.matches(&obj));
    }
}
