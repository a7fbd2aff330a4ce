//! Write fencing: a writer asks, right before it sends, whether this
//! replica still holds the leader-election Lease with at least its request
//! timeout left, and the request is cut off when that timeout ends.
//!
//! ```text
//!   last successful renewal started ──────── lease duration ────────► deadline
//!                        check: deadline - now >= T ?  ── no ──► skip, requeue
//!                                 │ yes
//!                                 └─ send, cancelled after T (so it ends before the deadline)
//! ```
//!
//! The deadline is the instant the elector steps down at unless it renews
//! again, and a successor cannot take the lease before it (see
//! `leader`). A write that passes the check therefore starts and ends
//! while no other replica may write, even if this process is paused right
//! after the check or cut off from the API server: the `leading` flag alone
//! cannot promise that, since it may be read just before it turns false.
//!
//! It must NOT: retry or requeue (the caller knows its own retry rules),
//! decide anything about leadership (the elector does), or be checked
//! anywhere but right before a send: a check made earlier proves nothing.

use std::future::Future;
use std::time::Duration;

use crate::leader::LeaseDeadline;

/// Why a write was not sent, or did not finish.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FenceError {
    /// This replica does not hold the Lease (any more). Retryable: the
    /// controller is stopped on losing leadership, and whichever replica
    /// leads next writes.
    #[error("not the leader: write not sent")]
    NotLeading,
    /// The Lease is held, but could lapse before a request of this timeout
    /// ends. Retryable: the next renewal moves the deadline.
    #[error(
        "the lease is held for {left:?} only, less than the write timeout {timeout:?}: write not sent"
    )]
    TooLittleLeft {
        /// How long the lease is surely held.
        left: Duration,
        /// The writer's request timeout.
        timeout: Duration,
    },
    /// The request was sent but did not finish within the write timeout
    /// and was cancelled. Retryable (the server may or may not have
    /// applied it: callers' writes are idempotent or preconditioned).
    #[error("the write did not finish within {0:?} and was cancelled")]
    TimedOut(Duration),
    /// A dry run (`--dry-run`): nothing is ever sent. The controllers
    /// report their writes to the preview instead of sending them; this
    /// refusal is the second line, for any write that was not.
    #[error("dry run: write not sent")]
    DryRun,
}

impl FenceError {
    /// A low-cardinality label for the errors metric.
    pub fn class(&self) -> &'static str {
        match self {
            FenceError::NotLeading | FenceError::TooLittleLeft { .. } => "fenced",
            FenceError::TimedOut(_) => "write_timeout",
            FenceError::DryRun => "dry_run",
        }
    }
}

/// The check one writer makes before each request: a [`LeaseDeadline`]
/// and that writer's request timeout. Cheap to clone.
#[derive(Debug, Clone)]
pub struct WriteFence {
    lease: LeaseDeadline,
    timeout: Duration,
    dry_run: bool,
}

impl WriteFence {
    /// A fence for requests of at most `timeout` under `lease`.
    pub fn new(lease: LeaseDeadline, timeout: Duration) -> Self {
        Self {
            lease,
            timeout,
            dry_run: false,
        }
    }

    /// The same fence refusing every write ([`FenceError::DryRun`]).
    pub fn dry_run(self) -> Self {
        Self {
            dry_run: true,
            ..self
        }
    }

    /// The request timeout this fence requires and enforces.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Whether a request started now would end while the lease is surely
    /// held. A refusal is counted in `mirra_fenced_writes_total`.
    pub fn check(&self) -> Result<(), FenceError> {
        if self.dry_run {
            tracing::error!("a write reached the fence in a dry run; not sent");
            return Err(FenceError::DryRun);
        }
        let refusal = match self.lease.remaining() {
            None => FenceError::NotLeading,
            Some(left) if left >= self.timeout => return Ok(()),
            Some(left) => FenceError::TooLittleLeft {
                left,
                timeout: self.timeout,
            },
        };
        self.lease.metrics().fenced_write();
        tracing::debug!(error = %refusal, "write fenced");
        Err(refusal)
    }

    /// Checks, then runs `request` cancelled after the timeout: the only
    /// way writers send.
    pub async fn send<F: Future>(&self, request: F) -> Result<F::Output, FenceError> {
        self.check()?;
        let hold = self.lease.hold();
        let timed = async move {
            if let Some(mut hold) = hold {
                // Err only when the test's sender is gone: then go on.
                let _ = hold.wait_for(|held| !*held).await;
            }
            request.await
        };
        tokio::time::timeout(self.timeout, timed)
            .await
            .map_err(|_| FenceError::TimedOut(self.timeout))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn without_election_every_write_goes_out_but_none_outlives_its_timeout() {
        tokio::time::pause();
        let fence = WriteFence::new(LeaseDeadline::always(), Duration::from_secs(10));
        assert_eq!(fence.check(), Ok(()));
        assert_eq!(fence.send(async { 7 }).await, Ok(7));
        let slow = fence
            .send(tokio::time::sleep(Duration::from_secs(11)))
            .await;
        assert_eq!(slow, Err(FenceError::TimedOut(Duration::from_secs(10))));
        assert_eq!(slow.unwrap_err().class(), "write_timeout");
    }

    #[tokio::test]
    async fn a_dry_run_fence_sends_nothing() {
        let fence = WriteFence::new(LeaseDeadline::always(), Duration::from_secs(10)).dry_run();
        let sent = std::sync::atomic::AtomicBool::new(false);
        let r = fence
            .send(async { sent.store(true, std::sync::atomic::Ordering::SeqCst) })
            .await;
        assert_eq!(r, Err(FenceError::DryRun));
        assert_eq!(FenceError::DryRun.class(), "dry_run");
        assert!(!sent.load(std::sync::atomic::Ordering::SeqCst));
    }

    #[tokio::test]
    async fn a_held_write_is_cancelled_at_its_timeout() {
        tokio::time::pause();
        let (hold, held) = tokio::sync::watch::channel(true);
        let lease = LeaseDeadline::always().with_write_hold(held);
        let fence = WriteFence::new(lease, Duration::from_secs(1));
        let sent = std::sync::atomic::AtomicBool::new(false);
        let r = fence
            .send(async { sent.store(true, std::sync::atomic::Ordering::SeqCst) })
            .await;
        assert_eq!(r, Err(FenceError::TimedOut(Duration::from_secs(1))));
        assert!(!sent.load(std::sync::atomic::Ordering::SeqCst));
        hold.send_replace(false);
        assert_eq!(fence.send(async { 1 }).await, Ok(1));
    }
}
