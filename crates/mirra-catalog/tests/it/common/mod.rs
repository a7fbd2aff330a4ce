//! Chainable builders for the Kubernetes objects the mapping reads, shared by
//! the integration tests.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    LoadBalancerIngress, LoadBalancerStatus, Node, NodeAddress, NodeStatus, ObjectReference,
    Service, ServicePort, ServiceSpec, ServiceStatus,
};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointPort, EndpointSlice};
use k8s_openapi::api::networking::v1::{
    HTTPIngressPath, HTTPIngressRuleValue, Ingress, IngressBackend, IngressLoadBalancerIngress,
    IngressLoadBalancerStatus, IngressRule, IngressServiceBackend, IngressSpec, IngressStatus,
    IngressTLS,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use mirra_catalog::SyncSettings;

/// Settings that sync every namespace, otherwise the binary defaults.
pub fn all_namespaces() -> SyncSettings {
    SyncSettings {
        allow_k8s_namespaces: ["*".to_owned()].into(),
        ..SyncSettings::default()
    }
}

pub struct SvcBuilder(Service);

pub fn svc(ns: &str, name: &str) -> SvcBuilder {
    SvcBuilder(Service {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(ns.into()),
            ..ObjectMeta::default()
        },
        spec: Some(ServiceSpec {
            type_: Some("ClusterIP".into()),
            ..ServiceSpec::default()
        }),
        status: None,
    })
}

impl SvcBuilder {
    fn spec(&mut self) -> &mut ServiceSpec {
        self.0.spec.get_or_insert_with(ServiceSpec::default)
    }

    pub fn type_(mut self, t: &str) -> Self {
        self.spec().type_ = Some(t.into());
        self
    }

    /// Adds port `port` (unnamed when `name` is empty), on `node_port` when
    /// given.
    fn push_port(mut self, name: &str, port: i32, node_port: Option<i32>) -> Self {
        self.spec()
            .ports
            .get_or_insert_with(Vec::new)
            .push(ServicePort {
                name: (!name.is_empty()).then(|| name.to_owned()),
                port,
                node_port,
                ..ServicePort::default()
            });
        self
    }

    pub fn port(self, name: &str, port: i32) -> Self {
        self.push_port(name, port, None)
    }

    pub fn node_port(self, name: &str, port: i32, node_port: i32) -> Self {
        self.push_port(name, port, Some(node_port))
    }

    pub fn annotation(mut self, k: &str, v: &str) -> Self {
        self.0
            .metadata
            .annotations
            .get_or_insert_with(BTreeMap::new)
            .insert(k.into(), v.into());
        self
    }

    pub fn external_ips(mut self, ips: &[&str]) -> Self {
        self.spec().external_ips = Some(ips.iter().map(|s| (*s).to_owned()).collect());
        self
    }

    fn lb(&mut self) -> &mut Vec<LoadBalancerIngress> {
        self.0
            .status
            .get_or_insert_with(ServiceStatus::default)
            .load_balancer
            .get_or_insert_with(LoadBalancerStatus::default)
            .ingress
            .get_or_insert_with(Vec::new)
    }

    pub fn lb_ip(mut self, ip: &str) -> Self {
        self.lb().push(LoadBalancerIngress {
            ip: Some(ip.into()),
            ..LoadBalancerIngress::default()
        });
        self
    }

    pub fn lb_hostname(mut self, h: &str) -> Self {
        self.lb().push(LoadBalancerIngress {
            hostname: Some(h.into()),
            ..LoadBalancerIngress::default()
        });
        self
    }

    pub fn build(self) -> Service {
        self.0
    }
}

pub struct SliceBuilder(EndpointSlice);

pub fn slice(ns: &str, service: &str, name: &str) -> SliceBuilder {
    SliceBuilder(EndpointSlice {
        address_type: "IPv4".into(),
        endpoints: Vec::new(),
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(ns.into()),
            labels: Some(BTreeMap::from([(
                "kubernetes.io/service-name".to_owned(),
                service.to_owned(),
            )])),
            ..ObjectMeta::default()
        },
        ports: None,
    })
}

impl SliceBuilder {
    pub fn port(mut self, name: &str, port: i32) -> Self {
        self.0
            .ports
            .get_or_insert_with(Vec::new)
            .push(EndpointPort {
                name: Some(name.into()),
                port: Some(port),
                protocol: Some("TCP".into()),
                ..EndpointPort::default()
            });
        self
    }

    pub fn endpoint(mut self, ep: EpBuilder) -> Self {
        self.0.endpoints.push(ep.0);
        self
    }

    pub fn build(self) -> EndpointSlice {
        self.0
    }
}

/// Slice `name` of Service `ns/service`: port `http` at `port` and one
/// ready endpoint at `addr`.
pub fn one_endpoint_slice(
    ns: &str,
    service: &str,
    name: &str,
    port: i32,
    addr: &str,
) -> EndpointSlice {
    slice(ns, service, name)
        .port("http", port)
        .endpoint(ep(addr))
        .build()
}

pub struct EpBuilder(Endpoint);

/// A ready endpoint for pod `pod-<addr>` at `addr`.
pub fn ep(addr: &str) -> EpBuilder {
    EpBuilder(Endpoint {
        addresses: vec![addr.into()],
        conditions: Some(EndpointConditions {
            ready: Some(true),
            serving: Some(true),
            terminating: Some(false),
        }),
        target_ref: Some(ObjectReference {
            kind: Some("Pod".into()),
            name: Some(format!("pod-{addr}")),
            namespace: None,
            ..ObjectReference::default()
        }),
        ..Endpoint::default()
    })
}

impl EpBuilder {
    pub fn ready(mut self, r: Option<bool>) -> Self {
        self.0.conditions.get_or_insert_with(Default::default).ready = r;
        self
    }

    pub fn terminating(mut self) -> Self {
        let c = self.0.conditions.get_or_insert_with(Default::default);
        c.terminating = Some(true);
        c.ready = Some(false);
        self
    }

    pub fn no_conditions(mut self) -> Self {
        self.0.conditions = None;
        self
    }

    pub fn node(mut self, n: &str) -> Self {
        self.0.node_name = Some(n.into());
        self
    }

    pub fn zone(mut self, z: &str) -> Self {
        self.0.zone = Some(z.into());
        self
    }

    pub fn no_target(mut self) -> Self {
        self.0.target_ref = None;
        self
    }

    pub fn hostname(mut self, h: &str) -> Self {
        self.0.hostname = Some(h.into());
        self
    }
}

pub fn node(name: &str, addresses: &[(&str, &str)]) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        spec: None,
        status: Some(NodeStatus {
            addresses: Some(
                addresses
                    .iter()
                    .map(|(t, a)| NodeAddress {
                        type_: (*t).into(),
                        address: (*a).into(),
                    })
                    .collect(),
            ),
            ..NodeStatus::default()
        }),
    }
}

pub fn nodes(list: Vec<Node>) -> BTreeMap<String, Node> {
    list.into_iter()
        .map(|n| (n.metadata.name.clone().unwrap(), n))
        .collect()
}

/// An Ingress whose rule for `host` routes `/` to `service`.
pub fn ingress(ns: &str, name: &str, host: &str, service: &str, tls: bool) -> Ingress {
    let tls = tls.then(|| IngressTLS {
        hosts: Some(vec![host.into()]),
        secret_name: Some("cert".into()),
    });
    ingress_rule(ns, name, Some(host), Some("/"), Some(service), tls)
}

/// An Ingress with one rule, for `host` (any host: `None`), whose one
/// Prefix path `path` routes to `service` (no backend: `None`), and the
/// one TLS entry `tls`.
pub fn ingress_rule(
    ns: &str,
    name: &str,
    host: Option<&str>,
    path: Option<&str>,
    service: Option<&str>,
    tls: Option<IngressTLS>,
) -> Ingress {
    Ingress {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(ns.into()),
            ..ObjectMeta::default()
        },
        spec: Some(IngressSpec {
            rules: Some(vec![IngressRule {
                host: host.map(String::from),
                http: Some(HTTPIngressRuleValue {
                    paths: vec![HTTPIngressPath {
                        path: path.map(String::from),
                        path_type: "Prefix".into(),
                        backend: IngressBackend {
                            service: service.map(|s| IngressServiceBackend {
                                name: s.into(),
                                port: None,
                            }),
                            resource: None,
                        },
                    }],
                }),
            }]),
            tls: tls.map(|t| vec![t]),
            ..IngressSpec::default()
        }),
        status: None,
    }
}

pub fn with_ingress_lb_ip(mut ing: Ingress, ip: &str) -> Ingress {
    ing.status = Some(IngressStatus {
        load_balancer: Some(IngressLoadBalancerStatus {
            ingress: Some(vec![IngressLoadBalancerIngress {
                ip: Some(ip.into()),
                ..IngressLoadBalancerIngress::default()
            }]),
        }),
    });
    ing
}
