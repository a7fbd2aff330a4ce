//! `-purge-k8s-services-from-node`: deregisters every instance mirra owns
//! on its node, and returns.
//!
//! This module must NOT touch an instance without mirra's marks, nor remove
//! one blindly: each removal is a `delete-cas` at the index it was read at.

use mirra_catalog::{CatalogOp, is_owned};
use mirra_consul::{QueryOptions, TxnOp};
use mirra_runtime::WriteFence;

use crate::engine::ControllerError;
use crate::flags::Settings;
use crate::metrics::CatalogMetrics;
use crate::round::Planned;
use crate::wire::{observed_instance, to_txn_ops};

/// `-purge-k8s-services-from-node`: deregisters every instance we own on
/// our node, in transactions, and returns.
pub(crate) async fn purge(
    consul: &mirra_consul::Client,
    settings: &Settings,
    metrics: &CatalogMetrics,
) -> Result<(), ControllerError> {
    let node = settings.sync.consul_node_name.clone();
    let fence = WriteFence::new(settings.lease.clone(), consul.request_timeout());
    let mut purged = 0;
    let mut rereads = 0;
    let mut batch = settings.txn_batch.max(1);
    'read: loop {
        // With namespaces, mirra's instances may be in any of them.
        let q = QueryOptions {
            namespace: settings
                .sync
                .consul_namespaces
                .enabled()
                .then(|| "*".to_owned()),
            ..QueryOptions::default()
        };
        let snap = consul
            .node_services(&node, &q)
            .await
            .map_err(ControllerError::Purge)?;
        let snap_node = snap
            .value
            .node
            .as_ref()
            .map(|n| n.node.clone())
            .unwrap_or_default();
        // Each removal names the index it was read at (`delete-cas`): an
        // instance changed since, by anyone, is read again rather than
        // removed blindly.
        let ops: Vec<TxnOp> = snap
            .value
            .services
            .into_iter()
            .filter_map(|s| {
                let index = s.modify_index;
                let (id, i) = observed_instance(&snap_node, s);
                let namespace = settings.sync.consul_namespaces.enabled().then(|| {
                    i.namespace
                        .clone()
                        .unwrap_or_else(|| mirra_catalog::DEFAULT_CONSUL_NAMESPACE.to_owned())
                });
                is_owned(&i, &settings.sync).then(|| Planned {
                    op: CatalogOp::Deregister {
                        node: node.clone(),
                        service_id: id,
                        service_name: i.name,
                        check_ids: Vec::new(),
                    },
                    key: None,
                    index,
                    check_index: 0,
                    namespace,
                })
            })
            .flat_map(|p| to_txn_ops(&p, &node))
            .collect();
        for chunk in mirra_consul::split_ops(ops, batch) {
            let sent = fence
                .send(consul.txn(&chunk))
                .await
                .map_err(ControllerError::PurgeFenced)?;
            match sent {
                Ok(_) => {}
                Err(e)
                    if rereads < PURGE_REREADS
                        && !e.failed_ops().is_empty()
                        && e.failed_ops().iter().all(|f| f.is_cas_conflict()) =>
                {
                    metrics.cas_conflicts(u64::try_from(e.failed_ops().len()).unwrap_or(0));
                    tracing::info!(
                        refused = e.failed_ops().len(),
                        "instances changed while purging; reading the node again"
                    );
                    rereads += 1;
                    continue 'read;
                }
                Err(e) => {
                    // An older server's limit (64 before Consul 1.14):
                    // nothing of this transaction applied, and what is left
                    // is read again and sent in transactions it accepts.
                    // `batch` only shrinks, so this repeats a few times.
                    if let Some(limit) = e.txn_ops_limit_below(chunk.len()) {
                        batch = limit;
                        tracing::warn!(
                            limit,
                            configured = settings.txn_batch,
                            "Consul accepts fewer operations per transaction than configured; using its limit"
                        );
                        continue 'read;
                    }
                    metrics.consul_error(e.class());
                    return Err(ControllerError::Purge(e));
                }
            }
            metrics.transaction();
            metrics.operations("deregister", u64::try_from(chunk.len()).unwrap_or(0));
            purged += chunk.len();
        }
        break;
    }
    tracing::info!(node = %node, instances = purged, "purged our instances from the node");
    Ok(())
}

/// How often `-purge-k8s-services-from-node` reads the node again after a
/// removal met a newer state of an instance, before it gives up (and can
/// be run again).
const PURGE_REREADS: u32 = 5;
