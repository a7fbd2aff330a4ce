//! Fault injection: added latency and error answers for requests that match
//! a verb and resource, for the next N of them or a fraction of them.
//!
//! Rules are set through the library ([`crate::Sandbox::inject`]) or
//! `POST /sandbox/faults`; `DELETE /sandbox/faults` clears them,
//! `POST /sandbox/faults/close-watches` ends every open watch and
//! `POST /sandbox/faults/compact` drops the event history (watches and
//! continue tokens from older revisions then get 410 Gone).

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use http::{Method, StatusCode};
use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::http::error_response;
use crate::state::Shared;
use crate::status::ApiError;

/// One fault rule.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FaultRule {
    /// Verb to match (`create`, `watch`, ...); any when absent.
    #[serde(default)]
    pub verb: Option<String>,
    /// Resource to match as counted in stats (`configmaps`,
    /// `leases.coordination.k8s.io`); any when absent.
    #[serde(default)]
    pub resource: Option<String>,
    /// Namespace the request's URL must name; any (including cluster-wide
    /// requests) when absent. Lets a test deny one namespace only, as RBAC
    /// scoped by RoleBindings would.
    #[serde(default)]
    pub namespace: Option<String>,
    /// The status to answer: 403 (Forbidden, as RBAC answers), 409, 429,
    /// 500, 503 or 504. Absent: the request passes (after `latencyMs`).
    #[serde(default)]
    pub status: Option<u16>,
    /// `Retry-After` seconds for 429 (default 1).
    #[serde(default)]
    pub retry_after_seconds: Option<u32>,
    /// Added latency in milliseconds.
    #[serde(default)]
    pub latency_ms: Option<u64>,
    /// Apply to the next N matching requests only; unlimited when absent.
    #[serde(default)]
    pub count: Option<u64>,
    /// Apply to this fraction (0..=1) of matching requests; all when absent.
    #[serde(default)]
    pub fraction: Option<f64>,
}

/// What a rule set decides for one request.
#[derive(Debug)]
pub enum Outcome {
    /// Go on, maybe after a delay.
    Pass {
        /// Added latency.
        delay: Option<Duration>,
    },
    /// Answer with an error.
    Fail {
        /// Added latency.
        delay: Option<Duration>,
        /// The error.
        error: ApiError,
    },
}

/// Rule validation errors.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FaultError {
    /// Only the statuses a real server produces under load, races or
    /// denied authorization.
    #[error("status {0} is not injectable: use 403, 409, 429, 500, 503 or 504")]
    Status(u16),
    /// A fraction outside 0..=1.
    #[error("fraction {0} must be between 0 and 1")]
    Fraction(f64),
}

impl FaultRule {
    /// Checks a rule.
    pub fn validate(&self) -> Result<(), FaultError> {
        if let Some(s) = self.status
            && !matches!(s, 403 | 409 | 429 | 500 | 503 | 504)
        {
            return Err(FaultError::Status(s));
        }
        if let Some(f) = self.fraction
            && (!(0.0..=1.0).contains(&f) || f.is_nan())
        {
            return Err(FaultError::Fraction(f));
        }
        Ok(())
    }

    fn matches(&self, key: &str, namespace: Option<&str>) -> bool {
        let mut parts = key.splitn(2, ' ');
        let verb = parts.next().unwrap_or_default();
        let resource = parts.next().unwrap_or_default();
        self.verb.as_deref().is_none_or(|v| v == verb)
            && self.resource.as_deref().is_none_or(|r| r == resource)
            && self
                .namespace
                .as_deref()
                .is_none_or(|n| Some(n) == namespace)
    }
}

/// The active rules.
#[derive(Debug, Default)]
pub struct Faults {
    rules: Vec<FaultRule>,
}

impl Faults {
    /// Adds a rule.
    pub fn add(&mut self, rule: FaultRule) -> Result<(), FaultError> {
        rule.validate()?;
        self.rules.push(rule);
        Ok(())
    }

    /// Removes every rule.
    pub fn clear(&mut self) {
        self.rules.clear();
    }

    /// Decides the fate of a request with this stats key, in `namespace`
    /// and for the object `name` when its URL names them.
    pub fn decide(&mut self, key: &str, namespace: Option<&str>, name: Option<&str>) -> Outcome {
        let mut delay: Option<Duration> = None;
        let mut error = None;
        let mut rng = rand::rng();
        for rule in self.rules.iter_mut().filter(|r| r.matches(key, namespace)) {
            if rule.count == Some(0) {
                continue;
            }
            if let Some(f) = rule.fraction
                && rng.random::<f64>() >= f
            {
                continue;
            }
            if let Some(c) = rule.count.as_mut() {
                *c -= 1;
            }
            if let Some(ms) = rule.latency_ms {
                delay = Some(delay.unwrap_or_default() + Duration::from_millis(ms));
            }
            if error.is_none()
                && let Some(status) = rule.status
            {
                error = Some(match status {
                    429 => ApiError::too_many_requests(rule.retry_after_seconds.unwrap_or(1)),
                    403 => forbidden(key, namespace, name.unwrap_or_default()),
                    other => ApiError::with_code(other),
                });
            }
        }
        self.rules.retain(|r| r.count != Some(0));
        match error {
            Some(error) => Outcome::Fail { delay, error },
            None => Outcome::Pass { delay },
        }
    }
}

/// A 403 as kube-apiserver's RBAC authorizer words it, for the request
/// with this stats key (`<verb> <resource>[.<group>][/<sub>]`).
fn forbidden(key: &str, namespace: Option<&str>, name: &str) -> ApiError {
    let mut parts = key.splitn(2, ' ');
    let verb = parts.next().unwrap_or_default();
    let qualified = parts.next().unwrap_or_default();
    let resource = qualified.split('/').next().unwrap_or_default();
    let (resource, group) = resource.split_once('.').unwrap_or((resource, ""));
    let scope = match namespace {
        Some(ns) => format!("in the namespace \"{ns}\""),
        None => "at the cluster scope".to_string(),
    };
    let why = format!(
        "User \"system:serviceaccount:sandbox:client\" cannot {verb} resource \"{resource}\" \
         in API group \"{group}\" {scope} (injected)"
    );
    ApiError::forbidden(group, resource, name, &why)
}

/// `/sandbox/faults[/<action>]`.
pub async fn handle(
    shared: &Arc<Shared>,
    method: &Method,
    action: Option<&str>,
    body: Body,
) -> http::Response<Body> {
    let ok = || {
        let mut r = http::Response::new(Body::from("{}"));
        r.headers_mut().insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/json"),
        );
        r
    };
    match (method.as_str(), action) {
        ("DELETE", None) => {
            shared.faults.lock().await.clear();
            ok()
        }
        ("POST", None) => {
            let Ok(bytes) = axum::body::to_bytes(body, 64 * 1024).await else {
                return error_response(&ApiError::too_large(64 * 1024));
            };
            let rule: FaultRule = match serde_json::from_slice(&bytes) {
                Ok(r) => r,
                Err(e) => {
                    return error_response(&ApiError::bad_request(format!(
                        "invalid fault rule: {e}"
                    )));
                }
            };
            match shared.faults.lock().await.add(rule) {
                Ok(()) => ok(),
                Err(e) => error_response(&ApiError::bad_request(e.to_string())),
            }
        }
        ("POST", Some("close-watches")) => {
            shared.close_watches();
            ok()
        }
        ("POST", Some("compact")) => {
            shared.store.lock().await.compact();
            ok()
        }
        _ => {
            let mut r = error_response(&ApiError::no_route());
            *r.status_mut() = StatusCode::NOT_FOUND;
            r
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_limits_a_rule() {
        let mut f = Faults::default();
        f.add(FaultRule {
            verb: Some("create".into()),
            status: Some(500),
            count: Some(2),
            ..Default::default()
        })
        .unwrap();
        assert!(matches!(
            f.decide("create configmaps", None, None),
            Outcome::Fail { .. }
        ));
        assert!(matches!(
            f.decide("get configmaps", None, None),
            Outcome::Pass { .. }
        ));
        assert!(matches!(
            f.decide("create secrets", None, None),
            Outcome::Fail { .. }
        ));
        assert!(matches!(
            f.decide("create configmaps", None, None),
            Outcome::Pass { .. }
        ));
    }

    #[test]
    fn resource_and_retry_after() {
        let mut f = Faults::default();
        f.add(FaultRule {
            resource: Some("leases.coordination.k8s.io".into()),
            status: Some(429),
            retry_after_seconds: Some(2),
            ..Default::default()
        })
        .unwrap();
        match f.decide("update leases.coordination.k8s.io", None, None) {
            Outcome::Fail { error, .. } => {
                assert_eq!(error.code, 429);
                assert_eq!(error.retry_after, Some(2));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            f.decide("update configmaps", None, None),
            Outcome::Pass { .. }
        ));
    }

    #[test]
    fn fraction_zero_never_fires_and_one_always_does() {
        let mut f = Faults::default();
        f.add(FaultRule {
            status: Some(503),
            fraction: Some(0.0),
            ..Default::default()
        })
        .unwrap();
        for _ in 0..100 {
            assert!(matches!(
                f.decide("get x", None, None),
                Outcome::Pass { .. }
            ));
        }
        f.clear();
        f.add(FaultRule {
            status: Some(503),
            fraction: Some(1.0),
            ..Default::default()
        })
        .unwrap();
        for _ in 0..100 {
            assert!(matches!(
                f.decide("get x", None, None),
                Outcome::Fail { .. }
            ));
        }
    }

    #[test]
    fn bad_rules_are_refused() {
        let mut f = Faults::default();
        assert_eq!(
            f.add(FaultRule {
                status: Some(200),
                ..Default::default()
            }),
            Err(FaultError::Status(200))
        );
        assert!(
            f.add(FaultRule {
                fraction: Some(1.5),
                ..Default::default()
            })
            .is_err()
        );
        assert!(
            f.add(FaultRule {
                fraction: Some(f64::NAN),
                ..Default::default()
            })
            .is_err()
        );
        assert!(serde_json::from_str::<FaultRule>(r#"{"stauts": 500}"#).is_err());
    }

    #[test]
    fn forbidden_in_one_namespace() {
        let mut f = Faults::default();
        f.add(FaultRule {
            verb: Some("patch".into()),
            namespace: Some("locked".into()),
            status: Some(403),
            ..Default::default()
        })
        .unwrap();
        match f.decide("patch configmaps", Some("locked"), Some("c")) {
            Outcome::Fail { error, .. } => {
                assert_eq!(error.code, 403);
                assert_eq!(error.reason, "Forbidden");
                assert!(
                    error
                        .message
                        .contains("cannot patch resource \"configmaps\"")
                );
                assert!(error.message.contains("\"locked\""));
                assert!(error.message.starts_with("configmaps \"c\" is forbidden"));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            f.decide("patch configmaps", Some("open"), None),
            Outcome::Pass { .. }
        ));
        assert!(matches!(
            f.decide("patch configmaps", None, None),
            Outcome::Pass { .. }
        ));
    }

    #[test]
    fn latency_only_passes() {
        let mut f = Faults::default();
        f.add(FaultRule {
            latency_ms: Some(5),
            count: Some(1),
            ..Default::default()
        })
        .unwrap();
        match f.decide("list configmaps", None, None) {
            Outcome::Pass { delay } => assert_eq!(delay, Some(Duration::from_millis(5))),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            f.decide("list configmaps", None, None),
            Outcome::Pass { delay: None }
        ));
    }
}
