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
    for mut chunk in mirra_consul::split_ops(ops, max) {
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
                Err(e) => return Err(e),
            }
        }
    }
    Ok(out)
}
