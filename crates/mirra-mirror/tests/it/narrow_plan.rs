//! The narrow plan (one SyncConfig changed, the rest of the namespace as
//! its last plan left it) against the full plan: whenever it answers, its
//! writes are the full plan's and its outcomes, merged into the last ones,
//! are the full plan's outcomes.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests may unwrap: a panic is a test failure.

use std::collections::BTreeSet;

use crate::common::{self, Store, TestNs};
use crate::planner_props::{build, every, gen_config, gen_namespaces, settle, setup};
use mirra_mirror::{
    CompiledConfig, ConfigRef, NamespacePlan, ObservedLookup, merge_outcomes, plan_namespace_full,
    plan_namespace_narrow,
};
use proptest::prelude::*;
use serde_json::json;

const NAMESPACES: usize = 4;
const FOREIGN_NAMES: usize = 4;

fn full(ns: &TestNs, configs: &[CompiledConfig], observed: &dyn ObservedLookup) -> NamespacePlan {
    plan_namespace_full(
        &ns.name,
        Some(&ns.view()),
        configs,
        observed,
        &|_| false,
        &|_| true,
        &|_, _| false,
    )
}

fn narrow(
    ns: &TestNs,
    configs: &[CompiledConfig],
    only: &BTreeSet<ConfigRef>,
    previous: &NamespacePlan,
    observed: &dyn ObservedLookup,
) -> Option<NamespacePlan> {
    plan_namespace_narrow(
        &ns.name,
        Some(&ns.view()),
        configs,
        only,
        &previous.outcomes,
        observed,
        &|_| false,
        &|_| true,
        &|_, _| false,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Settled namespaces, then one SyncConfig replaced, added or removed:
    /// in every namespace where the narrow plan answers, it is exactly the
    /// full plan's share.
    #[test]
    fn a_narrow_plan_is_the_share_of_the_full_plan(
        namespaces in gen_namespaces(),
        before in proptest::collection::vec(gen_config(), 1..4),
        changed in gen_config(),
        which in 0..4usize,
        remove in proptest::bool::weighted(0.2),
        foreign_objects in proptest::collection::vec((0..NAMESPACES, 0..FOREIGN_NAMES), 0..6),
    ) {
        let (mut store, before, _) = setup(&foreign_objects, &before, &[]);
        settle(&namespaces, &before, &mut store, &BTreeSet::new(), &every)?;
        let i = which % (before.len() + 1);
        let replacement = build(i, &changed);
        let only = BTreeSet::from([replacement.key.clone()]);
        let mut after = before.clone();
        match (i < after.len(), remove) {
            (true, true) => { after.remove(i); }
            (true, false) => after[i] = replacement,
            (false, _) => after.push(replacement),
        }
        for ns in &namespaces {
            let observed = store.view(&ns.name);
            let previous = full(ns, &before, &observed);
            prop_assert!(previous.ops.is_empty(), "settled");
            let expected = full(ns, &after, &observed);
            if let Some(plan) = narrow(ns, &after, &only, &previous, &observed) {
                prop_assert_eq!(&plan.ops, &expected.ops);
                prop_assert_eq!(
                    merge_outcomes(previous.outcomes.clone(), &only, plan.outcomes),
                    expected.outcomes
                );
            }
        }
    }
}

fn config(name: &str, age: u32, items: &[(&str, &str)]) -> CompiledConfig {
    let items: Vec<_> = items
        .iter()
        .map(|(n, v)| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": n}, "data": {"v": v}}))
        .collect();
    common::config_with(
        name,
        age,
        json!({"namespaceSelector": {"matchNames": ["a"]}, "syncItems": items}),
        true,
    )
}

/// Settles namespace `a` under `configs`; returns the store and the last
/// (empty) plan.
fn settled(ns: &TestNs, configs: &[CompiledConfig]) -> (Store, NamespacePlan) {
    let mut store = Store::default();
    for _ in 0..3 {
        let plan = full(ns, configs, &store.view("a"));
        if plan.ops.is_empty() {
            return (store, plan);
        }
        for op in &plan.ops {
            store.apply(op);
        }
    }
    panic!("did not settle");
}

#[test]
fn an_edit_of_one_syncconfig_plans_only_its_items() {
    let ns = TestNs::new("a");
    let before = vec![
        config("c0", 0, &[("x", "1"), ("gone", "1")]),
        config("c1", 1, &[("y", "1")]),
    ];
    let (store, previous) = settled(&ns, &before);
    let after = vec![config("c0", 0, &[("x", "2")]), before[1].clone()];
    let only = BTreeSet::from([after[0].key.clone()]);
    let observed = store.view("a");
    let plan = narrow(&ns, &after, &only, &previous, &observed).expect("no common object");
    // One apply of the edited item, one prune of the removed one; c1's
    // item is neither rendered nor listed.
    assert_eq!(plan.ops.len(), 2, "{:?}", plan.ops);
    assert!(plan.outcomes.iter().all(|o| o.config == after[0].key));
    let expected = full(&ns, &after, &observed);
    assert_eq!(plan.ops, expected.ops);
    assert_eq!(
        merge_outcomes(previous.outcomes, &only, plan.outcomes),
        expected.outcomes
    );
}

#[test]
fn a_narrow_plan_declines_when_the_changed_syncconfig_meets_another() {
    let ns = TestNs::new("a");
    let before = vec![
        config("c0", 0, &[("x", "1")]),
        config("c1", 1, &[("y", "1")]),
    ];
    let (store, previous) = settled(&ns, &before);
    let observed = store.view("a");
    // c0 now wants c1's object too: a conflict, so c1's outcome changes.
    let after = vec![
        config("c0", 0, &[("x", "1"), ("y", "2")]),
        before[1].clone(),
    ];
    let only = BTreeSet::from([after[0].key.clone()]);
    assert_eq!(narrow(&ns, &after, &only, &previous, &observed), None);
    // c1 now wants c0's object (and loses it): declined as well.
    let after = vec![
        before[0].clone(),
        config("c1", 1, &[("y", "1"), ("x", "3")]),
    ];
    let only = BTreeSet::from([after[1].key.clone()]);
    assert_eq!(narrow(&ns, &after, &only, &previous, &observed), None);
    // Once c0 and c1 contend, an edit of either is planned in full.
    let contended = vec![
        config("c0", 0, &[("x", "1"), ("y", "2")]),
        before[1].clone(),
    ];
    let (store, previous) = settled(&ns, &contended);
    let observed = store.view("a");
    let after = vec![contended[0].clone(), config("c1", 1, &[("y", "5")])];
    let only = BTreeSet::from([after[1].key.clone()]);
    assert_eq!(narrow(&ns, &after, &only, &previous, &observed), None);
}

#[test]
fn a_namespace_out_of_reach_is_never_planned_narrowly() {
    let configs = vec![config("c0", 0, &[("x", "1")])];
    let only = BTreeSet::from([configs[0].key.clone()]);
    let store = Store::default();
    let terminating = TestNs::new("a").terminating();
    let previous = NamespacePlan::default();
    assert_eq!(
        narrow(&terminating, &configs, &only, &previous, &store.view("a")),
        None
    );
    let ns = TestNs::new("a");
    let excluded = plan_namespace_narrow(
        "a",
        Some(&ns.view()),
        &configs,
        &only,
        &[],
        &store.view("a"),
        &|n| n == "a",
        &|_| true,
        &|_, _| false,
    );
    assert_eq!(excluded, None);
}
