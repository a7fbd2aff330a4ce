//! Catalog data in admin partitions (`Config::enterprise`): nodes live in
//! a partition, services in a namespace of their node's partition; reads,
//! writes, txn ops, blocking queries and ACL `partition` blocks keep to
//! the partition a request names. Every write is one Raft apply; refused
//! ones apply nothing.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Api, ROOT};
use serde_json::{Value, json};

async fn create_partition(api: &Api, token: &str, name: &str) {
    let r = api
        .put_as("/v1/partition", token, json!({"Name": name}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
}

/// An Enterprise sandbox with the partition `eu`.
async fn enterprise_with_eu() -> Api {
    let api = Api::enterprise().await;
    create_partition(&api, "", "eu").await;
    api
}

fn reg_body(node: &str, addr: &str, id: &str, name: &str) -> Value {
    json!({"Node": node, "Address": addr,
           "Service": {"ID": id, "Service": name},
           "Checks": [{"CheckID": format!("{id}-check"), "ServiceID": id, "Status": "passing"}]})
}

/// The nodes of partition `eu`, as `/v1/catalog/nodes` answers.
async fn eu_nodes(api: &Api) -> Value {
    api.get("/v1/catalog/nodes?partition=eu").await.json()
}

/// Registers instance `id` of `web` (with a passing check) on node `n1`
/// at `addr`, with `query` on the URL (`?partition=eu`, or none); the
/// write must succeed.
async fn register_web_on_n1(api: &Api, query: &str, addr: &str, id: &str) {
    let path = format!("/v1/catalog/register{query}");
    let r = api.put(&path, &reg_body("n1", addr, id, "web")).await;
    assert_eq!(r.status, 200, "{}", r.text);
}

fn node_names(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|n| n["Node"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn the_same_node_name_in_two_partitions_is_two_nodes() {
    let api = enterprise_with_eu().await;
    let before = api.applies();
    register_web_on_n1(&api, "", "10.0.0.1", "web-1").await;
    register_web_on_n1(&api, "?partition=eu", "10.0.0.2", "web-1").await;
    // The body's Partition places a registration too.
    let mut body = reg_body("n2", "10.0.0.3", "db-1", "db");
    body["Partition"] = json!("EU");
    let r = api.put("/v1/catalog/register", &body).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(api.applies(), before + 3);

    let eu = eu_nodes(&api).await;
    assert_eq!(node_names(&eu), ["n1", "n2"]);
    assert_eq!(eu[0]["Address"], "10.0.0.2");
    assert_eq!(eu[0]["Partition"], "eu");
    let default = api.get("/v1/catalog/nodes").await.json();
    assert!(!node_names(&default).contains(&"n2".to_string()));
    let n1 = default
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["Node"] == "n1")
        .unwrap();
    assert_eq!(n1["Address"], "10.0.0.1");
    assert_eq!(n1["Partition"], "default");

    let web = api.get("/v1/catalog/service/web?partition=eu").await.json();
    assert_eq!(web.as_array().unwrap().len(), 1);
    assert_eq!(web[0]["Address"], "10.0.0.2");
    assert_eq!(web[0]["Partition"], "eu");
    let health = api.get("/v1/health/service/web").await.json();
    assert_eq!(health.as_array().unwrap().len(), 1);
    assert_eq!(health[0]["Node"]["Address"], "10.0.0.1");
    assert_eq!(health[0]["Service"]["Partition"], "default");
    assert_eq!(health[0]["Checks"][0]["Partition"], "default");
    let services = api.get("/v1/catalog/services?partition=eu").await.json();
    assert_eq!(services, json!({"web": [], "db": []}));
    let node = api.get("/v1/catalog/node/n1?partition=eu").await.json();
    assert_eq!(node["Node"]["Partition"], "eu");
    assert_eq!(node["Services"]["web-1"]["Partition"], "eu");
    let checks = api.get("/v1/health/node/n1?partition=eu").await.json();
    assert_eq!(checks[0]["Partition"], "eu");
    let state = api
        .get("/v1/health/state/passing?partition=eu")
        .await
        .json();
    assert_eq!(state.as_array().unwrap().len(), 2, "{state}");

    // Deregistering n1 in eu leaves the default partition's n1 alone.
    let r = api
        .put(
            "/v1/catalog/deregister?partition=eu",
            &json!({"Node": "n1"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(node_names(&eu_nodes(&api).await), ["n2"]);
    assert_eq!(
        api.get("/v1/catalog/service/web").await.json()[0]["Address"],
        "10.0.0.1"
    );
}

#[tokio::test]
async fn txn_ops_carry_their_partition() {
    let api = enterprise_with_eu().await;
    let before = api.applies();
    let ops = json!([
        {"Node": {"Verb": "set", "Node": {"Node": "n1", "Address": "10.0.0.2", "Partition": "eu"}}},
        {"Service": {"Verb": "set", "Node": "n1",
                     "Service": {"ID": "db-1", "Service": "db", "Partition": "eu"}}},
        {"Check": {"Verb": "set", "Check": {"Node": "n1", "CheckID": "c1",
                    "ServiceID": "db-1", "Status": "passing", "Partition": "eu"}}},
    ]);
    let r = api.put("/v1/txn", &ops).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let results = r.json()["Results"].clone();
    assert_eq!(results[0]["Node"]["Partition"], "eu");
    assert_eq!(results[1]["Service"]["Partition"], "eu");
    assert_eq!(results[2]["Check"]["Partition"], "eu");
    assert_eq!(api.applies(), before + 1);
    assert_eq!(
        api.get("/v1/catalog/service/db?partition=eu").await.count(),
        1
    );
    assert_eq!(api.get("/v1/catalog/service/db").await.json(), json!([]));

    // Gets read the partition they name.
    let get = |p: &'static str| json!([{"Node": {"Verb": "get", "Node": {"Node": "n1", "Partition": p}}}]);
    let r = api.put("/v1/txn", &get("eu")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = api.put("/v1/txn", &get("default")).await;
    assert_eq!(r.status, 409, "{}", r.text);

    // An unknown partition refuses the whole transaction.
    let r = api
        .put(
            "/v1/txn",
            &json!([
                {"Node": {"Verb": "set", "Node": {"Node": "n9", "Address": "10.0.0.9"}}},
                {"Node": {"Verb": "set", "Node": {"Node": "n9", "Address": "10.0.0.9", "Partition": "ghost"}}},
            ]),
        )
        .await;
    assert_eq!(r.status, 409, "{}", r.text);
    assert_eq!(
        r.json()["Errors"][0]["What"],
        "Partition \"ghost\" does not exist"
    );
    assert_eq!(api.applies(), before + 1);
    // Deleting in eu by the txn leaves nothing there.
    let r = api
        .put(
            "/v1/txn",
            &json!([{"Node": {"Verb": "delete", "Node": {"Node": "n1", "Partition": "eu"}}}]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(eu_nodes(&api).await, json!([]));
}

#[tokio::test]
async fn a_blocked_read_in_one_partition_is_not_woken_by_another() {
    let api = enterprise_with_eu().await;
    register_web_on_n1(&api, "?partition=eu", "10.0.0.2", "web-1").await;
    for path in [
        "/v1/catalog/service/web",
        "/v1/catalog/services",
        "/v1/catalog/nodes",
        "/v1/catalog/node/n1",
    ] {
        let idx = api.get(&format!("{path}?partition=eu")).await.index();
        let blocked = api.spawn_get(&format!("{path}?partition=eu&index={idx}&wait=5m"));
        api.wait_until_blocked(1).await;
        let wakeups = api.sb.stats().blocking_wakeups;
        // The same names in the default partition.
        register_web_on_n1(&api, "", "10.0.0.1", &format!("web-{idx}")).await;
        assert_eq!(api.sb.stats().blocking_wakeups, wakeups, "{path}");
        assert_eq!(api.sb.stats().blocking_queries_open, 1, "{path}");
        register_web_on_n1(&api, "?partition=eu", "10.0.0.2", &format!("web-eu-{idx}")).await;
        let body = blocked.await.unwrap().json();
        assert_eq!(api.sb.stats().blocking_wakeups, wakeups + 1, "{path}");
        if path == "/v1/catalog/service/web" {
            assert!(
                body.as_array()
                    .unwrap()
                    .iter()
                    .all(|s| s["Partition"] == "eu"),
                "{body}"
            );
        }
    }
}

#[tokio::test]
async fn acl_partition_blocks_grant_only_inside_their_partition() {
    let api = Api::enterprise_with_acls().await;
    create_partition(&api, ROOT, "eu").await;
    let eu = api
        .secret_with_policy(
            "eu-writer",
            r#"partition "eu" {
             node_prefix "" { policy = "write" }
             service_prefix "" { policy = "write" }
           }"#,
        )
        .await;
    let plain = api
        .secret_with_policy(
            "writer",
            r#"node_prefix "" { policy = "write" }
           service_prefix "" { policy = "write" }"#,
        )
        .await;
    let before = api.applies();
    let reg = |path: &'static str, tok: String, node: &'static str| {
        let api = &api;
        async move {
            api.put_as(
                path,
                &tok,
                json!({"Node": node, "Address": "10.0.0.1",
                            "Service": {"ID": "web-1", "Service": "web"}}),
            )
            .await
            .status
        }
    };
    assert_eq!(
        reg("/v1/catalog/register?partition=eu", eu.clone(), "a").await,
        200
    );
    assert_eq!(reg("/v1/catalog/register", eu.clone(), "b").await, 403);
    assert_eq!(reg("/v1/catalog/register", plain.clone(), "c").await, 200);
    assert_eq!(
        reg("/v1/catalog/register?partition=eu", plain.clone(), "d").await,
        403,
        "rules outside a partition block stay in the token's partition"
    );
    assert_eq!(api.applies(), before + 2, "denials apply nothing");

    let read = |path: &'static str, tok: String| {
        let api = &api;
        async move { api.get_as(path, &tok).await }
    };
    let r = read("/v1/catalog/nodes?partition=eu", eu.clone()).await;
    assert_eq!(node_names(&r.json()), ["a"]);
    let r = read("/v1/catalog/nodes?partition=eu", plain.clone()).await;
    assert_eq!(r.json(), json!([]));
    assert_eq!(
        r.header("X-Consul-Results-Filtered-By-ACLs").as_deref(),
        Some("true")
    );
    let r = read("/v1/catalog/service/web", eu).await;
    assert_eq!(r.json(), json!([]), "eu's token reads nothing in default");
    let r = read("/v1/catalog/service/web", plain).await;
    assert_eq!(r.json()[0]["Node"], "c");
}

#[tokio::test]
async fn unknown_or_malformed_partitions_change_nothing() {
    let api = enterprise_with_eu().await;
    let before = api.applies();
    let stats_before = api.get("/v1/catalog/nodes").await.json();
    for (path, body, status) in [
        (
            "/v1/catalog/register?partition=nope",
            reg_body("n1", "10.0.0.1", "w", "w"),
            500,
        ),
        (
            "/v1/catalog/register?partition=a_b",
            reg_body("n1", "10.0.0.1", "w", "w"),
            400,
        ),
        (
            "/v1/catalog/register",
            json!({"Node": "n1", "Address": "10.0.0.1", "Partition": 7}),
            400,
        ),
        (
            "/v1/catalog/register",
            json!({"Node": "n1", "Address": "10.0.0.1", "Partition": "-x"}),
            400,
        ),
        (
            "/v1/catalog/deregister?partition=nope",
            json!({"Node": "n1"}),
            500,
        ),
    ] {
        let r = api.put(path, &body).await;
        assert_eq!(r.status, status, "{path} {body}: {}", r.text);
    }
    assert_eq!(
        api.get("/v1/catalog/nodes?partition=nope").await.status,
        500
    );
    assert_eq!(api.get("/v1/catalog/nodes?partition=%2A").await.status, 400);
    assert_eq!(api.applies(), before, "refusals apply nothing");
    assert_eq!(api.get("/v1/catalog/nodes").await.json(), stats_before);
    assert_eq!(eu_nodes(&api).await, json!([]));
}

#[tokio::test]
async fn deleting_a_partition_removes_its_nodes_in_the_same_apply() {
    let api = enterprise_with_eu().await;
    register_web_on_n1(&api, "?partition=eu", "10.0.0.1", "web-1").await;
    register_web_on_n1(&api, "", "10.0.0.1", "web-1").await;
    let before = api.applies();
    let r = api
        .call(reqwest::Method::DELETE, "/v1/partition/eu", "", None)
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(api.applies(), before + 1);
    create_partition(&api, "", "eu").await;
    assert_eq!(eu_nodes(&api).await, json!([]));
    assert_eq!(
        api.get("/v1/health/service/web?partition=eu").await.json(),
        json!([])
    );
    let web = api.get("/v1/health/service/web").await.json();
    assert_eq!(web.as_array().unwrap().len(), 1, "default keeps its n1");
    assert_eq!(web[0]["Checks"].as_array().unwrap().len(), 1);
}
