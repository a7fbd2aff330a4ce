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

use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::{Node, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::Ingress;
use kube::api::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, watcher};
use mirra_catalog::compact::{
    CompactNodeServices, read_health_checks_compact, read_node_services_compact,
};
use mirra_consul::WatchOptions;
use mirra_runtime::watch::{WatchFailure, WatchHints, WatchRetry, retrying};
use mirra_runtime::{FenceError, ReadyFlag, TaskGuard, WorkQueue};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub use crate::events::{EVENT_COMPONENT, EVENT_REASON};
use crate::flags::Settings;
pub use crate::index::OVERLAY_TTL;
use crate::index::{CheckSnapshot, ObservedSnapshot};
use crate::metrics::CatalogMetrics;
use crate::writer::TxnWriter;
use mirra_runtime::writer::sleep_until_opt;

mod pass;
mod preview;
mod rounds;

/// The Consul reads a dry run names when they fail.
const NODE_SERVICES: &str = "Consul node-services of mirra's node";
/// See [`NODE_SERVICES`].
const HEALTH_NODE: &str = "Consul health/node of mirra's node";

use rounds::Engine;

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
    // Each answer lists every instance (and every check) on our node (about
    // 21 MB at 50,000 instances): they are parsed into compact form while
    // they arrive, on a blocking thread, so that an answer is never held
    // whole and never stalls the event loop.
    let sync = engine.settings.sync.clone();
    let parse_services: mirra_consul::BodyParser<CompactNodeServices> =
        Arc::new(move |body| read_node_services_compact(body, &sync).map_err(|e| e.to_string()));
    let parse_checks: mirra_consul::BodyParser<_> =
        Arc::new(|body| read_health_checks_compact(body).map_err(|e| e.to_string()));
    let (observed, _observed_task) = spawn_converted(
        consul.watch_node_services_parsed(
            node_name.clone(),
            watch_opts.clone(),
            Some(pause.clone()),
            parse_services,
        ),
        |v| {
            Ok(ObservedSnapshot {
                node_exists: v.value.node_exists,
                instances: v.value.instances,
                index: v.index,
            })
        },
    );
    let (checks, _checks_task) = spawn_converted(
        consul.watch_health_node_parsed(node_name, watch_opts, Some(pause), parse_checks),
        |v| {
            Ok(CheckSnapshot {
                checks: v.value,
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
                    engine.answered("services");
                    let keys = engine.index.on_service(ev);
                    engine.enqueue(keys);
                }
                Some(Err(e)) => engine.watch_error("services", &e),
                None => return Err(ControllerError::WatchEnded("Service")),
            },
            ev = slices.next() => match ev {
                Some(Ok(ev)) => {
                    engine.answered("endpointslices");
                    let keys = engine.index.on_slice(ev);
                    engine.enqueue(keys);
                }
                Some(Err(e)) => engine.watch_error("endpointslices", &e),
                None => return Err(ControllerError::WatchEnded("EndpointSlice")),
            },
            ev = nodes.next() => match ev {
                Some(Ok(ev)) => {
                    engine.answered("nodes");
                    let keys = engine.index.on_node(ev);
                    engine.enqueue(keys);
                }
                Some(Err(e)) => engine.watch_error("nodes", &e),
                None => return Err(ControllerError::WatchEnded("Node")),
            },
            ev = ingresses.next(), if ingress_enabled => match ev {
                Some(Ok(ev)) => {
                    engine.answered("ingresses");
                    let keys = engine.index.on_ingress(ev);
                    engine.enqueue(keys);
                }
                Some(Err(e)) => engine.watch_error("ingresses", &e),
                None => return Err(ControllerError::WatchEnded("Ingress")),
            },
            // During a verification pass Consul's answers wait (one each,
            // a whole snapshot): the pass plans every Service anyway, its
            // answers would show mostly its own writes, and taking them
            // would let the paused reads go out every MAX_READ_DEFERRAL,
            // each listing every instance on the node while the pass
            // writes them. Kubernetes events are still taken in.
            snap = observed.recv(), if engine.pass.is_none() => match snap {
                Some(Ok(v)) => {
                    engine.answered(NODE_SERVICES);
                    let drift = engine.index.on_observed(v, Instant::now());
                    engine.repair(drift);
                }
                Some(Err(e)) => {
                    engine.metrics.consul_error(e.class());
                    engine.unreadable(NODE_SERVICES, &e);
                    tracing::warn!(error = %e, "reading node-services failed; retrying");
                }
                None => return Err(ControllerError::ConsulWatchEnded),
            },
            snap = checks.recv(), if engine.pass.is_none() => match snap {
                Some(Ok(v)) => {
                    engine.answered(HEALTH_NODE);
                    let drift = engine.index.on_checks(v, Instant::now());
                    engine.repair(drift);
                }
                Some(Err(e)) => {
                    engine.metrics.consul_error(e.class());
                    engine.unreadable(HEALTH_NODE, &e);
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
                engine.verification_pass();
            },
            () = sleep_until_opt(engine.pass_retry_at), if engine.may_write() => {
                engine.verification_pass();
            },
            () = sleep_until_opt(engine.backoff.until()) => {
                engine.backoff.expired();
            },
        }
        if !engine.synced && engine.index.synced() {
            ready.set_ready();
            engine.synced = true;
            tracing::info!("initial lists and Consul state read; running the first pass");
            engine.verification_pass();
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

/// Drives `stream` on its own task, converting each item there. At most
/// one answer waits for the loop, and the next read starts only once the
/// loop took it: each answer is a whole snapshot (about 27 MB in compact
/// form at 50,000 instances), so the loop never needs a backlog, and
/// reading ahead would hold a third snapshot (the index's, the waiting
/// one, the one read ahead) whenever the loop does not take answers (a
/// verification pass, the cold start's). The guard aborts the task when
/// dropped, so a watch parked in a long blocking query does not outlive
/// the controller.
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
        // The permit first: with room for one item, it is granted only
        // once the loop took the previous answer.
        while let Ok(permit) = tx.reserve().await {
            let Some(item) = stream.next().await else {
                break;
            };
            permit.send(item.and_then(&convert));
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// A stream of answers that counts how many were read.
    fn counted(read: Arc<AtomicUsize>) -> impl Stream<Item = Result<usize, mirra_consul::Error>> {
        futures::stream::iter(0..10).map(move |i| {
            read.fetch_add(1, Ordering::SeqCst);
            Ok(i)
        })
    }

    #[tokio::test]
    async fn an_answer_not_taken_holds_back_the_next_read() {
        let read = Arc::new(AtomicUsize::new(0));
        let (mut rx, _guard) = spawn_converted(counted(read.clone()), Ok);
        // Let the task run as far as it can without the loop taking anything.
        for _ in 0..50 {
            tokio::task::yield_now().await;
        }
        assert_eq!(
            read.load(Ordering::SeqCst),
            1,
            "one answer waits, none read ahead"
        );
        assert_eq!(rx.recv().await.map(|r| r.ok()), Some(Some(0)));
        for _ in 0..50 {
            tokio::task::yield_now().await;
        }
        assert_eq!(read.load(Ordering::SeqCst), 2);
        // Every answer still arrives, in order.
        let mut rest = Vec::new();
        while let Some(Ok(v)) = rx.recv().await {
            rest.push(v);
        }
        assert_eq!(rest, (1..10).collect::<Vec<_>>());
    }
}
