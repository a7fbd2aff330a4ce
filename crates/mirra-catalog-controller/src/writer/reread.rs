//! Reading again the instances a failed `cas` refused.
//!
//! The writer reports the refused plan entries; the event loop builds the
//! read from what the index knows about them ([`reread_request`], which
//! needs the instances' observed checks) and hands it back to the writer
//! task, whose answer the index folds in, so that the next plan of their
//! Services names the current indexes. The reads are read-only
//! transactions of `get`s: only the refused entries, and no Raft apply.
//!
//! This module must NOT change the index: the answer goes back as a
//! [`super::Report::Reread`].

use std::collections::{BTreeSet, HashMap};

use mirra_catalog::CatalogOp;
use mirra_consul::{HealthCheck, TxnOp, Verb};
use tokio::time::Instant;

use super::{Report, Reports, TxnWriter};
use crate::index::CatalogIndex;
use crate::round::{Planned, op_service_id};
use crate::txn::read_entries;

/// The read of refused instances, as [`reread_request`] builds it.
#[derive(Debug)]
pub struct RereadRequest {
    /// The instances read.
    pub ids: BTreeSet<String>,
    /// Read-only `get`s of the instances and of their checks.
    pub ops: Vec<TxnOp>,
}

/// The `get`s that read again the instances (and their checks) of the
/// `stale` plan entries of `planned`.
pub fn reread_request(
    index: &CatalogIndex,
    planned: &[Planned],
    stale: &BTreeSet<usize>,
) -> RereadRequest {
    let node = index.sync().consul_node_name.clone();
    let mut ids = BTreeSet::new();
    let mut check_ids = BTreeSet::new();
    // The namespace each instance was planned in (empty without
    // namespaces): a read in another one would not find it.
    let mut ns_of: HashMap<String, String> = HashMap::new();
    for p in stale.iter().filter_map(|&i| planned.get(i)) {
        let ns = p.namespace.clone().unwrap_or_default();
        // A check removal names no instance; mirra's and consul-k8s's
        // readiness check IDs are `<namespace>/<service ID>`.
        let id = op_service_id(&p.op).to_owned();
        check_ids.extend(
            index
                .checks_of(&id)
                .iter()
                .map(|c| (c.check_id().to_owned(), ns.clone())),
        );
        if let CatalogOp::Register(r) = &p.op {
            check_ids.extend(r.check.iter().map(|c| (c.check_id.clone(), ns.clone())));
        }
        if let CatalogOp::DeregisterCheck { check_id, .. } = &p.op {
            check_ids.insert((check_id.clone(), ns.clone()));
        }
        ns_of.insert(id.clone(), ns);
        ids.insert(id);
    }
    let ops = ids
        .iter()
        .map(|id| TxnOp::Service {
            verb: Verb::Get,
            node: node.clone(),
            service: mirra_consul::Service {
                id: id.clone(),
                namespace: ns_of.get(id).cloned().unwrap_or_default(),
                ..mirra_consul::Service::default()
            },
        })
        .chain(check_ids.iter().map(|(c, ns)| TxnOp::Check {
            verb: Verb::Get,
            check: HealthCheck {
                node: node.clone(),
                check_id: c.clone(),
                namespace: ns.clone(),
                ..HealthCheck::default()
            },
        }))
        .collect();
    RereadRequest { ids, ops }
}

impl TxnWriter {
    /// Sends the read and reports what Consul holds now (or that the read
    /// failed, so that the next whole-node answer decides).
    pub(super) async fn reread(&mut self, request: RereadRequest, reports: &Reports) {
        let RereadRequest { ids, ops } = request;
        let at = Instant::now();
        let results = match read_entries(&self.consul, ops, self.batch_limit()).await {
            Ok(results) => {
                tracing::info!(
                    instances = ids.len(),
                    "catalog changed since planned; read the refused instances again and planning them again"
                );
                Some(results)
            }
            Err(e) => {
                self.metrics.consul_error(e.class());
                tracing::warn!(error = %e, "reading refused instances again failed; waiting for the next whole-node read");
                None
            }
        };
        // The loop is gone only when the controller stops.
        let _ = reports.send(Report::Reread { ids, results, at });
    }
}
