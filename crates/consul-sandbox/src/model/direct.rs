//! The two whole-node renderings serialized straight from the records:
//! `NodeService` (`/v1/catalog/node-services/<node>`) and `HealthCheck`
//! (`/v1/health/node/<node>`).
//!
//! Those answers list every instance or check on a node, and a client
//! such as mirra's catalog controller asks for them on a node of hundreds
//! of thousands of instances. Building them as a `serde_json::Value` tree
//! first (a map and a copy of every string per record) made the sandbox's
//! answer cost several times the answer's size in fresh memory, and grew
//! its read-lock hold time with it. These serializers write the same
//! bytes as serializing [`ServiceRec::to_node_service_json`] and
//! [`CheckRec::to_json`] (a test holds them equal); those stay the
//! reference and serve every other rendering.
//!
//! This module must NOT render anything the Value builders do not: a field
//! added there must be added here, or the equality tests fail.

use serde::ser::{Serialize, SerializeMap, Serializer};

use super::*;

/// `ServiceRec` as a `NodeService`; see the module docs.
pub(crate) struct NodeServiceJson<'a> {
    pub rec: &'a ServiceRec,
    /// As in [`ServiceRec::to_node_service_json`].
    pub empty_tags: bool,
}

/// `CheckRec` as a `HealthCheck`; see the module docs.
pub(crate) struct HealthCheckJson<'a>(pub &'a CheckRec);

/// A tag list as [`tags_json`] renders it.
struct Tags<'a>(&'a Option<Vec<String>>, bool);

impl Serialize for Tags<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Some(t) => t.serialize(s),
            None if self.1 => s.serialize_some(&[] as &[String]),
            None => s.serialize_none(),
        }
    }
}

/// `{}`, as `json!({})` renders.
struct EmptyObject;

impl Serialize for EmptyObject {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_map(Some(0))?.end()
    }
}

/// The zero proxy configuration, as [`empty_proxy_json`] renders it.
struct EmptyProxy;

impl Serialize for EmptyProxy {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(3))?;
        m.serialize_entry("Mode", "")?;
        m.serialize_entry("MeshGateway", &EmptyObject)?;
        m.serialize_entry("Expose", &EmptyObject)?;
        m.end()
    }
}

/// `Namespace` and `Partition`, as [`insert_tenancy`] adds them.
fn tenancy<M: SerializeMap>(
    m: &mut M,
    ns: &Option<String>,
    partition: &Option<String>,
) -> Result<(), M::Error> {
    if let Some(ns) = ns {
        m.serialize_entry("Namespace", ns)?;
        m.serialize_entry("Partition", ns_or_default(partition))?;
    }
    Ok(())
}

impl Serialize for NodeServiceJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = self.rec;
        let mut m = s.serialize_map(None)?;
        if !r.kind.is_empty() {
            m.serialize_entry("Kind", &r.kind)?;
        }
        m.serialize_entry("ID", &r.id)?;
        m.serialize_entry("Service", &r.name)?;
        m.serialize_entry("Tags", &Tags(&r.tags, self.empty_tags))?;
        m.serialize_entry("Address", &r.address)?;
        if !r.tagged_addresses.is_empty() {
            // Rare: the Value form is cheap enough here.
            m.serialize_entry("TaggedAddresses", &r.tagged_addresses_json())?;
        }
        m.serialize_entry("Meta", &r.meta)?;
        m.serialize_entry("Port", &r.port)?;
        if !r.ports.is_empty() {
            m.serialize_entry("Ports", &r.ports_json())?;
        }
        m.serialize_entry("Weights", &WeightsJson(r.weights))?;
        m.serialize_entry("EnableTagOverride", &r.enable_tag_override)?;
        m.serialize_entry("Proxy", &EmptyProxy)?;
        m.serialize_entry("Connect", &EmptyObject)?;
        tenancy(&mut m, &r.ns, &r.partition)?;
        m.serialize_entry("CreateIndex", &r.create_index)?;
        m.serialize_entry("ModifyIndex", &r.modify_index)?;
        m.end()
    }
}

/// Weights as `Weights::to_json` renders them.
struct WeightsJson(Weights);

impl Serialize for WeightsJson {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("Passing", &self.0.passing)?;
        m.serialize_entry("Warning", &self.0.warning)?;
        m.end()
    }
}

impl Serialize for HealthCheckJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let c = self.0;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("Node", &c.node)?;
        m.serialize_entry("CheckID", &c.check_id)?;
        m.serialize_entry("Name", &c.name)?;
        m.serialize_entry("Status", &c.status)?;
        m.serialize_entry("Notes", &c.notes)?;
        m.serialize_entry("Output", &c.output)?;
        m.serialize_entry("ServiceID", &c.service_id)?;
        m.serialize_entry("ServiceName", &c.service_name)?;
        m.serialize_entry("ServiceTags", &Tags(&c.service_tags, true))?;
        m.serialize_entry("Type", &c.check_type)?;
        m.serialize_entry("Interval", "")?;
        m.serialize_entry("Timeout", "")?;
        m.serialize_entry("ExposedPort", &0)?;
        m.serialize_entry("Definition", &c.definition)?;
        m.serialize_entry("CreateIndex", &c.create_index)?;
        m.serialize_entry("ModifyIndex", &c.modify_index)?;
        tenancy(&mut m, &c.ns, &c.partition)?;
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use proptest::collection::{btree_map, vec};
    use proptest::option;
    use proptest::prelude::*;

    use super::*;

    fn text() -> impl Strategy<Value = String> {
        // Quotes, backslashes, control and non-ASCII characters: the
        // escapes must come out the same too.
        prop_oneof![Just(String::new()), "[a-z0-9-]{1,8}", "\\PC{0,6}", ".{0,4}"]
    }

    fn opt_map() -> impl Strategy<Value = OptMap> {
        option::of(btree_map(text(), text(), 0..3))
    }

    prop_compose! {
        fn service()(
            node in text(), kind in prop_oneof![Just(String::new()), text()],
            id in text(), name in text(), tags in option::of(vec(text(), 0..3)),
            address in text(),
            tagged in btree_map(text(), (text(), any::<i64>()), 0..2),
            meta in opt_map(), port in any::<i64>(),
            ports in vec((text(), any::<i64>(), any::<bool>()), 0..3),
            weights in (any::<i64>(), any::<i64>()), tag_override in any::<bool>(),
            ns in option::of(text()), partition in option::of(text()),
            indexes in (any::<u64>(), any::<u64>()),
        ) -> ServiceRec {
            ServiceRec {
                node, kind, id, name, tags, address,
                tagged_addresses: tagged
                    .into_iter()
                    .map(|(k, (address, port))| (k, ServiceAddress { address, port }))
                    .collect(),
                meta, port,
                ports: ports
                    .into_iter()
                    .map(|(name, port, default)| ServicePort { name, port, default })
                    .collect(),
                weights: Weights { passing: weights.0, warning: weights.1 },
                enable_tag_override: tag_override,
                ns, partition,
                create_index: indexes.0, modify_index: indexes.1,
            }
        }
    }

    prop_compose! {
        fn check()(
            strings in vec(text(), 9), service_tags in option::of(vec(text(), 0..3)),
            definition in prop_oneof![
                Just(json!({})),
                Just(json!({"HTTP": "http://x/\"y\"", "Header": {"A": ["b"]}})),
                text().prop_map(Value::String),
            ],
            ns in option::of(text()), partition in option::of(text()),
            indexes in (any::<u64>(), any::<u64>()),
        ) -> CheckRec {
            let mut s = strings.into_iter();
            let mut next = || s.next().unwrap_or_default();
            CheckRec {
                node: next(), check_id: next(), name: next(), status: next(),
                notes: next(), output: next(), service_id: next(),
                service_name: next(), service_tags, check_type: next(),
                definition, ns, partition,
                create_index: indexes.0, modify_index: indexes.1,
            }
        }
    }

    proptest! {
        #[test]
        fn a_node_service_serializes_as_its_value_form(rec in service(), empty_tags in any::<bool>()) {
            let direct = serde_json::to_vec(&NodeServiceJson { rec: &rec, empty_tags }).unwrap();
            let value = serde_json::to_vec(&rec.to_node_service_json(empty_tags)).unwrap();
            prop_assert_eq!(String::from_utf8_lossy(&direct), String::from_utf8_lossy(&value));
        }

        #[test]
        fn a_health_check_serializes_as_its_value_form(rec in check()) {
            let direct = serde_json::to_vec(&HealthCheckJson(&rec)).unwrap();
            let value = serde_json::to_vec(&rec.to_json()).unwrap();
            prop_assert_eq!(String::from_utf8_lossy(&direct), String::from_utf8_lossy(&value));
        }
    }
}
