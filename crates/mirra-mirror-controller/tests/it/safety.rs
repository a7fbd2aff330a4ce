//! Safe defaults: the system namespaces are never written to unless the
//! operator lifts their protection, only the allowed kinds are copied,
//! service-account token Secrets are refused, and the reason for each
//! refusal is on the SyncConfig.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests may unwrap: a panic is a test failure.

use crate::common;

use common::*;
use mirra_mirror_controller::Settings;
use serde_json::{Value, json};

fn all_namespaces(items: Vec<Value>) -> Value {
    json!({"namespaceSelector": {"matchNames": [".*"]}, "syncItems": items})
}

#[tokio::test]
async fn a_syncconfig_selecting_every_namespace_leaves_the_system_ones_alone() {
    let env = Env::new().await;
    env.create_ns("team", &[]).await;
    env.create_sc(
        "everywhere",
        json!({}),
        all_namespaces(vec![cm_item("c", json!({"k": "v"}))]),
    )
    .await;
    env.sb.reset_stats();
    let ctl = env.start(Settings::for_tests(&[OPS]));
    ctl.wait_ready().await;
    wait_for("team copy", || async {
        env.cm("team", "c").await.is_some()
    })
    .await;
    wait_for("default copy", || async {
        env.cm("default", "c").await.is_some()
    })
    .await;
    let stats = env.settle().await;
    for ns in ["kube-system", "kube-public", "kube-node-lease"] {
        assert!(env.cm(ns, "c").await.is_none(), "{ns} was written");
        assert_eq!(
            stats.namespaces.get(ns).map(|n| n.values().sum::<u64>()),
            None,
            "requests into {ns}: {:?}",
            stats.namespaces.get(ns)
        );
    }
    ctl.stop().await;
}

#[tokio::test]
async fn a_lifted_protection_lets_mirra_write_there() {
    let env = Env::new().await;
    env.create_sc(
        "system",
        json!({}),
        json!({"namespaceSelector": {"matchNames": ["kube-public"]},
               "syncItems": [cm_item("c", json!({"k": "v"}))]}),
    )
    .await;
    let mut settings = Settings::for_tests(&[OPS]);
    settings.never_write.remove("kube-public");
    let ctl = env.start(settings);
    ctl.wait_ready().await;
    wait_for("kube-public copy", || async {
        env.cm("kube-public", "c").await.is_some()
    })
    .await;
    ctl.stop().await;
}

#[tokio::test]
async fn kinds_outside_the_allow_list_and_token_secrets_are_refused_with_a_reason() {
    let env = Env::new().await;
    env.create_ns("t", &[("team", "a")]).await;
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "reader"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]});
    let token = json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "token", "annotations": {"kubernetes.io/service-account.name": "default"}},
        "type": "kubernetes.io/service-account-token"});
    env.create_team_sc("base", "a", vec![cm_item("c", json!({})), role, token])
        .await;
    env.sb.reset_stats();
    let ctl = env.start(Settings::for_tests(&[OPS]));
    ctl.wait_ready().await;
    wait_for("two items failed", || async {
        env.status("base").await["failedItemCount"] == 2
    })
    .await;
    assert!(env.cm("t", "c").await.is_some());
    let stats = env.settle().await;
    assert_eq!(stats.get("patch roles.rbac.authorization.k8s.io"), 0);
    assert_eq!(stats.get("patch secrets"), 0);
    let (status, _, message) = env.condition("base", "Degraded").await.unwrap();
    assert_eq!(status, "True");
    assert!(
        message.contains("--allow-kind Role.rbac.authorization.k8s.io"),
        "{message}"
    );
    assert!(
        message.contains("kubernetes.io/service-account-token are never copied"),
        "{message}"
    );
    ctl.stop().await;

    // Allowed explicitly, the Role is copied.
    let mut settings = Settings::for_tests(&[OPS]);
    settings
        .allowed_kinds
        .as_mut()
        .unwrap()
        .insert(("rbac.authorization.k8s.io".into(), "Role".into()));
    let ctl = env.start(settings);
    ctl.wait_ready().await;
    wait_for("one item failed", || async {
        env.status("base").await["failedItemCount"] == 1
    })
    .await;
    assert!(env.sb.stats().get("patch roles.rbac.authorization.k8s.io") >= 1);
    ctl.stop().await;
}

#[tokio::test]
async fn ready_is_never_true_while_selected_namespaces_are_still_pending() {
    let env = Env::new().await;
    for i in 0..8 {
        env.create_ns(&format!("slow-{i}"), &[("team", "a")]).await;
    }
    // Every copy write takes a while: the first status is written long
    // before the last namespace is done.
    slow(&env, "patch", "configmaps", 250).await;
    env.create_team_sc("base", "a", vec![cm_item("c", json!({}))])
        .await;
    let mut settings = Settings::for_tests(&[OPS]);
    settings.workers = 1;
    let ctl = env.start(settings);
    ctl.wait_ready().await;
    wait_for("a status saying it is pending", || async {
        env.condition("base", "Ready")
            .await
            .is_some_and(|(status, reason, _)| {
                status == "False" && reason == "SynchronizationPending"
            })
    })
    .await;
    let (_, _, message) = env.condition("base", "Ready").await.unwrap();
    assert!(message.contains("not synchronized yet"), "{message}");
    wait_for("ready once every namespace is done", || async {
        env.condition("base", "Ready")
            .await
            .is_some_and(|(status, _, _)| status == "True")
    })
    .await;
    for i in 0..8 {
        assert!(env.cm(&format!("slow-{i}"), "c").await.is_some());
    }
    ctl.stop().await;
}

/// One SyncConfig with hundreds of items into a namespace does not hold
/// back another's edit there until all of them are written: one pass
/// sends a bounded batch, SyncConfigs taking turns.
#[tokio::test]
async fn a_large_syncconfig_does_not_starve_another_ones_edit() {
    let env = Env::new().await;
    env.create_ns("shared", &[("team", "a")]).await;
    slow(&env, "patch", "configmaps", 20).await;
    let items: Vec<Value> = (0..300)
        .map(|i| cm_item(&format!("bulk-{i}"), json!({})))
        .collect();
    env.create_team_sc("large", "a", items).await;
    let mut settings = Settings::for_tests(&[OPS]);
    settings.max_writes_per_pass = 40;
    let ctl = env.start(settings);
    ctl.wait_ready().await;
    wait_for("the bulk under way", || async {
        env.sb.stats().get("patch configmaps") >= 20
    })
    .await;
    env.create_team_sc("small", "a", vec![cm_item("urgent", json!({}))])
        .await;
    wait_for("the small edit", || async {
        env.cm("shared", "urgent").await.is_some()
    })
    .await;
    let bulk_done = env
        .cm_names("shared")
        .await
        .iter()
        .filter(|n| n.starts_with("bulk-"))
        .count();
    assert!(
        bulk_done < 300,
        "the small edit waited for the whole bulk ({bulk_done} copies)"
    );
    wait_for("the bulk complete", || async {
        env.cm_names("shared")
            .await
            .iter()
            .filter(|n| n.starts_with("bulk-"))
            .count()
            == 300
    })
    .await;
    wait_for("large ready", || async {
        env.condition("large", "Ready")
            .await
            .is_some_and(|(status, _, _)| status == "True")
    })
    .await;
    ctl.stop().await;
}

/// Every apply of an existing copy is conditional on the version it was
/// planned from: planned from a stale cache (its watch is away while
/// someone else edits the copy), the write is refused with 409 instead of
/// landing over the newer version, and goes through once the cache has
/// caught up, keeping the other writer's change.
/// Ends every watch and holds the next one of `resource` back for 1.5 s,
/// so mirra's cache of it lags behind what the test writes meanwhile.
async fn hold_watches(env: &Env, resource: &str) {
    env.sb
        .inject(kube_sandbox::FaultRule {
            verb: Some("watch".into()),
            resource: Some(resource.into()),
            latency_ms: Some(1500),
            count: Some(1),
            ..Default::default()
        })
        .await
        .unwrap();
    env.sb.close_watches();
}

#[tokio::test]
async fn an_apply_planned_from_a_stale_version_does_not_land() {
    let env = Env::new().await;
    env.create_ns("p", &[("team", "a")]).await;
    env.create_team_sc("base", "a", vec![cm_item("c", json!({"k": "1"}))])
        .await;
    let ctl = env.start(Settings::for_tests(&[OPS]));
    ctl.wait_ready().await;
    wait_for("copied", || async { env.cm("p", "c").await.is_some() }).await;
    env.settle().await;
    // The ConfigMap watch goes away for a while: mirra's cache keeps the
    // old version.
    hold_watches(&env, "configmaps").await;
    env.cms("p")
        .patch(
            "c",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"metadata": {"labels": {"audited": "yes"}}})),
        )
        .await
        .unwrap();
    let before = ctl.metric("mirra_errors_total{class=\"transient\"}");
    env.patch_sc_spec(
        "base",
        spec_for_team("a", vec![cm_item("c", json!({"k": "2"}))]),
    )
    .await;
    wait_for("the edit applied", || async {
        env.cm_data("p", "c").await.is_some_and(|d| d["k"] == "2")
    })
    .await;
    // The first attempt, planned from the stale version, was refused.
    assert!(
        ctl.metric("mirra_errors_total{class=\"transient\"}") > before,
        "no write was refused"
    );
    let c = env.cm("p", "c").await.unwrap();
    assert_eq!(c.metadata.labels.unwrap()["audited"], "yes");
    ctl.stop().await;
}

#[tokio::test]
async fn a_status_planned_from_a_stale_version_does_not_land() {
    let env = Env::new().await;
    env.create_ns("p", &[("team", "a")]).await;
    env.create_team_sc("base", "a", vec![cm_item("c", json!({"k": "1"}))])
        .await;
    let ctl = env.start(Settings::for_tests(&[OPS]));
    ctl.wait_ready().await;
    env.wait_condition("base", "Ready", "True").await;
    env.settle().await;
    // The SyncConfig watch goes away for a while: mirra's cache keeps the
    // version its last status write answered with.
    hold_watches(&env, "syncconfigs.sync.appuio.ch").await;
    // Someone else writes the SyncConfig meanwhile.
    env.sc_api()
        .patch(
            "base",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"metadata": {"labels": {"audited": "yes"}}})),
        )
        .await
        .unwrap();
    // A change of status: the copy is deleted and cannot be written back.
    env.sb
        .inject(kube_sandbox::FaultRule {
            verb: Some("patch".into()),
            resource: Some("configmaps".into()),
            status: Some(403),
            ..Default::default()
        })
        .await
        .unwrap();
    let before = ctl.metric("mirra_errors_total{class=\"conflict\"}");
    env.cms("p").delete("c", &Default::default()).await.unwrap();
    env.wait_condition("base", "Ready", "False").await;
    // The first status write, planned from the version before the label
    // edit, was refused; the one that landed was planned again.
    assert!(
        ctl.metric("mirra_errors_total{class=\"conflict\"}") > before,
        "no status write was refused"
    );
    let labels = env.sc_api().get("base").await.unwrap().metadata.labels;
    assert_eq!(labels.unwrap()["audited"], "yes");
    env.sb.clear_faults().await;
    ctl.stop().await;
}
