//! Retry policy and jittered exponential backoff.
//!
//! The delay computation is pure: the caller supplies the random number, so
//! the bounds are property-tested without a clock. This module must NOT
//! sleep or decide WHAT is retryable; that is [`crate::Error::is_retryable`]
//! and the client's idempotency rules.
//!
//! It is the one backoff not computed by `mirra_runtime::queue::backoff_delay`:
//! mirra-consul is a client library usable without the controllers' runtime,
//! and depends on nothing of it.

use std::time::Duration;

/// Attempts per request (the first try included). Four attempts with the
/// default delays span about 0.1 + 0.2 + 0.4 s (halved by jitter at worst),
/// long enough to ride out a dropped keep-alive connection or a brief
/// leader election, short enough that a reconcile loop gets its error back
/// quickly and can requeue the key with its own, longer backoff.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 4;

/// First retry delay. 100 ms is well above a local round trip, so the second
/// attempt does not hit the same transient condition, and small enough not
/// to be noticed by an operator.
pub const DEFAULT_INITIAL_BACKOFF: Duration = Duration::from_millis(100);

/// Ceiling for one delay. Watches keep retrying for as long as they run;
/// 30 s keeps a long Consul outage from being hammered while still noticing
/// recovery within half a minute.
pub const DEFAULT_MAX_BACKOFF: Duration = Duration::from_secs(30);

/// How failed requests are retried.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts per request, first try included; 1 disables retries.
    pub max_attempts: u32,
    /// Delay before the first retry, doubled for each further one.
    pub initial_backoff: Duration,
    /// Upper bound on any single delay.
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            initial_backoff: DEFAULT_INITIAL_BACKOFF,
            max_backoff: DEFAULT_MAX_BACKOFF,
        }
    }
}

impl RetryPolicy {
    /// A policy that never retries.
    pub fn none() -> Self {
        Self {
            max_attempts: 1,
            ..Self::default()
        }
    }

    /// The delay after the `failures`-th consecutive failure (1-based), with
    /// "equal jitter": uniformly in `[base/2, base]` where
    /// `base = min(initial * 2^(failures-1), max)`. Half the delay is fixed so
    /// that retries never bunch up at zero; the other half spreads many
    /// clients that failed together. `unit` is a random number in `[0, 1)`;
    /// out-of-range values are clamped.
    pub fn delay(&self, failures: u32, unit: f64) -> Duration {
        let base = self.base_delay(failures);
        let unit = if unit.is_finite() {
            unit.clamp(0.0, 1.0)
        } else {
            0.0
        };
        let half = base / 2;
        half + half.mul_f64(unit)
    }

    /// The delay without jitter: `min(initial * 2^(failures-1), max)`.
    pub fn base_delay(&self, failures: u32) -> Duration {
        let exp = failures.saturating_sub(1).min(31);
        self.initial_backoff
            .checked_mul(1u32 << exp)
            .unwrap_or(self.max_backoff)
            .min(self.max_backoff)
    }

    /// [`RetryPolicy::delay`] with a fresh random number.
    pub fn jittered_delay(&self, failures: u32) -> Duration {
        self.delay(failures, rand::random::<f64>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn base_doubles_then_caps() {
        let p = RetryPolicy {
            max_attempts: 10,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(1),
        };
        assert_eq!(p.base_delay(1), Duration::from_millis(100));
        assert_eq!(p.base_delay(2), Duration::from_millis(200));
        assert_eq!(p.base_delay(3), Duration::from_millis(400));
        assert_eq!(p.base_delay(4), Duration::from_millis(800));
        assert_eq!(p.base_delay(5), Duration::from_secs(1));
        assert_eq!(p.base_delay(1000), Duration::from_secs(1));
        // failures = 0 is treated like the first failure rather than panicking.
        assert_eq!(p.base_delay(0), Duration::from_millis(100));
    }

    #[test]
    fn jitter_spans_half_to_full() {
        let p = RetryPolicy::default();
        assert_eq!(p.delay(1, 0.0), Duration::from_millis(50));
        assert_eq!(p.delay(1, 1.0), Duration::from_millis(100));
        assert_eq!(p.delay(1, f64::NAN), Duration::from_millis(50));
        assert_eq!(p.delay(1, 7.0), Duration::from_millis(100));
        assert_eq!(p.delay(1, -3.0), Duration::from_millis(50));
    }

    proptest! {
        #[test]
        fn delay_within_bounds(
            failures in 0u32..200,
            unit in proptest::num::f64::ANY,
            initial_ms in 0u64..10_000,
            max_ms in 0u64..600_000,
        ) {
            let p = RetryPolicy {
                max_attempts: 3,
                initial_backoff: Duration::from_millis(initial_ms),
                max_backoff: Duration::from_millis(max_ms),
            };
            let base = p.base_delay(failures);
            let d = p.delay(failures, unit);
            prop_assert!(base <= p.max_backoff);
            prop_assert!(d <= base);
            prop_assert!(d >= base / 2);
        }

        #[test]
        fn base_is_monotonic(failures in 1u32..100, initial_ms in 1u64..5_000) {
            let p = RetryPolicy {
                max_attempts: 3,
                initial_backoff: Duration::from_millis(initial_ms),
                max_backoff: Duration::from_secs(60),
            };
            prop_assert!(p.base_delay(failures) <= p.base_delay(failures + 1));
        }
    }
}
