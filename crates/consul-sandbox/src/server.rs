//! The HTTP side: the accept loop, the per-request pipeline and one handler
//! per endpoint.
//!
//! ```text
//!  accept (http, or https: TLS handshake first) ── refusing? ──> close
//!    └─ hyper http1 connection ── request
//!         route (pure) ─> count "METHOD /template"
//!         /v1/sandbox/*  ──────────────────────────────> control handlers
//!         leaderless? ─> 500 No cluster leader (writes, non-stale reads)
//!         faults: latency, error before ─> handler ─> error after
//!         handler: parse query, resolve token, then
//!            writes: decode body, validate, lock store, one Raft apply,
//!                    notify blocked readers if content changed
//!            reads:  lock store (read), or wait on the commit channel
//!                    until the watched index passes ?index= (blocking)
//! ```
//!
//! Blocking queries wait on `tokio::sync::watch` channels, one per watched
//! key (a service name, a node, a table), like Consul's per-record watch
//! channels: a commit signals only the keys it changed, so a write wakes
//! only the readers it concerns, never a scan or a poll. Readers whose index
//! depends on global state (a name with no instances, which reports the
//! "extinction" index; `node-meta` listings) wait on a broad channel that
//! every content-changing commit signals. A woken reader re-reads only the
//! index it watches (an O(log n) lookup) and waits again if it has not
//! passed the client's index.
//!
//! This module must NOT implement catalog semantics (see `store`, `catalog`,
//! `txn`); it only moves bytes, locks and signals.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use rand::Rng;
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::acl::{AclAccess, AclResource, AclTable, Authz};
use crate::acl_http::AclRequest;
use crate::catalog;
use crate::decode;
use crate::error::ApiError;
use crate::faults::{FaultAction, FaultRequest, FaultsHandle, parse_request};
use crate::model::{CheckRec, NodeRec, ServiceRec, Weights};
use crate::router::{self, JITTER_FRACTION, Query, Route};
use crate::store::{ChangeSet, JsonRead, ListFilter, NsSel, ReadResult, Store, WatchKey};
use crate::tenancy::{self, Scope, TenancyRequest};
use crate::tls::TlsServer;
use crate::txn;
use crate::{Config, Stats};

mod agent;
mod blocking;
mod control;
mod request;
mod response;

use agent::*;
use blocking::*;
use control::*;
use request::*;
use response::*;

/// Version reported by `/v1/agent/self`: the Consul release whose HTTP API
/// the sandbox follows.
pub(crate) const CONSUL_VERSION: &str = "1.21.0";

/// Consul's default server RPC port: the sandbox reports itself as a
/// single server at this port (`/v1/status/leader`, the `consul` service),
/// the way a one-node Consul cluster does. Nothing listens there.
const SERVER_RPC_PORT: u16 = 8300;

/// Consul's default Serf LAN port, reported in `/v1/agent/self`.
const SERF_LAN_PORT: u16 = 8301;

/// How long a shutdown waits for open connections to finish their current
/// request before dropping them. Blocked queries are released immediately
/// on shutdown, so this only bounds slow clients.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Pause after a failed `accept()` (for example, out of file descriptors)
/// so the loop does not spin while the condition lasts.
const ACCEPT_ERROR_BACKOFF: Duration = Duration::from_millis(10);

/// Everything the handlers share.
pub(crate) struct Shared {
    pub config: Config,
    pub node_id: String,
    store: RwLock<Store>,
    watchers: Watchers,
    pub(crate) acl: AclTable,
    pub faults: FaultsHandle,
    requests: Mutex<HashMap<(Method, &'static str), u64>>,
    blocking_open: AtomicU64,
    blocking_total: AtomicU64,
    blocking_wakeups: AtomicU64,
    tls_handshakes: AtomicU64,
    tls_handshakes_failed: AtomicU64,
    shutdown: watch::Sender<bool>,
}

impl Shared {
    pub fn new(config: Config) -> Arc<Shared> {
        let node_id = uuid::Uuid::new_v4().to_string();
        let mut store = Store::default();
        if config.enterprise {
            store.tenancy = tenancy::Tenancy::builtin();
        }
        if config.register_agent_node {
            bootstrap(&mut store, &config, &node_id);
        }
        let _ = store.take_changes();
        let (shutdown, _) = watch::channel(false);
        let mut acl = AclTable::new(
            config.acl.as_ref(),
            config.acl_default_policy,
            config.acl_initial_management_token.as_deref(),
        );
        acl.set_enterprise(config.enterprise);
        Arc::new(Shared {
            acl,
            faults: FaultsHandle::new(config.fault_seed),
            config,
            node_id,
            store: RwLock::new(store),
            watchers: Watchers::default(),
            requests: Mutex::new(HashMap::new()),
            blocking_open: AtomicU64::new(0),
            blocking_total: AtomicU64::new(0),
            blocking_wakeups: AtomicU64::new(0),
            tls_handshakes: AtomicU64::new(0),
            tls_handshakes_failed: AtomicU64::new(0),
            shutdown,
        })
    }

    fn read(&self) -> RwLockReadGuard<'_, Store> {
        // Store mutations never panic, so a poisoned lock still guards a
        // consistent store (writes are journaled and rolled back on error).
        self.store.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Store> {
        self.store.write().unwrap_or_else(|p| p.into_inner())
    }

    fn count(&self, method: &Method, template: &'static str) {
        let mut g = self.requests.lock().unwrap_or_else(|p| p.into_inner());
        *g.entry((method.clone(), template)).or_insert(0) += 1;
    }

    /// Runs a write under the store's write lock, then (lock released)
    /// wakes the blocked readers of whatever the write changed.
    fn write_then_notify<R>(&self, f: impl FnOnce(&mut Store) -> R) -> R {
        let (result, changes) = {
            let mut st = self.write();
            let result = f(&mut st);
            (result, st.take_changes())
        };
        self.watchers.notify(&changes);
        result
    }

    /// One counted Raft apply for an ACL write (the ACL tables live beside
    /// the catalog, but share its Raft log and index). Returns its index.
    fn acl_apply(&self) -> u64 {
        let mut st = self.write();
        let _ = st.apply(true, |_| Ok::<(), ()>(()));
        st.raft_index()
    }

    pub fn stats(&self) -> Stats {
        let (raft_applies, raft_index, (nodes, services, checks)) = {
            let st = self.read();
            (st.raft_applies(), st.raft_index(), st.counts())
        };
        let requests = {
            let g = self.requests.lock().unwrap_or_else(|p| p.into_inner());
            g.iter()
                .map(|((m, t), n)| (format!("{m} {t}"), *n))
                .collect()
        };
        Stats {
            raft_applies,
            raft_index,
            requests,
            blocking_queries_open: self.blocking_open.load(Ordering::Relaxed),
            blocking_queries_total: self.blocking_total.load(Ordering::Relaxed),
            blocking_wakeups: self.blocking_wakeups.load(Ordering::Relaxed),
            faults_injected: self.faults.injected(),
            connections_refused: self.faults.refused(),
            tls_handshakes: self.tls_handshakes.load(Ordering::Relaxed),
            tls_handshakes_failed: self.tls_handshakes_failed.load(Ordering::Relaxed),
            nodes: nodes as u64,
            services: services as u64,
            checks: checks as u64,
        }
    }
}

/// How long a client has to finish the TLS handshake on the HTTPS
/// listener; a connection still silent after it is dropped, so that idle
/// sockets do not hold a task each.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The sockets to serve on: plain HTTP (Consul's `ports.http`), HTTPS
/// (`ports.https`), or both, sharing one store.
pub(crate) struct Listeners {
    pub http: Option<TcpListener>,
    pub https: Option<(TcpListener, TlsServer)>,
}

async fn accept_on(listener: Option<&TcpListener>) -> std::io::Result<(TcpStream, SocketAddr)> {
    match listener {
        Some(l) => l.accept().await,
        None => std::future::pending().await,
    }
}

/// Accepts connections until `shutdown` resolves, then stops accepting,
/// releases blocked queries and lets open connections finish.
pub(crate) async fn run(
    listeners: Listeners,
    shared: Arc<Shared>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let mut conns = JoinSet::new();
    let (https, tls) = match listeners.https {
        Some((l, tls)) => (Some(l), Some(tls)),
        None => (None, None),
    };
    tokio::pin!(shutdown);
    loop {
        let (accepted, tls) = tokio::select! {
            () = &mut shutdown => break,
            Some(_) = conns.join_next(), if !conns.is_empty() => continue,
            a = accept_on(listeners.http.as_ref()) => (a, None),
            a = accept_on(https.as_ref()) => (a, tls.clone()),
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(ACCEPT_ERROR_BACKOFF).await;
                continue;
            }
        };
        if shared.faults.refuse_connection() {
            tracing::debug!(%peer, "refusing connection (fault)");
            drop(stream);
            continue;
        }
        let _ = stream.set_nodelay(true);
        match tls {
            None => {
                conns.spawn(serve_connection(stream, peer, shared.clone()));
            }
            Some(tls) => {
                conns.spawn(serve_tls_connection(stream, peer, shared.clone(), tls));
            }
        }
    }
    shared.shutdown.send_replace(true);
    let drain = async { while conns.join_next().await.is_some() {} };
    if tokio::time::timeout(SHUTDOWN_GRACE, drain).await.is_err() {
        conns.abort_all();
    }
    Ok(())
}

/// The TLS handshake, then the same HTTP pipeline as a plain connection.
/// A refused handshake (no client certificate under `verify_incoming`, a
/// client that does not trust the server, not TLS at all) is counted and
/// logged at debug: it is the client's problem, and Consul logs it so too.
async fn serve_tls_connection(
    stream: TcpStream,
    peer: SocketAddr,
    shared: Arc<Shared>,
    tls: TlsServer,
) {
    let handshake = tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, tls.acceptor.accept(stream)).await;
    match handshake {
        Ok(Ok(stream)) => {
            shared.tls_handshakes.fetch_add(1, Ordering::Relaxed);
            serve_connection(stream, peer, shared).await;
        }
        Ok(Err(e)) => {
            shared.tls_handshakes_failed.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(%peer, error = %e, "TLS handshake refused");
        }
        Err(_) => {
            shared.tls_handshakes_failed.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(%peer, "TLS handshake timed out");
        }
    }
}

async fn serve_connection<I>(stream: I, peer: SocketAddr, shared: Arc<Shared>)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let mut stop = shared.shutdown.subscribe();
    let svc_shared = shared.clone();
    let service = service_fn(move |req| {
        let shared = svc_shared.clone();
        async move { Ok::<_, Infallible>(handle(shared, req).await) }
    });
    let conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .serve_connection(TokioIo::new(stream), service);
    tokio::pin!(conn);
    let stopping = async {
        // Also fires if the sender is gone: the server is shutting down.
        while !*stop.borrow_and_update() {
            if stop.changed().await.is_err() {
                break;
            }
        }
    };
    tokio::select! {
        res = conn.as_mut() => {
            if let Err(e) = res {
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
        }
        () = stopping => {
            conn.as_mut().graceful_shutdown();
            let _ = conn.await;
        }
    }
}

async fn handle(shared: Arc<Shared>, req: Request<Incoming>) -> Resp {
    let method = req.method().clone();
    let Some(path) = router::percent_decode(req.uri().path(), false) else {
        shared.count(&method, Route::NotFound.template());
        return text(400, "Bad Request: invalid URL escape");
    };
    let route = router::route(&path);
    shared.count(&method, route.template());
    if route.is_control() {
        return control(&shared, &route, req).await;
    }
    let leaderless = shared.faults.leaderless();
    if leaderless {
        match without_leader(&route, &method, req.uri().query()) {
            Leaderless::Refuse => {
                shared.faults.note_leaderless_refusal();
                return error_resp(&ApiError::NoLeader);
            }
            Leaderless::NoLeaderAddress => return json_resp(200, &json!(""), false),
            Leaderless::Serve => {}
        }
    }
    let decision = shared.faults.decide(method.as_str(), &path);
    if !decision.delay.is_zero() {
        tokio::time::sleep(decision.delay).await;
    }
    if let Some(a) = decision.fail_before {
        return error_resp(&fault_error(a));
    }
    let mut resp = match endpoint(&shared, route, req).await {
        Ok(r) => r,
        Err(e) => error_resp(&e),
    };
    if leaderless && resp.headers().contains_key("X-Consul-KnownLeader") {
        // A stale read answered by a server that knows of no leader.
        set_header(&mut resp, "X-Consul-KnownLeader", "false");
    }
    if let Some(a) = decision.fail_after {
        resp = error_resp(&fault_error(a));
    }
    let policy = if shared.acl.enabled() {
        shared.acl.default_policy().as_str()
    } else {
        "allow"
    };
    set_header(&mut resp, "X-Consul-Default-ACL-Policy", policy);
    resp
}

/// What a request meets while the cluster has no leader.
#[derive(Debug, PartialEq, Eq)]
enum Leaderless {
    /// `500 No cluster leader`, nothing applied.
    Refuse,
    /// `/v1/status/leader`: `""`, as Consul answers without a leader.
    NoLeaderAddress,
    /// Answered as usual (from the local state).
    Serve,
}

/// Consul without a Raft leader: writes go through Raft and reads of the
/// default and `consistent` modes are forwarded to (or verified by) the
/// leader, so both fail; a `stale` read is answered by any server; the
/// status, agent and datacenter endpoints need no leader. A read-only
/// transaction is refused too, `stale` or not (the sandbox does not look
/// into the body to tell it from a write).
fn without_leader(route: &Route, method: &Method, query: Option<&str>) -> Leaderless {
    match route {
        Route::StatusLeader => Leaderless::NoLeaderAddress,
        Route::StatusPeers | Route::Datacenters | Route::AgentSelf | Route::NotFound => {
            Leaderless::Serve
        }
        Route::Register | Route::Deregister | Route::Txn => Leaderless::Refuse,
        Route::Acl(_) | Route::Tenancy { .. } if *method != Method::GET => Leaderless::Refuse,
        _ if *method == Method::GET => {
            let stale = Query::parse(query).is_ok_and(|q| q.has("stale"));
            if stale {
                Leaderless::Serve
            } else {
                Leaderless::Refuse
            }
        }
        // Wrong methods and OPTIONS are answered without any RPC.
        _ => Leaderless::Serve,
    }
}

async fn endpoint(shared: &Shared, route: Route, req: Request<Incoming>) -> Result<Resp, ApiError> {
    if route == Route::NotFound {
        return Err(ApiError::NotFound);
    }
    if req.method() == Method::OPTIONS {
        let mut r = text(200, "");
        let allow = format!("OPTIONS,{}", route.allowed().join(","));
        set_header(&mut r, "Allow", &allow);
        return Ok(r);
    }
    if matches!(route, Route::Tenancy { .. }) && !shared.config.enterprise {
        // Consul CE has no such endpoints.
        return Err(ApiError::NotFound);
    }
    if !matches!(route, Route::Acl(_) | Route::Tenancy { .. }) {
        ensure_method(&route, req.method())?;
    }
    // Go's url.ParseQuery failing makes Consul answer a bare 500.
    let q = Query::parse(req.uri().query()).map_err(|()| ApiError::Rpc(String::new()))?;
    let pretty = q.has("pretty");
    let dc = shared.config.datacenter.clone();

    match route {
        Route::StatusLeader => {
            return Ok(json_resp(
                200,
                &json!(format!("127.0.0.1:{SERVER_RPC_PORT}")),
                pretty,
            ));
        }
        Route::StatusPeers => {
            return Ok(json_resp(
                200,
                &json!([format!("127.0.0.1:{SERVER_RPC_PORT}")]),
                pretty,
            ));
        }
        Route::Datacenters => return Ok(json_resp(200, &json!([dc]), pretty)),
        _ => {}
    }

    let secret = token(&req, &q);
    if let Route::Acl(rest) = &route
        && rest == "login"
    {
        // A login carries no ACL token (Consul ignores one sent anyway).
        if req.method() != Method::POST {
            return Err(ApiError::MethodNotAllowed {
                method: req.method().to_string(),
                allow: "OPTIONS,POST",
            });
        }
        let partition = acl_partition(shared, &q)?;
        let b = body(shared, req).await?;
        let login = crate::acl_auth::login_request(&b)?;
        let config =
            crate::acl_auth::method_for_login(&shared.acl, &partition, &login.auth_method)?;
        // The review goes over the network, so no ACL lock is held.
        let identity = crate::acl_auth::review_login(&config, &login.bearer_token).await?;
        let out = crate::acl_auth::finish_login(
            &shared.acl,
            &partition,
            &login,
            &identity,
            &dc,
            &mut || shared.acl_apply(),
        )?;
        return Ok(json_resp(200, &out, pretty));
    }
    if let Route::Acl(rest) = &route {
        // `token/self` and `logout` answer for an unknown secret themselves.
        let authz = match shared.acl.resolve(secret.as_deref()) {
            Ok(a) => a,
            Err(_) if rest == "token/self" || rest == "logout" => Authz::Disabled,
            Err(e) => return Err(e.into()),
        };
        let partition = acl_partition(shared, &q)?;
        let method = req.method().to_string();
        let b = if method == "GET" {
            Bytes::new()
        } else {
            body(shared, req).await?
        };
        let acl_req = AclRequest {
            method: &method,
            rest,
            body: &b,
            secret: secret.as_deref(),
            authmethod: q.get("authmethod"),
            partition: &partition,
        };
        let out =
            crate::acl_http::handle(&shared.acl, &authz, &acl_req, &mut || shared.acl_apply())?;
        return Ok(json_resp(200, &out, pretty));
    }
    let authz = shared.acl.resolve(secret.as_deref())?;
    match route {
        Route::Tenancy {
            partition,
            list,
            name,
        } => {
            let method = req.method().to_string();
            let b = if method == "PUT" {
                body(shared, req).await?
            } else {
                Bytes::new()
            };
            let treq = TenancyRequest {
                method: &method,
                partition,
                list,
                name: name.as_deref(),
                partition_param: q.get("partition").unwrap_or_default(),
                body: &b,
            };
            let out =
                shared.write_then_notify(|st| tenancy::handle(st, &shared.acl, &authz, &treq))?;
            if out.is_null() {
                // A delete answers with an empty body.
                return Ok(text(200, ""));
            }
            Ok(json_resp(200, &out, pretty))
        }
        Route::Register => {
            let scope = check_scope(shared, &q)?;
            let b = body(shared, req).await?;
            let r = decode::register(&b)
                .map_err(|e| ApiError::BadRequest(format!("Request decode failed: {e}")))?;
            shared.write_then_notify(|st| catalog::register(st, r, &authz, &dc, &scope))?;
            Ok(json_resp(200, &json!(true), pretty))
        }
        Route::Deregister => {
            let scope = check_scope(shared, &q)?;
            let b = body(shared, req).await?;
            let r = decode::deregister(&b)
                .map_err(|e| ApiError::BadRequest(format!("Request decode failed: {e}")))?;
            shared.write_then_notify(|st| catalog::deregister(st, r, &authz, &dc, &scope))?;
            Ok(json_resp(200, &json!(true), pretty))
        }
        Route::Txn => {
            // Consul reads only `dc` and the token from a transaction's
            // query: each op names its namespace and partition in its own
            // body (`default` when it names none), and `?ns=` or
            // `?partition=` are ignored, even by Consul CE.
            check_scope(shared, &q.without(&["ns", "partition"]))?;
            let scope = Scope {
                enterprise: shared.config.enterprise,
                ..Scope::ce()
            };
            let max = shared.config.max_body_bytes;
            let b = body(shared, req).await.map_err(|e| match e {
                ApiError::TooLarge(_) => {
                    ApiError::TooLarge(format!("Request body too large, max size: {max} bytes"))
                }
                other => other,
            })?;
            let ops = decode::txn(&b)
                .map_err(|e| ApiError::BadRequest(format!("Failed to parse body: {e}")))?;
            let limit = shared.config.max_txn_ops;
            if ops.len() > limit {
                return Err(ApiError::TooLarge(format!(
                    "Transaction contains too many operations ({} > {limit})",
                    ops.len()
                )));
            }
            let outcome = shared.write_then_notify(|st| txn::run(st, ops, &authz, &dc, &scope));
            let mut resp = json_resp(outcome.status, &outcome.body, pretty);
            if !outcome.raft_applied {
                // Read-only (or refused) transactions carry read metadata.
                set_header(&mut resp, "X-Consul-KnownLeader", "true");
                set_header(&mut resp, "X-Consul-LastContact", "0");
            }
            Ok(resp)
        }
        Route::Services => {
            let scope = check_scope(shared, &q)?;
            let (part, ns) = read_ns(shared, &scope, true)?;
            let f = list_filter(&q, false)?;
            let key = WatchKey::Services {
                node_meta: !f.node_meta.is_empty(),
                ns: match &ns {
                    NsSel::One(n) => Some(crate::store::ns_key(&part, n)),
                    NsSel::All => None,
                },
            };
            let r = read_blocking(shared, &q, key, |st| {
                st.read_services(&part, &ns, &f, &authz)
            })
            .await?;
            Ok(read_response(r, &q))
        }
        Route::Nodes => {
            let scope = check_scope(shared, &q)?;
            // Nodes live in a partition, not a namespace.
            let (part, _) = read_ns(shared, &scope, true)?;
            let f = list_filter(&q, false)?;
            let r = read_blocking(shared, &q, WatchKey::Nodes(part.clone()), |st| {
                st.read_nodes(&part, &f, &authz)
            })
            .await?;
            Ok(read_response(r, &q))
        }
        Route::ServiceNodes(name) | Route::HealthService(name) if name.is_empty() => {
            Err(ApiError::BadRequest("Missing service name".into()))
        }
        Route::NodeServices(name) | Route::Node(name) | Route::HealthNode(name)
            if name.is_empty() =>
        {
            Err(ApiError::BadRequest("Missing node name".into()))
        }
        Route::ServiceNodes(name) => {
            let scope = check_scope(shared, &q)?;
            let (part, ns) = read_one_ns(shared, &scope)?;
            let f = list_filter(&q, false)?;
            let key = WatchKey::Service(crate::store::svc_key_in(&part, &ns, &name));
            let r = read_blocking(shared, &q, key, |st| {
                st.read_service_nodes(&part, &ns, &name, &f, &authz)
            })
            .await?;
            Ok(read_response(r, &q))
        }
        Route::HealthService(name) => {
            let scope = check_scope(shared, &q)?;
            let (part, ns) = read_one_ns(shared, &scope)?;
            let f = list_filter(&q, true)?;
            let key = WatchKey::Service(crate::store::svc_key_in(&part, &ns, &name));
            let r = read_blocking(shared, &q, key, |st| {
                st.read_health_service(&part, &ns, &name, &f, &authz)
            })
            .await?;
            Ok(read_response(r, &q))
        }
        Route::NodeServices(name) => {
            let scope = check_scope(shared, &q)?;
            let (part, ns) = read_ns(shared, &scope, true)?;
            let key = WatchKey::Node(crate::store::node_key(&part, &name));
            if q.has("pretty") {
                let r = read_blocking(shared, &q, key, |st| {
                    st.read_node_services(&part, &ns, &name, &authz)
                })
                .await?;
                return Ok(read_response(r, &q));
            }
            // Every instance of the node: serialized straight from the
            // records (see `model::direct`).
            let r = read_blocking(shared, &q, key, |st| {
                st.read_node_services_json(&part, &ns, &name, &authz)
            })
            .await?;
            Ok(json_read_response(r, &q))
        }
        Route::HealthNode(name) => {
            let scope = check_scope(shared, &q)?;
            let (part, ns) = read_ns(shared, &scope, true)?;
            // Every check on the node lives under the node's index, so a
            // blocked reader waits on the node alone.
            let key = WatchKey::Node(crate::store::node_key(&part, &name));
            if q.has("pretty") {
                let r = read_blocking(shared, &q, key, |st| {
                    st.read_health_node(&part, &ns, &name, &authz)
                })
                .await?;
                return Ok(read_response(r, &q));
            }
            let r = read_blocking(shared, &q, key, |st| {
                st.read_health_node_json(&part, &ns, &name, &authz)
            })
            .await?;
            Ok(json_read_response(r, &q))
        }
        Route::HealthState(state) => {
            let scope = check_scope(shared, &q)?;
            let (part, ns) = read_ns(shared, &scope, true)?;
            if state.is_empty() {
                return Err(ApiError::BadRequest("Missing check state".into()));
            }
            if !matches!(state.as_str(), "any" | "passing" | "warning" | "critical") {
                // The state store refuses it; Consul's RPC error is a 500.
                return Err(ApiError::Rpc("Invalid check state".into()));
            }
            let meta = q.node_meta();
            let r = read_blocking(shared, &q, WatchKey::Checks, |st| {
                st.read_health_state(&part, &ns, &state, &meta, &authz)
            })
            .await?;
            Ok(read_response(r, &q))
        }
        Route::HealthChecks(name) => {
            let scope = check_scope(shared, &q)?;
            let (part, ns) = read_one_ns(shared, &scope)?;
            if name.is_empty() {
                return Err(ApiError::BadRequest("Missing service name".into()));
            }
            let meta = q.node_meta();
            let key = WatchKey::Service(crate::store::svc_key_in(&part, &ns, &name));
            let r = read_blocking(shared, &q, key, |st| {
                st.read_health_checks(&part, &ns, &name, &meta, &authz)
            })
            .await?;
            Ok(read_response(r, &q))
        }
        Route::Node(name) => {
            let scope = check_scope(shared, &q)?;
            let (part, ns) = read_ns(shared, &scope, true)?;
            let key = WatchKey::Node(crate::store::node_key(&part, &name));
            let r = read_blocking(shared, &q, key, |st| {
                st.read_node(&part, &ns, &name, &authz)
            })
            .await?;
            Ok(read_response(r, &q))
        }
        Route::AgentSelf => {
            // Consul requires agent:read on the agent's node; the sandbox
            // models that as node:read on the agent node's name.
            authz.require(AclResource::Node, &shared.config.node_name, AclAccess::Read)?;
            Ok(json_resp(200, &agent_self(shared), pretty))
        }
        _ => Err(ApiError::NotFound),
    }
}
