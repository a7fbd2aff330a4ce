//! One test per rule of the mapping consul-k8s `sync-catalog` applies (what
//! a Service becomes in Consul), plus mirra's documented differences.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::BTreeMap;

use common::*;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::Ingress;
use mirra_catalog::mapping::default_consul_name;
use mirra_catalog::{
    CheckStatus, NoNodes, NodeLookup, NodePortSyncType, PortLayout, Registration, ServiceOutcome,
    ServicePort, SkipReason, SyncSettings, Weights, desired_for_service, service_id,
};

fn run(svc: &Service, slices: &[EndpointSlice], settings: &SyncSettings) -> ServiceOutcome {
    let refs: Vec<&EndpointSlice> = slices.iter().collect();
    desired_for_service(svc, &refs, &NoNodes, &[], settings)
}

fn run_full(
    svc: &Service,
    slices: &[EndpointSlice],
    nodes: &dyn NodeLookup,
    ingresses: &[Ingress],
    settings: &SyncSettings,
) -> ServiceOutcome {
    let refs: Vec<&EndpointSlice> = slices.iter().collect();
    let ing: Vec<&Ingress> = ingresses.iter().collect();
    desired_for_service(svc, &refs, nodes, &ing, settings)
}

fn by_address(out: &ServiceOutcome) -> BTreeMap<String, Registration> {
    out.registrations
        .iter()
        .map(|r| (r.address.clone(), r.clone()))
        .collect()
}

fn web() -> common::SvcBuilder {
    svc("prod", "web").port("http", 80)
}

fn web_slice() -> common::SliceBuilder {
    slice("prod", "web", "web-abc").port("http", 8080)
}

/// NodePort Service `prod/np`: port `http` 80 on node port 30080.
fn nodeport() -> common::SvcBuilder {
    svc("prod", "np")
        .type_("NodePort")
        .node_port("http", 80, 30080)
}

/// A slice of `prod/np` with port `http` 8080.
fn nodeport_slice() -> common::SliceBuilder {
    slice("prod", "np", "np-1").port("http", 8080)
}

#[test]
fn clusterip_instance_has_every_field_consul_k8s_writes() {
    let s = all_namespaces();
    let out = run(
        &web().build(),
        &[web_slice()
            .endpoint(ep("10.0.0.1").node("n1").zone("zone-a"))
            .build()],
        &s,
    );
    assert_eq!(out.skipped, None);
    assert!(out.warnings.is_empty());
    assert_eq!(out.registrations.len(), 1);
    let r = &out.registrations[0];
    assert_eq!(r.name, "web");
    assert_eq!(r.id, service_id("web", "10.0.0.1"));
    assert_eq!(r.address, "10.0.0.1");
    assert_eq!(r.port, 8080, "ClusterIP instances use the target port");
    assert!(r.ports.is_empty());
    assert_eq!(r.tags, vec!["k8s"]);
    assert_eq!(r.weights, Weights::default());
    let want_meta: BTreeMap<String, String> = [
        ("external-source", "kubernetes"),
        ("external-k8s-ns", "prod"),
        ("port-http", "80"),
        ("external-k8s-ref-kind", "Pod"),
        ("external-k8s-ref-name", "pod-10.0.0.1"),
        ("external-k8s-node-name", "n1"),
        ("external-k8s-topology-zone", "zone-a"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    assert_eq!(r.meta, want_meta);
    let check = r.check.as_ref().unwrap();
    assert_eq!(check.check_id, format!("prod/{}", r.id));
    assert_eq!(check.service_id, r.id);
    assert_eq!(check.name(), "Kubernetes Readiness Check");
    assert_eq!(check.check_type(), "kubernetes-readiness");
    assert_eq!(check.status, CheckStatus::Passing);
    assert_eq!(check.output(), "Kubernetes health checks passing");
}

#[test]
fn endpoint_meta_keys_only_when_the_endpoint_has_them() {
    let out = run(
        &web().build(),
        &[web_slice().endpoint(ep("10.0.0.1").no_target()).build()],
        &all_namespaces(),
    );
    let meta = &out.registrations[0].meta;
    for k in [
        "external-k8s-ref-kind",
        "external-k8s-ref-name",
        "external-k8s-node-name",
        "external-k8s-topology-zone",
    ] {
        assert!(!meta.contains_key(k), "{k} must be absent");
    }
}

#[test]
fn readiness_table_ready_not_ready_nil_terminating() {
    let out = run(
        &web().build(),
        &[web_slice()
            .endpoint(ep("10.0.0.1").ready(Some(true)))
            .endpoint(ep("10.0.0.2").ready(Some(false)))
            .endpoint(ep("10.0.0.3").ready(None))
            .endpoint(ep("10.0.0.4").no_conditions())
            .endpoint(ep("10.0.0.5").terminating())
            .build()],
        &all_namespaces(),
    );
    let m = by_address(&out);
    let status = |a: &str| m[a].check.as_ref().unwrap().status;
    assert_eq!(status("10.0.0.1"), CheckStatus::Passing);
    assert_eq!(status("10.0.0.2"), CheckStatus::Critical);
    assert_eq!(
        m["10.0.0.2"].check.as_ref().unwrap().output(),
        "Kubernetes health checks failing"
    );
    assert_eq!(
        status("10.0.0.3"),
        CheckStatus::Passing,
        "nil ready = ready"
    );
    assert_eq!(
        status("10.0.0.4"),
        CheckStatus::Passing,
        "no conditions = ready"
    );
    assert!(
        !m.contains_key("10.0.0.5"),
        "terminating endpoints are not registered"
    );
    assert_eq!(m.len(), 4);
}

#[test]
fn unique_addresses_across_all_slices() {
    let a = web_slice()
        .endpoint(ep("10.0.0.1"))
        .endpoint(ep("10.0.0.2"))
        .build();
    let mut b = slice("prod", "web", "web-def")
        .port("http", 8080)
        .endpoint(ep("10.0.0.2"))
        .endpoint(ep("10.0.0.3"))
        .build();
    let out = run(&web().build(), &[a.clone(), b.clone()], &all_namespaces());
    let addrs: Vec<_> = out
        .registrations
        .iter()
        .map(|r| r.address.as_str())
        .collect();
    let mut sorted = addrs.clone();
    sorted.sort();
    assert_eq!(sorted, vec!["10.0.0.1", "10.0.0.2", "10.0.0.3"]);

    // Deleting one slice recomputes from the remaining one instead of
    // dropping everything.
    let out = run(&web().build(), std::slice::from_ref(&a), &all_namespaces());
    assert_eq!(out.registrations.len(), 2);

    // Input order does not matter, even when duplicates disagree.
    b.endpoints[0].conditions.as_mut().unwrap().ready = Some(false);
    let ab = run(&web().build(), &[a.clone(), b.clone()], &all_namespaces());
    let ba = run(&web().build(), &[b, a], &all_namespaces());
    assert_eq!(ab, ba);
}

#[test]
fn slices_of_other_services_are_ignored() {
    let other = one_endpoint_slice("prod", "api", "api-1", 9000, "10.9.9.9");
    let other_ns = one_endpoint_slice("dev", "web", "web-1", 9000, "10.8.8.8");
    let out = run(&web().build(), &[other, other_ns], &all_namespaces());
    assert!(out.registrations.is_empty());
    assert_eq!(out.skipped, None);
}

#[test]
fn clusterip_without_endpoints_has_no_instances_but_is_not_skipped() {
    let out = run(&web().build(), &[], &all_namespaces());
    assert!(out.registrations.is_empty());
    assert_eq!(out.skipped, None);
}

#[test]
fn clusterip_uses_endpoint_hostname_when_address_is_empty() {
    let mut e = ep("").hostname("pod-a.example");
    e = e.ready(Some(true));
    let out = run(
        &web().build(),
        &[web_slice().endpoint(e).build()],
        &all_namespaces(),
    );
    assert_eq!(out.registrations.len(), 1);
    assert_eq!(out.registrations[0].address, "pod-a.example");
}

fn three_nodes() -> BTreeMap<String, k8s_openapi::api::core::v1::Node> {
    nodes(vec![
        node(
            "both",
            &[("InternalIP", "192.168.0.1"), ("ExternalIP", "203.0.113.1")],
        ),
        node(
            "internal",
            &[("Hostname", "internal"), ("InternalIP", "192.168.0.2")],
        ),
        node(
            "external",
            &[
                ("ExternalIP", "203.0.113.3"),
                ("ExternalIP", "203.0.113.33"),
            ],
        ),
    ])
}

#[test]
fn nodeport_three_sync_types() {
    let service = nodeport().build();
    let slices = [nodeport_slice()
        .endpoint(ep("10.0.0.1").node("both"))
        .endpoint(ep("10.0.0.2").node("internal"))
        .endpoint(ep("10.0.0.3").node("external"))
        .build()];
    let table: &[(NodePortSyncType, &[(&str, &str)])] = &[
        (
            NodePortSyncType::ExternalOnly,
            &[("10.0.0.1", "203.0.113.1"), ("10.0.0.3", "203.0.113.3")],
        ),
        (
            NodePortSyncType::InternalOnly,
            &[("10.0.0.1", "192.168.0.1"), ("10.0.0.2", "192.168.0.2")],
        ),
        (
            NodePortSyncType::ExternalFirst,
            &[
                ("10.0.0.1", "203.0.113.1"),
                ("10.0.0.2", "192.168.0.2"),
                ("10.0.0.3", "203.0.113.3"),
            ],
        ),
    ];
    let ns = three_nodes();
    for (mode, want) in table {
        let s = SyncSettings {
            node_port_sync_type: *mode,
            ..all_namespaces()
        };
        let out = run_full(&service, &slices, &ns, &[], &s);
        let mut got: Vec<(String, String)> = out
            .registrations
            .iter()
            .map(|r| (r.id.clone(), r.address.clone()))
            .collect();
        got.sort();
        let mut expected: Vec<(String, String)> = want
            .iter()
            .map(|(pod, addr)| (service_id("np", pod), (*addr).to_owned()))
            .collect();
        expected.sort();
        assert_eq!(got, expected, "{mode}");
        for r in &out.registrations {
            assert_eq!(r.port, 30080, "NodePort instances use the node port");
            assert!(r.check.is_none(), "NodePort instances carry no check");
            assert!(r.meta.contains_key("external-k8s-node-name"));
        }
    }
}

#[test]
fn nodeport_skips_endpoints_without_node_or_unknown_node() {
    let service = nodeport().build();
    let slices = [nodeport_slice()
        .endpoint(ep("10.0.0.1"))
        .endpoint(ep("10.0.0.2").node("ghost"))
        .endpoint(ep("10.0.0.3").node("both").terminating())
        .build()];
    let out = run_full(&service, &slices, &three_nodes(), &[], &all_namespaces());
    assert!(out.registrations.is_empty());
}

#[test]
fn nodeport_port_is_first_node_port_or_annotated_ports_node_port() {
    let service = nodeport().node_port("admin", 81, 30081);
    let slices = [nodeport_slice()
        .endpoint(ep("10.0.0.1").node("both"))
        .build()];
    let out = run_full(
        &service.build(),
        &slices,
        &three_nodes(),
        &[],
        &all_namespaces(),
    );
    assert_eq!(out.registrations[0].port, 30080);
    let annotated = nodeport()
        .node_port("admin", 81, 30081)
        .annotation("consul.hashicorp.com/service-port", "admin")
        .build();
    let out = run_full(&annotated, &slices, &three_nodes(), &[], &all_namespaces());
    assert_eq!(out.registrations[0].port, 30081);
}

#[test]
fn loadbalancer_ip_else_hostname_deduplicated_with_weight() {
    let service = svc("prod", "lb")
        .type_("LoadBalancer")
        .port("https", 443)
        .lb_ip("198.51.100.7")
        .lb_hostname("lb.example.com")
        .lb_ip("198.51.100.7")
        .annotation("consul.hashicorp.com/service-weight", "5")
        .build();
    let out = run(&service, &[], &all_namespaces());
    let m = by_address(&out);
    assert_eq!(m.len(), 2);
    let ip = &m["198.51.100.7"];
    assert_eq!(ip.id, service_id("lb", "198.51.100.7"));
    assert_eq!(ip.port, 443);
    assert!(ip.check.is_none());
    assert_eq!(
        ip.weights,
        Weights {
            passing: 5,
            warning: 0
        }
    );
    assert_eq!(m["lb.example.com"].id, service_id("lb", "lb.example.com"));
    assert_eq!(
        ip.meta.keys().cloned().collect::<Vec<_>>(),
        vec!["external-k8s-ns", "external-source", "port-https"]
    );
}

#[test]
fn loadbalancer_without_ingress_status_has_nothing_yet() {
    let service = svc("prod", "lb")
        .type_("LoadBalancer")
        .port("https", 443)
        .build();
    let out = run(
        &service,
        &[web_slice().endpoint(ep("10.0.0.1")).build()],
        &all_namespaces(),
    );
    assert!(out.registrations.is_empty());
}

#[test]
fn loadbalancer_with_endpoint_sync_behaves_like_clusterip() {
    let service = svc("prod", "web")
        .type_("LoadBalancer")
        .port("http", 80)
        .lb_ip("198.51.100.7")
        .annotation("consul.hashicorp.com/service-weight", "5")
        .build();
    let s = SyncSettings {
        sync_lb_services_endpoints: true,
        ..all_namespaces()
    };
    let out = run(
        &service,
        &[web_slice().endpoint(ep("10.0.0.1")).build()],
        &s,
    );
    assert_eq!(out.registrations.len(), 1);
    let r = &out.registrations[0];
    assert_eq!(r.address, "10.0.0.1");
    assert_eq!(r.port, 8080);
    assert!(r.check.is_some());
    assert_eq!(
        r.weights,
        Weights::default(),
        "weight applies only to LB/external IP instances"
    );
}

#[test]
fn external_ips_win_for_every_type() {
    for t in ["ClusterIP", "NodePort", "LoadBalancer"] {
        let service = svc("prod", "web")
            .type_(t)
            .node_port("http", 80, 30080)
            .external_ips(&["203.0.113.9", "203.0.113.10"])
            .lb_ip("198.51.100.7")
            .annotation("consul.hashicorp.com/service-weight", "3")
            .build();
        let out = run_full(
            &service,
            &[web_slice().endpoint(ep("10.0.0.1").node("both")).build()],
            &three_nodes(),
            &[],
            &all_namespaces(),
        );
        let addrs: Vec<_> = by_address(&out).into_keys().collect();
        assert_eq!(addrs, vec!["203.0.113.10", "203.0.113.9"], "{t}");
        let want_port = if t == "NodePort" { 30080 } else { 80 };
        for r in &out.registrations {
            assert_eq!(r.port, want_port, "{t}");
            assert!(r.check.is_none());
            assert_eq!(
                r.weights,
                Weights {
                    passing: 3,
                    warning: 0
                }
            );
        }
    }
}

#[test]
fn external_name_and_unknown_types_register_nothing() {
    let en = svc("prod", "ext").type_("ExternalName").build();
    assert_eq!(
        run(&en, &[], &all_namespaces()).skipped,
        Some(SkipReason::ExternalName)
    );
    // An empty entry is no address.
    let blank = svc("prod", "ext")
        .type_("ExternalName")
        .external_ips(&[""])
        .build();
    assert_eq!(
        run(&blank, &[], &all_namespaces()).skipped,
        Some(SkipReason::ExternalName)
    );
    let odd = svc("prod", "odd").type_("Weird").build();
    assert_eq!(
        run(&odd, &[], &all_namespaces()).skipped,
        Some(SkipReason::UnsupportedType("Weird".into()))
    );
}

#[test]
fn consul_name_prefix_suffix_and_annotation() {
    let table: &[(&str, bool, Option<&str>, &str)] = &[
        ("", false, None, "web"),
        ("k8s-", false, None, "k8s-web"),
        ("", true, None, "web-prod"),
        ("k8s-", true, None, "k8s-web-prod"),
        ("k8s-", true, Some("  frontend "), "frontend"),
    ];
    for (prefix, suffix, ann, want) in table {
        let s = SyncSettings {
            consul_service_prefix: (*prefix).into(),
            add_k8s_namespace_suffix: *suffix,
            ..all_namespaces()
        };
        if ann.is_none() {
            assert_eq!(default_consul_name("web", "prod", &s), *want);
        }
        let mut b = web();
        if let Some(a) = ann {
            b = b.annotation("consul.hashicorp.com/service-name", a);
        }
        let out = run(
            &b.build(),
            &[web_slice().endpoint(ep("10.0.0.1")).build()],
            &s,
        );
        assert_eq!(out.registrations[0].name, *want);
        assert_eq!(out.registrations[0].id, service_id(want, "10.0.0.1"));
    }
}

#[test]
fn same_name_in_two_namespaces() {
    let a = svc("team-a", "web").port("http", 80).build();
    let b = svc("team-b", "web").port("http", 80).build();
    let sa = one_endpoint_slice("team-a", "web", "s", 8080, "10.0.0.1");
    let sb = one_endpoint_slice("team-b", "web", "s", 8080, "10.0.0.2");

    let plain = all_namespaces();
    let ra = run(&a, std::slice::from_ref(&sa), &plain);
    let rb = run(&b, std::slice::from_ref(&sb), &plain);
    assert_eq!(ra.registrations[0].name, "web");
    assert_eq!(
        rb.registrations[0].name, "web",
        "one Consul service, two namespaces"
    );
    assert_ne!(ra.registrations[0].id, rb.registrations[0].id);
    assert_eq!(ra.registrations[0].meta["external-k8s-ns"], "team-a");
    assert_eq!(rb.registrations[0].meta["external-k8s-ns"], "team-b");
    assert_eq!(
        ra.registrations[0]
            .check
            .as_ref()
            .unwrap()
            .check_id
            .split('/')
            .next(),
        Some("team-a")
    );

    let suffixed = SyncSettings {
        add_k8s_namespace_suffix: true,
        ..all_namespaces()
    };
    let ra = run(&a, &[sa], &suffixed);
    let rb = run(&b, &[sb], &suffixed);
    assert_eq!(ra.registrations[0].name, "web-team-a");
    assert_eq!(rb.registrations[0].name, "web-team-b");
}

#[test]
fn tags_annotation_appended_after_the_k8s_tag() {
    let s = SyncSettings {
        consul_k8s_tag: "from-k8s".into(),
        ..all_namespaces()
    };
    let out = run(
        &web()
            .annotation(
                "consul.hashicorp.com/service-tags",
                r"v1, blue ,with\,comma,,",
            )
            .build(),
        &[web_slice().endpoint(ep("10.0.0.1")).build()],
        &s,
    );
    assert_eq!(
        out.registrations[0].tags,
        vec!["from-k8s", "v1", "blue", "with,comma"]
    );
}

#[test]
fn meta_annotations_added_protected_keys_kept() {
    let out = run(
        &web()
            .annotation("consul.hashicorp.com/service-meta-team", "payments")
            .annotation("consul.hashicorp.com/service-meta-external-source", "other")
            .annotation("consul.hashicorp.com/service-meta-bad.key", "x")
            .build(),
        &[web_slice().endpoint(ep("10.0.0.1")).build()],
        &all_namespaces(),
    );
    let r = &out.registrations[0];
    assert_eq!(r.meta["team"], "payments");
    assert_eq!(r.meta["external-source"], "kubernetes");
    assert!(!r.meta.contains_key("bad.key"));
    assert_eq!(out.warnings.len(), 2);
}

#[test]
fn too_many_meta_annotations_are_capped_with_warnings() {
    let mut b = web();
    for i in 0..70 {
        b = b.annotation(&format!("consul.hashicorp.com/service-meta-k{i:02}"), "v");
    }
    let out = run(
        &b.build(),
        &[web_slice()
            .endpoint(ep("10.0.0.1").node("n").zone("z"))
            .build()],
        &all_namespaces(),
    );
    let r = &out.registrations[0];
    assert!(r.meta.len() <= 64, "{}", r.meta.len());
    assert_eq!(out.warnings.len(), 70 - (64 - 3 - 4));
}

#[test]
fn weight_rules() {
    let lb = |w: &str| {
        svc("prod", "lb")
            .type_("LoadBalancer")
            .port("https", 443)
            .lb_ip("198.51.100.7")
            .annotation("consul.hashicorp.com/service-weight", w)
            .build()
    };
    let table: &[(&str, Weights, usize)] = &[
        (
            "2",
            Weights {
                passing: 2,
                warning: 0,
            },
            0,
        ),
        (
            "100",
            Weights {
                passing: 100,
                warning: 0,
            },
            0,
        ),
        ("1", Weights::default(), 1),
        ("0", Weights::default(), 1),
        ("-4", Weights::default(), 1),
        ("heavy", Weights::default(), 1),
        ("70000", Weights::default(), 1),
        ("", Weights::default(), 0),
    ];
    for (value, want, warnings) in table {
        let out = run(&lb(value), &[], &all_namespaces());
        assert_eq!(out.registrations.len(), 1, "{value}");
        assert_eq!(out.registrations[0].weights, *want, "{value}");
        assert_eq!(out.warnings.len(), *warnings, "{value}");
    }
}

#[test]
fn port_annotation_table_for_clusterip() {
    let service = |ann: Option<&str>| {
        let mut b = svc("prod", "web").port("http", 80).port("metrics", 9090);
        if let Some(a) = ann {
            b = b.annotation("consul.hashicorp.com/service-port", a);
        }
        b.build()
    };
    let sl = [slice("prod", "web", "web-1")
        .port("http", 8080)
        .port("metrics", 9102)
        .endpoint(ep("10.0.0.1"))
        .build()];
    let table: &[(Option<&str>, u16, usize)] = &[
        (None, 8080, 0),
        (Some("metrics"), 9102, 0),
        (Some("http"), 8080, 0),
        (Some("7777"), 7777, 0),
        (Some("0x1e61"), 7777, 0),
        (Some("nope"), 8080, 1),
        (Some("70000"), 8080, 1),
    ];
    for (ann, want, warnings) in table {
        let out = run(&service(*ann), &sl, &all_namespaces());
        assert_eq!(out.registrations[0].port, *want, "{ann:?}");
        assert_eq!(out.warnings.len(), *warnings, "{ann:?}");
    }
}

#[test]
fn port_annotation_on_service_without_ports_is_reported_and_ignored() {
    let service = svc("prod", "web")
        .annotation("consul.hashicorp.com/service-port", "8443")
        .build();
    let out = run(
        &service,
        &[web_slice().endpoint(ep("10.0.0.1")).build()],
        &all_namespaces(),
    );
    assert_eq!(
        out.registrations[0].port, 8080,
        "first slice port, as consul-k8s"
    );
    assert_eq!(out.warnings.len(), 1);
    assert!(
        out.registrations[0]
            .meta
            .keys()
            .all(|k| !k.starts_with("port-"))
    );
}

#[test]
fn port_meta_for_every_port_uses_service_port() {
    let service = nodeport()
        .node_port("", 81, 30081)
        .external_ips(&["203.0.113.9"])
        .build();
    let out = run(&service, &[], &all_namespaces());
    let meta = &out.registrations[0].meta;
    assert_eq!(meta["port-http"], "80");
    assert_eq!(
        meta["port-"], "81",
        "an unnamed port gives the key port-, as in consul-k8s"
    );
}

#[test]
fn multi_port_layout() {
    let s = SyncSettings {
        port_layout: PortLayout::Multi,
        ..all_namespaces()
    };
    let service = svc("prod", "web")
        .port("http", 80)
        .port("metrics", 9090)
        .annotation("consul.hashicorp.com/service-port", "metrics")
        .build();
    let sl = [slice("prod", "web", "web-1")
        .port("http", 8080)
        .port("metrics", 9102)
        .endpoint(ep("10.0.0.1"))
        .build()];
    let out = run(&service, &sl, &s);
    let r = &out.registrations[0];
    assert_eq!(r.port, 0);
    assert_eq!(
        r.ports,
        vec![
            ServicePort {
                name: "metrics".into(),
                port: 9102,
                default: true
            },
            ServicePort {
                name: "http".into(),
                port: 8080,
                default: false
            },
        ]
    );

    // Service-level list for NodePort; unnamed port gets port<N>; numeric
    // annotation adds a "default" entry first.
    let np = nodeport()
        .node_port("", 81, 30081)
        .annotation("consul.hashicorp.com/service-port", "31000")
        .build();
    let nsl = [nodeport_slice()
        .endpoint(ep("10.0.0.1").node("both"))
        .build()];
    let out = run_full(&np, &nsl, &three_nodes(), &[], &s);
    assert_eq!(
        out.registrations[0].ports,
        vec![
            ServicePort {
                name: "default".into(),
                port: 31000,
                default: true
            },
            ServicePort {
                name: "http".into(),
                port: 30080,
                default: false
            },
            ServicePort {
                name: "port2".into(),
                port: 30081,
                default: false
            },
        ]
    );

    // Without annotation the first port is the default.
    let plain = svc("prod", "web").port("http", 80).build();
    let out = run(&plain, &sl, &s);
    assert_eq!(
        out.registrations[0].ports[0],
        ServicePort {
            name: "http".into(),
            port: 8080,
            default: true
        }
    );
    assert!(!out.registrations[0].ports[1].default);
}

#[test]
fn ingress_collapses_instances_to_the_host() {
    let s = SyncSettings {
        enable_ingress: true,
        ..all_namespaces()
    };
    let sl = [web_slice()
        .endpoint(ep("10.0.0.1"))
        .endpoint(ep("10.0.0.2"))
        .build()];
    let plain = [ingress("prod", "web", "web.example.com", "web", false)];
    let out = run_full(&web().build(), &sl, &NoNodes, &plain, &s);
    assert_eq!(out.registrations.len(), 1);
    let r = &out.registrations[0];
    assert_eq!(r.address, "web.example.com");
    assert_eq!(r.port, 80);
    assert_eq!(r.id, service_id("web", "web.example.com"));
    assert!(r.check.is_some());

    let tls = [ingress("prod", "web", "web.example.com", "web", true)];
    let out = run_full(&web().build(), &sl, &NoNodes, &tls, &s);
    assert_eq!(out.registrations[0].port, 443);

    let lb_ips = SyncSettings {
        sync_ingress_lb_ips: true,
        ..s.clone()
    };
    let with_ip = [with_ingress_lb_ip(
        ingress("prod", "web", "web.example.com", "web", false),
        "198.51.100.20",
    )];
    let out = run_full(&web().build(), &sl, &NoNodes, &with_ip, &lb_ips);
    assert_eq!(out.registrations[0].address, "198.51.100.20");
    // Without an LB IP yet, the Ingress does not apply.
    let out = run_full(&web().build(), &sl, &NoNodes, &plain, &lb_ips);
    assert_eq!(out.registrations.len(), 2);

    // Other namespace, other Service, or ingress sync off: no collapse.
    let elsewhere = [
        ingress("dev", "web", "web.example.com", "web", false),
        ingress("prod", "api", "api.example.com", "api", false),
    ];
    assert_eq!(
        run_full(&web().build(), &sl, &NoNodes, &elsewhere, &s)
            .registrations
            .len(),
        2
    );
    assert_eq!(
        run_full(&web().build(), &sl, &NoNodes, &plain, &all_namespaces())
            .registrations
            .len(),
        2
    );

    // No endpoints: nothing to collapse.
    assert!(
        run_full(&web().build(), &[], &NoNodes, &plain, &s)
            .registrations
            .is_empty()
    );
}

#[test]
fn namespace_allow_and_deny() {
    let sl = [web_slice().endpoint(ep("10.0.0.1")).build()];
    let default = SyncSettings::default();
    assert_eq!(
        run(&web().build(), &sl, &default).skipped,
        Some(SkipReason::NamespaceNotAllowed)
    );
    let listed = SyncSettings {
        allow_k8s_namespaces: ["prod".to_owned()].into(),
        ..SyncSettings::default()
    };
    assert_eq!(run(&web().build(), &sl, &listed).skipped, None);
    let denied = SyncSettings {
        deny_k8s_namespaces: ["prod".to_owned()].into(),
        ..all_namespaces()
    };
    let out = run(&web().build(), &sl, &denied);
    assert_eq!(out.skipped, Some(SkipReason::NamespaceDenied));
    assert!(out.registrations.is_empty());
    let helm = SyncSettings::helm_chart_defaults();
    let sys = svc("kube-system", "dns").port("dns", 53).build();
    assert_eq!(
        run(&sys, &[], &helm).skipped,
        Some(SkipReason::NamespaceDenied)
    );
}

#[test]
fn clusterip_sync_flag() {
    let s = SyncSettings {
        sync_clusterip_services: false,
        ..all_namespaces()
    };
    let sl = [web_slice().endpoint(ep("10.0.0.1")).build()];
    assert_eq!(
        run(&web().build(), &sl, &s).skipped,
        Some(SkipReason::ClusterIpSyncDisabled)
    );
    // A Service without spec.type is ClusterIP.
    let mut untyped = web().build();
    untyped.spec.as_mut().unwrap().type_ = None;
    assert_eq!(
        run(&untyped, &sl, &s).skipped,
        Some(SkipReason::ClusterIpSyncDisabled)
    );
    let lb = svc("prod", "lb")
        .type_("LoadBalancer")
        .port("h", 1)
        .lb_ip("198.51.100.1")
        .build();
    assert_eq!(run(&lb, &[], &s).registrations.len(), 1);
}

#[test]
fn sync_annotation_and_default_sync() {
    let sl = [web_slice().endpoint(ep("10.0.0.1")).build()];
    let opt_in = SyncSettings {
        k8s_default_sync: false,
        ..all_namespaces()
    };
    let table: &[(&SyncSettings, Option<&str>, Option<SkipReason>, usize)] = &[
        (&opt_in, None, Some(SkipReason::NotEnabledByDefault), 0),
        (&opt_in, Some("true"), None, 0),
        (&opt_in, Some("T"), None, 0),
        (
            &opt_in,
            Some("bogus"),
            Some(SkipReason::NotEnabledByDefault),
            1,
        ),
    ];
    for (s, ann, want, warnings) in table {
        let mut b = web();
        if let Some(a) = ann {
            b = b.annotation("consul.hashicorp.com/service-sync", a);
        }
        let out = run(&b.build(), &sl, s);
        assert_eq!(out.skipped, *want, "{ann:?}");
        assert_eq!(out.warnings.len(), *warnings, "{ann:?}");
    }
    let all = all_namespaces();
    let off = run(
        &web()
            .annotation("consul.hashicorp.com/service-sync", "false")
            .build(),
        &sl,
        &all,
    );
    assert_eq!(off.skipped, Some(SkipReason::DisabledByAnnotation));
    assert!(off.registrations.is_empty());
    let bad = run(
        &web()
            .annotation("consul.hashicorp.com/service-sync", "yes")
            .build(),
        &sl,
        &all,
    );
    assert_eq!(bad.skipped, None, "falls back to -k8s-default-sync");
    assert_eq!(bad.registrations.len(), 1);
    assert_eq!(bad.warnings.len(), 1);
    assert_eq!(
        bad.warnings[0].annotation,
        "consul.hashicorp.com/service-sync"
    );
}

#[test]
fn bad_annotations_still_give_a_complete_consistent_set() {
    let service = web()
        .annotation("consul.hashicorp.com/service-port", "nope")
        .annotation("consul.hashicorp.com/service-weight", "x")
        .annotation("consul.hashicorp.com/service-sync", "maybe")
        .build();
    let sl = [web_slice()
        .endpoint(ep("10.0.0.1"))
        .endpoint(ep("10.0.0.2"))
        .build()];
    let out = run(&service, &sl, &all_namespaces());
    assert_eq!(out.warnings.len(), 3);
    assert_eq!(out.registrations.len(), 2);
    for r in &out.registrations {
        assert_eq!(r.name, "web");
        assert_eq!(r.port, 8080);
    }
}

#[test]
fn service_without_name_is_skipped() {
    let mut s = web().build();
    s.metadata.name = None;
    assert_eq!(
        run(&s, &[], &all_namespaces()).skipped,
        Some(SkipReason::MissingName)
    );
}

#[test]
fn registrations_are_sorted_by_id_and_unique() {
    let sl = [web_slice()
        .endpoint(ep("10.0.0.3"))
        .endpoint(ep("10.0.0.1"))
        .endpoint(ep("10.0.0.2"))
        .build()];
    let out = run(&web().build(), &sl, &all_namespaces());
    let ids: Vec<_> = out.registrations.iter().map(|r| r.id.clone()).collect();
    let mut sorted = ids.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(ids, sorted);
}

#[test]
fn to_consul_off_skips_everything() {
    let s = SyncSettings {
        to_consul: false,
        ..all_namespaces()
    };
    assert_eq!(
        run(&web().build(), &[], &s).skipped,
        Some(SkipReason::ToConsulDisabled)
    );
}

#[test]
fn malformed_objects_fall_back_without_panicking() {
    let s = all_namespaces();
    // No spec at all: a ClusterIP Service without ports.
    let mut bare = web().build();
    bare.spec = None;
    let sl = [web_slice().endpoint(ep("10.0.0.1")).build()];
    let out = run(&bare, &sl, &s);
    assert_eq!(out.registrations.len(), 1);
    assert_eq!(out.registrations[0].port, 8080);

    // Slice ports without numbers, negative and oversized port numbers.
    let mut odd = slice("prod", "web", "odd").endpoint(ep("10.0.0.2")).build();
    odd.ports = Some(vec![k8s_openapi::api::discovery::v1::EndpointPort {
        name: None,
        port: None,
        ..Default::default()
    }]);
    let out = run(&svc("prod", "web").port("", -3).build(), &[odd], &s);
    assert_eq!(out.registrations.len(), 1);
    assert_eq!(out.registrations[0].port, 0, "no usable port: Consul's 0");
    let big = svc("prod", "web")
        .port("http", 70_000)
        .external_ips(&["203.0.113.1"])
        .build();
    assert_eq!(run(&big, &[], &s).registrations[0].port, 0);

    // Addresses that are not IPs are passed through (Consul accepts any
    // string); empty ones are skipped.
    let weird = svc("prod", "web")
        .port("http", 80)
        .external_ips(&["not-an-ip", "", "999.1.1.1"])
        .build();
    let addrs: Vec<_> = run(&weird, &[], &s)
        .registrations
        .into_iter()
        .map(|r| r.address)
        .collect();
    assert_eq!(addrs.len(), 2);
    assert!(addrs.iter().all(|a| !a.is_empty()));

    // Endpoints with no addresses, and nodes with empty addresses.
    let mut empty_ep = ep("10.0.0.3");
    empty_ep = empty_ep.node("blank");
    let mut sl = web_slice().endpoint(empty_ep).build();
    sl.endpoints
        .push(k8s_openapi::api::discovery::v1::Endpoint::default());
    let np = svc("prod", "web")
        .type_("NodePort")
        .node_port("http", 80, 30080)
        .build();
    let blank = nodes(vec![node(
        "blank",
        &[("ExternalIP", ""), ("InternalIP", "")],
    )]);
    let out = run_full(&np, &[sl], &blank, &[], &s);
    assert!(out.registrations.is_empty());
}

/// consul-k8s (control-plane/catalog/to-consul/resource.go): "if there are
/// external IPs then those become the instance registrations for any type
/// of service", ExternalName included, before the type is looked at.
#[test]
fn external_name_with_external_ips_registers_one_instance_per_ip() {
    let service = svc("prod", "legacy")
        .type_("ExternalName")
        .external_ips(&["203.0.113.9", "203.0.113.10", "203.0.113.9"])
        .annotation("consul.hashicorp.com/service-weight", "4")
        .build();
    let out = run(&service, &[], &all_namespaces());
    assert_eq!(out.skipped, None);
    let by_addr = by_address(&out);
    let addrs: Vec<_> = by_addr.keys().cloned().collect();
    assert_eq!(addrs, vec!["203.0.113.10", "203.0.113.9"]);
    for (addr, r) in &by_addr {
        assert_eq!(r.name, "legacy");
        assert_eq!(r.id, service_id("legacy", addr));
        assert!(r.check.is_none(), "fixed addresses have no readiness");
        assert_eq!(r.weights.passing, 4);
        assert_eq!(r.tags.first().map(String::as_str), Some("k8s"));
    }
}

/// An empty, blank or over-255-character `service-name` annotation
/// registers nothing (recent consul-k8s; Consul refuses such a name) and
/// is reported once, naming the annotation; a valid one is used trimmed.
#[test]
fn invalid_service_name_annotation_registers_nothing_and_warns() {
    let long = "n".repeat(256);
    for bad in ["", " ", "\t  \n", long.as_str()] {
        let service = web()
            .annotation("consul.hashicorp.com/service-name", bad)
            .build();
        let out = run(
            &service,
            &[web_slice().endpoint(ep("10.0.0.1")).build()],
            &all_namespaces(),
        );
        assert_eq!(out.skipped, Some(SkipReason::InvalidServiceName), "{bad:?}");
        assert!(out.registrations.is_empty(), "{bad:?}");
        assert_eq!(out.warnings.len(), 1, "{bad:?}");
        assert_eq!(
            out.warnings[0].annotation,
            "consul.hashicorp.com/service-name"
        );
    }
    let ok = "n".repeat(255);
    let out = run(
        &web()
            .annotation("consul.hashicorp.com/service-name", &format!(" {ok} "))
            .build(),
        &[web_slice().endpoint(ep("10.0.0.1")).build()],
        &all_namespaces(),
    );
    assert_eq!(out.skipped, None);
    assert_eq!(out.registrations[0].name, ok);
    // A Service that is not synced anyway is not reported for its name.
    let off = web()
        .annotation("consul.hashicorp.com/service-name", "")
        .annotation("consul.hashicorp.com/service-sync", "false")
        .build();
    let out = run(&off, &[], &all_namespaces());
    assert_eq!(out.skipped, Some(SkipReason::DisabledByAnnotation));
    assert!(out.warnings.is_empty());
}
