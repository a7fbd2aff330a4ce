//! The production planning path (`CatalogIndex` folding watch events and
//! Consul answers, `plan_round`, the verification pass) under property tests,
//! against a simulated Consul node: random worlds in which Services of two
//! namespaces want the same service IDs (claims and winners), random Consul
//! states with stale and foreign instances, random batching of keys, and
//! commits folded back with or without a fresh answer in between.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet, HashMap};

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::runtime::watcher::Event;
use mirra_catalog::{
    CatalogOp, CompactCheck, CompactInstance, NoNodes, ObservedInstance, Registration, ServiceKey,
    SyncSettings, desired_for_service,
};
use mirra_catalog_controller::index::{CatalogIndex, CheckSnapshot, ObservedSnapshot, WriteEvent};
use mirra_catalog_controller::round::Planned;
use proptest::prelude::*;
use serde_json::json;
use tokio::time::Instant;

const NAMESPACES: &[&str] = &["a", "b"];
const NAMES: &[&str] = &["web", "api"];
const ADDRS: &[&str] = &["10.0.0.1", "10.0.0.2", "10.0.0.3"];

fn sync() -> SyncSettings {
    SyncSettings {
        allow_k8s_namespaces: ["*".to_owned()].into(),
        ..SyncSettings::default()
    }
}

/// One Service and its single EndpointSlice: the addresses with their
/// readiness. The same name in both namespaces on the same address wants
/// the same service ID.
#[derive(Clone, Debug, PartialEq)]
struct Svc {
    ns: &'static str,
    name: &'static str,
    port: i32,
    endpoints: Vec<(&'static str, bool)>,
}

type World = BTreeMap<(&'static str, &'static str), Svc>;

fn service(s: &Svc) -> Service {
    serde_json::from_value(json!({
        "metadata": {"namespace": s.ns, "name": s.name, "uid": format!("{}-{}", s.ns, s.name)},
        "spec": {"type": "ClusterIP", "ports": [{"name": "http", "port": s.port}]}
    }))
    .unwrap()
}

fn slice(s: &Svc) -> EndpointSlice {
    let endpoints: Vec<_> = s
        .endpoints
        .iter()
        .map(|(a, ready)| json!({"addresses": [a], "conditions": {"ready": ready}}))
        .collect();
    serde_json::from_value(json!({
        "metadata": {"namespace": s.ns, "name": format!("{}-1", s.name),
                     "labels": {"kubernetes.io/service-name": s.name}},
        "addressType": "IPv4",
        "endpoints": endpoints,
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]
    }))
    .unwrap()
}

fn svc_strategy() -> impl Strategy<Value = Svc> {
    (
        proptest::sample::select(NAMESPACES),
        proptest::sample::select(NAMES),
        prop_oneof![Just(80), Just(81)],
        proptest::collection::btree_map(proptest::sample::select(ADDRS), any::<bool>(), 0..3),
    )
        .prop_map(|(ns, name, port, eps)| Svc {
            ns,
            name,
            port,
            endpoints: eps.into_iter().collect(),
        })
}

fn world_strategy() -> impl Strategy<Value = World> {
    proptest::collection::vec(svc_strategy(), 0..5)
        .prop_map(|v| v.into_iter().map(|s| ((s.ns, s.name), s)).collect())
}

/// The winning registration of every ID `world` wants, computed apart
/// from the index: the smallest Service wanting an ID wins it.
fn winners(world: &World) -> BTreeMap<String, Registration> {
    let mut by_key: BTreeMap<ServiceKey, Vec<Registration>> = BTreeMap::new();
    for s in world.values() {
        let (svc, sl) = (service(s), slice(s));
        let out = desired_for_service(&svc, &[&sl], &NoNodes, &[], &sync());
        by_key.insert(ServiceKey::new(s.ns, s.name), out.registrations);
    }
    let mut out = BTreeMap::new();
    for regs in by_key.into_values() {
        for r in regs {
            out.entry(r.id.clone()).or_insert(r);
        }
    }
    out
}

/// A Consul node: instances and checks with their Raft indexes.
#[derive(Default)]
struct Consul {
    instances: BTreeMap<String, CompactInstance>,
    checks: HashMap<String, Vec<CompactCheck>>,
    raft: u64,
}

impl Consul {
    fn instance_index(&self, id: &str) -> u64 {
        self.instances
            .get(id)
            .map_or(0, CompactInstance::modify_index)
    }

    fn check_index(&self, check_id: &str) -> u64 {
        self.checks
            .values()
            .flatten()
            .find(|c| c.check_id() == check_id)
            .map_or(0, CompactCheck::modify_index)
    }

    /// Applies one planned operation as Consul would, after checking its
    /// `cas` precondition; returns its transaction results.
    fn apply(&mut self, p: &Planned) -> Vec<mirra_consul::TxnResult> {
        self.raft += 1;
        let raft = self.raft;
        match &p.op {
            CatalogOp::Register(r) => {
                assert_eq!(p.index, self.instance_index(&r.id), "stale cas on {}", r.id);
                let mut results = vec![mirra_consul::TxnResult {
                    service: Some(mirra_consul::Service {
                        id: r.id.clone(),
                        service: r.name.clone(),
                        modify_index: raft,
                        ..Default::default()
                    }),
                    ..Default::default()
                }];
                self.instances.insert(
                    r.id.clone(),
                    CompactInstance::of_registration(r, &sync()).with_modify_index(raft),
                );
                if let Some(c) = CompactCheck::of_registration(r) {
                    assert_eq!(p.check_index, self.check_index(c.check_id()));
                    let checks = self.checks.entry(r.id.clone()).or_default();
                    checks.retain(|x| x.check_id() != c.check_id());
                    results.push(mirra_consul::TxnResult {
                        check: Some(mirra_consul::HealthCheck {
                            check_id: c.check_id().to_owned(),
                            modify_index: raft,
                            ..Default::default()
                        }),
                        ..Default::default()
                    });
                    checks.push(c.with_modify_index(raft));
                }
                results
            }
            CatalogOp::Deregister { service_id, .. } => {
                assert_eq!(p.index, self.instance_index(service_id));
                assert!(self.instances.remove(service_id).is_some());
                self.checks.remove(service_id);
                Vec::new()
            }
            CatalogOp::DeregisterCheck { check_id, .. } => {
                assert_eq!(p.check_index, self.check_index(check_id));
                for checks in self.checks.values_mut() {
                    checks.retain(|c| c.check_id() != check_id);
                }
                Vec::new()
            }
        }
    }

    fn answers(&self) -> (ObservedSnapshot, CheckSnapshot) {
        (
            ObservedSnapshot {
                node_exists: true,
                instances: self.instances.clone(),
                index: self.raft,
            },
            CheckSnapshot {
                checks: self.checks.clone(),
                index: self.raft,
            },
        )
    }
}

/// Applies `planned` to `consul` as one transaction; returns its results.
fn apply_all(consul: &mut Consul, planned: &[Planned]) -> Vec<mirra_consul::TxnResult> {
    planned.iter().flat_map(|p| consul.apply(p)).collect()
}

/// Folds the commit of `planned` (a transaction with these `results`, which
/// did not create the node) into the index, when there was anything to
/// commit.
fn fold_commit(index: &mut CatalogIndex, planned: &[Planned], results: &[mirra_consul::TxnResult]) {
    if !planned.is_empty() {
        index.fold(WriteEvent::Committed {
            ops: planned.iter().map(|p| &p.op).collect(),
            node_created: false,
            results,
            at: Instant::now(),
        });
    }
}

/// Folds Consul's current answers (instances, then checks) into the index;
/// returns the Services they report as changed by someone else.
fn answer(index: &mut CatalogIndex, consul: &Consul) -> BTreeSet<ServiceKey> {
    let (o, c) = consul.answers();
    let mut drift = index.on_observed(o, Instant::now());
    drift.extend(index.on_checks(c, Instant::now()));
    drift
}

/// Writes `planned` into `consul` as one transaction and folds the commit
/// into the index; with `answer`, Consul's next answers follow.
fn write(index: &mut CatalogIndex, consul: &mut Consul, planned: &[Planned], answer: bool) {
    let results = apply_all(consul, planned);
    fold_commit(index, planned, &results);
    if answer {
        self::answer(index, consul);
    }
}

/// Runs a verification pass, `chunk` Services at a time; returns how many
/// operations it planned.
fn verification_pass(
    index: &mut CatalogIndex,
    consul: &mut Consul,
    chunk: usize,
    answer: bool,
) -> usize {
    let keys = index.drop_gone_keys();
    let mut ops = 0;
    for c in keys.chunks(chunk.max(1)) {
        let round = index.plan_pass_chunk(c);
        ops += round.planned.len();
        write(index, consul, &round.planned, answer);
    }
    let orphans = index.plan_orphans();
    ops += orphans.planned.len();
    assert!(orphans.planned.iter().all(|p| p.key.is_none()));
    write(index, consul, &orphans.planned, answer);
    ops
}

fn foreign(id: &str) -> CompactInstance {
    let o = ObservedInstance {
        node: "k8s-sync".into(),
        id: id.into(),
        name: "someone-else".into(),
        ..Default::default()
    };
    CompactInstance::of_observed(&o, &sync()).with_modify_index(1)
}

/// Feeds `world` as the initial lists.
fn initial_lists(index: &mut CatalogIndex, world: &World) {
    index.on_service(Event::Init);
    index.on_slice(Event::Init);
    index.on_node(Event::Init);
    for s in world.values() {
        index.on_service(Event::InitApply(service(s)));
        index.on_slice(Event::InitApply(slice(s)));
    }
    index.on_service(Event::InitDone);
    index.on_slice(Event::InitDone);
    index.on_node(Event::InitDone);
}

/// Feeds the changes from `old` to `new` as watch events; returns the keys
/// they touch, as the queue would hand them out (each once).
fn changes(index: &mut CatalogIndex, old: &World, new: &World) -> Vec<ServiceKey> {
    let mut keys = BTreeSet::new();
    for (k, s) in new {
        if old.get(k) != Some(s) {
            keys.extend(index.on_service(Event::Apply(service(s))));
            keys.extend(index.on_slice(Event::Apply(slice(s))));
        }
    }
    for (k, s) in old {
        if !new.contains_key(k) {
            keys.extend(index.on_slice(Event::Delete(slice(s))));
            keys.extend(index.on_service(Event::Delete(service(s))));
        }
    }
    keys.into_iter().collect()
}

/// Every owned instance in Consul is a winner's registration, every winner
/// is there unless a foreign instance holds its ID, and foreign instances
/// are untouched.
fn assert_converged(consul: &Consul, world: &World, foreign_ids: &BTreeSet<String>) {
    let want = winners(world);
    for id in foreign_ids {
        assert!(
            consul
                .instances
                .get(id)
                .is_some_and(|i| i.same_content(&foreign(id))),
            "foreign instance {id} was touched"
        );
        assert_eq!(
            consul.instance_index(id),
            1,
            "foreign instance {id} was rewritten"
        );
    }
    for (id, inst) in &consul.instances {
        if foreign_ids.contains(id) {
            continue;
        }
        let r = want
            .get(id)
            .unwrap_or_else(|| panic!("{id} is wanted by nobody"));
        assert!(
            inst.same_content(&CompactInstance::of_registration(r, &sync())),
            "{id}"
        );
    }
    for id in want.keys() {
        assert!(consul.instances.contains_key(id), "{id} is missing");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Rounds of keys, however batched, reach what a verification pass would
    /// (a pass after them plans nothing); every write's precondition is
    /// the index Consul holds; the smallest claimant wins a shared ID;
    /// foreign instances are never touched.
    #[test]
    fn rounds_converge_like_a_pass_with_claims_and_winners(
        before in world_strategy(),
        after in world_strategy(),
        stale in world_strategy(),
        foreign_addrs in proptest::collection::btree_set(proptest::sample::select(ADDRS), 0..2),
        batch in 1usize..4,
        chunk in 1usize..3,
        answer in any::<bool>(),
    ) {
        let mut index = CatalogIndex::new(sync());
        let mut consul = Consul::default();
        // Instances a former world left behind: orphans to reap, or
        // adopted when the world still wants them.
        for r in winners(&stale).into_values() {
            consul.raft += 1;
            consul.instances.insert(
                r.id.clone(),
                CompactInstance::of_registration(&r, &sync()).with_modify_index(consul.raft),
            );
        }
        // Foreign instances holding IDs the worlds may want.
        let foreign_ids: BTreeSet<String> = foreign_addrs
            .iter()
            .map(|a| mirra_catalog::service_id("web", a))
            .collect();
        for id in &foreign_ids {
            consul.instances.insert(id.clone(), foreign(id));
        }
        initial_lists(&mut index, &before);
        let (o, c) = consul.answers();
        index.on_observed(o, Instant::now());
        prop_assert!(!index.synced());
        index.on_checks(c, Instant::now());
        prop_assert!(index.synced());

        verification_pass(&mut index, &mut consul, chunk, answer);
        assert_converged(&consul, &before, &foreign_ids);

        let keys = changes(&mut index, &before, &after);
        for b in keys.chunks(batch) {
            let round = index.plan_round(b);
            // A key round writes only for its Services and those that won
            // an ID one of them let go of; never an orphan.
            prop_assert!(round.planned.iter().all(|p| p.key.is_some()));
            for p in &round.planned {
                let id = mirra_catalog_controller::round::op_service_id(&p.op);
                prop_assert!(!foreign_ids.contains(id), "planned {:?}", p.op);
                prop_assert!(round.touched().contains(id));
            }
            write(&mut index, &mut consul, &round.planned, answer);
        }
        assert_converged(&consul, &after, &foreign_ids);
        prop_assert_eq!(verification_pass(&mut index, &mut consul, chunk, answer), 0);
    }
}

/// One Service `a/web` with one endpoint, listed, and an empty Consul read.
fn one_service_synced() -> (World, CatalogIndex, Consul) {
    let world: World = [(
        ("a", "web"),
        Svc {
            ns: "a",
            name: "web",
            port: 80,
            endpoints: vec![("10.0.0.1", true)],
        },
    )]
    .into();
    let mut index = CatalogIndex::new(sync());
    let consul = Consul::default();
    initial_lists(&mut index, &world);
    answer(&mut index, &consul);
    (world, index, consul)
}

/// A commit folded in is the view the next plan starts from, before any
/// answer shows it: planning again writes nothing, and a change names the
/// index the commit got.
#[test]
fn a_folded_commit_is_the_next_plans_precondition() {
    let (world, mut index, mut consul) = one_service_synced();
    assert_eq!(verification_pass(&mut index, &mut consul, 8, false), 1);
    let id = mirra_catalog::service_id("web", "10.0.0.1");
    assert_eq!(consul.instance_index(&id), 1);
    // No answer since the write: the overlay alone holds it.
    let key = ServiceKey::new("a", "web");
    assert!(
        index
            .plan_round(std::slice::from_ref(&key))
            .planned
            .is_empty()
    );
    let mut changed = world.clone();
    changed.get_mut(&("a", "web")).unwrap().port = 81;
    let keys = changes(&mut index, &world, &changed);
    assert_eq!(keys, vec![key]);
    let round = index.plan_round(&keys);
    assert_eq!(round.planned.len(), 1);
    assert_eq!(
        (round.planned[0].index, round.planned[0].check_index),
        (1, 1)
    );
}

/// A re-read after a failed `cas` replaces what the index expected; a
/// failed re-read drops the expectation, so the next answer decides.
#[test]
fn a_reread_replaces_the_expectation_and_a_failed_one_drops_it() {
    let (_, mut index, mut consul) = one_service_synced();
    verification_pass(&mut index, &mut consul, 8, false);
    let id = mirra_catalog::service_id("web", "10.0.0.1");
    let ids = BTreeSet::from([id.clone()]);
    // Someone else rewrote it at index 40: the re-read shows their state.
    let theirs: mirra_consul::TxnResult = serde_json::from_value(json!({"Service": {
        "ID": id, "Service": "web", "Tags": ["k8s"], "Address": "10.0.0.9", "Port": 1,
        "Meta": {"external-source": "kubernetes"}, "ModifyIndex": 40
    }}))
    .unwrap();
    index.fold(WriteEvent::Reread {
        ids: &ids,
        results: Some(std::slice::from_ref(&theirs)),
        at: Instant::now(),
    });
    assert_eq!(
        index
            .observed_instance(&id)
            .unwrap()
            .instance
            .modify_index(),
        40
    );
    assert!(index.checks_of(&id).is_empty());
    let key = ServiceKey::new("a", "web");
    let round = index.plan_round(std::slice::from_ref(&key));
    assert_eq!(round.planned.len(), 1);
    assert_eq!(
        (round.planned[0].index, round.planned[0].check_index),
        (40, 0)
    );
    // A failed re-read: the last answer (empty, read before our write)
    // is the view again.
    index.fold(WriteEvent::Reread {
        ids: &ids,
        results: None,
        at: Instant::now(),
    });
    assert!(index.observed_instance(&id).is_none());
}

/// A refused creation of our node means it exists; a commit that created
/// it says so too.
#[test]
fn the_node_is_known_to_exist_after_a_refusal_or_a_creation() {
    let mut index = CatalogIndex::new(sync());
    assert!(!index.node_exists());
    index.fold(WriteEvent::NodeExists);
    assert!(index.node_exists());
    let mut index = CatalogIndex::new(sync());
    index.fold(WriteEvent::Committed {
        ops: Vec::new(),
        node_created: true,
        results: &[],
        at: Instant::now(),
    });
    assert!(index.node_exists());
}

/// Writes `planned` as the writer task does while the loop goes on: the
/// write is handed over (`begin_write`), Consul applies it, an answer
/// showing it arrives before the commit is reported, then the commit is
/// folded and the write answered (`end_write`). Returns the Services the
/// answer reported as changed by someone else.
fn write_answered_mid_flight(
    index: &mut CatalogIndex,
    consul: &mut Consul,
    planned: &[Planned],
    guard: bool,
) -> BTreeSet<ServiceKey> {
    if guard {
        index.begin_write(planned);
    }
    let results = apply_all(consul, planned);
    let drift = answer(index, consul);
    fold_commit(index, planned, &results);
    if guard {
        index.end_write();
    }
    drift
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// A Consul answer that shows a write still in flight (the loop keeps
    /// folding answers while the writer works) is never taken for someone
    /// else's change, and the next plans write nothing more.
    #[test]
    fn an_answer_during_a_write_is_not_drift(
        before in world_strategy(),
        after in world_strategy(),
        batch in 1usize..4,
    ) {
        let mut index = CatalogIndex::new(sync());
        let mut consul = Consul::default();
        initial_lists(&mut index, &before);
        answer(&mut index, &consul);
        let keys = index.drop_gone_keys();
        let round = index.plan_pass_chunk(&keys);
        let drift = write_answered_mid_flight(&mut index, &mut consul, &round.planned, true);
        prop_assert!(drift.is_empty(), "drift {:?}", drift);
        let keys = changes(&mut index, &before, &after);
        for b in keys.chunks(batch) {
            let round = index.plan_round(b);
            let drift = write_answered_mid_flight(&mut index, &mut consul, &round.planned, true);
            prop_assert!(drift.is_empty(), "drift {:?}", drift);
        }
        assert_converged(&consul, &after, &BTreeSet::new());
        prop_assert_eq!(verification_pass(&mut index, &mut consul, 8, true), 0);
    }
}

/// Without the in-flight guard the same answer would be drift: the guard
/// is what keeps a write under way from looking like a fight.
#[test]
fn without_the_guard_an_answer_during_a_write_looks_like_drift() {
    let (world, mut index, mut consul) = one_service_synced();
    assert_eq!(verification_pass(&mut index, &mut consul, 8, true), 1);
    let mut changed = world.clone();
    changed.get_mut(&("a", "web")).unwrap().port = 81;
    let keys = changes(&mut index, &world, &changed);
    let round = index.plan_round(&keys);
    assert!(!round.planned.is_empty());
    let drift = write_answered_mid_flight(&mut index, &mut consul, &round.planned, false);
    assert_eq!(drift, BTreeSet::from([ServiceKey::new("a", "web")]));
}
