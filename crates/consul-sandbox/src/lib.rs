//! consul-sandbox: an in-process Consul catalog server for mirra's tests,
//! benchmarks and `mirra dev`, where no real Consul can be installed.
//!
//! It speaks the part of Consul's HTTP API that catalog sync uses, with
//! Consul's JSON shapes, status codes and error texts:
//!
//! | endpoint | notes |
//! |---|---|
//! | `PUT /v1/catalog/register`, `PUT /v1/catalog/deregister` | one Raft apply each |
//! | `PUT /v1/txn` | Node/Service/Check ops, all-or-nothing, one Raft apply; 409/413 |
//! | `GET /v1/catalog/services`, `/service/<name>`, `/node-services/<node>`, `/node/<node>`, `/nodes`, `/datacenters` | blocking queries |
//! | `GET /v1/health/service/<name>` | `passing`, `tag`, `node-meta` |
//! | `GET /v1/health/node/<node>` | the node's checks; blocking (index: the node's) |
//! | `GET /v1/health/state/<state>` | checks in `passing`/`warning`/`critical`/`any`; index: the checks table |
//! | `GET /v1/health/checks/<service>` | the checks of a service's instances; index: the service's |
//! | `GET /v1/agent/self` | `Config`, `Member`, and `Stats` (`consul`, `raft`, `serf_lan`, `runtime`) |
//! | `GET /v1/status/leader`, `/v1/status/peers` | |
//! | `/v1/acl/policy[/<id>|/name/<name>]`, `/v1/acl/policies` | `PUT` create/update, `GET`, `DELETE`; rules in HCL or JSON; one Raft apply per write |
//! | `/v1/acl/role[/<id>]`, `/v1/acl/roles`, `/v1/acl/token[/<accessor>]`, `/v1/acl/tokens`, `GET /v1/acl/token/self` | the same; 401 `ACL support disabled` with ACLs off |
//! | `/v1/acl/auth-method[/<name>]`, `/v1/acl/auth-methods`, `/v1/acl/binding-rule[/<id>]`, `/v1/acl/binding-rules` | `kubernetes` methods only; selectors and bind names checked as Consul checks them |
//! | `/v1/namespace[/<name>]`, `/v1/namespaces`, `/v1/partition[/<name>]`, `/v1/partitions` | with [`Config::enterprise`] only (404 without); one Raft apply per write |
//! | `POST /v1/acl/login`, `POST /v1/acl/logout` | a TokenReview against the method's `Host` (an `http://` URL), then one Raft apply |
//! | `GET /v1/sandbox/stats`, `POST`/`DELETE /v1/sandbox/faults` | sandbox control |
//!
//! Limits, as Consul enforces them on `/v1/txn` (`agent/txn_endpoint.go`),
//! all answered `413 Request Entity Too Large` in plain text and applying
//! nothing:
//!
//! | limit | default | text |
//! |---|---|---|
//! | body size ([`Config::max_body_bytes`], Consul's `txn_max_req_len`), checked first from `Content-Length`, then while reading | 512 KiB | `Request body too large, max size: 524288 bytes` |
//! | operations per transaction ([`Config::max_txn_ops`]), checked after decoding | 128 (Consul 1.14 and later; 64 before) | `Transaction contains too many operations (129 > 128)` |
//!
//! Reads report `X-Consul-Effective-Consistency` (`leader`, `stale` or
//! `consistent`, as asked); `?stale&consistent` and `?consistent&cached`
//! answer Consul's 400. A token is taken from `?token=`, then
//! `X-Consul-Token`, then `Authorization: Bearer`, in that order.
//!
//! HTTPS, as Consul's `ports.https` with `tls.defaults`: [`Config::tls`]
//! with [`Sandbox::start`], or [`serve_https`] with a [`TlsConfig::load`]ed
//! configuration, serves the same API on a second listener over TLS,
//! optionally demanding client certificates (`verify_incoming`). Bad
//! certificate or key files are a [`TlsError`] naming the file.
//!
//! A leaderless cluster is a fault of its own
//! ([`FaultsHandle::set_leaderless`], or `{"kind": "leaderless"}` /
//! `{"kind": "leader_elected"}` on `/v1/sandbox/faults`): until it ends,
//! `/v1/status/leader` answers `""`, writes and reads without `stale`
//! answer `500 No cluster leader`, `stale` reads are served with
//! `X-Consul-KnownLeader: false`.
//!
//! What it is for, above all, is counting the cost mirra minimises: every
//! write request is one Raft apply ([`Stats::raft_applies`]), while the
//! indexes a client sees (`ModifyIndex`, `X-Consul-Index`) move only when
//! content really changes, exactly as in Consul. See `store` for the index
//! model and which index each read watches.
//!
//! Deliberate differences from Consul, all documented where they live:
//! `health/node` reports the node's own index where Consul reports the
//! checks table's (both only grow when the answer may have changed); no
//! KV store (KV txn ops are refused), no `filter=` expressions (400);
//! namespaces and partitions only with [`Config::enterprise`] (ACL
//! objects then live in the partition `?partition=` names; without it
//! `ns=default` is accepted and other values are refused like Consul CE
//! does; with it see `tenancy`: nodes live in a partition, services in
//! a namespace of it); an ACL model limited to node, service, operator and
//! namespace-scoped rules and `kubernetes` auth methods (no other auth
//! method types; see `acl` and `acl_auth`), no Connect or
//! proxy semantics, check `Definition`s stored as sent, and node IDs not
//! used for renames.
//!
//! The crate must NOT depend on mirra's own Consul client or share types
//! with it: it is the independent reference the client is tested against.

mod acl;
mod acl_auth;
mod acl_http;
mod acl_rules;
mod acl_selector;
mod catalog;
mod decode;
mod error;
mod faults;
mod model;
mod router;
mod server;
mod store;
mod tenancy;
mod tls;
mod txn;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

use serde::Serialize;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub use acl::{
    ANONYMOUS_ACCESSOR_ID, AclAccess, AclConfig, AclDefaultPolicy, AclError, AclPolicy,
    AclResource, AclRule, AclToken,
};
pub use decode::DecodeError;
pub use error::ApiError;
pub use faults::{FaultAction, FaultRule, FaultsHandle};
pub use store::StoreError;
pub use tls::{TlsConfig, TlsError, TlsServer};

/// Consul's limit on the operations of one transaction: 128 since Consul
/// 1.14 (`maxTxnOps` in `agent/txn_endpoint.go`, not configurable); set
/// [`Config::max_txn_ops`] to 64 to stand in for an older server.
pub const DEFAULT_MAX_TXN_OPS: usize = 128;

/// Consul's default `txn_max_req_len`: 512 KiB, the Raft entry size Consul
/// suggests so that heartbeats are not delayed by large log entries.
pub const DEFAULT_MAX_BODY_BYTES: usize = 512 * 1024;

/// Sandbox configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The datacenter name (`dc1` by default). Requests for another
    /// datacenter answer `500 No path to datacenter`.
    pub datacenter: String,
    /// Name of the sandbox's own agent node (reported by `/v1/agent/self`
    /// and registered in the catalog when `register_agent_node` is set).
    pub node_name: String,
    /// Maximum operations in one transaction (413 above).
    pub max_txn_ops: usize,
    /// Maximum request body size in bytes (413 above).
    pub max_body_bytes: usize,
    /// Tokens and anonymous rules fixed at start-up. ACLs are on when this,
    /// [`Config::acl_default_policy`] or
    /// [`Config::acl_initial_management_token`] is set; all `None` (the
    /// default) turns ACLs off.
    pub acl: Option<AclConfig>,
    /// Consul's `acl.default_policy`: what no rule decides. `None` with
    /// ACLs on means `deny`.
    pub acl_default_policy: Option<AclDefaultPolicy>,
    /// Consul's `acl.tokens.initial_management`: the SecretID of a token
    /// linked to `global-management`, made at start-up (not a Raft apply
    /// counted in [`Stats::raft_applies`]).
    pub acl_initial_management_token: Option<String>,
    /// Register the agent node, its `consul` service and `serfHealth` check
    /// at start-up, as a Consul server does (Raft entry 1, not counted in
    /// [`Stats::raft_applies`]).
    pub register_agent_node: bool,
    /// Seed of the generator behind fractional faults, for reproducible runs.
    pub fault_seed: u64,
    /// Consul Enterprise's namespaces and admin partitions: `?ns=` and
    /// `?partition=` on the catalog, health and txn endpoints, `Namespace`
    /// and `Partition` in bodies and answers, `/v1/namespace[s]` and
    /// `/v1/partition[s]`, and ACL rules scoped by `namespace`/`partition`
    /// blocks. Off (the default) answers as Consul CE does.
    pub enterprise: bool,
    /// An HTTPS listener beside the plain one, as Consul's `ports.https`
    /// with `tls.defaults`: [`Sandbox::start`] binds a second loopback
    /// port for it ([`Sandbox::https_url`]). [`serve`] ignores it; use
    /// [`serve_https`] with [`TlsConfig::load`]'s result.
    pub tls: Option<TlsConfig>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            datacenter: "dc1".into(),
            node_name: "consul-sandbox".into(),
            max_txn_ops: DEFAULT_MAX_TXN_OPS,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            acl: None,
            acl_default_policy: None,
            acl_initial_management_token: None,
            register_agent_node: true,
            fault_seed: 0,
            enterprise: false,
            tls: None,
        }
    }
}

/// A snapshot of the sandbox's counters (also served as JSON by
/// `GET /v1/sandbox/stats`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Stats {
    /// Raft applies caused by API write requests: one per register,
    /// deregister, or transaction with writes that passed the pre-checks,
    /// whether or not it changed anything.
    pub raft_applies: u64,
    /// The current Raft index (applies plus the bootstrap entry).
    pub raft_index: u64,
    /// Requests received, keyed `"METHOD /v1/path-template"` (the path
    /// parameter removed, e.g. `"GET /v1/catalog/node-services"`); unknown
    /// paths count under `"METHOD unknown"`.
    pub requests: BTreeMap<String, u64>,
    /// Blocking queries currently waiting.
    pub blocking_queries_open: u64,
    /// Blocking queries started since start-up.
    pub blocking_queries_total: u64,
    /// Times a blocked query was woken to re-check its index. A write wakes
    /// only the queries watching what it changed, so this grows with the
    /// relevant changes, not with the number of writes.
    pub blocking_wakeups: u64,
    /// Requests answered with an injected error.
    pub faults_injected: u64,
    /// Connections closed by the refusal fault.
    pub connections_refused: u64,
    /// TLS handshakes completed on the HTTPS listener.
    pub tls_handshakes: u64,
    /// TLS handshakes refused or timed out on the HTTPS listener (a client
    /// without a certificate under `verify_incoming`, a client that does
    /// not trust the server's certificate, plain HTTP sent to it).
    pub tls_handshakes_failed: u64,
    /// Nodes in the catalog.
    pub nodes: u64,
    /// Service instances in the catalog.
    pub services: u64,
    /// Health checks in the catalog.
    pub checks: u64,
}

impl Stats {
    /// Count of requests for `"METHOD /template"`, 0 if none.
    pub fn requests_for(&self, key: &str) -> u64 {
        self.requests.get(key).copied().unwrap_or(0)
    }
}

/// Serves the sandbox on `listener` until `shutdown` resolves. On shutdown
/// it stops accepting, releases blocked queries at once and gives open
/// connections a few seconds to finish.
pub async fn serve(
    listener: TcpListener,
    config: Config,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let listeners = server::Listeners {
        http: Some(listener),
        https: None,
    };
    server::run(listeners, server::Shared::new(config), shutdown).await
}

/// Like [`serve`], with HTTPS on `https` (Consul's `ports.https`) and, when
/// `http` is given, plain HTTP beside it on the same store (`ports.http`;
/// `None` is Consul's `ports.http = -1`). Load `tls` first with
/// [`TlsConfig::load`], so that bad files are reported before anything
/// listens.
pub async fn serve_https(
    http: Option<TcpListener>,
    https: TcpListener,
    tls: TlsServer,
    config: Config,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let listeners = server::Listeners {
        http,
        https: Some((https, tls)),
    };
    server::run(listeners, server::Shared::new(config), shutdown).await
}

/// A sandbox running in the background on `127.0.0.1:<random port>`. It
/// stops when dropped or on [`Sandbox::shutdown`].
pub struct Sandbox {
    addr: SocketAddr,
    https_addr: Option<SocketAddr>,
    shared: Arc<server::Shared>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<std::io::Result<()>>>,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl Sandbox {
    /// Binds `127.0.0.1:0` and starts serving; with [`Config::tls`], binds
    /// a second `127.0.0.1:0` for HTTPS. Must be called inside a Tokio
    /// runtime. Bad TLS files are an `InvalidInput` error wrapping the
    /// [`TlsError`] that names the file.
    pub async fn start(config: Config) -> std::io::Result<Sandbox> {
        let https = match &config.tls {
            Some(tls) => {
                let tls = tls
                    .load()
                    .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
                Some((TcpListener::bind(("127.0.0.1", 0)).await?, tls))
            }
            None => None,
        };
        let https_addr = match &https {
            Some((l, _)) => Some(l.local_addr()?),
            None => None,
        };
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let shared = server::Shared::new(config);
        let (stop, stopped) = oneshot::channel::<()>();
        let listeners = server::Listeners {
            http: Some(listener),
            https,
        };
        let task = tokio::spawn(server::run(listeners, shared.clone(), async move {
            let _ = stopped.await;
        }));
        Ok(Sandbox {
            addr,
            https_addr,
            shared,
            stop: Some(stop),
            task: Some(task),
        })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL, e.g. `http://127.0.0.1:41234`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The HTTPS listener's address, with [`Config::tls`].
    pub fn https_addr(&self) -> Option<SocketAddr> {
        self.https_addr
    }

    /// The HTTPS base URL, e.g. `https://127.0.0.1:41235`, with
    /// [`Config::tls`].
    pub fn https_url(&self) -> Option<String> {
        self.https_addr.map(|a| format!("https://{a}"))
    }

    /// The configuration the sandbox runs with.
    pub fn config(&self) -> &Config {
        &self.shared.config
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> Stats {
        self.shared.stats()
    }

    /// Handle to inject and clear faults.
    pub fn faults(&self) -> FaultsHandle {
        self.shared.faults.clone()
    }

    /// Stops the server and waits for it to finish.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            match task.await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::warn!(error = %e, "consul-sandbox stopped with an error"),
                Err(e) => tracing::warn!(error = %e, "consul-sandbox task failed"),
            }
        }
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        // The task ends on its own once the stop signal is seen; aborting it
        // here would cut open responses short.
    }
}
