//! Kubernetes events the catalog sync reacts to, and what each one costs,
//! against the sandboxes over HTTP: one of several EndpointSlices deleted,
//! a Node's address changed, an Ingress, the `service-sync` annotation,
//! `-purge-k8s-services-from-node`, a long idle period with dropped
//! watches, and adoption of registrations consul-k8s wrote. Counts come
//! from the sandboxes' stats and the controller's metrics.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use common::*;
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::Ingress;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use mirra_catalog::{NodePortSyncType, service_id};
use mirra_consul::QueryOptions;
use mirra_testkit::DEADLINE;
use serde_json::{Value, json};

#[tokio::test]
async fn deleting_one_of_two_slices_keeps_the_other_slices_instances() {
    let k = kube().await;
    let (csb, c) = consul().await;
    cluster_ip(&k.client, "default", "web", json!({})).await;
    let first = ips("10.50.1", 3);
    let second = ips("10.50.2", 2);
    put_slice(&k.client, "default", "web", "web-a", &eps(&first)).await;
    put_slice(&k.client, "default", "web", "web-b", &eps(&second)).await;
    let ctl = start_synced(&k.client, &c, &csb, settings(sync_settings("k8s-sync")), 5).await;

    // The synthetic node mirra created with its first write, as consul-k8s
    // creates it.
    let nodes = c.nodes(&QueryOptions::default()).await.unwrap().value;
    let node = nodes
        .iter()
        .find(|n| n.node == "k8s-sync")
        .expect("our node");
    assert_eq!(node.address, "127.0.0.1");
    assert_eq!(
        node.meta.get("external-source").map(String::as_str),
        Some("kubernetes")
    );
    // One transaction: the node and five instances with their checks.
    assert_eq!(csb.stats().raft_applies, 1);

    let mark = ctl.checkpoint(&csb);
    Api::<EndpointSlice>::namespaced(k.client.clone(), "default")
        .delete("web-b", &DeleteParams::default())
        .await
        .unwrap();
    // web-b's instances gone.
    wait_for_instance_count(&c, "k8s-sync", 3).await;
    let cost = ctl.settled_cost(&csb, &mark).await;
    // The Service is rebuilt from the slice that is left: web-b's two
    // instances go (their checks with them), web-a's three are in step.
    assert_counts!(cost, transactions: 1, registers: 0, deregisters: 2, avoided: 3, raft_applies: 1);
    let left = instances(&c, "k8s-sync").await;
    let mut want: Vec<String> = first.iter().map(|a| service_id("web", a)).collect();
    want.sort();
    assert_eq!(left.keys().cloned().collect::<Vec<_>>(), want);
    let checks = check_statuses(&c, "k8s-sync").await;
    assert_eq!(checks.keys().cloned().collect::<Vec<_>>(), want);
    ctl.stop().await;
}

/// [`node_port_service`] and its EndpointSlice `<name>-1` with these
/// endpoints.
async fn node_port_with_endpoints(
    k: &kube::Client,
    ns: &str,
    name: &str,
    node_port: i32,
    endpoints: &[Ep<'_>],
) {
    node_port_service(k, ns, name, node_port).await;
    put_slice(k, ns, name, &format!("{name}-1"), endpoints).await;
}

/// A NodePort Service `name` (port `http` 80, nodePort `node_port`).
async fn node_port_service(k: &kube::Client, ns: &str, name: &str, node_port: i32) {
    apply_service(
        k,
        ns,
        json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"type": "NodePort",
                     "ports": [{"name": "http", "port": 80, "targetPort": 8080,
                                "nodePort": node_port}]}
        }),
    )
    .await;
}

#[tokio::test]
async fn node_address_change_replans_only_node_port_services_on_that_node() {
    let k = kube().await;
    let (csb, c) = consul().await;
    create_node_with_ips(&k.client, "n1", "192.168.5.1", "203.0.113.1").await;
    create_node_with_ips(&k.client, "n2", "192.168.5.2", "203.0.113.2").await;
    // np: endpoints on n1 and n2; np2: only on n2.
    let np = [ep_on("10.51.0.1", "n1"), ep_on("10.51.0.2", "n2")];
    node_port_with_endpoints(&k.client, "default", "np", 30080, &np).await;
    let np2 = [ep_on("10.51.0.3", "n2")];
    node_port_with_endpoints(&k.client, "default", "np2", 30081, &np2).await;
    let mut sync = sync_settings("k8s-sync");
    sync.node_port_sync_type = NodePortSyncType::ExternalFirst;
    let ctl = start_synced(&k.client, &c, &csb, settings(sync), 3).await;
    let np_on_n1 = service_id("np", "10.51.0.1");
    let inst = instances(&c, "k8s-sync").await;
    assert_eq!(inst[&np_on_n1].address, "203.0.113.1");
    assert_eq!(inst[&np_on_n1].port, 30080);

    let mark = ctl.checkpoint(&csb);
    // A change of n2 that is not an address (a label): nothing to re-plan.
    // It is sent first, so it is handled before the address change below.
    Api::<Node>::all(k.client.clone())
        .patch(
            "n2",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"zone": "b"}}})),
        )
        .await
        .unwrap();
    set_node_ips(&k.client, "n1", "192.168.5.1", "203.0.113.9").await;
    wait_for("np's n1 instance moved", || async {
        instances(&c, "k8s-sync").await[&np_on_n1].address == "203.0.113.9"
    })
    .await;
    let cost = ctl.settled_cost(&csb, &mark).await;
    // Only np was planned: its n1 instance re-registered (same ID, which
    // comes from the pod address), its n2 instance in step. np2 (only on
    // n2, whose label changed) was not planned, or it would count as an
    // avoided write.
    assert_counts!(cost, transactions: 1, registers: 1, deregisters: 0, avoided: 1, raft_applies: 1);
    let inst = instances(&c, "k8s-sync").await;
    assert_eq!(inst.len(), 3);
    assert_eq!(inst[&service_id("np", "10.51.0.2")].address, "203.0.113.2");
    assert_eq!(inst[&service_id("np2", "10.51.0.3")].address, "203.0.113.2");
    ctl.stop().await;
}

#[tokio::test]
async fn node_address_change_does_not_replan_cluster_ip_services_on_that_node() {
    let k = kube().await;
    let (csb, c) = consul().await;
    create_node_with_ips(&k.client, "n1", "192.168.6.1", "203.0.113.61").await;
    node_port_with_endpoints(
        &k.client,
        "default",
        "np",
        30080,
        &[ep_on("10.57.0.1", "n1")],
    )
    .await;
    cluster_ip_with_endpoints(&k.client, "default", "cip", &[ep_on("10.57.0.2", "n1")]).await;
    let ctl = start_synced(&k.client, &c, &csb, settings(sync_settings("k8s-sync")), 2).await;

    let mark = ctl.checkpoint(&csb);
    set_node_ips(&k.client, "n1", "192.168.6.1", "203.0.113.69").await;
    let np = service_id("np", "10.57.0.1");
    wait_for("np moved", || async {
        instances(&c, "k8s-sync").await[&np].address == "203.0.113.69"
    })
    .await;
    let cost = ctl.settled_cost(&csb, &mark).await;
    // np's one instance re-registered. cip's registration does not depend
    // on Node addresses (its address is the pod's), so planning it is
    // wasted work: it would show as an avoided write.
    assert_counts!(cost, transactions: 1, registers: 1, deregisters: 0, avoided: 0);
    ctl.stop().await;
}

async fn put_ingress(k: &kube::Client, ns: &str, host: &str, service: &str, tls: bool) {
    let mut spec = json!({
        "rules": [{"host": host, "http": {"paths": [{
            "path": "/", "pathType": "Prefix",
            "backend": {"service": {"name": service, "port": {"number": 80}}}
        }]}}]
    });
    if tls {
        spec["tls"] = json!([{"hosts": [host], "secretName": "cert"}]);
    }
    let ing: Ingress = serde_json::from_value(json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {"name": "front", "namespace": ns},
        "spec": spec
    }))
    .unwrap();
    Api::<Ingress>::namespaced(k.clone(), ns)
        .patch(
            "front",
            &PatchParams::apply("test").force(),
            &Patch::Apply(&ing),
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn ingress_events_replan_the_services_they_route_to() {
    let k = kube().await;
    let (csb, c) = consul().await;
    cluster_ip_with_endpoints(&k.client, "prod", "web", &eps(&ips("10.52.0", 2))).await;
    cluster_ip_with_endpoints(&k.client, "prod", "api", &eps(&ips("10.52.1", 1))).await;
    let mut sync = sync_settings("k8s-sync");
    sync.enable_ingress = true;
    let ctl = start_synced(&k.client, &c, &csb, settings(sync), 3).await;
    let host_id = service_id("web", "web.example.com");

    // An Ingress routes `/` of web.example.com to web: web's instances
    // collapse to one at the host, port 80.
    let mark = ctl.checkpoint(&csb);
    put_ingress(&k.client, "prod", "web.example.com", "web", false).await;
    wait_for("web collapsed", || async {
        instances(&c, "k8s-sync")
            .await
            .get(&host_id)
            .is_some_and(|i| i.port == 80)
    })
    .await;
    let cost = ctl.settled_cost(&csb, &mark).await;
    // Only web was planned: api (same namespace, not routed) would count
    // as an avoided write.
    assert_counts!(cost, transactions: 1, registers: 1, deregisters: 2, avoided: 0, raft_applies: 1);
    assert_eq!(
        names_and_addresses(&c, "k8s-sync").await,
        pairs(&[("api", "10.52.1.1"), ("web", "web.example.com")])
    );

    // TLS for the host: port 443, one re-registration.
    let mark = ctl.checkpoint(&csb);
    put_ingress(&k.client, "prod", "web.example.com", "web", true).await;
    wait_for("port 443", || async {
        instances(&c, "k8s-sync").await[&host_id].port == 443
    })
    .await;
    let cost = ctl.settled_cost(&csb, &mark).await;
    assert_counts!(cost, transactions: 1, registers: 1, deregisters: 0, avoided: 0, raft_applies: 1);

    // The Ingress goes: web is back to its endpoints.
    let mark = ctl.checkpoint(&csb);
    Api::<Ingress>::namespaced(k.client.clone(), "prod")
        .delete("front", &DeleteParams::default())
        .await
        .unwrap();
    wait_for("web uncollapsed", || async {
        names_and_addresses(&c, "k8s-sync").await
            == pairs(&[
                ("api", "10.52.1.1"),
                ("web", "10.52.0.1"),
                ("web", "10.52.0.2"),
            ])
    })
    .await;
    let cost = ctl.settled_cost(&csb, &mark).await;
    assert_counts!(cost, transactions: 1, registers: 2, deregisters: 1, avoided: 0, raft_applies: 1);
    ctl.stop().await;
}

#[tokio::test]
async fn service_sync_false_on_a_synced_service_deregisters_its_instances() {
    let k = kube().await;
    let (csb, c) = consul().await;
    cluster_ip_with_endpoints(&k.client, "default", "web", &eps(&ips("10.53.0", 3))).await;
    cluster_ip_with_endpoints(&k.client, "default", "api", &eps(&ips("10.53.1", 1))).await;
    let ctl = start_synced(&k.client, &c, &csb, settings(sync_settings("k8s-sync")), 4).await;

    let mark = ctl.checkpoint(&csb);
    cluster_ip(
        &k.client,
        "default",
        "web",
        json!({"consul.hashicorp.com/service-sync": "false"}),
    )
    .await;
    wait_for("web deregistered", || async {
        names_and_addresses(&c, "k8s-sync").await == pairs(&[("api", "10.53.1.1")])
    })
    .await;
    let cost = ctl.settled_cost(&csb, &mark).await;
    assert_counts!(cost, transactions: 1, registers: 0, deregisters: 3, raft_applies: 1);
    // Their checks went with them; api's stays.
    assert_eq!(
        check_statuses(&c, "k8s-sync")
            .await
            .into_keys()
            .collect::<Vec<_>>(),
        vec![service_id("api", "10.53.1.1")]
    );

    // Annotated true again: registered again (web back).
    let mark = ctl.checkpoint(&csb);
    cluster_ip(
        &k.client,
        "default",
        "web",
        json!({"consul.hashicorp.com/service-sync": "true"}),
    )
    .await;
    wait_for_instance_count(&c, "k8s-sync", 4).await;
    let cost = ctl.settled_cost(&csb, &mark).await;
    assert_counts!(cost, transactions: 1, registers: 3, deregisters: 0);
    ctl.stop().await;
}

#[tokio::test]
async fn purge_deregisters_exactly_our_instances_and_returns() {
    let k = kube().await;
    let (csb, c) = consul().await;
    cluster_ip_with_endpoints(&k.client, "default", "web", &eps(&ips("10.54.0", 2))).await;
    let ctl = start_synced(&k.client, &c, &csb, settings(sync_settings("k8s-sync")), 2).await;
    ctl.stop().await;
    // Ours by its marks although no Service wants it: purged too.
    register(&c, "k8s-sync", "orphan", "old", &["k8s"], OWNED_META).await;
    // Not ours: no tag, no external-source meta, another node.
    register(&c, "k8s-sync", "untagged", "foreign", &[], OWNED_META).await;
    register(&c, "k8s-sync", "no-meta", "foreign", &["k8s"], &[]).await;
    register(&c, "other-node", "elsewhere", "web", &["k8s"], OWNED_META).await;

    let before = csb.stats().raft_applies;
    let kube_before = k.sb.stats();
    let mut s = settings(sync_settings("k8s-sync"));
    s.purge = true;
    let purge = start(&k.client, &c, s);
    // run() returns by itself once the node is purged.
    let result = tokio::time::timeout(DEADLINE, purge.task)
        .await
        .expect("purge returns")
        .unwrap();
    result.unwrap();
    // Three deregistrations in one transaction.
    assert_eq!(csb.stats().raft_applies - before, 1);
    assert_eq!(purge.metrics.transactions_total(), 1);
    assert_eq!(purge.metrics.operations_total("deregister"), 3);
    let mut left: Vec<String> = instances(&c, "k8s-sync").await.into_keys().collect();
    left.sort();
    assert_eq!(left, vec!["no-meta".to_owned(), "untagged".to_owned()]);
    assert!(instances(&c, "other-node").await.contains_key("elsewhere"));
    // The checks of the purged instances went with them.
    assert!(check_statuses(&c, "k8s-sync").await.is_empty());
    assert_eq!(k.sb.stats().since(&kube_before).writes(), 0);
}

#[tokio::test]
async fn idle_across_waits_dropped_watches_and_compaction_writes_nothing() {
    let k = kube().await;
    let (csb, c) = consul().await;
    for (name, net) in [("web", "10.55.0"), ("api", "10.55.1")] {
        cluster_ip_with_endpoints(&k.client, "default", name, &eps(&ips(net, 3))).await;
    }
    let mut s = settings(sync_settings("k8s-sync"));
    // Blocking queries that end after 1 s without news, and a verification
    // pass every second: an idle minute compressed into a few seconds.
    s.consul_wait = Duration::from_secs(1);
    s.verify_interval = Duration::from_secs(1);
    let ctl = start_synced(&k.client, &c, &csb, s, 6).await;

    let consul_before = csb.stats();
    let avoided = ctl.metrics.writes_avoided_total();
    let reads = |s: &consul_sandbox::Stats| s.requests_for("GET /v1/catalog/node-services");
    // Three waits end without news.
    wait_for("three idle waits", || async {
        reads(&csb.stats()) >= reads(&consul_before) + 3
    })
    .await;
    // Someone else's write moves the revision past every watch's own, then
    // the history goes and every watch is dropped: each watch resumes from
    // a compacted revision, gets 410 Gone, and must list again.
    Api::<ConfigMap>::namespaced(k.client.clone(), "default")
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "unrelated"}})).unwrap(),
        )
        .await
        .unwrap();
    let kube_before = k.sb.stats();
    k.sb.compact().await;
    k.sb.close_watches();
    wait_for("every kind listed again", || async {
        let d = k.sb.stats().since(&kube_before);
        [
            "list services",
            "list endpointslices.discovery.k8s.io",
            "list nodes",
        ]
        .iter()
        .all(|key| d.get(key) >= 1)
    })
    .await;
    // Three more waits after the relists, time for whatever they caused.
    let mid = csb.stats();
    wait_for("three more idle waits", || async {
        reads(&csb.stats()) >= reads(&mid) + 3
    })
    .await;
    ctl.settle(&csb).await;

    assert_eq!(
        csb.stats().raft_applies,
        consul_before.raft_applies,
        "idle must not write to Consul"
    );
    let kube_diff = k.sb.stats().since(&kube_before);
    assert_eq!(kube_diff.writes(), 0, "{:?}", kube_diff.requests);
    // The verification passes did run (and found everything in step).
    assert!(ctl.metrics.writes_avoided_total() > avoided);
    ctl.stop().await;
}

// ----- adoption of consul-k8s registrations ------------------------------------

#[tokio::test]
async fn adopting_hand_written_consul_k8s_registrations_costs_zero() {
    let k = kube().await;
    let (csb, c) = consul().await;
    // Kubernetes: two Nodes (one without an ExternalIP), a NodePort Service,
    // a Service with external IPs (its endpoints are not what consul-k8s
    // registers), and a ClusterIP Service with a ready and an unready pod.
    create_node_with_ips(&k.client, "node-a", "192.168.7.10", "203.0.113.70").await;
    create_node(&k.client, "node-b", &[("InternalIP", "192.168.7.11")]).await;
    let ns = "shop";
    apply_service(
        &k.client,
        ns,
        json!({"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": "np", "namespace": ns},
               "spec": {"type": "NodePort", "ports": [
                   {"name": "http", "port": 80, "targetPort": 8080, "nodePort": 30080}]}}),
    )
    .await;
    apply_service(
        &k.client,
        ns,
        json!({"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": "eip", "namespace": ns},
               "spec": {"type": "ClusterIP",
                        "externalIPs": ["198.51.100.7", "198.51.100.8"],
                        "ports": [{"name": "https", "port": 443, "targetPort": 8443}]}}),
    )
    .await;
    cluster_ip(&k.client, ns, "web", json!({})).await;
    // An ExternalName Service with an external IP: consul-k8s registers
    // the IP ("for any type of service", to-consul/resource.go).
    external_name_service(
        &k.client,
        ns,
        "legacy",
        "legacy.example.com",
        &["198.51.100.9"],
    )
    .await;
    let slice = |svc: &str, name: &str, port: (&str, i32), endpoints: Value| -> EndpointSlice {
        serde_json::from_value(json!({
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": name, "namespace": ns,
                         "labels": {"kubernetes.io/service-name": svc}},
            "addressType": "IPv4",
            "endpoints": endpoints,
            "ports": [{"name": port.0, "port": port.1, "protocol": "TCP"}]
        }))
        .unwrap()
    };
    let pod = |name: &str| json!({"kind": "Pod", "name": name, "namespace": ns});
    let slices = [
        slice(
            "np",
            "np-1",
            ("http", 8080),
            json!([
                {"addresses": ["10.8.0.1"], "conditions": {"ready": true},
                 "nodeName": "node-a", "zone": "zone-1", "targetRef": pod("np-a")},
                {"addresses": ["10.8.0.2"], "conditions": {"ready": true},
                 "nodeName": "node-b", "targetRef": pod("np-b")}
            ]),
        ),
        slice(
            "eip",
            "eip-1",
            ("https", 8443),
            json!([{"addresses": ["10.8.2.1"], "conditions": {"ready": true},
                    "nodeName": "node-a", "targetRef": pod("eip-a")}]),
        ),
        slice(
            "web",
            "web-1",
            ("http", 8080),
            json!([
                {"addresses": ["10.8.1.1"], "conditions": {"ready": true},
                 "nodeName": "node-a", "targetRef": pod("web-a")},
                {"addresses": ["10.8.1.2"], "conditions": {"ready": false},
                 "nodeName": "node-b", "targetRef": pod("web-b")}
            ]),
        ),
    ];
    for s in &slices {
        let name = s.metadata.name.clone().unwrap();
        Api::<EndpointSlice>::namespaced(k.client.clone(), ns)
            .patch(&name, &PatchParams::apply("test").force(), &Patch::Apply(s))
            .await
            .unwrap();
    }

    // What consul-k8s (single-port layout, -add-k8s-namespace-suffix,
    // -node-port-sync-type=ExternalFirst) registers for these. IDs are
    // `<name>-<first 12 hex digits of sha1("<name>-<address>")>`, computed
    // outside the project (`printf 'np-shop-10.8.0.1' | sha1sum`); for
    // NodePort the address hashed is the pod's, the one registered the
    // node's.
    let base_meta = |extra: Value| consul_k8s_meta(ns, extra);
    let regs = [
        consul_k8s_registration(
            "np-shop-182656c2c021",
            "np-shop",
            "203.0.113.70",
            30080,
            base_meta(json!({"port-http": "80", "external-k8s-ref-kind": "Pod",
                             "external-k8s-ref-name": "np-a",
                             "external-k8s-node-name": "node-a",
                             "external-k8s-topology-zone": "zone-1"})),
            Value::Null,
        ),
        consul_k8s_registration(
            "np-shop-996eb4d410ee",
            "np-shop",
            "192.168.7.11",
            30080,
            base_meta(json!({"port-http": "80", "external-k8s-ref-kind": "Pod",
                             "external-k8s-ref-name": "np-b",
                             "external-k8s-node-name": "node-b"})),
            Value::Null,
        ),
        consul_k8s_registration(
            "eip-shop-e86f522132dc",
            "eip-shop",
            "198.51.100.7",
            443,
            base_meta(json!({"port-https": "443"})),
            Value::Null,
        ),
        consul_k8s_registration(
            "eip-shop-f59ef216f6ef",
            "eip-shop",
            "198.51.100.8",
            443,
            base_meta(json!({"port-https": "443"})),
            Value::Null,
        ),
        consul_k8s_registration(
            "legacy-shop-fedb8008f5c0",
            "legacy-shop",
            "198.51.100.9",
            0,
            base_meta(json!({})),
            Value::Null,
        ),
        consul_k8s_registration(
            "web-shop-4f9e89977cb9",
            "web-shop",
            "10.8.1.1",
            8080,
            base_meta(json!({"port-http": "80", "external-k8s-ref-kind": "Pod",
                             "external-k8s-ref-name": "web-a",
                             "external-k8s-node-name": "node-a"})),
            readiness_check(ns, "web-shop-4f9e89977cb9", true),
        ),
        consul_k8s_registration(
            "web-shop-f80d06c0b80d",
            "web-shop",
            "10.8.1.2",
            8080,
            base_meta(json!({"port-http": "80", "external-k8s-ref-kind": "Pod",
                             "external-k8s-ref-name": "web-b",
                             "external-k8s-node-name": "node-b"})),
            readiness_check(ns, "web-shop-f80d06c0b80d", false),
        ),
    ];
    register_raw(&csb, &regs).await;
    // The formula, as mirra computes it, gives the same IDs.
    assert_eq!(service_id("np-shop", "10.8.0.1"), "np-shop-182656c2c021");
    assert_eq!(service_id("web-shop", "10.8.1.2"), "web-shop-f80d06c0b80d");
    assert_eq!(
        service_id("legacy-shop", "198.51.100.9"),
        "legacy-shop-fedb8008f5c0"
    );
    assert_eq!(instances(&c, "k8s-sync").await.len(), 7);

    let mut sync = sync_settings("k8s-sync");
    sync.add_k8s_namespace_suffix = true;
    sync.node_port_sync_type = NodePortSyncType::ExternalFirst;
    // Every one of the seven is planned and found in step.
    assert_start_writes_nothing(&k.client, &c, &csb, settings(sync), "adoption", 7).await;
}

#[tokio::test]
async fn services_changed_in_one_debounce_window_share_one_transaction() {
    let k = kube().await;
    let (csb, c) = consul().await;
    let names: Vec<String> = (0..5).map(|i| format!("s{i}")).collect();
    for (i, name) in names.iter().enumerate() {
        let addrs = ips(&format!("10.56.{i}"), 1);
        cluster_ip_with_endpoints(&k.client, "default", name, &eps(&addrs)).await;
    }
    let mut s = settings(sync_settings("k8s-sync"));
    // A second is far longer than the five slice writes below take.
    s.queue.debounce = Duration::from_millis(1000);
    s.queue.max_delay = Duration::from_millis(3000);
    let ctl = start_synced(&k.client, &c, &csb, s, 5).await;

    let mark = ctl.checkpoint(&csb);
    // A rollout touching five Services inside one debounce window.
    for (i, name) in names.iter().enumerate() {
        put_slice(
            &k.client,
            "default",
            name,
            &format!("{name}-1"),
            &eps(&ips(&format!("10.56.{i}"), 2)),
        )
        .await;
    }
    wait_for_instance_count(&c, "k8s-sync", 10).await;
    let cost = ctl.settled_cost(&csb, &mark).await;
    // Five registrations of two operations each fit one transaction
    // (Settings::max_keys_per_round: "a rollout of many Services in one
    // debounce window is planned, and written, together").
    assert_counts!(cost, transactions: 1, registers: 5, raft_applies: 1);
    ctl.stop().await;
}
