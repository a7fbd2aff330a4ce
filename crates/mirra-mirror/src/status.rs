//! A SyncConfig's status, computed from the outcomes of all the namespaces
//! it selects, and the decision whether it must be written.
//!
//! Counters, with espejo's meaning:
//!
//! - `synchronizedItemCount`: syncItem outcomes `InSync` or `Applied`
//!   (current totals over every selected namespace);
//! - `deletedItemCount`: the objects a deleteItem deletes or is waiting to
//!   see gone (`Deleted` or `Terminating`), plus those the caller says a
//!   deleteItem deleted since the previous status
//!   ([`StatusSummary::add_recent_deletes`]): a deletion is counted in the
//!   status written after it, and kept there until the next status of that
//!   SyncConfig, as espejo counts it per reconcile. Objects already gone
//!   before are not counted, as in espejo;
//! - `failedItemCount`: `Failed` outcomes plus items lost to a conflict.
//!
//! Orphaned copies (pruned or retained) are not counted.
//!
//! Conditions (all five are always present, `True` or `False`):
//!
//! | type     | True when                          | reasons (True / False)                                   |
//! |----------|------------------------------------|----------------------------------------------------------|
//! | Ready    | valid, within the limits, no selected namespace still waits to be synchronized, and not every attempted item failed (espejo: at least one item synchronized or deleted, or none failed) | SynchronizationSucceeded / LimitExceeded, SynchronizationFailed, SynchronizationPending |
//! | Invalid  | the spec is invalid                | InvalidSyncConfigSpec / ValidSyncConfigSpec              |
//! | Errored  | items failed and none was synchronized or deleted (espejo's meaning) | SynchronizationFailedWithError / SynchronizationSucceeded |
//! | Degraded | any item failed (mirra's stricter signal) | ItemsFailed / NoItemFailed                         |
//! | Conflict | another SyncConfig wants an object | ConflictLost or ConflictWon / NoConflict                 |
//!
//! A SyncConfig over a limit on copies or bytes (the caller says so in
//! [`StatusSummary::limit`]) is `Ready=False` with reason `LimitExceeded`
//! and a message naming the limit, the flag and the figures; that reason
//! comes before failures and pending namespaces, since nothing of it is
//! written until it is back under the limit.
//!
//! `lastTransitionTime` changes only when a condition's status changes, so a
//! status computed twice from the same outcomes is equal and
//! [`status_changed`] says no write is needed. Unlike espejo, `Errored` and
//! `Degraded` are cleared once the failures are gone, and delete failures
//! are failures.
//!
//! What this module must NOT do: read the clock (the caller passes `now`).

use std::collections::{BTreeMap, BTreeSet};

use crate::compile::CompiledConfig;
use crate::error::ValidationError;
use crate::plan::{ItemOutcome, ItemRef, OutcomeState};
use crate::refs::{ConfigRef, ObjectKey};
use crate::resource::{SyncConfigCondition, SyncConfigStatus};

/// Condition type: everything is in sync.
pub const CONDITION_READY: &str = "Ready";
/// Condition type: the spec is invalid.
pub const CONDITION_INVALID: &str = "Invalid";
/// Condition type (espejo's meaning): items failed and none was
/// synchronized or deleted.
pub const CONDITION_ERRORED: &str = "Errored";
/// Condition type: at least one item failed, whatever the others did.
pub const CONDITION_DEGRADED: &str = "Degraded";
/// Condition type: another SyncConfig wants some of the same objects.
pub const CONDITION_CONFLICT: &str = "Conflict";

/// espejo's reason for success.
pub const REASON_SUCCEEDED: &str = "SynchronizationSucceeded";
/// espejo's reason for a failed synchronization.
pub const REASON_FAILED: &str = "SynchronizationFailed";
/// Not Ready yet: some selected namespaces have not been synchronized
/// since the last change (no failure so far).
pub const REASON_PENDING: &str = "SynchronizationPending";
/// Not Ready: the SyncConfig is over a limit on copies or bytes, so its
/// writes are held back.
pub const REASON_LIMIT_EXCEEDED: &str = "LimitExceeded";
/// espejo's reason for failures with an error message.
pub const REASON_FAILED_WITH_ERROR: &str = "SynchronizationFailedWithError";
/// espejo's reason for an invalid spec.
pub const REASON_INVALID: &str = "InvalidSyncConfigSpec";
/// Degraded: at least one item failed.
pub const REASON_ITEMS_FAILED: &str = "ItemsFailed";
/// Not Degraded: no item failed.
pub const REASON_NO_ITEM_FAILED: &str = "NoItemFailed";
/// The spec is valid.
pub const REASON_VALID: &str = "ValidSyncConfigSpec";
/// This SyncConfig lost at least one object to another.
pub const REASON_CONFLICT_LOST: &str = "ConflictLost";
/// This SyncConfig won every contested object.
pub const REASON_CONFLICT_WON: &str = "ConflictWon";
/// No other SyncConfig wants the same objects.
pub const REASON_NO_CONFLICT: &str = "NoConflict";

/// What a SyncConfig over a limit means, in its Ready message.
pub const LIMIT_CONSEQUENCE: &str = "nothing of this SyncConfig is written, updated or deleted \
     (existing copies are kept as they are) until it is back under the limit";

/// How many failures, errors or SyncConfig names a condition message lists
/// before summarising the rest as a count: enough to diagnose, small enough
/// that a SyncConfig failing in 1000 namespaces keeps a readable, bounded
/// status object.
pub const MAX_LISTED: usize = 5;

/// The counts and notable outcomes of one SyncConfig over all namespaces.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatusSummary {
    /// syncItem outcomes in sync or being applied.
    pub synchronized: i64,
    /// Objects deleted by deleteItems: being deleted now, or deleted since
    /// the previous status (see [`StatusSummary::add_recent_deletes`]).
    pub deleted: i64,
    /// The objects counted in `deleted`.
    pub deleted_objects: BTreeSet<ObjectKey>,
    /// Failed items plus items lost to a conflict.
    pub failed: i64,
    /// `namespace kind/name: reason` of each failure, sorted.
    pub failures: Vec<String>,
    /// SyncConfigs that won objects this one wants.
    pub lost_to: BTreeSet<ConfigRef>,
    /// SyncConfigs that lost objects to this one.
    pub won_over: BTreeSet<ConfigRef>,
    /// Selected namespaces whose synchronization is not finished (queued
    /// or in progress); the caller fills it in, the outcomes cannot say.
    pub pending: i64,
    /// Why the SyncConfig is over a limit, when it is; the caller fills it
    /// in (the limits and the namespace count are not in the outcomes).
    pub limit: Option<String>,
}

/// Summarises the outcomes that belong to `config` (others are skipped, so
/// the caller may pass every namespace's outcomes unfiltered).
pub fn summarize<'a>(
    config: &ConfigRef,
    outcomes: impl IntoIterator<Item = &'a ItemOutcome>,
) -> StatusSummary {
    let mut s = StatusSummary::default();
    for o in outcomes.into_iter().filter(|o| &o.config == config) {
        s.count(config, o);
    }
    s.finish();
    s
}

/// [`summarize`] for several SyncConfigs in one walk over the outcomes:
/// with thousands of namespaces the walk is what a summary costs.
pub fn summarize_each<'a>(
    configs: &BTreeSet<ConfigRef>,
    outcomes: impl IntoIterator<Item = &'a ItemOutcome>,
) -> BTreeMap<ConfigRef, StatusSummary> {
    let mut out: BTreeMap<ConfigRef, StatusSummary> = configs
        .iter()
        .map(|c| (c.clone(), StatusSummary::default()))
        .collect();
    for o in outcomes {
        if let Some(s) = out.get_mut(&o.config) {
            s.count(&o.config, o);
        }
    }
    for s in out.values_mut() {
        s.finish();
    }
    out
}

impl StatusSummary {
    /// Counts one outcome of `config`.
    fn count(&mut self, config: &ConfigRef, o: &ItemOutcome) {
        let s = self;
        s.won_over
            .extend(o.contenders.iter().filter(|c| *c != config).cloned());
        // Formatted only for the failures that print it.
        let place = || format!("{} {}/{}", o.target.namespace, o.target.kind, o.target.name);
        match (&o.state, o.item) {
            (_, ItemRef::Orphan) => {}
            (OutcomeState::InSync | OutcomeState::Applied, ItemRef::Sync(_) | ItemRef::Copy(_)) => {
                s.synchronized += 1
            }
            (OutcomeState::Deleted | OutcomeState::Terminating, ItemRef::Delete(_)) => {
                s.deleted_objects.insert(o.target.key());
            }
            (OutcomeState::Failed { reason }, _) => {
                s.failed += 1;
                s.failures.push(format!("{}: {reason}", place()));
            }
            (
                OutcomeState::Conflict {
                    winner,
                    winner_item,
                },
                item,
            ) => {
                s.failed += 1;
                if winner == config {
                    s.failures.push(format!(
                        "{}: {} names the same object as {}",
                        place(),
                        item_path(item),
                        item_path(*winner_item)
                    ));
                } else {
                    s.lost_to.insert(winner.clone());
                }
            }
            _ => {}
        }
    }

    fn finish(&mut self) {
        self.failures.sort();
        self.deleted = self.deleted_objects.len() as i64;
    }
}

impl StatusSummary {
    /// Counts objects a deleteItem of this SyncConfig deleted since its
    /// previous status, whose outcome no longer says so (the watch showed
    /// them gone): espejo reports a deletion in the status of the reconcile
    /// that made it, and a status computed after the object vanished must
    /// still say it. An object counted already is not counted twice.
    pub fn add_recent_deletes<'a>(&mut self, keys: impl IntoIterator<Item = &'a ObjectKey>) {
        self.deleted_objects.extend(keys.into_iter().cloned());
        self.deleted = self.deleted_objects.len() as i64;
    }
}

fn item_path(item: ItemRef) -> String {
    match item {
        ItemRef::Sync(i) => format!("spec.syncItems[{i}]"),
        ItemRef::Copy(i) => format!("spec.copyItems[{i}]"),
        ItemRef::Delete(i) => format!("spec.deleteItems[{i}]"),
        ItemRef::Orphan => "an orphaned copy".into(),
    }
}

/// The status a SyncConfig should have. `previous` supplies the
/// `lastTransitionTime` of conditions whose status did not change and any
/// condition types mirra does not manage (kept as they are); `now` is the
/// RFC 3339 time to stamp on conditions that changed.
pub fn desired_status(
    config: &CompiledConfig,
    summary: &StatusSummary,
    previous: Option<&SyncConfigStatus>,
    now: &str,
) -> SyncConfigStatus {
    let mut conditions = Vec::new();
    let (synchronized, deleted, failed) = if config.is_valid() {
        // espejo's rule: a reconcile failed only when items failed and
        // nothing was synchronized or deleted.
        let all_failed = summary.failed > 0 && summary.synchronized == 0 && summary.deleted == 0;
        let ready = !all_failed && summary.pending == 0 && summary.limit.is_none();
        conditions.push(cond(
            CONDITION_READY,
            ready,
            if summary.limit.is_some() {
                REASON_LIMIT_EXCEEDED
            } else if ready {
                REASON_SUCCEEDED
            } else if !all_failed {
                REASON_PENDING
            } else {
                REASON_FAILED
            },
            if let Some(limit) = &summary.limit {
                format!("{limit}; {LIMIT_CONSEQUENCE}")
            } else if ready && summary.failed > 0 {
                format!(
                    "{} item(s) synchronized, {} deleted, {} failed (see the Degraded and Conflict conditions)",
                    summary.synchronized, summary.deleted, summary.failed
                )
            } else if ready {
                format!(
                    "{} item(s) synchronized, {} deleted",
                    summary.synchronized, summary.deleted
                )
            } else if !all_failed {
                format!(
                    "{} namespace(s) not synchronized yet; {} item(s) synchronized so far",
                    summary.pending, summary.synchronized
                )
            } else {
                format!(
                    "all {} attempted item(s) failed, none synchronized or deleted",
                    summary.failed
                )
            },
        ));
        conditions.push(cond(
            CONDITION_INVALID,
            false,
            REASON_VALID,
            "the spec is valid".into(),
        ));
        let failures = || {
            if summary.failures.is_empty() {
                // Only conflicts lost: the Conflict condition names them.
                format!(
                    "{} item(s) lost to other SyncConfigs; see the Conflict condition",
                    summary.failed
                )
            } else {
                bounded(&summary.failures)
            }
        };
        conditions.push(cond(
            CONDITION_ERRORED,
            all_failed,
            if all_failed {
                REASON_FAILED_WITH_ERROR
            } else {
                REASON_SUCCEEDED
            },
            if all_failed {
                failures()
            } else if summary.failed > 0 {
                "some items were synchronized or deleted; the failures are on the Degraded \
                 and Conflict conditions"
                    .into()
            } else {
                "no item failed".into()
            },
        ));
        let degraded = !summary.failures.is_empty();
        conditions.push(cond(
            CONDITION_DEGRADED,
            degraded,
            if degraded {
                REASON_ITEMS_FAILED
            } else {
                REASON_NO_ITEM_FAILED
            },
            if degraded {
                bounded(&summary.failures)
            } else {
                "no item failed".into()
            },
        ));
        conditions.push(conflict_condition(summary));
        (summary.synchronized, summary.deleted, summary.failed)
    } else {
        conditions.push(cond(
            CONDITION_READY,
            false,
            REASON_FAILED,
            "the spec is invalid, nothing is synchronized; see the Invalid condition".into(),
        ));
        conditions.push(cond(
            CONDITION_INVALID,
            true,
            REASON_INVALID,
            invalid_message(config.errors()),
        ));
        conditions.push(cond(
            CONDITION_ERRORED,
            false,
            REASON_INVALID,
            "nothing was attempted".into(),
        ));
        conditions.push(cond(
            CONDITION_DEGRADED,
            false,
            REASON_INVALID,
            "nothing was attempted".into(),
        ));
        conditions.push(cond(
            CONDITION_CONFLICT,
            false,
            REASON_NO_CONFLICT,
            "nothing was attempted".into(),
        ));
        (0, 0, 0)
    };
    for c in &mut conditions {
        let before = previous.and_then(|p| p.conditions.iter().find(|o| o.type_ == c.type_));
        c.last_transition_time = match before {
            Some(b) if b.status == c.status && b.last_transition_time.is_some() => {
                b.last_transition_time.clone()
            }
            _ => Some(now.to_string()),
        };
    }
    let managed = [
        CONDITION_READY,
        CONDITION_INVALID,
        CONDITION_ERRORED,
        CONDITION_DEGRADED,
        CONDITION_CONFLICT,
    ];
    if let Some(p) = previous {
        conditions.extend(
            p.conditions
                .iter()
                .filter(|c| !managed.contains(&c.type_.as_str()))
                .cloned(),
        );
    }
    SyncConfigStatus {
        conditions,
        synchronized_item_count: synchronized,
        deleted_item_count: deleted,
        failed_item_count: failed,
        observed_generation: config.generation,
    }
}

/// Whether `new` differs from what is stored, i.e. whether a status write is
/// needed.
pub fn status_changed(old: Option<&SyncConfigStatus>, new: &SyncConfigStatus) -> bool {
    old != Some(new)
}

fn conflict_condition(summary: &StatusSummary) -> SyncConfigCondition {
    let names = |set: &BTreeSet<ConfigRef>| {
        bounded(&set.iter().map(ToString::to_string).collect::<Vec<_>>())
    };
    if !summary.lost_to.is_empty() {
        let mut message = format!(
            "objects are written by older SyncConfig(s): {}",
            names(&summary.lost_to)
        );
        if !summary.won_over.is_empty() {
            message.push_str(&format!(
                "; objects are also wanted by: {}",
                names(&summary.won_over)
            ));
        }
        cond(CONDITION_CONFLICT, true, REASON_CONFLICT_LOST, message)
    } else if !summary.won_over.is_empty() {
        cond(
            CONDITION_CONFLICT,
            true,
            REASON_CONFLICT_WON,
            format!(
                "this SyncConfig writes objects also wanted by: {}",
                names(&summary.won_over)
            ),
        )
    } else {
        cond(
            CONDITION_CONFLICT,
            false,
            REASON_NO_CONFLICT,
            "no other SyncConfig wants the same objects".into(),
        )
    }
}

fn invalid_message(errors: &[ValidationError]) -> String {
    bounded(&errors.iter().map(ToString::to_string).collect::<Vec<_>>())
}

/// At most [`MAX_LISTED`] entries joined by `; `, then `(and N more)`.
fn bounded(entries: &[String]) -> String {
    let mut message = entries
        .iter()
        .take(MAX_LISTED)
        .cloned()
        .collect::<Vec<_>>()
        .join("; ");
    if entries.len() > MAX_LISTED {
        message.push_str(&format!(" (and {} more)", entries.len() - MAX_LISTED));
    }
    message
}

fn cond(type_: &str, status: bool, reason: &str, message: String) -> SyncConfigCondition {
    SyncConfigCondition {
        type_: type_.into(),
        status: if status { "True" } else { "False" }.into(),
        last_transition_time: None,
        reason: Some(reason.into()),
        message: Some(message),
    }
}
