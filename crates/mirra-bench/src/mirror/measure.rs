//! Measuring the mirror scenario: counting copies as they appear, waiting for
//! the cluster to settle, write-latency buckets and their quantiles, memory.
//!
//! This module must NOT create or change the objects a phase measures:
//! [`super::run`] does.

use super::*;

/// Watches mirra's copies without keeping them: counts copies per namespace
/// and remembers when each namespace reached `want` copies.
#[derive(Default)]
pub(super) struct CopyCounter {
    pub(super) per_ns: BTreeMap<String, usize>,
    pub(super) complete_at: BTreeMap<String, Instant>,
    pub(super) total: usize,
    /// Namespaces whose copy of the edited item (sc00-item0) shows version
    /// 2, for the item-edit phase.
    pub(super) edited: std::collections::BTreeSet<String>,
}

pub(super) fn spawn_counter(
    c: &kube::Client,
    want: usize,
) -> (Arc<Mutex<CopyCounter>>, tokio::task::JoinHandle<()>) {
    let counter = Arc::new(Mutex::new(CopyCounter::default()));
    let api: Api<ConfigMap> = Api::all(c.clone());
    let stream = watcher::watcher(api, watcher::Config::default().labels("bench=copy"));
    let cc = counter.clone();
    let task = tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        let mut seen: BTreeMap<(String, String), ()> = BTreeMap::new();
        while let Some(ev) = stream.next().await {
            let Ok(ev) = ev else { continue };
            let mut c = cc.lock().unwrap_or_else(|e| e.into_inner());
            match ev {
                watcher::Event::Apply(o) | watcher::Event::InitApply(o) => {
                    let ns = o.metadata.namespace.clone().unwrap_or_default();
                    let name = o.metadata.name.clone().unwrap_or_default();
                    let version = o.data.as_ref().and_then(|d| d.get("version"));
                    if name == "sc00-item0" && version.is_some_and(|v| v == "2") {
                        c.edited.insert(ns.clone());
                    }
                    if seen.insert((ns.clone(), name), ()).is_none() {
                        c.total += 1;
                        let n = c.per_ns.entry(ns.clone()).or_default();
                        *n += 1;
                        if *n == want {
                            c.complete_at.entry(ns).or_insert_with(Instant::now);
                        }
                    }
                }
                watcher::Event::Delete(o) => {
                    let ns = o.metadata.namespace.clone().unwrap_or_default();
                    let name = o.metadata.name.clone().unwrap_or_default();
                    if seen.remove(&(ns.clone(), name)).is_some() {
                        c.total -= 1;
                        if let Some(n) = c.per_ns.get_mut(&ns) {
                            *n -= 1;
                        }
                    }
                }
                _ => {}
            }
        }
    });
    (counter, task)
}

pub(crate) async fn wait_until(
    what: &str,
    limit: Duration,
    mut f: impl FnMut() -> bool,
) -> anyhow::Result<()> {
    let start = Instant::now();
    while !f() {
        anyhow::ensure!(start.elapsed() < limit, "gave up waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

/// Waits until the request counters stay still for 3 s (longer than the
/// status window), so a phase's figures include its trailing writes.
pub(crate) async fn settle(server: &Server) -> anyhow::Result<BTreeMap<String, u64>> {
    Ok(settle_at(server).await?.0)
}

/// [`settle`], also returning when the counters last moved.
pub(super) async fn settle_at(server: &Server) -> anyhow::Result<(BTreeMap<String, u64>, Instant)> {
    let mut last = server.stats().await?;
    let mut last_moved = Instant::now();
    let mut quiet = Duration::ZERO;
    loop {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let now = server.stats().await?;
        let moved = now
            .iter()
            .any(|(k, v)| !k.starts_with("watch ") && last.get(k) != Some(v));
        if moved {
            quiet = Duration::ZERO;
            last_moved = Instant::now();
        } else {
            quiet += Duration::from_millis(250);
            if quiet >= Duration::from_secs(3) {
                return Ok((now, last_moved));
            }
        }
        last = now;
    }
}

/// Gap between paced namespace creations. 100 ms: ten namespaces a second
/// is far above any real cluster's steady rate, yet leaves each namespace's
/// 40 writes room to finish before the next arrives.
pub(super) const PACE: Duration = Duration::from_millis(100);

/// The cumulative buckets `(le, count)` of the mirror controller's
/// event-to-write histogram, from the registry the controller writes to.
pub(super) fn event_to_write_buckets(registry: &Registry) -> Vec<(String, u64)> {
    let mut text = String::new();
    if mirra_mirror_controller::prometheus_client::encoding::text::encode(&mut text, registry)
        .is_err()
    {
        return Vec::new();
    }
    text.lines()
        .filter(|l| {
            l.starts_with("mirra_event_to_write_seconds_bucket") && l.contains("\"mirror\"")
        })
        .filter_map(|l| {
            let le = l.split("le=\"").nth(1)?.split('"').next()?.to_string();
            let n = l.rsplit(' ').next()?.parse().ok()?;
            Some((le, n))
        })
        .collect()
}

/// The controller's `mirra_errors_total` by class (only non-zero ones).
pub(super) fn write_errors(registry: &Registry) -> Vec<(String, u64)> {
    let mut text = String::new();
    if mirra_mirror_controller::prometheus_client::encoding::text::encode(&mut text, registry)
        .is_err()
    {
        return Vec::new();
    }
    text.lines()
        .filter(|l| l.starts_with("mirra_errors_total{"))
        .filter_map(|l| {
            let class = l.split("class=\"").nth(1)?.split('"').next()?.to_string();
            let n: f64 = l.rsplit(' ').next()?.parse().ok()?;
            (n > 0.0).then_some((class, n as u64))
        })
        .collect()
}

/// Per-bucket difference of two cumulative snapshots (same bucket order).
pub(super) fn bucket_diff(before: &[(String, u64)], after: &[(String, u64)]) -> Vec<(String, u64)> {
    after
        .iter()
        .map(|(le, n)| {
            let b = before.iter().find(|(l, _)| l == le).map_or(0, |(_, n)| *n);
            (le.clone(), n.saturating_sub(b))
        })
        .collect()
}

/// The smallest bucket bound holding quantile `q` of a cumulative histogram.
pub(super) fn bucket_quantile(cumulative: &[(String, u64)], q: f64) -> String {
    let total = cumulative.last().map_or(0, |(_, n)| *n);
    if total == 0 {
        return "-".into();
    }
    let want = (total as f64 * q).ceil() as u64;
    cumulative
        .iter()
        .find(|(_, n)| *n >= want)
        .map_or_else(|| "+Inf".into(), |(le, _)| le.clone())
}

pub(super) fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

pub(super) fn rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
