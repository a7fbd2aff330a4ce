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
use k8s_openapi::api::discovery::v1::EndpointSlice;
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

mod addresses;
mod ingress;
mod input;
mod instance;

pub use addresses::*;
pub use ingress::*;
pub use input::*;
use instance::*;

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
pub fn uses_node_addresses(svc: &ServiceInput) -> bool {
    matches!(service_kind(svc), Ok(Kind::NodePort))
}

fn service_kind(svc: &ServiceInput) -> Result<Kind, String> {
    match svc.type_.as_deref() {
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
    svc: &ServiceInput,
    parsed: &ParsedAnnotations,
    settings: &SyncSettings,
) -> Result<(), SkipReason> {
    if !settings.to_consul {
        return Err(SkipReason::ToConsulDisabled);
    }
    let namespace = svc.namespace.as_str();
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
/// The same as [`desired_for_input`] over the objects' projections.
pub fn desired_for_service(
    svc: &Service,
    slices: &[&EndpointSlice],
    nodes: &dyn NodeLookup,
    ingresses: &[&Ingress],
    settings: &SyncSettings,
) -> ServiceOutcome {
    let svc = ServiceInput::from(svc);
    let slices: Vec<SliceInput> = slices.iter().map(|s| SliceInput::from(*s)).collect();
    let slices: Vec<&SliceInput> = slices.iter().collect();
    desired_for_input(&svc, &slices, nodes, ingresses, settings)
}

/// Computes every registration one Service should have, from the parts of
/// the Service and its EndpointSlices the mapping reads (what the
/// controller caches).
pub fn desired_for_input(
    svc: &ServiceInput,
    slices: &[&SliceInput],
    nodes: &dyn NodeLookup,
    ingresses: &[&Ingress],
    settings: &SyncSettings,
) -> ServiceOutcome {
    let Some(key) = svc.key() else {
        return skipped(SkipReason::MissingName, Vec::new());
    };
    let mut parsed = parse_annotations(&svc.annotations);

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
    let external_ips = svc.external_ips.as_slice();
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
                for entry in &svc.load_balancer {
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
