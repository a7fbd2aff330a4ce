//! ACLs managed over HTTP: policies (HCL and JSON rules), roles and tokens
//! made with the initial management token, enforced on catalog, health,
//! txn and agent endpoints; every ACL write is one Raft apply, refused
//! ones apply nothing.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Api, ROOT};
use consul_sandbox::{AclDefaultPolicy, Config};
use proptest::prelude::*;
use serde_json::json;

async fn acl_api(default: AclDefaultPolicy) -> Api {
    Api::start_with(Config {
        acl_default_policy: Some(default),
        acl_initial_management_token: Some(ROOT.into()),
        ..Config::default()
    })
    .await
}

#[tokio::test]
async fn policy_crud_counts_one_apply_per_write() {
    let api = acl_api(AclDefaultPolicy::Deny).await;
    let before = api.sb.stats().raft_applies;
    let r = api.put_as("/v1/acl/policy", ROOT, json!({"Name": "sync", "Description": "d", "Rules": "service_prefix \"\" { policy = \"read\" }"})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let p = r.json();
    let id = p["ID"].as_str().unwrap().to_string();
    assert_eq!(p["Name"], "sync");
    assert_eq!(p["CreateIndex"], p["ModifyIndex"]);
    let r = api.get_as(&format!("/v1/acl/policy/{id}"), ROOT).await;
    assert_eq!(
        r.json()["Rules"],
        "service_prefix \"\" { policy = \"read\" }"
    );
    let r = api.get_as("/v1/acl/policy/name/sync", ROOT).await;
    assert_eq!(r.json()["ID"], id.as_str());
    let r = api
        .put_as(
            &format!("/v1/acl/policy/{id}"),
            ROOT,
            json!({"Name": "sync", "Rules": "{\"node_prefix\": {\"\": {\"policy\": \"write\"}}}"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r.json()["ModifyIndex"].as_u64() > p["CreateIndex"].as_u64());
    let r = api.get_as("/v1/acl/policies", ROOT).await;
    let names: Vec<&str> = r
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["Name"].as_str().unwrap())
        .map(|s| if s == "sync" { "sync" } else { "other" })
        .collect();
    assert_eq!(names.len(), 2, "global-management and sync");
    let r = api
        .call(
            reqwest::Method::DELETE,
            &format!("/v1/acl/policy/{id}"),
            ROOT,
            None,
        )
        .await;
    assert_eq!((r.status, r.text.as_str()), (200, "true"));
    let r = api.get_as(&format!("/v1/acl/policy/{id}"), ROOT).await;
    assert_eq!((r.status, r.text.as_str()), (403, "ACL not found"));
    assert_eq!(api.sb.stats().raft_applies, before + 3);
}

#[tokio::test]
async fn bad_acl_input_answers_like_consul_and_changes_nothing() {
    let api = acl_api(AclDefaultPolicy::Deny).await;
    let before = api.sb.stats();
    let r = api
        .put_as(
            "/v1/acl/policy",
            ROOT,
            json!({"Name": "p", "Rules": "service \"web\" { policy = \"bogus\" }"}),
        )
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(
        r.text,
        "Invalid Policy: failed to parse rules: Invalid service policy: &acl.ServiceRule{Name:\"web\", Policy:\"bogus\", Intentions:\"\"}"
    );
    let r = api
        .put_as(
            "/v1/acl/policy",
            ROOT,
            json!({"Name": "p", "Rules": "service \"web\" {"}),
        )
        .await;
    r.assert_status_and_prefix(
        400,
        "Invalid Policy: failed to parse rules: Failed to parse ACL rules: At 1:",
    );
    let r = api
        .put_as(
            "/v1/acl/token",
            ROOT,
            json!({"Policies": [{"ID": "6b2f5d0c-0000-0000-0000-000000000000"}]}),
        )
        .await;
    assert_eq!(
        (r.status, r.text.as_str()),
        (
            400,
            "cannot find policy \"6b2f5d0c-0000-0000-0000-000000000000\""
        )
    );
    let r = api
        .get_as("/v1/acl/policy/6b2f5d0c-0000-0000-0000-000000000000", ROOT)
        .await;
    assert_eq!((r.status, r.text.as_str()), (403, "ACL not found"));
    // No token: the anonymous token lacks acl:write.
    let r = api
        .put_as("/v1/acl/policy", "", json!({"Name": "q", "Rules": ""}))
        .await;
    assert_eq!(r.status, 403);
    assert_eq!(
        r.text,
        "Permission denied: anonymous token lacks permission 'acl:write'. The anonymous token is used implicitly when a request does not specify a token."
    );
    let r = api
        .put_as(
            "/v1/acl/policy",
            "no-such-secret",
            json!({"Name": "q", "Rules": ""}),
        )
        .await;
    assert_eq!((r.status, r.text.as_str()), (403, "ACL not found"));
    let r = api.get_as("/v1/acl/token/self", "").await;
    assert_eq!((r.status, r.text.as_str()), (403, "ACL not found"));
    let after = api.sb.stats();
    assert_eq!(after.raft_applies, before.raft_applies);
    assert_eq!(after.raft_index, before.raft_index);
    assert_eq!(api.get_as("/v1/acl/policies", ROOT).await.count(), 1);
    assert_eq!(api.get_as("/v1/acl/tokens", ROOT).await.count(), 1);
}

#[tokio::test]
async fn rules_are_enforced_on_catalog_health_txn_and_agent() {
    let api = acl_api(AclDefaultPolicy::Deny).await;
    let rules = r#"
        node "k8s-sync" { policy = "write" }
        node_prefix "" { policy = "read" }
        service_prefix "" { policy = "read" }
        service "web" { policy = "write" }
        service_prefix "secret" { policy = "deny" }
    "#;
    let (accessor, secret) = api.token_with_policy("sync", rules).await;
    let r = api.get_as("/v1/acl/token/self", &secret).await;
    assert_eq!(r.json()["AccessorID"], accessor.as_str());
    assert_eq!(r.json()["Policies"][0]["Name"], "sync");

    let reg = |node: &str, svc: &str| json!({"Node": node, "Address": "10.0.0.1", "Service": {"Service": svc}});
    let applies = api.sb.stats().raft_applies;
    let r = api
        .put_as("/v1/catalog/register", &secret, reg("k8s-sync", "web"))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = api
        .put_as("/v1/catalog/register", &secret, reg("k8s-sync", "db"))
        .await;
    assert_eq!(r.status, 403);
    assert_eq!(
        r.text,
        format!(
            "Permission denied: token with AccessorID '{accessor}' lacks permission 'service:write' on \"db\""
        )
    );
    let r = api
        .put_as("/v1/catalog/register", &secret, reg("other", "web"))
        .await;
    assert_eq!(
        r.text,
        format!(
            "Permission denied: token with AccessorID '{accessor}' lacks permission 'node:write' on \"other\""
        )
    );
    let r = api.put_as("/v1/txn", &secret, json!([{"Service": {"Verb": "set", "Node": "k8s-sync", "Service": {"ID": "db-1", "Service": "db"}}}])).await;
    // Consul reports a denied transaction operation as a 409 with errors.
    assert_eq!(r.status, 409, "{}", r.text);
    assert_eq!(
        r.json()["Errors"][0]["What"],
        format!(
            "Permission denied: token with AccessorID '{accessor}' lacks permission 'service:write' on \"db\""
        )
    );
    assert_eq!(api.sb.stats().raft_applies, applies + 1);

    // Reads: what the token may not read is filtered, and said so.
    let r = api
        .put_as("/v1/catalog/register", ROOT, reg("k8s-sync", "secret-db"))
        .await;
    assert_eq!(r.status, 200);
    let r = api.get_as("/v1/catalog/services", &secret).await;
    assert!(r.json().get("secret-db").is_none());
    assert!(r.json().get("web").is_some());
    assert_eq!(
        r.header("X-Consul-Results-Filtered-By-ACLs").as_deref(),
        Some("true")
    );
    let r = api.get_as("/v1/health/service/secret-db", &secret).await;
    assert_eq!(r.json(), json!([]));
    assert_eq!(
        r.header("X-Consul-Results-Filtered-By-ACLs").as_deref(),
        Some("true")
    );
    let r = api.get_as("/v1/health/checks/secret-db", &secret).await;
    assert_eq!(
        r.header("X-Consul-Results-Filtered-By-ACLs").as_deref(),
        Some("true")
    );
    let r = api.get_as("/v1/catalog/services", ROOT).await;
    assert!(r.json().get("secret-db").is_some());
    assert_eq!(r.header("X-Consul-Results-Filtered-By-ACLs"), None);
    // The anonymous token sees nothing under deny.
    let r = api.get_as("/v1/catalog/services", "").await;
    assert_eq!(r.json(), json!({}));
    let r = api.get_as("/v1/agent/self", "").await;
    assert_eq!(r.status, 403);
    let r = api.get_as("/v1/agent/self", &secret).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["Stats"]["consul"]["acl"], "enabled");
    assert_eq!(
        r.header("X-Consul-Default-ACL-Policy").as_deref(),
        Some("deny")
    );
}

#[tokio::test]
async fn roles_link_policies_and_deleting_a_token_revokes_it() {
    let api = acl_api(AclDefaultPolicy::Deny).await;
    let p = api
        .put_as(
            "/v1/acl/policy",
            ROOT,
            json!({"Name": "nodes", "Rules": "node_prefix \"\" { policy = \"write\" }"}),
        )
        .await;
    let role = api
        .put_as(
            "/v1/acl/role",
            ROOT,
            json!({"Name": "r1", "Policies": [{"Name": "nodes"}]}),
        )
        .await;
    assert_eq!(role.status, 200, "{}", role.text);
    assert_eq!(role.json()["Policies"][0]["ID"], p.json()["ID"]);
    let role_id = role.json()["ID"].as_str().unwrap().to_string();
    assert_eq!(
        api.get_as(&format!("/v1/acl/role/{role_id}"), ROOT)
            .await
            .json()["Name"],
        "r1"
    );
    let t = api
        .put_as(
            "/v1/acl/token",
            ROOT,
            json!({"SecretID": "via-role", "Roles": [{"ID": role_id}]}),
        )
        .await;
    assert_eq!(t.status, 200, "{}", t.text);
    let accessor = t.json()["AccessorID"].as_str().unwrap().to_string();
    let r = api
        .put_as(
            "/v1/catalog/register",
            "via-role",
            json!({"Node": "n1", "Address": "10.0.0.1"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(api.get_as("/v1/acl/roles", ROOT).await.count(), 1);
    let r = api
        .call(
            reqwest::Method::DELETE,
            &format!("/v1/acl/token/{accessor}"),
            ROOT,
            None,
        )
        .await;
    assert_eq!(r.status, 200);
    let r = api
        .put_as(
            "/v1/catalog/register",
            "via-role",
            json!({"Node": "n2", "Address": "10.0.0.1"}),
        )
        .await;
    assert_eq!((r.status, r.text.as_str()), (403, "ACL not found"));
}

#[tokio::test]
async fn default_allow_lets_unmatched_requests_through_and_acls_off_answers_401() {
    let api = acl_api(AclDefaultPolicy::Allow).await;
    let r = api
        .put_as(
            "/v1/catalog/register",
            "",
            json!({"Node": "n1", "Address": "10.0.0.1"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.header("X-Consul-Default-ACL-Policy").as_deref(),
        Some("allow")
    );
    let (_, secret) = api
        .token_with_policy("no-n2", "node \"n2\" { policy = \"deny\" }")
        .await;
    let r = api
        .put_as(
            "/v1/catalog/register",
            &secret,
            json!({"Node": "n2", "Address": "10.0.0.1"}),
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.text);

    let off = Api::start().await;
    let r = off.get_as("/v1/acl/policies", "").await;
    assert_eq!((r.status, r.text.as_str()), (401, "ACL support disabled"));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    /// Any rule text: a policy is stored (200, one apply) or refused (400,
    /// nothing applied); the server never fails otherwise.
    #[test]
    fn arbitrary_rule_text_is_stored_or_refused(rules in prop_oneof![
        ".{0,40}",
        "(node|service|node_prefix|service_prefix|namespace|key) \"[a-z]{0,3}\" \\{ policy = \"(read|write|deny|x)\" \\}\\}?",
        "\\{\"(node|service)\": \\{\"[a-z]{0,2}\": \\{\"policy\": \"(read|list|write)\"\\}\\}\\}?",
    ]) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let api = acl_api(AclDefaultPolicy::Deny).await;
            let before = api.sb.stats().raft_applies;
            let r = api.put_as("/v1/acl/policy", ROOT, json!({"Name": "p", "Rules": rules})).await;
            let after = api.sb.stats().raft_applies;
            let n = api.get_as("/v1/acl/policies", ROOT).await.count();
            match r.status {
                200 => { assert_eq!(after, before + 1); assert_eq!(n, 2); }
                400 => {
                    assert!(r.text.starts_with("Invalid Policy: failed to parse rules: "), "{}", r.text);
                    assert_eq!(after, before);
                    assert_eq!(n, 1);
                }
                s => panic!("unexpected {s}: {}", r.text),
            }
        });
    }
}
