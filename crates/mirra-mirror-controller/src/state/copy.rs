//! mirra's copies as the copy caches hold them: the planner's compact form,
//! made once per watch event and shared with the plans that read it.
//!
//! What this module must NOT do: keep anything of a copy the planner does
//! not compare (managedFields beyond the ownership proof, the
//! resourceVersion aside).

use std::sync::Arc;

use kube::api::{ApiResource, DynamicObject, PartialObjectMeta};
use kube::runtime::watcher::Event;
use mirra_mirror::{ItemRef, ObservedObject};
use mirra_runtime::Cached;
use serde_json::Value;

use super::scope;

/// One of mirra's copies as the copy caches hold it: the planner's form,
/// made once per watch event (not once per plan), and shared with the plans
/// that read it.
#[derive(Debug, Clone)]
pub struct CachedCopy {
    /// What the planner compares (managedFields reduced to the ownership
    /// proof, large strings digested).
    pub observed: Arc<ObservedObject>,
    /// `metadata.resourceVersion`.
    version: Option<Box<str>>,
    /// The SyncConfig version (its stamp, see `State::config_stamps`) and
    /// item a plan found this very object in step with. Dropped with the
    /// entry: any change of the object is a new entry.
    pub(super) verified: Option<(u64, ItemRef)>,
}

impl CachedCopy {
    /// The cached form of a copy the watch brought; `None` for an object
    /// without a name (never sent by a server; skipped, not trusted).
    pub fn new(obj: DynamicObject, ar: &ApiResource) -> Option<CachedCopy> {
        let version = obj.metadata.resource_version.as_deref().map(Box::from);
        let observed = observed_from_dynamic(obj, ar)?;
        Some(CachedCopy {
            version,
            observed: Arc::new(observed),
            verified: None,
        })
    }

    /// `metadata.resourceVersion`.
    pub fn version(&self) -> Option<&str> {
        self.version.as_deref()
    }
}

impl Cached for CachedCopy {
    fn cache_key(&self) -> Option<mirra_runtime::ObjectKey> {
        Some(mirra_runtime::ObjectKey {
            namespace: scope(&self.observed.namespace).map(str::to_string),
            name: self.observed.name.clone(),
        })
    }

    fn cache_version(&self) -> Option<&str> {
        self.version()
    }
}

/// A watch event of copies in their cached form.
pub fn cached_event(event: Event<DynamicObject>, ar: &ApiResource) -> Option<Event<CachedCopy>> {
    let to = |o: DynamicObject| CachedCopy::new(o, ar);
    Some(match event {
        Event::Init => Event::Init,
        Event::InitDone => Event::InitDone,
        Event::InitApply(o) => Event::InitApply(to(o)?),
        Event::Apply(o) => Event::Apply(to(o)?),
        Event::Delete(o) => Event::Delete(to(o)?),
    })
}

/// The namespace a cluster-scoped copy was made for, from its mark.
pub(super) fn for_namespace(obj: &CachedCopy) -> Option<String> {
    obj.observed
        .annotations
        .get(mirra_mirror::FOR_NAMESPACE_ANNOTATION)
        .filter(|ns| !ns.is_empty())
        .map(str::to_string)
}

/// The planner's form of a copy the watch brought, compact as
/// [`ObservedObject::compact`] leaves it: identity, labels and annotations
/// taken from the typed metadata (moved, not copied), apiVersion and kind
/// from the resource (list responses may omit them), the ownership proof
/// read into `marks_by_mirra`, and the content moved into the body with
/// what else of the metadata a plan reads (finalizers, deletionTimestamp).
pub fn observed_from_dynamic(obj: DynamicObject, ar: &ApiResource) -> Option<ObservedObject> {
    let DynamicObject {
        metadata: mut meta,
        data,
        ..
    } = obj;
    let name = meta.name.take().filter(|n| !n.is_empty())?;
    let managed = meta
        .managed_fields
        .take()
        .and_then(|m| serde_json::to_value(m).ok());
    let labels = meta.labels.take().unwrap_or_default();
    let annotations = meta.annotations.take().unwrap_or_default();
    let uid = meta.uid.take().unwrap_or_default();
    let namespace = meta.namespace.take().unwrap_or_default();
    meta.resource_version = None;
    meta.creation_timestamp = None;
    meta.generation = None;
    let deleting = meta.deletion_timestamp.is_some();
    let mut body = match data {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    };
    body.shift_remove("apiVersion");
    body.shift_remove("kind");
    body.shift_remove("metadata");
    if let Ok(Value::Object(rest)) = serde_json::to_value(&meta)
        && !rest.is_empty()
    {
        body.insert("metadata".into(), Value::Object(rest));
    }
    let mut observed = ObservedObject::from_parts(
        ar.api_version.clone(),
        ar.kind.clone(),
        namespace,
        name,
        uid,
        labels.into(),
        annotations.into(),
        Value::Object(body),
        deleting,
        mirra_mirror::marks::marks_written_by_mirra(managed.as_ref()),
    );
    observed.compact();
    Some(observed)
}

pub(super) fn observed_from_meta(
    obj: &PartialObjectMeta<DynamicObject>,
    ar: &ApiResource,
) -> Option<ObservedObject> {
    let meta = serde_json::to_value(&obj.metadata).ok()?;
    ObservedObject::from_json(serde_json::json!({
        "apiVersion": ar.api_version,
        "kind": ar.kind,
        "metadata": meta,
    }))
}
