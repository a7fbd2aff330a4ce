//! Copies whose fields the API server rewrites (canonical quantities:
//! `0.5` is stored as `500m`, `1024Mi` as `1Gi`) cost no writes when idle
//! and none across verification passes: the server's answer to mirra's own
//! apply is the in-step reference, not a field-by-field comparison that
//! would never match.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests may unwrap: a panic is a test failure.

use crate::common;

use std::time::Duration;

use common::*;
use kube::api::{Api, DynamicObject, GroupVersionKind, Patch, PatchParams};
use mirra_mirror_controller::Settings;
use serde_json::json;

fn limit_range() -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "limits"},
        "spec": {"limits": [{"type": "Container",
            "default": {"cpu": "0.5", "memory": "1024Mi"},
            "defaultRequest": {"cpu": "0.25", "memory": "0.5Gi"}}]}})
}

fn quota() -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "quota"},
        "spec": {"hard": {"requests.cpu": "2.0", "limits.memory": "2048Mi", "pods": "10"}}})
}

const SKIPPED: &str = "mirra_skipped_writes_total{kind=\"LimitRange\"}";

#[tokio::test]
async fn normalised_copies_cost_no_writes_across_verification_passes() {
    let env = Env::new().await;
    for ns in ["n1", "n2"] {
        env.create_ns(ns, &[("team", "a")]).await;
    }
    env.create_team_sc("base", "a", vec![limit_range(), quota()])
        .await;
    let mut settings = Settings::for_tests(&[OPS]);
    settings.verify_interval = Some(Duration::from_millis(20));
    let ctl = env.start(settings);
    ctl.wait_ready().await;
    let limits: Api<DynamicObject> = Api::namespaced_with(
        env.client.clone(),
        "n1",
        &kube::api::ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "LimitRange")),
    );
    wait_for("copies", || async {
        limits.get_opt("limits").await.unwrap().is_some()
    })
    .await;
    // The server stored the canonical forms: a field-by-field comparison
    // with the item never matches.
    let stored = limits.get("limits").await.unwrap();
    assert_eq!(stored.data["spec"]["limits"][0]["default"]["cpu"], "500m");
    assert_eq!(stored.data["spec"]["limits"][0]["default"]["memory"], "1Gi");
    env.settle().await;

    env.sb.reset_stats();
    let before = ctl.metric(SKIPPED);
    // Many verification passes, each finding both copies in step.
    wait_for("ten passes", || async {
        ctl.metric(SKIPPED) >= before + 20.0
    })
    .await;
    let stats = env.sb.stats();
    assert_eq!(stats.get("patch limitranges"), 0, "{:?}", stats.requests);
    assert_eq!(stats.get("patch resourcequotas"), 0, "{:?}", stats.requests);

    // Someone else touches a copy: at most one apply brings it back in step
    // (the server answers it without a change), then quiet again.
    limits
        .patch(
            "limits",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"seen-by": "ops"}}})),
        )
        .await
        .unwrap();
    let before = ctl.metric(SKIPPED);
    wait_for("more passes", || async {
        ctl.metric(SKIPPED) >= before + 20.0
    })
    .await;
    let stats = env.sb.stats();
    assert!(stats.get("patch limitranges") <= 2, "{:?}", stats.requests);
    let settled = stats.get("patch limitranges");
    let before = ctl.metric(SKIPPED);
    wait_for("still more passes", || async {
        ctl.metric(SKIPPED) >= before + 20.0
    })
    .await;
    assert_eq!(env.sb.stats().get("patch limitranges"), settled);
    ctl.stop().await;

    // After a restart: at most one apply per normalised copy, then quiet.
    env.sb.reset_stats();
    let mut settings = Settings::for_tests(&[OPS]);
    settings.verify_interval = Some(Duration::from_millis(20));
    let ctl = env.start(settings);
    ctl.wait_ready().await;
    wait_for("passes after restart", || async {
        ctl.metric(SKIPPED) >= 20.0
    })
    .await;
    let stats = env.sb.stats();
    assert!(stats.get("patch limitranges") <= 2, "{:?}", stats.requests);
    assert!(
        stats.get("patch resourcequotas") <= 2,
        "{:?}",
        stats.requests
    );
    let (l, q) = (
        stats.get("patch limitranges"),
        stats.get("patch resourcequotas"),
    );
    let before = ctl.metric(SKIPPED);
    wait_for("quiet after restart", || async {
        ctl.metric(SKIPPED) >= before + 20.0
    })
    .await;
    let stats = env.sb.stats();
    assert_eq!(
        (
            stats.get("patch limitranges"),
            stats.get("patch resourcequotas")
        ),
        (l, q)
    );
    ctl.stop().await;
}
