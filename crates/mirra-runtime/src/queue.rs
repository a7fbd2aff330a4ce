//! A keyed work queue for reconcilers: dedup, debounce, per-key backoff.
//!
//! Watch events are turned into keys (a target namespace, a Service) and
//! added here; workers take ready keys, plan and write, and report the
//! outcome. The queue holds at most ONE entry per key, never a log of
//! events: a reconciler is level-based, so ten events for one key are one
//! unit of work.
//!
//! ```text
//!  add(k) ──► Pending{ready_at} ──next()/drain_ready()──► InFlight
//!                 ▲                                          │
//!                 │  re-added while in flight, Retry,        │ done(k, outcome)
//!                 └───────── RetryAfter ─────────────────────┤
//!                                                            ▼
//!                                           gone (Success, not re-added)
//! ```
//!
//! Guarantees:
//! - a key is handed to at most one worker at a time (a key added while in
//!   flight is remembered and handed out again after `done`);
//! - every added key is handed out eventually (until `shutdown`);
//! - a burst of adds is gathered: a key becomes ready `debounce` after its
//!   latest add, but never later than `max_delay` after the first add of the
//!   burst, so a steady stream of events cannot starve it.
//!
//! It must NOT: do I/O, know what a key means, keep per-event history, or
//! read the wall clock (it uses `tokio::time::Instant`, so tests drive it
//! with `tokio::time::pause`).

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// Errors from the queue. All of them are caller bugs, never transient.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum QueueError {
    /// `done` was called for a key that was not handed out (or was already
    /// reported). Not retryable: the worker loop is calling `done` twice or
    /// for the wrong key; fix the caller.
    #[error("done() for a key that is not in flight")]
    NotInFlight,
    /// The configuration is inconsistent (see the message). Not retryable:
    /// fix the configuration.
    #[error("invalid queue configuration: {0}")]
    InvalidConfig(&'static str),
}

/// How processing a key ended, reported with [`WorkQueue::done`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The key is in step. Its failure count is reset.
    Success,
    /// Processing failed; try again after the key's exponential backoff
    /// (with jitter). Increments the key's failure count.
    Retry,
    /// Try again after exactly this delay (for example a server's
    /// `Retry-After`). Leaves the failure count unchanged.
    RetryAfter(Duration),
}

/// Timing parameters of a [`WorkQueue`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueConfig {
    /// Quiet time after the latest add before a key becomes ready.
    pub debounce: Duration,
    /// Upper bound from the first add of a burst until the key is ready,
    /// however many adds keep arriving. Must be `>= debounce`; set it equal
    /// to `debounce` for a fixed window counted from the first add.
    pub max_delay: Duration,
    /// Backoff after the first failure; doubles with each further failure.
    pub backoff_base: Duration,
    /// Largest backoff for one key.
    pub backoff_cap: Duration,
}

impl Default for QueueConfig {
    /// The timings every controller starts from: 100 ms debounce, 1 s max
    /// delay, backoff from 200 ms doubling up to 5 min. They gather the
    /// events of one API write and bound added latency well under a second
    /// while keeping a persistently failing key cheap (each value's reason
    /// is next to it).
    fn default() -> Self {
        Self {
            // 100 ms gathers the events of one API write (an object and its
            // status, a Service and its EndpointSlices arrive within a few
            // milliseconds) and most of a rollout's per-pod churn, while
            // staying far below what a human notices.
            debounce: Duration::from_millis(100),
            // 1 s bounds the added latency during a long rollout, where
            // EndpointSlices change continuously for minutes: the key is
            // synced at least once a second instead of never.
            max_delay: Duration::from_secs(1),
            // 200 ms: a conflict or a brief API hiccup usually clears within
            // one round trip or two; controller-runtime's 5 ms mostly
            // re-sends into the same failure.
            backoff_base: Duration::from_millis(200),
            // 5 min: after ~11 doublings a persistently failing key (bad
            // permissions, an invalid object) costs one request per five
            // minutes, and a fix is still picked up without a restart. The
            // periodic verification pass and new events reach it sooner.
            backoff_cap: Duration::from_secs(300),
        }
    }
}

impl QueueConfig {
    /// Checks that the parameters are consistent.
    pub fn validate(&self) -> Result<(), QueueError> {
        if self.max_delay < self.debounce {
            return Err(QueueError::InvalidConfig("max_delay must be >= debounce"));
        }
        if self.backoff_cap < self.backoff_base {
            return Err(QueueError::InvalidConfig(
                "backoff_cap must be >= backoff_base",
            ));
        }
        Ok(())
    }
}

/// The backoff before retry number `failures` (1 = first failure).
///
/// The un-jittered delay is `base * 2^(failures-1)`, capped at `cap`.
/// "Equal jitter" then keeps half of it fixed and randomises the other half
/// with `jitter` in `[0, 1]` (clamped; NaN counts as 0): keys that failed
/// together (an API outage) spread out instead of retrying in lockstep,
/// yet a key never retries sooner than half its nominal delay.
///
/// This is the one exponential backoff of both controllers: the queue's
/// per-key retries, the mirror's permanent-failure retries and its watch
/// backoff (`jitter` 1), the catalog writer's pause while Consul is
/// unavailable, the spacing of repeated repairs and the ExternalName
/// writer's retries all compute their delays here. It is a pure function of the
/// failure count and a caller-supplied random number, so every caller keeps
/// its own state on its own (virtual) clock and the bounds are
/// property-tested; the backoff crates (`backoff`, `backon`) own the clock,
/// the randomness and the retry loop instead, which none of the callers
/// wants. `mirra-consul`'s `RetryPolicy` computes the same formula on its
/// own: the client is a library usable without this runtime and does not
/// depend on it.
pub fn backoff_delay(base: Duration, cap: Duration, failures: u32, jitter: f64) -> Duration {
    // Past 2^31 the multiplier overflows, and by then any base has long
    // reached any sensible cap, so overflow simply means "the cap".
    let nominal = 2u32
        .checked_pow(failures.saturating_sub(1))
        .and_then(|m| base.checked_mul(m))
        .map_or(cap, |d| d.min(cap));
    let jitter = if jitter.is_nan() {
        0.0
    } else {
        jitter.clamp(0.0, 1.0)
    };
    // Exactly the nominal delay: `mul_f64` goes through seconds as a float
    // and may be a nanosecond off, and callers without jitter compare.
    if jitter == 1.0 {
        return nominal;
    }
    let half = nominal / 2;
    half + (nominal - half).mul_f64(jitter)
}

/// When a pending key becomes ready: the earlier of its debounce deadline
/// (from `add`) and its timer (from `add_after` or a retry).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Wake {
    /// First add of the current burst, the anchor for `max_delay`.
    burst_start: Option<Instant>,
    /// `min(latest add + debounce, burst_start + max_delay)`.
    debounce_at: Option<Instant>,
    /// Earliest explicit timer.
    timer_at: Option<Instant>,
}

impl Wake {
    fn add(&mut self, now: Instant, cfg: &QueueConfig) {
        let start = *self.burst_start.get_or_insert(now);
        let limit = start + cfg.max_delay;
        self.debounce_at = Some((now + cfg.debounce).min(limit));
    }

    fn add_timer(&mut self, at: Instant) {
        self.timer_at = Some(self.timer_at.map_or(at, |t| t.min(at)));
    }

    fn ready_at(&self) -> Option<Instant> {
        match (self.debounce_at, self.timer_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

#[derive(Debug)]
enum Slot {
    /// Just created, about to become pending (never left in the map).
    Idle,
    /// Waiting to become ready; `ready_at` mirrors the key in `by_time`.
    Pending { wake: Wake, ready_at: Instant },
    /// Handed to a worker. `again` holds adds that arrived meanwhile.
    InFlight { again: Option<Wake> },
}

#[derive(Debug)]
struct Entry {
    slot: Slot,
    failures: u32,
}

#[derive(Debug)]
struct State<K> {
    entries: BTreeMap<K, Entry>,
    /// Pending keys ordered by readiness: the earliest is first, ties by key.
    by_time: BTreeSet<(Instant, K)>,
    in_flight: usize,
    shutdown: bool,
}

/// A keyed work queue. Cheap to clone: clones share one queue.
#[derive(Debug)]
pub struct WorkQueue<K> {
    state: Arc<Mutex<State<K>>>,
    notify: Arc<Notify>,
    config: Arc<QueueConfig>,
}

impl<K> Clone for WorkQueue<K> {
    fn clone(&self) -> Self {
        Self {
            state: Arc::clone(&self.state),
            notify: Arc::clone(&self.notify),
            config: Arc::clone(&self.config),
        }
    }
}

impl<K: Ord + Clone + Send + 'static> WorkQueue<K> {
    /// Creates an empty queue.
    pub fn new(config: QueueConfig) -> Result<Self, QueueError> {
        config.validate()?;
        Ok(Self {
            state: Arc::new(Mutex::new(State {
                entries: BTreeMap::new(),
                by_time: BTreeSet::new(),
                in_flight: 0,
                shutdown: false,
            })),
            notify: Arc::new(Notify::new()),
            config: Arc::new(config),
        })
    }

    /// The configuration this queue was built with.
    pub fn config(&self) -> &QueueConfig {
        &self.config
    }

    fn lock(&self) -> MutexGuard<'_, State<K>> {
        // A panic while holding the lock cannot leave the maps half-updated
        // in a way that breaks the invariants worse than losing the queue
        // would, so keep serving rather than cascade the panic.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Marks `key` as needing work after the debounce window.
    ///
    /// A key that is already pending stays pending once (its debounce
    /// deadline moves to `now + debounce`, bounded by `max_delay` since the
    /// first add of the burst). A key in flight is handed out again after
    /// its `done`. Ignored after `shutdown`.
    pub fn add(&self, key: K) {
        let cfg = Arc::clone(&self.config);
        self.schedule(key, move |wake, now| wake.add(now, &cfg));
    }

    /// Marks `key` as needing work after `delay`. If the key is already
    /// pending, the earlier of the two times wins.
    pub fn add_after(&self, key: K, delay: Duration) {
        self.schedule(key, move |wake, now| wake.add_timer(now + delay));
    }

    fn schedule(&self, key: K, update: impl FnOnce(&mut Wake, Instant)) {
        let now = Instant::now();
        let mut st = self.lock();
        if st.shutdown {
            return;
        }
        let State {
            entries, by_time, ..
        } = &mut *st;
        let entry = entries.entry(key.clone()).or_insert(Entry {
            slot: Slot::Idle,
            failures: 0,
        });
        match &mut entry.slot {
            Slot::InFlight { again } => update(again.get_or_insert_with(Wake::default), now),
            Slot::Pending { wake, ready_at } => {
                update(wake, now);
                let new_at = wake.ready_at().unwrap_or(now);
                if new_at != *ready_at {
                    by_time.remove(&(*ready_at, key.clone()));
                    by_time.insert((new_at, key));
                    *ready_at = new_at;
                }
            }
            Slot::Idle => {
                let mut wake = Wake::default();
                update(&mut wake, now);
                let ready_at = wake.ready_at().unwrap_or(now);
                by_time.insert((ready_at, key));
                entry.slot = Slot::Pending { wake, ready_at };
            }
        }
        drop(st);
        // Waiting workers re-check: the new deadline may be earlier than the
        // one they sleep towards.
        self.notify.notify_waiters();
    }

    /// Takes up to `max` keys that are ready now, marking them in flight.
    /// Never waits. Each returned key must be reported with [`done`].
    ///
    /// [`done`]: WorkQueue::done
    pub fn drain_ready(&self, max: usize) -> Vec<K> {
        let now = Instant::now();
        let mut st = self.lock();
        Self::take_ready(&mut st, now, now, max)
    }

    /// Takes up to `max` keys due by `horizon`, but only when one is due by
    /// `now` (a batch never starts early, it only gathers).
    fn take_ready(st: &mut State<K>, now: Instant, horizon: Instant, max: usize) -> Vec<K> {
        let mut out = Vec::new();
        if st.shutdown || st.by_time.first().is_none_or(|(at, _)| *at > now) {
            return out;
        }
        while out.len() < max {
            let Some((at, _)) = st.by_time.first() else {
                break;
            };
            if *at > horizon {
                break;
            }
            let Some((_, key)) = st.by_time.pop_first() else {
                break;
            };
            if let Some(entry) = st.entries.get_mut(&key) {
                entry.slot = Slot::InFlight { again: None };
                st.in_flight += 1;
                out.push(key);
            }
        }
        out
    }

    /// Waits for a ready key that no worker holds and marks it in flight.
    /// Returns `None` once the queue is shut down. Cancel-safe: a key is
    /// marked in flight only when this returns it.
    pub async fn next(&self) -> Option<K> {
        self.next_batch(1).await.pop()
    }

    /// Like [`next`](WorkQueue::next), but takes up to `max` ready keys at
    /// once (at least one; empty only after shutdown), for writers that
    /// batch many keys into one request.
    pub async fn next_batch(&self, max: usize) -> Vec<K> {
        self.next_batch_gathering(max, Duration::ZERO).await
    }

    /// Like [`next_batch`](WorkQueue::next_batch), but once a key is ready
    /// the batch also takes the keys that would become ready within
    /// `gather`: adds to different keys a few milliseconds apart (a
    /// rollout touching many Services) become one batch instead of one
    /// batch per key, at the price of those keys' quiet time being up to
    /// `gather` shorter. The first key is never handed out early.
    pub async fn next_batch_gathering(&self, max: usize, gather: Duration) -> Vec<K> {
        let max = max.max(1);
        loop {
            // Register interest before looking, so an add between the check
            // and the wait still wakes us.
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let next_at = {
                let mut st = self.lock();
                if st.shutdown {
                    return Vec::new();
                }
                let now = Instant::now();
                let batch = Self::take_ready(&mut st, now, now + gather, max);
                if !batch.is_empty() {
                    return batch;
                }
                st.by_time.first().map(|(at, _)| *at)
            };
            match next_at {
                Some(at) => {
                    tokio::select! {
                        _ = notified => {}
                        _ = tokio::time::sleep_until(at) => {}
                    }
                }
                None => notified.await,
            }
        }
    }

    /// Reports how processing `key` ended and releases it.
    ///
    /// If the key was added while in flight, it becomes pending again (with
    /// the timing of those adds, or the retry time if that is earlier).
    pub fn done(&self, key: &K, outcome: Outcome) -> Result<(), QueueError> {
        let now = Instant::now();
        let mut st = self.lock();
        let State {
            entries,
            by_time,
            in_flight,
            shutdown,
        } = &mut *st;
        let entry = entries.get_mut(key).ok_or(QueueError::NotInFlight)?;
        let again = match &mut entry.slot {
            Slot::InFlight { again } => again.take(),
            _ => return Err(QueueError::NotInFlight),
        };
        *in_flight -= 1;
        let mut wake = again;
        match outcome {
            Outcome::Success => entry.failures = 0,
            Outcome::Retry => {
                entry.failures = entry.failures.saturating_add(1);
                let delay = backoff_delay(
                    self.config.backoff_base,
                    self.config.backoff_cap,
                    entry.failures,
                    rand::random::<f64>(),
                );
                wake.get_or_insert_with(Wake::default)
                    .add_timer(now + delay);
            }
            Outcome::RetryAfter(delay) => {
                wake.get_or_insert_with(Wake::default)
                    .add_timer(now + delay);
            }
        }
        match wake.filter(|_| !*shutdown) {
            Some(wake) => {
                let ready_at = wake.ready_at().unwrap_or(now);
                by_time.insert((ready_at, key.clone()));
                entry.slot = Slot::Pending { wake, ready_at };
                drop(st);
                self.notify.notify_waiters();
            }
            // Not coming back: nothing to remember, not even the failure
            // count (only `Success` ends a run without a wake, and it resets
            // the count), so memory stays one entry per queued key.
            None => {
                entries.remove(key);
            }
        }
        Ok(())
    }

    /// Whether `key` is waiting (debounced, backing off or ready) or held
    /// by a worker: work on it is not finished.
    pub fn is_queued(&self, key: &K) -> bool {
        self.lock()
            .entries
            .get(key)
            .is_some_and(|e| !matches!(e.slot, Slot::Idle))
    }

    /// The number of consecutive failures recorded for `key`.
    pub fn failures(&self, key: &K) -> u32 {
        self.lock().entries.get(key).map_or(0, |e| e.failures)
    }

    /// Keys waiting to be handed out (ready or not yet), excluding keys in
    /// flight.
    pub fn len(&self) -> usize {
        self.lock().by_time.len()
    }

    /// True when no key is pending.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Keys currently held by workers.
    pub fn in_flight(&self) -> usize {
        self.lock().in_flight
    }

    /// Stops the queue: `next` returns `None` from now on, adds are ignored
    /// and pending keys are dropped. Workers may still report `done`.
    pub fn shutdown(&self) {
        let mut st = self.lock();
        st.shutdown = true;
        st.by_time.clear();
        st.entries
            .retain(|_, e| matches!(e.slot, Slot::InFlight { .. }));
        drop(st);
        self.notify.notify_waiters();
    }

    /// True after [`shutdown`](WorkQueue::shutdown).
    pub fn is_shutdown(&self) -> bool {
        self.lock().shutdown
    }

    /// Calls `shutdown` when `signal` completes; run it as a task.
    pub async fn shutdown_on(self, signal: impl Future<Output = ()>) {
        signal.await;
        self.shutdown();
    }
}

#[cfg(test)]
mod tests;
