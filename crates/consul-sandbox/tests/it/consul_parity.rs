//! Answers that must match Consul's: `/v1/agent/self` `Stats`, the
//! `health/state` and `health/checks` reads, consistency modes and their
//! conflicts, and the order in which a request's token is taken.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::Api;
use consul_sandbox::{AclAccess, AclConfig, AclPolicy, AclResource, AclRule, AclToken, Config};
use serde_json::json;

#[tokio::test]
async fn agent_self_reports_consul_raft_serf_and_runtime_stats() {
    let api = Api::start().await;
    api.register("n1", "web-1", "web", 80).await;
    let r = api.get("/v1/agent/self").await;
    assert_eq!(r.status, 200, "{}", r.text);
    let stats = &r.json()["Stats"];
    let consul = &stats["consul"];
    assert_eq!(consul["server"], "true");
    assert_eq!(consul["leader"], "true");
    assert_eq!(consul["leader_addr"], "127.0.0.1:8300");
    assert_eq!(consul["bootstrap"], "false");
    assert_eq!(consul["known_datacenters"], "1");
    assert_eq!(consul["acl"], "disabled");
    assert_eq!(stats["raft"]["state"], "Leader");
    // Bootstrap entry plus one register.
    assert_eq!(stats["raft"]["applied_index"], "2");
    assert_eq!(stats["serf_lan"]["members"], "1");
    assert!(stats["runtime"]["os"].is_string());

    let acl = Api::start_with(Config {
        acl: Some(AclConfig {
            tokens: vec![AclToken {
                accessor_id: "a".into(),
                secret_id: "root".into(),
                policy: AclPolicy::Management,
            }],
            ..AclConfig::default()
        }),
        ..Config::default()
    })
    .await;
    let r = acl.get_as("/v1/agent/self", "root").await;
    assert_eq!(r.json()["Stats"]["consul"]["acl"], "enabled");
}

async fn with_checks(api: &Api) {
    let body = json!({
        "Node": "n1", "Address": "10.0.0.1",
        "Service": {"ID": "web-1", "Service": "web"},
        "Checks": [
            {"CheckID": "web-ok", "Name": "web", "Status": "passing", "ServiceID": "web-1"},
            {"CheckID": "node-bad", "Name": "disk", "Status": "critical"},
        ],
    });
    let r = api.put("/v1/catalog/register", &body).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let body = json!({
        "Node": "n2", "Address": "10.0.0.2",
        "Service": {"ID": "db-1", "Service": "db"},
        "Check": {"CheckID": "db-warn", "Name": "db", "Status": "warning", "ServiceID": "db-1"},
    });
    let r = api.put("/v1/catalog/register", &body).await;
    assert_eq!(r.status, 200, "{}", r.text);
}

fn check_ids(v: &serde_json::Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|c| c["CheckID"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn health_state_lists_checks_by_state() {
    let api = Api::start().await;
    with_checks(&api).await;
    let r = api.get("/v1/health/state/critical").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(check_ids(&r.json()), vec!["node-bad"]);
    let critical_index = r.index();
    let r = api.get("/v1/health/state/passing").await;
    // The sandbox's own serfHealth check passes too.
    assert_eq!(check_ids(&r.json()), vec!["serfHealth", "web-ok"]);
    let r = api.get("/v1/health/state/any").await;
    assert_eq!(r.count(), 4);
    let r = api.get("/v1/health/state/warning").await;
    assert_eq!(check_ids(&r.json()), vec!["db-warn"]);
    assert_eq!(r.index(), critical_index);

    let r = api.get("/v1/health/state/").await;
    assert_eq!((r.status, r.text.as_str()), (400, "Missing check state"));
    let r = api.get("/v1/health/state/bogus").await;
    assert_eq!(r.status, 500, "{}", r.text);

    // A blocking query on the checks table wakes on a check change.
    let url = api.url(&format!(
        "/v1/health/state/critical?index={critical_index}&wait=30s"
    ));
    let http = api.http.clone();
    let waiter = tokio::spawn(async move { http.get(url).send().await.unwrap() });
    let r = api
        .put(
            "/v1/catalog/register",
            &json!({"Node": "n2", "Address": "10.0.0.2",
                    "Check": {"CheckID": "db-warn", "Name": "db", "Status": "critical", "ServiceID": "db-1"}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let woke = waiter.await.unwrap();
    let idx: u64 = woke.headers()["X-Consul-Index"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(idx > critical_index);
    let body: serde_json::Value = woke.json().await.unwrap();
    assert_eq!(check_ids(&body), vec!["node-bad", "db-warn"]);
}

#[tokio::test]
async fn health_checks_lists_a_services_checks() {
    let api = Api::start().await;
    with_checks(&api).await;
    let r = api.get("/v1/health/checks/web").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(check_ids(&r.json()), vec!["web-ok"]);
    let r = api.get("/v1/health/checks/nothing").await;
    assert_eq!((r.status, r.json()), (200, json!([])));
    let r = api.get("/v1/health/checks/").await;
    assert_eq!((r.status, r.text.as_str()), (400, "Missing service name"));
    assert_eq!(api.sb.stats().requests_for("GET /v1/health/checks"), 3);
}

#[tokio::test]
async fn effective_consistency_follows_the_mode_and_conflicts_are_refused() {
    let api = Api::start().await;
    api.register("n1", "web-1", "web", 80).await;
    for (query, mode) in [
        ("", "leader"),
        ("?stale", "stale"),
        ("?consistent", "consistent"),
    ] {
        let r = api.get(&format!("/v1/catalog/service/web{query}")).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(
            r.header("X-Consul-Effective-Consistency").as_deref(),
            Some(mode),
            "{query}"
        );
    }
    let r = api.get("/v1/health/service/web?stale&consistent").await;
    assert_eq!(
        (r.status, r.text.as_str()),
        (
            400,
            "Cannot specify ?stale with ?consistent, conflicting semantics."
        )
    );
    let r = api.get("/v1/catalog/services?consistent&cached").await;
    assert_eq!(
        (r.status, r.text.as_str()),
        (
            400,
            "Cannot specify ?cached with ?consistent, conflicting semantics."
        )
    );
}

#[tokio::test]
async fn token_precedence_is_query_then_header_then_bearer() {
    let api = Api::start_with(Config {
        acl: Some(AclConfig {
            tokens: vec![
                AclToken {
                    accessor_id: "writer".into(),
                    secret_id: "writer-secret".into(),
                    policy: AclPolicy::Rules(vec![
                        AclRule::new(AclResource::Node, "", AclAccess::Write),
                        AclRule::new(AclResource::Service, "", AclAccess::Write),
                    ]),
                },
                AclToken {
                    accessor_id: "reader".into(),
                    secret_id: "reader-secret".into(),
                    policy: AclPolicy::Rules(vec![AclRule::new(
                        AclResource::Node,
                        "",
                        AclAccess::Read,
                    )]),
                },
            ],
            ..AclConfig::default()
        }),
        ..Config::default()
    })
    .await;
    // A new node each time: re-registering an unchanged node needs no
    // node:write in Consul.
    let body = |n: u8| json!({"Node": format!("n{n}"), "Address": "10.0.0.1"});
    // Node, query, X-Consul-Token and bearer token of each register, and
    // the answer.
    for (n, query, header, bearer, status) in [
        // ?token wins over the header.
        (1, "?token=writer-secret", Some("reader-secret"), None, 200),
        (2, "?token=reader-secret", Some("writer-secret"), None, 403),
        // The header wins over the bearer token.
        (3, "", Some("reader-secret"), Some("writer-secret"), 403),
        (4, "", None, Some("writer-secret"), 200),
    ] {
        let mut req = api
            .http
            .put(api.url(&format!("/v1/catalog/register{query}")));
        if let Some(token) = header {
            req = req.header("X-Consul-Token", token);
        }
        if let Some(token) = bearer {
            req = req.bearer_auth(token);
        }
        let r = api.send(req.json(&body(n))).await;
        assert_eq!(r.status, status, "{}", r.text);
    }
    assert_eq!(api.sb.stats().raft_applies, 2);
}
