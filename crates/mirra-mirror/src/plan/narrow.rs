//! Planning one namespace for some of its SyncConfigs only: what an edit of
//! one SyncConfig costs in each namespace it selects, instead of a plan of
//! every item there.
//!
//! Sound only when the namespace's last plan is still true for the other
//! SyncConfigs: the caller passes that plan's outcomes and promises that
//! nothing but the SyncConfigs in `only` changed since (no namespace,
//! copy or discovery event), and that its writes all went through. When
//! the changed SyncConfigs and the others touch a common object (a
//! conflict, a deleteItem of another's copy, a copy changing hands), the
//! others' outcomes could change too: the narrow plan declines and the
//! caller plans the whole namespace.
//!
//! This module must NOT decide when a narrow plan may be tried (the caller
//! knows the events since the last plan) nor plan anything itself: it runs
//! the full planner on the changed SyncConfigs with the namespace's
//! objects cut down to what they own.

use super::*;

/// Plans namespace `name` for the SyncConfigs in `only`, given `previous`,
/// the outcomes of its last plan (every SyncConfig's). The arguments are
/// those of [`plan_namespace_full`]; `configs` may hold every SyncConfig
/// (those outside `only` are ignored).
///
/// The plan holds the writes of `only` and the outcomes of `only`; the
/// namespace's outcomes are then [`merge_outcomes`] of `previous` and
/// these. `None` when a narrow plan would not be the full plan's share:
/// the namespace is gone, inactive or excluded; `only` and the others want,
/// delete or hold a common object, now or in `previous`; or a conflict
/// involved them.
#[allow(clippy::too_many_arguments)] // The full planner's arguments, and what narrows them.
pub fn plan_namespace_narrow(
    name: &str,
    ns: Option<&NamespaceView<'_>>,
    configs: &[CompiledConfig],
    only: &BTreeSet<ConfigRef>,
    previous: &[ItemOutcome],
    observed: &dyn ObservedLookup,
    excluded: &dyn Fn(&str) -> bool,
    honoured: &dyn Fn(&ConfigRef) -> bool,
    cluster_scoped: &dyn Fn(&str, &str) -> bool,
) -> Option<NamespacePlan> {
    if excluded(name) || !ns.is_some_and(|v| v.active) {
        return None;
    }
    let involved = |o: &ItemOutcome| {
        only.contains(&o.config)
            || o.contenders.iter().any(|c| only.contains(c))
            || matches!(&o.state, OutcomeState::Conflict { winner, .. } if only.contains(winner))
    };
    for o in previous {
        if only.contains(&o.config) {
            if !o.contenders.is_empty() || matches!(o.state, OutcomeState::Conflict { .. }) {
                return None;
            }
        } else if involved(o) {
            return None;
        }
    }
    let mine: Vec<&CompiledConfig> = configs.iter().filter(|c| only.contains(&c.key)).collect();
    let lookup = OwnedBy { observed, only };
    let plan = super::namespace::plan_configs(
        name,
        ns,
        &mine,
        &lookup,
        excluded,
        honoured,
        cluster_scoped,
    );
    // Whether an object the changed SyncConfigs name, before or now, is
    // one the others' outcomes name. Their objects are the few: the
    // others' are all the rest of the namespace's, so they are the ones
    // scanned rather than hashed into a set.
    let changed_targets: Vec<(&str, &str, &str, &str)> = previous
        .iter()
        .filter(|o| only.contains(&o.config))
        .chain(plan.outcomes.iter())
        .map(|o| borrowed_key(&o.target))
        .collect();
    let touches_others = previous
        .iter()
        .filter(|o| !only.contains(&o.config))
        .any(|o| changed_targets.contains(&borrowed_key(&o.target)));
    if touches_others || plan.outcomes.iter().any(|o| !only.contains(&o.config)) {
        return None;
    }
    Some(plan)
}

/// The outcomes of a namespace after a narrow plan: `previous` with the
/// outcomes of the SyncConfigs in `only` replaced by `narrowed`, in the
/// order [`plan_namespace_full`] gives.
pub fn merge_outcomes(
    mut previous: Vec<ItemOutcome>,
    only: &BTreeSet<ConfigRef>,
    mut narrowed: Vec<ItemOutcome>,
) -> Vec<ItemOutcome> {
    let order = |a: &ItemOutcome, b: &ItemOutcome| {
        (&a.config, a.item, &a.target).cmp(&(&b.config, b.item, &b.target))
    };
    // One SyncConfig (an edit): its outcomes stand together, as the order
    // is by SyncConfig first, and are replaced in place; no second vector,
    // no sort of the namespace's every outcome.
    if let (1, Some(config)) = (only.len(), only.first())
        && narrowed.iter().all(|o| o.config == *config)
    {
        let start = previous.partition_point(|o| o.config < *config);
        let end = start
            + previous[start..]
                .iter()
                .take_while(|o| o.config == *config)
                .count();
        narrowed.sort_by(order);
        previous.splice(start..end, narrowed);
        return previous;
    }
    let mut merged: Vec<ItemOutcome> = previous
        .into_iter()
        .filter(|o| !only.contains(&o.config))
        .chain(narrowed)
        .collect();
    merged.sort_by(order);
    merged
}

fn borrowed_key(t: &ObjectRef) -> (&str, &str, &str, &str) {
    (group_of(&t.api_version), &t.kind, &t.namespace, &t.name)
}

/// The namespace's objects as the changed SyncConfigs see them: any object
/// by identity, but only their own copies (by the owner mark, whoever
/// wrote it) when the planner looks for copies to prune. The others'
/// copies are theirs to prune, and their last plan did.
struct OwnedBy<'a> {
    observed: &'a dyn ObservedLookup,
    only: &'a BTreeSet<ConfigRef>,
}

impl ObservedLookup for OwnedBy<'_> {
    fn get(&self, key: &ObjectKey) -> Option<&ObservedObject> {
        self.observed.get(key)
    }

    fn objects(&self) -> Box<dyn Iterator<Item = &ObservedObject> + '_> {
        Box::new(self.observed.objects().filter(|o| {
            o.annotations
                .get(OWNER_ANNOTATION)
                .and_then(|a| a.split_once('/'))
                .is_some_and(|(ns, name)| {
                    self.only
                        .iter()
                        .any(|c| c.namespace == ns && c.name == name)
                })
        }))
    }

    fn verified(&self, key: &ObjectKey, config: &ConfigRef, item: ItemRef) -> bool {
        self.observed.verified(key, config, item)
    }
}
