//! Fault injection: added latency, error responses (any status, or Consul's
//! `500 No cluster leader`) for the next N requests or a fraction of them,
//! optionally limited to a method and a path prefix, refusing connections
//! for a while (accepted sockets are closed at once), and a leaderless
//! cluster (no Raft leader until it is switched off: see
//! [`FaultsHandle::set_leaderless`]).
//!
//! Rules live in a small list behind a mutex; each request consults it once.
//! Randomness (for `fraction`) comes from a seeded generator so a test run
//! is reproducible. Faults never apply to the sandbox's own `/v1/sandbox/*`
//! endpoints, so a test can always inspect and clear them.
//!
//! This module must NOT know about the catalog; it only decides what to do
//! to a request or a connection.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::Value;
use tokio::time::Instant;

/// What a matching rule does to a request.
#[derive(Debug, Clone, PartialEq)]
pub enum FaultAction {
    /// Delay the request before handling it.
    Latency(Duration),
    /// Answer with this status and plain-text body instead of handling.
    Error {
        /// HTTP status code.
        status: u16,
        /// Response body.
        body: String,
    },
    /// Answer `500 No cluster leader`, as Consul does during an election.
    NoLeader,
}

/// A fault rule. Build one with the constructors, then narrow it with the
/// `with_*`/`for_*` methods.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultRule {
    /// What to do.
    pub action: FaultAction,
    /// Only requests with this method (e.g. `"PUT"`); `None` = any.
    pub method: Option<String>,
    /// Only requests whose path starts with this; `None` = any.
    pub path_prefix: Option<String>,
    /// Fire for this many matching requests, then disappear; `None` = until
    /// cleared.
    pub remaining: Option<u64>,
    /// Fire for this fraction (0.0..=1.0) of matching requests.
    pub fraction: Option<f64>,
    /// For errors: handle the request first (a write is applied) and then
    /// answer with the error, like a response lost after the commit.
    pub after_apply: bool,
}

impl FaultRule {
    fn new(action: FaultAction) -> Self {
        FaultRule {
            action,
            method: None,
            path_prefix: None,
            remaining: None,
            fraction: None,
            after_apply: false,
        }
    }

    /// Adds `delay` to every matching request.
    pub fn latency(delay: Duration) -> Self {
        FaultRule::new(FaultAction::Latency(delay))
    }

    /// Answers matching requests with `status` and `body`.
    pub fn error(status: u16, body: impl Into<String>) -> Self {
        FaultRule::new(FaultAction::Error {
            status,
            body: body.into(),
        })
    }

    /// Answers matching requests with `500 No cluster leader`.
    pub fn no_leader() -> Self {
        FaultRule::new(FaultAction::NoLeader)
    }

    /// Only the next `n` matching requests.
    pub fn times(mut self, n: u64) -> Self {
        self.remaining = Some(n);
        self
    }

    /// Only a fraction of matching requests.
    pub fn fraction(mut self, f: f64) -> Self {
        self.fraction = Some(f.clamp(0.0, 1.0));
        self
    }

    /// Only requests with this method.
    pub fn with_method(mut self, m: impl Into<String>) -> Self {
        self.method = Some(m.into().to_ascii_uppercase());
        self
    }

    /// Only requests under this path prefix.
    pub fn with_path_prefix(mut self, p: impl Into<String>) -> Self {
        self.path_prefix = Some(p.into());
        self
    }

    /// Apply the request, then answer with the error.
    pub fn after_apply(mut self) -> Self {
        self.after_apply = true;
        self
    }

    fn matches(&self, method: &str, path: &str) -> bool {
        self.method.as_deref().is_none_or(|m| m == method)
            && self
                .path_prefix
                .as_deref()
                .is_none_or(|p| path.starts_with(p))
    }
}

/// What the server must do to one request.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Decision {
    /// Total added latency.
    pub delay: Duration,
    /// An error to answer before handling.
    pub fail_before: Option<FaultAction>,
    /// An error to answer after handling.
    pub fail_after: Option<FaultAction>,
}

struct Inner {
    rules: Vec<(u64, FaultRule)>,
    next_id: u64,
    refuse_until: Option<Instant>,
    rng: StdRng,
    injected: u64,
    refused: u64,
    leaderless: bool,
}

/// Shared fault state; cheap to clone. Obtain it from
/// [`crate::Sandbox::faults`].
#[derive(Clone)]
pub struct FaultsHandle {
    inner: Arc<Mutex<Inner>>,
}

impl std::fmt::Debug for FaultsHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultsHandle").finish_non_exhaustive()
    }
}

impl FaultsHandle {
    pub(crate) fn new(seed: u64) -> Self {
        FaultsHandle {
            inner: Arc::new(Mutex::new(Inner {
                rules: Vec::new(),
                next_id: 1,
                refuse_until: None,
                rng: StdRng::seed_from_u64(seed),
                injected: 0,
                refused: 0,
                leaderless: false,
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A poisoned lock only means another thread panicked mid-update of
        // plain counters; the data is still usable.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds a rule; returns its id.
    pub fn add(&self, rule: FaultRule) -> u64 {
        let mut g = self.lock();
        let id = g.next_id;
        g.next_id += 1;
        g.rules.push((id, rule));
        id
    }

    /// Closes every accepted connection at once for `duration`.
    pub fn refuse_connections_for(&self, duration: Duration) {
        self.lock().refuse_until = Some(Instant::now() + duration);
    }

    /// Removes every rule, stops refusing connections and ends a
    /// leaderless period.
    pub fn clear(&self) {
        let mut g = self.lock();
        g.rules.clear();
        g.refuse_until = None;
        g.leaderless = false;
    }

    /// Starts (`true`) or ends (`false`) a leaderless period: the cluster
    /// has lost its Raft leader, as during an election or after losing
    /// quorum. Until it ends, `/v1/status/leader` answers `""`, every write
    /// and every read without `stale` answers `500 No cluster leader` and
    /// applies nothing, `stale` reads are served from the local state with
    /// `X-Consul-KnownLeader: false`, and the agent, peers and datacenter
    /// endpoints answer as usual. Unlike a counted `no_leader` rule, it
    /// lasts until the test says the leader is back.
    pub fn set_leaderless(&self, leaderless: bool) {
        self.lock().leaderless = leaderless;
    }

    /// Whether a leaderless period is in progress.
    pub fn leaderless(&self) -> bool {
        self.lock().leaderless
    }

    /// Counts a request refused because the cluster has no leader (among
    /// [`FaultsHandle::injected`]).
    pub(crate) fn note_leaderless_refusal(&self) {
        self.lock().injected += 1;
    }

    /// Number of active rules.
    pub fn active_rules(&self) -> usize {
        self.lock().rules.len()
    }

    /// Requests that received an injected error so far.
    pub fn injected(&self) -> u64 {
        self.lock().injected
    }

    /// Connections closed by the refusal fault so far.
    pub fn refused(&self) -> u64 {
        self.lock().refused
    }

    /// Called by the accept loop: should this new connection be dropped?
    pub(crate) fn refuse_connection(&self) -> bool {
        let mut g = self.lock();
        match g.refuse_until {
            Some(t) if Instant::now() < t => {
                g.refused += 1;
                true
            }
            Some(_) => {
                g.refuse_until = None;
                false
            }
            None => false,
        }
    }

    /// Decides what happens to a request. Counted rules are consumed here.
    pub(crate) fn decide(&self, method: &str, path: &str) -> Decision {
        let mut g = self.lock();
        let Inner {
            rules,
            rng,
            injected,
            ..
        } = &mut *g;
        let mut d = Decision::default();
        for (_, rule) in rules.iter_mut() {
            if !rule.matches(method, path) || rule.remaining == Some(0) {
                continue;
            }
            let is_error = !matches!(rule.action, FaultAction::Latency(_));
            if is_error && (d.fail_before.is_some() || d.fail_after.is_some()) {
                continue;
            }
            if let Some(f) = rule.fraction
                && rng.random::<f64>() >= f
            {
                continue;
            }
            if let Some(n) = rule.remaining.as_mut() {
                *n -= 1;
            }
            match &rule.action {
                FaultAction::Latency(l) => d.delay = d.delay.saturating_add(*l),
                action if rule.after_apply => d.fail_after = Some(action.clone()),
                action => d.fail_before = Some(action.clone()),
            }
            if is_error {
                *injected += 1;
            }
        }
        rules.retain(|(_, r)| r.remaining != Some(0));
        d
    }
}

/// Parses the JSON body of `POST /v1/sandbox/faults`:
///
/// ```json
/// {"kind": "latency", "latency_ms": 200}
/// {"kind": "error", "status": 503, "body": "overloaded", "count": 3}
/// {"kind": "no_leader", "fraction": 0.5, "method": "PUT", "path_prefix": "/v1/txn"}
/// {"kind": "error", "status": 500, "after_apply": true, "count": 1}
/// {"kind": "refuse_connections", "duration_ms": 500}
/// {"kind": "leaderless"}
/// {"kind": "leader_elected"}
/// ```
///
/// `count`, `fraction`, `method`, `path_prefix` and `after_apply` are
/// optional on every kind but `refuse_connections`, `leaderless` and
/// `leader_elected` (which start and end a leaderless period).
pub(crate) fn parse_request(body: &[u8]) -> Result<FaultRequest, String> {
    let v: Value = serde_json::from_slice(body).map_err(|e| format!("invalid fault: {e}"))?;
    let obj = v
        .as_object()
        .ok_or("invalid fault: expected a JSON object")?;
    let kind = obj
        .get("kind")
        .and_then(Value::as_str)
        .ok_or("invalid fault: missing \"kind\"")?;
    let num = |k: &str| -> Result<Option<u64>, String> {
        match obj.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v.as_u64().map(Some).ok_or(format!(
                "invalid fault: \"{k}\" must be a non-negative integer"
            )),
        }
    };
    let text = |k: &str| -> Result<Option<String>, String> {
        match obj.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(format!("invalid fault: \"{k}\" must be a string")),
        }
    };
    let mut rule = match kind {
        "leaderless" => return Ok(FaultRequest::Leaderless(true)),
        "leader_elected" => return Ok(FaultRequest::Leaderless(false)),
        "refuse_connections" => {
            let ms = num("duration_ms")?.ok_or("invalid fault: missing \"duration_ms\"")?;
            return Ok(FaultRequest::Refuse(Duration::from_millis(ms)));
        }
        "latency" => {
            let ms = num("latency_ms")?.ok_or("invalid fault: missing \"latency_ms\"")?;
            FaultRule::latency(Duration::from_millis(ms))
        }
        "no_leader" => FaultRule::no_leader(),
        "error" => {
            let status = num("status")?.unwrap_or(500);
            let status = u16::try_from(status)
                .ok()
                .filter(|s| (100..=999).contains(s))
                .ok_or("invalid fault: \"status\" must be an HTTP status code")?;
            FaultRule::error(status, text("body")?.unwrap_or_default())
        }
        other => return Err(format!("invalid fault: unknown kind {other:?}")),
    };
    if let Some(n) = num("count")? {
        rule = rule.times(n);
    }
    match obj.get("fraction") {
        None | Some(Value::Null) => {}
        Some(v) => match v.as_f64() {
            Some(f) if (0.0..=1.0).contains(&f) => rule = rule.fraction(f),
            _ => return Err("invalid fault: \"fraction\" must be between 0 and 1".into()),
        },
    }
    if let Some(m) = text("method")? {
        rule = rule.with_method(m);
    }
    if let Some(p) = text("path_prefix")? {
        rule = rule.with_path_prefix(p);
    }
    match obj.get("after_apply") {
        None | Some(Value::Null) | Some(Value::Bool(false)) => {}
        Some(Value::Bool(true)) => rule = rule.after_apply(),
        Some(_) => return Err("invalid fault: \"after_apply\" must be a boolean".into()),
    }
    Ok(FaultRequest::Rule(rule))
}

/// A parsed `POST /v1/sandbox/faults` body.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum FaultRequest {
    /// Add a rule.
    Rule(FaultRule),
    /// Refuse connections for a while.
    Refuse(Duration),
    /// Start (`true`) or end (`false`) a leaderless period.
    Leaderless(bool),
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn counted_rules_fire_n_times_then_vanish() {
        let f = FaultsHandle::new(1);
        f.add(FaultRule::no_leader().times(2).with_method("put"));
        assert_eq!(f.decide("GET", "/v1/catalog/services").fail_before, None);
        assert_eq!(
            f.decide("PUT", "/v1/txn").fail_before,
            Some(FaultAction::NoLeader)
        );
        assert_eq!(
            f.decide("PUT", "/v1/txn").fail_before,
            Some(FaultAction::NoLeader)
        );
        assert_eq!(f.decide("PUT", "/v1/txn").fail_before, None);
        assert_eq!(f.active_rules(), 0);
        assert_eq!(f.injected(), 2);
    }

    #[test]
    fn latencies_add_up_and_errors_do_not_stack() {
        let f = FaultsHandle::new(1);
        f.add(FaultRule::latency(Duration::from_millis(10)));
        f.add(FaultRule::latency(Duration::from_millis(5)).with_path_prefix("/v1/catalog"));
        f.add(FaultRule::error(503, "a").times(1));
        f.add(FaultRule::error(502, "b").times(1));
        let d = f.decide("GET", "/v1/catalog/nodes");
        assert_eq!(d.delay, Duration::from_millis(15));
        assert_eq!(
            d.fail_before,
            Some(FaultAction::Error {
                status: 503,
                body: "a".into()
            })
        );
        let d = f.decide("GET", "/v1/status/leader");
        assert_eq!(d.delay, Duration::from_millis(10));
        assert_eq!(
            d.fail_before,
            Some(FaultAction::Error {
                status: 502,
                body: "b".into()
            })
        );
    }

    #[test]
    fn fraction_is_seeded_and_roughly_right() {
        let count = |seed| {
            let f = FaultsHandle::new(seed);
            f.add(FaultRule::error(500, "x").fraction(0.25));
            (0..1000)
                .filter(|_| f.decide("GET", "/").fail_before.is_some())
                .count()
        };
        assert_eq!(count(7), count(7), "same seed, same sequence");
        let n = count(7);
        assert!((150..350).contains(&n), "{n}");
    }

    #[test]
    fn after_apply_errors_are_reported_separately() {
        let f = FaultsHandle::new(1);
        f.add(FaultRule::error(500, "lost").after_apply().times(1));
        let d = f.decide("PUT", "/v1/catalog/register");
        assert_eq!(d.fail_before, None);
        assert!(d.fail_after.is_some());
    }

    #[test]
    fn leaderless_lasts_until_ended_or_cleared() {
        let f = FaultsHandle::new(1);
        assert!(!f.leaderless());
        f.set_leaderless(true);
        assert!(f.leaderless());
        f.set_leaderless(false);
        assert!(!f.leaderless());
        f.set_leaderless(true);
        f.clear();
        assert!(!f.leaderless());
    }

    #[tokio::test(start_paused = true)]
    async fn refusal_window_expires() {
        let f = FaultsHandle::new(1);
        f.refuse_connections_for(Duration::from_secs(1));
        assert!(f.refuse_connection());
        tokio::time::advance(Duration::from_secs(2)).await;
        assert!(!f.refuse_connection());
        assert_eq!(f.refused(), 1);
    }

    #[test]
    fn fault_requests_parse_and_reject_bad_input() {
        let r = parse_request(br#"{"kind":"error","status":503,"count":2,"method":"put","path_prefix":"/v1/txn","fraction":0.5}"#).unwrap();
        let FaultRequest::Rule(rule) = r else {
            panic!("expected a rule")
        };
        assert_eq!(rule.remaining, Some(2));
        assert_eq!(rule.method.as_deref(), Some("PUT"));
        assert_eq!(
            parse_request(br#"{"kind":"refuse_connections","duration_ms":50}"#).unwrap(),
            FaultRequest::Refuse(Duration::from_millis(50))
        );
        assert_eq!(
            parse_request(br#"{"kind":"leaderless"}"#).unwrap(),
            FaultRequest::Leaderless(true)
        );
        assert_eq!(
            parse_request(br#"{"kind":"leader_elected"}"#).unwrap(),
            FaultRequest::Leaderless(false)
        );
        for bad in [
            &b"nope"[..],
            br#"[]"#,
            br#"{"kind":"weird"}"#,
            br#"{"kind":"latency"}"#,
            br#"{"kind":"error","status":70000}"#,
            br#"{"kind":"error","fraction":2}"#,
            br#"{"kind":"error","count":-1}"#,
            br#"{"kind":"error","after_apply":"yes"}"#,
        ] {
            assert!(
                parse_request(bad).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    proptest! {
        #[test]
        fn fault_parser_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..128)) {
            let _ = parse_request(&bytes);
        }
    }
}
