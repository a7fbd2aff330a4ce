//! Consul Enterprise namespaces created on demand before the
//! registrations that go into them, as consul-k8s creates them.
//!
//! This module must NOT send registrations or Events: it reports the
//! Services a failure holds back, and the event loop sends their Event.

use std::collections::{BTreeMap, BTreeSet};

use mirra_catalog::{CatalogOp, DEFAULT_CONSUL_NAMESPACE, ServiceKey};

use super::TxnWriter;
use crate::round::Planned;

/// Description of the Consul namespaces mirra creates.
const NAMESPACE_DESCRIPTION: &str = "Created by mirra sync-catalog for synced Kubernetes Services";

/// Why a Consul namespace could not be found or created.
#[derive(Debug, thiserror::Error)]
enum NamespaceError {
    /// Consul refused or did not answer.
    #[error(transparent)]
    Consul(#[from] mirra_consul::Error),
    /// This replica does not hold the Lease with enough time left.
    #[error("fenced: {0}")]
    Fenced(#[from] mirra_runtime::FenceError),
}

/// A Consul namespace that could not be created, and the Services not yet
/// told so by an Event (one Event per Service and failure).
#[derive(Debug)]
pub struct NamespaceFailure {
    /// The namespace as the registrations name it.
    pub namespace: String,
    /// Why it could not be created.
    pub error: String,
    /// Services whose registrations wait for it, to be told by an Event.
    pub untold: Vec<ServiceKey>,
}

impl TxnWriter {
    /// Makes sure the Consul namespaces the registrations of `planned` go
    /// into exist, creating the missing ones (as consul-k8s does, with
    /// `-consul-cross-namespace-acl-policy` as their policy default).
    /// Returns the plan entries bound for a namespace that could not be
    /// found or created, and each such failure (logged and counted here).
    pub(super) async fn ensure_namespaces(
        &mut self,
        planned: &[Planned],
    ) -> (BTreeSet<usize>, Vec<NamespaceFailure>) {
        let mut missing: BTreeMap<String, (String, Vec<usize>)> = BTreeMap::new();
        for (i, p) in planned.iter().enumerate() {
            let CatalogOp::Register(r) = &p.op else {
                continue;
            };
            let Some(ns) = &r.namespace else {
                continue;
            };
            let folded = ns.to_ascii_lowercase();
            if folded == DEFAULT_CONSUL_NAMESPACE || self.known_namespaces.contains(&folded) {
                continue;
            }
            missing
                .entry(folded)
                .or_insert_with(|| (ns.clone(), Vec::new()))
                .1
                .push(i);
        }
        let mut blocked = BTreeSet::new();
        let mut failures = Vec::new();
        for (folded, (name, entries)) in missing {
            match self.ensure_namespace(&name).await {
                Ok(created) => {
                    if created {
                        self.metrics.namespace_created();
                        tracing::info!(namespace = %name, "created the Consul namespace");
                    }
                    self.namespace_failures.remove(&folded);
                    self.known_namespaces.insert(folded);
                }
                Err(e) => {
                    self.metrics.namespace_failure();
                    tracing::warn!(
                        namespace = %name,
                        error = %e,
                        services = entries.len(),
                        "could not create the Consul namespace; its Services wait, the others keep syncing"
                    );
                    let told = self.namespace_failures.entry(folded).or_default();
                    let untold: Vec<ServiceKey> = entries
                        .iter()
                        .filter_map(|&i| planned.get(i).and_then(|p| p.key.as_ref()))
                        .filter(|k| told.insert((*k).clone()))
                        .cloned()
                        .collect();
                    if !untold.is_empty() {
                        failures.push(NamespaceFailure {
                            namespace: name,
                            error: e.to_string(),
                            untold,
                        });
                    }
                    blocked.extend(entries);
                }
            }
        }
        (blocked, failures)
    }

    /// Reads namespace `name` and creates it when it does not exist;
    /// returns whether it was created. The creation is a write, so it goes
    /// through the leader fence.
    async fn ensure_namespace(&self, name: &str) -> Result<bool, NamespaceError> {
        if self.consul.namespace(name).await?.is_some() {
            return Ok(false);
        }
        let mut ns = if self.cross_namespace_acl_policy.is_empty() {
            mirra_consul::Namespace {
                name: name.to_owned(),
                ..mirra_consul::Namespace::default()
            }
        } else {
            mirra_consul::Namespace::with_policy_defaults(
                name,
                [self.cross_namespace_acl_policy.as_str()],
            )
        };
        ns.description = NAMESPACE_DESCRIPTION.to_owned();
        ns.meta = BTreeMap::from([(
            mirra_catalog::model::META_EXTERNAL_SOURCE.to_owned(),
            mirra_catalog::model::EXTERNAL_SOURCE_KUBERNETES.to_owned(),
        )]);
        match self.fence.send(self.consul.create_namespace(&ns)).await? {
            Ok(_) => Ok(true),
            // Created meanwhile by someone else (another writer, a
            // replica that just lost the Lease): it exists, which is all
            // that is wanted.
            Err(e) => match self.consul.namespace(name).await {
                Ok(Some(_)) => Ok(false),
                _ => Err(NamespaceError::Consul(e)),
            },
        }
    }
}
