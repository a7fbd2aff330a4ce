//! The planner: for one target namespace, what mirra must write or delete so
//! that it matches every SyncConfig, computed from cached state only.
//!
//! ```text
//!  NamespaceView ─┐
//!  CompiledConfig ┼─> plan_namespace ─> NamespacePlan { ops, outcomes }
//!  ObservedLookup ┘        (pure)            │
//!                                            └─> writer (SSA / delete with uid)
//! ```
//!
//! Rules:
//!
//! - A namespace that is missing, not Active, or excluded by the operator
//!   gets no operation at all: no apply, and no delete either (a terminating
//!   namespace removes its objects by itself, and an excluded one is hands
//!   off).
//! - Each valid SyncConfig that selects the namespace wants its syncItems
//!   there. The copy is applied iff it is not already contained in the
//!   observed object ([`crate::desired::is_subset`]): zero writes when nothing
//!   changed.
//! - Two SyncConfigs wanting the same object: the oldest (then by
//!   `namespace/name`) wins, always, whatever the object's current owner
//!   annotation says, so the plan never flaps. The loser gets a
//!   [`OutcomeState::Conflict`] naming the winner; the winner's outcome lists
//!   the losers in `contenders`.
//! - An existing object WITHOUT mirra's marks that a syncItem names is
//!   adopted: the apply takes ownership of the fields the item sets and adds
//!   the marks and [`ADOPTED_ANNOTATION`] (espejo overwrote such objects
//!   entirely; the spec names the object explicitly, so writing it is the
//!   user's intent, and fields set by others survive). The caches see only
//!   objects that carry mirra's label, so an apply of an object they do not
//!   hold is sent with `check_adoption`: the writer looks at the answer's
//!   managedFields and marks the object adopted when anyone else had a
//!   hand in it. An adopted object no longer wanted is released
//!   ([`Op::Release`]: mirra's fields and marks removed), never deleted.
//! - Marks count only when mirra's own apply wrote them
//!   ([`ObservedObject::marks_by_mirra`]): an object whose marks someone
//!   else added is never pruned, released or treated as another SyncConfig's;
//!   a syncItem naming it adopts it.
//! - deleteItems delete the named object in every selected namespace, marked
//!   or not (the spec names it), and only while it exists and is not already
//!   being deleted. When a syncItem (of any SyncConfig) wants the same object
//!   in that namespace, the syncItem wins and the deleteItem gets a
//!   `Conflict` outcome: deleting what another rule recreates would fight
//!   forever.
//! - Pruning: a copy mirra created that no valid SyncConfig wants in this
//!   namespace is deleted (with its uid as precondition; an adopted one is
//!   released instead) unless kept:
//!   its SyncConfig exists but is invalid (a typo must not delete copies),
//!   its SyncConfig opted out of pruning, or, when the SyncConfig is gone, the
//!   copy itself carries the opt-out. An object without both marks is never
//!   pruned.
//! - A mirra that honours only some SyncConfigs (`--watch-namespace`)
//!   leaves copies owned by the others alone: not pruned, not overwritten,
//!   not deleted by a deleteItem (see [`plan_namespace_scoped`]). Two mirra deployments with disjoint
//!   scopes share a cluster without deleting each other's copies.
//! - An object that is being deleted is left alone; once it is gone the next
//!   plan recreates it if it is still wanted (this is also how
//!   `forceRecreate` completes without racing the deletion). While
//!   finalizers hold a wanted object, its item fails with a message naming
//!   them (nothing is written meanwhile).
//!
//! What this module must NOT do: I/O, clocks, logging decisions away. The
//! caller must pass EVERY SyncConfig it honours (an absent one counts as
//! deleted and its copies are pruned) and must only call it once its caches
//! hold their initial lists.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::compile::CompiledConfig;
use crate::desired::{DesiredCopy, desired_copy, is_subset};
use crate::marks::{
    ADOPTED_ANNOTATION, FOR_NAMESPACE_ANNOTATION, MANAGED_BY_LABEL, OWNER_ANNOTATION,
    PRUNE_ANNOTATION, is_adopted, marks_written_by_mirra, owner_of, prune_opted_out,
};
use crate::names::{check_name, strict_name_rule};
use crate::refs::{ConfigRef, ObjectKey, ObjectRef, group_of};
use crate::selector::NamespaceView;
use crate::template::{PROJECT_NAME, template_str};

/// An object as the controller's caches hold it.
#[derive(Debug, Clone, PartialEq)]
pub struct ObservedObject {
    /// apiVersion it was read with.
    pub api_version: String,
    /// Kind.
    pub kind: String,
    /// Namespace; empty for an object of a cluster-scoped kind.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// `metadata.uid`, the precondition of every delete.
    pub uid: String,
    /// `metadata.labels`.
    pub labels: BTreeMap<String, String>,
    /// `metadata.annotations`.
    pub annotations: BTreeMap<String, String>,
    /// The whole object as JSON (managedFields may be stripped).
    pub body: Value,
    /// Whether `metadata.deletionTimestamp` is set.
    pub deleting: bool,
    /// Whether `metadata.managedFields` show mirra's own apply wrote the
    /// marks (`marks::marks_written_by_mirra`): only then is the object
    /// mirra's.
    pub marks_by_mirra: bool,
}

impl ObservedObject {
    /// Reads an object from its JSON form. `None` when apiVersion, kind or
    /// name is missing (the API server never sends such an object; a
    /// malformed cache entry is skipped, not trusted). No namespace means
    /// an object of a cluster-scoped kind.
    pub fn from_json(body: Value) -> Option<ObservedObject> {
        let s = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
        let meta = body.get("metadata");
        let field = |f: &str| s(meta.and_then(|m| m.get(f)));
        let string_map = |f: &str| -> BTreeMap<String, String> {
            meta.and_then(|m| m.get(f))
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                        .collect()
                })
                .unwrap_or_default()
        };
        let api_version = s(body.get("apiVersion")).filter(|v| !v.is_empty())?;
        let kind = s(body.get("kind")).filter(|v| !v.is_empty())?;
        let namespace = field("namespace").unwrap_or_default();
        let name = field("name").filter(|v| !v.is_empty())?;
        Some(ObservedObject {
            api_version,
            kind,
            namespace,
            name,
            uid: field("uid").unwrap_or_default(),
            labels: string_map("labels"),
            annotations: string_map("annotations"),
            deleting: meta
                .and_then(|m| m.get("deletionTimestamp"))
                .is_some_and(|v| !v.is_null()),
            marks_by_mirra: marks_written_by_mirra(meta.and_then(|m| m.get("managedFields"))),
            body,
        })
    }

    /// The object's identity.
    pub fn key(&self) -> ObjectKey {
        ObjectKey {
            group: group_of(&self.api_version).to_string(),
            kind: self.kind.clone(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
        }
    }

    /// The namespace this object belongs to for planning: its own, or, for
    /// an object of a cluster-scoped kind, the one its
    /// [`FOR_NAMESPACE_ANNOTATION`] names (empty when it has none).
    pub fn home(&self) -> &str {
        if self.namespace.is_empty() {
            self.annotations
                .get(FOR_NAMESPACE_ANNOTATION)
                .map_or("", String::as_str)
        } else {
            &self.namespace
        }
    }

    /// The SyncConfig that owns this object: it carries mirra's marks and
    /// mirra wrote them.
    pub fn owner(&self) -> Option<ConfigRef> {
        if !self.marks_by_mirra {
            return None;
        }
        owner_of(&self.labels, &self.annotations)
    }

    /// Whether mirra adopted this copy (it existed before mirra applied
    /// it): released, never deleted, when no longer wanted.
    pub fn adopted(&self) -> bool {
        is_adopted(self.annotations.get(ADOPTED_ANNOTATION).map(String::as_str))
    }

    fn object_ref(&self) -> ObjectRef {
        ObjectRef {
            api_version: self.api_version.clone(),
            kind: self.kind.clone(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
        }
    }
}

/// Read access to the objects the caches hold for ONE namespace: mirra's
/// copies (found by its label) and the objects named by deleteItems.
pub trait ObservedLookup {
    /// The object with this identity, if cached.
    fn get(&self, key: &ObjectKey) -> Option<&ObservedObject>;
    /// Every cached object of the namespace. Objects of other namespaces
    /// are ignored by the planner.
    fn objects(&self) -> Box<dyn Iterator<Item = &ObservedObject> + '_>;
}

/// A simple in-memory [`ObservedLookup`], ordered by identity. Used by
/// `render` (empty), tests, and simulations.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ObservedSet {
    objects: BTreeMap<ObjectKey, ObservedObject>,
}

impl ObservedSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds or replaces an object; returns the previous one.
    pub fn insert(&mut self, object: ObservedObject) -> Option<ObservedObject> {
        self.objects.insert(object.key(), object)
    }

    /// Removes an object.
    pub fn remove(&mut self, key: &ObjectKey) -> Option<ObservedObject> {
        self.objects.remove(key)
    }

    /// Number of objects.
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// All objects, ordered by identity.
    pub fn iter(&self) -> impl Iterator<Item = &ObservedObject> {
        self.objects.values()
    }

    /// The objects of one namespace, as a new set.
    pub fn in_namespace(&self, namespace: &str) -> ObservedSet {
        ObservedSet {
            objects: self
                .objects
                .iter()
                .filter(|(k, _)| k.namespace == namespace)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        }
    }
}

impl ObservedLookup for ObservedSet {
    fn get(&self, key: &ObjectKey) -> Option<&ObservedObject> {
        self.objects.get(key)
    }

    fn objects(&self) -> Box<dyn Iterator<Item = &ObservedObject> + '_> {
        Box::new(self.objects.values())
    }
}

/// Why an object is deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DeleteCause {
    /// A copy mirra owns that no SyncConfig wants any more.
    Pruned,
    /// A deleteItem names it.
    DeleteItem,
}

/// One write the controller must perform.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// Server-side apply `body` with field manager [`crate::FIELD_MANAGER`]
    /// (forced: the spec is the source of truth for the fields it sets).
    Apply {
        /// The object to write.
        target: ObjectRef,
        /// The full apply body, marks and hash included.
        body: Value,
        /// The SyncConfig that wants it.
        config: ConfigRef,
        /// The SyncConfig's `forceRecreate`: on 422, delete the object (with
        /// its uid as precondition) and let the next plan recreate it.
        force_recreate: bool,
        /// The caches hold no object of this name, so the apply may find
        /// one mirra never saw: when the answer's managedFields name any
        /// other manager, the object was adopted and the writer applies
        /// again with [`ADOPTED_ANNOTATION`].
        check_adoption: bool,
    },
    /// Delete with `uid` as precondition, so a newer object of the same name
    /// is never deleted by a stale decision.
    Delete {
        /// The object to delete.
        target: ObjectRef,
        /// The observed uid.
        uid: String,
        /// Why.
        cause: DeleteCause,
        /// The SyncConfig responsible (the owner, for a prune).
        config: ConfigRef,
    },
    /// Server-side apply of nothing but the object's identity as
    /// [`crate::FIELD_MANAGER`]: mirra gives up every field it owned (its
    /// marks included), fields only mirra set go, everything else stays.
    /// How an adopted object that is no longer wanted is let go.
    Release {
        /// The object to release.
        target: ObjectRef,
        /// The SyncConfig that owned it.
        config: ConfigRef,
    },
}

impl Op {
    /// The SyncConfig the operation is for.
    pub fn config(&self) -> &ConfigRef {
        match self {
            Op::Apply { config, .. } | Op::Delete { config, .. } | Op::Release { config, .. } => {
                config
            }
        }
    }

    /// The object the operation acts on.
    pub fn target(&self) -> &ObjectRef {
        match self {
            Op::Apply { target, .. } | Op::Delete { target, .. } | Op::Release { target, .. } => {
                target
            }
        }
    }
}

/// Which entry of a SyncConfig an outcome is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ItemRef {
    /// `spec.syncItems[i]`.
    Sync(usize),
    /// `spec.deleteItems[i]`.
    Delete(usize),
    /// A copy the SyncConfig owns that no entry wants any more.
    Orphan,
}

/// What became of one item in one namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutcomeState {
    /// The observed copy already matches: nothing to write.
    InSync,
    /// An Apply is planned.
    Applied,
    /// A Delete is planned.
    Deleted,
    /// A deleteItem's object does not exist: nothing to do.
    Gone,
    /// The object is being deleted; the plan waits for it to disappear.
    Terminating,
    /// An orphaned copy is deleted (a Delete is planned).
    Pruned,
    /// An orphaned copy mirra adopted is let go (a Release is planned).
    Released,
    /// A write is planned but waits for a later pass of its namespace: one
    /// pass sends a bounded number of writes, SyncConfigs taking turns, so
    /// a large SyncConfig cannot hold back another's edit.
    Pending,
    /// A write is planned but held back: its SyncConfig is over a limit on
    /// copies or bytes (see [`crate::limits`]). Nothing of that SyncConfig
    /// is written, updated or deleted until it is back under the limit.
    Held,
    /// An orphaned copy is kept (pruning opted out, or its SyncConfig is
    /// invalid).
    Retained {
        /// Why it is kept.
        reason: String,
    },
    /// Another SyncConfig (or an earlier entry of the same one) wins this
    /// object.
    Conflict {
        /// The winning SyncConfig.
        winner: ConfigRef,
        /// The winning entry.
        winner_item: ItemRef,
    },
    /// The item cannot be written here.
    Failed {
        /// Why, for the status message.
        reason: String,
    },
}

/// The outcome of one (SyncConfig, item) pair in one namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemOutcome {
    /// The SyncConfig.
    pub config: ConfigRef,
    /// Its entry.
    pub item: ItemRef,
    /// The object concerned.
    pub target: ObjectRef,
    /// What happened.
    pub state: OutcomeState,
    /// SyncConfigs that wanted the same object and lost to this one.
    pub contenders: Vec<ConfigRef>,
}

/// The result of planning one namespace.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NamespacePlan {
    /// The writes, applies first, each group ordered by object identity.
    pub ops: Vec<Op>,
    /// One outcome per (SyncConfig, item) selecting the namespace, plus one
    /// per orphaned copy.
    pub outcomes: Vec<ItemOutcome>,
}

struct Want<'c> {
    config: &'c CompiledConfig,
    item: ItemRef,
    target: ObjectRef,
    body: Value,
    contenders: Vec<ConfigRef>,
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
    if excluded(name) || ns.is_some_and(|v| !v.active) {
        return NamespacePlan::default();
    }
    let gone = ns.is_none();
    let mut selecting: Vec<&CompiledConfig> = configs
        .iter()
        .filter(|c| ns.is_some_and(|v| c.selects(v)))
        .collect();
    selecting.sort_by(|a, b| a.precedence().cmp(&b.precedence()));

    let mut outcomes = Vec::new();
    // Losers are recorded first, then attached to the winner's outcome.
    let mut wants: BTreeMap<ObjectKey, Want<'_>> = BTreeMap::new();
    for config in &selecting {
        let Ok(spec) = &config.spec else { continue };
        for item in &spec.sync_items {
            let item_ref = ItemRef::Sync(item.index);
            let cluster = cluster_scoped(&item.api_version, &item.kind);
            let copy = if cluster && !item.name.contains(PROJECT_NAME) {
                Err(format!(
                    "{} is cluster-scoped and its name {:?} does not contain {PROJECT_NAME}: \
                     every selected namespace would want the same object (a conflict), so \
                     none is written; template the name per namespace",
                    item.kind, item.name
                ))
            } else {
                desired_copy(config, item, name)
                    .map(|c| if cluster { cluster_copy(c, name) } else { c })
            };
            match copy {
                Err(reason) => outcomes.push(ItemOutcome {
                    config: config.key.clone(),
                    item: item_ref,
                    target: ObjectRef {
                        api_version: item.api_version.clone(),
                        kind: item.kind.clone(),
                        namespace: if cluster {
                            String::new()
                        } else {
                            name.to_string()
                        },
                        name: template_str(&item.name, name),
                    },
                    state: OutcomeState::Failed { reason },
                    contenders: Vec::new(),
                }),
                Ok(copy) => {
                    let key = copy.target.key();
                    if let Some(winner) = wants.get_mut(&key) {
                        winner.contenders.push(config.key.clone());
                        outcomes.push(ItemOutcome {
                            config: config.key.clone(),
                            item: item_ref,
                            target: copy.target,
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
                                target: copy.target,
                                body: copy.body,
                                contenders: Vec::new(),
                            },
                        );
                    }
                }
            }
        }
    }

    let mut applies = Vec::new();
    for (key, want) in &wants {
        let seen = observed.get(key);
        // An object that existed before mirra's apply stays marked as
        // adopted; one whose marks mirra did not write is adopted now.
        let adopting = seen.is_some_and(|o| o.adopted() || !o.marks_by_mirra);
        let adopted_body;
        let body = if adopting {
            adopted_body = with_adopted_mark(&want.body);
            &adopted_body
        } else {
            &want.body
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
            Some(o) if is_subset(body, &o.body) => OutcomeState::InSync,
            _ => {
                applies.push(Op::Apply {
                    target: want.target.clone(),
                    body: body.clone(),
                    config: want.config.key.clone(),
                    force_recreate: want.config.force_recreate,
                    check_adoption: seen.is_none(),
                });
                OutcomeState::Applied
            }
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
            let target = ObjectRef {
                api_version: item.api_version.clone(),
                kind: item.kind.clone(),
                namespace: if cluster {
                    String::new()
                } else {
                    name.to_string()
                },
                name: object_name.clone(),
            };
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
    };
    // Marks mirra did not write: nobody's copy. Said on the SyncConfig
    // they name, and otherwise left alone.
    let mut forged: Vec<(&ObservedObject, ConfigRef)> = observed
        .objects()
        .filter(unclaimed)
        .filter(|o| !o.marks_by_mirra)
        .filter_map(|o| owner_of(&o.labels, &o.annotations).map(|owner| (o, owner)))
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
            None if prune_opted_out(o.annotations.get(PRUNE_ANNOTATION).map(String::as_str)) => {
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
    NamespacePlan { ops, outcomes }
}

/// Splits one namespace's writes into those a pass sends now (at most
/// `cap`, SyncConfigs taking turns: the first write of each, then the
/// second of each, and so on, each SyncConfig's own order kept) and those
/// that wait for the next pass. A SyncConfig with thousands of writes then
/// delays another's edit by one bounded pass at most, not by all of its
/// writes. `cap` 0 is taken as 1.
pub fn take_turns<T>(
    ops: Vec<T>,
    config_of: impl Fn(&T) -> &ConfigRef,
    cap: usize,
) -> (Vec<T>, Vec<T>) {
    let cap = cap.max(1);
    if ops.len() <= cap {
        return (ops, Vec::new());
    }
    let mut queues: BTreeMap<ConfigRef, std::collections::VecDeque<T>> = BTreeMap::new();
    for op in ops {
        queues
            .entry(config_of(&op).clone())
            .or_default()
            .push_back(op);
    }
    let mut now = Vec::with_capacity(cap);
    while now.len() < cap {
        let mut took = false;
        for q in queues.values_mut() {
            if now.len() == cap {
                break;
            }
            if let Some(op) = q.pop_front() {
                now.push(op);
                took = true;
            }
        }
        if !took {
            break;
        }
    }
    let later = queues.into_values().flatten().collect();
    (now, later)
}

/// `body` with [`ADOPTED_ANNOTATION`] set, so that an adopted copy keeps
/// saying so (a server-side apply drops what it no longer sends). The
/// writer uses it too, when an apply with `check_adoption` finds an object
/// that existed before.
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
fn held_by_finalizers(o: &ObservedObject) -> Option<String> {
    let meta = o.body.get("metadata")?;
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
fn cluster_copy(mut copy: DesiredCopy, namespace: &str) -> DesiredCopy {
    if let Some(Value::Object(meta)) = copy.body.get_mut("metadata") {
        meta.remove("namespace");
        if let Some(Value::Object(annotations)) = meta.get_mut("annotations") {
            annotations.insert(
                FOR_NAMESPACE_ANNOTATION.into(),
                Value::String(namespace.into()),
            );
        }
    }
    copy.target.namespace = String::new();
    copy
}

/// Why the cluster-scoped object `o` is not `config`'s to write for
/// `namespace`: it is mirra's copy for another namespace. The first
/// namespace to have it keeps it, so the plan never flips the object
/// between namespaces. Within one namespace, SyncConfigs contend for it as
/// for a namespaced copy (the oldest wins, whoever wrote it first).
fn held_for_another(o: &ObservedObject, namespace: &str) -> Option<String> {
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
fn foreign_owner(o: &ObservedObject, honoured: &dyn Fn(&ConfigRef) -> bool) -> Option<String> {
    let owner = o.owner().filter(|owner| !honoured(owner))?;
    Some(format!(
        "the object belongs to SyncConfig {owner}, which this mirra does not honour \
         (--watch-namespace); remove its {OWNER_ANNOTATION} annotation or the object to let \
         this SyncConfig take it"
    ))
}

/// The namespaces (keys) a SyncConfig change touches: those selected by the
/// old or the new version. Empty when nothing planning depends on changed
/// (only labels, status or unrelated annotations). An invalid version selects
/// nothing; copies written by an earlier valid version in namespaces neither
/// version selects must come from the caller's index of copies by owner (or
/// the periodic verification pass), so callers should add the namespaces
/// where that index holds copies of this SyncConfig.
pub fn namespaces_for_config_change<'a>(
    old: Option<&CompiledConfig>,
    new: Option<&CompiledConfig>,
    namespaces: impl Iterator<Item = &'a NamespaceView<'a>>,
) -> BTreeSet<String> {
    if let (Some(o), Some(n)) = (old, new)
        && o.same_plan_input(n)
    {
        return BTreeSet::new();
    }
    namespaces
        .filter(|ns| old.is_some_and(|c| c.selects(ns)) || new.is_some_and(|c| c.selects(ns)))
        .map(|ns| ns.name.to_string())
        .collect()
}
