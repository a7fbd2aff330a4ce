//! `mirra run` and `mirra sync-catalog`: build the clients and settings
//! from the flags, serve health and metrics, and run the controller (while
//! leading, with `--leader-elect`) until SIGINT/SIGTERM.

use anyhow::Context;
use mirra_runtime::{LeaderMetrics, Metrics, Readiness};
use prometheus_client::registry::Registry;
use tokio_util::sync::CancellationToken;

use crate::cli::{RunCommandArgs, SyncCatalogCommandArgs};
use crate::serve;

/// `mirra run`: the mirror controller.
pub async fn mirror(args: RunCommandArgs) -> anyhow::Result<()> {
    serve::check_dry_run(&args.serve.client, args.mirror.dry_run, "--dry-run")?;
    let settings = mirra_mirror_controller::Settings::from_args(&args.mirror)?;
    let client = serve::kube_client(&args.serve.client).await?;
    let mut registry = Registry::default();
    let metrics = Metrics::register(&mut registry);
    let previews: Vec<_> = settings.preview.iter().cloned().collect();
    for p in &previews {
        p.register(&mut registry);
    }
    let leader_metrics = LeaderMetrics::register(&mut registry);
    let readiness = Readiness::new();
    let ready = readiness.register("mirror");
    let stop = CancellationToken::new();
    serve::cancel_on_signal(stop.clone());
    serve::start_health(
        args.serve.metrics_addr,
        args.serve.health_addr,
        readiness.clone(),
        registry,
        previews,
        stop.clone(),
    )
    .await?;
    let result = serve::run_controller(
        &args.serve.client,
        client.clone(),
        "mirra-mirror",
        &readiness,
        leader_metrics,
        stop.clone(),
        |token, lease| {
            let settings = mirra_mirror_controller::Settings {
                lease,
                ..settings.clone()
            };
            let run = mirra_mirror_controller::run(
                client.clone(),
                settings,
                ready.clone(),
                metrics.clone(),
                token,
            );
            async move { run.await.context("mirror controller") }
        },
    )
    .await;
    stop.cancel();
    result
}

/// `mirra sync-catalog`: Kubernetes Services into the Consul catalog, and
/// (with `-to-k8s`, on by default as in consul-k8s) Consul services back as
/// ExternalName Services.
pub async fn catalog(args: SyncCatalogCommandArgs) -> anyhow::Result<()> {
    serve::check_dry_run(&args.serve.client, args.catalog.dry_run, "-dry-run")?;
    let settings = mirra_catalog_controller::Settings::from_args(&args.catalog)?;
    let (to_consul, to_k8s) = (settings.sync.to_consul, settings.sync.to_k8s);
    anyhow::ensure!(
        to_consul || to_k8s,
        "-to-consul=false and -to-k8s=false leave nothing to sync"
    );
    let consul_config = args.catalog.consul_config()?;
    let consul = mirra_consul::Client::new(consul_config).context("Consul client")?;
    serve::check_write_timeout(
        &args.serve.client,
        "the Consul request timeout (CONSUL_API_TIMEOUT, -api-timeout)",
        consul.request_timeout(),
    )?;
    log_ignored_settings(&args.catalog);
    let client =
        serve::kube_client_from(&args.serve.client, args.catalog.kubeconfig.as_deref()).await?;
    let mut registry = Registry::default();
    let metrics = mirra_catalog_controller::register_metrics(&mut registry);
    let leader_metrics = LeaderMetrics::register(&mut registry);
    let previews: Vec<_> = settings.preview.iter().cloned().collect();
    for p in &previews {
        p.register(&mut registry);
    }
    let readiness = Readiness::new();
    let ready = to_consul.then(|| readiness.register("catalog"));
    let ready_k8s = to_k8s.then(|| readiness.register("to-k8s"));
    let stop = CancellationToken::new();
    serve::cancel_on_signal(stop.clone());
    let metrics_addr =
        std::net::SocketAddr::new(args.serve.metrics_address, args.serve.metrics_port);
    serve::start_health(
        metrics_addr,
        args.serve.listen,
        readiness.clone(),
        registry,
        previews,
        stop.clone(),
    )
    .await?;
    // With an auth method, the token comes from a login; as consul-k8s
    // does, nothing syncs until it succeeded (a signal still stops the
    // wait).
    let login_ready = consul
        .login_auth_method()
        .map(|method| readiness.register_condition(format!("consul login ({method})"), false));
    if !log_in_until_stopped(&consul, &stop, login_ready.as_ref()).await {
        return Ok(());
    }
    let result = serve::run_controller(
        &args.serve.client,
        client.clone(),
        "mirra-sync-catalog",
        &readiness,
        leader_metrics,
        stop.clone(),
        |token, lease| {
            let settings = mirra_catalog_controller::Settings {
                lease,
                ..settings.clone()
            };
            let reverse = ready_k8s.clone().map(|ready| {
                tokio::spawn(mirra_catalog_controller::to_k8s::run_to_k8s(
                    client.clone(),
                    consul.clone(),
                    settings.sync.clone(),
                    mirra_runtime::WriteFence::new(
                        settings.lease.clone(),
                        settings.kube_write_timeout,
                    ),
                    settings.preview.clone(),
                    ready,
                    token.child_token(),
                ))
            });
            let forward = ready.clone().map(|ready| {
                mirra_catalog_controller::run(
                    client.clone(),
                    consul.clone(),
                    settings.clone(),
                    ready,
                    metrics.clone(),
                    token.clone(),
                )
            });
            async move {
                let result = match forward {
                    Some(run) => run.await.context("catalog sync"),
                    None => {
                        token.cancelled().await;
                        Ok(())
                    }
                };
                // The reverse direction stops with the forward one (an
                // error there ends the process, which restarts both).
                token.cancel();
                if let Some(task) = reverse {
                    task.await.context("Consul-to-Kubernetes sync task")?;
                }
                result
            }
        },
    )
    .await;
    stop.cancel();
    // The login token must not outlive the process in Consul.
    if let Err(e) = consul.logout().await {
        tracing::warn!(error = %e, "logging out of Consul failed; the login token stays until deleted");
    }
    result
}

/// Logs in to the configured auth method, retrying with the client's
/// backoff while it fails; `false` if `stop` ended the wait first. Without
/// a login configured, `true` at once.
/// While it fails, `ready` (the login's readiness condition) fails too, so
/// `/health/ready` reports it, as consul-k8s's does until its login
/// succeeded.
async fn log_in_until_stopped(
    consul: &mirra_consul::Client,
    stop: &CancellationToken,
    ready: Option<&mirra_runtime::ReadyCondition>,
) -> bool {
    let Some(method) = consul.login_auth_method().map(str::to_owned) else {
        return true;
    };
    let mut failures = 0u32;
    loop {
        let err = tokio::select! {
            r = consul.login() => match r {
                Ok(()) => {
                    if let Some(ready) = ready {
                        ready.set(true);
                    }
                    return true;
                }
                Err(e) => e,
            },
            () = stop.cancelled() => return false,
        };
        failures = failures.saturating_add(1);
        let delay = consul.retry_policy().jittered_delay(failures);
        tracing::warn!(
            auth_method = %method,
            error = %err,
            failures,
            delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            "logging in to Consul failed; retrying"
        );
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = stop.cancelled() => return false,
        }
    }
}

/// Says at start-up which consul-k8s settings mirra accepts but does
/// nothing with, so that nobody expects an effect from them.
fn log_ignored_settings(args: &mirra_catalog_controller::SyncCatalogArgs) {
    for (flag, why) in args.ignored_flags() {
        tracing::info!(
            flag,
            reason = why,
            "flag accepted for consul-k8s compatibility; no effect in mirra"
        );
    }
    // The chart sets these for consul-k8s's gRPC server watch.
    for (var, why) in [
        ("CONSUL_GRPC_PORT", "mirra speaks Consul's HTTP API only"),
        (
            "CONSUL_SKIP_SERVER_WATCH",
            "mirra does not watch the server list over gRPC",
        ),
    ] {
        if std::env::var_os(var).is_some() {
            tracing::info!(
                variable = var,
                reason = why,
                "variable accepted for consul-k8s compatibility; no effect in mirra"
            );
        }
    }
}
