//! The writer in a dry run (`-dry-run`): it sends nothing, answers every
//! write as done without a commit, and reports the writes only it knows
//! of: our node's creation and the Consul namespaces a registration would
//! create (found missing by the same read a real write makes first). The
//! event loop reports the registrations themselves.
//!
//! This module must NOT send a transaction, a namespace creation or an
//! Event, nor pause the whole-node reads (nothing is written to wait for).

use std::collections::BTreeMap;
use std::sync::Arc;

use mirra_catalog::{CatalogOp, DEFAULT_CONSUL_NAMESPACE};
use mirra_runtime::PlannedWrite;

use super::{Job, Report, Reports, TxnWriter, WriteDone};
use crate::round::Planned;

/// The preview scope of our node's creation.
const NODE_SCOPE: &str = "consul node";

impl TxnWriter {
    /// Runs `job` as a dry run.
    pub(super) async fn run_job_dry(&mut self, job: Job, reports: &Reports) {
        match job {
            Job::Write(job) => {
                self.forget_too_large(job.forget);
                if !job.planned.is_empty() {
                    self.preview_node(job.node_exists);
                    self.preview_namespaces(&job.planned).await;
                }
                let done = WriteDone {
                    planned: Arc::new(job.planned),
                    ..WriteDone::default()
                };
                // The loop is gone only when the controller stops.
                let _ = reports.send(Report::Written(done));
            }
            // A read (a `get` transaction); none is asked for in a dry run,
            // where no `cas` can fail.
            Job::Reread(request) => self.reread(request, reports).await,
            Job::Events(_) | Job::Contested(_) | Job::NamespaceFailed { .. } => {}
            Job::Forget(ids) => self.forget_too_large(ids),
            Job::StartPass => self.known_namespaces.clear(),
            Job::EndPass { forget } => self.forget_too_large(forget),
        }
    }

    fn preview_node(&self, node_exists: bool) {
        let Some(preview) = &self.preview else {
            return;
        };
        let writes = if node_exists {
            Vec::new()
        } else {
            vec![PlannedWrite {
                kind: "ConsulNode".into(),
                namespace: String::new(),
                name: self.node.clone(),
                operation: "register",
                reason: "missing",
                diff: vec!["the node mirra registers Services on does not exist".into()],
            }]
        };
        preview.replace(NODE_SCOPE, writes);
    }

    /// Reads the Consul namespaces `planned` registers into and are not
    /// known to exist, as a real write does first, and reports those
    /// missing as namespaces to create.
    async fn preview_namespaces(&mut self, planned: &[Planned]) {
        let Some(preview) = self.preview.clone() else {
            return;
        };
        let mut missing: BTreeMap<String, String> = BTreeMap::new();
        for p in planned {
            let CatalogOp::Register(r) = &p.op else {
                continue;
            };
            let Some(ns) = &r.namespace else {
                continue;
            };
            let folded = ns.to_ascii_lowercase();
            if folded != DEFAULT_CONSUL_NAMESPACE && !self.known_namespaces.contains(&folded) {
                missing.entry(folded).or_insert_with(|| ns.clone());
            }
        }
        for (folded, name) in missing {
            let scope = format!("consul namespace {folded}");
            match self.consul.namespace(&name).await {
                Ok(found) => {
                    preview.unreadable(&scope, None);
                    let writes = if found.is_some() {
                        self.known_namespaces.insert(folded);
                        Vec::new()
                    } else {
                        vec![PlannedWrite {
                            kind: "ConsulNamespace".into(),
                            namespace: String::new(),
                            name,
                            operation: "create",
                            reason: "missing",
                            diff: Vec::new(),
                        }]
                    };
                    preview.replace(&scope, writes);
                }
                Err(e) => preview.unreadable(&scope, Some(e.to_string())),
            }
        }
    }
}
