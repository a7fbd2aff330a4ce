//! syncItems of a cluster-scoped kind (ClusterRole): one object per
//! selected namespace, tied to it by mirra's marks; pruned, repaired and
//! swept like namespaced copies; names several namespaces would share are
//! refused without a write; deleteItems of such a kind delete nothing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use common::*;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use mirra_mirror_controller::Settings;
use mirra_mirror_controller::mirra_mirror::{
    ADOPTED_ANNOTATION, FOR_NAMESPACE_ANNOTATION, MANAGED_BY_LABEL, OWNER_ANNOTATION,
};
use serde_json::{Value, json};

const RBAC: &str = "rbac.authorization.k8s.io";
const PATCH: &str = "patch clusterroles.rbac.authorization.k8s.io";
const DELETE: &str = "delete clusterroles.rbac.authorization.k8s.io";

fn role_item(name: &str) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
           "metadata": {"name": name},
           "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"],
                      "resourceNames": ["${PROJECT_NAME}"]}]})
}

/// The test settings with ClusterRoles allowed (`--allow-kind
/// ClusterRole.rbac.authorization.k8s.io`): cluster-scoped kinds are not
/// among the defaults.
fn settings() -> Settings {
    let mut s = Settings::for_tests(&[OPS]);
    s.allowed_kinds
        .as_mut()
        .unwrap()
        .insert((RBAC.into(), "ClusterRole".into()));
    s
}

fn roles(env: &Env) -> Api<ClusterRole> {
    Api::all(env.client.clone())
}

async fn role(env: &Env, name: &str) -> Option<ClusterRole> {
    roles(env).get_opt(name).await.unwrap()
}

fn annotation(r: &ClusterRole, key: &str) -> Option<String> {
    r.metadata.annotations.as_ref()?.get(key).cloned()
}

async fn hand_made(env: &Env, name: &str) {
    roles(env)
        .create(
            &PostParams::default(),
            &serde_json::from_value(
                json!({"metadata": {"name": name, "labels": {"made-by": "human"}},
                                           "rules": []}),
            )
            .unwrap(),
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn one_cluster_role_per_namespace_pruned_with_it_repaired_and_free_after_a_restart() {
    let env = Env::new().await;
    env.create_ns("cs-a", &[("team", "a")]).await;
    env.create_ns("cs-b", &[("team", "a")]).await;
    env.create_ns("other", &[]).await;
    env.create_team_sc(
        "readers",
        "a",
        vec![role_item("reader-${PROJECT_NAME}"), cm_item("c", json!({}))],
    )
    .await;
    let ctl = env.start(settings());
    wait_for("roles", || async {
        role(&env, "reader-cs-a").await.is_some() && role(&env, "reader-cs-b").await.is_some()
    })
    .await;
    for ns in ["cs-a", "cs-b"] {
        let r = role(&env, &format!("reader-{ns}")).await.unwrap();
        assert_eq!(
            r.metadata.labels.as_ref().unwrap()[MANAGED_BY_LABEL],
            "mirra"
        );
        assert_eq!(
            annotation(&r, OWNER_ANNOTATION).as_deref(),
            Some("ops/readers")
        );
        assert_eq!(
            annotation(&r, FOR_NAMESPACE_ANNOTATION).as_deref(),
            Some(ns)
        );
        assert_eq!(annotation(&r, ADOPTED_ANNOTATION), None);
        let names = r.rules.unwrap()[0].resource_names.clone().unwrap();
        assert_eq!(names, [ns.to_string()]);
    }
    assert!(role(&env, "reader-other").await.is_none());
    wait_for("status", || async {
        env.status("readers").await["synchronizedItemCount"] == 4
    })
    .await;
    env.settle().await;

    // Idle: nothing written.
    env.sb.reset_stats();
    let idle = env.settle().await;
    assert_eq!(idle.writes(), 0, "{:?}", idle.requests);

    // Drift in mirra's fields is repaired with one apply.
    roles(&env)
        .patch(
            "reader-cs-b",
            &PatchParams::default(),
            &Patch::Merge(json!({"rules": []})),
        )
        .await
        .unwrap();
    wait_for("repaired", || async {
        role(&env, "reader-cs-b")
            .await
            .and_then(|r| r.rules)
            .is_some_and(|r| r.len() == 1)
    })
    .await;
    let stats = env.settle().await;
    assert_eq!(stats.get(PATCH), 2, "{:?}", stats.requests); // the edit, the repair
    let b_version = role(&env, "reader-cs-b")
        .await
        .unwrap()
        .metadata
        .resource_version;

    // cs-a stops matching: its ClusterRole goes, cs-b's is untouched.
    env.sb.reset_stats();
    env.label_ns("cs-a", json!({"team": null})).await;
    wait_for("pruned", || async {
        role(&env, "reader-cs-a").await.is_none()
    })
    .await;
    let stats = env.settle().await;
    assert_eq!(stats.get(DELETE), 1, "{:?}", stats.requests);
    assert_eq!(stats.get(PATCH), 0, "{:?}", stats.requests);
    assert_eq!(
        role(&env, "reader-cs-b")
            .await
            .unwrap()
            .metadata
            .resource_version,
        b_version
    );

    // A new process with empty caches: not a single write.
    ctl.stop().await;
    env.sb.reset_stats();
    let ctl = env.start(settings());
    ctl.wait_ready().await;
    let stats = env.settle().await;
    assert_eq!(stats.writes(), 0, "restart wrote: {:?}", stats.requests);

    // The SyncConfig is deleted: its last ClusterRole goes with its copies.
    env.delete_sc("readers").await;
    wait_for("pruned", || async {
        role(&env, "reader-cs-b").await.is_none()
    })
    .await;
    wait_for("cm pruned", || async {
        env.cm("cs-b", "c").await.is_none()
    })
    .await;
    ctl.stop().await;
}

#[tokio::test]
async fn cluster_roles_of_a_syncconfig_deleted_while_mirra_was_down_are_swept() {
    let env = Env::new().await;
    env.create_ns("sw", &[("team", "a")]).await;
    env.create_team_sc("readers", "a", vec![role_item("reader-${PROJECT_NAME}")])
        .await;
    let ctl = env.start(settings());
    wait_for("role", || async { role(&env, "reader-sw").await.is_some() }).await;
    env.settle().await;
    ctl.stop().await;
    env.delete_sc("readers").await;
    // No SyncConfig names ClusterRoles any more: only the start-up sweep
    // finds the copy.
    let ctl = env.start(settings());
    wait_for("swept", || async {
        role(&env, "reader-sw").await.is_none()
    })
    .await;
    ctl.stop().await;
}

async fn delete_ns(env: &Env, name: &str) {
    let api: Api<Namespace> = Api::all(env.client.clone());
    api.delete(name, &Default::default()).await.unwrap();
    wait_for("namespace gone", || async {
        api.get_opt(name).await.unwrap().is_none()
    })
    .await;
}

#[tokio::test]
async fn the_cluster_role_of_a_deleted_namespace_is_pruned_live_and_after_a_restart() {
    let env = Env::new().await;
    env.create_ns("live", &[("team", "a")]).await;
    env.create_ns("down", &[("team", "a")]).await;
    env.create_ns("stays", &[("team", "a")]).await;
    env.create_team_sc("readers", "a", vec![role_item("reader-${PROJECT_NAME}")])
        .await;
    let ctl = env.start(settings());
    wait_for("roles", || async {
        role(&env, "reader-live").await.is_some()
            && role(&env, "reader-down").await.is_some()
            && role(&env, "reader-stays").await.is_some()
    })
    .await;
    delete_ns(&env, "live").await;
    wait_for("pruned", || async {
        role(&env, "reader-live").await.is_none()
    })
    .await;
    env.settle().await;
    ctl.stop().await;
    // Deleted while mirra is down: nothing else removes its ClusterRole.
    delete_ns(&env, "down").await;
    env.sb.reset_stats();
    let ctl = env.start(settings());
    wait_for("pruned", || async {
        role(&env, "reader-down").await.is_none()
    })
    .await;
    let stats = env.settle().await;
    assert_eq!(stats.get(DELETE), 1, "{:?}", stats.requests);
    assert_eq!(stats.get(PATCH), 0, "{:?}", stats.requests);
    assert!(role(&env, "reader-stays").await.is_some());
    ctl.stop().await;
}

#[tokio::test]
async fn a_hand_made_cluster_role_of_that_name_is_adopted_and_released_not_deleted() {
    let env = Env::new().await;
    env.create_ns("ad", &[("team", "a")]).await;
    hand_made(&env, "reader-ad").await;
    env.create_team_sc("readers", "a", vec![role_item("reader-${PROJECT_NAME}")])
        .await;
    let ctl = env.start(settings());
    wait_for("adopted", || async {
        role(&env, "reader-ad").await.is_some_and(|r| {
            annotation(&r, ADOPTED_ANNOTATION).as_deref() == Some("true")
                && annotation(&r, FOR_NAMESPACE_ANNOTATION).as_deref() == Some("ad")
        })
    })
    .await;
    let r = role(&env, "reader-ad").await.unwrap();
    assert_eq!(r.metadata.labels.as_ref().unwrap()["made-by"], "human");
    env.settle().await;
    env.sb.reset_stats();
    env.label_ns("ad", json!({"team": null})).await;
    wait_for("released", || async {
        role(&env, "reader-ad")
            .await
            .is_some_and(|r| annotation(&r, OWNER_ANNOTATION).is_none())
    })
    .await;
    let stats = env.settle().await;
    assert_eq!(stats.get(DELETE), 0, "{:?}", stats.requests);
    let r = role(&env, "reader-ad").await.unwrap();
    assert_eq!(r.metadata.labels.as_ref().unwrap()["made-by"], "human");
    ctl.stop().await;
}

#[tokio::test]
async fn shared_cluster_scoped_names_are_reported_and_never_written_nor_fought_over() {
    let env = Env::new().await;
    env.create_ns("x", &[("team", "a")]).await;
    env.create_ns("y", &[("team", "a")]).await;
    env.create_ns("r-x", &[("team", "b")]).await;
    hand_made(&env, "old-reader").await;
    // One name for every namespace, and a deleteItem of a ClusterRole.
    let mut spec = spec_for_team("a", vec![role_item("reader"), cm_item("ok", json!({}))]);
    spec["deleteItems"] = json!([{"apiVersion": "rbac.authorization.k8s.io/v1",
                                  "kind": "ClusterRole", "name": "old-reader"}]);
    env.create_sc("shared", json!({}), spec).await;
    // "r-${PROJECT_NAME}" in x and "${PROJECT_NAME}" in r-x are both r-x.
    env.create_team_sc("first", "a", vec![role_item("r-${PROJECT_NAME}")])
        .await;
    let mut s = settings();
    // Many verification passes while the test waits below.
    s.verify_interval = Some(Duration::from_millis(30));
    let ctl = env.start(s.clone());
    wait_for("first synced", || async {
        role(&env, "r-x").await.is_some() && role(&env, "r-y").await.is_some()
    })
    .await;
    wait_for("shared reported", || async {
        env.condition("shared", "Degraded").await.is_some_and(|c| {
            c.0 == "True"
                && c.2.contains("ClusterRole/reader")
                && c.2.contains("does not contain ${PROJECT_NAME}")
                && c.2.contains("ClusterRole/old-reader")
        })
    })
    .await;
    env.settle().await;
    env.create_team_sc(
        "second",
        "b",
        vec![role_item("${PROJECT_NAME}"), cm_item("ok2", json!({}))],
    )
    .await;
    wait_for("second reported", || async {
        env.condition("second", "Degraded").await.is_some_and(|c| {
            c.0 == "True" && c.2.contains("already mirra's copy for namespace \"x\"")
        })
    })
    .await;
    let status = env.status("shared").await;
    // reader in x and y, old-reader in x and y.
    assert_eq!(status["failedItemCount"], 4, "{status}");
    assert_eq!(status["deletedItemCount"], 0, "{status}");
    assert_eq!(env.status("second").await["failedItemCount"], 1);
    assert!(!env.events("shared").await.is_empty());
    assert!(!env.events("second").await.is_empty());
    assert!(role(&env, "reader").await.is_none());
    assert!(role(&env, "old-reader").await.is_some());
    let rx = role(&env, "r-x").await.unwrap();
    assert_eq!(
        annotation(&rx, OWNER_ANNOTATION).as_deref(),
        Some("ops/first")
    );
    assert_eq!(
        annotation(&rx, FOR_NAMESPACE_ANNOTATION).as_deref(),
        Some("x")
    );
    env.settle().await;

    // Many verification passes: no write at all, the loser never flips it.
    env.sb.reset_stats();
    let skipped = ctl.metric("mirra_skipped_writes_total");
    wait_for("verification passes", || async {
        ctl.metric("mirra_skipped_writes_total") >= skipped + 20.0
    })
    .await;
    let stats = env.settle().await;
    assert_eq!(stats.writes(), 0, "{:?}", stats.requests);
    assert_eq!(
        role(&env, "r-x").await.unwrap().metadata.resource_version,
        rx.metadata.resource_version
    );
    ctl.stop().await;

    // Nor after a restart.
    env.sb.reset_stats();
    let ctl = env.start(s);
    ctl.wait_ready().await;
    let stats = env.settle().await;
    assert_eq!(stats.writes(), 0, "restart wrote: {:?}", stats.requests);
    ctl.stop().await;
}

/// A kind that is cluster-scoped at one version and not served at another
/// (ClusterRole at `rbac.authorization.k8s.io/v1beta1`, removed in 1.22):
/// the unserved item fails in every selected namespace, naming the version,
/// and the served one syncs; nothing of the unserved version is written,
/// across verification passes too.
#[tokio::test]
async fn a_cluster_scoped_kind_at_a_version_the_server_does_not_serve_fails_clearly() {
    let env = Env::new().await;
    env.create_ns("v-a", &[("team", "a")]).await;
    env.create_ns("v-b", &[("team", "a")]).await;
    let mut old = role_item("old-${PROJECT_NAME}");
    old["apiVersion"] = json!("rbac.authorization.k8s.io/v1beta1");
    env.create_team_sc("versions", "a", vec![role_item("new-${PROJECT_NAME}"), old])
        .await;
    let mut s = settings();
    s.verify_interval = Some(Duration::from_millis(30));
    let ctl = env.start(s);
    wait_for("served version synced", || async {
        role(&env, "new-v-a").await.is_some() && role(&env, "new-v-b").await.is_some()
    })
    .await;
    wait_for("unserved version reported", || async {
        env.condition("versions", "Degraded")
            .await
            .is_some_and(|c| {
                c.0 == "True"
                    && c.2.contains("does not serve kind ClusterRole")
                    && c.2.contains("v1beta1")
            })
    })
    .await;
    let status = env.status("versions").await;
    assert_eq!(status["synchronizedItemCount"], 2, "{status}");
    assert_eq!(status["failedItemCount"], 2, "{status}");
    assert!(role(&env, "old-v-a").await.is_none());

    // Each verification pass asks discovery again for the unserved version
    // (a CRD or an aggregated API may serve it since), so the controller
    // is never idle here; what it must not do is write.
    let passes = |n: f64| {
        let skipped = ctl.metric("mirra_skipped_writes_total");
        let ctl = &ctl;
        async move {
            wait_for("verification passes", || async {
                ctl.metric("mirra_skipped_writes_total") >= skipped + n
            })
            .await;
        }
    };
    passes(3.0).await;
    let before = env.sb.stats();
    passes(10.0).await;
    let after = env.sb.stats();
    assert_eq!(
        after.writes(),
        before.writes(),
        "{:?} then {:?}",
        before.requests,
        after.requests
    );
    assert!(role(&env, "old-v-b").await.is_none());
    ctl.stop().await;
}
