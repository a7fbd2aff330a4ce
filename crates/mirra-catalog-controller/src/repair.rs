//! Prompt repair of instances changed in Consul by someone else, without a
//! fight turning into a storm.
//!
//! The node-services and health/node blocking queries show a third party's
//! change to an instance mirra owns as soon as it happens; waiting for the
//! next verification pass (30 s by default) would leave the catalog wrong
//! meanwhile. [`drifted`] finds the service IDs whose content changed
//! between two answers for a reason other than mirra's own writes, and
//! [`RepairGovernor`] decides when the owning Service is planned again:
//! at once the first time, and, while the same Service keeps being changed
//! back after each repair (another writer fighting mirra), after a delay
//! that doubles per repeat up to a ceiling. Each fight is reported once
//! (a Warning Event and `mirra_catalog_contested_repairs`).
//!
//! This module must NOT plan or write anything (the round and the writer
//! do), nor keep anything but per-Service timestamps and counters.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::hash::Hash;
use std::time::Duration;

use mirra_catalog::ServiceKey;
use mirra_runtime::WorkQueue;
use mirra_runtime::queue::backoff_delay;
use tokio::time::Instant;

use crate::metrics::CatalogMetrics;

/// First delay of a contested repair.
pub const DEFAULT_REPAIR_BACKOFF_BASE: Duration = Duration::from_secs(1);
/// Ceiling of the delay of a contested repair.
pub const DEFAULT_REPAIR_BACKOFF_CAP: Duration = Duration::from_secs(300);
/// Time without drift after a repair that ends a fight.
pub const DEFAULT_REPAIR_QUIET: Duration = Duration::from_secs(60);

/// Schedules the repair of each Service in `keys` (drift seen now) on
/// `queue`; returns the Services over which a fight just started (report
/// them).
pub(crate) fn schedule(
    governor: &mut RepairGovernor<ServiceKey>,
    queue: &WorkQueue<ServiceKey>,
    metrics: &CatalogMetrics,
    keys: BTreeSet<ServiceKey>,
    now: Instant,
) -> Vec<ServiceKey> {
    let mut fights = Vec::new();
    for key in keys {
        let admission = governor.admit(&key, now);
        if admission != Admission::Pending {
            metrics.repair();
        }
        match admission {
            // One change often shows in both answers (a deregistration
            // removes the instance and its checks): one repair.
            Admission::Pending => {}
            Admission::Now => queue.add(key),
            Admission::After {
                delay,
                first_of_fight,
            } => {
                if first_of_fight {
                    metrics.contested_repair();
                    tracing::warn!(
                        %key,
                        delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                        "instances changed in Consul again after mirra repaired them; \
                         another writer manages them too: repairs are spaced out"
                    );
                    fights.push(key.clone());
                }
                queue.add_after(key, delay);
            }
        }
    }
    fights
}

/// The IDs whose content differs between `before` and `after` (present in
/// one only, or not `same`), leaving out `ours`: the IDs mirra itself has
/// written and not yet seen confirmed (the planner sees its expectation
/// for them, not the answer).
pub fn drifted<M, V>(
    before: &M,
    after: &M,
    ours: &BTreeSet<&str>,
    same: impl Fn(&V, &V) -> bool,
) -> BTreeSet<String>
where
    M: Entries<V>,
{
    let changed = after
        .pairs()
        .filter(|&(id, v)| !before.lookup(id).is_some_and(|b| same(b, v)))
        .map(|(id, _)| id);
    let gone = before
        .pairs()
        .map(|(id, _)| id)
        .filter(|&id| after.lookup(id).is_none());
    changed
        .chain(gone)
        .filter(|&id| !ours.contains(id.as_str()))
        .cloned()
        .collect()
}

/// The two maps the observed state is kept in, by service ID.
pub trait Entries<V> {
    /// Every entry.
    fn pairs<'a>(&'a self) -> impl Iterator<Item = (&'a String, &'a V)>
    where
        V: 'a;
    /// One entry.
    fn lookup(&self, id: &str) -> Option<&V>;
}

impl<V> Entries<V> for BTreeMap<String, V> {
    fn pairs<'a>(&'a self) -> impl Iterator<Item = (&'a String, &'a V)>
    where
        V: 'a,
    {
        self.iter()
    }
    fn lookup(&self, id: &str) -> Option<&V> {
        self.get(id)
    }
}

impl<V> Entries<V> for HashMap<String, V> {
    fn pairs<'a>(&'a self) -> impl Iterator<Item = (&'a String, &'a V)>
    where
        V: 'a,
    {
        self.iter()
    }
    fn lookup(&self, id: &str) -> Option<&V> {
        self.get(id)
    }
}

/// When to repair a Service again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// A repair of this Service is planned and has not run yet: the drift
    /// rides along with it.
    Pending,
    /// Plan it now (with the usual debounce).
    Now,
    /// Plan it after this delay; `first_of_fight` is true the first time a
    /// fight over this Service is seen (report it then).
    After {
        /// The delay.
        delay: Duration,
        /// The first contested repair since the Service was last quiet.
        first_of_fight: bool,
    },
}

#[derive(Clone, Copy, Debug)]
struct Record {
    /// When the last repair was admitted, plus its delay: when it ran.
    last: Instant,
    /// Repairs admitted since the Service was last quiet, minus one.
    repeats: u32,
}

/// Per-Service repair pacing. A Service is quiet again once no drift was
/// seen for `quiet` after its last repair.
#[derive(Debug)]
pub struct RepairGovernor<K> {
    base: Duration,
    cap: Duration,
    quiet: Duration,
    records: HashMap<K, Record>,
    /// Services with a repair admitted that has not run yet.
    pending: HashSet<K>,
}

impl<K: Eq + Hash + Clone> RepairGovernor<K> {
    /// A governor whose contested delays start at `base` and double up to
    /// `cap`. A fight ends when no drift was seen for `quiet` after the
    /// last repair ran: a writer that changes the instance back right after
    /// each repair stays in the fight however long the delays get.
    pub fn new(base: Duration, cap: Duration, quiet: Duration) -> Self {
        let base = base.max(Duration::from_millis(1));
        Self {
            base,
            cap: cap.max(base),
            quiet,
            records: HashMap::new(),
            pending: HashSet::new(),
        }
    }

    /// Records that `key` was planned again (its repair, if any, ran).
    pub fn ran(&mut self, key: &K) {
        self.pending.remove(key);
    }

    /// Records that every Service was planned again (a verification pass).
    pub fn ran_all(&mut self) {
        self.pending.clear();
    }

    /// Decides when drift seen at `now` on `key` is repaired, and records
    /// it.
    pub fn admit(&mut self, key: &K, now: Instant) -> Admission {
        if !self.pending.insert(key.clone()) {
            return Admission::Pending;
        }
        self.records
            .retain(|_, r| now.saturating_duration_since(r.last) < self.quiet);
        match self.records.get_mut(key) {
            None => {
                self.records.insert(
                    key.clone(),
                    Record {
                        last: now,
                        repeats: 0,
                    },
                );
                Admission::Now
            }
            Some(r) if r.last > now => {
                // A repair is already scheduled: the queue keeps the
                // earlier time, so this drift rides along with it.
                Admission::After {
                    delay: r.last - now,
                    first_of_fight: false,
                }
            }
            Some(r) => {
                r.repeats = r.repeats.saturating_add(1);
                // Without jitter: the delay is what the drift metrics and
                // the tests predict.
                let delay = backoff_delay(self.base, self.cap, r.repeats, 1.0);
                r.last = now + delay;
                Admission::After {
                    delay,
                    first_of_fight: r.repeats == 1,
                }
            }
        }
    }

    /// Services currently remembered (bounded by those repaired within the
    /// quiet time).
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn map(pairs: &[(&str, u8)]) -> BTreeMap<String, u8> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
    }

    #[test]
    fn drift_is_added_changed_or_gone_but_not_ours() {
        let before = map(&[("a", 1), ("b", 1), ("c", 1)]);
        let after = map(&[("a", 1), ("b", 2), ("d", 1)]);
        let none = BTreeSet::new();
        let eq = |a: &u8, b: &u8| a == b;
        let got: Vec<_> = drifted(&before, &after, &none, eq).into_iter().collect();
        assert_eq!(got, ["b", "c", "d"]);
        let ours = BTreeSet::from(["b"]);
        let got: Vec<_> = drifted(&before, &after, &ours, eq).into_iter().collect();
        assert_eq!(got, ["c", "d"]);
        assert!(drifted(&before, &before, &none, eq).is_empty());
        // Only what `same` compares counts.
        assert!(drifted(&before, &after, &none, |_, _| true).len() == 2);
        let h: HashMap<String, u8> = before.clone().into_iter().collect();
        assert!(drifted(&h, &h, &none, eq).is_empty());
    }

    #[test]
    fn first_repair_is_immediate_then_delays_double_to_the_cap() {
        let s = Duration::from_secs;
        let mut g = RepairGovernor::new(s(1), s(8), s(5));
        let t0 = Instant::now();
        assert_eq!(g.admit(&"k", t0), Admission::Now);
        g.ran(&"k");
        let mut now = t0;
        let mut delays = Vec::new();
        for i in 0..6 {
            let admission = g.admit(&"k", now);
            g.ran(&"k");
            match admission {
                Admission::After {
                    delay,
                    first_of_fight,
                } => {
                    assert_eq!(first_of_fight, i == 0);
                    delays.push(delay.as_secs());
                    // The other writer changes it right after our repair.
                    now += delay;
                }
                other => panic!("a repeat is never immediate: {other:?}"),
            }
        }
        assert_eq!(delays, [1, 2, 4, 8, 8, 8]);
        // Another Service is not slowed by this fight.
        assert_eq!(g.admit(&"other", now), Admission::Now);
        g.ran(&"other");
        // Quiet for the quiet time: the next drift is repaired at once.
        assert_eq!(g.admit(&"k", now + s(6)), Admission::Now);
        assert_eq!(g.len(), 1, "only the Service repaired last is kept");
    }

    #[test]
    fn drift_seen_while_a_repair_is_scheduled_rides_along() {
        let s = Duration::from_secs;
        let mut g = RepairGovernor::new(s(2), s(8), s(60));
        let t0 = Instant::now();
        assert_eq!(g.admit(&"k", t0), Admission::Now);
        // Seen again before the repair ran (the other answer showing the
        // same change): the same repair.
        assert_eq!(g.admit(&"k", t0), Admission::Pending);
        g.ran(&"k");
        assert_eq!(
            g.admit(&"k", t0),
            Admission::After {
                delay: s(2),
                first_of_fight: true
            }
        );
        assert_eq!(g.admit(&"k", t0 + s(1)), Admission::Pending);
        // A pass plans every Service: nothing is pending after it.
        g.ran_all();
        assert_eq!(
            g.admit(&"k", t0 + s(1)),
            Admission::After {
                delay: s(1),
                first_of_fight: false
            }
        );
    }

    proptest! {
        /// However often another writer changes a Service, repairs are
        /// bounded: within any span D of a fight at most
        /// 2 + log2(D / base) + D / cap of them run.
        #[test]
        fn repairs_in_a_fight_are_logarithmic_then_capped(
            gaps_ms in proptest::collection::vec(0u64..3_000, 1..200),
        ) {
            let base = Duration::from_millis(100);
            let cap = Duration::from_secs(5);
            let mut g = RepairGovernor::new(base, cap, Duration::from_secs(3600));
            let t0 = Instant::now();
            let mut now = t0;
            let mut runs: BTreeSet<Instant> = BTreeSet::new();
            let mut next_run: Option<Instant> = None;
            for gap in gaps_ms {
                now += Duration::from_millis(gap);
                if next_run.is_some_and(|at| at <= now) {
                    g.ran(&"k");
                    next_run = None;
                }
                let at = match g.admit(&"k", now) {
                    Admission::Pending => continue,
                    Admission::Now => now,
                    Admission::After { delay, .. } => now + delay,
                };
                next_run = Some(at);
                runs.insert(at);
            }
            let first = *runs.iter().next().unwrap();
            let last = *runs.iter().next_back().unwrap();
            let span = (last - first).as_secs_f64();
            let bound = 2.0 + (span / base.as_secs_f64()).max(1.0).log2() + span / cap.as_secs_f64();
            prop_assert!((runs.len() as f64) <= bound + 1.0, "{} runs in {span}s (bound {bound})", runs.len());
        }
    }
}
