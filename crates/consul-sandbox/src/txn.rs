//! `PUT /v1/txn` for catalog operations (Node, Service, Check with the verbs
//! `get`, `set`, `cas`, `delete`, `delete-cas`).
//!
//! ```text
//!   ops ──> pre-check every op (verb, validation, ACL)    errors -> 409, no Raft
//!       ──> only `get`s?  read against the store            no Raft
//!       ──> else ONE Raft apply: dispatch every op in order
//!               any op failed -> roll back all, 409 {Results: null, Errors}
//!               else          -> commit,        200 {Results, Errors: null}
//! ```
//!
//! As in Consul, dispatch continues after a failed op so that the 409 lists
//! every failing `OpIndex`, and a failure during dispatch still costs the
//! Raft apply. KV operations are refused in the pre-check: the sandbox has
//! no KV store.
//!
//! This module must NOT parse HTTP; it works on decoded ops.

use serde_json::{Value, json};

use crate::acl::{AclAccess, AclResource, Authz};
use crate::catalog::{check_rec, service_pre_apply, service_rec, validate_node_id};
use crate::decode::{CheckIn, NodeIn, ServiceIn, TxnOpIn};
use crate::model::{DEFAULT_TENANCY, NodeRec};
use crate::store::{ReadFilter, Store, StoreError, Tx, go_quote};
use crate::tenancy::Scope;

/// A namespace or partition the pre-check resolved ("" without Enterprise
/// features, which stores none).
fn opt(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_string())
}

/// The partition an op's resolved `Partition` names (empty without
/// Enterprise features: the default one).
fn part(p: &str) -> &str {
    if p.is_empty() { DEFAULT_TENANCY } else { p }
}

/// Outcome of a transaction that passed decoding and size limits.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TxnOutcome {
    /// 200 on success, 409 when rolled back.
    pub status: u16,
    /// `{"Results": ..., "Errors": ...}`.
    pub body: Value,
    /// Whether the transaction went through Raft (it had writes and passed
    /// the pre-check).
    pub raft_applied: bool,
    /// Whether content changed (blocked readers should look again).
    pub changed: bool,
}

fn verb_is_known(verb: &str) -> bool {
    matches!(verb, "get" | "set" | "cas" | "delete" | "delete-cas")
}

fn op_error(index: usize, what: impl Into<String>) -> Value {
    json!({ "OpIndex": index, "What": what.into() })
}

fn conflict(errors: Vec<Value>) -> Value {
    json!({ "Results": null, "Errors": errors })
}

/// Runs a decoded transaction against the store.
pub(crate) fn run(
    store: &mut Store,
    mut ops: Vec<TxnOpIn>,
    authz: &Authz,
    local_dc: &str,
    scope: &Scope,
) -> TxnOutcome {
    let errors = pre_check(store, &mut ops, authz, local_dc, scope);
    if !errors.is_empty() {
        return TxnOutcome {
            status: 409,
            body: conflict(errors),
            raft_applied: false,
            changed: false,
        };
    }
    let writes = ops
        .iter()
        .any(|op| Target::of(op).is_some_and(|(verb, _)| verb != "get"));
    if !writes {
        let (results, errors) = read_only(store, &ops);
        return finish(results, errors, authz, false, false);
    }
    let (outcome, changed) = store.apply(true, |tx| {
        let mut results = Vec::new();
        let mut errors = Vec::new();
        for (i, op) in ops.iter().enumerate() {
            match dispatch(tx, op) {
                Ok(Some(r)) => results.push(r),
                Ok(None) => {}
                Err(what) => errors.push(op_error(i, what)),
            }
        }
        if errors.is_empty() {
            Ok(results)
        } else {
            Err(errors)
        }
    });
    match outcome {
        Ok(results) => finish(results, Vec::new(), authz, true, changed),
        Err(errors) => finish(Vec::new(), errors, authz, true, false),
    }
}

fn finish(
    results: Vec<Value>,
    errors: Vec<Value>,
    authz: &Authz,
    raft_applied: bool,
    changed: bool,
) -> TxnOutcome {
    if !errors.is_empty() {
        return TxnOutcome {
            status: 409,
            body: conflict(errors),
            raft_applied,
            changed,
        };
    }
    // Like Consul's FilterTxnResults: results the token may not read vanish.
    let results: Vec<Value> = results.into_iter().filter(|r| readable(r, authz)).collect();
    TxnOutcome {
        status: 200,
        body: json!({ "Results": results, "Errors": null }),
        raft_applied,
        changed,
    }
}

fn readable(result: &Value, authz: &Authz) -> bool {
    let partition = |v: &Value| {
        v["Partition"]
            .as_str()
            .unwrap_or(DEFAULT_TENANCY)
            .to_string()
    };
    if let Some(n) = result.get("Node") {
        return authz.node_read(&partition(n), n["Node"].as_str().unwrap_or_default());
    }
    if let Some(s) = result.get("Service") {
        return authz.service_read(
            &partition(s),
            s["Namespace"].as_str().unwrap_or(DEFAULT_TENANCY),
            s["Service"].as_str().unwrap_or_default(),
        );
    }
    if let Some(c) = result.get("Check") {
        let service = c["ServiceName"].as_str().unwrap_or_default();
        return if service.is_empty() {
            authz.node_read(&partition(c), c["Node"].as_str().unwrap_or_default())
        } else {
            authz.service_read(
                &partition(c),
                c["Namespace"].as_str().unwrap_or(DEFAULT_TENANCY),
                service,
            )
        };
    }
    true
}

/// Consul's `Txn.preCheck`: verbs, argument validation and ACLs, for every
/// op (all errors are reported). Also applies the defaults Consul fills in
/// before Raft (service ID from its name, check ID from its name, node
/// datacenter).
fn pre_check(
    store: &Store,
    ops: &mut [TxnOpIn],
    authz: &Authz,
    local_dc: &str,
    scope: &Scope,
) -> Vec<Value> {
    let mut errors = Vec::new();
    for (i, op) in ops.iter_mut().enumerate() {
        if let Err(what) = resolve_tenancy(store, op, scope) {
            errors.push(op_error(i, what));
            continue;
        }
        let result: Result<(), String> = match op {
            TxnOpIn::Kv => Err("KV operations are not supported by consul-sandbox".into()),
            TxnOpIn::Empty => Err("unknown operation type".into()),
            TxnOpIn::Node { verb, node } => {
                if node.datacenter.is_empty() {
                    node.datacenter = local_dc.to_string();
                }
                if !verb_is_known(verb) {
                    Err(format!("unknown node operation: {verb}"))
                } else if verb == "get" {
                    Ok(())
                } else if node.node.is_empty() {
                    Err("Must provide node".into())
                } else {
                    validate_node_id(&node.id).and_then(|()| {
                        authz
                            .require_part(
                                AclResource::Node,
                                part(&node.partition),
                                DEFAULT_TENANCY,
                                &node.node,
                                AclAccess::Write,
                            )
                            .map_err(|e| e.to_string())
                    })
                }
            }
            TxnOpIn::Service {
                verb,
                node,
                service,
            } => {
                if !verb_is_known(verb) {
                    Err(format!("unknown service operation: {verb}"))
                } else if verb == "get" {
                    if service.id.is_empty() {
                        service.id = service.service.clone();
                    }
                    Ok(())
                } else {
                    service_pre_apply(service).and_then(|()| {
                        if let Some(existing) =
                            store.service_in(part(&service.partition), node, &service.id)
                            && authz.enforced()
                            && existing.name != service.service
                        {
                            return Err(format!(
                                "service name does not match existing service name for service ID {} on node {}",
                                go_quote(&service.id),
                                go_quote(node)
                            ));
                        }
                        let ns = opt(&service.namespace);
                        authz
                            .require_part(
                                AclResource::Service,
                                part(&service.partition),
                                ns.as_deref().unwrap_or(DEFAULT_TENANCY),
                                &service.service,
                                AclAccess::Write,
                            )
                            .map_err(|e| e.to_string())
                    })
                }
            }
            TxnOpIn::Check { verb, check } => {
                if check.check_id.is_empty() && !check.name.is_empty() {
                    check.check_id = check.name.clone();
                }
                if !verb_is_known(verb) {
                    Err(format!("unknown check operation: {verb}"))
                } else if verb == "get" || !authz.enforced() {
                    Ok(())
                } else {
                    vet_check(store, check, authz)
                }
            }
        };
        if let Err(what) = result {
            errors.push(op_error(i, what));
        }
    }
    errors
}

/// Fills in the namespace and partition each op lands in (left empty
/// without Enterprise features), or the error that refuses the op.
fn resolve_tenancy(store: &Store, op: &mut TxnOpIn, scope: &Scope) -> Result<(), String> {
    match op {
        TxnOpIn::Node { node, .. } => {
            node.partition = scope
                .data_partition(store, &[&node.partition])
                .map_err(|e| e.to_string())?
                .unwrap_or_default();
        }
        TxnOpIn::Service { service, .. } => {
            service.partition = scope
                .data_partition(store, &[&service.partition])
                .map_err(|e| e.to_string())?
                .unwrap_or_default();
            service.namespace = scope
                .write_ns(store, part(&service.partition), &[&service.namespace])
                .map_err(|e| e.to_string())?
                .unwrap_or_default();
        }
        TxnOpIn::Check { check, .. } => {
            check.partition = scope
                .data_partition(store, &[&check.partition])
                .map_err(|e| e.to_string())?
                .unwrap_or_default();
            // A service's check lives in the namespace its op names (as the
            // service op beside it does); a node's check in `default`.
            check.namespace = if !scope.enterprise {
                String::new()
            } else if check.service_id.is_empty() {
                DEFAULT_TENANCY.to_string()
            } else {
                scope
                    .write_ns(store, part(&check.partition), &[&check.namespace])
                    .map_err(|e| e.to_string())?
                    .unwrap_or_default()
            };
        }
        TxnOpIn::Kv | TxnOpIn::Empty => {}
    }
    Ok(())
}

/// ACL vetting of a check op against the stored binding when there is one.
fn vet_check(store: &Store, check: &crate::decode::CheckIn, authz: &Authz) -> Result<(), String> {
    let p = part(&check.partition);
    let (node, service_id, service_name) = match store.check_in(p, &check.node, &check.check_id) {
        Some(existing) => (
            existing.node.clone(),
            existing.service_id.clone(),
            existing.service_name.clone(),
        ),
        None => (
            check.node.clone(),
            check.service_id.clone(),
            check.service_name.clone(),
        ),
    };
    if service_id.is_empty() {
        return authz
            .require_part(
                AclResource::Node,
                p,
                DEFAULT_TENANCY,
                &node,
                AclAccess::Write,
            )
            .map_err(|e| e.to_string());
    }
    let name = match store.service_in(p, &node, &service_id) {
        Some(s) => s.name.clone(),
        None if !service_name.is_empty() => service_name,
        None => {
            return Err(format!(
                "unknown service ID {} for check ID {}",
                go_quote(&service_id),
                go_quote(&check.check_id)
            ));
        }
    };
    // As Consul vets a check op: in the namespace the op names (resolved
    // before this), not the stored service's.
    let namespace = if check.namespace.is_empty() {
        store
            .service_in(p, &node, &service_id)
            .map_or(DEFAULT_TENANCY, |s| s.namespace())
    } else {
        check.namespace.as_str()
    };
    authz
        .require_part(AclResource::Service, p, namespace, &name, AclAccess::Write)
        .map_err(|e| e.to_string())
}

fn node_rec(n: &NodeIn) -> NodeRec {
    NodeRec {
        id: n.id.clone(),
        name: n.node.clone(),
        address: n.address.clone(),
        datacenter: n.datacenter.clone(),
        tagged_addresses: n.tagged_addresses.clone(),
        meta: n.meta.clone(),
        partition: opt(&n.partition),
        create_index: 0,
        modify_index: 0,
    }
}

/// Consul's CAS rule: index 0 means "only if absent", otherwise the stored
/// ModifyIndex must match.
fn cas_ok(wanted: u64, existing: Option<u64>) -> bool {
    match (wanted, existing) {
        (0, None) => true,
        (0, Some(_)) | (_, None) => false,
        (w, Some(e)) => w == e,
    }
}

/// The catalog record an op names.
#[derive(Clone, Copy)]
enum Target<'a> {
    Node(&'a NodeIn),
    /// A service instance on the named node.
    Service(&'a str, &'a ServiceIn),
    Check(&'a CheckIn),
}

impl<'a> Target<'a> {
    /// The verb of `op` and the record it names; `None` for an op on no
    /// catalog record (KV or empty).
    fn of(op: &'a TxnOpIn) -> Option<(&'a str, Target<'a>)> {
        match op {
            TxnOpIn::Node { verb, node } => Some((verb, Target::Node(node))),
            TxnOpIn::Service {
                verb,
                node,
                service,
            } => Some((verb, Target::Service(node, service))),
            TxnOpIn::Check { verb, check } => Some((verb, Target::Check(check))),
            TxnOpIn::Kv | TxnOpIn::Empty => None,
        }
    }

    /// The record as Consul's error texts name it.
    fn describe(self) -> String {
        match self {
            Target::Node(n) => format!("node {}", go_quote(&n.node)),
            Target::Service(node, s) => {
                format!("service {} on node {}", go_quote(&s.id), go_quote(node))
            }
            Target::Check(c) => format!(
                "check {} on node {}",
                go_quote(&c.check_id),
                go_quote(&c.node)
            ),
        }
    }

    /// The stored record as a result entry, if it exists.
    fn result(self, store: &Store) -> Option<Value> {
        match self {
            Target::Node(n) => store
                .node_in(part(&n.partition), &n.node)
                .map(|n| json!({ "Node": n.to_json() })),
            Target::Service(node, s) => store
                .service_in(part(&s.partition), node, &s.id)
                .map(|s| json!({ "Service": s.to_node_service_json(false) })),
            Target::Check(c) => store
                .check_in(part(&c.partition), &c.node, &c.check_id)
                .map(|c| json!({ "Check": c.to_json() })),
        }
    }

    /// The stored record's `ModifyIndex`, if it exists.
    fn stored_index(self, store: &Store) -> Option<u64> {
        match self {
            Target::Node(n) => store
                .node_in(part(&n.partition), &n.node)
                .map(|n| n.modify_index),
            Target::Service(node, s) => store
                .service_in(part(&s.partition), node, &s.id)
                .map(|s| s.modify_index),
            Target::Check(c) => store
                .check_in(part(&c.partition), &c.node, &c.check_id)
                .map(|c| c.modify_index),
        }
    }

    /// The op's `ModifyIndex`, which `cas` and `delete-cas` compare.
    fn op_index(self) -> u64 {
        match self {
            Target::Node(n) => n.modify_index,
            Target::Service(_, s) => s.modify_index,
            Target::Check(c) => c.modify_index,
        }
    }

    /// Writes the op's record.
    fn ensure(self, tx: &mut Tx<'_>) -> Result<(), StoreError> {
        match self {
            Target::Node(n) => {
                tx.ensure_node(node_rec(n));
                Ok(())
            }
            Target::Service(node, s) => {
                tx.ensure_service(service_rec(node, s, opt(&s.namespace), opt(&s.partition)))
            }
            Target::Check(c) => tx.ensure_check(check_rec(c, opt(&c.namespace), opt(&c.partition))),
        }
    }

    /// Deletes the record (a missing one is a no-op).
    fn delete(self, tx: &mut Tx<'_>) {
        match self {
            Target::Node(n) => tx.delete_node_in(part(&n.partition), &n.node),
            Target::Service(node, s) => tx.delete_service_in(part(&s.partition), node, &s.id),
            Target::Check(c) => tx.delete_check_in(part(&c.partition), &c.node, &c.check_id),
        }
    }
}

/// Applies one op inside the Raft apply; `Ok(Some)` carries a result entry.
fn dispatch(tx: &mut Tx<'_>, op: &TxnOpIn) -> Result<Option<Value>, String> {
    let Some((verb, target)) = Target::of(op) else {
        return Err("unknown operation type".into());
    };
    let stale = |what: &str| format!("failed to {what} {}, index is stale", target.describe());
    match verb {
        "get" => get(tx.store(), target).map(Some),
        "set" => set(tx, target),
        "cas" => {
            if !cas_ok(target.op_index(), target.stored_index(tx.store())) {
                return Err(stale("set"));
            }
            set(tx, target)
        }
        "delete" => {
            target.delete(tx);
            Ok(None)
        }
        _ => {
            let existing = target.stored_index(tx.store());
            if existing.is_none() || existing != Some(target.op_index()) {
                return Err(stale("delete"));
            }
            target.delete(tx);
            Ok(None)
        }
    }
}

/// A `set` (or a `cas` that passed): the record written, and as stored.
fn set(tx: &mut Tx<'_>, target: Target<'_>) -> Result<Option<Value>, String> {
    target.ensure(tx).map_err(|e| e.to_string())?;
    Ok(target.result(tx.store()))
}

/// A `get`: the stored record, or why there is none.
fn get(store: &Store, target: Target<'_>) -> Result<Value, String> {
    target
        .result(store)
        .ok_or_else(|| format!("{} doesn't exist", target.describe()))
}

/// A transaction made only of `get`s: Consul serves it without Raft.
fn read_only(store: &Store, ops: &[TxnOpIn]) -> (Vec<Value>, Vec<Value>) {
    let mut results = Vec::new();
    let mut errors = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        let read = Target::of(op)
            .ok_or_else(|| "unknown operation type".to_string())
            .and_then(|(_, target)| get(store, target));
        match read {
            Ok(r) => results.push(r),
            Err(what) => errors.push(op_error(i, what)),
        }
    }
    (results, errors)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode;

    fn run_json(st: &mut Store, body: Value) -> TxnOutcome {
        let ops = decode::txn(&serde_json::to_vec(&body).unwrap()).unwrap();
        run(st, ops, &Authz::Disabled, "dc1", &Scope::ce())
    }

    fn seed(st: &mut Store) {
        let out = run_json(
            st,
            json!([
                {"Node": {"Verb": "set", "Node": {"Node": "n1", "Address": "10.0.0.1"}}},
                {"Service": {"Verb": "set", "Node": "n1", "Service": {"ID": "web-1", "Service": "web", "Port": 80}}},
            ]),
        );
        assert_eq!(out.status, 200, "{}", out.body);
    }

    #[test]
    fn a_transaction_is_one_raft_apply_and_returns_results() {
        let mut st = Store::default();
        seed(&mut st);
        assert_eq!(st.raft_applies(), 1);
        let s = st.service("n1", "web-1").unwrap();
        assert_eq!((s.create_index, s.modify_index), (1, 1));
        let out = run_json(
            &mut st,
            json!([
                {"Service": {"Verb": "set", "Node": "n1", "Service": {"ID": "web-2", "Service": "web", "Port": 81}}},
                {"Service": {"Verb": "delete", "Node": "n1", "Service": {"ID": "web-1", "Service": "web"}}},
            ]),
        );
        assert_eq!(out.status, 200);
        assert_eq!(out.body["Errors"], Value::Null);
        let results = out.body["Results"].as_array().unwrap();
        assert_eq!(results.len(), 1, "deletes return no result");
        assert_eq!(results[0]["Service"]["ID"], "web-2");
        assert_eq!(results[0]["Service"]["ModifyIndex"], 2);
        assert_eq!(st.raft_applies(), 2);
    }

    #[test]
    fn one_failing_op_rolls_back_all_and_reports_its_index() {
        let mut st = Store::default();
        seed(&mut st);
        let before = st.clone();
        let out = run_json(
            &mut st,
            json!([
                {"Service": {"Verb": "set", "Node": "n1", "Service": {"ID": "web-2", "Service": "web"}}},
                {"Service": {"Verb": "cas", "Node": "n1", "Service": {"ID": "web-1", "Service": "web", "Port": 9, "ModifyIndex": 999}}},
                {"Service": {"Verb": "set", "Node": "ghost", "Service": {"ID": "x", "Service": "x"}}},
            ]),
        );
        assert_eq!(out.status, 409);
        assert_eq!(out.body["Results"], Value::Null);
        assert_eq!(
            out.body["Errors"],
            json!([
                {"OpIndex": 1, "What": "failed to set service \"web-1\" on node \"n1\", index is stale"},
                {"OpIndex": 2, "What": "Missing node registration"},
            ])
        );
        assert!(out.raft_applied, "state-store failures happen after Raft");
        let mut expected = before;
        let _ = expected.apply(true, |_| Err::<(), ()>(()));
        assert_eq!(st, expected, "nothing applied besides the Raft counter");
    }

    #[test]
    fn cas_with_the_current_index_succeeds() {
        let mut st = Store::default();
        seed(&mut st);
        let out = run_json(
            &mut st,
            json!([
                {"Service": {"Verb": "cas", "Node": "n1", "Service": {"ID": "web-1", "Service": "web", "Port": 90, "ModifyIndex": 1}}},
                {"Service": {"Verb": "cas", "Node": "n1", "Service": {"ID": "new", "Service": "web", "ModifyIndex": 0}}},
            ]),
        );
        assert_eq!(out.status, 200, "{}", out.body);
        assert_eq!(st.service("n1", "web-1").unwrap().port, 90);
        let out = run_json(
            &mut st,
            json!([
                {"Service": {"Verb": "delete-cas", "Node": "n1", "Service": {"ID": "web-1", "Service": "web", "ModifyIndex": 1}}},
            ]),
        );
        assert_eq!(out.status, 409);
        let out = run_json(
            &mut st,
            json!([
                {"Service": {"Verb": "delete-cas", "Node": "n1", "Service": {"ID": "web-1", "Service": "web", "ModifyIndex": 2}}},
            ]),
        );
        assert_eq!(out.status, 200, "{}", out.body);
        assert!(st.service("n1", "web-1").is_none());
    }

    #[test]
    fn pre_check_errors_never_reach_raft() {
        let mut st = Store::default();
        let out = run_json(
            &mut st,
            json!([
                {"Service": {"Verb": "SET", "Node": "n1", "Service": {"Service": "web"}}},
                {"Node": {"Verb": "set", "Node": {"Address": "a"}}},
                {"KV": {"Verb": "set", "Key": "k"}},
                {},
                {"Check": {"Verb": "bogus", "Check": {}}},
                {"Service": {"Verb": "set", "Node": "n1", "Service": {"ID": "x"}}},
            ]),
        );
        assert_eq!(out.status, 409);
        assert!(!out.raft_applied);
        let whats: Vec<(u64, String)> = out.body["Errors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["OpIndex"].as_u64().unwrap(),
                    e["What"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        assert_eq!(whats[0], (0, "unknown service operation: SET".to_string()));
        assert_eq!(whats[1], (1, "Must provide node".to_string()));
        assert_eq!(whats[2].0, 2);
        assert_eq!(whats[3], (3, "unknown operation type".to_string()));
        assert_eq!(whats[4], (4, "unknown check operation: bogus".to_string()));
        assert_eq!(whats[5].0, 5);
        assert_eq!(st.raft_applies(), 0);
    }

    #[test]
    fn read_only_transactions_skip_raft() {
        let mut st = Store::default();
        seed(&mut st);
        let out = run_json(
            &mut st,
            json!([
                {"Node": {"Verb": "get", "Node": {"Node": "n1"}}},
                {"Service": {"Verb": "get", "Node": "n1", "Service": {"ID": "web-1"}}},
            ]),
        );
        assert_eq!(out.status, 200);
        assert!(!out.raft_applied);
        assert_eq!(st.raft_applies(), 1);
        assert_eq!(out.body["Results"][0]["Node"]["Node"], "n1");
        assert_eq!(out.body["Results"][1]["Service"]["Port"], 80);
        let out = run_json(
            &mut st,
            json!([{"Node": {"Verb": "get", "Node": {"Node": "nope"}}}]),
        );
        assert_eq!(out.status, 409);
        assert_eq!(out.body["Errors"][0]["What"], "node \"nope\" doesn't exist");
    }

    #[test]
    fn check_ops() {
        let mut st = Store::default();
        seed(&mut st);
        let out = run_json(
            &mut st,
            json!([
                {"Check": {"Verb": "set", "Check": {"Node": "n1", "Name": "alive", "ServiceID": "web-1", "Status": "passing"}}},
            ]),
        );
        assert_eq!(out.status, 200, "{}", out.body);
        assert_eq!(out.body["Results"][0]["Check"]["CheckID"], "alive");
        assert_eq!(out.body["Results"][0]["Check"]["ServiceName"], "web");
        let out = run_json(
            &mut st,
            json!([
                {"Check": {"Verb": "delete-cas", "Check": {"Node": "n1", "CheckID": "alive", "ModifyIndex": 7}}},
            ]),
        );
        assert_eq!(
            out.body["Errors"][0]["What"],
            "failed to delete check \"alive\" on node \"n1\", index is stale"
        );
    }
}
