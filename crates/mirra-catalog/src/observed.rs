//! What Consul says is registered on mirra's node, how to read it from
//! Consul's JSON, how to tell mirra's instances from everyone else's, and
//! when an observed instance already equals a desired one.
//!
//! The comparison is the heart of "zero writes when nothing changed": it
//! looks only at the fields mirra writes, and it accounts for the way Consul
//! echoes defaults, so that an instance written earlier by mirra OR by
//! consul-k8s with the same settings compares equal and costs nothing.
//!
//! | field | how it is compared |
//! |---|---|
//! | `ID`, `Service`, `Address`, `Port` | exactly |
//! | `Tags` | exactly, order included (Consul keeps the order) |
//! | `Meta` | as a map; `null` equals `{}` |
//! | `Ports` | as a list; missing or `null` equals `[]` |
//! | `Weights` | missing or `null` equals `{Passing: 1, Warning: 1}` (what Consul stores for absent or invalid weights) |
//! | `EnableTagOverride` | must be false |
//! | `Kind` | must be empty |
//! | `Namespace` | only when the registration names one (Consul Enterprise namespaces on): without regard to case, missing equals `default`; an instance in another namespace is removed and then registered again in the right one |
//! | `TaggedAddresses`, `Proxy`, `Connect`, `Partition`, `PeerName`, indexes | ignored: mirra never sets them (the partition is the client's) |
//! | readiness check | `CheckID`, `Name`, `Status`, `Output`, `ServiceID`, empty `Notes`, and `Type` when Consul reports one |
//!
//! This module must NOT do I/O; it parses bytes the controller fetched.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::model::{
    EXTERNAL_SOURCE_KUBERNETES, META_EXTERNAL_SOURCE, READINESS_CHECK_NAME, READINESS_CHECK_TYPE,
    Registration, ServicePort, Weights,
};
use crate::settings::SyncSettings;

/// A port of an observed multi-port list. Numbers are kept as Consul sent
/// them so that a malformed value compares unequal instead of failing.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct ObservedPort {
    /// Port name.
    pub name: String,
    /// Port number.
    pub port: i64,
    /// Whether it is the default port.
    pub default: bool,
}

impl ObservedPort {
    fn equals(&self, p: &ServicePort) -> bool {
        self.name == p.name && self.port == i64::from(p.port) && self.default == p.default
    }
}

/// A health check as `/v1/health/node/<node>` returns it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct ObservedCheck {
    /// The node the check is on.
    pub node: String,
    /// Check ID.
    #[serde(rename = "CheckID")]
    pub check_id: String,
    /// Check name.
    pub name: String,
    /// `passing`, `warning` or `critical`.
    pub status: String,
    /// Free text set at registration.
    pub notes: String,
    /// Last output.
    pub output: String,
    /// The service instance the check belongs to (empty for node checks).
    #[serde(rename = "ServiceID")]
    pub service_id: String,
    /// Check type (reported by Consul 1.7 and later; empty before).
    #[serde(rename = "Type")]
    pub check_type: String,
    /// Raft index of the check's last change: the precondition of a `cas`
    /// or `delete-cas` on it (0 when unknown, e.g. a check not yet written).
    pub modify_index: u64,
}

impl ObservedCheck {
    /// Whether this looks like a readiness check written by a catalog sync
    /// (mirra or consul-k8s). Only such checks are ever removed by mirra.
    pub fn is_readiness_check(&self) -> bool {
        self.check_type == READINESS_CHECK_TYPE
            || (self.check_type.is_empty() && self.name == READINESS_CHECK_NAME)
    }
}

/// One service instance on mirra's node, as Consul reports it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObservedInstance {
    /// The node it is registered on.
    pub node: String,
    /// Service ID.
    pub id: String,
    /// Service name.
    pub name: String,
    /// Service kind (empty for a typical service).
    pub kind: String,
    /// Tags, in Consul's order.
    pub tags: Vec<String>,
    /// Service address.
    pub address: String,
    /// Single port.
    pub port: i64,
    /// Multi-port list.
    pub ports: Vec<ObservedPort>,
    /// Service meta.
    pub meta: BTreeMap<String, String>,
    /// Weights, with Consul's default filled in when absent.
    pub weights: Weights,
    /// `EnableTagOverride`.
    pub enable_tag_override: bool,
    /// The instance's checks, or `None` when the controller does not observe
    /// checks (then checks are not compared, and readiness changes are only
    /// written when something else about the instance changes).
    pub checks: Option<Vec<ObservedCheck>>,
    /// The Consul Enterprise namespace Consul reports it in (`None` from a
    /// Consul without namespaces).
    pub namespace: Option<String>,
}

/// Errors reading Consul's answers. Retryable: the next blocking query
/// returns a fresh body; if it keeps failing, the Consul version answers in
/// a shape mirra does not support and the operator should report it.
#[derive(Debug, thiserror::Error)]
pub enum ObservedError {
    /// The body is not the JSON shape Consul documents for this endpoint.
    #[error("unexpected JSON from Consul: {0}")]
    Json(#[from] serde_json::Error),
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
struct WireNodeServices {
    node: Option<WireNode>,
    services: Option<Vec<WireService>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
struct WireNode {
    node: String,
}

/// One entry of node-services' `Services`, as Consul sends it.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub(crate) struct WireService {
    #[serde(rename = "ID")]
    id: String,
    service: String,
    kind: Option<String>,
    tags: Option<Vec<String>>,
    address: String,
    port: i64,
    ports: Option<Vec<ObservedPort>>,
    meta: Option<BTreeMap<String, String>>,
    weights: Option<Weights>,
    enable_tag_override: bool,
    modify_index: u64,
    namespace: Option<String>,
}

/// Reads the body of `GET /v1/catalog/node-services/<node>` into instances
/// keyed by service ID. A `null` body or a missing node means no instances.
///
/// `checks` is the body of `GET /v1/health/node/<node>` when the controller
/// watches checks too; pass `None` otherwise.
pub fn parse_node_services(
    node_services: &[u8],
    checks: Option<&[u8]>,
) -> Result<BTreeMap<String, ObservedInstance>, ObservedError> {
    let wire: Option<WireNodeServices> = serde_json::from_slice(node_services)?;
    let checks = match checks {
        Some(body) => Some(parse_health_checks(body)?),
        None => None,
    };
    let Some(wire) = wire else {
        return Ok(BTreeMap::new());
    };
    let node = wire.node.map(|n| n.node).unwrap_or_default();
    let mut by_service: BTreeMap<String, Vec<ObservedCheck>> = BTreeMap::new();
    if let Some(list) = &checks {
        for c in list.iter().filter(|c| !c.service_id.is_empty()) {
            by_service
                .entry(c.service_id.clone())
                .or_default()
                .push(c.clone());
        }
    }
    let mut out = BTreeMap::new();
    for s in wire.services.unwrap_or_default() {
        let (id, mut inst) = s.into_observed(&node);
        inst.checks = checks
            .as_ref()
            .map(|_| by_service.get(&id).cloned().unwrap_or_default());
        out.insert(id, inst);
    }
    Ok(out)
}

impl WireService {
    /// The Raft index of the instance's last change (0 when Consul sent
    /// none).
    pub(crate) fn modify_index(&self) -> u64 {
        self.modify_index
    }

    /// The instance on `node`, keyed by its ID, with checks unknown.
    pub(crate) fn into_observed(self, node: &str) -> (String, ObservedInstance) {
        let inst = ObservedInstance {
            node: node.to_owned(),
            id: self.id.clone(),
            name: self.service,
            kind: self.kind.unwrap_or_default(),
            tags: self.tags.unwrap_or_default(),
            address: self.address,
            port: self.port,
            ports: self.ports.unwrap_or_default(),
            meta: self.meta.unwrap_or_default(),
            weights: self.weights.unwrap_or_default(),
            enable_tag_override: self.enable_tag_override,
            checks: None,
            namespace: self.namespace.filter(|n| !n.is_empty()),
        };
        (self.id, inst)
    }
}

/// Reads the body of `GET /v1/health/node/<node>`; `null` means no checks.
pub fn parse_health_checks(body: &[u8]) -> Result<Vec<ObservedCheck>, ObservedError> {
    let list: Option<Vec<ObservedCheck>> = serde_json::from_slice(body)?;
    Ok(list.unwrap_or_default())
}

/// Whether mirra owns an instance: it is on mirra's node, carries the k8s
/// tag and the meta `external-source=kubernetes`. Instances without all
/// three marks are never changed or deleted.
pub fn is_owned(instance: &ObservedInstance, settings: &SyncSettings) -> bool {
    instance.node == settings.consul_node_name
        && instance.tags.contains(&settings.consul_k8s_tag)
        && instance
            .meta
            .get(META_EXTERNAL_SOURCE)
            .is_some_and(|v| v == EXTERNAL_SOURCE_KUBERNETES)
}

/// The names of the service fields where `observed` differs from `desired`
/// (empty when the service part is equal). For logs and metrics labels: the
/// names are a fixed, low-cardinality set.
pub fn differing_fields(desired: &Registration, observed: &ObservedInstance) -> Vec<&'static str> {
    let mut out = service_differing_fields(desired, observed);
    if !in_wanted_namespace(desired, observed.namespace.as_deref()) {
        out.push("namespace");
    }
    if !check_matches(desired, observed) {
        out.push("check");
    }
    out
}

/// Whether the service part (every field but the checks) of `observed`
/// differs from `desired`.
pub fn service_fields_differ(desired: &Registration, observed: &ObservedInstance) -> bool {
    !service_differing_fields(desired, observed).is_empty()
}

/// [`differing_fields`] without the check.
fn service_differing_fields(
    desired: &Registration,
    observed: &ObservedInstance,
) -> Vec<&'static str> {
    let mut out = Vec::new();
    if desired.id != observed.id {
        out.push("id");
    }
    if desired.name != observed.name {
        out.push("name");
    }
    if !observed.kind.is_empty() {
        out.push("kind");
    }
    if desired.tags != observed.tags {
        out.push("tags");
    }
    if desired.address != observed.address {
        out.push("address");
    }
    if i64::from(desired.port) != observed.port {
        out.push("port");
    }
    if desired.ports.len() != observed.ports.len()
        || !observed
            .ports
            .iter()
            .zip(&desired.ports)
            .all(|(o, d)| o.equals(d))
    {
        out.push("ports");
    }
    if desired.meta != observed.meta {
        out.push("meta");
    }
    if desired.weights != observed.weights {
        out.push("weights");
    }
    if observed.enable_tag_override {
        out.push("enable_tag_override");
    }
    out
}

/// Whether the desired readiness check is present and equal. Always true
/// when checks are not observed or the registration has no check.
pub fn check_matches(desired: &Registration, observed: &ObservedInstance) -> bool {
    let (Some(want), Some(have)) = (&desired.check, &observed.checks) else {
        return true;
    };
    have.iter().any(|c| {
        c.check_id == want.check_id
            && c.name == want.name()
            && (c.check_type.is_empty() || c.check_type == want.check_type())
            && c.status == want.status.as_str()
            && c.output == want.output()
            && c.notes.is_empty()
            && c.service_id == want.service_id
    })
}

/// Readiness checks on the observed instance that the desired one does not
/// have (left over from an earlier shape of the instance). Empty when checks
/// are not observed.
pub fn stale_checks(desired: &Registration, observed: &ObservedInstance) -> Vec<String> {
    let Some(have) = &observed.checks else {
        return Vec::new();
    };
    let keep = desired.check.as_ref().map(|c| c.check_id.as_str());
    have.iter()
        .filter(|c| c.is_readiness_check() && Some(c.check_id.as_str()) != keep)
        .map(|c| c.check_id.clone())
        .collect()
}

/// Whether an observed instance already is what mirra wants, so that no
/// write is needed.
pub fn matches(desired: &Registration, observed: &ObservedInstance) -> bool {
    differing_fields(desired, observed).is_empty() && stale_checks(desired, observed).is_empty()
}

/// What Consul will report after `registration` is written on mirra's node,
/// keeping any checks the instance had that the write does not replace.
/// Used to simulate Consul in tests and dry runs.
pub fn echo(
    registration: &Registration,
    previous_checks: Option<&[ObservedCheck]>,
    settings: &SyncSettings,
) -> ObservedInstance {
    let mut checks: Vec<ObservedCheck> = previous_checks
        .unwrap_or(&[])
        .iter()
        .filter(|c| {
            registration
                .check
                .as_ref()
                .is_none_or(|want| want.check_id != c.check_id)
        })
        .cloned()
        .collect();
    if let Some(c) = &registration.check {
        checks.push(ObservedCheck {
            node: settings.consul_node_name.clone(),
            check_id: c.check_id.clone(),
            name: c.name().to_owned(),
            status: c.status.as_str().to_owned(),
            notes: String::new(),
            output: c.output().to_owned(),
            service_id: c.service_id.clone(),
            check_type: c.check_type().to_owned(),
            modify_index: 0,
        });
    }
    ObservedInstance {
        node: settings.consul_node_name.clone(),
        id: registration.id.clone(),
        name: registration.name.clone(),
        kind: String::new(),
        tags: registration.tags.clone(),
        address: registration.address.clone(),
        port: i64::from(registration.port),
        ports: registration
            .ports
            .iter()
            .map(|p| ObservedPort {
                name: p.name.clone(),
                port: i64::from(p.port),
                default: p.default,
            })
            .collect(),
        meta: registration.meta.clone(),
        weights: registration.weights,
        enable_tag_override: false,
        checks: Some(checks),
        namespace: registration.namespace.clone(),
    }
}

/// Whether an instance Consul reports in namespace `observed` is where
/// `desired` wants it. Always true when the registration names no namespace
/// (namespaces off: where an instance is is not mirra's business).
pub fn in_wanted_namespace(desired: &Registration, observed: Option<&str>) -> bool {
    match &desired.namespace {
        None => true,
        Some(want) => crate::settings::same_consul_namespace(Some(want), observed),
    }
}
