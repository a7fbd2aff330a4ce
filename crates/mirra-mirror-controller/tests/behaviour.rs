//! Ownership, drift, pruning, deleteItems, conflicts, forceRecreate and
//! every failure reported as a status condition plus an Event, while the
//! other items and namespaces keep syncing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use kube::api::{Patch, PatchParams};
use mirra_mirror_controller::Settings;
use serde_json::json;

#[tokio::test]
async fn drift_is_restored_and_fields_of_others_survive() {
    let env = Env::new().await;
    env.create_ns("d", &[("team", "a")]).await;
    env.create_sc(
        "base",
        json!({}),
        spec_for_team("a", vec![cm_item("c", json!({"k": "v"}))]),
    )
    .await;
    let ctl = env.start(Settings::for_tests(&[OPS]));
    wait_for("copy", || async { env.cm("d", "c").await.is_some() }).await;
    env.settle().await;

    // Someone edits mirra's field and adds their own label and data key.
    env.cms("d")
        .patch(
            "c",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"theirs": "yes"}}, "data": {"k": "edited", "extra": "1"}})),
        )
        .await
        .unwrap();
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
async fn prune_opt_out_and_delete_items_once() {
    let env = Env::new().await;
    env.create_ns("p", &[("team", "a")]).await;
    env.cms("p")
        .create(
            &Default::default(),
            &serde_json::from_value(json!({"metadata": {"name": "legacy"}})).unwrap(),
        )
        .await
        .unwrap();
    env.create_sc(
        "pruned",
        json!({}),
        spec_for_team(
            "a",
            vec![cm_item("keep", json!({})), cm_item("drop", json!({}))],
        ),
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
    let stats = env.settle().await;
    assert_eq!(stats.get("delete configmaps"), 1, "deleteItems once");
    assert_eq!(env.status("cleaner").await["deletedItemCount"], 0);

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

    // The deleted legacy object is never deleted again, whatever the cycles.
    assert_eq!(stats.get("delete configmaps"), 1);
    ctl.stop().await;
}

#[tokio::test]
async fn conflict_has_a_stable_winner_and_is_reported() {
    let env = Env::new().await;
    env.create_ns("c", &[("team", "a")]).await;
    // Same creation second is possible: the tie is broken by name, so
    // "alpha" wins either way.
    env.create_sc(
        "alpha",
        json!({}),
        spec_for_team("a", vec![cm_item("shared", json!({"who": "alpha"}))]),
    )
    .await;
    env.create_sc(
        "beta",
        json!({}),
        spec_for_team(
            "a",
            vec![
                cm_item("shared", json!({"who": "beta"})),
                cm_item("own", json!({})),
            ],
        ),
    )
    .await;
    let ctl = env.start(Settings::for_tests(&[OPS]));
    wait_for("conflict reported", || async {
        env.condition("beta", "Conflict")
            .await
            .is_some_and(|c| c.0 == "True")
    })
    .await;
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
async fn force_recreate_replaces_an_object_the_server_refuses_to_update() {
    let env = Env::new().await;
    env.create_ns("f", &[("team", "a")]).await;
    let item = |v: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "frozen"},
               "immutable": true, "data": {"v": v}})
    };
    env.create_sc(
        "frozen",
        json!({}),
        json!({
            "forceRecreate": true,
            "namespaceSelector": {"matchNames": ["f"]},
            "syncItems": [item("1")],
        }),
    )
    .await;
    env.create_sc(
        "stiff",
        json!({}),
        json!({
            "namespaceSelector": {"matchNames": ["f"]},
            "syncItems": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "stiff"},
                           "immutable": true, "data": {"v": "1"}}],
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
        json!({"syncItems": [{"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "stiff"}, "immutable": true, "data": {"v": "2"}}]}),
    )
    .await;
    wait_for("errored", || async {
        env.condition("stiff", "Errored")
            .await
            .is_some_and(|c| c.0 == "True")
    })
    .await;
    assert_eq!(env.cm_data("f", "stiff").await.unwrap()["v"], "1");
    wait_for("event", || async {
        env.events("stiff")
            .await
            .iter()
            .any(|(r, _)| r == "SynchronizationFailedWithError")
    })
    .await;
    ctl.stop().await;
}

#[tokio::test]
async fn every_invalid_spec_is_reported_and_others_keep_syncing() {
    let env = Env::new().await;
    env.create_ns("v", &[("team", "a")]).await;
    let item = cm_item("fine", json!({}));
    let invalid = [
        ("no-selector", json!({"syncItems": [item.clone()]})),
        (
            "no-items",
            json!({"namespaceSelector": {"matchNames": ["v"]}}),
        ),
        (
            "bad-pattern",
            json!({"namespaceSelector": {"matchNames": ["("]}, "syncItems": [item.clone()]}),
        ),
        (
            "bad-selector",
            json!({"namespaceSelector": {"labelSelector": {"matchExpressions": [
            {"key": "team", "operator": "Near", "values": ["a"]}]}}, "syncItems": [item.clone()]}),
        ),
        (
            "bad-name",
            json!({"namespaceSelector": {"matchNames": ["v"]},
            "syncItems": [cm_item("Bad_Name", json!({}))]}),
        ),
        (
            "contradiction",
            json!({"namespaceSelector": {"matchNames": ["v"]},
            "syncItems": [item.clone(), item.clone()]}),
        ),
        (
            "malformed",
            json!({"namespaceSelector": {"matchNames": "v"}, "syncItems": [item.clone()]}),
        ),
    ];
    let mut created = Vec::new();
    for (name, spec) in invalid {
        // The CRD schema may refuse some shapes before mirra sees them.
        let obj: kube::api::DynamicObject = serde_json::from_value(json!({
            "apiVersion": "sync.appuio.ch/v1alpha1", "kind": "SyncConfig",
            "metadata": {"name": name, "namespace": OPS}, "spec": spec}))
        .unwrap();
        if env.sc_api().create(&Default::default(), &obj).await.is_ok() {
            created.push(name);
        }
    }
    assert!(created.len() >= 6, "created: {created:?}");
    env.create_sc(
        "good",
        json!({}),
        spec_for_team("a", vec![cm_item("good", json!({}))]),
    )
    .await;
    let ctl = env.start(Settings::for_tests(&[OPS]));
    wait_for("good synced", || async {
        env.cm("v", "good").await.is_some()
    })
    .await;
    for name in &created {
        wait_for(name, || async {
            env.condition(name, "Invalid")
                .await
                .is_some_and(|c| c.0 == "True" && c.1 == "InvalidSyncConfigSpec")
                && env
                    .events(name)
                    .await
                    .iter()
                    .any(|(r, _)| r == "InvalidSyncConfigSpec")
        })
        .await;
        assert_eq!(env.condition(name, "Ready").await.unwrap().0, "False");
    }
    assert_eq!(env.cm_names("v").await, vec!["good".to_string()]);
    ctl.stop().await;
}

#[tokio::test]
async fn unknown_kind_is_reported_and_other_items_sync() {
    let env = Env::new().await;
    env.create_ns("u", &[("team", "a")]).await;
    env.create_sc("mixed", json!({}), spec_for_team("a", vec![
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}),
        cm_item("ok", json!({})),
    ]))
    .await;
    let ctl = env.start(Settings::for_tests(&[OPS]));
    wait_for("ok synced", || async { env.cm("u", "ok").await.is_some() }).await;
    wait_for("errored", || async {
        env.condition("mixed", "Errored")
            .await
            .is_some_and(|c| c.0 == "True" && c.2.contains("Widget"))
    })
    .await;
    wait_for("event", || async {
        env.events("mixed")
            .await
            .iter()
            .any(|(r, _)| r == "SynchronizationFailedWithError")
    })
    .await;
    assert_eq!(env.status("mixed").await["failedItemCount"], 1);
    assert_eq!(env.status("mixed").await["synchronizedItemCount"], 1);
    ctl.stop().await;
}
