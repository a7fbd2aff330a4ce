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

use crate::model::{CheckRec, HealthCheckJson, NodeRec, NodeServiceJson, Record, ServiceRec};

mod reads;
mod tx;

pub(crate) use tx::*;

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
    /// By [`svc_key`].
    per_service: KeyIndexes,
    /// By folded node key.
    per_node: KeyIndexes,
    /// The `services` index of each namespace (folded) that ever held a
    /// service: a listing of one namespace moves only with its own changes.
    per_ns_services: BTreeMap<String, u64>,
    /// The `nodes` index of each partition (folded) whose nodes ever
    /// changed: a node listing of one partition moves only with its own.
    per_partition_nodes: BTreeMap<String, u64>,
}

/// The indexes of the keys of one kind (service names, nodes): each key's
/// own, and the index at which a key last went extinct, which a read of an
/// absent key reports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct KeyIndexes {
    per_key: BTreeMap<String, u64>,
    extinction: u64,
}

impl KeyIndexes {
    /// Moves the index of every changed key that still `exists` to `idx`;
    /// a key that is gone loses its own and moves the extinction index.
    fn moved(&mut self, keys: BTreeSet<String>, exists: impl Fn(&str) -> bool, idx: u64) {
        for key in keys {
            if exists(&key) {
                self.per_key.insert(key, idx);
            } else {
                self.per_key.remove(&key);
                self.extinction = idx;
            }
        }
    }
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

/// A read whose body is already serialized (the whole-node reads, see
/// `model::direct`): the index, the JSON bytes, and whether ACLs removed
/// anything.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct JsonRead {
    pub index: u64,
    pub body: Vec<u8>,
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

    fn services_on<'a>(&'a self, lnode: &str) -> impl Iterator<Item = &'a ServiceRec> + use<'a> {
        let lnode = lnode.to_string();
        self.services
            .range((lnode.clone(), String::new())..)
            .take_while(move |((n, _), _)| *n == lnode)
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

    fn checks_on<'a>(&'a self, lnode: &str) -> impl Iterator<Item = &'a CheckRec> + use<'a> {
        let lnode = lnode.to_string();
        self.checks
            .range((lnode.clone(), String::new())..)
            .take_while(move |((n, _), _)| *n == lnode)
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
            WatchKey::Service(name) => self.idx.per_service.per_key.contains_key(&fold(name)),
            WatchKey::Node(key) => self.idx.per_node.per_key.contains_key(key),
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
            WatchKey::Service(name) => match self.idx.per_service.per_key.get(&fold(name)) {
                Some(i) => *i,
                None if self.idx.per_service.extinction > 0 => self.idx.per_service.extinction,
                None => self.idx.nodes.max(self.idx.services),
            },
            WatchKey::Node(key) => match self.idx.per_node.per_key.get(key) {
                Some(i) => *i,
                None => self.idx.per_node.extinction,
            },
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
mod tests;
