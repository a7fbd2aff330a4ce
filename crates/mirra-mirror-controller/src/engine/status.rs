//! The status writer: the loop that writes SyncConfig statuses the state has
//! queued, one at a time, with the version each was planned from.
//!
//! This module must NOT plan statuses: the state does (see
//! `crate::state`); this only sends them and reports the answers back.

use super::*;

/// Writes statuses, sets readiness and refreshes gauges, once per status
/// window.
pub(super) async fn status_loop(shared: Arc<Shared>, ready: ReadyFlag) {
    loop {
        tokio::select! {
            _ = shared.shutdown.cancelled() => return,
            _ = tokio::time::sleep(shared.settings.status_debounce) => {}
        }
        shared
            .metrics
            .set_queue_depth(CONTROLLER, shared.queue.len());
        let busy = !shared.queue.is_empty() || shared.queue.in_flight() > 0;
        let now_str = k8s_openapi::jiff::Timestamp::now()
            .strftime("%Y-%m-%dT%H:%M:%SZ")
            .to_string();
        let max_delay = shared.settings.status_max_delay;
        let (sizes, conditions, is_ready, todo) = shared.with_state(|s| {
            let sizes = s.cache_sizes();
            let conditions = s.condition_counts();
            if !s.caches_ready() {
                return (sizes, conditions, false, Vec::new());
            }
            let is_queued = |n: &String| shared.queue.is_queued(n);
            let todo = s.plan_statuses(&StatusRound {
                now: Instant::now(),
                busy,
                max_delay,
                now_str: &now_str,
                is_queued: &is_queued,
            });
            (sizes, conditions, true, todo)
        });
        for (kind, n) in sizes {
            shared.metrics.set_cached_objects(&kind, n);
        }
        for (condition, n) in conditions {
            shared.metrics.set_syncconfigs(condition, n);
        }
        if is_ready && !ready.is_ready() {
            tracing::info!("every cache holds its initial list: ready");
            ready.set_ready();
        }
        for w in todo {
            write_status(&shared, w).await;
        }
    }
}

pub(super) async fn write_status(shared: &Shared, w: StatusWrite) {
    let StatusWrite {
        key,
        previous,
        new,
        base,
        deletes_shown,
    } = w;
    let key = &key;
    let previous = previous.as_ref();
    if let Some(preview) = &shared.settings.preview {
        // What the status would become, against what it is: reported, and
        // taken as written so the same status is not planned again.
        let diff = mirra_runtime::preview::short_diff(
            &serde_json::to_value(&new).unwrap_or_default(),
            &previous
                .and_then(|p| serde_json::to_value(p).ok())
                .unwrap_or_else(|| json!({})),
            false,
            8,
        );
        preview.replace(
            &status_scope(&key.namespace, &key.name),
            vec![mirra_runtime::PlannedWrite {
                kind: mirra_mirror::resource::KIND.to_string(),
                namespace: key.namespace.to_string(),
                name: key.name.to_string(),
                operation: "patch-status",
                reason: "status",
                diff,
            }],
        );
        shared.with_state(|s| s.status_written(key, new, base, None, &deletes_shown));
        return;
    }
    // The answer is decoded as a ConfigObject so that a SyncConfig nested
    // too deep for the decoder still gets its status.
    let api: Api<ConfigObject> = Api::namespaced_with(
        shared.client.clone(),
        &key.namespace,
        &watches::syncconfig_resource(),
    );
    // The version the status was planned from is a precondition: a status
    // planned before a newer spec (or written by a paused ex-leader) does
    // not land over the newer one's; it is planned again.
    let patch = match &base {
        Some(version) => json!({ "metadata": { "resourceVersion": version }, "status": new }),
        None => json!({ "status": new }),
    };
    let sent = shared
        .fence
        .send(api.patch_status(&key.name, &PatchParams::default(), &Patch::Merge(&patch)))
        .await;
    let answer = match sent {
        Ok(answer) => answer,
        Err(fenced) => {
            tracing::debug!(syncconfig = %key, error = %fenced, "status write fenced");
            shared.metrics.error(fenced.class());
            shared.with_state(|s| s.status_write_failed(key));
            return;
        }
    };
    match answer {
        Ok(answer) => {
            shared
                .metrics
                .write("patch-status", mirra_mirror::resource::KIND);
            record_events(shared, key, previous, &new).await;
            shared.with_state(|s| {
                s.status_written(
                    key,
                    new,
                    base,
                    answer.metadata.resource_version,
                    &deletes_shown,
                )
            });
        }
        Err(kube::Error::Api(s)) if s.code == 404 => {
            // The SyncConfig is gone; nothing to report on.
        }
        Err(kube::Error::Api(s)) if s.code == 409 => {
            // Planned from an older version: plan again once the watch
            // brings the newer one.
            shared.metrics.error("conflict");
            tracing::debug!(syncconfig = %key, "status planned from an older version, planning again");
            shared.with_state(|s| s.status_write_stale(key));
        }
        Err(e) => {
            shared.metrics.error("status");
            tracing::warn!(syncconfig = %key, error = %e, "status write failed, retrying");
            shared.with_state(|s| s.status_write_failed(key));
        }
    }
}

/// The preview scope of a SyncConfig's status in a dry run.
pub(crate) fn status_scope(namespace: &str, name: &str) -> String {
    format!("status {namespace}/{name}")
}
