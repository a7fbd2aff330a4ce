//! Failures: a forbidden write, a kind mirra may not list, injected
//! 409/429/500, dropped watches, 410 Gone and slow start-up lists. The
//! controller converges, loses no change and deletes nothing it should keep.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::*;
use kube_sandbox::FaultRule;
use mirra_mirror_controller::Settings;
use serde_json::json;

const TRANSIENT: &str = r#"mirra_errors_total{class="transient"}"#;
const THROTTLED: &str = r#"mirra_errors_total{class="throttled"}"#;

#[tokio::test]
async fn forbidden_write_is_reported_and_other_namespaces_sync() {
    let env = Env::new().await;
    env.create_ns("locked", &[("team", "a")]).await;
    env.create_ns("open", &[("team", "a")]).await;
    env.create_team_sc("base", "a", vec![cm_item("c", json!({}))])
        .await;
    // RBAC that denies mirra writes into `locked`, as the API server
    // answers it: 403 Forbidden to every patch there.
    refuse_in(&env, "patch", "configmaps", "locked").await;
    let ctl = env.start(Settings::for_tests(&[OPS]));
    wait_for("open synced", || async {
        env.cm("open", "c").await.is_some()
    })
    .await;
    wait_for("errored", || async {
        env.condition("base", "Degraded")
            .await
            .is_some_and(|c| c.0 == "True" && c.2.contains("locked") && c.2.contains("Forbidden"))
    })
    .await;
    wait_for("event", || async {
        env.events("base")
            .await
            .iter()
            .any(|(r, _)| r == "ItemsFailed")
    })
    .await;
    assert!(env.cm("locked", "c").await.is_none());
    assert_eq!(env.status("base").await["failedItemCount"], 1);
    assert_eq!(env.status("base").await["synchronizedItemCount"], 1);
    ctl.stop().await;
}

#[tokio::test]
async fn a_kind_mirra_may_not_list_is_errored_while_the_rest_syncs_until_granted() {
    let env = Env::new().await;
    env.create_ns("u1", &[("team", "a")]).await;
    env.create_ns("u2", &[("team", "a")]).await;
    // A copy of `base` that `base` no longer wants: pruned once Secrets can
    // be read, and not one moment before.
    marked_secret(&env, "u1", "stale", &format!("{OPS}/base"), None).await;
    // The marked copy's own apply is not mirra's traffic.
    env.sb.reset_stats();
    env.create_team_sc("base", "a", vec![cm_item("c", json!({})), secret_item("s")])
        .await;
    // RBAC without Secrets, as the API server answers it.
    for verb in ["list", "watch"] {
        refuse(&env, verb, "secrets").await;
    }
    let ctl = env.start(Settings::for_tests(&[OPS]));
    // Readiness does not wait for the refused kind.
    ctl.wait_ready().await;
    wait_for("ConfigMaps synced", || async {
        env.cm("u1", "c").await.is_some() && env.cm("u2", "c").await.is_some()
    })
    .await;
    wait_for("errored", || async {
        env.condition("base", "Degraded").await.is_some_and(|c| {
            c.0 == "True" && c.2.contains("u1 Secret/s") && c.2.contains("u2 Secret/s")
        })
    })
    .await;
    let (_, reason, message) = env.condition("base", "Degraded").await.unwrap();
    assert_eq!(reason, "ItemsFailed");
    assert!(
        message.contains("mirra may not list secrets (v1 Secret)")
            && message.contains("cannot list resource \"secrets\""),
        "{message}"
    );
    wait_for("event", || async {
        env.events_full("base")
            .await
            .iter()
            .any(|(_, r, _, m)| r == "ItemsFailed" && m.contains("secrets"))
    })
    .await;
    let status = env.status("base").await;
    assert_eq!(status["failedItemCount"], 2, "{status}");
    assert_eq!(status["synchronizedItemCount"], 2, "{status}");
    // Retried meanwhile, never written: no apply, and no prune of a kind
    // whose copies mirra cannot see.
    wait_for("list retried", || async {
        env.sb.stats().get("list secrets") >= 3
    })
    .await;
    assert_no_secret_writes(&env);
    assert_eq!(secret_names(&env, "u1").await, vec!["stale".to_string()]);

    // The permission is granted: picked up without a restart.
    env.sb.clear_faults().await;
    let granted = env.sb.stats();
    wait_for("secrets synced and stale pruned", || async {
        secret_names(&env, "u1").await == vec!["s".to_string()]
            && secret_names(&env, "u2").await == vec!["s".to_string()]
    })
    .await;
    env.wait_condition("base", "Degraded", "False").await;
    let stats = env.settle().await.since(&granted);
    assert_eq!(stats.get("patch secrets"), 2, "{:?}", stats.requests);
    assert_eq!(stats.get("delete secrets"), 1, "{:?}", stats.requests);
    assert_eq!(env.status("base").await["synchronizedItemCount"], 4);
    assert_eq!(env.status("base").await["failedItemCount"], 0);
    ctl.stop().await;
}

#[tokio::test]
async fn a_kind_mirra_may_list_but_not_watch_is_errored_until_the_verification_pass_finds_it_granted()
 {
    let env = Env::new().await;
    env.create_ns("w", &[("team", "a")]).await;
    marked_secret(&env, "w", "stale", &format!("{OPS}/base"), None).await;
    // The marked copy's own apply is not mirra's traffic.
    env.sb.reset_stats();
    env.create_team_sc("base", "a", vec![cm_item("c", json!({})), secret_item("s")])
        .await;
    // RBAC with list but without watch on Secrets.
    refuse(&env, "watch", "secrets").await;
    let mut settings = Settings::for_tests(&[OPS]);
    // A granted watch brings no event; the pass restarts refused watches.
    settings.verify_interval = Some(std::time::Duration::from_millis(300));
    let ctl = env.start(settings);
    ctl.wait_ready().await;
    wait_for("errored", || async {
        env.condition("base", "Degraded")
            .await
            .is_some_and(|c| c.0 == "True" && c.2.contains("w Secret/s"))
    })
    .await;
    let (_, _, message) = env.condition("base", "Degraded").await.unwrap();
    assert!(
        message.contains("mirra may not watch secrets (v1 Secret)"),
        "{message}"
    );
    assert!(env.cm("w", "c").await.is_some());
    // A listed cache that cannot follow changes is not trusted: no apply,
    // no prune, though the list showed `stale`.
    wait_for("watch retried", || async {
        env.sb.stats().get("watch secrets") >= 3
    })
    .await;
    assert_no_secret_writes(&env);
    assert_eq!(secret_names(&env, "w").await, vec!["stale".to_string()]);

    env.sb.clear_faults().await;
    let granted = env.sb.stats();
    wait_for("secrets synced and stale pruned", || async {
        secret_names(&env, "w").await == vec!["s".to_string()]
    })
    .await;
    env.wait_condition("base", "Degraded", "False").await;
    let stats = env.sb.stats().since(&granted);
    assert_eq!(stats.get("patch secrets"), 1, "{:?}", stats.requests);
    assert_eq!(stats.get("delete secrets"), 1, "{:?}", stats.requests);
    ctl.stop().await;
}

#[tokio::test]
async fn an_item_with_a_field_its_kind_does_not_have_is_errored_and_the_rest_syncs() {
    let env = Env::new().await;
    env.create_ns("f", &[("team", "a")]).await;
    // `spec` is no field of a ConfigMap: the API server refuses the apply
    // (500, "field not declared in schema"), whatever mirra retries.
    env.create_team_sc(
        "typo",
        "a",
        vec![
            cm_item("good", json!({"k": "v"})),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bad"},
                       "data": {"k": "v"}, "spec": {"replicas": 1}}),
        ],
    )
    .await;
    let ctl = env.start(Settings::for_tests(&[OPS]));
    wait_for("errored naming the field", || async {
        env.condition("typo", "Degraded").await.is_some_and(|c| {
            c.0 == "True"
                && c.2.contains("f ConfigMap/bad")
                && c.2.contains(".spec: field not declared in schema")
        })
    })
    .await;
    assert!(env.cm("f", "good").await.is_some());
    assert!(env.cm("f", "bad").await.is_none());
    let status = env.status("typo").await;
    assert_eq!(status["synchronizedItemCount"], 1, "{status}");
    assert_eq!(status["failedItemCount"], 1, "{status}");
    wait_for("event", || async {
        env.events_full("typo")
            .await
            .iter()
            .any(|(_, _, _, m)| m.contains("field not declared in schema"))
    })
    .await;
    // Retried on the long backoff of permanent failures (100 ms doubling
    // to 1 s in the test settings), not the fast one of transient errors.
    assert_eq!(ctl.metric(TRANSIENT), 0.0);
    ctl.stop().await;
}

#[tokio::test]
async fn errored_clears_once_a_forbidden_write_is_allowed_again() {
    let env = Env::new().await;
    env.create_ns("locked", &[("team", "a")]).await;
    env.create_team_sc("base", "a", vec![cm_item("c", json!({}))])
        .await;
    refuse_in(&env, "patch", "configmaps", "locked").await;
    // Verification passes off (the test settings): only the retry of the
    // permanent failure can notice the granted permission, since RBAC
    // changes cause no event mirra sees.
    let ctl = env.start(Settings::for_tests(&[OPS]));
    wait_for("errored", || async {
        env.condition("base", "Degraded")
            .await
            .is_some_and(|c| c.0 == "True" && c.2.contains("Forbidden"))
    })
    .await;
    // Retried on its backoff while forbidden.
    let before = env.sb.stats().get("patch configmaps");
    wait_for("retried", || async {
        env.sb.stats().get("patch configmaps") >= before + 2
    })
    .await;
    env.sb.clear_faults().await;
    wait_for("written", || async {
        env.cm("locked", "c").await.is_some()
    })
    .await;
    wait_for("errored cleared", || async {
        env.condition("base", "Degraded")
            .await
            .is_some_and(|c| c.0 == "False" && c.1 == "NoItemFailed")
    })
    .await;
    assert_eq!(env.condition("base", "Ready").await.unwrap().0, "True");
    // And once in step the retries stop.
    env.settle().await;
    env.sb.reset_stats();
    let stats = env.settle().await;
    assert_eq!(stats.writes(), 0, "{:?}", stats.requests);
    ctl.stop().await;
}

#[tokio::test]
async fn no_delete_before_the_caches_hold_their_initial_lists() {
    let env = Env::new().await;
    env.create_ns("s1", &[("team", "a")]).await;
    env.create_ns("s2", &[("team", "a")]).await;
    env.create_team_sc(
        "base",
        "a",
        vec![cm_item("a", json!({})), cm_item("b", json!({}))],
    )
    .await;
    let ctl = env.start(Settings::for_tests(&[OPS]));
    wait_for("copies", || async {
        env.cm("s1", "b").await.is_some() && env.cm("s2", "b").await.is_some()
    })
    .await;
    env.settle().await;
    ctl.stop().await;
    let uid = |ns: &'static str| {
        let env = &env;
        async move { env.cm(ns, "a").await.unwrap().metadata.uid.unwrap() }
    };
    let uids = (uid("s1").await, uid("s2").await);

    // While mirra is down, item b leaves the spec.
    env.patch_sc_spec("base", json!({"syncItems": [cm_item("a", json!({}))]}))
        .await;
    // The next start lists slowly: SyncConfigs (planning without them would
    // prune every copy) and the copies themselves (planning without them
    // would re-apply every copy).
    for resource in ["syncconfigs.sync.appuio.ch", "configmaps"] {
        env.sb
            .inject(FaultRule {
                verb: Some("list".into()),
                resource: Some(resource.into()),
                latency_ms: Some(800),
                count: Some(1),
                ..Default::default()
            })
            .await
            .unwrap();
    }
    env.sb.reset_stats();
    let ctl = env.start(Settings::for_tests(&[OPS]));
    wait_for("b pruned", || async {
        env.cm("s1", "b").await.is_none() && env.cm("s2", "b").await.is_none()
    })
    .await;
    let stats = env.settle().await;
    // Exactly the two unwanted copies; the wanted ones untouched.
    assert_eq!(stats.get("delete configmaps"), 2, "{:?}", stats.requests);
    assert_eq!(stats.get("patch configmaps"), 0, "{:?}", stats.requests);
    assert_eq!((uid("s1").await, uid("s2").await), uids);
    assert_eq!(env.status("base").await["synchronizedItemCount"], 2);
    ctl.stop().await;
}

#[tokio::test]
async fn converges_through_injected_errors_dropped_watches_and_410() {
    // No periodic bookmarks: each watch's resourceVersion is that of the
    // last event it saw, so the compaction below sends every watch to 410.
    let env = Env::without_bookmarks().await;
    for i in 0..4 {
        env.create_ns(&format!("n{i}"), &[("team", "a")]).await;
    }
    // An object mirra must never delete.
    env.create_cm("n0", json!({"metadata": {"name": "foreign"}}))
        .await;
    env.create_team_sc("base", "a", vec![cm_item("c", json!({"v": "1"}))])
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
    assert_eq!(ctl.metric(TRANSIENT), 0.0);
    assert_eq!(ctl.metric(THROTTLED), 0.0);

    // A write no mirra watch sees moves the revision past every watch's
    // last event; after the compaction each one resumes into 410 Gone.
    secrets(&env, "default")
        .create(
            &Default::default(),
            &serde_json::from_value(json!({"metadata": {"name": "bump"}})).unwrap(),
        )
        .await
        .unwrap();
    env.sb.compact().await;
    let before = env.sb.stats();
    env.sb.close_watches();

    // One kind of failure per namespace, so that each rule surely fires
    // (a request consumes every rule it matches).
    for (ns, status) in [("n0", 500), ("n1", 409), ("n2", 429)] {
        env.sb
            .inject(FaultRule {
                verb: Some("patch".into()),
                resource: Some("configmaps".into()),
                namespace: Some(ns.into()),
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
    // Changes while writes fail and watches relist or drop: a new
    // namespace, an item edit, a relabel out, another namespace.
    env.create_ns("n4", &[("team", "a")]).await;
    env.patch_sc_spec(
        "base",
        json!({"syncItems": [cm_item("c", json!({"v": "2"}))]}),
    )
    .await;
    env.sb.close_watches();
    env.label_ns("n3", json!({"team": "gone"})).await;
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
    let stats = env.settle().await.since(&before);
    // Every injected answer was returned and seen: 3 x 500 and 3 x 409 on
    // patches and 2 x 500 on the delete reached the controller (transient).
    // The 3 x 429 did not: kube's client retries them itself, honouring
    // Retry-After; the sandbox's count of 4 patches in n2 shows they were
    // answered.
    assert_eq!(ctl.metric(TRANSIENT), 8.0);
    assert_eq!(ctl.metric(THROTTLED), 0.0);
    let patches = |ns: &str| {
        stats
            .namespaces
            .get(ns)
            .and_then(|m| m.get("patch configmaps"))
            .copied()
            .unwrap_or(0)
    };
    for ns in ["n0", "n1", "n2"] {
        assert_eq!(patches(ns), 4, "{ns}: 3 refused, 1 accepted");
    }
    // A new namespace gets v2 at once, or v1 and then v2 when its watch
    // event arrives before the SyncConfig's edit (separate watches).
    for ns in ["n4", "n5"] {
        assert!((1..=2).contains(&patches(ns)), "{ns}: {}", patches(ns));
    }
    assert_eq!(stats.get("delete configmaps"), 3, "{:?}", stats.requests);
    // The 410 made each watch relist, exactly once.
    for list in [
        "list namespaces",
        "list syncconfigs.sync.appuio.ch",
        "list configmaps",
    ] {
        assert_eq!(stats.get(list), 1, "{list}: {:?}", stats.requests);
    }

    // The end state, exactly.
    let mut want: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for i in 0..6 {
        let ns = format!("n{i}");
        let mut names = env.cm_names(&ns).await;
        names.sort();
        want.insert(ns, names);
    }
    let expected: BTreeMap<String, Vec<String>> = [
        ("n0", vec!["c", "foreign"]),
        ("n1", vec!["c"]),
        ("n2", vec!["c"]),
        ("n3", vec![]),
        ("n4", vec!["c"]),
        ("n5", vec!["c"]),
    ]
    .into_iter()
    .map(|(ns, v)| (ns.to_string(), v.into_iter().map(String::from).collect()))
    .collect();
    assert_eq!(want, expected);
    let status = env.status("base").await;
    assert_eq!(status["synchronizedItemCount"], 5, "{status}");
    assert_eq!(status["failedItemCount"], 0, "{status}");
    assert_eq!(env.condition("base", "Degraded").await.unwrap().0, "False");
    // In step afterwards: nothing more to write.
    env.sb.reset_stats();
    let stats = env.settle().await;
    assert_eq!(stats.writes(), 0, "{:?}", stats.requests);
    ctl.stop().await;
}

#[tokio::test]
async fn a_write_failing_for_good_holds_back_no_status() {
    let env = Env::new().await;
    env.create_ns("locked", &[("team", "a")]).await;
    env.create_ns("other", &[("team", "b")]).await;
    env.create_team_sc("base", "a", vec![cm_item("c", json!({}))])
        .await;
    refuse_in(&env, "patch", "configmaps", "locked").await;
    let mut settings = Settings::for_tests(&[OPS]);
    // `locked` retries its 403 only after an hour, so it stays in the
    // queue for the whole test; and a status waits for the queue at most
    // an hour. A status written below therefore did not wait for either.
    settings.permanent_retry_base = Duration::from_secs(3600);
    settings.permanent_retry_cap = Duration::from_secs(3600);
    settings.status_max_delay = Duration::from_secs(3600);
    let ctl = env.start(settings);
    wait_for("base reports its failure", || async {
        env.condition("base", "Degraded")
            .await
            .is_some_and(|c| c.0 == "True" && c.2.contains("locked"))
    })
    .await;
    env.create_team_sc("later", "b", vec![cm_item("d", json!({}))])
        .await;
    env.wait_condition("later", "Ready", "True").await;
    assert!(env.cm("locked", "c").await.is_none());
    ctl.stop().await;
}
