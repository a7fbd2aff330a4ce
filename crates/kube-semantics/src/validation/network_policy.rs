//! networking.k8s.io NetworkPolicy: selectors, ports, peers, ipBlocks and
//! policy types.
//!
//! This module must NOT validate Ingress (see `ingress`).

use super::*;

/// `ValidateNetworkPolicySpec`. A repeated policy type is accepted, as
/// upstream accepts it: only more than two entries is an error.
pub(super) fn validate_network_policy(obj: &Value, errs: &mut Vec<FieldError>) {
    let spec = get(obj, "spec").unwrap_or(&Value::Null);
    if let Some(sel) = get(spec, "podSelector") {
        validate_label_selector(sel, "spec.podSelector", errs);
    }
    for (dir, peers) in [("ingress", "from"), ("egress", "to")] {
        for (i, rule) in arr(spec, dir).iter().enumerate() {
            let rp = index(&child("spec", dir), i);
            for (j, port) in arr(rule, "ports").iter().enumerate() {
                validate_np_port(port, &index(&child(&rp, "ports"), j), errs);
            }
            for (j, peer) in arr(rule, peers).iter().enumerate() {
                validate_np_peer(peer, &index(&child(&rp, peers), j), errs);
            }
        }
    }
    let types = arr(spec, "policyTypes");
    if types.len() > 2 {
        let strs: Vec<&str> = types.iter().filter_map(Value::as_str).collect();
        errs.push(invalid(
            "spec.policyTypes",
            &go_policy_types(&strs),
            "may not specify more than two policyTypes",
        ));
        return;
    }
    for (i, t) in types.iter().enumerate() {
        let t = t.as_str().unwrap_or("");
        if t != "Ingress" && t != "Egress" {
            errs.push(not_supported(
                &index("spec.policyTypes", i),
                t,
                &["Ingress", "Egress"],
            ));
        }
    }
}

/// `%#v` of a `[]networking.PolicyType`.
pub(super) fn go_policy_types(items: &[&str]) -> String {
    let q: Vec<String> = items.iter().map(|s| quote(s)).collect();
    format!("[]networking.PolicyType{{{}}}", q.join(", "))
}

pub(super) fn validate_np_port(port: &Value, path: &str, errs: &mut Vec<FieldError>) {
    if let Some(proto) = opt_string(port, "protocol")
        && !matches!(proto, "TCP" | "UDP" | "SCTP")
    {
        errs.push(not_supported(
            &child(path, "protocol"),
            proto,
            &["TCP", "UDP", "SCTP"],
        ));
    }
    let end = int(port, "endPort");
    match get(port, "port") {
        Some(Value::String(name)) => {
            if let Some(end) = end {
                errs.push(invalid(
                    &child(path, "endPort"),
                    &end.to_string(),
                    "may not be specified when `port` is non-numeric",
                ));
            }
            for msg in is_valid_port_name(name) {
                errs.push(invalid_str(&child(path, "port"), name, &msg));
            }
        }
        Some(p) => {
            let n = as_int(p).unwrap_or(0);
            if !is_valid_port_num(n) {
                errs.push(invalid(&child(path, "port"), &n.to_string(), PORT_RANGE));
            }
            if let Some(end) = end {
                if end < n {
                    // Upstream prints the port, not the endPort, here.
                    errs.push(invalid(
                        &child(path, "endPort"),
                        &n.to_string(),
                        "must be greater than or equal to `port`",
                    ));
                }
                if !is_valid_port_num(end) {
                    errs.push(invalid(
                        &child(path, "endPort"),
                        &end.to_string(),
                        PORT_RANGE,
                    ));
                }
            }
        }
        None => {
            if let Some(end) = end {
                errs.push(invalid(
                    &child(path, "endPort"),
                    &end.to_string(),
                    "may not be specified when `port` is not specified",
                ));
            }
        }
    }
}

pub(super) fn validate_np_peer(peer: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let mut count = 0;
    for f in ["podSelector", "namespaceSelector"] {
        if let Some(sel) = get(peer, f) {
            count += 1;
            validate_label_selector(sel, &child(path, f), errs);
        }
    }
    let ip_block = get(peer, "ipBlock");
    if let Some(block) = ip_block {
        count += 1;
        validate_ip_block(block, &child(path, "ipBlock"), errs);
    }
    if count == 0 {
        errs.push(required(path, "must specify a peer"));
    } else if count > 1 && ip_block.is_some() {
        errs.push(forbidden(
            path,
            "may not specify both ipBlock and another peer",
        ));
    }
}

/// `ValidateIPBlock` with the legacy (non-strict) CIDR parsing v1.33 uses by
/// default (`StrictIPCIDRValidation` is alpha and off).
pub(super) fn validate_ip_block(block: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let cidr = string(block, "cidr");
    if cidr.is_empty() {
        errs.push(required(&child(path, "cidr"), ""));
        return;
    }
    let Some(outer) = parse_cidr(cidr) else {
        errs.push(invalid_str(&child(path, "cidr"), cidr, CIDR_INVALID));
        return;
    };
    for (i, except) in arr(block, "except").iter().enumerate() {
        let p = index(&child(path, "except"), i);
        let except = except.as_str().unwrap_or("");
        let Some(inner) = parse_cidr(except) else {
            errs.push(invalid_str(&p, except, CIDR_INVALID));
            continue;
        };
        if !outer.contains(inner.net, inner.bits) || outer.prefix >= inner.prefix {
            errs.push(invalid_str(&p, except, "must be a strict subset of `cidr`"));
        }
    }
}
