//! Sending packed transactions: concurrency, the node-first transaction,
//! rollbacks re-sent without the refused entries, and 413s.

use std::collections::BTreeSet;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::StreamExt;
use mirra_catalog::ServiceKey;
use mirra_consul::TxnOp;

use super::{Report, Reports, TxnWriter, WriteOutcome};
use crate::round::Planned;
use crate::txn::send_splitting;
use crate::wire::{NODE_OP, to_txn_ops};

/// What sending a write's transactions came to.
pub(super) struct Chunks {
    pub(super) outcome: WriteOutcome,
    /// Plan entries refused by a failed `cas`.
    pub(super) stale: BTreeSet<usize>,
    /// The first error that stopped the write, when Consul was unavailable
    /// (or refused us) rather than refusing the content.
    pub(super) stopped_by: Option<mirra_consul::Error>,
}

impl TxnWriter {
    /// The sending half of [`TxnWriter::write`]. Also returns the plan
    /// entries refused by a failed `cas` (their instances are to be read
    /// again), and the error that stopped the write when Consul was
    /// unavailable.
    pub(super) async fn send_chunks(
        &mut self,
        chunks: Vec<Vec<usize>>,
        planned: &Arc<Vec<Planned>>,
        reports: &Reports,
    ) -> Chunks {
        let mut failed = BTreeSet::new();
        let mut orphan_failed = false;
        let mut conflicted = BTreeSet::new();
        let mut stale_entries: BTreeSet<usize> = BTreeSet::new();
        let (node, node_op) = (self.node.clone(), self.node_op.clone());
        let consul = self.consul.clone();
        let fence = self.fence.clone();
        // Set by a failure that is not a rollback or a 413 (Consul down,
        // 5xx, 403): transactions not yet sent are not sent, and stay
        // pending.
        let abort = AtomicBool::new(false);
        // The transaction that creates our node (always the first) must
        // commit before any other is sent: Consul refuses a service on a
        // node that does not exist yet.
        let creates_node_first = chunks.first().is_some_and(|c| c.contains(&NODE_OP));
        let (node_done, node_settled) = tokio::sync::watch::channel(!creates_node_first);
        let wire_of = |chunk: &[usize]| -> Vec<(TxnOp, usize)> {
            chunk
                .iter()
                .flat_map(|&i| match planned.get(i) {
                    Some(p) => to_txn_ops(p, &node)
                        .into_iter()
                        .map(|op| (op, i))
                        .collect::<Vec<_>>(),
                    None => vec![(node_op.clone(), i)],
                })
                .collect()
        };
        let sends = futures::stream::iter(chunks)
            .map(|chunk| {
                let (consul, abort, node_done, fence) = (&consul, &abort, &node_done, &fence);
                let mut node_settled = node_settled.clone();
                let creates_node = chunk.contains(&NODE_OP);
                let wire = wire_of(&chunk);
                async move {
                    if !creates_node {
                        // Err only when the sender is gone, i.e. never here.
                        let _ = node_settled.wait_for(|done| *done).await;
                    }
                    // Halves of a transaction refused as too large are sent
                    // here, in order, before the node counts as settled.
                    let sent = send_splitting(consul, fence, wire, abort).await;
                    node_done.send_replace(true);
                    sent
                }
            })
            .buffered(self.txn_concurrency.max(1));
        let mut sends = pin!(sends);
        let mut mark_failed = |idx: usize, failed: &mut BTreeSet<ServiceKey>| match planned
            .get(idx)
            .and_then(|p| p.key.clone())
        {
            Some(k) => {
                failed.insert(k);
            }
            None => orphan_failed = true,
        };
        // The first error that stopped the round, when Consul was
        // unavailable (or refused us) rather than refusing the content.
        let mut stopped_by: Option<mirra_consul::Error> = None;
        while let Some(sent) = sends.next().await {
            for _ in 0..sent.splits {
                self.metrics.txn_split();
            }
            if let Some(limit) = sent.ops_limit {
                self.learn_ops_limit(limit);
            }
            for (mut chunk, res) in sent.parts {
                let mut res = match res {
                    Some(r) => r,
                    None => {
                        for (_, i) in &chunk {
                            mark_failed(*i, &mut failed);
                        }
                        continue;
                    }
                };
                // A rolled-back transaction is re-sent without the refused
                // entries, here and at once: the rest of it is still wanted.
                loop {
                    match res {
                        Ok(results) => {
                            self.metrics.transaction();
                            self.committed(&chunk, planned, results, reports);
                            break;
                        }
                        Err(mirra_consul::Error::TxnRolledBack { failed: bad }) => {
                            self.metrics.consul_error("txn_rolled_back");
                            let bad_idx: BTreeSet<usize> =
                                bad.iter().filter_map(|f| f.index).collect();
                            let stale: BTreeSet<usize> = bad
                                .iter()
                                .filter(|f| f.is_cas_conflict())
                                .filter_map(|f| f.index)
                                .collect();
                            if stale.is_empty() {
                                tracing::warn!(
                                    failed = bad.len(),
                                    "transaction rolled back; dropping the refused operations"
                                );
                            } else {
                                // Someone changed what we planned from (or
                                // our view lagged): expected under
                                // concurrent writers, so not a warning.
                                tracing::debug!(
                                    failed = bad.len(),
                                    stale = stale.len(),
                                    "catalog changed since planned; re-reading the refused instances"
                                );
                            }
                            if bad_idx.is_empty() {
                                for (_, i) in &chunk {
                                    mark_failed(*i, &mut failed);
                                }
                                break;
                            }
                            // A refused operation fails its whole plan entry.
                            let bad_entries: BTreeSet<usize> = chunk
                                .iter()
                                .enumerate()
                                .filter(|(j, _)| bad_idx.contains(j))
                                .map(|(_, (_, i))| *i)
                                .collect();
                            let stale_here: BTreeSet<usize> = chunk
                                .iter()
                                .enumerate()
                                .filter(|(j, _)| stale.contains(j))
                                .map(|(_, (_, i))| *i)
                                .collect();
                            // Counted by plan entry: a registration is two
                            // operations, usually both refused.
                            self.metrics
                                .cas_conflicts(u64::try_from(stale_here.len()).unwrap_or(0));
                            for i in &bad_entries {
                                if *i == NODE_OP && stale_here.contains(i) {
                                    // Our node is created with `cas` index
                                    // 0: it exists already (someone else
                                    // made it, or our read lagged), and an
                                    // existing node is never rewritten.
                                    let _ = reports.send(Report::NodeExists);
                                } else if stale_here.contains(i) {
                                    // Other refusals of the same entry
                                    // follow from the stale precondition
                                    // (e.g. a check on an instance that is
                                    // gone); a real fault shows again once
                                    // it is planned from a fresh read.
                                    stale_entries.insert(*i);
                                    match planned.get(*i).and_then(|p| p.key.clone()) {
                                        Some(k) => {
                                            conflicted.insert(k);
                                        }
                                        None => mark_failed(*i, &mut failed),
                                    }
                                } else {
                                    mark_failed(*i, &mut failed);
                                }
                            }
                            chunk.retain(|(_, i)| !bad_entries.contains(i));
                            if chunk.is_empty() {
                                break;
                            }
                            let ops: Vec<TxnOp> = chunk.iter().map(|(o, _)| o.clone()).collect();
                            match fence.send(consul.txn(&ops)).await {
                                Ok(r) => res = r,
                                Err(fenced) => {
                                    // Nothing more of this round goes out:
                                    // the keys stay pending.
                                    tracing::debug!(error = %fenced, "transaction fenced");
                                    abort.store(true, Ordering::Relaxed);
                                    for (_, i) in &chunk {
                                        mark_failed(*i, &mut failed);
                                    }
                                    break;
                                }
                            }
                        }
                        Err(e @ mirra_consul::Error::TooLarge { .. }) => {
                            self.metrics.consul_error(e.class());
                            if !self.hold_back_too_large(&chunk, planned, &e) {
                                for (_, i) in &chunk {
                                    mark_failed(*i, &mut failed);
                                }
                            }
                            break;
                        }
                        Err(e) => {
                            self.metrics.consul_error(e.class());
                            tracing::warn!(error = %e, "writing to Consul failed; the work stays queued");
                            abort.store(true, Ordering::Relaxed);
                            for (_, i) in &chunk {
                                mark_failed(*i, &mut failed);
                            }
                            stopped_by.get_or_insert(e);
                            break;
                        }
                    }
                }
            }
        }
        // A Service with an entry that failed for another reason counts as
        // failed; conflicted lists only the ones merely behind.
        conflicted.retain(|k| !failed.contains(k));
        Chunks {
            outcome: WriteOutcome {
                failed,
                orphan_failed,
                conflicted,
            },
            stale: stale_entries,
            stopped_by,
        }
    }
}
