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
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use mirra_catalog_controller::{CatalogMetrics, SyncSettings};
use mirra_mirror_controller::mirra_runtime::leader::{LeaderConfig, LeaderElector};
use mirra_mirror_controller::mirra_runtime::{Metrics, Readiness, run_while_leading};
use mirra_mirror_controller::prometheus_client::registry::Registry;
use mirra_mirror_controller::tokio_util::sync::CancellationToken;
use mirra_mirror_controller::{Settings, WatchScope};
use serde_json::json;
use tokio::net::{TcpListener, TcpStream};

use crate::mirror::client;

mod catalog_recovery;
mod mirror_recovery;

use catalog_recovery::*;
use mirror_recovery::*;

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

/// The two leader-election rows, each controller's last: the leader
/// stopped or killed, and whether it is killed.
const LEADER_FAULTS: [(&str, bool); 2] = [
    ("leader stopped (Lease released)", false),
    ("leader killed (Lease runs out)", true),
];

/// A kube sandbox with no periodic bookmarks, so that the 410 row can send
/// every watch to a compacted revision.
async fn sandbox_without_bookmarks() -> anyhow::Result<kube_sandbox::Sandbox> {
    Ok(kube_sandbox::Sandbox::start(kube_sandbox::Config {
        bookmark_interval: Duration::from_secs(24 * 3600),
        ..Default::default()
    })
    .await?)
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

    /// Ends it as a [`LEADER_FAULTS`] row says: killed, or stopped.
    async fn end(self, kill: bool) {
        if kill {
            self.kill();
        } else {
            self.stop().await;
        }
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

/// The time from now until `in_step` holds, polled as [`until`] polls.
async fn time_until_in_step<F, Fut>(limit: Duration, in_step: F) -> anyhow::Result<Duration>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<bool>>,
{
    let t0 = Instant::now();
    Ok(until("in step", limit, in_step).await? - t0)
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
