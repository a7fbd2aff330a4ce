//! The data mirra writes into Consul: registrations, checks, the synthetic
//! node, and the key of the Kubernetes Service they come from.
//!
//! These are mirra's own types; the Consul client crate has its own wire
//! types and the controller converts. This module must NOT depend on that
//! crate or on any I/O.

use std::collections::BTreeMap;
use std::fmt;

use sha1::{Digest, Sha1};

/// Meta key marking an instance as synced from Kubernetes (half of the
/// ownership mark, with the k8s tag).
pub const META_EXTERNAL_SOURCE: &str = "external-source";
/// The value of [`META_EXTERNAL_SOURCE`].
pub const EXTERNAL_SOURCE_KUBERNETES: &str = "kubernetes";
/// Meta key holding the Kubernetes namespace of the Service.
pub const META_K8S_NAMESPACE: &str = "external-k8s-ns";
/// Meta key holding the kind of the endpoint's target (usually `Pod`).
pub const META_K8S_REF_KIND: &str = "external-k8s-ref-kind";
/// Meta key holding the name of the endpoint's target.
pub const META_K8S_REF_NAME: &str = "external-k8s-ref-name";
/// Meta key holding the Kubernetes node of the endpoint.
pub const META_K8S_NODE_NAME: &str = "external-k8s-node-name";
/// Meta key holding the topology zone of the endpoint.
pub const META_K8S_TOPOLOGY_ZONE: &str = "external-k8s-topology-zone";
/// Prefix of the per-port meta keys: `port-<name>=<port>`.
pub const META_PORT_PREFIX: &str = "port-";

/// Name of the readiness check attached to endpoint instances.
pub const READINESS_CHECK_NAME: &str = "Kubernetes Readiness Check";
/// Type of the readiness check attached to endpoint instances.
pub const READINESS_CHECK_TYPE: &str = "kubernetes-readiness";
/// Output of a passing readiness check.
pub const READINESS_OUTPUT_PASSING: &str = "Kubernetes health checks passing";
/// Output of a critical readiness check.
pub const READINESS_OUTPUT_CRITICAL: &str = "Kubernetes health checks failing";

/// How many hex digits of the sha1 go into a service ID. consul-k8s takes 12;
/// changing it would re-register every instance on adoption.
pub const SERVICE_ID_HASH_HEX_DIGITS: usize = 12;

/// A Kubernetes Service, by namespace and name: the unit of work.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServiceKey {
    /// The Service's namespace.
    pub namespace: String,
    /// The Service's name.
    pub name: String,
}

impl ServiceKey {
    /// Builds a key.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    /// The key of a Service object; `None` when it has no name.
    pub fn of_service(svc: &k8s_openapi::api::core::v1::Service) -> Option<Self> {
        let name = svc.metadata.name.as_deref().filter(|n| !n.is_empty())?;
        Some(Self::new(
            svc.metadata.namespace.clone().unwrap_or_default(),
            name,
        ))
    }
}

impl fmt::Display for ServiceKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// The node all instances are registered on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncNode {
    /// `-consul-node-name`.
    pub name: String,
    /// The node address (`127.0.0.1` by default).
    pub address: String,
    /// Node meta: `external-source=kubernetes`.
    pub meta: BTreeMap<String, String>,
}

impl SyncNode {
    /// The node described by the settings.
    pub fn from_settings(settings: &crate::SyncSettings) -> Self {
        Self {
            name: settings.consul_node_name.clone(),
            address: settings.consul_node_address.clone(),
            meta: BTreeMap::from([(
                META_EXTERNAL_SOURCE.to_owned(),
                EXTERNAL_SOURCE_KUBERNETES.to_owned(),
            )]),
        }
    }
}

/// DNS weights of an instance, as Consul stores them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Weights {
    /// Weight while the instance's checks pass.
    pub passing: u32,
    /// Weight while a check is in warning.
    pub warning: u32,
}

impl Default for Weights {
    /// What Consul stores when a registration carries no (or invalid) weights.
    fn default() -> Self {
        Self {
            passing: 1,
            warning: 1,
        }
    }
}

/// One entry of the multi-port `Ports` list.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ServicePort {
    /// The port's name (`port<N>` for an unnamed port, `default` for an
    /// annotated number).
    #[serde(default)]
    pub name: String,
    /// The port number.
    #[serde(default)]
    pub port: u16,
    /// Whether this is the instance's default port.
    #[serde(default)]
    pub default: bool,
}

/// Status of a readiness check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CheckStatus {
    /// The endpoint is ready.
    Passing,
    /// The endpoint is not ready.
    Critical,
}

impl CheckStatus {
    /// Consul's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Passing => "passing",
            Self::Critical => "critical",
        }
    }

    /// The check output consul-k8s writes for this status.
    pub fn output(self) -> &'static str {
        match self {
            Self::Passing => READINESS_OUTPUT_PASSING,
            Self::Critical => READINESS_OUTPUT_CRITICAL,
        }
    }
}

/// The readiness check of an endpoint instance. `Notes` is always empty and
/// `Output` follows the status, as consul-k8s writes them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadinessCheck {
    /// `<k8s-namespace>/<serviceID>`.
    pub check_id: String,
    /// The service instance the check belongs to.
    pub service_id: String,
    /// Passing when the endpoint is ready.
    pub status: CheckStatus,
}

impl ReadinessCheck {
    /// The check name ([`READINESS_CHECK_NAME`]).
    pub fn name(&self) -> &'static str {
        READINESS_CHECK_NAME
    }

    /// The check type ([`READINESS_CHECK_TYPE`]).
    pub fn check_type(&self) -> &'static str {
        READINESS_CHECK_TYPE
    }

    /// The check output for its status.
    pub fn output(&self) -> &'static str {
        self.status.output()
    }
}

/// One service instance mirra wants in Consul, plus its readiness check.
///
/// Every field is one mirra owns; `EnableTagOverride` is always false, `Kind`
/// always empty and `TaggedAddresses` never set, so they are not stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Registration {
    /// The Kubernetes Service this instance comes from.
    pub key: ServiceKey,
    /// The service ID, see [`service_id`].
    pub id: String,
    /// The Consul service name.
    pub name: String,
    /// `[k8s-tag, annotation tags...]`.
    pub tags: Vec<String>,
    /// The instance address.
    pub address: String,
    /// The single port (0 in the multi-port layout, except for Ingress
    /// instances).
    pub port: u16,
    /// The multi-port list (empty in the single-port layout).
    pub ports: Vec<ServicePort>,
    /// Service meta.
    pub meta: BTreeMap<String, String>,
    /// Weights as Consul will store them.
    pub weights: Weights,
    /// The readiness check (endpoint instances only).
    pub check: Option<ReadinessCheck>,
    /// The Consul Enterprise namespace it goes into; `None` without
    /// namespaces (then nothing about namespaces is sent).
    pub namespace: Option<String>,
}

/// The service ID consul-k8s gives an instance:
/// `<name>-<first 12 hex digits of sha1("<name>-<address>")>`.
///
/// For NodePort instances `address` is the endpoint (pod) address, not the
/// node address the instance is registered at.
pub fn service_id(name: &str, address: &str) -> String {
    let mut hasher = Sha1::new();
    hasher.update(name.as_bytes());
    hasher.update(b"-");
    hasher.update(address.as_bytes());
    let digest = hasher.finalize();
    let mut hex = String::with_capacity(SERVICE_ID_HASH_HEX_DIGITS);
    for byte in digest.iter() {
        if hex.len() >= SERVICE_ID_HASH_HEX_DIGITS {
            break;
        }
        hex.push_str(&format!("{byte:02x}"));
    }
    hex.truncate(SERVICE_ID_HASH_HEX_DIGITS);
    format!("{name}-{hex}")
}

/// The check ID consul-k8s gives the readiness check of an instance.
pub fn readiness_check_id(k8s_namespace: &str, service_id: &str) -> String {
    format!("{k8s_namespace}/{service_id}")
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn service_id_known_vectors() {
        // Computed independently: `printf 'web-10.0.0.1' | sha1sum` gives
        // b9fe4d6d03e0a48437d8805ed700e85cbffac77b.
        assert_eq!(service_id("web", "10.0.0.1"), "web-b9fe4d6d03e0");
        // `printf 'frontend-10.244.1.7' | sha1sum` gives
        // da159eecc23ee52f19e1264a53deb91221a8bba6.
        assert_eq!(
            service_id("frontend", "10.244.1.7"),
            "frontend-da159eecc23e"
        );
    }

    #[test]
    fn service_id_shape() {
        let id = service_id("my-svc", "1.2.3.4");
        let (name, hash) = id.rsplit_once('-').unwrap();
        assert_eq!(name, "my-svc");
        assert_eq!(hash.len(), 12);
        assert!(
            hash.bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
        assert_ne!(service_id("my-svc", "1.2.3.5"), id);
    }

    #[test]
    fn check_id_format() {
        assert_eq!(readiness_check_id("ns", "web-abc"), "ns/web-abc");
    }

    #[test]
    fn key_display_and_of_service() {
        let mut svc = k8s_openapi::api::core::v1::Service::default();
        assert_eq!(ServiceKey::of_service(&svc), None);
        svc.metadata.name = Some("web".into());
        svc.metadata.namespace = Some("prod".into());
        let key = ServiceKey::of_service(&svc).unwrap();
        assert_eq!(key.to_string(), "prod/web");
    }
}
