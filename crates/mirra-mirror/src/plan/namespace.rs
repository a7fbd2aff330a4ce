//! Planning one namespace: the copies each SyncConfig wants there, which to
//! apply, adopt, release or delete, conflicts between SyncConfigs, and the
//! outcome of every item.
//!
//! This module must NOT read anything but its arguments (plans come from cached
//! state only), and must NOT limit the number of writes (see
//! [`super::take_turns`]).

use super::*;

pub(super) struct Want<'c> {
    pub(super) config: &'c CompiledConfig,
    pub(super) item: ItemRef,
    pub(super) sync_item: &'c SyncTemplate,
    pub(super) target: ObjectRef,
    /// The rendered copy; `None` when the lookup vouched that the cached
    /// object is in step with it (rendered only if a write needs it).
    pub(super) body: Option<Value>,
    pub(super) contenders: Vec<ConfigRef>,
}

/// Plans one namespace. See the module documentation for the rules.
///
/// `ns` is `None` when the namespace does not exist; `excluded` says whether
/// the operator put a namespace out of mirra's reach.
pub fn plan_namespace(
    ns: Option<&NamespaceView<'_>>,
    configs: &[CompiledConfig],
    observed: &dyn ObservedLookup,
    excluded: &dyn Fn(&str) -> bool,
) -> NamespacePlan {
    plan_namespace_scoped(ns, configs, observed, excluded, &|_| true)
}

/// [`plan_namespace`] for a mirra that honours only some SyncConfigs
/// (`--watch-namespace`): `honoured` says whether a SyncConfig is within
/// its reach. A copy owned by a SyncConfig outside it belongs to someone
/// else (another mirra, or this one before its scope was narrowed): it is
/// never pruned, overwritten or deleted; a syncItem or deleteItem naming
/// that object gets a `Failed` outcome naming the owner. `configs` must hold every honoured
/// SyncConfig, as for [`plan_namespace`].
pub fn plan_namespace_scoped(
    ns: Option<&NamespaceView<'_>>,
    configs: &[CompiledConfig],
    observed: &dyn ObservedLookup,
    excluded: &dyn Fn(&str) -> bool,
    honoured: &dyn Fn(&ConfigRef) -> bool,
) -> NamespacePlan {
    let Some(view) = ns else {
        return NamespacePlan::default();
    };
    plan_namespace_full(
        view.name,
        ns,
        configs,
        observed,
        excluded,
        honoured,
        &|_, _| false,
    )
}

/// [`plan_namespace_scoped`] with kinds of cluster-scoped objects:
/// `cluster_scoped(apiVersion, kind)` says whether a kind is one (the
/// controller knows it from discovery). `name` is the namespace planned,
/// `ns` its view (`None` once it is gone).
///
/// A syncItem of a cluster-scoped kind wants one object per selected
/// namespace, named by its template, without a namespace and marked with
/// [`FOR_NAMESPACE_ANNOTATION`]. The lookup must hold, for this namespace,
/// the cluster-scoped copies whose mark names it (to prune them) and any
/// cluster-scoped object a syncItem here names (to see who holds it).
/// Rules on top of the namespaced ones:
///
/// - The item's name must contain `${PROJECT_NAME}`: otherwise every
///   selected namespace would want the same object, and the item fails in
///   each of them without a write (a conflict decided before any write,
///   so nothing flaps).
/// - An object of that name that is mirra's copy for another namespace is
///   left alone and the item fails naming its holder (the first namespace
///   to have it keeps it). Within one namespace, SyncConfigs contend for a
///   cluster-scoped object as for a namespaced one.
/// - deleteItems of a cluster-scoped kind fail without a delete: the object
///   is shared by the whole cluster, not one namespace's to delete.
/// - Once the namespace is gone (`ns` is `None`), its cluster-scoped copies
///   are pruned as if no SyncConfig selected it; namespaced copies went
///   with the namespace. A namespace being deleted is left alone until it
///   is gone.
pub fn plan_namespace_full(
    name: &str,
    ns: Option<&NamespaceView<'_>>,
    configs: &[CompiledConfig],
    observed: &dyn ObservedLookup,
    excluded: &dyn Fn(&str) -> bool,
    honoured: &dyn Fn(&ConfigRef) -> bool,
    cluster_scoped: &dyn Fn(&str, &str) -> bool,
) -> NamespacePlan {
    let configs: Vec<&CompiledConfig> = configs.iter().collect();
    plan_configs(
        name,
        ns,
        &configs,
        observed,
        excluded,
        honoured,
        cluster_scoped,
    )
}

/// [`plan_namespace_full`] of SyncConfigs by reference: a narrow plan picks
/// some out of the whole list without copying them.
pub(super) fn plan_configs(
    name: &str,
    ns: Option<&NamespaceView<'_>>,
    configs: &[&CompiledConfig],
    observed: &dyn ObservedLookup,
    excluded: &dyn Fn(&str) -> bool,
    honoured: &dyn Fn(&ConfigRef) -> bool,
    cluster_scoped: &dyn Fn(&str, &str) -> bool,
) -> NamespacePlan {
    if excluded(name) || ns.is_some_and(|v| !v.active) {
        return NamespacePlan::default();
    }
    let gone = ns.is_none();
    let mut selecting: Vec<&CompiledConfig> = configs
        .iter()
        .copied()
        .filter(|c| ns.is_some_and(|v| c.selects(v)))
        .collect();
    selecting.sort_by(|a, b| a.precedence().cmp(&b.precedence()));

    let mut outcomes = Vec::new();
    // Losers are recorded first, then attached to the winner's outcome.
    let mut wants: BTreeMap<ObjectKey, Want<'_>> = BTreeMap::new();
    for config in &selecting {
        let Ok(spec) = &config.spec else { continue };
        for item in spec.templates() {
            let item_ref = item.item_ref();
            let cluster = cluster_scoped(&item.api_version, &item.kind);
            // A copy the lookup vouches for is not rendered: only its
            // target is needed, to find contenders. Rendering is what a
            // plan costs (templating, canonical JSON, hashing), and an
            // edit of one SyncConfig re-plans every namespace it selects.
            let vouched = (!cluster)
                .then(|| ObjectRef {
                    api_version: item.api_version.as_str().into(),
                    kind: item.kind.as_str().into(),
                    namespace: name.into(),
                    name: template_str(&item.name, name).into(),
                })
                .filter(|t| observed.verified(&t.key(), &config.key, item_ref));
            let copy = if let Some(reason) = copy_refused(item, name, cluster) {
                Err(reason)
            } else if let Some(target) = vouched {
                Ok((target, None))
            } else if cluster && !item.name.contains(PROJECT_NAME) {
                Err(format!(
                    "{} is cluster-scoped and its name {:?} does not contain {PROJECT_NAME}: \
                     every selected namespace would want the same object (a conflict), so \
                     none is written; template the name per namespace",
                    item.kind, item.name
                ))
            } else {
                desired_copy(config, item, name)
                    .map(|c| if cluster { cluster_copy(c, name) } else { c })
                    .map(|c| (c.target, Some(c.body)))
            };
            match copy {
                Err(reason) => outcomes.push(ItemOutcome {
                    config: config.key.clone(),
                    item: item_ref,
                    target: item_target(&item.api_version, &item.kind, cluster, name, &item.name),
                    state: OutcomeState::Failed { reason },
                    contenders: Vec::new(),
                }),
                Ok((target, body)) => {
                    let key = target.key();
                    if let Some(winner) = wants.get_mut(&key) {
                        winner.contenders.push(config.key.clone());
                        outcomes.push(ItemOutcome {
                            config: config.key.clone(),
                            item: item_ref,
                            target,
                            state: OutcomeState::Conflict {
                                winner: winner.config.key.clone(),
                                winner_item: winner.item,
                            },
                            contenders: Vec::new(),
                        });
                    } else {
                        wants.insert(
                            key,
                            Want {
                                config,
                                item: item_ref,
                                sync_item: item,
                                target,
                                body,
                                contenders: Vec::new(),
                            },
                        );
                    }
                }
            }
        }
    }

    // copyItems whose source cannot be copied now: their copies are kept
    // as they are (neither written nor pruned) until it can.
    let mut held: BTreeSet<ObjectKey> = BTreeSet::new();
    for config in &selecting {
        let Ok(spec) = &config.spec else { continue };
        for item in &spec.copy_items {
            // Not read yet: pending, like a write waiting for its turn, so
            // that the moments before a source watch lists are no failure.
            let state = match &item.resolved {
                CopySource::Copy(_) => continue,
                CopySource::Held(reason) => OutcomeState::Failed {
                    reason: reason.clone(),
                },
                CopySource::Unresolved => OutcomeState::Pending,
            };
            let cluster = cluster_scoped(&item.api_version, &item.kind);
            let target = item_target(
                &item.api_version,
                &item.kind,
                cluster,
                name,
                &item.target_name,
            );
            held.insert(target.key());
            outcomes.push(ItemOutcome {
                config: config.key.clone(),
                item: ItemRef::Copy(item.index),
                target,
                state,
                contenders: Vec::new(),
            });
        }
    }

    let mut applies = Vec::new();
    let mut verified = Vec::new();
    for (key, want) in &wants {
        let seen = observed.get(key);
        // An object that existed before mirra's apply stays marked as
        // adopted; one whose marks mirra did not write is adopted now.
        let adopting = seen.is_some_and(|o| o.adopted() || !o.marks_by_mirra);
        let rendered = || -> Option<Value> {
            let body = match &want.body {
                Some(b) => b.clone(),
                // Vouched for, and needed after all: rendered now. The
                // same inputs rendered before, so this does not fail.
                None => desired_copy(want.config, want.sync_item, name).ok()?.body,
            };
            Some(if adopting {
                with_adopted_mark(&body)
            } else {
                body
            })
        };
        let in_step = |o: &ObservedObject| match &want.body {
            None => true,
            Some(b) if adopting => o.holds(&with_adopted_mark(b)),
            Some(b) => o.holds(b),
        };
        let state = match seen {
            Some(o) if let Some(reason) = foreign_owner(o, honoured) => {
                OutcomeState::Failed { reason }
            }
            Some(o) if let Some(reason) = held_for_another(o, name) => {
                OutcomeState::Failed { reason }
            }
            Some(o) if o.deleting => match held_by_finalizers(o) {
                Some(reason) => OutcomeState::Failed { reason },
                None => OutcomeState::Terminating,
            },
            Some(o) if in_step(o) => {
                if want.body.is_some() {
                    verified.push((want.target.clone(), want.config.key.clone(), want.item));
                }
                OutcomeState::InSync
            }
            _ => match rendered() {
                Some(body) => {
                    applies.push(Op::Apply {
                        target: want.target.clone(),
                        body,
                        config: want.config.key.clone(),
                        force_recreate: want.config.force_recreate,
                        check_adoption: seen.is_none(),
                    });
                    OutcomeState::Applied
                }
                None => OutcomeState::Failed {
                    reason: "the copy could not be rendered again".into(),
                },
            },
        };
        let mut contenders = want.contenders.clone();
        contenders.sort();
        contenders.dedup();
        outcomes.push(ItemOutcome {
            config: want.config.key.clone(),
            item: want.item,
            target: want.target.clone(),
            state,
            contenders,
        });
    }

    let mut deletes: BTreeMap<ObjectKey, Op> = BTreeMap::new();
    for config in &selecting {
        let Ok(spec) = &config.spec else { continue };
        for item in &spec.delete_items {
            let cluster = cluster_scoped(&item.api_version, &item.kind);
            let object_name = template_str(&item.name, name);
            let target = item_target(&item.api_version, &item.kind, cluster, name, &item.name);
            let key = target.key();
            let state = if cluster {
                OutcomeState::Failed {
                    reason: format!(
                        "{} is cluster-scoped: deleteItems delete objects in the selected \
                         namespaces only, and a cluster-wide object is no namespace's to \
                         delete; nothing is deleted",
                        item.kind
                    ),
                }
            } else if let Err(e) =
                check_name(&object_name, strict_name_rule(&item.group, &item.kind))
            {
                OutcomeState::Failed {
                    reason: format!("name {object_name:?} {e}"),
                }
            } else if let Some(winner) = wants.get(&key) {
                OutcomeState::Conflict {
                    winner: winner.config.key.clone(),
                    winner_item: winner.item,
                }
            } else if let Some(reason) = observed.get(&key).and_then(|o| foreign_owner(o, honoured))
            {
                // Its owner would recreate it: deleting it would fight.
                OutcomeState::Failed { reason }
            } else {
                match observed.get(&key) {
                    None => OutcomeState::Gone,
                    Some(o) if o.deleting => OutcomeState::Terminating,
                    Some(o) if o.uid.is_empty() => OutcomeState::Failed {
                        reason: "the observed object has no uid to delete it safely".into(),
                    },
                    Some(o) => {
                        deletes.entry(key).or_insert_with(|| Op::Delete {
                            target: o.object_ref(),
                            uid: o.uid.clone(),
                            cause: DeleteCause::DeleteItem,
                            config: config.key.clone(),
                        });
                        OutcomeState::Deleted
                    }
                }
            };
            outcomes.push(ItemOutcome {
                config: config.key.clone(),
                item: ItemRef::Delete(item.index),
                target,
                state,
                contenders: Vec::new(),
            });
        }
    }

    let unclaimed = |o: &&ObservedObject| {
        let key = o.key();
        o.home() == name
            // Once the namespace is gone only its cluster-scoped copies
            // are left to prune.
            && (!gone || o.namespace.is_empty())
            && !o.deleting
            && !wants.contains_key(&key)
            && !deletes.contains_key(&key)
            && !held.contains(&key)
    };
    // Marks mirra did not write: nobody's copy. Said on the SyncConfig
    // they name, and otherwise left alone.
    let mut forged: Vec<(&ObservedObject, ConfigRef)> = observed
        .objects()
        .filter(unclaimed)
        .filter(|o| !o.marks_by_mirra)
        .filter_map(|o| {
            owner_of(
                o.labels.get(MANAGED_BY_LABEL),
                o.annotations.get(OWNER_ANNOTATION),
            )
            .map(|owner| (o, owner))
        })
        .filter(|(_, owner)| honoured(owner))
        .collect();
    forged.sort_by_key(|(o, _)| o.key());
    for (o, owner) in forged {
        outcomes.push(ItemOutcome {
            config: owner,
            item: ItemRef::Orphan,
            target: o.object_ref(),
            state: OutcomeState::Retained {
                reason: format!(
                    "it carries mirra's marks, but mirra's field manager did not write them; \
                     it is left alone (remove the {MANAGED_BY_LABEL} label or name it in a \
                     syncItem to adopt it)"
                ),
            },
            contenders: Vec::new(),
        });
    }
    let mut orphans: Vec<(&ObservedObject, ConfigRef)> = observed
        .objects()
        .filter(unclaimed)
        .filter_map(|o| o.owner().map(|owner| (o, owner)))
        .filter(|(_, owner)| honoured(owner))
        .collect();
    orphans.sort_by_key(|(o, _)| o.key());
    let mut releases = Vec::new();
    for (o, owner) in orphans {
        let keep = match configs.iter().find(|c| c.key == owner) {
            Some(c) if !c.is_valid() => Some("its SyncConfig is invalid".to_string()),
            Some(c) if !c.prune => Some("its SyncConfig opted out of pruning".to_string()),
            Some(_) => None,
            None if prune_opted_out(o.annotations.get(PRUNE_ANNOTATION)) => {
                Some("the copy opted out of pruning".to_string())
            }
            None => None,
        };
        let state = match keep {
            Some(reason) => OutcomeState::Retained { reason },
            None if o.adopted() => {
                releases.push(Op::Release {
                    target: o.object_ref(),
                    config: owner.clone(),
                });
                OutcomeState::Released
            }
            None if o.uid.is_empty() => OutcomeState::Failed {
                reason: "the observed copy has no uid to delete it safely".into(),
            },
            None => {
                deletes.insert(
                    o.key(),
                    Op::Delete {
                        target: o.object_ref(),
                        uid: o.uid.clone(),
                        cause: DeleteCause::Pruned,
                        config: owner.clone(),
                    },
                );
                OutcomeState::Pruned
            }
        };
        outcomes.push(ItemOutcome {
            config: owner,
            item: ItemRef::Orphan,
            target: o.object_ref(),
            state,
            contenders: Vec::new(),
        });
    }

    applies.sort_by_key(|op| op.target().key());
    let mut ops = applies;
    ops.extend(releases);
    ops.extend(deletes.into_values());
    outcomes.sort_by(|a, b| (&a.config, a.item, &a.target).cmp(&(&b.config, b.item, &b.target)));
    NamespacePlan {
        ops,
        outcomes,
        verified,
    }
}

/// The object an item names in namespace `name`: its templated name there,
/// and no namespace when its kind is cluster-scoped.
fn item_target(
    api_version: &str,
    kind: &str,
    cluster: bool,
    name: &str,
    template: &str,
) -> ObjectRef {
    ObjectRef {
        api_version: api_version.into(),
        kind: kind.into(),
        namespace: if cluster { "".into() } else { name.into() },
        name: template_str(template, name).into(),
    }
}

/// Why a copyItem's copy is not made in namespace `name`: its kind is
/// cluster-scoped (a source is a namespaced object), or the copy would be
/// its own source.
fn copy_refused(item: &SyncTemplate, name: &str, cluster: bool) -> Option<String> {
    let source = item.source.as_ref()?;
    if cluster {
        return Some(format!(
            "{} is cluster-scoped: copyItems copy namespaced objects only",
            item.kind
        ));
    }
    (source.namespace == name && template_str(&item.name, name) == source.name).then(|| {
        format!(
            "the copy in namespace {name} would be its source {}/{} itself: nothing is written \
             there (give the item a targetName, or keep the namespace out of the selector)",
            source.namespace, source.name
        )
    })
}

/// `body` with [`ADOPTED_ANNOTATION`] set, so that an adopted copy keeps
/// saying so (a server-side apply drops what it no longer sends). The
/// writer uses it too, when an apply with `check_adoption` finds an object
/// that existed before. The mark goes in after the content hash, which
/// [`crate::desired::body_id`] relies on (and must learn of any other mark
/// added so).
pub fn with_adopted_mark(body: &Value) -> Value {
    let mut body = body.clone();
    if let Some(Value::Object(annotations)) = body.pointer_mut("/metadata/annotations") {
        annotations.insert(ADOPTED_ANNOTATION.into(), Value::String("true".into()));
    }
    body
}

/// Why a copy mirra waits to recreate is not gone: the server marked it
/// deleted and finalizers hold it. Said on the item, since a finalizer
/// nobody removes keeps the item from syncing for good; mirra writes
/// nothing meanwhile and recreates the object once the watch shows it gone.
/// `None` while the deletion is only known to mirra (its delete is in
/// flight) or nothing holds it.
pub(super) fn held_by_finalizers(o: &ObservedObject) -> Option<String> {
    if !o.deleting {
        return None;
    }
    let body = o.body();
    let meta = body.get("metadata")?;
    meta.get("deletionTimestamp").filter(|v| !v.is_null())?;
    let finalizers: Vec<&str> = meta
        .get("finalizers")?
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    if finalizers.is_empty() {
        return None;
    }
    Some(format!(
        "the object is being deleted and waits for its finalizers ({}) to be removed; \
         it is created again once it is gone",
        finalizers.join(", ")
    ))
}

/// `copy` as an object of a cluster-scoped kind made for `namespace`: no
/// namespace of its own, and the mark naming the namespace it is for. The
/// content hash stays that of the namespaced form: both change together.
pub(super) fn cluster_copy(mut copy: DesiredCopy, namespace: &str) -> DesiredCopy {
    if let Some(Value::Object(meta)) = copy.body.get_mut("metadata") {
        meta.remove("namespace");
        if let Some(Value::Object(annotations)) = meta.get_mut("annotations") {
            annotations.insert(
                FOR_NAMESPACE_ANNOTATION.into(),
                Value::String(namespace.into()),
            );
        }
    }
    copy.target.namespace = "".into();
    copy
}

/// Why the cluster-scoped object `o` is not `config`'s to write for
/// `namespace`: it is mirra's copy for another namespace. The first
/// namespace to have it keeps it, so the plan never flips the object
/// between namespaces. Within one namespace, SyncConfigs contend for it as
/// for a namespaced copy (the oldest wins, whoever wrote it first).
pub(super) fn held_for_another(o: &ObservedObject, namespace: &str) -> Option<String> {
    if !o.namespace.is_empty() || o.home() == namespace {
        return None;
    }
    let owner = o.owner()?;
    Some(format!(
        "conflict: {} {} is already mirra's copy for namespace {:?} of SyncConfig {owner}; \
         one cluster-scoped object cannot be copied for two namespaces, so it is left as it is",
        o.kind,
        o.name,
        o.home()
    ))
}

/// Why `o` is not this mirra's to write or delete: it carries the marks of
/// a SyncConfig outside `honoured`.
pub(super) fn foreign_owner(
    o: &ObservedObject,
    honoured: &dyn Fn(&ConfigRef) -> bool,
) -> Option<String> {
    let owner = o.owner().filter(|owner| !honoured(owner))?;
    Some(format!(
        "the object belongs to SyncConfig {owner}, which this mirra does not honour \
         (--watch-namespace); remove its {OWNER_ANNOTATION} annotation or the object to let \
         this SyncConfig take it"
    ))
}
