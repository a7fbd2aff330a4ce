//! The event loop of the catalog sync: the thin part that wires the
//! watches, the queue, the index and the writer together.
//!
//! One task owns all state, so there are no locks. Watch events and Consul
//! answers are folded into the [`CatalogIndex`], which names the Service
//! keys they touch; keys wait in a [`WorkQueue`], and when a batch of keys
//! is ready (after the debounce window) it is planned together
//! ([`CatalogIndex::plan_round`]) and handed to the `TxnWriter`, which
//! reports what committed back to the index.
//!
//! Observed state is ONE blocking query on `node-services/<our node>` for
//! the instances and ONE on `health/node/<our node>` for their checks (the
//! node-services answer carries no check status), decoded on their own
//! tasks; the index keeps an overlay of our own writes over them.
//!
//! Safety rules: nothing is written before every watch has its initial list
//! and the first node-services and health/node answers arrived;
//! then one verification pass (the only kind of plan that can reap orphans)
//! runs, and after it keys are planned one batch at a time. Only instances
//! passing `mirra_catalog::is_owned` are ever touched (the planner
//! guarantees it). A failed write keeps the key (and the service IDs it
//! touched) pending with backoff: memory is bounded by the key set. The
//! writer's failure handling (413, Consul unavailable, failed `cas`) is
//! described in the `writer` module.
//!
//! This module must NOT compute registrations or plans itself (mirra-catalog
//! and [`crate::round`] do), send Consul transactions (the writer does), nor
//! retry individual HTTP requests (mirra-consul does).

use std::collections::{BTreeMap, BTreeSet};
use std::pin::pin;
use std::time::Duration;

use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::{Node, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::Ingress;
use kube::api::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, watcher};
use mirra_catalog::ServiceKey;
use mirra_catalog::compact::{parse_health_checks_compact, parse_node_services_compact};
use mirra_consul::WatchOptions;
use mirra_runtime::watch::{WatchFailure, WatchHints, WatchRetry, retrying};
use mirra_runtime::{FenceError, Outcome, ReadyFlag, TaskGuard, WorkQueue};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub use crate::events::{EVENT_COMPONENT, EVENT_REASON};
use crate::flags::Settings;
pub use crate::index::OVERLAY_TTL;
use crate::index::{CatalogIndex, CheckSnapshot, ObservedSnapshot};
use crate::metrics::CatalogMetrics;
use crate::round::{Planned, Round};
use crate::writer::{TxnWriter, WriteOutcome};

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

/// Planned operations a verification pass holds before writing the ones that
/// fill whole transactions: about 32 transactions' worth, a few MB.
const FULL_PASS_FLUSH: usize = 1024;

/// What the writes of one verification pass came to.
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

/// Services planned together in a verification pass: enough to share the
/// planner's set-up, few enough that their registrations (a few KB each)
/// never add up to much.
const FULL_PASS_CHUNK: usize = 256;

/// Backoff of a failed verification pass: from 1 s up to 60 s, so a Consul
/// outage costs at most one pass a minute.
const FULL_PASS_BACKOFF_BASE: Duration = Duration::from_secs(1);
/// See [`FULL_PASS_BACKOFF_BASE`].
const FULL_PASS_BACKOFF_CAP: Duration = Duration::from_secs(60);

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
        return crate::purge::purge(&consul, &settings, &metrics).await;
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
        // With namespaces, mirra's instances are spread over many: both
        // reads cover every namespace of the partition, so that ownership,
        // adoption and removal see all of them.
        query: mirra_consul::QueryOptions {
            namespace: engine
                .settings
                .sync
                .consul_namespaces
                .enabled()
                .then(|| "*".to_owned()),
            ..mirra_consul::QueryOptions::default()
        },
    };
    let node_name = engine.settings.sync.consul_node_name.clone();
    let pause = mirra_consul::Pause::new(engine.writer.writing(), MAX_READ_DEFERRAL);
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

    let mut verify = tokio::time::interval(engine.settings.verify_interval);
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
                Some(Ok(ev)) => {
                    let keys = engine.index.on_service(ev);
                    engine.enqueue(keys);
                }
                Some(Err(e)) => engine.watch_error("services", &e),
                None => return Err(ControllerError::WatchEnded("Service")),
            },
            ev = slices.next() => match ev {
                Some(Ok(ev)) => {
                    let keys = engine.index.on_slice(ev);
                    engine.enqueue(keys);
                }
                Some(Err(e)) => engine.watch_error("endpointslices", &e),
                None => return Err(ControllerError::WatchEnded("EndpointSlice")),
            },
            ev = nodes.next() => match ev {
                Some(Ok(ev)) => {
                    let keys = engine.index.on_node(ev);
                    engine.enqueue(keys);
                }
                Some(Err(e)) => engine.watch_error("nodes", &e),
                None => return Err(ControllerError::WatchEnded("Node")),
            },
            ev = ingresses.next(), if ingress_enabled => match ev {
                Some(Ok(ev)) => {
                    let keys = engine.index.on_ingress(ev);
                    engine.enqueue(keys);
                }
                Some(Err(e)) => engine.watch_error("ingresses", &e),
                None => return Err(ControllerError::WatchEnded("Ingress")),
            },
            snap = observed.recv() => match snap {
                Some(Ok(v)) => {
                    let drift = engine.index.on_observed(v, Instant::now());
                    engine.repair(drift).await;
                }
                Some(Err(e)) => {
                    engine.metrics.consul_error(e.class());
                    tracing::warn!(error = %e, "reading node-services failed; retrying");
                }
                None => return Err(ControllerError::ConsulWatchEnded),
            },
            snap = checks.recv() => match snap {
                Some(Ok(v)) => {
                    let drift = engine.index.on_checks(v, Instant::now());
                    engine.repair(drift).await;
                }
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
            _ = sleep_until_opt(engine.writer.backoff.until()) => {
                engine.writer.backoff.expired();
            },
            _ = sleep_until_opt(engine.writer.resume_reads_at) => {
                engine.writer.resume_reads();
            },
        }
        if !engine.synced && engine.index.synced() {
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

/// Drives `stream` on its own task, converting each item there. One item
/// in flight: an answer waits until the loop took the previous one (each
/// answer is a whole snapshot, so the loop never needs a backlog). The
/// guard aborts the task when dropped, so a watch parked in a long
/// blocking query does not outlive the controller.
fn spawn_converted<T, U>(
    stream: impl Stream<Item = Result<T, mirra_consul::Error>> + Send + 'static,
    convert: impl Fn(T) -> Result<U, mirra_consul::Error> + Send + 'static,
) -> (
    tokio::sync::mpsc::Receiver<Result<U, mirra_consul::Error>>,
    TaskGuard,
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
    (rx, mirra_runtime::task::guard(&task))
}

async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// A cluster-wide watch that backs off while refused (kube's defaults:
/// 800 ms doubling to 30 s) and says why in `Engine::watch_error`.
fn watch_stream<K>(
    kube: &kube::Client,
) -> impl Stream<Item = Result<watcher::Event<K>, WatchFailure>> + Send + use<K>
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
    K::DynamicType: Default,
{
    let api: Api<K> = Api::all_with(kube.clone(), &K::DynamicType::default());
    let stream = watcher(api, watcher::Config::default())
        // Nothing here reads managedFields or kubectl's copy of the last
        // applied object, and at 10,000 Services and slices they would be a
        // large share of the caches.
        .modify(|obj: &mut K| {
            mirra_runtime::trim::strip_managed_fields_and_last_applied(obj.meta_mut())
        });
    retrying(stream, WatchRetry::default())
}

/// The RBAC rule each cluster-wide watch needs, for the log line of a
/// refused one.
const RBAC_HINT: &str = "grant list and watch on it to the sync's ServiceAccount (the \
                         ClusterRole in deploy/catalog/rbac.yaml)";

fn watch_hints(kind: &'static str) -> WatchHints {
    WatchHints {
        // As RBAC names them (the metric label is the plain plural).
        resource: match kind {
            "endpointslices" => "endpointslices.discovery.k8s.io",
            "ingresses" => "ingresses.networking.k8s.io",
            other => other,
        },
        install: None,
        rbac: RBAC_HINT,
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

/// The event loop's state: the index, the writer, the queue, and when
/// the next verification pass is due.
struct Engine {
    settings: Settings,
    metrics: CatalogMetrics,
    queue: WorkQueue<ServiceKey>,
    index: CatalogIndex,
    writer: TxnWriter,
    /// When each pending Service's first unplanned change came in (the
    /// sync latency metric).
    first_event: BTreeMap<ServiceKey, Instant>,
    repairs: crate::repair::RepairGovernor<ServiceKey>,
    synced: bool,
    full_pass_failures: u32,
    /// Verification passes run, the first (which writes everything the
    /// event path has not yet) included.
    passes_run: u64,
    full_pass_retry_at: Option<Instant>,
}

impl Engine {
    fn new(
        kube: kube::Client,
        consul: mirra_consul::Client,
        settings: Settings,
        metrics: CatalogMetrics,
        queue: WorkQueue<ServiceKey>,
    ) -> Self {
        let repairs = crate::repair::RepairGovernor::new(
            settings.repair_backoff_base,
            settings.repair_backoff_cap,
            settings.repair_quiet,
        );
        Self {
            index: CatalogIndex::new(settings.sync.clone()),
            writer: TxnWriter::new(kube, consul, &settings, metrics.clone()),
            settings,
            metrics,
            queue,
            first_event: BTreeMap::new(),
            repairs,
            synced: false,
            full_pass_failures: 0,
            passes_run: 0,
            full_pass_retry_at: None,
        }
    }

    /// Whether a round may start: synced, and the writer not backing off.
    fn may_write(&self) -> bool {
        self.synced && self.writer.backoff.until().is_none()
    }

    fn enqueue(&mut self, keys: impl IntoIterator<Item = ServiceKey>) {
        for key in keys {
            self.first_event
                .entry(key.clone())
                .or_insert_with(Instant::now);
            self.queue.add(key);
        }
    }

    /// Plans again, promptly, the Services whose instances someone else
    /// changed in Consul (before the first pass, that pass covers them).
    async fn repair(&mut self, keys: BTreeSet<ServiceKey>) {
        if !self.synced || keys.is_empty() {
            return;
        }
        let now = Instant::now();
        for key in &keys {
            self.first_event.entry(key.clone()).or_insert(now);
        }
        let fights =
            crate::repair::schedule(&mut self.repairs, &self.queue, &self.metrics, keys, now);
        let services = fights
            .iter()
            .filter_map(|k| self.index.service(k).cloned())
            .collect();
        self.writer.send_contested(services).await;
    }

    /// Logs a failed attempt (what is missing and how to fix it, and when
    /// the next one is) and counts it; the stream retries by itself, and
    /// readiness stays false until every watch has listed.
    fn watch_error(&self, kind: &'static str, f: &WatchFailure) {
        self.metrics.watch_error(kind);
        tracing::warn!(
            kind,
            cause = f.cause().as_str(),
            attempt = f.attempt,
            retry_in_ms = f.retry_in_ms(),
            "{}; retrying",
            mirra_runtime::watch::explain(&watch_hints(kind), f)
        );
    }

    /// Reports what planning found: writes avoided, and IDs held by
    /// instances we do not own.
    fn report_plan(&self, round: &Round) {
        self.metrics.avoided(round.avoided);
        if !round.conflicts.is_empty() {
            self.metrics
                .conflicts(u64::try_from(round.conflicts.len()).unwrap_or(0));
            for c in &round.conflicts {
                tracing::warn!(
                    service_id = %c.service_id,
                    key = %c.key,
                    "service ID taken on our node by an instance we do not own; left alone"
                );
            }
        }
    }

    async fn process_keys(&mut self, keys: Vec<ServiceKey>) {
        for key in &keys {
            self.repairs.ran(key);
        }
        let round = self.index.plan_round(&keys);
        self.report_plan(&round);
        self.writer.forget_too_large(
            round
                .touched()
                .into_iter()
                .filter(|id| !round.wanted.contains(id)),
        );
        let Round {
            planned,
            mut ids_by_key,
            events,
            ..
        } = round;
        // Every operation of a key round has a key, so no orphan can fail.
        let started = Instant::now();
        let WriteOutcome {
            mut failed,
            conflicted,
            ..
        } = self.writer.write(&mut self.index, &planned).await;
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
                    self.index.keep_pending(key, ids);
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
        self.writer.send_events(events).await;
    }

    fn done(&self, key: &ServiceKey, outcome: Outcome) {
        if let Err(e) = self.queue.done(key, outcome) {
            tracing::error!(%key, error = %e, "work queue refused done()");
        }
    }

    /// Re-plans every Service from the caches and writes the drift,
    /// including the removal of owned instances nothing wants.
    async fn full_pass(&mut self) {
        self.full_pass_retry_at = None;
        self.repairs.ran_all();
        let keys = self.index.drop_gone_keys();
        let mut events = Vec::new();
        // Keys in ascending order, a chunk at a time, so that only one
        // chunk's registrations exist at once (see
        // `CatalogIndex::plan_pass_chunk`).
        let mut pending = Vec::new();
        let mut outcome = PassOutcome::default();
        self.writer.start_pass();
        for chunk in keys.chunks(FULL_PASS_CHUNK) {
            let round = self.index.plan_pass_chunk(chunk);
            self.report_plan(&round);
            events.extend(round.events);
            pending.extend(round.planned);
            if pending.len() >= FULL_PASS_FLUSH {
                self.flush(&mut pending, false, &mut outcome).await;
            }
        }
        // Instances no Service claims: this is the only plan that reaps, and
        // it runs after every Service's registrations were written.
        let orphans = self.index.plan_orphans();
        self.report_plan(&orphans);
        pending.extend(orphans.planned);
        self.flush(&mut pending, true, &mut outcome).await;
        self.writer.end_pass(&self.index);
        if outcome.entries > 0 {
            tracing::info!(ops = outcome.entries, "verification pass found drift");
            if self.passes_run > 0 {
                self.metrics.pass_drift(outcome.entries);
            }
        }
        self.passes_run = self.passes_run.saturating_add(1);
        if outcome.failed.is_empty() && !outcome.orphan_failed {
            self.full_pass_failures = 0;
            self.index.clear_pending();
        } else {
            self.full_pass_failures = self.full_pass_failures.saturating_add(1);
            let exp = self.full_pass_failures.saturating_sub(1).min(16);
            let delay = FULL_PASS_BACKOFF_BASE
                .saturating_mul(1 << exp)
                .min(FULL_PASS_BACKOFF_CAP);
            self.full_pass_retry_at = Some(Instant::now() + delay);
        }
        self.writer.send_events(events).await;
    }

    /// Writes the part of a verification pass's `pending` operations that
    /// fills whole transactions (all of it with `all`), and removes it, so
    /// that a cold start never holds every registration at once while
    /// packing exactly as one write of everything would. After a failure
    /// nothing more is sent: the pass is retried as a whole.
    async fn flush(&mut self, pending: &mut Vec<Planned>, all: bool, out: &mut PassOutcome) {
        if pending.is_empty() {
            return;
        }
        let n = if all {
            pending.len()
        } else {
            self.writer.full_prefix(&self.index, pending)
        };
        if n == 0 {
            return;
        }
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
        } = self.writer.write(&mut self.index, &batch).await;
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
        self.enqueue(conflicted);
        out.stopped = !failed.is_empty() || orphan_failed;
        out.failed.extend(failed);
        out.orphan_failed |= orphan_failed;
    }
}
