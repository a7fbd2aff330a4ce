//! Every catalog write names the state it was planned from (`cas` and
//! `delete-cas` with the `ModifyIndex` mirra read or wrote): a transaction
//! held in flight while someone else changes the instance is refused by
//! Consul (409) and lands nothing; mirra reads the refused instances again
//! and plans them anew. Against the sandboxes over HTTP; one transaction is
//! held in flight with the sandbox's latency fault, and the concurrent
//! change is made while the sandbox shows that request as received.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use common::*;
use consul_sandbox::FaultRule;
use mirra_consul::{DeregisterRequest, QueryOptions};

const NODE: &str = "k8s-sync";

/// The only instance on our node, as Consul holds it (with its indexes).
async fn only_instance(c: &mirra_consul::Client) -> Option<mirra_consul::Service> {
    let v = c
        .node_services(NODE, &QueryOptions::default())
        .await
        .unwrap();
    assert!(v.value.services.len() <= 1, "{:?}", v.value.services);
    v.value.services.into_iter().next()
}

/// The catalog's `X-Consul-Index` for our node.
async fn node_index(c: &mirra_consul::Client) -> u64 {
    c.node_services(NODE, &QueryOptions::default())
        .await
        .unwrap()
        .index
}

/// Holds the next transaction `delay` in the sandbox before it is handled,
/// then runs `change`, and returns once the held transaction arrived (so
/// that whatever the test does next happens while it is in flight).
async fn hold_next_txn(sb: &consul_sandbox::Sandbox, delay: Duration) -> u64 {
    let before = sb.stats().requests_for(TXN);
    sb.faults().add(
        FaultRule::latency(delay)
            .with_method("PUT")
            .with_path_prefix("/v1/txn")
            .times(1),
    );
    before
}

async fn wait_txn_arrived(sb: &consul_sandbox::Sandbox, before: u64) {
    wait_for("mirra's transaction in flight", || async {
        sb.stats().requests_for(TXN) > before
    })
    .await;
}

/// One Service with one ready endpoint, synced and settled.
async fn synced(
    k: &kube::Client,
    sb: &consul_sandbox::Sandbox,
    c: &mirra_consul::Client,
    run: &Running,
    tag: &str,
) -> mirra_consul::Service {
    annotated_cluster_ip_with_endpoints(k, "default", "web", service_tags(tag), &[ep("10.0.0.1")])
        .await;
    run.wait_ready().await;
    wait_for("the instance is registered", || async {
        only_instance(c)
            .await
            .is_some_and(|s| s.tags.contains(&tag.to_owned()))
    })
    .await;
    run.settle(sb).await;
    only_instance(c).await.unwrap()
}

#[tokio::test]
async fn an_id_taken_over_while_mirras_update_is_in_flight_is_left_to_its_new_owner() {
    let k = kube().await;
    let (sb, c) = consul().await;
    let (run, registry) = start_registered(&k.client, &c, settings(sync_settings(NODE)));
    let mine = synced(&k.client, &sb, &c, &run, "v1").await;

    let before = hold_next_txn(&sb, Duration::from_secs(3)).await;
    cluster_ip(&k.client, "default", "web", service_tags("v2")).await;
    wait_txn_arrived(&sb, before).await;
    // Someone else registers the same ID on our node, without mirra's
    // marks: from now on it is theirs.
    let other = consul_client(&sb.url());
    register(&other, NODE, &mine.id, "web", &["theirs"], &[]).await;
    let theirs = only_instance(&c).await.unwrap();
    assert!(theirs.modify_index > mine.modify_index);

    wait_for("the stale update is refused", || async {
        run.metrics.cas_conflicts_total() >= 1
    })
    .await;
    wait_for("the new owner is reported as a conflict", || async {
        sample(&registry, "mirra_catalog_id_conflicts_total") >= 1.0
    })
    .await;
    run.settle(&sb).await;
    assert_eq!(
        only_instance(&c).await.unwrap(),
        theirs,
        "the update planned from the old state never landed, and nothing was written after it"
    );
    assert_eq!(run.metrics.cas_conflicts_total(), 1);
    assert_eq!(
        sample(&registry, "mirra_catalog_cas_conflicts_total"),
        1.0,
        "exported under the catalog's prefix"
    );
    run.stop().await;
}

#[tokio::test]
async fn an_instance_deleted_while_mirras_update_is_in_flight_is_registered_again() {
    let k = kube().await;
    let (sb, c) = consul().await;
    let run = start(&k.client, &c, settings(sync_settings(NODE)));
    let mine = synced(&k.client, &sb, &c, &run, "v1").await;

    let before = hold_next_txn(&sb, Duration::from_secs(3)).await;
    cluster_ip(&k.client, "default", "web", service_tags("v2")).await;
    wait_txn_arrived(&sb, before).await;
    let other = consul_client(&sb.url());
    other
        .deregister(&DeregisterRequest {
            node: NODE.into(),
            service_id: mine.id.clone(),
            ..DeregisterRequest::default()
        })
        .await
        .unwrap();
    assert!(only_instance(&c).await.is_none());

    wait_for("the stale update is refused", || async {
        run.metrics.cas_conflicts_total() >= 1
    })
    .await;
    // Read again, it is absent: planned again, it is created ("only if
    // absent", index 0) with the newest tags.
    wait_for("registered again", || async {
        only_instance(&c)
            .await
            .is_some_and(|s| s.tags.contains(&"v2".to_owned()))
    })
    .await;
    run.settle(&sb).await;
    let now = only_instance(&c).await.unwrap();
    assert_eq!(now.id, mine.id);
    assert!(!now.tags.contains(&"v1".to_owned()));
    assert_eq!(
        check_statuses(&c, NODE)
            .await
            .get(&mine.id)
            .map(String::as_str),
        Some("passing")
    );
    assert_eq!(run.metrics.cas_conflicts_total(), 1);
    run.stop().await;
}

/// A leader paused with a transaction in flight (here: held in the sandbox)
/// while Kubernetes moves on and a new leader writes the newer state: the
/// old leader's transaction, planned from the old state, arrives last and
/// is refused. It changes nothing in the catalog: the instance, its index
/// and the catalog's index stay as the new leader left them. In Consul a
/// `cas` is checked when the Raft entry is applied, so the refused
/// transaction is one Raft apply that commits nothing, and the sandbox
/// counts it the same way.
#[tokio::test]
async fn a_stale_leaders_transaction_arriving_after_a_newer_write_changes_nothing() {
    let k = kube().await;
    let (sb, c) = consul().await;
    let old = start(&k.client, &c, settings(sync_settings(NODE)));
    synced(&k.client, &sb, &c, &old, "v1").await;

    let before = hold_next_txn(&sb, Duration::from_secs(8)).await;
    cluster_ip(&k.client, "default", "web", service_tags("v2")).await;
    wait_txn_arrived(&sb, before).await;

    cluster_ip(&k.client, "default", "web", service_tags("v3")).await;
    let new = start(
        &k.client,
        &consul_client(&sb.url()),
        settings(sync_settings(NODE)),
    );
    new.wait_ready().await;
    wait_for("the new leader wrote the newer state", || async {
        only_instance(&c)
            .await
            .is_some_and(|s| s.tags.contains(&"v3".to_owned()))
    })
    .await;
    assert_eq!(
        old.metrics.cas_conflicts_total(),
        0,
        "the old leader's transaction is still in flight"
    );
    let newer = only_instance(&c).await.unwrap();
    let index = node_index(&c).await;
    let applies = sb.stats().raft_applies;

    wait_for("the old leader's transaction is refused", || async {
        old.metrics.cas_conflicts_total() >= 1
    })
    .await;
    old.settle(&sb).await;
    new.settle(&sb).await;
    assert_eq!(
        only_instance(&c).await.unwrap(),
        newer,
        "nothing landed over it"
    );
    assert_eq!(node_index(&c).await, index, "the catalog did not move");
    assert_eq!(
        sb.stats().raft_applies,
        applies + 1,
        "the refused transaction, and no write after it: both replicas see the newest state as desired"
    );
    assert_eq!(old.metrics.cas_conflicts_total(), 1);
    assert_eq!(new.metrics.cas_conflicts_total(), 0);
    old.stop().await;
    new.stop().await;
}

/// mirra creates its node with `cas` index 0 ("only if absent"). When
/// someone else registers that node while mirra's first transaction is in
/// flight, that operation is refused, the node is taken as existing, and
/// the rest of the transaction commits without it: the other node's
/// address and meta are never overwritten.
#[tokio::test]
async fn a_node_registered_by_someone_else_meanwhile_is_not_rewritten() {
    let k = kube().await;
    let (sb, c) = consul().await;
    let web = [ep("10.0.0.1")];
    annotated_cluster_ip_with_endpoints(&k.client, "default", "web", service_tags("v1"), &web)
        .await;
    let before = hold_next_txn(&sb, Duration::from_secs(3)).await;
    let run = start(&k.client, &c, settings(sync_settings(NODE)));
    wait_txn_arrived(&sb, before).await;
    let other = consul_client(&sb.url());
    other
        .register(&mirra_consul::RegisterRequest {
            node: NODE.into(),
            address: "10.9.9.9".into(),
            node_meta: [("owner".to_owned(), "someone-else".to_owned())].into(),
            ..mirra_consul::RegisterRequest::default()
        })
        .await
        .unwrap();
    let node_of = |nodes: Vec<mirra_consul::Node>| nodes.into_iter().find(|n| n.node == NODE);
    let theirs = node_of(c.nodes(&QueryOptions::default()).await.unwrap().value).unwrap();

    wait_for("the instance is registered", || async {
        only_instance(&c).await.is_some()
    })
    .await;
    run.settle(&sb).await;
    let now = node_of(c.nodes(&QueryOptions::default()).await.unwrap().value).unwrap();
    assert_eq!(now, theirs, "the node is as its owner registered it");
    assert_eq!(now.address, "10.9.9.9");
    assert_eq!(run.metrics.cas_conflicts_total(), 1, "the node's creation");
    assert_eq!(
        check_statuses(&c, NODE).await.len(),
        1,
        "the instance and its check committed"
    );
    run.stop().await;
}
