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

mod login;
mod parse;
mod token;

pub use login::*;
pub use parse::*;
pub use token::*;

/// The address Consul's CLI and libraries use when nothing is configured.
pub const DEFAULT_ADDRESS: &str = "127.0.0.1:8500";

/// Default number of operations per `/v1/txn` request.
///
/// Consul 1.14 and later accept 128 operations in one transaction; older
/// servers refuse more than 64 with a 413 that names their limit, and the
/// client (and the catalog writer) then packs to it for good, at the cost
/// of that one refused request. Each transaction is one Raft apply, so the
/// larger default halves the applies of a rollout on current servers.
pub const DEFAULT_TXN_MAX_OPS: usize = 128;

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

/// Port of the servers named by `CONSUL_ADDRESSES` when `CONSUL_HTTP_PORT`
/// is not set: Consul's default HTTP port, or its usual HTTPS port with
/// `CONSUL_USE_TLS`. (consul-k8s has no default: its Helm chart always sets
/// the port.)
pub const DEFAULT_HTTP_PORT: u16 = 8500;

/// See [`DEFAULT_HTTP_PORT`].
pub const DEFAULT_HTTPS_PORT: u16 = 8501;

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
    /// between 1 and [`MAX_TXN_MAX_OPS`]. A server that names a lower limit
    /// in a 413 lowers it.
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

#[cfg(test)]
mod tests;
