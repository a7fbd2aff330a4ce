//! Dry runs (`--dry-run`) beside what espejo leaves: the preview reports
//! exactly the writes the real run then makes, sends none itself, and
//! follows the cluster as events arrive.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};

use crate::common;

use common::*;
use kube::api::ListParams;
use mirra_mirror_controller::Settings;
use mirra_mirror_controller::mirra_runtime::{PlannedWrite, Preview};
use serde_json::json;

/// A write as both sides can name it: kind, namespace, name, operation.
type Write = (String, String, String, String);

fn dry_run_settings() -> (Settings, Preview) {
    let mut settings = Settings::for_tests(&[OPS]);
    let preview = Preview::new("mirror");
    settings.preview = Some(preview.clone());
    (settings, preview)
}

fn planned(preview: &Preview) -> BTreeSet<Write> {
    preview
        .writes()
        .into_iter()
        .map(|w: PlannedWrite| (w.kind, w.namespace, w.name, w.operation.to_string()))
        .collect()
}

/// Every ConfigMap in `namespaces` and the SyncConfigs, with their
/// resourceVersions.
async fn versions(env: &Env, namespaces: &[&str]) -> BTreeMap<(String, String, String), String> {
    let mut out = BTreeMap::new();
    for ns in namespaces {
        for cm in env.cms(ns).list(&ListParams::default()).await.unwrap() {
            out.insert(
                (
                    "ConfigMap".into(),
                    ns.to_string(),
                    cm.metadata.name.unwrap(),
                ),
                cm.metadata.resource_version.unwrap(),
            );
        }
    }
    for sc in env.sc_api().list(&ListParams::default()).await.unwrap() {
        out.insert(
            ("SyncConfig".into(), OPS.into(), sc.metadata.name.unwrap()),
            sc.metadata.resource_version.unwrap(),
        );
    }
    out
}

/// What changed between two snapshots, as the writes that changed it.
fn changes(
    before: &BTreeMap<(String, String, String), String>,
    after: &BTreeMap<(String, String, String), String>,
) -> BTreeSet<Write> {
    let mut out = BTreeSet::new();
    for (key, v) in after {
        if before.get(key) != Some(v) {
            let op = if key.0 == "SyncConfig" {
                "patch-status"
            } else {
                "apply"
            };
            out.insert((key.0.clone(), key.1.clone(), key.2.clone(), op.into()));
        }
    }
    for key in before.keys().filter(|k| !after.contains_key(*k)) {
        out.insert((key.0.clone(), key.1.clone(), key.2.clone(), "delete".into()));
    }
    out
}

async fn espejo_copy(env: &Env, ns: &str, name: &str, data: serde_json::Value) {
    env.create_cm(ns, json!({"metadata": {"name": name}, "data": data}))
        .await;
}

const NAMESPACES: [&str; 3] = ["team-a", "team-b", "team-c"];

/// What espejo leaves: copies it made (no mirra marks), one of them out of
/// date, one namespace not yet synced, and (`delete_item`) an object a
/// deleteItem names.
async fn as_espejo_leaves_it(env: &Env, delete_item: bool) {
    for ns in NAMESPACES {
        env.create_ns(ns, &[("team", "x")]).await;
    }
    espejo_copy(env, "team-a", "shared", json!({"mode": "fast"})).await;
    espejo_copy(env, "team-b", "shared", json!({"mode": "slow"})).await;
    let mut spec = spec_for_team("x", vec![cm_item("shared", json!({"mode": "fast"}))]);
    if delete_item {
        espejo_copy(env, "team-a", "retired", json!({"old": "yes"})).await;
        spec["deleteItems"] = json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "retired"}]);
    }
    env.create_sc("shared", json!({}), spec).await;
}

/// The preview's set of writes, once it stops changing.
async fn settled_preview(env: &Env, preview: &Preview) -> BTreeSet<Write> {
    env.settle().await;
    mirra_testkit::settle("the preview", || Some(planned(preview))).await
}

#[tokio::test]
async fn a_preview_reports_exactly_the_writes_the_real_run_then_makes() {
    let env = Env::new().await;
    as_espejo_leaves_it(&env, true).await;
    env.sb.reset_stats();

    let (settings, preview) = dry_run_settings();
    let dry = env.start(settings);
    dry.wait_ready().await;
    let previewed = settled_preview(&env, &preview).await;
    let stats = env.settle().await;
    assert_eq!(
        stats.writes(),
        0,
        "a preview writes nothing: {:?}",
        non_watch(&stats)
    );
    dry.stop().await;

    let apply = |ns: &str, name: &str| {
        (
            "ConfigMap".to_string(),
            ns.to_string(),
            name.to_string(),
            "apply".to_string(),
        )
    };
    let expected: BTreeSet<Write> = [
        apply("team-a", "shared"),
        apply("team-b", "shared"),
        apply("team-c", "shared"),
        (
            "ConfigMap".into(),
            "team-a".into(),
            "retired".into(),
            "delete".into(),
        ),
        (
            "SyncConfig".into(),
            OPS.into(),
            "shared".into(),
            "patch-status".into(),
        ),
    ]
    .into();
    assert_eq!(previewed, expected);
    let summary = preview.summary();
    assert_eq!(summary["quiet"], false);
    assert_eq!(summary["byReason"]["create-or-adopt"], 3, "{summary}");
    assert_eq!(summary["byReason"]["delete-item"], 1, "{summary}");

    // The real run, from the same cluster: what it changes is what the
    // preview said.
    let before = versions(&env, &NAMESPACES).await;
    let real = env.start(Settings::for_tests(&[OPS]));
    wait_for("the copies", || async {
        env.cm_data("team-c", "shared").await.is_some()
            && env.cm("team-a", "retired").await.is_none()
            && env
                .cm_data("team-b", "shared")
                .await
                .is_some_and(|d| d["mode"] == "fast")
    })
    .await;
    env.settle().await;
    let after = versions(&env, &NAMESPACES).await;
    assert_eq!(changes(&before, &after), previewed);
    real.stop().await;
}

#[tokio::test]
async fn a_preview_follows_the_cluster_as_events_arrive() {
    let env = Env::new().await;
    // Without a deleteItem: a restarted mirra's first status counts the
    // deletions since its start (none), so a status write would be due.
    as_espejo_leaves_it(&env, false).await;
    let real = env.start(Settings::for_tests(&[OPS]));
    wait_for("in step", || async {
        env.cm_data("team-c", "shared").await.is_some()
            && env
                .cm_data("team-b", "shared")
                .await
                .is_some_and(|d| d["mode"] == "fast")
    })
    .await;
    env.settle().await;
    real.stop().await;

    // mirra ran before: beside it now, the preview has nothing to say.
    let (settings, preview) = dry_run_settings();
    let dry = env.start(settings);
    dry.wait_ready().await;
    assert_eq!(settled_preview(&env, &preview).await, BTreeSet::new());
    assert_eq!(preview.summary()["quiet"], true);
    env.sb.reset_stats();

    // Someone edits a copy: the preview shows the repair, with the change.
    env.merge_cm("team-b", "shared", json!({"data": {"mode": "by-hand"}}))
        .await;
    wait_for("the repair planned", || async {
        preview.writes().iter().any(|w| {
            w.namespace == "team-b"
                && w.reason == "differs"
                && w.diff == vec!["data.mode: \"by-hand\" -> \"fast\"".to_string()]
        })
    })
    .await;
    // The same edit undone (as the incumbent would repair it): nothing
    // left to write.
    env.merge_cm("team-b", "shared", json!({"data": {"mode": "fast"}}))
        .await;
    wait_for("the repair no longer needed", || async {
        preview.writes().is_empty()
    })
    .await;

    // A namespace appears: its copy is planned.
    env.create_ns("team-d", &[("team", "x")]).await;
    wait_for("the new namespace's copy planned", || async {
        planned(&preview).contains(&(
            "ConfigMap".into(),
            "team-d".into(),
            "shared".into(),
            "apply".into(),
        ))
    })
    .await;
    // The SyncConfig deleted: the copy mirra created would be pruned, the
    // two it adopted from espejo released, and no status written.
    env.delete_sc("shared").await;
    wait_for("the SyncConfig's end planned", || async {
        let w = planned(&preview);
        w.len() == 3
            && w.iter()
                .all(|(_, ns, name, _)| ns.starts_with("team-") && name == "shared")
    })
    .await;
    let by_ns: BTreeMap<String, (&str, &str)> = preview
        .writes()
        .into_iter()
        .map(|w| (w.namespace, (w.operation, w.reason)))
        .collect();
    assert_eq!(by_ns["team-c"], ("delete", "prune"));
    assert_eq!(by_ns["team-a"], ("release", "release"));
    assert_eq!(by_ns["team-b"], ("release", "release"));
    let stats = env.settle().await;
    let writes: BTreeMap<String, u64> = non_watch(&stats)
        .into_iter()
        .filter(|(k, _)| {
            ["create", "update", "patch", "delete"]
                .iter()
                .any(|v| k.starts_with(&format!("{v} ")))
        })
        .collect();
    assert_eq!(
        writes,
        BTreeMap::from([
            ("patch configmaps".to_string(), 2),
            ("create namespaces".to_string(), 1),
            ("delete syncconfigs.sync.appuio.ch".to_string(), 1)
        ]),
        "only the test's own writes"
    );
    assert!(
        preview.summary()["reportedSinceStart"].as_u64() >= Some(2),
        "{}",
        preview.summary()
    );
    dry.stop().await;
}

#[tokio::test]
async fn a_preview_that_cannot_read_says_so_and_writes_nothing() {
    let env = Env::new().await;
    env.create_ns("team-a", &[("team", "x")]).await;
    env.create_team_sc(
        "shared",
        "x",
        vec![secret_item("s"), cm_item("c", json!({"k": "v"}))],
    )
    .await;
    refuse(&env, "list", "secrets").await;
    env.sb.reset_stats();
    let (settings, preview) = dry_run_settings();
    let dry = env.start(settings);
    let summary = mirra_testkit::wait_for_unreadable(|| preview.summary()).await;
    assert_eq!(summary["quiet"], false, "{summary}");
    assert!(
        summary["unreadable"][0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("403") || e.contains("forbidden")),
        "{summary}"
    );
    assert_eq!(env.sb.stats().writes(), 0);

    // Granted again: the gap closes.
    env.sb.clear_faults().await;
    wait_for("the read answered", || async {
        preview.summary()["unreadable"]
            .as_array()
            .is_some_and(Vec::is_empty)
    })
    .await;
    wait_for("the Secret's copy planned", || async {
        planned(&preview).contains(&("Secret".into(), "team-a".into(), "s".into(), "apply".into()))
    })
    .await;
    assert_eq!(env.sb.stats().writes(), 0);
    dry.stop().await;
}
