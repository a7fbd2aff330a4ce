//! Integration tests against kube-sandbox: leader election on a real Lease
//! API and the rate-limit layer inside kube's real client stack.
//!
//! Waiting uses polling with a generous deadline; nothing asserts how long
//! anything took.

// Test fixtures: a failing setup step should abort the test loudly, and the
// helper functions here are not `#[test]` items the clippy config exempts.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ListParams};
use mirra_runtime::leader::{LeaderConfig, LeaderElector};
use mirra_runtime::ratelimit::{RateLimitConfig, RateLimitLayer, TokenBucket};
use mirra_runtime::{FenceError, LeaderMetrics, Readiness, WriteFence};
use mirra_testkit::wait_for;
use prometheus_client::registry::Registry;
use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;

async fn sandbox() -> (kube_sandbox::Sandbox, kube::Client) {
    let sandbox = kube_sandbox::Sandbox::start(kube_sandbox::Config::default())
        .await
        .unwrap();
    let client = kube::Client::try_from(kube::Config::new(sandbox.url().parse().unwrap())).unwrap();
    (sandbox, client)
}

fn config(identity: &str) -> LeaderConfig {
    LeaderConfig {
        // Short, so takeover after a crash happens quickly in a test.
        lease_duration: Duration::from_secs(2),
        renew: Duration::from_millis(200),
        ..LeaderConfig::new("default", "mirra-test", identity)
    }
}

struct Running {
    leading: watch::Receiver<bool>,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

fn start(client: &kube::Client, identity: &str) -> Running {
    let elector = LeaderElector::new(client.clone(), config(identity)).unwrap();
    let leading = elector.subscribe();
    let (stop, rx) = oneshot::channel::<()>();
    let task = tokio::spawn(elector.run(async move {
        let _ = rx.await;
    }));
    Running {
        leading,
        stop: Some(stop),
        task,
    }
}

async fn holder(client: &kube::Client) -> Option<String> {
    let lease: Lease = Api::namespaced(client.clone(), "default")
        .get("mirra-test")
        .await
        .unwrap();
    lease.spec.and_then(|s| s.holder_identity)
}

async fn transitions(client: &kube::Client) -> i32 {
    let lease: Lease = Api::namespaced(client.clone(), "default")
        .get("mirra-test")
        .await
        .unwrap();
    lease.spec.and_then(|s| s.lease_transitions).unwrap_or(0)
}

/// Samples both flags until `rounds` samples were taken; both must never be
/// true at once.
async fn assert_never_both(a: &watch::Receiver<bool>, b: &watch::Receiver<bool>, rounds: u32) {
    for _ in 0..rounds {
        assert!(!(*a.borrow() && *b.borrow()), "two leaders at once");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Every Lease request answers 500, which kube's client does not retry:
/// each renewal fails.
async fn fail_lease_writes(sandbox: &kube_sandbox::Sandbox) {
    sandbox
        .inject(kube_sandbox::FaultRule {
            resource: Some("leases.coordination.k8s.io".into()),
            status: Some(500),
            ..Default::default()
        })
        .await
        .unwrap();
}

#[tokio::test]
async fn exactly_one_leads_and_the_other_takes_over_on_release() {
    let (_sandbox, client) = sandbox().await;
    let a = start(&client, "replica-a");
    let b = start(&client, "replica-b");

    wait_for("someone leads", || async {
        *a.leading.borrow() || *b.leading.borrow()
    })
    .await;
    // Several renew periods: the follower keeps following.
    assert_never_both(&a.leading, &b.leading, 100).await;
    assert!(
        *a.leading.borrow() ^ *b.leading.borrow(),
        "exactly one leader"
    );

    let (mut leader, follower, follower_id) = if *a.leading.borrow() {
        (a, b, "replica-b")
    } else {
        (b, a, "replica-a")
    };
    assert_ne!(holder(&client).await.as_deref(), Some(follower_id));

    // Clean stop: the leader publishes false, releases, and the follower
    // takes over at its next attempt.
    leader.stop.take().unwrap().send(()).unwrap();
    (&mut leader.task).await.unwrap();
    assert!(!*leader.leading.borrow(), "a stopped elector does not lead");
    wait_for("follower takes over", || async {
        *follower.leading.borrow()
    })
    .await;
    assert_eq!(holder(&client).await.as_deref(), Some(follower_id));
    assert_eq!(transitions(&client).await, 1);
    follower.task.abort();
}

#[tokio::test]
async fn crashed_leader_is_replaced_after_its_lease_expires() {
    let (_sandbox, client) = sandbox().await;
    let a = start(&client, "replica-a");
    wait_for("a leads", || async { *a.leading.borrow() }).await;
    let b = start(&client, "replica-b");
    assert_never_both(&a.leading, &b.leading, 20).await;
    assert!(!*b.leading.borrow(), "b must not take a fresh lease");

    // No release: the lease keeps naming a, and only expiry frees it.
    a.task.abort();
    wait_for("b takes over the expired lease", || async {
        *b.leading.borrow()
    })
    .await;
    assert_eq!(holder(&client).await.as_deref(), Some("replica-b"));
    b.task.abort();
}

#[tokio::test]
async fn leader_steps_down_when_renewals_fail_and_returns_after() {
    let (sandbox, client) = sandbox().await;
    let mut a = start(&client, "replica-a");
    wait_for("a leads", || async { *a.leading.borrow() }).await;

    // 500 is not retried by kube's client, so every attempt fails.
    fail_lease_writes(&sandbox).await;
    wait_for("a steps down", || async { !*a.leading.borrow() }).await;

    sandbox.clear_faults().await;
    wait_for("a leads again", || async { *a.leading.borrow() }).await;
    assert_eq!(holder(&client).await.as_deref(), Some("replica-a"));
    a.stop.take().unwrap().send(()).unwrap();
    a.task.await.unwrap();
    assert_eq!(holder(&client).await, None, "released on clean stop");
}

fn encode(registry: &Registry) -> String {
    let mut out = String::new();
    prometheus_client::encoding::text::encode(&mut out, registry).unwrap();
    out
}

/// The shortest timings the elector accepts, so that three lease durations
/// pass quickly.
fn fast_config(namespace: &str, identity: &str) -> LeaderConfig {
    LeaderConfig {
        lease_duration: Duration::from_secs(1),
        renew: Duration::from_millis(100),
        ..LeaderConfig::new(namespace, "mirra-test", identity)
    }
}

#[tokio::test]
async fn a_refused_lease_is_named_once_counted_and_fails_readiness_until_it_is_granted() {
    let (sandbox, client) = sandbox().await;
    let (logs, _guard) = mirra_testkit::capture_logs(tracing::Level::INFO);
    let mut registry = Registry::default();
    let metrics = LeaderMetrics::register(&mut registry);
    let readiness = Readiness::new();
    let lease_ok = readiness.register_condition("leader-election lease", true);
    // RBAC without any verb on leases in this namespace.
    sandbox
        .inject(kube_sandbox::FaultRule {
            resource: Some("leases.coordination.k8s.io".into()),
            namespace: Some("default".into()),
            status: Some(403),
            ..Default::default()
        })
        .await
        .unwrap();
    let elector = LeaderElector::new(client.clone(), fast_config("default", "replica-a"))
        .unwrap()
        .with_metrics(metrics)
        .with_readiness(lease_ok.clone());
    let leading = elector.subscribe();
    let (stop, rx) = oneshot::channel::<()>();
    let task = tokio::spawn(elector.run(async move {
        let _ = rx.await;
    }));

    wait_for("readiness fails", || async { !readiness.is_ready() }).await;
    assert_eq!(
        readiness.not_ready(),
        vec!["leader-election lease".to_owned()]
    );
    let attempts = sandbox.stats().get("get leases.coordination.k8s.io");
    assert!(
        attempts >= 10,
        "three lease durations of retries: {attempts}"
    );
    let text = logs.text();
    let warnings = text.matches("leader election attempt failed").count();
    assert_eq!(warnings, 1, "one warning per failure streak:\n{text}");
    assert!(
        text.contains("may not get leases (coordination.k8s.io) in namespace \\\"default\\\"")
            || text.contains("may not get leases (coordination.k8s.io) in namespace \"default\""),
        "{text}"
    );
    let exported = encode(&registry);
    assert!(exported.contains("mirra_leader 0\n"), "{exported}");
    let counted: u64 = exported
        .lines()
        .find_map(|l| l.strip_prefix(r#"mirra_leader_election_errors_total{class="forbidden"} "#))
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(counted, attempts, "every refused request is counted");

    // Granted (the fault removed): the next attempt leads, readiness
    // recovers, and the recovery is logged.
    sandbox.clear_faults().await;
    wait_for("leads", || async { *leading.borrow() }).await;
    wait_for("ready again", || async { readiness.is_ready() }).await;
    assert!(encode(&registry).contains("mirra_leader 1\n"));
    assert!(logs.text().contains("reachable again"));
    stop.send(()).unwrap();
    task.await.unwrap();
    assert!(encode(&registry).contains("mirra_leader 0\n"));
}

#[tokio::test]
async fn a_missing_lease_namespace_is_named() {
    let (sandbox, client) = sandbox().await;
    let (logs, _guard) = mirra_testkit::capture_logs(tracing::Level::INFO);
    let elector =
        LeaderElector::new(client.clone(), fast_config("no-such-ns", "replica-a")).unwrap();
    let (stop, rx) = oneshot::channel::<()>();
    let task = tokio::spawn(elector.run(async move {
        let _ = rx.await;
    }));
    wait_for("several create attempts", || async {
        sandbox.stats().get("create leases.coordination.k8s.io") >= 5
    })
    .await;
    stop.send(()).unwrap();
    task.await.unwrap();
    let text = logs.text();
    assert_eq!(
        text.matches("leader election attempt failed").count(),
        1,
        "{text}"
    );
    assert!(
        text.contains("no-such-ns") && text.contains("does not exist"),
        "{text}"
    );
    assert!(
        text.contains("class=\"not_found\"") || text.contains("class=not_found"),
        "{text}"
    );
}

#[tokio::test]
async fn the_fence_opens_only_with_the_write_timeout_left_of_the_lease() {
    let (sandbox, client) = sandbox().await;
    let elector = LeaderElector::new(client.clone(), config("replica-a")).unwrap();
    let lease = elector.deadline();
    // Lease of 2 s renewed every 200 ms: at most ~2 s are ever left.
    let short = WriteFence::new(lease.clone(), Duration::from_millis(500));
    let long = WriteFence::new(lease.clone(), Duration::from_secs(3));
    assert_eq!(short.check(), Err(FenceError::NotLeading), "before leading");
    let leading = elector.subscribe();
    let (stop, rx) = oneshot::channel::<()>();
    let task = tokio::spawn(elector.run(async move {
        let _ = rx.await;
    }));
    wait_for("leads", || async { *leading.borrow() }).await;
    assert_eq!(short.check(), Ok(()));
    assert_eq!(short.send(async { 1 }).await, Ok(1));
    assert!(
        matches!(long.check(), Err(FenceError::TooLittleLeft { .. })),
        "a write that could outlive the lease is refused"
    );

    // Renewals refused: the deadline stops moving, and the fence closes
    // for a 500 ms write no later than 500 ms before the step-down.
    fail_lease_writes(&sandbox).await;
    wait_for("fence closes", || async { short.check().is_err() }).await;
    let left = lease.remaining();
    assert!(
        left.is_none() || left < Some(Duration::from_millis(500)),
        "{left:?}"
    );
    wait_for("steps down", || async { !*leading.borrow() }).await;
    assert_eq!(short.check(), Err(FenceError::NotLeading));
    sandbox.clear_faults().await;
    wait_for("leads again", || async { *leading.borrow() }).await;
    wait_for("fence opens again", || async { short.check().is_ok() }).await;
    stop.send(()).unwrap();
    task.await.unwrap();
    assert_eq!(short.check(), Err(FenceError::NotLeading), "after release");
}

#[tokio::test]
async fn on_shutdown_the_controller_finishes_before_the_lease_is_released() {
    let (_sandbox, client) = sandbox().await;
    let elector = LeaderElector::new(client.clone(), config("replica-a")).unwrap();
    let readiness = Readiness::new();
    let stop = CancellationToken::new();
    let (started_tx, started_rx) = oneshot::channel::<()>();
    let mut started_tx = Some(started_tx);
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let runner = {
        let (client, seen, stop, readiness) = (
            client.clone(),
            seen.clone(),
            stop.clone(),
            readiness.clone(),
        );
        tokio::spawn(async move {
            mirra_runtime::run_while_leading(elector, &readiness, stop, |token, lease| {
                let started = started_tx.take();
                let (client, seen) = (client.clone(), seen.clone());
                async move {
                    if let Some(s) = started {
                        let _ = s.send(());
                    }
                    token.cancelled().await;
                    // A write still in flight when the stop came: it takes
                    // a while, and must still run under the held Lease.
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    let fence = WriteFence::new(lease, Duration::from_millis(100));
                    let fenced = fence.check();
                    let holder = holder(&client).await;
                    seen.lock().unwrap().push((fenced, holder));
                    Ok::<(), std::convert::Infallible>(())
                }
            })
            .await
        })
    };
    started_rx.await.unwrap();
    assert!(readiness.is_ready());
    stop.cancel();
    runner.await.unwrap().unwrap();
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        vec![(Ok(()), Some("replica-a".to_owned()))],
        "the last write ran while the lease was held"
    );
    assert_eq!(holder(&client).await, None, "released after the controller");
}

#[tokio::test]
async fn rate_limit_layer_sits_in_kubes_client_stack() {
    let (sandbox, _) = sandbox().await;
    // A burst of 5 and a refill so slow that no token comes back during the
    // test: the bucket's state then counts exactly the requests sent.
    let bucket = Arc::new(
        TokenBucket::new(RateLimitConfig {
            qps: 0.001,
            burst: 5,
        })
        .unwrap(),
    );
    let layer = RateLimitLayer::with_bucket(bucket.clone());
    let config = kube::Config::new(sandbox.url().parse().unwrap());
    let client = kube::client::ClientBuilder::try_from(config)
        .unwrap()
        .with_layer(&layer)
        .build();
    let namespaces: Api<Namespace> = Api::all(client);
    for _ in 0..4 {
        namespaces.list(&ListParams::default()).await.unwrap();
    }
    assert_eq!(sandbox.stats().get("list namespaces"), 4);
    // Four tokens spent by the client, the fifth is ours, the sixth waits.
    assert_eq!(bucket.reserve(), Duration::ZERO);
    assert!(
        bucket.reserve() > Duration::ZERO,
        "the client's requests did not draw tokens"
    );
}

#[tokio::test]
async fn rate_limited_client_builds_and_works() {
    let (sandbox, _) = sandbox().await;
    let config = kube::Config::new(sandbox.url().parse().unwrap());
    let client =
        mirra_runtime::ratelimit::rate_limited_client(config, RateLimitConfig::default()).unwrap();
    let namespaces: Api<Namespace> = Api::all(client);
    let list = namespaces.list(&ListParams::default()).await.unwrap();
    assert!(
        list.items
            .iter()
            .any(|n| n.metadata.name.as_deref() == Some("default"))
    );
    let bad = mirra_runtime::ratelimit::rate_limited_client(
        kube::Config::new(sandbox.url().parse().unwrap()),
        RateLimitConfig { qps: 0.0, burst: 1 },
    );
    assert!(matches!(
        bad,
        Err(mirra_runtime::RateLimitError::InvalidQps(_))
    ));
}

/// One Event per (object, reason): created once, counted up after, and
/// created again (from 1) when it expired; another reason is another Event.
#[tokio::test]
async fn warning_events_are_counted_per_object_and_reason() {
    use k8s_openapi::api::core::v1::{Event, ObjectReference};
    use kube::api::DeleteParams;
    use mirra_runtime::events::EventRecorder;
    use mirra_runtime::leader::LeaseDeadline;

    let (_sandbox, client) = sandbox().await;
    let fence = WriteFence::new(LeaseDeadline::always(), Duration::from_secs(5));
    let recorder = EventRecorder::new(client.clone(), fence, "mirra-test");
    let svc = ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Service".into()),
        namespace: Some("default".into()),
        name: Some("web".into()),
        uid: Some("uid-web".into()),
        ..ObjectReference::default()
    };
    let events: Api<Event> = Api::namespaced(client.clone(), "default");
    let list = || async {
        let mut items = events.list(&ListParams::default()).await.unwrap().items;
        items.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        items
    };
    for _ in 0..3 {
        recorder.warn(&svc, "BadThing", "it is bad").await.unwrap();
    }
    let got = list().await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].metadata.name.as_deref(), Some("web.badthing"));
    assert_eq!(got[0].count, Some(3));
    assert_eq!(got[0].type_.as_deref(), Some("Warning"));
    assert_eq!(got[0].involved_object.uid.as_deref(), Some("uid-web"));
    assert_eq!(
        got[0].source.as_ref().and_then(|s| s.component.as_deref()),
        Some("mirra-test")
    );

    recorder.warn(&svc, "OtherThing", "also bad").await.unwrap();
    assert_eq!(list().await.len(), 2);

    // Expired (or deleted): the next one starts a new Event from 1.
    events
        .delete("web.badthing", &DeleteParams::default())
        .await
        .unwrap();
    recorder.warn(&svc, "BadThing", "bad again").await.unwrap();
    let again = events.get("web.badthing").await.unwrap();
    assert_eq!(again.count, Some(1));
    assert_eq!(again.message.as_deref(), Some("bad again"));

    // A second process finds the first one's Event and counts it up.
    let fence = WriteFence::new(LeaseDeadline::always(), Duration::from_secs(5));
    let restarted = EventRecorder::new(client.clone(), fence, "mirra-test");
    restarted
        .warn(&svc, "OtherThing", "after a restart")
        .await
        .unwrap();
    let other = events.get("web.otherthing").await.unwrap();
    assert_eq!(other.count, Some(1));
    assert_eq!(other.message.as_deref(), Some("after a restart"));
}

/// A replica that does not lead records nothing.
#[tokio::test]
async fn a_fenced_recorder_writes_no_event() {
    use k8s_openapi::api::core::v1::{Event, ObjectReference};
    use mirra_runtime::events::{EventError, EventRecorder};

    let (_sandbox, client) = sandbox().await;
    let elector = LeaderElector::new(client.clone(), config("replica-a")).unwrap();
    let fence = WriteFence::new(elector.deadline(), Duration::from_millis(100));
    let recorder = EventRecorder::new(client.clone(), fence, "mirra-test");
    let svc = ObjectReference {
        kind: Some("Service".into()),
        namespace: Some("default".into()),
        name: Some("web".into()),
        ..ObjectReference::default()
    };
    let err = recorder.warn(&svc, "BadThing", "x").await.unwrap_err();
    assert!(
        matches!(err, EventError::Fenced(FenceError::NotLeading)),
        "{err}"
    );
    let events: Api<Event> = Api::namespaced(client, "default");
    assert!(
        events
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}
