//! The Consul HTTP client: one pooled connection pool, the ACL token header,
//! retries, and one typed method per endpoint mirra uses.
//!
//! ```text
//! method (register, txn, node_services, ...)
//!    -> build_url (dc/ns/partition, filters, index/wait)
//!    -> execute: attempt -> map answer or transport error -> retry?
//!         retry only if the error is retryable AND (the request is
//!         idempotent OR Consul certainly did not apply it)
//!    -> decode body, read X-Consul-Index
//! ```
//!
//! Which writes are retried: `catalog/register` and `catalog/deregister`
//! set the catalog to a given state, so sending them twice equals sending
//! them once; a transaction of only `set`/`delete` operations likewise.
//! A transaction containing `cas` or `delete-cas` is NOT retried after a
//! timeout, broken connection or generic 5xx: the first attempt may have
//! committed, moving the ModifyIndex, so the retry would fail its own check
//! and report a conflict that is not real (or, for a later caller, hide that
//! the write happened). It is retried only when Consul certainly did not
//! apply it: the connection was refused, there was no leader, or the rate
//! limiter refused it. 4xx answers are never retried (except 429, which
//! means "later"): the same request would get the same answer.
//!
//! Failover: with several servers (`CONSUL_ADDRESSES`), a request whose
//! server refused or dropped the connection or timed out goes to the next
//! server at once (each server once per request, then the retry policy's
//! backoff), under the same rules as any retry: a write that may have been
//! applied is not resent. The client stays on the server that answered
//! last, so a dead server costs one failed attempt, not one per request.
//!
//! Login: with [`crate::LoginConfig`] the token comes from
//! `POST /v1/acl/login` (the bearer token file read at each login), made
//! before the first request that needs it (or by [`Client::login`]) and
//! kept in memory only. A request refused with `403 ACL not found` (the
//! token was deleted, expired or logged out) causes one new login and one
//! resend; concurrent requests that saw the same token vanish share that
//! login. [`Client::logout`] deletes the token at shutdown.
//!
//! This module must NOT log or format the token (nor the bearer token),
//! and must NOT hold state about the catalog: it is a transport, callers
//! own the logic.

use std::fmt;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use bytes::Bytes;
use reqwest::header::{CONTENT_TYPE, HeaderValue};
use reqwest::{Method, Url};
use serde::de::DeserializeOwned;
use tracing::{debug, warn};

use crate::acl::{LoginRequest, LoginToken, Namespace};
use crate::backoff::RetryPolicy;
use crate::blocking::{QueryOptions, Versioned, blocking_timeout};
use crate::config::{ConfigError, ConsulConfig, LoginConfig, MAX_TXN_MAX_OPS, TlsConfig, Token};
use crate::endpoint::{CommonParams, build_url};
use crate::error::{Error, ErrorContext, error_from_response, error_from_transport};
use crate::txn::{
    FailedOp, TxnBatchError, TxnOp, TxnResponse, TxnResult, TxnSummary, all_idempotent, split_ops,
    with_tenancy,
};
use crate::types::{
    CatalogServiceInstance, DeregisterRequest, HealthCheck, Node, NodeServices, RegisterRequest,
    ServiceEntry, ServiceTags,
};

/// Header carrying the ACL token.
pub const TOKEN_HEADER: &str = "X-Consul-Token";

/// Header carrying the index of a read.
pub const INDEX_HEADER: &str = "X-Consul-Index";

/// Time to establish a TCP (and TLS) connection. A reachable Consul answers
/// in milliseconds; 5 s separates "down" from "slow" without stalling a
/// writer for long when an address is wrong.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long an idle pooled connection is kept. 50 s is below the 60 s idle
/// timeout common on load balancers in front of Consul, so the pool never
/// hands out a connection the balancer already dropped.
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(50);

/// Idle connections kept per host. mirra runs one writer and a few watches
/// (each watch holds one connection while blocked); 16 covers that with
/// room to spare without keeping many sockets open on the servers.
const POOL_MAX_IDLE_PER_HOST: usize = 16;

/// TCP keep-alive probe interval: a blocking query sits silent for up to
/// ten minutes, and keep-alives stop middleboxes from silently dropping it.
const TCP_KEEPALIVE: Duration = Duration::from_secs(30);

/// A typed async Consul client. Cheap to clone: clones share one connection
/// pool.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    /// The servers, in configured order; one unless `CONSUL_ADDRESSES`
    /// named (or resolved to) several.
    servers: Vec<Server>,
    /// Index into `servers` of the one requests go to: the last that
    /// answered, so a dead server costs one failed attempt, not one per
    /// request.
    current: AtomicUsize,
    /// The configured token (or none): what requests carry when no login
    /// is configured.
    fixed: Arc<Credentials>,
    /// The auth-method login, when configured: its token replaces `fixed`.
    login: Option<Login>,
    common: CommonParams,
    retry: RetryPolicy,
    request_timeout: Duration,
    txn_max_ops: usize,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field(
                "servers",
                &self
                    .inner
                    .servers
                    .iter()
                    .map(|s| s.base.as_str())
                    .collect::<Vec<_>>(),
            )
            .field("token", &self.inner.fixed.hint)
            .field(
                "login",
                &self.inner.login.as_ref().map(|l| &l.config.auth_method),
            )
            .field("common", &self.inner.common)
            .field("retry", &self.inner.retry)
            .field("request_timeout", &self.inner.request_timeout)
            .field("txn_max_ops", &self.inner.txn_max_ops)
            .finish()
    }
}

/// One server: its base URL and a connection pool of its own (a TLS server
/// name must resolve to this server's address only).
struct Server {
    http: reqwest::Client,
    base: Url,
}

/// What a request carries to prove who sends it. Cloned out of the client
/// per request, so that a concurrent re-login cannot change the token under
/// a request in flight (and the request knows which login it used).
struct Credentials {
    /// The `X-Consul-Token` header (marked sensitive), or none.
    header: Option<HeaderValue>,
    /// The secret, only to scrub it from error texts.
    secret: Option<Token>,
    /// How errors name the token (its source, or the login's accessor).
    hint: String,
    /// Which login produced it (0: not a login token).
    generation: u64,
    /// The login token's AccessorID.
    accessor_id: Option<String>,
}

/// The login configuration and the current login token.
struct Login {
    config: LoginConfig,
    /// `dc`, `ns` and `partition` of login and logout.
    params: CommonParams,
    /// The current login token; `None` before the first login and after
    /// `logout`.
    session: RwLock<Option<Arc<Credentials>>>,
    /// Serialises logins: requests that find the token gone together
    /// cause one login, not one each.
    gate: tokio::sync::Mutex<()>,
    /// Generation of the last login.
    logins: AtomicU64,
}

impl Login {
    fn current(&self) -> Option<Arc<Credentials>> {
        self.session
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn set(&self, creds: Option<Arc<Credentials>>) -> Option<Arc<Credentials>> {
        let mut guard = self
            .session
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        std::mem::replace(&mut *guard, creds)
    }
}

/// Credentials from a secret: the sensitive header and the hint.
fn credentials(
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

/// One request, ready to send (and resend).
struct Call<'a> {
    operation: &'static str,
    method: Method,
    url: Url,
    body: Option<Bytes>,
    timeout: Duration,
    idempotent: bool,
    txn_ops: Option<&'a [TxnOp]>,
}

/// A successful answer.
struct Answer {
    index: u64,
    body: Bytes,
}

impl Client {
    /// Builds the client (and its connection pool) from a configuration.
    /// Reads the TLS files; fails with [`Error::Config`] on bad settings.
    pub fn new(config: ConsulConfig) -> Result<Self, Error> {
        if config.txn_max_ops == 0 || config.txn_max_ops > MAX_TXN_MAX_OPS {
            return Err(ConfigError::BadTxnMaxOps(config.txn_max_ops).into());
        }
        if config.token_in_clear() {
            // Anyone on the path can read the token; say so, once, without it.
            tracing::warn!(
                address = %config.address,
                "the Consul ACL token is sent over plain http; use an https address \
                 (or CONSUL_HTTP_SSL=true) so it is encrypted"
            );
        }
        let servers = build_servers(&config)?;
        let fixed = match (&config.login, &config.token) {
            (None, Some(t)) => credentials(&t.secret, config.token_hint(), 0, || {
                ConfigError::TokenNotHeaderSafe {
                    source_hint: t.source.to_string(),
                }
            })?,
            _ => Credentials {
                header: None,
                secret: None,
                hint: config.token_hint(),
                generation: 0,
                accessor_id: None,
            },
        };
        let common = CommonParams {
            datacenter: config.datacenter,
            namespace: config.namespace,
            partition: config.partition,
        };
        let login = config.login.map(|l| {
            let or = |own: &Option<String>, fallback: &Option<String>| {
                own.clone()
                    .filter(|v| !v.is_empty())
                    .or_else(|| fallback.clone())
            };
            Login {
                params: CommonParams {
                    datacenter: or(&l.datacenter, &common.datacenter),
                    namespace: or(&l.namespace, &common.namespace),
                    partition: or(&l.partition, &common.partition),
                },
                config: l,
                session: RwLock::new(None),
                gate: tokio::sync::Mutex::new(()),
                logins: AtomicU64::new(0),
            }
        });

        Ok(Self {
            inner: Arc::new(Inner {
                servers,
                current: AtomicUsize::new(0),
                fixed: Arc::new(fixed),
                login,
                common,
                retry: config.retry,
                request_timeout: config.request_timeout,
                txn_max_ops: config.txn_max_ops,
            }),
        })
    }

    /// The base URL of the first configured server.
    pub fn address(&self) -> &Url {
        &self.inner.servers[0].base
    }

    /// The base URLs of every server, in order (host names from
    /// `CONSUL_ADDRESSES` resolved to one entry per address).
    pub fn servers(&self) -> Vec<Url> {
        self.inner.servers.iter().map(|s| s.base.clone()).collect()
    }

    /// The base URL requests currently go to: the last server that
    /// answered (the first one until a server fails).
    pub fn current_server(&self) -> &Url {
        &self.inner.servers[self.current_index()].base
    }

    fn current_index(&self) -> usize {
        self.inner.current.load(Ordering::Relaxed) % self.inner.servers.len()
    }

    /// Operations per transaction used by [`Client::apply_ops`].
    pub fn txn_max_ops(&self) -> usize {
        self.inner.txn_max_ops
    }

    /// How long one request may take (a blocking read: its wait plus
    /// this); a writer's budget for one call.
    pub fn request_timeout(&self) -> Duration {
        self.inner.request_timeout
    }

    /// The retry policy (also used by watches between failed attempts).
    pub fn retry_policy(&self) -> &RetryPolicy {
        &self.inner.retry
    }

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

    fn login_params(&self) -> &CommonParams {
        self.inner
            .login
            .as_ref()
            .map_or(&self.inner.common, |l| &l.params)
    }

    /// The credentials for the next request: the configured token, or the
    /// login token (logging in first if there is none).
    async fn credentials(&self) -> Result<Arc<Credentials>, Error> {
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
    async fn log_in(&self, login: &Login, stale: Option<u64>) -> Result<Arc<Credentials>, Error> {
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

    // ----- Enterprise namespaces ------------------------------------------------

    /// `PUT /v1/namespace`: creates a Consul Enterprise namespace (for
    /// example with [`Namespace::with_policy_defaults`]) in the client's
    /// partition. Needs `operator:write`, and `acl:write` on linked
    /// policies. Not resent after a timeout: the first attempt may have
    /// created it, and the second would then be refused.
    pub async fn create_namespace(&self, ns: &Namespace) -> Result<Namespace, Error> {
        let params = self.partition_only();
        let body = serde_json::to_vec(ns).map_err(|e| Error::Encode {
            operation: "namespace.create",
            message: e.to_string(),
        })?;
        let call = Call {
            operation: "namespace.create",
            method: Method::PUT,
            url: self.url_with(&params, "namespace.create", &["namespace"], None)?,
            body: Some(Bytes::from(body)),
            timeout: self.inner.request_timeout,
            idempotent: false,
            txn_ops: None,
        };
        let answer = self.execute(call).await?;
        decode("namespace.create", &answer.body)
    }

    /// `GET /v1/namespace/:name` in the client's partition; `None` when it
    /// does not exist (Consul answers 404).
    pub async fn namespace(&self, name: &str) -> Result<Option<Namespace>, Error> {
        let params = self.partition_only();
        let call = Call {
            operation: "namespace.read",
            method: Method::GET,
            url: self.url_with(&params, "namespace.read", &["namespace", name], None)?,
            body: None,
            timeout: self.inner.request_timeout,
            idempotent: true,
            txn_ops: None,
        };
        match self.execute(call).await {
            Ok(answer) => decode::<Option<Namespace>>("namespace.read", &answer.body),
            Err(Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Namespaces live in a partition, not in a namespace or (as far as
    /// the address goes) a datacenter.
    fn partition_only(&self) -> CommonParams {
        CommonParams {
            datacenter: None,
            namespace: None,
            partition: self.inner.common.partition.clone(),
        }
    }

    // ----- catalog writes -------------------------------------------------

    /// `PUT /v1/catalog/register`: registers a node and optionally one
    /// service instance and checks. One Raft apply. Retried on transient
    /// errors (it is idempotent).
    pub async fn register(&self, req: &RegisterRequest) -> Result<(), Error> {
        self.write(
            "catalog.register",
            &["catalog", "register"],
            req,
            true,
            None,
        )
        .await
        .map(|_| ())
    }

    /// `PUT /v1/catalog/deregister`: removes a node, a service instance or a
    /// check. One Raft apply. Retried on transient errors (idempotent:
    /// removing what is gone succeeds).
    pub async fn deregister(&self, req: &DeregisterRequest) -> Result<(), Error> {
        self.write(
            "catalog.deregister",
            &["catalog", "deregister"],
            req,
            true,
            None,
        )
        .await
        .map(|_| ())
    }

    // ----- transactions -----------------------------------------------------

    /// `PUT /v1/txn`: applies `ops` atomically in one Raft apply. Operations
    /// that name no namespace or partition get the client's in their body
    /// (Consul reads them only there on this endpoint). A rollback
    /// (409) is [`Error::TxnRolledBack`] naming the failed operations by
    /// their index in `ops`. The caller keeps `ops` within the server's
    /// limit (see [`Client::apply_ops`] for automatic splitting); an empty
    /// list sends nothing.
    pub async fn txn(&self, ops: &[TxnOp]) -> Result<Vec<TxnResult>, Error> {
        if ops.is_empty() {
            return Ok(Vec::new());
        }
        let common = &self.inner.common;
        let filled = with_tenancy(
            ops,
            common.namespace.as_deref(),
            common.partition.as_deref(),
        );
        let wire = filled.as_deref().unwrap_or(ops);
        // Errors name the caller's operations: same order, same indexes.
        let answer = self
            .write("txn", &["txn"], &wire, all_idempotent(ops), Some(ops))
            .await?;
        let resp: TxnResponse = decode("txn", &answer.body)?;
        Ok(resp.results)
    }

    /// Applies any number of operations as consecutive transactions of at
    /// most [`Client::txn_max_ops`] each, in order. Stops at the first
    /// failing transaction; the error tells what committed and returns every
    /// operation that did not, with failed ones indexed into `ops`.
    pub async fn apply_ops(&self, ops: Vec<TxnOp>) -> Result<TxnSummary, TxnBatchError> {
        let total = ops.len();
        let mut chunks = split_ops(ops, self.inner.txn_max_ops).into_iter();
        let mut summary = TxnSummary::default();
        while let Some(chunk) = chunks.next() {
            match self.txn(&chunk).await {
                Ok(_) => {
                    summary.transactions += 1;
                    summary.ops += chunk.len();
                }
                Err(e) => {
                    let offset = summary.ops;
                    let source = match e {
                        Error::TxnRolledBack { failed } => Error::TxnRolledBack {
                            failed: failed
                                .into_iter()
                                .map(|f| FailedOp {
                                    index: f.index.and_then(|i| i.checked_add(offset)),
                                    ..f
                                })
                                .collect(),
                        },
                        other => other,
                    };
                    let mut unapplied = chunk;
                    unapplied.extend(chunks.flatten());
                    debug_assert_eq!(summary.ops + unapplied.len(), total);
                    return Err(TxnBatchError {
                        committed_transactions: summary.transactions,
                        committed_ops: summary.ops,
                        source,
                        unapplied,
                    });
                }
            }
        }
        Ok(summary)
    }

    // ----- catalog and health reads ------------------------------------------

    /// `GET /v1/catalog/services`: service names and their tags. Honors
    /// `node_meta`, `filter`, `stale` and blocking options.
    pub async fn services(&self, q: &QueryOptions) -> Result<Versioned<ServiceTags>, Error> {
        self.read("catalog.services", &["catalog", "services"], q)
            .await
    }

    /// `GET /v1/catalog/service/:name`: the instances of one service. Honors
    /// `tags`, `node_meta`, `filter`, `stale` and blocking options.
    pub async fn service(
        &self,
        name: &str,
        q: &QueryOptions,
    ) -> Result<Versioned<Vec<CatalogServiceInstance>>, Error> {
        self.read("catalog.service", &["catalog", "service", name], q)
            .await
    }

    /// `GET /v1/catalog/node-services/:node`: one node and all its instances,
    /// the read a syncer that owns one node needs. A node that does not exist
    /// reads as `node: None` with no services.
    pub async fn node_services(
        &self,
        node: &str,
        q: &QueryOptions,
    ) -> Result<Versioned<NodeServices>, Error> {
        let v: Versioned<Option<NodeServices>> = self
            .read(
                "catalog.node_services",
                &["catalog", "node-services", node],
                q,
            )
            .await?;
        Ok(Versioned {
            index: v.index,
            value: v.value.unwrap_or_default(),
        })
    }

    /// [`Client::node_services`] undecoded: the body as Consul sent it
    /// (`null` for an unknown node), for callers that parse it into a form
    /// of their own without holding the typed answer.
    pub async fn node_services_raw(
        &self,
        node: &str,
        q: &QueryOptions,
    ) -> Result<Versioned<Bytes>, Error> {
        self.read_raw(
            "catalog.node_services",
            &["catalog", "node-services", node],
            q,
        )
        .await
    }

    /// `GET /v1/catalog/nodes`: all nodes. Honors `node_meta`, `filter`,
    /// `stale` and blocking options.
    pub async fn nodes(&self, q: &QueryOptions) -> Result<Versioned<Vec<Node>>, Error> {
        self.read("catalog.nodes", &["catalog", "nodes"], q).await
    }

    /// `GET /v1/health/service/:name`: instances with their node and checks.
    /// Honors `passing_only`, `tags`, `node_meta`, `filter`, `stale` and
    /// blocking options.
    pub async fn health_service(
        &self,
        name: &str,
        q: &QueryOptions,
    ) -> Result<Versioned<Vec<ServiceEntry>>, Error> {
        self.read("health.service", &["health", "service", name], q)
            .await
    }

    /// `GET /v1/health/node/:node`: every health check registered on one
    /// node (node-level and service-level), with their status. Honors
    /// `filter`, `stale` and blocking options. An unknown node answers an
    /// empty list, as Consul does.
    pub async fn health_node(
        &self,
        node: &str,
        q: &QueryOptions,
    ) -> Result<Versioned<Vec<HealthCheck>>, Error> {
        let v: Versioned<Option<Vec<HealthCheck>>> = self
            .read("health.node", &["health", "node", node], q)
            .await?;
        Ok(Versioned {
            index: v.index,
            value: v.value.unwrap_or_default(),
        })
    }

    // ----- plumbing -----------------------------------------------------------

    /// [`Client::health_node`] undecoded (see [`Client::node_services_raw`]).
    pub async fn health_node_raw(
        &self,
        node: &str,
        q: &QueryOptions,
    ) -> Result<Versioned<Bytes>, Error> {
        self.read_raw("health.node", &["health", "node", node], q)
            .await
    }

    async fn read<T: DeserializeOwned>(
        &self,
        operation: &'static str,
        segments: &[&str],
        q: &QueryOptions,
    ) -> Result<Versioned<T>, Error> {
        let raw = self.read_raw(operation, segments, q).await?;
        let value = decode(operation, &raw.value)?;
        Ok(Versioned {
            index: raw.index,
            value,
        })
    }

    async fn read_raw(
        &self,
        operation: &'static str,
        segments: &[&str],
        q: &QueryOptions,
    ) -> Result<Versioned<Bytes>, Error> {
        let timeout = match q.effective_wait() {
            Some(wait) => blocking_timeout(wait, self.inner.request_timeout),
            None => self.inner.request_timeout,
        };
        let call = Call {
            operation,
            method: Method::GET,
            url: self.url(operation, segments, Some(q))?,
            body: None,
            timeout,
            idempotent: true,
            txn_ops: None,
        };
        let answer = self.execute(call).await?;
        Ok(Versioned {
            index: answer.index,
            value: answer.body,
        })
    }

    async fn write<B: serde::Serialize + ?Sized>(
        &self,
        operation: &'static str,
        segments: &[&str],
        body: &B,
        idempotent: bool,
        txn_ops: Option<&[TxnOp]>,
    ) -> Result<Answer, Error> {
        let body = serde_json::to_vec(body).map_err(|e| Error::Encode {
            operation,
            message: e.to_string(),
        })?;
        let call = Call {
            operation,
            method: Method::PUT,
            url: self.url(operation, segments, None)?,
            body: Some(Bytes::from(body)),
            timeout: self.inner.request_timeout,
            idempotent,
            txn_ops,
        };
        self.execute(call).await
    }

    fn url(
        &self,
        operation: &'static str,
        segments: &[&str],
        q: Option<&QueryOptions>,
    ) -> Result<Url, Error> {
        self.url_with(&self.inner.common, operation, segments, q)
    }

    fn url_with(
        &self,
        params: &CommonParams,
        operation: &'static str,
        segments: &[&str],
        q: Option<&QueryOptions>,
    ) -> Result<Url, Error> {
        build_url(&self.inner.servers[0].base, segments, params, q).map_err(|e| Error::Encode {
            operation,
            message: e.to_string(),
        })
    }

    /// Sends `call` with the client's token. With a login configured, a
    /// `403 ACL not found` (the login token was deleted, expired or logged
    /// out) causes one new login and one resend; a second failure is
    /// returned. Resending is safe for any request: Consul refused it
    /// before applying anything.
    async fn execute(&self, call: Call<'_>) -> Result<Answer, Error> {
        let creds = self.credentials().await?;
        match (self.execute_with(&call, &creds).await, &self.inner.login) {
            (Err(e), Some(login)) if e.is_acl_not_found() => {
                warn!(
                    operation = call.operation,
                    auth_method = %login.config.auth_method,
                    token = %creds.hint,
                    "Consul does not know the login token any more; logging in again"
                );
                let fresh = self.log_in(login, Some(creds.generation)).await?;
                self.execute_with(&call, &fresh).await
            }
            (result, _) => result,
        }
    }

    /// Sends `call` with `creds`, retrying per the rules in the module
    /// docs.
    async fn execute_with(&self, call: &Call<'_>, creds: &Credentials) -> Result<Answer, Error> {
        let max_attempts = self.inner.retry.max_attempts.max(1);
        let servers = self.inner.servers.len();
        let mut attempt = 0u32;
        let mut switches = 0usize;
        loop {
            let server = self.current_index();
            let err = match self.attempt(call, server, creds).await {
                Ok(answer) => return Ok(answer),
                Err(e) => e,
            };
            let may_retry = err.is_retryable() && (call.idempotent || err.certainly_not_applied());
            if servers > 1 && server_unreachable(&err) {
                let next = (server + 1) % servers;
                // Only the first request to see this server fail moves the
                // cursor; concurrent ones that failed on it too must not
                // skip the server it moved to.
                if self
                    .inner
                    .current
                    .compare_exchange(server, next, Ordering::Relaxed, Ordering::Relaxed)
                    .is_ok()
                {
                    warn!(
                        operation = call.operation,
                        class = err.class(),
                        from = %self.inner.servers[server].base,
                        to = %self.inner.servers[next].base,
                        "consul server did not answer, switching to the next one"
                    );
                }
                // Each other server gets one immediate try before the
                // retry policy's backoff applies.
                if may_retry && switches + 1 < servers {
                    switches += 1;
                    continue;
                }
            }
            attempt += 1;
            if !may_retry || attempt >= max_attempts {
                debug!(
                    operation = call.operation,
                    class = err.class(),
                    attempt,
                    "consul request failed"
                );
                return Err(err);
            }
            let delay = self.inner.retry.jittered_delay(attempt);
            warn!(
                operation = call.operation,
                class = err.class(),
                attempt,
                delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                error = %err,
                "consul request failed, retrying"
            );
            tokio::time::sleep(delay).await;
        }
    }

    async fn attempt(
        &self,
        call: &Call<'_>,
        server: usize,
        creds: &Credentials,
    ) -> Result<Answer, Error> {
        let target = &self.inner.servers[server];
        let secret = creds.secret.as_ref().map(Token::expose);
        let transport =
            |e: reqwest::Error| error_from_transport(call.operation, call.timeout, &e, secret);

        let mut url = call.url.clone();
        if server != 0 {
            rebase(&mut url, &target.base);
        }
        let mut req = target
            .http
            .request(call.method.clone(), url)
            .timeout(call.timeout);
        if let Some(h) = &creds.header {
            req = req.header(TOKEN_HEADER, h.clone());
        }
        if let Some(body) = &call.body {
            req = req
                .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
                .body(body.clone());
        }
        let resp = req.send().await.map_err(transport)?;
        let status = resp.status();
        let index = resp
            .headers()
            .get(INDEX_HEADER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0);
        let body = resp.bytes().await.map_err(transport)?;
        debug!(
            operation = call.operation,
            status = status.as_u16(),
            index,
            bytes = body.len(),
            "consul answered"
        );
        if status.is_success() {
            return Ok(Answer { index, body });
        }
        let ctx = ErrorContext {
            operation: call.operation,
            token_hint: &creds.hint,
            secret,
            txn_ops: call.txn_ops,
        };
        Err(error_from_response(&ctx, status, &body))
    }
}

fn decode<T: DeserializeOwned>(operation: &'static str, body: &[u8]) -> Result<T, Error> {
    serde_json::from_slice(body).map_err(|e| Error::Decode {
        operation,
        message: e.to_string(),
    })
}

/// Whether `err` says the server itself is gone or stuck (so another server
/// may answer), as opposed to an answer from Consul.
fn server_unreachable(err: &Error) -> bool {
    matches!(
        err,
        Error::Connect { .. } | Error::Timeout { .. } | Error::Transport { .. }
    )
}

/// Points `url` (built on the first server's base) at another server. All
/// servers from `CONSUL_ADDRESSES` share scheme and path; only host and
/// port differ.
fn rebase(url: &mut Url, base: &Url) {
    // Both come from parsed http(s) URLs with a host, which always accept
    // a host and a port, so neither call can fail here.
    let _ = url.set_host(base.host_str());
    let _ = url.set_port(base.port());
}

fn http_builder() -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .pool_idle_timeout(POOL_IDLE_TIMEOUT)
        .pool_max_idle_per_host(POOL_MAX_IDLE_PER_HOST)
        .tcp_keepalive(TCP_KEEPALIVE)
        .user_agent(concat!("mirra-consul/", env!("CARGO_PKG_VERSION")))
}

fn finish(b: reqwest::ClientBuilder) -> Result<reqwest::Client, ConfigError> {
    b.build()
        .map_err(|e| ConfigError::HttpClient(e.to_string()))
}

/// One [`Server`] per configured address; a host name from
/// `CONSUL_ADDRESSES` becomes one server per address it resolves to.
fn build_servers(config: &ConsulConfig) -> Result<Vec<Server>, ConfigError> {
    if config.addresses.is_empty() {
        let mut base = config.address.clone();
        let http = finish(apply_tls(http_builder(), &config.tls, &mut base)?)?;
        return Ok(vec![Server { http, base }]);
    }
    let mut servers = Vec::new();
    let mut failures = Vec::new();
    for url in &config.addresses {
        let Some(host) = url.host_str() else { continue };
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let Some(port) = url.port_or_known_default() else {
            continue;
        };
        let addrs: Vec<SocketAddr> = match host.parse::<IpAddr>() {
            Ok(ip) => vec![SocketAddr::new(ip, port)],
            Err(_) => match (host.as_str(), port).to_socket_addrs() {
                Ok(a) => a.collect(),
                Err(e) => {
                    warn!(host = %host, error = %e, "cannot resolve a Consul server name");
                    failures.push(format!("{host}: {e}"));
                    continue;
                }
            },
        };
        let is_name = host.parse::<IpAddr>().is_err();
        for addr in addrs {
            let mut base = url.clone();
            let mut b = apply_tls_files(http_builder(), &config.tls)?;
            // Over TLS the certificate names the configured server name, or
            // else the DNS name the operator gave (consul-k8s verifies
            // against it too); the connection still goes to this address.
            let sni = config
                .tls
                .server_name
                .clone()
                .filter(|n| !n.is_empty())
                .or_else(|| is_name.then(|| host.clone()));
            match sni {
                Some(name) if url.scheme() == "https" => {
                    base.set_host(Some(&name))
                        .map_err(|e| ConfigError::ServerName {
                            server_name: name.clone(),
                            reason: format!("not a valid host name: {e}"),
                        })?;
                    b = b.resolve_to_addrs(&name, &[addr]);
                }
                _ => {
                    let ip = match addr.ip() {
                        IpAddr::V4(v4) => v4.to_string(),
                        IpAddr::V6(v6) => format!("[{v6}]"),
                    };
                    base.set_host(Some(&ip))
                        .map_err(|e| ConfigError::BadAddress {
                            value: addr.to_string(),
                            origin: crate::config::env::ADDRESSES,
                            reason: e.to_string(),
                        })?;
                }
            }
            if servers.iter().any(|s: &Server| s.base == base) && url.scheme() == "http" {
                continue;
            }
            servers.push(Server {
                http: finish(b)?,
                base,
            });
        }
    }
    if servers.is_empty() {
        return Err(ConfigError::Resolve {
            reason: if failures.is_empty() {
                "no address".into()
            } else {
                failures.join("; ")
            },
        });
    }
    Ok(servers)
}

fn apply_tls(
    b: reqwest::ClientBuilder,
    tls: &TlsConfig,
    base: &mut Url,
) -> Result<reqwest::ClientBuilder, ConfigError> {
    let b = apply_tls_files(b, tls)?;
    if let Some(name) = tls.server_name.as_deref().filter(|n| !n.is_empty())
        && base.scheme() == "https"
    {
        return apply_server_name(b, name, base);
    }
    Ok(b)
}

/// The CA bundle, the client identity and the verification switch.
fn apply_tls_files(
    mut b: reqwest::ClientBuilder,
    tls: &TlsConfig,
) -> Result<reqwest::ClientBuilder, ConfigError> {
    let read = |what: &'static str, p: &std::path::Path| {
        std::fs::read(p).map_err(|e| ConfigError::Tls {
            what,
            path: p.display().to_string(),
            reason: e.to_string(),
        })
    };
    let ca = match (&tls.ca_file, &tls.ca_pem) {
        (Some(ca), _) => Some(("CA file", ca.display().to_string(), read("CA file", ca)?)),
        (None, Some(pem)) => Some((
            "CA PEM",
            "(-ca-cert-pem, CONSUL_CACERT_PEM)".to_owned(),
            pem.as_bytes().to_vec(),
        )),
        (None, None) => None,
    };
    if let Some((what, origin, pem)) = ca {
        let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| ConfigError::Tls {
            what,
            path: origin.clone(),
            reason: e.to_string(),
        })?;
        if certs.is_empty() {
            return Err(ConfigError::Tls {
                what,
                path: origin,
                reason: "no PEM certificate found".into(),
            });
        }
        for c in certs {
            b = b.add_root_certificate(c);
        }
    }
    match (&tls.client_cert, &tls.client_key) {
        (Some(cert), Some(key)) => {
            let mut pem = read("client certificate", cert)?;
            pem.push(b'\n');
            pem.extend(read("client key", key)?);
            let id = reqwest::Identity::from_pem(&pem).map_err(|e| ConfigError::Tls {
                what: "client certificate/key",
                path: format!("{} + {}", cert.display(), key.display()),
                reason: e.to_string(),
            })?;
            b = b.identity(id);
        }
        (None, None) => {}
        _ => return Err(ConfigError::IncompleteClientIdentity),
    }
    if tls.insecure_skip_verify {
        warn!("TLS certificate verification of Consul is disabled");
        b = b.danger_accept_invalid_certs(true);
    }
    Ok(b)
}

/// Makes TLS use `name` for SNI and certificate verification while still
/// connecting to the configured host: the URL's host becomes `name`, and
/// `name` resolves to the configured host's addresses. A configured host
/// name is resolved once, here.
fn apply_server_name(
    b: reqwest::ClientBuilder,
    name: &str,
    base: &mut Url,
) -> Result<reqwest::ClientBuilder, ConfigError> {
    let fail = |reason: String| ConfigError::ServerName {
        server_name: name.to_owned(),
        reason,
    };
    let host = base
        .host_str()
        .ok_or_else(|| fail("address has no host".into()))?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let port = base
        .port_or_known_default()
        .ok_or_else(|| fail("address has no port".into()))?;
    let addrs: Vec<SocketAddr> = match host.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => (host.as_str(), port)
            .to_socket_addrs()
            .map_err(|e| fail(format!("cannot resolve {host}: {e}")))?
            .collect(),
    };
    if addrs.is_empty() {
        return Err(fail(format!("{host} resolves to no address")));
    }
    base.set_host(Some(name))
        .map_err(|e| fail(format!("not a valid host name: {e}")))?;
    Ok(b.resolve_to_addrs(name, &addrs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Overrides, TokenConfig, TokenSource};

    const SECRET: &str = "6a1f0c55-secret-token-value-4be2";

    fn config_with_token() -> ConsulConfig {
        let mut c = ConsulConfig::new("127.0.0.1:1").unwrap();
        c.token = Some(TokenConfig {
            secret: Token::new(SECRET),
            source: TokenSource::EnvVar,
        });
        c
    }

    #[test]
    fn client_debug_hides_token() {
        let client = Client::new(config_with_token()).unwrap();
        let dbg = format!("{client:?}");
        assert!(!dbg.contains(SECRET), "{dbg}");
        assert!(dbg.contains("CONSUL_HTTP_TOKEN"));
    }

    #[test]
    fn txn_max_ops_is_validated() {
        for bad in [0usize, 129, 10_000] {
            let mut c = ConsulConfig::new("127.0.0.1:1").unwrap();
            c.txn_max_ops = bad;
            let err = Client::new(c).unwrap_err();
            assert_eq!(err.class(), "config");
        }
        let mut c = ConsulConfig::new("127.0.0.1:1").unwrap();
        c.txn_max_ops = 128;
        assert_eq!(Client::new(c).unwrap().txn_max_ops(), 128);
    }

    #[test]
    fn missing_and_garbage_tls_files_are_config_errors() {
        let mut c = ConsulConfig::new("https://127.0.0.1:8501").unwrap();
        c.tls.ca_file = Some("/nonexistent/ca.pem".into());
        let err = Client::new(c).unwrap_err();
        assert!(
            matches!(
                err,
                Error::Config(ConfigError::Tls {
                    what: "CA file",
                    ..
                })
            ),
            "{err}"
        );

        let mut c = ConsulConfig::new("https://127.0.0.1:8501").unwrap();
        c.tls.ca_pem = Some("not a certificate".into());
        let err = Client::new(c).unwrap_err();
        assert!(
            matches!(err, Error::Config(ConfigError::Tls { what: "CA PEM", .. })),
            "{err}"
        );
        assert!(err.to_string().contains("CONSUL_CACERT_PEM"), "{err}");

        let garbage = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(garbage.path(), "not a certificate").unwrap();
        let mut c = ConsulConfig::new("https://127.0.0.1:8501").unwrap();
        c.tls.ca_file = Some(garbage.path().to_owned());
        assert!(matches!(
            Client::new(c).unwrap_err(),
            Error::Config(ConfigError::Tls { .. })
        ));

        let mut c = ConsulConfig::new("https://127.0.0.1:8501").unwrap();
        c.tls.client_cert = Some(garbage.path().to_owned());
        c.tls.client_key = Some(garbage.path().to_owned());
        assert!(matches!(
            Client::new(c).unwrap_err(),
            Error::Config(ConfigError::Tls { .. })
        ));

        let mut c = ConsulConfig::new("https://127.0.0.1:8501").unwrap();
        c.tls.client_cert = Some(garbage.path().to_owned());
        assert!(matches!(
            Client::new(c).unwrap_err(),
            Error::Config(ConfigError::IncompleteClientIdentity)
        ));
    }

    #[test]
    fn server_name_rewrites_host_and_keeps_port() {
        let mut c = ConsulConfig::new("https://127.0.0.1:8501").unwrap();
        c.tls.server_name = Some("server.dc1.consul".into());
        c.tls.insecure_skip_verify = true;
        let client = Client::new(c).unwrap();
        assert_eq!(client.address().host_str(), Some("server.dc1.consul"));
        assert_eq!(client.address().port(), Some(8501));

        // Plain http has no SNI: the address is left alone.
        let mut c = ConsulConfig::new("http://127.0.0.1:8500").unwrap();
        c.tls.server_name = Some("server.dc1.consul".into());
        assert_eq!(
            Client::new(c).unwrap().address().host_str(),
            Some("127.0.0.1")
        );
    }

    #[test]
    fn from_env_overrides_builds() {
        let c = ConsulConfig::from_sources(&Default::default(), &Overrides::default()).unwrap();
        assert!(Client::new(c).is_ok());
    }
}
