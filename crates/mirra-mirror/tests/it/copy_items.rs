//! copyItems in the pure crate: validation of the item, the copy a source
//! makes, and the planner's rules for them (a change of the source is one
//! apply per copy; a missing or unreadable source keeps its copies; a copy
//! onto its own source is refused), driven through the simulated store.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests may unwrap: a panic is a test failure.

use crate::common;

use common::{Store, TestNs, config};
use mirra_mirror::{
    CompiledConfig, CopySource, DeleteCause, ItemRef, NamespacePlan, ObjectRef, Op, OutcomeState,
    SourceState, plan_namespace, render,
};
use proptest::prelude::*;
use serde_json::{Value, json};

fn plan(ns: &TestNs, configs: &[CompiledConfig], store: &Store) -> NamespacePlan {
    plan_namespace(Some(&ns.view()), configs, &store.view(&ns.name), &|_| false)
}

fn settle(namespaces: &[TestNs], configs: &[CompiledConfig], store: &mut Store) -> usize {
    let mut writes = 0;
    for _ in 0..4 {
        let mut any = false;
        for ns in namespaces {
            for op in &plan(ns, configs, store).ops {
                store.apply(op);
                writes += 1;
                any = true;
            }
        }
        if !any {
            return writes;
        }
    }
    panic!("the plan did not settle");
}

fn tls_source(cert: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {
            "name": "wildcard-tls", "namespace": "cert-manager", "uid": "src-1",
            "resourceVersion": "7",
            "labels": {"team": "platform", "internal": "yes"},
            "annotations": {"cert-manager.io/issuer": "le", "secret": "no"},
        },
        "type": "kubernetes.io/tls",
        "data": {"tls.crt": cert, "tls.key": "a2V5"},
    })
}

fn copy_spec(names: &[&str], item: Value) -> Value {
    json!({"namespaceSelector": {"matchNames": names}, "copyItems": [item]})
}

fn tls_item() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Secret", "namespace": "cert-manager",
        "name": "wildcard-tls", "labels": ["team"], "annotations": ["cert-manager.io/issuer"],
    })
}

/// A SyncConfig with `spec`, its sources resolved against `source` (the
/// only object there is), as the controller resolves them.
fn resolved(spec: Value, source: Option<&Value>) -> CompiledConfig {
    let mut c = config("tls", 1, spec);
    c.resolve_sources(&|r: &ObjectRef| match source {
        Some(s)
            if s["metadata"]["name"] == r.name.as_str()
                && s["metadata"]["namespace"] == r.namespace.as_str() =>
        {
            SourceState::Found(s)
        }
        _ => SourceState::Missing,
    });
    c
}

fn errors_of(spec: Value) -> Vec<String> {
    config("c", 1, spec)
        .errors()
        .iter()
        .map(|e| e.to_string())
        .collect()
}

#[test]
fn a_copy_carries_the_sources_data_type_and_chosen_metadata_only() {
    let c = resolved(copy_spec(&["a"], tls_item()), Some(&tls_source("Y2VydA==")));
    let spec = c.spec.as_ref().unwrap();
    let CopySource::Copy(t) = &spec.copy_items[0].resolved else {
        panic!("not resolved: {:?}", spec.copy_items[0].resolved);
    };
    assert_eq!(
        t.body,
        json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {
                "name": "wildcard-tls",
                "labels": {"team": "platform"},
                "annotations": {"cert-manager.io/issuer": "le"},
            },
            "type": "kubernetes.io/tls",
            "data": {"tls.crt": "Y2VydA==", "tls.key": "a2V5"},
        })
    );
    assert_eq!(t.item_ref(), ItemRef::Copy(0));

    let p = plan(&TestNs::new("a"), &[c], &Store::default());
    let [Op::Apply { target, body, .. }] = p.ops.as_slice() else {
        panic!("{:?}", p.ops);
    };
    assert_eq!(
        (target.namespace.as_str(), target.name.as_str()),
        ("a", "wildcard-tls")
    );
    assert_eq!(body["metadata"]["namespace"], "a");
    assert_eq!(
        body["metadata"]["labels"][mirra_mirror::MANAGED_BY_LABEL],
        "mirra"
    );
    assert_eq!(
        body["metadata"]["annotations"][mirra_mirror::OWNER_ANNOTATION],
        "ops/tls"
    );
    assert!(body["metadata"]["uid"].is_null() && body["metadata"]["resourceVersion"].is_null());
}

#[test]
fn configmaps_copy_data_and_binary_data_and_other_kinds_their_spec() {
    let cm = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "ca", "namespace": "src"},
        "data": {"ca.crt": "pem"}, "binaryData": {"der": "AAE="}, "immutable": true,
    });
    let item = json!({"apiVersion": "v1", "kind": "ConfigMap", "namespace": "src", "name": "ca",
                      "targetName": "ca-${PROJECT_NAME}"});
    let c = resolved(copy_spec(&["a"], item), Some(&cm));
    let CopySource::Copy(t) = &c.spec.as_ref().unwrap().copy_items[0].resolved else {
        panic!("not resolved");
    };
    assert_eq!(
        t.body,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ca-${PROJECT_NAME}"},
               "data": {"ca.crt": "pem"}, "binaryData": {"der": "AAE="}})
    );
    let p = plan(&TestNs::new("a"), &[c], &Store::default());
    assert_eq!(
        p.ops[0].target().name,
        "ca-a",
        "the target name is templated"
    );

    let policy = json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": {"name": "deny", "namespace": "src"},
        "spec": {"podSelector": {}, "policyTypes": ["Ingress"]},
        "status": {"x": 1},
    });
    let item = json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                      "namespace": "src", "name": "deny"});
    let c = resolved(copy_spec(&["a"], item.clone()), Some(&policy));
    let CopySource::Copy(t) = &c.spec.as_ref().unwrap().copy_items[0].resolved else {
        panic!("not resolved");
    };
    assert_eq!(t.body["spec"], policy["spec"]);
    assert!(t.body.get("status").is_none());

    let mut no_spec = policy.clone();
    no_spec.as_object_mut().unwrap().remove("spec");
    let c = resolved(copy_spec(&["a"], item), Some(&no_spec));
    let CopySource::Held(reason) = &c.spec.as_ref().unwrap().copy_items[0].resolved else {
        panic!("resolved without a spec");
    };
    assert!(reason.contains("has no spec to copy"), "{reason}");
}

#[test]
fn a_change_of_the_source_is_one_apply_per_copy_and_nothing_else() {
    let namespaces: Vec<TestNs> = (0..5).map(|i| TestNs::new(&format!("t{i}"))).collect();
    let names: Vec<String> = namespaces.iter().map(|n| n.name.clone()).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut store = Store::default();
    let v1 = resolved(copy_spec(&names, tls_item()), Some(&tls_source("djE=")));
    assert_eq!(
        settle(&namespaces, std::slice::from_ref(&v1), &mut store),
        5
    );
    assert_eq!(
        settle(&namespaces, &[v1], &mut store),
        0,
        "in step: no write"
    );

    // A renewed certificate: the SyncConfig is the same, its source is not.
    let v2 = resolved(copy_spec(&names, tls_item()), Some(&tls_source("djI=")));
    let before = store.applies;
    assert_eq!(
        settle(&namespaces, std::slice::from_ref(&v2), &mut store),
        5
    );
    assert_eq!(store.applies - before, 5);
    assert_eq!(store.deletes, 0);
    for ns in &names {
        let copy = store
            .objects
            .iter()
            .find(|o| o.namespace == *ns && o.name == "wildcard-tls")
            .unwrap();
        assert_eq!(copy.body()["data"]["tls.crt"], "djI=");
    }
    // An edit of the source outside what is copied changes nothing.
    let mut relabelled = tls_source("djI=");
    relabelled["metadata"]["labels"]["internal"] = json!("changed");
    relabelled["metadata"]["resourceVersion"] = json!("8");
    let v3 = resolved(copy_spec(&names, tls_item()), Some(&relabelled));
    assert!(v3.same_plan_input(&v2), "nothing copied changed");
    assert_eq!(settle(&namespaces, &[v3], &mut store), 0);
}

#[test]
fn a_missing_or_unreadable_source_keeps_its_copies_and_says_why() {
    let ns = TestNs::new("a");
    let mut store = Store::default();
    let found = resolved(copy_spec(&["a"], tls_item()), Some(&tls_source("djE=")));
    settle(std::slice::from_ref(&ns), &[found], &mut store);
    assert_eq!(store.objects.len(), 1);

    let missing = resolved(copy_spec(&["a"], tls_item()), None);
    let p = plan(&ns, &[missing], &store);
    assert!(p.ops.is_empty(), "nothing written or pruned: {:?}", p.ops);
    let [o] = p.outcomes.as_slice() else {
        panic!("{:?}", p.outcomes);
    };
    assert_eq!(o.item, ItemRef::Copy(0));
    let OutcomeState::Failed { reason } = &o.state else {
        panic!("{:?}", o.state);
    };
    assert_eq!(
        reason,
        "the source Secret cert-manager/wildcard-tls does not exist; its copies are kept as they are"
    );

    let mut refused = config("tls", 1, copy_spec(&["a"], tls_item()));
    refused.resolve_sources(&|_| SourceState::Unreadable("403 Forbidden"));
    let p = plan(&ns, &[refused], &store);
    assert!(p.ops.is_empty());
    assert!(
        matches!(&p.outcomes[0].state, OutcomeState::Failed { reason } if reason.contains("cannot be read (403 Forbidden)")),
        "{:?}",
        p.outcomes
    );

    // Before its source is read, the item waits: no write, no failure.
    let unread = config("tls", 1, copy_spec(&["a"], tls_item()));
    let p = plan(&ns, &[unread], &store);
    assert!(p.ops.is_empty());
    assert_eq!(p.outcomes[0].state, OutcomeState::Pending);

    // The item removed from the SyncConfig: its copy is pruned as usual.
    let other = config(
        "tls",
        1,
        json!({"namespaceSelector": {"matchNames": ["a"]}, "deleteItems": [
            {"apiVersion": "v1", "kind": "Secret", "name": "unrelated"}]}),
    );
    let p = plan(&ns, &[other], &store);
    assert!(
        p.ops
            .iter()
            .any(|op| matches!(op, Op::Delete { cause: DeleteCause::Pruned, target, .. } if target.name == "wildcard-tls")),
        "{:?}",
        p.ops
    );
}

#[test]
fn a_copy_onto_its_own_source_is_refused_in_that_namespace_only() {
    let mut store = Store::default();
    let source = tls_source("djE=");
    store.insert(mirra_mirror::ObservedObject::from_json(source.clone()).unwrap());
    let c = resolved(copy_spec(&["cert-manager", "a"], tls_item()), Some(&source));
    let home = plan(
        &TestNs::new("cert-manager"),
        std::slice::from_ref(&c),
        &store,
    );
    assert!(
        home.ops.is_empty(),
        "the source is never written: {:?}",
        home.ops
    );
    assert!(
        matches!(&home.outcomes[0].state, OutcomeState::Failed { reason } if reason.contains("would be its source cert-manager/wildcard-tls itself")),
        "{:?}",
        home.outcomes
    );
    let elsewhere = plan(&TestNs::new("a"), std::slice::from_ref(&c), &store);
    assert_eq!(elsewhere.ops.len(), 1);

    // With a targetName, a copy may sit beside its source.
    let mut item = tls_item();
    item["targetName"] = json!("tls-copy");
    let c = resolved(copy_spec(&["cert-manager"], item), Some(&source));
    let p = plan(&TestNs::new("cert-manager"), &[c], &store);
    assert_eq!(p.ops.len(), 1);
    assert_eq!(p.ops[0].target().name, "tls-copy");
}

#[test]
fn a_service_account_token_source_is_never_copied() {
    let mut token = tls_source("djE=");
    token["type"] = json!("kubernetes.io/service-account-token");
    let c = resolved(copy_spec(&["a"], tls_item()), Some(&token));
    let p = plan(&TestNs::new("a"), &[c], &Store::default());
    assert!(p.ops.is_empty());
    assert!(
        matches!(&p.outcomes[0].state, OutcomeState::Failed { reason } if reason.contains("never copied"))
    );
}

#[test]
fn malformed_copy_items_are_reported_by_field() {
    let cases = [
        (
            json!({"kind": "Secret", "namespace": "n", "name": "s"}),
            "spec.copyItems[0].apiVersion: is required",
        ),
        (
            json!({"apiVersion": "v1", "namespace": "n", "name": "s"}),
            "spec.copyItems[0].kind: is required",
        ),
        (
            json!({"apiVersion": "v1", "kind": "Secret", "name": "s"}),
            "spec.copyItems[0].namespace: is required",
        ),
        (
            json!({"apiVersion": "v1", "kind": "Secret", "namespace": "n"}),
            "spec.copyItems[0].name: is required",
        ),
        (
            json!({"apiVersion": "v1", "kind": "Secret", "namespace": "${PROJECT_NAME}", "name": "s"}),
            "spec.copyItems[0].namespace: must not contain ${PROJECT_NAME}",
        ),
        (
            json!({"apiVersion": "v1", "kind": "Secret", "namespace": "n", "name": "s-${PROJECT_NAME}"}),
            "spec.copyItems[0].name: must not contain ${PROJECT_NAME}",
        ),
        (
            json!({"apiVersion": "v1", "kind": "Secret", "namespace": "a.b", "name": "s"}),
            "spec.copyItems[0].namespace",
        ),
        (
            json!({"apiVersion": "v1", "kind": "Secret", "namespace": "n", "name": "Bad_Name"}),
            "spec.copyItems[0].name",
        ),
        (
            json!({"apiVersion": "v1", "kind": "Secret", "namespace": "n", "name": "s", "targetName": ""}),
            "spec.copyItems[0].targetName: must not be empty",
        ),
        (
            json!({"apiVersion": "v1", "kind": "Secret", "namespace": "n", "name": "s", "targetName": "UP"}),
            "spec.copyItems[0].targetName",
        ),
        (
            json!({"apiVersion": "v1", "kind": "Secret", "namespace": "n", "name": "s", "labels": [""]}),
            "spec.copyItems[0].labels[0]: must be a key",
        ),
        (
            json!({"apiVersion": "v1", "kind": "Secret", "namespace": "n", "name": "s", "labels": "team"}),
            "spec.copyItems[0].labels",
        ),
        (json!("a string"), "spec.copyItems[0]"),
        (
            json!({"apiVersion": "v/1/x", "kind": "Secret", "namespace": "n", "name": "s"}),
            "spec.copyItems[0].apiVersion",
        ),
    ];
    for (item, want) in cases {
        let errors = errors_of(copy_spec(&["a"], item.clone()));
        assert!(
            errors.iter().any(|e| e.contains(want)),
            "{item}: {errors:?} lacks {want:?}"
        );
    }
    // The same copy twice, or a copy and a syncItem or deleteItem of one
    // object: contradictions.
    let item = json!({"apiVersion": "v1", "kind": "Secret", "namespace": "n", "name": "s"});
    let twice = json!({"namespaceSelector": {"matchNames": ["a"]}, "copyItems": [item, item]});
    assert!(
        errors_of(twice)
            .iter()
            .any(|e| e.contains("names the same copy as spec.copyItems[0]"))
    );
    let with_sync = json!({"namespaceSelector": {"matchNames": ["a"]},
        "syncItems": [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}],
        "copyItems": [item]});
    assert!(
        errors_of(with_sync)
            .iter()
            .any(|e| e.contains("names the same copy as spec.syncItems[0]"))
    );
    let with_delete = json!({"namespaceSelector": {"matchNames": ["a"]},
        "deleteItems": [{"apiVersion": "v1", "kind": "Secret", "name": "s"}], "copyItems": [item]});
    assert!(
        errors_of(with_delete)
            .iter()
            .any(|e| e.contains("deletes the object that spec.copyItems[0] syncs"))
    );
    // copyItems alone make a spec.
    assert!(errors_of(copy_spec(&["a"], item)).is_empty());
}

#[test]
fn render_takes_sources_from_the_input_and_fails_without_them() {
    let sc: mirra_mirror::SyncConfig = serde_json::from_value(json!({
        "apiVersion": "sync.appuio.ch/v1alpha1", "kind": "SyncConfig",
        "metadata": {"name": "tls", "namespace": "ops"},
        "spec": copy_spec(&["a"], tls_item()),
    }))
    .unwrap();
    let ns: k8s_openapi::api::core::v1::Namespace =
        serde_json::from_value(json!({"metadata": {"name": "a"}})).unwrap();
    let out = render(
        std::slice::from_ref(&sc),
        std::slice::from_ref(&ns),
        &[tls_source("djE=")],
    )
    .unwrap();
    assert!(out.contains("tls.crt: djE="), "{out}");
    assert!(out.contains("namespace: a"), "{out}");
    let err = render(&[sc], &[ns], &[]).unwrap_err().to_string();
    assert!(err.contains("does not exist"), "{err}");
}

proptest! {
    /// Whatever the source holds, resolving never panics, and a source
    /// that resolves to a copy plans to exactly one write per namespace,
    /// then none.
    #[test]
    fn any_source_resolves_without_panic_and_settles(
        data in proptest::collection::btree_map("[a-z.]{1,8}", "[A-Za-z0-9+/=]{0,12}", 0..4),
        kind in prop_oneof![Just("Secret"), Just("ConfigMap"), Just("Widget")],
        junk in prop_oneof![Just(json!(null)), Just(json!(3)), Just(json!("x")), Just(json!([1]))],
    ) {
        let source = json!({
            "apiVersion": "v1", "kind": kind,
            "metadata": {"name": "s", "namespace": "n", "labels": junk.clone()},
            "data": data, "spec": junk,
        });
        let item = json!({"apiVersion": "v1", "kind": kind, "namespace": "n", "name": "s",
                          "labels": ["a"], "annotations": ["b"]});
        let c = resolved(copy_spec(&["a", "b"], item), Some(&source));
        let namespaces = [TestNs::new("a"), TestNs::new("b")];
        let mut store = Store::default();
        let resolved_to_copy =
            matches!(c.spec.as_ref().unwrap().copy_items[0].resolved, CopySource::Copy(_));
        let writes = settle(&namespaces, std::slice::from_ref(&c), &mut store);
        prop_assert!(writes == 0 || writes == 2, "writes {}", writes);
        prop_assert!(writes == 0 || resolved_to_copy);
        prop_assert_eq!(settle(&namespaces, &[c], &mut store), 0);
    }
}
