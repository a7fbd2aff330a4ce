//! The multi-port layout (`PortLayout::Multi`, `-port-layout=multi`) against
//! the sandboxes over HTTP: one registration per endpoint with `Port` 0 and
//! every port in `Ports`, as newer consul-k8s releases write them. What
//! comes back from Consul is asserted as JSON; costs come from the
//! consul-sandbox's Raft apply counter and the controller's metrics.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use common::*;
use mirra_catalog::{PortLayout, SyncSettings, service_id};
use mirra_consul::QueryOptions;
use serde_json::{Value, json};

fn multi(node: &str) -> SyncSettings {
    SyncSettings {
        port_layout: PortLayout::Multi,
        ..sync_settings(node)
    }
}

/// A ClusterIP Service with these `(name, port, targetPort)` ports.
async fn cluster_ip_ports(k: &kube::Client, ns: &str, name: &str, ports: &[(&str, i32, i32)]) {
    let ports: Vec<Value> = ports
        .iter()
        .map(|(n, p, t)| json!({"name": n, "port": p, "targetPort": t}))
        .collect();
    apply_service(
        k,
        ns,
        json!({"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": name, "namespace": ns},
               "spec": {"type": "ClusterIP", "ports": ports}}),
    )
    .await;
}

/// A NodePort Service with these `(name, port, nodePort)` ports.
async fn node_port_ports(k: &kube::Client, ns: &str, name: &str, ports: &[(&str, i32, i32)]) {
    let ports: Vec<Value> = ports
        .iter()
        .map(|(n, p, np)| json!({"name": n, "port": p, "targetPort": p, "nodePort": np}))
        .collect();
    apply_service(
        k,
        ns,
        json!({"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": name, "namespace": ns},
               "spec": {"type": "NodePort", "ports": ports}}),
    )
    .await;
}

/// [`cluster_ip_ports`] and the Service's EndpointSlice `<name>-1` with
/// these endpoints; its ports are the Service's target ports, as the
/// EndpointSlice controller keeps them.
async fn cluster_ip_ports_with_endpoints(
    k: &kube::Client,
    ns: &str,
    name: &str,
    ports: &[(&str, i32, i32)],
    endpoints: &[Ep<'_>],
) {
    cluster_ip_ports(k, ns, name, ports).await;
    let targets: Vec<(&str, i32)> = ports.iter().map(|(n, _, t)| (*n, *t)).collect();
    put_slice_ports(k, ns, name, &format!("{name}-1"), endpoints, &targets).await;
}

/// [`node_port_ports`] and the Service's EndpointSlice `<name>-1` with
/// these endpoints; its ports are the Service's target ports (its ports).
async fn node_port_ports_with_endpoints(
    k: &kube::Client,
    ns: &str,
    name: &str,
    ports: &[(&str, i32, i32)],
    endpoints: &[Ep<'_>],
) {
    node_port_ports(k, ns, name, ports).await;
    let targets: Vec<(&str, i32)> = ports.iter().map(|(n, p, _)| (*n, *p)).collect();
    put_slice_ports(k, ns, name, &format!("{name}-1"), endpoints, &targets).await;
}

#[tokio::test]
async fn multi_layout_cold_start_writes_ports_and_a_restart_in_step_costs_zero() {
    let k = kube().await;
    let (csb, c) = consul().await;
    let addrs = ips("10.60.0", 3);
    cluster_ip_ports_with_endpoints(
        &k.client,
        "default",
        "web",
        &[("http", 80, 8080), ("grpc", 9090, 9090)],
        &eps(&addrs),
    )
    .await;
    let ctl = start(&k.client, &c, settings(multi("k8s-sync")));
    ctl.wait_ready().await;
    wait_for_instance_count(&c, "k8s-sync", 3).await;
    ctl.settle(&csb).await;
    // One transaction: the node, three instances and their checks (7 ops).
    assert_eq!(csb.stats().raft_applies, 1);
    let w = Writes::of(&ctl.metrics);
    assert_eq!((w.transactions, w.registers, w.deregisters), (1, 3, 0));

    // What Consul holds: Port 0 and the slice's ports, the first one the
    // default, in the slice's order; meta names the Service's ports.
    let got = node_services_json(&c, "k8s-sync").await;
    // IDs computed outside the project: `printf 'web-10.60.0.1' | sha1sum`.
    assert_eq!(
        got.keys().cloned().collect::<Vec<_>>(),
        vec![
            "web-ae62c90779e5".to_owned(),
            "web-cbadd7f92b8a".to_owned(),
            "web-e73e1d49137b".to_owned(),
        ]
    );
    for addr in &addrs {
        let s = &got[&service_id("web", addr)];
        assert_eq!(s["Service"], "web");
        assert_eq!(s["Address"], json!(addr));
        assert_eq!(s["Tags"], json!(["k8s"]));
        assert_eq!(s["Port"], 0);
        assert_eq!(
            s["Ports"],
            json!([
                {"Name": "http", "Port": 8080, "Default": true},
                {"Name": "grpc", "Port": 9090, "Default": false}
            ]),
            "{s}"
        );
        assert_eq!(
            s["Meta"],
            json!({
                "external-source": "kubernetes", "external-k8s-ns": "default",
                "port-http": "80", "port-grpc": "9090",
                "external-k8s-ref-kind": "Pod",
                "external-k8s-ref-name": format!("pod-{addr}")
            })
        );
    }
    ctl.stop().await;

    // Restart with the same settings: the compared fields include Ports, and
    // they are what was written, so nothing is sent.
    let s = settings(multi("k8s-sync"));
    assert_start_writes_nothing(&k.client, &c, &csb, s, "restart in step", 3).await;

    // The same cluster restarted with the single layout: every instance is
    // rewritten once (same IDs, Port 8080, no Ports), in one transaction.
    // This is also what shows the zero above is not blindness to Ports.
    let before = csb.stats().raft_applies;
    let ctl = start(&k.client, &c, settings(sync_settings("k8s-sync")));
    ctl.wait_ready().await;
    wait_for("single-port instances", || async {
        node_services_json(&c, "k8s-sync")
            .await
            .values()
            .all(|s| s["Port"] == 8080)
    })
    .await;
    ctl.settle(&csb).await;
    assert_eq!(csb.stats().raft_applies - before, 1);
    let w = Writes::of(&ctl.metrics);
    assert_eq!((w.transactions, w.registers, w.deregisters), (1, 3, 0));
    let got = node_services_json(&c, "k8s-sync").await;
    assert_eq!(got.len(), 3);
    assert!(got.values().all(|s| s.get("Ports").is_none()), "{got:?}");
    ctl.stop().await;
}

#[tokio::test]
async fn adopting_hand_written_multi_port_consul_k8s_registrations_costs_zero() {
    let k = kube().await;
    let (csb, c) = consul().await;
    let ns = "shop";
    // A ClusterIP Service with two ports and a ready and an unready pod, a
    // Service with an external IP, and a NodePort Service.
    cluster_ip_ports_with_endpoints(
        &k.client,
        ns,
        "web",
        &[("http", 80, 8080), ("grpc", 9090, 9090)],
        &[ep("10.9.1.1"), unready("10.9.1.2")],
    )
    .await;
    apply_service(
        &k.client,
        ns,
        json!({"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": "eip", "namespace": ns},
               "spec": {"type": "ClusterIP", "externalIPs": ["198.51.100.21"],
                        "ports": [{"name": "https", "port": 443, "targetPort": 8443},
                                  {"name": "admin", "port": 8444, "targetPort": 8444}]}}),
    )
    .await;
    create_node_with_ips(&k.client, "n1", "192.168.9.1", "203.0.113.91").await;
    node_port_ports_with_endpoints(
        &k.client,
        ns,
        "np",
        &[("http", 80, 30080), ("metrics", 9100, 30091)],
        &[ep_on("10.9.2.1", "n1")],
    )
    .await;

    // What newer consul-k8s registers for these: endpoint instances carry
    // the slice's ports, the others the Service's (node ports for NodePort),
    // the first one the default. IDs computed outside the project
    // (`printf 'web-10.9.1.1' | sha1sum`; for NodePort the pod address).
    let meta = |extra: Value| consul_k8s_meta(ns, extra);
    let web_ports = json!([
        {"Name": "http", "Port": 8080, "Default": true},
        {"Name": "grpc", "Port": 9090, "Default": false}
    ]);
    let regs = [
        consul_k8s_multi_port_registration(
            "web-b07abded43ea",
            "web",
            "10.9.1.1",
            web_ports.clone(),
            meta(json!({"port-http": "80", "port-grpc": "9090",
                        "external-k8s-ref-kind": "Pod",
                        "external-k8s-ref-name": "pod-10.9.1.1"})),
            readiness_check(ns, "web-b07abded43ea", true),
        ),
        consul_k8s_multi_port_registration(
            "web-f72894c47283",
            "web",
            "10.9.1.2",
            web_ports,
            meta(json!({"port-http": "80", "port-grpc": "9090",
                        "external-k8s-ref-kind": "Pod",
                        "external-k8s-ref-name": "pod-10.9.1.2"})),
            readiness_check(ns, "web-f72894c47283", false),
        ),
        consul_k8s_multi_port_registration(
            "eip-d2d79167fc24",
            "eip",
            "198.51.100.21",
            json!([
                {"Name": "https", "Port": 443, "Default": true},
                {"Name": "admin", "Port": 8444, "Default": false}
            ]),
            meta(json!({"port-https": "443", "port-admin": "8444"})),
            Value::Null,
        ),
        consul_k8s_multi_port_registration(
            "np-9cc1cc2e0c4e",
            "np",
            "203.0.113.91",
            json!([
                {"Name": "http", "Port": 30080, "Default": true},
                {"Name": "metrics", "Port": 30091, "Default": false}
            ]),
            meta(json!({"port-http": "80", "port-metrics": "9100",
                        "external-k8s-ref-kind": "Pod",
                        "external-k8s-ref-name": "pod-10.9.2.1",
                        "external-k8s-node-name": "n1"})),
            Value::Null,
        ),
    ];
    register_raw(&csb, &regs).await;
    assert_eq!(service_id("web", "10.9.1.1"), "web-b07abded43ea");
    assert_eq!(service_id("np", "10.9.2.1"), "np-9cc1cc2e0c4e");
    assert_eq!(instances(&c, "k8s-sync").await.len(), 4);

    // Every one of the four is planned and found in step.
    let s = settings(multi("k8s-sync"));
    assert_start_writes_nothing(&k.client, &c, &csb, s, "adoption", 4).await;
}

#[tokio::test]
async fn a_port_added_to_a_service_rewrites_its_instances_ports_in_one_transaction() {
    let k = kube().await;
    let (csb, c) = consul().await;
    let web_addrs = ips("10.61.0", 3);
    cluster_ip_ports_with_endpoints(
        &k.client,
        "default",
        "web",
        &[("http", 80, 8080)],
        &eps(&web_addrs),
    )
    .await;
    create_node_with_ips(&k.client, "n1", "192.168.61.1", "203.0.113.61").await;
    node_port_ports_with_endpoints(
        &k.client,
        "default",
        "np",
        &[("http", 80, 30080)],
        &[ep_on("10.61.1.1", "n1"), ep_on("10.61.1.2", "n1")],
    )
    .await;
    let mut s = settings(multi("k8s-sync"));
    // A second is far longer than the two writes of the ClusterIP change
    // below take, so the Service and its slice are planned together (as the
    // EndpointSlice controller follows a Service edit within milliseconds).
    s.queue.debounce = Duration::from_millis(1000);
    s.queue.max_delay = Duration::from_millis(3000);
    let ctl = start_synced(&k.client, &c, &csb, s, 5).await;

    // ClusterIP: the Service gets a port and its slice follows. Each of the
    // three instances is rewritten once (new Ports and meta), in one
    // transaction; np is not planned.
    let mark = ctl.checkpoint(&csb);
    cluster_ip_ports_with_endpoints(
        &k.client,
        "default",
        "web",
        &[("http", 80, 8080), ("metrics", 9100, 9100)],
        &eps(&web_addrs),
    )
    .await;
    let want_web = json!([
        {"Name": "http", "Port": 8080, "Default": true},
        {"Name": "metrics", "Port": 9100, "Default": false}
    ]);
    wait_for("web's instances have two ports", || async {
        let got = node_services_json(&c, "k8s-sync").await;
        web_addrs
            .iter()
            .all(|a| got[&service_id("web", a)]["Ports"] == want_web)
    })
    .await;
    let cost = ctl.settled_cost(&csb, &mark).await;
    assert_counts!(cost, transactions: 1, registers: 3, deregisters: 0, avoided: 0, raft_applies: 1);
    let got = node_services_json(&c, "k8s-sync").await;
    for a in &web_addrs {
        let s = &got[&service_id("web", a)];
        assert_eq!(s["Port"], 0);
        assert_eq!(s["Meta"]["port-metrics"], "9100");
    }
    // np's instances are as they were.
    for a in ["10.61.1.1", "10.61.1.2"] {
        assert_eq!(
            got[&service_id("np", a)]["Ports"],
            json!([{"Name": "http", "Port": 30080, "Default": true}])
        );
    }

    // NodePort: its instances carry the Service's node ports, so a port
    // added to the Service alone changes both instances, in one
    // transaction; web is not planned.
    let mark = ctl.checkpoint(&csb);
    node_port_ports(
        &k.client,
        "default",
        "np",
        &[("http", 80, 30080), ("metrics", 9100, 30091)],
    )
    .await;
    let want_np = json!([
        {"Name": "http", "Port": 30080, "Default": true},
        {"Name": "metrics", "Port": 30091, "Default": false}
    ]);
    wait_for("np's instances have two ports", || async {
        let got = node_services_json(&c, "k8s-sync").await;
        ["10.61.1.1", "10.61.1.2"]
            .iter()
            .all(|a| got[&service_id("np", a)]["Ports"] == want_np)
    })
    .await;
    let cost = ctl.settled_cost(&csb, &mark).await;
    assert_counts!(cost, transactions: 1, registers: 2, deregisters: 0, avoided: 0, raft_applies: 1);
    let got = node_services_json(&c, "k8s-sync").await;
    assert_eq!(got.len(), 5);
    for a in ["10.61.1.1", "10.61.1.2"] {
        let s = &got[&service_id("np", a)];
        assert_eq!(s["Address"], "203.0.113.61");
        assert_eq!(s["Port"], 0);
    }
    ctl.stop().await;
}

#[tokio::test]
async fn ports_changed_by_someone_else_are_seen_and_restored_with_one_write() {
    let k = kube().await;
    let (csb, c) = consul().await;
    cluster_ip_ports_with_endpoints(
        &k.client,
        "default",
        "web",
        &[("http", 80, 8080), ("grpc", 9090, 9090)],
        &[ep("10.62.0.1")],
    )
    .await;
    let mut s = settings(multi("k8s-sync"));
    // The verification pass is what repairs drift nobody announced.
    s.verify_interval = Duration::from_millis(300);
    let ctl = start(&k.client, &c, s);
    let id = service_id("web", "10.62.0.1");
    let want = json!([
        {"Name": "http", "Port": 8080, "Default": true},
        {"Name": "grpc", "Port": 9090, "Default": false}
    ]);
    wait_for("registered", || async {
        node_services_json(&c, "k8s-sync")
            .await
            .get(&id)
            .is_some_and(|s| s["Ports"] == want)
    })
    .await;
    ctl.settle(&csb).await;

    // A third party drops one port and changes nothing else: only the
    // Ports comparison can notice.
    let mut theirs = c
        .node_services("k8s-sync", &QueryOptions::default())
        .await
        .unwrap()
        .value
        .services
        .into_iter()
        .find(|s| s.id == id)
        .unwrap();
    assert_eq!(theirs.ports.len(), 2);
    theirs.ports.pop();
    let before = csb.stats().raft_applies;
    c.txn(&[mirra_consul::TxnOp::Service {
        verb: mirra_consul::Verb::Set,
        node: "k8s-sync".into(),
        service: theirs,
    }])
    .await
    .unwrap();
    assert_eq!(csb.stats().raft_applies - before, 1);
    assert_eq!(
        node_services_json(&c, "k8s-sync").await[&id]["Ports"],
        json!([{"Name": "http", "Port": 8080, "Default": true}])
    );
    wait_for("both ports again", || async {
        node_services_json(&c, "k8s-sync").await[&id]["Ports"] == want
    })
    .await;
    ctl.settle(&csb).await;
    // Theirs, then exactly one repair of ours.
    assert_eq!(csb.stats().raft_applies - before, 2);
    ctl.stop().await;
}
