//! The `sync-catalog` command line: consul-k8s's flag names and meanings,
//! the single-dash spelling rewrite, and the validated [`Settings`].
//!
//! consul-k8s is a Go program: its flags are spelled `-flag value`,
//! `-flag=value`, and booleans `-flag` / `-flag=false` (never
//! `-flag false`). [`normalize_flags`] turns that spelling into clap's
//! `--flag`, so that existing manifests work unchanged.
//!
//! This module must NOT read the environment (mirra-consul does, for the
//! Consul connection) nor start anything.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use mirra_catalog::annotations::parse_go_bool;
use mirra_catalog::{ConsulNamespaces, NodePortSyncType, PortLayout, SyncSettings};
use mirra_consul::{ConsulConfig, Overrides};
use mirra_runtime::{LeaseDeadline, QueueConfig};

/// Largest transaction accepted: Consul's limit since 1.14 (older servers
/// refuse more than 64 with a 413 naming it, and the writer packs to that).
pub const MAX_TXN_BATCH: usize = 128;

/// Flags of `mirra sync-catalog`. Names and defaults are those of consul-k8s
/// `sync-catalog`; each flag may be written `-flag` or `--flag`.
#[derive(Debug, Clone, clap::Args)]
pub struct SyncCatalogArgs {
    /// Sync Kubernetes Services into Consul.
    #[arg(long = "to-consul", default_value = "true", num_args = 0..=1,
          require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub to_consul: bool,
    /// Sync Consul services into Kubernetes: every Consul service without
    /// the k8s tag becomes an ExternalName Service (labelled `consul=true`)
    /// in `-k8s-write-namespace`.
    #[arg(long = "to-k8s", default_value = "true", num_args = 0..=1,
          require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub to_k8s: bool,
    /// Sync every Service unless it is annotated
    /// `consul.hashicorp.com/service-sync: "false"`. When false, only
    /// Services annotated `"true"` are synced.
    #[arg(long = "k8s-default-sync", default_value = "true", num_args = 0..=1,
          require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub k8s_default_sync: bool,
    /// Prefix of every Consul service name not set by the `service-name`
    /// annotation.
    #[arg(long = "consul-service-prefix", default_value = "")]
    pub consul_service_prefix: String,
    /// Prefix of Kubernetes Services created from Consul services (to-k8s).
    #[arg(long = "k8s-service-prefix", default_value = "")]
    pub k8s_service_prefix: String,
    /// Namespace whose Services are synced; repeat the flag for several.
    /// `*` allows all. Without any, NOTHING is synced (consul-k8s's rule).
    #[arg(long = "allow-k8s-namespace")]
    pub allow_k8s_namespace: Vec<String>,
    /// Namespace whose Services are never synced; repeatable; wins over
    /// the allow list.
    #[arg(long = "deny-k8s-namespace")]
    pub deny_k8s_namespace: Vec<String>,
    /// Namespace of Services created from Consul services (to-k8s).
    #[arg(long = "k8s-write-namespace", default_value = "default")]
    pub k8s_write_namespace: String,
    /// Consul DNS domain (used by the to-k8s direction).
    #[arg(long = "consul-domain", default_value = "consul")]
    pub consul_domain: String,
    /// Tag put first on every instance; with the node name and the meta
    /// `external-source=kubernetes`, it marks the instances this process
    /// owns. Only instances carrying all three marks are ever changed or
    /// removed.
    #[arg(long = "consul-k8s-tag", default_value = "k8s")]
    pub consul_k8s_tag: String,
    /// The Consul node all instances are registered on (letters, digits and
    /// `-`, at most 63 bytes). Give every cluster its own name.
    #[arg(long = "consul-node-name", default_value = "k8s-sync")]
    pub consul_node_name: String,
    /// Period of the verification pass, which re-plans every Service from
    /// the watch caches and writes only drift (consul-k8s re-wrote every
    /// instance at this period). Go duration syntax (`30s`, `1m`).
    #[arg(long = "consul-write-interval", default_value = "30s", value_parser = go_duration)]
    pub consul_write_interval: Duration,
    /// Sync ClusterIP Services.
    #[arg(long = "sync-clusterip-services", default_value = "true", num_args = 0..=1,
          require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub sync_clusterip_services: bool,
    /// Register LoadBalancer Services by their endpoints instead of their
    /// load balancer addresses.
    #[arg(long = "sync-lb-services-endpoints", default_value = "false", num_args = 0..=1,
          require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub sync_lb_services_endpoints: bool,
    /// Address of NodePort instances: `ExternalOnly`, `InternalOnly` or
    /// `ExternalFirst`.
    #[arg(long = "node-port-sync-type", default_value = "ExternalOnly")]
    pub node_port_sync_type: String,
    /// How ports are written. `single` (consul-k8s releases before late
    /// 2025): one registration per endpoint (or external IP, load balancer
    /// address) with one `Port`: the `service-port` annotation's port, else
    /// the first one (the target port for endpoints, the node port for
    /// NodePort). `multi` (newer consul-k8s releases): the same
    /// registrations with `Port` 0 and every port in a `Ports` list (name,
    /// port, the default one first); needs a Consul that knows `Ports`
    /// (1.22 or later). Use the layout your consul-k8s wrote, so that its
    /// registrations are adopted without writes.
    #[arg(long = "port-layout", default_value = "single", value_parser = port_layout())]
    pub port_layout: PortLayout,
    /// Append `-<namespace>` to Consul service names.
    #[arg(long = "add-k8s-namespace-suffix", default_value = "false", num_args = 0..=1,
          require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub add_k8s_namespace_suffix: bool,
    /// Register Services exposed by an Ingress at the Ingress host.
    #[arg(long = "enable-ingress", default_value = "false", num_args = 0..=1,
          require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub enable_ingress: bool,
    /// With `-enable-ingress`, use the Ingress load balancer IP instead of
    /// the rule host.
    #[arg(long = "loadBalancer-ips", default_value = "false", num_args = 0..=1,
          require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub load_balancer_ips: bool,
    /// Deregister every instance this process owns on its node, then exit.
    #[arg(long = "purge-k8s-services-from-node", default_value = "false", num_args = 0..=1,
          require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub purge_k8s_services_from_node: bool,
    /// Preview instead of sync: watch Kubernetes and Consul and plan as
    /// usual, but write nothing (no transaction, Consul namespace, Event,
    /// ExternalName Service or Lease). Each write that would be sent is
    /// logged ("dry run: would write"), counted in
    /// mirra_dry_run_planned_writes and listed on /preview of the -listen
    /// and metrics ports (JSON; ?format=text for a table). Run it beside
    /// consul-k8s before switching: a quiet preview means the switch writes
    /// nothing. Not with -purge-k8s-services-from-node or --leader-elect.
    #[arg(long = "dry-run", default_value = "false", num_args = 0..=1,
          require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub dry_run: bool,
    /// Quiet time after a Service's last event before it is synced; events
    /// within the window (a rollout) share transactions. Go duration.
    #[arg(long = "debounce", default_value = "100ms", value_parser = go_duration)]
    pub debounce: Duration,
    /// Longest a Service waits while events keep coming. Go duration.
    #[arg(long = "max-debounce", default_value = "1s", value_parser = go_duration)]
    pub max_debounce: Duration,
    /// Operations per `/v1/txn` request (each request is one Raft apply),
    /// 1 to 128. Consul 1.14 and later accept 128; an older server refuses
    /// more than 64 with a 413 naming its limit, and mirra then uses that
    /// (one refused request, nothing lost).
    #[arg(long = "txn-batch-size", default_value_t = mirra_consul::config::DEFAULT_TXN_MAX_OPS)]
    pub txn_batch_size: usize,
    /// Transactions in flight at once while a round writes. Consul's leader
    /// appends concurrent transactions to its log together, so a few in
    /// flight cut a rollout's latency without adding Raft applies; 1 sends
    /// them one after another.
    #[arg(long = "txn-concurrency", default_value_t = DEFAULT_TXN_CONCURRENCY,
          value_parser = clap::value_parser!(u16).range(1..=MAX_TXN_CONCURRENCY as i64))]
    pub txn_concurrency: u16,
    /// Consul HTTP address (`host:port` or URL); wins over `-addresses`.
    /// Default: `CONSUL_ADDRESSES`, else `CONSUL_HTTP_ADDR`, else
    /// `127.0.0.1:8500`.
    #[arg(long = "http-addr")]
    pub http_addr: Option<String>,
    /// Consul servers: a DNS name (every address it resolves to is a
    /// server) or comma-separated IP addresses, without port; requests fail
    /// over between them. Default: `CONSUL_ADDRESSES`.
    #[arg(long = "addresses")]
    pub addresses: Option<String>,
    /// HTTP(S) port of the `-addresses` servers. Default:
    /// `CONSUL_HTTP_PORT`, else 8500 (8501 with `-use-tls`).
    #[arg(long = "http-port", value_parser = clap::value_parser!(u16).range(1..))]
    pub http_port: Option<u16>,
    /// Speak https to the `-addresses` servers. Default: `CONSUL_USE_TLS`.
    #[arg(long = "use-tls", num_args = 0..=1, require_equals = true,
          default_missing_value = "true", value_parser = go_bool)]
    pub use_tls: Option<bool>,
    /// Timeout of one Consul request (a Go duration, e.g. 5s). Default:
    /// `CONSUL_API_TIMEOUT`, else 10s.
    #[arg(long = "api-timeout", value_parser = go_duration)]
    pub api_timeout: Option<Duration>,
    /// ACL token. Default: `CONSUL_ACL_TOKEN`, `CONSUL_ACL_TOKEN_FILE`,
    /// `CONSUL_HTTP_TOKEN_FILE`, `CONSUL_HTTP_TOKEN`.
    #[arg(long = "token")]
    pub token: Option<String>,
    /// File holding the ACL token; wins over `-token`. Default: as for
    /// `-token`.
    #[arg(long = "token-file")]
    pub token_file: Option<PathBuf>,
    /// CA bundle to verify Consul's certificate. Default:
    /// `CONSUL_CACERT_FILE`, else `CONSUL_CACERT`.
    #[arg(long = "ca-file")]
    pub ca_file: Option<PathBuf>,
    /// Same as `-ca-file` (consul-k8s 1.x's name); `-ca-file` wins.
    #[arg(long = "ca-cert-file")]
    pub ca_cert_file: Option<PathBuf>,
    /// Client certificate for mutual TLS. Default: `CONSUL_CLIENT_CERT`.
    #[arg(long = "client-cert")]
    pub client_cert: Option<PathBuf>,
    /// Client key for mutual TLS. Default: `CONSUL_CLIENT_KEY`.
    #[arg(long = "client-key")]
    pub client_key: Option<PathBuf>,
    /// Server name for SNI and verification. Default: `CONSUL_TLS_SERVER_NAME`.
    #[arg(long = "tls-server-name")]
    pub tls_server_name: Option<String>,
    /// Do not verify Consul's certificate (development only). Default:
    /// `CONSUL_HTTP_SSL_VERIFY=false`.
    #[arg(long = "tls-skip-verify", num_args = 0..=1, require_equals = true,
          default_missing_value = "true", value_parser = go_bool)]
    pub tls_skip_verify: Option<bool>,
    /// Consul datacenter. Default: `CONSUL_DATACENTER`, else the server's.
    #[arg(long = "datacenter")]
    pub datacenter: Option<String>,
    /// Consul admin partition (Enterprise), sent only when not empty.
    /// Default: `CONSUL_PARTITION`.
    #[arg(long = "partition")]
    pub partition: Option<String>,
    /// Log in to this auth method for the ACL token (wins over every
    /// token setting); the token is deleted again at shutdown. Default:
    /// `CONSUL_LOGIN_AUTH_METHOD`.
    #[arg(long = "auth-method-name")]
    pub auth_method_name: Option<String>,
    /// Bearer token presented at login, read at each login. Default:
    /// `CONSUL_LOGIN_BEARER_TOKEN_FILE`, else the pod's ServiceAccount
    /// token.
    #[arg(long = "consul-login-bearer-token-file")]
    pub consul_login_bearer_token_file: Option<PathBuf>,
    /// Datacenter of the auth method. Default: `CONSUL_LOGIN_DATACENTER`,
    /// else `-datacenter`.
    #[arg(long = "consul-login-datacenter")]
    pub consul_login_datacenter: Option<String>,
    /// Partition of the auth method. Default: `CONSUL_LOGIN_PARTITION`,
    /// else `-partition`.
    #[arg(long = "consul-login-partition")]
    pub consul_login_partition: Option<String>,
    /// Namespace of the auth method. Default: `CONSUL_LOGIN_NAMESPACE`.
    #[arg(long = "consul-login-namespace")]
    pub consul_login_namespace: Option<String>,
    /// Metadata of the login token, `key=value`; repeatable. Default:
    /// `CONSUL_LOGIN_META` (comma-separated pairs).
    #[arg(long = "consul-login-meta")]
    pub consul_login_meta: Vec<String>,
    /// PEM text of the CA certificate(s) to verify Consul's certificate
    /// with, used when no CA file is given. Default: `CONSUL_CACERT_PEM`.
    #[arg(long = "ca-cert-pem")]
    pub ca_cert_pem: Option<String>,
    /// Consul Enterprise namespace of the Consul-to-Kubernetes reads.
    /// Default: `CONSUL_NAMESPACE`.
    #[arg(long = "namespace")]
    pub namespace: Option<String>,
    /// Kubeconfig file to use; without it `KUBECONFIG`, `~/.kube/config`,
    /// then the in-cluster service account.
    #[arg(long = "kubeconfig")]
    pub kubeconfig: Option<PathBuf>,
    /// The only namespace whose Services are synced (consul-k8s's older
    /// single-namespace flag). When set it replaces the
    /// `-allow-k8s-namespace` list; `-deny-k8s-namespace` still applies.
    #[arg(long = "k8s-source-namespace", default_value = "")]
    pub k8s_source_namespace: String,
    /// Consul Enterprise namespaces: register Services into
    /// `-consul-destination-namespace`, or with
    /// `-enable-k8s-namespace-mirroring` into the namespace named after
    /// their Kubernetes namespace; namespaces that do not exist are
    /// created.
    #[arg(long = "enable-namespaces", default_value = "false", num_args = 0..=1,
          require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub enable_namespaces: bool,
    /// Consul namespace of every synced Service (with `-enable-namespaces`,
    /// without mirroring). Ignored without `-enable-namespaces`, as in
    /// consul-k8s.
    #[arg(long = "consul-destination-namespace", default_value = "default")]
    pub consul_destination_namespace: String,
    /// Register each Service into the Consul namespace named after its
    /// Kubernetes namespace (with `-enable-namespaces`). Ignored without
    /// `-enable-namespaces`, as in consul-k8s.
    #[arg(long = "enable-k8s-namespace-mirroring", default_value = "false", num_args = 0..=1,
          require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub enable_k8s_namespace_mirroring: bool,
    /// Prefix of mirrored Consul namespace names. Ignored without
    /// namespace mirroring, as in consul-k8s.
    #[arg(long = "k8s-namespace-mirroring-prefix", default_value = "")]
    pub k8s_namespace_mirroring_prefix: String,
    /// ACL policy linked as a policy default of each Consul namespace
    /// created for synced Services. Ignored without `-enable-namespaces`,
    /// as in consul-k8s.
    #[arg(long = "consul-cross-namespace-acl-policy", default_value = "")]
    pub consul_cross_namespace_acl_policy: String,
    /// No-op: metrics are always served on `-metrics-port` (consul-k8s
    /// serves them whatever this says, too).
    #[arg(long = "enable-metrics", default_value = "false", num_args = 0..=1,
          require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub enable_metrics: bool,
    /// Path of the metrics endpoint; only `/metrics` is served, any other
    /// value stops mirra at start.
    #[arg(long = "metrics-path", default_value = "/metrics")]
    pub metrics_path: String,
    /// No-op: mirra's metrics are current values, nothing expires. A Go
    /// duration.
    #[arg(long = "prometheus-retention-time", default_value = "1m", value_parser = go_duration)]
    pub prometheus_retention_time: Duration,
    /// No-op: the filter of consul-k8s's purge. `-purge-k8s-services-from-node`
    /// removes exactly the instances mirra owns on its node.
    #[arg(long = "filter", default_value = "")]
    pub filter: String,
    /// No-op: mirra speaks Consul's HTTP API only. Default:
    /// `CONSUL_GRPC_PORT` (also ignored).
    #[arg(long = "grpc-port")]
    pub grpc_port: Option<u16>,
    /// No-op: mirra does not watch the server list over gRPC. Default:
    /// `CONSUL_SKIP_SERVER_WATCH` (also ignored).
    #[arg(long = "skip-server-watch", num_args = 0..=1, require_equals = true,
          default_missing_value = "true", value_parser = go_bool)]
    pub skip_server_watch: Option<bool>,
    /// No-op: accepted for consul-k8s's Windows pods.
    #[arg(long = "is-windows", default_value = "false", num_args = 0..=1,
          require_equals = true, default_missing_value = "true", value_parser = go_bool)]
    pub is_windows: bool,
}

/// Parses `-port-layout` in clap, so that a bad value is refused with the
/// flag and the accepted values named, before anything starts, and the
/// values are listed in `--help`.
fn port_layout() -> impl clap::builder::TypedValueParser<Value = PortLayout> {
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(
        [PortLayout::Single, PortLayout::Multi].map(PortLayout::as_str),
    )
    .try_map(|s| s.parse::<PortLayout>())
}

fn go_bool(s: &str) -> Result<bool, String> {
    parse_go_bool(s).ok_or_else(|| format!("invalid boolean {s:?} (expected true or false)"))
}

/// Parses a Go duration (`300ms`, `30s`, `1m30s`, `2h`). Negative and
/// fractional values are refused: no flag here needs them.
pub fn go_duration(s: &str) -> Result<Duration, String> {
    let bad = || format!("invalid duration {s:?} (expected e.g. 30s, 1m, 500ms)");
    if s.is_empty() {
        return Err(bad());
    }
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    let mut total = Duration::ZERO;
    let mut rest = s;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(bad());
        }
        let (num, tail) = rest.split_at(digits);
        let n: u64 = num.parse().map_err(|_| bad())?;
        let unit_len = tail.bytes().take_while(|b| !b.is_ascii_digit()).count();
        let (unit, tail) = tail.split_at(unit_len);
        let part = match unit {
            "ns" => Duration::from_nanos(n),
            "us" | "µs" => Duration::from_micros(n),
            "ms" => Duration::from_millis(n),
            "s" => Duration::from_secs(n),
            "m" => Duration::from_secs(n.checked_mul(60).ok_or_else(bad)?),
            "h" => Duration::from_secs(n.checked_mul(3600).ok_or_else(bad)?),
            _ => return Err(bad()),
        };
        total = total.checked_add(part).ok_or_else(bad)?;
        rest = tail;
    }
    Ok(total)
}

/// Rewrites consul-k8s's single-dash flags (`-k8s-default-sync=false`,
/// `-consul-node-name foo`) into clap's `--` spelling. Leaves alone: `--x`,
/// single-letter flags (`-h`), anything not starting with `-` followed by
/// a letter (values, negative numbers), non-UTF-8 arguments, and everything
/// after a bare `--`. Applying it twice changes nothing.
pub fn normalize_flags(args: Vec<OsString>) -> Vec<OsString> {
    let mut out = Vec::with_capacity(args.len());
    let mut passthrough = false;
    for arg in args {
        if passthrough {
            out.push(arg);
            continue;
        }
        let rewritten = match arg.to_str() {
            Some("--") => {
                passthrough = true;
                None
            }
            Some(s) => {
                let mut chars = s.chars();
                let long_single_dash = chars.next() == Some('-')
                    && chars.next().is_some_and(|c| c.is_ascii_alphabetic())
                    && chars.next().is_some_and(|c| c != '=');
                long_single_dash.then(|| OsString::from(format!("-{s}")))
            }
            None => None,
        };
        out.push(rewritten.unwrap_or(arg));
    }
    out
}

/// Why the flags were refused. None is retryable: fix the named flag.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// A mapping setting is invalid (node name, node-port sync type, tag).
    #[error(transparent)]
    Sync(#[from] mirra_catalog::SettingsError),
    /// `-txn-batch-size` outside 1..=128.
    #[error("invalid -txn-batch-size {0}: must be between 1 and {MAX_TXN_BATCH}")]
    TxnBatch(usize),
    /// `-consul-write-interval` is zero.
    #[error("-consul-write-interval must be greater than zero")]
    WriteInterval,
    /// `-debounce` is larger than `-max-debounce`.
    #[error("-debounce ({debounce:?}) must not exceed -max-debounce ({max:?})")]
    Debounce {
        /// The debounce window.
        debounce: Duration,
        /// The bound.
        max: Duration,
    },
    /// The Consul connection settings are invalid.
    #[error(transparent)]
    Consul(#[from] mirra_consul::ConfigError),
    /// `-metrics-path` other than `/metrics`.
    #[error("-metrics-path {0:?} is not supported: metrics are served at /metrics only")]
    MetricsPath(String),
    /// `-dry-run` with `-purge-k8s-services-from-node`.
    #[error(
        "-dry-run cannot be combined with -purge-k8s-services-from-node: the purge is a write \
         of every instance mirra owns on its node, which a preview would only list"
    )]
    DryRunPurge,
}

/// Everything the engine needs, validated. Build it with
/// [`Settings::from_args`], or directly in tests.
#[derive(Debug, Clone)]
pub struct Settings {
    /// What Services become in Consul, and the ownership marks.
    pub sync: SyncSettings,
    /// Period of the verification pass.
    pub verify_interval: Duration,
    /// Debounce, max delay and backoff of the work queue.
    pub queue: QueueConfig,
    /// Operations per transaction.
    pub txn_batch: usize,
    /// Transactions in flight at once.
    pub txn_concurrency: usize,
    /// Deregister every owned instance, then return.
    pub purge: bool,
    /// Longest wait of one blocking node-services query. Consul's default
    /// of 5 minutes; tests shorten it.
    pub consul_wait: Duration,
    /// Keys handed to one planning round (a rollout of many Services in one
    /// debounce window is planned, and written, together).
    pub max_keys_per_round: usize,
    /// The writer's backoff after a round in which Consul was unavailable
    /// (no leader, 5xx, connection errors): the first delay, doubled per
    /// further such round.
    pub write_backoff_base: Duration,
    /// Ceiling of one delay of the writer's backoff.
    pub write_backoff_cap: Duration,
    /// The leader-election Lease every write (Consul transactions,
    /// Kubernetes Events and ExternalName Services) is fenced on;
    /// [`LeaseDeadline::always`] without election. A Consul transaction
    /// needs the Consul client's request timeout left, a Kubernetes write
    /// [`Settings::kube_write_timeout`].
    pub lease: LeaseDeadline,
    /// Longest time one Kubernetes write may take before it is cancelled.
    pub kube_write_timeout: Duration,
    /// First delay of a contested repair (see [`crate::repair`]); doubled
    /// per repeat up to `repair_backoff_cap`.
    pub repair_backoff_base: Duration,
    /// Ceiling of the delay of a contested repair.
    pub repair_backoff_cap: Duration,
    /// Time without drift after a repair that ends a fight.
    pub repair_quiet: Duration,
    /// `-consul-cross-namespace-acl-policy`: linked as a policy default of
    /// every Consul namespace mirra creates (empty: none).
    pub cross_namespace_acl_policy: String,
    /// A dry run (`-dry-run`): every write is reported here instead of
    /// sent.
    pub preview: Option<mirra_runtime::Preview>,
}

/// Default of [`Settings::kube_write_timeout`]: 10 s, as the mirror
/// controller's, below the 13 s a leader normally has left of its Lease.
pub const DEFAULT_KUBE_WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// Keys planned together at most. 4096 keys of 5 instances make about
/// 60,000 operations in the worst case, which bounds the memory of one round
/// while letting a whole-cluster event (a relist) share transactions.
pub const DEFAULT_MAX_KEYS_PER_ROUND: usize = 4096;

/// Transactions in flight at once by default. Four keep a 64-operation
/// pipeline busy across the round trip to the leader (one transaction is
/// decoded and applied while the next travels) without letting one
/// controller monopolise the leader's write path.
pub const DEFAULT_TXN_CONCURRENCY: u16 = 4;

/// Upper bound of `-txn-concurrency`: beyond this, concurrency only queues
/// requests at the Consul leader.
pub const MAX_TXN_CONCURRENCY: u16 = 32;

impl Settings {
    /// Settings with the consul-k8s defaults for `sync`, a short debounce,
    /// and Consul's default blocking wait: a starting point for tests.
    pub fn new(sync: SyncSettings) -> Self {
        Self {
            sync,
            verify_interval: Duration::from_secs(30),
            queue: QueueConfig::default(),
            txn_batch: mirra_consul::config::DEFAULT_TXN_MAX_OPS,
            txn_concurrency: usize::from(DEFAULT_TXN_CONCURRENCY),
            purge: false,
            consul_wait: mirra_consul::blocking::DEFAULT_WAIT,
            max_keys_per_round: DEFAULT_MAX_KEYS_PER_ROUND,
            write_backoff_base: crate::backoff::DEFAULT_WRITE_BACKOFF_BASE,
            write_backoff_cap: crate::backoff::DEFAULT_WRITE_BACKOFF_CAP,
            lease: LeaseDeadline::always(),
            kube_write_timeout: DEFAULT_KUBE_WRITE_TIMEOUT,
            repair_backoff_base: crate::repair::DEFAULT_REPAIR_BACKOFF_BASE,
            repair_backoff_cap: crate::repair::DEFAULT_REPAIR_BACKOFF_CAP,
            repair_quiet: crate::repair::DEFAULT_REPAIR_QUIET,
            cross_namespace_acl_policy: String::new(),
            preview: None,
        }
    }

    /// Validates the flags and builds the settings.
    pub fn from_args(args: &SyncCatalogArgs) -> Result<Self, SettingsError> {
        if args.metrics_path != "/metrics" {
            return Err(SettingsError::MetricsPath(args.metrics_path.clone()));
        }
        // consul-k8s: a source namespace, when given, is the only one
        // allowed, whatever the allow list says.
        let allow: BTreeSet<String> = if args.k8s_source_namespace.is_empty() {
            args.allow_k8s_namespace.iter().cloned().collect()
        } else {
            BTreeSet::from([args.k8s_source_namespace.clone()])
        };
        let sync = SyncSettings {
            to_consul: args.to_consul,
            to_k8s: args.to_k8s,
            k8s_default_sync: args.k8s_default_sync,
            consul_service_prefix: args.consul_service_prefix.clone(),
            k8s_service_prefix: args.k8s_service_prefix.clone(),
            allow_k8s_namespaces: allow,
            deny_k8s_namespaces: args
                .deny_k8s_namespace
                .iter()
                .cloned()
                .collect::<BTreeSet<_>>(),
            add_k8s_namespace_suffix: args.add_k8s_namespace_suffix,
            consul_k8s_tag: args.consul_k8s_tag.clone(),
            consul_node_name: args.consul_node_name.clone(),
            sync_clusterip_services: args.sync_clusterip_services,
            sync_lb_services_endpoints: args.sync_lb_services_endpoints,
            node_port_sync_type: args.node_port_sync_type.parse::<NodePortSyncType>()?,
            enable_ingress: args.enable_ingress,
            sync_ingress_lb_ips: args.load_balancer_ips,
            port_layout: args.port_layout,
            k8s_write_namespace: args.k8s_write_namespace.clone(),
            consul_domain: args.consul_domain.clone(),
            consul_namespaces: ConsulNamespaces::from_flags(
                args.enable_namespaces,
                &args.consul_destination_namespace,
                args.enable_k8s_namespace_mirroring,
                &args.k8s_namespace_mirroring_prefix,
            ),
            ..SyncSettings::default()
        };
        sync.validate()?;
        if args.txn_batch_size == 0 || args.txn_batch_size > MAX_TXN_BATCH {
            return Err(SettingsError::TxnBatch(args.txn_batch_size));
        }
        if args.consul_write_interval.is_zero() {
            return Err(SettingsError::WriteInterval);
        }
        if args.debounce > args.max_debounce {
            return Err(SettingsError::Debounce {
                debounce: args.debounce,
                max: args.max_debounce,
            });
        }
        let mut s = Self::new(sync);
        s.verify_interval = args.consul_write_interval;
        s.queue.debounce = args.debounce;
        s.queue.max_delay = args.max_debounce;
        s.txn_batch = args.txn_batch_size;
        s.txn_concurrency = usize::from(args.txn_concurrency);
        s.purge = args.purge_k8s_services_from_node;
        if args.enable_namespaces {
            s.cross_namespace_acl_policy = args.consul_cross_namespace_acl_policy.clone();
        }
        if args.dry_run {
            if args.purge_k8s_services_from_node {
                return Err(SettingsError::DryRunPurge);
            }
            s.preview = Some(mirra_runtime::Preview::new("catalog"));
        }
        Ok(s)
    }
}

impl SyncCatalogArgs {
    /// The flags given that change nothing in mirra, each with why, for
    /// the start-up log: accepted so that consul-k8s's command lines run
    /// unchanged, and said so that nobody expects an effect.
    pub fn ignored_flags(&self) -> Vec<(&'static str, &'static str)> {
        let mut out = Vec::new();
        if self.enable_metrics {
            out.push((
                "-enable-metrics",
                "metrics are always served on -metrics-port",
            ));
        }
        if self.prometheus_retention_time != Duration::from_secs(60) {
            out.push((
                "-prometheus-retention-time",
                "mirra's metrics are current values; nothing expires",
            ));
        }
        if !self.filter.is_empty() {
            out.push(("-filter", "-purge-k8s-services-from-node removes exactly the instances mirra owns on its node"));
        }
        if self.grpc_port.is_some() {
            out.push(("-grpc-port", "mirra speaks Consul's HTTP API only"));
        }
        if self.skip_server_watch.is_some() {
            out.push((
                "-skip-server-watch",
                "mirra does not watch the server list over gRPC",
            ));
        }
        if self.is_windows {
            out.push((
                "-is-windows",
                "nothing in mirra depends on the node's operating system",
            ));
        }
        if !self.enable_namespaces {
            let given = [
                (
                    "-consul-destination-namespace",
                    self.consul_destination_namespace != "default",
                ),
                (
                    "-enable-k8s-namespace-mirroring",
                    self.enable_k8s_namespace_mirroring,
                ),
                (
                    "-k8s-namespace-mirroring-prefix",
                    !self.k8s_namespace_mirroring_prefix.is_empty(),
                ),
                (
                    "-consul-cross-namespace-acl-policy",
                    !self.consul_cross_namespace_acl_policy.is_empty(),
                ),
            ];
            for (flag, set) in given {
                if set {
                    out.push((flag, "only used with -enable-namespaces (as in consul-k8s)"));
                }
            }
        } else if !self.consul_cross_namespace_acl_policy.is_empty()
            && !self.enable_k8s_namespace_mirroring
            && self.consul_destination_namespace == mirra_catalog::DEFAULT_CONSUL_NAMESPACE
        {
            out.push((
                "-consul-cross-namespace-acl-policy",
                "every Service goes into the default namespace, which is never created",
            ));
        }
        out
    }

    /// The Consul connection flags as overrides of the environment.
    pub fn consul_overrides(&self) -> Overrides {
        Overrides {
            address: self.http_addr.clone(),
            token: self.token.clone(),
            token_file: self.token_file.clone(),
            ca_file: self.ca_file.clone().or_else(|| self.ca_cert_file.clone()),
            client_cert: self.client_cert.clone(),
            client_key: self.client_key.clone(),
            tls_server_name: self.tls_server_name.clone(),
            insecure_skip_verify: self.tls_skip_verify,
            datacenter: self.datacenter.clone(),
            namespace: self.namespace.clone(),
            ca_pem: self.ca_cert_pem.clone(),
            partition: self.partition.clone(),
            addresses: self.addresses.clone(),
            http_port: self.http_port,
            use_tls: self.use_tls,
            api_timeout: self.api_timeout,
            login_auth_method: self.auth_method_name.clone(),
            login_bearer_token_file: self.consul_login_bearer_token_file.clone(),
            login_datacenter: self.consul_login_datacenter.clone(),
            login_partition: self.consul_login_partition.clone(),
            login_namespace: self.consul_login_namespace.clone(),
            // Each flag is one pair; joined, they read like the variable.
            login_meta: (!self.consul_login_meta.is_empty())
                .then(|| self.consul_login_meta.join(",")),
        }
    }

    /// The Consul connection: the flags over the process environment
    /// (consul-k8s 1.x's `CONSUL_ADDRESSES`, `CONSUL_ACL_TOKEN`, ... and
    /// Consul CLI's `CONSUL_HTTP_ADDR`, `CONSUL_HTTP_TOKEN`, ...). Build the client with `mirra_consul::Client::new`.
    pub fn consul_config(&self) -> Result<ConsulConfig, SettingsError> {
        let mut cfg = ConsulConfig::from_process_env(&self.consul_overrides())?;
        cfg.txn_max_ops = self.txn_batch_size.clamp(1, MAX_TXN_BATCH);
        Ok(cfg)
    }
}

/// The settings of `mirra sync-catalog` with no flags, for unit tests.
#[cfg(test)]
#[allow(clippy::expect_used)]
pub(crate) fn default_settings() -> Settings {
    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        args: SyncCatalogArgs,
    }
    let cli = <Cli as clap::Parser>::try_parse_from(["mirra"]).expect("no flags parse");
    Settings::from_args(&cli.args).expect("the defaults are valid")
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests;
