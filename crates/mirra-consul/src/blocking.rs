//! Query options and the rules of Consul's blocking queries.
//!
//! A blocking query sends `?index=<last X-Consul-Index>&wait=<duration>`;
//! Consul answers when its index passes the given one or when the wait
//! (plus up to wait/16 of jitter) ends. An answer therefore does not mean a
//! change, and the index can go backwards (a snapshot restore, a different
//! server), in which case the client must start over from 0.
//!
//! This module holds those rules as pure functions. It must NOT do I/O or
//! sleep; the client and the watch stream apply them.

use std::time::Duration;

/// Longest wait Consul honours; it silently caps larger values at this.
/// Capping on our side keeps the HTTP timeout computed from the real wait.
pub const MAX_WAIT: Duration = Duration::from_secs(600);

/// Default wait of a watch: Consul's own default of 5 minutes. Long waits
/// are cheap for Consul (one goroutine per query) and mean fewer requests.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(300);

/// Minimum spacing between two requests of one watch. Consul advises rate
/// limiting blocking loops: a key that changes constantly would otherwise
/// turn the watch into a busy loop of full reads. 100 ms caps a watch at
/// ten reads a second while adding at most 100 ms of latency to an update.
pub const DEFAULT_MIN_INTERVAL: Duration = Duration::from_millis(100);

/// A value read from Consul with the `X-Consul-Index` it was read at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Versioned<T> {
    /// The `X-Consul-Index` of the answer (0 if Consul sent none).
    pub index: u64,
    /// The value.
    pub value: T,
}

/// Filters and blocking parameters of a read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueryOptions {
    /// `filter` expression (Consul's filtering language).
    pub filter: Option<String>,
    /// `tag` parameters: only instances carrying all of them
    /// (service and health endpoints).
    pub tags: Vec<String>,
    /// `node-meta` parameters as `key:value` pairs: only nodes carrying all.
    pub node_meta: Vec<(String, String)>,
    /// `passing`: only instances whose checks all pass (health endpoint).
    pub passing_only: bool,
    /// `stale`: let any server answer (cheaper, possibly slightly behind).
    pub stale: bool,
    /// `index`: block until Consul's index passes this one.
    pub index: Option<u64>,
    /// `wait`: how long to block at most (capped at [`MAX_WAIT`]).
    pub wait: Option<Duration>,
    /// `ns` of this read instead of the client's (Consul Enterprise): `*`
    /// reads every namespace of the partition, as a syncer that registers
    /// into many namespaces must to see all it owns.
    pub namespace: Option<String>,
}

impl QueryOptions {
    /// Options for a blocking read from `index`, waiting at most `wait`.
    pub fn blocking(index: u64, wait: Duration) -> Self {
        Self {
            index: Some(index),
            wait: Some(wait),
            ..Self::default()
        }
    }

    /// Whether this read blocks (an index was given).
    pub fn is_blocking(&self) -> bool {
        self.index.is_some_and(|i| i > 0)
    }

    /// The wait Consul will apply: the requested one capped at [`MAX_WAIT`],
    /// or Consul's default when an index is given without a wait.
    pub fn effective_wait(&self) -> Option<Duration> {
        if !self.is_blocking() {
            return None;
        }
        Some(self.wait.unwrap_or(DEFAULT_WAIT).min(MAX_WAIT))
    }
}

/// Options of a watch stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchOptions {
    /// How long each blocking request waits at most.
    pub wait: Duration,
    /// Minimum spacing between requests (see [`DEFAULT_MIN_INTERVAL`]).
    pub min_interval: Duration,
    /// Filters applied to every request (their `index`/`wait` are ignored).
    pub query: QueryOptions,
}

impl Default for WatchOptions {
    fn default() -> Self {
        Self {
            wait: DEFAULT_WAIT,
            min_interval: DEFAULT_MIN_INTERVAL,
            query: QueryOptions::default(),
        }
    }
}

/// Formats a duration for the `wait` parameter. Go's duration syntax
/// accepts milliseconds, which keeps sub-second waits (tests) exact.
pub fn format_wait(d: Duration) -> String {
    format!("{}ms", d.as_millis().max(1))
}

/// The HTTP timeout of a blocking request: the wait, plus the wait/16 of
/// jitter Consul may add, plus `margin` for the answer to travel. Always
/// strictly longer than the wait, so that "blocking" never silently turns
/// into "timing out and retrying".
pub fn blocking_timeout(wait: Duration, margin: Duration) -> Duration {
    let wait = wait.min(MAX_WAIT);
    // One extra millisecond keeps the timeout strictly above wait + jitter
    // even with a zero margin.
    wait + wait / 16 + margin + Duration::from_millis(1)
}

/// The index to send with the next blocking request, given the one sent
/// (`previous`) and the one returned. Following Consul's guidance:
/// an index that went backwards resets to 0 (a full, non-blocking read
/// next); a returned 0, which Consul should never send, becomes 1 so the
/// next request still blocks instead of spinning.
pub fn next_index(previous: u64, returned: u64) -> u64 {
    if returned < previous {
        0
    } else if returned == 0 {
        1
    } else {
        returned
    }
}

/// Whether an answer is news for a watch that last saw `previous`:
/// the first answer always is, and later ones only when the index moved
/// (forwards, or backwards after a reset).
pub fn index_moved(previous: Option<u64>, returned: u64) -> bool {
    match previous {
        None => true,
        Some(p) => p != returned,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn index_rules() {
        assert_eq!(next_index(0, 10), 10);
        assert_eq!(next_index(10, 10), 10);
        assert_eq!(next_index(10, 12), 12);
        assert_eq!(next_index(10, 9), 0, "backwards resets to 0");
        assert_eq!(next_index(10, 0), 0, "backwards to 0 resets to 0");
        assert_eq!(
            next_index(0, 0),
            1,
            "a zero index must not cause a busy loop"
        );
    }

    #[test]
    fn moved_rules() {
        assert!(index_moved(None, 5));
        assert!(!index_moved(Some(5), 5));
        assert!(index_moved(Some(5), 6));
        assert!(index_moved(Some(5), 3));
    }

    #[test]
    fn wait_is_formatted_in_ms_and_capped() {
        assert_eq!(format_wait(Duration::from_secs(300)), "300000ms");
        assert_eq!(format_wait(Duration::ZERO), "1ms");
        let q = QueryOptions::blocking(7, Duration::from_secs(3600));
        assert_eq!(q.effective_wait(), Some(MAX_WAIT));
        let q = QueryOptions {
            index: Some(7),
            ..QueryOptions::default()
        };
        assert_eq!(q.effective_wait(), Some(DEFAULT_WAIT));
        assert_eq!(QueryOptions::default().effective_wait(), None);
        assert_eq!(
            QueryOptions::blocking(0, Duration::from_secs(1)).effective_wait(),
            None
        );
    }

    #[test]
    fn default_wait_timeout() {
        // 5 min + 18.75 s jitter + 10 s margin.
        assert_eq!(
            blocking_timeout(DEFAULT_WAIT, Duration::from_secs(10)),
            Duration::from_millis(328_751)
        );
    }

    proptest! {
        #[test]
        fn timeout_always_exceeds_wait_plus_jitter(wait_ms in 0u64..2_000_000, margin_ms in 0u64..60_000) {
            let wait = Duration::from_millis(wait_ms);
            let t = blocking_timeout(wait, Duration::from_millis(margin_ms));
            let capped = wait.min(MAX_WAIT);
            prop_assert!(t > capped + capped / 16);
        }

        #[test]
        fn next_index_never_goes_backwards_except_to_zero(prev in any::<u64>(), ret in any::<u64>()) {
            let n = next_index(prev, ret);
            prop_assert!(n == 0 || n >= prev);
            prop_assert!(n == 0 || n == ret || (ret == 0 && n == 1));
        }
    }
}
