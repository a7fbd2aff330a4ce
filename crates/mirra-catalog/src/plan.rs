//! The catalog planner: desired registrations vs observed instances ->
//! the smallest list of catalog operations, plus the index that keeps the
//! work for one Service proportional to that Service.
//!
//! The controller (mirra-catalog-controller's `round` module) calls
//! [`plan_detailed`] with the registrations of the Services of a round and
//! the observed instances of the IDs they touch, or, in a verification
//! pass, of every Service and then of the orphans. The operations come out
//! as removals, then check removals, then registrations; the controller
//! reorders them for writing (a Service's new instances before the removal
//! of its old ones, `round::order_by_key`), so this order says nothing
//! about what Consul sees first. [`plan`], [`plan_for_key`] and
//! [`simulate_apply`] serve the property tests, which check the planner's
//! invariants on whole worlds.
//!
//! Invariants: unchanged instances produce no operation; an observed
//! instance without mirra's marks never appears in an operation (not even
//! when a desired instance wants its ID: that is reported as a conflict);
//! planning again after the operations were applied yields nothing.
//! This module must NOT perform the operations or decide when full
//! knowledge is reached; the controller only runs a whole-node plan (the one
//! that can reap orphans) after every watch has delivered its initial list.

use std::borrow::Borrow;
use std::collections::{BTreeMap, BTreeSet};

use crate::compact::ObservedView;
use crate::model::{Registration, ServiceKey};
use crate::observed::{ObservedInstance, echo, in_wanted_namespace};
use crate::settings::SyncSettings;

/// One write to the Consul catalog. The controller batches these into
/// `/v1/txn` requests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CatalogOp {
    /// Register (create or replace) the instance and its readiness check on
    /// mirra's node.
    Register(Registration),
    /// Remove a leftover readiness check from an instance that stays.
    DeregisterCheck {
        /// The node the check is on.
        node: String,
        /// The check to remove.
        check_id: String,
    },
    /// Remove an instance mirra owns; Consul removes its checks with it.
    Deregister {
        /// The node the instance is on.
        node: String,
        /// The instance to remove.
        service_id: String,
        /// The instance's service name: Consul refuses a transaction
        /// `Service` delete without it.
        service_name: String,
        /// The checks that go with it (for logs; Consul deletes them anyway).
        check_ids: Vec<String>,
    },
}

impl CatalogOp {
    /// The service ID the operation is about (for a check, the ID of the
    /// check's instance is not known here, so the check ID is returned).
    pub fn target(&self) -> &str {
        match self {
            Self::Register(r) => &r.id,
            Self::DeregisterCheck { check_id, .. } => check_id,
            Self::Deregister { service_id, .. } => service_id,
        }
    }
}

/// A desired instance whose ID is taken, on mirra's node, by an instance
/// without mirra's marks. mirra leaves it alone and reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// The contested service ID.
    pub service_id: String,
    /// The Service that wants it.
    pub key: ServiceKey,
}

/// The result of [`plan_detailed`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// Operations, grouped by kind: deregistrations, then check removals,
    /// then registrations, each group in service-ID order. This is not a
    /// write order: the catalog controller writes a plan Service by
    /// Service, and within a Service its registrations (new instances)
    /// before check removals and deregistrations, so that a rollout never
    /// shows Consul a Service without instances.
    pub ops: Vec<CatalogOp>,
    /// Desired instances that were not written because their ID belongs to
    /// someone else.
    pub conflicts: Vec<Conflict>,
}

/// The operations that bring `observed` to `desired`. See [`plan_detailed`].
pub fn plan<D, O>(
    desired: &BTreeMap<String, D>,
    observed: &BTreeMap<String, O>,
    settings: &SyncSettings,
) -> Vec<CatalogOp>
where
    D: Borrow<Registration>,
    O: ObservedView,
{
    plan_detailed(desired, observed, settings).ops
}

/// The operations that bring `observed` (instances on mirra's node, keyed by
/// service ID) to `desired` (keyed by service ID), and the conflicts found.
///
/// Every observed instance the plan touches passes
/// [`crate::observed::is_owned`]. Observed
/// instances that are owned but not desired are deregistered, so callers
/// must restrict `observed` to the IDs they have full knowledge of.
///
/// Generic so that the controller can plan from borrowed registrations and
/// its compact observed state ([`crate::compact`]) without copies.
pub fn plan_detailed<D, O>(
    desired: &BTreeMap<String, D>,
    observed: &BTreeMap<String, O>,
    settings: &SyncSettings,
) -> Plan
where
    D: Borrow<Registration>,
    O: ObservedView,
{
    let mut deregs = Vec::new();
    let mut check_removals = Vec::new();
    let mut registers = Vec::new();
    let mut conflicts = Vec::new();

    for (id, want) in desired {
        let want: &Registration = want.borrow();
        match observed.get(id) {
            None => registers.push(CatalogOp::Register(want.clone())),
            Some(have) if !have.owned(settings) => conflicts.push(Conflict {
                service_id: id.clone(),
                key: want.key.clone(),
            }),
            // In another namespace (the namespace flags changed): removed
            // first, and registered where it belongs once Consul shows it
            // gone, so that one service ID never stands for two instances
            // in one plan.
            Some(have) if !in_wanted_namespace(want, have.namespace()) => {
                deregs.push(CatalogOp::Deregister {
                    node: have.node().to_owned(),
                    service_id: id.clone(),
                    service_name: have.service_name().to_owned(),
                    check_ids: have.check_ids(),
                });
            }
            Some(have) => {
                let service_equal = have.service_equals(want);
                let check_equal = have.has_check_of(want);
                let stale = have.stale_checks_for(want);
                if service_equal && check_equal && stale.is_empty() {
                    continue;
                }
                for check_id in stale {
                    check_removals.push(CatalogOp::DeregisterCheck {
                        node: have.node().to_owned(),
                        check_id,
                    });
                }
                if !(service_equal && check_equal) {
                    registers.push(CatalogOp::Register(want.clone()));
                }
            }
        }
    }
    for (id, have) in observed {
        if desired.contains_key(id) || !have.owned(settings) {
            continue;
        }
        deregs.push(CatalogOp::Deregister {
            node: have.node().to_owned(),
            service_id: id.clone(),
            service_name: have.service_name().to_owned(),
            check_ids: have.check_ids(),
        });
    }

    let mut ops = deregs;
    ops.extend(check_removals);
    ops.extend(registers);
    Plan { ops, conflicts }
}

/// Applies operations to a model of mirra's node the way Consul would: the
/// property tests use it to check that a plan reaches a fixpoint.
pub fn simulate_apply(
    observed: &mut BTreeMap<String, ObservedInstance>,
    ops: &[CatalogOp],
    settings: &SyncSettings,
) {
    for op in ops {
        match op {
            CatalogOp::Register(r) => {
                let previous = observed.get(&r.id).and_then(|o| o.checks.clone());
                let inst = echo(r, previous.as_deref(), settings);
                observed.insert(r.id.clone(), inst);
            }
            CatalogOp::DeregisterCheck { check_id, .. } => {
                for inst in observed.values_mut() {
                    if let Some(checks) = inst.checks.as_mut() {
                        checks.retain(|c| c.check_id != *check_id);
                    }
                }
            }
            CatalogOp::Deregister { service_id, .. } => {
                observed.remove(service_id);
            }
        }
    }
}

/// Which Service produced which service IDs, with the registrations
/// themselves (`V` = [`Registration`]) or without them (`V` = `()`, see
/// [`ClaimIndex`]), so that an event on one Service diffs only that
/// Service's instances.
///
/// Two Services can want the same ID (same Consul name and address, e.g. two
/// namespaces without the namespace suffix sharing an external IP). The
/// smallest [`ServiceKey`] wins, whatever the order of events, and the other
/// claim waits until the winner lets go.
#[derive(Clone, Debug)]
pub struct KeyIndex<V = Registration> {
    by_key: BTreeMap<ServiceKey, BTreeMap<String, V>>,
    /// Service ID -> the keys that want it, sorted; the first wins. Almost
    /// always one key, so a sorted `Vec` (one small allocation) instead of
    /// a set (a whole B-tree node per ID, tens of MB at 50,000 instances).
    claims: BTreeMap<String, Vec<ServiceKey>>,
}

/// Only the claims: which Service wants which service ID. What the
/// controller keeps: registrations are cheap to compute again from its
/// caches when a Service is planned, and at 50,000 instances keeping them
/// all would cost about as much memory as the caches themselves.
pub type ClaimIndex = KeyIndex<()>;

impl<V> Default for KeyIndex<V> {
    fn default() -> Self {
        Self {
            by_key: BTreeMap::new(),
            claims: BTreeMap::new(),
        }
    }
}

impl<V> KeyIndex<V> {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// Replaces the entries of `key` and returns every service ID whose
    /// desired state may have changed (the key's old IDs and new IDs).
    fn set_entries(
        &mut self,
        key: &ServiceKey,
        entries: impl IntoIterator<Item = (String, V)>,
    ) -> BTreeSet<String> {
        let mut touched = self.remove(key);
        let mut mine = BTreeMap::new();
        for (id, v) in entries {
            touched.insert(id.clone());
            // Almost always one claimant: room for exactly one (a pushed
            // first element would get room for four).
            let claimants = self
                .claims
                .entry(id.clone())
                .or_insert_with(|| Vec::with_capacity(1));
            if let Err(at) = claimants.binary_search(key) {
                claimants.insert(at, key.clone());
            }
            mine.insert(id, v);
        }
        if !mine.is_empty() {
            self.by_key.insert(key.clone(), mine);
        }
        touched
    }

    /// Forgets `key` (its Service was deleted or is no longer synced) and
    /// returns the IDs it had.
    pub fn remove(&mut self, key: &ServiceKey) -> BTreeSet<String> {
        let Some(old) = self.by_key.remove(key) else {
            return BTreeSet::new();
        };
        for id in old.keys() {
            if let Some(claimants) = self.claims.get_mut(id) {
                claimants.retain(|k| k != key);
                if claimants.is_empty() {
                    self.claims.remove(id);
                }
            }
        }
        old.into_keys().collect()
    }

    /// The IDs `key` currently wants (won or not).
    pub fn ids_for_key(&self, key: &ServiceKey) -> BTreeSet<String> {
        self.by_key
            .get(key)
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// The Service whose registration wins for `id`.
    pub fn owner_of(&self, id: &str) -> Option<&ServiceKey> {
        self.claims.get(id).and_then(|s| s.first())
    }

    /// Keys known to the index.
    pub fn keys(&self) -> impl Iterator<Item = &ServiceKey> {
        self.by_key.keys()
    }

    /// Number of service IDs wanted by any Service.
    pub fn len(&self) -> usize {
        self.claims.len()
    }

    /// Whether no Service wants anything.
    pub fn is_empty(&self) -> bool {
        self.claims.is_empty()
    }
}

impl KeyIndex<Registration> {
    /// Replaces the registrations of `key` and returns every service ID
    /// whose desired state may have changed (the key's old IDs and new IDs).
    pub fn set(&mut self, key: &ServiceKey, registrations: Vec<Registration>) -> BTreeSet<String> {
        self.set_entries(key, registrations.into_iter().map(|r| (r.id.clone(), r)))
    }

    fn winner(&self, id: &str) -> Option<&Registration> {
        let key = self.owner_of(id)?;
        self.by_key.get(key)?.get(id)
    }

    /// The winning registrations for the given IDs (IDs nobody wants are
    /// simply absent, which makes the planner deregister them).
    pub fn desired_for_ids(&self, ids: &BTreeSet<String>) -> BTreeMap<String, Registration> {
        ids.iter()
            .filter_map(|id| self.winner(id).map(|r| (id.clone(), r.clone())))
            .collect()
    }

    /// Every winning registration (the verification pass).
    pub fn desired_all(&self) -> BTreeMap<String, Registration> {
        self.claims
            .keys()
            .filter_map(|id| self.winner(id).map(|r| (id.clone(), r.clone())))
            .collect()
    }
}

impl ClaimIndex {
    /// Replaces the IDs `key` wants and returns every service ID whose
    /// desired state may have changed (see [`KeyIndex::set`]).
    pub fn claim(
        &mut self,
        key: &ServiceKey,
        ids: impl IntoIterator<Item = String>,
    ) -> BTreeSet<String> {
        self.set_entries(key, ids.into_iter().map(|id| (id, ())))
    }

    /// Of `registrations` (what `key` wants now), the ones that win their
    /// ID, keyed by it: what the planner should compare for `key`.
    pub fn winning<'r>(
        &self,
        key: &ServiceKey,
        registrations: &'r [Registration],
    ) -> impl Iterator<Item = (&'r str, &'r Registration)> {
        registrations
            .iter()
            .filter(move |r| self.owner_of(&r.id) == Some(key))
            .map(|r| (r.id.as_str(), r))
    }
}

/// The observed instances with the given IDs.
pub fn observed_for_ids(
    observed: &BTreeMap<String, ObservedInstance>,
    ids: &BTreeSet<String>,
) -> BTreeMap<String, ObservedInstance> {
    ids.iter()
        .filter_map(|id| observed.get(id).map(|o| (id.clone(), o.clone())))
        .collect()
}

/// The per-event path in one call: records the Service's new registrations
/// in `index` and plans only the IDs this Service had or has.
pub fn plan_for_key(
    index: &mut KeyIndex,
    key: &ServiceKey,
    registrations: Vec<Registration>,
    observed: &BTreeMap<String, ObservedInstance>,
    settings: &SyncSettings,
) -> Plan {
    let ids = index.set(key, registrations);
    let desired = index.desired_for_ids(&ids);
    let scoped = observed_for_ids(observed, &ids);
    plan_detailed(&desired, &scoped, settings)
}
