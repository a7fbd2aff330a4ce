//! Planning one round from the index: which operations, for which Service,
//! from which Raft indexes.
//!
//! A round of keys ([`CatalogIndex::plan_round`]) records what each Service
//! claims, computes the winning registrations of every service ID the round
//! touches (including IDs won by a Service outside the round that one of
//! the round's Services let go of), and plans them against the observed
//! view (Consul's answers under the overlay of our own writes). A
//! verification pass plans the same way a chunk of keys at a time
//! ([`CatalogIndex::plan_pass_chunk`]) and then the orphans
//! ([`CatalogIndex::plan_orphans`]), the only plan that can reap.
//!
//! Every planned operation carries the `ModifyIndex` it was planned from,
//! so that the writer can send it as a `cas`/`delete-cas`; operations are
//! ordered Service by Service, new instances before the removal of old
//! ones ([`order_by_key`]).
//!
//! This module must NOT do I/O, read the clock, touch the queue or the
//! metrics (a [`Round`] carries the counts to report), or compute what a
//! Service becomes in Consul itself (`mirra_catalog` does).

use std::collections::{BTreeMap, BTreeSet};

use mirra_catalog::plan::plan_detailed;
use mirra_catalog::{
    CatalogOp, CompactCheck, CompactView, Conflict, ObservedView, Registration, ServiceInput,
    ServiceKey, SyncSettings, Warning,
};

use crate::index::CatalogIndex;

/// One planned operation, with the Service it is for (none for orphans)
/// and the Raft indexes it was planned from: every write is a `cas` or
/// `delete-cas` naming them, so that it lands only on the state it was
/// planned from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Planned {
    /// The operation.
    pub op: CatalogOp,
    /// The Service it is for; `None` for an orphan's removal.
    pub key: Option<ServiceKey>,
    /// `ModifyIndex` of the instance as planned (0: it does not exist).
    pub index: u64,
    /// `ModifyIndex` of the check the operation writes or removes (0: it
    /// does not exist).
    pub check_index: u64,
    /// The Consul Enterprise namespace the operation writes in: the
    /// registration's, or where the instance was read for a removal.
    /// `None` without namespaces (nothing about namespaces is sent).
    pub namespace: Option<String>,
}

/// What planning a round (or a part of a verification pass) came to.
#[derive(Debug, Default)]
pub struct Round {
    /// The operations to write, in write order.
    pub planned: Vec<Planned>,
    /// Service -> the service IDs it touched (what it claims now, what it
    /// claimed before, and what a failed round left pending): kept pending
    /// with it when its writes fail.
    pub ids_by_key: BTreeMap<ServiceKey, BTreeSet<String>>,
    /// Service IDs with a winning registration in this round.
    pub wanted: BTreeSet<String>,
    /// Warning Events to send: Services whose warnings changed since last
    /// reported.
    pub events: Vec<(ServiceInput, Vec<Warning>)>,
    /// Desired registrations that needed no write.
    pub avoided: u64,
    /// Desired instances not written because an instance mirra does not
    /// own holds their ID.
    pub conflicts: Vec<Conflict>,
}

impl Round {
    /// Every service ID the round touched.
    pub fn touched(&self) -> BTreeSet<String> {
        self.ids_by_key.values().flatten().cloned().collect()
    }

    fn absorb(&mut self, part: Round) {
        self.planned.extend(part.planned);
        self.avoided += part.avoided;
        self.conflicts.extend(part.conflicts);
    }
}

impl CatalogIndex {
    /// Plans a round of keys. Records the claims of each key (so the index
    /// changes: a key's old claims are let go) and takes the IDs a failed
    /// round left pending for them.
    pub fn plan_round(&mut self, keys: &[ServiceKey]) -> Round {
        let mut round = Round::default();
        let mut fresh: BTreeMap<ServiceKey, Vec<Registration>> = BTreeMap::new();
        for key in keys {
            let (regs, warnings) = self.desired(key);
            if let Some(ev) = self.note_warnings(key, warnings) {
                round.events.push(ev);
            }
            let mut ids = self.claims.claim(key, regs.iter().map(|r| r.id.clone()));
            if let Some(p) = self.pending_ids.remove(key) {
                ids.extend(p);
            }
            round.ids_by_key.insert(key.clone(), ids);
            fresh.insert(key.clone(), regs);
        }
        let all_ids = round.touched();
        // A touched ID can be won by a Service outside this round (one this
        // round's Service let go of): its registrations are computed here.
        let outside: BTreeSet<ServiceKey> = all_ids
            .iter()
            .filter_map(|id| self.claims.owner_of(id))
            .filter(|k| !fresh.contains_key(*k))
            .cloned()
            .collect();
        for k in outside {
            let (regs, _) = self.desired(&k);
            fresh.insert(k, regs);
        }
        let desired: BTreeMap<String, &Registration> = fresh
            .iter()
            .flat_map(|(k, regs)| self.claims.winning(k, regs))
            .filter(|(id, _)| all_ids.contains(*id))
            .map(|(id, r)| (id.to_owned(), r))
            .collect();
        let mut owner: BTreeMap<&str, &ServiceKey> = BTreeMap::new();
        for (k, ids) in &round.ids_by_key {
            for id in ids {
                owner.entry(id.as_str()).or_insert(k);
            }
        }
        let part = self.plan_ids(&desired, &all_ids, |op| {
            owner.get(op_service_id(op)).map(|k| (*k).clone())
        });
        round.wanted = desired.keys().cloned().collect();
        round.absorb(part);
        round
    }

    /// Plans one chunk of a verification pass, `keys` in ascending order and
    /// after every smaller key: then the owner of each of their IDs is
    /// final (the smallest claimant wins) and every claimed ID is planned
    /// once, with its winner's registration.
    pub fn plan_pass_chunk(&mut self, keys: &[ServiceKey]) -> Round {
        let mut round = Round::default();
        let mut fresh = Vec::with_capacity(keys.len());
        for key in keys {
            let (regs, warnings) = self.desired(key);
            if let Some(ev) = self.note_warnings(key, warnings) {
                round.events.push(ev);
            }
            self.claims.claim(key, regs.iter().map(|r| r.id.clone()));
            fresh.push((key, regs));
        }
        let desired: BTreeMap<String, &Registration> = fresh
            .iter()
            .flat_map(|(k, regs)| self.claims.winning(k, regs))
            .map(|(id, r)| (id.to_owned(), r))
            .collect();
        let ids: BTreeSet<String> = desired.keys().cloned().collect();
        let claims = &self.claims;
        let part = self.plan_ids(&desired, &ids, |op| {
            claims.owner_of(op_service_id(op)).cloned()
        });
        round.wanted = ids;
        round.absorb(part);
        round
    }

    /// Plans the removal of owned instances no Service claims: the only
    /// plan that reaps, run after every Service of a pass was planned.
    pub fn plan_orphans(&self) -> Round {
        let orphans: BTreeSet<String> = self
            .all_observed_ids()
            .into_iter()
            .filter(|id| self.claims.owner_of(id).is_none())
            .collect();
        self.plan_ids(&BTreeMap::new(), &orphans, |_| None)
    }

    /// Forgets the claims of Services no longer in the cache (the start of
    /// a verification pass), and returns the Services that are.
    pub fn drop_gone_keys(&mut self) -> Vec<ServiceKey> {
        let keys = self.service_keys();
        let present: BTreeSet<&ServiceKey> = keys.iter().collect();
        let gone: Vec<ServiceKey> = self
            .claims
            .keys()
            .filter(|k| !present.contains(k))
            .cloned()
            .collect();
        for k in gone {
            self.claims.remove(&k);
        }
        keys
    }

    /// Keeps the IDs `key` touched for its next round (its writes failed).
    pub fn keep_pending(&mut self, key: &ServiceKey, ids: BTreeSet<String>) {
        self.pending_ids.entry(key.clone()).or_default().extend(ids);
    }

    /// Forgets every pending ID: a verification pass wrote everything.
    pub fn clear_pending(&mut self) {
        self.pending_ids.clear();
    }

    /// Records warnings for `key`; returns the Event to send when they
    /// differ from the last ones reported.
    fn note_warnings(
        &mut self,
        key: &ServiceKey,
        w: Option<(ServiceInput, Vec<Warning>)>,
    ) -> Option<(ServiceInput, Vec<Warning>)> {
        match w {
            None => {
                self.warned.remove(key);
                None
            }
            Some((svc, warnings)) => {
                if self.warned.get(key) == Some(&warnings) {
                    return None;
                }
                self.warned.insert(key.clone(), warnings.clone());
                Some((svc, warnings))
            }
        }
    }

    /// Plans the given IDs (`desired` holds the winning registrations among
    /// them) against the observed view.
    fn plan_ids(
        &self,
        desired: &BTreeMap<String, &Registration>,
        ids: &BTreeSet<String>,
        key_of: impl Fn(&CatalogOp) -> Option<ServiceKey>,
    ) -> Round {
        let observed: BTreeMap<String, CompactView<'_>> = ids
            .iter()
            .filter_map(|id| self.observed_instance(id).map(|o| (id.clone(), o)))
            .collect();
        let plan = plan_detailed(desired, &observed, &self.sync);
        let registers = plan
            .ops
            .iter()
            .filter(|o| matches!(o, CatalogOp::Register(_)))
            .count();
        let avoided = desired
            .len()
            .saturating_sub(registers + plan.conflicts.len());
        let mut planned: Vec<Planned> = plan
            .ops
            .into_iter()
            .map(|op| {
                let key = key_of(&op);
                let (index, check_index) = planned_indexes(&op, &observed);
                let namespace = planned_namespace(&op, &observed, &self.sync);
                Planned {
                    op,
                    key,
                    index,
                    check_index,
                    namespace,
                }
            })
            .collect();
        order_by_key(&mut planned);
        Round {
            planned,
            avoided: u64::try_from(avoided).unwrap_or(0),
            conflicts: plan.conflicts,
            ..Round::default()
        }
    }
}

/// Orders a plan for writing: the operations of one Service together, so
/// that its transactions are the first it can be in and it is done as soon
/// as they commit, and within a Service the new instances before the
/// removal of the old ones, so that a rollout never shows Consul a Service
/// without instances. Orphans (no Service) go last. Stable, so the
/// planner's order holds within each group.
pub fn order_by_key(planned: &mut [Planned]) {
    fn rank(op: &CatalogOp) -> u8 {
        match op {
            CatalogOp::Register(_) => 0,
            CatalogOp::DeregisterCheck { .. } => 1,
            CatalogOp::Deregister { .. } => 2,
        }
    }
    planned.sort_by(|a, b| match (&a.key, &b.key) {
        (Some(x), Some(y)) => x.cmp(y).then(rank(&a.op).cmp(&rank(&b.op))),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => rank(&a.op).cmp(&rank(&b.op)),
    });
}

/// The service ID an operation is about (for a check removal, the ID part
/// of `<namespace>/<serviceID>`).
pub fn op_service_id(op: &CatalogOp) -> &str {
    match op {
        CatalogOp::Register(r) => &r.id,
        CatalogOp::Deregister { service_id, .. } => service_id,
        CatalogOp::DeregisterCheck { check_id, .. } => check_id
            .split_once('/')
            .map_or(check_id.as_str(), |(_, id)| id),
    }
}

/// The indexes an operation is planned from: the instance's and the
/// written or removed check's `ModifyIndex` in the view the plan saw (0
/// where the view has none, i.e. "must not exist yet").
/// The namespace an operation writes in (see [`Planned::namespace`]).
fn planned_namespace(
    op: &CatalogOp,
    observed: &BTreeMap<String, CompactView<'_>>,
    sync: &SyncSettings,
) -> Option<String> {
    if !sync.consul_namespaces.enabled() {
        return None;
    }
    match op {
        CatalogOp::Register(r) => r.namespace.clone(),
        // Where Consul showed the instance (the planner removes only what
        // it read); Consul's `default` when it named none.
        CatalogOp::Deregister { .. } | CatalogOp::DeregisterCheck { .. } => Some(
            observed
                .get(op_service_id(op))
                .and_then(|v| v.namespace())
                .unwrap_or(mirra_catalog::DEFAULT_CONSUL_NAMESPACE)
                .to_owned(),
        ),
    }
}

fn planned_indexes(op: &CatalogOp, observed: &BTreeMap<String, CompactView<'_>>) -> (u64, u64) {
    let check_in = |view: Option<&CompactView<'_>>, check_id: &str| {
        view.and_then(|v| v.checks.iter().find(|c| c.check_id() == check_id))
            .map_or(0, CompactCheck::modify_index)
    };
    match op {
        CatalogOp::Register(r) => {
            let view = observed.get(&r.id);
            let index = view.map_or(0, |v| v.instance.modify_index());
            let check = r.check.as_ref().map_or(0, |c| check_in(view, &c.check_id));
            (index, check)
        }
        CatalogOp::Deregister { service_id, .. } => (
            observed
                .get(service_id)
                .map_or(0, |v| v.instance.modify_index()),
            0,
        ),
        CatalogOp::DeregisterCheck { check_id, .. } => {
            // The check's instance is the one whose view lists it; its ID
            // is usually the part after the namespace.
            let index = check_in(observed.get(op_service_id(op)), check_id);
            let index = if index != 0 {
                index
            } else {
                observed
                    .values()
                    .map(|v| check_in(Some(v), check_id))
                    .find(|&i| i != 0)
                    .unwrap_or(0)
            };
            (0, index)
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::wire::tests::multi_port_registration;
    use mirra_catalog::CompactInstance;

    #[test]
    fn a_services_new_instances_come_before_the_removal_of_its_old_ones() {
        let key = |n: &str| Some(ServiceKey::new("ns", n));
        let reg = |id: &str| {
            CatalogOp::Register(Registration {
                key: ServiceKey::new("ns", "x"),
                id: id.into(),
                name: "x".into(),
                tags: Vec::new(),
                address: String::new(),
                port: 0,
                ports: Vec::new(),
                meta: BTreeMap::new(),
                weights: mirra_catalog::Weights::default(),
                check: None,
                namespace: None,
            })
        };
        let dereg = |id: &str| CatalogOp::Deregister {
            node: "n".into(),
            service_id: id.into(),
            service_name: "x".into(),
            check_ids: Vec::new(),
        };
        let check = |id: &str| CatalogOp::DeregisterCheck {
            node: "n".into(),
            check_id: id.into(),
        };
        // As the planner emits them: every removal first.
        let mut planned = vec![
            Planned {
                op: dereg("b-old"),
                key: key("b"),
                index: 0,
                check_index: 0,
                namespace: None,
            },
            Planned {
                op: dereg("orphan"),
                key: None,
                index: 0,
                check_index: 0,
                namespace: None,
            },
            Planned {
                op: dereg("a-old"),
                key: key("a"),
                index: 0,
                check_index: 0,
                namespace: None,
            },
            Planned {
                op: check("ns/a-keep"),
                key: key("a"),
                index: 0,
                check_index: 0,
                namespace: None,
            },
            Planned {
                op: reg("b-new"),
                key: key("b"),
                index: 0,
                check_index: 0,
                namespace: None,
            },
            Planned {
                op: reg("a-new"),
                key: key("a"),
                index: 0,
                check_index: 0,
                namespace: None,
            },
        ];
        order_by_key(&mut planned);
        let order: Vec<&str> = planned.iter().map(|p| p.op.target()).collect();
        assert_eq!(
            order,
            vec!["a-new", "ns/a-keep", "a-old", "b-new", "b-old", "orphan"]
        );
    }

    #[test]
    fn plans_take_their_indexes_from_the_view() {
        let s = mirra_catalog::SyncSettings::default();
        let mut r = multi_port_registration();
        r.check = Some(mirra_catalog::ReadinessCheck {
            check_id: "ns/web-1".into(),
            service_id: "web-1".into(),
            status: mirra_catalog::CheckStatus::Passing,
        });
        let inst = CompactInstance::of_registration(&r, &s).with_modify_index(30);
        let checks = vec![
            CompactCheck::of_registration(&r)
                .unwrap()
                .with_modify_index(31),
        ];
        let view = CompactView {
            node: "n",
            id: "web-1",
            instance: &inst,
            checks: &checks,
        };
        let observed = BTreeMap::from([("web-1".to_owned(), view)]);
        let reg = CatalogOp::Register(r.clone());
        assert_eq!(planned_indexes(&reg, &observed), (30, 31));
        assert_eq!(planned_indexes(&reg, &BTreeMap::new()), (0, 0));
        let dereg = CatalogOp::Deregister {
            node: "n".into(),
            service_id: "web-1".into(),
            service_name: "web".into(),
            check_ids: Vec::new(),
        };
        assert_eq!(planned_indexes(&dereg, &observed), (30, 0));
        let check = CatalogOp::DeregisterCheck {
            node: "n".into(),
            check_id: "ns/web-1".into(),
        };
        assert_eq!(planned_indexes(&check, &observed), (0, 31));
        // A check whose ID does not name its instance is found by its ID.
        let other = vec![CompactCheck::of_observed(&mirra_catalog::ObservedCheck {
            check_id: "legacy-check".into(),
            service_id: "web-1".into(),
            modify_index: 44,
            ..Default::default()
        })];
        let view = CompactView {
            node: "n",
            id: "web-1",
            instance: &inst,
            checks: &other,
        };
        let observed = BTreeMap::from([("web-1".to_owned(), view)]);
        let check = CatalogOp::DeregisterCheck {
            node: "n".into(),
            check_id: "legacy-check".into(),
        };
        assert_eq!(planned_indexes(&check, &observed), (0, 44));
    }

    #[test]
    fn op_service_id_of_check_removal() {
        let op = CatalogOp::DeregisterCheck {
            node: "n".into(),
            check_id: "ns/web-abc".into(),
        };
        assert_eq!(op_service_id(&op), "web-abc");
    }
}
