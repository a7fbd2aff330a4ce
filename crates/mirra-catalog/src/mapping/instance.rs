//! One Consul service instance of a Service: the fields every instance
//! shares (name, tags, meta, ports, namespace), and the accumulator of a
//! Service's instances.
//!
//! This module must NOT decide where instances are (see `addresses`) or
//! whether a Service syncs (see [`super::sync_decision`]).

use super::*;

/// Collects instances, keeping the first one for each service ID. Inputs are
/// walked in a fixed order, so "first" is deterministic.
#[derive(Default)]
pub(super) struct Accumulator {
    pub(super) by_id: BTreeMap<String, Registration>,
}

impl Accumulator {
    pub(super) fn push(&mut self, reg: Registration) {
        self.by_id.entry(reg.id.clone()).or_insert(reg);
    }

    pub(super) fn contains(&self, id: &str) -> bool {
        self.by_id.contains_key(id)
    }

    pub(super) fn finish(self) -> Vec<Registration> {
        self.by_id.into_values().collect()
    }
}

/// The parts shared by every instance of one Service.
pub(super) struct Base {
    pub(super) key: ServiceKey,
    pub(super) name: String,
    pub(super) tags: Vec<String>,
    pub(super) meta: BTreeMap<String, String>,
    /// The single-layout port for instances not built from an endpoint.
    pub(super) port: u16,
    /// The multi-layout list for instances not built from an endpoint.
    pub(super) ports: Vec<ServicePort>,
    pub(super) override_port: Option<PortOverride>,
    pub(super) layout: PortLayout,
    /// The Consul namespace of every instance (`None` without namespaces).
    pub(super) namespace: Option<String>,
}

pub(super) fn to_port(n: i32) -> u16 {
    // Out-of-range numbers only come from malformed objects; 0 is how Consul
    // spells "no port".
    u16::try_from(n).unwrap_or(0)
}

pub(super) fn port_name(name: &str, one_based_index: usize) -> String {
    if name.trim().is_empty() {
        format!("port{one_based_index}")
    } else {
        name.to_owned()
    }
}

/// Marks the first entry as the default when none is.
pub(super) fn ensure_default(ports: &mut [ServicePort]) {
    if !ports.iter().any(|p| p.default)
        && let Some(first) = ports.first_mut()
    {
        first.default = true;
    }
}

impl Base {
    pub(super) fn build(
        svc: &ServiceInput,
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

        let svc_ports = svc.ports.as_slice();
        let is_node_port = kind == Kind::NodePort;
        let exposed = |p: &ServicePortInput| match p.node_port {
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
    pub(super) fn fixed_instance(&self, address: &str, weight: Option<u32>) -> Registration {
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
    pub(super) fn endpoint_meta(&self, ep: &EndpointInput) -> BTreeMap<String, String> {
        let mut meta = self.meta.clone();
        if let Some(target) = &ep.target_ref {
            meta.insert(
                META_K8S_REF_NAME.to_owned(),
                target.name.as_deref().unwrap_or_default().to_owned(),
            );
            meta.insert(
                META_K8S_REF_KIND.to_owned(),
                target.kind.as_deref().unwrap_or_default().to_owned(),
            );
        }
        if let Some(node) = &ep.node_name {
            meta.insert(META_K8S_NODE_NAME.to_owned(), node.to_string());
        }
        if let Some(zone) = &ep.zone {
            meta.insert(META_K8S_TOPOLOGY_ZONE.to_owned(), zone.to_string());
        }
        meta
    }

    /// The single-layout port of endpoint instances from one slice: the
    /// slice port named by the annotation, else (without a numeric
    /// annotation) the slice's first port, else the base port.
    pub(super) fn slice_port(&self, slice: &SliceInput) -> u16 {
        let slice_ports = &*slice.ports;
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
    pub(super) fn slice_ports(&self, slice: &SliceInput) -> Vec<ServicePort> {
        let mut out = Vec::new();
        if let Some(PortOverride::Number(n)) = &self.override_port {
            out.push(ServicePort {
                name: "default".to_owned(),
                port: *n,
                default: true,
            });
        }
        for (idx, p) in slice.ports.iter().enumerate() {
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
