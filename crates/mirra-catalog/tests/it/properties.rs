//! Property tests: random (often malformed) Kubernetes worlds and random
//! Consul states. The mapping never panics and is independent of input
//! order; a plan applied to Consul reaches a fixpoint; no plan ever touches
//! an instance without mirra's marks.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    LoadBalancerIngress, LoadBalancerStatus, Node, ObjectReference, Service, ServicePort,
    ServiceSpec, ServiceStatus,
};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointPort, EndpointSlice};
use k8s_openapi::api::networking::v1::{Ingress, IngressTLS};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use mirra_catalog::annotations::{
    parse_annotations, parse_go_atoi, parse_go_int_base0, parse_tags,
};
use mirra_catalog::observed::echo;
use mirra_catalog::{
    CatalogOp, KeyIndex, NodeEndpointIndex, NodePortSyncType, ObservedInstance, PortLayout,
    ServiceKey, SkipReason, SyncSettings, desired_for_service, is_owned, parse_node_services, plan,
    plan_detailed, simulate_apply,
};
use proptest::collection::{btree_map, vec};
use proptest::option;
use proptest::prelude::*;

const NAMESPACES: &[&str] = &["a", "b"];
const NAMES: &[&str] = &["web", "api", "db"];
const ADDRS: &[&str] = &[
    "10.0.0.1",
    "10.0.0.2",
    "10.0.0.3",
    "",
    "not-an-ip",
    "fe80::1",
];

fn pick<T: Clone + std::fmt::Debug + 'static>(items: &'static [T]) -> impl Strategy<Value = T> {
    proptest::sample::select(items)
}

fn settings_strategy() -> impl Strategy<Value = SyncSettings> {
    (
        any::<bool>(),
        prop_oneof![Just(PortLayout::Single), Just(PortLayout::Multi)],
        prop_oneof![
            Just(NodePortSyncType::ExternalOnly),
            Just(NodePortSyncType::InternalOnly),
            Just(NodePortSyncType::ExternalFirst)
        ],
        any::<bool>(),
        any::<bool>(),
        prop::bool::weighted(0.8),
        any::<bool>(),
        prop_oneof![6 => Just(vec!["*"]), 1 => Just(vec!["a"]), 1 => Just(vec![])],
        prop_oneof![3 => Just(vec![]), 1 => Just(vec!["b"])],
    )
        .prop_map(
            |(suffix, layout, np, ingress, lb_eps, default_sync, lb_ips, allow, deny)| {
                SyncSettings {
                    add_k8s_namespace_suffix: suffix,
                    port_layout: layout,
                    node_port_sync_type: np,
                    enable_ingress: ingress,
                    sync_lb_services_endpoints: lb_eps,
                    k8s_default_sync: default_sync,
                    sync_ingress_lb_ips: lb_ips,
                    allow_k8s_namespaces: allow.into_iter().map(String::from).collect(),
                    deny_k8s_namespaces: deny.into_iter().map(String::from).collect(),
                    ..SyncSettings::default()
                }
            },
        )
}

fn annotation_strategy() -> impl Strategy<Value = BTreeMap<String, String>> {
    let key = pick(&[
        "consul.hashicorp.com/service-sync",
        "consul.hashicorp.com/service-name",
        "consul.hashicorp.com/service-port",
        "consul.hashicorp.com/service-tags",
        "consul.hashicorp.com/service-weight",
        "consul.hashicorp.com/service-meta-team",
        "consul.hashicorp.com/service-meta-external-source",
        "consul.hashicorp.com/service-meta-bad key",
        "unrelated/annotation",
    ])
    .prop_map(String::from);
    let value = prop_oneof![
        pick(&[
            "true",
            "false",
            "1",
            "maybe",
            "",
            "  ",
            "http",
            "metrics",
            "8080",
            "0x50",
            "-1",
            "70000",
            "5",
            "a,b\\,c,,",
            "shared"
        ])
        .prop_map(String::from),
        ".{0,12}",
    ];
    btree_map(key, value, 0..4)
}

fn service_strategy() -> impl Strategy<Value = Service> {
    (
        pick(NAMESPACES),
        pick(NAMES),
        option::of(prop_oneof![
            4 => pick(&["ClusterIP", "NodePort", "LoadBalancer"]),
            1 => pick(&["ExternalName", "Weird"]),
        ]),
        prop::bool::weighted(0.9),
        vec(
            (
                option::of(pick(&["", "http", "metrics"])),
                -5i32..70_000,
                option::of(-5i32..40_000),
            ),
            0..3,
        ),
        annotation_strategy(),
        prop_oneof![3 => Just(Vec::new()), 1 => vec(pick(ADDRS), 1..3)],
        vec(
            (
                option::of(pick(ADDRS)),
                option::of(pick(&["lb.example", ""])),
            ),
            0..3,
        ),
    )
        .prop_map(|(ns, name, type_, has_spec, ports, annotations, ext, lb)| {
            let spec = has_spec.then(|| ServiceSpec {
                type_: type_.map(String::from),
                ports: Some(
                    ports
                        .into_iter()
                        .map(|(n, port, node_port)| ServicePort {
                            name: n.map(String::from),
                            port,
                            node_port,
                            ..ServicePort::default()
                        })
                        .collect(),
                ),
                external_ips: (!ext.is_empty())
                    .then(|| ext.into_iter().map(String::from).collect()),
                ..ServiceSpec::default()
            });
            Service {
                metadata: ObjectMeta {
                    name: Some(name.into()),
                    namespace: Some(ns.into()),
                    annotations: Some(annotations),
                    ..ObjectMeta::default()
                },
                spec,
                status: Some(ServiceStatus {
                    load_balancer: Some(LoadBalancerStatus {
                        ingress: Some(
                            lb.into_iter()
                                .map(|(ip, host)| LoadBalancerIngress {
                                    ip: ip.map(String::from),
                                    hostname: host.map(String::from),
                                    ..LoadBalancerIngress::default()
                                })
                                .collect(),
                        ),
                    }),
                    ..ServiceStatus::default()
                }),
            }
        })
}

fn endpoint_strategy() -> impl Strategy<Value = Endpoint> {
    (
        vec(pick(ADDRS), 0..3),
        option::of((
            option::of(prop::bool::weighted(0.7)),
            option::of(any::<bool>()),
            option::of(prop::bool::weighted(0.2)),
        )),
        option::of(pick(&["n1", "n2", "ghost"])),
        option::of(pick(&["z1", "z2"])),
        any::<bool>(),
        option::of(pick(&["host-a", ""])),
    )
        .prop_map(|(addrs, cond, node, zone, target, hostname)| Endpoint {
            addresses: addrs.into_iter().map(String::from).collect(),
            conditions: cond.map(|(ready, serving, terminating)| EndpointConditions {
                ready,
                serving,
                terminating,
            }),
            node_name: node.map(String::from),
            zone: zone.map(String::from),
            hostname: hostname.map(String::from),
            target_ref: target.then(|| ObjectReference {
                kind: Some("Pod".into()),
                name: Some("p".into()),
                ..ObjectReference::default()
            }),
            ..Endpoint::default()
        })
}

fn slice_strategy() -> impl Strategy<Value = EndpointSlice> {
    (
        pick(NAMESPACES),
        prop_oneof![5 => pick(NAMES).prop_map(Some), 1 => Just(None)],
        pick(&["s1", "s2", "s3"]),
        option::of(vec(
            (
                option::of(pick(&["http", "metrics", ""])),
                option::of(-5i32..70_000),
            ),
            0..3,
        )),
        vec(endpoint_strategy(), 0..5),
    )
        .prop_map(|(ns, svc, name, ports, endpoints)| EndpointSlice {
            address_type: "IPv4".into(),
            endpoints,
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some(ns.into()),
                labels: svc.map(|s| {
                    BTreeMap::from([("kubernetes.io/service-name".to_owned(), s.to_owned())])
                }),
                ..ObjectMeta::default()
            },
            ports: ports.map(|ps| {
                ps.into_iter()
                    .map(|(n, p)| EndpointPort {
                        name: n.map(String::from),
                        port: p,
                        ..EndpointPort::default()
                    })
                    .collect()
            }),
        })
}

fn nodes_strategy() -> impl Strategy<Value = BTreeMap<String, Node>> {
    let addr = (
        pick(&["InternalIP", "ExternalIP", "Hostname"]),
        pick(&["192.168.0.1", "203.0.113.1", ""]),
    );
    btree_map(
        pick(&["n1", "n2"]).prop_map(String::from),
        vec(addr, 0..3),
        0..3,
    )
    .prop_map(|m| {
        m.into_iter()
            .map(|(name, addrs)| {
                let node = common::node(&name, &addrs);
                (name, node)
            })
            .collect()
    })
}

fn ingress_strategy() -> impl Strategy<Value = Ingress> {
    (
        pick(NAMESPACES),
        pick(&["i1", "i2"]),
        option::of(pick(&["web.example", ""])),
        option::of(pick(NAMES)),
        any::<bool>(),
        option::of(pick(&["/", "/x"])),
    )
        .prop_map(|(ns, name, host, backend, tls, path)| {
            let tls = tls.then(|| IngressTLS {
                hosts: host.map(|h| vec![h.to_owned()]),
                secret_name: None,
            });
            common::ingress_rule(ns, name, host, path, backend, tls)
        })
}

#[derive(Debug, Clone)]
struct World {
    settings: SyncSettings,
    services: Vec<Service>,
    slices: Vec<EndpointSlice>,
    nodes: BTreeMap<String, Node>,
    ingresses: Vec<Ingress>,
}

fn world_strategy() -> impl Strategy<Value = World> {
    (
        settings_strategy(),
        vec(service_strategy(), 1..6),
        vec(slice_strategy(), 0..8),
        nodes_strategy(),
        vec(ingress_strategy(), 0..2),
    )
        .prop_map(|(settings, services, slices, nodes, ingresses)| {
            // One Service per key, as in a cluster.
            let mut seen = std::collections::BTreeSet::new();
            let services: Vec<Service> = services
                .into_iter()
                .filter(|s| seen.insert(ServiceKey::of_service(s)))
                .collect();
            // Most labelled slices belong to one of the Services (so that
            // endpoints matter); unlabelled ones stay strays.
            let slices: Vec<EndpointSlice> = slices
                .into_iter()
                .enumerate()
                .map(|(i, mut sl)| {
                    if let (Some(labels), false) =
                        (sl.metadata.labels.as_mut(), services.is_empty())
                    {
                        let owner = &services[i % services.len()];
                        sl.metadata.namespace = owner.metadata.namespace.clone();
                        labels.insert(
                            "kubernetes.io/service-name".to_owned(),
                            owner.metadata.name.clone().unwrap_or_default(),
                        );
                    }
                    sl
                })
                .collect();
            // Slice and Ingress names are unique per namespace, too.
            let mut seen = std::collections::BTreeSet::new();
            let slices = slices
                .into_iter()
                .filter(|s| seen.insert((s.metadata.namespace.clone(), s.metadata.name.clone())))
                .collect();
            let mut seen = std::collections::BTreeSet::new();
            let ingresses = ingresses
                .into_iter()
                .filter(|i: &Ingress| {
                    seen.insert((i.metadata.namespace.clone(), i.metadata.name.clone()))
                })
                .collect();
            World {
                settings,
                services,
                slices,
                nodes,
                ingresses,
            }
        })
}

fn desired_index(w: &World) -> KeyIndex {
    let slices: Vec<&EndpointSlice> = w.slices.iter().collect();
    let ingresses: Vec<&Ingress> = w.ingresses.iter().collect();
    let mut index = KeyIndex::new();
    for s in &w.services {
        let out = desired_for_service(s, &slices, &w.nodes, &ingresses, &w.settings);
        index.set(&ServiceKey::of_service(s).unwrap(), out.registrations);
    }
    index
}

/// How one desired instance shows up in the random Consul state.
#[derive(Debug, Clone, Copy)]
enum Seen {
    Absent,
    Exact,
    ExactNoChecks,
    Mutated(u8),
    Unowned,
}

fn seen_strategy() -> impl Strategy<Value = Seen> {
    prop_oneof![
        Just(Seen::Absent),
        Just(Seen::Exact),
        Just(Seen::ExactNoChecks),
        (0u8..8).prop_map(Seen::Mutated),
        Just(Seen::Unowned),
    ]
}

/// An extra instance on the node that nobody desires: its ID, whether it
/// has the sync tag and the external-source meta, whether it is on our
/// node.
type Extra = (String, bool, bool, bool);

fn extra_strategy() -> impl Strategy<Value = Extra> {
    (
        "[a-z]{1,6}-[0-9a-f]{3}",
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    )
}

fn mutate(o: &mut ObservedInstance, how: u8) {
    match how {
        0 => o.address.push('x'),
        1 => o.port += 1,
        2 => o.tags.push("extra".into()),
        3 => {
            o.meta.insert("stale".into(), "1".into());
        }
        4 => o.weights.passing += 7,
        5 => o.enable_tag_override = true,
        6 => {
            if let Some(c) = o.checks.as_mut().and_then(|c| c.first_mut()) {
                c.status = if c.status == "passing" {
                    "critical"
                } else {
                    "passing"
                }
                .into();
            } else {
                o.name.push('x');
            }
        }
        _ => {
            if let Some(checks) = o.checks.as_mut() {
                let mut stale = mirra_catalog::ObservedCheck {
                    check_id: format!("old/{}", o.id),
                    name: "Kubernetes Readiness Check".into(),
                    check_type: "kubernetes-readiness".into(),
                    ..Default::default()
                };
                stale.service_id = o.id.clone();
                checks.push(stale);
            } else {
                o.kind = "connect-proxy".into();
            }
        }
    }
}

fn observed_state(
    w: &World,
    desired: &BTreeMap<String, mirra_catalog::Registration>,
    seen: &[Seen],
    extras: &[Extra],
) -> BTreeMap<String, ObservedInstance> {
    let s = &w.settings;
    let mut observed = BTreeMap::new();
    for (i, r) in desired.values().enumerate() {
        let how = seen
            .get(i % seen.len().max(1))
            .copied()
            .unwrap_or(Seen::Absent);
        let mut o = echo(r, None, s);
        match how {
            Seen::Absent => continue,
            Seen::Exact => {}
            Seen::ExactNoChecks => o.checks = None,
            Seen::Mutated(m) => mutate(&mut o, m),
            Seen::Unowned => {
                o.meta.remove("external-source");
                o.port += 1;
            }
        }
        observed.insert(r.id.clone(), o);
    }
    for (id, has_tag, has_meta, our_node) in extras {
        if desired.contains_key(id) {
            continue;
        }
        let mut o = ObservedInstance {
            node: if *our_node {
                s.consul_node_name.clone()
            } else {
                "elsewhere".into()
            },
            id: id.clone(),
            name: "x".into(),
            address: "1.2.3.4".into(),
            ..ObservedInstance::default()
        };
        if *has_tag {
            o.tags.push(s.consul_k8s_tag.clone());
        }
        if *has_meta {
            o.meta.insert("external-source".into(), "kubernetes".into());
        }
        observed.insert(id.clone(), o);
    }
    observed
}

/// A world, how each of its desired instances shows up in Consul, and
/// instances nobody desires.
fn consul_state_strategy() -> impl Strategy<Value = (World, Vec<Seen>, Vec<Extra>)> {
    (
        world_strategy(),
        vec(seen_strategy(), 1..8),
        vec(extra_strategy(), 0..5),
    )
}

/// The instances `w` wants in Consul, and the Consul state `seen` and
/// `extras` make of them.
fn desired_and_observed(
    w: &World,
    seen: &[Seen],
    extras: &[Extra],
) -> (
    BTreeMap<String, mirra_catalog::Registration>,
    BTreeMap<String, ObservedInstance>,
) {
    let desired = desired_index(w).desired_all();
    let observed = observed_state(w, &desired, seen, extras);
    (desired, observed)
}

/// Every operation touches only desired IDs or instances mirra owns.
fn assert_touches_only_owned(
    ops: &[CatalogOp],
    observed: &BTreeMap<String, ObservedInstance>,
    settings: &SyncSettings,
) {
    for op in ops {
        match op {
            CatalogOp::Register(r) => {
                if let Some(o) = observed.get(&r.id) {
                    assert!(is_owned(o, settings), "register over unowned {}", r.id);
                }
            }
            CatalogOp::Deregister { service_id, .. } => {
                let o = observed.get(service_id).expect("deregister of unknown id");
                assert!(is_owned(o, settings), "deregister of unowned {service_id}");
            }
            CatalogOp::DeregisterCheck { check_id, .. } => {
                let owner = observed
                    .values()
                    .find(|o| {
                        o.checks
                            .as_deref()
                            .unwrap_or(&[])
                            .iter()
                            .any(|c| c.check_id == *check_id)
                    })
                    .expect("check removal of unknown check");
                assert!(
                    is_owned(owner, settings),
                    "check removal on unowned instance"
                );
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn plan_reaches_a_fixpoint_and_never_touches_foreign_instances(
        (w, seen, extras) in consul_state_strategy(),
    ) {
        let (desired, mut observed) = desired_and_observed(&w, &seen, &extras);
        let foreign_before: BTreeMap<_, _> = observed
            .iter()
            .filter(|(_, o)| !is_owned(o, &w.settings))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();

        let first = plan_detailed(&desired, &observed, &w.settings);
        assert_touches_only_owned(&first.ops, &observed, &w.settings);
        simulate_apply(&mut observed, &first.ops, &w.settings);
        let second = plan(&desired, &observed, &w.settings);
        prop_assert!(second.is_empty(), "not a fixpoint: {second:?}");

        // Foreign instances are exactly as they were.
        for (id, before) in &foreign_before {
            prop_assert_eq!(observed.get(id), Some(before));
        }
        // Every desired instance is in Consul unless its ID is contested.
        for id in desired.keys() {
            let contested = first.conflicts.iter().any(|c| &c.service_id == id);
            prop_assert!(contested || observed.contains_key(id));
        }
    }

    /// The controller caches only the projection the mapping reads: every
    /// field the projection drops (other labels and annotations, cluster
    /// IPs, selectors, managed fields, serving conditions, target UIDs)
    /// must leave the mapping unchanged, so filling them in at random never
    /// changes a registration.
    #[test]
    fn fields_outside_the_projection_never_change_the_mapping(
        w in world_strategy(),
        noise in "[a-z0-9]{1,8}",
        serving in any::<bool>(),
    ) {
        let slices: Vec<&EndpointSlice> = w.slices.iter().collect();
        let ingresses: Vec<&Ingress> = w.ingresses.iter().collect();
        let noisy_slices: Vec<EndpointSlice> = w
            .slices
            .iter()
            .cloned()
            .map(|mut sl| {
                sl.metadata.labels.get_or_insert_default().insert("app".into(), noise.clone());
                sl.metadata.uid = Some(noise.clone());
                sl.metadata.generation = Some(3);
                sl.address_type = "IPv6".into();
                for ep in &mut sl.endpoints {
                    ep.conditions.get_or_insert_default().serving = Some(serving);
                    if let Some(t) = ep.target_ref.as_mut() {
                        t.uid = Some(noise.clone());
                        t.namespace = Some(noise.clone());
                    }
                    ep.deprecated_topology = Some(BTreeMap::from([("k".into(), noise.clone())]));
                }
                for p in sl.ports.iter_mut().flatten() {
                    p.protocol = Some("UDP".into());
                    p.app_protocol = Some(noise.clone());
                }
                sl
            })
            .collect();
        let noisy_refs: Vec<&EndpointSlice> = noisy_slices.iter().collect();
        for s in &w.services {
            let mut noisy = s.clone();
            noisy.metadata.labels.get_or_insert_default().insert("app".into(), noise.clone());
            noisy
                .metadata
                .annotations
                .get_or_insert_default()
                .insert(format!("example.com/{noise}"), noise.clone());
            noisy.metadata.uid = Some(noise.clone());
            let spec = noisy.spec.get_or_insert_default();
            spec.cluster_ip = Some("10.96.0.1".into());
            spec.selector = Some(BTreeMap::from([("app".into(), noise.clone())]));
            spec.session_affinity = Some("ClientIP".into());
            for p in spec.ports.iter_mut().flatten() {
                p.protocol = Some("UDP".into());
                p.target_port = None;
            }
            let plain = desired_for_service(s, &slices, &w.nodes, &ingresses, &w.settings);
            let filled = desired_for_service(&noisy, &noisy_refs, &w.nodes, &ingresses, &w.settings);
            prop_assert_eq!(plain, filled);
        }
    }

    #[test]
    fn mapping_is_total_deterministic_and_well_formed(w in world_strategy()) {
        let slices: Vec<&EndpointSlice> = w.slices.iter().collect();
        let reversed: Vec<&EndpointSlice> = w.slices.iter().rev().collect();
        let ingresses: Vec<&Ingress> = w.ingresses.iter().collect();
        let ingresses_rev: Vec<&Ingress> = w.ingresses.iter().rev().collect();
        for s in &w.services {
            let a = desired_for_service(s, &slices, &w.nodes, &ingresses, &w.settings);
            let b = desired_for_service(s, &reversed, &w.nodes, &ingresses_rev, &w.settings);
            prop_assert_eq!(&a, &b);
            if a.skipped.is_some() {
                prop_assert!(a.registrations.is_empty());
            }
            // A bad service-name annotation never registers anything under
            // another name, and is always reported by that annotation.
            let name_ann = s
                .metadata
                .annotations
                .as_ref()
                .and_then(|m| m.get("consul.hashicorp.com/service-name"));
            if let Some(v) = name_ann {
                let n = v.trim().chars().count();
                if n == 0 || n > 255 {
                    prop_assert!(a.registrations.is_empty());
                    if a.skipped == Some(SkipReason::InvalidServiceName) {
                        prop_assert!(a.warnings.iter().any(|w| w.annotation == "consul.hashicorp.com/service-name"));
                    }
                } else {
                    for r in &a.registrations {
                        prop_assert_eq!(r.name.as_str(), v.trim());
                    }
                }
            }
            // Every non-empty external IP is one instance, whatever the type.
            let ips: std::collections::BTreeSet<&str> = s
                .spec
                .as_ref()
                .and_then(|sp| sp.external_ips.as_deref())
                .unwrap_or(&[])
                .iter()
                .map(String::as_str)
                .filter(|ip| !ip.is_empty())
                .collect();
            if a.skipped.is_none() && !ips.is_empty() {
                let got: std::collections::BTreeSet<&str> =
                    a.registrations.iter().map(|r| r.address.as_str()).collect();
                prop_assert_eq!(got, ips);
            }
            let key = ServiceKey::of_service(s).unwrap();
            let mut last: Option<&str> = None;
            for r in &a.registrations {
                prop_assert!(last < Some(r.id.as_str()), "sorted and unique");
                last = Some(&r.id);
                prop_assert_eq!(&r.key, &key);
                let prefix = format!("{}-", r.name);
                prop_assert!(r.id.starts_with(&prefix), "id {} vs name {}", r.id, r.name);
                prop_assert_eq!(r.tags.first(), Some(&w.settings.consul_k8s_tag));
                prop_assert_eq!(r.meta.get("external-source").map(String::as_str), Some("kubernetes"));
                prop_assert!(r.meta.len() <= 64);
                prop_assert!(!r.address.is_empty());
                if let Some(c) = &r.check {
                    prop_assert_eq!(&c.service_id, &r.id);
                    prop_assert_eq!(&c.check_id, &format!("{}/{}", key.namespace, r.id));
                }
                if w.settings.port_layout == PortLayout::Single {
                    prop_assert!(r.ports.is_empty());
                }
            }
        }
    }

    #[test]
    fn annotation_parsers_never_panic(
        annotations in btree_map(
            prop_oneof![
                "consul\\.hashicorp\\.com/service-(sync|name|port|tags|weight|meta-.{0,8})",
                ".{0,20}",
            ],
            ".{0,40}",
            0..8,
        ),
        s in ".{0,40}",
    ) {
        let _ = parse_annotations(&annotations);
        let _ = parse_tags(&s);
        let _ = parse_go_int_base0(&s);
        let _ = parse_go_atoi(&s);
    }

    #[test]
    fn go_int_parsers_agree_with_decimal_parsing(n in any::<i64>()) {
        let s = n.to_string();
        prop_assert_eq!(parse_go_atoi(&s), Some(n));
        // A leading zero would switch base-0 parsing to octal; decimal
        // renderings of i64 never have one (except "0").
        prop_assert_eq!(parse_go_int_base0(&s), Some(n));
        prop_assert_eq!(parse_go_int_base0(&format!("{n:#x}")), if n >= 0 { Some(n) } else { None });
    }

    #[test]
    fn tags_round_trip_when_escaped(tags in vec("[a-z][a-z ,]{0,7}", 0..5)) {
        // (A tag starting with a comma cannot be written: the splitter
        // drops a comma that follows a separator, as consul-k8s does.)
        let wanted: Vec<String> = tags.iter().map(|t| t.trim().to_owned()).collect();
        let value = tags.iter().map(|t| t.replace(',', "\\,")).collect::<Vec<_>>().join(",");
        prop_assert_eq!(parse_tags(&value), wanted);
    }

    #[test]
    fn consul_body_parser_never_panics(bytes in vec(any::<u8>(), 0..200), json in "[\\[\\]{}\":,a-zA-Z0-9 ]{0,80}") {
        let _ = parse_node_services(&bytes, None);
        let _ = parse_node_services(json.as_bytes(), Some(json.as_bytes()));
    }

    #[test]
    fn key_index_is_independent_of_event_order(w in world_strategy()) {
        let slices: Vec<&EndpointSlice> = w.slices.iter().collect();
        let outcomes: Vec<(ServiceKey, Vec<mirra_catalog::Registration>)> = w
            .services
            .iter()
            .map(|s| {
                let out = desired_for_service(s, &slices, &w.nodes, &[], &w.settings);
                (ServiceKey::of_service(s).unwrap(), out.registrations)
            })
            .collect();
        let mut forward = KeyIndex::new();
        for (k, r) in &outcomes {
            forward.set(k, r.clone());
        }
        let mut backward = KeyIndex::new();
        for (k, r) in outcomes.iter().rev() {
            // An extra stale version first, replaced by the real one.
            backward.set(k, Vec::new());
            backward.set(k, r.clone());
        }
        prop_assert_eq!(forward.desired_all(), backward.desired_all());
        for (k, _) in &outcomes {
            forward.remove(k);
        }
        prop_assert!(forward.is_empty());
    }

    #[test]
    fn node_index_matches_a_rebuild(
        w in world_strategy(),
        deletions in vec(0usize..8, 0..4),
    ) {
        let mut live: Vec<EndpointSlice> = w.slices.clone();
        let mut idx = NodeEndpointIndex::new();
        for s in &live {
            idx.apply_slice(&s.into());
        }
        for d in deletions {
            if live.is_empty() {
                break;
            }
            let gone = live.remove(d % live.len());
            idx.delete_slice(
                gone.metadata.namespace.as_deref().unwrap_or(""),
                gone.metadata.name.as_deref().unwrap_or(""),
            );
        }
        let mut rebuilt = NodeEndpointIndex::new();
        for s in &live {
            rebuilt.apply_slice(&s.into());
        }
        for n in ["n1", "n2", "ghost"] {
            prop_assert_eq!(idx.keys_on_node(n), rebuilt.keys_on_node(n));
        }
    }

    /// The controller plans from the compact observed state; it must plan
    /// exactly what the full form plans, for every kind of difference the
    /// generators make (mutated fields, missing checks, foreign instances).
    #[test]
    fn compact_observed_state_plans_exactly_like_the_full_one(
        (w, seen, extras) in consul_state_strategy(),
    ) {
        use mirra_catalog::{CompactCheck, CompactInstance, CompactView};

        let (desired, mut observed) = desired_and_observed(&w, &seen, &extras);
        // The controller always observes checks (health/node): an instance
        // without any has an empty list.
        for o in observed.values_mut() {
            o.checks.get_or_insert_with(Vec::new);
        }
        let compact: BTreeMap<String, (CompactInstance, Vec<CompactCheck>)> = observed
            .iter()
            .map(|(id, o)| {
                let checks = o
                    .checks
                    .as_deref()
                    .unwrap_or(&[])
                    .iter()
                    .map(CompactCheck::of_observed)
                    .collect();
                (id.clone(), (CompactInstance::of_observed(o, &w.settings), checks))
            })
            .collect();
        let views: BTreeMap<String, CompactView<'_>> = compact
            .iter()
            .map(|(id, (instance, checks))| {
                let node = observed.get(id).map_or("", |o| o.node.as_str());
                (
                    id.clone(),
                    CompactView {
                        node,
                        id,
                        instance,
                        checks,
                    },
                )
            })
            .collect();
        let borrowed: BTreeMap<String, &mirra_catalog::Registration> =
            desired.iter().map(|(k, v)| (k.clone(), v)).collect();

        let full = plan_detailed(&desired, &observed, &w.settings);
        let small = plan_detailed(&borrowed, &views, &w.settings);
        prop_assert_eq!(full, small);
    }
}
