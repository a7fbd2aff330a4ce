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
use mirra_catalog::compact::{parse_health_checks_compact, parse_node_services_compact};
use mirra_catalog::{ServiceKey, Warning};
use mirra_consul::WatchOptions;
use mirra_runtime::watch::{WatchFailure, WatchHints, WatchRetry, retrying};
use mirra_runtime::{FenceError, Outcome, ReadyFlag, TaskGuard, WorkQueue};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::backoff::WriterBackoff;
pub use crate::events::{EVENT_COMPONENT, EVENT_REASON};
use crate::flags::Settings;
pub use crate::index::OVERLAY_TTL;
use crate::index::{CatalogIndex, CheckSnapshot, ObservedSnapshot, WriteEvent};
use crate::metrics::CatalogMetrics;
use crate::round::{Planned, Round};
use crate::writer::task::sleep_until_opt;
use crate::writer::{
    Job, Report, Sent, TxnWriter, WriteDone, WriteJob, WriteOutcome, reread_request,
};

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
    /// The writer task ended (it panicked). Retryable by restarting.
    #[error("the Consul writer ended unexpectedly")]
    WriterEnded,
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
    let writer = TxnWriter::new(kube.clone(), consul.clone(), &settings, metrics.clone());
    let writing = writer.writing();
    let mut writer = crate::writer::spawn(writer);
    let mut engine = Engine::new(settings, metrics, queue, writer.jobs.clone());

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
    let pause = mirra_consul::Pause::new(writing, MAX_READ_DEFERRAL);
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
                    engine.repair(drift);
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
                    engine.repair(drift);
                }
                Some(Err(e)) => {
                    engine.metrics.consul_error(e.class());
                    tracing::warn!(error = %e, "reading health/node failed; retrying");
                }
                None => return Err(ControllerError::ConsulWatchEnded),
            },
            report = writer.reports.recv() => match report {
                Some(report) => engine.on_report(report),
                None => return Err(ControllerError::WriterEnded),
            },
            // While a write is in flight or the writer backs off, keys wait
            // in the queue (one entry per Service however often it changes)
            // and no pass starts.
            keys = queue.next_batch_gathering(max_keys, gather), if engine.may_write() => {
                engine.process_keys(keys);
            },
            _ = verify.tick(), if engine.may_write() => {
                engine.full_pass();
            },
            () = sleep_until_opt(engine.full_pass_retry_at), if engine.may_write() => {
                engine.full_pass();
            },
            () = sleep_until_opt(engine.backoff.until()) => {
                engine.backoff.expired();
            },
        }
        if !engine.synced && engine.index.synced() {
            ready.set_ready();
            engine.synced = true;
            tracing::info!("initial lists and Consul state read; running the first pass");
            engine.full_pass();
            verify.reset();
        }
        engine.metrics.pending(engine.queue.len());
    }
    engine.queue.shutdown();
    // The writer finishes the jobs it was given (a write in flight is not
    // cut in half) and stops once nobody can send it more.
    drop(engine);
    if let Err(e) = writer.finish().await {
        tracing::warn!(error = %e, "the writer task ended abnormally");
    }
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

/// The event loop's state: the index, the writer's end, the queue, and
/// when the next verification pass is due.
struct Engine {
    settings: Settings,
    metrics: CatalogMetrics,
    queue: WorkQueue<ServiceKey>,
    index: CatalogIndex,
    /// The writer task's jobs.
    jobs: tokio::sync::mpsc::UnboundedSender<Job>,
    /// Waits out Consul's unavailability before the next write.
    backoff: WriterBackoff,
    /// Writes and re-reads handed to the writer and not yet answered.
    writes_in_flight: usize,
    /// The round whose write is in flight.
    round: Option<RoundInFlight>,
    /// The verification pass under way.
    pass: Option<PassState>,
    /// Registrations the writer holds back as too large (as of its last
    /// report).
    held_back: Vec<String>,
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

/// A round whose write is in flight.
struct RoundInFlight {
    keys: Vec<ServiceKey>,
    ids_by_key: BTreeMap<ServiceKey, BTreeSet<String>>,
    /// The first unplanned change of each key the round covers, taken out
    /// of `Engine::first_event` so that a change arriving during the write
    /// starts a latency of its own.
    first_events: BTreeMap<ServiceKey, Instant>,
    started: Instant,
}

/// A verification pass under way: planned a chunk of keys at a time, and
/// written as whole transactions fill up.
struct PassState {
    keys: Vec<ServiceKey>,
    /// Index in `keys` of the next chunk to plan.
    next: usize,
    /// Planned operations not yet written.
    pending: Vec<Planned>,
    /// Whether the orphans were planned (the last step).
    orphans_planned: bool,
    /// The last step was a write: plan more before writing again.
    just_flushed: bool,
    events: Vec<(Service, Vec<Warning>)>,
    outcome: PassOutcome,
}

impl Engine {
    fn new(
        settings: Settings,
        metrics: CatalogMetrics,
        queue: WorkQueue<ServiceKey>,
        jobs: tokio::sync::mpsc::UnboundedSender<Job>,
    ) -> Self {
        let repairs = crate::repair::RepairGovernor::new(
            settings.repair_backoff_base,
            settings.repair_backoff_cap,
            settings.repair_quiet,
        );
        Self {
            index: CatalogIndex::new(settings.sync.clone()),
            backoff: WriterBackoff::new(settings.write_backoff_base, settings.write_backoff_cap),
            jobs,
            writes_in_flight: 0,
            round: None,
            pass: None,
            held_back: Vec::new(),
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

    /// Whether a round or a pass may start: synced, the writer idle, and
    /// not backing off.
    fn may_write(&self) -> bool {
        self.synced
            && self.backoff.until().is_none()
            && self.writes_in_flight == 0
            && self.pass.is_none()
    }

    /// Hands `job` to the writer task. It is gone only when the controller
    /// stops, and then nothing more is to be written.
    fn send(&self, job: Job) {
        if self.jobs.send(job).is_err() {
            tracing::debug!("the writer has stopped; job dropped");
        }
    }

    /// Hands a write to the writer. Its operations count as ours until it
    /// is answered, so that a Consul answer showing them half done is not
    /// taken for someone else's change.
    fn send_write(&mut self, job: WriteJob) {
        self.index.begin_write(&job.planned);
        self.writes_in_flight += 1;
        self.send(Job::Write(job));
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
    fn repair(&mut self, keys: BTreeSet<ServiceKey>) {
        if !self.synced || keys.is_empty() {
            return;
        }
        let now = Instant::now();
        for key in &keys {
            self.first_event.entry(key.clone()).or_insert(now);
        }
        let fights =
            crate::repair::schedule(&mut self.repairs, &self.queue, &self.metrics, keys, now);
        let services: Vec<Service> = fights
            .iter()
            .filter_map(|k| self.index.service(k).cloned())
            .collect();
        if !services.is_empty() {
            self.send(Job::Contested(services));
        }
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

    /// Plans a batch of keys and hands the writes to the writer; a round
    /// with nothing to write is done at once.
    fn process_keys(&mut self, keys: Vec<ServiceKey>) {
        for key in &keys {
            self.repairs.ran(key);
        }
        let round = self.index.plan_round(&keys);
        self.report_plan(&round);
        let forget: Vec<String> = round
            .touched()
            .into_iter()
            .filter(|id| !round.wanted.contains(id))
            .collect();
        let Round {
            planned,
            ids_by_key,
            events,
            ..
        } = round;
        if planned.is_empty() {
            for key in &keys {
                self.first_event.remove(key);
                self.done(key, Outcome::Success);
            }
            if !forget.is_empty() {
                self.send(Job::Forget(forget));
            }
        } else {
            let first_events = keys
                .iter()
                .filter_map(|k| self.first_event.remove(k).map(|t| (k.clone(), t)))
                .collect();
            let node_exists = self.index.node_exists();
            self.send_write(WriteJob {
                planned,
                node_exists,
                whole_transactions_only: false,
                forget,
            });
            self.round = Some(RoundInFlight {
                keys,
                ids_by_key,
                first_events,
                started: Instant::now(),
            });
        }
        if !events.is_empty() {
            self.send(Job::Events(events));
        }
    }

    /// Folds in what the writer reports.
    fn on_report(&mut self, report: Report) {
        match report {
            Report::Committed {
                planned,
                entries,
                node_created,
                results,
                at,
            } => self.index.fold(WriteEvent::Committed {
                ops: entries
                    .iter()
                    .filter_map(|&i| planned.get(i).map(|p| &p.op))
                    .collect(),
                node_created,
                results: &results,
                at,
            }),
            Report::NodeExists => self.index.fold(WriteEvent::NodeExists),
            Report::Written(done) => self.on_written(done),
            Report::Reread { ids, results, at } => {
                self.index.fold(WriteEvent::Reread {
                    ids: &ids,
                    results: results.as_deref(),
                    at,
                });
                self.writes_in_flight = self.writes_in_flight.saturating_sub(1);
                self.continue_pass();
            }
        }
    }

    /// A write ended: its round is done (or its pass goes on), the refused
    /// instances are read again, and the writer backs off when Consul was
    /// unavailable.
    fn on_written(&mut self, mut done: WriteDone) {
        self.writes_in_flight = self.writes_in_flight.saturating_sub(1);
        self.index.end_write();
        self.held_back = std::mem::take(&mut done.held_back);
        self.after_sent(&done.sent);
        for failure in &done.namespace_failures {
            let services: Vec<Service> = failure
                .untold
                .iter()
                .filter_map(|k| self.index.service(k).cloned())
                .collect();
            if !services.is_empty() {
                self.send(Job::NamespaceFailed {
                    services,
                    namespace: failure.namespace.clone(),
                    error: failure.error.clone(),
                });
            }
        }
        if !done.stale.is_empty() {
            let request = reread_request(&self.index, &done.planned, &done.stale);
            self.writes_in_flight += 1;
            self.send(Job::Reread(request));
        }
        if let Some(round) = self.round.take() {
            self.finish_round(round, done);
        } else if let Some(pass) = self.pass.as_mut() {
            let conflicted = pass_written(pass, done, &mut self.first_event, &self.metrics);
            self.enqueue(conflicted);
            self.continue_pass();
        }
    }

    /// Backs off when Consul was unavailable; a write Consul answered ends
    /// the backoff.
    fn after_sent(&mut self, sent: &Sent) {
        match sent {
            Sent::Nothing => {}
            Sent::Answered => self.backoff.succeeded(),
            Sent::Unavailable(e) => {
                let delay = self.backoff.failed(Instant::now(), rand::random::<f64>());
                self.metrics.write_backoff();
                tracing::warn!(
                    class = e.class(),
                    failures = self.backoff.failures(),
                    delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                    "Consul unavailable; the writer waits before its next round"
                );
            }
        }
    }

    /// Marks a round's keys done: those whose writes failed (or met a newer
    /// catalog state) are retried with their backoff, never resent blindly.
    fn finish_round(&mut self, mut round: RoundInFlight, done: WriteDone) {
        let WriteDone {
            planned, outcome, ..
        } = done;
        let WriteOutcome {
            mut failed,
            conflicted,
            ..
        } = outcome;
        tracing::debug!(
            keys = round.keys.len(),
            ops = planned.len(),
            failed = failed.len(),
            conflicted = conflicted.len(),
            write_ms = round.started.elapsed().as_millis() as u64,
            "round written"
        );
        // A Service whose write met a newer catalog state is planned again
        // from what was just read, after its backoff: never a blind resend,
        // and a third party changing it over and over meets a growing delay.
        failed.extend(conflicted);
        let keys_with_ops: BTreeSet<&ServiceKey> =
            planned.iter().filter_map(|p| p.key.as_ref()).collect();
        let now = Instant::now();
        for key in &round.keys {
            let first = round.first_events.remove(key);
            if failed.contains(key) {
                if let Some(ids) = round.ids_by_key.remove(key) {
                    self.index.keep_pending(key, ids);
                }
                if let Some(t) = first {
                    let slot = self.first_event.entry(key.clone()).or_insert(t);
                    *slot = (*slot).min(t);
                }
                self.done(key, Outcome::Retry);
            } else {
                if let Some(t) = first
                    && keys_with_ops.contains(key)
                {
                    self.metrics.latency(now.duration_since(t));
                }
                self.done(key, Outcome::Success);
            }
        }
    }

    fn done(&self, key: &ServiceKey, outcome: Outcome) {
        if let Err(e) = self.queue.done(key, outcome) {
            tracing::error!(%key, error = %e, "work queue refused done()");
        }
    }

    /// Starts a verification pass: re-plans every Service from the caches
    /// and writes the drift, including the removal of owned instances
    /// nothing wants.
    fn full_pass(&mut self) {
        self.full_pass_retry_at = None;
        self.repairs.ran_all();
        let keys = self.index.drop_gone_keys();
        self.send(Job::StartPass);
        self.pass = Some(PassState {
            keys,
            next: 0,
            pending: Vec::new(),
            orphans_planned: false,
            just_flushed: false,
            events: Vec::new(),
            outcome: PassOutcome::default(),
        });
        self.continue_pass();
    }

    /// Plans the pass on (keys in ascending order, a chunk at a time, so
    /// that only one chunk's registrations exist at once, see
    /// `CatalogIndex::plan_pass_chunk`) until a write is handed to the
    /// writer or the pass ends. Does nothing while a write or re-read is in
    /// flight: the pass goes on when it is answered.
    fn continue_pass(&mut self) {
        if self.writes_in_flight > 0 {
            return;
        }
        let Some(mut pass) = self.pass.take() else {
            return;
        };
        loop {
            if !pass.just_flushed
                && pass.pending.len() >= FULL_PASS_FLUSH
                && self.flush(&mut pass, false)
            {
                break;
            }
            pass.just_flushed = false;
            if pass.next < pass.keys.len() {
                let end = (pass.next + FULL_PASS_CHUNK).min(pass.keys.len());
                let round = self.index.plan_pass_chunk(&pass.keys[pass.next..end]);
                pass.next = end;
                self.report_plan(&round);
                pass.events.extend(round.events);
                pass.pending.extend(round.planned);
                continue;
            }
            if !pass.orphans_planned {
                // Instances no Service claims: this is the only plan that
                // reaps, and it runs after every Service's registrations
                // were written.
                let orphans = self.index.plan_orphans();
                self.report_plan(&orphans);
                pass.pending.extend(orphans.planned);
                pass.orphans_planned = true;
            }
            if self.flush(&mut pass, true) {
                break;
            }
            self.finish_pass(pass);
            return;
        }
        self.pass = Some(pass);
    }

    /// Hands the writer the pass's pending operations: only those that
    /// fill whole transactions (all of them with `all`), so that a cold
    /// start never holds every registration at once while packing exactly
    /// as one write of everything would. After a failure nothing more is
    /// sent: the pass is retried as a whole. Returns whether a write was
    /// handed over.
    fn flush(&mut self, pass: &mut PassState, all: bool) -> bool {
        if pass.pending.is_empty() {
            return false;
        }
        if pass.outcome.stopped {
            let out = &mut pass.outcome;
            out.entries += pass.pending.len();
            out.failed
                .extend(pass.pending.iter().filter_map(|p| p.key.clone()));
            out.orphan_failed |= pass.pending.iter().any(|p| p.key.is_none());
            pass.pending.clear();
            return false;
        }
        let node_exists = self.index.node_exists();
        self.send_write(WriteJob {
            planned: std::mem::take(&mut pass.pending),
            node_exists,
            whole_transactions_only: !all,
            forget: Vec::new(),
        });
        pass.just_flushed = true;
        true
    }

    /// The pass is written: reports its drift, and schedules its retry
    /// when a part did not commit.
    fn finish_pass(&mut self, pass: PassState) {
        let forget = self
            .held_back
            .iter()
            .filter(|id| self.index.owner_of(id).is_none())
            .cloned()
            .collect();
        self.send(Job::EndPass { forget });
        let outcome = pass.outcome;
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
        if !pass.events.is_empty() {
            self.send(Job::Events(pass.events));
        }
    }
}

/// Folds a pass's write into its outcome; returns the Services to plan
/// again because their write met a newer catalog state (a write that did
/// does not stop the pass: its instances are read again and its Service
/// goes through the queue).
fn pass_written(
    pass: &mut PassState,
    done: WriteDone,
    first_event: &mut BTreeMap<ServiceKey, Instant>,
    metrics: &CatalogMetrics,
) -> BTreeSet<ServiceKey> {
    let WriteDone {
        planned,
        rest,
        outcome,
        ..
    } = done;
    let out = &mut pass.outcome;
    out.entries += planned.len();
    let now = Instant::now();
    for p in planned.iter() {
        if let Some(k) = &p.key
            && !outcome.failed.contains(k)
            && !outcome.conflicted.contains(k)
            && let Some(t) = first_event.remove(k)
        {
            metrics.latency(now.duration_since(t));
        }
    }
    out.stopped = !outcome.failed.is_empty() || outcome.orphan_failed;
    out.failed.extend(outcome.failed);
    out.orphan_failed |= outcome.orphan_failed;
    // What did not fill a whole transaction is written with what the pass
    // plans next.
    let mut pending = rest;
    pending.append(&mut pass.pending);
    pass.pending = pending;
    outcome.conflicted
}
