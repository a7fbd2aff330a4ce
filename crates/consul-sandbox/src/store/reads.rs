//! The catalog and health reads, rendered as Consul's JSON: service and
//! node listings, one service's nodes or health, a node's services and
//! checks, checks by state, with the tag, meta and ACL filters applied.
//!
//! This module must NOT write the store or compute indexes: each read takes
//! the index it reports from the parent's index bookkeeping.

use super::*;

/// What a whole-node read shows: the node (`None` when unknown or not
/// readable), its records the caller may read, and whether ACLs removed
/// any.
struct NodeView<'a, T> {
    node: Option<&'a NodeRec>,
    items: Vec<&'a T>,
    filtered: bool,
}

/// The node-services body, `{"Node": ..., "Services": null | [...]}`.
struct NodeServicesBody<'a> {
    node: Option<Value>,
    services: &'a [&'a ServiceRec],
}

impl serde::Serialize for NodeServicesBody<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("Node", &self.node)?;
        if self.services.is_empty() {
            m.serialize_entry("Services", &())?;
        } else {
            let services: Vec<NodeServiceJson<'_>> = self
                .services
                .iter()
                .map(|rec| NodeServiceJson {
                    rec,
                    empty_tags: true,
                })
                .collect();
            m.serialize_entry("Services", &services)?;
        }
        m.end()
    }
}

impl Store {
    /// `GET /v1/catalog/services`: service name -> sorted union of tags.
    pub fn read_services(
        &self,
        partition: &str,
        ns: &NsSel,
        filter: &ListFilter,
        acl: &dyn ReadFilter,
    ) -> ReadResult {
        let key = WatchKey::Services {
            node_meta: !filter.node_meta.is_empty(),
            ns: match ns {
                NsSel::One(n) => Some(ns_key(partition, n)),
                NsSel::All => None,
            },
        };
        let mut names: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        let mut filtered = false;
        for s in self.services.values() {
            if !ns.matches(s.namespace()) || !s.partition().eq_ignore_ascii_case(partition) {
                continue;
            }
            if !filter.node_meta.is_empty() {
                let meta = self
                    .node_of(s.partition(), &s.node)
                    .and_then(|n| n.meta.as_ref());
                if !filter
                    .node_meta
                    .iter()
                    .all(|(k, v)| meta.and_then(|m| m.get(k)) == Some(v))
                {
                    continue;
                }
            }
            if !acl.service_read(partition, s.namespace(), &s.name) {
                filtered = true;
                continue;
            }
            let tags = names.entry(&s.name).or_default();
            for t in s.tags.iter().flatten() {
                tags.insert(t);
            }
        }
        let mut body = Map::new();
        for (name, tags) in names {
            body.insert(
                name.to_string(),
                json!(tags.into_iter().collect::<Vec<_>>()),
            );
        }
        ReadResult {
            index: self.index_for(&key),
            body: Value::Object(body),
            filtered,
        }
    }

    pub(super) fn instances<'a>(
        &'a self,
        partition: &str,
        ns: &str,
        name: &str,
    ) -> impl Iterator<Item = &'a ServiceRec> + 'a {
        self.by_name
            .get(&svc_key_in(partition, ns, name))
            .into_iter()
            .flatten()
            .filter_map(|k| self.services.get(k))
    }

    /// `GET /v1/catalog/service/<name>`: flattened `ServiceNode`s.
    pub fn read_service_nodes(
        &self,
        partition: &str,
        ns: &str,
        name: &str,
        filter: &ListFilter,
        acl: &dyn ReadFilter,
    ) -> ReadResult {
        self.read_instances(partition, ns, name, filter, acl, |s, node| {
            Some(s.to_service_node_json(node))
        })
    }

    /// `GET /v1/health/service/<name>`: `[{Node, Service, Checks}]`.
    pub fn read_health_service(
        &self,
        partition: &str,
        ns: &str,
        name: &str,
        filter: &ListFilter,
        acl: &dyn ReadFilter,
    ) -> ReadResult {
        self.read_instances(partition, ns, name, filter, acl, |s, node| {
            let lnode = node_key(partition, &node.name);
            let mut checks: Vec<&CheckRec> = self
                .checks_of(&lnode, "")
                .chain(self.checks_of(&lnode, &fold(&s.id)))
                .collect();
            checks.sort_by_key(|c| fold(&c.check_id));
            if filter.passing && checks.iter().any(|c| c.status != "passing") {
                return None;
            }
            Some(json!({
                "Node": node.to_json(),
                "Service": s.to_node_service_json(true),
                "Checks": checks.iter().map(|c| c.to_json()).collect::<Vec<_>>(),
            }))
        })
    }

    /// A listing of the instances of service `name`, each on a known node,
    /// passing the tag and node-meta filters and readable by the caller,
    /// as `entry` renders it (`None` leaves an instance out); with the
    /// service's index.
    fn read_instances(
        &self,
        partition: &str,
        ns: &str,
        name: &str,
        filter: &ListFilter,
        acl: &dyn ReadFilter,
        mut entry: impl FnMut(&ServiceRec, &NodeRec) -> Option<Value>,
    ) -> ReadResult {
        let mut out = Vec::new();
        let mut filtered = false;
        for s in self.instances(partition, ns, name) {
            let Some(node) = self.node_of(partition, &s.node) else {
                continue;
            };
            if !tags_match(&s.tags, &filter.tags) || !meta_matches(&node.meta, &filter.node_meta) {
                continue;
            }
            if !acl.service_read(partition, s.namespace(), &s.name)
                || !acl.node_read(partition, &node.name)
            {
                filtered = true;
                continue;
            }
            out.extend(entry(s, node));
        }
        let index = self.index_for(&WatchKey::Service(svc_key_in(partition, ns, name)));
        ReadResult {
            index,
            body: Value::Array(out),
            filtered,
        }
    }

    /// `GET /v1/catalog/node-services/<node>`: `{Node, Services: [...]}`;
    /// both members are `null` for an unknown node, and `Services` is `null`
    /// for a node without services (Consul's nil slice).
    pub fn read_node_services(
        &self,
        partition: &str,
        ns: &NsSel,
        node: &str,
        acl: &dyn ReadFilter,
    ) -> ReadResult {
        let (index, view) = self.node_services_view(partition, ns, node, acl);
        let services: Vec<Value> = view
            .items
            .iter()
            .map(|s| s.to_node_service_json(true))
            .collect();
        let services = if services.is_empty() {
            Value::Null
        } else {
            Value::Array(services)
        };
        ReadResult {
            index,
            body: json!({"Node": view.node.map(NodeRec::to_json), "Services": services}),
            filtered: view.filtered,
        }
    }

    /// [`Store::read_node_services`] serialized straight from the records
    /// (the same bytes as serializing its body): see `model::direct`.
    pub fn read_node_services_json(
        &self,
        partition: &str,
        ns: &NsSel,
        node: &str,
        acl: &dyn ReadFilter,
    ) -> JsonRead {
        let (index, view) = self.node_services_view(partition, ns, node, acl);
        let body = NodeServicesBody {
            node: view.node.map(NodeRec::to_json),
            services: &view.items,
        };
        JsonRead {
            index,
            body: serde_json::to_vec(&body).unwrap_or_default(),
            filtered: view.filtered,
        }
    }

    /// The index a read of the node reports, and a view holding the node if
    /// it exists and the caller may read it, with the records `on` lists
    /// for its folded key that are `readable`. `filtered` when the node or
    /// some of those records may not be read.
    fn node_view<'a, T: 'a, I: Iterator<Item = &'a T>>(
        &'a self,
        partition: &str,
        node: &str,
        acl: &dyn ReadFilter,
        on: impl FnOnce(&str) -> I,
        readable: impl Fn(&T) -> bool,
    ) -> (u64, NodeView<'a, T>) {
        let lnode = node_key(partition, node);
        let index = self.index_for(&WatchKey::Node(lnode.clone()));
        let n = self.nodes.get(&lnode);
        let shown = n.filter(|n| acl.node_read(partition, &n.name));
        let mut view = NodeView {
            node: shown,
            items: Vec::new(),
            filtered: n.is_some() && shown.is_none(),
        };
        if shown.is_some() {
            for item in on(&lnode) {
                if readable(item) {
                    view.items.push(item);
                } else {
                    view.filtered = true;
                }
            }
        }
        (index, view)
    }

    /// The node and the instances on it the caller may read.
    fn node_services_view(
        &self,
        partition: &str,
        ns: &NsSel,
        node: &str,
        acl: &dyn ReadFilter,
    ) -> (u64, NodeView<'_, ServiceRec>) {
        self.node_view(
            partition,
            node,
            acl,
            |lnode| {
                self.services_on(lnode)
                    .filter(|s| ns.matches(s.namespace()))
            },
            |s| acl.service_read(partition, s.namespace(), &s.name),
        )
    }

    /// `GET /v1/health/node/<node>`: the node's checks (node-level and
    /// service-level) as `HealthCheck`s; an empty array (never `null`) for
    /// an unknown or unreadable node, as Consul answers. Checks of services
    /// the caller may not read are filtered out.
    pub fn read_health_node(
        &self,
        partition: &str,
        ns: &NsSel,
        node: &str,
        acl: &dyn ReadFilter,
    ) -> ReadResult {
        let (index, view) = self.health_node_view(partition, ns, node, acl);
        ReadResult {
            index,
            body: Value::Array(view.items.iter().map(|c| c.to_json()).collect()),
            filtered: view.filtered,
        }
    }

    /// [`Store::read_health_node`] serialized straight from the records
    /// (the same bytes as serializing its body): see `model::direct`.
    pub fn read_health_node_json(
        &self,
        partition: &str,
        ns: &NsSel,
        node: &str,
        acl: &dyn ReadFilter,
    ) -> JsonRead {
        let (index, view) = self.health_node_view(partition, ns, node, acl);
        let checks: Vec<HealthCheckJson<'_>> =
            view.items.iter().map(|c| HealthCheckJson(c)).collect();
        JsonRead {
            index,
            body: serde_json::to_vec(&checks).unwrap_or_default(),
            filtered: view.filtered,
        }
    }

    /// The node's checks the caller may read.
    fn health_node_view(
        &self,
        partition: &str,
        ns: &NsSel,
        node: &str,
        acl: &dyn ReadFilter,
    ) -> (u64, NodeView<'_, CheckRec>) {
        self.node_view(
            partition,
            node,
            acl,
            |lnode| self.checks_on(lnode).filter(|c| ns.matches(c.namespace())),
            |c| {
                c.service_name.is_empty()
                    || acl.service_read(partition, c.namespace(), &c.service_name)
            },
        )
    }

    /// `GET /v1/health/state/<state>`: every check in `state` (`any` for
    /// all), ordered by node then check ID, with the `checks` table index.
    /// `node-meta` filters the nodes. Checks the caller may not read (node
    /// or service) are left out, as Consul's ACL filter does.
    pub fn read_health_state(
        &self,
        partition: &str,
        ns: &NsSel,
        state: &str,
        node_meta: &[(String, String)],
        acl: &dyn ReadFilter,
    ) -> ReadResult {
        let mut filtered = false;
        let mut out = Vec::new();
        for c in self.checks.values() {
            if (state != "any" && c.status != state)
                || !ns.matches(c.namespace())
                || !c.partition().eq_ignore_ascii_case(partition)
            {
                continue;
            }
            let Some(n) = self.node_of(partition, &c.node) else {
                continue;
            };
            if !meta_matches(&n.meta, node_meta) {
                continue;
            }
            if !acl.node_read(partition, &n.name)
                || (!c.service_name.is_empty()
                    && !acl.service_read(partition, c.namespace(), &c.service_name))
            {
                filtered = true;
                continue;
            }
            out.push(c.to_json());
        }
        ReadResult {
            index: self.idx.checks,
            body: Value::Array(out),
            filtered,
        }
    }

    /// `GET /v1/health/checks/<service>`: the checks of every instance of
    /// `service`, with the service's index. Without `service:read` the
    /// answer is empty and marked filtered; checks on nodes the caller may
    /// not read are dropped.
    pub fn read_health_checks(
        &self,
        partition: &str,
        ns: &str,
        service: &str,
        node_meta: &[(String, String)],
        acl: &dyn ReadFilter,
    ) -> ReadResult {
        let index = self.index_for(&WatchKey::Service(svc_key_in(partition, ns, service)));
        if !acl.service_read(partition, ns, service) {
            return ReadResult {
                index,
                body: Value::Array(Vec::new()),
                filtered: true,
            };
        }
        let mut filtered = false;
        let mut out = Vec::new();
        for key in self
            .by_name
            .get(&svc_key_in(partition, ns, service))
            .into_iter()
            .flatten()
        {
            let Some(n) = self.nodes.get(&key.0) else {
                continue;
            };
            if !meta_matches(&n.meta, node_meta) {
                continue;
            }
            if !acl.node_read(partition, &n.name) {
                filtered = true;
                continue;
            }
            out.extend(self.checks_of(&key.0, &key.1).map(CheckRec::to_json));
        }
        ReadResult {
            index,
            body: Value::Array(out),
            filtered,
        }
    }

    /// `GET /v1/catalog/node/<node>`: `{Node, Services: {id: ...}}`, or
    /// `null` for an unknown node.
    pub fn read_node(
        &self,
        partition: &str,
        ns: &NsSel,
        node: &str,
        acl: &dyn ReadFilter,
    ) -> ReadResult {
        let lnode = node_key(partition, node);
        let index = self.index_for(&WatchKey::Node(lnode.clone()));
        let Some(n) = self.nodes.get(&lnode) else {
            return ReadResult {
                index,
                body: Value::Null,
                filtered: false,
            };
        };
        if !acl.node_read(partition, &n.name) {
            return ReadResult {
                index,
                body: Value::Null,
                filtered: true,
            };
        }
        let mut filtered = false;
        let mut services = Map::new();
        for s in self
            .services_on(&lnode)
            .filter(|s| ns.matches(s.namespace()))
        {
            if acl.service_read(partition, s.namespace(), &s.name) {
                services.insert(s.id.clone(), s.to_node_service_json(true));
            } else {
                filtered = true;
            }
        }
        ReadResult {
            index,
            body: json!({"Node": n.to_json(), "Services": services}),
            filtered,
        }
    }

    /// `GET /v1/catalog/nodes`.
    pub fn read_nodes(
        &self,
        partition: &str,
        filter: &ListFilter,
        acl: &dyn ReadFilter,
    ) -> ReadResult {
        let mut out = Vec::new();
        let mut filtered = false;
        for n in self.nodes.values() {
            if !n.partition().eq_ignore_ascii_case(partition)
                || !meta_matches(&n.meta, &filter.node_meta)
            {
                continue;
            }
            if !acl.node_read(partition, &n.name) {
                filtered = true;
                continue;
            }
            out.push(n.to_json());
        }
        ReadResult {
            index: self.index_for(&WatchKey::Nodes(partition.to_string())),
            body: Value::Array(out),
            filtered,
        }
    }
}
