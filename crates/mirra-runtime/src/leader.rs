//! Leader election on a `coordination.k8s.io/v1` Lease.
//!
//! Several replicas may run; only the leader writes. Each replica runs a
//! [`LeaderElector`]; a `watch::Receiver<bool>` tells the rest of the process
//! whether it currently leads, and writers check it before every write.
//!
//! ```text
//!            every `renew`: GET lease
//!   ┌──────────────┬──────────────────────────┬─────────────────────────┐
//!   │ absent       │ held by us               │ free or expired          │ held, fresh
//!   │ CREATE       │ PUT renewTime (rv-guard) │ PUT holder=us (rv-guard) │ wait
//!   └──────────────┴──────────────────────────┴─────────────────────────┘
//!     409 on any write = another replica won the race: follow.
//! ```
//!
//! Expiry never compares clocks between machines: a follower considers the
//! lease expired when the record has not changed (same `resourceVersion`)
//! for a full lease duration *as measured by its own monotonic clock since
//! it first saw that record*. The leader steps down when it has not renewed
//! successfully for a lease duration counted from *before* its last
//! successful renewal was sent, which is never later than when any follower
//! can have seen that renewal, so the leader stops strictly before anyone
//! may take over (given clocks that tick at the same rate).
//!
//! `kube-lease-manager` is not used: it judges a Lease by the times
//! written in it, tolerating a configured skew between the machines'
//! clocks, where this elector never compares two machines' clocks, and the
//! write fence needs the deadline below, not only whether the lease is
//! held.
//!
//! On a clean shutdown the leader releases the lease (clears the holder) so
//! a successor takes over at its next attempt instead of after expiry.
//!
//! Besides the flag, the elector publishes its *deadline*: the start of its
//! last successful renewal plus the lease duration, the instant it steps
//! down at unless it renews again. Writers ask a [`LeaseDeadline`] (through
//! a [`crate::fence::WriteFence`]) whether the lease is held with at least
//! their request timeout left right before they send, so a replica that
//! was paused or cut off from the API server never writes after a
//! successor may have started.
//!
//! Failures are visible: each failed request counts in
//! `mirra_leader_election_errors_total{class}`, one warning per change of
//! failure (not per retry) names the missing RBAC verb or the missing
//! namespace, and an optional readiness condition fails once the Lease has
//! not been reached for [`UNREACHABLE_LEASES`] lease durations.
//!
//! It must NOT: stop or start controllers itself (it only publishes the
//! flag and the deadline), retry a lost race immediately, or trust
//! wall-clock timestamps written by other replicas.

use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, ObjectMeta, PostParams};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::health::ReadyCondition;
use crate::metrics::LeaderMetrics;

/// After this many lease durations without reaching the Lease (every
/// request failing), the readiness condition fails. Three: one failed
/// lease duration is a blip a leader survives (it steps down and campaigns
/// again), three mean the replica cannot take part in the election at all,
/// and an operator should see it in the pod's status.
pub const UNREACHABLE_LEASES: u32 = 3;

/// Errors of leader election.
#[derive(Debug, thiserror::Error)]
pub enum LeaderError {
    /// The configuration is inconsistent (see the message). Not retryable:
    /// fix the flags.
    #[error("invalid leader election configuration: {0}")]
    InvalidConfig(&'static str),
    /// A request about the Lease failed (network, 5xx, 403, 404).
    /// Retryable: the elector retries every `renew` interval by itself; a
    /// persistent 403 means the RBAC role lacks `verb` on leases, a 404 on
    /// create that the namespace does not exist
    /// ([`LeaderError::diagnosis`] says which).
    #[error("lease request ({verb}) failed: {source}")]
    Api {
        /// The Kubernetes verb of the request: `get`, `create` or `update`.
        verb: &'static str,
        /// The client's error.
        source: kube::Error,
    },
    /// A request about the Lease did not answer in time. Retryable: retried
    /// at the next interval.
    #[error("lease request timed out")]
    Timeout,
}

impl LeaderError {
    /// A low-cardinality label for the errors metric.
    pub fn class(&self) -> &'static str {
        match self {
            LeaderError::InvalidConfig(_) => "config",
            LeaderError::Api {
                source: kube::Error::Api(s),
                ..
            } if s.code == 403 => "forbidden",
            LeaderError::Api {
                source: kube::Error::Api(s),
                ..
            } if s.code == 404 => "not_found",
            LeaderError::Api { .. } => "api",
            LeaderError::Timeout => "timeout",
        }
    }

    /// What an operator must fix, when the answer says it: the RBAC verb
    /// on leases the role lacks in `namespace` (403), or the namespace that
    /// does not exist (404 naming a namespace). `None` for errors that
    /// are not a configuration problem (5xx, network, timeouts).
    pub fn diagnosis(&self, namespace: &str) -> Option<String> {
        let LeaderError::Api {
            verb,
            source: kube::Error::Api(s),
        } = self
        else {
            return None;
        };
        match s.code {
            403 => Some(format!(
                "RBAC: the service account may not {verb} leases (coordination.k8s.io) in \
                 namespace {namespace:?}; grant get, create and update on leases there"
            )),
            404 if s.details.as_ref().is_some_and(|d| d.kind == "namespaces") => Some(format!(
                "the leader-election namespace {namespace:?} does not exist; create it or \
                 pass --leader-elect-namespace"
            )),
            _ => None,
        }
    }

    /// A key that changes only when the kind of failure changes, so that a
    /// failure repeated every retry is logged once.
    fn state_key(&self) -> (&'static str, &'static str) {
        match self {
            LeaderError::Api { verb, .. } => (self.class(), verb),
            _ => (self.class(), ""),
        }
    }
}

/// Tags a client error with the verb of the request.
fn api(verb: &'static str) -> impl FnOnce(kube::Error) -> LeaderError {
    move |source| LeaderError::Api { verb, source }
}

/// Where the Lease lives, who we are, and how fast to act.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderConfig {
    /// Namespace of the Lease (normally the pod's own namespace).
    pub namespace: String,
    /// Name of the Lease.
    pub lease_name: String,
    /// Our holder identity; see [`default_identity`].
    pub identity: String,
    /// How long a lease is valid without renewal; written to the Lease as
    /// `leaseDurationSeconds` (rounded up to whole seconds).
    pub lease_duration: Duration,
    /// Interval between attempts to renew (leader) or acquire (follower).
    pub renew: Duration,
}

impl LeaderConfig {
    /// A configuration with the default timings.
    pub fn new(
        namespace: impl Into<String>,
        lease_name: impl Into<String>,
        identity: impl Into<String>,
    ) -> Self {
        Self {
            namespace: namespace.into(),
            lease_name: lease_name.into(),
            identity: identity.into(),
            // 15 s / 2 s, the values client-go and kube-controller-manager
            // use: a crashed leader is replaced within ~15 s, and the leader
            // gets seven renewal attempts before its lease can lapse, so a
            // few slow API answers do not cause a leadership flap.
            lease_duration: Duration::from_secs(15),
            renew: Duration::from_secs(2),
        }
    }

    /// Checks the timings and names.
    pub fn validate(&self) -> Result<(), LeaderError> {
        if self.namespace.is_empty() || self.lease_name.is_empty() {
            return Err(LeaderError::InvalidConfig(
                "namespace and lease name are required",
            ));
        }
        if self.identity.is_empty() {
            return Err(LeaderError::InvalidConfig("identity must not be empty"));
        }
        if self.lease_duration < Duration::from_secs(1) {
            return Err(LeaderError::InvalidConfig(
                "lease_duration must be at least 1s",
            ));
        }
        if self.renew.is_zero() || self.renew * 2 > self.lease_duration {
            return Err(LeaderError::InvalidConfig(
                "renew must be > 0 and at most half of lease_duration",
            ));
        }
        Ok(())
    }

    /// The longest write timeout a healthy leader can always afford: right
    /// before a renewal it has `lease_duration - renew` of its lease left.
    /// A writer whose timeout is longer is fenced for part of every renewal
    /// cycle (or always, past `lease_duration`).
    pub fn fence_budget(&self) -> Duration {
        self.lease_duration.saturating_sub(self.renew)
    }

    fn lease_seconds(&self) -> i32 {
        let secs =
            self.lease_duration.as_secs() + u64::from(self.lease_duration.subsec_nanos() > 0);
        i32::try_from(secs).unwrap_or(i32::MAX)
    }
}

/// Length of the random suffix of an identity: 8 characters from 36 give
/// ~2.8e12 values, so two processes on the same host (or a restarted pod
/// reusing its name while the old lease record still exists) never collide.
const IDENTITY_SUFFIX_LEN: usize = 8;

/// `<pod name or hostname>-<random suffix>`.
///
/// The pod name comes from `POD_NAME` (set it with the downward API), then
/// `HOSTNAME`, then the kernel's hostname; `mirra` if none is known. The
/// suffix distinguishes a restarted process from its previous incarnation,
/// which must not be mistaken for the holder of the old lease.
pub fn default_identity() -> String {
    let base = ["POD_NAME", "HOSTNAME"]
        .into_iter()
        .filter_map(|v| std::env::var(v).ok())
        .chain(std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .map(|s| s.trim().to_owned())
        .find(|s| !s.is_empty());
    identity_with_suffix(base.as_deref(), &random_suffix())
}

fn random_suffix() -> String {
    use rand::Rng;
    use rand::distr::Alphanumeric;
    rand::rng()
        .sample_iter(Alphanumeric)
        .take(IDENTITY_SUFFIX_LEN)
        .map(|b| char::from(b).to_ascii_lowercase())
        .collect()
}

fn identity_with_suffix(base: Option<&str>, suffix: &str) -> String {
    format!(
        "{}-{suffix}",
        base.filter(|b| !b.is_empty()).unwrap_or("mirra")
    )
}

/// What to do with the lease as currently observed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decision {
    /// We hold it: renew.
    Renew,
    /// Free or expired: take it.
    Acquire,
    /// Someone else holds a fresh lease.
    Follow,
}

/// Pure decision from the current holder and how long the record has been
/// unchanged by our own clock.
fn decide(
    holder: Option<&str>,
    me: &str,
    unchanged_for: Duration,
    valid_for: Duration,
) -> Decision {
    match holder {
        None | Some("") => Decision::Acquire,
        Some(h) if h == me => Decision::Renew,
        Some(_) if unchanged_for >= valid_for => Decision::Acquire,
        Some(_) => Decision::Follow,
    }
}

/// The lease record as last seen and when we first saw it.
#[derive(Debug, Clone)]
struct Observed {
    resource_version: Option<String>,
    since: Instant,
}

/// Until when this replica surely holds the Lease, as its elector last
/// published it; `None` while it does not lead. Cheap to clone.
///
/// [`LeaseDeadline::always`] stands for "no election" (a single replica):
/// the lease never runs out.
#[derive(Debug, Clone)]
pub struct LeaseDeadline {
    rx: Option<watch::Receiver<Option<Instant>>>,
    metrics: LeaderMetrics,
    hold: Option<watch::Receiver<bool>>,
}

impl Default for LeaseDeadline {
    fn default() -> Self {
        Self::always()
    }
}

impl LeaseDeadline {
    /// No election: writes are never fenced.
    pub fn always() -> Self {
        Self {
            rx: None,
            metrics: LeaderMetrics::default(),
            hold: None,
        }
    }

    /// How long the lease is surely held from now: `None` when not leading
    /// (or the deadline has passed), [`Duration::MAX`] without election.
    pub fn remaining(&self) -> Option<Duration> {
        let Some(rx) = &self.rx else {
            return Some(Duration::MAX);
        };
        let deadline = (*rx.borrow())?;
        let left = deadline.saturating_duration_since(Instant::now());
        (!left.is_zero()).then_some(left)
    }

    /// The metrics fenced writes are counted in.
    pub fn metrics(&self) -> &LeaderMetrics {
        &self.metrics
    }

    /// Test hook: every fenced write waits after its check while `hold`
    /// is true, as if the process were paused between deciding to write
    /// and sending. The write's timeout keeps running meanwhile.
    pub fn with_write_hold(mut self, hold: watch::Receiver<bool>) -> Self {
        self.hold = Some(hold);
        self
    }

    /// The hook set by [`LeaseDeadline::with_write_hold`].
    pub(crate) fn hold(&self) -> Option<watch::Receiver<bool>> {
        self.hold.clone()
    }
}

/// Runs leader election for one replica; see the module docs.
#[derive(Debug)]
pub struct LeaderElector {
    api: Api<Lease>,
    config: LeaderConfig,
    tx: watch::Sender<bool>,
    deadline: watch::Sender<Option<Instant>>,
    observed: Option<Observed>,
    metrics: LeaderMetrics,
    reachable: Option<ReadyCondition>,
}

enum Attempt {
    Leading,
    Following,
}

fn is_conflict(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 409)
}

fn now_micro() -> MicroTime {
    MicroTime(k8s_openapi::jiff::Timestamp::now())
}

impl LeaderElector {
    /// Creates an elector; nothing is sent until [`run`](LeaderElector::run).
    pub fn new(client: kube::Client, config: LeaderConfig) -> Result<Self, LeaderError> {
        config.validate()?;
        let api = Api::namespaced(client, &config.namespace);
        let (tx, _) = watch::channel(false);
        let (deadline, _) = watch::channel(None);
        Ok(Self {
            api,
            config,
            tx,
            deadline,
            observed: None,
            metrics: LeaderMetrics::default(),
            reachable: None,
        })
    }

    /// Exports the `leader` gauge and the error counter into `metrics`.
    pub fn with_metrics(mut self, metrics: LeaderMetrics) -> Self {
        self.metrics = metrics;
        self
    }

    /// Sets `condition` to whether the Lease was reached (any answer that
    /// is not an error) within the last [`UNREACHABLE_LEASES`] lease
    /// durations.
    pub fn with_readiness(mut self, condition: ReadyCondition) -> Self {
        self.reachable = Some(condition);
        self
    }

    /// The deadline writers check; see [`LeaseDeadline`].
    pub fn deadline(&self) -> LeaseDeadline {
        LeaseDeadline {
            rx: Some(self.deadline.subscribe()),
            metrics: self.metrics.clone(),
            hold: None,
        }
    }

    /// Whether this replica leads, now and on every change. Becomes `false`
    /// (and then closed) when `run` ends.
    pub fn subscribe(&self) -> watch::Receiver<bool> {
        self.tx.subscribe()
    }

    /// Our holder identity.
    pub fn identity(&self) -> &str {
        &self.config.identity
    }

    /// Campaigns and renews until `shutdown` completes, then releases the
    /// lease if held. API errors are logged and retried; they never end the
    /// loop.
    pub async fn run(mut self, shutdown: impl Future<Output = ()>) {
        tokio::pin!(shutdown);
        // Start of the last successful renewal, while leading.
        let mut leading_since_renew: Option<Instant> = None;
        // When a request last got an answer that was not an error; the
        // start counts, so readiness gives a new process the same grace.
        let mut last_reached = Instant::now();
        let unreachable_after = self.config.lease_duration * UNREACHABLE_LEASES;
        // The kind of the current failure streak, so that it is logged once.
        let mut failing: Option<(&'static str, &'static str)> = None;
        loop {
            let started = Instant::now();
            // While leading, an attempt may only run until the step-down
            // deadline; otherwise one lease duration bounds a hung request.
            let budget = match leading_since_renew {
                Some(t) => (t + self.config.lease_duration).saturating_duration_since(started),
                None => self.config.lease_duration,
            };
            let result = tokio::select! {
                _ = &mut shutdown => break,
                r = tokio::time::timeout(budget, self.attempt()) => r.unwrap_or(Err(LeaderError::Timeout)),
            };
            if result.is_ok() {
                last_reached = Instant::now();
                if failing.take().is_some() {
                    tracing::info!(lease = %self.config.lease_name, namespace = %self.config.namespace,
                        "the leader-election Lease is reachable again");
                }
            }
            match result {
                Ok(Attempt::Leading) => {
                    leading_since_renew = Some(started);
                    self.deadline
                        .send_replace(Some(started + self.config.lease_duration));
                    self.publish(true);
                }
                Ok(Attempt::Following) => {
                    leading_since_renew = None;
                    self.publish(false);
                }
                Err(e) => {
                    self.metrics.error(e.class());
                    let key = e.state_key();
                    if failing != Some(key) {
                        failing = Some(key);
                        let hint = e.diagnosis(&self.config.namespace);
                        tracing::warn!(error = %e, class = e.class(), lease = %self.config.lease_name,
                            namespace = %self.config.namespace, fix = hint.as_deref().unwrap_or("none known; retrying"),
                            "leader election attempt failed (logged once until the failure changes)");
                    } else {
                        tracing::debug!(error = %e, class = e.class(), "leader election attempt failed again");
                    }
                    if let Some(t) = leading_since_renew
                        && t.elapsed() >= self.config.lease_duration
                    {
                        tracing::warn!("could not renew the lease in time; stepping down");
                        leading_since_renew = None;
                        self.publish(false);
                    }
                }
            }
            if let Some(c) = &self.reachable {
                c.set(last_reached.elapsed() < unreachable_after);
            }
            let wake = started + self.config.renew;
            let wake = match leading_since_renew {
                // Never sleep past the step-down deadline.
                Some(t) => wake.min(t + self.config.lease_duration),
                None => wake,
            };
            tokio::select! {
                _ = &mut shutdown => break,
                _ = tokio::time::sleep_until(wake) => {}
            }
            if let Some(t) = leading_since_renew
                && t.elapsed() >= self.config.lease_duration
            {
                tracing::warn!("lease not renewed in time; stepping down");
                leading_since_renew = None;
                self.publish(false);
            }
        }
        let was_leading = *self.tx.borrow();
        self.publish(false);
        if was_leading {
            // Bounded so shutdown never hangs on an unreachable API server;
            // without the release the lease simply expires.
            match tokio::time::timeout(self.config.renew, self.release()).await {
                Ok(Ok(())) => tracing::info!(lease = %self.config.lease_name, "released the lease"),
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "releasing the lease failed; it will expire")
                }
                Err(_) => tracing::warn!("releasing the lease timed out; it will expire"),
            }
        }
    }

    fn publish(&self, leading: bool) {
        if !leading {
            self.deadline.send_replace(None);
        }
        self.metrics.set_leading(leading);
        self.tx.send_if_modified(|cur| {
            if *cur == leading {
                return false;
            }
            *cur = leading;
            tracing::info!(identity = %self.config.identity, leading, "leadership changed");
            true
        });
    }

    fn new_spec(&self, transitions: i32) -> LeaseSpec {
        let now = now_micro();
        LeaseSpec {
            holder_identity: Some(self.config.identity.clone()),
            lease_duration_seconds: Some(self.config.lease_seconds()),
            acquire_time: Some(now.clone()),
            renew_time: Some(now),
            lease_transitions: Some(transitions),
            ..Default::default()
        }
    }

    fn observe(&mut self, lease: &Lease) -> Duration {
        let rv = lease.metadata.resource_version.clone();
        match &self.observed {
            Some(o) if o.resource_version == rv => o.since.elapsed(),
            _ => {
                self.observed = Some(Observed {
                    resource_version: rv,
                    since: Instant::now(),
                });
                Duration::ZERO
            }
        }
    }

    async fn attempt(&mut self) -> Result<Attempt, LeaderError> {
        let name = self.config.lease_name.clone();
        let Some(mut lease) = self.api.get_opt(&name).await.map_err(api("get"))? else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(name),
                    ..Default::default()
                },
                spec: Some(self.new_spec(0)),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(created) => {
                    self.observe(&created);
                    Ok(Attempt::Leading)
                }
                Err(e) if is_conflict(&e) => Ok(Attempt::Following),
                Err(e) => Err(api("create")(e)),
            };
        };
        let unchanged_for = self.observe(&lease);
        let spec = lease.spec.clone().unwrap_or_default();
        let valid_for = spec
            .lease_duration_seconds
            .and_then(|s| u64::try_from(s).ok())
            .filter(|s| *s > 0)
            .map_or(self.config.lease_duration, Duration::from_secs);
        let decision = decide(
            spec.holder_identity.as_deref(),
            &self.config.identity,
            unchanged_for,
            valid_for,
        );
        let new_spec = match decision {
            Decision::Follow => return Ok(Attempt::Following),
            Decision::Renew => LeaseSpec {
                renew_time: Some(now_micro()),
                lease_duration_seconds: Some(self.config.lease_seconds()),
                ..spec
            },
            Decision::Acquire => {
                let previous = spec.holder_identity.as_deref().unwrap_or("");
                tracing::info!(previous, identity = %self.config.identity, "taking over the lease");
                // Every change of holder counts, as in client-go, so the
                // number of failovers is visible on the Lease itself.
                self.new_spec(spec.lease_transitions.unwrap_or(0).saturating_add(1))
            }
        };
        // The resourceVersion we read stays in the object, so the PUT fails
        // with 409 if anyone wrote the lease since: the race has one winner.
        lease.spec = Some(new_spec);
        match self
            .api
            .replace(&name, &PostParams::default(), &lease)
            .await
        {
            Ok(updated) => {
                self.observe(&updated);
                Ok(Attempt::Leading)
            }
            Err(e) if is_conflict(&e) => Ok(Attempt::Following),
            Err(e) => Err(api("update")(e)),
        }
    }

    async fn release(&self) -> Result<(), LeaderError> {
        let Some(mut lease) = self
            .api
            .get_opt(&self.config.lease_name)
            .await
            .map_err(api("get"))?
        else {
            return Ok(());
        };
        let Some(spec) = lease.spec.as_mut() else {
            return Ok(());
        };
        if spec.holder_identity.as_deref() != Some(self.config.identity.as_str()) {
            return Ok(());
        }
        spec.holder_identity = None;
        spec.renew_time = Some(now_micro());
        // One second, the minimum, so clients that honour the record's
        // duration rather than the holder field also move on quickly.
        spec.lease_duration_seconds = Some(1);
        self.api
            .replace(&self.config.lease_name, &PostParams::default(), &lease)
            .await
            .map_err(api("update"))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
