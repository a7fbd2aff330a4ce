//! The event loop's state and its rounds: what a batch of keys becomes,
//! handing the writes to the writer task, and folding in its reports.
//!
//! This module must NOT await anything: every method runs to completion
//! inside one turn of the event loop.

use std::collections::{BTreeMap, BTreeSet};

use mirra_catalog::ServiceInput;
use mirra_catalog::ServiceKey;
use mirra_runtime::watch::WatchFailure;
use mirra_runtime::{Outcome, WorkQueue};
use tokio::time::Instant;

use super::pass::{PassState, pass_written};
use super::watch_hints;
use crate::backoff::WriterBackoff;
use crate::flags::Settings;
use crate::index::{CatalogIndex, WriteEvent};
use crate::metrics::CatalogMetrics;
use crate::round::Round;
use crate::writer::{Job, Report, Sent, WriteDone, WriteJob, WriteOutcome, reread_request};

/// The event loop's state: the index, the writer's end, the queue, and
/// when the next verification pass is due.
pub(super) struct Engine {
    pub(super) settings: Settings,
    pub(super) metrics: CatalogMetrics,
    pub(super) queue: WorkQueue<ServiceKey>,
    pub(super) index: CatalogIndex,
    /// The writer task's jobs.
    pub(super) jobs: tokio::sync::mpsc::UnboundedSender<Job>,
    /// Waits out Consul's unavailability before the next write.
    pub(super) backoff: WriterBackoff,
    /// Writes and re-reads handed to the writer and not yet answered.
    pub(super) writes_in_flight: usize,
    /// The round whose write is in flight.
    round: Option<RoundInFlight>,
    /// The verification pass under way.
    pub(super) pass: Option<PassState>,
    /// Registrations the writer holds back as too large (as of its last
    /// report).
    pub(super) held_back: Vec<String>,
    /// When each pending Service's first unplanned change came in (the
    /// sync latency metric).
    pub(super) first_event: BTreeMap<ServiceKey, Instant>,
    pub(super) repairs: crate::repair::RepairGovernor<ServiceKey>,
    pub(super) synced: bool,
    pub(super) pass_failures: u32,
    /// Verification passes run, the first (which writes everything the
    /// event path has not yet) included.
    pub(super) passes_run: u64,
    pub(super) pass_retry_at: Option<Instant>,
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

impl Engine {
    pub(super) fn new(
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
            pass_failures: 0,
            passes_run: 0,
            pass_retry_at: None,
        }
    }

    /// Whether a round or a pass may start: synced, the writer idle, and
    /// not backing off.
    pub(super) fn may_write(&self) -> bool {
        self.synced
            && self.backoff.until().is_none()
            && self.writes_in_flight == 0
            && self.pass.is_none()
    }

    /// Hands `job` to the writer task. It is gone only when the controller
    /// stops, and then nothing more is to be written.
    pub(super) fn send(&self, job: Job) {
        if self.jobs.send(job).is_err() {
            tracing::debug!("the writer has stopped; job dropped");
        }
    }

    /// Hands a write to the writer. Its operations count as ours until it
    /// is answered, so that a Consul answer showing them half done is not
    /// taken for someone else's change.
    pub(super) fn send_write(&mut self, job: WriteJob) {
        self.index.begin_write(&job.planned);
        self.writes_in_flight += 1;
        self.send(Job::Write(job));
    }

    /// Queues the Services an event touched. Before the first pass nothing
    /// is queued: that pass plans every Service from the caches, which
    /// already hold the event, so queueing the initial lists would plan
    /// every Service a second time right after it (in rounds of up to
    /// `max_keys_per_round`, the cold start's largest allocations) only to
    /// find it in step.
    pub(super) fn enqueue(&mut self, keys: impl IntoIterator<Item = ServiceKey>) {
        if !self.synced {
            return;
        }
        for key in keys {
            self.first_event
                .entry(key.clone())
                .or_insert_with(Instant::now);
            self.queue.add(key);
        }
    }

    /// Plans again, promptly, the Services whose instances someone else
    /// changed in Consul (before the first pass, that pass covers them).
    pub(super) fn repair(&mut self, keys: BTreeSet<ServiceKey>) {
        if !self.synced || keys.is_empty() {
            return;
        }
        let now = Instant::now();
        for key in &keys {
            self.first_event.entry(key.clone()).or_insert(now);
        }
        let fights =
            crate::repair::schedule(&mut self.repairs, &self.queue, &self.metrics, keys, now);
        let services: Vec<ServiceInput> = fights
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
    pub(super) fn watch_error(&self, kind: &'static str, f: &WatchFailure) {
        self.metrics.watch_error(kind);
        self.unreadable(kind, &mirra_runtime::watch::explain(&watch_hints(kind), f));
        tracing::warn!(
            kind,
            cause = f.cause().as_str(),
            attempt = f.attempt,
            retry_in_ms = f.retry_in_ms(),
            "{}; retrying",
            mirra_runtime::watch::explain(&watch_hints(kind), f)
        );
    }

    /// In a dry run, says that `what` could not be read: the preview is
    /// incomplete until it answers again.
    pub(super) fn unreadable(&self, what: &str, error: &dyn std::fmt::Display) {
        if let Some(preview) = &self.settings.preview {
            preview.unreadable(what, Some(error.to_string()));
        }
    }

    /// In a dry run, says that `what` answered again.
    pub(super) fn answered(&self, what: &str) {
        if let Some(preview) = &self.settings.preview {
            preview.unreadable(what, None);
        }
    }

    /// Reports what planning found: writes avoided, and IDs held by
    /// instances we do not own.
    pub(super) fn report_plan(&self, round: &Round) {
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
    pub(super) fn process_keys(&mut self, keys: Vec<ServiceKey>) {
        for key in &keys {
            self.repairs.ran(key);
        }
        let round = self.index.plan_round(&keys);
        self.report_plan(&round);
        if let Some(preview) = &self.settings.preview {
            super::preview::report(preview, &self.index, &keys, &round.planned);
        }
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
    pub(super) fn on_report(&mut self, report: Report) {
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
    pub(super) fn on_written(&mut self, mut done: WriteDone) {
        self.writes_in_flight = self.writes_in_flight.saturating_sub(1);
        self.index.end_write();
        self.held_back = std::mem::take(&mut done.held_back);
        self.after_sent(&done.sent);
        for failure in &done.namespace_failures {
            let services: Vec<ServiceInput> = failure
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
    pub(super) fn after_sent(&mut self, sent: &Sent) {
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

    pub(super) fn done(&self, key: &ServiceKey, outcome: Outcome) {
        if let Err(e) = self.queue.done(key, outcome) {
            tracing::error!(%key, error = %e, "work queue refused done()");
        }
    }
}
