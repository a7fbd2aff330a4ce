//! The seed's acceptance as exact request counts: a namespace event costs
//! only the writes it needs, with no reads; idle costs nothing; a restart
//! against an in-step cluster writes nothing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use std::fmt::Debug;
use std::sync::{Arc, Mutex};

use common::*;
use kube::api::{Api, DynamicObject};
use mirra_mirror_controller::{Settings, WatchScope};
use serde_json::json;

#[tokio::test]
async fn namespace_creation_relabel_and_unselected_namespace_cost_exactly_their_writes() {
    let env = Env::new().await;
    // N = 2 SyncConfigs select team=a with M = 3 items in all; a third
    // selects team=b only.
    env.create_team_sc("one", "a", vec![cm_item("a-1", json!({"k": "1"}))])
        .await;
    env.create_team_sc(
        "two",
        "a",
        vec![
            cm_item("a-2", json!({"k": "2"})),
            cm_item("a-3", json!({"k": "3"})),
        ],
    )
    .await;
    env.create_team_sc("other", "b", vec![cm_item("b-1", json!({}))])
        .await;
    let ctl = env.start(Settings::for_tests(&[OPS]));
    ctl.wait_ready().await;
    env.settle().await;

    env.sb.reset_stats();
    env.create_ns("new", &[("team", "a")]).await;
    // The test polls by listing; it counts its own lists so that the
    // controller's requests are known exactly.
    let polls = std::cell::Cell::new(0u64);
    wait_for("copies in new", || async {
        polls.set(polls.get() + 1);
        env.cm_names("new").await.len() == 3
    })
    .await;
    let stats = env.settle().await;
    // The test's namespace create and its lists aside, the controller sent
    // exactly M applies, all into `new`, plus one status write per
    // selecting SyncConfig (counters changed), and no read at all.
    assert_eq!(
        non_watch(&stats),
        [
            ("create namespaces".to_string(), 1),
            ("list configmaps".to_string(), polls.get()),
            ("patch configmaps".to_string(), 3),
            (STATUS_KEY.to_string(), 2),
        ]
        .into_iter()
        .collect(),
        "{:?}",
        stats.requests
    );
    assert_eq!(
        stats.namespaces["new"],
        [
            ("list configmaps".to_string(), polls.get()),
            ("patch configmaps".to_string(), 3),
        ]
        .into_iter()
        .collect()
    );
    assert_eq!(env.status("one").await["synchronizedItemCount"], 1);
    assert_eq!(env.status("two").await["synchronizedItemCount"], 2);

    // A namespace no SyncConfig selects: zero requests from the controller.
    env.sb.reset_stats();
    env.create_ns("plain", &[("team", "z")]).await;
    let stats = env.settle().await;
    assert_eq!(
        non_watch(&stats),
        [("create namespaces".to_string(), 1)].into_iter().collect()
    );

    // Relabel out: exactly the owned copies are deleted, nothing else.
    env.create_cm("new", json!({"metadata": {"name": "mine"}}))
        .await;
    env.settle().await;
    env.sb.reset_stats();
    env.label_ns("new", json!({"team": "c"})).await;
    wait_for("copies pruned", || async {
        env.cm_names("new").await == vec!["mine".to_string()]
    })
    .await;
    let stats = env.settle().await;
    assert_eq!(stats.get("delete configmaps"), 3, "{:?}", stats.requests);
    assert_eq!(stats.get("patch configmaps"), 0);
    assert_eq!(stats.get(STATUS_KEY), 2);
    assert_eq!(env.status("two").await["synchronizedItemCount"], 0);
    ctl.stop().await;
}

#[tokio::test]
async fn idle_verification_passes_and_a_restart_send_nothing() {
    let env = Env::new().await;
    env.create_ns("t1", &[("team", "a")]).await;
    env.create_ns("t2", &[("team", "a")]).await;
    env.create_team_sc(
        "base",
        "a",
        vec![
            cm_item("x", json!({"n": "1"})),
            cm_item("y-${PROJECT_NAME}", json!({})),
        ],
    )
    .await;
    let mut settings = Settings::for_tests(&[OPS]);
    // 30 ms: many verification passes while the test waits below.
    settings.verify_interval = Some(Duration::from_millis(30));
    let ctl = env.start(settings.clone());
    ctl.wait_ready().await;
    wait_for("copies", || async { env.cm_names("t2").await.len() == 2 }).await;
    env.settle().await;

    env.sb.reset_stats();
    let skipped_before = ctl.metric("mirra_skipped_writes_total");
    // Wait until at least ten more passes have planned both namespaces.
    wait_for("verification passes", || async {
        ctl.metric("mirra_skipped_writes_total") >= skipped_before + 40.0
    })
    .await;
    let stats = env.settle().await;
    assert!(
        non_watch(&stats).is_empty(),
        "idle requests: {:?}",
        stats.requests
    );
    ctl.stop().await;

    // A new process (new client, empty caches) on the in-step cluster.
    env.sb.reset_stats();
    let ctl = env.start(settings);
    ctl.wait_ready().await;
    let stats = env.settle().await;
    assert_eq!(stats.writes(), 0, "restart wrote: {:?}", stats.requests);
    assert_eq!(ctl.metric("mirra_writes_total"), 0.0);
    ctl.stop().await;
}

#[tokio::test]
async fn a_never_write_namespace_gets_zero_requests() {
    let env = Env::new().await;
    env.create_ns("guarded", &[("team", "a")]).await;
    env.create_ns("open", &[("team", "a")]).await;
    // A copy carrying mirra's marks for `base` that `base` does not want:
    // anywhere else it would be pruned.
    env.create_cm("guarded", json!({"metadata": {
                "name": "stale",
                "labels": {"app.kubernetes.io/managed-by": "mirra"},
                "annotations": {mirra_mirror_controller::mirra_mirror::OWNER_ANNOTATION: format!("{OPS}/base")},
            }})).await;
    env.sb.reset_stats();
    let mut settings = Settings::for_tests(&[OPS]);
    settings.never_write.insert("guarded".into());
    let ctl = env.start(settings);
    ctl.wait_ready().await;
    env.create_team_sc("base", "a", vec![cm_item("c", json!({"k": "v"}))])
        .await;
    wait_for("open synced", || async {
        env.cm("open", "c").await.is_some()
    })
    .await;
    env.settle().await;
    // Selected, then relabelled out: neither may reach `guarded`.
    env.label_ns("guarded", json!({"team": "gone"})).await;
    env.settle().await;
    let stats = env.sb.stats();
    assert!(stats.get("patch configmaps") >= 1, "{:?}", stats.requests);
    assert_eq!(
        stats.namespaces.get("guarded"),
        None,
        "requests into a never-write namespace: {:?}",
        stats.namespaces
    );
    // Checked after the counts (these reads are the test's own).
    assert!(env.cm("guarded", "c").await.is_none());
    assert!(env.cm("guarded", "stale").await.is_some());
    ctl.stop().await;
}

#[tokio::test]
async fn metrics_follow_writes_skips_queue_and_caches() {
    let env = Env::new().await;
    env.create_ns("n0", &[("team", "a")]).await;
    env.create_ns("n1", &[("team", "a")]).await;
    env.create_team_sc(
        "base",
        "a",
        vec![cm_item("c1", json!({"k": "1"})), cm_item("c2", json!({}))],
    )
    .await;
    let ctl = env.start(Settings::for_tests(&[OPS]));
    ctl.wait_ready().await;
    wait_for("copies", || async {
        env.cm_names("n0").await.len() == 2 && env.cm_names("n1").await.len() == 2
    })
    .await;
    env.settle().await;
    const APPLY: &str = r#"mirra_writes_total{verb="apply",kind="ConfigMap"}"#;
    const DELETE: &str = r#"mirra_writes_total{verb="delete",kind="ConfigMap"}"#;
    const SKIPPED: &str = r#"mirra_skipped_writes_total{kind="ConfigMap"}"#;
    const DEPTH: &str = r#"mirra_queue_depth{queue="mirror"}"#;
    const LATENCY: &str = r#"mirra_event_to_write_seconds_count{controller="mirror"}"#;
    const CACHED_CM: &str = r#"mirra_cached_objects{kind="ConfigMap"}"#;
    const CACHED_NS: &str = r#"mirra_cached_objects{kind="Namespace"}"#;
    assert_eq!(ctl.metric(APPLY), 4.0);
    assert_eq!(ctl.metric(DELETE), 0.0);
    // One observation per namespace write pass: at least one per namespace,
    // never more than there were writes.
    let latency = ctl.metric(LATENCY);
    assert!((2.0..=4.0).contains(&latency), "{latency}");
    // The gauges are refreshed once per status window. The sandbox has its
    // own namespaces besides the test's.
    let namespaces = kube::Api::<k8s_openapi::api::core::v1::Namespace>::all(env.client.clone())
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .len() as f64;
    assert!(namespaces >= 3.0);
    wait_for("cache gauges", || async {
        ctl.metric(CACHED_CM) == 4.0 && ctl.metric(CACHED_NS) == namespaces
    })
    .await;
    assert_eq!(ctl.metric(DEPTH), 0.0);

    // A label no selector reads re-plans n0 and finds both copies in step:
    // two skipped writes, no write.
    let skipped = ctl.metric(SKIPPED);
    env.label_ns("n0", json!({"team": "a", "unrelated": "x"}))
        .await;
    wait_for("skips counted", || async {
        ctl.metric(SKIPPED) == skipped + 2.0
    })
    .await;
    env.settle().await;
    assert_eq!(ctl.metric(SKIPPED), skipped + 2.0);
    assert_eq!(ctl.metric(APPLY), 4.0);
    assert_eq!(ctl.metric(LATENCY), latency);

    // Relabelled out: two deletes, one more latency observation, and the
    // cache gauge follows.
    env.label_ns("n1", json!({"team": "b"})).await;
    wait_for("pruned", || async { env.cm_names("n1").await.is_empty() }).await;
    env.settle().await;
    assert_eq!(ctl.metric(DELETE), 2.0);
    assert_eq!(ctl.metric(LATENCY), latency + 1.0);
    wait_for("cache gauge after prune", || async {
        ctl.metric(CACHED_CM) == 2.0
    })
    .await;
    assert_eq!(ctl.metric(DEPTH), 0.0);
    ctl.stop().await;
}

/// Collects the messages of WARN events (a minimal subscriber: the
/// workspace has no tracing-subscriber, and this is all the test needs).
struct WarnCapture(Arc<Mutex<Vec<String>>>);

struct MessageOf(String);

impl tracing::field::Visit for MessageOf {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

impl tracing::Subscriber for WarnCapture {
    fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
        *metadata.level() == tracing::Level::WARN
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut m = MessageOf(String::new());
        event.record(&mut m);
        self.0.lock().unwrap().push(m.0);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[tokio::test]
async fn syncconfigs_outside_the_watched_namespaces_are_ignored_unless_all_are_chosen() {
    let env = Env::new().await;
    env.create_ns("elsewhere", &[]).await;
    env.create_ns("t", &[("team", "a")]).await;
    // A SyncConfig in a namespace mirra does not honour: whoever may write
    // there must not gain mirra's rights in `t`.
    let foreign: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "sync.appuio.ch/v1alpha1", "kind": "SyncConfig",
        "metadata": {"name": "intruder", "namespace": "elsewhere"},
        "spec": spec_for_team("a", vec![cm_item("planted", json!({}))]),
    }))
    .unwrap();
    let elsewhere: Api<DynamicObject> =
        Api::namespaced_with(env.client.clone(), "elsewhere", &sc_resource());
    elsewhere
        .create(&Default::default(), &foreign)
        .await
        .unwrap();
    env.create_team_sc("base", "a", vec![cm_item("mine", json!({}))])
        .await;
    env.sb.reset_stats();
    let ctl = env.start(Settings::for_tests(&[OPS]));
    ctl.wait_ready().await;
    wait_for("mine", || async { env.cm("t", "mine").await.is_some() }).await;
    let stats = env.settle().await;
    // The honoured SyncConfig's one apply and one status write; nothing
    // for the other, not even its status.
    let writes: Vec<(String, u64)> = stats
        .requests
        .iter()
        .filter(|(k, _)| {
            ["create", "update", "patch", "delete"].contains(&k.split(' ').next().unwrap())
        })
        .map(|(k, v)| (k.clone(), *v))
        .collect();
    assert_eq!(
        writes,
        vec![
            ("patch configmaps".to_string(), 1),
            (STATUS_KEY.to_string(), 1),
        ],
        "{:?}",
        stats.requests
    );
    assert_eq!(stats.namespaces.get("elsewhere"), None);
    assert!(env.cm("t", "planted").await.is_none());
    let intruder = elsewhere.get("intruder").await.unwrap();
    assert!(intruder.data.get("status").is_none(), "{:?}", intruder.data);
    ctl.stop().await;

    // --all-namespaces: honoured everywhere, and said so loudly.
    let warnings = Arc::new(Mutex::new(Vec::new()));
    // The test runtime is single-threaded, so the controller's tasks run
    // on this thread and report to this subscriber.
    let _guard = tracing::subscriber::set_default(WarnCapture(warnings.clone()));
    let mut settings = Settings::for_tests(&[]);
    settings.scope = WatchScope::All;
    let ctl = env.start(settings);
    wait_for("planted", || async {
        env.cm("t", "planted").await.is_some()
    })
    .await;
    wait_for("intruder status", || async {
        elsewhere
            .get("intruder")
            .await
            .unwrap()
            .data
            .pointer("/status/synchronizedItemCount")
            == Some(&json!(1))
    })
    .await;
    let logged = warnings.lock().unwrap().clone();
    assert!(
        logged
            .iter()
            .any(|m| m.contains("honouring SyncConfigs in ALL namespaces")),
        "{logged:?}"
    );
    ctl.stop().await;
}

/// A SyncConfig edit is one event per namespace, not a burst: its
/// namespaces are planned at once, and so is a namespace just created.
/// With the quiet time of other events set to an hour, the copies still
/// follow the SyncConfig (created, then edited) and reach a new
/// namespace, at exactly one apply per changed copy.
#[tokio::test]
async fn an_edit_or_a_new_namespace_does_not_wait_out_the_debounce() {
    let env = Env::new().await;
    env.create_ns("t1", &[("team", "a")]).await;
    env.create_ns("t2", &[("team", "a")]).await;
    env.create_team_sc("edited", "a", vec![cm_item("c", json!({"v": "1"}))])
        .await;
    let mut settings = Settings::for_tests(&[OPS]);
    settings.debounce = Duration::from_secs(3600);
    settings.max_delay = Duration::from_secs(3600);
    let ctl = env.start(settings);
    ctl.wait_ready().await;
    for ns in ["t1", "t2"] {
        wait_for("the first copies", || async {
            env.cm_data(ns, "c").await.is_some_and(|d| d["v"] == "1")
        })
        .await;
    }
    // The queue is not empty (the namespaces no SyncConfig selects wait
    // out their hour), so quiet is told from the server's counters alone.
    let quiet = || mirra_testkit::settle_for("the mirror controller", 10, || Some(env.sb.stats()));
    quiet().await;

    env.sb.reset_stats();
    env.patch_sc_spec(
        "edited",
        spec_for_team("a", vec![cm_item("c", json!({"v": "2"}))]),
    )
    .await;
    for ns in ["t1", "t2"] {
        wait_for("the edited copies", || async {
            env.cm_data(ns, "c").await.is_some_and(|d| d["v"] == "2")
        })
        .await;
    }
    let stats = quiet().await;
    assert_eq!(stats.get("patch configmaps"), 2, "{:?}", stats.requests);

    env.sb.reset_stats();
    env.create_ns("t3", &[("team", "a")]).await;
    wait_for("the new namespace's copy", || async {
        env.cm_data("t3", "c").await.is_some_and(|d| d["v"] == "2")
    })
    .await;
    let stats = quiet().await;
    assert_eq!(stats.get("patch configmaps"), 1, "{:?}", stats.requests);
    ctl.stop().await;
}
