//! Status: counters and conditions from outcomes, and writing only on change.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests may unwrap: a panic is a test failure.

use crate::common;

use common::{Store, TestNs, config, configmap};
use mirra_mirror::status::{
    CONDITION_CONFLICT, CONDITION_DEGRADED, CONDITION_ERRORED, CONDITION_INVALID, CONDITION_READY,
    REASON_CONFLICT_LOST, REASON_CONFLICT_WON, REASON_FAILED, REASON_FAILED_WITH_ERROR,
    REASON_INVALID, REASON_ITEMS_FAILED, REASON_NO_ITEM_FAILED, REASON_SUCCEEDED,
};
use mirra_mirror::{
    CompiledConfig, ConfigRef, ItemOutcome, ItemRef, ObjectRef, OutcomeState, SyncConfigCondition,
    SyncConfigStatus, desired_status, plan_namespace, status_changed, summarize, summarize_each,
};
use serde_json::json;

const T0: &str = "2024-06-01T00:00:00Z";
const T1: &str = "2024-06-01T01:00:00Z";

fn cond<'s>(s: &'s SyncConfigStatus, t: &str) -> &'s SyncConfigCondition {
    s.conditions.iter().find(|c| c.type_ == t).unwrap()
}

fn outcome(config: &str, item: ItemRef, state: OutcomeState) -> ItemOutcome {
    ItemOutcome {
        config: ConfigRef::new("ops", config),
        item,
        target: ObjectRef {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: "n".into(),
            name: "x".into(),
        },
        state,
        contenders: vec![],
    }
}

fn status_of(
    c: &CompiledConfig,
    outcomes: &[ItemOutcome],
    prev: Option<&SyncConfigStatus>,
    now: &str,
) -> SyncConfigStatus {
    desired_status(c, &summarize(&c.key, outcomes), prev, now)
}

fn base() -> CompiledConfig {
    config(
        "base",
        1,
        json!({"namespaceSelector": {"matchNames": [".*"]}, "syncItems": [configmap("x", json!({}))]}),
    )
}

#[test]
fn counters_are_totals_over_every_selected_namespace() {
    let c = config(
        "base",
        1,
        json!({
            "namespaceSelector": {"matchNames": [".*"]},
            "syncItems": [configmap("a", json!({})), configmap("b", json!({}))],
            "deleteItems": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "old"}],
        }),
    );
    let mut store = Store::default();
    store.insert(common::foreign("ConfigMap", "n1", "old", "u1"));
    let mut all = Vec::new();
    for ns in ["n1", "n2", "n3"] {
        let t = TestNs::new(ns);
        all.extend(
            plan_namespace(
                Some(&t.view()),
                std::slice::from_ref(&c),
                &store.view(ns),
                &|_| false,
            )
            .outcomes,
        );
    }
    let s = summarize(&c.key, &all);
    assert_eq!((s.synchronized, s.deleted, s.failed), (6, 1, 0));
    let status = desired_status(&c, &s, None, T0);
    assert_eq!(status.synchronized_item_count, 6);
    assert_eq!(status.deleted_item_count, 1);
    assert_eq!(status.failed_item_count, 0);
    assert_eq!(status.observed_generation, Some(1));
    assert_eq!(cond(&status, CONDITION_READY).status, "True");
    assert_eq!(
        cond(&status, CONDITION_READY).reason.as_deref(),
        Some(REASON_SUCCEEDED)
    );
    assert_eq!(cond(&status, CONDITION_INVALID).status, "False");
    assert_eq!(cond(&status, CONDITION_ERRORED).status, "False");
    assert_eq!(cond(&status, CONDITION_CONFLICT).status, "False");
    assert!(
        status
            .conditions
            .iter()
            .all(|c| c.last_transition_time.as_deref() == Some(T0))
    );
}

#[test]
fn outcomes_table() {
    // (outcome state, item, synchronized, deleted, failed)
    let cases = [
        (OutcomeState::InSync, ItemRef::Sync(0), 1, 0, 0),
        (OutcomeState::Applied, ItemRef::Sync(0), 1, 0, 0),
        (OutcomeState::Terminating, ItemRef::Sync(0), 0, 0, 0),
        (OutcomeState::Deleted, ItemRef::Delete(0), 0, 1, 0),
        (OutcomeState::Terminating, ItemRef::Delete(0), 0, 1, 0),
        (OutcomeState::Gone, ItemRef::Delete(0), 0, 0, 0),
        (
            OutcomeState::Failed { reason: "r".into() },
            ItemRef::Sync(0),
            0,
            0,
            1,
        ),
        (
            OutcomeState::Failed { reason: "r".into() },
            ItemRef::Delete(0),
            0,
            0,
            1,
        ),
        (
            OutcomeState::Conflict {
                winner: ConfigRef::new("ops", "w"),
                winner_item: ItemRef::Sync(0),
            },
            ItemRef::Sync(0),
            0,
            0,
            1,
        ),
        (OutcomeState::Pruned, ItemRef::Orphan, 0, 0, 0),
        (
            OutcomeState::Retained { reason: "r".into() },
            ItemRef::Orphan,
            0,
            0,
            0,
        ),
    ];
    for (state, item, s, d, f) in cases {
        let sum = summarize(
            &ConfigRef::new("ops", "base"),
            &[outcome("base", item, state.clone())],
        );
        assert_eq!(
            (sum.synchronized, sum.deleted, sum.failed),
            (s, d, f),
            "{state:?} {item:?}"
        );
    }
    // Outcomes of other configs are skipped.
    let sum = summarize(
        &ConfigRef::new("ops", "base"),
        &[outcome("other", ItemRef::Sync(0), OutcomeState::InSync)],
    );
    assert_eq!(sum.synchronized, 0);
}

#[test]
fn failures_set_errored_and_clear_it_when_gone() {
    let c = base();
    let failed = [outcome(
        "base",
        ItemRef::Sync(0),
        OutcomeState::Failed {
            reason: "422 immutable".into(),
        },
    )];
    let s1 = status_of(&c, &failed, None, T0);
    assert_eq!(cond(&s1, CONDITION_READY).status, "False");
    assert_eq!(
        cond(&s1, CONDITION_READY).reason.as_deref(),
        Some(REASON_FAILED)
    );
    let errored = cond(&s1, CONDITION_ERRORED);
    assert_eq!(errored.status, "True");
    assert_eq!(errored.reason.as_deref(), Some(REASON_FAILED_WITH_ERROR));
    assert_eq!(
        errored.message.as_deref(),
        Some("n ConfigMap/x: 422 immutable")
    );
    assert_eq!(s1.failed_item_count, 1);
    let degraded = cond(&s1, CONDITION_DEGRADED);
    assert_eq!(degraded.status, "True");
    assert_eq!(degraded.reason.as_deref(), Some(REASON_ITEMS_FAILED));
    assert_eq!(errored.message, degraded.message);
    let ok = [outcome("base", ItemRef::Sync(0), OutcomeState::InSync)];
    let s2 = status_of(&c, &ok, Some(&s1), T1);
    assert_eq!(cond(&s2, CONDITION_ERRORED).status, "False");
    let degraded = cond(&s2, CONDITION_DEGRADED);
    assert_eq!(
        (degraded.status.as_str(), degraded.reason.as_deref()),
        ("False", Some(REASON_NO_ITEM_FAILED))
    );
    assert_eq!(
        cond(&s2, CONDITION_ERRORED).last_transition_time.as_deref(),
        Some(T1)
    );
    assert_eq!(cond(&s2, CONDITION_READY).status, "True");
    // Invalid did not change: its transition time is kept.
    assert_eq!(
        cond(&s2, CONDITION_INVALID).last_transition_time.as_deref(),
        Some(T0)
    );
    assert!(status_changed(Some(&s1), &s2));
}

#[test]
fn an_unchanged_status_is_not_written_and_keeps_its_times() {
    let c = base();
    let ok = [outcome("base", ItemRef::Sync(0), OutcomeState::InSync)];
    let s1 = status_of(&c, &ok, None, T0);
    let s2 = status_of(&c, &ok, Some(&s1), T1);
    assert_eq!(s1, s2);
    assert!(!status_changed(Some(&s1), &s2));
    assert!(status_changed(None, &s2));
    // A counter change is a change, without touching transition times.
    let more = [
        ok[0].clone(),
        outcome("base", ItemRef::Sync(1), OutcomeState::Applied),
    ];
    let s3 = status_of(&c, &more, Some(&s2), T1);
    assert!(status_changed(Some(&s2), &s3));
    assert_eq!(
        cond(&s3, CONDITION_READY).last_transition_time.as_deref(),
        Some(T0)
    );
}

#[test]
fn conflicts_are_reported_on_both_sides() {
    let loser = config(
        "young",
        5,
        json!({"namespaceSelector": {"matchNames": ["n"]}, "syncItems": [configmap("x", json!({}))]}),
    );
    let winner = config(
        "old",
        1,
        json!({"namespaceSelector": {"matchNames": ["n"]}, "syncItems": [configmap("x", json!({}))]}),
    );
    let t = TestNs::new("n");
    let configs = [loser.clone(), winner.clone()];
    let p = plan_namespace(
        Some(&t.view()),
        &configs,
        &Store::default().view("n"),
        &|_| false,
    );
    let ls = status_of(&loser, &p.outcomes, None, T0);
    let c = cond(&ls, CONDITION_CONFLICT);
    assert_eq!(
        (c.status.as_str(), c.reason.as_deref()),
        ("True", Some(REASON_CONFLICT_LOST))
    );
    assert!(c.message.as_deref().unwrap().contains("ops/old"));
    assert_eq!(ls.failed_item_count, 1);
    assert_eq!(cond(&ls, CONDITION_READY).status, "False");
    // espejo's rule on the counters: something failed and nothing was
    // synchronized. The lost object is named on Conflict, not Degraded.
    let errored = cond(&ls, CONDITION_ERRORED);
    assert_eq!(errored.status, "True");
    assert!(
        errored.message.as_deref().unwrap().contains("Conflict"),
        "{errored:?}"
    );
    assert_eq!(
        cond(&ls, CONDITION_DEGRADED).status,
        "False",
        "a lost conflict is not a write failure"
    );
    let ws = status_of(&winner, &p.outcomes, None, T0);
    let c = cond(&ws, CONDITION_CONFLICT);
    assert_eq!(
        (c.status.as_str(), c.reason.as_deref()),
        ("True", Some(REASON_CONFLICT_WON))
    );
    assert!(c.message.as_deref().unwrap().contains("ops/young"));
    assert_eq!(cond(&ws, CONDITION_READY).status, "True");
    assert_eq!(ws.synchronized_item_count, 1);
}

/// One walk for several SyncConfigs gives each the summary of its own:
/// counts, failures, conflicts both ways, deletions; a SyncConfig with no
/// outcome gets an empty one, and SyncConfigs not asked for none.
#[test]
fn summaries_of_several_syncconfigs_are_each_their_own() {
    let a = ItemRef::Sync(0);
    let mut lost = outcome(
        "young",
        a,
        OutcomeState::Conflict {
            winner: ConfigRef::new("ops", "old"),
            winner_item: a,
        },
    );
    lost.target.name = "y".into();
    let mut won = outcome("old", a, OutcomeState::InSync);
    won.contenders = vec![ConfigRef::new("ops", "young")];
    let all = vec![
        won,
        lost,
        outcome(
            "old",
            ItemRef::Sync(1),
            OutcomeState::Failed {
                reason: "boom".into(),
            },
        ),
        outcome("old", ItemRef::Delete(0), OutcomeState::Deleted),
        outcome("young", ItemRef::Sync(1), OutcomeState::Applied),
        outcome("other", a, OutcomeState::InSync),
    ];
    let asked: std::collections::BTreeSet<ConfigRef> = ["old", "young", "idle"]
        .iter()
        .map(|n| ConfigRef::new("ops", *n))
        .collect();
    let each = summarize_each(&asked, &all);
    assert_eq!(each.len(), 3);
    for key in &asked {
        let one = summarize(key, &all);
        let many = &each[key];
        assert_eq!(
            (many.synchronized, many.failed, many.deleted, &many.failures),
            (one.synchronized, one.failed, one.deleted, &one.failures),
            "{key}"
        );
        assert_eq!(
            (&many.lost_to, &many.won_over),
            (&one.lost_to, &one.won_over)
        );
    }
    let old = &each[&ConfigRef::new("ops", "old")];
    assert_eq!((old.synchronized, old.failed, old.deleted), (1, 1, 1));
    assert_eq!(old.failures, vec!["n ConfigMap/x: boom".to_string()]);
    assert_eq!(each[&ConfigRef::new("ops", "young")].lost_to.len(), 1);
    assert_eq!(each[&ConfigRef::new("ops", "idle")].synchronized, 0);
}

#[test]
fn an_invalid_spec_is_reported_with_field_paths() {
    let c = config(
        "bad",
        1,
        json!({"namespaceSelector": {"matchNames": ["ok", "(", "[x"]}, "syncItems": [configmap("x", json!({}))]}),
    );
    let s = status_of(&c, &[], None, T0);
    let invalid = cond(&s, CONDITION_INVALID);
    assert_eq!(invalid.status, "True");
    assert_eq!(invalid.reason.as_deref(), Some(REASON_INVALID));
    let message = invalid.message.as_deref().unwrap();
    assert!(
        message.contains("spec.namespaceSelector.matchNames[1]"),
        "{message}"
    );
    assert!(
        message.contains("spec.namespaceSelector.matchNames[2]"),
        "{message}"
    );
    assert_eq!(cond(&s, CONDITION_READY).status, "False");
    assert_eq!(
        (
            s.synchronized_item_count,
            s.deleted_item_count,
            s.failed_item_count
        ),
        (0, 0, 0)
    );
}

#[test]
fn messages_are_bounded() {
    let c = base();
    let many: Vec<ItemOutcome> = (0..12)
        .map(|i| {
            outcome(
                "base",
                ItemRef::Sync(i),
                OutcomeState::Failed {
                    reason: format!("r{i:02}"),
                },
            )
        })
        .collect();
    let s = status_of(&c, &many, None, T0);
    let message = cond(&s, CONDITION_ERRORED).message.clone().unwrap();
    assert!(message.ends_with("(and 7 more)"), "{message}");
    assert_eq!(message.matches("ConfigMap/x").count(), 5);
}

#[test]
fn conditions_of_other_types_are_kept() {
    let c = base();
    let previous = SyncConfigStatus {
        conditions: vec![SyncConfigCondition {
            type_: "Custom".into(),
            status: "True".into(),
            last_transition_time: Some("2020-01-01T00:00:00Z".into()),
            reason: Some("Why".into()),
            message: None,
        }],
        ..Default::default()
    };
    let s = status_of(&c, &[], Some(&previous), T0);
    assert!(
        s.conditions
            .iter()
            .any(|c| c.type_ == "Custom" && c.reason.as_deref() == Some("Why"))
    );
    assert_eq!(s.conditions.len(), 6);
}

#[test]
fn pending_namespaces_keep_ready_false_until_done() {
    let c = base();
    let done = [outcome("base", ItemRef::Sync(0), OutcomeState::InSync)];
    let mut summary = summarize(&c.key, &done);
    summary.pending = 3;
    let s = desired_status(&c, &summary, None, T0);
    let ready = cond(&s, CONDITION_READY);
    assert_eq!(ready.status, "False");
    assert_eq!(
        ready.reason.as_deref(),
        Some(mirra_mirror::status::REASON_PENDING)
    );
    assert!(
        ready
            .message
            .as_deref()
            .unwrap_or_default()
            .contains("3 namespace(s) not synchronized yet"),
        "{:?}",
        ready.message
    );
    // Pending is no failure.
    assert_eq!(cond(&s, CONDITION_ERRORED).status, "False");
    assert_eq!(s.synchronized_item_count, 1);
    summary.pending = 0;
    let s2 = desired_status(&c, &summary, Some(&s), T1);
    assert_eq!(cond(&s2, CONDITION_READY).status, "True");
    assert!(status_changed(Some(&s), &s2));
    // A failure wins over pending.
    let failed = [outcome(
        "base",
        ItemRef::Sync(0),
        OutcomeState::Failed {
            reason: "boom".into(),
        },
    )];
    let mut summary = summarize(&c.key, &failed);
    summary.pending = 2;
    let s = desired_status(&c, &summary, None, T0);
    assert_eq!(
        cond(&s, CONDITION_READY).reason.as_deref(),
        Some(REASON_FAILED)
    );
}

#[test]
fn a_syncconfig_over_a_limit_is_not_ready_with_the_limit_named_first() {
    let c = base();
    // Failures and pending namespaces as well: the limit is what the user
    // must fix first, nothing is written before.
    let mut summary = summarize(
        &c.key,
        &[outcome(
            "base",
            ItemRef::Sync(0),
            OutcomeState::Failed {
                reason: "boom".into(),
            },
        )],
    );
    summary.pending = 3;
    summary.limit = Some("30000 copies exceed (--max-copies-per-syncconfig)".into());
    let s = desired_status(&c, &summary, None, T0);
    let ready = cond(&s, CONDITION_READY);
    assert_eq!(ready.status, "False");
    assert_eq!(
        ready.reason.as_deref(),
        Some(mirra_mirror::status::REASON_LIMIT_EXCEEDED)
    );
    let message = ready.message.as_deref().unwrap();
    assert!(
        message.starts_with("30000 copies exceed (--max-copies-per-syncconfig); "),
        "{message}"
    );
    assert!(
        message.contains(mirra_mirror::status::LIMIT_CONSEQUENCE),
        "{message}"
    );
    // The other conditions are computed as usual.
    assert_eq!(cond(&s, CONDITION_ERRORED).status, "True");
    // Back under the limit: the usual reasons again, a transition.
    summary.limit = None;
    let again = desired_status(&c, &summary, Some(&s), T1);
    assert_eq!(
        cond(&again, CONDITION_READY).reason.as_deref(),
        Some(REASON_FAILED)
    );
    assert!(status_changed(Some(&s), &again));
    // Held outcomes count as neither synchronized nor failed.
    let held = summarize(
        &c.key,
        &[outcome("base", ItemRef::Sync(0), OutcomeState::Held)],
    );
    assert_eq!((held.synchronized, held.failed), (0, 0));
}

#[test]
fn one_item_synchronized_is_ready_and_degraded_not_errored() {
    let c = base();
    let mixed = [
        outcome("base", ItemRef::Sync(0), OutcomeState::InSync),
        outcome(
            "base",
            ItemRef::Sync(1),
            OutcomeState::Failed {
                reason: "422 immutable".into(),
            },
        ),
    ];
    let s = status_of(&c, &mixed, None, T0);
    let ready = cond(&s, CONDITION_READY);
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_deref()),
        ("True", Some(REASON_SUCCEEDED))
    );
    assert!(
        ready.message.as_deref().unwrap().contains("1 failed"),
        "{ready:?}"
    );
    assert_eq!(cond(&s, CONDITION_ERRORED).status, "False");
    let degraded = cond(&s, CONDITION_DEGRADED);
    assert_eq!(degraded.status, "True");
    assert_eq!(
        degraded.message.as_deref(),
        Some("n ConfigMap/x: 422 immutable")
    );
    assert_eq!((s.synchronized_item_count, s.failed_item_count), (1, 1));
    // A deletion counts like a synchronization (espejo: "could not sync or
    // delete any items").
    let deleted_and_failed = [
        outcome("base", ItemRef::Delete(0), OutcomeState::Deleted),
        mixed[1].clone(),
    ];
    let s = status_of(&c, &deleted_and_failed, None, T0);
    assert_eq!(cond(&s, CONDITION_READY).status, "True");
    assert_eq!(cond(&s, CONDITION_ERRORED).status, "False");
    assert_eq!(cond(&s, CONDITION_DEGRADED).status, "True");
}

#[test]
fn recent_deletes_are_counted_once_with_the_outcomes() {
    let c = base();
    let target = |name: &str| ObjectRef {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        namespace: "n".into(),
        name: name.into(),
    };
    let mut deleting = outcome("base", ItemRef::Delete(0), OutcomeState::Deleted);
    deleting.target = target("a");
    let mut summary = summarize(&c.key, &[deleting]);
    assert_eq!(summary.deleted, 1);
    // "a" is both being deleted and recently deleted; "b" is gone already.
    let recent = [target("a").key(), target("b").key()];
    summary.add_recent_deletes(recent.iter());
    assert_eq!(summary.deleted, 2);
    let s = desired_status(&c, &summary, None, T0);
    assert_eq!(s.deleted_item_count, 2);
    // Nothing else: a deletion alone is Ready.
    assert_eq!(cond(&s, CONDITION_READY).status, "True");
}

proptest::proptest! {
    /// espejo's rule, whatever the mix: Errored exactly when items failed
    /// and none was synchronized or deleted, Ready otherwise (with nothing
    /// pending and no limit), Degraded exactly when an item failed.
    #[test]
    fn ready_errored_and_degraded_follow_the_counters(
        states in proptest::collection::vec(0u8..5, 0..12)
    ) {
        let c = base();
        let outcomes: Vec<ItemOutcome> = states
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let (item, state) = match s {
                    0 => (ItemRef::Sync(i), OutcomeState::InSync),
                    1 => (ItemRef::Sync(i), OutcomeState::Applied),
                    2 => (ItemRef::Delete(i), OutcomeState::Deleted),
                    3 => (ItemRef::Delete(i), OutcomeState::Gone),
                    _ => (ItemRef::Sync(i), OutcomeState::Failed { reason: format!("r{i}") }),
                };
                let mut o = outcome("base", item, state);
                o.target.name = format!("x{i}").into();
                o
            })
            .collect();
        let s = status_of(&c, &outcomes, None, T0);
        let count = |k: &[u8]| states.iter().filter(|s| k.contains(s)).count() as i64;
        let (synced, deleted, failed) = (count(&[0, 1]), count(&[2]), count(&[4]));
        proptest::prop_assert_eq!(
            (s.synchronized_item_count, s.deleted_item_count, s.failed_item_count),
            (synced, deleted, failed)
        );
        let all_failed = failed > 0 && synced == 0 && deleted == 0;
        let is = |t: &str| cond(&s, t).status == "True";
        proptest::prop_assert_eq!(is(CONDITION_ERRORED), all_failed);
        proptest::prop_assert_eq!(is(CONDITION_READY), !all_failed);
        proptest::prop_assert_eq!(is(CONDITION_DEGRADED), failed > 0);
    }
}
