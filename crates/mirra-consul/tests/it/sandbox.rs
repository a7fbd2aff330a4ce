//! Every client call against `consul-sandbox` over real HTTP.
//!
//! The sandbox was written independently from Consul's documentation, so a
//! field name misread on either side fails here. Costs are asserted from the
//! sandbox's own counters (Raft applies, requests per endpoint), never from
//! timing.

// Test helpers outside #[test] functions unwrap too: a failed fixture must
// stop the test, and clippy only exempts the test functions themselves.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use crate::common::{
    NODE, catalog_instances, fast_retry, health_entries, node_services,
    sandbox_with_read_only_token, service_ids, string_map as meta,
};
use consul_sandbox::{Config, Sandbox};
use futures::StreamExt;
use mirra_consul::{
    Client, ConsulConfig, DeregisterRequest, Error, FailedOp, HealthCheck, Node, QueryOptions,
    RegisterRequest, Service, ServicePort, TokenConfig, TokenSource, TxnOp, Verb, WatchOptions,
    Weights,
};
use mirra_testkit::wait_for;

fn config_for(sandbox: &Sandbox) -> ConsulConfig {
    let mut c = ConsulConfig::new(&sandbox.url()).unwrap();
    c.retry = fast_retry(4);
    c
}

async fn start() -> (Sandbox, Client) {
    let sandbox = Sandbox::start(Config::default()).await.unwrap();
    let client = Client::new(config_for(&sandbox)).unwrap();
    (sandbox, client)
}

fn requests(sandbox: &Sandbox, key: &str) -> u64 {
    sandbox.stats().requests.get(key).copied().unwrap_or(0)
}

fn instance(id: &str, name: &str, tags: &[&str], port: u16) -> Service {
    Service {
        id: id.into(),
        service: name.into(),
        tags: tags.iter().map(|t| (*t).to_owned()).collect(),
        address: "10.0.0.7".into(),
        meta: meta(&[
            ("external-source", "kubernetes"),
            ("external-k8s-ns", "default"),
        ]),
        port,
        weights: Some(Weights {
            passing: 3,
            warning: 1,
        }),
        ..Service::default()
    }
}

fn readiness(service_id: &str, status: &str) -> HealthCheck {
    HealthCheck {
        node: NODE.into(),
        check_id: format!("default/{service_id}"),
        name: "Kubernetes Readiness Check".into(),
        status: status.into(),
        service_id: service_id.into(),
        r#type: "kubernetes-readiness".into(),
        ..HealthCheck::default()
    }
}

fn register(service: Service, checks: Vec<HealthCheck>) -> RegisterRequest {
    RegisterRequest {
        node: NODE.into(),
        address: "127.0.0.1".into(),
        node_meta: meta(&[("external-source", "kubernetes")]),
        service: Some(service),
        checks,
        ..RegisterRequest::default()
    }
}

/// The registration of instance `id` of `web`, tagged `k8s`, without checks.
fn k8s_web(id: &str, port: u16) -> RegisterRequest {
    register(instance(id, "web", &["k8s"], port), vec![])
}

/// A sandbox and its client, with `web-1` (port 80) registered.
async fn start_with_web_1() -> (Sandbox, Client) {
    let (sandbox, client) = start().await;
    client.register(&k8s_web("web-1", 80)).await.unwrap();
    (sandbox, client)
}

/// Waits until the sandbox has received a second node-services read: the
/// blocking one that follows a first, plain read is parked on the server.
async fn wait_for_second_node_services_read(sandbox: &Sandbox) {
    wait_for("a second node-services read", || async {
        requests(sandbox, "GET /v1/catalog/node-services") >= 2
    })
    .await;
}

/// Asserts that `err` is a rollback naming one refused op, `ops[index]`
/// at `index`, and returns it.
fn assert_only_failed_op<'e>(err: &'e Error, ops: &[TxnOp], index: usize) -> &'e FailedOp {
    let failed = err.failed_ops();
    assert_eq!(failed.len(), 1, "{err}");
    assert_eq!(failed[0].index, Some(index));
    assert_eq!(failed[0].op.as_ref(), Some(&ops[index]));
    &failed[0]
}

#[tokio::test]
async fn register_and_every_read() {
    let (sandbox, client) = start().await;
    let before = sandbox.stats().raft_applies;
    client
        .register(&register(
            instance("web-1", "web", &["k8s", "blue"], 8080),
            vec![readiness("web-1", "passing")],
        ))
        .await
        .unwrap();
    client
        .register(&register(
            instance("web-2", "web", &["k8s", "green"], 8081),
            vec![readiness("web-2", "critical")],
        ))
        .await
        .unwrap();
    client
        .register(&register(instance("db-1", "db", &["k8s"], 5432), vec![]))
        .await
        .unwrap();
    assert_eq!(
        sandbox.stats().raft_applies - before,
        3,
        "one apply per register"
    );

    // services: names with the union of tags.
    let services = client.services(&QueryOptions::default()).await.unwrap();
    assert!(services.index > 0);
    let mut web_tags = services.value["web"].clone();
    web_tags.sort();
    assert_eq!(web_tags, vec!["blue", "green", "k8s"]);
    assert!(services.value.contains_key("db"));

    // services filtered by node meta: only our node's services.
    let q = QueryOptions {
        node_meta: vec![("external-source".into(), "kubernetes".into())],
        ..QueryOptions::default()
    };
    let ours = client.services(&q).await.unwrap().value;
    assert_eq!(ours.keys().cloned().collect::<Vec<_>>(), vec!["db", "web"]);

    // service instances by name, with tag and node-meta filters.
    let all = catalog_instances(&client, "web").await;
    assert_eq!(all.len(), 2);
    let w1 = all.iter().find(|i| i.service_id == "web-1").unwrap();
    assert_eq!(w1.node, NODE);
    assert_eq!(w1.address, "127.0.0.1");
    assert_eq!(w1.service_address, "10.0.0.7");
    assert_eq!(w1.service_port, 8080);
    assert_eq!(w1.service_meta["external-k8s-ns"], "default");
    assert_eq!(w1.node_meta["external-source"], "kubernetes");
    assert_eq!(
        w1.service_weights,
        Some(Weights {
            passing: 3,
            warning: 1
        })
    );
    assert!(w1.modify_index > 0);
    let q = QueryOptions {
        tags: vec!["green".into()],
        ..QueryOptions::default()
    };
    let green = client.service("web", &q).await.unwrap().value;
    assert_eq!(
        green
            .iter()
            .map(|i| i.service_id.as_str())
            .collect::<Vec<_>>(),
        vec!["web-2"]
    );
    let q = QueryOptions {
        node_meta: vec![("external-source".into(), "elsewhere".into())],
        ..QueryOptions::default()
    };
    assert!(client.service("web", &q).await.unwrap().value.is_empty());

    // node-services for our node.
    let ns = client
        .node_services(NODE, &QueryOptions::default())
        .await
        .unwrap();
    assert!(ns.index > 0);
    let node = ns.value.node.clone().unwrap();
    assert_eq!(node.node, NODE);
    assert_eq!(node.address, "127.0.0.1");
    assert_eq!(node.meta["external-source"], "kubernetes");
    let mut ids: Vec<&str> = ns.value.services.iter().map(|s| s.id.as_str()).collect();
    ids.sort_unstable();
    assert_eq!(ids, vec!["db-1", "web-1", "web-2"]);
    let w2 = ns.value.services.iter().find(|s| s.id == "web-2").unwrap();
    assert_eq!(w2.tags, vec!["k8s", "green"]);
    assert_eq!(w2.port, 8081);
    assert_eq!(w2.meta["external-source"], "kubernetes");

    // An unknown node reads as no node.
    let none = client
        .node_services("nobody", &QueryOptions::default())
        .await
        .unwrap();
    assert!(none.value.node.is_none());
    assert!(none.value.services.is_empty());

    // nodes.
    let nodes = client.nodes(&QueryOptions::default()).await.unwrap().value;
    assert!(
        nodes
            .iter()
            .any(|n| n.node == NODE && n.meta["external-source"] == "kubernetes")
    );

    // health: all instances with checks, then only passing ones.
    let health = health_entries(&client, "web").await;
    assert_eq!(health.len(), 2);
    let h1 = health.iter().find(|e| e.service.id == "web-1").unwrap();
    assert_eq!(h1.node.node, NODE);
    let c1 = h1
        .checks
        .iter()
        .find(|c| c.check_id == "default/web-1")
        .unwrap();
    assert_eq!(c1.status, "passing");
    assert_eq!(c1.r#type, "kubernetes-readiness");
    assert_eq!(c1.service_id, "web-1");
    let q = QueryOptions {
        passing_only: true,
        ..QueryOptions::default()
    };
    let passing = client.health_service("web", &q).await.unwrap().value;
    assert_eq!(
        passing
            .iter()
            .map(|e| e.service.id.as_str())
            .collect::<Vec<_>>(),
        vec!["web-1"]
    );
}

#[tokio::test]
async fn skip_node_update_keeps_node_fields() {
    let (_sandbox, client) = start().await;
    client.register(&k8s_web("web-1", 80)).await.unwrap();
    let mut req = register(instance("web-2", "web", &["k8s"], 81), vec![]);
    req.address = "192.0.2.99".into();
    req.node_meta = meta(&[("changed", "yes")]);
    req.skip_node_update = true;
    client.register(&req).await.unwrap();

    let ns = node_services(&client).await;
    let node = ns.node.unwrap();
    assert_eq!(
        node.address, "127.0.0.1",
        "SkipNodeUpdate leaves the node alone"
    );
    assert_eq!(node.meta.get("changed"), None);
    assert_eq!(ns.services.len(), 2, "but the service is registered");
}

#[tokio::test]
async fn deregister_check_service_and_node() {
    let (sandbox, client) = start().await;
    client
        .register(&register(
            instance("web-1", "web", &["k8s"], 80),
            vec![readiness("web-1", "passing")],
        ))
        .await
        .unwrap();
    client.register(&k8s_web("web-2", 81)).await.unwrap();

    client
        .deregister(&DeregisterRequest::check(NODE, "default/web-1"))
        .await
        .unwrap();
    let h = health_entries(&client, "web").await;
    let h1 = h.iter().find(|e| e.service.id == "web-1").unwrap();
    assert!(h1.checks.iter().all(|c| c.check_id != "default/web-1"));

    client
        .deregister(&DeregisterRequest::service(NODE, "web-1"))
        .await
        .unwrap();
    assert_eq!(service_ids(&client).await, vec!["web-2"]);

    client
        .deregister(&DeregisterRequest::node(NODE))
        .await
        .unwrap();
    let ns = node_services(&client).await;
    assert!(ns.node.is_none());
    assert!(
        !client
            .services(&QueryOptions::default())
            .await
            .unwrap()
            .value
            .contains_key("web")
    );
    assert_eq!(requests(&sandbox, "PUT /v1/catalog/deregister"), 3);
}

fn node_set() -> TxnOp {
    TxnOp::Node {
        verb: Verb::Set,
        node: Node {
            node: NODE.into(),
            address: "127.0.0.1".into(),
            meta: meta(&[("external-source", "kubernetes")]),
            ..Node::default()
        },
    }
}

fn service_op(verb: Verb, svc: Service) -> TxnOp {
    TxnOp::Service {
        verb,
        node: NODE.into(),
        service: svc,
    }
}

#[tokio::test]
async fn txn_set_cas_delete_and_rollback() {
    let (sandbox, client) = start().await;
    let before = sandbox.stats().raft_applies;
    let results = client
        .txn(&[
            node_set(),
            service_op(Verb::Set, instance("web-1", "web", &["k8s"], 80)),
            service_op(Verb::Set, instance("web-2", "web", &["k8s"], 81)),
            TxnOp::Check {
                verb: Verb::Set,
                check: readiness("web-1", "passing"),
            },
        ])
        .await
        .unwrap();
    assert_eq!(
        sandbox.stats().raft_applies - before,
        1,
        "one transaction, one apply"
    );
    let written = results.iter().find_map(|r| r.service.clone()).unwrap();
    assert!(written.modify_index > 0);

    let ns = node_services(&client).await;
    let web1 = ns
        .services
        .iter()
        .find(|s| s.id == "web-1")
        .unwrap()
        .clone();
    assert!(web1.modify_index > 0);

    // A stale cas rolls back the whole transaction and names the op.
    let mut stale = web1.clone();
    stale.modify_index = web1.modify_index - 1;
    stale.port = 9999;
    let ops = vec![
        service_op(Verb::Set, instance("web-3", "web", &["k8s"], 82)),
        service_op(Verb::Cas, stale),
    ];
    let err = client.txn(&ops).await.unwrap_err();
    assert_eq!(err.class(), "txn_rolled_back", "{err}");
    assert_only_failed_op(&err, &ops, 1);
    let ns = node_services(&client).await;
    assert!(
        ns.services.iter().all(|s| s.id != "web-3"),
        "rolled back: nothing applied"
    );

    // A cas with the current index applies.
    let mut fresh = web1.clone();
    fresh.port = 9999;
    client.txn(&[service_op(Verb::Cas, fresh)]).await.unwrap();
    let ns = node_services(&client).await;
    let web1b = ns
        .services
        .iter()
        .find(|s| s.id == "web-1")
        .unwrap()
        .clone();
    assert_eq!(web1b.port, 9999);

    // delete-cas with a stale index fails; with the current one it applies.
    let mut del = Service {
        id: "web-1".into(),
        service: "web".into(),
        modify_index: web1.modify_index,
        ..Service::default()
    };
    assert!(
        client
            .txn(&[service_op(Verb::DeleteCas, del.clone())])
            .await
            .is_err()
    );
    del.modify_index = web1b.modify_index;
    client
        .txn(&[service_op(Verb::DeleteCas, del)])
        .await
        .unwrap();

    // Plain delete of a service, a check and the node.
    client
        .txn(&[
            TxnOp::Check {
                verb: Verb::Delete,
                check: HealthCheck {
                    node: NODE.into(),
                    check_id: "default/web-1".into(),
                    ..HealthCheck::default()
                },
            },
            service_op(
                Verb::Delete,
                Service {
                    id: "web-2".into(),
                    service: "web".into(),
                    ..Service::default()
                },
            ),
        ])
        .await
        .unwrap();
    let ns = node_services(&client).await;
    assert!(ns.services.is_empty());
    client
        .txn(&[TxnOp::Node {
            verb: Verb::Delete,
            node: Node {
                node: NODE.into(),
                ..Node::default()
            },
        }])
        .await
        .unwrap();
    assert!(node_services(&client).await.node.is_none());
}

fn named_port(name: &str, port: u16, default: bool) -> ServicePort {
    ServicePort {
        name: name.into(),
        port,
        default,
    }
}

#[tokio::test]
async fn multi_port_instances_round_trip_through_register_txn_and_every_read() {
    let (sandbox, client) = start().await;
    let ports = vec![
        named_port("http", 8080, true),
        named_port("grpc", 9090, false),
    ];
    let mut web = instance("web-1", "web", &["k8s"], 0);
    web.ports = ports.clone();
    client.register(&register(web, vec![])).await.unwrap();

    let ns = node_services(&client).await;
    let got = ns.services.iter().find(|s| s.id == "web-1").unwrap();
    assert_eq!((got.port, &got.ports), (0, &ports));
    let flat = catalog_instances(&client, "web").await;
    assert_eq!((flat[0].service_port, &flat[0].service_ports), (0, &ports));
    let health = health_entries(&client, "web").await;
    assert_eq!(health[0].service.ports, ports);

    // Through a transaction: the echoed result carries the list, and the
    // same list again changes nothing (one apply, the same ModifyIndex).
    let mut api = instance("api-1", "api", &["k8s"], 0);
    api.ports = vec![named_port("http", 8000, true)];
    let first = client
        .txn(&[service_op(Verb::Set, api.clone())])
        .await
        .unwrap();
    let echoed = first[0].service.clone().unwrap();
    assert_eq!(echoed.ports, api.ports);
    let before = sandbox.stats().raft_applies;
    let again = client
        .txn(&[service_op(Verb::Set, api.clone())])
        .await
        .unwrap();
    assert_eq!(sandbox.stats().raft_applies - before, 1);
    assert_eq!(
        again[0].service.as_ref().unwrap().modify_index,
        echoed.modify_index
    );
    // One more port: a change.
    api.ports.push(named_port("admin", 8001, false));
    let changed = client
        .txn(&[service_op(Verb::Set, api.clone())])
        .await
        .unwrap();
    let changed = changed[0].service.clone().unwrap();
    assert!(changed.modify_index > echoed.modify_index);
    assert_eq!(changed.ports, api.ports);
}

#[tokio::test]
async fn oversized_txn_is_too_large() {
    let (_sandbox, client) = start().await;
    let mut ops = vec![node_set()];
    ops.extend(
        (0..200).map(|i| service_op(Verb::Set, instance(&format!("web-{i}"), "web", &[], 80))),
    );
    let err = client.txn(&ops).await.unwrap_err();
    assert_eq!(err.class(), "too_large", "{err}");
}

fn fifty_thousand_instance_ops() -> Vec<TxnOp> {
    let mut ops = vec![node_set()];
    ops.extend((0..50_000).map(|i| {
        service_op(
            Verb::Set,
            instance(
                &format!("svc-{i}"),
                &format!("svc-{}", i % 500),
                &["k8s"],
                8080,
            ),
        )
    }));
    ops
}

#[tokio::test]
async fn fifty_thousand_instances_cost_391_raft_applies() {
    let (sandbox, client) = start().await;
    assert_eq!(client.txn_max_ops(), 128);
    let before = sandbox.stats();
    let summary = client
        .apply_ops(fifty_thousand_instance_ops())
        .await
        .unwrap();
    let after = sandbox.stats();
    assert_eq!(summary.transactions, 391);
    assert_eq!(summary.ops, 50_001);
    assert_eq!(
        after.raft_applies - before.raft_applies,
        391,
        "ceil(50001 / 128) transactions, one apply each"
    );
    assert_eq!(requests(&sandbox, "PUT /v1/txn"), 391);
    assert_eq!(requests(&sandbox, "PUT /v1/catalog/register"), 0);

    let ns = node_services(&client).await;
    assert_eq!(ns.services.len(), 50_000);
}

#[tokio::test]
async fn a_server_before_consul_1_14_costs_one_refused_transaction_then_its_limit_is_kept() {
    let sandbox = Sandbox::start(Config {
        max_txn_ops: 64,
        ..Config::default()
    })
    .await
    .unwrap();
    let client = Client::new(config_for(&sandbox)).unwrap();
    assert_eq!(client.txn_max_ops(), 128);
    let summary = client
        .apply_ops(fifty_thousand_instance_ops())
        .await
        .unwrap();
    assert_eq!(summary.ops, 50_001);
    assert_eq!(summary.transactions, 782, "ceil(50001 / 64)");
    assert_eq!(client.txn_max_ops(), 64, "the server's limit is kept");
    let stats = sandbox.stats();
    assert_eq!(
        stats.raft_applies, 782,
        "the refused transaction applied nothing"
    );
    assert_eq!(requests(&sandbox, "PUT /v1/txn"), 783, "one 413, once");
    assert_eq!(node_services(&client).await.services.len(), 50_000);

    // A later call packs to the learned limit from the start.
    let more: Vec<TxnOp> = (0..100)
        .map(|i| service_op(Verb::Set, instance(&format!("late-{i}"), "late", &[], 80)))
        .collect();
    let summary = client.apply_ops(more).await.unwrap();
    assert_eq!(summary.transactions, 2);
    assert_eq!(requests(&sandbox, "PUT /v1/txn"), 785, "no second 413");
}

#[tokio::test]
async fn blocking_query_returns_on_change() {
    let (sandbox, client) = start_with_web_1().await;
    let first = client
        .node_services(NODE, &QueryOptions::default())
        .await
        .unwrap();

    let blocked = {
        let client = client.clone();
        let index = first.index;
        tokio::spawn(async move {
            client
                .node_services(
                    NODE,
                    &QueryOptions::blocking(index, Duration::from_secs(60)),
                )
                .await
        })
    };
    // Register only once the query is parked on the server, so the answer
    // can only come from the change.
    wait_for_second_node_services_read(&sandbox).await;
    client.register(&k8s_web("web-2", 81)).await.unwrap();
    let changed = blocked.await.unwrap().unwrap();
    assert!(changed.index > first.index);
    assert_eq!(changed.value.services.len(), 2);
    assert_eq!(requests(&sandbox, "GET /v1/catalog/node-services"), 2);
}

#[tokio::test]
async fn blocking_query_returns_at_wait_end_without_change() {
    let (sandbox, client) = start_with_web_1().await;
    let first = client
        .node_services(NODE, &QueryOptions::default())
        .await
        .unwrap();
    let again = client
        .node_services(
            NODE,
            &QueryOptions::blocking(first.index, Duration::from_millis(300)),
        )
        .await
        .unwrap();
    assert_eq!(again.index, first.index, "no change: same index");
    assert_eq!(again.value, first.value);
    assert_eq!(
        requests(&sandbox, "GET /v1/catalog/node-services"),
        2,
        "answered, not retried"
    );
}

#[tokio::test]
async fn watch_yields_new_version_after_concurrent_registration() {
    let (sandbox, client) = start_with_web_1().await;
    let opts = WatchOptions {
        wait: Duration::from_secs(60),
        min_interval: Duration::from_millis(1),
        ..WatchOptions::default()
    };
    let mut stream = Box::pin(client.watch_node_services(NODE, opts));
    let v1 = stream.next().await.unwrap().unwrap();
    assert_eq!(v1.value.services.len(), 1);

    // Poll the watch and the writer together, as two tasks of the
    // controller would run. The writer registers once the watch's second
    // (blocking) request is parked on the server.
    let write = async {
        wait_for_second_node_services_read(&sandbox).await;
        client.register(&k8s_web("web-2", 81)).await
    };
    let (v2, written) = tokio::join!(
        tokio::time::timeout(Duration::from_secs(30), stream.next()),
        write
    );
    written.unwrap();
    let v2 = v2
        .expect("the watch must yield after the registration")
        .unwrap()
        .unwrap();
    assert!(v2.index > v1.index);
    let mut ids: Vec<String> = v2.value.services.into_iter().map(|s| s.id).collect();
    ids.sort();
    assert_eq!(ids, vec!["web-1", "web-2"]);
}

#[tokio::test]
async fn injected_500s_are_retried_then_succeed() {
    let (sandbox, client) = start().await;
    sandbox.faults().add(
        consul_sandbox::FaultRule::error(500, "injected")
            .times(2)
            .with_path_prefix("/v1/catalog/register"),
    );
    let before = sandbox.stats().raft_applies;
    client.register(&k8s_web("web-1", 80)).await.unwrap();
    assert_eq!(requests(&sandbox, "PUT /v1/catalog/register"), 3);
    assert_eq!(sandbox.stats().raft_applies - before, 1);

    sandbox
        .faults()
        .add(consul_sandbox::FaultRule::no_leader().times(1));
    let v = client.services(&QueryOptions::default()).await.unwrap();
    assert!(v.value.contains_key("web"));
    assert_eq!(requests(&sandbox, "GET /v1/catalog/services"), 2);
}

#[tokio::test]
async fn permission_denied_is_not_retried_and_hides_the_token() {
    const SECRET: &str = "5c2b9a3e-read-only-secret-0001";
    let sandbox =
        sandbox_with_read_only_token("11111111-2222-3333-4444-555555555555", SECRET).await;
    let mut cfg = config_for(&sandbox);
    cfg.token = Some(TokenConfig {
        secret: mirra_consul::Token::new(SECRET),
        source: TokenSource::EnvVar,
    });
    let client = Client::new(cfg).unwrap();

    let err = client.register(&k8s_web("web-1", 80)).await.unwrap_err();
    assert!(matches!(err, Error::PermissionDenied { .. }), "{err}");
    assert_eq!(
        requests(&sandbox, "PUT /v1/catalog/register"),
        1,
        "403 is not retried"
    );
    let shown = format!("{err} {err:?}");
    assert!(shown.contains("CONSUL_HTTP_TOKEN"));
    assert!(!shown.contains(SECRET));

    // The same token may read.
    client.services(&QueryOptions::default()).await.unwrap();
}

/// The node as the catalog holds it now.
async fn stored_node(client: &Client) -> Node {
    node_services(client)
        .await
        .node
        .expect("the node is registered")
}

fn node_op(verb: Verb, address: &str, modify_index: u64) -> TxnOp {
    TxnOp::Node {
        verb,
        node: Node {
            node: NODE.into(),
            address: address.into(),
            meta: meta(&[("external-source", "kubernetes")]),
            modify_index,
            ..Node::default()
        },
    }
}

#[tokio::test]
async fn txn_node_cas_and_delete_cas() {
    let (sandbox, client) = start().await;
    client
        .txn(&[node_op(Verb::Set, "10.0.0.1", 0)])
        .await
        .unwrap();
    let node = stored_node(&client).await;
    let m = node.modify_index;
    assert!(m > 0);

    // Stale cas next to a valid op: 409, the cas named by its index, and
    // the other op rolled back with it. The CAS is checked inside the Raft
    // apply (Consul's FSM), so the attempt still costs one apply.
    let applies = sandbox.stats().raft_applies;
    let ops = vec![
        service_op(Verb::Set, instance("web-1", "web", &["k8s"], 80)),
        node_op(Verb::Cas, "10.0.0.2", m + 7),
    ];
    let err = client.txn(&ops).await.unwrap_err();
    assert!(matches!(err, Error::TxnRolledBack { .. }), "{err}");
    assert_eq!(err.status(), Some(409));
    let failed = assert_only_failed_op(&err, &ops, 1);
    assert_eq!(
        failed.what,
        format!("failed to set node \"{NODE}\", index is stale")
    );
    assert_eq!(sandbox.stats().raft_applies, applies + 1);
    let after = node_services(&client).await;
    assert_eq!(after.node.as_ref(), Some(&node), "node untouched");
    assert!(after.services.is_empty(), "the service set rolled back too");

    // cas with index 0 means "only if absent": refused for an existing node.
    let err = client
        .txn(&[node_op(Verb::Cas, "10.0.0.2", 0)])
        .await
        .unwrap_err();
    assert_eq!(err.failed_ops()[0].index, Some(0), "{err}");
    assert_eq!(stored_node(&client).await, node);

    // The current index applies and moves the ModifyIndex.
    let results = client
        .txn(&[node_op(Verb::Cas, "10.0.0.2", m)])
        .await
        .unwrap();
    let written = results[0].node.clone().expect("a node result");
    assert_eq!(written.address, "10.0.0.2");
    assert!(written.modify_index > m);
    let node2 = stored_node(&client).await;
    assert_eq!(node2.address, "10.0.0.2");
    assert_eq!(node2.modify_index, written.modify_index);

    // delete-cas with the old index: 409, node still there.
    let stale = [node_op(Verb::DeleteCas, "", m)];
    let err = client.txn(&stale).await.unwrap_err();
    let failed = assert_only_failed_op(&err, &stale, 0);
    assert_eq!(
        failed.what,
        format!("failed to delete node \"{NODE}\", index is stale")
    );
    assert_eq!(stored_node(&client).await, node2);

    // delete-cas with the current index removes it.
    let results = client
        .txn(&[node_op(Verb::DeleteCas, "", node2.modify_index)])
        .await
        .unwrap();
    assert!(results.is_empty(), "deletes return no result: {results:?}");
    assert!(node_services(&client).await.node.is_none());

    // delete-cas of a node that is gone fails: there is no index to match.
    let err = client
        .txn(&[node_op(Verb::DeleteCas, "", node2.modify_index)])
        .await
        .unwrap_err();
    assert_eq!(err.failed_ops().len(), 1, "{err}");

    // And cas with index 0 creates it.
    client
        .txn(&[node_op(Verb::Cas, "10.0.0.3", 0)])
        .await
        .unwrap();
    assert_eq!(stored_node(&client).await.address, "10.0.0.3");
}

#[tokio::test]
async fn stale_cas_in_a_later_transaction_of_apply_ops_is_named_by_its_list_index() {
    let sandbox = Sandbox::start(Config::default()).await.unwrap();
    let mut cfg = config_for(&sandbox);
    cfg.txn_max_ops = 2;
    let client = Client::new(cfg).unwrap();
    client
        .txn(&[node_op(Verb::Set, "10.0.0.1", 0)])
        .await
        .unwrap();
    let m = stored_node(&client).await.modify_index;

    let ops = vec![
        service_op(Verb::Set, instance("web-1", "web", &[], 80)),
        service_op(Verb::Set, instance("web-2", "web", &[], 81)),
        service_op(Verb::Set, instance("web-3", "web", &[], 82)),
        node_op(Verb::Cas, "10.0.0.9", m + 1),
        service_op(Verb::Set, instance("web-4", "web", &[], 83)),
    ];
    let err = client.apply_ops(ops.clone()).await.unwrap_err();
    assert_eq!(err.committed_transactions, 1);
    assert_eq!(err.committed_ops, 2);
    assert_eq!(err.unapplied, ops[2..].to_vec());
    let failed = err.source.failed_ops();
    assert_eq!(failed.len(), 1, "{}", err.source);
    assert_eq!(failed[0].index, Some(3), "index into the whole list");
    assert_eq!(failed[0].op.as_ref(), Some(&ops[3]));

    let mut ids = service_ids(&client).await;
    ids.sort();
    assert_eq!(ids, vec!["web-1", "web-2"], "only the first transaction");
}

/// The one check on the node, as the catalog holds it now.
async fn stored_checks(client: &Client) -> Vec<HealthCheck> {
    client
        .health_node(NODE, &QueryOptions::default())
        .await
        .unwrap()
        .value
}

fn check_op(verb: Verb, status: &str, modify_index: u64) -> TxnOp {
    TxnOp::Check {
        verb,
        check: HealthCheck {
            modify_index,
            ..readiness("web-1", status)
        },
    }
}

#[tokio::test]
async fn txn_check_cas_and_delete_cas() {
    let (sandbox, client) = start().await;
    client
        .txn(&[
            node_set(),
            service_op(Verb::Set, instance("web-1", "web", &["k8s"], 80)),
            check_op(Verb::Set, "passing", 0),
        ])
        .await
        .unwrap();
    let checks = stored_checks(&client).await;
    assert_eq!(checks.len(), 1);
    let check = checks[0].clone();
    assert_eq!(check.status, "passing");
    let c = check.modify_index;
    assert!(c > 0);
    let check_id = check.check_id.clone();

    // Stale cas, placed after a valid op: 409 naming op 1, nothing applied.
    let applies = sandbox.stats().raft_applies;
    let ops = vec![
        service_op(Verb::Set, instance("web-2", "web", &["k8s"], 81)),
        check_op(Verb::Cas, "critical", c - 1),
    ];
    let err = client.txn(&ops).await.unwrap_err();
    assert!(matches!(err, Error::TxnRolledBack { .. }), "{err}");
    let failed = assert_only_failed_op(&err, &ops, 1);
    assert_eq!(
        failed.what,
        format!("failed to set check \"{check_id}\" on node \"{NODE}\", index is stale")
    );
    assert_eq!(sandbox.stats().raft_applies, applies + 1);
    assert_eq!(stored_checks(&client).await, vec![check.clone()]);
    assert_eq!(
        service_ids(&client).await,
        vec!["web-1"],
        "web-2 rolled back"
    );

    // The current index applies: the status changes, the index moves.
    let results = client
        .txn(&[check_op(Verb::Cas, "critical", c)])
        .await
        .unwrap();
    let written = results[0].check.clone().expect("a check result");
    assert_eq!(written.status, "critical");
    assert!(written.modify_index > c);
    let check2 = stored_checks(&client).await[0].clone();
    assert_eq!(check2.status, "critical");
    assert_eq!(check2.modify_index, written.modify_index);
    let critical = client
        .health_service(
            "web",
            &QueryOptions {
                passing_only: true,
                ..QueryOptions::default()
            },
        )
        .await
        .unwrap()
        .value;
    assert!(critical.is_empty(), "the new status is what health reads");

    // delete-cas with the old index: 409, the check stays.
    let stale = [check_op(Verb::DeleteCas, "", c)];
    let err = client.txn(&stale).await.unwrap_err();
    let failed = assert_only_failed_op(&err, &stale, 0);
    assert_eq!(
        failed.what,
        format!("failed to delete check \"{check_id}\" on node \"{NODE}\", index is stale")
    );
    assert_eq!(stored_checks(&client).await, vec![check2.clone()]);

    // delete-cas with the current index removes only the check.
    client
        .txn(&[check_op(Verb::DeleteCas, "", check2.modify_index)])
        .await
        .unwrap();
    assert!(stored_checks(&client).await.is_empty());
    let ns = node_services(&client).await;
    assert_eq!(ns.services.len(), 1, "the service stays");
}

#[tokio::test]
async fn a_paused_watch_drops_its_request_and_sends_it_again_with_the_same_index() {
    let (sandbox, client) = start_with_web_1().await;
    let (pause_tx, pause_rx) = tokio::sync::watch::channel(false);
    let opts = WatchOptions {
        wait: Duration::from_secs(60),
        min_interval: Duration::ZERO,
        ..WatchOptions::default()
    };
    let pause = mirra_consul::Pause::new(pause_rx, Duration::from_secs(3600));
    // Each answer counted by a parser reading it as it arrives.
    let parse: mirra_consul::BodyParser<serde_json::Value> =
        std::sync::Arc::new(|body| serde_json::from_reader(body).map_err(|e| e.to_string()));
    let mut watch = Box::pin(client.watch_node_services_parsed(NODE, opts, Some(pause), parse));
    let first = watch.next().await.unwrap().unwrap();
    // Driving the stream on a task keeps its next request parked.
    let (tx, mut rx) = tokio::sync::mpsc::channel(4);
    let driver = tokio::spawn(async move {
        while let Some(item) = watch.next().await {
            if tx.send(item).await.is_err() {
                break;
            }
        }
    });
    wait_for_second_node_services_read(&sandbox).await;

    // Paused: the parked query is dropped and nothing is sent while the
    // writes it would only echo go on.
    pause_tx.send_replace(true);
    // The test runs on one thread: these yields let the driver see the
    // pause (and drop its request) before the registration below.
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    client.register(&k8s_web("web-2", 81)).await.unwrap();
    assert!(
        tokio::time::timeout(Duration::from_millis(300), rx.recv())
            .await
            .is_err(),
        "no answer while paused"
    );
    assert_eq!(requests(&sandbox, "GET /v1/catalog/node-services"), 2);

    // Resumed: the same index again, so the missed change is the answer.
    pause_tx.send_replace(false);
    let next = rx.recv().await.unwrap().unwrap();
    assert!(next.index > first.index);
    assert_eq!(next.value["Services"].as_array().map(Vec::len), Some(2));
    assert_eq!(requests(&sandbox, "GET /v1/catalog/node-services"), 3);
    driver.abort();
}

#[tokio::test]
async fn a_parsed_read_sees_the_whole_answer_and_a_refused_body_is_a_decode_error() {
    let (sandbox, client) = start().await;
    // Enough instances that the answer comes off the connection in many
    // chunks.
    let ops: Vec<TxnOp> = std::iter::once(node_set())
        .chain((0..2_000).map(|i| {
            service_op(
                Verb::Set,
                instance(&format!("web-{i}"), "web", &["k8s"], 80),
            )
        }))
        .collect();
    for batch in ops.chunks(64) {
        client.txn(batch).await.unwrap();
    }
    let q = QueryOptions::default();
    let raw = client.node_services_raw(NODE, &q).await.unwrap();
    assert!(raw.value.len() > 256 * 1024, "{} bytes", raw.value.len());

    let parse: mirra_consul::BodyParser<serde_json::Value> =
        std::sync::Arc::new(|body| serde_json::from_reader(body).map_err(|e| e.to_string()));
    let parsed = client.node_services_parsed(NODE, &q, &parse).await.unwrap();
    assert_eq!(parsed.index, raw.index);
    assert_eq!(
        parsed.value,
        serde_json::from_slice::<serde_json::Value>(&raw.value).unwrap()
    );
    assert_eq!(
        parsed.value["Services"].as_array().map(Vec::len),
        Some(2_000)
    );
    let count: mirra_consul::BodyParser<u64> = std::sync::Arc::new(|body| {
        std::io::copy(body, &mut std::io::sink()).map_err(|e| e.to_string())
    });
    let counted = client.node_services_parsed(NODE, &q, &count).await.unwrap();
    assert_eq!(counted.value, raw.value.len() as u64, "every byte, once");

    // A parser that refuses the body after a look: a decode error naming
    // the operation, and no second request (the same body would be
    // refused again).
    let before = requests(&sandbox, "GET /v1/catalog/node-services");
    let refuse: mirra_consul::BodyParser<()> = std::sync::Arc::new(|body| {
        let mut first = [0u8; 16];
        std::io::Read::read_exact(body, &mut first).map_err(|e| e.to_string())?;
        Err("not the answer this parser expects".into())
    });
    match client.node_services_parsed(NODE, &q, &refuse).await {
        Err(mirra_consul::Error::Decode { operation, message }) => {
            assert_eq!(operation, "catalog.node_services");
            assert!(message.contains("not the answer"), "{message}");
        }
        other => panic!("expected a decode error, got {other:?}"),
    }
    assert_eq!(
        requests(&sandbox, "GET /v1/catalog/node-services"),
        before + 1
    );
}
