//! Two replicas with leader election against one API server: a leader that
//! is paused after deciding a write, and whose lease lapses meanwhile,
//! sends nothing once a successor may be writing.
//!
//! The paused process is modelled in two parts: its elector stops (the
//! task is aborted, so it neither renews nor releases and its last
//! published deadline stays), and its writer is held right after the fence
//! check by the fence's test hook. Its controller keeps running and still
//! believes it leads.

// Test fixtures: a failing step should abort the test loudly.
#![allow(clippy::unwrap_used)]

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use common::*;
use mirra_mirror_controller::Settings;
use mirra_mirror_controller::mirra_runtime::leader::{LeaderConfig, LeaderElector};
use mirra_mirror_controller::mirra_runtime::{LeaderMetrics, Readiness, run_while_leading};
use mirra_mirror_controller::tokio_util::sync::CancellationToken;
use prometheus_client::registry::Registry;
use serde_json::json;

fn lease_config(identity: &str) -> LeaderConfig {
    LeaderConfig {
        lease_duration: Duration::from_secs(2),
        renew: Duration::from_millis(200),
        ..LeaderConfig::new(OPS, "mirra-mirror", identity)
    }
}

fn settings() -> Settings {
    let mut s = Settings::for_tests(&[OPS]);
    // Well below the 2 s lease, so that a renewed lease lets writes out.
    s.write_timeout = Duration::from_millis(500);
    s
}

fn encode(registry: &Registry) -> String {
    let mut out = String::new();
    prometheus_client::encoding::text::encode(&mut out, registry).unwrap();
    out
}

fn metric(registry: &Registry, prefix: &str) -> f64 {
    encode(registry)
        .lines()
        .filter(|l| l.starts_with(prefix))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Waits until the requests other than the electors' stop moving for
/// half a second. Counters only: the paused replica's fenced retries never
/// empty its queue, so no controller here reports idle.
async fn settle(env: &Env) {
    let count = || -> u64 {
        env.sb
            .stats()
            .requests
            .iter()
            .filter(|(k, _)| !k.contains("leases.coordination.k8s.io"))
            .map(|(_, v)| v)
            .sum()
    };
    mirra_testkit::settle_for("the replicas", 5, || Some(count())).await;
}

/// A client for the sandbox that counts the ConfigMap patches it sends,
/// so the test can tell A's requests from B's: the server counts both,
/// and under load a request of B's that timed out on B's side but reached
/// the server is counted there without being A's.
fn counting_client(sb: &kube_sandbox::Sandbox) -> (kube::Client, Arc<AtomicU64>) {
    let sent = Arc::new(AtomicU64::new(0));
    let counter = sent.clone();
    let layer = tower::util::MapRequestLayer::new(move |req: http::Request<kube::client::Body>| {
        if req.method() == http::Method::PATCH && req.uri().path().contains("/configmaps/") {
            counter.fetch_add(1, Ordering::SeqCst);
        }
        req
    });
    let config = kube::Config::new(sb.url().parse().unwrap());
    let client = kube::client::ClientBuilder::try_from(config)
        .unwrap()
        .with_layer(&layer)
        .build();
    (client, sent)
}

const APPLIES: &str = "mirra_writes_total{verb=\"apply\"";
const APPLY_KEY: &str = "patch configmaps";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_leader_sends_no_stale_write_after_a_successor_took_over() {
    let env = Env::new().await;
    env.create_ns("app-1", &[("team", "a")]).await;
    env.create_team_sc("shared", "a", vec![cm_item("cfg", json!({"v": "1"}))])
        .await;

    // Replica A: its own elector and controller, wired by hand so that the
    // test can stop the elector alone.
    let (a_client, a_sent) = counting_client(&env.sb);
    let mut a_registry = Registry::default();
    let a_leader_metrics = LeaderMetrics::register(&mut a_registry);
    let a_elector = LeaderElector::new(a_client.clone(), lease_config("replica-a"))
        .unwrap()
        .with_metrics(a_leader_metrics);
    let mut a_leading = a_elector.subscribe();
    let (hold, held) = tokio::sync::watch::channel(false);
    let a_lease = a_elector.deadline().with_write_hold(held);
    let a_elector_task = tokio::spawn(a_elector.run(std::future::pending()));
    a_leading.wait_for(|l| *l).await.unwrap();
    let a = start_with_client(
        a_client,
        Settings {
            lease: a_lease,
            ..settings()
        },
    );
    wait_for("A wrote v1", || async {
        env.cm_data("app-1", "cfg").await.map(|d| d["v"].clone()) == Some("1".into())
    })
    .await;
    settle(&env).await;

    // Replica B: the binary's wiring, campaigning meanwhile.
    let b_client = client_for(&env.sb);
    let b_elector = LeaderElector::new(b_client.clone(), lease_config("replica-b")).unwrap();
    let mut b_leading = b_elector.subscribe();
    let b_readiness = Readiness::new();
    let b_stop = CancellationToken::new();
    let mut b_registry = Registry::default();
    let b_metrics = mirra_mirror_controller::mirra_runtime::Metrics::register(&mut b_registry);
    let b_ready = b_readiness.register("mirror");
    let b_task = {
        let (stop, readiness) = (b_stop.clone(), b_readiness.clone());
        tokio::spawn(async move {
            run_while_leading(b_elector, &readiness, stop, |token, lease| {
                mirra_mirror_controller::run(
                    b_client.clone(),
                    Settings {
                        lease,
                        ..settings()
                    },
                    b_ready.clone(),
                    b_metrics.clone(),
                    token,
                )
            })
            .await
        })
    };

    // A decides to write v2, passes its fence and is paused before sending.
    hold.send_replace(true);
    let holders = hold.receiver_count();
    env.patch_sc_spec(
        "shared",
        spec_for_team("a", vec![cm_item("cfg", json!({"v": "2"}))]),
    )
    .await;
    wait_for("A holds a write after its fence check", || async {
        hold.receiver_count() > holders
    })
    .await;
    let a_applies_before = a.metric(APPLIES);
    let a_sent_before = a_sent.load(Ordering::SeqCst);
    let applies_before = env.sb.stats().get(APPLY_KEY);
    // Its elector stops too: no renewal, no release.
    a_elector_task.abort();
    assert!(*a_leading.borrow(), "A still believes it leads");

    // B takes over once the lease lapsed, and its fresh controller plans
    // every namespace at once: v2 is written without any new event.
    b_leading.wait_for(|l| *l).await.unwrap();
    wait_for("B wrote v2", || async {
        env.cm_data("app-1", "cfg").await.map(|d| d["v"].clone()) == Some("2".into())
    })
    .await;
    env.patch_sc_spec(
        "shared",
        spec_for_team("a", vec![cm_item("cfg", json!({"v": "3"}))]),
    )
    .await;
    wait_for("B wrote v3", || async {
        env.cm_data("app-1", "cfg").await.map(|d| d["v"].clone()) == Some("3".into())
    })
    .await;

    // A wakes up: its held write was cancelled at its timeout, and every
    // retry finds the fence closed.
    hold.send_replace(false);
    wait_for("A's retries are fenced", || async {
        metric(&a_registry, "mirra_fenced_writes_total") >= 2.0
    })
    .await;
    settle(&env).await;
    assert_eq!(
        env.cm_data("app-1", "cfg").await.unwrap()["v"],
        "3",
        "no stale v2 from A over B's v3"
    );
    assert_eq!(
        a.metric(APPLIES),
        a_applies_before,
        "A applied nothing more"
    );
    let b_applies = metric(&b_registry, APPLIES);
    assert_eq!(b_applies, 2.0, "B wrote v2 and v3");
    assert_eq!(
        a_sent.load(Ordering::SeqCst),
        a_sent_before,
        "A's client sent no ConfigMap patch once it was paused"
    );
    assert!(
        env.sb.stats().get(APPLY_KEY) >= applies_before + 2,
        "the server received B's two applies"
    );

    a.token.cancel();
    a.handle.await.unwrap().unwrap();
    b_stop.cancel();
    b_task.await.unwrap().unwrap();
}
