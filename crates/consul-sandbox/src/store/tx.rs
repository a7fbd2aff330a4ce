//! One write in progress ([`Tx`]): every mutation journaled so the write is
//! all-or-nothing, the record-level operations (ensure and delete of
//! nodes, services, checks), and on commit the indexes it moves and the
//! keys it leaves pending for the watchers.
//!
//! This module must NOT render responses, check ACLs or wake watchers: the
//! HTTP side takes the pending keys and signals them.

use super::*;

pub(super) enum Undo {
    Node(String, Option<NodeRec>),
    Service(RecKey, Option<ServiceRec>),
    Check(RecKey, Option<CheckRec>),
}

#[derive(Default)]
pub(super) struct Changes {
    pub(super) node_table: bool,
    pub(super) service_table: bool,
    pub(super) check_table: bool,
    pub(super) nodes: BTreeSet<String>,
    pub(super) service_names: BTreeSet<String>,
    pub(super) namespaces: BTreeSet<String>,
    pub(super) node_partitions: BTreeSet<String>,
}

impl Changes {
    pub(super) fn any(&self) -> bool {
        self.node_table || self.service_table || self.check_table
    }
}

/// One write in progress (see [`Store::apply`]). Every mutation is journaled
/// so the write is all-or-nothing.
pub(crate) struct Tx<'a> {
    pub(super) store: &'a mut Store,
    pub(super) idx: u64,
    pub(super) undo: Vec<Undo>,
    pub(super) changes: Changes,
}

impl Tx<'_> {
    /// Read access to the state as modified so far by this write.
    pub fn store(&self) -> &Store {
        self.store
    }

    pub(super) fn service_names_on(&self, lnode: &str) -> Vec<String> {
        self.store.services_on(lnode).map(ServiceRec::key).collect()
    }

    pub(super) fn put_node(&mut self, key: String, rec: Option<NodeRec>) {
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

    pub(super) fn put_service(&mut self, key: RecKey, rec: Option<ServiceRec>) {
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

    pub(super) fn put_check(&mut self, key: RecKey, rec: Option<CheckRec>) {
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

    pub(super) fn commit(self) -> bool {
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
        if changes.service_table {
            store.idx.services = idx;
            store.pending.services_table = true;
        }
        if changes.check_table {
            store.idx.checks = idx;
        }
        // The partitions and namespaces the write touched: their listings move.
        for (scopes, per_scope, pending) in [
            (
                &changes.node_partitions,
                &mut store.idx.per_partition_nodes,
                &mut store.pending.node_partitions,
            ),
            (
                &changes.namespaces,
                &mut store.idx.per_ns_services,
                &mut store.pending.service_namespaces,
            ),
        ] {
            for s in scopes {
                per_scope.insert(s.clone(), idx);
            }
            pending.extend(scopes.iter().cloned());
        }
        store
            .pending
            .service_names
            .extend(changes.service_names.iter().cloned());
        store.pending.nodes.extend(changes.nodes.iter().cloned());
        let (by_name, nodes) = (&store.by_name, &store.nodes);
        store
            .idx
            .per_service
            .moved(changes.service_names, |k| by_name.contains_key(k), idx);
        store
            .idx
            .per_node
            .moved(changes.nodes, |k| nodes.contains_key(k), idx);
        true
    }

    pub(super) fn rollback(self) {
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
        if stamp(&mut rec, self.store.nodes.get(&key), self.idx) {
            self.put_node(key, Some(rec));
        }
    }

    /// Upserts a service instance on `rec.node` (`ensureServiceTxn`).
    pub fn ensure_service(&mut self, mut rec: ServiceRec) -> Result<(), StoreError> {
        let lnode = node_key(rec.partition(), &rec.node);
        if !self.store.nodes.contains_key(&lnode) {
            return Err(StoreError::MissingNode);
        }
        let key = (lnode, fold(&rec.id));
        if stamp(&mut rec, self.store.services.get(&key), self.idx) {
            self.put_service(key, Some(rec));
        }
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
        if stamp(&mut rec, self.store.checks.get(&key), self.idx) {
            self.put_check(key, Some(rec));
        }
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

    pub(super) fn delete_check_key(&mut self, key: RecKey) {
        if self.store.checks.contains_key(&key) {
            self.put_check(key, None);
        }
    }

    /// Deletes a service instance and its checks; a missing one is a no-op.
    pub fn delete_service_in(&mut self, partition: &str, node: &str, id: &str) {
        self.delete_service_key((node_key(partition, node), fold(id)));
    }

    pub(super) fn delete_service_key(&mut self, key: RecKey) {
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

/// Gives `rec` the Raft indexes of an upsert at `idx` over the `stored`
/// record: a new record is created at `idx`, a changed one keeps its
/// create index and is modified at `idx`. False when nothing user-visible
/// changed: Consul skips that write, and the stored indexes stay.
fn stamp<R: Record>(rec: &mut R, stored: Option<&R>, idx: u64) -> bool {
    let create = match stored {
        None => idx,
        Some(s) if rec.same_content(s) => return false,
        Some(s) => s.created_at(),
    };
    let (c, m) = rec.indexes_mut();
    (*c, *m) = (create, idx);
    true
}
