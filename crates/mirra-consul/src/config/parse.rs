//! Parsing of environment values the way Consul's CLI does: booleans, ports,
//! addresses and address lists, host names, Go durations.
//!
//! This module must NOT read the environment itself: callers pass the values.

use super::*;

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
pub(super) fn is_dns_name(s: &str) -> bool {
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
