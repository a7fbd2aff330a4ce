//! The running controller: the shared state, the workers that plan and
//! write one namespace at a time, the status writer, the Event recorder and
//! the verification pass.
//!
//! ```text
//! watches ─► State (caches) ─► keys ─► WorkQueue ─► worker: plan (pure) ─► SSA / delete
//!                                                          │
//!                                   outcomes ─► status writer (debounced) ─► /status, Events
//! ```
//!
//! What this module must NOT do: send a GET in the hot path (all decisions
//! come from the caches), plan before every cache it depends on has its
//! initial list, or let one failing item stop another item or namespace.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::api::{Api, Patch, PatchParams};
use mirra_mirror::status::{
    CONDITION_CONFLICT, CONDITION_DEGRADED, CONDITION_ERRORED, CONDITION_INVALID, CONDITION_READY,
    REASON_LIMIT_EXCEEDED,
};
use mirra_mirror::{ConfigRef, DeleteCause, ObjectKey, Op, OutcomeState, SyncConfigStatus};
use mirra_runtime::{Metrics, Outcome, QueueConfig, ReadyFlag, WorkQueue, WriteFence};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::ControllerError;
use crate::config_object::ConfigObject;
use crate::settings::{Settings, WatchScope};
use crate::state::{OwnWrite, State, StatusRound, StatusWrite, WriteTarget, copy_id};
use crate::watches;
use crate::write::{self, WriteFailure};

mod access;
mod events;
mod preview;
mod status;
mod verify;

use events::*;
pub(crate) use status::status_scope;
use status::*;
use verify::*;

/// The name of the queue and controller in metrics.
pub(crate) const CONTROLLER: &str = "mirror";

/// How long a worker waits before retrying a key that arrived before the
/// caches were complete. 50 ms: start-up lists take tens of milliseconds on
/// a small cluster; the key is not lost, only held.
const NOT_READY_RETRY: Duration = Duration::from_millis(50);

/// How long before a tenant account's access review the server did not
/// answer is asked again. 2 s: as discovery's retry.
const ACCESS_RETRY: Duration = Duration::from_secs(2);

/// Writes of one namespace in flight at once. 8: a new namespace with
/// dozens of items converges in a few round trips, while one namespace
/// cannot monopolise the client (workers x 8 bounds the total).
const OPS_IN_FLIGHT: usize = 8;

/// Everything the tasks share.
pub struct Shared {
    /// The API client.
    pub client: kube::Client,
    /// The settings.
    pub settings: Settings,
    /// Metrics handles.
    pub metrics: Metrics,
    /// Keys are target namespace names.
    pub queue: WorkQueue<String>,
    /// Caches and bookkeeping.
    state: Mutex<State>,
    /// Wakes the kind manager when the kinds in use may have changed.
    pub kinds_changed: tokio::sync::Notify,
    /// Cancelled on shutdown.
    pub shutdown: CancellationToken,
    /// Warning Events, one per SyncConfig and reason, counted up.
    events: mirra_runtime::events::EventRecorder,
    /// Every Kubernetes write of this controller goes through it.
    pub fence: WriteFence,
    /// Clients acting as the ServiceAccounts SyncConfigs name, by username.
    impersonating: Mutex<std::collections::HashMap<String, kube::Client>>,
    /// Work on keys not queued by the verification pass, which yields to it.
    event_work: Mutex<EventWork>,
}

impl Shared {
    /// Runs `f` with the state locked. The lock is never held across an
    /// await; a poisoned lock (a panic elsewhere) still holds consistent
    /// caches, so it is used rather than propagated.
    pub fn with_state<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        let mut guard = self.state.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut guard)
    }

    fn event_work(&self) -> std::sync::MutexGuard<'_, EventWork> {
        self.event_work.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The client a read or write for `user` goes through: mirra's own, or
    /// one acting as that user (made once, sharing mirra's connections).
    pub fn client_as(&self, user: Option<&str>) -> Result<kube::Client, String> {
        let Some(user) = user else {
            return Ok(self.client.clone());
        };
        let mut cache = self.impersonating.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = cache.get(user) {
            return Ok(c.clone());
        }
        let c = mirra_runtime::impersonate::impersonating(&self.client, user)
            .map_err(|e| e.to_string())?;
        cache.insert(user.to_string(), c.clone());
        Ok(c)
    }

    /// Adds keys to the queue, remembering when each became dirty; each is
    /// planned in full.
    pub fn enqueue(&self, keys: BTreeSet<String>) {
        self.enqueue_noted(keys, Enqueued::Debounced);
    }

    /// [`Shared::enqueue`] for the namespaces of SyncConfig edits, which
    /// may be planned for the edited SyncConfigs alone (the state noted
    /// which, with the edit).
    pub fn enqueue_edited(&self, keys: BTreeSet<String>) {
        self.enqueue_noted(keys, Enqueued::Edited);
    }

    /// [`Shared::enqueue`] for namespaces just created: planned at once.
    pub fn enqueue_created(&self, keys: BTreeSet<String>) {
        self.enqueue_noted(keys, Enqueued::Created);
    }

    fn enqueue_noted(&self, keys: BTreeSet<String>, how: Enqueued) {
        if keys.is_empty() {
            return;
        }
        let now = Instant::now();
        self.with_state(|s| {
            if how == Enqueued::Edited {
                s.note_edited(keys.iter(), now);
            } else {
                s.note_dirty(keys.iter(), now);
            }
        });
        for k in &keys {
            if how == Enqueued::Debounced {
                self.queue.add(k.clone());
            } else {
                self.queue.add_after(k.clone(), Duration::ZERO);
            }
        }
        self.with_state(|s| s.forget_verifying(&keys));
    }
}

/// How a namespace is queued. The debounce gathers a burst of events of
/// one namespace (copies deleted one by one, labels set in steps) into one
/// plan. A SyncConfig edit is a single event for each namespace it
/// touches, and a namespace's creation the first of its life, whose
/// copies (image pull secrets, quotas) its first workloads may need: both
/// are planned at once. Events arriving while such a namespace still
/// waits are merged into its plan all the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Enqueued {
    Debounced,
    Edited,
    Created,
}

/// Runs the controller until `shutdown` is cancelled.
pub async fn run(
    client: kube::Client,
    settings: Settings,
    ready: ReadyFlag,
    metrics: Metrics,
    shutdown: CancellationToken,
) -> Result<(), ControllerError> {
    match &settings.scope {
        WatchScope::All => tracing::warn!(
            "honouring SyncConfigs in ALL namespaces (--all-namespaces): anyone who can create \
             a SyncConfig can write into every namespace mirra may write to"
        ),
        WatchScope::Namespaces(list) => {
            tracing::info!(namespaces = ?list, "honouring SyncConfigs in these namespaces only")
        }
    }
    if !settings.tenant_namespaces.is_empty() {
        tracing::info!(
            namespaces = ?settings.tenant_namespaces,
            "honouring tenant SyncConfigs in these namespaces: each writes as the \
             ServiceAccount it names (spec.serviceAccountName)"
        );
    }
    let queue = WorkQueue::new(QueueConfig {
        debounce: settings.debounce,
        max_delay: settings.max_delay,
        backoff_base: settings.backoff_base,
        backoff_cap: settings.backoff_cap,
    })?;
    let mut fence = WriteFence::new(settings.lease.clone(), settings.write_timeout);
    if settings.preview.is_some() {
        tracing::warn!(
            "dry run (--dry-run): nothing will be written; planned writes are logged and listed on /preview"
        );
        fence = fence.dry_run();
    }
    let events = mirra_runtime::events::EventRecorder::new(client.clone(), fence.clone(), "mirra");
    let state = State::new(&settings);
    let shared = Arc::new(Shared {
        fence,
        client,
        settings,
        metrics,
        queue,
        state: Mutex::new(state),
        kinds_changed: tokio::sync::Notify::new(),
        shutdown: shutdown.child_token(),
        events,
        impersonating: Mutex::default(),
        event_work: Mutex::default(),
    });

    let mut tasks = vec![watches::spawn_namespaces(&shared)];
    tasks.extend(watches::spawn_configs(&shared));
    tasks.push(tokio::spawn(watches::manage_kinds(shared.clone())));
    if shared.settings.startup_sweep {
        tasks.push(tokio::spawn(watches::startup_sweep(shared.clone())));
    }
    tasks.push(tokio::spawn(status_loop(shared.clone(), ready)));
    tasks.push(tokio::spawn(verify_loop(shared.clone())));
    for _ in 0..shared.settings.workers {
        tasks.push(tokio::spawn(worker(shared.clone())));
    }

    shared.shutdown.cancelled().await;
    shared.queue.shutdown();
    let mut failure = None;
    for t in tasks {
        if let Err(e) = t.await
            && e.is_panic()
        {
            failure = Some(ControllerError::TaskPanicked(e.to_string()));
        }
    }
    // Dropping the entries aborts the copy and deleteItem watches.
    shared.with_state(State::drop_watches);
    match failure {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

async fn worker(shared: Arc<Shared>) {
    loop {
        let key = tokio::select! {
            _ = shared.shutdown.cancelled() => return,
            k = shared.queue.next() => match k { Some(k) => k, None => return },
        };
        let for_pass = shared.with_state(|s| s.is_verifying(&key));
        if !for_pass {
            shared.event_work().begin();
        }
        let outcome = process(&shared, &key).await;
        shared.with_state(|s| {
            s.verified(&key);
            if outcome == Outcome::Success {
                s.forget_dirty(&key);
            }
        });
        if !for_pass {
            shared.event_work().end(Instant::now());
        }
        if let Err(e) = shared.queue.done(&key, outcome) {
            tracing::error!(namespace = %key, error = %e, "work queue bookkeeping failed");
        }
    }
}

/// Plans one namespace from the caches and sends the writes.
async fn process(shared: &Shared, namespace: &str) -> Outcome {
    let prepared = shared.with_state(|s| {
        if !s.caches_ready() {
            return None;
        }
        // A dry run reports every planned write of the namespace, so it
        // plans every SyncConfig.
        let only = s
            .take_plan_scope(namespace)
            .filter(|_| shared.settings.preview.is_none());
        let crate::state::Plan {
            plan,
            claims,
            reviews,
            narrowed,
        } = s.plan_scoped(namespace, &shared.settings, only.as_ref());
        s.count_plan(namespace);
        s.remember_verified(claims);
        let reviews = s.ask_access(reviews);
        let ops: Vec<_> = plan
            .ops
            .into_iter()
            .map(|op| {
                let target = s.write_target(&op);
                (op, target)
            })
            .collect();
        Some((ops, plan.outcomes, reviews, narrowed))
    });
    let Some((ops, mut outcomes, reviews, narrowed)) = prepared else {
        return Outcome::RetryAfter(NOT_READY_RETRY);
    };
    let reviewed = !reviews.is_empty();
    if reviewed {
        // Reads, as the tenant's account: allowed in a dry run too. The
        // namespace is planned again with the answers.
        let answers =
            futures::future::join_all(reviews.into_iter().map(|k| access::review(shared, k))).await;
        let (answered, unanswered): (Vec<_>, Vec<_>) =
            answers.into_iter().partition(|(_, a)| a.is_some());
        let retry = !unanswered.is_empty();
        let keys = shared.with_state(|s| {
            for (k, a) in unanswered {
                s.access_answered(k, a);
            }
            answered
                .into_iter()
                .flat_map(|(k, a)| s.access_answered(k, a))
                .collect()
        });
        shared.enqueue(keys);
        // A review the server did not answer is asked again after a pause,
        // not in a loop.
        if retry {
            shared.queue.add_after(namespace.to_string(), ACCESS_RETRY);
        }
    }
    if let Some(preview) = &shared.settings.preview {
        // Every write of the plan, not one pass's share: the real run
        // sends them all, over as many passes as it takes.
        let writes = shared.with_state(|s| {
            ops.iter()
                .map(|(op, _)| preview::planned_write(op, s.observed_target(op).as_deref()))
                .collect()
        });
        preview.replace(namespace, writes);
        shared.with_state(|s| s.store_outcomes(namespace, outcomes, Instant::now()));
        return Outcome::Success;
    }
    // One pass sends a bounded number of writes, SyncConfigs taking turns;
    // the rest wait for the next pass of this namespace, which follows at
    // once, behind whatever else is queued.
    let (ops, deferred) = mirra_mirror::take_turns(
        ops,
        |(op, _)| op.config(),
        shared.settings.max_writes_per_pass,
    );
    let deferred: BTreeSet<ObjectKey> = deferred.iter().map(|(op, _)| op.target().key()).collect();
    if !deferred.is_empty() {
        for o in &mut outcomes {
            if deferred.contains(&o.target.key()) && o.state.plans_a_write() {
                o.state = OutcomeState::Pending;
            }
        }
    }
    // The writes of one namespace go out concurrently: they touch distinct
    // objects, and a new namespace's latency is then one round trip or a
    // few, not one per item.
    let results: Vec<(ObjectKey, Result<bool, WriteFailure>)> = if ops.is_empty() {
        // The common case (an in-step namespace): no stream to set up.
        Vec::new()
    } else {
        futures::stream::iter(ops.into_iter().map(|(op, target)| {
            // Boxed: the stream allocates room for one future up front, and
            // an unboxed write future is several kilobytes.
            Box::pin(async move {
                let t = op.target().clone();
                // A SyncConfig naming a ServiceAccount writes as that
                // account, never with mirra's own rights.
                // An apply's events are held until its answer (see
                // `state/in_flight.rs`); only one that is sent is begun.
                let applied = matches!(op, Op::Apply { .. }).then(|| copy_id(&t));
                let user = shared.with_state(|s| {
                    let user = s.acting_user(&op);
                    if user.is_ok()
                        && let Some(id) = &applied
                    {
                        s.begin_apply(id.clone(), namespace);
                    }
                    user
                });
                let begun = applied.filter(|_| user.is_ok());
                let client = user
                    .and_then(|user| shared.client_as(user.as_deref()))
                    .map_err(WriteFailure::Permanent);
                let res = match client {
                    Ok(client) => send(shared, &client, namespace, &op, target).await,
                    Err(f) => Err(f),
                }
                .map_err(|f| redact(&op, f));
                if let Some(id) = &begun {
                    shared.enqueue(shared.with_state(|s| s.end_apply(id)));
                }
                (t.key(), res)
            })
        }))
        .buffer_unordered(OPS_IN_FLIGHT)
        .collect()
        .await
    };
    let mut result = Outcome::Success;
    let mut throttled: Option<Duration> = None;
    let mut failed: BTreeMap<ObjectKey, String> = BTreeMap::new();
    let mut wrote = false;
    for (key, res) in results {
        match res {
            Ok(w) => wrote |= w,
            Err(f) => {
                shared.metrics.error(f.class());
                if matches!(f, WriteFailure::Fenced(_)) {
                    tracing::debug!(namespace = %key.namespace, name = %key.name, kind = %key.kind,
                        error = f.message(), "write fenced");
                } else {
                    tracing::warn!(namespace = %key.namespace, name = %key.name, kind = %key.kind,
                        error = f.message(), "write failed");
                }
                match f {
                    WriteFailure::Transient(_) | WriteFailure::Fenced(_) => result = Outcome::Retry,
                    WriteFailure::Throttled(_, after) => {
                        // The longest wait any answer asked for.
                        let after = after.unwrap_or(write::THROTTLE_DELAY);
                        throttled = Some(throttled.map_or(after, |t| t.max(after)));
                    }
                    WriteFailure::Permanent(m) | WriteFailure::Invalid(m) => {
                        failed.insert(key, m);
                    }
                }
            }
        }
    }
    if result == Outcome::Success
        && let Some(after) = throttled
    {
        result = Outcome::RetryAfter(after);
    }
    for o in &mut outcomes {
        if let Some(reason) = failed.get(&o.target.key())
            && o.state.plans_a_write()
        {
            o.state = OutcomeState::Failed {
                reason: reason.clone(),
            };
        }
    }
    let skipped: Vec<String> = outcomes
        .iter()
        .filter(|o| o.state == OutcomeState::InSync)
        .map(|o| o.target.kind.to_string())
        .collect();
    for kind in skipped {
        shared.metrics.skipped_write(&kind);
    }
    let now = Instant::now();
    shared.with_state(|s| {
        if wrote && let Some(first) = s.take_first_event(namespace) {
            shared
                .metrics
                .observe_event_to_write(CONTROLLER, now.saturating_duration_since(first));
        }
        s.store_plan_outcomes(namespace, narrowed.as_ref(), outcomes, now);
        if result == Outcome::Success {
            result = permanent_retry(&shared.settings, s, namespace, !failed.is_empty());
        }
        let clean =
            result == Outcome::Success && deferred.is_empty() && failed.is_empty() && !reviewed;
        s.pass_ended(namespace, clean);
    });
    if !deferred.is_empty() && result == Outcome::Success {
        return Outcome::RetryAfter(Duration::ZERO);
    }
    result
}

/// The queue outcome of a pass whose only failures, if any, were permanent
/// (403, 404, 422 without forceRecreate): those do not heal by retrying at
/// once, but a permission granted or an object fixed later does not always
/// cause an event mirra sees (RBAC is not watched). So the namespace is
/// retried on its own long backoff, and its conditions clear soon after the
/// cause is gone rather than at the next verification pass.
fn permanent_retry(
    settings: &Settings,
    state: &mut State,
    namespace: &str,
    failed: bool,
) -> Outcome {
    if !failed {
        state.clear_permanent_failures(namespace);
        return Outcome::Success;
    }
    let n = state.count_permanent_failure(namespace);
    // The jitter is derived from the name: namespaces that failed together
    // (one RBAC rule missing) spread out, and the delay of one namespace is
    // reproducible.
    let jitter = f64::from(fnv1a(namespace) % 1000) / 1000.0;
    Outcome::RetryAfter(mirra_runtime::queue::backoff_delay(
        settings.permanent_retry_base,
        settings.permanent_retry_cap,
        n,
        jitter,
    ))
}

/// FNV-1a, 32 bits: a stable hash for the jitter above (std's hasher is
/// randomly seeded per process).
fn fnv1a(s: &str) -> u32 {
    s.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

/// A failed write of a Secret with the Secret's values taken out of the
/// message: it goes to logs, the status and Events.
fn redact(op: &Op, failure: WriteFailure) -> WriteFailure {
    match op {
        Op::Apply { target, body, .. }
            if target.kind == "Secret" && !target.api_version.contains('/') =>
        {
            failure.map_message(|m| mirra_mirror::redact_secret_values(m, body))
        }
        _ => failure,
    }
}

/// Sends one op of the plan of namespace `home`; `Ok(true)` when a write
/// was made.
async fn send(
    shared: &Shared,
    client: &kube::Client,
    home: &str,
    op: &Op,
    target: Option<WriteTarget>,
) -> Result<bool, WriteFailure> {
    let t = op.target();
    let Some(WriteTarget {
        resource: ar,
        uid: observed_uid,
        version: planned_from,
    }) = target
    else {
        return Err(WriteFailure::Permanent(format!(
            "kind {} {} is not resolved",
            t.api_version, t.kind
        )));
    };
    match op {
        Op::Apply {
            body,
            force_recreate,
            check_adoption,
            ..
        } => match write::apply(
            &shared.fence,
            client,
            &ar,
            &t.namespace,
            &t.name,
            body,
            planned_from.as_deref(),
        )
        .await
        {
            Ok(applied) => {
                shared.metrics.write("apply", &t.kind);
                // An object this process created moments ago is no
                // adoption, even when this answer says it existed.
                let made_here = shared.with_state(|s| {
                    if applied.created {
                        s.remember_created(&applied.uid);
                    }
                    s.created_here(&applied.uid)
                });
                let (version, body_hash) =
                    if *check_adoption && applied.others_had_a_hand && !made_here {
                        // The object existed before this apply: say so on it,
                        // so it is released rather than deleted later.
                        tracing::info!(namespace = %t.namespace, name = %t.name, kind = %t.kind,
                        "adopted an existing object");
                        let marked = mirra_mirror::with_adopted_mark(body);
                        let again = write::apply(
                            &shared.fence,
                            client,
                            &ar,
                            &t.namespace,
                            &t.name,
                            &marked,
                            Some(&applied.version),
                        )
                        .await?;
                        shared.metrics.write("apply", &t.kind);
                        (again.version, mirra_mirror::body_id(&marked).into_owned())
                    } else {
                        (applied.version, mirra_mirror::body_id(body).into_owned())
                    };
                let write = OwnWrite {
                    version,
                    planned_from,
                    body_hash,
                    home: home.to_string(),
                    home_plans: 0,
                };
                shared.with_state(|s| s.record_own_write(copy_id(t), write));
                Ok(true)
            }
            Err(e) => match e {
                WriteFailure::Invalid(msg) if *force_recreate => {
                    let Some(uid) = observed_uid else {
                        // An object mirra's caches do not hold (made by
                        // hand or by espejo, without mirra's label): its
                        // marks are applied first (no immutable field is
                        // touched), so the copies watch brings it with its
                        // uid, and the next pass deletes and recreates it
                        // as any copy, waiting until it is gone. No read.
                        tracing::info!(namespace = %t.namespace, name = %t.name, kind = %t.kind,
                            "apply refused as invalid, marking the existing object to recreate it (forceRecreate)");
                        let marks = marks_only(body);
                        if let Err(e) = write::apply(
                            &shared.fence,
                            client,
                            &ar,
                            &t.namespace,
                            &t.name,
                            &marks,
                            None,
                        )
                        .await
                        {
                            tracing::warn!(namespace = %t.namespace, name = %t.name, kind = %t.kind,
                                error = e.message(), "cannot mark the object to recreate it");
                            return Err(WriteFailure::Permanent(msg));
                        }
                        shared.metrics.write("apply", &t.kind);
                        return Ok(true);
                    };
                    tracing::info!(namespace = %t.namespace, name = %t.name, kind = %t.kind,
                        "apply refused as invalid, recreating (forceRecreate)");
                    // Delete now; the watch shows when it is gone and the
                    // next plan creates it afresh.
                    write::delete(&shared.fence, client, &ar, &t.namespace, &t.name, &uid).await?;
                    shared.metrics.write("delete", &t.kind);
                    record_delete(shared, t, &uid);
                    Ok(true)
                }
                other => Err(other),
            },
        },
        Op::Delete {
            uid, cause, config, ..
        } => {
            write::delete(&shared.fence, client, &ar, &t.namespace, &t.name, uid).await?;
            shared.metrics.write("delete", &t.kind);
            record_delete(shared, t, uid);
            if *cause == DeleteCause::DeleteItem {
                shared.with_state(|s| s.record_deleted_item(config, t.key()));
            }
            Ok(true)
        }
        Op::Release { .. } => {
            write::release(
                &shared.fence,
                client,
                &ar,
                &t.namespace,
                &t.name,
                planned_from.as_deref(),
            )
            .await?;
            shared.metrics.write("release", &t.kind);
            Ok(true)
        }
    }
}

/// The apply body of `body`'s identity and metadata only (mirra's marks,
/// the item's labels and annotations, and the adopted mark: the object
/// existed before mirra wrote it). Without the content hash: the content
/// is not written yet.
fn marks_only(body: &serde_json::Value) -> serde_json::Value {
    let mut out = serde_json::Map::new();
    for field in ["apiVersion", "kind", "metadata"] {
        if let Some(v) = body.get(field) {
            out.insert(field.into(), v.clone());
        }
    }
    let mut out = mirra_mirror::with_adopted_mark(&serde_json::Value::Object(out));
    if let Some(serde_json::Value::Object(a)) = out.pointer_mut("/metadata/annotations") {
        a.remove(mirra_mirror::HASH_ANNOTATION);
    }
    out
}

/// Marks a delete as in flight until the watches show it (see
/// `State::deletes_in_flight`).
fn record_delete(shared: &Shared, t: &mirra_mirror::ObjectRef, uid: &str) {
    shared.with_state(|s| s.record_delete(copy_id(t), uid));
}

#[cfg(test)]
mod permanent_retry_tests {
    #![allow(clippy::unwrap_used)]

    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        run: crate::settings::RunArgs,
    }

    fn settings() -> Settings {
        let cli = Cli::try_parse_from(["mirra", "--watch-namespace", "ops"]).unwrap();
        Settings::from_args_with(&cli.run, || None).unwrap()
    }

    fn delay(o: Outcome) -> Duration {
        match o {
            Outcome::RetryAfter(d) => d,
            other => panic!("expected a delayed retry, got {other:?}"),
        }
    }

    /// Passes that keep failing permanently are retried later and later,
    /// never past the cap; the delay of a namespace is the same in every
    /// process; a clean pass resets it.
    #[test]
    fn permanent_failures_back_off_to_the_cap_and_a_clean_pass_resets() {
        let settings = settings();
        let mut state = State::new(&settings);
        let delays: Vec<Duration> = (0..12)
            .map(|_| delay(permanent_retry(&settings, &mut state, "team-a", true)))
            .collect();
        assert!(delays[0] >= settings.permanent_retry_base / 2);
        assert!(delays[0] <= settings.permanent_retry_base);
        for pair in delays.windows(2) {
            assert!(pair[1] >= pair[0], "{delays:?}");
        }
        assert!(delays.iter().all(|d| *d <= settings.permanent_retry_cap));
        assert!(*delays.last().unwrap() >= settings.permanent_retry_cap / 2);

        let mut again = State::new(&settings);
        assert_eq!(
            delay(permanent_retry(&settings, &mut again, "team-a", true)),
            delays[0],
            "the jitter comes from the name, not from chance"
        );

        assert_eq!(
            permanent_retry(&settings, &mut state, "team-a", false),
            Outcome::Success
        );
        assert_eq!(
            delay(permanent_retry(&settings, &mut state, "team-a", true)),
            delays[0],
            "a clean pass starts the backoff over"
        );
    }
}
