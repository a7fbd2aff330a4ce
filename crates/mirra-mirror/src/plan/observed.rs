//! What the planner knows of the objects that exist: an observed object (its
//! uid, marks, finalizers, digest) and the lookups over a namespace's cache.
//!
//! This module must NOT decide what to write: [`super::plan_namespace`] does.

use super::*;

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
    pub labels: BTreeMap<String, String>,
    /// `metadata.annotations`.
    pub annotations: BTreeMap<String, String>,
    /// The whole object as JSON (managedFields may be stripped).
    pub body: Value,
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
        let string_map = |f: &str| -> BTreeMap<String, String> {
            meta.and_then(|m| m.get(f))
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
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
            body,
        })
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
            self.annotations
                .get(FOR_NAMESPACE_ANNOTATION)
                .map_or("", String::as_str)
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
        owner_of(&self.labels, &self.annotations)
    }

    /// Whether mirra adopted this copy (it existed before mirra applied
    /// it): released, never deleted, when no longer wanted.
    pub fn adopted(&self) -> bool {
        is_adopted(self.annotations.get(ADOPTED_ANNOTATION).map(String::as_str))
    }

    pub(super) fn object_ref(&self) -> ObjectRef {
        ObjectRef {
            api_version: self.api_version.clone(),
            kind: self.kind.clone(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
        }
    }
}

/// Read access to the objects the caches hold for ONE namespace: mirra's
/// copies (found by its label) and the objects named by deleteItems.
pub trait ObservedLookup {
    /// The object with this identity, if cached.
    fn get(&self, key: &ObjectKey) -> Option<&ObservedObject>;
    /// Every cached object of the namespace. Objects of other namespaces
    /// are ignored by the planner.
    fn objects(&self) -> Box<dyn Iterator<Item = &ObservedObject> + '_>;
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
