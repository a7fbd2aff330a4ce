//! The catalog controller against kube-sandbox and consul-sandbox over real
//! HTTP: counts come from the sandboxes' stats (Raft applies), states from
//! Consul's catalog and health reads.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use consul_sandbox::FaultRule as ConsulFault;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, DeleteParams};
use mirra_catalog::service_id;
use mirra_consul::{ConsulConfig, QueryOptions, RegisterRequest};
use mirra_testkit::is_warning;
use serde_json::json;

use crate::common;

// The shared fixtures, except the Consul client: these tests keep the
// client's own retries (common's client makes one attempt per request).
use common::{
    OWNED_META, annotated_cluster_ip_with_endpoints, cluster_ip_with_endpoints, consul_with,
    desired_for, ep, eps, fail_lists, instances, ips, kube, names_and_addresses, put_slice,
    register, register_like_consul_k8s, sample, settings, start, start_registered, start_settled,
    start_synced, sync_settings, unready, wait_for, wait_for_instance_count,
};

async fn consul() -> (consul_sandbox::Sandbox, mirra_consul::Client) {
    consul_with(consul_sandbox::Config::default(), consul_client).await
}

fn consul_client(url: &str) -> mirra_consul::Client {
    let mut cfg = ConsulConfig::new(url).unwrap();
    // Keep retries inside the client short so that outages reach the
    // controller's own per-key backoff quickly.
    cfg.request_timeout = Duration::from_secs(5);
    mirra_consul::Client::new(cfg).unwrap()
}

/// Waits until the check of `web`'s first instance is `status`.
async fn wait_for_web_check(c: &mirra_consul::Client, status: &str) {
    wait_for(&format!("web's check {status}"), || async {
        web_check_status(c).await.as_deref() == Some(status)
    })
    .await;
}

/// The status of the check of `web`'s first instance.
async fn web_check_status(c: &mirra_consul::Client) -> Option<String> {
    let v = c
        .health_service("web", &QueryOptions::default())
        .await
        .unwrap();
    v.value
        .first()
        .and_then(|e| e.checks.iter().find(|ch| ch.service_id == e.service.id))
        .map(|ch| ch.status.clone())
}

/// Operations per transaction by default.
const BATCH: u64 = mirra_consul::config::DEFAULT_TXN_MAX_OPS as u64;

/// Wire operations of registering `n` endpoint instances (instance + check).
fn register_ops(n: u64) -> u64 {
    2 * n
}

#[tokio::test]
async fn cold_start_costs_ceil_ops_over_batch_and_restart_in_step_costs_zero() {
    let k = kube().await;
    let (csb, c) = consul().await;
    let addrs = ips("10.0.0", 20);
    for name in ["web", "api", "db"] {
        cluster_ip_with_endpoints(&k.client, "default", name, &eps(&addrs)).await;
    }
    let before = csb.stats().raft_applies;
    let ctl = start(&k.client, &c, settings(sync_settings("k8s-sync")));
    ctl.wait_ready().await;
    wait_for_instance_count(&c, "k8s-sync", 60).await;
    ctl.settle(&csb).await;
    // One node op, then 60 instances with their checks, in transactions of
    // the default 128 operations: one.
    let ops = 1 + register_ops(60);
    assert_eq!(ops.div_ceil(BATCH), 1);
    assert_eq!(csb.stats().raft_applies - before, ops.div_ceil(BATCH));
    assert_eq!(ctl.metrics.transactions_total(), ops.div_ceil(BATCH));
    ctl.stop().await;

    let (ctl, cost) = start_settled(&k.client, &c, &csb, settings(sync_settings("k8s-sync"))).await;
    assert_eq!(cost.raft_applies, 0, "restart in step must not write");
    // Each Service was planned once, by the first pass: the initial lists
    // do not queue them for a second plan after it.
    assert_eq!(ctl.metrics.writes_avoided_total(), 60);
    // Check state comes from the health/node watch, never from one read
    // per service name.
    assert_eq!(csb.stats().requests_for("GET /v1/health/service"), 0);
    assert!(csb.stats().requests_for("GET /v1/health/node") >= 2);
    ctl.stop().await;
}

#[tokio::test]
async fn rollout_in_one_window_single_change_and_idle_counts() {
    let k = kube().await;
    let (csb, c) = consul().await;
    let old = ips("10.1.0", 30);
    cluster_ip_with_endpoints(&k.client, "default", "web", &eps(&old)).await;
    let mut s = settings(sync_settings("k8s-sync"));
    // Wide enough that the two slice writes below land in one window.
    s.queue.debounce = Duration::from_millis(400);
    s.queue.max_delay = Duration::from_millis(2000);
    let ctl = start_synced(&k.client, &c, &csb, s, 30).await;

    // Rollout: all 30 endpoints replaced, spread over two slices, in one window.
    let new = ips("10.2.0", 30);
    let before = csb.stats().raft_applies;
    put_slice(&k.client, "default", "web", "web-1", &eps(&new[..15])).await;
    put_slice(&k.client, "default", "web", "web-2", &eps(&new[15..])).await;
    wait_for("new instances", || async {
        let inst = instances(&c, "k8s-sync").await;
        inst.len() == 30 && inst.values().all(|i| i.address.starts_with("10.2.0."))
    })
    .await;
    ctl.settle(&csb).await;
    let ops = 30 + register_ops(30);
    assert_eq!(csb.stats().raft_applies - before, ops.div_ceil(BATCH));

    // One endpoint added: one transaction.
    let before = csb.stats().raft_applies;
    let mut more = new[15..].to_vec();
    more.push("10.2.0.99".into());
    put_slice(&k.client, "default", "web", "web-2", &eps(&more)).await;
    wait_for_instance_count(&c, "k8s-sync", 31).await;
    ctl.settle(&csb).await;
    assert_eq!(csb.stats().raft_applies - before, 1);
    ctl.stop().await;

    // Idle with frequent verification passes: zero writes.
    let mut s = settings(sync_settings("k8s-sync"));
    s.verify_interval = Duration::from_millis(100);
    let ctl = start(&k.client, &c, s);
    ctl.wait_ready().await;
    let before = csb.stats().raft_applies;
    for _ in 0..10 {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    ctl.settle(&csb).await;
    assert_eq!(csb.stats().raft_applies, before, "idle must not write");
    assert_eq!(ctl.metrics.pass_drift_total(), 0, "in step: no drift");

    // An owned instance nothing wants, put on our node by someone else, is
    // reaped only by a verification pass: counted as drift the event path
    // missed.
    register(&c, "k8s-sync", "stray-1", "stray", &["k8s"], OWNED_META).await;
    // The stray instance reaped.
    wait_for_instance_count(&c, "k8s-sync", 31).await;
    wait_for("the repair counted as drift", || async {
        ctl.metrics.pass_drift_total() == 1
    })
    .await;
    ctl.stop().await;
}

#[tokio::test]
async fn readiness_flip_updates_the_check_with_one_write() {
    let k = kube().await;
    let (csb, c) = consul().await;
    cluster_ip_with_endpoints(&k.client, "default", "web", &[ep("10.3.0.1")]).await;
    let ctl = start(&k.client, &c, settings(sync_settings("k8s-sync")));
    wait_for_web_check(&c, "passing").await;
    ctl.settle(&csb).await;
    let before = csb.stats().raft_applies;
    put_slice(&k.client, "default", "web", "web-1", &[unready("10.3.0.1")]).await;
    wait_for_web_check(&c, "critical").await;
    ctl.settle(&csb).await;
    assert_eq!(csb.stats().raft_applies - before, 1);
    ctl.stop().await;

    // After a restart the remembered check state is read back: no write,
    // and a flip back is still seen.
    let (ctl, _) = start_settled(&k.client, &c, &csb, settings(sync_settings("k8s-sync"))).await;
    let before = csb.stats().raft_applies;
    assert_eq!(web_check_status(&c).await.as_deref(), Some("critical"));
    put_slice(&k.client, "default", "web", "web-1", &[ep("10.3.0.1")]).await;
    wait_for_web_check(&c, "passing").await;
    ctl.settle(&csb).await;
    assert_eq!(csb.stats().raft_applies - before, 1);
    ctl.stop().await;
}

#[tokio::test]
async fn check_changed_by_someone_else_is_seen_and_restored_with_one_write() {
    let k = kube().await;
    let (csb, c) = consul().await;
    cluster_ip_with_endpoints(&k.client, "default", "web", &[ep("10.4.0.1")]).await;
    let mut s = settings(sync_settings("k8s-sync"));
    // The verification pass is what repairs drift nobody announced.
    s.verify_interval = Duration::from_millis(300);
    let ctl = start(&k.client, &c, s);
    wait_for_web_check(&c, "passing").await;
    ctl.settle(&csb).await;

    // A third party marks our check critical.
    let entry = c
        .health_service("web", &QueryOptions::default())
        .await
        .unwrap()
        .value
        .remove(0);
    let mut check = entry
        .checks
        .into_iter()
        .find(|ch| ch.service_id == entry.service.id)
        .unwrap();
    check.status = "critical".into();
    let before = csb.stats().raft_applies;
    c.txn(&[mirra_consul::TxnOp::Check {
        verb: mirra_consul::Verb::Set,
        check,
    }])
    .await
    .unwrap();
    assert_eq!(csb.stats().raft_applies - before, 1);
    wait_for_web_check(&c, "passing").await;
    ctl.settle(&csb).await;
    // Theirs, then exactly one repair of ours.
    assert_eq!(csb.stats().raft_applies - before, 2);
    ctl.stop().await;
}

#[tokio::test]
async fn adopting_consul_k8s_registrations_costs_zero() {
    let k = kube().await;
    let (csb, c) = consul().await;
    let addrs = ips("10.4.0", 5);
    annotated_cluster_ip_with_endpoints(
        &k.client,
        "default",
        "web",
        json!({"consul.hashicorp.com/service-tags": "a,b"}),
        &eps(&addrs),
    )
    .await;
    // What consul-k8s writes for this Service, per instance.
    let sync = sync_settings("k8s-sync");
    let out = desired_for(&k.client, "default", "web", &sync).await;
    assert_eq!(out.registrations.len(), 5);
    for r in &out.registrations {
        assert_eq!(r.id, service_id("web", &r.address));
        register_like_consul_k8s(&c, r, "k8s-sync").await;
    }
    let (ctl, cost) = start_settled(&k.client, &c, &csb, settings(sync)).await;
    assert_eq!(cost.raft_applies, 0, "adoption must not write");
    assert!(ctl.metrics.writes_avoided_total() >= 5);
    ctl.stop().await;
}

#[tokio::test]
async fn reaps_only_owned_instances_and_never_before_sync() {
    let k = kube().await;
    let (csb, c) = consul().await;
    cluster_ip_with_endpoints(&k.client, "default", "web", &[ep("10.5.0.1")]).await;
    let node = "k8s-sync";
    register(&c, node, "orphan", "old", &["k8s"], OWNED_META).await;
    register(&c, node, "untagged", "old", &[], OWNED_META).await;
    register(&c, node, "no-meta", "old", &["k8s"], &[]).await;
    register(&c, "other", "other-node", "old", &["k8s"], OWNED_META).await;

    // EndpointSlice lists fail: the controller cannot have full knowledge.
    fail_lists(&k.sb, "endpointslices.discovery.k8s.io", 500, None).await;
    let before = csb.stats().raft_applies;
    let ctl = start(&k.client, &c, settings(sync_settings(node)));
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert!(!ctl.ready.is_ready());
    assert_eq!(
        csb.stats().raft_applies,
        before,
        "nothing written before sync"
    );
    assert!(instances(&c, node).await.contains_key("orphan"));

    k.sb.clear_faults().await;
    ctl.wait_ready().await;
    wait_for("orphan reaped", || async {
        !instances(&c, node).await.contains_key("orphan")
    })
    .await;
    ctl.settle(&csb).await;
    let left = instances(&c, node).await;
    assert!(left.contains_key("untagged"));
    assert!(left.contains_key("no-meta"));
    assert!(left.contains_key(&service_id("web", "10.5.0.1")));
    assert!(instances(&c, "other").await.contains_key("other-node"));
    ctl.stop().await;
}

#[tokio::test]
async fn same_name_in_two_namespaces() {
    let k = kube().await;
    let (csb, c) = consul().await;
    cluster_ip_with_endpoints(&k.client, "a", "web", &[ep("10.6.0.1")]).await;
    cluster_ip_with_endpoints(&k.client, "b", "web", &[ep("10.6.0.2")]).await;
    let ctl = start(&k.client, &c, settings(sync_settings("k8s-sync")));
    wait_for_instance_count(&c, "k8s-sync", 2).await;
    let inst = instances(&c, "k8s-sync").await;
    assert!(inst.values().all(|i| i.name == "web"));
    Api::<Service>::namespaced(k.client.clone(), "a")
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    // a's instance gone.
    wait_for_instance_count(&c, "k8s-sync", 1).await;
    ctl.settle(&csb).await;
    let inst = instances(&c, "k8s-sync").await;
    assert!(inst.contains_key(&service_id("web", "10.6.0.2")));
    ctl.stop().await;
}

#[tokio::test]
async fn flag_changes_across_restart_remove_old_names_and_add_new() {
    let k = kube().await;
    let (csb, c) = consul().await;
    cluster_ip_with_endpoints(&k.client, "default", "web", &[ep("10.7.0.1")]).await;
    cluster_ip_with_endpoints(&k.client, "other", "api", &[ep("10.7.0.2")]).await;
    let ctl = start_synced(&k.client, &c, &csb, settings(sync_settings("k8s-sync")), 2).await;
    ctl.stop().await;

    let mut sync = sync_settings("k8s-sync");
    sync.consul_service_prefix = "p-".into();
    sync.add_k8s_namespace_suffix = true;
    sync.allow_k8s_namespaces = ["default".to_owned()].into();
    let ctl = start(&k.client, &c, settings(sync));
    wait_for("renamed", || async {
        let inst = instances(&c, "k8s-sync").await;
        inst.len() == 1 && inst.values().all(|i| i.name == "p-web-default")
    })
    .await;
    ctl.settle(&csb).await;
    ctl.stop().await;
}

#[tokio::test]
async fn bad_annotation_gives_a_warning_event_and_the_rest_is_synced() {
    let k = kube().await;
    let (csb, c) = consul().await;
    annotated_cluster_ip_with_endpoints(
        &k.client,
        "default",
        "web",
        json!({"consul.hashicorp.com/service-port": "nope",
               "consul.hashicorp.com/service-tags": "blue"}),
        &[ep("10.8.0.1")],
    )
    .await;
    let ctl = start(&k.client, &c, settings(sync_settings("k8s-sync")));
    wait_for_instance_count(&c, "k8s-sync", 1).await;
    let v = c
        .node_services("k8s-sync", &QueryOptions::default())
        .await
        .unwrap();
    let s = &v.value.services[0];
    assert_eq!(s.tags, vec!["k8s".to_owned(), "blue".to_owned()]);
    assert_eq!(s.port, 8080);
    wait_for("warning event", || async {
        mirra_testkit::events_about(&k.client, "default", "web")
            .await
            .iter()
            .any(|e| {
                is_warning(e, "InvalidAnnotation")
                    && e.message
                        .as_deref()
                        .is_some_and(|m| m.contains("service-port"))
            })
    })
    .await;
    ctl.settle(&csb).await;
    // Re-planning the same Service does not repeat the Event.
    assert_eq!(ctl.metrics.warning_events_total(), 1);
    ctl.stop().await;
}

#[tokio::test]
async fn two_clusters_share_a_service_name_without_touching_each_other() {
    let k1 = kube().await;
    let k2 = kube().await;
    let (csb, c) = consul().await;
    for (k, ip) in [(&k1, "10.10.0.1"), (&k2, "10.20.0.1")] {
        cluster_ip_with_endpoints(&k.client, "default", "web", &[ep(ip)]).await;
    }
    let a = start(&k1.client, &c, settings(sync_settings("cluster-1")));
    let b = start(&k2.client, &c, settings(sync_settings("cluster-2")));
    wait_for("both registered", || async {
        instances(&c, "cluster-1").await.len() == 1 && instances(&c, "cluster-2").await.len() == 1
    })
    .await;
    Api::<Service>::namespaced(k1.client.clone(), "default")
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    // cluster-1's gone.
    wait_for_instance_count(&c, "cluster-1", 0).await;
    a.settle(&csb).await;
    b.settle(&csb).await;
    let left = c
        .service("web", &QueryOptions::default())
        .await
        .unwrap()
        .value;
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].node, "cluster-2");
    assert_eq!(left[0].service_address, "10.20.0.1");
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn faults_on_both_sides_converge_without_loss() {
    let k = kube().await;
    let (csb, c) = consul().await;
    c.register(&RegisterRequest {
        node: "k8s-sync".into(),
        address: "127.0.0.1".into(),
        service: Some(mirra_consul::Service {
            id: "foreign".into(),
            service: "foreign".into(),
            ..mirra_consul::Service::default()
        }),
        ..RegisterRequest::default()
    })
    .await
    .unwrap();
    for i in 0..5 {
        let addr = format!("10.30.0.{i}");
        cluster_ip_with_endpoints(&k.client, "default", &format!("s{i}"), &[ep(&addr)]).await;
    }
    let mut s = settings(sync_settings("k8s-sync"));
    s.verify_interval = Duration::from_millis(500);
    let ctl = start(&k.client, &c, s);
    // Five, and the foreign one.
    wait_for_instance_count(&c, "k8s-sync", 6).await;

    // Consul: 5xx and no leader on writes, then unreachable, while things change.
    csb.faults().add(
        ConsulFault::error(500, "boom")
            .with_path_prefix("/v1/txn")
            .times(3),
    );
    csb.faults().add(
        ConsulFault::no_leader()
            .with_path_prefix("/v1/txn")
            .times(3),
    );
    put_slice(&k.client, "default", "s0", "s0-1", &[ep("10.30.1.0")]).await;
    csb.faults().refuse_connections_for(Duration::from_secs(2));
    put_slice(&k.client, "default", "s1", "s1-1", &[ep("10.30.1.1")]).await;
    Api::<Service>::namespaced(k.client.clone(), "default")
        .delete("s2", &DeleteParams::default())
        .await
        .unwrap();

    // Kubernetes: watches dropped, history compacted (410), errors on relist.
    for status in [409u16, 429, 500, 503] {
        k.sb.inject(kube_sandbox::FaultRule {
            verb: Some("list".into()),
            status: Some(status),
            count: Some(1),
            ..Default::default()
        })
        .await
        .unwrap();
    }
    k.sb.compact().await;
    k.sb.close_watches();
    put_slice(&k.client, "default", "s3", "s3-1", &[unready("10.30.1.3")]).await;
    cluster_ip_with_endpoints(&k.client, "default", "s9", &[ep("10.30.1.9")]).await;

    let expected: Vec<(String, String)> = vec![
        ("foreign".into(), "".into()),
        ("s0".into(), "10.30.1.0".into()),
        ("s1".into(), "10.30.1.1".into()),
        ("s3".into(), "10.30.1.3".into()),
        ("s4".into(), "10.30.0.4".into()),
        ("s9".into(), "10.30.1.9".into()),
    ];
    wait_for("convergence", || async {
        names_and_addresses(&c, "k8s-sync").await == expected
    })
    .await;
    let status = c
        .health_service("s3", &QueryOptions::default())
        .await
        .unwrap()
        .value;
    assert!(status[0].checks.iter().any(|ch| ch.status == "critical"));
    assert!(csb.stats().faults_injected >= 6);
    ctl.settle(&csb).await;
    ctl.stop().await;
}

#[tokio::test]
async fn metrics_count_transactions_operations_avoided_pending_and_errors() {
    let k = kube().await;
    let (csb, c) = consul().await;
    for name in ["a", "b"] {
        let addrs = ips(if name == "a" { "10.7.0" } else { "10.7.1" }, 3);
        cluster_ip_with_endpoints(&k.client, "default", name, &eps(&addrs)).await;
    }
    let (ctl, registry) = start_registered(&k.client, &c, settings(sync_settings("k8s-sync")));
    wait_for_instance_count(&c, "k8s-sync", 6).await;
    ctl.settle(&csb).await;
    let m = |series: &str| sample(&registry, series);
    // One node op and 6 x (service + check) = 13 operations: one transaction.
    assert_eq!(m("mirra_catalog_transactions_total"), 1.0);
    assert_eq!(m(r#"mirra_catalog_operations_total{verb="register"}"#), 6.0);
    assert_eq!(
        m(r#"mirra_catalog_operations_total{verb="deregister"}"#),
        0.0
    );
    assert_eq!(m("mirra_catalog_pending_keys"), 0.0);
    assert_eq!(
        m(r#"mirra_catalog_consul_errors_total{class="permission_denied"}"#),
        0.0
    );
    let avoided = m("mirra_catalog_writes_avoided_total");
    let latencies = m(r#"mirra_catalog_event_to_consul_seconds_count{kind="service"}"#);

    // One endpoint of `a` replaced while Consul refuses the first write.
    csb.faults().add(
        ConsulFault::error(403, "Permission denied")
            .with_path_prefix("/v1/txn")
            .times(1),
    );
    let mut addrs = ips("10.7.0", 2);
    addrs.push("10.7.0.99".into());
    put_slice(&k.client, "default", "a", "a-1", &eps(&addrs)).await;
    wait_for("replaced", || async {
        instances(&c, "k8s-sync")
            .await
            .values()
            .any(|i| i.address == "10.7.0.99")
    })
    .await;
    ctl.settle(&csb).await;
    assert_eq!(
        m(r#"mirra_catalog_consul_errors_total{class="permission_denied"}"#),
        1.0
    );
    // The refused transaction is not counted; the retry is.
    assert_eq!(m("mirra_catalog_transactions_total"), 2.0);
    assert_eq!(m(r#"mirra_catalog_operations_total{verb="register"}"#), 7.0);
    assert_eq!(
        m(r#"mirra_catalog_operations_total{verb="deregister"}"#),
        1.0
    );
    // Both plans of `a` (refused, then retried) found its two other
    // instances in step.
    assert_eq!(m("mirra_catalog_writes_avoided_total") - avoided, 4.0);
    // One Service reached Consul: one latency observation.
    assert_eq!(
        m(r#"mirra_catalog_event_to_consul_seconds_count{kind="service"}"#) - latencies,
        1.0
    );
    assert_eq!(m("mirra_catalog_pending_keys"), 0.0);
    assert_eq!(csb.stats().requests_for("GET /v1/health/service"), 0);
    ctl.stop().await;
}
