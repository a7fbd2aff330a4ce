//! What one Kubernetes Service becomes in Consul: a pure function of the
//! Service, its EndpointSlices, the Nodes they run on, the Ingresses in its
//! namespace and the settings.
//!
//! ```text
//! Service ──► sync decision (namespace allow/deny, ClusterIP flag,
//!             service-sync annotation, -k8s-default-sync)
//!         ──► base instance (name, tags, meta, port, weights)
//!         ──► one instance per: external IP | LB ingress | endpoint
//!             (NodePort: at its node's address; ClusterIP: with a check)
//! ```
//!
//! The result is always the Service's COMPLETE set of instances, so a caller
//! that replaces the previous set with it can never leave the Service half
//! updated. This module must NOT do I/O, read a clock or keep state; ordering
//! of its inputs never changes its output.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use k8s_openapi::api::core::v1::{Node, Service};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointSlice};
use k8s_openapi::api::networking::v1::Ingress;

use crate::annotations::{
    ANNOTATION_SERVICE_PORT, ANNOTATION_SERVICE_SYNC, MAX_META_PAIRS, ParsedAnnotations,
    PortOverride, Warning, parse_annotations,
};
use crate::model::{
    CheckStatus, EXTERNAL_SOURCE_KUBERNETES, META_EXTERNAL_SOURCE, META_K8S_NAMESPACE,
    META_K8S_NODE_NAME, META_K8S_REF_KIND, META_K8S_REF_NAME, META_K8S_TOPOLOGY_ZONE,
    META_PORT_PREFIX, ReadinessCheck, Registration, ServiceKey, ServicePort, Weights,
    readiness_check_id, service_id,
};
use crate::settings::{NodePortSyncType, PortLayout, SyncSettings};

/// The label that ties an EndpointSlice to its Service.
pub const LABEL_SERVICE_NAME: &str = "kubernetes.io/service-name";

/// Meta pairs an endpoint instance may add on top of the base meta (ref kind,
/// ref name, node name, zone); reserved when capping annotation meta so that
/// no instance exceeds Consul's limit.
const ENDPOINT_META_PAIRS: usize = 4;

/// The Ingress port for a host without TLS.
const INGRESS_HTTP_PORT: u16 = 80;
/// The Ingress port for a host listed under `spec.tls`.
const INGRESS_HTTPS_PORT: u16 = 443;

/// Finds Nodes by name (the controller's Node cache).
pub trait NodeLookup {
    /// The Node called `name`, if known.
    fn node(&self, name: &str) -> Option<&Node>;
}

impl NodeLookup for BTreeMap<String, Node> {
    fn node(&self, name: &str) -> Option<&Node> {
        self.get(name)
    }
}

impl<S: std::hash::BuildHasher> NodeLookup for HashMap<String, Node, S> {
    fn node(&self, name: &str) -> Option<&Node> {
        self.get(name)
    }
}

/// A [`NodeLookup`] that knows no Nodes (for callers without NodePort
/// Services, and for tests).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoNodes;

impl NodeLookup for NoNodes {
    fn node(&self, _name: &str) -> Option<&Node> {
        None
    }
}

/// Why a Service has no registrations by decision (as opposed to having no
/// endpoints yet).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SkipReason {
    /// The Service object has no name.
    MissingName,
    /// `-to-consul` is off.
    ToConsulDisabled,
    /// The namespace is in the deny list.
    NamespaceDenied,
    /// The namespace is not in the allow list (and the list has no `*`).
    NamespaceNotAllowed,
    /// A ClusterIP Service while `-sync-clusterip-services` is off.
    ClusterIpSyncDisabled,
    /// Annotated `service-sync: false`.
    DisabledByAnnotation,
    /// `-k8s-default-sync` is off and the Service is not annotated true.
    NotEnabledByDefault,
    /// ExternalName Services without `spec.externalIPs` have nothing to
    /// register.
    ExternalName,
    /// The `service-name` annotation is empty, only blanks or too long
    /// (reported as a warning naming the annotation).
    InvalidServiceName,
    /// A `spec.type` mirra does not know.
    UnsupportedType(String),
}

/// Everything the mapping has to say about one Service.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServiceOutcome {
    /// The complete desired set of instances, sorted by service ID, with no
    /// duplicate IDs.
    pub registrations: Vec<Registration>,
    /// Bad annotation values (for a warning Event on the Service).
    pub warnings: Vec<Warning>,
    /// Set when the Service is deliberately not synced.
    pub skipped: Option<SkipReason>,
}

/// The Service types the mapping distinguishes. A missing `spec.type` is
/// ClusterIP, as the API server defaults it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    ClusterIp,
    NodePort,
    LoadBalancer,
    ExternalName,
}

/// Whether the Service's instances are registered at node addresses
/// (NodePort), so that a Node address change can change them.
pub fn uses_node_addresses(svc: &Service) -> bool {
    matches!(service_kind(svc), Ok(Kind::NodePort))
}

fn service_kind(svc: &Service) -> Result<Kind, String> {
    match svc.spec.as_ref().and_then(|s| s.type_.as_deref()) {
        None | Some("ClusterIP") => Ok(Kind::ClusterIp),
        Some("NodePort") => Ok(Kind::NodePort),
        Some("LoadBalancer") => Ok(Kind::LoadBalancer),
        Some("ExternalName") => Ok(Kind::ExternalName),
        Some(other) => Err(other.to_owned()),
    }
}

/// The sync decision for a Service, in consul-k8s's order: deny list, allow
/// list, ClusterIP flag, then the `service-sync` annotation (falling back to
/// `-k8s-default-sync` when absent or unparsable).
pub fn sync_decision(
    svc: &Service,
    parsed: &ParsedAnnotations,
    settings: &SyncSettings,
) -> Result<(), SkipReason> {
    if !settings.to_consul {
        return Err(SkipReason::ToConsulDisabled);
    }
    let namespace = svc.metadata.namespace.as_deref().unwrap_or_default();
    if settings.deny_k8s_namespaces.contains(namespace) {
        return Err(SkipReason::NamespaceDenied);
    }
    if !settings.namespace_allowed(namespace) {
        return Err(SkipReason::NamespaceNotAllowed);
    }
    if service_kind(svc) == Ok(Kind::ClusterIp) && !settings.sync_clusterip_services {
        return Err(SkipReason::ClusterIpSyncDisabled);
    }
    match parsed.sync {
        Some(true) => Ok(()),
        Some(false) => Err(SkipReason::DisabledByAnnotation),
        None if settings.k8s_default_sync => Ok(()),
        None => Err(SkipReason::NotEnabledByDefault),
    }
}

/// The Consul service name for a Service without a `service-name`
/// annotation: prefix + name, plus `-<namespace>` with the suffix flag.
pub fn default_consul_name(name: &str, namespace: &str, settings: &SyncSettings) -> String {
    let mut out = format!("{}{}", settings.consul_service_prefix, name);
    if settings.add_k8s_namespace_suffix {
        out.push('-');
        out.push_str(namespace);
    }
    out
}

/// Computes every registration one Service should have.
///
/// `slices` may contain EndpointSlices of other Services; only those in the
/// Service's namespace labelled with its name are used. `ingresses` may
/// contain any Ingresses; only those in the Service's namespace are used.
pub fn desired_for_service(
    svc: &Service,
    slices: &[&EndpointSlice],
    nodes: &dyn NodeLookup,
    ingresses: &[&Ingress],
    settings: &SyncSettings,
) -> ServiceOutcome {
    let Some(key) = ServiceKey::of_service(svc) else {
        return skipped(SkipReason::MissingName, Vec::new());
    };
    let empty = BTreeMap::new();
    let annotations = svc.metadata.annotations.as_ref().unwrap_or(&empty);
    let mut parsed = parse_annotations(annotations);

    if let Err(reason) = sync_decision(svc, &parsed, settings) {
        // Only the annotation that decided the skip is worth reporting; the
        // rest of a Service that is not synced does not matter.
        let decisive = matches!(
            reason,
            SkipReason::DisabledByAnnotation | SkipReason::NotEnabledByDefault
        );
        let warnings = if decisive {
            parsed
                .warnings
                .into_iter()
                .filter(|w| w.annotation == ANNOTATION_SERVICE_SYNC)
                .collect()
        } else {
            Vec::new()
        };
        return skipped(reason, warnings);
    }
    if parsed.name_invalid {
        return skipped(SkipReason::InvalidServiceName, parsed.warnings);
    }
    let spec = svc.spec.as_ref();
    let external_ips = spec.and_then(|s| s.external_ips.as_deref()).unwrap_or(&[]);
    // consul-k8s: external IPs become the instances "for any type of
    // service", ExternalName included.
    let kind = match service_kind(svc) {
        Ok(Kind::ExternalName) if external_ips.iter().all(String::is_empty) => {
            return skipped(SkipReason::ExternalName, parsed.warnings);
        }
        Ok(k) => k,
        Err(other) => return skipped(SkipReason::UnsupportedType(other), parsed.warnings),
    };

    let base = Base::build(svc, &key, kind, &mut parsed, settings);
    let mut acc = Accumulator::default();

    if !external_ips.is_empty() {
        for ip in external_ips.iter().filter(|ip| !ip.is_empty()) {
            acc.push(base.fixed_instance(ip, parsed.weight));
        }
    } else {
        match kind {
            Kind::LoadBalancer if !settings.sync_lb_services_endpoints => {
                let lb = svc
                    .status
                    .as_ref()
                    .and_then(|s| s.load_balancer.as_ref())
                    .and_then(|l| l.ingress.as_deref())
                    .unwrap_or(&[]);
                for entry in lb {
                    let addr = entry
                        .ip
                        .as_deref()
                        .filter(|ip| !ip.is_empty())
                        .or(entry.hostname.as_deref())
                        .unwrap_or_default();
                    if !addr.is_empty() {
                        acc.push(base.fixed_instance(addr, parsed.weight));
                    }
                }
            }
            Kind::LoadBalancer => {
                endpoint_instances(&base, &key, slices, ingresses, false, settings, &mut acc);
            }
            Kind::ClusterIp => {
                endpoint_instances(&base, &key, slices, ingresses, true, settings, &mut acc);
            }
            Kind::NodePort => node_port_instances(&base, &key, slices, nodes, settings, &mut acc),
            Kind::ExternalName => {}
        }
    }

    ServiceOutcome {
        registrations: acc.finish(),
        warnings: parsed.warnings,
        skipped: None,
    }
}

fn skipped(reason: SkipReason, warnings: Vec<Warning>) -> ServiceOutcome {
    ServiceOutcome {
        registrations: Vec::new(),
        warnings,
        skipped: Some(reason),
    }
}

/// Collects instances, keeping the first one for each service ID. Inputs are
/// walked in a fixed order, so "first" is deterministic.
#[derive(Default)]
struct Accumulator {
    by_id: BTreeMap<String, Registration>,
}

impl Accumulator {
    fn push(&mut self, reg: Registration) {
        self.by_id.entry(reg.id.clone()).or_insert(reg);
    }

    fn contains(&self, id: &str) -> bool {
        self.by_id.contains_key(id)
    }

    fn finish(self) -> Vec<Registration> {
        self.by_id.into_values().collect()
    }
}

/// The parts shared by every instance of one Service.
struct Base {
    key: ServiceKey,
    name: String,
    tags: Vec<String>,
    meta: BTreeMap<String, String>,
    /// The single-layout port for instances not built from an endpoint.
    port: u16,
    /// The multi-layout list for instances not built from an endpoint.
    ports: Vec<ServicePort>,
    override_port: Option<PortOverride>,
    layout: PortLayout,
    /// The Consul namespace of every instance (`None` without namespaces).
    namespace: Option<String>,
}

fn to_port(n: i32) -> u16 {
    // Out-of-range numbers only come from malformed objects; 0 is how Consul
    // spells "no port".
    u16::try_from(n).unwrap_or(0)
}

fn port_name(name: &str, one_based_index: usize) -> String {
    if name.trim().is_empty() {
        format!("port{one_based_index}")
    } else {
        name.to_owned()
    }
}

/// Marks the first entry as the default when none is.
fn ensure_default(ports: &mut [ServicePort]) {
    if !ports.iter().any(|p| p.default)
        && let Some(first) = ports.first_mut()
    {
        first.default = true;
    }
}

impl Base {
    fn build(
        svc: &Service,
        key: &ServiceKey,
        kind: Kind,
        parsed: &mut ParsedAnnotations,
        settings: &SyncSettings,
    ) -> Self {
        let name = parsed
            .name
            .clone()
            .unwrap_or_else(|| default_consul_name(&key.name, &key.namespace, settings));
        let mut tags = vec![settings.consul_k8s_tag.clone()];
        tags.extend(parsed.tags.iter().cloned());

        let svc_ports = svc
            .spec
            .as_ref()
            .and_then(|s| s.ports.as_deref())
            .unwrap_or(&[]);
        let is_node_port = kind == Kind::NodePort;
        let exposed = |p: &k8s_openapi::api::core::v1::ServicePort| match p.node_port {
            Some(np) if is_node_port && np > 0 => to_port(np),
            _ => to_port(p.port),
        };

        let mut meta = BTreeMap::from([
            (
                META_EXTERNAL_SOURCE.to_owned(),
                EXTERNAL_SOURCE_KUBERNETES.to_owned(),
            ),
            (META_K8S_NAMESPACE.to_owned(), key.namespace.clone()),
        ]);

        // consul-k8s only looks at the port annotation when the Service has
        // ports; keep that, but say so.
        let override_port = if svc_ports.is_empty() {
            if let Some(ov) = parsed.port.take() {
                let value = match &ov {
                    PortOverride::Number(n) => n.to_string(),
                    PortOverride::Name(n) => n.clone(),
                };
                parsed.warnings.push(Warning::new(
                    ANNOTATION_SERVICE_PORT,
                    &value,
                    "the Service has no ports; annotation ignored",
                ));
            }
            None
        } else {
            match parsed.port.take() {
                // consul-k8s would register the first Service port here,
                // which for endpoint instances is rarely the port the pods
                // listen on; a bad value is ignored like every other one.
                Some(PortOverride::Name(n))
                    if !svc_ports
                        .iter()
                        .any(|p| p.name.as_deref().unwrap_or("") == n) =>
                {
                    parsed.warnings.push(Warning::new(
                        ANNOTATION_SERVICE_PORT,
                        &n,
                        "no port of the Service has this name; annotation ignored",
                    ));
                    None
                }
                other => other,
            }
        };

        let mut port = 0;
        let mut ports = Vec::new();
        if !svc_ports.is_empty() {
            match settings.port_layout {
                PortLayout::Single => {
                    match &override_port {
                        Some(PortOverride::Number(n)) => port = *n,
                        Some(PortOverride::Name(n)) => {
                            if let Some(p) = svc_ports
                                .iter()
                                .find(|p| p.name.as_deref().unwrap_or("") == n)
                            {
                                port = exposed(p);
                            }
                        }
                        None => {}
                    }
                    if port == 0 {
                        port = if is_node_port {
                            svc_ports
                                .iter()
                                .filter_map(|p| p.node_port)
                                .find(|np| *np > 0)
                                .map(to_port)
                                .unwrap_or(0)
                        } else {
                            svc_ports.first().map(|p| to_port(p.port)).unwrap_or(0)
                        };
                    }
                }
                PortLayout::Multi => {
                    let mut default = None;
                    if let Some(PortOverride::Number(n)) = &override_port {
                        default = Some(ServicePort {
                            name: "default".to_owned(),
                            port: *n,
                            default: true,
                        });
                    }
                    for (idx, p) in svc_ports.iter().enumerate() {
                        let pname = p.name.as_deref().unwrap_or("");
                        let entry = ServicePort {
                            name: port_name(pname, idx + 1),
                            port: exposed(p),
                            default: false,
                        };
                        match &override_port {
                            Some(PortOverride::Name(n)) if n == pname => {
                                default = Some(ServicePort {
                                    default: true,
                                    ..entry
                                });
                            }
                            _ => ports.push(entry),
                        }
                    }
                    if let Some(d) = default.filter(|d| d.port > 0) {
                        ports.insert(0, d);
                    }
                    ensure_default(&mut ports);
                }
            }
            for p in svc_ports {
                meta.insert(
                    format!("{META_PORT_PREFIX}{}", p.name.as_deref().unwrap_or("")),
                    p.port.to_string(),
                );
            }
        }

        // Annotation meta goes last (it may replace a port-<name> entry, as
        // in consul-k8s), capped so that no instance exceeds Consul's limit.
        let room = MAX_META_PAIRS.saturating_sub(meta.len() + ENDPOINT_META_PAIRS);
        let mut added = 0;
        for (k, v) in &parsed.meta {
            let replaces = meta.contains_key(k);
            if !replaces && added >= room {
                parsed.warnings.push(Warning::new(
                    &format!("{}{k}", crate::annotations::ANNOTATION_SERVICE_META_PREFIX),
                    v,
                    format!("more than {MAX_META_PAIRS} meta pairs, which Consul refuses; ignored"),
                ));
                continue;
            }
            if !replaces {
                added += 1;
            }
            meta.insert(k.clone(), v.clone());
        }

        Self {
            key: key.clone(),
            name,
            tags,
            meta,
            port,
            ports,
            override_port,
            layout: settings.port_layout,
            namespace: settings.consul_namespaces.for_k8s_namespace(&key.namespace),
        }
    }

    /// An instance at an external IP or load balancer address.
    fn fixed_instance(&self, address: &str, weight: Option<u32>) -> Registration {
        Registration {
            key: self.key.clone(),
            id: service_id(&self.name, address),
            name: self.name.clone(),
            tags: self.tags.clone(),
            address: address.to_owned(),
            port: self.port,
            ports: self.ports.clone(),
            meta: self.meta.clone(),
            weights: weight
                .map(|w| Weights {
                    passing: w,
                    warning: 0,
                })
                .unwrap_or_default(),
            check: None,
            namespace: self.namespace.clone(),
        }
    }

    /// The base meta plus what an endpoint says about where it runs.
    fn endpoint_meta(&self, ep: &Endpoint) -> BTreeMap<String, String> {
        let mut meta = self.meta.clone();
        if let Some(target) = &ep.target_ref {
            meta.insert(
                META_K8S_REF_NAME.to_owned(),
                target.name.clone().unwrap_or_default(),
            );
            meta.insert(
                META_K8S_REF_KIND.to_owned(),
                target.kind.clone().unwrap_or_default(),
            );
        }
        if let Some(node) = &ep.node_name {
            meta.insert(META_K8S_NODE_NAME.to_owned(), node.clone());
        }
        if let Some(zone) = &ep.zone {
            meta.insert(META_K8S_TOPOLOGY_ZONE.to_owned(), zone.clone());
        }
        meta
    }

    /// The single-layout port of endpoint instances from one slice: the
    /// slice port named by the annotation, else (without a numeric
    /// annotation) the slice's first port, else the base port.
    fn slice_port(&self, slice: &EndpointSlice) -> u16 {
        let slice_ports = slice.ports.as_deref().unwrap_or(&[]);
        match &self.override_port {
            Some(PortOverride::Name(n)) => slice_ports
                .iter()
                .find(|p| p.name.as_deref().unwrap_or("") == n)
                .and_then(|p| p.port)
                .map(to_port)
                .unwrap_or(self.port),
            Some(PortOverride::Number(_)) => self.port,
            None => slice_ports
                .first()
                .and_then(|p| p.port)
                .map(to_port)
                .unwrap_or(self.port),
        }
    }

    /// The multi-layout list of endpoint instances from one slice.
    fn slice_ports(&self, slice: &EndpointSlice) -> Vec<ServicePort> {
        let mut out = Vec::new();
        if let Some(PortOverride::Number(n)) = &self.override_port {
            out.push(ServicePort {
                name: "default".to_owned(),
                port: *n,
                default: true,
            });
        }
        for (idx, p) in slice.ports.as_deref().unwrap_or(&[]).iter().enumerate() {
            let Some(number) = p.port else { continue };
            let pname = p.name.as_deref().unwrap_or("");
            let entry = ServicePort {
                name: port_name(pname, idx + 1),
                port: to_port(number),
                default: false,
            };
            match &self.override_port {
                Some(PortOverride::Name(n)) if n == pname => out.insert(
                    0,
                    ServicePort {
                        default: true,
                        ..entry
                    },
                ),
                _ => out.push(entry),
            }
        }
        ensure_default(&mut out);
        out
    }
}

/// The slices that belong to the Service, in name order (so that the first
/// occurrence of a duplicated address does not depend on input order).
fn own_slices<'a>(key: &ServiceKey, slices: &[&'a EndpointSlice]) -> Vec<&'a EndpointSlice> {
    let mut own: Vec<&EndpointSlice> = slices
        .iter()
        .copied()
        .filter(|s| belongs_to(s, key))
        .collect();
    own.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    own
}

fn belongs_to(slice: &EndpointSlice, key: &ServiceKey) -> bool {
    let ns_ok = slice
        .metadata
        .namespace
        .as_deref()
        .is_none_or(|ns| ns == key.namespace);
    let label_ok = slice
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(LABEL_SERVICE_NAME))
        .is_some_and(|n| *n == key.name);
    ns_ok && label_ok
}

/// Terminating endpoints are never registered: they are on their way out
/// and consul-k8s keeping them is a known complaint.
fn is_terminating(ep: &Endpoint) -> bool {
    ep.conditions
        .as_ref()
        .and_then(|c| c.terminating)
        .unwrap_or(false)
}

/// Kubernetes' rule: a missing `ready` condition means ready.
fn readiness(ep: &Endpoint) -> CheckStatus {
    match ep.conditions.as_ref().and_then(|c| c.ready) {
        Some(false) => CheckStatus::Critical,
        Some(true) | None => CheckStatus::Passing,
    }
}

/// ClusterIP (and LoadBalancer with `-sync-lb-services-endpoints`): one
/// instance per unique endpoint address across all slices, with a readiness
/// check; collapsed to the Ingress host when ingress sync applies.
fn endpoint_instances(
    base: &Base,
    key: &ServiceKey,
    slices: &[&EndpointSlice],
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
        for ep in &slice.endpoints {
            if is_terminating(ep) {
                continue;
            }
            for raw in &ep.addresses {
                let (address, port, ports) = match &ingress {
                    Some((host, ingress_port)) => (host.clone(), *ingress_port, Vec::new()),
                    None => {
                        let address = if raw.is_empty() && use_hostname {
                            ep.hostname.clone().unwrap_or_default()
                        } else {
                            raw.clone()
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
fn node_port_instances(
    base: &Base,
    key: &ServiceKey,
    slices: &[&EndpointSlice],
    nodes: &dyn NodeLookup,
    settings: &SyncSettings,
    acc: &mut Accumulator,
) {
    for slice in own_slices(key, slices) {
        for ep in &slice.endpoints {
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
fn root_backend(rule: &k8s_openapi::api::networking::v1::IngressRule) -> Option<String> {
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
