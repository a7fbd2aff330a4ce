//! The state changes the engine and the watch tasks ask for by name: when a
//! key first became dirty, the permanent-failure count of a namespace, the
//! status writer's queue and what it learned from the server, and the set
//! of copy and deleteItem watches. Each is one method, so that what the
//! state promises (a status planned from the version it was written on, a
//! watch entry dropped with its task) holds whoever calls.
//!
//! What this module must NOT do: I/O, or decide a write: it keeps the
//! books of what the engine decided and what the server answered.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use kube::api::ApiResource;
use kube::runtime::watcher::Event;
use mirra_mirror::{CompiledConfig, ConfigRef, NamespaceView, SyncConfigStatus};
use mirra_runtime::{Cache, TaskGuard};

use super::{
    CachedCopy, DeleteEntry, DeleteWatchId, KindEntry, KindId, MarkIndex, Resolution, SourceId,
    State,
};

/// A status the writer should send: computed from the caches and the
/// outcomes, different from the stored one.
#[derive(Debug)]
pub struct StatusWrite {
    /// The SyncConfig.
    pub key: ConfigRef,
    /// The status it has now, if any (Events compare against it).
    pub previous: Option<SyncConfigStatus>,
    /// The status to write.
    pub new: SyncConfigStatus,
    /// The resourceVersion the status was planned from: the write's
    /// precondition.
    pub base: Option<String>,
    /// The recently deleted objects `new` counts (see
    /// `State::recent_deletes`): shown once the write lands.
    pub deletes_shown: Vec<mirra_mirror::ObjectKey>,
}

/// What the status planner needs besides the state.
pub struct StatusRound<'a> {
    /// Now, for the debounce ages.
    pub now: Instant,
    /// Whether the work queue still holds or works on keys (when not,
    /// every dirty status is due without looking at namespaces).
    pub busy: bool,
    /// How long a dirty status may wait while the queue is busy.
    pub max_delay: Duration,
    /// The timestamp conditions get when they change.
    pub now_str: &'a str,
    /// Whether a namespace is still queued or being worked on.
    pub is_queued: &'a dyn Fn(&String) -> bool,
}

impl State {
    /// Remembers when each key first became dirty since its last write
    /// (event-to-write latency).
    /// Each of them is planned in full next (see `narrow.rs`).
    pub fn note_dirty<'a>(&mut self, keys: impl IntoIterator<Item = &'a String>, now: Instant) {
        for k in keys {
            self.first_event.entry(k.clone()).or_insert(now);
            self.needs_full_plan(k);
        }
    }

    /// [`State::note_dirty`] for the namespaces a SyncConfig edit touched:
    /// the edit itself said how they are planned next.
    pub fn note_edited<'a>(&mut self, keys: impl IntoIterator<Item = &'a String>, now: Instant) {
        for k in keys {
            self.first_event.entry(k.clone()).or_insert(now);
        }
    }

    /// The verification pass queues `keys`: those no other work has
    /// queued are marked as its own (see `State::verifying`).
    pub fn note_verifying<'a>(
        &mut self,
        keys: impl IntoIterator<Item = &'a String>,
        is_queued: impl Fn(&String) -> bool,
    ) {
        for k in keys {
            if !is_queued(k) {
                self.verifying.insert(k.clone());
            }
        }
    }

    /// Something other than the verification pass queued `keys`: work of
    /// their own is pending. Called after the keys are queued, so a pass
    /// that looks at the queue in between sees them queued and marks none.
    pub fn forget_verifying<'a>(&mut self, keys: impl IntoIterator<Item = &'a String>) {
        for k in keys {
            self.verifying.remove(k);
        }
    }

    /// Whether `key` is queued by the verification pass alone.
    pub fn is_verifying(&self, key: &str) -> bool {
        self.verifying.contains(key)
    }

    /// A worker is done with `key` (called before the queue learns so,
    /// while the key still reads as queued).
    pub fn verified(&mut self, key: &str) {
        self.verifying.remove(key);
    }

    /// The key was processed with nothing left to do: a later event
    /// starts a new latency measurement.
    pub fn forget_dirty(&mut self, key: &str) {
        self.first_event.remove(key);
    }

    /// When the key first became dirty, forgetting it: its writes were
    /// sent, so later writes measure from a later event.
    pub fn take_first_event(&mut self, key: &str) -> Option<Instant> {
        self.first_event.remove(key)
    }

    /// A pass of the namespace ended without a permanent failure.
    pub fn clear_permanent_failures(&mut self, namespace: &str) {
        self.permanent_failures.remove(namespace);
    }

    /// A pass of the namespace ended with a permanent failure: the count of
    /// such passes in a row, the exponent of its retry backoff.
    pub fn count_permanent_failure(&mut self, namespace: &str) -> u32 {
        let n = self
            .permanent_failures
            .entry(namespace.to_string())
            .or_insert(0);
        *n = n.saturating_add(1);
        *n
    }

    /// The statuses due now: each dirty SyncConfig none of whose
    /// namespaces is still being worked on (every dirty one once the queue
    /// is idle), or whose debounce ran out, computed from the outcomes and
    /// kept only where it differs from the stored status. Taken off the
    /// dirty set; a failed write puts its key back
    /// ([`State::status_write_failed`]).
    ///
    /// A namespace waiting to retry a permanent failure (403, 422, ...) is
    /// not work in progress: its outcome is known, and counting it would
    /// hold back the status of every SyncConfig for as long as any write
    /// fails. Nor is a namespace queued by the verification pass alone.
    pub fn plan_statuses(&mut self, round: &StatusRound<'_>) -> Vec<StatusWrite> {
        let now = round.now;
        // The namespaces still worked on, found once a round: a few while
        // the queue drains, where asking each SyncConfig's thousands of
        // namespaces would cost a queue lookup and a selector match each.
        let working: Vec<String> = if round.busy {
            self.namespaces
                .iter()
                .map(|(_, ns)| NamespaceView::from_namespace(ns).name.to_string())
                .filter(|n| {
                    (round.is_queued)(n)
                        && !self.permanent_failures.contains_key(n)
                        && !self.verifying.contains(n)
                })
                .collect()
        } else {
            Vec::new()
        };
        let pending_in = |s: &State, c: &CompiledConfig| {
            working
                .iter()
                .filter(|n| {
                    s.namespaces
                        .get(None, n)
                        .is_some_and(|ns| c.selects(&NamespaceView::from_namespace(ns)))
                })
                .count() as i64
        };
        // Whether the SyncConfig's own namespaces are done; with an idle
        // queue, every one's are, and nothing is counted.
        let quiet = |s: &State, key: &ConfigRef| {
            !round.busy || s.compiled.get(key).is_none_or(|c| pending_in(s, c) == 0)
        };
        // A status written while its namespaces were still pending is
        // computed again once they are done, even if no outcome changed.
        let settled: Vec<ConfigRef> = self
            .pending_status
            .iter()
            .filter(|k| quiet(self, k))
            .cloned()
            .collect();
        for key in settled {
            self.pending_status.remove(&key);
            self.dirty_status.entry(key).or_insert(now);
        }
        let due: Vec<ConfigRef> = self
            .dirty_status
            .iter()
            .filter(|(k, t)| {
                now.saturating_duration_since(**t) >= round.max_delay || quiet(self, k)
            })
            .map(|(k, _)| k.clone())
            .collect();
        // One walk over every namespace's outcomes for all of them.
        let summaries = mirra_mirror::summarize_each(
            &due.iter().cloned().collect(),
            self.outcomes.values().flatten(),
        );
        let mut todo = Vec::new();
        for key in due {
            self.dirty_status.remove(&key);
            let Some(compiled) = self.compiled.get(&key) else {
                continue;
            };
            let pending = pending_in(self, compiled);
            let limit = self.over_limit(&key).map(|e| e.to_string());
            let summary_of = |s: &State| {
                let mut summary = summaries.get(&key).cloned().unwrap_or_default();
                if let Some(recent) = s.recent_deletes.get(&key) {
                    summary.add_recent_deletes(recent.keys());
                }
                // Namespaces it selects that are still queued or being
                // worked on: not Ready until they are done.
                summary.pending = pending;
                summary.limit = limit.clone();
                summary
            };
            if pending > 0 {
                self.pending_status.insert(key.clone());
            } else {
                self.pending_status.remove(&key);
            }
            let previous = self.stored_status(&key);
            // The status to write, if it differs from the stored one.
            let changed = |s: &State| {
                let compiled = s.compiled.get(&key)?;
                let new = mirra_mirror::desired_status(
                    compiled,
                    &summary_of(s),
                    previous.as_ref(),
                    round.now_str,
                );
                mirra_mirror::status_changed(previous.as_ref(), &new).then_some(new)
            };
            let Some(mut new) = changed(self) else {
                continue;
            };
            // The status moves for another reason: deletions a written
            // status showed already are not counted again.
            if let Some(recent) = self.recent_deletes.get_mut(&key)
                && recent.values().any(|shown| *shown)
            {
                recent.retain(|_, shown| !*shown);
                if recent.is_empty() {
                    self.recent_deletes.remove(&key);
                }
                let Some(again) = changed(self) else {
                    continue;
                };
                new = again;
            }
            let base = self.status_base_version(&key);
            let deletes_shown = self
                .recent_deletes
                .get(&key)
                .map(|r| r.keys().cloned().collect())
                .unwrap_or_default();
            todo.push(StatusWrite {
                key,
                previous,
                new,
                base,
                deletes_shown,
            });
        }
        todo
    }

    /// A status write was not sent or failed: planned again.
    pub fn status_write_failed(&mut self, key: &ConfigRef) {
        self.dirty_status.insert(key.clone(), Instant::now());
    }

    /// A status write was refused as planned from an older version: the
    /// version it was written on is forgotten, and it is planned again
    /// once the watch brings the newer one.
    pub fn status_write_stale(&mut self, key: &ConfigRef) {
        self.status_versions.remove(key);
        self.dirty_status.insert(key.clone(), Instant::now());
    }

    /// A status write landed: it is the stored status until the watch
    /// brings it back, and `answered` is the version it made (with `base`,
    /// the one it was planned from).
    pub fn status_written(
        &mut self,
        key: &ConfigRef,
        new: SyncConfigStatus,
        base: Option<String>,
        answered: Option<String>,
        deletes_shown: &[mirra_mirror::ObjectKey],
    ) {
        if !self.compiled.contains_key(key) {
            return;
        }
        if let Some(recent) = self.recent_deletes.get_mut(key) {
            for k in deletes_shown {
                if let Some(shown) = recent.get_mut(k) {
                    *shown = true;
                }
            }
        }
        self.written_status.insert(key.clone(), new);
        if let (Some(base), Some(answered)) = (base, answered) {
            self.status_versions.insert(key.clone(), (base, answered));
        }
    }

    /// Registers an empty SyncConfig cache for a watch scope (`*` for all
    /// namespaces) before any event arrives, so readiness waits for it.
    pub fn register_config_cache(&mut self, scope: &str) {
        self.configs.entry(scope.to_string()).or_default();
    }

    /// Whether the Namespace cache and every SyncConfig cache hold their
    /// initial lists.
    pub fn configs_listed(&self) -> bool {
        self.namespaces.initial_list_done()
            && !self.configs.is_empty()
            && self.configs.values().all(Cache::initial_list_done)
    }

    /// Drops every copy and deleteItem watch entry (and so aborts their
    /// tasks).
    pub fn drop_watches(&mut self) {
        self.kinds.clear();
        self.deletes.clear();
        self.sources.clear();
    }

    /// Folds one event of a kind's copies watch: the keys to plan again,
    /// and whether the kind's last copy is gone (the kind manager then
    /// drops the watch unless a SyncConfig still names the kind).
    pub fn copies_event(
        &mut self,
        kind: &KindId,
        event: Event<CachedCopy>,
    ) -> (BTreeSet<String>, bool) {
        // Any answer means the kind can be read again.
        let mut keys = self.set_copies_unavailable(kind, None);
        let changed = self.apply_copies(kind, event);
        let emptied = self.kinds.get(kind).is_some_and(|e| {
            (e.swept || !changed.is_empty()) && e.copies.initial_list_done() && e.copies.is_empty()
        });
        keys.extend(changed);
        (keys, emptied)
    }

    /// Replaces, in place, the task of every copy and deleteItem watch
    /// refused after its list was allowed; the entries and their caches
    /// stay.
    pub fn restart_refused_watches(
        &mut self,
        mut copies: impl FnMut(&KindId, &ApiResource) -> TaskGuard,
        mut deletes: impl FnMut(&DeleteWatchId, &ApiResource) -> TaskGuard,
    ) {
        let refused = |u: &Option<super::Unavailable>| u.as_ref().is_some_and(|u| u.on_watch);
        for (kind, e) in self.kinds.iter_mut() {
            if let (true, Resolution::Served(ar)) = (refused(&e.unavailable), &e.resolution) {
                // Replacing the handle aborts the old watcher.
                e.task = Some(copies(kind, ar));
            }
        }
        for (id, d) in self.deletes.iter_mut() {
            if let (true, Some(ar)) = (refused(&d.unavailable), &d.resource) {
                d.task = Some(deletes(id, ar));
            }
        }
    }

    /// Makes the watch entries match what the SyncConfigs name: drops the
    /// unwanted ones, adds a pending entry for each new kind. Returns the
    /// kinds to resolve, the deleteItem watches and the copyItem source
    /// watches to start.
    pub fn align_watches(&mut self) -> (Vec<KindId>, Vec<DeleteWatchId>, Vec<SourceId>) {
        let wanted = self.wanted_kinds();
        self.kinds.retain(|k, _| wanted.contains(k));
        let missing: Vec<KindId> = wanted
            .into_iter()
            .filter(|k| !self.kinds.contains_key(k))
            .collect();
        for k in &missing {
            self.kinds.insert(
                k.clone(),
                KindEntry {
                    resolution: Resolution::Pending,
                    unavailable: None,
                    copies: Cache::new(),
                    marked: MarkIndex::default(),
                    task: None,
                    swept: false,
                    cluster: false,
                },
            );
        }
        let wanted_del = self.wanted_delete_watches();
        self.deletes.retain(|k, _| wanted_del.contains(k));
        let missing_del: Vec<DeleteWatchId> = wanted_del
            .into_iter()
            .filter(|k| !self.deletes.contains_key(k))
            .collect();
        (missing, missing_del, self.align_source_watches())
    }

    /// Discovery answered for a kind: its resolution and watch are kept,
    /// and the namespaces whose items name it are returned to plan.
    pub fn kind_resolved(
        &mut self,
        kind: &KindId,
        resolution: Resolution,
        cluster: bool,
        task: Option<TaskGuard>,
    ) -> BTreeSet<String> {
        if let Some(e) = self.kinds.get_mut(kind) {
            e.resolution = resolution;
            e.task = task;
            e.cluster = cluster;
        }
        self.users_of_kind(kind)
    }

    /// Drops a kind's entry (discovery failed: it is asked again).
    pub fn forget_kind(&mut self, kind: &KindId) {
        self.kinds.remove(kind);
    }

    /// Whether discovery found `kind` cluster-scoped.
    pub fn is_cluster_kind(&self, kind: &KindId) -> bool {
        self.kinds.get(kind).is_some_and(|e| e.cluster)
    }

    /// How a kind in use resolved, if it is in use.
    pub fn kind_resolution(&self, kind: &KindId) -> Option<Resolution> {
        self.kinds.get(kind).map(|e| e.resolution.clone())
    }

    /// Starts keeping a deleteItem watch and its (empty) cache.
    pub fn add_delete_watch(
        &mut self,
        id: DeleteWatchId,
        resource: Option<ApiResource>,
        task: Option<TaskGuard>,
    ) {
        self.deletes.insert(
            id,
            DeleteEntry {
                resource,
                unavailable: None,
                objects: Cache::new(),
                task,
            },
        );
    }

    /// Drops every kind whose discovery failed, so that the kind manager
    /// asks again (a CRD may have been installed); whether any was.
    pub fn forget_failed_kinds(&mut self) -> bool {
        let before = self.kinds.len();
        self.kinds
            .retain(|_, e| !matches!(e.resolution, Resolution::Failed(_)));
        self.kinds.len() != before
    }

    /// A kind the start-up sweep found copies of: watched like a named
    /// kind until no copy is left. False when a SyncConfig named the kind
    /// meanwhile (its own entry serves).
    pub fn add_swept_kind(&mut self, kind: &KindId, ar: &ApiResource, cluster: bool) -> bool {
        if self
            .kinds_in_use_by_group()
            .contains(&(ar.group.clone(), ar.kind.clone()))
        {
            return false;
        }
        self.kinds.insert(
            kind.clone(),
            KindEntry {
                resolution: Resolution::Served(ar.clone()),
                unavailable: None,
                copies: Cache::new(),
                marked: MarkIndex::default(),
                task: None,
                swept: true,
                cluster,
            },
        );
        true
    }

    /// Keeps the watch task feeding a kind's copies (dropped with the
    /// entry).
    pub fn set_copies_task(&mut self, kind: &KindId, task: TaskGuard) {
        if let Some(e) = self.kinds.get_mut(kind) {
            e.task = Some(task);
        }
    }
}
