//! A client that acts as another user: every request it sends carries
//! `Impersonate-User`, so the API server authorizes it with that user's
//! rights (and checks that mirra may impersonate the user at all, with the
//! `impersonate` verb). A ServiceAccount's username brings its groups on
//! the server side, as upstream's impersonation filter adds them.
//!
//! What this module must NOT do: decide who is impersonated, or send a
//! request of its own; it wraps the caller's client, sharing its
//! connections, authentication and rate limit.

use http::HeaderValue;
use kube::client::Body;

/// Why an impersonating client cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum ImpersonateError {
    /// The username cannot travel in an HTTP header.
    #[error("the username {0:?} cannot be sent as an Impersonate-User header")]
    BadUser(String),
}

/// A client sending every request of `base` as `user`.
pub fn impersonating(base: &kube::Client, user: &str) -> Result<kube::Client, ImpersonateError> {
    let value =
        HeaderValue::from_str(user).map_err(|_| ImpersonateError::BadUser(user.to_string()))?;
    let inner = base.clone();
    let service = tower::service_fn(move |mut request: http::Request<Body>| {
        let inner = inner.clone();
        request
            .headers_mut()
            .insert("impersonate-user", value.clone());
        async move { inner.send(request).await }
    });
    Ok(kube::Client::new(service, base.default_namespace()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // A panic is a test failure.
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_username_that_cannot_be_a_header_is_refused() {
        let client =
            kube::Client::try_from(kube::Config::new("http://127.0.0.1:1".parse().unwrap()))
                .unwrap();
        let err = impersonating(&client, "bad\nname").err();
        assert!(
            matches!(err, Some(ImpersonateError::BadUser(ref u)) if u == "bad\nname"),
            "{err:?}"
        );
        assert!(impersonating(&client, "system:serviceaccount:a:b").is_ok());
    }
}
