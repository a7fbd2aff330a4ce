//! Blocking queries: the per-key wake-up channels blocked readers wait on,
//! and the wait itself (until the watched index passes `?index=` or the
//! wait time runs out).
//!
//! This module must NOT compute indexes or read catalog data itself: the
//! store says which keys a commit changed and what index a key is at.

use super::*;

/// Above this many per-key channels, a notification also drops channels
/// nobody waits on any more, so keys watched once do not pile up.
pub(super) const WATCHERS_SWEEP_THRESHOLD: usize = 4096;

/// Per-key wake-up channels for blocked readers.
pub(super) struct Watchers {
    keys: Mutex<HashMap<WatchKey, watch::Sender<()>>>,
    broad: watch::Sender<()>,
}

impl Default for Watchers {
    fn default() -> Self {
        Watchers {
            keys: Mutex::new(HashMap::new()),
            broad: watch::channel(()).0,
        }
    }
}

impl Watchers {
    /// A receiver that fires when `key`'s index may have moved. Must be
    /// called while holding the store's read lock, so that any commit not
    /// yet visible in the store is signalled after this subscription.
    pub(super) fn subscribe(&self, key: &WatchKey, store: &Store) -> watch::Receiver<()> {
        if !store.has_own_index(key) {
            return self.broad.subscribe();
        }
        let mut keys = self.keys.lock().unwrap_or_else(|p| p.into_inner());
        keys.entry(key.folded())
            .or_insert_with(|| watch::channel(()).0)
            .subscribe()
    }

    pub(super) fn notify(&self, changes: &ChangeSet) {
        if changes.is_empty() {
            return;
        }
        self.broad.send_replace(());
        let mut keys = self.keys.lock().unwrap_or_else(|p| p.into_inner());
        for key in changes.keys() {
            if let Some(tx) = keys.get(&key) {
                if tx.receiver_count() == 0 {
                    keys.remove(&key);
                } else {
                    tx.send_replace(());
                }
            }
        }
        if keys.len() > WATCHERS_SWEEP_THRESHOLD {
            keys.retain(|_, tx| tx.receiver_count() > 0);
        }
    }
}

/// Releases the blocking-query gauge even if the client goes away and the
/// request future is dropped mid-wait.
pub(super) struct OpenGuard<'a>(&'a AtomicU64);

impl Drop for OpenGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Runs a read, blocking first when the client sent `?index=`.
pub(super) async fn read_blocking<R>(
    shared: &Shared,
    q: &Query,
    key: WatchKey,
    read: impl Fn(&Store) -> R,
) -> Result<R, ApiError> {
    consistency(q)?;
    let wait = match q.get("wait").filter(|w| !w.is_empty()) {
        None => None,
        Some(w) => Some(
            router::parse_go_duration(w)
                .ok_or_else(|| ApiError::BadRequest("Invalid wait time".into()))?,
        ),
    };
    let min_index = match q.get("index").filter(|i| !i.is_empty()) {
        None => 0,
        Some(i) => i
            .parse::<u64>()
            .map_err(|_| ApiError::BadRequest("Invalid index".into()))?,
    };
    if min_index == 0 {
        return Ok(read(&shared.read()));
    }
    let base = router::effective_wait(wait);
    let max_jitter = (base / JITTER_FRACTION).as_nanos() as u64;
    let jitter = if max_jitter == 0 {
        0
    } else {
        rand::rng().random_range(0..max_jitter)
    };
    let deadline = Instant::now() + base + Duration::from_nanos(jitter);

    shared.blocking_total.fetch_add(1, Ordering::Relaxed);
    shared.blocking_open.fetch_add(1, Ordering::Relaxed);
    let _open = OpenGuard(&shared.blocking_open);
    let mut stop = shared.shutdown.subscribe();
    loop {
        if *stop.borrow_and_update() {
            break;
        }
        let mut wake = {
            let st = shared.read();
            if st.index_for(&key) > min_index {
                return Ok(read(&st));
            }
            // Subscribed under the read lock: a commit we did not see yet
            // will signal this receiver after it releases the write lock.
            shared.watchers.subscribe(&key, &st)
        };
        tokio::select! {
            changed = wake.changed() => {
                if changed.is_err() {
                    break;
                }
                shared.blocking_wakeups.fetch_add(1, Ordering::Relaxed);
            }
            () = tokio::time::sleep_until(deadline) => break,
            _ = stop.changed() => break,
        }
    }
    Ok(read(&shared.read()))
}
