//! The Consul writer: packs planned operations into `/v1/txn`
//! transactions and sends them.
//!
//! [`TxnWriter`] owns everything about sending: packing plan entries into
//! transactions of at most `-txn-batch-size` operations (the node's
//! creation first, committed before anything else is sent), up to
//! `-txn-concurrency` transactions in flight, the leader write fence, the
//! pause of the whole-node reads while writing, and the writer's backoff.
//! What commits is reported to the [`CatalogIndex`] as a
//! [`WriteEvent`], which the index folds in.
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
//!   writer as a whole backs off (`backoff`): no round starts before the
//!   jittered, capped, exponentially growing delay has passed, and a round
//!   in which Consul answered resets it.
//! - **A failed precondition** (409 `... index is stale`): every write is
//!   a `cas`/`delete-cas` naming the `ModifyIndex` it was planned from, so
//!   Consul refuses one planned from a state that changed since. The rest
//!   of the transaction is sent again at once; the refused instances are
//!   read again (a read-only `get` transaction, no Raft apply) and
//!   reported to the index, and their Services are planned again after the
//!   queue's backoff: never resent as they were.
//!
//! This module must NOT plan (it sends what [`crate::round`] planned, as
//! planned), change the index other than through [`CatalogIndex::fold`],
//! touch the work queue, or retry individual HTTP requests (mirra-consul
//! does).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Service;
use mirra_catalog::{CatalogOp, DEFAULT_CONSUL_NAMESPACE, ServiceKey, Warning};
use mirra_consul::{HealthCheck, TxnOp, Verb};
use mirra_runtime::WriteFence;
use tokio::time::Instant;

use crate::backoff::WriterBackoff;
use crate::events::WarningEvents;
use crate::flags::Settings;
use crate::index::{CatalogIndex, WriteEvent};
use crate::metrics::CatalogMetrics;
use crate::round::{Planned, op_service_id};
use crate::txn::{read_entries, send_splitting};
use crate::wire::{NODE_OP, fingerprint, node_op, pack_entries, to_txn_ops, wire_len};

/// How long the whole-node reads stay paused after a write: the rounds of
/// a rollout come a debounce window or so apart, and resuming the reads
/// between two of them would make Consul list the whole node once per
/// round. Third-party changes are seen this much later at most.
const PAUSE_LINGER: Duration = Duration::from_millis(500);

/// Description of the Consul namespaces mirra creates.
const NAMESPACE_DESCRIPTION: &str = "Created by mirra sync-catalog for synced Kubernetes Services";

/// Why a Consul namespace could not be found or created.
#[derive(Debug, thiserror::Error)]
enum NamespaceError {
    /// Consul refused or did not answer.
    #[error(transparent)]
    Consul(#[from] mirra_consul::Error),
    /// This replica does not hold the Lease with enough time left.
    #[error("fenced: {0}")]
    Fenced(#[from] mirra_runtime::FenceError),
}

/// What the writes of one round came to.
#[derive(Debug, Default)]
pub struct WriteOutcome {
    /// Services whose operations did not all commit (Consul unavailable,
    /// refused, or the round stopped before them).
    pub failed: BTreeSet<ServiceKey>,
    /// Whether an orphan's removal did not commit.
    pub orphan_failed: bool,
    /// Services with an operation refused only because the catalog changed
    /// since it was planned (a failed `cas`): their instances were read
    /// again, and they are to be planned again.
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
    pub(crate) resume_reads_at: Option<Instant>,
    /// A verification pass is writing (its flushes keep the reads paused).
    in_pass: bool,
    /// The writer's backoff while Consul is unavailable.
    pub(crate) backoff: WriterBackoff,
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
}

impl TxnWriter {
    /// A writer for `settings`, writing to `consul`.
    pub fn new(
        kube: kube::Client,
        consul: mirra_consul::Client,
        settings: &Settings,
        metrics: CatalogMetrics,
    ) -> Self {
        let kube_fence = WriteFence::new(settings.lease.clone(), settings.kube_write_timeout);
        Self {
            events: WarningEvents::new(kube, kube_fence, metrics.clone()),
            fence: WriteFence::new(settings.lease.clone(), consul.request_timeout()),
            consul,
            metrics,
            node: settings.sync.consul_node_name.clone(),
            node_op: node_op(&settings.sync),
            txn_batch: settings.txn_batch,
            txn_concurrency: settings.txn_concurrency,
            writing: tokio::sync::watch::Sender::new(false),
            resume_reads_at: None,
            in_pass: false,
            backoff: WriterBackoff::new(settings.write_backoff_base, settings.write_backoff_cap),
            txn_ops_limit: None,
            too_large: HashMap::new(),
            known_namespaces: HashSet::new(),
            namespace_failures: HashMap::new(),
            cross_namespace_acl_policy: settings.cross_namespace_acl_policy.clone(),
        }
    }

    /// Whether the whole-node reads are to be paused (true while writing).
    pub fn writing(&self) -> tokio::sync::watch::Receiver<bool> {
        self.writing.subscribe()
    }

    /// Resumes the whole-node reads paused by the last write.
    pub fn resume_reads(&mut self) {
        self.resume_reads_at = None;
        self.writing.send_replace(false);
    }

    /// A verification pass starts: its writes are one stream, and the
    /// whole-node reads stay paused between its flushes too (each would
    /// list the whole node again).
    pub fn start_pass(&mut self) {
        self.in_pass = true;
        // A namespace deleted behind mirra's back is found missing (and
        // created again) by the first registration that needs it.
        self.known_namespaces.clear();
        self.pause_reads();
    }

    /// A verification pass ended. Registrations held back as too large that
    /// no Service claims any more are forgotten.
    pub fn end_pass(&mut self, index: &CatalogIndex) {
        self.too_large.retain(|id, _| index.owner_of(id).is_some());
        self.metrics.too_large_instances(self.too_large.len());
        self.in_pass = false;
        self.resume_reads_soon();
    }

    /// Sends warning Events (best effort).
    pub async fn send_events(&self, events: Vec<(Service, Vec<Warning>)>) {
        if !events.is_empty() {
            self.events.send(events).await;
        }
    }

    /// Warning Events for Services another writer keeps changing.
    pub async fn send_contested(&self, services: Vec<Service>) {
        if !services.is_empty() {
            self.events.send_contested(services).await;
        }
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
    pub fn forget_too_large(&mut self, ids: impl IntoIterator<Item = String>) {
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
    pub fn full_prefix(&self, index: &CatalogIndex, pending: &[Planned]) -> usize {
        let chunks = pack_entries(
            &self.wire_entries(index, pending, &BTreeSet::new()).0,
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
    /// `settings.txn_concurrency` of them in flight. Returns the keys whose
    /// operations did not all commit, and whether an orphan's did not.
    ///
    /// Wire operations are built one transaction at a time, right before it
    /// is sent, so a cold start of 50,000 instances never holds all 100,000
    /// of them at once. Results are taken in order; operations of different
    /// transactions touch different instances, so they commute and the
    /// order in which Consul applies concurrent transactions does not
    /// matter.
    pub async fn write(&mut self, index: &mut CatalogIndex, planned: &[Planned]) -> WriteOutcome {
        if planned.is_empty() {
            return WriteOutcome::default();
        }
        let blocked = self.ensure_namespaces(index, planned).await;
        let (entries, held) = self.wire_entries(index, planned, &blocked);
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
            return WriteOutcome {
                failed: waiting,
                ..WriteOutcome::default()
            };
        }
        self.pause_reads();
        let (mut result, stale) = self.send_chunks(index, chunks, planned).await;
        result.failed.extend(waiting);
        if !stale.is_empty() {
            self.reread(index, &stale, planned).await;
        }
        if !self.in_pass {
            self.resume_reads_soon();
        }
        result
    }

    /// Makes sure the Consul namespaces the registrations of `planned` go
    /// into exist, creating the missing ones (as consul-k8s does, with
    /// `-consul-cross-namespace-acl-policy` as their policy default).
    /// Returns the plan entries bound for a namespace that could not be
    /// found or created: each such failure is logged, counted and reported
    /// once per Service as a warning Event.
    async fn ensure_namespaces(
        &mut self,
        index: &CatalogIndex,
        planned: &[Planned],
    ) -> BTreeSet<usize> {
        let mut missing: BTreeMap<String, (String, Vec<usize>)> = BTreeMap::new();
        for (i, p) in planned.iter().enumerate() {
            let CatalogOp::Register(r) = &p.op else {
                continue;
            };
            let Some(ns) = &r.namespace else {
                continue;
            };
            let folded = ns.to_ascii_lowercase();
            if folded == DEFAULT_CONSUL_NAMESPACE || self.known_namespaces.contains(&folded) {
                continue;
            }
            missing
                .entry(folded)
                .or_insert_with(|| (ns.clone(), Vec::new()))
                .1
                .push(i);
        }
        let mut blocked = BTreeSet::new();
        for (folded, (name, entries)) in missing {
            match self.ensure_namespace(&name).await {
                Ok(created) => {
                    if created {
                        self.metrics.namespace_created();
                        tracing::info!(namespace = %name, "created the Consul namespace");
                    }
                    self.namespace_failures.remove(&folded);
                    self.known_namespaces.insert(folded);
                }
                Err(e) => {
                    self.metrics.namespace_failure();
                    tracing::warn!(
                        namespace = %name,
                        error = %e,
                        services = entries.len(),
                        "could not create the Consul namespace; its Services wait, the others keep syncing"
                    );
                    let told = self.namespace_failures.entry(folded).or_default();
                    let services: Vec<Service> = entries
                        .iter()
                        .filter_map(|&i| planned.get(i).and_then(|p| p.key.as_ref()))
                        .filter(|k| told.insert((*k).clone()))
                        .filter_map(|k| index.service(k).cloned())
                        .collect();
                    if !services.is_empty() {
                        self.events
                            .send_namespace_failed(services, &name, &e.to_string())
                            .await;
                    }
                    blocked.extend(entries);
                }
            }
        }
        blocked
    }

    /// Reads namespace `name` and creates it when it does not exist;
    /// returns whether it was created. The creation is a write, so it goes
    /// through the leader fence.
    async fn ensure_namespace(&self, name: &str) -> Result<bool, NamespaceError> {
        if self.consul.namespace(name).await?.is_some() {
            return Ok(false);
        }
        let mut ns = if self.cross_namespace_acl_policy.is_empty() {
            mirra_consul::Namespace {
                name: name.to_owned(),
                ..mirra_consul::Namespace::default()
            }
        } else {
            mirra_consul::Namespace::with_policy_defaults(
                name,
                [self.cross_namespace_acl_policy.as_str()],
            )
        };
        ns.description = NAMESPACE_DESCRIPTION.to_owned();
        ns.meta = BTreeMap::from([(
            mirra_catalog::model::META_EXTERNAL_SOURCE.to_owned(),
            mirra_catalog::model::EXTERNAL_SOURCE_KUBERNETES.to_owned(),
        )]);
        match self.fence.send(self.consul.create_namespace(&ns)).await? {
            Ok(_) => Ok(true),
            // Created meanwhile by someone else (another writer, a
            // replica that just lost the Lease): it exists, which is all
            // that is wanted.
            Err(e) => match self.consul.namespace(name).await {
                Ok(Some(_)) => Ok(false),
                _ => Err(NamespaceError::Consul(e)),
            },
        }
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
        index: &CatalogIndex,
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
        if !index.node_exists() && sends.peek().is_some() {
            entries.push((NODE_OP, 1));
        }
        entries.extend(sends);
        (entries, held)
    }

    /// The sending half of [`TxnWriter::write`]. Also returns the plan
    /// entries refused by a failed `cas` (their instances are to be read
    /// again).
    async fn send_chunks(
        &mut self,
        index: &mut CatalogIndex,
        chunks: Vec<Vec<usize>>,
        planned: &[Planned],
    ) -> (WriteOutcome, BTreeSet<usize>) {
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
                            self.committed(index, &chunk, planned, &results);
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
                                    index.fold(WriteEvent::NodeExists);
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
        match stopped_by {
            Some(e) => {
                let delay = self.backoff.failed(Instant::now(), rand::random::<f64>());
                self.metrics.write_backoff();
                tracing::warn!(
                    class = e.class(),
                    failures = self.backoff.failures(),
                    delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                    "Consul unavailable; the writer waits before its next round"
                );
            }
            None => self.backoff.succeeded(),
        }
        // A Service with an entry that failed for another reason counts as
        // failed; conflicted lists only the ones merely behind.
        conflicted.retain(|k| !failed.contains(k));
        (
            WriteOutcome {
                failed,
                orphan_failed,
                conflicted,
            },
            stale_entries,
        )
    }

    /// Reads again the instances (and their checks) of plan entries that a
    /// failed `cas` refused, and reports what Consul holds now to the
    /// index, so that their next plan names the current indexes. The reads
    /// are read-only transactions of `get`s: only the refused entries, and
    /// no Raft apply.
    async fn reread(
        &mut self,
        index: &mut CatalogIndex,
        stale: &BTreeSet<usize>,
        planned: &[Planned],
    ) {
        let node = self.node.clone();
        let mut ids = BTreeSet::new();
        let mut check_ids = BTreeSet::new();
        // The namespace each instance was planned in (empty without
        // namespaces): a read in another one would not find it.
        let mut ns_of: HashMap<String, String> = HashMap::new();
        for p in stale.iter().filter_map(|&i| planned.get(i)) {
            let ns = p.namespace.clone().unwrap_or_default();
            // A check removal names no instance; mirra's and consul-k8s's
            // readiness check IDs are `<namespace>/<service ID>`.
            let id = op_service_id(&p.op).to_owned();
            check_ids.extend(
                index
                    .checks_of(&id)
                    .iter()
                    .map(|c| (c.check_id().to_owned(), ns.clone())),
            );
            if let CatalogOp::Register(r) = &p.op {
                check_ids.extend(r.check.iter().map(|c| (c.check_id.clone(), ns.clone())));
            }
            if let CatalogOp::DeregisterCheck { check_id, .. } = &p.op {
                check_ids.insert((check_id.clone(), ns.clone()));
            }
            ns_of.insert(id.clone(), ns);
            ids.insert(id);
        }
        let ops: Vec<TxnOp> = ids
            .iter()
            .map(|id| TxnOp::Service {
                verb: Verb::Get,
                node: node.clone(),
                service: mirra_consul::Service {
                    id: id.clone(),
                    namespace: ns_of.get(id).cloned().unwrap_or_default(),
                    ..mirra_consul::Service::default()
                },
            })
            .chain(check_ids.iter().map(|(c, ns)| TxnOp::Check {
                verb: Verb::Get,
                check: HealthCheck {
                    node: node.clone(),
                    check_id: c.clone(),
                    namespace: ns.clone(),
                    ..HealthCheck::default()
                },
            }))
            .collect();
        let at = Instant::now();
        match read_entries(&self.consul, ops, self.batch_limit()).await {
            Ok(results) => {
                index.fold(WriteEvent::Reread {
                    ids: &ids,
                    results: Some(&results),
                    at,
                });
                tracing::info!(
                    instances = ids.len(),
                    "catalog changed since planned; read the refused instances again and planning them again"
                );
            }
            Err(e) => {
                self.metrics.consul_error(e.class());
                tracing::warn!(error = %e, "reading refused instances again failed; waiting for the next whole-node read");
                index.fold(WriteEvent::Reread {
                    ids: &ids,
                    results: None,
                    at,
                });
            }
        }
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

    /// Reports a committed transaction to the index, and counts it.
    fn committed(
        &mut self,
        index: &mut CatalogIndex,
        chunk: &[(TxnOp, usize)],
        planned: &[Planned],
        results: &[mirra_consul::TxnResult],
    ) {
        let mut node_created = false;
        let mut ops = Vec::with_capacity(chunk.len());
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
            ops.push(&p.op);
        }
        index.fold(WriteEvent::Committed {
            ops,
            node_created,
            results,
            at: Instant::now(),
        });
    }
}
