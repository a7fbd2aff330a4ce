//! Fault injection through the library API and `/v1/sandbox/faults`.
//! Assertions are on statuses, counts and ordering, never on durations.

use crate::common;

use std::time::Duration;

use common::{Api, Resp, SOON};
use consul_sandbox::FaultRule;
use mirra_testkit::wait_for;
use serde_json::json;

/// Registers an instance of `web` on node `n`, without an ID.
async fn register_web_on_n(api: &Api) -> Resp {
    let body = json!({"Node": "n", "Address": "a", "Service": {"Service": "web"}});
    api.put("/v1/catalog/register", &body).await
}

#[tokio::test]
async fn error_for_the_next_n_requests_then_normal_service() {
    let api = Api::start().await;
    api.sb
        .faults()
        .add(FaultRule::error(503, "overloaded").times(2));
    for _ in 0..2 {
        let r = api.get("/v1/catalog/services").await;
        assert_eq!((r.status, r.text.as_str()), (503, "overloaded"));
    }
    assert_eq!(api.get("/v1/catalog/services").await.status, 200);
    let s = api.sb.stats();
    assert_eq!(s.faults_injected, 2);
    assert_eq!(
        s.requests_for("GET /v1/catalog/services"),
        3,
        "faulted requests are still counted"
    );
}

#[tokio::test]
async fn no_leader_on_writes_applies_nothing() {
    let api = Api::start().await;
    api.sb.faults().add(
        FaultRule::no_leader()
            .with_method("PUT")
            .with_path_prefix("/v1/catalog/")
            .times(1),
    );
    let r = register_web_on_n(&api).await;
    assert_eq!((r.status, r.text.as_str()), (500, "No cluster leader"));
    assert_eq!(api.sb.stats().raft_applies, 0);
    assert_eq!(
        api.get("/v1/catalog/service/web").await.json(),
        json!([]),
        "reads are not affected"
    );
    api.register("n", "web", "web", 1).await;
    assert_eq!(api.sb.stats().raft_applies, 1);
}

#[tokio::test]
async fn error_after_apply_loses_the_response_but_keeps_the_write() {
    let api = Api::start().await;
    api.sb.faults().add(
        FaultRule::error(500, "rpc error: EOF")
            .after_apply()
            .times(1),
    );
    let r = register_web_on_n(&api).await;
    assert_eq!(r.status, 500);
    assert_eq!(api.sb.stats().raft_applies, 1);
    assert_eq!(api.get("/v1/catalog/service/web").await.count(), 1);
}

#[tokio::test]
async fn fraction_of_requests_fails_reproducibly() {
    let api = Api::start().await;
    api.sb.faults().add(
        FaultRule::error(500, "flaky")
            .fraction(0.5)
            .with_path_prefix("/v1/status/"),
    );
    let mut failed = 0;
    for _ in 0..200 {
        if api.get("/v1/status/leader").await.status == 500 {
            failed += 1;
        }
    }
    assert!((50..150).contains(&failed), "{failed} of 200");
    assert_eq!(
        api.get("/v1/catalog/services").await.status,
        200,
        "other paths unaffected"
    );
    assert_eq!(api.sb.stats().faults_injected, failed);
}

#[tokio::test]
async fn latency_delays_only_matching_requests() {
    let api = Api::start().await;
    api.sb
        .faults()
        .add(FaultRule::latency(Duration::from_secs(3)).with_path_prefix("/v1/catalog/services"));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let slow = {
        let (http, url, tx) = (
            api.http.clone(),
            api.url("/v1/catalog/services"),
            tx.clone(),
        );
        tokio::spawn(async move {
            let r = http.get(url).send().await.unwrap();
            tx.send(("slow", r.status().as_u16())).unwrap();
        })
    };
    // Make sure the slow request is in flight before the fast one starts.
    wait_for("the slow request in flight", || async {
        api.sb.stats().requests_for("GET /v1/catalog/services") == 1
    })
    .await;
    let fast = api.get("/v1/status/leader").await;
    tx.send(("fast", fast.status)).unwrap();
    slow.await.unwrap();
    let first = rx.recv().await.unwrap();
    let second = rx.recv().await.unwrap();
    assert_eq!(first, ("fast", 200), "the undelayed request finished first");
    assert_eq!(second, ("slow", 200), "the delayed request still succeeded");
}

#[tokio::test]
async fn refused_connections_fail_then_recover() {
    let api = Api::start().await;
    // No pooling: every request needs a new connection.
    let fresh = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    api.sb
        .faults()
        .refuse_connections_for(Duration::from_secs(3600));
    let r = fresh.get(api.url("/v1/status/leader")).send().await;
    assert!(r.is_err(), "connection should be closed at once: {r:?}");
    assert!(api.sb.stats().connections_refused >= 1);
    api.sb.faults().clear();
    let r = fresh
        .get(api.url("/v1/status/leader"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);

    // A short refusal window ends by itself.
    api.sb
        .faults()
        .refuse_connections_for(Duration::from_millis(200));
    wait_for("a fresh connection answered", || async {
        matches!(fresh.get(api.url("/v1/status/leader")).send().await, Ok(r) if r.status() == 200)
    })
    .await;
    let _ = SOON;
}

#[tokio::test]
async fn faults_over_http_post_and_delete() {
    let api = Api::start().await;
    let r = api
        .send(api.http.post(api.url("/v1/sandbox/faults")).json(&json!({
            "kind": "error", "status": 429, "body": "rate limited", "method": "GET",
            "path_prefix": "/v1/catalog/services", "count": 1
        })))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r.json()["id"].as_u64().is_some());
    let r = api.get("/v1/catalog/services").await;
    assert_eq!((r.status, r.text.as_str()), (429, "rate limited"));
    assert_eq!(api.get("/v1/catalog/services").await.status, 200);

    api.send(
        api.http
            .post(api.url("/v1/sandbox/faults"))
            .json(&json!({"kind": "no_leader"})),
    )
    .await;
    assert_eq!(api.get("/v1/catalog/nodes").await.status, 500);
    // Control endpoints are never faulted.
    assert_eq!(api.get("/v1/sandbox/stats").await.status, 200);
    let r = api
        .send(api.http.delete(api.url("/v1/sandbox/faults")))
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(api.get("/v1/catalog/nodes").await.status, 200);

    let bad = api
        .send(
            api.http
                .post(api.url("/v1/sandbox/faults"))
                .body("{\"kind\":\"meteor\"}"),
        )
        .await;
    assert_eq!(bad.status, 400);
    assert!(bad.text.contains("unknown kind"), "{}", bad.text);

    let r = api
        .send(
            api.http
                .post(api.url("/v1/sandbox/faults"))
                .json(&json!({"kind": "refuse_connections", "duration_ms": 3600000})),
        )
        .await;
    assert_eq!(r.status, 200);
    let fresh = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    assert!(
        fresh
            .get(api.url("/v1/status/leader"))
            .send()
            .await
            .is_err()
    );
    api.sb.faults().clear();
    assert!(fresh.get(api.url("/v1/status/leader")).send().await.is_ok());
}

#[tokio::test]
async fn leaderless_cluster_refuses_writes_and_consistent_reads_until_a_leader_is_back() {
    let api = Api::start().await;
    api.register("n", "web-1", "web", 80).await;
    let applies = api.sb.stats().raft_applies;
    let index = api.get("/v1/catalog/service/web").await.index();

    api.sb.faults().set_leaderless(true);
    assert!(api.sb.faults().leaderless());
    let leader = api.get("/v1/status/leader").await;
    assert_eq!((leader.status, leader.json()), (200, json!("")));
    let refused = [
        api.put(
            "/v1/catalog/register",
            &json!({"Node": "n", "Address": "a", "Service": {"ID": "web-2", "Service": "web"}}),
        )
        .await,
        api.put(
            "/v1/catalog/deregister",
            &json!({"Node": "n", "ServiceID": "web-1"}),
        )
        .await,
        api.put(
            "/v1/txn",
            &json!([{"Service": {"Verb": "delete", "Node": "n", "Service": {"ID": "web-1"}}}]),
        )
        .await,
        api.get("/v1/catalog/service/web").await,
        api.get("/v1/catalog/node-services/n?consistent").await,
        api.get("/v1/health/node/n").await,
    ];
    for r in &refused {
        assert_eq!((r.status, r.text.as_str()), (500, "No cluster leader"));
    }
    // Stale reads are served by the local state, saying no leader is known.
    let stale = api.get("/v1/catalog/service/web?stale").await;
    assert_eq!(stale.status, 200);
    assert_eq!(stale.json().as_array().map(Vec::len), Some(1));
    assert_eq!(
        stale.header("X-Consul-KnownLeader").as_deref(),
        Some("false")
    );
    assert_eq!(stale.index(), index);
    // Endpoints that need no leader.
    assert_eq!(api.get("/v1/status/peers").await.status, 200);
    assert_eq!(api.get("/v1/agent/self").await.status, 200);
    assert_eq!(api.get("/v1/catalog/datacenters").await.status, 200);
    let s = api.sb.stats();
    assert_eq!(s.raft_applies, applies, "nothing applied without a leader");
    assert_eq!(s.faults_injected, refused.len() as u64);

    // The leader is back: the same requests are served again.
    let r = api
        .send(
            api.http
                .post(api.url("/v1/sandbox/faults"))
                .json(&json!({"kind": "leader_elected"})),
        )
        .await;
    assert_eq!((r.status, r.json()), (200, json!({"leaderless": false})));
    assert!(!api.sb.faults().leaderless());
    let leader = api.get("/v1/status/leader").await;
    assert_ne!(leader.json(), json!(""));
    let r = api.get("/v1/catalog/service/web").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("X-Consul-KnownLeader").as_deref(), Some("true"));
    assert_eq!(api.register("n", "web-2", "web", 80).await.status, 200);
    assert_eq!(api.sb.stats().raft_applies, applies + 1);

    // The control endpoint starts a period too, and clearing the faults ends it.
    let r = api
        .send(
            api.http
                .post(api.url("/v1/sandbox/faults"))
                .json(&json!({"kind": "leaderless"})),
        )
        .await;
    assert_eq!((r.status, r.json()), (200, json!({"leaderless": true})));
    assert_eq!(api.get("/v1/catalog/nodes").await.status, 500);
    assert_eq!(api.get("/v1/sandbox/stats").await.status, 200);
    api.send(api.http.delete(api.url("/v1/sandbox/faults")))
        .await;
    assert_eq!(api.get("/v1/catalog/nodes").await.status, 200);
}
