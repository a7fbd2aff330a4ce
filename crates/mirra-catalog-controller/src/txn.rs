//! Sending one transaction: halving it after a 413, and reading entries
//! with read-only `get` transactions.
//!
//! This module must NOT decide what is sent or keep state between calls:
//! the writer does both.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};

use mirra_consul::TxnOp;
use mirra_runtime::WriteFence;

use crate::wire::{Wire, halve};

/// Consul's answer to one transaction.
pub(crate) type TxnAnswer = Result<Vec<mirra_consul::TxnResult>, mirra_consul::Error>;

/// What became of one packed transaction: the parts it was sent as (itself,
/// or smaller parts after 413s), each with its answer (`None`: not sent,
/// because a failure stopped the round), how many times a part was split,
/// and the operation limit a 413 named.
#[derive(Default)]
pub(crate) struct Sent {
    pub(crate) parts: Vec<(Wire, Option<TxnAnswer>)>,
    pub(crate) splits: usize,
    pub(crate) ops_limit: Option<usize>,
}

/// Sends one transaction; one refused with 413 is split in two halves (by
/// plan entry, never inside one) and each is sent the same way, in order,
/// until every part fits or is a single entry. A failure other than a
/// rollback or a 413 stops the round (`abort`).
pub(crate) async fn send_splitting(
    consul: &mirra_consul::Client,
    fence: &WriteFence,
    wire: Wire,
    abort: &AtomicBool,
) -> Sent {
    let mut sent = Sent::default();
    // Last in, first out: the first half is popped first.
    let mut todo = vec![wire];
    while let Some(part) = todo.pop() {
        if abort.load(Ordering::Relaxed) {
            sent.parts.push((part, None));
            continue;
        }
        let ops: Vec<TxnOp> = part.iter().map(|(o, _)| o.clone()).collect();
        let res = match fence.send(consul.txn(&ops)).await {
            Ok(res) => res,
            Err(fenced) => {
                // Nothing more of this round goes out: the keys stay
                // pending, as after a Consul error.
                tracing::debug!(error = %fenced, "transaction fenced");
                abort.store(true, Ordering::Relaxed);
                sent.parts.push((part, None));
                continue;
            }
        };
        let part = match &res {
            Err(e @ mirra_consul::Error::TooLarge { .. }) => {
                if let Some(limit) = e.txn_ops_limit() {
                    sent.ops_limit = Some(sent.ops_limit.map_or(limit, |l| l.min(limit)));
                }
                match halve(part) {
                    Ok((first, second)) => {
                        tracing::debug!(
                            ops = ops.len(),
                            error = %e,
                            "transaction too large; sending it as two halves"
                        );
                        sent.splits += 1;
                        todo.push(second);
                        todo.push(first);
                        continue;
                    }
                    Err(single) => single,
                }
            }
            Ok(_) | Err(mirra_consul::Error::TxnRolledBack { .. }) => part,
            Err(_) => {
                abort.store(true, Ordering::Relaxed);
                part
            }
        };
        sent.parts.push((part, Some(res)));
    }
    sent
}

/// Reads entries with read-only transactions of `get`s (no Raft apply), at
/// most `max` a transaction. Consul rolls such a transaction back when an
/// entry is absent, naming it, and then returns nothing else: absent
/// entries are taken out and the rest asked again, so a chunk costs at
/// most one more request per absent entry, and each round asks less.
pub(crate) async fn read_entries(
    consul: &mirra_consul::Client,
    ops: Vec<TxnOp>,
    max: usize,
) -> Result<Vec<mirra_consul::TxnResult>, mirra_consul::Error> {
    let mut out = Vec::new();
    let mut max = max.max(1);
    let mut rest: std::collections::VecDeque<TxnOp> = ops.into();
    while !rest.is_empty() {
        let take = max.min(rest.len());
        let mut chunk: Vec<TxnOp> = rest.drain(..take).collect();
        while !chunk.is_empty() {
            match consul.txn(&chunk).await {
                Ok(results) => {
                    out.extend(results);
                    break;
                }
                Err(mirra_consul::Error::TxnRolledBack { failed })
                    if !failed.is_empty()
                        && failed.iter().all(|f| f.is_missing() && f.index.is_some()) =>
                {
                    let gone: BTreeSet<usize> = failed.iter().filter_map(|f| f.index).collect();
                    chunk = chunk
                        .into_iter()
                        .enumerate()
                        .filter(|(j, _)| !gone.contains(j))
                        .map(|(_, op)| op)
                        .collect();
                }
                Err(e) => {
                    // A server's lower operation limit (64 before Consul
                    // 1.14): the rest of the read goes in parts it accepts.
                    let Some(limit) = e.txn_ops_limit_below(chunk.len()) else {
                        return Err(e);
                    };
                    max = limit;
                    for op in chunk.drain(..).rev() {
                        rest.push_front(op);
                    }
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use mirra_consul::{ConsulConfig, Service, TxnOp, Verb};

    use super::read_entries;

    fn get(id: &str) -> TxnOp {
        TxnOp::Service {
            verb: Verb::Get,
            node: "k8s-sync".into(),
            service: Service {
                id: id.into(),
                ..Service::default()
            },
        }
    }

    /// A read larger than the server's operation limit (as a server before
    /// Consul 1.14 has 64) goes in parts of the size the 413 names, and an
    /// absent entry in a part is left out as before.
    #[tokio::test]
    async fn a_read_over_the_servers_limit_goes_in_parts_of_that_limit() {
        let sandbox = consul_sandbox::Sandbox::start(consul_sandbox::Config {
            max_txn_ops: 4,
            ..consul_sandbox::Config::default()
        })
        .await
        .unwrap();
        let consul = mirra_consul::Client::new(ConsulConfig::new(&sandbox.url()).unwrap()).unwrap();
        let mut writes = vec![TxnOp::Node {
            verb: Verb::Set,
            node: mirra_consul::Node {
                node: "k8s-sync".into(),
                address: "127.0.0.1".into(),
                ..mirra_consul::Node::default()
            },
        }];
        writes.extend((0..9).map(|i| TxnOp::Service {
            verb: Verb::Set,
            node: "k8s-sync".into(),
            service: Service {
                id: format!("web-{i}"),
                service: "web".into(),
                ..Service::default()
            },
        }));
        consul.apply_ops(writes).await.unwrap();
        let before = sandbox.stats().requests_for("PUT /v1/txn");

        // Nine present and one absent (web-gone, the fifth), asked for 128
        // at a time.
        let mut ops: Vec<TxnOp> = (0..4).map(|i| get(&format!("web-{i}"))).collect();
        ops.push(get("web-gone"));
        ops.extend((4..9).map(|i| get(&format!("web-{i}"))));
        let results = read_entries(&consul, ops, 128).await.unwrap();

        let ids: Vec<String> = results
            .iter()
            .filter_map(|r| r.service.as_ref().map(|s| s.id.clone()))
            .collect();
        let want: Vec<String> = (0..9).map(|i| format!("web-{i}")).collect();
        assert_eq!(ids, want);
        // 10 > 4 refused; then [0..4), [gone, 4, 5, 6] rolled back for the
        // absent one and asked again without it, [7, 8].
        assert_eq!(sandbox.stats().requests_for("PUT /v1/txn") - before, 5);
    }
}
