//! Failures: a forbidden write, injected 409/429/500, dropped watches and
//! 410 Gone. The controller converges, loses no change and deletes nothing
//! it should keep.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use kube_sandbox::FaultRule;
use mirra_mirror_controller::Settings;
use serde_json::json;

#[tokio::test]
async fn forbidden_write_is_reported_and_other_namespaces_sync() {
    let env = Env::new().await;
    env.create_ns("locked", &[("team", "a")]).await;
    env.create_ns("open", &[("team", "a")]).await;
    env.create_sc(
        "base",
        json!({}),
        spec_for_team("a", vec![cm_item("c", json!({}))]),
    )
    .await;
    // RBAC that denies mirra writes into `locked`, as the API server
    // answers it: 403 Forbidden to every patch there.
    env.sb
        .inject(FaultRule {
            verb: Some("patch".into()),
            resource: Some("configmaps".into()),
            namespace: Some("locked".into()),
            status: Some(403),
            ..Default::default()
        })
        .await
        .unwrap();
    let ctl = env.start(Settings::for_tests(&[OPS]));
    wait_for("open synced", || async {
        env.cm("open", "c").await.is_some()
    })
    .await;
    wait_for("errored", || async {
        env.condition("base", "Errored")
            .await
            .is_some_and(|c| c.0 == "True" && c.2.contains("locked") && c.2.contains("Forbidden"))
    })
    .await;
    wait_for("event", || async {
        env.events("base")
            .await
            .iter()
            .any(|(r, _)| r == "SynchronizationFailedWithError")
    })
    .await;
    assert!(env.cm("locked", "c").await.is_none());
    assert_eq!(env.status("base").await["failedItemCount"], 1);
    assert_eq!(env.status("base").await["synchronizedItemCount"], 1);
    ctl.stop().await;
}

#[tokio::test]
async fn converges_through_injected_errors_dropped_watches_and_410() {
    let env = Env::new().await;
    for i in 0..4 {
        env.create_ns(&format!("n{i}"), &[("team", "a")]).await;
    }
    // Objects mirra must never delete: a foreign ConfigMap, and a copy-like
    // object without mirra's marks.
    env.cms("n0")
        .create(
            &Default::default(),
            &serde_json::from_value(json!({"metadata": {"name": "foreign"}})).unwrap(),
        )
        .await
        .unwrap();
    env.create_sc(
        "base",
        json!({}),
        spec_for_team("a", vec![cm_item("c", json!({"v": "1"}))]),
    )
    .await;
    let ctl = env.start(Settings::for_tests(&[OPS]));
    ctl.wait_ready().await;
    wait_for("initial", || async {
        for i in 0..4 {
            if env.cm(&format!("n{i}"), "c").await.is_none() {
                return false;
            }
        }
        true
    })
    .await;
    env.settle().await;

    for status in [500, 409, 429] {
        env.sb
            .inject(FaultRule {
                verb: Some("patch".into()),
                resource: Some("configmaps".into()),
                status: Some(status),
                count: Some(3),
                ..Default::default()
            })
            .await
            .unwrap();
    }
    env.sb
        .inject(FaultRule {
            verb: Some("delete".into()),
            resource: Some("configmaps".into()),
            status: Some(500),
            count: Some(2),
            ..Default::default()
        })
        .await
        .unwrap();
    // Changes while writes fail and watches drop: a new namespace, an item
    // edit, a relabel out.
    env.create_ns("n4", &[("team", "a")]).await;
    env.patch_sc_spec(
        "base",
        json!({"syncItems": [cm_item("c", json!({"v": "2"}))]}),
    )
    .await;
    env.sb.close_watches();
    env.label_ns("n3", json!({"team": "gone"})).await;
    env.sb.compact().await;
    env.sb.close_watches();
    env.create_ns("n5", &[("team", "a")]).await;

    wait_for("converged", || async {
        for i in [0, 1, 2, 4, 5] {
            let ok = env
                .cm_data(&format!("n{i}"), "c")
                .await
                .is_some_and(|d| d["v"] == "2");
            if !ok {
                return false;
            }
        }
        env.cm("n3", "c").await.is_none()
    })
    .await;
    let stats = env.settle().await;
    assert!(stats.get("patch configmaps") > 0);
    assert!(
        env.cm("n0", "foreign").await.is_some(),
        "a foreign object was deleted"
    );
    // In step afterwards: nothing more to write.
    env.sb.reset_stats();
    let stats = env.settle().await;
    assert_eq!(stats.writes(), 0, "{:?}", stats.requests);
    assert_eq!(env.status("base").await["synchronizedItemCount"], 5);
    ctl.stop().await;
}
