//! Property tests of the planner against a simulated store: for random
//! namespaces, labels, pre-existing objects and SyncConfigs (changed once
//! mid-way), planning and applying settles to a state where planning again
//! yields no op, no delete ever hits an object it must not touch, no apply
//! writes a name no item names, and a namespace out of mirra's reach
//! (`--never-write-namespace`) is never in a plan.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests may unwrap: a panic is a test failure.

use crate::common;

use std::collections::BTreeSet;

use common::{Store, TestNs, foreign};
use mirra_mirror::template::template_str;
use mirra_mirror::{
    CompiledConfig, CompiledSpec, ConfigRef, DeleteCause, ItemRef, ObjectKey, Op,
    plan_namespace_scoped,
};
use proptest::prelude::*;
use serde_json::{Value, json};

const NAMESPACES: [&str; 4] = ["a", "b", "c", "d"];
const PATTERNS: [&str; 5] = ["a", "b|c", ".*", "d", "("];
const SYNC_NAMES: [&str; 4] = ["s1", "s2", "t-${PROJECT_NAME}", "sec"];
const DELETE_NAMES: [&str; 3] = ["old", "s1", "legacy-${PROJECT_NAME}"];
/// Names of pre-existing objects: some named by items, "free" by nothing.
const FOREIGN_NAMES: [&str; 4] = ["s1", "old", "legacy-{ns}", "free"];

#[derive(Debug, Clone)]
pub(crate) struct GenConfig {
    age: u32,
    prune: bool,
    patterns: Vec<usize>,
    by_label: bool,
    ignore_d: bool,
    sync: Vec<(usize, u8)>,
    delete: Vec<usize>,
}

pub(crate) fn gen_config() -> impl Strategy<Value = GenConfig> {
    (
        0u32..3,
        proptest::bool::weighted(0.8),
        proptest::collection::vec(0..PATTERNS.len(), 0..3),
        any::<bool>(),
        proptest::bool::weighted(0.2),
        proptest::collection::vec((0..SYNC_NAMES.len(), 0u8..2), 0..4),
        proptest::collection::vec(0..DELETE_NAMES.len(), 0..2),
    )
        .prop_map(
            |(age, prune, patterns, by_label, ignore_d, sync, delete)| GenConfig {
                age,
                prune,
                patterns,
                by_label,
                ignore_d,
                sync,
                delete,
            },
        )
}

pub(crate) fn build(i: usize, g: &GenConfig) -> CompiledConfig {
    let mut selector = json!({
        "matchNames": g.patterns.iter().map(|p| PATTERNS[*p]).collect::<Vec<_>>(),
    });
    if g.by_label {
        selector["labelSelector"] = json!({"matchLabels": {"env": "x"}});
    }
    if g.ignore_d {
        selector["ignoreNames"] = json!(["d"]);
    }
    let items: Vec<Value> = g
        .sync
        .iter()
        .map(|(n, v)| {
            let name = SYNC_NAMES[*n];
            if name == "sec" {
                json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
                       "stringData": {"v": format!("{v}-${{PROJECT_NAME}}")}})
            } else {
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"v": v.to_string()}},
                       "data": {"v": v.to_string(), "n": 1.5}})
            }
        })
        .collect();
    let deletes: Vec<Value> = g
        .delete
        .iter()
        .map(|d| json!({"apiVersion": "v1", "kind": "ConfigMap", "name": DELETE_NAMES[*d]}))
        .collect();
    let spec = json!({"namespaceSelector": selector, "syncItems": items, "deleteItems": deletes});
    common::config_with(&format!("c{i}"), g.age, spec, g.prune)
}

pub(crate) fn gen_namespaces() -> impl Strategy<Value = Vec<TestNs>> {
    proptest::collection::vec(
        (any::<bool>(), proptest::bool::weighted(0.85)),
        NAMESPACES.len(),
    )
    .prop_map(|flags| {
        NAMESPACES
            .iter()
            .zip(flags)
            .map(|(n, (x, active))| {
                let ns = TestNs::new(n).label("env", if x { "x" } else { "y" });
                if active { ns } else { ns.terminating() }
            })
            .collect()
    })
}

/// The specs of the configs selecting `ns` (only valid ones select).
fn specs_selecting<'a>(
    ns: &'a TestNs,
    configs: &'a [CompiledConfig],
) -> impl Iterator<Item = &'a CompiledSpec> {
    configs
        .iter()
        .filter(|c| c.selects(&ns.view()))
        .map(|c| c.spec.as_ref().unwrap())
}

/// The names the sync items of the valid configs selecting `ns` give
/// there, by kind.
fn sync_item_targets(ns: &TestNs, configs: &[CompiledConfig]) -> BTreeSet<(String, String)> {
    specs_selecting(ns, configs)
        .flat_map(|s| {
            s.sync_items
                .iter()
                .map(|i| (i.kind.clone(), template_str(&i.name, &ns.name)))
        })
        .collect()
}

/// The deleteItem targets a valid config selecting `ns` names there.
fn delete_item_targets(ns: &TestNs, configs: &[CompiledConfig]) -> BTreeSet<String> {
    specs_selecting(ns, configs)
        .flat_map(|s| {
            s.delete_items
                .iter()
                .map(|d| template_str(&d.name, &ns.name))
        })
        .collect()
}

/// Honours every SyncConfig: a mirra whose scope is not narrowed.
pub(crate) fn every(_: &ConfigRef) -> bool {
    true
}

/// Plans every namespace and applies the ops, checking the safety rules on
/// each op, for a mirra honouring only the SyncConfigs `honoured` accepts
/// (`configs` holds exactly those, as the controller passes them). Returns
/// whether any op was planned.
fn round(
    namespaces: &[TestNs],
    configs: &[CompiledConfig],
    store: &mut Store,
    excluded: &BTreeSet<String>,
    honoured: &dyn Fn(&ConfigRef) -> bool,
) -> Result<bool, TestCaseError> {
    let mut any = false;
    let is_excluded = |n: &str| excluded.contains(n);
    for ns in namespaces {
        let observed = store.view(&ns.name);
        let plan =
            plan_namespace_scoped(Some(&ns.view()), configs, &observed, &is_excluded, honoured);
        let again =
            plan_namespace_scoped(Some(&ns.view()), configs, &observed, &is_excluded, honoured);
        prop_assert_eq!(&plan, &again, "planning is deterministic");
        if !ns.active {
            prop_assert!(plan.ops.is_empty(), "ops in a terminating namespace");
        }
        if excluded.contains(&ns.name) {
            prop_assert!(
                plan.ops.is_empty(),
                "ops in never-write namespace {}",
                ns.name
            );
        }
        let allowed = delete_item_targets(ns, configs);
        let named = sync_item_targets(ns, configs);
        for op in &plan.ops {
            prop_assert_eq!(&op.target().namespace, &ns.name);
            if let Op::Apply { target, .. } = op {
                let current = observed.iter().find(|o| o.key() == target.key());
                if let Some(owner) = current.and_then(|o| o.owner()) {
                    prop_assert!(
                        honoured(&owner),
                        "overwrote a copy of {} that this mirra does not honour",
                        owner
                    );
                }
                prop_assert!(
                    named.contains(&(target.kind.to_string(), target.name.to_string())),
                    "apply of {} {} that no item names",
                    target.kind,
                    target.name
                );
            }
            if let Op::Delete {
                target,
                uid,
                cause,
                config,
            } = op
            {
                let key: ObjectKey = target.key();
                let current = observed.iter().find(|o| o.key() == key);
                let current = current
                    .ok_or_else(|| TestCaseError::fail("delete of an object not observed"))?;
                prop_assert_eq!(&current.uid, uid);
                if let Some(owner) = current.owner() {
                    prop_assert!(
                        honoured(&owner) || *cause == DeleteCause::DeleteItem,
                        "pruned a copy of {} that this mirra does not honour",
                        owner
                    );
                }
                match cause {
                    DeleteCause::Pruned => {
                        // Marked, by the config the prune is made for, and
                        // wanted by no item here any more.
                        prop_assert_eq!(
                            current.owner(),
                            Some(config.clone()),
                            "pruned an object its config does not own"
                        );
                        prop_assert!(
                            !named.contains(&(target.kind.to_string(), target.name.to_string())),
                            "pruned {} {} that an item still names",
                            target.kind,
                            target.name
                        );
                    }
                    DeleteCause::DeleteItem => prop_assert!(
                        allowed.contains(target.name.as_str()),
                        "deleted {} not named",
                        target.name
                    ),
                }
            }
        }
        for op in &plan.ops {
            store.apply(op);
            any = true;
        }
    }
    Ok(any)
}

/// Runs [`round`]s until one plans nothing; fails after 3.
pub(crate) fn settle(
    namespaces: &[TestNs],
    configs: &[CompiledConfig],
    store: &mut Store,
    excluded: &BTreeSet<String>,
    honoured: &dyn Fn(&ConfigRef) -> bool,
) -> Result<(), TestCaseError> {
    // One round writes everything; a second may follow when a conflict's
    // winner takes over an object written by the loser in the same round.
    for _ in 0..3 {
        if !round(namespaces, configs, store, excluded, honoured)? {
            return Ok(());
        }
    }
    Err(TestCaseError::fail("the plan did not settle in 3 rounds"))
}

/// Namespaces, the SyncConfigs before and after the change, and the
/// pre-existing objects (namespace and name indexes).
type Change = (
    Vec<TestNs>,
    Vec<GenConfig>,
    Vec<GenConfig>,
    Vec<(usize, usize)>,
);

fn gen_change() -> impl Strategy<Value = Change> {
    (
        gen_namespaces(),
        proptest::collection::vec(gen_config(), 1..4),
        proptest::collection::vec(gen_config(), 0..4),
        proptest::collection::vec((0..NAMESPACES.len(), 0..FOREIGN_NAMES.len()), 0..6),
    )
}

/// A store holding the pre-existing objects (namespace and name indexes),
/// and the SyncConfigs before and after the change.
pub(crate) fn setup(
    foreign_objects: &[(usize, usize)],
    before: &[GenConfig],
    after: &[GenConfig],
) -> (Store, Vec<CompiledConfig>, Vec<CompiledConfig>) {
    let mut store = Store::default();
    for (i, (ns, name)) in foreign_objects.iter().enumerate() {
        let ns = NAMESPACES[*ns];
        store.insert(foreign(
            "ConfigMap",
            ns,
            &FOREIGN_NAMES[*name].replace("{ns}", ns),
            &format!("foreign-{i}"),
        ));
    }
    let compile = |gs: &[GenConfig]| gs.iter().enumerate().map(|(i, g)| build(i, g)).collect();
    (store, compile(before), compile(after))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    #[test]
    fn planning_settles_and_deletes_only_what_it_may(
        (namespaces, before, after, foreign_objects) in gen_change(),
    ) {
        let (mut store, before, after) = setup(&foreign_objects, &before, &after);
        let none = BTreeSet::new();
        for configs in [&before, &after] {
            settle(&namespaces, configs, &mut store, &none, &every)?;
            // Settled: nothing more to do anywhere.
            prop_assert!(!round(&namespaces, configs, &mut store, &none, &every)?);
            // Every wanted item exists, written for the winning config.
            for ns in namespaces.iter().filter(|n| n.active) {
                let mut winners: Vec<&CompiledConfig> = configs.iter().filter(|c| c.selects(&ns.view())).collect();
                winners.sort_by(|a, b| a.precedence().cmp(&b.precedence()));
                let mut seen = BTreeSet::new();
                for c in winners {
                    for item in &c.spec.as_ref().unwrap().sync_items {
                        let name = template_str(&item.name, &ns.name);
                        if !seen.insert((item.kind.clone(), name.clone())) {
                            continue;
                        }
                        let obj = store.objects.iter().find(|o| o.namespace == ns.name && o.name == name && o.kind == item.kind);
                        let obj = obj.ok_or_else(|| TestCaseError::fail(format!("{} {name} missing in {}", item.kind, ns.name)))?;
                        prop_assert_eq!(obj.owner(), Some(c.key.clone()));
                    }
                }
            }
        }
        // Objects no rule names are never touched.
        for (i, (ns, name)) in foreign_objects.iter().enumerate() {
            if FOREIGN_NAMES[*name] == "free" {
                let uid = format!("foreign-{i}");
                let survived = store.objects.iter().any(|o| o.uid == uid && o.namespace == NAMESPACES[*ns] && o.owner().is_none());
                let replaced_by_later = foreign_objects.iter().enumerate().skip(i + 1).any(|(_, other)| other == &(*ns, *name));
                prop_assert!(survived || replaced_by_later, "untouchable object foreign-{} was changed or deleted", i);
            }
        }
    }

    #[test]
    fn never_write_namespaces_are_never_planned(
        (namespaces, before, after, foreign_objects) in gen_change(),
        excluded in proptest::collection::btree_set(0..NAMESPACES.len(), 1..3),
    ) {
        let (mut store, before, after) = setup(&foreign_objects, &before, &after);
        let none = BTreeSet::new();
        // Copies written while nothing was excluded, then a namespace put
        // out of reach: its copies stay as they are, even when the configs
        // change so that they would be pruned or rewritten elsewhere.
        settle(&namespaces, &before, &mut store, &none, &every)?;
        let excluded: BTreeSet<String> = excluded.iter().map(|i| NAMESPACES[*i].to_string()).collect();
        let snapshot = |store: &Store| -> Vec<_> {
            store.objects.iter().filter(|o| excluded.contains(&o.namespace)).cloned().collect()
        };
        let frozen = snapshot(&store);
        for configs in [&before, &after] {
            settle(&namespaces, configs, &mut store, &excluded, &every)?;
            prop_assert!(!round(&namespaces, configs, &mut store, &excluded, &every)?);
            prop_assert_eq!(&snapshot(&store), &frozen, "a never-write namespace changed");
        }
    }

    #[test]
    fn a_narrowed_scope_leaves_the_copies_of_unhonoured_syncconfigs_alone(
        namespaces in gen_namespaces(),
        configs in proptest::collection::vec(gen_config(), 1..5),
        kept in proptest::collection::btree_set(0..5usize, 0..4),
    ) {
        // Copies written by a mirra honouring every SyncConfig, then a
        // mirra honouring only some (another deployment, or --watch-namespace
        // narrowed): the others' copies stay exactly as they are.
        let all: Vec<CompiledConfig> = configs.iter().enumerate().map(|(i, g)| build(i, g)).collect();
        let mut store = Store::default();
        let none = BTreeSet::new();
        settle(&namespaces, &all, &mut store, &none, &every)?;
        let honoured_keys: BTreeSet<ConfigRef> = all
            .iter()
            .enumerate()
            .filter(|(i, _)| kept.contains(i))
            .map(|(_, c)| c.key.clone())
            .collect();
        let honoured = |c: &ConfigRef| honoured_keys.contains(c);
        let scoped: Vec<CompiledConfig> = all.iter().filter(|c| honoured(&c.key)).cloned().collect();
        let foreign_copies = |store: &Store| -> Vec<_> {
            store.objects.iter().filter(|o| o.owner().is_some_and(|c| !honoured(&c))).cloned().collect()
        };
        let before = foreign_copies(&store);
        settle(&namespaces, &scoped, &mut store, &none, &honoured)?;
        prop_assert!(!round(&namespaces, &scoped, &mut store, &none, &honoured)?);
        prop_assert_eq!(foreign_copies(&store), before);
    }
}

/// A lookup that vouches for the copies an earlier plan verified, as the
/// controller's cache does, while neither the object nor the SyncConfig
/// changed.
struct Vouching<'a> {
    set: &'a mirra_mirror::ObservedSet,
    claims: &'a BTreeSet<(ObjectKey, ConfigRef, ItemRef)>,
}

impl mirra_mirror::ObservedLookup for Vouching<'_> {
    fn get(&self, key: &ObjectKey) -> Option<&mirra_mirror::ObservedObject> {
        self.set.get(key)
    }

    fn objects(&self) -> Box<dyn Iterator<Item = &mirra_mirror::ObservedObject> + '_> {
        self.set.objects()
    }

    fn verified(&self, key: &ObjectKey, config: &ConfigRef, item: ItemRef) -> bool {
        self.claims.contains(&(key.clone(), config.clone(), item))
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Vouching changes what a plan costs, never what it decides: at every
    /// round, before and after the SyncConfigs change, a plan that trusts
    /// the claims of earlier plans (forgotten when their object is written
    /// or their SyncConfig changes) has the same writes and outcomes as
    /// one that renders everything.
    #[test]
    fn vouched_copies_plan_exactly_as_rendered_ones(
        (namespaces, before, after, foreign_objects) in gen_change(),
    ) {
        let (mut store, before, after) = setup(&foreign_objects, &before, &after);
        let mut claims: BTreeSet<(ObjectKey, ConfigRef, ItemRef)> = BTreeSet::new();
        let none = |_: &str| false;
        for configs in [&before, &after] {
            // A SyncConfig that changed (or went) loses its claims.
            claims.retain(|(_, c, _)| {
                before.iter().find(|b| b.key == *c).map(|b| format!("{b:?}"))
                    == configs.iter().find(|a| a.key == *c).map(|a| format!("{a:?}"))
            });
            for _ in 0..4 {
                for ns in &namespaces {
                    let observed = store.view(&ns.name);
                    let rendered = plan_namespace_scoped(Some(&ns.view()), configs, &observed, &none, &|_| true);
                    let vouching = Vouching { set: &observed, claims: &claims };
                    let trusted = plan_namespace_scoped(Some(&ns.view()), configs, &vouching, &none, &|_| true);
                    prop_assert_eq!(&trusted.ops, &rendered.ops);
                    prop_assert_eq!(&trusted.outcomes, &rendered.outcomes);
                    // Only what was not vouched for is verified again.
                    for v in &trusted.verified {
                        let claim = (v.0.key(), v.1.clone(), v.2);
                        prop_assert!(!claims.contains(&claim), "verified again: {:?}", v);
                        prop_assert!(rendered.verified.contains(v));
                    }
                    for op in &rendered.ops {
                        claims.retain(|(k, _, _)| *k != op.target().key());
                        store.apply(op);
                    }
                    claims.extend(trusted.verified.iter().map(|(t, c, i)| (t.key(), c.clone(), *i)));
                }
            }
        }
    }
}

/// The claim is trusted, not re-checked: a copy vouched for is in step
/// even if its content differs (which the caller prevents by forgetting
/// claims on every change). So the test above compares real work.
#[test]
fn a_vouched_copy_is_not_rendered_or_compared() {
    let spec = json!({"namespaceSelector": {"matchNames": ["a"]},
        "syncItems": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s1"}, "data": {"v": "1"}}]});
    let configs = vec![common::config_with("c0", 0, spec, true)];
    let ns = TestNs::new("a");
    let none = |_: &str| false;
    let mut store = Store::default();
    let first = plan_namespace_scoped(Some(&ns.view()), &configs, &store.view("a"), &none, &|_| {
        true
    });
    for op in &first.ops {
        store.apply(op);
    }
    let settled =
        plan_namespace_scoped(Some(&ns.view()), &configs, &store.view("a"), &none, &|_| {
            true
        });
    assert!(settled.ops.is_empty());
    assert_eq!(settled.verified.len(), 1, "{settled:?}");
    let claims: BTreeSet<_> = settled
        .verified
        .iter()
        .map(|(t, c, i)| (t.key(), c.clone(), *i))
        .collect();

    // The copy drifts; rendering would find it, the vouched plan does not.
    let mut drifted = store.view("a");
    let mut copy = drifted.iter().next().unwrap().clone();
    copy.body_mut()["data"]["v"] = json!("drifted");
    drifted.insert(copy);
    let rendered = plan_namespace_scoped(Some(&ns.view()), &configs, &drifted, &none, &|_| true);
    assert_eq!(rendered.ops.len(), 1, "rendering sees the drift");
    let vouching = Vouching {
        set: &drifted,
        claims: &claims,
    };
    let trusted = plan_namespace_scoped(Some(&ns.view()), &configs, &vouching, &none, &|_| true);
    assert!(trusted.ops.is_empty(), "the claim stood for the comparison");
    assert!(trusted.verified.is_empty());
}

mod turns {
    use mirra_mirror::{ConfigRef, take_turns};
    use proptest::prelude::*;

    proptest! {
        /// A pass sends at most `cap` writes, loses none, keeps each
        /// SyncConfig's order, and gives every SyncConfig its turn: each
        /// sends at least its fair share (or all it has).
        #[test]
        fn turns_are_bounded_complete_ordered_and_fair(
            owners in proptest::collection::vec(0u8..4, 0..60),
            cap in 0usize..20,
        ) {
            let ops: Vec<(ConfigRef, usize)> = owners
                .iter()
                .enumerate()
                .map(|(i, o)| (ConfigRef::new("ops", format!("c{o}")), i))
                .collect();
            let (now, later) = take_turns(ops.clone(), |(c, _)| c, cap);
            let cap = cap.max(1);
            prop_assert!(now.len() <= cap);
            prop_assert_eq!(now.len() + later.len(), ops.len());
            if ops.len() > cap { prop_assert_eq!(now.len(), cap); }
            let configs: std::collections::BTreeSet<_> = ops.iter().map(|(c, _)| c.clone()).collect();
            for c in &configs {
                let mine: Vec<usize> = ops.iter().filter(|(o, _)| o == c).map(|(_, i)| *i).collect();
                let sent: Vec<usize> = now.iter().filter(|(o, _)| o == c).map(|(_, i)| *i).collect();
                let rest: Vec<usize> = later.iter().filter(|(o, _)| o == c).map(|(_, i)| *i).collect();
                // Order kept: what is sent is a prefix of the SyncConfig's writes.
                prop_assert_eq!(&mine[..sent.len()], &sent[..]);
                prop_assert_eq!(&mine[sent.len()..], &rest[..]);
                let share = (cap / configs.len()).min(mine.len());
                prop_assert!(sent.len() >= share, "{} sent {} of share {}", c, sent.len(), share);
            }
        }
    }
}
