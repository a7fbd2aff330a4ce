//! A dry run's report of a round or a pass chunk: each planned operation
//! as the write it would be, grouped by the Service it is for, every
//! Service of the round reported (an empty report clears what an earlier
//! plan of it said).
//!
//! The index keeps each observed instance as a fingerprint, not its
//! fields, so a rewrite's `diff` names which part differs (the service or
//! its readiness check) and the values the write would set, not the old
//! ones.
//!
//! This module must NOT change the plan or send anything.

use std::collections::BTreeMap;

use mirra_catalog::{CatalogOp, ObservedView, Registration, ServiceKey};
use mirra_runtime::{PlannedWrite, Preview};

use crate::index::CatalogIndex;
use crate::round::Planned;

/// Why a registration is planned: no instance of its ID is registered.
pub const REASON_NEW: &str = "new-instance";
/// Why a registration is planned: the registered instance differs.
pub const REASON_DIFFERS: &str = "differs";
/// Why a registration is planned: only its readiness check differs.
pub const REASON_CHECK: &str = "check-differs";

/// The preview scope of instances no Service claims (the pass's orphans).
const ORPHANS: &str = "orphans";

/// Reports `planned`, the plan of `keys`, to `preview`.
pub fn report(preview: &Preview, index: &CatalogIndex, keys: &[ServiceKey], planned: &[Planned]) {
    let mut scopes: BTreeMap<String, Vec<PlannedWrite>> =
        keys.iter().map(|k| (k.to_string(), Vec::new())).collect();
    for p in planned {
        let scope = p
            .key
            .as_ref()
            .map_or_else(|| ORPHANS.to_string(), ToString::to_string);
        scopes
            .entry(scope)
            .or_default()
            .push(planned_write(p, index));
    }
    for (scope, writes) in scopes {
        preview.replace(&scope, writes);
    }
}

/// Reports the orphans' plan (the last step of a pass), replacing the
/// previous pass's.
pub fn report_orphans(preview: &Preview, index: &CatalogIndex, planned: &[Planned]) {
    let writes = planned.iter().map(|p| planned_write(p, index)).collect();
    preview.replace(ORPHANS, writes);
}

fn planned_write(p: &Planned, index: &CatalogIndex) -> PlannedWrite {
    let namespace = p.namespace.clone().unwrap_or_default();
    match &p.op {
        CatalogOp::Register(r) => {
            let (reason, mut diff) = match index.observed_instance(&r.id) {
                None => (REASON_NEW, Vec::new()),
                Some(o) if o.service_equals(r) => (
                    REASON_CHECK,
                    vec!["the readiness check differs".to_string()],
                ),
                Some(_) => (
                    REASON_DIFFERS,
                    vec!["the registered instance differs".to_string()],
                ),
            };
            diff.extend(would_set(r));
            PlannedWrite {
                kind: "ConsulService".into(),
                namespace,
                name: r.id.clone(),
                operation: "register",
                reason,
                diff,
            }
        }
        CatalogOp::DeregisterCheck { check_id, .. } => PlannedWrite {
            kind: "ConsulCheck".into(),
            namespace,
            name: check_id.clone(),
            operation: "deregister",
            reason: "stale-check",
            diff: Vec::new(),
        },
        CatalogOp::Deregister { service_id, .. } => PlannedWrite {
            kind: "ConsulService".into(),
            namespace,
            name: service_id.clone(),
            operation: "deregister",
            reason: if p.key.is_some() {
                "not-wanted"
            } else {
                "orphan"
            },
            diff: Vec::new(),
        },
    }
}

/// The fields of `r` the layout flags decide, as the write would set them.
fn would_set(r: &Registration) -> Vec<String> {
    let mut out = vec![
        format!("service: {}", r.name),
        format!("address: {}", r.address),
        format!("port: {}", r.port),
    ];
    if !r.ports.is_empty() {
        let ports: Vec<String> = r
            .ports
            .iter()
            .map(|p| format!("{}={}", p.name, p.port))
            .collect();
        out.push(format!("ports: {}", ports.join(",")));
    }
    out.push(format!("tags: {}", r.tags.join(",")));
    out
}
