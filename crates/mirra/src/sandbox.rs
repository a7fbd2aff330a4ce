//! `mirra sandbox kube|consul` and `mirra dev`: start the embedded servers
//! and run until SIGINT or SIGTERM.

use std::io::Write;
use std::path::Path;

use anyhow::Context;

use crate::cli::{ConsulSandboxArgs, DevArgs, KubeSandboxArgs};

/// Resolves on SIGINT or SIGTERM.
pub(crate) async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
    tracing::info!("shutting down");
}

fn announce(line: &str) -> anyhow::Result<()> {
    // Flushed at once: a parent process waits for this line.
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}").context("cannot write to stdout")?;
    out.flush().context("cannot write to stdout")
}

fn write_kubeconfig(path: &Path, url: &str) -> anyhow::Result<()> {
    std::fs::write(path, kube_sandbox::kubeconfig(url))
        .with_context(|| format!("cannot write kubeconfig to {}", path.display()))
}

async fn bind(addr: std::net::SocketAddr, what: &str) -> anyhow::Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr} for the {what}"))
}

/// `mirra sandbox kube`.
pub async fn kube(args: KubeSandboxArgs) -> anyhow::Result<()> {
    let listener = bind(args.listen, "Kubernetes sandbox").await?;
    let url = format!("http://{}", listener.local_addr()?);
    if let Some(path) = &args.kubeconfig_out {
        write_kubeconfig(path, &url)?;
    }
    let mut config = kube_sandbox::Config::default();
    config.store.history_limit = args.history;
    announce(&format!("listening on {url}"))?;
    tracing::info!(%url, "kube-sandbox ready");
    kube_sandbox::serve(listener, config, shutdown_signal())
        .await
        .context("kube-sandbox failed")
}

/// `mirra sandbox consul`.
pub async fn consul(args: ConsulSandboxArgs) -> anyhow::Result<()> {
    let listener = bind(args.listen, "Consul sandbox").await?;
    let url = format!("http://{}", listener.local_addr()?);
    let config = consul_sandbox::Config {
        datacenter: args.datacenter,
        max_txn_ops: args.max_txn_ops,
        ..Default::default()
    };
    announce(&format!("listening on {url}"))?;
    tracing::info!(%url, "consul-sandbox ready");
    consul_sandbox::serve(listener, config, shutdown_signal())
        .await
        .context("consul-sandbox failed")
}

/// `mirra dev`.
pub async fn dev(args: DevArgs) -> anyhow::Result<()> {
    let kube_listener = bind(args.kube_listen, "Kubernetes sandbox").await?;
    let consul_listener = bind(args.consul_listen, "Consul sandbox").await?;
    let kube_url = format!("http://{}", kube_listener.local_addr()?);
    let consul_url = format!("http://{}", consul_listener.local_addr()?);
    write_kubeconfig(&args.kubeconfig_out, &kube_url)?;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let wait = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };
    let kube = tokio::spawn(kube_sandbox::serve(
        kube_listener,
        kube_sandbox::Config::default(),
        wait(stop_rx.clone()),
    ));
    let consul = tokio::spawn(consul_sandbox::serve(
        consul_listener,
        consul_sandbox::Config::default(),
        wait(stop_rx),
    ));
    let kubeconfig = args.kubeconfig_out.display();
    announce(&format!("kubernetes api listening on {kube_url}"))?;
    announce(&format!("consul api listening on {consul_url}"))?;
    announce(&format!(
        "\nTry:\n  export KUBECONFIG={kubeconfig}\n  kubectl get namespaces\n  export CONSUL_HTTP_ADDR={consul_url}\n  curl $CONSUL_HTTP_ADDR/v1/catalog/services\n\nRequest counters: {kube_url}/sandbox/stats and {consul_url}/v1/sandbox/stats\nPress Ctrl-C to stop."
    ))?;
    shutdown_signal().await;
    let _ = stop_tx.send(true);
    kube.await
        .context("kube-sandbox task")?
        .context("kube-sandbox failed")?;
    consul
        .await
        .context("consul-sandbox task")?
        .context("consul-sandbox failed")?;
    Ok(())
}
