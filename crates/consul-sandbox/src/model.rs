//! The catalog records the sandbox stores (nodes, service instances, health
//! checks) and how each one is rendered in Consul's JSON shapes.
//!
//! Consul renders the same record differently per endpoint: a service
//! instance is a flattened `ServiceNode` (`ServiceID`, `ServiceName`, ...
//! plus the node's fields) in `/v1/catalog/service/<name>`, and a nested
//! `NodeService` (`ID`, `Service`, ...) in `/v1/catalog/node-services/<node>`,
//! `/v1/health/service/<name>` and transaction results. This module owns
//! those renderings so every endpoint agrees on field names.
//!
//! It must NOT decide anything about indexes, validation or storage; it is
//! plain data plus pure rendering.

mod direct;

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

pub(crate) use direct::{HealthCheckJson, NodeServiceJson};

/// A string map that Consul keeps as a Go `map[string]string`: a nil map
/// renders as `null`, an empty one as `{}`. Keeping the distinction makes
/// the sandbox render exactly what the client registered.
pub(crate) type OptMap = Option<BTreeMap<String, String>>;

/// `Weights` of a service instance. Consul replaces missing or invalid
/// weights (`Passing < 1` or `Warning < 0`) with `{Passing: 1, Warning: 1}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Weights {
    /// Weight used by DNS SRV answers while every check passes.
    pub passing: i64,
    /// Weight used while some check warns.
    pub warning: i64,
}

impl Weights {
    /// Consul's default weights.
    pub const DEFAULT: Weights = Weights {
        passing: 1,
        warning: 1,
    };

    /// Applies Consul's rule: invalid weights fall back to the default.
    pub fn normalized(given: Option<Weights>) -> Weights {
        match given {
            Some(w) if w.passing >= 1 && w.warning >= 0 => w,
            _ => Weights::DEFAULT,
        }
    }

    fn to_json(self) -> Value {
        json!({ "Passing": self.passing, "Warning": self.warning })
    }
}

/// One entry of a service's `TaggedAddresses` (`{"Address", "Port"}`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServiceAddress {
    /// The address.
    pub address: String,
    /// The port.
    pub port: i64,
}

/// One entry of a multi-port service's `Ports` list (Consul 1.22 and
/// later): a named port, one of which may be the default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServicePort {
    /// Port name.
    pub name: String,
    /// Port number.
    pub port: i64,
    /// Whether this is the instance's default port.
    pub default: bool,
}

impl ServicePort {
    fn to_json(&self) -> Value {
        json!({ "Name": self.name, "Port": self.port, "Default": self.default })
    }
}

/// A catalog record as the store's upserts (Consul's `ensure*Txn`) see it.
pub(crate) trait Record {
    /// True when the user-visible content equals `other`'s, indexes aside:
    /// Consul skips a write for which this holds.
    fn same_content(&self, other: &Self) -> bool;

    /// The Raft index that created the record.
    fn created_at(&self) -> u64;

    /// The Raft indexes that created the record and last changed it.
    fn indexes_mut(&mut self) -> (&mut u64, &mut u64);
}

/// A node in the catalog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NodeRec {
    /// Optional UUID of the node (`ID`).
    pub id: String,
    /// Node name as registered (lookups are case-insensitive).
    pub name: String,
    /// Node address.
    pub address: String,
    /// Datacenter of the node.
    pub datacenter: String,
    /// `TaggedAddresses` (lan, wan, ...).
    pub tagged_addresses: OptMap,
    /// Node metadata (`Meta`, registered as `NodeMeta`).
    pub meta: OptMap,
    /// The admin partition, `Some` only with Enterprise features on (it is
    /// then rendered as `Partition`); `None` renders what Consul CE does.
    pub partition: Option<String>,
    /// Raft index that created the node.
    pub create_index: u64,
    /// Raft index of the last real change.
    pub modify_index: u64,
}

impl NodeRec {
    /// The partition the node lives in (`default` without Enterprise
    /// features).
    pub fn partition(&self) -> &str {
        ns_or_default(&self.partition)
    }

    /// The node as `/v1/catalog/nodes` and the `Node` member of other
    /// responses render it.
    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "ID": self.id,
            "Node": self.name,
            "Address": self.address,
            "Datacenter": self.datacenter,
            "TaggedAddresses": opt_map_json(&self.tagged_addresses),
            "Meta": opt_map_json(&self.meta),
            "CreateIndex": self.create_index,
            "ModifyIndex": self.modify_index,
        });
        if let (Some(p), Some(o)) = (&self.partition, v.as_object_mut()) {
            o.insert("Partition".into(), Value::String(p.clone()));
        }
        v
    }
}

impl Record for NodeRec {
    /// Consul's `Node.IsSame`.
    fn same_content(&self, other: &NodeRec) -> bool {
        self.id == other.id
            && self.name == other.name
            && self.address == other.address
            && self.datacenter == other.datacenter
            && same_map(&self.tagged_addresses, &other.tagged_addresses)
            && same_map(&self.meta, &other.meta)
    }

    fn created_at(&self) -> u64 {
        self.create_index
    }

    fn indexes_mut(&mut self) -> (&mut u64, &mut u64) {
        (&mut self.create_index, &mut self.modify_index)
    }
}

/// A service instance registered on a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServiceRec {
    /// Name of the node the instance lives on, as given at registration.
    pub node: String,
    /// Service kind (`""` for a typical service).
    pub kind: String,
    /// Instance ID, unique per node (case-insensitive).
    pub id: String,
    /// Service name.
    pub name: String,
    /// Tags; `None` when the client sent none.
    pub tags: Option<Vec<String>>,
    /// Service address; empty means "use the node's address".
    pub address: String,
    /// Service `TaggedAddresses`.
    pub tagged_addresses: BTreeMap<String, ServiceAddress>,
    /// Service metadata.
    pub meta: OptMap,
    /// Service port.
    pub port: i64,
    /// Named ports of a multi-port instance, in the order registered (empty
    /// for a single-port one).
    pub ports: Vec<ServicePort>,
    /// Weights (already normalized).
    pub weights: Weights,
    /// `EnableTagOverride`.
    pub enable_tag_override: bool,
    /// The namespace, `Some` only with Enterprise features on (rendered
    /// with `Namespace` and `Partition`); `None` is the CE default.
    pub ns: Option<String>,
    /// The partition (its node's), `Some` only with Enterprise features on.
    pub partition: Option<String>,
    /// Raft index that created the instance.
    pub create_index: u64,
    /// Raft index of the last real change.
    pub modify_index: u64,
}

impl ServiceRec {
    /// The partition the instance lives in (its node's).
    pub fn partition(&self) -> &str {
        ns_or_default(&self.partition)
    }

    /// The namespace the instance lives in (`default` without Enterprise
    /// features).
    pub fn namespace(&self) -> &str {
        ns_or_default(&self.ns)
    }

    /// The instance's service name as the store indexes it.
    pub fn key(&self) -> String {
        crate::store::svc_key_in(self.partition(), self.namespace(), &self.name)
    }

    fn ports_json(&self) -> Value {
        Value::Array(self.ports.iter().map(ServicePort::to_json).collect())
    }

    fn tagged_addresses_json(&self) -> Value {
        let mut out = Map::new();
        for (k, v) in &self.tagged_addresses {
            out.insert(k.clone(), json!({ "Address": v.address, "Port": v.port }));
        }
        Value::Object(out)
    }

    /// The nested `NodeService` shape. `empty_tags` turns a nil tag list into
    /// `[]`, which Consul's HTTP layer does for catalog reads but not for
    /// transaction results.
    pub fn to_node_service_json(&self, empty_tags: bool) -> Value {
        let mut obj = Map::new();
        if !self.kind.is_empty() {
            obj.insert("Kind".into(), Value::String(self.kind.clone()));
        }
        obj.insert("ID".into(), Value::String(self.id.clone()));
        obj.insert("Service".into(), Value::String(self.name.clone()));
        obj.insert("Tags".into(), tags_json(&self.tags, empty_tags));
        obj.insert("Address".into(), Value::String(self.address.clone()));
        if !self.tagged_addresses.is_empty() {
            obj.insert("TaggedAddresses".into(), self.tagged_addresses_json());
        }
        obj.insert("Meta".into(), opt_map_json(&self.meta));
        obj.insert("Port".into(), json!(self.port));
        // Left out when empty, like TaggedAddresses: clients written before
        // the field existed never see it.
        if !self.ports.is_empty() {
            obj.insert("Ports".into(), self.ports_json());
        }
        obj.insert("Weights".into(), self.weights.to_json());
        obj.insert(
            "EnableTagOverride".into(),
            Value::Bool(self.enable_tag_override),
        );
        obj.insert("Proxy".into(), empty_proxy_json());
        obj.insert("Connect".into(), json!({}));
        insert_tenancy(&mut obj, &self.ns, &self.partition);
        obj.insert("CreateIndex".into(), json!(self.create_index));
        obj.insert("ModifyIndex".into(), json!(self.modify_index));
        Value::Object(obj)
    }

    /// The flattened `ServiceNode` shape of `/v1/catalog/service/<name>`,
    /// joined with the node the instance lives on.
    pub fn to_service_node_json(&self, node: &NodeRec) -> Value {
        let mut obj = Map::new();
        obj.insert("ID".into(), Value::String(node.id.clone()));
        obj.insert("Node".into(), Value::String(node.name.clone()));
        obj.insert("Address".into(), Value::String(node.address.clone()));
        obj.insert("Datacenter".into(), Value::String(node.datacenter.clone()));
        obj.insert(
            "TaggedAddresses".into(),
            opt_map_json(&node.tagged_addresses),
        );
        obj.insert("NodeMeta".into(), opt_map_json(&node.meta));
        obj.insert("ServiceKind".into(), Value::String(self.kind.clone()));
        obj.insert("ServiceID".into(), Value::String(self.id.clone()));
        obj.insert("ServiceName".into(), Value::String(self.name.clone()));
        obj.insert("ServiceTags".into(), tags_json(&self.tags, true));
        obj.insert("ServiceAddress".into(), Value::String(self.address.clone()));
        if !self.tagged_addresses.is_empty() {
            obj.insert(
                "ServiceTaggedAddresses".into(),
                self.tagged_addresses_json(),
            );
        }
        obj.insert("ServiceWeights".into(), self.weights.to_json());
        obj.insert("ServiceMeta".into(), opt_map_json(&self.meta));
        obj.insert("ServicePort".into(), json!(self.port));
        // Named after the `Service` prefix of every instance field of this
        // flattened shape; left out when empty, as in the nested shape.
        if !self.ports.is_empty() {
            obj.insert("ServicePorts".into(), self.ports_json());
        }
        obj.insert(
            "ServiceEnableTagOverride".into(),
            Value::Bool(self.enable_tag_override),
        );
        obj.insert("ServiceProxy".into(), empty_proxy_json());
        obj.insert("ServiceConnect".into(), json!({}));
        insert_tenancy(&mut obj, &self.ns, &self.partition);
        obj.insert("CreateIndex".into(), json!(self.create_index));
        obj.insert("ModifyIndex".into(), json!(self.modify_index));
        Value::Object(obj)
    }
}

impl Record for ServiceRec {
    /// Consul's `ServiceNode.IsSameService`.
    fn same_content(&self, other: &ServiceRec) -> bool {
        self.node.eq_ignore_ascii_case(&other.node)
            && self.kind == other.kind
            && self.id == other.id
            && self.name == other.name
            && self.tags.as_deref().unwrap_or_default() == other.tags.as_deref().unwrap_or_default()
            && self.address == other.address
            && self.tagged_addresses == other.tagged_addresses
            && same_map(&self.meta, &other.meta)
            && self.port == other.port
            && self.ports == other.ports
            && self.weights == other.weights
            && self.enable_tag_override == other.enable_tag_override
            && self.ns == other.ns
            && self.partition == other.partition
    }

    fn created_at(&self) -> u64 {
        self.create_index
    }

    fn indexes_mut(&mut self) -> (&mut u64, &mut u64) {
        (&mut self.create_index, &mut self.modify_index)
    }
}

/// A health check, node-level (`service_id` empty) or bound to a service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CheckRec {
    /// Node the check belongs to.
    pub node: String,
    /// Check ID, unique per node (case-insensitive).
    pub check_id: String,
    /// Human-readable name.
    pub name: String,
    /// `passing`, `warning` or `critical`.
    pub status: String,
    /// Free-form notes.
    pub notes: String,
    /// Output of the last run.
    pub output: String,
    /// Service instance the check is bound to, or empty.
    pub service_id: String,
    /// Copied from the service at registration.
    pub service_name: String,
    /// Copied from the service at registration.
    pub service_tags: Option<Vec<String>>,
    /// Check type (`ttl`, `http`, ... or empty for catalog-only checks).
    pub check_type: String,
    /// The `Definition` object, kept as the client sent it.
    pub definition: Value,
    /// The namespace (a service check's is its service's), `Some` only
    /// with Enterprise features on.
    pub ns: Option<String>,
    /// The partition (its node's), `Some` only with Enterprise features on.
    pub partition: Option<String>,
    /// Raft index that created the check.
    pub create_index: u64,
    /// Raft index of the last real change.
    pub modify_index: u64,
}

impl CheckRec {
    /// The partition the check lives in (its node's).
    pub fn partition(&self) -> &str {
        ns_or_default(&self.partition)
    }

    /// The namespace the check lives in.
    pub fn namespace(&self) -> &str {
        ns_or_default(&self.ns)
    }

    /// The `HealthCheck` shape.
    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "Node": self.node,
            "CheckID": self.check_id,
            "Name": self.name,
            "Status": self.status,
            "Notes": self.notes,
            "Output": self.output,
            "ServiceID": self.service_id,
            "ServiceName": self.service_name,
            "ServiceTags": tags_json(&self.service_tags, true),
            "Type": self.check_type,
            "Interval": "",
            "Timeout": "",
            "ExposedPort": 0,
            "Definition": self.definition,
            "CreateIndex": self.create_index,
            "ModifyIndex": self.modify_index,
        });
        if let Some(o) = v.as_object_mut() {
            insert_tenancy(o, &self.ns, &self.partition);
        }
        v
    }
}

impl Record for CheckRec {
    fn same_content(&self, other: &CheckRec) -> bool {
        self.node.eq_ignore_ascii_case(&other.node)
            && self.check_id == other.check_id
            && self.name == other.name
            && self.status == other.status
            && self.notes == other.notes
            && self.output == other.output
            && self.service_id == other.service_id
            && self.service_name == other.service_name
            && self.service_tags.as_deref().unwrap_or_default()
                == other.service_tags.as_deref().unwrap_or_default()
            && self.check_type == other.check_type
            && self.definition == other.definition
            && self.ns == other.ns
            && self.partition == other.partition
    }

    fn created_at(&self) -> u64 {
        self.create_index
    }

    fn indexes_mut(&mut self) -> (&mut u64, &mut u64) {
        (&mut self.create_index, &mut self.modify_index)
    }
}

/// The namespace and partition every record lives in without Enterprise
/// features (and the default with them).
pub(crate) const DEFAULT_TENANCY: &str = "default";

pub(crate) fn ns_or_default(ns: &Option<String>) -> &str {
    ns.as_deref().unwrap_or(DEFAULT_TENANCY)
}

/// Consul Enterprise renders `Namespace` and `Partition` on every
/// namespaced record.
fn insert_tenancy(obj: &mut Map<String, Value>, ns: &Option<String>, partition: &Option<String>) {
    if let Some(ns) = ns {
        obj.insert("Namespace".into(), Value::String(ns.clone()));
        obj.insert(
            "Partition".into(),
            Value::String(ns_or_default(partition).to_string()),
        );
    }
}

/// Compares two Go maps the way a round trip through Raft sees them: a nil
/// map and an empty map carry the same content.
fn same_map(a: &OptMap, b: &OptMap) -> bool {
    match (a, b) {
        (Some(x), Some(y)) => x == y,
        (None, None) => true,
        (Some(x), None) | (None, Some(x)) => x.is_empty(),
    }
}

pub(crate) fn opt_map_json(m: &OptMap) -> Value {
    match m {
        None => Value::Null,
        Some(m) => {
            let mut out = Map::new();
            for (k, v) in m {
                out.insert(k.clone(), Value::String(v.clone()));
            }
            Value::Object(out)
        }
    }
}

fn tags_json(tags: &Option<Vec<String>>, empty_when_nil: bool) -> Value {
    match tags {
        Some(t) => json!(t),
        None if empty_when_nil => json!([]),
        None => Value::Null,
    }
}

/// The zero `ConnectProxyConfig` Consul renders for every non-proxy service.
fn empty_proxy_json() -> Value {
    json!({ "Mode": "", "MeshGateway": {}, "Expose": {} })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node() -> NodeRec {
        NodeRec {
            id: String::new(),
            name: "n1".into(),
            address: "10.0.0.1".into(),
            datacenter: "dc1".into(),
            tagged_addresses: None,
            meta: Some(BTreeMap::from([("k".to_string(), "v".to_string())])),
            partition: None,
            create_index: 3,
            modify_index: 4,
        }
    }

    fn service() -> ServiceRec {
        ServiceRec {
            node: "n1".into(),
            kind: String::new(),
            id: "web-1".into(),
            name: "web".into(),
            tags: None,
            address: String::new(),
            tagged_addresses: BTreeMap::new(),
            meta: None,
            port: 80,
            ports: Vec::new(),
            weights: Weights::DEFAULT,
            enable_tag_override: false,
            ns: None,
            partition: None,
            create_index: 5,
            modify_index: 6,
        }
    }

    #[test]
    fn weights_fall_back_to_default_when_invalid() {
        assert_eq!(Weights::normalized(None), Weights::DEFAULT);
        let bad = Weights {
            passing: 0,
            warning: 1,
        };
        assert_eq!(Weights::normalized(Some(bad)), Weights::DEFAULT);
        let neg = Weights {
            passing: 3,
            warning: -1,
        };
        assert_eq!(Weights::normalized(Some(neg)), Weights::DEFAULT);
        let ok = Weights {
            passing: 5,
            warning: 0,
        };
        assert_eq!(Weights::normalized(Some(ok)), ok);
    }

    #[test]
    fn nil_and_empty_maps_are_the_same_content_but_render_differently() {
        let a = node();
        let mut b = node();
        b.tagged_addresses = Some(BTreeMap::new());
        assert!(a.same_content(&b));
        assert_eq!(a.to_json()["TaggedAddresses"], Value::Null);
        assert_eq!(b.to_json()["TaggedAddresses"], json!({}));
        b.meta = None;
        assert!(!a.same_content(&b), "dropping a non-empty meta is a change");
    }

    #[test]
    fn indexes_do_not_count_as_content() {
        let a = service();
        let mut b = service();
        b.create_index = 99;
        b.modify_index = 100;
        assert!(a.same_content(&b));
        b.port = 81;
        assert!(!a.same_content(&b));
    }

    fn two_ports() -> Vec<ServicePort> {
        vec![
            ServicePort {
                name: "http".into(),
                port: 8080,
                default: true,
            },
            ServicePort {
                name: "grpc".into(),
                port: 9090,
                default: false,
            },
        ]
    }

    #[test]
    fn ports_are_content_in_order() {
        let mut a = service();
        a.port = 0;
        a.ports = two_ports();
        let b = a.clone();
        assert!(a.same_content(&b));
        let mut reordered = a.clone();
        reordered.ports.reverse();
        assert!(!a.same_content(&reordered), "Consul keeps the list order");
        let mut other_default = a.clone();
        other_default.ports[1].default = true;
        assert!(!a.same_content(&other_default));
        let mut dropped = a.clone();
        dropped.ports.pop();
        assert!(!a.same_content(&dropped));
    }

    #[test]
    fn ports_render_in_both_shapes_only_when_present() {
        let single = service();
        assert!(single.to_node_service_json(true).get("Ports").is_none());
        assert!(
            single
                .to_service_node_json(&node())
                .get("ServicePorts")
                .is_none()
        );
        let mut multi = service();
        multi.port = 0;
        multi.ports = two_ports();
        let want = json!([
            {"Name": "http", "Port": 8080, "Default": true},
            {"Name": "grpc", "Port": 9090, "Default": false}
        ]);
        let nested = multi.to_node_service_json(false);
        assert_eq!(nested["Ports"], want);
        assert_eq!(nested["Port"], json!(0));
        let flat = multi.to_service_node_json(&node());
        assert_eq!(flat["ServicePorts"], want);
        assert_eq!(flat["ServicePort"], json!(0));
    }

    #[test]
    fn flattened_service_node_shape_has_consul_field_names() {
        let v = service().to_service_node_json(&node());
        for key in [
            "ID",
            "Node",
            "Address",
            "Datacenter",
            "TaggedAddresses",
            "NodeMeta",
            "ServiceID",
            "ServiceName",
            "ServiceTags",
            "ServiceAddress",
            "ServiceWeights",
            "ServiceMeta",
            "ServicePort",
            "ServiceEnableTagOverride",
            "CreateIndex",
            "ModifyIndex",
        ] {
            assert!(v.get(key).is_some(), "missing {key}");
        }
        assert_eq!(
            v["ServiceTags"],
            json!([]),
            "nil tags render as [] in catalog reads"
        );
        assert_eq!(v["ServiceWeights"], json!({"Passing": 1, "Warning": 1}));
        assert_eq!(v["NodeMeta"], json!({"k": "v"}));
        assert_eq!(v["CreateIndex"], json!(5));
    }

    #[test]
    fn node_service_tags_nil_only_in_txn_results() {
        let s = service();
        assert_eq!(s.to_node_service_json(true)["Tags"], json!([]));
        assert_eq!(s.to_node_service_json(false)["Tags"], Value::Null);
        assert!(
            s.to_node_service_json(true)
                .get("TaggedAddresses")
                .is_none()
        );
    }
}
