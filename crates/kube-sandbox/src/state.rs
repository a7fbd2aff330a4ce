//! State shared by every connection: the store behind one async lock, the
//! request counters, the fault rules and the switch that closes watches.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;
use serde_json::{Value, json};

use crate::Config;
use crate::faults::Faults;
use crate::store::Store;

/// Request counts, as `GET /sandbox/stats` reports them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Stats {
    /// `"<verb> <resource>[.<group>][/<subresource>]"` -> count, for
    /// example `"create configmaps"` or
    /// `"watch endpointslices.discovery.k8s.io"`. Requests that name no
    /// resource are counted as `"get <path>"`.
    pub requests: BTreeMap<String, u64>,
    /// Namespace -> the same map, for requests whose URL names a namespace.
    pub namespaces: BTreeMap<String, BTreeMap<String, u64>>,
    /// Watches open now.
    pub open_watches: u64,
    /// Requests refused by authentication or authorization (401, 403;
    /// only with `Config::auth`), by the same keys as `requests`.
    pub refused: BTreeMap<String, u64>,
}

impl Stats {
    /// Count of one key, 0 when absent.
    pub fn get(&self, key: &str) -> u64 {
        self.requests.get(key).copied().unwrap_or(0)
    }

    /// Sum over keys whose verb is one of `verbs`.
    pub fn sum_verbs(&self, verbs: &[&str]) -> u64 {
        self.requests
            .iter()
            .filter(|(k, _)| k.split(' ').next().is_some_and(|v| verbs.contains(&v)))
            .map(|(_, n)| n)
            .sum()
    }

    /// Writes: create, update, patch, delete, deletecollection.
    pub fn writes(&self) -> u64 {
        self.sum_verbs(&["create", "update", "patch", "delete", "deletecollection"])
    }

    /// The difference `self - earlier`, key by key (keys that did not
    /// change are left out).
    pub fn since(&self, earlier: &Stats) -> Stats {
        let diff =
            |now: &BTreeMap<String, u64>, then: &BTreeMap<String, u64>| -> BTreeMap<String, u64> {
                now.iter()
                    .filter_map(|(k, n)| {
                        let d = n.saturating_sub(then.get(k).copied().unwrap_or(0));
                        (d > 0).then(|| (k.clone(), d))
                    })
                    .collect()
            };
        let empty = BTreeMap::new();
        Stats {
            requests: diff(&self.requests, &earlier.requests),
            namespaces: self
                .namespaces
                .iter()
                .map(|(ns, m)| {
                    (
                        ns.clone(),
                        diff(m, earlier.namespaces.get(ns).unwrap_or(&empty)),
                    )
                })
                .filter(|(_, m)| !m.is_empty())
                .collect(),
            open_watches: self.open_watches,
            refused: diff(&self.refused, &earlier.refused),
        }
    }
}

/// Everything the connections share.
pub struct Shared {
    /// The object store. An async lock because watch setup and writes
    /// interleave with awaits in the HTTP layer; every critical section is
    /// short and never awaits I/O.
    pub store: tokio::sync::Mutex<Store>,
    /// Fault rules.
    pub faults: tokio::sync::Mutex<Faults>,
    stats: Mutex<Stats>,
    open_watches: AtomicU64,
    /// Bumped to close every open watch.
    pub watch_closer: tokio::sync::watch::Sender<u64>,
    /// The configuration the sandbox was started with.
    pub config: Config,
    /// The key ServiceAccount tokens are signed with (made at start, so
    /// tokens do not survive a restart).
    pub signer: crate::sa_token::Signer,
    /// Seconds added to the wall clock for ServiceAccount tokens.
    token_clock_offset: std::sync::atomic::AtomicI64,
}

/// Creates the bootstrap policy's RBAC objects that are missing (a state
/// file may hold them, edited, from an earlier run: those are kept).
fn bootstrap_rbac(store: &mut Store) -> std::io::Result<()> {
    let opts = crate::store::WriteOptions {
        manager: "kube-apiserver".into(),
        ..Default::default()
    };
    for (plural, object) in crate::auth::bootstrap_policy() {
        let Some(res) = store
            .registry()
            .get("rbac.authorization.k8s.io", "v1", plural)
        else {
            return Err(std::io::Error::other(format!("{plural} not served")));
        };
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        if store.get(&res, "", name).is_ok() {
            continue;
        }
        store
            .create(&res, "", object, &opts)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
    }
    Ok(())
}

impl Shared {
    /// New shared state.
    pub fn new(config: Config) -> std::io::Result<Self> {
        let (watch_closer, _) = tokio::sync::watch::channel(0);
        let mut store = match &config.state_file {
            Some(path) if path.exists() => load_state(path, &config)?,
            _ => Store::new(config.store.clone()),
        };
        if config.auth.is_some() {
            bootstrap_rbac(&mut store)?;
        }
        Ok(Shared {
            store: tokio::sync::Mutex::new(store),
            faults: tokio::sync::Mutex::new(Faults::default()),
            stats: Mutex::new(Stats::default()),
            open_watches: AtomicU64::new(0),
            watch_closer,
            config,
            signer: crate::sa_token::Signer::new().map_err(std::io::Error::other)?,
            token_clock_offset: std::sync::atomic::AtomicI64::new(0),
        })
    }

    /// The time ServiceAccount tokens are issued and reviewed at, in
    /// seconds since the epoch: the wall clock plus what tests advanced.
    pub fn token_now(&self) -> i64 {
        chrono::Utc::now().timestamp()
            + self
                .token_clock_offset
                .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Moves the token clock forward.
    pub fn advance_token_clock(&self, by: std::time::Duration) {
        let secs = i64::try_from(by.as_secs()).unwrap_or(i64::MAX);
        self.token_clock_offset
            .fetch_add(secs, std::sync::atomic::Ordering::Relaxed);
    }

    /// Writes the store to the state file, if there is one: to a
    /// temporary file first, renamed over the old state, so a crash in
    /// between leaves the previous state whole.
    pub async fn save_state(&self) -> std::io::Result<()> {
        let Some(path) = &self.config.state_file else {
            return Ok(());
        };
        let snapshot = self.store.lock().await.snapshot();
        let bytes = serde_json::to_vec(&snapshot).map_err(std::io::Error::other)?;
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, bytes)?;
        std::fs::rename(&tmp, path)
    }

    /// Counts one request.
    pub fn count(&self, key: &str, namespace: Option<&str>) {
        let mut s = self.stats.lock().unwrap_or_else(|p| p.into_inner());
        *s.requests.entry(key.to_string()).or_default() += 1;
        if let Some(ns) = namespace {
            *s.namespaces
                .entry(ns.to_string())
                .or_default()
                .entry(key.to_string())
                .or_default() += 1;
        }
    }

    /// Counts a request refused by authentication or authorization.
    pub fn count_refused(&self, key: &str) {
        let mut s = self.stats.lock().unwrap_or_else(|p| p.into_inner());
        *s.refused.entry(key.to_string()).or_default() += 1;
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> Stats {
        let mut s = self.stats.lock().unwrap_or_else(|p| p.into_inner()).clone();
        s.open_watches = self.open_watches.load(Ordering::Relaxed);
        s
    }

    /// Zeroes the counters.
    pub fn reset_stats(&self) {
        *self.stats.lock().unwrap_or_else(|p| p.into_inner()) = Stats::default();
    }

    /// The stats as JSON.
    pub fn stats_json(&self) -> Value {
        serde_json::to_value(self.stats()).unwrap_or(json!({}))
    }

    /// A watch opened.
    pub fn watch_opened(&self) {
        self.open_watches.fetch_add(1, Ordering::Relaxed);
    }

    /// A watch closed.
    pub fn watch_closed(&self) {
        self.open_watches.fetch_sub(1, Ordering::Relaxed);
    }

    /// Closes every open watch (clients see the stream end and resume).
    pub fn close_watches(&self) {
        self.watch_closer.send_modify(|g| *g += 1);
    }
}

/// The store saved in `path`; a clear error naming the file when it is not
/// a state this sandbox wrote.
fn load_state(path: &std::path::Path, config: &Config) -> std::io::Result<Store> {
    let bad = |why: String| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("state file {}: {why}", path.display()),
        )
    };
    let bytes = std::fs::read(path)?;
    let snapshot: serde_json::Value =
        crate::json::parse(&bytes).map_err(|e| bad(format!("not JSON: {e}")))?;
    Store::restore(config.store.clone(), &snapshot).map_err(bad)
}
