//! The `faults` scenario (see BENCHMARKS.md): recovery times of the mirror
//! and the catalog sync for each row of the failure model they can be
//! driven through, under load, with the controllers' default timings.
//!
//! Each row makes a change while the fault lasts (the mirror: a new version
//! of one item of every namespace; the catalog: a new endpoint address for
//! 100 Services) and measures the time from the fault being lifted (the
//! fresh process started, the leader stopped or killed) until the change
//! is everywhere. Faults that refuse requests last `--fault-secs` (5 s
//! default), so the figure includes where the controller's backoff stood
//! when the fault ended. Controllers run in this process, each in a tokio
//! runtime of its own, so that one can be killed as a process is; the
//! sandboxes run in this process too.
//!
//! Usage: `mirra-bench faults [--namespaces N] [--items N] [--services N]
//! [--fault-secs S]`. What this module must NOT do: gate anything on time;
//! it only measures and prints.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::Context;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use mirra_catalog_controller::{CatalogMetrics, SyncSettings};
use mirra_mirror_controller::mirra_runtime::leader::{LeaderConfig, LeaderElector};
use mirra_mirror_controller::mirra_runtime::{Metrics, Readiness, run_while_leading};
use mirra_mirror_controller::prometheus_client::registry::Registry;
use mirra_mirror_controller::tokio_util::sync::CancellationToken;
use mirra_mirror_controller::{Settings, WatchScope};
use serde_json::json;
use tokio::net::{TcpListener, TcpStream};

/// Where the SyncConfig and the Leases live.
const OPS: &str = "ops";
/// Namespace of the catalog's Services.
const NS: &str = "bench";
/// The catalog's Consul node.
const NODE: &str = "k8s-sync";
/// Services whose endpoint changes in each catalog row.
const CHANGED: usize = 100;

struct Args {
    namespaces: usize,
    items: usize,
    services: usize,
    fault: Duration,
}

fn parse(args: Vec<String>) -> anyhow::Result<Args> {
    let mut out = Args {
        namespaces: 200,
        items: 5,
        services: 1000,
        fault: Duration::from_secs(5),
    };
    let mut it = args.into_iter();
    while let Some(flag) = it.next() {
        let value = it.next().with_context(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--namespaces" => out.namespaces = value.parse()?,
            "--items" => out.items = value.parse()?,
            "--services" => out.services = value.parse()?,
            "--fault-secs" => out.fault = Duration::from_secs(value.parse()?),
            other => anyhow::bail!("unknown flag {other}"),
        }
    }
    anyhow::ensure!(out.items >= 1, "--items must be at least 1");
    anyhow::ensure!(
        out.services >= CHANGED,
        "--services must be at least {CHANGED}"
    );
    Ok(out)
}

/// One measured row.
struct Row {
    controller: &'static str,
    fault: &'static str,
    measured_from: &'static str,
    recovery: Duration,
    writes: String,
}

fn client(url: &str) -> anyhow::Result<kube::Client> {
    Ok(kube::Client::try_from(kube::Config::new(url.parse()?))?)
}

/// A controller in a tokio runtime of its own: stopped through its token,
/// or killed (the runtime shut down: every task, request and timer dropped
/// wherever it was, as when a process dies).
struct Proc {
    rt: tokio::runtime::Runtime,
    stop: CancellationToken,
    leading: Option<tokio::sync::watch::Receiver<bool>>,
    done: tokio::task::JoinHandle<()>,
}

impl Proc {
    fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
        Ok(tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()?)
    }

    /// Starts a controller, campaigning for `lease` first when given (the
    /// default 15 s lease and 2 s retry).
    fn start<F, Fut>(url: &str, lease: Option<(&str, &str)>, controller: F) -> anyhow::Result<Proc>
    where
        F: Fn(
                kube::Client,
                mirra_mirror_controller::mirra_runtime::LeaseDeadline,
                CancellationToken,
            ) -> Fut
            + Send
            + Sync
            + 'static,
        Fut: std::future::Future<Output = ()> + Send,
    {
        let rt = Self::runtime()?;
        let stop = CancellationToken::new();
        let url = url.to_string();
        let (leading_tx, leading) = tokio::sync::watch::channel(false);
        let elect = lease.map(|(name, id)| LeaderConfig::new(OPS, name, id));
        let has_lease = elect.is_some();
        let token = stop.clone();
        let done = rt.spawn(async move {
            // Its clients belong to its runtime, and die with it.
            let Ok(kube) = client(&url) else { return };
            match elect {
                None => {
                    controller(
                        kube,
                        mirra_mirror_controller::mirra_runtime::LeaseDeadline::always(),
                        token,
                    )
                    .await
                }
                Some(cfg) => {
                    let Ok(elector) = LeaderElector::new(kube.clone(), cfg) else {
                        return;
                    };
                    let mut sub = elector.subscribe();
                    tokio::spawn(async move {
                        while sub.changed().await.is_ok() {
                            let v = *sub.borrow();
                            let _ = leading_tx.send(v);
                        }
                    });
                    let readiness = Readiness::new();
                    let _ = run_while_leading(elector, &readiness, token, |t, lease| {
                        let f = controller(kube.clone(), lease, t);
                        async move {
                            f.await;
                            Ok::<(), std::convert::Infallible>(())
                        }
                    })
                    .await;
                }
            }
        });
        Ok(Proc {
            rt,
            stop,
            leading: has_lease.then_some(leading),
            done,
        })
    }

    async fn wait_leading(&mut self) -> anyhow::Result<()> {
        if let Some(l) = self.leading.as_mut() {
            tokio::time::timeout(Duration::from_secs(60), l.wait_for(|v| *v))
                .await
                .context("never led")??;
        }
        Ok(())
    }

    /// Stops it as SIGTERM does: the controller ends, then the Lease is
    /// released.
    async fn stop(self) {
        self.stop.cancel();
        let _ = self.done.await;
        self.rt.shutdown_background();
    }

    fn kill(self) {
        self.rt.shutdown_background();
    }
}

/// Polls `f` every 20 ms until it is true (at most `limit`), returning when.
async fn until<F, Fut>(what: &str, limit: Duration, mut f: F) -> anyhow::Result<Instant>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<bool>>,
{
    let start = Instant::now();
    loop {
        if f().await? {
            return Ok(Instant::now());
        }
        anyhow::ensure!(start.elapsed() < limit, "gave up waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

// ----- the mirror ------------------------------------------------------------

fn sc_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("sync.appuio.ch", "v1alpha1", "SyncConfig"),
        "syncconfigs",
    )
}

fn mirror_spec(items: usize, version: usize) -> serde_json::Value {
    let items: Vec<_> = (0..items)
        .map(|i| {
            let v = if i == 0 { version } else { 1 };
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": format!("item{i}"), "labels": {"bench": "copy"}},
                   "data": {"version": v.to_string()}})
        })
        .collect();
    json!({"namespaceSelector": {"labelSelector": {"matchLabels": {"bench": "yes"}}},
           "syncItems": items})
}

fn mirror_controller(
    kube: kube::Client,
    lease: mirra_mirror_controller::mirra_runtime::LeaseDeadline,
    stop: CancellationToken,
) -> impl std::future::Future<Output = ()> + Send {
    let mut settings = Settings::new(WatchScope::Namespaces([OPS.to_string()].into()));
    settings.lease = lease;
    let mut registry = Registry::default();
    let metrics = Metrics::register(&mut registry);
    let ready = Readiness::new().register("mirror");
    async move {
        if let Err(e) = mirra_mirror_controller::run(kube, settings, ready, metrics, stop).await {
            eprintln!("mirror controller failed: {e}");
        }
    }
}

/// Namespaces whose copy of `item0` shows `version`.
async fn mirror_at(c: &kube::Client, version: usize) -> anyhow::Result<usize> {
    let api: Api<ConfigMap> = Api::all(c.clone());
    let list = api
        .list(&kube::api::ListParams::default().labels("bench=copy"))
        .await?;
    let v = version.to_string();
    Ok(list
        .items
        .iter()
        .filter(|c| c.metadata.name.as_deref() == Some("item0"))
        .filter(|c| c.data.as_ref().and_then(|d| d.get("version")) == Some(&v))
        .count())
}

/// Apply requests for copies between two snapshots (refused ones
/// included).
fn copy_writes(before: &kube_sandbox::Stats, after: &kube_sandbox::Stats) -> String {
    let d = after.since(before);
    format!("{} apply requests", d.get("patch configmaps"))
}

async fn mirror(args: &Args) -> anyhow::Result<Vec<Row>> {
    // No periodic bookmarks, so that the 410 row can send every watch to
    // a compacted revision.
    let sb = kube_sandbox::Sandbox::start(kube_sandbox::Config {
        bookmark_interval: Duration::from_secs(24 * 3600),
        ..Default::default()
    })
    .await?;
    let url = sb.url();
    let c = client(&url)?;
    Api::<CustomResourceDefinition>::all(c.clone())
        .create(
            &PostParams::default(),
            &mirra_mirror_controller::mirra_mirror::crd(),
        )
        .await?;
    let nss: Api<Namespace> = Api::all(c.clone());
    nss.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": OPS}}))?,
    )
    .await?;
    let names: Vec<String> = (0..args.namespaces).map(|i| format!("ns-{i:04}")).collect();
    let created: Vec<anyhow::Result<()>> = futures::stream::iter(names)
        .map(|n| {
            let nss = nss.clone();
            async move {
                nss.create(
                    &PostParams::default(),
                    &serde_json::from_value(
                        json!({"metadata": {"name": n, "labels": {"bench": "yes"}}}),
                    )?,
                )
                .await?;
                Ok(())
            }
        })
        .buffer_unordered(16)
        .collect()
        .await;
    created.into_iter().collect::<anyhow::Result<()>>()?;
    let scs: Api<DynamicObject> = Api::namespaced_with(c.clone(), OPS, &sc_resource());
    let mut version = 1;
    scs.create(
        &PostParams::default(),
        &serde_json::from_value(json!({
            "apiVersion": "sync.appuio.ch/v1alpha1", "kind": "SyncConfig",
            "metadata": {"name": "load", "namespace": OPS},
            "spec": mirror_spec(args.items, version),
        }))?,
    )
    .await?;
    let n = args.namespaces;
    let limit = Duration::from_secs(120);

    let start = Instant::now();
    let mut ctl = Proc::start(&url, None, mirror_controller)?;
    let all_copies = || async {
        let api: Api<ConfigMap> = Api::all(c.clone());
        let list = api
            .list(&kube::api::ListParams::default().labels("bench=copy"))
            .await?;
        Ok(list.items.len() == n * args.items)
    };
    until("the initial copies", limit, all_copies).await?;
    println!(
        "mirror: {} namespaces x {} items in step {:.1} s after start",
        n,
        args.items,
        start.elapsed().as_secs_f64()
    );
    let edit = |v: usize| {
        let scs = scs.clone();
        let items = args.items;
        async move {
            scs.patch(
                "load",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": mirror_spec(items, v)})),
            )
            .await
            .map(|_| ())
        }
    };
    let in_step = |v: usize| {
        let c = c.clone();
        move || {
            let c = c.clone();
            async move { Ok(mirror_at(&c, v).await? == n) }
        }
    };
    let mut rows = Vec::new();
    let mut row = |fault, from, recovery: Duration, writes: String| {
        println!(
            "mirror | {fault} | {:.2} s | {writes}",
            recovery.as_secs_f64()
        );
        rows.push(Row {
            controller: "mirror",
            fault,
            measured_from: from,
            recovery,
            writes,
        });
    };

    // A watch drops: the change is made right after.
    version += 1;
    let before = sb.stats();
    sb.close_watches();
    edit(version).await?;
    let t0 = Instant::now();
    let t1 = until("in step", limit, in_step(version)).await?;
    row(
        "watch drop",
        "the change",
        t1 - t0,
        copy_writes(&before, &sb.stats()),
    );

    // 410: a write no watch of mirra's sees, the history compacted, every
    // watch closed: each resumes into 410 and lists again.
    version += 1;
    let before = sb.stats();
    Api::<Secret>::namespaced(c.clone(), "default")
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": format!("bump-{version}")}}))?,
        )
        .await?;
    sb.compact().await;
    sb.close_watches();
    edit(version).await?;
    let t0 = Instant::now();
    let t1 = until("in step", limit, in_step(version)).await?;
    row(
        "410 Gone on every watch",
        "the change",
        t1 - t0,
        copy_writes(&before, &sb.stats()),
    );

    // Refused writes, for the fault's duration.
    for (fault, status) in [
        ("409 on every apply", 409u16),
        ("429 (Retry-After 1) on every apply", 429),
        ("500 on every apply", 500),
        ("503 on every apply", 503),
    ] {
        version += 1;
        let before = sb.stats();
        sb.inject(kube_sandbox::FaultRule {
            verb: Some("patch".into()),
            resource: Some("configmaps".into()),
            status: Some(status),
            retry_after_seconds: Some(1),
            ..Default::default()
        })
        .await?;
        edit(version).await?;
        tokio::time::sleep(args.fault).await;
        sb.clear_faults().await;
        let t0 = Instant::now();
        let t1 = until("in step", limit, in_step(version)).await?;
        row(
            fault,
            "the fault lifted",
            t1 - t0,
            copy_writes(&before, &sb.stats()),
        );
    }

    // Killed mid-sync: writes slowed down so that the process dies with
    // part of the change written; a fresh process starts at once.
    version += 1;
    let before = sb.stats();
    sb.inject(kube_sandbox::FaultRule {
        verb: Some("patch".into()),
        resource: Some("configmaps".into()),
        latency_ms: Some(50),
        ..Default::default()
    })
    .await?;
    edit(version).await?;
    until("part of the change written", limit, || async {
        let done = mirror_at(&c, version).await?;
        Ok(done >= n / 4)
    })
    .await?;
    ctl.kill();
    let partial = mirror_at(&c, version).await?;
    sb.clear_faults().await;
    let t0 = Instant::now();
    ctl = Proc::start(&url, None, mirror_controller)?;
    let t1 = until("in step", limit, in_step(version)).await?;
    row(
        "killed mid-sync, restarted",
        "the new process's start",
        t1 - t0,
        format!(
            "{} ({partial} of {n} written when killed)",
            copy_writes(&before, &sb.stats())
        ),
    );
    ctl.stop().await;

    // Leader election with the default 15 s lease and 2 s retry: a leader
    // and a standby, the leader stopped (its Lease released) or killed
    // (its Lease left to run out).
    for (i, (fault, kill)) in [
        ("leader stopped (Lease released)", false),
        ("leader killed (Lease runs out)", true),
    ]
    .into_iter()
    .enumerate()
    {
        let lease = format!("mirra-bench-{i}");
        let mut leader = Proc::start(&url, Some((&lease, "leader")), mirror_controller)?;
        leader.wait_leading().await?;
        let standby = Proc::start(&url, Some((&lease, "standby")), mirror_controller)?;
        // The standby has tried once and found the Lease held.
        tokio::time::sleep(Duration::from_secs(1)).await;
        version += 1;
        let before = sb.stats();
        let t0 = Instant::now();
        if kill {
            leader.kill();
        } else {
            leader.stop().await;
        }
        edit(version).await?;
        let t1 = until("in step", limit, in_step(version)).await?;
        row(
            fault,
            "the leader's end",
            t1 - t0,
            copy_writes(&before, &sb.stats()),
        );
        standby.stop().await;
    }
    Ok(rows)
}

// ----- the catalog ------------------------------------------------------------

/// A TCP relay in front of Consul that can be taken down (its port refuses
/// connections, open ones are cut) and brought back on the same port.
struct Relay {
    addr: SocketAddr,
    target: SocketAddr,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Relay {
    async fn start(target: SocketAddr) -> anyhow::Result<Relay> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let mut r = Relay {
            addr: listener.local_addr()?,
            target,
            task: None,
        };
        r.serve(listener);
        Ok(r)
    }

    fn serve(&mut self, listener: TcpListener) {
        let target = self.target;
        self.task = Some(tokio::spawn(async move {
            // Dropping the set (the task aborted) cuts every connection.
            let mut conns = tokio::task::JoinSet::new();
            loop {
                let Ok((mut inbound, _)) = listener.accept().await else {
                    continue;
                };
                conns.spawn(async move {
                    if let Ok(mut outbound) = TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
                while conns.try_join_next().is_some() {}
            }
        }));
    }

    fn down(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }

    async fn up(&mut self) -> anyhow::Result<()> {
        let start = Instant::now();
        let listener = loop {
            match TcpListener::bind(self.addr).await {
                Ok(l) => break l,
                Err(e) if start.elapsed() > Duration::from_secs(10) => return Err(e.into()),
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        };
        self.serve(listener);
        Ok(())
    }
}

fn endpoint(generation: usize, svc: usize) -> String {
    format!("10.{}.{}.{}", 100 + generation, svc / 256, svc % 256)
}

fn slice(name: &str, ips: &[String]) -> anyhow::Result<EndpointSlice> {
    let endpoints: Vec<_> = ips
        .iter()
        .map(|a| {
            json!({"addresses": [a], "conditions": {"ready": true},
                   "targetRef": {"kind": "Pod", "name": format!("{name}-{a}")}})
        })
        .collect();
    Ok(serde_json::from_value(json!({
        "metadata": {"name": format!("{name}-1"), "namespace": NS,
                     "labels": {"kubernetes.io/service-name": name}},
        "addressType": "IPv4",
        "endpoints": endpoints,
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]
    }))?)
}

/// The Service's two endpoints: a fixed one and one of `generation`.
fn svc_ips(generation: usize, svc: usize) -> Vec<String> {
    vec![endpoint(0, svc), endpoint(generation, svc)]
}

async fn put_slices(
    c: &kube::Client,
    svcs: std::ops::Range<usize>,
    generation: usize,
) -> anyhow::Result<()> {
    let api: Api<EndpointSlice> = Api::namespaced(c.clone(), NS);
    let results: Vec<anyhow::Result<()>> = futures::stream::iter(svcs)
        .map(|i| {
            let api = api.clone();
            async move {
                let name = format!("svc-{i:05}");
                let body = slice(&name, &svc_ips(generation, i))?;
                api.patch(
                    &format!("{name}-1"),
                    &PatchParams::apply("bench").force(),
                    &Patch::Apply(&body),
                )
                .await?;
                Ok(())
            }
        })
        .buffer_unordered(16)
        .collect()
        .await;
    results.into_iter().collect()
}

fn catalog_controller(
    consul_url: String,
) -> impl Fn(
    kube::Client,
    mirra_mirror_controller::mirra_runtime::LeaseDeadline,
    CancellationToken,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>
+ Send
+ Sync
+ 'static {
    move |kube, lease, stop| {
        let consul_url = consul_url.clone();
        Box::pin(async move {
            let sync = SyncSettings {
                allow_k8s_namespaces: ["*".to_owned()].into(),
                consul_node_name: NODE.to_owned(),
                ..SyncSettings::default()
            };
            let mut settings = mirra_catalog_controller::Settings::new(sync);
            settings.lease = lease;
            let consul = match mirra_consul::ConsulConfig::new(&consul_url)
                .map_err(anyhow::Error::from)
                .and_then(|cfg| mirra_consul::Client::new(cfg).map_err(anyhow::Error::from))
            {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("catalog controller: {e}");
                    return;
                }
            };
            let ready = Readiness::new().register("catalog");
            if let Err(e) = mirra_catalog_controller::run(
                kube,
                consul,
                settings,
                ready,
                CatalogMetrics::default(),
                stop,
            )
            .await
            {
                eprintln!("catalog controller failed: {e}");
            }
        })
    }
}

/// Addresses of the instances on mirra's node.
async fn consul_addresses(c: &mirra_consul::Client) -> anyhow::Result<BTreeSet<String>> {
    let v = c
        .node_services(NODE, &mirra_consul::QueryOptions::default())
        .await?;
    Ok(v.value.services.into_iter().map(|s| s.address).collect())
}

/// Whether the first [`CHANGED`] Services show `generation`'s endpoint and
/// not the one before.
async fn catalog_at(c: &mirra_consul::Client, generation: usize) -> anyhow::Result<bool> {
    let got = consul_addresses(c).await?;
    Ok((0..CHANGED).all(|i| {
        got.contains(&endpoint(generation, i)) && !got.contains(&endpoint(generation - 1, i))
    }))
}

async fn catalog(args: &Args) -> anyhow::Result<Vec<Row>> {
    let ksb = kube_sandbox::Sandbox::start(kube_sandbox::Config {
        bookmark_interval: Duration::from_secs(24 * 3600),
        ..Default::default()
    })
    .await?;
    let kurl = ksb.url();
    let k = client(&kurl)?;
    for ns in [NS, OPS] {
        Api::<Namespace>::all(k.clone())
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": ns}}))?,
            )
            .await?;
    }
    let services: Api<Service> = Api::namespaced(k.clone(), NS);
    let created: Vec<anyhow::Result<()>> = futures::stream::iter(0..args.services)
        .map(|i| {
            let services = services.clone();
            async move {
                let body: Service = serde_json::from_value(json!({
                    "metadata": {"name": format!("svc-{i:05}"), "namespace": NS},
                    "spec": {"type": "ClusterIP",
                             "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}
                }))?;
                services.create(&PostParams::default(), &body).await?;
                Ok(())
            }
        })
        .buffer_unordered(16)
        .collect()
        .await;
    created.into_iter().collect::<anyhow::Result<()>>()?;
    let mut generation = 1;
    put_slices(&k, 0..args.services, generation).await?;

    let csb = consul_sandbox::Sandbox::start(consul_sandbox::Config::default()).await?;
    let reader = mirra_consul::Client::new(mirra_consul::ConsulConfig::new(&csb.url())?)?;
    let mut relay = Relay::start(csb.addr()).await?;
    let consul_url = format!("http://{}", relay.addr);
    let limit = Duration::from_secs(120);
    let want = args.services * 2;

    let start = Instant::now();
    let mut ctl = Proc::start(&kurl, None, catalog_controller(consul_url.clone()))?;
    until("the initial catalog", limit, || async {
        Ok(consul_addresses(&reader).await?.len() == want)
    })
    .await?;
    println!(
        "catalog: {} Services x 2 endpoints in Consul {:.1} s after start",
        args.services,
        start.elapsed().as_secs_f64()
    );
    let mut rows = Vec::new();
    let mut row = |fault, from, recovery: Duration, applies: u64| {
        let writes = format!("{applies} Raft applies");
        println!(
            "catalog | {fault} | {:.2} s | {writes}",
            recovery.as_secs_f64()
        );
        rows.push(Row {
            controller: "catalog",
            fault,
            measured_from: from,
            recovery,
            writes,
        });
    };
    let in_step = |g: usize| {
        let reader = reader.clone();
        move || {
            let reader = reader.clone();
            async move { catalog_at(&reader, g).await }
        }
    };

    // A watch drops; the change is made right after.
    generation += 1;
    let before = csb.stats().raft_applies;
    ksb.close_watches();
    put_slices(&k, 0..CHANGED, generation).await?;
    let t0 = Instant::now();
    let t1 = until("in step", limit, in_step(generation)).await?;
    row(
        "Kubernetes watch drop",
        "the change",
        t1 - t0,
        csb.stats().raft_applies - before,
    );

    // 410 on every watch.
    generation += 1;
    let before = csb.stats().raft_applies;
    Api::<Secret>::namespaced(k.clone(), "default")
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "bump"}}))?,
        )
        .await?;
    ksb.compact().await;
    ksb.close_watches();
    put_slices(&k, 0..CHANGED, generation).await?;
    let t0 = Instant::now();
    let t1 = until("in step", limit, in_step(generation)).await?;
    row(
        "Kubernetes 410 Gone on every watch",
        "the change",
        t1 - t0,
        csb.stats().raft_applies - before,
    );

    // Consul refuses, for the fault's duration.
    for fault in [
        "Consul down (connection refused)",
        "Consul without a leader",
        "Consul 500 on every request",
    ] {
        generation += 1;
        let before = csb.stats().raft_applies;
        match fault {
            "Consul down (connection refused)" => relay.down(),
            "Consul without a leader" => csb.faults().set_leaderless(true),
            _ => {
                csb.faults().add(
                    consul_sandbox::FaultRule::error(500, "rpc error making call: EOF")
                        .with_path_prefix("/v1/"),
                );
            }
        }
        put_slices(&k, 0..CHANGED, generation).await?;
        tokio::time::sleep(args.fault).await;
        if fault.starts_with("Consul down") {
            relay.up().await?;
        } else {
            csb.faults().clear();
        }
        let t0 = Instant::now();
        let t1 = until("in step", limit, in_step(generation)).await?;
        row(
            fault,
            "the fault lifted",
            t1 - t0,
            csb.stats().raft_applies - before,
        );
    }

    // Killed mid-sync: the process dies once the change is underway; a
    // fresh one starts at once.
    generation += 1;
    let before = csb.stats().raft_applies;
    csb.faults().add(
        consul_sandbox::FaultRule::latency(Duration::from_millis(500)).with_path_prefix("/v1/txn"),
    );
    let txns = csb.stats().requests_for("PUT /v1/txn");
    put_slices(&k, 0..CHANGED, generation).await?;
    until("a transaction in flight", limit, || async {
        Ok(csb.stats().requests_for("PUT /v1/txn") > txns)
    })
    .await?;
    ctl.kill();
    csb.faults().clear();
    let t0 = Instant::now();
    ctl = Proc::start(&kurl, None, catalog_controller(consul_url.clone()))?;
    let t1 = until("in step", limit, in_step(generation)).await?;
    row(
        "killed mid-sync, restarted",
        "the new process's start",
        t1 - t0,
        csb.stats().raft_applies - before,
    );
    ctl.stop().await;

    for (i, (fault, kill)) in [
        ("leader stopped (Lease released)", false),
        ("leader killed (Lease runs out)", true),
    ]
    .into_iter()
    .enumerate()
    {
        let lease = format!("mirra-bench-catalog-{i}");
        let mut leader = Proc::start(
            &kurl,
            Some((&lease, "leader")),
            catalog_controller(consul_url.clone()),
        )?;
        leader.wait_leading().await?;
        let standby = Proc::start(
            &kurl,
            Some((&lease, "standby")),
            catalog_controller(consul_url.clone()),
        )?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        generation += 1;
        let before = csb.stats().raft_applies;
        let t0 = Instant::now();
        if kill {
            leader.kill();
        } else {
            leader.stop().await;
        }
        put_slices(&k, 0..CHANGED, generation).await?;
        let t1 = until("in step", limit, in_step(generation)).await?;
        row(
            fault,
            "the leader's end",
            t1 - t0,
            csb.stats().raft_applies - before,
        );
        standby.stop().await;
    }
    Ok(rows)
}

/// Runs both halves and prints the table.
pub async fn run(args: Vec<String>) -> anyhow::Result<()> {
    let args = parse(args)?;
    println!(
        "scenario: faults (mirror {} namespaces x {} items; catalog {} Services x 2 endpoints, {} changed per row; refusing faults last {} s)",
        args.namespaces,
        args.items,
        args.services,
        CHANGED,
        args.fault.as_secs()
    );
    let mut rows = mirror(&args).await?;
    rows.extend(catalog(&args).await?);
    println!();
    println!("| controller | fault | measured from | recovery | writes |");
    println!("|---|---|---|---|---|");
    for r in rows {
        println!(
            "| {} | {} | {} | {:.2} s | {} |",
            r.controller,
            r.fault,
            r.measured_from,
            r.recovery.as_secs_f64(),
            r.writes
        );
    }
    Ok(())
}
