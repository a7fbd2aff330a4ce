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

/// A watched object: its kind, namespace and name, and the user it is read
/// as (`None`: mirra itself; a tenant SyncConfig's sources are read as its
/// ServiceAccount, so the server decides what it may copy).
pub type SourceId = (KindId, String, String, Option<String>);

/// The object `r` read as `user`, as the watches key it.
pub(super) fn source_id(r: &ObjectRef, user: Option<&str>) -> SourceId {
    (
        (r.api_version.to_string(), r.kind.to_string()),
        r.namespace.to_string(),
        r.name.to_string(),
        user.map(str::to_string),
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

/// The source watches `configs` need (see [`State::wanted_source_watches`]).
pub(super) fn source_watches_of<'a>(
    configs: impl Iterator<Item = &'a CompiledConfig>,
) -> BTreeSet<SourceId> {
    let mut out = BTreeSet::new();
    for c in configs {
        let user = c.impersonated_user();
        out.extend(c.sources().map(|r| source_id(r, user.as_deref())));
        out.extend(c.identity().map(|r| source_id(&r, None)));
    }
    out
}

impl State {
    /// The watches the compiled SyncConfigs need: their copyItems'
    /// sources (as their ServiceAccount, when they name one) and the
    /// ServiceAccounts they name (as mirra, to know whether they exist).
    pub fn wanted_source_watches(&self) -> BTreeSet<SourceId> {
        self.wanted.sources.clone()
    }

    /// Resolves `config`'s sources and ServiceAccount from the watches.
    pub(super) fn resolve(&self, config: &mut CompiledConfig) {
        let user = config.impersonated_user();
        let identity = config.identity();
        config.resolve_sources(&|r| {
            let as_user = if Some(r) == identity.as_ref() {
                None
            } else {
                user.as_deref()
            };
            self.source_state(r, as_user)
        });
    }

    /// What is known of the object `r` read as `user`, for
    /// [`CompiledConfig::resolve_sources`].
    pub fn source_state(&self, r: &ObjectRef, user: Option<&str>) -> SourceState<'_> {
        let Some(e) = self.sources.get(&source_id(r, user)) else {
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
        self.wanted
            .sources
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
            .filter(|(_, c)| {
                let user = c.impersonated_user();
                c.sources().any(|r| source_id(r, user.as_deref()) == *id)
                    || c.identity().is_some_and(|r| source_id(&r, None) == *id)
            })
            .map(|(k, _)| k.clone())
            .collect();
        let mut keys = BTreeSet::new();
        for key in users {
            let Some(mut config) = self.compiled.get(&key).cloned() else {
                continue;
            };
            self.resolve(&mut config);
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

impl State {
    /// The user a write of `op` is made as: the ServiceAccount its
    /// SyncConfig names (`None`: mirra itself). A copy whose SyncConfig is
    /// gone is pruned as the account its mark names. `Err` when no account
    /// is known for a SyncConfig of a tenant namespace: such a write is not
    /// made with mirra's own rights.
    pub fn acting_user(&self, op: &mirra_mirror::Op) -> Result<Option<String>, String> {
        let config = op.config();
        if let Some(c) = self.compiled.get(config) {
            return Ok(c.impersonated_user());
        }
        let marked = self.observed_target(op).and_then(|o| {
            o.annotations
                .get(mirra_mirror::SERVICE_ACCOUNT_ANNOTATION)
                .map(str::to_string)
        });
        match marked {
            Some(sa) => Ok(Some(format!(
                "system:serviceaccount:{}:{sa}",
                config.namespace
            ))),
            None if self.tenants.contains(config.namespace.as_str()) => Err(format!(
                "the copy belongs to {config} in a tenant namespace and names no \
                 ServiceAccount: mirra does not write it with its own rights"
            )),
            None => Ok(None),
        }
    }
}
