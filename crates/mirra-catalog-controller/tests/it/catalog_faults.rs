//! The catalog sync under Consul faults, against the sandboxes over HTTP:
//! rate limiting (429), a slow Consul, transactions rolled back (409), and
//! failing reads of the node's instances and checks. Each test checks from
//! the sandbox's stats that the fault fired, then the exact writes (Raft
//! applies, transactions, operations) and the exact final catalog.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use common::*;
use consul_sandbox::FaultRule as ConsulFault;
use mirra_catalog::service_id;
use serde_json::json;

/// `(name, address)` for every address of `name`.
fn expect(name: &str, addrs: &[String]) -> Vec<(String, String)> {
    addrs.iter().map(|a| (name.to_owned(), a.clone())).collect()
}

fn sorted(mut v: Vec<(String, String)>) -> Vec<(String, String)> {
    v.sort();
    v
}

#[tokio::test]
async fn rate_limited_writes_are_retried_until_they_commit() {
    let k = kube().await;
    let (csb, c) = consul().await;
    cluster_ip_with_endpoints(&k.client, "default", "web", &eps(&ips("10.40.0", 2))).await;
    let (ctl, reg) = start_registered(&k.client, &c, settings(sync_settings("k8s-sync")));
    ctl.wait_synced(&c, &csb, 2).await;

    let mark = ctl.checkpoint(&csb);
    // Consul's rate limiter refuses the next three transactions. The client
    // does not retry (see common::consul_client), so each 429 is one failed
    // round of the key, retried by the work queue's backoff.
    csb.faults().add(
        ConsulFault::error(429, "rate limit exceeded")
            .with_path_prefix("/v1/txn")
            .times(3),
    );
    let addrs = ips("10.40.0", 3);
    put_slice(&k.client, "default", "web", "web-1", &eps(&addrs)).await;
    wait_for_instance_count(&c, "k8s-sync", 3).await;
    let cost = ctl.settled_cost(&csb, &mark).await;

    assert_counts!(cost, faults_injected: 3);
    assert_eq!(csb.faults().active_rules(), 0, "all three 429s were used");
    // Three refused attempts and the one that committed; only that one is
    // a Raft apply.
    assert_counts!(cost, txn_requests: 4, raft_applies: 1);
    assert_eq!(
        sample(
            &reg,
            r#"mirra_catalog_consul_errors_total{class="rate_limited"}"#
        ),
        3.0
    );
    assert_counts!(cost, transactions: 1, registers: 1, deregisters: 0);
    // Both plans of the retried key found the two old instances in step.
    assert_eq!(cost.avoided, 4 * 2);
    assert_eq!(
        names_and_addresses(&c, "k8s-sync").await,
        expect("web", &addrs)
    );
    let checks = check_statuses(&c, "k8s-sync").await;
    assert_eq!(checks.len(), 3);
    assert!(checks.values().all(|s| s == "passing"), "{checks:?}");
    ctl.stop().await;
}

#[tokio::test]
async fn slow_consul_loses_no_change_and_writes_nothing_twice() {
    let k = kube().await;
    let (csb, c) = consul().await;
    for (name, net) in [("a", "10.41.1"), ("b", "10.41.2"), ("c", "10.41.3")] {
        cluster_ip_with_endpoints(&k.client, "default", name, &eps(&ips(net, 1))).await;
    }
    let ctl = start_synced(&k.client, &c, &csb, settings(sync_settings("k8s-sync")), 3).await;

    let mark = ctl.checkpoint(&csb);
    // The next transaction takes 2 s, and the next two node-services reads
    // 0.7 s each: Consul answers, slowly.
    csb.faults().add(
        ConsulFault::latency(Duration::from_millis(2000))
            .with_path_prefix("/v1/txn")
            .times(1),
    );
    csb.faults().add(
        ConsulFault::latency(Duration::from_millis(700))
            .with_path_prefix("/v1/catalog/node-services")
            .times(2),
    );
    put_slice(&k.client, "default", "a", "a-1", &eps(&ips("10.41.1", 2))).await;
    // The sandbox counts a request when it arrives, before the delay: from
    // here on, a's slow transaction is on the wire.
    wait_for("the slow transaction sent", || async {
        mark.cost(&ctl, &csb).txn_requests == 1
    })
    .await;
    // Two changes of b while it is: neither may be lost, and b is written
    // once with both.
    put_slice(&k.client, "default", "b", "b-1", &eps(&ips("10.41.2", 2))).await;
    put_slice(&k.client, "default", "b", "b-1", &eps(&ips("10.41.2", 3))).await;
    wait_for_instance_count(&c, "k8s-sync", 6).await;
    // The slow reads come after the commits; wait until both were served.
    wait_for("both slow reads served", || async {
        csb.faults().active_rules() == 0
    })
    .await;
    let cost = ctl.settled_cost(&csb, &mark).await;

    // a's slow transaction and b's; no answer read before a commit made
    // anything be written again, and c was never written.
    assert_counts!(cost, txn_requests: 2, raft_applies: 2);
    assert_counts!(cost, transactions: 2, registers: 3, deregisters: 0, avoided: 2);
    let want = [
        expect("a", &ips("10.41.1", 2)),
        expect("b", &ips("10.41.2", 3)),
        expect("c", &ips("10.41.3", 1)),
    ]
    .concat();
    assert_eq!(names_and_addresses(&c, "k8s-sync").await, sorted(want));
    assert_eq!(cost.faults_injected, 0, "no errors");
    ctl.stop().await;
}

#[tokio::test]
async fn rolled_back_transactions_retry_the_refused_entries_until_they_commit() {
    let k = kube().await;
    let (csb, c) = consul().await;
    cluster_ip_with_endpoints(&k.client, "default", "a", &eps(&ips("10.42.1", 1))).await;
    cluster_ip_with_endpoints(&k.client, "default", "b", &eps(&ips("10.42.2", 1))).await;
    let (ctl, reg) = start_registered(&k.client, &c, settings(sync_settings("k8s-sync")));
    ctl.wait_synced(&c, &csb, 2).await;
    let rolled_back = || {
        sample(
            &reg,
            r#"mirra_catalog_consul_errors_total{class="txn_rolled_back"}"#,
        )
    };

    // Two new endpoints of `a`: one transaction with two registrations
    // (instance and check each). Consul refuses it with a 409 in its own
    // shape, naming the first operation, and applies nothing.
    let mark = ctl.checkpoint(&csb);
    let refusal = json!({"Results": null,
                         "Errors": [{"OpIndex": 0, "What": "injected: refused"}]});
    csb.faults().add(
        ConsulFault::error(409, refusal.to_string())
            .with_path_prefix("/v1/txn")
            .times(1),
    );
    let addrs = ips("10.42.1", 3);
    put_slice(&k.client, "default", "a", "a-1", &eps(&addrs)).await;
    wait_for_instance_count(&c, "k8s-sync", 4).await;
    let cost = ctl.settled_cost(&csb, &mark).await;
    assert_counts!(cost, faults_injected: 1);
    assert_eq!(rolled_back(), 1.0);
    // The refused transaction; the same transaction without the refused
    // registration (committed); `a` again after its backoff, writing only
    // the refused registration (committed). Only commits are Raft applies,
    // and the registration that committed is not written twice.
    assert_counts!(cost, txn_requests: 3, raft_applies: 2);
    assert_counts!(cost, transactions: 2, registers: 2, deregisters: 0);
    let want = [expect("a", &addrs), expect("b", &ips("10.42.2", 1))].concat();
    assert_eq!(names_and_addresses(&c, "k8s-sync").await, sorted(want));
    let checks = check_statuses(&c, "k8s-sync").await;
    assert_eq!(checks.len(), 4, "every instance has its readiness check");
    assert!(checks.values().all(|s| s == "passing"), "{checks:?}");

    // A 409 whose body names no operation: every entry of the transaction
    // counts as refused and is retried.
    let mark = ctl.checkpoint(&csb);
    csb.faults().add(
        ConsulFault::error(409, "rpc error: transaction conflict")
            .with_path_prefix("/v1/txn")
            .times(1),
    );
    put_slice(&k.client, "default", "a", "a-1", &eps(&ips("10.42.1", 4))).await;
    wait_for_instance_count(&c, "k8s-sync", 5).await;
    let cost = ctl.settled_cost(&csb, &mark).await;
    assert_counts!(cost, faults_injected: 1);
    assert_eq!(rolled_back(), 2.0);
    assert_counts!(cost, txn_requests: 2, raft_applies: 1);
    assert_counts!(cost, transactions: 1, registers: 1, deregisters: 0);
    assert!(
        instances(&c, "k8s-sync")
            .await
            .contains_key(&service_id("a", "10.42.1.4"))
    );
    ctl.stop().await;
}

/// Adds rules failing every read of the node's instances and checks, the
/// two blocking queries the controller's observed state comes from.
fn fail_reads(csb: &consul_sandbox::Sandbox) {
    for prefix in ["/v1/catalog/node-services", "/v1/health/node"] {
        csb.faults().add(
            ConsulFault::error(500, "injected read failure")
                .with_method("GET")
                .with_path_prefix(prefix),
        );
    }
}

/// Foreign instances the controller must never touch: on our node without
/// our tag, on our node without the `external-source` meta, and with both
/// marks on another node.
async fn register_foreign(c: &mirra_consul::Client) {
    register(c, "k8s-sync", "untagged", "foreign", &[], OWNED_META).await;
    register(c, "k8s-sync", "no-meta", "foreign", &["k8s"], &[]).await;
    register(c, "other-node", "elsewhere", "web", &["k8s"], OWNED_META).await;
}

/// `(name, address)` of `web`'s instances at `addrs` and of the two foreign
/// instances on our node (see [`register_foreign`]), sorted.
fn web_and_foreign(addrs: &[String]) -> Vec<(String, String)> {
    let foreign = ["10.250.0.1".to_owned(), "10.250.0.1".to_owned()];
    sorted([expect("web", addrs), expect("foreign", &foreign)].concat())
}

#[tokio::test]
async fn failing_reads_while_running_write_nothing_stale_and_converge() {
    let k = kube().await;
    let (csb, c) = consul().await;
    register_foreign(&c).await;
    cluster_ip_with_endpoints(&k.client, "default", "web", &eps(&ips("10.43.0", 2))).await;
    let mut s = settings(sync_settings("k8s-sync"));
    // Short waits, so that the parked queries end and re-read (and fail)
    // soon; frequent verification passes, which must plan from the last
    // good answer, not from a missing one.
    s.consul_wait = Duration::from_secs(1);
    s.verify_interval = Duration::from_millis(500);
    let (ctl, reg) = start_registered(&k.client, &c, s);
    // web registered beside the two foreign instances.
    ctl.wait_synced(&c, &csb, 4).await;

    let mark = ctl.checkpoint(&csb);
    let server_errors = || {
        sample(
            &reg,
            r#"mirra_catalog_consul_errors_total{class="server_error"}"#,
        )
    };
    let errors0 = server_errors();
    fail_reads(&csb);
    wait_for("both watches failing", || async {
        mark.cost(&ctl, &csb).faults_injected >= 4
    })
    .await;
    // Verification passes ran on the last good answer: nothing to write.
    assert_eq!(mark.cost(&ctl, &csb).raft_applies, 0);

    // While the controller cannot read: someone removes one of our
    // instances (unseen until reads work again), and an endpoint is added.
    let gone = service_id("web", "10.43.0.1");
    c.deregister(&mirra_consul::DeregisterRequest {
        node: "k8s-sync".into(),
        service_id: gone.clone(),
        ..mirra_consul::DeregisterRequest::default()
    })
    .await
    .unwrap();
    let addrs = ips("10.43.0", 3);
    put_slice(&k.client, "default", "web", "web-1", &eps(&addrs)).await;
    let injected = csb.stats().faults_injected;
    wait_for("more failed reads", || async {
        csb.stats().faults_injected >= injected + 4
    })
    .await;
    // Nothing foreign was touched meanwhile (read through an endpoint the
    // faults leave alone).
    let foreign = c
        .service("foreign", &mirra_consul::QueryOptions::default())
        .await
        .unwrap()
        .value;
    assert_eq!(foreign.len(), 2);

    csb.faults().clear();
    wait_for("converged", || async {
        names_and_addresses(&c, "k8s-sync").await == web_and_foreign(&addrs)
    })
    .await;
    let cost = ctl.settled_cost(&csb, &mark).await;
    // The new endpoint, and the instance removed behind our back (restored
    // once a fresh answer showed it missing); nothing deregistered.
    assert_counts!(cost, registers: 2, deregisters: 0);
    // Raft applies: the third party's deregistration and our transactions.
    assert_eq!(
        cost.raft_applies,
        1 + cost.transactions,
        "no write outside the counted transactions"
    );
    // Every failed read reached the controller as an error.
    assert_eq!(server_errors() - errors0, cost.faults_injected as f64);
    assert!(instances(&c, "other-node").await.contains_key("elsewhere"));
    let checks = check_statuses(&c, "k8s-sync").await;
    let web_checks: Vec<&String> = addrs
        .iter()
        .map(|a| checks.get(&service_id("web", a)).expect("web check"))
        .collect();
    assert!(web_checks.iter().all(|s| *s == "passing"), "{checks:?}");
    ctl.stop().await;
}

#[tokio::test]
async fn failing_reads_at_startup_hold_every_write_until_consul_answers() {
    let k = kube().await;
    let (csb, c) = consul().await;
    register_foreign(&c).await;
    // An instance with our marks that no Service wants: reaped, but only
    // once the controller has really read the node.
    register(&c, "k8s-sync", "orphan", "old", &["k8s"], OWNED_META).await;
    cluster_ip_with_endpoints(&k.client, "default", "web", &eps(&ips("10.44.0", 2))).await;
    fail_reads(&csb);
    let before = csb.stats();
    let mut s = settings(sync_settings("k8s-sync"));
    s.consul_wait = Duration::from_secs(1);
    let ctl = start(&k.client, &c, s);
    wait_for("reads failing", || async {
        csb.stats().faults_injected >= before.faults_injected + 4
    })
    .await;
    assert!(!ctl.ready.is_ready(), "not ready without Consul's state");
    assert_eq!(
        csb.stats().raft_applies,
        before.raft_applies,
        "nothing written before the first answers"
    );

    csb.faults().clear();
    ctl.wait_ready().await;
    wait_for("converged", || async {
        names_and_addresses(&c, "k8s-sync").await == web_and_foreign(&ips("10.44.0", 2))
    })
    .await;
    ctl.settle(&csb).await;
    // One transaction: the orphan's removal and the two registrations (the
    // node exists already).
    assert_eq!(csb.stats().raft_applies - before.raft_applies, 1);
    assert_counts!(Writes::of(&ctl.metrics), transactions: 1, registers: 2, deregisters: 1);
    assert!(instances(&c, "other-node").await.contains_key("elsewhere"));
    ctl.stop().await;
}
