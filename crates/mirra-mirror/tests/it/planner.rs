//! The planner's rules, one test per rule, driven through a simulated store:
//! plan, apply the ops, plan again.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests may unwrap: a panic is a test failure.

use crate::common;

use common::{Store, TestNs, config, config_with, configmap, foreign};
use mirra_mirror::{
    CompiledConfig, ConfigRef, DeleteCause, HASH_ANNOTATION, ItemRef, MANAGED_BY_LABEL,
    NamespacePlan, NamespaceView, OWNER_ANNOTATION, ObservedObject, ObservedSet, Op, OutcomeState,
    PRUNE_ANNOTATION, namespaces_for_config_change, plan_namespace,
};
use serde_json::{Value, json};

fn plan(ns: &TestNs, configs: &[CompiledConfig], store: &Store) -> NamespacePlan {
    plan_namespace(Some(&ns.view()), configs, &store.view(&ns.name), &|_| false)
}

/// Plans and applies until no op is left; returns the number of rounds that
/// had ops. Fails if it does not settle in 3 rounds.
fn settle(namespaces: &[TestNs], configs: &[CompiledConfig], store: &mut Store) -> usize {
    for round in 0..4 {
        let mut any = false;
        for ns in namespaces {
            let p = plan(ns, configs, store);
            for op in &p.ops {
                store.apply(op);
                any = true;
            }
        }
        if !any {
            return round;
        }
    }
    panic!("the plan did not settle");
}

/// [`settle`] for one namespace and one SyncConfig.
fn settle_one(ns: &TestNs, config: &CompiledConfig, store: &mut Store) -> usize {
    settle(
        std::slice::from_ref(ns),
        std::slice::from_ref(config),
        store,
    )
}

fn spec(match_names: &[&str], items: Value) -> Value {
    json!({"namespaceSelector": {"matchNames": match_names}, "syncItems": items})
}

/// A spec copying empty ConfigMaps named `maps` into the namespaces
/// `pattern` matches.
fn empty_maps(pattern: &str, maps: &[&str]) -> Value {
    let items: Vec<Value> = maps.iter().map(|m| configmap(m, json!({}))).collect();
    spec(&[pattern], json!(items))
}

/// SyncConfig `name` copying one ConfigMap, `map` holding `data`, into the
/// namespaces `pattern` matches.
fn copying(name: &str, age: u32, pattern: &str, map: &str, data: Value) -> CompiledConfig {
    config(name, age, spec(&[pattern], json!([configmap(map, data)])))
}

/// A deleteItem naming ConfigMap `name`.
fn delete_item(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "name": name})
}

/// SyncConfig `name` deleting ConfigMap `target` in namespace `n`.
fn deleting(name: &str, age: u32, target: &str) -> CompiledConfig {
    config(
        name,
        age,
        json!({
            "namespaceSelector": {"matchNames": ["n"]},
            "deleteItems": [delete_item(target)],
        }),
    )
}

/// SyncConfig `base` writing `items` into namespace `n` and deleting
/// ConfigMap `old` there.
fn syncing_and_deleting_old(items: Value) -> CompiledConfig {
    config(
        "base",
        1,
        json!({
            "namespaceSelector": {"matchNames": ["n"]},
            "syncItems": items,
            "deleteItems": [delete_item("old")],
        }),
    )
}

/// The plan's only op, an apply: its body and whether it checks for
/// adoption.
fn only_apply(p: &NamespacePlan) -> (&Value, bool) {
    let [
        Op::Apply {
            body,
            check_adoption,
            ..
        },
    ] = &p.ops[..]
    else {
        panic!("{:?}", p.ops);
    };
    (body, *check_adoption)
}

fn applies(p: &NamespacePlan) -> Vec<String> {
    p.ops
        .iter()
        .filter_map(|op| match op {
            Op::Apply { target, .. } => Some(format!("{}/{}", target.kind, target.name)),
            _ => None,
        })
        .collect()
}

fn deletes(p: &NamespacePlan) -> Vec<(String, String, DeleteCause)> {
    p.ops
        .iter()
        .filter_map(|op| match op {
            Op::Delete {
                target, uid, cause, ..
            } => Some((target.name.to_string(), uid.clone(), *cause)),
            _ => None,
        })
        .collect()
}

fn states(p: &NamespacePlan) -> Vec<(String, ItemRef, OutcomeState)> {
    p.outcomes
        .iter()
        .map(|o| (o.config.name.to_string(), o.item, o.state.clone()))
        .collect()
}

#[test]
fn a_selected_namespace_gets_every_item_and_others_get_nothing() {
    let c = config(
        "base",
        1,
        empty_maps("team-.*", &["a", "b-${PROJECT_NAME}"]),
    );
    let store = Store::default();
    let selected = plan(&TestNs::new("team-x"), std::slice::from_ref(&c), &store);
    assert_eq!(applies(&selected), ["ConfigMap/a", "ConfigMap/b-team-x"]);
    assert!(plan(&TestNs::new("other"), &[c], &store).ops.is_empty());
}

#[test]
fn missing_terminating_and_excluded_namespaces_get_no_ops_at_all() {
    let c = copying("base", 1, ".*", "a", json!({}));
    let gone = copying("gone", 2, "nothing", "z", json!({}));
    // An orphaned copy sits in the namespace: even it is not touched.
    let mut store = Store::default();
    let ns = TestNs::new("n");
    settle_one(&ns, &gone, &mut store);
    let orphan_owner = copying("old", 0, "n", "orphan", json!({}));
    settle(std::slice::from_ref(&ns), &[orphan_owner], &mut store);
    assert_eq!(store.objects.len(), 1);
    let configs = [c];
    let observed = store.view("n");
    assert_eq!(
        plan_namespace(None, &configs, &observed, &|_| false),
        NamespacePlan::default()
    );
    let term = ns.clone().terminating();
    assert_eq!(
        plan_namespace(Some(&term.view()), &configs, &observed, &|_| false),
        NamespacePlan::default()
    );
    assert_eq!(
        plan_namespace(Some(&ns.view()), &configs, &observed, &|n| n == "n"),
        NamespacePlan::default()
    );
    // The same namespace, not excluded, gets both an apply and a prune.
    let p = plan_namespace(Some(&ns.view()), &configs, &observed, &|n| n == "other");
    assert_eq!(applies(&p), ["ConfigMap/a"]);
    assert_eq!(deletes(&p).len(), 1);
}

#[test]
fn nothing_is_written_when_nothing_changed() {
    let c = config(
        "base",
        1,
        spec(
            &[".*"],
            json!([configmap("a", json!({"k": "v"})), {
                "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                "stringData": {"password": "${PROJECT_NAME}-pw"},
            }]),
        ),
    );
    let ns = [TestNs::new("n1"), TestNs::new("n2")];
    let mut store = Store::default();
    assert_eq!(settle(&ns, std::slice::from_ref(&c), &mut store), 1);
    assert_eq!(store.applies, 4);
    for n in &ns {
        let p = plan(n, std::slice::from_ref(&c), &store);
        assert!(p.ops.is_empty());
        assert!(
            p.outcomes.iter().all(|o| o.state == OutcomeState::InSync),
            "{:?}",
            p.outcomes
        );
    }
}

#[test]
fn fields_added_by_others_are_ignored_but_drift_in_ours_is_repaired() {
    let c = copying("base", 1, ".*", "a", json!({"k": "v"}));
    let ns = TestNs::new("n");
    let mut store = Store::default();
    settle_one(&ns, &c, &mut store);
    let key = store.objects.iter().next().unwrap().key();
    let mut obj = store.objects.iter().next().unwrap().body().into_owned();
    obj["metadata"]["labels"]["added"] = json!("by-someone");
    obj["metadata"]["annotations"]["other"] = json!("x");
    obj["metadata"]["finalizers"] = json!(["example.com/keep"]);
    obj["metadata"]["resourceVersion"] = json!("42");
    obj["data"]["extra"] = json!("key");
    store.insert(ObservedObject::from_json(obj.clone()).unwrap());
    assert!(plan(&ns, std::slice::from_ref(&c), &store).ops.is_empty());

    obj["data"]["k"] = json!("tampered");
    store.insert(ObservedObject::from_json(obj).unwrap());
    let p = plan(&ns, std::slice::from_ref(&c), &store);
    assert_eq!(applies(&p), ["ConfigMap/a"]);
    assert_eq!(p.ops[0].target().key(), key);
}

#[test]
fn a_removed_field_changes_the_hash_and_is_reapplied() {
    let before = copying("base", 1, ".*", "a", json!({"k": "v", "gone": "soon"}));
    let after = copying("base", 1, ".*", "a", json!({"k": "v"}));
    let ns = TestNs::new("n");
    let mut store = Store::default();
    settle(std::slice::from_ref(&ns), &[before], &mut store);
    let p = plan(&ns, std::slice::from_ref(&after), &store);
    assert_eq!(applies(&p), ["ConfigMap/a"]);
    let Op::Apply { body, .. } = &p.ops[0] else {
        panic!()
    };
    assert!(body["data"].get("gone").is_none());
    assert_ne!(
        body["metadata"]["annotations"][HASH_ANNOTATION],
        store.objects.iter().next().unwrap().body()["metadata"]["annotations"][HASH_ANNOTATION]
    );
}

#[test]
fn only_the_changed_item_is_reapplied() {
    // Two versions of one SyncConfig, differing only in b's value.
    let version = |b: &str| {
        config(
            "base",
            1,
            spec(
                &[".*"],
                json!([
                    configmap("a", json!({"k": "1"})),
                    configmap("b", json!({"k": b}))
                ]),
            ),
        )
    };
    let (v1, v2) = (version("1"), version("2"));
    let ns = TestNs::new("n");
    let mut store = Store::default();
    settle(std::slice::from_ref(&ns), &[v1], &mut store);
    assert_eq!(applies(&plan(&ns, &[v2], &store)), ["ConfigMap/b"]);
}

#[test]
fn a_namespace_that_stops_matching_is_pruned_with_uid_preconditions() {
    let c = config(
        "base",
        1,
        json!({
            "namespaceSelector": {"labelSelector": {"matchLabels": {"mirror": "yes"}}},
            "syncItems": [configmap("a", json!({})), configmap("b", json!({}))],
        }),
    );
    let labelled = TestNs::new("n").label("mirror", "yes");
    let mut store = Store::default();
    settle(&[labelled], std::slice::from_ref(&c), &mut store);
    let uids: Vec<String> = store.objects.iter().map(|o| o.uid.clone()).collect();
    let unlabelled = TestNs::new("n");
    let p = plan(&unlabelled, std::slice::from_ref(&c), &store);
    let d = deletes(&p);
    assert_eq!(
        d,
        [
            ("a".into(), uids[0].clone(), DeleteCause::Pruned),
            ("b".into(), uids[1].clone(), DeleteCause::Pruned)
        ]
    );
    assert!(
        p.outcomes
            .iter()
            .all(|o| o.item == ItemRef::Orphan && o.state == OutcomeState::Pruned)
    );
    settle(&[unlabelled], &[c], &mut store);
    assert!(store.objects.is_empty());
}

#[test]
fn removed_items_and_deleted_configs_are_pruned() {
    let both = config("base", 1, empty_maps(".*", &["a", "b"]));
    let one = copying("base", 1, ".*", "a", json!({}));
    let ns = TestNs::new("n");
    let mut store = Store::default();
    settle(std::slice::from_ref(&ns), &[both], &mut store);
    let p = plan(&ns, std::slice::from_ref(&one), &store);
    assert_eq!(
        deletes(&p).iter().map(|d| d.0.as_str()).collect::<Vec<_>>(),
        ["b"]
    );
    settle(std::slice::from_ref(&ns), &[one], &mut store);
    // The SyncConfig is deleted: its last copy goes.
    let p = plan(&ns, &[], &store);
    assert_eq!(
        deletes(&p).iter().map(|d| d.0.as_str()).collect::<Vec<_>>(),
        ["a"]
    );
    assert_eq!(p.outcomes[0].config, ConfigRef::new("ops", "base"));
}

#[test]
fn prune_opt_out_keeps_copies_even_after_the_config_is_deleted() {
    let keep = config_with("base", 1, empty_maps("n", &["a", "b"]), false);
    let keep_one = config_with("base", 1, empty_maps("n", &["a"]), false);
    let ns = TestNs::new("n");
    let mut store = Store::default();
    settle(std::slice::from_ref(&ns), &[keep], &mut store);
    for o in store.objects.iter() {
        assert_eq!(o.annotations.get(PRUNE_ANNOTATION), Some("false"));
    }
    // Item removed: kept.
    let p = plan(&ns, std::slice::from_ref(&keep_one), &store);
    assert!(deletes(&p).is_empty());
    assert!(matches!(
        p.outcomes
            .iter()
            .find(|o| o.item == ItemRef::Orphan)
            .unwrap()
            .state,
        OutcomeState::Retained { .. }
    ));
    // SyncConfig deleted: the copies' own annotation keeps them.
    let p = plan(&ns, &[], &store);
    assert!(p.ops.is_empty());
    assert_eq!(p.outcomes.len(), 2);
    assert!(
        p.outcomes.iter().all(
            |o| matches!(&o.state, OutcomeState::Retained { reason } if reason.contains("copy"))
        )
    );
}

#[test]
fn a_config_that_turns_invalid_keeps_its_copies() {
    let good = copying("base", 1, "n", "a", json!({}));
    let broken = copying("base", 1, "(", "a", json!({}));
    assert!(!broken.is_valid());
    let ns = TestNs::new("n");
    let mut store = Store::default();
    settle(std::slice::from_ref(&ns), &[good], &mut store);
    let p = plan(&ns, &[broken], &store);
    assert!(p.ops.is_empty());
    assert!(
        matches!(&p.outcomes[0].state, OutcomeState::Retained { reason } if reason.contains("invalid"))
    );
}

#[test]
fn objects_without_both_marks_are_never_pruned() {
    let ns = TestNs::new("n");
    let mut store = Store::default();
    store.insert(foreign("ConfigMap", "n", "plain", "u1"));
    let mut label_only = foreign("ConfigMap", "n", "label-only", "u2");
    label_only.labels = [(MANAGED_BY_LABEL, "mirra")].into_iter().collect();
    store.insert(label_only);
    let mut annotation_only = foreign("ConfigMap", "n", "annotation-only", "u3");
    annotation_only.annotations = [(OWNER_ANNOTATION, "ops/base")].into_iter().collect();
    store.insert(annotation_only);
    let mut bad_owner = foreign("ConfigMap", "n", "bad-owner", "u4");
    bad_owner.labels = [(MANAGED_BY_LABEL, "mirra")].into_iter().collect();
    bad_owner.annotations = [(OWNER_ANNOTATION, "no-slash")].into_iter().collect();
    store.insert(bad_owner);
    let c = copying("base", 1, "n", "other", json!({}));
    let p = plan(&ns, &[c], &store);
    assert!(deletes(&p).is_empty(), "{:?}", p.ops);
    assert!(p.outcomes.iter().all(|o| o.item != ItemRef::Orphan));
}

#[test]
fn an_unmarked_object_named_by_a_sync_item_is_adopted() {
    let ns = TestNs::new("n");
    let mut store = Store::default();
    store.insert(foreign("ConfigMap", "n", "shared", "u1"));
    let c = copying("base", 1, "n", "shared", json!({"k": "v"}));
    let p = plan(&ns, std::slice::from_ref(&c), &store);
    assert_eq!(applies(&p), ["ConfigMap/shared"]);
    settle_one(&ns, &c, &mut store);
    let o = store.objects.iter().next().unwrap();
    assert_eq!(o.uid, "u1", "adopted, not recreated");
    assert_eq!(o.labels.get("made-by"), Some("human"));
    assert_eq!(o.owner(), Some(ConfigRef::new("ops", "base")));
}

#[test]
fn delete_items_delete_named_objects_only_while_they_exist() {
    let c = deleting("cleanup", 1, "legacy-${PROJECT_NAME}");
    let ns = TestNs::new("n");
    let mut store = Store::default();
    store.insert(foreign("ConfigMap", "n", "legacy-n", "u9"));
    store.insert(foreign("ConfigMap", "n", "legacy-other", "u10"));
    let p = plan(&ns, std::slice::from_ref(&c), &store);
    assert_eq!(
        deletes(&p),
        [("legacy-n".into(), "u9".into(), DeleteCause::DeleteItem)]
    );
    assert_eq!(
        states(&p),
        [("cleanup".into(), ItemRef::Delete(0), OutcomeState::Deleted)]
    );
    settle_one(&ns, &c, &mut store);
    assert_eq!(store.objects.len(), 1, "only the named object went");
    let p = plan(&ns, &[c], &store);
    assert!(p.ops.is_empty());
    assert_eq!(
        states(&p),
        [("cleanup".into(), ItemRef::Delete(0), OutcomeState::Gone)]
    );
}

#[test]
fn objects_being_deleted_are_left_to_finish() {
    let c = syncing_and_deleting_old(json!([configmap("a", json!({}))]));
    let ns = TestNs::new("n");
    let mut store = Store::default();
    for name in ["a", "old"] {
        let mut o = foreign("ConfigMap", "n", name, name);
        o.deleting = true;
        store.insert(o);
    }
    let p = plan(&ns, &[c], &store);
    assert!(p.ops.is_empty());
    assert!(
        p.outcomes
            .iter()
            .all(|o| o.state == OutcomeState::Terminating)
    );
}

#[test]
fn a_wanted_object_held_by_finalizers_fails_naming_them_and_writes_nothing() {
    let c = syncing_and_deleting_old(json!([
        configmap("a", json!({})),
        configmap("b", json!({}))
    ]));
    let ns = TestNs::new("n");
    let mut store = Store::default();
    // "a" and "old": marked deleted by the server and held by finalizers;
    // "b": deleted by mirra (in flight), no finalizer.
    for (name, finalizers) in [
        ("a", json!(["example.com/hold", "x/y"])),
        ("old", json!(["example.com/hold"])),
    ] {
        let o = ObservedObject::from_json(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "n", "uid": name,
                         "deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": finalizers},
        }))
        .unwrap();
        store.insert(o);
    }
    let mut b = foreign("ConfigMap", "n", "b", "b");
    b.deleting = true;
    store.insert(b);
    let p = plan(&ns, &[c], &store);
    assert!(p.ops.is_empty(), "{:?}", p.ops);
    let state_of = |name: &str| {
        p.outcomes
            .iter()
            .find(|o| o.target.name == name)
            .map(|o| o.state.clone())
            .unwrap()
    };
    match state_of("a") {
        OutcomeState::Failed { reason } => {
            assert!(reason.contains("example.com/hold, x/y"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(state_of("b"), OutcomeState::Terminating);
    // A deleteItem waiting for finalizers did its part: still counted as
    // being deleted, not failed.
    assert_eq!(state_of("old"), OutcomeState::Terminating);
}

#[test]
fn the_oldest_config_wins_a_conflict_and_the_plan_never_flaps() {
    let young = copying("young", 5, "n", "shared", json!({"from": "young"}));
    let old = copying("old", 1, "n", "shared", json!({"from": "old"}));
    let configs = [young.clone(), old.clone()];
    let ns = TestNs::new("n");
    let mut store = Store::default();
    // The younger one wrote the object first (say, the older one was invalid).
    settle_one(&ns, &young, &mut store);
    let p = plan(&ns, &configs, &store);
    assert_eq!(applies(&p), ["ConfigMap/shared"]);
    let states = states(&p);
    assert!(states.contains(&("old".into(), ItemRef::Sync(0), OutcomeState::Applied)));
    assert!(states.contains(&(
        "young".into(),
        ItemRef::Sync(0),
        OutcomeState::Conflict {
            winner: ConfigRef::new("ops", "old"),
            winner_item: ItemRef::Sync(0)
        }
    )));
    let winner = p.outcomes.iter().find(|o| o.config.name == "old").unwrap();
    assert_eq!(winner.contenders, [ConfigRef::new("ops", "young")]);
    assert_eq!(settle(std::slice::from_ref(&ns), &configs, &mut store), 1);
    let o = store.objects.iter().next().unwrap();
    assert_eq!(o.body()["data"]["from"], "old");
    // Stable: planning again and again writes nothing, and the order of the
    // configs does not matter.
    for _ in 0..3 {
        assert!(plan(&ns, &configs, &store).ops.is_empty());
        assert!(
            plan(&ns, &[old.clone(), young.clone()], &store)
                .ops
                .is_empty()
        );
    }
}

#[test]
fn equal_ages_are_decided_by_name() {
    let b = copying("b", 1, "n", "shared", json!({}));
    let a = copying("a", 1, "n", "shared", json!({}));
    let p = plan(&TestNs::new("n"), &[b, a], &Store::default());
    let Op::Apply { config, .. } = &p.ops[0] else {
        panic!()
    };
    assert_eq!(config.name, "a");
}

#[test]
fn a_sync_item_wins_over_a_delete_item_for_the_same_object() {
    let syncer = copying("syncer", 5, "n", "x", json!({}));
    let deleter = deleting("deleter", 1, "x");
    let ns = TestNs::new("n");
    let mut store = Store::default();
    let configs = [syncer, deleter];
    assert_eq!(settle(std::slice::from_ref(&ns), &configs, &mut store), 1);
    assert_eq!(store.deletes, 0);
    let p = plan(&ns, &configs, &store);
    assert!(p.ops.is_empty());
    assert!(p.outcomes.contains(&mirra_mirror::ItemOutcome {
        config: ConfigRef::new("ops", "deleter"),
        item: ItemRef::Delete(0),
        target: p.outcomes[0].target.clone(),
        state: OutcomeState::Conflict {
            winner: ConfigRef::new("ops", "syncer"),
            winner_item: ItemRef::Sync(0)
        },
        contenders: vec![],
    }));
}

#[test]
fn an_invalid_name_in_one_namespace_fails_only_there() {
    let c = config(
        "svc",
        1,
        spec(
            &[".*"],
            json!([{
                "apiVersion": "v1", "kind": "Service", "metadata": {"name": "${PROJECT_NAME}"},
                "spec": {"ports": [{"port": 80}]},
            }]),
        ),
    );
    let store = Store::default();
    assert_eq!(
        applies(&plan(&TestNs::new("web"), std::slice::from_ref(&c), &store)),
        ["Service/web"]
    );
    let p = plan(&TestNs::new("1team"), &[c], &store);
    assert!(p.ops.is_empty());
    assert!(
        matches!(&p.outcomes[0].state, OutcomeState::Failed { reason } if reason.contains("1team"))
    );
}

#[test]
fn objects_of_other_namespaces_are_ignored() {
    let c = copying("base", 1, "n", "a", json!({}));
    let mut store = Store::default();
    settle(&[TestNs::new("n")], std::slice::from_ref(&c), &mut store);
    // Hand the planner for "m" a lookup that (wrongly) includes "n"'s copy.
    let p = plan_namespace(Some(&TestNs::new("m").view()), &[], &store.objects, &|_| {
        false
    });
    assert!(p.ops.is_empty());
}

#[test]
fn apply_ops_expose_force_recreate() {
    let c = config(
        "base",
        1,
        json!({
            "namespaceSelector": {"matchNames": ["n"]}, "forceRecreate": true,
            "syncItems": [configmap("a", json!({}))],
        }),
    );
    let p = plan(&TestNs::new("n"), &[c], &Store::default());
    assert!(matches!(
        p.ops[0],
        Op::Apply {
            force_recreate: true,
            ..
        }
    ));
}

#[test]
fn numbers_reach_the_apply_body_bit_exact() {
    let yaml = r#"
apiVersion: sync.appuio.ch/v1alpha1
kind: SyncConfig
metadata: {name: quota, namespace: ops}
spec:
  namespaceSelector: {matchNames: [n]}
  syncItems:
  - apiVersion: example.com/v1
    kind: Tuning
    metadata: {name: t}
    spec: {ratio: 1.5, tiny: 0.1, third: 0.3333333333333333, big: 9007199254740993, neg: -42, huge: 18446744073709551615}
"#;
    let sc: mirra_mirror::SyncConfig = serde_yaml::from_str(yaml).unwrap();
    let c = CompiledConfig::compile(&sc);
    let p = plan(&TestNs::new("n"), &[c], &Store::default());
    let Op::Apply { body, .. } = &p.ops[0] else {
        panic!()
    };
    let text = serde_json::to_string(&body["spec"]).unwrap();
    assert_eq!(
        text,
        r#"{"ratio":1.5,"tiny":0.1,"third":0.3333333333333333,"big":9007199254740993,"neg":-42,"huge":18446744073709551615}"#
    );
    assert_eq!(
        body["spec"]["ratio"].as_f64().unwrap().to_bits(),
        1.5f64.to_bits()
    );
}

#[test]
fn config_changes_touch_only_the_namespaces_old_or_new_select() {
    let labels = std::collections::BTreeMap::new();
    let names = ["a1", "a2", "b1", "c1"];
    let views: Vec<NamespaceView<'_>> = names
        .iter()
        .map(|n| NamespaceView {
            name: n,
            labels: &labels,
            active: true,
        })
        .collect();
    let a = copying("c", 1, "a.*", "x", json!({}));
    let b = copying("c", 1, "b.*", "x", json!({}));
    let a_relabelled = CompiledConfig::from_json(&json!({
        "metadata": {"name": "c", "namespace": "ops", "uid": "uid-c", "labels": {"x": "y"},
                     "creationTimestamp": "2024-01-01T00:00:01Z"},
        "spec": spec(&["a.*"], json!([configmap("x", json!({}))])),
    }));
    let invalid = copying("c", 1, "(", "x", json!({}));
    let set = |v: &[&str]| {
        v.iter()
            .map(|s| s.to_string())
            .collect::<std::collections::BTreeSet<_>>()
    };
    let cases: Vec<(
        Option<&CompiledConfig>,
        Option<&CompiledConfig>,
        std::collections::BTreeSet<String>,
    )> = vec![
        (None, Some(&a), set(&["a1", "a2"])),
        (Some(&a), None, set(&["a1", "a2"])),
        (Some(&a), Some(&b), set(&["a1", "a2", "b1"])),
        (Some(&a), Some(&a_relabelled), set(&[])),
        (Some(&a), Some(&invalid), set(&["a1", "a2"])),
        (None, None, set(&[])),
    ];
    for (i, (old, new, want)) in cases.into_iter().enumerate() {
        assert_eq!(
            namespaces_for_config_change(old, new, views.iter()),
            want,
            "case {i}"
        );
    }
}

#[test]
fn observed_objects_parse_leniently() {
    assert!(ObservedObject::from_json(json!({"kind": "ConfigMap"})).is_none());
    assert!(ObservedObject::from_json(json!("text")).is_none());
    // No namespace: an object of a cluster-scoped kind.
    let cluster = ObservedObject::from_json(
        json!({"apiVersion": "v1", "kind": "ClusterRole", "metadata": {"name": "a"}}),
    )
    .unwrap();
    assert_eq!(cluster.namespace, "");
    assert_eq!(cluster.home(), "");
    let o = ObservedObject::from_json(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "a", "namespace": "n", "uid": "u", "labels": {"ok": "1", "bad": 2},
                     "deletionTimestamp": "2024-01-01T00:00:00Z"},
    }))
    .unwrap();
    assert!(o.deleting);
    assert_eq!(o.labels.len(), 1);
    let mut set = ObservedSet::new();
    set.insert(o.clone());
    assert_eq!(set.len(), 1);
    assert!(set.in_namespace("other").is_empty());
}

/// A copy as a store holds it after `store.apply`: `body` written by
/// mirra's apply, or, with `by_mirra` false, the same marks written by
/// someone else (a copied manifest, a hand-made label).
fn marked(
    ns: &str,
    name: &str,
    uid: &str,
    by_mirra: bool,
    extra: &[(&str, &str)],
) -> ObservedObject {
    let mut annotations = json!({OWNER_ANNOTATION: "ops/base"});
    for (k, v) in extra {
        annotations[*k] = json!(v);
    }
    let mut body = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns, "uid": uid,
            "labels": {MANAGED_BY_LABEL: "mirra"}, "annotations": annotations},
        "data": {"x": "y"},
    });
    if by_mirra {
        body["metadata"]["managedFields"] = common::mirra_owns(&body);
    } else {
        body["metadata"]["managedFields"] = json!([{"manager": "kubectl-client-side-apply",
            "operation": "Update", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {format!("f:{MANAGED_BY_LABEL}"): {}},
                "f:annotations": {format!("f:{OWNER_ANNOTATION}"): {}}}}}]);
    }
    ObservedObject::from_json(body).unwrap()
}

#[test]
fn marks_someone_else_wrote_are_never_pruned_and_are_reported() {
    let ns = TestNs::new("n");
    let mut store = Store::default();
    store.insert(marked("n", "forged", "u1", false, &[]));
    store.insert(marked("n", "made", "u2", true, &[]));
    let c = copying("base", 1, "n", "other", json!({}));
    let p = plan(&ns, &[c], &store);
    // Only the copy mirra wrote is pruned.
    assert_eq!(
        deletes(&p),
        [("made".to_string(), "u2".to_string(), DeleteCause::Pruned)]
    );
    let forged = p
        .outcomes
        .iter()
        .find(|o| o.target.name == "forged")
        .unwrap();
    assert!(
        matches!(&forged.state, OutcomeState::Retained { reason } if reason.contains("did not write them")),
        "{forged:?}"
    );
}

#[test]
fn an_adopted_copy_no_longer_wanted_is_released_not_deleted() {
    let ns = TestNs::new("n");
    let mut store = Store::default();
    store.insert(marked(
        "n",
        "theirs",
        "u1",
        true,
        &[(mirra_mirror::ADOPTED_ANNOTATION, "true")],
    ));
    let c = copying("base", 1, "n", "other", json!({}));
    let p = plan(&ns, std::slice::from_ref(&c), &store);
    assert!(deletes(&p).is_empty(), "{:?}", p.ops);
    let releases: Vec<_> = p
        .ops
        .iter()
        .filter_map(|op| match op {
            Op::Release { target, config } => Some((target.name.as_str(), config.name.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(releases, [("theirs", "base")], "{:?}", p.ops);
    assert!(
        states(&p).contains(&("base".into(), ItemRef::Orphan, OutcomeState::Released)),
        "{:?}",
        p.outcomes
    );
    // Released, it carries no mark: once applied, nothing more to do.
    for op in &p.ops {
        store.apply(op);
    }
    assert_eq!(settle(&[ns], &[c], &mut store), 0);
    let after = store.objects.iter().find(|o| o.name == "theirs").unwrap();
    assert!(after.owner().is_none());
    assert_eq!(after.body()["data"]["x"], "y");
}

#[test]
fn a_named_object_with_marks_mirra_did_not_write_is_adopted_at_once() {
    let ns = TestNs::new("n");
    let mut store = Store::default();
    store.insert(marked("n", "x", "u1", false, &[]));
    let c = copying("base", 1, "n", "x", json!({"k": "v"}));
    let p = plan(&ns, std::slice::from_ref(&c), &store);
    let (body, check_adoption) = only_apply(&p);
    // The caches hold the object: no need to look at the answer.
    assert!(!check_adoption);
    assert_eq!(
        body["metadata"]["annotations"][mirra_mirror::ADOPTED_ANNOTATION],
        "true"
    );
    // Once applied it is in step, adopted mark included.
    assert_eq!(settle_one(&ns, &c, &mut store), 1);
    let o = store.objects.iter().next().unwrap();
    assert!(o.adopted() && o.owner().is_some());
    // No longer wanted: released.
    let none = copying("base", 1, "n", "other", json!({}));
    let p = plan(&ns, &[none], &store);
    assert!(
        p.ops
            .iter()
            .any(|op| matches!(op, Op::Release { target, .. } if target.name == "x")),
        "{:?}",
        p.ops
    );
    assert!(deletes(&p).is_empty());
}

#[test]
fn an_apply_of_an_object_the_caches_do_not_hold_checks_for_adoption() {
    let ns = TestNs::new("n");
    let store = Store::default();
    let c = copying("base", 1, "n", "x", json!({"k": "v"}));
    let p = plan(&ns, &[c], &store);
    let (body, check_adoption) = only_apply(&p);
    assert!(check_adoption);
    assert!(
        body["metadata"]["annotations"]
            .get(mirra_mirror::ADOPTED_ANNOTATION)
            .is_none()
    );
    // The writer's second apply for an adoption is what the planner gives.
    let marked = mirra_mirror::with_adopted_mark(body);
    assert_eq!(
        marked["metadata"]["annotations"][mirra_mirror::ADOPTED_ANNOTATION],
        "true"
    );
}
