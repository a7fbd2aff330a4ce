//! Planning from the caches: the observed objects of a namespace, the plan for
//! it, holding back SyncConfigs over a limit, and the target of each write.
//!
//! This module must NOT read anything from the API server: plans come from the
//! watch caches only.

use super::*;

impl State {
    /// What the caches hold for one namespace, as the planner reads it.
    /// For a plan narrowed to the SyncConfigs `only`, just the objects it
    /// can look at: theirs, and any named as their items name objects
    /// there (a superset: the narrow planner looks further by identity
    /// and owner only).
    pub fn observed_in(
        &self,
        namespace: &str,
        only: Option<&BTreeSet<ConfigRef>>,
    ) -> NamespaceObserved<'_> {
        let mut set = NamespaceObserved {
            objects: BTreeMap::new(),
            stamps: &self.config_stamps,
        };
        let admits = only.map(|only| self.narrow_filter(namespace, only));
        let mut insert = |copy: Arc<ObservedObject>, verified: Vouch| {
            if admits.as_ref().is_none_or(|f| f.admits(&copy)) {
                set.objects.insert(copy.key(), (copy, verified));
            }
        };
        // deleteItem objects first: when the same object is also a copy,
        // the full copy (inserted after) replaces the metadata-only entry.
        for d in self.deletes.values() {
            let Some(ar) = &d.resource else { continue };
            for o in d.objects.in_namespace(namespace) {
                if let Some(obs) = observed_from_meta(o, ar) {
                    insert(Arc::new(obs), None);
                }
            }
        }
        // The names the syncItems of cluster-scoped kinds want here: the
        // planner must see who holds them, whichever namespace that is for.
        // A narrow plan admits no name but its own SyncConfigs' (see
        // `NarrowFilter`), so only theirs are looked for.
        let view = self
            .namespaces
            .get(None, namespace)
            .map(NamespaceView::from_namespace);
        let mut cluster_names: BTreeSet<(KindId, String)> = BTreeSet::new();
        let looked_at: Box<dyn Iterator<Item = &CompiledConfig>> = match only {
            Some(only) => Box::new(only.iter().filter_map(|k| self.compiled.get(k))),
            None => Box::new(self.compiled.values()),
        };
        if let Some(view) = &view {
            for c in looked_at.filter(|c| c.selects(view)) {
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
        let mut insert_copy = |c: &CachedCopy| insert(c.observed.clone(), c.verified);
        for (kind, e) in &self.kinds {
            let Resolution::Served(_) = &e.resolution else {
                continue;
            };
            if e.cluster {
                // Cluster-scoped copies have no namespace: the ones made
                // for this namespace are found by their mark, through the
                // index (reads only this namespace's copies).
                for key in e.marked.marked_for(namespace) {
                    if let Some(c) = e.copies.get_key(key) {
                        insert_copy(c);
                    }
                }
                for (_, name) in cluster_names.iter().filter(|(k, _)| k == kind) {
                    if let Some(c) = e.copies.get(None, name) {
                        insert_copy(c);
                    }
                }
                continue;
            }
            match &admits {
                None => e.copies.in_namespace(namespace).for_each(&mut insert_copy),
                // A narrow plan's copies, found by name; the namespace's
                // copies are read only when its SyncConfigs own more of
                // them than their items name (say, an item was removed).
                Some(filter) => {
                    let mut owned_by_name = 0;
                    for name in &filter.names {
                        if let Some(c) = e.copies.get(Some(namespace), name) {
                            owned_by_name += u32::from(filter.owns(&c.observed));
                            insert_copy(c);
                        }
                    }
                    let owned: u32 = filter
                        .owners
                        .iter()
                        .map(|o| e.marked.owned_in(o, namespace))
                        .sum();
                    if owned > owned_by_name {
                        e.copies.in_namespace(namespace).for_each(&mut insert_copy);
                    }
                }
            }
        }
        for ((kind, ns, name), uid) in &self.deletes_in_flight {
            if ns != namespace && !ns.is_empty() {
                continue;
            }
            let key = mirra_mirror::ObjectRef {
                api_version: kind.0.as_str().into(),
                kind: kind.1.as_str().into(),
                namespace: ns.as_str().into(),
                name: name.as_str().into(),
            }
            .key();
            if let Some((obs, verified)) = set.objects.get_mut(&key)
                && obs.uid == *uid
            {
                // Deleted already, the watch just has not said so: to the
                // planner it is terminating (no second delete, no apply
                // racing the deletion).
                Arc::make_mut(obs).deleting = true;
                *verified = None;
            }
        }
        set
    }

    /// Remembers, on the cached copies, what a plan just verified (see
    /// [`Plan::claims`]); the next plans of the namespace take those copies
    /// as in step without rendering them, until the copy or its SyncConfig
    /// changes. A claim is kept only on the very cache entry the plan
    /// compared.
    pub fn remember_verified(&mut self, claims: Vec<Claim>) {
        for claim in claims {
            let Some(entry) = self.kinds.get_mut(&claim.kind) else {
                continue;
            };
            if let Some(copy) = entry.copies.get_key_mut(&claim.key)
                && Arc::ptr_eq(&copy.observed, &claim.compared)
            {
                copy.verified = Some((claim.stamp, claim.item));
            }
        }
    }

    /// The plan alone, for tests.
    #[cfg(test)]
    pub fn plan(&self, namespace: &str, settings: &Settings) -> NamespacePlan {
        self.plan_with_claims(namespace, settings).plan
    }

    /// A full plan of one namespace (see [`State::plan_scoped`]).
    #[cfg(test)]
    pub fn plan_with_claims(&self, namespace: &str, settings: &Settings) -> Plan {
        self.plan_scoped(namespace, settings, None)
    }

    /// Plans one namespace from the caches, with the ops on kinds the
    /// server does not serve, or that `--allow-kind` does not allow, turned
    /// into failed outcomes (the pure planner knows neither discovery nor
    /// the flags), and what the plan verified, for
    /// [`State::remember_verified`].
    ///
    /// With `only`, the plan is narrowed to those SyncConfigs where that
    /// gives the full plan's share (see `narrow.rs`): it then holds their
    /// writes and outcomes alone, and says so in [`Plan::narrowed`].
    pub fn plan_scoped(
        &self,
        namespace: &str,
        settings: &Settings,
        only: Option<&BTreeSet<ConfigRef>>,
    ) -> Plan {
        let ns = self.namespaces.get(None, namespace);
        let view = ns.map(NamespaceView::from_namespace);
        let excluded = |n: &str| settings.never_write.contains(n);
        let honoured = |c: &ConfigRef| settings.honours(&c.namespace);
        let cluster_scoped = |api_version: &str, kind: &str| {
            self.kinds
                .get(&(api_version.to_string(), kind.to_string()))
                .is_some_and(|e| e.cluster)
        };
        let narrow = only.and_then(|only| {
            let observed = self.observed_in(namespace, Some(only));
            let previous = self.outcomes.get(namespace).map_or(&[][..], Vec::as_slice);
            let plan = mirra_mirror::plan_namespace_narrow(
                namespace,
                view.as_ref(),
                &self.compiled_list,
                only,
                previous,
                &observed,
                &excluded,
                &honoured,
                &cluster_scoped,
            )?;
            Some((plan, only.clone(), observed))
        });
        // A narrow plan that declined is made in full, from every object.
        let (mut plan, narrowed, observed) = match narrow {
            Some((plan, only, observed)) => (plan, Some(only), observed),
            None => {
                let observed = self.observed_in(namespace, None);
                let plan = plan_namespace_full(
                    namespace,
                    view.as_ref(),
                    &self.compiled_list,
                    &observed,
                    &excluded,
                    &honoured,
                    &cluster_scoped,
                );
                (plan, None, observed)
            }
        };
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
        let reviews = self.hold_unreadable(&mut plan);
        let claims = plan
            .verified
            .iter()
            .filter_map(|(target, config, item)| {
                let key = target.key();
                Some(Claim {
                    kind: (target.api_version.to_string(), target.kind.to_string()),
                    key: mirra_runtime::ObjectKey {
                        namespace: scope(&target.namespace).map(str::to_string),
                        name: target.name.to_string(),
                    },
                    compared: observed.objects.get(&key)?.0.clone(),
                    stamp: *self.config_stamps.get(config)?,
                    item: *item,
                })
            })
            .collect();
        Plan {
            plan,
            claims,
            reviews,
            narrowed,
        }
    }

    /// Takes the writes of SyncConfigs over a limit out of `plan`: nothing
    /// of such a SyncConfig is created, updated, pruned or deleted. Its
    /// existing copies are not touched, whatever their content: updating
    /// them would write the very bytes the limit is there to stop (an item
    /// that grew), and pruning after a selector mistake would delete the
    /// copies the old selector wanted. Conflicts are still decided as
    /// usual, so no other SyncConfig takes its objects over meanwhile.
    pub(super) fn hold_over_limit(&self, plan: &mut NamespacePlan) {
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
            if held.contains(&o.config) && o.state.plans_a_write() {
                o.state = OutcomeState::Held;
            }
        }
    }

    /// The cached form of the object `op` writes, when the caches hold it
    /// (a dry run's report says what differs).
    pub fn observed_target(&self, op: &Op) -> Option<Arc<ObservedObject>> {
        let t = op.target();
        self.kinds
            .get(&(t.api_version.to_string(), t.kind.to_string()))?
            .copies
            .get(scope(&t.namespace), &t.name)
            .map(|c| c.observed.clone())
    }

    /// Where to send `op`, and what the cache holds of its object.
    pub fn write_target(&self, op: &Op) -> Option<WriteTarget> {
        let t = op.target();
        let entry = self
            .kinds
            .get(&(t.api_version.to_string(), t.kind.to_string()));
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
            uid: cached
                .map(|o| o.observed.uid.clone())
                .filter(|u| !u.is_empty()),
            version: cached.and_then(CachedCopy::version).map(str::to_string),
        })
    }
}

/// The objects a plan narrowed to some SyncConfigs can look at.
pub struct NarrowFilter {
    /// Their owner marks, as the annotation writes them.
    owners: Vec<String>,
    /// The names their items give objects in the namespace.
    names: BTreeSet<String>,
}

impl NarrowFilter {
    fn admits(&self, o: &ObservedObject) -> bool {
        self.names.contains(&o.name) || self.owns(o)
    }

    /// Whether `o`'s owner mark names one of the SyncConfigs.
    fn owns(&self, o: &ObservedObject) -> bool {
        o.annotations
            .get(mirra_mirror::OWNER_ANNOTATION)
            .is_some_and(|a| self.owners.iter().any(|w| w == a))
    }
}

impl State {
    fn narrow_filter(&self, namespace: &str, only: &BTreeSet<ConfigRef>) -> NarrowFilter {
        let mut names = BTreeSet::new();
        for c in only.iter().filter_map(|k| self.compiled.get(k)) {
            let Ok(spec) = &c.spec else { continue };
            let templates = spec
                .sync_items
                .iter()
                .map(|i| &i.name)
                .chain(spec.copy_items.iter().map(|i| &i.target_name))
                .chain(spec.delete_items.iter().map(|i| &i.name));
            names.extend(templates.map(|t| mirra_mirror::template::template_str(t, namespace)));
        }
        NarrowFilter {
            owners: only.iter().map(ToString::to_string).collect(),
            names,
        }
    }
}

/// What a cached copy was verified in step with: a SyncConfig's stamp
/// and one of its items.
type Vouch = Option<(u64, ItemRef)>;

/// The objects the caches hold for one namespace, shared with the caches,
/// and what earlier plans verified of them.
pub struct NamespaceObserved<'a> {
    objects: BTreeMap<mirra_mirror::ObjectKey, (Arc<ObservedObject>, Vouch)>,
    stamps: &'a BTreeMap<ConfigRef, u64>,
}

impl ObservedLookup for NamespaceObserved<'_> {
    fn get(&self, key: &mirra_mirror::ObjectKey) -> Option<&ObservedObject> {
        self.objects.get(key).map(|(o, _)| &**o)
    }

    fn objects(&self) -> Box<dyn Iterator<Item = &ObservedObject> + '_> {
        Box::new(self.objects.values().map(|(o, _)| &**o))
    }

    fn verified(&self, key: &mirra_mirror::ObjectKey, config: &ConfigRef, item: ItemRef) -> bool {
        self.objects
            .get(key)
            .and_then(|(_, v)| *v)
            .is_some_and(|(stamp, i)| i == item && self.stamps.get(config) == Some(&stamp))
    }
}

/// A plan, and what it verified.
pub struct Plan {
    /// The plan.
    pub plan: NamespacePlan,
    /// The copies the plan rendered and found in step.
    pub claims: Vec<Claim>,
    /// Access reviews the plan waits for (tenant accounts).
    pub reviews: Vec<AccessKey>,
    /// The SyncConfigs a narrow plan covers (`None`: every one).
    pub narrowed: Option<BTreeSet<ConfigRef>>,
}

/// One copy a plan found in step with a (SyncConfig version, item).
pub struct Claim {
    kind: KindId,
    key: mirra_runtime::ObjectKey,
    /// The cached form the plan compared.
    compared: Arc<ObservedObject>,
    stamp: u64,
    item: ItemRef,
}
