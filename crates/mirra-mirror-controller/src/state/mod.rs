//! The controller's in-memory view of the cluster: every watch cache, the
//! compiled SyncConfigs, the latest outcome of every namespace, and the
//! mapping from a cache change to the namespaces (keys) it touches.
//!
//! What this module must NOT do: I/O, or block. It is used under one
//! `std::sync::Mutex`, held only for CPU work.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Instant;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{ApiResource, DynamicObject, PartialObjectMeta};
use kube::runtime::watcher::Event;
use mirra_mirror::{
    CompiledConfig, ConfigRef, Footprint, ItemOutcome, LimitExceeded, Limits, NamespacePlan,
    NamespaceView, ObservedObject, ObservedSet, Op, OutcomeState, SyncConfigStatus,
    namespaces_for_config_change, plan_namespace_full,
};
use mirra_runtime::{Cache, TaskGuard};
use serde_json::Value;

use crate::config_object::ConfigObject;
use crate::settings::Settings;
use mark_index::MarkIndex;

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
    /// mirra's copies (label-selected), managedFields stripped. Changed
    /// only through [`mark_index::apply_indexed`], which keeps `marked` in
    /// step.
    pub copies: Cache<DynamicObject>,
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
    /// Latest outcomes per target namespace.
    outcomes: BTreeMap<String, Vec<ItemOutcome>>,
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
    /// mirra's own applies whose answer came but whose echo the copy watch
    /// has not brought yet. The echo holds exactly what the plan asked
    /// for, so re-planning its namespace for it would be pure CPU: it is
    /// not queued. Any other version (someone else's edit) is queued as
    /// usual. Until the echo, a plan of that namespace (a verification pass
    /// in between) treats the copy as written rather than applying the same
    /// content again. Every event of the object drops its entry.
    own_writes: BTreeMap<CopyId, OwnWrite>,
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
    /// Objects each SyncConfig's deleteItems deleted, counted in its
    /// `deletedItemCount` after their outcome turned `Gone` (espejo reports
    /// a deletion in the status of the reconcile that made it). The flag
    /// says a written status showed it: such an entry is dropped when the
    /// SyncConfig's status next changes for another reason, so the count
    /// stays until the next status and the watch echo of the deletion
    /// itself writes nothing.
    recent_deletes: BTreeMap<ConfigRef, BTreeMap<mirra_mirror::ObjectKey, bool>>,
}

/// A copy's identity across kinds: `(kind, namespace, name)`; the
/// namespace is empty for an object of a cluster-scoped kind.
pub type CopyId = (KindId, String, String);

/// A namespace as the caches key it: `None` for a cluster-scoped object.
fn scope(namespace: &str) -> Option<&str> {
    (!namespace.is_empty()).then_some(namespace)
}

/// The namespace a cluster-scoped copy was made for, from its mark.
fn for_namespace(obj: &DynamicObject) -> Option<String> {
    obj.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(mirra_mirror::FOR_NAMESPACE_ANNOTATION))
        .filter(|ns| !ns.is_empty())
        .cloned()
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

/// One of mirra's applies the copy watch has not echoed yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnWrite {
    /// The resourceVersion the apply's answer carried.
    pub version: String,
    /// The resourceVersion the cache held when the apply was planned
    /// (`None`: no copy yet). Only while the cache still holds it is the
    /// write known to be the newest state: a later version (someone's edit
    /// seen before the answer) is planned from as usual.
    pub planned_from: Option<String>,
    /// [`mirra_mirror::marks::content_hash`] of the body sent.
    pub body_hash: String,
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

/// An object's JSON with its apiVersion and kind filled from the resource
/// (list responses may omit them) and managedFields dropped.
pub fn observed_from_dynamic(obj: &DynamicObject, ar: &ApiResource) -> Option<ObservedObject> {
    let mut body = serde_json::to_value(obj).ok()?;
    if let Value::Object(map) = &mut body {
        map.insert("apiVersion".into(), Value::String(ar.api_version.clone()));
        map.insert("kind".into(), Value::String(ar.kind.clone()));
    }
    ObservedObject::from_json(body)
}

fn observed_from_meta(
    obj: &PartialObjectMeta<DynamicObject>,
    ar: &ApiResource,
) -> Option<ObservedObject> {
    let meta = serde_json::to_value(&obj.metadata).ok()?;
    ObservedObject::from_json(serde_json::json!({
        "apiVersion": ar.api_version,
        "kind": ar.kind,
        "metadata": meta,
    }))
}

fn config_kinds(c: &CompiledConfig) -> Vec<KindId> {
    let Ok(spec) = &c.spec else {
        return Vec::new();
    };
    spec.sync_items
        .iter()
        .map(|i| (i.api_version.clone(), i.kind.clone()))
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

impl State {
    /// An empty state that checks the limits of `settings`.
    pub fn new(settings: &Settings) -> State {
        State {
            limits: settings.limits,
            never_write: settings.never_write.clone(),
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
        let mut out: BTreeSet<KindId> = self.compiled.values().flat_map(config_kinds).collect();
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
        wanted_delete_watches(&self.compiled)
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
        for kind in self.compiled.values().flat_map(config_kinds) {
            match self.kinds.get(&kind) {
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
        for id in self.wanted_delete_watches() {
            match self.deletes.get(&id) {
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
        true
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
        let mut out = BTreeSet::new();
        for e in self.kinds.values() {
            for (key, obj) in e.copies.iter() {
                let owned = obj
                    .metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get(mirra_mirror::OWNER_ANNOTATION))
                    .is_some_and(|o| *o == owner);
                if !owned {
                    continue;
                }
                match &key.namespace {
                    Some(ns) => {
                        out.insert(ns.clone());
                    }
                    None => out.extend(for_namespace(obj)),
                }
            }
        }
        out
    }

    /// Folds a Namespace event; returns the keys it touches.
    pub fn apply_namespace(&mut self, event: Event<Namespace>) -> BTreeSet<String> {
        let mut keys = BTreeSet::new();
        let held_before: BTreeSet<ConfigRef> = self
            .footprints
            .keys()
            .filter(|k| self.over_limit(k).is_some())
            .cloned()
            .collect();
        for change in self.namespaces.apply(event) {
            let view = |n: &Option<Namespace>| {
                n.as_ref().map(|n| {
                    let v = NamespaceView::from_namespace(n);
                    (v.labels.clone(), v.active)
                })
            };
            // Only what selection depends on: a namespace whose status
            // conditions or annotations changed needs no plan.
            if view(&change.old) != view(&change.new) {
                keys.insert(change.key.name.clone());
                self.count_namespace_change(change.old.as_ref(), change.new.as_ref());
            }
        }
        // A SyncConfig that crossed a limit either way: every namespace it
        // selects is planned again (held back, or synced fully), and its
        // status is recomputed even where no outcome changes.
        let crossed: Vec<ConfigRef> = self
            .footprints
            .keys()
            .filter(|k| held_before.contains(*k) != self.over_limit(k).is_some())
            .cloned()
            .collect();
        let now = Instant::now();
        for key in crossed {
            if let Some(c) = self.compiled.get(&key) {
                keys.extend(self.selected_by(&[c]));
            }
            self.dirty_status.entry(key).or_insert(now);
        }
        keys
    }

    /// Moves the footprints' namespace counts by one namespace's change:
    /// a step per SyncConfig, not a recount.
    fn count_namespace_change(&mut self, old: Option<&Namespace>, new: Option<&Namespace>) {
        let old = old.map(NamespaceView::from_namespace);
        let new = new.map(NamespaceView::from_namespace);
        let mut steps: Vec<(ConfigRef, bool, bool)> = Vec::new();
        for (key, c) in &self.compiled {
            let was = old.as_ref().is_some_and(|v| self.writes_into(c, v));
            let is = new.as_ref().is_some_and(|v| self.writes_into(c, v));
            if was != is {
                steps.push((key.clone(), was, is));
            }
        }
        for (key, was, is) in steps {
            if let Some(f) = self.footprints.get_mut(&key) {
                if is && !was {
                    f.namespaces = f.namespaces.saturating_add(1);
                } else {
                    f.namespaces = f.namespaces.saturating_sub(1);
                }
            }
        }
    }

    /// Folds a SyncConfig event from the watch of `scope`; returns the keys
    /// it touches and whether the set of kinds in use may have changed.
    pub fn apply_config(
        &mut self,
        scope: &str,
        event: Event<ConfigObject>,
        now: Instant,
    ) -> (BTreeSet<String>, bool) {
        let mut keys = BTreeSet::new();
        let mut kinds_changed = false;
        let changes = self
            .configs
            .entry(scope.to_string())
            .or_default()
            .apply(event);
        for change in changes {
            let Some(key) = change
                .key
                .namespace
                .clone()
                .map(|ns| ConfigRef::new(ns, change.key.name.clone()))
            else {
                continue;
            };
            let new = change.new.as_ref().map(compile_config);
            let old = match &new {
                Some(n) => self.compiled.insert(key.clone(), n.clone()),
                None => self.compiled.remove(&key),
            };
            self.compiled_list = self.compiled.values().cloned().collect();
            if let (Some(o), Some(n)) = (&old, &new)
                && o.same_plan_input(n)
            {
                // Status or label edits (mirra's own status writes among
                // them) change no plan.
                continue;
            }
            kinds_changed = true;
            self.recount_footprint(&key);
            let views: Vec<NamespaceView<'_>> = self
                .namespaces
                .iter()
                .map(|(_, ns)| NamespaceView::from_namespace(ns))
                .collect();
            keys.extend(namespaces_for_config_change(
                old.as_ref(),
                new.as_ref(),
                views.iter(),
            ));
            keys.extend(self.namespaces_with_copies_of(&key));
            if new.is_some() {
                self.dirty_status.insert(key, now);
            } else {
                self.written_status.remove(&key);
                self.status_versions.remove(&key);
                self.dirty_status.remove(&key);
                self.recent_deletes.remove(&key);
            }
        }
        (keys, kinds_changed)
    }

    /// Folds an event of mirra's copies of `kind`; returns the keys touched
    /// (the echo of mirra's own apply touches none, see `own_writes`).
    pub fn apply_copies(&mut self, kind: &KindId, event: Event<DynamicObject>) -> BTreeSet<String> {
        let Some(entry) = self.kinds.get_mut(kind) else {
            return BTreeSet::new();
        };
        let mut keys = BTreeSet::new();
        let changes = mark_index::apply_indexed(&mut entry.copies, &mut entry.marked, event);
        for change in changes {
            // A cluster-scoped copy is planned with the namespace it was
            // made for (old and new mark, should someone have edited it).
            let homes: BTreeSet<String> = match &change.key.namespace {
                Some(ns) => BTreeSet::from([ns.clone()]),
                None => change
                    .old
                    .iter()
                    .chain(change.new.iter())
                    .filter_map(for_namespace)
                    .collect(),
            };
            let namespace = change.key.namespace.unwrap_or_default();
            let id = (kind.clone(), namespace, change.key.name);
            self.settle_delete(&id);
            let written = self.own_writes.remove(&id);
            if change.new.is_none() {
                self.answers.remove(&copy_hash(&id));
            }
            let version = change
                .new
                .as_ref()
                .and_then(|o| o.metadata.resource_version.as_deref());
            let echo = matches!((&written, version), (Some(w), Some(v)) if w.version == v);
            if !echo {
                keys.extend(homes);
            }
        }
        keys
    }

    /// The resourceVersion the copy cache holds for `id`.
    fn cached_version(&self, id: &CopyId) -> Option<&str> {
        self.kinds
            .get(&id.0)
            .and_then(|e| e.copies.get(scope(&id.1), &id.2))
            .and_then(|o| o.metadata.resource_version.as_deref())
    }

    /// Remembers one of mirra's own applies of a copy (see `own_writes`).
    pub fn record_own_write(&mut self, id: CopyId, write: OwnWrite) {
        if write.version.is_empty() {
            return;
        }
        self.answers.insert(
            copy_hash(&id),
            (
                fnv64(write.body_hash.as_bytes()),
                fnv64(write.version.as_bytes()),
            ),
        );
        // The echo already arrived (and was queued): nothing to wait for.
        if self.cached_version(&id) != Some(write.version.as_str()) {
            self.own_writes.insert(id, write);
        }
    }

    /// Whether `op` would send the body of mirra's latest apply of a copy
    /// whose cached version is still the one that apply was answered with
    /// (see `answers`).
    fn answered_in_step(&self, op: &Op) -> bool {
        let Op::Apply { target, body, .. } = op else {
            return false;
        };
        let id = (
            (target.api_version.clone(), target.kind.clone()),
            target.namespace.clone(),
            target.name.clone(),
        );
        let Some(version) = self.cached_version(&id) else {
            return false;
        };
        self.answers.get(&copy_hash(&id)).is_some_and(|(b, v)| {
            *v == fnv64(version.as_bytes())
                && *b == fnv64(mirra_mirror::marks::content_hash(body).as_bytes())
        })
    }

    /// Whether `op` would send again what an own apply not yet echoed
    /// wrote, with nothing newer seen since it was planned.
    fn repeats_pending_write(&self, op: &Op) -> bool {
        let Op::Apply { target, body, .. } = op else {
            return false;
        };
        let id = (
            (target.api_version.clone(), target.kind.clone()),
            target.namespace.clone(),
            target.name.clone(),
        );
        self.own_writes.get(&id).is_some_and(|w| {
            w.planned_from.as_deref() == self.cached_version(&id)
                && w.body_hash == mirra_mirror::marks::content_hash(body)
        })
    }

    /// Folds an event of a deleteItem watch; returns the keys touched.
    pub fn apply_delete_watch(
        &mut self,
        id: &DeleteWatchId,
        event: Event<PartialObjectMeta<DynamicObject>>,
    ) -> BTreeSet<String> {
        let Some(entry) = self.deletes.get_mut(id) else {
            return BTreeSet::new();
        };
        let mut keys = BTreeSet::new();
        for change in entry.objects.apply(event) {
            let Some(namespace) = change.key.namespace else {
                continue;
            };
            self.settle_delete(&(id.0.clone(), namespace.clone(), change.key.name));
            keys.insert(namespace);
        }
        keys
    }

    /// Whether some cache holds the object `id` with this uid and without a
    /// deletionTimestamp.
    fn holds_live(&self, id: &CopyId, uid: &str) -> bool {
        let (kind, namespace, name) = id;
        let live = |meta: &kube::api::ObjectMeta| {
            meta.uid.as_deref() == Some(uid) && meta.deletion_timestamp.is_none()
        };
        let in_copies = self
            .kinds
            .get(kind)
            .and_then(|e| e.copies.get(scope(namespace), name))
            .is_some_and(|o| live(&o.metadata));
        in_copies
            || self
                .deletes
                .iter()
                .filter(|((k, _), _)| k == kind)
                .filter_map(|(_, d)| d.objects.get(scope(namespace), name))
                .any(|o| live(&o.metadata))
    }

    /// A deleteItem of `config` deleted `key`: counted in its status until
    /// the next status after the one that shows it (see `recent_deletes`).
    pub fn record_deleted_item(&mut self, config: &ConfigRef, key: mirra_mirror::ObjectKey) {
        if self.compiled.contains_key(config) {
            self.recent_deletes
                .entry(config.clone())
                .or_default()
                .insert(key, false);
        }
    }

    /// Remembers a delete mirra sent, until a cache shows its effect. Not
    /// recorded when the caches already show it (the watch was faster than
    /// the answer), so no entry outlives its object.
    pub fn record_delete(&mut self, id: CopyId, uid: &str) {
        if self.holds_live(&id, uid) {
            self.deletes_in_flight.insert(id, uid.to_string());
        }
    }

    /// Drops the in-flight delete of `id` once no cache shows that object
    /// alive any more.
    fn settle_delete(&mut self, id: &CopyId) {
        if let Some(uid) = self.deletes_in_flight.get(id)
            && !self.holds_live(id, uid)
        {
            self.deletes_in_flight.remove(id);
        }
    }

    /// Why `kind` cannot be read now, if its copies watch or one of its
    /// deleteItem watches is refused.
    pub fn unavailable(&self, kind: &KindId) -> Option<&Unavailable> {
        self.kinds
            .get(kind)
            .and_then(|e| e.unavailable.as_ref())
            .or_else(|| {
                self.deletes
                    .iter()
                    .filter(|((k, _), _)| k == kind)
                    .find_map(|(_, d)| d.unavailable.as_ref())
            })
    }

    /// Records whether the copies watch of `kind` is refused; returns the
    /// namespaces to re-plan when that changed whether the kind can be used.
    pub fn set_copies_unavailable(
        &mut self,
        kind: &KindId,
        value: Option<Unavailable>,
    ) -> BTreeSet<String> {
        let before = self.unavailable(kind).is_some();
        match self.kinds.get_mut(kind) {
            Some(e) if e.unavailable != value => e.unavailable = value,
            _ => return BTreeSet::new(),
        }
        self.availability_changed(kind, before)
    }

    /// [`State::set_copies_unavailable`] for a deleteItem watch.
    pub fn set_delete_unavailable(
        &mut self,
        id: &DeleteWatchId,
        value: Option<Unavailable>,
    ) -> BTreeSet<String> {
        let before = self.unavailable(&id.0).is_some();
        match self.deletes.get_mut(id) {
            Some(d) if d.unavailable != value => d.unavailable = value,
            _ => return BTreeSet::new(),
        }
        self.availability_changed(&id.0, before)
    }

    fn availability_changed(&self, kind: &KindId, before: bool) -> BTreeSet<String> {
        if self.unavailable(kind).is_some() == before {
            // Only the message may have changed; the items' outcomes are
            // refreshed by the next plan of their namespaces anyway.
            return BTreeSet::new();
        }
        self.users_of_kind(kind)
    }

    /// The namespaces selected by the valid SyncConfigs that name `kind` in
    /// a syncItem or a deleteItem.
    pub fn users_of_kind(&self, kind: &KindId) -> BTreeSet<String> {
        let users: Vec<&CompiledConfig> = self
            .compiled
            .values()
            .filter(|c| config_kinds(c).contains(kind))
            .collect();
        if users.is_empty() {
            return BTreeSet::new();
        }
        self.selected_by(&users)
    }

    /// What the caches hold for one namespace, as the planner reads it.
    pub fn observed_in(&self, namespace: &str) -> ObservedSet {
        let mut set = ObservedSet::new();
        // deleteItem objects first: when the same object is also a copy,
        // the full copy (inserted after) replaces the metadata-only entry.
        for d in self.deletes.values() {
            let Some(ar) = &d.resource else { continue };
            for o in d.objects.in_namespace(namespace) {
                if let Some(obs) = observed_from_meta(o, ar) {
                    set.insert(obs);
                }
            }
        }
        // The names the syncItems of cluster-scoped kinds want here: the
        // planner must see who holds them, whichever namespace that is for.
        let view = self
            .namespaces
            .get(None, namespace)
            .map(NamespaceView::from_namespace);
        let mut cluster_names: BTreeSet<(KindId, String)> = BTreeSet::new();
        if let Some(view) = &view {
            for c in self.compiled.values().filter(|c| c.selects(view)) {
                let Ok(spec) = &c.spec else { continue };
                for item in &spec.sync_items {
                    let kind = (item.api_version.clone(), item.kind.clone());
                    if self.kinds.get(&kind).is_some_and(|e| e.cluster) {
                        let name = mirra_mirror::template::template_str(&item.name, namespace);
                        cluster_names.insert((kind, name));
                    }
                }
            }
        }
        for (kind, e) in &self.kinds {
            let Resolution::Served(ar) = &e.resolution else {
                continue;
            };
            if e.cluster {
                // Cluster-scoped copies have no namespace: the ones made
                // for this namespace are found by their mark, through the
                // index (reads only this namespace's copies).
                for key in e.marked.marked_for(namespace) {
                    if let Some(obs) = e
                        .copies
                        .get_key(key)
                        .and_then(|o| observed_from_dynamic(o, ar))
                    {
                        set.insert(obs);
                    }
                }
                for (_, name) in cluster_names.iter().filter(|(k, _)| k == kind) {
                    if let Some(obs) = e
                        .copies
                        .get(None, name)
                        .and_then(|o| observed_from_dynamic(o, ar))
                    {
                        set.insert(obs);
                    }
                }
                continue;
            }
            for o in e.copies.in_namespace(namespace) {
                if let Some(obs) = observed_from_dynamic(o, ar) {
                    set.insert(obs);
                }
            }
        }
        for ((kind, ns, name), uid) in &self.deletes_in_flight {
            if ns != namespace && !ns.is_empty() {
                continue;
            }
            let key = mirra_mirror::ObjectRef {
                api_version: kind.0.clone(),
                kind: kind.1.clone(),
                namespace: ns.clone(),
                name: name.clone(),
            }
            .key();
            if let Some(mut obs) = set.remove(&key) {
                // Deleted already, the watch just has not said so: to the
                // planner it is terminating (no second delete, no apply
                // racing the deletion).
                if obs.uid == *uid {
                    obs.deleting = true;
                }
                set.insert(obs);
            }
        }
        set
    }

    /// Plans one namespace from the caches, with the ops on kinds the
    /// server does not serve, or that `--allow-kind` does not allow, turned
    /// into failed outcomes (the pure planner knows neither discovery nor
    /// the flags).
    pub fn plan(&self, namespace: &str, settings: &Settings) -> NamespacePlan {
        let observed = self.observed_in(namespace);
        let ns = self.namespaces.get(None, namespace);
        let view = ns.map(NamespaceView::from_namespace);
        let excluded = |n: &str| settings.never_write.contains(n);
        let honoured = |c: &ConfigRef| settings.scope.honours(&c.namespace);
        let cluster_scoped = |api_version: &str, kind: &str| {
            self.kinds
                .get(&(api_version.to_string(), kind.to_string()))
                .is_some_and(|e| e.cluster)
        };
        let mut plan = plan_namespace_full(
            namespace,
            view.as_ref(),
            &self.compiled_list,
            &observed,
            &excluded,
            &honoured,
            &cluster_scoped,
        );
        let failed_kind = |api_version: &str, kind: &str| -> Option<String> {
            let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
            if let Some(reason) = settings.refuses_kind(group, kind) {
                return Some(reason);
            }
            let id = (api_version.to_string(), kind.to_string());
            match self.kinds.get(&id).map(|e| &e.resolution) {
                Some(Resolution::Failed(reason)) => Some(reason.clone()),
                // Refused: the cache of that kind is unknown, so nothing of
                // it is applied or pruned on its strength.
                _ => self.unavailable(&id).map(|u| u.reason.clone()),
            }
        };
        let mut repeated = BTreeSet::new();
        plan.ops.retain(|op| {
            if self.repeats_pending_write(op) || self.answered_in_step(op) {
                repeated.insert(op.target().key());
                return false;
            }
            failed_kind(&op.target().api_version, &op.target().kind).is_none()
        });
        for o in &mut plan.outcomes {
            if o.state == OutcomeState::Applied && repeated.contains(&o.target.key()) {
                o.state = OutcomeState::InSync;
            }
            if matches!(
                o.state,
                OutcomeState::Failed { .. } | OutcomeState::Conflict { .. }
            ) {
                continue;
            }
            if let Some(reason) = failed_kind(&o.target.api_version, &o.target.kind) {
                o.state = OutcomeState::Failed { reason };
            }
        }
        self.hold_over_limit(&mut plan);
        plan
    }

    /// Takes the writes of SyncConfigs over a limit out of `plan`: nothing
    /// of such a SyncConfig is created, updated, pruned or deleted. Its
    /// existing copies are not touched, whatever their content: updating
    /// them would write the very bytes the limit is there to stop (an item
    /// that grew), and pruning after a selector mistake would delete the
    /// copies the old selector wanted. Conflicts are still decided as
    /// usual, so no other SyncConfig takes its objects over meanwhile.
    fn hold_over_limit(&self, plan: &mut NamespacePlan) {
        let held: BTreeSet<ConfigRef> = plan
            .ops
            .iter()
            .map(Op::config)
            .filter(|c| self.over_limit(c).is_some())
            .cloned()
            .collect();
        if held.is_empty() {
            return;
        }
        plan.ops.retain(|op| !held.contains(op.config()));
        for o in &mut plan.outcomes {
            if held.contains(&o.config)
                && matches!(
                    o.state,
                    OutcomeState::Applied
                        | OutcomeState::Deleted
                        | OutcomeState::Pruned
                        | OutcomeState::Released
                )
            {
                o.state = OutcomeState::Held;
            }
        }
    }

    /// Where to send `op`, and what the cache holds of its object.
    pub fn write_target(&self, op: &Op) -> Option<WriteTarget> {
        let t = op.target();
        let entry = self.kinds.get(&(t.api_version.clone(), t.kind.clone()));
        let ar = match entry.map(|e| &e.resolution) {
            Some(Resolution::Served(ar)) => Some(ar.clone()),
            _ => self
                .deletes
                .iter()
                .filter(|((k, _), _)| k.0 == t.api_version && k.1 == t.kind)
                .find_map(|(_, d)| d.resource.clone()),
        }?;
        let cached = entry.and_then(|e| e.copies.get(scope(&t.namespace), &t.name));
        Some(WriteTarget {
            resource: ar,
            uid: cached.and_then(|o| o.metadata.uid.clone()),
            version: cached.and_then(|o| o.metadata.resource_version.clone()),
        })
    }

    /// Stores the outcomes of a namespace; marks the SyncConfigs whose
    /// outcomes changed as needing a status update.
    pub fn store_outcomes(&mut self, namespace: &str, outcomes: Vec<ItemOutcome>, now: Instant) {
        let old = self.outcomes.remove(namespace).unwrap_or_default();
        if old != outcomes {
            let touched: BTreeSet<ConfigRef> = old
                .iter()
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
        }
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
        out
    }
}

mod bookkeeping;
mod mark_index;
#[cfg(test)]
mod tests;

pub use bookkeeping::{StatusRound, StatusWrite};
