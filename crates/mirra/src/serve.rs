//! What every long-running controller command shares: the Kubernetes
//! client (kubeconfig or in-cluster, rate limited), the health and metrics
//! servers, leader election, and stopping on SIGINT/SIGTERM.
//!
//! What it must NOT do: contain sync logic; the controller crates do.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use mirra_runtime::{
    LeaderConfig, LeaderElector, LeaderMetrics, LeaseDeadline, RateLimitConfig, Readiness,
};
use prometheus_client::registry::Registry;
use tokio_util::sync::CancellationToken;

/// Kubernetes client and leader-election flags, shared by `mirra run` and
/// `mirra sync-catalog`.
#[derive(Debug, Args)]
pub struct ClientArgs {
    /// Sustained requests per second to the Kubernetes API server. mirra
    /// sends only writes that change something, so this bounds bursts, not
    /// steady work.
    #[arg(long, default_value_t = 50.0)]
    pub kube_api_qps: f64,
    /// Requests to the Kubernetes API server that may go out at once.
    #[arg(long, default_value_t = 100)]
    pub kube_api_burst: u32,
    /// Run only while holding a Lease, so that several replicas can run and
    /// exactly one writes. Off by default: one replica needs no election.
    #[arg(long)]
    pub leader_elect: bool,
    /// Namespace of the leader-election Lease (default: the namespace mirra
    /// runs in, from `POD_NAMESPACE` or the service account).
    #[arg(long)]
    pub leader_elect_namespace: Option<String>,
}

/// Where `mirra run` serves health and metrics.
#[derive(Debug, Args)]
pub struct MirrorServeArgs {
    /// Address serving `/metrics` (Prometheus/OpenMetrics text).
    #[arg(long, default_value = "0.0.0.0:8080", env = "MIRRA_METRICS_ADDR")]
    pub metrics_addr: SocketAddr,
    /// Address serving `/healthz` (liveness) and `/readyz` (ready once every
    /// watch has its initial list). May be the same as `--metrics-addr`.
    #[arg(long, default_value = "0.0.0.0:8081", env = "MIRRA_HEALTH_ADDR")]
    pub health_addr: SocketAddr,
    /// Kubernetes client and leader election.
    #[command(flatten)]
    pub client: ClientArgs,
}

/// Where `mirra sync-catalog` serves health and metrics, with consul-k8s
/// sync-catalog's flag names and defaults.
#[derive(Debug, Args)]
pub struct CatalogServeArgs {
    /// Address serving `/health/ready` (204 when ready, else 500, as
    /// consul-k8s answers it; also `/healthz`, `/readyz`), as `host:port`
    /// or `:port`.
    #[arg(long, default_value = ":8080", value_parser = listen_addr)]
    pub listen: SocketAddr,
    /// Port serving `/metrics`.
    #[arg(long, default_value_t = 20300)]
    pub metrics_port: u16,
    /// Address `/metrics` binds to (with `-metrics-port`); `127.0.0.1`
    /// keeps it off the network, e.g. behind a sidecar that scrapes it.
    #[arg(long, default_value = "0.0.0.0", value_parser = metrics_ip)]
    pub metrics_address: std::net::IpAddr,
    /// Kubernetes client and leader election.
    #[command(flatten)]
    pub client: ClientArgs,
}

/// Parses the metrics bind address: an IPv4 or IPv6 address, no port.
pub fn metrics_ip(s: &str) -> Result<std::net::IpAddr, String> {
    s.trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .map_err(|_| {
            format!("invalid metrics address {s:?} (expected an IP address such as 127.0.0.1)")
        })
}

/// Parses a listen address in Go's style: `:8080` means every interface.
pub fn listen_addr(s: &str) -> Result<SocketAddr, String> {
    let full = if s.starts_with(':') {
        format!("0.0.0.0{s}")
    } else {
        s.to_string()
    };
    full.parse()
        .map_err(|_| format!("invalid listen address {s:?} (expected host:port or :port)"))
}

/// A client from `KUBECONFIG`/`~/.kube/config` or the in-cluster service
/// account, rate limited as the flags say.
pub async fn kube_client(args: &ClientArgs) -> anyhow::Result<kube::Client> {
    kube_client_from(args, None).await
}

/// As [`kube_client`], from the kubeconfig file `kubeconfig` when given
/// (consul-k8s's `-kubeconfig`).
pub async fn kube_client_from(
    args: &ClientArgs,
    kubeconfig: Option<&std::path::Path>,
) -> anyhow::Result<kube::Client> {
    let config = match kubeconfig {
        Some(path) => {
            let file = kube::config::Kubeconfig::read_from(path)
                .with_context(|| format!("cannot read -kubeconfig {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(file, &Default::default())
                .await
                .with_context(|| format!("invalid -kubeconfig {}", path.display()))?
        }
        None => kube::Config::infer()
            .await
            .context("cannot find Kubernetes credentials (set KUBECONFIG, or run in a cluster)")?,
    };
    let limits = RateLimitConfig {
        qps: args.kube_api_qps,
        burst: args.kube_api_burst,
    };
    mirra_runtime::ratelimit::rate_limited_client(config, limits)
        .context("cannot build the Kubernetes client")
}

/// Starts the health and metrics servers (one server when both addresses
/// are the same); they stop when `stop` is cancelled. Returns the bound
/// addresses (port 0 picks a free port).
pub async fn start_health(
    metrics_addr: SocketAddr,
    health_addr: SocketAddr,
    readiness: Readiness,
    registry: Registry,
    previews: Vec<mirra_runtime::Preview>,
    stop: CancellationToken,
) -> anyhow::Result<Vec<SocketAddr>> {
    let mut bound = Vec::new();
    let registry = Arc::new(registry);
    let mut addrs = vec![metrics_addr];
    if health_addr != metrics_addr {
        addrs.push(health_addr);
    }
    for addr in addrs {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("cannot listen on {addr} for health and metrics"))?;
        bound.push(listener.local_addr()?);
        let readiness = readiness.clone();
        let registry = registry.clone();
        let previews = previews.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let shutdown = async move { stop.cancelled().await };
            if let Err(e) =
                mirra_runtime::serve_health(listener, readiness, registry, previews, shutdown).await
            {
                tracing::error!(error = %e, %addr, "health server failed");
            }
        });
    }
    Ok(bound)
}

/// Cancels `token` on SIGINT or SIGTERM.
pub fn cancel_on_signal(token: CancellationToken) {
    tokio::spawn(async move {
        crate::sandbox::shutdown_signal().await;
        token.cancel();
    });
}

/// Runs `controller` until `stop`, or, with `--leader-elect`, only while
/// this replica holds the Lease (see [`mirra_runtime::run_while_leading`]):
/// it is stopped (its token cancelled) when leadership is lost and started
/// again when it is regained. The controller gets the [`LeaseDeadline`] its
/// writers fence on ([`LeaseDeadline::always`] without election).
///
/// The time a write must fit in under leader election (the Lease's
/// duration minus its renewal interval, checked right before each write),
/// or `None` without election (writes are never fenced).
pub fn fence_budget(args: &ClientArgs) -> Option<std::time::Duration> {
    args.leader_elect
        .then(|| LeaderConfig::new("", "", "").fence_budget())
}

/// Refuses `--dry-run` with `--leader-elect`: a preview never takes the
/// Lease (taking it would stop the leader it runs beside, or be a write).
pub fn check_dry_run(args: &ClientArgs, dry_run: bool, flag: &str) -> anyhow::Result<()> {
    anyhow::ensure!(
        !(dry_run && args.leader_elect),
        "{flag} cannot be combined with --leader-elect: a preview never takes the \
         leader-election Lease (taking it would be a write, and would stop the replicas \
         it runs beside); run the preview as a single replica without --leader-elect"
    );
    Ok(())
}

/// Refuses a request timeout that leader election's fence would never let
/// through: every write would be held back, and nothing synced.
pub fn check_write_timeout(
    args: &ClientArgs,
    what: &str,
    timeout: std::time::Duration,
) -> anyhow::Result<()> {
    if let Some(budget) = fence_budget(args)
        && timeout >= budget
    {
        anyhow::bail!(
            "{what} is {}, but with --leader-elect a write is sent only while the Lease has \
             at least its timeout left, at most {} before each renewal: every write would \
             be held back. Use a timeout under {}",
            humantime(timeout),
            humantime(budget),
            humantime(budget)
        );
    }
    Ok(())
}

fn humantime(d: std::time::Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

/// While this replica waits for the Lease, `readiness` reports it ready (a
/// healthy standby); as the leader it is ready once its controllers are.
/// With election, readiness also fails while the Lease has not been reached
/// for [`mirra_runtime::leader::UNREACHABLE_LEASES`] lease durations. On
/// shutdown the controller's in-flight writes end before the Lease is
/// released.
pub async fn run_controller<F, Fut>(
    args: &ClientArgs,
    client: kube::Client,
    lease_name: &str,
    readiness: &Readiness,
    metrics: LeaderMetrics,
    stop: CancellationToken,
    mut controller: F,
) -> anyhow::Result<()>
where
    F: FnMut(CancellationToken, LeaseDeadline) -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    if !args.leader_elect {
        // One replica, no election: it always leads.
        metrics.set_leading(true);
        return controller(stop, LeaseDeadline::always()).await;
    }
    let namespace = args
        .leader_elect_namespace
        .clone()
        .or_else(mirra_mirror_controller::settings::pod_namespace)
        .context(
            "--leader-elect needs the Lease's namespace: pass --leader-elect-namespace \
             or set POD_NAMESPACE",
        )?;
    let config = LeaderConfig::new(namespace, lease_name, mirra_runtime::default_identity());
    let elector = LeaderElector::new(client, config)
        .context("leader election")?
        .with_metrics(metrics)
        .with_readiness(readiness.register_condition("leader-election lease", true));
    mirra_runtime::run_while_leading(elector, readiness, stop, controller).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_addresses_in_go_style() {
        assert_eq!(
            listen_addr(":8080").unwrap(),
            "0.0.0.0:8080".parse().unwrap()
        );
        assert_eq!(
            listen_addr("127.0.0.1:9").unwrap(),
            "127.0.0.1:9".parse().unwrap()
        );
        for bad in ["", ":", "8080", ":99999", "localhost", "host:port"] {
            assert!(listen_addr(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn metrics_addresses_are_ips_without_a_port() {
        assert_eq!(
            metrics_ip("127.0.0.1").unwrap(),
            std::net::IpAddr::from([127, 0, 0, 1])
        );
        assert_eq!(
            metrics_ip("[::1]").unwrap(),
            "::1".parse::<std::net::IpAddr>().unwrap()
        );
        for bad in ["", "localhost", "127.0.0.1:20300", "0.0.0.0/0", "1.2.3"] {
            let err = metrics_ip(bad).unwrap_err();
            assert!(err.contains("invalid metrics address"), "{bad:?}: {err}");
        }
    }

    fn client_args(flags: &[&str]) -> ClientArgs {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            client: ClientArgs,
        }
        let argv = std::iter::once("mirra").chain(flags.iter().copied());
        <Cli as clap::Parser>::parse_from(argv).client
    }

    #[test]
    fn a_write_timeout_the_fence_would_always_hold_back_is_refused_under_election() {
        let sec = std::time::Duration::from_secs;
        let elected = client_args(&["--leader-elect"]);
        assert_eq!(fence_budget(&elected), Some(sec(13)));
        assert!(check_write_timeout(&elected, "t", sec(10)).is_ok());
        let err = check_write_timeout(&elected, "the Consul request timeout", sec(13))
            .unwrap_err()
            .to_string();
        assert!(err.contains("is 13s") && err.contains("under 13s"), "{err}");
        assert!(check_write_timeout(&elected, "t", sec(90)).is_err());
        // Without election nothing is fenced: any timeout goes.
        let single = client_args(&[]);
        assert_eq!(fence_budget(&single), None);
        assert!(check_write_timeout(&single, "t", sec(90)).is_ok());
    }
}
