//! Client-side token-bucket rate limiting for the Kubernetes client.
//!
//! kube-rs sends requests as fast as it is asked to; the API server then
//! protects itself with API Priority and Fairness, which queues or rejects
//! (429) requests from a noisy client and so slows down every controller in
//! its priority level. mirra limits itself first, as a `tower` layer on
//! kube's HTTP stack:
//!
//! ```text
//! Client ─► Buffer ─► RateLimitService ─► (kube's auth, retry, HTTP)
//!                      waits in poll_ready for a token
//! ```
//!
//! Because kube's `Client` puts a `Buffer` in front of the stack, waiting in
//! `poll_ready` applies backpressure to every caller in order, without
//! spawning tasks or cloning the inner service.
//!
//! It must NOT: inspect or rewrite requests, retry, or read the wall clock
//! (it uses `tokio::time::Instant`, so tests run on paused time).
//!
//! `governor` is not used: the bucket is a few lines of arithmetic, while
//! the tower layer around it (waiting in `poll_ready` behind kube's
//! `Buffer`) would be the same code either way, and governor's clocks are
//! not tokio's, so its waits would not follow the paused clock the tests
//! run on without a clock of our own.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::{Instant, Sleep};
use tower::{Layer, Service};

/// Errors from building a rate-limited client.
#[derive(Debug, thiserror::Error)]
pub enum RateLimitError {
    /// QPS must be a finite number above zero. Not retryable: fix the
    /// configuration (flag or environment).
    #[error("invalid rate limit: qps must be finite and > 0, got {0}")]
    InvalidQps(f64),
    /// Burst must be at least 1. Not retryable: fix the configuration.
    #[error("invalid rate limit: burst must be >= 1")]
    InvalidBurst,
    /// kube could not build its HTTP stack from the configuration (bad TLS
    /// material, unsupported auth). Not retryable: fix the kubeconfig or the
    /// in-cluster service account.
    #[error("building the Kubernetes client: {0}")]
    Client(#[from] kube::Error),
}

/// Sustained rate and burst of a [`TokenBucket`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimitConfig {
    /// Sustained requests per second.
    pub qps: f64,
    /// Requests that may go out at once after an idle period.
    pub burst: u32,
}

impl Default for RateLimitConfig {
    /// 50 QPS / burst 100.
    ///
    /// client-go's 5 QPS / 10 burst assumes controllers that re-send every
    /// object on each resync. mirra sends only writes that change something,
    /// so its requests are already the necessary ones, and throttling them
    /// hard only delays convergence: creating a new namespace that receives
    /// 20 mirrored objects would take 2 s at 10 QPS, and a SyncConfig
    /// touching 500 namespaces nearly two minutes at 5 QPS. 50 QPS syncs that
    /// in 10 s while staying well inside what API Priority and Fairness
    /// grants a workload-high controller; a burst of 100 lets one namespace
    /// or one rollout go out at once without waiting at all.
    fn default() -> Self {
        Self {
            qps: 50.0,
            burst: 100,
        }
    }
}

impl RateLimitConfig {
    /// Checks that the values are usable.
    pub fn validate(&self) -> Result<(), RateLimitError> {
        if !self.qps.is_finite() || self.qps <= 0.0 {
            return Err(RateLimitError::InvalidQps(self.qps));
        }
        if self.burst == 0 {
            return Err(RateLimitError::InvalidBurst);
        }
        Ok(())
    }
}

/// The pure bucket arithmetic, separate from locking and time so it can be
/// tested with arbitrary instants.
#[derive(Debug, Clone)]
struct Bucket {
    qps: f64,
    burst: f64,
    /// May go negative: each reservation takes its token immediately and the
    /// caller waits until the debt is repaid, which serves callers in order.
    tokens: f64,
    last: Instant,
}

impl Bucket {
    fn new(cfg: RateLimitConfig, now: Instant) -> Self {
        let burst = f64::from(cfg.burst);
        Self {
            qps: cfg.qps,
            burst,
            tokens: burst,
            last: now,
        }
    }

    /// Takes one token and returns how long the caller must wait before
    /// using it (zero when one was available).
    fn reserve(&mut self, now: Instant) -> Duration {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.qps).min(self.burst);
        self.last = self.last.max(now);
        self.tokens -= 1.0;
        if self.tokens >= 0.0 {
            Duration::ZERO
        } else {
            // `tokens` is bounded below by -(number of waiting callers), so
            // this is finite and small.
            Duration::from_secs_f64(-self.tokens / self.qps)
        }
    }
}

/// A shared token bucket: `qps` tokens per second, at most `burst` saved.
#[derive(Debug)]
pub struct TokenBucket {
    bucket: Mutex<Bucket>,
}

impl TokenBucket {
    /// Creates a full bucket.
    pub fn new(cfg: RateLimitConfig) -> Result<Self, RateLimitError> {
        cfg.validate()?;
        Ok(Self {
            bucket: Mutex::new(Bucket::new(cfg, Instant::now())),
        })
    }

    /// Takes one token now and returns how long to wait before the request
    /// it pays for may be sent. The token is spent even if the caller then
    /// gives up, which errs on the side of sending less.
    pub fn reserve(&self) -> Duration {
        let now = Instant::now();
        // The bucket holds plain numbers; a poisoned lock still has valid ones.
        self.bucket
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .reserve(now)
    }

    /// Waits until a token is available and takes it.
    pub async fn acquire(&self) {
        let wait = self.reserve();
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }
}

/// A `tower::Layer` that rate-limits every request through a shared
/// [`TokenBucket`]. Layers built from clones share the same bucket.
///
/// ```no_run
/// # async fn f() -> Result<(), Box<dyn std::error::Error>> {
/// use mirra_runtime::ratelimit::{RateLimitConfig, RateLimitLayer};
/// let config = kube::Config::infer().await?;
/// let layer = RateLimitLayer::new(RateLimitConfig::default())?;
/// let client = kube::client::ClientBuilder::try_from(config)?.with_layer(&layer).build();
/// # let _ = client; Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct RateLimitLayer {
    bucket: Arc<TokenBucket>,
}

impl RateLimitLayer {
    /// Creates a layer with its own bucket.
    pub fn new(cfg: RateLimitConfig) -> Result<Self, RateLimitError> {
        Ok(Self {
            bucket: Arc::new(TokenBucket::new(cfg)?),
        })
    }

    /// Creates a layer sharing an existing bucket (for example one budget for
    /// two clients).
    pub fn with_bucket(bucket: Arc<TokenBucket>) -> Self {
        Self { bucket }
    }

    /// The bucket this layer draws from.
    pub fn bucket(&self) -> &Arc<TokenBucket> {
        &self.bucket
    }
}

impl<S> Layer<S> for RateLimitLayer {
    type Service = RateLimitService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RateLimitService {
            inner,
            bucket: Arc::clone(&self.bucket),
            permit: Permit::None,
        }
    }
}

enum Permit {
    None,
    Waiting(Pin<Box<Sleep>>),
    Granted,
}

/// The service produced by [`RateLimitLayer`]: becomes ready only when a
/// token is available, then forwards the request unchanged.
pub struct RateLimitService<S> {
    inner: S,
    bucket: Arc<TokenBucket>,
    permit: Permit,
}

impl<S> std::fmt::Debug for RateLimitService<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let permit = match self.permit {
            Permit::None => "none",
            Permit::Waiting(_) => "waiting",
            Permit::Granted => "granted",
        };
        f.debug_struct("RateLimitService")
            .field("permit", &permit)
            .finish_non_exhaustive()
    }
}

impl<S: Clone> Clone for RateLimitService<S> {
    /// A clone shares the bucket but not a permit this one is holding.
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            bucket: Arc::clone(&self.bucket),
            permit: Permit::None,
        }
    }
}

impl<S, Req> Service<Req> for RateLimitService<S>
where
    S: Service<Req>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        loop {
            match &mut self.permit {
                Permit::Granted => return self.inner.poll_ready(cx),
                Permit::Waiting(sleep) => {
                    if sleep.as_mut().poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    self.permit = Permit::Granted;
                }
                Permit::None => {
                    let wait = self.bucket.reserve();
                    self.permit = if wait.is_zero() {
                        Permit::Granted
                    } else {
                        tracing::trace!(wait_ms = wait.as_millis(), "client-side rate limit");
                        Permit::Waiting(Box::pin(tokio::time::sleep(wait)))
                    };
                }
            }
        }
    }

    fn call(&mut self, req: Req) -> Self::Future {
        if !matches!(self.permit, Permit::Granted) {
            // The tower contract requires `poll_ready` first; a caller that
            // skips it still pays, so the budget is never exceeded silently.
            tracing::warn!("request sent without poll_ready; rate limit not applied to it");
            let _ = self.bucket.reserve();
        }
        self.permit = Permit::None;
        self.inner.call(req)
    }
}

/// Builds a kube client from `config` with kube's default stack plus the
/// rate limit.
pub fn rate_limited_client(
    config: kube::Config,
    limits: RateLimitConfig,
) -> Result<kube::Client, RateLimitError> {
    let layer = RateLimitLayer::new(limits)?;
    Ok(kube::client::ClientBuilder::try_from(config)?
        .with_layer(&layer)
        .build())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tower::ServiceExt;

    #[test]
    fn invalid_configs_are_rejected() {
        for qps in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(matches!(
                TokenBucket::new(RateLimitConfig { qps, burst: 1 }),
                Err(RateLimitError::InvalidQps(_))
            ));
        }
        assert!(matches!(
            TokenBucket::new(RateLimitConfig { qps: 1.0, burst: 0 }),
            Err(RateLimitError::InvalidBurst)
        ));
        assert!(RateLimitConfig::default().validate().is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn burst_then_steady_rate() {
        let b = TokenBucket::new(RateLimitConfig {
            qps: 10.0,
            burst: 3,
        })
        .unwrap();
        for _ in 0..3 {
            assert_eq!(b.reserve(), Duration::ZERO);
        }
        // Each further request waits one more tenth of a second.
        assert_eq!(b.reserve(), Duration::from_millis(100));
        assert_eq!(b.reserve(), Duration::from_millis(200));
        tokio::time::advance(Duration::from_secs(10)).await;
        // Refilled, but never above the burst.
        for _ in 0..3 {
            assert_eq!(b.reserve(), Duration::ZERO);
        }
        assert!(b.reserve() > Duration::ZERO);
    }

    #[derive(Clone)]
    struct Count(Arc<AtomicUsize>);

    impl Service<()> for Count {
        type Response = ();
        type Error = std::convert::Infallible;
        type Future = std::future::Ready<Result<(), Self::Error>>;
        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            Poll::Ready(Ok(()))
        }
        fn call(&mut self, _: ()) -> Self::Future {
            self.0.fetch_add(1, Ordering::SeqCst);
            std::future::ready(Ok(()))
        }
    }

    #[tokio::test(start_paused = true)]
    async fn layer_holds_requests_until_tokens_arrive() {
        let count = Arc::new(AtomicUsize::new(0));
        let layer = RateLimitLayer::new(RateLimitConfig { qps: 2.0, burst: 2 }).unwrap();
        let mut svc = layer.layer(Count(count.clone()));
        let sender = tokio::spawn(async move {
            for _ in 0..6 {
                svc.ready().await.unwrap().call(()).await.unwrap();
            }
        });
        tokio::task::yield_now().await;
        assert_eq!(
            count.load(Ordering::SeqCst),
            2,
            "the burst goes out at once"
        );
        tokio::time::advance(Duration::from_millis(500)).await;
        tokio::task::yield_now().await;
        assert_eq!(count.load(Ordering::SeqCst), 3);
        tokio::time::advance(Duration::from_millis(1000)).await;
        tokio::task::yield_now().await;
        assert_eq!(count.load(Ordering::SeqCst), 5);
        sender.await.unwrap();
        assert_eq!(count.load(Ordering::SeqCst), 6);
    }

    #[tokio::test(start_paused = true)]
    async fn clones_share_one_budget() {
        let count = Arc::new(AtomicUsize::new(0));
        let layer = RateLimitLayer::new(RateLimitConfig { qps: 1.0, burst: 1 }).unwrap();
        let a = layer.layer(Count(count.clone()));
        let b = a.clone();
        let ta = tokio::spawn(a.oneshot(()));
        let tb = tokio::spawn(b.oneshot(()));
        tokio::task::yield_now().await;
        tokio::task::yield_now().await;
        assert_eq!(count.load(Ordering::SeqCst), 1);
        tokio::time::advance(Duration::from_secs(1)).await;
        ta.await.unwrap().unwrap();
        tb.await.unwrap().unwrap();
        assert_eq!(count.load(Ordering::SeqCst), 2);
    }

    proptest! {
        /// Over any schedule of requests, the number allowed to go out by
        /// time T never exceeds burst + qps * T.
        #[test]
        fn never_exceeds_burst_plus_rate(
            qps in 0.5f64..200.0,
            burst in 1u32..50,
            gaps_ms in proptest::collection::vec(0u64..300, 1..200),
        ) {
            let start = Instant::now();
            let mut bucket = Bucket::new(RateLimitConfig { qps, burst }, start);
            let mut now = start;
            let mut release_times = Vec::new();
            for gap in gaps_ms {
                now += Duration::from_millis(gap);
                let wait = bucket.reserve(now);
                release_times.push((now + wait).duration_since(start).as_secs_f64());
            }
            release_times.sort_by(f64::total_cmp);
            for (i, t) in release_times.iter().enumerate() {
                let allowed = f64::from(burst) + qps * t;
                // 1e-6 absorbs float rounding of Duration conversions.
                prop_assert!((i + 1) as f64 <= allowed + 1e-6, "{} sent by {t}s, allowed {allowed}", i + 1);
            }
        }

        /// Requests released in order: a later reservation never goes out
        /// before an earlier one.
        #[test]
        fn reservations_are_fifo(gaps_ms in proptest::collection::vec(0u64..50, 1..100)) {
            let start = Instant::now();
            let mut bucket = Bucket::new(RateLimitConfig { qps: 5.0, burst: 2 }, start);
            let mut now = start;
            let mut last = start;
            for gap in gaps_ms {
                now += Duration::from_millis(gap);
                let at = now + bucket.reserve(now);
                prop_assert!(at >= last);
                last = at;
            }
        }
    }
}
