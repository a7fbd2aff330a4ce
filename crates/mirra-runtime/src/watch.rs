//! Watch streams that back off while the API server keeps refusing them,
//! and a diagnosis of the refusal a person can act on.
//!
//! kube's `default_backoff()` never grows for a failing initial list: the
//! watcher yields `Event::Init` before every list attempt, and the backoff
//! wrapper resets on any `Ok`. A missing CRD or RBAC rule then produced one
//! warning per second forever. [`retrying`] resets only on events that prove
//! the watch works (an object, the end of the initial list), so the delay
//! doubles up to its cap, and every failure carries its attempt number and
//! the delay before the next one, for the log line.
//!
//! [`Cause`] sorts a failure into what a person fixes (the resource is not
//! served, RBAC forbids it, the credentials are refused, the server cannot
//! be reached); the controllers add where the fix is (`deploy/...`).

use std::pin::Pin;
use std::time::Duration;

use futures::{Stream, StreamExt};
use kube::runtime::watcher;

use crate::queue::backoff_delay;

/// Bounds of the retry delay of one watch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchRetry {
    /// Delay after the first failure of a streak.
    pub base: Duration,
    /// Largest delay.
    pub cap: Duration,
}

impl Default for WatchRetry {
    /// kube's own bounds (800 ms doubling to 30 s), so a watch that is
    /// refused for good costs two requests a minute.
    fn default() -> Self {
        WatchRetry {
            base: Duration::from_millis(800),
            cap: Duration::from_secs(30),
        }
    }
}

/// One failed attempt of a watch.
#[derive(Debug)]
pub struct WatchFailure {
    /// What the watcher reported.
    pub error: watcher::Error,
    /// Failures in a row, this one included (1 = the first).
    pub attempt: u32,
    /// How long the stream waits before trying again.
    pub retry_in: Duration,
}

impl WatchFailure {
    /// What kind of problem this is.
    pub fn cause(&self) -> Cause {
        Cause::of(&self.error)
    }

    /// [`WatchFailure::retry_in`] in whole milliseconds, for a log field.
    pub fn retry_in_ms(&self) -> u64 {
        u64::try_from(self.retry_in.as_millis()).unwrap_or(u64::MAX)
    }

    /// The API server's own message, when it answered with a Status.
    pub fn api_message(&self) -> Option<&str> {
        status_of(&self.error).map(|s| s.message.as_str())
    }
}

/// What a person would fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// 404: the API server does not serve the resource (a CRD not
    /// installed, a version removed).
    NotServed,
    /// 403: RBAC does not grant the verb.
    Forbidden,
    /// 401: the credentials (token, certificate) are refused.
    Unauthorized,
    /// No HTTP answer: connection refused, DNS, TLS, timeout.
    Unreachable,
    /// Anything else (5xx, 410 handled by the watcher itself, decoding).
    Other,
}

impl Cause {
    /// Classifies a watcher error.
    pub fn of(error: &watcher::Error) -> Cause {
        if let Some(status) = status_of(error) {
            return match status.code {
                404 => Cause::NotServed,
                403 => Cause::Forbidden,
                401 => Cause::Unauthorized,
                _ => Cause::Other,
            };
        }
        match error {
            watcher::Error::InitialListFailed(e)
            | watcher::Error::WatchStartFailed(e)
            | watcher::Error::WatchFailed(e) => match e {
                kube::Error::HyperError(_) | kube::Error::Service(_) => Cause::Unreachable,
                _ => Cause::Other,
            },
            _ => Cause::Other,
        }
    }

    /// A short label for logs and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Cause::NotServed => "not-served",
            Cause::Forbidden => "forbidden",
            Cause::Unauthorized => "unauthorized",
            Cause::Unreachable => "unreachable",
            Cause::Other => "other",
        }
    }
}

fn status_of(error: &watcher::Error) -> Option<&kube::core::Status> {
    match error {
        watcher::Error::InitialListFailed(kube::Error::Api(s))
        | watcher::Error::WatchStartFailed(kube::Error::Api(s))
        | watcher::Error::WatchFailed(kube::Error::Api(s)) => Some(s),
        watcher::Error::WatchError(s) => Some(s),
        _ => None,
    }
}

/// Where the fix for each [`Cause`] is, as the controller that owns the
/// watch knows it.
#[derive(Debug, Clone, Copy)]
pub struct WatchHints {
    /// The resource as RBAC names it (`plural` or `plural.group`).
    pub resource: &'static str,
    /// How to make the API server serve it (install the CRD), if that is
    /// the operator's job; `None` for built-in kinds.
    pub install: Option<&'static str>,
    /// Where the RBAC rule that grants the watch is.
    pub rbac: &'static str,
}

/// One log-ready sentence: what is wrong and how to fix it.
pub fn explain(hints: &WatchHints, failure: &WatchFailure) -> String {
    let resource = hints.resource;
    let server = failure
        .api_message()
        .map(|m| format!(" (the API server says: {m})"))
        .unwrap_or_default();
    match failure.cause() {
        Cause::NotServed => match hints.install {
            Some(install) => format!("{resource} is not served{server}: {install}"),
            None => format!(
                "{resource} is not served{server}: this Kubernetes version does not offer it"
            ),
        },
        Cause::Forbidden => format!(
            "mirra may not list and watch {resource}{server}: {}",
            hints.rbac
        ),
        Cause::Unauthorized => format!(
            "the API server refused mirra's credentials watching {resource}{server}: check the \
             ServiceAccount token (in a pod) or the user in KUBECONFIG"
        ),
        Cause::Unreachable => format!(
            "cannot reach the Kubernetes API server to watch {resource} ({}): check KUBECONFIG \
             (or, in a pod, KUBERNETES_SERVICE_HOST) and that a NetworkPolicy lets mirra out to it",
            error_chain(&failure.error)
        ),
        Cause::Other => format!("watching {resource} failed: {}", failure.error),
    }
}

/// The error and its sources, as one line: kube's transport errors say
/// only "client error (Connect)" at the top; the cause (connection refused,
/// a DNS failure, a certificate) is further down.
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut line = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        let text = e.to_string();
        // Wrappers often repeat their source's text in their own.
        if !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
        source = e.source();
    }
    line
}

type Inner<K> = Pin<Box<dyn Stream<Item = watcher::Result<watcher::Event<K>>> + Send>>;

struct Retrying<K> {
    stream: Inner<K>,
    retry: WatchRetry,
    failures: u32,
    pause: Option<Duration>,
}

/// Wraps a watcher stream: after a failure the next attempt waits
/// `backoff_delay(base, cap, failures, jitter)`, and the failure count
/// resets only once an object or the end of the initial list arrives.
/// Cancel-safe: the wait lives inside the stream, not in `next()`.
pub fn retrying<K, S>(
    stream: S,
    retry: WatchRetry,
) -> impl Stream<Item = Result<watcher::Event<K>, WatchFailure>> + Send
where
    K: Send + 'static,
    S: Stream<Item = watcher::Result<watcher::Event<K>>> + Send + 'static,
{
    let state = Retrying {
        stream: Box::pin(stream),
        retry,
        failures: 0,
        pause: None,
    };
    futures::stream::unfold(state, |mut st| async move {
        if let Some(pause) = st.pause.take() {
            tokio::time::sleep(pause).await;
        }
        let item = st.stream.next().await?;
        let item = match item {
            Ok(watcher::Event::Init) => Ok(watcher::Event::Init),
            Ok(event) => {
                st.failures = 0;
                Ok(event)
            }
            Err(error) => {
                st.failures = st.failures.saturating_add(1);
                let retry_in = backoff_delay(
                    st.retry.base,
                    st.retry.cap,
                    st.failures,
                    rand::random::<f64>(),
                );
                st.pause = Some(retry_in);
                Err(WatchFailure {
                    error,
                    attempt: st.failures,
                    retry_in,
                })
            }
        };
        Some((item, st))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api_error(code: u16) -> watcher::Error {
        watcher::Error::InitialListFailed(kube::Error::Api(Box::new(
            kube::core::Status::failure(
                "the server could not find the requested resource",
                "NotFound",
            )
            .with_code(code),
        )))
    }

    #[test]
    fn causes_follow_the_status_code_and_transport_errors() {
        assert_eq!(Cause::of(&api_error(404)), Cause::NotServed);
        assert_eq!(Cause::of(&api_error(403)), Cause::Forbidden);
        assert_eq!(Cause::of(&api_error(401)), Cause::Unauthorized);
        assert_eq!(Cause::of(&api_error(500)), Cause::Other);
        let transport = watcher::Error::InitialListFailed(kube::Error::Service("refused".into()));
        assert_eq!(Cause::of(&transport), Cause::Unreachable);
        assert_eq!(Cause::of(&watcher::Error::NoResourceVersion), Cause::Other);
    }

    #[test]
    fn explanations_name_the_resource_and_the_fix() {
        let hints = WatchHints {
            resource: "syncconfigs.sync.appuio.ch",
            install: Some("install the CRD: kubectl apply -f deploy/crd/syncconfig.yaml"),
            rbac: "grant it with deploy/mirror/rbac.yaml",
        };
        let failure = |error| WatchFailure {
            error,
            attempt: 1,
            retry_in: Duration::from_secs(1),
        };
        let text = explain(&hints, &failure(api_error(404)));
        assert!(
            text.contains("syncconfigs.sync.appuio.ch is not served"),
            "{text}"
        );
        assert!(text.contains("deploy/crd/syncconfig.yaml"), "{text}");
        let text = explain(&hints, &failure(api_error(403)));
        assert!(text.contains("may not list and watch"), "{text}");
        assert!(text.contains("deploy/mirror/rbac.yaml"), "{text}");
        let built_in = WatchHints {
            install: None,
            ..hints
        };
        let text = explain(&built_in, &failure(api_error(404)));
        assert!(text.contains("does not offer it"), "{text}");
        let refused = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused here");
        let transport = watcher::Error::InitialListFailed(kube::Error::Service(Box::new(refused)));
        let text = explain(&hints, &failure(transport));
        assert!(
            text.contains("cannot reach the Kubernetes API server"),
            "{text}"
        );
        assert!(text.contains("refused here"), "{text}");
    }

    type Item = watcher::Result<watcher::Event<String>>;

    /// The delays `retrying` waits for a scripted stream, read on virtual
    /// time from the failures it yields.
    async fn delays(script: Vec<Item>) -> Vec<(u32, Duration)> {
        let retry = WatchRetry {
            base: Duration::from_secs(1),
            cap: Duration::from_secs(8),
        };
        let stream = retrying(futures::stream::iter(script), retry);
        let mut stream = std::pin::pin!(stream);
        let mut out = Vec::new();
        while let Some(item) = stream.next().await {
            if let Err(f) = item {
                out.push((f.attempt, f.retry_in));
            }
        }
        out
    }

    #[tokio::test(start_paused = true)]
    async fn init_events_do_not_reset_the_backoff_but_objects_do() {
        let failing_list = || vec![Ok(watcher::Event::Init), Err(api_error(404))];
        let mut script: Vec<Item> = Vec::new();
        for _ in 0..5 {
            script.extend(failing_list());
        }
        script.push(Ok(watcher::Event::Init));
        script.push(Ok(watcher::Event::InitDone));
        script.push(Err(api_error(500)));
        let start = tokio::time::Instant::now();
        let seen = delays(script).await;
        let attempts: Vec<u32> = seen.iter().map(|(a, _)| *a).collect();
        assert_eq!(attempts, vec![1, 2, 3, 4, 5, 1]);
        // Equal jitter keeps at least half of base * 2^(n-1), capped at 8 s.
        for ((attempt, delay), nominal) in seen.iter().zip([1u64, 2, 4, 8, 8, 1]) {
            let nominal = Duration::from_secs(nominal);
            assert!(
                *delay >= nominal / 2 && *delay <= nominal,
                "attempt {attempt}: {delay:?} not within [{:?}, {nominal:?}]",
                nominal / 2
            );
        }
        // The stream really waited (virtual time) after every failure.
        let waited: Duration = seen.iter().map(|(_, d)| *d).sum();
        assert!(
            start.elapsed() >= waited,
            "{:?} < {waited:?}",
            start.elapsed()
        );
    }
}
