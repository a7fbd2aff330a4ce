//! Connection settings: where Consul is, which ACL token to present, how to
//! speak TLS, and which datacenter, namespace and partition to address.
//!
//! Parsing is a pure function of an environment map and explicit values
//! ([`ConsulConfig::from_sources`]); the only I/O it does is reading the
//! token file it is pointed at. It reads the same variables as Consul's own
//! CLI (`CONSUL_HTTP_*`) and as consul-k8s 1.x (`CONSUL_ADDRESSES`,
//! `CONSUL_ACL_TOKEN`, ...) so that an operator's existing environment just
//! works. It must NOT resolve host names: that happens when the client is
//! built.
//!
//! This module must NOT let the ACL token escape: [`Token`] has no `Display`,
//! its `Debug` is redacted, and every error names the token by its source
//! ("token from CONSUL_HTTP_TOKEN_FILE"), never by its value.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use reqwest::Url;

use crate::backoff::RetryPolicy;

/// The address Consul's CLI and libraries use when nothing is configured.
pub const DEFAULT_ADDRESS: &str = "127.0.0.1:8500";

/// Default number of operations per `/v1/txn` request.
///
/// Consul servers before the limit was raised reject a transaction with more
/// than 64 operations (`413`), and newer servers accept 128. 64 works against
/// every server version mirra supports while still cutting Raft applies by a
/// factor of 64 compared to one `catalog/register` per instance; operators of
/// newer clusters can raise it with [`ConsulConfig::txn_max_ops`].
pub const DEFAULT_TXN_MAX_OPS: usize = 64;

/// Upper bound accepted for [`ConsulConfig::txn_max_ops`]: the largest
/// transaction any Consul release documents. A larger value could only ever
/// produce `413 Request Entity Too Large`.
pub const MAX_TXN_MAX_OPS: usize = 128;

/// Timeout for a non-blocking request (and the margin added on top of the
/// wait of a blocking one). Catalog reads and writes answer in milliseconds
/// on a healthy cluster; 10 s leaves room for a Raft commit on a loaded
/// server and a leader election (which Consul bounds to a few seconds)
/// without hanging a reconcile loop for long.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Environment variable names, as Consul's CLI reads them.
pub mod env {
    /// Address of the Consul HTTP API (`host:port` or a URL).
    pub const HTTP_ADDR: &str = "CONSUL_HTTP_ADDR";
    /// ACL token.
    pub const HTTP_TOKEN: &str = "CONSUL_HTTP_TOKEN";
    /// Path of a file holding the ACL token.
    pub const HTTP_TOKEN_FILE: &str = "CONSUL_HTTP_TOKEN_FILE";
    /// `true` switches a scheme-less address to https.
    pub const HTTP_SSL: &str = "CONSUL_HTTP_SSL";
    /// `false` disables verification of the server certificate.
    pub const HTTP_SSL_VERIFY: &str = "CONSUL_HTTP_SSL_VERIFY";
    /// PEM file with the CA certificate(s) that signed the server's cert.
    pub const CACERT: &str = "CONSUL_CACERT";
    /// PEM file with the client certificate (mutual TLS).
    pub const CLIENT_CERT: &str = "CONSUL_CLIENT_CERT";
    /// PEM file with the client private key (mutual TLS).
    pub const CLIENT_KEY: &str = "CONSUL_CLIENT_KEY";
    /// Server name to send in SNI and to verify the certificate against.
    pub const TLS_SERVER_NAME: &str = "CONSUL_TLS_SERVER_NAME";
    /// Consul Enterprise namespace.
    pub const NAMESPACE: &str = "CONSUL_NAMESPACE";
    /// Consul Enterprise admin partition (also read by consul-k8s 1.x).
    pub const PARTITION: &str = "CONSUL_PARTITION";

    // consul-k8s 1.x names (its `control-plane/subcommand/flags`).

    /// consul-k8s 1.x: the servers, as one DNS name (which may resolve to
    /// several servers) or a comma-separated list of IP addresses or names.
    pub const ADDRESSES: &str = "CONSUL_ADDRESSES";
    /// consul-k8s 1.x: the HTTP(S) port of the servers in `CONSUL_ADDRESSES`.
    pub const HTTP_PORT: &str = "CONSUL_HTTP_PORT";
    /// consul-k8s 1.x: `true` speaks https to the servers in `CONSUL_ADDRESSES`.
    pub const USE_TLS: &str = "CONSUL_USE_TLS";
    /// consul-k8s 1.x: PEM file with the CA certificate(s).
    pub const CACERT_FILE: &str = "CONSUL_CACERT_FILE";
    /// consul-k8s 1.x: the CA certificate(s) as PEM text; the file wins.
    pub const CACERT_PEM: &str = "CONSUL_CACERT_PEM";
    /// consul-k8s 1.x: datacenter (`dc` query parameter).
    pub const DATACENTER: &str = "CONSUL_DATACENTER";
    /// consul-k8s 1.x: timeout of one API request, as a Go duration.
    pub const API_TIMEOUT: &str = "CONSUL_API_TIMEOUT";
    /// consul-k8s 1.x: ACL token.
    pub const ACL_TOKEN: &str = "CONSUL_ACL_TOKEN";
    /// consul-k8s 1.x: path of a file holding the ACL token.
    pub const ACL_TOKEN_FILE: &str = "CONSUL_ACL_TOKEN_FILE";
    /// consul-k8s 1.x: name of the auth method to log in with; when set,
    /// the token comes from `/v1/acl/login` and the ACL token variables
    /// are not used.
    pub const LOGIN_AUTH_METHOD: &str = "CONSUL_LOGIN_AUTH_METHOD";
    /// consul-k8s 1.x: file holding the bearer token (a Kubernetes
    /// ServiceAccount JWT) presented at login.
    pub const LOGIN_BEARER_TOKEN_FILE: &str = "CONSUL_LOGIN_BEARER_TOKEN_FILE";
    /// consul-k8s 1.x: datacenter of the auth method (`dc` of the login).
    pub const LOGIN_DATACENTER: &str = "CONSUL_LOGIN_DATACENTER";
    /// consul-k8s 1.x: admin partition of the auth method.
    pub const LOGIN_PARTITION: &str = "CONSUL_LOGIN_PARTITION";
    /// consul-k8s 1.x: namespace of the auth method.
    pub const LOGIN_NAMESPACE: &str = "CONSUL_LOGIN_NAMESPACE";
    /// consul-k8s 1.x: metadata of the login token, `key=value` pairs
    /// separated by commas.
    pub const LOGIN_META: &str = "CONSUL_LOGIN_META";
}

/// Where a Kubernetes pod finds its ServiceAccount token; the bearer token
/// file when `CONSUL_LOGIN_BEARER_TOKEN_FILE` is not set (as in
/// consul-k8s).
pub const DEFAULT_BEARER_TOKEN_FILE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/token";

/// How to obtain an ACL token by logging in to an auth method
/// (`/v1/acl/login`) instead of configuring one.
///
/// The bearer token file is read at every login, not once: Kubernetes
/// rotates projected ServiceAccount tokens, and a login after the rotation
/// must present the new one. [`ConsulConfig::from_sources`] reads it once
/// up front only so that a wrong path stops the program at start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoginConfig {
    /// The auth method's name.
    pub auth_method: String,
    /// File holding the bearer token.
    pub bearer_token_file: PathBuf,
    /// `dc` of the login and logout requests; the client's datacenter
    /// when `None`.
    pub datacenter: Option<String>,
    /// `ns` of the login and logout requests; the client's namespace when
    /// `None`.
    pub namespace: Option<String>,
    /// `partition` of the login and logout requests; the client's
    /// partition when `None`.
    pub partition: Option<String>,
    /// `Meta` of the login: Consul stores it on the token it creates.
    pub meta: BTreeMap<String, String>,
}

impl LoginConfig {
    /// A login with `auth_method`, the default bearer token file and no
    /// meta.
    pub fn new(auth_method: impl Into<String>) -> Self {
        Self {
            auth_method: auth_method.into(),
            bearer_token_file: PathBuf::from(DEFAULT_BEARER_TOKEN_FILE),
            datacenter: None,
            namespace: None,
            partition: None,
            meta: BTreeMap::new(),
        }
    }

    /// Reads the bearer token file. The error names the file, never its
    /// content.
    pub fn read_bearer_token(&self) -> Result<Token, ConfigError> {
        let hint = format!(
            "bearer token file {} ({})",
            self.bearer_token_file.display(),
            env::LOGIN_BEARER_TOKEN_FILE
        );
        let text = std::fs::read_to_string(&self.bearer_token_file).map_err(|e| {
            ConfigError::TokenFileUnreadable {
                source_hint: hint.clone(),
                reason: e.to_string(),
            }
        })?;
        let secret = Token::new(text);
        if secret.expose().is_empty() {
            return Err(ConfigError::TokenFileEmpty { source_hint: hint });
        }
        Ok(secret)
    }
}

/// Parses `CONSUL_LOGIN_META`: `key=value` pairs separated by commas, as
/// consul-k8s reads it. Blanks around keys and values and empty entries
/// (`a=b,`) are ignored; a later key wins over an earlier one. A pair
/// without `=`, with a second `=` or with an empty key is an error
/// (consul-k8s silently drops such a pair; a dropped pair would go
/// unnoticed on every token).
pub fn parse_login_meta(value: &str) -> Result<BTreeMap<String, String>, ConfigError> {
    let mut meta = BTreeMap::new();
    for entry in value.split(',').filter(|e| !e.trim().is_empty()) {
        let bad = |reason: &str| ConfigError::BadLoginMeta {
            pair: entry.trim().to_owned(),
            reason: reason.to_owned(),
        };
        let Some((k, v)) = entry.split_once('=') else {
            return Err(bad("expected key=value"));
        };
        if v.contains('=') {
            return Err(bad("more than one '='"));
        }
        let k = k.trim();
        if k.is_empty() {
            return Err(bad("empty key"));
        }
        meta.insert(k.to_owned(), v.trim().to_owned());
    }
    Ok(meta)
}

/// Port of the servers named by `CONSUL_ADDRESSES` when `CONSUL_HTTP_PORT`
/// is not set: Consul's default HTTP port, or its usual HTTPS port with
/// `CONSUL_USE_TLS`. (consul-k8s has no default: its Helm chart always sets
/// the port.)
pub const DEFAULT_HTTP_PORT: u16 = 8500;

/// See [`DEFAULT_HTTP_PORT`].
pub const DEFAULT_HTTPS_PORT: u16 = 8501;

/// An ACL token. The secret never appears in `Debug` output and the type has
/// no `Display`; the only way to read it is [`Token::expose`], which the
/// client calls when it builds the `X-Consul-Token` header.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    /// Wraps a secret. Surrounding whitespace (a trailing newline in a file)
    /// is removed, as Consul's own client does.
    pub fn new(secret: impl Into<String>) -> Self {
        Self(secret.into().trim().to_owned())
    }

    /// The secret itself. Call only to put it on the wire.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

/// Where the token came from. Its `Display` is the hint used in errors and
/// logs instead of the secret ("token from CONSUL_HTTP_TOKEN_FILE ...").
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TokenSource {
    /// Passed explicitly by the program (for example a command-line flag).
    Explicit,
    /// Read from a file named explicitly by the program.
    ExplicitFile(PathBuf),
    /// The `CONSUL_HTTP_TOKEN` environment variable.
    EnvVar,
    /// The file named by `CONSUL_HTTP_TOKEN_FILE`.
    EnvFile(PathBuf),
    /// The `CONSUL_ACL_TOKEN` environment variable (consul-k8s 1.x).
    EnvAclToken,
    /// The file named by `CONSUL_ACL_TOKEN_FILE` (consul-k8s 1.x).
    EnvAclTokenFile(PathBuf),
}

impl fmt::Display for TokenSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Explicit => f.write_str("explicitly configured token"),
            Self::ExplicitFile(p) => write!(f, "token from file {}", p.display()),
            Self::EnvVar => write!(f, "token from {}", env::HTTP_TOKEN),
            Self::EnvFile(p) => {
                write!(f, "token from {} ({})", env::HTTP_TOKEN_FILE, p.display())
            }
            Self::EnvAclToken => write!(f, "token from {}", env::ACL_TOKEN),
            Self::EnvAclTokenFile(p) => {
                write!(f, "token from {} ({})", env::ACL_TOKEN_FILE, p.display())
            }
        }
    }
}

/// A token and where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenConfig {
    /// The secret.
    pub secret: Token,
    /// Its origin, shown instead of the secret.
    pub source: TokenSource,
}

/// TLS settings. All paths are read when the client is built.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsConfig {
    /// PEM bundle of CA certificates to trust in addition to the built-in roots.
    pub ca_file: Option<PathBuf>,
    /// The same as PEM text (consul-k8s's `CONSUL_CACERT_PEM`); used only
    /// without `ca_file`, as in consul-k8s.
    pub ca_pem: Option<String>,
    /// PEM client certificate (chain) for mutual TLS; needs `client_key`.
    pub client_cert: Option<PathBuf>,
    /// PEM private key matching `client_cert`.
    pub client_key: Option<PathBuf>,
    /// Name to use for SNI and certificate verification instead of the host
    /// in the address (useful when connecting by IP).
    pub server_name: Option<String>,
    /// Accept any server certificate. Only for development: it removes all
    /// protection against a man in the middle, including of the ACL token.
    pub insecure_skip_verify: bool,
}

/// Values given explicitly by the program (flags). Each one, when set, wins
/// over the corresponding environment variable.
#[derive(Clone, Default)]
pub struct Overrides {
    /// Address (`host:port`, `http://...` or `https://...`).
    pub address: Option<String>,
    /// Token secret.
    pub token: Option<String>,
    /// File holding the token.
    pub token_file: Option<PathBuf>,
    /// CA bundle.
    pub ca_file: Option<PathBuf>,
    /// CA bundle as PEM text.
    pub ca_pem: Option<String>,
    /// Client certificate.
    pub client_cert: Option<PathBuf>,
    /// Client key.
    pub client_key: Option<PathBuf>,
    /// TLS server name.
    pub tls_server_name: Option<String>,
    /// Skip server certificate verification.
    pub insecure_skip_verify: Option<bool>,
    /// Datacenter (`dc` query parameter).
    pub datacenter: Option<String>,
    /// Namespace (`ns` query parameter).
    pub namespace: Option<String>,
    /// Admin partition (`partition` query parameter).
    pub partition: Option<String>,
    /// Servers as `CONSUL_ADDRESSES` gives them (a DNS name or a
    /// comma-separated list); wins over `CONSUL_ADDRESSES`, loses to
    /// `address`.
    pub addresses: Option<String>,
    /// Port of the servers in `addresses` (`CONSUL_HTTP_PORT`).
    pub http_port: Option<u16>,
    /// https to the servers in `addresses` (`CONSUL_USE_TLS`).
    pub use_tls: Option<bool>,
    /// Timeout of one request (`CONSUL_API_TIMEOUT`); zero means the
    /// default.
    pub api_timeout: Option<Duration>,
    /// Auth method to log in with (`CONSUL_LOGIN_AUTH_METHOD`).
    pub login_auth_method: Option<String>,
    /// Bearer token file of the login (`CONSUL_LOGIN_BEARER_TOKEN_FILE`).
    pub login_bearer_token_file: Option<PathBuf>,
    /// Datacenter of the login (`CONSUL_LOGIN_DATACENTER`).
    pub login_datacenter: Option<String>,
    /// Partition of the login (`CONSUL_LOGIN_PARTITION`).
    pub login_partition: Option<String>,
    /// Namespace of the login (`CONSUL_LOGIN_NAMESPACE`).
    pub login_namespace: Option<String>,
    /// Meta of the login token, in `CONSUL_LOGIN_META`'s format.
    pub login_meta: Option<String>,
}

impl fmt::Debug for Overrides {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Overrides")
            .field("address", &self.address)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("token_file", &self.token_file)
            .field("ca_file", &self.ca_file)
            .field("ca_pem", &self.ca_pem.as_ref().map(|_| "<pem>"))
            .field("client_cert", &self.client_cert)
            .field("client_key", &self.client_key)
            .field("tls_server_name", &self.tls_server_name)
            .field("insecure_skip_verify", &self.insecure_skip_verify)
            .field("datacenter", &self.datacenter)
            .field("namespace", &self.namespace)
            .field("partition", &self.partition)
            .field("addresses", &self.addresses)
            .field("http_port", &self.http_port)
            .field("use_tls", &self.use_tls)
            .field("api_timeout", &self.api_timeout)
            .field("login_auth_method", &self.login_auth_method)
            .field("login_bearer_token_file", &self.login_bearer_token_file)
            .field("login_datacenter", &self.login_datacenter)
            .field("login_partition", &self.login_partition)
            .field("login_namespace", &self.login_namespace)
            .field("login_meta", &self.login_meta)
            .finish()
    }
}

/// Everything the client needs to talk to Consul.
#[derive(Clone, Debug)]
pub struct ConsulConfig {
    /// Base URL of the HTTP API, without the `/v1` prefix. With
    /// [`ConsulConfig::addresses`] set, the first of them.
    pub address: Url,
    /// The servers to fail over between, in order (from `CONSUL_ADDRESSES`).
    /// Empty: [`ConsulConfig::address`] is the only server. A host name here
    /// is resolved when the client is built and every address it resolves to
    /// becomes one server; requests go to one server until it fails to
    /// connect or times out, then to the next.
    pub addresses: Vec<Url>,
    /// ACL token, if any. Not used when [`ConsulConfig::login`] is set.
    pub token: Option<TokenConfig>,
    /// Log in to an auth method for the token (consul-k8s's
    /// `CONSUL_LOGIN_*`); wins over [`ConsulConfig::token`].
    pub login: Option<LoginConfig>,
    /// TLS settings (ignored for http addresses except `insecure_skip_verify`).
    pub tls: TlsConfig,
    /// `dc` query parameter sent with every request, if set.
    pub datacenter: Option<String>,
    /// `ns` query parameter sent with every request, if set.
    pub namespace: Option<String>,
    /// `partition` query parameter sent with every request, if set.
    pub partition: Option<String>,
    /// Retries for connection errors and 5xx answers.
    pub retry: RetryPolicy,
    /// Timeout of one non-blocking request, and the margin added to the wait
    /// of a blocking one.
    pub request_timeout: Duration,
    /// Operations per `/v1/txn` request in [`crate::Client::apply_ops`];
    /// between 1 and [`MAX_TXN_MAX_OPS`].
    pub txn_max_ops: usize,
}

/// Why the configuration was rejected. None of these is retryable: the
/// operator must fix the named setting.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The address is not `host:port` or an http(s) URL. Fix the named
    /// setting.
    #[error("invalid Consul address {value:?} from {origin}: {reason}")]
    BadAddress {
        /// What was given.
        value: String,
        /// Which setting it came from.
        origin: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// A boolean setting is not one of Go's spellings
    /// (`1 t T TRUE true True 0 f F FALSE false False`).
    #[error("invalid boolean {value:?} for {name}: expected true or false")]
    BadBool {
        /// Which variable.
        name: &'static str,
        /// What was given.
        value: String,
    },
    /// The token file could not be read. Check the path and permissions.
    #[error("cannot read {source_hint}: {reason}")]
    TokenFileUnreadable {
        /// Where the path came from and the path itself.
        source_hint: String,
        /// The I/O error.
        reason: String,
    },
    /// The token file exists but holds only whitespace. An empty token would
    /// silently fall back to anonymous access, so it is refused.
    #[error("{source_hint} is empty")]
    TokenFileEmpty {
        /// Where the path came from and the path itself.
        source_hint: String,
    },
    /// The token contains characters that cannot go in an HTTP header.
    #[error("{source_hint} contains characters not allowed in an HTTP header")]
    TokenNotHeaderSafe {
        /// Where the token came from (never the token).
        source_hint: String,
    },
    /// A TLS file could not be read or parsed.
    #[error("TLS {what} {path}: {reason}")]
    Tls {
        /// Which file ("CA file", "client certificate", ...).
        what: &'static str,
        /// Its path.
        path: String,
        /// What went wrong.
        reason: String,
    },
    /// A client certificate was given without a key, or the reverse.
    #[error("client certificate and client key must be set together")]
    IncompleteClientIdentity,
    /// `txn_max_ops` outside `1..=128`.
    #[error("txn_max_ops must be between 1 and {MAX_TXN_MAX_OPS}, got {0}")]
    BadTxnMaxOps(usize),
    /// The TLS server name could not be applied (for example the host in the
    /// address does not resolve).
    #[error("cannot use TLS server name {server_name:?}: {reason}")]
    ServerName {
        /// The configured server name.
        server_name: String,
        /// Why it could not be used.
        reason: String,
    },
    /// The HTTP client could not be built from these settings.
    #[error("cannot build HTTP client: {0}")]
    HttpClient(String),
    /// A port setting is not a number between 1 and 65535.
    #[error("invalid port {value:?} for {name}: expected a number between 1 and 65535")]
    BadPort {
        /// Which variable.
        name: &'static str,
        /// What was given.
        value: String,
    },
    /// A duration setting is not a positive Go duration (`5s`, `1m30s`).
    #[error("invalid duration {value:?} for {name}: {reason}")]
    BadDuration {
        /// Which variable.
        name: &'static str,
        /// What was given.
        value: String,
        /// What is wrong with it.
        reason: DurationError,
    },
    /// None of the servers' host names resolved to an address.
    #[error("cannot resolve any Consul server: {reason}")]
    Resolve {
        /// Each name and why it did not resolve.
        reason: String,
    },
    /// A `CONSUL_LOGIN_META` entry is not `key=value`.
    #[error("invalid pair {pair:?} in {}: {reason}", env::LOGIN_META)]
    BadLoginMeta {
        /// The entry as given.
        pair: String,
        /// What is wrong with it.
        reason: String,
    },
}

impl ConsulConfig {
    /// Whether the ACL token would cross the network unencrypted: a token
    /// is set and the address is plain `http://` to a host that is not the
    /// loopback (a node-local agent on 127.0.0.1 is the usual, safe use of
    /// http). The client warns once when this is so.
    pub fn token_in_clear(&self) -> bool {
        if (self.token.is_none() && self.login.is_none()) || self.address.scheme() != "http" {
            return false;
        }
        let Some(host) = self.address.host_str() else {
            return false;
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        match host.parse::<std::net::IpAddr>() {
            Ok(ip) => !ip.is_loopback(),
            Err(_) => !host.eq_ignore_ascii_case("localhost"),
        }
    }

    /// A configuration for `address` with no token and default settings.
    pub fn new(address: &str) -> Result<Self, ConfigError> {
        Ok(Self {
            address: parse_address(address, false, "explicit address")?,
            addresses: Vec::new(),
            token: None,
            login: None,
            tls: TlsConfig::default(),
            datacenter: None,
            namespace: None,
            partition: None,
            retry: RetryPolicy::default(),
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            txn_max_ops: DEFAULT_TXN_MAX_OPS,
        })
    }

    /// Builds the configuration from an environment map (normally the
    /// process environment) and explicit values, which win over it.
    ///
    /// Both Consul's CLI variables (`CONSUL_HTTP_*`) and consul-k8s 1.x's
    /// (`CONSUL_ADDRESSES`, `CONSUL_ACL_TOKEN`, ...) are read; where both
    /// name the same setting, consul-k8s 1.x's wins, since that is the
    /// program mirra replaces:
    ///
    /// - servers: the explicit address, `CONSUL_ADDRESSES` (with
    ///   `CONSUL_HTTP_PORT` and `CONSUL_USE_TLS`), `CONSUL_HTTP_ADDR` (with
    ///   `CONSUL_HTTP_SSL`), `127.0.0.1:8500`;
    /// - token: a login to an auth method when one is named (explicitly or
    ///   by `CONSUL_LOGIN_AUTH_METHOD`, with the other `CONSUL_LOGIN_*`
    ///   variables; see [`LoginConfig`]), as consul-k8s does; else
    ///   an explicit token file, an explicit token,
    ///   `CONSUL_ACL_TOKEN`, `CONSUL_ACL_TOKEN_FILE`,
    ///   `CONSUL_HTTP_TOKEN_FILE`, `CONSUL_HTTP_TOKEN`;
    /// - CA file: explicit, `CONSUL_CACERT_FILE`, `CONSUL_CACERT`;
    /// - datacenter: explicit, `CONSUL_DATACENTER`;
    /// - request timeout: `CONSUL_API_TIMEOUT`, else
    ///   [`DEFAULT_REQUEST_TIMEOUT`].
    ///
    /// An empty variable counts as unset. A malformed one is an error naming
    /// it (consul-k8s silently ignores a malformed port, boolean or
    /// duration; mirra refuses to start on one instead).
    pub fn from_sources(
        env_map: &BTreeMap<String, String>,
        overrides: &Overrides,
    ) -> Result<Self, ConfigError> {
        let get = |name: &str| {
            env_map
                .get(name)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let non_empty = |v: &Option<String>| v.clone().filter(|s| !s.trim().is_empty());

        let ssl = match get(env::HTTP_SSL) {
            Some(v) => parse_bool(env::HTTP_SSL, &v)?,
            None => false,
        };
        let use_tls = match get(env::USE_TLS) {
            Some(v) => parse_bool(env::USE_TLS, &v)?,
            None => false,
        };
        let use_tls = overrides.use_tls.unwrap_or(use_tls);
        // Validated even when CONSUL_ADDRESSES is unset, so that a typo is
        // reported rather than silently unused.
        let http_port = match get(env::HTTP_PORT) {
            Some(v) => Some(parse_port(env::HTTP_PORT, &v)?),
            None => None,
        };
        if overrides.http_port == Some(0) {
            return Err(ConfigError::BadPort {
                name: "explicit HTTP port",
                value: "0".into(),
            });
        }
        let http_port = overrides.http_port.or(http_port);
        let listed = non_empty(&overrides.addresses).or_else(|| get(env::ADDRESSES));
        let mut addresses = Vec::new();
        let address = match (&overrides.address, listed, get(env::HTTP_ADDR)) {
            (Some(a), _, _) => parse_address(a, ssl, "explicit address")?,
            (None, Some(list), _) => {
                let port = http_port.unwrap_or(if use_tls {
                    DEFAULT_HTTPS_PORT
                } else {
                    DEFAULT_HTTP_PORT
                });
                addresses = parse_addresses(&list, use_tls, port)?;
                match addresses.first() {
                    Some(first) => first.clone(),
                    None => {
                        return Err(ConfigError::BadAddress {
                            value: list,
                            origin: env::ADDRESSES,
                            reason: "no address".into(),
                        });
                    }
                }
            }
            (None, None, Some(a)) => parse_address(&a, ssl, env::HTTP_ADDR)?,
            (None, None, None) => parse_address(DEFAULT_ADDRESS, ssl, "default address")?,
        };

        let login = login_from_sources(&get, overrides)?;
        // consul-k8s uses the login's token whenever an auth method is
        // named, and does not read the static token then; a broken token
        // variable next to a login is therefore not an error either.
        let token = if login.is_some() {
            None
        } else if let Some(path) = &overrides.token_file {
            Some(read_token_file(
                TokenSource::ExplicitFile(path.clone()),
                path,
            )?)
        } else if let Some(secret) = overrides.token.as_deref().filter(|t| !t.trim().is_empty()) {
            Some(TokenConfig {
                secret: Token::new(secret),
                source: TokenSource::Explicit,
            })
        } else if let Some(secret) = get(env::ACL_TOKEN) {
            Some(TokenConfig {
                secret: Token::new(secret),
                source: TokenSource::EnvAclToken,
            })
        } else if let Some(path) = get(env::ACL_TOKEN_FILE) {
            let path = PathBuf::from(path);
            Some(read_token_file(
                TokenSource::EnvAclTokenFile(path.clone()),
                &path,
            )?)
        } else if let Some(path) = get(env::HTTP_TOKEN_FILE) {
            let path = PathBuf::from(path);
            Some(read_token_file(TokenSource::EnvFile(path.clone()), &path)?)
        } else {
            get(env::HTTP_TOKEN).map(|secret| TokenConfig {
                secret: Token::new(secret),
                source: TokenSource::EnvVar,
            })
        };
        if let Some(t) = &token {
            check_header_safe(t)?;
        }

        let verify = match get(env::HTTP_SSL_VERIFY) {
            Some(v) => parse_bool(env::HTTP_SSL_VERIFY, &v)?,
            None => true,
        };
        let tls = TlsConfig {
            ca_file: overrides
                .ca_file
                .clone()
                .or_else(|| get(env::CACERT_FILE).map(PathBuf::from))
                .or_else(|| get(env::CACERT).map(PathBuf::from)),
            ca_pem: non_empty(&overrides.ca_pem).or_else(|| get(env::CACERT_PEM)),
            client_cert: overrides
                .client_cert
                .clone()
                .or_else(|| get(env::CLIENT_CERT).map(PathBuf::from)),
            client_key: overrides
                .client_key
                .clone()
                .or_else(|| get(env::CLIENT_KEY).map(PathBuf::from)),
            server_name: overrides
                .tls_server_name
                .clone()
                .or_else(|| get(env::TLS_SERVER_NAME)),
            insecure_skip_verify: overrides.insecure_skip_verify.unwrap_or(!verify),
        };
        if tls.client_cert.is_some() != tls.client_key.is_some() {
            return Err(ConfigError::IncompleteClientIdentity);
        }

        let request_timeout = match get(env::API_TIMEOUT) {
            _ if overrides.api_timeout.is_some_and(|d| !d.is_zero()) => {
                overrides.api_timeout.unwrap_or(DEFAULT_REQUEST_TIMEOUT)
            }
            Some(v) => {
                let d = parse_go_duration(&v).map_err(|reason| ConfigError::BadDuration {
                    name: env::API_TIMEOUT,
                    value: v.clone(),
                    reason,
                })?;
                // consul-k8s treats a zero timeout as "use the default".
                if d.is_zero() {
                    DEFAULT_REQUEST_TIMEOUT
                } else {
                    d
                }
            }
            None => DEFAULT_REQUEST_TIMEOUT,
        };
        Ok(Self {
            address,
            addresses,
            token,
            login,
            tls,
            datacenter: non_empty(&overrides.datacenter).or_else(|| get(env::DATACENTER)),
            namespace: non_empty(&overrides.namespace).or_else(|| get(env::NAMESPACE)),
            partition: non_empty(&overrides.partition).or_else(|| get(env::PARTITION)),
            retry: RetryPolicy::default(),
            request_timeout,
            txn_max_ops: DEFAULT_TXN_MAX_OPS,
        })
    }

    /// [`ConsulConfig::from_sources`] over the process environment.
    pub fn from_process_env(overrides: &Overrides) -> Result<Self, ConfigError> {
        let map: BTreeMap<String, String> = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect();
        Self::from_sources(&map, overrides)
    }

    /// The hint naming the token in errors: its source, or "anonymous".
    pub fn token_hint(&self) -> String {
        match (&self.login, &self.token) {
            (Some(l), _) => format!("token from login with auth method {:?}", l.auth_method),
            (None, Some(t)) => t.source.to_string(),
            (None, None) => "no token (anonymous)".to_owned(),
        }
    }
}

/// The login settings: `None` unless an auth method is named (by the
/// program or `CONSUL_LOGIN_AUTH_METHOD`). The other login variables are
/// read only then, as consul-k8s does, so that they cannot break a setup
/// that does not log in.
fn login_from_sources(
    get: &dyn Fn(&str) -> Option<String>,
    overrides: &Overrides,
) -> Result<Option<LoginConfig>, ConfigError> {
    let pick = |explicit: &Option<String>, name: &str| {
        explicit
            .as_deref()
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
            .or_else(|| get(name))
    };
    let Some(auth_method) = pick(&overrides.login_auth_method, env::LOGIN_AUTH_METHOD) else {
        return Ok(None);
    };
    let meta = match pick(&overrides.login_meta, env::LOGIN_META) {
        Some(v) => parse_login_meta(&v)?,
        None => BTreeMap::new(),
    };
    let login = LoginConfig {
        auth_method,
        bearer_token_file: overrides
            .login_bearer_token_file
            .clone()
            .or_else(|| get(env::LOGIN_BEARER_TOKEN_FILE).map(PathBuf::from))
            .unwrap_or_else(|| PathBuf::from(DEFAULT_BEARER_TOKEN_FILE)),
        datacenter: pick(&overrides.login_datacenter, env::LOGIN_DATACENTER),
        namespace: pick(&overrides.login_namespace, env::LOGIN_NAMESPACE),
        partition: pick(&overrides.login_partition, env::LOGIN_PARTITION),
        meta,
    };
    // Read once now so that a wrong path or an empty file stops the
    // program at start instead of failing every login later.
    login.read_bearer_token()?;
    Ok(Some(login))
}

/// Parses a boolean the way Go's `strconv.ParseBool` does, since Consul's
/// CLI reads its variables with it.
pub fn parse_bool(name: &'static str, value: &str) -> Result<bool, ConfigError> {
    match value.trim() {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
        other => Err(ConfigError::BadBool {
            name,
            value: other.to_owned(),
        }),
    }
}

/// Parses a TCP port (1 to 65535).
pub fn parse_port(name: &'static str, value: &str) -> Result<u16, ConfigError> {
    match value.trim().parse::<u16>() {
        Ok(p) if p != 0 => Ok(p),
        _ => Err(ConfigError::BadPort {
            name,
            value: value.to_owned(),
        }),
    }
}

/// Parses `CONSUL_ADDRESSES`: comma-separated host names or IP addresses
/// (IPv6 with or without brackets), no scheme and no port, into one URL
/// each with `port` and the scheme `use_tls` selects. consul-k8s also
/// accepts `exec=<command>` (a program printing the addresses); mirra runs
/// no programs from its environment and refuses it.
pub fn parse_addresses(value: &str, use_tls: bool, port: u16) -> Result<Vec<Url>, ConfigError> {
    let bad = |reason: String| ConfigError::BadAddress {
        value: value.to_owned(),
        origin: env::ADDRESSES,
        reason,
    };
    if value.trim_start().starts_with("exec=") {
        return Err(bad(
            "exec= discovery is not supported; give a DNS name or IP addresses".into(),
        ));
    }
    let scheme = if use_tls { "https" } else { "http" };
    let mut out = Vec::new();
    for entry in value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let bare = entry
            .strip_prefix('[')
            .and_then(|e| e.strip_suffix(']'))
            .unwrap_or(entry);
        let host = if let Ok(ip) = bare.parse::<std::net::IpAddr>() {
            match ip {
                std::net::IpAddr::V4(v4) => v4.to_string(),
                std::net::IpAddr::V6(v6) => format!("[{v6}]"),
            }
        } else if is_dns_name(entry) {
            entry.to_ascii_lowercase()
        } else {
            return Err(bad(format!(
                "{entry:?} is not a host name or IP address (no scheme or port here: \
                 the port comes from {}, https from {})",
                env::HTTP_PORT,
                env::USE_TLS
            )));
        };
        let url = Url::parse(&format!("{scheme}://{host}:{port}"))
            .map_err(|e| bad(format!("{entry:?}: {e}")))?;
        if !out.contains(&url) {
            out.push(url);
        }
    }
    Ok(out)
}

/// A DNS name as a host: dot-separated labels of letters, digits, `-` and
/// `_` (Kubernetes Service names are such names), none empty, none
/// starting or ending with `-`.
fn is_dns_name(s: &str) -> bool {
    let s = s.strip_suffix('.').unwrap_or(s);
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
        // All digits and dots is a malformed IPv4 address, not a name.
        && !s.bytes().all(|b| b.is_ascii_digit() || b == b'.')
}

/// Why a Go duration was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Nothing was given.
    #[error("empty duration")]
    Empty,
    /// Not Go's syntax: decimal numbers, each with a unit.
    #[error(
        "expected decimal numbers each followed by a unit (ns, us, ms, s, m, h), e.g. 5s or 1m30s"
    )]
    Syntax,
    /// A number without a unit (Go accepts only `0` bare).
    #[error("missing unit (ns, us, ms, s, m, h)")]
    MissingUnit,
    /// A unit Go does not know.
    #[error("unknown unit {0:?}")]
    UnknownUnit(String),
    /// A negative duration: no setting read here can use one.
    #[error("must not be negative")]
    Negative,
    /// Larger than Go's largest duration (about 292 years).
    #[error("too large")]
    Overflow,
}

/// Parses a duration the way Go's `time.ParseDuration` does (consul-k8s
/// reads `CONSUL_API_TIMEOUT` with it): an optional sign, then one or more
/// decimal numbers, each possibly fractional (`1.5s`, `.5s`), each followed
/// by a unit `ns`, `us` (or `µs`, `μs`), `ms`, `s`, `m` or `h`; or `0`
/// alone. Unlike Go, negative durations are refused, and the value must fit
/// Go's range (`i64` nanoseconds).
pub fn parse_go_duration(value: &str) -> Result<Duration, DurationError> {
    let mut rest = value;
    if rest.is_empty() {
        return Err(DurationError::Empty);
    }
    let negative = match rest.as_bytes()[0] {
        b'-' => {
            rest = &rest[1..];
            true
        }
        b'+' => {
            rest = &rest[1..];
            false
        }
        _ => false,
    };
    if rest == "0" {
        return Ok(Duration::ZERO);
    }
    if rest.is_empty() {
        return Err(DurationError::Syntax);
    }
    let limit = u128::from(i64::MAX.unsigned_abs());
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (int_digits, tail) = rest.split_at(int_len);
        let (frac_digits, tail) = match tail.strip_prefix('.') {
            Some(t) => {
                let n = t.bytes().take_while(u8::is_ascii_digit).count();
                t.split_at(n)
            }
            None => ("", tail),
        };
        if int_digits.is_empty() && frac_digits.is_empty() {
            return Err(DurationError::Syntax);
        }
        let unit_len = tail
            .char_indices()
            .find(|(_, c)| *c == '.' || c.is_ascii_digit())
            .map_or(tail.len(), |(i, _)| i);
        let (unit, tail) = tail.split_at(unit_len);
        let unit_ns: u128 = match unit {
            "" => return Err(DurationError::MissingUnit),
            "ns" => 1,
            "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60 * 1_000_000_000,
            "h" => 3_600 * 1_000_000_000,
            other => return Err(DurationError::UnknownUnit(other.to_owned())),
        };
        // Leading zeros cannot overflow; anything past 20 significant
        // digits is beyond i64 nanoseconds in any unit.
        let int_sig = int_digits.trim_start_matches('0');
        if int_sig.len() > 20 {
            return Err(DurationError::Overflow);
        }
        let int: u128 = if int_sig.is_empty() {
            0
        } else {
            int_sig.parse().map_err(|_| DurationError::Overflow)?
        };
        // Digits past the 18th contribute less than a nanosecond even in
        // hours, so they are dropped (Go drops them too).
        let frac_used = &frac_digits[..frac_digits.len().min(18)];
        let frac_part = if frac_used.is_empty() {
            0
        } else {
            let f: u128 = frac_used.parse().map_err(|_| DurationError::Syntax)?;
            let scale = 10u128.pow(u32::try_from(frac_used.len()).unwrap_or(18));
            f * unit_ns / scale
        };
        total = int
            .checked_mul(unit_ns)
            .and_then(|v| v.checked_add(frac_part))
            .and_then(|v| v.checked_add(total))
            .filter(|v| *v <= limit)
            .ok_or(DurationError::Overflow)?;
        rest = tail;
    }
    if negative && total != 0 {
        return Err(DurationError::Negative);
    }
    let nanos = u64::try_from(total).map_err(|_| DurationError::Overflow)?;
    Ok(Duration::from_nanos(nanos))
}

/// Parses an address: `host:port` (http, or https when `ssl`), or an
/// `http://` / `https://` URL, possibly with a path prefix (for a proxy).
pub fn parse_address(value: &str, ssl: bool, origin: &'static str) -> Result<Url, ConfigError> {
    let bad = |reason: &str| ConfigError::BadAddress {
        value: value.to_owned(),
        origin,
        reason: reason.to_owned(),
    };
    let trimmed = value.trim();
    if trimmed.is_empty() {
        return Err(bad("empty"));
    }
    let with_scheme = if trimmed.contains("://") {
        trimmed.to_owned()
    } else if ssl {
        format!("https://{trimmed}")
    } else {
        format!("http://{trimmed}")
    };
    let mut url = Url::parse(&with_scheme).map_err(|e| bad(&e.to_string()))?;
    match url.scheme() {
        "http" | "https" => {}
        "unix" => return Err(bad("unix sockets are not supported; use http(s)://")),
        other => return Err(bad(&format!("unsupported scheme {other:?}"))),
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(bad("no host"));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(bad("must not have a query or fragment"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad("must not carry credentials; use the ACL token"));
    }
    // Endpoint paths are appended segment by segment; a trailing slash would
    // leave an empty segment in front of "v1".
    let path = url.path().trim_end_matches('/').to_owned();
    url.set_path(&path);
    Ok(url)
}

fn read_token_file(source: TokenSource, path: &Path) -> Result<TokenConfig, ConfigError> {
    let hint = source.to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::TokenFileUnreadable {
        source_hint: hint.clone(),
        reason: e.to_string(),
    })?;
    let secret = Token::new(text);
    if secret.expose().is_empty() {
        return Err(ConfigError::TokenFileEmpty { source_hint: hint });
    }
    Ok(TokenConfig { secret, source })
}

fn check_header_safe(token: &TokenConfig) -> Result<(), ConfigError> {
    let ok = token
        .secret
        .expose()
        .bytes()
        .all(|b| b == b'\t' || (0x20..0x7f).contains(&b));
    if ok {
        Ok(())
    } else {
        Err(ConfigError::TokenNotHeaderSafe {
            source_hint: token.source.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::io::Write;

    #[test]
    fn a_token_over_plain_http_to_another_host_is_in_clear() {
        let with_token = |addr: &str| {
            let mut c = ConsulConfig::new(addr).unwrap();
            c.token = Some(TokenConfig {
                secret: Token::new("s"),
                source: TokenSource::EnvVar,
            });
            c
        };
        assert!(with_token("http://10.0.0.5:8500").token_in_clear());
        assert!(with_token("consul.example:8500").token_in_clear());
        assert!(!with_token("https://consul.example:8501").token_in_clear());
        assert!(!with_token("http://127.0.0.1:8500").token_in_clear());
        assert!(!with_token("http://[::1]:8500").token_in_clear());
        assert!(!with_token("http://localhost:8500").token_in_clear());
        assert!(
            !ConsulConfig::new("http://10.0.0.5:8500")
                .unwrap()
                .token_in_clear()
        );
    }

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    const SECRET: &str = "3f9c1e2a-5b7d-4c8e-9a0b-1c2d3e4f5a6b";

    #[test]
    fn defaults_to_local_http_agent() {
        let c = ConsulConfig::from_sources(&env(&[]), &Overrides::default()).unwrap();
        assert_eq!(c.address.as_str(), "http://127.0.0.1:8500/");
        assert!(c.token.is_none());
        assert!(!c.tls.insecure_skip_verify);
        assert_eq!(c.txn_max_ops, 64);
    }

    #[test]
    fn host_port_without_scheme_is_http_unless_ssl() {
        let c = ConsulConfig::from_sources(
            &env(&[("CONSUL_HTTP_ADDR", "consul.example:8501")]),
            &Overrides::default(),
        )
        .unwrap();
        assert_eq!(c.address.scheme(), "http");
        assert_eq!(c.address.port(), Some(8501));

        let c = ConsulConfig::from_sources(
            &env(&[
                ("CONSUL_HTTP_ADDR", "consul.example:8501"),
                ("CONSUL_HTTP_SSL", "true"),
            ]),
            &Overrides::default(),
        )
        .unwrap();
        assert_eq!(c.address.scheme(), "https");
    }

    #[test]
    fn https_url_and_path_prefix_are_kept() {
        let u = parse_address("https://proxy.example/consul/", false, "t").unwrap();
        assert_eq!(u.scheme(), "https");
        assert_eq!(u.path(), "/consul");
    }

    #[test]
    fn explicit_address_wins_over_env() {
        let o = Overrides {
            address: Some("http://10.0.0.1:8500".into()),
            ..Overrides::default()
        };
        let c = ConsulConfig::from_sources(&env(&[("CONSUL_HTTP_ADDR", "other:1")]), &o).unwrap();
        assert_eq!(c.address.host_str(), Some("10.0.0.1"));
    }

    #[test]
    fn malformed_addresses_are_rejected_with_origin() {
        for bad in [
            "",
            "ftp://x:1",
            "unix:///tmp/consul.sock",
            "http://",
            "http://h:99999",
            "http://u:p@h:1",
            "http://h:1/?a=b",
        ] {
            let err = ConsulConfig::from_sources(
                &env(&[("CONSUL_HTTP_ADDR", bad)]),
                &Overrides::default(),
            );
            // An empty variable counts as unset, like in Consul's CLI.
            if bad.is_empty() {
                assert!(err.is_ok());
                continue;
            }
            let err = err.unwrap_err();
            assert!(
                matches!(
                    err,
                    ConfigError::BadAddress {
                        origin: "CONSUL_HTTP_ADDR",
                        ..
                    }
                ),
                "{bad}: {err}"
            );
            assert!(err.to_string().contains("CONSUL_HTTP_ADDR"));
        }
        assert!(parse_address("   ", false, "t").is_err());
    }

    #[test]
    fn bad_bool_is_an_error_naming_the_variable() {
        let err = ConsulConfig::from_sources(
            &env(&[("CONSUL_HTTP_SSL_VERIFY", "nope")]),
            &Overrides::default(),
        )
        .unwrap_err();
        assert!(matches!(
            err,
            ConfigError::BadBool {
                name: "CONSUL_HTTP_SSL_VERIFY",
                ..
            }
        ));
        assert!(err.to_string().contains("CONSUL_HTTP_SSL_VERIFY"));
    }

    #[test]
    fn ssl_verify_false_means_insecure() {
        let c = ConsulConfig::from_sources(
            &env(&[("CONSUL_HTTP_SSL_VERIFY", "false")]),
            &Overrides::default(),
        )
        .unwrap();
        assert!(c.tls.insecure_skip_verify);
        let o = Overrides {
            insecure_skip_verify: Some(false),
            ..Overrides::default()
        };
        let c = ConsulConfig::from_sources(&env(&[("CONSUL_HTTP_SSL_VERIFY", "0")]), &o).unwrap();
        assert!(!c.tls.insecure_skip_verify);
    }

    #[test]
    fn tls_settings_come_from_env() {
        let c = ConsulConfig::from_sources(
            &env(&[
                ("CONSUL_CACERT", "/etc/consul/ca.pem"),
                ("CONSUL_CLIENT_CERT", "/etc/consul/cert.pem"),
                ("CONSUL_CLIENT_KEY", "/etc/consul/key.pem"),
                ("CONSUL_TLS_SERVER_NAME", "server.dc1.consul"),
            ]),
            &Overrides::default(),
        )
        .unwrap();
        assert_eq!(
            c.tls.ca_file.as_deref(),
            Some(Path::new("/etc/consul/ca.pem"))
        );
        assert_eq!(
            c.tls.client_cert.as_deref(),
            Some(Path::new("/etc/consul/cert.pem"))
        );
        assert_eq!(
            c.tls.client_key.as_deref(),
            Some(Path::new("/etc/consul/key.pem"))
        );
        assert_eq!(c.tls.server_name.as_deref(), Some("server.dc1.consul"));
    }

    #[test]
    fn client_cert_without_key_is_rejected() {
        let err = ConsulConfig::from_sources(
            &env(&[("CONSUL_CLIENT_CERT", "/c.pem")]),
            &Overrides::default(),
        )
        .unwrap_err();
        assert!(matches!(err, ConfigError::IncompleteClientIdentity));
    }

    #[test]
    fn namespace_and_partition_from_env_datacenter_explicit() {
        let o = Overrides {
            datacenter: Some("dc2".into()),
            ..Overrides::default()
        };
        let c = ConsulConfig::from_sources(
            &env(&[("CONSUL_NAMESPACE", "team-a"), ("CONSUL_PARTITION", "p1")]),
            &o,
        )
        .unwrap();
        assert_eq!(c.datacenter.as_deref(), Some("dc2"));
        assert_eq!(c.namespace.as_deref(), Some("team-a"));
        assert_eq!(c.partition.as_deref(), Some("p1"));
    }

    #[test]
    fn token_from_env_var() {
        let c = ConsulConfig::from_sources(
            &env(&[("CONSUL_HTTP_TOKEN", SECRET)]),
            &Overrides::default(),
        )
        .unwrap();
        let t = c.token.as_ref().unwrap();
        assert_eq!(t.secret.expose(), SECRET);
        assert_eq!(t.source, TokenSource::EnvVar);
        assert_eq!(c.token_hint(), "token from CONSUL_HTTP_TOKEN");
    }

    #[test]
    fn token_file_wins_over_token_var_and_is_trimmed() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        writeln!(f, "  {SECRET}  ").unwrap();
        let path = f.path().to_str().unwrap().to_owned();
        let c = ConsulConfig::from_sources(
            &env(&[
                ("CONSUL_HTTP_TOKEN", "other"),
                ("CONSUL_HTTP_TOKEN_FILE", &path),
            ]),
            &Overrides::default(),
        )
        .unwrap();
        let t = c.token.as_ref().unwrap();
        assert_eq!(t.secret.expose(), SECRET);
        assert!(matches!(t.source, TokenSource::EnvFile(_)));
        assert!(c.token_hint().contains("CONSUL_HTTP_TOKEN_FILE"));
    }

    #[test]
    fn explicit_token_wins_over_env() {
        let o = Overrides {
            token: Some("explicit-secret".into()),
            ..Overrides::default()
        };
        let c = ConsulConfig::from_sources(&env(&[("CONSUL_HTTP_TOKEN", SECRET)]), &o).unwrap();
        assert_eq!(c.token.as_ref().unwrap().secret.expose(), "explicit-secret");
        assert_eq!(c.token.as_ref().unwrap().source, TokenSource::Explicit);
    }

    #[test]
    fn unreadable_and_empty_token_files_are_errors() {
        let err = ConsulConfig::from_sources(
            &env(&[("CONSUL_HTTP_TOKEN_FILE", "/nonexistent/mirra/token")]),
            &Overrides::default(),
        )
        .unwrap_err();
        assert!(matches!(err, ConfigError::TokenFileUnreadable { .. }));
        assert!(err.to_string().contains("/nonexistent/mirra/token"));

        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), "\n  \n").unwrap();
        let o = Overrides {
            token_file: Some(f.path().to_owned()),
            ..Overrides::default()
        };
        let err = ConsulConfig::from_sources(&env(&[]), &o).unwrap_err();
        assert!(matches!(err, ConfigError::TokenFileEmpty { .. }));
    }

    #[test]
    fn token_with_newline_inside_is_refused_without_showing_it() {
        let o = Overrides {
            token: Some("abc\ndef-secret".into()),
            ..Overrides::default()
        };
        let err = ConsulConfig::from_sources(&env(&[]), &o).unwrap_err();
        assert!(matches!(err, ConfigError::TokenNotHeaderSafe { .. }));
        assert!(!err.to_string().contains("def-secret"));
        assert!(!format!("{err:?}").contains("def-secret"));
    }

    #[test]
    fn secret_never_appears_in_debug_of_config_or_overrides() {
        let o = Overrides {
            token: Some(SECRET.into()),
            ..Overrides::default()
        };
        assert!(!format!("{o:?}").contains(SECRET));
        let c = ConsulConfig::from_sources(&env(&[]), &o).unwrap();
        let dbg = format!("{c:?}");
        assert!(!dbg.contains(SECRET), "{dbg}");
        assert!(dbg.contains("redacted"));
        assert!(!format!("{:#?}", c).contains(SECRET));
        assert!(!c.token_hint().contains(SECRET));
    }

    #[test]
    fn go_bool_spellings() {
        for t in ["1", "t", "T", "TRUE", "true", "True"] {
            assert!(parse_bool("X", t).unwrap());
        }
        for f in ["0", "f", "F", "FALSE", "false", "False"] {
            assert!(!parse_bool("X", f).unwrap());
        }
        for bad in ["yes", "no", "tRuE", "2", ""] {
            assert!(parse_bool("X", bad).is_err());
        }
    }

    proptest! {
        #[test]
        fn address_parsing_never_panics(s in ".{0,64}") {
            let _ = parse_address(&s, false, "t");
            let _ = parse_address(&s, true, "t");
        }

        #[test]
        fn bool_parsing_never_panics(s in ".{0,16}") {
            let _ = parse_bool("X", &s);
        }

        #[test]
        fn host_port_round_trips(host in "[a-w][a-z0-9-]{0,20}(\\.[a-w][a-z0-9-]{0,10}){0,3}", port in 1u16..) {
            let u = parse_address(&format!("{host}:{port}"), false, "t").unwrap();
            prop_assert_eq!(u.scheme(), "http");
            prop_assert_eq!(u.host_str(), Some(host.as_str()));
            // The URL omits the port when it is the scheme's default.
            prop_assert_eq!(u.port_or_known_default(), Some(port));
        }
    }
    // ----- consul-k8s 1.x variables ------------------------------------------

    #[test]
    fn consul_addresses_with_port_and_tls() {
        let c = ConsulConfig::from_sources(
            &env(&[
                ("CONSUL_ADDRESSES", "consul-server.consul.svc"),
                ("CONSUL_HTTP_PORT", "8501"),
                ("CONSUL_USE_TLS", "true"),
            ]),
            &Overrides::default(),
        )
        .unwrap();
        assert_eq!(c.address.as_str(), "https://consul-server.consul.svc:8501/");
        assert_eq!(c.addresses, vec![c.address.clone()]);
    }

    #[test]
    fn consul_addresses_ip_list_defaults_port_by_scheme() {
        let c = ConsulConfig::from_sources(
            &env(&[(
                "CONSUL_ADDRESSES",
                " 10.0.0.1, 10.0.0.2 ,,::1,[fd00::2],10.0.0.1",
            )]),
            &Overrides::default(),
        )
        .unwrap();
        let got: Vec<&str> = c.addresses.iter().map(Url::as_str).collect();
        assert_eq!(
            got,
            [
                "http://10.0.0.1:8500/",
                "http://10.0.0.2:8500/",
                "http://[::1]:8500/",
                "http://[fd00::2]:8500/"
            ]
        );
        let c = ConsulConfig::from_sources(
            &env(&[("CONSUL_ADDRESSES", "10.0.0.1"), ("CONSUL_USE_TLS", "1")]),
            &Overrides::default(),
        )
        .unwrap();
        assert_eq!(c.address.as_str(), "https://10.0.0.1:8501/");
    }

    #[test]
    fn consul_addresses_wins_over_http_addr_and_the_flag_over_both() {
        let e = env(&[
            ("CONSUL_ADDRESSES", "10.0.0.1"),
            ("CONSUL_HTTP_ADDR", "10.9.9.9:8500"),
        ]);
        let c = ConsulConfig::from_sources(&e, &Overrides::default()).unwrap();
        assert_eq!(c.address.host_str(), Some("10.0.0.1"));
        let o = Overrides {
            address: Some("http://10.5.5.5:8500".into()),
            ..Overrides::default()
        };
        let c = ConsulConfig::from_sources(&e, &o).unwrap();
        assert_eq!(c.address.host_str(), Some("10.5.5.5"));
        assert!(c.addresses.is_empty());
    }

    #[test]
    fn use_tls_applies_to_consul_addresses_not_to_http_addr() {
        let c = ConsulConfig::from_sources(
            &env(&[
                ("CONSUL_HTTP_ADDR", "10.9.9.9:8500"),
                ("CONSUL_USE_TLS", "true"),
            ]),
            &Overrides::default(),
        )
        .unwrap();
        assert_eq!(c.address.scheme(), "http");
    }

    #[test]
    fn malformed_consul_addresses_are_refused() {
        for bad in [
            "exec=discover-servers",
            "10.0.0.1:8500",
            "http://consul",
            "consul/x",
            "-bad.example",
            "300.1.1.1",
            ",, ,",
        ] {
            let err = ConsulConfig::from_sources(
                &env(&[("CONSUL_ADDRESSES", bad)]),
                &Overrides::default(),
            )
            .unwrap_err();
            assert!(
                matches!(
                    err,
                    ConfigError::BadAddress {
                        origin: "CONSUL_ADDRESSES",
                        ..
                    }
                ),
                "{bad}: {err}"
            );
            assert!(err.to_string().contains("CONSUL_ADDRESSES"), "{err}");
        }
    }

    #[test]
    fn bad_http_port_is_an_error_even_without_addresses() {
        for bad in ["0", "65536", "-1", "85OO", "8500.0"] {
            let err = ConsulConfig::from_sources(
                &env(&[("CONSUL_HTTP_PORT", bad)]),
                &Overrides::default(),
            )
            .unwrap_err();
            assert!(
                matches!(
                    err,
                    ConfigError::BadPort {
                        name: "CONSUL_HTTP_PORT",
                        ..
                    }
                ),
                "{bad}: {err}"
            );
            assert!(err.to_string().contains("CONSUL_HTTP_PORT"));
        }
        assert_eq!(parse_port("X", " 65535 ").unwrap(), 65535);
    }

    #[test]
    fn bad_use_tls_is_an_error() {
        let err =
            ConsulConfig::from_sources(&env(&[("CONSUL_USE_TLS", "yes")]), &Overrides::default())
                .unwrap_err();
        assert!(matches!(
            err,
            ConfigError::BadBool {
                name: "CONSUL_USE_TLS",
                ..
            }
        ));
    }

    #[test]
    fn api_timeout_is_a_go_duration() {
        let t = |v: &str| {
            ConsulConfig::from_sources(&env(&[("CONSUL_API_TIMEOUT", v)]), &Overrides::default())
        };
        assert_eq!(t("5s").unwrap().request_timeout, Duration::from_secs(5));
        assert_eq!(t("1m30s").unwrap().request_timeout, Duration::from_secs(90));
        // Zero means "the default", as in consul-k8s.
        assert_eq!(t("0").unwrap().request_timeout, DEFAULT_REQUEST_TIMEOUT);
        assert_eq!(
            ConsulConfig::from_sources(&env(&[]), &Overrides::default())
                .unwrap()
                .request_timeout,
            DEFAULT_REQUEST_TIMEOUT
        );
        for bad in ["5", "five", "-5s", "5x", "1.2.3s"] {
            let err = t(bad).unwrap_err();
            assert!(
                matches!(
                    err,
                    ConfigError::BadDuration {
                        name: "CONSUL_API_TIMEOUT",
                        ..
                    }
                ),
                "{bad}: {err}"
            );
            assert!(err.to_string().contains("CONSUL_API_TIMEOUT"));
        }
    }

    #[test]
    fn go_duration_syntax() {
        let ok = |s: &str, d: Duration| assert_eq!(parse_go_duration(s), Ok(d), "{s}");
        ok("0", Duration::ZERO);
        ok("+0", Duration::ZERO);
        ok("-0", Duration::ZERO);
        ok("5s", Duration::from_secs(5));
        ok("+5s", Duration::from_secs(5));
        ok("1m30s", Duration::from_secs(90));
        ok("1h2m3s4ms5us6ns", Duration::new(3723, 4_005_006));
        ok("1.5s", Duration::from_millis(1500));
        ok(".5s", Duration::from_millis(500));
        ok("1.s", Duration::from_secs(1));
        ok("2µs", Duration::from_micros(2));
        ok("2μs", Duration::from_micros(2));
        ok("0.000000001s", Duration::from_nanos(1));
        ok("0.0000000009s", Duration::ZERO);
        ok(
            "2562047h47m16.854775807s",
            Duration::from_nanos(i64::MAX.unsigned_abs()),
        );
        assert_eq!(parse_go_duration(""), Err(DurationError::Empty));
        assert_eq!(parse_go_duration("5"), Err(DurationError::MissingUnit));
        assert_eq!(parse_go_duration("1s5"), Err(DurationError::MissingUnit));
        assert_eq!(parse_go_duration("-1s"), Err(DurationError::Negative));
        assert_eq!(parse_go_duration("."), Err(DurationError::Syntax));
        assert_eq!(parse_go_duration("s"), Err(DurationError::Syntax));
        assert_eq!(parse_go_duration("+"), Err(DurationError::Syntax));
        assert_eq!(parse_go_duration(" 5s"), Err(DurationError::Syntax));
        assert_eq!(
            parse_go_duration("5d"),
            Err(DurationError::UnknownUnit("d".into()))
        );
        assert_eq!(
            parse_go_duration("2562047h47m16.854775808s"),
            Err(DurationError::Overflow)
        );
        assert_eq!(
            parse_go_duration("99999999999999999999999h"),
            Err(DurationError::Overflow)
        );
    }

    #[test]
    fn consul_k8s_tokens_win_over_consul_http_tokens() {
        let mut acl_file = tempfile::NamedTempFile::new().unwrap();
        writeln!(acl_file, "acl-file-secret").unwrap();
        let acl_path = acl_file.path().to_str().unwrap().to_owned();
        let mut http_file = tempfile::NamedTempFile::new().unwrap();
        writeln!(http_file, "http-file-secret").unwrap();
        let http_path = http_file.path().to_str().unwrap().to_owned();
        let all = [
            ("CONSUL_ACL_TOKEN", "acl-secret"),
            ("CONSUL_ACL_TOKEN_FILE", acl_path.as_str()),
            ("CONSUL_HTTP_TOKEN_FILE", http_path.as_str()),
            ("CONSUL_HTTP_TOKEN", "http-secret"),
        ];
        let expected = [
            "acl-secret",
            "acl-file-secret",
            "http-file-secret",
            "http-secret",
        ];
        // Dropping the winner each time shows the whole order.
        for (i, want) in expected.iter().enumerate() {
            let c = ConsulConfig::from_sources(&env(&all[i..]), &Overrides::default()).unwrap();
            assert_eq!(c.token.as_ref().unwrap().secret.expose(), *want);
        }
        let c = ConsulConfig::from_sources(&env(&all), &Overrides::default()).unwrap();
        assert_eq!(c.token_hint(), "token from CONSUL_ACL_TOKEN");
        let c = ConsulConfig::from_sources(&env(&all[1..]), &Overrides::default()).unwrap();
        assert!(c.token_hint().contains("CONSUL_ACL_TOKEN_FILE"));
        // The flag still wins over all of them.
        let o = Overrides {
            token: Some("flag-secret".into()),
            ..Overrides::default()
        };
        let c = ConsulConfig::from_sources(&env(&all), &o).unwrap();
        assert_eq!(c.token.as_ref().unwrap().secret.expose(), "flag-secret");

        let err = ConsulConfig::from_sources(
            &env(&[("CONSUL_ACL_TOKEN_FILE", "/nonexistent/mirra/acl-token")]),
            &Overrides::default(),
        )
        .unwrap_err();
        assert!(matches!(err, ConfigError::TokenFileUnreadable { .. }));
        assert!(err.to_string().contains("CONSUL_ACL_TOKEN_FILE"));
    }

    #[test]
    fn cacert_file_wins_over_cacert_and_the_flag_over_both() {
        let e = env(&[
            ("CONSUL_CACERT_FILE", "/k8s/ca.pem"),
            ("CONSUL_CACERT", "/cli/ca.pem"),
        ]);
        let c = ConsulConfig::from_sources(&e, &Overrides::default()).unwrap();
        assert_eq!(c.tls.ca_file.as_deref(), Some(Path::new("/k8s/ca.pem")));
        let o = Overrides {
            ca_file: Some("/flag/ca.pem".into()),
            ..Overrides::default()
        };
        let c = ConsulConfig::from_sources(&e, &o).unwrap();
        assert_eq!(c.tls.ca_file.as_deref(), Some(Path::new("/flag/ca.pem")));
    }

    #[test]
    fn cacert_pem_is_read_and_a_ca_file_is_kept_beside_it() {
        let pem = "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n";
        let c =
            ConsulConfig::from_sources(&env(&[("CONSUL_CACERT_PEM", pem)]), &Overrides::default())
                .unwrap();
        // Variables are read trimmed; PEM parsing ignores the blanks.
        assert_eq!(c.tls.ca_pem.as_deref(), Some(pem.trim()));
        assert_eq!(c.tls.ca_file, None);
        let o = Overrides {
            ca_pem: Some("flag pem".into()),
            ..Overrides::default()
        };
        let c = ConsulConfig::from_sources(&env(&[("CONSUL_CACERT_PEM", pem)]), &o).unwrap();
        assert_eq!(c.tls.ca_pem.as_deref(), Some("flag pem"));
        // Both set: the file is used (the client's rule, as consul-k8s's).
        let c = ConsulConfig::from_sources(
            &env(&[
                ("CONSUL_CACERT_PEM", pem),
                ("CONSUL_CACERT_FILE", "/k8s/ca.pem"),
            ]),
            &Overrides::default(),
        )
        .unwrap();
        assert_eq!(c.tls.ca_file.as_deref(), Some(Path::new("/k8s/ca.pem")));
        // Its text never reaches a Debug rendering of the overrides.
        assert!(!format!("{o:?}").contains("flag pem"));
    }

    #[test]
    fn datacenter_partition_and_server_name_from_consul_k8s_env() {
        let e = env(&[
            ("CONSUL_DATACENTER", "dc3"),
            ("CONSUL_PARTITION", "team-p"),
            ("CONSUL_TLS_SERVER_NAME", "server.dc3.consul"),
        ]);
        let c = ConsulConfig::from_sources(&e, &Overrides::default()).unwrap();
        assert_eq!(c.datacenter.as_deref(), Some("dc3"));
        assert_eq!(c.partition.as_deref(), Some("team-p"));
        assert_eq!(c.tls.server_name.as_deref(), Some("server.dc3.consul"));
        let o = Overrides {
            datacenter: Some("dc4".into()),
            ..Overrides::default()
        };
        let c = ConsulConfig::from_sources(&e, &o).unwrap();
        assert_eq!(c.datacenter.as_deref(), Some("dc4"));
    }

    #[test]
    fn explicit_consul_k8s_values_win_over_the_environment() {
        let e = env(&[
            ("CONSUL_ADDRESSES", "10.0.0.1"),
            ("CONSUL_HTTP_PORT", "8500"),
            ("CONSUL_USE_TLS", "false"),
            ("CONSUL_API_TIMEOUT", "5s"),
        ]);
        let o = Overrides {
            addresses: Some("10.0.0.7,10.0.0.8".into()),
            http_port: Some(8501),
            use_tls: Some(true),
            api_timeout: Some(Duration::from_secs(20)),
            ..Overrides::default()
        };
        let c = ConsulConfig::from_sources(&e, &o).unwrap();
        let got: Vec<&str> = c.addresses.iter().map(Url::as_str).collect();
        assert_eq!(got, ["https://10.0.0.7:8501/", "https://10.0.0.8:8501/"]);
        assert_eq!(c.request_timeout, Duration::from_secs(20));
        // A zero timeout given explicitly falls back like the variable does.
        let o = Overrides {
            api_timeout: Some(Duration::ZERO),
            ..Overrides::default()
        };
        let c = ConsulConfig::from_sources(&e, &o).unwrap();
        assert_eq!(c.request_timeout, Duration::from_secs(5));
        let o = Overrides {
            http_port: Some(0),
            ..Overrides::default()
        };
        assert!(matches!(
            ConsulConfig::from_sources(&e, &o).unwrap_err(),
            ConfigError::BadPort { .. }
        ));
    }

    fn bearer_file(content: &str) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        write!(f, "{content}").unwrap();
        f
    }

    #[test]
    fn login_variables_are_read_when_an_auth_method_is_named() {
        let bearer = bearer_file("eyJhbGciOi.jwt.sig\n");
        let path = bearer.path().to_str().unwrap().to_owned();
        let c = ConsulConfig::from_sources(
            &env(&[
                (
                    "CONSUL_LOGIN_AUTH_METHOD",
                    "consul-k8s-component-auth-method",
                ),
                ("CONSUL_LOGIN_BEARER_TOKEN_FILE", path.as_str()),
                ("CONSUL_LOGIN_DATACENTER", "dc1"),
                ("CONSUL_LOGIN_PARTITION", "team-p"),
                ("CONSUL_LOGIN_NAMESPACE", "apps"),
                (
                    "CONSUL_LOGIN_META",
                    "component=sync-catalog,pod=consul/sync-0",
                ),
                ("CONSUL_DATACENTER", "dc2"),
            ]),
            &Overrides::default(),
        )
        .unwrap();
        let l = c.login.as_ref().unwrap();
        assert_eq!(l.auth_method, "consul-k8s-component-auth-method");
        assert_eq!(l.bearer_token_file, bearer.path());
        assert_eq!(l.datacenter.as_deref(), Some("dc1"));
        assert_eq!(l.partition.as_deref(), Some("team-p"));
        assert_eq!(l.namespace.as_deref(), Some("apps"));
        assert_eq!(
            l.meta,
            env(&[("component", "sync-catalog"), ("pod", "consul/sync-0")])
        );
        assert_eq!(
            l.read_bearer_token().unwrap().expose(),
            "eyJhbGciOi.jwt.sig"
        );
        // The login's datacenter is the login's only.
        assert_eq!(c.datacenter.as_deref(), Some("dc2"));
        assert_eq!(
            c.token_hint(),
            "token from login with auth method \"consul-k8s-component-auth-method\""
        );
        let shown = format!("{c:?}");
        assert!(!shown.contains("eyJhbGciOi"), "{shown}");
    }

    #[test]
    fn the_bearer_token_file_defaults_to_the_service_account_token() {
        let l = LoginConfig::new("k8s");
        assert_eq!(
            l.bearer_token_file,
            Path::new("/var/run/secrets/kubernetes.io/serviceaccount/token")
        );
        // Outside a pod the default file is missing: an error naming the
        // variable that would fix it, at start.
        if !l.bearer_token_file.exists() {
            let err = ConsulConfig::from_sources(
                &env(&[("CONSUL_LOGIN_AUTH_METHOD", "k8s")]),
                &Overrides::default(),
            )
            .unwrap_err();
            assert!(
                matches!(err, ConfigError::TokenFileUnreadable { .. }),
                "{err}"
            );
            let text = err.to_string();
            assert!(text.contains("CONSUL_LOGIN_BEARER_TOKEN_FILE"), "{text}");
            assert!(text.contains("serviceaccount/token"), "{text}");
        }
    }

    #[test]
    fn a_login_wins_over_every_static_token_as_in_consul_k8s() {
        let bearer = bearer_file("jwt");
        let path = bearer.path().to_str().unwrap().to_owned();
        let e = env(&[
            ("CONSUL_LOGIN_AUTH_METHOD", "k8s"),
            ("CONSUL_LOGIN_BEARER_TOKEN_FILE", path.as_str()),
            ("CONSUL_ACL_TOKEN", "acl-secret"),
            // Not even read: a login does not use it.
            ("CONSUL_ACL_TOKEN_FILE", "/nonexistent/acl-token"),
            ("CONSUL_HTTP_TOKEN", "http-secret"),
        ]);
        let o = Overrides {
            token: Some("flag-secret".into()),
            ..Overrides::default()
        };
        let c = ConsulConfig::from_sources(&e, &o).unwrap();
        assert!(c.token.is_none());
        assert_eq!(c.login.as_ref().unwrap().auth_method, "k8s");
        // Without an auth method the login variables are ignored, however
        // malformed, and the static token is used.
        let c = ConsulConfig::from_sources(
            &env(&[
                ("CONSUL_LOGIN_META", "no-equals-sign"),
                ("CONSUL_LOGIN_BEARER_TOKEN_FILE", "/nonexistent/jwt"),
                ("CONSUL_ACL_TOKEN", "acl-secret"),
            ]),
            &Overrides::default(),
        )
        .unwrap();
        assert!(c.login.is_none());
        assert_eq!(c.token.unwrap().secret.expose(), "acl-secret");
        // An explicit auth method and file win over the variables.
        let other = bearer_file("other-jwt");
        let o = Overrides {
            login_auth_method: Some("explicit".into()),
            login_bearer_token_file: Some(other.path().to_owned()),
            login_meta: Some("a=1".into()),
            ..Overrides::default()
        };
        let c = ConsulConfig::from_sources(&e, &o).unwrap();
        let l = c.login.unwrap();
        assert_eq!(l.auth_method, "explicit");
        assert_eq!(l.bearer_token_file, other.path());
        assert_eq!(l.meta, env(&[("a", "1")]));
    }

    #[test]
    fn unreadable_or_empty_bearer_token_files_are_errors_naming_the_variable() {
        let empty = bearer_file(" \n");
        let empty_path = empty.path().to_str().unwrap().to_owned();
        let dir = tempfile::tempdir().unwrap();
        let dir_path = dir.path().to_str().unwrap().to_owned();
        for (path, want_empty) in [
            ("/nonexistent/mirra/jwt", false),
            (dir_path.as_str(), false),
            (empty_path.as_str(), true),
        ] {
            let err = ConsulConfig::from_sources(
                &env(&[
                    ("CONSUL_LOGIN_AUTH_METHOD", "k8s"),
                    ("CONSUL_LOGIN_BEARER_TOKEN_FILE", path),
                ]),
                &Overrides::default(),
            )
            .unwrap_err();
            if want_empty {
                assert!(matches!(err, ConfigError::TokenFileEmpty { .. }), "{err}");
            } else {
                assert!(
                    matches!(err, ConfigError::TokenFileUnreadable { .. }),
                    "{err}"
                );
            }
            let text = err.to_string();
            assert!(text.contains("CONSUL_LOGIN_BEARER_TOKEN_FILE"), "{text}");
            assert!(text.contains(path), "{text}");
        }
    }

    #[test]
    fn login_meta_is_comma_separated_key_value_pairs() {
        let m = |v: &str| parse_login_meta(v).unwrap();
        assert_eq!(m(""), BTreeMap::new());
        assert_eq!(m("a=b"), env(&[("a", "b")]));
        assert_eq!(m(" a = b , c=d,"), env(&[("a", "b"), ("c", "d")]));
        assert_eq!(m("a=,b=2"), env(&[("a", ""), ("b", "2")]));
        assert_eq!(m("a=1,a=2"), env(&[("a", "2")]));
        assert_eq!(m("pod=ns/name-0"), env(&[("pod", "ns/name-0")]));
        for (bad, reason) in [
            ("novalue", "expected key=value"),
            ("a=b,oops", "expected key=value"),
            ("a=b=c", "more than one '='"),
            ("=v", "empty key"),
            (" =v", "empty key"),
        ] {
            let err = parse_login_meta(bad).unwrap_err();
            assert!(
                matches!(err, ConfigError::BadLoginMeta { .. }),
                "{bad}: {err}"
            );
            let text = err.to_string();
            assert!(text.contains("CONSUL_LOGIN_META"), "{text}");
            assert!(text.contains(reason), "{bad}: {text}");
        }
        let bearer = bearer_file("jwt");
        let path = bearer.path().to_str().unwrap().to_owned();
        let err = ConsulConfig::from_sources(
            &env(&[
                ("CONSUL_LOGIN_AUTH_METHOD", "k8s"),
                ("CONSUL_LOGIN_BEARER_TOKEN_FILE", path.as_str()),
                ("CONSUL_LOGIN_META", "component=sync-catalog,pod"),
            ]),
            &Overrides::default(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("\"pod\""), "{err}");
    }

    #[test]
    fn a_login_over_plain_http_to_another_host_is_in_clear() {
        let mut c = ConsulConfig::new("http://10.0.0.5:8500").unwrap();
        c.login = Some(LoginConfig::new("k8s"));
        assert!(c.token_in_clear());
        c.address = parse_address("https://10.0.0.5:8501", false, "t").unwrap();
        assert!(!c.token_in_clear());
    }

    #[test]
    fn an_empty_partition_is_not_kept() {
        for p in ["", "  "] {
            let c =
                ConsulConfig::from_sources(&env(&[("CONSUL_PARTITION", p)]), &Overrides::default())
                    .unwrap();
            assert_eq!(c.partition, None);
            let o = Overrides {
                partition: Some(p.into()),
                ..Overrides::default()
            };
            let c = ConsulConfig::from_sources(&env(&[("CONSUL_PARTITION", "p2")]), &o).unwrap();
            assert_eq!(c.partition.as_deref(), Some("p2"));
        }
    }

    proptest! {
        #[test]
        fn go_duration_never_panics(s in "[-+0-9.hmsunµμd]{0,24}") {
            let _ = parse_go_duration(&s);
        }

        #[test]
        fn go_duration_never_panics_on_anything(s in ".{0,32}") {
            let _ = parse_go_duration(&s);
        }

        #[test]
        fn go_duration_reads_what_go_would_print(
            h in 0u64..10_000, m in 0u64..60, s in 0u64..60, ms in 0u64..1000,
        ) {
            let want = Duration::from_millis(((h * 60 + m) * 60 + s) * 1000 + ms);
            // Go's String() form: 1h2m3.004s, 3.004s, 4ms.
            let text = if h > 0 {
                format!("{h}h{m}m{s}.{ms:03}s")
            } else if m > 0 {
                format!("{m}m{s}.{ms:03}s")
            } else {
                format!("{s}.{ms:03}s")
            };
            prop_assert_eq!(parse_go_duration(&text), Ok(want));
            // The same sum in any split of units.
            let split = format!("{h}h{m}m{s}s{ms}ms");
            prop_assert_eq!(parse_go_duration(&split), Ok(want));
            let in_ms = format!("{}ms", want.as_millis());
            prop_assert_eq!(parse_go_duration(&in_ms), Ok(want));
        }

        #[test]
        fn login_meta_parsing_never_panics_and_keeps_what_it_accepts(s in "[a-z=, ]{0,40}") {
            if let Ok(meta) = parse_login_meta(&s) {
                for (k, v) in meta {
                    prop_assert!(!k.is_empty() && !k.contains('=') && !k.contains(','));
                    prop_assert!(!v.contains('=') && !v.contains(','));
                }
            }
        }

        #[test]
        fn addresses_parsing_never_panics(s in ".{0,64}", tls in any::<bool>(), port in 1u16..) {
            if let Ok(list) = parse_addresses(&s, tls, port) {
                for u in list {
                    prop_assert_eq!(u.port_or_known_default(), Some(port));
                }
            }
        }
    }
}
