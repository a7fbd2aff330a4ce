//! The event loop of the catalog sync.
//!
//! One task owns all state, so there are no locks: it folds watch events
//! into caches, turns them into Service keys in a [`WorkQueue`], and when a
//! batch of keys is ready (after the debounce window) it plans them
//! together and writes the operations in `/v1/txn` chunks.
//!
//! Observed state is ONE blocking query on `node-services/<our node>` for
//! the instances and ONE on `health/node/<our node>` for their checks (the
//! node-services answer carries no check status). One addition makes it
//! exact:
//!
//! - **Overlay of our own writes.** A node-services answer computed just
//!   before one of our writes committed would make the next plan write the
//!   same thing again. Each committed operation is recorded as an expected
//!   state of its instance and of its checks; an answer that does not show
//!   it yet keeps the expectation, an answer that shows it drops it, and an
//!   expectation not confirmed within [`OVERLAY_TTL`] is dropped so that
//!   Consul's truth wins. Instances and checks are confirmed separately,
//!   each by its own watch.
//!
//! Safety rules: nothing is written before every watch has its initial list
//! and the first node-services and health/node answers arrived;
//! then one whole-node pass (the only kind of plan that can reap orphans)
//! runs, and after it keys are planned one batch at a time. Only instances
//! passing `mirra_catalog::is_owned` are ever touched (the planner
//! guarantees it). A failed write keeps the key (and the service IDs it
//! touched) pending with backoff: memory is bounded by the key set.
//!
//! Failure handling of the writes:
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
//!   a `cas`/`delete-cas` naming the `ModifyIndex` it was planned from
//!   (kept in the view, 0 for what does not exist), so Consul refuses one
//!   planned from a state that changed since. The rest of the transaction
//!   is sent again at once; the refused instances are read again (a
//!   read-only `get` transaction, no Raft apply) into the overlay, and
//!   their Services are planned again after the queue's backoff: never
//!   resent as they were.
//!
//! This module must NOT compute registrations or plans itself (mirra-catalog
//! does) nor retry individual HTTP requests (mirra-consul does).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::{Event, Node, ObjectReference, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::Ingress;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::api::{Api, PostParams};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, watcher};
use mirra_catalog::compact::{parse_health_checks_compact, parse_node_services_compact};
use mirra_catalog::mapping::{NodeLookup, uses_node_addresses};
use mirra_catalog::plan::plan_detailed;
use mirra_catalog::{
    CatalogOp, CompactCheck, CompactInstance, CompactView, NodeEndpointIndex, ObservedInstance,
    Registration, ServiceKey, SyncNode, Warning, desired_for_service, is_owned, key_for_slice,
    keys_for_ingress, keys_for_node_change,
};
use mirra_consul::{HealthCheck, QueryOptions, TxnOp, Verb, WatchOptions};
use mirra_runtime::{
    Cache, Change, FenceError, ObjectKey, Outcome, ReadyFlag, WorkQueue, WriteFence,
};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::backoff::WriterBackoff;
use crate::flags::Settings;
use crate::metrics::CatalogMetrics;

/// How long an expectation about one of our own writes outlives Consul
/// answers that do not show it. A blocking answer computed before the write
/// is followed by a fresh one within one watch round (~100 ms); 30 s is
/// far beyond that yet short enough that a third party's change is seen
/// within one verification period.
pub const OVERLAY_TTL: Duration = Duration::from_secs(30);

/// Minimum spacing of node-services reads. Each read returns every instance
/// on our node (50,000 in the benchmark, tens of MB of JSON), and most
/// changes it would show are our own writes, already known from the
/// overlay; reading at most once a second keeps a rollout from turning into
/// a stream of whole-node reads, while third-party changes are still seen
/// within a second.
const OBSERVED_MIN_INTERVAL: Duration = Duration::from_secs(1);

/// Longest the whole-node reads are paused while mirra itself is writing
/// (a read in flight is dropped and sent again afterwards, see
/// [`mirra_consul::Pause`]). Reads during our own writes mostly show what
/// the overlay already knows, and each one makes Consul list every
/// instance on the node, competing with the writes for the leader and for
/// our CPU; but third-party changes must still be seen during a long
/// stream of writes, and well before an unconfirmed expectation expires
/// ([`OVERLAY_TTL`]).
const MAX_READ_DEFERRAL: Duration = Duration::from_secs(5);

/// Planned operations a whole-node pass holds before writing the ones that
/// fill whole transactions: about 32 transactions' worth, a few MB.
const FULL_PASS_FLUSH: usize = 1024;

/// What the writes of one whole-node pass came to.
#[derive(Default)]
struct PassOutcome {
    /// Plan entries written or given up.
    entries: usize,
    /// Services whose operations did not all commit.
    failed: BTreeSet<ServiceKey>,
    /// Whether an orphan's removal did not commit.
    orphan_failed: bool,
    /// A write failed: the rest of the pass is not sent.
    stopped: bool,
}

/// How long the whole-node reads stay paused after a write: the rounds of
/// a rollout come a debounce window or so apart, and resuming the reads
/// between two of them would make Consul list the whole node once per
/// round. Third-party changes are seen this much later at most.
const PAUSE_LINGER: Duration = Duration::from_millis(500);

/// Services planned together in a whole-node pass: enough to share the
/// planner's set-up, few enough that their registrations (a few KB each)
/// never add up to much.
const FULL_PASS_CHUNK: usize = 256;

/// Backoff of a failed whole-node pass: from 1 s up to 60 s, so a Consul
/// outage costs at most one pass a minute.
const FULL_PASS_BACKOFF_BASE: Duration = Duration::from_secs(1);
/// See [`FULL_PASS_BACKOFF_BASE`].
const FULL_PASS_BACKOFF_CAP: Duration = Duration::from_secs(60);

/// Plan-entry index standing for the Node `set` that creates our node (it
/// belongs to no plan entry; no plan has this many entries).
const NODE_OP: usize = usize::MAX;

/// Reason of the warning Event for a bad annotation value.
pub const EVENT_REASON: &str = "InvalidAnnotation";
/// Component named in warning Events.
pub const EVENT_COMPONENT: &str = "mirra-sync-catalog";

/// Why the controller stopped.
#[derive(Debug, thiserror::Error)]
pub enum ControllerError {
    /// The work queue configuration is inconsistent. Not retryable: fix the
    /// debounce settings.
    #[error("work queue: {0}")]
    Queue(#[from] mirra_runtime::QueueError),
    /// A Kubernetes watch stream ended, which kube-rs watchers never do
    /// unless the runtime is shutting down. Retryable by restarting.
    #[error("the {0} watch ended unexpectedly")]
    WatchEnded(&'static str),
    /// A Consul watch (node-services or health/node) ended. Retryable by
    /// restarting.
    #[error("a Consul watch ended unexpectedly")]
    ConsulWatchEnded,
    /// `-purge-k8s-services-from-node` could not finish. Retryable: run it
    /// again once Consul is reachable.
    #[error("purging the node failed: {0}")]
    Purge(#[source] mirra_consul::Error),
    /// `-purge-k8s-services-from-node` was not sent because this replica
    /// does not hold the Lease with enough time left. Retryable: run it
    /// again (it is idempotent).
    #[error("purging the node was fenced: {0}")]
    PurgeFenced(#[source] FenceError),
}

/// Runs the catalog sync until `shutdown` is cancelled.
///
/// `ready` is set once every watch has delivered its initial list and the
/// first node-services and health/node answers arrived.
/// With `settings.purge`, deregisters every instance this process owns and
/// returns instead.
pub async fn run(
    kube: kube::Client,
    consul: mirra_consul::Client,
    settings: Settings,
    ready: ReadyFlag,
    metrics: CatalogMetrics,
    shutdown: CancellationToken,
) -> Result<(), ControllerError> {
    if settings.purge {
        return purge(&consul, &settings, &metrics).await;
    }
    let queue = WorkQueue::new(settings.queue.clone())?;
    let mut engine = Engine::new(kube.clone(), consul.clone(), settings, metrics, queue);

    let services = pin!(watch_stream::<Service>(&kube));
    let slices = pin!(watch_stream::<EndpointSlice>(&kube));
    let nodes = pin!(watch_stream::<Node>(&kube));
    let ingress_enabled = engine.settings.sync.enable_ingress;
    let ingresses = pin!(watch_stream::<Ingress>(&kube));
    let watch_opts = WatchOptions {
        wait: engine.settings.consul_wait,
        min_interval: OBSERVED_MIN_INTERVAL,
        ..WatchOptions::default()
    };
    let node_name = engine.settings.sync.consul_node_name.clone();
    let pause = mirra_consul::Pause::new(engine.writing.subscribe(), MAX_READ_DEFERRAL);
    // Each answer lists every instance (and every check) on our node; they
    // are decoded and converted on their own tasks so that a 50,000-entry
    // answer never stalls the event loop.
    let sync = engine.settings.sync.clone();
    let (observed, _observed_task) = spawn_converted(
        consul.watch_node_services_raw(node_name.clone(), watch_opts.clone(), Some(pause.clone())),
        move |v| {
            let parsed = parse_node_services_compact(&v.value, &sync)
                .map_err(|e| decode_error("catalog.node_services", &e))?;
            Ok(ObservedSnapshot {
                node_exists: parsed.node_exists,
                instances: parsed.instances,
                index: v.index,
            })
        },
    );
    let (checks, _checks_task) = spawn_converted(
        consul.watch_health_node_raw(node_name, watch_opts, Some(pause)),
        |v| {
            let checks = parse_health_checks_compact(&v.value)
                .map_err(|e| decode_error("health.node", &e))?;
            Ok(CheckSnapshot {
                checks,
                index: v.index,
            })
        },
    );
    let (mut services, mut slices, mut nodes, mut ingresses, mut observed, mut checks) =
        (services, slices, nodes, ingresses, observed, checks);

    let mut verify = tokio::time::interval(engine.settings.write_interval);
    verify.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    verify.reset();
    let queue = engine.queue.clone();
    let max_keys = engine.settings.max_keys_per_round.max(1);
    // A round also takes the Services that would be ready within half a
    // debounce window, so that a rollout touching many Services within
    // milliseconds is one round (and few transactions) rather than one
    // round per Service; each still had half a window of quiet.
    let gather = engine.settings.queue.debounce / 2;

    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            ev = services.next() => match ev {
                Some(Ok(ev)) => engine.on_service(ev),
                Some(Err(e)) => engine.watch_error("services", &e),
                None => return Err(ControllerError::WatchEnded("Service")),
            },
            ev = slices.next() => match ev {
                Some(Ok(ev)) => engine.on_slice(ev),
                Some(Err(e)) => engine.watch_error("endpointslices", &e),
                None => return Err(ControllerError::WatchEnded("EndpointSlice")),
            },
            ev = nodes.next() => match ev {
                Some(Ok(ev)) => engine.on_node(ev),
                Some(Err(e)) => engine.watch_error("nodes", &e),
                None => return Err(ControllerError::WatchEnded("Node")),
            },
            ev = ingresses.next(), if ingress_enabled => match ev {
                Some(Ok(ev)) => engine.on_ingress(ev),
                Some(Err(e)) => engine.watch_error("ingresses", &e),
                None => return Err(ControllerError::WatchEnded("Ingress")),
            },
            snap = observed.recv() => match snap {
                Some(Ok(v)) => engine.on_observed(v),
                Some(Err(e)) => {
                    engine.metrics.consul_error(e.class());
                    tracing::warn!(error = %e, "reading node-services failed; retrying");
                }
                None => return Err(ControllerError::ConsulWatchEnded),
            },
            snap = checks.recv() => match snap {
                Some(Ok(v)) => engine.on_checks(v),
                Some(Err(e)) => {
                    engine.metrics.consul_error(e.class());
                    tracing::warn!(error = %e, "reading health/node failed; retrying");
                }
                None => return Err(ControllerError::ConsulWatchEnded),
            },
            // While the writer backs off, keys wait in the queue (one entry
            // per Service however often it changes) and no pass starts.
            keys = queue.next_batch_gathering(max_keys, gather), if engine.may_write() => {
                engine.process_keys(keys).await;
            },
            _ = verify.tick(), if engine.may_write() => {
                engine.full_pass().await;
            },
            _ = sleep_until_opt(engine.full_pass_retry_at), if engine.may_write() => {
                engine.full_pass().await;
            },
            _ = sleep_until_opt(engine.write_backoff.until()) => {
                engine.write_backoff.expired();
            },
            _ = sleep_until_opt(engine.resume_reads_at) => {
                engine.resume_reads_at = None;
                engine.writing.send_replace(false);
            },
        }
        if !engine.synced
            && engine.caches_ready(ingress_enabled)
            && engine.observed_seen
            && engine.checks_seen
        {
            ready.set_ready();
            engine.synced = true;
            tracing::info!("initial lists and Consul state read; running the first pass");
            engine.full_pass().await;
            verify.reset();
        }
        engine.metrics.pending(engine.queue.len());
    }
    engine.queue.shutdown();
    Ok(())
}

/// A node-services answer, compacted for the planner.
struct ObservedSnapshot {
    node_exists: bool,
    instances: BTreeMap<String, CompactInstance>,
    index: u64,
}

/// A health/node answer: service ID -> its checks (node checks dropped).
struct CheckSnapshot {
    checks: HashMap<String, Vec<CompactCheck>>,
    index: u64,
}

/// Aborts a spawned task when dropped, so that a watch parked in a long
/// blocking query does not outlive the controller.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Drives `stream` on its own task, converting each item there. One item
/// in flight: an answer waits until the loop took the previous one (each
/// answer is a whole snapshot, so the loop never needs a backlog).
fn spawn_converted<T, U>(
    stream: impl Stream<Item = Result<T, mirra_consul::Error>> + Send + 'static,
    convert: impl Fn(T) -> Result<U, mirra_consul::Error> + Send + 'static,
) -> (
    tokio::sync::mpsc::Receiver<Result<U, mirra_consul::Error>>,
    AbortOnDrop,
)
where
    T: Send + 'static,
    U: Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::channel(1);
    let task = tokio::spawn(async move {
        let mut stream = pin!(stream);
        while let Some(item) = stream.next().await {
            if tx.send(item.and_then(&convert)).await.is_err() {
                break;
            }
        }
    });
    (rx, AbortOnDrop(task))
}

async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

fn watch_stream<K>(
    kube: &kube::Client,
) -> impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + use<K>
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
    K::DynamicType: Default,
{
    let api: Api<K> = Api::all_with(kube.clone(), &K::DynamicType::default());
    watcher(api, watcher::Config::default())
        .default_backoff()
        // Nothing here reads managedFields or kubectl's copy of the last
        // applied object, and at 10,000 Services and slices they would be a
        // large share of the caches.
        .modify(|obj: &mut K| {
            let meta = obj.meta_mut();
            meta.managed_fields = None;
            if let Some(a) = meta.annotations.as_mut() {
                a.remove(LAST_APPLIED);
            }
        })
}

/// The annotation where `kubectl apply` keeps the last applied object.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// [`NodeLookup`] over the Node cache (no live reads).
struct NodeCache<'a>(&'a Cache<Node>);

impl NodeLookup for NodeCache<'_> {
    fn node(&self, name: &str) -> Option<&Node> {
        self.0.get(None, name)
    }
}

/// What we expect Consul to show for one instance after our write.
struct Expectation {
    /// `None`: the instance is gone.
    state: Option<CompactInstance>,
    since: Instant,
    /// Raft index of the commit, when Consul's answer told it.
    index: Option<u64>,
}

/// What we expect `health/node` to show for one instance's checks after our
/// write (empty: no checks, e.g. the instance is gone).
struct CheckExpectation {
    checks: Vec<CompactCheck>,
    since: Instant,
    /// Raft index of the commit, when Consul's answer told it.
    index: Option<u64>,
}

/// Whether an expectation is still needed after an answer at
/// `answer_index`: not when the answer shows it, and not when the answer
/// was read at or after our commit (then a difference is someone else's
/// later change, which must win), and not once [`OVERLAY_TTL`] passed.
fn keep_expectation(
    confirmed: bool,
    commit_index: Option<u64>,
    answer_index: u64,
    since: Instant,
    now: Instant,
) -> bool {
    !confirmed
        && commit_index.is_none_or(|i| answer_index < i)
        && now.duration_since(since) < OVERLAY_TTL
}

/// One planned operation, with the Service it is for (none for orphans)
/// and the Raft indexes it was planned from: every write is a `cas` or
/// `delete-cas` naming them, so that it lands only on the state it was
/// planned from.
struct Planned {
    op: CatalogOp,
    key: Option<ServiceKey>,
    /// `ModifyIndex` of the instance as planned (0: it does not exist).
    index: u64,
    /// `ModifyIndex` of the check the operation writes or removes (0: it
    /// does not exist).
    check_index: u64,
}

/// What the writes of one round came to.
#[derive(Default)]
struct WriteOutcome {
    /// Services whose operations did not all commit (Consul unavailable,
    /// refused, or the round stopped before them).
    failed: BTreeSet<ServiceKey>,
    /// Whether an orphan's removal did not commit.
    orphan_failed: bool,
    /// Services with an operation refused only because the catalog changed
    /// since it was planned (a failed `cas`): their instances were read
    /// again, and they are to be planned again.
    conflicted: BTreeSet<ServiceKey>,
}

struct Engine {
    kube: kube::Client,
    consul: mirra_consul::Client,
    /// Every Consul transaction goes through it.
    consul_fence: WriteFence,
    /// Every Kubernetes write (warning Events) goes through it.
    kube_fence: WriteFence,
    settings: Settings,
    metrics: CatalogMetrics,
    queue: WorkQueue<ServiceKey>,

    services: Cache<Service>,
    slices: Cache<EndpointSlice>,
    nodes: Cache<Node>,
    ingresses: Cache<Ingress>,
    /// Service -> its EndpointSlices, so that planning a key reads only its
    /// own slices.
    slices_by_key: BTreeMap<ServiceKey, BTreeSet<ObjectKey>>,
    node_index: NodeEndpointIndex,
    index: mirra_catalog::ClaimIndex,

    /// Last node-services answer, compacted (checks apart).
    observed: BTreeMap<String, CompactInstance>,
    node_exists: bool,
    observed_seen: bool,
    overlay: BTreeMap<String, Expectation>,
    /// Service ID -> its checks, from the last health/node answer.
    checks: HashMap<String, Vec<CompactCheck>>,
    checks_seen: bool,
    check_overlay: HashMap<String, CheckExpectation>,

    /// Service IDs a key touched in a round that failed, re-planned with it.
    pending_ids: BTreeMap<ServiceKey, BTreeSet<String>>,
    first_event: BTreeMap<ServiceKey, Instant>,
    warned: BTreeMap<ServiceKey, Vec<Warning>>,

    /// True while a round's transactions are in flight (holds back
    /// whole-node reads, see [`MAX_READ_DEFERRAL`]).
    writing: tokio::sync::watch::Sender<bool>,
    /// When the reads paused by the last write resume.
    resume_reads_at: Option<Instant>,
    /// A whole-node pass is writing (its flushes keep the reads paused).
    in_pass: bool,

    synced: bool,
    full_pass_failures: u32,
    full_pass_retry_at: Option<Instant>,

    /// The writer's backoff while Consul is unavailable.
    write_backoff: WriterBackoff,
    /// The operation limit a 413 named, when below `settings.txn_batch`.
    txn_ops_limit: Option<usize>,
    /// Service ID -> fingerprint of the wire operations of a registration
    /// Consul refused as too large even alone: not sent again until it
    /// changes.
    too_large: HashMap<String, u64>,
}

impl Engine {
    fn new(
        kube: kube::Client,
        consul: mirra_consul::Client,
        settings: Settings,
        metrics: CatalogMetrics,
        queue: WorkQueue<ServiceKey>,
    ) -> Self {
        let write_backoff =
            WriterBackoff::new(settings.write_backoff_base, settings.write_backoff_cap);
        Self {
            consul_fence: WriteFence::new(settings.lease.clone(), consul.request_timeout()),
            kube_fence: WriteFence::new(settings.lease.clone(), settings.kube_write_timeout),
            kube,
            consul,
            settings,
            metrics,
            queue,
            services: Cache::new(),
            slices: Cache::new(),
            nodes: Cache::new(),
            ingresses: Cache::new(),
            slices_by_key: BTreeMap::new(),
            node_index: NodeEndpointIndex::new(),
            index: mirra_catalog::ClaimIndex::new(),
            observed: BTreeMap::new(),
            node_exists: false,
            observed_seen: false,
            overlay: BTreeMap::new(),
            checks: HashMap::new(),
            checks_seen: false,
            check_overlay: HashMap::new(),
            pending_ids: BTreeMap::new(),
            first_event: BTreeMap::new(),
            warned: BTreeMap::new(),
            writing: tokio::sync::watch::Sender::new(false),
            resume_reads_at: None,
            in_pass: false,
            synced: false,
            full_pass_failures: 0,
            full_pass_retry_at: None,
            write_backoff,
            txn_ops_limit: None,
            too_large: HashMap::new(),
        }
    }

    /// Whether a round may start: synced, and the writer not backing off.
    fn may_write(&self) -> bool {
        self.synced && self.write_backoff.until().is_none()
    }

    /// Operations per transaction: the configured batch, or less when a
    /// 413 named a lower limit.
    fn batch_limit(&self) -> usize {
        let configured = self.settings.txn_batch.max(1);
        self.txn_ops_limit.map_or(configured, |l| configured.min(l))
    }

    /// Whether `op` is a registration Consul refused as too large, unchanged
    /// since.
    fn held_back(&self, p: &Planned) -> bool {
        let CatalogOp::Register(r) = &p.op else {
            return false;
        };
        self.too_large.get(&r.id).is_some_and(|&fp| {
            let ops = to_txn_ops(p, &self.settings.sync.consul_node_name);
            fingerprint(ops.iter()) == Some(fp)
        })
    }

    /// Forgets held-back registrations of these IDs (nothing wants them
    /// any more).
    fn forget_too_large(&mut self, ids: &BTreeSet<String>) {
        if ids.is_empty() {
            return;
        }
        for id in ids {
            self.too_large.remove(id);
        }
        self.metrics.too_large_instances(self.too_large.len());
    }

    fn caches_ready(&self, ingress_enabled: bool) -> bool {
        self.services.initial_list_done()
            && self.slices.initial_list_done()
            && self.nodes.initial_list_done()
            && (!ingress_enabled || self.ingresses.initial_list_done())
    }

    fn enqueue(&mut self, key: ServiceKey) {
        self.first_event
            .entry(key.clone())
            .or_insert_with(Instant::now);
        self.queue.add(key);
    }

    fn watch_error(&self, kind: &'static str, e: &watcher::Error) {
        self.metrics.watch_error(kind);
        tracing::warn!(kind, error = %e, "watch failed; kube-rs retries with backoff");
    }

    // ----- watch events ----------------------------------------------------

    fn on_service(&mut self, ev: watcher::Event<Service>) {
        for Change { old, new, .. } in self.services.apply(ev) {
            if let Some(k) = new
                .as_ref()
                .or(old.as_ref())
                .and_then(ServiceKey::of_service)
            {
                self.enqueue(k);
            }
        }
    }

    fn on_slice(&mut self, ev: watcher::Event<EndpointSlice>) {
        for Change { key, old, new } in self.slices.apply(ev) {
            let old_key = old.as_ref().and_then(key_for_slice);
            let new_key = new.as_ref().and_then(key_for_slice);
            if let Some(k) = &old_key
                && let Some(set) = self.slices_by_key.get_mut(k)
            {
                set.remove(&key);
                if set.is_empty() {
                    self.slices_by_key.remove(k);
                }
            }
            match &new {
                Some(slice) => {
                    self.node_index.apply_slice(slice);
                    if let Some(k) = &new_key {
                        self.slices_by_key
                            .entry(k.clone())
                            .or_default()
                            .insert(key.clone());
                    }
                }
                None => self
                    .node_index
                    .delete_slice(key.namespace.as_deref().unwrap_or_default(), &key.name),
            }
            for k in [old_key, new_key].into_iter().flatten() {
                self.enqueue(k);
            }
        }
    }

    fn on_node(&mut self, ev: watcher::Event<Node>) {
        for Change { old, new, .. } in self.nodes.apply(ev) {
            for k in keys_for_node_change(old.as_ref(), new.as_ref(), &self.node_index) {
                // Only NodePort instances are registered at node addresses.
                let uses_node = self
                    .services
                    .get(Some(&k.namespace), &k.name)
                    .is_some_and(uses_node_addresses);
                if uses_node {
                    self.enqueue(k);
                }
            }
        }
    }

    fn on_ingress(&mut self, ev: watcher::Event<Ingress>) {
        for Change { old, new, .. } in self.ingresses.apply(ev) {
            let mut keys = BTreeSet::new();
            for i in [old.as_ref(), new.as_ref()].into_iter().flatten() {
                keys.extend(keys_for_ingress(i));
            }
            for k in keys {
                self.enqueue(k);
            }
        }
    }

    // ----- observed state ---------------------------------------------------

    fn on_observed(&mut self, snap: ObservedSnapshot) {
        let index = snap.index;
        self.node_exists = snap.node_exists;
        self.observed = snap.instances;
        self.observed_seen = true;
        let now = Instant::now();
        let observed = &self.observed;
        self.overlay.retain(|id, exp| {
            let confirmed = match (&exp.state, observed.get(id)) {
                (None, None) => true,
                (Some(want), Some(have)) => want.same_content(have),
                _ => false,
            };
            keep_expectation(confirmed, exp.index, index, exp.since, now)
        });
    }

    /// The instance as the planner should see it: our unconfirmed writes
    /// over Consul's answer, with the remembered checks.
    fn observed_instance(&self, id: &str) -> Option<CompactView<'_>> {
        let instance = match self.overlay.get(id) {
            Some(exp) => exp.state.as_ref(),
            None => self.observed.get(id),
        }?;
        Some(CompactView {
            node: &self.settings.sync.consul_node_name,
            instance,
            checks: self.checks_of(id),
        })
    }

    /// The checks of one instance as the planner should see them: our
    /// unconfirmed writes over Consul's answer. Every check on our node is
    /// watched, so an instance absent from the answer has none.
    fn checks_of(&self, id: &str) -> &[CompactCheck] {
        match self.check_overlay.get(id) {
            Some(exp) => &exp.checks,
            None => self.checks.get(id).map(Vec::as_slice).unwrap_or_default(),
        }
    }

    fn on_checks(&mut self, snap: CheckSnapshot) {
        let index = snap.index;
        self.checks = snap.checks;
        self.checks_seen = true;
        let now = Instant::now();
        let seen = &self.checks;
        self.check_overlay.retain(|id, exp| {
            let have = seen.get(id).map(Vec::as_slice).unwrap_or_default();
            let confirmed = same_checks(&exp.checks, have);
            keep_expectation(confirmed, exp.index, index, exp.since, now)
        });
    }

    fn all_observed_ids(&self) -> BTreeSet<String> {
        self.observed
            .keys()
            .chain(self.overlay.keys())
            .cloned()
            .collect()
    }

    // ----- planning -----------------------------------------------------------

    /// Desired registrations of one key from the caches, and its warnings.
    fn desired(&self, key: &ServiceKey) -> (Vec<Registration>, Option<(Service, Vec<Warning>)>) {
        let Some(svc) = self.services.get(Some(&key.namespace), &key.name) else {
            return (Vec::new(), None);
        };
        let slices: Vec<&EndpointSlice> = self
            .slices_by_key
            .get(key)
            .into_iter()
            .flatten()
            .filter_map(|k| self.slices.get_key(k))
            .collect();
        let ingresses: Vec<&Ingress> = if self.settings.sync.enable_ingress {
            self.ingresses.in_namespace(&key.namespace).collect()
        } else {
            Vec::new()
        };
        let out = desired_for_service(
            svc,
            &slices,
            &NodeCache(&self.nodes),
            &ingresses,
            &self.settings.sync,
        );
        let warnings = (!out.warnings.is_empty()).then(|| (svc.clone(), out.warnings));
        (out.registrations, warnings)
    }

    /// Records warnings for `key`; returns the Event to send when they
    /// differ from the last ones reported.
    fn note_warnings(
        &mut self,
        key: &ServiceKey,
        w: Option<(Service, Vec<Warning>)>,
    ) -> Option<(Service, Vec<Warning>)> {
        match w {
            None => {
                self.warned.remove(key);
                None
            }
            Some((svc, warnings)) => {
                if self.warned.get(key) == Some(&warnings) {
                    return None;
                }
                self.warned.insert(key.clone(), warnings.clone());
                Some((svc, warnings))
            }
        }
    }

    async fn process_keys(&mut self, keys: Vec<ServiceKey>) {
        let mut ids_by_key: BTreeMap<ServiceKey, BTreeSet<String>> = BTreeMap::new();
        let mut events = Vec::new();
        let mut fresh: BTreeMap<ServiceKey, Vec<Registration>> = BTreeMap::new();
        for key in &keys {
            let (regs, warnings) = self.desired(key);
            if let Some(ev) = self.note_warnings(key, warnings) {
                events.push(ev);
            }
            let mut ids = self.index.claim(key, regs.iter().map(|r| r.id.clone()));
            if let Some(p) = self.pending_ids.remove(key) {
                ids.extend(p);
            }
            ids_by_key.insert(key.clone(), ids);
            fresh.insert(key.clone(), regs);
        }
        let all_ids: BTreeSet<String> = ids_by_key.values().flatten().cloned().collect();
        // A touched ID can be won by a Service outside this round (one this
        // round's Service let go of): its registrations are computed here.
        let outside: BTreeSet<ServiceKey> = all_ids
            .iter()
            .filter_map(|id| self.index.owner_of(id))
            .filter(|k| !fresh.contains_key(*k))
            .cloned()
            .collect();
        for k in outside {
            let (regs, _) = self.desired(&k);
            fresh.insert(k, regs);
        }
        let desired: BTreeMap<String, &Registration> = fresh
            .iter()
            .flat_map(|(k, regs)| self.index.winning(k, regs))
            .filter(|(id, _)| all_ids.contains(*id))
            .map(|(id, r)| (id.to_owned(), r))
            .collect();
        let mut owner: BTreeMap<&str, &ServiceKey> = BTreeMap::new();
        for (k, ids) in &ids_by_key {
            for id in ids {
                owner.entry(id.as_str()).or_insert(k);
            }
        }
        let planned = self.plan_ids(&desired, &all_ids, |op| {
            let id = op_service_id(op);
            owner.get(id).map(|k| (*k).clone())
        });
        let unwanted: BTreeSet<String> = all_ids
            .iter()
            .filter(|id| self.too_large.contains_key(*id) && !desired.contains_key(*id))
            .cloned()
            .collect();
        drop(desired);
        drop(fresh);
        self.forget_too_large(&unwanted);
        // Every operation of a key round has a key, so no orphan can fail.
        let started = Instant::now();
        let WriteOutcome {
            mut failed,
            conflicted,
            ..
        } = self.write(&planned).await;
        tracing::debug!(
            keys = keys.len(),
            ops = planned.len(),
            failed = failed.len(),
            conflicted = conflicted.len(),
            write_ms = started.elapsed().as_millis() as u64,
            "round written"
        );
        // A Service whose write met a newer catalog state is planned again
        // from what was just read, after its backoff: never a blind resend,
        // and a third party changing it over and over meets a growing delay.
        failed.extend(conflicted);
        let keys_with_ops: BTreeSet<&ServiceKey> =
            planned.iter().filter_map(|p| p.key.as_ref()).collect();
        let now = Instant::now();
        for key in &keys {
            if failed.contains(key) {
                if let Some(ids) = ids_by_key.remove(key) {
                    self.pending_ids.entry(key.clone()).or_default().extend(ids);
                }
                self.done(key, Outcome::Retry);
            } else {
                if let Some(t) = self.first_event.remove(key)
                    && keys_with_ops.contains(key)
                {
                    self.metrics.latency(now.duration_since(t));
                }
                self.done(key, Outcome::Success);
            }
        }
        self.send_events(events).await;
    }

    fn done(&self, key: &ServiceKey, outcome: Outcome) {
        if let Err(e) = self.queue.done(key, outcome) {
            tracing::error!(%key, error = %e, "work queue refused done()");
        }
    }

    /// Plans the given IDs (`desired` holds the winning registrations among
    /// them) against the observed state.
    fn plan_ids(
        &self,
        desired: &BTreeMap<String, &Registration>,
        ids: &BTreeSet<String>,
        key_of: impl Fn(&CatalogOp) -> Option<ServiceKey>,
    ) -> Vec<Planned> {
        let observed: BTreeMap<String, CompactView<'_>> = ids
            .iter()
            .filter_map(|id| self.observed_instance(id).map(|o| (id.clone(), o)))
            .collect();
        self.finish_plan(desired, &observed, key_of)
    }

    fn finish_plan(
        &self,
        desired: &BTreeMap<String, &Registration>,
        observed: &BTreeMap<String, CompactView<'_>>,
        key_of: impl Fn(&CatalogOp) -> Option<ServiceKey>,
    ) -> Vec<Planned> {
        let plan = plan_detailed(desired, observed, &self.settings.sync);
        let registers = plan
            .ops
            .iter()
            .filter(|o| matches!(o, CatalogOp::Register(_)))
            .count();
        let conflicts = plan.conflicts.len();
        self.metrics.avoided(
            u64::try_from(desired.len().saturating_sub(registers + conflicts)).unwrap_or(0),
        );
        if conflicts > 0 {
            self.metrics
                .conflicts(u64::try_from(conflicts).unwrap_or(0));
            for c in &plan.conflicts {
                tracing::warn!(
                    service_id = %c.service_id,
                    key = %c.key,
                    "service ID taken on our node by an instance we do not own; left alone"
                );
            }
        }
        let mut planned: Vec<Planned> = plan
            .ops
            .into_iter()
            .map(|op| {
                let key = key_of(&op);
                let (index, check_index) = planned_indexes(&op, observed);
                Planned {
                    op,
                    key,
                    index,
                    check_index,
                }
            })
            .collect();
        order_by_key(&mut planned);
        planned
    }

    /// Re-plans every Service from the caches and writes the drift,
    /// including the removal of owned instances nothing wants.
    async fn full_pass(&mut self) {
        self.full_pass_retry_at = None;
        let mut keys: Vec<ServiceKey> = self
            .services
            .iter()
            .filter_map(|(_, s)| ServiceKey::of_service(s))
            .collect();
        keys.sort();
        keys.dedup();
        let mut events = Vec::new();
        let present: BTreeSet<&ServiceKey> = keys.iter().collect();
        let gone: Vec<ServiceKey> = self
            .index
            .keys()
            .filter(|k| !present.contains(k))
            .cloned()
            .collect();
        for k in gone {
            self.index.remove(&k);
        }
        // Keys in ascending order, a chunk at a time, so that only one
        // chunk's registrations exist at once. When a key is planned every
        // smaller key has already claimed its IDs, so the owner of each of
        // its IDs is final (the smallest claimant wins) and every claimed ID
        // is planned once, with its winner's registration.
        let mut pending = Vec::new();
        let mut outcome = PassOutcome::default();
        // The pass's writes are one stream: whole-node reads stay paused
        // between its flushes too (each would list the whole node again).
        self.in_pass = true;
        self.pause_reads();
        for chunk in keys.chunks(FULL_PASS_CHUNK) {
            let mut fresh = Vec::with_capacity(chunk.len());
            for key in chunk {
                let (regs, warnings) = self.desired(key);
                if let Some(ev) = self.note_warnings(key, warnings) {
                    events.push(ev);
                }
                self.index.claim(key, regs.iter().map(|r| r.id.clone()));
                fresh.push((key, regs));
            }
            let desired: BTreeMap<String, &Registration> = fresh
                .iter()
                .flat_map(|(k, regs)| self.index.winning(k, regs))
                .map(|(id, r)| (id.to_owned(), r))
                .collect();
            let ids: BTreeSet<String> = desired.keys().cloned().collect();
            let index = &self.index;
            pending.extend(self.plan_ids(&desired, &ids, |op| {
                index.owner_of(op_service_id(op)).cloned()
            }));
            drop(desired);
            if pending.len() >= FULL_PASS_FLUSH {
                self.flush(&mut pending, false, &mut outcome).await;
            }
        }
        // Instances no Service claims: this is the only plan that reaps, and
        // it runs after every Service's registrations were written.
        let orphans: BTreeSet<String> = self
            .all_observed_ids()
            .into_iter()
            .filter(|id| self.index.owner_of(id).is_none())
            .collect();
        pending.extend(self.plan_ids(&BTreeMap::new(), &orphans, |_| None));
        self.flush(&mut pending, true, &mut outcome).await;
        let index = &self.index;
        self.too_large.retain(|id, _| index.owner_of(id).is_some());
        self.metrics.too_large_instances(self.too_large.len());
        self.in_pass = false;
        self.resume_reads_soon();
        if outcome.entries > 0 {
            tracing::info!(ops = outcome.entries, "whole-node pass found drift");
        }
        if outcome.failed.is_empty() && !outcome.orphan_failed {
            self.full_pass_failures = 0;
            self.pending_ids.clear();
        } else {
            self.full_pass_failures = self.full_pass_failures.saturating_add(1);
            let exp = self.full_pass_failures.saturating_sub(1).min(16);
            let delay = FULL_PASS_BACKOFF_BASE
                .saturating_mul(1 << exp)
                .min(FULL_PASS_BACKOFF_CAP);
            self.full_pass_retry_at = Some(Instant::now() + delay);
        }
        self.send_events(events).await;
    }

    /// Writes the part of a whole-node pass's `pending` operations that
    /// fills whole transactions (all of it with `all`), and removes it, so
    /// that a cold start never holds every registration at once while
    /// packing exactly as one write of everything would (greedy packing of
    /// a prefix ends on the same transaction boundaries). After a failure
    /// nothing more is sent: the pass is retried as a whole.
    async fn flush(&mut self, pending: &mut Vec<Planned>, all: bool, out: &mut PassOutcome) {
        if pending.is_empty() {
            return;
        }
        let n = if all {
            pending.len()
        } else {
            let chunks = pack_entries(&self.wire_entries(pending).0, self.batch_limit());
            if chunks.len() < 2 {
                return;
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
        };
        let batch: Vec<Planned> = pending.drain(..n).collect();
        out.entries += batch.len();
        if out.stopped {
            out.failed
                .extend(batch.iter().filter_map(|p| p.key.clone()));
            out.orphan_failed |= batch.iter().any(|p| p.key.is_none());
            return;
        }
        let WriteOutcome {
            failed,
            orphan_failed,
            conflicted,
        } = self.write(&batch).await;
        let now = Instant::now();
        for p in &batch {
            if let Some(k) = &p.key
                && !failed.contains(k)
                && !conflicted.contains(k)
                && let Some(t) = self.first_event.remove(k)
            {
                self.metrics.latency(now.duration_since(t));
            }
        }
        // A write that met a newer catalog state does not stop the pass:
        // its instances were read again and its Service is planned again
        // through the queue.
        for k in conflicted {
            self.enqueue(k);
        }
        out.stopped = !failed.is_empty() || orphan_failed;
        out.failed.extend(failed);
        out.orphan_failed |= orphan_failed;
    }

    // ----- writing --------------------------------------------------------------

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
    async fn write(&mut self, planned: &[Planned]) -> WriteOutcome {
        if planned.is_empty() {
            return WriteOutcome::default();
        }
        let node = self.settings.sync.consul_node_name.clone();
        let (entries, held) = self.wire_entries(planned);
        if held > 0 {
            self.metrics.held_back(held);
        }
        let chunks = pack_entries(&entries, self.batch_limit());
        if chunks.is_empty() {
            return WriteOutcome::default();
        }
        self.pause_reads();
        let (result, stale) = self.send_chunks(chunks, planned, &node).await;
        if !stale.is_empty() {
            self.reread(&stale, planned).await;
        }
        if !self.in_pass {
            self.resume_reads_soon();
        }
        result
    }

    /// Pauses the whole-node reads (see [`MAX_READ_DEFERRAL`]).
    fn pause_reads(&mut self) {
        self.resume_reads_at = None;
        self.writing.send_replace(true);
    }

    /// Resumes the whole-node reads [`PAUSE_LINGER`] from now, unless
    /// another write pauses them first.
    fn resume_reads_soon(&mut self) {
        self.resume_reads_at = Some(Instant::now() + PAUSE_LINGER);
    }

    /// `(plan entry, wire operations)` of what [`Engine::write`] sends for
    /// `planned`, with the node's creation first when it does not exist,
    /// and without registrations held back as too large.
    /// Also returns how many registrations were held back.
    fn wire_entries(&self, planned: &[Planned]) -> (Vec<(usize, usize)>, usize) {
        let mut entries: Vec<(usize, usize)> = Vec::with_capacity(planned.len() + 1);
        let mut held = 0;
        let mut sends = planned
            .iter()
            .enumerate()
            .filter(|(_, p)| {
                let keep = self.too_large.is_empty() || !self.held_back(p);
                held += usize::from(!keep);
                keep
            })
            .map(|(i, p)| (i, wire_len(&p.op)))
            .peekable();
        if !self.node_exists && sends.peek().is_some() {
            entries.push((NODE_OP, 1));
        }
        entries.extend(sends);
        (entries, held)
    }

    /// The sending half of [`Engine::write`]. Also returns the plan
    /// entries refused by a failed `cas` (their instances are to be read
    /// again).
    async fn send_chunks(
        &mut self,
        chunks: Vec<Vec<usize>>,
        planned: &[Planned],
        node: &str,
    ) -> (WriteOutcome, BTreeSet<usize>) {
        let mut failed = BTreeSet::new();
        let mut orphan_failed = false;
        let mut conflicted = BTreeSet::new();
        let mut stale_entries: BTreeSet<usize> = BTreeSet::new();
        let node_op = node_op(&self.settings.sync);
        let consul = self.consul.clone();
        let fence = self.consul_fence.clone();
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
                    Some(p) => to_txn_ops(p, node)
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
            .buffered(self.settings.txn_concurrency.max(1));
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
                            self.committed(&chunk, planned, &results);
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
                                    self.node_exists = true;
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
                let delay = self
                    .write_backoff
                    .failed(Instant::now(), rand::random::<f64>());
                self.metrics.write_backoff();
                tracing::warn!(
                    class = e.class(),
                    failures = self.write_backoff.failures(),
                    delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                    "Consul unavailable; the writer waits before its next round"
                );
            }
            None => self.write_backoff.succeeded(),
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
    /// failed `cas` refused, and puts what Consul holds now into the view,
    /// so that their next plan names the current indexes. The reads are
    /// read-only transactions of `get`s: only the refused entries, and no
    /// Raft apply. When the read fails, the entries' expectations are
    /// dropped instead, so that the next whole-node answer decides.
    async fn reread(&mut self, stale: &BTreeSet<usize>, planned: &[Planned]) {
        let node = self.settings.sync.consul_node_name.clone();
        let mut ids = BTreeSet::new();
        let mut check_ids = BTreeSet::new();
        for p in stale.iter().filter_map(|&i| planned.get(i)) {
            // A check removal names no instance; mirra's and consul-k8s's
            // readiness check IDs are `<namespace>/<service ID>`.
            let id = op_service_id(&p.op).to_owned();
            match &p.op {
                CatalogOp::Register(r) => {
                    check_ids.extend(r.check.iter().map(|c| c.check_id.clone()))
                }
                CatalogOp::DeregisterCheck { check_id, .. } => {
                    check_ids.insert(check_id.clone());
                }
                CatalogOp::Deregister { .. } => {}
            }
            check_ids.extend(self.checks_of(&id).iter().map(|c| c.check_id().to_owned()));
            ids.insert(id);
        }
        let ops: Vec<TxnOp> = ids
            .iter()
            .map(|id| TxnOp::Service {
                verb: Verb::Get,
                node: node.clone(),
                service: mirra_consul::Service {
                    id: id.clone(),
                    ..mirra_consul::Service::default()
                },
            })
            .chain(check_ids.iter().map(|c| TxnOp::Check {
                verb: Verb::Get,
                check: HealthCheck {
                    node: node.clone(),
                    check_id: c.clone(),
                    ..HealthCheck::default()
                },
            }))
            .collect();
        let now = Instant::now();
        match read_entries(&self.consul, ops, self.batch_limit()).await {
            Ok(results) => {
                let mut services: HashMap<String, mirra_consul::Service> = HashMap::new();
                let mut checks: HashMap<String, Vec<CompactCheck>> = HashMap::new();
                for r in results {
                    if let Some(s) = r.service {
                        let id = if s.id.is_empty() {
                            s.service.clone()
                        } else {
                            s.id.clone()
                        };
                        services.insert(id, s);
                    }
                    if let Some(c) = r.check
                        && !c.service_id.is_empty()
                    {
                        let c = observed_check(c);
                        checks
                            .entry(c.service_id.clone())
                            .or_default()
                            .push(CompactCheck::of_observed(&c));
                    }
                }
                for id in &ids {
                    let state = services.remove(id).map(|s| {
                        let index = s.modify_index;
                        let (_, inst) = observed_instance(&node, s);
                        CompactInstance::of_observed(&inst, &self.settings.sync)
                            .with_modify_index(index)
                    });
                    // An answer at or past the instance's index shows at
                    // least this state, and then decides again.
                    let index = state
                        .as_ref()
                        .map(CompactInstance::modify_index)
                        .filter(|&i| i != 0);
                    self.overlay.insert(
                        id.clone(),
                        Expectation {
                            state,
                            since: now,
                            index,
                        },
                    );
                    let checks = checks.remove(id).unwrap_or_default();
                    let index = checks
                        .iter()
                        .map(CompactCheck::modify_index)
                        .max()
                        .filter(|&i| i != 0);
                    self.check_overlay.insert(
                        id.clone(),
                        CheckExpectation {
                            checks,
                            since: now,
                            index,
                        },
                    );
                }
                tracing::info!(
                    instances = ids.len(),
                    "catalog changed since planned; read the refused instances again and planning them again"
                );
            }
            Err(e) => {
                self.metrics.consul_error(e.class());
                tracing::warn!(error = %e, "reading refused instances again failed; waiting for the next whole-node read");
                for id in &ids {
                    self.overlay.remove(id);
                    self.check_overlay.remove(id);
                }
            }
        }
    }

    /// A 413 named the server's operation limit: later transactions are
    /// packed to it.
    fn learn_ops_limit(&mut self, limit: usize) {
        if limit < self.batch_limit() {
            tracing::warn!(
                limit,
                configured = self.settings.txn_batch,
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

    /// Records committed operations in the overlay, the check memory and
    /// the metrics.
    fn committed(
        &mut self,
        chunk: &[(TxnOp, usize)],
        planned: &[Planned],
        results: &[mirra_consul::TxnResult],
    ) {
        let index = commit_index(results);
        // The indexes Consul gave what we wrote: the preconditions of our
        // next writes to them, before any read shows them.
        let written = WrittenIndexes::of(results);
        let now = Instant::now();
        let mut seen = BTreeSet::new();
        for (_, i) in chunk {
            if *i == NODE_OP {
                self.node_exists = true;
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
            match &p.op {
                CatalogOp::Register(r) => {
                    self.metrics.operations("register", 1);
                    let checks = mirra_catalog::compact::checks_after(r, self.checks_of(&r.id))
                        .into_iter()
                        .map(|c| match written.checks.get(c.check_id()) {
                            Some(&i) => c.with_modify_index(i),
                            None => c,
                        })
                        .collect();
                    let inst = CompactInstance::of_registration(r, &self.settings.sync)
                        .with_modify_index(written.services.get(&r.id).copied().unwrap_or(0));
                    self.check_overlay.insert(
                        r.id.clone(),
                        CheckExpectation {
                            checks,
                            since: now,
                            index,
                        },
                    );
                    self.overlay.insert(
                        r.id.clone(),
                        Expectation {
                            state: Some(inst),
                            since: now,
                            index,
                        },
                    );
                }
                CatalogOp::Deregister { service_id, .. } => {
                    self.metrics.operations("deregister", 1);
                    // Consul removes the instance's checks with it.
                    self.check_overlay.insert(
                        service_id.clone(),
                        CheckExpectation {
                            checks: Vec::new(),
                            since: now,
                            index,
                        },
                    );
                    self.overlay.insert(
                        service_id.clone(),
                        Expectation {
                            state: None,
                            since: now,
                            index,
                        },
                    );
                }
                CatalogOp::DeregisterCheck { check_id, .. } => {
                    self.metrics.operations("deregister_check", 1);
                    let id = op_service_id(&p.op).to_owned();
                    let mut checks = self.checks_of(&id).to_vec();
                    checks.retain(|c| c.check_id() != check_id);
                    self.check_overlay.insert(
                        id,
                        CheckExpectation {
                            checks,
                            since: now,
                            index,
                        },
                    );
                }
            }
        }
    }

    async fn send_events(&self, events: Vec<(Service, Vec<Warning>)>) {
        for (svc, warnings) in events {
            let ns = svc.metadata.namespace.clone().unwrap_or_default();
            let name = svc.metadata.name.clone().unwrap_or_default();
            let message = warnings
                .iter()
                .map(|w| format!("{}={:?}: {}", w.annotation, w.value, w.message))
                .collect::<Vec<_>>()
                .join("; ");
            tracing::warn!(namespace = %ns, service = %name, %message, "bad annotation values");
            let now = Time(k8s_openapi::jiff::Timestamp::now());
            let ev = Event {
                metadata: ObjectMeta {
                    generate_name: Some(format!("{name}.")),
                    namespace: Some(ns.clone()),
                    ..ObjectMeta::default()
                },
                involved_object: ObjectReference {
                    api_version: Some("v1".into()),
                    kind: Some("Service".into()),
                    name: Some(name.clone()),
                    namespace: Some(ns.clone()),
                    uid: svc.metadata.uid.clone(),
                    resource_version: svc.metadata.resource_version.clone(),
                    ..ObjectReference::default()
                },
                reason: Some(EVENT_REASON.into()),
                message: Some(message),
                type_: Some("Warning".into()),
                count: Some(1),
                first_timestamp: Some(now.clone()),
                last_timestamp: Some(now),
                reporting_component: Some(EVENT_COMPONENT.into()),
                source: Some(k8s_openapi::api::core::v1::EventSource {
                    component: Some(EVENT_COMPONENT.into()),
                    host: None,
                }),
                ..Event::default()
            };
            let api: Api<Event> = Api::namespaced(self.kube.clone(), &ns);
            match self
                .kube_fence
                .send(api.create(&PostParams::default(), &ev))
                .await
            {
                Ok(Ok(_)) => self.metrics.event(),
                // Best effort: the warning is also in the log, and the
                // Service is synced regardless.
                Ok(Err(e)) => tracing::warn!(error = %e, "could not create the warning Event"),
                Err(e) => tracing::debug!(error = %e, "warning Event fenced"),
            }
        }
    }
}

/// Wire operations of a transaction, each with its plan entry.
type Wire = Vec<(TxnOp, usize)>;

/// Consul's answer to one transaction.
type TxnAnswer = Result<Vec<mirra_consul::TxnResult>, mirra_consul::Error>;

/// What became of one packed transaction: the parts it was sent as (itself,
/// or smaller parts after 413s), each with its answer (`None`: not sent,
/// because a failure stopped the round), how many times a part was split,
/// and the operation limit a 413 named.
#[derive(Default)]
struct Sent {
    parts: Vec<(Wire, Option<TxnAnswer>)>,
    splits: usize,
    ops_limit: Option<usize>,
}

/// Sends one transaction; one refused with 413 is split in two halves (by
/// plan entry, never inside one) and each is sent the same way, in order,
/// until every part fits or is a single entry. A failure other than a
/// rollback or a 413 stops the round (`abort`).
async fn send_splitting(
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

/// Splits a transaction's operations in two halves of its plan entries
/// (the operations of one entry are adjacent). `Err` gives back a part of
/// one entry, which cannot be split.
fn halve(mut part: Wire) -> Result<(Wire, Wire), Wire> {
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
fn fingerprint<'a>(ops: impl Iterator<Item = &'a TxnOp>) -> Option<u64> {
    use std::hash::{DefaultHasher, Hasher};
    let mut h = DefaultHasher::new();
    for op in ops {
        h.write(&serde_json::to_vec(op).ok()?);
    }
    Some(h.finish())
}

/// Orders a plan for writing: the operations of one Service together, so
/// that its transactions are the first it can be in and it is done as soon
/// as they commit, and within a Service the new instances before the
/// removal of the old ones, so that a rollout never shows Consul a Service
/// without instances. Orphans (no Service) go last. Stable, so the
/// planner's order holds within each group.
fn order_by_key(planned: &mut [Planned]) {
    fn rank(op: &CatalogOp) -> u8 {
        match op {
            CatalogOp::Register(_) => 0,
            CatalogOp::DeregisterCheck { .. } => 1,
            CatalogOp::Deregister { .. } => 2,
        }
    }
    planned.sort_by(|a, b| match (&a.key, &b.key) {
        (Some(x), Some(y)) => x.cmp(y).then(rank(&a.op).cmp(&rank(&b.op))),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => rank(&a.op).cmp(&rank(&b.op)),
    });
}

/// The service ID an operation is about (for a check removal, the ID part
/// of `<namespace>/<serviceID>`).
fn op_service_id(op: &CatalogOp) -> &str {
    match op {
        CatalogOp::Register(r) => &r.id,
        CatalogOp::Deregister { service_id, .. } => service_id,
        CatalogOp::DeregisterCheck { check_id, .. } => check_id
            .split_once('/')
            .map_or(check_id.as_str(), |(_, id)| id),
    }
}

/// Reads entries with read-only transactions of `get`s (no Raft apply), at
/// most `max` a transaction. Consul rolls such a transaction back when an
/// entry is absent, naming it, and then returns nothing else: absent
/// entries are taken out and the rest asked again, so a chunk costs at
/// most one more request per absent entry, and each round asks less.
async fn read_entries(
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

/// A check as Consul's typed answers carry it, in the observed form.
fn observed_check(c: HealthCheck) -> mirra_catalog::ObservedCheck {
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
fn observed_from(
    snap: mirra_consul::NodeServices,
) -> impl Iterator<Item = (String, ObservedInstance)> {
    let node = snap.node.map(|n| n.node).unwrap_or_default();
    snap.services
        .into_iter()
        .map(move |s| observed_instance(&node, s))
}

/// One instance on `node` of a typed answer, in the observed form.
fn observed_instance(node: &str, s: mirra_consul::Service) -> (String, ObservedInstance) {
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
        };
        (id, inst)
    }
}

/// A body Consul answered that does not parse, as the client reports an
/// undecodable answer (not retryable in itself; the watch reads again).
fn decode_error(operation: &'static str, e: &mirra_catalog::ObservedError) -> mirra_consul::Error {
    mirra_consul::Error::Decode {
        operation,
        message: e.to_string(),
    }
}

/// The Raft index a committed transaction got: the highest `ModifyIndex`
/// in its results (a write that changed nothing keeps its older index, and
/// then the state it confirms is older still). `None` when the transaction
/// returned no results (deletes only).
fn commit_index(results: &[mirra_consul::TxnResult]) -> Option<u64> {
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
fn pack_entries(entries: &[(usize, usize)], max: usize) -> Vec<Vec<usize>> {
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
fn wire_len(op: &CatalogOp) -> usize {
    match op {
        CatalogOp::Register(r) if r.check.is_some() => 2,
        _ => 1,
    }
}

/// Whether two check lists hold the same checks, in any order.
fn same_checks(a: &[CompactCheck], b: &[CompactCheck]) -> bool {
    a.len() == b.len() && a.iter().all(|c| b.iter().any(|x| x.same_content(c)))
}

/// The `ModifyIndex` of every instance and check a committed transaction
/// wrote, from its results.
#[derive(Default)]
struct WrittenIndexes {
    services: HashMap<String, u64>,
    checks: HashMap<String, u64>,
}

impl WrittenIndexes {
    fn of(results: &[mirra_consul::TxnResult]) -> Self {
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

/// The indexes an operation is planned from: the instance's and the
/// written or removed check's `ModifyIndex` in the view the plan saw (0
/// where the view has none, i.e. "must not exist yet").
fn planned_indexes(op: &CatalogOp, observed: &BTreeMap<String, CompactView<'_>>) -> (u64, u64) {
    let check_in = |view: Option<&CompactView<'_>>, check_id: &str| {
        view.and_then(|v| v.checks.iter().find(|c| c.check_id() == check_id))
            .map_or(0, CompactCheck::modify_index)
    };
    match op {
        CatalogOp::Register(r) => {
            let view = observed.get(&r.id);
            let index = view.map_or(0, |v| v.instance.modify_index());
            let check = r.check.as_ref().map_or(0, |c| check_in(view, &c.check_id));
            (index, check)
        }
        CatalogOp::Deregister { service_id, .. } => (
            observed
                .get(service_id)
                .map_or(0, |v| v.instance.modify_index()),
            0,
        ),
        CatalogOp::DeregisterCheck { check_id, .. } => {
            // The check's instance is the one whose view lists it; its ID
            // is usually the part after the namespace.
            let index = check_in(observed.get(op_service_id(op)), check_id);
            let index = if index != 0 {
                index
            } else {
                observed
                    .values()
                    .map(|v| check_in(Some(v), check_id))
                    .find(|&i| i != 0)
                    .unwrap_or(0)
            };
            (0, index)
        }
    }
}

/// The Node operation that creates our node when it does not exist: a
/// `cas` with index 0, "only if absent", so that a node someone else
/// registered meanwhile (another tool, or a view that lagged) is never
/// rewritten; Consul refuses it and the rest of the transaction is sent
/// without it.
fn node_op(sync: &mirra_catalog::SyncSettings) -> TxnOp {
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
fn to_txn_ops(p: &Planned, node: &str) -> Vec<TxnOp> {
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
                ..mirra_consul::Service::default()
            },
        }],
        CatalogOp::DeregisterCheck { check_id, .. } => vec![TxnOp::Check {
            verb: Verb::DeleteCas,
            check: HealthCheck {
                node: node.to_owned(),
                check_id: check_id.clone(),
                modify_index: p.check_index,
                ..HealthCheck::default()
            },
        }],
    }
}

/// `-purge-k8s-services-from-node`: deregisters every instance we own on
/// our node, in transactions, and returns.
async fn purge(
    consul: &mirra_consul::Client,
    settings: &Settings,
    metrics: &CatalogMetrics,
) -> Result<(), ControllerError> {
    let node = settings.sync.consul_node_name.clone();
    let fence = WriteFence::new(settings.lease.clone(), consul.request_timeout());
    let mut purged = 0;
    let mut rereads = 0;
    'read: loop {
        let snap = consul
            .node_services(&node, &QueryOptions::default())
            .await
            .map_err(ControllerError::Purge)?;
        let snap_node = snap
            .value
            .node
            .as_ref()
            .map(|n| n.node.clone())
            .unwrap_or_default();
        // Each removal names the index it was read at (`delete-cas`): an
        // instance changed since, by anyone, is read again rather than
        // removed blindly.
        let ops: Vec<TxnOp> = snap
            .value
            .services
            .into_iter()
            .filter_map(|s| {
                let index = s.modify_index;
                let (id, i) = observed_instance(&snap_node, s);
                is_owned(&i, &settings.sync).then(|| Planned {
                    op: CatalogOp::Deregister {
                        node: node.clone(),
                        service_id: id,
                        service_name: i.name,
                        check_ids: Vec::new(),
                    },
                    key: None,
                    index,
                    check_index: 0,
                })
            })
            .flat_map(|p| to_txn_ops(&p, &node))
            .collect();
        for chunk in mirra_consul::split_ops(ops, settings.txn_batch.max(1)) {
            let sent = fence
                .send(consul.txn(&chunk))
                .await
                .map_err(ControllerError::PurgeFenced)?;
            match sent {
                Ok(_) => {}
                Err(e)
                    if rereads < PURGE_REREADS
                        && !e.failed_ops().is_empty()
                        && e.failed_ops().iter().all(|f| f.is_cas_conflict()) =>
                {
                    metrics.cas_conflicts(u64::try_from(e.failed_ops().len()).unwrap_or(0));
                    tracing::info!(
                        refused = e.failed_ops().len(),
                        "instances changed while purging; reading the node again"
                    );
                    rereads += 1;
                    continue 'read;
                }
                Err(e) => {
                    metrics.consul_error(e.class());
                    return Err(ControllerError::Purge(e));
                }
            }
            metrics.transaction();
            metrics.operations("deregister", u64::try_from(chunk.len()).unwrap_or(0));
            purged += chunk.len();
        }
        break;
    }
    tracing::info!(node = %node, instances = purged, "purged our instances from the node");
    Ok(())
}

/// How often `-purge-k8s-services-from-node` reads the node again after a
/// removal met a newer state of an instance, before it gives up (and can
/// be run again).
const PURGE_REREADS: u32 = 5;

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    /// A planned operation with the given indexes.
    fn at(op: CatalogOp, index: u64, check_index: u64) -> Planned {
        Planned {
            op,
            key: None,
            index,
            check_index,
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
    fn a_services_new_instances_come_before_the_removal_of_its_old_ones() {
        let key = |n: &str| Some(ServiceKey::new("ns", n));
        let reg = |id: &str| {
            CatalogOp::Register(Registration {
                key: ServiceKey::new("ns", "x"),
                id: id.into(),
                name: "x".into(),
                tags: Vec::new(),
                address: String::new(),
                port: 0,
                ports: Vec::new(),
                meta: BTreeMap::new(),
                weights: mirra_catalog::Weights::default(),
                check: None,
            })
        };
        let dereg = |id: &str| CatalogOp::Deregister {
            node: "n".into(),
            service_id: id.into(),
            service_name: "x".into(),
            check_ids: Vec::new(),
        };
        let check = |id: &str| CatalogOp::DeregisterCheck {
            node: "n".into(),
            check_id: id.into(),
        };
        // As the planner emits them: every removal first.
        let mut planned = vec![
            Planned {
                op: dereg("b-old"),
                key: key("b"),
                index: 0,
                check_index: 0,
            },
            Planned {
                op: dereg("orphan"),
                key: None,
                index: 0,
                check_index: 0,
            },
            Planned {
                op: dereg("a-old"),
                key: key("a"),
                index: 0,
                check_index: 0,
            },
            Planned {
                op: check("ns/a-keep"),
                key: key("a"),
                index: 0,
                check_index: 0,
            },
            Planned {
                op: reg("b-new"),
                key: key("b"),
                index: 0,
                check_index: 0,
            },
            Planned {
                op: reg("a-new"),
                key: key("a"),
                index: 0,
                check_index: 0,
            },
        ];
        order_by_key(&mut planned);
        let order: Vec<&str> = planned.iter().map(|p| p.op.target()).collect();
        assert_eq!(
            order,
            vec!["a-new", "ns/a-keep", "a-old", "b-new", "b-old", "orphan"]
        );
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
    fn plans_take_their_indexes_from_the_view() {
        let s = mirra_catalog::SyncSettings::default();
        let mut r = multi_port_registration();
        r.check = Some(mirra_catalog::ReadinessCheck {
            check_id: "ns/web-1".into(),
            service_id: "web-1".into(),
            status: mirra_catalog::CheckStatus::Passing,
        });
        let inst = CompactInstance::of_registration(&r, &s).with_modify_index(30);
        let checks = vec![
            CompactCheck::of_registration(&r)
                .unwrap()
                .with_modify_index(31),
        ];
        let view = CompactView {
            node: "n",
            instance: &inst,
            checks: &checks,
        };
        let observed = BTreeMap::from([("web-1".to_owned(), view)]);
        let reg = CatalogOp::Register(r.clone());
        assert_eq!(planned_indexes(&reg, &observed), (30, 31));
        assert_eq!(planned_indexes(&reg, &BTreeMap::new()), (0, 0));
        let dereg = CatalogOp::Deregister {
            node: "n".into(),
            service_id: "web-1".into(),
            service_name: "web".into(),
            check_ids: Vec::new(),
        };
        assert_eq!(planned_indexes(&dereg, &observed), (30, 0));
        let check = CatalogOp::DeregisterCheck {
            node: "n".into(),
            check_id: "ns/web-1".into(),
        };
        assert_eq!(planned_indexes(&check, &observed), (0, 31));
        // A check whose ID does not name its instance is found by its ID.
        let other = vec![CompactCheck::of_observed(&mirra_catalog::ObservedCheck {
            check_id: "legacy-check".into(),
            service_id: "web-1".into(),
            modify_index: 44,
            ..Default::default()
        })];
        let view = CompactView {
            node: "n",
            instance: &inst,
            checks: &other,
        };
        let observed = BTreeMap::from([("web-1".to_owned(), view)]);
        let check = CatalogOp::DeregisterCheck {
            node: "n".into(),
            check_id: "legacy-check".into(),
        };
        assert_eq!(planned_indexes(&check, &observed), (0, 44));
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

    fn multi_port_registration() -> Registration {
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
    fn expectations_yield_to_answers_read_after_the_commit() {
        let t = Instant::now();
        // Not shown yet, answer older than the commit: keep.
        assert!(keep_expectation(false, Some(10), 9, t, t));
        // Not shown, answer read at or after the commit: someone else's
        // later change wins.
        assert!(!keep_expectation(false, Some(10), 10, t, t));
        // Shown: drop.
        assert!(!keep_expectation(true, Some(10), 9, t, t));
        // Commit index unknown: only the TTL ends it.
        assert!(keep_expectation(false, None, 99, t, t));
        assert!(!keep_expectation(false, None, 99, t, t + OVERLAY_TTL));
    }

    #[test]
    fn op_service_id_of_check_removal() {
        let op = CatalogOp::DeregisterCheck {
            node: "n".into(),
            check_id: "ns/web-abc".into(),
        };
        assert_eq!(op_service_id(&op), "web-abc");
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
