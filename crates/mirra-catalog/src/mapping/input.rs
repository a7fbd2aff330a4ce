//! The parts of a Service and of an EndpointSlice that the mapping reads,
//! and nothing else.
//!
//! A controller at 10,000 Services keeps every Service and EndpointSlice
//! in memory between events. As typed objects they cost several kilobytes
//! each (an `Endpoint` alone is about 300 bytes of `Option`s before its
//! strings, and the metadata carries labels, owner references and
//! timestamps nobody here reads); the projection keeps what
//! [`super::desired_for_input`] looks at, so the cache costs what the
//! planner compares. The mapping takes only these types, so a field it
//! starts to read must be added here first: the compiler keeps the two in
//! step.
//!
//! Projections are made once per watch event (`From<Service>`,
//! `From<EndpointSlice>`), moving the strings out of the decoded object.
//! This module must NOT interpret what it keeps (that is the mapping's
//! job): it only drops what the mapping never reads.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointSlice};

use crate::annotations::ANNOTATION_PREFIX;
use crate::mapping::LABEL_SERVICE_NAME;
use crate::model::ServiceKey;

/// What the mapping reads of a Service.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServiceInput {
    /// `metadata.name` (empty when absent: such a Service is skipped).
    pub name: String,
    /// `metadata.namespace` (empty when absent).
    pub namespace: String,
    /// `metadata.uid`, for the Events mirra writes about the Service.
    pub uid: Option<String>,
    /// `metadata.resourceVersion`: the cache compares it, Events name it.
    pub resource_version: Option<String>,
    /// The annotations under `consul.hashicorp.com/`, the only ones the
    /// mapping reads.
    pub annotations: BTreeMap<String, String>,
    /// `spec.type` as written (`None`: ClusterIP, as the server defaults it).
    pub type_: Option<String>,
    /// `spec.ports`.
    pub ports: Vec<ServicePortInput>,
    /// `spec.externalIPs`.
    pub external_ips: Vec<String>,
    /// `status.loadBalancer.ingress`.
    pub load_balancer: Vec<LoadBalancerInput>,
}

/// What the mapping reads of one `spec.ports` entry.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServicePortInput {
    /// `name`.
    pub name: Option<String>,
    /// `port`.
    pub port: i32,
    /// `nodePort`.
    pub node_port: Option<i32>,
}

/// What the mapping reads of one `status.loadBalancer.ingress` entry.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadBalancerInput {
    /// `ip`.
    pub ip: Option<String>,
    /// `hostname`.
    pub hostname: Option<String>,
}

impl ServiceInput {
    /// The Service's key, `None` when it has no name.
    pub fn key(&self) -> Option<ServiceKey> {
        (!self.name.is_empty()).then(|| ServiceKey::new(self.namespace.clone(), self.name.clone()))
    }
}

impl From<Service> for ServiceInput {
    fn from(svc: Service) -> Self {
        let meta = svc.metadata;
        let annotations = meta
            .annotations
            .unwrap_or_default()
            .into_iter()
            .filter(|(k, _)| k.starts_with(ANNOTATION_PREFIX))
            .collect();
        let spec = svc.spec.unwrap_or_default();
        let load_balancer = svc
            .status
            .and_then(|s| s.load_balancer)
            .and_then(|l| l.ingress)
            .unwrap_or_default()
            .into_iter()
            .map(|i| LoadBalancerInput {
                ip: i.ip,
                hostname: i.hostname,
            })
            .collect();
        Self {
            name: meta.name.unwrap_or_default(),
            namespace: meta.namespace.unwrap_or_default(),
            uid: meta.uid,
            resource_version: meta.resource_version,
            annotations,
            type_: spec.type_,
            ports: spec
                .ports
                .unwrap_or_default()
                .into_iter()
                .map(|p| ServicePortInput {
                    name: p.name,
                    port: p.port,
                    node_port: p.node_port,
                })
                .collect(),
            external_ips: spec.external_ips.unwrap_or_default(),
            load_balancer,
        }
    }
}

impl From<&Service> for ServiceInput {
    fn from(svc: &Service) -> Self {
        svc.clone().into()
    }
}

/// What the mapping reads of an EndpointSlice. Endpoints are the bulk of a
/// cluster's objects, so their strings are boxed (16 bytes each instead of
/// 24) and their lists exact in length.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SliceInput {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace`.
    pub namespace: Option<String>,
    /// `metadata.resourceVersion`: the cache compares it.
    pub resource_version: Option<String>,
    /// The `kubernetes.io/service-name` label: the Service it belongs to.
    pub service_name: Option<String>,
    /// `ports`.
    pub ports: Box<[SlicePortInput]>,
    /// `endpoints`.
    pub endpoints: Box<[EndpointInput]>,
}

/// What the mapping reads of one EndpointSlice port.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SlicePortInput {
    /// `name`.
    pub name: Option<Box<str>>,
    /// `port`.
    pub port: Option<i32>,
}

/// What the mapping reads of one endpoint.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EndpointInput {
    /// `addresses`.
    pub addresses: Box<[Box<str>]>,
    /// `hostname`.
    pub hostname: Option<Box<str>>,
    /// `nodeName`.
    pub node_name: Option<Box<str>>,
    /// `zone`.
    pub zone: Option<Box<str>>,
    /// `targetRef`'s kind and name, when it has a `targetRef`.
    pub target_ref: Option<TargetRefInput>,
    /// `conditions.ready`.
    pub ready: Option<bool>,
    /// `conditions.terminating`.
    pub terminating: Option<bool>,
}

/// What the mapping reads of an endpoint's `targetRef`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TargetRefInput {
    /// `kind`.
    pub kind: Option<Box<str>>,
    /// `name`.
    pub name: Option<Box<str>>,
}

impl SliceInput {
    /// The Service it belongs to (its namespace and its
    /// `kubernetes.io/service-name` label); `None` without the label.
    pub fn key(&self) -> Option<ServiceKey> {
        let name = self.service_name.as_deref().filter(|n| !n.is_empty())?;
        Some(ServiceKey::new(
            self.namespace.clone().unwrap_or_default(),
            name,
        ))
    }
}

fn boxed(s: Option<String>) -> Option<Box<str>> {
    s.map(String::into_boxed_str)
}

impl From<Endpoint> for EndpointInput {
    fn from(ep: Endpoint) -> Self {
        let conditions = ep.conditions.unwrap_or_default();
        Self {
            addresses: ep
                .addresses
                .into_iter()
                .map(String::into_boxed_str)
                .collect(),
            hostname: boxed(ep.hostname),
            node_name: boxed(ep.node_name),
            zone: boxed(ep.zone),
            target_ref: ep.target_ref.map(|t| TargetRefInput {
                kind: boxed(t.kind),
                name: boxed(t.name),
            }),
            ready: conditions.ready,
            terminating: conditions.terminating,
        }
    }
}

impl From<EndpointSlice> for SliceInput {
    fn from(slice: EndpointSlice) -> Self {
        let meta = slice.metadata;
        let service_name = meta.labels.and_then(|mut l| l.remove(LABEL_SERVICE_NAME));
        Self {
            name: meta.name.unwrap_or_default(),
            namespace: meta.namespace,
            resource_version: meta.resource_version,
            service_name,
            ports: slice
                .ports
                .unwrap_or_default()
                .into_iter()
                .map(|p| SlicePortInput {
                    name: boxed(p.name),
                    port: p.port,
                })
                .collect(),
            endpoints: slice.endpoints.into_iter().map(Into::into).collect(),
        }
    }
}

impl From<&EndpointSlice> for SliceInput {
    fn from(slice: &EndpointSlice) -> Self {
        slice.clone().into()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use k8s_openapi::api::core::v1::{
        LoadBalancerIngress, LoadBalancerStatus, ObjectReference, ServicePort, ServiceSpec,
        ServiceStatus,
    };
    use k8s_openapi::api::discovery::v1::{EndpointConditions, EndpointPort};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    #[test]
    fn a_service_keeps_what_the_mapping_reads_and_only_consul_annotations() {
        let svc = Service {
            metadata: ObjectMeta {
                name: Some("web".into()),
                namespace: Some("prod".into()),
                uid: Some("u-1".into()),
                resource_version: Some("7".into()),
                labels: Some(BTreeMap::from([("app".into(), "web".into())])),
                annotations: Some(BTreeMap::from([
                    ("consul.hashicorp.com/service-tags".into(), "a,b".into()),
                    (
                        "kubectl.kubernetes.io/last-applied-configuration".into(),
                        "{}".into(),
                    ),
                    ("consul.hashicorp.com".into(), "no slash, not ours".into()),
                ])),
                ..ObjectMeta::default()
            },
            spec: Some(ServiceSpec {
                type_: Some("LoadBalancer".into()),
                cluster_ip: Some("10.96.0.10".into()),
                ports: Some(vec![ServicePort {
                    name: Some("http".into()),
                    port: 80,
                    node_port: Some(30080),
                    protocol: Some("TCP".into()),
                    ..ServicePort::default()
                }]),
                external_ips: Some(vec!["1.2.3.4".into()]),
                ..ServiceSpec::default()
            }),
            status: Some(ServiceStatus {
                load_balancer: Some(LoadBalancerStatus {
                    ingress: Some(vec![LoadBalancerIngress {
                        ip: Some("5.6.7.8".into()),
                        hostname: Some("lb.example".into()),
                        ..LoadBalancerIngress::default()
                    }]),
                }),
                ..ServiceStatus::default()
            }),
        };
        let input = ServiceInput::from(&svc);
        assert_eq!(input.key(), Some(ServiceKey::new("prod", "web")));
        assert_eq!(input.uid.as_deref(), Some("u-1"));
        assert_eq!(input.resource_version.as_deref(), Some("7"));
        assert_eq!(
            input.annotations,
            BTreeMap::from([("consul.hashicorp.com/service-tags".into(), "a,b".into())])
        );
        assert_eq!(input.type_.as_deref(), Some("LoadBalancer"));
        assert_eq!(
            input.ports,
            vec![ServicePortInput {
                name: Some("http".into()),
                port: 80,
                node_port: Some(30080),
            }]
        );
        assert_eq!(input.external_ips, vec!["1.2.3.4".to_owned()]);
        assert_eq!(
            input.load_balancer,
            vec![LoadBalancerInput {
                ip: Some("5.6.7.8".into()),
                hostname: Some("lb.example".into()),
            }]
        );
    }

    #[test]
    fn a_nameless_or_empty_service_has_no_key() {
        assert_eq!(ServiceInput::from(Service::default()).key(), None);
        let mut svc = Service::default();
        svc.metadata.name = Some(String::new());
        assert_eq!(ServiceInput::from(svc).key(), None);
    }

    #[test]
    fn a_slice_keeps_its_service_label_ports_and_endpoints() {
        let slice = EndpointSlice {
            metadata: ObjectMeta {
                name: Some("web-abc".into()),
                namespace: Some("prod".into()),
                resource_version: Some("9".into()),
                labels: Some(BTreeMap::from([
                    (LABEL_SERVICE_NAME.into(), "web".into()),
                    ("endpointslice.kubernetes.io/managed-by".into(), "x".into()),
                ])),
                ..ObjectMeta::default()
            },
            address_type: "IPv4".into(),
            ports: Some(vec![EndpointPort {
                name: Some("http".into()),
                port: Some(8080),
                protocol: Some("TCP".into()),
                ..EndpointPort::default()
            }]),
            endpoints: vec![Endpoint {
                addresses: vec!["10.0.0.1".into()],
                hostname: Some("h".into()),
                node_name: Some("n1".into()),
                zone: Some("z1".into()),
                target_ref: Some(ObjectReference {
                    kind: Some("Pod".into()),
                    name: Some("web-1".into()),
                    uid: Some("pod-uid".into()),
                    ..ObjectReference::default()
                }),
                conditions: Some(EndpointConditions {
                    ready: Some(false),
                    serving: Some(true),
                    terminating: Some(true),
                }),
                ..Endpoint::default()
            }],
        };
        let input = SliceInput::from(&slice);
        assert_eq!(input.key(), Some(ServiceKey::new("prod", "web")));
        assert_eq!(input.name, "web-abc");
        assert_eq!(input.resource_version.as_deref(), Some("9"));
        assert_eq!(
            &*input.ports,
            &[SlicePortInput {
                name: Some("http".into()),
                port: Some(8080),
            }]
        );
        assert_eq!(
            &*input.endpoints,
            &[EndpointInput {
                addresses: vec!["10.0.0.1".into()].into(),
                hostname: Some("h".into()),
                node_name: Some("n1".into()),
                zone: Some("z1".into()),
                target_ref: Some(TargetRefInput {
                    kind: Some("Pod".into()),
                    name: Some("web-1".into()),
                }),
                ready: Some(false),
                terminating: Some(true),
            }]
        );
    }

    #[test]
    fn a_slice_without_the_service_label_belongs_to_no_service() {
        let mut slice = EndpointSlice::default();
        slice.metadata.name = Some("orphan".into());
        assert_eq!(SliceInput::from(&slice).key(), None);
        slice.metadata.labels = Some(BTreeMap::from([(LABEL_SERVICE_NAME.into(), String::new())]));
        assert_eq!(SliceInput::from(&slice).key(), None);
    }
}
