//! Kubernetes Events on SyncConfigs: which failures of a pass raise one, and
//! emitting them (with secret values taken out of the texts).
//!
//! This module must NOT change the state or retry writes: Events only report.

use super::*;

/// Raises one Warning Event per condition that became True (or changed its
/// message), and one when Ready turned False for a limit (or its figures
/// changed): aggregated per SyncConfig and reason, with a count, never one
/// per namespace.
pub(super) async fn record_events(
    shared: &Shared,
    key: &ConfigRef,
    previous: Option<&SyncConfigStatus>,
    new: &SyncConfigStatus,
) {
    let limited = |s: &SyncConfigStatus| {
        s.conditions
            .iter()
            .find(|c| {
                c.type_ == CONDITION_READY && c.reason.as_deref() == Some(REASON_LIMIT_EXCEEDED)
            })
            .map(|c| c.message.clone().unwrap_or_default())
    };
    if let Some(message) = limited(new)
        && previous.and_then(limited).as_ref() != Some(&message)
    {
        emit_event(shared, key, REASON_LIMIT_EXCEEDED, &message).await;
    }
    for cond in &new.conditions {
        if ![
            CONDITION_INVALID,
            CONDITION_ERRORED,
            CONDITION_DEGRADED,
            CONDITION_CONFLICT,
        ]
        .contains(&cond.type_.as_str())
            || cond.status != "True"
        {
            continue;
        }
        let before = previous.and_then(|p| p.conditions.iter().find(|c| c.type_ == cond.type_));
        if before.is_some_and(|b| b.status == "True" && b.message == cond.message) {
            continue;
        }
        let reason = cond.reason.clone().unwrap_or_else(|| cond.type_.clone());
        let message = cond.message.clone().unwrap_or_default();
        emit_event(shared, key, &reason, &message).await;
    }
}

/// Creates the Event of (SyncConfig, reason), or bumps its count (see
/// `mirra_runtime::events`).
pub async fn emit_event(shared: &Shared, key: &ConfigRef, reason: &str, message: &str) {
    let uid = shared.with_state(|s| s.config_uid(key));
    let involved = k8s_openapi::api::core::v1::ObjectReference {
        api_version: Some(format!(
            "{}/{}",
            mirra_mirror::resource::GROUP,
            mirra_mirror::resource::VERSION
        )),
        kind: Some(mirra_mirror::resource::KIND.to_owned()),
        name: Some(key.name.to_string()),
        namespace: Some(key.namespace.to_string()),
        uid: uid.filter(|u| !u.is_empty()),
        ..Default::default()
    };
    match shared.events.warn(&involved, reason, message).await {
        Ok(()) => shared.metrics.write("event", "Event"),
        Err(mirra_runtime::events::EventError::Fenced(fenced)) => {
            shared.metrics.error(fenced.class());
            tracing::debug!(syncconfig = %key, %reason, error = %fenced, "Event fenced");
        }
        Err(e) => {
            // Events are best effort: the status carries the same facts.
            shared.metrics.error("event");
            tracing::warn!(syncconfig = %key, %reason, error = %e, "cannot record Event");
        }
    }
}
