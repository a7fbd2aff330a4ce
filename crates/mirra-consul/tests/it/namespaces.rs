//! Consul Enterprise namespaces end to end over real HTTP, against
//! consul-sandbox in Enterprise mode: creating a namespace with a policy
//! link, a client bound to one namespace writing (register, deregister and
//! transactions, as the catalog controller sends them) and reading there
//! only, and ACL rules scoped to a namespace.
//!
//! Costs are asserted from the sandbox's counters (Raft applies, requests
//! per endpoint), never from time.

// Test helpers outside #[test] functions unwrap too: a failed fixture must
// stop the test, and clippy only exempts the test functions themselves.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::{NODE, catalog_instances, fast_retry, health_entries, node_services};
use consul_sandbox::{AclDefaultPolicy, Config, Sandbox};
use mirra_consul::{
    Client, ConsulConfig, DeregisterRequest, Error, HealthCheck, Namespace, Node, QueryOptions,
    RegisterRequest, Service, Token, TokenConfig, TokenSource, TxnOp, Verb,
};
use serde_json::{Value, json};

const ROOT: &str = "root-secret";
const TEAM_SECRET: &str = "6d1c5b2e-0000-4000-8000-00000000team";

fn config(sandbox: &Sandbox, namespace: Option<&str>, token: Option<&str>) -> ConsulConfig {
    let mut c = ConsulConfig::new(&sandbox.url()).unwrap();
    c.retry = fast_retry(1);
    c.namespace = namespace.map(str::to_owned);
    c.token = token.map(|t| TokenConfig {
        secret: Token::new(t),
        source: TokenSource::EnvVar,
    });
    c
}

fn client(sandbox: &Sandbox, namespace: Option<&str>, token: Option<&str>) -> Client {
    Client::new(config(sandbox, namespace, token)).unwrap()
}

async fn enterprise() -> Sandbox {
    Sandbox::start(Config {
        enterprise: true,
        ..Config::default()
    })
    .await
    .unwrap()
}

async fn enterprise_with_acls() -> Sandbox {
    Sandbox::start(Config {
        enterprise: true,
        acl_default_policy: Some(AclDefaultPolicy::Deny),
        acl_initial_management_token: Some(ROOT.into()),
        ..Config::default()
    })
    .await
    .unwrap()
}

fn applies(sandbox: &Sandbox) -> u64 {
    sandbox.stats().raft_applies
}

fn requests(sandbox: &Sandbox, key: &str) -> u64 {
    sandbox.stats().requests_for(key)
}

/// A management-token PUT, for fixtures the client has no call for
/// (policies, tokens).
async fn root_put(sandbox: &Sandbox, path: &str, body: Value) -> Value {
    let r = reqwest::Client::new()
        .put(format!("{}{path}", sandbox.url()))
        .header("X-Consul-Token", ROOT)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = r.status();
    let text = r.text().await.unwrap();
    assert!(status.is_success(), "{path}: {status} {text}");
    serde_json::from_str(&text).unwrap()
}

fn instance(id: &str, name: &str) -> Service {
    Service {
        id: id.into(),
        service: name.into(),
        address: "10.0.0.7".into(),
        port: 8080,
        ..Service::default()
    }
}

fn register(id: &str, name: &str) -> RegisterRequest {
    RegisterRequest {
        node: NODE.into(),
        address: "127.0.0.1".into(),
        service: Some(instance(id, name)),
        ..RegisterRequest::default()
    }
}

async fn instances_of(c: &Client, name: &str) -> Vec<String> {
    catalog_instances(c, name)
        .await
        .into_iter()
        .map(|i| i.service_id)
        .collect()
}

async fn service_names(c: &Client) -> Vec<String> {
    c.services(&QueryOptions::default())
        .await
        .unwrap()
        .value
        .into_keys()
        .collect()
}

/// A namespace with nothing but its name.
fn namespace(name: &str) -> Namespace {
    Namespace {
        name: name.into(),
        ..Namespace::default()
    }
}

/// An Enterprise sandbox with the namespaces `team-x` and `team-y`, and
/// clients in `default` and in each of them.
struct Teams {
    sandbox: Sandbox,
    admin: Client,
    x: Client,
    y: Client,
}

impl Teams {
    async fn start() -> Teams {
        let sandbox = enterprise().await;
        let admin = client(&sandbox, None, None);
        for ns in ["team-x", "team-y"] {
            admin.create_namespace(&namespace(ns)).await.unwrap();
        }
        let x = client(&sandbox, Some("team-x"), None);
        let y = client(&sandbox, Some("team-y"), None);
        Teams {
            sandbox,
            admin,
            x,
            y,
        }
    }
}

/// With the management token: the policy `name` with `rules`, and the
/// token [`TEAM_SECRET`] linked to it.
async fn team_token_with_policy(sandbox: &Sandbox, name: &str, rules: &str) {
    root_put(
        sandbox,
        "/v1/acl/policy",
        json!({"Name": name, "Rules": rules}),
    )
    .await;
    root_put(
        sandbox,
        "/v1/acl/token",
        json!({"SecretID": TEAM_SECRET, "Policies": [{"Name": name}]}),
    )
    .await;
}

/// The catalog controller's transaction: the node `cas` 0, then an
/// instance and its readiness check, each `cas` 0 (only if absent).
fn controller_ops(id: &str, name: &str) -> Vec<TxnOp> {
    vec![
        TxnOp::Node {
            verb: Verb::Cas,
            node: Node {
                node: NODE.into(),
                address: "127.0.0.1".into(),
                ..Node::default()
            },
        },
        TxnOp::Service {
            verb: Verb::Cas,
            node: NODE.into(),
            service: instance(id, name),
        },
        TxnOp::Check {
            verb: Verb::Cas,
            check: HealthCheck {
                node: NODE.into(),
                check_id: format!("default/{id}"),
                name: "Kubernetes Readiness Check".into(),
                status: "passing".into(),
                service_id: id.into(),
                service_name: name.into(),
                r#type: "kubernetes-readiness".into(),
                ..HealthCheck::default()
            },
        },
    ]
}

#[tokio::test]
async fn a_namespace_is_created_with_a_policy_link_and_read_back() {
    let sandbox = enterprise_with_acls().await;
    let policy = root_put(
        &sandbox,
        "/v1/acl/policy",
        json!({"Name": "cross-namespace-policy",
               "Rules": "service_prefix \"\" { policy = \"read\" }"}),
    )
    .await;
    let policy_id = policy["ID"].as_str().unwrap().to_owned();
    let root = client(&sandbox, None, Some(ROOT));
    let before = applies(&sandbox);

    let created = root
        .create_namespace(&Namespace::with_policy_defaults(
            "apps",
            ["cross-namespace-policy"],
        ))
        .await
        .unwrap();
    assert_eq!(applies(&sandbox), before + 1, "one Raft apply");
    assert_eq!(requests(&sandbox, "PUT /v1/namespace"), 1);
    assert_eq!(created.name, "apps");
    let links = &created.acls.as_ref().unwrap().policy_defaults;
    assert_eq!(links.len(), 1);
    assert_eq!(links[0].id, policy_id, "the link by name is resolved");
    assert_eq!(links[0].name, "cross-namespace-policy");
    assert!(created.create_index > 0);

    let read = root.namespace("apps").await.unwrap().unwrap();
    assert_eq!(read, created);
    assert_eq!(root.namespace("missing").await.unwrap(), None);
    assert_eq!(requests(&sandbox, "GET /v1/namespace"), 2);
    assert_eq!(applies(&sandbox), before + 1, "reads apply nothing");

    // Creating it again is refused, not retried, and applies nothing.
    let err = root
        .create_namespace(&Namespace::with_policy_defaults(
            "apps",
            ["cross-namespace-policy"],
        ))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::BadRequest { .. }), "{err}");
    assert_eq!(requests(&sandbox, "PUT /v1/namespace"), 2);
    assert_eq!(applies(&sandbox), before + 1);

    // A link to a policy that does not exist is refused.
    let err = root
        .create_namespace(&Namespace::with_policy_defaults(
            "apps2",
            ["no-such-policy"],
        ))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::BadRequest { .. }), "{err}");
    assert_eq!(root.namespace("apps2").await.unwrap(), None);
    assert_eq!(applies(&sandbox), before + 1);
}

#[tokio::test]
async fn a_client_registers_reads_and_deregisters_in_its_namespace_only() {
    let Teams {
        sandbox,
        admin,
        x,
        y,
    } = Teams::start().await;
    let before = applies(&sandbox);

    x.register(&register("web-x1", "web")).await.unwrap();
    assert_eq!(applies(&sandbox), before + 1);
    assert_eq!(instances_of(&x, "web").await, ["web-x1"]);
    let listed = catalog_instances(&x, "web").await;
    assert_eq!(listed[0].namespace, "team-x");
    assert!(instances_of(&y, "web").await.is_empty());
    assert!(!service_names(&y).await.contains(&"web".to_owned()));
    assert!(
        instances_of(&admin, "web").await.is_empty(),
        "not in default"
    );
    let node_x = node_services(&x).await;
    assert_eq!(node_x.services.len(), 1);
    let node_y = node_services(&y).await;
    assert!(node_y.services.is_empty(), "{node_y:?}");

    // Deregistering the same ID from another namespace leaves it alone.
    y.deregister(&DeregisterRequest::service(NODE, "web-x1"))
        .await
        .unwrap();
    assert_eq!(instances_of(&x, "web").await, ["web-x1"]);

    x.deregister(&DeregisterRequest::service(NODE, "web-x1"))
        .await
        .unwrap();
    assert!(instances_of(&x, "web").await.is_empty());
    assert_eq!(applies(&sandbox), before + 3, "three writes, three applies");
    assert_eq!(requests(&sandbox, "PUT /v1/catalog/register"), 1);
    assert_eq!(requests(&sandbox, "PUT /v1/catalog/deregister"), 2);

    // A namespace that does not exist is refused, not created.
    let ghost = client(&sandbox, Some("ghost"), None);
    let err = ghost
        .register(&register("web-g1", "web"))
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains(r#"Namespace "ghost" does not exist"#),
        "{err}"
    );
    assert_eq!(applies(&sandbox), before + 3);
}

#[tokio::test]
async fn transactions_land_in_the_client_namespace() {
    let Teams {
        sandbox,
        admin,
        x,
        y,
    } = Teams::start().await;
    let before = applies(&sandbox);

    let summary = x.apply_ops(controller_ops("api-1", "api")).await.unwrap();
    assert_eq!(summary.transactions, 1);
    assert_eq!(applies(&sandbox), before + 1, "one transaction, one apply");
    assert_eq!(requests(&sandbox, "PUT /v1/txn"), 1);

    let entries = health_entries(&x, "api").await;
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].service.namespace, "team-x");
    assert_eq!(entries[0].checks.len(), 1, "{:?}", entries[0].checks);
    assert_eq!(entries[0].checks[0].check_id, "default/api-1");
    assert!(instances_of(&y, "api").await.is_empty());
    assert!(
        instances_of(&admin, "api").await.is_empty(),
        "not in default"
    );

    // The controller's removal (delete-cas at the instance's index) from
    // the namespace it wrote in.
    let index = catalog_instances(&x, "api").await[0].modify_index;
    x.txn(&[TxnOp::Service {
        verb: Verb::DeleteCas,
        node: NODE.into(),
        service: Service {
            id: "api-1".into(),
            service: "api".into(),
            modify_index: index,
            ..Service::default()
        },
    }])
    .await
    .unwrap();
    assert!(instances_of(&x, "api").await.is_empty());
    assert_eq!(applies(&sandbox), before + 2);
}

#[tokio::test]
async fn a_namespace_scoped_token_writes_in_its_namespace_only() {
    let sandbox = enterprise_with_acls().await;
    let root = client(&sandbox, None, Some(ROOT));
    root.create_namespace(&namespace("team")).await.unwrap();
    team_token_with_policy(
        &sandbox,
        "team-writer",
        "namespace \"team\" { service_prefix \"\" { policy = \"write\" } }",
    )
    .await;
    // The token has no node rule: the node exists before it writes.
    root.txn(&controller_ops("x", "x")[..1]).await.unwrap();
    let before = applies(&sandbox);

    let team = client(&sandbox, Some("team"), Some(TEAM_SECRET));
    let service_ops = controller_ops("web-1", "web")[1..].to_vec();
    // The instance and its check in one transaction, as the controller
    // sends them: both are vetted in the namespace the client put into
    // their bodies.
    team.txn(&service_ops).await.unwrap();
    assert_eq!(applies(&sandbox), before + 1);
    let root_team = client(&sandbox, Some("team"), Some(ROOT));
    assert_eq!(instances_of(&root_team, "web").await, ["web-1"]);
    let entries = health_entries(&root_team, "web").await;
    assert_eq!(entries[0].checks.len(), 1);

    // The same token addressing `default` is refused.
    let in_default = client(&sandbox, None, Some(TEAM_SECRET));
    let err = in_default.txn(&service_ops).await.unwrap_err();
    assert!(
        err.to_string().to_lowercase().contains("permission denied"),
        "{err}"
    );
    assert!(matches!(err, Error::TxnRolledBack { .. }), "{err}");
    let err = in_default
        .register(&RegisterRequest {
            skip_node_update: true,
            ..register("web-2", "web")
        })
        .await
        .unwrap_err();
    assert!(matches!(err, Error::PermissionDenied { .. }), "{err}");
    assert!(instances_of(&root, "web").await.is_empty());
    assert_eq!(applies(&sandbox), before + 1, "refusals apply nothing");
}

#[tokio::test]
async fn creating_a_namespace_needs_operator_write() {
    let sandbox = enterprise_with_acls().await;
    team_token_with_policy(
        &sandbox,
        "writer",
        "service_prefix \"\" { policy = \"write\" }\noperator = \"read\"",
    )
    .await;
    let before = applies(&sandbox);
    let c = client(&sandbox, None, Some(TEAM_SECRET));
    let err = c.create_namespace(&namespace("apps")).await.unwrap_err();
    assert!(matches!(err, Error::PermissionDenied { .. }), "{err}");
    let shown = err.to_string();
    assert!(shown.contains("namespace.create"), "{shown}");
    assert!(shown.contains("Permission denied"), "{shown}");
    assert!(!shown.contains(TEAM_SECRET), "{shown}");
    assert_eq!(requests(&sandbox, "PUT /v1/namespace"), 1, "not retried");
    assert_eq!(applies(&sandbox), before);
    let root = client(&sandbox, None, Some(ROOT));
    assert_eq!(root.namespace("apps").await.unwrap(), None);
}
