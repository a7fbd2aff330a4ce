//! The backoff of the Consul writes as a whole.
//!
//! Each HTTP request is already retried a few times by `mirra-consul`, and
//! each key that failed waits out its own backoff in the work queue. Neither
//! is enough when Consul is unavailable for longer (no cluster leader, 5xx,
//! connection refused): every Service that changes meanwhile would start a
//! round of its own at its own pace, and many keys make many rounds. So the
//! writer as a whole backs off: after a round in which Consul was
//! unavailable it sends nothing for an exponentially growing, jittered
//! delay (capped), and a round that commits resets it. While it waits,
//! changes collect in the queue (deduplicated per Service) and are planned
//! together when it ends, so an outage costs a number of requests that
//! grows with its length logarithmically up to the cap, not with the
//! number of changes.
//!
//! This module must NOT sleep or decide which errors mean "unavailable";
//! the engine does both. Time and randomness are passed in. The delays
//! come from `mirra_runtime::queue::backoff_delay`, the controllers' one
//! backoff formula; this type only keeps the count and the deadline.

use std::time::Duration;

use mirra_runtime::queue::backoff_delay;
use tokio::time::Instant;

/// Default delay after the first unavailable round. The client has already
/// retried for about 0.7 s by then; one more second lets a leader election
/// (typically well under that) finish before the next round.
pub const DEFAULT_WRITE_BACKOFF_BASE: Duration = Duration::from_secs(1);

/// Default ceiling of one delay: a long outage costs one round a minute,
/// and recovery is noticed within a minute.
pub const DEFAULT_WRITE_BACKOFF_CAP: Duration = Duration::from_secs(60);

/// State of the writer's backoff.
#[derive(Debug, Clone)]
pub(crate) struct WriterBackoff {
    base: Duration,
    /// Never below `base`: a cap under the base means "the base".
    cap: Duration,
    failures: u32,
    until: Option<Instant>,
}

impl WriterBackoff {
    /// Starts with no failure: writing is allowed.
    pub(crate) fn new(base: Duration, cap: Duration) -> Self {
        Self {
            base,
            cap: cap.max(base),
            failures: 0,
            until: None,
        }
    }

    /// A round found Consul unavailable: no write until the returned delay
    /// (equal jitter: in `[d/2, d]` for `d = min(base * 2^(n-1), cap)`
    /// after the n-th consecutive such round; `unit` in `[0, 1)`) has passed.
    pub(crate) fn failed(&mut self, now: Instant, unit: f64) -> Duration {
        self.failures = self.failures.saturating_add(1);
        let delay = backoff_delay(self.base, self.cap, self.failures, unit);
        self.until = Some(now + delay);
        delay
    }

    /// A transaction committed: Consul is back, the next failure starts
    /// from the base delay again.
    pub(crate) fn succeeded(&mut self) {
        self.failures = 0;
        self.until = None;
    }

    /// When the current wait ends; `None` when writing is allowed.
    pub(crate) fn until(&self) -> Option<Instant> {
        self.until
    }

    /// The wait has passed (the engine's timer fired): writing is allowed
    /// again, and the failure count is kept until a commit.
    pub(crate) fn expired(&mut self) {
        self.until = None;
    }

    /// Consecutive unavailable rounds.
    pub(crate) fn failures(&self) -> u32 {
        self.failures
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn delays_double_up_to_the_cap_and_a_commit_resets_them() {
        let now = Instant::now();
        let mut b = WriterBackoff::new(Duration::from_millis(100), Duration::from_millis(700));
        assert_eq!(b.until(), None);
        let full: Vec<Duration> = (0..5).map(|_| b.failed(now, 1.0)).collect();
        assert_eq!(
            full,
            [100, 200, 400, 700, 700]
                .map(Duration::from_millis)
                .to_vec()
        );
        assert_eq!(b.failures(), 5);
        assert_eq!(b.until(), Some(now + Duration::from_millis(700)));
        // The timer firing allows a round but keeps the count: the next
        // failure waits the capped delay again.
        b.expired();
        assert_eq!(b.until(), None);
        assert_eq!(b.failed(now, 0.0), Duration::from_millis(350));
        b.succeeded();
        assert_eq!((b.failures(), b.until()), (0, None));
        assert_eq!(b.failed(now, 1.0), Duration::from_millis(100));
    }

    #[test]
    fn a_cap_below_the_base_is_the_base() {
        let mut b = WriterBackoff::new(Duration::from_secs(2), Duration::from_secs(1));
        assert_eq!(b.failed(Instant::now(), 1.0), Duration::from_secs(2));
    }

    proptest! {
        #[test]
        fn every_delay_is_within_half_and_all_of_the_capped_base(
            n in 1u32..100,
            unit in 0.0f64..1.0,
            base_ms in 1u64..5_000,
            cap_ms in 1u64..120_000,
        ) {
            let now = Instant::now();
            let (base, cap) = (Duration::from_millis(base_ms), Duration::from_millis(cap_ms));
            let mut b = WriterBackoff::new(base, cap);
            let mut d = Duration::ZERO;
            for _ in 0..n {
                d = b.failed(now, unit);
            }
            let nominal = base
                .checked_mul(1 << (n - 1).min(31))
                .unwrap_or(Duration::MAX)
                .min(cap.max(base));
            prop_assert!(d <= nominal);
            prop_assert!(d >= nominal / 2);
            prop_assert_eq!(b.until(), Some(now + d));
        }
    }
}
