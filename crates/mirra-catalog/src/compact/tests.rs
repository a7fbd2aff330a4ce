use std::collections::BTreeMap;

use super::*;
use crate::model::{ReadinessCheck, ServiceKey, Weights};
use crate::observed::echo;

fn reg() -> Registration {
    Registration {
        key: ServiceKey::new("ns", "web"),
        id: "web-1".into(),
        name: "web".into(),
        tags: vec!["k8s".into()],
        address: "10.0.0.1".into(),
        port: 80,
        ports: Vec::new(),
        meta: BTreeMap::from([("external-source".into(), "kubernetes".into())]),
        weights: Weights::default(),
        check: Some(ReadinessCheck {
            check_id: "ns/web-1".into(),
            service_id: "web-1".into(),
            status: CheckStatus::Passing,
        }),
        namespace: None,
    }
}

#[test]
fn an_owned_instance_in_another_namespace_is_removed_before_it_is_registered() {
    let s = SyncSettings::default();
    let mut want = reg();
    want.namespace = Some("new".into());
    let mut have = echo(&want, None, &s);
    // Where it is now decides: in `old`, one removal and nothing else;
    // in `NEW` (Consul compares without case), nothing at all.
    have.namespace = Some("old".into());
    let desired = BTreeMap::from([(want.id.clone(), want.clone())]);
    let observed = BTreeMap::from([(want.id.clone(), have.clone())]);
    let ops = crate::plan::plan(&desired, &observed, &s);
    assert!(
        matches!(ops.as_slice(), [crate::plan::CatalogOp::Deregister { service_id, .. }] if service_id == "web-1"),
        "{ops:?}"
    );
    have.namespace = Some("NEW".into());
    let observed = BTreeMap::from([(want.id.clone(), have)]);
    assert!(crate::plan::plan(&desired, &observed, &s).is_empty());
    // Without namespaces the namespace Consul reports is not looked at.
    let mut plain = reg();
    plain.namespace = None;
    let mut have = echo(&plain, None, &s);
    have.namespace = Some("default".into());
    let desired = BTreeMap::from([(plain.id.clone(), plain)]);
    let observed = BTreeMap::from([("web-1".to_owned(), have)]);
    assert!(crate::plan::plan(&desired, &observed, &s).is_empty());
}

#[test]
fn a_registration_and_its_echo_fingerprint_alike() {
    let s = SyncSettings::default();
    let r = reg();
    let o = echo(&r, None, &s);
    assert_eq!(fingerprint_registration(&r), fingerprint_observed(&o));
    assert_eq!(
        CompactInstance::of_registration(&r, &s),
        CompactInstance::of_observed(&o, &s)
    );
}

#[test]
fn field_boundaries_do_not_collide() {
    // Without length prefixes "ab"+"c" and "a"+"bc" would encode alike.
    let mut a = reg();
    a.tags = vec!["ab".into(), "c".into()];
    let mut b = reg();
    b.tags = vec!["a".into(), "bc".into()];
    assert_ne!(fingerprint_registration(&a), fingerprint_registration(&b));
    let mut c = reg();
    c.meta.insert("x".into(), "yz".into());
    let mut d = reg();
    d.meta.insert("xy".into(), "z".into());
    assert_ne!(fingerprint_registration(&c), fingerprint_registration(&d));
}

#[test]
fn modify_indexes_are_kept_but_do_not_change_the_content() {
    let s = SyncSettings::default();
    let body = serde_json::json!({
        "Node": {"Node": s.consul_node_name},
        "Services": [
            {"ID": "web-1", "Service": "web", "Port": 80, "ModifyIndex": 42},
            {"ID": "web-2", "Service": "web", "Port": 80},
        ]
    });
    let parsed = parse_node_services_compact(&serde_json::to_vec(&body).unwrap(), &s).unwrap();
    let a = &parsed.instances["web-1"];
    let b = &parsed.instances["web-2"];
    assert_eq!(a.modify_index(), 42);
    assert_eq!(b.modify_index(), 0, "no index sent: unknown");
    let moved = a.clone().with_modify_index(43);
    assert_ne!(*a, moved);
    assert!(a.same_content(&moved));

    let checks = serde_json::json!([
        {"Node": "n", "CheckID": "ns/web-1", "ServiceID": "web-1", "ModifyIndex": 7},
        {"Node": "n", "CheckID": "serfHealth", "ModifyIndex": 8},
    ]);
    let parsed = parse_health_checks_compact(&serde_json::to_vec(&checks).unwrap()).unwrap();
    let c = &parsed["web-1"][0];
    assert_eq!(c.modify_index(), 7);
    assert!(c.same_content(&c.clone().with_modify_index(9)));
    assert_ne!(*c, c.clone().with_modify_index(9));
}

proptest::proptest! {
    /// Whatever indexes Consul reports, each instance and check keeps
    /// its own, and the rest of the compact form does not depend on it.
    #[test]
    fn every_instance_keeps_its_own_modify_index(
        indexes in proptest::collection::btree_map("[a-z]{1,6}", proptest::option::of(0u64..u64::MAX), 0..20),
    ) {
        let s = SyncSettings::default();
        let services: Vec<serde_json::Value> = indexes
            .iter()
            .map(|(id, idx)| {
                let mut v = serde_json::json!({"ID": id, "Service": "web", "Port": 80});
                if let Some(i) = idx {
                    v["ModifyIndex"] = (*i).into();
                }
                v
            })
            .collect();
        let checks: Vec<serde_json::Value> = indexes
            .iter()
            .map(|(id, idx)| serde_json::json!({
                "Node": s.consul_node_name, "CheckID": format!("ns/{id}"),
                "ServiceID": id, "ModifyIndex": idx.unwrap_or(0)}))
            .collect();
        let body = serde_json::json!({"Node": {"Node": s.consul_node_name}, "Services": services});
        let parsed = parse_node_services_compact(&serde_json::to_vec(&body).unwrap(), &s).unwrap();
        let parsed_checks = parse_health_checks_compact(&serde_json::to_vec(&checks).unwrap()).unwrap();
        proptest::prop_assert_eq!(parsed.instances.len(), indexes.len());
        for (id, idx) in &indexes {
            let inst = &parsed.instances[id];
            proptest::prop_assert_eq!(inst.modify_index(), idx.unwrap_or(0));
            let plain = parse_node_services_compact(
                &serde_json::to_vec(&serde_json::json!({"Node": {"Node": s.consul_node_name},
                    "Services": [{"ID": id, "Service": "web", "Port": 80}]})).unwrap(), &s).unwrap();
            proptest::prop_assert!(plain.instances[id].same_content(inst));
            proptest::prop_assert_eq!(parsed_checks[id][0].modify_index(), idx.unwrap_or(0));
        }
    }
}

#[test]
fn a_check_with_other_output_is_not_as_written() {
    let s = SyncSettings::default();
    let r = reg();
    let o = echo(&r, None, &s);
    let mut check = o.checks.clone().unwrap().remove(0);
    assert_eq!(
        CompactCheck::of_observed(&check).as_written,
        Some(CheckStatus::Passing)
    );
    check.output = "something else".into();
    assert_eq!(CompactCheck::of_observed(&check).as_written, None);
    check.output = CheckStatus::Passing.output().into();
    check.notes = "n".into();
    assert_eq!(CompactCheck::of_observed(&check).as_written, None);
}

/// A reader handing out at most `step` bytes per read, as a body arrives
/// in chunks.
struct Trickle<'a> {
    data: &'a [u8],
    step: usize,
}

impl std::io::Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.step).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

proptest::proptest! {
    /// Reading an answer as it arrives gives what parsing it whole gives,
    /// however it is cut, and a repeated service ID keeps its last entry
    /// (as Consul's own map would); a cut-off body fails both ways.
    #[test]
    fn reading_in_chunks_equals_parsing_whole(
        entries in proptest::collection::vec(("[a-c]{1,2}", 1u16..100), 0..30),
        step in 1usize..64,
        cut_off in proptest::bool::weighted(0.2),
    ) {
        let s = SyncSettings::default();
        let services: Vec<serde_json::Value> = entries
            .iter()
            .map(|(id, port)| serde_json::json!({"ID": id, "Service": "web", "Port": port}))
            .collect();
        let checks: Vec<serde_json::Value> = entries
            .iter()
            .map(|(id, port)| serde_json::json!({"Node": s.consul_node_name,
                "CheckID": format!("ns/{id}/{port}"), "ServiceID": id}))
            .collect();
        let mut body = serde_json::to_vec(
            &serde_json::json!({"Node": {"Node": s.consul_node_name}, "Services": services}),
        ).unwrap();
        let mut check_body = serde_json::to_vec(&checks).unwrap();
        if cut_off {
            body.truncate(body.len() / 2);
            check_body.truncate(check_body.len() / 2);
        }
        let whole = parse_node_services_compact(&body, &s);
        let read = read_node_services_compact(Trickle { data: &body, step }, &s);
        let whole_checks = parse_health_checks_compact(&check_body);
        let read_checks = read_health_checks_compact(Trickle { data: &check_body, step });
        if cut_off {
            proptest::prop_assert!(whole.is_err() && read.is_err());
            proptest::prop_assert!(whole_checks.is_err() && read_checks.is_err());
        } else {
            let whole = whole.unwrap();
            proptest::prop_assert_eq!(&whole, &read.unwrap());
            proptest::prop_assert_eq!(&whole_checks.as_ref().unwrap(), &read_checks.as_ref().unwrap());
            let mut last = BTreeMap::new();
            for (id, port) in &entries {
                last.insert(id.clone(), *port);
            }
            proptest::prop_assert_eq!(whole.instances.len(), last.len());
            for (id, port) in &last {
                let alone = parse_node_services_compact(
                    &serde_json::to_vec(&serde_json::json!({"Node": {"Node": s.consul_node_name},
                        "Services": [{"ID": id, "Service": "web", "Port": port}]})).unwrap(), &s).unwrap();
                proptest::prop_assert!(alone.instances[id].same_content(&whole.instances[id]));
            }
        }
    }
}

/// The overlay and the parsed answer hold one check list per instance:
/// each is sized to its checks, not to the four a first push makes room
/// for. (The parse's lists are also sized while it runs, which only a
/// heap profile shows; here, the lists it returns.)
#[test]
fn check_lists_hold_no_spare_room() {
    let r = reg();
    let after = checks_after(&r, &[]);
    assert_eq!((after.len(), after.capacity()), (1, 1));
    let other = CompactCheck::of_observed(&ObservedCheck {
        check_id: "other".into(),
        service_id: "web-1".into(),
        ..ObservedCheck::default()
    });
    let after = checks_after(
        &r,
        &[other.clone(), CompactCheck::of_registration(&r).unwrap()],
    );
    assert_eq!((after.len(), after.capacity()), (2, 2));
    assert!(after[0].same_content(&other));

    let body = br#"[
        {"CheckID":"ns/web-1","ServiceID":"web-1","Status":"passing"},
        {"CheckID":"ns/web-2","ServiceID":"web-2","Status":"passing"},
        {"CheckID":"extra","ServiceID":"web-2","Status":"critical"},
        {"CheckID":"serfHealth","ServiceID":"","Status":"passing"}
    ]"#;
    let parsed = parse_health_checks_compact(body).unwrap();
    assert_eq!(parsed.len(), 2, "the node's own check is not an instance's");
    for (id, checks) in &parsed {
        assert_eq!(checks.len(), checks.capacity(), "{id}");
    }
    assert_eq!(parsed["web-2"].len(), 2);
}
