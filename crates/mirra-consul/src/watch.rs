//! Watches: "give me every new version of X", as a stream built on blocking
//! queries.
//!
//! ```text
//!   loop:
//!     wait for min_interval since the last request (and backoff after errors)
//!     GET ...?index=<next>&wait=<wait>
//!       ok  -> next = next_index(next, returned)
//!              yield only if the index moved since the last answer
//!       err -> yield the error, back off (jittered, exponential), go on
//! ```
//!
//! A watch never ends by itself; drop the stream to stop it. It must NOT
//! swallow errors (the consumer sees each one, for metrics and readiness)
//! and must NOT yield an unchanged value (consumers re-plan on each item).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use futures::Stream;
use tokio::time::Instant;

use crate::blocking::{QueryOptions, Versioned, WatchOptions, index_moved, next_index};
use crate::client::{BodyParser, Client};
use crate::error::Error;
use crate::types::{CatalogServiceInstance, HealthCheck, NodeServices, ServiceTags};

type ReadFuture<T> = Pin<Box<dyn Future<Output = Result<Versioned<T>, Error>> + Send>>;

type Fetch<T> = Arc<dyn Fn(QueryOptions) -> ReadFuture<T> + Send + Sync>;

/// Which whole-node read a parsed watch repeats.
#[derive(Clone, Copy, Debug)]
enum NodeRead {
    /// `/v1/catalog/node-services/:node`.
    Services,
    /// `/v1/health/node/:node`.
    Checks,
}

/// Holds a watch's requests back while its value is `true`, for a caller
/// that knows the answers would only show its own writes (a syncer writing
/// a batch): a request in flight when the pause begins is dropped (Consul
/// stops working on a blocking query whose client went away) and sent
/// again, with the same index, once the pause ends. A pause longer than
/// `max` is ignored until it ends, so that a long stream of writes cannot
/// hide other writers' changes for long.
#[derive(Clone, Debug)]
pub struct Pause {
    paused: tokio::sync::watch::Receiver<bool>,
    max: std::time::Duration,
}

impl Pause {
    /// A pause following `paused`, honoured for at most `max` at a time.
    pub fn new(paused: tokio::sync::watch::Receiver<bool>, max: std::time::Duration) -> Self {
        Self { paused, max }
    }

    /// Waits until the pause ends, or `max` after it began; returns whether
    /// the watch is still paused (then a new pause is not awaited).
    async fn until_resumed(&mut self) -> bool {
        if !*self.paused.borrow_and_update() {
            return false;
        }
        let resumed = self.paused.wait_for(|p| !*p);
        tokio::time::timeout(self.max, resumed).await.is_err()
    }

    /// Resolves when a pause begins (never, if the sender is gone).
    async fn begins(&mut self) {
        if self.paused.wait_for(|p| *p).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

struct State<T> {
    fetch: Fetch<T>,
    client: Client,
    opts: WatchOptions,
    pause: Option<Pause>,
    /// Index to send with the next request (0: non-blocking read).
    send_index: u64,
    /// Index of the last answer, to tell news from a wait that just ended.
    last_seen: Option<u64>,
    /// Consecutive failures, for the backoff.
    failures: u32,
    /// Earliest time the next request may start.
    not_before: Option<Instant>,
}

/// Builds a watch over any blocking read.
fn watch<T: Send + 'static>(
    client: Client,
    opts: WatchOptions,
    pause: Option<Pause>,
    fetch: Fetch<T>,
) -> impl Stream<Item = Result<Versioned<T>, Error>> + Send + 'static {
    let state = State {
        fetch,
        client,
        opts,
        pause,
        send_index: 0,
        last_seen: None,
        failures: 0,
        not_before: None,
    };
    futures::stream::unfold(state, |mut st| async move {
        loop {
            let overdue = match &mut st.pause {
                Some(p) => p.until_resumed().await,
                None => false,
            };
            if let Some(t) = st.not_before {
                tokio::time::sleep_until(t).await;
            }
            let started = Instant::now();
            st.not_before = Some(started + st.opts.min_interval);

            let mut q = st.opts.query.clone();
            q.index = (st.send_index > 0).then_some(st.send_index);
            q.wait = Some(st.opts.wait);
            let request = (st.fetch)(q);
            let answer = match &mut st.pause {
                Some(p) if !overdue => tokio::select! {
                    a = request => Some(a),
                    () = p.begins() => None,
                },
                _ => Some(request.await),
            };
            let Some(answer) = answer else {
                // Paused while in flight: send it again when resumed.
                st.not_before = None;
                continue;
            };
            match answer {
                Ok(v) => {
                    st.failures = 0;
                    let moved = index_moved(st.last_seen, v.index);
                    st.send_index = next_index(st.send_index, v.index);
                    st.last_seen = Some(v.index);
                    if moved {
                        return Some((Ok(v), st));
                    }
                }
                Err(e) => {
                    st.failures = st.failures.saturating_add(1);
                    let delay = st.client.retry_policy().jittered_delay(st.failures);
                    st.not_before = Some(Instant::now() + delay.max(st.opts.min_interval));
                    return Some((Err(e), st));
                }
            }
        }
    })
}

impl Client {
    /// Every new version of `/v1/catalog/node-services/:node`: the first read
    /// at once, then one item each time the catalog index moves. Errors are
    /// yielded and followed by a jittered backoff; the stream goes on until
    /// dropped.
    pub fn watch_node_services(
        &self,
        node: impl Into<String>,
        opts: WatchOptions,
    ) -> impl Stream<Item = Result<Versioned<NodeServices>, Error>> + Send + 'static {
        self.named_watch(node.into(), opts, None, |client, node, q| {
            Box::pin(async move { client.node_services(&node, &q).await })
        })
    }

    /// Every new version of `/v1/health/node/:node`: the checks of one node
    /// with their status (see [`Client::watch_node_services`] for the
    /// semantics).
    pub fn watch_health_node(
        &self,
        node: impl Into<String>,
        opts: WatchOptions,
    ) -> impl Stream<Item = Result<Versioned<Vec<HealthCheck>>, Error>> + Send + 'static {
        self.named_watch(node.into(), opts, None, |client, node, q| {
            Box::pin(async move { client.health_node(&node, &q).await })
        })
    }

    /// [`Client::watch_node_services`] with each body parsed by `parse` as
    /// it arrives (see [`Client::node_services_parsed`]), held back while
    /// `pause` says so.
    pub fn watch_node_services_parsed<T: Send + 'static>(
        &self,
        node: impl Into<String>,
        opts: WatchOptions,
        pause: Option<Pause>,
        parse: BodyParser<T>,
    ) -> impl Stream<Item = Result<Versioned<T>, Error>> + Send + 'static {
        self.parsed_watch(node.into(), opts, pause, parse, NodeRead::Services)
    }

    /// [`Client::watch_health_node`] with each body parsed by `parse` as it
    /// arrives, held back while `pause` says so.
    pub fn watch_health_node_parsed<T: Send + 'static>(
        &self,
        node: impl Into<String>,
        opts: WatchOptions,
        pause: Option<Pause>,
        parse: BodyParser<T>,
    ) -> impl Stream<Item = Result<Versioned<T>, Error>> + Send + 'static {
        self.parsed_watch(node.into(), opts, pause, parse, NodeRead::Checks)
    }

    /// A watch of one whole-node read whose bodies `parse` reads as they
    /// arrive.
    fn parsed_watch<T: Send + 'static>(
        &self,
        node: String,
        opts: WatchOptions,
        pause: Option<Pause>,
        parse: BodyParser<T>,
        read: NodeRead,
    ) -> impl Stream<Item = Result<Versioned<T>, Error>> + Send + 'static {
        let node: Arc<str> = Arc::from(node);
        let client = self.clone();
        let fetch: Fetch<T> = Arc::new(move |q| {
            let (client, node, parse) = (client.clone(), node.clone(), parse.clone());
            Box::pin(async move {
                match read {
                    NodeRead::Services => client.node_services_parsed(&node, &q, &parse).await,
                    NodeRead::Checks => client.health_node_parsed(&node, &q, &parse).await,
                }
            })
        });
        watch(self.clone(), opts, pause, fetch)
    }

    /// Every new version of `/v1/catalog/service/:name` (see
    /// [`Client::watch_node_services`] for the semantics).
    pub fn watch_service(
        &self,
        name: impl Into<String>,
        opts: WatchOptions,
    ) -> impl Stream<Item = Result<Versioned<Vec<CatalogServiceInstance>>, Error>> + Send + 'static
    {
        self.named_watch(name.into(), opts, None, |client, name, q| {
            Box::pin(async move { client.service(&name, &q).await })
        })
    }

    /// A watch of one read keyed by a node or service name.
    fn named_watch<T: Send + 'static>(
        &self,
        name: String,
        opts: WatchOptions,
        pause: Option<Pause>,
        read: fn(Client, Arc<str>, QueryOptions) -> ReadFuture<T>,
    ) -> impl Stream<Item = Result<Versioned<T>, Error>> + Send + 'static {
        let name: Arc<str> = Arc::from(name);
        let client = self.clone();
        let fetch: Fetch<T> = Arc::new(move |q| read(client.clone(), name.clone(), q));
        watch(self.clone(), opts, pause, fetch)
    }

    /// Every new version of `/v1/catalog/services` (see
    /// [`Client::watch_node_services`] for the semantics).
    pub fn watch_services(
        &self,
        opts: WatchOptions,
    ) -> impl Stream<Item = Result<Versioned<ServiceTags>, Error>> + Send + 'static {
        let client = self.clone();
        let fetch: Fetch<ServiceTags> = Arc::new(move |q| {
            let client = client.clone();
            Box::pin(async move { client.services(&q).await })
        });
        watch(self.clone(), opts, None, fetch)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::time::Instant;

    use super::Pause;

    const MAX: Duration = Duration::from_secs(5);

    /// Not paused: the read goes out at once.
    #[tokio::test(start_paused = true)]
    async fn an_unpaused_read_does_not_wait() {
        let (_tx, rx) = tokio::sync::watch::channel(false);
        let mut pause = Pause::new(rx, MAX);
        let start = Instant::now();
        assert!(!pause.until_resumed().await);
        assert_eq!(start.elapsed(), Duration::ZERO);
    }

    /// A pause that ends early lets the read go out when it ends.
    #[tokio::test(start_paused = true)]
    async fn a_read_waits_until_the_pause_ends() {
        let (tx, rx) = tokio::sync::watch::channel(true);
        let mut pause = Pause::new(rx, MAX);
        let start = Instant::now();
        let resume = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(2)).await;
            tx.send_replace(false);
            tx
        });
        assert!(!pause.until_resumed().await, "resumed, not timed out");
        assert_eq!(start.elapsed(), Duration::from_secs(2));
        drop(resume.await);
    }

    /// A pause longer than `max` is honoured for `max` only: a long stream
    /// of writes cannot keep third-party changes unseen.
    #[tokio::test(start_paused = true)]
    async fn a_pause_holds_a_read_back_for_at_most_max() {
        let (_tx, rx) = tokio::sync::watch::channel(true);
        let mut pause = Pause::new(rx, MAX);
        let start = Instant::now();
        assert!(pause.until_resumed().await, "still paused");
        assert_eq!(start.elapsed(), MAX);
    }
}
