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

use crate::compile::{CompiledConfig, CopySource, SyncTemplate};
use crate::desired::{DesiredCopy, desired_copy, is_empty, is_subset};
use crate::marks::{
    ADOPTED_ANNOTATION, FOR_NAMESPACE_ANNOTATION, MANAGED_BY_LABEL, OWNER_ANNOTATION,
    PRUNE_ANNOTATION, is_adopted, marks_written_by_mirra, owner_of, prune_opted_out,
};
use crate::names::{check_name, strict_name_rule};
use crate::refs::{ConfigRef, ObjectKey, ObjectRef, group_of};
use crate::selector::NamespaceView;
use crate::template::{PROJECT_NAME, template_str};

mod namespace;
mod narrow;
mod observed;

pub use namespace::*;
pub use narrow::*;
pub use observed::*;

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
    /// `spec.copyItems[i]`.
    Copy(usize),
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

impl OutcomeState {
    /// Whether a write is planned for it (apply, delete, prune or
    /// release): the states a write that is not sent must change.
    pub fn plans_a_write(&self) -> bool {
        matches!(
            self,
            OutcomeState::Applied
                | OutcomeState::Deleted
                | OutcomeState::Pruned
                | OutcomeState::Released
        )
    }
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
    /// The copies this plan rendered and found in step with the cached
    /// object, by the object and the (SyncConfig, item) that wants it:
    /// what the caller may answer through [`ObservedLookup::verified`]
    /// until the object or the SyncConfig changes. Copies taken as
    /// verified are not listed again.
    pub verified: Vec<(ObjectRef, ConfigRef, ItemRef)>,
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
