//! The string `format`s the API server checks in a schema (such as `date-time`
//! or `uuid`).
//!
//! This module must NOT know schemas or field paths: it answers whether a
//! string has a format.

/// Whether a string has the format, for the formats the server's format
/// registry knows; unknown formats accept everything, as there.
pub(super) fn format_ok(format: &str, s: &str) -> bool {
    match format {
        "date-time" | "datetime" => date_time_ok(s),
        "date" => chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok() && s.len() == 10,
        "byte" => base64_ok(s),
        "uuid" => uuid_ok(s, None),
        "uuid3" => uuid_ok(s, Some('3')),
        "uuid4" => uuid_ok(s, Some('4')),
        "uuid5" => uuid_ok(s, Some('5')),
        "ipv4" => s.parse::<std::net::Ipv4Addr>().is_ok(),
        "ipv6" => s.parse::<std::net::Ipv6Addr>().is_ok(),
        "cidr" => cidr_ok(s),
        "mac" => mac_ok(s),
        "hostname" => hostname_ok(s),
        "duration" => duration_ok(s),
        _ => true,
    }
}

pub(super) fn date_time_ok(s: &str) -> bool {
    if chrono::DateTime::parse_from_rfc3339(s).is_ok() {
        return true;
    }
    // strfmt also takes a time without an offset and a `Z0700` offset.
    ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M:%S%.f%z"]
        .iter()
        .any(|f| {
            chrono::NaiveDateTime::parse_from_str(s, f).is_ok()
                || chrono::DateTime::parse_from_str(s, f).is_ok()
        })
}

pub(super) fn base64_ok(s: &str) -> bool {
    let b = s.as_bytes();
    if !b.len().is_multiple_of(4) {
        return false;
    }
    let pad = b.iter().rev().take_while(|c| **c == b'=').count();
    if pad > 2 {
        return false;
    }
    b[..b.len() - pad]
        .iter()
        .all(|c| c.is_ascii_alphanumeric() || *c == b'+' || *c == b'/')
}

pub(super) fn uuid_ok(s: &str, version: Option<char>) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    let lens = [8, 4, 4, 4, 12];
    if parts.len() != 5
        || parts
            .iter()
            .zip(lens)
            .any(|(p, l)| p.len() != l || !p.chars().all(|c| c.is_ascii_hexdigit()))
    {
        return false;
    }
    match version {
        None => true,
        Some(v) => {
            parts[2].starts_with(v)
                && (v == '3' || parts[3].starts_with(['8', '9', 'a', 'b', 'A', 'B']))
        }
    }
}

pub(super) fn cidr_ok(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else {
        return false;
    };
    let Ok(bits) = bits.parse::<u8>() else {
        return false;
    };
    match ip.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(_)) => bits <= 32,
        Ok(std::net::IpAddr::V6(_)) => bits <= 128,
        Err(_) => false,
    }
}

pub(super) fn mac_ok(s: &str) -> bool {
    let sep = if s.contains(':') { ':' } else { '-' };
    let parts: Vec<&str> = s.split(sep).collect();
    matches!(parts.len(), 6 | 8 | 20)
        && parts
            .iter()
            .all(|p| p.len() == 2 && p.chars().all(|c| c.is_ascii_hexdigit()))
}

pub(super) fn hostname_ok(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 255
        && s.trim_end_matches('.').split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        })
}

/// A Go duration (`1h30m`, `500ms`) or strfmt's `3 days` forms; the
/// digits-and-units form is what CRDs use in practice.
pub(super) fn duration_ok(s: &str) -> bool {
    let s = s.strip_prefix(['-', '+']).unwrap_or(s);
    if s == "0" {
        return true;
    }
    let mut rest = s;
    let mut any = false;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if digits == 0 {
            return false;
        }
        rest = &rest[digits..];
        let unit = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let u = rest[..unit].trim();
        if !matches!(
            u,
            "ns" | "us"
                | "µs"
                | "ms"
                | "s"
                | "m"
                | "h"
                | "d"
                | "w"
                | "day"
                | "days"
                | "hour"
                | "hours"
                | "minute"
                | "minutes"
                | "second"
                | "seconds"
        ) {
            return false;
        }
        rest = &rest[unit..];
        any = true;
    }
    any
}
