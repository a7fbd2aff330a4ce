//! The Consul writer: packs planned operations into `/v1/txn`
//! transactions and sends them.
//!
//! [`TxnWriter`] owns everything about sending: packing plan entries into
//! transactions of at most `-txn-batch-size` operations (the node's
//! creation first, committed before anything else is sent), up to
//! `-txn-concurrency` transactions in flight, the leader write fence, the
//! pause of the whole-node reads while writing, Consul namespaces created
//! on demand (`namespaces`) and warning Events. It runs as its own task
//! ([`spawn`]): the event loop hands it [`Job`]s and keeps taking in watch
//! events and Consul answers meanwhile; what commits comes back as
//! [`Report`]s, in the order it happened, which the event loop folds into
//! the [`crate::index::CatalogIndex`].
//!
//! Failure handling:
//!
//! - **413** (a transaction over the server's operation limit or
//!   `txn_max_req_len`): the transaction is sent again as two halves, and
//!   halved again until each part fits; a limit the server names is used
//!   for the transactions after. A registration refused even alone is
//!   reported (log naming the Service and instance, metrics) and held back
//!   until it changes; the rest of its transaction and round commit.
//! - **Consul unavailable** (no cluster leader, 5xx, 429, connection
//!   errors, timeouts): the round stops, its keys stay pending, and the
//!   report says so; the event loop then backs off as a whole (`backoff`):
//!   no round starts before the jittered, capped, exponentially growing
//!   delay has passed, and a round in which Consul answered resets it.
//! - **A failed precondition** (409 `... index is stale`): every write is
//!   a `cas`/`delete-cas` naming the `ModifyIndex` it was planned from, so
//!   Consul refuses one planned from a state that changed since. The rest
//!   of the transaction is sent again at once; the refused entries are
//!   reported, read again (`reread`: a read-only `get` transaction, no
//!   Raft apply) and folded into the index, and their Services are planned
//!   again after the queue's backoff: never resent as they were.
//!
//! This module must NOT plan (it sends what [`crate::round`] planned, as
//! planned), touch the index (it has none: what it needs of it comes with
//! the job), touch the work queue, or retry individual HTTP requests
//! (mirra-consul does).

mod dry_run;
mod namespaces;
mod reread;
mod send;
pub(crate) mod task;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use mirra_catalog::{CatalogOp, ServiceKey};
use mirra_consul::TxnOp;
use mirra_runtime::WriteFence;
use tokio::time::Instant;

use crate::events::WarningEvents;
use crate::flags::Settings;
use crate::metrics::CatalogMetrics;
use crate::round::{Planned, op_service_id};
use crate::wire::{NODE_OP, fingerprint, node_op, pack_entries, to_txn_ops, wire_len};

pub use namespaces::NamespaceFailure;
pub use reread::{RereadRequest, reread_request};
pub use task::{Job, Report, Reports, Sent, WriteDone, WriteJob, spawn};

/// How long the whole-node reads stay paused after a write: the rounds of
/// a rollout come a debounce window or so apart, and resuming the reads
/// between two of them would make Consul list the whole node once per
/// round. Third-party changes are seen this much later at most.
pub(crate) const PAUSE_LINGER: Duration = Duration::from_millis(500);

/// What the writes of one round came to.
#[derive(Debug, Default)]
pub struct WriteOutcome {
    /// Services whose operations did not all commit (Consul unavailable,
    /// refused, or the round stopped before them).
    pub failed: BTreeSet<ServiceKey>,
    /// Whether an orphan's removal did not commit.
    pub orphan_failed: bool,
    /// Services with an operation refused only because the catalog changed
    /// since it was planned (a failed `cas`): their instances are to be
    /// read again, and they are to be planned again.
    pub conflicted: BTreeSet<ServiceKey>,
}

/// Sends planned operations to Consul. See the module docs.
pub struct TxnWriter {
    consul: mirra_consul::Client,
    /// Every Consul transaction goes through it.
    fence: WriteFence,
    metrics: CatalogMetrics,
    /// Our node's name.
    node: String,
    /// The operation that creates our node.
    node_op: TxnOp,
    txn_batch: usize,
    txn_concurrency: usize,
    /// True while a round's transactions are in flight (holds back
    /// whole-node reads, see `mirra_consul::Pause`).
    writing: tokio::sync::watch::Sender<bool>,
    /// When the reads paused by the last write resume.
    resume_reads_at: Option<Instant>,
    /// A verification pass is writing (its flushes keep the reads paused).
    in_pass: bool,
    /// Warning Events, written through the same leader fence's Lease.
    events: WarningEvents,
    /// The operation limit a 413 named, when below `txn_batch`.
    txn_ops_limit: Option<usize>,
    /// Service ID -> fingerprint of the wire operations of a registration
    /// Consul refused as too large even alone: not sent again until it
    /// changes.
    too_large: HashMap<String, u64>,
    /// Consul namespaces (folded) known to exist: not read again until the
    /// next verification pass.
    known_namespaces: HashSet<String>,
    /// Consul namespace (folded) that could not be created -> the Services
    /// already told so by an Event (one Event per Service and failure).
    namespace_failures: HashMap<String, HashSet<ServiceKey>>,
    /// `-consul-cross-namespace-acl-policy` (empty: none).
    cross_namespace_acl_policy: String,
    /// A dry run: nothing is sent; the node and the Consul namespaces the
    /// writes would create are reported here (the event loop reports the
    /// registrations).
    preview: Option<mirra_runtime::Preview>,
}

impl TxnWriter {
    /// A writer for `settings`, writing to `consul`.
    pub fn new(
        kube: kube::Client,
        consul: mirra_consul::Client,
        settings: &Settings,
        metrics: CatalogMetrics,
    ) -> Self {
        let mut kube_fence = WriteFence::new(settings.lease.clone(), settings.kube_write_timeout);
        let mut fence = WriteFence::new(settings.lease.clone(), consul.request_timeout());
        if settings.preview.is_some() {
            kube_fence = kube_fence.dry_run();
            fence = fence.dry_run();
        }
        Self {
            events: WarningEvents::new(kube, kube_fence, metrics.clone()),
            fence,
            consul,
            metrics,
            node: settings.sync.consul_node_name.clone(),
            node_op: node_op(&settings.sync),
            txn_batch: settings.txn_batch,
            txn_concurrency: settings.txn_concurrency,
            writing: tokio::sync::watch::Sender::new(false),
            resume_reads_at: None,
            in_pass: false,
            txn_ops_limit: None,
            too_large: HashMap::new(),
            known_namespaces: HashSet::new(),
            namespace_failures: HashMap::new(),
            cross_namespace_acl_policy: settings.cross_namespace_acl_policy.clone(),
            preview: settings.preview.clone(),
        }
    }

    /// Whether the whole-node reads are to be paused (true while writing).
    pub fn writing(&self) -> tokio::sync::watch::Receiver<bool> {
        self.writing.subscribe()
    }

    /// Resumes the whole-node reads paused by the last write.
    fn resume_reads(&mut self) {
        self.resume_reads_at = None;
        self.writing.send_replace(false);
    }

    /// A verification pass starts: its writes are one stream, and the
    /// whole-node reads stay paused between its flushes too (each would
    /// list the whole node again).
    fn start_pass(&mut self) {
        self.in_pass = true;
        // A namespace deleted behind mirra's back is found missing (and
        // created again) by the first registration that needs it.
        self.known_namespaces.clear();
        self.pause_reads();
    }

    /// A verification pass ended; `forget` are the registrations held back
    /// as too large that no Service claims any more.
    fn end_pass(&mut self, forget: Vec<String>) {
        self.forget_too_large(forget);
        self.metrics.too_large_instances(self.too_large.len());
        self.in_pass = false;
        self.resume_reads_soon();
    }

    /// Service IDs of the registrations held back as too large.
    fn held_back_ids(&self) -> Vec<String> {
        self.too_large.keys().cloned().collect()
    }

    /// Operations per transaction: the configured batch, or less when a
    /// 413 named a lower limit.
    fn batch_limit(&self) -> usize {
        let configured = self.txn_batch.max(1);
        self.txn_ops_limit.map_or(configured, |l| configured.min(l))
    }

    /// Whether `op` is a registration Consul refused as too large, unchanged
    /// since.
    fn held_back(&self, p: &Planned) -> bool {
        let CatalogOp::Register(r) = &p.op else {
            return false;
        };
        self.too_large.get(&r.id).is_some_and(|&fp| {
            let ops = to_txn_ops(p, &self.node);
            fingerprint(ops.iter()) == Some(fp)
        })
    }

    /// Forgets held-back registrations of these IDs (nothing wants them
    /// any more).
    fn forget_too_large(&mut self, ids: impl IntoIterator<Item = String>) {
        let ids: BTreeSet<String> = ids
            .into_iter()
            .filter(|id| self.too_large.contains_key(id))
            .collect();
        if ids.is_empty() {
            return;
        }
        for id in &ids {
            self.too_large.remove(id);
        }
        self.metrics.too_large_instances(self.too_large.len());
    }

    /// How many plan entries of `pending` fill whole transactions (all but
    /// the last one they would be packed into), so that a verification pass
    /// writes a prefix packed exactly as one write of everything would be
    /// (greedy packing of a prefix ends on the same boundaries).
    fn full_prefix(&self, node_exists: bool, pending: &[Planned]) -> usize {
        let chunks = pack_entries(
            &self.wire_entries(node_exists, pending, &BTreeSet::new()).0,
            self.batch_limit(),
        );
        if chunks.len() < 2 {
            return 0;
        }
        // Held-back registrations are in no chunk: everything up to the
        // last entry of the full chunks goes.
        chunks
            .iter()
            .take(chunks.len() - 1)
            .flatten()
            .filter(|&&i| i != NODE_OP)
            .max()
            .map_or(0, |&i| i + 1)
    }

    /// Writes planned operations in transactions, up to
    /// `settings.txn_concurrency` of them in flight, reporting each commit
    /// as it happens.
    ///
    /// Wire operations are built one transaction at a time, right before it
    /// is sent, so a cold start of 50,000 instances never holds all 100,000
    /// of them at once. Results are taken in order; operations of different
    /// transactions touch different instances, so they commute and the
    /// order in which Consul applies concurrent transactions does not
    /// matter.
    async fn write(
        &mut self,
        planned: &Arc<Vec<Planned>>,
        node_exists: bool,
        reports: &Reports,
    ) -> WriteDone {
        let mut done = WriteDone::default();
        if planned.is_empty() {
            return done;
        }
        let (blocked, failures) = self.ensure_namespaces(planned).await;
        done.namespace_failures = failures;
        let (entries, held) = self.wire_entries(node_exists, planned, &blocked);
        if held > 0 {
            self.metrics.held_back(held);
        }
        // Services bound for a namespace that could not be created wait
        // (and are retried with the queue's backoff); the rest is sent.
        let waiting: BTreeSet<ServiceKey> = blocked
            .iter()
            .filter_map(|&i| planned.get(i).and_then(|p| p.key.clone()))
            .collect();
        let chunks = pack_entries(&entries, self.batch_limit());
        if chunks.is_empty() {
            done.outcome.failed = waiting;
            return done;
        }
        self.pause_reads();
        let sent = self.send_chunks(chunks, planned, reports).await;
        done.outcome = sent.outcome;
        done.outcome.failed.extend(waiting);
        done.stale = sent.stale;
        done.sent = match sent.stopped_by {
            Some(e) => Sent::Unavailable(e),
            None => Sent::Answered,
        };
        if !self.in_pass {
            self.resume_reads_soon();
        }
        done
    }

    /// Pauses the whole-node reads.
    fn pause_reads(&mut self) {
        self.resume_reads_at = None;
        self.writing.send_replace(true);
    }

    /// Resumes the whole-node reads [`PAUSE_LINGER`] from now, unless
    /// another write pauses them first.
    fn resume_reads_soon(&mut self) {
        self.resume_reads_at = Some(Instant::now() + PAUSE_LINGER);
    }

    /// `(plan entry, wire operations)` of what [`TxnWriter::write`] sends for
    /// `planned`, with the node's creation first when it does not exist,
    /// and without registrations held back as too large.
    /// Also returns how many registrations were held back.
    fn wire_entries(
        &self,
        node_exists: bool,
        planned: &[Planned],
        blocked: &BTreeSet<usize>,
    ) -> (Vec<(usize, usize)>, usize) {
        let mut entries: Vec<(usize, usize)> = Vec::with_capacity(planned.len() + 1);
        let mut held = 0;
        let mut sends = planned
            .iter()
            .enumerate()
            .filter(|(i, _)| !blocked.contains(i))
            .filter(|(_, p)| {
                let keep = self.too_large.is_empty() || !self.held_back(p);
                held += usize::from(!keep);
                keep
            })
            .map(|(i, p)| (i, wire_len(&p.op)))
            .peekable();
        if !node_exists && sends.peek().is_some() {
            entries.push((NODE_OP, 1));
        }
        entries.extend(sends);
        (entries, held)
    }

    /// A 413 named the server's operation limit: later transactions are
    /// packed to it.
    fn learn_ops_limit(&mut self, limit: usize) {
        if limit < self.batch_limit() {
            tracing::warn!(
                limit,
                configured = self.txn_batch,
                "Consul accepts fewer operations per transaction than configured; using its limit"
            );
            self.txn_ops_limit = Some(limit);
        }
    }

    /// A transaction refused as too large although it could not be split:
    /// when it is one registration, that registration is reported and held
    /// back until it changes, and `true` is returned (nothing to retry).
    /// Anything else (the node's creation, a removal) stays pending.
    fn hold_back_too_large(
        &mut self,
        chunk: &[(TxnOp, usize)],
        planned: &[Planned],
        e: &mirra_consul::Error,
    ) -> bool {
        let entry = match chunk {
            [(_, i), rest @ ..] if rest.iter().all(|(_, j)| j == i) => *i,
            _ => {
                tracing::warn!(error = %e, ops = chunk.len(), "transaction too large; the work stays queued");
                return false;
            }
        };
        let Some(Planned {
            op: CatalogOp::Register(r),
            key,
            ..
        }) = planned.get(entry)
        else {
            tracing::warn!(error = %e, "operation too large for Consul; the work stays queued");
            return false;
        };
        let Some(fp) = fingerprint(chunk.iter().map(|(o, _)| o)) else {
            return false;
        };
        let key = key
            .as_ref()
            .map_or_else(|| "-".to_owned(), ServiceKey::to_string);
        tracing::error!(
            %key,
            service = %r.name,
            instance = %r.id,
            ops = chunk.len(),
            error = %e,
            "registration too large for a Consul transaction even alone; not written until it changes"
        );
        self.metrics.too_large();
        self.too_large.insert(r.id.clone(), fp);
        self.metrics.too_large_instances(self.too_large.len());
        true
    }

    /// Reports a committed transaction, and counts it.
    fn committed(
        &mut self,
        chunk: &[(TxnOp, usize)],
        planned: &Arc<Vec<Planned>>,
        results: Vec<mirra_consul::TxnResult>,
        reports: &Reports,
    ) {
        let mut node_created = false;
        let mut entries = Vec::with_capacity(chunk.len());
        let mut seen = BTreeSet::new();
        for (_, i) in chunk {
            if *i == NODE_OP {
                node_created = true;
                continue;
            }
            // A Register is two wire operations (never split across chunks);
            // record it once.
            if !seen.insert(*i) {
                continue;
            }
            let Some(p) = planned.get(*i) else { continue };
            // A registration written or removed is no longer held back.
            if !self.too_large.is_empty()
                && !matches!(p.op, CatalogOp::DeregisterCheck { .. })
                && self.too_large.remove(op_service_id(&p.op)).is_some()
            {
                self.metrics.too_large_instances(self.too_large.len());
            }
            let kind = match &p.op {
                CatalogOp::Register(_) => "register",
                CatalogOp::Deregister { .. } => "deregister",
                CatalogOp::DeregisterCheck { .. } => "deregister_check",
            };
            self.metrics.operations(kind, 1);
            entries.push(*i);
        }
        // The loop is gone only when the controller stops.
        let _ = reports.send(Report::Committed {
            planned: Arc::clone(planned),
            entries,
            node_created,
            results,
            at: Instant::now(),
        });
    }
}
