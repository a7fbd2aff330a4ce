//! What several of the client's integration tests build the same way.

// A failed fixture must stop the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::time::Duration;

use consul_sandbox::{
    AclAccess, AclConfig, AclPolicy, AclResource, AclRule, AclToken, Config, Sandbox,
};
use mirra_consul::{
    CatalogServiceInstance, Client, NodeServices, QueryOptions, RegisterRequest, RetryPolicy,
    Service, ServiceEntry,
};

/// The node mirra registers its instances on.
pub const NODE: &str = "k8s-sync";

/// A string map (meta, environment) from pairs.
pub fn string_map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// Retries a few milliseconds apart: the tests count attempts, and waiting
/// out real backoffs would only make them slow.
pub fn fast_retry(max_attempts: u32) -> RetryPolicy {
    RetryPolicy {
        max_attempts,
        initial_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(5),
    }
}

/// What the catalog holds on [`NODE`] now.
pub async fn node_services(client: &Client) -> NodeServices {
    client
        .node_services(NODE, &QueryOptions::default())
        .await
        .unwrap()
        .value
}

/// The IDs of the instances on [`NODE`], in the catalog's order.
pub async fn service_ids(client: &Client) -> Vec<String> {
    node_services(client)
        .await
        .services
        .into_iter()
        .map(|s| s.id)
        .collect()
}

/// The catalog's instances of service `name` (`/v1/catalog/service`).
pub async fn catalog_instances(client: &Client, name: &str) -> Vec<CatalogServiceInstance> {
    client
        .service(name, &QueryOptions::default())
        .await
        .unwrap()
        .value
}

/// The instances of service `name` with their checks
/// (`/v1/health/service`), passing or not.
pub async fn health_entries(client: &Client, name: &str) -> Vec<ServiceEntry> {
    client
        .health_service(name, &QueryOptions::default())
        .await
        .unwrap()
        .value
}

/// Registers instance `id` of `web` (port 80) on [`NODE`] at 127.0.0.1.
pub fn web_registration(id: &str) -> RegisterRequest {
    RegisterRequest {
        node: NODE.into(),
        address: "127.0.0.1".into(),
        service: Some(Service {
            id: id.into(),
            service: "web".into(),
            port: 80,
            ..Service::default()
        }),
        ..RegisterRequest::default()
    }
}

/// A sandbox with ACLs on whose one token, `secret`, may read every node
/// and service but write nothing; the anonymous token may do nothing.
pub async fn sandbox_with_read_only_token(accessor_id: &str, secret: &str) -> Sandbox {
    let acl = AclConfig {
        tokens: vec![AclToken {
            accessor_id: accessor_id.into(),
            secret_id: secret.into(),
            policy: AclPolicy::Rules(vec![
                AclRule::new(AclResource::Node, "", AclAccess::Read),
                AclRule::new(AclResource::Service, "", AclAccess::Read),
            ]),
        }],
        anonymous_rules: Vec::new(),
    };
    Sandbox::start(Config {
        acl: Some(acl),
        ..Config::default()
    })
    .await
    .unwrap()
}
