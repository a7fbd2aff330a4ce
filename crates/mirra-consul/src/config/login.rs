//! The ACL auth method login settings (`CONSUL_LOGIN_*`): method, bearer token
//! file, metadata, datacenter, partition and namespace of the login.
//!
//! This module must NOT read the bearer token file or log in: the client does.

use super::*;

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
        read_secret_file(&self.bearer_token_file, hint)
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

/// The login settings: `None` unless an auth method is named (by the
/// program or `CONSUL_LOGIN_AUTH_METHOD`). The other login variables are
/// read only then, as consul-k8s does, so that they cannot break a setup
/// that does not log in.
pub(super) fn login_from_sources(
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
