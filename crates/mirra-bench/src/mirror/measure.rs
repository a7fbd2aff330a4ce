//! Measuring the mirror scenario: counting copies as they appear, waiting for
//! the cluster to settle, write-latency buckets and their quantiles, memory.
//!
//! This module must NOT create or change the objects a phase measures:
//! [`super::run`] does.

use super::*;

/// Watches mirra's copies without keeping them: counts copies per namespace
/// and remembers when each namespace reached `want` copies, and when each
/// copy of the edited item showed the version an edit waits for.
#[derive(Default)]
pub(super) struct CopyCounter {
    pub(super) per_ns: BTreeMap<String, usize>,
    pub(super) complete_at: BTreeMap<String, Instant>,
    pub(super) total: usize,
    /// The version of the edited item (sc00-item0) an item edit waits for.
    pub(super) edit_version: String,
    /// Namespaces whose copy of the edited item shows `edit_version`, and
    /// when the watch first saw it: an edit's time is taken from these
    /// instants, not from the bench's polling of the counter.
    pub(super) edited: BTreeMap<String, Instant>,
}

impl CopyCounter {
    /// Starts counting the copies that show `version` of the edited item.
    pub(super) fn expect_edit(&mut self, version: u32) {
        self.edit_version = version.to_string();
        self.edited.clear();
    }

    /// When the last of `copies` edited copies was seen, once all were.
    pub(super) fn edit_seen_by(&self, copies: usize) -> Option<Instant> {
        if self.edited.len() < copies {
            return None;
        }
        self.edited.values().max().copied()
    }
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
                    if name == "sc00-item0"
                        && !c.edit_version.is_empty()
                        && version.is_some_and(|v| *v == c.edit_version)
                    {
                        c.edited.entry(ns.clone()).or_insert_with(Instant::now);
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

/// For each namespace created at the instant `created_at` holds, the time
/// until the counter saw all its copies, shortest first (namespaces not
/// complete yet are left out).
pub(super) fn completion_latencies(
    counter: &Arc<Mutex<CopyCounter>>,
    created_at: &BTreeMap<String, Instant>,
) -> anyhow::Result<Vec<Duration>> {
    let mut latencies: Vec<Duration> = {
        let cc = counter.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
        created_at
            .iter()
            .filter_map(|(ns, at)| {
                cc.complete_at
                    .get(ns)
                    .map(|d| d.saturating_duration_since(*at))
            })
            .collect()
    };
    latencies.sort();
    Ok(latencies)
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

/// One item edit as measured.
#[derive(Debug, Clone, Copy)]
pub(super) struct Edit {
    /// Until the last edited copy was seen.
    pub(super) time: Duration,
    /// CPU time used meanwhile by this process (the controller or the
    /// strategy, and the bench's watch) and by the sandbox's, when both
    /// could be read.
    pub(super) cpu: Option<(Duration, Duration)>,
}

/// Times one item edit: `write` changes the edited item to `version`, and
/// the edit took until the bench's watch had seen `copies` copies showing
/// it (the last one's arrival, as the counter recorded it). `sandbox` is
/// the sandbox's process, whose CPU time is counted too.
pub(super) async fn timed_edit<F, Fut>(
    counter: &Arc<Mutex<CopyCounter>>,
    version: u32,
    copies: usize,
    sandbox: Option<u32>,
    write: F,
) -> anyhow::Result<Edit>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    counter
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .expect_edit(version);
    let cpu = || Some((cpu_time(std::process::id())?, cpu_time(sandbox?)?));
    let cpu_before = cpu();
    let t = Instant::now();
    write().await?;
    let mut seen = None;
    wait_until("item edit seen", Duration::from_secs(60), || {
        seen = counter.lock().ok().and_then(|c| c.edit_seen_by(copies));
        seen.is_some()
    })
    .await?;
    let cpu = cpu_before
        .zip(cpu())
        .map(|((b0, s0), (b1, s1))| (b1.saturating_sub(b0), s1.saturating_sub(s0)));
    Ok(Edit {
        time: seen.map_or(Duration::ZERO, |at| at.saturating_duration_since(t)),
        cpu,
    })
}

/// The item edits of one run, each as [`timed_edit`] measures it and the
/// requests from its start until the cluster settled after it.
pub(super) struct Edits {
    pub(super) edits: Vec<Edit>,
    pub(super) requests: Vec<BTreeMap<String, u64>>,
    /// From the first edit's start until its last request (trailing
    /// status writes included).
    pub(super) first_done: Duration,
}

impl Edits {
    /// The median edit time: the phase's figure.
    pub(super) fn median(&self) -> Duration {
        median(&self.edits.iter().map(|e| e.time).collect::<Vec<_>>())
    }

    /// The first edit's requests: the phase's counts.
    pub(super) fn first_requests(&self) -> BTreeMap<String, u64> {
        self.requests.first().cloned().unwrap_or_default()
    }
}

/// One side's series of item edits (mirra's or the strategy's), made one
/// at a time so that the two sides' edits can alternate: each edit is
/// timed by [`timed_edit`], then its sandbox settles before anything else
/// runs, so an edit's requests are its own.
pub(super) struct EditSeries {
    out: Edits,
    /// The sandbox's counters when the next edit starts.
    before: BTreeMap<String, u64>,
    /// Copies every edit changes.
    copies: usize,
}

impl EditSeries {
    /// A series of edits of `copies` copies each; `before` are the
    /// sandbox's counters when the first starts.
    pub(super) fn new(copies: usize, before: BTreeMap<String, u64>) -> Self {
        Self {
            out: Edits {
                edits: Vec::new(),
                requests: Vec::new(),
                first_done: Duration::ZERO,
            },
            before,
            copies,
        }
    }

    /// Makes the series' next edit through `write(version)` against
    /// `server`, and waits until that sandbox settled.
    pub(super) async fn next<F, Fut>(
        &mut self,
        server: &Server,
        counter: &Arc<Mutex<CopyCounter>>,
        write: F,
    ) -> anyhow::Result<()>
    where
        F: FnOnce(u32) -> Fut,
        Fut: std::future::Future<Output = anyhow::Result<()>>,
    {
        let e = self.out.edits.len();
        let version = edit_version(e);
        let t = Instant::now();
        let edit = timed_edit(counter, version, self.copies, server.pid(), || {
            write(version)
        })
        .await?;
        let (after, done) = settle_at(server).await?;
        if e == 0 {
            self.out.first_done = done.saturating_duration_since(t);
        }
        self.out.edits.push(edit);
        self.out.requests.push(by_verb(&self.before, &after));
        self.before = after;
        Ok(())
    }

    /// The edits made, and the sandbox's counters after the last.
    pub(super) fn finish(self) -> (Edits, BTreeMap<String, u64>) {
        (self.out, self.before)
    }
}

/// Which side makes the first edit of pair `pair` (from 0) when mirra's
/// and the strategy's edits alternate: mirra in even pairs, the strategy
/// in odd ones, so that neither always runs right after the other's
/// edit (whose trailing work, caches and CPU frequency it would inherit).
pub(super) fn mirra_first(pair: usize) -> bool {
    pair.is_multiple_of(2)
}

/// Of pairs of edit times `(mirra, strategy)`, how many mirra's was at
/// most the strategy's.
pub(super) fn pairs_held(mirra: &[Edit], strategy: &[Edit]) -> usize {
    mirra
        .iter()
        .zip(strategy)
        .filter(|(m, s)| m.time <= s.time)
        .count()
}

/// CPU time process `pid` has used, summed over its threads (from
/// `/proc/PID/task/*/schedstat`, in nanoseconds); `None` where there is no
/// such file (not Linux, or the process is gone). A thread that ends while
/// it is read is left out.
pub(super) fn cpu_time(pid: u32) -> Option<Duration> {
    let mut ns = 0u64;
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).ok()? {
        let Ok(task) = task else { continue };
        let Ok(text) = std::fs::read_to_string(task.path().join("schedstat")) else {
            continue;
        };
        ns += text
            .split_whitespace()
            .next()
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0);
    }
    Some(Duration::from_nanos(ns))
}

/// The median of `times` (the upper one of an even count).
pub(super) fn median(times: &[Duration]) -> Duration {
    let mut sorted = times.to_vec();
    sorted.sort();
    sorted.get(sorted.len() / 2).copied().unwrap_or_default()
}

/// One report line of a run's item edits: each time, the median, the CPU
/// each edit cost, and each edit's requests.
pub(super) fn edits_line(who: &str, run: &Edits) -> String {
    let (edits, requests) = (&run.edits, &run.requests);
    let times: Vec<Duration> = edits.iter().map(|e| e.time).collect();
    let ms = |d: Duration| format!("{:.0}", d.as_secs_f64() * 1000.0);
    let cpu: Option<Vec<(Duration, Duration)>> = edits.iter().map(|e| e.cpu).collect();
    let cpu = cpu.map_or_else(
        || "CPU not read".to_string(),
        |c| {
            let own: Vec<Duration> = c.iter().map(|(o, _)| *o).collect();
            let sandbox: Vec<Duration> = c.iter().map(|(_, s)| *s).collect();
            format!(
                "CPU ms per edit, bench process (controller or strategy, and the bench's watch) {} (median {}), sandbox {} (median {})",
                own.iter().map(|d| ms(*d)).collect::<Vec<_>>().join(", "),
                ms(median(&own)),
                sandbox.iter().map(|d| ms(*d)).collect::<Vec<_>>().join(", "),
                ms(median(&sandbox)),
            )
        },
    );
    format!(
        "{who}: {} s (median {:.3} s; {cpu}; requests {})",
        times
            .iter()
            .map(|t| format!("{:.3}", t.as_secs_f64()))
            .collect::<Vec<_>>()
            .join(", "),
        median(&times).as_secs_f64(),
        requests
            .iter()
            .map(fmt_verbs)
            .collect::<Vec<_>>()
            .join(" / ")
    )
}
