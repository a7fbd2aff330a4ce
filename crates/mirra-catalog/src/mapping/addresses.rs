//! Where a Service's instances are: ready endpoints of its own EndpointSlices,
//! node addresses for NodePort Services, and which addresses count.
//!
//! This module must NOT build instance fields itself: it hands addresses to
//! `instance`.

use super::*;

/// The slices that belong to the Service, in name order (so that the first
/// occurrence of a duplicated address does not depend on input order).
pub(super) fn own_slices<'a>(key: &ServiceKey, slices: &[&'a SliceInput]) -> Vec<&'a SliceInput> {
    let mut own: Vec<&SliceInput> = slices
        .iter()
        .copied()
        .filter(|s| belongs_to(s, key))
        .collect();
    own.sort_by(|a, b| a.name.cmp(&b.name));
    own
}

pub(super) fn belongs_to(slice: &SliceInput, key: &ServiceKey) -> bool {
    let ns_ok = slice
        .namespace
        .as_deref()
        .is_none_or(|ns| ns == key.namespace);
    let label_ok = slice.service_name.as_deref() == Some(key.name.as_str());
    ns_ok && label_ok
}

/// Terminating endpoints are never registered: they are on their way out
/// and consul-k8s keeping them is a known complaint.
pub(super) fn is_terminating(ep: &EndpointInput) -> bool {
    ep.terminating.unwrap_or(false)
}

/// Kubernetes' rule: a missing `ready` condition means ready.
pub(super) fn readiness(ep: &EndpointInput) -> CheckStatus {
    match ep.ready {
        Some(false) => CheckStatus::Critical,
        Some(true) | None => CheckStatus::Passing,
    }
}

/// ClusterIP (and LoadBalancer with `-sync-lb-services-endpoints`): one
/// instance per unique endpoint address across all slices, with a readiness
/// check; collapsed to the Ingress host when ingress sync applies.
pub(super) fn endpoint_instances(
    base: &Base,
    key: &ServiceKey,
    slices: &[&SliceInput],
    ingresses: &[&Ingress],
    use_hostname: bool,
    settings: &SyncSettings,
    acc: &mut Accumulator,
) {
    let ingress = if settings.enable_ingress {
        ingress_address(key, ingresses, settings)
    } else {
        None
    };
    let mut seen = BTreeSet::new();
    for slice in own_slices(key, slices) {
        let single_port = base.slice_port(slice);
        let multi_ports = match base.layout {
            PortLayout::Multi => base.slice_ports(slice),
            PortLayout::Single => Vec::new(),
        };
        for ep in &*slice.endpoints {
            if is_terminating(ep) {
                continue;
            }
            for raw in &*ep.addresses {
                let (address, port, ports) = match &ingress {
                    Some((host, ingress_port)) => (host.clone(), *ingress_port, Vec::new()),
                    None => {
                        let address = if raw.is_empty() && use_hostname {
                            ep.hostname.as_deref().unwrap_or_default().to_owned()
                        } else {
                            raw.to_string()
                        };
                        if address.is_empty() {
                            continue;
                        }
                        match base.layout {
                            PortLayout::Single => (address, single_port, Vec::new()),
                            PortLayout::Multi => (address, 0, multi_ports.clone()),
                        }
                    }
                };
                if !seen.insert(address.clone()) {
                    continue;
                }
                let id = service_id(&base.name, &address);
                let check = ReadinessCheck {
                    check_id: readiness_check_id(&key.namespace, &id),
                    service_id: id.clone(),
                    status: readiness(ep),
                };
                acc.push(Registration {
                    key: key.clone(),
                    id,
                    name: base.name.clone(),
                    tags: base.tags.clone(),
                    address,
                    port,
                    ports,
                    meta: base.endpoint_meta(ep),
                    weights: Weights::default(),
                    check: Some(check),
                    namespace: base.namespace.clone(),
                });
            }
        }
    }
}

/// The address of a Node for NodePort instances, per `-node-port-sync-type`;
/// the first matching address wins (the primary interface comes first).
pub fn node_address(node: &Node, sync_type: NodePortSyncType) -> Option<&str> {
    let addresses = node
        .status
        .as_ref()
        .and_then(|s| s.addresses.as_deref())
        .unwrap_or(&[]);
    let first_of = |t: &str| {
        addresses
            .iter()
            .find(|a| a.type_ == t && !a.address.is_empty())
            .map(|a| a.address.as_str())
    };
    match sync_type {
        NodePortSyncType::ExternalOnly => first_of("ExternalIP"),
        NodePortSyncType::InternalOnly => first_of("InternalIP"),
        NodePortSyncType::ExternalFirst => {
            first_of("ExternalIP").or_else(|| first_of("InternalIP"))
        }
    }
}

/// NodePort: one instance per endpoint address, registered at its node's
/// address with the node port; the ID still hashes the endpoint address.
pub(super) fn node_port_instances(
    base: &Base,
    key: &ServiceKey,
    slices: &[&SliceInput],
    nodes: &dyn NodeLookup,
    settings: &SyncSettings,
    acc: &mut Accumulator,
) {
    for slice in own_slices(key, slices) {
        for ep in &*slice.endpoints {
            if is_terminating(ep) {
                continue;
            }
            let Some(node_name) = ep.node_name.as_deref() else {
                continue;
            };
            let Some(node) = nodes.node(node_name) else {
                continue;
            };
            let Some(node_addr) = node_address(node, settings.node_port_sync_type) else {
                continue;
            };
            for ep_addr in ep.addresses.iter().filter(|a| !a.is_empty()) {
                let id = service_id(&base.name, ep_addr);
                if acc.contains(&id) {
                    continue;
                }
                acc.push(Registration {
                    key: key.clone(),
                    id,
                    name: base.name.clone(),
                    tags: base.tags.clone(),
                    address: node_addr.to_owned(),
                    port: base.port,
                    ports: base.ports.clone(),
                    meta: base.endpoint_meta(ep),
                    weights: Weights::default(),
                    check: None,
                    namespace: base.namespace.clone(),
                });
            }
        }
    }
}
