//! Limits per SyncConfig (`--max-copies-per-syncconfig`,
//! `--max-bytes-per-syncconfig`): a SyncConfig over one is Ready=False with
//! reason LimitExceeded and an Event, and nothing of it is written, updated
//! or deleted; another SyncConfig keeps syncing; a higher limit or a smaller
//! selector syncs it fully again. Write counts are asserted exactly.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests may unwrap: a panic is a test failure.

use crate::common;

use common::*;
use mirra_mirror_controller::Settings;
use serde_json::{Value, json};

fn with_limits(max_copies: u64, max_bytes: u64) -> Settings {
    let mut s = Settings::for_tests(&[OPS]);
    s.limits.max_copies = max_copies;
    s.limits.max_bytes = max_bytes;
    s
}

async fn limit_exceeded(env: &Env, sc: &str) -> Option<String> {
    match env.condition(sc, "Ready").await {
        Some((status, reason, message)) if status == "False" && reason == "LimitExceeded" => {
            Some(message)
        }
        _ => None,
    }
}

async fn ready(env: &Env, sc: &str) -> bool {
    env.condition(sc, "Ready")
        .await
        .is_some_and(|(status, _, _)| status == "True")
}

/// A selector of these names only (a merge patch: the label selector is
/// taken out explicitly).
fn names(ns: &[&str]) -> Value {
    json!({"matchNames": ns, "labelSelector": null})
}

#[tokio::test]
async fn a_syncconfig_over_the_copies_limit_is_held_as_it_is_and_others_keep_syncing() {
    let env = Env::new().await;
    for i in 0..5 {
        env.create_ns(&format!("t-{i}"), &[("team", "a")]).await;
    }
    env.create_team_sc(
        "big",
        "a",
        vec![
            cm_item("big-1", json!({"k": "1"})),
            cm_item("big-2", json!({"k": "2"})),
        ],
    )
    .await;
    env.create_team_sc("small", "a", vec![cm_item("small", json!({"k": "s"}))])
        .await;

    // 10 copies at a limit of 10: synced fully.
    let ctl = env.start(with_limits(10, u64::MAX));
    ctl.wait_ready().await;
    wait_for("big ready", || ready(&env, "big")).await;
    wait_for("small ready", || ready(&env, "small")).await;
    env.settle().await;

    // A sixth namespace takes big to 12 copies: held. small still gets its
    // copy there, and an edit of big's item reaches none of its copies.
    env.sb.reset_stats();
    env.create_ns("t-5", &[("team", "a")]).await;
    wait_for("small in t-5", || async {
        env.cm("t-5", "small").await.is_some()
    })
    .await;
    wait_for("big over the limit", || async {
        limit_exceeded(&env, "big").await.is_some()
    })
    .await;
    let message = limit_exceeded(&env, "big").await.unwrap();
    assert!(
        message.contains("12 copies (2 item(s) x 6 namespace(s))"),
        "{message}"
    );
    assert!(message.contains("limit of 10 copies"), "{message}");
    assert!(message.contains("--max-copies-per-syncconfig"), "{message}");
    env.patch_sc_spec(
        "big",
        spec_for_team(
            "a",
            vec![
                cm_item("big-1", json!({"k": "edited"})),
                cm_item("big-2", json!({"k": "2"})),
            ],
        ),
    )
    .await;
    // The edit was planned (and held) before the counts are read.
    env.wait_observed("big").await;
    let stats = env.settle().await;
    assert_eq!(stats.get("patch configmaps"), 1, "{:?}", stats.requests);
    assert_eq!(stats.get("delete configmaps"), 0, "{:?}", stats.requests);
    assert_eq!(env.cm_names("t-5").await, vec!["small".to_string()]);
    for i in 0..5 {
        let data = env.cm_data(&format!("t-{i}"), "big-1").await.unwrap();
        assert_eq!(data["k"], "1", "t-{i} was updated while held");
    }
    assert!(ready(&env, "small").await);
    let events = env.events_full("big").await;
    let limit_events: Vec<_> = events
        .iter()
        .filter(|(_, reason, _, _)| reason == "LimitExceeded")
        .collect();
    assert_eq!(limit_events.len(), 1, "{events:?}");
    assert_eq!(limit_events[0].0, "big.limitexceeded");
    assert!(
        limit_events[0].3.contains("--max-copies-per-syncconfig"),
        "{events:?}"
    );
    assert!(env.events("small").await.is_empty());
    ctl.stop().await;

    // A new controller with the limit raised: big syncs fully, exactly its
    // two copies in t-5 and the edited item in the five other namespaces.
    env.sb.reset_stats();
    let ctl = env.start(with_limits(12, u64::MAX));
    ctl.wait_ready().await;
    wait_for("big ready again", || ready(&env, "big")).await;
    let stats = env.settle().await;
    assert_eq!(stats.get("patch configmaps"), 7, "{:?}", stats.requests);
    assert_eq!(stats.get("delete configmaps"), 0);
    for i in 0..6 {
        let data = env.cm_data(&format!("t-{i}"), "big-1").await.unwrap();
        assert_eq!(data["k"], "edited", "t-{i}");
    }
    ctl.stop().await;

    // Under a lower limit again, big is held, nothing pruned or written.
    env.sb.reset_stats();
    let ctl = env.start(with_limits(6, u64::MAX));
    ctl.wait_ready().await;
    wait_for("big held", || async {
        limit_exceeded(&env, "big").await.is_some()
    })
    .await;
    let stats = env.settle().await;
    assert_eq!(stats.get("patch configmaps"), 0, "{:?}", stats.requests);
    assert_eq!(stats.get("delete configmaps"), 0);
    // A selector shrunk to three namespaces (6 copies) syncs it: the copies
    // the old selector wanted elsewhere are pruned, nothing else is sent.
    env.sb.reset_stats();
    env.patch_sc_spec(
        "big",
        json!({"namespaceSelector": names(&["t-0", "t-1", "t-2"]),
               "syncItems": [cm_item("big-1", json!({"k": "edited"})),
                             cm_item("big-2", json!({"k": "2"}))]}),
    )
    .await;
    wait_for("big ready under the limit", || ready(&env, "big")).await;
    let stats = env.settle().await;
    assert_eq!(stats.get("delete configmaps"), 6, "{:?}", stats.requests);
    assert_eq!(stats.get("patch configmaps"), 0, "{:?}", stats.requests);
    assert_eq!(
        env.cm_names("t-4").await,
        vec!["small".to_string()],
        "small is untouched"
    );
    assert_eq!(env.status("big").await["synchronizedItemCount"], 6);
    ctl.stop().await;
}

#[tokio::test]
async fn a_syncconfig_over_the_bytes_limit_writes_nothing_until_it_fits() {
    let env = Env::new().await;
    for i in 0..3 {
        env.create_ns(&format!("b-{i}"), &[("team", "a")]).await;
    }
    // About 10 kB of item: 30 kB over three namespaces, 20 kB over two.
    let large = "x".repeat(10_000);
    env.create_team_sc("large", "a", vec![cm_item("large", json!({"k": large}))])
        .await;
    env.create_team_sc("small", "a", vec![cm_item("small", json!({"k": "s"}))])
        .await;
    env.sb.reset_stats();
    let ctl = env.start(with_limits(u64::MAX, 25_000));
    ctl.wait_ready().await;
    wait_for("small ready", || ready(&env, "small")).await;
    wait_for("large over the limit", || async {
        limit_exceeded(&env, "large").await.is_some()
    })
    .await;
    let stats = env.settle().await;
    assert_eq!(stats.get("patch configmaps"), 3, "{:?}", stats.requests);
    for i in 0..3 {
        assert_eq!(env.cm_names(&format!("b-{i}")).await, vec!["small"]);
    }
    let message = limit_exceeded(&env, "large").await.unwrap();
    assert!(message.contains("x 3 namespace(s)"), "{message}");
    assert!(message.contains("limit of 25000 bytes"), "{message}");
    assert!(message.contains("--max-bytes-per-syncconfig"), "{message}");
    assert!(
        env.events("large")
            .await
            .contains(&("LimitExceeded".to_string(), 1)),
        "{:?}",
        env.events("large").await
    );

    // A namespace leaving the selection takes it under the limit: synced
    // into the two left, without any change of the SyncConfig.
    env.sb.reset_stats();
    env.label_ns("b-2", json!({"team": "z"})).await;
    wait_for("large ready", || ready(&env, "large")).await;
    let stats = env.settle().await;
    // The two copies of large; small's copy in b-2 pruned.
    assert_eq!(stats.get("patch configmaps"), 2, "{:?}", stats.requests);
    assert_eq!(stats.get("delete configmaps"), 1, "{:?}", stats.requests);
    assert_eq!(
        env.cm_data("b-0", "large").await.unwrap()["k"].len(),
        10_000
    );
    ctl.stop().await;

    // A restart with the large copies in place writes nothing: the cache
    // keeps a digest of the large value, and it compares as the value.
    env.sb.reset_stats();
    let ctl = env.start(with_limits(u64::MAX, 25_000));
    ctl.wait_ready().await;
    let stats = env.settle().await;
    assert_eq!(stats.writes(), 0, "{:?}", stats.requests);
    // Drift in the large value is still seen and repaired, once.
    env.sb.reset_stats();
    let mut drifted = "x".repeat(10_000);
    drifted.push('!');
    env.cms("b-1")
        .patch(
            "large",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"data": {"k": drifted}})),
        )
        .await
        .unwrap();
    wait_for("drift repaired", || async {
        env.cm_data("b-1", "large").await.unwrap()["k"].len() == 10_000
    })
    .await;
    let stats = env.settle().await;
    // The test's own patch, and mirra's one apply.
    assert_eq!(stats.get("patch configmaps"), 2, "{:?}", stats.requests);

    // Raising the limit is the other way out: b-2 back in the selection
    // holds it again, a higher limit syncs it.
    env.label_ns("b-2", json!({"team": "a"})).await;
    wait_for("large held again", || async {
        limit_exceeded(&env, "large").await.is_some()
    })
    .await;
    env.settle().await;
    assert!(env.cm("b-2", "large").await.is_none());
    ctl.stop().await;
    env.sb.reset_stats();
    let ctl = env.start(with_limits(u64::MAX, 1 << 20));
    ctl.wait_ready().await;
    wait_for("large ready", || ready(&env, "large")).await;
    let stats = env.settle().await;
    assert_eq!(stats.get("patch configmaps"), 1, "{:?}", stats.requests);
    assert!(env.cm("b-2", "large").await.is_some());
    ctl.stop().await;
}
