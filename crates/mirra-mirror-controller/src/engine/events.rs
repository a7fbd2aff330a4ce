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

/// Creates the Event of (SyncConfig, reason), or bumps its count.
pub async fn emit_event(shared: &Shared, key: &ConfigRef, reason: &str, message: &str) {
    let uid = shared.with_state(|s| s.config_uid(key)).unwrap_or_default();
    let api: Api<KubeEvent> = Api::namespaced(shared.client.clone(), &key.namespace);
    let name = format!("{}.{}", key.name, reason.to_ascii_lowercase());
    let now = k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let id = (key.clone(), reason.to_string());
    let sent = {
        let mut events = shared.events.lock().unwrap_or_else(|e| e.into_inner());
        let n = events.entry(id.clone()).or_insert(0);
        *n += 1;
        *n
    };
    let bump = json!({"count": sent, "message": message, "lastTimestamp": now});
    let create = || {
        let event = json!({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": key.namespace},
            "involvedObject": {
                "apiVersion": format!("{}/{}", mirra_mirror::resource::GROUP, mirra_mirror::resource::VERSION),
                "kind": mirra_mirror::resource::KIND,
                "name": key.name,
                "namespace": key.namespace,
                "uid": uid,
            },
            "reason": reason,
            "message": message,
            "type": "Warning",
            // 1 for a new Event; an earlier process's count is not known.
            "count": 1,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "source": {"component": "mirra"},
            "reportingComponent": "mirra",
            "reportingInstance": "mirra",
        });
        serde_json::from_value::<KubeEvent>(event)
    };
    let ev = match create() {
        Ok(ev) => ev,
        Err(e) => {
            tracing::error!(error = %e, "cannot build an Event");
            return;
        }
    };
    // One fenced send for the create-or-bump pair: both requests end
    // within the write timeout, so both within the Lease.
    let exchange = async {
        if sent == 1 {
            match api.create(&PostParams::default(), &ev).await {
                // Left by an earlier mirra process: bump it instead.
                Err(kube::Error::Api(s)) if s.code == 409 => api
                    .patch(&name, &PatchParams::default(), &Patch::Merge(&bump))
                    .await
                    .map(|_| ()),
                other => other.map(|_| ()),
            }
        } else {
            match api
                .patch(&name, &PatchParams::default(), &Patch::Merge(&bump))
                .await
            {
                // The Event expired (the API server's event TTL, one hour
                // by default) or was deleted: start a new one, counting
                // from 1, rather than losing every later Event of this
                // reason.
                Err(kube::Error::Api(s)) if s.code == 404 => {
                    shared
                        .events
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(id.clone(), 1);
                    api.create(&PostParams::default(), &ev).await.map(|_| ())
                }
                other => other.map(|_| ()),
            }
        }
    };
    match shared.fence.send(exchange).await {
        Ok(Ok(())) => shared.metrics.write("event", "Event"),
        Ok(Err(e)) => {
            // Events are best effort: the status carries the same facts.
            shared.metrics.error("event");
            tracing::warn!(syncconfig = %key, %reason, error = %e, "cannot record Event");
        }
        Err(fenced) => {
            shared.metrics.error(fenced.class());
            tracing::debug!(syncconfig = %key, %reason, error = %fenced, "Event fenced");
        }
    }
}
