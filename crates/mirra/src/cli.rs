//! The command line: every command, flag and default in one place, so
//! `--help` is the documentation.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// mirra keeps things outside a namespace in step with Kubernetes,
/// incrementally: copies of objects in the namespaces a SyncConfig selects,
/// and Kubernetes Services in the Consul catalog.
#[derive(Debug, Parser)]
#[command(name = "mirra", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// Logging options.
    #[command(flatten)]
    pub log: LogArgs,
    /// What to run.
    #[command(subcommand)]
    pub command: Command,
}

/// Logging flags, shared by every command.
#[derive(Debug, Args)]
pub struct LogArgs {
    /// Log level or filter (tracing `EnvFilter` syntax, e.g. `info` or
    /// `mirra=debug,kube=info`). `RUST_LOG` overrides it when set. kube's
    /// own line per failed request is off unless the filter names
    /// `kube_client`: mirra logs each failure with its cause and fix.
    #[arg(long, global = true, default_value = "info", env = "MIRRA_LOG_LEVEL")]
    pub log_level: String,
    /// Log format: `pretty` for people, `json` for log pipelines.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Pretty, env = "MIRRA_LOG_FORMAT")]
    pub log_format: LogFormat,
    /// Log as JSON (consul-k8s's `-log-json`); the same as `--log-format
    /// json`.
    #[arg(long, global = true, num_args = 0..=1, require_equals = true,
          default_missing_value = "true", default_value = "false",
          value_parser = clap::builder::BoolishValueParser::new())]
    pub log_json: bool,
}

/// Log output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Pretty,
    /// One JSON object per line.
    Json,
}

/// The commands.
// Parsed once per process; the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run everything locally on embedded sandboxes: a Kubernetes API server
    /// and a Consul catalog server in this process, with the mirror
    /// controller and the catalog sync running against them. Prints how to
    /// point kubectl at it; runs until Ctrl-C.
    Dev(DevArgs),
    /// Run the mirror controller: keep a copy of every SyncConfig's items in
    /// every namespace it selects, and remove the copies mirra owns when they
    /// are no longer wanted. Uses KUBECONFIG (or the in-cluster service
    /// account); runs until SIGINT/SIGTERM.
    Run(RunCommandArgs),
    /// Sync Kubernetes Services (and their EndpointSlices) into the Consul
    /// catalog, as consul-k8s `sync-catalog` does and with its flags (both
    /// `-flag` and `--flag` spellings), writing only what changed. Uses
    /// KUBECONFIG (or the in-cluster service account) and CONSUL_HTTP_ADDR /
    /// CONSUL_HTTP_TOKEN; runs until SIGINT/SIGTERM.
    SyncCatalog(SyncCatalogCommandArgs),
    /// Run one sandbox server alone (for tests and experiments).
    #[command(subcommand)]
    Sandbox(SandboxCommand),
    /// Print the SyncConfig CustomResourceDefinition as YAML (the content of
    /// deploy/crd/syncconfig.yaml), e.g. `mirra crds | kubectl apply -f -`.
    Crds,
    /// Show, offline, what mirra would write into each namespace: every copy
    /// as the apply body the controller would send, from the same planner.
    /// Nothing is read from or written to a cluster.
    Render(RenderArgs),
}

/// `mirra run`.
#[derive(Debug, Args)]
pub struct RunCommandArgs {
    /// What the mirror controller honours and how fast it reacts.
    #[command(flatten)]
    pub mirror: mirra_mirror_controller::RunArgs,
    /// Health, metrics, API client and leader election.
    #[command(flatten)]
    pub serve: crate::serve::MirrorServeArgs,
}

/// `mirra sync-catalog`.
#[derive(Debug, Args)]
pub struct SyncCatalogCommandArgs {
    /// What is synced, how it is named, and how to reach Consul.
    #[command(flatten)]
    pub catalog: mirra_catalog_controller::SyncCatalogArgs,
    /// Health, metrics, API client and leader election.
    #[command(flatten)]
    pub serve: crate::serve::CatalogServeArgs,
}

/// `mirra render`.
#[derive(Debug, Args)]
pub struct RenderArgs {
    /// A file of SyncConfigs (multi-document YAML or JSON; `List` documents
    /// are read too), and of the source objects their copyItems name (e.g.
    /// `kubectl get secret -n cert-manager wildcard-tls -o yaml`).
    /// Repeatable; `-` reads stdin.
    #[arg(short = 'f', long = "filename", required = true)]
    pub files: Vec<PathBuf>,
    /// A file of Namespaces to render into, e.g. the output of `kubectl get
    /// namespaces -o yaml`. Repeatable. Their labels and names decide the
    /// selection, as in the cluster.
    #[arg(long, required = true)]
    pub namespaces: Vec<PathBuf>,
}

/// `mirra dev`.
#[derive(Debug, Args)]
pub struct DevArgs {
    /// Address of the embedded Kubernetes API server (port 0 picks a free
    /// port).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub kube_listen: SocketAddr,
    /// Address of the embedded Consul server (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub consul_listen: SocketAddr,
    /// Where to write the kubeconfig for the embedded API server.
    #[arg(long, default_value = "mirra-dev.kubeconfig")]
    pub kubeconfig_out: PathBuf,
    /// Address serving `/metrics`, `/healthz` and `/readyz` of both
    /// controllers (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub health_listen: SocketAddr,
    /// Apply the bundled examples once both controllers run: two team
    /// namespaces and a SyncConfig copying a ConfigMap and a NetworkPolicy
    /// into them, and a Service with two endpoints that the catalog sync
    /// registers in Consul. They are built into the binary, so this works
    /// from any directory.
    #[arg(long)]
    pub examples: bool,
}

/// `mirra sandbox ...`.
#[derive(Debug, Subcommand)]
pub enum SandboxCommand {
    /// An in-process Kubernetes API server. Prints `listening on
    /// http://ADDR` on stdout once it accepts connections.
    Kube(KubeSandboxArgs),
    /// An in-process Consul catalog server. Prints `listening on
    /// http://ADDR` on stdout once it accepts connections (and, with
    /// --https-listen, a second line `listening on https://ADDR`).
    Consul(ConsulSandboxArgs),
}

/// `mirra sandbox kube`.
#[derive(Debug, Args)]
pub struct KubeSandboxArgs {
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
    /// Write a kubeconfig pointing at the sandbox to this file.
    #[arg(long)]
    pub kubeconfig_out: Option<PathBuf>,
    /// Events kept for resuming watches; older revisions get 410 Gone.
    #[arg(long, default_value_t = 100_000)]
    pub history: usize,
    /// Keep the objects across restarts: loaded from this file at start
    /// (when it exists) and written to it on SIGINT or SIGTERM. Watches
    /// resumed from before a restart get 410 Gone and list again, as after
    /// an etcd compaction. A killed process (SIGKILL) saves nothing.
    #[arg(long, value_name = "FILE")]
    pub state_file: Option<PathBuf>,
    /// Authenticate bearer tokens and authorize every request with RBAC,
    /// as a server started with --authorization-mode=RBAC: a request
    /// without a token is system:anonymous, a refusal is the server's 401
    /// or 403, and the bootstrap ClusterRoles (cluster-admin for group
    /// system:masters, discovery, basic-user, public-info-viewer) exist.
    /// The --kubeconfig-out file then carries a fresh admin token (user
    /// `admin`, group system:masters).
    #[arg(long)]
    pub rbac: bool,
    /// Speak HTTPS, with a CA and serving certificate made at start (the
    /// --kubeconfig-out file trusts the CA). kubectl sends bearer tokens
    /// only over HTTPS: use it with --rbac.
    #[arg(long)]
    pub https: bool,
    /// A static bearer token, as a line of --token-auth-file:
    /// TOKEN=USER[,GROUP...] (repeatable; needs --rbac).
    #[arg(long = "token", value_name = "TOKEN=USER[,GROUP...]", requires = "rbac",
          value_parser = kube_sandbox::auth::StaticToken::parse)]
    pub tokens: Vec<kube_sandbox::auth::StaticToken>,
}

/// `mirra sandbox consul`.
#[derive(Debug, Args)]
pub struct ConsulSandboxArgs {
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
    /// Datacenter name the server reports.
    #[arg(long, default_value = "dc1")]
    pub datacenter: String,
    /// Most operations accepted in one /v1/txn request: 128 as Consul 1.14
    /// and later; 64 stands in for an older server.
    #[arg(long, default_value_t = consul_sandbox::DEFAULT_MAX_TXN_OPS)]
    pub max_txn_ops: usize,
    /// Turn ACLs on with this default policy (Consul's
    /// `acl.default_policy`): what no rule decides is denied or allowed.
    #[arg(long, value_enum, value_name = "POLICY")]
    pub acl_default_policy: Option<AclDefaultPolicyArg>,
    /// Turn ACLs on with a management token of this SecretID (Consul's
    /// `acl.tokens.initial_management`); with no --acl-default-policy the
    /// default policy is deny.
    #[arg(long, value_name = "TOKEN")]
    pub acl_initial_management_token: Option<String>,
    /// Serve Consul Enterprise's namespaces and admin partitions (`?ns=`,
    /// `?partition=`, /v1/namespace, /v1/partition, scoped ACL rules);
    /// without it the server answers as Consul CE.
    #[arg(long)]
    pub enterprise: bool,
    /// Also serve HTTPS on this address, sharing the same catalog (Consul's
    /// `ports.https`; 8501 in the consul Helm chart). Needs --tls-cert-file
    /// and --tls-key-file. The files are read at start-up: a missing or
    /// non-PEM file stops the server with an error naming it.
    #[arg(long, value_name = "ADDR", requires_all = ["tls_cert_file", "tls_key_file"])]
    pub https_listen: Option<SocketAddr>,
    /// PEM file with the HTTPS certificate, then any intermediates
    /// (Consul's `tls.defaults.cert_file`).
    #[arg(long, value_name = "FILE", requires = "https_listen")]
    pub tls_cert_file: Option<PathBuf>,
    /// PEM file with the HTTPS certificate's private key (Consul's
    /// `tls.defaults.key_file`).
    #[arg(long, value_name = "FILE", requires = "https_listen")]
    pub tls_key_file: Option<PathBuf>,
    /// PEM file with the CA certificates that sign client certificates
    /// (Consul's `tls.defaults.ca_file`); used with --verify-incoming.
    #[arg(long, value_name = "FILE", requires = "https_listen")]
    pub tls_ca_file: Option<PathBuf>,
    /// Refuse HTTPS clients without a certificate signed by --tls-ca-file
    /// (Consul's `tls.defaults.verify_incoming`). Plain HTTP on --listen is
    /// not affected.
    #[arg(long, requires = "tls_ca_file")]
    pub verify_incoming: bool,
}

/// `--acl-default-policy` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AclDefaultPolicyArg {
    /// Deny what no rule allows.
    Deny,
    /// Allow what no rule denies.
    Allow,
}

/// The filter with kube's per-request error line turned off, unless the
/// user's filter asks for `kube_client` itself: the line says only "client
/// error (Connect)", and the watch or write that failed logs the same
/// failure with what to fix.
fn quiet_kube_client(filter: &str) -> String {
    if filter.contains("kube_client") {
        filter.to_string()
    } else {
        format!("{filter},kube_client::client::builder=off")
    }
}

/// Sets up `tracing` as the flags say.
pub fn init_logging(args: &LogArgs) -> anyhow::Result<()> {
    use tracing_subscriber::EnvFilter;
    let filter = match std::env::var("RUST_LOG") {
        Ok(s) if !s.is_empty() => EnvFilter::try_new(s),
        _ => EnvFilter::try_new(quiet_kube_client(&args.log_level)),
    }
    .map_err(|e| anyhow::anyhow!("invalid log level {:?}: {e}", args.log_level))?;
    // Logs go to stderr: stdout carries the machine-readable lines
    // (`listening on ...`) that scripts and tests read.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let format = if args.log_json {
        LogFormat::Json
    } else {
        args.log_format
    };
    let result = match format {
        LogFormat::Pretty => builder
            .with_ansi(colour_wanted(
                std::io::IsTerminal::is_terminal(&std::io::stderr()),
                std::env::var_os("NO_COLOR").as_deref(),
            ))
            .try_init(),
        // One flat object per line (`timestamp`, `level`, `target`,
        // `message` and the event's fields beside them), as log pipelines
        // index it.
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_ansi(false)
            .try_init(),
    };
    result.map_err(|e| anyhow::anyhow!("cannot initialise logging: {e}"))
}

/// Colour codes only for a person at a terminal: a file, a pipe or a log
/// collector gets plain text, and `NO_COLOR` (any non-empty value, see
/// no-color.org) turns them off everywhere.
fn colour_wanted(stderr_is_terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    stderr_is_terminal && no_color.is_none_or(|v| v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        use std::ffi::OsStr;
        assert!(colour_wanted(true, None));
        assert!(colour_wanted(true, Some(OsStr::new(""))));
        assert!(!colour_wanted(true, Some(OsStr::new("1"))));
        assert!(!colour_wanted(false, None));
        assert!(!colour_wanted(false, Some(OsStr::new(""))));
    }

    #[test]
    fn kube_clients_request_lines_are_off_unless_asked_for() {
        assert_eq!(
            quiet_kube_client("info"),
            "info,kube_client::client::builder=off"
        );
        assert_eq!(
            quiet_kube_client("mirra=debug,kube_client=debug"),
            "mirra=debug,kube_client=debug"
        );
        // Every form stays a valid filter.
        for f in ["info", "warn,mirra=debug", "debug"] {
            assert!(tracing_subscriber::EnvFilter::try_new(quiet_kube_client(f)).is_ok());
        }
    }

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn sandbox_kube_parses() {
        let cli = Cli::try_parse_from([
            "mirra",
            "sandbox",
            "kube",
            "--listen",
            "127.0.0.1:0",
            "--kubeconfig-out",
            "/tmp/k",
        ])
        .unwrap();
        match cli.command {
            Command::Sandbox(SandboxCommand::Kube(a)) => {
                assert_eq!(a.listen.port(), 0);
                assert_eq!(
                    a.kubeconfig_out.as_deref(),
                    Some(std::path::Path::new("/tmp/k"))
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn consul_sandbox_acl_flags() {
        let cli = Cli::try_parse_from([
            "mirra",
            "sandbox",
            "consul",
            "--acl-default-policy",
            "deny",
            "--acl-initial-management-token",
            "root",
            "--enterprise",
        ])
        .unwrap();
        match cli.command {
            Command::Sandbox(SandboxCommand::Consul(a)) => {
                assert_eq!(a.acl_default_policy, Some(AclDefaultPolicyArg::Deny));
                assert_eq!(a.acl_initial_management_token.as_deref(), Some("root"));
                assert!(a.enterprise);
            }
            other => panic!("{other:?}"),
        }
        let cli = Cli::try_parse_from(["mirra", "sandbox", "consul"]).unwrap();
        match cli.command {
            Command::Sandbox(SandboxCommand::Consul(a)) => {
                assert_eq!(a.acl_default_policy, None);
                assert_eq!(a.acl_initial_management_token, None);
                assert!(!a.enterprise);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bad_flags_are_rejected() {
        assert!(
            Cli::try_parse_from(["mirra", "sandbox", "kube", "--listen", "not-an-address"])
                .is_err()
        );
        assert!(Cli::try_parse_from(["mirra", "--log-format", "xml", "dev"]).is_err());
        assert!(
            Cli::try_parse_from(["mirra", "sandbox", "consul", "--max-txn-ops", "-1"]).is_err()
        );
        assert!(
            Cli::try_parse_from([
                "mirra",
                "sandbox",
                "consul",
                "--acl-default-policy",
                "maybe"
            ])
            .is_err()
        );
        assert!(Cli::try_parse_from(["mirra"]).is_err());
        assert!(Cli::try_parse_from(["mirra", "render", "--namespaces", "n.yaml"]).is_err());
        assert!(Cli::try_parse_from(["mirra", "render", "-f", "s.yaml"]).is_err());
    }
}
