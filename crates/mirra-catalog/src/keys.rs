//! Which Service keys an event touches, so that the controller re-plans the
//! smallest set: an EndpointSlice event touches its Service; a Node event
//! touches the Services with endpoints on that Node, and only when an
//! address that NodePort instances use changed.
//!
//! The index here is a plain synchronous structure fed by watch events; it
//! must NOT hold whole objects (only names) nor do I/O.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Node;

use crate::mapping::SliceInput;
use crate::model::ServiceKey;

/// The node addresses NodePort instances can use, in order.
fn relevant_addresses(node: Option<&Node>) -> Vec<(&str, &str)> {
    node.and_then(|n| n.status.as_ref())
        .and_then(|s| s.addresses.as_deref())
        .unwrap_or(&[])
        .iter()
        .filter(|a| a.type_ == "ExternalIP" || a.type_ == "InternalIP")
        .map(|a| (a.type_.as_str(), a.address.as_str()))
        .collect()
}

/// Whether a Node change can change a NodePort registration: its
/// ExternalIP/InternalIP addresses changed, or it appeared or disappeared.
pub fn node_addresses_changed(old: Option<&Node>, new: Option<&Node>) -> bool {
    if old.is_some() != new.is_some() {
        return true;
    }
    relevant_addresses(old) != relevant_addresses(new)
}

/// Which Services have endpoints on which Node, fed by EndpointSlice events.
#[derive(Clone, Debug, Default)]
pub struct NodeEndpointIndex {
    /// (namespace, slice name) -> (its Service, the nodes of its endpoints).
    slices: BTreeMap<(String, String), (ServiceKey, BTreeSet<String>)>,
    /// node -> Service -> number of slices of that Service with endpoints
    /// on the node.
    nodes: BTreeMap<String, BTreeMap<ServiceKey, usize>>,
}

impl NodeEndpointIndex {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records (or replaces) a slice.
    pub fn apply_slice(&mut self, slice: &SliceInput) {
        let ns = slice.namespace.clone().unwrap_or_default();
        let name = slice.name.clone();
        self.delete_slice(&ns, &name);
        let Some(key) = slice.key() else {
            return;
        };
        let node_names: BTreeSet<String> = slice
            .endpoints
            .iter()
            .filter_map(|e| e.node_name.as_deref().map(str::to_owned))
            .collect();
        for n in &node_names {
            *self
                .nodes
                .entry(n.clone())
                .or_default()
                .entry(key.clone())
                .or_default() += 1;
        }
        self.slices.insert((ns, name), (key, node_names));
    }

    /// Forgets a slice.
    pub fn delete_slice(&mut self, namespace: &str, name: &str) {
        let Some((key, node_names)) = self.slices.remove(&(namespace.to_owned(), name.to_owned()))
        else {
            return;
        };
        for n in node_names {
            if let Some(per_key) = self.nodes.get_mut(&n) {
                if let Some(count) = per_key.get_mut(&key) {
                    *count = count.saturating_sub(1);
                    if *count == 0 {
                        per_key.remove(&key);
                    }
                }
                if per_key.is_empty() {
                    self.nodes.remove(&n);
                }
            }
        }
    }

    /// The Services with at least one endpoint on `node`.
    pub fn keys_on_node(&self, node: &str) -> BTreeSet<ServiceKey> {
        self.nodes
            .get(node)
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    }
}

/// The Services a Node event touches: none unless a relevant address
/// changed (or the Node appeared or went away); then every Service with
/// endpoints on it.
pub fn keys_for_node_change(
    old: Option<&Node>,
    new: Option<&Node>,
    index: &NodeEndpointIndex,
) -> BTreeSet<ServiceKey> {
    if !node_addresses_changed(old, new) {
        return BTreeSet::new();
    }
    let name = new
        .or(old)
        .and_then(|n| n.metadata.name.as_deref())
        .unwrap_or_default();
    index.keys_on_node(name)
}
