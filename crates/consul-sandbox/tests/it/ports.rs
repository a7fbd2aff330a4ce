//! The multi-port `Ports` list of a service instance (Consul 1.22 and
//! later; newer consul-k8s writes it with `Port` 0) over raw HTTP: stored
//! as sent, echoed by every read that returns the instance and by
//! transaction results, compared as content (a changed list is a real
//! change, an identical one moves no index), and malformed lists refused
//! with 400 without touching the state.

use crate::common;

use common::Api;
use serde_json::{Value, json};

fn two_ports() -> Value {
    json!([
        {"Name": "http", "Port": 8080, "Default": true},
        {"Name": "grpc", "Port": 9090, "Default": false}
    ])
}

fn multi_port_registration(ports: Value) -> Value {
    json!({
        "Node": "k8s-sync",
        "Address": "127.0.0.1",
        "Service": {
            "ID": "web-1", "Service": "web", "Tags": ["k8s"],
            "Address": "10.1.2.3", "Port": 0, "Ports": ports
        },
        "Check": {"CheckID": "default/web-1", "Name": "Kubernetes Readiness Check",
                  "Status": "passing", "ServiceID": "web-1"}
    })
}

#[tokio::test]
async fn registered_ports_come_back_from_every_read_of_the_instance() {
    let api = Api::start().await;
    let r = api
        .put(
            "/v1/catalog/register",
            &multi_port_registration(two_ports()),
        )
        .await;
    assert_eq!((r.status, r.text.as_str()), (200, "true"));

    let ns = api.get("/v1/catalog/node-services/k8s-sync").await.json();
    let svc = &ns["Services"][0];
    assert_eq!(svc["ID"], "web-1");
    assert_eq!(svc["Port"], 0);
    assert_eq!(svc["Ports"], two_ports());

    let flat = api.get("/v1/catalog/service/web").await.json();
    assert_eq!(flat[0]["ServicePort"], 0);
    assert_eq!(flat[0]["ServicePorts"], two_ports());

    let health = api.get("/v1/health/service/web").await.json();
    assert_eq!(health[0]["Service"]["Ports"], two_ports());

    let node = api.get("/v1/catalog/node/k8s-sync").await.json();
    assert_eq!(node["Services"]["web-1"]["Ports"], two_ports());

    // A single-port instance has no Ports member at all.
    api.register("k8s-sync", "db-1", "db", 5432).await;
    let db = api.get("/v1/catalog/service/db").await.json();
    assert!(db[0].get("ServicePorts").is_none(), "{}", db[0]);
    let ns = api.get("/v1/catalog/node-services/k8s-sync").await.json();
    let db = ns["Services"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["ID"] == "db-1")
        .unwrap();
    assert!(db.get("Ports").is_none(), "{db}");
}

#[tokio::test]
async fn identical_ports_move_no_index_and_changed_ports_do() {
    let api = Api::start().await;
    let base = api.sb.stats();
    api.put(
        "/v1/catalog/register",
        &multi_port_registration(two_ports()),
    )
    .await;
    let first = api.get("/v1/catalog/service/web").await;
    let m1 = first.json()[0]["ModifyIndex"].as_u64().unwrap();
    assert_eq!(m1, base.raft_index + 1);

    // The same list again: a Raft apply (the request reached the state
    // store), but no content changed, so neither index moves.
    api.put(
        "/v1/catalog/register",
        &multi_port_registration(two_ports()),
    )
    .await;
    let same = api.get("/v1/catalog/service/web").await;
    assert_eq!(api.sb.stats().raft_applies, base.raft_applies + 2);
    assert_eq!(same.json()[0]["ModifyIndex"].as_u64(), Some(m1));
    assert_eq!(same.index(), first.index());

    // A port added: a change at the request's index.
    let mut three = two_ports();
    three
        .as_array_mut()
        .unwrap()
        .push(json!({"Name": "metrics", "Port": 9100, "Default": false}));
    api.put(
        "/v1/catalog/register",
        &multi_port_registration(three.clone()),
    )
    .await;
    let added = api.get("/v1/catalog/service/web").await;
    assert_eq!(api.sb.stats().raft_applies, base.raft_applies + 3);
    assert_eq!(added.json()[0]["ModifyIndex"].as_u64(), Some(m1 + 2));
    assert_eq!(added.json()[0]["CreateIndex"].as_u64(), Some(m1));
    assert_eq!(added.json()[0]["ServicePorts"], three);

    // The same ports in another order, and another default: changes too
    // (the list is kept as sent, order included).
    let mut reordered = three.clone();
    reordered.as_array_mut().unwrap().reverse();
    api.put(
        "/v1/catalog/register",
        &multi_port_registration(reordered.clone()),
    )
    .await;
    let r = api.get("/v1/catalog/service/web").await.json();
    assert_eq!(r[0]["ModifyIndex"].as_u64(), Some(m1 + 3));
    assert_eq!(r[0]["ServicePorts"], reordered);

    // Ports removed (null, as a Go client sends a nil slice): a change back
    // to a portless list, and the member disappears.
    api.put(
        "/v1/catalog/register",
        &multi_port_registration(Value::Null),
    )
    .await;
    let r = api.get("/v1/catalog/service/web").await.json();
    assert_eq!(r[0]["ModifyIndex"].as_u64(), Some(m1 + 4));
    assert!(r[0].get("ServicePorts").is_none(), "{}", r[0]);
    // ... and `[]` is the same content as null: no change.
    api.put("/v1/catalog/register", &multi_port_registration(json!([])))
        .await;
    let r = api.get("/v1/catalog/service/web").await.json();
    assert_eq!(r[0]["ModifyIndex"].as_u64(), Some(m1 + 4));
    assert_eq!(api.sb.stats().raft_applies, base.raft_applies + 6);
}

#[tokio::test]
async fn malformed_ports_are_400_and_change_nothing() {
    let api = Api::start().await;
    api.put(
        "/v1/catalog/register",
        &multi_port_registration(two_ports()),
    )
    .await;
    let before = api.sb.stats();
    let snapshot = api.get("/v1/catalog/node-services/k8s-sync").await;
    let register = |ports: &str| {
        format!(
            r#"{{"Node":"k8s-sync","Address":"127.0.0.1","Service":{{"ID":"web-1","Service":"web","Ports":{ports}}}}}"#
        )
    };
    let txn = |ports: &str| {
        format!(
            r#"[{{"Service":{{"Verb":"set","Node":"k8s-sync","Service":{{"ID":"web-1","Service":"web","Ports":{ports}}}}}}}]"#
        )
    };
    let rows = [
        (
            r#"{"Name":"http","Port":8080}"#,
            "object into Go struct field RegisterRequest.Service.Ports of type []struct",
        ),
        (
            r#""http:8080""#,
            "string into Go struct field RegisterRequest.Service.Ports of type []struct",
        ),
        (
            "[8080]",
            "number 8080 into Go struct field RegisterRequest.Service.Ports of type struct",
        ),
        (
            r#"[{"Name":"http","Port":"8080"}]"#,
            "string into Go struct field RegisterRequest.Service.Ports.Port of type int",
        ),
        (
            r#"[{"Name":"http","Port":80.5}]"#,
            "number 80.5 into Go struct field RegisterRequest.Service.Ports.Port of type int",
        ),
        (
            r#"[{"Name":["http"],"Port":80}]"#,
            "array into Go struct field RegisterRequest.Service.Ports.Name of type string",
        ),
        (
            r#"[{"Name":"http","Port":80,"Default":1}]"#,
            "number 1 into Go struct field RegisterRequest.Service.Ports.Default of type bool",
        ),
    ];
    for (ports, want) in rows {
        let r = api.put_raw("/v1/catalog/register", register(ports)).await;
        assert_eq!(r.status, 400, "{ports}: {}", r.text);
        assert_eq!(
            r.text,
            format!("Request decode failed: json: cannot unmarshal {want}"),
            "{ports}"
        );
        let r = api.put_raw("/v1/txn", txn(ports)).await;
        assert_eq!(r.status, 400, "txn {ports}: {}", r.text);
        assert!(
            r.text
                .starts_with("Failed to parse body: json: cannot unmarshal "),
            "txn {ports}: {}",
            r.text
        );
    }
    let after = api.sb.stats();
    assert_eq!(
        after.raft_applies, before.raft_applies,
        "nothing reached Raft"
    );
    assert_eq!(after.raft_index, before.raft_index);
    let now = api.get("/v1/catalog/node-services/k8s-sync").await;
    assert_eq!(now.index(), snapshot.index());
    assert_eq!(now.json(), snapshot.json());
    assert_eq!(now.json()["Services"][0]["Ports"], two_ports());
}

#[tokio::test]
async fn txn_set_and_cas_store_and_echo_ports() {
    let api = Api::start().await;
    let set = |ports: Value| {
        json!([
            {"Node": {"Verb": "set", "Node": {"Node": "k8s-sync", "Address": "127.0.0.1"}}},
            {"Service": {"Verb": "set", "Node": "k8s-sync",
                         "Service": {"ID": "web-1", "Service": "web", "Port": 0, "Ports": ports}}}
        ])
    };
    let base = api.sb.stats();
    let r = api.put("/v1/txn", &set(two_ports())).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let body = r.json();
    assert_eq!(body["Results"][1]["Service"]["Ports"], two_ports());
    assert_eq!(body["Results"][1]["Service"]["Port"], 0);
    let m1 = body["Results"][1]["Service"]["ModifyIndex"]
        .as_u64()
        .unwrap();
    let ns = api.get("/v1/catalog/node-services/k8s-sync").await.json();
    assert_eq!(ns["Services"][0]["Ports"], two_ports());

    // The same set again: one apply, the same ModifyIndex echoed.
    let r = api.put("/v1/txn", &set(two_ports())).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.json()["Results"][1]["Service"]["ModifyIndex"].as_u64(),
        Some(m1)
    );
    assert_eq!(api.sb.stats().raft_applies, base.raft_applies + 2);

    // cas at the current index with one port changed: a change.
    let one = json!([{"Name": "http", "Port": 8081, "Default": true}]);
    let cas = |ports: &Value, idx: u64| {
        json!([{"Service": {"Verb": "cas", "Node": "k8s-sync",
                "Service": {"ID": "web-1", "Service": "web", "Ports": ports, "ModifyIndex": idx}}}])
    };
    let r = api.put("/v1/txn", &cas(&one, m1)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let echoed = &r.json()["Results"][0]["Service"];
    assert_eq!(echoed["Ports"], one);
    let m2 = echoed["ModifyIndex"].as_u64().unwrap();
    assert_eq!(m2, api.sb.stats().raft_index);
    assert!(m2 > m1);
    // The old index is stale now: refused, nothing changed.
    let r = api.put("/v1/txn", &cas(&two_ports(), m1)).await;
    assert_eq!(r.status, 409, "{}", r.text);
    let flat = api.get("/v1/catalog/service/web").await.json();
    assert_eq!(flat[0]["ServicePorts"], one);
    assert_eq!(flat[0]["ModifyIndex"].as_u64(), Some(m2));

    // A `get` returns the stored list without a Raft apply.
    let applies = api.sb.stats().raft_applies;
    let r = api
        .put(
            "/v1/txn",
            &json!([{"Service": {"Verb": "get", "Node": "k8s-sync", "Service": {"ID": "web-1"}}}]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["Results"][0]["Service"]["Ports"], one);
    assert_eq!(api.sb.stats().raft_applies, applies);
}
