//! The verification loop: a slow periodic pass that re-plans every namespace
//! from the caches, in chunks, so a missed event cannot leave a copy wrong for
//! good.
//!
//! This module must NOT read from the API server: it re-plans from the watch
//! caches only.

use super::*;

/// Re-plans every namespace from the caches, periodically. CPU only when
/// everything is in step; kinds discovery could not resolve are asked
/// again (a CRD may have been installed since).
pub(super) async fn verify_loop(shared: Arc<Shared>) {
    let Some(every) = shared.settings.verify_interval else {
        return;
    };
    loop {
        tokio::select! {
            _ = shared.shutdown.cancelled() => return,
            _ = tokio::time::sleep(every) => {}
        }
        let (keys, retry_kinds) = shared.with_state(|s| {
            // Asked again through discovery: a CRD may have been installed.
            let retry = s.forget_failed_kinds();
            // Tenant accounts refused a read are asked again: a grant is
            // picked up here.
            s.forget_access_refusals();
            let keys: BTreeSet<String> = s.namespace_names().into_iter().collect();
            (keys, retry)
        });
        watches::restart_refused_watches(&shared);
        if retry_kinds {
            shared.kinds_changed.notify_one();
        }
        tracing::debug!(namespaces = keys.len(), "verification pass");
        let keys: Vec<String> = keys.into_iter().collect();
        for chunk in keys.chunks(VERIFY_CHUNK) {
            // Event-driven keys go first: the next slice of the pass is
            // queued only once the queue is empty and event-driven work
            // has been quiet for a while, so a namespace created during a
            // pass waits behind one slice, not the whole cluster, and a
            // slice does not compete with the tail of an edit (its writes'
            // answers and echoes) for the CPU.
            let mut waited = Duration::ZERO;
            while !may_queue_slice(
                shared.queue.is_empty(),
                &shared.event_work(),
                Instant::now(),
                waited,
            ) {
                tokio::select! {
                    _ = shared.shutdown.cancelled() => return,
                    _ = tokio::time::sleep(VERIFY_YIELD) => {}
                }
                waited += VERIFY_YIELD;
            }
            let now = Instant::now();
            shared.with_state(|s| {
                s.note_verifying(chunk, |k| shared.queue.is_queued(k));
                s.note_dirty(chunk.iter(), now);
            });
            for k in chunk {
                // No debounce: nothing is bursting, the pass itself is
                // the event.
                shared.queue.add_after(k.clone(), Duration::ZERO);
            }
        }
    }
}

/// Namespaces queued at once by the verification pass. 32: planning one
/// namespace of 40 items costs about a millisecond of CPU, so an event that
/// arrives mid-pass waits some tens of milliseconds at most.
pub(super) const VERIFY_CHUNK: usize = 32;

/// Work on keys that the verification pass did not queue, as the pass
/// yields to it: how many such keys workers hold, and when the last was
/// done.
#[derive(Debug, Default)]
pub(crate) struct EventWork {
    in_flight: usize,
    last_done: Option<Instant>,
}

impl EventWork {
    /// A worker took a key that is not the pass's own.
    pub(super) fn begin(&mut self) {
        self.in_flight += 1;
    }

    /// A worker is done with a key [`EventWork::begin`] counted.
    pub(super) fn end(&mut self, now: Instant) {
        self.in_flight = self.in_flight.saturating_sub(1);
        self.last_done = Some(now);
    }

    /// No such key is held, and none was done within `quiet` of `now`.
    fn quiet(&self, now: Instant, quiet: Duration) -> bool {
        self.in_flight == 0
            && self
                .last_done
                .is_none_or(|at| now.saturating_duration_since(at) >= quiet)
    }
}

/// Whether the pass may queue its next slice, after waiting `waited` for
/// it: when no key is pending and event-driven work has been quiet for
/// [`VERIFY_QUIET`], or at the latest after [`VERIFY_MAX_WAIT`], so that
/// a steady stream of events slows a pass down but never stops it.
fn may_queue_slice(queue_empty: bool, work: &EventWork, now: Instant, waited: Duration) -> bool {
    (queue_empty && work.quiet(now, VERIFY_QUIET)) || waited >= VERIFY_MAX_WAIT
}

/// How long event-driven work must have been quiet before the pass goes
/// on. 200 ms: twice the debounce of events, room for the answers and
/// echoes of an edit's last writes to come in, while a pass over a
/// thousand idle namespaces is delayed by one such wait per slice at most.
pub(super) const VERIFY_QUIET: Duration = Duration::from_millis(200);

/// The longest the pass waits for one slice. 2 s: with events every few
/// hundred milliseconds for good, a pass over 1,000 namespaces (32 per
/// slice) still ends within about a minute.
pub(super) const VERIFY_MAX_WAIT: Duration = Duration::from_secs(2);

/// How often the verification pass looks whether the queue has drained.
/// 10 ms: small against the 100 ms debounce of events, and a pass over a
/// thousand namespaces still takes well under a few seconds.
pub(super) const VERIFY_YIELD: Duration = Duration::from_millis(10);

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_slice_waits_for_pending_keys() {
        let work = EventWork::default();
        let now = Instant::now();
        assert!(!may_queue_slice(false, &work, now, Duration::ZERO));
        assert!(may_queue_slice(true, &work, now, Duration::ZERO));
    }

    #[test]
    fn a_slice_waits_while_event_work_is_held_and_for_the_quiet_after_it() {
        let t0 = Instant::now();
        let mut work = EventWork::default();
        work.begin();
        assert!(!may_queue_slice(true, &work, t0 + ms(900), ms(900)));
        work.end(t0 + ms(1000));
        assert!(!may_queue_slice(true, &work, t0 + ms(1000), ms(1000)));
        assert!(!may_queue_slice(true, &work, t0 + ms(1199), ms(1199)));
        assert!(may_queue_slice(true, &work, t0 + ms(1200), ms(1200)));
    }

    #[test]
    fn two_keys_in_flight_are_quiet_only_when_both_are_done() {
        let t0 = Instant::now();
        let mut work = EventWork::default();
        work.begin();
        work.begin();
        work.end(t0);
        assert!(!work.quiet(t0 + ms(500), VERIFY_QUIET));
        work.end(t0 + ms(500));
        assert!(!work.quiet(t0 + ms(600), VERIFY_QUIET));
        assert!(work.quiet(t0 + ms(700), VERIFY_QUIET));
    }

    #[test]
    fn a_steady_stream_of_events_delays_a_slice_but_never_stops_it() {
        let t0 = Instant::now();
        let mut work = EventWork::default();
        let mut waited = Duration::ZERO;
        let mut now = t0;
        // An event every 100 ms: never 200 ms quiet, and the queue holds
        // a key half of the time.
        while !may_queue_slice(waited.as_millis() % 100 >= 50, &work, now, waited) {
            if waited.as_millis().is_multiple_of(100) {
                work.begin();
                work.end(now);
            }
            waited += VERIFY_YIELD;
            now += VERIFY_YIELD;
        }
        assert_eq!(waited, VERIFY_MAX_WAIT);
    }

    #[test]
    fn an_unmatched_end_does_not_underflow() {
        let t0 = Instant::now();
        let mut work = EventWork::default();
        work.end(t0);
        assert!(work.quiet(t0 + VERIFY_QUIET, VERIFY_QUIET));
    }
}
