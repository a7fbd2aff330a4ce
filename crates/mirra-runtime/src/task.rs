//! The task guard both controllers hold for every watch they spawn.
//!
//! A watch task parked in a long blocking query or a Kubernetes watch must
//! not outlive what started it: dropping its cache entry (mirror) or the
//! event loop (catalog) has to stop it. `tokio-util` already ships exactly
//! that guard (`AbortOnDrop`, which holds an `AbortHandle` and aborts on
//! drop), so this module names it once for the controllers instead of each
//! keeping its own copy.

pub use tokio_util::task::AbortOnDrop as TaskGuard;

/// Guards a spawned task: the task is aborted when the returned guard is
/// dropped. The task keeps running while the guard is held, whether or
/// not anyone awaits its output.
pub fn guard<T>(task: &tokio::task::JoinHandle<T>) -> TaskGuard {
    TaskGuard::new(task.abort_handle())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn dropping_the_guard_aborts_the_task() {
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            // Holds the sender until aborted; never sends.
            let _tx = tx;
            std::future::pending::<()>().await;
        });
        let g = guard(&task);
        drop(g);
        // The sender is dropped only when the task is torn down.
        assert!(rx.await.is_err());
        assert!(task.await.is_err_and(|e| e.is_cancelled()));
    }

    #[tokio::test]
    async fn a_held_guard_leaves_the_task_running() {
        let (tx, rx) = tokio::sync::oneshot::channel::<u32>();
        let task = tokio::spawn(async move {
            let _ = tx.send(7);
        });
        let g = guard(&task);
        assert_eq!(rx.await.unwrap(), 7);
        assert!(task.await.is_ok());
        drop(g);
    }
}
