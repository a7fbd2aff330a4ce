//! Typed request and response bodies of Consul's catalog and health APIs,
//! written from Consul's HTTP API documentation.
//!
//! Field names follow Consul's PascalCase JSON. Every response type
//! tolerates unknown fields (newer Consul versions add them) and `null`
//! where Consul writes `null` for an empty list or map. Request types omit
//! empty optional fields so that the body says only what the caller meant.
//!
//! This module must NOT contain behaviour beyond (de)serialisation: no I/O,
//! no defaults that change what Consul stores.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};

/// Deserialises `null` as the type's default (Consul writes `"Tags": null`).
pub(crate) fn nullable<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// Whether a field holds its type's default (an empty string, list or map,
/// zero, false), which request bodies leave out.
pub(crate) fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

/// String-to-string metadata (node meta, service meta, tagged addresses of
/// a node). Ordered so that equal maps compare and serialise identically.
pub type Meta = BTreeMap<String, String>;

/// A catalog node, as in `/v1/catalog/nodes`, the `Node` of
/// `/v1/catalog/node-services/:node` and a transaction's `Node` operation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub struct Node {
    /// Optional UUID of the node.
    #[serde(rename = "ID")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub id: String,
    /// Node name.
    #[serde(deserialize_with = "nullable")]
    pub node: String,
    /// Node address.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub address: String,
    /// Datacenter; empty means the agent's.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub datacenter: String,
    /// Tagged addresses (`lan`, `wan`, ...).
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub tagged_addresses: Meta,
    /// Node metadata.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub meta: Meta,
    /// Admin partition (Enterprise).
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub partition: String,
    /// Raft index that created the entry.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub create_index: u64,
    /// Raft index of the last change; the CAS index of a `cas` operation.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub modify_index: u64,
}

/// A tagged address of a service: address and port.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ServiceAddress {
    /// Address. Consul's documentation writes lowercase keys in examples and
    /// its server writes PascalCase; both are accepted.
    #[serde(rename = "Address", alias = "address")]
    #[serde(deserialize_with = "nullable")]
    pub address: String,
    /// Port.
    #[serde(rename = "Port", alias = "port")]
    #[serde(deserialize_with = "nullable")]
    pub port: u16,
}

/// DNS SRV weights of a service instance.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Weights {
    /// Weight when all checks pass.
    #[serde(default, deserialize_with = "nullable")]
    pub passing: u32,
    /// Weight when a check warns.
    #[serde(default, deserialize_with = "nullable")]
    pub warning: u32,
}

/// One named port of a multi-port service instance (the `Ports` list of
/// Consul 1.22 and later, written by newer consul-k8s releases with `Port`
/// 0). Consul's service definition documents each entry as a name, a port
/// number and whether it is the instance's default port.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub struct ServicePort {
    /// Port name, unique within the instance.
    #[serde(deserialize_with = "nullable")]
    pub name: String,
    /// Port number.
    #[serde(deserialize_with = "nullable")]
    pub port: u16,
    /// Whether this is the instance's default port. Omitted when false,
    /// like the other flags of request bodies.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub default: bool,
}

/// A service instance, in the shape of the register body's `Service`, of
/// `Services` in `/v1/catalog/node-services/:node`, of `Service` in
/// `/v1/health/service/:name` and of a transaction's `Service` operation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub struct Service {
    /// Instance ID, unique per node; defaults to the name when empty.
    #[serde(rename = "ID")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub id: String,
    /// Service name.
    #[serde(deserialize_with = "nullable")]
    pub service: String,
    /// Tags.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub tags: Vec<String>,
    /// Address; empty means the node's address.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub address: String,
    /// Tagged addresses (`lan_ipv4`, `wan`, ...).
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub tagged_addresses: BTreeMap<String, ServiceAddress>,
    /// Service metadata.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub meta: Meta,
    /// Port.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub port: u16,
    /// Named ports of a multi-port instance (then `port` is 0). Left out of
    /// a request when empty, so that a single-port body is exactly what
    /// Consul versions without the field expect.
    #[serde(rename = "Ports")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub ports: Vec<ServicePort>,
    /// DNS weights; `None` means Consul's default (passing 1, warning 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weights: Option<Weights>,
    /// Whether agents may override the tags (anti-entropy).
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub enable_tag_override: bool,
    /// Service kind; empty for a typical service.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub kind: String,
    /// Namespace (Enterprise).
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub namespace: String,
    /// Admin partition (Enterprise).
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub partition: String,
    /// Raft index that created the entry.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub create_index: u64,
    /// Raft index of the last change; the CAS index of a `cas` operation.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub modify_index: u64,
}

/// The definition of a check (for checks run by an agent; a catalog-only
/// check such as a Kubernetes readiness check has none).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub struct CheckDefinition {
    /// HTTP URL to probe.
    #[serde(rename = "HTTP")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub http: String,
    /// TCP address to probe.
    #[serde(rename = "TCP")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub tcp: String,
    /// Probe interval as a Go duration ("10s").
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub interval: String,
    /// Probe timeout as a Go duration.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub timeout: String,
    /// Deregister the service after being critical this long.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub deregister_critical_service_after: String,
}

/// A health check, as in the register body's `Check`/`Checks`, the `Checks`
/// of `/v1/health/service/:name` and a transaction's `Check` operation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub struct HealthCheck {
    /// Node the check belongs to.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub node: String,
    /// Check ID, unique per node; defaults to the name when empty.
    #[serde(rename = "CheckID")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub check_id: String,
    /// Human-readable name.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub name: String,
    /// `passing`, `warning` or `critical` (`maintenance` may be read back).
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub status: String,
    /// Free text.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub notes: String,
    /// Output of the last run.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub output: String,
    /// Service instance the check belongs to; empty for a node check.
    #[serde(rename = "ServiceID")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub service_id: String,
    /// Name of that service.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub service_name: String,
    /// Tags of that service.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub service_tags: Vec<String>,
    /// Check type (`http`, `tcp`, `ttl`, `kubernetes-readiness`, ...).
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub r#type: String,
    /// How an agent runs it, if it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub definition: Option<CheckDefinition>,
    /// Namespace (Enterprise).
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub namespace: String,
    /// Admin partition (Enterprise).
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub partition: String,
    /// Raft index that created the entry.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub create_index: u64,
    /// Raft index of the last change; the CAS index of a `cas` operation.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_default")]
    pub modify_index: u64,
}

/// Body of `PUT /v1/catalog/register`: a node, optionally one service and
/// checks. One request is one Raft apply.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct RegisterRequest {
    /// Optional node UUID.
    #[serde(rename = "ID", default, skip_serializing_if = "String::is_empty")]
    pub id: String,
    /// Node name (required).
    pub node: String,
    /// Node address (required by Consul unless `skip_node_update` and the
    /// node exists).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub address: String,
    /// Datacenter; empty means the agent's.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub datacenter: String,
    /// Node tagged addresses.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tagged_addresses: Meta,
    /// Node metadata.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_meta: Meta,
    /// The service instance to register, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<Service>,
    /// One check to register.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<HealthCheck>,
    /// Several checks to register.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<HealthCheck>,
    /// Leave the node's own fields as they are if it already exists.
    #[serde(default, skip_serializing_if = "is_default")]
    pub skip_node_update: bool,
    /// Namespace (Enterprise).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Admin partition (Enterprise).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub partition: String,
}

/// Body of `PUT /v1/catalog/deregister`. With only `node` set the whole node
/// goes (with its services and checks); with `service_id` one instance and
/// its checks; with `check_id` one check.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct DeregisterRequest {
    /// Node name (required).
    pub node: String,
    /// Datacenter; empty means the agent's.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub datacenter: String,
    /// Service instance to remove.
    #[serde(
        rename = "ServiceID",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub service_id: String,
    /// Check to remove.
    #[serde(rename = "CheckID", default, skip_serializing_if = "String::is_empty")]
    pub check_id: String,
    /// Namespace (Enterprise).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Admin partition (Enterprise).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub partition: String,
}

impl DeregisterRequest {
    /// Remove a whole node with everything on it.
    pub fn node(node: impl Into<String>) -> Self {
        Self {
            node: node.into(),
            ..Self::default()
        }
    }

    /// Remove one service instance (and its checks) from a node.
    pub fn service(node: impl Into<String>, service_id: impl Into<String>) -> Self {
        Self {
            node: node.into(),
            service_id: service_id.into(),
            ..Self::default()
        }
    }

    /// Remove one check from a node.
    pub fn check(node: impl Into<String>, check_id: impl Into<String>) -> Self {
        Self {
            node: node.into(),
            check_id: check_id.into(),
            ..Self::default()
        }
    }
}

/// Response of `/v1/catalog/node-services/:node`: the node and the list of
/// its service instances. `node` is `None` when the node does not exist.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct NodeServices {
    /// The node, if registered.
    #[serde(default)]
    pub node: Option<Node>,
    /// Its service instances.
    #[serde(default, deserialize_with = "nullable")]
    pub services: Vec<Service>,
}

/// One entry of `/v1/catalog/service/:name`: an instance flattened together
/// with its node.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct CatalogServiceInstance {
    /// Node UUID.
    #[serde(rename = "ID", default, deserialize_with = "nullable")]
    pub id: String,
    /// Node name.
    #[serde(default, deserialize_with = "nullable")]
    pub node: String,
    /// Node address.
    #[serde(default, deserialize_with = "nullable")]
    pub address: String,
    /// Datacenter.
    #[serde(default, deserialize_with = "nullable")]
    pub datacenter: String,
    /// Node tagged addresses.
    #[serde(default, deserialize_with = "nullable")]
    pub tagged_addresses: Meta,
    /// Node metadata.
    #[serde(default, deserialize_with = "nullable")]
    pub node_meta: Meta,
    /// Instance ID.
    #[serde(rename = "ServiceID", default, deserialize_with = "nullable")]
    pub service_id: String,
    /// Service name.
    #[serde(default, deserialize_with = "nullable")]
    pub service_name: String,
    /// Instance address (empty: use the node's).
    #[serde(default, deserialize_with = "nullable")]
    pub service_address: String,
    /// Tags.
    #[serde(default, deserialize_with = "nullable")]
    pub service_tags: Vec<String>,
    /// Service metadata.
    #[serde(default, deserialize_with = "nullable")]
    pub service_meta: Meta,
    /// Port.
    #[serde(default, deserialize_with = "nullable")]
    pub service_port: u16,
    /// Named ports of a multi-port instance; `ServicePorts`, after the
    /// `Service` prefix every instance field of this flattened shape has.
    #[serde(default, deserialize_with = "nullable")]
    pub service_ports: Vec<ServicePort>,
    /// Service tagged addresses.
    #[serde(default, deserialize_with = "nullable")]
    pub service_tagged_addresses: BTreeMap<String, ServiceAddress>,
    /// DNS weights.
    #[serde(default)]
    pub service_weights: Option<Weights>,
    /// Tag override flag.
    #[serde(default, deserialize_with = "nullable")]
    pub service_enable_tag_override: bool,
    /// Service kind.
    #[serde(default, deserialize_with = "nullable")]
    pub service_kind: String,
    /// Namespace (Enterprise).
    #[serde(default, deserialize_with = "nullable")]
    pub namespace: String,
    /// Admin partition (Enterprise).
    #[serde(default, deserialize_with = "nullable")]
    pub partition: String,
    /// Raft index that created the instance.
    #[serde(default, deserialize_with = "nullable")]
    pub create_index: u64,
    /// Raft index of the instance's last change.
    #[serde(default, deserialize_with = "nullable")]
    pub modify_index: u64,
}

/// One entry of `/v1/health/service/:name`: node, instance and checks.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ServiceEntry {
    /// The node.
    #[serde(default, deserialize_with = "nullable")]
    pub node: Node,
    /// The instance.
    #[serde(default, deserialize_with = "nullable")]
    pub service: Service,
    /// Node and service checks.
    #[serde(default, deserialize_with = "nullable")]
    pub checks: Vec<HealthCheck>,
}

/// Response of `/v1/catalog/services`: service name to the union of its tags.
pub type ServiceTags = BTreeMap<String, Vec<String>>;

#[cfg(test)]
mod tests;
