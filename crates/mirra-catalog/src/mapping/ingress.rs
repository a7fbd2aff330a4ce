//! Ingress-fronted Services: the address an Ingress gives a Service and which
//! Ingress rules route to it.
//!
//! This module must NOT read Ingresses from the cluster: callers pass them.

use super::*;

/// The Ingress host (or load balancer IP) and port that stand in for the
/// Service's endpoints, if an Ingress `/` path routes to it.
///
/// Ingresses are walked in name order and rules in order; a later match
/// replaces an earlier one (within one Ingress that is consul-k8s's rule;
/// across Ingresses consul-k8s depends on event order, mirra on names). An
/// empty host disables the collapse, as in consul-k8s.
pub fn ingress_address(
    key: &ServiceKey,
    ingresses: &[&Ingress],
    settings: &SyncSettings,
) -> Option<(String, u16)> {
    let mut sorted: Vec<&Ingress> = ingresses
        .iter()
        .copied()
        .filter(|i| {
            i.metadata
                .namespace
                .as_deref()
                .is_none_or(|ns| ns == key.namespace)
        })
        .collect();
    sorted.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let mut found: Option<(String, u16)> = None;
    for ing in sorted {
        let Some(spec) = ing.spec.as_ref() else {
            continue;
        };
        for rule in spec.rules.as_deref().unwrap_or(&[]) {
            if root_backend(rule).as_deref() != Some(key.name.as_str()) {
                continue;
            }
            let rule_host = rule.host.as_deref().unwrap_or_default();
            let host = if settings.sync_ingress_lb_ips {
                let first_ip = ing
                    .status
                    .as_ref()
                    .and_then(|s| s.load_balancer.as_ref())
                    .and_then(|l| l.ingress.as_deref())
                    .and_then(|list| list.first())
                    .and_then(|e| e.ip.as_deref())
                    .unwrap_or_default();
                if first_ip.is_empty() {
                    continue;
                }
                first_ip.to_owned()
            } else {
                rule_host.to_owned()
            };
            let tls = spec.tls.as_deref().unwrap_or(&[]).iter().any(|t| {
                t.hosts
                    .as_deref()
                    .unwrap_or(&[])
                    .iter()
                    .any(|h| h == rule_host)
            });
            let port = if tls {
                INGRESS_HTTPS_PORT
            } else {
                INGRESS_HTTP_PORT
            };
            found = Some((host, port));
        }
    }
    found.filter(|(host, _)| !host.is_empty())
}

/// The Service a rule's last `/` path routes to.
pub(super) fn root_backend(rule: &k8s_openapi::api::networking::v1::IngressRule) -> Option<String> {
    let paths = rule
        .http
        .as_ref()
        .map(|h| h.paths.as_slice())
        .unwrap_or(&[]);
    let mut out = None;
    for path in paths {
        if path.path.as_deref() == Some("/") {
            out = path.backend.service.as_ref().map(|s| s.name.clone());
        }
    }
    out.filter(|n| !n.is_empty())
}

/// The Services (in the Ingress's namespace) that an Ingress can collapse:
/// those its `/` paths route to. An Ingress event touches these keys (for
/// both the old and the new version of the Ingress).
pub fn keys_for_ingress(ingress: &Ingress) -> BTreeSet<ServiceKey> {
    let namespace = ingress.metadata.namespace.clone().unwrap_or_default();
    ingress
        .spec
        .as_ref()
        .and_then(|s| s.rules.as_deref())
        .unwrap_or(&[])
        .iter()
        .filter_map(root_backend)
        .map(|name| ServiceKey::new(namespace.clone(), name))
        .collect()
}
