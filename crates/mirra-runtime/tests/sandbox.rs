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
use tokio::sync::{oneshot, watch};

/// Far beyond any timing in these tests, so a slow, shared build machine
/// cannot make them flaky.
const DEADLINE: Duration = Duration::from_secs(60);

async fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let end = tokio::time::Instant::now() + DEADLINE;
    while !cond() {
        assert!(
            tokio::time::Instant::now() < end,
            "timed out waiting for: {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

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

#[tokio::test]
async fn exactly_one_leads_and_the_other_takes_over_on_release() {
    let (_sandbox, client) = sandbox().await;
    let a = start(&client, "replica-a");
    let b = start(&client, "replica-b");

    wait_until("someone leads", || {
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
    wait_until("follower takes over", || *follower.leading.borrow()).await;
    assert_eq!(holder(&client).await.as_deref(), Some(follower_id));
    assert_eq!(transitions(&client).await, 1);
    follower.task.abort();
}

#[tokio::test]
async fn crashed_leader_is_replaced_after_its_lease_expires() {
    let (_sandbox, client) = sandbox().await;
    let a = start(&client, "replica-a");
    wait_until("a leads", || *a.leading.borrow()).await;
    let b = start(&client, "replica-b");
    assert_never_both(&a.leading, &b.leading, 20).await;
    assert!(!*b.leading.borrow(), "b must not take a fresh lease");

    // No release: the lease keeps naming a, and only expiry frees it.
    a.task.abort();
    wait_until("b takes over the expired lease", || *b.leading.borrow()).await;
    assert_eq!(holder(&client).await.as_deref(), Some("replica-b"));
    b.task.abort();
}

#[tokio::test]
async fn leader_steps_down_when_renewals_fail_and_returns_after() {
    let (sandbox, client) = sandbox().await;
    let mut a = start(&client, "replica-a");
    wait_until("a leads", || *a.leading.borrow()).await;

    // 500 is not retried by kube's client, so every attempt fails.
    sandbox
        .inject(kube_sandbox::FaultRule {
            resource: Some("leases.coordination.k8s.io".into()),
            status: Some(500),
            ..Default::default()
        })
        .await
        .unwrap();
    wait_until("a steps down", || !*a.leading.borrow()).await;

    sandbox.clear_faults().await;
    wait_until("a leads again", || *a.leading.borrow()).await;
    assert_eq!(holder(&client).await.as_deref(), Some("replica-a"));
    a.stop.take().unwrap().send(()).unwrap();
    a.task.await.unwrap();
    assert_eq!(holder(&client).await, None, "released on clean stop");
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
