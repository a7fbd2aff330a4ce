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
    FailedOp, TxnBatchError, TxnOp, TxnResponse, TxnResult, TxnSummary, all_idempotent,
    with_tenancy,
};
use crate::types::{
    CatalogServiceInstance, DeregisterRequest, HealthCheck, Node, NodeServices, RegisterRequest,
    ServiceEntry, ServiceTags,
};

mod api;
mod login;
mod servers;
mod stream;
mod transport;

use login::*;
use servers::*;
pub use stream::BodyParser;
use stream::*;
use transport::*;

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
    /// The configured operations per transaction, lowered for good when a
    /// server names a smaller limit in a 413 (64 before Consul 1.14).
    txn_max_ops: AtomicUsize,
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
            .field("txn_max_ops", &self.txn_max_ops())
            .finish()
    }
}

/// One server: its base URL and a connection pool of its own (a TLS server
/// name must resolve to this server's address only).
struct Server {
    http: reqwest::Client,
    base: Url,
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
                txn_max_ops: AtomicUsize::new(config.txn_max_ops),
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

    /// Operations per transaction used by [`Client::apply_ops`]: the
    /// configured number, or the lower limit a server named in a 413.
    pub fn txn_max_ops(&self) -> usize {
        self.inner.txn_max_ops.load(Ordering::Relaxed)
    }

    /// A server refused a transaction naming `limit` operations as its
    /// most: later [`Client::apply_ops`] calls pack to it.
    fn learn_txn_limit(&self, limit: usize) {
        let before = self
            .inner
            .txn_max_ops
            .fetch_min(limit.max(1), Ordering::Relaxed);
        if limit < before {
            tracing::warn!(
                limit,
                configured = before,
                "Consul accepts fewer operations per transaction than configured; using its limit"
            );
        }
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
}

#[cfg(test)]
mod tests;
