//! The verification pass as steps between writes: a chunk of Services
//! planned at a time, the operations that fill whole transactions handed
//! to the writer, the orphans planned last, and the retry of a pass that
//! did not fully commit.
//!
//! This module must NOT await anything: the pass goes on when the writer
//! answers (`Engine::continue_pass`).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use mirra_catalog::ServiceInput;
use mirra_catalog::{ServiceKey, Warning};
use tokio::time::Instant;

use super::rounds::Engine;
use crate::metrics::CatalogMetrics;
use crate::round::Planned;
use crate::writer::{Job, WriteDone, WriteJob};

/// Planned operations a verification pass holds before writing the ones that
/// fill whole transactions: about 32 transactions' worth, a few MB.
const PASS_FLUSH: usize = 1024;

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
const PASS_CHUNK: usize = 256;

/// Backoff of a failed verification pass: from 1 s up to 60 s, so a Consul
/// outage costs at most one pass a minute.
const PASS_BACKOFF_BASE: Duration = Duration::from_secs(1);
/// See [`PASS_BACKOFF_BASE`].
const PASS_BACKOFF_CAP: Duration = Duration::from_secs(60);

/// A verification pass under way: planned a chunk of keys at a time, and
/// written as whole transactions fill up.
pub(super) struct PassState {
    keys: Vec<ServiceKey>,
    /// Index in `keys` of the next chunk to plan.
    next: usize,
    /// Planned operations not yet written.
    pending: Vec<Planned>,
    /// Whether the orphans were planned (the last step).
    orphans_planned: bool,
    /// The last step was a write: plan more before writing again.
    just_flushed: bool,
    events: Vec<(ServiceInput, Vec<Warning>)>,
    outcome: PassOutcome,
}

impl Engine {
    /// Starts a verification pass: re-plans every Service from the caches
    /// and writes the drift, including the removal of owned instances
    /// nothing wants.
    pub(super) fn verification_pass(&mut self) {
        self.pass_retry_at = None;
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
    pub(super) fn continue_pass(&mut self) {
        if self.writes_in_flight > 0 {
            return;
        }
        let Some(mut pass) = self.pass.take() else {
            return;
        };
        loop {
            if !pass.just_flushed
                && pass.pending.len() >= PASS_FLUSH
                && self.flush(&mut pass, false)
            {
                break;
            }
            pass.just_flushed = false;
            if pass.next < pass.keys.len() {
                let end = (pass.next + PASS_CHUNK).min(pass.keys.len());
                let chunk = &pass.keys[pass.next..end];
                let round = self.index.plan_pass_chunk(chunk);
                if let Some(preview) = &self.settings.preview {
                    super::preview::report(preview, &self.index, chunk, &round.planned);
                }
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
                if let Some(preview) = &self.settings.preview {
                    super::preview::report_orphans(preview, &self.index, &orphans.planned);
                }
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
            self.pass_failures = 0;
            self.index.clear_pending();
        } else {
            self.pass_failures = self.pass_failures.saturating_add(1);
            let exp = self.pass_failures.saturating_sub(1).min(16);
            let delay = PASS_BACKOFF_BASE
                .saturating_mul(1 << exp)
                .min(PASS_BACKOFF_CAP);
            self.pass_retry_at = Some(Instant::now() + delay);
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
pub(super) fn pass_written(
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
