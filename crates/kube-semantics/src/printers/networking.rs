//! Cells of networking.k8s.io (Ingress, IngressClass, NetworkPolicy,
//! ServiceCIDR, IPAddress) and discovery.k8s.io EndpointSlice.
//!
//! This module must NOT declare columns (see `columns`).

use super::*;

pub(super) fn ingress(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    const MAX: usize = 3;
    let rules = arr(o, &["spec", "rules"]);
    let mut hosts: Vec<&str> = Vec::new();
    let mut more = false;
    for rule in rules {
        if hosts.len() == MAX {
            more = true;
        }
        let host = st(rule, &["host"]);
        if !more && !host.is_empty() {
            hosts.push(host);
        }
    }
    let hosts_text = if hosts.is_empty() {
        "*".to_string()
    } else if more {
        format!("{} + {} more...", hosts.join(","), rules.len() - MAX)
    } else {
        hosts.join(",")
    };
    let address = load_balancer_addresses(arr(o, &["status", "loadBalancer", "ingress"])).join(",");
    let ports = if arr(o, &["spec", "tls"]).is_empty() {
        "80"
    } else {
        "80, 443"
    };
    vec![
        name(o).into(),
        ost(o, &["spec", "ingressClassName"])
            .unwrap_or("<none>")
            .into(),
        hosts_text.into(),
        address.into(),
        ports.into(),
        created(o, now),
    ]
}

pub(super) fn ingress_class(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let parameters = match present(o, &["spec", "parameters"]) {
        None => "<none>".to_string(),
        Some(p) => {
            let mut text = st(p, &["kind"]).to_string();
            if let Some(group) = ost(p, &["apiGroup"]) {
                text.push('.');
                text.push_str(group);
            }
            format!("{text}/{}", st(p, &["name"]))
        }
    };
    vec![
        name(o).into(),
        st(o, &["spec", "controller"]).into(),
        parameters.into(),
        created(o, now),
    ]
}

pub(super) fn network_policy(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        name(o).into(),
        format_label_selector(get(o, &["spec", "podSelector"])).into(),
        created(o, now),
    ]
}

pub(super) fn service_cidr(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let cidrs: Vec<&str> = arr(o, &["spec", "cidrs"])
        .iter()
        .map(|v| v.as_str().unwrap_or(""))
        .collect();
    vec![name(o).into(), cidrs.join(",").into(), created(o, now)]
}

/// Upstream's printer also appends an Age cell that has no column; the row
/// here keeps to the two declared columns.
pub(super) fn ip_address(o: &Value, _now: DateTime<Utc>) -> Vec<Value> {
    let parent = match present(o, &["spec", "parentRef"]) {
        None => "<none>".to_string(),
        Some(p) => {
            let resource = st(p, &["resource"]);
            let mut text = match st(p, &["group"]) {
                "" => resource.to_lowercase(),
                g => format!("{resource}.{g}").to_lowercase(),
            };
            let ns = st(p, &["namespace"]);
            if !ns.is_empty() {
                text.push('/');
                text.push_str(ns);
            }
            format!("{text}/{}", st(p, &["name"]))
        }
    };
    vec![name(o).into(), parent.into()]
}

pub(super) fn endpoint_slice(o: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let ports = arr(o, &["ports"]);
    let port_list: Vec<String> = ports
        .iter()
        .take(3)
        .map(|p| match (oint(p, &["port"]), ost(p, &["name"])) {
            (Some(n), _) => n.to_string(),
            (None, Some(n)) => n.to_string(),
            (None, None) => "*".to_string(),
        })
        .collect();
    let addresses: Vec<String> = arr(o, &["endpoints"])
        .iter()
        .flat_map(|e| arr(e, &["addresses"]))
        .map(|a| a.as_str().unwrap_or("").to_string())
        .collect();
    vec![
        name(o).into(),
        st(o, &["addressType"]).into(),
        list_with_more(&port_list, ports.len(), 3).into(),
        list_with_more(&addresses, addresses.len(), 3).into(),
        created(o, now),
    ]
}
