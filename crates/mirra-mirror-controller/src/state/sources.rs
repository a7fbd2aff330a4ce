//! The sources of copyItems: one watch per source object (in its namespace,
//! selected by a field selector on its name), the object as last read, and
//! what a change of it means: the SyncConfigs naming it are resolved again,
//! and one whose copies change reaches the planner like an edited
//! SyncConfig (its stamp changes, so no earlier verification vouches for a
//! copy of the old content, and only the namespaces it selects or holds
//! copies in are planned).
//!
//! What this module must NOT do: plan, write, or read the API server. A
//! source costs one watch, however many SyncConfigs and namespaces use it,
//! and no read per event.

use super::*;

use mirra_mirror::{ObjectRef, SourceState};

/// A copyItem's source: its kind, namespace and name.
pub type SourceId = (KindId, String, String);

/// The source of `r`, as the watches key it.
pub(super) fn source_id(r: &ObjectRef) -> SourceId {
    (
        (r.api_version.clone(), r.kind.clone()),
        r.namespace.clone(),
        r.name.clone(),
    )
}

/// One source watch and the object it read.
pub struct SourceEntry {
    /// Why the source cannot be watched at all (its kind is not served, or
    /// is cluster-scoped); `None` once the watch runs.
    pub unusable: Option<String>,
    /// The resource the watch reads (for restarting a refused watch).
    pub resource: Option<ApiResource>,
    /// Set while the watch is refused (403, 404).
    pub unavailable: Option<Unavailable>,
    /// The watch has answered its first list.
    listed: bool,
    /// The source as last read (`None`: there is no such object).
    object: Option<Value>,
    /// The object a relist in progress has brought so far.
    relisting: Option<Value>,
    /// The watch feeding this entry; aborted when the entry is dropped.
    #[allow(dead_code)] // held for its Drop
    pub task: Option<TaskGuard>,
}

impl State {
    /// The source watches the compiled SyncConfigs need.
    pub fn wanted_source_watches(&self) -> BTreeSet<SourceId> {
        self.compiled
            .values()
            .flat_map(CompiledConfig::sources)
            .map(source_id)
            .collect()
    }

    /// What is known of the source `r`, for [`CompiledConfig::resolve_sources`].
    pub fn source_state(&self, r: &ObjectRef) -> SourceState<'_> {
        let Some(e) = self.sources.get(&source_id(r)) else {
            return SourceState::Unknown;
        };
        if let Some(why) = &e.unusable {
            return SourceState::Unreadable(why);
        }
        if let Some(u) = &e.unavailable {
            return SourceState::Unreadable(&u.reason);
        }
        match (&e.object, e.listed) {
            (_, false) => SourceState::Unknown,
            (Some(o), true) => SourceState::Found(o),
            (None, true) => SourceState::Missing,
        }
    }

    /// Whether every source watch that can answer has listed.
    pub(super) fn sources_listed(&self) -> bool {
        self.wanted_source_watches()
            .iter()
            .all(|id| match self.sources.get(id) {
                None => false,
                Some(e) => e.unusable.is_some() || e.unavailable.is_some() || e.listed,
            })
    }

    /// Drops the source watches no SyncConfig names; returns the ones to
    /// start.
    pub(super) fn align_source_watches(&mut self) -> Vec<SourceId> {
        let wanted = self.wanted_source_watches();
        self.sources.retain(|id, _| wanted.contains(id));
        wanted
            .into_iter()
            .filter(|id| !self.sources.contains_key(id))
            .collect()
    }

    /// Starts keeping a source watch: `resource` is where it reads, or why
    /// it cannot. Returns the namespaces to plan again.
    pub fn add_source_watch(
        &mut self,
        id: SourceId,
        resource: Result<ApiResource, String>,
        task: Option<TaskGuard>,
        now: Instant,
    ) -> BTreeSet<String> {
        let (resource, unusable) = match resource {
            Ok(ar) => (Some(ar), None),
            Err(why) => (None, Some(why)),
        };
        self.sources.insert(
            id.clone(),
            SourceEntry {
                unusable,
                resource,
                unavailable: None,
                listed: false,
                object: None,
                relisting: None,
                task,
            },
        );
        self.source_changed(&id, now)
    }

    /// Folds one event of a source watch; returns the namespaces to plan
    /// again (none when nothing a copy holds changed).
    pub fn apply_source(
        &mut self,
        id: &SourceId,
        event: Event<DynamicObject>,
        now: Instant,
    ) -> BTreeSet<String> {
        let Some(e) = self.sources.get_mut(id) else {
            return BTreeSet::new();
        };
        // Any answer means the source can be read again.
        e.unavailable = None;
        let as_value = |mut o: DynamicObject| {
            o.metadata.managed_fields = None;
            serde_json::to_value(o).ok()
        };
        match event {
            Event::Init => e.relisting = None,
            Event::InitApply(o) => e.relisting = as_value(o),
            Event::InitDone => {
                e.object = e.relisting.take();
                e.listed = true;
            }
            Event::Apply(o) => e.object = as_value(o),
            Event::Delete(_) => e.object = None,
        }
        self.source_changed(id, now)
    }

    /// Records whether a source watch is refused; returns the namespaces to
    /// plan again.
    pub fn set_source_unavailable(
        &mut self,
        id: &SourceId,
        value: Option<Unavailable>,
        now: Instant,
    ) -> BTreeSet<String> {
        match self.sources.get_mut(id) {
            Some(e) if e.unavailable != value => e.unavailable = value,
            _ => return BTreeSet::new(),
        }
        self.source_changed(id, now)
    }

    /// Replaces, in place, the task of every source watch refused after
    /// its list was allowed (see [`State::restart_refused_watches`]).
    pub fn restart_refused_source_watches(
        &mut self,
        mut start: impl FnMut(&SourceId, &ApiResource) -> TaskGuard,
    ) {
        for (id, e) in self.sources.iter_mut() {
            if let (Some(u), Some(ar)) = (&e.unavailable, &e.resource)
                && u.on_watch
            {
                e.task = Some(start(id, ar));
            }
        }
    }

    /// Resolves again every SyncConfig naming the source `id`; returns the
    /// namespaces whose plans that changes.
    fn source_changed(&mut self, id: &SourceId, now: Instant) -> BTreeSet<String> {
        let users: Vec<ConfigRef> = self
            .compiled
            .iter()
            .filter(|(_, c)| c.sources().any(|r| source_id(r) == *id))
            .map(|(k, _)| k.clone())
            .collect();
        let mut keys = BTreeSet::new();
        for key in users {
            let Some(mut config) = self.compiled.get(&key).cloned() else {
                continue;
            };
            config.resolve_sources(&|r| self.source_state(r));
            if let Some(touched) = self.replace_compiled(key, Some(config), now) {
                keys.extend(touched);
            }
        }
        keys
    }

    /// Number of source objects held, for the metrics.
    pub(super) fn sources_held(&self) -> usize {
        self.sources.values().filter(|e| e.object.is_some()).count()
    }
}
