//! The controllers the catalog scenario compares: starting each, reading its
//! metrics (write counts, latency buckets) and stopping it.
//!
//! This module must NOT create the Services and endpoints the run measures:
//! [`super::run`] does.

use super::*;

/// The controller under test: a `mirra sync-catalog` child process (so
/// that its RSS is its own), or a task in this process when the `mirra`
/// binary was not built.
#[allow(clippy::large_enum_variant)]
pub(super) enum Controller {
    InProcess {
        stop: CancellationToken,
        task: tokio::task::JoinHandle<Result<(), mirra_catalog_controller::ControllerError>>,
        ready: mirra_catalog_controller::ReadyFlag,
        metrics: CatalogMetrics,
    },
    Child {
        child: tokio::process::Child,
        /// `http://127.0.0.1:<port>` of `-listen` (`/health/ready`).
        health: String,
        /// `http://127.0.0.1:<port>` of `-metrics-port` (`/metrics`).
        metrics: String,
        http: reqwest::Client,
    },
}

/// Where and how to start the controller.
pub(super) struct ControllerSpec<'a> {
    pub(super) bin: Option<&'a Path>,
    pub(super) kubeconfig: Option<&'a Path>,
    pub(super) consul_url: String,
    pub(super) txn_batch: usize,
    /// Mirror Kubernetes namespaces into Consul namespaces (with
    /// [`MIRROR_PREFIX`]).
    pub(super) mirrored: bool,
}

/// A free loopback port (bound then released: the child binds it next).
pub(super) fn free_port() -> anyhow::Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

pub(super) async fn start(
    kube: &kube::Client,
    consul: &mirra_consul::Client,
    spec: &ControllerSpec<'_>,
) -> anyhow::Result<Controller> {
    if let (Some(bin), Some(kubeconfig)) = (spec.bin, spec.kubeconfig) {
        let (health, metrics) = (free_port()?, free_port()?);
        // A profiler can wrap the controller (for example
        // `MIRRA_BENCH_WRAP=heaptrack`); its figures are then the wrapper's.
        let mut cmd = match std::env::var_os("MIRRA_BENCH_WRAP") {
            Some(wrapper) => {
                let mut c = tokio::process::Command::new(wrapper);
                c.arg(bin);
                c
            }
            None => tokio::process::Command::new(bin),
        };
        let mirroring = [
            "-enable-namespaces".to_owned(),
            "-enable-k8s-namespace-mirroring".to_owned(),
            format!("-k8s-namespace-mirroring-prefix={MIRROR_PREFIX}"),
        ];
        let child = cmd
            .arg("sync-catalog")
            .args([
                "-to-k8s=false",
                "-allow-k8s-namespace=*",
                &format!("-txn-batch-size={}", spec.txn_batch),
                &format!("-listen=127.0.0.1:{health}"),
                &format!("-metrics-port={metrics}"),
                "-log-level=warn",
            ])
            .args(if spec.mirrored { &mirroring[..] } else { &[] })
            .env("KUBECONFIG", kubeconfig)
            .env("CONSUL_HTTP_ADDR", &spec.consul_url)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {} sync-catalog", bin.display()))?;
        return Ok(Controller::Child {
            child,
            health: format!("http://127.0.0.1:{health}"),
            metrics: format!("http://127.0.0.1:{metrics}"),
            http: reqwest::Client::new(),
        });
    }
    let sync = SyncSettings {
        allow_k8s_namespaces: ["*".to_owned()].into(),
        consul_namespaces: mirra_catalog_controller::ConsulNamespaces::from_flags(
            spec.mirrored,
            "",
            spec.mirrored,
            MIRROR_PREFIX,
        ),
        ..SyncSettings::default()
    };
    let mut settings = Settings::new(sync);
    settings.txn_batch = spec.txn_batch;
    let stop = CancellationToken::new();
    let ready = Readiness::new().register("catalog");
    let metrics = CatalogMetrics::default();
    let task = tokio::spawn(mirra_catalog_controller::run(
        kube.clone(),
        consul.clone(),
        settings,
        ready.clone(),
        metrics.clone(),
        stop.clone(),
    ));
    Ok(Controller::InProcess {
        stop,
        task,
        ready,
        metrics,
    })
}

/// The value of one series in Prometheus text (`name` with its labels, as
/// printed), summed over every line that starts with it.
pub(super) fn series_sum(text: &str, series: &str) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.rsplit_once(' '))
        .filter(|(name, _)| *name == series)
        .filter_map(|(_, v)| v.parse::<f64>().ok())
        .sum()
}

/// The controller's own event-to-Consul histogram: cumulative counts by
/// upper bound (seconds), summed over kinds.
pub(super) fn latency_buckets(text: &str) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64)> = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("mirra_catalog_event_to_consul_seconds_bucket{") else {
            continue;
        };
        let Some((labels, value)) = rest.rsplit_once("} ") else {
            continue;
        };
        let Some(le) = labels
            .split(',')
            .find_map(|kv| kv.trim().strip_prefix("le=\""))
            .map(|v| v.trim_end_matches('"'))
        else {
            continue;
        };
        let le = if le == "+Inf" {
            f64::INFINITY
        } else {
            match le.parse() {
                Ok(v) => v,
                Err(_) => continue,
            }
        };
        let Ok(n) = value.trim().parse::<f64>() else {
            continue;
        };
        match out.iter_mut().find(|(b, _)| *b == le) {
            Some(slot) => slot.1 += n,
            None => out.push((le, n)),
        }
    }
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    out
}

/// The smallest bucket bound holding fraction `p` of the observations made
/// between two histogram snapshots.
pub(super) fn bucket_quantile(before: &[(f64, f64)], after: &[(f64, f64)], p: f64) -> Option<f64> {
    let delta: Vec<(f64, f64)> = after
        .iter()
        .map(|(le, n)| {
            let b = before.iter().find(|(l, _)| l == le).map_or(0.0, |x| x.1);
            (*le, n - b)
        })
        .collect();
    let total = delta.last()?.1;
    if total <= 0.0 {
        return None;
    }
    delta
        .iter()
        .find(|(_, n)| *n >= p * total)
        .map(|(le, _)| *le)
}

impl Controller {
    pub(super) async fn metrics_text(&self) -> anyhow::Result<String> {
        match self {
            Controller::InProcess { .. } => Ok(String::new()),
            Controller::Child { metrics, http, .. } => Ok(http
                .get(format!("{metrics}/metrics"))
                .send()
                .await?
                .error_for_status()?
                .text()
                .await?),
        }
    }

    pub(super) async fn is_ready(&self) -> bool {
        match self {
            Controller::InProcess { ready, .. } => ready.is_ready(),
            Controller::Child { health, http, .. } => http
                .get(format!("{health}/health/ready"))
                .send()
                .await
                .is_ok_and(|r| r.status().is_success()),
        }
    }

    pub(super) async fn pending_keys(&self) -> anyhow::Result<u64> {
        match self {
            Controller::InProcess { metrics, .. } => {
                Ok(u64::try_from(metrics.pending_keys()).unwrap_or(0))
            }
            Controller::Child { .. } => {
                let t = self.metrics_text().await?;
                Ok(series_sum(&t, "mirra_catalog_pending_keys") as u64)
            }
        }
    }

    /// (transactions, registrations, deregistrations, writes avoided).
    pub(super) async fn totals(&self) -> anyhow::Result<(u64, u64, u64, u64)> {
        match self {
            Controller::InProcess { metrics, .. } => Ok((
                metrics.transactions_total(),
                metrics.operations_total("register"),
                metrics.operations_total("deregister"),
                metrics.writes_avoided_total(),
            )),
            Controller::Child { .. } => {
                let t = self.metrics_text().await?;
                Ok((
                    series_sum(&t, "mirra_catalog_transactions_total") as u64,
                    series_sum(&t, "mirra_catalog_operations_total{verb=\"register\"}") as u64,
                    series_sum(&t, "mirra_catalog_operations_total{verb=\"deregister\"}") as u64,
                    series_sum(&t, "mirra_catalog_writes_avoided_total") as u64,
                ))
            }
        }
    }

    /// The controller's process (this one when it runs in process).
    pub(super) fn pid(&self) -> Option<u32> {
        match self {
            Controller::InProcess { .. } => Some(std::process::id()),
            Controller::Child { child, .. } => child.id(),
        }
    }

    /// (VmRSS, VmHWM) of the controller's process.
    pub(super) fn memory_mib(&self) -> (Option<f64>, Option<f64>) {
        let pid = match self {
            Controller::InProcess { .. } => "self".to_owned(),
            Controller::Child { child, .. } => match child.id() {
                Some(p) => p.to_string(),
                None => return (None, None),
            },
        };
        (proc_mib(&pid, "VmRSS:"), proc_mib(&pid, "VmHWM:"))
    }

    pub(super) async fn stop(self) -> anyhow::Result<()> {
        match self {
            Controller::InProcess { stop, task, .. } => {
                stop.cancel();
                task.await??;
            }
            Controller::Child { mut child, .. } => {
                child.kill().await?;
            }
        }
        Ok(())
    }

    /// Waits until the queue is empty and Consul saw no write for 2 s.
    pub(super) async fn settle(
        &self,
        consul: &Consul,
        http: &reqwest::Client,
    ) -> anyhow::Result<()> {
        let mut last = consul.counts(http).await?.raft_applies;
        let mut quiet = 0;
        while quiet < 10 {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let now = consul.counts(http).await?.raft_applies;
            if now == last && self.is_ready().await && self.pending_keys().await? == 0 {
                quiet += 1;
            } else {
                quiet = 0;
            }
            last = now;
        }
        Ok(())
    }
}
