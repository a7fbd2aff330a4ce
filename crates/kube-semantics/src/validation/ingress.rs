//! networking.k8s.io Ingress: backends, hosts, paths and path types, TLS hosts
//! and secrets, class name.
//!
//! This module must NOT validate NetworkPolicy (see `network_policy`).

use super::*;

/// `IsWildcardDNS1123Subdomain`.
pub(super) fn is_wildcard_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 253 {
        errs.push("must be no more than 253 characters".to_string());
    }
    let ok = value
        .strip_prefix("*.")
        .is_some_and(|rest| is_dns1123_subdomain(rest).is_empty());
    if !ok {
        errs.push(
            "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS \
             subdomain, which must consist of lower case alphanumeric characters, '-' or '.' \
             and end with an alphanumeric character (e.g. '*.example.com', regex used for \
             validation is '\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
                .to_string(),
        );
    }
    errs
}

/// Go's `netutils.ParseIPSloppy(s) != nil`.
pub(super) fn is_ip_sloppy(s: &str) -> bool {
    if s.contains(':') {
        s.parse::<std::net::Ipv6Addr>().is_ok()
    } else {
        parse_ipv4_sloppy(s).is_some()
    }
}

/// The invalid path sequences and suffixes of `Exact` and `Prefix` paths.
pub(super) const INVALID_PATH_SEQUENCES: [&str; 5] = ["//", "/./", "/../", "%2f", "%2F"];
pub(super) const INVALID_PATH_SUFFIXES: [&str; 2] = ["/..", "/."];

pub(super) fn validate_ingress(obj: &Value, create: bool, errs: &mut Vec<FieldError>) {
    let spec = get(obj, "spec").unwrap_or(&Value::Null);
    let rules = get(spec, "rules").and_then(Value::as_array);
    let default_backend = get(spec, "defaultBackend").filter(|b| b.is_object());
    if rules.is_none_or(Vec::is_empty) && default_backend.is_none() {
        let shown = if rules.is_some() {
            "[]networking.IngressRule{}"
        } else {
            "[]networking.IngressRule(nil)"
        };
        errs.push(invalid(
            "spec",
            shown,
            "either `defaultBackend` or `rules` must be specified",
        ));
    }
    if let Some(b) = default_backend {
        validate_ingress_backend(b, "spec.defaultBackend", errs);
    }
    for (i, rule) in rules.map(Vec::as_slice).unwrap_or(&[]).iter().enumerate() {
        let rpath = index("spec.rules", i);
        let host = string(rule, "host");
        if !host.is_empty() {
            let hpath = child(&rpath, "host");
            if is_ip_sloppy(host) {
                errs.push(invalid_str(
                    &hpath,
                    host,
                    "must be a DNS name, not an IP address",
                ));
            }
            let msgs = if host.contains('*') {
                is_wildcard_dns1123_subdomain(host)
            } else {
                is_dns1123_subdomain(host)
            };
            for msg in msgs {
                errs.push(invalid_str(&hpath, host, &msg));
            }
        }
        let Some(http) = get(rule, "http").filter(|h| h.is_object()) else {
            continue;
        };
        let hpath = child(&rpath, "http");
        let paths = arr(http, "paths");
        if paths.is_empty() {
            errs.push(required(&child(&hpath, "paths"), ""));
        }
        for (j, p) in paths.iter().enumerate() {
            validate_ingress_path(p, &index(&child(&hpath, "paths"), j), errs);
        }
    }
    for (i, tls) in arr(spec, "tls").iter().enumerate() {
        let tpath = index("spec.tls", i);
        for (j, host) in strings_of(tls, "hosts").into_iter().enumerate() {
            let msgs = if host.contains('*') {
                is_wildcard_dns1123_subdomain(host)
            } else {
                is_dns1123_subdomain(host)
            };
            for msg in msgs {
                errs.push(invalid_str(&index(&child(&tpath, "hosts"), j), host, &msg));
            }
        }
        let secret = string(tls, "secretName");
        if !secret.is_empty() {
            for msg in is_dns1123_subdomain(secret) {
                errs.push(invalid_str(&child(&tpath, "secretName"), secret, &msg));
            }
        }
    }
    let class = opt_string(spec, "ingressClassName");
    if let Some(c) = class {
        for msg in is_dns1123_subdomain(c) {
            errs.push(invalid_str("spec.ingressClassName", c, &msg));
        }
    }
    // Create only: the legacy annotation must agree with the field.
    let annotation = get(obj, "metadata")
        .and_then(|m| get(m, "annotations"))
        .and_then(|a| opt_string(a, "kubernetes.io/ingress.class"));
    if let (true, Some(a), Some(c)) = (create, annotation, class)
        && a != c
    {
        errs.push(invalid_str(
            "annotations.kubernetes.io/ingress.class",
            a,
            "must match `ingressClassName` when both are specified",
        ));
    }
}

pub(super) fn validate_ingress_path(p: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let Some(ty) = opt_string(p, "pathType") else {
        errs.push(required(
            &child(path, "pathType"),
            "pathType must be specified",
        ));
        return;
    };
    let value = string(p, "path");
    let ppath = child(path, "path");
    match ty {
        "Exact" | "Prefix" => {
            if !value.starts_with('/') {
                errs.push(invalid_str(&ppath, value, "must be an absolute path"));
            }
            if !value.is_empty() {
                for seq in INVALID_PATH_SEQUENCES {
                    if value.contains(seq) {
                        errs.push(invalid_str(
                            &ppath,
                            value,
                            &format!("must not contain '{seq}'"),
                        ));
                    }
                }
                for suffix in INVALID_PATH_SUFFIXES {
                    if value.ends_with(suffix) {
                        errs.push(invalid_str(
                            &ppath,
                            value,
                            &format!("cannot end with '{suffix}'"),
                        ));
                    }
                }
            }
        }
        "ImplementationSpecific" => {
            if !value.is_empty() && !value.starts_with('/') {
                errs.push(invalid_str(&ppath, value, "must be an absolute path"));
            }
        }
        other => errs.push(not_supported(
            &child(path, "pathType"),
            other,
            &["Exact", "ImplementationSpecific", "Prefix"],
        )),
    }
    let backend = get(p, "backend").unwrap_or(&Value::Null);
    validate_ingress_backend(backend, &child(path, "backend"), errs);
}

pub(super) fn validate_ingress_backend(b: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let resource = get(b, "resource").filter(|r| r.is_object());
    let service = get(b, "service").filter(|s| s.is_object());
    match (resource, service) {
        (Some(_), Some(_)) => errs.push(invalid_str(
            path,
            "",
            "cannot set both resource and service backends",
        )),
        (Some(r), None) => {
            let rpath = child(path, "resource");
            if let Some(g) = opt_string(r, "apiGroup") {
                for msg in is_dns1123_subdomain(g) {
                    errs.push(invalid_str(&child(&rpath, "apiGroup"), g, &msg));
                }
            }
            for f in ["kind", "name"] {
                let v = string(r, f);
                if v.is_empty() {
                    errs.push(required(&child(&rpath, f), ""));
                } else {
                    for msg in is_valid_path_segment_name(v) {
                        errs.push(invalid_str(&child(&rpath, f), v, &msg));
                    }
                }
            }
        }
        (None, Some(s)) => {
            let spath = child(path, "service");
            let name = string(s, "name");
            if name.is_empty() {
                errs.push(required(&child(&spath, "name"), ""));
            } else {
                // `RelaxedServiceNameValidation` is off in v1.33: DNS-1035.
                for msg in crate::names::is_dns1035_label(name) {
                    errs.push(invalid_str(&child(&spath, "name"), name, &msg));
                }
            }
            let port = get(s, "port").unwrap_or(&Value::Null);
            let port_name = string(port, "name");
            let number = int(port, "number").unwrap_or(0);
            let ppath = child(&spath, "port");
            if !port_name.is_empty() && number != 0 {
                errs.push(invalid_str(
                    path,
                    "",
                    "cannot set both port name & port number",
                ));
            } else if !port_name.is_empty() {
                for msg in is_valid_port_name(port_name) {
                    errs.push(invalid_str(&child(&ppath, "name"), port_name, &msg));
                }
            } else if number != 0 {
                if !is_valid_port_num(number) {
                    errs.push(invalid(
                        &child(&ppath, "number"),
                        &number.to_string(),
                        PORT_RANGE,
                    ));
                }
            } else {
                errs.push(required(path, "port name or number is required"));
            }
        }
        (None, None) => errs.push(invalid_str(
            path,
            "",
            "resource or service backend is required",
        )),
    }
}
