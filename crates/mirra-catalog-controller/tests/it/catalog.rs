//! The catalog controller against kube-sandbox and consul-sandbox over real
//! HTTP: counts come from the sandboxes' stats (Raft applies), states from
//! Consul's catalog and health reads.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::time::Duration;

use consul_sandbox::FaultRule as ConsulFault;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use mirra_catalog::service_id;
use mirra_catalog_controller::register_metrics;
use mirra_consul::{ConsulConfig, QueryOptions, RegisterRequest};
use mirra_testkit::is_warning;
use serde_json::json;

use crate::common;

// The shared fixtures, except the Consul client: these tests keep the
// client's own retries (common's client makes one attempt per request).
use common::{
    kube, register_like_consul_k8s, sample, settings, start, start_with_metrics, sync_settings,
    wait_for,
};

async fn consul() -> (consul_sandbox::Sandbox, mirra_consul::Client) {
    let sb = consul_sandbox::Sandbox::start(consul_sandbox::Config::default())
        .await
        .unwrap();
    let client = consul_client(&sb.url());
    (sb, client)
}

fn consul_client(url: &str) -> mirra_consul::Client {
    let mut cfg = ConsulConfig::new(url).unwrap();
    // Keep retries inside the client short so that outages reach the
    // controller's own per-key backoff quickly.
    cfg.request_timeout = Duration::from_secs(5);
    mirra_consul::Client::new(cfg).unwrap()
}

async fn create_service(k: &kube::Client, ns: &str, name: &str, annotations: serde_json::Value) {
    let nss: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(k.clone());
    // Already existing is fine.
    let _ = nss
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap(),
        )
        .await;
    let api: Api<Service> = Api::namespaced(k.clone(), ns);
    let svc: Service = serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": ns, "annotations": annotations},
        "spec": {"type": "ClusterIP", "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}
    }))
    .unwrap();
    api.create(&PostParams::default(), &svc).await.unwrap();
}

fn slice_body(ns: &str, svc: &str, slice: &str, addrs: &[(&str, bool)]) -> EndpointSlice {
    let endpoints: Vec<_> = addrs
        .iter()
        .map(|(a, ready)| {
            json!({"addresses": [a], "conditions": {"ready": ready},
                   "targetRef": {"kind": "Pod", "name": format!("pod-{a}"), "namespace": ns}})
        })
        .collect();
    serde_json::from_value(json!({
        "metadata": {"name": slice, "namespace": ns,
                     "labels": {"kubernetes.io/service-name": svc}},
        "addressType": "IPv4",
        "endpoints": endpoints,
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]
    }))
    .unwrap()
}

async fn put_slice(k: &kube::Client, ns: &str, svc: &str, slice: &str, addrs: &[(&str, bool)]) {
    let api: Api<EndpointSlice> = Api::namespaced(k.clone(), ns);
    let body = slice_body(ns, svc, slice, addrs);
    api.patch(
        slice,
        &PatchParams::apply("test").force(),
        &Patch::Apply(&body),
    )
    .await
    .unwrap();
}

/// Instances on `node`: service ID -> (name, address, tags).
async fn instances(c: &mirra_consul::Client, node: &str) -> BTreeMap<String, (String, String)> {
    let v = c
        .node_services(node, &QueryOptions::default())
        .await
        .unwrap();
    v.value
        .services
        .into_iter()
        .map(|s| (s.id, (s.service, s.address)))
        .collect()
}

async fn instance_count(c: &mirra_consul::Client, node: &str) -> usize {
    instances(c, node).await.len()
}

fn ips(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}.{}", i + 1)).collect()
}

fn ready_all(v: &[String]) -> Vec<(&str, bool)> {
    v.iter().map(|a| (a.as_str(), true)).collect()
}

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
        create_service(&k.client, "default", name, json!({})).await;
        put_slice(
            &k.client,
            "default",
            name,
            &format!("{name}-1"),
            &ready_all(&addrs),
        )
        .await;
    }
    let before = csb.stats().raft_applies;
    let ctl = start(&k.client, &c, settings(sync_settings("k8s-sync")));
    ctl.wait_ready().await;
    wait_for("60 instances", || async {
        instance_count(&c, "k8s-sync").await == 60
    })
    .await;
    ctl.settle(&csb).await;
    // One node op, then 60 instances with their checks, in 64-op transactions.
    let ops = 1 + register_ops(60);
    assert_eq!(csb.stats().raft_applies - before, ops.div_ceil(64));
    assert_eq!(ctl.metrics.transactions_total(), ops.div_ceil(64));
    ctl.stop().await;

    let before = csb.stats().raft_applies;
    let ctl = start(&k.client, &c, settings(sync_settings("k8s-sync")));
    ctl.wait_ready().await;
    ctl.settle(&csb).await;
    assert_eq!(
        csb.stats().raft_applies,
        before,
        "restart in step must not write"
    );
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
    create_service(&k.client, "default", "web", json!({})).await;
    let old = ips("10.1.0", 30);
    put_slice(&k.client, "default", "web", "web-1", &ready_all(&old)).await;
    let mut s = settings(sync_settings("k8s-sync"));
    // Wide enough that the two slice writes below land in one window.
    s.queue.debounce = Duration::from_millis(400);
    s.queue.max_delay = Duration::from_millis(2000);
    let ctl = start(&k.client, &c, s);
    wait_for("30 instances", || async {
        instance_count(&c, "k8s-sync").await == 30
    })
    .await;
    ctl.settle(&csb).await;

    // Rollout: all 30 endpoints replaced, spread over two slices, in one window.
    let new = ips("10.2.0", 30);
    let before = csb.stats().raft_applies;
    put_slice(&k.client, "default", "web", "web-1", &ready_all(&new[..15])).await;
    put_slice(&k.client, "default", "web", "web-2", &ready_all(&new[15..])).await;
    wait_for("new instances", || async {
        let inst = instances(&c, "k8s-sync").await;
        inst.len() == 30 && inst.values().all(|(_, a)| a.starts_with("10.2.0."))
    })
    .await;
    ctl.settle(&csb).await;
    let ops = 30 + register_ops(30);
    assert_eq!(csb.stats().raft_applies - before, ops.div_ceil(64));

    // One endpoint added: one transaction.
    let before = csb.stats().raft_applies;
    let mut more = new[15..].to_vec();
    more.push("10.2.0.99".into());
    put_slice(&k.client, "default", "web", "web-2", &ready_all(&more)).await;
    wait_for("31 instances", || async {
        instance_count(&c, "k8s-sync").await == 31
    })
    .await;
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
    common::register(
        &c,
        "k8s-sync",
        "stray-1",
        "stray",
        &["k8s"],
        common::OWNED_META,
    )
    .await;
    wait_for("the stray instance reaped", || async {
        instance_count(&c, "k8s-sync").await == 31
    })
    .await;
    ctl.settle(&csb).await;
    assert_eq!(ctl.metrics.pass_drift_total(), 1);
    ctl.stop().await;
}

#[tokio::test]
async fn readiness_flip_updates_the_check_with_one_write() {
    let k = kube().await;
    let (csb, c) = consul().await;
    create_service(&k.client, "default", "web", json!({})).await;
    put_slice(&k.client, "default", "web", "web-1", &[("10.3.0.1", true)]).await;
    let ctl = start(&k.client, &c, settings(sync_settings("k8s-sync")));
    let status = || async {
        let v = c
            .health_service("web", &QueryOptions::default())
            .await
            .unwrap();
        v.value
            .first()
            .and_then(|e| e.checks.iter().find(|ch| ch.service_id == e.service.id))
            .map(|ch| ch.status.clone())
    };
    wait_for("passing", || async {
        status().await.as_deref() == Some("passing")
    })
    .await;
    ctl.settle(&csb).await;
    let before = csb.stats().raft_applies;
    put_slice(&k.client, "default", "web", "web-1", &[("10.3.0.1", false)]).await;
    wait_for("critical", || async {
        status().await.as_deref() == Some("critical")
    })
    .await;
    ctl.settle(&csb).await;
    assert_eq!(csb.stats().raft_applies - before, 1);
    ctl.stop().await;

    // After a restart the remembered check state is read back: no write,
    // and a flip back is still seen.
    let ctl = start(&k.client, &c, settings(sync_settings("k8s-sync")));
    ctl.wait_ready().await;
    ctl.settle(&csb).await;
    let before = csb.stats().raft_applies;
    assert_eq!(status().await.as_deref(), Some("critical"));
    put_slice(&k.client, "default", "web", "web-1", &[("10.3.0.1", true)]).await;
    wait_for("passing again", || async {
        status().await.as_deref() == Some("passing")
    })
    .await;
    ctl.settle(&csb).await;
    assert_eq!(csb.stats().raft_applies - before, 1);
    ctl.stop().await;
}

#[tokio::test]
async fn check_changed_by_someone_else_is_seen_and_restored_with_one_write() {
    let k = kube().await;
    let (csb, c) = consul().await;
    create_service(&k.client, "default", "web", json!({})).await;
    put_slice(&k.client, "default", "web", "web-1", &[("10.4.0.1", true)]).await;
    let mut s = settings(sync_settings("k8s-sync"));
    // The verification pass is what repairs drift nobody announced.
    s.verify_interval = Duration::from_millis(300);
    let ctl = start(&k.client, &c, s);
    let status = || async {
        let v = c
            .health_service("web", &QueryOptions::default())
            .await
            .unwrap();
        v.value
            .first()
            .and_then(|e| e.checks.iter().find(|ch| ch.service_id == e.service.id))
            .map(|ch| ch.status.clone())
    };
    wait_for("passing", || async {
        status().await.as_deref() == Some("passing")
    })
    .await;
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
    wait_for("passing again", || async {
        status().await.as_deref() == Some("passing")
    })
    .await;
    ctl.settle(&csb).await;
    // Theirs, then exactly one repair of ours.
    assert_eq!(csb.stats().raft_applies - before, 2);
    ctl.stop().await;
}

#[tokio::test]
async fn adopting_consul_k8s_registrations_costs_zero() {
    let k = kube().await;
    let (csb, c) = consul().await;
    create_service(
        &k.client,
        "default",
        "web",
        json!({"consul.hashicorp.com/service-tags": "a,b"}),
    )
    .await;
    let addrs = ips("10.4.0", 5);
    put_slice(&k.client, "default", "web", "web-1", &ready_all(&addrs)).await;
    // What consul-k8s writes for this Service, per instance.
    let svc: Service = Api::namespaced(k.client.clone(), "default")
        .get("web")
        .await
        .unwrap();
    let slice: EndpointSlice = Api::namespaced(k.client.clone(), "default")
        .get("web-1")
        .await
        .unwrap();
    let sync = sync_settings("k8s-sync");
    let out =
        mirra_catalog::desired_for_service(&svc, &[&slice], &mirra_catalog::NoNodes, &[], &sync);
    assert_eq!(out.registrations.len(), 5);
    for r in &out.registrations {
        assert_eq!(r.id, service_id("web", &r.address));
        register_like_consul_k8s(&c, r, "k8s-sync").await;
    }
    let before = csb.stats().raft_applies;
    let ctl = start(&k.client, &c, settings(sync));
    ctl.wait_ready().await;
    ctl.settle(&csb).await;
    assert_eq!(csb.stats().raft_applies, before, "adoption must not write");
    assert!(ctl.metrics.writes_avoided_total() >= 5);
    ctl.stop().await;
}

#[tokio::test]
async fn reaps_only_owned_instances_and_never_before_sync() {
    let k = kube().await;
    let (csb, c) = consul().await;
    create_service(&k.client, "default", "web", json!({})).await;
    put_slice(&k.client, "default", "web", "web-1", &[("10.5.0.1", true)]).await;
    let node = "k8s-sync";
    let reg = |id: &str, node: &str, tags: Vec<&str>, meta: bool| RegisterRequest {
        node: node.into(),
        address: "127.0.0.1".into(),
        service: Some(mirra_consul::Service {
            id: id.into(),
            service: "old".into(),
            tags: tags.into_iter().map(String::from).collect(),
            address: "10.9.9.9".into(),
            meta: if meta {
                [("external-source".to_owned(), "kubernetes".to_owned())].into()
            } else {
                Default::default()
            },
            ..mirra_consul::Service::default()
        }),
        ..RegisterRequest::default()
    };
    c.register(&reg("orphan", node, vec!["k8s"], true))
        .await
        .unwrap();
    c.register(&reg("untagged", node, vec![], true))
        .await
        .unwrap();
    c.register(&reg("no-meta", node, vec!["k8s"], false))
        .await
        .unwrap();
    c.register(&reg("other-node", "other", vec!["k8s"], true))
        .await
        .unwrap();

    // EndpointSlice lists fail: the controller cannot have full knowledge.
    k.sb.inject(kube_sandbox::FaultRule {
        verb: Some("list".into()),
        resource: Some("endpointslices.discovery.k8s.io".into()),
        status: Some(500),
        ..Default::default()
    })
    .await
    .unwrap();
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
    for ns in ["a", "b"] {
        create_service(&k.client, ns, "web", json!({})).await;
    }
    put_slice(&k.client, "a", "web", "web-1", &[("10.6.0.1", true)]).await;
    put_slice(&k.client, "b", "web", "web-1", &[("10.6.0.2", true)]).await;
    let ctl = start(&k.client, &c, settings(sync_settings("k8s-sync")));
    wait_for("two instances", || async {
        instance_count(&c, "k8s-sync").await == 2
    })
    .await;
    let inst = instances(&c, "k8s-sync").await;
    assert!(inst.values().all(|(name, _)| name == "web"));
    Api::<Service>::namespaced(k.client.clone(), "a")
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    wait_for("a's instance gone", || async {
        instance_count(&c, "k8s-sync").await == 1
    })
    .await;
    ctl.settle(&csb).await;
    let inst = instances(&c, "k8s-sync").await;
    assert!(inst.contains_key(&service_id("web", "10.6.0.2")));
    ctl.stop().await;
}

#[tokio::test]
async fn flag_changes_across_restart_remove_old_names_and_add_new() {
    let k = kube().await;
    let (csb, c) = consul().await;
    create_service(&k.client, "default", "web", json!({})).await;
    create_service(&k.client, "other", "api", json!({})).await;
    put_slice(&k.client, "default", "web", "web-1", &[("10.7.0.1", true)]).await;
    put_slice(&k.client, "other", "api", "api-1", &[("10.7.0.2", true)]).await;
    let ctl = start(&k.client, &c, settings(sync_settings("k8s-sync")));
    wait_for("two instances", || async {
        instance_count(&c, "k8s-sync").await == 2
    })
    .await;
    ctl.settle(&csb).await;
    ctl.stop().await;

    let mut sync = sync_settings("k8s-sync");
    sync.consul_service_prefix = "p-".into();
    sync.add_k8s_namespace_suffix = true;
    sync.allow_k8s_namespaces = ["default".to_owned()].into();
    let ctl = start(&k.client, &c, settings(sync));
    wait_for("renamed", || async {
        let inst = instances(&c, "k8s-sync").await;
        inst.len() == 1 && inst.values().all(|(n, _)| n == "p-web-default")
    })
    .await;
    ctl.settle(&csb).await;
    ctl.stop().await;
}

#[tokio::test]
async fn bad_annotation_gives_a_warning_event_and_the_rest_is_synced() {
    let k = kube().await;
    let (csb, c) = consul().await;
    create_service(
        &k.client,
        "default",
        "web",
        json!({"consul.hashicorp.com/service-port": "nope",
               "consul.hashicorp.com/service-tags": "blue"}),
    )
    .await;
    put_slice(&k.client, "default", "web", "web-1", &[("10.8.0.1", true)]).await;
    let ctl = start(&k.client, &c, settings(sync_settings("k8s-sync")));
    wait_for("instance", || async {
        instance_count(&c, "k8s-sync").await == 1
    })
    .await;
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
        create_service(&k.client, "default", "web", json!({})).await;
        put_slice(&k.client, "default", "web", "web-1", &[(ip, true)]).await;
    }
    let a = start(&k1.client, &c, settings(sync_settings("cluster-1")));
    let b = start(&k2.client, &c, settings(sync_settings("cluster-2")));
    wait_for("both registered", || async {
        instance_count(&c, "cluster-1").await == 1 && instance_count(&c, "cluster-2").await == 1
    })
    .await;
    Api::<Service>::namespaced(k1.client.clone(), "default")
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    wait_for("cluster-1's gone", || async {
        instance_count(&c, "cluster-1").await == 0
    })
    .await;
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
        create_service(&k.client, "default", &format!("s{i}"), json!({})).await;
        put_slice(
            &k.client,
            "default",
            &format!("s{i}"),
            &format!("s{i}-1"),
            &[(&format!("10.30.0.{i}"), true)],
        )
        .await;
    }
    let mut s = settings(sync_settings("k8s-sync"));
    s.verify_interval = Duration::from_millis(500);
    let ctl = start(&k.client, &c, s);
    wait_for("five", || async {
        instance_count(&c, "k8s-sync").await == 6
    })
    .await;

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
    put_slice(&k.client, "default", "s0", "s0-1", &[("10.30.1.0", true)]).await;
    csb.faults().refuse_connections_for(Duration::from_secs(2));
    put_slice(&k.client, "default", "s1", "s1-1", &[("10.30.1.1", true)]).await;
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
    put_slice(&k.client, "default", "s3", "s3-1", &[("10.30.1.3", false)]).await;
    create_service(&k.client, "default", "s9", json!({})).await;
    put_slice(&k.client, "default", "s9", "s9-1", &[("10.30.1.9", true)]).await;

    let want = |inst: BTreeMap<String, (String, String)>| {
        let mut got: Vec<(String, String)> = inst.into_values().collect();
        got.sort();
        got
    };
    let expected: Vec<(String, String)> = vec![
        ("foreign".into(), "".into()),
        ("s0".into(), "10.30.1.0".into()),
        ("s1".into(), "10.30.1.1".into()),
        ("s3".into(), "10.30.1.3".into()),
        ("s4".into(), "10.30.0.4".into()),
        ("s9".into(), "10.30.1.9".into()),
    ];
    wait_for("convergence", || async {
        want(instances(&c, "k8s-sync").await) == expected
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
        create_service(&k.client, "default", name, json!({})).await;
        let addrs = ips(if name == "a" { "10.7.0" } else { "10.7.1" }, 3);
        put_slice(
            &k.client,
            "default",
            name,
            &format!("{name}-1"),
            &ready_all(&addrs),
        )
        .await;
    }
    let mut registry = prometheus_client::registry::Registry::default();
    let metrics = register_metrics(&mut registry);
    let ctl = start_with_metrics(&k.client, &c, settings(sync_settings("k8s-sync")), metrics);
    wait_for("six instances", || async {
        instance_count(&c, "k8s-sync").await == 6
    })
    .await;
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
    put_slice(&k.client, "default", "a", "a-1", &ready_all(&addrs)).await;
    wait_for("replaced", || async {
        instances(&c, "k8s-sync")
            .await
            .values()
            .any(|(_, addr)| addr == "10.7.0.99")
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
