//! apimachinery `util/validation` checks the kinds share: ConfigMap keys,
//! environment variable names, port names and numbers, percentages, CIDRs.
//!
//! This module must NOT know any kind or field path: it answers whether a
//! string is well formed and, where upstream has one, with its message.

use super::*;

/// `IsConfigMapKey`: problems with a ConfigMap or Secret key.
pub fn is_config_map_key(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 253 {
        errs.push("must be no more than 253 characters".to_string());
    }
    let ok = !value.is_empty()
        && value
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'));
    if !ok {
        errs.push(
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.' \
             (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is \
             '[-._a-zA-Z0-9]+')"
                .to_string(),
        );
    }
    errs.extend(has_chdir_prefix(value));
    errs
}

pub(super) fn has_chdir_prefix(value: &str) -> Vec<String> {
    match value {
        "." => vec!["must not be '.'".to_string()],
        ".." => vec!["must not be '..'".to_string()],
        v if v.starts_with("..") => vec!["must not start with '..'".to_string()],
        _ => Vec::new(),
    }
}

/// `IsRelaxedEnvVarName`: the environment variable rule with the
/// `RelaxedEnvironmentVariableValidation` feature on (beta, on by default
/// since v1.32): any printable ASCII but `=`.
pub fn is_relaxed_env_var_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.is_empty() {
        errs.push("environment variable name must be non-empty".to_string());
    }
    if value.chars().any(|c| !(' '..='~').contains(&c) || c == '=') {
        errs.push(
            "a valid environment variable name must consist only of printable ASCII characters \
             other than '='"
                .to_string(),
        );
    }
    errs
}

/// `IsValidPortName`: an IANA service name.
pub fn is_valid_port_name(port: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if port.len() > 15 {
        errs.push("must be no more than 15 characters".to_string());
    }
    if port.is_empty()
        || !port
            .bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
    {
        errs.push(
            "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".to_string(),
        );
    }
    if !port.bytes().any(|c| c.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".to_string());
    }
    if port.contains("--") {
        errs.push("must not contain consecutive hyphens".to_string());
    }
    if port.starts_with('-') || port.ends_with('-') {
        errs.push("must not begin or end with a hyphen".to_string());
    }
    errs
}

pub(super) fn is_valid_port_num(n: i64) -> bool {
    (1..=65535).contains(&n)
}

/// `IsValidPercent`.
pub(super) fn is_valid_percent(s: &str) -> bool {
    s.strip_suffix('%')
        .is_some_and(|d| !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit()))
}

pub(super) const PERCENT_ERR: &str = "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')";

/// A parsed CIDR: its network address, prefix length and address width.
#[derive(Clone, Copy)]
pub(super) struct Cidr {
    pub(super) net: u128,
    pub(super) prefix: u32,
    pub(super) bits: u32,
}

impl Cidr {
    pub(super) fn contains(&self, ip: u128, bits: u32) -> bool {
        if bits != self.bits {
            return false;
        }
        let shift = self.bits - self.prefix;
        shift >= 128 || (ip >> shift) == (self.net >> shift)
    }
}

/// Go's `netutils.ParseCIDRSloppy`: like `net.ParseCIDR`, but IPv4 octets
/// may carry leading zeros (read as decimal), as the legacy fields allow.
pub(super) fn parse_cidr(s: &str) -> Option<Cidr> {
    let (ip, prefix) = s.split_once('/')?;
    if prefix.is_empty() || prefix.len() > 3 || !prefix.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let prefix: u32 = prefix.parse().ok()?;
    let (addr, bits) = if ip.contains(':') {
        match ip.parse::<IpAddr>().ok()? {
            IpAddr::V6(a) => (u128::from(a), 128),
            IpAddr::V4(a) => (u128::from(u32::from(a)), 32),
        }
    } else {
        (u128::from(u32::from(parse_ipv4_sloppy(ip)?)), 32)
    };
    if prefix > bits {
        return None;
    }
    let shift = bits - prefix;
    let net = if shift >= 128 {
        0
    } else {
        (addr >> shift) << shift
    };
    Some(Cidr { net, prefix, bits })
}

pub(super) fn parse_ipv4_sloppy(s: &str) -> Option<Ipv4Addr> {
    let parts: Vec<&str> = s.split('.').collect();
    if parts.len() != 4 {
        return None;
    }
    let mut octets = [0u8; 4];
    for (o, p) in octets.iter_mut().zip(parts) {
        if p.is_empty() || p.len() > 3 || !p.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        *o = p.parse().ok()?;
    }
    Some(Ipv4Addr::from(octets))
}
