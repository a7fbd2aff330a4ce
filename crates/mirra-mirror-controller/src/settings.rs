//! Command-line flags of `mirra run` for the mirror controller, and the
//! validated [`Settings`] the engine runs with.
//!
//! The flag help texts are the user documentation. What this module must NOT
//! do: talk to the API server, or silently widen the set of namespaces whose
//! SyncConfigs are honoured (that is a security boundary: a SyncConfig uses
//! mirra's permissions to write into other namespaces).

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use mirra_runtime::LeaseDeadline;

/// Where the in-cluster service account's namespace is mounted.
pub const SERVICE_ACCOUNT_NAMESPACE_FILE: &str =
    "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

/// Flags of the mirror controller.
#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// Namespace whose SyncConfigs are honoured (repeatable). SyncConfigs in
    /// other namespaces are ignored, because a SyncConfig writes into other
    /// namespaces with mirra's permissions. Default: the namespace mirra runs
    /// in (from the POD_NAMESPACE environment variable or the service
    /// account's namespace file).
    #[arg(long = "watch-namespace", value_name = "NS")]
    pub watch_namespace: Vec<String>,

    /// Honour SyncConfigs in every namespace. Anyone who can create a
    /// SyncConfig anywhere can then write into every namespace mirra may
    /// write to; mirra logs a warning at start-up.
    #[arg(long = "all-namespaces", conflicts_with = "watch_namespace")]
    pub all_namespaces: bool,

    /// Namespace opened to tenants (repeatable): its SyncConfigs are
    /// honoured when they name a ServiceAccount of their own namespace
    /// (`spec.serviceAccountName`), and every write for them, and every
    /// read of their copyItems' sources, is made as that account
    /// (impersonation): they copy, prune and delete only where it may.
    /// Without one they are Invalid and write nothing. mirra needs the
    /// `impersonate` verb on those ServiceAccounts (deploy/mirror-tenants).
    /// Default: none.
    #[arg(long = "tenant-namespace", value_name = "NS")]
    pub tenant_namespace: Vec<String>,

    /// Target namespace mirra never writes to or deletes from, whatever a
    /// SyncConfig selects (repeatable), in addition to the protected ones:
    /// kube-system, kube-public, kube-node-lease and mirra's own namespace.
    #[arg(long = "never-write-namespace", value_name = "NS")]
    pub never_write_namespace: Vec<String>,

    /// Lift the protection of one of the namespaces mirra never writes to by
    /// default (kube-system, kube-public, kube-node-lease, mirra's own
    /// namespace), so SyncConfigs selecting it write there (repeatable).
    #[arg(long = "allow-write-namespace", value_name = "NS")]
    pub allow_write_namespace: Vec<String>,

    /// A kind mirra may copy and delete, as `Kind` for the core group or
    /// `Kind.group` (`NetworkPolicy.networking.k8s.io`); repeatable, and
    /// `*` allows every kind. Items of other kinds fail with a message
    /// naming this flag and are neither written nor deleted. Given, the
    /// list replaces the default: ConfigMap, Secret, LimitRange,
    /// ResourceQuota and NetworkPolicy.networking.k8s.io. Roles,
    /// RoleBindings and ServiceAccounts grant access, so they are opt-in
    /// (deploy/mirror-rbac-kinds).
    #[arg(long = "allow-kind", value_name = "KIND[.GROUP]")]
    pub allow_kind: Vec<String>,

    /// Quiet time in milliseconds after the latest event for a namespace
    /// before it is reconciled; events arriving meanwhile are merged into one
    /// reconcile. A namespace's creation and SyncConfig edits do not wait:
    /// those namespaces are reconciled at once (events arriving while they
    /// are still queued are merged all the same).
    #[arg(long = "debounce-ms", value_name = "MS", default_value_t = 100)]
    pub debounce_ms: u64,

    /// Upper bound in milliseconds from the first event of a burst to the
    /// reconcile, however long the burst goes on.
    #[arg(long = "max-delay-ms", value_name = "MS", default_value_t = 1000)]
    pub max_delay_ms: u64,

    /// Seconds between verification passes. A pass re-plans every namespace
    /// from the watch caches (CPU only: it sends requests only when something
    /// drifted without an event; about 0.2 s of CPU for 1,000 namespaces of
    /// 40 items each, and it competes with the work of events meanwhile).
    /// 0 disables the pass.
    #[arg(
        long = "verify-interval-secs",
        value_name = "SECS",
        default_value_t = 300
    )]
    pub verify_interval_secs: u64,

    /// Milliseconds between SyncConfig status writes: status changes are
    /// gathered for this long and each SyncConfig's status is written at most
    /// once per window, and only when it differs from the stored one.
    #[arg(long = "status-debounce-ms", value_name = "MS", default_value_t = 1000)]
    pub status_debounce_ms: u64,

    /// Number of namespaces reconciled concurrently, each with its writes in
    /// flight. The client's rate limit (--kube-api-qps, --kube-api-burst)
    /// bounds the requests per second whatever this is; more workers keep
    /// more round trips overlapping within it.
    #[arg(long = "workers", value_name = "N", default_value_t = DEFAULT_WORKERS)]
    pub workers: usize,

    /// Writes one reconcile of a namespace sends at most; the rest follow
    /// in the next reconciles of that namespace, which come at once. The
    /// SyncConfigs of a namespace take turns within it, so one with
    /// thousands of items delays another's edit by one such batch, not by
    /// all of its writes.
    #[arg(long = "max-writes-per-pass", value_name = "N", default_value_t = 256)]
    pub max_writes_per_pass: usize,

    /// Copies one SyncConfig may have at most: its syncItems times the
    /// namespaces it writes into. A SyncConfig over it is Ready=False with
    /// reason LimitExceeded and gets a Warning Event: nothing of it is
    /// written, updated or deleted (its existing copies stay as they are)
    /// until it is back under the limit, by a smaller selector or item list
    /// or a higher flag; other SyncConfigs are not affected. 20000 lets a
    /// baseline of four items (quota, limit range, network policy, a
    /// ConfigMap) reach 5,000 namespaces, and stops a selector mistake that
    /// fans thousands of items out to every namespace.
    #[arg(
        long = "max-copies-per-syncconfig",
        value_name = "N",
        default_value_t = DEFAULT_MAX_COPIES
    )]
    pub max_copies_per_syncconfig: u64,

    /// Bytes of copies one SyncConfig may have at most: each syncItem's
    /// size (its JSON in the SyncConfig) times the namespaces it writes
    /// into, summed over its items. Bytes, or with a suffix Ki, Mi, Gi or
    /// Ti. Over it, the same as --max-copies-per-syncconfig. 128Mi lets a
    /// 900 KiB item reach about 145 namespaces and a few kilobytes of
    /// baseline reach every namespace of a large cluster, while one
    /// SyncConfig cannot fill a good part of etcd (2 GiB by default) or
    /// grow mirra's memory without bound.
    #[arg(
        long = "max-bytes-per-syncconfig",
        value_name = "BYTES",
        default_value = DEFAULT_MAX_BYTES,
        value_parser = parse_bytes
    )]
    pub max_bytes_per_syncconfig: u64,

    /// First retry delay in seconds of a namespace whose write failed
    /// permanently (403 Forbidden, 404, 422 Invalid without forceRecreate).
    /// Retrying soon cannot help, but a permission granted or an object fixed
    /// later causes no event mirra sees; the delay doubles per failed pass.
    #[arg(
        long = "permanent-retry-initial-secs",
        value_name = "SECS",
        default_value_t = 30
    )]
    pub permanent_retry_initial_secs: u64,

    /// Largest retry delay in seconds after permanent write failures: how
    /// long a fixed RBAC rule or object may take to clear the Degraded
    /// condition at most.
    #[arg(
        long = "permanent-retry-max-secs",
        value_name = "SECS",
        default_value_t = 300
    )]
    pub permanent_retry_max_secs: u64,

    /// First retry delay in milliseconds of a watch that failed (SyncConfigs,
    /// Namespaces, copies or deleteItems: a CRD not installed, a list
    /// refused by RBAC, the API server unreachable); doubles per failure
    /// (with jitter), reset once the watch lists.
    #[arg(
        long = "watch-retry-initial-ms",
        value_name = "MS",
        default_value_t = 800
    )]
    pub watch_retry_initial_ms: u64,

    /// Largest retry delay in milliseconds of such a watch: how long an
    /// installed CRD or a kind granted in RBAC may take to be noticed.
    #[arg(
        long = "watch-retry-max-ms",
        value_name = "MS",
        default_value_t = 30_000
    )]
    pub watch_retry_max_ms: u64,

    /// Skip the start-up sweep. By default mirra lists, once at start-up,
    /// every namespaced kind the server serves for objects carrying its
    /// label (`app.kubernetes.io/managed-by=mirra`, one list request of at
    /// most one object per kind), so that copies of a kind no SyncConfig
    /// names any more (its last SyncConfig was deleted while mirra was down)
    /// are still pruned. Kinds mirra may not list are skipped silently.
    #[arg(long = "no-startup-sweep")]
    pub no_startup_sweep: bool,

    /// Preview instead of sync: watch, cache and plan as usual, but send no
    /// write at all (no apply, delete, status, Event or Lease). Each write
    /// that would be sent is logged ("dry run: would write", with what
    /// differs), counted in mirra_dry_run_planned_writes and listed on
    /// /preview of the health port (JSON; ?format=text for a table). Run it
    /// beside espejo before switching: a quiet preview means the switch
    /// writes nothing. Cannot be combined with --leader-elect (a preview
    /// never takes the Lease).
    #[arg(long = "dry-run")]
    pub dry_run: bool,
}

/// Namespaces reconciled at once by default: as many requests in flight as
/// the bench's espejo-style strategy keeps (16). Alternated runs of a
/// 1,100-copy SyncConfig edit took 0.19-0.24 s with 16 against 0.23-0.27 s
/// with 8 (BENCHMARKS.md); the writes per edit are the same.
pub const DEFAULT_WORKERS: usize = 16;

/// Default of `--max-copies-per-syncconfig`.
pub const DEFAULT_MAX_COPIES: u64 = 20_000;

/// Default of `--max-bytes-per-syncconfig`.
pub const DEFAULT_MAX_BYTES: &str = "128Mi";

/// Parses a byte count: digits, optionally followed by `Ki`, `Mi`, `Gi` or
/// `Ti` (powers of 1024, as Kubernetes quantities write them).
pub fn parse_bytes(value: &str) -> Result<u64, String> {
    let value = value.trim();
    let digits = value.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &value[digits.len()..];
    let shift = match suffix {
        "" => 0,
        "Ki" => 10,
        "Mi" => 20,
        "Gi" => 30,
        "Ti" => 40,
        other => {
            return Err(format!(
                "{value:?}: unknown unit {other:?} (write bytes, or a number with Ki, Mi, Gi or \
                 Ti, e.g. 128Mi)"
            ));
        }
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return Err(format!(
            "{value:?} is not a number of bytes (write bytes, or a number with Ki, Mi, Gi or \
             Ti, e.g. 128Mi)"
        ));
    }
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{value:?} is too large"))?;
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| format!("{value:?} is too large"))
}

/// Which namespaces' SyncConfigs are honoured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchScope {
    /// Only these namespaces.
    Namespaces(BTreeSet<String>),
    /// Every namespace (explicit opt-in).
    All,
}

impl WatchScope {
    /// Whether SyncConfigs in `namespace` are honoured.
    pub fn honours(&self, namespace: &str) -> bool {
        match self {
            WatchScope::All => true,
            WatchScope::Namespaces(list) => list.contains(namespace),
        }
    }
}

/// Why the flags cannot be turned into settings.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SettingsError {
    /// No `--watch-namespace` was given and mirra's own namespace is unknown
    /// (not in a pod). Not retryable: pass a flag.
    #[error(
        "no namespace to watch for SyncConfigs: mirra does not run in a pod \
         (neither POD_NAMESPACE nor {SERVICE_ACCOUNT_NAMESPACE_FILE} is set); \
         pass --watch-namespace NS (repeatable) or, deliberately, --all-namespaces"
    )]
    NoWatchNamespace,
    /// A flag value is out of range. Not retryable: fix the flag.
    #[error("invalid flag {flag}: {message}")]
    Invalid {
        /// The flag.
        flag: &'static str,
        /// What is wrong.
        message: String,
    },
}

/// The namespaces mirra never writes to unless `--allow-write-namespace`
/// names them (mirra's own namespace is added at start-up).
pub const PROTECTED_NAMESPACES: [&str; 3] = ["kube-system", "kube-public", "kube-node-lease"];

/// The kinds mirra copies when `--allow-kind` is not given: those deploy/
/// grants, without the ones that grant access themselves.
pub const DEFAULT_ALLOWED_KINDS: [&str; 5] = [
    "ConfigMap",
    "Secret",
    "LimitRange",
    "ResourceQuota",
    "NetworkPolicy.networking.k8s.io",
];

/// A kind as `--allow-kind` names it: group (empty for core) and kind.
pub type KindName = (String, String);

/// Parses one `--allow-kind` value (`Kind` or `Kind.group`).
pub fn parse_kind_name(value: &str) -> Result<KindName, String> {
    let value = value.trim();
    let (kind, group) = value.split_once('.').unwrap_or((value, ""));
    let dotted = value.contains('.');
    let kind_ok = kind.chars().next().is_some_and(|c| c.is_ascii_uppercase())
        && kind.chars().all(|c| c.is_ascii_alphanumeric());
    if !kind_ok {
        return Err(format!(
            "{value:?} is not Kind or Kind.group (a kind starts with an upper-case letter and \
             holds only letters and digits, e.g. ConfigMap or NetworkPolicy.networking.k8s.io)"
        ));
    }
    let group_ok = group.split('.').all(|label| {
        !label.is_empty()
            && label
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    });
    if dotted && !group_ok {
        return Err(format!("{value:?}: {group:?} is not an API group name"));
    }
    Ok((group.to_string(), kind.to_string()))
}

/// The kind as `--allow-kind` writes it.
pub fn kind_name(group: &str, kind: &str) -> String {
    if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    }
}

/// Everything the controller needs to know, validated. Fields are public so
/// that tests and `mirra dev` can build settings directly.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Namespaces whose SyncConfigs are honoured.
    pub scope: WatchScope,
    /// Namespaces whose SyncConfigs are honoured only with a ServiceAccount
    /// of their own, whose rights they then use.
    pub tenant_namespaces: BTreeSet<String>,
    /// Target namespaces never written to.
    pub never_write: BTreeSet<String>,
    /// Kinds mirra may write and delete; `None` allows every kind.
    pub allowed_kinds: Option<BTreeSet<KindName>>,
    /// Quiet time before a namespace is reconciled.
    pub debounce: Duration,
    /// Bound on the delay from the first event of a burst.
    pub max_delay: Duration,
    /// Interval of the verification pass; `None` disables it.
    pub verify_interval: Option<Duration>,
    /// Window over which status writes are gathered.
    pub status_debounce: Duration,
    /// A dirty status is written after this long even while namespaces are
    /// still being reconciled (normally it waits until the queue is idle, so
    /// that counters are not written half-way through a burst).
    pub status_max_delay: Duration,
    /// Namespaces reconciled concurrently.
    pub workers: usize,
    /// Writes one reconcile of a namespace sends at most (SyncConfigs
    /// taking turns); the rest wait for its next reconcile.
    pub max_writes_per_pass: usize,
    /// Copies and bytes one SyncConfig may have at most.
    pub limits: mirra_mirror::Limits,
    /// First retry delay of a failing namespace; doubles per failure.
    pub backoff_base: Duration,
    /// Largest retry delay of a failing namespace.
    pub backoff_cap: Duration,
    /// First retry delay of a namespace whose write failed permanently
    /// (403, 422, ...): nothing changes by retrying soon, but a permission
    /// granted or an object fixed meanwhile is picked up without waiting for
    /// an event or the verification pass. Doubles per failed pass.
    pub permanent_retry_base: Duration,
    /// Largest retry delay after permanent failures.
    pub permanent_retry_cap: Duration,
    /// First retry delay of a watch that failed (a refused list among
    /// others); doubles per failure, reset once the watch lists.
    pub watch_retry_base: Duration,
    /// Largest retry delay of such a watch: how long a permission granted
    /// in RBAC may take to be noticed.
    pub watch_retry_cap: Duration,
    /// Look for mirra's copies of kinds no SyncConfig names, once at
    /// start-up (see `--no-startup-sweep`).
    pub startup_sweep: bool,
    /// The leader-election Lease every write is fenced on
    /// ([`mirra_runtime::WriteFence`]); [`LeaseDeadline::always`] without
    /// election.
    pub lease: LeaseDeadline,
    /// Longest time one Kubernetes write (apply, delete, status, Event) may
    /// take before it is cancelled and retried; also how much of the Lease
    /// must be left for a write to be sent at all.
    pub write_timeout: Duration,
    /// A dry run (`--dry-run`): every write is reported here instead of
    /// sent.
    pub preview: Option<mirra_runtime::Preview>,
}

/// Default of [`Settings::write_timeout`]. 10 s: an apply answers in
/// milliseconds unless the API server is in trouble, and with the default
/// Lease (15 s, renewed every 2 s) a leader normally has 13 s or more left,
/// so a healthy leader is never fenced.
pub const DEFAULT_WRITE_TIMEOUT: Duration = Duration::from_secs(10);

impl Settings {
    /// Why mirra may not write or delete objects of this kind, if it may
    /// not (`--allow-kind`).
    pub fn refuses_kind(&self, group: &str, kind: &str) -> Option<String> {
        let allowed = self.allowed_kinds.as_ref()?;
        if allowed.contains(&(group.to_string(), kind.to_string())) {
            return None;
        }
        Some(format!(
            "kind {} is not one mirra may copy or delete; allow it with --allow-kind {} \
             (and grant it in mirra's ClusterRole)",
            kind_name(group, kind),
            kind_name(group, kind)
        ))
    }

    /// Settings for the given scope with the defaults of the flags.
    pub fn new(scope: WatchScope) -> Settings {
        // The queue's timings are the runtime's defaults (their reasons are
        // documented there): one place to tune them for every controller.
        let queue = mirra_runtime::QueueConfig::default();
        Settings {
            scope,
            tenant_namespaces: BTreeSet::new(),
            never_write: PROTECTED_NAMESPACES.iter().map(|n| n.to_string()).collect(),
            allowed_kinds: Some(
                DEFAULT_ALLOWED_KINDS
                    .iter()
                    .filter_map(|k| parse_kind_name(k).ok())
                    .collect(),
            ),
            debounce: queue.debounce,
            max_delay: queue.max_delay,
            verify_interval: Some(Duration::from_secs(300)),
            status_debounce: Duration::from_millis(1000),
            // 10 s: during a long burst (a thousand namespaces being
            // created) users still see counters move every few seconds.
            status_max_delay: Duration::from_secs(10),
            workers: DEFAULT_WORKERS,
            max_writes_per_pass: 256,
            limits: mirra_mirror::Limits {
                max_copies: DEFAULT_MAX_COPIES,
                max_bytes: 128 << 20,
            },
            backoff_base: queue.backoff_base,
            backoff_cap: queue.backoff_cap,
            // 30 s .. 5 min: a fixed RBAC rule or object shows within
            // minutes, while a namespace that stays forbidden costs one
            // request per item every five minutes, like the verification
            // pass would.
            permanent_retry_base: Duration::from_secs(30),
            permanent_retry_cap: Duration::from_secs(300),
            // kube-runtime's default watcher backoff (800 ms .. 30 s).
            watch_retry_base: Duration::from_millis(800),
            watch_retry_cap: Duration::from_secs(30),
            startup_sweep: true,
            lease: LeaseDeadline::always(),
            write_timeout: DEFAULT_WRITE_TIMEOUT,
            preview: None,
        }
    }

    /// Settings for tests: short windows so that tests wait on state, not on
    /// timers.
    pub fn for_tests(namespaces: &[&str]) -> Settings {
        let mut s = Settings::new(WatchScope::Namespaces(
            namespaces.iter().map(|n| n.to_string()).collect(),
        ));
        // 10 ms: long enough to merge the events of one write, short enough
        // to keep tests fast.
        s.debounce = Duration::from_millis(10);
        s.max_delay = Duration::from_millis(50);
        s.status_debounce = Duration::from_millis(20);
        s.status_max_delay = Duration::from_millis(500);
        s.backoff_base = Duration::from_millis(20);
        s.backoff_cap = Duration::from_millis(500);
        s.permanent_retry_base = Duration::from_millis(100);
        s.permanent_retry_cap = Duration::from_secs(1);
        s.watch_retry_base = Duration::from_millis(50);
        s.watch_retry_cap = Duration::from_millis(400);
        s.verify_interval = None;
        s.workers = 4;
        s
    }

    /// Whether SyncConfigs in `namespace` are honoured: in the watch scope,
    /// or a tenant namespace.
    pub fn honours(&self, namespace: &str) -> bool {
        self.scope.honours(namespace) || self.tenant_namespaces.contains(namespace)
    }

    /// The namespaces whose SyncConfigs are watched (`None`: every one).
    pub fn config_watch_namespaces(&self) -> Vec<Option<String>> {
        match &self.scope {
            WatchScope::All => vec![None],
            WatchScope::Namespaces(list) => list
                .iter()
                .chain(&self.tenant_namespaces)
                .cloned()
                .collect::<BTreeSet<_>>()
                .into_iter()
                .map(Some)
                .collect(),
        }
    }

    /// Validates the flags; reads `POD_NAMESPACE` and the service account
    /// file only when no scope flag is given.
    pub fn from_args(args: &RunArgs) -> Result<Settings, SettingsError> {
        Self::from_args_with(args, pod_namespace)
    }

    /// [`Settings::from_args`] with the lookup of mirra's own namespace
    /// passed in (for tests).
    pub fn from_args_with(
        args: &RunArgs,
        own_namespace: impl FnOnce() -> Option<String>,
    ) -> Result<Settings, SettingsError> {
        let own = own_namespace();
        let scope = if args.all_namespaces {
            WatchScope::All
        } else if !args.watch_namespace.is_empty() {
            for ns in &args.watch_namespace {
                if ns.trim().is_empty() {
                    return Err(SettingsError::Invalid {
                        flag: "--watch-namespace",
                        message: "empty namespace name".into(),
                    });
                }
            }
            WatchScope::Namespaces(args.watch_namespace.iter().cloned().collect())
        } else {
            match &own {
                Some(ns) => WatchScope::Namespaces([ns.clone()].into()),
                None => return Err(SettingsError::NoWatchNamespace),
            }
        };
        if args.max_writes_per_pass == 0 {
            return Err(SettingsError::Invalid {
                flag: "--max-writes-per-pass",
                message: "must be at least 1".into(),
            });
        }
        for (flag, value) in [
            (
                mirra_mirror::limits::MAX_COPIES_FLAG,
                args.max_copies_per_syncconfig,
            ),
            (
                mirra_mirror::limits::MAX_BYTES_FLAG,
                args.max_bytes_per_syncconfig,
            ),
        ] {
            // 0 would hold back every SyncConfig: surely a mistake.
            if value == 0 {
                return Err(SettingsError::Invalid {
                    flag,
                    message: "must be at least 1".into(),
                });
            }
        }
        if args.workers == 0 {
            return Err(SettingsError::Invalid {
                flag: "--workers",
                message: "must be at least 1".into(),
            });
        }
        if args.max_delay_ms < args.debounce_ms {
            return Err(SettingsError::Invalid {
                flag: "--max-delay-ms",
                message: "must be at least --debounce-ms".into(),
            });
        }
        if args.status_debounce_ms == 0 {
            return Err(SettingsError::Invalid {
                flag: "--status-debounce-ms",
                message: "must be at least 1".into(),
            });
        }
        let retry_bounds = [
            (
                "--permanent-retry-initial-secs",
                "--permanent-retry-max-secs",
                Duration::from_secs(args.permanent_retry_initial_secs),
                Duration::from_secs(args.permanent_retry_max_secs),
            ),
            (
                "--watch-retry-initial-ms",
                "--watch-retry-max-ms",
                Duration::from_millis(args.watch_retry_initial_ms),
                Duration::from_millis(args.watch_retry_max_ms),
            ),
        ];
        for (initial_flag, max_flag, initial, max) in retry_bounds {
            // Zero would retry in a tight loop against a server that keeps
            // refusing.
            if initial.is_zero() {
                return Err(SettingsError::Invalid {
                    flag: initial_flag,
                    message: "must be at least 1".into(),
                });
            }
            if max < initial {
                return Err(SettingsError::Invalid {
                    flag: max_flag,
                    message: format!("must be at least {initial_flag}"),
                });
            }
        }
        let mut s = Settings::new(scope);
        for ns in &args.tenant_namespace {
            let ns = ns.trim();
            if ns.is_empty() {
                return Err(SettingsError::Invalid {
                    flag: "--tenant-namespace",
                    message: "empty namespace name".into(),
                });
            }
            s.tenant_namespaces.insert(ns.to_string());
        }
        s.never_write.extend(own);
        s.never_write
            .extend(args.never_write_namespace.iter().cloned());
        for ns in &args.allow_write_namespace {
            s.never_write.remove(ns.trim());
        }
        if !args.allow_kind.is_empty() {
            s.allowed_kinds = if args.allow_kind.iter().any(|k| k.trim() == "*") {
                None
            } else {
                let mut kinds = BTreeSet::new();
                for value in &args.allow_kind {
                    let k = parse_kind_name(value).map_err(|message| SettingsError::Invalid {
                        flag: "--allow-kind",
                        message,
                    })?;
                    kinds.insert(k);
                }
                Some(kinds)
            };
        }
        s.debounce = Duration::from_millis(args.debounce_ms);
        s.max_delay = Duration::from_millis(args.max_delay_ms);
        s.verify_interval =
            (args.verify_interval_secs > 0).then(|| Duration::from_secs(args.verify_interval_secs));
        s.status_debounce = Duration::from_millis(args.status_debounce_ms);
        s.workers = args.workers;
        s.max_writes_per_pass = args.max_writes_per_pass;
        s.limits = mirra_mirror::Limits {
            max_copies: args.max_copies_per_syncconfig,
            max_bytes: args.max_bytes_per_syncconfig,
        };
        s.permanent_retry_base = Duration::from_secs(args.permanent_retry_initial_secs);
        s.permanent_retry_cap = Duration::from_secs(args.permanent_retry_max_secs);
        s.watch_retry_base = Duration::from_millis(args.watch_retry_initial_ms);
        s.watch_retry_cap = Duration::from_millis(args.watch_retry_max_ms);
        s.startup_sweep = !args.no_startup_sweep;
        s.preview = args
            .dry_run
            .then(|| mirra_runtime::Preview::new(crate::engine::CONTROLLER));
        Ok(s)
    }
}

/// The namespace this process runs in, when it runs in a pod:
/// `POD_NAMESPACE`, else the service account's namespace file.
pub fn pod_namespace() -> Option<String> {
    own_namespace(
        std::env::var("POD_NAMESPACE").ok(),
        Path::new(SERVICE_ACCOUNT_NAMESPACE_FILE),
    )
}

/// mirra's own namespace from its two sources.
fn own_namespace(env: Option<String>, file: &Path) -> Option<String> {
    env.filter(|s| !s.trim().is_empty())
        .or_else(|| std::fs::read_to_string(file).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests;
