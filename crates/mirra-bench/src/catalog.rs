//! The catalog sync scenario: N Services x 5 endpoints synced into Consul
//! by mirra (cold start, warm restart, a rolling update, an idle period),
//! and the consul-k8s strategy (every instance re-registered every 30 s, one
//! `catalog/register` each) as the baseline.
//!
//! The two sandboxes and the controller (`mirra sync-catalog`) run as
//! separate processes of the `mirra` binary next to this one in the target
//! directory, so that the RSS printed for mirra is the controller's alone,
//! and its counters come from its `/metrics` as an operator would read
//! them. Without the `mirra` binary everything runs in this process and the
//! RSS is of the whole process.
//!
//! Arguments: `--services N` (10000), `--endpoints E` (5), `--rollout P`
//! (900 pods), `--idle-secs S` (65: two verification passes at the default
//! 30 s interval), `--txn-batch-size B` (128, mirra's default; the Consul
//! sandbox then has the 128-operation limit of Consul 1.14 and later, and
//! with 64 or less the 64 of older servers),
//! `--json-out FILE` (also write mirra's figures to FILE as JSON, for
//! `cost-curve`), `--perf-dir DIR` (a `perf record` of each phase, of the
//! controller and both sandbox processes, in `DIR/<phase>.data`; the
//! controller of the cold start and of the warm restart is attached right
//! after it is spawned, so its first milliseconds are not in the profile).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::Context;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Namespace, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, Patch, PatchParams, PostParams};
use mirra_catalog_controller::{
    CancellationToken, CatalogMetrics, Readiness, Settings, SyncSettings,
};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};

mod controllers;
mod servers;

use controllers::*;
use servers::*;

/// Concurrent Kubernetes writers while seeding and rolling: enough to keep
/// the sandbox busy without queueing thousands of requests.
const WRITERS: usize = 32;
/// consul-k8s's re-registration period.
const CONSUL_K8S_PERIOD: Duration = Duration::from_secs(30);
/// Namespace of the generated Services.
const NS: &str = "bench";

struct Args {
    services: usize,
    endpoints: usize,
    rollout: usize,
    idle: Duration,
    txn_batch: usize,
    /// Kubernetes namespaces the Services are spread over (round robin);
    /// more than one mirrors each into a Consul Enterprise namespace
    /// (`-enable-namespaces -enable-k8s-namespace-mirroring`).
    namespaces: usize,
    /// Where to write mirra's figures as JSON (`--json-out`).
    json_out: Option<std::path::PathBuf>,
    /// Where to write a profile of each phase (`--perf-dir`).
    perf_dir: Option<std::path::PathBuf>,
}

/// The Consul namespace prefix of the mirrored runs (as the chart's
/// `k8sNamespaceMirroringPrefix` would set it).
const MIRROR_PREFIX: &str = "k8s-";

impl Args {
    fn mirrored(&self) -> bool {
        self.namespaces > 1
    }

    /// The Kubernetes namespace of Service `i`.
    fn namespace_of(&self, i: usize) -> String {
        if self.mirrored() {
            format!("{NS}-{}", i % self.namespaces)
        } else {
            NS.to_owned()
        }
    }

    /// The Consul namespace Service `i` is registered in (none without
    /// namespaces).
    fn consul_namespace_of(&self, i: usize) -> Option<String> {
        self.mirrored()
            .then(|| format!("{MIRROR_PREFIX}{}", self.namespace_of(i)))
    }
}

fn parse_args(args: &[String]) -> anyhow::Result<Args> {
    let mut a = Args {
        services: 10_000,
        endpoints: 5,
        rollout: 900,
        idle: Duration::from_secs(65),
        txn_batch: mirra_consul::config::DEFAULT_TXN_MAX_OPS,
        namespaces: 1,
        json_out: None,
        perf_dir: None,
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let value = it.next().with_context(|| format!("{flag} needs a value"))?;
        if flag == "--json-out" {
            a.json_out = Some(value.into());
            continue;
        }
        if flag == "--perf-dir" {
            a.perf_dir = Some(value.into());
            continue;
        }
        let n: u64 = value
            .parse()
            .with_context(|| format!("bad value for {flag}"))?;
        let n_usize = usize::try_from(n)?;
        match flag.as_str() {
            "--services" => a.services = n_usize.clamp(1, MAX_SERVICES),
            "--endpoints" => a.endpoints = n_usize.clamp(1, 8),
            "--rollout" => a.rollout = n_usize,
            "--idle-secs" => a.idle = Duration::from_secs(n),
            "--txn-batch-size" => a.txn_batch = n_usize.clamp(1, 128),
            "--k8s-namespaces" => a.namespaces = n_usize.clamp(1, 1_000),
            other => anyhow::bail!("unknown argument {other}"),
        }
    }
    a.rollout = a.rollout.min(a.services * a.endpoints);
    Ok(a)
}

/// The most Services the scenario's address plan keeps apart.
const MAX_SERVICES: usize = 65_536;

fn endpoint_ip(generation: usize, svc: usize, ep: usize) -> String {
    // Unique per (generation, Service, endpoint) for up to 65,536 Services
    // of up to 8 endpoints: 2^19 addresses per generation (the scenario
    // uses generations 0 and 1).
    let n = svc * 8 + ep;
    format!(
        "10.{}.{}.{}",
        100 + generation * 8 + n / 65_536 % 8,
        n / 256 % 256,
        n % 256
    )
}

/// The EndpointSlice `<name>-1` of Service `namespace/name`: port `http`
/// (8080) and one ready endpoint per address in `ips`, each of pod
/// `<name>-<address>`.
pub(crate) fn endpoint_slice(
    name: &str,
    namespace: &str,
    ips: &[String],
) -> anyhow::Result<EndpointSlice> {
    let endpoints: Vec<_> = ips
        .iter()
        .map(|a| {
            json!({"addresses": [a], "conditions": {"ready": true},
                   "targetRef": {"kind": "Pod", "name": format!("{name}-{a}")}})
        })
        .collect();
    Ok(serde_json::from_value(json!({
        "metadata": {"name": format!("{name}-1"), "namespace": namespace,
                     "labels": {"kubernetes.io/service-name": name}},
        "addressType": "IPv4",
        "endpoints": endpoints,
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]
    }))?)
}

fn ips_for(generation: usize, svc: usize, endpoints: usize) -> Vec<String> {
    (0..endpoints)
        .map(|e| endpoint_ip(generation, svc, e))
        .collect()
}

/// A `/proc/<pid>/status` field in MiB (`pid` "self" for this process).
fn proc_mib(pid: &str, field: &str) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(idx).copied().unwrap_or_default()
}

/// Runs the scenario and prints a markdown table.
pub async fn run(args: Vec<String>) -> anyhow::Result<()> {
    let a = parse_args(&args)?;
    let instances = a.services * a.endpoints;
    eprintln!(
        "catalog: {} Services x {} endpoints = {instances} instances",
        a.services, a.endpoints
    );

    let bin = crate::mirra_bin();
    match &bin {
        Some(b) => eprintln!("sandboxes: separate processes of {}", b.display()),
        None => eprintln!("sandboxes: in this process (build the mirra binary to separate them)"),
    }
    let kubeconfig =
        std::env::temp_dir().join(format!("mirra-bench-{}.kubeconfig", std::process::id()));
    let ksb: Server<kube_sandbox::Sandbox> = match &bin {
        Some(b) => {
            let (url, child) = spawn_sandbox(
                b,
                "kube",
                &["--kubeconfig-out", &kubeconfig.to_string_lossy()],
            )
            .await?;
            Server::Child { url, child }
        }
        None => {
            Server::InProcess(kube_sandbox::Sandbox::start(kube_sandbox::Config::default()).await?)
        }
    };
    let kube_url = match &ksb {
        Server::InProcess(s) => s.url(),
        Server::Child { url, .. } => url.clone(),
    };
    let kube = kube::Client::try_from(kube::Config::new(kube_url.parse()?))?;
    let csb = Consul::start(bin.as_deref(), a.txn_batch, a.mirrored()).await?;
    let spec = ControllerSpec {
        bin: bin.as_deref(),
        kubeconfig: bin.as_ref().map(|_| kubeconfig.as_path()),
        consul_url: csb.url(),
        txn_batch: a.txn_batch,
        mirrored: a.mirrored(),
    };
    let http = reqwest::Client::new();
    let consul = mirra_consul::Client::new(mirra_consul::ConsulConfig::new(&csb.url())?)?;

    // Seed Kubernetes.
    let nss: Api<Namespace> = Api::all(kube.clone());
    let namespaces: BTreeSet<String> = (0..a.services).map(|i| a.namespace_of(i)).collect();
    for ns in &namespaces {
        nss.create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": ns}}))?,
        )
        .await?;
    }
    let slices_in =
        |i: usize| -> Api<EndpointSlice> { Api::namespaced(kube.clone(), &a.namespace_of(i)) };
    let a = &a;
    let seeded = futures::stream::iter(0..a.services)
        .map(|i| {
            let ns = a.namespace_of(i);
            let svcs: Api<Service> = Api::namespaced(kube.clone(), &ns);
            let slices = slices_in(i);
            let endpoints = a.endpoints;
            async move {
                let name = format!("svc-{i}");
                let svc: Service = serde_json::from_value(json!({
                    "metadata": {"name": name, "namespace": ns},
                    "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080}]}
                }))?;
                svcs.create(&PostParams::default(), &svc).await?;
                slices
                    .create(
                        &PostParams::default(),
                        &endpoint_slice(&name, &ns, &ips_for(0, i, endpoints))?,
                    )
                    .await?;
                anyhow::Ok(())
            }
        })
        .buffer_unordered(WRITERS)
        .collect::<Vec<_>>()
        .await;
    for r in seeded {
        r?;
    }
    eprintln!("seeded Kubernetes");

    // Cold start.
    let c0 = csb.counts(&http).await?;
    let t0 = Instant::now();
    let ctl = start(&kube, &consul, &spec).await?;
    let profiler = |ctl: &Controller| {
        let pids = [ctl.pid(), csb.pid(), ksb.pid()].into_iter().flatten();
        crate::profile::PhaseProfiler::new(a.perf_dir.clone(), pids.collect())
    };
    let rec = profiler(&ctl)?.start("cold-start").await?;
    while csb.counts(&http).await?.services < c0.services + instances as u64 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let cold_time = t0.elapsed();
    ctl.settle(&csb, &http).await?;
    crate::profile::stop(rec)?;
    let cold_applies = csb.counts(&http).await?.raft_applies - c0.raft_applies;
    let (rss, cold_peak) = ctl.memory_mib();
    let (kube_rss, consul_rss) = (ksb.rss_mib(), csb.rss_mib());
    eprintln!("cold start: {cold_applies} applies in {cold_time:?}");
    ctl.stop().await?;

    // Warm restart.
    let applies1 = csb.counts(&http).await?.raft_applies;
    let t1 = Instant::now();
    let ctl = start(&kube, &consul, &spec).await?;
    let perf = profiler(&ctl)?;
    let rec = perf.start("warm-restart").await?;
    while !ctl.is_ready().await {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let warm_ready = t1.elapsed();
    ctl.settle(&csb, &http).await?;
    crate::profile::stop(rec)?;
    let warm_applies = csb.counts(&http).await?.raft_applies - applies1;
    eprintln!("warm restart: {warm_applies} applies");

    // Rolling update: `rollout` pods replaced, whole Services at a time.
    let rolled_services = a.rollout.div_ceil(a.endpoints).min(a.services);
    let applies2 = csb.counts(&http).await?.raft_applies;
    let watchers: Vec<_> = (0..rolled_services)
        .map(|i| {
            let consul = consul.clone();
            let want: BTreeSet<String> = ips_for(1, i, a.endpoints).into_iter().collect();
            let options = mirra_consul::WatchOptions {
                query: mirra_consul::QueryOptions {
                    namespace: a.consul_namespace_of(i),
                    ..mirra_consul::QueryOptions::default()
                },
                ..mirra_consul::WatchOptions::default()
            };
            tokio::spawn(async move {
                let mut w = Box::pin(consul.watch_service(format!("svc-{i}"), options));
                while let Some(Ok(v)) = w.next().await {
                    let got: BTreeSet<String> =
                        v.value.iter().map(|s| s.service_address.clone()).collect();
                    if got == want {
                        return Some(Instant::now());
                    }
                }
                None
            })
        })
        .collect();
    // Let the watchers park their first blocking query.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let hist_before = latency_buckets(&ctl.metrics_text().await?);
    let rec = perf.start("rollout").await?;
    let starts = futures::stream::iter(0..rolled_services)
        .map(|i| {
            let slices = slices_in(i);
            let ns = a.namespace_of(i);
            let endpoints = a.endpoints;
            async move {
                let name = format!("svc-{i}");
                let t = Instant::now();
                slices
                    .patch(
                        &format!("{name}-1"),
                        &PatchParams::apply("bench").force(),
                        &Patch::Apply(&endpoint_slice(&name, &ns, &ips_for(1, i, endpoints))?),
                    )
                    .await?;
                anyhow::Ok((i, t))
            }
        })
        .buffer_unordered(WRITERS)
        .collect::<Vec<_>>()
        .await;
    let mut started = vec![None; rolled_services];
    for r in starts {
        let (i, t) = r?;
        if let Some(slot) = started.get_mut(i) {
            *slot = Some(t);
        }
    }
    let mut latencies = Vec::new();
    for (i, w) in watchers.into_iter().enumerate() {
        if let (Ok(Some(done)), Some(Some(t))) = (w.await, started.get(i)) {
            latencies.push(done.saturating_duration_since(*t));
        }
    }
    latencies.sort();
    ctl.settle(&csb, &http).await?;
    crate::profile::stop(rec)?;
    let rollout_applies = csb.counts(&http).await?.raft_applies - applies2;
    let rollout_registers = ctl.totals().await?.1;
    let hist_after = latency_buckets(&ctl.metrics_text().await?);
    let own_p50 = bucket_quantile(&hist_before, &hist_after, 0.5);
    let own_p99 = bucket_quantile(&hist_before, &hist_after, 0.99);
    let (p50, p99) = (percentile(&latencies, 0.5), percentile(&latencies, 0.99));
    eprintln!("rollout: {rollout_applies} applies, p50 {p50:?}, p99 {p99:?}");

    // Idle.
    let applies3 = csb.counts(&http).await?.raft_applies;
    let rec = perf.start("idle").await?;
    tokio::time::sleep(a.idle).await;
    crate::profile::stop(rec)?;
    let after_idle = csb.counts(&http).await?;
    let idle_applies = after_idle.raft_applies - applies3;
    let (idle_rss, peak) = ctl.memory_mib();
    let totals = ctl.totals().await?;
    ctl.stop().await?;

    // Baseline: one consul-k8s cycle, one catalog/register per instance,
    // against a fresh sandbox.
    drop(csb);
    drop(ksb);
    let bsb = Consul::start(bin.as_deref(), 64, false).await?;
    let bclient = mirra_consul::Client::new(mirra_consul::ConsulConfig::new(&bsb.url())?)?;
    let b0 = bsb.counts(&http).await?.raft_applies;
    let tb = Instant::now();
    let regs = futures::stream::iter(0..instances)
        .map(|n| {
            let c = bclient.clone();
            let (svc, ep) = (n / a.endpoints, n % a.endpoints);
            async move {
                let name = format!("svc-{svc}");
                let ip = endpoint_ip(0, svc, ep);
                c.register(&mirra_consul::RegisterRequest {
                    node: "k8s-sync".into(),
                    address: "127.0.0.1".into(),
                    node_meta: [("external-source".to_owned(), "kubernetes".to_owned())].into(),
                    service: Some(mirra_consul::Service {
                        id: format!("{name}-{ip}"),
                        service: name,
                        tags: vec!["k8s".into()],
                        address: ip,
                        port: 8080,
                        meta: [("external-source".to_owned(), "kubernetes".to_owned())].into(),
                        ..mirra_consul::Service::default()
                    }),
                    ..mirra_consul::RegisterRequest::default()
                })
                .await
            }
        })
        .buffer_unordered(16)
        .collect::<Vec<_>>()
        .await;
    for r in regs {
        r?;
    }
    let cycle_time = tb.elapsed();
    let cycle_applies = bsb.counts(&http).await?.raft_applies - b0;
    let idle_cycles = (a.idle.as_secs_f64() / CONSUL_K8S_PERIOD.as_secs_f64()).floor() as u64;

    let ratio = |base: u64, ours: u64| {
        if ours == 0 {
            "∞ (mirra: 0)".to_owned()
        } else {
            format!("{:.0}x", base as f64 / ours as f64)
        }
    };
    if a.mirrored() {
        println!(
            "Services spread over {} Kubernetes namespaces, each mirrored into a Consul namespace \
             (prefix {MIRROR_PREFIX}); the {} namespace creations are Raft applies of their own \
             (one each, counted in mirra's figures below); the consul-k8s strategy is measured \
             without namespaces.\n",
            namespaces.len(),
            namespaces.len()
        );
    }
    let ns_creations = if a.mirrored() { namespaces.len() } else { 0 };
    println!("| phase | mirra | consul-k8s strategy | ratio |");
    println!("|---|---|---|---|");
    println!(
        "| cold start, Raft applies ({instances} instances, {} ops per txn) | {cold_applies} (floor: {} ops = node + service and readiness check per instance, ceil(ops/{}) = {}, + {ns_creations} namespace creations) | {cycle_applies} (measured) | {} |",
        a.txn_batch,
        instances * 2 + 1,
        a.txn_batch,
        (instances * 2 + 1).div_ceil(a.txn_batch),
        ratio(cycle_applies, cold_applies)
    );
    println!(
        "| cold start, time | {:.1} s | {:.1} s for one cycle (measured) | |",
        cold_time.as_secs_f64(),
        cycle_time.as_secs_f64()
    );
    println!(
        "| warm restart, Raft applies | {warm_applies} (ready after {:.1} s) | {cycle_applies} (next cycle) | {} |",
        warm_ready.as_secs_f64(),
        ratio(cycle_applies, warm_applies)
    );
    println!(
        "| rollout of {} pods, Raft applies | {rollout_applies} | {} (one cycle + {} deregistrations, modelled) | {} |",
        rolled_services * a.endpoints,
        cycle_applies + (rolled_services * a.endpoints) as u64,
        rolled_services * a.endpoints,
        ratio(
            cycle_applies + (rolled_services * a.endpoints) as u64,
            rollout_applies
        )
    );
    println!(
        "| rollout, event-to-Consul latency p50 / p99 (slice write to seen on a Consul watch) | {:.0} ms / {:.0} ms ({} Services) | ~15 s / ~30 s (waits for the 30 s cycle, modelled) | |",
        p50.as_secs_f64() * 1000.0,
        p99.as_secs_f64() * 1000.0,
        latencies.len()
    );
    let bound =
        |v: Option<f64>| v.map_or_else(|| "n/a".to_owned(), |b| format!("<= {:.0} ms", b * 1000.0));
    println!(
        "| rollout, controller's own event-to-commit histogram p50 / p99 (bucket bounds) | {} / {} | | |",
        bound(own_p50),
        bound(own_p99)
    );
    println!(
        "| idle {} s, Raft applies | {idle_applies} | {} ({idle_cycles} cycles x {cycle_applies}, modelled) | {} |",
        a.idle.as_secs(),
        idle_cycles * cycle_applies,
        ratio(idle_cycles * cycle_applies, idle_applies)
    );
    println!(
        "| idle, Consul reads | {} blocking queries parked at its end (the sandbox's count) | {} pollers every 7.5 s (modelled) | |",
        after_idle.blocking_open, a.services
    );
    let mib = |v: Option<f64>| v.map_or_else(|| "n/a".to_owned(), |m| format!("{m:.0} MiB"));
    if bin.is_some() {
        println!(
            "| RSS of the mirra sync-catalog process after cold start (peak during it) | {} ({}) | | |",
            mib(rss),
            mib(cold_peak)
        );
        println!(
            "| RSS of the restarted mirra process after rollout and idle (its peak) | {} ({}) | | |",
            mib(idle_rss),
            mib(peak)
        );
        println!(
            "| RSS after cold start, sandbox processes (not mirra) | kube {} / consul {} | | |",
            mib(kube_rss),
            mib(consul_rss)
        );
    } else {
        println!(
            "| RSS after cold start (whole process: controller + both sandboxes) | {} (peak {}) | | |",
            mib(rss),
            mib(peak)
        );
    }
    println!(
        "\nmirra totals (the controller from the warm restart on): {} transactions, {} registrations ({rollout_registers} by the end of the rollout), {} deregistrations, {} writes avoided",
        totals.0, totals.1, totals.2, totals.3
    );
    if let Some(path) = &a.json_out {
        let kib = |v: Option<f64>| v.map(|m| (m * 1024.0).round() as u64);
        let figures = crate::cost_curve::figures::CatalogFigures {
            services: a.services,
            endpoints: a.endpoints,
            instances,
            txn_batch: a.txn_batch,
            cold_applies,
            cold_secs: cold_time.as_secs_f64(),
            warm_applies,
            rollout_changes: rolled_services,
            rollout_pods: rolled_services * a.endpoints,
            rollout_applies,
            rollout_p50_ms: p50.as_secs_f64() * 1000.0,
            rollout_p99_ms: p99.as_secs_f64() * 1000.0,
            idle_secs: a.idle.as_secs_f64(),
            idle_applies,
            rss_after_cold_kib: kib(rss),
            rss_cold_peak_kib: kib(cold_peak),
            rss_after_idle_kib: kib(idle_rss),
            rss_peak_kib: kib(peak),
            separate_process: bin.is_some(),
        };
        crate::cost_curve::figures::write_json(path, &figures)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_endpoint_of_the_largest_run_has_its_own_address() {
        let mut seen = std::collections::HashSet::new();
        for generation in 0..2 {
            for svc in 0..MAX_SERVICES {
                for ep in 0..8 {
                    assert!(
                        seen.insert(endpoint_ip(generation, svc, ep)),
                        "{generation} {svc} {ep}"
                    );
                }
            }
        }
    }

    fn strings(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn flags_parse_and_malformed_ones_are_refused_with_their_name() -> anyhow::Result<()> {
        let a = parse_args(&strings(&[
            "--services",
            "200",
            "--perf-dir",
            "/tmp/p",
            "--json-out",
            "/tmp/f.json",
            "--txn-batch-size",
            "128",
        ]))?;
        assert_eq!(a.services, 200);
        assert_eq!(a.txn_batch, 128);
        assert_eq!(a.perf_dir, Some("/tmp/p".into()));
        assert_eq!(a.json_out, Some("/tmp/f.json".into()));
        assert_eq!(parse_args(&[])?.perf_dir, None);
        assert_eq!(
            parse_args(&strings(&["--services", "100000"]))?.services,
            MAX_SERVICES
        );
        for (bad, named) in [
            (&["--services", "many"][..], "--services"),
            (&["--perf-dir"][..], "--perf-dir"),
            (&["--idle-secs", "-1"][..], "--idle-secs"),
            (&["--colour", "1"][..], "--colour"),
        ] {
            let err = match parse_args(&strings(bad)) {
                Ok(_) => anyhow::bail!("{bad:?} was accepted"),
                Err(e) => format!("{e:#}"),
            };
            assert!(err.contains(named), "{bad:?}: {err}");
        }
        Ok(())
    }
}
