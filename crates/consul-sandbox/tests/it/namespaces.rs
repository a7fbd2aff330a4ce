//! Enterprise namespaces and admin partitions (`Config::enterprise`): the
//! `/v1/namespace` and `/v1/partition` endpoints, `?ns=` on catalog,
//! health and txn, namespace-scoped ACL rules, and what Consul CE answers
//! with the switch off. Every write is one Raft apply; refused ones apply
//! nothing.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Api, ROOT, Resp};
use serde_json::{Value, json};

async fn create_ns(api: &Api, name: &str) {
    let r = api
        .put_as("/v1/namespace", ROOT, json!({"Name": name}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
}

async fn register_in(api: &Api, ns: &str, node: &str, id: &str, name: &str) -> Resp {
    api.put(
        &format!("/v1/catalog/register?ns={ns}"),
        &json!({"Node": node, "Address": "10.0.0.1", "Service": {"ID": id, "Service": name}}),
    )
    .await
}

#[tokio::test]
async fn namespace_crud_is_one_apply_per_write() {
    let api = Api::enterprise().await;
    let before = api.applies();
    let r = api
        .put(
            "/v1/namespace",
            &json!({"Name": "team-1", "Description": "Team 1", "Meta": {"owner": "a"}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let created = r.json();
    assert_eq!(created["Name"], "team-1");
    assert_eq!(created["Description"], "Team 1");
    assert_eq!(created["Meta"], json!({"owner": "a"}));
    assert_eq!(created["Partition"], "default");
    assert_eq!(
        created["ACLs"],
        json!({"PolicyDefaults": [], "RoleDefaults": []})
    );
    assert_eq!(api.applies(), before + 1);

    // Creating it again is refused and applies nothing.
    let again = api.put("/v1/namespace", &json!({"Name": "team-1"})).await;
    assert_eq!(again.status, 400, "{}", again.text);
    assert_eq!(api.applies(), before + 1);

    let upd = api
        .put("/v1/namespace/team-1", &json!({"Description": "T1"}))
        .await;
    assert_eq!(upd.status, 200, "{}", upd.text);
    assert_eq!(upd.json()["Description"], "T1");
    assert_eq!(upd.json()["CreateIndex"], created["CreateIndex"]);
    assert!(upd.json()["ModifyIndex"].as_u64() > created["ModifyIndex"].as_u64());
    assert_eq!(api.applies(), before + 2);

    let got = api.get("/v1/namespace/team-1").await;
    assert_eq!(got.status, 200);
    assert_eq!(got.json()["Description"], "T1");
    let list = api.get("/v1/namespaces").await.json();
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["Name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["default", "team-1"]);

    let del = api
        .call(reqwest::Method::DELETE, "/v1/namespace/team-1", "", None)
        .await;
    assert_eq!(del.status, 200, "{}", del.text);
    assert_eq!(api.applies(), before + 3);
    assert_eq!(api.get("/v1/namespace/team-1").await.status, 404);
    let del_default = api
        .call(reqwest::Method::DELETE, "/v1/namespace/default", "", None)
        .await;
    assert_eq!(del_default.status, 400);
    assert_eq!(
        api.applies(),
        before + 3,
        "reads and refusals apply nothing"
    );
}

#[tokio::test]
async fn partitions_are_managed_with_one_apply_per_write() {
    let api = Api::enterprise().await;
    let before = api.applies();
    let r = api.put("/v1/partition", &json!({"Name": "eu"})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["Name"], "eu");
    assert_eq!(api.applies(), before + 1);
    let list = api.get("/v1/partitions").await.json();
    assert_eq!(list.as_array().unwrap().len(), 2);
    let unknown = api
        .put(
            "/v1/catalog/register",
            &json!({"Node": "n1", "Address": "10.0.0.1", "Partition": "nope"}),
        )
        .await;
    assert_eq!(unknown.status, 500);
    assert_eq!(unknown.text, "Partition \"nope\" does not exist");
    assert_eq!(api.applies(), before + 1);
    let nodes = api.get("/v1/catalog/nodes").await.json();
    assert_eq!(nodes[0]["Partition"], "default");
}

#[tokio::test]
async fn malformed_namespace_requests_answer_400_and_change_nothing() {
    let api = Api::enterprise().await;
    let before = api.applies();
    for body in [
        json!({"Name": "bad_name"}),
        json!({"Name": "-x"}),
        json!({"Name": "x".repeat(64)}),
        json!({}),
        json!({"Name": "ok", "Meta": "nope"}),
        json!({"Name": "ok", "ACLs": {"PolicyDefaults": "nope"}}),
    ] {
        let r = api.put("/v1/namespace", &body).await;
        assert_eq!(r.status, 400, "{body}: {}", r.text);
    }
    let r = api.put_raw("/v1/namespace", "{not json").await;
    r.assert_status_and_prefix(400, "Namespace decoding failed");
    let r = api.put("/v1/namespace/a", &json!({"Name": "b"})).await;
    assert_eq!(r.status, 400);
    let r = api.put("/v1/namespace", &json!({"Name": "bad_name"})).await;
    assert_eq!(
        r.text,
        "Invalid Namespace name \"bad_name\": must be a valid DNS hostname label"
    );
    let r = api.get("/v1/catalog/services?ns=bad_name").await;
    assert_eq!(r.status, 400);
    let r = register_in(&api, "bad_name", "n1", "a", "web").await;
    assert_eq!(r.status, 400);
    assert_eq!(api.applies(), before);
    assert_eq!(api.get("/v1/namespaces").await.count(), 1);
}

#[tokio::test]
async fn services_live_in_their_namespace() {
    let api = Api::enterprise().await;
    create_ns(&api, "team").await;
    let before = api.applies();
    assert_eq!(
        register_in(&api, "team", "n1", "db-1", "db").await.status,
        200
    );
    // The body's Service.Namespace wins over ?ns=.
    let r = api
        .put(
            "/v1/catalog/register",
            &json!({"Node": "n1", "Address": "10.0.0.1",
                    "Service": {"ID": "web-1", "Service": "web", "Namespace": "default"}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(api.applies(), before + 2);

    let team = api.get("/v1/catalog/services?ns=team").await.json();
    assert_eq!(team, json!({"db": []}));
    let default = api.get("/v1/catalog/services").await.json();
    assert!(default.get("db").is_none() && default.get("web").is_some());
    let all = api.get("/v1/catalog/services?ns=*").await.json();
    assert!(all.get("db").is_some() && all.get("web").is_some());

    let db = api.get("/v1/catalog/service/db?ns=team").await.json();
    assert_eq!(db[0]["Namespace"], "team");
    assert_eq!(db[0]["Partition"], "default");
    assert_eq!(api.get("/v1/catalog/service/db").await.json(), json!([]));
    let h = api.get("/v1/health/service/db?ns=team").await.json();
    assert_eq!(h[0]["Service"]["Namespace"], "team");
    assert_eq!(h[0]["Node"]["Partition"], "default");

    let ns_team = api.get("/v1/catalog/node-services/n1?ns=team").await.json();
    assert_eq!(ns_team["Services"].as_array().unwrap().len(), 1);
    let ns_all = api.get("/v1/catalog/node-services/n1?ns=*").await.json();
    assert_eq!(ns_all["Services"].as_array().unwrap().len(), 2);

    // An unknown namespace reads as empty and refuses writes.
    assert_eq!(
        api.get("/v1/catalog/services?ns=ghost").await.json(),
        json!({})
    );
    let r = register_in(&api, "ghost", "n1", "x", "x").await;
    assert_eq!(r.status, 500);
    assert_eq!(r.text, "Namespace \"ghost\" does not exist");
    assert_eq!(api.applies(), before + 2);

    // A deregistration from another namespace does not find the instance.
    let r = api
        .put(
            "/v1/catalog/deregister",
            &json!({"Node": "n1", "ServiceID": "db-1"}),
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        api.get("/v1/catalog/services?ns=team").await.json(),
        json!({"db": []})
    );
    let r = api
        .put(
            "/v1/catalog/deregister?ns=team",
            &json!({"Node": "n1", "ServiceID": "db-1"}),
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        api.get("/v1/catalog/services?ns=team").await.json(),
        json!({})
    );
    assert_eq!(api.applies(), before + 4);
}

#[tokio::test]
async fn deleting_a_namespace_removes_its_services_in_the_same_apply() {
    let api = Api::enterprise().await;
    create_ns(&api, "team").await;
    register_in(&api, "team", "n1", "db-1", "db").await;
    let r = api
        .put(
            "/v1/catalog/register?ns=team",
            &json!({"Node": "n1", "Address": "10.0.0.1",
                    "Checks": [{"CheckID": "db-check", "ServiceID": "db-1", "Status": "passing"}]}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    register_in(&api, "default", "n1", "web-1", "web").await;
    let checks = api.get("/v1/health/checks/db?ns=team").await.json();
    assert_eq!(checks[0]["Namespace"], "team");
    let before = api.applies();
    let del = api
        .call(reqwest::Method::DELETE, "/v1/namespace/team", "", None)
        .await;
    assert_eq!(del.status, 200, "{}", del.text);
    assert_eq!(api.applies(), before + 1);
    let stats = api.sb.stats();
    // The agent's own `consul` service and web remain; db and its check went.
    assert_eq!(stats.services, 2);
    assert_eq!(stats.checks, 1);
    let r = register_in(&api, "team", "n1", "db-1", "db").await;
    assert_eq!(r.status, 500, "a deleted namespace takes no writes");
}

#[tokio::test]
async fn txn_ops_carry_their_namespace() {
    let api = Api::enterprise().await;
    create_ns(&api, "team").await;
    let before = api.applies();
    let r = api
        .put(
            "/v1/txn",
            &json!([
                {"Node": {"Verb": "set", "Node": {"Node": "n1", "Address": "10.0.0.1"}}},
                {"Service": {"Verb": "set", "Node": "n1",
                             "Service": {"ID": "db-1", "Service": "db", "Namespace": "team"}}},
            ]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let results = r.json()["Results"].clone();
    assert_eq!(results[0]["Node"]["Partition"], "default");
    assert_eq!(results[1]["Service"]["Namespace"], "team");
    assert_eq!(api.applies(), before + 1);
    let r = api
        .put(
            "/v1/txn",
            &json!([{"Service": {"Verb": "set", "Node": "n1",
                                 "Service": {"ID": "x", "Service": "x", "Namespace": "ghost"}}}]),
        )
        .await;
    assert_eq!(r.status, 409, "{}", r.text);
    assert_eq!(
        r.json()["Errors"][0]["What"],
        "Namespace \"ghost\" does not exist"
    );
    assert_eq!(api.applies(), before + 1);
}

#[tokio::test]
async fn a_txn_ignores_ns_and_partition_in_its_query() {
    let api = Api::enterprise().await;
    create_ns(&api, "team").await;
    let before = api.applies();
    // Consul reads a transaction's tenancy from each op's body only: an
    // op naming none lands in `default` whatever the query says, and an
    // unknown namespace in the query is not even looked at.
    let r = api
        .put(
            "/v1/txn?ns=team&partition=ghost",
            &json!([
                {"Node": {"Verb": "set", "Node": {"Node": "n1", "Address": "10.0.0.1"}}},
                {"Service": {"Verb": "set", "Node": "n1", "Service": {"ID": "db-1", "Service": "db"}}},
            ]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let results = r.json()["Results"].clone();
    assert_eq!(results[0]["Node"]["Partition"], "default");
    assert_eq!(results[1]["Service"]["Namespace"], "default");
    assert_eq!(api.applies(), before + 1);
    let in_team = api.get("/v1/catalog/service/db?ns=team").await.json();
    assert_eq!(in_team, json!([]));
    let in_default = api.get("/v1/catalog/service/db").await.json();
    assert_eq!(in_default[0]["Namespace"], "default");
}

#[tokio::test]
async fn a_service_and_its_check_in_one_txn_are_vetted_in_their_namespace() {
    let api = Api::enterprise_with_acls().await;
    create_ns(&api, "team").await;
    let tok = api
        .secret_with_policy(
            "team-writer",
            r#"node_prefix "" { policy = "write" }
           namespace "team" { service_prefix "" { policy = "write" } }"#,
        )
        .await;
    let before = api.applies();
    let ops = |ns: &str| {
        json!([
            {"Node": {"Verb": "set", "Node": {"Node": "n1", "Address": "10.0.0.1"}}},
            {"Service": {"Verb": "set", "Node": "n1",
                         "Service": {"ID": "db-1", "Service": "db", "Namespace": ns}}},
            {"Check": {"Verb": "set", "Check": {"Node": "n1", "CheckID": "db-1-alive",
                       "Name": "alive", "Status": "passing", "ServiceID": "db-1",
                       "ServiceName": "db", "Namespace": ns}}},
        ])
    };
    let r = api.put_as("/v1/txn", &tok, ops("team")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["Results"][2]["Check"]["Namespace"], "team");
    assert_eq!(api.applies(), before + 1);
    // The same transaction naming `default` is refused whole, service and
    // check alike, and applies nothing.
    let r = api.put_as("/v1/txn", &tok, ops("default")).await;
    assert_eq!(r.status, 409, "{}", r.text);
    let errors = r.json()["Errors"].clone();
    assert!(
        errors
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["What"].as_str().unwrap().contains("Permission denied")),
        "{errors}"
    );
    assert_eq!(errors.as_array().unwrap().len(), 2, "{errors}");
    assert_eq!(api.applies(), before + 1);
}

#[tokio::test]
async fn a_blocked_read_of_one_namespace_is_not_woken_by_another() {
    let api = Api::enterprise().await;
    create_ns(&api, "a").await;
    create_ns(&api, "b").await;
    register_in(&api, "a", "n1", "s-a", "svc-a").await;
    let idx = api.get("/v1/catalog/services?ns=a").await.index();
    let blocked = api.spawn_get(&format!("/v1/catalog/services?ns=a&index={idx}&wait=5m"));
    api.wait_until_blocked(1).await;
    let wakeups = api.sb.stats().blocking_wakeups;
    register_in(&api, "b", "n1", "s-b", "svc-b").await;
    // The write to b is done; a's reader must still be waiting, un-woken.
    assert_eq!(api.sb.stats().blocking_wakeups, wakeups);
    assert_eq!(api.sb.stats().blocking_queries_open, 1);
    register_in(&api, "a", "n1", "s-a2", "svc-a2").await;
    let body = blocked.await.unwrap().json();
    assert!(
        body.get("svc-a2").is_some() && body.get("svc-b").is_none(),
        "{body}"
    );
    assert_eq!(api.sb.stats().blocking_wakeups, wakeups + 1);
}

#[tokio::test]
async fn ce_mode_answers_as_consul_ce() {
    let api = Api::start().await;
    assert_eq!(api.get("/v1/namespaces").await.status, 404);
    assert_eq!(
        api.put("/v1/namespace", &json!({"Name": "x"})).await.status,
        404
    );
    assert_eq!(api.get("/v1/partitions").await.status, 404);
    let r = api.get("/v1/catalog/services?ns=team").await;
    assert_eq!(r.status, 400);
    assert_eq!(api.get("/v1/catalog/services?ns=default").await.status, 200);
    // Bodies' Namespace fields are ignored and answers carry none.
    let r = api
        .put(
            "/v1/catalog/register",
            &json!({"Node": "n1", "Address": "10.0.0.1",
                    "Service": {"Service": "web", "Namespace": "team"}}),
        )
        .await;
    assert_eq!(r.status, 200);
    let s = api.get("/v1/catalog/service/web").await.json();
    assert!(s[0].get("Namespace").is_none() && s[0].get("Partition").is_none());
}

#[tokio::test]
async fn rules_inside_a_namespace_block_grant_only_there() {
    let api = Api::enterprise_with_acls().await;
    create_ns(&api, "team").await;
    let before = api.applies();
    let tok = api
        .secret_with_policy(
            "team-db",
            r#"node_prefix "" { policy = "write" }
           namespace "team" { service "db" { policy = "write" } }
           service "web" { policy = "write" }"#,
        )
        .await;
    let reg = |ns: &'static str, name: &'static str| {
        let api = &api;
        let tok = tok.clone();
        async move {
            api.put_as(
                &format!("/v1/catalog/register?ns={ns}"),
                &tok,
                json!({"Node": "n1", "Address": "10.0.0.1",
                            "Service": {"ID": format!("{name}-{ns}"), "Service": name}}),
            )
            .await
        }
    };
    let after_token = api.applies();
    assert_eq!(after_token, before + 2);
    assert_eq!(reg("team", "db").await.status, 200);
    assert_eq!(
        reg("default", "db").await.status,
        403,
        "db is granted in team only"
    );
    assert_eq!(
        reg("default", "web").await.status,
        200,
        "top-level: own namespace"
    );
    assert_eq!(
        reg("team", "web").await.status,
        403,
        "top-level rules stay in default"
    );
    assert_eq!(api.applies(), after_token + 2, "denials apply nothing");

    // Reads are filtered the same way.
    let r = api.get_as("/v1/catalog/services?ns=*", &tok).await;
    let body = r.json();
    assert!(
        body.get("db").is_some() && body.get("web").is_some(),
        "{body}"
    );
    assert!(body.get("consul").is_none());
    assert_eq!(
        r.header("X-Consul-Results-Filtered-By-ACLs").as_deref(),
        Some("true")
    );
}

#[tokio::test]
async fn namespace_management_needs_operator_write() {
    let api = Api::enterprise_with_acls().await;
    let reader = api
        .secret_with_policy("ns-reader", r#"namespace "team" { policy = "read" }"#)
        .await;
    let op = api.secret_with_policy("op", r#"operator = "write""#).await;
    let before = api.applies();
    let r = api
        .put_as("/v1/namespace", &reader, json!({"Name": "team"}))
        .await;
    assert_eq!(r.status, 403, "{}", r.text);
    assert!(
        r.text.contains("lacks permission 'operator:write'"),
        "{}",
        r.text
    );
    assert_eq!(api.applies(), before);
    let r = api
        .put_as("/v1/namespace", &op, json!({"Name": "team"}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = api
        .put_as("/v1/namespace", &op, json!({"Name": "other"}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(api.applies(), before + 2);
    // The reader sees its namespace only.
    let r = api.get_as("/v1/namespace/team", &reader).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = api.get_as("/v1/namespace/other", &reader).await;
    assert_eq!(r.status, 403, "{}", r.text);
    let list = api.get_as("/v1/namespaces", &reader).await.json();
    assert_eq!(list.as_array().unwrap().len(), 1);
    assert_eq!(list[0]["Name"], "team");

    // Policy links resolve by name to the policy's ID.
    let pol = api.get_as("/v1/acl/policy/name/op", ROOT).await.json();
    let r = api
        .put_as(
            "/v1/namespace/team",
            ROOT,
            json!({"ACLs": {"PolicyDefaults": [{"Name": "op"}]}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["ACLs"]["PolicyDefaults"][0]["ID"], pol["ID"]);
    let r = api
        .put_as(
            "/v1/namespace/team",
            ROOT,
            json!({"ACLs": {"PolicyDefaults": [{"Name": "missing"}]}}),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text);
}

/// Consul Enterprise 1.11+ allows no `operator` rule inside a partition;
/// consul-k8s's server-acl-init therefore lets sync-catalog create its
/// mirrored namespaces with a `namespace_prefix` block's `policy = "write"`
/// and link the cross-namespace policy with `acl = "write"` in the
/// partition block. The sandbox honours exactly those, and nothing wider.
#[tokio::test]
async fn a_namespace_policy_write_in_a_partition_manages_the_namespaces_it_covers() {
    let api = Api::enterprise_with_acls().await;
    let chart = api
        .secret_with_policy(
            "sync-catalog",
            r#"
        node "k8s-sync" { policy = "write" }
        partition "default" {
          mesh = "write"
          acl = "write"
          namespace_prefix "k8s-" {
            policy = "write"
            service_prefix "" { policy = "write" }
          }
        }"#,
        )
        .await;
    let no_acl = api
        .secret_with_policy(
            "ns-only",
            r#"partition "default" { namespace_prefix "k8s-" { policy = "write" } }"#,
        )
        .await;
    api.secret_with_policy(
        "cross-namespace-policy",
        r#"service_prefix "" { policy = "read" }"#,
    )
    .await;
    let before = api.applies();
    let put = |token: String, body: Value| {
        let api = &api;
        async move { api.put_as("/v1/namespace", &token, body).await }
    };
    let linked = json!({"Name": "k8s-shop",
        "ACLs": {"PolicyDefaults": [{"Name": "cross-namespace-policy"}]}});
    let r = put(chart.clone(), linked).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.json()["ACLs"]["PolicyDefaults"][0]["Name"],
        "cross-namespace-policy"
    );

    // Outside the prefix: Consul's operator denial, nothing applied.
    let r = put(chart.clone(), json!({"Name": "team"})).await;
    assert_eq!(r.status, 403, "{}", r.text);
    assert!(
        r.text.contains("lacks permission 'operator:write'"),
        "{}",
        r.text
    );

    // Inside the prefix without `acl`: creating is allowed, linking a
    // policy is not.
    let r = put(
        no_acl.clone(),
        json!({"Name": "k8s-other",
        "ACLs": {"PolicyDefaults": [{"Name": "cross-namespace-policy"}]}}),
    )
    .await;
    assert_eq!(r.status, 403, "{}", r.text);
    assert!(
        r.text.contains("lacks permission 'acl:write'"),
        "{}",
        r.text
    );
    let r = put(no_acl.clone(), json!({"Name": "k8s-other"})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        api.applies(),
        before + 2,
        "only the two allowed creations apply"
    );

    // The same block scoped to another partition grants nothing here.
    let elsewhere = api
        .secret_with_policy(
            "elsewhere",
            r#"partition "other" { namespace_prefix "" { policy = "write" } }"#,
        )
        .await;
    let r = put(elsewhere, json!({"Name": "k8s-third"})).await;
    assert_eq!(r.status, 403, "{}", r.text);

    // Deleting follows the same rule.
    let r = api
        .call(
            reqwest::Method::DELETE,
            "/v1/namespace/k8s-other",
            &chart,
            None,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
}

fn names(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|n| n["Name"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn namespaces_belong_to_their_partition() {
    let api = Api::enterprise().await;
    let before = api.applies();
    assert_eq!(
        api.put("/v1/partition", &json!({"Name": "eu"}))
            .await
            .status,
        200
    );
    // A new partition has its own default namespace.
    let d = api.get("/v1/namespace/default?partition=eu").await;
    assert_eq!(d.status, 200, "{}", d.text);
    assert_eq!(d.json()["Partition"], "eu");
    let r = api
        .put("/v1/namespace?partition=eu", &json!({"Name": "team"}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["Partition"], "eu");
    // The body's Partition places it too.
    let r = api
        .put("/v1/namespace", &json!({"Name": "ops", "Partition": "EU"}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["Partition"], "eu");
    assert_eq!(api.applies(), before + 3);

    assert_eq!(api.get("/v1/namespace/team").await.status, 404);
    assert_eq!(
        names(&api.get("/v1/namespaces?partition=eu").await.json()),
        ["default", "ops", "team"]
    );
    assert_eq!(names(&api.get("/v1/namespaces").await.json()), ["default"]);
    // The same name in the default partition is another namespace.
    let r = api.put("/v1/namespace", &json!({"Name": "team"})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["Partition"], "default");
    assert_eq!(api.applies(), before + 4);

    // Deleting team in eu leaves team in default.
    let del = api
        .call(
            reqwest::Method::DELETE,
            "/v1/namespace/team?partition=eu",
            "",
            None,
        )
        .await;
    assert_eq!(del.status, 200, "{}", del.text);
    assert_eq!(api.get("/v1/namespace/team?partition=eu").await.status, 404);
    assert_eq!(api.get("/v1/namespace/team").await.status, 200);

    // A deleted partition takes its namespaces with it, in one apply.
    let before_del = api.applies();
    let del = api
        .call(reqwest::Method::DELETE, "/v1/partition/eu", "", None)
        .await;
    assert_eq!(del.status, 200, "{}", del.text);
    assert_eq!(api.applies(), before_del + 1);
    assert_eq!(
        api.put("/v1/partition", &json!({"Name": "eu"}))
            .await
            .status,
        200
    );
    assert_eq!(
        names(&api.get("/v1/namespaces?partition=eu").await.json()),
        ["default"]
    );
}

#[tokio::test]
async fn unknown_or_malformed_partitions_on_namespace_requests_change_nothing() {
    let api = Api::enterprise().await;
    let before = api.applies();
    let unknown = api
        .put("/v1/namespace?partition=nope", &json!({"Name": "team"}))
        .await;
    assert_eq!(unknown.status, 500);
    assert_eq!(unknown.text, "Partition \"nope\" does not exist");
    let unknown = api
        .put("/v1/namespace/team", &json!({"Partition": "nope"}))
        .await;
    assert_eq!(unknown.status, 500);
    for bad in ["a_b", "-x", "%2A"] {
        let r = api
            .put(
                &format!("/v1/namespace?partition={bad}"),
                &json!({"Name": "team"}),
            )
            .await;
        assert_eq!(r.status, 400, "{bad}: {}", r.text);
        assert!(r.text.contains("Invalid Partition name"), "{}", r.text);
        assert_eq!(
            api.get(&format!("/v1/namespaces?partition={bad}"))
                .await
                .status,
            400
        );
    }
    let r = api
        .put("/v1/namespace", &json!({"Name": "team", "Partition": 7}))
        .await;
    assert_eq!(r.status, 400, "{}", r.text);
    let del = api
        .call(
            reqwest::Method::DELETE,
            "/v1/namespace/default?partition=nope",
            "",
            None,
        )
        .await;
    assert_eq!(del.status, 400, "the default namespace is never deleted");
    let del = api
        .call(
            reqwest::Method::DELETE,
            "/v1/namespace/team?partition=nope",
            "",
            None,
        )
        .await;
    assert_eq!(del.status, 404, "{}", del.text);
    assert_eq!(
        api.get("/v1/namespace/default?partition=nope").await.status,
        404
    );
    assert_eq!(
        api.get("/v1/namespaces?partition=nope").await.json(),
        json!([])
    );
    assert_eq!(api.applies(), before, "refusals apply nothing");
    assert_eq!(names(&api.get("/v1/namespaces").await.json()), ["default"]);
}

#[tokio::test]
async fn partition_blocks_grant_namespace_reads_only_in_that_partition() {
    let api = Api::enterprise_with_acls().await;
    let op = api.secret_with_policy("op", r#"operator = "write""#).await;
    for path in [
        "/v1/partition",
        "/v1/namespace",
        "/v1/namespace?partition=eu",
    ] {
        let body = if path == "/v1/partition" {
            json!({"Name": "eu"})
        } else {
            json!({"Name": "team"})
        };
        let r = api.put_as(path, &op, body).await;
        assert_eq!(r.status, 200, "{path}: {}", r.text);
    }
    let eu = api
        .secret_with_policy(
            "eu-team",
            r#"partition "eu" { namespace "team" { service_prefix "" { policy = "read" } } }"#,
        )
        .await;
    let plain = api
        .secret_with_policy(
            "team",
            r#"namespace "team" { service_prefix "" { policy = "read" } }"#,
        )
        .await;
    let get = |path: &'static str, tok: String| {
        let api = &api;
        async move { api.get_as(path, &tok).await }
    };
    assert_eq!(
        get("/v1/namespace/team?partition=eu", eu.clone())
            .await
            .status,
        200
    );
    assert_eq!(get("/v1/namespace/team", eu.clone()).await.status, 403);
    assert_eq!(get("/v1/namespace/team", plain.clone()).await.status, 200);
    assert_eq!(
        get("/v1/namespace/team?partition=eu", plain.clone())
            .await
            .status,
        403,
        "rules outside a partition block stay in the token's partition"
    );
    assert_eq!(
        names(&get("/v1/namespaces?partition=eu", eu.clone()).await.json()),
        ["team"]
    );
    assert_eq!(
        get("/v1/namespaces?partition=eu", plain).await.json(),
        json!([])
    );
}
