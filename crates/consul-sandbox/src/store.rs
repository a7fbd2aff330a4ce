//! The catalog state store: nodes, service instances and checks, the Raft
//! counters, and the indexes Consul exposes as `X-Consul-Index`.
//!
//! ```text
//!   write request ──> Store::apply(counted, |tx| ...)
//!                        raft_index += 1 (one "Raft apply")
//!                        tx.ensure_* / tx.delete_*   (journal old values)
//!                        Ok  -> commit: bump the indexes of what changed
//!                        Err -> roll back from the journal, no index moves
//! ```
//!
//! Index model (the same as Consul's state store): every write request is one
//! Raft log entry and moves `raft_index`, but a record's `ModifyIndex` and the
//! query indexes only take that value when content really changed. An
//! identical re-registration therefore costs a Raft apply and moves nothing
//! a client can see. Query indexes:
//!
//! - `nodes` table: any node change and any service change (services appear
//!   in node queries); `services` table: any service change; `checks` table.
//! - per service name (case-insensitive): instance, check or hosting-node
//!   changes. When the last instance goes, the entry is dropped and the
//!   "service extinction" index takes the Raft index instead.
//! - per node: the node, its services and its checks; on node deletion the
//!   "node extinction" index.
//!
//! With Enterprise features, nodes are keyed by partition and name
//! ([`node_key`]) and service names by partition, namespace and name
//! ([`svc_key_in`]), so the per-node and per-name indexes are per
//! partition, and the `nodes` index has a per-partition copy for node
//! listings; the `services` and `checks` table indexes stay global.
//!
//! Names and IDs are looked up case-insensitively (Consul's memdb indexes
//! lowercase them); records keep the case they were registered with.
//!
//! This module must NOT know about HTTP, ACLs or JSON bodies beyond
//! rendering records; it is synchronous and never blocks.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use crate::model::{CheckRec, NodeRec, ServiceRec};

/// Case-folded lookup key for node names, service IDs, names and check IDs.
pub(crate) fn fold(s: &str) -> String {
    s.to_lowercase()
}

/// Index key of a service name within a namespace: `ns/name`, folded.
/// Namespace names are DNS labels, so the first `/` always ends the
/// namespace even when the service name holds one.
#[cfg(test)]
pub(crate) fn svc_key(ns: &str, name: &str) -> String {
    format!("{}/{}", fold(ns), fold(name))
}

/// The key of a namespace within a partition, for per-namespace indexes
/// and [`svc_key_in`]: the folded name in the default partition, else
/// `~partition/namespace`. Namespace names are DNS labels, so no key of
/// the default partition starts with `~`; the key is stable under
/// [`fold`].
pub(crate) fn ns_key(partition: &str, ns: &str) -> String {
    if partition.eq_ignore_ascii_case(crate::model::DEFAULT_TENANCY) {
        fold(ns)
    } else {
        format!("~{}/{}", fold(partition), fold(ns))
    }
}

/// Index key of a service name within a namespace of a partition.
pub(crate) fn svc_key_in(partition: &str, ns: &str, name: &str) -> String {
    format!("{}/{}", ns_key(partition, ns), fold(name))
}

/// Key of a node within its partition: the folded name in the default
/// partition, else `P` + partition + `/` + name. A folded name holds no
/// ASCII capital, so the two never meet; node keys are therefore never
/// folded again.
pub(crate) fn node_key(partition: &str, name: &str) -> String {
    if partition.eq_ignore_ascii_case(crate::model::DEFAULT_TENANCY) {
        fold(name)
    } else {
        format!("P{}/{}", fold(partition), fold(name))
    }
}

/// The folded partition a [`node_key`] belongs to.
fn partition_of_key(key: &str) -> String {
    match key.strip_prefix('P').and_then(|k| k.split_once('/')) {
        Some((p, _)) => p.to_string(),
        None => crate::model::DEFAULT_TENANCY.to_string(),
    }
}

/// Which namespaces a read covers: one, or every one (`ns=*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NsSel {
    One(String),
    All,
}

impl NsSel {
    /// The default namespace (every read without Enterprise features).
    pub fn default_ns() -> NsSel {
        NsSel::One(crate::model::DEFAULT_TENANCY.to_string())
    }

    pub fn matches(&self, ns: &str) -> bool {
        match self {
            NsSel::All => true,
            NsSel::One(n) => n.eq_ignore_ascii_case(ns),
        }
    }
}

/// Key of a service instance or check: (folded node, folded id).
pub(crate) type RecKey = (String, String);

/// Errors raised while applying a write inside the state store. They happen
/// after the Raft apply (the request already cost a log entry), so Consul
/// reports them as 500 for catalog writes and as a 409 error entry for
/// transactions. Not retryable as-is: the client must register the missing
/// parent first.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// A service or check names a node that is not registered.
    #[error("Missing node registration")]
    MissingNode,
    /// A check names a service instance that is not registered on its node.
    #[error("Missing service registration")]
    MissingService,
    /// A registration carries a check for another node.
    #[error("check node {check} does not match node {node}")]
    CheckNodeMismatch {
        /// The check's node, Go-quoted.
        check: String,
        /// The request's node, Go-quoted.
        node: String,
    },
}

/// Query indexes (see the module docs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Indexes {
    nodes: u64,
    services: u64,
    checks: u64,
    service_extinction: u64,
    node_extinction: u64,
    per_service: BTreeMap<String, u64>,
    per_node: BTreeMap<String, u64>,
    /// The `services` index of each namespace (folded) that ever held a
    /// service: a listing of one namespace moves only with its own changes.
    per_ns_services: BTreeMap<String, u64>,
    /// The `nodes` index of each partition (folded) whose nodes ever
    /// changed: a node listing of one partition moves only with its own.
    per_partition_nodes: BTreeMap<String, u64>,
}

/// What a blocking query waits on. Names are compared case-insensitively
/// (use [`WatchKey::folded`] before hashing).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum WatchKey {
    /// `/v1/catalog/nodes` of a partition (folded).
    Nodes(String),
    /// `/v1/catalog/services`; with a `node-meta` filter it also depends on
    /// node changes. `ns`: one namespace or every one (`None`).
    Services { node_meta: bool, ns: Option<String> },
    /// `/v1/catalog/service/<name>` and `/v1/health/service/<name>`: the
    /// [`svc_key`] of the name in its namespace.
    Service(String),
    /// `/v1/catalog/node/<node>`, `/v1/catalog/node-services/<node>` and
    /// `/v1/health/node/<node>` (check changes move the node's index too):
    /// the [`node_key`], already folded.
    Node(String),
    /// `/v1/health/state/<state>`: the `checks` table index. Readers wait
    /// on every commit (it moves with any check change).
    Checks,
}

impl WatchKey {
    /// The key with its name case-folded, for use as a map key.
    pub fn folded(&self) -> WatchKey {
        match self {
            WatchKey::Service(n) => WatchKey::Service(fold(n)),
            WatchKey::Node(n) => WatchKey::Node(n.clone()),
            WatchKey::Nodes(p) => WatchKey::Nodes(fold(p)),
            WatchKey::Services { node_meta, ns } => WatchKey::Services {
                node_meta: *node_meta,
                ns: ns.as_deref().map(fold),
            },
            other => other.clone(),
        }
    }
}

/// What committed writes changed since the last [`Store::take_changes`]:
/// the keys whose blocked readers must look again.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ChangeSet {
    /// The `nodes` table index moved.
    pub nodes_table: bool,
    /// Folded partitions whose `nodes` index moved.
    pub node_partitions: BTreeSet<String>,
    /// The `services` table index moved.
    pub services_table: bool,
    /// [`svc_key`]s whose index moved (or that went extinct).
    pub service_names: BTreeSet<String>,
    /// Folded namespaces whose `services` index moved.
    pub service_namespaces: BTreeSet<String>,
    /// Folded node names whose index moved (or that were deleted).
    pub nodes: BTreeSet<String>,
}

impl ChangeSet {
    /// True when nothing changed.
    pub fn is_empty(&self) -> bool {
        !self.nodes_table
            && self.node_partitions.is_empty()
            && !self.services_table
            && self.service_names.is_empty()
            && self.service_namespaces.is_empty()
            && self.nodes.is_empty()
    }

    /// The watch keys (folded) this change set moves directly. Keys whose
    /// index depends on global state (absent names, node-meta listings) are
    /// not listed; their readers watch every commit.
    pub fn keys(&self) -> Vec<WatchKey> {
        let mut out = Vec::new();
        out.extend(self.node_partitions.iter().cloned().map(WatchKey::Nodes));
        if self.services_table {
            out.push(WatchKey::Services {
                node_meta: false,
                ns: None,
            });
        }
        out.extend(self.service_namespaces.iter().map(|ns| WatchKey::Services {
            node_meta: false,
            ns: Some(ns.clone()),
        }));
        out.extend(self.service_names.iter().cloned().map(WatchKey::Service));
        out.extend(self.nodes.iter().cloned().map(WatchKey::Node));
        out
    }
}

/// The whole catalog. Cloneable and comparable so tests can prove a failed
/// transaction leaves it byte-for-byte unchanged.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Store {
    nodes: BTreeMap<String, NodeRec>,
    services: BTreeMap<RecKey, ServiceRec>,
    checks: BTreeMap<RecKey, CheckRec>,
    by_name: BTreeMap<String, BTreeSet<RecKey>>,
    /// (folded node, folded service ID or "" for node checks) -> folded
    /// check IDs: Consul indexes checks by service, so deleting an instance
    /// or reading its health never scans every check of a large node.
    checks_by_service: BTreeMap<RecKey, BTreeSet<String>>,
    idx: Indexes,
    raft_index: u64,
    raft_applies: u64,
    pending: ChangeSet,
    /// Namespaces and partitions (empty without Enterprise features).
    pub tenancy: crate::tenancy::Tenancy,
}

/// Read-side permission checks, implemented by the ACL layer. Results the
/// caller may not read are filtered out, as Consul does.
pub(crate) trait ReadFilter {
    /// May the caller see service `name` in namespace `ns` of `partition`?
    fn service_read(&self, partition: &str, ns: &str, name: &str) -> bool;
    /// May the caller see node `name` of `partition`?
    fn node_read(&self, partition: &str, name: &str) -> bool;
}

/// A filter that allows everything (ACLs off).
#[cfg(test)]
pub(crate) struct AllowAll;

#[cfg(test)]
impl ReadFilter for AllowAll {
    fn service_read(&self, _: &str, _: &str, _: &str) -> bool {
        true
    }
    fn node_read(&self, _: &str, _: &str) -> bool {
        true
    }
}

/// A read result: the index to return in `X-Consul-Index`, the body, and
/// whether ACLs removed anything.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ReadResult {
    pub index: u64,
    pub body: Value,
    pub filtered: bool,
}

/// Filters shared by the listing reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ListFilter {
    /// `tag=` values: every one must be present (case-insensitive).
    pub tags: Option<Vec<String>>,
    /// `node-meta=key:value` pairs: every one must match.
    pub node_meta: Vec<(String, String)>,
    /// `passing`: only instances whose checks all pass (health only).
    pub passing: bool,
}

fn meta_matches(meta: &Option<BTreeMap<String, String>>, filters: &[(String, String)]) -> bool {
    filters
        .iter()
        .all(|(k, v)| meta.as_ref().and_then(|m| m.get(k)) == Some(v))
}

fn tags_match(tags: &Option<Vec<String>>, wanted: &Option<Vec<String>>) -> bool {
    let Some(wanted) = wanted else { return true };
    let have = tags.as_deref().unwrap_or_default();
    wanted.iter().all(|w| {
        let w = w.to_lowercase();
        have.iter().any(|t| t.to_lowercase() == w)
    })
}

impl Store {
    /// The current Raft index (every write request moves it).
    pub fn raft_index(&self) -> u64 {
        self.raft_index
    }

    /// Raft applies caused by API write requests.
    pub fn raft_applies(&self) -> u64 {
        self.raft_applies
    }

    /// Runs one write as a single Raft apply. `counted` is false only for the
    /// sandbox's own bootstrap entry. On `Err` every change is rolled back and
    /// no index moves. Returns the closure's result and whether any content
    /// changed (that is, whether blocked readers may have something new).
    pub fn apply<R, E>(
        &mut self,
        counted: bool,
        f: impl FnOnce(&mut Tx<'_>) -> Result<R, E>,
    ) -> (Result<R, E>, bool) {
        self.raft_index = self.raft_index.saturating_add(1);
        if counted {
            self.raft_applies = self.raft_applies.saturating_add(1);
        }
        let idx = self.raft_index;
        let mut tx = Tx {
            store: self,
            idx,
            undo: Vec::new(),
            changes: Changes::default(),
        };
        let result = f(&mut tx);
        let changed = match result {
            Ok(_) => tx.commit(),
            Err(_) => {
                tx.rollback();
                false
            }
        };
        (result, changed)
    }

    /// Looks a node of the default partition up by name.
    #[cfg(test)]
    pub fn node(&self, name: &str) -> Option<&NodeRec> {
        self.node_in(crate::model::DEFAULT_TENANCY, name)
    }

    /// Looks a service instance of the default partition up.
    #[cfg(test)]
    pub fn service(&self, node: &str, id: &str) -> Option<&ServiceRec> {
        self.service_in(crate::model::DEFAULT_TENANCY, node, id)
    }

    /// Looks a check of the default partition up.
    #[cfg(test)]
    pub fn check(&self, node: &str, check_id: &str) -> Option<&CheckRec> {
        self.check_in(crate::model::DEFAULT_TENANCY, node, check_id)
    }

    /// Looks a node up by partition and name (case-insensitive).
    pub fn node_in(&self, partition: &str, name: &str) -> Option<&NodeRec> {
        self.nodes.get(&node_key(partition, name))
    }

    /// Looks a service instance up by partition, node and ID.
    pub fn service_in(&self, partition: &str, node: &str, id: &str) -> Option<&ServiceRec> {
        self.services.get(&(node_key(partition, node), fold(id)))
    }

    /// Looks a check up by partition, node and check ID.
    pub fn check_in(&self, partition: &str, node: &str, check_id: &str) -> Option<&CheckRec> {
        self.checks
            .get(&(node_key(partition, node), fold(check_id)))
    }

    /// The node a service or check record lives on.
    fn node_of(&self, partition: &str, node: &str) -> Option<&NodeRec> {
        self.nodes.get(&node_key(partition, node))
    }

    fn services_on<'a>(&'a self, lnode: &'a str) -> impl Iterator<Item = &'a ServiceRec> + 'a {
        self.services
            .range((lnode.to_string(), String::new())..)
            .take_while(move |((n, _), _)| n == lnode)
            .map(|(_, s)| s)
    }

    /// The checks of one instance (`lid` folded) or, with `lid` empty, the
    /// node-level checks of `lnode`, in check-ID order.
    fn checks_of<'a>(&'a self, lnode: &str, lid: &str) -> impl Iterator<Item = &'a CheckRec> + 'a {
        let lnode = lnode.to_string();
        self.checks_by_service
            .get(&(lnode.clone(), lid.to_string()))
            .into_iter()
            .flatten()
            .filter_map(move |cid| self.checks.get(&(lnode.clone(), cid.clone())))
    }

    fn checks_on<'a>(&'a self, lnode: &'a str) -> impl Iterator<Item = &'a CheckRec> + 'a {
        self.checks
            .range((lnode.to_string(), String::new())..)
            .take_while(move |((n, _), _)| n == lnode)
            .map(|(_, c)| c)
    }

    /// Takes the changes committed since the last call (the server hands
    /// them to blocked readers after releasing the write lock).
    pub fn take_changes(&mut self) -> ChangeSet {
        std::mem::take(&mut self.pending)
    }

    /// Whether a blocked reader of `key` can wait on that key alone: true
    /// when the key's index only moves with changes to that key itself
    /// (a table, or a name that currently has its own index entry).
    pub fn has_own_index(&self, key: &WatchKey) -> bool {
        match key {
            WatchKey::Nodes(p) => self.idx.per_partition_nodes.contains_key(&fold(p)),
            WatchKey::Services {
                node_meta: false, ..
            } => true,
            WatchKey::Services {
                node_meta: true, ..
            }
            | WatchKey::Checks => false,
            WatchKey::Service(name) => self.idx.per_service.contains_key(&fold(name)),
            WatchKey::Node(key) => self.idx.per_node.contains_key(key),
        }
    }

    /// The index a query on `key` reports; a blocking query returns as soon
    /// as this exceeds the client's `index`.
    pub fn index_for(&self, key: &WatchKey) -> u64 {
        match key {
            // A partition whose nodes never changed reports the table's
            // index; its readers wait on every commit meanwhile.
            WatchKey::Nodes(p) => self
                .idx
                .per_partition_nodes
                .get(&fold(p))
                .copied()
                .unwrap_or(self.idx.nodes),
            WatchKey::Services { node_meta, ns } => {
                let services = match ns {
                    None => self.idx.services,
                    Some(ns) => self
                        .idx
                        .per_ns_services
                        .get(&fold(ns))
                        .copied()
                        .unwrap_or(0),
                };
                if *node_meta {
                    services.max(self.idx.nodes)
                } else {
                    services
                }
            }
            WatchKey::Checks => self.idx.checks,
            WatchKey::Service(name) => match self.idx.per_service.get(&fold(name)) {
                Some(i) => *i,
                None if self.idx.service_extinction > 0 => self.idx.service_extinction,
                None => self.idx.nodes.max(self.idx.services),
            },
            WatchKey::Node(key) => match self.idx.per_node.get(key) {
                Some(i) => *i,
                None => self.idx.node_extinction,
            },
        }
    }

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

    fn instances<'a>(
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
            out.push(s.to_service_node_json(node));
        }
        let index = self.index_for(&WatchKey::Service(svc_key_in(partition, ns, name)));
        ReadResult {
            index,
            body: Value::Array(out),
            filtered,
        }
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
            let lnode = node_key(partition, &node.name);
            let mut checks: Vec<&CheckRec> = self
                .checks_of(&lnode, "")
                .chain(self.checks_of(&lnode, &fold(&s.id)))
                .collect();
            checks.sort_by_key(|c| fold(&c.check_id));
            if filter.passing && checks.iter().any(|c| c.status != "passing") {
                continue;
            }
            out.push(json!({
                "Node": node.to_json(),
                "Service": s.to_node_service_json(true),
                "Checks": checks.iter().map(|c| c.to_json()).collect::<Vec<_>>(),
            }));
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
        let lnode = node_key(partition, node);
        let index = self.index_for(&WatchKey::Node(lnode.clone()));
        let Some(n) = self.nodes.get(&lnode) else {
            return ReadResult {
                index,
                body: json!({"Node": null, "Services": null}),
                filtered: false,
            };
        };
        if !acl.node_read(partition, &n.name) {
            return ReadResult {
                index,
                body: json!({"Node": null, "Services": null}),
                filtered: true,
            };
        }
        let mut filtered = false;
        let mut services = Vec::new();
        for s in self
            .services_on(&lnode)
            .filter(|s| ns.matches(s.namespace()))
        {
            if acl.service_read(partition, s.namespace(), &s.name) {
                services.push(s.to_node_service_json(true));
            } else {
                filtered = true;
            }
        }
        let services = if services.is_empty() {
            Value::Null
        } else {
            Value::Array(services)
        };
        ReadResult {
            index,
            body: json!({"Node": n.to_json(), "Services": services}),
            filtered,
        }
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
        let lnode = node_key(partition, node);
        let index = self.index_for(&WatchKey::Node(lnode.clone()));
        let Some(n) = self.nodes.get(&lnode) else {
            return ReadResult {
                index,
                body: Value::Array(Vec::new()),
                filtered: false,
            };
        };
        if !acl.node_read(partition, &n.name) {
            return ReadResult {
                index,
                body: Value::Array(Vec::new()),
                filtered: true,
            };
        }
        let mut filtered = false;
        let mut out = Vec::new();
        for c in self.checks_on(&lnode).filter(|c| ns.matches(c.namespace())) {
            if !c.service_name.is_empty()
                && !acl.service_read(partition, c.namespace(), &c.service_name)
            {
                filtered = true;
                continue;
            }
            out.push(c.to_json());
        }
        ReadResult {
            index,
            body: Value::Array(out),
            filtered,
        }
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

    /// `(node, ID)` of every instance in namespace `ns` of `partition`.
    pub fn services_in_namespace(&self, partition: &str, ns: &str) -> Vec<(String, String)> {
        self.services
            .values()
            .filter(|s| {
                s.namespace().eq_ignore_ascii_case(ns)
                    && s.partition().eq_ignore_ascii_case(partition)
            })
            .map(|s| (s.node.clone(), s.id.clone()))
            .collect()
    }

    /// The names of the nodes of `partition`.
    pub fn nodes_in_partition(&self, partition: &str) -> Vec<String> {
        self.nodes
            .values()
            .filter(|n| n.partition().eq_ignore_ascii_case(partition))
            .map(|n| n.name.clone())
            .collect()
    }

    /// Number of nodes, services and checks (for tests and stats).
    pub fn counts(&self) -> (usize, usize, usize) {
        (self.nodes.len(), self.services.len(), self.checks.len())
    }

    fn raw_put_node(&mut self, key: &str, rec: Option<NodeRec>) -> Option<NodeRec> {
        match rec {
            Some(r) => self.nodes.insert(key.to_string(), r),
            None => self.nodes.remove(key),
        }
    }

    fn raw_put_service(&mut self, key: &RecKey, rec: Option<ServiceRec>) -> Option<ServiceRec> {
        let old = match rec {
            Some(r) => {
                let lname = r.key();
                self.by_name.entry(lname).or_default().insert(key.clone());
                self.services.insert(key.clone(), r)
            }
            None => self.services.remove(key),
        };
        if let Some(o) = &old {
            let lname = o.key();
            let still_named = self.services.get(key).is_some_and(|n| n.key() == lname);
            if !still_named && let Some(set) = self.by_name.get_mut(&lname) {
                set.remove(key);
                if set.is_empty() {
                    self.by_name.remove(&lname);
                }
            }
        }
        old
    }

    fn raw_put_check(&mut self, key: &RecKey, rec: Option<CheckRec>) -> Option<CheckRec> {
        let by_service = |c: &CheckRec| (key.0.clone(), fold(&c.service_id));
        if let Some(r) = &rec {
            self.checks_by_service
                .entry(by_service(r))
                .or_default()
                .insert(key.1.clone());
        }
        let new_owner = rec.as_ref().map(by_service);
        let old = match rec {
            Some(r) => self.checks.insert(key.clone(), r),
            None => self.checks.remove(key),
        };
        if let Some(o) = &old {
            let owner = by_service(o);
            if Some(&owner) != new_owner.as_ref()
                && let Some(set) = self.checks_by_service.get_mut(&owner)
            {
                set.remove(&key.1);
                if set.is_empty() {
                    self.checks_by_service.remove(&owner);
                }
            }
        }
        old
    }
}

enum Undo {
    Node(String, Option<NodeRec>),
    Service(RecKey, Option<ServiceRec>),
    Check(RecKey, Option<CheckRec>),
}

#[derive(Default)]
struct Changes {
    node_table: bool,
    service_table: bool,
    check_table: bool,
    nodes: BTreeSet<String>,
    service_names: BTreeSet<String>,
    namespaces: BTreeSet<String>,
    node_partitions: BTreeSet<String>,
}

impl Changes {
    fn any(&self) -> bool {
        self.node_table || self.service_table || self.check_table
    }
}

/// One write in progress (see [`Store::apply`]). Every mutation is journaled
/// so the write is all-or-nothing.
pub(crate) struct Tx<'a> {
    store: &'a mut Store,
    idx: u64,
    undo: Vec<Undo>,
    changes: Changes,
}

impl Tx<'_> {
    /// Read access to the state as modified so far by this write.
    pub fn store(&self) -> &Store {
        self.store
    }

    fn service_names_on(&self, lnode: &str) -> Vec<String> {
        self.store.services_on(lnode).map(ServiceRec::key).collect()
    }

    fn put_node(&mut self, key: String, rec: Option<NodeRec>) {
        let old = self.store.raw_put_node(&key, rec);
        self.undo.push(Undo::Node(key.clone(), old));
        self.changes.node_table = true;
        self.changes.node_partitions.insert(partition_of_key(&key));
        // The node's fields appear in service and health queries.
        for name in self.service_names_on(&key) {
            self.changes.service_names.insert(name);
        }
        self.changes.nodes.insert(key);
    }

    fn put_service(&mut self, key: RecKey, rec: Option<ServiceRec>) {
        if let Some(r) = &rec {
            self.changes.service_names.insert(r.key());
            self.changes
                .namespaces
                .insert(ns_key(r.partition(), r.namespace()));
        }
        let old = self.store.raw_put_service(&key, rec);
        if let Some(o) = &old {
            self.changes.service_names.insert(o.key());
            self.changes
                .namespaces
                .insert(ns_key(o.partition(), o.namespace()));
        }
        self.undo.push(Undo::Service(key.clone(), old));
        self.changes.service_table = true;
        self.changes.node_table = true;
        self.changes
            .node_partitions
            .insert(partition_of_key(&key.0));
        self.changes.nodes.insert(key.0);
    }

    fn put_check(&mut self, key: RecKey, rec: Option<CheckRec>) {
        let service_id = rec
            .as_ref()
            .or_else(|| self.store.checks.get(&key))
            .map(|c| c.service_id.clone())
            .unwrap_or_default();
        if service_id.is_empty() {
            // A node-level check changes the health of every service there.
            for name in self.service_names_on(&key.0) {
                self.changes.service_names.insert(name);
            }
        } else if let Some(s) = self.store.services.get(&(key.0.clone(), fold(&service_id))) {
            self.changes.service_names.insert(s.key());
        }
        let old = self.store.raw_put_check(&key, rec);
        self.undo.push(Undo::Check(key.clone(), old));
        self.changes.check_table = true;
        self.changes.nodes.insert(key.0);
    }

    fn commit(self) -> bool {
        let Tx {
            store,
            idx,
            changes,
            ..
        } = self;
        if !changes.any() {
            return false;
        }
        if changes.node_table {
            store.idx.nodes = idx;
            store.pending.nodes_table = true;
        }
        for p in &changes.node_partitions {
            store.idx.per_partition_nodes.insert(p.clone(), idx);
        }
        store
            .pending
            .node_partitions
            .extend(changes.node_partitions.iter().cloned());
        if changes.service_table {
            store.idx.services = idx;
            store.pending.services_table = true;
        }
        for ns in &changes.namespaces {
            store.idx.per_ns_services.insert(ns.clone(), idx);
        }
        store
            .pending
            .service_namespaces
            .extend(changes.namespaces.iter().cloned());
        if changes.check_table {
            store.idx.checks = idx;
        }
        store
            .pending
            .service_names
            .extend(changes.service_names.iter().cloned());
        store.pending.nodes.extend(changes.nodes.iter().cloned());
        for name in changes.service_names {
            if store.by_name.contains_key(&name) {
                store.idx.per_service.insert(name, idx);
            } else {
                store.idx.per_service.remove(&name);
                store.idx.service_extinction = idx;
            }
        }
        for node in changes.nodes {
            if store.nodes.contains_key(&node) {
                store.idx.per_node.insert(node, idx);
            } else {
                store.idx.per_node.remove(&node);
                store.idx.node_extinction = idx;
            }
        }
        true
    }

    fn rollback(self) {
        let Tx { store, undo, .. } = self;
        for u in undo.into_iter().rev() {
            match u {
                Undo::Node(k, v) => {
                    store.raw_put_node(&k, v);
                }
                Undo::Service(k, v) => {
                    store.raw_put_service(&k, v);
                }
                Undo::Check(k, v) => {
                    store.raw_put_check(&k, v);
                }
            }
        }
    }

    /// Upserts a node (Consul's `ensureNodeTxn`): identical content is a
    /// no-op that keeps the indexes.
    pub fn ensure_node(&mut self, mut rec: NodeRec) {
        let key = node_key(rec.partition(), &rec.name);
        if let Some(existing) = self.store.nodes.get(&key) {
            rec.create_index = existing.create_index;
            rec.modify_index = existing.modify_index;
            if rec.same_content(existing) {
                return;
            }
            rec.modify_index = self.idx;
        } else {
            rec.create_index = self.idx;
            rec.modify_index = self.idx;
        }
        self.put_node(key, Some(rec));
    }

    /// Upserts a service instance on `rec.node` (`ensureServiceTxn`).
    pub fn ensure_service(&mut self, mut rec: ServiceRec) -> Result<(), StoreError> {
        let lnode = node_key(rec.partition(), &rec.node);
        if !self.store.nodes.contains_key(&lnode) {
            return Err(StoreError::MissingNode);
        }
        let key = (lnode, fold(&rec.id));
        if let Some(existing) = self.store.services.get(&key) {
            rec.create_index = existing.create_index;
            rec.modify_index = existing.modify_index;
            if rec.same_content(existing) {
                return Ok(());
            }
            rec.modify_index = self.idx;
        } else {
            rec.create_index = self.idx;
            rec.modify_index = self.idx;
        }
        self.put_service(key, Some(rec));
        Ok(())
    }

    /// Upserts a check (`ensureCheckTxn`): the node (and the service, for a
    /// service check) must exist; the service's name and tags are copied in;
    /// an empty status becomes `critical`.
    pub fn ensure_check(&mut self, mut rec: CheckRec) -> Result<(), StoreError> {
        let lnode = node_key(rec.partition(), &rec.node);
        if !self.store.nodes.contains_key(&lnode) {
            return Err(StoreError::MissingNode);
        }
        if !rec.service_id.is_empty() {
            let Some(s) = self
                .store
                .services
                .get(&(lnode.clone(), fold(&rec.service_id)))
            else {
                return Err(StoreError::MissingService);
            };
            rec.service_name = s.name.clone();
            rec.service_tags = s.tags.clone();
            rec.ns = s.ns.clone();
        }
        if rec.status.is_empty() {
            rec.status = "critical".into();
        }
        let key = (lnode, fold(&rec.check_id));
        if let Some(existing) = self.store.checks.get(&key) {
            rec.create_index = existing.create_index;
            rec.modify_index = existing.modify_index;
            if rec.same_content(existing) {
                return Ok(());
            }
            rec.modify_index = self.idx;
        } else {
            rec.create_index = self.idx;
            rec.modify_index = self.idx;
        }
        self.put_check(key, Some(rec));
        Ok(())
    }

    /// Deletes a service instance of the default partition.
    #[cfg(test)]
    pub fn delete_service(&mut self, node: &str, id: &str) {
        self.delete_service_in(crate::model::DEFAULT_TENANCY, node, id);
    }

    /// Deletes a node of the default partition.
    #[cfg(test)]
    pub fn delete_node(&mut self, node: &str) {
        self.delete_node_in(crate::model::DEFAULT_TENANCY, node);
    }

    /// Deletes a check; a missing check is a no-op.
    pub fn delete_check_in(&mut self, partition: &str, node: &str, check_id: &str) {
        self.delete_check_key((node_key(partition, node), fold(check_id)));
    }

    fn delete_check_key(&mut self, key: RecKey) {
        if self.store.checks.contains_key(&key) {
            self.put_check(key, None);
        }
    }

    /// Deletes a service instance and its checks; a missing one is a no-op.
    pub fn delete_service_in(&mut self, partition: &str, node: &str, id: &str) {
        self.delete_service_key((node_key(partition, node), fold(id)));
    }

    fn delete_service_key(&mut self, key: RecKey) {
        if !self.store.services.contains_key(&key) {
            return;
        }
        let doomed: Vec<RecKey> = self
            .store
            .checks_of(&key.0, &key.1)
            .map(|c| (key.0.clone(), fold(&c.check_id)))
            .collect();
        for k in doomed {
            self.put_check(k, None);
        }
        self.put_service(key, None);
    }

    /// Deletes a node with all its services and checks; a missing node is a
    /// no-op.
    pub fn delete_node_in(&mut self, partition: &str, node: &str) {
        let lnode = node_key(partition, node);
        if !self.store.nodes.contains_key(&lnode) {
            return;
        }
        let services: Vec<String> = self
            .store
            .services_on(&lnode)
            .map(|s| s.id.clone())
            .collect();
        for id in services {
            self.delete_service_key((lnode.clone(), fold(&id)));
        }
        let checks: Vec<String> = self
            .store
            .checks_on(&lnode)
            .map(|c| c.check_id.clone())
            .collect();
        for id in checks {
            self.delete_check_key((lnode.clone(), fold(&id)));
        }
        self.put_node(lnode, None);
    }
}

/// Formats `s` the way Go's `%q` does, for error texts copied from Consul.
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Weights;
    use proptest::prelude::*;

    fn node(name: &str, addr: &str) -> NodeRec {
        NodeRec {
            id: String::new(),
            name: name.into(),
            address: addr.into(),
            datacenter: "dc1".into(),
            tagged_addresses: None,
            meta: None,
            partition: None,
            create_index: 0,
            modify_index: 0,
        }
    }

    fn svc(node: &str, id: &str, name: &str, port: i64) -> ServiceRec {
        ServiceRec {
            node: node.into(),
            kind: String::new(),
            id: id.into(),
            name: name.into(),
            tags: None,
            address: String::new(),
            tagged_addresses: BTreeMap::new(),
            meta: None,
            port,
            ports: Vec::new(),
            weights: Weights::DEFAULT,
            enable_tag_override: false,
            ns: None,
            partition: None,
            create_index: 0,
            modify_index: 0,
        }
    }

    fn check(node: &str, id: &str, service_id: &str, status: &str) -> CheckRec {
        CheckRec {
            node: node.into(),
            check_id: id.into(),
            name: id.into(),
            status: status.into(),
            notes: String::new(),
            output: String::new(),
            service_id: service_id.into(),
            service_name: String::new(),
            service_tags: None,
            check_type: String::new(),
            definition: json!({}),
            ns: None,
            partition: None,
            create_index: 0,
            modify_index: 0,
        }
    }

    fn register(st: &mut Store, n: &str, s: ServiceRec) -> bool {
        let (r, changed) = st.apply(true, |tx| {
            tx.ensure_node(node(n, "10.0.0.1"));
            tx.ensure_service(s)
        });
        r.unwrap();
        changed
    }

    #[test]
    fn identical_reregistration_counts_a_raft_apply_but_moves_no_index() {
        let mut st = Store::default();
        assert!(register(&mut st, "n1", svc("n1", "web-1", "web", 80)));
        let before = st.service("n1", "web-1").unwrap().clone();
        let idx_before = st.index_for(&WatchKey::Service(svc_key("default", "web")));
        assert!(!register(&mut st, "n1", svc("n1", "web-1", "web", 80)));
        assert_eq!(st.raft_applies(), 2);
        assert_eq!(st.raft_index(), 2);
        assert_eq!(st.service("n1", "web-1").unwrap(), &before);
        assert_eq!(
            st.index_for(&WatchKey::Service(svc_key("default", "web"))),
            idx_before
        );
        assert_eq!(st.index_for(&WatchKey::Node("n1".into())), 1);
        // A real change moves ModifyIndex to the new Raft index only.
        assert!(register(&mut st, "n1", svc("n1", "web-1", "web", 81)));
        let after = st.service("n1", "web-1").unwrap();
        assert_eq!((after.create_index, after.modify_index), (1, 3));
        assert_eq!(
            st.index_for(&WatchKey::Service(svc_key("default", "web"))),
            3
        );
    }

    #[test]
    fn failed_write_rolls_back_everything() {
        let mut st = Store::default();
        register(&mut st, "n1", svc("n1", "a", "web", 80));
        let snapshot = st.clone();
        let (r, changed) = st.apply(true, |tx| {
            tx.ensure_node(node("n2", "10.0.0.2"));
            tx.ensure_service(svc("n2", "b", "db", 5432))?;
            tx.delete_node("n1");
            tx.ensure_service(svc("missing", "c", "x", 1))
        });
        assert_eq!(r, Err(StoreError::MissingNode));
        assert!(!changed);
        assert_eq!(
            st.raft_index(),
            snapshot.raft_index() + 1,
            "the apply still happened"
        );
        let mut expected = snapshot;
        expected.raft_index += 1;
        expected.raft_applies += 1;
        assert_eq!(st, expected);
    }

    #[test]
    fn lookups_are_case_insensitive_and_keep_registered_case() {
        let mut st = Store::default();
        register(&mut st, "Node-A", svc("Node-A", "Web-1", "Web", 80));
        assert_eq!(st.node("node-a").unwrap().name, "Node-A");
        assert_eq!(st.service("NODE-A", "web-1").unwrap().id, "Web-1");
        let r = st.read_service_nodes(
            "default",
            "default",
            "web",
            &ListFilter::default(),
            &AllowAll,
        );
        assert_eq!(r.body.as_array().unwrap().len(), 1);
    }

    #[test]
    fn deleting_last_instance_sets_the_extinction_index() {
        let mut st = Store::default();
        register(&mut st, "n1", svc("n1", "a", "web", 80));
        let (r, _) = st.apply(true, |tx| {
            tx.delete_service("n1", "a");
            Ok::<_, StoreError>(())
        });
        r.unwrap();
        assert_eq!(
            st.index_for(&WatchKey::Service(svc_key("default", "web"))),
            2
        );
        // A never-registered name reports the extinction index too.
        assert_eq!(
            st.index_for(&WatchKey::Service(svc_key("default", "other"))),
            2
        );
    }

    #[test]
    fn node_changes_move_the_indexes_of_its_services() {
        let mut st = Store::default();
        register(&mut st, "n1", svc("n1", "a", "web", 80));
        let (r, changed) = st.apply(true, |tx| {
            tx.ensure_node(node("n1", "10.9.9.9"));
            Ok::<_, StoreError>(())
        });
        r.unwrap();
        assert!(changed);
        assert_eq!(
            st.index_for(&WatchKey::Service(svc_key("default", "web"))),
            2
        );
        assert_eq!(st.index_for(&WatchKey::Node("n1".into())), 2);
        assert_eq!(
            st.index_for(&WatchKey::Services {
                node_meta: false,
                ns: None
            }),
            1
        );
    }

    #[test]
    fn checks_need_their_node_and_service_and_copy_the_service_name() {
        let mut st = Store::default();
        register(&mut st, "n1", svc("n1", "a", "web", 80));
        let (r, _) = st.apply(true, |tx| tx.ensure_check(check("n2", "c", "", "passing")));
        assert_eq!(r, Err(StoreError::MissingNode));
        let (r, _) = st.apply(true, |tx| {
            tx.ensure_check(check("n1", "c", "zz", "passing"))
        });
        assert_eq!(r, Err(StoreError::MissingService));
        let (r, _) = st.apply(true, |tx| tx.ensure_check(check("n1", "c", "a", "")));
        r.unwrap();
        let c = st.check("n1", "c").unwrap();
        assert_eq!(c.service_name, "web");
        assert_eq!(c.status, "critical");
        assert_eq!(
            st.index_for(&WatchKey::Service(svc_key("default", "web"))),
            4
        );
    }

    #[test]
    fn deleting_a_service_deletes_its_checks_but_not_node_checks() {
        let mut st = Store::default();
        register(&mut st, "n1", svc("n1", "a", "web", 80));
        let (r, _) = st.apply(true, |tx| {
            tx.ensure_check(check("n1", "svc-check", "a", "passing"))?;
            tx.ensure_check(check("n1", "node-check", "", "passing"))
        });
        r.unwrap();
        let (r, _) = st.apply(true, |tx| {
            tx.delete_service("n1", "A");
            Ok::<_, StoreError>(())
        });
        r.unwrap();
        assert!(st.check("n1", "svc-check").is_none());
        assert!(st.check("n1", "node-check").is_some());
    }

    #[test]
    fn health_passing_filter_drops_instances_with_any_failing_check() {
        let mut st = Store::default();
        register(&mut st, "n1", svc("n1", "a", "web", 80));
        register(&mut st, "n2", svc("n2", "b", "web", 80));
        let (r, _) = st.apply(true, |tx| {
            tx.ensure_check(check("n1", "c1", "a", "passing"))?;
            tx.ensure_check(check("n2", "serf", "", "critical"))
        });
        r.unwrap();
        let all = st.read_health_service(
            "default",
            "default",
            "web",
            &ListFilter::default(),
            &AllowAll,
        );
        assert_eq!(all.body.as_array().unwrap().len(), 2);
        let f = ListFilter {
            passing: true,
            ..ListFilter::default()
        };
        let passing = st.read_health_service("default", "default", "web", &f, &AllowAll);
        let arr = passing.body.as_array().unwrap();
        assert_eq!(arr.len(), 1);
        assert_eq!(arr[0]["Node"]["Node"], "n1");
    }

    #[test]
    fn tag_and_node_meta_filters() {
        let mut st = Store::default();
        let mut a = svc("n1", "a", "web", 80);
        a.tags = Some(vec!["Primary".into(), "v1".into()]);
        register(&mut st, "n1", a);
        register(&mut st, "n2", svc("n2", "b", "web", 80));
        let (r, _) = st.apply(true, |tx| {
            let mut n = node("n2", "10.0.0.2");
            n.meta = Some(BTreeMap::from([("env".to_string(), "prod".to_string())]));
            tx.ensure_node(n);
            Ok::<_, StoreError>(())
        });
        r.unwrap();
        let by_tag = ListFilter {
            tags: Some(vec!["primary".into()]),
            ..Default::default()
        };
        let r = st.read_service_nodes("default", "default", "web", &by_tag, &AllowAll);
        assert_eq!(r.body.as_array().unwrap().len(), 1);
        let by_meta = ListFilter {
            node_meta: vec![("env".into(), "prod".into())],
            ..Default::default()
        };
        let r = st.read_service_nodes("default", "default", "web", &by_meta, &AllowAll);
        assert_eq!(r.body[0]["Node"], "n2");
        let r = st.read_services("default", &NsSel::default_ns(), &by_meta, &AllowAll);
        assert_eq!(r.body, json!({"web": []}));
        let r = st.read_services(
            "default",
            &NsSel::default_ns(),
            &ListFilter::default(),
            &AllowAll,
        );
        assert_eq!(r.body, json!({"web": ["Primary", "v1"]}));
    }

    #[test]
    fn node_services_of_unknown_or_empty_node_render_nulls() {
        let mut st = Store::default();
        let r = st.read_node_services("default", &NsSel::default_ns(), "nope", &AllowAll);
        assert_eq!(r.body, json!({"Node": null, "Services": null}));
        let (res, _) = st.apply(true, |tx| {
            tx.ensure_node(node("n1", "a"));
            Ok::<_, StoreError>(())
        });
        res.unwrap();
        let r = st.read_node_services("default", &NsSel::default_ns(), "n1", &AllowAll);
        assert_eq!(r.body["Services"], Value::Null);
        assert_eq!(r.body["Node"]["Node"], "n1");
        assert_eq!(
            st.read_node("default", &NsSel::default_ns(), "nope", &AllowAll)
                .body,
            Value::Null
        );
    }

    #[test]
    fn change_sets_name_exactly_the_moved_keys() {
        let mut st = Store::default();
        register(&mut st, "n1", svc("n1", "a", "Web", 80));
        let c = st.take_changes();
        assert_eq!(c.service_names, BTreeSet::from(["default/web".to_string()]));
        assert_eq!(c.nodes, BTreeSet::from(["n1".to_string()]));
        assert!(c.nodes_table && c.services_table);
        assert!(st.take_changes().is_empty(), "taken once");
        // An identical write and a failed write change nothing.
        register(&mut st, "n1", svc("n1", "a", "Web", 80));
        let (r, _) = st.apply(true, |tx| tx.ensure_service(svc("ghost", "x", "x", 1)));
        assert!(r.is_err());
        assert!(st.take_changes().is_empty());
        assert!(st.has_own_index(&WatchKey::Service(svc_key("default", "WEB"))));
        assert!(!st.has_own_index(&WatchKey::Service(svc_key("default", "db"))));
        assert!(!st.has_own_index(&WatchKey::Services {
            node_meta: true,
            ns: None
        }));
        assert_eq!(
            WatchKey::Node(node_key("default", "N1")).folded(),
            WatchKey::Node("n1".into()),
            "node keys are folded once, when built"
        );
    }

    #[test]
    fn node_and_namespace_keys_never_meet_across_partitions() {
        // A default-partition node whose name looks like another
        // partition's key stays a different node.
        assert_ne!(node_key("default", "Peu/n1"), node_key("eu", "n1"));
        assert_eq!(node_key("EU", "N1"), node_key("eu", "n1"));
        assert_eq!(node_key("DEFAULT", "N1"), "n1");
        assert_ne!(
            svc_key_in("default", "eu", "x"),
            svc_key_in("eu", "default", "x")
        );
        assert_eq!(ns_key("eu", "Team"), ns_key("EU", "team"));
        assert_eq!(
            ns_key("eu", "team"),
            fold(&ns_key("eu", "team")),
            "stable when folded again"
        );

        let mut st = Store::default();
        register(&mut st, "n1", svc("n1", "a", "web", 80));
        st.take_changes();
        let mut n = node("N1", "10.0.0.2");
        n.partition = Some("eu".into());
        let mut s = svc("n1", "a", "web", 81);
        s.partition = Some("eu".into());
        let (r, _) = st.apply(true, |tx| {
            tx.ensure_node(n);
            tx.ensure_service(s)
        });
        r.unwrap();
        let changes = st.take_changes();
        assert_eq!(changes.nodes, BTreeSet::from([node_key("eu", "n1")]));
        assert_eq!(st.counts(), (2, 2, 0));
        assert_eq!(st.node_in("eu", "n1").unwrap().address, "10.0.0.2");
        assert_eq!(st.node("n1").unwrap().address, "10.0.0.1");
        let (r, _) = st.apply(true, |tx| {
            tx.delete_node_in("eu", "n1");
            Ok::<_, StoreError>(())
        });
        r.unwrap();
        assert_eq!(st.counts(), (1, 1, 0));
        assert_eq!(st.service("n1", "a").unwrap().port, 80);
    }

    #[test]
    fn go_quote_matches_go_formatting() {
        assert_eq!(go_quote("web"), "\"web\"");
        assert_eq!(go_quote("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
        assert_eq!(go_quote("\u{1}"), "\"\\x01\"");
        assert_eq!(go_quote("é"), "\"é\"");
    }

    /// A deliberately simple model of the catalog: node -> services.
    #[derive(Debug, Clone, Default, PartialEq)]
    struct Model {
        nodes: BTreeMap<String, BTreeMap<String, (String, i64)>>,
    }

    #[derive(Debug, Clone)]
    enum Op {
        Register {
            node: String,
            id: String,
            name: String,
            port: i64,
        },
        DeleteService {
            node: String,
            id: String,
        },
        DeleteNode {
            node: String,
        },
        /// A multi-op write that fails at the end if `fail`.
        Batch {
            ops: Vec<(String, String, i64)>,
            fail: bool,
        },
    }

    fn arb_op() -> impl Strategy<Value = Op> {
        let node = prop::sample::select(vec!["n1", "n2", "n3"]).prop_map(String::from);
        let id = prop::sample::select(vec!["a", "b", "c"]).prop_map(String::from);
        let name = prop::sample::select(vec!["web", "db"]).prop_map(String::from);
        prop_oneof![
            (node.clone(), id.clone(), name, 1..4i64).prop_map(|(node, id, name, port)| {
                Op::Register {
                    node,
                    id,
                    name,
                    port,
                }
            }),
            (node.clone(), id.clone()).prop_map(|(node, id)| Op::DeleteService { node, id }),
            node.clone().prop_map(|node| Op::DeleteNode { node }),
            (
                prop::collection::vec((node, id, 1..4i64), 1..4),
                any::<bool>()
            )
                .prop_map(|(ops, fail)| Op::Batch { ops, fail }),
        ]
    }

    proptest! {
        #[test]
        fn store_matches_model_and_indexes_only_move_on_change(ops in prop::collection::vec(arb_op(), 1..40)) {
            let mut st = Store::default();
            let mut model = Model::default();
            for op in ops {
                let before = st.clone();
                let model_before = model.clone();
                let (ok, changed) = match &op {
                    Op::Register { node: n, id, name, port } => {
                        model.nodes.entry(n.clone()).or_default().insert(id.clone(), (name.clone(), *port));
                        let (r, c) = st.apply(true, |tx| {
                            tx.ensure_node(node(n, "10.0.0.1"));
                            tx.ensure_service(svc(n, id, name, *port))
                        });
                        (r.is_ok(), c)
                    }
                    Op::DeleteService { node: n, id } => {
                        if let Some(s) = model.nodes.get_mut(n) { s.remove(id); }
                        let (r, c) = st.apply(true, |tx| { tx.delete_service(n, id); Ok::<_, StoreError>(()) });
                        (r.is_ok(), c)
                    }
                    Op::DeleteNode { node: n } => {
                        model.nodes.remove(n);
                        let (r, c) = st.apply(true, |tx| { tx.delete_node(n); Ok::<_, StoreError>(()) });
                        (r.is_ok(), c)
                    }
                    Op::Batch { ops, fail } => {
                        if !fail {
                            for (n, id, port) in ops {
                                model.nodes.entry(n.clone()).or_default().insert(id.clone(), ("batch".into(), *port));
                            }
                        }
                        let (r, c) = st.apply(true, |tx| {
                            for (n, id, port) in ops {
                                tx.ensure_node(node(n, "10.0.0.1"));
                                tx.ensure_service(svc(n, id, "batch", *port))?;
                            }
                            if *fail { Err(StoreError::MissingService) } else { Ok(()) }
                        });
                        (r.is_ok(), c)
                    }
                };
                // One Raft apply per write, successful or not.
                prop_assert_eq!(st.raft_applies(), before.raft_applies() + 1);
                if !ok {
                    let mut expected = before.clone();
                    expected.raft_index += 1;
                    expected.raft_applies += 1;
                    prop_assert_eq!(&st, &expected);
                }
                // Indexes and records move only with a content change.
                if !changed {
                    prop_assert_eq!(&st.idx, &before.idx);
                    prop_assert_eq!(&st.services, &before.services);
                    prop_assert_eq!(&st.nodes, &before.nodes);
                } else {
                    prop_assert!(model != model_before || st.services != before.services || st.nodes != before.nodes);
                }
                // The store's services equal the model's, node by node.
                let mut seen = Model::default();
                for s in st.services.values() {
                    seen.nodes.entry(s.node.clone()).or_default().insert(s.id.clone(), (s.name.clone(), s.port));
                }
                let expected_nodes: BTreeMap<_, _> = model.nodes.iter().filter(|(_, s)| !s.is_empty()).map(|(k, v)| (k.clone(), v.clone())).collect();
                prop_assert_eq!(seen.nodes, expected_nodes);
                // Secondary index consistency.
                for (lname, keys) in &st.by_name {
                    prop_assert!(!keys.is_empty());
                    for k in keys {
                        prop_assert_eq!(&st.services[k].key(), lname);
                    }
                }
                prop_assert_eq!(st.by_name.values().map(|k| k.len()).sum::<usize>(), st.services.len());
                for (n, _) in st.services.keys() {
                    prop_assert!(st.nodes.contains_key(n), "service on a missing node");
                }
                for ((n, _), s) in &st.services {
                    prop_assert!(s.modify_index <= st.raft_index && s.create_index <= s.modify_index);
                    prop_assert!(st.idx.per_node.get(n).copied().unwrap_or(0) >= s.modify_index);
                }
            }
        }
    }
}
