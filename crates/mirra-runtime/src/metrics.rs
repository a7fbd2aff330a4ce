//! The metric families of the mirror controller (the catalog controller has
//! its own, in `mirra-catalog-controller`'s `metrics`), with low-cardinality
//! labels.
//!
//! Every label value here comes from a small, fixed set: a verb, an object
//! kind, a queue or controller name, an error class. Object names,
//! namespaces, IDs and error messages are NEVER labels: each distinct value
//! is a new time series kept in memory by Prometheus, and a cluster has
//! unboundedly many objects. That is why the verb, class, queue and
//! controller parameters take `&'static str` (constants chosen in code);
//! `kind` is a borrowed string because the mirrored kinds come from
//! configuration, but there are only as many as the cluster has resource
//! types.
//!
//! | family (after the `mirra_` prefix) | type      | labels          |
//! |------------------------------------|-----------|-----------------|
//! | `writes_total`                     | counter   | `verb`, `kind`  |
//! | `skipped_writes_total`             | counter   | `kind`          |
//! | `queue_depth`                      | gauge     | `queue`         |
//! | `event_to_write_seconds`           | histogram | `controller`    |
//! | `cached_objects`                   | gauge     | `kind`          |
//! | `errors_total`                     | counter   | `class`         |
//! | `syncconfigs`                      | gauge     | `condition`: SyncConfigs whose last written status has that condition True (mirror controller) |
//!
//! Leader election registers its own families ([`LeaderMetrics`]), so that
//! both controllers (the catalog has its own families besides these) export
//! the same ones:
//!
//! | family (after the `mirra_` prefix) | type      | labels          |
//! |------------------------------------|-----------|-----------------|
//! | `leader`                           | gauge     | (none): 1 while this replica holds the Lease |
//! | `leader_election_errors_total`     | counter   | `class`         |
//! | `fenced_writes_total`              | counter   | (none): writes not sent because the Lease might lapse first |
//!
//! It must NOT: serve HTTP (see `health`), time things itself, or accept
//! free-form text as a label.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// Prefix of every family, so mirra's series are easy to find and never
/// collide with the process or Go-style defaults of other exporters.
pub const PREFIX: &str = "mirra";

/// Upper bounds (seconds) of the event-to-write latency buckets.
///
/// A 1-2.5-5 series from 1 ms to 10 s: the fastest possible path (cache
/// update, no debounce, one API round trip on a local network) is around a
/// millisecond, the debounce window adds ~100 ms, backoff and client rate
/// limiting push into seconds, and beyond 10 s the `+Inf` bucket itself is
/// the alert. Three buckets per decade give quantile estimates within about
/// a factor of 2.5 at 13 series per label set, which is cheap.
pub const LATENCY_BUCKETS: [f64; 13] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WriteLabels {
    verb: String,
    kind: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    kind: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueLabels {
    queue: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabels {
    controller: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ClassLabels {
    class: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ConditionLabels {
    condition: String,
}

fn latency_histogram() -> Histogram {
    Histogram::new(LATENCY_BUCKETS)
}

/// Handles to the common metric families. Cheap to clone; clones update
/// the same series.
#[derive(Debug, Clone)]
pub struct Metrics {
    writes: Family<WriteLabels, Counter>,
    skipped: Family<KindLabels, Counter>,
    queue_depth: Family<QueueLabels, Gauge>,
    latency: Family<ControllerLabels, Histogram, fn() -> Histogram>,
    cached: Family<KindLabels, Gauge>,
    errors: Family<ClassLabels, Counter>,
    syncconfigs: Family<ConditionLabels, Gauge>,
}

fn gauge_value(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl Metrics {
    /// Creates the families and registers them under [`PREFIX`].
    pub fn register(registry: &mut Registry) -> Self {
        let m = Self {
            writes: Family::default(),
            skipped: Family::default(),
            queue_depth: Family::default(),
            latency: Family::new_with_constructor(latency_histogram as fn() -> Histogram),
            cached: Family::default(),
            errors: Family::default(),
            syncconfigs: Family::default(),
        };
        let reg = registry.sub_registry_with_prefix(PREFIX);
        reg.register(
            "writes",
            "Write requests sent (Kubernetes or Consul), by verb and object kind",
            m.writes.clone(),
        );
        reg.register(
            "skipped_writes",
            "Writes not sent because the observed state already matched",
            m.skipped.clone(),
        );
        reg.register(
            "queue_depth",
            "Keys waiting in a work queue",
            m.queue_depth.clone(),
        );
        reg.register(
            "event_to_write_seconds",
            "Time from the watch event that made a key dirty to the write that settled it",
            m.latency.clone(),
        );
        reg.register(
            "cached_objects",
            "Objects held in watch caches, by kind",
            m.cached.clone(),
        );
        reg.register("errors", "Errors by class", m.errors.clone());
        reg.register(
            "syncconfigs",
            "SyncConfigs whose last written status has the condition True, by condition type",
            m.syncconfigs.clone(),
        );
        m
    }

    /// Records how many SyncConfigs have `condition` True.
    pub fn set_syncconfigs(&self, condition: &'static str, count: usize) {
        self.syncconfigs
            .get_or_create(&ConditionLabels {
                condition: condition.into(),
            })
            .set(gauge_value(count));
    }

    /// Counts one write request of `verb` (e.g. `"apply"`, `"delete"`,
    /// `"txn"`) on `kind`.
    pub fn write(&self, verb: &'static str, kind: &str) {
        self.writes
            .get_or_create(&WriteLabels {
                verb: verb.into(),
                kind: kind.into(),
            })
            .inc();
    }

    /// Counts one write that was not sent because nothing would change.
    pub fn skipped_write(&self, kind: &str) {
        self.skipped
            .get_or_create(&KindLabels { kind: kind.into() })
            .inc();
    }

    /// Records the current depth of the queue named `queue`.
    pub fn set_queue_depth(&self, queue: &'static str, depth: usize) {
        self.queue_depth
            .get_or_create(&QueueLabels {
                queue: queue.into(),
            })
            .set(gauge_value(depth));
    }

    /// Records the latency from an event to the write it caused.
    pub fn observe_event_to_write(&self, controller: &'static str, latency: Duration) {
        self.latency
            .get_or_create(&ControllerLabels {
                controller: controller.into(),
            })
            .observe(latency.as_secs_f64());
    }

    /// Records how many objects of `kind` the caches hold.
    pub fn set_cached_objects(&self, kind: &str, count: usize) {
        self.cached
            .get_or_create(&KindLabels { kind: kind.into() })
            .set(gauge_value(count));
    }

    /// Counts one error of `class` (a short constant such as `"conflict"`,
    /// `"forbidden"`, `"timeout"`; each error enum provides one).
    pub fn error(&self, class: &'static str) {
        self.errors
            .get_or_create(&ClassLabels {
                class: class.into(),
            })
            .inc();
    }
}

/// Handles to the leader-election families. Cheap to clone; clones update
/// the same series.
#[derive(Debug, Clone, Default)]
pub struct LeaderMetrics {
    leader: Gauge,
    errors: Family<ClassLabels, Counter>,
    fenced: Counter,
}

impl LeaderMetrics {
    /// Creates the families and registers them under [`PREFIX`]. The
    /// `leader` gauge is exported from the start (as 0), so an alert on
    /// "no replica leads" has a series to look at.
    pub fn register(registry: &mut Registry) -> Self {
        let m = Self::default();
        let reg = registry.sub_registry_with_prefix(PREFIX);
        reg.register(
            "leader",
            "1 while this replica holds the leader-election Lease, else 0",
            m.leader.clone(),
        );
        reg.register(
            "leader_election_errors",
            "Failed leader-election Lease requests, by class",
            m.errors.clone(),
        );
        reg.register(
            "fenced_writes",
            "Writes not sent because the Lease could lapse before their timeout",
            m.fenced.clone(),
        );
        m
    }

    /// Records whether this replica leads.
    pub fn set_leading(&self, leading: bool) {
        self.leader.set(i64::from(leading));
    }

    /// Counts one failed Lease request of `class`.
    pub fn error(&self, class: &'static str) {
        self.errors
            .get_or_create(&ClassLabels {
                class: class.into(),
            })
            .inc();
    }

    /// Counts one write the fence held back.
    pub fn fenced_write(&self) {
        self.fenced.inc();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(registry: &Registry) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, registry).unwrap();
        out
    }

    #[test]
    fn families_appear_in_text_output() {
        let mut registry = Registry::default();
        let m = Metrics::register(&mut registry);
        m.write("apply", "ConfigMap");
        m.write("apply", "ConfigMap");
        m.write("delete", "Secret");
        m.skipped_write("ConfigMap");
        m.set_queue_depth("mirror", 7);
        m.observe_event_to_write("catalog", Duration::from_millis(3));
        m.set_cached_objects("Service", 1200);
        m.error("conflict");
        let text = encode(&registry);
        for line in [
            "# TYPE mirra_writes counter",
            r#"mirra_writes_total{verb="apply",kind="ConfigMap"} 2"#,
            r#"mirra_writes_total{verb="delete",kind="Secret"} 1"#,
            r#"mirra_skipped_writes_total{kind="ConfigMap"} 1"#,
            "# TYPE mirra_queue_depth gauge",
            r#"mirra_queue_depth{queue="mirror"} 7"#,
            "# TYPE mirra_event_to_write_seconds histogram",
            r#"mirra_event_to_write_seconds_count{controller="catalog"} 1"#,
            r#"mirra_event_to_write_seconds_bucket{le="0.0025",controller="catalog"} 0"#,
            r#"mirra_event_to_write_seconds_bucket{le="0.005",controller="catalog"} 1"#,
            r#"mirra_event_to_write_seconds_bucket{le="10.0",controller="catalog"} 1"#,
            r#"mirra_cached_objects{kind="Service"} 1200"#,
            r#"mirra_errors_total{class="conflict"} 1"#,
        ] {
            assert!(text.contains(line), "missing {line:?} in:\n{text}");
        }
    }

    #[test]
    fn nothing_is_exported_before_it_is_recorded() {
        // prometheus-client leaves out families without series, so no
        // label value is ever invented: an idle controller exports nothing
        // but the terminator.
        let mut registry = Registry::default();
        let m = Metrics::register(&mut registry);
        assert_eq!(encode(&registry), "# EOF\n");
        m.error("timeout");
        let text = encode(&registry);
        assert!(
            text.contains("# HELP mirra_errors Errors by class."),
            "{text}"
        );
        assert!(!text.contains("mirra_writes"), "{text}");
    }

    #[test]
    fn leader_families() {
        let mut registry = Registry::default();
        let m = LeaderMetrics::register(&mut registry);
        let text = encode(&registry);
        assert!(text.contains("mirra_leader 0\n"), "{text}");
        m.set_leading(true);
        m.error("forbidden");
        m.fenced_write();
        let text = encode(&registry);
        for line in [
            "# TYPE mirra_leader gauge",
            "mirra_leader 1\n",
            r#"mirra_leader_election_errors_total{class="forbidden"} 1"#,
            "mirra_fenced_writes_total 1",
        ] {
            assert!(text.contains(line), "missing {line:?} in:\n{text}");
        }
    }

    #[test]
    fn buckets_span_one_millisecond_to_ten_seconds() {
        assert_eq!(LATENCY_BUCKETS.first(), Some(&0.001));
        assert_eq!(LATENCY_BUCKETS.last(), Some(&10.0));
        assert!(LATENCY_BUCKETS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn huge_counts_saturate_instead_of_wrapping() {
        assert_eq!(gauge_value(usize::MAX), i64::MAX);
        assert_eq!(gauge_value(3), 3);
    }
}
