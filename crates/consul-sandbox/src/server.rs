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
use crate::store::{ChangeSet, ListFilter, NsSel, ReadResult, Store, WatchKey};
use crate::tenancy::{self, Scope, TenancyRequest};
use crate::tls::TlsServer;
use crate::txn;
use crate::{Config, Stats};

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

/// Above this many per-key channels, a notification also drops channels
/// nobody waits on any more, so keys watched once do not pile up.
const WATCHERS_SWEEP_THRESHOLD: usize = 4096;

/// Per-key wake-up channels for blocked readers.
struct Watchers {
    keys: Mutex<HashMap<WatchKey, watch::Sender<()>>>,
    broad: watch::Sender<()>,
}

impl Default for Watchers {
    fn default() -> Self {
        Watchers {
            keys: Mutex::new(HashMap::new()),
            broad: watch::channel(()).0,
        }
    }
}

impl Watchers {
    /// A receiver that fires when `key`'s index may have moved. Must be
    /// called while holding the store's read lock, so that any commit not
    /// yet visible in the store is signalled after this subscription.
    fn subscribe(&self, key: &WatchKey, store: &Store) -> watch::Receiver<()> {
        if !store.has_own_index(key) {
            return self.broad.subscribe();
        }
        let mut keys = self.keys.lock().unwrap_or_else(|p| p.into_inner());
        keys.entry(key.folded())
            .or_insert_with(|| watch::channel(()).0)
            .subscribe()
    }

    fn notify(&self, changes: &ChangeSet) {
        if changes.is_empty() {
            return;
        }
        self.broad.send_replace(());
        let mut keys = self.keys.lock().unwrap_or_else(|p| p.into_inner());
        for key in changes.keys() {
            if let Some(tx) = keys.get(&key) {
                if tx.receiver_count() == 0 {
                    keys.remove(&key);
                } else {
                    tx.send_replace(());
                }
            }
        }
        if keys.len() > WATCHERS_SWEEP_THRESHOLD {
            keys.retain(|_, tx| tx.receiver_count() > 0);
        }
    }
}

/// Registers the sandbox's own agent node, its `consul` service and its
/// `serfHealth` check, as a Consul server does when it starts. This is Raft
/// entry 1 and is not counted as an API Raft apply.
fn bootstrap(store: &mut Store, config: &Config, node_id: &str) {
    let lan = "127.0.0.1".to_string();
    let tenancy = config
        .enterprise
        .then(|| crate::model::DEFAULT_TENANCY.to_string());
    let tagged = ["lan", "lan_ipv4", "wan", "wan_ipv4"]
        .iter()
        .map(|k| (k.to_string(), lan.clone()));
    let (result, _) = store.apply(false, |tx| {
        tx.ensure_node(NodeRec {
            id: node_id.to_string(),
            name: config.node_name.clone(),
            address: lan.clone(),
            datacenter: config.datacenter.clone(),
            tagged_addresses: Some(tagged.collect()),
            meta: Some(
                [
                    ("consul-network-segment", ""),
                    ("consul-version", CONSUL_VERSION),
                ]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ),
            partition: tenancy.clone(),
            create_index: 0,
            modify_index: 0,
        });
        tx.ensure_service(ServiceRec {
            node: config.node_name.clone(),
            kind: String::new(),
            id: "consul".into(),
            name: "consul".into(),
            tags: Some(Vec::new()),
            address: String::new(),
            tagged_addresses: Default::default(),
            meta: Some(Default::default()),
            port: i64::from(SERVER_RPC_PORT),
            ports: Vec::new(),
            weights: Weights::DEFAULT,
            enable_tag_override: false,
            ns: tenancy.clone(),
            partition: tenancy.clone(),
            create_index: 0,
            modify_index: 0,
        })?;
        tx.ensure_check(CheckRec {
            node: config.node_name.clone(),
            check_id: "serfHealth".into(),
            name: "Serf Health Status".into(),
            status: "passing".into(),
            notes: String::new(),
            output: "Agent alive and reachable".into(),
            service_id: String::new(),
            service_name: String::new(),
            service_tags: None,
            check_type: String::new(),
            definition: json!({}),
            ns: tenancy.clone(),
            partition: tenancy.clone(),
            create_index: 0,
            modify_index: 0,
        })
    });
    if let Err(e) = result {
        tracing::warn!(error = %e, "could not register the sandbox's own agent node");
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

type Resp = Response<Full<Bytes>>;

fn text(status: u16, body: impl Into<String>) -> Resp {
    let mut r = Response::new(Full::new(Bytes::from(body.into())));
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

fn json_resp(status: u16, body: &Value, pretty: bool) -> Resp {
    let bytes = if pretty {
        let mut b = serde_json::to_vec_pretty(body).unwrap_or_default();
        b.push(b'\n');
        b
    } else {
        serde_json::to_vec(body).unwrap_or_default()
    };
    let mut r = Response::new(Full::new(Bytes::from(bytes)));
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

fn error_resp(e: &ApiError) -> Resp {
    let mut r = text(e.status(), e.to_string());
    if let ApiError::MethodNotAllowed { allow, .. } = e
        && let Ok(v) = HeaderValue::from_str(allow)
    {
        r.headers_mut().insert(header::ALLOW, v);
    }
    r
}

fn fault_error(a: FaultAction) -> ApiError {
    match a {
        FaultAction::NoLeader => ApiError::NoLeader,
        FaultAction::Error { status, body } => ApiError::Injected { status, body },
        // Latency never ends a request.
        FaultAction::Latency(_) => ApiError::Injected {
            status: 500,
            body: String::new(),
        },
    }
}

fn set_header(r: &mut Resp, name: &'static str, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        r.headers_mut().insert(name, v);
    }
}

/// The headers Consul adds to every read: the index (never 0, since a 0
/// would make clients busy-loop), leadership and staleness.
fn read_headers(r: &mut Resp, index: u64, filtered: bool, consistency: &str) {
    set_header(r, "X-Consul-Index", &index.max(1).to_string());
    set_header(r, "X-Consul-KnownLeader", "true");
    set_header(r, "X-Consul-LastContact", "0");
    set_header(r, "X-Consul-Effective-Consistency", consistency);
    if filtered {
        set_header(r, "X-Consul-Results-Filtered-By-ACLs", "true");
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

/// Reads the body, enforcing the size limit first from `Content-Length`
/// and then while reading (for chunked bodies).
async fn body(shared: &Shared, req: Request<Incoming>) -> Result<Bytes, ApiError> {
    let max = shared.config.max_body_bytes;
    let too_large = || ApiError::TooLarge(format!("Request body too large, max size: {max} bytes"));
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return Err(too_large());
    }
    match Limited::new(req.into_body(), max).collect().await {
        Ok(c) => Ok(c.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(too_large()),
        Err(e) => Err(ApiError::BadRequest(format!("Request decode failed: {e}"))),
    }
}

/// The request's token, in Consul's order of precedence: `?token=`, then
/// `X-Consul-Token`, then `Authorization: Bearer` (each only when not
/// empty).
fn token(req: &Request<Incoming>, q: &Query) -> Option<String> {
    if let Some(t) = q.get("token").filter(|t| !t.is_empty()) {
        return Some(t.to_string());
    }
    if let Some(t) = req
        .headers()
        .get("X-Consul-Token")
        .and_then(|v| v.to_str().ok())
        && !t.is_empty()
    {
        return Some(t.to_string());
    }
    let auth = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())?;
    let mut parts = auth.trim().splitn(2, ' ');
    match (parts.next(), parts.next()) {
        (Some(scheme), Some(value)) if scheme.eq_ignore_ascii_case("bearer") => {
            Some(value.trim().to_string()).filter(|v| !v.is_empty())
        }
        _ => None,
    }
}

/// The consistency mode a read asked for, as Consul reports it in
/// `X-Consul-Effective-Consistency`, or Consul's 400 for conflicting modes
/// (`agent/http.go`, `parseConsistency`).
fn consistency(q: &Query) -> Result<&'static str, ApiError> {
    let stale = q.has("stale");
    let consistent = q.has("consistent");
    if stale && consistent {
        return Err(ApiError::BadRequest(
            "Cannot specify ?stale with ?consistent, conflicting semantics.".into(),
        ));
    }
    if consistent && q.has("cached") {
        return Err(ApiError::BadRequest(
            "Cannot specify ?cached with ?consistent, conflicting semantics.".into(),
        ));
    }
    Ok(if consistent {
        "consistent"
    } else if stale {
        "stale"
    } else {
        "leader"
    })
}

/// Checks `dc`, `ns`, `partition` and `filter`, and returns the namespace
/// and partition asked for. The sandbox is one datacenter. Without
/// Enterprise features `default` is accepted for `ns` and `partition` (as
/// Consul Enterprise does) and any other value answers like Consul CE;
/// with them, the values are checked where they are used. The `filter`
/// expression language is not implemented.
fn check_scope(shared: &Shared, q: &Query) -> Result<Scope, ApiError> {
    if let Some(dc) = q.get("dc")
        && !dc.is_empty()
        && dc != shared.config.datacenter
    {
        return Err(ApiError::Rpc("No path to datacenter".into()));
    }
    for (param, feature) in [("ns", "Namespaces"), ("partition", "Partitions")] {
        if shared.config.enterprise {
            break;
        }
        if let Some(v) = q.get(param)
            && !v.is_empty()
            && !v.eq_ignore_ascii_case("default")
        {
            return Err(ApiError::BadRequest(format!(
                "Invalid query parameter: \"{param}\" - {feature} are a Consul Enterprise feature"
            )));
        }
    }
    if q.get("filter").is_some_and(|f| !f.is_empty()) {
        return Err(ApiError::BadRequest(
            "Invalid query parameter: \"filter\" - filter expressions are not supported by consul-sandbox"
                .into(),
        ));
    }
    if !shared.config.enterprise {
        return Ok(Scope::ce());
    }
    Ok(Scope {
        enterprise: true,
        ns: q.get("ns").unwrap_or_default().to_string(),
        partition: q.get("partition").unwrap_or_default().to_string(),
    })
}

/// The admin partition an ACL request addresses: `?partition=` (which must
/// exist, as for catalog data), else `default`. Without Enterprise
/// features a partition other than `default` is refused as Consul CE does.
fn acl_partition(shared: &Shared, q: &Query) -> Result<String, ApiError> {
    let named = q.get("partition").unwrap_or_default();
    let default = crate::model::DEFAULT_TENANCY.to_string();
    if !shared.config.enterprise {
        if named.is_empty() || named.eq_ignore_ascii_case(&default) {
            return Ok(default);
        }
        return Err(ApiError::BadRequest(
            "Invalid query parameter: \"partition\" - Partitions are a Consul Enterprise feature"
                .into(),
        ));
    }
    let scope = Scope {
        enterprise: true,
        ns: String::new(),
        partition: named.to_string(),
    };
    Ok(scope
        .data_partition(&shared.read(), &[])?
        .unwrap_or(default))
}

/// The partition and namespaces a catalog or health read covers. `ns=*`
/// (every namespace of the partition) is accepted where `wildcard`; an
/// unknown namespace reads as empty, as Consul's state store finds nothing
/// there; an unknown partition is refused as on writes.
fn read_ns(shared: &Shared, scope: &Scope, wildcard: bool) -> Result<(String, NsSel), ApiError> {
    let default = crate::model::DEFAULT_TENANCY.to_string();
    if !scope.enterprise {
        return Ok((default, NsSel::default_ns()));
    }
    let partition = scope
        .data_partition(&shared.read(), &[])?
        .unwrap_or(default);
    let ns = match scope.ns.as_str() {
        "" => NsSel::default_ns(),
        "*" if wildcard => NsSel::All,
        n if tenancy::valid_name(n) => NsSel::One(n.to_string()),
        n => return Err(tenancy::invalid_name(false, n)),
    };
    Ok((partition, ns))
}

/// `read_ns` for endpoints about one service name: the partition and one
/// namespace's name.
fn read_one_ns(shared: &Shared, scope: &Scope) -> Result<(String, String), ApiError> {
    match read_ns(shared, scope, false)? {
        (p, NsSel::One(n)) => Ok((p, n)),
        (p, NsSel::All) => Ok((p, crate::model::DEFAULT_TENANCY.to_string())),
    }
}

fn list_filter(q: &Query, with_passing: bool) -> Result<ListFilter, ApiError> {
    let passing = if with_passing && q.has("passing") {
        match q.get("passing").unwrap_or_default() {
            "" => true,
            v => parse_go_bool(v)
                .ok_or_else(|| ApiError::BadRequest("Invalid value for ?passing".into()))?,
        }
    } else {
        false
    };
    Ok(ListFilter {
        tags: if q.has("tag") {
            Some(q.all("tag"))
        } else {
            None
        },
        node_meta: q.node_meta(),
        passing,
    })
}

/// Go's `strconv.ParseBool`.
fn parse_go_bool(v: &str) -> Option<bool> {
    match v {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// Releases the blocking-query gauge even if the client goes away and the
/// request future is dropped mid-wait.
struct OpenGuard<'a>(&'a AtomicU64);

impl Drop for OpenGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Runs a read, blocking first when the client sent `?index=`.
async fn read_blocking(
    shared: &Shared,
    q: &Query,
    key: WatchKey,
    read: impl Fn(&Store) -> ReadResult,
) -> Result<ReadResult, ApiError> {
    consistency(q)?;
    let wait = match q.get("wait").filter(|w| !w.is_empty()) {
        None => None,
        Some(w) => Some(
            router::parse_go_duration(w)
                .ok_or_else(|| ApiError::BadRequest("Invalid wait time".into()))?,
        ),
    };
    let min_index = match q.get("index").filter(|i| !i.is_empty()) {
        None => 0,
        Some(i) => i
            .parse::<u64>()
            .map_err(|_| ApiError::BadRequest("Invalid index".into()))?,
    };
    if min_index == 0 {
        return Ok(read(&shared.read()));
    }
    let base = router::effective_wait(wait);
    let max_jitter = (base / JITTER_FRACTION).as_nanos() as u64;
    let jitter = if max_jitter == 0 {
        0
    } else {
        rand::rng().random_range(0..max_jitter)
    };
    let deadline = Instant::now() + base + Duration::from_nanos(jitter);

    shared.blocking_total.fetch_add(1, Ordering::Relaxed);
    shared.blocking_open.fetch_add(1, Ordering::Relaxed);
    let _open = OpenGuard(&shared.blocking_open);
    let mut stop = shared.shutdown.subscribe();
    loop {
        if *stop.borrow_and_update() {
            break;
        }
        let mut wake = {
            let st = shared.read();
            if st.index_for(&key) > min_index {
                return Ok(read(&st));
            }
            // Subscribed under the read lock: a commit we did not see yet
            // will signal this receiver after it releases the write lock.
            shared.watchers.subscribe(&key, &st)
        };
        tokio::select! {
            changed = wake.changed() => {
                if changed.is_err() {
                    break;
                }
                shared.blocking_wakeups.fetch_add(1, Ordering::Relaxed);
            }
            () = tokio::time::sleep_until(deadline) => break,
            _ = stop.changed() => break,
        }
    }
    Ok(read(&shared.read()))
}

fn ensure_method(route: &Route, method: &Method) -> Result<(), ApiError> {
    let allowed = route.allowed();
    if allowed.contains(&method.as_str()) {
        return Ok(());
    }
    Err(ApiError::MethodNotAllowed {
        method: method.to_string(),
        allow: match allowed {
            ["PUT"] => "OPTIONS,PUT",
            ["POST", "DELETE"] => "POST,DELETE",
            _ => "OPTIONS,GET",
        },
    })
}

fn read_response(r: ReadResult, q: &Query) -> Resp {
    let mut resp = json_resp(200, &r.body, q.has("pretty"));
    read_headers(
        &mut resp,
        r.index,
        r.filtered,
        consistency(q).unwrap_or("leader"),
    );
    resp
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
            let r = read_blocking(shared, &q, key, |st| {
                st.read_node_services(&part, &ns, &name, &authz)
            })
            .await?;
            Ok(read_response(r, &q))
        }
        Route::HealthNode(name) => {
            let scope = check_scope(shared, &q)?;
            let (part, ns) = read_ns(shared, &scope, true)?;
            // Every check on the node lives under the node's index, so a
            // blocked reader waits on the node alone.
            let key = WatchKey::Node(crate::store::node_key(&part, &name));
            let r = read_blocking(shared, &q, key, |st| {
                st.read_health_node(&part, &ns, &name, &authz)
            })
            .await?;
            Ok(read_response(r, &q))
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

fn agent_self(shared: &Shared) -> Value {
    let c = &shared.config;
    json!({
        "Config": {
            "Datacenter": c.datacenter,
            "PrimaryDatacenter": c.datacenter,
            "NodeName": c.node_name,
            "NodeID": shared.node_id,
            "Server": true,
            "Revision": "consul-sandbox",
            "Version": CONSUL_VERSION,
            "BuildDate": "",
        },
        "DebugConfig": {},
        "Coord": null,
        "Member": {
            "Name": c.node_name,
            "Addr": "127.0.0.1",
            "Port": SERF_LAN_PORT,
            "Tags": {
                "dc": c.datacenter,
                "id": shared.node_id,
                "role": "consul",
                "port": SERVER_RPC_PORT.to_string(),
                "build": CONSUL_VERSION,
                "vsn": "2",
            },
            "Status": 1,
            "ProtocolMin": 1,
            "ProtocolMax": 5,
            "ProtocolCur": 2,
            "DelegateMin": 2,
            "DelegateMax": 5,
            "DelegateCur": 4,
        },
        "Stats": agent_stats(shared),
        "Meta": { "consul-network-segment": "" },
        "xDS": null,
    })
}

/// `Stats` of `/v1/agent/self`, with the sections a Consul server fills
/// (`consul`, `raft`, `serf_lan`, `runtime`). Consul renders every value as
/// a string; the sandbox is always its own single-server leader.
fn agent_stats(shared: &Shared) -> Value {
    let leader = !shared.faults.leaderless();
    let raft_index = shared.read().raft_index();
    let leader_addr = if leader {
        format!("127.0.0.1:{SERVER_RPC_PORT}")
    } else {
        String::new()
    };
    json!({
        "agent": {
            "check_monitors": "0",
            "check_ttls": "0",
            "checks": "0",
            "services": "0",
        },
        "build": {
            "prerelease": "",
            "revision": "consul-sandbox",
            "version": CONSUL_VERSION,
            "version_metadata": "",
        },
        "consul": {
            "acl": if shared.acl.enabled() { "enabled" } else { "disabled" },
            "bootstrap": "false",
            "known_datacenters": "1",
            "leader": leader.to_string(),
            "leader_addr": leader_addr,
            "server": "true",
        },
        "raft": {
            "applied_index": raft_index.to_string(),
            "commit_index": raft_index.to_string(),
            "fsm_pending": "0",
            "last_log_index": raft_index.to_string(),
            "last_log_term": "2",
            "last_snapshot_index": "0",
            "last_snapshot_term": "0",
            "latest_configuration": format!(
                "[{{Suffrage:Voter ID:{} Address:127.0.0.1:{SERVER_RPC_PORT}}}]",
                shared.node_id
            ),
            "num_peers": "0",
            "protocol_version": "3",
            "protocol_version_max": "3",
            "protocol_version_min": "0",
            "snapshot_version_max": "1",
            "snapshot_version_min": "0",
            "state": if leader { "Leader" } else { "Follower" },
            "term": "2",
        },
        "serf_lan": {
            "coordinate_resets": "0",
            "encrypted": "false",
            "event_queue": "0",
            "event_time": "2",
            "failed": "0",
            "health_score": "0",
            "intent_queue": "0",
            "left": "0",
            "member_time": "1",
            "members": "1",
            "query_queue": "0",
            "query_time": "1",
        },
        "runtime": {
            "arch": std::env::consts::ARCH,
            "cpu_count": std::thread::available_parallelism()
                .map_or(1, std::num::NonZero::get)
                .to_string(),
            "goroutines": "0",
            "max_procs": std::thread::available_parallelism()
                .map_or(1, std::num::NonZero::get)
                .to_string(),
            "os": std::env::consts::OS,
            "version": "consul-sandbox",
        },
    })
}

/// The sandbox's own endpoints: stats and fault control.
async fn control(shared: &Shared, route: &Route, req: Request<Incoming>) -> Resp {
    let result: Result<Resp, ApiError> = async {
        match (route, req.method().clone()) {
            (Route::SandboxStats, Method::GET) => {
                let stats = serde_json::to_value(shared.stats()).unwrap_or(Value::Null);
                Ok(json_resp(200, &stats, false))
            }
            (Route::SandboxFaults, Method::POST) => {
                let b = body(shared, req).await?;
                match parse_request(&b).map_err(ApiError::BadRequest)? {
                    FaultRequest::Refuse(d) => {
                        shared.faults.refuse_connections_for(d);
                        Ok(json_resp(
                            200,
                            &json!({ "refusing_ms": d.as_millis() as u64 }),
                            false,
                        ))
                    }
                    FaultRequest::Leaderless(on) => {
                        shared.faults.set_leaderless(on);
                        Ok(json_resp(200, &json!({ "leaderless": on }), false))
                    }
                    FaultRequest::Rule(rule) => {
                        let id = shared.faults.add(rule);
                        Ok(json_resp(200, &json!({ "id": id }), false))
                    }
                }
            }
            (Route::SandboxFaults, Method::DELETE) => {
                shared.faults.clear();
                Ok(json_resp(200, &json!(true), false))
            }
            (r, m) => Err(ensure_method(r, &m).err().unwrap_or(ApiError::NotFound)),
        }
    }
    .await;
    match result {
        Ok(r) => r,
        Err(e) => error_resp(&e),
    }
}
