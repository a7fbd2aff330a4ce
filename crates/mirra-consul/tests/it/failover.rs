//! The consul-k8s 1.x connection settings over real HTTP against
//! `consul-sandbox`: a client built from `CONSUL_ADDRESSES` and friends
//! reaches the server, and with several servers it fails over to the next
//! one when a server stops answering and stays there. Every claim is
//! checked with the sandboxes' own request counters, never with timing.

// Test helpers outside #[test] functions unwrap too: a failed fixture must
// stop the test, and clippy only exempts the test functions themselves.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use crate::common::{NODE, fast_retry, node_services, string_map as env, web_registration};
use consul_sandbox::{Config, Sandbox};
use mirra_consul::{Client, ConsulConfig, Error, Overrides, QueryOptions};

fn client_from_env(pairs: &[(&str, &str)]) -> Client {
    let mut c = ConsulConfig::from_sources(&env(pairs), &Overrides::default()).unwrap();
    c.retry = fast_retry(3);
    Client::new(c).unwrap()
}

fn client_for(servers: &[&Sandbox]) -> Client {
    let mut c = ConsulConfig::new(&servers[0].url()).unwrap();
    c.addresses = servers
        .iter()
        .map(|s| reqwest::Url::parse(&s.url()).unwrap())
        .collect();
    c.retry = fast_retry(3);
    Client::new(c).unwrap()
}

/// All requests the sandbox received, whatever the endpoint.
fn total_requests(s: &Sandbox) -> u64 {
    s.stats().requests.values().sum()
}

async fn instances(client: &Client) -> usize {
    node_services(client).await.services.len()
}

#[tokio::test]
async fn a_client_from_consul_k8s_variables_reaches_the_server() {
    let sb = Sandbox::start(Config::default()).await.unwrap();
    let port = sb.addr().port().to_string();
    let client = client_from_env(&[
        ("CONSUL_ADDRESSES", "127.0.0.1"),
        ("CONSUL_HTTP_PORT", &port),
        ("CONSUL_USE_TLS", "false"),
        ("CONSUL_DATACENTER", "dc1"),
        ("CONSUL_PARTITION", ""),
        ("CONSUL_API_TIMEOUT", "1m30s"),
        // Ignored: CONSUL_ADDRESSES wins.
        ("CONSUL_HTTP_ADDR", "127.0.0.1:1"),
    ]);
    assert_eq!(client.request_timeout(), Duration::from_secs(90));
    client.register(&web_registration("web-1")).await.unwrap();
    assert_eq!(instances(&client).await, 1);
    assert_eq!(sb.stats().requests_for("PUT /v1/catalog/register"), 1);
    assert_eq!(sb.stats().requests_for("GET /v1/catalog/node-services"), 1);
}

#[tokio::test]
async fn consul_datacenter_is_sent_with_every_request() {
    let sb = Sandbox::start(Config::default()).await.unwrap();
    let port = sb.addr().port().to_string();
    // The sandbox, like Consul, knows only its own datacenter: a request for
    // another one fails, which shows the variable reached the wire.
    let client = client_from_env(&[
        ("CONSUL_ADDRESSES", "127.0.0.1"),
        ("CONSUL_HTTP_PORT", &port),
        ("CONSUL_DATACENTER", "dc-elsewhere"),
    ]);
    let err = client
        .node_services(NODE, &QueryOptions::default())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("datacenter"), "{err}");
}

#[tokio::test]
async fn a_dead_address_first_in_consul_addresses_costs_one_failed_connection() {
    let sb = Sandbox::start(Config::default()).await.unwrap();
    let port = sb.addr().port().to_string();
    // Nothing listens on 127.0.0.2 at the sandbox's port (it bound
    // 127.0.0.1 only): connections there are refused.
    let client = client_from_env(&[
        ("CONSUL_ADDRESSES", "127.0.0.2,127.0.0.1"),
        ("CONSUL_HTTP_PORT", &port),
    ]);
    assert_eq!(client.servers().len(), 2);
    assert_eq!(client.current_server().host_str(), Some("127.0.0.2"));
    client.register(&web_registration("web-1")).await.unwrap();
    assert_eq!(client.current_server().host_str(), Some("127.0.0.1"));
    for _ in 0..9 {
        assert_eq!(instances(&client).await, 1);
    }
    // Ten calls, ten requests at the live server, and the client stayed on it.
    assert_eq!(total_requests(&sb), 10);
    assert_eq!(client.current_server().host_str(), Some("127.0.0.1"));
}

#[tokio::test]
async fn a_server_that_drops_connections_is_tried_once_not_on_every_request() {
    let bad = Sandbox::start(Config::default()).await.unwrap();
    let good = Sandbox::start(Config::default()).await.unwrap();
    // Accepts every connection and closes it at once, counting each.
    bad.faults()
        .refuse_connections_for(Duration::from_secs(3600));
    let client = client_for(&[&bad, &good]);
    for i in 0..10 {
        client
            .register(&web_registration(&format!("web-{i}")))
            .await
            .unwrap();
    }
    assert_eq!(instances(&client).await, 10);
    assert_eq!(bad.stats().connections_refused, 1);
    assert_eq!(total_requests(&bad), 0);
    assert_eq!(total_requests(&good), 11);
    assert_eq!(good.stats().raft_applies, 10);
}

#[tokio::test]
async fn the_catalog_keeps_working_when_the_current_server_stops() {
    let a = Sandbox::start(Config::default()).await.unwrap();
    let b = Sandbox::start(Config::default()).await.unwrap();
    let b_url = b.url();
    let client = client_for(&[&a, &b]);
    client.register(&web_registration("web-1")).await.unwrap();
    assert_eq!(a.stats().raft_applies, 1);
    assert_eq!(
        total_requests(&b),
        0,
        "the first server is used while it answers"
    );
    a.shutdown().await;

    client.register(&web_registration("web-2")).await.unwrap();
    assert_eq!(
        client.current_server().as_str().trim_end_matches('/'),
        b_url
    );
    for _ in 0..5 {
        // The two sandboxes do not replicate: the second one holds only
        // what was written to it.
        assert_eq!(instances(&client).await, 1);
    }
    assert_eq!(total_requests(&b), 6);
    assert_eq!(b.stats().raft_applies, 1);
}

#[tokio::test]
async fn when_every_server_is_down_the_error_is_a_connection_error() {
    let a = Sandbox::start(Config::default()).await.unwrap();
    let b = Sandbox::start(Config::default()).await.unwrap();
    let client = client_for(&[&a, &b]);
    a.shutdown().await;
    b.shutdown().await;
    let err = client
        .register(&web_registration("web-1"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Connect { .. }), "{err}");
    assert!(err.is_retryable());
}

#[tokio::test]
async fn an_unreadable_ca_file_is_a_clear_error_at_start() {
    let c = ConsulConfig::from_sources(
        &env(&[
            ("CONSUL_ADDRESSES", "127.0.0.1"),
            ("CONSUL_USE_TLS", "true"),
            ("CONSUL_CACERT_FILE", "/nonexistent/consul-ca.pem"),
        ]),
        &Overrides::default(),
    )
    .unwrap();
    let err = Client::new(c).unwrap_err();
    assert_eq!(err.class(), "config");
    assert!(
        err.to_string().contains("/nonexistent/consul-ca.pem"),
        "{err}"
    );
}

#[tokio::test]
async fn a_host_name_resolves_to_its_servers() {
    let sb = Sandbox::start(Config::default()).await.unwrap();
    let port = sb.addr().port().to_string();
    let client = client_from_env(&[
        ("CONSUL_ADDRESSES", "localhost"),
        ("CONSUL_HTTP_PORT", &port),
    ]);
    // Every address localhost resolves to is a server; the sandbox listens
    // on the IPv4 one, so whichever comes first, the call succeeds.
    assert!(!client.servers().is_empty());
    assert!(
        client
            .servers()
            .iter()
            .all(|u| u.host_str() != Some("localhost"))
    );
    client.register(&web_registration("web-1")).await.unwrap();
    assert_eq!(sb.stats().raft_applies, 1);
}
