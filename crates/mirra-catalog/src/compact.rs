//! The observed state the controller keeps between two Consul reads, in a
//! form that costs a few dozen bytes per instance instead of a copy of
//! every string Consul sent.
//!
//! The planner only ever asks four questions of an observed instance: is
//! it mirra's, is its service part exactly what mirra wants, does it carry
//! the wanted readiness check, and which leftover readiness checks does it
//! have. The service part is therefore kept as a fingerprint: a SHA-1 over
//! a length-prefixed encoding of exactly the fields
//! [`crate::observed::differing_fields`] compares, with the same
//! normalisation (Consul's defaults already filled in by the parser). A
//! registration is fingerprinted the same way, so "is it what mirra wants"
//! is one comparison of 20 bytes. Checks keep only their IDs and whether
//! they have the exact shape mirra writes, and with which status. Each
//! instance and check also keeps its `ModifyIndex` (8 bytes), because every
//! write mirra sends is a `cas`/`delete-cas` naming the index it planned
//! from; the index never takes part in "is it what mirra wants".
//!
//! [`ObservedView`] is what the planner needs; [`ObservedInstance`] (the
//! full form, for tests, `render` and one-off reads) and [`CompactView`]
//! (this form) both implement it, and a property test holds the two to
//! the same plans.
//!
//! This module must NOT do I/O; like the rest of the crate it only looks
//! at data.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use sha1::{Digest, Sha1};

use crate::model::{
    CheckStatus, EXTERNAL_SOURCE_KUBERNETES, META_EXTERNAL_SOURCE, READINESS_CHECK_NAME,
    READINESS_CHECK_TYPE, Registration,
};
use crate::observed::{
    ObservedCheck, ObservedError, ObservedInstance, WireService, check_matches, is_owned,
    service_fields_differ, stale_checks,
};
use crate::settings::SyncSettings;

/// What the planner asks of an observed instance.
pub trait ObservedView {
    /// The node it is registered on.
    fn node(&self) -> &str;
    /// Its service name (a transaction `Service` delete needs it).
    fn service_name(&self) -> &str;
    /// Whether mirra owns it (see [`is_owned`]).
    fn owned(&self, settings: &SyncSettings) -> bool;
    /// Whether its service part (everything but checks) is exactly `want`.
    fn service_equals(&self, want: &Registration) -> bool;
    /// Whether it carries `want`'s readiness check as mirra writes it
    /// (true when `want` has none).
    fn has_check_of(&self, want: &Registration) -> bool;
    /// Readiness checks it carries that `want` does not have.
    fn stale_checks_for(&self, want: &Registration) -> Vec<String>;
    /// The IDs of its checks (for logs).
    fn check_ids(&self) -> Vec<String>;
    /// The Consul Enterprise namespace it is in (`None` when Consul
    /// reported none).
    fn namespace(&self) -> Option<&str>;
}

impl ObservedView for ObservedInstance {
    fn node(&self) -> &str {
        &self.node
    }

    fn service_name(&self) -> &str {
        &self.name
    }

    fn owned(&self, settings: &SyncSettings) -> bool {
        is_owned(self, settings)
    }

    fn service_equals(&self, want: &Registration) -> bool {
        !service_fields_differ(want, self)
    }

    fn has_check_of(&self, want: &Registration) -> bool {
        check_matches(want, self)
    }

    fn stale_checks_for(&self, want: &Registration) -> Vec<String> {
        stale_checks(want, self)
    }

    fn check_ids(&self) -> Vec<String> {
        self.checks
            .as_deref()
            .unwrap_or(&[])
            .iter()
            .map(|c| c.check_id.clone())
            .collect()
    }

    fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }
}

/// A SHA-1 over the compared service fields of an instance. Only ever
/// compared within one process, never stored or sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Fingerprint([u8; 20]);

/// Feeds the canonical encoding: every field in a fixed order, strings and
/// lists length-prefixed, so that no two different instances share an
/// encoding.
struct Encoder(Sha1);

impl Encoder {
    fn new() -> Self {
        Self(Sha1::new())
    }

    fn str(&mut self, s: &str) {
        self.0.update((s.len() as u64).to_le_bytes());
        self.0.update(s.as_bytes());
    }

    fn int(&mut self, n: i64) {
        self.0.update(n.to_le_bytes());
    }

    fn len(&mut self, n: usize) {
        self.0.update((n as u64).to_le_bytes());
    }

    fn finish(self) -> Fingerprint {
        Fingerprint(self.0.finalize().into())
    }
}

/// The fields of an instance in the order and form they are fingerprinted.
struct Fields<'a, T, P, M>
where
    T: Iterator<Item = &'a str>,
    P: Iterator<Item = (&'a str, i64, bool)>,
    M: Iterator<Item = (&'a str, &'a str)>,
{
    id: &'a str,
    name: &'a str,
    kind: &'a str,
    tags: (usize, T),
    address: &'a str,
    port: i64,
    ports: (usize, P),
    meta: (usize, M),
    weights: (u32, u32),
    enable_tag_override: bool,
}

impl<'a, T, P, M> Fields<'a, T, P, M>
where
    T: Iterator<Item = &'a str>,
    P: Iterator<Item = (&'a str, i64, bool)>,
    M: Iterator<Item = (&'a str, &'a str)>,
{
    fn fingerprint(self) -> Fingerprint {
        let mut e = Encoder::new();
        e.str(self.id);
        e.str(self.name);
        e.str(self.kind);
        e.len(self.tags.0);
        for t in self.tags.1 {
            e.str(t);
        }
        e.str(self.address);
        e.int(self.port);
        e.len(self.ports.0);
        for (name, port, default) in self.ports.1 {
            e.str(name);
            e.int(port);
            e.int(i64::from(default));
        }
        // Both sides iterate a BTreeMap, so pairs come in key order and a
        // map compares as a map.
        e.len(self.meta.0);
        for (k, v) in self.meta.1 {
            e.str(k);
            e.str(v);
        }
        e.int(i64::from(self.weights.0));
        e.int(i64::from(self.weights.1));
        e.int(i64::from(self.enable_tag_override));
        e.finish()
    }
}

/// The fingerprint of what Consul reports after `r` is written: the
/// fields mirra never sets at their empty values.
pub fn fingerprint_registration(r: &Registration) -> Fingerprint {
    Fields {
        id: &r.id,
        name: &r.name,
        kind: "",
        tags: (r.tags.len(), r.tags.iter().map(String::as_str)),
        address: &r.address,
        port: i64::from(r.port),
        ports: (
            r.ports.len(),
            r.ports
                .iter()
                .map(|p| (p.name.as_str(), i64::from(p.port), p.default)),
        ),
        meta: (
            r.meta.len(),
            r.meta.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        ),
        weights: (r.weights.passing, r.weights.warning),
        enable_tag_override: false,
    }
    .fingerprint()
}

/// The fingerprint of an observed instance's service part.
pub fn fingerprint_observed(o: &ObservedInstance) -> Fingerprint {
    Fields {
        id: &o.id,
        name: &o.name,
        kind: &o.kind,
        tags: (o.tags.len(), o.tags.iter().map(String::as_str)),
        address: &o.address,
        port: o.port,
        ports: (
            o.ports.len(),
            o.ports.iter().map(|p| (p.name.as_str(), p.port, p.default)),
        ),
        meta: (
            o.meta.len(),
            o.meta.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        ),
        weights: (o.weights.passing, o.weights.warning),
        enable_tag_override: o.enable_tag_override,
    }
    .fingerprint()
}

/// An observed instance without its checks, compacted.
///
/// Equality includes the `ModifyIndex`; [`CompactInstance::same_content`]
/// compares what the instance says without it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompactInstance {
    name: Box<str>,
    owned: bool,
    fingerprint: Fingerprint,
    /// Raft index of the instance's last change, the precondition of the
    /// next `cas`/`delete-cas` on it; 0 when unknown.
    modify_index: u64,
    /// Its Consul Enterprise namespace (`None` when Consul named none).
    namespace: Option<Box<str>>,
}

impl CompactInstance {
    /// Compacts an instance read from Consul. Ownership is decided here, so
    /// the settings must be the ones the planner will use.
    pub fn of_observed(o: &ObservedInstance, settings: &SyncSettings) -> Self {
        Self {
            name: o.name.as_str().into(),
            owned: is_owned(o, settings),
            fingerprint: fingerprint_observed(o),
            modify_index: 0,
            namespace: o.namespace.as_deref().map(Into::into),
        }
    }

    /// What Consul will report once `r` is written on mirra's node (the
    /// compact form of [`crate::observed::echo`] without checks).
    pub fn of_registration(r: &Registration, settings: &SyncSettings) -> Self {
        Self {
            name: r.name.as_str().into(),
            owned: r.tags.contains(&settings.consul_k8s_tag)
                && r.meta
                    .get(META_EXTERNAL_SOURCE)
                    .is_some_and(|v| v == EXTERNAL_SOURCE_KUBERNETES),
            fingerprint: fingerprint_registration(r),
            modify_index: 0,
            namespace: r.namespace.as_deref().map(Into::into),
        }
    }

    /// The same instance, known to be at Raft index `index`.
    #[must_use]
    pub fn with_modify_index(mut self, index: u64) -> Self {
        self.modify_index = index;
        self
    }

    /// The service name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The Raft index of the instance's last change as read or written
    /// (0 when unknown): what a `cas` or `delete-cas` on it must name.
    pub fn modify_index(&self) -> u64 {
        self.modify_index
    }

    /// Whether both describe the same instance, whatever their indexes:
    /// an answer confirms a write by what it shows, not by when.
    pub fn same_content(&self, other: &Self) -> bool {
        self.name == other.name
            && self.owned == other.owned
            && self.fingerprint == other.fingerprint
            && crate::settings::same_consul_namespace(
                self.namespace.as_deref(),
                other.namespace.as_deref(),
            )
    }

    /// Its Consul Enterprise namespace (`None` when Consul named none).
    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }
}

/// An observed check, compacted: its ID and whether it is exactly the
/// readiness check mirra writes, with which status. Its instance's ID is
/// not kept: compact checks are always held by that ID (a second copy of
/// every service ID would be a few MB at 50,000 instances).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompactCheck {
    check_id: Box<str>,
    /// Whether mirra may remove it (see
    /// [`ObservedCheck::is_readiness_check`]).
    readiness: bool,
    /// `Some(status)` when name, type, notes, status and output are exactly
    /// what mirra writes for that status.
    as_written: Option<CheckStatus>,
    /// Raft index of the check's last change (0 when unknown).
    modify_index: u64,
}

impl CompactCheck {
    /// Compacts a check read from Consul.
    pub fn of_observed(c: &ObservedCheck) -> Self {
        let shape = c.name == READINESS_CHECK_NAME
            && (c.check_type.is_empty() || c.check_type == READINESS_CHECK_TYPE)
            && c.notes.is_empty();
        let as_written = [CheckStatus::Passing, CheckStatus::Critical]
            .into_iter()
            .find(|s| shape && c.status == s.as_str() && c.output == s.output());
        Self {
            check_id: c.check_id.as_str().into(),
            readiness: c.is_readiness_check(),
            as_written,
            modify_index: c.modify_index,
        }
    }

    /// The check `r` writes, as Consul will report it.
    pub fn of_registration(r: &Registration) -> Option<Self> {
        r.check.as_ref().map(|c| Self {
            check_id: c.check_id.as_str().into(),
            readiness: true,
            as_written: Some(c.status),
            modify_index: 0,
        })
    }

    /// The same check, known to be at Raft index `index`.
    #[must_use]
    pub fn with_modify_index(mut self, index: u64) -> Self {
        self.modify_index = index;
        self
    }

    /// The check's ID.
    pub fn check_id(&self) -> &str {
        &self.check_id
    }

    /// The Raft index of the check's last change (0 when unknown).
    pub fn modify_index(&self) -> u64 {
        self.modify_index
    }

    /// Whether both describe the same check, whatever their indexes (both
    /// of the same instance: see the type's docs).
    pub fn same_content(&self, other: &Self) -> bool {
        self.check_id == other.check_id
            && self.readiness == other.readiness
            && self.as_written == other.as_written
    }
}

/// What Consul will report for an instance's checks after `r` is written
/// over an instance that had `previous`: the checks the write does not
/// replace, plus its own.
pub fn checks_after(r: &Registration, previous: &[CompactCheck]) -> Vec<CompactCheck> {
    let kept = |c: &&CompactCheck| {
        r.check
            .as_ref()
            .is_none_or(|want| *want.check_id != *c.check_id)
    };
    // Sized exactly: a list grown from empty by one push makes room for
    // four, and the overlay holds one list per instance written (50,000 at
    // a cold start).
    let mut out =
        Vec::with_capacity(previous.iter().filter(kept).count() + usize::from(r.check.is_some()));
    out.extend(previous.iter().filter(kept).cloned());
    out.extend(CompactCheck::of_registration(r));
    out
}

/// A compact instance with its checks, as the planner sees it.
#[derive(Clone, Copy, Debug)]
pub struct CompactView<'a> {
    /// The node the instance is on (mirra's: only its node is read).
    pub node: &'a str,
    /// The instance's service ID (the `ServiceID` of each of its checks).
    pub id: &'a str,
    /// The instance.
    pub instance: &'a CompactInstance,
    /// Its checks (every check on the node is observed, so an instance
    /// without any has an empty list).
    pub checks: &'a [CompactCheck],
}

impl ObservedView for CompactView<'_> {
    fn node(&self) -> &str {
        self.node
    }

    fn service_name(&self) -> &str {
        &self.instance.name
    }

    fn owned(&self, _settings: &SyncSettings) -> bool {
        self.instance.owned
    }

    fn service_equals(&self, want: &Registration) -> bool {
        self.instance.fingerprint == fingerprint_registration(want)
    }

    fn has_check_of(&self, want: &Registration) -> bool {
        let Some(w) = &want.check else {
            return true;
        };
        self.id == w.service_id
            && self
                .checks
                .iter()
                .any(|c| *c.check_id == *w.check_id && c.as_written == Some(w.status))
    }

    fn stale_checks_for(&self, want: &Registration) -> Vec<String> {
        let keep = want.check.as_ref().map(|c| c.check_id.as_str());
        self.checks
            .iter()
            .filter(|c| c.readiness && Some(&*c.check_id) != keep)
            .map(|c| c.check_id.to_string())
            .collect()
    }

    fn check_ids(&self) -> Vec<String> {
        self.checks.iter().map(|c| c.check_id.to_string()).collect()
    }

    fn namespace(&self) -> Option<&str> {
        self.instance.namespace()
    }
}

/// A node-services answer in compact form.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompactNodeServices {
    /// Whether the node exists (the answer was not `null` and named one).
    pub node_exists: bool,
    /// Its instances by service ID.
    pub instances: BTreeMap<String, CompactInstance>,
}

/// Reads the body of `GET /v1/catalog/node-services/<node>` straight into
/// compact form: each instance is decoded, fingerprinted and dropped before
/// the next one, so a 50,000-instance answer never exists as 50,000 decoded
/// instances. The same as compacting [`crate::parse_node_services`]'s
/// result (a property test holds them together).
pub fn parse_node_services_compact(
    body: &[u8],
    settings: &SyncSettings,
) -> Result<CompactNodeServices, ObservedError> {
    node_services_from(serde_json::Deserializer::from_slice(body), settings)
}

/// [`parse_node_services_compact`] reading the body from `reader` as it
/// arrives, so that the answer is never held whole either.
pub fn read_node_services_compact(
    reader: impl std::io::Read,
    settings: &SyncSettings,
) -> Result<CompactNodeServices, ObservedError> {
    node_services_from(
        serde_json::Deserializer::from_reader(buffered(reader)),
        settings,
    )
}

/// A JSON parser reading from a reader asks for one byte at a time: behind
/// a `dyn Read` (how a streamed body reaches its parser) each byte would
/// be a call through the vtable. A buffer of this concrete type turns
/// those into inlined copies, and the reader underneath is asked for 64
/// KiB at a time.
fn buffered<R: std::io::Read>(reader: R) -> std::io::BufReader<R> {
    std::io::BufReader::with_capacity(64 * 1024, reader)
}

fn node_services_from<'de, R: serde_json::de::Read<'de>>(
    mut de: serde_json::Deserializer<R>,
    settings: &SyncSettings,
) -> Result<CompactNodeServices, ObservedError> {
    let parsed = de.deserialize_option(NodeServicesVisitor { settings })?;
    de.end()?;
    Ok(parsed)
}

/// Reads the body of `GET /v1/health/node/<node>` straight into compact
/// checks grouped by service ID (node checks dropped), one check decoded at
/// a time.
pub fn parse_health_checks_compact(
    body: &[u8],
) -> Result<HashMap<String, Vec<CompactCheck>>, ObservedError> {
    checks_from(serde_json::Deserializer::from_slice(body))
}

/// [`parse_health_checks_compact`] reading the body from `reader` as it
/// arrives.
pub fn read_health_checks_compact(
    reader: impl std::io::Read,
) -> Result<HashMap<String, Vec<CompactCheck>>, ObservedError> {
    checks_from(serde_json::Deserializer::from_reader(buffered(reader)))
}

fn checks_from<'de, R: serde_json::de::Read<'de>>(
    mut de: serde_json::Deserializer<R>,
) -> Result<HashMap<String, Vec<CompactCheck>>, ObservedError> {
    let parsed = de.deserialize_option(ChecksVisitor)?;
    de.end()?;
    Ok(parsed)
}

struct NodeServicesVisitor<'s> {
    settings: &'s SyncSettings,
}

impl<'de> Visitor<'de> for NodeServicesVisitor<'_> {
    type Value = CompactNodeServices;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a node-services object or null")
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(CompactNodeServices::default())
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(CompactNodeServices::default())
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut node: Option<String> = None;
        let mut instances = BTreeMap::new();
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match key.as_ref() {
                "Node" => node = map.next_value::<Option<WireNodeName>>()?.map(|n| n.node),
                "Services" => {
                    instances = map.next_value_seed(ServicesSeed {
                        settings: self.settings,
                    })?
                }
                _ => {
                    map.next_value::<de::IgnoredAny>()?;
                }
            }
        }
        // Ownership was decided assuming the answer is about our node (the
        // only node mirra reads); an answer about another one owns nothing.
        let ours = node.as_deref() == Some(self.settings.consul_node_name.as_str());
        if !ours {
            for c in instances.values_mut() {
                c.owned = false;
            }
        }
        Ok(CompactNodeServices {
            node_exists: node.is_some(),
            instances,
        })
    }
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "PascalCase")]
struct WireNodeName {
    #[serde(default)]
    node: String,
}

struct ServicesSeed<'s> {
    settings: &'s SyncSettings,
}

impl<'de> DeserializeSeed<'de> for ServicesSeed<'_> {
    type Value = BTreeMap<String, CompactInstance>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for ServicesSeed<'_> {
    type Value = BTreeMap<String, CompactInstance>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of services or null")
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(BTreeMap::new())
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(BTreeMap::new())
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        let node = &self.settings.consul_node_name;
        while let Some(wire) = seq.next_element::<WireService>()? {
            let index = wire.modify_index();
            let (id, instance) = wire.into_observed(node);
            out.push((
                id,
                CompactInstance::of_observed(&instance, self.settings).with_modify_index(index),
            ));
        }
        // Built at once from the whole list, the map's nodes are full; one
        // insert at a time leaves them about half empty. A repeated ID keeps
        // its last entry, as inserting would.
        Ok(out.into_iter().collect())
    }
}

struct ChecksVisitor;

impl<'de> Visitor<'de> for ChecksVisitor {
    type Value = HashMap<String, Vec<CompactCheck>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of health checks or null")
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(HashMap::new())
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(HashMap::new())
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out: HashMap<String, Vec<CompactCheck>> = HashMap::new();
        while let Some(c) = seq.next_element::<ObservedCheck>()? {
            if c.service_id.is_empty() {
                continue;
            }
            let compact = CompactCheck::of_observed(&c);
            // Most instances have one check, and a list's first push makes
            // room for four: every list of the answer would hold four
            // until the end of the parse (about 6 MB more at 50,000
            // instances, at the controller's memory peak).
            out.entry(c.service_id)
                .or_insert_with(|| Vec::with_capacity(1))
                .push(compact);
        }
        // A list that grew past one keeps room it does not need.
        for checks in out.values_mut() {
            checks.shrink_to_fit();
        }
        out.shrink_to_fit();
        Ok(out)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests;
