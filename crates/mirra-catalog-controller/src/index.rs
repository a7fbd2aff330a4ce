//! The catalog controller's state, as one synchronous structure.
//!
//! [`CatalogIndex`] holds what the event loop knows: the watch caches, the
//! indexes that map an object to the Services it touches, which Service
//! claims which service ID ([`mirra_catalog::ClaimIndex`]), Consul's last
//! two whole-node answers, and an overlay of mirra's own writes that those
//! answers do not show yet. Watch events and Consul answers are folded in
//! by `on_*`; the writer's reports (a committed transaction, a re-read of
//! refused instances) by [`CatalogIndex::fold`]. Planning a round from it
//! is [`crate::round`].
//!
//! **Overlay of our own writes.** A node-services answer computed just
//! before one of our writes committed would make the next plan write the
//! same thing again. Each committed operation is recorded as an expected
//! state of its instance and of its checks; an answer that does not show it
//! yet keeps the expectation, an answer that shows it drops it, and so does
//! an answer read at or after the commit (then a difference is someone
//! else's later change, which must win). An expectation not confirmed
//! within [`OVERLAY_TTL`] is dropped so that Consul's truth wins. Instances
//! and checks are confirmed separately, each by its own watch.
//!
//! This module must NOT do I/O, read the clock (callers pass `now`), touch
//! the work queue or metrics, or decide what a Service becomes in Consul
//! (`mirra_catalog` does).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::Ingress;
use kube::runtime::watcher;
use mirra_catalog::mapping::{NodeLookup, uses_node_addresses};
use mirra_catalog::{
    CatalogOp, CompactCheck, CompactInstance, CompactView, NodeEndpointIndex, Registration,
    ServiceInput, ServiceKey, SliceInput, SyncSettings, Warning, desired_for_input,
    keys_for_ingress, keys_for_node_change,
};
use mirra_runtime::{Cache, Cached, Change, ObjectKey, map_event};
use tokio::time::Instant;

use crate::round::op_service_id;
use crate::wire::{WrittenIndexes, commit_index, observed_check, observed_instance};

/// How long an expectation about one of our own writes outlives Consul
/// answers that do not show it. A blocking answer computed before the write
/// is followed by a fresh one within one watch round (~100 ms); 30 s is
/// far beyond that yet short enough that a third party's change is seen
/// within one verification period.
pub const OVERLAY_TTL: Duration = Duration::from_secs(30);

/// A node-services answer, compacted for the planner.
#[derive(Debug, Default)]
pub struct ObservedSnapshot {
    /// Whether our node exists.
    pub node_exists: bool,
    /// Service ID -> the instance (checks apart).
    pub instances: BTreeMap<String, CompactInstance>,
    /// The answer's Raft index (`X-Consul-Index`).
    pub index: u64,
}

/// A health/node answer: service ID -> its checks (node checks dropped).
#[derive(Debug, Default)]
pub struct CheckSnapshot {
    /// Service ID -> its checks.
    pub checks: HashMap<String, Vec<CompactCheck>>,
    /// The answer's Raft index (`X-Consul-Index`).
    pub index: u64,
}

/// What the writer reports back, for the index to fold in.
#[derive(Debug)]
pub enum WriteEvent<'a> {
    /// A transaction committed.
    Committed {
        /// Its plan entries' operations, in order, each once.
        ops: Vec<&'a CatalogOp>,
        /// Whether it created our node.
        node_created: bool,
        /// Consul's results: the indexes it gave what was written.
        results: &'a [mirra_consul::TxnResult],
        /// When it committed.
        at: Instant,
    },
    /// Consul refused to create our node "only if absent": it exists.
    NodeExists,
    /// Instances a failed `cas` refused were read again.
    Reread {
        /// The instances read.
        ids: &'a BTreeSet<String>,
        /// The results of the read-only `get` transactions (absent entries
        /// are not in them), or `None` when the read failed: then the
        /// expectations about these instances are dropped, so that the next
        /// whole-node answer decides.
        results: Option<&'a [mirra_consul::TxnResult]>,
        /// When they were read.
        at: Instant,
    },
}

/// [`NodeLookup`] over the Node cache (no live reads).
struct NodeCache<'a>(&'a Cache<Node>);

impl NodeLookup for NodeCache<'_> {
    fn node(&self, name: &str) -> Option<&Node> {
        self.0.get(None, name)
    }
}

/// A Service as cached: only what the mapping reads (see
/// [`mirra_catalog::mapping::ServiceInput`]), so that 10,000 Services cost
/// what the planner compares rather than whole typed objects.
#[derive(Clone, Debug)]
struct CachedService(ServiceInput);

impl Cached for CachedService {
    fn cache_key(&self) -> Option<ObjectKey> {
        (!self.0.name.is_empty()).then(|| ObjectKey {
            namespace: Some(self.0.namespace.clone()),
            name: self.0.name.clone(),
        })
    }

    fn cache_version(&self) -> Option<&str> {
        self.0.resource_version.as_deref()
    }
}

/// An EndpointSlice as cached: only what the mapping reads (see
/// [`mirra_catalog::mapping::SliceInput`]).
#[derive(Clone, Debug)]
struct CachedSlice(SliceInput);

impl Cached for CachedSlice {
    fn cache_key(&self) -> Option<ObjectKey> {
        (!self.0.name.is_empty()).then(|| ObjectKey {
            namespace: self.0.namespace.clone(),
            name: self.0.name.clone(),
        })
    }

    fn cache_version(&self) -> Option<&str> {
        self.0.resource_version.as_deref()
    }
}

/// What we expect Consul to show for one instance after our write.
#[derive(Debug)]
struct Expectation {
    /// `None`: the instance is gone.
    state: Option<CompactInstance>,
    since: Instant,
    /// Raft index of the commit, when Consul's answer told it.
    index: Option<u64>,
}

/// What we expect `health/node` to show for one instance's checks after our
/// write (empty: no checks, e.g. the instance is gone).
#[derive(Debug)]
struct CheckExpectation {
    checks: Vec<CompactCheck>,
    since: Instant,
    /// Raft index of the commit, when Consul's answer told it.
    index: Option<u64>,
}

/// Whether an expectation is still needed after an answer at
/// `answer_index`: not when the answer shows it, and not when the answer
/// was read at or after our commit (then a difference is someone else's
/// later change, which must win), and not once [`OVERLAY_TTL`] passed.
fn keep_expectation(
    confirmed: bool,
    commit_index: Option<u64>,
    answer_index: u64,
    since: Instant,
    now: Instant,
) -> bool {
    !confirmed
        && commit_index.is_none_or(|i| answer_index < i)
        && now.duration_since(since) < OVERLAY_TTL
}

/// Expectations sorted by what an answer at one index says of them. The
/// IDs are borrowed from the overlay: at a cold start an answer judges
/// tens of thousands of expectations at once, and copies of their IDs
/// were several MB at the controller's memory peak. Which expectations
/// stay is decided again as the overlay is pruned ([`keep_expectation`]).
struct Judged<'a> {
    /// Confirmed, or still ahead of the answer: changes to these IDs are
    /// mirra's own.
    ours: BTreeSet<&'a str>,
    /// Read after mirra's commit and different from it: changed since by
    /// someone else, even if equal to the answer before mirra's write.
    contradicted: BTreeSet<&'a str>,
}

/// Sorts expectations `(id, confirmed by the answer, commit index, since)`
/// by what an answer at `answer_index`, read by `now`, says of them.
fn judge<'a>(
    answer_index: u64,
    now: Instant,
    expectations: impl Iterator<Item = (&'a str, bool, Option<u64>, Instant)>,
) -> Judged<'a> {
    let mut out = Judged {
        ours: BTreeSet::new(),
        contradicted: BTreeSet::new(),
    };
    for (id, confirmed, commit, since) in expectations {
        if confirmed || keep_expectation(confirmed, commit, answer_index, since, now) {
            out.ours.insert(id);
        } else if commit.is_some_and(|c| answer_index >= c) {
            out.contradicted.insert(id);
        }
    }
    out
}

/// Whether two check lists hold the same checks, in any order.
fn same_checks(a: &[CompactCheck], b: &[CompactCheck]) -> bool {
    a.len() == b.len() && a.iter().all(|c| b.iter().any(|x| x.same_content(c)))
}

/// Everything the catalog controller knows, folded from watch events,
/// Consul answers and the writer's reports. See the module docs.
pub struct CatalogIndex {
    pub(crate) sync: SyncSettings,
    services: Cache<CachedService>,
    slices: Cache<CachedSlice>,
    nodes: Cache<Node>,
    ingresses: Cache<Ingress>,
    /// Service -> its EndpointSlices, so that planning a key reads only its
    /// own slices.
    slices_by_key: BTreeMap<ServiceKey, BTreeSet<ObjectKey>>,
    node_index: NodeEndpointIndex,
    pub(crate) claims: mirra_catalog::ClaimIndex,

    /// Last node-services answer, compacted (checks apart).
    observed: BTreeMap<String, CompactInstance>,
    node_exists: bool,
    observed_seen: bool,
    overlay: BTreeMap<String, Expectation>,
    /// Service ID -> its checks, from the last health/node answer.
    checks: HashMap<String, Vec<CompactCheck>>,
    checks_seen: bool,
    check_overlay: HashMap<String, CheckExpectation>,
    /// Service IDs of the write in flight (see [`CatalogIndex::begin_write`]).
    writing: HashSet<String>,

    /// Service IDs a key touched in a round that failed, re-planned with it.
    pub(crate) pending_ids: BTreeMap<ServiceKey, BTreeSet<String>>,
    /// The warnings last reported per Service (an Event is sent only when
    /// they change).
    pub(crate) warned: BTreeMap<ServiceKey, Vec<Warning>>,
}

impl CatalogIndex {
    /// An empty index planning with `sync`.
    pub fn new(sync: SyncSettings) -> Self {
        Self {
            sync,
            services: Cache::new(),
            slices: Cache::new(),
            nodes: Cache::new(),
            ingresses: Cache::new(),
            slices_by_key: BTreeMap::new(),
            node_index: NodeEndpointIndex::new(),
            claims: mirra_catalog::ClaimIndex::new(),
            observed: BTreeMap::new(),
            node_exists: false,
            observed_seen: false,
            overlay: BTreeMap::new(),
            checks: HashMap::new(),
            checks_seen: false,
            check_overlay: HashMap::new(),
            writing: HashSet::new(),
            pending_ids: BTreeMap::new(),
            warned: BTreeMap::new(),
        }
    }

    /// The settings plans are made with.
    pub fn sync(&self) -> &SyncSettings {
        &self.sync
    }

    /// Whether every watch delivered its initial list and the first
    /// node-services and health/node answers arrived: before that nothing
    /// may be written.
    pub fn synced(&self) -> bool {
        self.services.initial_list_done()
            && self.slices.initial_list_done()
            && self.nodes.initial_list_done()
            && (!self.sync.enable_ingress || self.ingresses.initial_list_done())
            && self.observed_seen
            && self.checks_seen
    }

    /// Whether our node exists, as far as we know.
    pub fn node_exists(&self) -> bool {
        self.node_exists
    }

    /// The Service whose registration wins `id`.
    pub fn owner_of(&self, id: &str) -> Option<&ServiceKey> {
        self.claims.owner_of(id)
    }

    /// Every Service in the cache, sorted, each once.
    pub fn service_keys(&self) -> Vec<ServiceKey> {
        let mut keys: Vec<ServiceKey> = self
            .services
            .iter()
            .filter_map(|(_, s)| s.0.key())
            .collect();
        keys.sort();
        keys.dedup();
        keys
    }

    // ----- watch events ----------------------------------------------------

    /// Folds in a Service event; returns the keys to plan again.
    pub fn on_service(&mut self, ev: watcher::Event<Service>) -> Vec<ServiceKey> {
        self.services
            .apply(map_event(ev, |s| CachedService(s.into())))
            .into_iter()
            .filter_map(|Change { old, new, .. }| {
                new.as_ref().or(old.as_ref()).and_then(|s| s.0.key())
            })
            .collect()
    }

    /// Folds in an EndpointSlice event; returns the keys to plan again.
    pub fn on_slice(&mut self, ev: watcher::Event<EndpointSlice>) -> Vec<ServiceKey> {
        let mut out = Vec::new();
        for Change { key, old, new } in self.slices.apply(map_event(ev, |s| CachedSlice(s.into())))
        {
            let old_key = old.as_ref().and_then(|s| s.0.key());
            let new_key = new.as_ref().and_then(|s| s.0.key());
            if let Some(k) = &old_key
                && let Some(set) = self.slices_by_key.get_mut(k)
            {
                set.remove(&key);
                if set.is_empty() {
                    self.slices_by_key.remove(k);
                }
            }
            match &new {
                Some(slice) => {
                    self.node_index.apply_slice(&slice.0);
                    if let Some(k) = &new_key {
                        self.slices_by_key
                            .entry(k.clone())
                            .or_default()
                            .insert(key.clone());
                    }
                }
                None => self
                    .node_index
                    .delete_slice(key.namespace.as_deref().unwrap_or_default(), &key.name),
            }
            out.extend([old_key, new_key].into_iter().flatten());
        }
        out
    }

    /// Folds in a Node event; returns the keys to plan again.
    pub fn on_node(&mut self, ev: watcher::Event<Node>) -> Vec<ServiceKey> {
        let mut out = Vec::new();
        for Change { old, new, .. } in self.nodes.apply(ev) {
            for k in keys_for_node_change(old.as_ref(), new.as_ref(), &self.node_index) {
                // Only NodePort instances are registered at node addresses.
                let uses_node = self
                    .services
                    .get(Some(&k.namespace), &k.name)
                    .is_some_and(|s| uses_node_addresses(&s.0));
                if uses_node {
                    out.push(k);
                }
            }
        }
        out
    }

    /// Folds in an Ingress event; returns the keys to plan again.
    pub fn on_ingress(&mut self, ev: watcher::Event<Ingress>) -> Vec<ServiceKey> {
        let mut out = Vec::new();
        for Change { old, new, .. } in self.ingresses.apply(ev) {
            let mut keys = BTreeSet::new();
            for i in [old.as_ref(), new.as_ref()].into_iter().flatten() {
                keys.extend(keys_for_ingress(i));
            }
            out.extend(keys);
        }
        out
    }

    // ----- observed state ---------------------------------------------------

    /// Folds in a node-services answer read by `now`.
    ///
    /// Returns the Services whose instances someone else changed since the
    /// previous answer (see [`crate::repair`]); none for the first answer.
    pub fn on_observed(&mut self, snap: ObservedSnapshot, now: Instant) -> BTreeSet<ServiceKey> {
        let index = snap.index;
        self.node_exists = snap.node_exists;
        // Each expectation is confirmed by this answer, still ahead of it
        // (kept), or contradicted by a later change: only the last is
        // someone else's doing, so only those IDs may count as drift.
        let confirmed = |exp: &Expectation, have: Option<&CompactInstance>| match (&exp.state, have)
        {
            (None, None) => true,
            (Some(want), Some(have)) => want.same_content(have),
            _ => false,
        };
        let Judged { ours, contradicted } = judge(
            index,
            now,
            self.overlay.iter().map(|(id, exp)| {
                (
                    id.as_str(),
                    confirmed(exp, snap.instances.get(id)),
                    exp.index,
                    exp.since,
                )
            }),
        );
        let mut drift = if self.observed_seen {
            crate::repair::drifted(&self.observed, &snap.instances, &ours, |a, b| {
                a.same_content(b)
            })
        } else {
            BTreeSet::new()
        };
        drift.extend(contradicted.into_iter().map(str::to_owned));
        drift.retain(|id| !self.writing.contains(id));
        if !drift.is_empty() {
            tracing::debug!(index, ?drift, "instances changed in Consul by someone else");
        }
        self.observed = snap.instances;
        self.observed_seen = true;
        let observed = &self.observed;
        self.overlay.retain(|id, exp| {
            let confirmed = confirmed(exp, observed.get(id));
            keep_expectation(confirmed, exp.index, index, exp.since, now)
        });
        self.owners_of(drift)
    }

    /// The Services that want any of `ids` (an ID nobody wants is left to
    /// the verification pass, the only plan that reaps).
    fn owners_of(&self, ids: BTreeSet<String>) -> BTreeSet<ServiceKey> {
        ids.iter()
            .filter_map(|id| self.claims.owner_of(id))
            .cloned()
            .collect()
    }

    /// Folds in a health/node answer read by `now`; returns the Services
    /// whose checks someone else changed, as [`CatalogIndex::on_observed`].
    pub fn on_checks(&mut self, snap: CheckSnapshot, now: Instant) -> BTreeSet<ServiceKey> {
        let index = snap.index;
        // As for instances: only a contradicted expectation may be drift.
        let confirmed = |exp: &CheckExpectation, have: Option<&Vec<CompactCheck>>| {
            same_checks(&exp.checks, have.map(Vec::as_slice).unwrap_or_default())
        };
        let Judged { ours, contradicted } = judge(
            index,
            now,
            self.check_overlay.iter().map(|(id, exp)| {
                (
                    id.as_str(),
                    confirmed(exp, snap.checks.get(id)),
                    exp.index,
                    exp.since,
                )
            }),
        );
        let mut drift = if self.checks_seen {
            crate::repair::drifted(&self.checks, &snap.checks, &ours, |a, b| same_checks(a, b))
        } else {
            BTreeSet::new()
        };
        drift.extend(contradicted.into_iter().map(str::to_owned));
        drift.retain(|id| !self.writing.contains(id));
        self.checks = snap.checks;
        self.checks_seen = true;
        let checks = &self.checks;
        self.check_overlay.retain(|id, exp| {
            let confirmed = confirmed(exp, checks.get(id));
            keep_expectation(confirmed, exp.index, index, exp.since, now)
        });
        self.owners_of(drift)
    }

    /// The instance as the planner should see it: our unconfirmed writes
    /// over Consul's answer, with the remembered checks.
    pub fn observed_instance<'a>(&'a self, id: &'a str) -> Option<CompactView<'a>> {
        let instance = match self.overlay.get(id) {
            Some(exp) => exp.state.as_ref(),
            None => self.observed.get(id),
        }?;
        Some(CompactView {
            node: &self.sync.consul_node_name,
            id,
            instance,
            checks: self.checks_of(id),
        })
    }

    /// The checks of one instance as the planner should see them: our
    /// unconfirmed writes over Consul's answer. Every check on our node is
    /// watched, so an instance absent from the answer has none.
    pub fn checks_of(&self, id: &str) -> &[CompactCheck] {
        match self.check_overlay.get(id) {
            Some(exp) => &exp.checks,
            None => self.checks.get(id).map(Vec::as_slice).unwrap_or_default(),
        }
    }

    /// Every instance ID Consul showed or we wrote and expect.
    pub fn all_observed_ids(&self) -> BTreeSet<String> {
        self.observed
            .keys()
            .chain(self.overlay.keys())
            .cloned()
            .collect()
    }

    /// The cached Service of `key`.
    pub(crate) fn service(&self, key: &ServiceKey) -> Option<&ServiceInput> {
        self.services
            .get(Some(&key.namespace), &key.name)
            .map(|s| &s.0)
    }

    /// Desired registrations of one key from the caches, and its warnings.
    pub(crate) fn desired(
        &self,
        key: &ServiceKey,
    ) -> (Vec<Registration>, Option<(ServiceInput, Vec<Warning>)>) {
        let Some(svc) = self.service(key) else {
            return (Vec::new(), None);
        };
        let slices: Vec<&SliceInput> = self
            .slices_by_key
            .get(key)
            .into_iter()
            .flatten()
            .filter_map(|k| self.slices.get_key(k))
            .map(|s| &s.0)
            .collect();
        let ingresses: Vec<&Ingress> = if self.sync.enable_ingress {
            self.ingresses.in_namespace(&key.namespace).collect()
        } else {
            Vec::new()
        };
        let out = desired_for_input(
            svc,
            &slices,
            &NodeCache(&self.nodes),
            &ingresses,
            &self.sync,
        );
        let warnings = (!out.warnings.is_empty()).then(|| (svc.clone(), out.warnings));
        (out.registrations, warnings)
    }

    // ----- the writer's reports ------------------------------------------------

    /// A write of `planned` was handed to the writer: until it is answered
    /// ([`CatalogIndex::end_write`]), a Consul answer that shows these
    /// instances changed shows our own write under way, not someone else's
    /// change.
    pub fn begin_write(&mut self, planned: &[crate::round::Planned]) {
        self.writing
            .extend(planned.iter().map(|p| op_service_id(&p.op).to_owned()));
    }

    /// The write handed over last was answered (its commits were folded in
    /// before).
    pub fn end_write(&mut self) {
        self.writing.clear();
    }

    /// Folds in what the writer reports.
    pub fn fold(&mut self, ev: WriteEvent<'_>) {
        match ev {
            WriteEvent::Committed {
                ops,
                node_created,
                results,
                at,
            } => self.committed(&ops, node_created, results, at),
            WriteEvent::NodeExists => self.node_exists = true,
            WriteEvent::Reread { ids, results, at } => match results {
                Some(results) => self.reread(ids, results, at),
                None => {
                    for id in ids {
                        self.overlay.remove(id);
                        self.check_overlay.remove(id);
                    }
                }
            },
        }
    }

    /// Records committed operations as expectations, with the indexes
    /// Consul gave them: the preconditions of our next writes to them,
    /// before any read shows them.
    fn committed(
        &mut self,
        ops: &[&CatalogOp],
        node_created: bool,
        results: &[mirra_consul::TxnResult],
        now: Instant,
    ) {
        if node_created {
            self.node_exists = true;
        }
        let index = commit_index(results);
        let written = WrittenIndexes::of(results);
        for op in ops {
            match op {
                CatalogOp::Register(r) => {
                    let checks = mirra_catalog::compact::checks_after(r, self.checks_of(&r.id))
                        .into_iter()
                        .map(|c| match written.checks.get(c.check_id()) {
                            Some(&i) => c.with_modify_index(i),
                            None => c,
                        })
                        .collect();
                    let inst = CompactInstance::of_registration(r, &self.sync)
                        .with_modify_index(written.services.get(&r.id).copied().unwrap_or(0));
                    self.expect(&r.id, Some(inst), checks, now, index, index);
                }
                CatalogOp::Deregister { service_id, .. } => {
                    // Consul removes the instance's checks with it.
                    self.expect(service_id, None, Vec::new(), now, index, index);
                }
                CatalogOp::DeregisterCheck { check_id, .. } => {
                    let id = op_service_id(op).to_owned();
                    let mut checks = self.checks_of(&id).to_vec();
                    checks.retain(|c| c.check_id() != check_id);
                    self.check_overlay.insert(
                        id,
                        CheckExpectation {
                            checks,
                            since: now,
                            index,
                        },
                    );
                }
            }
        }
    }

    /// Puts what a re-read of refused instances showed into the overlay, so
    /// that their next plan names the current indexes.
    fn reread(
        &mut self,
        ids: &BTreeSet<String>,
        results: &[mirra_consul::TxnResult],
        now: Instant,
    ) {
        let node = self.sync.consul_node_name.clone();
        let mut services: HashMap<String, mirra_consul::Service> = HashMap::new();
        let mut checks: HashMap<String, Vec<CompactCheck>> = HashMap::new();
        for r in results {
            if let Some(s) = &r.service {
                let id = if s.id.is_empty() {
                    s.service.clone()
                } else {
                    s.id.clone()
                };
                services.insert(id, s.clone());
            }
            if let Some(c) = &r.check
                && !c.service_id.is_empty()
            {
                let c = observed_check(c.clone());
                checks
                    .entry(c.service_id.clone())
                    .or_default()
                    .push(CompactCheck::of_observed(&c));
            }
        }
        for id in ids {
            let state = services.remove(id).map(|s| {
                let index = s.modify_index;
                let (_, inst) = observed_instance(&node, s);
                CompactInstance::of_observed(&inst, &self.sync).with_modify_index(index)
            });
            // An answer at or past the instance's index shows at least
            // this state, and then decides again.
            let index = state
                .as_ref()
                .map(CompactInstance::modify_index)
                .filter(|&i| i != 0);
            let checks = checks.remove(id).unwrap_or_default();
            let check_index = checks
                .iter()
                .map(CompactCheck::modify_index)
                .max()
                .filter(|&i| i != 0);
            self.expect(id, state, checks, now, index, check_index);
        }
    }

    /// Records what Consul should show for instance `id` and its checks.
    fn expect(
        &mut self,
        id: &str,
        state: Option<CompactInstance>,
        checks: Vec<CompactCheck>,
        since: Instant,
        index: Option<u64>,
        check_index: Option<u64>,
    ) {
        self.check_overlay.insert(
            id.to_owned(),
            CheckExpectation {
                checks,
                since,
                index: check_index,
            },
        );
        self.overlay.insert(
            id.to_owned(),
            Expectation {
                state,
                since,
                index,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_expectations_contradicted_after_the_commit_are_someone_elses() {
        let t = Instant::now();
        let later = t + OVERLAY_TTL;
        let ids: Vec<String> = ["shown", "ahead", "changed", "unknown", "expired"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        let j = judge(
            10,
            t,
            [
                (ids[0].as_str(), true, Some(10), t),
                (ids[1].as_str(), false, Some(11), t),
                (ids[2].as_str(), false, Some(10), t),
                (ids[3].as_str(), false, None, t),
            ]
            .into_iter(),
        );
        let set = |v: &[&'static str]| v.iter().copied().collect::<BTreeSet<_>>();
        assert_eq!(j.ours, set(&["shown", "ahead", "unknown"]));
        assert_eq!(j.contradicted, set(&["changed"]));
        // Without a commit index nothing can be told once the TTL passed:
        // dropped, neither ours nor someone else's (the pass decides).
        let j = judge(10, later, [(ids[4].as_str(), false, None, t)].into_iter());
        assert!(j.ours.is_empty() && j.contradicted.is_empty());
        assert!(!keep_expectation(false, None, 10, t, later));
    }

    #[test]
    fn expectations_yield_to_answers_read_after_the_commit() {
        let t = Instant::now();
        // Not shown yet, answer older than the commit: keep.
        assert!(keep_expectation(false, Some(10), 9, t, t));
        // Not shown, answer read at or after the commit: someone else's
        // later change wins.
        assert!(!keep_expectation(false, Some(10), 10, t, t));
        // Shown: drop.
        assert!(!keep_expectation(true, Some(10), 9, t, t));
        // Commit index unknown: only the TTL ends it.
        assert!(keep_expectation(false, None, 99, t, t));
        assert!(!keep_expectation(false, None, 99, t, t + OVERLAY_TTL));
    }
}
