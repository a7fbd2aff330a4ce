//! Consul's wire form of the catalog controller's plans, and back.
//!
//! A planned operation becomes `/v1/txn` operations that each carry their
//! precondition (`cas`, `delete-cas`); plan entries are packed into
//! transactions and halved after a 413 without ever splitting an entry;
//! Consul's typed results become the observed form and the indexes it gave
//! what was written.
//!
//! This module must NOT send anything or hold state: it is pure
//! conversions, used by the writer, the index's fold and the purge.

use std::collections::HashMap;

use mirra_catalog::{CatalogOp, ObservedInstance, SyncNode};
use mirra_consul::{HealthCheck, TxnOp, Verb};

use crate::round::Planned;

/// Plan-entry index standing for the Node operation that creates our node
/// (it belongs to no plan entry; no plan has this many entries).
pub const NODE_OP: usize = usize::MAX;

/// Wire operations of a transaction, each with its plan entry.
pub type Wire = Vec<(TxnOp, usize)>;

/// Splits a transaction's operations in two halves of its plan entries
/// (the operations of one entry are adjacent). `Err` gives back a part of
/// one entry, which cannot be split.
pub(crate) fn halve(mut part: Wire) -> Result<(Wire, Wire), Wire> {
    let mut starts: Vec<usize> = Vec::new();
    for (pos, (_, entry)) in part.iter().enumerate() {
        if pos == 0 || part.get(pos - 1).is_some_and(|(_, prev)| prev != entry) {
            starts.push(pos);
        }
    }
    match starts.get(starts.len() / 2) {
        Some(&cut) if starts.len() >= 2 => {
            let second = part.split_off(cut);
            Ok((part, second))
        }
        _ => Err(part),
    }
}

/// A fingerprint of wire operations, to tell whether a registration held
/// back as too large has changed since. `None` if they cannot be encoded
/// (they then always count as changed).
pub(crate) fn fingerprint<'a>(ops: impl Iterator<Item = &'a TxnOp>) -> Option<u64> {
    use std::hash::{DefaultHasher, Hasher};
    let mut h = DefaultHasher::new();
    for op in ops {
        h.write(&serde_json::to_vec(op).ok()?);
    }
    Some(h.finish())
}

/// A check as Consul's typed answers carry it, in the observed form.
pub(crate) fn observed_check(c: HealthCheck) -> mirra_catalog::ObservedCheck {
    mirra_catalog::ObservedCheck {
        node: c.node,
        check_id: c.check_id,
        name: c.name,
        status: c.status,
        notes: c.notes,
        output: c.output,
        service_id: c.service_id,
        check_type: c.r#type,
        modify_index: c.modify_index,
    }
}

/// Consul's answer as full observed instances (checks `None`: they come
/// from health/node). Converts the typed answer directly instead of
/// re-serialising it for `parse_node_services`.
#[cfg(test)]
pub(crate) fn observed_from(
    snap: mirra_consul::NodeServices,
) -> impl Iterator<Item = (String, ObservedInstance)> {
    let node = snap.node.map(|n| n.node).unwrap_or_default();
    snap.services
        .into_iter()
        .map(move |s| observed_instance(&node, s))
}

/// One instance on `node` of a typed answer, in the observed form.
pub(crate) fn observed_instance(
    node: &str,
    s: mirra_consul::Service,
) -> (String, ObservedInstance) {
    {
        let id = if s.id.is_empty() {
            s.service.clone()
        } else {
            s.id
        };
        let inst = ObservedInstance {
            node: node.to_owned(),
            id: id.clone(),
            name: s.service,
            kind: s.kind,
            tags: s.tags,
            address: s.address,
            port: i64::from(s.port),
            ports: s
                .ports
                .into_iter()
                .map(|p| mirra_catalog::observed::ObservedPort {
                    name: p.name,
                    port: i64::from(p.port),
                    default: p.default,
                })
                .collect(),
            meta: s.meta,
            weights: s
                .weights
                .map(|w| mirra_catalog::Weights {
                    passing: w.passing,
                    warning: w.warning,
                })
                .unwrap_or_default(),
            enable_tag_override: s.enable_tag_override,
            checks: None,
            namespace: Some(s.namespace).filter(|n| !n.is_empty()),
        };
        (id, inst)
    }
}

/// The Raft index a committed transaction got: the highest `ModifyIndex`
/// in its results (a write that changed nothing keeps its older index, and
/// then the state it confirms is older still). `None` when the transaction
/// returned no results (deletes only).
pub(crate) fn commit_index(results: &[mirra_consul::TxnResult]) -> Option<u64> {
    results
        .iter()
        .flat_map(|r| {
            [
                r.node.as_ref().map(|n| n.modify_index),
                r.service.as_ref().map(|s| s.modify_index),
                r.check.as_ref().map(|c| c.modify_index),
            ]
        })
        .flatten()
        .max()
}

/// Packs plan entries `(index, wire operations)` into transactions of at
/// most `max` operations without splitting an entry (a registration and its
/// check) across two transactions: each entry commits or fails whole. An
/// entry larger than `max` gets a transaction of its own.
pub(crate) fn pack_entries(entries: &[(usize, usize)], max: usize) -> Vec<Vec<usize>> {
    let max = max.max(1);
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut current: Vec<usize> = Vec::new();
    let mut ops = 0;
    for &(i, n) in entries {
        if !current.is_empty() && ops + n > max {
            out.push(std::mem::take(&mut current));
            ops = 0;
        }
        current.push(i);
        ops += n;
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// How many wire operations [`to_txn_ops`] makes of `op`.
pub(crate) fn wire_len(op: &CatalogOp) -> usize {
    match op {
        CatalogOp::Register(r) if r.check.is_some() => 2,
        _ => 1,
    }
}

/// The `ModifyIndex` of every instance and check a committed transaction
/// wrote, from its results.
#[derive(Default)]
pub(crate) struct WrittenIndexes {
    pub(crate) services: HashMap<String, u64>,
    pub(crate) checks: HashMap<String, u64>,
}

impl WrittenIndexes {
    pub(crate) fn of(results: &[mirra_consul::TxnResult]) -> Self {
        let mut out = Self::default();
        for r in results {
            if let Some(s) = &r.service {
                let id = if s.id.is_empty() { &s.service } else { &s.id };
                out.services.insert(id.clone(), s.modify_index);
            }
            if let Some(c) = &r.check {
                out.checks.insert(c.check_id.clone(), c.modify_index);
            }
        }
        out
    }
}
/// The Node operation that creates our node when it does not exist: a
/// `cas` with index 0, "only if absent", so that a node someone else
/// registered meanwhile (another tool, or a view that lagged) is never
/// rewritten; Consul refuses it and the rest of the transaction is sent
/// without it.
pub(crate) fn node_op(sync: &mirra_catalog::SyncSettings) -> TxnOp {
    let n = SyncNode::from_settings(sync);
    TxnOp::Node {
        verb: Verb::Cas,
        node: mirra_consul::Node {
            node: n.name,
            address: n.address,
            meta: n.meta,
            ..mirra_consul::Node::default()
        },
    }
}

/// The wire operations of one planned operation: a registration is the
/// instance and its readiness check. Each carries its precondition: `cas`
/// with the `ModifyIndex` it was planned from (0: only if absent), and
/// `delete-cas` for removals, so that an operation delayed in flight, or
/// planned from a view that is no longer true, cannot land over a newer
/// state. The instance's `cas` also guards its check's: both are in one
/// transaction, which commits whole or not at all.
pub(crate) fn to_txn_ops(p: &Planned, node: &str) -> Vec<TxnOp> {
    // Empty (left out of the body) without namespaces: the client then
    // fills in its own, as it always did.
    let ns = p.namespace.clone().unwrap_or_default();
    match &p.op {
        CatalogOp::Register(r) => {
            let mut out = vec![TxnOp::Service {
                verb: Verb::Cas,
                node: node.to_owned(),
                service: mirra_consul::Service {
                    id: r.id.clone(),
                    service: r.name.clone(),
                    tags: r.tags.clone(),
                    address: r.address.clone(),
                    meta: r.meta.clone(),
                    port: r.port,
                    // Empty in the single-port layout, and then left out of
                    // the body: Consul versions without the field see the
                    // registration they always did.
                    ports: r
                        .ports
                        .iter()
                        .map(|p| mirra_consul::ServicePort {
                            name: p.name.clone(),
                            port: p.port,
                            default: p.default,
                        })
                        .collect(),
                    weights: Some(mirra_consul::Weights {
                        passing: r.weights.passing,
                        warning: r.weights.warning,
                    }),
                    modify_index: p.index,
                    namespace: ns.clone(),
                    ..mirra_consul::Service::default()
                },
            }];
            if let Some(c) = &r.check {
                out.push(TxnOp::Check {
                    verb: Verb::Cas,
                    check: HealthCheck {
                        node: node.to_owned(),
                        check_id: c.check_id.clone(),
                        name: c.name().to_owned(),
                        status: c.status.as_str().to_owned(),
                        output: c.output().to_owned(),
                        service_id: c.service_id.clone(),
                        service_name: r.name.clone(),
                        r#type: c.check_type().to_owned(),
                        modify_index: p.check_index,
                        namespace: ns.clone(),
                        ..HealthCheck::default()
                    },
                });
            }
            out
        }
        CatalogOp::Deregister {
            service_id,
            service_name,
            ..
        } => vec![TxnOp::Service {
            verb: Verb::DeleteCas,
            node: node.to_owned(),
            service: mirra_consul::Service {
                id: service_id.clone(),
                service: service_name.clone(),
                modify_index: p.index,
                namespace: ns.clone(),
                ..mirra_consul::Service::default()
            },
        }],
        CatalogOp::DeregisterCheck { check_id, .. } => vec![TxnOp::Check {
            verb: Verb::DeleteCas,
            check: HealthCheck {
                node: node.to_owned(),
                check_id: check_id.clone(),
                modify_index: p.check_index,
                namespace: ns.clone(),
                ..HealthCheck::default()
            },
        }],
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
pub(crate) mod tests {
    use std::collections::BTreeMap;

    use mirra_catalog::{Registration, ServiceKey};

    use super::*;

    /// A planned operation with the given indexes.
    fn at(op: CatalogOp, index: u64, check_index: u64) -> Planned {
        Planned {
            op,
            key: None,
            index,
            check_index,
            namespace: None,
        }
    }

    fn plain(op: &CatalogOp) -> Planned {
        at(op.clone(), 0, 0)
    }

    fn wire(entries: &[usize]) -> Wire {
        entries
            .iter()
            .map(|&i| {
                (
                    TxnOp::Node {
                        verb: Verb::Set,
                        node: mirra_consul::Node::default(),
                    },
                    i,
                )
            })
            .collect()
    }

    fn entries_of(w: &Wire) -> Vec<usize> {
        w.iter().map(|(_, i)| *i).collect()
    }

    #[test]
    fn halving_cuts_between_entries_and_never_inside_one() {
        let (a, b) = halve(wire(&[NODE_OP, 0, 0, 1, 1, 2])).unwrap();
        assert_eq!(entries_of(&a), vec![NODE_OP, 0, 0]);
        assert_eq!(entries_of(&b), vec![1, 1, 2]);
        let (a, b) = halve(wire(&[3, 3, 4])).unwrap();
        assert_eq!((entries_of(&a), entries_of(&b)), (vec![3, 3], vec![4]));
        // One entry, however many operations, cannot be split.
        assert_eq!(entries_of(&halve(wire(&[5, 5])).unwrap_err()), vec![5, 5]);
        assert!(halve(Vec::new()).is_err());
    }

    #[test]
    fn packing_never_splits_an_entry() {
        // The node (one op), then three two-op registrations.
        let entries = vec![(NODE_OP, 1), (0, 2), (1, 2), (2, 2)];
        assert_eq!(
            pack_entries(&entries, 4),
            vec![vec![NODE_OP, 0], vec![1, 2]]
        );
        // An entry larger than the limit travels alone.
        assert_eq!(pack_entries(&[(0, 2)], 1), vec![vec![0]]);
        assert!(pack_entries(&[], 64).is_empty());
    }

    #[test]
    fn every_wire_operation_carries_the_index_it_was_planned_from() {
        let mut r = multi_port_registration();
        r.check = Some(mirra_catalog::ReadinessCheck {
            check_id: "ns/web-1".into(),
            service_id: "web-1".into(),
            status: mirra_catalog::CheckStatus::Passing,
        });
        let ops = to_txn_ops(&at(CatalogOp::Register(r), 17, 18), "n");
        let v = serde_json::to_value(&ops).unwrap();
        assert_eq!(v[0]["Service"]["Verb"], "cas");
        assert_eq!(v[0]["Service"]["Service"]["ModifyIndex"], 17);
        assert_eq!(v[1]["Check"]["Verb"], "cas");
        assert_eq!(v[1]["Check"]["Check"]["ModifyIndex"], 18);
        // A new instance names index 0, "only if absent": the field is
        // left out of the body, which Consul reads as 0.
        let ops = to_txn_ops(&plain(&CatalogOp::Register(multi_port_registration())), "n");
        let v = serde_json::to_value(&ops).unwrap();
        assert_eq!(v[0]["Service"]["Verb"], "cas");
        assert!(
            v[0]["Service"]["Service"]
                .get("ModifyIndex")
                .is_none_or(|i| *i == 0),
            "{v}"
        );
        let dereg = CatalogOp::Deregister {
            node: "n".into(),
            service_id: "web-1".into(),
            service_name: "web".into(),
            check_ids: Vec::new(),
        };
        let v = serde_json::to_value(to_txn_ops(&at(dereg, 21, 0), "n")).unwrap();
        assert_eq!(v[0]["Service"]["Verb"], "delete-cas");
        assert_eq!(v[0]["Service"]["Service"]["ModifyIndex"], 21);
        let check = CatalogOp::DeregisterCheck {
            node: "n".into(),
            check_id: "ns/web-1".into(),
        };
        let v = serde_json::to_value(to_txn_ops(&at(check, 0, 9), "n")).unwrap();
        assert_eq!(v[0]["Check"]["Verb"], "delete-cas");
        assert_eq!(v[0]["Check"]["Check"]["ModifyIndex"], 9);
        // The node is only ever created, never rewritten.
        let node = serde_json::to_value(node_op(&mirra_catalog::SyncSettings::default())).unwrap();
        assert_eq!(node["Node"]["Verb"], "cas");
        assert!(
            node["Node"]["Node"]
                .get("ModifyIndex")
                .is_none_or(|i| *i == 0)
        );
    }

    #[test]
    fn written_indexes_come_from_the_results() {
        let results: Vec<mirra_consul::TxnResult> = serde_json::from_value(serde_json::json!([
            {"Node": {"Node": "n", "ModifyIndex": 5}},
            {"Service": {"ID": "web-1", "Service": "web", "ModifyIndex": 6}},
            {"Check": {"Node": "n", "CheckID": "ns/web-1", "ModifyIndex": 7}},
        ]))
        .unwrap();
        let w = WrittenIndexes::of(&results);
        assert_eq!(w.services.get("web-1"), Some(&6));
        assert_eq!(w.checks.get("ns/web-1"), Some(&7));
        assert_eq!(commit_index(&results), Some(7));
    }

    #[test]
    fn wire_len_matches_the_wire_operations() {
        let reg = |check: bool| {
            let mut r = Registration {
                key: ServiceKey::new("ns", "web"),
                id: "web-1".into(),
                name: "web".into(),
                tags: Vec::new(),
                address: "10.0.0.1".into(),
                port: 80,
                ports: Vec::new(),
                meta: BTreeMap::new(),
                weights: mirra_catalog::Weights::default(),
                check: None,
                namespace: None,
            };
            if check {
                r.check = Some(mirra_catalog::ReadinessCheck {
                    check_id: "ns/web-1".into(),
                    service_id: "web-1".into(),
                    status: mirra_catalog::CheckStatus::Passing,
                });
            }
            CatalogOp::Register(r)
        };
        let ops = [
            reg(true),
            reg(false),
            CatalogOp::DeregisterCheck {
                node: "n".into(),
                check_id: "ns/web-1".into(),
            },
            CatalogOp::Deregister {
                node: "n".into(),
                service_id: "web-1".into(),
                service_name: "web".into(),
                check_ids: Vec::new(),
            },
        ];
        for op in &ops {
            assert_eq!(wire_len(op), to_txn_ops(&plain(op), "n").len(), "{op:?}");
        }
    }

    pub(crate) fn multi_port_registration() -> Registration {
        Registration {
            key: ServiceKey::new("ns", "web"),
            id: "web-1".into(),
            name: "web".into(),
            tags: vec!["k8s".into()],
            address: "10.0.0.1".into(),
            port: 0,
            ports: vec![
                mirra_catalog::ServicePort {
                    name: "http".into(),
                    port: 8080,
                    default: true,
                },
                mirra_catalog::ServicePort {
                    name: "grpc".into(),
                    port: 9090,
                    default: false,
                },
            ],
            meta: BTreeMap::new(),
            weights: mirra_catalog::Weights::default(),
            check: None,
            namespace: None,
        }
    }

    #[test]
    fn a_multi_port_registration_writes_its_ports_and_no_port() {
        let ops = to_txn_ops(&plain(&CatalogOp::Register(multi_port_registration())), "n");
        assert_eq!(ops.len(), 1);
        let v = serde_json::to_value(&ops[0]).unwrap();
        assert_eq!(
            v["Service"]["Service"]["Ports"],
            serde_json::json!([
                {"Name": "http", "Port": 8080, "Default": true},
                {"Name": "grpc", "Port": 9090}
            ])
        );
        assert!(v["Service"]["Service"].get("Port").is_none(), "{v}");
    }

    #[test]
    fn a_single_port_registration_sends_no_ports_member() {
        let mut r = multi_port_registration();
        r.port = 80;
        r.ports.clear();
        let v = serde_json::to_value(&to_txn_ops(&plain(&CatalogOp::Register(r)), "n")[0]).unwrap();
        assert_eq!(v["Service"]["Service"]["Port"], 80);
        assert!(v["Service"]["Service"].get("Ports").is_none(), "{v}");
    }

    #[test]
    fn observed_conversion_keeps_ports_so_the_echo_matches_the_registration() {
        use mirra_catalog::ObservedView;
        let r = multi_port_registration();
        let snap: mirra_consul::NodeServices = serde_json::from_value(serde_json::json!({
            "Node": {"Node": "k8s-sync", "Address": "127.0.0.1"},
            "Services": [{"ID": "web-1", "Service": "web", "Tags": ["k8s"],
                          "Address": "10.0.0.1", "Port": 0, "Meta": null,
                          "Ports": [{"Name": "http", "Port": 8080, "Default": true},
                                    {"Name": "grpc", "Port": 9090, "Default": false}]}]
        }))
        .unwrap();
        let obs: BTreeMap<String, ObservedInstance> = observed_from(snap).collect();
        let inst = obs.get("web-1").unwrap();
        assert_eq!(inst.ports.len(), 2);
        assert!(inst.service_equals(&r));
        let mut fewer = r.clone();
        fewer.ports.pop();
        assert!(!inst.service_equals(&fewer));
    }

    #[test]
    fn observed_conversion_fills_defaults() {
        let snap: mirra_consul::NodeServices = serde_json::from_value(serde_json::json!({
            "Node": {"Node": "k8s-sync", "Address": "127.0.0.1"},
            "Services": [{"ID": "web-1", "Service": "web", "Tags": null, "Meta": null, "Port": 80}]
        }))
        .unwrap();
        let obs: BTreeMap<String, ObservedInstance> = observed_from(snap).collect();
        let inst = obs.get("web-1").unwrap();
        assert_eq!(inst.node, "k8s-sync");
        assert_eq!(inst.weights, mirra_catalog::Weights::default());
        assert!(inst.tags.is_empty());
        assert_eq!(inst.checks, None);
    }
}
