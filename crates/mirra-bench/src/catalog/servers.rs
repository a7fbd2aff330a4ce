//! The servers of the catalog scenario: the Kubernetes sandbox (in process or
//! as a child process) and the Consul the controllers write to, with its write
//! counters.
//!
//! This module must NOT run controllers (see `controllers`).

use super::*;

/// A sandbox server: in this process, or a child process of the `mirra`
/// binary (killed when dropped). A handful exist per run, so the size
/// difference of the variants does not matter.
#[allow(clippy::large_enum_variant)]
pub(super) enum Server<S> {
    InProcess(S),
    Child {
        url: String,
        child: tokio::process::Child,
    },
}

impl<S> Server<S> {
    pub(super) fn pid(&self) -> Option<u32> {
        match self {
            Server::InProcess(_) => None,
            Server::Child { child, .. } => child.id(),
        }
    }

    pub(super) fn rss_mib(&self) -> Option<f64> {
        self.pid().and_then(|p| proc_mib(&p.to_string(), "VmRSS:"))
    }
}

/// Starts `mirra sandbox <kind> --listen 127.0.0.1:0 <extra>` and reads the
/// `listening on http://ADDR` line it prints first.
pub(super) async fn spawn_sandbox(
    bin: &Path,
    kind: &str,
    extra: &[&str],
) -> anyhow::Result<(String, tokio::process::Child)> {
    let mut child = tokio::process::Command::new(bin)
        .args(["sandbox", kind, "--listen", "127.0.0.1:0"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {} sandbox {kind}", bin.display()))?;
    let stdout = child.stdout.take().context("no stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let line = lines
        .next_line()
        .await?
        .with_context(|| format!("sandbox {kind} exited before listening"))?;
    let url = line
        .strip_prefix("listening on ")
        .with_context(|| format!("unexpected first line from sandbox {kind}: {line:?}"))?
        .trim()
        .to_owned();
    // Keep draining stdout so the child never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Ok((url, child))
}

pub(super) type Consul = Server<consul_sandbox::Sandbox>;

/// The two counters the scenario reads from the Consul sandbox.
#[derive(Clone, Copy)]
pub(super) struct ConsulCounts {
    pub(super) raft_applies: u64,
    pub(super) services: u64,
    /// Blocking queries parked right now.
    pub(super) blocking_open: u64,
}

impl Consul {
    /// A Consul sandbox accepting `max_txn_ops` operations per
    /// transaction, at least 64 (64 as servers before Consul 1.14, 128 as
    /// current ones).
    /// `enterprise` serves namespaces (Consul Enterprise).
    pub(super) async fn start(
        bin: Option<&Path>,
        max_txn_ops: usize,
        enterprise: bool,
    ) -> anyhow::Result<Consul> {
        let max = max_txn_ops.max(64);
        match bin {
            Some(b) => {
                let max = max.to_string();
                let mut args = vec!["--max-txn-ops", &max];
                if enterprise {
                    args.push("--enterprise");
                }
                let (url, child) = spawn_sandbox(b, "consul", &args).await?;
                Ok(Server::Child { url, child })
            }
            None => Ok(Server::InProcess(
                consul_sandbox::Sandbox::start(consul_sandbox::Config {
                    max_txn_ops: max,
                    enterprise,
                    ..consul_sandbox::Config::default()
                })
                .await?,
            )),
        }
    }

    pub(super) fn url(&self) -> String {
        match self {
            Server::InProcess(s) => s.url(),
            Server::Child { url, .. } => url.clone(),
        }
    }

    pub(super) async fn counts(&self, http: &reqwest::Client) -> anyhow::Result<ConsulCounts> {
        match self {
            Server::InProcess(s) => {
                let st = s.stats();
                Ok(ConsulCounts {
                    raft_applies: st.raft_applies,
                    services: st.services,
                    blocking_open: st.blocking_queries_open,
                })
            }
            Server::Child { url, .. } => {
                let v: serde_json::Value = http
                    .get(format!("{url}/v1/sandbox/stats"))
                    .send()
                    .await?
                    .error_for_status()?
                    .json()
                    .await?;
                let field = |k: &str| v.get(k).and_then(serde_json::Value::as_u64);
                Ok(ConsulCounts {
                    raft_applies: field("raft_applies").context("raft_applies")?,
                    services: field("services").context("services")?,
                    blocking_open: field("blocking_queries_open")
                        .context("blocking_queries_open")?,
                })
            }
        }
    }
}
