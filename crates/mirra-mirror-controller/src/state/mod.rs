//! The controller's in-memory view of the cluster: every watch cache, the
//! compiled SyncConfigs, the latest outcome of every namespace, and the
//! mapping from a cache change to the namespaces (keys) it touches.
//!
//! What this module must NOT do: I/O, or block. It is used under one
//! `std::sync::Mutex`, held only for CPU work.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{ApiResource, DynamicObject, PartialObjectMeta};
use kube::runtime::watcher::Event;
use mirra_mirror::{
    CompiledConfig, ConfigRef, Footprint, ItemOutcome, ItemRef, LimitExceeded, Limits,
    NamespacePlan, NamespaceView, ObservedLookup, ObservedObject, Op, OutcomeState,
    SyncConfigStatus, namespaces_for_config_change, plan_namespace_full,
};
use mirra_runtime::{Cache, TaskGuard};
use serde_json::Value;

use crate::config_object::ConfigObject;
use crate::settings::Settings;
use mark_index::MarkIndex;

mod access;
mod availability;
mod copy;
mod events;
mod in_flight;
mod narrow;
mod planning;
mod sources;

pub use access::{Access, AccessKey};
pub use copy::{CachedCopy, cached_event};
use copy::{for_namespace, observed_from_meta};
pub use sources::{SourceEntry, SourceId};

/// A kind as SyncConfigs name it: `(apiVersion, kind)`.
pub type KindId = (String, String);

/// How a kind named in a SyncConfig resolved through discovery.
#[derive(Debug, Clone)]
pub enum Resolution {
    /// Discovery has not answered yet.
    Pending,
    /// The server serves it (namespaced).
    Served(ApiResource),
    /// The server does not serve it, or it cannot hold copies; the reason
    /// becomes the items' failure.
    Failed(String),
}

/// Why a served kind cannot be read: its list or watch was refused (403,
/// as RBAC answers for a kind outside mirra's ClusterRole, or 404 when the
/// resource went away after discovery). Its cache is then unknown: the
/// items of that kind fail with `reason`, nothing of that kind is written
/// or pruned, and readiness does not wait for it. The watch keeps retrying
/// with backoff, and the first successful answer clears this.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unavailable {
    /// The items' failure message: names the kind and the missing verb.
    pub reason: String,
    /// Refused on watch (the list was allowed). The watcher then retries
    /// the watch from its list, and a granted watch brings no event to
    /// notice it by; the verification pass restarts such a watcher in
    /// place.
    pub on_watch: bool,
}

/// One kind in use: its resolution and the cache of mirra's copies of it.
pub struct KindEntry {
    /// Discovery result.
    pub resolution: Resolution,
    /// Set while the copies watch is refused.
    pub unavailable: Option<Unavailable>,
    /// mirra's copies (label-selected), as the planner reads them. Changed
    /// only through [`mark_index::apply_indexed`], which keeps `marked` in
    /// step.
    pub copies: Cache<CachedCopy>,
    /// `copies` by the namespace their
    /// [`mirra_mirror::FOR_NAMESPACE_ANNOTATION`] names: how a plan finds
    /// the cluster-scoped copies of its namespace without a scan.
    pub marked: MarkIndex,
    /// The watch feeding `copies`; aborted when the entry is dropped.
    #[allow(dead_code)] // held for its Drop
    pub task: Option<TaskGuard>,
    /// Found by the start-up sweep rather than named by a SyncConfig: kept
    /// until its cache holds its initial list and no copy is left.
    pub swept: bool,
    /// The kind is cluster-scoped (discovery says so): its copies have no
    /// namespace and belong to the one their
    /// [`mirra_mirror::FOR_NAMESPACE_ANNOTATION`] names.
    pub cluster: bool,
}

/// A deleteItem watch: a kind, and the fixed name it selects by field
/// selector (`None` for names templated with `${PROJECT_NAME}`, which vary
/// per namespace and are watched kind-wide, metadata only).
pub type DeleteWatchId = (KindId, Option<String>);

/// One deleteItem watch and its metadata-only cache.
pub struct DeleteEntry {
    /// The resolved resource (`None` while the kind is not served).
    pub resource: Option<ApiResource>,
    /// Set while this watch is refused.
    pub unavailable: Option<Unavailable>,
    /// The objects it names.
    pub objects: Cache<PartialObjectMeta<DynamicObject>>,
    /// The watch feeding `objects`; aborted when the entry is dropped.
    #[allow(dead_code)] // held for its Drop
    pub task: Option<TaskGuard>,
}

/// The state shared by the watches, the workers and the status writer.
#[derive(Default)]
pub struct State {
    /// All namespaces.
    namespaces: Cache<Namespace>,
    /// SyncConfigs, one cache per watched namespace (or one, `*`, for all):
    /// a relist of one watch must not remove the objects of another.
    configs: BTreeMap<String, Cache<ConfigObject>>,
    /// Compiled form of every honoured SyncConfig.
    compiled: BTreeMap<ConfigRef, CompiledConfig>,
    /// Kinds in use.
    kinds: BTreeMap<KindId, KindEntry>,
    /// deleteItem watches.
    deletes: BTreeMap<DeleteWatchId, DeleteEntry>,
    /// copyItem source watches.
    sources: BTreeMap<SourceId, SourceEntry>,
    /// What tenant ServiceAccounts may read, as their access reviews said.
    access: BTreeMap<AccessKey, Access>,
    /// Latest outcomes per target namespace.
    outcomes: BTreeMap<String, Vec<ItemOutcome>>,
    /// The names those outcomes share (kept for every namespace between
    /// plans, each SyncConfig, kind and copy name is held once).
    names: mirra_mirror::NameInterner,
    /// SyncConfigs whose status must be recomputed, with the time they
    /// became dirty.
    dirty_status: BTreeMap<ConfigRef, Instant>,
    /// The status mirra last wrote, newer than the cache until the watch
    /// brings it back.
    written_status: BTreeMap<ConfigRef, SyncConfigStatus>,
    /// The resourceVersion mirra's last status write was planned from and
    /// the one its answer carried, until the watch brings a newer version.
    status_versions: BTreeMap<ConfigRef, (String, String)>,
    /// When each pending key was first made dirty (event-to-write latency).
    first_event: BTreeMap<String, Instant>,
    /// Namespaces the verification pass queued and no event has queued
    /// since. Their outcomes are known, so while queued they do not hold a
    /// SyncConfig's status back as pending: a pass over a namespace whose
    /// copies are in step must not turn `Ready` to `SynchronizationPending`
    /// and back (two status writes for nothing).
    verifying: BTreeSet<String>,
    /// mirra's own applies whose answer came but whose echo the copy watch
    /// has not brought yet. The echo holds exactly what the plan asked
    /// for, so re-planning its namespace for it would be pure CPU: it is
    /// not queued. Any other version (someone else's edit) is queued as
    /// usual. Until the echo, a plan of that namespace (a verification pass
    /// in between) treats the copy as written rather than applying the same
    /// content again. Every event of the object drops its entry.
    own_writes: BTreeMap<CopyId, OwnWrite>,
    /// Copies with an apply of this process unanswered, and their events
    /// that arrived meanwhile (see `in_flight`).
    in_flight: HashMap<CopyId, in_flight::InFlight>,
    /// Plans made of each namespace so far (see [`OwnWrite::home_plans`]).
    plans_made: HashMap<String, u64>,
    /// uids of the objects an apply of this process created (answered 201)
    /// whose watch event has not arrived yet. A later apply of one that
    /// answers 200 (a retry after a lost answer, a pass racing the echo)
    /// is not an adoption: mirra made the object. The object's first event
    /// drops its entry, so this holds only creations in flight.
    created_here: std::collections::HashSet<String>,
    /// What the server answered to mirra's latest apply of each copy: the
    /// hash of the body sent and of the resourceVersion answered, keyed by
    /// a hash of the copy's identity (24 bytes a copy). While the cache
    /// holds that very version and the plan would send that very body
    /// again, the copy is in step, whatever the server rewrote (canonical
    /// quantities, defaults filled into list elements): the server that
    /// normalised the apply is the reference, and no read is needed. Any
    /// other change of the object brings a new version, and the copy is
    /// compared field by field again (at most one apply, which the server
    /// answers without a change, re-arms it). A restart forgets them: at
    /// most one such apply per normalised copy.
    answers: HashMap<u64, (u64, u64)>,
    /// Every honoured SyncConfig, in `compiled` order: the planner's input,
    /// kept ready so that planning a namespace clones nothing.
    compiled_list: Vec<CompiledConfig>,
    /// The watches `compiled` needs, kept with it: readiness is asked
    /// before every plan, and deriving them costs allocations per item.
    wanted: Wanted,
    /// A number per honoured SyncConfig, new whenever its plan input
    /// changes (never reused): a copy verified in step against one stamp
    /// is vouched for while the SyncConfig still has it (see
    /// `CachedCopy::verified`).
    config_stamps: BTreeMap<ConfigRef, u64>,
    /// The last stamp handed out.
    last_stamp: u64,
    /// Deletes mirra sent (prunes, deleteItems, forceRecreate) whose effect
    /// the watches have not shown yet: the object's uid. Until a cache shows
    /// that object gone, replaced or terminating, the planner sees it as
    /// terminating, so a re-plan in between (another event, a verification
    /// pass) does not delete it again.
    deletes_in_flight: BTreeMap<CopyId, String>,
    /// SyncConfigs whose latest computed status counted pending
    /// namespaces: computed again once the queue is idle.
    pending_status: BTreeSet<ConfigRef>,
    /// Consecutive passes per namespace that ended with a permanent write
    /// failure (403, 422, ...): the exponent of their retry backoff.
    permanent_failures: BTreeMap<String, u32>,
    /// What each honoured SyncConfig costs (items, item bytes, namespaces
    /// it writes into), kept current on every change of a SyncConfig
    /// (recounted over the namespaces) and of a namespace (one step per
    /// SyncConfig), so checking the limits in a plan costs a lookup.
    footprints: BTreeMap<ConfigRef, Footprint>,
    /// `--max-copies-per-syncconfig` and `--max-bytes-per-syncconfig`
    /// (unlimited in a default state).
    limits: Limits,
    /// The namespaces mirra never writes to: not counted in footprints.
    never_write: BTreeSet<String>,
    /// The namespaces opened to tenants: their SyncConfigs must name a
    /// ServiceAccount.
    tenants: BTreeSet<String>,
    /// Objects each SyncConfig's deleteItems deleted, counted in its
    /// `deletedItemCount` after their outcome turned `Gone` (espejo reports
    /// a deletion in the status of the reconcile that made it). The flag
    /// says a written status showed it: such an entry is dropped when the
    /// SyncConfig's status next changes for another reason, so the count
    /// stays until the next status and the watch echo of the deletion
    /// itself writes nothing.
    recent_deletes: BTreeMap<ConfigRef, BTreeMap<mirra_mirror::ObjectKey, bool>>,
    /// Which plans may be narrow (see `narrow.rs`).
    scopes: narrow::PlanScopes,
}

/// A copy's identity across kinds: `(kind, namespace, name)`; the
/// namespace is empty for an object of a cluster-scoped kind.
pub type CopyId = (KindId, String, String);

/// The [`CopyId`] of the copy `t` names.
pub fn copy_id(t: &mirra_mirror::ObjectRef) -> CopyId {
    (
        (t.api_version.to_string(), t.kind.to_string()),
        t.namespace.to_string(),
        t.name.to_string(),
    )
}

/// A namespace as the caches key it: `None` for a cluster-scoped object.
fn scope(namespace: &str) -> Option<&str> {
    (!namespace.is_empty()).then_some(namespace)
}

/// FNV-1a, 64 bits: cheap and stable. For `answers` to hide a needed
/// apply, two copies' identities would have to collide and the body and
/// version hashes match as well.
fn fnv64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// [`fnv64`] of a copy's identity, its parts separated by a byte no name
/// contains.
fn copy_hash(id: &CopyId) -> u64 {
    let ((api_version, kind), namespace, name) = id;
    fnv64(format!("{api_version}\0{kind}\0{namespace}\0{name}").as_bytes())
}

/// The namespaces a Namespace event touches.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct NamespaceKeys {
    /// Every namespace to plan again.
    pub keys: BTreeSet<String>,
    /// Those of them that were just created (a watch event, not a list).
    pub created: BTreeSet<String>,
}

/// One of mirra's applies the copy watch has not echoed yet.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OwnWrite {
    /// The resourceVersion the apply's answer carried.
    pub version: String,
    /// The resourceVersion the cache held when the apply was planned
    /// (`None`: no copy yet). Only while the cache still holds it is the
    /// write known to be the newest state: a later version (someone's edit
    /// seen before the answer) is planned from as usual.
    pub planned_from: Option<String>,
    /// [`mirra_mirror::body_id`] of the body sent.
    pub body_hash: String,
    /// The namespace whose plan made the write (a cluster-scoped copy's
    /// too: the one it is made for).
    pub home: String,
    /// How many plans of `home` there had been when the answer came (set
    /// by [`State::record_own_write`]). A later plan of it ran without the
    /// object in the cache: it could not prune or delete it, so its echo is
    /// queued after all.
    pub home_plans: u64,
}

/// What a write needs beyond the op: the resource to send it to, and the
/// cached copy's uid (forceRecreate's delete precondition) and
/// resourceVersion (see [`OwnWrite::planned_from`]).
#[derive(Debug, Clone)]
pub struct WriteTarget {
    /// Where to send the write.
    pub resource: ApiResource,
    /// `metadata.uid` of the cached copy.
    pub uid: Option<String>,
    /// `metadata.resourceVersion` of the cached copy.
    pub version: Option<String>,
}

/// Compiles a cached SyncConfig; one that could not be decoded becomes an
/// invalid config carrying the reason.
fn compile_config(object: &ConfigObject) -> CompiledConfig {
    match &object.body {
        Ok(value) => CompiledConfig::from_json(value),
        Err(reason) => {
            let meta = serde_json::to_value(&object.metadata).unwrap_or(Value::Null);
            CompiledConfig::undecodable(&meta, reason)
        }
    }
}

fn config_kinds(c: &CompiledConfig) -> Vec<KindId> {
    let Ok(spec) = &c.spec else {
        return Vec::new();
    };
    spec.sync_items
        .iter()
        .map(|i| (i.api_version.clone(), i.kind.clone()))
        .chain(
            spec.copy_items
                .iter()
                .map(|i| (i.api_version.clone(), i.kind.clone())),
        )
        .chain(
            spec.delete_items
                .iter()
                .map(|i| (i.api_version.clone(), i.kind.clone())),
        )
        .collect()
}

/// The delete watches the compiled configs need.
fn wanted_delete_watches(
    compiled: &BTreeMap<ConfigRef, CompiledConfig>,
) -> BTreeSet<DeleteWatchId> {
    let mut out = BTreeSet::new();
    for c in compiled.values() {
        let Ok(spec) = &c.spec else { continue };
        for d in &spec.delete_items {
            let kind = (d.api_version.clone(), d.kind.clone());
            let name =
                (!d.name.contains(mirra_mirror::template::PROJECT_NAME)).then(|| d.name.clone());
            out.insert((kind, name));
        }
    }
    out
}

/// The watches the honoured SyncConfigs need.
#[derive(Debug, Default, Clone)]
struct Wanted {
    /// The kinds they name (their copies' caches).
    kinds: BTreeSet<KindId>,
    /// Their deleteItems' watches.
    deletes: BTreeSet<DeleteWatchId>,
    /// Their sources' and ServiceAccounts' watches.
    sources: BTreeSet<SourceId>,
}

impl Wanted {
    fn of(compiled: &BTreeMap<ConfigRef, CompiledConfig>) -> Self {
        Wanted {
            kinds: compiled.values().flat_map(config_kinds).collect(),
            deletes: wanted_delete_watches(compiled),
            sources: sources::source_watches_of(compiled.values()),
        }
    }
}

impl State {
    /// Derives what follows from `compiled` (the planner's list, the
    /// watches wanted) after it changed.
    pub(super) fn compiled_changed(&mut self) {
        self.compiled_list = self.compiled.values().cloned().collect();
        self.wanted = Wanted::of(&self.compiled);
    }

    /// An empty state that checks the limits of `settings`.
    pub fn new(settings: &Settings) -> State {
        State {
            limits: settings.limits,
            never_write: settings.never_write.clone(),
            tenants: settings.tenant_namespaces.clone(),
            ..State::default()
        }
    }

    /// Whether `config` writes into the namespace `view`: counted in its
    /// footprint. The same conditions as the planner's, bar the
    /// `--watch-namespace` scope (only honoured SyncConfigs are compiled).
    fn writes_into(&self, config: &CompiledConfig, view: &NamespaceView<'_>) -> bool {
        view.active && !self.never_write.contains(view.name) && config.selects(view)
    }

    /// Recounts the footprint of `key` over every namespace.
    fn recount_footprint(&mut self, key: &ConfigRef) {
        let Some(config) = self.compiled.get(key) else {
            self.footprints.remove(key);
            return;
        };
        let mut f = Footprint::of(config);
        f.namespaces = self
            .namespaces
            .iter()
            .filter(|(_, ns)| self.writes_into(config, &NamespaceView::from_namespace(ns)))
            .count() as u64;
        self.footprints.insert(key.clone(), f);
    }

    /// The limit `key` is over, if any: its writes are held back.
    pub fn over_limit(&self, key: &ConfigRef) -> Option<LimitExceeded> {
        self.footprints
            .get(key)
            .and_then(|f| f.exceeded(&self.limits))
    }

    /// Kinds the valid SyncConfigs name, plus kinds whose caches still hold
    /// copies (they must stay watched until pruned).
    pub fn wanted_kinds(&self) -> BTreeSet<KindId> {
        let mut out: BTreeSet<KindId> = self.wanted.kinds.clone();
        out.extend(
            self.kinds
                .iter()
                .filter(|(_, e)| !e.copies.is_empty() || (e.swept && !e.copies.initial_list_done()))
                .map(|(k, _)| k.clone()),
        );
        out
    }

    /// `(group, kind)` of every kind in use, whatever its version: the
    /// start-up sweep leaves those to their own watches.
    pub fn kinds_in_use_by_group(&self) -> BTreeSet<(String, String)> {
        self.wanted_kinds()
            .into_iter()
            .chain(self.kinds.keys().cloned())
            .map(|(api_version, kind)| {
                (mirra_mirror::refs::group_of(&api_version).to_string(), kind)
            })
            .collect()
    }

    /// Delete watches wanted now.
    pub fn wanted_delete_watches(&self) -> BTreeSet<DeleteWatchId> {
        self.wanted.deletes.clone()
    }

    /// Whether every cache a plan depends on holds its initial list: no
    /// plan (and so no delete) is made before.
    pub fn caches_ready(&self) -> bool {
        if !self.namespaces.initial_list_done()
            || self.configs.is_empty()
            || !self.configs.values().all(Cache::initial_list_done)
        {
            return false;
        }
        for kind in &self.wanted.kinds {
            match self.kinds.get(kind) {
                None => return false,
                Some(e) => match &e.resolution {
                    Resolution::Pending => return false,
                    Resolution::Failed(_) => {}
                    Resolution::Served(_) => {
                        // A refused kind is reported on its items instead:
                        // waiting for it would hold up every namespace.
                        if e.unavailable.is_none() && !e.copies.initial_list_done() {
                            return false;
                        }
                    }
                },
            }
        }
        for id in &self.wanted.deletes {
            match self.deletes.get(id) {
                None => return false,
                Some(d)
                    if d.resource.is_some()
                        && d.unavailable.is_none()
                        && !d.objects.initial_list_done() =>
                {
                    return false;
                }
                Some(_) => {}
            }
        }
        self.sources_listed()
    }

    /// Every namespace name in the cache.
    pub fn namespace_names(&self) -> Vec<String> {
        self.namespaces
            .iter()
            .map(|(k, _)| k.name.clone())
            .collect()
    }

    /// The namespaces the given SyncConfig selects (all when `None`).
    pub fn selected_by(&self, configs: &[&CompiledConfig]) -> BTreeSet<String> {
        self.namespaces
            .iter()
            .map(|(_, ns)| NamespaceView::from_namespace(ns))
            .filter(|v| configs.iter().any(|c| c.selects(v)))
            .map(|v| v.name.to_string())
            .collect()
    }

    /// Namespaces holding copies owned by `config`.
    pub fn namespaces_with_copies_of(&self, config: &ConfigRef) -> BTreeSet<String> {
        let owner = config.to_string();
        self.kinds
            .values()
            .flat_map(|e| e.marked.homes_of(&owner).cloned())
            .collect()
    }

    /// Stores the outcomes of a namespace; marks the SyncConfigs whose
    /// outcomes changed as needing a status update.
    pub fn store_outcomes(&mut self, namespace: &str, outcomes: Vec<ItemOutcome>, now: Instant) {
        self.store_plan_outcomes(namespace, None, outcomes, now);
    }

    /// [`State::store_outcomes`] of a plan narrowed to `narrowed` (see
    /// [`Plan::narrowed`]): the other SyncConfigs' outcomes are kept.
    pub fn store_plan_outcomes(
        &mut self,
        namespace: &str,
        narrowed: Option<&BTreeSet<ConfigRef>>,
        outcomes: Vec<ItemOutcome>,
        now: Instant,
    ) {
        let stored = self.outcomes.remove(namespace).unwrap_or_default();
        // The stored outcomes the plan replaces: all, or a narrow plan's
        // SyncConfigs'. Compared in place: most plans change nothing.
        let replaced = |o: &&ItemOutcome| narrowed.is_none_or(|only| only.contains(&o.config));
        let changed = !stored.iter().filter(replaced).eq(outcomes.iter());
        let mut outcomes = if changed {
            let touched: BTreeSet<ConfigRef> = stored
                .iter()
                .filter(replaced)
                .chain(outcomes.iter())
                .flat_map(|o| {
                    std::iter::once(o.config.clone()).chain(match &o.state {
                        OutcomeState::Conflict { winner, .. } => Some(winner.clone()),
                        _ => None,
                    })
                })
                .collect();
            for c in touched {
                if self.compiled.contains_key(&c) {
                    self.dirty_status.entry(c).or_insert(now);
                }
            }
            // Only the new outcomes are interned: the stored ones are.
            let mut outcomes = outcomes;
            for o in &mut outcomes {
                self.names.intern_config(&mut o.config);
                self.names.intern_object(&mut o.target);
                if let OutcomeState::Conflict { winner, .. } = &mut o.state {
                    self.names.intern_config(winner);
                }
                for c in &mut o.contenders {
                    self.names.intern_config(c);
                }
            }
            match narrowed {
                Some(only) => mirra_mirror::merge_outcomes(stored, only, outcomes),
                None => outcomes,
            }
        } else {
            // An unchanged plan (every verification pass, mostly) keeps the
            // stored outcomes as they are.
            stored
        };
        // Kept until the namespace is planned again, for every namespace:
        // the planner's growth room would be a third of what is kept, and
        // its names copies of the same few texts.
        outcomes.shrink_to_fit();
        if !outcomes.is_empty() {
            self.outcomes.insert(namespace.to_string(), outcomes);
        }
    }

    /// The status stored for a SyncConfig: the one mirra wrote last, else
    /// the cached object's.
    pub fn stored_status(&self, key: &ConfigRef) -> Option<SyncConfigStatus> {
        if let Some(s) = self.written_status.get(key) {
            return Some(s.clone());
        }
        self.configs.values().find_map(|c| {
            c.get(Some(&key.namespace), &key.name)
                .and_then(ConfigObject::status)
                .and_then(|s| serde_json::from_value(s.clone()).ok())
        })
    }

    /// The resourceVersion a status write for `key` is planned from, sent
    /// as its precondition: the cached object's, or the answer to mirra's
    /// own last status write while the watch has not brought it yet (the
    /// cache then still holds the version that write was planned from).
    pub fn status_base_version(&self, key: &ConfigRef) -> Option<String> {
        let cached = self.configs.values().find_map(|c| {
            c.get(Some(&key.namespace), &key.name)
                .and_then(|o| o.metadata.resource_version.clone())
        })?;
        match self.status_versions.get(key) {
            Some((base, answer)) if *base == cached => Some(answer.clone()),
            _ => Some(cached),
        }
    }

    /// The uid of a cached SyncConfig (for Events).
    pub fn config_uid(&self, key: &ConfigRef) -> Option<String> {
        self.compiled
            .get(key)
            .map(|c| c.uid.clone())
            .filter(|u| !u.is_empty())
    }

    /// Number of SyncConfigs whose last written status has each condition
    /// True, for every condition type a status can carry (0 included, so
    /// that alerts see the series).
    pub fn condition_counts(&self) -> Vec<(&'static str, usize)> {
        use mirra_mirror::status::{
            CONDITION_CONFLICT, CONDITION_DEGRADED, CONDITION_ERRORED, CONDITION_INVALID,
            CONDITION_READY,
        };
        [
            CONDITION_READY,
            CONDITION_INVALID,
            CONDITION_ERRORED,
            CONDITION_DEGRADED,
            CONDITION_CONFLICT,
        ]
        .into_iter()
        .map(|c| {
            let n = self
                .written_status
                .values()
                .filter(|st| {
                    st.conditions
                        .iter()
                        .any(|x| x.type_ == c && x.status == "True")
                })
                .count();
            (c, n)
        })
        .collect()
    }

    /// Number of cached objects per kind label, for the metrics.
    pub fn cache_sizes(&self) -> Vec<(String, usize)> {
        let mut out = vec![
            ("Namespace".to_string(), self.namespaces.len()),
            (
                "SyncConfig".to_string(),
                self.configs.values().map(Cache::len).sum(),
            ),
        ];
        for ((_, kind), e) in &self.kinds {
            out.push((kind.clone(), e.copies.len()));
        }
        let mut deletes: BTreeMap<String, usize> = BTreeMap::new();
        for ((kind, _), d) in &self.deletes {
            *deletes
                .entry(format!("{} (deleteItems)", kind.1))
                .or_default() += d.objects.len();
        }
        out.extend(deletes);
        out.push(("copyItems sources".to_string(), self.sources_held()));
        out
    }
}

mod bookkeeping;
mod mark_index;

#[cfg(test)]
mod tests;

pub use bookkeeping::{StatusRound, StatusWrite};
pub use planning::Plan;
