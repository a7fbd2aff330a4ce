//! Restarts: copies of a kind that no SyncConfig names any more (its last
//! SyncConfig was deleted while mirra was down) are found by the start-up
//! sweep and pruned, unless they carry the opt-out or belong to SyncConfigs
//! this mirra does not honour; the sweep costs one list per kind, once.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use mirra_mirror_controller::Settings;
use serde_json::json;

#[tokio::test]
async fn copies_of_a_kind_no_syncconfig_names_any_more_are_pruned_after_a_restart() {
    let env = Env::new().await;
    env.create_ns("t", &[("team", "a")]).await;
    env.create_team_sc("cms", "a", vec![cm_item("c", json!({}))])
        .await;
    env.create_team_sc("secrets", "a", vec![secret_item("s")])
        .await;
    env.create_sc(
        "kept",
        json!({"sync.appuio.ch/prune": "false"}),
        spec_for_team("a", vec![secret_item("k")]),
    )
    .await;
    // A copy another mirra wrote for a SyncConfig in a namespace this one
    // does not honour.
    marked_secret(&env, "t", "theirs", "tenant-b/their-config", None).await;
    let settings = Settings::for_tests(&[OPS]);
    let ctl = env.start(settings.clone());
    wait_for("copies", || async {
        env.cm("t", "c").await.is_some() && secret_names(&env, "t").await == ["k", "s", "theirs"]
    })
    .await;
    env.settle().await;
    ctl.stop().await;

    // Both SyncConfigs naming Secrets go while mirra is down: no watch of
    // Secrets is started from the SyncConfigs after the restart.
    env.delete_sc("secrets").await;
    env.delete_sc("kept").await;
    env.sb.reset_stats();
    let ctl = env.start(settings.clone());
    ctl.wait_ready().await;
    wait_for("s pruned", || async {
        secret_names(&env, "t").await == ["k", "theirs"]
    })
    .await;
    let stats = env.settle().await;
    // Exactly the one prune: the opted-out copy and the foreign one stay,
    // the ConfigMap is in step, and no status changed.
    assert_eq!(stats.writes(), 1, "{:?}", stats.requests);
    assert_eq!(stats.get("delete secrets"), 1, "{:?}", stats.requests);
    // The sweep listed every namespaced kind once, except the ConfigMaps a
    // SyncConfig names (their own watch lists them); Secrets were listed
    // once more by the watch the sweep started.
    assert_eq!(stats.get("list configmaps"), 1, "{:?}", stats.requests);
    assert_eq!(stats.get("list secrets"), 2, "{:?}", stats.requests);
    for swept in [
        "endpoints",
        "services",
        "serviceaccounts",
        "leases.coordination.k8s.io",
        "deployments.apps",
    ] {
        assert_eq!(
            stats.get(&format!("list {swept}")),
            1,
            "{swept}: {:?}",
            stats.requests
        );
    }
    let kept = secrets(&env, "t").get("k").await.unwrap();
    assert_eq!(
        kept.metadata.annotations.unwrap()["sync.appuio.ch/prune"],
        "false"
    );
    // The Secrets watch lasts while copies are left (Namespaces, the
    // SyncConfigs of `ops`, ConfigMaps and Secrets), and ends with the last.
    // (The sandbox notices the stopped process's watches close a little
    // later, hence the wait.)
    wait_for("four watches", || async {
        env.sb.stats().open_watches == 4
    })
    .await;
    for name in ["k", "theirs"] {
        secrets(&env, "t")
            .delete(name, &Default::default())
            .await
            .unwrap();
    }
    wait_for("secrets watch ended", || async {
        env.sb.stats().open_watches == 3
    })
    .await;
    marked_secret(&env, "t", "theirs", "tenant-b/their-config", None).await;
    // As the pruning opt-out left it.
    marked_secret(&env, "t", "k", &format!("{OPS}/kept"), Some("false")).await;
    ctl.stop().await;

    // With the sweep switched off, a copy of a kind nothing names is not
    // even looked for.
    marked_secret(&env, "t", "orphan", &format!("{OPS}/gone"), None).await;
    env.sb.reset_stats();
    let mut no_sweep = settings.clone();
    no_sweep.startup_sweep = false;
    let ctl = env.start(no_sweep);
    ctl.wait_ready().await;
    let stats = env.settle().await;
    assert_eq!(stats.writes(), 0, "{:?}", stats.requests);
    assert_eq!(stats.get("list secrets"), 0, "{:?}", stats.requests);
    assert_eq!(stats.get("list services"), 0, "{:?}", stats.requests);
    ctl.stop().await;

    // A kind mirra may not list is skipped; the others are still swept.
    refuse(&env, "list", "services").await;
    let ctl = env.start(settings);
    wait_for("orphan pruned", || async {
        secret_names(&env, "t").await == ["k", "theirs"]
    })
    .await;
    let stats = env.settle().await;
    assert_eq!(stats.get("list services"), 1, "{:?}", stats.requests);
    assert_eq!(stats.get("delete secrets"), 1, "{:?}", stats.requests);
    ctl.stop().await;
}

#[tokio::test]
async fn a_swept_kind_whose_watch_is_refused_stays_watched_across_verification_passes() {
    let env = Env::new().await;
    env.create_ns("t", &[("team", "a")]).await;
    env.create_team_sc("cms", "a", vec![cm_item("c", json!({}))])
        .await;
    // Kept by the opt-out of a SyncConfig deleted while mirra was down: the
    // sweep finds it, and its kind stays watched.
    marked_secret(&env, "t", "orphan", &format!("{OPS}/gone"), Some("false")).await;
    // mirra may list Secrets but not watch them.
    refuse(&env, "watch", "secrets").await;
    let mut settings = Settings::for_tests(&[OPS]);
    settings.verify_interval = Some(std::time::Duration::from_millis(200));
    let ctl = env.start(settings);
    ctl.wait_ready().await;
    // Several verification passes while the watch is refused: each
    // restarts the watcher instead of forgetting the swept kind.
    wait_for("watch refused across passes", || async {
        env.sb.stats().get("watch secrets") >= 6
    })
    .await;
    assert_eq!(env.sb.stats().get("delete secrets"), 0);
    assert_eq!(secret_names(&env, "t").await, ["orphan"]);

    // Granted; then someone drops the opt-out: the watch sees it, and the
    // copy, whose SyncConfig is gone, is pruned.
    env.sb.clear_faults().await;
    wait_for("watch granted", || async {
        let before = env.sb.stats().get("watch secrets");
        tokio::time::sleep(std::time::Duration::from_millis(600)).await;
        env.sb.stats().get("watch secrets") == before
    })
    .await;
    secrets(&env, "t")
        .patch(
            "orphan",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(
                json!({"metadata": {"annotations": {"sync.appuio.ch/prune": null}}}),
            ),
        )
        .await
        .unwrap();
    wait_for("orphan pruned", || async {
        secret_names(&env, "t").await.is_empty()
    })
    .await;
    assert_eq!(env.settle().await.get("delete secrets"), 1);
    ctl.stop().await;
}

/// The API server restarts (with its state) under a running mirra: every
/// watch drops and resumes with 410, mirra lists again, writes nothing for
/// copies that are in step, and syncs what changes afterwards.
#[tokio::test]
async fn an_api_server_restart_costs_no_writes_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut env = Env::with_config(kube_sandbox::Config {
        state_file: Some(dir.path().join("kube.json")),
        ..Default::default()
    })
    .await;
    env.create_ns("r1", &[("team", "a")]).await;
    env.create_team_sc(
        "base",
        "a",
        vec![cm_item("c", json!({"k": "v"})), secret_item("s")],
    )
    .await;
    let ctl = env.start(Settings::for_tests(&[OPS]));
    ctl.wait_ready().await;
    wait_for("synced", || async { env.cm("r1", "c").await.is_some() }).await;
    env.settle().await;
    let uid = env.cm("r1", "c").await.unwrap().metadata.uid;

    env.sb.restart().await.unwrap();
    // Watches come back (the restarted server counts from zero).
    wait_for("watches back", || async {
        env.sb.stats().get("watch configmaps") >= 1 && env.sb.stats().get("watch secrets") >= 1
    })
    .await;
    let stats = env.settle().await;
    assert_eq!(stats.get("patch configmaps"), 0, "{:?}", stats.requests);
    assert_eq!(stats.get("patch secrets"), 0, "{:?}", stats.requests);
    assert_eq!(env.cm("r1", "c").await.unwrap().metadata.uid, uid);

    // And it keeps following changes.
    env.create_ns("r2", &[("team", "a")]).await;
    wait_for("new namespace synced", || async {
        env.cm("r2", "c").await.is_some() && secret_names(&env, "r2").await.contains(&"s".into())
    })
    .await;
    env.patch_sc_spec(
        "base",
        spec_for_team("a", vec![cm_item("c", json!({"k": "w"}))]),
    )
    .await;
    wait_for("edit synced after restart", || async {
        env.cm_data("r1", "c").await.is_some_and(|d| d["k"] == "w")
            && env.cm_data("r2", "c").await.is_some_and(|d| d["k"] == "w")
            && !secret_names(&env, "r1").await.contains(&"s".into())
    })
    .await;
    ctl.stop().await;
}
