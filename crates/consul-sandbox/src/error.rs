//! The HTTP-facing error of the sandbox: every failed request ends as one
//! [`ApiError`], which knows Consul's status code and plain-text body for it.
//!
//! This module must NOT decide when an error happens; it only maps each kind
//! to what Consul puts on the wire.

use crate::acl::AclError;

/// A failed request, rendered as Consul renders it (status + plain text).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    /// 400: the request is malformed (bad JSON, bad query parameter, missing
    /// path parameter). Not retryable; fix the request.
    #[error("{0}")]
    BadRequest(String),
    /// 403: ACL refusal or unknown token. Not retryable with this token.
    #[error(transparent)]
    Forbidden(#[from] AclError),
    /// 404: no such endpoint. Not retryable.
    #[error("Invalid URL path: not a recognized HTTP API endpoint\n")]
    NotFound,
    /// 404 with a text of its own: a named object that does not exist (a
    /// namespace or partition). Not retryable until it is created.
    #[error("{0}")]
    NotFoundText(String),
    /// 405: the endpoint exists but not for this method. Not retryable.
    #[error("method {method} not allowed")]
    MethodNotAllowed {
        /// The method used.
        method: String,
        /// The methods the endpoint accepts (sent in `Allow`).
        allow: &'static str,
    },
    /// 413: the body or the transaction is too large. Not retryable; split
    /// the request.
    #[error("{0}")]
    TooLarge(String),
    /// 500: what Consul returns for errors raised by its RPC layer, which
    /// includes validation errors such as `Must provide node` and state-store
    /// errors such as `Missing node registration`. Retrying the same request
    /// fails the same way; fix the request.
    #[error("{0}")]
    Rpc(String),
    /// 500 `No cluster leader` (injected). Retryable after a backoff.
    #[error("No cluster leader")]
    NoLeader,
    /// An injected failure with an arbitrary status. Retryable when the
    /// status is 5xx or 429.
    #[error("{body}")]
    Injected {
        /// The status code to send.
        status: u16,
        /// The body to send.
        body: String,
    },
}

impl ApiError {
    /// The HTTP status code Consul uses for this error.
    pub fn status(&self) -> u16 {
        match self {
            ApiError::BadRequest(_) => 400,
            ApiError::Forbidden(_) => 403,
            ApiError::NotFound | ApiError::NotFoundText(_) => 404,
            ApiError::MethodNotAllowed { .. } => 405,
            ApiError::TooLarge(_) => 413,
            ApiError::Rpc(_) | ApiError::NoLeader => 500,
            ApiError::Injected { status, .. } => *status,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_and_bodies_follow_consul() {
        assert_eq!(ApiError::NoLeader.status(), 500);
        assert_eq!(ApiError::NoLeader.to_string(), "No cluster leader");
        assert_eq!(ApiError::Forbidden(AclError::NotFound).status(), 403);
        assert_eq!(
            ApiError::Forbidden(AclError::NotFound).to_string(),
            "ACL not found"
        );
        let e = ApiError::MethodNotAllowed {
            method: "GET".into(),
            allow: "PUT",
        };
        assert_eq!(
            (e.status(), e.to_string()),
            (405, "method GET not allowed".to_string())
        );
        assert_eq!(
            ApiError::Injected {
                status: 503,
                body: "x".into()
            }
            .status(),
            503
        );
    }
}
