//! ACL login: the credentials the client presents, logging in with an auth
//! method (and again when the token is refused), and logging out.
//!
//! This module must NOT log or return a secret's value: errors and logs name
//! the token by its source or accessor only.

use super::*;

/// What a request carries to prove who sends it. Cloned out of the client
/// per request, so that a concurrent re-login cannot change the token under
/// a request in flight (and the request knows which login it used).
pub(super) struct Credentials {
    /// The `X-Consul-Token` header (marked sensitive), or none.
    pub(super) header: Option<HeaderValue>,
    /// The secret, only to scrub it from error texts.
    pub(super) secret: Option<Token>,
    /// How errors name the token (its source, or the login's accessor).
    pub(super) hint: String,
    /// Which login produced it (0: not a login token).
    pub(super) generation: u64,
    /// The login token's AccessorID.
    pub(super) accessor_id: Option<String>,
}

/// The login configuration and the current login token.
pub(super) struct Login {
    pub(super) config: LoginConfig,
    /// `dc`, `ns` and `partition` of login and logout.
    pub(super) params: CommonParams,
    /// The current login token; `None` before the first login and after
    /// `logout`.
    pub(super) session: RwLock<Option<Arc<Credentials>>>,
    /// Serialises logins: requests that find the token gone together
    /// cause one login, not one each.
    pub(super) gate: tokio::sync::Mutex<()>,
    /// Generation of the last login.
    pub(super) logins: AtomicU64,
}

impl Login {
    pub(super) fn current(&self) -> Option<Arc<Credentials>> {
        self.session
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    pub(super) fn set(&self, creds: Option<Arc<Credentials>>) -> Option<Arc<Credentials>> {
        let mut guard = self
            .session
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        std::mem::replace(&mut *guard, creds)
    }
}

/// Credentials from a secret: the sensitive header and the hint.
pub(super) fn credentials(
    secret: &Token,
    hint: String,
    generation: u64,
    not_header_safe: impl FnOnce() -> ConfigError,
) -> Result<Credentials, ConfigError> {
    let mut value = HeaderValue::from_str(secret.expose()).map_err(|_| not_header_safe())?;
    // Keeps the value out of the HTTP library's Debug output.
    value.set_sensitive(true);
    Ok(Credentials {
        header: Some(value),
        secret: Some(secret.clone()),
        hint,
        generation,
        accessor_id: None,
    })
}

impl Client {
    // ----- ACL login ----------------------------------------------------------

    /// The auth method the client logs in with, if one is configured.
    pub fn login_auth_method(&self) -> Option<&str> {
        self.inner
            .login
            .as_ref()
            .map(|l| l.config.auth_method.as_str())
    }

    /// The AccessorID of the current login token (not a secret), if logged
    /// in.
    pub fn login_accessor_id(&self) -> Option<String> {
        self.inner.login.as_ref()?.current()?.accessor_id.clone()
    }

    /// `POST /v1/acl/login`: exchanges a bearer token for an ACL token of
    /// `req.auth_method`. Sent without a token, with the `dc`, `ns` and
    /// `partition` of the configured login (each falling back to the
    /// client's). Not resent after a timeout or a broken connection: a
    /// second login could leave a token behind that nobody logs out.
    /// Failures are [`Error::Login`] (retryable), scrubbed of the bearer
    /// token. The client's own token is not changed; see
    /// [`Client::login`] for that.
    pub async fn acl_login(&self, req: &LoginRequest) -> Result<LoginToken, Error> {
        let fail = |source: Error| Error::Login {
            auth_method: req.auth_method.clone(),
            source: Box::new(source),
        };
        let body = req.to_body().map_err(|e| {
            fail(Error::Encode {
                operation: "acl.login",
                message: e.to_string(),
            })
        })?;
        let anonymous = Credentials {
            header: None,
            // Scrubbed from any error text: Consul's answer or a proxy's
            // could quote the bearer token.
            secret: Some(req.bearer_token.clone()),
            hint: format!("login to auth method {:?}", req.auth_method),
            generation: 0,
            accessor_id: None,
        };
        let call = Call {
            operation: "acl.login",
            method: Method::POST,
            url: self
                .url_with(self.login_params(), "acl.login", &["acl", "login"], None)
                .map_err(fail)?,
            body: Some(Bytes::from(body)),
            timeout: self.inner.request_timeout,
            idempotent: false,
            txn_ops: None,
        };
        let answer = self.execute_with(&call, &anonymous).await.map_err(fail)?;
        LoginToken::from_body(&answer.body).map_err(|e| {
            fail(Error::Decode {
                operation: "acl.login",
                message: e.to_string(),
            })
        })
    }

    /// `POST /v1/acl/logout`: deletes a token made by a login. Consul
    /// answers `403 ACL not found` for a token it does not know (already
    /// logged out or deleted) and `403 Permission denied` for a token not
    /// made by a login.
    pub async fn acl_logout(&self, secret: &Token) -> Result<(), Error> {
        let creds = credentials(secret, "the token to log out".into(), 0, || {
            ConfigError::TokenNotHeaderSafe {
                source_hint: "the token to log out".into(),
            }
        })?;
        let call = Call {
            operation: "acl.logout",
            method: Method::POST,
            url: self.url_with(self.login_params(), "acl.logout", &["acl", "logout"], None)?,
            body: None,
            timeout: self.inner.request_timeout,
            // Deleting a token twice leaves it deleted.
            idempotent: true,
            txn_ops: None,
        };
        self.execute_with(&call, &creds).await.map(|_| ())
    }

    /// Logs in to the configured auth method unless already logged in, so
    /// that a wrong setting shows at start rather than at the first write.
    /// Without a configured login it does nothing. Requests log in by
    /// themselves when needed, so calling this is optional.
    pub async fn login(&self) -> Result<(), Error> {
        if self.inner.login.is_some() {
            self.credentials().await?;
        }
        Ok(())
    }

    /// Logs out the current login token (at shutdown), so that it does not
    /// outlive the program in Consul. A token Consul no longer knows counts
    /// as logged out. Without a login token it sends nothing. A request
    /// made after this logs in again.
    pub async fn logout(&self) -> Result<(), Error> {
        let Some(login) = &self.inner.login else {
            return Ok(());
        };
        let _gate = login.gate.lock().await;
        let Some(creds) = login.set(None) else {
            return Ok(());
        };
        let Some(secret) = &creds.secret else {
            return Ok(());
        };
        match self.acl_logout(secret).await {
            Err(e) if e.is_acl_not_found() => Ok(()),
            Err(e) => Err(e),
            Ok(()) => {
                tracing::info!(
                    auth_method = %login.config.auth_method,
                    token = %creds.hint,
                    "logged out of Consul"
                );
                Ok(())
            }
        }
    }

    pub(super) fn login_params(&self) -> &CommonParams {
        self.inner
            .login
            .as_ref()
            .map_or(&self.inner.common, |l| &l.params)
    }

    /// The credentials for the next request: the configured token, or the
    /// login token (logging in first if there is none).
    pub(super) async fn credentials(&self) -> Result<Arc<Credentials>, Error> {
        match &self.inner.login {
            None => Ok(self.inner.fixed.clone()),
            Some(login) => match login.current() {
                Some(creds) => Ok(creds),
                None => self.log_in(login, None).await,
            },
        }
    }

    /// Logs in, unless another request already replaced the login token
    /// `stale` (or, with `stale` None, already logged in).
    pub(super) async fn log_in(
        &self,
        login: &Login,
        stale: Option<u64>,
    ) -> Result<Arc<Credentials>, Error> {
        let _gate = login.gate.lock().await;
        if let Some(current) = login.current()
            && Some(current.generation) != stale
        {
            return Ok(current);
        }
        let config = &login.config;
        let bearer_token = config.read_bearer_token().map_err(|e| Error::Login {
            auth_method: config.auth_method.clone(),
            source: Box::new(Error::Config(e)),
        })?;
        let token = self
            .acl_login(&LoginRequest {
                auth_method: config.auth_method.clone(),
                bearer_token,
                meta: config.meta.clone(),
            })
            .await?;
        let generation = login.logins.fetch_add(1, Ordering::Relaxed) + 1;
        let hint = format!(
            "login token {} (auth method {:?})",
            token.accessor_id, config.auth_method
        );
        let mut creds = credentials(&token.secret_id, hint, generation, || {
            ConfigError::TokenNotHeaderSafe {
                source_hint: format!("the token from auth method {:?}", config.auth_method),
            }
        })
        .map_err(|e| Error::Login {
            auth_method: config.auth_method.clone(),
            source: Box::new(Error::Config(e)),
        })?;
        creds.accessor_id = Some(token.accessor_id.clone());
        let creds = Arc::new(creds);
        login.set(Some(creds.clone()));
        tracing::info!(
            auth_method = %config.auth_method,
            accessor_id = %token.accessor_id,
            "logged in to Consul"
        );
        Ok(creds)
    }
}
