//! What the planner knows of the objects that exist: an observed object (its
//! uid, marks, finalizers, digest) and the lookups over a namespace's cache.
//!
//! This module must NOT decide what to write: [`super::plan_namespace`] does.

use std::borrow::Cow;

use super::*;
use crate::string_map::StringMap;

/// An object as the controller's caches hold it.
#[derive(Debug, Clone, PartialEq)]
pub struct ObservedObject {
    /// apiVersion it was read with.
    pub api_version: String,
    /// Kind.
    pub kind: String,
    /// Namespace; empty for an object of a cluster-scoped kind.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// `metadata.uid`, the precondition of every delete.
    pub uid: String,
    /// `metadata.labels`.
    pub labels: StringMap,
    /// `metadata.annotations`.
    pub annotations: StringMap,
    /// The whole object as JSON, or after [`ObservedObject::compact`] what
    /// is left of it, packed: see [`ObservedObject::body`].
    body: Body,
    /// Whether `metadata.deletionTimestamp` is set.
    pub deleting: bool,
    /// Whether `metadata.managedFields` show mirra's own apply wrote the
    /// marks (`marks::marks_written_by_mirra`): only then is the object
    /// mirra's.
    pub marks_by_mirra: bool,
}

impl ObservedObject {
    /// Reads an object from its JSON form. `None` when apiVersion, kind or
    /// name is missing (the API server never sends such an object; a
    /// malformed cache entry is skipped, not trusted). No namespace means
    /// an object of a cluster-scoped kind.
    pub fn from_json(body: Value) -> Option<ObservedObject> {
        let s = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
        let meta = body.get("metadata");
        let field = |f: &str| s(meta.and_then(|m| m.get(f)));
        let string_map = |f: &str| -> StringMap {
            meta.and_then(|m| m.get(f))
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .filter_map(|(k, v)| v.as_str().map(|v| (k.as_str(), v)))
                        .collect()
                })
                .unwrap_or_default()
        };
        let api_version = s(body.get("apiVersion")).filter(|v| !v.is_empty())?;
        let kind = s(body.get("kind")).filter(|v| !v.is_empty())?;
        let namespace = field("namespace").unwrap_or_default();
        let name = field("name").filter(|v| !v.is_empty())?;
        Some(ObservedObject {
            api_version,
            kind,
            namespace,
            name,
            uid: field("uid").unwrap_or_default(),
            labels: string_map("labels"),
            annotations: string_map("annotations"),
            deleting: meta
                .and_then(|m| m.get("deletionTimestamp"))
                .is_some_and(|v| !v.is_null()),
            marks_by_mirra: marks_written_by_mirra(meta.and_then(|m| m.get("managedFields"))),
            body: Body::Value(Box::new(body)),
        })
    }

    /// An object from its parts, as a cache that decoded the identity,
    /// labels and annotations itself makes it: `body` is the rest of the
    /// object (it may still hold them; [`ObservedObject::compact`] drops
    /// them).
    #[allow(clippy::too_many_arguments)]
    pub fn from_parts(
        api_version: String,
        kind: String,
        namespace: String,
        name: String,
        uid: String,
        labels: StringMap,
        annotations: StringMap,
        body: Value,
        deleting: bool,
        marks_by_mirra: bool,
    ) -> ObservedObject {
        ObservedObject {
            api_version,
            kind,
            namespace,
            name,
            uid,
            labels,
            annotations,
            body: Body::Value(Box::new(body)),
            deleting,
            marks_by_mirra,
        }
    }

    /// The object's JSON to change in place (unpacked first if
    /// [`ObservedObject::compact`] packed it). The fields (identity, labels,
    /// annotations) are not read back from it.
    pub fn body_mut(&mut self) -> &mut Value {
        if let Body::Packed(text) = &self.body {
            self.body = Body::Value(Box::new(unpack(text)));
        }
        match &mut self.body {
            Body::Value(v) => v,
            // Unreachable: made a value just above.
            Body::Packed(_) => unreachable!("body was unpacked above"),
        }
    }

    /// The object as JSON: the whole object as read, or after
    /// [`ObservedObject::compact`] its content and the metadata no field
    /// holds (a new value, unpacked for the caller).
    pub fn body(&self) -> Cow<'_, Value> {
        match &self.body {
            Body::Value(v) => Cow::Borrowed(&**v),
            Body::Packed(text) => Cow::Owned(unpack(text)),
        }
    }

    /// Whether every field of the copy `desired` is present and equal in
    /// this object: [`is_subset`] of the object's JSON, with its identity
    /// (apiVersion, kind, name, namespace), labels and annotations read
    /// from their fields, so that the same answer holds after
    /// [`ObservedObject::compact`].
    pub fn holds(&self, desired: &Value) -> bool {
        let body = self.body();
        let Value::Object(d) = desired else {
            return is_subset(desired, &body);
        };
        d.iter().all(|(k, dv)| match k.as_str() {
            "apiVersion" => str_holds(dv, &self.api_version),
            "kind" => str_holds(dv, &self.kind),
            "metadata" => self.metadata_holds(dv, &body),
            _ => match body.get(k) {
                Some(ov) => is_subset(dv, ov),
                None => is_empty(dv),
            },
        })
    }

    fn metadata_holds(&self, desired: &Value, body: &Value) -> bool {
        let rest = body.get("metadata");
        let Value::Object(d) = desired else {
            return match rest {
                Some(ov) => is_subset(desired, ov),
                None => is_empty(desired),
            };
        };
        d.iter().all(|(k, dv)| match k.as_str() {
            "name" => str_holds(dv, &self.name),
            "namespace" => str_holds(dv, &self.namespace),
            "labels" => map_holds(dv, &self.labels),
            "annotations" => map_holds(dv, &self.annotations),
            _ => match rest.and_then(|m| m.get(k)) {
                Some(ov) => is_subset(dv, ov),
                None => is_empty(dv),
            },
        })
    }

    /// Drops from the body what the fields hold already (identity, labels,
    /// annotations) and what no plan reads (uid, resourceVersion,
    /// timestamps, managedFields): the form a cache keeps, once per copy.
    /// [`ObservedObject::holds`] answers as before; `body` alone no longer
    /// shows the whole object. What is left is kept as JSON text, a few
    /// times smaller than the parsed maps, and parsed again when a plan
    /// compares it (rarely: a copy found in step stays verified until it
    /// or its SyncConfig changes).
    pub fn compact(&mut self) {
        let Body::Value(value) = &mut self.body else {
            return;
        };
        let Value::Object(top) = &mut **value else {
            return;
        };
        top.shift_remove("apiVersion");
        top.shift_remove("kind");
        let empty = match top.get_mut("metadata") {
            Some(Value::Object(meta)) => {
                for field in [
                    "name",
                    "namespace",
                    "labels",
                    "annotations",
                    "managedFields",
                    "uid",
                    "resourceVersion",
                    "creationTimestamp",
                    "generation",
                ] {
                    meta.shift_remove(field);
                }
                meta.is_empty()
            }
            _ => false,
        };
        if empty {
            top.shift_remove("metadata");
        }
        if let Ok(text) = serde_json::to_string(top) {
            self.body = Body::Packed(text.into_boxed_str());
        }
    }

    /// The object's identity.
    pub fn key(&self) -> ObjectKey {
        ObjectKey {
            group: group_of(&self.api_version).to_string(),
            kind: self.kind.clone(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
        }
    }

    /// The namespace this object belongs to for planning: its own, or, for
    /// an object of a cluster-scoped kind, the one its
    /// [`FOR_NAMESPACE_ANNOTATION`] names (empty when it has none).
    pub fn home(&self) -> &str {
        if self.namespace.is_empty() {
            self.annotations.get(FOR_NAMESPACE_ANNOTATION).unwrap_or("")
        } else {
            &self.namespace
        }
    }

    /// The SyncConfig that owns this object: it carries mirra's marks and
    /// mirra wrote them.
    pub fn owner(&self) -> Option<ConfigRef> {
        if !self.marks_by_mirra {
            return None;
        }
        owner_of(
            self.labels.get(MANAGED_BY_LABEL),
            self.annotations.get(OWNER_ANNOTATION),
        )
    }

    /// Whether mirra adopted this copy (it existed before mirra applied
    /// it): released, never deleted, when no longer wanted.
    pub fn adopted(&self) -> bool {
        is_adopted(self.annotations.get(ADOPTED_ANNOTATION))
    }

    pub(super) fn object_ref(&self) -> ObjectRef {
        ObjectRef {
            api_version: self.api_version.as_str().into(),
            kind: self.kind.as_str().into(),
            namespace: self.namespace.as_str().into(),
            name: self.name.as_str().into(),
        }
    }
}

/// [`is_subset`] of an identity field (apiVersion, kind, name,
/// namespace): empty when the JSON did not have it.
fn str_holds(desired: &Value, observed: &str) -> bool {
    if observed.is_empty() {
        return is_empty(desired);
    }
    value_holds(desired, observed)
}

/// [`is_subset`] of a string value the JSON had (a label, an annotation).
fn value_holds(desired: &Value, observed: &str) -> bool {
    match desired {
        Value::String(d) if d == observed => true,
        _ => is_subset(desired, &Value::String(observed.to_string())),
    }
}

/// [`is_subset`] of a string map the object keeps as a field (labels,
/// annotations).
fn map_holds(desired: &Value, observed: &StringMap) -> bool {
    match desired {
        Value::Object(d) => d.iter().all(|(k, dv)| match observed.get(k) {
            Some(ov) => value_holds(dv, ov),
            None => is_empty(dv),
        }),
        _ if observed.is_empty() => is_empty(desired),
        _ => {
            let as_json = observed
                .iter()
                .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
                .collect();
            is_subset(desired, &Value::Object(as_json))
        }
    }
}

/// An object's JSON as read, or packed by [`ObservedObject::compact`].
#[derive(Debug, Clone)]
enum Body {
    /// Boxed: a cache holds the packed form, and a `Value` inline would
    /// make every cached object 60 bytes larger.
    Value(Box<Value>),
    Packed(Box<str>),
}

impl PartialEq for Body {
    fn eq(&self, other: &Body) -> bool {
        // Maps compare regardless of key order, as JSON objects do; the
        // packed text keeps the order it was read in.
        match (self, other) {
            (Body::Packed(a), Body::Packed(b)) => a == b || unpack(a) == unpack(b),
            (Body::Value(a), Body::Value(b)) => a == b,
            (Body::Value(v), Body::Packed(p)) | (Body::Packed(p), Body::Value(v)) => {
                **v == unpack(p)
            }
        }
    }
}

/// Text `compact` wrote from a JSON map; it always parses back.
fn unpack(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::Null)
}

/// Read access to the objects the caches hold for ONE namespace: mirra's
/// copies (found by its label) and the objects named by deleteItems.
pub trait ObservedLookup {
    /// The object with this identity, if cached.
    fn get(&self, key: &ObjectKey) -> Option<&ObservedObject>;
    /// Every cached object of the namespace. Objects of other namespaces
    /// are ignored by the planner.
    fn objects(&self) -> Box<dyn Iterator<Item = &ObservedObject> + '_>;
    /// Whether an earlier plan found the cached object `key`, exactly as
    /// cached now, in step with the copy `config`'s `item` wants, and the
    /// SyncConfig has not changed since. The planner then takes it as in
    /// step without rendering the copy again; the caller must forget the
    /// claim when either side changes (see [`NamespacePlan::verified`]).
    fn verified(&self, key: &ObjectKey, config: &ConfigRef, item: ItemRef) -> bool {
        let _ = (key, config, item);
        false
    }
}

/// A simple in-memory [`ObservedLookup`], ordered by identity. Used by
/// `render` (empty), tests, and simulations.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ObservedSet {
    pub(super) objects: BTreeMap<ObjectKey, ObservedObject>,
}

impl ObservedSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds or replaces an object; returns the previous one.
    pub fn insert(&mut self, object: ObservedObject) -> Option<ObservedObject> {
        self.objects.insert(object.key(), object)
    }

    /// Removes an object.
    pub fn remove(&mut self, key: &ObjectKey) -> Option<ObservedObject> {
        self.objects.remove(key)
    }

    /// Number of objects.
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// All objects, ordered by identity.
    pub fn iter(&self) -> impl Iterator<Item = &ObservedObject> {
        self.objects.values()
    }

    /// The objects of one namespace, as a new set.
    pub fn in_namespace(&self, namespace: &str) -> ObservedSet {
        ObservedSet {
            objects: self
                .objects
                .iter()
                .filter(|(k, _)| k.namespace == namespace)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        }
    }
}

impl ObservedLookup for ObservedSet {
    fn get(&self, key: &ObjectKey) -> Option<&ObservedObject> {
        self.objects.get(key)
    }

    fn objects(&self) -> Box<dyn Iterator<Item = &ObservedObject> + '_> {
        Box::new(self.objects.values())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn scalar() -> impl Strategy<Value = Value> + Clone {
        prop_oneof![
            Just(Value::Null),
            Just(json!("")),
            Just(json!("a")),
            Just(json!("b")),
            Just(json!(0)),
            Just(json!(1)),
            Just(json!(false)),
        ]
    }

    /// A map over a few keys, each maybe absent.
    fn map_of(
        values: impl Strategy<Value = Value> + Clone,
    ) -> impl Strategy<Value = Value> + Clone {
        proptest::collection::btree_map(prop_oneof![Just("x"), Just("y"), Just("z")], values, 0..3)
            .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()))
    }

    fn string() -> impl Strategy<Value = Value> + Clone {
        prop_oneof![Just(json!("")), Just(json!("a")), Just(json!("b"))]
    }

    /// An object as a server sends it: identity, string labels and
    /// annotations, server fields, finalizers, content.
    fn observed() -> impl Strategy<Value = Value> {
        (
            prop_oneof![Just("v1"), Just("apps/v1")],
            prop_oneof![Just("ConfigMap"), Just("Secret")],
            prop_oneof![Just("n1"), Just("n2")],
            proptest::option::of(prop_oneof![Just("t"), Just("u")]),
            proptest::option::of(map_of(string())),
            proptest::option::of(map_of(string())),
            proptest::option::of(Just(json!(["example.com/hold"]))),
            map_of(scalar()),
        )
            .prop_map(
                |(api_version, kind, name, ns, labels, annotations, finalizers, data)| {
                    let mut meta = json!({"name": name, "uid": "u-1", "resourceVersion": "7",
                    "creationTimestamp": "2026-01-01T00:00:00Z",
                    "managedFields": [{"manager": "x"}]});
                    if let Some(ns) = ns {
                        meta["namespace"] = json!(ns);
                    }
                    if let Some(l) = labels {
                        meta["labels"] = l;
                    }
                    if let Some(a) = annotations {
                        meta["annotations"] = a;
                    }
                    if let Some(f) = finalizers {
                        meta["finalizers"] = f;
                    }
                    json!({"apiVersion": api_version, "kind": kind, "metadata": meta, "data": data})
                },
            )
    }

    /// A desired copy: any subset of those fields, with values that may
    /// match, differ, or be empty.
    fn desired() -> impl Strategy<Value = Value> {
        (
            proptest::option::of(prop_oneof![
                Just(json!("v1")),
                Just(json!("apps/v1")),
                Just(json!(""))
            ]),
            proptest::option::of(prop_oneof![Just(json!("ConfigMap")), Just(json!("Secret"))]),
            proptest::option::of(prop_oneof![
                Just(json!("n1")),
                Just(json!("n2")),
                Just(json!(""))
            ]),
            proptest::option::of(prop_oneof![
                Just(json!("t")),
                Just(json!("")),
                Just(Value::Null)
            ]),
            proptest::option::of(map_of(scalar())),
            proptest::option::of(map_of(scalar())),
            proptest::option::of(prop_oneof![
                Just(json!([])),
                Just(json!(["example.com/hold"]))
            ]),
            proptest::option::of(map_of(scalar())),
        )
            .prop_map(
                |(api_version, kind, name, ns, labels, annotations, finalizers, data)| {
                    let mut meta = serde_json::Map::new();
                    let mut top = serde_json::Map::new();
                    let fields = [
                        ("name", name),
                        ("namespace", ns),
                        ("labels", labels),
                        ("annotations", annotations),
                        ("finalizers", finalizers),
                    ];
                    for (k, v) in fields {
                        if let Some(v) = v {
                            meta.insert(k.into(), v);
                        }
                    }
                    for (k, v) in [("apiVersion", api_version), ("kind", kind), ("data", data)] {
                        if let Some(v) = v {
                            top.insert(k.into(), v);
                        }
                    }
                    top.insert("metadata".into(), Value::Object(meta));
                    Value::Object(top)
                },
            )
    }

    proptest! {
        /// `holds` answers exactly as `is_subset` of the whole JSON, before
        /// and after `compact`.
        #[test]
        fn holds_is_is_subset_before_and_after_compact(o in observed(), d in desired()) {
            let expected = is_subset(&d, &o);
            let mut obj = ObservedObject::from_json(o).unwrap();
            prop_assert_eq!(obj.holds(&d), expected);
            obj.compact();
            prop_assert_eq!(obj.holds(&d), expected);
            prop_assert!(obj.body().get("apiVersion").is_none());
        }
    }
}
