//! The client's error type and the mapping from HTTP answers to it.
//!
//! Each variant says whether retrying can help ([`Error::is_retryable`]) and
//! carries a low-cardinality label for metrics ([`Error::class`]). The
//! mapping from a status and body is a pure function, tested on canned
//! answers.
//!
//! This module must NOT put the ACL token in any message: the token is
//! named by its source ("token from CONSUL_HTTP_TOKEN_FILE ..."), and any
//! server text is scrubbed of the secret before it is kept.

use std::time::Duration;

use reqwest::StatusCode;

use crate::config::ConfigError;
use crate::txn::{FailedOp, TxnOp, TxnResponse, map_failed_ops};

/// Longest server message kept in an error. Consul's error bodies are one
/// line; a proxy's HTML error page is not, and must not flood the logs.
pub const MAX_MESSAGE_LEN: usize = 512;

/// Everything that can go wrong talking to Consul.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// 403: the token lacks a permission (or is unknown/expired). Not
    /// retryable: grant the policy named in the operation's docs
    /// (`node:write`, `service:write`, ...) to the named token.
    #[error("permission denied for {operation} using {token}: {message}")]
    PermissionDenied {
        /// The operation (e.g. `catalog.register`).
        operation: &'static str,
        /// Which token, by source, never by value.
        token: String,
        /// Consul's message.
        message: String,
    },
    /// 404: the endpoint or the named entity does not exist. Not retryable;
    /// usually a wrong address prefix, datacenter or namespace.
    #[error("{operation}: not found: {message}")]
    NotFound {
        /// The operation.
        operation: &'static str,
        /// Consul's message.
        message: String,
    },
    /// 409 from `/v1/txn`: the transaction was rolled back and NOTHING in it
    /// was applied. Not retryable as is: remove or fix the failed operations
    /// (stale CAS index, missing node) and resubmit the others.
    #[error("transaction rolled back: {}", describe_failed(.failed))]
    TxnRolledBack {
        /// The operations Consul named, with their index in the caller's list.
        failed: Vec<FailedOp>,
    },
    /// 413: too many operations in one transaction or too large a body. Not
    /// retryable as is: a transaction goes again only split (see
    /// [`Error::txn_ops_limit`]); a body too large alone needs smaller
    /// metadata.
    #[error("{operation}: request too large: {message}")]
    TooLarge {
        /// The operation.
        operation: &'static str,
        /// Consul's message.
        message: String,
    },
    /// 429: Consul's rate limiter refused the request. Retryable after a
    /// backoff; this is the one 4xx that means "try again later", and Consul
    /// has done nothing with the request.
    #[error("{operation}: rate limited by Consul: {message}")]
    RateLimited {
        /// The operation.
        operation: &'static str,
        /// Consul's message.
        message: String,
    },
    /// Any other 4xx (400 bad request, 405, ...): the request is wrong. Not
    /// retryable; the message says what Consul rejected.
    #[error("{operation}: rejected with {status}: {message}")]
    BadRequest {
        /// The operation.
        operation: &'static str,
        /// The HTTP status.
        status: u16,
        /// Consul's message.
        message: String,
    },
    /// 500 "No cluster leader": the servers are electing a leader. Retryable;
    /// nothing was applied. Persisting means the cluster lost quorum.
    #[error("{operation}: Consul has no cluster leader")]
    LeaderUnavailable {
        /// The operation.
        operation: &'static str,
    },
    /// Any other 5xx. Retryable with backoff; if it persists, check the
    /// Consul servers' logs.
    #[error("{operation}: server error {status}: {message}")]
    Server {
        /// The operation.
        operation: &'static str,
        /// The HTTP status.
        status: u16,
        /// Consul's message.
        message: String,
    },
    /// No answer within the timeout. Retryable for idempotent requests; a
    /// write may or may not have been applied.
    #[error("{operation}: timed out after {after:?}")]
    Timeout {
        /// The operation.
        operation: &'static str,
        /// The timeout that expired.
        after: Duration,
    },
    /// The TCP/TLS connection could not be established (refused, DNS, TLS
    /// handshake, including a server refusing the client certificate).
    /// Retryable; the request never reached Consul. Persisting: check the
    /// address and TLS settings.
    #[error("{operation}: cannot connect to Consul: {message}")]
    Connect {
        /// The operation.
        operation: &'static str,
        /// The transport's reason.
        message: String,
    },
    /// The connection broke while sending or receiving. Retryable for
    /// idempotent requests.
    #[error("{operation}: transport error: {message}")]
    Transport {
        /// The operation.
        operation: &'static str,
        /// The transport's reason.
        message: String,
    },
    /// A 2xx answer whose body is not what Consul documents. Not retryable:
    /// a version mismatch or a proxy answering instead of Consul.
    #[error("{operation}: cannot decode response: {message}")]
    Decode {
        /// The operation.
        operation: &'static str,
        /// The decoder's reason.
        message: String,
    },
    /// A request body could not be encoded. Not retryable (a bug).
    #[error("{operation}: cannot encode request: {message}")]
    Encode {
        /// The operation.
        operation: &'static str,
        /// The encoder's reason.
        message: String,
    },
    /// The configuration is invalid. Not retryable: fix the setting named.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Logging in to the auth method failed (the auth method is missing,
    /// rejected the bearer token, bound no identity, or Consul or the
    /// Kubernetes API it asks did not answer). Retryable: Kubernetes
    /// rotates ServiceAccount tokens and the file is read again at every
    /// login, and an operator may fix the auth method or its binding rules
    /// while the program waits. Names the auth method, never the bearer
    /// token.
    #[error("ACL login with auth method {auth_method:?} failed: {source}")]
    Login {
        /// The auth method.
        auth_method: String,
        /// What the login got (its message is scrubbed of the bearer
        /// token).
        #[source]
        source: Box<Error>,
    },
}

fn describe_failed(failed: &[FailedOp]) -> String {
    // A handful is enough to act on; the full list is in the field.
    const SHOWN: usize = 5;
    let mut parts: Vec<String> = failed
        .iter()
        .take(SHOWN)
        .map(|f| {
            let what =
                f.op.as_ref()
                    .map(TxnOp::describe)
                    .unwrap_or_else(|| "unknown op".into());
            match f.index {
                Some(i) => format!("#{i} {what}: {}", f.what),
                None => format!("{what}: {}", f.what),
            }
        })
        .collect();
    if failed.len() > SHOWN {
        parts.push(format!("and {} more", failed.len() - SHOWN));
    }
    if parts.is_empty() {
        "no reason given".into()
    } else {
        parts.join("; ")
    }
}

impl Error {
    /// A stable, low-cardinality label for metrics and logs.
    pub fn class(&self) -> &'static str {
        match self {
            Self::PermissionDenied { .. } => "permission_denied",
            Self::NotFound { .. } => "not_found",
            Self::TxnRolledBack { .. } => "txn_rolled_back",
            Self::TooLarge { .. } => "too_large",
            Self::RateLimited { .. } => "rate_limited",
            Self::BadRequest { .. } => "bad_request",
            Self::LeaderUnavailable { .. } => "leader_unavailable",
            Self::Server { .. } => "server_error",
            Self::Timeout { .. } => "timeout",
            Self::Connect { .. } => "connect",
            Self::Transport { .. } => "transport",
            Self::Decode { .. } => "decode",
            Self::Encode { .. } => "encode",
            Self::Config(_) => "config",
            Self::Login { .. } => "login",
        }
    }

    /// Whether the same request may succeed later without any change.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Self::RateLimited { .. }
                | Self::LeaderUnavailable { .. }
                | Self::Server { .. }
                | Self::Timeout { .. }
                | Self::Connect { .. }
                | Self::Transport { .. }
                | Self::Login { .. }
        )
    }

    /// Whether Consul refused the request because it does not know the
    /// token (`403 ACL not found`): deleted, expired, or logged out. With a
    /// login configured, the client logs in again and resends the request
    /// once.
    pub fn is_acl_not_found(&self) -> bool {
        matches!(self, Self::PermissionDenied { message, .. } if message.contains("ACL not found"))
    }

    /// Whether Consul certainly did not apply the request, so that even a
    /// non-idempotent write (cas) may be resent.
    pub fn certainly_not_applied(&self) -> bool {
        matches!(
            self,
            Self::Connect { .. } | Self::LeaderUnavailable { .. } | Self::RateLimited { .. }
        )
    }

    /// For a 413 because a transaction held too many operations, the limit
    /// the server named (`Transaction contains too many operations (N > M)`
    /// gives `M`): a writer can size its next transactions to it instead of
    /// finding it again by halving. `None` for any other error, including a
    /// 413 for the body's size.
    pub fn txn_ops_limit(&self) -> Option<usize> {
        let Self::TooLarge { message, .. } = self else {
            return None;
        };
        let rest = message.strip_prefix("Transaction contains too many operations (")?;
        let (_, limit) = rest.strip_suffix(')')?.split_once(" > ")?;
        limit.trim().parse::<usize>().ok().filter(|&m| m > 0)
    }

    /// The limit [`Error::txn_ops_limit`] names, when it is below `sent`,
    /// the operations of the refused transaction: those operations, none
    /// of them applied, fit in transactions of that size.
    pub fn txn_ops_limit_below(&self, sent: usize) -> Option<usize> {
        self.txn_ops_limit().filter(|&limit| limit < sent)
    }

    /// The operations Consul refused, for a rolled-back transaction.
    pub fn failed_ops(&self) -> &[FailedOp] {
        match self {
            Self::TxnRolledBack { failed } => failed,
            _ => &[],
        }
    }

    /// The HTTP status, for errors that came with one.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::PermissionDenied { .. } => Some(403),
            Self::NotFound { .. } => Some(404),
            Self::TxnRolledBack { .. } => Some(409),
            Self::TooLarge { .. } => Some(413),
            Self::RateLimited { .. } => Some(429),
            Self::LeaderUnavailable { .. } => Some(500),
            Self::BadRequest { status, .. } | Self::Server { status, .. } => Some(*status),
            Self::Login { source, .. } => source.status(),
            _ => None,
        }
    }
}

/// Turns server text into a safe message: lossy UTF-8, trimmed, cut to
/// [`MAX_MESSAGE_LEN`] on a character boundary, and with the token (if the
/// server echoed it) replaced.
pub(crate) fn safe_message(body: &[u8], secret: Option<&str>) -> String {
    let text = String::from_utf8_lossy(body);
    let mut text = text.trim().to_owned();
    if let Some(s) = secret.filter(|s| !s.is_empty()) {
        text = text.replace(s, "<redacted>");
    }
    if text.len() > MAX_MESSAGE_LEN {
        let mut cut = MAX_MESSAGE_LEN;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str("...");
    }
    text
}

/// Context needed to turn an HTTP answer into an [`Error`].
pub(crate) struct ErrorContext<'a> {
    /// The operation.
    pub operation: &'static str,
    /// The token hint (its source).
    pub token_hint: &'a str,
    /// The secret, only to scrub it from server text.
    pub secret: Option<&'a str>,
    /// The operations of a transaction, to map a 409 back.
    pub txn_ops: Option<&'a [TxnOp]>,
}

/// Maps a non-2xx answer to an [`Error`]. Pure; never panics.
pub(crate) fn error_from_response(
    ctx: &ErrorContext<'_>,
    status: StatusCode,
    body: &[u8],
) -> Error {
    let operation = ctx.operation;
    let message = || safe_message(body, ctx.secret);
    match status.as_u16() {
        403 => Error::PermissionDenied {
            operation,
            token: ctx.token_hint.to_owned(),
            message: message(),
        },
        404 => Error::NotFound {
            operation,
            message: message(),
        },
        409 if ctx.txn_ops.is_some() => {
            let ops = ctx.txn_ops.unwrap_or_default();
            match serde_json::from_slice::<TxnResponse>(body) {
                Ok(r) if !r.errors.is_empty() => Error::TxnRolledBack {
                    failed: map_failed_ops(&r.errors, ops, 0),
                },
                _ => Error::TxnRolledBack {
                    failed: vec![FailedOp {
                        index: None,
                        op: None,
                        what: message(),
                    }],
                },
            }
        }
        413 => Error::TooLarge {
            operation,
            message: message(),
        },
        429 => Error::RateLimited {
            operation,
            message: message(),
        },
        500 if is_no_leader(body) => Error::LeaderUnavailable { operation },
        s @ 500..=599 => Error::Server {
            operation,
            status: s,
            message: message(),
        },
        s => Error::BadRequest {
            operation,
            status: s,
            message: message(),
        },
    }
}

fn is_no_leader(body: &[u8]) -> bool {
    String::from_utf8_lossy(body)
        .to_ascii_lowercase()
        .contains("no cluster leader")
}

/// Maps a transport error from the HTTP library.
pub(crate) fn error_from_transport(
    operation: &'static str,
    timeout: Duration,
    e: &reqwest::Error,
    secret: Option<&str>,
) -> Error {
    // The library's message can include the URL; it never includes headers,
    // but scrub anyway so that a token in a misconfigured URL cannot leak.
    let chain = error_chain(e);
    let message = safe_message(chain.as_bytes(), secret);
    if e.is_timeout() {
        Error::Timeout {
            operation,
            after: timeout,
        }
    } else if e.is_connect() || is_handshake_refusal(&chain) {
        Error::Connect { operation, message }
    } else if e.is_builder() {
        Error::Encode { operation, message }
    } else {
        // Including reqwest's "error decoding response body": this client
        // decodes bodies itself (`Error::Decode`), so reqwest reports that
        // only for a body that failed to arrive (the connection broke or
        // the server hung up mid-way), which a retry may well fix.
        Error::Transport { operation, message }
    }
}

/// TLS alerts a server sends only to refuse a handshake (RFC 8446 6.2),
/// spelled as rustls names them.
const HANDSHAKE_REFUSAL_ALERTS: &[&str] = &[
    "HandshakeFailure",
    "BadCertificate",
    "UnsupportedCertificate",
    "CertificateRevoked",
    "CertificateExpired",
    "CertificateUnknown",
    "CertificateRequired",
    "UnknownCA",
    "AccessDenied",
    "ProtocolVersion",
    "InsufficientSecurity",
];

/// Whether the server refused the TLS handshake, typically because the
/// client certificate is missing or untrusted (Consul's
/// `verify_incoming`). In TLS 1.3 the client's side of the handshake is
/// complete before the server has checked the client's certificate, so the
/// server's refusal arrives while the request is being sent and the HTTP
/// library reports a send error rather than a connect error. The request
/// was never read, so it is a connect error by this crate's definition:
/// "cannot connect", and safe to resend even for a cas write.
///
/// The HTTP library exposes the TLS error only through its message
/// ("received fatal alert: CertificateRequired"); `tests/it/tls.rs` pins that
/// spelling against the real TLS stack.
fn is_handshake_refusal(chain: &str) -> bool {
    chain.split("received fatal alert: ").skip(1).any(|rest| {
        let name = rest
            .split(|c: char| !c.is_ascii_alphanumeric())
            .next()
            .unwrap_or_default();
        HANDSHAKE_REFUSAL_ALERTS.contains(&name)
    })
}

fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        out.push_str(": ");
        out.push_str(&s.to_string());
        cur = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::txn::Verb;
    use crate::types::Service;
    use proptest::prelude::*;

    const SECRET: &str = "b1946ac9-2a3b-4c5d-8e9f-0a1b2c3d4e5f";

    #[test]
    fn the_operation_limit_is_read_from_a_413_of_too_many_operations() {
        let too_large = |body: &str| {
            error_from_response(&ctx(None), StatusCode::PAYLOAD_TOO_LARGE, body.as_bytes())
        };
        assert_eq!(
            too_large("Transaction contains too many operations (128 > 64)").txn_ops_limit(),
            Some(64)
        );
        for other in [
            "Request body too large, max size: 524288 bytes",
            "Transaction contains too many operations (3 > 0)",
            "Transaction contains too many operations (3 > x)",
            "",
        ] {
            assert_eq!(too_large(other).txn_ops_limit(), None, "{other}");
        }
        let server = error_from_response(
            &ctx(None),
            StatusCode::INTERNAL_SERVER_ERROR,
            b"Transaction contains too many operations (3 > 2)",
        );
        assert_eq!(server.txn_ops_limit(), None);
        assert_eq!(server.txn_ops_limit_below(3), None);

        // Only a limit below what was sent says how to send it again.
        let named = too_large("Transaction contains too many operations (128 > 64)");
        assert_eq!(named.txn_ops_limit_below(128), Some(64));
        assert_eq!(named.txn_ops_limit_below(64), None);
        assert_eq!(named.txn_ops_limit_below(0), None);
        let body = too_large("Request body too large, max size: 524288 bytes");
        assert_eq!(body.txn_ops_limit_below(128), None);
    }

    fn ctx<'a>(ops: Option<&'a [TxnOp]>) -> ErrorContext<'a> {
        ErrorContext {
            operation: "catalog.register",
            token_hint: "token from CONSUL_HTTP_TOKEN_FILE (/var/run/consul/token)",
            secret: Some(SECRET),
            txn_ops: ops,
        }
    }

    fn op(i: usize) -> TxnOp {
        TxnOp::Service {
            verb: Verb::Cas,
            node: "n".into(),
            service: Service {
                id: format!("s{i}"),
                service: "s".into(),
                ..Service::default()
            },
        }
    }

    #[test]
    fn forbidden_names_operation_and_token_source_not_secret() {
        let e = error_from_response(&ctx(None), StatusCode::FORBIDDEN, b"Permission denied");
        assert!(matches!(e, Error::PermissionDenied { .. }));
        assert!(!e.is_retryable());
        assert_eq!(e.class(), "permission_denied");
        let shown = format!("{e} {e:?}");
        assert!(shown.contains("catalog.register"));
        assert!(shown.contains("CONSUL_HTTP_TOKEN_FILE"));
        assert!(!shown.contains(SECRET));
    }

    #[test]
    fn echoed_secret_is_scrubbed() {
        let body = format!("ACL not found: token {SECRET} is unknown");
        for status in [403u16, 400, 500, 404] {
            let e = error_from_response(
                &ctx(None),
                StatusCode::from_u16(status).unwrap(),
                body.as_bytes(),
            );
            assert!(!format!("{e}").contains(SECRET));
            assert!(!format!("{e:?}").contains(SECRET));
        }
    }

    #[test]
    fn no_cluster_leader_is_leader_unavailable_and_retryable() {
        let e = error_from_response(
            &ctx(None),
            StatusCode::INTERNAL_SERVER_ERROR,
            b"No cluster leader",
        );
        assert!(matches!(e, Error::LeaderUnavailable { .. }));
        assert!(e.is_retryable());
        assert!(e.certainly_not_applied());
        assert_eq!(e.class(), "leader_unavailable");
        let e = error_from_response(&ctx(None), StatusCode::INTERNAL_SERVER_ERROR, b"rpc error");
        assert!(matches!(e, Error::Server { status: 500, .. }));
        assert!(e.is_retryable());
        assert!(!e.certainly_not_applied());
    }

    #[test]
    fn status_classes() {
        let cases: &[(u16, &str, bool)] = &[
            (400, "bad_request", false),
            (404, "not_found", false),
            (405, "bad_request", false),
            (413, "too_large", false),
            (429, "rate_limited", true),
            (502, "server_error", true),
            (503, "server_error", true),
        ];
        for (status, class, retry) in cases {
            let e = error_from_response(&ctx(None), StatusCode::from_u16(*status).unwrap(), b"x");
            assert_eq!(e.class(), *class, "{status}");
            assert_eq!(e.is_retryable(), *retry, "{status}");
            assert_eq!(e.status(), Some(*status));
        }
    }

    #[test]
    fn txn_409_maps_errors_to_ops() {
        let ops: Vec<TxnOp> = (0..4).map(op).collect();
        let body = br#"{"Results":null,"Errors":[{"OpIndex":1,"What":"failed service lookup"},{"OpIndex":3,"What":"index mismatch"}]}"#;
        let e = error_from_response(&ctx(Some(&ops)), StatusCode::CONFLICT, body);
        assert_eq!(e.class(), "txn_rolled_back");
        assert!(!e.is_retryable());
        let failed = e.failed_ops();
        assert_eq!(failed.len(), 2);
        assert_eq!(failed[0].index, Some(1));
        assert_eq!(failed[0].op, Some(op(1)));
        assert_eq!(failed[1].op, Some(op(3)));
        assert!(e.to_string().contains("service cas n/s3: index mismatch"));
    }

    #[test]
    fn txn_409_with_garbage_body_still_reports() {
        let ops: Vec<TxnOp> = (0..2).map(op).collect();
        let e = error_from_response(&ctx(Some(&ops)), StatusCode::CONFLICT, b"<html>oops</html>");
        assert_eq!(e.failed_ops().len(), 1);
        assert!(e.failed_ops()[0].op.is_none());
    }

    #[test]
    fn handshake_refusals_are_recognised_by_their_alert() {
        for refusal in [
            "error sending request for url (https://h/v1/x): client error (SendRequest): connection error: received fatal alert: CertificateRequired",
            "connection error: received fatal alert: UnknownCA",
            "received fatal alert: BadCertificate: more",
        ] {
            assert!(is_handshake_refusal(refusal), "{refusal}");
        }
        for other in [
            "connection error: connection reset by peer",
            // Alerts that can end an established session are not refusals.
            "connection error: received fatal alert: DecryptError",
            "received fatal alert: CertificateRequiredX",
            "received fatal alert: ",
            "",
        ] {
            assert!(!is_handshake_refusal(other), "{other}");
        }
    }

    #[test]
    fn acl_not_found_is_told_apart_from_a_missing_permission() {
        let forbidden = |body: &[u8]| error_from_response(&ctx(None), StatusCode::FORBIDDEN, body);
        assert!(forbidden(b"ACL not found").is_acl_not_found());
        assert!(forbidden(b"rpc error making call: ACL not found").is_acl_not_found());
        assert!(!forbidden(b"Permission denied").is_acl_not_found());
        assert!(
            !forbidden(b"Permission denied: token with AccessorID 'a' lacks permission")
                .is_acl_not_found()
        );
        let other = error_from_response(&ctx(None), StatusCode::NOT_FOUND, b"ACL not found");
        assert!(!other.is_acl_not_found());
    }

    #[test]
    fn login_failures_are_retryable_and_name_the_method() {
        let inner = error_from_response(
            &ctx(None),
            StatusCode::INTERNAL_SERVER_ERROR,
            b"lookup failed: service account jwt not valid",
        );
        let e = Error::Login {
            auth_method: "consul-k8s-auth-method".into(),
            source: Box::new(inner),
        };
        assert!(e.is_retryable());
        assert!(!e.is_acl_not_found());
        assert_eq!(e.class(), "login");
        assert_eq!(e.status(), Some(500));
        let shown = e.to_string();
        assert!(shown.contains("\"consul-k8s-auth-method\""), "{shown}");
        assert!(shown.contains("service account jwt not valid"), "{shown}");
    }

    #[test]
    fn long_bodies_are_cut_on_char_boundary() {
        let body = "é".repeat(2000);
        let m = safe_message(body.as_bytes(), None);
        assert!(m.len() <= MAX_MESSAGE_LEN + 3);
        assert!(m.ends_with("..."));
    }

    proptest! {
        #[test]
        fn mapping_never_panics_nor_leaks(
            status in 400u16..600,
            head in proptest::collection::vec(any::<u8>(), 0..300),
            tail in proptest::collection::vec(any::<u8>(), 0..300),
        ) {
            let ops: Vec<TxnOp> = (0..3).map(op).collect();
            let s = StatusCode::from_u16(status).unwrap();
            let e = error_from_response(&ctx(Some(&ops)), s, &head);
            prop_assert!(!e.class().is_empty());
            // A body that echoes the secret somewhere in the middle.
            let mut body = head.clone();
            body.extend_from_slice(SECRET.as_bytes());
            body.extend_from_slice(&tail);
            let e = error_from_response(&ctx(None), s, &body);
            let shown = format!("{} {:?}", e, e);
            prop_assert!(!shown.contains(SECRET));
        }
    }
}
