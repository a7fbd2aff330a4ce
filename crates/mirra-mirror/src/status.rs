//! A SyncConfig's status, computed from the outcomes of all the namespaces
//! it selects, and the decision whether it must be written.
//!
//! Counters are current totals (level-based), recomputed from the latest
//! outcomes of every selected namespace:
//!
//! - `synchronizedItemCount`: syncItem outcomes `InSync` or `Applied`;
//! - `deletedItemCount`: deleteItem outcomes `Deleted` or `Terminating`
//!   (objects already gone are not counted, as in espejo);
//! - `failedItemCount`: `Failed` outcomes plus items lost to a conflict.
//!
//! Orphaned copies (pruned or retained) are not counted.
//!
//! Conditions (all four are always present, `True` or `False`):
//!
//! | type     | True when                          | reasons (True / False)                                   |
//! |----------|------------------------------------|----------------------------------------------------------|
//! | Ready    | valid, within the limits, no item failed or lost, and no selected namespace still waits to be synchronized | SynchronizationSucceeded / LimitExceeded, SynchronizationFailed, SynchronizationPending |
//! | Invalid  | the spec is invalid                | InvalidSyncConfigSpec / ValidSyncConfigSpec              |
//! | Errored  | some item failed                   | SynchronizationFailedWithError / SynchronizationSucceeded|
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
//! [`status_changed`] says no write is needed. Unlike espejo, `Errored` is
//! cleared once the failures are gone, and delete failures are failures.
//!
//! What this module must NOT do: read the clock (the caller passes `now`).

use std::collections::BTreeSet;

use crate::compile::CompiledConfig;
use crate::error::ValidationError;
use crate::plan::{ItemOutcome, ItemRef, OutcomeState};
use crate::refs::ConfigRef;
use crate::resource::{SyncConfigCondition, SyncConfigStatus};

/// Condition type: everything is in sync.
pub const CONDITION_READY: &str = "Ready";
/// Condition type: the spec is invalid.
pub const CONDITION_INVALID: &str = "Invalid";
/// Condition type: some items failed.
pub const CONDITION_ERRORED: &str = "Errored";
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
    /// deleteItem outcomes being deleted.
    pub deleted: i64,
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
        s.won_over
            .extend(o.contenders.iter().filter(|c| *c != config).cloned());
        let place = format!("{} {}/{}", o.target.namespace, o.target.kind, o.target.name);
        match (&o.state, o.item) {
            (_, ItemRef::Orphan) => {}
            (OutcomeState::InSync | OutcomeState::Applied, ItemRef::Sync(_)) => s.synchronized += 1,
            (OutcomeState::Deleted | OutcomeState::Terminating, ItemRef::Delete(_)) => {
                s.deleted += 1
            }
            (OutcomeState::Failed { reason }, _) => {
                s.failed += 1;
                s.failures.push(format!("{place}: {reason}"));
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
                        "{place}: {} names the same object as {}",
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
    s.failures.sort();
    s
}

fn item_path(item: ItemRef) -> String {
    match item {
        ItemRef::Sync(i) => format!("spec.syncItems[{i}]"),
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
        let ready = summary.failed == 0 && summary.pending == 0 && summary.limit.is_none();
        conditions.push(cond(
            CONDITION_READY,
            ready,
            if summary.limit.is_some() {
                REASON_LIMIT_EXCEEDED
            } else if ready {
                REASON_SUCCEEDED
            } else if summary.failed == 0 {
                REASON_PENDING
            } else {
                REASON_FAILED
            },
            if let Some(limit) = &summary.limit {
                format!("{limit}; {LIMIT_CONSEQUENCE}")
            } else if ready {
                format!(
                    "{} item(s) synchronized, {} being deleted",
                    summary.synchronized, summary.deleted
                )
            } else if summary.failed == 0 {
                format!(
                    "{} namespace(s) not synchronized yet; {} item(s) synchronized so far",
                    summary.pending, summary.synchronized
                )
            } else {
                format!("{} item(s) failed", summary.failed)
            },
        ));
        conditions.push(cond(
            CONDITION_INVALID,
            false,
            REASON_VALID,
            "the spec is valid".into(),
        ));
        let errored = !summary.failures.is_empty();
        conditions.push(cond(
            CONDITION_ERRORED,
            errored,
            if errored {
                REASON_FAILED_WITH_ERROR
            } else {
                REASON_SUCCEEDED
            },
            if errored {
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
