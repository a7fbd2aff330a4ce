//! Ownership, the comparison against what Consul echoes, the planner and
//! the key indexes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::{BTreeMap, BTreeSet};

use common::*;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use mirra_catalog::observed::{echo, parse_health_checks};
use mirra_catalog::{
    CatalogOp, CheckStatus, KeyIndex, NoNodes, NodeEndpointIndex, ObservedInstance, Plan,
    Registration, ServiceKey, SliceInput, SyncSettings, desired_for_service, is_owned,
    keys_for_node_change, parse_node_services, plan, plan_detailed, plan_for_key, service_id,
    simulate_apply,
};
use serde_json::json;

fn settings() -> SyncSettings {
    all_namespaces()
}

/// The desired set for a ClusterIP `prod/web` with two endpoints (one not
/// ready) and a LoadBalancer `prod/lb` with a weight.
fn world() -> BTreeMap<String, Registration> {
    let s = settings();
    let web = svc("prod", "web").port("http", 80).build();
    let sl: EndpointSlice = slice("prod", "web", "web-1")
        .port("http", 8080)
        .endpoint(ep("10.0.0.1").node("n1").zone("z1"))
        .endpoint(ep("10.0.0.2").node("n2").ready(Some(false)))
        .build();
    let lb = svc("prod", "lb")
        .type_("LoadBalancer")
        .port("https", 443)
        .lb_ip("198.51.100.7")
        .annotation("consul.hashicorp.com/service-weight", "5")
        .build();
    let mut out = BTreeMap::new();
    for r in desired_for_service(&web, &[&sl], &NoNodes, &[], &s).registrations {
        out.insert(r.id.clone(), r);
    }
    for r in desired_for_service(&lb, &[], &NoNodes, &[], &s).registrations {
        out.insert(r.id.clone(), r);
    }
    out
}

/// node-services and health/node bodies exactly as a Consul server returns
/// them after consul-k8s registered the same world (Weights written as
/// {0,0} by consul-k8s come back as Consul's default {1,1}; the LB weight
/// {5,0} comes back as written), plus a foreign instance on the node.
fn consul_bodies() -> (Vec<u8>, Vec<u8>) {
    let web1 = service_id("web", "10.0.0.1");
    let web2 = service_id("web", "10.0.0.2");
    let lb = service_id("lb", "198.51.100.7");
    let node_services = json!({
        "Node": {
            "ID": "",
            "Node": "k8s-sync",
            "Address": "127.0.0.1",
            "Datacenter": "dc1",
            "TaggedAddresses": null,
            "Meta": {"external-source": "kubernetes"},
            "CreateIndex": 12,
            "ModifyIndex": 12
        },
        "Services": [
            {
                "ID": web1, "Service": "web", "Tags": ["k8s"], "Address": "10.0.0.1",
                "Meta": {
                    "external-source": "kubernetes", "external-k8s-ns": "prod", "port-http": "80",
                    "external-k8s-ref-kind": "Pod", "external-k8s-ref-name": "pod-10.0.0.1",
                    "external-k8s-node-name": "n1", "external-k8s-topology-zone": "z1"
                },
                "Port": 8080,
                "Weights": {"Passing": 1, "Warning": 1},
                "EnableTagOverride": false,
                "Proxy": {"Mode": "", "MeshGateway": {}, "Expose": {}},
                "Connect": {},
                "PeerName": "",
                "CreateIndex": 13, "ModifyIndex": 13
            },
            {
                "ID": web2, "Service": "web", "Tags": ["k8s"], "Address": "10.0.0.2",
                "TaggedAddresses": {},
                "Meta": {
                    "external-source": "kubernetes", "external-k8s-ns": "prod", "port-http": "80",
                    "external-k8s-ref-kind": "Pod", "external-k8s-ref-name": "pod-10.0.0.2",
                    "external-k8s-node-name": "n2"
                },
                "Port": 8080,
                "Weights": {"Passing": 1, "Warning": 1},
                "EnableTagOverride": false,
                "Proxy": {"Mode": "", "MeshGateway": {}, "Expose": {}},
                "Connect": {},
                "CreateIndex": 14, "ModifyIndex": 14
            },
            {
                "ID": lb, "Service": "lb", "Tags": ["k8s"], "Address": "198.51.100.7",
                "Meta": {"external-source": "kubernetes", "external-k8s-ns": "prod", "port-https": "443"},
                "Port": 443,
                "Weights": {"Passing": 5, "Warning": 0},
                "EnableTagOverride": false,
                "CreateIndex": 15, "ModifyIndex": 15
            },
            {
                "ID": "legacy-db", "Service": "legacy-db", "Tags": ["k8s"], "Address": "10.1.1.1",
                "Meta": null, "Port": 5432,
                "Weights": {"Passing": 1, "Warning": 1},
                "EnableTagOverride": false,
                "CreateIndex": 5, "ModifyIndex": 5
            }
        ]
    });
    let check = |id: &str, status: &str, output: &str| {
        json!({
            "Node": "k8s-sync", "CheckID": format!("prod/{id}"),
            "Name": "Kubernetes Readiness Check", "Status": status, "Notes": "",
            "Output": output, "ServiceID": id, "ServiceName": "web", "ServiceTags": ["k8s"],
            "Type": "kubernetes-readiness", "Interval": "", "Timeout": "", "ExposedPort": 0,
            "Definition": {}, "CreateIndex": 13, "ModifyIndex": 13
        })
    };
    let checks = json!([
        check(&web1, "passing", "Kubernetes health checks passing"),
        check(&web2, "critical", "Kubernetes health checks failing"),
    ]);
    (
        serde_json::to_vec(&node_services).unwrap(),
        serde_json::to_vec(&checks).unwrap(),
    )
}

#[test]
fn adopting_consul_k8s_registrations_costs_zero_writes() {
    let (ns, hc) = consul_bodies();
    let observed = parse_node_services(&ns, Some(&hc)).unwrap();
    assert_eq!(observed.len(), 4);
    let desired = world();
    let p = plan_detailed(&desired, &observed, &settings());
    assert_eq!(p.ops, vec![], "nothing changed, nothing written");
    assert!(p.conflicts.is_empty());
    // Without check observation the comparison still holds.
    let observed = parse_node_services(&ns, None).unwrap();
    assert!(plan(&desired, &observed, &settings()).is_empty());
}

#[test]
fn foreign_instance_on_our_node_is_never_touched() {
    let (ns, hc) = consul_bodies();
    let observed = parse_node_services(&ns, Some(&hc)).unwrap();
    assert!(
        !is_owned(&observed["legacy-db"], &settings()),
        "tag without meta is not ours"
    );
    // Even with nothing desired, only owned instances are deregistered.
    let ops = plan(
        &BTreeMap::<String, Registration>::new(),
        &observed,
        &settings(),
    );
    assert_eq!(ops.len(), 3);
    assert!(ops.iter().all(|op| op.target() != "legacy-db"));
    assert!(
        ops.iter()
            .all(|op| matches!(op, CatalogOp::Deregister { node, .. } if node == "k8s-sync"))
    );
}

#[test]
fn ownership_needs_node_tag_and_meta() {
    let s = settings();
    let r = world().into_values().next().unwrap();
    let base = echo(&r, None, &s);
    assert!(is_owned(&base, &s));
    let mut other_node = base.clone();
    other_node.node = "k8s-sync-cluster-b".into();
    assert!(!is_owned(&other_node, &s), "another cluster's node");
    let mut no_tag = base.clone();
    no_tag.tags = vec!["v1".into()];
    assert!(!is_owned(&no_tag, &s));
    let mut wrong_meta = base.clone();
    wrong_meta
        .meta
        .insert("external-source".into(), "nomad".into());
    assert!(!is_owned(&wrong_meta, &s));
    let mut no_meta = base;
    no_meta.meta.clear();
    assert!(!is_owned(&no_meta, &s));
}

#[test]
fn echo_defaults_compare_equal() {
    // Missing Weights, null Meta/Tags/Ports are Consul's way of saying
    // "default"; they must not cause a write.
    let body = json!({
        "Node": {"Node": "k8s-sync"},
        "Services": [{
            "ID": "x-1", "Service": "x", "Tags": ["k8s"], "Address": "1.2.3.4", "Port": 80,
            "Meta": {"external-source": "kubernetes", "external-k8s-ns": "a"},
            "Ports": null
        }]
    });
    let observed = parse_node_services(&serde_json::to_vec(&body).unwrap(), None).unwrap();
    let o = &observed["x-1"];
    assert_eq!(
        o.weights,
        mirra_catalog::Weights {
            passing: 1,
            warning: 1
        }
    );
    assert!(o.ports.is_empty());
    assert!(!o.enable_tag_override);
}

#[test]
fn null_and_malformed_bodies() {
    assert!(parse_node_services(b"null", None).unwrap().is_empty());
    assert!(
        parse_node_services(br#"{"Node":null,"Services":[]}"#, None)
            .unwrap()
            .is_empty()
    );
    assert!(parse_health_checks(b"null").unwrap().is_empty());
    for bad in [&b""[..], b"{", b"[1,2]", b"{\"Services\": 7}", b"\xff\xfe"] {
        assert!(parse_node_services(bad, None).is_err(), "{bad:?}");
    }
    assert!(parse_node_services(b"{}", Some(b"{")).is_err());
}

/// The desired set of [`world`], the id of its instance of `name` at
/// `addr`, and that instance as Consul echoes it back.
fn echoed(name: &str, addr: &str) -> (BTreeMap<String, Registration>, String, ObservedInstance) {
    let desired = world();
    let id = service_id(name, addr);
    let o = echo(&desired[&id], None, &settings());
    (desired, id, o)
}

type Mutation = Box<dyn Fn(&mut ObservedInstance)>;

#[test]
fn each_kind_of_drift_is_one_register() {
    let s = settings();
    let (desired, id, good) = echoed("web", "10.0.0.1");
    let mutations: Vec<(&str, Mutation)> = vec![
        ("address", Box::new(|o| o.address = "10.0.0.99".into())),
        ("port", Box::new(|o| o.port = 1)),
        ("tags", Box::new(|o| o.tags.push("extra".into()))),
        ("tag order", Box::new(|o| o.tags.insert(0, "extra".into()))),
        (
            "meta",
            Box::new(|o| {
                o.meta.insert("x".into(), "y".into());
            }),
        ),
        ("weights", Box::new(|o| o.weights.passing = 9)),
        (
            "enable_tag_override",
            Box::new(|o| o.enable_tag_override = true),
        ),
        ("name", Box::new(|o| o.name = "webby".into())),
        (
            "check status",
            Box::new(|o| o.checks.as_mut().unwrap()[0].status = "critical".into()),
        ),
        (
            "check output",
            Box::new(|o| o.checks.as_mut().unwrap()[0].output = "old".into()),
        ),
        ("check missing", Box::new(|o| o.checks = Some(vec![]))),
    ];
    for (what, mutate) in mutations {
        let mut o = good.clone();
        mutate(&mut o);
        let observed = BTreeMap::from([(id.clone(), o)]);
        let only = BTreeMap::from([(id.clone(), desired[&id].clone())]);
        let ops = plan(&only, &observed, &s);
        assert_eq!(ops.len(), 1, "{what}");
        assert!(
            matches!(&ops[0], CatalogOp::Register(r) if r.id == id),
            "{what}"
        );
    }
    // And unchanged: nothing.
    let observed = BTreeMap::from([(id.clone(), good)]);
    let only = BTreeMap::from([(id.clone(), desired[&id].clone())]);
    assert!(plan(&only, &observed, &s).is_empty());
}

#[test]
fn stale_readiness_check_is_removed_foreign_check_kept() {
    let s = settings();
    let (desired, id, mut o) = echoed("web", "10.0.0.1");
    let mut stale = o.checks.as_ref().unwrap()[0].clone();
    stale.check_id = "old-ns/whatever".into();
    let mut foreign = stale.clone();
    foreign.check_id = "ops-probe".into();
    foreign.check_type = "http".into();
    foreign.name = "ops probe".into();
    o.checks.as_mut().unwrap().extend([stale, foreign]);
    let mut observed = BTreeMap::from([(id.clone(), o)]);
    let only = BTreeMap::from([(id.clone(), desired[&id].clone())]);
    let ops = plan(&only, &observed, &s);
    assert_eq!(
        ops,
        vec![CatalogOp::DeregisterCheck {
            node: "k8s-sync".into(),
            check_id: "old-ns/whatever".into()
        }]
    );
    simulate_apply(&mut observed, &ops, &s);
    assert!(plan(&only, &observed, &s).is_empty());
    assert_eq!(
        observed[&id].checks.as_ref().unwrap().len(),
        2,
        "foreign check kept"
    );
}

#[test]
fn unowned_instance_holding_a_desired_id_is_a_conflict() {
    let s = settings();
    let (desired, id, mut o) = echoed("lb", "198.51.100.7");
    o.meta.remove("external-source");
    o.port = 1;
    let observed = BTreeMap::from([(id.clone(), o)]);
    let p = plan_detailed(&desired, &observed, &s);
    assert!(p.ops.iter().all(|op| op.target() != id));
    assert_eq!(p.conflicts.len(), 1);
    assert_eq!(p.conflicts[0].service_id, id);
    assert_eq!(p.conflicts[0].key, ServiceKey::new("prod", "lb"));
}

#[test]
fn readiness_flip_is_one_register_with_the_new_status() {
    let s = settings();
    let desired = world();
    let mut observed: BTreeMap<String, ObservedInstance> = BTreeMap::new();
    simulate_apply(
        &mut observed,
        &plan(&desired, &BTreeMap::<String, ObservedInstance>::new(), &s),
        &s,
    );
    assert!(plan(&desired, &observed, &s).is_empty());
    let id = service_id("web", "10.0.0.2");
    let mut next = desired.clone();
    next.get_mut(&id).unwrap().check.as_mut().unwrap().status = CheckStatus::Passing;
    let ops = plan(&next, &observed, &s);
    assert_eq!(ops.len(), 1);
    assert!(matches!(&ops[0], CatalogOp::Register(r) if r.id == id));
}

#[test]
fn op_order_is_deregister_then_checks_then_register() {
    let s = settings();
    let desired = world();
    let mut observed = BTreeMap::new();
    // An owned orphan.
    let mut orphan = echo(desired.values().next().unwrap(), None, &s);
    orphan.id = "gone-123".into();
    observed.insert("gone-123".to_owned(), orphan);
    let ops = plan(&desired, &observed, &s);
    assert!(matches!(ops[0], CatalogOp::Deregister { .. }));
    assert!(ops[1..].iter().all(|o| matches!(o, CatalogOp::Register(_))));
    assert_eq!(ops.len(), 1 + desired.len());
}

fn regs_for(ns: &str, name: &str, ips: &[&str]) -> Vec<Registration> {
    let s = settings();
    let service = svc(ns, name).port("http", 80).external_ips(ips).build();
    desired_for_service(&service, &[], &NoNodes, &[], &s).registrations
}

/// [`plan_for_key`] for Service `key` now holding the external IPs `ips`.
fn plan_ips(
    index: &mut KeyIndex,
    key: &ServiceKey,
    ips: &[&str],
    observed: &BTreeMap<String, ObservedInstance>,
) -> Plan {
    let regs = regs_for(&key.namespace, &key.name, ips);
    plan_for_key(index, key, regs, observed, &settings())
}

#[test]
fn key_index_scopes_a_plan_to_one_service() {
    let s = settings();
    let mut index = KeyIndex::new();
    let a = ServiceKey::new("prod", "a");
    let b = ServiceKey::new("prod", "b");
    let mut observed = BTreeMap::new();
    let p = plan_ips(&mut index, &a, &["1.1.1.1", "1.1.1.2"], &observed);
    simulate_apply(&mut observed, &p.ops, &s);
    let p = plan_ips(&mut index, &b, &["2.2.2.2"], &observed);
    simulate_apply(&mut observed, &p.ops, &s);
    assert_eq!(observed.len(), 3);

    // a loses one IP: exactly one deregistration, b untouched.
    let p = plan_ips(&mut index, &a, &["1.1.1.1"], &observed);
    assert_eq!(p.ops.len(), 1);
    assert!(
        matches!(&p.ops[0], CatalogOp::Deregister { service_id: id, .. } if *id == service_id("a", "1.1.1.2"))
    );
    // The delete names the service, as Consul's transaction API requires.
    let CatalogOp::Deregister { service_name, .. } = &p.ops[0] else {
        unreachable!()
    };
    assert!(!service_name.is_empty());
    assert_eq!(service_name, &observed[&service_id("a", "1.1.1.2")].name);
    simulate_apply(&mut observed, &p.ops, &s);

    // Same event again: nothing.
    let p = plan_ips(&mut index, &a, &["1.1.1.1"], &observed);
    assert!(p.ops.is_empty());

    // Service deleted: its instances go, b's stay.
    let p = plan_for_key(&mut index, &a, Vec::new(), &observed, &s);
    assert_eq!(p.ops.len(), 1);
    simulate_apply(&mut observed, &p.ops, &s);
    assert_eq!(
        observed.keys().cloned().collect::<Vec<_>>(),
        vec![service_id("b", "2.2.2.2")]
    );
    assert_eq!(index.ids_for_key(&a), BTreeSet::new());

    // The verification pass agrees.
    assert!(plan(&index.desired_all(), &observed, &s).is_empty());
}

#[test]
fn key_index_resolves_id_collisions_by_smallest_key_in_any_order() {
    // Same Consul name and address from two namespaces (no suffix).
    let k1 = ServiceKey::new("a-ns", "web");
    let k2 = ServiceKey::new("b-ns", "web");
    let r1 = regs_for("a-ns", "web", &["9.9.9.9"]);
    let r2 = regs_for("b-ns", "web", &["9.9.9.9"]);
    let id = r1[0].id.clone();
    assert_eq!(id, r2[0].id);

    let mut x = KeyIndex::new();
    x.set(&k1, r1.clone());
    x.set(&k2, r2.clone());
    let mut y = KeyIndex::new();
    y.set(&k2, r2.clone());
    y.set(&k1, r1.clone());
    assert_eq!(x.owner_of(&id), Some(&k1));
    assert_eq!(y.owner_of(&id), Some(&k1));
    assert_eq!(x.desired_all(), y.desired_all());
    assert_eq!(x.desired_all()[&id].meta["external-k8s-ns"], "a-ns");

    // When the winner lets go, the other claim takes over.
    let touched = x.remove(&k1);
    assert!(touched.contains(&id));
    assert_eq!(x.owner_of(&id), Some(&k2));
    assert_eq!(
        x.desired_for_ids(&touched)[&id].meta["external-k8s-ns"],
        "b-ns"
    );
    assert_eq!(x.len(), 1);
    x.remove(&k2);
    assert!(x.is_empty());
}

#[test]
fn slice_key_and_node_change_keys() {
    let s1 = slice("prod", "web", "web-1")
        .endpoint(ep("10.0.0.1").node("n1"))
        .endpoint(ep("10.0.0.2").node("n2"))
        .build();
    let s2 = slice("prod", "api", "api-1")
        .endpoint(ep("10.0.0.3").node("n1"))
        .build();
    assert_eq!(
        SliceInput::from(&s1).key(),
        Some(ServiceKey::new("prod", "web"))
    );
    let mut unlabelled = s1.clone();
    unlabelled.metadata.labels = None;
    assert_eq!(SliceInput::from(&unlabelled).key(), None);

    let mut idx = NodeEndpointIndex::new();
    idx.apply_slice(&s1.into());
    idx.apply_slice(&s2.into());
    assert_eq!(
        idx.keys_on_node("n1"),
        BTreeSet::from([
            ServiceKey::new("prod", "api"),
            ServiceKey::new("prod", "web")
        ])
    );

    let old = node("n1", &[("InternalIP", "192.168.0.1")]);
    let same = node("n1", &[("InternalIP", "192.168.0.1"), ("Hostname", "n1")]);
    let moved = node("n1", &[("InternalIP", "192.168.0.9")]);
    assert!(
        keys_for_node_change(Some(&old), Some(&same), &idx).is_empty(),
        "no address change, no work"
    );
    assert_eq!(
        keys_for_node_change(Some(&old), Some(&moved), &idx).len(),
        2
    );
    assert_eq!(
        keys_for_node_change(Some(&old), None, &idx).len(),
        2,
        "node deleted"
    );
    assert_eq!(
        keys_for_node_change(None, Some(&old), &idx).len(),
        2,
        "node added"
    );

    // Re-applying a slice replaces it; deleting forgets it.
    let s1b = slice("prod", "web", "web-1")
        .endpoint(ep("10.0.0.2").node("n2"))
        .build();
    idx.apply_slice(&s1b.into());
    assert_eq!(
        idx.keys_on_node("n1"),
        BTreeSet::from([ServiceKey::new("prod", "api")])
    );
    idx.delete_slice("prod", "api-1");
    assert!(idx.keys_on_node("n1").is_empty());
    assert_eq!(
        idx.keys_on_node("n2"),
        BTreeSet::from([ServiceKey::new("prod", "web")])
    );
}

#[test]
fn keys_for_ingress_lists_root_backends() {
    let ing = ingress("prod", "main", "web.example.com", "web", false);
    assert_eq!(
        mirra_catalog::keys_for_ingress(&ing),
        BTreeSet::from([ServiceKey::new("prod", "web")])
    );
}
