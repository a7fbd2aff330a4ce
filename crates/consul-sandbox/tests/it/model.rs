//! Property test over HTTP: random sequences of registrations,
//! deregistrations and transactions leave the sandbox in the same state as
//! a deliberately simple model, `raft_applies` equals the number of write
//! requests, and every `ModifyIndex` equals the Raft index of the last
//! request that really changed that instance.

// Test helpers outside #[test] functions unwrap like the tests do.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::BTreeMap;

use common::Api;
use proptest::prelude::*;
use serde_json::{Value, json};

const NODES: [&str; 3] = ["n1", "n2", "n3"];
const IDS: [&str; 3] = ["a", "b", "c"];
const NAMES: [&str; 2] = ["web", "db"];

#[derive(Debug, Clone)]
enum TxOp {
    Set {
        node: usize,
        id: usize,
        name: usize,
        port: i64,
    },
    Delete {
        node: usize,
        id: usize,
    },
    /// A CAS with an index that can never match: always fails.
    StaleCas {
        node: usize,
        id: usize,
    },
    /// A `cas` naming the index the model holds for the instance (0 when
    /// it is absent: "only if absent"), or, with `current` false, one that
    /// does not match (0 for an existing instance, a later index else).
    Cas {
        node: usize,
        id: usize,
        name: usize,
        port: i64,
        current: bool,
    },
    /// A `delete-cas`, the index chosen as for [`TxOp::Cas`].
    DeleteCas {
        node: usize,
        id: usize,
        current: bool,
    },
}

/// The index a cas op names: the model's, or one that cannot match.
fn cas_index(existing: Option<u64>, current: bool) -> u64 {
    match (existing, current) {
        (Some(m), true) => m,
        (None, true) => 0,
        (Some(_), false) => 0,
        (None, false) => 1_000_000,
    }
}

#[derive(Debug, Clone)]
enum Op {
    Register {
        node: usize,
        id: usize,
        name: usize,
        port: i64,
        tags: Vec<String>,
    },
    DeregisterService {
        node: usize,
        id: usize,
    },
    DeregisterNode {
        node: usize,
    },
    Txn(Vec<TxOp>),
}

fn arb_txop() -> impl Strategy<Value = TxOp> {
    prop_oneof![
        4 => (0..3usize, 0..3usize, 0..2usize, 1..4i64).prop_map(|(node, id, name, port)| TxOp::Set { node, id, name, port }),
        2 => (0..3usize, 0..3usize).prop_map(|(node, id)| TxOp::Delete { node, id }),
        1 => (0..3usize, 0..3usize).prop_map(|(node, id)| TxOp::StaleCas { node, id }),
        3 => (0..3usize, 0..3usize, 0..2usize, 1..4i64, any::<bool>())
            .prop_map(|(node, id, name, port, current)| TxOp::Cas { node, id, name, port, current }),
        2 => (0..3usize, 0..3usize, any::<bool>())
            .prop_map(|(node, id, current)| TxOp::DeleteCas { node, id, current }),
    ]
}

fn arb_op() -> impl Strategy<Value = Op> {
    let tags = prop::collection::vec(
        prop::sample::select(vec!["k8s", "v1"]).prop_map(String::from),
        0..2,
    );
    prop_oneof![
        4 => (0..3usize, 0..3usize, 0..2usize, 1..4i64, tags)
            .prop_map(|(node, id, name, port, tags)| Op::Register { node, id, name, port, tags }),
        2 => (0..3usize, 0..3usize).prop_map(|(node, id)| Op::DeregisterService { node, id }),
        1 => (0..3usize).prop_map(|node| Op::DeregisterNode { node }),
        3 => prop::collection::vec(arb_txop(), 1..5).prop_map(Op::Txn),
    ]
}

/// Instance content plus the ModifyIndex the model expects.
#[derive(Debug, Clone, PartialEq)]
struct Inst {
    name: String,
    port: i64,
    tags: Vec<String>,
    modify: u64,
}

#[derive(Debug, Clone, Default, PartialEq)]
struct Model {
    nodes: BTreeMap<String, BTreeMap<String, Inst>>,
}

impl Model {
    /// Upserts; keeps the ModifyIndex when the content is identical.
    fn upsert(&mut self, node: &str, id: &str, name: &str, port: i64, tags: &[String], raft: u64) {
        let services = self.nodes.entry(node.to_string()).or_default();
        let fresh = Inst {
            name: name.into(),
            port,
            tags: tags.to_vec(),
            modify: raft,
        };
        match services.get(id) {
            Some(old)
                if old.name == fresh.name && old.port == fresh.port && old.tags == fresh.tags => {}
            _ => {
                services.insert(id.to_string(), fresh);
            }
        }
    }

    /// The ModifyIndex of instance `id` on `node`, if the model holds it.
    fn modify_index(&self, node: &str, id: &str) -> Option<u64> {
        self.nodes
            .get(node)
            .and_then(|s| s.get(id))
            .map(|i| i.modify)
    }
}

async fn observed(api: &Api) -> Model {
    let mut m = Model::default();
    for node in NODES {
        let r = api
            .get(&format!("/v1/catalog/node-services/{node}"))
            .await
            .json();
        if r["Node"].is_null() {
            continue;
        }
        let services = m.nodes.entry(node.to_string()).or_default();
        for s in r["Services"].as_array().into_iter().flatten() {
            services.insert(
                s["ID"].as_str().unwrap().to_string(),
                Inst {
                    name: s["Service"].as_str().unwrap().to_string(),
                    port: s["Port"].as_i64().unwrap(),
                    tags: serde_json::from_value(s["Tags"].clone()).unwrap(),
                    modify: s["ModifyIndex"].as_u64().unwrap(),
                },
            );
        }
    }
    m
}

async fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let api = Api::start().await;
    let mut model = Model::default();
    let mut raft = api.sb.stats().raft_index;
    for (done, op) in ops.into_iter().enumerate() {
        let writes = done as u64 + 1;
        raft += 1;
        match op {
            Op::Register {
                node,
                id,
                name,
                port,
                tags,
            } => {
                let r = api
                    .put("/v1/catalog/register", &json!({
                        "Node": NODES[node], "Address": "10.0.0.1",
                        "Service": {"ID": IDS[id], "Service": NAMES[name], "Port": port, "Tags": tags}
                    }))
                    .await;
                prop_assert_eq!(r.status, 200, "{}", r.text);
                model.upsert(NODES[node], IDS[id], NAMES[name], port, &tags, raft);
            }
            Op::DeregisterService { node, id } => {
                let r = api
                    .put(
                        "/v1/catalog/deregister",
                        &json!({"Node": NODES[node], "ServiceID": IDS[id]}),
                    )
                    .await;
                prop_assert_eq!(r.status, 200, "{}", r.text);
                if let Some(s) = model.nodes.get_mut(NODES[node]) {
                    s.remove(IDS[id]);
                }
            }
            Op::DeregisterNode { node } => {
                let r = api
                    .put("/v1/catalog/deregister", &json!({"Node": NODES[node]}))
                    .await;
                prop_assert_eq!(r.status, 200, "{}", r.text);
                model.nodes.remove(NODES[node]);
            }
            Op::Txn(txops) => {
                let mut next = model.clone();
                let mut ok = true;
                let mut body = Vec::new();
                for t in &txops {
                    match *t {
                        TxOp::Set {
                            node,
                            id,
                            name,
                            port,
                        } => {
                            body.push(json!({"Service": {"Verb": "set", "Node": NODES[node],
                                "Service": {"ID": IDS[id], "Service": NAMES[name], "Port": port}}}));
                            if next.nodes.contains_key(NODES[node]) {
                                next.upsert(NODES[node], IDS[id], NAMES[name], port, &[], raft);
                            } else {
                                ok = false;
                            }
                        }
                        TxOp::Delete { node, id } => {
                            body.push(json!({"Service": {"Verb": "delete", "Node": NODES[node],
                                "Service": {"ID": IDS[id], "Service": "any"}}}));
                            if let Some(s) = next.nodes.get_mut(NODES[node]) {
                                s.remove(IDS[id]);
                            }
                        }
                        TxOp::StaleCas { node, id } => {
                            body.push(json!({"Service": {"Verb": "cas", "Node": NODES[node],
                                "Service": {"ID": IDS[id], "Service": "web", "ModifyIndex": 1_000_000_000u64}}}));
                            ok = false;
                        }
                        // Ops of one transaction apply in order: the index
                        // an op must name is the one after the ops before it.
                        TxOp::Cas {
                            node,
                            id,
                            name,
                            port,
                            current,
                        } => {
                            let existing = next.modify_index(NODES[node], IDS[id]);
                            let index = cas_index(existing, current);
                            body.push(json!({"Service": {"Verb": "cas", "Node": NODES[node],
                                "Service": {"ID": IDS[id], "Service": NAMES[name], "Port": port, "ModifyIndex": index}}}));
                            if current && next.nodes.contains_key(NODES[node]) {
                                next.upsert(NODES[node], IDS[id], NAMES[name], port, &[], raft);
                            } else {
                                ok = false;
                            }
                        }
                        TxOp::DeleteCas { node, id, current } => {
                            let existing = next.modify_index(NODES[node], IDS[id]);
                            let index = cas_index(existing, current);
                            body.push(json!({"Service": {"Verb": "delete-cas", "Node": NODES[node],
                                "Service": {"ID": IDS[id], "Service": "any", "ModifyIndex": index}}}));
                            // Deleting what is absent fails a delete-cas.
                            if current && existing.is_some() {
                                if let Some(s) = next.nodes.get_mut(NODES[node]) {
                                    s.remove(IDS[id]);
                                }
                            } else {
                                ok = false;
                            }
                        }
                    }
                }
                let r = api.put("/v1/txn", &Value::Array(body)).await;
                prop_assert_eq!(r.status, if ok { 200 } else { 409 }, "{}", r.text);
                if ok {
                    model = next;
                }
            }
        }
        let stats = api.sb.stats();
        prop_assert_eq!(
            stats.raft_applies,
            writes,
            "one Raft apply per write request"
        );
        prop_assert_eq!(stats.raft_index, raft);
    }
    let seen = observed(&api).await;
    prop_assert_eq!(seen, model);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn sandbox_matches_a_simple_model(ops in prop::collection::vec(arb_op(), 1..30)) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(run(ops))?;
    }
}
