//! The ACL token: where it comes from (flag, variable, file), its redacted
//! `Debug`, and reading and checking a token file.
//!
//! This module must NOT let the token's value escape: no `Display`, and errors
//! name the token by its source only.

use super::*;

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

pub(super) fn read_token_file(
    source: TokenSource,
    path: &Path,
) -> Result<TokenConfig, ConfigError> {
    let secret = read_secret_file(path, source.to_string())?;
    Ok(TokenConfig { secret, source })
}

/// Reads the secret a file holds (an ACL or a bearer token). Errors name
/// the file by `hint`, never by its content; an empty file is one too.
pub(super) fn read_secret_file(path: &Path, hint: String) -> Result<Token, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::TokenFileUnreadable {
        source_hint: hint.clone(),
        reason: e.to_string(),
    })?;
    let secret = Token::new(text);
    if secret.expose().is_empty() {
        return Err(ConfigError::TokenFileEmpty { source_hint: hint });
    }
    Ok(secret)
}

pub(super) fn check_header_safe(token: &TokenConfig) -> Result<(), ConfigError> {
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
