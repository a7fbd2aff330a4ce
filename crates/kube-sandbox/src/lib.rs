//! kube-sandbox: an in-process Kubernetes API server for mirra's tests,
//! benchmarks and `mirra dev`.
//!
//! It speaks the real Kubernetes HTTP API (discovery, CRUD, patches,
//! server-side apply, watches with bookmarks and 410 Gone, pagination,
//! selectors, status subresources, finalizers, namespace lifecycle) well
//! enough that kubectl, the official Python client and kube-rs work against
//! it unchanged. It counts every request by verb and resource
//! ([`Sandbox::stats`], `GET /sandbox/stats`) and injects faults
//! ([`Sandbox::inject`], `POST /sandbox/faults`).
//!
//! ```text
//! HTTP(S) request -> route (path -> resource) -> count
//!              -> authenticate, authorize (only with Config::auth) -> faults
//!              -> store (one lock: validate, write, revision, event)
//!              -> JSON / Table / watch stream (broadcast of events)
//!              -> protobuf for built-in kinds when the client asks for it
//! ```
//!
//! Authentication and the RBAC authorizer are off unless
//! [`Config::auth`] is given ([`auth`]); HTTPS is off unless [`Config::tls`]
//! is ([`tls`]). Without auth the review resources answer as on a server
//! with the AlwaysAllow authorizer (every caller the anonymous user); with
//! it, for the caller with the RBAC decisions. A TokenReview judges the
//! ServiceAccount tokens the sandbox's `serviceaccounts/token` issued.
//!
//! What it must not do: run controllers (no Deployment rollouts, no
//! EndpointSlice controller, no garbage collection by owner references),
//! or persist anything beyond `Config::state_file`. Those are out of
//! scope; tests create the objects controllers would.

// `ApiError` carries the whole `Status` (causes, details) the client sees;
// it is built only on the failure path, where its size costs nothing worth
// boxing for.
#![allow(clippy::result_large_err)]

pub mod auth;
mod builtin;
mod component_status;
mod convert;
mod decode_error;
mod discovery;
mod faults;
mod fields;
mod http;
mod json;
mod kinds;
mod protobuf;
mod quantity_table;
mod registry;
mod review;
mod route;
mod sa_token;
mod semantics;
mod state;
mod status;
mod store;
mod subresources;
mod table;
pub mod tls;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

pub use faults::{FaultError, FaultRule};
pub use state::Stats;
pub use status::ApiError;
pub use store::StoreConfig;

/// Sandbox configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// Store tuning (history window, broadcast capacity).
    pub store: StoreConfig,
    /// How often a watch with `allowWatchBookmarks` gets a BOOKMARK.
    pub bookmark_interval: Duration,
    /// Where the objects are saved when the server stops (a graceful stop:
    /// [`Sandbox::shutdown`], or the end of [`serve`]) and loaded from when
    /// it starts, so a restart keeps them, uids and resourceVersions
    /// included. The watch history is not kept: a watch resumed from before
    /// the restart gets 410 and its client lists again. `None`: memory only.
    pub state_file: Option<std::path::PathBuf>,
    /// Bearer-token authentication and the RBAC authorizer (see [`auth`]);
    /// `None`: every request is anonymous and allowed.
    pub auth: Option<auth::AuthConfig>,
    /// Speak HTTPS with this identity (see [`tls`]); `None`: plain HTTP.
    pub tls: Option<tls::ServerTls>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            store: StoreConfig::default(),
            // Real servers send bookmarks about once a minute; a shorter
            // interval lets tests observe them without waiting.
            bookmark_interval: Duration::from_secs(5),
            state_file: None,
            auth: None,
            tls: None,
        }
    }
}

/// Serves the API on a bound listener until `shutdown` resolves.
pub async fn serve(
    listener: tokio::net::TcpListener,
    config: Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let shared = Arc::new(state::Shared::new(config)?);
    serve_shared(listener, shared, shutdown).await
}

async fn serve_shared(
    listener: tokio::net::TcpListener,
    shared: Arc<state::Shared>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let closer = shared.clone();
    let saver = shared.clone();
    let tls = shared.config.tls.clone();
    let app = axum::Router::new().fallback(move |req: ::http::Request<axum::body::Body>| {
        let shared = shared.clone();
        async move { http::handle(shared, req).await }
    });
    let shutdown = async move {
        shutdown.await;
        // Open watches would hold graceful shutdown forever.
        closer.close_watches();
    };
    match tls {
        Some(tls) => {
            let listener = tls::TlsListener::new(listener, tls);
            axum::serve(listener, app)
                .with_graceful_shutdown(shutdown)
                .await?;
        }
        None => {
            axum::serve(listener, app)
                .with_graceful_shutdown(shutdown)
                .await?;
        }
    }
    saver.save_state().await
}

/// A running sandbox on a loopback port. Dropping it stops the server.
pub struct Sandbox {
    addr: SocketAddr,
    shared: Arc<state::Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl Sandbox {
    /// Starts a sandbox on `127.0.0.1:0`.
    pub async fn start(config: Config) -> std::io::Result<Sandbox> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        Self::start_on(listener, config)
    }

    /// Starts a sandbox on a bound listener.
    pub fn start_on(listener: tokio::net::TcpListener, config: Config) -> std::io::Result<Sandbox> {
        let addr = listener.local_addr()?;
        let shared = Arc::new(state::Shared::new(config)?);
        let (tx, rx) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(serve_shared(listener, shared.clone(), async move {
            let _ = rx.await;
        }));
        Ok(Sandbox {
            addr,
            shared,
            stop: Some(tx),
            task: Some(task),
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT` (`https://` with [`Config::tls`]).
    pub fn url(&self) -> String {
        let scheme = if self.shared.config.tls.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}", self.addr)
    }

    /// A kubeconfig document pointing at this sandbox (trusting its CA
    /// when it speaks HTTPS), without credentials.
    pub fn kubeconfig(&self) -> String {
        kubeconfig_for(
            &self.url(),
            None,
            self.shared.config.tls.as_ref().map(tls::ServerTls::ca_pem),
        )
    }

    /// Request counters so far.
    pub fn stats(&self) -> Stats {
        self.shared.stats()
    }

    /// Zeroes the request counters.
    pub fn reset_stats(&self) {
        self.shared.reset_stats()
    }

    /// Adds a fault rule.
    pub async fn inject(&self, rule: FaultRule) -> Result<(), FaultError> {
        self.shared.faults.lock().await.add(rule)
    }

    /// Removes every fault rule.
    pub async fn clear_faults(&self) {
        self.shared.faults.lock().await.clear()
    }

    /// Ends every open watch.
    pub fn close_watches(&self) {
        self.shared.close_watches()
    }

    /// Moves the clock ServiceAccount tokens are issued and reviewed by
    /// forward (tests of expiry; nothing else in the sandbox reads it).
    pub fn advance_token_clock(&self, by: std::time::Duration) {
        self.shared.advance_token_clock(by)
    }

    /// Drops the event history: resuming from an older revision gets 410.
    pub async fn compact(&self) {
        self.shared.store.lock().await.compact()
    }

    /// The current cluster revision.
    pub async fn revision(&self) -> u64 {
        self.shared.store.lock().await.revision()
    }

    /// Number of stored objects and the bytes of their serialized form.
    pub async fn size(&self) -> (usize, usize) {
        self.shared.store.lock().await.size()
    }

    /// Stops the server and starts it again on the same address, as an API
    /// server process restart: with a [`Config::state_file`] every object
    /// comes back; the watch history, open watches, counters and fault
    /// rules do not. Clients see their connections drop and their watches
    /// answered 410 when they resume.
    pub async fn restart(&mut self) -> std::io::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            task.await.map_err(std::io::Error::other)??;
        }
        let config = self.shared.config.clone();
        let listener = tokio::net::TcpListener::bind(self.addr).await?;
        *self = Sandbox::start_on(listener, config)?;
        Ok(())
    }

    /// Stops the server and waits for it.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// A kubeconfig with one cluster, user and context named `mirra-sandbox`.
pub fn kubeconfig(url: &str) -> String {
    kubeconfig_with_token(url, None)
}

/// The same, its user authenticating with `token` when given.
pub fn kubeconfig_with_token(url: &str, token: Option<&str>) -> String {
    kubeconfig_for(url, token, None)
}

/// The same, trusting the CA `ca_pem` when given (a sandbox speaking
/// HTTPS).
pub fn kubeconfig_for(url: &str, token: Option<&str>, ca_pem: Option<&str>) -> String {
    use base64::Engine;
    let user = match token {
        Some(t) => format!("\n    token: {t}"),
        None => " {}".to_string(),
    };
    let ca = ca_pem
        .map(|pem| {
            format!(
                "\n    certificate-authority-data: {}",
                base64::engine::general_purpose::STANDARD.encode(pem)
            )
        })
        .unwrap_or_default();
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: mirra-sandbox\n  cluster:\n    server: {url}{ca}\nusers:\n- name: mirra-sandbox\n  user:{user}\ncontexts:\n- name: mirra-sandbox\n  context:\n    cluster: mirra-sandbox\n    user: mirra-sandbox\n    namespace: default\ncurrent-context: mirra-sandbox\npreferences: {{}}\n"
    )
}
