//! The verification loop: a slow periodic pass that re-plans every namespace
//! from the caches, in chunks, so a missed event cannot leave a copy wrong for
//! good.
//!
//! This module must NOT read from the API server: it re-plans from the watch
//! caches only.

use super::*;

/// Re-plans every namespace from the caches, periodically. CPU only when
/// everything is in step; kinds discovery could not resolve are asked
/// again (a CRD may have been installed since).
pub(super) async fn verify_loop(shared: Arc<Shared>) {
    let Some(every) = shared.settings.verify_interval else {
        return;
    };
    loop {
        tokio::select! {
            _ = shared.shutdown.cancelled() => return,
            _ = tokio::time::sleep(every) => {}
        }
        let (keys, retry_kinds) = shared.with_state(|s| {
            // Asked again through discovery: a CRD may have been installed.
            let retry = s.forget_failed_kinds();
            // Tenant accounts refused a read are asked again: a grant is
            // picked up here.
            s.forget_access_refusals();
            let keys: BTreeSet<String> = s.namespace_names().into_iter().collect();
            (keys, retry)
        });
        watches::restart_refused_watches(&shared);
        if retry_kinds {
            shared.kinds_changed.notify_one();
        }
        tracing::debug!(namespaces = keys.len(), "verification pass");
        let keys: Vec<String> = keys.into_iter().collect();
        for chunk in keys.chunks(VERIFY_CHUNK) {
            // Event-driven keys go first: the next slice of the pass is
            // queued only once the queue is empty, so a namespace created
            // during a pass waits behind one slice, not the whole cluster.
            while !shared.queue.is_empty() {
                tokio::select! {
                    _ = shared.shutdown.cancelled() => return,
                    _ = tokio::time::sleep(VERIFY_YIELD) => {}
                }
            }
            let now = Instant::now();
            shared.with_state(|s| {
                s.note_verifying(chunk, |k| shared.queue.is_queued(k));
                s.note_dirty(chunk.iter(), now);
            });
            for k in chunk {
                // No debounce: nothing is bursting, the pass itself is
                // the event.
                shared.queue.add_after(k.clone(), Duration::ZERO);
            }
        }
    }
}

/// Namespaces queued at once by the verification pass. 32: planning one
/// namespace of 40 items costs about a millisecond of CPU, so an event that
/// arrives mid-pass waits some tens of milliseconds at most.
pub(super) const VERIFY_CHUNK: usize = 32;

/// How often the verification pass looks whether the queue has drained.
/// 10 ms: small against the 100 ms debounce of events, and a pass over a
/// thousand namespaces still takes well under a few seconds.
pub(super) const VERIFY_YIELD: Duration = Duration::from_millis(10);
