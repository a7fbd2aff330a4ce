//! Every endpoint over raw HTTP: shapes, headers, index behaviour and the
//! bad-input table.

use crate::common;

use common::Api;
use consul_sandbox::Config;
use serde_json::{Value, json};

#[tokio::test]
async fn register_then_read_by_service_by_node_and_list() {
    let api = Api::start().await;
    let r = api
        .put(
            "/v1/catalog/register",
            &json!({
                "Node": "k8s-sync",
                "Address": "127.0.0.1",
                "NodeMeta": {"external-source": "kubernetes"},
                "Service": {
                    "ID": "web-abc", "Service": "web", "Tags": ["k8s", "v1"],
                    "Address": "10.1.2.3", "Port": 8080,
                    "Meta": {"external-k8s-ns": "default"},
                    "Weights": {"Passing": 3, "Warning": 1}
                }
            }),
        )
        .await;
    assert_eq!((r.status, r.text.as_str()), (200, "true"));

    let s = api.get("/v1/catalog/service/web").await;
    assert_eq!(s.status, 200);
    assert_eq!(s.header("X-Consul-KnownLeader").as_deref(), Some("true"));
    assert_eq!(s.header("X-Consul-LastContact").as_deref(), Some("0"));
    let idx = s.index();
    let body = s.json();
    let e = &body[0];
    assert_eq!(e["Node"], "k8s-sync");
    assert_eq!(e["Address"], "127.0.0.1");
    assert_eq!(e["Datacenter"], "dc1");
    assert_eq!(e["NodeMeta"], json!({"external-source": "kubernetes"}));
    assert_eq!(e["ServiceID"], "web-abc");
    assert_eq!(e["ServiceName"], "web");
    assert_eq!(e["ServiceTags"], json!(["k8s", "v1"]));
    assert_eq!(e["ServiceAddress"], "10.1.2.3");
    assert_eq!(e["ServicePort"], 8080);
    assert_eq!(e["ServiceMeta"], json!({"external-k8s-ns": "default"}));
    assert_eq!(e["ServiceWeights"], json!({"Passing": 3, "Warning": 1}));
    assert_eq!(e["ServiceEnableTagOverride"], false);
    assert_eq!(e["CreateIndex"], e["ModifyIndex"]);
    assert_eq!(e["ModifyIndex"].as_u64(), Some(idx));

    let n = api.get("/v1/catalog/node-services/k8s-sync").await;
    let body = n.json();
    assert_eq!(n.index(), idx, "the node's index is the last change on it");
    assert_eq!(body["Node"]["Node"], "k8s-sync");
    assert_eq!(
        body["Node"]["Meta"],
        json!({"external-source": "kubernetes"})
    );
    let svcs = body["Services"].as_array().unwrap();
    assert_eq!(svcs.len(), 1);
    assert_eq!(svcs[0]["ID"], "web-abc");
    assert_eq!(svcs[0]["Service"], "web");
    assert_eq!(svcs[0]["Weights"], json!({"Passing": 3, "Warning": 1}));

    let m = api.get("/v1/catalog/node/k8s-sync").await.json();
    assert_eq!(m["Services"]["web-abc"]["Port"], 8080);

    let list = api.get("/v1/catalog/services").await;
    assert_eq!(list.json(), json!({"consul": [], "web": ["k8s", "v1"]}));

    let nodes = api.get("/v1/catalog/nodes").await.json();
    let names: Vec<&str> = nodes
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["Node"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["consul-sandbox", "k8s-sync"]);
    assert_eq!(
        api.get("/v1/catalog/datacenters").await.json(),
        json!(["dc1"])
    );
}

#[tokio::test]
async fn node_meta_and_tag_filters() {
    let api = Api::start().await;
    api.put(
        "/v1/catalog/register",
        &json!({"Node": "a", "Address": "1.1.1.1", "NodeMeta": {"zone": "x"},
        "Service": {"Service": "web", "Tags": ["blue"]}}),
    )
    .await;
    api.put(
        "/v1/catalog/register",
        &json!({"Node": "b", "Address": "1.1.1.2",
        "Service": {"Service": "web", "Tags": ["green"]}}),
    )
    .await;
    let r = api.get("/v1/catalog/service/web?tag=BLUE").await.json();
    assert_eq!(r.as_array().unwrap().len(), 1);
    assert_eq!(r[0]["Node"], "a");
    let r = api
        .get("/v1/catalog/service/web?node-meta=zone:x")
        .await
        .json();
    assert_eq!(r[0]["Node"], "a");
    assert_eq!(r.as_array().unwrap().len(), 1);
    let r = api
        .get("/v1/catalog/services?node-meta=zone:x")
        .await
        .json();
    assert_eq!(r, json!({"web": ["blue"]}));
    let r = api.get("/v1/catalog/nodes?node-meta=zone:x").await.json();
    assert_eq!(r.as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn same_service_id_on_two_nodes_is_two_instances() {
    // Accepted, not refused: Consul's catalog register docs say "Only one
    // service with a given ID may be present per node" (and the agent docs:
    // the ID "must be unique per agent"), not per datacenter. The state
    // store keys service instances by (node, service ID), so the second
    // register adds a second instance of `web` instead of moving or
    // conflicting with the first. See "Register Entity" in
    // https://developer.hashicorp.com/consul/api-docs/catalog.
    let api = Api::start().await;
    api.register("n1", "web-1", "web", 80).await;
    api.register("n2", "web-1", "web", 81).await;
    let r = api.get("/v1/catalog/service/web").await.json();
    let instances: Vec<(&str, &str, u64)> = r
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["Node"].as_str().unwrap(),
                e["ServiceID"].as_str().unwrap(),
                e["ServicePort"].as_u64().unwrap(),
            )
        })
        .collect();
    // Each node keeps its own instance: the second register neither moved
    // nor overwrote the first.
    assert_eq!(instances, vec![("n1", "web-1", 80), ("n2", "web-1", 81)]);
}

#[tokio::test]
async fn identical_reregistration_counts_a_raft_apply_but_moves_no_index() {
    let api = Api::start().await;
    let before = api.sb.stats();
    api.register("n1", "web-1", "web", 80).await;
    let first = api.get("/v1/catalog/service/web").await;
    let m1 = first.json()[0]["ModifyIndex"].as_u64().unwrap();

    api.register("n1", "web-1", "web", 80).await;
    let second = api.get("/v1/catalog/service/web").await;
    let stats = api.sb.stats();
    assert_eq!(stats.raft_applies, before.raft_applies + 2);
    assert_eq!(stats.raft_index, before.raft_index + 2);
    assert_eq!(second.json()[0]["ModifyIndex"].as_u64(), Some(m1));
    assert_eq!(second.index(), first.index());
    let node_idx = api.get("/v1/catalog/node-services/n1").await.index();
    assert_eq!(node_idx, m1);

    api.register("n1", "web-1", "web", 81).await;
    let third = api.get("/v1/catalog/service/web").await;
    assert_eq!(
        third.json()[0]["ModifyIndex"].as_u64(),
        Some(before.raft_index + 3)
    );
    assert_eq!(third.index(), before.raft_index + 3);
    assert_eq!(third.json()[0]["CreateIndex"].as_u64(), Some(m1));
}

#[tokio::test]
async fn deregister_service_check_and_node() {
    let api = Api::start().await;
    api.put(
        "/v1/catalog/register",
        &json!({"Node": "n1", "Address": "a",
        "Service": {"ID": "w1", "Service": "web"},
        "Checks": [{"CheckID": "c1", "Name": "alive", "ServiceID": "w1", "Status": "passing"},
                   {"CheckID": "node-ok", "Name": "node", "Status": "passing"}]}),
    )
    .await;
    let h = api.get("/v1/health/service/web").await.json();
    assert_eq!(h[0]["Checks"].as_array().unwrap().len(), 2);

    let r = api
        .put(
            "/v1/catalog/deregister",
            &json!({"Node": "n1", "CheckID": "node-ok"}),
        )
        .await;
    assert_eq!((r.status, r.text.as_str()), (200, "true"));
    let h = api.get("/v1/health/service/web").await.json();
    assert_eq!(h[0]["Checks"].as_array().unwrap().len(), 1);

    api.put(
        "/v1/catalog/deregister",
        &json!({"Node": "n1", "ServiceID": "w1"}),
    )
    .await;
    assert_eq!(api.get("/v1/catalog/service/web").await.json(), json!([]));
    let ns = api.get("/v1/catalog/node-services/n1").await.json();
    assert_eq!(ns["Services"], Value::Null);
    assert_eq!(ns["Node"]["Node"], "n1");

    api.put("/v1/catalog/deregister", &json!({"Node": "n1"}))
        .await;
    let ns = api.get("/v1/catalog/node-services/n1").await.json();
    assert_eq!(ns, json!({"Node": null, "Services": null}));
    assert_eq!(api.get("/v1/catalog/node/n1").await.json(), Value::Null);
    assert_eq!(
        api.sb.stats().services,
        1,
        "only the agent's consul service is left"
    );
}

#[tokio::test]
async fn health_service_shape_and_passing_filter() {
    let api = Api::start().await;
    for (node, status) in [("n1", "passing"), ("n2", "critical")] {
        api.put("/v1/catalog/register", &json!({"Node": node, "Address": "a",
            "Service": {"ID": "w", "Service": "web", "Port": 80},
            "Check": {"CheckID": "k8s", "Name": "Kubernetes Readiness Check", "ServiceID": "w", "Status": status}})).await;
    }
    let all = api.get("/v1/health/service/web").await;
    let body = all.json();
    assert_eq!(body.as_array().unwrap().len(), 2);
    let e = &body[0];
    assert_eq!(e["Node"]["Node"], "n1");
    assert_eq!(e["Service"]["ID"], "w");
    assert_eq!(e["Service"]["Service"], "web");
    assert_eq!(e["Checks"][0]["CheckID"], "k8s");
    assert_eq!(e["Checks"][0]["ServiceName"], "web");
    assert_eq!(e["Checks"][0]["Status"], "passing");
    let passing = api.get("/v1/health/service/web?passing").await.json();
    assert_eq!(passing.as_array().unwrap().len(), 1);
    assert_eq!(passing[0]["Node"]["Node"], "n1");
    let passing = api.get("/v1/health/service/web?passing=false").await.json();
    assert_eq!(passing.as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn agent_self_and_status_leader() {
    let config = Config {
        datacenter: "east".into(),
        node_name: "srv-1".into(),
        ..Config::default()
    };
    let api = Api::start_with(config).await;
    let me = api.get("/v1/agent/self").await.json();
    assert_eq!(me["Config"]["Datacenter"], "east");
    assert_eq!(me["Config"]["NodeName"], "srv-1");
    assert_eq!(me["Member"]["Name"], "srv-1");
    assert_eq!(me["Member"]["Tags"]["dc"], "east");
    let leader = api.get("/v1/status/leader").await;
    assert_eq!(leader.json(), json!("127.0.0.1:8300"));
    let ns = api.get("/v1/catalog/node-services/srv-1").await.json();
    assert_eq!(ns["Services"][0]["Service"], "consul");
    assert_eq!(ns["Node"]["Datacenter"], "east");
}

#[tokio::test]
async fn agent_node_can_be_left_out() {
    let api = Api::start_with(Config {
        register_agent_node: false,
        ..Config::default()
    })
    .await;
    assert_eq!(api.get("/v1/catalog/services").await.json(), json!({}));
    let s = api.sb.stats();
    assert_eq!((s.raft_index, s.raft_applies, s.nodes), (0, 0, 0));
    assert_eq!(
        api.get("/v1/catalog/services").await.index(),
        1,
        "X-Consul-Index is never 0"
    );
}

#[tokio::test]
async fn stats_endpoint_counts_requests_by_template() {
    let api = Api::start().await;
    api.register("n1", "a", "web", 1).await;
    api.get("/v1/catalog/node-services/n1").await;
    api.get("/v1/catalog/node-services/n2").await;
    api.get("/v1/nope").await;
    let s = api.get("/v1/sandbox/stats").await.json();
    assert_eq!(s["requests"]["PUT /v1/catalog/register"], 1);
    assert_eq!(s["requests"]["GET /v1/catalog/node-services"], 2);
    assert_eq!(s["requests"]["GET unknown"], 1);
    assert_eq!(s["raft_applies"], 1);
    assert_eq!(s["raft_index"], 2);
    assert_eq!(s["blocking_queries_open"], 0);
    let lib = api.sb.stats();
    assert_eq!(lib.requests_for("GET /v1/catalog/node-services"), 2);
    assert_eq!(lib.requests_for("GET /v1/sandbox/stats"), 1);
}

#[tokio::test]
async fn dc_ns_and_partition_parameters() {
    let api = Api::start().await;
    assert_eq!(api.get("/v1/catalog/services?dc=dc1").await.status, 200);
    assert_eq!(
        api.get("/v1/catalog/services?ns=default&partition=default")
            .await
            .status,
        200
    );
    let r = api.get("/v1/catalog/services?dc=dc9").await;
    assert_eq!((r.status, r.text.as_str()), (500, "No path to datacenter"));
    let r = api.get("/v1/catalog/service/web?ns=team-a").await;
    assert_eq!(r.status, 400);
    assert_eq!(
        r.text,
        "Invalid query parameter: \"ns\" - Namespaces are a Consul Enterprise feature"
    );
    let r = api.get("/v1/catalog/services?partition=p1").await;
    assert_eq!(r.status, 400);
}

/// One row of the bad-input table.
struct Bad {
    method: &'static str,
    path: &'static str,
    body: &'static str,
    status: u16,
    text: &'static str,
    prefix: bool,
}

/// A row whose answer must be `text` exactly.
const fn bad(
    method: &'static str,
    path: &'static str,
    body: &'static str,
    status: u16,
    text: &'static str,
) -> Bad {
    Bad {
        method,
        path,
        body,
        status,
        text,
        prefix: false,
    }
}

impl Bad {
    /// The row with an answer that need only start with its `text`.
    const fn prefix(self) -> Bad {
        Bad {
            prefix: true,
            ..self
        }
    }
}

#[tokio::test]
async fn bad_input_table_answers_like_consul_and_applies_nothing() {
    let api = Api::start().await;
    let rows = [
        bad(
            "PUT",
            "/v1/catalog/register",
            "",
            400,
            "Request decode failed: EOF",
        ),
        bad(
            "PUT",
            "/v1/catalog/register",
            "{\"Node\":",
            400,
            "Request decode failed: unexpected EOF",
        ),
        bad(
            "PUT",
            "/v1/catalog/register",
            "not json",
            400,
            "Request decode failed: ",
        )
        .prefix(),
        bad(
            "PUT",
            "/v1/catalog/register",
            "[1]",
            400,
            "Request decode failed: json: cannot unmarshal array into Go value of type structs.RegisterRequest",
        ),
        bad(
            "PUT",
            "/v1/catalog/register",
            r#"{"Node":"n","Address":"a","Service":{"Service":"s","Port":"80"}}"#,
            400,
            "Request decode failed: json: cannot unmarshal string into Go struct field RegisterRequest.Service.Port of type int",
        ),
        bad(
            "PUT",
            "/v1/catalog/register",
            r#"{"Address":"a"}"#,
            500,
            "Must provide node",
        ),
        bad(
            "PUT",
            "/v1/catalog/register",
            r#"{"Node":"n"}"#,
            500,
            "Must provide address if SkipNodeUpdate is not set",
        ),
        bad(
            "PUT",
            "/v1/catalog/register",
            r#"{"Node":"n","Address":"a","Service":{"ID":"x"}}"#,
            500,
            "Must provide service name (Service.Service) when service ID is provided",
        ),
        bad(
            "PUT",
            "/v1/catalog/register",
            r#"{"Node":"n","Address":"a","Service":{"Tags":["x"]}}"#,
            500,
            "Missing service name",
        ),
        bad(
            "PUT",
            "/v1/catalog/register",
            r#"{"Node":"n","Address":"a","ID":"123"}"#,
            500,
            "Bad node ID: uuid string is wrong length",
        ),
        bad(
            "PUT",
            "/v1/catalog/deregister",
            r#"{"ServiceID":"x"}"#,
            500,
            "Must provide node",
        ),
        bad(
            "PUT",
            "/v1/catalog/deregister",
            "{",
            400,
            "Request decode failed: unexpected EOF",
        ),
        bad(
            "PUT",
            "/v1/txn",
            "{}",
            400,
            "Failed to parse body: json: cannot unmarshal object",
        )
        .prefix(),
        bad("PUT", "/v1/txn", "[", 400, "Failed to parse body: ").prefix(),
        bad(
            "GET",
            "/v1/catalog/service/",
            "",
            400,
            "Missing service name",
        ),
        bad(
            "GET",
            "/v1/health/service/",
            "",
            400,
            "Missing service name",
        ),
        bad(
            "GET",
            "/v1/catalog/node-services/",
            "",
            400,
            "Missing node name",
        ),
        bad(
            "GET",
            "/v1/catalog/services?index=abc",
            "",
            400,
            "Invalid index",
        ),
        bad(
            "GET",
            "/v1/catalog/services?index=1&wait=forever",
            "",
            400,
            "Invalid wait time",
        ),
        bad(
            "GET",
            "/v1/health/service/web?passing=maybe",
            "",
            400,
            "Invalid value for ?passing",
        ),
        bad(
            "GET",
            "/v1/catalog/services?filter=Service%20%3D%3D%20web",
            "",
            400,
            "Invalid query parameter: \"filter\"",
        )
        .prefix(),
        bad("GET", "/v1/catalog/services?a=%zz", "", 500, ""),
        bad(
            "GET",
            "/v1/catalog/register",
            "",
            405,
            "method GET not allowed",
        ),
        bad(
            "PUT",
            "/v1/catalog/services",
            "",
            405,
            "method PUT not allowed",
        ),
        bad(
            "GET",
            "/v1/nope",
            "",
            404,
            "Invalid URL path: not a recognized HTTP API endpoint\n",
        ),
        bad("GET", "/v1/catalog/service/%zz", "", 400, "Bad Request").prefix(),
    ];
    for row in rows {
        let method = reqwest::Method::from_bytes(row.method.as_bytes()).unwrap();
        let r = api
            .send(api.http.request(method, api.url(row.path)).body(row.body))
            .await;
        assert_eq!(
            r.status, row.status,
            "{} {} {:?}: {}",
            row.method, row.path, row.body, r.text
        );
        if row.prefix {
            assert!(
                r.text.starts_with(row.text),
                "{} {}: {:?}",
                row.method,
                row.path,
                r.text
            );
        } else {
            assert_eq!(r.text, row.text, "{} {}", row.method, row.path);
        }
    }
    let r = api.get("/v1/catalog/register").await;
    assert_eq!(r.header("Allow").as_deref(), Some("OPTIONS,PUT"));
    let s = api.sb.stats();
    assert_eq!(s.raft_applies, 0, "no bad request reached Raft");
    assert_eq!((s.nodes, s.services), (1, 1), "only the agent node");
}

#[tokio::test]
async fn oversized_bodies_get_413_and_apply_nothing() {
    let api = Api::start_with(Config {
        max_body_bytes: 1024,
        ..Config::default()
    })
    .await;
    let big = format!(
        r#"{{"Node":"n","Address":"a","NodeMeta":{{"k":"{}"}}}}"#,
        "x".repeat(2000)
    );
    let r = api.put_raw("/v1/catalog/register", big.clone()).await;
    assert_eq!(r.status, 413);
    assert_eq!(r.text, "Request body too large, max size: 1024 bytes");
    // Without Content-Length (chunked), the limit still holds.
    let mut chunked = Vec::new();
    for chunk in big.as_bytes().chunks(256) {
        chunked.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        chunked.extend_from_slice(chunk);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let mut raw = b"PUT /v1/txn HTTP/1.1\r\nHost: x\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    raw.extend_from_slice(&chunked);
    let answer = common::raw_http(api.sb.addr(), &raw).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(
        answer.ends_with("Request body too large, max size: 1024 bytes"),
        "{answer}"
    );
    assert_eq!(api.sb.stats().raft_applies, 0);
}
