use super::*;
use proptest::prelude::*;
use serde_json::json;

fn config(spec: Value) -> CompiledConfig {
    CompiledConfig::from_json(&json!({
        "apiVersion": "sync.appuio.ch/v1alpha1",
        "kind": "SyncConfig",
        "metadata": {"name": "c", "namespace": "ops"},
        "spec": spec,
    }))
}

fn paths(c: &CompiledConfig) -> Vec<String> {
    c.errors().iter().map(|e| e.path().to_string()).collect()
}

fn cm(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"a": "b"}})
}

#[test]
fn a_good_spec_compiles() {
    let c = config(json!({
        "namespaceSelector": {"matchNames": ["team-.*"]},
        "syncItems": [cm("x-${PROJECT_NAME}")],
        "deleteItems": [{"apiVersion": "v1", "kind": "Secret", "name": "old"}],
    }));
    assert!(c.is_valid(), "{:?}", c.errors());
    let spec = c.spec.as_ref().unwrap();
    assert_eq!(spec.sync_items.len(), 1);
    assert_eq!(spec.sync_items[0].name, "x-${PROJECT_NAME}");
    assert_eq!(spec.delete_items[0].kind, "Secret");
    assert!(c.prune);
}

#[test]
fn validation_table() {
    let sel = json!({"matchNames": ["a"]});
    // (spec, expected error paths)
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (
            json!({"syncItems": [cm("x")]}),
            vec!["spec.namespaceSelector"],
        ),
        (
            json!({"namespaceSelector": {"ignoreNames": ["x"]}, "syncItems": [cm("x")]}),
            vec!["spec.namespaceSelector"],
        ),
        (json!({"namespaceSelector": sel}), vec!["spec"]),
        (
            json!({"namespaceSelector": {"matchNames": ["ok", "(", "x"], "ignoreNames": ["["]}, "syncItems": [cm("x")]}),
            vec![
                "spec.namespaceSelector.matchNames[1]",
                "spec.namespaceSelector.ignoreNames[0]",
            ],
        ),
        (
            json!({"namespaceSelector": sel, "syncItems": [{"kind": "ConfigMap", "metadata": {"name": "x"}}]}),
            vec!["spec.syncItems[0].apiVersion"],
        ),
        (
            json!({"namespaceSelector": sel, "syncItems": [{"apiVersion": "v1", "metadata": {"name": "x"}}]}),
            vec!["spec.syncItems[0].kind"],
        ),
        (
            json!({"namespaceSelector": sel, "syncItems": [{"apiVersion": "v1", "kind": "ConfigMap"}]}),
            vec!["spec.syncItems[0].metadata.name"],
        ),
        (
            json!({"namespaceSelector": sel, "syncItems": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "x-"}}]}),
            vec!["spec.syncItems[0].metadata.name"],
        ),
        (
            json!({"namespaceSelector": sel, "syncItems": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": 5}}]}),
            vec!["spec.syncItems[0].metadata.name"],
        ),
        (
            json!({"namespaceSelector": sel, "syncItems": [{"apiVersion": 1, "kind": "ConfigMap", "metadata": {"name": "x"}}]}),
            vec!["spec.syncItems[0].apiVersion"],
        ),
        (
            json!({"namespaceSelector": sel, "syncItems": [{"apiVersion": "a/b/c", "kind": "ConfigMap", "metadata": {"name": "x"}}]}),
            vec!["spec.syncItems[0].apiVersion"],
        ),
        (
            json!({"namespaceSelector": sel, "syncItems": [{"apiVersion": "v1", "kind": "Config Map", "metadata": {"name": "x"}}]}),
            vec!["spec.syncItems[0].kind"],
        ),
        (
            json!({"namespaceSelector": sel, "syncItems": [{"apiVersion": "v1", "kind": "${PROJECT_NAME}", "metadata": {"name": "x"}}]}),
            vec!["spec.syncItems[0].kind"],
        ),
        (
            json!({"namespaceSelector": sel, "syncItems": ["just a string"]}),
            vec!["spec.syncItems[0]"],
        ),
        (
            json!({"namespaceSelector": sel, "syncItems": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": "x"}]}),
            vec!["spec.syncItems[0].metadata"],
        ),
        (
            json!({"namespaceSelector": sel, "syncItems": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "labels": {"a": 1}}}]}),
            vec!["spec.syncItems[0].metadata.labels[\"a\"]"],
        ),
        (
            json!({"namespaceSelector": sel, "syncItems": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "annotations": ["a"]}}]}),
            vec!["spec.syncItems[0].metadata.annotations"],
        ),
        (
            json!({"namespaceSelector": sel, "syncItems": [cm("Bad_Name")]}),
            vec!["spec.syncItems[0].metadata.name"],
        ),
        (
            json!({"namespaceSelector": sel, "syncItems": [cm("${PROJECT_NAME}_x")]}),
            vec!["spec.syncItems[0].metadata.name"],
        ),
        (
            json!({"namespaceSelector": sel, "syncItems": [cm("x"), cm("y"), cm("x")]}),
            vec!["spec.syncItems[2]"],
        ),
        (
            json!({"namespaceSelector": sel, "deleteItems": [{"kind": "ConfigMap", "name": "x"}]}),
            vec!["spec.deleteItems[0].apiVersion"],
        ),
        (
            json!({"namespaceSelector": sel, "deleteItems": [{"apiVersion": "v1", "name": "x"}]}),
            vec!["spec.deleteItems[0].kind"],
        ),
        (
            json!({"namespaceSelector": sel, "deleteItems": [{"apiVersion": "v1", "kind": "ConfigMap"}]}),
            vec!["spec.deleteItems[0].name"],
        ),
        (
            json!({"namespaceSelector": sel, "deleteItems": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "a/b"}]}),
            vec!["spec.deleteItems[0].name"],
        ),
        (
            json!({"namespaceSelector": sel, "syncItems": [cm("x")], "deleteItems": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "x"}]}),
            vec!["spec.deleteItems[0]"],
        ),
        // Wrong types anywhere in the typed part of the spec.
        (
            json!({"namespaceSelector": {"matchNames": "a"}, "syncItems": [cm("x")]}),
            vec!["spec.namespaceSelector.matchNames"],
        ),
        (
            json!({"namespaceSelector": sel, "syncItems": {"a": 1}}),
            vec!["spec.syncItems"],
        ),
        (
            json!({"namespaceSelector": sel, "forceRecreate": "yes", "syncItems": [cm("x")]}),
            vec!["spec.forceRecreate"],
        ),
        (
            json!({"namespaceSelector": {"labelSelector": {"matchLabels": {"a": 1}}}, "syncItems": [cm("x")]}),
            vec!["spec.namespaceSelector.labelSelector.matchLabels.a"],
        ),
        (json!("not an object"), vec!["spec"]),
    ];
    for (i, (spec, want)) in cases.into_iter().enumerate() {
        let c = config(spec.clone());
        assert!(!c.is_valid(), "case {i} should be invalid: {spec}");
        assert_eq!(paths(&c), want, "case {i}: {spec} -> {:?}", c.errors());
    }
}

#[test]
fn every_problem_is_reported_at_once() {
    let c = config(json!({
        "namespaceSelector": {"matchNames": ["("]},
        "syncItems": [{"kind": "ConfigMap"}, cm("ok")],
        "deleteItems": [{}],
    }));
    assert_eq!(
        paths(&c),
        [
            "spec.namespaceSelector.matchNames[0]",
            "spec.syncItems[0].apiVersion",
            "spec.syncItems[0].metadata.name",
            "spec.deleteItems[0].apiVersion",
            "spec.deleteItems[0].kind",
            "spec.deleteItems[0].name",
        ]
    );
    let message = crate::error::join_errors(c.errors());
    assert!(
        message.contains("spec.namespaceSelector.matchNames[0]: invalid regular expression \"(\""),
        "{message}"
    );
}

#[test]
fn missing_metadata_name_and_spec_are_reported() {
    let c = CompiledConfig::from_json(&json!({"metadata": {"namespace": "ops"}}));
    assert_eq!(paths(&c), ["metadata.name", "spec"]);
    let c = CompiledConfig::from_json(&json!(42));
    assert_eq!(paths(&c), ["metadata.name", "spec"]);
    let c = CompiledConfig::from_json(&json!({
        "metadata": {"namespace": "ops"},
        "spec": {"namespaceSelector": {"matchNames": ["a"]}, "syncItems": [cm("x")]}
    }));
    assert_eq!(paths(&c), ["metadata.name"]);
}

#[test]
fn metadata_namespace_is_ignored_and_server_fields_dropped() {
    let c = config(json!({
        "namespaceSelector": {"matchNames": ["a"]},
        "syncItems": [{
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "x", "namespace": "elsewhere", "resourceVersion": "12", "uid": "u",
                         "creationTimestamp": "2020-01-01T00:00:00Z", "managedFields": [], "labels": {"a": "b"}},
            "status": {"phase": "x"},
            "data": {"k": "v"},
        }],
    }));
    let body = &c.spec.as_ref().unwrap().sync_items[0].body;
    assert_eq!(
        body,
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "labels": {"a": "b"}}, "data": {"k": "v"}})
    );
}

#[test]
fn prune_annotation_and_metadata_are_read() {
    let c = CompiledConfig::from_json(&json!({
        "metadata": {"name": "c", "namespace": "ops", "uid": "u1", "generation": 3,
                     "creationTimestamp": "2024-05-01T10:00:00Z",
                     "annotations": {PRUNE_ANNOTATION: "false"}},
        "spec": {"namespaceSelector": {"matchNames": ["a"]}, "syncItems": [cm("x")], "forceRecreate": true},
    }));
    assert!(c.is_valid());
    assert!(!c.prune);
    assert!(c.force_recreate);
    assert_eq!(c.generation, Some(3));
    assert_eq!(c.uid, "u1");
    assert_eq!(c.created, Some("2024-05-01T10:00:00Z".parse().unwrap()));
}

#[test]
fn typed_and_json_compilation_agree() {
    let v = json!({
        "apiVersion": "sync.appuio.ch/v1alpha1", "kind": "SyncConfig",
        "metadata": {"name": "c", "namespace": "ops", "creationTimestamp": "2024-05-01T10:00:00Z"},
        "spec": {"namespaceSelector": {"matchNames": ["a"]}, "syncItems": [cm("x")]},
    });
    let typed: SyncConfig = serde_json::from_value(v.clone()).unwrap();
    let a = CompiledConfig::compile(&typed);
    let b = CompiledConfig::from_json(&v);
    assert!(a.same_plan_input(&b));
    assert_eq!(a.created, b.created);
    assert_eq!(a.spec.unwrap().sync_items, b.spec.unwrap().sync_items);
}

#[test]
fn plan_input_ignores_unrelated_changes() {
    let spec = json!({"namespaceSelector": {"matchNames": ["a"]}, "syncItems": [cm("x")]});
    let a = config(spec.clone());
    let b = CompiledConfig::from_json(&json!({
        "metadata": {"name": "c", "namespace": "ops", "labels": {"new": "label"}},
        "spec": spec, "status": {"synchronizedItemCount": 4},
    }));
    assert!(a.same_plan_input(&b));
    let c = config(json!({"namespaceSelector": {"matchNames": ["b"]}, "syncItems": [cm("x")]}));
    assert!(!a.same_plan_input(&c));
    let explicit_default = config(json!({
        "namespaceSelector": {"matchNames": ["a"]}, "syncItems": [cm("x")], "forceRecreate": false,
    }));
    assert!(a.same_plan_input(&explicit_default));
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        "[a-z(\\[*.${}/ ]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 5, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map(
                prop_oneof![
                    Just("namespaceSelector".to_string()),
                    Just("matchNames".to_string()),
                    Just("ignoreNames".to_string()),
                    Just("labelSelector".to_string()),
                    Just("syncItems".to_string()),
                    Just("deleteItems".to_string()),
                    Just("apiVersion".to_string()),
                    Just("kind".to_string()),
                    Just("metadata".to_string()),
                    Just("name".to_string()),
                    Just("matchExpressions".to_string()),
                    Just("operator".to_string()),
                    "[a-z]{1,5}",
                ],
                inner,
                0..5,
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn malformed_specs_never_panic(spec in arb_json()) {
        let c = config(spec);
        // Either valid, or every error names a field under spec.
        for e in c.errors() {
            prop_assert!(e.path().starts_with("spec"), "{e}");
            prop_assert!(!e.to_string().is_empty());
        }
    }
}
