//! Helpers shared by mirra's integration tests: waiting for a condition,
//! waiting for a controller to go quiet, reading the Kubernetes Events
//! a controller recorded, capturing what it logs, (`rbac`) a sandbox
//! with RBAC on with deploy/'s manifests applied, and (`consul_login`) the
//! Kubernetes host of a Consul auth method.
//!
//! This crate is a dev-dependency of the test suites only. Production
//! code must not depend on it: every helper panics on failure, which is
//! what a test wants and what a controller must never do.
//!
//! Tests never assert on elapsed time. [`DEADLINE`] only bounds how long a
//! broken test hangs before it fails with a message naming what it was
//! waiting for; a passing test returns as soon as the condition holds.

pub mod consul_login;
pub mod rbac;

use std::fmt::Debug;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::Event;
use kube::api::{Api, ListParams};

/// How long [`wait_for`] and [`settle`] wait before failing the test. Far
/// beyond any delay of the code under test, so that a slow, shared build
/// machine cannot make a test flaky.
pub const DEADLINE: Duration = Duration::from_secs(30);

/// Pause between two probes of [`wait_for`]: short, since the probes are
/// cheap reads of in-process sandboxes.
const POLL: Duration = Duration::from_millis(10);

/// Polls `probe` until it returns true, and fails the test, naming `what`,
/// if it has not after [`DEADLINE`].
pub async fn wait_for<F, Fut>(what: &str, mut probe: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        if probe().await {
            return;
        }
        if tokio::time::Instant::now() >= deadline {
            panic!("timed out after {DEADLINE:?} waiting for: {what}");
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Consecutive quiet polls [`settle`] wants; see there.
pub const QUIET_POLLS: u32 = 5;

/// Spacing of [`settle`]'s polls.
pub const QUIET_POLL: Duration = Duration::from_millis(100);

/// Waits until a controller is idle and stays so, then returns what
/// `probe` last observed.
///
/// `probe` returns `None` while the controller reports work of its own
/// (keys queued, waiting out a debounce or a backoff), and otherwise the
/// counters the test asserts on (requests, writes, Raft applies). The wait
/// ends when `probe` returned the same counters for [`QUIET_POLLS`]
/// consecutive polls [`QUIET_POLL`] apart.
///
/// Tests use it to assert that nothing MORE happens; to wait for something
/// to happen, use [`wait_for`] on that thing. The controller's own idle
/// report covers its timers (debounce, backoff, retries), however long
/// they are; the quiet polls cover what it cannot report: a watch event or
/// a write in transit. Those take milliseconds in process, but on a loaded
/// two-core CI machine a task can wait far longer for its turn, and a
/// window that ends too early makes a "nothing more" check pass without
/// testing anything (or an exact count flaky), so the window stays at
/// half a second.
pub async fn settle<T, F>(what: &str, probe: F) -> T
where
    T: PartialEq + Debug,
    F: FnMut() -> Option<T>,
{
    settle_for(what, QUIET_POLLS, probe).await
}

/// [`settle`] with `polls` quiet polls instead of [`QUIET_POLLS`], for a
/// test whose controllers cannot report idle (another process, a replica
/// whose fenced retries never empty its queue): its quiet window alone
/// must then outlast the timers after which they could write again.
pub async fn settle_for<T, F>(what: &str, polls: u32, mut probe: F) -> T
where
    T: PartialEq + Debug,
    F: FnMut() -> Option<T>,
{
    let deadline = tokio::time::Instant::now() + DEADLINE;
    let mut last = probe();
    let mut quiet = 0;
    loop {
        if tokio::time::Instant::now() >= deadline {
            panic!("timed out after {DEADLINE:?} waiting for {what} to go quiet; last: {last:?}");
        }
        tokio::time::sleep(QUIET_POLL).await;
        let now = probe();
        quiet = if now.is_some() && now == last {
            quiet + 1
        } else {
            0
        };
        match now {
            Some(counters) if quiet >= polls => return counters,
            now => last = now,
        }
    }
}

/// Waits until a dry run's summary (`summary`, e.g. `|| preview.summary()`)
/// lists an unreadable resource, and returns that summary.
pub async fn wait_for_unreadable(summary: impl Fn() -> serde_json::Value) -> serde_json::Value {
    wait_for("the refused read reported", || async {
        summary()["unreadable"]
            .as_array()
            .is_some_and(|u| !u.is_empty())
    })
    .await;
    summary()
}

/// Every Event in `namespace`.
pub async fn events(client: &kube::Client, namespace: &str) -> Vec<Event> {
    Api::<Event>::namespaced(client.clone(), namespace)
        .list(&ListParams::default())
        .await
        .unwrap_or_else(|e| panic!("listing the Events in {namespace}: {e}"))
        .items
}

/// The Events in `namespace` about the object named `name` (of any kind).
pub async fn events_about(client: &kube::Client, namespace: &str, name: &str) -> Vec<Event> {
    let mut out = events(client, namespace).await;
    out.retain(|e| e.involved_object.name.as_deref() == Some(name));
    out
}

/// Whether `event` is a Warning with this `reason`.
pub fn is_warning(event: &Event, reason: &str) -> bool {
    event.type_.as_deref() == Some("Warning") && event.reason.as_deref() == Some(reason)
}

/// Everything logged while the guard of [`capture_logs`] lives.
#[derive(Clone, Default)]
pub struct CapturedLog(Arc<Mutex<Vec<u8>>>);

impl CapturedLog {
    /// What was logged so far, as text.
    pub fn text(&self) -> String {
        let bytes = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

impl std::io::Write for CapturedLog {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Makes an in-memory log the default subscriber of this thread, up to
/// `level`, until the guard drops. On tokio's current-thread test runtime
/// every task logs on this thread: the code under test's, its HTTP
/// connections' and the sandboxes'.
///
/// Safe beside tests running in parallel: tracing caches, once per process,
/// whether a log statement is wanted at all, asking the subscriber of the
/// thread that runs it first. A parallel test's thread without a
/// subscriber would answer "never", and this log would miss the event for
/// good. So every test binary that captures logs gets [`Undecided`] as the
/// process's global subscriber first, which answers "ask each time".
pub fn capture_logs(level: tracing::Level) -> (CapturedLog, tracing::subscriber::DefaultGuard) {
    static UNDECIDED: std::sync::Once = std::sync::Once::new();
    UNDECIDED.call_once(|| {
        // Refused only when a global subscriber exists already, which
        // then answers for threads without one of their own.
        let _ = tracing::subscriber::set_global_default(Undecided);
    });
    let log = CapturedLog::default();
    let writer = log.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let guard = tracing::subscriber::set_default(subscriber);
    // Statements first run before this subscriber existed are asked again.
    tracing::callsite::rebuild_interest_cache();
    (log, guard)
}

/// A subscriber that records nothing and leaves every log statement
/// undecided (`Interest::sometimes`), so that tracing asks the subscriber
/// of the thread running it each time instead of caching one thread's
/// answer for the whole process (see [`capture_logs`]).
pub struct Undecided;

impl tracing::Subscriber for Undecided {
    fn register_callsite(
        &self,
        _: &'static tracing::Metadata<'static>,
    ) -> tracing::subscriber::Interest {
        tracing::subscriber::Interest::sometimes()
    }

    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        false
    }

    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        Some(tracing::level_filters::LevelFilter::TRACE)
    }

    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }

    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}

    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}

    fn event(&self, _: &tracing::Event<'_>) {}

    fn enter(&self, _: &tracing::span::Id) {}

    fn exit(&self, _: &tracing::span::Id) {}
}
