//! Catalog transactions (`PUT /v1/txn`): Node, Service and Check operations,
//! splitting a long list into transactions of bounded size, and mapping a
//! rolled-back transaction's `Errors[{OpIndex, What}]` back to the
//! operations that failed.
//!
//! Why transactions: every catalog write request is one Raft apply on the
//! servers, however small. A transaction of N operations is ONE apply, so
//! writing 50,000 instances costs 782 applies instead of 50,000.
//!
//! This module is pure (no I/O); the client sends what it builds. It must
//! NOT reorder operations: a Node `set` placed before the Service `set`s on
//! that node must reach Consul first.

use serde::{Deserialize, Serialize};

use crate::types::{HealthCheck, Node, Service};

/// What a transaction operation does. Consul spells these `get`, `set`,
/// `cas`, `delete` and `delete-cas`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Verb {
    /// Read the entry. A transaction of only `get`s is served without a
    /// Raft apply; one naming an absent entry is rolled back (409) with
    /// `... doesn't exist` for that operation and returns no results.
    #[serde(rename = "get")]
    Get,
    /// Create or replace. Idempotent: applying it twice leaves the same state.
    #[serde(rename = "set")]
    Set,
    /// Create or replace only if the entry's current `ModifyIndex` equals the
    /// one in the operation (0: only if it does not exist). NOT idempotent:
    /// the first success changes the index, so a blind repeat fails.
    #[serde(rename = "cas")]
    Cas,
    /// Delete; deleting what is absent succeeds. Idempotent.
    #[serde(rename = "delete")]
    Delete,
    /// Delete only if the `ModifyIndex` matches. NOT idempotent.
    #[serde(rename = "delete-cas")]
    DeleteCas,
}

impl Verb {
    /// Whether sending the operation twice has the same effect as once, which
    /// decides whether a request whose outcome is unknown may be retried.
    pub fn is_idempotent(self) -> bool {
        matches!(self, Self::Get | Self::Set | Self::Delete)
    }
}

/// One operation of a catalog transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TxnOp {
    /// A node operation. Only the node itself: services and checks need their
    /// own operations.
    Node {
        /// What to do.
        verb: Verb,
        /// The node (name or ID required; `ModifyIndex` for the cas verbs).
        node: Node,
    },
    /// A service instance operation on a node.
    Service {
        /// What to do.
        verb: Verb,
        /// Name of the node the instance lives on.
        node: String,
        /// The instance (`ID` required for deletes; `ModifyIndex` for cas).
        service: Service,
    },
    /// A health check operation (the check names its node).
    Check {
        /// What to do.
        verb: Verb,
        /// The check (`Node` and `CheckID` required).
        check: HealthCheck,
    },
}

impl TxnOp {
    /// The operation's verb.
    pub fn verb(&self) -> Verb {
        match self {
            Self::Node { verb, .. } | Self::Service { verb, .. } | Self::Check { verb, .. } => {
                *verb
            }
        }
    }

    /// Short description for logs and error messages, e.g.
    /// `service set k8s-sync/web-1a2b`.
    pub fn describe(&self) -> String {
        let verb = verb_str(self.verb());
        match self {
            Self::Node { node, .. } => format!("node {verb} {}", node.node),
            Self::Service { node, service, .. } => {
                let id = if service.id.is_empty() {
                    &service.service
                } else {
                    &service.id
                };
                format!("service {verb} {node}/{id}")
            }
            Self::Check { check, .. } => format!("check {verb} {}/{}", check.node, check.check_id),
        }
    }
}

fn verb_str(v: Verb) -> &'static str {
    match v {
        Verb::Get => "get",
        Verb::Set => "set",
        Verb::Cas => "cas",
        Verb::Delete => "delete",
        Verb::DeleteCas => "delete-cas",
    }
}

/// Wire form of one operation: an object with exactly one of the keys
/// `Node`, `Service`, `Check`.
#[derive(Serialize)]
enum WireOp<'a> {
    Node(WireNodeOp<'a>),
    Service(WireServiceOp<'a>),
    Check(WireCheckOp<'a>),
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct WireNodeOp<'a> {
    verb: Verb,
    node: &'a Node,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct WireServiceOp<'a> {
    verb: Verb,
    node: &'a str,
    service: &'a Service,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct WireCheckOp<'a> {
    verb: Verb,
    check: &'a HealthCheck,
}

impl Serialize for TxnOp {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Node { verb, node } => WireOp::Node(WireNodeOp { verb: *verb, node }),
            Self::Service {
                verb,
                node,
                service,
            } => WireOp::Service(WireServiceOp {
                verb: *verb,
                node,
                service,
            }),
            Self::Check { verb, check } => WireOp::Check(WireCheckOp { verb: *verb, check }),
        }
        .serialize(s)
    }
}

/// One entry of a transaction's `Results` (present for set and cas verbs).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct TxnResult {
    /// The node written by a Node operation.
    #[serde(default)]
    pub node: Option<Node>,
    /// The instance written by a Service operation.
    #[serde(default)]
    pub service: Option<Service>,
    /// The check written by a Check operation.
    #[serde(default)]
    pub check: Option<HealthCheck>,
}

/// One entry of a rolled-back transaction's `Errors`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct TxnErrorEntry {
    /// Index of the failed operation within the transaction.
    #[serde(default)]
    pub op_index: usize,
    /// Consul's reason.
    #[serde(default)]
    pub what: String,
}

/// Body of a `/v1/txn` answer (200 committed, 409 rolled back).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct TxnResponse {
    /// Results of the operations that return one.
    #[serde(default, deserialize_with = "crate::types::nullable")]
    pub results: Vec<TxnResult>,
    /// Why the transaction was rolled back.
    #[serde(default, deserialize_with = "crate::types::nullable")]
    pub errors: Vec<TxnErrorEntry>,
}

/// An operation Consul refused, with its position in the caller's list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailedOp {
    /// Index in the list the caller passed (to the single transaction, or to
    /// [`crate::Client::apply_ops`]). `None` when Consul named an index
    /// outside the transaction, which would be a server bug.
    pub index: Option<usize>,
    /// The operation, when the index was valid.
    pub op: Option<TxnOp>,
    /// Consul's reason.
    pub what: String,
}

impl FailedOp {
    /// Whether Consul refused the operation because its `cas`/`delete-cas`
    /// precondition no longer holds: the entry changed, appeared or
    /// vanished since the index the caller named. Consul words this
    /// `failed to set service "x" on node "n", index is stale` (likewise
    /// for nodes, checks and deletes). Such a refusal is not a fault: the
    /// caller's view is older than the catalog and must be read again.
    pub fn is_cas_conflict(&self) -> bool {
        is_cas_conflict(&self.what)
    }

    /// Whether a `get` found nothing (`... doesn't exist`).
    pub fn is_missing(&self) -> bool {
        self.what.ends_with("doesn't exist")
    }
}

/// Whether an `Errors[].What` of a rolled-back transaction is a failed
/// `cas`/`delete-cas` precondition (see [`FailedOp::is_cas_conflict`]).
pub fn is_cas_conflict(what: &str) -> bool {
    what.starts_with("failed to ") && what.ends_with(", index is stale")
}

/// Maps `Errors[{OpIndex, What}]` of one transaction back to its operations.
/// `offset` is the position of the transaction's first operation in the
/// caller's list. Never panics on an out-of-range index.
pub fn map_failed_ops(errors: &[TxnErrorEntry], ops: &[TxnOp], offset: usize) -> Vec<FailedOp> {
    errors
        .iter()
        .map(|e| match ops.get(e.op_index) {
            Some(op) => FailedOp {
                index: offset.checked_add(e.op_index),
                op: Some(op.clone()),
                what: e.what.clone(),
            },
            None => FailedOp {
                index: None,
                op: None,
                what: e.what.clone(),
            },
        })
        .collect()
}

/// Splits `ops` into consecutive chunks of at most `max` operations, keeping
/// the order. `max` of 0 is treated as 1 rather than looping forever.
pub fn split_ops<T>(ops: Vec<T>, max: usize) -> Vec<Vec<T>> {
    let max = max.max(1);
    let mut chunks = Vec::with_capacity(ops.len().div_ceil(max));
    let mut current = Vec::with_capacity(max.min(ops.len()));
    for op in ops {
        current.push(op);
        if current.len() == max {
            chunks.push(std::mem::replace(&mut current, Vec::with_capacity(max)));
        }
    }
    if !current.is_empty() {
        chunks.push(current);
    }
    chunks
}

/// Whether every operation of a transaction may be sent again when the
/// outcome of the first attempt is unknown.
pub fn all_idempotent(ops: &[TxnOp]) -> bool {
    ops.iter().all(|op| op.verb().is_idempotent())
}

/// Puts the client's namespace and partition into every operation that
/// names none. Consul's `/v1/txn` ignores `?ns=` and `?partition=` on
/// writes: each catalog operation lands in the tenancy its own body names,
/// and in `default` when it names none. An operation that names its own
/// keeps it. Nodes have a partition but no namespace; a node-level check
/// (no `ServiceID`) is left without a namespace, as Consul keeps node
/// checks outside namespaces. Returns `None` when nothing changes, so the
/// common case (no Enterprise tenancy) copies nothing.
pub fn with_tenancy(
    ops: &[TxnOp],
    namespace: Option<&str>,
    partition: Option<&str>,
) -> Option<Vec<TxnOp>> {
    let namespace = namespace.filter(|n| !n.is_empty());
    let partition = partition.filter(|p| !p.is_empty());
    if namespace.is_none() && partition.is_none() {
        return None;
    }
    let fill = |field: &mut String, value: Option<&str>| {
        if let Some(v) = value
            && field.is_empty()
        {
            v.clone_into(field);
        }
    };
    let filled = ops
        .iter()
        .cloned()
        .map(|mut op| {
            match &mut op {
                TxnOp::Node { node, .. } => fill(&mut node.partition, partition),
                TxnOp::Service { service, .. } => {
                    fill(&mut service.namespace, namespace);
                    fill(&mut service.partition, partition);
                }
                TxnOp::Check { check, .. } => {
                    if !check.service_id.is_empty() {
                        fill(&mut check.namespace, namespace);
                    }
                    fill(&mut check.partition, partition);
                }
            }
            op
        })
        .collect();
    Some(filled)
}

/// What [`crate::Client::apply_ops`] did when every transaction committed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TxnSummary {
    /// Transactions sent (each one Raft apply).
    pub transactions: usize,
    /// Operations committed.
    pub ops: usize,
}

/// [`crate::Client::apply_ops`] stopped at a transaction that failed.
/// Transactions before it are committed; that one and all after it are not.
/// Nothing is lost: `unapplied` holds every operation not committed, in
/// order, so the caller can drop the failed ones and resubmit the rest.
#[derive(Debug, thiserror::Error)]
#[error(
    "{committed_ops} operations committed in {committed_transactions} transactions, then: {source}"
)]
pub struct TxnBatchError {
    /// Transactions committed before the failure.
    pub committed_transactions: usize,
    /// Operations committed before the failure.
    pub committed_ops: usize,
    /// Why the failing transaction failed. For a rollback
    /// ([`crate::Error::TxnRolledBack`]) the failed operations carry their
    /// index in the list given to `apply_ops`.
    pub source: crate::Error,
    /// Operations not committed, in their original order (the failed
    /// transaction's and all later ones).
    pub unapplied: Vec<TxnOp>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn svc_op(i: usize) -> TxnOp {
        TxnOp::Service {
            verb: Verb::Set,
            node: "k8s-sync".into(),
            service: Service {
                id: format!("web-{i}"),
                service: "web".into(),
                port: 80,
                ..Service::default()
            },
        }
    }

    #[test]
    fn wire_format_matches_consul_docs() {
        let ops = vec![
            TxnOp::Node {
                verb: Verb::Set,
                node: Node {
                    node: "bar".into(),
                    address: "192.168.0.1".into(),
                    meta: [("instance_type".to_owned(), "m2.large".to_owned())].into(),
                    ..Node::default()
                },
            },
            TxnOp::Service {
                verb: Verb::Delete,
                node: "foo".into(),
                service: Service {
                    id: "db1".into(),
                    ..Service::default()
                },
            },
            TxnOp::Check {
                verb: Verb::Cas,
                check: HealthCheck {
                    node: "bar".into(),
                    check_id: "service:web1".into(),
                    name: "Web HTTP Check".into(),
                    status: "critical".into(),
                    service_id: "web1".into(),
                    service_name: "web".into(),
                    modify_index: 22,
                    ..HealthCheck::default()
                },
            },
            TxnOp::Service {
                verb: Verb::DeleteCas,
                node: "foo".into(),
                service: Service {
                    id: "db2".into(),
                    modify_index: 7,
                    ..Service::default()
                },
            },
        ];
        assert_eq!(
            serde_json::to_value(&ops).unwrap(),
            json!([
                {"Node": {"Verb": "set", "Node": {
                    "Node": "bar", "Address": "192.168.0.1", "Meta": {"instance_type": "m2.large"}}}},
                {"Service": {"Verb": "delete", "Node": "foo", "Service": {"ID": "db1", "Service": ""}}},
                {"Check": {"Verb": "cas", "Check": {
                    "Node": "bar", "CheckID": "service:web1", "Name": "Web HTTP Check",
                    "Status": "critical", "ServiceID": "web1", "ServiceName": "web",
                    "ModifyIndex": 22}}},
                {"Service": {"Verb": "delete-cas", "Node": "foo", "Service": {
                    "ID": "db2", "Service": "", "ModifyIndex": 7}}}
            ])
        );
    }

    #[test]
    fn tenancy_fills_only_what_an_op_leaves_empty() {
        let ops = vec![
            TxnOp::Node {
                verb: Verb::Cas,
                node: Node {
                    node: "k8s-sync".into(),
                    ..Node::default()
                },
            },
            svc_op(1),
            TxnOp::Service {
                verb: Verb::Delete,
                node: "k8s-sync".into(),
                service: Service {
                    id: "own".into(),
                    namespace: "other".into(),
                    partition: "p2".into(),
                    ..Service::default()
                },
            },
            TxnOp::Check {
                verb: Verb::Set,
                check: HealthCheck {
                    node: "k8s-sync".into(),
                    check_id: "svc-check".into(),
                    service_id: "web-1".into(),
                    ..HealthCheck::default()
                },
            },
            TxnOp::Check {
                verb: Verb::Set,
                check: HealthCheck {
                    node: "k8s-sync".into(),
                    check_id: "node-check".into(),
                    ..HealthCheck::default()
                },
            },
        ];
        assert_eq!(with_tenancy(&ops, None, None), None);
        assert_eq!(with_tenancy(&ops, Some(""), Some("")), None);
        let wire =
            serde_json::to_value(with_tenancy(&ops, Some("team"), Some("p1")).unwrap()).unwrap();
        assert_eq!(wire[0]["Node"]["Node"]["Partition"], "p1");
        assert_eq!(wire[0]["Node"]["Node"].get("Namespace"), None);
        assert_eq!(wire[1]["Service"]["Service"]["Namespace"], "team");
        assert_eq!(wire[1]["Service"]["Service"]["Partition"], "p1");
        assert_eq!(wire[2]["Service"]["Service"]["Namespace"], "other");
        assert_eq!(wire[2]["Service"]["Service"]["Partition"], "p2");
        assert_eq!(wire[3]["Check"]["Check"]["Namespace"], "team");
        assert_eq!(wire[3]["Check"]["Check"]["Partition"], "p1");
        assert_eq!(wire[4]["Check"]["Check"].get("Namespace"), None);
        assert_eq!(wire[4]["Check"]["Check"]["Partition"], "p1");
        let only_ns = with_tenancy(&ops, Some("team"), None).unwrap();
        assert_eq!(only_ns.len(), ops.len());
        let wire = serde_json::to_value(only_ns).unwrap();
        assert_eq!(wire[0]["Node"]["Node"].get("Partition"), None);
        assert_eq!(wire[1]["Service"]["Service"].get("Partition"), None);
    }

    #[test]
    fn response_with_errors_and_nulls_decodes() {
        let r: TxnResponse = serde_json::from_str(
            r#"{"Results":null,"Errors":[{"OpIndex":1,"What":"failed to set service"}],"Extra":1}"#,
        )
        .unwrap();
        assert!(r.results.is_empty());
        assert_eq!(
            r.errors,
            vec![TxnErrorEntry {
                op_index: 1,
                what: "failed to set service".into()
            }]
        );
    }

    #[test]
    fn failed_ops_map_back_with_offset_and_bad_indexes_do_not_panic() {
        let ops: Vec<TxnOp> = (0..3).map(svc_op).collect();
        let errors = vec![
            TxnErrorEntry {
                op_index: 2,
                what: "boom".into(),
            },
            TxnErrorEntry {
                op_index: 99,
                what: "bad index".into(),
            },
        ];
        let failed = map_failed_ops(&errors, &ops, 128);
        assert_eq!(failed[0].index, Some(130));
        assert_eq!(failed[0].op, Some(svc_op(2)));
        assert_eq!(failed[0].what, "boom");
        assert_eq!(failed[1].index, None);
        assert!(failed[1].op.is_none());
    }

    #[test]
    fn split_50k_plus_node_is_782_chunks() {
        let ops: Vec<usize> = (0..50_001).collect();
        let chunks = split_ops(ops, 64);
        assert_eq!(chunks.len(), 782);
        assert_eq!(chunks.last().map(Vec::len), Some(50_001 - 781 * 64));
    }

    #[test]
    fn split_edge_cases() {
        assert!(split_ops(Vec::<u8>::new(), 64).is_empty());
        assert_eq!(split_ops(vec![1, 2, 3], 0), vec![vec![1], vec![2], vec![3]]);
        assert_eq!(split_ops(vec![1, 2, 3, 4], 2), vec![vec![1, 2], vec![3, 4]]);
    }

    #[test]
    fn idempotency_of_verbs() {
        assert!(Verb::Set.is_idempotent());
        assert!(Verb::Delete.is_idempotent());
        assert!(!Verb::Cas.is_idempotent());
        assert!(!Verb::DeleteCas.is_idempotent());
        let mut ops: Vec<TxnOp> = (0..3).map(svc_op).collect();
        assert!(all_idempotent(&ops));
        ops.push(TxnOp::Node {
            verb: Verb::Cas,
            node: Node::default(),
        });
        assert!(!all_idempotent(&ops));
    }

    #[test]
    fn cas_conflicts_are_told_apart_from_other_refusals() {
        let op = |what: &str| FailedOp {
            index: Some(0),
            op: None,
            what: what.into(),
        };
        for what in [
            "failed to set service \"web-1\" on node \"k8s-sync\", index is stale",
            "failed to delete service \"web-1\" on node \"k8s-sync\", index is stale",
            "failed to set node \"k8s-sync\", index is stale",
            "failed to delete check \"ns/web-1\" on node \"k8s-sync\", index is stale",
        ] {
            assert!(op(what).is_cas_conflict(), "{what}");
            assert!(!op(what).is_missing(), "{what}");
        }
        for what in [
            "Missing node registration",
            "Permission denied",
            "failed inserting service: index is stale-ish",
        ] {
            assert!(!op(what).is_cas_conflict(), "{what}");
        }
        assert!(op("service \"web-1\" on node \"n\" doesn't exist").is_missing());
        assert!(Verb::Get.is_idempotent());
        assert_eq!(
            serde_json::to_value(TxnOp::Service {
                verb: Verb::Get,
                node: "n".into(),
                service: Service {
                    id: "web-1".into(),
                    ..Service::default()
                },
            })
            .unwrap(),
            json!({"Service": {"Verb": "get", "Node": "n", "Service": {"ID": "web-1", "Service": ""}}})
        );
    }

    #[test]
    fn describe_names_the_target() {
        assert_eq!(svc_op(3).describe(), "service set k8s-sync/web-3");
    }

    proptest! {
        #[test]
        fn split_keeps_every_op_once_in_order(len in 0usize..2_000, max in 0usize..200) {
            let ops: Vec<usize> = (0..len).collect();
            let chunks = split_ops(ops.clone(), max);
            let bound = max.max(1);
            prop_assert!(chunks.iter().all(|c| !c.is_empty() && c.len() <= bound));
            // Only the last chunk may be short: no transaction is wasted.
            if chunks.len() > 1 {
                prop_assert!(chunks[..chunks.len() - 1].iter().all(|c| c.len() == bound));
            }
            prop_assert_eq!(chunks.len(), len.div_ceil(bound));
            let flat: Vec<usize> = chunks.into_iter().flatten().collect();
            prop_assert_eq!(flat, ops);
        }

        /// Consul's wording (`agent/consul/state/txn.go`) for any entry:
        /// a refused precondition is a conflict, an absent `get` is
        /// missing, and neither is the other.
        #[test]
        fn cas_and_missing_wordings_are_recognised(
            id in "[a-zA-Z0-9/._-]{0,24}",
            node in "[a-zA-Z0-9._-]{0,24}",
            verb in prop::sample::select(vec!["set", "delete"]),
            kind in prop::sample::select(vec!["service", "check"]),
        ) {
            let f = |what: String| FailedOp { index: Some(0), op: None, what };
            let stale = f(format!("failed to {verb} {kind} {id:?} on node {node:?}, index is stale"));
            prop_assert!(stale.is_cas_conflict());
            prop_assert!(!stale.is_missing());
            let stale_node = f(format!("failed to {verb} node {node:?}, index is stale"));
            prop_assert!(stale_node.is_cas_conflict());
            let missing = f(format!("{kind} {id:?} on node {node:?} doesn't exist"));
            prop_assert!(missing.is_missing());
            prop_assert!(!missing.is_cas_conflict());
        }

        #[test]
        fn map_failed_ops_never_panics(
            indexes in proptest::collection::vec(any::<usize>(), 0..10),
            len in 0usize..10,
            offset in any::<usize>(),
        ) {
            let ops: Vec<TxnOp> = (0..len).map(svc_op).collect();
            let errors: Vec<TxnErrorEntry> = indexes
                .iter()
                .map(|&op_index| TxnErrorEntry { op_index, what: String::new() })
                .collect();
            let failed = map_failed_ops(&errors, &ops, offset);
            prop_assert_eq!(failed.len(), errors.len());
            for (f, e) in failed.iter().zip(&errors) {
                prop_assert_eq!(f.op.is_some(), e.op_index < len);
            }
        }
    }
}
