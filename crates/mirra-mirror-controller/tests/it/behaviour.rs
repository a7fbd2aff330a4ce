//! Ownership, drift, pruning, deleteItems, conflicts, forceRecreate and
//! every failure reported as a status condition plus an Event, while the
//! other items and namespaces keep syncing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use kube_sandbox::FaultRule;
use mirra_mirror_controller::Settings;
use serde_json::json;

#[tokio::test]
async fn drift_is_restored_and_fields_of_others_survive() {
    let env = Env::new().await;
    env.create_ns("d", &[("team", "a")]).await;
    env.create_team_sc("base", "a", vec![cm_item("c", json!({"k": "v"}))])
        .await;
    let ctl = env.start(Settings::for_tests(&[OPS]));
    wait_for("copy", || async { env.cm("d", "c").await.is_some() }).await;
    env.settle().await;

    // Someone edits mirra's field and adds their own label and data key.
    env.merge_cm(
        "d",
        "c",
        json!({"metadata": {"labels": {"theirs": "yes"}}, "data": {"k": "edited", "extra": "1"}}),
    )
    .await;
    wait_for("restored", || async {
        env.cm_data("d", "c").await.unwrap()["k"] == "v"
    })
    .await;
    let cm = env.cm("d", "c").await.unwrap();
    assert_eq!(cm.metadata.labels.unwrap()["theirs"], "yes");
    assert_eq!(cm.data.unwrap()["extra"], "1");

    // Deleted by someone: recreated.
    let uid = env.cm("d", "c").await.unwrap().metadata.uid;
    env.cms("d").delete("c", &Default::default()).await.unwrap();
    wait_for("recreated", || async {
        env.cm("d", "c")
            .await
            .is_some_and(|c| c.metadata.uid != uid)
    })
    .await;
    env.sb.reset_stats();
    let stats = env.settle().await;
    assert_eq!(stats.writes(), 0, "no flapping: {:?}", stats.requests);
    ctl.stop().await;
}

#[tokio::test]
async fn prune_and_opt_out() {
    let env = Env::new().await;
    env.create_ns("p", &[("team", "a")]).await;
    env.create_cm("p", json!({"metadata": {"name": "legacy"}}))
        .await;
    env.create_team_sc(
        "pruned",
        "a",
        vec![cm_item("keep", json!({})), cm_item("drop", json!({}))],
    )
    .await;
    env.create_sc(
        "kept",
        json!({"sync.appuio.ch/prune": "false"}),
        spec_for_team("a", vec![cm_item("sticky", json!({}))]),
    )
    .await;
    env.create_sc(
        "cleaner",
        json!({}),
        json!({
            "namespaceSelector": {"matchNames": ["p"]},
            "deleteItems": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "legacy"}],
        }),
    )
    .await;
    let ctl = env.start(Settings::for_tests(&[OPS]));
    wait_for("synced", || async {
        let mut n = env.cm_names("p").await;
        n.sort();
        n == ["drop", "keep", "sticky"]
    })
    .await;
    // espejo's count: the object deleted by the deleteItem, kept until the
    // next status of "cleaner".
    wait_for("the deletion counted", || async {
        env.status("cleaner").await["deletedItemCount"] == 1
    })
    .await;

    // An item leaves the spec: its copy is pruned, nothing else.
    env.sb.reset_stats();
    env.patch_sc_spec("pruned", json!({"syncItems": [cm_item("keep", json!({}))]}))
        .await;
    wait_for("drop pruned", || async {
        env.cm("p", "drop").await.is_none()
    })
    .await;
    let stats = env.settle().await;
    assert_eq!(stats.get("delete configmaps"), 1);

    // SyncConfigs deleted: the opted-out one's copy stays, the other goes.
    env.sb.reset_stats();
    env.delete_sc("kept").await;
    env.delete_sc("pruned").await;
    wait_for("keep pruned", || async {
        env.cm("p", "keep").await.is_none()
    })
    .await;
    let stats = env.settle().await;
    assert_eq!(stats.get("delete configmaps"), 1);
    assert!(env.cm("p", "sticky").await.is_some());
    ctl.stop().await;
}

#[tokio::test]
async fn delete_items_delete_once_across_verification_passes() {
    let env = Env::new().await;
    // Not selected yet: the object is watched, and kept.
    env.create_ns("p", &[("team", "later")]).await;
    env.create_cm("p", json!({"metadata": {"name": "legacy"}}))
        .await;
    env.create_sc(
        "cleaner",
        json!({}),
        json!({
            "namespaceSelector": {"labelSelector": {"matchLabels": {"team": "a"}}},
            "deleteItems": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "legacy"}],
        }),
    )
    .await;
    let mut settings = Settings::for_tests(&[OPS]);
    // Passes every 20 ms re-plan `p` many times while the deletion is not
    // yet visible in the watch.
    settings.verify_interval = Some(std::time::Duration::from_millis(20));
    let ctl = env.start(settings);
    ctl.wait_ready().await;
    env.settle_counts().await;
    assert!(env.cm("p", "legacy").await.is_some());

    // The ConfigMap watches come back only 1.5 s after the next drop: the
    // delete is answered long before its watch event arrives.
    env.sb
        .inject(FaultRule {
            verb: Some("watch".into()),
            resource: Some("configmaps".into()),
            latency_ms: Some(1500),
            count: Some(2),
            ..Default::default()
        })
        .await
        .unwrap();
    env.sb.close_watches();
    env.sb.reset_stats();
    env.label_ns("p", json!({"team": "a"})).await;
    wait_for("legacy deleted", || async {
        env.cm("p", "legacy").await.is_none()
    })
    .await;
    // Both ConfigMap watches are back (and showed the deletion).
    wait_for("watches back", || async {
        env.sb.stats().get("watch configmaps") >= 2 && env.sb.stats().open_watches >= 4
    })
    .await;
    let stats = env.settle_counts().await;
    assert_eq!(stats.get("delete configmaps"), 1, "{:?}", stats.requests);
    assert_eq!(stats.namespaces["p"].get("delete configmaps"), Some(&1));
    // The deletion is counted (as espejo does) and stays counted while
    // passes see the object gone: that alone is no new status.
    wait_for("deletedItemCount 1", || async {
        env.status("cleaner").await["deletedItemCount"] == 1
    })
    .await;
    let after = env.settle_counts().await;
    assert_eq!(after.get("delete configmaps"), 1, "{:?}", after.requests);
    assert_eq!(env.status("cleaner").await["deletedItemCount"], 1);
    ctl.stop().await;
}

#[tokio::test]
async fn deleted_item_count_shows_a_deletion_until_the_next_status() {
    let env = Env::new().await;
    for ns in ["d1", "d2"] {
        env.create_ns(ns, &[("team", "a")]).await;
    }
    // Only d1 holds the object: d2's deleteItem finds nothing, which espejo
    // does not count either.
    env.create_cm("d1", json!({"metadata": {"name": "legacy"}}))
        .await;
    let mut spec = spec_for_team("a", vec![cm_item("keep", json!({}))]);
    spec["deleteItems"] = json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "legacy"}]);
    env.create_sc("cleaner", json!({}), spec.clone()).await;
    let ctl = env.start(Settings::for_tests(&[OPS]));
    wait_for("legacy deleted", || async {
        env.cm("d1", "legacy").await.is_none()
    })
    .await;
    wait_for("deletion counted", || async {
        let s = env.status("cleaner").await;
        s["deletedItemCount"] == 1 && s["synchronizedItemCount"] == 2
    })
    .await;
    // Idle: the count stays, and nothing more is written.
    env.settle().await;
    env.sb.reset_stats();
    let idle = env.settle().await;
    assert_eq!(idle.writes(), 0, "{:?}", idle.requests);
    let status = env.status("cleaner").await;
    assert_eq!(status["deletedItemCount"], 1, "{status}");
    assert_eq!(status["failedItemCount"], 0, "{status}");

    // The next status (an item added) counts what this reconcile deleted:
    // nothing.
    spec["syncItems"] = json!([cm_item("keep", json!({})), cm_item("more", json!({}))]);
    env.patch_sc_spec("cleaner", spec).await;
    wait_for("next status", || async {
        let s = env.status("cleaner").await;
        s["synchronizedItemCount"] == 4 && s["deletedItemCount"] == 0
    })
    .await;
    ctl.stop().await;
}

#[tokio::test]
async fn conflict_has_a_stable_winner_and_is_reported() {
    let env = Env::new().await;
    env.create_ns("c", &[("team", "a")]).await;
    // Same creation second is possible: the tie is broken by name, so
    // "alpha" wins either way.
    env.create_team_sc(
        "alpha",
        "a",
        vec![cm_item("shared", json!({"who": "alpha"}))],
    )
    .await;
    env.create_team_sc(
        "beta",
        "a",
        vec![
            cm_item("shared", json!({"who": "beta"})),
            cm_item("own", json!({})),
        ],
    )
    .await;
    let ctl = env.start(Settings::for_tests(&[OPS]));
    env.wait_condition("beta", "Conflict", "True").await;
    let (_, reason, message) = env.condition("beta", "Conflict").await.unwrap();
    assert_eq!(reason, "ConflictLost");
    assert!(message.contains("ops/alpha"), "{message}");
    assert_eq!(
        env.condition("alpha", "Conflict").await.unwrap().1,
        "ConflictWon"
    );
    assert_eq!(env.cm_data("c", "shared").await.unwrap()["who"], "alpha");
    assert!(
        env.cm("c", "own").await.is_some(),
        "the other item keeps syncing"
    );
    wait_for("event", || async {
        env.events("beta")
            .await
            .iter()
            .any(|(r, _)| r == "ConflictLost")
    })
    .await;
    env.settle().await;
    env.sb.reset_stats();
    let stats = env.settle().await;
    assert_eq!(stats.writes(), 0, "no flapping: {:?}", stats.requests);
    ctl.stop().await;
}

#[tokio::test]
async fn force_recreate_replaces_an_unmarked_object_and_adopts_a_mutable_one_in_place() {
    let env = Env::new().await;
    env.create_ns("f", &[("team", "a")]).await;
    // Made by hand (or by espejo): no marks of mirra, so mirra's caches do
    // not hold them.
    for (name, immutable) in [("frozen", true), ("plain", false)] {
        env.create_cm(
            "f",
            json!({"metadata": {"name": name},
                    "immutable": immutable, "data": {"v": "0", "theirs": "kept"}}),
        )
        .await;
    }
    let uid = |name: &'static str| {
        let env = &env;
        async move { env.cm("f", name).await.unwrap().metadata.uid }
    };
    let (frozen_uid, plain_uid) = (uid("frozen").await, uid("plain").await);
    env.create_sc(
        "frozen",
        json!({}),
        recreating_spec(
            "f",
            vec![
                immutable_cm_item("frozen", "1"),
                cm_item("plain", json!({"v": "1"})),
            ],
        ),
    )
    .await;
    env.sb.reset_stats();
    let ctl = env.start(Settings::for_tests(&[OPS]));
    wait_for("recreated", || async {
        env.cm("f", "frozen")
            .await
            .is_some_and(|c| c.metadata.uid != frozen_uid && c.data.unwrap()["v"] == "1")
    })
    .await;
    let stats = env.settle().await;
    // frozen: the refused apply, its marks, the refused apply again (now
    // cached, with its uid), the delete, the create; plain: one apply that
    // adopts it in place, one that says it was adopted.
    assert_eq!(stats.get("patch configmaps"), 6, "{:?}", stats.requests);
    assert_eq!(stats.get("delete configmaps"), 1, "{:?}", stats.requests);
    let plain = env.cm("f", "plain").await.unwrap();
    assert_eq!(plain.metadata.uid, plain_uid, "no delete without need");
    let data = plain.data.unwrap();
    assert_eq!((data["v"].as_str(), data["theirs"].as_str()), ("1", "kept"));
    // The recreated object is mirra's own: not marked adopted.
    let frozen = env.cm("f", "frozen").await.unwrap();
    assert!(
        !frozen
            .metadata
            .annotations
            .unwrap_or_default()
            .contains_key(mirra_mirror::ADOPTED_ANNOTATION)
    );
    wait_for("ready", || async {
        env.condition("frozen", "Ready")
            .await
            .is_some_and(|c| c.0 == "True")
            && env
                .condition("frozen", "Degraded")
                .await
                .is_some_and(|c| c.0 == "False")
    })
    .await;
    env.sb.reset_stats();
    let idle = env.settle().await;
    assert_eq!(idle.writes(), 0, "{:?}", idle.requests);
    ctl.stop().await;
}

#[tokio::test]
async fn force_recreate_held_by_a_finalizer_is_reported_without_a_loop_of_writes() {
    let env = Env::new().await;
    env.create_ns("f", &[("team", "a")]).await;
    env.create_cm(
        "f",
        json!({"metadata": {"name": "held",
                "finalizers": ["example.com/never"]},
                "immutable": true, "data": {"v": "0"}}),
    )
    .await;
    env.create_sc(
        "held",
        json!({}),
        recreating_spec(
            "f",
            vec![immutable_cm_item("held", "1"), cm_item("free", json!({}))],
        ),
    )
    .await;
    let mut settings = Settings::for_tests(&[OPS]);
    // Verification passes re-plan the namespace often meanwhile.
    settings.verify_interval = Some(std::time::Duration::from_millis(50));
    let ctl = env.start(settings);
    wait_for("reported", || async {
        env.condition("held", "Degraded").await.is_some_and(|c| {
            c.0 == "True" && c.2.contains("f ConfigMap/held") && c.2.contains("example.com/never")
        })
    })
    .await;
    wait_for("event", || async {
        env.events("held")
            .await
            .iter()
            .any(|(r, _)| r == "ItemsFailed")
    })
    .await;
    assert!(env.cm("f", "free").await.is_some(), "the other item syncs");
    assert_eq!(env.condition("held", "Ready").await.unwrap().0, "True");
    let held = env.cm("f", "held").await.unwrap();
    assert!(held.metadata.deletion_timestamp.is_some());
    assert_eq!(held.data.unwrap()["v"], "0");
    // Waiting writes nothing, however often the namespace is planned.
    env.settle_counts().await;
    env.sb.reset_stats();
    let idle = env.settle_counts().await;
    assert_eq!(idle.writes(), 0, "{:?}", idle.requests);

    // The finalizer goes: the object is gone and created afresh.
    env.merge_cm("f", "held", json!({"metadata": {"finalizers": null}}))
        .await;
    wait_for("recreated", || async {
        env.cm("f", "held")
            .await
            .is_some_and(|c| c.metadata.deletion_timestamp.is_none() && c.data.unwrap()["v"] == "1")
    })
    .await;
    env.wait_condition("held", "Degraded", "False").await;
    ctl.stop().await;
}

#[tokio::test]
async fn force_recreate_replaces_an_object_the_server_refuses_to_update() {
    let env = Env::new().await;
    env.create_ns("f", &[("team", "a")]).await;
    let item = |v: &str| immutable_cm_item("frozen", v);
    env.create_sc("frozen", json!({}), recreating_spec("f", vec![item("1")]))
        .await;
    env.create_sc(
        "stiff",
        json!({}),
        json!({
            "namespaceSelector": {"matchNames": ["f"]},
            "syncItems": [immutable_cm_item("stiff", "1")],
        }),
    )
    .await;
    let ctl = env.start(Settings::for_tests(&[OPS]));
    wait_for("created", || async {
        env.cm("f", "frozen").await.is_some() && env.cm("f", "stiff").await.is_some()
    })
    .await;
    env.settle().await;
    let uid = env.cm("f", "frozen").await.unwrap().metadata.uid;
    env.sb.reset_stats();
    env.patch_sc_spec("frozen", json!({"syncItems": [item("2")]}))
        .await;
    wait_for("recreated", || async {
        env.cm("f", "frozen")
            .await
            .is_some_and(|c| c.metadata.uid != uid && c.data.unwrap()["v"] == "2")
    })
    .await;
    let stats = env.settle().await;
    // The refused apply, the delete, the create-by-apply.
    assert_eq!(stats.get("patch configmaps"), 2, "{:?}", stats.requests);
    assert_eq!(stats.get("delete configmaps"), 1);

    // Without forceRecreate the refusal is reported and nothing is deleted.
    env.patch_sc_spec(
        "stiff",
        json!({"syncItems": [immutable_cm_item("stiff", "2")]}),
    )
    .await;
    env.wait_condition("stiff", "Degraded", "True").await;
    assert_eq!(env.cm_data("f", "stiff").await.unwrap()["v"], "1");
    wait_for("event", || async {
        env.events("stiff")
            .await
            .iter()
            .any(|(r, _)| r == "ItemsFailed")
    })
    .await;
    ctl.stop().await;
}

#[tokio::test]
async fn every_invalid_spec_is_reported_and_others_keep_syncing() {
    let env = Env::new().await;
    env.create_ns("v", &[("team", "a")]).await;
    let item = cm_item("fine", json!({}));
    // (name, spec, what the Invalid message must say: the field path first).
    let invalid = [
        (
            "no-selector",
            json!({"syncItems": [item.clone()]}),
            "spec.namespaceSelector: a namespace selector is required",
        ),
        (
            "no-items",
            json!({"namespaceSelector": {"matchNames": ["v"]}}),
            "spec: one of syncItems, deleteItems or copyItems is required",
        ),
        (
            "bad-pattern",
            json!({"namespaceSelector": {"matchNames": ["("]}, "syncItems": [item.clone()]}),
            "spec.namespaceSelector.matchNames[0]: invalid regular expression \"(\"",
        ),
        (
            "bad-selector",
            json!({"namespaceSelector": {"labelSelector": {"matchExpressions": [
            {"key": "team", "operator": "Near", "values": ["a"]}]}}, "syncItems": [item.clone()]}),
            "spec.namespaceSelector.labelSelector.matchExpressions[0].operator: unknown operator \"Near\"",
        ),
        (
            "bad-name",
            json!({"namespaceSelector": {"matchNames": ["v"]},
            "syncItems": [cm_item("Bad_Name", json!({}))]}),
            "spec.syncItems[0].metadata.name: invalid name \"Bad_Name\"",
        ),
        (
            "bad-api-version",
            json!({"namespaceSelector": {"matchNames": ["v"]},
            "syncItems": [{"apiVersion": "a/b/c", "kind": "ConfigMap", "metadata": {"name": "x"}}]}),
            "spec.syncItems[0].apiVersion: \"a/b/c\" is not of the form",
        ),
        (
            "templated-kind",
            json!({"namespaceSelector": {"matchNames": ["v"]},
            "syncItems": [{"apiVersion": "v1", "kind": "${PROJECT_NAME}", "metadata": {"name": "x"}}]}),
            "spec.syncItems[0].kind: must not contain ${PROJECT_NAME}",
        ),
        (
            "contradiction",
            json!({"namespaceSelector": {"matchNames": ["v"]},
            "syncItems": [item.clone(), item.clone()]}),
            "spec.syncItems[1]: names the same object as spec.syncItems[0]",
        ),
        (
            "sync-and-delete",
            json!({"namespaceSelector": {"matchNames": ["v"]}, "syncItems": [item.clone()],
            "deleteItems": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "fine"}]}),
            "spec.deleteItems[0]: deletes the object that spec.syncItems[0] syncs",
        ),
        (
            "delete-without-name",
            json!({"namespaceSelector": {"matchNames": ["v"]},
            "deleteItems": [{"apiVersion": "v1", "kind": "ConfigMap", "name": ""}]}),
            "spec.deleteItems[0].name: a name is required",
        ),
    ];
    for (name, spec, _) in &invalid {
        // These pass the CRD's schema; every rule here is mirra's to report.
        env.create_sc(name, json!({}), spec.clone()).await;
    }
    // No spec at all passes the CRD too (espejo's accepts it as well):
    // Invalid, like the rest.
    let no_spec: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "sync.appuio.ch/v1alpha1",
        "kind": "SyncConfig",
        "metadata": {"name": "no-spec", "namespace": OPS},
    }))
    .unwrap();
    env.sc_api()
        .create(&kube::api::PostParams::default(), &no_spec)
        .await
        .unwrap();
    // A value of the wrong type never reaches mirra: the API server refuses
    // it by the CRD's structural schema, as a real one does.
    let malformed: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "sync.appuio.ch/v1alpha1",
        "kind": "SyncConfig",
        "metadata": {"name": "malformed", "namespace": OPS},
        "spec": {"namespaceSelector": {"matchNames": "v"}, "syncItems": [item.clone()]},
    }))
    .unwrap();
    match env
        .sc_api()
        .create(&kube::api::PostParams::default(), &malformed)
        .await
    {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 422, "{s:?}");
            assert!(
                s.message
                    .contains("spec.namespaceSelector.matchNames: Invalid value: \"string\""),
                "{}",
                s.message
            );
        }
        other => panic!("a malformed SyncConfig was not refused: {other:?}"),
    }
    env.create_team_sc("good", "a", vec![cm_item("good", json!({}))])
        .await;
    let ctl = env.start(Settings::for_tests(&[OPS]));
    wait_for("good synced", || async {
        env.cm("v", "good").await.is_some()
    })
    .await;
    for (name, _, expected) in &invalid {
        wait_for(name, || async {
            env.condition(name, "Invalid")
                .await
                .is_some_and(|c| c.0 == "True")
                && env
                    .events(name)
                    .await
                    .iter()
                    .any(|(r, _)| r == "InvalidSyncConfigSpec")
        })
        .await;
        let (_, reason, message) = env.condition(name, "Invalid").await.unwrap();
        assert_eq!(reason, "InvalidSyncConfigSpec", "{name}");
        // One problem per case, named by its field path.
        assert!(
            message.starts_with(expected) && !message.contains("; spec"),
            "{name}: {message}"
        );
        assert_eq!(env.condition(name, "Ready").await.unwrap().0, "False");
    }
    wait_for("no-spec invalid", || async {
        env.condition("no-spec", "Invalid")
            .await
            .is_some_and(|c| c.0 == "True" && c.2.starts_with("spec: a spec is required"))
    })
    .await;
    assert_eq!(env.condition("no-spec", "Ready").await.unwrap().0, "False");
    assert_eq!(env.cm_names("v").await, vec!["good".to_string()]);

    // Fixed: Invalid clears (False, with the valid reason) and the copy
    // is written.
    env.patch_sc_spec(
        "bad-pattern",
        json!({"namespaceSelector": {"matchNames": ["v"]}, "syncItems": [cm_item("fixed", json!({}))]}),
    )
    .await;
    wait_for("fixed copy", || async {
        env.cm("v", "fixed").await.is_some()
    })
    .await;
    wait_for("invalid cleared", || async {
        env.condition("bad-pattern", "Invalid")
            .await
            .is_some_and(|c| c.0 == "False" && c.1 == "ValidSyncConfigSpec")
    })
    .await;
    assert_eq!(
        env.condition("bad-pattern", "Ready").await.unwrap().0,
        "True"
    );
    let mut names = env.cm_names("v").await;
    names.sort();
    assert_eq!(names, ["fixed", "good"]);
    ctl.stop().await;
}

#[tokio::test]
async fn unknown_kind_is_reported_and_other_items_sync() {
    let env = Env::new().await;
    env.create_ns("u", &[("team", "a")]).await;
    env.create_team_sc(
        "mixed",
        "a",
        vec![
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}),
            cm_item("ok", json!({})),
        ],
    )
    .await;
    let ctl = env.start(Settings::for_tests(&[OPS]));
    wait_for("ok synced", || async { env.cm("u", "ok").await.is_some() }).await;
    wait_for("degraded", || async {
        env.condition("mixed", "Degraded")
            .await
            .is_some_and(|c| c.0 == "True" && c.2.contains("Widget"))
    })
    .await;
    // espejo's meaning: one item synchronized is Ready, and Errored only
    // when nothing was.
    let ready = env.condition("mixed", "Ready").await.unwrap();
    assert_eq!(
        (ready.0.as_str(), ready.1.as_str()),
        ("True", "SynchronizationSucceeded")
    );
    assert!(ready.2.contains("1 failed"), "{}", ready.2);
    assert_eq!(env.condition("mixed", "Errored").await.unwrap().0, "False");
    wait_for("event", || async {
        env.events("mixed")
            .await
            .iter()
            .any(|(r, _)| r == "ItemsFailed")
    })
    .await;
    assert_eq!(env.status("mixed").await["failedItemCount"], 1);
    assert_eq!(env.status("mixed").await["synchronizedItemCount"], 1);

    // Only the failing item left: nothing is synchronized, so the
    // SyncConfig is Errored and not Ready, as under espejo.
    env.patch_sc_spec(
        "mixed",
        spec_for_team("a", vec![json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}})]),
    )
    .await;
    wait_for("errored", || async {
        env.condition("mixed", "Errored").await.is_some_and(|c| {
            c.0 == "True" && c.1 == "SynchronizationFailedWithError" && c.2.contains("Widget")
        })
    })
    .await;
    let ready = env.condition("mixed", "Ready").await.unwrap();
    assert_eq!(
        (ready.0.as_str(), ready.1.as_str()),
        ("False", "SynchronizationFailed")
    );
    assert_eq!(env.condition("mixed", "Degraded").await.unwrap().0, "True");
    wait_for("errored event", || async {
        env.events("mixed")
            .await
            .iter()
            .any(|(r, _)| r == "SynchronizationFailedWithError")
    })
    .await;
    ctl.stop().await;
}

#[tokio::test]
async fn failure_events_are_aggregated_and_come_back_after_they_expire() {
    let env = Env::new().await;
    env.create_team_sc("base", "a", vec![cm_item("c", json!({}))])
        .await;
    for ns in ["l1", "l2", "l3"] {
        env.sb
            .inject(FaultRule {
                verb: Some("patch".into()),
                resource: Some("configmaps".into()),
                namespace: Some(ns.into()),
                status: Some(403),
                ..Default::default()
            })
            .await
            .unwrap();
    }
    let ctl = env.start(Settings::for_tests(&[OPS]));
    ctl.wait_ready().await;
    const REASON: &str = "ItemsFailed";
    let failure_events = || async {
        env.events_full("base")
            .await
            .into_iter()
            .filter(|e| e.1 == REASON)
            .collect::<Vec<_>>()
    };

    // Failures in two namespaces, one after the other: one Event, counted
    // twice, never one Event per namespace.
    env.create_ns("l1", &[("team", "a")]).await;
    wait_for("first event", || async {
        !failure_events().await.is_empty()
    })
    .await;
    env.create_ns("l2", &[("team", "a")]).await;
    wait_for("count 2", || async {
        failure_events().await.first().is_some_and(|e| e.2 == 2)
    })
    .await;
    let events = failure_events().await;
    assert_eq!(events.len(), 1, "{events:?}");
    let (name, _, count, message) = &events[0];
    assert_eq!(name, "base.itemsfailed");
    assert_eq!(*count, 2);
    assert!(
        message.contains("l1 ") && message.contains("l2 "),
        "{message}"
    );

    // The Event expires (TTL) or is deleted; the next failure records a
    // new one instead of patching the missing one forever.
    let api: kube::Api<k8s_openapi::api::core::v1::Event> =
        kube::Api::namespaced(env.client.clone(), OPS);
    api.delete(name, &Default::default()).await.unwrap();
    assert!(failure_events().await.is_empty());
    env.create_ns("l3", &[("team", "a")]).await;
    wait_for("new event", || async {
        failure_events()
            .await
            .first()
            .is_some_and(|e| e.3.contains("l3 "))
    })
    .await;
    let events = failure_events().await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].0, "base.itemsfailed");
    assert_eq!(events[0].2, 1, "a new Event counts from 1");
    ctl.stop().await;
}

#[tokio::test]
async fn force_recreate_waits_until_a_lingering_object_is_gone() {
    let env = Env::new().await;
    env.create_ns("f", &[]).await;
    let item = |v: &str| immutable_cm_item("frozen", v);
    env.create_sc("frozen", json!({}), recreating_spec("f", vec![item("1")]))
        .await;
    let mut settings = Settings::for_tests(&[OPS]);
    // Verification passes re-plan `f` all along the wait: none may create
    // while the old object lingers.
    settings.verify_interval = Some(std::time::Duration::from_millis(20));
    let ctl = env.start(settings);
    wait_for("created", || async {
        env.cm("f", "frozen").await.is_some()
    })
    .await;
    // Someone holds the object with a finalizer (written with update, so
    // that every `patch configmaps` below is mirra's).
    let set_finalizers = |finalizers: Option<Vec<String>>| async {
        let mut cm = env.cm("f", "frozen").await.unwrap();
        cm.metadata.finalizers = finalizers;
        env.cms("f")
            .replace("frozen", &Default::default(), &cm)
            .await
            .unwrap();
    };
    set_finalizers(Some(vec!["example.com/hold".into()])).await;
    env.settle_counts().await;
    let uid = env.cm("f", "frozen").await.unwrap().metadata.uid;

    env.sb.reset_stats();
    env.patch_sc_spec("frozen", json!({"syncItems": [item("2")]}))
        .await;
    wait_for("terminating", || async {
        env.cm("f", "frozen")
            .await
            .is_some_and(|c| c.metadata.deletion_timestamp.is_some())
    })
    .await;
    let stats = env.settle_counts().await;
    // The refused apply and the delete; no create while it lingers.
    assert_eq!(stats.get("patch configmaps"), 1, "{:?}", stats.requests);
    assert_eq!(stats.get("delete configmaps"), 1, "{:?}", stats.requests);
    assert_eq!(env.cm("f", "frozen").await.unwrap().metadata.uid, uid);

    let before = env.sb.stats();
    set_finalizers(None).await;
    wait_for("recreated", || async {
        env.cm("f", "frozen")
            .await
            .is_some_and(|c| c.metadata.uid != uid && c.data.unwrap()["v"] == "2")
    })
    .await;
    let stats = env.settle_counts().await.since(&before);
    // One create. Verification passes (every 20 ms here) that run after the
    // create's answer but before its watch echo see no copy yet; the
    // pending write stands for it, so they send nothing.
    assert_eq!(
        stats.get("patch configmaps"),
        1,
        "one create: {:?}",
        stats.requests
    );
    assert_eq!(stats.get("delete configmaps"), 0, "{:?}", stats.requests);
    let recreated = env.cm("f", "frozen").await.unwrap().metadata.uid;
    env.settle_counts().await;
    assert_eq!(env.cm("f", "frozen").await.unwrap().metadata.uid, recreated);
    ctl.stop().await;
}

#[tokio::test]
async fn two_mirra_deployments_with_disjoint_scopes_leave_each_others_copies_alone() {
    let env = Env::new().await;
    env.create_ns("tenant-b", &[]).await;
    env.create_ns("shared", &[("team", "a")]).await;
    env.create_team_sc(
        "a-config",
        "a",
        vec![
            cm_item("from-a", json!({})),
            cm_item("both", json!({"by": "a"})),
        ],
    )
    .await;
    let b_configs: kube::Api<kube::api::DynamicObject> =
        kube::Api::namespaced_with(env.client.clone(), "tenant-b", &sc_resource());
    b_configs
        .create(
            &Default::default(),
            &serde_json::from_value(json!({
                "apiVersion": "sync.appuio.ch/v1alpha1", "kind": "SyncConfig",
                "metadata": {"name": "b-config", "namespace": "tenant-b"},
                "spec": spec_for_team("a", vec![cm_item("from-b", json!({})), cm_item("both", json!({"by": "b"}))]),
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    // Each deployment sees the other's copies through its label watch, and
    // re-plans `shared` every 30 ms.
    let mut a = Settings::for_tests(&[OPS]);
    a.verify_interval = Some(std::time::Duration::from_millis(30));
    let ctl_a = env.start(a);
    wait_for("a's copies", || async {
        env.cm_data("shared", "both")
            .await
            .is_some_and(|d| d["by"] == "a")
            && env.cm("shared", "from-a").await.is_some()
    })
    .await;
    env.settle_counts().await;
    let mut b = Settings::for_tests(&["tenant-b"]);
    b.verify_interval = Some(std::time::Duration::from_millis(30));
    let ctl_b = env.start(b);
    wait_for("b's copy", || async {
        env.cm("shared", "from-b").await.is_some()
    })
    .await;
    wait_for("b reports the object it may not take", || async {
        let b = b_configs.get("b-config").await.unwrap();
        b.data
            .pointer("/status/conditions")
            .and_then(|c| c.as_array())
            .is_some_and(|conds| {
                conds.iter().any(|c| {
                    c["type"] == "Degraded"
                        && c["status"] == "True"
                        && c["message"]
                            .as_str()
                            .is_some_and(|m| m.contains("belongs to SyncConfig ops/a-config"))
                })
            })
    })
    .await;
    // The Event follows the status write: counted before the reset, not
    // after it.
    wait_for("b's Event", || async {
        !mirra_testkit::events_about(&env.client, "tenant-b", "b-config")
            .await
            .is_empty()
    })
    .await;
    env.sb.reset_stats();
    // Many passes of both: nobody deletes or rewrites the other's copies.
    let skipped = ctl_b.metric("mirra_skipped_writes_total");
    wait_for("passes of b", || async {
        ctl_b.metric("mirra_skipped_writes_total") >= skipped + 10.0
    })
    .await;
    let stats = env.settle_counts().await;
    assert_eq!(stats.writes(), 0, "{:?}", stats.requests);
    assert_eq!(env.cm_names("shared").await, ["both", "from-a", "from-b"]);
    assert_eq!(env.cm_data("shared", "both").await.unwrap()["by"], "a");
    ctl_a.stop().await;
    ctl_b.stop().await;
}

/// An immutable ConfigMap item with `data: {v: <v>}`.
fn immutable_cm_item(name: &str, v: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
           "immutable": true, "data": {"v": v}})
}

/// A spec with `forceRecreate` syncing `items` into namespace `ns`.
fn recreating_spec(ns: &str, items: Vec<serde_json::Value>) -> serde_json::Value {
    json!({
        "forceRecreate": true,
        "namespaceSelector": {"matchNames": [ns]},
        "syncItems": items,
    })
}
