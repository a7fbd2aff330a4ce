//! The mirror controller scenario (see BENCHMARKS.md): N namespaces, 20
//! SyncConfigs of 2 items each, reconciled by mirra (in this process) and
//! by a re-implementation of espejo's strategy (every namespace event
//! re-runs every SyncConfig for that namespace with a live GET per item
//! and a PUT when different; every SyncConfig fully re-synced every 10 s),
//! each against its own fresh kube-sandbox. mirra's phases up to the item
//! edits run first, then the strategy's; the two sides' item edits
//! alternate, pair by pair, so that both meet the same machine; then each
//! side's idle phase.
//!
//! The sandbox runs in its own process when `--sandbox-bin` (default: the
//! `mirra` built next to this binary) exists, so that this process's RSS
//! growth is the controller's; otherwise in-process, and RSS is not
//! reported.
//!
//! Usage: see `mirra-bench --help`; with `--json-out`, mirra's figures are
//! also written to FILE as JSON (for `cost-curve`). What this
//! module must NOT do: gate anything on time; it only measures and prints.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use kube::runtime::watcher;
use mirra_mirror_controller::mirra_runtime::{Metrics, Readiness, ReadyFlag};
use mirra_mirror_controller::prometheus_client::registry::Registry;
use mirra_mirror_controller::tokio_util::sync::CancellationToken;
use mirra_mirror_controller::{Settings, WatchScope};
use serde_json::json;

use crate::rss_kib;

mod espejo;
mod measure;

use espejo::*;
pub(crate) use measure::*;

/// SyncConfigs in the scenario, as the issue names.
const CONFIGS: usize = 20;
/// Items per SyncConfig, as the issue names.
const ITEMS: usize = 2;
/// espejo's default `--reconcile-interval`.
const ESPEJO_INTERVAL: Duration = Duration::from_secs(10);
/// Concurrent requests of the espejo baseline: espejo's controller-runtime
/// default of one worker per controller would be far slower; 16 keeps both
/// cores busy so its time figures are not unfairly bad.
const BASELINE_CONCURRENCY: usize = 16;
/// Where the SyncConfigs live.
pub(crate) const OPS: &str = "ops";

struct Args {
    namespaces: usize,
    events: usize,
    idle: Duration,
    sandbox_bin: String,
    skip_baseline: bool,
    perf_dir: Option<std::path::PathBuf>,
    json_out: Option<std::path::PathBuf>,
    /// Item edits timed (the median is the figure).
    edits: usize,
    /// The controller's `--workers`; `None`: its default.
    workers: Option<usize>,
    /// Seconds between the verification passes of the controller the
    /// idle phase restarts; 0: none. The phases before it run with the
    /// controller's default (300 s: no pass within them).
    verify_secs: u64,
}

fn parse(args: Vec<String>) -> anyhow::Result<Args> {
    let mut out = Args {
        namespaces: 1000,
        events: 100,
        idle: Duration::from_secs(30),
        sandbox_bin: crate::default_sandbox_bin(),
        skip_baseline: false,
        perf_dir: None,
        json_out: None,
        edits: 5,
        workers: None,
        verify_secs: 5,
    };
    let mut it = args.into_iter();
    while let Some(flag) = it.next() {
        if flag == "--skip-baseline" {
            out.skip_baseline = true;
            continue;
        }
        let value = it.next().with_context(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--namespaces" => out.namespaces = value.parse()?,
            "--events" => out.events = value.parse()?,
            "--idle-secs" => out.idle = Duration::from_secs(value.parse()?),
            "--sandbox-bin" => out.sandbox_bin = value,
            "--perf-dir" => out.perf_dir = Some(value.into()),
            "--json-out" => out.json_out = Some(value.into()),
            "--edits" => out.edits = value.parse()?,
            "--workers" => out.workers = Some(value.parse()?),
            "--verify-secs" => out.verify_secs = value.parse()?,
            other => anyhow::bail!("unknown flag {other}"),
        }
    }
    anyhow::ensure!(
        out.events <= out.namespaces,
        "--events must be <= --namespaces"
    );
    anyhow::ensure!(out.edits >= 1, "--edits must be at least 1");
    anyhow::ensure!(out.workers != Some(0), "--workers must be at least 1");
    Ok(out)
}

/// A sandbox in its own process or in this one.
pub(crate) enum Server {
    External {
        child: std::process::Child,
        url: String,
    },
    InProcess(kube_sandbox::Sandbox),
}

impl Server {
    pub(crate) async fn start(bin: &str) -> anyhow::Result<Server> {
        if std::path::Path::new(bin).exists() {
            let (child, url) = crate::spawn_kube_sandbox(bin, "10000")?;
            Ok(Server::External { child, url })
        } else {
            Ok(Server::InProcess(
                kube_sandbox::Sandbox::start(kube_sandbox::Config::default()).await?,
            ))
        }
    }

    /// The sandbox's process id, when it runs in its own process.
    pub(crate) fn pid(&self) -> Option<u32> {
        match self {
            Server::External { child, .. } => Some(child.id()),
            Server::InProcess(_) => None,
        }
    }

    pub(crate) fn url(&self) -> String {
        match self {
            Server::External { url, .. } => url.clone(),
            Server::InProcess(sb) => sb.url(),
        }
    }

    pub(crate) fn external(&self) -> bool {
        matches!(self, Server::External { .. })
    }

    pub(crate) async fn stats(&self) -> anyhow::Result<BTreeMap<String, u64>> {
        match self {
            Server::InProcess(sb) => Ok(sb.stats().requests),
            Server::External { url, .. } => {
                let v: serde_json::Value = reqwest::get(format!("{url}/sandbox/stats"))
                    .await?
                    .json()
                    .await?;
                Ok(serde_json::from_value(v["requests"].clone())?)
            }
        }
    }

    pub(crate) fn stop(self) {
        if let Server::External { mut child, .. } = self {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Requests by verb between two snapshots.
pub(crate) fn by_verb(
    before: &BTreeMap<String, u64>,
    after: &BTreeMap<String, u64>,
) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for (k, n) in after {
        let d = n.saturating_sub(before.get(k).copied().unwrap_or(0));
        if d > 0 {
            let verb = k.split(' ').next().unwrap_or_default().to_string();
            *out.entry(verb).or_default() += d;
        }
    }
    out
}

pub(crate) fn fmt_verbs(v: &BTreeMap<String, u64>) -> String {
    if v.is_empty() {
        return "0".into();
    }
    v.iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

pub(crate) fn total(v: &BTreeMap<String, u64>, skip_watch: bool) -> u64 {
    v.iter()
        .filter(|(k, _)| !skip_watch || k.as_str() != "watch")
        .map(|(_, n)| n)
        .sum()
}

pub(crate) fn client(url: &str) -> anyhow::Result<kube::Client> {
    Ok(kube::Client::try_from(kube::Config::new(url.parse()?))?)
}

/// A mirror controller running in this process, with the registry its
/// metrics go to and its readiness.
pub(crate) struct RunningMirror {
    pub(crate) token: CancellationToken,
    pub(crate) task: tokio::task::JoinHandle<Result<(), mirra_mirror_controller::ControllerError>>,
    pub(crate) registry: Registry,
    pub(crate) ready: ReadyFlag,
}

/// Starts a mirror controller with `settings` against the sandbox at `url`.
pub(crate) fn spawn_mirror(url: &str, settings: Settings) -> anyhow::Result<RunningMirror> {
    let mut registry = Registry::default();
    let metrics = Metrics::register(&mut registry);
    let ready = Readiness::new().register("mirror");
    let token = CancellationToken::new();
    let task = tokio::spawn(mirra_mirror_controller::run(
        client(url)?,
        settings,
        ready.clone(),
        metrics,
        token.clone(),
    ));
    Ok(RunningMirror {
        token,
        task,
        registry,
        ready,
    })
}

/// Starts a mirror controller honouring `ops` against the sandbox at
/// `url`, with a verification pass every `verify` (none when `None`).
pub(crate) fn start_mirror(
    url: &str,
    verify: Option<Duration>,
) -> anyhow::Result<(
    CancellationToken,
    tokio::task::JoinHandle<Result<(), mirra_mirror_controller::ControllerError>>,
)> {
    let mut settings = Settings::new(WatchScope::Namespaces([OPS.to_string()].into()));
    settings.verify_interval = verify;
    let running = spawn_mirror(url, settings)?;
    Ok((running.token, running.task))
}

pub(crate) fn sc_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("sync.appuio.ch", "v1alpha1", "SyncConfig"),
        "syncconfigs",
    )
}

/// The version the `e`-th item edit (from 0) gives the edited item: the
/// items start at 1.
fn edit_version(e: usize) -> u32 {
    u32::try_from(e).map_or(u32::MAX, |e| e.saturating_add(2))
}

fn item(config: usize, item: usize, version: u32) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": format!("sc{config:02}-item{item}"), "labels": {"bench": "copy"}},
           "data": {"namespace": "${PROJECT_NAME}", "version": version.to_string()}})
}

pub(crate) fn ns_name(i: usize) -> String {
    format!("ns-{i:04}")
}

/// Creates the SyncConfig CRD.
pub(crate) async fn create_crd(c: &kube::Client) -> anyhow::Result<()> {
    Api::<CustomResourceDefinition>::all(c.clone())
        .create(
            &PostParams::default(),
            &mirra_mirror_controller::mirra_mirror::crd(),
        )
        .await?;
    Ok(())
}

/// What every mirror scenario starts from: the CRD (when `with_crd`), the
/// namespaces `ns-0000`... (labelled `bench=yes`), then `ops`.
pub(crate) async fn create_cluster(
    c: &kube::Client,
    namespaces: usize,
    with_crd: bool,
) -> anyhow::Result<()> {
    if with_crd {
        create_crd(c).await?;
    }
    create_namespaces(c, (0..namespaces).map(ns_name).collect()).await?;
    create_namespace(c, OPS, false).await
}

/// Creates the CRD, the namespaces (labelled `bench=yes`), `ops` and the
/// SyncConfigs (selecting `bench=yes`).
async fn setup(c: &kube::Client, namespaces: usize, with_crd: bool) -> anyhow::Result<()> {
    create_cluster(c, namespaces, with_crd).await?;
    if with_crd {
        let api: Api<DynamicObject> = Api::namespaced_with(c.clone(), OPS, &sc_resource());
        for j in 0..CONFIGS {
            let obj: DynamicObject = serde_json::from_value(json!({
                "apiVersion": "sync.appuio.ch/v1alpha1", "kind": "SyncConfig",
                "metadata": {"name": format!("sc{j:02}"), "namespace": OPS},
                "spec": {"namespaceSelector": {"labelSelector": {"matchLabels": {"bench": "yes"}}},
                         "syncItems": (0..ITEMS).map(|k| item(j, k, 1)).collect::<Vec<_>>()},
            }))?;
            api.create(&PostParams::default(), &obj).await?;
        }
    }
    Ok(())
}

pub(crate) async fn create_namespace(
    c: &kube::Client,
    name: &str,
    selected: bool,
) -> anyhow::Result<()> {
    let labels = if selected {
        json!({"bench": "yes"})
    } else {
        json!({})
    };
    Api::<Namespace>::all(c.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}}))?,
        )
        .await?;
    Ok(())
}

/// How a report names where the sandbox ran.
pub(crate) fn sandbox_kind(external: bool) -> &'static str {
    if external {
        "separate process (`mirra sandbox kube`)"
    } else {
        "in-process"
    }
}

pub(crate) async fn create_namespaces(c: &kube::Client, names: Vec<String>) -> anyhow::Result<()> {
    let results: Vec<anyhow::Result<()>> = futures::stream::iter(names)
        .map(|n| async move { create_namespace(c, &n, true).await })
        .buffer_unordered(16)
        .collect()
        .await;
    results.into_iter().collect()
}

struct Phase {
    name: String,
    time: Duration,
    requests: BTreeMap<String, u64>,
}

/// mirra's next item edit: the bench changes the first item of `sc00`.
async fn mirra_edit(
    series: &mut EditSeries,
    server: &Server,
    counter: &Arc<Mutex<CopyCounter>>,
    sc_api: &Api<DynamicObject>,
) -> anyhow::Result<()> {
    series
        .next(server, counter, |version| async move {
            sc_api
                .patch(
                    "sc00",
                    &PatchParams::default(),
                    &Patch::Merge(
                        json!({"spec": {"syncItems": [item(0, 0, version), item(0, 1, 1)]}}),
                    ),
                )
                .await?;
            Ok(())
        })
        .await
}

/// Runs the scenario.
pub async fn run(args: Vec<String>) -> anyhow::Result<()> {
    let args = parse(args)?;
    let n = args.namespaces;
    let copies = n * CONFIGS * ITEMS;
    let limit = Duration::from_secs(600);

    // ---- mirra ----
    let server = Server::start(&args.sandbox_bin).await?;
    let url = server.url();
    let c = client(&url)?;
    setup(&c, n, true).await?;
    let (counter, counter_task) = spawn_counter(&c, CONFIGS * ITEMS);
    let count = |cc: &Arc<Mutex<CopyCounter>>| cc.lock().map(|c| c.total).unwrap_or(0);
    // The controller's defaults, its verification interval (300 s) among
    // them: no pass falls within the timed phases, as few would in a real
    // cluster. A pass re-plans every namespace, which would compete for
    // the CPU with whichever side's edit it met (in the strategy's edits,
    // which it does not yield to, too). The idle phase restarts the
    // controller with passes every `--verify-secs`.
    let mut settings = Settings::new(WatchScope::Namespaces([OPS.to_string()].into()));
    if let Some(workers) = args.workers {
        settings.workers = workers;
    }
    let idle_settings = {
        let mut s = settings.clone();
        s.verify_interval = (args.verify_secs > 0).then(|| Duration::from_secs(args.verify_secs));
        s
    };
    let rss_before = rss_kib();
    let pids = std::iter::once(std::process::id())
        .chain(server.pid())
        .collect();
    let perf = crate::profile::PhaseProfiler::new(args.perf_dir.clone(), pids)?;
    let rec = perf.start("initial").await?;
    let s0 = server.stats().await?;
    let t0 = Instant::now();
    let ctl = spawn_mirror(&url, settings)?;
    wait_until("initial convergence", limit, || count(&counter) == copies).await?;
    let converge_time = t0.elapsed();
    crate::profile::stop(rec)?;
    let rss_after = rss_kib();
    let s1 = settle(&server).await?;
    let mut phases = vec![Phase {
        name: format!("initial convergence ({copies} copies)"),
        time: converge_time,
        requests: by_verb(&s0, &s1),
    }];

    // Namespace creations.
    let rec = perf.start("burst").await?;
    let t = Instant::now();
    let mut created_at = BTreeMap::new();
    for i in n..n + args.events {
        let name = ns_name(i);
        created_at.insert(name.clone(), Instant::now());
        create_namespace(&c, &name, true).await?;
    }
    wait_until("new namespaces", limit, || {
        count(&counter) == copies + args.events * CONFIGS * ITEMS
    })
    .await?;
    let time = t.elapsed();
    crate::profile::stop(rec)?;
    let latencies = completion_latencies(&counter, &created_at)?;
    let s2 = settle(&server).await?;

    phases.push(Phase {
        name: format!(
            "{} namespace creations, burst: back to back (+{} copies, {} namespace writes by the bench)",
            args.events,
            args.events * CONFIGS * ITEMS,
            args.events
        ),
        time,
        requests: by_verb(&s1, &s2),
    });

    // Paced namespace creations: latency as a user feels it, one namespace
    // at a time instead of a burst behind thousands of writes.
    let hist_before = event_to_write_buckets(&ctl.registry);
    let rec = perf.start("paced").await?;
    let t = Instant::now();
    let mut paced_at = BTreeMap::new();
    for i in n + args.events..n + 2 * args.events {
        let name = ns_name(i);
        paced_at.insert(name.clone(), Instant::now());
        create_namespace(&c, &name, true).await?;
        tokio::time::sleep(PACE).await;
    }
    wait_until("paced namespaces", limit, || {
        count(&counter) == copies + 2 * args.events * CONFIGS * ITEMS
    })
    .await?;
    let paced_time = t.elapsed();
    crate::profile::stop(rec)?;
    let paced = completion_latencies(&counter, &paced_at)?;
    let s2b = settle(&server).await?;
    let hist_after = event_to_write_buckets(&ctl.registry);
    let paced_requests = by_verb(&s2, &s2b);
    let s2 = s2b;

    // Relabels out.
    let rec = perf.start("relabel").await?;
    let t = Instant::now();
    let ns_api: Api<Namespace> = Api::all(c.clone());
    for i in 0..args.events {
        ns_api
            .patch(
                &ns_name(i),
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"labels": {"bench": "no"}}})),
            )
            .await?;
    }
    wait_until("relabels pruned", limit, || {
        count(&counter) == copies + args.events * CONFIGS * ITEMS
    })
    .await?;
    let time = t.elapsed();
    crate::profile::stop(rec)?;
    let s3 = settle(&server).await?;
    phases.push(Phase {
        name: format!(
            "{} relabels out (-{} copies, {} namespace writes by the bench)",
            args.events,
            args.events * CONFIGS * ITEMS,
            args.events
        ),
        time,
        requests: by_verb(&s2, &s3),
    });

    // The strategy's cluster, up to its item edits, beside mirra's, so that
    // the two sides' edits can alternate below.
    let mut strategy = if args.skip_baseline {
        None
    } else {
        Some(espejo_prepare(&args).await?)
    };

    // Item edits: `--edits` of each side's, alternating with the
    // strategy's pair by pair (who goes first alternates too), each after
    // its cluster settled: both sides' edits then meet the same machine,
    // instead of one side's minutes after the other's. The phase's
    // requests are the first edit's; its time is the median.
    let mut rec = Some(perf.start("edit").await?);
    let sc_api: Api<DynamicObject> = Api::namespaced_with(c.clone(), OPS, &sc_resource());
    let selected_now = n + args.events;
    let mut series = EditSeries::new(selected_now, settle(&server).await?);
    for pair in 0..args.edits {
        match strategy.as_mut() {
            Some(strategy) if !mirra_first(pair) => {
                strategy.edit().await?;
                mirra_edit(&mut series, &server, &counter, &sc_api).await?;
            }
            Some(strategy) => {
                mirra_edit(&mut series, &server, &counter, &sc_api).await?;
                strategy.edit().await?;
            }
            None => mirra_edit(&mut series, &server, &counter, &sc_api).await?,
        }
    }
    let (mirra_edits, s4) = series.finish();
    if let Some(rec) = rec.take() {
        crate::profile::stop(rec)?;
    }
    let edited_copies = selected_now;
    phases.push(Phase {
        // Time: until every copy of the edited item shows the edit on a
        // watch; the trailing status write comes later (within 250 ms).
        name: format!(
            "one item edit (1 SyncConfig write by the bench; median of {} edits of the time until all {selected_now} edited copies are seen; requests of the first, its last request at {:.2} s)",
            args.edits,
            mirra_edits.first_done.as_secs_f64()
        ),
        time: mirra_edits.median(),
        requests: mirra_edits.first_requests(),
    });

    // A restart, with verification passes every `--verify-secs` for the
    // idle phase: the restarted controller lists and plans everything
    // again, and finds nothing to write.
    let mut failed_writes: BTreeMap<String, u64> = BTreeMap::new();
    let mut count_failed = |registry: &Registry| {
        for (class, n) in write_errors(registry) {
            *failed_writes.entry(class).or_default() += n;
        }
    };
    count_failed(&ctl.registry);
    ctl.token.cancel();
    ctl.task.await??;
    let t = Instant::now();
    let ctl = spawn_mirror(&url, idle_settings)?;
    wait_until("restarted controller ready", limit, || ctl.ready.is_ready()).await?;
    let s4b = settle(&server).await?;
    let restart = (t.elapsed(), by_verb(&s4, &s4b));

    // Idle.
    let rec = perf.start("idle").await?;
    let t = Instant::now();
    // Nothing else runs in this process meanwhile (the bench's watch sees
    // no event): its CPU is the controller's passes.
    let idle_cpu_before = cpu_time(std::process::id());
    tokio::time::sleep(args.idle).await;
    let idle_cpu = idle_cpu_before
        .zip(cpu_time(std::process::id()))
        .map(|(b, a)| a.saturating_sub(b));
    crate::profile::stop(rec)?;
    let s5 = server.stats().await?;
    phases.push(Phase {
        name: match args.verify_secs {
            0 => format!("idle {} s (no verification pass)", args.idle.as_secs()),
            v => format!(
                "idle {} s (verification pass every {v} s)",
                args.idle.as_secs()
            ),
        },
        time: t.elapsed(),
        requests: by_verb(&s4b, &s5),
    });
    count_failed(&ctl.registry);
    ctl.token.cancel();
    ctl.task.await??;
    counter_task.abort();
    let external = server.external();
    server.stop();

    // ---- espejo strategy ----
    let (base, base_lat, base_edits) = match strategy {
        None => (Vec::new(), Vec::new(), None),
        Some(strategy) => {
            let b = strategy.finish(&args).await?;
            (b.phases, b.latencies, Some(b.edits))
        }
    };

    // ---- report ----
    println!(
        "## mirror controller: {n} namespaces, {CONFIGS} SyncConfigs x {ITEMS} items ({copies} copies)\n"
    );
    println!("sandbox: {}\n", sandbox_kind(external));
    println!(
        "| phase | mirra time | mirra requests (by verb) | espejo-strategy time | espejo-strategy requests (by verb) | requests ratio (excl. watch) |"
    );
    println!("|---|---|---|---|---|---|");
    for (i, m) in phases.iter().enumerate() {
        let mt = total(&m.requests, true);
        let (bt_time, bt_reqs, ratio) = match base.get(i) {
            Some(b) => {
                let bt = total(&b.requests, true);
                let ratio = if mt == 0 {
                    format!("{bt} : 0")
                } else {
                    format!("{:.1}x", bt as f64 / mt as f64)
                };
                (
                    format!("{:.2} s", b.time.as_secs_f64()),
                    fmt_verbs(&b.requests),
                    ratio,
                )
            }
            // Skipped (--skip-baseline), or a phase the baseline has no
            // counterpart for.
            None => ("-".into(), "-".into(), "-".into()),
        };
        println!(
            "| {} | {:.2} s | {} | {} | {} | {} |",
            m.name,
            m.time.as_secs_f64(),
            fmt_verbs(&m.requests),
            bt_time,
            bt_reqs,
            ratio
        );
    }
    println!();
    println!(
        "item edits, each until all {edited_copies} edited copies are seen on the bench's watch, in the order made: {}{}",
        edits_line("mirra", &mirra_edits),
        base_edits
            .as_ref()
            .map(|b| format!("; {}", edits_line("espejo strategy", b)))
            .unwrap_or_default()
    );
    if let Some(b) = &base_edits {
        println!(
            "edit pairs (mirra's and the strategy's k-th edits, made one after the other, mirra first in even pairs): mirra's at most the strategy's in {} of {}; mirra / strategy per pair: {}",
            pairs_held(&mirra_edits.edits, &b.edits),
            mirra_edits.edits.len().min(b.edits.len()),
            mirra_edits
                .edits
                .iter()
                .zip(&b.edits)
                .map(|(m, s)| format!(
                    "{:.2}",
                    m.time.as_secs_f64() / s.time.as_secs_f64().max(1e-9)
                ))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    println!(
        "event-to-write latency, namespace creation -> all {} copies seen on a watch (mirra, {} samples): p50 {:.0} ms, p99 {:.0} ms",
        CONFIGS * ITEMS,
        latencies.len(),
        percentile(&latencies, 0.5).as_secs_f64() * 1000.0,
        percentile(&latencies, 0.99).as_secs_f64() * 1000.0
    );
    println!(
        "(the burst figure above is throughput: the last of {} namespaces created back to back waits behind the writes of all before it)",
        args.events
    );
    println!(
        "paced namespace creations ({} namespaces, one every {} ms, {:.2} s, requests {}): creation -> all {} copies seen on a watch: p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms",
        args.events,
        PACE.as_millis(),
        paced_time.as_secs_f64(),
        fmt_verbs(&paced_requests),
        CONFIGS * ITEMS,
        percentile(&paced, 0.5).as_secs_f64() * 1000.0,
        percentile(&paced, 0.99).as_secs_f64() * 1000.0,
        paced.last().copied().unwrap_or_default().as_secs_f64() * 1000.0
    );
    let hist = bucket_diff(&hist_before, &hist_after);
    println!(
        "controller's mirra_event_to_write_seconds during the paced phase ({} observations): p50 <= {} s, p99 <= {} s (bucket upper bounds)",
        hist.last().map(|(_, n)| *n).unwrap_or(0),
        bucket_quantile(&hist, 0.5),
        bucket_quantile(&hist, 0.99)
    );
    println!(
        "espejo strategy, namespace creation -> its synchronous re-sync done (no watch delay counted): p50 {:.0} ms, p99 {:.0} ms",
        percentile(&base_lat, 0.5).as_secs_f64() * 1000.0,
        percentile(&base_lat, 0.99).as_secs_f64() * 1000.0
    );
    println!(
        "controller restarted before the idle phase: ready and settled after {:.2} s, requests {} (writes: {})",
        restart.0.as_secs_f64(),
        fmt_verbs(&restart.1),
        restart
            .1
            .iter()
            .filter(|(verb, _)| !matches!(verb.as_str(), "get" | "list" | "watch"))
            .map(|(_, n)| n)
            .sum::<u64>()
    );
    println!(
        "controller's CPU during the idle phase ({}): {}",
        match args.verify_secs {
            0 => "no verification pass".to_string(),
            v => format!("a verification pass every {v} s"),
        },
        idle_cpu.map_or_else(
            || "not read".to_string(),
            |d| format!("{:.0} ms", d.as_secs_f64() * 1000.0)
        )
    );
    println!(
        "mirra's request counts include the bench's own copy-counting watch (1 list + its watch requests)."
    );
    println!(
        "controller's failed writes over the whole run (mirra_errors_total by class; each was retried): {}",
        if failed_writes.is_empty() {
            "none".to_string()
        } else {
            failed_writes
                .iter()
                .map(|(class, n)| format!("{class} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    );
    let rss = match (external, rss_before, rss_after) {
        (true, Some(b), Some(a)) => Some((b, a)),
        _ => None,
    };
    match rss {
        Some((b, a)) => println!(
            "bench process RSS (controller + its caches; the bench's counter keeps no objects): {} MiB before start, {} MiB at {copies} copies (+{} MiB)",
            b / 1024,
            a / 1024,
            a.saturating_sub(b) / 1024
        ),
        _ => println!(
            "RSS not reported: the sandbox ran in this process, so its growth would be counted too"
        ),
    }
    if let Some(path) = &args.json_out {
        let phase = |i: usize| -> (BTreeMap<String, u64>, f64) {
            phases
                .get(i)
                .map(|p| (p.requests.clone(), p.time.as_secs_f64()))
                .unwrap_or_default()
        };
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let (initial_requests, initial_secs) = phase(0);
        let (burst_requests, burst_secs) = phase(1);
        let (relabel_requests, relabel_secs) = phase(2);
        let (edit_requests, edit_secs) = phase(3);
        let (idle_requests, idle_secs) = phase(4);
        let figures = crate::cost_curve::figures::MirrorFigures {
            namespaces: n,
            copies,
            copies_per_namespace: CONFIGS * ITEMS,
            events: args.events,
            initial_requests,
            initial_secs,
            burst_requests,
            burst_secs,
            burst_p50_ms: ms(percentile(&latencies, 0.5)),
            burst_p99_ms: ms(percentile(&latencies, 0.99)),
            paced_requests,
            paced_p50_ms: ms(percentile(&paced, 0.5)),
            paced_p99_ms: ms(percentile(&paced, 0.99)),
            relabel_requests,
            relabel_secs,
            edit_requests,
            edit_secs,
            edited_copies,
            idle_requests,
            idle_secs,
            rss_before_kib: rss.map(|(b, _)| b),
            rss_at_copies_kib: rss.map(|(_, a)| a),
            rss_growth_kib: rss.map(|(b, a)| a.saturating_sub(b)),
        };
        crate::cost_curve::figures::write_json(path, &figures)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(flags: &[&str]) -> anyhow::Result<Args> {
        parse(flags.iter().map(|f| f.to_string()).collect())
    }

    #[test]
    fn edits_default_to_five_and_take_a_count() -> anyhow::Result<()> {
        assert_eq!(args(&[])?.edits, 5);
        assert_eq!(args(&["--edits", "1"])?.edits, 1);
        Ok(())
    }

    #[test]
    fn malformed_edit_counts_are_refused() {
        for bad in [
            &["--edits", "0"][..],
            &["--edits", "x"],
            &["--edits", "-1"],
            &["--edits"],
        ] {
            assert!(args(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn workers_default_to_the_controllers_and_refuse_malformed_counts() -> anyhow::Result<()> {
        assert_eq!(args(&[])?.workers, None);
        assert_eq!(args(&["--workers", "16"])?.workers, Some(16));
        for bad in [&["--workers", "0"][..], &["--workers", "x"], &["--workers"]] {
            assert!(args(bad).is_err(), "{bad:?} was accepted");
        }
        Ok(())
    }

    #[test]
    fn verify_seconds_default_to_five_allow_none_and_refuse_malformed_values() -> anyhow::Result<()>
    {
        assert_eq!(args(&[])?.verify_secs, 5);
        assert_eq!(args(&["--verify-secs", "0"])?.verify_secs, 0);
        assert_eq!(args(&["--verify-secs", "30"])?.verify_secs, 30);
        for bad in [
            &["--verify-secs", "-1"][..],
            &["--verify-secs", "5s"],
            &["--verify-secs"],
        ] {
            assert!(args(bad).is_err(), "{bad:?} was accepted");
        }
        Ok(())
    }

    #[test]
    fn each_edit_gives_a_new_version_after_the_first() {
        assert_eq!(edit_version(0), 2);
        assert_eq!(edit_version(4), 6);
        assert_eq!(edit_version(usize::MAX), u32::MAX);
    }

    #[test]
    fn the_median_is_the_middle_time_whatever_the_order() {
        let ms = Duration::from_millis;
        assert_eq!(median(&[ms(30), ms(10), ms(20)]), ms(20));
        assert_eq!(median(&[ms(40), ms(10)]), ms(40));
        assert_eq!(median(&[]), Duration::ZERO);
    }

    #[test]
    fn an_edit_is_seen_when_the_last_copy_shows_it() {
        let mut c = CopyCounter::default();
        c.expect_edit(3);
        let t = Instant::now();
        c.edited.insert("a".into(), t);
        assert_eq!(c.edit_seen_by(2), None);
        let later = t + Duration::from_millis(5);
        c.edited.insert("b".into(), later);
        assert_eq!(c.edit_seen_by(2), Some(later));
        c.expect_edit(4);
        assert_eq!(c.edit_seen_by(1), None);
        assert_eq!(c.edit_version, "4");
    }

    fn edit(ms: u64) -> Edit {
        Edit {
            time: Duration::from_millis(ms),
            cpu: None,
        }
    }

    #[test]
    fn who_edits_first_alternates_pair_by_pair() {
        let order: Vec<bool> = (0..4).map(mirra_first).collect();
        assert_eq!(order, [true, false, true, false]);
    }

    #[test]
    fn a_pair_holds_when_mirras_edit_took_at_most_the_strategys() {
        let mirra = [edit(200), edit(300), edit(250)];
        let strategy = [edit(250), edit(290), edit(250)];
        assert_eq!(pairs_held(&mirra, &strategy), 2);
        // Unmatched edits (a series cut short) are in no pair.
        assert_eq!(pairs_held(&mirra, &strategy[..1]), 1);
        assert_eq!(pairs_held(&[], &strategy), 0);
    }
}
