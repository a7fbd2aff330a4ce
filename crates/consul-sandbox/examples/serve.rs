//! A stand-alone consul-sandbox with the same command line contract as
//! `mirra sandbox consul`: `serve [sandbox consul] [--listen ADDR]
//! [--datacenter DC] [--max-txn-ops N]`. The first stdout line is
//! `listening on http://ADDR`; SIGTERM or Ctrl-C stops it.
//!
//! It exists so the Python conformance tests can run against the sandbox
//! (via `MIRRA_BIN`) without building the whole `mirra` binary. It must NOT
//! grow features of its own: the real entry point is `mirra`.

use std::io::Write;
use std::net::SocketAddr;

use consul_sandbox::Config;

fn usage(msg: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!(
            "{msg}\nusage: serve [sandbox consul] [--listen ADDR] [--datacenter DC] [--max-txn-ops N]"
        ),
    )
}

fn parse_args() -> std::io::Result<(SocketAddr, Config)> {
    let mut listen: SocketAddr = ([127, 0, 0, 1], 0).into();
    let mut config = Config::default();
    let mut args = std::env::args().skip(1).peekable();
    // Accept and skip the `sandbox consul` words of the mirra CLI.
    while matches!(args.peek().map(String::as_str), Some("sandbox" | "consul")) {
        args.next();
    }
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .ok_or_else(|| usage(&format!("{flag} needs a value")))?;
        match flag.as_str() {
            "--listen" => {
                listen = value
                    .parse()
                    .map_err(|e| usage(&format!("bad --listen {value:?}: {e}")))?;
            }
            "--datacenter" => config.datacenter = value,
            "--max-txn-ops" => {
                config.max_txn_ops = value
                    .parse()
                    .map_err(|e| usage(&format!("bad --max-txn-ops {value:?}: {e}")))?;
            }
            other => return Err(usage(&format!("unknown flag {other:?}"))),
        }
    }
    Ok((listen, config))
}

async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let (listen, config) = parse_args()?;
    let listener = tokio::net::TcpListener::bind(listen).await?;
    let addr = listener.local_addr()?;
    let mut out = std::io::stdout();
    writeln!(out, "listening on http://{addr}")?;
    out.flush()?;
    consul_sandbox::serve(listener, config, stop_signal()).await
}
