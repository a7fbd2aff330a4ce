//! The `/metrics` families of the catalog sync.
//!
//! Every label has a small, fixed set of values (operation verbs, error
//! classes, watched kinds). This module must NOT label by service name,
//! instance ID, node or error text: those would make the series count grow
//! with the catalog.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// Buckets of the event-to-Consul latency, in seconds: from 5 ms (one
/// debounce window of a fast test) to 60 s (a Consul outage being ridden
/// out); the target of 1 s sits in the middle.
const LATENCY_BUCKETS: [f64; 13] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VerbLabels {
    verb: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ClassLabels {
    class: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    kind: &'static str,
}

fn latency_histogram() -> Histogram {
    Histogram::new(LATENCY_BUCKETS)
}

/// The catalog sync's metrics. Cheap to clone (clones share the series).
/// [`CatalogMetrics::default`] gives unregistered metrics (tests, benches).
#[derive(Debug, Clone)]
pub struct CatalogMetrics {
    transactions: Counter,
    operations: Family<VerbLabels, Counter>,
    writes_avoided: Counter,
    latency: Family<KindLabels, Histogram, fn() -> Histogram>,
    pending_keys: Gauge,
    consul_errors: Family<ClassLabels, Counter>,
    watch_errors: Family<KindLabels, Counter>,
    events: Counter,
    conflicts: Counter,
    too_large: Counter,
    too_large_instances: Gauge,
    held_back: Counter,
    txn_splits: Counter,
    write_backoffs: Counter,
    cas_conflicts: Counter,
    repairs: Counter,
    contested_repairs: Counter,
    pass_drift: Counter,
    namespaces_created: Counter,
    namespace_failures: Counter,
}

impl Default for CatalogMetrics {
    fn default() -> Self {
        Self {
            transactions: Counter::default(),
            operations: Family::default(),
            writes_avoided: Counter::default(),
            latency: Family::new_with_constructor(latency_histogram as fn() -> Histogram),
            pending_keys: Gauge::default(),
            consul_errors: Family::default(),
            watch_errors: Family::default(),
            events: Counter::default(),
            conflicts: Counter::default(),
            too_large: Counter::default(),
            too_large_instances: Gauge::default(),
            held_back: Counter::default(),
            txn_splits: Counter::default(),
            write_backoffs: Counter::default(),
            cas_conflicts: Counter::default(),
            repairs: Counter::default(),
            contested_repairs: Counter::default(),
            pass_drift: Counter::default(),
            namespaces_created: Counter::default(),
            namespace_failures: Counter::default(),
        }
    }
}

/// Creates the catalog metrics and registers them under `mirra_catalog_`.
pub fn register_metrics(registry: &mut Registry) -> CatalogMetrics {
    let m = CatalogMetrics::default();
    let reg = registry.sub_registry_with_prefix("mirra_catalog");
    reg.register(
        "transactions",
        "Consul /v1/txn requests committed (each one Raft apply)",
        m.transactions.clone(),
    );
    reg.register(
        "operations",
        "Catalog operations committed, by verb (register, deregister, deregister_check)",
        m.operations.clone(),
    );
    reg.register(
        "writes_avoided",
        "Desired instances planned that were already in step in Consul, so not written",
        m.writes_avoided.clone(),
    );
    reg.register(
        "event_to_consul_seconds",
        "Time from the first Kubernetes event that made a Service dirty to the commit of its writes",
        m.latency.clone(),
    );
    reg.register(
        "pending_keys",
        "Services waiting in the work queue (including ones waiting for a retry)",
        m.pending_keys.clone(),
    );
    reg.register(
        "consul_errors",
        "Consul request errors, by class",
        m.consul_errors.clone(),
    );
    reg.register(
        "watch_errors",
        "Kubernetes watch errors, by watched kind",
        m.watch_errors.clone(),
    );
    reg.register(
        "warning_events",
        "Warning Events emitted on Services for bad annotation values",
        m.events.clone(),
    );
    reg.register(
        "id_conflicts",
        "Desired instances not written because their ID belongs to an instance mirra does not own",
        m.conflicts.clone(),
    );
    reg.register(
        "registrations_too_large",
        "Registrations Consul refused with 413 even alone in a transaction (not retried until they change)",
        m.too_large.clone(),
    );
    reg.register(
        "instances_too_large",
        "Instances currently held back because their registration alone is too large for a transaction",
        m.too_large_instances.clone(),
    );
    reg.register(
        "registrations_held_back",
        "Planned registrations not sent because Consul refused them as too large and they have not changed",
        m.held_back.clone(),
    );
    reg.register(
        "txn_splits",
        "Transactions refused with 413 and sent again as two halves",
        m.txn_splits.clone(),
    );
    reg.register(
        "write_backoffs",
        "Rounds after which the Consul writer backed off because Consul was unavailable",
        m.write_backoffs.clone(),
    );
    reg.register(
        "repairs",
        "Services planned again as soon as a Consul answer showed someone else changed their instances or checks",
        m.repairs.clone(),
    );
    reg.register(
        "pass_drift_operations",
        "Operations a verification pass after the first found necessary: drift the event-driven path missed (someone else's change it did not see, or a lost update)",
        m.pass_drift.clone(),
    );
    reg.register(
        "contested_repairs",
        "Fights: a Service's instances changed in Consul again after mirra repaired them (its repairs are then spaced out, and a Warning Event is sent)",
        m.contested_repairs.clone(),
    );
    reg.register(
        "cas_conflicts",
        "Planned writes (a registration, a removal, the node's creation) Consul refused because the catalog changed since mirra planned them (failed cas precondition); read again and planned again",
        m.cas_conflicts.clone(),
    );
    reg.register(
        "namespaces_created",
        "Consul Enterprise namespaces mirra created for synced Services (with -enable-namespaces)",
        m.namespaces_created.clone(),
    );
    reg.register(
        "namespace_failures",
        "Attempts to find or create a Consul namespace that failed; the Services bound for it wait and are retried, the other namespaces keep syncing",
        m.namespace_failures.clone(),
    );
    m
}

impl CatalogMetrics {
    /// Operations a verification pass (not the first) wrote.
    pub(crate) fn pass_drift(&self, ops: usize) {
        self.pass_drift
            .inc_by(u64::try_from(ops).unwrap_or(u64::MAX));
    }

    /// The drift later verification passes found, in operations.
    pub fn pass_drift_total(&self) -> u64 {
        self.pass_drift.get()
    }

    /// One Service re-planned because of drift in Consul.
    pub(crate) fn repair(&self) {
        self.repairs.inc();
    }

    /// One fight with another writer started.
    pub(crate) fn contested_repair(&self) {
        self.contested_repairs.inc();
    }

    /// Services re-planned because of drift in Consul, so far.
    pub fn repairs_total(&self) -> u64 {
        self.repairs.get()
    }

    /// Fights with another writer, so far.
    pub fn contested_repairs_total(&self) -> u64 {
        self.contested_repairs.get()
    }

    /// Consul namespaces created, so far.
    pub fn namespaces_created_total(&self) -> u64 {
        self.namespaces_created.get()
    }

    /// Failed attempts to find or create a Consul namespace, so far.
    pub fn namespace_failures_total(&self) -> u64 {
        self.namespace_failures.get()
    }

    /// One Consul namespace created.
    pub(crate) fn namespace_created(&self) {
        self.namespaces_created.inc();
    }

    /// One failed attempt to find or create a Consul namespace.
    pub(crate) fn namespace_failure(&self) {
        self.namespace_failures.inc();
    }

    /// One committed transaction.
    pub(crate) fn transaction(&self) {
        self.transactions.inc();
    }

    /// Committed operations of one verb.
    pub(crate) fn operations(&self, verb: &'static str, n: u64) {
        self.operations
            .get_or_create(&VerbLabels { verb })
            .inc_by(n);
    }

    /// Instances found in step.
    pub(crate) fn avoided(&self, n: u64) {
        self.writes_avoided.inc_by(n);
    }

    /// Event-to-Consul latency of one Service.
    pub(crate) fn latency(&self, d: Duration) {
        self.latency
            .get_or_create(&KindLabels { kind: "service" })
            .observe(d.as_secs_f64());
    }

    /// Current queue length.
    pub(crate) fn pending(&self, n: usize) {
        self.pending_keys.set(i64::try_from(n).unwrap_or(i64::MAX));
    }

    /// One Consul error of `class` (see `mirra_consul::Error::class`).
    pub(crate) fn consul_error(&self, class: &'static str) {
        self.consul_errors
            .get_or_create(&ClassLabels { class })
            .inc();
    }

    /// One watch error on `kind`.
    pub(crate) fn watch_error(&self, kind: &'static str) {
        self.watch_errors.get_or_create(&KindLabels { kind }).inc();
    }

    /// One warning Event sent.
    pub(crate) fn event(&self) {
        self.events.inc();
    }

    /// ID conflicts found by a plan.
    pub(crate) fn conflicts(&self, n: u64) {
        self.conflicts.inc_by(n);
    }

    /// A registration refused as too large on its own.
    pub(crate) fn too_large(&self) {
        self.too_large.inc();
    }

    /// Instances held back as too large, now.
    pub(crate) fn too_large_instances(&self, n: usize) {
        self.too_large_instances
            .set(i64::try_from(n).unwrap_or(i64::MAX));
    }

    /// Planned registrations not sent because they are held back.
    pub(crate) fn held_back(&self, n: usize) {
        self.held_back.inc_by(u64::try_from(n).unwrap_or(u64::MAX));
    }

    /// A transaction split in two after a 413.
    pub(crate) fn txn_split(&self) {
        self.txn_splits.inc();
    }

    /// The writer started a backoff.
    pub(crate) fn write_backoff(&self) {
        self.write_backoffs.inc();
    }

    /// Planned writes refused by a failed `cas`/`delete-cas` precondition.
    pub(crate) fn cas_conflicts(&self, n: u64) {
        self.cas_conflicts.inc_by(n);
    }

    /// Planned writes refused by a failed `cas` precondition so far.
    pub fn cas_conflicts_total(&self) -> u64 {
        self.cas_conflicts.get()
    }

    /// Registrations refused as too large on their own so far.
    pub fn registrations_too_large_total(&self) -> u64 {
        self.too_large.get()
    }

    /// Instances held back as too large now.
    pub fn instances_too_large(&self) -> i64 {
        self.too_large_instances.get()
    }

    /// Planned registrations not sent so far because they were held back.
    pub fn registrations_held_back_total(&self) -> u64 {
        self.held_back.get()
    }

    /// Transactions split in two after a 413 so far.
    pub fn txn_splits_total(&self) -> u64 {
        self.txn_splits.get()
    }

    /// Backoffs of the writer so far.
    pub fn write_backoffs_total(&self) -> u64 {
        self.write_backoffs.get()
    }

    /// Transactions committed so far (for tests and the benchmark).
    pub fn transactions_total(&self) -> u64 {
        self.transactions.get()
    }

    /// Operations of `verb` committed so far (`register`, `deregister`,
    /// `deregister_check`).
    pub fn operations_total(&self, verb: &'static str) -> u64 {
        self.operations.get_or_create(&VerbLabels { verb }).get()
    }

    /// Instances found in step so far.
    pub fn writes_avoided_total(&self) -> u64 {
        self.writes_avoided.get()
    }

    /// Warning Events sent so far.
    pub fn warning_events_total(&self) -> u64 {
        self.events.get()
    }

    /// Current number of pending keys.
    pub fn pending_keys(&self) -> i64 {
        self.pending_keys.get()
    }
}
