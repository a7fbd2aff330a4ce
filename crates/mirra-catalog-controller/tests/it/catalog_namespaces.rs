//! Consul Enterprise namespaces (`-enable-namespaces`), against
//! kube-sandbox and consul-sandbox in Enterprise mode over real HTTP:
//! every Service into one destination namespace, or each into
//! `<prefix><Kubernetes namespace>` with mirroring; namespaces created on
//! demand, once; ownership, zero-write adoption and removal across
//! namespaces; a namespace that cannot be created reported while the
//! others keep syncing. Counts come from the sandboxes and the metrics.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::BTreeMap;

use common::*;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, DeleteParams};
use mirra_catalog::ConsulNamespaces;
use mirra_catalog_controller::CatalogMetrics;
use mirra_consul::QueryOptions;

const NODE: &str = "k8s-sync";

async fn enterprise_consul() -> (consul_sandbox::Sandbox, mirra_consul::Client) {
    let config = consul_sandbox::Config {
        enterprise: true,
        ..consul_sandbox::Config::default()
    };
    consul_with(config, consul_client).await
}

/// Service ID -> (Consul namespace, service name, address) of every
/// instance on our node, in every namespace.
async fn placed(c: &mirra_consul::Client) -> BTreeMap<String, (String, String, String)> {
    let q = QueryOptions {
        namespace: Some("*".into()),
        ..QueryOptions::default()
    };
    c.node_services(NODE, &q)
        .await
        .unwrap()
        .value
        .services
        .into_iter()
        .map(|s| (s.id, (s.namespace, s.service, s.address)))
        .collect()
}

/// `(namespace, name, address)` sorted, for comparing placements.
fn where_they_are(p: &BTreeMap<String, (String, String, String)>) -> Vec<(String, String, String)> {
    let mut v: Vec<_> = p.values().cloned().collect();
    v.sort();
    v
}

fn triple(ns: &str, name: &str, addr: &str) -> (String, String, String) {
    (ns.to_owned(), name.to_owned(), addr.to_owned())
}

fn mirrored(prefix: &str) -> mirra_catalog::SyncSettings {
    mirra_catalog::SyncSettings {
        consul_namespaces: ConsulNamespaces::Mirrored {
            prefix: prefix.to_owned(),
        },
        ..sync_settings(NODE)
    }
}

async fn namespace_body(c: &mirra_consul::Client, name: &str) -> Option<mirra_consul::Namespace> {
    c.namespace(name).await.unwrap()
}

#[tokio::test]
async fn every_service_goes_into_the_destination_namespace_created_once() {
    let k = kube().await;
    let (csb, c) = enterprise_consul().await;
    cluster_ip_with_endpoints(&k.client, "a", "web", &[ep("10.0.0.1")]).await;
    cluster_ip_with_endpoints(&k.client, "b", "api", &[ep("10.0.0.2")]).await;

    let sync = mirra_catalog::SyncSettings {
        consul_namespaces: ConsulNamespaces::Destination("apps".into()),
        ..sync_settings(NODE)
    };
    let run = start(&k.client, &c, settings(sync));
    run.wait_ready().await;
    wait_for("both instances in apps", || async {
        where_they_are(&placed(&c).await)
            == vec![
                triple("apps", "api", "10.0.0.2"),
                triple("apps", "web", "10.0.0.1"),
            ]
    })
    .await;
    run.settle(&csb).await;
    assert_eq!(run.metrics.namespaces_created_total(), 1);
    let ns = namespace_body(&c, "apps").await.expect("namespace created");
    assert_eq!(
        ns.meta.get("external-source").map(String::as_str),
        Some("kubernetes")
    );
    // A third Service into the same namespace: no second creation.
    cluster_ip_with_endpoints(&k.client, "c", "db", &[ep("10.0.0.3")]).await;
    wait_for("db in apps", || async {
        placed(&c)
            .await
            .values()
            .any(|(ns, n, _)| ns == "apps" && n == "db")
    })
    .await;
    run.settle(&csb).await;
    assert_eq!(run.metrics.namespaces_created_total(), 1);
    assert_eq!(run.metrics.namespace_failures_total(), 0);
    // Nothing is in the default namespace.
    assert!(instances(&c, NODE).await.is_empty());
    run.stop().await;
}

#[tokio::test]
async fn mirroring_places_each_service_in_its_namespace_and_a_restart_writes_nothing() {
    let k = kube().await;
    let (csb, c) = enterprise_consul().await;
    for (ns, addr) in [
        ("team-a", "10.1.0.1"),
        ("team-b", "10.1.0.2"),
        ("team-c", "10.1.0.3"),
    ] {
        cluster_ip_with_endpoints(&k.client, ns, "web", &[ep(addr)]).await;
    }
    // The same Service name in two namespaces, and a second Service in one.
    cluster_ip_with_endpoints(&k.client, "team-a", "api", &[ep("10.1.1.1")]).await;

    let mut s = settings(mirrored("k8s-"));
    s.cross_namespace_acl_policy = "cross-namespace-policy".into();
    let run = start(&k.client, &c, s.clone());
    run.wait_ready().await;
    let want = vec![
        triple("k8s-team-a", "api", "10.1.1.1"),
        triple("k8s-team-a", "web", "10.1.0.1"),
        triple("k8s-team-b", "web", "10.1.0.2"),
        triple("k8s-team-c", "web", "10.1.0.3"),
    ];
    wait_for("instances in their namespaces", || async {
        where_they_are(&placed(&c).await) == want
    })
    .await;
    run.settle(&csb).await;
    assert_eq!(run.metrics.namespaces_created_total(), 3);
    for ns in ["k8s-team-a", "k8s-team-b", "k8s-team-c"] {
        let body = namespace_body(&c, ns).await.expect("namespace created");
        let policies: Vec<String> = body
            .acls
            .map(|a| a.policy_defaults.into_iter().map(|l| l.name).collect())
            .unwrap_or_default();
        assert_eq!(policies, vec!["cross-namespace-policy".to_owned()], "{ns}");
    }
    // Checks are in the instance's namespace too.
    let q = QueryOptions {
        namespace: Some("k8s-team-b".into()),
        ..QueryOptions::default()
    };
    let checks = c.health_node(NODE, &q).await.unwrap().value;
    assert_eq!(
        checks.iter().filter(|ch| !ch.service_id.is_empty()).count(),
        1
    );
    run.stop().await;

    // A restart adopts every instance in every namespace without a write.
    let applies = csb.stats().raft_applies;
    let metrics = CatalogMetrics::default();
    let run = start_with_metrics(&k.client, &c, s, metrics.clone());
    run.wait_ready().await;
    run.settle(&csb).await;
    assert_eq!(csb.stats().raft_applies, applies, "restart wrote to Consul");
    assert_eq!(metrics.namespaces_created_total(), 0);
    assert_eq!(where_they_are(&placed(&c).await), want);

    // A Service deleted: its instance leaves its namespace, nothing else
    // changes.
    Api::<Service>::namespaced(k.client.clone(), "team-b")
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    wait_for("team-b's instance gone", || async {
        !placed(&c)
            .await
            .values()
            .any(|(ns, _, _)| ns == "k8s-team-b")
    })
    .await;
    run.settle(&csb).await;
    assert_eq!(
        where_they_are(&placed(&c).await),
        vec![
            triple("k8s-team-a", "api", "10.1.1.1"),
            triple("k8s-team-a", "web", "10.1.0.1"),
            triple("k8s-team-c", "web", "10.1.0.3"),
        ]
    );
    // One deregistration, nothing more.
    assert_eq!(csb.stats().raft_applies, applies + 1);
    run.stop().await;
}

#[tokio::test]
async fn a_namespace_that_cannot_be_created_is_reported_and_the_others_keep_syncing() {
    let k = kube().await;
    let (_csb, c) = enterprise_consul().await;
    // `k8s-` and a 63-character Kubernetes namespace make a 67-character
    // Consul namespace name: Consul refuses it.
    let long = format!("n{}", "x".repeat(62));
    cluster_ip_with_endpoints(&k.client, &long, "web", &[ep("10.2.0.1")]).await;
    cluster_ip_with_endpoints(&k.client, "ok", "web", &[ep("10.2.0.2")]).await;

    let run = start(&k.client, &c, settings(mirrored("k8s-")));
    run.wait_ready().await;
    wait_for("the good namespace synced", || async {
        where_they_are(&placed(&c).await) == vec![triple("k8s-ok", "web", "10.2.0.2")]
    })
    .await;
    wait_for("the failure counted", || async {
        run.metrics.namespace_failures_total() >= 1
    })
    .await;
    wait_for("a Warning Event on the Service", || async {
        mirra_testkit::events_about(&k.client, &long, "web")
            .await
            .iter()
            .any(|e| mirra_testkit::is_warning(e, "ConsulNamespaceFailed"))
    })
    .await;
    assert_eq!(run.metrics.namespaces_created_total(), 1);

    // The good namespace keeps syncing while the bad one is retried.
    cluster_ip_with_endpoints(&k.client, "ok", "api", &[ep("10.2.0.3")]).await;
    wait_for("a new Service in the good namespace", || async {
        placed(&c)
            .await
            .values()
            .any(|(ns, n, _)| ns == "k8s-ok" && n == "api")
    })
    .await;
    // Retries of the bad namespace send one Event per Service, not one per
    // attempt.
    wait_for("retried", || async {
        run.metrics.namespace_failures_total() >= 2
    })
    .await;
    let events = mirra_testkit::events(&k.client, &long)
        .await
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("ConsulNamespaceFailed"))
        .count();
    assert_eq!(events, 1);
    run.stop().await;
}

#[tokio::test]
async fn without_namespaces_nothing_names_one() {
    // The same objects with namespaces off, against the Enterprise
    // sandbox: everything lands in `default`, no namespace is created,
    // and a restart writes nothing.
    let k = kube().await;
    let (csb, c) = enterprise_consul().await;
    cluster_ip_with_endpoints(&k.client, "team-a", "web", &[ep("10.3.0.1")]).await;
    let s = settings(sync_settings(NODE));
    let run = start(&k.client, &c, s.clone());
    run.wait_ready().await;
    wait_for("synced", || async {
        where_they_are(&placed(&c).await) == vec![triple("default", "web", "10.3.0.1")]
    })
    .await;
    run.settle(&csb).await;
    assert_eq!(run.metrics.namespaces_created_total(), 0);
    run.stop().await;
    let applies = csb.stats().raft_applies;
    let run = start(&k.client, &c, s);
    run.wait_ready().await;
    run.settle(&csb).await;
    assert_eq!(csb.stats().raft_applies, applies);
    run.stop().await;
}
