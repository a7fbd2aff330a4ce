//! The operational HTTP endpoint: liveness, readiness and `/metrics`.
//!
//! | path                      | answers                                            |
//! |---------------------------|----------------------------------------------------|
//! | `/healthz`                | 200 while the process serves HTTP (liveness)        |
//! | `/readyz`                 | 200 once every registered cache has its initial     |
//! |                           | list and every condition holds; 503 with the names  |
//! |                           | still waiting or failing otherwise                  |
//! | `/health/ready`           | the same as consul-k8s answers it: 204 when ready,  |
//! |                           | 500 (with the same names) otherwise                 |
//! | `/metrics`                | the prometheus-client registry as OpenMetrics text  |
//! | `/preview`                | in a dry run, what the controllers would write      |
//! |                           | (JSON, or a text table with `?format=text`); 404    |
//! |                           | otherwise (see `preview`)                           |
//!
//! Readiness means "full knowledge": a controller that has not seen the
//! initial list of everything it depends on must not prune, and its pod
//! must not receive traffic that assumes it is in step. Conditions
//! ([`ReadyCondition`]) are the other kind: they can fail again after
//! holding (the leader elector's "the Lease is reachable"), and they count
//! for a standby replica too.
//!
//! It must NOT: start watches, decide what "ready" means for a cache (the
//! owner of each cache sets its flag), or bind its own socket (the caller
//! passes a bound listener, so tests use port 0).

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;

/// Errors from the health server.
#[derive(Debug, thiserror::Error)]
pub enum HealthError {
    /// Accepting or serving connections failed. Not retryable in-process:
    /// the listener is unusable; restart (liveness probes fail and the
    /// kubelet does it).
    #[error("health server: {0}")]
    Serve(#[from] std::io::Error),
}

/// The set of things that must be ready before the process is ready.
/// Cheap to clone; clones share the set.
#[derive(Debug, Clone, Default)]
pub struct Readiness {
    flags: Arc<Mutex<Vec<ReadyFlag>>>,
    /// A replica waiting for the leader-election Lease: ready as a healthy
    /// standby, whatever its (stopped) controllers' flags say, so that a
    /// rolling update of several replicas can proceed.
    standby: Arc<AtomicBool>,
    /// Conditions that may come and go; see [`ReadyCondition`].
    conditions: Arc<Mutex<Vec<ReadyCondition>>>,
}

/// A readiness condition that can fail again after holding, set by its
/// owner. Unlike a [`ReadyFlag`] it counts for a standby replica as well:
/// it says something about the process, not about its (stopped)
/// controllers.
#[derive(Debug, Clone)]
pub struct ReadyCondition {
    name: Arc<str>,
    ok: Arc<AtomicBool>,
}

impl ReadyCondition {
    /// Sets whether the condition holds; logs each change.
    pub fn set(&self, ok: bool) {
        if self.ok.swap(ok, Ordering::AcqRel) != ok {
            if ok {
                tracing::info!(name = %self.name, "readiness condition holds again");
            } else {
                tracing::warn!(name = %self.name, "readiness condition failed: not ready");
            }
        }
    }

    /// Whether the condition holds.
    pub fn holds(&self) -> bool {
        self.ok.load(Ordering::Acquire)
    }

    /// The name it was registered with.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// One registered readiness condition, set by its owner.
#[derive(Debug, Clone)]
pub struct ReadyFlag {
    name: Arc<str>,
    ready: Arc<AtomicBool>,
}

impl ReadyFlag {
    /// Marks this condition as met (for a cache: its initial list arrived).
    /// Readiness never goes back: a cache that relists keeps its previous,
    /// complete contents meanwhile.
    pub fn set_ready(&self) {
        if !self.ready.swap(true, Ordering::Release) {
            tracing::info!(name = %self.name, "ready");
        }
    }

    /// Whether [`set_ready`](ReadyFlag::set_ready) was called.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// The name it was registered with.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Readiness {
    /// An empty set (ready, since nothing is awaited).
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a condition named `name` (shown in the 503 body), not ready yet.
    /// Register every cache before serving, so the process cannot look
    /// ready before its caches exist.
    pub fn register(&self, name: impl Into<String>) -> ReadyFlag {
        let flag = ReadyFlag {
            name: Arc::from(name.into()),
            ready: Arc::new(AtomicBool::new(false)),
        };
        self.lock().push(flag.clone());
        flag
    }

    /// Adds a condition named `name` (shown in the 503 body while it
    /// fails), holding or not from the start as `ok` says.
    pub fn register_condition(&self, name: impl Into<String>, ok: bool) -> ReadyCondition {
        let cond = ReadyCondition {
            name: Arc::from(name.into()),
            ok: Arc::new(AtomicBool::new(ok)),
        };
        self.conditions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(cond.clone());
        cond
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<ReadyFlag>> {
        // The vector only grows by whole pushes; a poisoned lock is intact.
        self.flags.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Marks this replica as a standby (waiting for leadership) or not.
    /// A standby is ready; a leader is ready when its conditions are met.
    pub fn set_standby(&self, standby: bool) {
        if self.standby.swap(standby, Ordering::AcqRel) != standby {
            tracing::info!(standby, "leader-election standby");
        }
    }

    /// True when every condition holds and this replica is a standby or
    /// every registered flag is set.
    pub fn is_ready(&self) -> bool {
        self.not_ready().is_empty()
    }

    /// Names of the failing conditions, then of the flags not set yet
    /// (none for a standby), each in registration order.
    pub fn not_ready(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .conditions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter(|c| !c.holds())
            .map(|c| c.name.to_string())
            .collect();
        if !self.standby.load(Ordering::Acquire) {
            names.extend(
                self.lock()
                    .iter()
                    .filter(|f| !f.is_ready())
                    .map(|f| f.name.to_string()),
            );
        }
        names
    }
}

#[derive(Clone)]
struct AppState {
    readiness: Readiness,
    registry: Arc<Registry>,
    previews: Arc<[crate::preview::Preview]>,
}

/// The OpenMetrics content type prometheus-client's text encoder produces.
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The router alone, for embedding into another server.
pub fn router(
    readiness: Readiness,
    registry: Arc<Registry>,
    previews: Vec<crate::preview::Preview>,
) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(ready))
        .route("/health/ready", get(ready_consul_k8s))
        .route("/metrics", get(metrics))
        .route("/preview", get(preview))
        .with_state(AppState {
            readiness,
            registry,
            previews: previews.into(),
        })
}

async fn ready(State(st): State<AppState>) -> Response {
    readiness_answer(
        &st.readiness,
        (StatusCode::OK, "ok\n").into_response(),
        StatusCode::SERVICE_UNAVAILABLE,
    )
}

/// `ready` when nothing is waited for, else `not_ready` with the list of
/// what is.
fn readiness_answer(readiness: &Readiness, ready: Response, not_ready: StatusCode) -> Response {
    let waiting = readiness.not_ready();
    if waiting.is_empty() {
        return ready;
    }
    let mut body = String::from("not ready:\n");
    for name in waiting {
        body.push_str("- ");
        body.push_str(&name);
        body.push('\n');
    }
    (not_ready, body).into_response()
}

/// consul-k8s's sync-catalog answers its probe path with 204 No Content or
/// 500; its Helm chart probes it, and anything watching it may compare the
/// codes.
async fn ready_consul_k8s(State(st): State<AppState>) -> Response {
    readiness_answer(
        &st.readiness,
        StatusCode::NO_CONTENT.into_response(),
        StatusCode::INTERNAL_SERVER_ERROR,
    )
}

/// The dry-run previews: one JSON document over every controller of the
/// process, or the text table with `?format=text`.
async fn preview(State(st): State<AppState>, uri: axum::http::Uri) -> Response {
    if st.previews.is_empty() {
        return (
            StatusCode::NOT_FOUND,
            "not a dry run: start the controller with --dry-run to preview its writes\n",
        )
            .into_response();
    }
    let text = uri
        .query()
        .unwrap_or_default()
        .split('&')
        .any(|kv| kv == "format=text");
    if text {
        return (
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            crate::preview::text(&st.previews),
        )
            .into_response();
    }
    let controllers: Vec<serde_json::Value> = st.previews.iter().map(|p| p.summary()).collect();
    let quiet = controllers.iter().all(|c| c["quiet"] == true);
    let body = serde_json::json!({"dryRun": true, "quiet": quiet, "controllers": controllers});
    (
        [(header::CONTENT_TYPE, "application/json")],
        format!("{body}\n"),
    )
        .into_response()
}

async fn metrics(State(st): State<AppState>) -> Response {
    let mut body = String::new();
    match prometheus_client::encoding::text::encode(&mut body, &st.registry) {
        Ok(()) => ([(header::CONTENT_TYPE, OPENMETRICS)], body).into_response(),
        Err(e) => {
            // Only a failing `fmt::Write` can cause this, which a String
            // never is; answer 500 rather than a truncated exposition.
            tracing::error!(error = %e, "encoding metrics");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "encoding metrics failed\n",
            )
                .into_response()
        }
    }
}

/// Serves the health endpoints on `listener` until `shutdown` completes.
pub async fn serve_health(
    listener: TcpListener,
    readiness: Readiness,
    registry: Arc<Registry>,
    previews: Vec<crate::preview::Preview>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), HealthError> {
    if let Ok(addr) = listener.local_addr() {
        tracing::info!(%addr, "serving health and metrics");
    }
    axum::serve(listener, router(readiness, registry, previews))
        .with_graceful_shutdown(shutdown)
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::metrics::counter::Counter;

    async fn start(
        readiness: Readiness,
    ) -> (
        String,
        tokio::sync::oneshot::Sender<()>,
        tokio::task::JoinHandle<Result<(), HealthError>>,
    ) {
        start_with(readiness, Vec::new()).await
    }

    async fn start_with(
        readiness: Readiness,
        previews: Vec<crate::preview::Preview>,
    ) -> (
        String,
        tokio::sync::oneshot::Sender<()>,
        tokio::task::JoinHandle<Result<(), HealthError>>,
    ) {
        let mut registry = Registry::default();
        let c: Counter = Counter::default();
        c.inc();
        registry.register("probe_hits", "A test counter", c);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(serve_health(
            listener,
            readiness,
            Arc::new(registry),
            previews,
            async move {
                let _ = rx.await;
            },
        ));
        (url, tx, task)
    }

    #[test]
    fn a_standby_is_ready_and_a_leader_waits_for_its_conditions() {
        let r = Readiness::new();
        let cache = r.register("cache");
        assert!(!r.is_ready());
        r.set_standby(true);
        assert!(r.is_ready());
        assert!(r.not_ready().is_empty());
        r.set_standby(false);
        assert_eq!(r.not_ready(), vec!["cache".to_owned()]);
        cache.set_ready();
        assert!(r.is_ready());
    }

    #[test]
    fn a_condition_fails_even_a_standby_and_recovers() {
        let r = Readiness::new();
        let cache = r.register("cache");
        let lease = r.register_condition("leader-election lease", true);
        r.set_standby(true);
        assert!(r.is_ready());
        lease.set(false);
        assert_eq!(r.not_ready(), vec!["leader-election lease".to_owned()]);
        r.set_standby(false);
        assert_eq!(
            r.not_ready(),
            vec!["leader-election lease".to_owned(), "cache".to_owned()]
        );
        lease.set(true);
        cache.set_ready();
        assert!(r.is_ready() && lease.holds() && lease.name() == "leader-election lease");
    }

    #[test]
    fn readiness_tracks_every_flag() {
        let r = Readiness::new();
        assert!(r.is_ready(), "nothing registered, nothing awaited");
        let a = r.register("namespaces");
        let b = r.register("services");
        assert!(!r.is_ready());
        a.set_ready();
        assert_eq!(r.not_ready(), vec!["services".to_string()]);
        b.set_ready();
        b.set_ready();
        assert!(r.is_ready() && a.is_ready() && b.name() == "services");
        // A clone of the handle sees and extends the same set.
        let c = r.clone().register("nodes");
        assert!(!r.is_ready());
        c.set_ready();
        assert!(r.is_ready());
    }

    #[tokio::test]
    async fn endpoints_over_http() {
        let readiness = Readiness::new();
        let ns = readiness.register("namespaces");
        let svc = readiness.register("services");
        let (url, stop, task) = start(readiness).await;
        let http = reqwest::Client::new();

        let live = http.get(format!("{url}/healthz")).send().await.unwrap();
        assert_eq!(live.status(), 200);

        for (path, code) in [("/readyz", 503), ("/health/ready", 500)] {
            let r = http.get(format!("{url}{path}")).send().await.unwrap();
            assert_eq!(r.status(), code, "{path}");
            let body = r.text().await.unwrap();
            assert!(
                body.contains("namespaces") && body.contains("services"),
                "{body}"
            );
        }
        ns.set_ready();
        let body = http
            .get(format!("{url}/readyz"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(
            !body.contains("namespaces") && body.contains("services"),
            "{body}"
        );
        svc.set_ready();
        for (path, code) in [("/readyz", 200), ("/health/ready", 204)] {
            let r = http.get(format!("{url}{path}")).send().await.unwrap();
            assert_eq!(r.status(), code, "{path}");
        }

        let m = http.get(format!("{url}/metrics")).send().await.unwrap();
        assert_eq!(m.status(), 200);
        assert!(
            m.headers()[reqwest::header::CONTENT_TYPE]
                .to_str()
                .unwrap()
                .starts_with("application/openmetrics-text")
        );
        let text = m.text().await.unwrap();
        assert!(text.contains("probe_hits_total 1"), "{text}");
        assert!(text.ends_with("# EOF\n"), "{text}");

        let missing = http.get(format!("{url}/nope")).send().await.unwrap();
        assert_eq!(missing.status(), 404);
        let no_preview = http.get(format!("{url}/preview")).send().await.unwrap();
        assert_eq!(no_preview.status(), 404, "not a dry run");
        assert!(no_preview.text().await.unwrap().contains("--dry-run"));

        stop.send(()).unwrap();
        task.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn the_preview_is_served_as_json_and_as_text() {
        let mirror = crate::preview::Preview::new("mirror");
        let catalog = crate::preview::Preview::new("catalog");
        let (url, stop, task) =
            start_with(Readiness::new(), vec![mirror.clone(), catalog.clone()]).await;
        let http = reqwest::Client::new();
        let get = |q: &'static str| {
            let http = http.clone();
            let url = url.clone();
            async move { http.get(format!("{url}/preview{q}")).send().await.unwrap() }
        };
        let quiet: serde_json::Value = get("").await.json().await.unwrap();
        assert_eq!(quiet["quiet"], true);
        assert_eq!(quiet["controllers"][1]["controller"], "catalog");

        mirror.replace(
            "team-a",
            vec![crate::preview::PlannedWrite {
                kind: "ConfigMap".into(),
                namespace: "team-a".into(),
                name: "settings".into(),
                operation: "apply",
                reason: "create-or-adopt",
                diff: Vec::new(),
            }],
        );
        let r = get("").await;
        assert_eq!(
            r.headers()[reqwest::header::CONTENT_TYPE],
            "application/json"
        );
        let body = r.text().await.unwrap();
        assert!(body.ends_with("}\n"), "{body}");
        let loud: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(loud["quiet"], false);
        assert_eq!(loud["controllers"][0]["writes"][0]["name"], "settings");

        let text = get("?format=text").await.text().await.unwrap();
        assert!(text.starts_with("mirror: 1 planned write(s)\n"), "{text}");
        assert!(
            text.contains("catalog: 0 planned write(s), quiet"),
            "{text}"
        );
        stop.send(()).unwrap();
        task.await.unwrap().unwrap();
    }
}
