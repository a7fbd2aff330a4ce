//! The catalog sync when Consul refuses a transaction as too large (413)
//! or has no cluster leader, against the sandboxes over HTTP. Counts come
//! from the sandbox's stats and the controller's metrics; the final
//! catalog is compared exactly.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use common::*;
use consul_sandbox::Config as ConsulConfig;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, DeleteParams};
use mirra_catalog::service_id;
use mirra_testkit::DEADLINE;
use serde_json::{Value, json};

fn expect(services: &[(&str, &[String])]) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = services
        .iter()
        .flat_map(|(name, addrs)| addrs.iter().map(|a| ((*name).to_owned(), a.clone())))
        .collect();
    v.sort();
    v
}

/// Thirty `service-meta-*` annotations of 500 characters: a registration
/// of about 15 KB, under Consul's per-value (512) and per-instance (64
/// pairs) meta limits, so only the size of the request refuses it.
fn bulky_meta() -> Value {
    let mut m = serde_json::Map::new();
    for i in 0..30 {
        m.insert(
            format!("consul.hashicorp.com/service-meta-k{i}"),
            Value::String("x".repeat(500)),
        );
    }
    Value::Object(m)
}

/// A Consul sandbox that accepts at most `ops` operations per transaction.
async fn consul_accepting_ops(ops: usize) -> (consul_sandbox::Sandbox, mirra_consul::Client) {
    consul_with(
        ConsulConfig {
            max_txn_ops: ops,
            ..ConsulConfig::default()
        },
        consul_client,
    )
    .await
}

#[tokio::test]
async fn transactions_over_the_operation_limit_are_halved_until_they_fit_and_the_limit_is_kept() {
    let k = kube().await;
    // A server that accepts 8 operations per transaction, while mirra is
    // configured for 128 (as against a server before Consul 1.14, which
    // accepts 64).
    let (csb, c) = consul_accepting_ops(8).await;
    let first = ips("10.50.0", 10);
    cluster_ip_with_endpoints(&k.client, "default", "web", &eps(&first)).await;
    let (ctl, reg) = start_registered(&k.client, &c, settings(sync_settings("k8s-sync")));
    ctl.wait_synced(&c, &csb, 10).await;

    // The cold start is 21 operations (the node, then each instance and its
    // check): refused (21 > 8), then halved by instance: [node + 4] is
    // refused again and halved into [node + 1] and [3]; [6] is refused and
    // halved into [3] and [3]. Seven requests, four commits, three splits.
    let mark = ctl.checkpoint(&csb);
    let s = csb.stats();
    assert_eq!(s.requests_for(TXN), 7);
    assert_eq!(s.raft_applies, 4);
    assert_eq!(ctl.metrics.txn_splits_total(), 3);
    assert_eq!(sample(&reg, "mirra_catalog_txn_splits_total"), 3.0);
    assert_eq!(ctl.metrics.registrations_too_large_total(), 0);
    assert_eq!(
        names_and_addresses(&c, "k8s-sync").await,
        expect(&[("web", &first)])
    );

    // The server named its limit: six more instances (12 operations) go as
    // 8 + 4 at once, with no 413.
    let all = ips("10.50.0", 16);
    put_slice(&k.client, "default", "web", "web-1", &eps(&all)).await;
    wait_for_instance_count(&c, "k8s-sync", 16).await;
    let cost = ctl.settled_cost(&csb, &mark).await;
    assert_counts!(cost, txn_requests: 2, raft_applies: 2);
    assert_eq!(ctl.metrics.txn_splits_total(), 3);
    assert_eq!(
        names_and_addresses(&c, "k8s-sync").await,
        expect(&[("web", &all)])
    );
    let checks = check_statuses(&c, "k8s-sync").await;
    assert_eq!(checks.len(), 16);
    assert!(checks.values().all(|s| s == "passing"), "{checks:?}");
    ctl.stop().await;
}

#[tokio::test]
async fn purge_packs_to_the_limit_a_413_names_and_removes_every_instance() {
    let k = kube().await;
    let (csb, c) = consul_accepting_ops(8).await;
    cluster_ip_with_endpoints(&k.client, "default", "web", &eps(&ips("10.51.0", 10))).await;
    let ctl = start_synced(&k.client, &c, &csb, settings(sync_settings("k8s-sync")), 10).await;
    ctl.stop().await;

    let before = csb.stats();
    let mut s = settings(sync_settings("k8s-sync"));
    s.purge = true;
    assert_eq!(s.txn_batch, 128);
    let purge = start(&k.client, &c, s);
    tokio::time::timeout(DEADLINE, purge.task)
        .await
        .expect("purge returns")
        .unwrap()
        .unwrap();
    // Ten removals: refused as one transaction (10 > 8), then read again
    // and sent as 8 + 2.
    let after = csb.stats();
    assert_eq!(after.requests_for(TXN) - before.requests_for(TXN), 3);
    assert_eq!(after.raft_applies - before.raft_applies, 2);
    assert_eq!(purge.metrics.operations_total("deregister"), 10);
    assert!(instances(&c, "k8s-sync").await.is_empty());
    assert!(check_statuses(&c, "k8s-sync").await.is_empty());
}

#[tokio::test]
async fn a_registration_too_large_alone_is_reported_and_held_back_without_blocking_the_others() {
    // The test runtime has one thread, so the controller's tasks log here.
    let (logs, _guard) = mirra_testkit::capture_logs(tracing::Level::ERROR);

    let k = kube().await;
    let (csb, c) = consul_with(
        ConsulConfig {
            max_body_bytes: 8192,
            ..ConsulConfig::default()
        },
        consul_client,
    )
    .await;
    let big = ips("10.51.1", 2);
    let small = ips("10.51.2", 2);
    annotated_cluster_ip_with_endpoints(&k.client, "default", "big", bulky_meta(), &eps(&big))
        .await;
    cluster_ip_with_endpoints(&k.client, "default", "small", &eps(&small)).await;
    let (ctl, reg) = start_registered(&k.client, &c, settings(sync_settings("k8s-sync")));
    // The small instances.
    wait_for_instance_count(&c, "k8s-sync", 2).await;
    wait_for("both big instances reported", || async {
        ctl.metrics.registrations_too_large_total() == 2
    })
    .await;
    ctl.settle(&csb).await;

    // Five entries (the node, two big and two small instances) halve down
    // to single entries where needed: seven requests, two commits (the
    // node, the small instances), each big instance refused alone once.
    let mark = ctl.checkpoint(&csb);
    let s = csb.stats();
    assert_eq!(s.requests_for(TXN), 7);
    assert_eq!(s.raft_applies, 2);
    assert_eq!(ctl.metrics.txn_splits_total(), 3);
    assert_eq!(ctl.metrics.instances_too_large(), 2);
    assert_eq!(
        sample(&reg, "mirra_catalog_registrations_too_large_total"),
        2.0
    );
    assert_eq!(sample(&reg, "mirra_catalog_instances_too_large"), 2.0);
    assert_eq!(
        names_and_addresses(&c, "k8s-sync").await,
        expect(&[("small", &small)])
    );
    let logged = logs.text();
    for addr in &big {
        let line = logged
            .lines()
            .find(|l| l.contains(&service_id("big", addr)))
            .unwrap_or_else(|| panic!("no log line for {addr}: {logged}"));
        assert!(line.contains("service=big"), "{line}");
        assert!(line.contains("key=default/big"), "{line}");
        assert!(line.contains("too large"), "{line}");
    }

    // Not retried: a change to the big Service that leaves its
    // registrations as they are is planned, held back, and sends nothing.
    let held = ctl.metrics.registrations_held_back_total();
    let mut annotations = bulky_meta();
    annotations["unrelated.example.com/touch"] = json!("1");
    cluster_ip(&k.client, "default", "big", annotations).await;
    wait_for("the big Service planned again", || async {
        ctl.metrics.registrations_held_back_total() == held + 2
    })
    .await;
    let cost = ctl.settled_cost(&csb, &mark).await;
    assert_counts!(cost, txn_requests: 0);
    assert_eq!(ctl.metrics.registrations_too_large_total(), 2);

    // The others keep syncing: one more small instance is one transaction.
    let more = ips("10.51.2", 3);
    put_slice(&k.client, "default", "small", "small-1", &eps(&more)).await;
    wait_for_instance_count(&c, "k8s-sync", 3).await;
    let cost = ctl.settled_cost(&csb, &mark).await;
    assert_counts!(cost, txn_requests: 1, raft_applies: 1);

    // Once the registration shrinks it is written: the change lifts the
    // hold.
    cluster_ip(&k.client, "default", "big", json!({})).await;
    // The big instances.
    ctl.wait_synced(&c, &csb, 5).await;
    assert_eq!(ctl.metrics.instances_too_large(), 0);
    assert_eq!(ctl.metrics.registrations_too_large_total(), 2);
    assert_eq!(
        names_and_addresses(&c, "k8s-sync").await,
        expect(&[("big", &big), ("small", &more)])
    );
    ctl.stop().await;
}

#[tokio::test]
async fn without_a_leader_the_writer_backs_off_and_every_change_lands_once_it_is_back() {
    let k = kube().await;
    let (csb, c) = consul().await;
    let web = ips("10.52.0", 2);
    cluster_ip_with_endpoints(&k.client, "default", "web", &eps(&web)).await;
    cluster_ip_with_endpoints(&k.client, "default", "gone", &eps(&ips("10.52.1", 1))).await;
    let mut s = settings(sync_settings("k8s-sync"));
    // One transaction at a time, so that a refused round is one request;
    // delays from 200 ms doubling, far from the cap: after the fourth
    // refused round the writer waits at least 800 ms, ample time to end
    // the outage before a fifth.
    s.txn_concurrency = 1;
    s.write_backoff_base = Duration::from_millis(200);
    s.write_backoff_cap = Duration::from_secs(60);
    let ctl = start_synced(&k.client, &c, &csb, s, 3).await;
    let mark = ctl.checkpoint(&csb);
    let backoffs = ctl.metrics.write_backoffs_total();

    // The cluster loses its leader. Changes keep coming, each in a
    // debounce window of its own, for 30 changes.
    csb.faults().set_leaderless(true);
    let started = tokio::time::Instant::now();
    Api::<Service>::namespaced(k.client.clone(), "default")
        .delete("gone", &DeleteParams::default())
        .await
        .unwrap();
    let web_now = ips("10.52.0", 3);
    put_slice(&k.client, "default", "web", "web-1", &eps(&web_now)).await;
    let mut created = Vec::new();
    for i in 0..30 {
        let name = format!("new{i}");
        cluster_ip_with_endpoints(&k.client, "default", &name, &eps(&[format!("10.53.{i}.1")]))
            .await;
        created.push(name);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The count bound below holds for an outage shorter than this.
    assert!(started.elapsed() < DEADLINE, "the outage took too long");
    csb.faults().set_leaderless(false);

    // Every change lands once the leader is back, exactly.
    let mut want: Vec<(String, String)> = expect(&[("web", &web_now)]);
    for (i, name) in created.iter().enumerate() {
        want.push((name.clone(), format!("10.53.{i}.1")));
    }
    want.sort();
    wait_for("every change in Consul", || async {
        names_and_addresses(&c, "k8s-sync").await == want
    })
    .await;
    ctl.settle(&csb).await;
    assert_eq!(names_and_addresses(&c, "k8s-sync").await, want);
    let checks = check_statuses(&c, "k8s-sync").await;
    assert_eq!(checks.len(), want.len());
    assert!(checks.values().all(|s| s == "passing"), "{checks:?}");

    // Requests while there was no leader: every refused transaction
    // started one backoff (one request per round), at least two rounds
    // were tried, and the rounds followed the backoff, not the 32 changes:
    // the n-th wait is at least 100 ms * 2^(n-1), so an outage shorter
    // than 30 s has room for at most 9 rounds (a writer without backoff
    // sends one per change).
    let cost = mark.cost(&ctl, &csb);
    let sent = cost.txn_requests;
    let committed = cost.raft_applies;
    let refused = sent - committed;
    let rounds = ctl.metrics.write_backoffs_total() - backoffs;
    assert_eq!(refused, rounds, "one refused request per backed-off round");
    assert!((2..=9).contains(&refused), "{refused} refused transactions");
    // The pending changes went out together once the leader was back
    // (keys still in their own queue backoff may make a second round).
    assert!(committed <= 3, "{committed} transactions after the outage");
    ctl.stop().await;
}
