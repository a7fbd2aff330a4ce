#![allow(clippy::unwrap_used)]
use super::copy::observed_from_dynamic;
use super::*;
use crate::settings::WatchScope;
use serde_json::json;

fn configmaps() -> ApiResource {
    ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&())
}

/// A copy as the copies watch caches it.
pub(super) fn cached(o: DynamicObject) -> CachedCopy {
    CachedCopy::new(o, &configmaps()).unwrap()
}

pub(super) fn cm_kind() -> KindId {
    ("v1".into(), "ConfigMap".into())
}

/// SyncConfig `ops/base` wanting ConfigMap `c` in namespace `t`, naming
/// `account` when given.
fn base_config(account: Option<&str>) -> Value {
    let mut config = json!({
        "apiVersion": "sync.appuio.ch/v1alpha1", "kind": "SyncConfig",
        "metadata": {"name": "base", "namespace": "ops", "uid": "u-1",
                     "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {
            "namespaceSelector": {"matchNames": ["t"]},
            "syncItems": [{"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "c"}, "data": {"k": "v"}}],
        },
    });
    if let Some(account) = account {
        config["spec"]["serviceAccountName"] = json!(account);
    }
    config
}

/// A state with the caches listed: namespace `t`, one SyncConfig
/// `ops/base` wanting ConfigMap `c` there, and `copies` in the cache.
pub(super) fn state_with(copies: Vec<DynamicObject>) -> State {
    let mut s = State::default();
    let ns: Namespace = serde_json::from_value(json!({
        "metadata": {"name": "t"}, "status": {"phase": "Active"}
    }))
    .unwrap();
    s.namespaces.apply(Event::Init);
    s.namespaces.apply(Event::InitApply(ns));
    s.namespaces.apply(Event::InitDone);
    let config = base_config(None);
    let mut configs = Cache::new();
    configs.apply(Event::Init);
    configs.apply(Event::InitDone);
    s.configs.insert("ops".into(), configs);
    s.compiled.insert(
        ConfigRef::new("ops", "base"),
        CompiledConfig::from_json(&config),
    );
    s.compiled_changed();
    let mut cache = Cache::new();
    cache.apply(Event::Init);
    for c in copies {
        cache.apply(Event::InitApply(cached(c)));
    }
    cache.apply(Event::InitDone);
    s.kinds.insert(
        cm_kind(),
        KindEntry {
            resolution: Resolution::Served(configmaps()),
            unavailable: None,
            marked: MarkIndex::of(&cache),
            copies: cache,
            task: None,
            swept: false,
            cluster: false,
        },
    );
    s
}

pub(super) fn settings() -> Settings {
    Settings::for_tests(&["ops"])
}

pub(super) fn copy_t_c() -> CopyId {
    (cm_kind(), "t".into(), "c".into())
}

/// mirra's apply of `body` to copy t/c (planned with no copy cached),
/// answered with `version`.
pub(super) fn own_write(body: &Value, version: &str) -> OwnWrite {
    OwnWrite {
        version: version.into(),
        planned_from: None,
        body_hash: mirra_mirror::body_id(body).into_owned(),
        home: "t".into(),
        ..OwnWrite::default()
    }
}

pub(super) fn apply_body(plan: &NamespacePlan) -> Value {
    match plan.ops.as_slice() {
        [Op::Apply { body, .. }] => body.clone(),
        other => panic!("one apply expected: {other:?}"),
    }
}

/// The managedFields the API server records for mirra's apply of its
/// marks (what the caches keep of them).
fn written_by_mirra() -> Value {
    json!([{"manager": mirra_mirror::FIELD_MANAGER, "operation": "Apply", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": {
            "f:labels": {format!("f:{}", mirra_mirror::MANAGED_BY_LABEL): {}},
            "f:annotations": {format!("f:{}", mirra_mirror::OWNER_ANNOTATION): {}}}}}])
}

/// What the server answers the apply with, as the watch echoes it.
pub(super) fn echo(body: &Value, version: &str) -> DynamicObject {
    let mut obj: DynamicObject = serde_json::from_value(body.clone()).unwrap();
    obj.metadata.namespace = Some("t".into());
    obj.metadata.uid = Some("c-uid".into());
    obj.metadata.resource_version = Some(version.into());
    obj.metadata.managed_fields = serde_json::from_value(written_by_mirra()).unwrap();
    obj
}

#[test]
fn a_written_copy_is_not_applied_again_before_its_echo() {
    let mut s = state_with(Vec::new());
    assert!(s.caches_ready());
    let plan = s.plan("t", &settings());
    let body = apply_body(&plan);
    s.record_own_write(copy_t_c(), own_write(&body, "10"));
    // A verification pass between the answer and the echo: in step.
    let again = s.plan("t", &settings());
    assert!(again.ops.is_empty(), "{:?}", again.ops);
    assert!(
        again
            .outcomes
            .iter()
            .all(|o| o.state == OutcomeState::InSync),
        "{:?}",
        again.outcomes
    );
    // The echo settles it and is not queued; the plan stays empty.
    let keys = s.apply_copies(&cm_kind(), Event::Apply(cached(echo(&body, "10"))));
    assert!(keys.is_empty(), "{keys:?}");
    assert!(s.own_writes.is_empty());
    assert!(s.plan("t", &settings()).ops.is_empty());
}

#[test]
fn a_pending_write_does_not_hide_a_newer_edit_or_a_changed_spec() {
    let mut s = state_with(Vec::new());
    let body = apply_body(&s.plan("t", &settings()));
    // Someone's edit arrives before the answer of mirra's write: the
    // edit is queued, and the write's answer must not mask it.
    let mut edited = echo(&body, "11");
    edited.data["data"] = json!({"k": "changed"});
    let keys = s.apply_copies(&cm_kind(), Event::Apply(cached(edited)));
    assert_eq!(keys, BTreeSet::from(["t".to_string()]));
    s.record_own_write(copy_t_c(), own_write(&body, "10"));
    assert_eq!(apply_body(&s.plan("t", &settings())), body);

    // A pending write of other content (the spec changed since) does
    // not stand for the wanted content either.
    let mut s = state_with(Vec::new());
    s.record_own_write(
        copy_t_c(),
        OwnWrite {
            version: "10".into(),
            planned_from: None,
            body_hash: mirra_mirror::body_id(&json!({"older": true})).into_owned(),
            home: "t".into(),
            ..OwnWrite::default()
        },
    );
    assert_eq!(s.plan("t", &settings()).ops.len(), 1);
}

#[test]
fn copies_owned_outside_the_scope_are_neither_pruned_nor_overwritten() {
    let foreign = |name: &str| -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "t", "uid": format!("{name}-uid"),
                         "resourceVersion": "3",
                         "labels": {mirra_mirror::MANAGED_BY_LABEL: mirra_mirror::MANAGED_BY_VALUE},
                         "annotations": {mirra_mirror::OWNER_ANNOTATION: "tenant-b/theirs"},
                         // Another mirra deployment wrote them.
                         "managedFields": written_by_mirra()},
            "data": {"k": "theirs"},
        }))
        .unwrap()
    };
    // `c` is wanted by ops/base but owned by tenant-b/theirs; `other`
    // is wanted by nobody here.
    let s = state_with(vec![foreign("c"), foreign("other")]);
    let plan = s.plan("t", &settings());
    assert!(plan.ops.is_empty(), "{:?}", plan.ops);
    let states: Vec<(&str, &OutcomeState)> = plan
        .outcomes
        .iter()
        .map(|o| (o.target.name.as_str(), &o.state))
        .collect();
    assert_eq!(states.len(), 1, "{states:?}");
    match states[0] {
        ("c", OutcomeState::Failed { reason }) => {
            assert!(reason.contains("tenant-b/theirs"), "{reason}");
            assert!(reason.contains("--watch-namespace"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    // The same copies under a mirra that honours every namespace: the
    // oldest honoured SyncConfig takes `c`, and `other`, whose
    // SyncConfig does not exist, is pruned.
    let mut all = settings();
    all.scope = WatchScope::All;
    let plan = s.plan("t", &all);
    let ops: Vec<(&str, bool)> = plan
        .ops
        .iter()
        .map(|op| (op.target().name.as_str(), matches!(op, Op::Apply { .. })))
        .collect();
    assert_eq!(ops, vec![("c", true), ("other", false)]);
}

fn namespace(name: &str, team: &str, active: bool) -> Namespace {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"team": team}},
        "status": {"phase": if active { "Active" } else { "Terminating" }},
    }))
    .unwrap()
}

/// What `footprints` must hold: a recount of every SyncConfig.
fn recounted(s: &State) -> BTreeMap<ConfigRef, Footprint> {
    let mut copy = State {
        limits: s.limits,
        never_write: s.never_write.clone(),
        ..State::default()
    };
    copy.namespaces = Cache::new();
    copy.namespaces.apply(Event::Init);
    for (_, ns) in s.namespaces.iter() {
        copy.namespaces.apply(Event::InitApply(ns.clone()));
    }
    copy.namespaces.apply(Event::InitDone);
    copy.compiled = s.compiled.clone();
    let keys: Vec<ConfigRef> = copy.compiled.keys().cloned().collect();
    for k in keys {
        copy.recount_footprint(&k);
    }
    copy.footprints
}

/// A SyncConfig selecting `team=a`, compiled into `s` as a SyncConfig
/// event would (the event wiring is covered by tests/it/limits.rs).
fn add_team_config(s: &mut State, name: &str, items: usize) {
    let config = CompiledConfig::from_json(&team_config(name, items));
    let key = config.key.clone();
    s.compiled.insert(key.clone(), config);
    s.compiled_changed();
    s.recount_footprint(&key);
}

fn team_config(name: &str, items: usize) -> Value {
    let items: Vec<Value> = (0..items)
        .map(|i| {
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": format!("{name}-{i}")}, "data": {"k": "v"}})
        })
        .collect();
    json!({
        "apiVersion": "sync.appuio.ch/v1alpha1", "kind": "SyncConfig",
        "metadata": {"name": name, "namespace": "ops", "uid": format!("{name}-uid"),
                     "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"namespaceSelector": {"labelSelector": {"matchLabels": {"team": "a"}}},
                 "syncItems": items},
    })
}

#[test]
fn footprints_follow_namespaces_and_hold_only_the_syncconfig_over_a_limit() {
    let mut settings = settings();
    settings.limits.max_copies = 4;
    let mut s = State::new(&settings);
    s.namespaces.apply(Event::Init);
    s.namespaces.apply(Event::InitDone);
    add_team_config(&mut s, "big", 2);
    add_team_config(&mut s, "small", 1);
    let big = ConfigRef::new("ops", "big");
    let small = ConfigRef::new("ops", "small");
    assert_eq!(s.footprints[&big].items, 2);
    // Two namespaces: 4 copies, at the limit.
    for n in ["n1", "n2"] {
        s.apply_namespace(Event::Apply(namespace(n, "a", true)));
    }
    s.apply_namespace(Event::Apply(namespace("kube-system", "a", true)));
    assert_eq!(s.footprints, recounted(&s));
    assert_eq!(
        s.footprints[&big].namespaces, 2,
        "kube-system is not counted"
    );
    assert!(s.over_limit(&big).is_none());
    // A third crosses it: every namespace big selects is planned again.
    s.dirty_status.clear();
    let keys = s.apply_namespace(Event::Apply(namespace("n3", "a", true)));
    assert_eq!(keys.created, BTreeSet::from(["n3".to_string()]));
    let keys = keys.keys;
    // (kube-system among them: the planner leaves it alone.)
    assert_eq!(
        keys,
        ["kube-system", "n1", "n2", "n3"]
            .iter()
            .map(|n| n.to_string())
            .collect()
    );
    assert!(s.dirty_status.contains_key(&big));
    let e = s.over_limit(&big).unwrap();
    assert_eq!(e.flag(), "--max-copies-per-syncconfig");
    assert!(s.over_limit(&small).is_none());
    // Nothing of big is planned; small is.
    let plan = s.plan("n3", &settings);
    let ops: Vec<&str> = plan.ops.iter().map(|o| o.target().name.as_str()).collect();
    assert_eq!(ops, vec!["small-0"]);
    let held: Vec<&str> = plan
        .outcomes
        .iter()
        .filter(|o| o.state == OutcomeState::Held)
        .map(|o| o.target.name.as_str())
        .collect();
    assert_eq!(held, vec!["big-0", "big-1"]);
    // Terminating, relabelled and deleted namespaces count no more.
    s.apply_namespace(Event::Apply(namespace("n3", "a", false)));
    assert!(s.over_limit(&big).is_none());
    s.apply_namespace(Event::Apply(namespace("n3", "a", true)));
    s.apply_namespace(Event::Apply(namespace("n2", "b", true)));
    assert!(s.over_limit(&big).is_none());
    s.apply_namespace(Event::Delete(namespace("n1", "a", true)));
    assert_eq!(s.footprints, recounted(&s));
    assert_eq!(s.footprints[&big].namespaces, 1);
    // A relist that misses a namespace counts it out as well.
    s.apply_namespace(Event::Init);
    s.apply_namespace(Event::InitApply(namespace("n2", "a", true)));
    s.apply_namespace(Event::InitDone);
    assert_eq!(s.footprints, recounted(&s));
    assert_eq!(s.footprints[&big].namespaces, 1);
    // A deleted SyncConfig leaves no footprint.
    s.compiled.remove(&big);
    s.recount_footprint(&big);
    assert!(!s.footprints.contains_key(&big));
}

fn delete_outcome(state: OutcomeState) -> ItemOutcome {
    ItemOutcome {
        config: ConfigRef::new("ops", "base"),
        item: mirra_mirror::ItemRef::Delete(0),
        target: mirra_mirror::ObjectRef {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: "t".into(),
            name: "legacy".into(),
        },
        state,
        contenders: Vec::new(),
    }
}

fn plan_statuses_now(s: &mut State) -> Vec<StatusWrite> {
    let idle = |_: &String| false;
    s.plan_statuses(&StatusRound {
        now: Instant::now(),
        busy: false,
        max_delay: std::time::Duration::from_secs(1),
        now_str: "2026-01-01T00:00:00Z",
        is_queued: &idle,
    })
}

fn land(s: &mut State, w: StatusWrite) -> SyncConfigStatus {
    s.status_written(&w.key, w.new.clone(), None, None, &w.deletes_shown);
    w.new
}

#[test]
fn a_deletion_stays_counted_until_the_next_status() {
    let mut s = state_with(Vec::new());
    let key = ConfigRef::new("ops", "base");
    let legacy = delete_outcome(OutcomeState::Gone).target.key();
    let now = Instant::now();
    // The pass that deletes it.
    s.record_deleted_item(&key, legacy.clone());
    s.store_outcomes("t", vec![delete_outcome(OutcomeState::Deleted)], now);
    let mut todo = plan_statuses_now(&mut s);
    assert_eq!(todo.len(), 1);
    let written = land(&mut s, todo.remove(0));
    assert_eq!(written.deleted_item_count, 1);
    // The watch shows it gone: the outcome moves, the status does not.
    s.store_outcomes("t", vec![delete_outcome(OutcomeState::Gone)], now);
    assert!(plan_statuses_now(&mut s).is_empty());
    // Something else moves the status: that next status no longer
    // counts the earlier deletion.
    let synced = ItemOutcome {
        item: mirra_mirror::ItemRef::Sync(0),
        state: OutcomeState::InSync,
        target: mirra_mirror::ObjectRef {
            name: "c".into(),
            ..delete_outcome(OutcomeState::Gone).target
        },
        ..delete_outcome(OutcomeState::Gone)
    };
    s.store_outcomes("t", vec![delete_outcome(OutcomeState::Gone), synced], now);
    let mut todo = plan_statuses_now(&mut s);
    assert_eq!(todo.len(), 1);
    let next = land(&mut s, todo.remove(0));
    assert_eq!(
        (next.synchronized_item_count, next.deleted_item_count),
        (1, 0)
    );
    assert!(s.recent_deletes.is_empty());
}

#[test]
fn a_deletion_whose_status_write_failed_is_still_counted() {
    let mut s = state_with(Vec::new());
    let key = ConfigRef::new("ops", "base");
    let now = Instant::now();
    s.record_deleted_item(&key, delete_outcome(OutcomeState::Gone).target.key());
    s.store_outcomes("t", vec![delete_outcome(OutcomeState::Deleted)], now);
    assert_eq!(plan_statuses_now(&mut s).len(), 1);
    // Not landed: planned again after the object is gone, still counted.
    s.status_write_failed(&key);
    s.store_outcomes("t", vec![delete_outcome(OutcomeState::Gone)], now);
    let todo = plan_statuses_now(&mut s);
    assert_eq!(todo.len(), 1);
    assert_eq!(todo[0].new.deleted_item_count, 1);
}

#[test]
fn condition_counts_follow_the_written_statuses() {
    let mut s = state_with(Vec::new());
    let count = |s: &State, c: &str| {
        s.condition_counts()
            .into_iter()
            .find(|(t, _)| *t == c)
            .map(|(_, n)| n)
    };
    // Every condition has a series, 0 before any status.
    assert_eq!(s.condition_counts().len(), 5);
    assert_eq!(count(&s, "Ready"), Some(0));
    let now = Instant::now();
    s.store_outcomes("t", vec![delete_outcome(OutcomeState::Deleted)], now);
    let todo = plan_statuses_now(&mut s).remove(0);
    let written = land(&mut s, todo);
    let is_true = |c: &str| {
        written
            .conditions
            .iter()
            .any(|x| x.type_ == c && x.status == "True")
    };
    for c in ["Ready", "Invalid", "Errored", "Degraded", "Conflict"] {
        assert_eq!(count(&s, c), Some(usize::from(is_true(c))), "{c}");
    }
    assert_eq!(count(&s, "Ready"), Some(1));
}

/// The reason of the `Ready` condition once the statuses due while `t`
/// is queued (the debounce run out) are written.
fn ready_reason_while_t_is_queued(s: &mut State) -> String {
    let queued = |n: &String| n == "t";
    let todo = s.plan_statuses(&StatusRound {
        now: Instant::now(),
        busy: true,
        max_delay: std::time::Duration::ZERO,
        now_str: "2026-01-01T00:00:00Z",
        is_queued: &queued,
    });
    for w in todo {
        land(s, w);
    }
    let status = s.stored_status(&ConfigRef::new("ops", "base"));
    let ready = status
        .iter()
        .flat_map(|st| st.conditions.iter())
        .find(|c| c.type_ == "Ready")
        .and_then(|c| c.reason.clone());
    ready.unwrap_or_default()
}

#[test]
fn a_namespace_queued_by_the_verification_pass_alone_is_not_pending() {
    let t = "t".to_string();
    let synced = |name: &str| ItemOutcome {
        item: mirra_mirror::ItemRef::Sync(0),
        state: OutcomeState::InSync,
        target: mirra_mirror::ObjectRef {
            name: name.into(),
            ..delete_outcome(OutcomeState::Gone).target
        },
        ..delete_outcome(OutcomeState::Gone)
    };
    let mut s = state_with(Vec::new());
    s.store_outcomes("t", vec![synced("a")], Instant::now());
    // Queued by an event: its copies may be about to change.
    assert_eq!(
        ready_reason_while_t_is_queued(&mut s),
        "SynchronizationPending"
    );
    // Done; then queued by the pass alone: its outcomes stand.
    s.verified("t");
    s.store_outcomes("t", vec![synced("b")], Instant::now());
    s.note_verifying([&t], |_| false);
    assert_eq!(
        ready_reason_while_t_is_queued(&mut s),
        "SynchronizationSucceeded"
    );
    // An event queues it again mid-pass: pending once more.
    s.forget_verifying([&t]);
    s.store_outcomes("t", vec![synced("c")], Instant::now());
    assert_eq!(
        ready_reason_while_t_is_queued(&mut s),
        "SynchronizationPending"
    );
    // The pass does not mark a namespace other work already queued, and
    // the mark goes when a worker is done with it.
    s.verified("t");
    s.note_verifying([&t], |_| true);
    s.store_outcomes("t", vec![synced("d")], Instant::now());
    assert_eq!(
        ready_reason_while_t_is_queued(&mut s),
        "SynchronizationPending"
    );
    s.note_verifying([&t], |_| false);
    s.verified("t");
    s.store_outcomes("t", vec![synced("e")], Instant::now());
    assert_eq!(
        ready_reason_while_t_is_queued(&mut s),
        "SynchronizationPending"
    );
}

/// The SyncConfig `ops/base` of [`state_with`] with `data`, as its watch
/// brings it (so that its stamp changes as in the controller).
fn base_config_event(data: &str, version: &str) -> Event<ConfigObject> {
    let text = json!({
        "apiVersion": "sync.appuio.ch/v1alpha1", "kind": "SyncConfig",
        "metadata": {"name": "base", "namespace": "ops", "uid": "u-1",
                     "resourceVersion": version,
                     "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {
            "namespaceSelector": {"matchNames": ["t"]},
            "syncItems": [{"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "c"}, "data": {"k": data}}],
        },
    })
    .to_string();
    Event::Apply(ConfigObject::from_json_text(&text).unwrap())
}

/// A copy a plan found in step is vouched for by the next plans (not
/// rendered: no claim made again) until its SyncConfig's plan input
/// changes or the copy itself changes; then it is compared afresh and
/// the difference applied.
#[test]
fn a_verified_copy_is_trusted_until_it_or_its_syncconfig_changes() {
    let mut s = state_with(Vec::new());
    // Through the watch, as in the controller (state_with's SyncConfig
    // has no stamp: nothing is vouched for without one).
    s.apply_config("ops", base_config_event("v1", "1"), Instant::now());
    let body = apply_body(&s.plan("t", &settings()));
    s.apply_copies(&cm_kind(), Event::Apply(cached(echo(&body, "10"))));

    let first = s.plan_with_claims("t", &settings());
    assert!(first.plan.ops.is_empty(), "{:?}", first.plan.ops);
    assert_eq!(
        first.claims.len(),
        1,
        "the copy was compared and found in step"
    );
    s.remember_verified(first.claims);
    let vouched = s.plan_with_claims("t", &settings());
    assert!(vouched.plan.ops.is_empty());
    assert!(vouched.claims.is_empty(), "vouched for, not compared again");
    assert_eq!(vouched.plan.outcomes[0].state, OutcomeState::InSync);

    // A status-only change of the SyncConfig keeps the claim.
    s.apply_config("ops", base_config_event("v1", "2"), Instant::now());
    assert!(s.plan_with_claims("t", &settings()).claims.is_empty());

    // The item changes: the copy is rendered and the edit applied.
    s.apply_config("ops", base_config_event("w", "3"), Instant::now());
    let edited = apply_body(&s.plan("t", &settings()));
    assert_eq!(edited["data"]["k"], "w");
    s.apply_copies(&cm_kind(), Event::Apply(cached(echo(&edited, "11"))));
    let again = s.plan_with_claims("t", &settings());
    assert!(again.plan.ops.is_empty());
    s.remember_verified(again.claims);
    assert!(s.plan_with_claims("t", &settings()).claims.is_empty());

    // Someone edits the copy: a new cache entry, compared afresh.
    let mut drifted = echo(&edited, "12");
    drifted.data["data"] = json!({"k": "by hand"});
    s.apply_copies(&cm_kind(), Event::Apply(cached(drifted)));
    let repaired = apply_body(&s.plan("t", &settings()));
    assert_eq!(repaired["data"]["k"], "w");
}

/// An edit of a SyncConfig plans a namespace for that SyncConfig alone,
/// but only when the namespace's last pass ended clean and nothing else
/// happened there since; otherwise the plan is full.
#[test]
fn only_an_edit_since_a_clean_pass_narrows_the_next_plan() {
    let now = Instant::now();
    let mut s = state_with(Vec::new());
    let base = BTreeSet::from([ConfigRef::new("ops", "base")]);
    let edit = |s: &mut State, data: &str, version: &str| {
        let (keys, _) = s.apply_config("ops", base_config_event(data, version), now);
        s.note_edited(keys.iter(), now);
    };
    edit(&mut s, "v1", "1");
    // Never planned: in full.
    assert_eq!(s.take_plan_scope("t"), None);
    let first = s.plan_scoped("t", &settings(), None);
    assert_eq!(first.narrowed, None);
    s.store_plan_outcomes("t", None, first.plan.outcomes.clone(), now);
    s.pass_ended("t", true);

    edit(&mut s, "w", "2");
    let only = s.take_plan_scope("t");
    assert_eq!(only.as_ref(), Some(&base));
    let narrow = s.plan_scoped("t", &settings(), only.as_ref());
    assert_eq!(narrow.narrowed.as_ref(), Some(&base));
    assert_eq!(apply_body(&narrow.plan)["data"]["k"], "w");
    let full = s.plan_scoped("t", &settings(), None);
    assert_eq!(narrow.plan.ops, full.plan.ops, "the full plan's writes");
    assert_eq!(narrow.plan.outcomes, full.plan.outcomes);
    s.store_plan_outcomes("t", narrow.narrowed.as_ref(), narrow.plan.outcomes, now);
    assert_eq!(s.outcomes["t"].len(), first.plan.outcomes.len());
    s.pass_ended("t", true);

    // Another event of the namespace after the edit: in full.
    edit(&mut s, "x", "3");
    s.note_dirty([String::from("t")].iter(), now);
    assert_eq!(s.take_plan_scope("t"), None);
    s.pass_ended("t", true);

    // A pass that did not end clean: the next edit plans in full.
    assert_eq!(s.take_plan_scope("t"), None);
    s.pass_ended("t", false);
    edit(&mut s, "y", "4");
    assert_eq!(s.take_plan_scope("t"), None);
    s.pass_ended("t", true);

    // An event while a pass runs: that pass does not leave it clean.
    edit(&mut s, "z", "5");
    assert_eq!(s.take_plan_scope("t").as_ref(), Some(&base));
    s.note_dirty([String::from("t")].iter(), now);
    s.pass_ended("t", true);
    edit(&mut s, "zz", "6");
    assert_eq!(s.take_plan_scope("t"), None);
}

/// `ops/base` as its watch brings it, wanting ConfigMaps `names` in `t`.
fn base_config_items(names: &[&str], data: &str, version: &str) -> Event<ConfigObject> {
    let items: Vec<Value> = names
        .iter()
        .map(|n| {
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": n}, "data": {"k": data}})
        })
        .collect();
    let text = json!({
        "apiVersion": "sync.appuio.ch/v1alpha1", "kind": "SyncConfig",
        "metadata": {"name": "base", "namespace": "ops", "uid": "u-1",
                     "resourceVersion": version,
                     "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"namespaceSelector": {"matchNames": ["t"]}, "syncItems": items},
    })
    .to_string();
    Event::Apply(ConfigObject::from_json_text(&text).unwrap())
}

/// A narrow plan finds its SyncConfig's copies by the names its items
/// give, and reads the namespace's other copies only when the owner
/// counts say it owns more there: a copy whose item was removed is still
/// pruned, as the full plan prunes it, and a SyncConfig's copies are
/// found in the namespaces that hold them.
#[test]
fn a_narrow_plan_still_finds_a_copy_no_item_names_any_more() {
    let now = Instant::now();
    let mut s = state_with(Vec::new());
    let base = ConfigRef::new("ops", "base");
    let edit = |s: &mut State, names: &[&str], data: &str, version: &str| {
        let (keys, _) = s.apply_config("ops", base_config_items(names, data, version), now);
        s.note_edited(keys.iter(), now);
    };
    edit(&mut s, &["c", "d"], "v1", "1");
    assert_eq!(s.take_plan_scope("t"), None, "never planned: in full");
    let first = s.plan_scoped("t", &settings(), None);
    assert_eq!(first.plan.ops.len(), 2, "{:?}", first.plan.ops);
    for (i, op) in first.plan.ops.iter().enumerate() {
        let Op::Apply { body, .. } = op else {
            panic!("an apply expected: {op:?}")
        };
        let mut copy = echo(body, &format!("1{i}"));
        copy.metadata.uid = Some(format!("uid-{i}"));
        s.apply_copies(&cm_kind(), Event::Apply(cached(copy)));
    }
    assert_eq!(
        s.namespaces_with_copies_of(&base),
        BTreeSet::from(["t".to_string()])
    );
    s.pass_ended("t", true);
    assert_eq!(s.take_plan_scope("t"), None);
    let in_step = s.plan_scoped("t", &settings(), None);
    assert!(in_step.plan.ops.is_empty(), "{:?}", in_step.plan.ops);
    s.store_plan_outcomes("t", None, in_step.plan.outcomes, now);
    s.pass_ended("t", true);

    // Item d removed: the narrow plan must still see copy d to prune it.
    edit(&mut s, &["c"], "v1", "2");
    let only = s.take_plan_scope("t");
    assert_eq!(only, Some(BTreeSet::from([base.clone()])));
    let narrow = s.plan_scoped("t", &settings(), only.as_ref());
    let full = s.plan_scoped("t", &settings(), None);
    assert_eq!(narrow.narrowed, only, "planned narrow");
    assert_eq!(narrow.plan.ops, full.plan.ops, "the full plan's writes");
    assert_eq!(narrow.plan.outcomes, full.plan.outcomes);
    assert!(
        narrow
            .plan
            .ops
            .iter()
            .any(|op| matches!(op, Op::Delete { target, .. } if target.name.as_str() == "d")),
        "copy d pruned: {:?}",
        narrow.plan.ops
    );

    // Once d is gone, the SyncConfig's copies are still found in t.
    let gone = s.kinds[&cm_kind()]
        .copies
        .get(Some("t"), "d")
        .map(|c| c.observed.clone());
    let mut deleted = echo(
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "d"}}),
        "20",
    );
    deleted.metadata.uid = gone.map(|o| o.uid.clone());
    s.apply_copies(&cm_kind(), Event::Delete(cached(deleted)));
    assert_eq!(
        s.namespaces_with_copies_of(&base),
        BTreeSet::from(["t".to_string()])
    );
}

/// The cached form built from the typed object equals the JSON form made
/// compact: the planner sees the same object either way.
#[test]
fn a_cached_copy_is_its_json_form_made_compact() {
    let cases = [
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "t", "uid": "u", "resourceVersion": "3",
                "creationTimestamp": "2026-01-01T00:00:00Z",
                "labels": {"a": "1"}, "annotations": {"b": "2"},
                "finalizers": ["example.com/hold"], "deletionTimestamp": "2026-01-02T00:00:00Z",
                "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "o", "uid": "x"}],
                "managedFields": written_by_mirra()},
            "data": {"k": "v"}}),
        json!({"metadata": {"name": "bare"}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "t"},
            "binaryData": {"x": "AA=="}, "immutable": true}),
    ];
    for case in cases {
        let obj: DynamicObject = serde_json::from_value(case.clone()).unwrap();
        let typed = observed_from_dynamic(obj.clone(), &configmaps()).unwrap();
        let mut json_form = serde_json::to_value(&obj).unwrap();
        json_form["apiVersion"] = json!("v1");
        json_form["kind"] = json!("ConfigMap");
        let mut expected = ObservedObject::from_json(json_form).unwrap();
        expected.compact();
        assert_eq!(typed, expected, "{case}");
    }
    let nameless: DynamicObject =
        serde_json::from_value(json!({"metadata": {"namespace": "t"}})).unwrap();
    assert!(observed_from_dynamic(nameless, &configmaps()).is_none());
}

/// An object an apply of this process created stays "made here" until
/// its watch event arrives: a second apply answered 200 meanwhile is no
/// adoption.
#[test]
fn a_creation_is_remembered_until_its_echo() {
    let mut s = state_with(Vec::new());
    let plan = s.plan("t", &settings());
    let body = apply_body(&plan);
    assert!(!s.created_here("c-uid"));
    s.remember_created("c-uid");
    s.remember_created("");
    assert!(s.created_here("c-uid"));
    assert!(
        !s.created_here(""),
        "an answer without a uid proves nothing"
    );
    s.apply_copies(&cm_kind(), Event::Apply(cached(echo(&body, "10"))));
    assert!(!s.created_here("c-uid"), "the echo ends it");
}

/// [`state_with`], its SyncConfig naming ServiceAccount `syncer`.
fn tenant_state() -> State {
    let mut s = state_with(Vec::new());
    let key = ConfigRef::new("ops", "base");
    s.compiled
        .insert(key, CompiledConfig::from_json(&base_config(Some("syncer"))));
    s.compiled_changed();
    s
}

#[test]
fn a_tenant_plans_only_where_its_account_may_read() {
    let mut s = tenant_state();
    let access_key: AccessKey = (
        "system:serviceaccount:ops:syncer".into(),
        "t".into(),
        String::new(),
        "configmaps".into(),
    );
    // Not asked yet: nothing written, the item waits, one review wanted.
    let p = s.plan_with_claims("t", &settings());
    assert!(p.plan.ops.is_empty());
    assert_eq!(p.plan.outcomes[0].state, OutcomeState::Pending);
    assert_eq!(p.reviews, vec![access_key.clone()]);
    assert_eq!(s.ask_access(p.reviews.clone()), p.reviews);
    assert!(s.ask_access(p.reviews).is_empty(), "asked once");
    assert!(s.plan_with_claims("t", &settings()).reviews.is_empty());

    // Refused: the item fails with the reason, nothing is written.
    s.access_answered(access_key.clone(), Some(Access::Denied("no".into())));
    let p = s.plan_with_claims("t", &settings());
    assert!(p.plan.ops.is_empty());
    assert_eq!(
        p.plan.outcomes[0].state,
        OutcomeState::Failed {
            reason: "no".into()
        }
    );
    // Forgotten at the verification pass: asked again.
    s.forget_access_refusals();
    assert_eq!(
        s.plan_with_claims("t", &settings()).reviews,
        vec![access_key.clone()]
    );

    // Allowed: planned as any SyncConfig's.
    s.access_answered(access_key, Some(Access::Allowed));
    let p = s.plan_with_claims("t", &settings());
    assert_eq!(p.plan.ops.len(), 1);
    assert_eq!(p.plan.outcomes[0].state, OutcomeState::Applied);

    // A SyncConfig naming no account is never held back.
    let plain = state_with(Vec::new()).plan_with_claims("t", &settings());
    assert!(plain.reviews.is_empty());
    assert_eq!(plain.plan.ops.len(), 1);
}

/// A plan of the namespace between mirra's write and its echo ran without
/// the object in the cache (it could not prune it, were the namespace gone
/// meanwhile): the echo is queued after all. Without such a plan it is not.
#[test]
fn an_echo_is_planned_when_its_namespace_was_planned_before_it_came() {
    let mut s = state_with(Vec::new());
    let body = apply_body(&s.plan("t", &settings()));
    s.count_plan("t");
    let write = OwnWrite {
        version: "10".into(),
        body_hash: mirra_mirror::body_id(&body).into_owned(),
        home: "t".into(),
        ..OwnWrite::default()
    };
    s.record_own_write(copy_t_c(), write.clone());
    // Another namespace's plan does not count.
    s.count_plan("other");
    let keys = s.apply_copies(&cm_kind(), Event::Apply(cached(echo(&body, "10"))));
    assert!(keys.is_empty(), "{keys:?}");

    let mut s = state_with(Vec::new());
    s.record_own_write(copy_t_c(), write);
    s.count_plan("t");
    let keys = s.apply_copies(&cm_kind(), Event::Apply(cached(echo(&body, "10"))));
    assert_eq!(keys, BTreeSet::from(["t".to_string()]));
}

/// Outcomes kept for many namespaces share one text per name, and a plan
/// that changed nothing keeps the stored outcomes as they were.
#[test]
fn kept_outcomes_share_their_names_and_an_unchanged_plan_keeps_them() {
    let mut s = state_with(Vec::new());
    let now = Instant::now();
    let in_ns = |ns: &str| {
        let mut o = delete_outcome(OutcomeState::Gone);
        o.target.namespace = ns.into();
        vec![o]
    };
    s.store_outcomes("a", in_ns("a"), now);
    s.store_outcomes("b", in_ns("b"), now);
    fn text(s: &State, ns: &str, pick: fn(&ItemOutcome) -> &str) -> *const u8 {
        pick(&s.outcomes[ns][0]).as_ptr()
    }
    // Made apart (each `delete_outcome` builds its own strings), kept as one.
    assert_eq!(
        text(&s, "a", |o| o.config.name.as_str()),
        text(&s, "b", |o| o.config.name.as_str())
    );
    assert_eq!(
        text(&s, "a", |o| o.target.kind.as_str()),
        text(&s, "b", |o| o.target.kind.as_str())
    );
    assert_ne!(
        text(&s, "a", |o| o.target.namespace.as_str()),
        text(&s, "b", |o| o.target.namespace.as_str())
    );
    let kept = s.outcomes["a"].as_ptr();
    s.dirty_status.clear();
    s.store_outcomes("a", in_ns("a"), now);
    assert_eq!(s.outcomes["a"].as_ptr(), kept, "the stored outcomes stay");
    assert!(s.dirty_status.is_empty(), "nothing changed, no status due");
}
