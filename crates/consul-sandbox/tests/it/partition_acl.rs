//! ACL objects in a non-default admin partition, as Consul Enterprise
//! keeps them and as consul-k8s's server-acl-init makes them for a
//! cluster whose `-partition` is not `default`: the component auth
//! method, its binding rule and the sync policy written with
//! `?partition=team`, a login with `?partition=team` that makes a token of
//! that partition, and that token acting in `team` only.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Api, ROOT};
use mirra_testkit::consul_login::KubeAuthHost;
use reqwest::Method;
use serde_json::{Value, json};

const METHOD: &str = "consul-k8s-component-auth-method";

/// server-acl-init's sync rules for partition `team`, namespaces on,
/// destination namespace `default`, node `k8s-sync`
/// (`control-plane/subcommand/server-acl-init/rules.go`).
const SYNC_RULES_TEAM: &str = r#"
node "k8s-sync" {
  policy = "write"
}
partition "team" {
  mesh = "write"
  acl = "write"
  namespace "default" {
    policy = "write"
    node_prefix "" {
      policy = "read"
    }
    service_prefix "" {
      policy = "write"
    }
  }
}
"#;

/// kube-sandbox with consul-k8s's ServiceAccounts in the namespace
/// `consul`, and consul-sandbox with Enterprise features and ACLs on.
struct Env {
    kube: KubeAuthHost,
    consul: Api,
}

impl Env {
    /// Both sandboxes, with what partition-init and server-acl-init make
    /// for `-partition=team`.
    async fn with_team() -> Env {
        let env = Env {
            kube: KubeAuthHost::start("consul", &["consul-auth-method", "consul-sync-catalog"])
                .await,
            consul: Api::enterprise_with_acls().await,
        };
        env.set_up_team().await;
        env
    }

    async fn ok(&self, method: Method, path: &str, token: &str, body: Option<Value>) -> Value {
        let r = self.consul.call(method, path, token, body).await;
        assert_eq!(r.status, 200, "{path}: {}", r.text);
        if r.text.is_empty() {
            Value::Null
        } else {
            r.json()
        }
    }

    /// What partition-init and server-acl-init make for `-partition=team`.
    async fn set_up_team(&self) {
        self.ok(
            Method::PUT,
            "/v1/partition",
            ROOT,
            Some(json!({"Name": "team"})),
        )
        .await;
        let config = self.kube.auth_method_config("consul-auth-method").await;
        self.ok(
            Method::PUT,
            "/v1/acl/auth-method?partition=team",
            ROOT,
            Some(json!({"Name": METHOD, "Type": "kubernetes", "Config": config})),
        )
        .await;
        self.ok(
            Method::PUT,
            "/v1/acl/policy?partition=team",
            ROOT,
            Some(json!({"Name": "sync-catalog-policy", "Rules": SYNC_RULES_TEAM})),
        )
        .await;
        self.ok(
            Method::PUT,
            "/v1/acl/binding-rule?partition=team",
            ROOT,
            Some(json!({"AuthMethod": METHOD, "BindType": "policy",
                        "BindName": "sync-catalog-policy",
                        "Selector": "serviceaccount.name==consul-sync-catalog"})),
        )
        .await;
    }

    async fn login(&self, partition: &str) -> common::Resp {
        let bearer = self.kube.token("consul-sync-catalog", json!({})).await;
        self.consul
            .call(
                Method::POST,
                &format!("/v1/acl/login?partition={partition}"),
                "",
                Some(json!({"AuthMethod": METHOD, "BearerToken": bearer})),
            )
            .await
    }
}

fn register(partition: &str) -> Value {
    json!({"Node": "k8s-sync", "Address": "127.0.0.1", "Partition": partition,
           "Service": {"Service": "cart", "ID": "cart-1", "Port": 80,
                       "Namespace": "default", "Partition": partition}})
}

#[tokio::test]
async fn acl_objects_live_in_the_partition_the_request_names() {
    let env = Env::with_team().await;

    // Each list shows its own partition only.
    let names = |v: Value, key: &str| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x[key].as_str().unwrap().to_string())
            .collect()
    };
    let team = env
        .ok(
            Method::GET,
            "/v1/acl/auth-methods?partition=team",
            ROOT,
            None,
        )
        .await;
    assert_eq!(names(team, "Name"), [METHOD]);
    let default = env
        .ok(Method::GET, "/v1/acl/auth-methods", ROOT, None)
        .await;
    assert!(names(default, "Name").is_empty());
    let rules = env
        .ok(Method::GET, "/v1/acl/binding-rules", ROOT, None)
        .await;
    assert_eq!(rules, json!([]));
    let policies = env.ok(Method::GET, "/v1/acl/policies", ROOT, None).await;
    assert_eq!(names(policies, "Name"), ["global-management"]);

    // Names are unique within a partition, not across them.
    env.ok(
        Method::PUT,
        "/v1/acl/policy",
        ROOT,
        Some(json!({"Name": "sync-catalog-policy", "Rules": ""})),
    )
    .await;
    let dup = env
        .consul
        .call(
            Method::PUT,
            "/v1/acl/policy?partition=team",
            ROOT,
            Some(json!({"Name": "sync-catalog-policy", "Rules": ""})),
        )
        .await;
    assert_eq!(dup.status, 400, "{}", dup.text);
    assert!(dup.text.contains("already exists"), "{}", dup.text);
    let by_name = env
        .ok(
            Method::GET,
            "/v1/acl/policy/name/sync-catalog-policy?partition=team",
            ROOT,
            None,
        )
        .await;
    assert!(
        by_name["Rules"]
            .as_str()
            .unwrap()
            .contains("partition \"team\""),
        "{by_name}"
    );

    // A partition that does not exist is refused, and writes nothing.
    let before = env.consul.applies();
    let missing = env
        .consul
        .call(
            Method::PUT,
            "/v1/acl/policy?partition=nowhere",
            ROOT,
            Some(json!({"Name": "p", "Rules": ""})),
        )
        .await;
    assert_ne!(missing.status, 200, "{}", missing.text);
    assert_eq!(env.consul.applies(), before);
}

#[tokio::test]
async fn a_login_in_team_makes_a_token_that_acts_in_team_only() {
    let env = Env::with_team().await;

    // The method is not in `default`: Consul's "not found" there.
    let before = env.consul.applies();
    let wrong = env.login("default").await;
    assert_eq!(wrong.status, 403, "{}", wrong.text);
    assert!(wrong.text.contains("auth method"), "{}", wrong.text);
    assert_eq!(env.consul.applies(), before);

    let r = env.login("team").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(env.consul.applies(), before + 1, "one Raft apply per login");
    let secret = r.json()["SecretID"].as_str().unwrap().to_string();
    let accessor = r.json()["AccessorID"].as_str().unwrap().to_string();

    // The token is listed in `team`, not in `default`.
    let team_tokens = env
        .ok(Method::GET, "/v1/acl/tokens?partition=team", ROOT, None)
        .await;
    assert!(
        team_tokens
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["AccessorID"] == accessor.as_str())
    );
    let default_tokens = env.ok(Method::GET, "/v1/acl/tokens", ROOT, None).await;
    assert!(
        !default_tokens
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["AccessorID"] == accessor.as_str())
    );

    // Top-level `node "k8s-sync"` and the namespace block's rules act in
    // `team`...
    let ok = env
        .consul
        .call(
            Method::PUT,
            "/v1/catalog/register?partition=team",
            &secret,
            Some(register("team")),
        )
        .await;
    assert_eq!(ok.status, 200, "{}", ok.text);
    // ...and not in `default`, where the token has no rule at all.
    let denied = env
        .consul
        .call(
            Method::PUT,
            "/v1/catalog/register",
            &secret,
            Some(register("default")),
        )
        .await;
    assert_eq!(denied.status, 403, "{}", denied.text);
    // Its partition's `acl = "write"` reads `team`'s ACL objects only.
    let in_team = env
        .consul
        .call(
            Method::GET,
            "/v1/acl/policies?partition=team",
            &secret,
            None,
        )
        .await;
    assert_eq!(in_team.status, 200, "{}", in_team.text);
    let in_default = env
        .consul
        .call(Method::GET, "/v1/acl/policies", &secret, None)
        .await;
    assert_eq!(in_default.status, 403, "{}", in_default.text);

    let out = env
        .consul
        .call(Method::POST, "/v1/acl/logout?partition=team", &secret, None)
        .await;
    assert_eq!((out.status, out.text.as_str()), (200, "true"));
}
