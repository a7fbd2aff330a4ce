//! ACL mode: tokens from `X-Consul-Token` or `Authorization: Bearer`,
//! 403 with Consul's texts on writes, silent filtering on reads.

use crate::common;

use common::{Api, Resp};
use consul_sandbox::{AclAccess, AclConfig, AclPolicy, AclResource, AclRule, AclToken, Config};
use serde_json::json;

fn acl_config() -> Config {
    Config {
        acl: Some(AclConfig {
            tokens: vec![
                AclToken {
                    accessor_id: "mgmt-accessor".into(),
                    secret_id: "root".into(),
                    policy: AclPolicy::Management,
                },
                AclToken {
                    accessor_id: "sync-accessor".into(),
                    secret_id: "sync-secret".into(),
                    policy: AclPolicy::Rules(vec![
                        AclRule::new(AclResource::Node, "k8s-sync", AclAccess::Write),
                        AclRule::new(AclResource::Service, "web", AclAccess::Write),
                        AclRule::new(AclResource::Service, "", AclAccess::Read),
                        AclRule::new(AclResource::Node, "", AclAccess::Read),
                        AclRule::new(AclResource::Service, "secret", AclAccess::Deny),
                    ]),
                },
            ],
            anonymous_rules: vec![],
        }),
        ..Config::default()
    }
}

fn reg(node: &str, service: &str) -> serde_json::Value {
    json!({"Node": node, "Address": "10.0.0.1", "Service": {"Service": service}})
}

/// Registers `service` on `node` with `token` in `X-Consul-Token`.
async fn register_as(api: &Api, token: &str, node: &str, service: &str) -> Resp {
    api.put_as("/v1/catalog/register", token, reg(node, service))
        .await
}

#[tokio::test]
async fn allowed_writes_with_header_or_bearer() {
    let api = Api::start_with(acl_config()).await;
    let r = register_as(&api, "sync-secret", "k8s-sync", "web").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.header("X-Consul-Default-ACL-Policy").as_deref(),
        Some("deny")
    );
    let r = api
        .send(
            api.http
                .put(api.url("/v1/catalog/register"))
                .bearer_auth("sync-secret")
                .json(&reg("k8s-sync", "web-2")),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(api.sb.stats().raft_applies, 2);
}

#[tokio::test]
async fn denied_writes_are_403_with_consul_text_and_never_reach_raft() {
    let api = Api::start_with(acl_config()).await;
    let r = register_as(&api, "sync-secret", "k8s-sync", "db").await;
    assert_eq!(r.status, 403);
    assert_eq!(
        r.text,
        "Permission denied: token with AccessorID 'sync-accessor' lacks permission 'service:write' on \"db\""
    );
    assert!(!r.text.contains("sync-secret"));

    let r = api
        .put("/v1/catalog/register", &reg("k8s-sync", "web"))
        .await;
    r.assert_status_and_prefix(
        403,
        "Permission denied: anonymous token lacks permission 'node:write' on \"k8s-sync\"",
    );

    let r = register_as(&api, "made-up", "k8s-sync", "web").await;
    assert_eq!((r.status, r.text.as_str()), (403, "ACL not found"));

    // Transactions report ACL denials per op as a 409, like Consul.
    let ops = json!([
        {"Node": {"Verb": "set", "Node": {"Node": "other-node", "Address": "a"}}}
    ]);
    let r = api.put_as("/v1/txn", "sync-secret", ops).await;
    assert_eq!(r.status, 409);
    assert!(
        r.json()["Errors"][0]["What"]
            .as_str()
            .unwrap()
            .contains("'node:write' on \"other-node\"")
    );
    assert_eq!(api.sb.stats().raft_applies, 0);
}

#[tokio::test]
async fn reads_are_filtered_not_refused() {
    let api = Api::start_with(acl_config()).await;
    for svc in ["web", "secret-db"] {
        let r = register_as(&api, "root", "k8s-sync", svc).await;
        assert_eq!(r.status, 200, "{}", r.text);
    }
    let r = api.get_as("/v1/catalog/services", "sync-secret").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json(), json!({"consul": [], "web": []}));
    assert_eq!(
        r.header("X-Consul-Results-Filtered-By-ACLs").as_deref(),
        Some("true")
    );

    let r = api.get("/v1/catalog/services").await;
    assert_eq!(r.json(), json!({}), "the anonymous token sees nothing");

    let r = api.get_as("/v1/catalog/services", "root").await;
    assert_eq!(r.json().as_object().unwrap().len(), 3);
    assert_eq!(r.header("X-Consul-Results-Filtered-By-ACLs"), None);

    let r = api
        .send(
            api.http
                .get(api.url("/v1/catalog/node-services/k8s-sync"))
                .bearer_auth("sync-secret"),
        )
        .await;
    let body = r.json();
    let ids: Vec<&str> = body["Services"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["ID"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec!["web"], "secret-db is filtered out");
    assert_eq!(
        r.header("X-Consul-Results-Filtered-By-ACLs").as_deref(),
        Some("true")
    );
}

#[tokio::test]
async fn service_write_suffices_on_an_unchanged_node() {
    let api = Api::start_with(acl_config()).await;
    let node = json!({"Node": "shared-node", "Address": "10.0.0.9"});
    let r = api.put_as("/v1/catalog/register", "root", node).await;
    assert_eq!(r.status, 200);
    let service = json!({
        "Node": "shared-node", "Address": "10.0.0.9", "Service": {"Service": "web"}
    });
    let r = api
        .put_as("/v1/catalog/register", "sync-secret", service)
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    // Deregistering the service needs only service:write on it.
    let service = json!({"Node": "shared-node", "ServiceID": "web"});
    let r = api
        .put_as("/v1/catalog/deregister", "sync-secret", service)
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    // Deregistering the node needs node:write.
    let node = json!({"Node": "shared-node"});
    let r = api
        .put_as("/v1/catalog/deregister", "sync-secret", node)
        .await;
    assert_eq!(r.status, 403);
}
