//! Running a controller only while this replica leads.
//!
//! ```text
//!   elector ──leading──► start controller(token, lease deadline)
//!           ──lost─────► cancel token, wait for it to return, campaign again
//!   stop ──► cancel the controller, wait for it (in-flight writes end,
//!            bounded by their timeout) ──► only then stop the elector,
//!            which releases the Lease
//! ```
//!
//! The order on shutdown matters: releasing the Lease first would let a
//! successor start writing while this replica's last writes are still in
//! flight. Every start of the controller is a fresh one (new caches, new
//! initial lists), so a new leader plans everything at once rather than
//! trusting what a previous term left behind.
//!
//! It must NOT: decide leadership (the elector does) or know what the
//! controller does.

use std::future::Future;

use tokio_util::sync::CancellationToken;

use crate::health::Readiness;
use crate::leader::{LeaderElector, LeaseDeadline};

/// Runs `controller` each time `elector` wins the Lease, until `stop`: its
/// token is cancelled when leadership is lost, and it is started again when
/// leadership is regained. Each start gets the [`LeaseDeadline`] its writers
/// fence on.
///
/// While this replica waits for the Lease, `readiness` reports it as a
/// standby (ready, unless a condition such as the Lease's reachability
/// fails); as the leader it is ready once its controllers are. A
/// controller error ends the loop: the elector is stopped (releasing the
/// Lease) and the error returned.
pub async fn run_while_leading<F, Fut, E>(
    elector: LeaderElector,
    readiness: &Readiness,
    stop: CancellationToken,
    mut controller: F,
) -> Result<(), E>
where
    F: FnMut(CancellationToken, LeaseDeadline) -> Fut,
    Fut: Future<Output = Result<(), E>>,
{
    let mut leading = elector.subscribe();
    let deadline = elector.deadline();
    // Not a child of `stop`: the elector must outlive the controller.
    let election_stop = CancellationToken::new();
    let election = {
        let election_stop = election_stop.clone();
        tokio::spawn(elector.run(async move { election_stop.cancelled().await }))
    };
    let result = loop {
        readiness.set_standby(true);
        tokio::select! {
            _ = stop.cancelled() => break Ok(()),
            changed = leading.wait_for(|l| *l) => {
                if changed.is_err() {
                    break Ok(());
                }
            }
        }
        readiness.set_standby(false);
        tracing::info!("leading: starting the controller");
        let term = stop.child_token();
        let watcher = {
            let term = term.clone();
            let mut leading = leading.clone();
            tokio::spawn(async move {
                let _ = leading.wait_for(|l| !*l).await;
                term.cancel();
            })
        };
        let result = controller(term, deadline.clone()).await;
        watcher.abort();
        if let Err(e) = result {
            break Err(e);
        }
        if stop.is_cancelled() {
            break Ok(());
        }
        tracing::warn!("lost leadership: controller stopped, campaigning again");
    };
    // The controller has returned, its writes with it: now the Lease may go.
    election_stop.cancel();
    if let Err(e) = election.await {
        tracing::error!(error = %e, "the leader elector task failed");
    }
    result
}
