//! Folding watch events into the state: Namespace, SyncConfig, copy and
//! deleteItem watch events, the controller's own writes and deletes, and when
//! an in-flight write or delete counts as answered.
//!
//! This module must NOT plan or write: it returns the namespace keys an event
//! touches and the engine re-plans them.

use super::*;

impl State {
    /// Folds a Namespace event; returns the keys it touches.
    pub fn apply_namespace(&mut self, event: Event<Namespace>) -> NamespaceKeys {
        let mut keys = BTreeSet::new();
        let mut created = BTreeSet::new();
        // A list (the first, or a relist) is no creation: its namespaces
        // are planned as any event.
        let live = matches!(event, Event::Apply(_));
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
                if live && change.old.is_none() {
                    created.insert(change.key.name.clone());
                }
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
        NamespaceKeys { keys, created }
    }

    /// Moves the footprints' namespace counts by one namespace's change:
    /// a step per SyncConfig, not a recount.
    pub(super) fn count_namespace_change(
        &mut self,
        old: Option<&Namespace>,
        new: Option<&Namespace>,
    ) {
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
            let new = change.new.as_ref().map(|o| {
                let mut c = compile_config(o);
                if self.tenants.contains(key.namespace.as_str()) {
                    c.require_service_account(&format!(
                        "namespace {} is open to tenants (--tenant-namespace), whose \
                         SyncConfigs write only as a ServiceAccount of their own namespace",
                        key.namespace
                    ));
                }
                self.resolve(&mut c);
                c
            });
            if let Some(touched) = self.replace_compiled(key, new, now) {
                keys.extend(touched);
                kinds_changed = true;
            }
        }
        (keys, kinds_changed)
    }

    /// Puts `new` in place of the compiled SyncConfig `key` (`None`: it is
    /// gone). Returns the namespaces to plan again, or `None` when planning
    /// sees no difference (a status or label edit, mirra's own status
    /// writes among them, or a source event that changed nothing copied).
    pub(super) fn replace_compiled(
        &mut self,
        key: ConfigRef,
        new: Option<CompiledConfig>,
        now: Instant,
    ) -> Option<BTreeSet<String>> {
        let old = match &new {
            Some(n) => self.compiled.insert(key.clone(), n.clone()),
            None => self.compiled.remove(&key),
        };
        self.compiled_changed();
        if let (Some(o), Some(n)) = (&old, &new)
            && o.same_plan_input(n)
        {
            return None;
        }
        // What earlier plans verified against it no longer holds.
        if new.is_some() {
            self.last_stamp += 1;
            self.config_stamps.insert(key.clone(), self.last_stamp);
        } else {
            self.config_stamps.remove(&key);
        }
        self.recount_footprint(&key);
        let views: Vec<NamespaceView<'_>> = self
            .namespaces
            .iter()
            .map(|(_, ns)| NamespaceView::from_namespace(ns))
            .collect();
        let mut keys = namespaces_for_config_change(old.as_ref(), new.as_ref(), views.iter());
        keys.extend(self.namespaces_with_copies_of(&key));
        for ns in &keys {
            self.edited_for(ns, &key);
        }
        if new.is_some() {
            self.dirty_status.insert(key, now);
        } else {
            self.written_status.remove(&key);
            self.status_versions.remove(&key);
            self.dirty_status.remove(&key);
            self.recent_deletes.remove(&key);
        }
        Some(keys)
    }

    /// Folds an event of mirra's copies of `kind`; returns the keys touched
    /// (the echo of mirra's own apply touches none, see `own_writes`).
    pub fn apply_copies(&mut self, kind: &KindId, event: Event<CachedCopy>) -> BTreeSet<String> {
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
            if let Some(new) = &change.new {
                self.created_here.remove(&new.observed.uid);
            }
            let namespace = change.key.namespace.unwrap_or_default();
            let id = (kind.clone(), namespace, change.key.name);
            self.settle_delete(&id);
            let written = self.own_writes.remove(&id);
            if change.new.is_none() {
                self.answers.remove(&copy_hash(&id));
            }
            let version = change.new.as_ref().and_then(CachedCopy::version);
            // The echo of mirra's own write needs no plan, unless a plan of
            // its namespace ran in between: that plan could not see the
            // object (a namespace deleted meanwhile must still prune it).
            let echo = matches!((&written, version), (Some(w), Some(v))
                if w.version == v && self.plans_made.get(&w.home).copied().unwrap_or(0) == w.home_plans);
            if echo {
                continue;
            }
            // Most likely the echo of an apply whose answer is still on its
            // way: settled when it comes (see `in_flight`).
            if let (Some(v), Some(_)) = (version, &change.new)
                && self.hold_event(&id, v, &homes)
            {
                continue;
            }
            keys.extend(homes);
        }
        keys
    }

    /// The resourceVersion the copy cache holds for `id`.
    pub(super) fn cached_version(&self, id: &CopyId) -> Option<&str> {
        self.kinds
            .get(&id.0)
            .and_then(|e| e.copies.get(scope(&id.1), &id.2))
            .and_then(CachedCopy::version)
    }

    /// Counts a plan of `namespace` (see [`OwnWrite::home_plans`]).
    pub fn count_plan(&mut self, namespace: &str) {
        *self.plans_made.entry(namespace.to_string()).or_default() += 1;
    }

    /// Remembers that an apply of this process created the object `uid`
    /// (see `created_here`).
    pub fn remember_created(&mut self, uid: &str) {
        if !uid.is_empty() {
            self.created_here.insert(uid.to_string());
        }
    }

    /// Whether an apply of this process created the object `uid` and its
    /// watch event has not arrived yet.
    pub fn created_here(&self, uid: &str) -> bool {
        self.created_here.contains(uid)
    }

    /// Remembers one of mirra's own applies of a copy (see `own_writes`).
    pub fn record_own_write(&mut self, id: CopyId, mut write: OwnWrite) {
        if write.version.is_empty() {
            return;
        }
        write.home_plans = self.plans_made.get(&write.home).copied().unwrap_or(0);
        self.answers.insert(
            copy_hash(&id),
            (
                fnv64(write.body_hash.as_bytes()),
                fnv64(write.version.as_bytes()),
            ),
        );
        // The echo already arrived (held, or queued): nothing to wait for.
        let echoed = self.settle_held(&id, &write.version);
        if !echoed && self.cached_version(&id) != Some(write.version.as_str()) {
            self.own_writes.insert(id, write);
        }
    }

    /// Whether `op` would send the body of mirra's latest apply of a copy
    /// whose cached version is still the one that apply was answered with
    /// (see `answers`).
    pub(super) fn answered_in_step(&self, op: &Op) -> bool {
        let Op::Apply { target, body, .. } = op else {
            return false;
        };
        let id = super::copy_id(target);
        let Some(version) = self.cached_version(&id) else {
            return false;
        };
        self.answers.get(&copy_hash(&id)).is_some_and(|(b, v)| {
            *v == fnv64(version.as_bytes()) && *b == fnv64(mirra_mirror::body_id(body).as_bytes())
        })
    }

    /// Whether `op` would send again what an own apply not yet echoed
    /// wrote, with nothing newer seen since it was planned.
    pub(super) fn repeats_pending_write(&self, op: &Op) -> bool {
        let Op::Apply { target, body, .. } = op else {
            return false;
        };
        let id = super::copy_id(target);
        self.own_writes.get(&id).is_some_and(|w| {
            w.planned_from.as_deref() == self.cached_version(&id)
                && w.body_hash == mirra_mirror::body_id(body)
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
    pub(super) fn holds_live(&self, id: &CopyId, uid: &str) -> bool {
        let (kind, namespace, name) = id;
        let live = |meta: &kube::api::ObjectMeta| {
            meta.uid.as_deref() == Some(uid) && meta.deletion_timestamp.is_none()
        };
        let in_copies = self
            .kinds
            .get(kind)
            .and_then(|e| e.copies.get(scope(namespace), name))
            .is_some_and(|o| o.observed.uid == uid && !o.observed.deleting);
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
    pub(super) fn settle_delete(&mut self, id: &CopyId) {
        if let Some(uid) = self.deletes_in_flight.get(id)
            && !self.holds_live(id, uid)
        {
            self.deletes_in_flight.remove(id);
        }
    }
}
