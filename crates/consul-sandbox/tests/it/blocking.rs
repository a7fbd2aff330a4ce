//! Blocking queries (`?index=&wait=`): they return when the watched index
//! passes the client's, or at the end of the wait with the same index.
//! Assertions are on indexes and counts, never on elapsed time.

use crate::common;

use common::{Api, woken};
use serde_json::json;

#[tokio::test]
async fn blocking_service_query_returns_with_a_new_index_after_a_write() {
    let api = Api::start().await;
    api.register("n1", "web-1", "web", 80).await;
    let first = api.get("/v1/catalog/service/web").await;
    let idx = first.index();

    let waiter = api.spawn_get(&format!("/v1/catalog/service/web?index={idx}&wait=5m"));
    api.wait_until_blocked(1).await;

    api.register("n1", "web-1", "web", 81).await;
    let resp = woken(waiter).await;
    let new_idx = resp.index();
    let body = resp.json();
    assert!(new_idx > idx, "{new_idx} > {idx}");
    assert_eq!(body[0]["ServicePort"], 81);
    assert_eq!(api.sb.stats().blocking_queries_open, 0);
    assert_eq!(api.sb.stats().blocking_queries_total, 1);
}

#[tokio::test]
async fn blocking_query_times_out_with_the_same_index_when_nothing_relevant_changes() {
    let api = Api::start().await;
    api.register("n1", "web-1", "web", 80).await;
    let idx = api.get("/v1/catalog/service/web").await.index();

    let waiter = api.spawn_get(&format!("/v1/catalog/service/web?index={idx}&wait=300ms"));
    api.wait_until_blocked(1).await;
    // A change to another service moves the global Raft index, not web's.
    api.register("n2", "db-1", "db", 5432).await;
    // An identical re-registration of web moves nothing either.
    api.register("n1", "web-1", "web", 80).await;

    let resp = woken(waiter).await;
    assert_eq!(resp.status, 200);
    let same = resp.index();
    assert_eq!(same, idx);
    assert!(api.sb.stats().raft_index > idx);
}

#[tokio::test]
async fn node_services_query_watches_only_its_node() {
    let api = Api::start().await;
    api.register("mine", "a", "web", 80).await;
    api.register("other", "b", "web", 80).await;
    let idx = api.get("/v1/catalog/node-services/mine").await.index();

    // Changes on another node do not move "mine"'s index...
    let waiter = api.spawn_get(&format!(
        "/v1/catalog/node-services/mine?index={idx}&wait=300ms"
    ));
    api.wait_until_blocked(1).await;
    api.register("other", "b", "web", 81).await;
    let resp = woken(waiter).await;
    let got = resp.index();
    assert_eq!(got, idx);

    // ...a change on "mine" does.
    let waiter = api.spawn_get(&format!(
        "/v1/catalog/node-services/mine?index={idx}&wait=5m"
    ));
    api.wait_until_blocked(1).await;
    api.put(
        "/v1/catalog/deregister",
        &json!({"Node": "mine", "ServiceID": "a"}),
    )
    .await;
    let resp = woken(waiter).await;
    let got = resp.index();
    assert!(got > idx);
    let body = resp.json();
    assert_eq!(body["Services"], serde_json::Value::Null);
}

#[tokio::test]
async fn services_list_and_health_queries_block_too() {
    let api = Api::start().await;
    let idx = api.get("/v1/catalog/services").await.index();
    let hidx = api.get("/v1/health/service/web").await.index();
    let w1 = api.spawn_get(&format!("/v1/catalog/services?index={idx}"));
    let w2 = api.spawn_get(&format!("/v1/health/service/web?index={hidx}&passing=1"));
    api.wait_until_blocked(2).await;
    api.put("/v1/catalog/register", &json!({"Node": "n", "Address": "a",
        "Service": {"Service": "web"}, "Check": {"Name": "c", "ServiceID": "web", "Status": "passing"}})).await;
    let (r1, r2) = (woken(w1).await, woken(w2).await);
    assert!(r1.index() > idx && r2.index() > hidx);
    assert_eq!(r2.count(), 1);
}

#[tokio::test]
async fn many_concurrent_blocking_queries_all_wake_on_one_write() {
    let api = Api::start().await;
    api.register("n1", "web-1", "web", 80).await;
    let idx = api.get("/v1/catalog/service/web").await.index();
    let mut waiters = Vec::new();
    for _ in 0..200 {
        waiters.push(api.spawn_get(&format!("/v1/catalog/service/web?index={idx}&wait=5m")));
    }
    api.wait_until_blocked(200).await;
    api.register("n1", "web-1", "web", 99).await;
    for w in waiters {
        assert!(woken(w).await.index() > idx);
    }
    assert_eq!(api.sb.stats().blocking_queries_open, 0);
}

#[tokio::test]
async fn a_write_wakes_only_the_queries_watching_what_it_changed() {
    let api = Api::start().await;
    api.register("n1", "web-1", "web", 80).await;
    api.register("n2", "db-1", "db", 5432).await;
    let idx = api.get("/v1/catalog/service/web").await.index();
    let nidx = api.get("/v1/catalog/node-services/n1").await.index();
    let mut waiters = Vec::new();
    for i in 0..20 {
        waiters.push(api.spawn_get(&if i % 2 == 0 {
            format!("/v1/catalog/service/web?index={idx}&wait=5m")
        } else {
            format!("/v1/catalog/node-services/n1?index={nidx}&wait=5m")
        }));
    }
    api.wait_until_blocked(20).await;
    // Ten writes elsewhere: none of them concerns "web" or node n1.
    for port in 0..10 {
        api.register("n2", "db-1", "db", 6000 + port).await;
        api.register(&format!("other-{port}"), "x", "x", 1).await;
    }
    // One write that concerns every waiter.
    api.register("n1", "web-1", "web", 81).await;
    for w in waiters {
        assert_eq!(woken(w).await.status, 200);
    }
    assert_eq!(
        api.sb.stats().blocking_wakeups,
        20,
        "each waiter was woken exactly once"
    );
}

#[tokio::test]
async fn shutdown_releases_blocked_queries() {
    let api = Api::start().await;
    let idx = api.get("/v1/catalog/services").await.index();
    let waiter = api.spawn_get(&format!("/v1/catalog/services?index={idx}&wait=10m"));
    api.wait_until_blocked(1).await;
    api.sb.shutdown().await;
    let resp = woken(waiter).await;
    assert_eq!(resp.status, 200);
    let got = resp.index();
    assert_eq!(got, idx);
}

#[tokio::test]
async fn index_zero_or_missing_never_blocks() {
    let api = Api::start().await;
    let r = api.get("/v1/catalog/services?index=0&wait=10m").await;
    assert_eq!(r.status, 200);
    assert_eq!(api.sb.stats().blocking_queries_total, 0);
}

/// `GET /v1/health/node/<node>`: the node's checks, `[]` for an unknown
/// node, and a blocked reader woken by a check status change on that node.
#[tokio::test]
async fn health_node_lists_the_nodes_checks_and_blocks_on_check_changes() {
    let api = Api::start().await;
    let unknown = api.get("/v1/health/node/nobody").await;
    assert_eq!(unknown.status, 200);
    assert_eq!(unknown.json(), json!([]));

    let reg = |status: &str| {
        json!({
            "Node": "mine", "Address": "10.0.0.1",
            "Service": {"ID": "web-1", "Service": "web", "Port": 80},
            "Check": {"CheckID": "default/web-1", "Name": "Kubernetes Readiness Check",
                      "Status": status, "ServiceID": "web-1", "Type": "kubernetes-readiness"},
        })
    };
    assert_eq!(
        api.put("/v1/catalog/register", &reg("passing"))
            .await
            .status,
        200
    );
    api.register("other", "db-1", "db", 5432).await;
    api.put(
        "/v1/catalog/register",
        &json!({"Node": "other", "Address": "10.0.0.2",
                "Check": {"CheckID": "serfHealth", "Name": "Serf", "Status": "passing"}}),
    )
    .await;

    let first = api.get("/v1/health/node/mine").await;
    let body = first.json();
    let checks = body.as_array().unwrap();
    assert_eq!(checks.len(), 1, "{body}");
    assert_eq!(checks[0]["CheckID"], "default/web-1");
    assert_eq!(checks[0]["Node"], "mine");
    assert_eq!(checks[0]["ServiceID"], "web-1");
    assert_eq!(checks[0]["ServiceName"], "web");
    assert_eq!(checks[0]["Status"], "passing");
    assert_eq!(checks[0]["Type"], "kubernetes-readiness");
    let idx = first.index();

    let waiter = api.spawn_get(&format!("/v1/health/node/mine?index={idx}&wait=5m"));
    api.wait_until_blocked(1).await;
    assert_eq!(
        api.put("/v1/catalog/register", &reg("critical"))
            .await
            .status,
        200
    );
    let resp = woken(waiter).await;
    let got = resp.index();
    assert!(got > idx, "{got} > {idx}");
    let body = resp.json();
    assert_eq!(body[0]["Status"], "critical");
    assert_eq!(
        api.sb.stats().requests.get("GET /v1/health/node").copied(),
        Some(3)
    );
}
