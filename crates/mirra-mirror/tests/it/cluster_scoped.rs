//! The planner's rules for syncItems of cluster-scoped kinds (one object
//! per selected namespace, tied to it by a mark), driven through the
//! simulated store: plan, apply the ops, plan again.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests may unwrap: a panic is a test failure.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};

use common::{Store, TestNs, config};
use mirra_mirror::template::template_str;
use mirra_mirror::{
    ADOPTED_ANNOTATION, CompiledConfig, ConfigRef, DeleteCause, FOR_NAMESPACE_ANNOTATION, ItemRef,
    NamespacePlan, OWNER_ANNOTATION, ObjectKey, ObservedObject, ObservedSet, Op, OutcomeState,
    plan_namespace_full,
};
use proptest::prelude::*;
use serde_json::{Value, json};

const RBAC: &str = "rbac.authorization.k8s.io/v1";

fn cluster_scoped(api_version: &str, kind: &str) -> bool {
    api_version == RBAC && kind == "ClusterRole"
}

/// What the controller's caches show the planner for one namespace: its
/// own objects and every cluster-scoped one (the controller passes fewer,
/// those marked for it and those its items name; the planner must decide
/// the same either way).
fn lookup(store: &Store, ns: &str) -> ObservedSet {
    let mut set = store.view(ns);
    for o in store.objects.iter().filter(|o| o.namespace.is_empty()) {
        set.insert(o.clone());
    }
    set
}

fn plan_in(
    name: &str,
    ns: Option<&TestNs>,
    configs: &[CompiledConfig],
    store: &Store,
) -> NamespacePlan {
    let view = ns.map(TestNs::view);
    plan_namespace_full(
        name,
        view.as_ref(),
        configs,
        &lookup(store, name),
        &|_| false,
        &|_| true,
        &cluster_scoped,
    )
}

fn plan(ns: &TestNs, configs: &[CompiledConfig], store: &Store) -> NamespacePlan {
    plan_in(&ns.name, Some(ns), configs, store)
}

/// Plans and applies until no op is left; the number of applies per
/// object. Fails if it does not settle.
fn settle(
    namespaces: &[TestNs],
    configs: &[CompiledConfig],
    store: &mut Store,
) -> BTreeMap<ObjectKey, usize> {
    let mut writes: BTreeMap<ObjectKey, usize> = BTreeMap::new();
    for _ in 0..4 {
        let mut any = false;
        for ns in namespaces {
            for op in &plan(ns, configs, store).ops {
                if let Op::Apply { target, .. } = op {
                    *writes.entry(target.key()).or_default() += 1;
                }
                store.apply(op);
                any = true;
            }
        }
        if !any {
            return writes;
        }
    }
    panic!("the plan did not settle");
}

/// [`settle`] for one namespace and one SyncConfig.
fn settle_one(
    ns: &TestNs,
    config: &CompiledConfig,
    store: &mut Store,
) -> BTreeMap<ObjectKey, usize> {
    settle(
        std::slice::from_ref(ns),
        std::slice::from_ref(config),
        store,
    )
}

fn role(name: &str) -> Value {
    json!({"apiVersion": RBAC, "kind": "ClusterRole", "metadata": {"name": name},
           "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"],
                      "resourceNames": ["${PROJECT_NAME}"]}]})
}

fn selecting(label: &str, items: Value) -> Value {
    json!({"namespaceSelector": {"labelSelector": {"matchLabels": {label: "yes"}}},
           "syncItems": items})
}

/// SyncConfig `name` writing ClusterRole `reader-<namespace>` for every
/// namespace labelled `team=yes`.
fn readers(name: &str, age: u32) -> CompiledConfig {
    config(
        name,
        age,
        selecting("team", json!([role("reader-${PROJECT_NAME}")])),
    )
}

/// Namespace `name`, labelled `team=yes`.
fn in_team(name: &str) -> TestNs {
    TestNs::new(name).label("team", "yes")
}

/// [`readers`] and namespace `a` (in the team), with `a`'s ClusterRole
/// written to a fresh store.
fn readers_settled_in_a() -> (CompiledConfig, TestNs, Store) {
    let c = readers("readers", 1);
    let a = in_team("a");
    let mut store = Store::default();
    settle_one(&a, &c, &mut store);
    (c, a, store)
}

fn roles(store: &Store) -> Vec<(String, String)> {
    store
        .objects
        .iter()
        .filter(|o| o.kind == "ClusterRole")
        .map(|o| (o.name.clone(), o.home().to_string()))
        .collect()
}

fn deletes(p: &NamespacePlan) -> Vec<(String, DeleteCause)> {
    p.ops
        .iter()
        .filter_map(|op| match op {
            Op::Delete { target, cause, .. } => Some((target.name.to_string(), *cause)),
            _ => None,
        })
        .collect()
}

fn failure(p: &NamespacePlan) -> Option<String> {
    p.outcomes.iter().find_map(|o| match &o.state {
        OutcomeState::Failed { reason } => Some(reason.clone()),
        _ => None,
    })
}

#[test]
fn one_object_per_selected_namespace_with_its_name_templated_and_marks() {
    let c = readers("readers", 1);
    let a = in_team("a");
    let b = in_team("b");
    let other = TestNs::new("other");
    let mut store = Store::default();
    let writes = settle(
        &[a.clone(), b.clone(), other],
        std::slice::from_ref(&c),
        &mut store,
    );
    assert_eq!(writes.values().sum::<usize>(), 2);
    assert_eq!(
        roles(&store),
        [
            ("reader-a".into(), "a".into()),
            ("reader-b".into(), "b".into())
        ]
    );
    for o in store.objects.iter() {
        assert_eq!(o.namespace, "", "no namespace on a cluster-scoped object");
        assert!(o.body()["metadata"].get("namespace").is_none());
        assert_eq!(o.annotations.get(OWNER_ANNOTATION).unwrap(), "ops/readers");
        assert_eq!(o.owner(), Some(ConfigRef::new("ops", "readers")));
        // The body is templated for its namespace, as a namespaced copy's.
        assert_eq!(o.body()["rules"][0]["resourceNames"][0], o.home());
    }
    // In step: nothing to write, every item InSync.
    let p = plan(&a, std::slice::from_ref(&c), &store);
    assert!(p.ops.is_empty(), "{:?}", p.ops);
    assert_eq!(p.outcomes.len(), 1);
    assert_eq!(p.outcomes[0].state, OutcomeState::InSync);
    assert_eq!(p.outcomes[0].target.namespace, "");
}

#[test]
fn a_namespace_that_stops_matching_or_goes_loses_its_object_only() {
    let c = readers("readers", 1);
    let a = in_team("a");
    let b = in_team("b");
    let mut store = Store::default();
    settle(&[a, b.clone()], std::slice::from_ref(&c), &mut store);
    let unlabelled = TestNs::new("a");
    let p = plan(&unlabelled, std::slice::from_ref(&c), &store);
    assert_eq!(deletes(&p), [("reader-a".into(), DeleteCause::Pruned)]);
    for op in &p.ops {
        store.apply(op);
    }
    assert_eq!(roles(&store), [("reader-b".into(), "b".into())]);
    // b's plan does not see a's object as its own, and writes nothing.
    assert!(plan(&b, std::slice::from_ref(&c), &store).ops.is_empty());
    // Namespace b is deleted: its namespaced copies go with it, its
    // cluster-scoped one is pruned by mirra.
    let p = plan_in("b", None, std::slice::from_ref(&c), &store);
    assert_eq!(deletes(&p), [("reader-b".into(), DeleteCause::Pruned)]);
}

#[test]
fn a_deleted_syncconfig_or_a_removed_item_prunes_its_objects() {
    let (_, a, store) = readers_settled_in_a();
    let emptied = config(
        "readers",
        1,
        selecting("team", json!([common::configmap("c", json!({}))])),
    );
    let p = plan(&a, std::slice::from_ref(&emptied), &store);
    assert_eq!(deletes(&p), [("reader-a".into(), DeleteCause::Pruned)]);
    let p = plan(&a, &[], &store);
    assert_eq!(deletes(&p), [("reader-a".into(), DeleteCause::Pruned)]);
}

#[test]
fn drift_in_our_fields_is_repaired_with_one_apply() {
    let (c, a, mut store) = readers_settled_in_a();
    let mut edited = store.objects.iter().next().unwrap().clone();
    edited.body_mut()["rules"] = json!([]);
    store.insert(ObservedObject::from_json(edited.body().into_owned()).unwrap());
    let writes = settle_one(&a, &c, &mut store);
    assert_eq!(writes.values().sum::<usize>(), 1);
    let fixed = store.objects.iter().next().unwrap();
    assert_eq!(fixed.body()["rules"][0]["resourceNames"][0], "a");
}

#[test]
fn a_name_that_does_not_template_per_namespace_is_refused_without_a_write() {
    let c = config("shared", 1, selecting("team", json!([role("reader")])));
    let a = in_team("a");
    let b = in_team("b");
    let mut store = Store::default();
    let writes = settle(&[a.clone(), b], std::slice::from_ref(&c), &mut store);
    assert!(writes.is_empty());
    let p = plan(&a, std::slice::from_ref(&c), &store);
    let reason = failure(&p).unwrap();
    assert!(
        reason.contains("does not contain ${PROJECT_NAME}"),
        "{reason}"
    );
    assert!(reason.contains("conflict"), "{reason}");
    assert_eq!(p.outcomes[0].target.namespace, "");
}

#[test]
fn an_object_already_made_for_another_namespace_is_left_to_it() {
    // "r-${PROJECT_NAME}" in x and "${PROJECT_NAME}" in r-x both name r-x.
    let first = config(
        "first",
        1,
        json!({"namespaceSelector": {"matchNames": ["x"]},
                                           "syncItems": [role("r-${PROJECT_NAME}")]}),
    );
    let second = config(
        "second",
        2,
        json!({"namespaceSelector": {"matchNames": ["r-x"]},
                                             "syncItems": [role("${PROJECT_NAME}")]}),
    );
    let x = TestNs::new("x");
    let rx = TestNs::new("r-x");
    let configs = [first, second];
    let mut store = Store::default();
    let writes = settle(&[x.clone(), rx.clone()], &configs, &mut store);
    assert_eq!(writes.values().copied().collect::<Vec<_>>(), [1]);
    assert_eq!(roles(&store), [("r-x".into(), "x".into())]);
    let p = plan(&rx, &configs, &store);
    assert!(p.ops.is_empty());
    let reason = failure(&p).unwrap();
    assert!(reason.contains("conflict"), "{reason}");
    assert!(
        reason.contains("namespace \"x\" of SyncConfig ops/first"),
        "{reason}"
    );
    // x keeps it, in step.
    assert!(plan(&x, &configs, &store).ops.is_empty());
}

#[test]
fn two_syncconfigs_wanting_one_object_in_a_namespace_conflict_as_namespaced_copies_do() {
    let older = readers("older", 1);
    let newer = readers("newer", 2);
    let a = in_team("a");
    let configs = [newer, older];
    let mut store = Store::default();
    let writes = settle(std::slice::from_ref(&a), &configs, &mut store);
    assert_eq!(writes.values().copied().collect::<Vec<_>>(), [1]);
    let p = plan(&a, &configs, &store);
    let lost = p
        .outcomes
        .iter()
        .find(|o| o.config.name == "newer")
        .unwrap();
    assert_eq!(
        lost.state,
        OutcomeState::Conflict {
            winner: ConfigRef::new("ops", "older"),
            winner_item: ItemRef::Sync(0)
        }
    );
}

#[test]
fn an_unmarked_object_of_that_name_is_adopted_as_a_namespaced_one_is() {
    let c = readers("readers", 1);
    let a = in_team("a");
    let mut store = Store::default();
    store.insert(
        ObservedObject::from_json(json!({
            "apiVersion": RBAC, "kind": "ClusterRole",
            "metadata": {"name": "reader-a", "uid": "hand-made", "labels": {"made-by": "human"}},
            "rules": [],
        }))
        .unwrap(),
    );
    let p = plan(&a, std::slice::from_ref(&c), &store);
    let Some(Op::Apply { body, .. }) = p.ops.first() else {
        panic!("{:?}", p.ops)
    };
    assert_eq!(body["metadata"]["annotations"][ADOPTED_ANNOTATION], "true");
    assert_eq!(
        body["metadata"]["annotations"][FOR_NAMESPACE_ANNOTATION],
        "a"
    );
    settle_one(&a, &c, &mut store);
    // Adopted: let go, not deleted, once no longer wanted.
    let p = plan(&TestNs::new("a"), std::slice::from_ref(&c), &store);
    assert!(
        matches!(p.ops.as_slice(), [Op::Release { .. }]),
        "{:?}",
        p.ops
    );
}

#[test]
fn delete_items_of_a_cluster_scoped_kind_delete_nothing_and_say_why() {
    let c = config(
        "cleanup",
        1,
        json!({"namespaceSelector": {"matchNames": ["a"]},
               "deleteItems": [{"apiVersion": RBAC, "kind": "ClusterRole", "name": "old-reader"}]}),
    );
    let mut store = Store::default();
    store.insert(
        ObservedObject::from_json(json!({
            "apiVersion": RBAC, "kind": "ClusterRole",
            "metadata": {"name": "old-reader", "uid": "u1"}, "rules": [],
        }))
        .unwrap(),
    );
    let p = plan(&TestNs::new("a"), std::slice::from_ref(&c), &store);
    assert!(p.ops.is_empty(), "{:?}", p.ops);
    let reason = failure(&p).unwrap();
    assert!(reason.contains("cluster-scoped"), "{reason}");
}

#[test]
fn namespaced_kinds_plan_as_before_when_no_kind_is_cluster_scoped() {
    // plan_namespace_scoped is plan_namespace_full with no cluster kind.
    let c = config(
        "cm",
        1,
        selecting("team", json!([common::configmap("c", json!({}))])),
    );
    let a = in_team("a");
    let store = Store::default();
    let full = plan(&a, std::slice::from_ref(&c), &store);
    let scoped = mirra_mirror::plan_namespace_scoped(
        Some(&a.view()),
        std::slice::from_ref(&c),
        &store.view("a"),
        &|_| false,
        &|_| true,
    );
    assert_eq!(full, scoped);
}

const POOL: [&str; 4] = ["x", "r-x", "y", "r-y"];
const NAMES: [&str; 4] = [
    "r-${PROJECT_NAME}",
    "${PROJECT_NAME}",
    "fixed",
    "${PROJECT_NAME}-r",
];

proptest! {
    /// For any namespaces and SyncConfigs whose cluster-scoped names may
    /// collide (within one item: a fixed name; across items: `r-x` is both
    /// `r-${PROJECT_NAME}` in x and `${PROJECT_NAME}` in r-x): planning
    /// settles, writes each object at most once, never writes a name that
    /// does not template per namespace, and every object is held for one
    /// namespace its owner selects, with the name its item gives there.
    #[test]
    fn cluster_scoped_names_never_flap_and_are_written_at_most_once(
        selected in proptest::collection::vec(proptest::collection::btree_set(0..POOL.len(), 0..4), 1..4),
        items in proptest::collection::vec(proptest::collection::vec(0..NAMES.len(), 1..3), 1..4),
        order in any::<bool>(),
    ) {
        let n = selected.len().min(items.len());
        let configs: Vec<CompiledConfig> = (0..n)
            .map(|i| {
                let names: Vec<&str> = selected[i].iter().map(|&j| POOL[j]).collect();
                let roles: Vec<Value> = items[i].iter().map(|&j| role(NAMES[j])).collect();
                config(&format!("c{i}"), i as u32, json!({
                    "namespaceSelector": {"matchNames": names},
                    "syncItems": roles,
                }))
            })
            .collect();
        let mut namespaces: Vec<TestNs> = POOL.iter().map(|n| TestNs::new(n)).collect();
        if order {
            namespaces.reverse();
        }
        let mut store = Store::default();
        let writes = settle(&namespaces, &configs, &mut store);
        prop_assert!(writes.values().all(|&w| w == 1), "{writes:?}");
        for ns in &namespaces {
            prop_assert!(plan(ns, &configs, &store).ops.is_empty());
        }
        let mut names = BTreeSet::new();
        for o in store.objects.iter() {
            prop_assert_ne!(o.name.as_str(), "fixed");
            prop_assert!(names.insert(o.name.clone()));
            let owner = o.owner().unwrap();
            let i: usize = owner.name[1..].parse().unwrap();
            prop_assert!(selected[i].iter().any(|&j| POOL[j] == o.home()));
            let named = items[i]
                .iter()
                .any(|&j| template_str(NAMES[j], o.home()) == o.name);
            prop_assert!(named);
        }
    }
}
