//! `PUT /v1/txn` over HTTP: one Raft apply per transaction, all-or-nothing,
//! 409 with the failing `OpIndex`, 413 above the operation limit.

use crate::common;

use common::Api;
use consul_sandbox::Config;
use serde_json::{Value, json};

fn set_service(node: &str, id: &str, port: i64) -> Value {
    json!({"Service": {"Verb": "set", "Node": node, "Service": {"ID": id, "Service": "web", "Port": port}}})
}

#[tokio::test]
async fn a_transaction_of_many_writes_is_one_raft_apply() {
    let api = Api::start().await;
    let before = api.sb.stats();
    let mut ops = vec![
        json!({"Node": {"Verb": "set", "Node": {"Node": "k8s-sync", "Address": "127.0.0.1"}}}),
    ];
    for i in 0..127 {
        ops.push(set_service("k8s-sync", &format!("web-{i}"), 8000 + i));
    }
    let r = api.put("/v1/txn", &Value::Array(ops)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let body = r.json();
    assert_eq!(body["Errors"], Value::Null);
    assert_eq!(body["Results"].as_array().unwrap().len(), 128);
    assert_eq!(body["Results"][0]["Node"]["Node"], "k8s-sync");
    assert_eq!(body["Results"][1]["Service"]["ID"], "web-0");
    let after = api.sb.stats();
    assert_eq!(after.raft_applies, before.raft_applies + 1);
    assert_eq!(after.requests_for("PUT /v1/txn"), 1);
    let list = api.get("/v1/catalog/service/web").await.json();
    assert_eq!(list.as_array().unwrap().len(), 127);
    assert!(
        list.as_array()
            .unwrap()
            .iter()
            .all(|e| e["ModifyIndex"] == after.raft_index)
    );
}

#[tokio::test]
async fn one_failing_op_applies_nothing_and_names_its_op_index() {
    let api = Api::start().await;
    api.register("n1", "web-0", "web", 80).await;
    let snapshot = api.get("/v1/catalog/service/web").await;
    let stale = snapshot.json()[0]["ModifyIndex"].as_u64().unwrap() + 1000;
    let r = api
        .put(
            "/v1/txn",
            &json!([
                set_service("n1", "web-1", 81),
                {"Service": {"Verb": "delete", "Node": "n1", "Service": {"ID": "web-0", "Service": "web"}}},
                {"Service": {"Verb": "cas", "Node": "n1", "Service": {"ID": "web-0", "Service": "web", "Port": 1, "ModifyIndex": stale}}},
            ]),
        )
        .await;
    assert_eq!(r.status, 409);
    assert_eq!(
        r.json(),
        json!({"Results": null, "Errors": [
            {"OpIndex": 2, "What": "failed to set service \"web-0\" on node \"n1\", index is stale"}
        ]})
    );
    let now = api.get("/v1/catalog/service/web").await;
    assert_eq!(now.json(), snapshot.json(), "nothing applied");
    assert_eq!(now.index(), snapshot.index(), "no index moved");
}

#[tokio::test]
async fn too_many_operations_answer_413_without_raft() {
    let api = Api::start().await;
    let ops: Vec<Value> = (0..129)
        .map(|i| set_service("n1", &format!("s{i}"), 1))
        .collect();
    let r = api.put("/v1/txn", &Value::Array(ops.clone())).await;
    assert_eq!(r.status, 413);
    assert_eq!(
        r.text,
        "Transaction contains too many operations (129 > 128)"
    );
    assert_eq!(api.sb.stats().raft_applies, 0);

    // A server before Consul 1.14.
    let older = Api::start_with(Config {
        max_txn_ops: 64,
        ..Config::default()
    })
    .await;
    let r = older
        .put("/v1/txn", &Value::Array(ops[..65].to_vec()))
        .await;
    assert_eq!(
        (r.status, r.text.as_str()),
        (413, "Transaction contains too many operations (65 > 64)")
    );
    assert_eq!(older.sb.stats().raft_applies, 0);

    let small = Api::start_with(Config {
        max_txn_ops: 2,
        ..Config::default()
    })
    .await;
    let r = small.put("/v1/txn", &Value::Array(ops[..3].to_vec())).await;
    assert_eq!(
        (r.status, r.text.as_str()),
        (413, "Transaction contains too many operations (3 > 2)")
    );
}

#[tokio::test]
async fn an_oversized_body_is_refused_before_the_operations_are_counted() {
    // Consul checks Content-Length against txn_max_req_len before decoding,
    // and counts the operations only after: a body over both limits gets
    // the size text.
    let api = Api::start_with(Config {
        max_body_bytes: 4096,
        ..Config::default()
    })
    .await;
    let ops: Vec<Value> = (0..65)
        .map(|i| set_service("n1", &format!("s{i}"), 1))
        .collect();
    let r = api.put("/v1/txn", &Value::Array(ops.clone())).await;
    assert_eq!(
        (r.status, r.text.as_str()),
        (413, "Request body too large, max size: 4096 bytes")
    );
    // Under both limits, the same operations commit.
    let mut small =
        vec![json!({"Node": {"Verb": "set", "Node": {"Node": "n1", "Address": "127.0.0.1"}}})];
    small.extend_from_slice(&ops[..19]);
    let r = api.put("/v1/txn", &Value::Array(small)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(api.sb.stats().raft_applies, 1);
}

#[tokio::test]
async fn unknown_verbs_and_kv_ops_are_409_before_raft() {
    let api = Api::start().await;
    let r = api
        .put(
            "/v1/txn",
            &json!([
                {"Service": {"Verb": "upsert", "Node": "n1", "Service": {"Service": "web"}}},
                {"KV": {"Verb": "set", "Key": "a", "Value": "Yg=="}},
            ]),
        )
        .await;
    assert_eq!(r.status, 409);
    let errors = r.json()["Errors"].clone();
    assert_eq!(
        errors[0],
        json!({"OpIndex": 0, "What": "unknown service operation: upsert"})
    );
    assert_eq!(errors[1]["OpIndex"], 1);
    assert_eq!(api.sb.stats().raft_applies, 0);
}

#[tokio::test]
async fn cas_and_delete_cas_follow_modify_index() {
    let api = Api::start().await;
    api.register("n1", "web-0", "web", 80).await;
    let m = api.get("/v1/catalog/service/web").await.json()[0]["ModifyIndex"]
        .as_u64()
        .unwrap();
    let cas = |port: i64, idx: u64| json!([{"Service": {"Verb": "cas", "Node": "n1", "Service": {"ID": "web-0", "Service": "web", "Port": port, "ModifyIndex": idx}}}]);
    let r = api.put("/v1/txn", &cas(90, m)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let new_m = r.json()["Results"][0]["Service"]["ModifyIndex"]
        .as_u64()
        .unwrap();
    assert!(new_m > m);
    assert_eq!(
        api.put("/v1/txn", &cas(91, m)).await.status,
        409,
        "old index is stale now"
    );
    let del = json!([{"Service": {"Verb": "delete-cas", "Node": "n1", "Service": {"ID": "web-0", "Service": "web", "ModifyIndex": new_m}}}]);
    let r = api.put("/v1/txn", &del).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["Results"], json!([]));
    assert_eq!(api.get("/v1/catalog/service/web").await.json(), json!([]));
}

#[tokio::test]
async fn read_only_transactions_do_not_touch_raft() {
    let api = Api::start().await;
    api.register("n1", "web-0", "web", 80).await;
    let before = api.sb.stats().raft_applies;
    let r = api
        .put(
            "/v1/txn",
            &json!([{"Service": {"Verb": "get", "Node": "n1", "Service": {"ID": "web-0"}}}]),
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("X-Consul-KnownLeader").as_deref(), Some("true"));
    assert_eq!(r.json()["Results"][0]["Service"]["Port"], 80);
    assert_eq!(api.sb.stats().raft_applies, before);
}

#[tokio::test]
async fn identical_txn_set_moves_no_index_but_counts_an_apply() {
    let api = Api::start().await;
    let ops = json!([
        {"Node": {"Verb": "set", "Node": {"Node": "n1", "Address": "a"}}},
        set_service("n1", "web-0", 80),
    ]);
    api.put("/v1/txn", &ops).await;
    let first = api.get("/v1/catalog/service/web").await;
    let r = api.put("/v1/txn", &ops).await;
    assert_eq!(r.status, 200);
    let second = api.get("/v1/catalog/service/web").await;
    assert_eq!(second.index(), first.index());
    assert_eq!(second.json(), first.json());
    assert_eq!(api.sb.stats().raft_applies, 2);
}

/// Consul's `cas` rules (`ensureServiceCASTxn`, `deleteServiceCASTxn` and
/// their node and check twins): index 0 means "only if absent", any other
/// index must equal the entry's `ModifyIndex` (an absent entry fails it),
/// the precondition is checked before the content (an identical write
/// with a stale index fails too), and a refused precondition rolls back
/// the whole transaction: one Raft apply that commits nothing, so no
/// catalog index moves.
#[tokio::test]
async fn cas_preconditions_match_consul_for_every_kind() {
    let api = Api::start().await;
    api.register("n1", "web-0", "web", 80).await;
    let svc = |verb: &str, id: &str, port: i64, idx: u64| json!({"Service": {"Verb": verb, "Node": "n1", "Service": {"ID": id, "Service": "web", "Port": port, "ModifyIndex": idx}}});
    let m = api.get("/v1/catalog/service/web").await.json()[0]["ModifyIndex"]
        .as_u64()
        .unwrap();
    let refused = |what: &str| json!({"Results": null, "Errors": [{"OpIndex": 1, "What": what}]});
    let cases = [
        (
            svc("cas", "web-0", 80, 0),
            "failed to set service \"web-0\" on node \"n1\", index is stale",
        ),
        (
            svc("cas", "web-0", 80, m + 7),
            "failed to set service \"web-0\" on node \"n1\", index is stale",
        ),
        (
            svc("cas", "ghost", 80, m),
            "failed to set service \"ghost\" on node \"n1\", index is stale",
        ),
        (
            svc("delete-cas", "ghost", 0, 0),
            "failed to delete service \"ghost\" on node \"n1\", index is stale",
        ),
        (
            svc("delete-cas", "web-0", 0, m + 1),
            "failed to delete service \"web-0\" on node \"n1\", index is stale",
        ),
        (
            json!({"Node": {"Verb": "cas", "Node": {"Node": "n1", "Address": "127.0.0.1", "ModifyIndex": 0}}}),
            "failed to set node \"n1\", index is stale",
        ),
        (
            json!({"Node": {"Verb": "delete-cas", "Node": {"Node": "n1", "ModifyIndex": m + 3}}}),
            "failed to delete node \"n1\", index is stale",
        ),
        (
            json!({"Check": {"Verb": "cas", "Check": {"Node": "n1", "CheckID": "c1", "Name": "c1", "ServiceID": "web-0", "ModifyIndex": 5}}}),
            "failed to set check \"c1\" on node \"n1\", index is stale",
        ),
    ];
    for (op, what) in cases {
        let before = api.get("/v1/catalog/node-services/n1").await;
        let applies = api.sb.stats().raft_applies;
        // A write that would succeed on its own goes first: it is rolled
        // back with the refused one.
        let body = json!([svc("set", "web-1", 81, 0), op]);
        let r = api.put("/v1/txn", &body).await;
        assert_eq!(r.status, 409, "{body}");
        assert_eq!(r.json(), refused(what), "{body}");
        let after = api.get("/v1/catalog/node-services/n1").await;
        assert_eq!(after.json(), before.json(), "nothing committed: {body}");
        assert_eq!(after.index(), before.index(), "no index moved: {body}");
        assert_eq!(
            api.sb.stats().raft_applies,
            applies + 1,
            "checked in the apply: {body}"
        );
    }
    // The same content with the current index passes and, changing
    // nothing, keeps the index; 0 creates what is absent.
    let r = api
        .put(
            "/v1/txn",
            &json!([svc("cas", "web-0", 80, m), svc("cas", "web-1", 81, 0)]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["Results"][0]["Service"]["ModifyIndex"], m);
    let created = r.json()["Results"][1]["Service"]["ModifyIndex"]
        .as_u64()
        .unwrap();
    assert!(created > m);
    let r = api
        .put("/v1/txn", &json!([svc("delete-cas", "web-1", 0, created)]))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    // A get of what is absent: 409 naming it, no results, no Raft apply.
    let applies = api.sb.stats().raft_applies;
    let r = api
        .put(
            "/v1/txn",
            &json!([
                {"Service": {"Verb": "get", "Node": "n1", "Service": {"ID": "web-0"}}},
                {"Service": {"Verb": "get", "Node": "n1", "Service": {"ID": "web-1"}}},
            ]),
        )
        .await;
    assert_eq!(r.status, 409);
    assert_eq!(
        r.json(),
        json!({"Results": null, "Errors": [{"OpIndex": 1, "What": "service \"web-1\" on node \"n1\" doesn't exist"}]})
    );
    assert_eq!(api.sb.stats().raft_applies, applies);
}
